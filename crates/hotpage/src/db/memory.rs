//! The database's side of memory-optimized tables (`Layout::Memory`, see
//! `crate::access::memtable`): creating and loading them, and the checkpoint step that saves their
//! rows. A child module of `db` so that these additions stay out of `db.rs`.

use super::{Database, Table, TableHandle};
use crate::access::layout::Layout;
use crate::access::memtable::{MemTable, MemoryUsage};
use crate::catalog::TableEntry;
use crate::error::Result;
use crate::log::Wal;
use crate::storage::Storage;

/// A new table's memory part: a memory table's (empty) rows and file, `None` otherwise.
pub(super) fn create(storage: &dyn Storage, id: usize, layout: Layout) -> Result<Option<MemTable>> {
    match layout {
        Layout::Memory => MemTable::create(storage, id).map(Some),
        _ => Ok(None),
    }
}

/// An existing table's memory part, loaded from its checkpoint file; `unlogged_crash`: the
/// last run had no log and crashed, so the table is emptied (like every other table).
/// Returns it and the rows loaded.
pub(super) fn open(
    storage: &dyn Storage,
    id: usize,
    entry: &mut TableEntry,
    unlogged_crash: bool,
) -> Result<(Option<MemTable>, u64)> {
    if entry.layout != Layout::Memory {
        return Ok((None, 0));
    }
    if unlogged_crash {
        entry.memory_bytes = 0;
    }
    let (table, loaded) = MemTable::open(storage, id, entry.memory_bytes)?;
    Ok((Some(table), loaded))
}

/// The checkpoint's step for memory tables, after it has computed its logical point and
/// before it stores the catalog: every row applied so far (which includes every row of
/// every commit before the logical point) is appended to its table's file and synced.
///
/// The log is made durable between taking the rows and writing them: a row in the file
/// must never outlive its commit record's loss, or an `async` commit could survive a
/// crash in one table and not in another (the data pages obey the same rule through the
/// buffer pool's write-ahead check).
pub(super) fn save(tables: &[TableHandle], wal: Option<&Wal>) -> Result<()> {
    let memory: Vec<&MemTable> = tables.iter().filter_map(|t| t.memory.as_ref()).collect();
    if memory.is_empty() {
        return Ok(());
    }
    for table in &memory {
        table.take_unsaved();
    }
    if let Some(wal) = wal {
        wal.flush_all()?;
    }
    for table in &memory {
        table.write_taken()?;
    }
    Ok(())
}

impl Table {
    /// The synced length of a memory table's checkpoint file, for the catalog (0 for other
    /// layouts).
    pub(super) fn memory_bytes(&self) -> u64 {
        self.memory.as_ref().map_or(0, MemTable::synced_len)
    }
}

impl Database {
    /// A memory table's rows and bytes (a walk of its rows); `None` for a table with pages.
    pub fn memory_usage(&self, table: &TableHandle) -> Option<MemoryUsage> {
        table.memory.as_ref().map(MemTable::usage)
    }
}

#[cfg(test)]
mod tests {
    use crate::access::layout::Layout;
    use crate::log::WalOptions;
    use crate::storage::{CrashMode, MemStorage, Storage};
    use crate::{Database, Durability, Error, Key, KeyKind, Options};
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    fn options(durability: Durability) -> Options {
        Options {
            page_size: 4096,
            pool_bytes: 1 << 20,
            durability,
            wal: WalOptions {
                segment_bytes: 1 << 20,
                buffer_bytes: 1 << 20,
                async_flush_interval: Duration::from_millis(1),
            },
            // Checkpoints only when a test asks.
            checkpoint_log_bytes: u64::MAX,
            checkpoint_interval: Duration::from_secs(3600),
            ..Options::default()
        }
    }

    fn open(storage: &Arc<MemStorage>, durability: Durability) -> Database {
        Database::open_with_storage(
            Arc::clone(storage) as Arc<dyn Storage>,
            Path::new("m"),
            options(durability),
        )
        .expect("open")
    }

    fn table(db: &Database) -> crate::TableHandle {
        match db.table("mem") {
            Ok(t) => t,
            Err(_) => db
                .create_table_with_layout(
                    "mem",
                    "memory",
                    KeyKind::Identity { start: 1, step: 1 },
                    Layout::Memory,
                )
                .expect("create"),
        }
    }

    fn rows(db: &Database) -> Vec<(i64, Vec<u8>)> {
        let t = table(db);
        let mut out = Vec::new();
        db.session()
            .scan(&t, None, |k, v| {
                let key = Key::from_bytes(k).expect("key").to_i64().expect("int");
                out.push((key, v.to_vec()));
                true
            })
            .expect("scan");
        out
    }

    #[test]
    fn a_memory_table_has_no_pages_and_no_page_log_records() {
        let mem = MemStorage::new(1);
        let db = open(&mem, Durability::Sync);
        let pages_before = db.pool_info().file_pages;
        let t = table(&db);
        let mut s = db.session();
        for i in 0..500u32 {
            s.insert(&t, &i.to_le_bytes()).expect("insert");
        }
        db.checkpoint().expect("checkpoint");
        assert_eq!(db.pool_info().file_pages, pages_before, "no page allocated");
        assert!(db.table_pages(&t).expect("pages").is_empty());
        assert!(db.tables()[0].roots.is_empty());
        assert!(t.tree_for(Key::from_i64(1).as_bytes()).is_err());
        let shape = db.verify_table(&t).expect("verify");
        assert_eq!((shape.rows, shape.pages(), shape.levels), (500, 0, 0));
        let usage = db.memory_usage(&t).expect("memory table");
        assert_eq!(
            (usage.rows, usage.key_bytes, usage.row_bytes),
            (500, 4000, 2000)
        );
        assert_eq!(usage.file, "mem.0");
        assert!(usage.file_bytes > 500 * 12);
        let log = db.log_summary().expect("log");
        let kinds: Vec<&str> = log.kinds.iter().map(|k| k.kind).collect();
        assert!(
            kinds.iter().all(|k| !k.starts_with("page")),
            "page records logged: {kinds:?}"
        );
        // Nothing was waited on but the log.
        let waits = db.stats().top_waits();
        assert!(
            waits
                .iter()
                .all(|(w, _)| *w == crate::stats::WaitType::WriteLog),
            "{waits:?}"
        );
    }

    #[test]
    fn rows_older_than_the_logical_point_come_back_from_the_file_alone() {
        let mut mem = MemStorage::new(2);
        let mut expected = Vec::new();
        {
            let db = open(&mem, Durability::Sync);
            let t = table(&db);
            let mut s = db.session();
            let mut insert = |s: &mut crate::Session, i: u32| {
                let row = vec![i as u8; 500 + (i % 400) as usize];
                let key = s.insert(&t, &row).expect("insert");
                expected.push((key.to_i64().expect("int"), row));
            };
            // Over two log segments of rows, then a checkpoint: the rows go to the file and
            // the segments before the logical point are released.
            for i in 0..3000u32 {
                insert(&mut s, i);
            }
            db.checkpoint().expect("checkpoint");
            // More log reuses the released segments: the first rows' commit records are
            // overwritten.
            for i in 0..2500u32 {
                insert(&mut s, i);
            }
            assert!(db.log_counters().expect("log").segments_recycled > 0);
            s.begin().expect("begin");
            for i in 0..3u32 {
                let row = i.to_le_bytes().to_vec();
                let key = s.insert(&t, &row).expect("insert");
                expected.push((key.to_i64().expect("int"), row));
            }
            s.commit().expect("commit");
            s.begin().expect("begin");
            s.insert(&t, b"rolled back").expect("insert");
            s.rollback().expect("rollback");
            s.begin().expect("begin");
            s.insert(&t, b"never committed").expect("insert");
            mem = mem.reboot(CrashMode::Torn, 3).expect("reboot");
        }
        let db = open(&mem, Durability::Sync);
        let report = db.recovery_report().clone();
        assert_eq!(report.memory_rows_loaded, 3000, "{report:?}");
        assert_eq!(report.rows_reapplied, 2503, "{report:?}");
        assert_eq!(rows(&db), expected);
        assert_eq!(db.tables()[0].rows, expected.len() as u64);
        // After the recovery's checkpoint the three re-applied rows are in the file too.
        drop(db);
        let mem = mem.reboot(CrashMode::DropAll, 4).expect("reboot");
        let db = open(&mem, Durability::Sync);
        assert_eq!(db.recovery_report().memory_rows_loaded, 5503);
        assert_eq!(rows(&db), expected);
        // New keys continue after the old ones.
        let t = table(&db);
        let next = db.session().insert(&t, b"next").expect("insert");
        assert!(next.to_i64() > expected.last().map(|(k, _)| *k));
    }

    #[test]
    fn async_rows_in_the_file_never_outlive_their_commit_record() {
        // A memory row and a B+tree row in one async transaction: after any crash, both or
        // neither.
        for seed in 0..20 {
            let mut mem = MemStorage::new(seed);
            {
                let db = open(&mem, Durability::Async);
                let t = table(&db);
                let tree = db
                    .create_table("tree", "identity", KeyKind::Identity { start: 1, step: 1 })
                    .expect("create");
                let mut s = db.session();
                for i in 0..50u32 {
                    s.begin().expect("begin");
                    s.insert(&t, &i.to_le_bytes()).expect("insert");
                    s.insert(&tree, &i.to_le_bytes()).expect("insert");
                    s.commit().expect("commit");
                    if i % 17 == 0 {
                        db.checkpoint().expect("checkpoint");
                    }
                }
                let mode =
                    [CrashMode::DropAll, CrashMode::Reorder, CrashMode::Torn][seed as usize % 3];
                mem = mem.reboot(mode, seed + 100).expect("reboot");
            }
            let db = open(&mem, Durability::Async);
            let tree = db.table("tree").expect("tree");
            let mut tree_rows = Vec::new();
            db.session()
                .scan(&tree, None, |_, v| {
                    tree_rows.push(v.to_vec());
                    true
                })
                .expect("scan");
            let memory_rows: Vec<Vec<u8>> = rows(&db).into_iter().map(|(_, v)| v).collect();
            assert_eq!(memory_rows, tree_rows, "seed {seed}");
            // Checkpointed commits are all there.
            assert!(
                memory_rows.len() >= 35,
                "seed {seed}: {}",
                memory_rows.len()
            );
        }
    }

    #[test]
    fn unlogged_rows_survive_a_clean_close_and_are_emptied_by_a_crash() {
        let mem = MemStorage::new(5);
        {
            let db = open(&mem, Durability::None);
            let t = table(&db);
            let mut s = db.session();
            for i in 0..100u32 {
                s.insert(&t, &i.to_le_bytes()).expect("insert");
            }
            drop(s);
            drop(t);
            db.close().expect("close");
        }
        let mem = mem.reboot(CrashMode::DropAll, 6).expect("reboot");
        let db = open(&mem, Durability::None);
        assert_eq!(rows(&db).len(), 100);
        let t = table(&db);
        db.session().insert(&t, b"more").expect("insert");
        db.checkpoint().expect("checkpoint");
        drop(t);
        let mem = mem.reboot(CrashMode::DropAll, 7).expect("reboot");
        drop(db);
        let db = open(&mem, Durability::None);
        assert!(db.recovery_report().unlogged_tables_emptied);
        assert_eq!(rows(&db), Vec::new());
        assert_eq!(db.tables()[0].rows, 0);
        assert_eq!(db.verify_table(&table(&db)).expect("verify").rows, 0);
    }

    #[test]
    fn a_damaged_checkpoint_file_is_a_corrupt_file_error_at_open() {
        let mem = MemStorage::new(8);
        {
            let db = open(&mem, Durability::Sync);
            let t = table(&db);
            let mut s = db.session();
            for i in 0..50u32 {
                s.insert(&t, &i.to_le_bytes()).expect("insert");
            }
            drop(s);
            drop(t);
            db.close().expect("close");
        }
        let file = mem
            .open(&crate::format::memtable_file_name(0), false)
            .expect("file");
        let mut byte = [0u8; 1];
        file.read_at(&mut byte, 100).expect("read");
        file.write_at(&[byte[0] ^ 0x40], 100).expect("write");
        let err = Database::open_with_storage(
            Arc::clone(&mem) as Arc<dyn Storage>,
            Path::new("m"),
            options(Durability::Sync),
        )
        .expect_err("opened a damaged file");
        match err {
            Error::CorruptFile { file, .. } => assert_eq!(file, "mem.0"),
            other => panic!("{other}"),
        }
    }
}
