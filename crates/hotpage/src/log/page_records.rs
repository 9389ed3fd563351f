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

/// A B+tree split as a `TreeSplit` record: the left page keeps its keys below `separator`,
/// a new right page holds `right_records`, and the parent gains `separator → right`.
///
/// Redo applies it to the left page and the parent as they were before the split (each
/// had a full image since the redo point, or the split is logged as images instead), and
/// builds the right page from nothing. The left page's rows that were never logged (leaf
/// inserts, which recovery re-applies from commit records) need not be in the record: the
/// split moves only the right half's rows, and those it carries whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeSplit {
    /// The page split; keeps the keys below the separator.
    pub left: PageId,
    /// The new right sibling.
    pub right: PageId,
    /// The parent that gains the separator.
    pub parent: PageId,
    /// Leaf or inner, as a page-type byte (both halves share it).
    pub page_type: u8,
    /// Both halves' level.
    pub level: u8,
    /// The halves' latest-insert hints (`u16::MAX`: none).
    pub left_last: u16,
    /// See `left_last`.
    pub right_last: u16,
    /// The right page's right sibling (the left page's before the split).
    pub right_next: PageId,
    /// The right page's leftmost child (inner pages), or `PageId::NONE`.
    pub right_aux: PageId,
    /// The key that divides the halves (and goes up to the parent).
    pub separator: Vec<u8>,
    /// The right page's records, in order, as `Page::copy_record` gives them.
    pub right_records: Vec<Vec<u8>>,
}

/// The fixed part of a `TreeSplit` payload: three page ids, type, level, two hints, two
/// more page ids, the separator's length and the record count.
const TREE_SPLIT_HEAD_BYTES: usize = 8 * 3 + 1 + 1 + 2 + 2 + 8 * 2 + 2 + 2;

impl TreeSplit {
    /// The record payload.
    pub fn encode(&self) -> Vec<u8> {
        assert!(self.separator.len() <= usize::from(u16::MAX));
        assert!(self.right_records.len() <= usize::from(u16::MAX));
        let records_bytes: usize = self.right_records.iter().map(|r| 2 + r.len()).sum();
        let mut out =
            Vec::with_capacity(TREE_SPLIT_HEAD_BYTES + self.separator.len() + records_bytes);
        for id in [self.left, self.right, self.parent] {
            out.extend_from_slice(&id.to_raw().to_le_bytes());
        }
        out.extend_from_slice(&[self.page_type, self.level]);
        out.extend_from_slice(&self.left_last.to_le_bytes());
        out.extend_from_slice(&self.right_last.to_le_bytes());
        out.extend_from_slice(&self.right_next.to_raw().to_le_bytes());
        out.extend_from_slice(&self.right_aux.to_raw().to_le_bytes());
        out.extend_from_slice(&(self.separator.len() as u16).to_le_bytes());
        out.extend_from_slice(&(self.right_records.len() as u16).to_le_bytes());
        out.extend_from_slice(&self.separator);
        for record in &self.right_records {
            assert!(record.len() <= usize::from(u16::MAX));
            out.extend_from_slice(&(record.len() as u16).to_le_bytes());
            out.extend_from_slice(record);
        }
        out
    }

    /// Decodes a `TreeSplit` payload; any shortfall or excess is an error, never a panic.
    pub fn decode(payload: &[u8]) -> Result<TreeSplit> {
        let bad = || Error::CorruptPage {
            file: "wal".into(),
            page_id: PageId::new(0, 0),
            reason: "malformed tree-split record".into(),
        };
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8]> {
            let bytes = payload
                .get(at..at.checked_add(n).ok_or_else(bad)?)
                .ok_or_else(bad)?;
            at += n;
            Ok(bytes)
        };
        let u64_of =
            |b: &[u8]| -> Result<u64> { Ok(u64::from_le_bytes(b.try_into().map_err(|_| bad())?)) };
        let u16_of =
            |b: &[u8]| -> Result<u16> { Ok(u16::from_le_bytes(b.try_into().map_err(|_| bad())?)) };
        let left = PageId::from_raw(u64_of(take(8)?)?);
        let right = PageId::from_raw(u64_of(take(8)?)?);
        let parent = PageId::from_raw(u64_of(take(8)?)?);
        let kind = take(2)?;
        let (page_type, level) = (kind[0], kind[1]);
        let left_last = u16_of(take(2)?)?;
        let right_last = u16_of(take(2)?)?;
        let right_next = PageId::from_raw(u64_of(take(8)?)?);
        let right_aux = PageId::from_raw(u64_of(take(8)?)?);
        let separator_len = usize::from(u16_of(take(2)?)?);
        let count = usize::from(u16_of(take(2)?)?);
        let separator = take(separator_len)?.to_vec();
        // The count comes from the record: never trust it for an allocation.
        let mut right_records = Vec::with_capacity(count.min(payload.len() / 2));
        for _ in 0..count {
            let len = usize::from(u16_of(take(2)?)?);
            right_records.push(take(len)?.to_vec());
        }
        if at != payload.len() {
            return Err(bad());
        }
        Ok(TreeSplit {
            left,
            right,
            parent,
            page_type,
            level,
            left_last,
            right_last,
            right_next,
            right_aux,
            separator,
            right_records,
        })
    }
}
