//! Supplied keys, dropped tables, schemas and metadata through the public API: a duplicate
//! key is refused before anything is logged (so a transaction is never half applied, even
//! after a crash), many sessions racing for one key let exactly one in, and what the
//! catalog's format 6 added survives a reopen and a crash.

use hotpage::{
    CrashMode, Database, Error, Key, KeyKind, Layout, MemStorage, Options, Storage, TableSpec,
};
use std::path::Path;
use std::sync::{Arc, Barrier};

const IDENTITY: KeyKind = KeyKind::Identity { start: 1, step: 1 };

fn open(mem: &Arc<MemStorage>) -> Database {
    let options = Options {
        page_size: 4096,
        pool_bytes: 256 * 4096,
        ..Options::default()
    };
    Database::open_with_storage(Arc::clone(mem) as Arc<dyn Storage>, Path::new("m"), options)
        .expect("open")
}

/// A crash: what was not synced is lost (torn), and the database is never closed or
/// dropped (dropping it would checkpoint), so the reopen recovers from the log.
fn crash(mem: &mut Arc<MemStorage>, db: Database) {
    *mem = mem.reboot(CrashMode::Torn, 17).expect("reboot");
    std::mem::forget(db);
}

fn keyed_spec<'a>(name: &'a str, layout: Layout, schema: &'a [u8]) -> TableSpec<'a> {
    TableSpec {
        name,
        design: "identity",
        kind: IDENTITY,
        layout,
        user_keys: true,
        schema,
        unlogged: false,
    }
}

fn all_rows(db: &Database, name: &str) -> Vec<(i64, Vec<u8>)> {
    let table = db.table(name).expect("table");
    let session = db.session();
    let mut rows = Vec::new();
    session
        .scan(&table, None, |key, row| {
            let key = Key::from_bytes(key)
                .expect("key")
                .to_i64()
                .expect("i64 key");
            rows.push((key, row.to_vec()));
            true
        })
        .expect("scan");
    rows
}

#[test]
fn a_duplicate_supplied_key_is_refused_and_its_transaction_stays_whole_after_a_crash() {
    let mut mem = MemStorage::new(5);
    {
        let db = open(&mem);
        let t = db
            .create_table_spec(&keyed_spec("t", Layout::Clustered, b"cols"))
            .expect("create");
        let mut s = db.session();
        s.insert_keyed(&t, &Key::from_i64(10), b"ten").expect("10");
        assert!(matches!(
            s.insert_keyed(&t, &Key::from_i64(10), b"again"),
            Err(Error::DuplicateKey { .. })
        ));
        // In a transaction: the duplicate is refused at its insert, the others commit.
        s.begin().expect("begin");
        s.insert_keyed(&t, &Key::from_i64(20), b"twenty")
            .expect("20");
        assert!(matches!(
            s.insert_keyed(&t, &Key::from_i64(20), b"dup in txn"),
            Err(Error::DuplicateKey { .. })
        ));
        assert!(matches!(
            s.insert_keyed(&t, &Key::from_i64(10), b"dup of committed"),
            Err(Error::DuplicateKey { .. })
        ));
        s.insert_keyed(&t, &Key::from_i64(30), b"thirty")
            .expect("30");
        s.commit().expect("commit");
        // A generated key that a supplied one already took is a duplicate too, refused
        // before it is logged; the generator moves on.
        s.insert_keyed(&t, &Key::from_i64(1), b"one").expect("1");
        assert!(matches!(
            s.insert(&t, b"gen"),
            Err(Error::DuplicateKey { .. })
        ));
        assert_eq!(s.insert(&t, b"gen").expect("2").to_i64(), Some(2));
        // A table whose keys are generated refuses supplied ones.
        let plain = db
            .create_table("plain", "identity", IDENTITY)
            .expect("plain");
        assert!(matches!(
            s.insert_keyed(&plain, &Key::from_i64(5), b"x"),
            Err(Error::InvalidOption(_))
        ));
        drop(s);
        crash(&mut mem, db);
    }
    let db = open(&mem);
    let keys: Vec<i64> = all_rows(&db, "t").into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, vec![1, 2, 10, 20, 30]);
    let report = db.check().expect("check");
    assert!(report.faults.is_empty(), "{:?}", report.faults);
}

#[test]
fn many_sessions_racing_for_the_same_keys_let_exactly_one_in_each() {
    let mem = MemStorage::new(6);
    let db = Arc::new(open(&mem));
    for layout in [
        Layout::Clustered,
        Layout::HashPartitioned { partitions: 4 },
        Layout::HeapIndexed { chains: 1 },
        Layout::Memory,
    ] {
        let name = format!("{layout:?}");
        let t = db
            .create_table_spec(&keyed_spec(&name, layout, b""))
            .expect("create");
        let sessions = 8;
        let barrier = Arc::new(Barrier::new(sessions));
        let wins: Vec<usize> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..sessions)
                .map(|i| {
                    let (db, t, barrier) = (Arc::clone(&db), Arc::clone(&t), Arc::clone(&barrier));
                    scope.spawn(move || {
                        let mut s = db.session();
                        barrier.wait();
                        let mut wins = 0;
                        for key in 0..200i64 {
                            // Half in small transactions, so that locks are held a while.
                            let in_txn = i % 2 == 0 && key % 5 == 0;
                            if in_txn {
                                s.begin().expect("begin");
                            }
                            match s.insert_keyed(&t, &Key::from_i64(key), &[i as u8]) {
                                Ok(()) => wins += 1,
                                Err(Error::DuplicateKey { .. } | Error::KeyLockTimeout { .. }) => {}
                                Err(other) => panic!("unexpected error: {other}"),
                            }
                            if in_txn {
                                s.commit().expect("commit");
                            }
                        }
                        wins
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("session"))
                .collect()
        });
        assert_eq!(wins.iter().sum::<usize>(), 200, "{name}: {wins:?}");
        let keys: Vec<i64> = all_rows(&db, &name).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, (0..200).collect::<Vec<_>>(), "{name}");
    }
    assert!(db.check().expect("check").faults.is_empty());
}

#[test]
fn dropped_tables_schemas_and_metadata_survive_a_reopen_and_a_crash() {
    let mut mem = MemStorage::new(7);
    {
        let db = open(&mem);
        let t = db
            .create_table_spec(&keyed_spec("t", Layout::Clustered, b"schema one"))
            .expect("create");
        let mut s = db.session();
        for key in 0..500 {
            s.insert_keyed(&t, &Key::from_i64(key), &[0u8; 40])
                .expect("insert");
        }
        db.set_metadata(b"sequences v1").expect("metadata");
        db.drop_table("t").expect("drop");
        assert!(matches!(db.table("t"), Err(Error::NoSuchTable(_))));
        assert!(matches!(db.drop_table("t"), Err(Error::NoSuchTable(_))));
        // The name is free again; the old handle still reads its rows.
        db.create_table_spec(&keyed_spec("t", Layout::Clustered, b"schema two"))
            .expect("re-create");
        let mut count = 0;
        s.scan(&t, None, |_, _| {
            count += 1;
            true
        })
        .expect("old handle");
        assert_eq!(count, 500);
        assert!(matches!(
            db.create_table("t", "identity", IDENTITY),
            Err(Error::TableExists(_))
        ));
        drop(s);
        crash(&mut mem, db);
    }
    let db = open(&mem);
    let tables = db.tables();
    assert_eq!(tables.len(), 1, "only the live table is listed");
    assert_eq!(tables[0].schema, b"schema two");
    assert!(tables[0].user_keys && !tables[0].dropped);
    assert_eq!(db.table("t").expect("t").schema(), b"schema two");
    assert!(all_rows(&db, "t").is_empty());
    assert_eq!(db.metadata(), b"sequences v1");
    // check walks the dropped table too: its pages are neither orphans nor leaks.
    let report = db.check().expect("check");
    assert!(report.faults.is_empty(), "{:?}", report.faults);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert!(report.tables.iter().any(|t| t.name == "t (dropped)"));
    // Limits are clear errors.
    let big = vec![0u8; hotpage::limits::SCHEMA_BYTES_MAX + 1];
    assert!(matches!(
        db.set_metadata(&big),
        Err(Error::InvalidOption(_))
    ));
    assert!(matches!(
        db.create_table_spec(&keyed_spec("big", Layout::Clustered, &big)),
        Err(Error::InvalidOption(_))
    ));
    assert!(matches!(
        db.create_table_spec(&keyed_spec("heap", Layout::Heap { chains: 1 }, b"")),
        Err(Error::InvalidOption(_))
    ));
}
