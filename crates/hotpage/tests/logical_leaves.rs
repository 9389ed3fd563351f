//! The log holds no leaf inserts of a table's B+trees, and splits as `tree-split` records:
//! recovery rebuilds the leaves from page images, split records and the commit records.
//! These tests crash after splits made since a checkpoint (so the split records, not page
//! images, carry them) and check that every acknowledged row comes back, in a tree that
//! verifies, in every layout whose rows live in B+trees.

use hotpage::{
    CrashMode, Database, Durability, Key, KeyKind, Layout, MemStorage, Options, Storage, TableSpec,
};
use std::path::Path;
use std::sync::Arc;

const IDENTITY: KeyKind = KeyKind::Identity { start: 1, step: 1 };

fn options() -> Options {
    Options {
        page_size: 4096,
        // Small enough that leaves are evicted (written with rows no record logged) while
        // the run goes on.
        pool_bytes: 48 * 4096,
        data_files: 2,
        durability: Durability::Sync,
        ..Options::default()
    }
}

fn open(mem: &Arc<MemStorage>) -> Database {
    Database::open_with_storage(
        Arc::clone(mem) as Arc<dyn Storage>,
        Path::new("m"),
        options(),
    )
    .expect("open")
}

fn spec(layout: Layout) -> TableSpec<'static> {
    spec_with_keys(layout, IDENTITY)
}

fn spec_with_keys(layout: Layout, kind: KeyKind) -> TableSpec<'static> {
    TableSpec {
        name: "t",
        design: "identity",
        kind,
        layout,
        user_keys: false,
        schema: b"",
        unlogged: false,
    }
}

fn row_of(i: u64) -> Vec<u8> {
    let mut row = i.to_le_bytes().to_vec();
    row.resize(40, (i % 251) as u8);
    row
}

/// Records of `kind` since the last checkpoint's redo point.
fn records_since_checkpoint(db: &Database, kind: &str) -> u64 {
    let summary = db.log_summary().expect("log summary");
    summary
        .kinds
        .iter()
        .filter(|k| k.kind == kind)
        .map(|k| k.records_since_checkpoint)
        .sum()
}

/// Inserts `rows` rows (autocommit, sync) and returns their keys with their rows' seeds.
fn insert_rows(db: &Database, from: u64, rows: u64) -> Vec<(Key, u64)> {
    let table = db.table("t").expect("table");
    let mut session = db.session();
    (from..from + rows)
        .map(|i| (session.insert(&table, &row_of(i)).expect("insert"), i))
        .collect()
}

fn crash_after_splits_since_a_checkpoint(layout: Layout, kind: KeyKind) {
    let mut mem = MemStorage::new(41);
    let db = open(&mem);
    db.create_table_spec(&spec_with_keys(layout, kind))
        .expect("create");
    let mut acknowledged = insert_rows(&db, 0, 2_000);
    db.checkpoint().expect("checkpoint");
    acknowledged.extend(insert_rows(&db, 2_000, 4_000));
    let inserts = records_since_checkpoint(&db, "page-insert");
    if matches!(layout, Layout::HeapIndexed { .. }) {
        // A heap logs its inserts (a heap row's place is physical; a page's first change
        // after the checkpoint is an image instead), its index none: about one per row.
        assert!(
            (3_900..=4_000).contains(&inserts),
            "{layout:?}: {inserts} page inserts"
        );
    } else {
        assert_eq!(
            inserts, 0,
            "{layout:?}: leaf inserts of a table's trees are not logged"
        );
    }
    assert!(
        records_since_checkpoint(&db, "tree-split") > 0,
        "{layout:?}: splits after a checkpoint are logged as split records"
    );
    mem = mem.reboot(CrashMode::Torn, 7).expect("reboot");
    std::mem::forget(db);

    let db = open(&mem);
    let table = db.table("t").expect("table");
    let session = db.session();
    let lost: Vec<u64> = acknowledged
        .iter()
        .filter(|(key, i)| session.get(&table, key).expect("get") != Some(row_of(*i)))
        .map(|(_, i)| *i)
        .collect();
    assert!(
        lost.is_empty(),
        "{layout:?}: {} acknowledged rows lost: {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
    assert_eq!(db.verify_table(&table).expect("verify").rows, 6_000);
    let report = db.check().expect("check");
    assert!(report.faults.is_empty(), "{layout:?}: {:?}", report.faults);
}

#[test]
fn a_clustered_table_recovers_every_row_from_split_records_and_commits() {
    crash_after_splits_since_a_checkpoint(Layout::Clustered, IDENTITY);
}

#[test]
fn a_hash_partitioned_table_recovers_every_row_from_split_records_and_commits() {
    crash_after_splits_since_a_checkpoint(Layout::HashPartitioned { partitions: 3 }, IDENTITY);
}

#[test]
fn a_heap_index_recovers_every_entry_from_split_records_and_commits() {
    crash_after_splits_since_a_checkpoint(Layout::HeapIndexed { chains: 2 }, IDENTITY);
}

/// Random keys split pages in the middle: the left page's image since the checkpoint
/// holds rows that the split moved right, and redo must cut them off it again.
#[test]
fn random_keys_recover_from_middle_splits() {
    crash_after_splits_since_a_checkpoint(Layout::Clustered, KeyKind::GuidV4);
}

/// A crash during the recovery itself (nothing it did reached the disk) recovers the same:
/// the re-apply pass writes no log of its own, so the next open finds the same log.
#[test]
fn a_crash_during_recovery_recovers_the_same_rows() {
    let mut mem = MemStorage::new(43);
    let db = open(&mem);
    db.create_table_spec(&spec(Layout::Clustered))
        .expect("create");
    let mut acknowledged = insert_rows(&db, 0, 1_500);
    db.checkpoint().expect("checkpoint");
    acknowledged.extend(insert_rows(&db, 1_500, 2_500));
    mem = mem.reboot(CrashMode::Torn, 9).expect("reboot");
    std::mem::forget(db);
    // An open that recovers, then a crash that keeps only what it synced.
    let db = open(&mem);
    mem = mem.reboot(CrashMode::DropAll, 10).expect("reboot");
    std::mem::forget(db);
    let db = open(&mem);
    let table = db.table("t").expect("table");
    let session = db.session();
    for (key, i) in &acknowledged {
        assert_eq!(
            session.get(&table, key).expect("get"),
            Some(row_of(*i)),
            "row {i}"
        );
    }
    assert_eq!(db.verify_table(&table).expect("verify").rows, 4_000);
}

/// The WAL rule for leaf inserts that log nothing of their own, under `async`: a leaf may
/// reach the disk only after the commit record of every row on it is durable.
///
/// Both leaves here have a durable full image since the checkpoint, so the async commit's
/// two rows add no record for either page. A scan of a table larger than the pool then
/// evicts both leaves while the commit record is still only in the log buffer. The leaf's
/// LSN, raised to the log's end at the insert, makes the first write-back flush the log;
/// so the commit survives every power cut after the scan, whole.
///
/// (Without the raise the leaves go out first, but recovery would still show no half
/// transaction: it resets each leaf to its image and re-applies only durable commits. The
/// async campaign checks that property; this test checks the rule itself.)
#[test]
fn under_async_a_leaf_never_reaches_disk_before_its_rows_commit_record() {
    for reboot_seed in 0..8 {
        let mem = MemStorage::new(reboot_seed);
        let options = Options {
            durability: Durability::Async,
            wal: hotpage::WalOptions {
                // No timed flush: only the WAL rule (or a sync commit) flushes the log.
                async_flush_interval: std::time::Duration::from_secs(3600),
                ..hotpage::WalOptions::default()
            },
            ..options()
        };
        let db = Database::open_with_storage(
            Arc::clone(&mem) as Arc<dyn Storage>,
            Path::new("m"),
            options.clone(),
        )
        .expect("open");
        let [a, d, big] = ["a", "d", "big"].map(|name| {
            db.create_table_with_layout(name, "identity", IDENTITY, Layout::Clustered)
                .expect("create")
        });
        let mut session = db.session();
        for i in 0..2000 {
            session.insert(&big, &[i as u8; 200]).expect("fill big");
        }
        db.checkpoint().expect("checkpoint");
        // A sync commit images both leaves since the checkpoint's redo point.
        session.set_durability(Durability::Sync).expect("sync");
        session.begin().expect("begin");
        session.insert(&a, b"imaged a").expect("insert");
        session.insert(&d, b"imaged d").expect("insert");
        session.commit().expect("sync commit");
        // Their images were logged as the rows were applied, after that commit's flush: a
        // second sync commit, on a leaf imaged already, makes them durable too.
        session
            .insert(&a, b"flushes the images")
            .expect("sync insert");
        session.set_durability(Durability::Async).expect("async");
        // The commit under test: one row on each leaf, acknowledged before it is durable.
        session.begin().expect("begin");
        let x = session.insert(&a, b"row x").expect("insert");
        let y = session.insert(&d, b"row y").expect("insert");
        session.commit().expect("async commit");
        let flushes = |db: &Database| db.log_counters().expect("a log").flushes;
        let (flushes_before, written_before) = (
            flushes(&db),
            db.stats().counter(hotpage::Counter::PagesWritten),
        );
        let mut scanned = 0;
        session
            .scan(&big, None, |_, _| {
                scanned += 1;
                true
            })
            .expect("scan");
        assert_eq!(scanned, 2000);
        assert!(
            db.stats().counter(hotpage::Counter::PagesWritten) > written_before,
            "the scan evicted no dirty leaf: the test no longer tests the rule"
        );
        assert!(
            flushes(&db) > flushes_before,
            "leaves holding an async commit's rows were written without flushing the log"
        );
        drop(session);
        let rebooted = mem.reboot(CrashMode::Reorder, reboot_seed).expect("reboot");
        drop(db);
        let db = Database::open_with_storage(
            Arc::clone(&rebooted) as Arc<dyn Storage>,
            Path::new("m"),
            options,
        )
        .expect("reopen");
        let session = db.session();
        let has_x = session.get(&db.table("a").expect("a"), &x).expect("get x");
        let has_y = session.get(&db.table("d").expect("d"), &y).expect("get y");
        assert_eq!(
            (has_x.as_deref(), has_y.as_deref()),
            (Some(&b"row x"[..]), Some(&b"row y"[..])),
            "seed {reboot_seed}: the write-back made the commit durable, and the crash lost it"
        );
    }
}
