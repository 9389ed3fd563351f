//! The on-disk format's one home: file names, magic numbers, format versions and how a page
//! id names a page of a data file. Everything that reads or writes a file takes these from
//! here, so a format change is made (and reviewed) in one place. See docs/design.md, "On-disk
//! format", for the byte layouts; the codecs live with their owners (`page`, `catalog`,
//! `log::record`, `access::memtable`).

// ---- the database directory ----

/// The file `StdStorage::lock` (in `storage`) locks (it stays behind, empty, when the lock
/// is released).
pub const LOCK_FILE: &str = "LOCK";

/// The marker a database's creation makes durable before anything else and removes last.
pub const CREATING_FILE: &str = "creating";

/// The first data file's name inside the database directory (its header records how many
/// data files the database has; see [`data_file_name`]).
pub const DATA_FILE: &str = "data.0";

// ---- data files and pages ----

/// The on-disk format version this binary writes and reads.
pub const FORMAT_VERSION: u32 = 3;

/// The version in the data-file headers of a database with more than one data file. An
/// older binary (which knows only data.0) then refuses it as too new instead of failing on
/// page ids it cannot place; a one-file database keeps `FORMAT_VERSION`.
pub const DATA_FILES_FORMAT_VERSION: u32 = 4;

/// Magic bytes at the start of a data file's header record.
pub const DATA_FILE_MAGIC: &[u8; 8] = b"HOTPAGE\0";

/// A page id is `file << PAGE_FILE_SHIFT | page number in that file`, so the ids of data
/// file 0 are plain page numbers.
pub const PAGE_FILE_SHIFT: u32 = 40;

const PAGE_NUMBER_MASK: u64 = (1 << PAGE_FILE_SHIFT) - 1;

/// The data file (0-based) that holds `page_id`.
pub fn file_of(page_id: u64) -> u32 {
    (page_id >> PAGE_FILE_SHIFT) as u32
}

/// The page's number within its data file.
pub fn page_number(page_id: u64) -> u64 {
    page_id & PAGE_NUMBER_MASK
}

/// The id of page `page_number` of data file `file`.
pub fn page_id_of(file: u32, page_number: u64) -> u64 {
    (u64::from(file) << PAGE_FILE_SHIFT) | (page_number & PAGE_NUMBER_MASK)
}

/// The name of data file `file` in the database directory.
pub fn data_file_name(file: u32) -> String {
    format!("data.{file}")
}

/// The data file number of a directory entry named `data.N`, or `None`.
pub fn parse_data_file_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("data.")?;
    // `str::parse` would also take "+1"; only plain decimal digits name a data file.
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

// An older reader must see the multi-file version as newer than its own.
const _: () = assert!(DATA_FILES_FORMAT_VERSION > FORMAT_VERSION);
const _: () = assert!(PAGE_FILE_SHIFT < 64);

/// "No page" in sibling and child fields.
pub const NO_PAGE: u64 = u64::MAX;

// ---- the catalog ----

/// The catalog's file name inside the database directory.
pub const CATALOG_FILE: &str = "catalog";

pub const CATALOG_TMP_FILE: &str = "catalog.tmp";

pub const CATALOG_MAGIC: &[u8; 8] = b"HPCATLG\0";

/// The first format whose tables carry a layout and extra roots.
pub const LAYOUT_FORMAT_VERSION: u32 = 3;

/// The format of a catalog with a heap or memory table (layout tags 3 to 5). Written only
/// when such a table exists, so that a binary that reads format 3 refuses it as too new
/// (`FormatTooNew`) instead of misreading a layout it does not know.
pub const TABLE_DESIGNS_FORMAT_VERSION: u32 = 4;

/// The catalog format this binary writes (see `catalog`'s module docs).
pub const LOG_FORMAT_VERSION: u32 = 5;

// Each catalog format is newer than the one before it.
const _: () = assert!(LAYOUT_FORMAT_VERSION < TABLE_DESIGNS_FORMAT_VERSION);
const _: () = assert!(TABLE_DESIGNS_FORMAT_VERSION < LOG_FORMAT_VERSION);

// ---- the write-ahead log ----

/// The file name of segment `index`.
pub fn segment_name(index: u64) -> String {
    format!("wal.{index:016x}")
}

/// The segment index a file name names, if it names one.
pub fn segment_index(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("wal.")?;
    (hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(hex, 16).ok())?
}

// ---- memory tables' checkpoint files ----

/// Magic bytes at the start of a memory table's checkpoint file.
pub const MEMTABLE_MAGIC: &[u8; 8] = b"HPMEMTB\0";

/// The checkpoint file format this binary writes and reads.
pub const MEMTABLE_FORMAT: u32 = 1;

/// The checkpoint file of the memory table at catalog position `table_id`.
pub fn memtable_file_name(table_id: usize) -> String {
    format!("mem.{table_id}")
}
