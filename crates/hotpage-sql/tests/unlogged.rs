//! `CREATE UNLOGGED TABLE` through SQL: a clean close keeps its rows, a crash empties it
//! while the logged table beside it keeps every acknowledged row, and the forms PostgreSQL
//! refuses (or hotpage cannot honour) are errors with their SQLSTATEs.

use hotpage::{CrashMode, Database, MemStorage};
use hotpage_sql::{SqlDatabase, Value};
use std::sync::Arc;

mod common;

use common::open_on as open;

fn count(sql: &Arc<SqlDatabase>, table: &str) -> Value {
    let results = sql
        .session()
        .execute(&format!("SELECT count(*) FROM {table}"))
        .expect("count");
    results[0].rows[0][0].clone()
}

fn close(engine: Arc<Database>, sql: Arc<SqlDatabase>) {
    drop(sql);
    Arc::into_inner(engine)
        .expect("the last handle")
        .close()
        .expect("close");
}

#[test]
fn unlogged_rows_survive_a_clean_close_and_not_a_crash() {
    let mem = MemStorage::new(41);
    let (engine, sql) = open(&mem);
    let mut s = sql.session();
    s.execute(
        "CREATE UNLOGGED TABLE u (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
         CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)",
    )
    .expect("create");
    for _ in 0..300 {
        s.execute("INSERT INTO u (v) VALUES ('unlogged'); INSERT INTO t (v) VALUES ('logged')")
            .expect("insert");
    }
    assert!(engine.table("u").expect("u").is_unlogged());
    assert!(!engine.table("t").expect("t").is_unlogged());
    drop(s);
    close(engine, sql);

    let (engine, sql) = open(&mem);
    assert_eq!(count(&sql, "u"), Value::Int(300));
    assert_eq!(count(&sql, "t"), Value::Int(300));
    let mut s = sql.session();
    s.execute("BEGIN; INSERT INTO u (v) VALUES ('a'); INSERT INTO t (v) VALUES ('b'); COMMIT")
        .expect("a transaction over both");
    drop(s);
    // A crash: the killed process's handles are never closed or dropped.
    let rebooted = mem.reboot(CrashMode::Torn, 5).expect("reboot");
    std::mem::forget((engine, sql));

    let (engine, sql) = open(&rebooted);
    assert!(engine.recovery_report().unlogged_tables_emptied);
    assert_eq!(count(&sql, "u"), Value::Int(0));
    assert_eq!(count(&sql, "t"), Value::Int(301));
    let report = engine.check().expect("check");
    assert!(report.ok() && report.warnings.is_empty(), "{report:?}");
}

#[test]
fn partitioned_unlogged_tables_are_refused_with_postgresqls_sqlstate() {
    let mem = MemStorage::new(42);
    let (_engine, sql) = open(&mem);
    let mut s = sql.session();
    let error = s
        .execute("CREATE UNLOGGED TABLE p (id bigint PRIMARY KEY) PARTITION BY HASH (id)")
        .expect_err("refused");
    assert_eq!(error.sqlstate, "0A000");
    assert!(error.message.contains("cannot be unlogged"), "{error:?}");
    s.execute("CREATE TABLE p (id bigint PRIMARY KEY) PARTITION BY HASH (id)")
        .expect("parent");
    let error = s
        .execute("CREATE UNLOGGED TABLE p0 PARTITION OF p FOR VALUES WITH (MODULUS 2, REMAINDER 0)")
        .expect_err("refused");
    assert_eq!(error.sqlstate, "0A000");
}
