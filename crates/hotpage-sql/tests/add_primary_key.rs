//! `ALTER TABLE … ADD PRIMARY KEY` on a table that holds rows (plain `pgbench -i` adds its
//! keys after loading): the rows move into a keyed table, a duplicate or a NULL key is
//! refused with PostgreSQL's SQLSTATE and leaves the table as it was, and the key is the
//! table's from then on (a duplicate insert is refused; the engine's table takes supplied
//! keys and is no longer a heap). Reopening keeps it all.

use hotpage::{Database, Layout, MemStorage, Options, Storage};
use hotpage_sql::{SqlDatabase, SqlSession, Value};
use std::path::Path;
use std::sync::Arc;

fn open(storage: &Arc<MemStorage>) -> Arc<SqlDatabase> {
    let storage: Arc<dyn Storage> = Arc::clone(storage) as Arc<dyn Storage>;
    let engine =
        Database::open_with_storage(storage, Path::new("m"), Options::default()).expect("open");
    SqlDatabase::new(Arc::new(engine)).expect("sql")
}

fn rows(s: &mut SqlSession, sql: &str) -> Vec<Vec<Value>> {
    s.execute(sql).expect(sql).pop().expect("a result").rows
}

fn text_rows(s: &mut SqlSession, sql: &str) -> Vec<String> {
    rows(s, sql)
        .into_iter()
        .map(|row| {
            row.iter()
                .map(|v| v.to_pg_text(None).unwrap_or_else(|| "NULL".into()))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

fn is_heap(db: &SqlDatabase, table: &str) -> bool {
    let handle = db.engine().table(table).expect("table");
    matches!(handle.layout(), Layout::Heap { .. }) && !handle.takes_supplied_keys()
}

fn load(s: &mut SqlSession) {
    s.execute(
        "CREATE TABLE acc (aid int NOT NULL, bid int, filler char(10), note text DEFAULT 'x');\
         INSERT INTO acc (aid, bid, filler) VALUES (3, 30, 'c'), (1, 10, 'a'), (2, NULL, 'b');\
         INSERT INTO acc (aid, bid, filler, note) VALUES (5, 50, 'e', NULL)",
    )
    .expect("load");
}

const ALL: &str = "SELECT aid, bid, filler, note FROM acc ORDER BY aid";

#[test]
fn the_rows_are_kept_under_the_new_key_and_the_key_holds_afterwards() {
    let storage = MemStorage::new(1);
    let db = open(&storage);
    let mut s = db.session();
    load(&mut s);
    let before = text_rows(&mut s, ALL);
    assert_eq!(before.len(), 4);
    assert!(is_heap(&db, "acc"));
    s.execute("ALTER TABLE acc ADD PRIMARY KEY (aid)")
        .expect("alter");
    assert_eq!(text_rows(&mut s, ALL), before);
    assert!(!is_heap(&db, "acc"), "the table is keyed now");
    // Without ORDER BY, a keyed table scans in key order.
    assert_eq!(
        text_rows(&mut s, "SELECT aid FROM acc"),
        vec!["1", "2", "3", "5"]
    );
    assert_eq!(
        text_rows(&mut s, "SELECT bid FROM acc WHERE aid = 3"),
        vec!["30"]
    );
    let dup = s
        .execute("INSERT INTO acc (aid, bid) VALUES (2, 0)")
        .expect_err("the key is enforced");
    assert_eq!(dup.sqlstate, "23505", "{dup:?}");
    s.execute("INSERT INTO acc (aid, bid) VALUES (4, 40)")
        .expect("a new key");
    let second = s
        .execute("ALTER TABLE acc ADD PRIMARY KEY (bid)")
        .expect_err("one key only");
    assert_eq!(second.sqlstate, "42P16", "{second:?}");
    drop(s);
    let engine = Arc::clone(db.engine());
    drop(db);
    Arc::into_inner(engine)
        .expect("last handle")
        .close()
        .expect("close");
    let db = open(&storage);
    let mut s = db.session();
    assert_eq!(
        text_rows(&mut s, "SELECT aid, bid FROM acc"),
        vec!["1|10", "2|NULL", "3|30", "4|40", "5|50"]
    );
    assert!(!is_heap(&db, "acc"));
}

#[test]
fn a_duplicate_key_is_23505_and_changes_nothing() {
    let db = open(&MemStorage::new(2));
    let mut s = db.session();
    load(&mut s);
    s.execute("INSERT INTO acc (aid, bid) VALUES (3, 31)")
        .expect("a second aid 3");
    let before = text_rows(&mut s, ALL);
    let error = s
        .execute("ALTER TABLE acc ADD PRIMARY KEY (aid)")
        .expect_err("duplicates");
    assert_eq!(error.sqlstate, "23505", "{error:?}");
    assert_eq!(error.message, "could not create unique index \"acc_pkey\"");
    assert_eq!(
        error.detail.as_deref(),
        Some("Key (aid)=(3) is duplicated.")
    );
    assert_eq!(text_rows(&mut s, ALL), before);
    assert!(is_heap(&db, "acc"), "still the old heap");
    // Still no key: another duplicate goes in, and the table is usable.
    s.execute("INSERT INTO acc (aid, bid) VALUES (3, 32)")
        .expect("no key yet");
    // Of a composite key, the NULL is found (the later aid 3 rows have no filler).
    let null = s
        .execute("ALTER TABLE acc ADD CONSTRAINT acc_k PRIMARY KEY (aid, filler)")
        .expect_err("filler is NULL in the later rows");
    assert_eq!(null.sqlstate, "23502", "{null:?}");
    assert!(is_heap(&db, "acc"));
}

#[test]
fn a_null_in_a_key_column_is_23502_and_changes_nothing() {
    let db = open(&MemStorage::new(3));
    let mut s = db.session();
    load(&mut s);
    let before = text_rows(&mut s, ALL);
    let error = s
        .execute("ALTER TABLE acc ADD PRIMARY KEY (bid)")
        .expect_err("bid is NULL in one row");
    assert_eq!(error.sqlstate, "23502", "{error:?}");
    assert_eq!(
        error.message,
        "column \"bid\" of relation \"acc\" contains null values"
    );
    assert_eq!(text_rows(&mut s, ALL), before);
    assert!(is_heap(&db, "acc"));
}

#[test]
fn a_composite_text_key_and_an_empty_table_are_rebuilt() {
    let db = open(&MemStorage::new(4));
    let mut s = db.session();
    s.execute(
        "CREATE TABLE kv (a text NOT NULL, b int NOT NULL, v numeric(10,2));\
         INSERT INTO kv VALUES ('b', 1, 1.5), ('a', 2, 2.25), ('a', 1, NULL);\
         CREATE TABLE empty (id bigint NOT NULL, v text)",
    )
    .expect("setup");
    s.execute("ALTER TABLE kv ADD CONSTRAINT kv_key PRIMARY KEY (a, b)")
        .expect("alter kv");
    assert_eq!(
        text_rows(&mut s, "SELECT a, b, v FROM kv"),
        vec!["a|1|NULL", "a|2|2.25", "b|1|1.50"]
    );
    s.execute("ALTER TABLE empty ADD PRIMARY KEY (id)")
        .expect("alter empty");
    assert!(!is_heap(&db, "empty"));
    s.execute("INSERT INTO empty VALUES (7, 'seven')")
        .expect("insert");
    let error = s
        .execute("INSERT INTO empty VALUES (7, 'again')")
        .expect_err("keyed");
    assert_eq!(error.sqlstate, "23505");
    let in_block = s
        .execute("BEGIN; ALTER TABLE kv ADD PRIMARY KEY (b)")
        .expect_err("not in a transaction block");
    assert_eq!(in_block.sqlstate, "25001", "{in_block:?}");
}
