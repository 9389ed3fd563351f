//! Crash recovery, run by `Database::open` before anyone uses the database, over a log
//! whose end `wal::LogReader::find_end` has already proven (so every record read here is
//! valid, and none past the end is looked at).
//!
//! 1. **Redo** page records from the last checkpoint's redo point to the end of the log:
//!    page images are installed whole (never reading the page on disk, which a crash may
//!    have torn); a page insert is applied only if the page's LSN shows it is missing.
//! 2. **Re-apply** committed transactions from the checkpoint's logical point: every row of
//!    every commit record is inserted if absent. A commit's rows reach pages only after its
//!    commit record, so a crash in between leaves rows that only the commit record knows.
//!    A transaction logged in several parts counts only if its last part is in the log.
//!
//! There is no undo: uncommitted rows never reach a page (see `txn`). Both passes are
//! idempotent (redo by page LSN, re-apply by key), so a crash during recovery is followed
//! by the same recovery again. The catalog (the control file) only moves to a new
//! checkpoint once recovery has flushed everything it did.

use crate::access::Inserted;
use crate::access::btree::child_payload;
use crate::access::keys::Key;
use crate::buffer::BufferPool;
use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::format::{PageId, data_file_name};
use crate::log::page_records::{
    TreeSplit, decode_heap_link, decode_page_images, decode_page_insert,
};
use crate::log::{LogEnd, LogReader, Lsn, Record, RecordKind};
use crate::page::{PageBuf, PageType};
use crate::txn::{CommitRow, decode_commit, decode_part};
use std::collections::{BTreeMap, HashSet};

/// What the redo pass found.
#[derive(Clone, Debug, Default)]
pub struct RedoOutcome {
    /// Where the log recovery read starts (the checkpoint's logical point or its redo
    /// point, whichever is first).
    pub start: Lsn,
    /// The end of the valid log: appends continue here.
    pub end: Lsn,
    /// Bytes of a torn write past `end`, discarded.
    pub torn_bytes: u64,
    /// The log's segment size.
    pub segment_bytes: u64,
    /// Records read.
    pub records: u64,
    /// Page images installed.
    pub images: u64,
    /// Page inserts applied (not already on the page).
    pub inserts_applied: u64,
    /// Per table (catalog order): the latest key counter value a commit record used.
    pub latest_values: Vec<Option<i64>>,
    /// Commit records (and last parts of multi-part transactions) from the logical point.
    pub commits: u64,
    /// The first LSNs of the multi-part transactions whose last part is in the log.
    pub committed_parts: HashSet<Lsn>,
    /// The transactions of the catalog's pending truncations whose commit is in the log
    /// (see `catalog::PendingTruncate`).
    pub truncating_txns_committed: HashSet<u64>,
}

/// Redoes the page records of `[start, log_end.end)` into `pool` and collects the key
/// values commits used and which multi-part transactions committed.
pub fn redo(
    reader: &LogReader<'_>,
    start: Lsn,
    log_end: LogEnd,
    pool: &BufferPool,
    catalog: &Catalog,
) -> Result<RedoOutcome> {
    assert!(start <= log_end.end, "recovery starts inside the log");
    let page_size = pool.page_size();
    let mut outcome = RedoOutcome {
        start,
        end: log_end.end,
        torn_bytes: log_end.torn_bytes,
        segment_bytes: reader.segment_bytes(),
        latest_values: vec![None; catalog.tables.len()],
        ..RedoOutcome::default()
    };
    // Scratch for the empty pages heap-link records create (reused, not one per record).
    let empty = PageBuf::new(page_size);
    let mut empty_image = vec![0u8; page_size];
    let mut last_lsn = None;
    reader.scan(start, log_end.end, |record| {
        assert!(last_lsn < Some(record.lsn), "LSNs ascend");
        assert!(
            record.end <= log_end.end,
            "a record past the proven end of the log"
        );
        last_lsn = Some(record.lsn);
        // A flush mark is evidence for `find_end`, not work: a clean close leaves one after
        // its checkpoint, and that must not make the next open a recovery.
        outcome.records += u64::from(record.kind != RecordKind::FlushMark);
        match record.kind {
            RecordKind::PageImages if record.lsn >= catalog.redo_lsn => {
                for (page_id, image) in decode_page_images(record.payload, page_size)? {
                    pool.install_image(page_id, image, record.end)?;
                    outcome.images += 1;
                }
            }
            RecordKind::HeapLink if record.lsn >= catalog.redo_lsn => {
                // The new page from nothing (whatever a crash left of it on disk).
                let (tail_id, new_id) = decode_heap_link(record.payload)?;
                empty.page().init(new_id, PageType::Heap, 0);
                empty.page().copy_to(&mut empty_image);
                pool.install_image(new_id, &empty_image, record.end)?;
                outcome.images += 1;
                outcome.inserts_applied += u64::from(redo_link(pool, record, tail_id, new_id)?);
            }
            RecordKind::TreeSplit if record.lsn >= catalog.redo_lsn => {
                let split = TreeSplit::decode(record.payload)?;
                redo_split(pool, record, &split, &empty, &mut empty_image)?;
                outcome.images += 1;
            }
            RecordKind::PageInsert if record.lsn >= catalog.redo_lsn => {
                outcome.inserts_applied += u64::from(redo_insert(pool, record)?);
            }
            RecordKind::TxnCommit | RecordKind::TxnPart if record.lsn >= catalog.logical_lsn => {
                let (txn, rows, committed_part) = rows_of(record)?;
                if let Some(first) = committed_part {
                    outcome.committed_parts.insert(first);
                }
                if record.kind == RecordKind::TxnCommit || committed_part.is_some() {
                    outcome.commits += 1;
                    // A truncating transaction commits after the checkpoint that made its
                    // truncation pending, and a checkpoint's logical point is never past a
                    // commit still being logged or applied: its record is read here.
                    if catalog.pending_truncates.iter().any(|p| p.txn == txn) {
                        outcome.truncating_txns_committed.insert(txn);
                    }
                }
                note_latest_values(catalog, record, &rows, &mut outcome.latest_values)?;
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(outcome)
}

/// Sets a heap chain's link from `tail_id` to `new_id` if the tail lacks it. The tail had a
/// full image since the redo point (or the heap-link record would be one), so it is whole
/// here. Returns whether it changed the page.
fn redo_link(
    pool: &BufferPool,
    record: &Record<'_>,
    tail_id: PageId,
    new_id: PageId,
) -> Result<bool> {
    let tail = pool.fix_exclusive(tail_id)?;
    if tail.page().lsn() >= record.end {
        return Ok(false);
    }
    if tail.page().page_type() != Some(PageType::Heap) {
        return Err(corrupt(
            tail_id,
            record,
            "names a page that is not a heap page",
        ));
    }
    tail.mark_dirty();
    tail.page().set_next(new_id);
    tail.page().set_lsn(record.end);
    Ok(true)
}

/// Redoes a B+tree split: builds the right page from the record, cuts the left page
/// back to its keys below the separator, and puts the separator into the parent. The left
/// page and the parent are whole here (each had a full image since the redo point when the
/// split was logged); each is changed only if its LSN shows it lacks the split. The left
/// page may hold fewer rows than it did at the split (leaf inserts are not logged): the
/// re-apply pass puts those back, by key, on whichever half now holds them.
fn redo_split(
    pool: &BufferPool,
    record: &Record<'_>,
    split: &TreeSplit,
    scratch: &PageBuf,
    scratch_image: &mut [u8],
) -> Result<()> {
    let page_type = PageType::from_byte(split.page_type)
        .filter(|t| matches!(t, PageType::Leaf | PageType::Inner))
        .ok_or_else(|| corrupt(split.left, record, "names a page type no tree has"))?;
    let hint = |h: u16| (h != u16::MAX).then_some(usize::from(h));
    // The right page from nothing (whatever a crash left of it on disk).
    let right = scratch.page();
    right.init(split.right, page_type, split.level);
    right.set_next(split.right_next);
    right.set_aux(split.right_aux);
    for row in &split.right_records {
        if !right.push_record(row) {
            return Err(corrupt(
                split.right,
                record,
                "holds rows that do not fit a page",
            ));
        }
    }
    right.set_last_insert(hint(split.right_last));
    right.copy_to(scratch_image);
    pool.install_image(split.right, scratch_image, record.end)?;
    let left = pool.fix_exclusive(split.left)?;
    if left.page().lsn() < record.end {
        let page = left.page();
        if page.page_type() != Some(page_type) || page.level() != split.level {
            return Err(corrupt(
                split.left,
                record,
                "names a page of another type or level",
            ));
        }
        let kept: Vec<Vec<u8>> = (0..page.slot_count())
            .take_while(|&i| page.compare_key(i, &split.separator).is_lt())
            .map(|i| {
                let mut row = Vec::new();
                page.copy_record(i, &mut row);
                row
            })
            .collect();
        left.mark_dirty();
        let aux = page.aux();
        page.init(split.left, page_type, split.level);
        page.set_aux(aux);
        page.set_next(split.right);
        for row in &kept {
            if !page.push_record(row) {
                return Err(corrupt(
                    split.left,
                    record,
                    "left half does not fit its page",
                ));
            }
        }
        page.set_last_insert(hint(split.left_last).filter(|&h| h < kept.len()));
        page.set_lsn(record.end);
    }
    drop(left);
    redo_separator(pool, record, split)
}

/// The parent's half of a split: `separator → right`, unless its LSN shows it has it.
fn redo_separator(pool: &BufferPool, record: &Record<'_>, split: &TreeSplit) -> Result<()> {
    let parent = pool.fix_exclusive(split.parent)?;
    if parent.page().lsn() >= record.end {
        return Ok(());
    }
    let page = parent.page();
    if page.page_type() != Some(PageType::Inner) {
        return Err(corrupt(
            split.parent,
            record,
            "names a parent that is not an inner page",
        ));
    }
    let Err(at) = page.search(&split.separator) else {
        return Err(corrupt(
            split.parent,
            record,
            "names a separator the parent already has",
        ));
    };
    parent.mark_dirty();
    if !page.insert_record(at, &split.separator, &child_payload(split.right)) {
        return Err(corrupt(
            split.parent,
            record,
            "separator does not fit the parent",
        ));
    }
    page.set_lsn(record.end);
    Ok(())
}

/// Applies a page insert the page's LSN shows it lacks. Returns whether it added a row.
fn redo_insert(pool: &BufferPool, record: &Record<'_>) -> Result<bool> {
    let (page_id, key, payload) = decode_page_insert(record.payload)?;
    let page = pool.fix_exclusive(page_id)?;
    if page.page().lsn() >= record.end {
        return Ok(false);
    }
    // Inserts are logged only for leaves and heap pages.
    if !matches!(
        page.page().page_type(),
        Some(PageType::Leaf | PageType::Heap)
    ) {
        return Err(corrupt(page_id, record, "names a page that holds no rows"));
    }
    page.mark_dirty();
    let mut added = false;
    if let Err(pos) = page.page().search(key) {
        if !page.page().insert_record(pos, key, payload) {
            return Err(corrupt(page_id, record, "does not fit the page"));
        }
        added = true;
    }
    page.page().set_lsn(record.end);
    Ok(added)
}

/// A page a redo record cannot be applied to.
fn corrupt(page_id: PageId, record: &Record<'_>, what: &str) -> Error {
    Error::CorruptPage {
        file: data_file_name(page_id.file()),
        page_id,
        reason: format!("the {:?} record at LSN {} {what}", record.kind, record.lsn),
    }
}

/// The transaction id and rows a commit record or transaction part holds, and for a part
/// that ends its transaction, the transaction's first LSN.
fn rows_of<'r>(record: &Record<'r>) -> Result<(u64, Vec<CommitRow<'r>>, Option<Lsn>)> {
    if record.kind == RecordKind::TxnPart {
        let part = decode_part(record.payload)?;
        let first = part.first_lsn(record.lsn);
        return Ok((part.txn, part.rows, part.last.then_some(first)));
    }
    let (txn, rows) = decode_commit(record.payload)?;
    Ok((txn, rows, None))
}

/// The rows of a committed transaction in `record`: a commit record's, or a part's whose
/// transaction's last part is in the log (`committed_parts`); `None` otherwise.
fn committed_rows<'r>(
    record: &Record<'r>,
    committed_parts: &HashSet<Lsn>,
) -> Result<Option<Vec<CommitRow<'r>>>> {
    match record.kind {
        RecordKind::TxnCommit => Ok(Some(decode_commit(record.payload)?.1)),
        RecordKind::TxnPart => {
            let part = decode_part(record.payload)?;
            let committed = committed_parts.contains(&part.first_lsn(record.lsn));
            Ok(committed.then_some(part.rows))
        }
        _ => Ok(None),
    }
}

fn wal_damage(record: &Record<'_>, reason: String) -> Error {
    Error::CorruptPage {
        file: "wal".into(),
        page_id: PageId::new(0, 0),
        reason: format!("record at LSN {}: {reason}", record.lsn),
    }
}

/// Raises each table's latest key value to what `rows` used.
fn note_latest_values(
    catalog: &Catalog,
    record: &Record<'_>,
    rows: &[CommitRow<'_>],
    latest_values: &mut [Option<i64>],
) -> Result<()> {
    for row in rows {
        let table = row.table as usize;
        let Some(entry) = catalog.tables.get(table) else {
            return Err(wal_damage(record, format!("names table {table}")));
        };
        let key = Key::from_bytes(row.key)?;
        if let Some(value) = entry.kind.value_of(&key) {
            let latest = &mut latest_values[table];
            if latest.is_none_or(|l| entry.kind.is_later(value, l)) {
                *latest = Some(value);
            }
        }
    }
    Ok(())
}

/// Re-applies the rows of every committed transaction in `redo`'s log range that are not
/// in their table yet. `apply(table, key, row)` inserts a row of the catalog's `table` if
/// absent, where sessions put it (a tree, a partition, a memory table), or returns `None`
/// for a table the catalog does not have. Returns the rows inserted.
pub fn reapply_commits(
    reader: &LogReader<'_>,
    redo: &RedoOutcome,
    mut apply: impl FnMut(usize, &[u8], &[u8]) -> Result<Option<Inserted>>,
) -> Result<u64> {
    let mut inserted = 0u64;
    reader.scan(redo.start, redo.end, |record| {
        let Some(rows) = committed_rows(record, &redo.committed_parts)? else {
            return Ok(());
        };
        for row in rows {
            let done = apply(row.table as usize, row.key, row.row)?
                .ok_or_else(|| wal_damage(record, format!("names table {}", row.table)))?;
            if done == Inserted::Yes {
                inserted += 1;
            }
        }
        Ok(())
    })?;
    Ok(inserted)
}

/// The keys of the rows that committed transactions in `redo`'s log range put in the
/// tables `wanted` selects, per table.
pub fn commit_keys(
    reader: &LogReader<'_>,
    redo: &RedoOutcome,
    wanted: impl Fn(usize) -> bool,
) -> Result<BTreeMap<usize, HashSet<Key>>> {
    let mut keys: BTreeMap<usize, HashSet<Key>> = BTreeMap::new();
    reader.scan(redo.start, redo.end, |record| {
        let Some(rows) = committed_rows(record, &redo.committed_parts)? else {
            return Ok(());
        };
        for row in rows {
            let table = row.table as usize;
            if wanted(table) {
                keys.entry(table)
                    .or_default()
                    .insert(Key::from_bytes(row.key)?);
            }
        }
        Ok(())
    })?;
    Ok(keys)
}
