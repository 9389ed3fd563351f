//! Helpers shared by the command-line tests: run the real binary as a user would, read its
//! JSON, and check the one-line error contract.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::path::Path;
use std::process::{Command, Output};

/// Runs `hotpage ARGS...` and returns what it printed and how it exited.
pub fn hotpage(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hotpage"))
        .args(args)
        .output()
        .expect("run hotpage")
}

/// A successful run's stdout, parsed as one JSON object.
pub fn json(output: &Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "hotpage failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("stdout is one JSON object")
}

/// A bad input: exit `code`, exactly one `error:` line on stderr containing `needle`, no
/// panic, nothing on stdout.
pub fn assert_one_line_error(output: &Output, code: i32, needle: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "stderr: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "not one line: {stderr:?}"
    );
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains(needle), "{stderr:?} lacks {needle:?}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.stdout.is_empty(), "stdout: {:?}", output.stdout);
}

/// A path as the `&str` the command line takes.
pub fn s(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// Issue 5's acceptance run: `hotpage stress --design DESIGN --sessions 8 --rows 5000 --db
/// DB --json` plus `extra` options, which must succeed (40,000 rows); returns its report.
pub fn stress_8x5000(design: &str, db: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "stress",
        "--design",
        design,
        "--sessions",
        "8",
        "--rows",
        "5000",
        "--db",
        db,
        "--json",
    ];
    args.extend_from_slice(extra);
    let report = json(&hotpage(&args));
    assert_eq!(report["design"], design, "{report}");
    assert_eq!(report["rows_total"], 40_000, "{design}: {report}");
    report
}

/// `hotpage crashtest --design DESIGN --trials 2 --sessions 4 --seed 5 --json` plus `extra`:
/// it must acknowledge rows and lose none, with no partial transaction and a clean check.
/// Seed 5 kills the children at about 0.9 and 1.6 s, late enough for a loaded machine to
/// have acknowledged rows. Returns the report.
pub fn crashtest_loses_nothing(design: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "crashtest",
        "--design",
        design,
        "--trials",
        "2",
        "--sessions",
        "4",
        "--seed",
        "5",
        "--json",
    ];
    args.extend_from_slice(extra);
    let report = json(&hotpage(&args));
    assert_eq!(report["design"], design, "{report}");
    assert!(report["rows_acknowledged"].as_u64().expect("acked") > 0);
    assert_eq!(report["rows_lost"], 0, "{design}: {report}");
    assert_eq!(report["partial_transactions"], 0, "{design}: {report}");
    assert_eq!(report["check_failures"], 0, "{design}: {report}");
    report
}
