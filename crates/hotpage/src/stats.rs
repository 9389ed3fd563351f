//! Wait statistics and engine counters: per-thread shards, aggregated only on read.
//!
//! Seed 004 saw SQL Server's own statistics counters become a spinlock hot spot. Here every
//! thread writes only its own shard (plain load + store, no read-modify-write on a shared
//! line), and a reader sums the shards. Waits are recorded only on the slow path (a latch
//! that was not free), so the per-page map behind a mutex is touched only after a wait.
//!
//! A session's *current* wait (what `pg_stat_activity` shows while it waits) is a
//! [`CurrentWait`] the embedder installs in the session's thread; [`mark_waiting`], called
//! where a wait begins (only once the uncontended try has failed), writes it and clears it
//! when the wait ends. Without an installed slot a mark costs one thread-local read.

use crate::format::PageId;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// What a session waited for. Names follow SQL Server's so users recognise them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WaitType {
    /// Waiting for a shared latch on a page in the buffer pool.
    PageLatchSh,
    /// Waiting for an exclusive latch on a page in the buffer pool.
    PageLatchEx,
    /// Waiting for the session that holds a leaf's exclusive latch to insert this
    /// session's row along with its own (combining at a busy leaf; `access::combine`).
    PageLatchCombine,
    /// Waiting for a page to be read from disk.
    PageIoLatchSh,
    /// Waiting for the log to be flushed at commit.
    WriteLog,
    /// Waiting for space in the log buffer.
    LogBuffer,
    /// Waiting for a latch on a free-space-map page.
    FsmLatch,
    /// Waiting for a sequence's shared state.
    Sequence,
    /// Waiting to be admitted to a sequential key's last page.
    BtreeInsertFlowControl,
    /// Waiting for a buffer-pool frame: for the pool's admission control to let an
    /// operation in (every frame is promised to operations running now), or, rarely, for a
    /// latched frame to come free for eviction. A pool too small for the sessions.
    FreeBuffer,
    /// Waiting for another session's insert of the same supplied key to be applied or
    /// abandoned (the key locks of `db::unique`; SQL Server's exclusive key lock wait).
    KeyLock,
}

impl WaitType {
    /// Every wait type, in report order.
    pub const ALL: [WaitType; 11] = [
        WaitType::PageLatchSh,
        WaitType::PageLatchEx,
        WaitType::PageLatchCombine,
        WaitType::PageIoLatchSh,
        WaitType::WriteLog,
        WaitType::LogBuffer,
        WaitType::FsmLatch,
        WaitType::Sequence,
        WaitType::BtreeInsertFlowControl,
        WaitType::FreeBuffer,
        WaitType::KeyLock,
    ];

    /// The name shown in reports (SQL Server's spelling).
    pub fn name(self) -> &'static str {
        match self {
            WaitType::PageLatchSh => "PAGELATCH_SH",
            WaitType::PageLatchEx => "PAGELATCH_EX",
            WaitType::PageLatchCombine => "PAGELATCH_COMBINE",
            WaitType::PageIoLatchSh => "PAGEIOLATCH_SH",
            WaitType::WriteLog => "WRITELOG",
            WaitType::LogBuffer => "LOGBUFFER",
            WaitType::FsmLatch => "FSM_LATCH",
            WaitType::Sequence => "SEQUENCE",
            WaitType::BtreeInsertFlowControl => "BTREE_INSERT_FLOW_CONTROL",
            WaitType::FreeBuffer => "FREE_BUFFER",
            WaitType::KeyLock => "LCK_M_X",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Engine event counters (not waits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counter {
    /// B+tree page splits (leaf and inner).
    PageSplits,
    /// Leaf splits that moved only the right half out and left the rest of the page where
    /// it was (the tail of an ascending index; see `BTree::split_leaf_in_place`).
    SplitsInPlace,
    /// Pages read from disk into the pool.
    PagesRead,
    /// Pages written from the pool to disk.
    PagesWritten,
    /// Optimistic descents that had to restart because a page changed under them.
    OptimisticRestarts,
    /// Heap pages whose free-space-map category changed (including a new page's first).
    FsmUpdates,
    /// Rows a combining leader inserted in its groups (its own included).
    CombinedRows,
    /// Latch holds in which a combining leader inserted a group.
    CombineRounds,
    /// Rows of durable commits applied by the grouped apply, in key order (see
    /// `db::group_apply`).
    GroupedApplyRows,
    /// Batches the grouped apply applied those rows in.
    GroupedApplyBatches,
}

impl Counter {
    /// Every counter, in report order.
    pub const ALL: [Counter; 10] = [
        Counter::PageSplits,
        Counter::SplitsInPlace,
        Counter::PagesRead,
        Counter::PagesWritten,
        Counter::OptimisticRestarts,
        Counter::FsmUpdates,
        Counter::CombinedRows,
        Counter::CombineRounds,
        Counter::GroupedApplyRows,
        Counter::GroupedApplyBatches,
    ];

    /// The name shown in reports.
    pub fn name(self) -> &'static str {
        match self {
            Counter::PageSplits => "page_splits",
            Counter::SplitsInPlace => "splits_in_place",
            Counter::PagesRead => "pages_read",
            Counter::PagesWritten => "pages_written",
            Counter::OptimisticRestarts => "optimistic_restarts",
            Counter::FsmUpdates => "fsm_updates",
            Counter::CombinedRows => "combined_rows",
            Counter::CombineRounds => "combine_rounds",
            Counter::GroupedApplyRows => "grouped_apply_rows",
            Counter::GroupedApplyBatches => "grouped_apply_batches",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Nanoseconds since `start`, saturating (the unit every wait is recorded in).
pub fn elapsed_ns(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

const WAIT_TYPES: usize = WaitType::ALL.len();
const COUNTERS: usize = Counter::ALL.len();
/// Per-thread bound on the pages whose waits are tracked individually; waits on pages past
/// the bound still count in the per-type totals.
pub const HOT_PAGES_TRACKED_MAX: usize = 4096;

/// Waits on one page, summed over all wait types.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageWaits {
    /// How many waits.
    pub count: u64,
    /// Total time waited, in nanoseconds.
    pub wait_ns: u64,
}

#[derive(Default)]
struct Shard {
    wait_count: [AtomicU64; WAIT_TYPES],
    wait_ns: [AtomicU64; WAIT_TYPES],
    wait_ns_max: [AtomicU64; WAIT_TYPES],
    counters: [AtomicU64; COUNTERS],
    pages: Mutex<HashMap<PageId, PageWaits>>,
}

// Only the owning thread writes a shard, so load + store is an exact increment without a
// locked read-modify-write instruction.
fn bump(cell: &AtomicU64, by: u64) {
    cell.store(
        cell.load(Ordering::Relaxed).wrapping_add(by),
        Ordering::Relaxed,
    );
}

impl Shard {
    fn reset(&self) {
        for cell in self
            .wait_count
            .iter()
            .chain(&self.wait_ns)
            .chain(&self.wait_ns_max)
            .chain(&self.counters)
        {
            cell.store(0, Ordering::Relaxed);
        }
        self.pages.lock().clear();
    }
}

/// The statistics of one database: a registry of per-thread shards.
pub struct Stats {
    id: u64,
    shards: Mutex<Vec<Arc<Shard>>>,
    sessions: SessionCount,
}

/// How many sessions the database has open, counted by `SessionSlot`s (a gauge: `reset`
/// leaves it alone). On a cache line of its own: waits read it, and nothing else here may
/// be written beside it.
#[derive(Debug, Default)]
#[repr(align(64))]
struct SessionCount(AtomicUsize);

/// One session of the database, counted while it lives (`Stats::session_slot`).
#[derive(Debug)]
pub struct SessionSlot(Arc<Stats>);

impl Drop for SessionSlot {
    fn drop(&mut self) {
        let before = self.0.sessions.0.fetch_sub(1, Ordering::Relaxed);
        debug_assert!(before > 0, "a session slot is given back once");
    }
}

impl std::fmt::Debug for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stats").field("id", &self.id).finish()
    }
}

static NEXT_STATS_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    // (registry id, that registry's shard for this thread). A handful of entries at most.
    static LOCAL_SHARDS: RefCell<Vec<(u64, Arc<Shard>)>> = const { RefCell::new(Vec::new()) };
}

impl Stats {
    /// A new, empty registry.
    pub fn new() -> Arc<Stats> {
        Arc::new(Stats {
            id: NEXT_STATS_ID.fetch_add(1, Ordering::Relaxed),
            shards: Mutex::new(Vec::new()),
            sessions: SessionCount::default(),
        })
    }

    /// How many sessions the database has open now. Waits are shaped by it: the log keeps
    /// a commit group together only while there are few (`log::group`), and an insert
    /// spins on a busy leaf only while every session has a core (`btree::leaf_spins`).
    pub fn sessions(&self) -> usize {
        self.sessions.0.load(Ordering::Relaxed)
    }

    /// Counts one more open session while the slot lives.
    pub fn session_slot(self: &Arc<Self>) -> SessionSlot {
        self.sessions.0.fetch_add(1, Ordering::Relaxed);
        SessionSlot(Arc::clone(self))
    }

    fn with_shard<R>(&self, f: impl FnOnce(&Shard) -> R) -> R {
        LOCAL_SHARDS.with(|cell| {
            let mut local = cell.borrow_mut();
            if let Some((_, shard)) = local.iter().find(|(id, _)| *id == self.id) {
                return f(shard);
            }
            // Drop shards of registries that no longer exist (only this thread holds them).
            local.retain(|(_, shard)| Arc::strong_count(shard) > 1);
            let shard = Arc::new(Shard::default());
            self.shards.lock().push(Arc::clone(&shard));
            local.push((self.id, Arc::clone(&shard)));
            f(&shard)
        })
    }

    /// Takes a lock (or anything that may block) without timing the common uncontended
    /// case: `try_take` first, and only if it fails, `take` under a clock, recording the
    /// time as one wait of `wait_type` (and showing it as the thread's current wait while
    /// it lasts; see `mark_waiting`).
    pub fn timed_wait<T>(
        &self,
        wait_type: WaitType,
        try_take: impl FnOnce() -> Option<T>,
        take: impl FnOnce() -> T,
    ) -> T {
        if let Some(taken) = try_take() {
            return taken;
        }
        let start = Instant::now();
        let waiting = mark_waiting(wait_type, None);
        let taken = take();
        drop(waiting);
        self.record_wait(wait_type, None, elapsed_ns(start));
        taken
    }

    /// Records one wait of `wait_ns` nanoseconds, on `page_id` if it was a page wait.
    pub fn record_wait(&self, wait_type: WaitType, page_id: Option<PageId>, wait_ns: u64) {
        self.with_shard(|shard| {
            let i = wait_type.index();
            bump(&shard.wait_count[i], 1);
            bump(&shard.wait_ns[i], wait_ns);
            if wait_ns > shard.wait_ns_max[i].load(Ordering::Relaxed) {
                shard.wait_ns_max[i].store(wait_ns, Ordering::Relaxed);
            }
            if let Some(page_id) = page_id {
                let mut pages = shard.pages.lock();
                let tracked = pages.len();
                if let Some(entry) = pages.get_mut(&page_id) {
                    entry.count += 1;
                    entry.wait_ns += wait_ns;
                } else if tracked < HOT_PAGES_TRACKED_MAX {
                    pages.insert(page_id, PageWaits { count: 1, wait_ns });
                }
            }
        });
    }

    /// Adds `by` to an event counter.
    pub fn count(&self, counter: Counter, by: u64) {
        self.with_shard(|shard| bump(&shard.counters[counter.index()], by));
    }

    /// Sums every shard. Concurrent writers may be mid-update: each figure is exact for
    /// some moment, the set of figures not for one instant.
    pub fn snapshot(&self) -> StatsSnapshot {
        let shards = self.shards.lock().clone();
        let mut snap = StatsSnapshot::default();
        let mut pages: HashMap<PageId, PageWaits> = HashMap::new();
        for shard in &shards {
            for wait_type in WaitType::ALL {
                let i = wait_type.index();
                snap.waits[i].count += shard.wait_count[i].load(Ordering::Relaxed);
                snap.waits[i].wait_ns += shard.wait_ns[i].load(Ordering::Relaxed);
                snap.waits[i].wait_ns_max = snap.waits[i]
                    .wait_ns_max
                    .max(shard.wait_ns_max[i].load(Ordering::Relaxed));
            }
            for counter in Counter::ALL {
                snap.counters[counter.index()] +=
                    shard.counters[counter.index()].load(Ordering::Relaxed);
            }
            for (page_id, w) in shard.pages.lock().iter() {
                let entry = pages.entry(*page_id).or_default();
                entry.count += w.count;
                entry.wait_ns += w.wait_ns;
            }
        }
        let mut hot: Vec<(PageId, PageWaits)> = pages.into_iter().collect();
        hot.sort_by(|a, b| b.1.wait_ns.cmp(&a.1.wait_ns).then(a.0.cmp(&b.0)));
        snap.hot_pages = hot;
        snap
    }

    /// Zeroes every shard (between a warm-up and a measured run, for example).
    pub fn reset(&self) {
        for shard in self.shards.lock().iter() {
            shard.reset();
        }
    }
}

/// Totals of one wait type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitTotals {
    /// How many waits.
    pub count: u64,
    /// Total time waited, in nanoseconds.
    pub wait_ns: u64,
    /// The longest single wait, in nanoseconds.
    pub wait_ns_max: u64,
}

/// A summed view of a database's statistics.
#[derive(Clone, Debug, Default)]
pub struct StatsSnapshot {
    waits: [WaitTotals; WAIT_TYPES],
    counters: [u64; COUNTERS],
    /// Pages with waits, most time waited first.
    pub hot_pages: Vec<(PageId, PageWaits)>,
}

impl StatsSnapshot {
    /// Totals of one wait type.
    pub fn wait(&self, wait_type: WaitType) -> WaitTotals {
        self.waits[wait_type.index()]
    }

    /// One counter's value.
    pub fn counter(&self, counter: Counter) -> u64 {
        self.counters[counter.index()]
    }

    /// Wait types with at least one wait, most time waited first.
    pub fn top_waits(&self) -> Vec<(WaitType, WaitTotals)> {
        let mut waits: Vec<(WaitType, WaitTotals)> = WaitType::ALL
            .iter()
            .map(|w| (*w, self.wait(*w)))
            .filter(|(_, t)| t.count > 0)
            .collect();
        waits.sort_by(|a, b| b.1.wait_ns.cmp(&a.1.wait_ns).then(a.0.cmp(&b.0)));
        waits
    }
}

// ---- the current wait of a session (pg_stat_activity) ----

/// What one session is waiting for right now, shown by `pg_stat_activity`: a wait type,
/// the page waited on (for page waits) and when the wait began.
///
/// An embedder makes one per session and [`install`](CurrentWait::install)s it in the
/// thread that runs the session's statement for as long as the statement runs; the engine
/// writes it where a wait begins and clears it where the wait ends, on that thread only,
/// and only on the wait path (a latch or log wait that actually happens): the uncontended
/// path never touches it. Any thread may read it with [`snapshot`](CurrentWait::snapshot).
///
/// The fields are a seqlock: the writing thread makes `seq` odd, writes, makes it even; a
/// reader retries until it reads the same even `seq` before and after. So a reader never
/// mixes one wait's type with another's page.
#[derive(Debug, Default)]
pub struct CurrentWait {
    // Odd while the writing thread is between its first and last store below.
    seq: AtomicU64,
    // 0: not waiting; otherwise the wait type's index + 1.
    wait_code: AtomicU64,
    // The page waited on as stored (`PageId::to_raw`); `PageId::NONE` for none.
    page_raw: AtomicU64,
    // When the wait began, in nanoseconds since `wait_epoch()`.
    since_ns: AtomicU64,
}

/// A session's wait in progress, as [`CurrentWait::snapshot`] read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitInProgress {
    /// What it waits for.
    pub wait_type: WaitType,
    /// The page it waits on, for a page wait (a latch, a read, a combining leader).
    pub page_id: Option<PageId>,
    /// How long it has waited so far, in nanoseconds.
    pub waited_ns: u64,
}

thread_local! {
    // The current wait slot of the session this thread runs, if its embedder installed one.
    static CURRENT_WAIT: RefCell<Option<Arc<CurrentWait>>> = const { RefCell::new(None) };
}

/// Waits' start times are kept as nanoseconds since this moment (an `Instant` cannot be
/// stored in an atomic).
fn wait_epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Tries a reader makes before it gives up on a slot whose writer keeps it changing.
const SNAPSHOT_TRIES_MAX: u32 = 1000;

impl CurrentWait {
    /// A slot that shows no wait.
    pub fn new() -> Arc<CurrentWait> {
        Arc::new(CurrentWait::default())
    }

    /// Makes this slot the calling thread's: the waits this thread begins from now on are
    /// written to it, until [`uninstall`](CurrentWait::uninstall) (or another `install`,
    /// which replaces it). Install a slot in one thread at a time: it has one writer.
    pub fn install(self: &Arc<Self>) {
        // A thread being torn down has no statement to show: nothing to install then.
        let _ = CURRENT_WAIT.try_with(|slot| *slot.borrow_mut() = Some(Arc::clone(self)));
    }

    /// Removes this slot from the calling thread, if it is the one installed there, and
    /// clears it (a statement that ended waits for nothing).
    pub fn uninstall(self: &Arc<Self>) {
        let _ = CURRENT_WAIT.try_with(|slot| {
            let mut slot = slot.borrow_mut();
            if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, self)) {
                *slot = None;
            }
        });
        self.write(Fields::default());
    }

    /// The wait in progress, or `None` when the session waits for nothing (or its writer
    /// changed the slot on every one of many tries: a wait that short is no wait to show).
    pub fn snapshot(&self) -> Option<WaitInProgress> {
        for attempt in 0..SNAPSHOT_TRIES_MAX {
            let before = self.seq.load(Ordering::Acquire);
            if before & 1 == 0 {
                let fields = self.read_fields();
                // Orders the field loads before the re-check (seqlock reader side).
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == before {
                    return fields.to_wait();
                }
            }
            if attempt % 64 == 63 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        None
    }

    fn read_fields(&self) -> Fields {
        Fields {
            wait_code: self.wait_code.load(Ordering::Relaxed),
            page_raw: self.page_raw.load(Ordering::Relaxed),
            since_ns: self.since_ns.load(Ordering::Relaxed),
        }
    }

    fn write(&self, fields: Fields) {
        // fetch_add rather than load + store: should a slot be installed in two threads
        // after all, `seq` still ends even once both are done, so no reader is stuck.
        self.seq.fetch_add(1, Ordering::Relaxed);
        // Seqlock writer side: the odd `seq` is visible before any field store below.
        fence(Ordering::Release);
        self.wait_code.store(fields.wait_code, Ordering::Relaxed);
        self.page_raw.store(fields.page_raw, Ordering::Relaxed);
        self.since_ns.store(fields.since_ns, Ordering::Relaxed);
        self.seq.fetch_add(1, Ordering::Release);
    }
}

/// The slot's fields as plain values.
#[derive(Clone, Copy)]
struct Fields {
    wait_code: u64,
    page_raw: u64,
    since_ns: u64,
}

impl Default for Fields {
    fn default() -> Fields {
        Fields {
            wait_code: 0,
            page_raw: PageId::NONE.to_raw(),
            since_ns: 0,
        }
    }
}

impl Fields {
    fn to_wait(self) -> Option<WaitInProgress> {
        let index = usize::try_from(self.wait_code.checked_sub(1)?).ok()?;
        let wait_type = *WaitType::ALL.get(index)?;
        let page_id = PageId::from_raw(self.page_raw);
        let now_ns = u64::try_from(wait_epoch().elapsed().as_nanos()).unwrap_or(u64::MAX);
        Some(WaitInProgress {
            wait_type,
            page_id: (!page_id.is_none()).then_some(page_id),
            waited_ns: now_ns.saturating_sub(self.since_ns),
        })
    }
}

/// Shows a wait of `wait_type` (on `page_id`, for a page wait) as the current wait of the
/// session this thread runs, until the returned mark is dropped; then the slot shows what
/// it showed before (nothing, or the wait this one is nested in).
///
/// Call it only where a wait begins, after the uncontended try failed: it costs a
/// thread-local read, and when a slot is installed a clock read and a few stores.
#[must_use = "the wait shows until the mark is dropped"]
pub(crate) fn mark_waiting(wait_type: WaitType, page_id: Option<PageId>) -> WaitMark {
    let slot = CURRENT_WAIT
        .try_with(|slot| slot.borrow().clone())
        .ok()
        .flatten();
    let Some(slot) = slot else {
        return WaitMark { marked: None };
    };
    // Only this thread writes the slot, so these loads read what it last wrote.
    let previous = slot.read_fields();
    let since_ns = u64::try_from(wait_epoch().elapsed().as_nanos()).unwrap_or(u64::MAX);
    slot.write(Fields {
        wait_code: wait_type.index() as u64 + 1,
        page_raw: page_id.unwrap_or(PageId::NONE).to_raw(),
        since_ns,
    });
    WaitMark {
        marked: Some((slot, previous)),
    }
}

/// A wait shown as the session's current wait (see [`mark_waiting`]); dropping it ends it.
pub(crate) struct WaitMark {
    // The slot written and what it showed before; `None` when no slot is installed.
    marked: Option<(Arc<CurrentWait>, Fields)>,
}

impl Drop for WaitMark {
    fn drop(&mut self) {
        if let Some((slot, previous)) = self.marked.take() {
            slot.write(previous);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The session gauge follows the slots, and a reset of the statistics leaves it alone.
    #[test]
    fn the_session_count_follows_its_slots() {
        let stats = Stats::new();
        assert_eq!(stats.sessions(), 0);
        let mut slots: Vec<SessionSlot> = (0..3).map(|_| stats.session_slot()).collect();
        assert_eq!(stats.sessions(), 3);
        stats.reset();
        assert_eq!(stats.sessions(), 3, "a reset cleared a gauge");
        slots.pop();
        assert_eq!(stats.sessions(), 2);
        drop(slots);
        assert_eq!(stats.sessions(), 0);
    }

    #[test]
    fn waits_from_many_threads_sum_exactly() {
        let stats = Stats::new();
        std::thread::scope(|s| {
            for t in 0..8u64 {
                let stats = &stats;
                s.spawn(move || {
                    for i in 0..1000u64 {
                        stats.record_wait(WaitType::PageLatchEx, Some(PageId::new(0, i % 4)), 10);
                        stats.count(Counter::PageSplits, 1);
                    }
                    stats.record_wait(WaitType::WriteLog, None, 1000 + t);
                });
            }
        });
        let snap = stats.snapshot();
        let ex = snap.wait(WaitType::PageLatchEx);
        assert_eq!(ex.count, 8000);
        assert_eq!(ex.wait_ns, 80_000);
        assert_eq!(ex.wait_ns_max, 10);
        assert_eq!(snap.wait(WaitType::WriteLog).wait_ns_max, 1007);
        assert_eq!(snap.counter(Counter::PageSplits), 8000);
        assert_eq!(snap.hot_pages.len(), 4);
        assert!(snap.hot_pages.iter().all(|(_, w)| w.count == 2000));
        assert_eq!(snap.top_waits()[0].0, WaitType::PageLatchEx);
        stats.reset();
        let snap = stats.snapshot();
        assert_eq!(snap.wait(WaitType::PageLatchEx).count, 0);
        assert!(snap.hot_pages.is_empty());
    }

    #[test]
    fn registries_are_independent() {
        let a = Stats::new();
        let b = Stats::new();
        a.record_wait(WaitType::PageLatchSh, None, 5);
        assert_eq!(a.snapshot().wait(WaitType::PageLatchSh).count, 1);
        assert_eq!(b.snapshot().wait(WaitType::PageLatchSh).count, 0);
    }

    #[test]
    fn per_page_tracking_is_bounded() {
        let stats = Stats::new();
        for page in 0..(HOT_PAGES_TRACKED_MAX as u64 + 100) {
            stats.record_wait(WaitType::PageLatchEx, Some(PageId::new(0, page)), 1);
        }
        let snap = stats.snapshot();
        assert_eq!(snap.hot_pages.len(), HOT_PAGES_TRACKED_MAX);
        assert_eq!(
            snap.wait(WaitType::PageLatchEx).count,
            HOT_PAGES_TRACKED_MAX as u64 + 100
        );
    }
    #[test]
    fn marks_show_in_the_installed_slot_and_nest() {
        let slot = CurrentWait::new();
        // Not installed: a mark writes nothing.
        drop(mark_waiting(WaitType::WriteLog, None));
        {
            let _unseen = mark_waiting(WaitType::WriteLog, None);
            assert_eq!(slot.snapshot(), None);
        }
        slot.install();
        let outer = mark_waiting(WaitType::PageLatchEx, Some(PageId::new(2, 7)));
        let now = slot.snapshot().expect("a wait shows");
        assert_eq!(
            (now.wait_type, now.page_id),
            (WaitType::PageLatchEx, Some(PageId::new(2, 7)))
        );
        let inner = mark_waiting(WaitType::FreeBuffer, None);
        let now = slot.snapshot().expect("the nested wait shows");
        assert_eq!((now.wait_type, now.page_id), (WaitType::FreeBuffer, None));
        drop(inner);
        assert_eq!(
            slot.snapshot().map(|w| w.wait_type),
            Some(WaitType::PageLatchEx),
            "the outer wait shows again"
        );
        drop(outer);
        assert_eq!(slot.snapshot(), None);
        slot.uninstall();
        let _after = mark_waiting(WaitType::WriteLog, None);
        assert_eq!(slot.snapshot(), None, "an uninstalled slot is not written");
    }

    #[test]
    fn another_thread_sees_a_timed_wait_while_it_lasts() {
        let stats = Stats::new();
        let slot = CurrentWait::new();
        let lock = Mutex::new(());
        let held = lock.lock();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                slot.install();
                drop(stats.timed_wait(WaitType::FsmLatch, || lock.try_lock(), || lock.lock()));
                slot.uninstall();
            });
            let deadline = Instant::now() + std::time::Duration::from_secs(20);
            let seen = loop {
                if let Some(wait) = slot.snapshot() {
                    break wait;
                }
                assert!(Instant::now() < deadline, "the wait never showed");
                std::thread::sleep(std::time::Duration::from_millis(1));
            };
            assert_eq!((seen.wait_type, seen.page_id), (WaitType::FsmLatch, None));
            std::thread::sleep(std::time::Duration::from_millis(5));
            let later = slot.snapshot().expect("still waiting");
            assert!(
                later.waited_ns >= 5_000_000,
                "waited {} ns",
                later.waited_ns
            );
            drop(held);
            waiter.join().expect("the waiter");
        });
        assert_eq!(slot.snapshot(), None, "the wait ended");
        assert_eq!(stats.snapshot().wait(WaitType::FsmLatch).count, 1);
        // The uncontended path neither waits nor marks.
        slot.install();
        drop(stats.timed_wait(WaitType::FsmLatch, || lock.try_lock(), || lock.lock()));
        assert_eq!(stats.snapshot().wait(WaitType::FsmLatch).count, 1);
        slot.uninstall();
    }

    /// A reader never sees one wait's type with another's page, while the writer changes
    /// the slot as fast as it can.
    #[test]
    fn snapshots_are_never_torn() {
        let slot = CurrentWait::new();
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                slot.install();
                // Each type goes with one page: its index.
                for round in 0..200_000usize {
                    let wait_type = WaitType::ALL[round % WaitType::ALL.len()];
                    let _mark =
                        mark_waiting(wait_type, Some(PageId::new(0, wait_type.index() as u64)));
                }
                slot.uninstall();
                done.store(true, Ordering::Release);
            });
            while !done.load(Ordering::Acquire) {
                if let Some(wait) = slot.snapshot() {
                    assert_eq!(
                        wait.page_id,
                        Some(PageId::new(0, wait.wait_type.index() as u64)),
                        "a torn read"
                    );
                }
            }
        });
    }
}
