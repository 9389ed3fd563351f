//! The buffer pool: a fixed set of page frames over one data file, a page table, clock
//! eviction and dirty write-back.
//!
//! * **Bounded memory**: `pool_bytes / page_size` frames, allocated once; the page table
//!   grows by 256 KiB chunks of 4-byte entries as the file grows (0.05 % of the file).
//! * **Lookups never lock**: the page table is a radix array of atomics, so 64 sessions
//!   descending through the same root page read it without touching a shared lock word.
//!   Only a miss takes a (sharded) mutex, to load each page once.
//! * **Frames are re-checked after latching**: a frame can be evicted between the lookup
//!   and the latch, so every fix compares the frame's page id once it holds the latch
//!   (or validates its optimistic version) and retries if the frame moved on.
//! * **Eviction** takes a victim only with a non-blocking exclusive try-latch, so a page
//!   anyone holds is never evicted, and eviction never waits while holding another latch.
//!
//! Nothing here knows what is on a page except the header and the file-header page.

use crate::error::{Error, Result};
use crate::io::StorageFile;
use crate::latch::{ExclusiveGuard, HybridLatch, SharedGuard};
use crate::page::{self, NO_PAGE, Page, PageBuf, PageType};
use crate::stats::{Counter, Stats, WaitType};
use crate::wal::Wal;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The fewest frames a pool may have.
pub const POOL_FRAMES_MIN: usize = 16;
/// The default pool size.
pub const POOL_BYTES_DEFAULT: usize = 256 << 20;
/// The on-disk format version this binary writes and reads.
pub const FORMAT_VERSION: u32 = 3;
/// Magic bytes at the start of a data file's header record.
pub const DATA_FILE_MAGIC: &[u8; 8] = b"HOTPAGE\0";

const TABLE_CHUNK_BITS: u32 = 16;
const TABLE_CHUNK_ENTRIES: usize = 1 << TABLE_CHUNK_BITS;
const TABLE_CHUNKS_MAX: usize = 1 << 14;
/// The most pages one data file may hold (2^30: 8 TiB at 8 KiB pages).
pub const FILE_PAGES_MAX: u64 = (TABLE_CHUNK_ENTRIES * TABLE_CHUNKS_MAX) as u64;
const MISS_LOCK_SHARDS: usize = 64;
/// A page id is `file << PAGE_FILE_SHIFT | page number in that file`, so the ids of data
/// file 0 are plain page numbers.
pub const PAGE_FILE_SHIFT: u32 = 40;

/// The data file (0-based) that holds `page_id`.
pub fn file_of(page_id: u64) -> u32 {
    (page_id >> PAGE_FILE_SHIFT) as u32
}

/// page number → frame index + 1 (0: not in the pool).
struct PageTable {
    chunks: Box<[OnceLock<Box<[AtomicU32]>>]>,
}

impl PageTable {
    fn new() -> PageTable {
        PageTable {
            chunks: (0..TABLE_CHUNKS_MAX).map(|_| OnceLock::new()).collect(),
        }
    }

    fn split(page_id: u64) -> Option<(usize, usize)> {
        (page_id < FILE_PAGES_MAX).then_some((
            (page_id >> TABLE_CHUNK_BITS) as usize,
            (page_id as usize) & (TABLE_CHUNK_ENTRIES - 1),
        ))
    }

    fn get(&self, page_id: u64) -> Option<usize> {
        let (chunk, slot) = Self::split(page_id)?;
        let entry = self.chunks[chunk].get()?[slot].load(Ordering::Acquire);
        (entry != 0).then(|| entry as usize - 1)
    }

    fn set(&self, page_id: u64, frame: usize) {
        if let Some((chunk, slot)) = Self::split(page_id) {
            let entries = self.chunks[chunk].get_or_init(|| {
                (0..TABLE_CHUNK_ENTRIES)
                    .map(|_| AtomicU32::new(0))
                    .collect()
            });
            entries[slot].store(frame as u32 + 1, Ordering::Release);
        }
    }

    fn clear(&self, page_id: u64) {
        if let Some((chunk, slot)) = Self::split(page_id)
            && let Some(entries) = self.chunks[chunk].get()
        {
            entries[slot].store(0, Ordering::Release);
        }
    }
}

struct Frame {
    latch: HybridLatch,
    // NO_PAGE when empty. Changes only under the exclusive latch.
    page_id: AtomicU64,
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

/// Buffer-pool figures for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolInfo {
    /// Frames in the pool.
    pub frames: usize,
    /// Page size in bytes.
    pub page_size: usize,
    /// Pages in the data file, including the header page.
    pub file_pages: u64,
}

/// The buffer pool of one data file.
pub struct BufferPool {
    page_size: usize,
    frames: Box<[Frame]>,
    table: PageTable,
    file: Arc<dyn StorageFile>,
    file_name: String,
    // Pages in the file (allocated, maybe not yet written): the next new page's number.
    file_pages: AtomicU64,
    clock_hand: AtomicUsize,
    miss_locks: Box<[Mutex<()>]>,
    stats: Arc<Stats>,
    // The write-ahead log, once attached: no page is written before the log is durable up
    // to the page's LSN.
    log: OnceLock<Arc<Wal>>,
    // Set for good by a failed write or fdatasync of the data file: after one, the kernel may
    // have dropped pages it reports clean, so nothing may claim the file is up to date again
    // (no checkpoint may move past the failure). Fail-stop; reopening recovers from the log.
    failed: AtomicBool,
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("file", &self.file_name)
            .field("frames", &self.frames.len())
            .field("page_size", &self.page_size)
            .finish()
    }
}

fn elapsed_ns(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

impl BufferPool {
    /// Opens a data file through the pool, formatting it (header page 0) when empty.
    pub fn open(
        file: Arc<dyn StorageFile>,
        file_name: &str,
        page_size: usize,
        pool_bytes: usize,
        stats: Arc<Stats>,
    ) -> Result<BufferPool> {
        page::validate_page_size(page_size).map_err(Error::InvalidOption)?;
        let frame_count = pool_bytes / page_size;
        if frame_count < POOL_FRAMES_MIN {
            return Err(Error::InvalidOption(format!(
                "pool of {pool_bytes} bytes holds {frame_count} pages of {page_size} bytes; at least {POOL_FRAMES_MIN} are needed"
            )));
        }
        let frames: Box<[Frame]> = (0..frame_count)
            .map(|_| Frame {
                latch: HybridLatch::new(),
                page_id: AtomicU64::new(NO_PAGE),
                dirty: AtomicBool::new(false),
                referenced: AtomicBool::new(false),
                image_lsn: AtomicU64::new(0),
                buf: PageBuf::new(page_size),
            })
            .collect();
        let len_bytes = file
            .len()
            .map_err(|e| Error::io(format!("reading the length of {file_name}"), e))?;
        let pool = BufferPool {
            page_size,
            frames,
            table: PageTable::new(),
            file,
            file_name: file_name.to_string(),
            file_pages: AtomicU64::new(len_bytes.div_ceil(page_size as u64)),
            clock_hand: AtomicUsize::new(0),
            miss_locks: (0..MISS_LOCK_SHARDS).map(|_| Mutex::new(())).collect(),
            stats,
            log: OnceLock::new(),
            failed: AtomicBool::new(false),
        };
        if len_bytes == 0 {
            pool.format_header()?;
        } else {
            pool.check_header()?;
        }
        Ok(pool)
    }

    fn format_header(&self) -> Result<()> {
        let header = self.allocate(PageType::FileHeader, 0)?;
        debug_assert_eq!(header.page_id(), 0);
        let mut record = Vec::with_capacity(16);
        record.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        record.extend_from_slice(&(self.page_size as u32).to_le_bytes());
        if !header.page().insert_record(0, DATA_FILE_MAGIC, &record) {
            return Err(Error::InvalidOption(
                "page too small for the file header".into(),
            ));
        }
        header.mark_dirty();
        Ok(())
    }

    fn check_header(&self) -> Result<()> {
        let not_db = |reason: String| Error::NotADatabase {
            path: self.file_name.clone().into(),
            reason,
        };
        let mut image = vec![0u8; self.page_size];
        self.file
            .read_at(&mut image, 0)
            .map_err(|e| not_db(format!("cannot read its header page: {e}")))?;
        let buf = PageBuf::new(self.page_size);
        buf.page().copy_from(&image);
        let header = buf.page();
        let mut key = Vec::new();
        let mut payload = Vec::new();
        if header.page_type() == Some(PageType::FileHeader) && header.slot_count() == 1 {
            header.copy_key(0, &mut key);
            header.copy_payload(0, &mut payload);
        }
        if key != DATA_FILE_MAGIC || payload.len() < 8 {
            return Err(not_db("no hotpage header in page 0".into()));
        }
        let version = u32::from_le_bytes([payload[0], payload[1], payload[2], payload[3]]);
        if version > FORMAT_VERSION {
            return Err(Error::FormatTooNew {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let stored_page_size =
            u32::from_le_bytes([payload[4], payload[5], payload[6], payload[7]]) as usize;
        if stored_page_size != self.page_size {
            return Err(not_db(format!(
                "page size {stored_page_size} in the file, {} expected",
                self.page_size
            )));
        }
        page::verify(&image, 0).map_err(|reason| self.corrupt(0, reason))
    }

    fn corrupt(&self, page_id: u64, reason: String) -> Error {
        Error::CorruptPage {
            file: self.file_name.clone(),
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
        PoolInfo {
            frames: self.frames.len(),
            page_size: self.page_size,
            file_pages: self.file_pages.load(Ordering::Acquire),
        }
    }

    fn frame_index(&self, page_id: u64) -> Result<usize> {
        loop {
            if let Some(index) = self.table.get(page_id) {
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
    pub fn install_image(&self, page_id: u64, image: &[u8], lsn: u64) -> Result<()> {
        if image.len() != self.page_size || page_id >= FILE_PAGES_MAX {
            return Err(self.corrupt(page_id, "log image of the wrong size".into()));
        }
        self.file_pages.fetch_max(page_id + 1, Ordering::AcqRel);
        if let Some(index) = self.table.get(page_id) {
            let frame = &self.frames[index];
            let (_guard, _) = frame.latch.lock_exclusive();
            if frame.page_id.load(Ordering::Relaxed) == page_id {
                frame.dirty.store(true, Ordering::SeqCst);
                frame.buf.page().copy_from(image);
                frame.buf.page().set_lsn(lsn);
                return Ok(());
            }
        }
        let _miss = self.miss_locks[(page_id as usize) % MISS_LOCK_SHARDS].lock();
        if self.table.get(page_id).is_some() {
            drop(_miss);
            return self.install_image(page_id, image, lsn);
        }
        let (index, _guard) = self.evict_one()?;
        let frame = &self.frames[index];
        frame.buf.page().copy_from(image);
        frame.buf.page().set_lsn(lsn);
        frame.page_id.store(page_id, Ordering::Relaxed);
        frame.dirty.store(true, Ordering::SeqCst);
        frame.image_lsn.store(0, Ordering::Relaxed);
        frame.touch();
        self.table.set(page_id, index);
        Ok(())
    }

    /// Fixes a page for an optimistic read. Validate before trusting anything read.
    pub fn fix_optimistic(&self, page_id: u64) -> Result<OptimisticPage<'_>> {
        loop {
            let frame = &self.frames[self.frame_index(page_id)?];
            let (version, wait_ns) = frame.latch.optimistic_or_wait();
            if wait_ns > 0 {
                self.stats
                    .record_wait(WaitType::PageLatchSh, Some(page_id), wait_ns);
            }
            if frame.page_id.load(Ordering::Relaxed) == page_id && frame.latch.validate(version) {
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
    pub fn fix_shared(&self, page_id: u64) -> Result<SharedPage<'_>> {
        loop {
            let frame = &self.frames[self.frame_index(page_id)?];
            let (guard, wait_ns) = frame.latch.lock_shared();
            if wait_ns > 0 {
                self.stats
                    .record_wait(WaitType::PageLatchSh, Some(page_id), wait_ns);
            }
            if frame.page_id.load(Ordering::Relaxed) == page_id {
                frame.touch();
                return Ok(SharedPage {
                    frame,
                    page_id,
                    _guard: guard,
                });
            }
        }
    }

    /// Fixes a page with an exclusive latch.
    pub fn fix_exclusive(&self, page_id: u64) -> Result<ExclusivePage<'_>> {
        loop {
            let frame = &self.frames[self.frame_index(page_id)?];
            let (guard, wait_ns) = frame.latch.lock_exclusive();
            if wait_ns > 0 {
                self.stats
                    .record_wait(WaitType::PageLatchEx, Some(page_id), wait_ns);
            }
            if frame.page_id.load(Ordering::Relaxed) == page_id {
                frame.touch();
                return Ok(ExclusivePage {
                    frame,
                    page_id,
                    _guard: guard,
                });
            }
        }
    }

    /// Number of data files the pool spreads pages over.
    pub fn file_count(&self) -> u32 {
        1
    }

    /// Allocates a new page at the end of data file `file`, formatted and dirty, latched
    /// exclusively.
    pub fn allocate_in(
        &self,
        file: u32,
        page_type: PageType,
        level: u8,
    ) -> Result<ExclusivePage<'_>> {
        debug_assert!(file < self.file_count());
        self.allocate(page_type, level)
    }

    /// Allocates a new page at the end of the file, formatted and dirty, latched exclusively.
    pub fn allocate(&self, page_type: PageType, level: u8) -> Result<ExclusivePage<'_>> {
        let page_id = self.file_pages.fetch_add(1, Ordering::AcqRel);
        if page_id >= FILE_PAGES_MAX {
            self.file_pages.fetch_sub(1, Ordering::AcqRel);
            return Err(Error::InvalidOption(format!(
                "{} is full: {FILE_PAGES_MAX} pages",
                self.file_name
            )));
        }
        let (index, guard) = self.evict_one()?;
        let frame = &self.frames[index];
        frame.buf.page().init(page_id, page_type, level);
        frame.page_id.store(page_id, Ordering::Relaxed);
        frame.dirty.store(true, Ordering::SeqCst);
        frame.image_lsn.store(0, Ordering::Relaxed);
        frame.touch();
        self.table.set(page_id, index);
        Ok(ExclusivePage {
            frame,
            page_id,
            _guard: guard,
        })
    }

    /// Reads a page into a frame (the miss path). Loads each page once however many
    /// sessions miss on it together.
    fn load(&self, page_id: u64) -> Result<()> {
        let _miss = self.miss_locks[(page_id as usize) % MISS_LOCK_SHARDS].lock();
        if self.table.get(page_id).is_some() {
            return Ok(()); // another session loaded it while we waited
        }
        if page_id >= self.file_pages.load(Ordering::Acquire) {
            return Err(self.corrupt(page_id, "page number past the end of the file".into()));
        }
        let (index, guard) = self.evict_one()?;
        let frame = &self.frames[index];
        let start = Instant::now();
        let read = IO_SCRATCH.with(|scratch| -> Result<()> {
            let mut image = scratch.borrow_mut();
            image.resize(self.page_size, 0);
            self.file
                .read_at(&mut image, page_id * self.page_size as u64)
                .map_err(|e| {
                    Error::io(format!("reading page {page_id} of {}", self.file_name), e)
                })?;
            page::verify(&image, page_id).map_err(|reason| self.corrupt(page_id, reason))?;
            frame.buf.page().copy_from(&image);
            Ok(())
        });
        self.stats
            .record_wait(WaitType::PageIoLatchSh, Some(page_id), elapsed_ns(start));
        // On failure the frame stays empty; the guard drop frees it for the next victim.
        read?;
        self.stats.count(Counter::PagesRead, 1);
        frame.page_id.store(page_id, Ordering::Relaxed);
        frame.dirty.store(false, Ordering::Relaxed);
        frame.image_lsn.store(0, Ordering::Relaxed);
        frame.touch();
        self.table.set(page_id, index);
        drop(guard);
        Ok(())
    }

    /// Picks a victim frame by clock, writes it back if dirty, and returns it empty and
    /// latched. Fails rather than blocks if every frame is latched.
    fn evict_one(&self) -> Result<(usize, ExclusiveGuard<'_>)> {
        let frame_count = self.frames.len();
        // Two sweeps clear every reference bit; a third finds any unlatched frame.
        for _ in 0..frame_count * 3 {
            let index = self.clock_hand.fetch_add(1, Ordering::Relaxed) % frame_count;
            let frame = &self.frames[index];
            if frame.referenced.load(Ordering::Relaxed) {
                frame.referenced.store(false, Ordering::Relaxed);
                continue;
            }
            let Some(guard) = frame.latch.try_lock_exclusive() else {
                continue;
            };
            let old = frame.page_id.load(Ordering::Relaxed);
            if old != NO_PAGE {
                if frame.dirty.load(Ordering::Relaxed) {
                    self.write_back(frame, old)?;
                }
                // Only after the write: a later miss on `old` must read the fresh image.
                self.table.clear(old);
                frame.page_id.store(NO_PAGE, Ordering::Relaxed);
            }
            return Ok((index, guard));
        }
        Err(Error::PoolExhausted {
            frames: frame_count,
        })
    }

    /// Writes a frame's page to the file (caller holds its latch, shared or exclusive).
    fn write_back(&self, frame: &Frame, page_id: u64) -> Result<()> {
        self.check_failed()?;
        if let Some(log) = self.log.get() {
            if log.has_failed() {
                // A page may hold a change whose log record was never appended.
                return Err(Error::io(
                    format!("writing page {page_id} of {}", self.file_name),
                    std::io::Error::other("the log failed (fail-stop): reopen to recover"),
                ));
            }
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
            self.file
                .write_at(&image, page_id * self.page_size as u64)
                .map_err(|e| {
                    self.failed.store(true, Ordering::Release);
                    Error::io(format!("writing page {page_id} of {}", self.file_name), e)
                })
        })?;
        frame.dirty.store(false, Ordering::Relaxed);
        self.stats.count(Counter::PagesWritten, 1);
        Ok(())
    }

    /// Writes every dirty page and makes the file durable (fdatasync).
    pub fn flush_all(&self) -> Result<()> {
        for frame in self.frames.iter() {
            // SeqCst pairs with `mark_dirty`: a checkpoint that publishes its redo LSN and
            // then finds a page clean here knows the next change to it sees that LSN.
            if !frame.dirty.load(Ordering::SeqCst) {
                continue;
            }
            let (_guard, _) = frame.latch.lock_shared();
            let page_id = frame.page_id.load(Ordering::Relaxed);
            if page_id != NO_PAGE && frame.dirty.load(Ordering::Relaxed) {
                self.write_back(frame, page_id)?;
            }
        }
        self.check_failed()?;
        self.file.sync_data().map_err(|e| {
            self.failed.store(true, Ordering::Release);
            Error::io(format!("syncing {}", self.file_name), e)
        })
    }

    /// True once a write or fdatasync of the data file failed (fail-stop).
    pub fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    fn check_failed(&self) -> Result<()> {
        if self.has_failed() {
            return Err(Error::io(
                format!("writing {}", self.file_name),
                std::io::Error::other(
                    "an earlier write or fdatasync of the data file failed (fail-stop): reopen to recover",
                ),
            ));
        }
        Ok(())
    }

    /// Reads a page image straight from the file, verified, bypassing the pool (for the
    /// integrity check and page inspection). Use after `flush_all` to see current data.
    pub fn read_page_image(&self, page_id: u64) -> Result<Vec<u8>> {
        if page_id >= self.file_pages.load(Ordering::Acquire) {
            return Err(self.corrupt(page_id, "page number past the end of the file".into()));
        }
        let mut image = vec![0u8; self.page_size];
        self.file
            .read_at(&mut image, page_id * self.page_size as u64)
            .map_err(|e| Error::io(format!("reading page {page_id} of {}", self.file_name), e))?;
        page::verify(&image, page_id).map_err(|reason| self.corrupt(page_id, reason))?;
        Ok(image)
    }

    /// Reads a page image straight from the file without verifying it (page inspection
    /// shows damaged pages too; `page::verify` says what is wrong). Past the end of the file
    /// is `CorruptPage`, as for `read_page_image`.
    pub fn read_page_raw(&self, page_id: u64) -> Result<Vec<u8>> {
        if page_id >= self.file_pages.load(Ordering::Acquire) {
            return Err(self.corrupt(page_id, "page number past the end of the file".into()));
        }
        let mut image = vec![0u8; self.page_size];
        self.file
            .read_at(&mut image, page_id * self.page_size as u64)
            .map_err(|e| Error::io(format!("reading page {page_id} of {}", self.file_name), e))?;
        Ok(image)
    }
}

/// A page fixed for an optimistic read: no latch is held.
pub struct OptimisticPage<'a> {
    pool: &'a BufferPool,
    frame: &'a Frame,
    page_id: u64,
    version: u64,
}

impl<'a> OptimisticPage<'a> {
    /// The page, to read (then validate).
    pub fn page(&self) -> Page<'a> {
        self.frame.buf.page()
    }

    /// The page number.
    pub fn page_id(&self) -> u64 {
        self.page_id
    }

    /// True if nobody wrote the page (or evicted it) since it was fixed.
    pub fn validate(&self) -> bool {
        self.frame.latch.validate(self.version)
    }

    /// Turns the optimistic fix into an exclusive one, or `None` if the page changed
    /// meanwhile (restart).
    pub fn upgrade(self) -> Option<ExclusivePage<'a>> {
        let (guard, wait_ns) = self.frame.latch.upgrade(self.version);
        if wait_ns > 0 {
            self.pool
                .stats
                .record_wait(WaitType::PageLatchEx, Some(self.page_id), wait_ns);
        }
        Some(ExclusivePage {
            frame: self.frame,
            page_id: self.page_id,
            _guard: guard?,
        })
    }
}

/// A page held with a shared latch.
pub struct SharedPage<'a> {
    frame: &'a Frame,
    page_id: u64,
    _guard: SharedGuard<'a>,
}

impl SharedPage<'_> {
    /// The page, to read.
    pub fn page(&self) -> Page<'_> {
        self.frame.buf.page()
    }

    /// The page number.
    pub fn page_id(&self) -> u64 {
        self.page_id
    }
}

/// A page held with an exclusive latch.
pub struct ExclusivePage<'a> {
    frame: &'a Frame,
    page_id: u64,
    _guard: ExclusiveGuard<'a>,
}

impl ExclusivePage<'_> {
    /// The page, to read and change. Call `mark_dirty` after changing it.
    pub fn page(&self) -> Page<'_> {
        self.frame.buf.page()
    }

    /// The page number.
    pub fn page_id(&self) -> u64 {
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
    use crate::io::{MemStorage, Storage};

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
    fn latched_frames_are_never_evicted_and_exhaustion_is_an_error() {
        let (_mem, pool) = pool(POOL_FRAMES_MIN);
        let held: Vec<_> = (0..POOL_FRAMES_MIN)
            .map(|_| pool.allocate(PageType::Leaf, 0).expect("allocate"))
            .collect();
        match pool.allocate(PageType::Leaf, 0) {
            Err(Error::PoolExhausted { frames }) => assert_eq!(frames, POOL_FRAMES_MIN),
            other => panic!(
                "expected PoolExhausted, got {:?}",
                other.map(|p| p.page_id())
            ),
        }
        drop(held);
        assert!(pool.allocate(PageType::Leaf, 0).is_ok());
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
        let at = page_id * 4096 + 100;
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
        let ids: Vec<u64> = (0..POOL_FRAMES_MIN * 4)
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
            let id = frame.page_id.load(Ordering::Relaxed);
            if id != NO_PAGE {
                assert!(seen.insert(id), "page {id} in two frames");
            }
        }
    }
}
