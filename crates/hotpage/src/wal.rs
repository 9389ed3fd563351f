//! The write-ahead log: records with LSNs and checksums, a log buffer that many sessions
//! fill at once, a group-commit flusher, and segment files recycled after checkpoints.
//!
//! **LSN** = byte position in the endless log stream. Segment `n` holds LSNs
//! `[n * segment_bytes, (n + 1) * segment_bytes)` in the file `wal.<n as 16 hex digits>`.
//!
//! **Record** (8-byte aligned): a header word `len u32 | crc u32` (little-endian), then the body
//! `kind u8, payload`, then zero padding to 8 bytes. `len` counts header + body. The CRC32C
//! covers the record's own LSN and its body, so a stale record left in a recycled segment, or
//! one beyond the end of the log, never validates at a position it was not written at.
//!
//! **Insertion scales with sessions** (Aether's and PostgreSQL's idea, no mutex around the copy):
//! a session reserves its bytes with one atomic add on `reserved`, copies its record into a
//! ring of `AtomicU64` words in parallel with everyone else, and publishes it by storing the
//! header word last (release). The flusher scans headers from where it stopped: the first zero
//! header is a record still being copied, so everything before it is complete. After writing a
//! range out it zeroes those ring words and advances `freed`, which gives the space back.
//!
//! **Group commit**: one flusher thread writes the complete prefix, calls `sync_data` once,
//! and then publishes the new durable LSN and wakes every waiter it covers: all commits that
//! arrived during the previous fdatasync share the next one.
//!
//! **Fail-stop**: if a write or fdatasync fails, the log is marked failed for good; every
//! waiting and later commit gets an error; nothing after the failure is acknowledged
//! (PostgreSQL's 2018 fsync lesson: never retry and carry on). Recovery after a restart
//! rebuilds the truth from what reached the disk.

use crate::error::{Error, Result};
use crate::io::{Storage, StorageFile};
use crate::stats::{Stats, WaitType};
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A log sequence number: a byte position in the log.
pub type Lsn = u64;

/// Default segment size.
pub const SEGMENT_BYTES_DEFAULT: u64 = 64 << 20;
/// Default log buffer size.
pub const BUFFER_BYTES_DEFAULT: usize = 16 << 20;
/// Default bound on how long an `async` commit may stay only in memory.
pub const ASYNC_FLUSH_INTERVAL_DEFAULT: Duration = Duration::from_millis(10);
const HEADER_BYTES: u64 = 8;

/// What a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordKind {
    /// A committed transaction's rows: `txn u64, count u32, (table u32, key_len u8, key, row_len u32, row)*`.
    TxnCommit = 1,
    /// One record inserted into one page: `page u64, key_len u8, key, payload`.
    PageInsert = 2,
    /// Whole page images, applied together: `count u32, (page u64, image)*`.
    PageImages = 3,
    /// A rolled-back transaction (for inspection only): `txn u64, rows u32`.
    TxnAbort = 4,
    /// A new, empty heap page linked after a chain's tail: `tail u64, new u64`. Redo
    /// formats the new page from nothing and sets the tail's `next`.
    HeapLink = 5,
}

impl RecordKind {
    fn from_byte(byte: u8) -> Option<RecordKind> {
        match byte {
            1 => Some(RecordKind::TxnCommit),
            2 => Some(RecordKind::PageInsert),
            3 => Some(RecordKind::PageImages),
            4 => Some(RecordKind::TxnAbort),
            5 => Some(RecordKind::HeapLink),
            _ => None,
        }
    }

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::TxnCommit => "txn-commit",
            RecordKind::PageInsert => "page-insert",
            RecordKind::PageImages => "page-images",
            RecordKind::TxnAbort => "txn-abort",
            RecordKind::HeapLink => "heap-link",
        }
    }
}

/// Log sizing and timing.
#[derive(Clone, Debug)]
pub struct WalOptions {
    /// Bytes per segment file (a multiple of 4096, at least 1 MiB).
    pub segment_bytes: u64,
    /// Bytes of the in-memory log buffer (a power of two, at least 1 MiB).
    pub buffer_bytes: usize,
    /// The longest an `async` commit stays only in memory.
    pub async_flush_interval: Duration,
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions {
            segment_bytes: SEGMENT_BYTES_DEFAULT,
            buffer_bytes: BUFFER_BYTES_DEFAULT,
            async_flush_interval: ASYNC_FLUSH_INTERVAL_DEFAULT,
        }
    }
}

impl WalOptions {
    fn validate(&self) -> Result<()> {
        if self.segment_bytes < (1 << 20) || !self.segment_bytes.is_multiple_of(4096) {
            return Err(Error::InvalidOption(format!(
                "log segment of {} bytes: use a multiple of 4096, at least 1 MiB",
                self.segment_bytes
            )));
        }
        if self.buffer_bytes < (1 << 20) || !self.buffer_bytes.is_power_of_two() {
            return Err(Error::InvalidOption(format!(
                "log buffer of {} bytes: use a power of two, at least 1 MiB",
                self.buffer_bytes
            )));
        }
        Ok(())
    }
}

/// Log figures for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalCounters {
    /// Bytes appended.
    pub bytes: u64,
    /// Flushes (write + fdatasync rounds).
    pub flushes: u64,
    /// Commit records appended.
    pub commits: u64,
    /// Segments renamed for reuse.
    pub segments_recycled: u64,
}

fn segment_name(index: u64) -> String {
    format!("wal.{index:016x}")
}

fn segment_index(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("wal.")?;
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok())?
}

fn round8(n: u64) -> u64 {
    n.div_ceil(8) * 8
}

fn record_crc(lsn: Lsn, body_parts: &[&[u8]]) -> u32 {
    let mut crc = crc32c::crc32c(&lsn.to_le_bytes());
    for part in body_parts {
        crc = crc32c::crc32c_append(crc, part);
    }
    crc
}

struct Segments {
    // Open segment files by index (the flusher writes at most two at once).
    open: Vec<(u64, Arc<dyn StorageFile>)>,
    // Obsolete segment indexes, ready to be renamed into new ones.
    free: Vec<u64>,
}

struct FlushState {
    shutdown: bool,
}

struct Shared {
    storage: Arc<dyn Storage>,
    options: WalOptions,
    ring: Box<[AtomicU64]>,
    // Next LSN to hand out.
    reserved: AtomicU64,
    // Everything below has been handed to the file (and its ring space zeroed).
    freed: AtomicU64,
    // Everything below is durable.
    durable: AtomicU64,
    // Highest LSN a committer waits for.
    requested: AtomicU64,
    failed: AtomicBool,
    state: Mutex<FlushState>,
    // The flusher waits here for work.
    work: Condvar,
    // Committers wait here for durability; appenders for buffer space.
    progress: Condvar,
    segments: Mutex<Segments>,
    stats: Arc<Stats>,
    bytes: AtomicU64,
    flushes: AtomicU64,
    commits: AtomicU64,
    recycled: AtomicU64,
}

/// The write-ahead log of one database.
pub struct Wal {
    shared: Arc<Shared>,
    flusher: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("reserved", &self.shared.reserved.load(Ordering::Relaxed))
            .field("durable", &self.shared.durable.load(Ordering::Relaxed))
            .finish()
    }
}

fn failed_error() -> Error {
    Error::io(
        "writing the log",
        std::io::Error::other(
            "the log failed earlier (fail-stop): restart the database to recover",
        ),
    )
}

impl Wal {
    /// Opens the log for appending at `end` (the end of the valid log found by recovery).
    /// Segments wholly below `keep_from` are obsolete and kept for reuse; everything at or
    /// after `end` is cleared so no stale record can follow the new ones.
    pub fn open(
        storage: Arc<dyn Storage>,
        options: WalOptions,
        end: Lsn,
        keep_from: Lsn,
        stats: Arc<Stats>,
    ) -> Result<Wal> {
        options.validate()?;
        let segment_bytes = options.segment_bytes;
        let mut free = Vec::new();
        let names = storage
            .list()
            .map_err(|e| Error::io("listing log segments", e))?;
        let end_index = end / segment_bytes;
        for index in names.iter().filter_map(|n| segment_index(n)) {
            if index > end_index {
                // After the recovered end: a previous run's records that never became part
                // of the log. Reused in place, one could validate again where new records
                // happen to end at its start: remove them.
                storage
                    .remove(&segment_name(index))
                    .map_err(|e| Error::io("removing a stale log segment", e))?;
            } else if (index + 1) * segment_bytes <= keep_from.min(end) {
                free.push(index);
            }
        }
        storage
            .sync_dir()
            .map_err(|e| Error::io("syncing the log directory", e))?;
        // Clear the tail of the current segment: recovery stopped at `end`, and anything
        // after it is a write that never became durable. Left there, it could validate
        // again later when new records happen to end exactly where one of them starts.
        if storage
            .exists(&segment_name(end_index))
            .map_err(|e| Error::io("looking for the log tail", e))?
        {
            let file = storage
                .open(&segment_name(end_index), false)
                .map_err(|e| Error::io("opening the log tail", e))?;
            let offset = end % segment_bytes;
            file.set_len(offset)
                .and_then(|()| file.sync_data())
                .map_err(|e| Error::io("truncating the log tail", e))?;
        }
        let words = options.buffer_bytes / 8;
        let shared = Arc::new(Shared {
            storage,
            ring: (0..words).map(|_| AtomicU64::new(0)).collect(),
            reserved: AtomicU64::new(end),
            freed: AtomicU64::new(end),
            durable: AtomicU64::new(end),
            requested: AtomicU64::new(end),
            failed: AtomicBool::new(false),
            state: Mutex::new(FlushState { shutdown: false }),
            work: Condvar::new(),
            progress: Condvar::new(),
            segments: Mutex::new(Segments {
                open: Vec::new(),
                free,
            }),
            stats,
            bytes: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            recycled: AtomicU64::new(0),
            options,
        });
        let flusher_shared = Arc::clone(&shared);
        let flusher = std::thread::Builder::new()
            .name("hotpage-wal-flusher".into())
            .spawn(move || flusher_shared.flush_loop())
            .map_err(|e| Error::io("starting the log flusher", e))?;
        Ok(Wal {
            shared,
            flusher: Mutex::new(Some(flusher)),
        })
    }

    /// Appends one record. Returns `(start, end)`: the record's LSN and the LSN just past
    /// it (what a commit waits for). Waits (LOGBUFFER) while the buffer is full.
    pub fn append(&self, kind: RecordKind, parts: &[&[u8]]) -> Result<(Lsn, Lsn)> {
        self.shared.append(kind, parts)
    }

    /// Waits until everything before `lsn` is durable (WRITELOG), or the log has failed.
    pub fn wait_durable(&self, lsn: Lsn) -> Result<()> {
        let s = &self.shared;
        if s.durable.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        let start = Instant::now();
        s.requested.fetch_max(lsn, Ordering::SeqCst);
        let mut state = s.state.lock();
        s.work.notify_one();
        while s.durable.load(Ordering::Acquire) < lsn && !s.failed.load(Ordering::Acquire) {
            if state.shutdown {
                break;
            }
            s.progress.wait(&mut state);
        }
        drop(state);
        s.stats
            .record_wait(WaitType::WriteLog, None, crate::stats::elapsed_ns(start));
        if s.durable.load(Ordering::Acquire) >= lsn {
            Ok(())
        } else {
            Err(failed_error())
        }
    }

    /// Makes everything appended so far durable.
    pub fn flush_all(&self) -> Result<()> {
        self.wait_durable(self.shared.reserved.load(Ordering::SeqCst))
    }

    /// The next LSN to be handed out (everything below it has been reserved).
    pub fn end(&self) -> Lsn {
        self.shared.reserved.load(Ordering::SeqCst)
    }

    /// Everything below this is durable.
    pub fn durable(&self) -> Lsn {
        self.shared.durable.load(Ordering::Acquire)
    }

    /// Fail-stop from outside the log (a data-file write or fdatasync failed): every waiting
    /// and later commit gets an error until the database is reopened.
    pub fn fail(&self) {
        self.shared.failed.store(true, Ordering::Release);
        let _state = self.shared.state.lock();
        self.shared.progress.notify_all();
        self.shared.work.notify_all();
    }

    /// True once a write or fdatasync of the log failed.
    pub fn has_failed(&self) -> bool {
        self.shared.failed.load(Ordering::Acquire)
    }

    /// Counters for reports.
    pub fn counters(&self) -> WalCounters {
        let s = &self.shared;
        WalCounters {
            bytes: s.bytes.load(Ordering::Relaxed),
            flushes: s.flushes.load(Ordering::Relaxed),
            commits: s.commits.load(Ordering::Relaxed),
            segments_recycled: s.recycled.load(Ordering::Relaxed),
        }
    }

    /// After a checkpoint: segments wholly below `keep_from` are no longer needed by
    /// recovery; they become free for reuse (renamed into future segments).
    pub fn release_before(&self, keep_from: Lsn) {
        let s = &self.shared;
        let segment_bytes = s.options.segment_bytes;
        // Listed under the lock: the flusher renames free segments under it, and a segment
        // renamed away must not be pushed back as free.
        let mut segments = s.segments.lock();
        let Ok(names) = s.storage.list() else {
            return; // nothing released; the next checkpoint tries again
        };
        for index in names.iter().filter_map(|n| segment_index(n)) {
            let obsolete = (index + 1) * segment_bytes <= keep_from;
            let open = segments.open.iter().any(|(i, _)| *i == index);
            if obsolete && !open && !segments.free.contains(&index) {
                segments.free.push(index);
            }
        }
    }

    /// Stops the flusher after a final flush.
    pub fn shutdown(&self) -> Result<()> {
        let result = if self.has_failed() {
            Err(failed_error())
        } else {
            self.flush_all()
        };
        {
            let mut state = self.shared.state.lock();
            state.shutdown = true;
            self.shared.work.notify_all();
            self.shared.progress.notify_all();
        }
        if let Some(handle) = self.flusher.lock().take() {
            let _ = handle.join();
        }
        result
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

impl Shared {
    fn append(&self, kind: RecordKind, parts: &[&[u8]]) -> Result<(Lsn, Lsn)> {
        let s = self;
        if s.failed.load(Ordering::Acquire) {
            return Err(failed_error());
        }
        let body_len = 1 + parts.iter().map(|p| p.len() as u64).sum::<u64>();
        let len = HEADER_BYTES + body_len;
        let padded = round8(len);
        let ring_bytes = (s.ring.len() * 8) as u64;
        if padded > ring_bytes / 2 || len > u64::from(u32::MAX) {
            return Err(Error::InvalidOption(format!(
                "log record of {len} bytes is larger than half the log buffer"
            )));
        }
        let start = s.reserved.fetch_add(padded, Ordering::SeqCst);
        let end = start + padded;
        if end - s.freed.load(Ordering::Acquire) > ring_bytes {
            s.wait_for_space(end, ring_bytes)?;
        }
        let kind_byte = [kind as u8];
        // No allocation on this path (every insert appends): the kind byte is chained in.
        let body = || std::iter::once(&kind_byte[..]).chain(parts.iter().copied());
        let crc = body().fold(crc32c::crc32c(&start.to_le_bytes()), |crc, part| {
            crc32c::crc32c_append(crc, part)
        });
        // Body words first, then the header word with release: the flusher trusts a record
        // only once it sees a non-zero header.
        let mut word = [0u8; 8];
        let mut filled = 0usize;
        let mut at = start + HEADER_BYTES;
        for byte in body().flat_map(|p| p.iter()) {
            word[filled] = *byte;
            filled += 1;
            if filled == 8 {
                s.store_word(at, u64::from_le_bytes(word), Ordering::Relaxed);
                at += 8;
                filled = 0;
            }
        }
        if filled > 0 {
            word[filled..].fill(0);
            s.store_word(at, u64::from_le_bytes(word), Ordering::Relaxed);
        }
        let header = (len as u32 as u64) | (u64::from(crc) << 32);
        debug_assert_ne!(header, 0);
        s.store_word(start, header, Ordering::Release);
        s.bytes.fetch_add(padded, Ordering::Relaxed);
        if kind == RecordKind::TxnCommit {
            s.commits.fetch_add(1, Ordering::Relaxed);
        }
        Ok((start, end))
    }

    fn word_index(&self, lsn: Lsn) -> usize {
        ((lsn / 8) as usize) % self.ring.len()
    }

    fn store_word(&self, lsn: Lsn, value: u64, order: Ordering) {
        self.ring[self.word_index(lsn)].store(value, order);
    }

    fn load_word(&self, lsn: Lsn, order: Ordering) -> u64 {
        self.ring[self.word_index(lsn)].load(order)
    }

    fn wait_for_space(&self, end: Lsn, ring_bytes: u64) -> Result<()> {
        let start = Instant::now();
        let mut state = self.state.lock();
        while end - self.freed.load(Ordering::Acquire) > ring_bytes {
            if self.failed.load(Ordering::Acquire) || state.shutdown {
                return Err(failed_error());
            }
            self.requested.fetch_max(end - ring_bytes, Ordering::SeqCst);
            self.work.notify_one();
            self.progress.wait_for(&mut state, Duration::from_millis(1));
        }
        drop(state);
        self.stats
            .record_wait(WaitType::LogBuffer, None, crate::stats::elapsed_ns(start));
        Ok(())
    }

    /// The flusher thread: write out the complete prefix, fdatasync, publish, repeat.
    fn flush_loop(self: Arc<Self>) {
        let mut image: Vec<u8> = Vec::new();
        loop {
            {
                let mut state = self.state.lock();
                let idle = || {
                    self.requested.load(Ordering::SeqCst) <= self.durable.load(Ordering::Acquire)
                };
                if idle() && !state.shutdown {
                    // Async commits: flush at least every interval even if nobody waits.
                    self.work
                        .wait_for(&mut state, self.options.async_flush_interval);
                }
                // Stop once everything is out, or at once after a failure: what is left
                // can never be written (fail-stop), and nobody waits for it.
                if state.shutdown
                    && (self.failed.load(Ordering::Acquire)
                        || self.freed.load(Ordering::Acquire)
                            >= self.reserved.load(Ordering::SeqCst))
                {
                    return;
                }
            }
            if self.failed.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            let from = self.freed.load(Ordering::Acquire);
            let to = self.complete_prefix(from);
            if to == from {
                if self.requested.load(Ordering::SeqCst) > self.durable.load(Ordering::Acquire)
                    || self.reserved.load(Ordering::SeqCst) > from
                {
                    // A record is still being copied in: give its session the core.
                    std::thread::yield_now();
                }
                continue;
            }
            image.clear();
            let mut at = from;
            while at < to {
                let word = self.load_word(at, Ordering::Relaxed);
                image.extend_from_slice(&word.to_le_bytes());
                self.store_word(at, 0, Ordering::Relaxed);
                at += 8;
            }
            // Ring space is free again (the words are zero); the data is in `image`.
            self.freed.store(to, Ordering::Release);
            self.progress.notify_all();
            match self.write_and_sync(from, &image) {
                Ok(()) => {
                    self.durable.store(to, Ordering::Release);
                    self.flushes.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => {
                    // Fail-stop: never retry a failed fdatasync and carry on.
                    self.failed.store(true, Ordering::Release);
                }
            }
            let _state = self.state.lock();
            self.progress.notify_all();
        }
    }

    /// The end of the run of complete records starting at `from`.
    fn complete_prefix(&self, from: Lsn) -> Lsn {
        // Never look past one ring length: the slot at `from + ring` is `from`'s own slot,
        // and reading it again would take the record at `from` for one a ring further on.
        let ring_bytes = (self.ring.len() * 8) as u64;
        let limit = self.reserved.load(Ordering::SeqCst).min(from + ring_bytes);
        let mut at = from;
        while at < limit {
            let header = self.load_word(at, Ordering::Acquire);
            if header == 0 {
                break;
            }
            let len = header & u64::from(u32::MAX);
            if at + round8(len) > from + ring_bytes {
                break; // cannot happen for a published record; never cross the bound
            }
            at += round8(len);
        }
        at
    }

    fn segment(&self, index: u64) -> std::io::Result<Arc<dyn StorageFile>> {
        let mut segments = self.segments.lock();
        if let Some((_, file)) = segments.open.iter().find(|(i, _)| *i == index) {
            return Ok(Arc::clone(file));
        }
        let name = segment_name(index);
        // A stale segment reused in place must never be renamed away later.
        segments.free.retain(|free| *free != index);
        if !self.storage.exists(&name)?
            && let Some(old) = segments.free.pop()
        {
            self.storage.rename(&segment_name(old), &name)?;
            self.recycled.fetch_add(1, Ordering::Relaxed);
        }
        let file = self.storage.open(&name, true)?;
        // A new (or renamed) segment must survive a crash before records in it count.
        self.storage.sync_dir()?;
        segments.open.retain(|(i, _)| *i + 1 >= index);
        segments.open.push((index, Arc::clone(&file)));
        Ok(file)
    }

    fn write_and_sync(&self, from: Lsn, image: &[u8]) -> std::io::Result<()> {
        let segment_bytes = self.options.segment_bytes;
        let mut written = 0usize;
        let mut touched: Vec<Arc<dyn StorageFile>> = Vec::with_capacity(2);
        while written < image.len() {
            let lsn = from + written as u64;
            let index = lsn / segment_bytes;
            let offset = lsn % segment_bytes;
            let room = (segment_bytes - offset) as usize;
            let chunk = room.min(image.len() - written);
            let file = self.segment(index)?;
            file.write_at(&image[written..written + chunk], offset)?;
            touched.push(file);
            written += chunk;
        }
        for file in &touched {
            file.sync_data()?;
        }
        Ok(())
    }
}

/// Makes every log segment on disk durable (and the directory). Recovery calls it before
/// redo writes any page: after a process crash, log bytes may sit only in the OS cache, and a
/// page written from them must not outlive them.
pub fn sync_segments(storage: &dyn Storage) -> Result<()> {
    let names = storage
        .list()
        .map_err(|e| Error::io("listing log segments", e))?;
    for name in names.iter().filter(|n| segment_index(n).is_some()) {
        storage
            .open(name, false)
            .and_then(|file| file.sync_data())
            .map_err(|e| Error::io(format!("syncing log segment {name}"), e))?;
    }
    storage
        .sync_dir()
        .map_err(|e| Error::io("syncing the log directory", e))
}

/// The first LSN of the oldest log segment still on disk (where `scan` can start to see
/// every retained record), or `None` if there is no segment.
pub fn oldest_segment_lsn(storage: &dyn Storage, segment_bytes: u64) -> Result<Option<Lsn>> {
    let names = storage
        .list()
        .map_err(|e| Error::io("listing log segments", e))?;
    Ok(names
        .iter()
        .filter_map(|n| segment_index(n))
        .min()
        .map(|index| index * segment_bytes))
}

/// One record read back from the log.
#[derive(Debug)]
pub struct Record<'a> {
    /// Its LSN.
    pub lsn: Lsn,
    /// The LSN just past it.
    pub end: Lsn,
    /// What it is.
    pub kind: RecordKind,
    /// Its payload (after the kind byte).
    pub payload: &'a [u8],
}

/// Reads the log from `from` to its end (the first missing, torn or foreign record), calling
/// `visit` for each record. Records may straddle segment files. Returns the end LSN.
pub fn scan(
    storage: &dyn Storage,
    segment_bytes: u64,
    from: Lsn,
    mut visit: impl FnMut(&Record<'_>) -> Result<()>,
) -> Result<Lsn> {
    let mut reader = SegmentReader {
        storage,
        segment_bytes,
        data: Vec::new(),
        data_start: from,
        next_segment: from / segment_bytes,
        exhausted: false,
    };
    let mut lsn = from;
    loop {
        let Some(header_bytes) = reader.bytes(lsn, HEADER_BYTES as usize)? else {
            return Ok(lsn);
        };
        let header = u64::from_le_bytes(header_bytes.try_into().unwrap_or([0; 8]));
        let rec_len = header & u64::from(u32::MAX);
        let crc = (header >> 32) as u32;
        if rec_len <= HEADER_BYTES || rec_len > u64::from(u32::MAX) {
            return Ok(lsn);
        }
        let Some(body) = reader.bytes(lsn + HEADER_BYTES, (rec_len - HEADER_BYTES) as usize)?
        else {
            return Ok(lsn);
        };
        if record_crc(lsn, &[body]) != crc {
            return Ok(lsn);
        }
        let Some(kind) = RecordKind::from_byte(body[0]) else {
            return Ok(lsn);
        };
        let end = lsn + round8(rec_len);
        visit(&Record {
            lsn,
            end,
            kind,
            payload: &body[1..],
        })?;
        lsn = end;
        reader.consume(lsn);
    }
}

/// Reads the log's byte stream across segment files.
struct SegmentReader<'a> {
    storage: &'a dyn Storage,
    segment_bytes: u64,
    data: Vec<u8>,
    // LSN of data[0].
    data_start: Lsn,
    next_segment: u64,
    exhausted: bool,
}

impl SegmentReader<'_> {
    /// `len` bytes at `lsn`, or `None` where the log's files end first.
    fn bytes(&mut self, lsn: Lsn, len: usize) -> Result<Option<&[u8]>> {
        while self.data_start + (self.data.len() as u64) < lsn + len as u64 {
            if !self.load_next()? {
                return Ok(None);
            }
        }
        let at = (lsn - self.data_start) as usize;
        Ok(Some(&self.data[at..at + len]))
    }

    /// Forgets bytes before `lsn`.
    fn consume(&mut self, lsn: Lsn) {
        let at = ((lsn - self.data_start) as usize).min(self.data.len());
        if at > (1 << 20) {
            self.data.drain(..at);
            self.data_start += at as u64;
        }
    }

    fn load_next(&mut self) -> Result<bool> {
        if self.exhausted {
            return Ok(false);
        }
        let index = self.next_segment;
        let name = segment_name(index);
        let exists = self
            .storage
            .exists(&name)
            .map_err(|e| Error::io("looking for a log segment", e))?;
        if !exists {
            self.exhausted = true;
            return Ok(false);
        }
        let file = self
            .storage
            .open(&name, false)
            .map_err(|e| Error::io(format!("opening log segment {name}"), e))?;
        let len = file
            .len()
            .map_err(|e| Error::io(format!("reading log segment {name}"), e))?
            .min(self.segment_bytes);
        let base = index * self.segment_bytes;
        // Only the bytes from where the stream stands (the first segment may be entered in
        // the middle); a short segment ends the stream after it.
        let stream_at = self.data_start + self.data.len() as u64;
        let skip = stream_at.saturating_sub(base).min(len);
        let mut chunk = vec![0u8; (len - skip) as usize];
        file.read_at(&mut chunk, skip)
            .map_err(|e| Error::io(format!("reading log segment {name}"), e))?;
        self.data.extend_from_slice(&chunk);
        if len < self.segment_bytes {
            self.exhausted = true;
        }
        self.next_segment += 1;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{CrashMode, MemStorage};

    fn options() -> WalOptions {
        WalOptions {
            segment_bytes: 1 << 20,
            buffer_bytes: 1 << 20,
            async_flush_interval: Duration::from_millis(2),
        }
    }

    /// Eight threads each call `append(thread, i)` for `i` in `0..per_thread`; returns
    /// every (LSN, payload) appended.
    fn append_from_threads(
        per_thread: u32,
        append: impl Fn(u8, u32) -> (Lsn, Vec<u8>) + Sync,
    ) -> Vec<(Lsn, Vec<u8>)> {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..8u8)
                .map(|t| {
                    let append = &append;
                    s.spawn(move || (0..per_thread).map(|i| append(t, i)).collect::<Vec<_>>())
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("thread"))
                .collect()
        })
    }

    fn read_all(storage: &dyn Storage) -> (Vec<(Lsn, Vec<u8>)>, Lsn) {
        let mut records = Vec::new();
        let end = scan(storage, 1 << 20, 0, |r| {
            records.push((r.lsn, r.payload.to_vec()));
            Ok(())
        })
        .expect("scan");
        (records, end)
    }

    #[test]
    fn records_from_many_threads_are_durable_and_read_back_in_order() {
        let mem = MemStorage::new(1);
        let wal = Wal::open(mem.clone(), options(), 0, 0, Stats::new()).expect("open");
        let mut all = append_from_threads(2000, |t, i| {
            let payload: Vec<u8> = std::iter::repeat_n(t, (i % 300) as usize + 1).collect();
            let (lsn, end) = wal
                .append(RecordKind::PageInsert, &[&payload])
                .expect("append");
            if i % 50 == 0 {
                wal.wait_durable(end).expect("durable");
            }
            (lsn, payload)
        });
        wal.shutdown().expect("shutdown");
        all.sort();
        let (read, end) = read_all(&*mem);
        assert!(
            read == all,
            "the log does not hold exactly what was appended, in LSN order"
        );
        assert_eq!(end, wal.end());
        let counters = wal.counters();
        assert!(counters.flushes >= 1);
        assert!(counters.bytes >= end);
    }

    /// The ring exactly full, and one more record reserved by a session now waiting for
    /// space: the complete prefix ends at one ring length. (Reading on, the flusher once
    /// took the record in the first slot for one a ring further on, and lost records.)
    #[test]
    fn the_complete_prefix_never_reaches_past_one_ring_length() {
        let ring_words = (1usize << 20) / 8;
        let shared = Shared {
            storage: MemStorage::new(10),
            options: options(),
            ring: (0..ring_words).map(|_| AtomicU64::new(0)).collect(),
            reserved: AtomicU64::new(0),
            freed: AtomicU64::new(0),
            durable: AtomicU64::new(0),
            requested: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            state: Mutex::new(FlushState { shutdown: false }),
            work: Condvar::new(),
            progress: Condvar::new(),
            segments: Mutex::new(Segments {
                open: Vec::new(),
                free: Vec::new(),
            }),
            stats: Stats::new(),
            bytes: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            recycled: AtomicU64::new(0),
        };
        // 4096-byte records: header 8 + kind 1 + payload 4087.
        let payload = vec![7u8; 4087];
        for _ in 0..256 {
            shared
                .append(RecordKind::PageImages, &[&payload])
                .expect("append");
        }
        let ring_bytes = (ring_words * 8) as u64;
        assert_eq!(shared.reserved.load(Ordering::SeqCst), ring_bytes);
        // A session reserves the next record and waits for space: nothing written yet.
        shared.reserved.fetch_add(4096, Ordering::SeqCst);
        assert_eq!(shared.complete_prefix(0), ring_bytes);
    }

    /// Appenders that never wait for durability keep the ring full all the time: the flusher
    /// must never read past one ring length (it once did, and took a record for another).
    #[test]
    fn a_full_ring_keeps_every_record_exactly() {
        let mem = MemStorage::new(9);
        let wal = Wal::open(mem.clone(), options(), 0, 0, Stats::new()).expect("open");
        let mut all = append_from_threads(600, |t, i| {
            let payload: Vec<u8> =
                std::iter::repeat_n(t ^ (i as u8), 1500 + (i as usize % 700)).collect();
            let (lsn, _) = wal
                .append(RecordKind::PageImages, &[&payload])
                .expect("append");
            (lsn, payload)
        });
        wal.shutdown().expect("shutdown");
        all.sort();
        assert!(
            all.iter().map(|(_, p)| p.len()).sum::<usize>() > 5 << 20,
            "the ring wrapped several times"
        );
        let (read, _) = read_all(&*mem);
        assert!(
            read == all,
            "the log does not hold exactly what was appended"
        );
        assert!(wal.counters().bytes > 0);
    }

    #[test]
    fn a_crash_keeps_every_durable_record_and_a_clean_prefix() {
        for (seed, mode) in [
            (1, CrashMode::DropAll),
            (2, CrashMode::Torn),
            (3, CrashMode::Reorder),
        ] {
            let mem = MemStorage::new(seed);
            let wal = Wal::open(mem.clone(), options(), 0, 0, Stats::new()).expect("open");
            let mut durable_up_to = 0;
            for i in 0..3000u32 {
                let (_, end) = wal
                    .append(RecordKind::PageInsert, &[&i.to_le_bytes(), &[7u8; 100]])
                    .expect("append");
                if i % 97 == 0 {
                    wal.wait_durable(end).expect("durable");
                    durable_up_to = end;
                }
            }
            // Power fails: the flusher may be mid-write.
            mem.crash(mode);
            let (read, end) = read_all(&*mem);
            assert!(end >= durable_up_to, "{mode:?}: lost durable records");
            for (k, (_, payload)) in read.iter().enumerate() {
                assert_eq!(
                    payload[..4],
                    (k as u32).to_le_bytes(),
                    "{mode:?}: not a prefix"
                );
            }
            drop(wal);
        }
    }

    #[test]
    fn a_failed_fsync_stops_every_later_commit() {
        let mem = MemStorage::new(4);
        let wal = Wal::open(mem.clone(), options(), 0, 0, Stats::new()).expect("open");
        let (_, end) = wal
            .append(RecordKind::TxnCommit, &[b"one"])
            .expect("append");
        wal.wait_durable(end).expect("first commit is durable");
        mem.fail_sync_after(Some(0));
        let (_, end) = wal
            .append(RecordKind::TxnCommit, &[b"two"])
            .expect("append");
        assert!(
            wal.wait_durable(end).is_err(),
            "a commit after a failed fsync was acknowledged"
        );
        assert!(wal.has_failed());
        assert!(wal.append(RecordKind::TxnCommit, &[b"three"]).is_err());
        mem.fail_sync_after(None);
        assert!(
            wal.wait_durable(end).is_err(),
            "fail-stop must not heal by itself"
        );
    }

    /// Recovery stopped in segment 0 while a later segment still held a previous run's
    /// records: new records ending exactly where an old one starts must not bring it back.
    #[test]
    fn stale_later_segments_never_come_back() {
        let mem = MemStorage::new(12);
        let wal = Wal::open(mem.clone(), options(), 0, 0, Stats::new()).expect("open");
        let old = vec![0xAAu8; 4087]; // 4096-byte records
        for _ in 0..400 {
            wal.append(RecordKind::PageImages, &[&old]).expect("append");
        }
        wal.shutdown().expect("shutdown");
        drop(wal);
        // Reopen as if recovery had stopped at 100 records, in segment 0.
        let cut = 100 * 4096;
        let wal = Wal::open(mem.clone(), options(), cut, cut, Stats::new()).expect("reopen");
        let new = vec![0x55u8; 4087];
        // 200 new records end at 300 * 4096, exactly where an old record starts (segment 1).
        for _ in 0..200 {
            wal.append(RecordKind::PageImages, &[&new]).expect("append");
        }
        wal.flush_all().expect("flush");
        let new_end = wal.end();
        assert_eq!(new_end, 300 * 4096);
        let end = scan(&*mem, 1 << 20, cut, |_| Ok(())).expect("scan");
        assert_eq!(
            end, new_end,
            "records of the previous run came back after the new end"
        );
    }

    #[test]
    fn shutdown_after_a_failed_write_returns() {
        let mem = MemStorage::new(6);
        let wal = Wal::open(mem.clone(), options(), 0, 0, Stats::new()).expect("open");
        mem.fail_writes_after(Some(0));
        let (_, end) = wal
            .append(RecordKind::TxnCommit, &[b"never written"])
            .expect("append");
        assert!(wal.wait_durable(end).is_err());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = wal.shutdown();
            let _ = tx.send(());
        });
        rx.recv_timeout(Duration::from_secs(10))
            .expect("shutdown hung after a failed write");
    }

    #[test]
    fn reopening_at_the_end_clears_the_stale_tail_and_recycles_segments() {
        let mem = MemStorage::new(5);
        let wal = Wal::open(mem.clone(), options(), 0, 0, Stats::new()).expect("open");
        let big = vec![1u8; 100_000];
        for _ in 0..30 {
            wal.append(RecordKind::PageImages, &[&big]).expect("append");
        }
        wal.shutdown().expect("shutdown");
        let (_, end) = read_all(&*mem);
        assert!(end > 2 << 20, "three segments written");
        drop(wal);
        // Reopen as if recovery had stopped early (at a record boundary in segment 1).
        let (records, _) = read_all(&*mem);
        let cut = records
            .iter()
            .map(|(l, _)| *l)
            .find(|l| *l > 1 << 20)
            .expect("record");
        let wal = Wal::open(mem.clone(), options(), cut, cut, Stats::new()).expect("reopen");
        assert_eq!(
            read_all(&*mem).1,
            cut,
            "stale records after the new end were cleared"
        );
        for _ in 0..40 {
            wal.append(RecordKind::PageImages, &[&big]).expect("append");
        }
        wal.flush_all().expect("flush");
        assert!(
            wal.counters().segments_recycled >= 1,
            "segment 0 was reused"
        );
        let mut first = None;
        let end = scan(&*mem, 1 << 20, cut, |r| {
            first.get_or_insert(r.lsn);
            Ok(())
        })
        .expect("scan");
        assert_eq!(
            end,
            wal.end(),
            "the recycled segment's stale records do not validate"
        );
        assert_eq!(first, Some(cut));
    }
}
