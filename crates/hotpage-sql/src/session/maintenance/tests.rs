//! VACUUM checks its table and does nothing else; TRUNCATE empties tables for real, keeps
//! the keys going, and survives a reopen and a power loss.

use crate::session::{SqlDatabase, SqlSession};
use hotpage::{CrashMode, Database, MemStorage, Options, Storage};
use std::path::Path;
use std::sync::Arc;

fn open(mem: &Arc<MemStorage>) -> Arc<SqlDatabase> {
    let storage: Arc<dyn Storage> = Arc::clone(mem) as Arc<dyn Storage>;
    let engine =
        Database::open_with_storage(storage, Path::new("m"), Options::default()).expect("open");
    SqlDatabase::new(Arc::new(engine)).expect("sql")
}

fn ids(s: &mut SqlSession, table: &str) -> Vec<String> {
    let result = s
        .execute(&format!("SELECT id FROM {table} ORDER BY id"))
        .expect("select")
        .remove(0);
    result
        .rows
        .iter()
        .map(|r| r[0].to_pg_text(None).unwrap_or_default())
        .collect()
}

fn code(s: &mut SqlSession, sql: &str) -> String {
    s.execute(sql).expect_err(sql).sqlstate.to_string()
}

#[test]
fn vacuum_checks_the_table_and_changes_nothing() {
    let mem = MemStorage::new(3);
    let db = open(&mem);
    let mut s = db.session();
    s.execute("CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)")
        .expect("create");
    s.execute("INSERT INTO t (v) VALUES ('a'), ('b')")
        .expect("insert");
    assert_eq!(s.execute("VACUUM t").expect("vacuum")[0].tag, "VACUUM");
    assert_eq!(s.execute("vacuum").expect("vacuum all")[0].tag, "VACUUM");
    assert_eq!(
        s.execute("VACUUM FULL t").expect("vacuum full")[0].tag,
        "VACUUM"
    );
    assert_eq!(ids(&mut s, "t"), ["1", "2"]);
    assert_eq!(code(&mut s, "VACUUM nope"), "42P01");
    assert_eq!(code(&mut s, "VACUUM hotpage_wait_stats"), "42809");
    s.execute("BEGIN").expect("begin");
    assert_eq!(code(&mut s, "VACUUM t"), "25001");
}

#[test]
fn truncate_empties_tables_and_the_keys_go_on() {
    let mem = MemStorage::new(5);
    let db = open(&mem);
    let mut s = db.session();
    s.execute("CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)")
        .expect("create");
    s.execute("CREATE TABLE k (id bigint PRIMARY KEY)")
        .expect("create");
    s.execute("INSERT INTO t (v) VALUES ('a'), ('b'), ('c')")
        .expect("insert");
    s.execute("INSERT INTO k VALUES (10), (20)")
        .expect("insert");
    let stale = s.prepare("INSERT INTO k VALUES ($1)").expect("prepare");
    let done = s.execute("TRUNCATE TABLE t, k").expect("truncate");
    // A plan made before finds its table dropped, as after DROP TABLE.
    let refused = s
        .execute_prepared(&stale, &[crate::value::Value::Int(99)])
        .expect_err("stale plan");
    assert_eq!(refused.sqlstate, "42P01", "{refused:?}");
    assert_eq!(done[0].tag, "TRUNCATE TABLE");
    assert!(ids(&mut s, "t").is_empty());
    assert!(ids(&mut s, "k").is_empty());
    // CONTINUE IDENTITY: the next generated key follows the old ones; a supplied key
    // that existed before is free again.
    s.execute("INSERT INTO t (v) VALUES ('d')").expect("insert");
    s.execute("INSERT INTO k VALUES (10)").expect("insert");
    assert_eq!(ids(&mut s, "t"), ["4"]);
    assert_eq!(ids(&mut s, "k"), ["10"]);
    // Bad input: nothing is emptied when one name is wrong.
    assert_eq!(code(&mut s, "TRUNCATE t, nope"), "42P01");
    assert_eq!(ids(&mut s, "t"), ["4"]);
    assert_eq!(code(&mut s, "TRUNCATE t RESTART IDENTITY"), "0A000");
    s.execute("BEGIN").expect("begin");
    assert_eq!(code(&mut s, "TRUNCATE t"), "25001");
    s.execute("ROLLBACK").expect("rollback");
    // A second session's plan for the table, made before: it finds the new table.
    let mut other = db.session();
    s.execute("TRUNCATE k").expect("truncate");
    other
        .execute("INSERT INTO k VALUES (30)")
        .expect("insert after truncate");
    assert_eq!(ids(&mut s, "k"), ["30"]);
    drop((s, other));
    // A power loss after the truncate: the catalog names the new, empty table and the
    // rows inserted since.
    let rebooted = mem.reboot(CrashMode::DropAll, 9).expect("reboot");
    drop(db);
    let db = open(&rebooted);
    let mut s = db.session();
    assert_eq!(ids(&mut s, "t"), ["4"]);
    assert_eq!(ids(&mut s, "k"), ["30"]);
    s.execute("INSERT INTO t (v) VALUES ('e')").expect("insert");
    let after = ids(&mut s, "t");
    assert_eq!(after.len(), 2);
    assert_ne!(after[1], "1", "no key goes back to the start: {after:?}");
}
