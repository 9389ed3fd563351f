//! How page changes become log records (the B+tree's `PageLogger` over the WAL).
//!
//! Torn-page protection is PostgreSQL's `full_page_writes`: the first change to a page after
//! a checkpoint's redo point is logged as the page's full image, later ones as small inserts.
//! Redo starts at the redo point, so every page it touches starts from an image in the log
//! and never from a page on disk that a crash may have torn mid-write. Pages no record
//! touches were flushed and fsynced by that checkpoint, so they are whole.
//!
//! The decision compares the frame's last image LSN with the redo point (SeqCst). A session
//! that reads a redo point a moment old logs a small insert; that is safe because it marked
//! the page dirty (SeqCst) first, so the checkpoint flushes the page after the change and
//! the next change sees the new redo point (see `ExclusivePage::mark_dirty`).

use crate::access::PageLogger;
use crate::buffer::ExclusivePage;
use crate::error::Result;
use crate::log::page_records::{
    TreeSplit, encode_heap_link, encode_image_page_id, encode_page_insert,
};
use crate::log::{Lsn, RecordKind, Wal};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Logs a tree's page changes to the write-ahead log.
pub struct WalLogger {
    wal: Arc<Wal>,
    redo_lsn: Arc<AtomicU64>,
    rows_in_commits: bool,
}

impl WalLogger {
    /// A logger that logs every change, inserts included (heaps: a heap row's place is
    /// physical, and recovery finds heap rows by page, not by key). `redo_lsn`: the
    /// current checkpoint's redo point, published by the checkpointer.
    pub fn new(wal: Arc<Wal>, redo_lsn: Arc<AtomicU64>) -> WalLogger {
        WalLogger {
            wal,
            redo_lsn,
            rows_in_commits: false,
        }
    }

    /// A logger for B+trees whose every leaf insert is a committed row that recovery
    /// re-applies by key from the commit records (a table's trees): a leaf insert then
    /// writes no record of its own. Splits and first changes after a redo point are
    /// logged as before, so every page redo touches is whole; the rows inserted between
    /// them come back from the commit records (see `recovery` and `checkpoint_points`).
    pub fn for_table_trees(wal: Arc<Wal>, redo_lsn: Arc<AtomicU64>) -> WalLogger {
        WalLogger {
            wal,
            redo_lsn,
            rows_in_commits: true,
        }
    }

    /// True if `page` has had a full image logged since the current redo point, so a
    /// record that changes it in place can be redone on it.
    fn imaged_since_redo(&self, page: &ExclusivePage<'_>) -> bool {
        let image_lsn = page.image_lsn();
        image_lsn != 0 && image_lsn > self.redo_lsn.load(Ordering::SeqCst)
    }
}

impl WalLogger {
    fn log_images(&self, pages: &[&ExclusivePage<'_>]) -> Result<Lsn> {
        let page_size = pages.first().map_or(0, |p| p.page().size());
        let images: Vec<Vec<u8>> = pages
            .iter()
            .map(|page| {
                let mut image = vec![0u8; page_size];
                page.page().copy_to(&mut image);
                image
            })
            .collect();
        let count = (pages.len() as u32).to_le_bytes();
        let ids: Vec<[u8; 8]> = pages
            .iter()
            .map(|p| encode_image_page_id(p.page_id()))
            .collect();
        let mut parts: Vec<&[u8]> = Vec::with_capacity(1 + 2 * pages.len());
        parts.push(&count);
        for (id, image) in ids.iter().zip(&images) {
            parts.push(id);
            parts.push(image);
        }
        let (_, end) = self.wal.append(RecordKind::PageImages, &parts)?;
        for page in pages {
            page.page().set_lsn(end);
            page.set_image_lsn(end);
        }
        Ok(end)
    }
}

impl PageLogger for WalLogger {
    fn inserted(&self, page: &ExclusivePage<'_>, key: &[u8], payload: &[u8]) -> Result<()> {
        if !self.imaged_since_redo(page) {
            self.log_images(&[page])?;
            return Ok(());
        }
        if self.rows_in_commits {
            // The row's commit record is in the log already (rows are applied after their
            // commit is logged), somewhere before the log's end. The page may not reach
            // disk before that record is durable (the WAL rule: a crash must never leave
            // a row whose commit is lost), so its LSN covers the log's end.
            let end = self.wal.end();
            if page.page().lsn() < end {
                page.page().set_lsn(end);
            }
            return Ok(());
        }
        let head = encode_page_insert(page.page_id(), key);
        let (_, end) = self
            .wal
            .append(RecordKind::PageInsert, &[&head, key, payload])?;
        page.page().set_lsn(end);
        Ok(())
    }

    fn images(&self, pages: &[&ExclusivePage<'_>]) -> Result<()> {
        self.log_images(pages).map(|_| ())
    }

    /// A small record when the tail already has a full image since the redo point; the new
    /// page needs none (redo formats it from nothing, so a torn copy on disk does not
    /// matter). Otherwise both images, as `images` would.
    fn linked(&self, tail: &ExclusivePage<'_>, new: &ExclusivePage<'_>) -> Result<()> {
        if !self.imaged_since_redo(tail) {
            return self.images(&[tail, new]);
        }
        let payload = encode_heap_link(tail.page_id(), new.page_id());
        let (_, end) = self.wal.append(RecordKind::HeapLink, &[&payload])?;
        tail.page().set_lsn(end);
        new.page().set_lsn(end);
        // The record rebuilds the whole new page, as a full image would.
        new.set_image_lsn(end);
        Ok(())
    }

    /// A `TreeSplit` record when the left page and the parent each had a full image since
    /// the redo point (redo then finds them whole, as they were before the split): the
    /// right half's rows and the separator, a few hundred bytes at the tail of an
    /// ascending key, where three page images would be 24 KiB. Otherwise the images.
    fn split(
        &self,
        left: &ExclusivePage<'_>,
        right: &ExclusivePage<'_>,
        parent: &ExclusivePage<'_>,
        separator: &[u8],
    ) -> Result<()> {
        if !self.imaged_since_redo(left) || !self.imaged_since_redo(parent) {
            return self.images(&[left, right, parent]);
        }
        let record = tree_split_record(left, right, parent, separator);
        let (_, end) = self
            .wal
            .append(RecordKind::TreeSplit, &[&record.encode()])?;
        for page in [left, right, parent] {
            page.page().set_lsn(end);
        }
        // The record rebuilds the whole right page, as a full image would.
        right.set_image_lsn(end);
        Ok(())
    }
}

/// What a `TreeSplit` record says about a split just made (pages still latched).
fn tree_split_record(
    left: &ExclusivePage<'_>,
    right: &ExclusivePage<'_>,
    parent: &ExclusivePage<'_>,
    separator: &[u8],
) -> TreeSplit {
    let (left_page, right_page) = (left.page(), right.page());
    debug_assert_eq!(
        left_page.next(),
        right.page_id(),
        "the left page links the right"
    );
    debug_assert_eq!(left_page.page_type_byte(), right_page.page_type_byte());
    let hint =
        |slot: Option<usize>| slot.map_or(u16::MAX, |s| s.min(usize::from(u16::MAX - 1)) as u16);
    let right_records = (0..right_page.slot_count())
        .map(|i| {
            let mut record = Vec::new();
            right_page.copy_record(i, &mut record);
            record
        })
        .collect();
    TreeSplit {
        left: left.page_id(),
        right: right.page_id(),
        parent: parent.page_id(),
        page_type: left_page.page_type_byte(),
        level: left_page.level(),
        left_last: hint(left_page.last_insert()),
        right_last: hint(right_page.last_insert()),
        right_next: right_page.next(),
        right_aux: right_page.aux(),
        separator: separator.to_vec(),
        right_records,
    }
}
