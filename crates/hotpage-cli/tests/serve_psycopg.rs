//! `hotpage serve` with Python's psycopg2 from Debian's packages (python3-psycopg2; CI
//! installs it): DDL in autocommit, parameters interpolated by the driver (a quote, a
//! numeric, a timestamptz, a bytea), commit and rollback, an error's SQLSTATE, and the
//! transaction status the driver reads from ReadyForQuery.

mod serve_support;

use serve_support::Serve;
use std::path::Path;
use std::process::Command;

/// Debian's python3, where Debian's python3-psycopg2 is installed.
const PYTHON: &str = "/usr/bin/python3";

#[test]
fn psycopg2_connects_inserts_commits_rolls_back_and_reads_errors() {
    let has_psycopg = Command::new(PYTHON)
        .args(["-c", "import psycopg2"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        has_psycopg,
        "{PYTHON} cannot import psycopg2: apt-get install -y python3-psycopg2 (.ci/run does)"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve_support/psycopg_client.py");
    let out = Command::new(PYTHON)
        .arg(&script)
        .arg(serve.port.to_string())
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            "id 1",
            "error 42703 column \"nope\" does not exist",
            "1 it's 9.99 2024-01-02T03:04:05.678000+00:00 00ff",
            // psycopg2's TRANSACTION_STATUS_INTRANS: its BEGIN before the SELECT is open.
            "status 2",
        ]
    );
}
