//! VACUUM checks its table and does nothing else; TRUNCATE empties tables for real, keeps
//! the keys going, and survives a reopen and a power loss; inside a transaction block it
//! is the transaction's (done at COMMIT, undone by ROLLBACK).

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
    assert_eq!(done[0].tag, "TRUNCATE TABLE");
    assert!(ids(&mut s, "t").is_empty());
    assert!(ids(&mut s, "k").is_empty());
    // A plan made before finds its table replaced: it is planned again, and its row goes
    // to the new table (as PostgreSQL re-plans a prepared statement after DDL).
    assert!(stale.is_stale());
    s.execute_prepared(&stale, &[crate::value::Value::Int(99)])
        .expect("a stale plan is planned again");
    assert_eq!(ids(&mut s, "k"), ["99"]);
    // CONTINUE IDENTITY: the next generated key follows the old ones; a supplied key
    // that existed before is free again.
    s.execute("INSERT INTO t (v) VALUES ('d')").expect("insert");
    s.execute("INSERT INTO k VALUES (10)").expect("insert");
    assert_eq!(ids(&mut s, "t"), ["4"]);
    assert_eq!(ids(&mut s, "k"), ["10", "99"]);
    // Bad input: nothing is emptied when one name is wrong.
    assert_eq!(code(&mut s, "TRUNCATE t, nope"), "42P01");
    assert_eq!(ids(&mut s, "t"), ["4"]);
    assert_eq!(code(&mut s, "TRUNCATE t RESTART IDENTITY"), "0A000");
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

#[test]
fn truncate_in_a_block_is_done_at_commit_and_undone_by_rollback() {
    let mem = MemStorage::new(7);
    let db = open(&mem);
    let mut s = db.session();
    s.execute("CREATE TABLE k (id bigint PRIMARY KEY, v text)")
        .expect("create");
    s.execute("CREATE TABLE h (id int, v text)")
        .expect("create heap");
    s.execute("INSERT INTO k VALUES (1, 'a'), (2, 'b')")
        .expect("insert");
    s.execute("INSERT INTO h VALUES (1, 'a'), (2, 'b')")
        .expect("insert");
    let mut other = db.session();

    // ROLLBACK: the tables are whole again, and no one ever saw them empty.
    s.execute("BEGIN").expect("begin");
    s.execute("INSERT INTO k VALUES (7, 'gone')")
        .expect("insert");
    s.execute("TRUNCATE k, h").expect("truncate in a block");
    // Inside the block they are empty (the row inserted before the TRUNCATE too), and a
    // key the old table held is free.
    assert!(ids(&mut s, "k").is_empty());
    assert!(ids(&mut s, "h").is_empty());
    s.execute("INSERT INTO k VALUES (1, 'new')")
        .expect("a key of the old rows is free");
    assert_eq!(ids(&mut s, "k"), ["1"]);
    assert_eq!(ids(&mut other, "k"), ["1", "2"], "others see the old rows");
    s.execute("ROLLBACK").expect("rollback");
    assert_eq!(ids(&mut s, "k"), ["1", "2"]);
    assert_eq!(ids(&mut s, "h"), ["1", "2"]);

    // A failed block rolls back the same way.
    s.execute("BEGIN").expect("begin");
    s.execute("TRUNCATE h").expect("truncate");
    assert!(s.execute("SELECT nope FROM h").is_err());
    s.execute("COMMIT")
        .expect("commit of a failed block is a rollback");
    assert_eq!(ids(&mut s, "h"), ["1", "2"]);

    // COMMIT: emptied, then the rows inserted after the TRUNCATE are there (pgbench -i).
    s.execute("BEGIN").expect("begin");
    s.execute("TRUNCATE TABLE k, h").expect("truncate");
    s.execute("INSERT INTO k VALUES (2, 'x'), (3, 'y')")
        .expect("insert");
    s.execute("INSERT INTO h VALUES (9, 'z')").expect("insert");
    s.execute("COMMIT").expect("commit");
    assert_eq!(ids(&mut s, "k"), ["2", "3"]);
    assert_eq!(ids(&mut other, "k"), ["2", "3"]);
    assert_eq!(ids(&mut other, "h"), ["9"]);
    other
        .execute("INSERT INTO k VALUES (4, 'w')")
        .expect("another session's plan finds the new table");
    assert_eq!(code(&mut s, "INSERT INTO k VALUES (3, 'dup')"), "23505");
    drop((s, other));
    // A power loss after the commit: the new tables and their rows.
    let rebooted = mem.reboot(CrashMode::DropAll, 11).expect("reboot");
    drop(db);
    let db = open(&rebooted);
    let mut s = db.session();
    assert_eq!(ids(&mut s, "k"), ["2", "3", "4"]);
    assert_eq!(ids(&mut s, "h"), ["9"]);
}

#[test]
fn truncate_in_a_query_message_is_part_of_its_implicit_transaction() {
    struct Quiet;
    impl crate::session::BatchObserver for Quiet {
        fn before_statement(&mut self, _: usize) -> crate::error::SqlResult<()> {
            Ok(())
        }
        fn statement_done(
            &mut self,
            _: crate::session::StatementResult,
        ) -> crate::error::SqlResult<()> {
            Ok(())
        }
    }
    let mem = MemStorage::new(8);
    let db = open(&mem);
    let mut s = db.session();
    s.execute("CREATE TABLE k (id bigint PRIMARY KEY)")
        .expect("create");
    s.execute("INSERT INTO k VALUES (1), (2)").expect("insert");
    // A failure later in the message undoes the TRUNCATE (it used to commit at once).
    let error = s.execute_query_message(
        "TRUNCATE k; INSERT INTO k VALUES (5); INSERT INTO k VALUES (5)",
        &mut Quiet,
    );
    assert_eq!(error.expect("duplicate").sqlstate, "23505");
    assert_eq!(ids(&mut s, "k"), ["1", "2"]);
    let error = s.execute_query_message("TRUNCATE k; INSERT INTO k VALUES (5)", &mut Quiet);
    assert_eq!(error, None);
    assert_eq!(ids(&mut s, "k"), ["5"]);
}

#[test]
fn postgres_forms_of_vacuum_and_analyze_check_the_table() {
    let mem = MemStorage::new(9);
    let db = open(&mem);
    let mut s = db.session();
    s.execute("CREATE TABLE t (id int)").expect("create");
    for sql in [
        "vacuum analyze t",
        "VACUUM FULL VERBOSE ANALYZE t;",
        "VACUUM (ANALYZE, VERBOSE) t",
        "vacuum (full) t",
        "vacuum analyze",
    ] {
        assert_eq!(s.execute(sql).expect(sql)[0].tag, "VACUUM", "{sql}");
    }
    assert_eq!(s.execute("ANALYZE t").expect("analyze")[0].tag, "ANALYZE");
    assert_eq!(code(&mut s, "vacuum analyze nope"), "42P01");
    assert_eq!(code(&mut s, "ANALYZE nope"), "42P01");
    assert_eq!(code(&mut s, "vacuum (bogus) t"), "42601");
}

#[test]
fn add_primary_key_makes_a_table_keyed() {
    let mem = MemStorage::new(10);
    let db = open(&mem);
    let mut s = db.session();
    s.execute("CREATE TABLE a (id int NOT NULL, v char(8), n bigint DEFAULT 7)")
        .expect("create");
    s.execute("CREATE TABLE full_t (id int NOT NULL)")
        .expect("create");
    s.execute("INSERT INTO full_t VALUES (1)").expect("insert");
    assert_eq!(
        s.execute("ALTER TABLE a ADD PRIMARY KEY (id)")
            .expect("alter")[0]
            .tag,
        "ALTER TABLE"
    );
    s.execute("INSERT INTO a (id, v) VALUES (2, 'x'), (1, 'y')")
        .expect("insert");
    // Keyed now: a duplicate is refused, rows come in key order, defaults are kept.
    assert_eq!(code(&mut s, "INSERT INTO a (id) VALUES (1)"), "23505");
    assert_eq!(ids(&mut s, "a"), ["1", "2"]);
    let n = s
        .execute("SELECT n FROM a WHERE id = 1")
        .expect("select")
        .remove(0);
    assert_eq!(n.rows[0][0].to_pg_text(None).as_deref(), Some("7"));
    assert_eq!(code(&mut s, "ALTER TABLE a ADD PRIMARY KEY (v)"), "42P16");
    // A table with rows is rebuilt with them (tests/add_primary_key.rs has the rest).
    s.execute("ALTER TABLE full_t ADD PRIMARY KEY (id)")
        .expect("alter a table with rows");
    assert_eq!(ids(&mut s, "full_t"), ["1"]);
    assert_eq!(code(&mut s, "INSERT INTO full_t VALUES (1)"), "23505");
    assert_eq!(
        code(&mut s, "ALTER TABLE nope ADD PRIMARY KEY (id)"),
        "42P01"
    );
    assert_eq!(code(&mut s, "ALTER TABLE full_t ADD COLUMN x int"), "0A000");
    drop(s);
    let rebooted = mem.reboot(CrashMode::DropAll, 12).expect("reboot");
    drop(db);
    let db = open(&rebooted);
    let mut s = db.session();
    assert_eq!(ids(&mut s, "a"), ["1", "2"]);
    assert_eq!(code(&mut s, "INSERT INTO a (id) VALUES (2)"), "23505");
}
