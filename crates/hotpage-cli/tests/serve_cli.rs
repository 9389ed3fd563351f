//! `hotpage serve`'s command line: bad options are one-line errors with exit code 2 and
//! leave no database behind; a database in use is exit 5; a port in use is exit 1.

mod common;
mod serve_support;

use common::{assert_one_line_error, hotpage, s};
use serve_support::Serve;

#[test]
fn bad_options_are_refused_before_anything_is_opened() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let cases: [(&[&str], &str); 8] = [
        (&["--listen", "0.0.0.0:5433"], "is not a loopback address"),
        (
            &["--max-connections", "0"],
            "max connections must be from 1 to 10000",
        ),
        (
            &["--statement-timeout-ms", "0"],
            "--statement-timeout-ms must be at least 1",
        ),
        (&["--durability", "fast"], "unknown durability 'fast'"),
        (
            &["--txn-mib", "0"],
            "--txn-mib must be from 1 to 1048576, not 0",
        ),
        (
            &["--pool-mib", "0"],
            "--pool-mib must be from 1 to 1048576, not 0",
        ),
        (
            &["--max-message-bytes", "100"],
            "max message bytes must be from 1024",
        ),
        (
            &["--max-statement-bytes", "200000000"],
            "max statement bytes must be from 1 to the max message bytes",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["serve", "--db", s(&db)];
        args.extend_from_slice(extra);
        assert_one_line_error(&hotpage(&args), 2, needle);
        assert!(!db.exists(), "{extra:?} left a database behind");
    }
}

#[test]
fn a_database_in_use_and_a_port_in_use_are_clear_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let serve = Serve::start(&db, &[]);
    let listen = format!("127.0.0.1:{}", serve.port);
    let other = dir.path().join("other");
    // The same database: locked by the running server.
    let out = hotpage(&["serve", "--db", s(&db), "--listen", "127.0.0.1:0"]);
    assert_one_line_error(&out, 5, "cannot open database");
    // Another database on the same port.
    let out = hotpage(&["serve", "--db", s(&other), "--listen", &listen]);
    assert_one_line_error(&out, 1, &format!("cannot listen on {listen}"));
    // The address is bound before the database is opened: none was created.
    assert!(!other.exists(), "a taken port left a new database behind");
    let (status, stderr) = serve.terminate();
    assert!(status.success(), "{stderr}");
}

#[test]
fn help_explains_every_option() {
    let out = hotpage(&["serve", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for option in [
        "--db",
        "--listen",
        "--max-connections",
        "--idle-session-timeout-ms",
        "--statement-timeout-ms",
        "--max-message-bytes",
        "--max-statement-bytes",
        "--durability",
        "--pool-mib",
        "--txn-mib",
        "53200",
        "--auth",
        "--password-file",
        "--hash-password",
        "--tls-cert",
        "--tls-key",
        "28P01",
        "53300",
        "57014",
        "SIGTERM",
    ] {
        assert!(help.contains(option), "--help lacks {option}:\n{help}");
    }
}
