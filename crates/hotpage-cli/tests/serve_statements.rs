//! `hotpage serve` and what PostgreSQL's tools send beyond single statements: psql's
//! multi-statement `-c` (one implicit transaction), and pgbench without `-n` (VACUUM of
//! its tables and TRUNCATE of its history before the run). psql and pgbench must be
//! installed (CI installs them).

mod serve_support;

use serve_support::{Serve, require_program};
use std::process::{Command, Output};

fn psql(serve: &Serve, args: &[&str]) -> Output {
    Command::new(require_program("psql"))
        .args([
            "-X",
            "-At",
            "-h",
            "127.0.0.1",
            "-p",
            &serve.port.to_string(),
        ])
        .args(["-U", "tester", "-d", "hotpage"])
        .args(args)
        .env("PGCONNECT_TIMEOUT", "30")
        .output()
        .expect("run psql")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

#[test]
fn a_multi_statement_query_is_one_transaction() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    // DDL then inserts in one -c: DDL runs on its own, the inserts commit together.
    let out = stdout(&psql(
        &serve,
        &[
            "-c",
            "CREATE TABLE t (id bigint PRIMARY KEY); INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)",
        ],
    ));
    assert_eq!(out, "CREATE TABLE\nINSERT 0 1\nINSERT 0 1");
    // A bad second insert: the first rolls back with it.
    let out = psql(
        &serve,
        &[
            "-c",
            "INSERT INTO t VALUES (3); INSERT INTO t VALUES ('bad')",
        ],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("invalid input syntax for type bigint: \"bad\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout(&psql(&serve, &["-c", "SELECT id FROM t ORDER BY id"])),
        "1\n2"
    );
    // An explicit BEGIN … COMMIT inside keeps its statements (and the one before it);
    // the failure after it rolls back only what came after the COMMIT.
    let out = psql(
        &serve,
        &[
            "-c",
            "INSERT INTO t VALUES (4); BEGIN; INSERT INTO t VALUES (5); COMMIT; INSERT INTO t VALUES (6); INSERT INTO t VALUES (1)",
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("duplicate key value"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout(&psql(&serve, &["-c", "SELECT id FROM t ORDER BY id"])),
        "1\n2\n4\n5"
    );
}

#[test]
fn pgbench_without_n_vacuums_and_truncates_its_tables_first() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    stdout(&psql(
        &serve,
        &[
            "-c",
            "CREATE TABLE pgbench_branches (bid integer PRIMARY KEY, bbalance integer)",
            "-c",
            "CREATE TABLE pgbench_tellers (tid integer PRIMARY KEY, bid integer, tbalance integer)",
            "-c",
            "CREATE TABLE pgbench_history (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, tid integer, v text)",
            "-c",
            "INSERT INTO pgbench_history (tid, v) VALUES (1, 'before'), (2, 'before')",
        ],
    ));
    let script = dir.path().join("history.sql");
    std::fs::write(
        &script,
        "INSERT INTO pgbench_history (tid, v) VALUES (1, 'run');\n",
    )
    .expect("write the script");
    // No -n: pgbench runs vacuum pgbench_branches, vacuum pgbench_tellers and truncate
    // pgbench_history first, and reports any of them that fails.
    let out = Command::new(require_program("pgbench"))
        .args([
            "-c",
            "4",
            "-T",
            "2",
            "-h",
            "127.0.0.1",
            "-p",
            &serve.port.to_string(),
        ])
        .args(["-U", "tester", "-f"])
        .arg(&script)
        .arg("hotpage")
        .output()
        .expect("run pgbench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let text = stdout(&out);
    assert!(stderr.contains("starting vacuum...end."), "{stderr}");
    assert!(!stderr.contains("ERROR"), "{stderr}");
    let processed: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no processed count in: {text}"));
    assert!(processed > 0, "{text}");
    // The history was emptied before the run: every row is the run's, and the identity
    // went on from where it was (3, not 1).
    let out = stdout(&psql(
        &serve,
        &[
            "-c",
            "SELECT count(*), min(id) FROM pgbench_history",
            "-c",
            "SELECT count(*) FROM pgbench_history WHERE v = 'before'",
        ],
    ));
    assert_eq!(out, format!("{processed}|3\n0"));
}
