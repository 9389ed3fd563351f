//! `hotpage sql --dialect tsql` as a user runs it: seed 001's script from a file, an insert
//! loop from -c, the tables in their designs in `hotpage inspect tables`, and a failed
//! batch's exit code 3.

mod common;
use common::*;
use std::process::Output;

const SEED001: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../hotpage-sql/tests/tsql/seed001_last_page_insert.sql"
);

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn tsql(db: &str, args: &[&str]) -> Output {
    let mut all = vec!["sql", "--db", db, "--dialect", "tsql"];
    all.extend_from_slice(args);
    hotpage(&all)
}

#[test]
fn seed_001_script_runs_and_its_tables_show_their_designs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = s(&dir.path().join("db")).to_string();
    let output = tsql(&db, &["-f", SEED001]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).matches("CREATE TABLE").count(), 6);
    let output = tsql(
        &db,
        &[
            "-c",
            "SET NOCOUNT ON\nDECLARE @i int = 0\nWHILE @i < 100\nBEGIN\n  INSERT INTO dbo.[TestTable_V5] ([Status]) VALUES ('CREATED')\n  SET @i += 1\nEND\nPRINT 'done'\nSELECT count(*) AS n FROM dbo.TestTable_V5 WITH (NOLOCK)",
            "--csv",
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "done\nn\n100\n");
    let output = hotpage(&["inspect", "tables", "--db", &db]);
    let shown = text(&output.stdout);
    for (table, design) in [
        ("testtable_v1", "identity"),
        ("testtable_v2", "identity-flow-control"),
        ("testtable_v3", "heap-nc-identity"),
        ("testtable_v4", "guid"),
        ("testtable_v5", "hash-prefix"),
        ("testtable_v6", "memory"),
    ] {
        assert!(
            shown
                .lines()
                .any(|l| l.contains(&format!(" {table} ")) && l.contains(&format!(" {design} "))),
            "{table} {design}:\n{shown}"
        );
    }
}

#[test]
fn a_failed_batch_stops_the_script_with_exit_code_3() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = s(&dir.path().join("db")).to_string();
    let output = tsql(&db, &["-c", "PRINT 'a'\nGO\nSELECT @nope\nGO\nPRINT 'b'"]);
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(text(&output.stdout), "a\n");
    let stderr = text(&output.stderr);
    assert!(stderr.contains("ERROR 42704"), "{stderr}");
    assert!(stderr.contains("SQL Server error 137"), "{stderr}");
    // The failing statement's line in its batch, and the batch's in the script.
    assert!(
        stderr.contains("at line 1 of the batch; the batch begins at line 3 of the script"),
        "{stderr}"
    );
}

const SEED000_HASH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../hotpage-sql/tests/tsql/seed000_heavy_insert_hash.sql"
);
const SEED000_HASH_LOOP: &str =
    include_str!("../../hotpage-sql/tests/tsql/seed000_hash_insert_loop.sql");

#[test]
fn seed_000_hash_partition_script_shows_hash_partition_in_inspect() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = s(&dir.path().join("db")).to_string();
    let output = tsql(&db, &["-f", SEED000_HASH]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let output = hotpage(&["inspect", "tables", "--db", &db]);
    let shown = text(&output.stdout);
    assert!(
        shown
            .lines()
            .any(|l| l.contains(" heavyinsert_hash ") && l.contains(" hash-partition ")),
        "{shown}"
    );
    let output = hotpage(&["inspect", "index", "--db", &db, "heavyinsert_hash"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("hash-partition"),
        "{}",
        text(&output.stdout)
    );
    // The partition scheme outlived the process: a second script sees it.
    let output = tsql(
        &db,
        &[
            "-c",
            "IF EXISTS (SELECT * FROM sys.partition_schemes WHERE name = N'ps_hash') PRINT 'kept'",
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "kept\n");
}

#[test]
fn stress_runs_seed_000s_loop_in_tsql_from_8_sessions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = s(&dir.path().join("db")).to_string();
    assert!(SEED000_HASH_LOOP.contains("WHILE @i < 100000"));
    // The article's loop, at 1% of its length; GO ends a batch, so the batch is what
    // comes before it.
    let batch = SEED000_HASH_LOOP
        .replace("100000", "1001")
        .replace("GO\n", "");
    // `=`: the batch starts with a `--` comment, which would read as an option.
    let sql = format!("--sql={batch}");
    let output = hotpage(&[
        "stress",
        "--dialect",
        "tsql",
        "--setup-sql",
        SEED000_HASH,
        &sql,
        "-n",
        "8",
        "-r",
        "1",
        "--durability",
        "none",
        "--db",
        &db,
        "--json",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let r = json(&output);
    assert_eq!(r["design"], "hash-partition (tsql)");
    assert_eq!(r["table"], "heavyinsert_hash");
    assert_eq!(r["rows_total"], 8, "one run of the batch per session");
    assert_eq!(r["index"]["rows_in_table"], 8000);
    // ostress -Q's shape: one INSERT per run, -r runs per session.
    let output = hotpage(&[
        "stress",
        "--dialect",
        "tsql",
        "--sql",
        "INSERT INTO dbo.HeavyInsert_Hash (col1) VALUES ('testing heavy')",
        "-n",
        "8",
        "-r",
        "50",
        "--durability",
        "none",
        "--db",
        &db,
        "--json",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let r = json(&output);
    assert_eq!(r["rows_total"], 400);
    assert_eq!(r["index"]["rows_in_table"], 8400);
    // Errors: usage (exit 2), with what is wrong.
    for (args, says) in [
        (vec!["--dialect", "tsql", "-n", "1"], "needs --sql"),
        (
            vec!["--dialect", "tsql", "--sql", "PRINT 'x'", "-n", "1"],
            "INSERTs into a table",
        ),
        (
            vec!["--dialect", "tsql", "--sql", "WHILE", "-n", "1"],
            "42601",
        ),
        (
            vec![
                "--dialect",
                "tsql",
                "--sql",
                "INSERT INTO nope VALUES (1)",
                "-n",
                "1",
            ],
            "nope",
        ),
    ] {
        let out = hotpage(&[&["stress"], &args[..]].concat());
        assert_one_line_error(&out, 2, says);
    }
    let bad_setup = dir.path().join("bad.sql");
    std::fs::write(&bad_setup, "SELECT @nope\nGO\n").expect("write");
    let out = hotpage(&[
        "stress",
        "--dialect",
        "tsql",
        "--setup-sql",
        s(&bad_setup),
        "--sql",
        "INSERT INTO t VALUES (1)",
        "-n",
        "1",
    ]);
    assert_one_line_error(&out, 2, "137");
    // A batch that fails while it runs: exit 1, the error named.
    let out = hotpage(&[
        "stress",
        "--dialect",
        "tsql",
        "--sql",
        "INSERT INTO dbo.HeavyInsert_Hash (col1) VALUES ('testing heavy') SELECT 1/0",
        "-n",
        "2",
        "-r",
        "3",
        "--durability",
        "none",
        "--db",
        &db,
    ]);
    assert_one_line_error(&out, 1, "22012");
}

/// Seed 002's heap, its procedure and its fn_dblog count, each in a process of its own: the
/// procedure and the table's T-SQL definition outlive the process that made them.
#[test]
fn seed_002_procedure_and_fn_dblog_across_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = s(&dir.path().join("db")).to_string();
    let output = tsql(
        &db,
        &[
            "-c",
            "CREATE TABLE dbo.demo_table (C1 CHAR(100) NOT NULL)
GO
CREATE OR ALTER PROC dbo.InsertDemo
        @NumOfRecords INT
AS
BEGIN
        WHILE @NumOfRecords > 0
        BEGIN
                INSERT INTO dbo.demo_table(C1) VALUES ('This is a test');
                SET @NumOfRecords -= 1;
        END
END
GO",
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let output = tsql(
        &db,
        &[
            "-c",
            "SET NOCOUNT ON\nCHECKPOINT\nEXEC dbo.InsertDemo @NumOfRecords = 1000\nSELECT Context, COUNT_BIG(*) AS n FROM sys.fn_dblog(NULL, NULL) WHERE Context = N'LCX_PFS' GROUP BY Context",
            "--csv",
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let shown = text(&output.stdout);
    let pfs: i64 = shown
        .lines()
        .find_map(|l| l.strip_prefix("LCX_PFS,"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{shown}"));
    // 1000 rows of 105 bytes fill about 15 pages of 8 KiB, each moving through up to five
    // free-space categories.
    assert!((10..=100).contains(&pfs), "{shown}");
    // A table's T-SQL definition is the database's: a later process amends it.
    let output = tsql(
        &db,
        &[
            "-c",
            "DROP TABLE dbo.demo_table\nCREATE TABLE dbo.demo_table (ID int IDENTITY(1,1) NOT NULL, C1 CHAR(100) NOT NULL)\nGO\nCREATE UNIQUE CLUSTERED INDEX CIX ON dbo.demo_table (ID)",
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let output = tsql(
        &db,
        &[
            "-c",
            "ALTER INDEX CIX ON dbo.demo_table SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON)",
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let output = hotpage(&["inspect", "tables", "--db", &db]);
    let shown = text(&output.stdout);
    assert!(
        shown
            .lines()
            .any(|l| l.contains(" demo_table ") && l.contains(" identity-flow-control ")),
        "{shown}"
    );
}

/// Seed 002's contention test: its procedure, wrapped as ostress runs it, from 8 sessions;
/// the report is on the table the procedure inserts into.
#[test]
fn stress_runs_seed_002s_procedure_from_8_sessions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = s(&dir.path().join("db")).to_string();
    let setup = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../hotpage-sql/tests/tsql/seed002_procedure.sql"
    );
    let output = hotpage(&[
        "stress",
        "--dialect",
        "tsql",
        "--setup-sql",
        setup,
        "--sql",
        "EXEC dbo.InsertCustomerData @NumOfRecords = 100;",
        "-n",
        "8",
        "-r",
        "1",
        "--durability",
        "none",
        "--db",
        &db,
        "--json",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let r = json(&output);
    assert_eq!(r["table"], "customers");
    assert_eq!(r["design"], "heap (tsql)");
    assert_eq!(r["index"]["rows_in_table"], 800);
}
