//! Read-only views of a database for reports, `hotpage inspect` and `hotpage check`: page
//! images, which table owns a page, and the wait statistics of the last stress run, kept
//! with the database (in `last-run.json`, written through [`Storage`] like the catalog).
//!
//! A child module of `db` so that these additions stay out of `db.rs`.

use super::{Database, RecoveryReport, TableHandle};
use crate::access::TreePage;
use crate::access::memtable::MemoryUsage;
use crate::error::{Error, Result};
use crate::format::{self, PageId};
use crate::page::PageType;
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// Where a page lies: its data file (`data.N`) and its number in that file, the form
/// reports show (`FILE:PAGE`). The one translation between page ids ([`PageId`]) and what a
/// user reads or types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageLocation {
    /// The data file's number (`data.0` is 0).
    pub file: u32,
    /// The page's number within that file.
    pub page: u64,
}

impl PageLocation {
    /// Where the page with id `page_id` lies.
    pub fn of(page_id: PageId) -> PageLocation {
        PageLocation {
            file: page_id.file(),
            page: page_id.number(),
        }
    }

    /// The page id of this location (links in pages and the JSON reports hold its
    /// [`PageId::to_raw`] form). A location no page id can name (a page number past 40
    /// bits, a file number past 24) is [`PageId::NONE`], which names no page of any
    /// database.
    pub fn page_id(self) -> PageId {
        PageId::checked_new(self.file, self.page).unwrap_or(PageId::NONE)
    }

    /// The name of its data file in the database directory (`data.N`).
    pub fn file_name(self) -> String {
        format::data_file_name(self.file)
    }

    /// Parses `FILE:PAGE`, FILE being a number N or a data file name `data.N`, or a bare
    /// page id (file 0's page ids are its page numbers). `None` for anything else.
    pub fn parse(text: &str) -> Option<PageLocation> {
        let Some((file, page)) = text.split_once(':') else {
            let raw = text.trim().parse().ok()?;
            return Some(PageLocation::of(PageId::from_raw(raw)));
        };
        let file = file.trim();
        let file = match format::parse_data_file_name(file) {
            Some(number) => number,
            None => file.parse().ok()?,
        };
        let page = page.trim().parse().ok()?;
        Some(PageLocation { file, page })
    }
}

impl std::fmt::Display for PageLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.page)
    }
}

/// A table as `inspect tables` lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct TableSummary {
    /// The table's name.
    pub name: String,
    /// The design it was created with.
    pub design: String,
    /// Rows (as counted by sessions).
    pub rows: u64,
    /// Its first root page; `None` for a memory table, which has no pages.
    pub root: Option<PageLocation>,
    /// A memory table's figures; `None` for a table with pages.
    pub memory: Option<MemoryUsage>,
    /// Unlogged (`TableSpec::unlogged`): a crash empties it.
    pub unlogged: bool,
}

/// What the log holds and what recovery did at this open (`inspect log`).
#[derive(Clone, Debug)]
pub struct LogReport {
    /// The log's records by kind.
    pub summary: LogSummary,
    /// What this open's recovery did.
    pub recovery: RecoveryReport,
}

/// The file that keeps the last stress run's statistics.
pub const RUN_STATS_FILE: &str = "last-run.json";
const RUN_STATS_TMP_FILE: &str = "last-run.json.tmp";
/// The largest run-statistics file [`Database::load_run_stats`] reads.
pub const RUN_STATS_BYTES_MAX: u64 = 16 << 20;

/// The table a page belongs to, and what the page is there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageOwner {
    /// The owning table's name.
    pub table: String,
    /// Leaf or inner.
    pub page_type: PageType,
    /// 0 for leaves.
    pub level: u8,
}

impl Database {
    /// Every table with its design, rows and root page, in creation order.
    pub fn table_summaries(&self) -> Vec<TableSummary> {
        self.tables()
            .into_iter()
            .map(|t| {
                let memory = self.table(&t.name).ok().and_then(|h| self.memory_usage(&h));
                TableSummary {
                    root: memory.is_none().then(|| PageLocation::of(t.root_page)),
                    name: t.name,
                    design: t.design,
                    rows: t.rows,
                    memory,
                    unlogged: t.unlogged,
                }
            })
            .collect()
    }

    /// The log's records by kind ([`Database::log_summary`]) and this open's recovery.
    pub fn log_report(&self) -> Result<LogReport> {
        Ok(LogReport {
            summary: self.log_summary()?,
            recovery: self.recovery_report().clone(),
        })
    }

    /// A page image as it is in the data file, verified (checksum, page id, slot directory):
    /// a damaged page is `CorruptPage`. Reads the file, not the pool: call
    /// [`Database::checkpoint`] first to see changes still in memory.
    pub fn page_image(&self, page_id: PageId) -> Result<Vec<u8>> {
        self.inner.pool.read_page_image(page_id)
    }

    /// A page image as it is in the data file, not verified (to show a damaged page; see
    /// [`crate::page::verify`]). Past the end of the file is `CorruptPage`.
    pub fn raw_page_image(&self, page_id: PageId) -> Result<Vec<u8>> {
        self.inner.pool.read_page_raw(page_id)
    }

    /// The pages that, as the data files held them when this database was opened (before
    /// recovery, which a read-only open keeps in memory), verify and carry an LSN past the
    /// end of the log, as `(page id, LSN)`. A page reaches the disk only once the log is
    /// durable up to its LSN, so each one means log records are gone: a lost tail of the
    /// log, which leaves no trace in the segments before it. Recovery rewrites such pages
    /// from the log's older images, so only the files as they were can show it: meaningful
    /// for a read-only open (`hotpage check`). Reads every page of every data file.
    pub fn pages_past_log_end(&self) -> Result<Vec<(PageId, u64)>> {
        let Some(end) = self.log_end() else {
            return Ok(Vec::new());
        };
        let page_size = self.page_size() as u64;
        let mut found = Vec::new();
        let mut image = vec![0u8; self.page_size()];
        for file in 0..self.data_files() {
            let name = crate::format::data_file_name(file);
            let read = |image: &mut [u8], at: u64| {
                let handle = self.inner.disk.open(&name, false)?;
                let pages = handle.len()? / page_size;
                if at >= pages {
                    return Ok(false);
                }
                handle.read_at(image, at * page_size).map(|()| true)
            };
            let mut number = 0u64;
            while read(&mut image, number).map_err(|e| Error::io(format!("reading {name}"), e))? {
                let page_id = PageId::new(file, number);
                if crate::page::verify(&image, page_id).is_ok()
                    && let Some(lsn) = crate::page::image_lsn(&image)
                    && lsn > end
                {
                    found.push((page_id, lsn));
                }
                number += 1;
            }
        }
        Ok(found)
    }

    /// Every page of a table: its B+trees' (partition by partition, or a heap's index),
    /// then its heap pages (a walk; meant for a quiescent table).
    pub fn table_pages(&self, table: &TableHandle) -> Result<Vec<TreePage>> {
        let mut pages = Vec::new();
        for tree in table.trees() {
            pages.extend(tree.pages()?);
        }
        if let Some(heap) = table.heap() {
            pages.extend(heap.pages()?.into_iter().map(|page_id| TreePage {
                page_id,
                page_type: PageType::Heap,
                level: 0,
            }));
        }
        Ok(pages)
    }

    /// The table that owns `page_id`, or `None` when no table's tree reaches it. Walks
    /// every table; for many pages use [`Database::page_owners`].
    pub fn page_owner(&self, page_id: PageId) -> Result<Option<PageOwner>> {
        Ok(self.page_owners(&[page_id])?.pop().flatten())
    }

    /// The owners of several pages, in the order asked, with one walk of each table.
    pub fn page_owners(&self, page_ids: &[PageId]) -> Result<Vec<Option<PageOwner>>> {
        let mut found: HashMap<PageId, PageOwner> = HashMap::new();
        let tables = self.inner.tables.read().clone();
        for table in &tables {
            if found.len() == page_ids.len() {
                break;
            }
            for page in self.table_pages(table)? {
                if page_ids.contains(&page.page_id) {
                    found.entry(page.page_id).or_insert_with(|| PageOwner {
                        table: table.name.clone(),
                        page_type: page.page_type,
                        level: page.level,
                    });
                }
            }
        }
        Ok(page_ids.iter().map(|id| found.get(id).cloned()).collect())
    }

    /// Keeps the statistics of a run (opaque bytes; the command stores JSON) with the
    /// database, replacing the previous ones atomically (write a temporary file, fdatasync,
    /// rename, fsync the directory).
    pub fn save_run_stats(&self, bytes: &[u8]) -> Result<()> {
        let storage = &self.inner.storage;
        let io = |what: &str, e| Error::io(format!("{what} {RUN_STATS_FILE}"), e);
        let file = storage
            .open(RUN_STATS_TMP_FILE, true)
            .map_err(|e| io("creating", e))?;
        file.set_len(0).map_err(|e| io("truncating", e))?;
        file.write_at(bytes, 0).map_err(|e| io("writing", e))?;
        file.sync_data().map_err(|e| io("syncing", e))?;
        drop(file);
        storage
            .rename(RUN_STATS_TMP_FILE, RUN_STATS_FILE)
            .map_err(|e| io("renaming", e))?;
        storage
            .sync_dir()
            .map_err(|e| io("syncing the directory of", e))
    }

    /// The statistics last saved with [`Database::save_run_stats`], or `None` if no run
    /// saved any.
    pub fn load_run_stats(&self) -> Result<Option<Vec<u8>>> {
        let storage = &self.inner.storage;
        let io = |what: &str, e| Error::io(format!("{what} {RUN_STATS_FILE}"), e);
        if !storage
            .exists(RUN_STATS_FILE)
            .map_err(|e| io("looking for", e))?
        {
            return Ok(None);
        }
        let file = storage
            .open(RUN_STATS_FILE, false)
            .map_err(|e| io("opening", e))?;
        let len = file.len().map_err(|e| io("reading the length of", e))?;
        if len > RUN_STATS_BYTES_MAX {
            return Err(Error::NotADatabase {
                path: self.inner.path.clone(),
                reason: format!("{RUN_STATS_FILE} is {len} bytes, more than a run writes"),
            });
        }
        let mut bytes = vec![0u8; len as usize];
        file.read_at(&mut bytes, 0).map_err(|e| io("reading", e))?;
        Ok(Some(bytes))
    }
}

/// Log records of one kind, for `inspect log` (fn_dblog).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogKindCount {
    /// The record kind's name.
    pub kind: &'static str,
    /// Records in the retained log files.
    pub records: u64,
    /// Their bytes (headers and padding included).
    pub bytes: u64,
    /// Records at or after the last checkpoint's redo point.
    pub records_since_checkpoint: u64,
    /// Their bytes.
    pub bytes_since_checkpoint: u64,
}

/// What the log files hold, by record kind.
#[derive(Clone, Debug, Default)]
pub struct LogSummary {
    /// Where the retained log starts (the oldest segment still on disk from which every
    /// segment up to the end's is there).
    pub from_lsn: u64,
    /// The last checkpoint's redo point: recovery would start here.
    pub redo_lsn: u64,
    /// The end of the valid log.
    pub end_lsn: u64,
    /// One entry per record kind seen.
    pub kinds: Vec<LogKindCount>,
}

impl Database {
    /// A reader of the log, the LSN of the oldest retained segment from which every one up
    /// to the last is there, and the log's end: the range the log reports read.
    pub(crate) fn retained_log(&self) -> Result<(crate::log::LogReader<'_>, u64, u64)> {
        let inner = &self.inner;
        let log_end = match &inner.wal {
            Some(wal) => wal.end(),
            None => inner.checkpoint_lock.lock().last_end,
        };
        let seg = inner.log_segment_bytes;
        let reader = crate::log::LogReader::new(&*inner.storage, seg, inner.log_salt);
        let segments = crate::log::list_segments(&*inner.storage)?;
        // The oldest segment from which every one up to the last is there. The last is the
        // newest file at or before the end's segment: the end (reserved, not yet written)
        // may lie in a segment the flusher has not created yet, and then the log on disk
        // still ends in the one before (taking the end's own segment missed every record).
        let last = segments
            .iter()
            .rev()
            .find(|i| **i <= log_end / seg)
            .copied();
        let from_lsn = match last {
            Some(mut oldest) => {
                while oldest > 0 && segments.binary_search(&(oldest - 1)).is_ok() {
                    oldest -= 1;
                }
                oldest * seg
            }
            None => log_end,
        };
        Ok((reader, from_lsn, log_end))
    }

    /// Reads the retained log segments (the oldest run of them that reaches the log's end)
    /// and counts records by kind, in all and since the last checkpoint's redo point
    /// (fn_dblog's view). Empty for a database without a log.
    pub fn log_summary(&self) -> Result<LogSummary> {
        let redo_lsn = self.inner.redo_lsn.load(Ordering::SeqCst);
        let (reader, from_lsn, log_end) = self.retained_log()?;
        let mut kinds: Vec<LogKindCount> = Vec::new();
        let mut end_lsn = from_lsn;
        reader.records_between(from_lsn, log_end, |record| {
            end_lsn = record.end;
            let name = record.kind.name();
            let index = match kinds.iter().position(|k| k.kind == name) {
                Some(index) => index,
                None => {
                    kinds.push(LogKindCount {
                        kind: name,
                        ..LogKindCount::default()
                    });
                    kinds.len() - 1
                }
            };
            let entry = &mut kinds[index];
            let bytes = record.end - record.lsn;
            entry.records += 1;
            entry.bytes += bytes;
            if record.lsn >= redo_lsn {
                entry.records_since_checkpoint += 1;
                entry.bytes_since_checkpoint += bytes;
            }
            Ok(())
        })?;
        kinds.sort_by_key(|k| std::cmp::Reverse(k.bytes));
        Ok(LogSummary {
            from_lsn,
            redo_lsn,
            end_lsn,
            kinds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::PageLocation;
    use crate::storage::{MemStorage, Storage};
    use crate::{Database, Error, KeyKind, Options, PageId};
    use std::path::Path;
    use std::sync::Arc;

    /// The log's end (reserved) may lie in a segment no file holds yet: async commits not
    /// flushed yet. The summary still reads the segments on disk (it once read nothing).
    #[test]
    fn the_log_summary_reads_the_disk_when_the_end_is_in_an_unwritten_segment() {
        let mem = MemStorage::new(8);
        let options = Options {
            page_size: 4096,
            pool_bytes: 4 << 20,
            durability: crate::Durability::Async,
            wal: crate::WalOptions {
                segment_bytes: 1 << 20,
                buffer_bytes: 16 << 20,
                async_flush_interval: std::time::Duration::from_secs(3600),
            },
            ..Options::default()
        };
        let db = Database::open_with_storage(mem.clone(), Path::new("mem"), options).expect("open");
        let t = db
            .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
            .expect("create");
        let segment_files = || {
            mem.list()
                .expect("list")
                .iter()
                .filter(|n| n.starts_with("wal."))
                .count()
        };
        let mut s = db.session();
        // One durable commit: segment 0 is on disk.
        s.set_durability(crate::Durability::Sync).expect("sync");
        s.insert(&t, &[1u8; 200]).expect("a durable insert");
        s.set_durability(crate::Durability::Async).expect("async");
        let on_disk = segment_files();
        assert_eq!(on_disk, 1, "the durable commit's segment");
        for _ in 0..8_000 {
            s.insert(&t, &[1u8; 200]).expect("insert");
        }
        let end = db.log_end().expect("a log");
        assert!(end >= 1 << 20, "appended into the second segment");
        if segment_files() > on_disk {
            return; // the flusher ran after all (a timer cannot be ruled out): no case here
        }
        let summary = db.log_summary().expect("summary");
        assert!(
            !summary.kinds.is_empty(),
            "the records on disk were not read: {summary:?}"
        );
    }

    #[test]
    fn page_owners_name_the_table_type_and_level() {
        let mem = MemStorage::new(7);
        let options = Options {
            page_size: 4096,
            pool_bytes: 1 << 20,
            ..Options::default()
        };
        let db = Database::open_with_storage(mem, Path::new("mem"), options).expect("open");
        let a = db
            .create_table("a", "identity", KeyKind::Identity { start: 1, step: 1 })
            .expect("create");
        let b = db.create_table("b", "guid", KeyKind::GuidV4).expect("b");
        let mut s = db.session();
        for _ in 0..2000 {
            s.insert(&a, &[1u8; 40]).expect("insert");
        }
        s.insert(&b, b"x").expect("insert");
        let pages = db.table_pages(&a).expect("pages");
        assert!(pages.len() > 10);
        let leaf = pages.iter().find(|p| p.level == 0).expect("a leaf").page_id;
        let owners = db
            .page_owners(&[
                a.root_page(),
                leaf,
                b.root_page(),
                PageId::new(0, 0),
                PageId::new(1, 0),
            ])
            .expect("owners");
        let got: Vec<_> = owners
            .iter()
            .map(|o| {
                o.as_ref()
                    .map(|o| (o.table.as_str(), o.page_type.name(), o.level))
            })
            .collect();
        assert_eq!(
            got,
            vec![
                Some(("a", "inner", 1)),
                Some(("a", "leaf", 0)),
                Some(("b", "leaf", 0)),
                None,
                None
            ]
        );
        assert_eq!(
            db.page_owner(leaf).expect("owner").map(|o| o.table),
            Some("a".into())
        );
        // Leaves of an ascending table are allocated in key order: no fragmentation.
        assert_eq!(db.verify_table(&a).expect("verify").out_of_order_leaves, 0);
    }

    #[test]
    fn page_locations_and_page_ids_translate_both_ways() {
        let id = PageId::new(2, 9);
        let at = PageLocation::of(id);
        assert_eq!(
            (at.file, at.page, at.to_string()),
            (2, 9, "2:9".to_string())
        );
        assert_eq!(at.page_id(), id);
        assert_eq!(PageLocation::parse("data.2:9"), Some(at));
        // A bare number is a page id as JSON links hold it: file 2's ids are past 2^41.
        assert_eq!(PageLocation::parse(&id.to_raw().to_string()), Some(at));
        // A location no page id can name is no page, never another page.
        for far in [
            PageLocation {
                file: 0,
                page: 1 << 40,
            },
            PageLocation {
                file: u32::MAX,
                page: 1,
            },
        ] {
            assert_eq!(far.page_id(), PageId::NONE);
        }
    }

    #[test]
    fn run_stats_round_trip_and_the_database_still_opens() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        {
            let db = Database::open(&path, Options::default()).expect("open");
            assert_eq!(db.load_run_stats().expect("load"), None);
            db.save_run_stats(b"{\"waits\": [1, 2]}").expect("save");
            db.save_run_stats(b"{}").expect("save again");
            assert_eq!(db.load_run_stats().expect("load"), Some(b"{}".to_vec()));
            db.close().expect("close");
        }
        let db = Database::open(&path, Options::default()).expect("reopen with extra files");
        assert_eq!(db.load_run_stats().expect("load"), Some(b"{}".to_vec()));
    }

    #[test]
    fn a_second_open_of_a_locked_database_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        let db = Database::open(&path, Options::default()).expect("open");
        let err = Database::open(&path, Options::default()).expect_err("opened twice");
        assert!(matches!(err, Error::Locked { .. }), "{err}");
        db.close().expect("close");
        let db = Database::open(&path, Options::default()).expect("lock released at close");
        drop(db);
        // In-memory storage has nothing to lock.
        let mem: Arc<MemStorage> = MemStorage::new(1);
        let first = Database::open_with_storage(mem.clone(), Path::new("m"), Options::default());
        assert!(first.is_ok());
    }
}
