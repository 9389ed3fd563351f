//! The `hotpage sql` command as a user runs it: -c, -f and piped scripts, the aligned,
//! CSV and JSON outputs, errors with psql's caret and exit code 3, and a database that
//! keeps what was written.

mod common;
use common::*;
use std::io::Write;
use std::process::{Command, Output, Stdio};

const CREATE: &str = "CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, \
                      status text DEFAULT 'CREATED')";

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `hotpage sql --db DB` plus `args`, which must succeed; returns stdout.
fn sql_ok(db: &str, args: &[&str]) -> String {
    let mut all = vec!["sql", "--db", db];
    all.extend_from_slice(args);
    let output = hotpage(&all);
    assert!(
        output.status.success(),
        "hotpage sql {args:?} failed: {}",
        stderr(&output)
    );
    stdout(&output)
}

/// `hotpage sql --db DB ARGS` with `input` on a pipe as standard input.
fn sql_with_stdin(db: &str, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hotpage"))
        .args(["sql", "--db", db])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start hotpage");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write the script");
    child.wait_with_output().expect("wait for hotpage")
}

fn temp_db() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = s(&dir.path().join("db")).to_string();
    (dir, db)
}

#[test]
fn c_runs_statements_in_order_and_prints_an_aligned_table() {
    let (_dir, db) = temp_db();
    let out = sql_ok(
        &db,
        &[
            "-c",
            CREATE,
            "-c",
            "INSERT INTO t (status) VALUES ('A'); INSERT INTO t (status) VALUES (NULL)",
            "-c",
            "SELECT * FROM t",
        ],
    );
    let expected = "CREATE TABLE
INSERT 0 1
INSERT 0 1
 id | status
----+--------
  1 | A
  2 |
(2 rows)

";
    assert_eq!(out, expected);
}

#[test]
fn returning_rows_print_as_a_table_then_the_tag() {
    let (_dir, db) = temp_db();
    let out = sql_ok(
        &db,
        &[
            "-c",
            CREATE,
            "-c",
            "INSERT INTO t (status) VALUES ('A'), ('BB') RETURNING *",
        ],
    );
    assert_eq!(
        out,
        "CREATE TABLE\n id | status\n----+--------\n  1 | A\n  2 | BB\n(2 rows)\n\nINSERT 0 2\n"
    );
}

#[test]
fn f_runs_a_file_between_c_options_in_command_line_order() {
    let (dir, db) = temp_db();
    let script = dir.path().join("insert.sql");
    // Comments, a statement over several lines, a ';' in a string and in a comment.
    std::fs::write(
        &script,
        "-- two rows; the second over three lines\nINSERT INTO t (status) VALUES ('a;b');\n\
         INSERT INTO t\n  (status) /* ; */\n  VALUES ('c');\n",
    )
    .expect("write the script");
    let out = sql_ok(
        &db,
        &[
            "-c",
            CREATE,
            "-f",
            s(&script),
            "-c",
            "SELECT status FROM t ORDER BY id",
        ],
    );
    assert_eq!(
        out,
        "CREATE TABLE\nINSERT 0 1\nINSERT 0 1\n status\n--------\n a;b\n c\n(2 rows)\n\n"
    );
}

#[test]
fn a_piped_standard_input_is_run_as_a_script() {
    let (_dir, db) = temp_db();
    let script = format!(
        "{CREATE};\nINSERT INTO t (status)\nVALUES ('piped');\n\\dt\nSELECT id, status FROM t"
    );
    let output = sql_with_stdin(&db, &[], &script);
    assert!(output.status.success(), "{}", stderr(&output));
    let out = stdout(&output);
    // No shell: no banner and no prompt.
    assert!(!out.contains("hotpage=>"), "{out}");
    assert!(out.starts_with("CREATE TABLE\nINSERT 0 1\n"), "{out}");
    // \dt from the engine's catalog: name, design, rows.
    assert!(out.contains(" name |  design  | rows\n"), "{out}");
    assert!(out.contains(" t    | identity |"), "{out}");
    // The last statement has no ';': it runs at the end of the input, as in psql.
    assert!(out.ends_with("  1 | piped\n(1 row)\n\n"), "{out}");
    // The engine counts a session's rows into the catalog when the session ends.
    let output = sql_with_stdin(&db, &[], "\\dt\n");
    assert_eq!(
        stdout(&output),
        " name |  design  | rows\n------+----------+------\n t    | identity |    1\n(1 row)\n\n"
    );
}

#[test]
fn json_prints_one_document_per_statement_with_text_values() {
    let (_dir, db) = temp_db();
    let out = sql_ok(
        &db,
        &[
            "--json",
            "-c",
            "CREATE TABLE j (k integer PRIMARY KEY, v text, n numeric(6,2))",
            "-c",
            "INSERT INTO j VALUES (1, 'x', 1.5), (2, NULL, 20)",
            "-c",
            "SELECT * FROM j ORDER BY k",
        ],
    );
    let docs: Vec<serde_json::Value> = out
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is a JSON document"))
        .collect();
    assert_eq!(docs.len(), 3, "{out}");
    assert_eq!(docs[0]["tag"], "CREATE TABLE");
    assert_eq!(docs[0]["rows"], serde_json::json!([]));
    assert_eq!(docs[1]["tag"], "INSERT 0 2");
    assert_eq!(docs[2]["tag"], "SELECT 2");
    assert_eq!(
        docs[2]["columns"],
        serde_json::json!([
            {"name": "k", "type": "integer"},
            {"name": "v", "type": "text"},
            {"name": "n", "type": "numeric(6,2)"}
        ])
    );
    assert_eq!(
        docs[2]["rows"],
        serde_json::json!([["1", "x", "1.50"], ["2", null, "20.00"]])
    );
}

#[test]
fn csv_quotes_what_needs_it_and_keeps_null_apart_from_empty() {
    let (_dir, db) = temp_db();
    let out = sql_ok(
        &db,
        &[
            "--csv",
            "-c",
            "CREATE TABLE c (k integer PRIMARY KEY, v text)",
            "-c",
            "INSERT INTO c VALUES (1, 'plain'), (2, 'a,b'), (3, 'say \"hi\"'), (4, ''), (5, NULL)",
            "-c",
            "SELECT k, v AS \"the value\" FROM c ORDER BY k",
        ],
    );
    // Statements that return no rows print nothing: stdout is CSV only.
    assert_eq!(
        out,
        "k,the value\n1,plain\n2,\"a,b\"\n3,\"say \"\"hi\"\"\"\n4,\"\"\n5,\n"
    );
}

/// The column of the caret on the line after `LINE n:` in `stderr`, and that line.
fn caret_target(stderr: &str) -> (String, char) {
    let lines: Vec<&str> = stderr.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("LINE "))
        .unwrap_or_else(|| panic!("no LINE in {stderr}"));
    let caret = lines[at + 1];
    assert_eq!(caret.trim(), "^", "{stderr}");
    let column = caret.find('^').expect("a caret");
    let target = lines[at]
        .chars()
        .nth(column)
        .expect("the caret is under the line");
    (lines[at].to_string(), target)
}

#[test]
fn an_error_shows_its_caret_exits_3_and_keeps_what_ran_before() {
    let (_dir, db) = temp_db();
    let output = hotpage(&[
        "sql",
        "--db",
        &db,
        "-c",
        CREATE,
        "-c",
        "INSERT INTO t (status) VALUES ('kept')",
        "-c",
        "SELECT id, nope FROM t",
        "-c",
        "INSERT INTO t (status) VALUES ('never')",
    ]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.starts_with("ERROR 42703: column \"nope\" does not exist\n"),
        "{err}"
    );
    let (line, target) = caret_target(&err);
    assert_eq!(line, "LINE 1: SELECT id, nope FROM t");
    assert_eq!(target, 'n', "{err}");
    assert_eq!(
        err.lines().nth(2).map(|l| l.find('^')),
        Some(Some("LINE 1: SELECT id, ".len()))
    );
    assert!(stdout(&output).ends_with("INSERT 0 1\n"));
    // Reopened: the statements before the error took effect, the one after did not run.
    let out = sql_ok(&db, &["--csv", "-c", "SELECT status FROM t ORDER BY id"]);
    assert_eq!(out, "status\nkept\n");
}

#[test]
fn the_caret_lands_on_a_later_line_of_a_statement() {
    let (_dir, db) = temp_db();
    let script = format!(
        "{CREATE};\nSELECT id, 'é' AS e,\n  -- a comment; with a ';' and ü\n\tstatus, nope\nFROM t;\n"
    );
    let output = sql_with_stdin(&db, &[], &script);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let err = stderr(&output);
    let (line, target) = caret_target(&err);
    // psql's numbering: the line within the statement; the tab shows as one space.
    assert_eq!(line, "LINE 3:  status, nope", "{err}");
    assert_eq!(target, 'n', "{err}");
    assert!(err.contains("at line 2 of standard input"), "{err}");
}

#[test]
fn a_duplicate_key_shows_its_sqlstate_and_detail() {
    let (_dir, db) = temp_db();
    let output = hotpage(&[
        "sql",
        "--db",
        &db,
        "-c",
        "CREATE TABLE u (k integer PRIMARY KEY, v text)",
        "-c",
        "INSERT INTO u VALUES (7, 'first')",
        "-c",
        "INSERT INTO u VALUES (7, 'second')",
    ]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let err = stderr(&output);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines[0],
        "ERROR 23505: duplicate key value violates unique constraint \"u_pkey\""
    );
    assert_eq!(lines[1], "DETAIL: Key (k)=(7) already exists.");
    let out = sql_ok(&db, &["--csv", "-c", "SELECT v FROM u"]);
    assert_eq!(out, "v\nfirst\n");
}

#[test]
fn the_database_keeps_its_rows_across_invocations() {
    let (_dir, db) = temp_db();
    sql_ok(
        &db,
        &["-c", CREATE, "-c", "INSERT INTO t (status) VALUES ('one')"],
    );
    sql_ok(&db, &["-c", "INSERT INTO t (status) VALUES ('two')"]);
    let out = sql_ok(
        &db,
        &["--json", "-c", "SELECT id, status FROM t ORDER BY id"],
    );
    let doc: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert_eq!(doc["rows"], serde_json::json!([["1", "one"], ["2", "two"]]));
}

#[test]
fn backslash_d_describes_a_table_and_a_bad_command_stops_a_script() {
    let (_dir, db) = temp_db();
    let out = sql_ok(&db, &["-c", CREATE, "-c", "\\d t"]);
    assert!(
        out.ends_with(
            "Table \"t\"\n column |  type\n--------+--------\n id     | bigint\n status | text\n(2 rows)\n\n"
        ),
        "{out}"
    );
    let output = hotpage(&["sql", "--db", &db, "-c", "\\nope", "-c", "SELECT 1"]);
    assert_eq!(output.status.code(), Some(3));
    assert!(stderr(&output).starts_with("invalid command \\nope"));
    assert!(stdout(&output).is_empty());
}

#[test]
fn bad_options_are_one_line_and_exit_2() {
    let (dir, db) = temp_db();
    assert_one_line_error(
        &hotpage(&[
            "sql",
            "--db",
            &db,
            "--durability",
            "maybe",
            "-c",
            "SELECT 1",
        ]),
        2,
        "unknown durability 'maybe'",
    );
    assert_one_line_error(
        &hotpage(&["sql", "--db", &db, "--json", "--csv", "-c", "SELECT 1"]),
        2,
        "--csv",
    );
    // A missing script is found before anything is created.
    let missing = dir.path().join("missing.sql");
    assert_one_line_error(
        &hotpage(&["sql", "--db", &db, "-f", s(&missing)]),
        1,
        "missing.sql",
    );
    assert!(!dir.path().join("db").exists());
}

#[test]
fn an_unlogged_table_shows_in_inspect_and_check_and_keeps_its_rows_over_a_clean_close() {
    let (_dir, db) = temp_db();
    sql_ok(
        &db,
        &[
            "-c",
            "CREATE UNLOGGED TABLE scratch (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)",
            "-c",
            "INSERT INTO scratch (v) VALUES ('a'), ('b'), ('c')",
        ],
    );
    let out = sql_ok(&db, &["--csv", "-c", "SELECT count(*) FROM scratch"]);
    assert!(out.contains('3'), "{out}");
    let inspect = hotpage(&["inspect", "tables", "--db", &db]);
    assert!(inspect.status.success());
    assert!(
        stdout(&inspect).contains("identity (unlogged)"),
        "{}",
        stdout(&inspect)
    );
    let check = hotpage(&["check", "--db", &db]);
    assert!(check.status.success(), "{}", stdout(&check));
    assert!(
        stdout(&check).contains("of data.unlogged"),
        "{}",
        stdout(&check)
    );
    // The root page is in the unlogged file (number 64), which inspect page reaches.
    let page = hotpage(&["inspect", "page", "64:1", "--db", &db]);
    assert!(page.status.success(), "{}", stderr(&page));
    assert!(stdout(&page).contains("table scratch"), "{}", stdout(&page));
}

/// Lines that reach the interactive shell's terminal together (a paste without bracketed
/// paste) are all run, in order. Each line's reader dropped what it had read past its line,
/// so only the first statement ran, and a lost `;` line merged two statements. Runs the
/// shell on a pseudo-terminal with util-linux's `script`.
#[test]
fn the_shell_runs_every_line_of_a_paste() {
    let (_dir, db) = temp_db();
    let shell = format!("{} sql --db {db}", env!("CARGO_BIN_EXE_hotpage"));
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &shell, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("`script` (util-linux) runs the shell on a pseudo-terminal: install it");
    let mut input = child.stdin.take().expect("stdin");
    std::thread::sleep(std::time::Duration::from_millis(800));
    input
        .write_all(b"CREATE TABLE p (id int PRIMARY KEY);\nINSERT INTO p VALUES (1);\nINSERT INTO p VALUES (2)\n;\nSELECT count(*) AS pasted FROM p;\n")
        .expect("paste");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    input.write_all(b"\\q\n").expect("quit");
    drop(input);
    let out = child.wait_with_output().expect("wait");
    let text = stdout(&out).replace('\r', "");
    assert!(
        text.contains("pasted\n--------\n      2\n"),
        "every pasted statement ran: {text}"
    );
}

/// Sends SIGINT to `child` (through kill(1): the tests have no signal crate).
fn interrupt(child: &std::process::Child) {
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
}

/// Ctrl-C while a statement runs cancels the statement (57014), as psql's does, and the
/// database is then closed cleanly; with nothing running, it ends the program (130).
#[test]
fn ctrl_c_cancels_the_running_statement() {
    let (_dir, db) = temp_db();
    sql_ok(&db, &["-c", "CREATE TABLE t (id int PRIMARY KEY)"]);
    let child = Command::new(env!("CARGO_BIN_EXE_hotpage"))
        .args(["sql", "--db", &db])
        .args([
            "-c",
            "INSERT INTO t VALUES (1); SELECT pg_sleep(60); INSERT INTO t VALUES (2)",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // The first insert and the sleep have started by then: the open takes far less.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let started = std::time::Instant::now();
    interrupt(&child);
    let output = child.wait_with_output().expect("wait");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("57014: canceling statement due to user request"),
        "{}",
        stderr(&output)
    );
    // The statement before it kept its row; the one after never ran.
    let rows = sql_ok(&db, &["--csv", "-c", "SELECT id FROM t ORDER BY id"]);
    assert_eq!(rows.trim(), "id\n1");

    // Nothing running (the program waits for its standard input, before the handler is
    // installed): it ends, by the signal or with 130.
    let mut idle = Command::new(env!("CARGO_BIN_EXE_hotpage"))
        .args(["sql", "--db", &db])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    interrupt(&idle);
    let status = idle.wait().expect("wait");
    drop(idle.stdin.take());
    use std::os::unix::process::ExitStatusExt;
    assert!(
        status.code() == Some(130) || status.signal() == Some(2),
        "{status:?}"
    );
}

/// `COPY … TO STDOUT` writes its records to standard output as the query reads them,
/// without a `COPY n` tag (as psql), and `--csv` a query's rows: a table larger than the
/// session's memory bound exports whole. A COPY whose query must hold its rows (ORDER BY) still stops at the bound.
#[test]
fn copy_to_stdout_exports_a_table_larger_than_the_memory_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let db = s(&db);
    sql_ok(
        db,
        &[
            "-c",
            "CREATE TABLE big (id bigint PRIMARY KEY, v text)",
            "-c",
            "INSERT INTO big SELECT g, repeat('x', 200) FROM generate_series(1, 20000) g",
        ],
    );
    let bound = "SET hotpage.query_memory = '1MB'";
    let out = sql_ok(
        db,
        &["-c", bound, "-c", "COPY big TO STDOUT WITH (FORMAT csv)"],
    );
    let expected: Vec<String> = std::iter::once("SET".to_string())
        .chain((1..=20000).map(|i| format!("{i},{}", "x".repeat(200))))
        .collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), expected);
    // --csv prints a query's rows as it reads them, the same way.
    let out = sql_ok(db, &["--csv", "-c", bound, "-c", "SELECT * FROM big"]);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("id,v"));
    assert_eq!(lines.collect::<Vec<_>>(), expected[1..]);
    let ordered = hotpage(&[
        "sql",
        "--db",
        db,
        "-c",
        bound,
        "-c",
        "COPY (SELECT * FROM big ORDER BY v, id) TO STDOUT",
    ]);
    assert_eq!(ordered.status.code(), Some(3), "{}", stderr(&ordered));
    assert!(
        stderr(&ordered).contains("54000") || stderr(&ordered).contains("would hold more than 1MB"),
        "{}",
        stderr(&ordered)
    );
}
