//! Damage in the log is corruption, never the end of the log (issue 9, item 1).
//!
//! A crashed database whose log has a flipped byte in the middle, or a missing segment,
//! must not open: the open reports `CorruptLog` naming the file and the offset, and not a
//! byte of any file changes (before this, the open took the damage for the end of the log
//! and deleted everything after it, acknowledged commits included). Salvage then keeps
//! what precedes the damage, after copying the damaged files aside.

use hotpage::testing::WalOptions;
use hotpage::testing::{CrashMode, MemStorage, Storage};
use hotpage::{Database, Error, Key, KeyKind, Options, TableHandle};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const SEGMENT_BYTES: u64 = 1 << 20;

fn options() -> Options {
    Options {
        page_size: 4096,
        pool_bytes: 64 * 4096,
        wal: WalOptions {
            segment_bytes: SEGMENT_BYTES,
            buffer_bytes: 1 << 20,
            async_flush_interval: Duration::from_millis(1),
        },
        // No checkpoint but the ones at open: the whole run stays in the log.
        checkpoint_log_bytes: u64::MAX,
        checkpoint_interval: Duration::from_secs(3600),
        ..Options::default()
    }
}

fn open(storage: &Arc<MemStorage>, options: Options) -> hotpage::Result<Database> {
    Database::open_with_storage(
        Arc::clone(storage) as Arc<dyn Storage>,
        Path::new("damage"),
        options,
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

/// A new database on storage seeded `seed`, with its identity table `t`.
fn new_database(seed: u64) -> (Arc<MemStorage>, Database, TableHandle) {
    let storage = MemStorage::new(seed);
    let db = open(&storage, options()).expect("create");
    let table = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("table");
    (storage, db, table)
}

/// A crashed database whose log spans three segments of acknowledged commits (each
/// autocommit waited for its fdatasync). Returns the rebooted storage and the keys.
fn crashed_database(seed: u64) -> (Arc<MemStorage>, Vec<Key>) {
    let (storage, db, table) = new_database(seed);
    let mut session = db.session();
    let mut keys = Vec::new();
    while storage
        .list()
        .expect("list")
        .iter()
        .filter(|n| n.starts_with("wal."))
        .count()
        < 3
    {
        keys.push(session.insert(&table, &[7u8; 300]).expect("insert"));
    }
    for _ in 0..200 {
        keys.push(session.insert(&table, &[7u8; 300]).expect("insert"));
    }
    let rebooted = storage.reboot(CrashMode::Torn, seed + 1).expect("reboot");
    drop((session, table, db));
    (rebooted, keys)
}

/// Overwrites 64 bytes in the middle of `file`: whatever record lies there (a body, not
/// only padding) fails its checksum.
fn damage_middle(storage: &MemStorage, file: &str) -> u64 {
    let len = storage.read_file(file).expect("read").len() as u64;
    let at = len / 2;
    storage.damage(file, at, &[0xA5; 64]).expect("damage");
    at
}

#[test]
fn a_damaged_record_mid_log_is_corruption_and_changes_nothing() {
    let (storage, _) = crashed_database(1);
    let at = damage_middle(&storage, "wal.0000000000000001");
    let before = snapshot(&storage);
    let ops = storage.change_ops();
    for read_only in [false, true] {
        let options = Options {
            read_only,
            ..options()
        };
        match open(&storage, options) {
            Err(Error::CorruptLog { file, offset, .. }) => {
                assert_eq!(&*file, "wal.0000000000000001");
                assert!(
                    offset <= at && at - offset < 64 * 1024,
                    "offset {offset}, damage at {at}"
                );
            }
            other => panic!("read_only {read_only}: expected CorruptLog, got {other:?}"),
        }
        assert_eq!(
            snapshot(&storage),
            before,
            "read_only {read_only}: a file changed"
        );
        assert_eq!(
            storage.change_ops(),
            ops,
            "read_only {read_only}: an operation changed the storage"
        );
    }
}

#[test]
fn a_missing_segment_that_recovery_needs_is_corruption() {
    for missing in ["wal.0000000000000000", "wal.0000000000000001"] {
        let (storage, _) = crashed_database(3);
        storage.remove(missing).expect("remove");
        let before = snapshot(&storage);
        match open(&storage, options()) {
            Err(Error::CorruptLog { file, reason, .. }) => {
                // The damage is the missing segment, or the record before it that runs
                // on into it (the reason then names the missing one).
                assert!(&*file == missing || reason.contains(missing), "{reason}");
                assert!(reason.contains("missing"), "{reason}");
            }
            other => panic!("{missing} removed: expected CorruptLog, got {other:?}"),
        }
        assert_eq!(snapshot(&storage), before, "{missing}: a file changed");
    }
}

#[test]
fn a_torn_tail_still_opens_with_every_acknowledged_row() {
    let (storage, keys) = crashed_database(5);
    let db = open(&storage, options()).expect("a crash alone is not damage");
    let table = db.table("t").expect("table");
    let session = db.session();
    for key in &keys {
        assert!(
            session.get(&table, key).expect("get").is_some(),
            "lost {key:?}"
        );
    }
}

/// A crashed database whose log spans three segments, once `log.durable` records a durable
/// end in the last one (the checkpointer writes it at its ticks, every 100 ms). Returns the
/// rebooted storage, the keys and that end.
fn crashed_database_with_durable_mark(seed: u64) -> (Arc<MemStorage>, Vec<Key>, u64) {
    let (storage, db, table) = new_database(seed);
    let mut session = db.session();
    let mut keys = Vec::new();
    let in_last_segment = 2 * SEGMENT_BYTES + 16_384;
    let mut waited = 0;
    let marked = loop {
        let mark = hotpage::testing::read_durable_mark(&*storage)
            .expect("read")
            .map_or(0, |m| m.durable);
        if mark >= in_last_segment {
            break mark;
        }
        if db.log_end().expect("log") < in_last_segment + 4096 {
            keys.push(session.insert(&table, &[7u8; 300]).expect("insert"));
        } else {
            waited += 1;
            assert!(waited < 1000, "no durable mark in 10 s");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    // The flushes write the mark; the checkpointer's tick (every 100 ms) makes it durable.
    // Nothing is committed meanwhile, so the mark stays where it is.
    std::thread::sleep(Duration::from_millis(250));
    let rebooted = storage.reboot(CrashMode::Torn, seed + 1).expect("reboot");
    drop((session, table, db));
    (rebooted, keys, marked)
}

/// The durable mark keeps up with a busy log (the flushes write it at most a millisecond
/// apart, where the checkpointer's 100 ms tick used to), and catches up with the log's end
/// once the log is idle. A process killed then leaves it with the kernel: whole-file
/// damage to the log after that is refused rather than read as a torn tail.
#[test]
fn the_durable_mark_keeps_up_with_a_busy_log() {
    let (storage, db, table) = new_database(11);
    let mut session = db.session();
    let mark = || {
        hotpage::testing::read_durable_mark(&*storage)
            .expect("read")
            .map_or(0, |m| m.durable)
    };
    for round in 0..5 {
        session.insert(&table, &[1u8; 100]).expect("insert");
        let acknowledged = db.log_end().expect("log");
        let busy_until = std::time::Instant::now() + Duration::from_millis(20);
        while std::time::Instant::now() < busy_until {
            session.insert(&table, &[1u8; 100]).expect("insert");
        }
        assert!(
            mark() >= acknowledged,
            "round {round}: the mark {} lags a commit acknowledged 20 ms ago at {acknowledged}",
            mark()
        );
        // One commit just after a flush wrote the mark: its own flush is inside the mark
        // interval, so only the flusher's catching up before it sleeps marks it.
        let (seen, deadline) = (mark(), busy_until + Duration::from_secs(2));
        while mark() == seen {
            assert!(
                std::time::Instant::now() < deadline,
                "no flush wrote a mark"
            );
            session.insert(&table, &[1u8; 100]).expect("insert");
        }
        session.insert(&table, &[1u8; 100]).expect("insert");
        // The flusher wakes every millisecond here (`async_flush_interval`); 25 ms leaves
        // a loaded machine time to run it, and the checkpointer's tick (every 100 ms),
        // which would catch up too, seldom falls inside five such windows.
        // (The end is read again each time: a flush that began before the commit returned
        // may still add its flush mark.)
        let idle_since = std::time::Instant::now();
        let end = || db.log_end().expect("log");
        while mark() != end() && idle_since.elapsed() < Duration::from_millis(25) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(mark(), end(), "round {round}: idle");
    }
}

/// A damage done to a crashed database's files, given the durable mark.
type Damage = dyn Fn(&MemStorage, u64);

/// Damage that takes the log's flush marks with it (the last segment cut short, deleted,
/// or overwritten by an earlier one) used to read as a torn tail: the open dropped the
/// acknowledged commits in it without a word. `log.durable` says how far the log was
/// durable, so the open refuses it as damage, naming the file, and changes nothing.
#[test]
fn whole_file_damage_to_the_last_segment_is_corruption() {
    const LAST: &str = "wal.0000000000000002";
    let cut_short = |storage: &MemStorage, marked: u64| {
        let file = storage.open(LAST, false).expect("open");
        file.set_len((marked % SEGMENT_BYTES) / 2).expect("cut");
    };
    let deleted = |storage: &MemStorage, _: u64| storage.remove(LAST).expect("remove");
    let overwritten = |storage: &MemStorage, _: u64| {
        let first = storage.read_file("wal.0000000000000000").expect("read");
        let file = storage.open(LAST, false).expect("open");
        file.write_at(&first, 0).expect("overwrite");
    };
    let damages: [(&str, &Damage); 3] = [
        ("cut short", &cut_short),
        ("deleted", &deleted),
        ("overwritten", &overwritten),
    ];
    for (name, damage) in damages {
        let (storage, keys, marked) = crashed_database_with_durable_mark(31);
        damage(&storage, marked);
        let before = snapshot(&storage);
        match open(&storage, options()) {
            Err(Error::CorruptLog { file, reason, .. }) => {
                assert!(file.starts_with("wal."), "{name}: {file}");
                assert!(reason.contains("log.durable"), "{name}: {reason}");
            }
            Ok(db) => {
                let table = db.table("t").expect("table");
                let session = db.session();
                let kept = keys
                    .iter()
                    .filter(|k| session.get(&table, k).expect("get").is_some())
                    .count();
                panic!("{name}: opened with {kept} of {} rows", keys.len());
            }
            Err(other) => panic!("{name}: {other}"),
        }
        assert_eq!(snapshot(&storage), before, "{name}: a file changed");
    }
}

/// No false alarm: crashes at random moments while four sessions commit and the
/// checkpointer records durable marks; every open succeeds with every row acknowledged
/// before the crash.
#[test]
fn a_crash_while_durable_marks_are_written_is_not_damage() {
    for seed in 0..6u64 {
        let storage = MemStorage::new(100 + seed);
        let db = open(&storage, options()).expect("create");
        let table = db
            .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
            .expect("table");
        let stop = std::sync::atomic::AtomicBool::new(false);
        let (rebooted, acknowledged) = std::thread::scope(|s| {
            let writers: Vec<_> = (0..4)
                .map(|_| {
                    let (db, table, stop) = (&db, &table, &stop);
                    s.spawn(move || {
                        let mut session = db.session();
                        let mut keys = Vec::new();
                        // After the power is cut every commit fails: what returned Ok
                        // was durable before it.
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            match session.insert(table, &[3u8; 200]) {
                                Ok(key) => keys.push(key),
                                Err(_) => break,
                            }
                        }
                        keys
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_millis(150 + 60 * seed));
            let rebooted = storage
                .reboot(
                    [CrashMode::Torn, CrashMode::DropAll][seed as usize % 2],
                    seed,
                )
                .expect("reboot");
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let keys: Vec<Vec<Key>> = writers
                .into_iter()
                .map(|w| w.join().expect("writer"))
                .collect();
            (rebooted, keys)
        });
        drop((table, db));
        let marked = hotpage::testing::read_durable_mark(&*rebooted)
            .expect("read")
            .map_or(0, |m| m.durable);
        assert!(marked > 0, "seed {seed}: no mark was written");
        let db = open(&rebooted, options())
            .unwrap_or_else(|e| panic!("seed {seed}: a crash alone is not damage: {e}"));
        let table = db.table("t").expect("table");
        let session = db.session();
        let acknowledged: Vec<&Key> = acknowledged.iter().flatten().collect();
        assert!(
            acknowledged.len() > 100,
            "seed {seed}: {}",
            acknowledged.len()
        );
        for key in acknowledged {
            assert!(
                session.get(&table, key).expect("get").is_some(),
                "seed {seed}: lost {key:?}"
            );
        }
    }
}

/// After such damage, salvage starts the new log past the durable mark, so that the
/// salvaged database opens, and opens again after a crash, without a false alarm.
#[test]
fn salvage_after_a_lost_last_segment_starts_past_the_durable_mark() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (live, crashed) = (dir.path().join("live"), dir.path().join("crashed"));
    let db = Database::open(&live, options()).expect("create");
    let table = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("table");
    let mut session = db.session();
    let mut waited = 0;
    let salt_free_mark = |path: &Path| {
        let storage = hotpage::testing::StdStorage::open_dir(path, false).expect("dir");
        hotpage::testing::read_durable_mark(&storage)
            .expect("read")
            .map_or(0, |m| m.durable)
    };
    while salt_free_mark(&live) < SEGMENT_BYTES + 16_384 {
        if db.log_end().expect("log") < SEGMENT_BYTES + 20_480 {
            session.insert(&table, &[9u8; 300]).expect("insert");
        } else {
            waited += 1;
            assert!(waited < 1000, "no durable mark in 10 s");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    copy_dir(&live, &crashed);
    drop((session, table));
    db.close().expect("close");
    std::fs::remove_file(crashed.join("LOCK")).expect("the copy's lock file");
    let marked = salt_free_mark(&crashed);
    std::fs::remove_file(crashed.join("wal.0000000000000001")).expect("the last segment");
    match Database::open(&crashed, options()) {
        Err(Error::CorruptLog { reason, .. }) => assert!(reason.contains("log.durable")),
        other => panic!("the last segment deleted: {:?}", other.map(|_| ())),
    }
    let report = Database::salvage(&crashed, options()).expect("salvage");
    assert!(report.applied, "{report:?}");
    assert!(report.new_log_start > marked, "{report:?}");
    let db = Database::open(&crashed, options()).expect("open after salvage");
    db.close().expect("close");
    Database::open(&crashed, options())
        .expect("open again")
        .close()
        .expect("close");
}

/// Copies a database directory's files (the database is open: this is the state a kill
/// -9 would leave, every acknowledged commit being durable in the log).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

#[test]
fn salvage_keeps_what_precedes_the_damage_and_reports_what_it_discards() {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = dir.path().join("live");
    let crashed = dir.path().join("crashed");
    // A pool that holds the whole table: no page is written after the creation's
    // checkpoint, so salvage's result is exact (pages written after the damage could not
    // be reconciled with the kept log; salvage's table check would report them).
    let options = || Options {
        pool_bytes: 16 << 20,
        ..options()
    };
    let db = Database::open(&live, options()).expect("create");
    let table = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("table");
    let mut session = db.session();
    let keys: Vec<Key> = (0..9000u32)
        .map(|i| session.insert(&table, &i.to_le_bytes()).expect("insert"))
        .collect();
    copy_dir(&live, &crashed);
    drop((session, table));
    db.close().expect("close");
    std::fs::remove_file(crashed.join("LOCK")).expect("the copy's lock file");
    // Damage the first segment; commits go on in the second and third.
    let segment = crashed.join("wal.0000000000000000");
    let mut bytes = std::fs::read(&segment).expect("read");
    let at = bytes.len() / 2;
    bytes[at..at + 64].fill(0xA5);
    std::fs::write(&segment, &bytes).expect("write");
    assert!(matches!(
        Database::open(&crashed, options()),
        Err(Error::CorruptLog { .. })
    ));

    let examined = Database::examine_log(&crashed, options()).expect("examine");
    let damage = examined.damage.clone().expect("damage found");
    assert_eq!(damage.file, "wal.0000000000000000");
    assert!(!examined.applied && examined.copies.is_empty());
    assert!(examined.discarded.commits > 100, "{:?}", examined.discarded);
    assert_eq!(
        std::fs::read(&segment).expect("read"),
        bytes,
        "examining changed nothing"
    );

    let report = Database::salvage(&crashed, options()).expect("salvage");
    assert!(report.applied);
    assert_eq!(report.damage, Some(damage));
    assert!(report.table_faults.is_empty(), "{:?}", report.table_faults);
    assert!(
        report
            .copies
            .contains(&"salvage-1-wal.0000000000000000".to_string())
    );
    assert_eq!(
        std::fs::read(crashed.join("salvage-1-wal.0000000000000000")).expect("copy"),
        bytes,
        "the damaged segment was copied aside as it was"
    );

    let db = Database::open(&crashed, options()).expect("opens after salvage");
    let table = db.table("t").expect("table");
    let mut session = db.session();
    assert!(db.verify_table(&table).is_ok());
    // The rows whose commits preceded the damage are there, in one unbroken prefix.
    let present: Vec<bool> = keys
        .iter()
        .map(|k| session.get(&table, k).expect("get").is_some())
        .collect();
    let kept = present.iter().take_while(|p| **p).count();
    assert!(kept > 100, "only {kept} rows kept");
    assert!(
        present[kept..].iter().all(|p| !p),
        "every commit after the damage is gone"
    );
    assert!(
        keys.len() - kept >= examined.discarded.commits as usize,
        "{} rows gone, {} commits reported discarded",
        keys.len() - kept,
        examined.discarded.commits
    );
    // New keys never collide with rows left on pages by discarded commits.
    for _ in 0..2000 {
        session
            .insert(&table, b"after salvage")
            .expect("insert after salvage");
    }
    drop((session, table));
    db.close().expect("close");
    // A second salvage finds nothing to do.
    let again = Database::salvage(&crashed, options()).expect("salvage again");
    assert_eq!((again.damage, again.applied), (None, false));
}

/// A database in `live` with table `t`, rows of 300 bytes committed until its log reaches
/// `log_bytes`, copied to `copy` while open (what a kill -9 leaves: every acknowledged
/// commit durable in the log), then closed. Returns the keys and the log's end.
fn killed_copy(live: &Path, copy: &Path, options: Options, log_bytes: u64) -> (Vec<Key>, u64) {
    let db = Database::open(live, options).expect("create");
    let table = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("table");
    let mut session = db.session();
    let mut keys = Vec::new();
    while db.log_end().expect("log") < log_bytes {
        keys.push(session.insert(&table, &[3u8; 300]).expect("insert"));
    }
    let log_end = db.log_end().expect("log");
    copy_dir(live, copy);
    drop((session, table));
    db.close().expect("close");
    (keys, log_end)
}

/// A middle segment deleted: the record that runs on into it is where the kept log ends
/// (a salvage that kept it whole failed with "the files changed"), and the report says
/// that the missing bytes' commits cannot be counted.
#[test]
fn salvage_after_a_missing_middle_segment_keeps_the_log_before_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = dir.path().join("live");
    let options = || Options {
        pool_bytes: 32 << 20, // the whole table: no page written after the damage
        durable_marks: false, // the missing bytes are counted without the mark too
        ..options()
    };
    let crashed = dir.path().join("crashed");
    let (keys, log_end) = killed_copy(&live, &crashed, options(), 4 * SEGMENT_BYTES + 4096);
    let mut straddled = 0;
    for middle in 1..=3u64 {
        let case = dir.path().join(format!("case-{middle}"));
        copy_dir(&crashed, &case);
        std::fs::remove_file(case.join("LOCK")).expect("the copy's lock file");
        let missing = format!("wal.{middle:016x}");
        std::fs::remove_file(case.join(&missing)).expect("remove");
        let report = Database::salvage(&case, options()).expect("salvage");
        let damage = report.damage.clone().expect("damage");
        assert!(damage.lsn <= middle * SEGMENT_BYTES, "{damage:?}");
        assert!(damage.reason.contains("missing"), "{damage:?}");
        straddled += u32::from(damage.lsn < middle * SEGMENT_BYTES);
        assert!(
            report.applied && report.table_faults.is_empty(),
            "{report:?}"
        );
        assert!(
            report.discarded.unreadable_bytes >= SEGMENT_BYTES,
            "{missing}: {:?}",
            report.discarded
        );
        let db = Database::open(&case, options()).expect("opens after salvage");
        let table = db.table("t").expect("table");
        let session = db.session();
        let kept = keys
            .iter()
            .take_while(|k| session.get(&table, k).expect("get").is_some())
            .count();
        // Every row whose record lay wholly before the missing segment is kept: the rows
        // are the same size, so about the segments' share of them (a tenth off for the
        // catalog's records and the splits' page images, which are not spread evenly).
        let whole_before = keys.len() as u64 * middle * SEGMENT_BYTES * 9 / (10 * log_end);
        let whole_before = whole_before as usize;
        assert!(
            kept >= whole_before,
            "{missing}: kept {kept} of {}",
            keys.len()
        );
        for key in &keys[kept..] {
            assert!(session.get(&table, key).expect("get").is_none(), "{key:?}");
        }
        drop((session, table));
        db.close().expect("close");
    }
    assert!(straddled > 0, "no record ran on into a missing segment");
}

/// Two segments swapped: their checksums, salted with each record's LSN, say where each
/// belongs, so `examine_log` names both; put back, the database opens with every row.
#[test]
fn swapped_segments_are_named_and_open_once_put_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let live = dir.path().join("live");
    let crashed = dir.path().join("crashed");
    let (keys, _) = killed_copy(&live, &crashed, options(), 2 * SEGMENT_BYTES + 4096);
    std::fs::remove_file(crashed.join("LOCK")).expect("the copy's lock file");
    let (a, b) = (
        crashed.join("wal.0000000000000000"),
        crashed.join("wal.0000000000000001"),
    );
    let swap = || {
        let tmp = crashed.join("swap");
        std::fs::rename(&a, &tmp).expect("rename");
        std::fs::rename(&b, &a).expect("rename");
        std::fs::rename(&tmp, &b).expect("rename");
    };
    swap();
    let report = Database::examine_log(&crashed, options()).expect("examine");
    assert!(report.damage.is_some(), "{report:?}");
    let mut named: Vec<(String, String)> = report
        .misplaced_segments
        .iter()
        .map(|m| (m.file.clone(), m.holds.clone()))
        .collect();
    named.sort();
    assert_eq!(
        named,
        [
            ("wal.0000000000000000".into(), "wal.0000000000000001".into()),
            ("wal.0000000000000001".into(), "wal.0000000000000000".into()),
        ]
    );
    swap();
    let db = Database::open(&crashed, options()).expect("opens once put back");
    let table = db.table("t").expect("table");
    let session = db.session();
    for key in &keys {
        assert!(session.get(&table, key).expect("get").is_some(), "{key:?}");
    }
}

/// A whole log that is damaged elsewhere names no segment as misplaced (a segment renamed
/// for reuse holds old records of a segment before the log's start: not misplaced).
#[test]
fn damage_in_place_names_no_misplaced_segment() {
    let (storage, _) = crashed_database(5);
    damage_middle(&storage, "wal.0000000000000001");
    let dir = tempfile::tempdir().expect("tempdir");
    for name in storage.list().expect("list") {
        std::fs::write(
            dir.path().join(&name),
            storage.read_file(&name).expect("read"),
        )
        .expect("write");
    }
    let report = Database::examine_log(dir.path(), options()).expect("examine");
    assert!(report.damage.is_some(), "{report:?}");
    assert!(report.misplaced_segments.is_empty(), "{report:?}");
}
