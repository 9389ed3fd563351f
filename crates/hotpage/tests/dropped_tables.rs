//! Dropped tables through the public API: a name used three times, a crash, recovery.

use hotpage::{CrashMode, Database, Key, KeyKind, Layout, MemStorage, Options, Storage, TableSpec};
use std::path::Path;
use std::sync::Arc;

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

fn spec(name: &str) -> TableSpec<'_> {
    TableSpec {
        name,
        design: "identity",
        kind: IDENTITY,
        layout: Layout::Clustered,
        user_keys: true,
        schema: b"",
        unlogged: false,
    }
}

/// Log records naming dropped tables and the tables created again under their name,
/// replayed after a crash: each row goes back to its own table; handles and transactions
/// that outlive a drop are refused.
#[test]
fn tables_dropped_and_created_again_under_one_name_replay_after_a_crash() {
    let mut mem = MemStorage::new(13);
    {
        let db = open(&mem);
        let old = db.create_table_spec(&spec("t")).expect("create");
        let mut s = db.session();
        s.insert_keyed(&old, &Key::from_i64(1), b"before")
            .expect("1");
        db.drop_table("t").expect("drop");
        let new = db.create_table_spec(&spec("t")).expect("re-create");
        // A handle taken before the drop refuses inserts: they would land in no table.
        assert!(matches!(
            s.insert_keyed(&old, &Key::from_i64(2), b"old after drop"),
            Err(hotpage::Error::NoSuchTable(_))
        ));
        s.insert_keyed(&new, &Key::from_i64(2), b"new")
            .expect("new 2");
        s.begin().expect("begin");
        s.insert_keyed(&new, &Key::from_i64(3), b"new txn")
            .expect("3");
        s.commit().expect("commit");
        // A transaction whose rows went in before their table was dropped fails whole at
        // commit, with nothing of it logged.
        s.begin().expect("begin");
        s.insert_keyed(&new, &Key::from_i64(4), b"doomed")
            .expect("4");
        db.drop_table("t").expect("drop the successor");
        assert!(matches!(s.commit(), Err(hotpage::Error::NoSuchTable(_))));
        let third = db.create_table_spec(&spec("t")).expect("third");
        s.insert_keyed(&third, &Key::from_i64(5), b"third")
            .expect("5");
        drop(s);
        mem = mem.reboot(CrashMode::DropAll, 98).expect("reboot");
        std::mem::forget(db);
    }
    let db = open(&mem);
    let t = db.table("t").expect("t");
    let s = db.session();
    let mut rows = Vec::new();
    s.scan(&t, None, |k, r| {
        rows.push((Key::from_bytes(k).unwrap().to_i64().unwrap(), r.to_vec()));
        true
    })
    .expect("scan");
    assert_eq!(
        rows,
        vec![(5, b"third".to_vec())],
        "the live table holds only its own rows"
    );
    let report = db.check().expect("check");
    assert!(report.faults.is_empty(), "{:?}", report.faults);
}
