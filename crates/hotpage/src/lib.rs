//! hotpage: an embedded, durable storage engine built around the last-page insert problem.
//!
//! Layers, bottom up; each module imports only from those below it (docs/design.md,
//! "Layers", draws the same picture, and the README has the folder map):
//!
//! ```text
//! db/          Database, Session, TableHandle: the public API; open, checkpoint, check,
//!              inspect, salvage, routing rows to a design's trees
//! recovery     redo of the log after a crash
//! catalog      the table list, stored atomically
//! txn          commit records (a transaction's rows), durability levels
//! access/      btree, heap + fsm, memtable, keys, layout (the table designs), page logger
//! buffer/      the buffer pool: frames, page table, eviction, the WAL rule, admission
//! log/         the write-ahead log: records, writer, group commit, segments, reader
//! page         the slotted page format and its checksum
//! latch, stats the hybrid latch; wait types and sharded counters
//! failstop     the first fatal cause, kept for every later caller
//! storage/     the narrow file trait, the std, in-memory (fault-injecting) and overlay impls
//! format       the on-disk format's one home: names, magics, versions, page ids (PageId)
//! error        the typed error
//! ```
//!
//! Modules are private; the API an embedder needs is re-exported below, the integrity check
//! and the inspection reports included (typed values; `hotpage check` and `inspect` only
//! render them). Integration tests that need internals enable the `testing` feature, which
//! exposes [`testing`].

mod access;
mod buffer;
mod catalog;
mod db;
mod error;
mod failstop;
mod format;
mod latch;
mod log;
mod page;
mod recovery;
mod stats;
mod storage;
mod txn;

pub use access::TreeStats;
pub use access::keys::{Key, KeyKind, reverse_bits_63};
pub use access::layout::Layout;
pub use access::memtable::MemoryUsage;
pub use buffer::PoolInfo;
pub use db::{
    Database, DiscardedLog, LogDamage, MisplacedSegment, MissingRows, Options, RecoveryReport,
    SalvageReport, Session, TableHandle, TableInfo, TableSpec, WaitLimits, WaitStop,
};
// The integrity check's and the inspection reports' typed values (the CLI renders them).
pub use db::{
    CheckReport, Fault, FaultKind, FsmCategories, HeapIndexShape, HeapShape, IndexReport,
    IndexShape, LogKindCount, LogRecordInfo, LogReport, LogSummary, LoggedPage, PageChange,
    PageHeader, PageLocation, PageOwner, PageReport, SlotContent, SlotReport, TXN_NAME_BYTES_MAX,
    TableCheck, TableFigures, TableSummary, TxnName,
};
pub use error::{Error, Result, StopCause};
// Page ids: reports, statistics and errors name pages by them.
pub use format::PageId;
pub use log::{WalCounters, WalOptions};
pub use page::PageType;
pub use stats::{Counter, StatsSnapshot, WaitType};
// A session's wait in progress (pg_stat_activity): the embedder installs the slot.
pub use stats::{CurrentWait, WaitInProgress};
pub use storage::{
    CrashMode, FaultOp, MemStorage, StdStorage, Storage, StorageFile, VolatileStorage,
};
pub use txn::Durability;

/// Limits an embedder (or a command line) validates its input against.
pub mod limits {
    pub use crate::access::layout::{
        FLOW_CONTROL_SESSIONS_MAX, PARTITIONS_DEFAULT, PARTITIONS_MAX,
    };
    pub use crate::buffer::{DATA_FILES_MAX, POOL_BYTES_DEFAULT};
    pub use crate::catalog::{NAME_BYTES_MAX, TABLES_MAX};
    pub use crate::db::validate_pool_bytes;
    pub use crate::db::{
        STAGED_ROW_OVERHEAD_BYTES, SUPPLIED_KEY_OVERHEAD_BYTES, TXN_MEMORY_BYTES_DEFAULT,
    };
    pub use crate::format::{SCHEMA_BYTES_MAX, UNLOGGED_FILE};
    pub use crate::page::{PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, PAGE_SIZE_MIN, validate_page_size};

    /// The largest row a clustered (B+tree) table of this page size stores.
    pub fn clustered_row_bytes_max(page_size: usize) -> usize {
        crate::access::btree::row_bytes_max(page_size)
    }

    /// The largest row a heap table of this page size stores.
    pub fn heap_row_bytes_max(page_size: usize) -> usize {
        crate::access::heap::row_bytes_max(page_size)
    }
}

/// Internals for the crate's own integration tests (crash campaigns, model tests, decoder
/// fuzzing). Not a stable API: enabled only by the `testing` feature.
#[cfg(feature = "testing")]
pub mod testing {
    pub use crate::access::Inserted;
    pub use crate::access::btree::BTree;
    pub use crate::buffer::{BufferPool, FileHeader, Placement};
    pub use crate::catalog::Catalog;
    pub use crate::db::txn_names::{decode_txn_name, encode_txn_name};
    pub use crate::format::{CREATING_FILE, DATA_FILE_MAGIC, memtable_file_name};
    pub use crate::log::durable_mark::{DURABLE_MARK_FILE, read_latest as read_durable_mark};
    pub use crate::log::page_records::{
        TreeSplit, decode_heap_link, decode_page_images, decode_page_insert,
    };
    pub use crate::log::{LogReader, RecordKind, WalOptions};
    pub use crate::stats::{Counter, SessionSlot, Stats, WaitType};
    pub use crate::storage::{CrashMode, FaultOp, MemStorage, StdStorage, Storage};

    /// The memory table's checkpoint-file codecs.
    pub mod memtable {
        pub use crate::access::memtable::*;
    }
    /// The page format.
    pub mod page {
        pub use crate::page::*;
    }
    /// Commit-record codecs.
    pub mod txn {
        pub use crate::txn::*;
    }
}
