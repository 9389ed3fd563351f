//! [`Database::inspect_page`]: one page decoded (DBCC PAGE), its header fields, slot
//! directory, keys and links, as a typed value for `hotpage inspect page` to render.

use super::Database;
use super::inspect::PageLocation;
use crate::access::keys::{Key, KeyKind};
use crate::error::Result;
use crate::format::PageId;
use crate::page::{self, Page, PageBuf, PageType};

/// A page's header fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageHeader {
    /// The page id the page records for itself.
    pub page_id: PageId,
    /// Its type; `None` for a type byte no page type has.
    pub page_type: Option<PageType>,
    /// The type byte as stored.
    pub page_type_byte: u8,
    /// The B+tree level (0 for leaves).
    pub level: u8,
    /// The LSN of the last logged change.
    pub lsn: u64,
    /// Slots in the slot directory.
    pub slot_count: usize,
    /// Free bytes between the slot directory and the record area.
    pub free_bytes: usize,
    /// Where the record area starts.
    pub free_end: usize,
    /// The right link (`None`: no page).
    pub next: Option<PageId>,
    /// The auxiliary link: an inner page's leftmost child (`None`: no page).
    pub aux: Option<PageId>,
    /// The checksum as stored.
    pub checksum: u32,
}

impl PageHeader {
    /// An inner page's leftmost child; `None` for other pages.
    pub fn leftmost_child(&self) -> Option<PageId> {
        if self.page_type == Some(PageType::Inner) {
            self.aux
        } else {
            None
        }
    }
}

/// What a slot's record means, as far as the page type tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlotContent {
    /// A B+tree leaf's row.
    Row {
        /// The key, decoded as the owning table's keys are (hex when unknown).
        key: String,
        /// The row's bytes.
        row_bytes: usize,
    },
    /// An inner page's separator and child.
    Child {
        /// The separator key, decoded as for a row.
        key: String,
        /// The child page's id.
        child: PageId,
    },
    /// A data file's header record.
    FileHeader {
        /// The record's key: the magic, as text.
        magic: String,
        /// The format version, if the record holds one.
        format_version: Option<u32>,
        /// The page size, if the record holds one.
        page_size: Option<u32>,
        /// The database's data files (1 in headers written before several data files).
        file_count: u32,
        /// This file's number (0 in headers written before several data files).
        file_number: u32,
    },
    /// Nothing decoded (heap and free pages, unknown types).
    Other,
}

/// One slot of a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotReport {
    /// Its index in the slot directory.
    pub slot: usize,
    /// The record's offset in the page.
    pub offset: usize,
    /// The record's length.
    pub length: usize,
    /// The slot's key head (the key's first four bytes, zero-padded, big-endian), which a
    /// search compares before it reads the record.
    pub head: u32,
    /// The record's key bytes.
    pub key: Vec<u8>,
    /// The whole record's bytes.
    pub record: Vec<u8>,
    /// What it means.
    pub content: SlotContent,
}

/// One page, decoded (see [`Database::inspect_page`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageReport {
    /// Where it lies.
    pub location: PageLocation,
    /// Why it fails verification (checksum, page id, slot directory); `None` when it
    /// verifies.
    pub problem: Option<String>,
    /// Its header.
    pub header: PageHeader,
    /// The table whose B+tree reaches it, if any (only B+tree pages are looked up).
    pub table: Option<String>,
    /// That table's design.
    pub design: Option<String>,
    /// Its slots.
    pub slots: Vec<SlotReport>,
}

impl Database {
    /// Decodes the page at `location` as it is in its data file (call
    /// [`Database::checkpoint`] first to see changes still in memory). A damaged page is
    /// decoded as far as it goes, with `problem` saying what is wrong; a page past the end
    /// of its file, or in a data file the database does not have, is `CorruptPage`.
    pub fn inspect_page(&self, location: PageLocation) -> Result<PageReport> {
        let page_id = location.page_id();
        let image = self.raw_page_image(page_id)?;
        let problem = page::verify(&image, page_id).err();
        let buf = PageBuf::new(image.len());
        let page = buf.page();
        page.copy_from(&image);
        let page_type = page.page_type();
        // Ownership needs a walk of the trees; a damaged tree just leaves the owner unknown.
        let owner = if matches!(page_type, Some(PageType::Leaf | PageType::Inner)) {
            self.page_owner(page_id).ok().flatten()
        } else {
            None
        };
        let table = owner.as_ref().and_then(|o| self.table(&o.table).ok());
        let kind = table.as_ref().map(|t| t.key_kind());
        let slots = (0..page.slot_count())
            .map(|i| slot_report(&page, page_type, kind, i))
            .collect();
        Ok(PageReport {
            location,
            problem,
            header: header(&page),
            table: owner.map(|o| o.table),
            design: table.map(|t| t.design().to_string()),
            slots,
        })
    }
}

fn header(page: &Page<'_>) -> PageHeader {
    let link = |page_id: PageId| (!page_id.is_none()).then_some(page_id);
    PageHeader {
        page_id: page.page_id(),
        page_type: page.page_type(),
        page_type_byte: page.page_type_byte(),
        level: page.level(),
        lsn: page.lsn(),
        slot_count: page.slot_count(),
        free_bytes: page.free_bytes(),
        free_end: page.free_end(),
        next: link(page.next()),
        aux: link(page.aux()),
        checksum: page.stored_checksum(),
    }
}

fn slot_report(
    page: &Page<'_>,
    page_type: Option<PageType>,
    kind: Option<KeyKind>,
    i: usize,
) -> SlotReport {
    let (offset, length) = page.slot(i);
    let mut key = Vec::new();
    page.copy_key(i, &mut key);
    let mut record = Vec::new();
    page.copy_record(i, &mut record);
    let mut payload = Vec::new();
    let content = match page_type {
        Some(PageType::Inner) => SlotContent::Child {
            key: decode_key(kind, &key),
            child: page.child(i),
        },
        Some(PageType::Leaf) => {
            page.copy_payload(i, &mut payload);
            SlotContent::Row {
                key: decode_key(kind, &key),
                row_bytes: payload.len(),
            }
        }
        Some(PageType::FileHeader) => {
            page.copy_payload(i, &mut payload);
            file_header(&key, &payload)
        }
        _ => SlotContent::Other,
    };
    SlotReport {
        slot: i,
        offset,
        length,
        head: page.slot_head(i),
        key,
        record,
        content,
    }
}

/// A data file's header record: the magic as its key, then little-endian words.
fn file_header(key: &[u8], payload: &[u8]) -> SlotContent {
    let word = |at: usize| {
        payload
            .get(at..at + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_le_bytes)
    };
    SlotContent::FileHeader {
        magic: String::from_utf8_lossy(key)
            .trim_end_matches('\0')
            .to_string(),
        format_version: word(0),
        page_size: word(4),
        // Absent from headers written before several data files.
        file_count: word(8).unwrap_or(1),
        file_number: word(12).unwrap_or(0),
    }
}

/// A key decoded as the table's keys are, or `0x` and its bytes in hex.
fn decode_key(kind: Option<KeyKind>, key: &[u8]) -> String {
    match kind.and_then(|k| Key::from_bytes(key).ok().map(|key| k.decode(&key))) {
        Some(decoded) => decoded,
        None => {
            let mut out = String::from("0x");
            for b in key {
                out.push_str(&format!("{b:02x}"));
            }
            out
        }
    }
}
