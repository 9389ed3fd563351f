//! Rules the code is held to (issue 10), checked on the sources themselves:
//! - the ratchet on function length (TigerBeetle's style): no function in the workspace's
//!   non-test code is longer than `FUNCTION_LINES_MAX`. A function runs from its `fn` line
//!   to the line that closes its body at the same indent; code after a `#[cfg(test)]`
//!   line, and the `tests/` and `benches/` folders, are test code;
//! - the engine's layers: no module's non-test code names a module of a higher layer.

use std::path::{Path, PathBuf};

const FUNCTION_LINES_MAX: usize = 100;

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read a source folder") {
        let path = entry.expect("a folder entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !matches!(name, "tests" | "benches" | "target") {
                rust_sources(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// `(name, first line, lines)` of each function in `text` before its test code.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let signature = [
            "pub(crate) fn ",
            "pub(super) fn ",
            "pub fn ",
            "fn ",
            "const fn ",
        ]
        .iter()
        .find_map(|prefix| trimmed.strip_prefix(prefix));
        let Some(rest) = signature else { continue };
        if line.trim_end().ends_with(';') {
            continue; // a trait method without a body
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let closing = format!("{indent}}}");
        if let Some(end) = lines[at + 1..].iter().position(|l| *l == closing) {
            found.push((name, at + 1, end + 2));
        }
    }
    found
}

#[test]
fn no_function_outside_tests_is_longer_than_the_limit() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut sources = Vec::new();
    rust_sources(&crates, &mut sources);
    assert!(sources.len() > 20, "found the workspace's sources");
    let mut over = Vec::new();
    for path in &sources {
        let text = std::fs::read_to_string(path).expect("read a source file");
        for (name, line, length) in functions(&text) {
            if length > FUNCTION_LINES_MAX {
                over.push(format!("{}:{line} {name}: {length} lines", path.display()));
            }
        }
    }
    assert!(
        over.is_empty(),
        "functions over {FUNCTION_LINES_MAX} lines (split them into named steps):\n{}",
        over.join("\n")
    );
}

#[test]
fn the_scanner_measures_a_function_it_is_shown() {
    let text = "fn short() {\n    one();\n}\n\nimpl X {\n    pub fn long(&self) {\n".to_string()
        + &"        step();\n".repeat(120)
        + "    }\n}\n#[cfg(test)]\nfn hidden() {\n}\n";
    let found = functions(&text);
    assert_eq!(found, vec![("short".into(), 1, 3), ("long".into(), 6, 122)]);
}

/// The engine's top-level modules, bottom layer first (docs/design.md, "Layers").
const LAYERS: &[&str] = &[
    "format", "error", "storage", "failstop", "stats", "latch", "page", "log", "buffer", "access",
    "txn", "catalog", "recovery", "db",
];

#[test]
fn no_engine_module_imports_a_layer_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    rust_sources(&src, &mut sources);
    let rank = |name: &str| LAYERS.iter().position(|l| *l == name);
    let mut upward = Vec::new();
    for path in &sources {
        let relative = path.strip_prefix(&src).expect("under src");
        let top = relative
            .iter()
            .next()
            .and_then(|c| c.to_str())
            .unwrap_or("");
        let Some(mine) = rank(top.trim_end_matches(".rs")) else {
            assert_eq!(
                top, "lib.rs",
                "a top-level module missing from LAYERS: {top}"
            );
            continue;
        };
        let text = std::fs::read_to_string(path).expect("read a source file");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (at, _) in code.match_indices("crate::") {
            let name: String = code[at + 7..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if rank(&name).is_some_and(|theirs| theirs > mine) {
                upward.push(format!("{}: crate::{name}", relative.display()));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run upward:\n{}",
        upward.join("\n")
    );
}
