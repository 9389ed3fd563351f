//! `hotpage stress --url` against a real PostgreSQL, started by `scripts/pg_start.sh` on a
//! temporary directory: the report's rows, the rows in the table afterwards, the sampled
//! waits, the hotpage-server path against a stand-in of its views, and the errors (a
//! refused connection, a bad URL, the server's SQLSTATEs).
//!
//! PostgreSQL is required: CI installs it (`scripts/pg_install.sh` in `.ci/run`), and
//! without it these tests fail, they do not skip.

mod common;
use common::*;
use std::path::PathBuf;
use std::process::Command;

/// A PostgreSQL server of this test's own, stopped and removed when dropped.
struct PgServer {
    url: String,
    dir: String,
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts")
        .join(name)
}

impl PgServer {
    fn start() -> PgServer {
        let output = Command::new("bash")
            .arg(script("pg_start.sh"))
            .output()
            .expect("run scripts/pg_start.sh");
        assert!(
            output.status.success(),
            "these tests need PostgreSQL (CI installs it with scripts/pg_install.sh); \
             scripts/pg_start.sh failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        let value = |key: &str| {
            stdout
                .lines()
                .find_map(|line| line.strip_prefix(key))
                .unwrap_or_else(|| panic!("pg_start.sh printed no {key}: {stdout}"))
                .to_string()
        };
        PgServer {
            url: value("PG_URL="),
            dir: value("PG_DIR="),
        }
    }

    fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).expect("connect to the server")
    }

    fn count(&self, table: &str) -> i64 {
        self.client()
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .expect("count the rows")
            .get(0)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script("pg_stop.sh"))
            .arg(&self.dir)
            .status();
    }
}

fn setup_file(dir: &tempfile::TempDir, sql: &str) -> String {
    let path = dir.path().join("setup.sql");
    std::fs::write(&path, sql).expect("write the setup script");
    s(&path).to_string()
}

const IDENTITY_TABLE: &str = "CREATE TABLE IF NOT EXISTS t (id bigint GENERATED ALWAYS AS \
                              IDENTITY PRIMARY KEY, status varchar(20) NOT NULL);";
const INSERT: &str = "INSERT INTO t(status) VALUES ('CREATED')";

#[test]
fn stress_url_inserts_every_row_and_reports_sampled_waits() {
    let server = PgServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let setup = setup_file(&dir, IDENTITY_TABLE);
    let report = json(&hotpage(&[
        "stress",
        "--url",
        &server.url,
        "--setup-sql",
        &setup,
        "-Q",
        INSERT,
        "-n",
        "4",
        "-r",
        "200",
        "--json",
    ]));
    assert_eq!(report["rows_total"], 800);
    assert_eq!(report["sessions"], 4);
    assert_eq!(report["rows_per_session"], 200);
    assert!(report["rows_per_s"].as_f64().expect("a rate") > 0.0);
    assert!(report["latency_us"]["p99"].as_f64().expect("p99") > 0.0);
    assert_eq!(server.count("t"), 800, "exactly the acknowledged rows");

    let info = &report["server"];
    assert_eq!(info["kind"], "postgresql");
    assert_eq!(info["waits_source"], "pg_stat_activity");
    assert_eq!(info["synchronous_commit"], "on");
    assert_eq!(report["durability"], "synchronous_commit=on");
    assert!(
        info["version"]
            .as_str()
            .expect("text")
            .starts_with("PostgreSQL ")
    );
    assert_eq!(
        info["url"],
        server.url.as_str(),
        "no password in it to hide"
    );
    assert!(info["sample_rounds"].as_u64().expect("rounds") > 0);
    assert!(info["waits_error"].is_null(), "{}", info["waits_error"]);
    let waits = report["waits"].as_array().expect("a list");
    assert!(
        !waits.is_empty(),
        "800 inserts by 4 sessions: the sampler found no active session"
    );
    let share_sum: f64 = waits
        .iter()
        .map(|w| w["pct_of_wait_time"].as_f64().expect("a share"))
        .sum();
    assert!(
        (share_sum - 100.0).abs() < 0.01,
        "shares sum to {share_sum}"
    );
    for wait in waits {
        let name = wait["type"].as_str().expect("a name");
        // pg_stat_activity's wait_event_type:wait_event, or CPU for no wait event.
        assert!(name == "CPU" || name.contains(':'), "{name}");
        assert!(wait["count"].as_u64().expect("samples") > 0);
    }

    // The text report shows the same waits where an embedded run shows its own.
    let output = hotpage(&[
        "stress",
        "--url",
        &server.url,
        "-Q",
        INSERT,
        "-n",
        "2",
        "-r",
        "10",
    ]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(text.contains("rows 20 "), "{text}");
    assert!(
        text.contains("Top waits (pg_stat_activity sampled every"),
        "{text}"
    );
    assert!(text.contains("synchronous_commit=on"), "{text}");
    assert_eq!(server.count("t"), 820);
}

#[test]
fn a_refused_connection_is_one_clear_error_with_exit_code_1() {
    // A port nothing listens on. Not an ephemeral port bound and released: the other
    // tests' servers, started in parallel, take ephemeral ports, and one of them took it
    // once (the connection was reset instead of refused, and it could as well have run
    // the inserts against that test's server). Port 1 (tcpmux) is never handed out as
    // ephemeral and nothing here listens on it.
    let port = 1;
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let output = hotpage(&["stress", "--url", &url, "-Q", INSERT, "-n", "2", "-r", "5"]);
    assert_one_line_error(&output, 1, &format!("cannot connect to 127.0.0.1:{port}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Connection refused"), "{stderr}");
}

#[test]
fn bad_urls_and_engine_options_are_usage_errors() {
    let output = hotpage(&[
        "stress",
        "--url",
        "postgres://u:secret@host:notaport/db",
        "-Q",
        INSERT,
    ]);
    assert_one_line_error(&output, 2, "bad --url");
    assert!(!String::from_utf8_lossy(&output.stderr).contains("secret"));
    let output = hotpage(&[
        "stress",
        "--url",
        "postgres://h/db",
        "-Q",
        INSERT,
        "--db",
        "x",
    ]);
    assert_one_line_error(&output, 2, "cannot be used with '--db");
    let output = hotpage(&["stress", "--url", "postgres://h/db"]);
    assert_eq!(output.status.code(), Some(2), "--url needs --sql");
}

#[test]
fn server_errors_keep_their_sqlstate() {
    let server = PgServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let setup = setup_file(&dir, "CREATE TABLE u (id int PRIMARY KEY);");
    let run = |setup: Option<&str>, statement: &str| {
        let mut args = vec!["stress", "--url", &server.url, "-Q", statement];
        args.extend(["-n", "1", "-r", "3"]);
        if let Some(setup) = setup {
            args.extend(["--setup-sql", setup]);
        }
        hotpage(&args)
    };
    // The second insert of the same key fails while running: exit 1 and 23505.
    let output = run(Some(&setup), "INSERT INTO u VALUES (1)");
    assert_one_line_error(&output, 1, "ERROR 23505: duplicate key value");
    assert_eq!(server.count("u"), 1, "the first insert committed");
    // The setup script's CREATE TABLE fails the second time: exit 2 and 42P07.
    let output = run(Some(&setup), "INSERT INTO u VALUES (2)");
    assert_one_line_error(&output, 2, "the setup SQL failed: ERROR 42P07");
    // A statement that does not prepare: exit 2 and 42P01; a syntax error: 42601.
    let output = run(None, "INSERT INTO missing VALUES (1)");
    assert_one_line_error(&output, 2, "cannot be prepared: ERROR 42P01");
    let output = run(None, "INSERT INTO u VALUE (1)");
    assert_one_line_error(&output, 2, "ERROR 42601");
    // A parameter the driver has no value for.
    let output = run(None, "INSERT INTO u VALUES ($1)");
    assert_one_line_error(&output, 2, "must take no parameters");
    // A database that does not exist: the server's FATAL 3D000 at connect.
    let url = format!("{}_missing", server.url);
    let output = hotpage(&[
        "stress", "--url", &url, "-Q", "SELECT 1", "-n", "1", "-r", "1",
    ]);
    assert_one_line_error(&output, 1, "FATAL 3D000");
    assert_eq!(server.count("u"), 1);
}

/// A stand-in for a hotpage server's wait views on PostgreSQL: `version()` says hotpage
/// (through a `search_path` that puts `public` first), `hotpage_wait_stats` reads a table
/// that a trigger on `t` adds one `PAGELATCH_EX` wait to per row, and
/// `hotpage_reset_wait_stats()` zeroes it. Not a `hotpage serve`: it checks the target's
/// side of that path (detection, reset at the right moments, reading and parsing).
const FAKE_HOTPAGE_VIEWS: &str = "
    CREATE FUNCTION public.version() RETURNS text LANGUAGE sql
        AS $$ SELECT 'PostgreSQL 16.0 (hotpage 0.1.0) on Rust'::text $$;
    CREATE TABLE fake_waits (wait_type text, waiting_tasks_count bigint,
        wait_time_ms double precision, max_wait_time_ms double precision);
    INSERT INTO fake_waits VALUES ('PAGELATCH_EX', 0, 0, 0), ('WRITELOG', 7, 70, 10);
    CREATE VIEW hotpage_wait_stats AS SELECT * FROM fake_waits;
    CREATE FUNCTION hotpage_reset_wait_stats() RETURNS bigint LANGUAGE sql AS $$
        UPDATE fake_waits SET waiting_tasks_count = 0, wait_time_ms = 0, max_wait_time_ms = 0;
        SELECT 0::bigint $$;
    CREATE VIEW hotpage_hot_pages AS SELECT '0:17'::text AS page, 'leaf'::text AS page_type,
        0 AS level, 't'::text AS table_name, 3::bigint AS waits,
        1.5::double precision AS wait_time_ms;
    CREATE FUNCTION count_wait() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
        UPDATE fake_waits SET waiting_tasks_count = waiting_tasks_count + 1,
            wait_time_ms = wait_time_ms + 0.5, max_wait_time_ms = 0.5
            WHERE wait_type = 'PAGELATCH_EX';
        RETURN NEW; END $$;";

#[test]
fn a_hotpage_server_is_detected_and_its_wait_views_are_reset_and_read() {
    let server = PgServer::start();
    let mut client = server.client();
    client
        .batch_execute(&format!(
            "{IDENTITY_TABLE} {FAKE_HOTPAGE_VIEWS} CREATE TRIGGER t_wait AFTER INSERT ON t \
             FOR EACH ROW EXECUTE FUNCTION count_wait();"
        ))
        .expect("create the stand-in views");
    let url = format!(
        "{}?options=-c%20search_path%3Dpublic%2Cpg_catalog",
        server.url
    );
    // Rows of the warm-up add waits too: the reset at its end must drop them, and the
    // one before the run must drop WRITELOG's stale 7.
    let report = json(&hotpage(&[
        "stress",
        "--url",
        &url,
        "-Q",
        INSERT,
        "-n",
        "2",
        "--warmup",
        "0.3",
        "--duration",
        "0.5",
        "--json",
    ]));
    assert_eq!(report["server"]["kind"], "hotpage");
    assert_eq!(report["server"]["waits_source"], "hotpage_wait_stats");
    assert!(
        report["server"]["waits_error"].is_null(),
        "{}",
        report["server"]
    );
    let rows = report["rows_total"].as_u64().expect("rows");
    assert!(rows > 0);
    assert!(server.count("t") > rows as i64, "the warm-up inserted too");
    let waits = report["waits"].as_array().expect("a list");
    assert_eq!(waits.len(), 1, "WRITELOG was reset to 0: {waits:?}");
    assert_eq!(waits[0]["type"], "PAGELATCH_EX");
    assert_eq!(waits[0]["count"], rows, "exactly the measured rows' waits");
    assert_eq!(waits[0]["pct_of_wait_time"], 100.0);
    let pages = report["hot_pages"].as_array().expect("a list");
    assert_eq!(pages.len(), 1);
    assert_eq!(
        (&pages[0]["file"], &pages[0]["page"]),
        (&0.into(), &17.into())
    );
    assert_eq!(pages[0]["page_type"], "leaf");
    assert_eq!(pages[0]["table"], "t");
}
