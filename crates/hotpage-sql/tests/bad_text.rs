//! Text PostgreSQL refuses is refused here too, before anything is stored: a NUL in a
//! statement (a script can hold one; the wire cannot), and a block comment that never
//! ends (it swallowed the rest of a script, statements and all).

use hotpage::{Database, MemStorage, Options, Storage};
use hotpage_sql::{SqlDatabase, Value};
use std::path::Path;
use std::sync::Arc;

fn open() -> Arc<SqlDatabase> {
    let mem: Arc<dyn Storage> = MemStorage::new(7);
    let engine =
        Database::open_with_storage(mem, Path::new("m"), Options::default()).expect("open");
    SqlDatabase::new(Arc::new(engine)).expect("sql")
}

fn count(sql: &Arc<SqlDatabase>) -> Value {
    let results = sql
        .session()
        .execute("SELECT count(*) FROM t")
        .expect("count");
    results[0].rows[0][0].clone()
}

#[test]
fn a_nul_in_a_statement_is_22021_and_stores_nothing() {
    let sql = open();
    let mut s = sql.session();
    s.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        .expect("create");
    let error = s
        .execute("INSERT INTO t VALUES (1, 'a\0b')")
        .expect_err("a NUL");
    assert_eq!(error.sqlstate, "22021");
    assert!(error.message.contains("0x00"), "{}", error.message);
    assert_eq!(count(&sql), Value::Int(0));
}

#[test]
fn an_unterminated_block_comment_is_42601_and_runs_nothing() {
    let sql = open();
    let mut s = sql.session();
    s.execute("CREATE TABLE t (id int PRIMARY KEY)")
        .expect("create");
    for text in [
        "INSERT INTO t VALUES (7) /* x; SELECT 2;",
        "SELECT 1 /* unterminated",
        "SELECT 1 /* a /* b */ 2",
    ] {
        let error = s.execute(text).expect_err(text);
        assert_eq!(error.sqlstate, "42601", "{text}: {}", error.message);
    }
    assert_eq!(count(&sql), Value::Int(0));
}
