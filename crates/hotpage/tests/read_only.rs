//! A read-only open (issue 9, item 2) runs crash recovery in memory only: it shows the
//! recovered data, refuses every change, and leaves every file exactly as it found it, so
//! that a later writable open still recovers.

use hotpage::testing::CREATING_FILE;
use hotpage::testing::WalOptions;
use hotpage::testing::{CrashMode, MemStorage, Storage};
use hotpage::{Database, Error, Key, KeyKind, Layout, Options};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn options(read_only: bool) -> Options {
    Options {
        page_size: 4096,
        // A small pool: recovery evicts redone pages, which go to the overlay.
        pool_bytes: 32 * 4096,
        read_only,
        wal: WalOptions {
            segment_bytes: 1 << 20,
            buffer_bytes: 1 << 20,
            async_flush_interval: Duration::from_millis(1),
        },
        checkpoint_log_bytes: u64::MAX,
        checkpoint_interval: Duration::from_secs(3600),
        ..Options::default()
    }
}

fn open(storage: &Arc<MemStorage>, read_only: bool) -> hotpage::Result<Database> {
    Database::open_with_storage(
        Arc::clone(storage) as Arc<dyn Storage>,
        Path::new("ro"),
        options(read_only),
    )
}

fn snapshot(storage: &MemStorage) -> BTreeMap<String, Vec<u8>> {
    storage
        .list()
        .expect("list")
        .into_iter()
        .map(|name| {
            let bytes = storage.read_file(&name).expect("read");
            (name, bytes)
        })
        .collect()
}

/// A crashed database: two tables (a tree and a heap), rows since the last checkpoint,
/// and a transaction left open.
fn crashed() -> (Arc<MemStorage>, Vec<Key>) {
    let storage = MemStorage::new(41);
    let db = open(&storage, false).expect("create");
    let tree = db
        .create_table("tree", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("tree");
    let heap = db
        .create_table_with_layout(
            "heap",
            "heap",
            KeyKind::Identity { start: 1, step: 1 },
            Layout::Heap { chains: 1 },
        )
        .expect("heap");
    let mut session = db.session();
    let mut keys = Vec::new();
    for i in 0..3000u32 {
        keys.push(session.insert(&tree, &i.to_le_bytes()).expect("insert"));
        session.insert(&heap, &[9u8; 50]).expect("insert");
    }
    session.begin().expect("begin");
    session.insert(&tree, b"never committed").expect("insert");
    let rebooted = storage.reboot(CrashMode::Torn, 42).expect("reboot");
    drop((session, tree, heap, db));
    (rebooted, keys)
}

#[test]
fn a_read_only_open_recovers_in_memory_and_changes_no_byte() {
    let (storage, keys) = crashed();
    let before = snapshot(&storage);
    let ops = storage.change_ops();
    {
        let db = open(&storage, true).expect("read-only open");
        assert!(db.is_read_only());
        assert!(db.recovery_report().records > 0, "recovery ran");
        let tree = db.table("tree").expect("tree");
        let reader = db.session();
        for key in &keys {
            assert!(reader.get(&tree, key).expect("get").is_some(), "{key:?}");
        }
        drop(reader);
        assert_eq!(db.verify_table(&tree).expect("verify").rows, 3000);
        let heap = db.table("heap").expect("heap");
        assert_eq!(db.verify_table(&heap).expect("verify").rows, 3000);
        db.log_summary().expect("the log can be read");
        // Every page reads back as recovered through the files (the integrity check
        // reads pages from the files).
        for page in db.table_pages(&tree).expect("pages") {
            db.page_image(page.page_id).expect("a whole page");
        }
        // Every change is refused.
        let mut session = db.session();
        assert!(matches!(
            session.insert(&tree, b"x"),
            Err(Error::ReadOnly(_))
        ));
        assert!(matches!(
            db.create_table("new", "guid", KeyKind::GuidV4),
            Err(Error::ReadOnly(_))
        ));
        assert!(matches!(db.checkpoint(), Err(Error::ReadOnly(_))));
        drop((session, tree, heap));
        db.close().expect("close");
    }
    assert_eq!(snapshot(&storage), before, "a file changed");
    assert_eq!(
        storage.change_ops(),
        ops,
        "an operation changed the storage"
    );
    // The recovery is still there for a writable open to do, and it finds the same rows.
    let db = open(&storage, false).expect("writable open");
    assert!(db.recovery_report().records > 0, "a writable open recovers");
    let tree = db.table("tree").expect("tree");
    assert_eq!(db.verify_table(&tree).expect("verify").rows, 3000);
}

#[test]
fn a_read_only_open_never_creates_anything() {
    let storage = MemStorage::new(43);
    assert!(matches!(
        open(&storage, true),
        Err(Error::NotADatabase { .. })
    ));
    assert!(storage.list().expect("list").is_empty());
    // An interrupted creation is left as it is.
    storage.open(CREATING_FILE, true).expect("marker");
    storage.open("data.0", true).expect("empty data file");
    let before = snapshot(&storage);
    match open(&storage, true) {
        Err(Error::NotADatabase { reason, .. }) => {
            assert!(reason.contains("interrupted"), "{reason}")
        }
        other => panic!("expected NotADatabase, got {other:?}"),
    }
    assert_eq!(snapshot(&storage), before);
    assert!(
        storage.read_file("data.0").expect("read").is_empty(),
        "no header was written"
    );
}

#[test]
fn a_read_only_open_works_on_a_read_only_directory() {
    // Files opened without write access, every change refused by the storage itself:
    // what a read-only mount does.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    {
        let db = Database::open(&path, options(false)).expect("create");
        let t = db
            .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
            .expect("table");
        let mut s = db.session();
        for i in 0..500u32 {
            s.insert(&t, &i.to_le_bytes()).expect("insert");
        }
        drop((s, t));
        db.close().expect("close");
    }
    let storage = hotpage::testing::StdStorage::open_dir_read_only(&path).expect("read-only dir");
    let db = Database::open_with_storage(Arc::new(storage), &path, options(true))
        .expect("opens through a storage that refuses every write");
    let t = db.table("t").expect("table");
    assert_eq!(db.verify_table(&t).expect("verify").rows, 500);
}
