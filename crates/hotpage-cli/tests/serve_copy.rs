//! `hotpage serve` with what `pgbench -i` and `psql \copy` send: COPY FROM STDIN (text and
//! CSV), COPY TO STDOUT, TRUNCATE inside a transaction block, VACUUM ANALYZE; and psql's
//! `\df`. psql and
//! pgbench must be installed (CI installs postgresql-client and postgresql); a missing one
//! fails the test.

mod serve_support;

use serve_support::{RawClient, Serve, query_body, require_program};
use std::process::{Command, Output};

fn psql(serve: &Serve, args: &[&str]) -> Output {
    let port = serve.port.to_string();
    Command::new(require_program("psql"))
        .args(["-X", "-h", "127.0.0.1", "-p", &port, "-U", "tester"])
        .args(["-d", "hotpage", "-v", "ON_ERROR_STOP=1"])
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

fn one_value(serve: &Serve, sql: &str) -> String {
    stdout(&psql(serve, &["-At", "-c", sql])).trim().to_string()
}

fn pgbench(serve: &Serve, args: &[&str]) -> Output {
    let port = serve.port.to_string();
    Command::new(require_program("pgbench"))
        .args(["-h", "127.0.0.1", "-p", &port, "-U", "tester"])
        .args(args)
        .arg("hotpage")
        .output()
        .expect("run pgbench")
}

/// The transactions a pgbench run reports processed, after checking none failed.
fn processed(out: &Output) -> u64 {
    let text = stdout(out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("number of failed transactions: 0") && !stderr.contains("aborted"),
        "{text}\n{stderr}"
    );
    text.lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .and_then(|n| n.split('/').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no processed count in: {text}"))
}

/// Plain `pgbench -i -s 1` (its default steps `dtgvp`: drop, create, client-side generate
/// with TRUNCATE in a transaction and COPY, vacuum analyze, then ALTER TABLE … ADD PRIMARY
/// KEY on the full tables), and `-I dtpgv` (keys before the data) twice; then the built-in
/// select-only script in each protocol mode, and a script of its own that reads accounts
/// by key. The tpcb-like script needs UPDATE, which hotpage does not have: that run is not
/// made here (README, "pgbench").
#[test]
fn pgbench_initializes_scale_1_and_runs_the_built_in_select_only_script() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let init = pgbench(&serve, &["-i", "-s", "1"]);
    let text = String::from_utf8_lossy(&init.stderr).to_string();
    assert!(
        init.status.success() && text.contains("creating primary keys") && text.contains("done in"),
        "plain -i: {text}"
    );
    let keyed = |serve: &Serve| {
        let out = psql(
            serve,
            &[
                "-c",
                "INSERT INTO pgbench_accounts (aid, bid, abalance) VALUES (1, 1, 0)",
            ],
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("duplicate key"),
            "pgbench_accounts is keyed on aid"
        );
    };
    keyed(&serve);
    assert_eq!(
        one_value(&serve, "SELECT count(*) FROM pgbench_accounts"),
        "100000"
    );
    let script = dir.path().join("by_aid.sql");
    std::fs::write(
        &script,
        "\\set aid random(1, 100000)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    )
    .expect("write the script");
    let script = script.display().to_string();
    for mode in ["simple", "prepared"] {
        let out = pgbench(
            &serve,
            &[
                "-n", "-M", mode, "-f", &script, "-c", "4", "-j", "2", "-T", "2",
            ],
        );
        assert!(processed(&out) > 0, "-f by_aid.sql -M {mode}");
    }
    for _ in 0..2 {
        // Twice: the second run drops and truncates tables that exist and are full.
        let init = pgbench(&serve, &["-i", "-s", "1", "-I", "dtpgv"]);
        let text = String::from_utf8_lossy(&init.stderr).to_string();
        assert!(init.status.success() && text.contains("done in"), "{text}");
    }
    // Keyed: a second account 1 is refused.
    let out = psql(
        &serve,
        &[
            "-c",
            "INSERT INTO pgbench_accounts (aid, bid, abalance) VALUES (1, 1, 0)",
        ],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("duplicate key"));
    let count = |table: &str| one_value(&serve, &format!("SELECT count(*) FROM {table}"));
    assert_eq!(count("pgbench_accounts"), "100000");
    assert_eq!(count("pgbench_branches"), "1");
    assert_eq!(count("pgbench_tellers"), "10");
    assert_eq!(count("pgbench_history"), "0");
    // The tpcb invariant, as it stands after -i: every balance sums to the history's
    // deltas (none yet).
    let sum = |column: &str, table: &str| {
        one_value(
            &serve,
            &format!("SELECT coalesce(sum({column}), 0) FROM {table}"),
        )
    };
    assert_eq!(sum("abalance", "pgbench_accounts"), "0");
    assert_eq!(sum("bbalance", "pgbench_branches"), "0");
    assert_eq!(sum("tbalance", "pgbench_tellers"), "0");
    assert_eq!(sum("delta", "pgbench_history"), "0");
    // The COPY text format's rows decoded as pgbench wrote them.
    let row = one_value(
        &serve,
        "SELECT aid, bid, abalance FROM pgbench_accounts WHERE aid = 100000 OR aid = 1 ORDER BY aid",
    );
    assert_eq!(row, "1|1|0\n100000|1|0");
    for mode in ["simple", "extended", "prepared"] {
        let out = pgbench(
            &serve,
            &["-n", "-S", "-M", mode, "-c", "4", "-j", "2", "-T", "2"],
        );
        assert!(processed(&out) > 0, "-M {mode}");
    }
}

/// psql's `\copy … from` (COPY FROM STDIN) in the text and CSV formats, with NULLs,
/// escapes, quotes and a header; `\copy … to` (COPY TO STDOUT) writes the same rows back;
/// a bad record fails the COPY whole, naming its line.
#[test]
fn copy_from_stdin_and_to_stdout_through_psql() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    stdout(&psql(
        &serve,
        &[
            "-c",
            "CREATE TABLE c (id int PRIMARY KEY, name text, n bigint, at timestamp)",
        ],
    ));
    let text_file = dir.path().join("rows.txt");
    std::fs::write(
        &text_file,
        "1\ttab\\there\t10\t2026-11-24 10:00:00\n2\t\\N\t\\N\t\\N\n3\tback\\\\slash\\nline\t-3\t2026-01-01 00:00:00\n",
    )
    .expect("write");
    let csv_file = dir.path().join("rows.csv");
    std::fs::write(
        &csv_file,
        "id,name,n,at\n4,\"a,\"\"quoted\"\" name\",40,\n5,\"\",,2026-11-24 12:30:00\n6,\"two\nlines\",6,\n",
    )
    .expect("write");
    let loaded = stdout(&psql(
        &serve,
        &[
            "-c",
            &format!("\\copy c from '{}'", text_file.display()),
            "-c",
            &format!(
                "\\copy c from '{}' with (format csv, header)",
                csv_file.display()
            ),
        ],
    ));
    assert_eq!(loaded.lines().collect::<Vec<_>>(), ["COPY 3", "COPY 3"]);
    let rows = stdout(&psql(
        &serve,
        &[
            "-At",
            "-P",
            "null=<null>",
            "-c",
            "SELECT id, name, n FROM c ORDER BY id",
        ],
    ));
    assert_eq!(
        rows,
        "1|tab\there|10\n2|<null>|<null>\n3|back\\slash\nline|-3\n4|a,\"quoted\" name|40\n5||<null>\n6|two\nlines|6\n"
    );
    let out_file = dir.path().join("out.txt");
    stdout(&psql(
        &serve,
        &["-c", &format!("\\copy c to '{}'", out_file.display())],
    ));
    let written = std::fs::read_to_string(&out_file).expect("read");
    assert!(written.starts_with("1\ttab\\there\t10\t2026-11-24 10:00:00\n2\t\\N\t\\N\t\\N\n3\tback\\\\slash\\nline\t-3\t"), "{written}");
    assert_eq!(written.lines().count(), 6, "{written}");

    // A bad record: nothing of the COPY stays, and the error names the line.
    let bad_file = dir.path().join("bad.txt");
    std::fs::write(&bad_file, "7\tok\t7\t\\N\n8\tshort\n").expect("write");
    let out = psql(
        &serve,
        &["-c", &format!("\\copy c from '{}'", bad_file.display())],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("missing data for column \"n\"") && stderr.contains("COPY c, line 2"),
        "{stderr}"
    );
    let bad_file = dir.path().join("bad2.txt");
    std::fs::write(&bad_file, "9\tx\tnot a number\t\\N\n").expect("write");
    let out = psql(
        &serve,
        &["-c", &format!("\\copy c from '{}'", bad_file.display())],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("invalid input syntax for type bigint"),
        "{stderr}"
    );
    assert_eq!(one_value(&serve, "SELECT count(*) FROM c"), "6");
    // A duplicate key rolls the whole COPY back too.
    let dup_file = dir.path().join("dup.txt");
    std::fs::write(&dup_file, "10\tnew\t1\t\\N\n1\tdup\t1\t\\N\n").expect("write");
    let out = psql(
        &serve,
        &["-c", &format!("\\copy c from '{}'", dup_file.display())],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("duplicate key"));
    assert_eq!(one_value(&serve, "SELECT count(*) FROM c"), "6");
    // COPY to or from a server file is refused, as for a PostgreSQL user without the
    // pg_read_server_files role.
    let out = psql(&serve, &["-c", "COPY c FROM '/etc/passwd'"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not allowed"));
}

/// COPY inside a transaction block is part of it; a TRUNCATE before it in the block is
/// undone by ROLLBACK and done by COMMIT, as pgbench -i's generate step relies on.
#[test]
fn copy_and_truncate_in_a_block_commit_or_roll_back_together() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    stdout(&psql(
        &serve,
        &[
            "-c",
            "CREATE TABLE t (id int, v text)",
            "-c",
            "INSERT INTO t VALUES (1, 'old'), (2, 'old')",
        ],
    ));
    let data = dir.path().join("new.csv");
    std::fs::write(&data, "3,new\n4,new\n5,new\n").expect("write");
    let copy = format!("\\copy t from '{}' with (format csv)", data.display());
    stdout(&psql(
        &serve,
        &[
            "-c",
            "BEGIN",
            "-c",
            "TRUNCATE t",
            "-c",
            &copy,
            "-c",
            "ROLLBACK",
        ],
    ));
    assert_eq!(
        one_value(
            &serve,
            "SELECT count(*), count(*) FILTER (WHERE v = 'old') FROM t"
        ),
        "2|2"
    );
    stdout(&psql(
        &serve,
        &[
            "-c",
            "BEGIN",
            "-c",
            "TRUNCATE t",
            "-c",
            &copy,
            "-c",
            "COMMIT",
        ],
    ));
    assert_eq!(
        one_value(
            &serve,
            "SELECT count(*), count(*) FILTER (WHERE v = 'new') FROM t"
        ),
        "3|3"
    );
}

/// The COPY sub-protocol as the wire carries it: CopyInResponse, CopyData split mid-record,
/// the statements after the COPY in the same Query, CopyFail (57014, nothing loaded), a
/// message that has no place in a COPY (08P01), COPY through the extended protocol
/// (0A000), and COPY TO STDOUT's CopyOutResponse, CopyData, CopyDone.
#[test]
fn the_copy_sub_protocol_on_the_wire() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let mut c = RawClient::connect(serve.port);
    c.send(
        b'Q',
        &query_body("CREATE TABLE w (id int PRIMARY KEY, v text)"),
    );
    while !matches!(c.read(), Some((b'Z', _))) {}

    // A record split across two CopyData; the SELECT after the COPY runs once it ends.
    c.send(
        b'Q',
        &query_body("COPY w FROM STDIN; SELECT count(*) FROM w"),
    );
    let (tag, body) = c.read().expect("CopyInResponse");
    assert_eq!(tag, b'G');
    assert_eq!(body, [0, 0, 2, 0, 0, 0, 0], "text format, 2 text columns");
    c.send(
        b'd',
        b"1	one
2	tw",
    );
    c.send(
        b'd', b"o
",
    );
    c.send(b'c', b"");
    let mut seen = Vec::new();
    loop {
        let (tag, body) = c.read().expect("answers");
        match tag {
            b'C' => seen.push(
                String::from_utf8_lossy(&body)
                    .trim_end_matches('\0')
                    .to_string(),
            ),
            b'D' => seen.push(format!("row {:?}", String::from_utf8_lossy(&body[6..]))),
            b'Z' => break,
            b'E' => panic!("{:?}", serve_support::error_fields(&body)),
            _ => {}
        }
    }
    assert_eq!(seen, ["COPY 2", "row \"2\"", "SELECT 1"]);

    // CopyFail: the COPY's rows are gone, the error says why.
    c.send(b'Q', &query_body("COPY w FROM STDIN"));
    assert_eq!(c.read().expect("CopyInResponse").0, b'G');
    c.send(
        b'd',
        b"3	three
",
    );
    let mut fail = b"client gave up".to_vec();
    fail.push(0);
    c.send(b'f', &fail);
    let (_, code, message) = c.read_error();
    assert_eq!(code, "57014");
    assert_eq!(message, "COPY from stdin failed: client gave up");
    while !matches!(c.read(), Some((b'Z', _))) {}

    // A Query in the middle of a COPY: 08P01, and the session goes on.
    c.send(b'Q', &query_body("COPY w FROM STDIN"));
    assert_eq!(c.read().expect("CopyInResponse").0, b'G');
    c.send(b'Q', &query_body("SELECT 1"));
    let (_, code, _) = c.read_error();
    assert_eq!(code, "08P01");
    while !matches!(c.read(), Some((b'Z', _))) {}

    // Through the extended protocol: refused with 0A000.
    let mut parse = vec![0u8];
    parse.extend_from_slice(&query_body("COPY w FROM STDIN"));
    parse.extend_from_slice(&[0, 0]);
    c.send(b'P', &parse);
    c.send(b'B', &[0, 0, 0, 0, 0, 0, 0, 0]);
    c.send(b'E', &[0, 0, 0, 0, 0]);
    c.send(b'S', b"");
    let (_, code, _) = c.read_error();
    assert_eq!(code, "0A000");
    while !matches!(c.read(), Some((b'Z', _))) {}

    // COPY TO STDOUT.
    c.send(b'Q', &query_body("COPY w TO STDOUT WITH (FORMAT csv)"));
    let mut out = Vec::new();
    loop {
        let (tag, body) = c.read().expect("answers");
        match tag {
            b'H' => assert_eq!(body, [0, 0, 2, 0, 0, 0, 0]),
            b'd' => out.extend_from_slice(&body),
            b'c' => out.extend_from_slice(b"<done>"),
            b'C' => out.extend_from_slice(&body),
            b'Z' => break,
            b'E' => panic!("{:?}", serve_support::error_fields(&body)),
            _ => {}
        }
    }
    assert_eq!(
        String::from_utf8_lossy(&out),
        "1,one\n2,two\n<done>COPY 2\0"
    );
}

/// psql's `\df` reads pg_proc, which hotpage has empty (no user functions, built-ins not
/// listed): the same answer as PostgreSQL's for a database without functions.
#[test]
fn psql_df_lists_no_functions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let out = stdout(&psql(&serve, &["-c", "\\df", "-c", "\\df lower"]));
    assert_eq!(out.matches("List of functions").count(), 2, "{out}");
    assert_eq!(out.matches("(0 rows)").count(), 2, "{out}");
    assert!(out.contains("Result data type"), "{out}");
}

/// `--txn-mib` bounds what open transactions stage: a COPY whose rows pass it fails with
/// SQLSTATE 53200 and a message naming the option, leaves nothing behind, and the server
/// goes on; a COPY within it commits.
#[test]
fn a_copy_past_the_staged_row_budget_fails_with_53200_and_one_within_it_commits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &["--txn-mib", "1"]);
    stdout(&psql(
        &serve,
        &[
            "-c",
            "CREATE TABLE big (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)",
        ],
    ));
    let rows = |n: usize| {
        let path = dir.path().join(format!("rows{n}.txt"));
        let text: String = (0..n).map(|i| format!("row{i}\n")).collect();
        std::fs::write(&path, text).expect("write the rows");
        path.display().to_string()
    };
    // 1 MiB holds about 4,300 such rows (each costs its bytes and about 230 of bookkeeping).
    let too_many = rows(10_000);
    let out = psql(
        &serve,
        &[
            "-v",
            "VERBOSITY=verbose",
            "-c",
            &format!("\\copy big (v) FROM '{too_many}'"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("53200") && stderr.contains("--txn-mib"),
        "{stderr}"
    );
    assert_eq!(one_value(&serve, "SELECT count(*) FROM big"), "0");
    let fits = rows(3_000);
    stdout(&psql(
        &serve,
        &["-c", &format!("\\copy big (v) FROM '{fits}'")],
    ));
    assert_eq!(one_value(&serve, "SELECT count(*) FROM big"), "3000");
}

/// A result larger than the session's memory bound streams to the client: psql's SELECT
/// and COPY TO STDOUT (the simple protocol) and a driver's prepared query (the extended
/// protocol, all rows at once) get every row, in key order, under `hotpage.query_memory =
/// '1MB'` with about 4 MB of rows; a query that must hold its rows (ORDER BY) still stops
/// at the bound with 54000.
#[test]
fn results_larger_than_the_memory_bound_stream_to_the_client() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let rows = 20_000;
    stdout(&psql(
        &serve,
        &[
            "-c",
            "CREATE TABLE big (id bigint PRIMARY KEY, v text)",
            "-c",
            &format!(
                "INSERT INTO big SELECT g, repeat('x', 200) FROM generate_series(1, {rows}) g"
            ),
        ],
    ));
    let bound = "SET hotpage.query_memory = '1MB'";
    let expected: Vec<String> = (1..=rows)
        .map(|i| format!("{i}|{}", "x".repeat(200)))
        .collect();
    let selected = stdout(&psql(
        &serve,
        &["-At", "-c", bound, "-c", "SELECT * FROM big"],
    ));
    assert_eq!(selected.lines().skip(1).collect::<Vec<_>>(), expected);
    let copied = stdout(&psql(
        &serve,
        &[
            "-At",
            "-c",
            bound,
            "-c",
            "COPY big TO STDOUT WITH (FORMAT csv, DELIMITER '|')",
        ],
    ));
    assert_eq!(copied.lines().skip(1).collect::<Vec<_>>(), expected);
    let ordered = psql(
        &serve,
        &["-At", "-c", bound, "-c", "SELECT * FROM big ORDER BY v, id"],
    );
    assert!(!ordered.status.success());
    let stderr = String::from_utf8_lossy(&ordered.stderr);
    assert!(stderr.contains("would hold more than 1MB"), "{stderr}");
    // The extended protocol: Execute with no row limit streams too.
    let mut client = serve.client();
    client.batch_execute(bound).expect("set");
    let got = client
        .query("SELECT id, v FROM big WHERE id > $1", &[&100i64])
        .expect("query");
    assert_eq!(got.len(), rows as usize - 100);
    assert_eq!(got[0].get::<_, i64>(0), 101);
    assert_eq!(got.last().expect("rows").get::<_, i64>(0), rows);
}
