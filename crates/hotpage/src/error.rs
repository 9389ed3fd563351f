//! The engine's typed errors. Every fallible engine call returns [`Result`].

use crate::format::PageId;
use std::path::PathBuf;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong inside the engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system I/O call failed.
    #[error("I/O error while {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A page read from disk failed its checksum or structural checks. `page_id` is the
    /// whole id (its file and number); the message shows the page's number in `file`.
    #[error("corrupt page {} in file {file}: {reason}", page_id.number())]
    CorruptPage {
        file: String,
        page_id: PageId,
        reason: String,
    },
    /// A file other than the data file (a memory table's checkpoint file) failed its
    /// checks at byte `offset`.
    #[error("corrupt file {file} at byte {offset}: {reason}")]
    CorruptFile {
        file: String,
        offset: u64,
        reason: String,
    },
    /// A scan of a whole table met fewer rows than the table had when the scan began:
    /// pages that pass every check have lost rows (an older copy of a page: a lost or
    /// misdirected write). Rows are never deleted, so this is damage, never a race.
    #[error(
        "table {table}: a scan of the whole table found {found} rows, but {counted} were stored in it: pages that pass their checksums have lost rows (a stale copy of a page, as a lost or misdirected write leaves); run `hotpage check`, and restore from a backup"
    )]
    RowsMissing {
        table: String,
        counted: u64,
        found: u64,
    },
    /// A directory or file that is not a hotpage database (no catalog, a file with no
    /// hotpage magic, a creation that never finished).
    #[error("{path} is not a hotpage database: {reason}")]
    NotADatabase { path: PathBuf, reason: String },
    /// A hotpage database whose catalog, or a data file that does not fit its catalog, is
    /// damaged: a catalog with hotpage's magic that fails its checksum, a data file whose
    /// header page is damaged or missing, or that says it is another file. Not
    /// `NotADatabase`: this is the right directory, and its files lost data.
    #[error("{path} is a damaged hotpage database: {reason}; restore it from a backup")]
    DamagedDatabase { path: PathBuf, reason: String },
    /// The database was written by a newer on-disk format than this binary reads.
    #[error(
        "database format version {found} is newer than this binary supports ({supported}); upgrade hotpage"
    )]
    FormatTooNew { found: u32, supported: u32 },
    /// The database was written by an older hotpage whose pages this binary cannot read.
    #[error(
        "database format version {found} is older than this binary reads ({required}): its pages have 4-byte slots; open it with the hotpage that wrote it, copy its tables out (COPY … TO), and load them into a new database"
    )]
    FormatTooOld { found: u32, required: u32 },
    /// The database is open elsewhere (another process holds its lock).
    #[error("{path} is in use by another process (its LOCK file is locked); close that first")]
    Locked { path: PathBuf },
    /// A unique key already exists in the table.
    #[error("duplicate key {key} in table {table}")]
    DuplicateKey { table: String, key: String },
    /// Another open transaction is inserting the same key, and this session, which holds
    /// keys of its own, could not wait for it (see `Session::insert_keyed`).
    #[error(
        "key {key} in table {table} is being inserted by another open transaction; retry once it ends"
    )]
    KeyLockTimeout { table: String, key: String },
    /// A wait for another session's key ended early, as the session's
    /// [`WaitLimits`](crate::WaitLimits) asked (a cancel, a deadline, the lock timeout).
    #[error("the wait for another transaction's key was stopped: {0:?}")]
    WaitStopped(crate::WaitStop),
    /// A row is larger than the documented maximum for the page size.
    #[error("row of {len} bytes exceeds the maximum of {max} bytes for this page size")]
    RowTooLarge { len: usize, max: usize },
    /// A key is larger than the maximum key size.
    #[error("key of {len} bytes exceeds the maximum of {max} bytes")]
    KeyTooLarge { len: usize, max: usize },
    /// No table by that name exists.
    #[error("no table named {0:?}")]
    NoSuchTable(String),
    /// A table by that name exists already.
    #[error("a table named {0:?} already exists")]
    TableExists(String),
    /// The table holds rows, and the operation needs it empty
    /// ([`crate::Database::redefine_empty_table`]).
    #[error("table {0:?} is not empty")]
    TableNotEmpty(String),
    /// A transaction that truncates the table is committing (between its truncation's
    /// checkpoint and its commit record): truncating, dropping or redefining the table must
    /// wait until it has; try again.
    #[error("table {0:?} is being truncated by a committing transaction; try again in a moment")]
    TableBusy(String),
    /// Staging this row would take open transactions' rows past the memory the database
    /// allows them together (`Options::txn_memory_bytes_max`; see `db::staged`). Refused
    /// at insert, never at commit: the transaction stays open without the row. `own_bytes`:
    /// what this transaction's rows would take with it.
    #[error(
        "this transaction's rows would take {own_bytes} bytes of memory, and open transactions may hold at most {bytes_max} together; commit more often, or raise the limit (Options::txn_memory_bytes_max; hotpage sql/serve --txn-mib)"
    )]
    TransactionMemory { bytes_max: usize, own_bytes: usize },
    /// An option or argument is out of range.
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// No buffer-pool frame came free for `waited_ms` (every one latched, or promised to
    /// other sessions' operations): the pool is too small for the concurrency. Only an
    /// operation that can be refused whole gets it (a read, a direct use of the pool); a
    /// commit's apply waits instead (see `buffer::budget`).
    #[error(
        "buffer pool exhausted: none of its {frames} frames came free in {waited_ms} ms; use a larger pool (pool_bytes, hotpage --pool-mib) or fewer concurrent sessions"
    )]
    PoolExhausted { frames: usize, waited_ms: u64 },
    /// A key generator ran out of values.
    #[error("key space exhausted for {0}")]
    KeySpaceExhausted(&'static str),
    /// The write-ahead log is damaged where recovery needs it: a record that fails its
    /// checksum with more log after it, a missing segment, or a log that ends before the
    /// last checkpoint. Nothing was changed on disk.
    #[error(
        "corrupt log: {file} at byte {offset} (LSN {lsn}): {reason}; nothing was changed on disk"
    )]
    CorruptLog {
        // Boxed, like `Stopped`'s cause: every `Result` of the engine is as large as its
        // largest error, and the insert path moves them.
        file: Box<str>,
        offset: u64,
        lsn: u64,
        reason: String,
    },
    /// The database stopped after a failed write or fdatasync (fail-stop): every commit and
    /// checkpoint is refused until it is reopened, when recovery restores every committed
    /// row. `cause` is the *first* failure's.
    #[error(
        "the database stopped after a failure ({}: {}); {advice}",
        cause.context,
        cause.message
    )]
    Stopped {
        cause: Box<StopCause>,
        advice: &'static str,
    },
    /// A change was asked of a database opened read-only.
    #[error("{0}: the database was opened read-only")]
    ReadOnly(String),
}

impl Error {
    /// Wraps an `std::io::Error` with what the engine was doing.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

// Every engine call returns `Result<T, Error>`, and the insert path moves them: a larger
// error makes every such result larger. Issue 9's first versions of `CorruptLog` and
// `Stopped` took it from 64 to 72 bytes and cost 12 % of single-session inserts without a
// log (docs/BENCHMARKS.md). Box a large variant's fields rather than grow this.
const _: () = assert!(std::mem::size_of::<Error>() <= 64);

/// Why the database stopped: the first failure, as it was reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StopCause {
    /// What the engine was doing (`writing log segment wal.… at byte …`).
    pub context: String,
    /// The OS error's kind (`StorageFull` for ENOSPC), `Other` for a non-I/O failure.
    pub kind: std::io::ErrorKind,
    /// The error's own message.
    pub message: String,
}
