//! `Database::truncate_table` (SQL's TRUNCATE) is atomic: power lost after any storage
//! operation of a truncate leaves the table whole (its old rows) or empty, never missing
//! and never half-emptied; and the keys go on from where they were either way.

use hotpage::testing::{CrashMode, MemStorage, Storage};
use hotpage::{Database, Key, KeyKind, Layout, Options, TableSpec};
use std::path::Path;
use std::sync::Arc;

const ROWS: i64 = 40;

fn open(mem: &Arc<MemStorage>, create: bool) -> hotpage::Result<Database> {
    let options = Options {
        page_size: 4096,
        pool_bytes: 64 * 4096,
        create_if_missing: create,
        ..Options::default()
    };
    Database::open_with_storage(Arc::clone(mem) as Arc<dyn Storage>, Path::new("m"), options)
}

/// A database with table t (identity keys, a schema) holding ROWS committed rows.
fn setup(seed: u64) -> (Arc<MemStorage>, Database) {
    let mem = MemStorage::new(seed);
    let db = open(&mem, true).expect("create");
    let t = db
        .create_table_spec(&TableSpec {
            name: "t",
            design: "identity",
            kind: KeyKind::Identity { start: 1, step: 1 },
            layout: Layout::Clustered,
            user_keys: false,
            schema: b"columns",
            unlogged: false,
        })
        .expect("create t");
    let mut s = db.session();
    for i in 0..ROWS {
        s.insert(&t, format!("row {i}").as_bytes()).expect("insert");
    }
    (mem, db)
}

fn keys(db: &Database) -> Vec<i64> {
    let t = db.table("t").expect("t exists");
    let mut keys = Vec::new();
    db.session()
        .scan(&t, None, |k, _| {
            keys.push(Key::from_bytes(k).expect("key").to_i64().expect("i64"));
            true
        })
        .expect("scan");
    keys
}

#[test]
fn truncate_empties_the_table_and_keys_go_on() {
    let (_mem, db) = setup(1);
    let old = db.table("t").expect("t");
    let new = db.truncate_table("t").expect("truncate");
    assert!(keys(&db).is_empty());
    assert_eq!(new.schema(), b"columns");
    assert_eq!(new.design(), "identity");
    // The old handle is a dropped table's.
    assert!(old.is_dropped());
    assert!(matches!(
        db.session().insert(&old, b"late"),
        Err(hotpage::Error::NoSuchTable(_))
    ));
    let key = db.session().insert(&new, b"after").expect("insert");
    assert_eq!(key.to_i64(), Some(ROWS + 1));
    assert!(matches!(
        db.truncate_table("nope"),
        Err(hotpage::Error::NoSuchTable(_))
    ));
}

#[test]
fn power_lost_during_a_truncate_leaves_the_table_whole_or_empty() {
    let total_ops = {
        let (mem, db) = setup(2);
        let before = mem.change_ops();
        db.truncate_table("t").expect("truncate");
        mem.change_ops() - before
    };
    assert!(total_ops > 2, "{total_ops} operations");
    let (mut whole, mut empty) = (0, 0);
    for halt_after in 0..=total_ops {
        let mode =
            [CrashMode::DropAll, CrashMode::Torn, CrashMode::Reorder][halt_after as usize % 3];
        let (mem, db) = setup(halt_after + 10);
        mem.halt_after_ops(Some(halt_after));
        let _ = db.truncate_table("t");
        let rebooted = mem.reboot(mode, halt_after).expect("reboot");
        std::mem::forget(db);
        let db = open(&rebooted, false).unwrap_or_else(|e| panic!("after {halt_after}: {e}"));
        let found = keys(&db);
        if found.is_empty() {
            empty += 1;
        } else {
            assert_eq!(found, (1..=ROWS).collect::<Vec<_>>(), "after {halt_after}");
            whole += 1;
        }
        let t = db.table("t").expect("t");
        db.verify_table(&t)
            .unwrap_or_else(|e| panic!("after {halt_after}: {e}"));
        // Either way no key is handed out twice.
        let key = db.session().insert(&t, b"next").expect("insert");
        assert!(key.to_i64() > Some(ROWS), "after {halt_after}: {key:?}");
    }
    assert!(whole > 0 && empty > 0, "whole {whole}, empty {empty}");
}

#[test]
fn a_truncating_commit_that_fails_leaves_no_second_table_of_a_name() {
    let (mem, db) = setup(3);
    let u = db
        .create_table("u", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("create u");
    let t = db.table("t").expect("t");
    let mut s = db.session();
    s.begin().expect("begin");
    s.truncate_at_commit(&t).expect("truncate t");
    s.truncate_at_commit(&u).expect("truncate u");
    // u is gone before the commit: the commit fails after t's empty twin was made.
    db.drop_table("u").expect("drop u");
    assert!(matches!(s.commit(), Err(hotpage::Error::NoSuchTable(_))));
    drop((s, t, u));
    db.checkpoint().expect("checkpoint");
    assert_eq!(keys(&db).len() as i64, ROWS, "t keeps its rows");
    db.close().expect("close");
    let db = open(&mem, false).expect("reopen");
    let names: Vec<String> = db.tables().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["t"], "one live table t, and u dropped");
    assert_eq!(keys(&db).len() as i64, ROWS);
}
