//! `TRUNCATE` inside a transaction (`Session::truncate_at_commit`) is atomic with the
//! transaction's commit, across power cuts.
//!
//! Each run commits some rows to `t`, then one transaction truncates `t`, inserts new rows
//! into it and into a second table `other`, and commits; the machine halts after `n` storage
//! operations (every `n` from 0 until the run no longer notices), sometimes after a
//! checkpoint that settles the truncation, and the power fails in each of the ways
//! `MemStorage` models. After the reopen, exactly one of two states is allowed:
//! - the transaction did not commit: `t` holds its old rows and `other` none of the new;
//! - it committed: `t` holds exactly the transaction's rows and `other` all of its own.
//!
//! and if the commit returned Ok under `sync`, only the second. Before the truncation was
//! made pending (a catalog entry resolved by the commit record at recovery), a crash between
//! the truncation's checkpoint and the commit record left `t` empty: the first state's rows
//! were lost although the transaction never committed.

#[path = "common/campaign_db.rs"]
mod campaign_db;
#[path = "common/halt_campaign.rs"]
mod halt_campaign;

use halt_campaign::halt_campaign;
use hotpage::{CrashMode, Database, Durability, KeyKind, MemStorage, TableHandle};
use std::collections::BTreeSet;
use std::sync::Arc;

const PATH: &str = "truncate-crash";
const OLD_ROWS: usize = 40;
const NEW_ROWS: usize = 7;
const OTHER_ROWS: usize = 4;

fn open(storage: &Arc<MemStorage>, durability: Durability) -> Database {
    campaign_db::open_at(storage, PATH, durability)
}

fn rows(db: &Database, table: &TableHandle) -> BTreeSet<Vec<u8>> {
    let mut found = BTreeSet::new();
    db.session()
        .scan(table, None, |_, row| {
            found.insert(row.to_vec());
            true
        })
        .expect("scan");
    found
}

fn named(prefix: &str, count: usize) -> BTreeSet<Vec<u8>> {
    (0..count)
        .map(|i| format!("{prefix}-{i}").into_bytes())
        .collect()
}

/// One run: returns whether the truncating commit returned Ok, whether the halt came
/// before the run's end, and the storage after the power cut.
fn truncate_then_crash(
    halt_after_ops: Option<u64>,
    checkpoint_after: bool,
    mode: CrashMode,
    durability: Durability,
) -> (bool, bool, Arc<MemStorage>) {
    let storage = MemStorage::new(11);
    let db = open(&storage, durability);
    let t = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("t");
    let other = db
        .create_table("other", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("other");
    let mut session = db.session();
    for row in named("old", OLD_ROWS) {
        session.insert(&t, &row).expect("an old row");
    }
    db.checkpoint().expect("the old rows' checkpoint");
    storage.halt_after_ops(halt_after_ops);
    let acknowledged = (|| -> hotpage::Result<()> {
        session.begin()?;
        session.insert(&t, b"gone-before-the-truncate")?;
        session.truncate_at_commit(&t)?;
        for row in named("new", NEW_ROWS) {
            session.insert(&t, &row)?;
        }
        for row in named("other", OTHER_ROWS) {
            session.insert(&other, &row)?;
        }
        session.commit()
    })()
    .is_ok();
    if acknowledged && checkpoint_after {
        // Settles the truncation in the catalog (or fails, halted).
        let _ = db.checkpoint();
    }
    let halted = storage.is_halted();
    let rebooted = storage.reboot(mode, 5).expect("reboot");
    drop(session);
    drop(db);
    (acknowledged, halted, rebooted)
}

/// The state after the reopen must be one of the two allowed (see the module docs).
/// Returns true if it is the committed one.
fn check_atomic(storage: &Arc<MemStorage>, durability: Durability, what: &str) -> bool {
    let db = open(storage, durability);
    let t = db.table("t").expect("t survives");
    let other = db.table("other").expect("other survives");
    let (t_rows, other_rows) = (rows(&db, &t), rows(&db, &other));
    let committed = t_rows == named("new", NEW_ROWS) && other_rows == named("other", OTHER_ROWS);
    let not_committed = t_rows == named("old", OLD_ROWS) && other_rows.is_empty();
    assert!(
        committed || not_committed,
        "{what}: t holds {} rows ({:?}…) and other {} rows: neither before nor after the \
         truncating commit",
        t_rows.len(),
        t_rows
            .iter()
            .next()
            .map(|r| String::from_utf8_lossy(r).into_owned()),
        other_rows.len()
    );
    let report = db.check().expect("check");
    assert!(report.faults.is_empty(), "{what}: {:?}", report.faults);
    // New keys go on past every row (the new table's generator continues the old one's).
    let mut session = db.session();
    let key = session
        .insert(&t, b"after")
        .expect("insert after the reopen");
    let mut keys = Vec::new();
    session
        .scan(&t, None, |k, _| {
            keys.push(k.to_vec());
            true
        })
        .expect("scan keys");
    assert_eq!(
        keys.last(),
        Some(&key.as_bytes().to_vec()),
        "{what}: a key reused"
    );
    drop((session, t, other));
    db.close().expect("clean close");
    // A clean reopen keeps the same state.
    let db = open(storage, durability);
    let t = db.table("t").expect("t after a clean reopen");
    assert!(rows(&db, &t).contains(b"after".as_slice()), "{what}");
    committed
}

fn campaign(durability: Durability) {
    halt_campaign(
        durability,
        &mut |halt, checkpoint_after, mode| {
            truncate_then_crash(halt, checkpoint_after, mode, durability)
        },
        &mut |storage, what| check_atomic(storage, durability, what),
    );
}

#[test]
fn a_truncating_sync_commit_survives_every_power_cut_whole_or_not_at_all() {
    campaign(Durability::Sync);
}

#[test]
fn a_truncating_async_commit_survives_every_power_cut_whole_or_not_at_all() {
    campaign(Durability::Async);
}
