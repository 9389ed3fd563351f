//! `hotpage stress --html` and `hotpage repro`: the files they write, the article figures
//! they print beside ours, and their errors.

use std::process::{Command, Output};

fn hotpage(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hotpage"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("runs hotpage")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `data-chart` kinds in a report, in order.
fn chart_kinds(html: &str) -> Vec<String> {
    html.split("data-chart=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn stress_html_has_the_runs_tables_and_charts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = hotpage(
        dir.path(),
        &[
            "stress",
            "--design",
            "identity",
            "--sessions",
            "4",
            "--rows",
            "3000",
            "--durability",
            "none",
            "--html",
            "one.html",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // --json stays one JSON object on stdout; the HTML note goes to stderr.
    let stdout = text(&out.stdout);
    assert!(stdout.trim_start().starts_with('{') && stdout.lines().count() == 1);
    assert!(text(&out.stderr).contains("HTML report written to one.html"));
    let html = std::fs::read_to_string(dir.path().join("one.html")).expect("written");
    assert_eq!(chart_kinds(&html), ["stacked-bars", "latency", "bars"]);
    assert!(
        html.contains("<td>identity</td>"),
        "the run table names the design"
    );
    for label in ["p50", "p90", "p99.9", "max"] {
        assert!(html.contains(label), "{label}");
    }
    assert!(!html.contains("<script"));
}

#[test]
fn stress_all_html_compares_every_design() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = hotpage(
        dir.path(),
        &[
            "stress",
            "--design",
            "all",
            "--sessions",
            "2",
            "--rows",
            "200",
            "--durability",
            "none",
            "--html",
            "all.html",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(dir.path().join("all.html")).expect("written");
    let kinds = chart_kinds(&html);
    assert_eq!(&kinds[..3], ["bars", "stacked-bars", "latency"]);
    for design in ["identity", "hash-partition", "heap", "memory", "guid-v7"] {
        assert!(
            html.contains(&format!("<td>{design}</td>")),
            "{design} missing"
        );
    }
}

#[test]
fn stress_html_to_a_missing_directory_fails_clearly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = hotpage(
        dir.path(),
        &[
            "stress",
            "--sessions",
            "1",
            "--rows",
            "10",
            "--durability",
            "none",
            "--html",
            "no/such/dir/r.html",
        ],
    );
    // A bad command line, refused before the run (it was found after it, exit 1).
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no/such/dir/r.html"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn repro_002_prints_the_articles_figures_beside_ours() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = hotpage(
        dir.path(),
        &[
            "repro", "002", "--scale", "0.05", "--rounds", "1", "--html", "r.html",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // The article's row-size table (pages 3,339 and fill 74.31 % at 2,000 bytes) and its
    // Figure 4 (68 PFS waits at 64 processes, runtime 165.72 s), cited.
    for figure in [
        "3339",
        "74.31",
        "165.72",
        "Figure 4",
        "Workload when inserting records",
    ] {
        assert!(stdout.contains(figure), "{figure} missing:\n{stdout}");
    }
    // Our own pages per 10,000 rows at 2,000 bytes: 3,334 (two rows fit an "up to 80 %"
    // page, as in the seed).
    let cells_of = |l: &str| {
        l.split('|')
            .map(str::trim)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let line = stdout
        .lines()
        .find(|l| cells_of(l).get(1).is_some_and(|c| c == "2000"))
        .expect("the 2000-byte row");
    let cells = cells_of(line);
    let pages: f64 = cells[2].parse().expect("pages");
    assert!((3200.0..=3500.0).contains(&pages), "{line}");
    assert!(stdout.contains("this machine has"), "the 2-core caveat");
    assert!(stdout.contains("HTML report: r.html"));
    let html = std::fs::read_to_string(dir.path().join("r.html")).expect("written");
    assert_eq!(chart_kinds(&html), ["lines", "lines", "lines"]);
}

#[test]
fn repro_000_ratios_are_to_identity() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = hotpage(
        dir.path(),
        &["repro", "000", "--scale", "0.05", "--rounds", "1"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let identity = stdout
        .lines()
        .find(|l| l.contains("| identity "))
        .expect("identity's row");
    let cells: Vec<&str> = identity.split('|').map(str::trim).collect();
    assert_eq!(cells[4], "1.00", "identity over itself: {identity}");
    // The article's speed-up of HeavyInsert_Hash: 320.623 s / 133.055 s.
    assert!(stdout.contains("2.41"), "{stdout}");
    // The default report path.
    assert!(dir.path().join("hotpage-report.html").is_file());
}

#[test]
fn repro_rejects_bad_arguments() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (args, message) in [
        (&["repro", "007"][..], "unknown article '007'"),
        (
            &["repro", "000", "--scale", "0"][..],
            "--scale must be from 0.01",
        ),
        (
            &["repro", "000", "--scale", "nan"][..],
            "--scale must be from 0.01",
        ),
        (
            &["repro", "000", "--rounds", "0"][..],
            "--rounds must be from 1",
        ),
        (
            &["repro", "000", "--durability", "later"][..],
            "unknown durability 'later'",
        ),
        (&["repro", "000", "--html", "."][..], "must name a file"),
    ] {
        let out = hotpage(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let help = hotpage(dir.path(), &["repro", "--help"]);
    let help = text(&help.stdout);
    for option in [
        "--scale",
        "--html",
        "--durability",
        "--rounds",
        "000",
        "004",
    ] {
        assert!(help.contains(option), "{option} not in --help");
    }
}
