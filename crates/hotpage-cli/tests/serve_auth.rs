//! `hotpage serve --auth scram --password-file F`: SCRAM-SHA-256 with psql, the Rust
//! postgres crate and psycopg2; a wrong password or an unknown user is FATAL 28P01 with
//! PostgreSQL's message; the password file's rules; and listening beyond loopback, which
//! needs scram. psql and psycopg2 must be installed (CI installs them).

mod common;
mod serve_support;

use common::{assert_one_line_error, hotpage, s};
use postgres::NoTls;
use postgres::error::SqlState;
use serve_support::{Serve, require_program};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `hotpage serve --hash-password USER` with `password` on standard input: the line.
fn hash_password(user: &str, password: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hotpage"))
        .args(["serve", "--hash-password", user])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hotpage serve --hash-password");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{password}").expect("write the password");
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_string()
}

/// A password file for alice (password "s3cret pass") and bob ("hunter2"), mode 600.
pub fn password_file(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("passwords");
    let text = format!(
        "# hotpage serve users\n{}\n\n{}\n",
        hash_password("alice", "s3cret pass"),
        hash_password("bob", "hunter2")
    );
    std::fs::write(&path, text).expect("write the password file");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

fn psql(port: u16, user: &str, password: Option<&str>, sql: &str) -> Output {
    let mut command = Command::new(require_program("psql"));
    command
        .args([
            "-X",
            "-w",
            "-At",
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .args(["-U", user, "-d", "hotpage", "-c", sql])
        .env("PGCONNECT_TIMEOUT", "30")
        .env_remove("PGPASSWORD");
    if let Some(password) = password {
        command.env("PGPASSWORD", password);
    }
    command.output().expect("run psql")
}

fn conninfo(port: u16, user: &str, password: &str) -> String {
    format!(
        "host=127.0.0.1 port={port} user={user} password='{password}' dbname=hotpage connect_timeout=30"
    )
}

#[test]
fn hash_password_prints_a_verifier_line() {
    let line = hash_password("alice", "s3cret pass");
    let (user, verifier) = line.split_once(':').expect("user:verifier");
    assert_eq!(user, "alice");
    assert!(verifier.starts_with("SCRAM-SHA-256$4096:"), "{line}");
    assert!(
        !line.contains("s3cret"),
        "the password itself is not in the line"
    );
    assert_ne!(
        line,
        hash_password("alice", "s3cret pass"),
        "a fresh salt each time"
    );
    // An empty password and a user name with the separator are refused.
    let out = Command::new(env!("CARGO_BIN_EXE_hotpage"))
        .args(["serve", "--hash-password", "alice"])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_one_line_error(&out, 2, "read an empty password");
    assert_one_line_error(
        &hotpage(&["serve", "--hash-password", "a:b"]),
        2,
        "without ':'",
    );
}

#[test]
fn psql_with_the_right_password_works_and_a_wrong_one_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = password_file(dir.path());
    let serve = Serve::start(
        &dir.path().join("db"),
        &["--auth", "scram", "--password-file", s(&file)],
    );
    let out = psql(serve.port, "alice", Some("s3cret pass"), "SELECT 1 + 1");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
    for (user, password) in [
        ("alice", Some("wrong")),
        ("bob", Some("s3cret pass")),
        ("mallory", Some("hunter2")),
    ] {
        let out = psql(serve.port, user, password, "SELECT 1");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{user}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "FATAL:  password authentication failed for user \"{user}\""
            )),
            "{user}: {stderr}"
        );
    }
    // No password at all: libpq gives up before sending one.
    let out = psql(serve.port, "alice", None, "SELECT 1");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no password supplied"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_postgres_crate_authenticates_and_gets_28p01_for_a_wrong_password() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = password_file(dir.path());
    let serve = Serve::start(&dir.path().join("db"), &["--password-file", s(&file)]);
    let mut client = postgres::Client::connect(&conninfo(serve.port, "bob", "hunter2"), NoTls)
        .expect("bob connects");
    client
        .batch_execute("CREATE TABLE t (id bigint PRIMARY KEY)")
        .expect("create");
    let row = client
        .query_one("INSERT INTO t VALUES ($1) RETURNING id", &[&7i64])
        .expect("insert");
    assert_eq!(row.get::<_, i64>(0), 7);
    for (user, password) in [("bob", "Hunter2"), ("nobody", "hunter2")] {
        let error = postgres::Client::connect(&conninfo(serve.port, user, password), NoTls)
            .err()
            .expect("refused");
        let db_error = error.as_db_error().expect("a server error");
        assert_eq!(db_error.code(), &SqlState::INVALID_PASSWORD);
        assert_eq!(db_error.severity(), "FATAL");
        assert_eq!(
            db_error.message(),
            format!("password authentication failed for user \"{user}\"")
        );
    }
}

#[test]
fn psycopg2_authenticates_with_scram() {
    const PYTHON: &str = "/usr/bin/python3";
    let has_psycopg = Command::new(PYTHON)
        .args(["-c", "import psycopg2"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        has_psycopg,
        "{PYTHON} cannot import psycopg2: apt-get install -y python3-psycopg2 (.ci/run does)"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let file = password_file(dir.path());
    let serve = Serve::start(&dir.path().join("db"), &["--password-file", s(&file)]);
    let script = format!(
        r#"
import psycopg2
conn = psycopg2.connect(host="127.0.0.1", port={port}, user="alice", password="s3cret pass", dbname="hotpage")
cur = conn.cursor()
cur.execute("SELECT 40 + 2")
print(cur.fetchone()[0])
try:
    psycopg2.connect(host="127.0.0.1", port={port}, user="alice", password="nope", dbname="hotpage")
except psycopg2.OperationalError as e:
    print("refused", "password authentication failed for user \"alice\"" in str(e))
"#,
        port = serve.port
    );
    let out = Command::new(PYTHON)
        .args(["-c", &script])
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .collect::<Vec<_>>(),
        ["42", "refused True"]
    );
}

#[test]
fn beyond_loopback_needs_scram() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let out = hotpage(&["serve", "--db", s(&db), "--listen", "0.0.0.0:0"]);
    assert_one_line_error(&out, 2, "pass --auth scram --password-file FILE");
    assert!(!db.exists());
    // With scram it listens on every address; a client reaches it on loopback.
    let file = password_file(dir.path());
    let serve = Serve::start_on(
        &db,
        "0.0.0.0:0",
        &["--auth", "scram", "--password-file", s(&file)],
    );
    let out = psql(serve.port, "alice", Some("s3cret pass"), "SELECT 1");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (status, stderr) = serve.terminate();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("auth scram, 2 users"), "{stderr}");
}

#[test]
fn bad_password_files_and_auth_options_are_refused_at_startup() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let good = password_file(dir.path());
    let readable = dir.path().join("readable");
    std::fs::copy(&good, &readable).expect("copy");
    std::fs::set_permissions(&readable, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "alice:s3cret\n").expect("write");
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let missing = dir.path().join("missing");
    let cases: [(&[&str], &str); 5] = [
        (
            &["--auth", "scram"],
            "--auth scram needs --password-file FILE",
        ),
        (
            &["--auth", "trust", "--password-file", s(&good)],
            "--password-file is used only with --auth scram",
        ),
        (
            &["--password-file", s(&readable)],
            "group or world access (mode 644)",
        ),
        (
            &["--password-file", s(&plain)],
            "line 1: expected a verifier",
        ),
        (&["--password-file", s(&missing)], "No such file"),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["serve", "--db", s(&db)];
        args.extend_from_slice(extra);
        assert_one_line_error(&hotpage(&args), 2, needle);
        assert!(!db.exists(), "{extra:?} left a database behind");
    }
}
