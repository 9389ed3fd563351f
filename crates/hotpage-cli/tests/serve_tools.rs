//! `hotpage serve` with PostgreSQL's own tools: psql (DDL, DML, SELECT, a system view,
//! errors) and pgbench (a custom insert script in the simple, extended and prepared
//! protocols, every acknowledged transaction a row). Both must be installed (CI installs
//! postgresql-client and postgresql); a missing one fails the test.

mod serve_support;

use serve_support::{Serve, require_program};
use std::process::{Command, Output};

fn psql(serve: &Serve, args: &[&str]) -> Output {
    let port = serve.port.to_string();
    Command::new(require_program("psql"))
        .args([
            "-X",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-U",
            "tester",
            "-d",
            "hotpage",
        ])
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
    String::from_utf8_lossy(&output.stdout).to_string()
}

#[test]
fn psql_runs_ddl_dml_selects_and_system_views() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let out = stdout(&psql(
        &serve,
        &[
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            "CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, status text DEFAULT 'NEW', amount numeric(10,2))",
            "-c",
            "INSERT INTO orders (amount) VALUES (9.99), (20) RETURNING id, status",
            "-c",
            "SELECT id, status, amount FROM orders ORDER BY id",
        ],
    ));
    assert!(out.contains("CREATE TABLE"), "{out}");
    assert!(out.contains("INSERT 0 2"), "{out}");
    assert!(out.contains("  1 | NEW    |   9.99"), "{out}");
    assert!(out.contains("  2 | NEW    |  20.00"), "{out}");
    assert!(out.contains("(2 rows)"), "{out}");
    // Unaligned, tuples only: the values as PostgreSQL prints them.
    let out = stdout(&psql(
        &serve,
        &["-At", "-c", "SELECT count(*), sum(amount) FROM orders"],
    ));
    assert_eq!(out.trim(), "2|29.99");
    // A system view: the engine's waits.
    let out = stdout(&psql(
        &serve,
        &[
            "-At",
            "-c",
            "SELECT wait_type FROM hotpage_wait_stats WHERE wait_type = 'PAGELATCH_EX'",
        ],
    ));
    assert_eq!(out.trim(), "PAGELATCH_EX");
    // pg_stat_activity shows the psql session itself, by the pid psql was given.
    let out = stdout(&psql(
        &serve,
        &[
            "-At",
            "-c",
            "SELECT state, query FROM pg_stat_activity WHERE state = 'active'",
        ],
    ));
    assert!(
        out.contains("active|SELECT state, query FROM pg_stat_activity"),
        "{out}"
    );
    // A script from standard input, several statements per line, a transaction.
    let script =
        "BEGIN; INSERT INTO orders (amount) VALUES (1); COMMIT;\nSELECT count(*) FROM orders;\n";
    let out = run_script(&serve, script);
    assert!(out.lines().any(|l| l.trim() == "3"), "{out}");
}

fn run_script(serve: &Serve, script: &str) -> String {
    use std::io::Write;
    let port = serve.port.to_string();
    let mut child = Command::new(require_program("psql"))
        .args([
            "-X",
            "-At",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
        ])
        .args(["-U", "tester", "-d", "hotpage"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run psql");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("write the script");
    stdout(&child.wait_with_output().expect("psql output"))
}

#[test]
fn psql_shows_errors_with_their_position() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let out = psql(
        &serve,
        &[
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            "CREATE TABLE t (id bigint PRIMARY KEY)",
            "-c",
            "SELECT nope FROM t",
        ],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ERROR:  column \"nope\" does not exist"),
        "{stderr}"
    );
    assert!(stderr.contains("LINE 1: SELECT nope FROM t"), "{stderr}");
    // The caret under the position the server sent.
    assert!(stderr.contains("               ^"), "{stderr}");
    let out = psql(
        &serve,
        &[
            "-c",
            "INSERT INTO t VALUES (1)",
            "-c",
            "INSERT INTO t VALUES (1)",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("duplicate key value violates unique constraint"),
        "{stderr}"
    );
}

/// `pgbench -n -M MODE -f SCRIPT -c 8 -T 2`: the transactions it reports processed.
fn pgbench(serve: &Serve, mode: &str, script: &std::path::Path) -> u64 {
    let port = serve.port.to_string();
    let out = Command::new(require_program("pgbench"))
        .args([
            "-n",
            "-M",
            mode,
            "-c",
            "8",
            "-T",
            "2",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
        ])
        .args(["-U", "tester", "-f"])
        .arg(script)
        .arg("hotpage")
        .output()
        .expect("run pgbench");
    let text = stdout(&out);
    assert!(
        !text.contains("number of failed transactions: 1")
            && !String::from_utf8_lossy(&out.stderr).contains("aborted"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let processed = text
        .lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .and_then(|n| n.split('/').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no processed count in: {text}"));
    assert!(processed > 0, "{text}");
    processed
}

#[test]
fn pgbench_inserts_in_every_protocol_mode_and_each_transaction_is_a_row() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    stdout(&psql(
        &serve,
        &[
            "-c",
            "CREATE TABLE bench (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text, n integer)",
        ],
    ));
    let script = dir.path().join("insert.sql");
    // A pgbench variable as a parameter: prepared mode sends it as text with no type.
    std::fs::write(
        &script,
        "\\set n random(1, 1000)\nINSERT INTO bench (v, n) VALUES ('pgbench', :n);\n",
    )
    .expect("write the script");
    let mut total = 0;
    for mode in ["simple", "extended", "prepared"] {
        let processed = pgbench(&serve, mode, &script);
        total += processed;
        let rows: u64 = stdout(&psql(&serve, &["-At", "-c", "SELECT count(*) FROM bench"]))
            .trim()
            .parse()
            .expect("a count");
        assert_eq!(
            rows, total,
            "after -M {mode}: every acknowledged transaction is a row"
        );
    }
    let out = stdout(&psql(
        &serve,
        &["-At", "-c", "SELECT min(n) >= 1, max(n) <= 1000 FROM bench"],
    ));
    assert_eq!(out.trim(), "t|t");
}

/// `hotpage stress --url` against a live `hotpage serve`: the driver finds a hotpage server,
/// resets its wait statistics and reads them back, so the report's WRITELOG waits are the
/// run's own commits (each durable autocommit waits for its flush once).
#[test]
fn stress_url_against_a_hotpage_server_reads_its_wait_views() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let setup = dir.path().join("setup.sql");
    std::fs::write(
        &setup,
        "CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, status text);",
    )
    .expect("setup file");
    let url = format!("postgres://tester@127.0.0.1:{}/hotpage", serve.port);
    let output = Command::new(env!("CARGO_BIN_EXE_hotpage"))
        .args(["stress", "--url", &url, "--setup-sql"])
        .arg(&setup)
        .args(["-Q", "INSERT INTO t(status) VALUES ('CREATED')"])
        .args(["-n", "4", "-r", "100", "--json"])
        .output()
        .expect("run stress");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(report["rows_total"], 400);
    assert_eq!(report["server"]["kind"], "hotpage");
    assert_eq!(report["server"]["waits_source"], "hotpage_wait_stats");
    let waits = report["waits"].as_array().expect("waits");
    let writelog = waits
        .iter()
        .find(|w| w["type"] == "WRITELOG")
        .expect("WRITELOG among the waits");
    assert_eq!(writelog["count"], 400, "one flush wait per durable commit");
    let mut client = serve.client();
    let rows: i64 = client
        .query_one("SELECT count(*) FROM t", &[])
        .expect("count")
        .get(0);
    assert_eq!(rows, 400);
}

/// psql's describe commands through the server: `\dt` lists the tables, `\d table` shows
/// columns, types, nullability, the identity default and the primary key, and an unlogged
/// table is titled as one (pg_catalog answered by hotpage-sql's catalog module).
#[test]
fn psql_describes_tables_over_the_wire() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    stdout(&psql(
        &serve,
        &[
            "-c",
            "CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note varchar(20) NOT NULL, total numeric(10,2))",
            "-c",
            "CREATE UNLOGGED TABLE scratch (k text PRIMARY KEY)",
        ],
    ));
    let listed = stdout(&psql(&serve, &["-c", "\\dt"]));
    assert!(listed.contains("List of relations"), "{listed}");
    assert!(listed.contains(" orders  | table"), "{listed}");
    assert!(listed.contains(" scratch | table"), "{listed}");
    let described = stdout(&psql(&serve, &["-c", "\\d orders"]));
    for needle in [
        "Table \"public.orders\"",
        "generated always as identity",
        "character varying(20)",
        "numeric(10,2)",
        "\"orders_pkey\" PRIMARY KEY, btree (id)",
    ] {
        assert!(described.contains(needle), "{needle} in {described}");
    }
    let unlogged = stdout(&psql(&serve, &["-c", "\\d scratch"]));
    assert!(
        unlogged.contains("Unlogged table \"public.scratch\""),
        "{unlogged}"
    );
}
