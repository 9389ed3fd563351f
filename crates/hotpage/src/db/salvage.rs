//! Salvage after log damage: keep what precedes the damage, knowingly.
//!
//! An open refuses a damaged log (`Error::CorruptLog`) and changes nothing. The user then
//! chooses: restore from a backup, or salvage. [`Database::examine_log`] says, without
//! changing anything, where the damage is and what salvage would discard.
//! [`Database::salvage`] does it:
//! 1. copies every log segment from the damaged one on aside, as `salvage-<n>-wal.…`, and
//!    makes the copies durable;
//! 2. recovers from the log up to the damage, as an open would;
//! 3. starts the new log past everything the old one held and past every page's LSN (the
//!    data files may hold changes logged after the damage: an LSN handed out again would
//!    make redo skip a new change as already applied);
//! 4. restarts key generators past every key in the tables (rows of commits after the
//!    damage may be on pages even though their log records are gone);
//! 5. checkpoints and closes.
//!
//! The data files may still hold part of what came after the damage (pages written before
//! the crash): run `hotpage check` after salvage; if it finds faults, restore a backup.

use super::open::{LogPolicy, check_directory, open_steps};
use super::{Database, Options};
use crate::buffer::{self, BufferPool};
use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::format::PageId;
use crate::log::{LogReader, Lsn, RecordKind};
use crate::page;
use crate::stats::Stats;
use crate::storage::{OverlayStorage, StdStorage, Storage};
use crate::txn::{decode_commit, decode_part};
use std::path::Path;
use std::sync::Arc;

/// Where the log is damaged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogDamage {
    /// The segment file.
    pub file: String,
    /// The byte offset in it.
    pub offset: u64,
    /// The LSN of the damaged record.
    pub lsn: Lsn,
    /// What is wrong.
    pub reason: String,
}

/// What lies past the damage and is discarded by salvage: the records that still
/// validate there (those that do not are not counted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiscardedLog {
    /// Log bytes from the damage to the end of the segment files.
    pub bytes: u64,
    /// Valid records found past the damage.
    pub records: u64,
    /// Of them, commits (a commit record, or a multi-part transaction's last part).
    pub commits: u64,
    /// Rows those commits hold.
    pub rows: u64,
    /// Bytes of log that were written but hold no readable record: from the damage to the
    /// durable end `log.durable` records or to the last readable record, whichever is
    /// further, less the readable records' bytes. A segment that is missing, cut short or
    /// overwritten, and damaged bytes, are here. The commits and rows they held cannot be
    /// counted: `commits` and `rows` are then only what can be.
    pub unreadable_bytes: u64,
}

/// A log segment file that holds another segment's records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MisplacedSegment {
    /// The file.
    pub file: String,
    /// The segment whose records it holds (its name).
    pub holds: String,
}

/// What [`Database::examine_log`] found, or what [`Database::salvage`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SalvageReport {
    /// The damage, or `None` when the log is whole (then nothing is done).
    pub damage: Option<LogDamage>,
    /// What salvage discards (or discarded).
    pub discarded: DiscardedLog,
    /// The copies made aside (`salvage` only).
    pub copies: Vec<String>,
    /// Where the new log starts.
    pub new_log_start: Lsn,
    /// True once salvage has happened (false for `examine_log`).
    pub applied: bool,
    /// Log segments whose records validate as another segment's (renamed, swapped, or
    /// overwritten by a copy): what salvage would discard may be in them. Found only when
    /// the log is damaged.
    pub misplaced_segments: Vec<MisplacedSegment>,
    /// What the salvaged tables' structural check found (`salvage` only): empty when every
    /// table verifies. Anything here means the data files held changes from after the
    /// damage that the kept log cannot reconcile: restore a backup.
    pub table_faults: Vec<String>,
}

impl Database {
    /// Reads the log of the database in `path` the way an open would, changing nothing,
    /// and reports the damage that would stop the open and what salvage would discard.
    /// Works on a read-only mount.
    pub fn examine_log(path: impl AsRef<Path>, options: Options) -> Result<SalvageReport> {
        let path = path.as_ref();
        check_directory(path, false)?;
        let base = StdStorage::open_dir_read_only(path)
            .map_err(|e| Error::io(format!("opening directory {}", path.display()), e))?;
        // Whatever reading needs to write (nothing, normally) stays in memory.
        let storage = OverlayStorage::new(Arc::new(base));
        lock(&storage, path)?;
        let catalog = load(&storage, path)?;
        plan(&storage, path, &catalog, &options)
    }

    /// Salvages the database in `path` after log damage (see the module docs): keeps what
    /// precedes the damage, after copying the damaged segments aside, and reports what it
    /// discarded. A whole log is left alone (`damage: None`). The database is closed again
    /// when this returns.
    pub fn salvage(path: impl AsRef<Path>, options: Options) -> Result<SalvageReport> {
        let path = path.as_ref();
        if options.read_only {
            return Err(Error::ReadOnly("salvage".into()));
        }
        check_directory(path, false)?;
        let storage: Arc<dyn Storage> = Arc::new(
            StdStorage::open_dir(path, false)
                .map_err(|e| Error::io(format!("opening directory {}", path.display()), e))?,
        );
        lock(&*storage, path)?;
        let catalog = load(&*storage, path)?;
        let mut report = plan(&*storage, path, &catalog, &options)?;
        let Some(damage) = report.damage.clone() else {
            return Ok(report);
        };
        report.copies = copy_aside(&*storage, &catalog, &options, damage.lsn)?;
        let policy = LogPolicy::Truncated {
            until: damage.lsn,
            append_from: report.new_log_start,
        };
        let db = open_steps(storage, path, options, policy)?;
        for table in db.tables() {
            let fault = db
                .table(&table.name)
                .and_then(|handle| db.verify_table(&handle).map(|_| ()));
            if let Err(error) = fault {
                report
                    .table_faults
                    .push(format!("table {}: {error}", table.name));
            }
        }
        db.close()?;
        report.applied = true;
        Ok(report)
    }
}

fn lock(storage: &dyn Storage, path: &Path) -> Result<()> {
    storage.lock().map_err(|e| match e.kind() {
        std::io::ErrorKind::WouldBlock => Error::Locked {
            path: path.to_path_buf(),
        },
        _ => Error::io(format!("locking {}", path.display()), e),
    })
}

fn load(storage: &dyn Storage, path: &Path) -> Result<Catalog> {
    Catalog::load(storage, path)?.ok_or_else(|| Error::NotADatabase {
        path: path.to_path_buf(),
        reason: "no hotpage catalog".into(),
    })
}

fn segment_bytes(catalog: &Catalog, options: &Options) -> u64 {
    if catalog.log_segment_bytes > 0 {
        catalog.log_segment_bytes
    } else {
        options.wal.segment_bytes
    }
}

/// Finds the damage an open would stop at, what lies past it, and where a new log would
/// start. Reads only.
fn plan(
    storage: &dyn Storage,
    path: &Path,
    catalog: &Catalog,
    options: &Options,
) -> Result<SalvageReport> {
    if catalog.unlogged_open {
        return Ok(SalvageReport::default()); // an unlogged run has no log to damage
    }
    let seg = segment_bytes(catalog, options);
    let reader = LogReader::new(storage, seg, catalog.log_salt);
    let start = catalog.logical_lsn.min(catalog.redo_lsn);
    let damage = match super::open::proven_log_end(storage, &reader, catalog, start) {
        Ok(_) => return Ok(SalvageReport::default()),
        Err(Error::CorruptLog {
            file,
            offset,
            lsn,
            reason,
        }) => LogDamage {
            file: file.into(),
            offset,
            lsn,
            reason,
        },
        Err(other) => return Err(other),
    };
    let mut discarded = DiscardedLog::default();
    // Readable records past the damage: their bytes, and where the last one ends.
    let (mut readable_bytes, mut readable_end) = (0, damage.lsn);
    let files_end = reader.records_between(damage.lsn + 8, Lsn::MAX, |record| {
        discarded.records += 1;
        readable_bytes += record.end - record.lsn;
        readable_end = record.end;
        match record.kind {
            RecordKind::TxnCommit => {
                discarded.commits += 1;
                discarded.rows += decode_commit(record.payload)?.1.len() as u64;
            }
            RecordKind::TxnPart => {
                let part = decode_part(record.payload)?;
                discarded.commits += u64::from(part.last);
                discarded.rows += part.rows.len() as u64;
            }
            _ => {}
        }
        Ok(())
    })?;
    discarded.bytes = files_end.saturating_sub(damage.lsn);
    // Past the durable mark too: a new log that started before it would read as one
    // that lost records at its next open.
    let mark = super::open::durable_mark(storage, catalog)?.unwrap_or(0);
    let written_end = mark.max(readable_end).max(damage.lsn);
    assert!(
        readable_bytes <= written_end - damage.lsn,
        "readable records past the damage overlap"
    );
    discarded.unreadable_bytes = written_end - damage.lsn - readable_bytes;
    let pages_lsn = highest_page_lsn(storage, path, catalog, options)?;
    let past = files_end
        .max(mark)
        .max(catalog.redo_lsn)
        .max(pages_lsn)
        .max(damage.lsn)
        + 1;
    Ok(SalvageReport {
        misplaced_segments: misplaced_segments(storage, &reader, start)?,
        damage: Some(damage),
        discarded,
        copies: Vec::new(),
        new_log_start: past.next_multiple_of(seg),
        applied: false,
        table_faults: Vec::new(),
    })
}

/// The segments recovery reads (from the one holding `start`) whose records belong to
/// another of them or to a missing one in their run. Old records in a segment renamed for
/// reuse belong before `start`, so they are never taken for a misplaced segment.
fn misplaced_segments(
    storage: &dyn Storage,
    reader: &LogReader<'_>,
    start: Lsn,
) -> Result<Vec<MisplacedSegment>> {
    let first = start / reader.segment_bytes();
    let live: Vec<u64> = crate::log::list_segments(storage)?
        .into_iter()
        .filter(|index| *index >= first)
        .collect();
    let Some(&last) = live.last() else {
        return Ok(Vec::new());
    };
    let homes: Vec<u64> = (first..=last + 1).collect();
    let mut misplaced = Vec::new();
    for &index in &live {
        if let Some(home) = reader.misplaced_home(index, &homes)? {
            misplaced.push(MisplacedSegment {
                file: crate::format::segment_name(index),
                holds: crate::format::segment_name(home),
            });
        }
    }
    Ok(misplaced)
}

/// The highest LSN on any page of any data file (damaged pages included: their LSN may
/// be damaged too, which can only move the new log further on).
fn highest_page_lsn(
    storage: &dyn Storage,
    path: &Path,
    catalog: &Catalog,
    options: &Options,
) -> Result<Lsn> {
    if !storage
        .exists(crate::format::DATA_FILE)
        .map_err(|e| Error::io("looking for the data file", e))?
    {
        return Ok(0);
    }
    let page_size = catalog.page_size as usize;
    let pool = BufferPool::open_in(
        storage,
        path,
        page_size,
        (buffer::POOL_FRAMES_MIN * page_size).max(options.pool_bytes.min(8 << 20)),
        1,
        Stats::new(),
    )
    .map_err(super::open::damage_unless(false))?;
    let mut highest = 0;
    for (file, pages) in (0u32..).zip(pool.info().file_pages_each) {
        for number in 1..pages {
            let image = pool.read_page_raw(PageId::new(file, number))?;
            highest = highest.max(page::image_lsn(&image).unwrap_or(0));
        }
    }
    Ok(highest)
}

/// Copies every segment from the damaged one on to `salvage-<n>-<name>` (n one past any
/// earlier salvage's), each made durable, then the directory. Returns the copies' names.
fn copy_aside(
    storage: &dyn Storage,
    catalog: &Catalog,
    options: &Options,
    damaged: Lsn,
) -> Result<Vec<String>> {
    let seg = segment_bytes(catalog, options);
    let names = storage
        .list()
        .map_err(|e| Error::io("listing the database directory", e))?;
    let round = 1 + names
        .iter()
        .filter_map(|name| {
            name.strip_prefix("salvage-")?
                .split('-')
                .next()?
                .parse::<u32>()
                .ok()
        })
        .max()
        .unwrap_or(0);
    let mut copies = Vec::new();
    for index in crate::log::list_segments(storage)?
        .into_iter()
        .filter(|i| *i >= damaged / seg)
    {
        let name = format!("wal.{index:016x}");
        let copy = format!("salvage-{round}-{name}");
        let copied = || -> std::io::Result<()> {
            let from = storage.open(&name, false)?;
            let mut bytes = vec![0u8; usize::try_from(from.len()?).unwrap_or(0)];
            from.read_at(&mut bytes, 0)?;
            let to = storage.open(&copy, true)?;
            to.set_len(0)?;
            to.write_at(&bytes, 0)?;
            to.sync_data()
        };
        copied().map_err(|e| Error::io(format!("copying {name} aside to {copy}"), e))?;
        copies.push(copy);
    }
    storage
        .sync_dir()
        .map_err(|e| Error::io("syncing the directory after the copies", e))?;
    Ok(copies)
}
