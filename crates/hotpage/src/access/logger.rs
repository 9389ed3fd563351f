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
use crate::log::page_records::{encode_heap_link, encode_image_page_id, encode_page_insert};
use crate::log::{Lsn, RecordKind, Wal};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Logs a tree's page changes to the write-ahead log.
pub struct WalLogger {
    wal: Arc<Wal>,
    redo_lsn: Arc<AtomicU64>,
}

impl WalLogger {
    /// `redo_lsn`: the current checkpoint's redo point, published by the checkpointer.
    pub fn new(wal: Arc<Wal>, redo_lsn: Arc<AtomicU64>) -> WalLogger {
        WalLogger { wal, redo_lsn }
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
        let image_lsn = page.image_lsn();
        if image_lsn == 0 || image_lsn <= self.redo_lsn.load(Ordering::SeqCst) {
            self.log_images(&[page])?;
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
        let image_lsn = tail.image_lsn();
        if image_lsn == 0 || image_lsn <= self.redo_lsn.load(Ordering::SeqCst) {
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
}
