//! RocksDB (the `rocksdb` crate, cargo feature `rocksdb`) as a workload target.
//!
//! - **One database**, shared by every session (RocksDB is built for that: writers meet
//!   in its write queue, and the first in line writes and syncs the WAL for the group, its
//!   group commit).
//! - **Durability**: `WriteOptions::set_sync(true)` for [`Commit::Sync`] (the write returns
//!   after the WAL is synced), `false` for [`Commit::NoSync`] (the WAL is written to the
//!   OS, not synced). The WAL is never disabled: a process crash keeps what was written.
//! - **Keys**: identity is a counter shared by the sessions, 8 bytes big-endian, so the
//!   byte order is the numeric order; guid is 16 random bytes. A row is the value.
//! - **Batches**: the rows of a transaction go into one `WriteBatch`, written atomically
//!   at the commit.
//! - Default options otherwise (memtable size, compaction, no compression): what a user
//!   opening RocksDB gets.

use crate::Commit;
use crate::error::PeerError;
use crate::key::{GuidKeys, KeyShape};
use hotpage_workload::report::{IndexFigures, TargetFigures};
use hotpage_workload::{Target, TargetSession};
use rocksdb::{DB, IteratorMode, Options, WriteBatch, WriteOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A RocksDB database with one key shape.
pub struct RocksTarget {
    db: DB,
    path: PathBuf,
    key: KeyShape,
    commit: Commit,
    // The last identity given out.
    identity: AtomicU64,
}

impl RocksTarget {
    /// Creates a database in `dir` (which should be new).
    pub fn create(dir: &Path, key: KeyShape, commit: Commit) -> Result<RocksTarget, PeerError> {
        let path = dir.join("compare.rocksdb");
        let mut options = Options::default();
        options.create_if_missing(true);
        let db = DB::open(&options, &path).map_err(PeerError::rocks("opening the database"))?;
        Ok(RocksTarget {
            db,
            path,
            key,
            commit,
            identity: AtomicU64::new(0),
        })
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keys in the database, counted by a full scan.
    pub fn count_rows(&self) -> Result<u64, PeerError> {
        let mut rows = 0u64;
        for entry in self.db.iterator(IteratorMode::Start) {
            entry.map_err(PeerError::rocks("scanning the keys"))?;
            rows += 1;
        }
        Ok(rows)
    }
}

impl Target for RocksTarget {
    type Error = PeerError;
    type Session<'a> = RocksSession<'a>;

    fn session(&self, index: usize) -> Result<RocksSession<'_>, PeerError> {
        let mut write = WriteOptions::default();
        write.set_sync(self.commit == Commit::Sync);
        Ok(RocksSession {
            target: self,
            write,
            guids: (self.key == KeyShape::Guid).then(|| GuidKeys::new(index)),
            batch: None,
        })
    }

    fn figures(&self) -> Result<TargetFigures, PeerError> {
        Ok(TargetFigures {
            design: format!("rocksdb {}", self.key),
            table: "default column family".to_string(),
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
pub struct RocksSession<'a> {
    target: &'a RocksTarget,
    write: WriteOptions,
    guids: Option<GuidKeys>,
    batch: Option<WriteBatch>,
}

impl TargetSession for RocksSession<'_> {
    type Error = PeerError;

    fn begin(&mut self) -> Result<(), PeerError> {
        self.batch = Some(WriteBatch::default());
        Ok(())
    }

    fn insert(&mut self, row: &[u8]) -> Result<(), PeerError> {
        let guid;
        let identity;
        let key: &[u8] = match &mut self.guids {
            Some(guids) => {
                guid = guids.next_key();
                &guid
            }
            None => {
                identity = (self.target.identity.fetch_add(1, Ordering::Relaxed) + 1).to_be_bytes();
                &identity
            }
        };
        match &mut self.batch {
            Some(batch) => batch.put(key, row),
            None => self
                .target
                .db
                .put_opt(key, row, &self.write)
                .map_err(PeerError::rocks("writing a row"))?,
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), PeerError> {
        // Outside a batch each put was its own write.
        if let Some(batch) = self.batch.take() {
            self.target
                .db
                .write_opt(batch, &self.write)
                .map_err(PeerError::rocks("writing a batch"))?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), PeerError> {
        self.commit()
    }
}
