//! The buffer pool: a fixed set of page frames over the data files `data.0 … data.{F-1}`,
//! a page table per file, clock eviction and dirty write-back.
//!
//! * **Page ids** ([`PageId`]) are `file << PAGE_FILE_SHIFT | page number in that file`, so
//!   a database with one data file has plain page numbers as ids (and its files read as
//!   before).
//! * **Several data files** (SQL Server's "more data files"): each has its own file handle,
//!   page count and page table; the frames are shared, so memory stays bounded by
//!   `pool_bytes` however many files there are. `allocate` fills the files proportionally
//!   (the one with the fewest pages next), which spreads new pages and their I/O.
//! * **Bounded memory**: `pool_bytes / page_size` frames, allocated once; each file's page
//!   table grows by chunks of 4-byte entries, each twice the last, as the file grows (at
//!   most 8 bytes per page of the file, 0.1 %).
//! * **Lookups never lock**: the page table is a radix array of atomics, so 64 sessions
//!   descending through the same root page read it without touching a shared lock word.
//!   Only a miss takes a (sharded) mutex, to load each page once.
//! * **Frames are re-checked after latching**: a frame can be evicted between the lookup
//!   and the latch, so every fix compares the frame's page id once it holds the latch
//!   (or validates its optimistic version) and retries if the frame moved on.
//! * **Eviction** takes a victim only with a non-blocking exclusive try-latch, so a page
//!   anyone holds is never evicted. When every frame is latched it waits (`FREE_BUFFER`)
//!   for one to come free instead of failing.
//! * **Admission control** (`budget`): the frames that sessions' operations may hold
//!   latched at once never add up to the pool, so that wait always ends: running out of
//!   frames is back-pressure, and a commit's apply never fails for want of a frame.
//!
//! Nothing here knows what is on a page except the header and the file-header page.

use crate::error::{Error, Result};
use crate::failstop::FailStop;
use crate::format::{
    DATA_FILE_MAGIC, KEY_HEADS_FORMAT_VERSION, PageId, UNLOGGED_FILE, data_file_name,
};
use crate::latch::{ExclusiveGuard, HybridLatch, SharedGuard};
use crate::log::Wal;
use crate::page::{self, Page, PageBuf, PageType};
use crate::stats::{Counter, Stats, WaitType, elapsed_ns, mark_waiting};
use crate::storage::{Storage, StorageFile};
use budget::{FrameBudget, HeldFrame};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

mod budget;
pub use budget::{FRAMES_RESERVED, FrameClaim, FrameOp, OP_FRAMES_MAX};

/// The fewest frames a pool may have.
pub const POOL_FRAMES_MIN: usize = 16;
// Room for one operation's frames besides the reserve, and for a lifetime reservation
// next to the shared remainder (see `budget`).
const _: () = assert!(POOL_FRAMES_MIN >= 2 * OP_FRAMES_MAX + FRAMES_RESERVED);
// A thread waiting for a frame sleeps this long first, doubling up to the most.
const FRAME_RETRY_PAUSE_MIN: Duration = Duration::from_micros(20);
const FRAME_RETRY_PAUSE_MAX: Duration = Duration::from_millis(1);
/// The default pool size.
pub const POOL_BYTES_DEFAULT: usize = 256 << 20;
/// The most data files a database may have.
pub const DATA_FILES_MAX: u32 = 64;
// The unlogged file's number is one no shared data file can have.
const _: () = assert!(UNLOGGED_FILE >= DATA_FILES_MAX);

/// The most pages one data file may hold (2^30: 8 TiB at 8 KiB pages).
pub const FILE_PAGES_MAX: u64 = 1 << 30;
// A page table's first chunk has 2^10 entries; each later chunk is twice the one before.
const TABLE_FIRST_CHUNK_BITS: u32 = 10;
// Chunks enough for FILE_PAGES_MAX pages: chunk k starts at (2^k - 1) * 2^10.
const TABLE_CHUNKS: usize = 21;
const _: () = assert!(((1u64 << TABLE_CHUNKS) - 1) << TABLE_FIRST_CHUNK_BITS >= FILE_PAGES_MAX);
const MISS_LOCK_SHARDS: usize = 64;

/// Checks a data-file count: 1 to `DATA_FILES_MAX`.
pub fn validate_data_files(count: u32) -> std::result::Result<(), String> {
    if (1..=DATA_FILES_MAX).contains(&count) {
        Ok(())
    } else {
        Err(format!(
            "data_files must be from 1 to {DATA_FILES_MAX}, not {count}"
        ))
    }
}

/// What page 0 (the file header) of a data file says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// The format version the file was written with.
    pub format_version: u32,
    /// The database's page size.
    pub page_size: u32,
    /// How many data files the database has (1 in headers that predate several files).
    pub file_count: u32,
    /// This file's own number N (`data.N`; 0 in headers that predate several files).
    pub file_number: u32,
}

impl FileHeader {
    /// The header record's payload: version, page size, file count, file number (u32 LE).
    fn encode(&self) -> Vec<u8> {
        let mut record = Vec::with_capacity(16);
        for word in [
            self.format_version,
            self.page_size,
            self.file_count,
            self.file_number,
        ] {
            record.extend_from_slice(&word.to_le_bytes());
        }
        record
    }

    /// Decodes a header page image; `None` if page 0 holds no hotpage header record. The
    /// checksum is not checked here (see `page::verify`).
    pub fn decode(image: &[u8]) -> Option<FileHeader> {
        let buf = PageBuf::new(image.len());
        buf.page().copy_from(image);
        let header = buf.page();
        if header.page_type() != Some(PageType::FileHeader) || header.slot_count() != 1 {
            return None;
        }
        let mut key = Vec::new();
        let mut payload = Vec::new();
        header.copy_key(0, &mut key);
        header.copy_payload(0, &mut payload);
        if key != DATA_FILE_MAGIC {
            return None;
        }
        let word = |at: usize| {
            payload
                .get(at..at + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_le_bytes)
        };
        Some(FileHeader {
            format_version: word(0)?,
            page_size: word(4)?,
            // Absent in files written before several data files: one file, this is it.
            file_count: word(8).unwrap_or(1),
            file_number: word(12).unwrap_or(0),
        })
    }
}

/// data.0's header, if data.0 exists and its header reads cleanly (else `None`). For
/// callers that must know it before the pool opens (the removal of a crashed unlogged run's
/// files, which refuses an older format and recreates as many files as there were).
pub fn recorded_header(storage: &dyn Storage, page_size: usize) -> Option<FileHeader> {
    let name = data_file_name(0);
    if !storage.exists(&name).ok()? {
        return None;
    }
    let file = storage.open(&name, false).ok()?;
    let mut image = vec![0u8; page_size];
    file.read_at(&mut image, 0).ok()?;
    page::verify(&image, PageId::new(0, 0)).ok()?;
    FileHeader::decode(&image).filter(|h| h.file_number == 0)
}

impl FileHeader {
    /// The data-file count the header records, if it is one a database can have.
    pub fn data_files(&self) -> Option<u32> {
        validate_data_files(self.file_count).ok()?;
        Some(self.file_count)
    }
}

/// Reads and checks a data file's header page: magic, format version, page size and
/// checksum (the caller checks the file number and count against the others).
fn read_header(
    file: &dyn StorageFile,
    name: &str,
    db_path: &Path,
    page_size: usize,
) -> Result<FileHeader> {
    let not_db = |reason: String| Error::NotADatabase {
        path: db_path.to_path_buf(),
        reason: format!("{name}: {reason}"),
    };
    let mut image = vec![0u8; page_size];
    file.read_at(&mut image, 0)
        .map_err(|e| not_db(format!("cannot read its header page: {e}")))?;
    let header =
        FileHeader::decode(&image).ok_or_else(|| not_db("no hotpage header in page 0".into()))?;
    if header.format_version > KEY_HEADS_FORMAT_VERSION {
        return Err(Error::FormatTooNew {
            found: header.format_version,
            supported: KEY_HEADS_FORMAT_VERSION,
        });
    }
    if header.page_size as usize != page_size {
        return Err(not_db(format!(
            "page size {} in the file, {page_size} expected",
            header.page_size
        )));
    }
    // Checked against the page id the header claims: a header of another file (a file
    // renamed or copied in) is then reported by its number, not as a bad page id. A file
    // number no page id can hold is no header of ours (a damaged one): it is checked as
    // data.0's, whose page number, 0, the error shows all the same.
    let page_id = PageId::checked_new(header.file_number, 0).unwrap_or(PageId::new(0, 0));
    page::verify(&image, page_id).map_err(|reason| Error::CorruptPage {
        file: name.to_string(),
        page_id,
        reason,
    })?;
    // After the checksum (a damaged version byte is damage, not an old format); a header
    // page's slot is not checked against its head, so an older header verifies.
    refuse_older_format(header.format_version)?;
    Ok(header)
}

/// `FormatTooOld` for a data file written before key heads (formats 3 and 4): its 4-byte
/// slots would read as damage.
pub fn refuse_older_format(format_version: u32) -> Result<()> {
    if format_version < KEY_HEADS_FORMAT_VERSION {
        return Err(Error::FormatTooOld {
            found: format_version,
            required: KEY_HEADS_FORMAT_VERSION,
        });
    }
    Ok(())
}

/// `frame_count` empty frames of `page_size` bytes.
fn new_frames(frame_count: usize, page_size: usize) -> Box<[Frame]> {
    (0..frame_count)
        .map(|_| Frame {
            latch: HybridLatch::new(),
            page_id: FramePageId::new(PageId::NONE),
            dirty: AtomicBool::new(false),
            referenced: AtomicBool::new(false),
            image_lsn: AtomicU64::new(0),
            buf: PageBuf::new(page_size),
        })
        .collect()
}

/// page number → frame index + 1 (0: not in the pool), for one data file.
///
/// Chunks double in size (1 Ki entries, then 2 Ki, 4 Ki, ...) and are created as the file
/// grows: a lookup is still two loads (the chunk, then the entry), an empty table is 21
/// slots, and the entries never cost more than twice the 4 bytes per page the file needs.
/// Cheap tables matter because there is one per data file and one set per open.
struct PageTable {
    chunks: [OnceLock<Box<[AtomicU32]>>; TABLE_CHUNKS],
}

impl PageTable {
    fn new() -> PageTable {
        PageTable {
            chunks: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// (chunk, slot in it) of a page number, or `None` past `FILE_PAGES_MAX`.
    fn split(number: u64) -> Option<(usize, usize)> {
        if number >= FILE_PAGES_MAX {
            return None;
        }
        // Chunk k covers [(2^k - 1) << FIRST, (2^(k+1) - 1) << FIRST): k = log2 of
        // (number >> FIRST) + 1, which is at least 1.
        let biased = (number >> TABLE_FIRST_CHUNK_BITS) + 1;
        let chunk = biased.ilog2();
        let start = ((1u64 << chunk) - 1) << TABLE_FIRST_CHUNK_BITS;
        Some((chunk as usize, (number - start) as usize))
    }

    fn get(&self, number: u64) -> Option<usize> {
        let (chunk, slot) = Self::split(number)?;
        let entry = self.chunks[chunk].get()?[slot].load(Ordering::Acquire);
        (entry != 0).then(|| entry as usize - 1)
    }

    fn set(&self, number: u64, frame: usize) {
        if let Some((chunk, slot)) = Self::split(number) {
            let entries = self.chunks[chunk].get_or_init(|| {
                // The last chunk only reaches FILE_PAGES_MAX, not its full doubled size.
                let start = ((1u64 << chunk) - 1) << TABLE_FIRST_CHUNK_BITS;
                let len =
                    (1u64 << (TABLE_FIRST_CHUNK_BITS + chunk as u32)).min(FILE_PAGES_MAX - start);
                (0..len).map(|_| AtomicU32::new(0)).collect()
            });
            entries[slot].store(frame as u32 + 1, Ordering::Release);
        }
    }

    fn clear(&self, number: u64) {
        if let Some((chunk, slot)) = Self::split(number)
            && let Some(entries) = self.chunks[chunk].get()
        {
            entries[slot].store(0, Ordering::Release);
        }
    }
}

/// A frame's page id, one atomic word (the id's stored form).
struct FramePageId(AtomicU64);

impl FramePageId {
    fn new(page_id: PageId) -> FramePageId {
        FramePageId(AtomicU64::new(page_id.to_raw()))
    }

    #[inline]
    fn load(&self) -> PageId {
        PageId::from_raw(self.0.load(Ordering::Relaxed))
    }

    #[inline]
    fn store(&self, page_id: PageId) {
        self.0.store(page_id.to_raw(), Ordering::Relaxed);
    }
}

struct Frame {
    latch: HybridLatch,
    // `PageId::NONE` when empty. Changes only under the exclusive latch.
    page_id: FramePageId,
    dirty: AtomicBool,
    // Clock "second chance" bit: set on access (only if clear, to keep the line shared).
    referenced: AtomicBool,
    // End LSN of the last full image of this page written to the log since it came into
    // the pool (0: none). The log decides from it when a change must be a full image.
    image_lsn: AtomicU64,
    buf: PageBuf,
}

impl Frame {
    fn touch(&self) {
        if !self.referenced.load(Ordering::Relaxed) {
            self.referenced.store(true, Ordering::Relaxed);
        }
    }
}

thread_local! {
    // Scratch page image for reads and writes, reused so that I/O allocates nothing.
    static IO_SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// How [`BufferPool::open_unlogged_file`] treats the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnloggedFile {
    /// Create it if missing (the first unlogged table's creation).
    Create,
    /// It must exist (the catalog names unlogged tables, and their pages are trusted).
    Existing,
    /// Remove whatever it held and start it empty: a crash left its pages unlogged, so
    /// none can be trusted.
    Reset,
}

/// Where a tree or heap puts its new pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// Over the shared data files: proportional fill for a tree, a chain's own file for a
    /// heap.
    #[default]
    Spread,
    /// All in one file (an unlogged table's, in `UNLOGGED_FILE`).
    In(u32),
}

/// Buffer-pool figures for reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolInfo {
    /// Frames in the pool.
    pub frames: usize,
    /// Page size in bytes.
    pub page_size: usize,
    /// Pages in all data files together, header pages included.
    pub file_pages: u64,
    /// Pages in each data file (`data.0` first), each file's header page included.
    pub file_pages_each: Vec<u64>,
    /// Pages in the unlogged file, its header page included (0 while it is not open).
    pub unlogged_file_pages: u64,
}

/// One data file of the pool.
struct DataFile {
    name: String,
    file: Arc<dyn StorageFile>,
    // Pages in the file (allocated, maybe not yet written): the next new page's number.
    pages: AtomicU64,
    // Its own radix table, indexed by page number: ids of different files share low bits,
    // and one table per file keeps every lookup two loads whatever the file count.
    table: PageTable,
}

/// The buffer pool of a database's data files.
pub struct BufferPool {
    page_size: usize,
    frames: Box<[Frame]>,
    files: Box<[DataFile]>,
    // The unlogged file (`UNLOGGED_FILE`), once a table needs it: the pages of unlogged
    // tables, which a crash resets by re-creating this one file (see `open_unlogged_file`).
    unlogged: OnceLock<DataFile>,
    clock_hand: AtomicUsize,
    miss_locks: Box<[Mutex<()>]>,
    stats: Arc<Stats>,
    // The write-ahead log, once attached: no page is written before the log is durable up
    // to the page's LSN.
    log: OnceLock<Arc<Wal>>,
    // The database's fail-stop, shared with the log: a failed write or fdatasync of any
    // data file stops it for good, because the kernel may have dropped pages it reports
    // clean, so nothing may claim the files are up to date again (no checkpoint may move
    // past the failure). Reopening recovers from the log.
    stop: Arc<FailStop>,
    // Sessions' frame permits (admission control).
    budget: FrameBudget,
    // Frames evicted so far: a thread waiting for a frame that sees it move knows the
    // pool is busy, not wedged. (Only eviction writes it: misses and allocations.)
    evictions: AtomicU64,
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field(
                "files",
                &self
                    .files
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("frames", &self.frames.len())
            .field("page_size", &self.page_size)
            .finish()
    }
}

impl BufferPool {
    /// Opens a pool over one data file (file 0, named `file_name` in messages), formatting
    /// it (header page 0) when empty. A file whose header records more than one data file
    /// is refused: use [`BufferPool::open_in`] for a database's files.
    pub fn open(
        file: Arc<dyn StorageFile>,
        file_name: &str,
        page_size: usize,
        pool_bytes: usize,
        stats: Arc<Stats>,
    ) -> Result<BufferPool> {
        BufferPool::open_files(
            vec![(file, file_name.to_string())],
            Path::new(file_name),
            page_size,
            pool_bytes,
            stats,
        )
    }

    /// Opens the data files `data.0 … data.{F-1}` of the database in `storage`. If data.0
    /// is missing or empty, a database is being created: `new_file_count` files are created
    /// and formatted. Otherwise F is what data.0's header records, and each `data.N` must
    /// exist and carry a header naming N, the same count and the same page size.
    /// `db_path` only names the database in messages.
    pub fn open_in(
        storage: &dyn Storage,
        db_path: &Path,
        page_size: usize,
        pool_bytes: usize,
        new_file_count: u32,
        stats: Arc<Stats>,
    ) -> Result<BufferPool> {
        validate_data_files(new_file_count).map_err(Error::InvalidOption)?;
        page::validate_page_size(page_size).map_err(Error::InvalidOption)?;
        let not_db = |reason: String| Error::NotADatabase {
            path: db_path.to_path_buf(),
            reason,
        };
        let open_file = |file: u32, create: bool| {
            let name = data_file_name(file);
            storage
                .open(&name, create)
                .map_err(|e| Error::io(format!("opening {name}"), e))
        };
        let first = open_file(0, true)?;
        let first_len = first
            .len()
            .map_err(|e| Error::io(format!("reading the length of {}", data_file_name(0)), e))?;
        let count = if first_len == 0 {
            new_file_count
        } else {
            // The count is in every header; data.0's decides which files to open.
            let header = read_header(&*first, &data_file_name(0), db_path, page_size)?;
            validate_data_files(header.file_count).map_err(|reason| {
                not_db(format!(
                    "{}'s header records {} data files: {reason}",
                    data_file_name(0),
                    header.file_count
                ))
            })?;
            header.file_count
        };
        let mut files = vec![(first, data_file_name(0))];
        for file in 1..count {
            let name = data_file_name(file);
            if first_len > 0 {
                let exists = storage
                    .exists(&name)
                    .map_err(|e| Error::io(format!("looking for {name}"), e))?;
                if !exists {
                    return Err(not_db(format!(
                        "{name} is missing ({} says the database has {count} data files)",
                        data_file_name(0)
                    )));
                }
            }
            files.push((open_file(file, first_len == 0)?, name));
        }
        BufferPool::open_files(files, db_path, page_size, pool_bytes, stats)
    }

    /// Builds the pool over `files` (file N at index N) and formats or checks each header.
    fn open_files(
        files: Vec<(Arc<dyn StorageFile>, String)>,
        db_path: &Path,
        page_size: usize,
        pool_bytes: usize,
        stats: Arc<Stats>,
    ) -> Result<BufferPool> {
        page::validate_page_size(page_size).map_err(Error::InvalidOption)?;
        let frame_count = pool_bytes / page_size;
        if frame_count < POOL_FRAMES_MIN {
            // Fewer could not hold one operation's frames next to the frames reserved for
            // threads that are not sessions (see `budget`).
            return Err(Error::InvalidOption(format!(
                "pool of {pool_bytes} bytes holds {frame_count} pages of {page_size} bytes; at least {POOL_FRAMES_MIN} are needed"
            )));
        }
        let frames = new_frames(frame_count, page_size);
        let mut lens = Vec::with_capacity(files.len());
        let mut data_files = Vec::with_capacity(files.len());
        for (file, name) in files {
            let len_bytes = file
                .len()
                .map_err(|e| Error::io(format!("reading the length of {name}"), e))?;
            lens.push(len_bytes);
            data_files.push(DataFile {
                name,
                file,
                pages: AtomicU64::new(len_bytes.div_ceil(page_size as u64)),
                table: PageTable::new(),
            });
        }
        let pool = BufferPool {
            page_size,
            frames,
            files: data_files.into_boxed_slice(),
            unlogged: OnceLock::new(),
            clock_hand: AtomicUsize::new(0),
            miss_locks: (0..MISS_LOCK_SHARDS).map(|_| Mutex::new(())).collect(),
            budget: FrameBudget::new(frame_count, Arc::clone(&stats)),
            stats,
            log: OnceLock::new(),
            stop: Arc::new(FailStop::new()),
            evictions: AtomicU64::new(0),
        };
        let count = pool.file_count();
        let creating = lens[0] == 0;
        for (number, len_bytes) in (0u32..).zip(lens) {
            let name = &pool.files[number as usize].name;
            match (creating, len_bytes == 0) {
                (true, true) => pool.format_header(number)?,
                (false, false) => {
                    let header =
                        read_header(&*pool.files[number as usize].file, name, db_path, page_size)?;
                    let problem = if header.file_number != number {
                        Some(format!(
                            "{name}'s header says it is data file {} ({}), not {number}",
                            header.file_number,
                            data_file_name(header.file_number)
                        ))
                    } else if header.file_count != count {
                        Some(format!(
                            "{name}'s header records {} data files where {count} were expected",
                            header.file_count
                        ))
                    } else {
                        None
                    };
                    if let Some(reason) = problem {
                        return Err(Error::NotADatabase {
                            path: db_path.to_path_buf(),
                            reason,
                        });
                    }
                }
                // A new database's files are created together and made durable before its
                // first catalog; one empty and one not means they do not belong together.
                (true, false) => {
                    return Err(Error::NotADatabase {
                        path: db_path.to_path_buf(),
                        reason: format!("{name} has pages but {} is empty", pool.files[0].name),
                    });
                }
                (false, true) => {
                    return Err(Error::NotADatabase {
                        path: db_path.to_path_buf(),
                        reason: format!("{name} is empty (it has no header page)"),
                    });
                }
            }
        }
        Ok(pool)
    }

    fn format_header(&self, file: u32) -> Result<()> {
        let header = self.allocate_in(file, PageType::FileHeader, 0)?;
        debug_assert_eq!(header.page_id(), PageId::new(file, 0));
        let count = self.file_count();
        let record = FileHeader {
            format_version: KEY_HEADS_FORMAT_VERSION,
            page_size: self.page_size as u32,
            file_count: count,
            file_number: file,
        }
        .encode();
        if !header.page().insert_record(0, DATA_FILE_MAGIC, &record) {
            return Err(Error::InvalidOption(
                "page too small for the file header".into(),
            ));
        }
        header.mark_dirty();
        Ok(())
    }

    /// The data file of `page_id` and the page's number in it; a page id naming a file the
    /// pool does not have is `CorruptPage` (it came from a damaged page or log record).
    fn locate(&self, page_id: PageId) -> Result<(&DataFile, u64)> {
        match self.data(page_id.file()) {
            Some(data) => Ok((data, page_id.number())),
            None => Err(self.corrupt(
                page_id,
                format!(
                    "no such data file: the database has {} ({} to {})",
                    self.files.len(),
                    data_file_name(0),
                    data_file_name(self.file_count() - 1)
                ),
            )),
        }
    }

    /// The miss lock of a page: page numbers and file numbers both spread the shards.
    fn miss_lock(&self, page_id: PageId) -> &Mutex<()> {
        let mixed = page_id.number() ^ u64::from(page_id.file()).wrapping_mul(0x9e37_79b9);
        &self.miss_locks[(mixed as usize) % MISS_LOCK_SHARDS]
    }

    fn corrupt(&self, page_id: PageId, reason: String) -> Error {
        let file = page_id.file();
        Error::CorruptPage {
            file: self
                .data(file)
                .map_or_else(|| data_file_name(file), |d| d.name.clone()),
            page_id,
            reason,
        }
    }

    /// The page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The statistics registry waits are recorded in.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// Sizes, for reports.
    pub fn info(&self) -> PoolInfo {
        let file_pages_each: Vec<u64> = self
            .files
            .iter()
            .map(|d| d.pages.load(Ordering::Acquire))
            .collect();
        let unlogged_file_pages = self
            .unlogged
            .get()
            .map_or(0, |d| d.pages.load(Ordering::Acquire));
        PoolInfo {
            frames: self.frames.len(),
            page_size: self.page_size,
            file_pages: file_pages_each.iter().sum::<u64>() + unlogged_file_pages,
            file_pages_each,
            unlogged_file_pages,
        }
    }

    /// The name of data file `file` as this pool opened it.
    pub fn file_name(&self, file: u32) -> Option<&str> {
        self.data(file).map(|d| d.name.as_str())
    }

    /// Data file `file`: one of the shared files, or the unlogged file once it is open.
    #[inline]
    fn data(&self, file: u32) -> Option<&DataFile> {
        match self.files.get(file as usize) {
            Some(data) => Some(data),
            None if file == UNLOGGED_FILE => self.unlogged.get(),
            None => None,
        }
    }

    /// True once the unlogged file is open.
    pub fn has_unlogged_file(&self) -> bool {
        self.unlogged.get().is_some()
    }

    /// Opens the unlogged file (`UNLOGGED_FILE`) of the database in `storage` as `mode`
    /// says, formatting it when new. Its header records the shared files' count and its own
    /// number, like theirs. Does nothing if it is open.
    pub fn open_unlogged_file(
        &self,
        storage: &dyn Storage,
        db_path: &Path,
        mode: UnloggedFile,
    ) -> Result<()> {
        if self.unlogged.get().is_some() {
            return Ok(());
        }
        let name = data_file_name(UNLOGGED_FILE);
        if mode == UnloggedFile::Existing {
            let exists = storage
                .exists(&name)
                .map_err(|e| Error::io(format!("looking for {name}"), e))?;
            if !exists {
                return Err(Error::NotADatabase {
                    path: db_path.to_path_buf(),
                    reason: format!("{name} is missing (the catalog has unlogged tables)"),
                });
            }
        }
        if mode == UnloggedFile::Reset {
            match storage.remove(&name) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::io(format!("removing {name} after a crash"), e));
                }
                _ => {}
            }
        }
        let file = storage
            .open(&name, true)
            .map_err(|e| Error::io(format!("opening {name}"), e))?;
        let len_bytes = file
            .len()
            .map_err(|e| Error::io(format!("reading the length of {name}"), e))?;
        if len_bytes > 0 {
            let header = read_header(&*file, &name, db_path, self.page_size)?;
            if header.file_number != UNLOGGED_FILE || header.file_count != self.file_count() {
                return Err(Error::NotADatabase {
                    path: db_path.to_path_buf(),
                    reason: format!(
                        "{name}'s header says file {} of {}, not the unlogged file ({UNLOGGED_FILE}) of {}",
                        header.file_number,
                        header.file_count,
                        self.file_count()
                    ),
                });
            }
        }
        let data = DataFile {
            name,
            file,
            pages: AtomicU64::new(len_bytes.div_ceil(self.page_size as u64)),
            table: PageTable::new(),
        };
        if self.unlogged.set(data).is_ok() && len_bytes == 0 {
            self.format_header(UNLOGGED_FILE)?;
        }
        Ok(())
    }

    fn frame_index(&self, page_id: PageId) -> Result<usize> {
        let (data, number) = self.locate(page_id)?;
        loop {
            if let Some(index) = data.table.get(number) {
                return Ok(index);
            }
            self.load(page_id)?;
        }
    }

    /// Attaches the write-ahead log: from now on a dirty page is written only after the log
    /// is durable up to the page's LSN (the WAL rule). Recovery runs before this, while every
    /// record it replays is durable already.
    pub fn attach_log(&self, log: Arc<Wal>) {
        let _ = self.log.set(log);
    }

    /// Recovery: puts a page image from the log into the pool without reading the page from
    /// disk (where it may be torn), dirty. Extends the file's page count if needed.
    pub fn install_image(&self, page_id: PageId, image: &[u8], lsn: u64) -> Result<()> {
        let (data, number) = self.locate(page_id)?;
        if image.len() != self.page_size {
            return Err(self.corrupt(page_id, "log image of the wrong size".into()));
        }
        // An image is a copy of the page it is logged for: one that names another page
        // would put that page's contents here (and fail every later read's id check).
        if page::image_page_id(image) != Some(page_id) {
            return Err(self.corrupt(page_id, "log image of another page".into()));
        }
        if number >= FILE_PAGES_MAX {
            return Err(self.corrupt(
                page_id,
                format!("log image of a page past the largest file ({FILE_PAGES_MAX} pages)"),
            ));
        }
        data.pages.fetch_max(number + 1, Ordering::AcqRel);
        if let Some(index) = data.table.get(number) {
            let frame = &self.frames[index];
            // Recovery's own latch: not a session's wait.
            let (_guard, _) = frame.latch.lock_exclusive(|| ());
            if frame.page_id.load() == page_id {
                frame.dirty.store(true, Ordering::SeqCst);
                frame.buf.page().copy_from(image);
                frame.buf.page().set_lsn(lsn);
                return Ok(());
            }
        }
        let _miss = self.miss_lock(page_id).lock();
        if data.table.get(number).is_some() {
            drop(_miss);
            return self.install_image(page_id, image, lsn);
        }
        let victim = self.evict_one()?;
        let index = victim.index;
        let frame = &self.frames[index];
        frame.buf.page().copy_from(image);
        frame.buf.page().set_lsn(lsn);
        frame.page_id.store(page_id);
        frame.dirty.store(true, Ordering::SeqCst);
        frame.image_lsn.store(0, Ordering::Relaxed);
        frame.touch();
        data.table.set(number, index);
        Ok(())
    }

    /// Fixes a page for an optimistic read. Validate before trusting anything read.
    pub fn fix_optimistic(&self, page_id: PageId) -> Result<OptimisticPage<'_>> {
        loop {
            let frame = &self.frames[self.frame_index(page_id)?];
            let (version, wait_ns) = frame
                .latch
                .optimistic_or_wait(|| mark_waiting(WaitType::PageLatchSh, Some(page_id)));
            if wait_ns > 0 {
                self.stats
                    .record_wait(WaitType::PageLatchSh, Some(page_id), wait_ns);
            }
            if frame.page_id.load() == page_id && frame.latch.validate(version) {
                frame.touch();
                return Ok(OptimisticPage {
                    pool: self,
                    frame,
                    page_id,
                    version,
                });
            }
        }
    }

    /// Fixes a page with a shared latch.
    pub fn fix_shared(&self, page_id: PageId) -> Result<SharedPage<'_>> {
        loop {
            let frame = &self.frames[self.frame_index(page_id)?];
            let (guard, wait_ns) = frame
                .latch
                .lock_shared(|| mark_waiting(WaitType::PageLatchSh, Some(page_id)));
            if wait_ns > 0 {
                self.stats
                    .record_wait(WaitType::PageLatchSh, Some(page_id), wait_ns);
            }
            if frame.page_id.load() == page_id {
                frame.touch();
                return Ok(SharedPage {
                    frame,
                    page_id,
                    _guard: guard,
                    _held: HeldFrame::new(),
                });
            }
        }
    }

    /// Fixes a page with an exclusive latch.
    pub fn fix_exclusive(&self, page_id: PageId) -> Result<ExclusivePage<'_>> {
        loop {
            let frame = &self.frames[self.frame_index(page_id)?];
            let (guard, wait_ns) = frame
                .latch
                .lock_exclusive(|| mark_waiting(WaitType::PageLatchEx, Some(page_id)));
            if wait_ns > 0 {
                self.stats
                    .record_wait(WaitType::PageLatchEx, Some(page_id), wait_ns);
            }
            if frame.page_id.load() == page_id {
                frame.touch();
                return Ok(ExclusivePage {
                    frame,
                    page_id,
                    _guard: guard,
                    _held: HeldFrame::new(),
                });
            }
        }
    }

    /// Fixes a page exclusively only if its latch is free right now: `None` when another
    /// session holds it (the caller combines instead of queueing; see `access::combine`).
    pub fn try_fix_exclusive(&self, page_id: PageId) -> Result<Option<ExclusivePage<'_>>> {
        loop {
            let frame = &self.frames[self.frame_index(page_id)?];
            let Some(guard) = frame.latch.try_lock_exclusive() else {
                return Ok(None);
            };
            if frame.page_id.load() == page_id {
                frame.touch();
                return Ok(Some(ExclusivePage {
                    frame,
                    page_id,
                    _guard: guard,
                    _held: HeldFrame::new(),
                }));
            }
            // Evicted between the lookup and the latch: look it up again.
        }
    }

    /// [`BufferPool::try_fix_exclusive`], spinning up to `spins()` pauses while the page's
    /// latch is held. Test before test-and-set: while held, the spin only reads the latch's
    /// version, which shares its cache line with the holder, where a repeated
    /// compare-and-swap would take the line away from the holder each time. `spins` is
    /// asked only once the first try has failed, so a free latch costs nothing more.
    pub fn try_fix_exclusive_spinning(
        &self,
        page_id: PageId,
        spins: impl FnOnce() -> usize,
    ) -> Result<Option<ExclusivePage<'_>>> {
        if let Some(page) = self.try_fix_exclusive(page_id)? {
            return Ok(Some(page));
        }
        let spins = spins();
        if spins == 0 {
            return Ok(None);
        }
        // The frame may be evicted and reused meanwhile: its latch is then only a hint,
        // and `try_fix_exclusive` looks the page up again.
        let frame = &self.frames[self.frame_index(page_id)?];
        for _ in 0..spins {
            std::hint::spin_loop();
            if frame.latch.optimistic().is_some()
                && let Some(page) = self.try_fix_exclusive(page_id)?
            {
                return Ok(Some(page));
            }
        }
        Ok(None)
    }

    /// Number of data files the pool spreads pages over.
    pub fn file_count(&self) -> u32 {
        self.files.len() as u32
    }

    /// Allocates a new page at the end of data file `file`, formatted and dirty, latched
    /// exclusively.
    pub fn allocate_in(
        &self,
        file: u32,
        page_type: PageType,
        level: u8,
    ) -> Result<ExclusivePage<'_>> {
        let Some(data) = self.data(file) else {
            return Err(Error::InvalidOption(format!(
                "no data file {file}: the pool has {} ({} to {})",
                self.files.len(),
                data_file_name(0),
                data_file_name(self.file_count() - 1)
            )));
        };
        let number = data.pages.fetch_add(1, Ordering::AcqRel);
        if number >= FILE_PAGES_MAX {
            data.pages.fetch_sub(1, Ordering::AcqRel);
            return Err(Error::InvalidOption(format!(
                "{} is full: {FILE_PAGES_MAX} pages",
                data.name
            )));
        }
        let page_id = PageId::new(file, number);
        let victim = self.evict_one()?;
        let frame = &self.frames[victim.index];
        frame.buf.page().init(page_id, page_type, level);
        frame.page_id.store(page_id);
        frame.dirty.store(true, Ordering::SeqCst);
        frame.image_lsn.store(0, Ordering::Relaxed);
        frame.touch();
        data.table.set(number, victim.index);
        Ok(ExclusivePage {
            frame,
            page_id,
            _guard: victim.guard,
            _held: victim.held,
        })
    }

    /// Allocates a new page, formatted and dirty, latched exclusively, by proportional fill:
    /// at the end of the data file with the fewest pages (the first such on a tie). The
    /// files start equal (a header page each), so this is SQL Server's proportional fill
    /// over equal files: new pages, and the writes and reads that follow them, go round the
    /// files in turn. Concurrent allocations may pick the same file; the next ones even
    /// the counts out again.
    pub fn allocate(&self, page_type: PageType, level: u8) -> Result<ExclusivePage<'_>> {
        let file = self
            .files
            .iter()
            .enumerate()
            .min_by_key(|(_, data)| data.pages.load(Ordering::Acquire))
            .map_or(0, |(file, _)| file as u32);
        self.allocate_in(file, page_type, level)
    }

    /// Allocates a new page where `placement` says: [`BufferPool::allocate`] when spread,
    /// else at the end of its file. `spread_file` is the shared file a heap chain lives in
    /// (`None`: proportional fill).
    pub fn allocate_placed(
        &self,
        placement: Placement,
        spread_file: Option<u32>,
        page_type: PageType,
        level: u8,
    ) -> Result<ExclusivePage<'_>> {
        match (placement, spread_file) {
            (Placement::In(file), _) => self.allocate_in(file, page_type, level),
            (Placement::Spread, Some(file)) => {
                self.allocate_in(file % self.file_count().max(1), page_type, level)
            }
            (Placement::Spread, None) => self.allocate(page_type, level),
        }
    }

    /// Reads a page into a frame (the miss path). Loads each page once however many
    /// sessions miss on it together.
    fn load(&self, page_id: PageId) -> Result<()> {
        let (data, number) = self.locate(page_id)?;
        let _miss = self.miss_lock(page_id).lock();
        if data.table.get(number).is_some() {
            return Ok(()); // another session loaded it while we waited
        }
        let pages = data.pages.load(Ordering::Acquire);
        if number >= pages {
            return Err(self.corrupt(
                page_id,
                format!(
                    "page number {number} is past the end of {} ({pages} pages)",
                    data.name
                ),
            ));
        }
        let victim = self.evict_one()?;
        let index = victim.index;
        let frame = &self.frames[index];
        let start = Instant::now();
        let waiting = mark_waiting(WaitType::PageIoLatchSh, Some(page_id));
        let read = IO_SCRATCH.with(|scratch| -> Result<()> {
            let mut image = scratch.borrow_mut();
            image.resize(self.page_size, 0);
            self.read_image(data, page_id, &mut image)?;
            page::verify(&image, page_id).map_err(|reason| self.corrupt(page_id, reason))?;
            frame.buf.page().copy_from(&image);
            Ok(())
        });
        drop(waiting);
        self.stats
            .record_wait(WaitType::PageIoLatchSh, Some(page_id), elapsed_ns(start));
        // On failure the frame stays empty; the guard drop frees it for the next victim.
        read?;
        self.stats.count(Counter::PagesRead, 1);
        frame.page_id.store(page_id);
        frame.dirty.store(false, Ordering::Relaxed);
        frame.image_lsn.store(0, Ordering::Relaxed);
        frame.touch();
        data.table.set(number, index);
        drop(victim);
        Ok(())
    }

    /// Picks a victim frame by clock, writes it back if dirty, and returns it empty and
    /// latched. When every frame is latched it waits for one (`FREE_BUFFER`). A session's
    /// wait ends (see `budget`); other callers get `PoolExhausted` once no frame was evicted
    /// anywhere in the pool for the budget's `wait_max`, and a thread applying a commit
    /// never does.
    fn evict_one(&self) -> Result<Victim<'_>> {
        // Two sweeps clear every reference bit; a third finds any unlatched frame.
        match self.sweep(3)? {
            Some(victim) => Ok(victim),
            None => self.evict_waiting(),
        }
    }

    /// The wait of `evict_one`: sweeps again after a pause that doubles up to a bound.
    fn evict_waiting(&self) -> Result<Victim<'_>> {
        let start = Instant::now();
        let _waiting = mark_waiting(WaitType::FreeBuffer, None);
        let mut evictions_seen = self.evictions.load(Ordering::Relaxed);
        let mut quiet_since = start;
        let mut pause = FRAME_RETRY_PAUSE_MIN;
        loop {
            std::thread::sleep(pause);
            pause = (pause * 2).min(FRAME_RETRY_PAUSE_MAX);
            if let Some(found) = self.sweep(2).transpose() {
                self.stats
                    .record_wait(WaitType::FreeBuffer, None, elapsed_ns(start));
                return found;
            }
            let evictions = self.evictions.load(Ordering::Relaxed);
            if evictions != evictions_seen {
                evictions_seen = evictions;
                quiet_since = Instant::now();
            } else if !budget::applying() && quiet_since.elapsed() >= self.budget.wait_max() {
                self.stats
                    .record_wait(WaitType::FreeBuffer, None, elapsed_ns(start));
                return Err(self.budget.exhausted(start));
            }
        }
    }

    /// Up to `sweeps` turns of the clock for an unlatched frame; `None` if all were latched.
    fn sweep(&self, sweeps: usize) -> Result<Option<Victim<'_>>> {
        let frame_count = self.frames.len();
        for _ in 0..frame_count * sweeps {
            let index = self.clock_hand.fetch_add(1, Ordering::Relaxed) % frame_count;
            let frame = &self.frames[index];
            if frame.referenced.load(Ordering::Relaxed) {
                frame.referenced.store(false, Ordering::Relaxed);
                continue;
            }
            let Some(guard) = frame.latch.try_lock_exclusive() else {
                continue;
            };
            let held = HeldFrame::new();
            let old = frame.page_id.load();
            if !old.is_none() {
                if frame.dirty.load(Ordering::Relaxed) {
                    self.write_back(frame, old)?;
                }
                // Only after the write: a later miss on `old` must read the fresh image.
                // (A frame only ever holds a page of one of the pool's files.)
                if let Some(data) = self.data(old.file()) {
                    data.table.clear(old.number());
                }
                frame.page_id.store(PageId::NONE);
            }
            self.evictions.fetch_add(1, Ordering::Relaxed);
            return Ok(Some(Victim { index, guard, held }));
        }
        Ok(None)
    }

    /// Writes a frame's page to the file (caller holds its latch, shared or exclusive).
    fn write_back(&self, frame: &Frame, page_id: PageId) -> Result<()> {
        // Stopped (the log failed too, maybe): a page may hold a change whose log record
        // was never appended, so it is never written.
        self.stop.check()?;
        let (data, number) = self.locate(page_id)?;
        if let Some(log) = self.log.get() {
            // The WAL rule: the log first, then the page.
            let page_lsn = frame.buf.page().lsn();
            if page_lsn > log.durable() {
                log.wait_durable(page_lsn)?;
            }
        }
        IO_SCRATCH.with(|scratch| {
            let mut image = scratch.borrow_mut();
            image.resize(self.page_size, 0);
            frame.buf.page().copy_to(&mut image);
            debug_assert_eq!(frame.buf.page().page_id(), page_id);
            page::seal(&mut image);
            data.file
                .write_at(&image, number * self.page_size as u64)
                .map_err(|e| {
                    let context = format!("writing page {number} of {}", data.name);
                    self.stop.stop_io(context.clone(), &e);
                    Error::io(context, e)
                })
        })?;
        frame.dirty.store(false, Ordering::Relaxed);
        self.stats.count(Counter::PagesWritten, 1);
        Ok(())
    }

    /// Writes every dirty page and makes every data file durable (fdatasync each).
    pub fn flush_all(&self) -> Result<()> {
        for frame in self.frames.iter() {
            // SeqCst pairs with `mark_dirty`: a checkpoint that publishes its redo LSN and
            // then finds a page clean here knows the next change to it sees that LSN.
            if !frame.dirty.load(Ordering::SeqCst) {
                continue;
            }
            let (_guard, _) = frame.latch.lock_shared(|| ());
            let page_id = frame.page_id.load();
            if !page_id.is_none() && frame.dirty.load(Ordering::Relaxed) {
                self.write_back(frame, page_id)?;
            }
        }
        self.stop.check()?;
        // Every file, even one no page of this flush went to: an earlier eviction may have
        // written to it, and a checkpoint needs all of them durable.
        for data in self.files.iter().chain(self.unlogged.get()) {
            data.file.sync_data().map_err(|e| {
                let context = format!("fdatasync of {}", data.name);
                self.stop.stop_io(context.clone(), &e);
                Error::io(context, e)
            })?;
        }
        Ok(())
    }

    /// True once the database stopped: a write or fdatasync of a data file (or the log)
    /// failed (fail-stop).
    pub fn has_failed(&self) -> bool {
        self.stop.is_stopped()
    }

    /// The database's fail-stop state, which the log shares.
    pub fn fail_stop(&self) -> &Arc<FailStop> {
        &self.stop
    }

    /// Reads a page image straight from its data file, verified, bypassing the pool (for
    /// the integrity check and page inspection). Use after `flush_all` to see current data.
    pub fn read_page_image(&self, page_id: PageId) -> Result<Vec<u8>> {
        let image = self.read_page_raw(page_id)?;
        page::verify(&image, page_id).map_err(|reason| self.corrupt(page_id, reason))?;
        Ok(image)
    }

    /// Reads a page image straight from its data file without verifying it (page
    /// inspection shows damaged pages too; `page::verify` says what is wrong). Past the end
    /// of the file, or in a file the database does not have, is `CorruptPage`, as for
    /// `read_page_image`.
    pub fn read_page_raw(&self, page_id: PageId) -> Result<Vec<u8>> {
        let (data, number) = self.locate(page_id)?;
        let pages = data.pages.load(Ordering::Acquire);
        if number >= pages {
            return Err(self.corrupt(
                page_id,
                format!(
                    "page number {number} is past the end of {} ({pages} pages)",
                    data.name
                ),
            ));
        }
        let mut image = vec![0u8; self.page_size];
        self.read_image(data, page_id, &mut image)?;
        Ok(image)
    }

    /// Reads page `page_id`'s bytes from `data`, its file. A file that ends inside the page
    /// was cut short (pages are written whole, and a file only grows by whole pages): that
    /// is damage, `CorruptPage`, not an I/O error.
    fn read_image(&self, data: &DataFile, page_id: PageId, image: &mut [u8]) -> Result<()> {
        debug_assert_eq!(image.len(), self.page_size);
        let number = page_id.number();
        match data.file.read_at(image, number * self.page_size as u64) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(self.corrupt(
                page_id,
                format!(
                    "{} ends inside this page: the file was cut short; restore it from a backup",
                    data.name
                ),
            )),
            Err(e) => Err(Error::io(
                format!("reading page {number} of {}", data.name),
                e,
            )),
        }
    }
}

/// A page fixed for an optimistic read: no latch is held.
pub struct OptimisticPage<'a> {
    pool: &'a BufferPool,
    frame: &'a Frame,
    page_id: PageId,
    version: u64,
}

impl<'a> OptimisticPage<'a> {
    /// The page, to read (then validate).
    pub fn page(&self) -> Page<'a> {
        self.frame.buf.page()
    }

    /// The page id.
    pub fn page_id(&self) -> PageId {
        self.page_id
    }

    /// True if nobody wrote the page (or evicted it) since it was fixed.
    pub fn validate(&self) -> bool {
        self.frame.latch.validate(self.version)
    }

    /// Turns the optimistic fix into an exclusive one, or `None` if the page changed
    /// meanwhile (restart).
    pub fn upgrade(self) -> Option<ExclusivePage<'a>> {
        let (guard, wait_ns) = self.frame.latch.upgrade(self.version, || {
            mark_waiting(WaitType::PageLatchEx, Some(self.page_id))
        });
        if wait_ns > 0 {
            self.pool
                .stats
                .record_wait(WaitType::PageLatchEx, Some(self.page_id), wait_ns);
        }
        Some(ExclusivePage {
            frame: self.frame,
            page_id: self.page_id,
            _guard: guard?,
            _held: HeldFrame::new(),
        })
    }
}

/// A frame `evict_one` emptied for a new page, still latched exclusively.
struct Victim<'a> {
    index: usize,
    guard: ExclusiveGuard<'a>,
    held: HeldFrame,
}

/// A page held with a shared latch.
pub struct SharedPage<'a> {
    frame: &'a Frame,
    page_id: PageId,
    _guard: SharedGuard<'a>,
    _held: HeldFrame,
}

impl SharedPage<'_> {
    /// The page, to read.
    pub fn page(&self) -> Page<'_> {
        self.frame.buf.page()
    }

    /// The page id.
    pub fn page_id(&self) -> PageId {
        self.page_id
    }
}

/// A page held with an exclusive latch.
pub struct ExclusivePage<'a> {
    frame: &'a Frame,
    page_id: PageId,
    _guard: ExclusiveGuard<'a>,
    _held: HeldFrame,
}

impl ExclusivePage<'_> {
    /// The page, to read and change. Call `mark_dirty` after changing it.
    pub fn page(&self) -> Page<'_> {
        self.frame.buf.page()
    }

    /// The page id.
    pub fn page_id(&self) -> PageId {
        self.page_id
    }

    /// Records that the page changes and must be written back. Call it before changing
    /// the page and before logging the change: a checkpoint relies on that order (SeqCst)
    /// to either flush the change or see its redo LSN in the change's log decision.
    pub fn mark_dirty(&self) {
        self.frame.dirty.store(true, Ordering::SeqCst);
    }

    /// End LSN of the last full image of this page logged while it sat in the pool (0: none).
    pub fn image_lsn(&self) -> u64 {
        self.frame.image_lsn.load(Ordering::Relaxed)
    }

    /// Records that a full image of this page was logged, ending at `lsn`.
    pub fn set_image_lsn(&self, lsn: u64) {
        self.frame.image_lsn.store(lsn, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{PAGE_FILE_SHIFT, parse_data_file_name};
    use crate::storage::{CrashMode, MemStorage, Storage};

    fn pool(frames: usize) -> (Arc<MemStorage>, BufferPool) {
        let mem = MemStorage::new(1);
        let file = mem.open("data.0", true).expect("open");
        let pool =
            BufferPool::open(file, "data.0", 4096, frames * 4096, Stats::new()).expect("pool");
        (mem, pool)
    }

    #[test]
    fn pages_survive_eviction_through_a_small_pool() {
        let (_mem, pool) = pool(POOL_FRAMES_MIN);
        let mut ids = Vec::new();
        for i in 0..(POOL_FRAMES_MIN as u64 * 10) {
            let page = pool.allocate(PageType::Leaf, 0).expect("allocate");
            assert!(page.page().insert_record(0, &i.to_be_bytes(), b"payload"));
            page.mark_dirty();
            ids.push((page.page_id(), i));
        }
        for (page_id, i) in ids.iter().rev() {
            let page = pool.fix_shared(*page_id).expect("fix");
            let mut key = Vec::new();
            page.page().copy_key(0, &mut key);
            assert_eq!(key, i.to_be_bytes());
        }
        let snap = pool.stats().snapshot();
        assert!(snap.counter(Counter::PagesWritten) >= 140);
        assert!(snap.counter(Counter::PagesRead) >= 140);
    }

    #[test]
    fn a_spinning_try_gives_up_on_a_held_latch_and_takes_a_released_one() {
        let (_mem, pool) = pool(POOL_FRAMES_MIN);
        let page_id = pool
            .allocate(PageType::Leaf, 0)
            .expect("allocate")
            .page_id();
        let held = pool.try_fix_exclusive(page_id).expect("fix").expect("free");
        std::thread::scope(|s| {
            let other = s.spawn(|| {
                let page = pool
                    .try_fix_exclusive_spinning(page_id, || 64)
                    .expect("fix");
                page.is_some()
            });
            assert!(
                !other.join().expect("spinner"),
                "took a latch held throughout"
            );
        });
        drop(held);
        let taken = pool.try_fix_exclusive_spinning(page_id, || 1).expect("fix");
        assert_eq!(taken.expect("free now").page_id(), page_id);
        // Released while the other thread spins: it takes the latch.
        let held = pool.try_fix_exclusive(page_id).expect("fix").expect("free");
        let taken = std::thread::scope(|s| {
            let other = s.spawn(|| {
                let page = pool
                    .try_fix_exclusive_spinning(page_id, || 1 << 26)
                    .expect("fix");
                page.map(|p| p.page_id())
            });
            std::thread::sleep(Duration::from_millis(5));
            drop(held);
            other.join().expect("spinner")
        });
        assert_eq!(taken, Some(page_id), "the spinner missed the release");
    }

    /// Holds every frame of `pool` latched (a direct user of the pool, outside the budget).
    fn latch_every_frame(pool: &BufferPool) -> Vec<ExclusivePage<'_>> {
        (0..pool.frames.len())
            .map(|_| pool.allocate(PageType::Leaf, 0).expect("allocate"))
            .collect()
    }

    #[test]
    fn latched_frames_are_never_evicted_and_a_fix_waits_for_one_to_come_free() {
        let (_mem, pool) = pool(POOL_FRAMES_MIN);
        let mut held = latch_every_frame(&pool);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                // Formerly `PoolExhausted` at once: every frame is latched.
                let page = pool
                    .allocate(PageType::Leaf, 0)
                    .expect("allocate after a wait");
                drop(page);
                Instant::now()
            });
            std::thread::sleep(Duration::from_millis(100));
            assert!(!waiter.is_finished(), "a latched frame was evicted");
            let released_at = Instant::now();
            drop(held.pop());
            assert!(waiter.join().expect("waiter") >= released_at);
        });
        let waits = pool.stats().snapshot().wait(WaitType::FreeBuffer);
        assert_eq!(waits.count, 1, "{waits:?}");
        assert!(waits.wait_ns >= 90_000_000, "{waits:?}");
    }

    #[test]
    fn exhaustion_is_a_clear_error_only_after_the_wait_bound() {
        let (_mem, pool) = pool(POOL_FRAMES_MIN);
        pool.budget.set_wait_max(Duration::from_millis(200));
        let held = latch_every_frame(&pool);
        let start = Instant::now();
        match pool.allocate(PageType::Leaf, 0) {
            Err(error @ Error::PoolExhausted { frames, waited_ms }) => {
                assert_eq!(frames, POOL_FRAMES_MIN);
                assert!(waited_ms >= 200, "{error}");
                let message = error.to_string();
                assert!(message.contains("--pool-mib"), "{message}");
                assert!(message.contains("fewer concurrent sessions"), "{message}");
            }
            other => panic!(
                "expected PoolExhausted, got {:?}",
                other.map(|p| p.page_id())
            ),
        }
        assert!(start.elapsed() >= Duration::from_millis(200));
        drop(held);
        assert!(pool.allocate(PageType::Leaf, 0).is_ok());
    }

    #[test]
    fn an_applier_waits_past_the_bound_and_never_gets_pool_exhausted() {
        let (_mem, pool) = pool(POOL_FRAMES_MIN);
        let pool = Arc::new(pool);
        pool.budget.set_wait_max(Duration::from_millis(50));
        let mut held = latch_every_frame(&pool);
        std::thread::scope(|s| {
            let applier = s.spawn(|| {
                let claim = FrameClaim::new(Arc::clone(&pool));
                let _op = claim.enter_apply();
                pool.allocate(PageType::Leaf, 0).map(|p| p.page_id())
            });
            // Six times the bound with no frame released anywhere.
            std::thread::sleep(Duration::from_millis(300));
            assert!(!applier.is_finished(), "the applier gave up");
            drop(held.pop());
            applier
                .join()
                .expect("applier")
                .expect("the applier got its frame");
        });
    }

    /// Eight sessions each latch two pages, pause, then need a third: sixteen frames could
    /// hold the first two of every one of them, and then nobody would get a third (a
    /// deadlock: appliers never give up). Admission lets only as many in at once as the
    /// frames can finish, so all complete.
    #[test]
    fn operations_that_hold_frames_and_need_more_are_admitted_so_that_all_finish() {
        const THREADS: usize = 8;
        let (_mem, pool) = pool(POOL_FRAMES_MIN);
        let pool = Arc::new(pool);
        let (done, finished) = std::sync::mpsc::channel();
        let start = Arc::new(std::sync::Barrier::new(THREADS));
        // Not scoped: if they deadlock, the test fails instead of hanging.
        for _ in 0..THREADS {
            let (pool, done, start) = (Arc::clone(&pool), done.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                let claim = FrameClaim::new(Arc::clone(&pool));
                start.wait();
                for _ in 0..3 {
                    let _op = claim.enter_apply();
                    let first = pool.allocate(PageType::Leaf, 0).expect("allocate");
                    let second = pool.allocate(PageType::Leaf, 0).expect("allocate");
                    std::thread::sleep(Duration::from_millis(20));
                    let third = pool.allocate(PageType::Leaf, 0).expect("allocate");
                    drop((third, second, first));
                }
                done.send(()).expect("send");
            });
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        for n in 0..THREADS {
            let left = deadline.saturating_duration_since(Instant::now());
            if finished.recv_timeout(left).is_err() {
                panic!("deadlock: {n} of {THREADS} sessions finished");
            }
        }
    }

    /// Writes take a while, as on a real disk: a thread evicting a dirty page holds frames
    /// latched meanwhile, so many threads hold many frames at once.
    #[derive(Debug)]
    struct SlowWrites(Arc<dyn StorageFile>);

    impl StorageFile for SlowWrites {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.0.read_at(buf, offset)
        }
        fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
            std::thread::sleep(Duration::from_millis(1));
            self.0.write_at(buf, offset)
        }
        fn sync_data(&self) -> std::io::Result<()> {
            self.0.sync_data()
        }
        fn len(&self) -> std::io::Result<u64> {
            self.0.len()
        }
        fn set_len(&self, len: u64) -> std::io::Result<()> {
            self.0.set_len(len)
        }
    }

    /// 32 threads insert random keys into four B+trees through a 16-frame pool whose writes
    /// are slow, each insert admitted like a session's apply. Without admission control,
    /// threads holding split pages wait for frames other such threads hold, and the pool
    /// runs out (`PoolExhausted`) or deadlocks.
    #[test]
    fn thirty_two_threads_insert_through_a_sixteen_frame_pool() {
        use crate::access::Inserted;
        use crate::access::btree::BTree;
        const THREADS: u64 = 32;
        const ROWS: u64 = 150;
        let mem = MemStorage::new(12);
        let file: Arc<dyn StorageFile> =
            Arc::new(SlowWrites(mem.open("data.0", true).expect("open")));
        let pool = Arc::new(
            BufferPool::open(file, "data.0", PAGE, POOL_FRAMES_MIN * PAGE, Stats::new())
                .expect("pool"),
        );
        let trees: Vec<BTree> = (0..4)
            .map(|_| BTree::create(Arc::clone(&pool), Placement::Spread).expect("tree"))
            .collect();
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (pool, trees) = (&pool, &trees);
                s.spawn(move || {
                    let claim = FrameClaim::new(Arc::clone(pool));
                    for i in 0..ROWS {
                        let id = (t * ROWS + i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                        let tree = &trees[(t % 4) as usize];
                        let _op = claim.enter_apply();
                        let inserted = tree.insert(&id.to_be_bytes(), &[t as u8; 200]);
                        assert_eq!(inserted.expect("insert"), Inserted::Yes);
                    }
                });
            }
        });
        let rows: u64 = trees
            .iter()
            .map(|tree| tree.verify().expect("verify").rows)
            .sum();
        assert_eq!(rows, THREADS * ROWS);
        let snap = pool.stats().snapshot();
        assert!(snap.counter(Counter::PageSplits) > 50);
        assert!(snap.wait(WaitType::FreeBuffer).count > 0, "nobody waited");
    }

    #[test]
    fn a_corrupt_page_on_disk_is_a_clear_error() {
        let (mem, pool) = pool(POOL_FRAMES_MIN);
        let page_id = {
            let page = pool.allocate(PageType::Leaf, 0).expect("allocate");
            page.mark_dirty();
            page.page_id()
        };
        pool.flush_all().expect("flush");
        drop(pool);
        let file = mem.open("data.0", false).expect("open");
        let mut byte = [0u8; 1];
        let at = page_id.number() * 4096 + 100;
        file.read_at(&mut byte, at).expect("read");
        file.write_at(&[byte[0] ^ 1], at).expect("write");
        let pool = BufferPool::open(file, "data.0", 4096, 16 * 4096, Stats::new()).expect("reopen");
        match pool.fix_shared(page_id) {
            Err(Error::CorruptPage {
                page_id: p, reason, ..
            }) => {
                assert_eq!(p, page_id);
                assert!(reason.contains("checksum"), "{reason}");
            }
            other => panic!("expected CorruptPage, got {:?}", other.map(|p| p.page_id())),
        }
    }

    #[test]
    fn a_file_that_is_not_a_data_file_is_refused() {
        let mem = MemStorage::new(2);
        let file = mem.open("junk", true).expect("open");
        file.write_at(&[7u8; 8192], 0).expect("write");
        let err = BufferPool::open(file, "junk", 4096, 16 * 4096, Stats::new())
            .expect_err("accepted junk");
        assert!(matches!(err, Error::NotADatabase { .. }), "{err}");
    }

    #[test]
    fn concurrent_misses_on_one_page_load_it_once() {
        let (_mem, pool) = pool(POOL_FRAMES_MIN * 2);
        let ids: Vec<PageId> = (0..POOL_FRAMES_MIN * 4)
            .map(|_| {
                let p = pool.allocate(PageType::Leaf, 0).expect("allocate");
                p.mark_dirty();
                p.page_id()
            })
            .collect();
        std::thread::scope(|s| {
            for t in 0..8 {
                let (pool, ids) = (&pool, &ids);
                s.spawn(move || {
                    for round in 0..200 {
                        let page_id = ids[(t * 7 + round * 13) % ids.len()];
                        if round % 3 == 0 {
                            let p = pool.fix_exclusive(page_id).expect("fix");
                            assert_eq!(p.page().page_id(), page_id);
                        } else {
                            let p = pool.fix_shared(page_id).expect("fix");
                            assert_eq!(p.page().page_id(), page_id);
                        }
                    }
                });
            }
        });
        // No page may sit in two frames.
        let mut seen = std::collections::HashSet::new();
        for frame in pool.frames.iter() {
            let id = frame.page_id.load();
            if !id.is_none() {
                assert!(seen.insert(id), "page {id} in two frames");
            }
        }
    }
    const PAGE: usize = 4096;

    fn pool_in(mem: &MemStorage, files: u32, frames: usize) -> Result<BufferPool> {
        BufferPool::open_in(
            mem,
            Path::new("db"),
            PAGE,
            frames * PAGE,
            files,
            Stats::new(),
        )
    }

    /// Allocates `count` leaves, each holding one record whose key is its own page id.
    fn fill(pool: &BufferPool, count: usize) -> Vec<PageId> {
        (0..count)
            .map(|_| {
                let page = pool.allocate(PageType::Leaf, 0).expect("allocate");
                let id = page.page_id();
                assert!(
                    page.page()
                        .insert_record(0, &id.to_raw().to_be_bytes(), b"row")
                );
                page.mark_dirty();
                id
            })
            .collect()
    }

    fn key_of(pool: &BufferPool, page_id: PageId) -> PageId {
        let page = pool.fix_shared(page_id).expect("fix");
        assert_eq!(page.page().page_id(), page_id);
        let mut key = Vec::new();
        page.page().copy_key(0, &mut key);
        PageId::from_raw(u64::from_be_bytes(key.try_into().expect("8-byte key")))
    }

    #[test]
    fn page_table_chunks_tile_every_page_number_once() {
        let first = 1u64 << TABLE_FIRST_CHUNK_BITS;
        assert_eq!(PageTable::split(0), Some((0, 0)));
        assert_eq!(PageTable::split(first - 1), Some((0, first as usize - 1)));
        assert_eq!(PageTable::split(first), Some((1, 0)));
        assert_eq!(
            PageTable::split(3 * first - 1),
            Some((1, 2 * first as usize - 1))
        );
        assert_eq!(PageTable::split(3 * first), Some((2, 0)));
        assert_eq!(PageTable::split(FILE_PAGES_MAX), None);
        let (chunk, slot) = PageTable::split(FILE_PAGES_MAX - 1).expect("last page");
        assert_eq!(chunk, TABLE_CHUNKS - 1);
        assert!(slot < 1 << (TABLE_FIRST_CHUNK_BITS + chunk as u32));
        // Consecutive numbers: the next slot of the same chunk, or slot 0 of the next chunk.
        let mut last = PageTable::split(0).expect("first");
        for number in 1..40 * first {
            let next = PageTable::split(number).expect("in range");
            assert!(
                next == (last.0, last.1 + 1) || next == (last.0 + 1, 0),
                "{number}: {last:?} then {next:?}"
            );
            last = next;
        }
        let table = PageTable::new();
        // The last page's chunk is cut at FILE_PAGES_MAX (it would be 2^30 entries).
        for number in [0, first, 5 * first + 3, FILE_PAGES_MAX - 1] {
            assert_eq!(table.get(number), None);
            table.set(number, 7);
            assert_eq!(table.get(number), Some(7));
            table.clear(number);
            assert_eq!(table.get(number), None);
        }
        let last = table.chunks[TABLE_CHUNKS - 1].get().expect("last chunk");
        assert_eq!(last.len(), first as usize);
    }

    #[test]
    fn page_ids_carry_the_file_in_their_high_bits() {
        assert_eq!(PageId::new(0, 7).to_raw(), 7);
        let id = PageId::new(3, 5);
        assert_eq!(id.to_raw(), (3 << PAGE_FILE_SHIFT) | 5);
        assert_eq!((id.file(), id.number()), (3, 5));
        assert_eq!(parse_data_file_name("data.12"), Some(12));
        for bad in ["data.", "data.+1", "data.x", "wal.0", "data.0.tmp"] {
            assert_eq!(parse_data_file_name(bad), None, "{bad}");
        }
        assert!(validate_data_files(0).is_err());
        assert!(validate_data_files(DATA_FILES_MAX + 1).is_err());
        assert!(validate_data_files(DATA_FILES_MAX).is_ok());
    }

    #[test]
    fn new_pages_fill_the_files_proportionally() {
        let mem = MemStorage::new(3);
        let pool = pool_in(&mem, 4, 64).expect("pool");
        assert_eq!(pool.file_count(), 4);
        let ids = fill(&pool, 40);
        let mut per_file = [0u64; 4];
        for id in &ids {
            per_file[id.file() as usize] += 1;
        }
        assert_eq!(per_file, [10; 4], "{ids:?}");
        // Equal files: each allocation goes to the next file in turn.
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(id.file() as usize, i % 4);
            assert_eq!(id.number(), 1 + i as u64 / 4);
        }
        let info = pool.info();
        assert_eq!(info.file_pages_each, vec![11; 4]);
        assert_eq!(info.file_pages, 44);
        pool.flush_all().expect("flush");
        for file in 0..4 {
            let handle = mem.open(&data_file_name(file), false).expect("open");
            assert_eq!(handle.len().expect("len"), 11 * PAGE as u64, "data.{file}");
        }
        // A file behind the others catches up first.
        drop(pool.allocate_in(2, PageType::Leaf, 0).expect("allocate_in"));
        drop(pool.allocate_in(2, PageType::Leaf, 0).expect("allocate_in"));
        let next: Vec<u32> = fill(&pool, 3).iter().map(|id| id.file()).collect();
        assert_eq!(next, vec![0, 1, 3]);
    }

    #[test]
    fn allocate_in_places_pages_in_the_named_file() {
        let mem = MemStorage::new(4);
        let pool = pool_in(&mem, 3, 32).expect("pool");
        let ids: Vec<PageId> = (0..5)
            .map(|_| {
                let page = pool.allocate_in(2, PageType::Leaf, 0).expect("allocate_in");
                page.mark_dirty();
                page.page_id()
            })
            .collect();
        assert_eq!(ids, (1..=5).map(|n| PageId::new(2, n)).collect::<Vec<_>>());
        assert_eq!(pool.info().file_pages_each, vec![1, 1, 6]);
        pool.flush_all().expect("flush");
        let image = pool.read_page_image(PageId::new(2, 5)).expect("read");
        let buf = PageBuf::new(PAGE);
        buf.page().copy_from(&image);
        assert_eq!(buf.page().page_id(), PageId::new(2, 5));
        match pool.allocate_in(3, PageType::Leaf, 0) {
            Err(Error::InvalidOption(message)) => {
                assert!(message.contains("no data file 3"), "{message}")
            }
            other => panic!(
                "expected InvalidOption, got {:?}",
                other.map(|p| p.page_id())
            ),
        }
    }

    #[test]
    fn pages_of_every_file_survive_eviction_and_reload() {
        let mem = MemStorage::new(5);
        let pool = pool_in(&mem, 3, POOL_FRAMES_MIN).expect("pool");
        let ids = fill(&pool, POOL_FRAMES_MIN * 10);
        for id in ids.iter().rev() {
            assert_eq!(key_of(&pool, *id), *id);
        }
        let snap = pool.stats().snapshot();
        assert!(snap.counter(Counter::PagesWritten) >= 140);
        assert!(snap.counter(Counter::PagesRead) >= 140);
        // The same page number in each file is a different page.
        let same_number: Vec<PageId> = (0..3).map(|f| PageId::new(f, 7)).collect();
        for id in same_number {
            assert_eq!(key_of(&pool, id), id);
        }
    }

    #[test]
    fn flush_all_makes_every_file_durable_and_a_reopen_keeps_the_count() {
        let mem = MemStorage::new(6);
        let ids = {
            let pool = pool_in(&mem, 3, POOL_FRAMES_MIN * 4).expect("pool");
            let ids = fill(&pool, 30);
            pool.flush_all().expect("flush");
            ids
        };
        mem.sync_dir().expect("sync dir");
        // Power loss: only what flush_all made durable is left.
        mem.crash(CrashMode::DropAll);
        // The count for a new database is ignored: data.0 records 3.
        let pool = pool_in(&mem, 1, POOL_FRAMES_MIN).expect("reopen");
        assert_eq!(pool.file_count(), 3);
        assert_eq!(pool.info().file_pages_each, vec![11; 3]);
        for id in &ids {
            assert_eq!(key_of(&pool, *id), *id);
        }
        drop(pool);
        // And a one-file database stays one file whatever is asked.
        let single = MemStorage::new(7);
        pool_in(&single, 1, POOL_FRAMES_MIN)
            .expect("pool")
            .flush_all()
            .expect("flush");
        let pool = pool_in(&single, 5, POOL_FRAMES_MIN).expect("reopen");
        assert_eq!(pool.file_count(), 1);
    }

    #[test]
    fn a_failed_fdatasync_of_any_file_is_fail_stop() {
        let mem = MemStorage::new(8);
        let pool = pool_in(&mem, 3, POOL_FRAMES_MIN * 4).expect("pool");
        fill(&pool, 9);
        // data.0 and data.1 sync; data.2's fdatasync fails.
        mem.fail_sync_after(Some(2));
        let err = pool.flush_all().expect_err("flush succeeded");
        assert!(err.to_string().contains("data.2"), "{err}");
        assert!(pool.has_failed());
        mem.fail_sync_after(None);
        assert!(pool.flush_all().is_err(), "a later flush claimed success");
    }

    fn expect_not_a_database(result: Result<BufferPool>, needles: &[&str]) {
        match result {
            Err(Error::NotADatabase { reason, .. }) => {
                for needle in needles {
                    assert!(reason.contains(needle), "{reason:?} lacks {needle:?}");
                }
            }
            Err(other) => panic!("expected NotADatabase, got {other}"),
            Ok(_) => panic!("expected NotADatabase, the pool opened"),
        }
    }

    fn three_files() -> Arc<MemStorage> {
        let mem = MemStorage::new(9);
        let pool = pool_in(&mem, 3, POOL_FRAMES_MIN).expect("pool");
        fill(&pool, 6);
        pool.flush_all().expect("flush");
        mem
    }

    #[test]
    fn a_missing_data_file_is_a_clear_error() {
        let mem = three_files();
        mem.remove("data.2").expect("remove");
        expect_not_a_database(
            pool_in(&mem, 3, POOL_FRAMES_MIN),
            &["data.2 is missing", "3"],
        );
    }

    #[test]
    fn a_header_naming_another_file_is_refused() {
        let mem = three_files();
        // Swap data.1 and data.2: each header now names the other file.
        mem.rename("data.1", "swap").expect("rename");
        mem.rename("data.2", "data.1").expect("rename");
        mem.rename("swap", "data.2").expect("rename");
        expect_not_a_database(
            pool_in(&mem, 3, POOL_FRAMES_MIN),
            &["data.1", "data file 2"],
        );
    }

    #[test]
    fn a_data_file_of_another_database_is_refused() {
        let mem = three_files();
        // data.2 of a four-file database in place of this one's data.2.
        let other = MemStorage::new(10);
        let other_pool = pool_in(&other, 4, POOL_FRAMES_MIN).expect("pool");
        other_pool.flush_all().expect("flush");
        let image = other_pool
            .read_page_raw(PageId::new(2, 0))
            .expect("header of the other data.2");
        mem.open("data.2", false)
            .expect("open")
            .write_at(&image, 0)
            .expect("write");
        expect_not_a_database(
            pool_in(&mem, 3, POOL_FRAMES_MIN),
            &["data.2", "4 data files", "3 were expected"],
        );
    }

    #[test]
    fn a_page_of_a_file_the_pool_lacks_is_corrupt_page_naming_it() {
        let mem = three_files();
        let pool = pool_in(&mem, 3, POOL_FRAMES_MIN).expect("pool");
        for (page_id, file) in [
            (PageId::new(5, 1), "data.5"),
            (PageId::new(1, 99), "data.1"),
        ] {
            for result in [
                pool.fix_shared(page_id).map(|_| ()),
                pool.read_page_image(page_id).map(|_| ()),
                pool.read_page_raw(page_id).map(|_| ()),
            ] {
                match result {
                    Err(Error::CorruptPage {
                        file: f,
                        page_id: p,
                        ..
                    }) => {
                        assert_eq!((f.as_str(), p), (file, page_id));
                    }
                    other => panic!("expected CorruptPage, got {other:?}"),
                }
            }
        }
        assert!(matches!(
            pool.install_image(PageId::new(3, 1), &vec![0u8; PAGE], 1),
            Err(Error::CorruptPage { .. })
        ));
    }

    #[test]
    fn a_corrupt_page_in_a_later_file_names_that_file() {
        let mem = three_files();
        let target = PageId::new(2, 1);
        let file = mem.open("data.2", false).expect("open");
        let at = target.number() * PAGE as u64 + 100;
        let mut byte = [0u8; 1];
        file.read_at(&mut byte, at).expect("read");
        file.write_at(&[byte[0] ^ 1], at).expect("write");
        let pool = pool_in(&mem, 3, POOL_FRAMES_MIN).expect("pool");
        for result in [
            pool.fix_shared(target).map(|_| ()),
            pool.read_page_image(target).map(|_| ()),
        ] {
            match result {
                Err(Error::CorruptPage {
                    file,
                    page_id,
                    reason,
                }) => {
                    assert_eq!((file.as_str(), page_id), ("data.2", target));
                    assert!(reason.contains("checksum"), "{reason}");
                }
                other => panic!("expected CorruptPage, got {other:?}"),
            }
        }
    }

    #[test]
    fn install_image_extends_the_right_file() {
        let mem = three_files();
        let pool = pool_in(&mem, 3, POOL_FRAMES_MIN).expect("pool");
        let target = PageId::new(1, 9);
        let buf = PageBuf::new(PAGE);
        buf.page().init(target, PageType::Leaf, 0);
        assert!(
            buf.page()
                .insert_record(0, &target.to_raw().to_be_bytes(), b"row")
        );
        let mut image = vec![0u8; PAGE];
        buf.page().copy_to(&mut image);
        pool.install_image(target, &image, 42).expect("install");
        assert_eq!(pool.info().file_pages_each, vec![3, 10, 3]);
        pool.flush_all().expect("flush");
        let read = pool.read_page_image(target).expect("read");
        assert_eq!(&read[8..16], &target.to_raw().to_le_bytes());
        assert_eq!(key_of(&pool, target), target);
    }

    /// data.0's header page as format `version` writes it. Before key heads (format 5) the
    /// slots were 4 bytes, so the 4 bytes after slot 0 (a head now) are zero. Version 3
    /// had only the page size after the version; version 4 (several data files) the file
    /// count and number too.
    fn header_image(version: u32, file_fields: bool) -> Vec<u8> {
        let buf = PageBuf::new(PAGE);
        buf.page().init(PageId::new(0, 0), PageType::FileHeader, 0);
        let mut record = version.to_le_bytes().to_vec();
        record.extend_from_slice(&(PAGE as u32).to_le_bytes());
        if file_fields {
            record.extend_from_slice(&2u32.to_le_bytes());
            record.extend_from_slice(&0u32.to_le_bytes());
        }
        assert!(buf.page().insert_record(0, DATA_FILE_MAGIC, &record));
        let mut image = vec![0u8; PAGE];
        buf.page().copy_to(&mut image);
        if version < KEY_HEADS_FORMAT_VERSION {
            image[page::HEADER_BYTES + 4..page::HEADER_BYTES + 8].fill(0);
        }
        page::seal(&mut image);
        image
    }

    #[test]
    fn a_data_file_of_an_older_format_is_refused_as_too_old() {
        use crate::format::{DATA_FILES_FORMAT_VERSION, FORMAT_VERSION};
        for (version, file_fields) in [(FORMAT_VERSION, false), (DATA_FILES_FORMAT_VERSION, true)] {
            let mem = MemStorage::new(11);
            mem.open("data.0", true)
                .expect("create")
                .write_at(&header_image(version, file_fields), 0)
                .expect("write");
            let Err(error) = pool_in(&mem, 4, POOL_FRAMES_MIN) else {
                panic!("format {version} opened");
            };
            assert!(
                matches!(error, Error::FormatTooOld { found, required: KEY_HEADS_FORMAT_VERSION } if found == version),
                "{error}"
            );
            assert!(error.to_string().contains("4-byte slots"), "{error}");
        }
    }

    /// A version byte damaged on disk is damage (the checksum says so), not an old format.
    #[test]
    fn a_damaged_version_is_a_corrupt_header_not_an_old_format() {
        let mem = MemStorage::new(12);
        let mut image = header_image(KEY_HEADS_FORMAT_VERSION, true);
        let (record, key_len) = (usize::from(u16::from_le_bytes([image[64], image[65]])), 8);
        assert_eq!(image[record], key_len as u8);
        image[record + 1 + key_len] = 1;
        mem.open("data.0", true)
            .expect("create")
            .write_at(&image, 0)
            .expect("write");
        let Err(error) = pool_in(&mem, 4, POOL_FRAMES_MIN) else {
            panic!("a damaged header opened");
        };
        assert!(matches!(error, Error::CorruptPage { .. }), "{error}");
    }

    #[test]
    fn a_multi_file_header_records_its_files_in_the_key_heads_format() {
        let mem = three_files();
        let header = pool_in(&mem, 3, POOL_FRAMES_MIN)
            .expect("pool")
            .read_page_image(PageId::new(0, 0))
            .expect("header");
        let decoded = FileHeader::decode(&header).expect("a header");
        assert_eq!(
            decoded,
            FileHeader {
                format_version: KEY_HEADS_FORMAT_VERSION,
                page_size: PAGE as u32,
                file_count: 3,
                file_number: 0,
            }
        );
        assert_eq!(
            recorded_header(&*mem, PAGE).and_then(|h| h.data_files()),
            Some(3)
        );
    }
}
