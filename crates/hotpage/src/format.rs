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

/// The data-file format of the first releases: slots of 4 bytes (offset, length). This
/// binary refuses it ([`KEY_HEADS_FORMAT_VERSION`] changed every page's slot directory).
pub const FORMAT_VERSION: u32 = 3;

/// The version in the data-file headers of a database with more than one data file, before
/// key heads (slots of 4 bytes). An older binary, which knows only data.0, refused it as too
/// new instead of failing on page ids it could not place.
pub const DATA_FILES_FORMAT_VERSION: u32 = 4;

/// The data-file format this binary writes and the only one it reads, with one data file
/// or several: every slot is 8 bytes, its record's offset and length and the first four
/// bytes of its key (docs/design.md, "Key heads in the slot directory"). Binaries that
/// read formats 3 and 4 refuse it as too new; this one refuses those as too old, since
/// their slots would be misread.
pub const KEY_HEADS_FORMAT_VERSION: u32 = 5;

/// Magic bytes at the start of a data file's header record.
pub const DATA_FILE_MAGIC: &[u8; 8] = b"HOTPAGE\0";

/// A page id is `file << PAGE_FILE_SHIFT | page number in that file`, so the ids of data
/// file 0 are plain page numbers.
pub const PAGE_FILE_SHIFT: u32 = 40;

const PAGE_NUMBER_MASK: u64 = (1 << PAGE_FILE_SHIFT) - 1;

/// The file bits of [`PageId::NONE`] (all ones): no real data file has this number.
const FILE_NUMBER_NONE: u64 = u64::MAX >> PAGE_FILE_SHIFT;

/// The id of a page of the database: its data file and its number in that file, stored
/// as one `u64`, `file << PAGE_FILE_SHIFT | page number` (so file 0's ids are its page
/// numbers).
///
/// A type of its own so that an id cannot be mixed up with a page number within a file, a
/// page count or an LSN, which are all `u64` too. The `u64` form ([`PageId::to_raw`],
/// [`PageId::from_raw`]) is what pages, log records, the catalog and reports hold: only
/// their codecs convert, at the byte boundary, and the bytes are those of a bare `u64`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(transparent)]
pub struct PageId(u64);

impl PageId {
    /// "No page": a sibling, child or root field that links nowhere. All ones on disk (the
    /// value `NO_PAGE` had), outside every real file.
    pub const NONE: PageId = PageId(u64::MAX);

    /// The id of page `number` of data file `file`. The number must fit in
    /// `PAGE_FILE_SHIFT` (40) bits and the file may not be the all-ones file of
    /// [`PageId::NONE`] (checked in debug builds; release builds mask the number).
    #[inline]
    pub const fn new(file: u32, number: u64) -> PageId {
        debug_assert!(
            number <= PAGE_NUMBER_MASK,
            "a page number must fit in 40 bits"
        );
        debug_assert!(
            (file as u64) < FILE_NUMBER_NONE,
            "a data file number must fit in 24 bits and not be all ones"
        );
        PageId(((file as u64) << PAGE_FILE_SHIFT) | (number & PAGE_NUMBER_MASK))
    }

    /// The id of page `number` of data file `file`, or `None` when no id can name it (a
    /// number past 40 bits, a file number past 24 bits or all ones): for numbers that come
    /// from outside (a user's input, a damaged header) rather than from the engine.
    #[inline]
    pub const fn checked_new(file: u32, number: u64) -> Option<PageId> {
        if number <= PAGE_NUMBER_MASK && (file as u64) < FILE_NUMBER_NONE {
            Some(PageId::new(file, number))
        } else {
            None
        }
    }

    /// The data file (0-based) that holds the page.
    #[inline]
    pub const fn file(self) -> u32 {
        (self.0 >> PAGE_FILE_SHIFT) as u32
    }

    /// The page's number within its data file.
    #[inline]
    pub const fn number(self) -> u64 {
        self.0 & PAGE_NUMBER_MASK
    }

    /// The id as stored: the `u64` that pages, log records, the catalog and reports hold.
    /// For codecs (and renderers of reports) only.
    #[inline]
    pub const fn to_raw(self) -> u64 {
        self.0
    }

    /// An id as stored (see [`PageId::to_raw`]). Any `u64` is an id's stored form, a
    /// damaged one included: readers of a page or log record verify what it names.
    #[inline]
    pub const fn from_raw(raw: u64) -> PageId {
        PageId(raw)
    }

    /// True for [`PageId::NONE`].
    #[inline]
    pub const fn is_none(self) -> bool {
        self.0 == PageId::NONE.0
    }
}

/// `FILE:PAGE` (the data file's number and the page's number in it), as reports and
/// `hotpage inspect page` show a page; `none` for [`PageId::NONE`].
impl std::fmt::Display for PageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_none() {
            f.write_str("none")
        } else {
            write!(f, "{}:{}", self.file(), self.number())
        }
    }
}

/// The file number of the unlogged file, which holds the pages of every unlogged table
/// (`TableSpec::unlogged`): the first number no shared data file can have (they are 0 to
/// 63), so page ids in it never collide with theirs whatever a database's file count.
pub const UNLOGGED_FILE: u32 = 64;

/// The unlogged file's name in the database directory.
pub const UNLOGGED_FILE_NAME: &str = "data.unlogged";

/// The name of data file `file` in the database directory (`data.N`, or the unlogged
/// file's name for [`UNLOGGED_FILE`]).
pub fn data_file_name(file: u32) -> String {
    if file == UNLOGGED_FILE {
        return UNLOGGED_FILE_NAME.to_string();
    }
    format!("data.{file}")
}

/// The data file number of a directory entry named `data.N` (or the unlogged file's), or
/// `None`.
pub fn parse_data_file_name(name: &str) -> Option<u32> {
    if name == UNLOGGED_FILE_NAME {
        return Some(UNLOGGED_FILE);
    }
    let digits = name.strip_prefix("data.")?;
    // `str::parse` would also take "+1"; only plain decimal digits name a data file.
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

// An older reader must see the multi-file version as newer than its own, and every older
// reader must see key heads as newer still.
const _: () = assert!(DATA_FILES_FORMAT_VERSION > FORMAT_VERSION);
const _: () = assert!(KEY_HEADS_FORMAT_VERSION > DATA_FILES_FORMAT_VERSION);
const _: () = assert!(PAGE_FILE_SHIFT < 64);
// The id is the bare u64 in memory too (pages and log records hold it as 8 bytes).
const _: () = assert!(std::mem::size_of::<PageId>() == 8);

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

/// The first catalog format whose log has flush marks, multi-part transactions and a salt
/// (see `catalog`'s module docs).
pub const LOG_FORMAT_VERSION: u32 = 5;

/// The first catalog format whose tables carry a schema (opaque bytes an embedder such as
/// the SQL layer owns) and a dropped flag, and whose database carries metadata bytes.
pub const SCHEMA_FORMAT_VERSION: u32 = 6;

/// The first catalog format whose tables may be unlogged (a table flag an older binary
/// would not know to honour: its tables' pages are reset after a crash).
pub const UNLOGGED_TABLES_FORMAT_VERSION: u32 = 7;

/// The first catalog format whose log holds no leaf inserts of tables' B+trees (recovery
/// re-applies those rows from the commit records) and may hold `TreeSplit` records. An
/// older binary would find a log it cannot read, so it must refuse the database.
pub const LOGICAL_LEAVES_FORMAT_VERSION: u32 = 8;

/// The catalog format that may list truncations waiting on a transaction's commit record
/// (`TRUNCATE` inside a transaction: see `Session::truncate_at_commit`). It is written only
/// while one is waiting, between the truncation's checkpoint and the first checkpoint after
/// its commit; binaries of format 9 otherwise wrote [`LOGICAL_LEAVES_FORMAT_VERSION`]
/// (this one writes [`TXN_NAMES_FORMAT_VERSION`], which keeps the list). An older binary
/// must refuse it: it would take the waiting truncation for a rollback whether the
/// transaction committed or not.
pub const PENDING_TRUNCATES_FORMAT_VERSION: u32 = 9;

/// The first catalog format whose log may hold `TxnName` records (transactions' names,
/// for `fn_dblog`), a record kind an older binary's reader takes for damage. This binary
/// writes it always (with format 9's list of pending truncations, empty or not): every
/// SQL session names its transactions, so a database without names in its log would be
/// the exception, and an older binary must refuse the database as too new rather than
/// report its log as corrupt.
pub const TXN_NAMES_FORMAT_VERSION: u32 = 10;

/// The newest catalog format this binary reads, and the one it writes.
pub const CATALOG_FORMAT_VERSION: u32 = TXN_NAMES_FORMAT_VERSION;

/// The largest schema a table carries, and the largest database metadata, in bytes.
pub const SCHEMA_BYTES_MAX: usize = 64 * 1024;

// Each catalog format is newer than the one before it.
const _: () = assert!(LAYOUT_FORMAT_VERSION < TABLE_DESIGNS_FORMAT_VERSION);
const _: () = assert!(TABLE_DESIGNS_FORMAT_VERSION < LOG_FORMAT_VERSION);
const _: () = assert!(LOG_FORMAT_VERSION < SCHEMA_FORMAT_VERSION);
const _: () = assert!(SCHEMA_FORMAT_VERSION < UNLOGGED_TABLES_FORMAT_VERSION);
const _: () = assert!(UNLOGGED_TABLES_FORMAT_VERSION < LOGICAL_LEAVES_FORMAT_VERSION);
const _: () = assert!(LOGICAL_LEAVES_FORMAT_VERSION < PENDING_TRUNCATES_FORMAT_VERSION);
const _: () = assert!(PENDING_TRUNCATES_FORMAT_VERSION < TXN_NAMES_FORMAT_VERSION);

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_page_id_is_its_file_and_number() {
        let id = PageId::new(3, 5);
        assert_eq!((id.file(), id.number()), (3, 5));
        assert_eq!(id.to_raw(), (3 << PAGE_FILE_SHIFT) | 5);
        assert_eq!(PageId::from_raw(id.to_raw()), id);
        // File 0's ids are its page numbers, as on disk before several data files.
        assert_eq!(PageId::new(0, 7).to_raw(), 7);
        assert_eq!(PageId::from_raw(7), PageId::new(0, 7));
        // The largest page number a file may have stays within its file.
        let last = PageId::new(2, PAGE_NUMBER_MASK);
        assert_eq!((last.file(), last.number()), (2, PAGE_NUMBER_MASK));
        assert!(!id.is_none() && !last.is_none());
        // Ids order as their stored form: file first, then page number.
        assert!(PageId::new(0, 9) < PageId::new(1, 0));
    }

    #[test]
    fn none_is_all_ones_on_disk_and_outside_every_file() {
        assert_eq!(PageId::NONE.to_raw(), u64::MAX);
        assert_eq!(PageId::from_raw(u64::MAX), PageId::NONE);
        assert!(PageId::NONE.is_none());
        assert_eq!(u64::from(PageId::NONE.file()), FILE_NUMBER_NONE);
        assert_eq!(PageId::NONE.to_string(), "none");
    }

    #[test]
    fn a_page_id_displays_as_file_colon_page() {
        assert_eq!(PageId::new(0, 1).to_string(), "0:1");
        assert_eq!(PageId::new(12, 345).to_string(), "12:345");
        assert_eq!(format!("{:?}", PageId::new(0, 1)), "PageId(1)");
    }

    #[test]
    fn checked_new_refuses_what_no_page_id_can_name() {
        assert_eq!(PageId::checked_new(3, 5), Some(PageId::new(3, 5)));
        assert_eq!(PageId::checked_new(0, PAGE_NUMBER_MASK + 1), None);
        assert_eq!(PageId::checked_new(FILE_NUMBER_NONE as u32, 0), None);
        assert_eq!(PageId::checked_new(u32::MAX, 0), None);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "40 bits")]
    fn a_page_number_past_forty_bits_is_refused() {
        let _ = PageId::new(0, 1 << PAGE_FILE_SHIFT);
    }

    proptest! {
        #[test]
        fn page_ids_round_trip(file in 0u32..(FILE_NUMBER_NONE as u32), number in 0..=PAGE_NUMBER_MASK) {
            let id = PageId::new(file, number);
            prop_assert_eq!((id.file(), id.number()), (file, number));
            prop_assert_eq!(PageId::from_raw(id.to_raw()), id);
            prop_assert!(!id.is_none());
            prop_assert_eq!(id.to_string(), format!("{file}:{number}"));
        }

        #[test]
        fn every_raw_id_round_trips(raw in any::<u64>()) {
            let id = PageId::from_raw(raw);
            prop_assert_eq!(id.to_raw(), raw);
            prop_assert_eq!(id.is_none(), raw == u64::MAX);
            if u64::from(id.file()) < FILE_NUMBER_NONE {
                prop_assert_eq!(PageId::new(id.file(), id.number()), id);
            }
        }
    }
}
