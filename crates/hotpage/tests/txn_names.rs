//! Transaction names are logged (a `txn-name` record just before the commit record, catalog
//! format 10), so they survive a crash and a clean reopen; a database an older binary
//! wrote (format 8, its names never logged) still opens, recovers and reads, its commits'
//! names unknown; a power cut at any point of a named commit leaves no commit, or the
//! commit with its name (an acknowledged one always has it); and the integrity check and
//! recovery see nothing else change.

#[path = "common/halt_campaign.rs"]
mod halt_campaign;

use halt_campaign::halt_campaign;
use hotpage::testing::{Catalog, CrashMode, MemStorage, Storage, WalOptions};
use hotpage::{Database, Durability, KeyKind, Options, TxnName};
use std::cell::Cell;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn options() -> Options {
    options_with(Durability::Sync)
}

fn options_with(durability: Durability) -> Options {
    Options {
        durability,
        page_size: 4096,
        pool_bytes: 64 * 4096,
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

fn open(storage: &Arc<MemStorage>) -> Database {
    Database::open_with_storage(
        Arc::clone(storage) as Arc<dyn Storage>,
        Path::new("names"),
        options(),
    )
    .expect("open")
}

/// The names of the retained log's transactions, in log order.
fn names(db: &Database) -> Vec<TxnName> {
    let mut out = Vec::new();
    db.visit_log_records(false, |record| {
        if record.txn_first {
            out.push(record.txn_name.clone());
        }
        Ok(true)
    })
    .expect("visit");
    out
}

fn named(name: &str) -> TxnName {
    TxnName::Named(Arc::from(name))
}

fn catalog_format(storage: &MemStorage) -> u32 {
    let bytes = storage.read_file("catalog").expect("catalog");
    Catalog::decode(&bytes, Path::new("names"))
        .expect("decode")
        .format_version
}

/// The catalog as a binary of format 8 writes it: format 10's fields are format 9's, and
/// format 8 lacks format 9's list of pending truncations (a u32 count, 0 here).
fn rewrite_as_format_8(storage: &MemStorage) {
    let bytes = storage.read_file("catalog").expect("catalog");
    let body = &bytes[..bytes.len() - 4];
    assert_eq!(u32::from_le_bytes(body[8..12].try_into().unwrap()), 10);
    let (fields, pending) = body.split_at(body.len() - 4);
    assert_eq!(pending, [0, 0, 0, 0], "no truncation pending");
    let mut old = fields.to_vec();
    old[8..12].copy_from_slice(&8u32.to_le_bytes());
    let crc = crc32c::crc32c(&old);
    old.extend_from_slice(&crc.to_le_bytes());
    let file = storage.open("catalog", false).expect("open catalog");
    file.set_len(0).expect("truncate");
    file.write_at(&old, 0).expect("write");
    file.sync_data().expect("sync");
    assert_eq!(catalog_format(storage), 8);
}

#[test]
fn names_survive_a_crash_and_a_clean_reopen() {
    let storage = MemStorage::new(5);
    let db = open(&storage);
    let table = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("table");
    let mut session = db.session();
    session.begin().expect("begin");
    session.name_transaction("InsertRecord").expect("name");
    session.insert(&table, b"named").expect("insert");
    session.commit().expect("commit");
    session.insert(&table, b"autocommit").expect("insert");
    session.begin().expect("begin");
    session.name_transaction("empty").expect("name");
    // An empty transaction logs nothing, its name included.
    session.commit().expect("commit");
    let expected = vec![named("InsertRecord"), TxnName::Unnamed];
    assert_eq!(names(&db), expected);
    assert_eq!(catalog_format(&storage), 10, "this binary writes format 10");
    let too_long = "n".repeat(hotpage::TXN_NAME_BYTES_MAX + 1);
    session.begin().expect("begin");
    assert!(session.name_transaction(&too_long).is_err());
    session.rollback().expect("rollback");

    let rebooted = storage.reboot(CrashMode::Torn, 6).expect("reboot");
    drop((session, table, db));
    let db = open(&rebooted);
    assert!(db.recovery_report().records > 0, "recovery ran");
    assert_eq!(names(&db), expected, "after a crash");
    let table = db.table("t").expect("t");
    assert_eq!(db.verify_table(&table).expect("verify").rows, 2);
    assert!(db.check().expect("check").ok());
    drop(table);
    db.close().expect("close");

    let db = open(&rebooted);
    assert_eq!(names(&db), expected, "after a clean close");
    assert!(db.check().expect("check").ok());
}

#[test]
fn an_older_binarys_database_opens_and_its_names_are_unknown() {
    let storage = MemStorage::new(7);
    let db = open(&storage);
    let table = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("table");
    db.checkpoint().expect("checkpoint");
    let mut session = db.session();
    // What an older binary logs: commit records, no names (it kept them in memory).
    for i in 0..3u32 {
        session.insert(&table, &i.to_le_bytes()).expect("insert");
    }
    let rebooted = storage.reboot(CrashMode::Torn, 8).expect("reboot");
    drop((session, table, db));
    rewrite_as_format_8(&rebooted);

    let db = open(&rebooted);
    assert!(db.recovery_report().records > 0, "its log was redone");
    let table = db.table("t").expect("t");
    assert_eq!(db.verify_table(&table).expect("verify").rows, 3);
    assert_eq!(
        catalog_format(&rebooted),
        10,
        "the open rewrote the catalog"
    );
    assert_eq!(names(&db), vec![TxnName::Unknown; 3]);
    let mut session = db.session();
    session.begin().expect("begin");
    session.name_transaction("after the upgrade").expect("name");
    session.insert(&table, b"new").expect("insert");
    session.commit().expect("commit");
    session.insert(&table, b"unnamed").expect("insert");
    let mut expected = vec![TxnName::Unknown; 3];
    expected.extend([named("after the upgrade"), TxnName::Unnamed]);
    assert_eq!(names(&db), expected);

    // Reopened as format 10 after a crash: the new names are still known. (The older
    // binary's commits, before the upgrade's checkpoint, now read as unnamed: a format 10
    // catalog does not say where in the retained log the upgrade happened; see
    // `names_known_from`.)
    let again = rebooted.reboot(CrashMode::Torn, 9).expect("reboot");
    drop((session, table, db));
    let db = open(&again);
    assert_eq!(names(&db)[3..], expected[3..]);
    let table = db.table("t").expect("t");
    assert_eq!(db.verify_table(&table).expect("verify").rows, 5);
    assert!(db.check().expect("check").ok());
}

/// One run of the campaign: a named transaction of three rows, the storage halted after
/// `halt_after_ops` operations. Returns (commit acknowledged, halted, storage after the cut).
fn named_commit_then_crash(
    durability: Durability,
    halt_after_ops: Option<u64>,
    checkpoint_after: bool,
    mode: CrashMode,
) -> (bool, bool, Arc<MemStorage>) {
    let storage = MemStorage::new(13);
    let db = Database::open_with_storage(
        Arc::clone(&storage) as Arc<dyn Storage>,
        Path::new("names"),
        options_with(durability),
    )
    .expect("create");
    let table = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("table");
    let mut session = db.session();
    session.insert(&table, b"before").expect("an unnamed row");
    db.checkpoint().expect("checkpoint");
    storage.halt_after_ops(halt_after_ops);
    let acknowledged = (|| -> hotpage::Result<()> {
        session.begin()?;
        session.name_transaction("InsertRecord")?;
        for row in [b"one", b"two", b"six"] {
            session.insert(&table, row)?;
        }
        session.commit()
    })()
    .is_ok();
    if acknowledged && checkpoint_after {
        let _ = db.checkpoint();
    }
    let halted = storage.is_halted();
    let rebooted = storage.reboot(mode, 17).expect("reboot");
    drop((session, table, db));
    (acknowledged, halted, rebooted)
}

/// Reopens and checks one whole outcome: the transaction's rows and its name (which only
/// a commit the cut caught before it was acknowledged may lack), or neither.
fn named_commit_outcome(storage: &Arc<MemStorage>, what: &str, acknowledged: bool) -> bool {
    let db = open(storage);
    let table = db.table("t").expect("t");
    let rows = db.verify_table(&table).expect("verify").rows;
    assert!(db.check().expect("check").ok(), "{what}");
    let names = names(&db);
    let done = match rows {
        1 => false,
        4 => true,
        other => panic!("{what}: {other} rows, part of a transaction"),
    };
    let last = names.last().expect("the first row's commit");
    if done && acknowledged {
        assert_eq!(last, &named("InsertRecord"), "{what}");
    } else if done {
        assert!(
            matches!(last, TxnName::Named(_) | TxnName::Unnamed),
            "{what}: {last:?}"
        );
    } else {
        assert!(!names.contains(&named("InsertRecord")), "{what}: {names:?}");
    }
    done
}

#[test]
fn a_power_cut_leaves_a_named_commit_whole_with_its_name_or_not_at_all() {
    for durability in [Durability::Sync, Durability::Async] {
        let acknowledged = Cell::new(false);
        halt_campaign(
            durability,
            &mut |halt, checkpoint, mode| {
                let run = named_commit_then_crash(durability, halt, checkpoint, mode);
                // Only a sync commit is durable when acknowledged.
                acknowledged.set(run.0 && durability == Durability::Sync);
                run
            },
            &mut |storage, what| named_commit_outcome(storage, what, acknowledged.get()),
        );
    }
}
