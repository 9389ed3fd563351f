//! Creating a database is atomic (issue 9, item 3): power lost after any storage operation
//! of a creation leaves either no database (a directory that the next creating open
//! completes, and that a plain open calls "not a database") or a whole one. Before, a
//! kill in the first moments left `LOCK` and an empty `data.0` that no command opened.

use hotpage::testing::CREATING_FILE;
use hotpage::testing::{CrashMode, MemStorage, Storage};
use hotpage::{Database, Error, KeyKind, Layout, Options};
use std::path::Path;
use std::sync::Arc;

fn options(create: bool) -> Options {
    Options {
        page_size: 4096,
        pool_bytes: 32 * 4096,
        data_files: 2,
        create_if_missing: create,
        ..Options::default()
    }
}

fn open(storage: &Arc<MemStorage>, create: bool) -> hotpage::Result<Database> {
    Database::open_with_storage(
        Arc::clone(storage) as Arc<dyn Storage>,
        Path::new("new"),
        options(create),
    )
}

/// The creation and a first table with a row, each step allowed to fail (the machine may
/// be halted under it).
fn create(storage: &Arc<MemStorage>) -> hotpage::Result<()> {
    let db = open(storage, true)?;
    let t = db.create_table_with_layout(
        "t",
        "heap",
        KeyKind::Identity { start: 1, step: 1 },
        Layout::Heap { chains: 2 },
    )?;
    db.session().insert(&t, b"first")?;
    drop(t);
    db.close()
}

#[test]
fn power_lost_after_any_operation_of_a_creation_leaves_no_database_or_a_whole_one() {
    let total_ops = {
        let storage = MemStorage::new(0);
        create(&storage).expect("an uninterrupted creation");
        storage.change_ops()
    };
    assert!(total_ops > 10, "{total_ops} operations");
    let (mut none, mut whole) = (0, 0);
    for halt_after in 0..=total_ops {
        let mode =
            [CrashMode::DropAll, CrashMode::Torn, CrashMode::Reorder][halt_after as usize % 3];
        let storage = MemStorage::new(halt_after);
        storage.halt_after_ops(Some(halt_after));
        let _ = create(&storage);
        let rebooted = storage.reboot(mode, halt_after).expect("reboot");
        match open(&rebooted, false) {
            Err(Error::NotADatabase { .. }) => {
                none += 1;
                // Not a wedged directory: a creating open completes it.
                create(&rebooted).unwrap_or_else(|e| panic!("after {halt_after}: {e}"));
                let names = rebooted.list().expect("list");
                assert!(!names.iter().any(|n| n == CREATING_FILE), "{names:?}");
            }
            Ok(db) => {
                whole += 1;
                // A whole database: its data files are all there, its tables verify.
                assert_eq!(db.data_files(), 2, "after {halt_after}");
                for info in db.tables() {
                    let table = db.table(&info.name).expect("table");
                    db.verify_table(&table)
                        .unwrap_or_else(|e| panic!("after {halt_after}: {e}"));
                }
                drop(db);
                let names = rebooted.list().expect("list");
                assert!(!names.iter().any(|n| n == CREATING_FILE), "{names:?}");
            }
            Err(other) => panic!("power lost after operation {halt_after}: {other}"),
        }
    }
    assert!(
        none > 0 && whole > 0,
        "{none} left no database, {whole} a whole one"
    );
}

#[test]
fn an_interrupted_creation_beside_foreign_files_is_refused_and_left_alone() {
    let storage = MemStorage::new(7);
    storage.open(CREATING_FILE, true).expect("marker");
    storage.open("data.0", true).expect("data");
    storage
        .open("notes.txt", true)
        .expect("someone else's file");
    match open(&storage, true) {
        Err(Error::NotADatabase { reason, .. }) => {
            assert!(reason.contains("notes.txt"), "{reason}")
        }
        other => panic!("expected NotADatabase, got {other:?}"),
    }
    assert_eq!(
        storage.list().expect("list"),
        vec![CREATING_FILE, "data.0", "notes.txt"]
    );
}
