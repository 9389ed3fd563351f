//! fjall (a pure-Rust LSM-tree, cargo feature `fjall`) as a workload target.
//!
//! - **One database with one keyspace**, shared by every session. fjall has one journal
//!   per database, behind a mutex: a writer appends its batch and, when asked, syncs the
//!   journal while holding it, so concurrent commits queue for the sync (no group commit).
//! - **Durability**: every transaction is one `WriteBatch` committed with
//!   `PersistMode::SyncData` for [`Commit::Sync`] (the commit returns after an
//!   `fdatasync` of the journal) and `PersistMode::Buffer` for [`Commit::NoSync`] (the
//!   journal is written to the OS, not synced: what the other peers' "none" does, and
//!   what fjall's own single-key `insert` does by default).
//! - **Keys**: identity is a counter shared by the sessions, 8 bytes big-endian (byte
//!   order is numeric order); guid is 16 random bytes. A row is the value.
//! - **Batches**: the rows of a transaction go into one `WriteBatch`, applied atomically
//!   at the commit.
//! - Default options otherwise, without block compression (the rows are small and the
//!   RocksDB peer has none either).

use crate::Commit;
use crate::error::PeerError;
use crate::key::{GuidKeys, KeyShape};
use fjall::{
    Database, Keyspace, KeyspaceCreateOptions, OwnedWriteBatch as WriteBatch, PersistMode,
};
use hotpage_workload::report::{IndexFigures, TargetFigures};
use hotpage_workload::{Target, TargetSession};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The keyspace every run inserts into.
const KEYSPACE: &str = "hp_compare";

/// A key and its value.
pub type KeyValue = (Vec<u8>, Vec<u8>);

/// A fjall database with one keyspace of one key shape.
pub struct FjallTarget {
    db: Database,
    keyspace: Keyspace,
    path: PathBuf,
    key: KeyShape,
    persist: PersistMode,
    // The last identity given out.
    identity: AtomicU64,
}

impl FjallTarget {
    /// Creates a database in `dir` (which should be new); one already there is recovered
    /// from its journal and opened.
    pub fn create(dir: &Path, key: KeyShape, commit: Commit) -> Result<FjallTarget, PeerError> {
        let path = dir.join("compare.fjall");
        let db = Database::builder(&path)
            .open()
            .map_err(PeerError::fjall("opening the database"))?;
        let keyspace = db
            .keyspace(KEYSPACE, KeyspaceCreateOptions::default)
            .map_err(PeerError::fjall("creating the keyspace"))?;
        Ok(FjallTarget {
            db,
            keyspace,
            path,
            key,
            persist: match commit {
                Commit::Sync => PersistMode::SyncData,
                Commit::NoSync => PersistMode::Buffer,
            },
            identity: AtomicU64::new(0),
        })
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keys in the keyspace, counted by a full scan.
    pub fn count_rows(&self) -> Result<u64, PeerError> {
        let rows = self
            .keyspace
            .len()
            .map_err(PeerError::fjall("scanning the keys"))?;
        Ok(rows as u64)
    }

    /// Every key and its value, in key order (a full scan: for checks after a run).
    pub fn rows(&self) -> Result<Vec<KeyValue>, PeerError> {
        let mut rows = Vec::new();
        for entry in self.keyspace.iter() {
            let (key, value) = entry
                .into_inner()
                .map_err(PeerError::fjall("scanning the keys"))?;
            rows.push((key.to_vec(), value.to_vec()));
        }
        Ok(rows)
    }
}

impl Target for FjallTarget {
    type Error = PeerError;
    type Session<'a> = FjallSession<'a>;

    fn session(&self, index: usize) -> Result<FjallSession<'_>, PeerError> {
        Ok(FjallSession {
            target: self,
            guids: (self.key == KeyShape::Guid).then(|| GuidKeys::new(index)),
            batch: None,
        })
    }

    fn figures(&self) -> Result<TargetFigures, PeerError> {
        Ok(TargetFigures {
            design: format!("fjall {}", self.key),
            table: format!("keyspace {KEYSPACE}"),
            index: IndexFigures {
                rows_in_table: self.count_rows()?,
                ..IndexFigures::default()
            },
            db: Some(self.path.display().to_string()),
            ..TargetFigures::default()
        })
    }
}

/// One writer.
pub struct FjallSession<'a> {
    target: &'a FjallTarget,
    guids: Option<GuidKeys>,
    batch: Option<WriteBatch>,
}

impl FjallSession<'_> {
    fn next_key(&mut self) -> Vec<u8> {
        match &mut self.guids {
            Some(guids) => guids.next_key().to_vec(),
            None => (self.target.identity.fetch_add(1, Ordering::Relaxed) + 1)
                .to_be_bytes()
                .to_vec(),
        }
    }

    fn new_batch(&self) -> WriteBatch {
        self.target.db.batch().durability(Some(self.target.persist))
    }
}

impl TargetSession for FjallSession<'_> {
    type Error = PeerError;

    fn begin(&mut self) -> Result<(), PeerError> {
        self.batch = Some(self.new_batch());
        Ok(())
    }

    fn insert(&mut self, row: &[u8]) -> Result<(), PeerError> {
        let key = self.next_key();
        match &mut self.batch {
            Some(batch) => batch.insert(&self.target.keyspace, key, row),
            None => {
                // Outside a transaction each row commits on its own, as a batch of one, so
                // it gets the same persist mode.
                let mut batch = self.new_batch();
                batch.insert(&self.target.keyspace, key, row);
                batch.commit().map_err(PeerError::fjall("writing a row"))?;
            }
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), PeerError> {
        if let Some(batch) = self.batch.take() {
            batch
                .commit()
                .map_err(PeerError::fjall("writing a batch"))?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), PeerError> {
        self.commit()
    }
}
