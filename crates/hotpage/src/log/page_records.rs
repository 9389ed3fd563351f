//! Payloads of the page records (`PageInsert`, `HeapLink`, `PageImages`): how the access
//! methods' page changes are encoded in the log. Recovery and salvage decode them; the page
//! logger (`access::logger`) encodes them.
//!
//! Page ids are [`PageId`]s everywhere but in the bytes: these codecs alone turn them into
//! the stored `u64` (little-endian) and back.

use crate::error::{Error, Result};
use crate::format::PageId;

/// Payload of a `PageInsert` record.
pub fn encode_page_insert(page_id: PageId, key: &[u8]) -> [u8; 9] {
    let mut head = [0u8; 9];
    head[..8].copy_from_slice(&page_id.to_raw().to_le_bytes());
    head[8] = key.len() as u8;
    head
}

/// Decodes a `PageInsert` payload into (page, key, record payload).
pub fn decode_page_insert(payload: &[u8]) -> Result<(PageId, &[u8], &[u8])> {
    let bad = || Error::CorruptPage {
        file: "wal".into(),
        page_id: PageId::new(0, 0),
        reason: "malformed page-insert record".into(),
    };
    let head = payload.get(..9).ok_or_else(bad)?;
    let page_id = PageId::from_raw(u64::from_le_bytes(head[..8].try_into().map_err(|_| bad())?));
    let key_len = usize::from(head[8]);
    let key = payload.get(9..9 + key_len).ok_or_else(bad)?;
    Ok((page_id, key, &payload[9 + key_len..]))
}

/// Payload of a `HeapLink` record.
pub fn encode_heap_link(tail: PageId, new: PageId) -> [u8; 16] {
    let mut payload = [0u8; 16];
    payload[..8].copy_from_slice(&tail.to_raw().to_le_bytes());
    payload[8..].copy_from_slice(&new.to_raw().to_le_bytes());
    payload
}

/// Decodes a `HeapLink` payload into (tail page, new page).
pub fn decode_heap_link(payload: &[u8]) -> Result<(PageId, PageId)> {
    let bytes: &[u8; 16] = payload.try_into().map_err(|_| Error::CorruptPage {
        file: "wal".into(),
        page_id: PageId::new(0, 0),
        reason: "malformed heap-link record".into(),
    })?;
    let mut tail = [0u8; 8];
    let mut new = [0u8; 8];
    tail.copy_from_slice(&bytes[..8]);
    new.copy_from_slice(&bytes[8..]);
    Ok((
        PageId::from_raw(u64::from_le_bytes(tail)),
        PageId::from_raw(u64::from_le_bytes(new)),
    ))
}

/// A `PageImages` entry's page id, as it precedes the page's image in the payload
/// (`count u32, (page u64, image)*`).
pub fn encode_image_page_id(page_id: PageId) -> [u8; 8] {
    page_id.to_raw().to_le_bytes()
}

/// Decodes a `PageImages` payload into (page, image) pairs.
pub fn decode_page_images(payload: &[u8], page_size: usize) -> Result<Vec<(PageId, &[u8])>> {
    let bad = || Error::CorruptPage {
        file: "wal".into(),
        page_id: PageId::new(0, 0),
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
        let page_id = PageId::from_raw(u64::from_le_bytes(id.try_into().map_err(|_| bad())?));
        let image = payload.get(at + 8..at + 8 + page_size).ok_or_else(bad)?;
        images.push((page_id, image));
        at += 8 + page_size;
    }
    if at != payload.len() {
        return Err(bad());
    }
    Ok(images)
}
