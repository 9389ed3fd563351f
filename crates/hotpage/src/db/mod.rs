//! The public API: a database directory, its tables, and sessions that insert and read.
//!
//! ```no_run
//! use hotpage::{Database, KeyKind, Options};
//! let db = Database::open("/tmp/orders-db", Options::default())?;
//! let orders = db.create_table("orders", "identity", KeyKind::Identity { start: 1, step: 1 })?;
//! let mut session = db.session();
//! let key = session.insert(&orders, b"first order")?; // autocommit, durable on return
//! session.begin()?;
//! session.insert(&orders, b"second")?;
//! session.insert(&orders, b"third")?;
//! session.commit()?; // both or neither, even across a crash
//! assert_eq!(session.get(&orders, &key)?, Some(b"first order".to_vec()));
//! drop(session);
//! db.close()?;
//! # Ok::<(), hotpage::Error>(())
//! ```

use crate::access::btree::{self, BTree};
use crate::access::heap::{Heap, HeapTarget};
use crate::access::keys::{Key, KeyGenerator, KeyKind, KeySession};
use crate::access::layout::{FlowGate, Layout};
use crate::access::memtable::MemTable;
use crate::access::{Inserted, TreeStats};
use crate::buffer::{BufferPool, FrameClaim, FrameOp, POOL_BYTES_DEFAULT, PoolInfo, UnloggedFile};
use crate::catalog::{Catalog, NAME_BYTES_MAX, TableEntry};
use crate::error::{Error, Result};
use crate::failstop::FailStop;
use crate::format::{LOGICAL_LEAVES_FORMAT_VERSION, PageId, SCHEMA_BYTES_MAX};
use crate::log::{Lsn, RecordKind, Wal, WalCounters, WalOptions};
use crate::page::PAGE_SIZE_DEFAULT;
use crate::stats::{Counter, Stats, StatsSnapshot};
use crate::storage::Storage;
use crate::txn::{self, Durability, encode_commit, encode_part};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod apply_marker;
mod check;
mod group_apply;
mod index_report;
pub mod inspect;
mod log_records;
mod memory;
mod open;
mod page_report;
#[cfg(test)]
mod race_tests;
mod rebuild;
mod routing;
mod salvage;
mod staged;
mod truncate;
pub(crate) mod txn_names;
mod unique;
use apply_marker::{ApplyMarker, Applying, StopOnPanic};
pub use check::{CheckReport, Fault, FaultKind, TableCheck, TableFigures};
pub use index_report::{FsmCategories, HeapIndexShape, HeapShape, IndexReport, IndexShape};
pub use inspect::{LogKindCount, LogReport, LogSummary, PageLocation, PageOwner, TableSummary};
pub use log_records::{LogRecordInfo, LoggedPage, PageChange};
pub use open::validate_pool_bytes;
pub use page_report::{PageHeader, PageReport, SlotContent, SlotReport};
use routing::new_storage;
pub use salvage::{DiscardedLog, LogDamage, MisplacedSegment, SalvageReport};
pub use staged::{STAGED_ROW_OVERHEAD_BYTES, SUPPLIED_KEY_OVERHEAD_BYTES};
pub use txn_names::{TXN_NAME_BYTES_MAX, TxnName};
use unique::{KeyLocks, Requester};
pub use unique::{WaitLimits, WaitStop};

/// Rows a session counts locally before adding them to the table's shared count (so the
/// count is not a cache line every insert writes).
const ROW_COUNT_FLUSH_EVERY: u64 = 1024;
/// Default log volume between automatic checkpoints.
pub const CHECKPOINT_LOG_BYTES_DEFAULT: u64 = 256 << 20;
/// Default longest time between automatic checkpoints.
pub const CHECKPOINT_INTERVAL_DEFAULT: Duration = Duration::from_secs(60);
/// Default bound on the memory all open transactions' staged rows take together (see
/// `staged`).
pub const TXN_MEMORY_BYTES_DEFAULT: usize = 1 << 30;

/// Options for opening a database.
#[derive(Clone, Debug)]
pub struct Options {
    /// Page size for a new database (power of two, 4–64 KiB). An existing database keeps
    /// the page size it was created with.
    pub page_size: usize,
    /// Buffer-pool size in bytes: the engine's page cache never grows past it.
    pub pool_bytes: usize,
    /// Create the directory and database if missing.
    pub create_if_missing: bool,
    /// The database's durability, and every session's default (see [`Durability`]).
    pub durability: Durability,
    /// Log segment and buffer sizes, and the `async` flush interval.
    pub wal: WalOptions,
    /// Checkpoint after this much log (bounds recovery time).
    pub checkpoint_log_bytes: u64,
    /// Checkpoint at least this often while there is new log.
    pub checkpoint_interval: Duration,
    /// The most memory all open transactions' rows may take together before they commit
    /// (each row counts its key, its bytes and its bookkeeping: see
    /// [`limits::STAGED_ROW_OVERHEAD_BYTES`](crate::limits)). A row past it is refused at
    /// insert with [`Error::TransactionMemory`].
    pub txn_memory_bytes_max: usize,
    /// Data files (`data.0 … data.{N-1}`, 1 to 64) for a new database; new pages fill them
    /// proportionally. An existing database keeps the count it was created with (data.0's
    /// header records it).
    pub data_files: u32,
    /// Open without changing a byte on disk (`hotpage check` and `inspect` do): crash
    /// recovery runs in memory only, nothing is created, and every change (a table, an
    /// insert, a checkpoint) is refused with `Error::ReadOnly`. Works on a read-only mount.
    pub read_only: bool,
    /// For tests and simulations: GUID keys drawn from this seed (mixed with the log's
    /// end at open, so that each open draws new keys), and v7 GUIDs from a logical clock,
    /// so that a single-session run replays exactly (the crash campaign's seeds do).
    /// `None`, the default: the OS random source and the wall clock.
    pub key_seed: Option<u64>,
    /// Record the log's durable end in `log.durable` at the checkpointer's ticks (every
    /// 100 ms), so that an open can tell a damaged last segment from a torn write (see
    /// `log::durable_mark`). On by default; off only for simulations that must replay
    /// exactly (the crash campaign's single-session seeds): the moment of the write
    /// follows the wall clock, not the operations.
    pub durable_marks: bool,
    /// Replay the log at open (crash recovery). On by default. Off only with `read_only`:
    /// the tables are then as the data files hold them, without what was logged since the
    /// last checkpoint. `hotpage check` opens so when recovery itself meets damage, to list
    /// the faults on the pages all the same.
    pub replay_log: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: PAGE_SIZE_DEFAULT,
            pool_bytes: POOL_BYTES_DEFAULT,
            create_if_missing: true,
            durability: Durability::Sync,
            wal: WalOptions::default(),
            checkpoint_log_bytes: CHECKPOINT_LOG_BYTES_DEFAULT,
            checkpoint_interval: CHECKPOINT_INTERVAL_DEFAULT,
            txn_memory_bytes_max: TXN_MEMORY_BYTES_DEFAULT,
            data_files: 1,
            read_only: false,
            key_seed: None,
            durable_marks: true,
            replay_log: true,
        }
    }
}

/// A table: its B+tree(s) and its key generator.
pub struct Table {
    id: usize,
    name: String,
    design: String,
    // The B+trees: the clustered tree, every partition of a hash-partitioned table (0
    // first), a heap's nonclustered index, or none for a plain heap (see `routing`).
    trees: Vec<BTree>,
    // The heap of a heap table.
    heap: Option<Heap>,
    layout: Layout,
    // The admission gate of a flow-controlled table.
    flow: Option<FlowGate>,
    // The rows of a memory table (which has no trees and no heap; see `memory`).
    memory: Option<MemTable>,
    keys: KeyGenerator,
    rows: AtomicU64,
    // False until the catalog that names the table is durable: before that, no session may
    // find it (commits into it would name a table recovery does not know).
    published: AtomicBool,
    // Dropped: hidden from lookups; its id and pages stay (the catalog's module docs).
    dropped: AtomicBool,
    // Callers may supply keys: every insert locks and looks up its key before logging.
    user_keys: bool,
    // Unlogged: no commit record carries its rows and no page record its pages, which
    // live in the unlogged file; a crash empties it (see docs/design.md).
    unlogged: bool,
    // The embedder's schema bytes, stored in the catalog and never read by the engine.
    schema: Vec<u8>,
    // The keys that sessions are inserting with `insert_keyed` and have not yet applied.
    unique: KeyLocks,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table").field("name", &self.name).finish()
    }
}

impl Table {
    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The design it was created with.
    pub fn design(&self) -> &str {
        &self.design
    }

    /// How its keys are generated.
    pub fn key_kind(&self) -> KeyKind {
        self.keys.kind()
    }

    /// Its first root page: the B+tree's root (partition 0's, a heap's index's), or the
    /// first heap page of a plain heap.
    pub fn root_page(&self) -> PageId {
        self.roots().first().copied().unwrap_or(PageId::NONE)
    }

    /// Every root page: the trees' roots, then the heap chains' head pages.
    pub fn roots(&self) -> Vec<PageId> {
        self.trees
            .iter()
            .map(BTree::root)
            .chain(self.heap.iter().flat_map(|h| h.heads().iter().copied()))
            .collect()
    }

    /// How its rows are organised.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The first value its key generator has not handed out (identity, sequence,
    /// session-range: the next id; bit-reverse: the next counter value before reversal;
    /// GUIDs: 0). The SQL layer checks a narrow identity column's range against it.
    pub fn key_high_water(&self) -> i64 {
        self.keys.high_water()
    }

    /// True if callers may supply its keys ([`TableSpec::user_keys`]).
    pub fn takes_supplied_keys(&self) -> bool {
        self.user_keys
    }

    /// The schema bytes it was created with (empty if none).
    pub fn schema(&self) -> &[u8] {
        &self.schema
    }

    /// True once it has been dropped (a handle taken before the drop still works).
    pub fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    /// True if the table is unlogged ([`TableSpec::unlogged`]).
    pub fn is_unlogged(&self) -> bool {
        self.unlogged
    }
}

/// What [`Database::create_table_spec`] creates.
#[derive(Clone, Debug)]
pub struct TableSpec<'a> {
    /// The table's name (1 to `limits::NAME_BYTES_MAX` bytes, unique among live tables).
    pub name: &'a str,
    /// The design name reports show.
    pub design: &'a str,
    /// How its keys are generated.
    pub kind: KeyKind,
    /// How its rows are organised.
    pub layout: Layout,
    /// True if callers may supply keys ([`Session::insert_keyed`]): then every insert, a
    /// generated key's too, proves its key unique before it is logged. Not for plain heaps,
    /// which cannot look a key up.
    pub user_keys: bool,
    /// Bytes the engine stores with the table and never reads (the SQL layer's columns and
    /// key), at most `limits::SCHEMA_BYTES_MAX`.
    pub schema: &'a [u8],
    /// Unlogged, as PostgreSQL's `CREATE UNLOGGED TABLE`: its rows are in no commit record
    /// and its page changes in no page record, so its commits wait for no log flush; its
    /// pages live in the unlogged file. A clean close keeps its rows; after a crash it is
    /// empty. (In a `Durability::None` database every table is unlogged anyway.)
    pub unlogged: bool,
}

/// A cheap handle to a table, resolved once and passed to every session call.
pub type TableHandle = Arc<Table>;

/// What `Database::tables` reports about a table.
#[derive(Clone, Debug, PartialEq)]
pub struct TableInfo {
    /// The table's name.
    pub name: String,
    /// The design it was created with.
    pub design: String,
    /// How its keys are generated.
    pub kind: KeyKind,
    /// Rows (as counted by sessions; exact once sessions have ended).
    pub rows: u64,
    /// Its first root page (see [`Table::root_page`]).
    pub root_page: PageId,
    /// How its rows are organised.
    pub layout: Layout,
    /// Every root page: trees' roots (partition 0 first), then heap chains' heads.
    pub roots: Vec<PageId>,
    /// Its id: log records name tables by it.
    pub id: usize,
    /// Dropped (only `check` lists dropped tables).
    pub dropped: bool,
    /// Callers may supply its keys ([`TableSpec::user_keys`]).
    pub user_keys: bool,
    /// The schema bytes it was created with.
    pub schema: Vec<u8>,
    /// Unlogged ([`TableSpec::unlogged`]).
    pub unlogged: bool,
}

/// What the last open's recovery did.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    /// Log records read (flush marks left out).
    pub records: u64,
    /// Log bytes from the redo point to the end of the log.
    pub log_bytes: u64,
    /// Page images installed and page inserts redone.
    pub pages_redone: u64,
    /// Rows of committed transactions that had not reached their pages.
    pub rows_reapplied: u64,
    /// Wall time of the recovery.
    pub elapsed: Duration,
    /// True when a database last open without a log (`Durability::None`) had crashed and
    /// its tables were emptied.
    pub unlogged_tables_emptied: bool,
    /// Rows of memory tables loaded from their checkpoint files.
    pub memory_rows_loaded: u64,
    /// Bytes of a torn write past the end of the log (never acknowledged), discarded.
    pub torn_log_bytes: u64,
    /// Tables whose recount after the crash found fewer rows than the last checkpoint had
    /// counted in them (rows are never deleted): a page already stale when the database
    /// crashed. Their count stays the checkpoint's, so every whole scan reports
    /// `Error::RowsMissing` and `hotpage check` a fault, until a backup is restored.
    pub rows_missing: Vec<MissingRows>,
}

/// A table short of rows after a crash (see [`RecoveryReport::rows_missing`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingRows {
    /// The table.
    pub table: String,
    /// Rows the last checkpoint counted in it.
    pub counted: u64,
    /// Rows its pages hold after recovery.
    pub found: u64,
}

struct Inner {
    path: PathBuf,
    storage: Arc<dyn Storage>,
    // The fail-stop state the pool, the log and the commit path share.
    stop: Arc<FailStop>,
    // The files as they were opened: `storage` itself, or for a read-only open the storage
    // below its in-memory overlay (what the disk holds, untouched by recovery).
    disk: Arc<dyn Storage>,
    pool: Arc<BufferPool>,
    stats: Arc<Stats>,
    tables: RwLock<Vec<TableHandle>>,
    // The embedder's database-wide metadata, written to the catalog at each checkpoint.
    metadata: Mutex<Vec<u8>>,
    durability: Durability,
    wal: Option<Arc<Wal>>,
    // The current checkpoint's redo point (the logger's full-image rule reads it).
    redo_lsn: Arc<AtomicU64>,
    // Where the log recovery would read starts: the last checkpoint's logical point.
    log_start: AtomicU64,
    // The catalog's log salt and segment size.
    log_salt: u64,
    log_segment_bytes: u64,
    read_only: bool,
    // Each session's "applying a commit since" marker, for the checkpoint's logical point.
    appliers: Mutex<Vec<Weak<ApplyMarker>>>,
    // Durable commits' rows waiting to be applied in key order (see `group_apply`).
    group_apply: group_apply::ApplyQueue,
    // One checkpoint at a time; also serialises catalog rewrites.
    checkpoint_lock: Mutex<CheckpointState>,
    // Truncations of committing transactions not yet settled in the catalog
    // (see `truncate`). Taken after `checkpoint_lock` when both are.
    truncate_swaps: Mutex<Vec<truncate::TruncateSwap>>,
    // What open transactions' staged rows take in memory, together (see `staged`).
    staged: Arc<staged::StagedMemory>,
    next_session_id: AtomicU64,
    // The names of the transactions committed since the open (`Session::name_transaction`).
    txn_names: Mutex<txn_names::TxnNames>,
    options: Options,
    recovery: RecoveryReport,
    // Stops the checkpointer thread (which holds only a weak reference to `Inner`).
    stop_signal: Arc<StopSignal>,
    checkpointer: Mutex<Option<JoinHandle<()>>>,
    closed: AtomicBool,
    #[cfg(test)]
    hooks: TestHooks,
}

/// Test only: steps a test runs at a chosen point of the engine, once each.
#[cfg(test)]
#[derive(Default)]
struct TestHooks {
    /// Inside the next checkpoint, between its two points.
    between_checkpoint_points: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// Inside the next checkpoint, after its stop check, before it takes its points.
    before_checkpoint_points: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// In the next apply, after its first row is on the table.
    after_first_row_applied: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// In the next commit, after its dropped-table check.
    after_dropped_check: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// In the next truncating commit, after its swap.
    after_truncate_swap: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// In the next truncating commit, once its swap is logged, before its rows are applied.
    after_swap_logged: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// In the next commit with unlogged rows, before they are applied.
    before_unlogged_apply: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

/// Runs a test hook once if one is set, without holding its mutex while it runs (other
/// commits may pass the same point meanwhile).
#[cfg(test)]
fn run_hook(hook: &Mutex<Option<Box<dyn FnOnce() + Send>>>) {
    let step = hook.lock().take();
    if let Some(step) = step {
        step();
    }
}

#[derive(Default)]
struct StopSignal {
    stopped: Mutex<bool>,
    signal: Condvar,
}

impl StopSignal {
    fn stop(&self) {
        *self.stopped.lock() = true;
        self.signal.notify_all();
    }
}

impl Drop for Inner {
    /// The last handle is gone without `close`: stop the checkpointer, and shut down as
    /// cleanly as possible. Nothing committed depends on it (the log has it), but an
    /// unlogged database keeps its rows only through this flush.
    fn drop(&mut self) {
        self.stop_signal.stop();
        if let Some(handle) = self.checkpointer.get_mut().take()
            && handle.thread().id() != std::thread::current().id()
        {
            let _ = handle.join();
        }
        if !self.closed.load(Ordering::Acquire) && !self.read_only {
            let _ = checkpoint(self, false);
            if let Some(wal) = &self.wal {
                let _ = wal.shutdown();
            }
        }
    }
}

struct CheckpointState {
    // Log end at the last checkpoint.
    last_end: Lsn,
    last_at: Instant,
    checkpoints: u64,
}

impl CheckpointState {
    /// At an open whose log ends (or will be appended from) at `end`.
    fn opened_at(end: Lsn) -> CheckpointState {
        CheckpointState {
            last_end: end,
            last_at: Instant::now(),
            checkpoints: 0,
        }
    }
}

/// An open database. Share it between threads with `&Database` or clone the handle.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("path", &self.inner.path)
            .finish()
    }
}

/// Removes every `data.N` file (only those with N > 0 if `keep_first`), the highest first
/// and data.0 last, so that an interrupted removal leaves data.0 (and the file count its
/// header records) for as long as any other data file is there.
fn remove_data_files(storage: &dyn Storage, keep_first: bool) -> std::io::Result<()> {
    let mut numbers: Vec<u32> = storage
        .list()?
        .iter()
        .filter_map(|name| crate::format::parse_data_file_name(name))
        .filter(|&n| !(keep_first && n == 0))
        .collect();
    numbers.sort_unstable_by(|a, b| b.cmp(a));
    for number in numbers {
        match storage.remove(&crate::format::data_file_name(number)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

impl Database {
    fn start_checkpointer(&self) -> Result<()> {
        if self.inner.wal.is_none() {
            return Ok(());
        }
        *self.inner.checkpointer.lock() = Some(spawn_checkpointer(&self.inner)?);
        Ok(())
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The page size in bytes.
    pub fn page_size(&self) -> usize {
        self.inner.pool.page_size()
    }

    /// The largest row a B+tree table of this database stores (a heap table takes larger
    /// rows: see [`Layout::row_bytes_max`]).
    pub fn row_bytes_max(&self) -> usize {
        btree::row_bytes_max(self.page_size())
    }

    /// Buffer-pool figures.
    pub fn pool_info(&self) -> PoolInfo {
        self.inner.pool.info()
    }

    /// How many data files the database has (`data.0 … data.{N-1}`).
    pub fn data_files(&self) -> u32 {
        self.inner.pool.file_count()
    }

    /// The database's durability.
    pub fn durability(&self) -> Durability {
        self.inner.durability
    }

    /// Log figures, if the database has a log.
    pub fn log_counters(&self) -> Option<WalCounters> {
        self.inner.wal.as_ref().map(|w| w.counters())
    }

    /// The end of the log: where the next record goes (for a read-only open, where the
    /// recovered log ends). `None` for a database without a log.
    pub fn log_end(&self) -> Option<Lsn> {
        if self.inner.durability == Durability::None && !self.inner.read_only {
            return None;
        }
        Some(match &self.inner.wal {
            Some(wal) => wal.end(),
            None => self.inner.checkpoint_lock.lock().last_end,
        })
    }

    /// What recovery did when this database was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.inner.recovery
    }

    /// Checkpoints taken since open (including the one at open, if any).
    pub fn checkpoints(&self) -> u64 {
        self.inner.checkpoint_lock.lock().checkpoints
    }

    /// Creates a table (one clustered B+tree) whose keys come from `kind`. `design` is the
    /// name reports show.
    pub fn create_table(&self, name: &str, design: &str, kind: KeyKind) -> Result<TableHandle> {
        self.create_table_with_layout(name, design, kind, Layout::Clustered)
    }

    /// Creates a table with a [`Layout`]: hash partitions or sequential-key flow control.
    pub fn create_table_with_layout(
        &self,
        name: &str,
        design: &str,
        kind: KeyKind,
        layout: Layout,
    ) -> Result<TableHandle> {
        self.create_table_spec(&TableSpec {
            name,
            design,
            kind,
            layout,
            user_keys: false,
            schema: &[],
            unlogged: false,
        })
    }

    /// Creates a table as `spec` says. Durable on return: a checkpoint writes its root
    /// pages and the catalog that names it.
    pub fn create_table_spec(&self, spec: &TableSpec<'_>) -> Result<TableHandle> {
        validate_spec(spec)?;
        self.writable("creating a table")?;
        // Held from the push to the end of the creation checkpoint: no other table can be
        // added meanwhile (so a failed table, the last, is taken out again without moving
        // any other table's id, which log records name), and no other checkpoint can write
        // it to the catalog before its creation is known to have succeeded.
        let mut checkpoint_state = self.inner.checkpoint_lock.lock();
        if spec.unlogged && spec.layout != Layout::Memory {
            // Its pages go to the unlogged file: the creation checkpoint below syncs the new
            // file's header with the table's root, before the catalog names either.
            self.inner.pool.open_unlogged_file(
                &*self.inner.storage,
                &self.inner.path,
                UnloggedFile::Create,
            )?;
        }
        let table = {
            let mut tables = self.inner.tables.write();
            if tables
                .iter()
                .any(|t| t.name == spec.name && !t.is_dropped())
            {
                return Err(Error::TableExists(spec.name.to_string()));
            }
            let table = Arc::new(new_table(&self.inner, tables.len(), spec, None)?);
            tables.push(Arc::clone(&table));
            table
        };
        // A checkpoint puts the root page and the catalog that names it on disk together.
        // Only then may anyone find the table.
        if let Err(error) = checkpoint_locked(&self.inner, &mut checkpoint_state, true) {
            forget_failed_table(&self.inner, &table);
            return Err(error);
        }
        table.published.store(true, Ordering::Release);
        Ok(table)
    }

    /// Drops a table: it is gone from lookups at once and durably on return (a checkpoint
    /// writes the catalog that marks it). Handles taken before still work. Its id and its
    /// pages stay, unused (pages are never freed yet): see the catalog's module docs.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.writable("dropping a table")?;
        let mut checkpoint_state = self.inner.checkpoint_lock.lock();
        let table = self.table(name)?;
        truncate::check_not_truncating(&self.inner, name)?;
        table.dropped.store(true, Ordering::Release);
        if let Err(error) = checkpoint_locked(&self.inner, &mut checkpoint_state, true) {
            table.dropped.store(false, Ordering::Release);
            return Err(error);
        }
        Ok(())
    }

    /// Empties a table (SQL's TRUNCATE): a new, empty table with the same name and spec
    /// replaces it, and one checkpoint writes the catalog that marks the old one dropped
    /// and names the new one, so after a crash there is the old table whole or the new one
    /// empty, never neither. The key generator goes on from where the old one was
    /// (PostgreSQL's CONTINUE IDENTITY). Handles to the old table see it dropped; the old
    /// pages stay allocated, as a drop's do. Returns the new table.
    pub fn truncate_table(&self, name: &str) -> Result<TableHandle> {
        self.writable("truncating a table")?;
        truncate_locked(&self.inner, name, None, None, &mut |_| Ok(()))
    }

    /// Gives an empty table a new definition (SQL's `ALTER TABLE … ADD PRIMARY KEY` on a
    /// table with no rows): a new, empty table made from `spec` replaces the one named
    /// `spec.name`, in one checkpoint, as [`Database::truncate_table`] does; its key
    /// generator starts afresh. [`Error::TableNotEmpty`] if the table holds a committed
    /// row when the swap is made, a commit that was applying to it then included.
    pub fn redefine_empty_table(&self, spec: &TableSpec<'_>) -> Result<TableHandle> {
        validate_spec(spec)?;
        self.writable("redefining a table")?;
        truncate_locked(&self.inner, spec.name, Some(spec), Some(0), &mut |_| Ok(()))
    }

    /// The embedder's database-wide metadata bytes (empty until set).
    pub fn metadata(&self) -> Vec<u8> {
        self.inner.metadata.lock().clone()
    }

    /// Replaces the embedder's database-wide metadata (at most `limits::SCHEMA_BYTES_MAX`
    /// bytes); durable on return (a checkpoint writes the catalog that holds it).
    pub fn set_metadata(&self, metadata: &[u8]) -> Result<()> {
        if metadata.len() > SCHEMA_BYTES_MAX {
            return Err(Error::InvalidOption(format!(
                "database metadata of {} bytes is over the limit of {SCHEMA_BYTES_MAX}",
                metadata.len()
            )));
        }
        self.writable("setting the database metadata")?;
        let mut checkpoint_state = self.inner.checkpoint_lock.lock();
        let before = std::mem::replace(&mut *self.inner.metadata.lock(), metadata.to_vec());
        if let Err(error) = checkpoint_locked(&self.inner, &mut checkpoint_state, true) {
            *self.inner.metadata.lock() = before;
            return Err(error);
        }
        Ok(())
    }

    /// Looks a table up by name.
    pub fn table(&self, name: &str) -> Result<TableHandle> {
        live_table(&self.inner, name)
    }

    /// Every live table, in creation order.
    pub fn tables(&self) -> Vec<TableInfo> {
        self.table_infos(false)
    }

    /// Every table in creation order, dropped ones too if `with_dropped` (`check` walks
    /// them: their pages are still theirs).
    fn table_infos(&self, with_dropped: bool) -> Vec<TableInfo> {
        self.inner
            .tables
            .read()
            .iter()
            .filter(|t| t.published.load(Ordering::Acquire) && (with_dropped || !t.is_dropped()))
            .map(|t| TableInfo {
                id: t.id,
                name: t.name.clone(),
                design: t.design.clone(),
                kind: t.keys.kind(),
                rows: t.rows.load(Ordering::Relaxed),
                root_page: t.root_page(),
                layout: t.layout,
                roots: t.roots(),
                dropped: t.is_dropped(),
                user_keys: t.user_keys,
                schema: t.schema.clone(),
                unlogged: t.unlogged,
            })
            .collect()
    }

    /// The table with id `id` (dropped or not), for the checks that walk every table.
    fn table_by_id(&self, id: usize) -> Result<TableHandle> {
        self.inner
            .tables
            .read()
            .get(id)
            .filter(|t| t.published.load(Ordering::Acquire))
            .cloned()
            .ok_or_else(|| Error::NoSuchTable(format!("table id {id}")))
    }

    /// A new session (one per thread), with the database's durability.
    pub fn session(&self) -> Session {
        let applying = Arc::new(ApplyMarker::new());
        self.inner.appliers.lock().push(Arc::downgrade(&applying));
        Session {
            db: Arc::clone(&self.inner),
            id: self.inner.next_session_id.fetch_add(1, Ordering::Relaxed),
            txn_seq: 0,
            durability: self.inner.durability,
            key_sessions: Vec::new(),
            heap_targets: Vec::new(),
            pending_rows: Vec::new(),
            txn: None,
            txn_name: None,
            held_keys: Vec::new(),
            wait_limits: WaitLimits::default(),
            commit_refs: None,
            applying,
            record: Vec::new(),
            frames: FrameClaim::new(Arc::clone(&self.inner.pool)),
            apply_slot: Arc::default(),
            apply_batch: group_apply::Batch::default(),
            _slot: self.inner.stats.session_slot(),
        }
    }

    /// Wait statistics and counters summed over every session so far.
    pub fn stats(&self) -> StatsSnapshot {
        self.inner.stats.snapshot()
    }

    /// Zeroes the statistics.
    pub fn reset_stats(&self) {
        self.inner.stats.reset();
    }

    /// Walks a table's B+tree (every partition's), checking its structure, and returns its
    /// shape and fill (summed over partitions).
    pub fn verify_table(&self, table: &TableHandle) -> Result<TreeStats> {
        table.verify()
    }

    /// A fuzzy checkpoint: sessions keep working while it runs.
    /// 1. Publish the redo point (the log's end): from now on, a page's first change is
    ///    logged as a full image.
    /// 2. The logical point: the oldest commit still being applied, if older.
    /// 3. Write every dirty page (each after the log is durable up to its LSN), fdatasync.
    /// 4. Write the catalog naming both points (atomically, durably); release old segments.
    pub fn checkpoint(&self) -> Result<()> {
        self.writable("a checkpoint")?;
        checkpoint(&self.inner, true)
    }

    /// True when opened with `Options::read_only`.
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    fn writable(&self, what: &str) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::ReadOnly(what.to_string()));
        }
        Ok(())
    }

    /// Closes the database cleanly: a final checkpoint, the log flushed and stopped. Fails
    /// if sessions or other handles are still open.
    pub fn close(self) -> Result<()> {
        {
            // The checkpointer holds the database (a strong reference) while it checks and
            // checkpoints, so it is stopped before the handles are counted: counted, it
            // would fail a close now and then for a handle nobody can drop. The lock makes
            // concurrent closes take turns.
            let mut checkpointer = self.inner.checkpointer.lock();
            let was_running = match checkpointer.take() {
                Some(handle) => {
                    self.inner.stop_signal.stop();
                    let _ = handle.join();
                    true
                }
                None => false,
            };
            let handles = Arc::strong_count(&self.inner);
            if handles > 1 {
                if was_running {
                    // The database stays open for the other handles: checkpoints go on.
                    *self.inner.stop_signal.stopped.lock() = false;
                    *checkpointer = Some(spawn_checkpointer(&self.inner)?);
                }
                return Err(Error::InvalidOption(format!(
                    "close: {} other handles or sessions are still open; drop them first",
                    handles - 1
                )));
            }
        }
        if self.inner.read_only {
            self.inner.closed.store(true, Ordering::Release);
            return Ok(());
        }
        // A clean close of an unlogged run: its pages are all on disk after this.
        checkpoint(&self.inner, false)?;
        if let Some(wal) = &self.inner.wal {
            wal.shutdown()?;
        }
        self.inner.closed.store(true, Ordering::Release);
        Ok(())
    }
}

/// Refuses a spec no table can be made from: names out of range, a schema over its limit,
/// parameters the key kind or layout refuse, supplied keys on a plain heap.
fn validate_spec(spec: &TableSpec<'_>) -> Result<()> {
    if spec.name.is_empty()
        || spec.name.len() > NAME_BYTES_MAX
        || spec.design.len() > NAME_BYTES_MAX
    {
        return Err(Error::InvalidOption(format!(
            "table and design names must be 1 to {NAME_BYTES_MAX} bytes"
        )));
    }
    if spec.schema.len() > SCHEMA_BYTES_MAX {
        return Err(Error::InvalidOption(format!(
            "a table schema of {} bytes is over the limit of {SCHEMA_BYTES_MAX}",
            spec.schema.len()
        )));
    }
    spec.kind.validate()?;
    spec.layout.validate(spec.kind)?;
    if spec.user_keys && matches!(spec.layout, Layout::Heap { .. }) {
        return Err(Error::InvalidOption(
            "a plain heap cannot look keys up, so it cannot take supplied keys".into(),
        ));
    }
    Ok(())
}

/// A new table's in-memory state, with empty storage (the caller publishes it).
/// `next_key`: where a counter key generator starts (None: the kind's start).
fn new_table(
    inner: &Inner,
    id: usize,
    spec: &TableSpec<'_>,
    next_key: Option<i64>,
) -> Result<Table> {
    let (trees, heap) = new_storage(
        &inner.pool,
        &inner.stats,
        spec.layout,
        routing::placement(spec.unlogged),
    )?;
    let (trees, heap) = routing::with_loggers(
        inner.wal.as_ref(),
        &inner.redo_lsn,
        spec.unlogged,
        trees,
        heap,
    );
    let seed = inner
        .options
        .key_seed
        .map(|seed| seed ^ inner.wal.as_ref().map_or(0, |w| w.end()).rotate_left(17));
    Ok(Table {
        id,
        name: spec.name.to_string(),
        design: spec.design.to_string(),
        trees,
        heap,
        layout: spec.layout,
        flow: routing::flow_gate(spec.layout, &inner.stats),
        memory: memory::create(&*inner.storage, id, spec.layout)?,
        keys: KeyGenerator::new(spec.kind, next_key)?.with_seed(seed),
        rows: AtomicU64::new(0),
        published: AtomicBool::new(false),
        dropped: AtomicBool::new(false),
        user_keys: spec.user_keys,
        schema: spec.schema.to_vec(),
        unlogged: spec.unlogged,
        unique: KeyLocks::default(),
    })
}

/// Takes a table whose creation checkpoint failed out of the table list again, so that no
/// later checkpoint writes it to the catalog. It is the last table: its creator holds the
/// checkpoint lock. Nobody found it (it was never published). Its pages stay allocated:
/// empty, unlinked and named by no catalog (pages are never freed), which `hotpage check`
/// reports as a warning, not a fault (docs/design.md, "Leaked pages").
fn forget_failed_table(inner: &Inner, table: &TableHandle) {
    {
        let mut tables = inner.tables.write();
        if tables.last().is_some_and(|last| Arc::ptr_eq(last, table)) {
            tables.pop();
        }
    }
    if let Some(memory) = &table.memory {
        // Best effort: an empty file that no catalog names is harmless, and the next table
        // given this id truncates it.
        let _ = inner.storage.remove(memory.file_name());
    }
}

/// A fuzzy checkpoint (see [`Database::checkpoint`]). `staying_open`: false only for the
/// one at a clean close (the catalog then says that no session's rows are uncounted, and,
/// for an unlogged database, that it was closed).
fn checkpoint(inner: &Inner, staying_open: bool) -> Result<()> {
    let mut state = inner.checkpoint_lock.lock();
    checkpoint_locked(inner, &mut state, staying_open)
}

/// Waits until every commit that was applying when this was called (other than `own`'s)
/// has finished. The caller marked a table dropped first: a commit whose marker was not
/// set yet will see that flag after setting it (both sides order the two with SeqCst), and
/// fail; one whose marker was set has passed or will pass its check, and its rows are on
/// the table once this returns.
fn wait_for_appliers(inner: &Inner, own: Option<&Arc<ApplyMarker>>) {
    fence(Ordering::SeqCst);
    let busy: Vec<(Arc<ApplyMarker>, Applying)> = inner
        .appliers
        .lock()
        .iter()
        .filter_map(Weak::upgrade)
        .filter(|marker| own.is_none_or(|own| !Arc::ptr_eq(marker, own)))
        .filter_map(|marker| marker.applying().map(|seen| (marker, seen)))
        .collect();
    for (marker, seen) in busy {
        marker.wait_until_past(seen);
    }
}

/// A checkpoint's two points, `(redo, logical)`, with the redo point published.
///
/// The logical point is taken first, the redo point after it. Leaf inserts of the B+trees
/// are not logged (their rows are in commit records), so every row a session applies after
/// the redo point is published must be re-applied by recovery: its commit must lie at or
/// after the logical point. A commit whose "applying since" marker the scan below sees is
/// covered by the marker (set before its record was reserved). A commit whose marker the
/// scan misses stored it after the scan (SeqCst), so it reserved its record after `end` was
/// read here: its LSN is at least `end`. A commit that finished applying before the scan
/// put its rows on pages before the redo point existed: the checkpoint flushes them, and a
/// later image of the page holds them. Taken the other way round (redo first), a commit
/// applied whole between the two reads would be covered by neither.
fn checkpoint_points(inner: &Inner, wal: &Wal) -> (Lsn, Lsn) {
    let mut logical = wal.end();
    inner.appliers.lock().retain(|weak| match weak.upgrade() {
        Some(applying) => {
            logical = logical.min(applying.since());
            true
        }
        None => false,
    });
    #[cfg(test)]
    run_hook(&inner.hooks.between_checkpoint_points);
    let redo = wal.end();
    assert!(logical <= redo, "the logical point precedes the redo point");
    inner.redo_lsn.store(redo, Ordering::SeqCst);
    (redo, logical)
}

/// A checkpoint by a caller that holds the checkpoint lock (`state`).
fn checkpoint_locked(inner: &Inner, state: &mut CheckpointState, staying_open: bool) -> Result<()> {
    inner.stop.check()?;
    #[cfg(test)]
    run_hook(&inner.hooks.before_checkpoint_points);
    // Before the points (see `truncate`'s module docs).
    let swaps = truncate::SwapSnapshot::take(inner);
    // Before the points too: each row these counts hold was applied, so its commit lies
    // before the redo point, which is durable before the catalog is stored. Recovery must
    // find at least these rows (`open::reapply_and_recount`); a later read could count a
    // row whose commit an asynchronous crash then loses, as it may.
    let counted: Vec<(usize, u64)> = inner
        .tables
        .read()
        .iter()
        .map(|t| (t.id, t.rows.load(Ordering::Acquire)))
        .collect();
    let (redo, logical) = match &inner.wal {
        Some(wal) => checkpoint_points(inner, wal),
        None => (state.last_end, state.last_end),
    };
    if let Err(error) = inner.pool.flush_all() {
        // The kernel may have dropped pages it now reports clean: no checkpoint may ever
        // claim the data file is current again, and commits stop too (fail-stop).
        if let Some(wal) = &inner.wal {
            wal.stop("writing the data files at a checkpoint", &error);
        }
        return Err(error);
    }
    if let Some(wal) = &inner.wal {
        // The log up to the redo point is durable before the catalog names it: recovery
        // then knows a log that ends before it lost records (see `wal::reader`).
        wal.wait_durable(redo)?;
    }
    // Memory tables: the rows of every commit before `logical` go to their checkpoint
    // files before the catalog lets the log before `logical` go.
    let tables: Vec<TableHandle> = inner.tables.read().clone();
    memory::save(&tables, inner.wal.as_deref())?;
    let mut catalog = Catalog {
        page_size: inner.pool.page_size() as u32,
        redo_lsn: redo,
        logical_lsn: logical,
        unlogged_open: inner.durability == Durability::None && staying_open,
        rows_uncounted: staying_open,
        log_salt: inner.log_salt,
        log_segment_bytes: inner.log_segment_bytes,
        format_version: LOGICAL_LEAVES_FORMAT_VERSION,
        metadata: inner.metadata.lock().clone(),
        pending_truncates: Vec::new(),
        tables: tables.iter().map(|t| table_entry(t, &counted)).collect(),
    };
    swaps.write_into(&mut catalog);
    catalog.format_version = catalog.written_format();
    catalog.store(&*inner.storage)?;
    swaps.forget_settled(inner);
    inner.log_start.store(logical, Ordering::SeqCst);
    if let Some(wal) = &inner.wal {
        wal.release_before(logical, inner.options.checkpoint_log_bytes);
    }
    state.last_end = redo;
    state.last_at = Instant::now();
    state.checkpoints += 1;
    Ok(())
}

/// A table's catalog entry, with the row count `counted` read for it before the
/// checkpoint's points (0 for a table created since).
fn table_entry(t: &Table, counted: &[(usize, u64)]) -> TableEntry {
    let roots = t.roots();
    let rows = counted
        .iter()
        .find(|(id, _)| *id == t.id)
        .map_or(0, |(_, rows)| *rows);
    TableEntry {
        name: t.name.clone(),
        design: t.design.clone(),
        kind: t.keys.kind(),
        root: roots.first().copied().unwrap_or(PageId::NONE),
        key_high_water: t.keys.high_water(),
        rows,
        layout: t.layout,
        extra_roots: roots.get(1..).unwrap_or_default().to_vec(),
        memory_bytes: t.memory_bytes(),
        dropped: t.is_dropped(),
        user_keys: t.user_keys,
        schema: t.schema.clone(),
        unlogged: t.unlogged,
    }
}

/// Starts the checkpointer thread (at open, and again after a refused `close` stopped it).
fn spawn_checkpointer(inner: &Arc<Inner>) -> Result<JoinHandle<()>> {
    let weak = Arc::downgrade(inner);
    let stop = Arc::clone(&inner.stop_signal);
    std::thread::Builder::new()
        .name("hotpage-checkpointer".into())
        .spawn(move || checkpointer_loop(&weak, &stop))
        .map_err(|e| Error::io("starting the checkpointer", e))
}

/// Checkpoints when enough log has accumulated or enough time has passed. Holds the
/// database only while it checks and checkpoints, so dropping the last handle ends it.
fn checkpointer_loop(weak: &Weak<Inner>, stop: &StopSignal) {
    loop {
        {
            let mut stopped = stop.stopped.lock();
            if !*stopped {
                stop.signal
                    .wait_for(&mut stopped, Duration::from_millis(100));
            }
            if *stopped {
                return;
            }
        }
        let Some(inner) = weak.upgrade() else {
            return;
        };
        let due = match &inner.wal {
            Some(wal) if !wal.has_failed() => {
                let state = inner.checkpoint_lock.lock();
                let new_log = wal.end().saturating_sub(state.last_end);
                new_log >= inner.options.checkpoint_log_bytes
                    || (new_log > 0 && state.last_at.elapsed() >= inner.options.checkpoint_interval)
            }
            _ => false,
        };
        if due {
            // A failed checkpoint is retried at the next tick; commits report log failures.
            let _ = checkpoint(&inner, true);
        }
        note_durable_end(&inner);
    }
}

/// Makes the log's durable end in `log.durable` durable (the flushes write it: see
/// `log::durable_mark`). It is evidence for a later open, not a promise to anyone: a sync
/// that fails is tried again at the next tick.
fn note_durable_end(inner: &Inner) {
    let Some(wal) = &inner.wal else {
        return;
    };
    if wal.has_failed() || !inner.options.durable_marks {
        return;
    }
    wal.sync_durable_mark();
}

/// One session: a thread's connection to the database. Holds per-session key state
/// (sequence caches, GUID random state) and the open transaction, so each thread should
/// have its own.
pub struct Session {
    db: Arc<Inner>,
    id: u64,
    txn_seq: u64,
    durability: Durability,
    key_sessions: Vec<Option<KeySession>>,
    // Per table: this session's insert target in a heap (see `heap`).
    heap_targets: Vec<HeapTarget>,
    pending_rows: Vec<u64>,
    txn: Option<PendingTxn>,
    // The open transaction's name (`name_transaction`), recorded at its commit.
    txn_name: Option<Arc<str>>,
    // The key locks the open transaction holds (see `insert_unique`).
    held_keys: Vec<(TableHandle, Key)>,
    // What may end a wait for another session's key (`set_wait_limits`).
    wait_limits: WaitLimits,
    // Marks the commit this session is applying, if any (see `apply_marker`).
    applying: Arc<ApplyMarker>,
    // The marker, the stop and the log again, cloned at the first commit, for `commit_rows`
    // to hold while it borrows the session mutably (`None` before the first commit and
    // while a commit runs).
    commit_refs: Option<CommitRefs>,
    // Reused commit-record buffer.
    record: Vec<u8>,
    // Its buffer-pool frame permits: reserved for life, or taken per operation.
    frames: FrameClaim,
    // This session's request to the grouped apply, and its batch when it applies one
    // (see `group_apply`).
    apply_slot: Arc<group_apply::ApplySlot>,
    apply_batch: group_apply::Batch,
    // Counts this session while it lives (`Stats::sessions`).
    _slot: crate::stats::SessionSlot,
}

/// What a commit holds while it runs: the session's applying marker, the database's stop
/// and its log. Not the database itself: `Database::close` counts the database's other
/// references as its open handles and sessions.
struct CommitRefs {
    applying: Arc<ApplyMarker>,
    stop: Arc<FailStop>,
    wal: Option<Arc<Wal>>,
}

impl CommitRefs {
    fn of(session: &Session) -> CommitRefs {
        CommitRefs {
            applying: Arc::clone(&session.applying),
            stop: Arc::clone(&session.db.stop),
            wal: session.db.wal.clone(),
        }
    }
}

/// Stops the database after a durable commit's rows failed to apply, and returns the
/// error its committer gets. The commit is in the log but its rows are only partly
/// applied: no checkpoint may now move the logical point past it (its rest would never be
/// applied), so the database stops like a failed log, and reopening re-applies the whole
/// transaction. An I/O error gets here; a short pool cannot (the apply waits for frames
/// instead: see `Session::apply`).
fn stop_after_apply(db: &Inner, wal: &Wal, error: &Error) -> Error {
    debug_assert!(
        !matches!(error, Error::PoolExhausted { .. }),
        "an apply failed for want of frames: {error}"
    );
    wal.stop("applying a committed transaction's rows", error);
    // The caller gets what every later caller will: the first cause, with what to do
    // about it.
    db.stop.error()
}

/// Counts one applied row of `table` in a session's `pending_rows` (added to the table's
/// count in steps).
fn count_applied(pending_rows: &mut [u64], table: &TableHandle) {
    let pending = &mut pending_rows[table.id];
    *pending += 1;
    if *pending >= ROW_COUNT_FLUSH_EVERY {
        table.rows.fetch_add(*pending, Ordering::Release);
        *pending = 0;
    }
}

/// Applies one row of a durable commit through the grouped apply (see `group_apply`).
fn insert_committed(db: &Inner, table: &TableHandle, key: &Key, row: &[u8]) -> Result<()> {
    let inserted = table.insert_into_tree(key.as_bytes(), row)?;
    applied_or_duplicate(db, table, key, inserted)
}

/// A committed row's insert's outcome as the commit sees it: a key already there is an
/// error (the caller stops the database: see `stop_after_apply`).
fn applied_or_duplicate(
    db: &Inner,
    table: &TableHandle,
    key: &Key,
    inserted: Inserted,
) -> Result<()> {
    #[cfg(not(test))]
    let _ = db;
    match inserted {
        Inserted::Yes => {
            #[cfg(test)]
            run_hook(&db.hooks.after_first_row_applied);
            Ok(())
        }
        Inserted::Duplicate => Err(Error::DuplicateKey {
            table: table.name.clone(),
            key: table.keys.kind().decode(key),
        }),
    }
}

/// The live table named `name`.
fn live_table(inner: &Inner, name: &str) -> Result<TableHandle> {
    let found = inner
        .tables
        .read()
        .iter()
        .find(|t| t.name == name && t.published.load(Ordering::Acquire) && !t.is_dropped())
        .cloned();
    match found {
        Some(table) => Ok(table),
        // Between a swap's checkpoint and its commit record (see `truncate`).
        None if truncate::swap_waiting(inner, name) => Err(Error::TableBusy(name.to_string())),
        None => Err(Error::NoSuchTable(name.to_string())),
    }
}

/// [`Database::truncate_table`] on the shared state, for a commit of a database without a
/// log that truncates too; with `redefine`, [`Database::redefine_empty_table`] (which
/// `must_be_empty`) or a rebuild without a log (`Session::rebuild_table`).
fn truncate_locked(
    inner: &Arc<Inner>,
    name: &str,
    redefine: Option<&TableSpec<'_>>,
    expected_rows: Option<usize>,
    prepare: &mut dyn FnMut(&TableHandle) -> Result<()>,
) -> Result<TableHandle> {
    let mut checkpoint_state = inner.checkpoint_lock.lock();
    let old = live_table(inner, name)?;
    truncate::check_not_truncating(inner, name)?;
    let kept = truncate::spec_of(&old);
    let (spec, next_key) = match redefine {
        None => (&kept, Some(old.keys.high_water())),
        Some(spec) => (spec, None),
    };
    let table = {
        let mut tables = inner.tables.write();
        let table = Arc::new(new_table(inner, tables.len(), spec, next_key)?);
        tables.push(Arc::clone(&table));
        table
    };
    // Before anyone can find the new table (see `truncate::begin_truncates`).
    if let Err(error) = prepare(&table) {
        forget_failed_table(inner, &table);
        return Err(error);
    }
    old.dropped.store(true, Ordering::Release);
    let checked = match expected_rows {
        Some(expected) => check_rows_after_drop(inner, &old, expected),
        None => Ok(()),
    };
    if let Err(error) = checked.and_then(|()| checkpoint_locked(inner, &mut checkpoint_state, true))
    {
        old.dropped.store(false, Ordering::Release);
        forget_failed_table(inner, &table);
        return Err(error);
    }
    table.published.store(true, Ordering::Release);
    Ok(table)
}

/// Checks that `old`, just marked dropped, holds `expected` rows once every commit that may
/// still have been applying to it is done (`wait_for_appliers`): [`Error::TableNotEmpty`]
/// when it should be empty, else [`Error::TableBusy`] (a commit came in meanwhile).
fn check_rows_after_drop(inner: &Inner, old: &TableHandle, expected: usize) -> Result<()> {
    wait_for_appliers(inner, None);
    let mut count = 0usize;
    old.scan(None, |_, _| {
        count += 1;
        count <= expected
    })?;
    match (count == expected, expected) {
        (true, _) => Ok(()),
        (false, 0) => Err(Error::TableNotEmpty(old.name.clone())),
        (false, _) => Err(Error::TableBusy(old.name.clone())),
    }
}

struct PendingTxn {
    rows: Vec<(TableHandle, Key, Vec<u8>)>,
    /// What `rows` and their supplied keys take in memory (see `staged`).
    charge: staged::Charge,
    /// Tables this transaction truncates (`Session::truncate_at_commit`): empty for its
    /// own reads and inserts now, emptied for everyone at commit.
    truncated: Vec<TableHandle>,
    /// The supplied keys among `rows`, by table id: a duplicate within the transaction
    /// is found without a pass over every row (a COPY of 100,000 rows made that
    /// quadratic).
    supplied: HashSet<(usize, Vec<u8>)>,
}

impl PendingTxn {
    /// The rows as a commit takes them.
    fn row_refs(&self) -> Vec<(&TableHandle, Key, &[u8])> {
        self.rows
            .iter()
            .map(|(t, k, r)| (t, *k, r.as_slice()))
            .collect()
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("db", &self.db.path)
            .field("id", &self.id)
            .finish()
    }
}

impl Session {
    /// This session's durability: the database's, or what `set_durability` chose.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Sets this session's durability: `Sync` or `Async` on a logged database. `None` is a
    /// database-wide choice (a session cannot skip a log others rely on).
    pub fn set_durability(&mut self, durability: Durability) -> Result<()> {
        if (durability == Durability::None) != (self.db.durability == Durability::None) {
            return Err(Error::InvalidOption(format!(
                "session durability {} on a database opened with durability {}",
                durability.name(),
                self.db.durability.name()
            )));
        }
        self.durability = durability;
        Ok(())
    }

    /// Starts a transaction: inserts wait in the session until `commit`.
    pub fn begin(&mut self) -> Result<()> {
        if self.txn.is_some() {
            return Err(Error::InvalidOption(
                "a transaction is already open in this session".into(),
            ));
        }
        self.txn_name = None;
        self.txn = Some(PendingTxn {
            rows: Vec::new(),
            charge: staged::Charge::new(&self.db.staged),
            truncated: Vec::new(),
            supplied: HashSet::new(),
        });
        Ok(())
    }

    /// Names the open transaction (SQL Server's `BEGIN TRAN name`, or `user_transaction`).
    /// The name is the log readers' (`Database::visit_log_records`): its commit logs it
    /// in a `TxnName` record just after the commit record (see `txn_names`). At most
    /// [`TXN_NAME_BYTES_MAX`] bytes.
    pub fn name_transaction(&mut self, name: &str) -> Result<()> {
        if self.txn.is_none() {
            return Err(Error::InvalidOption("no open transaction to name".into()));
        }
        if name.len() > TXN_NAME_BYTES_MAX {
            return Err(Error::InvalidOption(format!(
                "a transaction name is at most {TXN_NAME_BYTES_MAX} bytes"
            )));
        }
        self.txn_name = Some(Arc::from(name));
        Ok(())
    }

    /// True while a transaction is open.
    pub fn in_transaction(&self) -> bool {
        self.txn.is_some()
    }

    /// Inserts one row, with a key from the table's generator, and returns the key. Outside
    /// a transaction it commits at once (autocommit).
    pub fn insert(&mut self, table: &TableHandle, row: &[u8]) -> Result<Key> {
        self.check_insert(table, row)?;
        let key_session = self.key_sessions[table.id].get_or_insert_with(|| table.keys.session());
        let key = table.keys.next_key(key_session)?;
        if table.user_keys {
            // A supplied key may already hold this value.
            self.insert_unique(table, key, row)?;
        } else {
            self.stage_or_commit(table, key, row)?;
        }
        Ok(key)
    }

    /// Inserts one row under a key the caller supplies, into a table created with
    /// [`TableSpec::user_keys`]. A key the table (or this transaction) already holds is
    /// [`Error::DuplicateKey`], found before anything is logged; a key another open
    /// transaction is inserting is waited for (see `unique`'s module docs for when that is
    /// [`Error::KeyLockTimeout`] instead). Outside a transaction it commits at once.
    pub fn insert_keyed(&mut self, table: &TableHandle, key: &Key, row: &[u8]) -> Result<()> {
        if !table.user_keys {
            return Err(Error::InvalidOption(format!(
                "table {} generates its keys; a table that takes supplied keys is created \
                 with TableSpec::user_keys",
                table.name
            )));
        }
        self.check_insert(table, row)?;
        self.insert_unique(table, *key, row)
    }

    /// Takes the next key from `table`'s generator without inserting (SQL's `nextval()` on
    /// a sequence that generates a table's keys). The value is used up, like a rolled-back
    /// insert's.
    pub fn next_key(&mut self, table: &TableHandle) -> Result<Key> {
        self.check_insert(table, &[])?;
        let key_session = self.key_sessions[table.id].get_or_insert_with(|| table.keys.session());
        table.keys.next_key(key_session)
    }

    /// Refuses an insert into a read-only database or of a row too large, and sizes this
    /// session's per-table state for `table`.
    fn check_insert(&mut self, table: &TableHandle, row: &[u8]) -> Result<()> {
        if self.db.read_only {
            return Err(Error::ReadOnly("an insert".into()));
        }
        if table.is_dropped() {
            // A handle taken before a drop: its rows would be in no table anyone can read.
            return Err(Error::NoSuchTable(table.name.clone()));
        }
        let max = table.layout.row_bytes_max(self.db.pool.page_size());
        if row.len() > max {
            return Err(Error::RowTooLarge {
                len: row.len(),
                max,
            });
        }
        if self.key_sessions.len() <= table.id {
            self.key_sessions.resize_with(table.id + 1, || None);
            self.heap_targets
                .resize_with(table.id + 1, HeapTarget::default);
            self.pending_rows.resize(table.id + 1, 0);
        }
        Ok(())
    }

    /// What may end this session's waits for another session's key from now on: a
    /// cancel flag, a deadline, a lock timeout ([`Error::WaitStopped`]). The default is
    /// none: a session that holds no key waits until the other transaction ends.
    pub fn set_wait_limits(&mut self, limits: WaitLimits) {
        self.wait_limits = limits;
    }

    /// Proves `key` unique, then stages or commits the row: locks the key, looks it up, and
    /// keeps the lock until the row is applied (autocommit) or the transaction ends.
    fn insert_unique(&mut self, table: &TableHandle, key: Key, row: &[u8]) -> Result<()> {
        let duplicate = || Error::DuplicateKey {
            table: table.name.clone(),
            key: table.keys.kind().decode(&key),
        };
        if let Some(txn) = &self.txn
            && txn.supplied.contains(&(table.id, key.as_bytes().to_vec()))
        {
            return Err(duplicate());
        }
        let requester = Requester {
            session: self.id,
            holding_others: !self.held_keys.is_empty(),
            limits: &self.wait_limits,
        };
        table
            .unique
            .lock(&key, &requester, &table.name, &self.db.stats, |k| {
                table.keys.kind().decode(k)
            })?;
        // A table this transaction truncates holds nothing, as far as it is concerned.
        let truncated = self.truncates(table);
        let result = self
            .frames
            .enter_read()
            .and_then(|_frames| {
                if truncated {
                    Ok(None)
                } else {
                    table.get(key.as_bytes())
                }
            })
            .and_then(|found| match found {
                Some(_) => Err(duplicate()),
                None => self.stage_or_commit(table, key, row),
            });
        if result.is_ok()
            && let Some(txn) = &mut self.txn
        {
            txn.supplied.insert((table.id, key.as_bytes().to_vec()));
            self.held_keys.push((Arc::clone(table), key));
        } else {
            table.unique.unlock(&key, self.id);
        }
        result
    }

    /// Adds the row to the open transaction, charging it to the staged-row budget (see
    /// `staged`), or commits it at once.
    fn stage_or_commit(&mut self, table: &TableHandle, key: Key, row: &[u8]) -> Result<()> {
        let bytes_max = self.db.options.txn_memory_bytes_max;
        match &mut self.txn {
            Some(txn) => {
                let bytes = staged::row_charge(table.user_keys, &key, row);
                txn.charge.add(bytes, bytes_max)?;
                txn.rows.push((Arc::clone(table), key, row.to_vec()));
                Ok(())
            }
            None => self.commit_rows(&[(table, key, row)], None),
        }
    }

    /// Releases the key locks of the transaction that just ended (its rows are applied, or
    /// it was abandoned).
    fn release_keys(&mut self) {
        for (table, key) in self.held_keys.drain(..) {
            table.unique.unlock(&key, self.id);
        }
    }

    /// Commits the open transaction: with `Sync` durability, returns once its commit record
    /// is durable (group commit). Its rows are then visible to every session.
    pub fn commit(&mut self) -> Result<()> {
        let Some(mut txn) = self.txn.take() else {
            return Err(Error::InvalidOption("commit without begin".into()));
        };
        let result = if txn.truncated.is_empty() {
            self.commit_rows(&txn.row_refs(), None)
        } else {
            self.commit_truncating(&mut txn)
        };
        self.release_keys();
        self.txn_name = None;
        result
    }

    /// Abandons the open transaction: none of its rows is ever visible, before or after a
    /// crash. (Its generated keys are not reused, like SQL Server's identity gaps.)
    pub fn rollback(&mut self) -> Result<()> {
        let Some(txn) = self.txn.take() else {
            return Err(Error::InvalidOption("rollback without begin".into()));
        };
        self.release_keys();
        self.txn_name = None;
        if let Some(wal) = self.db.wal.clone() {
            // For `inspect log` only; recovery ignores it.
            let mut body = [0u8; 12];
            body[..8].copy_from_slice(&self.next_txn_id().to_le_bytes());
            body[8..].copy_from_slice(&(txn.rows.len() as u32).to_le_bytes());
            wal.append(RecordKind::TxnAbort, &[&body])?;
        }
        Ok(())
    }

    fn next_txn_id(&mut self) -> u64 {
        self.txn_seq += 1;
        (self.id << 32) | (self.txn_seq & 0xffff_ffff)
    }

    /// Logs, waits for and applies a commit. `truncating`: the id of a transaction that
    /// truncates tables (see `truncate`): its commit record is logged under that id even
    /// with no rows, and its truncations are marked logged once it is appended.
    fn commit_rows(
        &mut self,
        rows: &[(&TableHandle, Key, &[u8])],
        truncating: Option<u64>,
    ) -> Result<()> {
        if rows.is_empty() && truncating.is_none() {
            return Ok(());
        }
        // Before reserving: a checkpoint that misses this marker sees our record's LSN
        // at or after its redo point (see Database::checkpoint). Before the dropped-table
        // check: a rebuild that marks the table dropped after this check waits for the
        // marker to clear (`wait_for_appliers`), so it counts these rows.
        let since = self.db.wal.as_ref().map_or(0, |wal| wal.end());
        // Moved out for the commit, not cloned: a clone of the database's `Arc` per commit
        // was a locked write to one cache line that every session's commits shared.
        let refs = self
            .commit_refs
            .take()
            .unwrap_or_else(|| CommitRefs::of(self));
        let result = {
            let stop = StopOnPanic {
                stop: &refs.stop,
                wal: refs.wal.as_deref(),
            };
            let _marked = refs.applying.begin(since, stop);
            self.commit_rows_marked(refs.wal.as_deref(), rows, truncating)
        };
        self.commit_refs = Some(refs);
        result
    }

    /// [`Session::commit_rows`] with this session's applying marker set.
    fn commit_rows_marked(
        &mut self,
        wal: Option<&Wal>,
        rows: &[(&TableHandle, Key, &[u8])],
        truncating: Option<u64>,
    ) -> Result<()> {
        // A table dropped since these rows were inserted: the transaction fails whole, and
        // nothing of it is logged. SeqCst, like the marker's store before it, so the two
        // are not reordered (`wait_for_appliers` stores a flag, then reads the markers).
        if let Some((dropped, _, _)) = rows
            .iter()
            .find(|(t, _, _)| t.dropped.load(Ordering::SeqCst))
        {
            return Err(Error::NoSuchTable(dropped.name.clone()));
        }
        #[cfg(test)]
        run_hook(&self.db.hooks.after_dropped_check);
        self.db.stop.check()?;
        let Some(wal) = wal else {
            return self.apply(rows);
        };
        if rows.iter().any(|(t, _, _)| t.unlogged) {
            return self.commit_with_unlogged(wal, rows, truncating);
        }
        let txn = truncating.unwrap_or_else(|| self.next_txn_id());
        let logged = self.log_commit(wal, txn, rows);
        if logged.is_ok() && truncating.is_some() {
            // Before the marker is cleared (see `truncate`'s module docs).
            truncate::mark_logged(&self.db, txn);
            #[cfg(test)]
            run_hook(&self.db.hooks.after_swap_logged);
        }
        let logged = logged.map(|end| self.log_name(wal, txn).unwrap_or(end));
        logged.and_then(|end| {
            if self.durability != Durability::Sync {
                return self
                    .apply(rows)
                    .map_err(|error| stop_after_apply(&self.db, wal, &error));
            }
            // A commit without rows (a TRUNCATE's) has nothing to apply in order.
            if group_apply::worth_grouping(self.db.stats.sessions())
                && !rows.is_empty()
                && rows.iter().all(|(t, _, _)| t.applies_in_key_order())
            {
                return self.commit_grouped(wal, end, rows);
            }
            wal.wait_durable(end)?;
            self.apply(rows)
                .map_err(|error| stop_after_apply(&self.db, wal, &error))
        })
    }

    /// Waits for a durable commit whose rows the grouped apply applies (see `group_apply`):
    /// posts them, waits with its wake-up delegated, applies batches as the taker if its
    /// request is still queued then and no taker is at work (or when the role is handed to
    /// it), and returns once its rows are applied.
    fn commit_grouped(
        &mut self,
        wal: &Wal,
        end: Lsn,
        rows: &[(&TableHandle, Key, &[u8])],
    ) -> Result<()> {
        let queue = &self.db.group_apply;
        self.apply_slot.fill(rows);
        queue.post(end, &self.apply_slot);
        match wal.wait_durable_delegated(end) {
            // Not durable: nobody applies it. If another thread took it, it was durable
            // after all (taken only once covered), and is waited for below.
            Err(error) if queue.withdraw(&self.apply_slot) => return Err(error),
            Err(_) => {}
            Ok(()) => {
                let batch = &mut self.apply_batch;
                if queue.take_if_queued(&self.apply_slot, wal.durable(), batch) {
                    self.apply_as_taker(wal);
                }
            }
        }
        loop {
            match self.apply_slot.wait_applied() {
                group_apply::Applied::Yes => {
                    for (table, _, _) in rows {
                        count_applied(&mut self.pending_rows, table);
                    }
                    return Ok(());
                }
                group_apply::Applied::Failed => {
                    assert!(
                        self.db.stop.is_stopped(),
                        "a grouped commit failed while the database runs"
                    );
                    return Err(self.db.stop.error());
                }
                group_apply::Applied::Handed => {
                    let batch = &mut self.apply_batch;
                    let queue = &self.db.group_apply;
                    queue.take_handed(&self.apply_slot, wal.durable(), batch);
                    self.apply_as_taker(wal);
                }
            }
        }
    }

    /// Applies the batch this session took, then, while it holds the taker's role, the
    /// batches after it (`ApplyQueue::take_more`). A row that fails stops the database
    /// before any owner is told (`Batch::apply`); after a stop, rows are not inserted and
    /// their commits fail with the stop's cause (the reopen re-applies them).
    fn apply_as_taker(&mut self, wal: &Wal) {
        let _frames = self.frames.enter_apply();
        let db = &self.db;
        let queue = &db.group_apply;
        let batch = &mut self.apply_batch;
        let stop = |error: &Error| drop(stop_after_apply(db, wal, error));
        let durable = || wal.durable();
        let taker = group_apply::TakerGuard {
            queue,
            stop: &stop,
            durable: &durable,
            armed: true,
        };
        let insert = |table: &TableHandle, key: &Key, row: &[u8]| {
            db.stop.check()?;
            insert_committed(db, table, key, row)
        };
        for batches in 1.. {
            if let Ok(applied) = batch.apply(insert, &stop, || queue.end_insert()) {
                db.stats.count(Counter::GroupedApplyRows, applied as u64);
                db.stats.count(Counter::GroupedApplyBatches, 1);
            }
            if queue.take_more(wal.durable(), batch, batches) == group_apply::Next::Done {
                break;
            }
        }
        taker.disarm();
    }

    /// A commit with rows of unlogged tables: only the logged tables' rows go into the
    /// commit record (none at all if every row is unlogged: then nothing is logged and
    /// nothing waited for). The unlogged rows are applied after the logged ones, so a
    /// crash can lose them (their table is emptied anyway) but never the logged ones.
    fn commit_with_unlogged(
        &mut self,
        wal: &Wal,
        rows: &[(&TableHandle, Key, &[u8])],
        truncating: Option<u64>,
    ) -> Result<()> {
        let (unlogged, logged): (Vec<_>, Vec<_>) =
            rows.iter().copied().partition(|(t, _, _)| t.unlogged);
        debug_assert!(!unlogged.is_empty());
        if !logged.is_empty() || truncating.is_some() {
            // Not `commit_rows`: that would clear this commit's applying marker before the
            // unlogged rows below are applied (`wait_for_appliers` must see them).
            self.commit_rows_marked(Some(wal), &logged, truncating)?;
        }
        #[cfg(test)]
        run_hook(&self.db.hooks.before_unlogged_apply);
        // A failure here loses only unlogged rows, which no recovery promises: the
        // logged ones are committed and applied; the database goes on.
        self.apply(&unlogged)
    }

    /// Appends the transaction's name, if it has one, just after its commit (see
    /// `txn_names`), and returns the name record's end, which a sync commit then waits
    /// for. `None` without a name, or if the append fails: the log has stopped, and the
    /// commit's own wait reports it.
    fn log_name(&mut self, wal: &Wal, txn: u64) -> Option<Lsn> {
        let name = self.txn_name.take()?;
        let payload = txn_names::encode_txn_name(txn, &name);
        wal.append(RecordKind::TxnName, &[&payload])
            .ok()
            .map(|(_, end)| end)
    }

    /// Appends the commit: one record, or, for a transaction larger than one record holds,
    /// parts whose last one is the commit point. Returns the LSN the commit waits for.
    fn log_commit(
        &mut self,
        wal: &Wal,
        txn: u64,
        rows: &[(&TableHandle, Key, &[u8])],
    ) -> Result<Lsn> {
        let max = wal.record_payload_bytes_max();
        let encoded = txn::COMMIT_HEADER_BYTES
            + rows
                .iter()
                .map(|(_, k, r)| txn::encoded_row_bytes(k, r))
                .sum::<usize>();
        let mut record = std::mem::take(&mut self.record);
        let result = if encoded <= max {
            encode_commit(
                &mut record,
                txn,
                rows.iter().map(|(t, k, r)| (t.id as u32, *k, *r)),
            );
            wal.append(RecordKind::TxnCommit, &[&record])
                .map(|(_, end)| end)
        } else {
            log_parts(wal, txn, rows, max, &mut record)
        };
        self.record = record;
        result
    }

    fn apply(&mut self, rows: &[(&TableHandle, Key, &[u8])]) -> Result<()> {
        // Admission to the buffer pool: waits (FREE_BUFFER) until this apply's frames are
        // guaranteed, and never gives up, so that no apply fails for want of a frame (see
        // `buffer::budget`). Taken after the commit is durable, so a waiting session does
        // not hold up the group commit.
        let _frames = self.frames.enter_apply();
        for (table, key, row) in rows {
            let inserted = table.insert_row(key.as_bytes(), row, &mut self.heap_targets[table.id]);
            applied_or_duplicate(&self.db, table, key, inserted?)?;
            count_applied(&mut self.pending_rows, table);
        }
        Ok(())
    }

    /// Reads the row stored under `key`: this session's own uncommitted row, or a
    /// committed one.
    pub fn get(&self, table: &TableHandle, key: &Key) -> Result<Option<Vec<u8>>> {
        if let Some(txn) = &self.txn
            && let Some((_, _, row)) = txn
                .rows
                .iter()
                .rev()
                .find(|(t, k, _)| t.id == table.id && k == key)
        {
            return Ok(Some(row.clone()));
        }
        if self.truncates(table) {
            return Ok(None);
        }
        let _frames = self.frames.enter_read()?;
        table.get(key.as_bytes())
    }

    /// Truncates `table` as part of the open transaction (SQL's TRUNCATE inside a
    /// transaction block): the rows this transaction inserted into it so far are gone, and
    /// for this transaction's reads and inserts the table is empty from now on. Commit
    /// swaps in a new, empty table for everyone and commits the rows inserted after this
    /// call into it; rollback forgets it all.
    ///
    /// Atomic with the commit, across crashes too: after a crash the table is emptied if
    /// and only if the transaction's commit is in the log (see the `truncate` module). It
    /// takes no lock: rows other sessions commit to the table before this transaction
    /// commits are emptied with it. While the commit is being made durable, truncating,
    /// dropping or redefining the table elsewhere gets [`Error::TableBusy`].
    pub fn truncate_at_commit(&mut self, table: &TableHandle) -> Result<()> {
        if self.db.read_only {
            return Err(Error::ReadOnly("truncating a table".into()));
        }
        if table.is_dropped() {
            return Err(Error::NoSuchTable(table.name.clone()));
        }
        let Some(txn) = &mut self.txn else {
            return Err(Error::InvalidOption(
                "truncate_at_commit outside a transaction".into(),
            ));
        };
        let mut freed_bytes = 0;
        txn.rows.retain(|(t, key, row)| {
            let kept = t.id != table.id;
            if !kept {
                freed_bytes += staged::row_charge(t.user_keys, key, row);
            }
            kept
        });
        txn.charge.give_back(freed_bytes);
        txn.supplied.retain(|(id, _)| *id != table.id);
        if !txn.truncated.iter().any(|t| t.id == table.id) {
            txn.truncated.push(Arc::clone(table));
        }
        Ok(())
    }

    /// True if the open transaction truncates `table` (see [`Session::truncate_at_commit`]):
    /// its committed rows are not this transaction's to see.
    pub fn truncates(&self, table: &TableHandle) -> bool {
        self.txn
            .as_ref()
            .is_some_and(|txn| txn.truncated.iter().any(|t| t.id == table.id))
    }

    /// The rows this session's open transaction has inserted into `table` and not yet
    /// committed, in insert order (empty outside a transaction). A reader that wants the
    /// transaction's own view merges them with [`Session::scan`]'s committed rows (the SQL
    /// layer does); their keys are not in the table (a supplied key was proved unique).
    pub fn pending_rows(&self, table: &TableHandle) -> Vec<(Key, Vec<u8>)> {
        self.txn.as_ref().map_or_else(Vec::new, |txn| {
            txn.rows
                .iter()
                .filter(|(t, _, _)| t.id == table.id)
                .map(|(_, key, row)| (*key, row.clone()))
                .collect()
        })
    }

    /// Visits committed rows in key order from `from` (inclusive; `None`: the first) until
    /// `visit` returns false.
    pub fn scan(
        &self,
        table: &TableHandle,
        from: Option<&Key>,
        mut visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let from = from.map(|k| k.as_bytes());
        let mut frames: Option<FrameOp<'_>> = Some(self.frames.enter_read()?);
        if !frames.as_ref().is_some_and(FrameOp::holds_shared_permits) {
            return table.scan(from, visit);
        }
        // Shared permits are given back while `visit` runs (the scan holds no latch then):
        // a visitor that waits for another session must not hold up that session's commit.
        let mut refused = None;
        table.scan(from, |key, row| {
            frames = None;
            if !visit(key, row) {
                return false;
            }
            match self.frames.enter_read() {
                Ok(op) => {
                    frames = Some(op);
                    true
                }
                Err(error) => {
                    refused = Some(error);
                    false
                }
            }
        })?;
        refused.map_or(Ok(()), Err)
    }
}

/// Logs a transaction too large for one record as parts of at most `max` payload bytes;
/// the last part is the commit point (see `RecordKind::TxnPart`). Returns its end.
fn log_parts(
    wal: &Wal,
    txn: u64,
    rows: &[(&TableHandle, Key, &[u8])],
    max: usize,
    record: &mut Vec<u8>,
) -> Result<Lsn> {
    let room = max - txn::PART_HEADER_BYTES - txn::COMMIT_HEADER_BYTES;
    let mut first = txn::FIRST_PART;
    let mut start = 0usize;
    let mut end_lsn = 0;
    while start < rows.len() {
        let mut bytes = 0usize;
        let mut end = start;
        while end < rows.len() {
            let row_bytes = txn::encoded_row_bytes(&rows[end].1, rows[end].2);
            if end > start && bytes + row_bytes > room {
                break;
            }
            bytes += row_bytes;
            end += 1;
        }
        let last = end == rows.len();
        encode_part(
            record,
            first,
            last,
            txn,
            rows[start..end]
                .iter()
                .map(|(t, k, r)| (t.id as u32, *k, *r)),
        );
        let (lsn, part_end) = wal.append(RecordKind::TxnPart, &[record])?;
        if first == txn::FIRST_PART {
            first = lsn;
        }
        end_lsn = part_end;
        start = end;
    }
    Ok(end_lsn)
}

impl Drop for Session {
    fn drop(&mut self) {
        // An open transaction is rolled back: its rows were never applied.
        self.txn = None;
        self.release_keys();
        let tables = self.db.tables.read();
        for (id, pending) in self.pending_rows.iter().enumerate() {
            if *pending > 0
                && let Some(table) = tables.get(id)
            {
                table.rows.fetch_add(*pending, Ordering::Release);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer;
    use crate::storage::{CrashMode, MemStorage};

    /// Every open session is counted, with a log or without one (`Durability::None` has
    /// no log, and its inserts are where the count decides the leaf spin).
    #[test]
    fn open_sessions_are_counted_with_or_without_a_log() {
        for durability in [Durability::None, Durability::Sync] {
            let storage = MemStorage::new(9) as Arc<dyn Storage>;
            let options = Options {
                durability,
                ..Options::default()
            };
            let db = Database::open_with_storage(storage, Path::new("m"), options).expect("open");
            assert_eq!(db.inner.wal.is_some(), durability == Durability::Sync);
            let sessions: Vec<Session> = (0..5).map(|_| db.session()).collect();
            assert_eq!(db.inner.stats.sessions(), 5, "{durability:?}");
            drop(sessions);
            assert_eq!(db.inner.stats.sessions(), 0, "{durability:?}");
        }
    }

    /// `close` refuses while a session is open and says how many: each session counts once,
    /// however many commits it made (a commit must not hold the database a second time).
    #[test]
    fn close_counts_each_open_session_once() {
        let storage = MemStorage::new(9) as Arc<dyn Storage>;
        let db =
            Database::open_with_storage(storage, Path::new("m"), Options::default()).expect("open");
        let identity = KeyKind::Identity { start: 1, step: 1 };
        let table = db.create_table("t", "identity", identity).expect("create");
        let mut session = db.session();
        session.insert(&table, b"row").expect("insert");
        let refused = db.close().expect_err("a session is open");
        assert!(
            refused
                .to_string()
                .contains("close: 1 other handles or sessions"),
            "{refused}"
        );
        drop(session);
    }

    /// A commit logged before a checkpoint's points and applied while the checkpoint takes
    /// them, onto a leaf another session imaged meanwhile: its row is in no page record
    /// (leaf inserts are not logged), so recovery must re-apply its commit. That holds
    /// only if the logical point is taken before the redo point (`checkpoint_points`).
    #[test]
    fn a_commit_applied_while_a_checkpoint_takes_its_points_is_recovered() {
        let mem = MemStorage::new(5);
        let options = Options {
            page_size: 4096,
            durability: Durability::Sync,
            ..Options::default()
        };
        let open = |mem: &Arc<MemStorage>| {
            let storage = Arc::clone(mem) as Arc<dyn Storage>;
            Database::open_with_storage(storage, Path::new("m"), options.clone()).expect("open")
        };
        let db = open(&mem);
        let identity = KeyKind::Identity { start: 1, step: 1 };
        let table = db.create_table("t", "identity", identity).expect("create");
        let (mut early, mut other) = (db.session(), db.session());
        for session in [&mut early, &mut other] {
            for _ in 0..5 {
                session.insert(&table, b"row").expect("insert");
            }
        }
        // `early`: its commit logged and durable, its row not applied yet (as `commit_rows`
        // does it, stopped half way).
        let wal = db.inner.wal.clone().expect("a log");
        let late_key = Key::from_i64(1_000_000);
        early.applying.mark_by_hand(wal.end());
        let end = early
            .log_commit(&wal, 77, &[(&table, late_key, b"late")])
            .expect("log");
        wal.wait_durable(end).expect("durable");
        let (late_table, late) = (table.clone(), late_key);
        *db.inner.hooks.between_checkpoint_points.lock() = Some(Box::new(move || {
            // Another commit puts the leaf's image in the log, then `early` applies its
            // row onto the same leaf and is done.
            other.insert(&late_table, b"other").expect("insert");
            early.apply(&[(&late_table, late, b"late")]).expect("apply");
            early.applying.end();
        }));
        db.checkpoint().expect("checkpoint");
        assert!(
            db.inner.hooks.between_checkpoint_points.lock().is_none(),
            "the step ran"
        );
        let mem = mem.reboot(CrashMode::DropAll, 6).expect("reboot");
        std::mem::forget(db);
        let db = open(&mem);
        let table = db.table("t").expect("table");
        assert_eq!(
            db.session().get(&table, &late_key).expect("get"),
            Some(b"late".to_vec())
        );
        assert_eq!(db.verify_table(&table).expect("verify").rows, 12);
    }

    #[test]
    fn clean_close_and_reopen_keeps_tables_rows_and_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        let mut keys = Vec::new();
        {
            let db = Database::open(&path, Options::default()).expect("open");
            let t = db
                .create_table(
                    "orders",
                    "identity",
                    KeyKind::Identity { start: 1, step: 1 },
                )
                .expect("create");
            let g = db
                .create_table("events", "guid", KeyKind::GuidV4)
                .expect("create");
            let mut s = db.session();
            for i in 0..3000u32 {
                keys.push(s.insert(&t, &i.to_le_bytes()).expect("insert"));
                s.insert(&g, b"e").expect("insert");
            }
            drop(s);
            db.close().expect("close");
        }
        let db = Database::open(&path, Options::default()).expect("reopen");
        let infos = db.tables();
        assert_eq!(infos.len(), 2);
        assert_eq!((infos[0].name.as_str(), infos[0].rows), ("orders", 3000));
        assert_eq!((infos[1].design.as_str(), infos[1].rows), ("guid", 3000));
        let t = db.table("orders").expect("table");
        let s = db.session();
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(
                s.get(&t, key).expect("get"),
                Some((i as u32).to_le_bytes().to_vec())
            );
        }
        // New keys continue after the old ones.
        let mut s = db.session();
        let next = s.insert(&t, b"after").expect("insert");
        assert!(next.to_i64() > keys.last().and_then(|k| k.to_i64()));
        assert_eq!(db.verify_table(&t).expect("verify").rows, 3001);
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(dir.path().join("db"), Options::default()).expect("open");
        let t = db
            .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
            .expect("create");
        assert!(matches!(
            db.create_table("t", "identity", KeyKind::GuidV4),
            Err(Error::TableExists(_))
        ));
        assert!(matches!(db.table("nope"), Err(Error::NoSuchTable(_))));
        assert!(matches!(
            db.create_table("z", "x", KeyKind::HashPrefix { buckets: 0 }),
            Err(Error::InvalidOption(_))
        ));
        let mut s = db.session();
        assert!(matches!(
            s.insert(&t, &vec![0u8; db.row_bytes_max() + 1]),
            Err(Error::RowTooLarge { .. })
        ));
        let other = db.clone();
        assert!(matches!(other.close(), Err(Error::InvalidOption(_))));
        let bad = Options {
            page_size: 1000,
            ..Options::default()
        };
        assert!(matches!(
            Database::open(dir.path().join("db2"), bad),
            Err(Error::InvalidOption(_))
        ));
    }

    #[test]
    fn a_directory_of_other_files_is_not_a_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("notes.txt"), b"hello").expect("write");
        let err = Database::open(dir.path(), Options::default()).expect_err("accepted");
        assert!(matches!(err, Error::NotADatabase { .. }), "{err}");
        let file = dir.path().join("notes.txt");
        assert!(matches!(
            Database::open(&file, Options::default()),
            Err(Error::NotADatabase { .. })
        ));
    }
    fn small(durability: Durability, data_files: u32) -> Options {
        Options {
            page_size: 4096,
            pool_bytes: 32 * 4096,
            durability,
            data_files,
            ..Options::default()
        }
    }

    fn open_mem(storage: &Arc<crate::storage::MemStorage>, options: Options) -> Result<Database> {
        Database::open_with_storage(
            Arc::clone(storage) as Arc<dyn Storage>,
            Path::new("mem"),
            options,
        )
    }

    /// Sessions past the lifetime reservations of a 16-frame pool take permits per
    /// operation. A scan gives its shared permits back while its visitor runs, so a
    /// visitor may read and commit through other sessions without waiting for itself.
    #[test]
    fn a_scan_visitor_may_commit_through_another_session_in_a_small_pool() {
        let storage = crate::storage::MemStorage::new(5);
        let options = Options {
            pool_bytes: buffer::POOL_FRAMES_MIN * 4096,
            ..small(Durability::Sync, 1)
        };
        let db = open_mem(&storage, options).expect("open");
        let t = db
            .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
            .expect("create");
        let u = db
            .create_table("u", "guid", KeyKind::GuidV4)
            .expect("create");
        let lifetime: Vec<Session> = (0..3).map(|_| db.session()).collect();
        assert!(lifetime.iter().all(|s| s.frames.reserved_for_life()));
        let (mut reader, mut writer) = (db.session(), db.session());
        assert!(!reader.frames.reserved_for_life() && !writer.frames.reserved_for_life());
        let keys: Vec<Key> = (0..600u32)
            .map(|i| reader.insert(&t, &[i as u8; 100]).expect("insert"))
            .collect();
        let mut seen = 0usize;
        reader
            .scan(&t, None, |key, row| {
                seen += 1;
                let key = Key::from_bytes(key).expect("key");
                assert_eq!(writer.get(&t, &key).expect("get").as_deref(), Some(row));
                writer.insert(&u, row).expect("insert inside a scan");
                true
            })
            .expect("scan");
        assert_eq!(seen, keys.len());
        assert_eq!(db.verify_table(&u).expect("verify").rows, 600);
        assert_eq!(db.stats().wait(crate::stats::WaitType::FreeBuffer).count, 0);
    }

    #[test]
    fn data_files_out_of_range_is_an_invalid_option() {
        for bad in [0, buffer::DATA_FILES_MAX + 1] {
            let storage = crate::storage::MemStorage::new(1);
            match open_mem(&storage, small(Durability::Sync, bad)) {
                Err(Error::InvalidOption(message)) => {
                    assert!(message.contains("data_files"), "{message}")
                }
                other => panic!("expected InvalidOption, got {other:?}"),
            }
            // Nothing was created.
            assert!(storage.list().expect("list").is_empty());
        }
    }

    #[test]
    fn a_database_keeps_its_data_files_and_spreads_pages_over_them() {
        let storage = crate::storage::MemStorage::new(2);
        let keys: Vec<Key> = {
            let db = open_mem(&storage, small(Durability::Sync, 3)).expect("create");
            assert_eq!(db.data_files(), 3);
            let t = db
                .create_table("t", "guid", KeyKind::GuidV4)
                .expect("create table");
            let mut s = db.session();
            let keys = (0..2000u32)
                .map(|i| s.insert(&t, &i.to_le_bytes()).expect("insert"))
                .collect();
            drop(s);
            db.close().expect("close");
            keys
        };
        // Reopened asking for one file: the database has three.
        let db = open_mem(&storage, small(Durability::Sync, 1)).expect("reopen");
        assert_eq!(db.data_files(), 3);
        let info = db.pool_info();
        assert_eq!(info.file_pages_each.len(), 3);
        assert!(info.file_pages_each.iter().all(|&n| n > 4), "{info:?}");
        assert_eq!(info.file_pages, info.file_pages_each.iter().sum::<u64>());
        let t = db.table("t").expect("table");
        let s = db.session();
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(
                s.get(&t, key).expect("get"),
                Some((i as u32).to_le_bytes().to_vec())
            );
        }
        assert_eq!(db.verify_table(&t).expect("verify").rows, 2000);
        let pages = db.table_pages(&t).expect("pages");
        for file in 0..3 {
            assert!(
                pages.iter().any(|p| p.page_id.file() == file),
                "no page of the tree in data.{file}"
            );
        }
    }

    #[test]
    fn a_crashed_unlogged_run_recreates_all_its_data_files() {
        let storage = crate::storage::MemStorage::new(3);
        let db = open_mem(&storage, small(Durability::None, 3)).expect("create");
        let t = db
            .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
            .expect("create table");
        let mut s = db.session();
        for i in 0..500u32 {
            s.insert(&t, &i.to_le_bytes()).expect("insert");
        }
        // Power fails with the unlogged database open; the killed instance (dropped after
        // the reboot) cannot reach the new machine's files.
        let storage = storage
            .reboot(crate::storage::CrashMode::DropAll, 4)
            .expect("reboot");
        drop((s, t, db));
        let db = open_mem(&storage, small(Durability::None, 1)).expect("reopen");
        assert!(db.recovery_report().unlogged_tables_emptied);
        assert_eq!(db.data_files(), 3);
        let t = db.table("t").expect("table");
        assert_eq!(db.verify_table(&t).expect("verify").rows, 0);
        let names = storage.list().expect("list");
        for file in 0..3 {
            assert!(
                names.contains(&crate::format::data_file_name(file)),
                "{names:?}"
            );
        }
        assert!(
            !names.contains(&crate::format::data_file_name(3)),
            "{names:?}"
        );
        // The files were made anew: a header each, and the empty tree's root.
        assert!(db.pool_info().file_pages <= 4, "{:?}", db.pool_info());
    }
}
