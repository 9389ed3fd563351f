//! A `CREATE TABLE` whose creation checkpoint fails leaves no table (issue 9: the table
//! stayed in memory, unpublished, and the next successful checkpoint wrote it to the
//! catalog, so it came back, empty, after a reopen).
//!
//! Every write, then every fdatasync, of the creation checkpoint is made to fail in turn.
//! A failure while the checkpoint writes the data file is fail-stop (the kernel may have
//! dropped pages it now calls clean): later checkpoints and commits fail until a reopen.
//! A failure while it writes the catalog is not: the old catalog stands, and the database
//! goes on.

use hotpage::testing::{MemStorage, Storage};
use hotpage::{Database, Durability, Error, Key, KeyKind, Layout, Options};
use std::path::Path;
use std::sync::Arc;

const DOOMED: &str = "doomed";
const IDENTITY: KeyKind = KeyKind::Identity { start: 1, step: 1 };

fn open(mem: &Arc<MemStorage>) -> Database {
    let options = Options {
        page_size: 4096,
        pool_bytes: 64 * 4096,
        durability: Durability::Sync,
        ..Options::default()
    };
    Database::open_with_storage(Arc::clone(mem) as Arc<dyn Storage>, Path::new("m"), options)
        .expect("open")
}

#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The write after this many more succeed fails, and every later one.
    Write(u64),
    /// The fdatasync after this many more succeed fails, and every later one.
    Sync(u64),
}

/// The writes and fdatasyncs that creating a table with `layout` takes, after a first table
/// with a row.
fn creation_io(layout: Layout) -> (u64, u64) {
    let mem = MemStorage::new(1);
    let db = open(&mem);
    let kept = db
        .create_table("kept", "identity", IDENTITY)
        .expect("create");
    db.session().insert(&kept, b"kept row").expect("insert");
    let (writes, syncs) = (mem.write_count(), mem.sync_count());
    db.create_table_with_layout(DOOMED, "doomed", IDENTITY, layout)
        .expect("create");
    (mem.write_count() - writes, mem.sync_count() - syncs)
}

/// Creates `kept` (one row), then fails the creation of `DOOMED` with `fault`; then, unless
/// the database fail-stopped, checkpoints, creates `later` (one row) and closes. Reopens
/// and checks that `DOOMED` never came back. Returns true if the failure was fail-stop,
/// `None` if the fault came after the create's last write (see `fail_every_step`).
fn fail_a_create(layout: Layout, fault: Fault) -> Option<bool> {
    let mem = MemStorage::new(2);
    let db = open(&mem);
    let kept = db
        .create_table("kept", "identity", IDENTITY)
        .expect("create");
    let mut session = db.session();
    let kept_key = session.insert(&kept, b"kept row").expect("insert");
    match fault {
        Fault::Write(n) => mem.fail_writes_after(Some(n)),
        Fault::Sync(n) => mem.fail_sync_after(Some(n)),
    }
    let created = db.create_table_with_layout(DOOMED, "doomed", IDENTITY, layout);
    mem.fail_writes_after(None);
    mem.fail_sync_after(None);
    if created.is_ok() {
        return None;
    }
    assert!(matches!(db.table(DOOMED), Err(Error::NoSuchTable(_))));
    let fail_stopped = db.checkpoint().is_err();
    let mut later_key: Option<Key> = None;
    if fail_stopped {
        assert!(session.insert(&kept, b"after").is_err(), "{fault:?}");
        drop((session, kept, db));
    } else {
        let later = db
            .create_table("later", "identity", IDENTITY)
            .expect("create after the failure");
        later_key = Some(session.insert(&later, b"later row").expect("insert"));
        db.checkpoint().expect("checkpoint");
        drop((session, kept, later));
        db.close().expect("close");
    }

    let db = open(&mem);
    assert!(
        matches!(db.table(DOOMED), Err(Error::NoSuchTable(_))),
        "{fault:?}: the failed table came back"
    );
    let names: Vec<String> = db.tables().into_iter().map(|t| t.name).collect();
    let expected: &[&str] = if fail_stopped {
        &["kept"]
    } else {
        &["kept", "later"]
    };
    assert_eq!(names, expected, "{fault:?}");
    let session = db.session();
    let kept = db.table("kept").expect("kept");
    assert_eq!(
        session.get(&kept, &kept_key).expect("get"),
        Some(b"kept row".to_vec())
    );
    assert_eq!(db.verify_table(&kept).expect("verify").rows, 1);
    if let Some(key) = later_key {
        // `later` took the id the failed table had: its rows are found under it.
        let later = db.table("later").expect("later");
        assert_eq!(
            session.get(&later, &key).expect("get"),
            Some(b"later row".to_vec())
        );
        assert_eq!(db.verify_table(&later).expect("verify").rows, 1);
    }
    if layout == Layout::Memory {
        // The failed table had id 1: its checkpoint file is gone with it.
        assert!(!mem.exists("mem.1").expect("exists"), "{fault:?}");
    }
    // The name is free again.
    db.create_table_with_layout(DOOMED, "doomed", IDENTITY, layout)
        .expect("create again");
    Some(fail_stopped)
}

/// Fails each write, then each fdatasync, of a create in turn, and checks which failures
/// are fail-stop. The n-th write is found by counting, and the log flusher's background
/// writes can move the count by one between the run that counts and the run that fails
/// (under load the first version failed 7 runs in 40, and CI once, 2026-12-07). So a run
/// whose outcomes do not line up is made again, up to 5 times: a real fault (a catalog
/// failure that stops the database, a data file failure that does not, a failed create
/// that leaves a table) does not line up in any of them.
fn fail_every_step(layout: Layout) {
    let mut last = String::new();
    for _attempt in 0..5 {
        match every_step_once(layout) {
            Ok(()) => return,
            Err(why) => last = why,
        }
    }
    panic!("{last}");
}

fn every_step_once(layout: Layout) -> Result<(), String> {
    let (writes, syncs) = creation_io(layout);
    assert!(writes > 0 && syncs > 0, "{writes} writes, {syncs} syncs");
    let mut outcomes = Vec::new();
    for n in 0..writes {
        outcomes.push((Fault::Write(n), fail_a_create(layout, Fault::Write(n))));
    }
    for n in 0..syncs {
        outcomes.push((Fault::Sync(n), fail_a_create(layout, Fault::Sync(n))));
    }
    // The catalog is written last: its write and its fdatasync fail without fail-stop.
    // Every write and fdatasync before them (the data file's, the log's) is fail-stop.
    let catalog_write = writes as usize - 1;
    let catalog_sync = outcomes.len() - 1;
    for (i, (fault, fail_stopped)) in outcomes.iter().enumerate() {
        let catalog = i == catalog_write || i == catalog_sync;
        if *fail_stopped != Some(!catalog) {
            return Err(format!(
                "{fault:?} in {outcomes:?}: expected fail-stop {}",
                !catalog
            ));
        }
    }
    Ok(())
}

#[test]
fn a_failed_create_of_a_clustered_table_leaves_no_table() {
    fail_every_step(Layout::Clustered);
}

#[test]
fn a_failed_create_of_a_partitioned_table_leaves_no_table() {
    fail_every_step(Layout::HashPartitioned { partitions: 4 });
}

#[test]
fn a_failed_create_of_a_heap_table_leaves_no_table() {
    fail_every_step(Layout::HeapIndexed { chains: 1 });
}

#[test]
fn a_failed_create_of_a_memory_table_leaves_no_table() {
    fail_every_step(Layout::Memory);
}
