//! The engines a user would pick instead of hotpage, as targets of hotpage's workload
//! driver (`hotpage compare`): SQLite, RocksDB (cargo feature `rocksdb`), fjall (cargo
//! feature `fjall`, pure Rust) and PostgreSQL (a throwaway local server through
//! `hotpage-pgclient`).
//!
//! Every peer gets the same row shape as hotpage's designs: a key that grows by one
//! (identity: 8 bytes, assigned by the engine where it has such a key) or a random one
//! (guid: 16 random bytes), plus the driver's row of R bytes, one row per commit or
//! `batch` rows per transaction. How each maps hotpage's durability is documented on its
//! target and in docs/design.md ("Peer engines and `hotpage compare`").
//!
//! Peers cannot see their waits the way hotpage's engine does: SQLite, RocksDB and fjall
//! report none, PostgreSQL reports `pg_stat_activity` samples (`hotpage-pgclient`).

mod error;
#[cfg(feature = "fjall")]
mod fjall;
mod key;
pub mod postgres;
#[cfg(feature = "rocksdb")]
mod rocks;
mod sqlite;

pub use error::PeerError;
#[cfg(feature = "fjall")]
pub use fjall::{FjallSession, FjallTarget};
pub use key::KeyShape;
#[cfg(feature = "rocksdb")]
pub use rocks::{RocksSession, RocksTarget};
pub use sqlite::{SqliteSession, SqliteTarget};

/// Whether this build has the RocksDB peer (cargo feature `rocksdb`).
pub const ROCKSDB_BUILT: bool = cfg!(feature = "rocksdb");

/// Whether this build has the fjall peer (cargo feature `fjall`).
pub const FJALL_BUILT: bool = cfg!(feature = "fjall");

/// How a peer makes a commit durable: the two settings `hotpage compare` maps its
/// `--durability` onto.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Commit {
    /// The commit returns after its log record is on stable storage (an fsync or
    /// fdatasync, shared by concurrent commits where the engine groups them).
    Sync,
    /// The commit returns without waiting for stable storage: the log is written to the
    /// OS (or not at all), a power loss may lose recent commits.
    NoSync,
}
