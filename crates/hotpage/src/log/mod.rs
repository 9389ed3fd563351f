//! The write-ahead log: records with LSNs and checksums, a log buffer that many sessions
//! fill at once, a group-commit flusher, and segment files recycled after checkpoints.
//!
//! - `record`: the record format (kinds, header word, salted CRC).
//! - `segments`: segment files, `wal.<index>`, each holding a fixed LSN range.
//! - `reader`: scanning the log back, and proving where it ends (a torn tail, or damage).
//! - this module: the writer and its flusher.
//!
//! **LSN** = byte position in the endless log stream. Segment `n` holds LSNs
//! `[n * segment_bytes, (n + 1) * segment_bytes)`.
//!
//! **Insertion scales with sessions** (Aether's and PostgreSQL's idea, no mutex around the copy):
//! a session reserves its bytes with one atomic add on `reserved`, copies its record into a
//! ring of `AtomicU64` words in parallel with everyone else, and publishes it by storing the
//! header word last (release). The flusher scans headers from where it stopped: the first zero
//! header is a record still being copied, so everything before it is complete. After writing a
//! range out it zeroes those ring words and advances `freed`, which gives the space back.
//!
//! **Group commit**: one flusher thread writes the complete prefix, calls `sync_data` once,
//! and then publishes the new durable LSN and wakes exactly the waiters it covers (each
//! parked with its own LSN: `commit_wait`), handing long lists to a waker thread so the next
//! write and fdatasync start at once: all commits that arrived during the previous fdatasync
//! share the next one. With few sessions the next flush also waits, briefly, for the group the last
//! one woke, and those committers spin rather than park, so the group stays whole instead of
//! splitting into two halves that take turns (`group`). Before each flush that carries
//! new records it appends a **flush mark** holding the durable end, the evidence `reader`
//! uses to tell damage from a torn tail.
//!
//! **Fail-stop**: if a write or fdatasync fails, the database's [`FailStop`] records why and
//! stops for good; every waiting and later commit gets that cause; nothing after the failure
//! is acknowledged (PostgreSQL's 2018 fsync lesson: never retry and carry on). Recovery after
//! a restart rebuilds the truth from what reached the disk.
//!
//! Invariants, asserted: `durable <= freed <= reserved` at all times; each of them only
//! grows; a published record's header is never zero.

mod commit_wait;
pub(crate) mod durable_mark;
mod group;
pub(crate) mod page_records;
mod reader;
mod record;
mod segments;

pub use reader::{LogEnd, LogReader};
pub use record::{Lsn, Record, RecordKind};
pub use segments::{list_segments, sync_segments};

use crate::error::{Error, Result};
use crate::failstop::FailStop;
use crate::format::{segment_index, segment_name};
use crate::stats::{Stats, WaitType};
use crate::storage::{BLOCK_BYTES, Storage, StorageFile};
use commit_wait::{DIRECT_WAKES_MAX, Waiters, Waker};
pub(crate) use group::GROUP_SESSIONS_MAX;
use group::{COMMIT_SPIN_MAX, GroupPlan};
use parking_lot::{Condvar, Mutex};
use record::{HEADER_BYTES, header_word, record_crc, round8};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Default segment size.
pub const SEGMENT_BYTES_DEFAULT: u64 = 64 << 20;
/// Default log buffer size.
pub const BUFFER_BYTES_DEFAULT: usize = 16 << 20;
/// The largest log buffer: a record is at most half of it, and a reader refuses to
/// believe a header that claims more (a bound on what one damaged header makes it read).
pub const BUFFER_BYTES_MAX: usize = 128 << 20;
/// The longest record any log holds: half the largest buffer.
pub const RECORD_BYTES_MAX: u64 = (BUFFER_BYTES_MAX / 2) as u64;
/// How long the flusher looks for a new commit before it sleeps (`Shared::wait_for_work`).
const FLUSHER_SPIN: Duration = Duration::from_micros(20);
/// How often a busy log writes its durable end to `log.durable` (`durable_mark`): after a
/// flush once the last mark is this old. One small write to the page cache per
/// millisecond at most, off the commit's wait (the commits are woken first).
const MARK_INTERVAL: Duration = Duration::from_millis(1);
/// Default bound on how long an `async` commit may stay only in memory.
pub const ASYNC_FLUSH_INTERVAL_DEFAULT: Duration = Duration::from_millis(10);

/// Log sizing and timing.
#[derive(Clone, Debug)]
pub struct WalOptions {
    /// Bytes per segment file (a multiple of 4096, at least 1 MiB).
    pub segment_bytes: u64,
    /// Bytes of the in-memory log buffer (a power of two, 1 MiB to 128 MiB). One record
    /// holds at most half of it; a larger transaction is logged in several records.
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
    /// Checks the sizes (see the fields).
    pub fn validate(&self) -> Result<()> {
        if self.segment_bytes < (1 << 20) || !self.segment_bytes.is_multiple_of(4096) {
            return Err(Error::InvalidOption(format!(
                "log segment of {} bytes: use a multiple of 4096, at least 1 MiB",
                self.segment_bytes
            )));
        }
        if self.buffer_bytes < (1 << 20)
            || self.buffer_bytes > BUFFER_BYTES_MAX
            || !self.buffer_bytes.is_power_of_two()
        {
            return Err(Error::InvalidOption(format!(
                "log buffer of {} bytes: use a power of two from 1 MiB to 128 MiB",
                self.buffer_bytes
            )));
        }
        Ok(())
    }

    /// The largest payload one record of this log holds (after the kind byte).
    pub fn record_payload_bytes_max(&self) -> usize {
        self.buffer_bytes / 2 - HEADER_BYTES as usize - 1 - 7
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
    /// Obsolete segments removed because more were free than the log will reuse
    /// (`Wal::release_before`).
    pub segments_removed: u64,
}

/// Where a log opened for appending starts, and what it may reuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalStart {
    /// The end of the valid log (`LogReader::find_end`): appends continue here, and
    /// anything the files hold past it (a torn write) is discarded.
    pub end: Lsn,
    /// Segments wholly below this are no longer needed by recovery and may be reused.
    pub keep_from: Lsn,
    /// The database's log salt (the catalog's), mixed into every record's checksum.
    pub salt: u64,
}

/// How far ahead of the log's end a segment file is zero-filled. An fdatasync that extends
/// a file also commits the file system's journal (the new size), which costs as much as the
/// data itself; writing zeros ahead makes that happen once per this many bytes, not once
/// per flush. (PostgreSQL zero-fills whole segments for the same reason.)
pub const PREALLOCATE_BYTES: u64 = 1 << 20;

/// A segment file the flusher writes.
struct OpenSegment {
    index: u64,
    file: Arc<dyn StorageFile>,
    // The file's length: written bytes, then zeros up to here.
    allocated: u64,
}

struct Segments {
    // Open segment files (the flusher writes at most two at once).
    open: Vec<OpenSegment>,
    // Obsolete segment indexes, ready to be renamed into new ones.
    free: Vec<u64>,
}

struct Shared {
    storage: Arc<dyn Storage>,
    options: WalOptions,
    salt: u64,
    ring: Box<[AtomicU64]>,
    // Next LSN to hand out.
    reserved: AtomicU64,
    // Everything below has been handed to the file (and its ring space zeroed).
    freed: AtomicU64,
    // Everything below is durable.
    durable: AtomicU64,
    // Highest LSN a committer waits for.
    requested: AtomicU64,
    stop: Arc<FailStop>,
    // Set (under `state`) when the log shuts down.
    shutdown: AtomicBool,
    // Guards the flusher's sleep and the appenders' wait for buffer space.
    state: Mutex<()>,
    // The flusher waits here for work.
    work: Condvar,
    // True while the flusher is (about to be) asleep on `work`: only then does a committer
    // take `state` to wake it.
    flusher_idle: AtomicBool,
    // Appenders wait here for buffer space.
    progress: Condvar,
    // Committers waiting for durability, each for its own LSN, and who wakes them.
    waiters: Waiters,
    // The commits the next flush expects (`GroupPlan::target`, published for committers
    // deciding whether to spin or park).
    group_target: AtomicUsize,
    // One flush at a time, by the flusher thread or by a committer that finds no flush
    // under way and does its own (see `Wal::wait_durable`).
    flush: Mutex<FlushState>,
    waker: Waker,
    segments: Mutex<Segments>,
    stats: Arc<Stats>,
    bytes: AtomicU64,
    flushes: AtomicU64,
    commits: AtomicU64,
    recycled: AtomicU64,
    removed: AtomicU64,
    // The lowest LSN reserved by a record that was never filled in (`u64::MAX`: none): its
    // wait for buffer space ended in a shutdown or stop. Nothing past it can ever be a
    // complete prefix, so a shutting-down flusher stops there instead of waiting for ever.
    abandoned: AtomicU64,
}

/// What a flush needs between flushes; whoever flushes holds it.
struct FlushState {
    // The bytes of the flush (reused): the tail of its first block already written, the
    // records taken out of the ring, zeros to the end of the last block (see `flush_once`).
    image: Vec<u8>,
    // The log's bytes from the start of the block holding the flushed end up to that end
    // (`tail_from` is that block's start; u64::MAX: not known yet, read from the file).
    tail: Vec<u8>,
    tail_from: Lsn,
    // The waiters a flush covers (reused).
    woken: Vec<std::thread::Thread>,
    // What the last flush expects of the next one's group (`group`).
    group: GroupPlan,
    // The end of the last flush mark: a new one is due once anyone appended after it.
    // (Where the log was opened, not where it is when the flusher first runs: that would
    // race the first appends, and a crash test's seed would not replay.)
    marked_to: Lsn,
    // The writer of `log.durable`, once the database turned the marks on, and when it
    // last wrote (see `note_durable_mark`).
    durable_marks: Option<durable_mark::MarkWriter>,
    durable_marked_at: Instant,
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

impl Wal {
    /// Opens the log for appending at `start.end`, which `LogReader::find_end` proved to be
    /// the end of the valid log: the torn write past it (if any) is cleared, so that no
    /// stale record can follow the new ones. Segments wholly below `start.keep_from` are
    /// kept for reuse. A failure of the log stops the database through `stop`.
    pub fn open(
        storage: Arc<dyn Storage>,
        options: WalOptions,
        start: WalStart,
        stats: Arc<Stats>,
        stop: Arc<FailStop>,
    ) -> Result<Wal> {
        options.validate()?;
        assert!(
            start.end.is_multiple_of(8),
            "the log ends on a record boundary"
        );
        let free = clear_past_end(&*storage, options.segment_bytes, start)?;
        let shared = Arc::new(Shared::new(storage, options, &start, free, stats, stop)?);
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
    ///
    /// A committer that finds no flush under way makes the flush itself (as a PostgreSQL
    /// backend does in XLogFlush): with few sessions that saves two thread hand-offs per
    /// commit, to the flusher and back, each a wake-up of an idle core. Otherwise it asks
    /// the flusher and parks until a flush covers it.
    pub fn wait_durable(&self, lsn: Lsn) -> Result<()> {
        self.wait_durable_as(lsn, false)
    }

    /// [`Wal::wait_durable`] for a committer that delegates its wake-up: of the delegated
    /// waiters a flush covers only the first is woken, and the caller promises that it
    /// wakes the others once it is done with their commits (the grouped apply; see
    /// `commit_wait`). A stop or shutdown still wakes every waiter.
    pub(crate) fn wait_durable_delegated(&self, lsn: Lsn) -> Result<()> {
        self.wait_durable_as(lsn, true)
    }

    fn wait_durable_as(&self, lsn: Lsn, delegated: bool) -> Result<()> {
        let s = &self.shared;
        if s.durable.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        let start = Instant::now();
        let _waiting = crate::stats::mark_waiting(WaitType::WriteLog, None);
        s.flush_inline(lsn);
        let mut registered = false;
        if s.durable.load(Ordering::Acquire) < lsn {
            s.request_flush(lsn);
            // After a stop or shutdown nothing drains the list any more: never register.
            if !s.stop.is_stopped() && !s.shutdown.load(Ordering::Acquire) {
                // Registered before the last look at `durable` (see `commit_wait`).
                s.waiters.register(lsn, delegated);
                registered = true;
            }
        }
        s.spin_for_durable(lsn);
        while s.durable.load(Ordering::Acquire) < lsn
            && !s.stop.is_stopped()
            && !s.shutdown.load(Ordering::Acquire)
        {
            std::thread::park();
        }
        s.stats
            .record_wait(WaitType::WriteLog, None, crate::stats::elapsed_ns(start));
        if registered && s.durable.load(Ordering::Acquire) < lsn {
            // Giving up: the registration must not stay for a flush to pick (see
            // `Waiters::deregister`). If it is gone already, either a flush covered this
            // commit after the look above (`durable` was published first, and a delegated
            // waiter may be the one the flush counts on: the look below sees it and the
            // commit goes on as durable), or a stop or shutdown took out and woke every
            // waiter.
            s.waiters.deregister(lsn);
        }
        if s.durable.load(Ordering::Acquire) >= lsn {
            Ok(())
        } else if s.stop.is_stopped() {
            Err(s.stop.error())
        } else {
            Err(Error::InvalidOption(
                "the log was shut down before the commit became durable".into(),
            ))
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

    #[cfg(test)]
    /// Counts one more session of the log's database while the slot lives (see `group`).
    fn session_slot(&self) -> crate::stats::SessionSlot {
        self.shared.stats.session_slot()
    }

    /// Everything below this is durable.
    pub fn durable(&self) -> Lsn {
        self.shared.durable.load(Ordering::Acquire)
    }

    /// Turns on the log's durable marks (`durable_mark`): from now on the flushes write the
    /// log's durable end to `log.durable`, and [`Wal::sync_durable_mark`] makes it durable.
    pub fn start_durable_marks(&self) {
        let shared = &self.shared;
        let mut flush = shared.flush.lock();
        if flush.durable_marks.is_none() {
            let mut writer =
                durable_mark::MarkWriter::new(Arc::clone(&shared.storage), shared.salt);
            // Evidence, not a promise: a failure is tried again at the first mark.
            let _ = writer.prepare();
            flush.durable_marks = Some(writer);
        }
    }

    /// Brings `log.durable` up to the durable end and makes it durable (the checkpointer's
    /// tick). The fdatasync runs outside the flush's lock, so no flush waits for it. A
    /// failure is left for the next tick.
    pub fn sync_durable_mark(&self) {
        let file = {
            let mut flush = self.shared.flush.lock();
            self.shared.note_durable_mark(&mut flush, true);
            flush.durable_marks.as_mut().and_then(|m| m.unsynced_file())
        };
        if let Some(file) = file {
            let _ = file.sync_data();
        }
    }

    /// The largest payload one record holds.
    pub fn record_payload_bytes_max(&self) -> usize {
        self.shared.options.record_payload_bytes_max()
    }

    /// Stops the database from outside the log (an apply after a durable commit failed, a
    /// checkpoint could not write the data files): `error` while doing `context` becomes the
    /// cause if it is the first, and everyone waiting on the log is woken to fail with it.
    pub fn stop(&self, context: &str, error: &Error) {
        self.shared.stop.stop_error(context, error);
        {
            let _state = self.shared.state.lock();
            self.shared.progress.notify_all();
            self.shared.work.notify_all();
        }
        self.shared.wake_all_waiters();
    }

    /// True once the database stopped (fail-stop).
    pub fn has_failed(&self) -> bool {
        self.shared.stop.is_stopped()
    }

    /// Counters for reports.
    pub fn counters(&self) -> WalCounters {
        let s = &self.shared;
        WalCounters {
            bytes: s.bytes.load(Ordering::Relaxed),
            flushes: s.flushes.load(Ordering::Relaxed),
            commits: s.commits.load(Ordering::Relaxed),
            segments_recycled: s.recycled.load(Ordering::Relaxed),
            segments_removed: s.removed.load(Ordering::Relaxed),
        }
    }

    /// After a checkpoint: segments wholly below `keep_from` are no longer needed by
    /// recovery; they become free for reuse (renamed into future segments). At most as
    /// many stay free as the log fills before the next checkpoint (`next_checkpoint_bytes`
    /// of log, and one more for the segment a checkpoint falls in); the oldest others are
    /// removed, so that a burst, or a checkpoint held back, does not keep its segments on
    /// disk for good (PostgreSQL's `min_wal_size` does the same job).
    pub fn release_before(&self, keep_from: Lsn, next_checkpoint_bytes: u64) {
        let s = &self.shared;
        let segment_bytes = s.options.segment_bytes;
        let surplus = {
            // Listed under the lock: the flusher renames free segments under it, and a
            // segment renamed away must not be pushed back as free.
            let mut segments = s.segments.lock();
            let Ok(names) = s.storage.list() else {
                return; // nothing released; the next checkpoint tries again
            };
            for index in names.iter().filter_map(|n| segment_index(n)) {
                let obsolete = (index + 1) * segment_bytes <= keep_from;
                let open = segments.open.iter().any(|o| o.index == index);
                if obsolete && !open && !segments.free.contains(&index) {
                    segments.free.push(index);
                }
            }
            let keep = free_segments_kept(next_checkpoint_bytes, segment_bytes);
            take_surplus(&mut segments.free, keep)
        };
        // Removed without the lock, which every flush takes: a segment out of the free
        // list is never renamed, and the next release (checkpoints run one at a time)
        // lists it again only if its removal failed, which leaves it free as before. A
        // removal a crash undoes leaves one more obsolete segment; no sync is needed.
        for index in surplus {
            debug_assert!((index + 1) * segment_bytes <= keep_from);
            if s.storage.remove(&segment_name(index)).is_ok() {
                s.removed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Stops the flusher after a final flush.
    pub fn shutdown(&self) -> Result<()> {
        let result = match self.shared.stop.check() {
            Ok(()) => self.flush_all(),
            Err(error) => Err(error),
        };
        {
            let _state = self.shared.state.lock();
            self.shared.shutdown.store(true, Ordering::Release);
            self.shared.work.notify_all();
            self.shared.progress.notify_all();
        }
        if let Some(handle) = self.flusher.lock().take() {
            let _ = handle.join();
        }
        self.shared.wake_all_waiters();
        self.shared.waker.stop();
        result
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// Copies a record's body into the ring a word at a time: whole 8-byte words straight from
/// each part, and bytes through `word` only where a part ends mid-word (every insert appends
/// a record, and a byte-at-a-time copy was 5 % of a synced commit's CPU).
struct WordWriter<'a> {
    shared: &'a Shared,
    at: Lsn,
    word: [u8; 8],
    filled: usize,
}

impl WordWriter<'_> {
    fn push(&mut self, mut part: &[u8]) {
        if self.filled > 0 {
            let take = (8 - self.filled).min(part.len());
            self.word[self.filled..self.filled + take].copy_from_slice(&part[..take]);
            self.filled += take;
            part = &part[take..];
            if self.filled < 8 {
                return;
            }
            self.store(u64::from_le_bytes(self.word));
            self.filled = 0;
        }
        let mut chunks = part.chunks_exact(8);
        for chunk in &mut chunks {
            let word: [u8; 8] = chunk.try_into().unwrap_or([0; 8]);
            self.store(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        self.word[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    /// Stores the last, partial word, zero-padded.
    fn finish(mut self) {
        if self.filled > 0 {
            self.word[self.filled..].fill(0);
            self.store(u64::from_le_bytes(self.word));
        }
    }

    fn store(&mut self, word: u64) {
        self.shared.store_word(self.at, word, Ordering::Relaxed);
        self.at += 8;
    }
}

/// How many free segments a log keeps for reuse: enough for the log that fills them
/// before the next checkpoint releases more, and one for the segment it falls in.
fn free_segments_kept(next_checkpoint_bytes: u64, segment_bytes: u64) -> usize {
    let segments = next_checkpoint_bytes
        .div_ceil(segment_bytes)
        .saturating_add(1);
    usize::try_from(segments).unwrap_or(usize::MAX)
}

/// Takes from `free` all but the `keep` newest segments, and returns them, oldest first.
/// The newest stay: `inspect log` shows the segments that run unbroken up to the end.
fn take_surplus(free: &mut Vec<u64>, keep: usize) -> Vec<u64> {
    if free.len() <= keep {
        return Vec::new();
    }
    free.sort_unstable();
    let surplus: Vec<u64> = free.drain(..free.len() - keep).collect();
    debug_assert!(surplus.iter().all(|old| free.iter().all(|kept| old < kept)));
    surplus
}

/// Clears what the segment files hold past the recovered end (a torn write) and returns
/// the segments free for reuse. Later segments are removed: reused in place, one could
/// validate again where new records happen to end at its start. The segment holding the
/// end is cut there, for the same reason.
fn clear_past_end(storage: &dyn Storage, segment_bytes: u64, start: WalStart) -> Result<Vec<u64>> {
    let end_index = start.end / segment_bytes;
    let mut free = Vec::new();
    for index in list_segments(storage)? {
        if index > end_index {
            storage
                .remove(&segment_name(index))
                .map_err(|e| Error::io("removing a torn log segment", e))?;
        } else if (index + 1) * segment_bytes <= start.keep_from.min(start.end) {
            free.push(index);
        }
    }
    storage
        .sync_dir()
        .map_err(|e| Error::io("syncing the log directory", e))?;
    let name = segment_name(end_index);
    if storage
        .exists(&name)
        .map_err(|e| Error::io("looking for the log tail", e))?
    {
        let file = storage
            .open(&name, false)
            .map_err(|e| Error::io("opening the log tail", e))?;
        let offset = start.end % segment_bytes;
        if file
            .len()
            .map_err(|e| Error::io("reading the log tail", e))?
            > offset
        {
            file.set_len(offset)
                .and_then(|()| file.sync_data())
                .map_err(|e| Error::io("truncating the log tail", e))?;
        }
    }
    Ok(free)
}

impl Shared {
    fn new(
        storage: Arc<dyn Storage>,
        options: WalOptions,
        start: &WalStart,
        free: Vec<u64>,
        stats: Arc<Stats>,
        stop: Arc<FailStop>,
    ) -> Result<Shared> {
        let words = options.buffer_bytes / 8;
        Ok(Shared {
            storage,
            ring: (0..words).map(|_| AtomicU64::new(0)).collect(),
            reserved: AtomicU64::new(start.end),
            freed: AtomicU64::new(start.end),
            durable: AtomicU64::new(start.end),
            requested: AtomicU64::new(start.end),
            stop,
            shutdown: AtomicBool::new(false),
            state: Mutex::new(()),
            work: Condvar::new(),
            flusher_idle: AtomicBool::new(false),
            progress: Condvar::new(),
            waiters: Waiters::default(),
            group_target: AtomicUsize::new(0),
            flush: Mutex::new(FlushState {
                image: Vec::new(),
                tail: Vec::new(),
                tail_from: u64::MAX,
                woken: Vec::new(),
                group: GroupPlan::none(),
                marked_to: start.end,
                durable_marks: None,
                durable_marked_at: Instant::now(),
            }),
            waker: Waker::start().map_err(|e| Error::io("starting the log waker", e))?,
            segments: Mutex::new(Segments {
                open: Vec::new(),
                free,
            }),
            stats,
            bytes: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            recycled: AtomicU64::new(0),
            removed: AtomicU64::new(0),
            abandoned: AtomicU64::new(u64::MAX),
            salt: start.salt,
            options,
        })
    }

    /// Asks the flusher for durability up to `lsn`, waking it only if it sleeps. (The
    /// flusher sets `flusher_idle` before its last look at `requested`, this sets `requested`
    /// before it looks at `flusher_idle`: one of the two sees the other.)
    fn request_flush(&self, lsn: Lsn) {
        self.requested.fetch_max(lsn, Ordering::SeqCst);
        if self.flusher_idle.load(Ordering::SeqCst) {
            let _state = self.state.lock();
            self.work.notify_one();
        }
    }

    /// Wakes every waiting committer (the log stopped or shuts down).
    fn wake_all_waiters(&self) {
        let mut threads = Vec::new();
        self.waiters.take_all(&mut threads);
        threads.drain(..).for_each(|t| t.unpark());
    }

    fn ring_bytes(&self) -> u64 {
        (self.ring.len() * 8) as u64
    }

    fn append(&self, kind: RecordKind, parts: &[&[u8]]) -> Result<(Lsn, Lsn)> {
        self.stop.check()?;
        let len = HEADER_BYTES + 1 + parts.iter().map(|p| p.len() as u64).sum::<u64>();
        let padded = round8(len);
        if padded > self.ring_bytes() / 2 {
            return Err(Error::InvalidOption(format!(
                "log record of {len} bytes is larger than half the log buffer ({} bytes)",
                self.ring_bytes()
            )));
        }
        let start = self.reserved.fetch_add(padded, Ordering::SeqCst);
        let end = start + padded;
        if end - self.freed.load(Ordering::Acquire) > self.ring_bytes() {
            self.wait_for_space(end).inspect_err(|_| {
                // Refused only at a shutdown or a stop: the range stays unfilled.
                debug_assert!(self.shutdown.load(Ordering::Acquire) || self.stop.is_stopped());
                self.abandoned.fetch_min(start, Ordering::SeqCst);
            })?;
        }
        self.fill(start, len, kind, parts);
        Ok((start, end))
    }

    /// Appends without ever waiting: `None` when the buffer has no room now. The flusher
    /// uses it for its marks (it must never wait for space that only it can free).
    fn try_append(&self, kind: RecordKind, parts: &[&[u8]]) -> Option<(Lsn, Lsn)> {
        let len = HEADER_BYTES + 1 + parts.iter().map(|p| p.len() as u64).sum::<u64>();
        let padded = round8(len);
        let mut start = self.reserved.load(Ordering::SeqCst);
        loop {
            if start + padded - self.freed.load(Ordering::Acquire) > self.ring_bytes() {
                return None;
            }
            match self.reserved.compare_exchange_weak(
                start,
                start + padded,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => break,
                Err(now) => start = now,
            }
        }
        self.fill(start, len, kind, parts);
        Some((start, start + padded))
    }

    /// Copies a reserved record into the ring and publishes it.
    fn fill(&self, start: Lsn, len: u64, kind: RecordKind, parts: &[&[u8]]) {
        let kind_byte = [kind as u8];
        // No allocation on this path (every insert appends): the kind byte is chained in.
        let body = || std::iter::once(&kind_byte[..]).chain(parts.iter().copied());
        let crc = body().fold(
            crc32c::crc32c(&(start ^ self.salt).to_le_bytes()),
            crc32c::crc32c_append,
        );
        debug_assert_eq!(
            crc,
            record_crc(self.salt, start, &body().collect::<Vec<_>>())
        );
        // Body words first, then the header word with release: the flusher trusts a record
        // only once it sees a non-zero header.
        let mut words = WordWriter {
            shared: self,
            at: start + HEADER_BYTES,
            word: [0u8; 8],
            filled: 0,
        };
        body().for_each(|part| words.push(part));
        words.finish();
        self.store_word(start, header_word(len, crc), Ordering::Release);
        self.bytes.fetch_add(round8(len), Ordering::Relaxed);
        if kind == RecordKind::TxnCommit {
            self.commits.fetch_add(1, Ordering::Relaxed);
        }
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

    fn wait_for_space(&self, end: Lsn) -> Result<()> {
        let start = Instant::now();
        let _waiting = crate::stats::mark_waiting(WaitType::LogBuffer, None);
        let ring_bytes = self.ring_bytes();
        let mut state = self.state.lock();
        while end - self.freed.load(Ordering::Acquire) > ring_bytes {
            self.stop.check()?;
            if self.shutdown.load(Ordering::Acquire) {
                return Err(Error::InvalidOption(
                    "the log was shut down while a record waited for buffer space".into(),
                ));
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

    /// The flusher thread: flush whenever a committer asks or the async interval passes.
    fn flush_loop(self: Arc<Self>) {
        loop {
            if self.wait_for_work() {
                return;
            }
            if self.stop.is_stopped() {
                // Whoever stopped the database (a data file, an apply), waiters learn it
                // here at the latest.
                {
                    let _state = self.state.lock();
                    self.progress.notify_all();
                }
                self.wake_all_waiters();
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            let mut state = self.flush.lock();
            self.gather_group(&state, 0);
            let flushed = self.flush_once(&mut state, 0);
            drop(state);
            if !flushed
                && (self.requested.load(Ordering::SeqCst) > self.durable.load(Ordering::Acquire)
                    || self.reserved.load(Ordering::SeqCst) > self.freed.load(Ordering::Acquire))
            {
                // A record is still being copied in: give its session the core.
                std::thread::yield_now();
            }
        }
    }

    /// A committer's own flushes, while no one else flushes and its commit is not yet
    /// durable. It stops at the first flush that finds nothing complete to write (a record
    /// before its own is still being copied in): the flusher then takes over.
    ///
    /// Only while few committers are parked: a leader's flush that covers many would wake
    /// them on the waker thread and apply its own row (the group's highest key) first,
    /// ahead of theirs, and those rows would then be stragglers that split the last leaf
    /// in half (64 sessions lost 3 points of leaf fill that way). With many parked, a
    /// flush is nearly always under way anyway and the flusher thread keeps the wake-ups
    /// in LSN order.
    fn flush_inline(&self, lsn: Lsn) {
        if self.waiters.len() > DIRECT_WAKES_MAX {
            return;
        }
        while self.durable.load(Ordering::Acquire) < lsn
            && !self.stop.is_stopped()
            && !self.shutdown.load(Ordering::Acquire)
        {
            let Some(mut state) = self.flush.try_lock() else {
                return;
            };
            self.gather_group(&state, 1);
            if !self.flush_once(&mut state, 1) {
                return;
            }
        }
    }

    /// A committer in a small group (`group`) waits for its flush spinning, yielding its
    /// core, rather than parked: it then runs again within microseconds of the flush, in
    /// time for the next one, where a parked thread takes longer than a flush to wake.
    /// Bounded by `COMMIT_SPIN_MAX`; the caller parks after it.
    fn spin_for_durable(&self, lsn: Lsn) {
        let target = self.group_target.load(Ordering::Relaxed);
        if !GroupPlan::spin_waits(target, self.stats.sessions()) {
            return;
        }
        self.yield_until(Instant::now() + COMMIT_SPIN_MAX, || {
            self.durable.load(Ordering::Acquire) >= lsn
        });
    }

    /// Before a flush, with the flush held: waits (bounded, yielding) until the group the
    /// last flush expects is waiting (`group`). `own` is 1 when the caller is a committer
    /// flushing for itself (it waits too, unregistered).
    fn gather_group(&self, state: &FlushState, own: usize) {
        let Some(until) = state.group.gather_until() else {
            return;
        };
        let target = state.group.target();
        self.yield_until(until, || self.waiters.len() + own >= target);
    }

    /// Yields the core until `done`, a stop or shutdown, or `until`, whichever comes first.
    fn yield_until(&self, until: Instant, done: impl Fn() -> bool) {
        while !done()
            && !self.stop.is_stopped()
            && !self.shutdown.load(Ordering::Acquire)
            && Instant::now() < until
        {
            std::thread::yield_now();
        }
    }

    /// One flush: a flush mark if anyone appended since the last, then the complete prefix
    /// of records written out, fdatasynced, published as durable, and the commits it covers
    /// woken. False if there was nothing complete to write. `own` is 1 when the caller is a
    /// committer flushing for itself (its commit is covered but was never registered).
    fn flush_once(&self, state: &mut FlushState, own: usize) -> bool {
        if self.reserved.load(Ordering::SeqCst) > state.marked_to {
            let durable = self.durable.load(Ordering::Acquire).to_le_bytes();
            if let Some((_, end)) = self.try_append(RecordKind::FlushMark, &[&durable]) {
                state.marked_to = end;
            }
        }
        let from = self.freed.load(Ordering::Acquire);
        let to = self.complete_prefix(from);
        if to == from {
            return false;
        }
        let start = self.image_start(state, from);
        state.image.clear();
        state
            .image
            .extend_from_slice(&state.tail[..(from - start) as usize]);
        self.take_from_ring(from, to, &mut state.image);
        match self.write_and_sync(start, to, state) {
            Ok(()) => {
                let before = self.durable.swap(to, Ordering::AcqRel);
                assert!(before <= to, "the durable end only grows");
                self.flushes.fetch_add(1, Ordering::Relaxed);
                // Exactly the commits this flush covers; handed off when many, so the
                // next write starts while they are woken.
                let covered = self.waiters.take_covered(before, to, &mut state.woken);
                state.group = GroupPlan::after_flush(
                    covered + own,
                    self.waiters.len(),
                    self.stats.sessions(),
                );
                self.group_target
                    .store(state.group.target(), Ordering::Relaxed);
                self.waker.wake(&mut state.woken);
                self.note_durable_mark(state, false);
            }
            // Fail-stop: never retry a failed fdatasync and carry on.
            Err((context, error)) => {
                self.stop.stop_io(context, &error);
                self.wake_all_waiters();
            }
        }
        true
    }

    /// Writes the durable end to `log.durable` (not synced: see `durable_mark`) when the
    /// marks are on and it moved, if the last mark is `MARK_INTERVAL` old or `now`.
    /// A failed write is left for the next one: the mark is evidence, not a promise.
    fn note_durable_mark(&self, state: &mut FlushState, now: bool) {
        let Some(marks) = &mut state.durable_marks else {
            return;
        };
        if !now && state.durable_marked_at.elapsed() < MARK_INTERVAL {
            return;
        }
        if let Ok(true) = marks.record(self.durable.load(Ordering::Acquire)) {
            state.durable_marked_at = Instant::now();
        }
    }

    /// Waits for a reason to flush. True when the flusher should exit: at shutdown once
    /// everything is out, or at once after a failure (what is left can never be written,
    /// and nobody waits for it).
    fn wait_for_work(&self) -> bool {
        let idle = || self.requested.load(Ordering::SeqCst) <= self.durable.load(Ordering::Acquire);
        let shutdown = || self.shutdown.load(Ordering::Acquire);
        // A session woken by the last flush usually commits again within microseconds:
        // look for it briefly before sleeping, so that its commit needs no futex wake.
        let spin_start = Instant::now();
        while idle() && !shutdown() && spin_start.elapsed() < FLUSHER_SPIN {
            std::hint::spin_loop();
        }
        self.flusher_idle.store(true, Ordering::SeqCst);
        let mut state = self.state.lock();
        let mut slept_idle = false;
        if idle() && !shutdown() {
            // Async commits: flush at least every interval even if nobody waits.
            slept_idle = self
                .work
                .wait_for(&mut state, self.options.async_flush_interval)
                .timed_out();
        }
        drop(state);
        self.flusher_idle.store(false, Ordering::SeqCst);
        if slept_idle && idle() {
            // A whole interval without a commit: the mark catches up with the last
            // flushes (not at every short pause: one session's commits pause after each
            // flush, and a write per commit cost it 5 %).
            if let Some(mut flush) = self.flush.try_lock() {
                self.note_durable_mark(&mut flush, true);
            }
        }
        let freed = self.freed.load(Ordering::Acquire);
        shutdown()
            && (self.stop.is_stopped()
                || freed >= self.reserved.load(Ordering::SeqCst)
                || freed >= self.abandoned.load(Ordering::SeqCst))
    }

    /// Where a flush from `from` writes from: the start of `from`'s block when the bytes
    /// before `from` in it are known (`state.tail`, read from the file at the first flush),
    /// so the write is whole blocks and can go direct (`StorageFile::write_durable_at`);
    /// otherwise `from` itself. Those bytes are durable already: rewriting them writes
    /// the same bytes, which a torn write cannot change (the page cache writes whole
    /// pages back anyway).
    fn image_start(&self, state: &mut FlushState, from: Lsn) -> Lsn {
        let block = from - from % BLOCK_BYTES;
        if state.tail_from != block || (state.tail.len() as u64) < from - block {
            state.tail.clear();
            state.tail_from = u64::MAX;
            if from > block && !self.read_tail(block, from, &mut state.tail) {
                return from;
            }
            state.tail_from = block;
        }
        debug_assert_eq!(state.tail.len() as u64, from - block);
        block
    }

    /// Reads the log's bytes `[block, from)` (within one segment) into `tail`; false if
    /// they cannot be read (the flush then writes from `from`, through the page cache).
    fn read_tail(&self, block: Lsn, from: Lsn, tail: &mut Vec<u8>) -> bool {
        let segment_bytes = self.options.segment_bytes;
        let Ok(file) = self.segment(block / segment_bytes, from % segment_bytes) else {
            return false;
        };
        tail.resize((from - block) as usize, 0);
        file.read_at(tail, block % segment_bytes).is_ok()
    }

    /// Copies `[from, to)` out of the ring onto the end of `image` and gives the space
    /// back.
    fn take_from_ring(&self, from: Lsn, to: Lsn, image: &mut Vec<u8>) {
        debug_assert!(self.durable.load(Ordering::Acquire) <= from);
        let mut at = from;
        while at < to {
            let word = self.load_word(at, Ordering::Relaxed);
            image.extend_from_slice(&word.to_le_bytes());
            self.store_word(at, 0, Ordering::Relaxed);
            at += 8;
        }
        // Ring space is free again (the words are zero); the data is in `image`.
        let before = self.freed.swap(to, Ordering::AcqRel);
        assert_eq!(before, from, "one flush at a time frees ring space");
        assert!(
            to <= self.reserved.load(Ordering::SeqCst),
            "freed <= reserved"
        );
        self.progress.notify_all();
    }

    /// The end of the run of complete records starting at `from`.
    fn complete_prefix(&self, from: Lsn) -> Lsn {
        // Never look past one ring length: the slot at `from + ring` is `from`'s own slot,
        // and reading it again would take the record at `from` for one a ring further on.
        let ring_bytes = self.ring_bytes();
        let limit = self.reserved.load(Ordering::SeqCst).min(from + ring_bytes);
        let mut at = from;
        while at < limit {
            let header = self.load_word(at, Ordering::Acquire);
            if header == 0 {
                break;
            }
            let len = header & u64::from(u32::MAX);
            debug_assert!(len > HEADER_BYTES, "a published record has a body");
            if at + round8(len) > from + ring_bytes {
                break; // cannot happen for a published record; never cross the bound
            }
            at += round8(len);
        }
        at
    }

    /// The file of segment `index`, open for writing, zero-filled at least `needed` bytes
    /// far (and `PREALLOCATE_BYTES` further, within the segment, whenever it is extended).
    fn segment(&self, index: u64, needed: u64) -> std::io::Result<Arc<dyn StorageFile>> {
        let mut segments = self.segments.lock();
        let at = match segments.open.iter().position(|o| o.index == index) {
            Some(at) => at,
            None => self.open_segment(&mut segments, index)?,
        };
        let open = &mut segments.open[at];
        if open.allocated < needed {
            let to = (needed + PREALLOCATE_BYTES).min(self.options.segment_bytes);
            // Zeros read as "no record": the reader's end of the log, never damage. Only
            // an optimisation: if they cannot be written (a nearly full disk), the log's
            // own bytes may still fit, and only their write may stop the database.
            // Written durably (direct where it can be): a flush's direct write must not
            // find dirty cached pages in its range, and the file's new size is then
            // committed here once, not by a flush.
            let zeros = vec![0u8; (to - needed) as usize];
            open.allocated = match open.file.write_durable_at(&zeros, needed) {
                Ok(()) => to,
                Err(_) => needed,
            };
        }
        Ok(Arc::clone(&open.file))
    }

    /// Opens segment `index` (renaming a free one into it where it does not exist yet) and
    /// returns its place in `segments.open`.
    fn open_segment(&self, segments: &mut Segments, index: u64) -> std::io::Result<usize> {
        let name = segment_name(index);
        // A stale segment reused in place must never be renamed away later.
        segments.free.retain(|free| *free != index);
        if !self.storage.exists(&name)?
            && let Some(old) = segments.free.pop()
        {
            debug_assert!(old < index, "only segments before the log's end are reused");
            self.storage.rename(&segment_name(old), &name)?;
            self.recycled.fetch_add(1, Ordering::Relaxed);
        }
        let file = self.storage.open(&name, true)?;
        // A new (or renamed) segment must survive a crash before records in it count.
        self.storage.sync_dir()?;
        let allocated = file.len()?;
        segments.open.retain(|o| o.index + 1 >= index);
        segments.open.push(OpenSegment {
            index,
            file,
            allocated,
        });
        Ok(segments.open.len() - 1)
    }

    /// Writes a flush's image (the log from `start` to `to`, padded with zeros to a whole
    /// block when `start` is a block's start) durably, and keeps the new tail for the next
    /// flush; on failure, what it was doing.
    fn write_and_sync(
        &self,
        start: Lsn,
        to: Lsn,
        state: &mut FlushState,
    ) -> Result<(), (String, std::io::Error)> {
        let image = &mut state.image;
        debug_assert_eq!(image.len() as u64, to - start);
        if start.is_multiple_of(BLOCK_BYTES) {
            // Zeros past the end read as "no record": the log's end, never damage.
            image.resize(round_up(image.len() as u64, BLOCK_BYTES) as usize, 0);
        }
        let segment_bytes = self.options.segment_bytes;
        let mut written = 0usize;
        while written < image.len() {
            let lsn = start + written as u64;
            let index = lsn / segment_bytes;
            let offset = lsn % segment_bytes;
            let room = (segment_bytes - offset) as usize;
            let chunk = room.min(image.len() - written);
            let name = || segment_name(index);
            let file = self
                .segment(index, offset + chunk as u64)
                .map_err(|e| (format!("creating log segment {}", name()), e))?;
            file.write_durable_at(&image[written..written + chunk], offset)
                .map_err(|e| {
                    (
                        format!(
                            "writing and syncing log segment {} at byte {offset}",
                            name()
                        ),
                        e,
                    )
                })?;
            written += chunk;
        }
        // The next flush starts at `to`: keep the bytes of its block before it.
        let block = to - to % BLOCK_BYTES;
        state.tail.clear();
        if block >= start {
            let kept = (block - start) as usize..(to - start) as usize;
            state.tail.extend_from_slice(&image[kept]);
            state.tail_from = block;
        } else {
            state.tail_from = u64::MAX;
        }
        Ok(())
    }
}

/// `n` rounded up to a multiple of `unit`.
fn round_up(n: u64, unit: u64) -> u64 {
    n.div_ceil(unit) * unit
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{CrashMode, FaultOp, MemStorage};

    fn open_at(mem: &Arc<MemStorage>, end: Lsn, keep_from: Lsn) -> Wal {
        let start = WalStart {
            end,
            keep_from,
            salt: 0,
        };
        Wal::open(
            mem.clone(),
            options(),
            start,
            Stats::new(),
            Arc::new(FailStop::new()),
        )
        .expect("open")
    }

    fn open(mem: &Arc<MemStorage>) -> Wal {
        open_at(mem, 0, 0)
    }

    /// A new log with segments of `segment_bytes` (the default options otherwise).
    fn open_with_segments(mem: &Arc<MemStorage>, segment_bytes: u64) -> Wal {
        let options = WalOptions {
            segment_bytes,
            ..options()
        };
        let start = WalStart {
            end: 0,
            keep_from: 0,
            salt: 0,
        };
        Wal::open(
            mem.clone(),
            options,
            start,
            Stats::new(),
            Arc::new(FailStop::new()),
        )
        .expect("open")
    }

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

    /// The valid records from LSN 0 (flush marks left out) and where they end.
    fn read_all(storage: &dyn Storage) -> (Vec<(Lsn, Vec<u8>)>, Lsn) {
        read_from(storage, 0)
    }

    fn read_from(storage: &dyn Storage, from: Lsn) -> (Vec<(Lsn, Vec<u8>)>, Lsn) {
        read_records(storage, from, 1 << 20)
    }

    fn read_from_segments(storage: &dyn Storage, segment_bytes: u64) -> (Vec<(Lsn, Vec<u8>)>, Lsn) {
        read_records(storage, 0, segment_bytes)
    }

    fn read_records(
        storage: &dyn Storage,
        from: Lsn,
        segment_bytes: u64,
    ) -> (Vec<(Lsn, Vec<u8>)>, Lsn) {
        let mut records = Vec::new();
        let end = LogReader::new(storage, segment_bytes, 0)
            .scan_prefix(from, |r| {
                if r.kind != RecordKind::FlushMark {
                    records.push((r.lsn, r.payload.to_vec()));
                }
                Ok(())
            })
            .expect("scan");
        (records, end)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// A record appended in parts of any lengths reads back as the parts joined: the
        /// word-at-a-time copy into the ring carries bytes across part and word boundaries.
        #[test]
        fn parts_of_any_length_read_back_joined(
            records in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..20), 1..6),
                1..8,
            )
        ) {
            let mem = MemStorage::new(41);
            let wal = open(&mem);
            let mut expected = Vec::new();
            for parts in &records {
                let slices: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
                let (lsn, end) = wal.append(RecordKind::TxnCommit, &slices).expect("append");
                wal.wait_durable(end).expect("durable");
                expected.push((lsn, parts.concat()));
            }
            wal.shutdown().expect("shutdown");
            let (read, _) = read_all(&*mem);
            proptest::prop_assert_eq!(read, expected);
        }
    }

    #[test]
    fn records_from_many_threads_are_durable_and_read_back_in_order() {
        let mem = MemStorage::new(1);
        let wal = open(&mem);
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

    /// Eight sessions of a small database (so flushes gather their group and committers
    /// spin: `group`), each committing one record at a time: every commit is durable when
    /// acknowledged and the log holds exactly what was appended.
    #[test]
    fn a_small_group_of_sessions_commits_every_record() {
        let mem = MemStorage::new(3);
        let wal = open(&mem);
        let slots: Vec<_> = (0..8).map(|_| wal.session_slot()).collect();
        let mut all = append_from_threads(400, |t, i| {
            let payload: Vec<u8> = std::iter::repeat_n(t, (i % 40) as usize + 1).collect();
            let (lsn, end) = wal
                .append(RecordKind::TxnCommit, &[&payload])
                .expect("append");
            wal.wait_durable(end).expect("durable");
            assert!(wal.durable() >= end, "acknowledged only once durable");
            (lsn, payload)
        });
        drop(slots);
        wal.shutdown().expect("shutdown");
        all.sort();
        let (read, _) = read_all(&*mem);
        assert!(
            read == all,
            "the log does not hold exactly what was committed"
        );
    }

    /// A flush that expects a group of eight, of which only one session still commits,
    /// waits a bounded time for the rest: each lone commit is still acknowledged.
    #[test]
    fn a_group_that_never_comes_back_holds_no_commit_for_long() {
        let mem = MemStorage::new(4);
        let wal = Arc::new(open(&mem));
        let _slots: Vec<_> = (0..8).map(|_| wal.session_slot()).collect();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let committer = Arc::clone(&wal);
        let handle = std::thread::spawn(move || {
            for i in 0..200u32 {
                // As if the last flush had covered a group of eight.
                {
                    let mut state = committer.shared.flush.lock();
                    state.group = GroupPlan::after_flush(8, 0, 8);
                    committer.shared.group_target.store(8, Ordering::Relaxed);
                }
                let (_, end) = committer
                    .append(RecordKind::TxnCommit, &[&i.to_le_bytes()])
                    .expect("append");
                committer.wait_durable(end).expect("durable");
            }
            done_tx.send(()).expect("send");
        });
        // 200 commits of at most one bounded gather and one bounded spin each: well under
        // a second; a gather without its bound never returns.
        done_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("lone commits were held waiting for a group that never came");
        handle.join().expect("committer");
    }

    /// The ring exactly full, and one more record reserved by a session now waiting for
    /// space: the complete prefix ends at one ring length. (Reading on, the flusher once
    /// took the record in the first slot for one a ring further on, and lost records.)
    #[test]
    fn the_complete_prefix_never_reaches_past_one_ring_length() {
        let ring_words = (1usize << 20) / 8;
        let mut options = options();
        options.buffer_bytes = ring_words * 8;
        let start = WalStart {
            end: 0,
            keep_from: 0,
            salt: 0,
        };
        let stop = Arc::new(FailStop::new());
        let shared = Shared::new(
            MemStorage::new(10),
            options,
            &start,
            Vec::new(),
            Stats::new(),
            stop,
        )
        .expect("log state");
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
        let wal = open(&mem);
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
            let wal = open(&mem);
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
        let wal = open(&mem);
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
    /// records: reopening removes it (reused in place, one of its records could validate
    /// again where new records happen to end at its start), and the new log ends where its
    /// own records end.
    #[test]
    fn stale_later_segments_never_come_back() {
        let mem = MemStorage::new(12);
        let wal = open(&mem);
        let old = vec![0xAAu8; 4087]; // 4096-byte records
        for _ in 0..400 {
            wal.append(RecordKind::PageImages, &[&old]).expect("append");
        }
        wal.shutdown().expect("shutdown");
        drop(wal);
        assert!(mem.exists("wal.0000000000000001").expect("exists"));
        // Reopen as if recovery had stopped at a record in segment 0.
        let (records, _) = read_all(&*mem);
        let cut = records[100].0;
        let wal = open_at(&mem, cut, cut);
        assert!(
            !mem.exists("wal.0000000000000001").expect("exists"),
            "the previous run's later segment was removed"
        );
        let new = vec![0x55u8; 4087];
        for _ in 0..200 {
            wal.append(RecordKind::PageImages, &[&new]).expect("append");
        }
        wal.flush_all().expect("flush");
        let (read, end) = read_from(&*mem, cut);
        assert_eq!(
            end,
            wal.end(),
            "nothing of the previous run after the new end"
        );
        assert_eq!(read.len(), 200);
        assert!(read.iter().all(|(_, payload)| payload == &new));
    }

    #[test]
    fn shutdown_after_a_failed_write_returns() {
        let mem = MemStorage::new(6);
        let wal = open(&mem);
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

    /// Appends that race a shutdown: a record that reserved its range and then found the
    /// log shut down while it waited for buffer space leaves that range unfilled. The
    /// flusher must not wait for it to be filled (it never will be): shutdown returns.
    #[test]
    fn shutdown_returns_while_appends_wait_for_buffer_space() {
        for round in 0..20 {
            let mem = MemStorage::new(round);
            let wal = Arc::new(
                Wal::open(
                    mem.clone(),
                    options(),
                    WalStart {
                        end: 0,
                        keep_from: 0,
                        salt: 0,
                    },
                    Stats::new(),
                    Arc::new(FailStop::new()),
                )
                .expect("open"),
            );
            // Records of almost half the ring: nearly every other append waits for space.
            let body = vec![7u8; (512 << 10) - 64];
            let appenders: Vec<_> = (0..4)
                .map(|_| {
                    let (wal, body) = (Arc::clone(&wal), body.clone());
                    std::thread::spawn(move || {
                        while wal.append(RecordKind::TxnCommit, &[&body]).is_ok() {
                            if wal.shared.shutdown.load(Ordering::Acquire) {
                                break;
                            }
                        }
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_millis(2));
            let (tx, rx) = std::sync::mpsc::channel();
            let closing = Arc::clone(&wal);
            std::thread::spawn(move || {
                let _ = closing.shutdown();
                let _ = tx.send(());
            });
            rx.recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| {
                    panic!("round {round}: shutdown hung behind an abandoned record")
                });
            for appender in appenders {
                appender.join().expect("appender");
            }
        }
    }

    /// The flush's block logic on a real file (direct writes where the file system takes
    /// them): many small flushes that each rewrite the start of their block, segment
    /// boundaries crossed mid-flush, and a reopen in the middle of a block, whose first
    /// flush reads that block's start back from the file. Every record must read back.
    #[test]
    fn a_real_files_log_keeps_every_record_across_blocks_segments_and_a_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let storage: Arc<dyn Storage> =
            Arc::new(crate::storage::StdStorage::open_dir(dir.path(), true).expect("dir"));
        let segment_bytes = 1 << 20;
        let open_real = |end: Lsn| {
            let options = WalOptions {
                segment_bytes,
                ..options()
            };
            let start = WalStart {
                end,
                keep_from: 0,
                salt: 0,
            };
            Wal::open(
                Arc::clone(&storage),
                options,
                start,
                Stats::new(),
                Arc::new(FailStop::new()),
            )
            .expect("open")
        };
        let mut expected = Vec::new();
        let mut append_and_flush = |wal: &Wal, count: usize, seed: u8| {
            for i in 0..count {
                // 1..=3,000 bytes: some records cross a block, some a segment.
                let len = 1 + (i * 997 + usize::from(seed) * 31) % 3_000;
                let payload = vec![seed.wrapping_add(i as u8); len];
                let (lsn, end) = wal
                    .append(RecordKind::PageImages, &[&payload])
                    .expect("append");
                wal.wait_durable(end).expect("durable");
                expected.push((lsn, payload));
            }
        };
        let wal = open_real(0);
        append_and_flush(&wal, 900, 1);
        wal.shutdown().expect("shutdown");
        let end = wal.end();
        drop(wal);
        assert!(end > segment_bytes, "a segment boundary was crossed");
        assert!(end % BLOCK_BYTES != 0, "the reopen is mid-block: {end}");
        let wal = open_real(end);
        append_and_flush(&wal, 200, 2);
        wal.shutdown().expect("shutdown");
        drop(wal);
        let (records, read_end) = read_records(&*storage, 0, segment_bytes);
        assert_eq!(records.len(), expected.len(), "log ends at {read_end}");
        for ((lsn, got), (want_lsn, want)) in records.iter().zip(&expected) {
            assert_eq!(lsn, want_lsn);
            assert_eq!(got, want, "record at {lsn}");
        }
    }

    #[test]
    fn reopening_at_the_end_clears_the_stale_tail_and_recycles_segments() {
        let mem = MemStorage::new(5);
        let wal = open(&mem);
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
        let wal = open_at(&mem, cut, cut);
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
        let (read, end) = read_from(&*mem, cut);
        let first = read.first().map(|(lsn, _)| *lsn);
        assert_eq!(
            end,
            wal.end(),
            "the recycled segment's stale records do not validate"
        );
        assert_eq!(first, Some(cut));
    }

    /// A checkpoint that frees more segments than the log fills before the next one keeps
    /// only those it will reuse, the newest; the log still reads from the checkpoint, and
    /// the kept ones are renamed into new segments rather than new files made.
    #[test]
    fn surplus_free_segments_are_removed_the_newest_kept() {
        let mem = MemStorage::new(5);
        let wal = open(&mem);
        let big = vec![7u8; 100_000];
        let mut checkpoint = 0;
        while wal.end() < 9 << 20 {
            let (lsn, _) = wal.append(RecordKind::PageImages, &[&big]).expect("append");
            if checkpoint < 8 << 20 {
                checkpoint = lsn;
            }
        }
        wal.flush_all().expect("flush");
        let segment_files = |mem: &MemStorage| list_segments(mem).expect("list");
        assert_eq!(segment_files(&mem), (0..=9).collect::<Vec<u64>>());
        // A checkpoint in segment 8 frees segments 0..=7; 2 MiB to the next keeps three.
        wal.release_before(checkpoint, 2 << 20);
        assert_eq!(segment_files(&mem), (5..=9).collect::<Vec<u64>>());
        assert_eq!(wal.counters().segments_removed, 5);
        // Nothing more is removed while the free ones are within the bound.
        wal.release_before(checkpoint, 2 << 20);
        assert_eq!(wal.counters().segments_removed, 5);
        let (_, end) = read_from(&*mem, checkpoint);
        assert_eq!(end, wal.end(), "the log reads whole from the checkpoint");
        while wal.end() < 12 << 20 {
            wal.append(RecordKind::PageImages, &[&big]).expect("append");
        }
        wal.flush_all().expect("flush");
        assert_eq!(
            wal.counters().segments_recycled,
            3,
            "segments 10..=12 were made from free ones"
        );
        assert_eq!(segment_files(&mem), (8..=12).collect::<Vec<u64>>());
        let (_, end) = read_from(&*mem, checkpoint);
        assert_eq!(end, wal.end());
    }

    #[test]
    fn free_segments_kept_cover_the_log_before_the_next_checkpoint() {
        assert_eq!(free_segments_kept(256 << 20, 64 << 20), 5);
        assert_eq!(free_segments_kept((256 << 20) + 1, 64 << 20), 6);
        assert_eq!(free_segments_kept(0, 64 << 20), 1);
        assert_eq!(
            free_segments_kept(u64::MAX, 1 << 20),
            (u64::MAX >> 20) as usize + 2
        );
        let mut free = vec![9, 2, 5, 7];
        assert_eq!(take_surplus(&mut free, 2), [2, 5]);
        assert_eq!(free, [7, 9]);
        assert!(take_surplus(&mut free, 2).is_empty());
        assert!(take_surplus(&mut free, 5).is_empty());
        assert_eq!(free, [7, 9]);
    }

    fn reader(mem: &MemStorage) -> LogReader<'_> {
        reader_of(mem, 1 << 20)
    }

    fn reader_of(mem: &MemStorage, segment_bytes: u64) -> LogReader<'_> {
        LogReader::new(mem, segment_bytes, 0)
    }

    /// A log of `records` 320-byte commit records, each tenth one waited for (so flush
    /// marks follow), shut down cleanly over about 2.5 segments. Returns the records' LSNs
    /// and the log's end.
    fn written_log(mem: &Arc<MemStorage>, records: u32) -> (Vec<Lsn>, Lsn) {
        let wal = open(mem);
        let mut lsns = Vec::new();
        for i in 0..records {
            let (lsn, end) = wal
                .append(RecordKind::TxnCommit, &[&i.to_le_bytes(), &[3u8; 300]])
                .expect("append");
            lsns.push(lsn);
            if i % 10 == 9 {
                wal.wait_durable(end).expect("durable");
            }
        }
        wal.shutdown().expect("shutdown");
        (lsns, wal.end())
    }

    /// Flips one byte inside the record at `lsn` (past its header), durably.
    fn flip_byte_in_record(mem: &MemStorage, lsn: Lsn) {
        let name = segment_name(lsn / (1 << 20));
        let offset = lsn % (1 << 20) + 12;
        let bytes = mem.read_file(&name).expect("read");
        let old = bytes[usize::try_from(offset).expect("offset")];
        mem.damage(&name, offset, &[old ^ 0x10]).expect("damage");
    }

    #[test]
    fn a_clean_log_ends_where_it_was_written_and_finding_it_changes_nothing() {
        let mem = MemStorage::new(20);
        let (_, end) = written_log(&mem, 8000);
        assert!(end > 2 << 20, "the log spans three segments");
        let ops = mem.change_ops();
        let found = reader(&mem).find_end(0, end).expect("a clean log");
        assert_eq!(found, LogEnd { end, torn_bytes: 0 });
        assert_eq!(mem.change_ops(), ops, "finding the end changed nothing");
        let mut marks = 0;
        reader(&mem)
            .scan(0, end, |r| {
                marks += u32::from(r.kind == RecordKind::FlushMark);
                Ok(())
            })
            .expect("scan");
        assert!(marks >= 100, "a flush mark per flush, {marks} found");
    }

    #[test]
    fn damage_with_durable_log_after_it_is_corruption_naming_file_and_offset() {
        for (seed, victim) in [(21, 10usize), (22, 4000), (23, 7900)] {
            let mem = MemStorage::new(seed);
            let (lsns, end) = written_log(&mem, 8000);
            let lsn = lsns[victim];
            flip_byte_in_record(&mem, lsn);
            let ops = mem.change_ops();
            match reader(&mem).find_end(0, 0) {
                Err(Error::CorruptLog {
                    file,
                    offset,
                    lsn: at,
                    reason,
                }) => {
                    assert_eq!(&*file, segment_name(lsn / (1 << 20)));
                    assert_eq!((offset, at), (lsn % (1 << 20), lsn));
                    assert!(reason.contains("flush mark"), "{reason}");
                }
                other => panic!("record {victim} of a log ending at {end}: {other:?}"),
            }
            assert_eq!(mem.change_ops(), ops, "nothing was changed");
        }
    }

    /// Flushes write inside zero-filled space: the segment grows once per
    /// `PREALLOCATE_BYTES`, not once per flush (each growth costs the file system a journal
    /// commit at the fdatasync), and the zeros read back as the end of the log.
    #[test]
    fn flushes_write_inside_zero_filled_space() {
        let mem = MemStorage::new(31);
        let wal = open_with_segments(&mem, 8 << 20);
        let mut lengths = Vec::new();
        let mut end = 0;
        while end < 3 * PREALLOCATE_BYTES {
            end = wal
                .append(RecordKind::TxnCommit, &[&[5u8; 4000]])
                .expect("append")
                .1;
            wal.wait_durable(end).expect("durable");
            let len = mem.read_file(&segment_name(0)).expect("segment").len() as u64;
            assert!(len >= end, "the durable log lies inside the file");
            lengths.push(len);
        }
        lengths.dedup();
        assert!(
            lengths.len() <= 4,
            "{} flushes, {} file lengths, the first {:?}",
            end / 4000,
            lengths.len(),
            &lengths[..8.min(lengths.len())]
        );
        wal.shutdown().expect("shutdown");
        let found = reader_of(&mem, 8 << 20).find_end(0, 0).expect("end");
        assert_eq!(found.end, wal.end(), "zeros are the end, not damage");
        assert_eq!(found.torn_bytes, 0, "zero-filled space is not a torn write");
    }

    /// A disk with room for the log's records but not for the zeros written ahead of
    /// them: commits still succeed (the zero-fill is only an optimisation, and its failure
    /// must not stop the database).
    #[test]
    fn a_disk_too_full_for_the_zero_fill_still_takes_commits() {
        let mem = MemStorage::new(33);
        mem.set_capacity(Some(64 << 10));
        let wal = open_with_segments(&mem, 8 << 20);
        for i in 0..20u32 {
            let (_, end) = wal
                .append(RecordKind::TxnCommit, &[&i.to_le_bytes(), &[1u8; 1000]])
                .expect("append");
            wal.wait_durable(end)
                .expect("a commit the disk has room for");
        }
        wal.shutdown().expect("shutdown");
        let (records, _) = read_from_segments(&*mem, 8 << 20);
        assert_eq!(records.len(), 20);
    }

    /// The documented limit: damage inside the last flush, with no later mark to prove it
    /// durable, reads as a torn tail.
    #[test]
    fn damage_inside_the_last_flush_reads_as_a_torn_tail() {
        let mem = MemStorage::new(24);
        let (lsns, end) = written_log(&mem, 8000);
        let last = *lsns.last().expect("records");
        flip_byte_in_record(&mem, last);
        let found = reader(&mem).find_end(0, 0).expect("a torn tail");
        assert_eq!(found.end, last);
        // Up to the last word with a non-zero byte: the final flush mark's last word (the
        // high bytes of a small LSN) is all zeros, like the zero-filled space after it.
        assert!(
            (end - last - 8..=end - last).contains(&found.torn_bytes),
            "torn bytes {} for a tail of {}",
            found.torn_bytes,
            end - last
        );
    }

    #[test]
    fn a_torn_tail_is_never_taken_for_damage_and_keeps_every_durable_record() {
        for seed in 0..45u64 {
            let mode = [CrashMode::DropAll, CrashMode::Reorder, CrashMode::Torn][seed as usize % 3];
            let mem = MemStorage::new(seed);
            let wal = open(&mem);
            let mut durable_up_to = 0;
            for i in 0..(2000 + seed as u32 * 97) {
                let (_, end) = wal
                    .append(RecordKind::TxnCommit, &[&i.to_le_bytes(), &[7u8; 500]])
                    .expect("append");
                if i % 13 == 0 {
                    wal.wait_durable(end).expect("durable");
                    durable_up_to = end;
                }
            }
            // Power fails with the flusher maybe mid-write; the old machine is gone.
            let rebooted = mem.reboot(mode, seed).expect("reboot");
            drop(wal);
            let found = reader(&rebooted)
                .find_end(0, durable_up_to)
                .unwrap_or_else(|e| panic!("seed {seed} {mode:?}: {e}"));
            assert!(
                found.end >= durable_up_to,
                "seed {seed}: lost durable records"
            );
        }
    }

    #[test]
    fn a_missing_segment_is_corruption() {
        let mem = MemStorage::new(25);
        let (lsns, end) = written_log(&mem, 8000);
        let seg = 1u64 << 20;
        let in_segment_1 = *lsns.iter().find(|l| **l > seg).expect("a record in wal.1");
        // The first segment, which the log starts in.
        let missing_first = mem.reboot(CrashMode::DropAll, 1).expect("copy");
        missing_first.remove(&segment_name(0)).expect("remove");
        let error = reader(&missing_first)
            .find_end(0, 0)
            .expect_err("wal.0 missing");
        assert!(error.to_string().contains(&segment_name(0)), "{error}");
        // Not needed when the log to recover starts in segment 1.
        let found = reader(&missing_first)
            .find_end(in_segment_1, 0)
            .expect("wal.0 is not needed");
        assert_eq!(found.end, end);
        // A gap: the middle segment, with the first and the last there.
        let gap = MemStorage::new(26);
        let (lsns, _) = written_log(&gap, 8000);
        gap.remove(&segment_name(1)).expect("remove");
        let (full, in_segment_0) = (gap, lsns[5]);
        let error = reader(&full).find_end(in_segment_0, 0).expect_err("gap");
        assert!(error.to_string().contains(&segment_name(1)), "{error}");
    }

    #[test]
    fn a_log_that_ends_before_the_redo_point_is_corruption() {
        let mem = MemStorage::new(26);
        let (_, end) = written_log(&mem, 100);
        assert!(reader(&mem).find_end(0, end).is_ok());
        let error = reader(&mem).find_end(0, end + 8).expect_err("short log");
        assert!(error.to_string().contains("redo point"), "{error}");
    }

    #[test]
    fn a_valid_record_of_an_unknown_kind_is_corruption() {
        let mem = MemStorage::new(27);
        let (_, end) = written_log(&mem, 100);
        let body = [200u8, 1, 2, 3];
        let crc = record_crc(0, end, &[&body]);
        let mut record = header_word(8 + body.len() as u64, crc)
            .to_le_bytes()
            .to_vec();
        record.extend_from_slice(&body);
        let file = mem.open(&segment_name(0), false).expect("open");
        file.write_at(&record, end).expect("write");
        let error = reader(&mem).find_end(0, 0).expect_err("unknown kind");
        assert!(error.to_string().contains("unknown kind 200"), "{error}");
    }

    #[test]
    fn another_salt_validates_nothing() {
        let mem = MemStorage::new(28);
        let (_, end) = written_log(&mem, 100);
        let foreign = LogReader::new(&*mem, 1 << 20, 0x5eed_5eed_5eed_5eed);
        assert_eq!(foreign.find_end(0, 0).map(|e| e.end).ok(), Some(0));
        assert!(foreign.find_end(0, end).is_err(), "short of the redo point");
    }

    #[test]
    fn a_failed_log_write_stops_with_its_cause() {
        let mem = MemStorage::new(29);
        let wal = open(&mem);
        let (_, end) = wal
            .append(RecordKind::TxnCommit, &[b"one"])
            .expect("append");
        wal.wait_durable(end).expect("durable");
        mem.set_capacity(Some(0));
        // The segment was zero-filled ahead: the disk fills up once the log outgrows it.
        let mut failure = None;
        for _ in 0..64 {
            let (_, end) = wal
                .append(RecordKind::TxnCommit, &[&[9u8; 70_000]])
                .expect("append");
            if let Err(error) = wal.wait_durable(end) {
                failure = Some(error);
                break;
            }
        }
        let message = failure.expect("disk full within 64 records").to_string();
        for needle in [
            "No space left",
            "wal.0000000000000001",
            "free space",
            "reopen",
        ] {
            assert!(message.contains(needle), "{needle:?} not in {message}");
        }
        let later = wal
            .append(RecordKind::TxnCommit, &[b"two"])
            .expect_err("stopped")
            .to_string();
        assert_eq!(later, message, "every later caller sees the first cause");
        mem.fail_after(FaultOp::Sync, Some(0));
        assert_eq!(wal.shutdown().expect_err("stopped").to_string(), message);
    }
}
