//! `hotpage compare` end to end, as a user runs it: tiny runs against hotpage and SQLite
//! (and a throwaway local PostgreSQL: CI installs it, and without it that test fails; and
//! RocksDB and fjall when the `rocksdb` and `fjall` features are on, as `.ci/run` runs it),
//! the JSON's cells, medians and ratios, the text tables, a skipped peer's reason, and
//! bad flags.

mod common;
use common::*;

fn cells<'a>(report: &'a serde_json::Value, engine: &str) -> Vec<&'a serde_json::Value> {
    report["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .filter(|c| c["engine"] == engine)
        .collect()
}

#[test]
fn compare_hotpage_and_sqlite_end_to_end() {
    let output = hotpage(&[
        "compare",
        "--engines",
        "hotpage,sqlite",
        "--designs",
        "identity,guid",
        "--sessions",
        "1,2",
        "--rows",
        "40",
        "--rounds",
        "2",
        "--json",
    ]);
    let report = json(&output);
    assert_eq!(report["engines"], serde_json::json!(["hotpage", "sqlite"]));
    assert_eq!(report["skipped"], serde_json::json!([]));
    assert_eq!(report["rounds"], 2);
    assert_eq!(report["durability"], "sync");
    let all = report["cells"].as_array().unwrap();
    assert_eq!(all.len(), 8, "2 engines x 2 designs x 2 session counts");
    for cell in all {
        let rounds = cell["rows_per_s"].as_array().unwrap();
        assert_eq!(rounds.len(), 2, "{cell}");
        let spread = &cell["rows_per_s_spread"];
        let (min, median, max) = (
            spread["min"].as_f64().unwrap(),
            spread["median"].as_f64().unwrap(),
            spread["max"].as_f64().unwrap(),
        );
        assert!(min > 0.0 && min <= median && median <= max, "{cell}");
        assert!(cell["latency_p99_us"].as_f64().unwrap() > 0.0, "{cell}");
    }
    assert_eq!(
        cells(&report, "sqlite")[0]["durability"],
        "synchronous=FULL"
    );
    // hotpage sync: the log's waits are seen.
    assert!(
        cells(&report, "hotpage")
            .iter()
            .any(|c| !c["waits"].as_array().unwrap().is_empty())
    );
    let ratios = report["ratios"].as_array().unwrap();
    assert_eq!(ratios.len(), 4);
    for r in ratios {
        assert_eq!(r["best_peer"], "sqlite");
        let expected =
            r["hotpage_rows_per_s"].as_f64().unwrap() / r["best_peer_rows_per_s"].as_f64().unwrap();
        assert!(
            (r["ratio"].as_f64().unwrap() - expected).abs() < 1e-9,
            "{r}"
        );
    }
    // Progress went to stderr, one line per cell round.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches("rows/s").count(), 16, "{stderr}");
}

#[test]
fn compare_prints_aligned_tables() {
    let output = hotpage(&[
        "compare",
        "--engines",
        "hotpage,sqlite",
        "--designs",
        "guid",
        "--sessions",
        "2",
        "--duration",
        "0.2",
        "--rounds",
        "1",
        "--durability",
        "none",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.starts_with("hotpage compare: durability none"),
        "{stdout}"
    );
    for needle in [
        "synchronous=OFF",
        "none (no log)",
        "hotpage ÷ best peer",
        "min–max",
    ] {
        assert!(stdout.contains(needle), "{needle} missing: {stdout}");
    }
    // The ratio row: a number followed by x.
    let ratio_line = stdout
        .lines()
        .find(|l| l.contains("| guid") && l.contains("x |"))
        .unwrap_or_else(|| panic!("no ratio row: {stdout}"));
    assert!(ratio_line.contains("sqlite"), "{ratio_line}");
}

#[cfg(not(feature = "rocksdb"))]
#[test]
fn a_peer_that_is_not_built_is_skipped_with_the_reason() {
    let output = hotpage(&[
        "compare",
        "--engines",
        "hotpage,rocksdb",
        "--designs",
        "identity",
        "--sessions",
        "1",
        "--rows",
        "10",
        "--rounds",
        "1",
        "--json",
    ]);
    let report = json(&output);
    assert_eq!(report["engines"], serde_json::json!(["hotpage"]));
    assert_eq!(report["skipped"][0]["engine"], "rocksdb");
    let reason = report["skipped"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("--features rocksdb"), "{reason}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("compare: skipping rocksdb: "), "{stderr}");
    // No peer: no ratio.
    assert!(report["ratios"][0]["ratio"].is_null());
}

#[cfg(not(feature = "fjall"))]
#[test]
fn fjall_when_not_built_is_skipped_with_the_reason() {
    let output = hotpage(&[
        "compare",
        "--engines",
        "fjall,hotpage",
        "--designs",
        "guid",
        "--sessions",
        "1",
        "--rows",
        "10",
        "--rounds",
        "1",
        "--json",
    ]);
    let report = json(&output);
    assert_eq!(report["engines"], serde_json::json!(["hotpage"]));
    assert_eq!(report["skipped"][0]["engine"], "fjall");
    let reason = report["skipped"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("--features fjall"), "{reason}");
}

/// `compare` against hotpage and one embedded peer built in (a cargo feature), with both
/// durabilities: every cell ran, the peer's durability reads in its own words, and it
/// is the best peer of every ratio.
#[cfg(any(feature = "rocksdb", feature = "fjall"))]
fn compare_with_a_built_peer(engine: &str, labels: [(&str, &str); 2]) {
    for (durability, label) in labels {
        let output = hotpage(&[
            "compare",
            "--engines",
            &format!("hotpage,{engine}"),
            "--designs",
            "identity,guid",
            "--sessions",
            "1,3",
            "--rows",
            "30",
            "--rounds",
            "1",
            "--durability",
            durability,
            "--batch",
            "4",
            "--json",
        ]);
        let report = json(&output);
        assert_eq!(report["engines"], serde_json::json!(["hotpage", engine]));
        assert_eq!(report["skipped"], serde_json::json!([]));
        let peer = cells(&report, engine);
        assert_eq!(peer.len(), 4, "2 designs x 2 session counts");
        for cell in peer {
            assert_eq!(cell["durability"], label, "{cell}");
            assert!(cell["rows_per_s"][0].as_f64().unwrap() > 0.0, "{cell}");
            assert!(cell["latency_p99_us"].as_f64().unwrap() > 0.0, "{cell}");
        }
        let ratios = report["ratios"].as_array().unwrap();
        assert_eq!(ratios.len(), 4);
        assert!(
            ratios.iter().all(|r| r["best_peer"] == engine),
            "{ratios:?}"
        );
    }
}

#[cfg(feature = "rocksdb")]
#[test]
fn compare_hotpage_and_rocksdb_end_to_end() {
    compare_with_a_built_peer("rocksdb", [("sync", "sync=true"), ("none", "sync=false")]);
}

#[cfg(feature = "fjall")]
#[test]
fn compare_hotpage_and_fjall_end_to_end() {
    compare_with_a_built_peer(
        "fjall",
        [
            ("sync", "PersistMode::SyncData"),
            ("none", "PersistMode::Buffer"),
        ],
    );
}

#[test]
fn postgres_without_its_programs_is_skipped_with_the_reason() {
    let empty = tempfile::tempdir().unwrap();
    let output = hotpage(&[
        "compare",
        "--engines",
        "hotpage,postgres",
        "--designs",
        "identity",
        "--sessions",
        "1",
        "--rows",
        "10",
        "--rounds",
        "1",
        "--pg-bin",
        s(empty.path()),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("skipped postgres: no local PostgreSQL: no initdb and pg_ctl in"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("compare: skipping postgres"), "{stderr}");
}

#[test]
fn compare_against_a_throwaway_postgres() {
    let output = hotpage(&[
        "compare",
        "--engines",
        "postgres,hotpage",
        "--designs",
        "identity,guid",
        "--sessions",
        "2",
        "--rows",
        "30",
        "--rounds",
        "1",
        "--durability",
        "none",
        "--json",
    ]);
    let report = json(&output);
    assert_eq!(
        report["skipped"],
        serde_json::json!([]),
        "this test needs PostgreSQL's initdb and pg_ctl (CI installs them)"
    );
    let pg = cells(&report, "postgres");
    assert_eq!(pg.len(), 2);
    for cell in pg {
        assert_eq!(cell["durability"], "synchronous_commit=off");
        assert!(cell["rows_per_s"][0].as_f64().unwrap() > 0.0, "{cell}");
    }
    assert_eq!(report["ratios"][0]["best_peer"], "postgres");
}

#[test]
fn bad_flags_are_clear_errors() {
    let base = ["compare", "--rounds", "1", "--rows", "1"];
    for (extra, needle) in [
        (
            vec!["--engines", "hotpage,mysql"],
            "--engines: unknown value 'mysql'",
        ),
        (
            vec!["--engines", "sqlite,sqlite"],
            "'sqlite' is given twice",
        ),
        (vec!["--engines", ""], "--engines: unknown value ''"),
        (
            vec!["--designs", "heap"],
            "--designs: unknown value 'heap'; valid: identity, guid",
        ),
        (
            vec!["--sessions", "0"],
            "--sessions: unknown value '0'; valid: whole numbers from 1 to 256",
        ),
        (vec!["--sessions", "1,x"], "--sessions: unknown value 'x'"),
        (vec!["--durability", "async"], "choose sync or none"),
        (vec!["--row-bytes", "0"], "--row-bytes must be from 1 to"),
        (vec!["--batch", "0"], "--batch must be at least 1"),
        (
            vec!["--pg-bin", "/nonexistent/dir"],
            "--pg-bin /nonexistent/dir is not a directory",
        ),
    ] {
        let mut args = base.to_vec();
        args.extend(extra);
        assert_one_line_error(&hotpage(&args), 2, needle);
    }
    assert_one_line_error(
        &hotpage(&["compare", "--rounds", "0"]),
        2,
        "--rounds must be from 1 to 100",
    );
    assert_one_line_error(
        &hotpage(&["compare", "--rows", "5", "--duration", "1"]),
        2,
        "cannot be used with",
    );
    assert_one_line_error(
        &hotpage(&["compare", "--duration", "0"]),
        2,
        "--duration must be more than 0",
    );
}

#[test]
fn help_explains_the_durability_mapping() {
    let output = hotpage(&["compare", "--help"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success());
    for needle in [
        "--engines",
        "--rounds",
        "synchronous_commit=on",
        "synchronous=FULL",
        "sync=true",
    ] {
        assert!(stdout.contains(needle), "{needle}: {stdout}");
    }
}

#[test]
fn ctrl_c_stops_and_removes_the_local_postgres() {
    use std::os::unix::fs::PermissionsExt;
    // A temporary directory of this test's own, so that the server's directory is found;
    // PostgreSQL's user (when the test runs as root) must be able to enter it.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_hotpage"))
        .args([
            "compare",
            "--engines",
            "postgres",
            "--designs",
            "identity",
            "--sessions",
            "1",
            "--duration",
            "60",
            "--rounds",
            "1",
        ])
        .env("TMPDIR", tmp.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let server_dirs = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains("hotpage-pg."))
            .collect()
    };
    let started = std::time::Instant::now();
    while !server_dirs()
        .iter()
        .any(|d| d.join("data/postmaster.pid").exists())
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no PostgreSQL started (this test needs initdb and pg_ctl; CI installs them)"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Inside the round by now.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(
        server_dirs(),
        Vec::<std::path::PathBuf>::new(),
        "the server's directory is removed"
    );
}

/// `--html FILE` writes the comparison as a report: the ratio table, a scaling curve per
/// design with one line per engine (SVG), and every cell; the text tables still print.
#[test]
fn html_report_has_the_ratios_and_a_curve_per_design() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("compare.html");
    let output = hotpage(&[
        "compare",
        "--engines",
        "hotpage,sqlite",
        "--designs",
        "identity,guid",
        "--sessions",
        "1,2",
        "--rows",
        "30",
        "--rounds",
        "1",
        "--durability",
        "none",
        "--html",
        s(&path),
    ]);
    assert!(output.status.success(), "{output:?}");
    let html = std::fs::read_to_string(&path).expect("the report");
    for needle in [
        "hotpage against the best peer",
        "Design identity",
        "Design guid",
        "identity: rows/s by sessions",
        "guid: 99th-percentile latency",
        "synchronous=OFF",
    ] {
        assert!(html.contains(needle), "{needle:?} missing from the report");
    }
    // Two curves per design, each an inline SVG, and no fetch of anything.
    assert!(html.matches("<svg").count() >= 4, "charts missing");
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "a fetch"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("HTML report written to"), "{stderr}");
}
