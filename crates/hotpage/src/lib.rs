//! hotpage: an embedded, durable storage engine built around the last-page insert problem.
//!
//! Layers, bottom up (each depends only on those below it; see `docs/design.md`):
//! `io` → `stats` → `latch` → `page` → `buffer` → `keys` → `btree` → `catalog` → `db`.

pub mod btree;
pub mod buffer;
pub mod catalog;
pub mod db;
pub mod error;
pub mod failstop;
pub mod fsm;
pub mod heap;
pub mod io;
pub mod keys;
pub mod latch;
pub mod layout;
pub mod logger;
pub mod memtable;
pub mod page;
pub mod recovery;
pub mod stats;
pub mod txn;
pub mod wal;

pub use error::{Error, Result};

pub use db::{
    CREATING_FILE, Database, DiscardedLog, LogDamage, Options, RecoveryReport, SalvageReport,
    Session, TableHandle, TableInfo,
};
pub use keys::{Key, KeyKind};
pub use layout::Layout;
pub use txn::Durability;
