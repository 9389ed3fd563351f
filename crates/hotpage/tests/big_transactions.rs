//! One transaction limit (issue 9, item 6): a transaction of up to `txn_memory_bytes_max`
//! bytes of staged rows (each row's key, bytes and bookkeeping) commits, even when that is
//! far more than one log record holds (it is logged in parts, the last of which is the
//! commit point); one byte more is refused at insert time, never at commit. A crash at any moment of a multi-part commit leaves the
//! transaction all there or not at all.

use hotpage::limits::STAGED_ROW_OVERHEAD_BYTES;
use hotpage::testing::WalOptions;
use hotpage::testing::{CrashMode, MemStorage, Storage};
use hotpage::{Database, Error, KeyKind, Options};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Rows of this many bytes (plus an 8-byte key and their bookkeeping each) take 1 KiB
/// each, so they fill the limit exactly.
const ROW_BYTES: usize = 1024 - 8 - STAGED_ROW_OVERHEAD_BYTES;
const TXN_BYTES_MAX: usize = 6 << 20;

fn options() -> Options {
    Options {
        page_size: 8192,
        pool_bytes: 256 * 8192,
        txn_memory_bytes_max: TXN_BYTES_MAX,
        wal: WalOptions {
            segment_bytes: 1 << 20,
            // One record holds at most half of it, 512 KiB; the rows of a transaction at
            // the limit take more than eight times that in the log.
            buffer_bytes: 1 << 20,
            async_flush_interval: Duration::from_millis(1),
        },
        checkpoint_log_bytes: u64::MAX,
        checkpoint_interval: Duration::from_secs(3600),
        ..Options::default()
    }
}

fn open(storage: &Arc<MemStorage>) -> hotpage::Result<Database> {
    Database::open_with_storage(
        Arc::clone(storage) as Arc<dyn Storage>,
        Path::new("big"),
        options(),
    )
}

/// A database on `storage` with a table and a transaction of `rows` rows of `ROW_BYTES`
/// open, not yet committed.
fn open_transaction(storage: &Arc<MemStorage>, rows: usize) -> (Database, hotpage::Session) {
    let db = open(storage).expect("open");
    let t = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("table");
    let mut s = db.session();
    s.begin().expect("begin");
    for _ in 0..rows {
        s.insert(&t, &[5u8; ROW_BYTES]).expect("insert");
    }
    (db, s)
}

#[test]
fn a_transaction_at_the_limit_commits_and_one_byte_more_is_refused_at_insert() {
    let storage = MemStorage::new(1);
    let db = open(&storage).expect("open");
    let t = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("table");
    let mut s = db.session();
    s.begin().expect("begin");
    let rows = TXN_BYTES_MAX / 1024;
    assert_eq!(
        rows * (ROW_BYTES + 8 + STAGED_ROW_OVERHEAD_BYTES),
        TXN_BYTES_MAX,
        "the rows fill the limit exactly"
    );
    let mut keys = Vec::new();
    for i in 0..rows {
        keys.push(
            s.insert(&t, &vec![i as u8; ROW_BYTES])
                .expect("within the limit"),
        );
    }
    match s.insert(&t, &[0u8; 1]) {
        Err(error @ Error::TransactionMemory { .. }) => {
            let message = error.to_string();
            assert!(message.contains("txn_memory_bytes_max"), "{message}")
        }
        other => panic!("one byte over the limit: {other:?}"),
    }
    s.commit().expect("a transaction at the limit commits");
    let log = db.log_summary().expect("log");
    let parts = log
        .kinds
        .iter()
        .find(|k| k.kind == "txn-part")
        .expect("logged in parts");
    assert!(parts.records >= 8, "{} parts", parts.records);
    drop((s, t));
    let storage = storage.reboot(CrashMode::DropAll, 2).expect("reboot");
    drop(db);
    let db = open(&storage).expect("reopen");
    let t = db.table("t").expect("table");
    let s = db.session();
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(s.get(&t, key).expect("get"), Some(vec![i as u8; ROW_BYTES]));
    }
}

#[test]
fn a_crash_during_a_multi_part_commit_leaves_all_or_nothing() {
    let rows = TXN_BYTES_MAX / 2 / 1024;
    // How many storage operations the commit takes, to crash inside it.
    let span = {
        let storage = MemStorage::new(3);
        let (_db, mut s) = open_transaction(&storage, rows);
        let before = storage.change_ops();
        s.commit().expect("commit");
        storage.change_ops() - before
    };
    let (mut all, mut none) = (0, 0);
    for halt_after in (0..span).step_by((span as usize / 12).max(1)) {
        let storage = MemStorage::new(halt_after);
        let (db, mut s) = open_transaction(&storage, rows);
        storage.halt_after_ops(Some(halt_after));
        let acknowledged = s.commit().is_ok();
        let storage = storage.reboot(CrashMode::Torn, halt_after).expect("reboot");
        drop((s, db));
        let db = open(&storage).expect("recovers");
        let t = db.table("t").expect("table");
        let found = db.verify_table(&t).expect("verify").rows;
        match found {
            0 => {
                assert!(!acknowledged, "an acknowledged transaction lost");
                none += 1;
            }
            n if n == rows as u64 => all += 1,
            n => panic!("halt after {halt_after}: {n} of {rows} rows: a partial transaction"),
        }
    }
    assert!(all > 0 && none > 0, "{all} whole, {none} absent");
}

/// A commit far larger than `checkpoint_log_bytes` leaves its segments obsolete at the next
/// checkpoint; only as many stay on disk for reuse as the log fills before the checkpoint
/// after (one more than `checkpoint_log_bytes` takes), and every row is there after a crash.
#[test]
fn a_burst_does_not_keep_its_log_segments_for_good() {
    let storage = MemStorage::new(3);
    let options = Options {
        checkpoint_log_bytes: 1 << 20,
        ..options()
    };
    let open = |storage: &Arc<MemStorage>| {
        Database::open_with_storage(
            Arc::clone(storage) as Arc<dyn Storage>,
            Path::new("big"),
            options.clone(),
        )
    };
    let db = open(&storage).expect("open");
    let t = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("table");
    let mut s = db.session();
    s.begin().expect("begin");
    let rows = TXN_BYTES_MAX / 1024;
    for i in 0..rows {
        s.insert(&t, &vec![i as u8; ROW_BYTES]).expect("insert");
    }
    s.commit().expect("commit");
    let segments = |storage: &MemStorage| {
        let names = storage.list().expect("list");
        names.iter().filter(|n| n.starts_with("wal.")).count()
    };
    assert!(
        segments(&storage) >= 6,
        "the commit took six segments or more"
    );
    db.checkpoint().expect("checkpoint");
    db.checkpoint().expect("checkpoint");
    // The segments the log still needs (from the checkpoint's, 1 or 2 of them) and two
    // free ones (1 MiB of log to the next checkpoint, and one for the segment it is in).
    assert!(segments(&storage) <= 4, "{} segments", segments(&storage));
    let removed = db.log_counters().expect("log").segments_removed;
    assert!(removed >= 2, "{removed} removed");
    drop((s, t));
    let storage = storage.reboot(CrashMode::DropAll, 4).expect("reboot");
    drop(db);
    let db = open(&storage).expect("reopen");
    let info = db.tables().into_iter().find(|i| i.name == "t").expect("t");
    assert_eq!(info.rows, rows as u64);
}
