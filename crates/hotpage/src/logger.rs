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

use crate::btree::PageLogger;
use crate::buffer::ExclusivePage;
use crate::error::{Error, Result};
use crate::wal::{Lsn, RecordKind, Wal};
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

/// Payload of a `PageInsert` record.
pub fn encode_page_insert(page_id: u64, key: &[u8]) -> [u8; 9] {
    let mut head = [0u8; 9];
    head[..8].copy_from_slice(&page_id.to_le_bytes());
    head[8] = key.len() as u8;
    head
}

/// Decodes a `PageInsert` payload into (page, key, record payload).
pub fn decode_page_insert(payload: &[u8]) -> Result<(u64, &[u8], &[u8])> {
    let bad = || Error::CorruptPage {
        file: "wal".into(),
        page_id: 0,
        reason: "malformed page-insert record".into(),
    };
    let head = payload.get(..9).ok_or_else(bad)?;
    let page_id = u64::from_le_bytes(head[..8].try_into().map_err(|_| bad())?);
    let key_len = usize::from(head[8]);
    let key = payload.get(9..9 + key_len).ok_or_else(bad)?;
    Ok((page_id, key, &payload[9 + key_len..]))
}

/// Payload of a `HeapLink` record.
pub fn encode_heap_link(tail: u64, new: u64) -> [u8; 16] {
    let mut payload = [0u8; 16];
    payload[..8].copy_from_slice(&tail.to_le_bytes());
    payload[8..].copy_from_slice(&new.to_le_bytes());
    payload
}

/// Decodes a `HeapLink` payload into (tail page, new page).
pub fn decode_heap_link(payload: &[u8]) -> Result<(u64, u64)> {
    let bytes: &[u8; 16] = payload.try_into().map_err(|_| Error::CorruptPage {
        file: "wal".into(),
        page_id: 0,
        reason: "malformed heap-link record".into(),
    })?;
    let mut tail = [0u8; 8];
    let mut new = [0u8; 8];
    tail.copy_from_slice(&bytes[..8]);
    new.copy_from_slice(&bytes[8..]);
    Ok((u64::from_le_bytes(tail), u64::from_le_bytes(new)))
}

/// Decodes a `PageImages` payload into (page, image) pairs.
pub fn decode_page_images(payload: &[u8], page_size: usize) -> Result<Vec<(u64, &[u8])>> {
    let bad = || Error::CorruptPage {
        file: "wal".into(),
        page_id: 0,
        reason: "malformed page-images record".into(),
    };
    let count = u32::from_le_bytes(
        payload
            .get(..4)
            .ok_or_else(bad)?
            .try_into()
            .map_err(|_| bad())?,
    ) as usize;
    // The count comes from the record: never trust it for an allocation.
    let mut images = Vec::with_capacity(count.min(payload.len() / (8 + page_size.max(1))));
    let mut at = 4;
    for _ in 0..count {
        let id = payload.get(at..at + 8).ok_or_else(bad)?;
        let page_id = u64::from_le_bytes(id.try_into().map_err(|_| bad())?);
        let image = payload.get(at + 8..at + 8 + page_size).ok_or_else(bad)?;
        images.push((page_id, image));
        at += 8 + page_size;
    }
    if at != payload.len() {
        return Err(bad());
    }
    Ok(images)
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
        let ids: Vec<[u8; 8]> = pages.iter().map(|p| p.page_id().to_le_bytes()).collect();
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
