//! Output into a closed pipe (`hotpage inspect tables --db D | head -1`) ends every command
//! quietly, as a Unix tool that SIGPIPE ends: exit code 141, no panic, no `error:` line
//! (issue 9: `println!` panicked with "failed printing to stdout: Broken pipe").

mod common;
use common::*;
use std::process::{Command, Output, Stdio};

/// Runs `hotpage ARGS...` with standard output a pipe whose read end is closed before the
/// process starts, so that its first write fails with EPIPE.
fn hotpage_into_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_hotpage"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("run hotpage")
}

/// No panic, no error line, and the exit code of a tool that SIGPIPE ended.
fn assert_ends_quietly(output: &Output, args: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(!stderr.contains("error:"), "{args:?}: {stderr}");
    assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    assert_eq!(output.status.code(), Some(141), "{args:?}: {stderr}");
}

#[test]
fn every_command_ends_quietly_when_its_reader_has_gone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let db = s(&db);
    let made = hotpage(&[
        "stress",
        "--sessions",
        "2",
        "--rows",
        "100",
        "--db",
        db,
        "--json",
    ]);
    assert!(made.status.success(), "{made:?}");
    let commands: [&[&str]; 14] = [
        &[
            "stress",
            "--design",
            "all",
            "--sessions",
            "2",
            "--rows",
            "100",
        ],
        &["stress", "--sessions", "2", "--rows", "100", "--json"],
        &["stress", "--sessions", "2", "--rows", "100", "--db", db],
        &["inspect", "tables", "--db", db],
        &["inspect", "tables", "--db", db, "--json"],
        &["inspect", "index", "identity", "--db", db],
        &["inspect", "page", "0:1", "--db", db],
        &["inspect", "waits", "--db", db],
        &["inspect", "log", "--db", db],
        &["check", "--db", db],
        &["check", "--db", db, "--json"],
        &["sql", "--db", db, "-c", "COPY (SELECT 1) TO STDOUT"],
        &["sql", "--db", db, "--csv", "-c", "SELECT 1"],
        &[
            "crashtest",
            "--trials",
            "1",
            "--sessions",
            "2",
            "--seed",
            "5",
        ],
    ];
    for args in commands {
        assert_ends_quietly(&hotpage_into_closed_pipe(args), args);
    }
    // The database a stopped command had open is intact.
    let checked = json(&hotpage(&["check", "--db", db, "--json"]));
    assert_eq!(checked["ok"], true, "{checked}");
}

#[test]
fn help_into_a_closed_pipe_does_not_panic() {
    let output = hotpage_into_closed_pipe(&["--help"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(matches!(output.status.code(), Some(0 | 141)), "{stderr}");
}
