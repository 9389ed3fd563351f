//! `Session::rebuild_table` (SQL's `ALTER TABLE … ADD PRIMARY KEY` on a table with rows)
//! swaps a heap for a keyed table holding the same rows atomically, across power cuts.
//!
//! Each run fills a heap `t`, then rebuilds it as a clustered table whose rows carry new
//! keys; the machine halts after `n` storage operations (every `n` from 0 until the run no
//! longer notices), sometimes after a checkpoint that settles the swap, and the power fails
//! in each of the ways `MemStorage` models. After the reopen exactly one of two states is
//! allowed, and exactly one live table named `t`:
//! - the old heap (schema `old`) with every old row, under its old keys;
//! - the new keyed table (schema `new`) with every rebuilt row, under the new keys;
//!
//! and if the rebuild returned Ok under `sync`, only the second. A duplicate key or a row
//! that does not fit is refused before anything changes.

#[path = "common/campaign_db.rs"]
mod campaign_db;
#[path = "common/halt_campaign.rs"]
mod halt_campaign;

use halt_campaign::halt_campaign;
use hotpage::{CrashMode, Database, Durability, Key, KeyKind, Layout, MemStorage, TableSpec};
use std::collections::BTreeSet;
use std::sync::Arc;

const PATH: &str = "rebuild-crash";
const ROWS: i64 = 60;
const IDENTITY: KeyKind = KeyKind::Identity { start: 1, step: 1 };

fn open(storage: &Arc<MemStorage>, durability: Durability) -> Database {
    campaign_db::open_at(storage, PATH, durability)
}

fn old_spec() -> TableSpec<'static> {
    TableSpec {
        name: "t",
        design: "heap",
        kind: IDENTITY,
        layout: Layout::Heap { chains: 1 },
        user_keys: false,
        schema: b"old",
        unlogged: false,
    }
}

fn new_spec() -> TableSpec<'static> {
    TableSpec {
        name: "t",
        design: "keyed",
        kind: IDENTITY,
        layout: Layout::Clustered,
        user_keys: true,
        schema: b"new",
        unlogged: false,
    }
}

/// The rebuilt form of an old row: a key from its content, and a new row.
fn rebuilt(row: &[u8]) -> (Key, Vec<u8>) {
    let text = String::from_utf8_lossy(row);
    let n: i64 = text
        .trim_start_matches("old-")
        .parse()
        .expect("an old row's number");
    (
        Key::from_i64(1_000 + 7 * n),
        format!("new-{n}").into_bytes(),
    )
}

fn old_rows() -> BTreeSet<Vec<u8>> {
    (0..ROWS).map(|i| format!("old-{i}").into_bytes()).collect()
}

fn new_rows() -> BTreeSet<(Vec<u8>, Vec<u8>)> {
    old_rows()
        .iter()
        .map(|row| {
            let (key, row) = rebuilt(row);
            (key.as_bytes().to_vec(), row)
        })
        .collect()
}

/// One run: returns whether the rebuild returned Ok, whether the halt came before the
/// run's end, and the storage after the power cut.
fn rebuild_then_crash(
    halt_after_ops: Option<u64>,
    checkpoint_after: bool,
    mode: CrashMode,
    durability: Durability,
) -> (bool, bool, Arc<MemStorage>) {
    let storage = MemStorage::new(13);
    let db = open(&storage, durability);
    let t = db.create_table_spec(&old_spec()).expect("t");
    let mut session = db.session();
    for row in old_rows() {
        session.insert(&t, &row).expect("an old row");
    }
    db.checkpoint().expect("the old rows' checkpoint");
    storage.halt_after_ops(halt_after_ops);
    let mut rows = Vec::new();
    let acknowledged = session
        .scan(&t, None, |_, row| {
            rows.push(rebuilt(row));
            true
        })
        .and_then(|()| session.rebuild_table(&t, &new_spec(), &rows))
        .is_ok();
    if acknowledged && checkpoint_after {
        // Settles the swap in the catalog (or fails, halted).
        let _ = db.checkpoint();
    }
    let halted = storage.is_halted();
    let rebooted = storage.reboot(mode, 5).expect("reboot");
    drop(session);
    drop(db);
    (acknowledged, halted, rebooted)
}

/// The state after the reopen must be one of the two allowed (see the module docs).
/// Returns true if it is the rebuilt one.
fn check_atomic(storage: &Arc<MemStorage>, durability: Durability, what: &str) -> bool {
    let db = open(storage, durability);
    let named_t = db.tables().iter().filter(|t| t.name == "t").count();
    assert_eq!(named_t, 1, "{what}: {named_t} live tables named t");
    let t = db.table("t").expect("t survives");
    let mut found = BTreeSet::new();
    db.session()
        .scan(&t, None, |key, row| {
            found.insert((key.to_vec(), row.to_vec()));
            true
        })
        .expect("scan");
    let rebuilt = t.schema() == b"new";
    if rebuilt {
        assert!(t.takes_supplied_keys(), "{what}");
        assert_eq!(found, new_rows(), "{what}: the rebuilt table's rows");
    } else {
        assert_eq!(t.schema(), b"old", "{what}");
        let rows: BTreeSet<Vec<u8>> = found.into_iter().map(|(_, row)| row).collect();
        assert_eq!(rows, old_rows(), "{what}: the old table's rows");
    }
    let report = db.check().expect("check");
    assert!(report.faults.is_empty(), "{what}: {:?}", report.faults);
    let mut session = db.session();
    if rebuilt {
        // The key holds: a rebuilt key is a duplicate, a new one goes in.
        let taken = Key::from_i64(1_000);
        assert!(session.insert_keyed(&t, &taken, b"dup").is_err(), "{what}");
        session
            .insert_keyed(&t, &Key::from_i64(5), b"after")
            .expect("a new key");
    } else {
        session
            .insert(&t, b"after")
            .expect("insert after the reopen");
    }
    drop((session, t));
    db.close().expect("clean close");
    // A clean reopen keeps the same state.
    let db = open(storage, durability);
    let t = db.table("t").expect("t after a clean reopen");
    assert_eq!(
        t.schema() == b"new",
        rebuilt,
        "{what}: a clean reopen changed sides"
    );
    rebuilt
}

fn campaign(durability: Durability) {
    halt_campaign(
        durability,
        &mut |halt, checkpoint_after, mode| {
            rebuild_then_crash(halt, checkpoint_after, mode, durability)
        },
        &mut |storage, what| check_atomic(storage, durability, what),
    );
}

#[test]
fn a_sync_rebuild_survives_every_power_cut_whole_or_not_at_all() {
    campaign(Durability::Sync);
}

#[test]
fn an_async_rebuild_survives_every_power_cut_whole_or_not_at_all() {
    campaign(Durability::Async);
}

/// A duplicate key, a row that does not fit, or a table that changed since its rows were
/// read: refused, and the old table is still the one, whole.
#[test]
fn a_refused_rebuild_changes_nothing() {
    let storage = MemStorage::new(3);
    let db = open(&storage, Durability::Sync);
    let t = db.create_table_spec(&old_spec()).expect("t");
    let mut session = db.session();
    for row in old_rows() {
        session.insert(&t, &row).expect("an old row");
    }
    let mut rows = Vec::new();
    session
        .scan(&t, None, |_, row| {
            rows.push(rebuilt(row));
            true
        })
        .expect("scan");
    let mut duplicated = rows.clone();
    duplicated[3].0 = duplicated[4].0;
    let error = session
        .rebuild_table(&t, &new_spec(), &duplicated)
        .expect_err("a duplicate key");
    assert!(
        matches!(error, hotpage::Error::DuplicateKey { .. }),
        "{error}"
    );
    let mut too_large = rows.clone();
    too_large[0].1 = vec![b'x'; 64 * 1024];
    let error = session
        .rebuild_table(&t, &new_spec(), &too_large)
        .expect_err("a row too large");
    assert!(
        matches!(error, hotpage::Error::RowTooLarge { .. }),
        "{error}"
    );
    // Another row committed after the read: the rebuild would lose it.
    db.session().insert(&t, b"old-999").expect("a late row");
    let error = session
        .rebuild_table(&t, &new_spec(), &rows)
        .expect_err("the table changed");
    assert!(matches!(error, hotpage::Error::TableBusy(_)), "{error}");
    let t = db.table("t").expect("t");
    assert_eq!(t.schema(), b"old");
    let mut count = 0;
    session
        .scan(&t, None, |_, _| {
            count += 1;
            true
        })
        .expect("scan");
    assert_eq!(count, ROWS + 1);
    assert_eq!(db.tables().iter().filter(|t| t.name == "t").count(), 1);
    drop(session);
    db.close().expect("close");
    let db = open(&storage, Durability::Sync);
    assert_eq!(db.table("t").expect("t").schema(), b"old");
}
