//! Wait statistics and engine counters: per-thread shards, aggregated only on read.
//!
//! Seed 004 saw SQL Server's own statistics counters become a spinlock hot spot. Here every
//! thread writes only its own shard (plain load + store, no read-modify-write on a shared
//! line), and a reader sums the shards. Waits are recorded only on the slow path (a latch
//! that was not free), so the per-page map behind a mutex is touched only after a wait.

use crate::format::PageId;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
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
}

impl WaitType {
    /// Every wait type, in report order.
    pub const ALL: [WaitType; 10] = [
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
}

impl Counter {
    /// Every counter, in report order.
    pub const ALL: [Counter; 7] = [
        Counter::PageSplits,
        Counter::PagesRead,
        Counter::PagesWritten,
        Counter::OptimisticRestarts,
        Counter::FsmUpdates,
        Counter::CombinedRows,
        Counter::CombineRounds,
    ];

    /// The name shown in reports.
    pub fn name(self) -> &'static str {
        match self {
            Counter::PageSplits => "page_splits",
            Counter::PagesRead => "pages_read",
            Counter::PagesWritten => "pages_written",
            Counter::OptimisticRestarts => "optimistic_restarts",
            Counter::FsmUpdates => "fsm_updates",
            Counter::CombinedRows => "combined_rows",
            Counter::CombineRounds => "combine_rounds",
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
        })
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
    /// time as one wait of `wait_type`.
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
        let taken = take();
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
