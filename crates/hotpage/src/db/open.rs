//! Opening a database, as named steps in the order they run:
//!
//! 1. **Lock** the directory (shared for a read-only open).
//! 2. **Catalog, or an atomic creation.** A new database first makes a `creating` marker
//!    durable; only then do its data files appear, and the marker goes only after the first
//!    catalog is durable. A kill at any moment leaves either a whole database (a catalog)
//!    or a directory the next open recognises as an interrupted creation and starts again;
//!    never a directory that no command opens.
//! 3. **Find the log's end and prove it** (`crate::log::LogReader::find_end`): damage, a missing
//!    segment or a log short of the last checkpoint is `CorruptLog`, before anything is
//!    changed on disk.
//! 4. **Redo** page records into the pool (`recovery::redo`).
//! 5. **Open the log** for appending (it clears the torn tail past the end).
//! 6. **Open the tables**, then **re-apply** committed transactions whose rows had not
//!    reached their pages, and recount rows.
//! 7. **Checkpoint** the recovered state, and finish a creation.
//!
//! A read-only open runs the same steps over an [`OverlayStorage`]: every write (redo's
//! page write-back, the torn tail's truncation, a recovered unlogged run's new files) lands
//! in memory, and the files keep every byte. It opens no log for appending and takes no
//! checkpoint.

use super::{
    CheckpointState, Database, Inner, Options, RecoveryReport, StopSignal, Table, TableHandle,
    memory, remove_data_files, routing,
};
use crate::access::btree::BTree;
use crate::access::heap::Heap;
use crate::access::keys::KeyGenerator;
use crate::buffer::{self, BufferPool, Placement};
use crate::catalog::{Catalog, TableEntry};
use crate::error::{Error, Result};
use crate::format::{
    CREATING_FILE, DATA_FILE, LOCK_FILE, LOG_FORMAT_VERSION, LOGICAL_LEAVES_FORMAT_VERSION, PageId,
    TXN_NAMES_FORMAT_VERSION,
};
use crate::log::{LogReader, Lsn, Wal, WalStart};
use crate::page;
use crate::recovery::{self, RedoOutcome};
use crate::stats::Stats;
use crate::storage::{OverlayStorage, StdStorage, Storage};
use crate::txn::Durability;
use parking_lot::{Mutex, RwLock};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

fn not_a_database(path: &Path, reason: &str) -> Error {
    Error::NotADatabase {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// Refuses a path that is a file, or that does not exist unless it may be created: not a
/// hotpage database (the CLI's exit 3), before anything reads it.
pub(super) fn check_directory(path: &Path, may_create: bool) -> Result<()> {
    if path.exists() && !path.is_dir() {
        return Err(not_a_database(path, "it is a file, not a directory"));
    }
    if !path.exists() && !may_create {
        return Err(not_a_database(path, "no such directory"));
    }
    Ok(())
}

/// How the log is read back at open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LogPolicy {
    /// Damage is an error, and nothing is changed.
    Strict,
    /// Salvage: replay the log up to `until` (where damage was found) and append from
    /// `append_from`, past everything the old log's files held (see `salvage`).
    Truncated { until: u64, append_from: u64 },
}

impl Database {
    /// Opens (or, with `create_if_missing`, creates) the database in directory `path`,
    /// recovering from a crash if the last run did not close cleanly. With
    /// `Options::read_only` it changes nothing on disk and works on a read-only mount.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Database> {
        let path = path.as_ref();
        check_directory(path, options.create_if_missing && !options.read_only)?;
        validate_options(&options)?;
        let opened = if options.read_only {
            StdStorage::open_dir_read_only(path)
        } else {
            StdStorage::open_dir(path, options.create_if_missing)
        };
        let storage =
            opened.map_err(|e| Error::io(format!("opening directory {}", path.display()), e))?;
        Database::open_with_storage(Arc::new(storage), path, options)
    }

    /// Opens a database over any [`Storage`] (tests use the fault-injecting one); `path`
    /// only names it in messages.
    pub fn open_with_storage(
        storage: Arc<dyn Storage>,
        path: &Path,
        options: Options,
    ) -> Result<Database> {
        open_steps(storage, path, options, LogPolicy::Strict)
    }
}

/// Checks the options before anything is created.
fn validate_options(options: &Options) -> Result<()> {
    page::validate_page_size(options.page_size).map_err(Error::InvalidOption)?;
    buffer::validate_data_files(options.data_files).map_err(Error::InvalidOption)?;
    options.wal.validate()?;
    if !options.replay_log && !options.read_only {
        return Err(Error::InvalidOption(
            "replay_log off needs read_only: a database that skipped its log must not be \
             written"
                .into(),
        ));
    }
    if options.txn_memory_bytes_max == 0 {
        return Err(Error::InvalidOption(
            "txn_memory_bytes_max must be at least 1".into(),
        ));
    }
    validate_pool_bytes(options.pool_bytes).map_err(Error::InvalidOption)
}

/// Refuses a buffer pool larger than the machine's memory. The pool's frames are
/// allocated at open: such a pool would take all of the memory (and the machine) before
/// the first page is read.
pub fn validate_pool_bytes(pool_bytes: usize) -> std::result::Result<(), String> {
    match physical_memory_bytes() {
        Some(memory) if pool_bytes > memory => Err(format!(
            "a buffer pool of {} MiB is more than this machine's memory ({} MiB): choose a \
             smaller pool (a quarter of the memory is a common choice)",
            pool_bytes >> 20,
            memory >> 20
        )),
        _ => Ok(()),
    }
}

/// The machine's physical memory, where the system says.
fn physical_memory_bytes() -> Option<usize> {
    // SAFETY: sysconf only reads system configuration; it has no preconditions.
    let (pages, page_bytes) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let pages = usize::try_from(pages).ok().filter(|&p| p > 0)?;
    let page_bytes = usize::try_from(page_bytes).ok().filter(|&b| b > 0)?;
    Some(pages.saturating_mul(page_bytes))
}

/// Every step of an open (see the module docs).
pub(super) fn open_steps(
    storage: Arc<dyn Storage>,
    path: &Path,
    options: Options,
    policy: LogPolicy,
) -> Result<Database> {
    validate_options(&options)?;
    let started = Instant::now();
    let disk = Arc::clone(&storage);
    let storage: Arc<dyn Storage> = if options.read_only {
        Arc::new(OverlayStorage::new(storage))
    } else {
        storage
    };
    let (mut catalog, creating) = lock_and_load_catalog(&*storage, path, &options)?;
    let mut report = RecoveryReport::default();
    let stats = Stats::new();
    let (pool, data_existed) =
        open_data_files(&*storage, path, &catalog, &options, &stats, &mut report)
            .map_err(damage_unless(creating))?;
    let redo = recover_pages(&*storage, &catalog, &pool, &options, policy)?;
    report.records = redo.records;
    report.log_bytes = redo.end - catalog.redo_lsn.min(redo.end);
    report.pages_redone = redo.images + redo.inserts_applied;
    report.torn_log_bytes = redo.torn_bytes;
    let truncates_settled = resolve_pending_truncates(&mut catalog, &redo);
    let append_from = append_point(policy, &redo);
    let wal = open_log(&storage, &catalog, &options, &pool, &stats, append_from)?;
    let redo_lsn = Arc::new(AtomicU64::new(append_from));
    let tables = open_tables(
        &*storage,
        path,
        &mut catalog,
        &pool,
        &stats,
        &wal,
        &redo_lsn,
        &redo,
        &mut report,
        // Streams that differ from the previous open's (whose keys may be in the tables),
        // yet replay: the log's end is the same for the same history.
        options
            .key_seed
            .map(|seed| seed ^ append_from.rotate_left(17)),
    )?;
    if policy != LogPolicy::Strict {
        keys_past_every_row(&tables)?;
    }
    // Rows may be gone knowingly after a salvage, or a truncation that settled here.
    let lossy = policy != LogPolicy::Strict || truncates_settled;
    let recount = Recount { creating, lossy };
    reapply_and_recount(&*storage, &catalog, &redo, &tables, recount, &mut report)?;
    report.elapsed = started.elapsed();
    let recovered = !creating && (redo.records > 0 || catalog.unlogged_open || truncates_settled);
    let db = Database {
        inner: Arc::new(Inner {
            path: path.to_path_buf(),
            storage,
            disk,
            stop: Arc::clone(pool.fail_stop()),
            pool,
            stats,
            tables: RwLock::new(tables),
            metadata: Mutex::new(catalog.metadata.clone()),
            durability: options.durability,
            wal,
            redo_lsn,
            log_start: AtomicU64::new(catalog.logical_lsn.min(catalog.redo_lsn)),
            log_salt: catalog.log_salt,
            log_segment_bytes: log_segment_bytes(&catalog, &options),
            appliers: Mutex::new(Vec::new()),
            group_apply: Default::default(),
            checkpoint_lock: Mutex::new(CheckpointState::opened_at(append_from)),
            truncate_swaps: Mutex::new(Vec::new()),
            staged: Arc::default(),
            next_session_id: AtomicU64::new(1),
            txn_names: Mutex::new(names_known_from(&catalog, append_from)),
            read_only: options.read_only,
            options,
            recovery: report,
            stop_signal: Arc::new(StopSignal::default()),
            checkpointer: Mutex::new(None),
            closed: AtomicBool::new(false),
            #[cfg(test)]
            hooks: Default::default(),
        }),
    };
    let checkpoint_needed =
        recovered || !data_existed || policy != LogPolicy::Strict || must_rewrite(&catalog);
    finish_open(&db, creating, checkpoint_needed)?;
    Ok(db)
}

/// Settles the truncations the catalog lists as pending (format 9; see
/// `catalog::PendingTruncate`): each whose transaction's commit the log holds takes effect
/// (the old table dropped, the new, empty one live); each other never happened, as the
/// entries already read. Returns true if there were any: the open then checkpoints before
/// any session starts, so that no new transaction reuses a settled one's id (ids restart
/// with each open) while a catalog that names it is the last one on disk.
fn resolve_pending_truncates(catalog: &mut Catalog, redo: &RedoOutcome) -> bool {
    let pending = std::mem::take(&mut catalog.pending_truncates);
    for truncate in &pending {
        if redo.truncating_txns_committed.contains(&truncate.txn) {
            let (old, new) = (truncate.old_table as usize, truncate.new_table as usize);
            assert!(
                !catalog.tables[old].dropped && catalog.tables[new].dropped,
                "a pending truncation's tables were checked when the catalog was read"
            );
            catalog.tables[old].dropped = true;
            catalog.tables[new].dropped = false;
        }
    }
    !pending.is_empty()
}

/// True if an open must write a new catalog at once, recovery or not:
/// - an unlogged table's pages may reach its file from now on, so the catalog must say
///   "open" (which a crash then finds) before any can;
/// - an older format's catalog: this binary's log records (no leaf inserts, tree splits,
///   transaction names) must never sit behind a catalog that an older binary would accept.
fn must_rewrite(catalog: &Catalog) -> bool {
    catalog.tables.iter().any(|t| t.unlogged) || catalog.format_version < TXN_NAMES_FORMAT_VERSION
}

/// Where the log's commits without a name record are known to be unnamed: everywhere when
/// the catalog's format says its log is written by a binary that logs names
/// (`TXN_NAMES_FORMAT_VERSION`), else only from the end of the log this open found (an
/// older binary's commits may have had names it kept in memory). The one imprecision: a
/// database upgraded to format 10 may keep an older binary's records in log segments not
/// yet recycled (before its last checkpoint, where recovery never reads), and from its
/// next open a reader of the whole retained log sees their commits as unnamed.
fn names_known_from(catalog: &Catalog, append_from: Lsn) -> super::txn_names::TxnNames {
    super::txn_names::TxnNames::new(if catalog.format_version >= TXN_NAMES_FORMAT_VERSION {
        0
    } else {
        append_from
    })
}

/// True if the unlogged tables' pages cannot be trusted: the catalog was not written by a
/// clean close (every checkpoint while open says so), or the whole run was unlogged and
/// crashed.
fn unlogged_tables_reset(catalog: &Catalog) -> bool {
    catalog.rows_uncounted || catalog.unlogged_open
}

/// Opens the unlogged file if the catalog has an unlogged table with pages, re-created
/// empty after a crash (its tables are then emptied too: see `open_tables`).
fn open_unlogged_file(
    pool: &BufferPool,
    storage: &dyn Storage,
    path: &Path,
    catalog: &Catalog,
    report: &mut RecoveryReport,
) -> Result<()> {
    let unlogged = catalog.tables.iter().filter(|t| t.unlogged);
    if unlogged.clone().next().is_none() {
        return Ok(());
    }
    let reset = unlogged_tables_reset(catalog);
    if reset {
        report.unlogged_tables_emptied = true;
    }
    if unlogged
        .clone()
        .all(|t| t.layout == crate::access::layout::Layout::Memory)
    {
        return Ok(());
    }
    let mode = if reset {
        buffer::UnloggedFile::Reset
    } else {
        buffer::UnloggedFile::Existing
    };
    pool.open_unlogged_file(storage, path, mode)
}

/// Where new log records go: after everything redo read, never over a record it applied.
fn append_point(policy: LogPolicy, redo: &RedoOutcome) -> Lsn {
    let append_from = match policy {
        LogPolicy::Strict => redo.end,
        LogPolicy::Truncated { append_from, .. } => append_from,
    };
    assert!(
        append_from >= redo.end,
        "the log would be appended inside its redone part"
    );
    append_from
}

/// The catalog's log segment size, or the options' for a catalog from before it was kept.
fn log_segment_bytes(catalog: &Catalog, options: &Options) -> u64 {
    if catalog.log_segment_bytes > 0 {
        catalog.log_segment_bytes
    } else {
        options.wal.segment_bytes
    }
}

/// Step 1: the directory's lock, held for the database's lifetime (the storage lives in
/// `Inner`). Taken before the catalog is read, so that no other process changes it
/// between the read and the lock.
/// Steps 1 and 2: the lock, then the catalog (or a new one). A directory found not to be
/// a database keeps no LOCK file of ours (a refused directory had a stray one left in it).
fn lock_and_load_catalog(
    storage: &dyn Storage,
    path: &Path,
    options: &Options,
) -> Result<(Catalog, bool)> {
    let lock_file_was_there = storage.exists(LOCK_FILE).unwrap_or(true);
    lock(storage, path)?;
    match load_or_begin_catalog(storage, path, options) {
        Err(error @ Error::NotADatabase { .. }) => {
            if !lock_file_was_there {
                let _ = storage.remove(LOCK_FILE);
            }
            Err(error)
        }
        loaded => loaded,
    }
}

fn lock(storage: &dyn Storage, path: &Path) -> Result<()> {
    storage.lock().map_err(|e| match e.kind() {
        std::io::ErrorKind::WouldBlock => Error::Locked {
            path: path.to_path_buf(),
        },
        _ => Error::io(
            format!("locking {}", path.join(crate::format::LOCK_FILE).display()),
            e,
        ),
    })
}

/// Between steps 2 and 3: the data files made ready, the buffer pool over them, and the
/// unlogged tables' file. Also whether data.0 existed.
fn open_data_files(
    storage: &dyn Storage,
    path: &Path,
    catalog: &Catalog,
    options: &Options,
    stats: &Arc<Stats>,
    report: &mut RecoveryReport,
) -> Result<(Arc<BufferPool>, bool)> {
    let (new_file_count, data_existed) =
        prepare_data_files(storage, path, catalog, options, report)?;
    let pool = Arc::new(BufferPool::open_in(
        storage,
        path,
        catalog.page_size as usize,
        options.pool_bytes,
        new_file_count,
        Arc::clone(stats),
    )?);
    open_unlogged_file(&pool, storage, path, catalog, report)?;
    Ok((pool, data_existed))
}

/// Once a catalog has verified, the directory is a hotpage database: data files that do
/// not fit it (a damaged or missing header page, data.0 gone, a file that says it is
/// another) are damage to it, `DamagedDatabase` (the CLI's exit 7), not a directory of
/// other files (`NotADatabase`, exit 3). While `creating`, they are what they say.
pub(super) fn damage_unless(creating: bool) -> impl Fn(Error) -> Error {
    move |error| match error {
        Error::NotADatabase { path, reason } if !creating => {
            Error::DamagedDatabase { path, reason }
        }
        other => other,
    }
}

/// Step 2: the existing catalog, or a new one for a database being created (then `true`,
/// with the creation marker durable).
fn load_or_begin_catalog(
    storage: &dyn Storage,
    path: &Path,
    options: &Options,
) -> Result<(Catalog, bool)> {
    let has_marker = storage
        .exists(CREATING_FILE)
        .map_err(|e| Error::io("looking for the creation marker", e))?;
    let files = || -> Result<Vec<String>> {
        Ok(storage
            .list()
            .map_err(|e| Error::io(format!("listing {}", path.display()), e))?
            .into_iter()
            .filter(|name| name != LOCK_FILE)
            .collect())
    };
    let loaded = match Catalog::load(storage, path) {
        Err(Error::NotADatabase { reason, .. }) if !has_marker && holds_data(&files()?) => {
            return Err(damaged_catalog(path, &reason));
        }
        loaded => loaded?,
    };
    if let Some(catalog) = loaded {
        if has_marker && !options.read_only {
            // Killed after the first catalog was durable: the database is whole.
            end_creation(storage)?;
        }
        return Ok((catalog, false));
    }
    let files = files()?;
    if !has_marker && holds_data(&files) {
        return Err(damaged_catalog(path, "no catalog"));
    }
    if has_marker {
        if !options.create_if_missing || options.read_only {
            return Err(not_a_database(
                path,
                "it holds a creation that was interrupted (no catalog yet); opening it with create starts it again",
            ));
        }
        remove_interrupted_creation(storage, path, &files)?;
    } else if !files.is_empty() {
        return Err(not_a_database(
            path,
            "the directory has files but no hotpage catalog",
        ));
    } else if !options.create_if_missing || options.read_only {
        return Err(not_a_database(path, "no hotpage catalog"));
    }
    // The marker is durable before any other file exists.
    storage
        .open(CREATING_FILE, true)
        .and_then(|_| storage.sync_dir())
        .map_err(|e| Error::io("writing the creation marker", e))?;
    Ok((new_catalog(options), true))
}

/// True for a directory that holds a hotpage database's data: its first data file and
/// log segments. Without a creation under way, only a database that was whole once has
/// both, so a catalog that is missing or not one there is damage, not a foreign directory.
fn holds_data(files: &[String]) -> bool {
    files.iter().any(|name| name == "data.0") && files.iter().any(|name| name.starts_with("wal."))
}

/// A database whose data files and log are there but whose catalog is gone or not one
/// (emptied, overwritten): damage (exit 7), not "not a hotpage database" (exit 3).
fn damaged_catalog(path: &Path, reason: &str) -> Error {
    Error::DamagedDatabase {
        path: path.to_path_buf(),
        reason: format!(
            "{reason}, while data.0 and the log are there (was the catalog file emptied, \
             overwritten or deleted?)"
        ),
    }
}

/// A new database's catalog: nothing logged yet, a fresh random log salt.
fn new_catalog(options: &Options) -> Catalog {
    Catalog {
        page_size: options.page_size as u32,
        redo_lsn: 0,
        logical_lsn: 0,
        unlogged_open: false,
        rows_uncounted: false,
        // Never 0, the salt of logs written before salts. A seeded run derives it from its
        // seed, so that it replays byte for byte.
        log_salt: options
            .key_seed
            .map_or_else(rand::random::<u64>, |seed| seed.rotate_left(29) ^ 0x5a17)
            | 1,
        log_segment_bytes: options.wal.segment_bytes,
        format_version: LOGICAL_LEAVES_FORMAT_VERSION,
        pending_truncates: Vec::new(),
        tables: Vec::new(),
        metadata: Vec::new(),
    }
}

/// The files an interrupted creation can have left, removed so that it can start again.
/// Any other file means the directory is not only ours: refused.
fn remove_interrupted_creation(storage: &dyn Storage, path: &Path, files: &[String]) -> Result<()> {
    let ours = |name: &str| {
        name == CREATING_FILE
            || name == "catalog.tmp"
            || name == crate::log::durable_mark::DURABLE_MARK_FILE
            || crate::format::parse_data_file_name(name).is_some()
            || name.starts_with("wal.")
            || name.starts_with("mem.")
    };
    if let Some(foreign) = files.iter().find(|name| !ours(name)) {
        return Err(not_a_database(
            path,
            &format!(
                "it holds an interrupted creation and a file hotpage did not make ({foreign})"
            ),
        ));
    }
    for name in files.iter().filter(|name| name.as_str() != CREATING_FILE) {
        storage
            .remove(name)
            .map_err(|e| Error::io(format!("removing {name} of an interrupted creation"), e))?;
    }
    Ok(())
}

/// The creation is complete (its catalog is durable): the marker goes.
fn end_creation(storage: &dyn Storage) -> Result<()> {
    storage
        .remove(CREATING_FILE)
        .and_then(|()| storage.sync_dir())
        .map_err(|e| Error::io("removing the creation marker", e))
}

/// The data files before the pool opens them: a crashed unlogged run's are removed (its
/// pages cannot be trusted) and re-created as many as before. Returns how many data files
/// a database (re-)created here gets, and whether data.0 was there.
fn prepare_data_files(
    storage: &dyn Storage,
    path: &Path,
    catalog: &Catalog,
    options: &Options,
    report: &mut RecoveryReport,
) -> Result<(u32, bool)> {
    let mut new_file_count = options.data_files;
    if catalog.unlogged_open {
        // data.0's header says how many files there were; read it first. An older format
        // is refused before anything is removed, as every other open refuses it.
        if let Some(header) = buffer::recorded_header(storage, catalog.page_size as usize) {
            buffer::refuse_older_format(header.format_version)?;
            if let Some(count) = header.data_files() {
                new_file_count = count;
            }
        }
        remove_data_files(storage, false)
            .map_err(|e| Error::io("removing the data files of a crashed unlogged run", e))?;
        report.unlogged_tables_emptied = true;
    }
    let data_exists = storage
        .exists(DATA_FILE)
        .map_err(|e| Error::io("looking for the data file", e))?;
    if !catalog.tables.is_empty() && !data_exists && !catalog.unlogged_open {
        return Err(not_a_database(path, &format!("{DATA_FILE} is missing")));
    }
    if !data_exists {
        // data.0 is made anew (no table has a page yet): a data.N left over from an
        // interrupted removal must not join the new files.
        remove_data_files(storage, true)
            .map_err(|e| Error::io("removing data files left without data.0", e))?;
    }
    Ok((new_file_count, data_exists))
}

/// Steps 3 and 4: finds and proves the log's end, then redoes page records up to it.
fn recover_pages(
    storage: &dyn Storage,
    catalog: &Catalog,
    pool: &BufferPool,
    options: &Options,
    policy: LogPolicy,
) -> Result<RedoOutcome> {
    if catalog.unlogged_open || !options.replay_log {
        return Ok(RedoOutcome {
            end: catalog.redo_lsn,
            latest_values: vec![None; catalog.tables.len()],
            ..RedoOutcome::default()
        });
    }
    let reader = LogReader::new(
        storage,
        log_segment_bytes(catalog, options),
        catalog.log_salt,
    );
    let start = catalog.logical_lsn.min(catalog.redo_lsn);
    let log_end = match policy {
        LogPolicy::Strict => proven_log_end(storage, &reader, catalog, start)?,
        LogPolicy::Truncated { until, .. } => crate::log::LogEnd {
            end: until,
            torn_bytes: 0,
        },
    };
    if !options.read_only {
        // Log bytes a killed process wrote may sit only in the OS cache: make them durable
        // before redo writes pages that depend on them.
        crate::log::sync_segments(storage)?;
    }
    recovery::redo(&reader, start, log_end, pool, catalog)
}

/// Where the log from `start` ends, proven: not before the last checkpoint's redo point
/// (logs written since format 5 are durable up to it at each checkpoint), nor before the
/// durable end `log.durable` last recorded (`log::durable_mark`). A log that ends before
/// either lost durable records: `Error::CorruptLog`. Reads only.
pub(super) fn proven_log_end(
    storage: &dyn Storage,
    reader: &LogReader<'_>,
    catalog: &Catalog,
    start: Lsn,
) -> Result<crate::log::LogEnd> {
    let required = if catalog.format_version >= LOG_FORMAT_VERSION {
        catalog.redo_lsn
    } else {
        0
    };
    let end = reader.find_end(start, required)?;
    // `find_end` refuses a log that ends before the redo point it was asked to prove:
    // redo from a point past the end would skip records.
    assert!(
        end.end >= required,
        "the proven log end precedes the redo point"
    );
    if let Some(durable) = durable_mark(storage, catalog)? {
        reader.check_reaches_durable_mark(end.end, durable)?;
    }
    Ok(end)
}

/// The durable end `log.durable` records for this catalog's log, if it holds one.
pub(super) fn durable_mark(storage: &dyn Storage, catalog: &Catalog) -> Result<Option<Lsn>> {
    let mark = crate::log::durable_mark::read(storage, catalog.log_salt)
        .map_err(|e| Error::io("reading the log's durable mark", e))?;
    Ok(mark.map(|mark| mark.durable))
}

/// Step 5: the log, opened for appending at `append_from` (none without durability or
/// for a read-only open).
fn open_log(
    storage: &Arc<dyn Storage>,
    catalog: &Catalog,
    options: &Options,
    pool: &Arc<BufferPool>,
    stats: &Arc<Stats>,
    append_from: u64,
) -> Result<Option<Arc<Wal>>> {
    if options.durability == Durability::None || options.read_only {
        return Ok(None);
    }
    let wal_options = crate::log::WalOptions {
        segment_bytes: log_segment_bytes(catalog, options),
        ..options.wal.clone()
    };
    let start = WalStart {
        end: append_from,
        keep_from: catalog.logical_lsn.min(catalog.redo_lsn),
        salt: catalog.log_salt,
    };
    let wal = Arc::new(Wal::open(
        Arc::clone(storage),
        wal_options,
        start,
        Arc::clone(stats),
        Arc::clone(pool.fail_stop()),
    )?);
    pool.attach_log(Arc::clone(&wal));
    if options.durable_marks {
        wal.start_durable_marks();
    }
    Ok(Some(wal))
}

/// Step 6a: every table of the catalog, with its trees, heap and memory rows, and its key
/// generator past the latest key any commit in the log used.
#[allow(clippy::too_many_arguments)]
fn open_tables(
    storage: &dyn Storage,
    path: &Path,
    catalog: &mut Catalog,
    pool: &Arc<BufferPool>,
    stats: &Arc<Stats>,
    wal: &Option<Arc<Wal>>,
    redo_lsn: &Arc<AtomicU64>,
    redo: &RedoOutcome,
    report: &mut RecoveryReport,
    key_seed: Option<u64>,
) -> Result<Vec<TableHandle>> {
    let unlogged_crash = catalog.unlogged_open;
    let reset_unlogged = unlogged_tables_reset(catalog);
    let mut tables = Vec::with_capacity(catalog.tables.len());
    for (id, entry) in catalog.tables.iter_mut().enumerate() {
        let placement = routing::placement(entry.unlogged);
        let reset = unlogged_crash || (entry.unlogged && reset_unlogged);
        let (trees, heap) = if reset {
            fresh_storage(pool, stats, entry, placement)?
        } else {
            existing_storage(pool, stats, path, entry, placement)?
        };
        let (trees, heap) =
            routing::with_loggers(wal.as_ref(), redo_lsn, entry.unlogged, trees, heap);
        let (memory, loaded) = memory::open(storage, id, entry, reset)?;
        report.memory_rows_loaded += loaded;
        let mut high_water = entry.key_high_water;
        if let Some(latest) = redo.latest_values.get(id).copied().flatten()
            && let Some(next) = entry.kind.next_after(latest)
            && entry.kind.is_later(next, high_water)
        {
            high_water = next;
        }
        tables.push(Arc::new(Table {
            id,
            name: entry.name.clone(),
            design: entry.design.clone(),
            trees,
            heap,
            layout: entry.layout,
            flow: routing::flow_gate(entry.layout, stats),
            memory,
            keys: KeyGenerator::new(entry.kind, Some(high_water))?.with_seed(key_seed),
            rows: AtomicU64::new(entry.rows),
            published: AtomicBool::new(true),
            dropped: AtomicBool::new(entry.dropped),
            user_keys: entry.user_keys,
            schema: entry.schema.clone(),
            unlogged: entry.unlogged,
            unique: super::KeyLocks::default(),
        }));
    }
    Ok(tables)
}

type TableStorage = (Vec<BTree>, Option<Heap>);

/// New, empty trees and heap for an unlogged table after a crash (every table of a
/// crashed unlogged run).
fn fresh_storage(
    pool: &Arc<BufferPool>,
    stats: &Arc<Stats>,
    entry: &mut TableEntry,
    placement: Placement,
) -> Result<TableStorage> {
    let (trees, heap) = routing::new_storage(pool, stats, entry.layout, placement)?;
    let roots = routing::roots_of(&trees, heap.as_ref());
    entry.root = roots.first().copied().unwrap_or(PageId::NONE);
    entry.extra_roots = roots.get(1..).unwrap_or_default().to_vec();
    entry.rows = 0;
    Ok((trees, heap))
}

/// A table's trees and heap from the roots the catalog names.
fn existing_storage(
    pool: &Arc<BufferPool>,
    stats: &Arc<Stats>,
    path: &Path,
    entry: &TableEntry,
    placement: Placement,
) -> Result<TableStorage> {
    let roots: Vec<PageId> = std::iter::once(entry.root)
        .chain(entry.extra_roots.iter().copied())
        .collect();
    // Trees' roots first, then the heap chains' heads; a table with neither (a memory
    // table) keeps a placeholder root in the catalog.
    let wanted = entry.layout.root_count();
    if roots.len() != wanted.max(1) {
        return Err(not_a_database(
            path,
            &format!(
                "the catalog gives table {} {} root pages, its layout needs {wanted}",
                entry.name,
                roots.len()
            ),
        ));
    }
    let trees_end = entry.layout.tree_count();
    let heads_end = trees_end + entry.layout.chain_count();
    let trees = roots[..trees_end]
        .iter()
        .map(|root| BTree::open(Arc::clone(pool), *root).with_placement(placement))
        .collect();
    let heads = &roots[trees_end..heads_end];
    let heap = if heads.is_empty() {
        None
    } else {
        Some(
            Heap::open(Arc::clone(pool), heads.to_vec(), Arc::clone(stats))?
                .with_placement(placement),
        )
    };
    Ok((trees, heap))
}

/// After a salvage: rows of commits whose log was discarded may still be on pages, with
/// keys past what the kept log used. Each counter key generator restarts past the latest
/// key its table holds, so that no new key collides with one of them.
fn keys_past_every_row(tables: &[TableHandle]) -> Result<()> {
    for table in tables {
        let kind = table.keys.kind();
        let mut latest: Option<i64> = None;
        table.scan(None, |key, _| {
            if let Ok(key) = crate::access::keys::Key::from_bytes(key)
                && let Some(value) = kind.value_of(&key)
                && latest.is_none_or(|l| kind.is_later(value, l))
            {
                latest = Some(value);
            }
            true
        })?;
        if let Some(latest) = latest {
            table.keys.raise_past(latest)?;
        }
    }
    Ok(())
}

/// Step 6b: committed transactions whose rows had not reached their pages, then row
/// counts from the tables themselves (the catalog's are from the last checkpoint).
fn reapply_and_recount(
    storage: &dyn Storage,
    catalog: &Catalog,
    redo: &RedoOutcome,
    tables: &[TableHandle],
    recount: Recount,
    report: &mut RecoveryReport,
) -> Result<()> {
    if redo.commits > 0 {
        let reader = LogReader::new(storage, redo.segment_bytes, catalog.log_salt);
        report.rows_reapplied = routing::reapply(&reader, redo, tables)?;
    }
    // A crash after a checkpoint: the checkpoint's counts may lack rows sessions had not
    // added yet, even with nothing in the log after it.
    let recovered =
        !recount.creating && (redo.records > 0 || catalog.unlogged_open || catalog.rows_uncounted);
    if recovered {
        for table in tables {
            let found = table.verify()?.rows;
            // The checkpoint counted only rows whose commits it made durable (see
            // `checkpoint_locked`), and rows are never deleted: recovery must find them.
            let counted = catalog.tables.get(table.id).map_or(0, |entry| entry.rows);
            let rows = if found < counted && !recount.lossy && !table.is_dropped() {
                report.rows_missing.push(super::MissingRows {
                    table: table.name.clone(),
                    counted,
                    found,
                });
                counted
            } else {
                found
            };
            table.rows.store(rows, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// How step 6b treats the tables' counts: none after a creation; and when rows may be
/// gone knowingly (`lossy`), a count below the checkpoint's is taken as it is.
#[derive(Clone, Copy)]
struct Recount {
    creating: bool,
    lossy: bool,
}

/// Step 7: make the recovered (or new) state the checkpoint, so that recovery never has
/// to look at the same log again (it also marks an unlogged run as open); end a creation;
/// start the checkpointer.
fn finish_open(db: &Database, creating: bool, checkpoint_needed: bool) -> Result<()> {
    if db.inner.read_only {
        // No checkpoint, but the recovered pages go to the files as seen through the
        // overlay (in memory), so that readers of the files (the integrity check, page
        // inspection) see what a writable open would have left there.
        return db.inner.pool.flush_all();
    }
    if creating || checkpoint_needed || db.inner.durability == Durability::None {
        db.checkpoint()?;
    }
    if creating {
        end_creation(&*db.inner.storage)?;
    }
    db.start_checkpointer()
}
