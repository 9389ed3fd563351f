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
    assert!(stderr.contains("line 3"), "{stderr}");
}
