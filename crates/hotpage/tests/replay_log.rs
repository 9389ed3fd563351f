//! `Options::replay_log`: off, a read-only open leaves the log alone and shows the tables as
//! the data files hold them (what `hotpage check` falls back to when recovery meets
//! damage); on a database that is not read-only it is refused.

use hotpage::{CrashMode, Database, Error, KeyKind, MemStorage, Options, Storage};
use std::path::Path;
use std::sync::Arc;

fn open(storage: &Arc<MemStorage>, options: Options) -> Result<Database, Error> {
    Database::open_with_storage(
        Arc::clone(storage) as Arc<dyn Storage>,
        Path::new("db"),
        options,
    )
}

fn rows(db: &Database) -> usize {
    let table = db.table("t").expect("table t");
    let mut count = 0;
    db.session()
        .scan(&table, None, |_, _| {
            count += 1;
            true
        })
        .expect("scan");
    count
}

#[test]
fn without_replay_a_read_only_open_shows_the_pages_as_they_are_on_disk() {
    let storage = MemStorage::new(7);
    let db = open(&storage, Options::default()).expect("create");
    let table = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("table");
    db.checkpoint()
        .expect("checkpoint: the table is on the pages");
    let mut session = db.session();
    for _ in 0..100 {
        session.insert(&table, b"row").expect("durable insert");
    }
    drop(session);
    drop(table);
    // A crash: the 100 commits are durable in the log only (no checkpoint wrote them).
    let storage = storage.reboot(CrashMode::DropAll, 1).expect("reboot");
    drop(db);

    let refused = open(
        &storage,
        Options {
            replay_log: false,
            ..Options::default()
        },
    );
    assert!(
        matches!(refused, Err(Error::InvalidOption(_))),
        "{refused:?}"
    );

    let read_only = |replay_log| Options {
        read_only: true,
        replay_log,
        ..Options::default()
    };
    let skipped = open(&storage, read_only(false)).expect("open without replay");
    assert!(rows(&skipped) < 100, "the log was replayed");
    drop(skipped);
    let replayed = open(&storage, read_only(true)).expect("open with replay");
    assert_eq!(rows(&replayed), 100);
}
