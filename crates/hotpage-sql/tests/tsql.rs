//! T-SQL (`TsqlSession`): the seed articles' scripts as written (split on GO, every batch
//! run, the tables in the designs the articles' DDL calls for, the insert loops from 8
//! sessions), and each T-SQL form with its errors.

use hotpage::{Database, MemStorage, Options, Storage};
use hotpage_sql::{SqlDatabase, SqlError, TsqlOutput, TsqlSession, Value};
use std::path::Path;
use std::sync::Arc;

fn open() -> (Arc<Database>, Arc<SqlDatabase>) {
    let mem = MemStorage::new(1);
    let engine = Arc::new(
        Database::open_with_storage(mem as Arc<dyn Storage>, Path::new("m"), Options::default())
            .expect("open"),
    );
    let sql = SqlDatabase::new(Arc::clone(&engine)).expect("sql");
    (engine, sql)
}

fn run(session: &mut TsqlSession, script: &str) -> Vec<TsqlOutput> {
    let (outputs, error) = session.execute_script(script);
    if let Some(error) = error {
        panic!("{script}\nfailed: {error:?}");
    }
    outputs
}

fn fail(session: &mut TsqlSession, script: &str) -> SqlError {
    match session.execute_script(script) {
        (_, Some(error)) => error,
        (_, None) => panic!("{script}\nshould have failed"),
    }
}

/// The first value of the last result with rows.
fn scalar(outputs: &[TsqlOutput]) -> Value {
    outputs
        .iter()
        .rev()
        .find_map(|o| match o {
            TsqlOutput::Result(r) if r.has_rows() => Some(r.rows[0][0].clone()),
            _ => None,
        })
        .expect("a result with rows")
}

fn count(session: &mut TsqlSession, table: &str) -> Value {
    scalar(&run(session, &format!("SELECT count(*) FROM dbo.{table}")))
}

fn design(engine: &Database, table: &str) -> String {
    engine.table(table).expect("table").design().to_string()
}

const SEED001: &str = include_str!("tsql/seed001_last_page_insert.sql");
const SEED001_PUBLISHED: &str = include_str!("tsql/seed001_as_published.txt");

/// Seed 001's ostress statement: `ostress … -Q"INSERT INTO dbo.[TestTable_V1] ([Status]) VALUES ('CREATED');"`.
const SEED001_INSERT: &str = "INSERT INTO dbo.[TestTable_V1] ([Status]) VALUES ('CREATED');";

fn without_blanks_and_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("-- "))
        .flat_map(|l| l.chars())
        .filter(|c| !c.is_whitespace())
        .collect()
}

#[test]
fn the_seed_001_fixture_is_the_published_text() {
    assert_eq!(
        without_blanks_and_comments(SEED001),
        without_blanks_and_comments(SEED001_PUBLISHED)
    );
}

#[test]
fn seed_001_runs_and_its_tables_land_in_their_designs() {
    let (engine, sql) = open();
    let mut session = TsqlSession::new(sql.session());
    let batches = hotpage_sql::split_batches(SEED001).unwrap();
    assert_eq!(batches.len(), 14);
    run(&mut session, SEED001);
    for (table, expected) in [
        ("testtable_v1", "identity"),
        ("testtable_v2", "identity-flow-control"),
        ("testtable_v3", "heap-nc-identity"),
        ("testtable_v4", "guid"),
        ("testtable_v5", "hash-prefix"),
        ("testtable_v6", "memory"),
    ] {
        assert_eq!(design(&engine, table), expected, "{table}");
    }
    // Each table takes the article's INSERT: the key and CreateDate come from defaults.
    for v in 1..=6 {
        let insert = SEED001_INSERT.replace("V1", &format!("V{v}"));
        let loop_batch = format!(
            "SET NOCOUNT ON\nDECLARE @i int = 0\nWHILE @i < 25\nBEGIN\n{insert}\nSET @i += 1\nEND\nGO 2"
        );
        run(&mut session, &loop_batch);
        assert_eq!(
            count(&mut session, &format!("TestTable_V{v}")),
            Value::Int(50)
        );
        let out = run(
            &mut session,
            &format!(
                "SELECT count(*) FROM dbo.TestTable_V{v} WHERE CreateDate IS NULL OR Id IS NULL"
            ),
        );
        assert_eq!(scalar(&out), Value::Int(0));
    }
    let out = run(
        &mut session,
        "SELECT max(HashValue), min(HashValue), count(*) FROM [dbo].[TestTable_V5] WHERE HashValue = Id % 16",
    );
    assert_eq!(scalar(&out), Value::Int(15));
}

#[test]
fn seed_001_insert_runs_from_8_sessions() {
    let (engine, sql) = open();
    run(&mut TsqlSession::new(sql.session()), SEED001);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let sql = Arc::clone(&sql);
            std::thread::spawn(move || {
                let mut session = TsqlSession::new(sql.session());
                for v in [1, 5] {
                    let insert = SEED001_INSERT.replace("V1", &format!("V{v}"));
                    run(&mut session, &format!("{insert}\nGO 40"));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut session = TsqlSession::new(sql.session());
    assert_eq!(count(&mut session, "TestTable_V1"), Value::Int(320));
    assert_eq!(count(&mut session, "TestTable_V5"), Value::Int(320));
    drop(session);
    assert_eq!(design(&engine, "testtable_v5"), "hash-prefix");
}

#[test]
fn seed_000_heavy_insert_becomes_identity_and_its_loop_runs() {
    let (engine, sql) = open();
    let mut session = TsqlSession::new(sql.session());
    let setup = include_str!("tsql/seed000_heavy_insert.sql");
    run(&mut session, setup);
    assert_eq!(design(&engine, "heavyinsert"), "identity");
    // Its guards see the table now: the same script drops and re-makes it.
    run(&mut session, setup);
    assert_eq!(design(&engine, "heavyinsert"), "identity");
    // The loop as written inserts 99,999 rows; from 8 sessions at a tenth of that here.
    let insert_loop = include_str!("tsql/seed000_insert_loop.sql");
    assert!(insert_loop.contains("WHILE @i < 100000"));
    let shorter = insert_loop.replace("100000", "1001");
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let sql = Arc::clone(&sql);
            let script = shorter.clone();
            std::thread::spawn(move || run(&mut TsqlSession::new(sql.session()), &script))
        })
        .collect();
    for t in threads {
        assert!(t.join().unwrap().is_empty(), "NOCOUNT ON: no output");
    }
    assert_eq!(count(&mut session, "HeavyInsert"), Value::Int(8000));
    let out = run(&mut session, "SELECT max(ID) FROM dbo.HeavyInsert");
    assert_eq!(scalar(&out), Value::Int(8000));
}

#[test]
fn seed_002_heap_and_guarded_drop() {
    let (engine, sql) = open();
    let mut session = TsqlSession::new(sql.session());
    run(&mut session, include_str!("tsql/seed002_heap.sql"));
    assert_eq!(design(&engine, "customers"), "heap");
    run(
        &mut session,
        "INSERT INTO dbo.Customers (C2) DEFAULT VALUES;\nGO 3",
    );
    let out = run(
        &mut session,
        "SELECT TOP (1) C1, C2 FROM dbo.Customers WITH (NOLOCK) ORDER BY C1 DESC",
    );
    assert_eq!(scalar(&out), Value::Int(3));
    run(&mut session, include_str!("tsql/seed002_heap.sql"));
    assert_eq!(count(&mut session, "Customers"), Value::Int(0));
    let demo = include_str!("tsql/seed002_demo_table.sql");
    run(&mut session, demo);
    run(
        &mut session,
        "INSERT INTO dbo.demo_table(C1) VALUES ('This is a test');",
    );
    run(&mut session, demo);
    assert_eq!(count(&mut session, "demo_table"), Value::Int(0));
    assert_eq!(design(&engine, "demo_table"), "heap");
}
