//! Admission control for buffer-pool frames: running short of frames is a wait
//! (`FREE_BUFFER`), never a stopped database, and a commit's apply cannot fail for want of
//! a frame.
//!
//! **The deadlock it prevents.** A thread that holds latched frames and needs one more (a
//! split holds the parent and the page, then needs a frame for the new right page) waits
//! for some frame to be unlatched. If threads doing the same hold every frame, none ever
//! is. So the frames that such threads hold together must stay below the pool's size.
//!
//! **Frames one operation holds latched at once** (checked: debug builds count each
//! thread's latched frames and assert the count never exceeds what its permits cover; the
//! tests measure the maxima):
//! * a B+tree insert, 3: `split_on_path` latches the parent and the page, then allocates
//!   the new right page; `split_root` latches the root, then allocates two pages;
//! * a heap insert, 2: `Heap::append_page` latches the chain's tail, then allocates.
//!   `heap-nc-identity` does the heap insert, then the index insert, one after the other;
//! * a read, 1: `get` descends optimistically (a miss holds only the frame it loads into).
//!   `BTree::scan`, `Heap::scan` and `layout::merge_scan` (which scans the partitions in
//!   turn, a batch at a time) copy one page's rows out under a shared latch and release it
//!   before fixing the next.
//!
//! **The budget.** The pool has `frames - FRAMES_RESERVED` permits. The reserve is for
//! threads that are not sessions (the checkpointer's flush, check, inspect and verify
//! walks): they latch one frame at a time and never wait for a frame while holding one.
//! A session takes `OP_FRAMES_MAX` permits for its whole life when it is created, if at
//! least as many then remain for the others (the shared remainder); it then pays a few
//! thread-local reads and writes per operation and touches no shared word. A session
//! that could not takes permits for each operation from the shared remainder
//! (`OP_FRAMES_MAX` to apply a commit, `READ_FRAMES_MAX` for a get or a scan), waiting
//! for them while it holds no latch and no permit, and tries the lifetime reservation
//! again each time.
//!
//! **Why it cannot deadlock.** Every thread that waits for a frame while holding latched
//! frames is in a covered operation and holds fewer frames than its permits (recovery,
//! which is not, runs alone before any session exists). So when one waits, the covered
//! operations hold fewer than `frames - FRAMES_RESERVED` frames between them, and every
//! other latched frame is held briefly by a thread that waits for no frame meanwhile: a
//! frame comes free. A permit holder waits only for frames, latches (taken top-down, by
//! holders that hold permits too), the log and a flow gate (whose holders hold permits),
//! so every permit comes back in bounded time. No user code runs with shared permits: a
//! scan gives its shared permits back while its visitor runs (it holds no latch then).
//! An operation that starts inside another on the same thread (a visitor that inserts) is
//! covered by the outer one's permits when they suffice, since the outer holds no latch
//! meanwhile; otherwise the outer holds no permit either. So a thread never waits for
//! permits it holds itself, and as the shared remainder never falls below
//! `OP_FRAMES_MAX`, a thread with several sessions cannot starve itself.
//!
//! **Why an apply cannot fail for frames.** A commit's apply waits for its permits as long
//! as it takes, and its frame waits in eviction never give up: the argument above says
//! both end. Every other caller gets `PoolExhausted` after `wait_max` with no permit or
//! frame released anywhere: a wedged pool, such as a direct user of the pool that latched
//! every frame, or I/O that stopped.

use super::BufferPool;
use crate::error::{Error, Result};
use crate::stats::{Stats, WaitType, elapsed_ns, mark_waiting};
use parking_lot::{Condvar, Mutex};
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The most frames one session operation holds latched at once (a B+tree split: parent,
/// page and the new right page; a root split: the root and its two new children).
pub const OP_FRAMES_MAX: usize = 3;
/// The most frames a get or a scan holds latched at once.
pub const READ_FRAMES_MAX: usize = 1;
/// Frames outside the budget, for threads that are not sessions.
pub const FRAMES_RESERVED: usize = 2;
/// How long a wait for a frame or a permit may see nothing released anywhere before a
/// caller that can be refused gets `PoolExhausted`.
pub const WAIT_MAX_DEFAULT: Duration = Duration::from_secs(10);
// A permit waiter looks again after this even without a wake-up (a hand-over it missed
// costs at most this), and checks the give-up rule.
const PERMIT_WAIT_SLICE: Duration = Duration::from_millis(20);

thread_local! {
    // Frames the permits of the operation this thread is in cover (0: in none).
    static COVERED_FRAMES: Cell<usize> = const { Cell::new(0) };
    // True while this thread applies a commit: its frame waits never give up.
    static APPLYING: Cell<bool> = const { Cell::new(false) };
}

/// True while this thread applies a commit (eviction then waits as long as it takes).
pub(super) fn applying() -> bool {
    APPLYING.with(Cell::get)
}

#[cfg(debug_assertions)]
thread_local! {
    // Frames this thread holds latched through page guards and eviction victims.
    static LATCHED_FRAMES: Cell<usize> = const { Cell::new(0) };
    // The most it held at once since the last `take_latched_frames_max`.
    static LATCHED_FRAMES_MAX: Cell<usize> = const { Cell::new(0) };
}

/// One frame this thread holds latched (in a page guard or as an eviction victim). Debug
/// builds count them per thread and assert that an operation never latches more frames
/// than its permits cover; in release builds it is nothing.
pub(super) struct HeldFrame {
    _private: (),
}

impl HeldFrame {
    #[inline]
    pub(super) fn new() -> HeldFrame {
        #[cfg(debug_assertions)]
        {
            let held = LATCHED_FRAMES.with(|count| {
                count.set(count.get() + 1);
                count.get()
            });
            LATCHED_FRAMES_MAX.with(|max| max.set(max.get().max(held)));
            let covered = COVERED_FRAMES.with(Cell::get);
            debug_assert!(
                covered == 0 || held <= covered,
                "an operation latched {held} frames at once; its permits cover {covered}"
            );
        }
        HeldFrame { _private: () }
    }
}

#[cfg(debug_assertions)]
impl Drop for HeldFrame {
    fn drop(&mut self) {
        LATCHED_FRAMES.with(|count| count.set(count.get() - 1));
    }
}

/// Frames this thread holds latched now (debug builds only).
#[cfg(debug_assertions)]
pub(super) fn latched_frames() -> usize {
    LATCHED_FRAMES.with(Cell::get)
}

/// The most frames this thread held latched at once since the last call (debug builds
/// only; for the tests that measure each operation's need).
#[cfg(all(test, debug_assertions))]
pub(super) fn take_latched_frames_max() -> usize {
    LATCHED_FRAMES_MAX.with(|max| max.replace(latched_frames()))
}

/// The pool's frame permits (see the module comment).
pub(super) struct FrameBudget {
    frames: usize,
    state: Mutex<Permits>,
    released: Condvar,
    stats: Arc<Stats>,
    wait_ns_max: AtomicU64,
}

struct Permits {
    // Permits not reserved for a session's life: what per-operation claims take from.
    shared: usize,
    // Of the shared ones, those no operation holds now.
    free: usize,
    // Threads waiting for permits now.
    waiters: usize,
    // Counts every release: a wait that sees it move knows the pool is not wedged.
    releases: u64,
}

/// How a claim's wait for permits ended.
enum Grant {
    ForLife,
    Shared,
}

impl FrameBudget {
    /// The budget of a pool of `frames` frames (at least `OP_FRAMES_MAX + FRAMES_RESERVED`:
    /// the pool refuses fewer).
    pub(super) fn new(frames: usize, stats: Arc<Stats>) -> FrameBudget {
        assert!(
            frames >= OP_FRAMES_MAX + FRAMES_RESERVED,
            "a pool of {frames} frames has no room for one operation"
        );
        let shared = frames - FRAMES_RESERVED;
        FrameBudget {
            frames,
            state: Mutex::new(Permits {
                shared,
                free: shared,
                waiters: 0,
                releases: 0,
            }),
            released: Condvar::new(),
            stats,
            wait_ns_max: AtomicU64::new(WAIT_MAX_DEFAULT.as_nanos() as u64),
        }
    }

    /// How long a refusable wait may see nothing released before it gives up.
    pub(super) fn wait_max(&self) -> Duration {
        Duration::from_nanos(self.wait_ns_max.load(Ordering::Relaxed))
    }

    /// Sets that bound (tests use a short one).
    #[cfg(test)]
    pub(super) fn set_wait_max(&self, wait_max: Duration) {
        let ns = u64::try_from(wait_max.as_nanos()).unwrap_or(u64::MAX);
        self.wait_ns_max.store(ns, Ordering::Relaxed);
    }

    /// The error of a refusable wait that gave up after waiting since `start`.
    pub(super) fn exhausted(&self, start: Instant) -> Error {
        Error::PoolExhausted {
            frames: self.frames,
            waited_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// Takes `OP_FRAMES_MAX` permits for a session's life if that leaves at least as many
    /// shared: the shared remainder must always be able to serve one operation.
    fn try_reserve_for_life(permits: &mut Permits) -> bool {
        let fits = permits.free >= OP_FRAMES_MAX
            && permits.shared.saturating_sub(OP_FRAMES_MAX) >= OP_FRAMES_MAX;
        if fits {
            permits.shared -= OP_FRAMES_MAX;
            permits.free -= OP_FRAMES_MAX;
        }
        fits
    }

    /// Gives back a lifetime reservation.
    fn release_for_life(&self) {
        let mut permits = self.state.lock();
        permits.shared += OP_FRAMES_MAX;
        self.give_back_locked(&mut permits, OP_FRAMES_MAX);
    }

    /// Gives back `count` shared permits.
    fn release(&self, count: usize) {
        let mut permits = self.state.lock();
        self.give_back_locked(&mut permits, count);
    }

    fn give_back_locked(&self, permits: &mut Permits, count: usize) {
        permits.free += count;
        permits.releases += 1;
        debug_assert!(permits.free <= permits.shared, "more permits back than out");
        if permits.waiters > 0 {
            self.released.notify_one();
        }
    }

    /// Waits for `need` shared permits, or for room for a lifetime reservation (taken
    /// instead, and `for_life` set). A `refusable` wait gives up after `wait_max` with no
    /// permit released anywhere; the caller holds no latch and no permit while it waits.
    fn acquire(&self, need: usize, refusable: bool, for_life: &AtomicBool) -> Result<Grant> {
        debug_assert!((1..=OP_FRAMES_MAX).contains(&need));
        let mut permits = self.state.lock();
        let mut waited_since: Option<Instant> = None;
        let mut waiting = None;
        let mut releases_seen = permits.releases;
        let mut quiet_since = Instant::now();
        let grant = loop {
            if FrameBudget::try_reserve_for_life(&mut permits) {
                for_life.store(true, Ordering::Relaxed);
                break Grant::ForLife;
            }
            if permits.free >= need {
                permits.free -= need;
                break Grant::Shared;
            }
            let start = *waited_since.get_or_insert_with(Instant::now);
            waiting.get_or_insert_with(|| mark_waiting(WaitType::FreeBuffer, None));
            permits.waiters += 1;
            self.released.wait_for(&mut permits, PERMIT_WAIT_SLICE);
            permits.waiters -= 1;
            if permits.releases != releases_seen {
                releases_seen = permits.releases;
                quiet_since = Instant::now();
            } else if refusable && quiet_since.elapsed() >= self.wait_max() {
                drop(permits);
                self.stats
                    .record_wait(WaitType::FreeBuffer, None, elapsed_ns(start));
                return Err(self.exhausted(start));
            }
        };
        // One release wakes one waiter; pass the turn on while permits are left.
        if permits.free > 0 && permits.waiters > 0 {
            self.released.notify_one();
        }
        drop(permits);
        if let Some(start) = waited_since {
            self.stats
                .record_wait(WaitType::FreeBuffer, None, elapsed_ns(start));
        }
        Ok(grant)
    }
}

/// A session's standing with its pool's frame budget: a lifetime reservation, or permits
/// taken per operation (see the module comment). Returns a lifetime reservation on drop.
pub struct FrameClaim {
    pool: Arc<BufferPool>,
    // Relaxed: only the owning session reads and writes it (an atomic keeps `Sync`).
    for_life: AtomicBool,
}

impl std::fmt::Debug for FrameClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameClaim")
            .field("for_life", &self.reserved_for_life())
            .finish()
    }
}

impl FrameClaim {
    /// A claim on `pool`'s frames, reserved for life if enough permits remain.
    pub fn new(pool: Arc<BufferPool>) -> FrameClaim {
        let for_life = FrameBudget::try_reserve_for_life(&mut pool.budget.state.lock());
        FrameClaim {
            pool,
            for_life: AtomicBool::new(for_life),
        }
    }

    /// True when the claim holds permits for its whole life (no per-operation cost).
    pub fn reserved_for_life(&self) -> bool {
        self.for_life.load(Ordering::Relaxed)
    }

    /// Enters a commit's apply (or any insert): latches at most `OP_FRAMES_MAX` frames at
    /// once until the returned guard drops. Waits for permits as long as it takes (counted
    /// as `FREE_BUFFER`) and never fails: see the module comment for why the wait ends.
    /// Call it holding no latch.
    pub fn enter_apply(&self) -> FrameOp<'_> {
        loop {
            // An applier never gives up; each round is one bounded wait.
            if let Ok(op) = self.enter(OP_FRAMES_MAX, true, false) {
                return op;
            }
        }
    }

    /// Enters a get or a scan: latches at most `READ_FRAMES_MAX` frames at once until the
    /// returned guard drops. `PoolExhausted` if no permit came free for the wait bound.
    /// Call it holding no latch.
    pub fn enter_read(&self) -> Result<FrameOp<'_>> {
        self.enter(READ_FRAMES_MAX, false, true)
    }

    fn enter(&self, need: usize, applying: bool, refusable: bool) -> Result<FrameOp<'_>> {
        let budget = &self.pool.budget;
        let covered_before = COVERED_FRAMES.with(Cell::get);
        let applying_before = APPLYING.with(Cell::get);
        let mut shared_taken = 0;
        let covered = if covered_before >= need {
            // Inside an operation of this thread whose permits cover this one too (it
            // holds no latch while the inner one runs).
            covered_before
        } else {
            // Waiting while holding permits could wait for ourselves.
            debug_assert_eq!(
                covered_before, 0,
                "waiting for frame permits while holding some"
            );
            if self.reserved_for_life()
                || matches!(
                    budget.acquire(need, refusable, &self.for_life)?,
                    Grant::ForLife
                )
            {
                OP_FRAMES_MAX
            } else {
                shared_taken = need;
                need
            }
        };
        COVERED_FRAMES.with(|c| c.set(covered));
        APPLYING.with(|a| a.set(applying_before || applying));
        Ok(FrameOp {
            budget,
            shared_taken,
            covered_before,
            applying_before,
        })
    }
}

impl Drop for FrameClaim {
    fn drop(&mut self) {
        if self.reserved_for_life() {
            self.pool.budget.release_for_life();
        }
    }
}

/// One operation's admission (see [`FrameClaim::enter_apply`]); gives back its permits
/// on drop.
#[must_use = "the operation's frame permits are given back when the guard drops"]
pub struct FrameOp<'a> {
    budget: &'a FrameBudget,
    // Shared permits this operation took (0: covered by a lifetime reservation or by an
    // outer operation of the same thread).
    shared_taken: usize,
    covered_before: usize,
    applying_before: bool,
}

impl FrameOp<'_> {
    /// True when it took permits from the shared remainder (a scan gives those back while
    /// its visitor runs, so that no user code holds them).
    pub fn holds_shared_permits(&self) -> bool {
        self.shared_taken > 0
    }
}

impl Drop for FrameOp<'_> {
    fn drop(&mut self) {
        #[cfg(debug_assertions)]
        debug_assert!(
            std::thread::panicking() || latched_frames() == 0,
            "an operation ended with {} frames still latched",
            latched_frames()
        );
        COVERED_FRAMES.with(|c| c.set(self.covered_before));
        APPLYING.with(|a| a.set(self.applying_before));
        if self.shared_taken > 0 {
            self.budget.release(self.shared_taken);
        }
    }
}

#[cfg(all(test, debug_assertions))]
mod tests {
    use super::*;
    use crate::access::Inserted;
    use crate::access::btree::BTree;
    use crate::access::heap::{Heap, HeapTarget};
    use crate::buffer::{POOL_FRAMES_MIN, Placement};
    use crate::storage::{MemStorage, Storage};

    const PAGE: usize = 4096;

    fn pool(frames: usize) -> Arc<BufferPool> {
        let mem = MemStorage::new(1);
        let file = mem.open("data.0", true).expect("open");
        Arc::new(BufferPool::open(file, "data.0", PAGE, frames * PAGE, Stats::new()).expect("pool"))
    }

    /// Measures what the budget assumes: the most frames each kind of operation latches at
    /// once, through a pool small enough that every operation also evicts. Each runs
    /// inside its admission, so the debug assertion on every latch checks it too.
    #[test]
    fn each_operation_latches_at_most_what_it_is_admitted_for() {
        let pool = pool(POOL_FRAMES_MIN);
        let stats = Arc::clone(pool.stats());
        // Three claims take the lifetime reservations; the fourth takes permits per
        // operation, so its reads are admitted for READ_FRAMES_MAX frames only.
        let lifetime: Vec<FrameClaim> =
            (0..3).map(|_| FrameClaim::new(Arc::clone(&pool))).collect();
        assert!(lifetime.iter().all(FrameClaim::reserved_for_life));
        let claim = FrameClaim::new(Arc::clone(&pool));
        assert!(!claim.reserved_for_life());

        let trees: Vec<BTree> = (0..2)
            .map(|_| BTree::create(Arc::clone(&pool), Placement::Spread).expect("tree"))
            .collect();
        take_latched_frames_max();
        for i in 0..3000u64 {
            // Ascending into one tree, scattered into the other: leaf, inner and root splits.
            let (tree, key) = match i % 2 {
                0 => (&trees[0], i),
                _ => (&trees[1], i.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            };
            let _op = claim.enter_apply();
            let inserted = tree
                .insert(&key.to_be_bytes(), &[7u8; 100])
                .expect("insert");
            assert_eq!(inserted, Inserted::Yes);
        }
        assert!(
            trees
                .iter()
                .all(|t| t.verify().expect("verify").levels >= 2)
        );
        assert_eq!(take_latched_frames_max(), OP_FRAMES_MAX, "B+tree inserts");

        let heap = Heap::create(Arc::clone(&pool), 1, stats, Placement::Spread).expect("heap");
        let mut target = HeapTarget::default();
        for i in 0..1000u64 {
            let _op = claim.enter_apply();
            heap.insert(&mut target, &i.to_be_bytes(), &[7u8; 300])
                .expect("heap insert");
        }
        assert!(heap.pages().expect("pages").len() > 50);
        assert_eq!(take_latched_frames_max(), 2, "heap inserts");

        for i in (0..3000u64).step_by(14) {
            let _op = claim.enter_read().expect("admitted");
            assert!(trees[0].get(&i.to_be_bytes()).expect("get").is_some());
        }
        let mut rows = 0;
        {
            let _op = claim.enter_read().expect("admitted");
            trees[1]
                .scan(None, |_, _| {
                    rows += 1;
                    true
                })
                .expect("scan");
            heap.scan(None, |_, _| {
                rows += 1;
                true
            })
            .expect("heap scan");
            let both: Vec<&BTree> = trees.iter().collect();
            crate::access::layout::merge_scan(&both, None, |_, _| {
                rows += 1;
                true
            })
            .expect("merge scan");
            assert!(heap.get(&999u64.to_be_bytes()).expect("heap get").is_some());
        }
        assert_eq!(rows, 1500 + 1000 + 3000);
        assert_eq!(take_latched_frames_max(), READ_FRAMES_MAX, "reads");
    }

    #[test]
    fn lifetime_reservations_leave_one_operation_for_the_rest() {
        let pool = pool(POOL_FRAMES_MIN);
        let shared = |pool: &BufferPool| pool.budget.state.lock().shared;
        assert_eq!(shared(&pool), POOL_FRAMES_MIN - FRAMES_RESERVED);
        let claims: Vec<FrameClaim> = (0..8).map(|_| FrameClaim::new(Arc::clone(&pool))).collect();
        let for_life = claims.iter().filter(|c| c.reserved_for_life()).count();
        // 14 permits: three lifetime reservations leave 5, at least one operation's worth.
        assert_eq!(for_life, 3);
        assert!(shared(&pool) >= OP_FRAMES_MAX);
        // One thread with two per-operation sessions, one inside the other's scan-like
        // nesting, and with every lifetime claim: never waits for itself.
        let (outer, inner) = (&claims[5], &claims[6]);
        {
            let _read = outer.enter_read().expect("read");
            drop(_read);
            let _apply = inner.enter_apply();
            let _nested = claims[0].enter_read().expect("covered by the apply");
        }
        // Lifetime permits come back on drop, and a per-operation claim then takes them.
        drop(claims);
        assert_eq!(shared(&pool), POOL_FRAMES_MIN - FRAMES_RESERVED);
        let late = FrameClaim::new(Arc::clone(&pool));
        assert!(late.reserved_for_life());
    }

    /// Holds every shared permit of a 16-frame pool whose lifetime reservations are taken
    /// (an apply's 3 and two reads' 1 each, on three threads) for `hold`, then runs `check`.
    fn with_shared_permits_held(pool: &Arc<BufferPool>, hold: Duration, check: impl FnOnce()) {
        let claims: Vec<FrameClaim> = (0..3).map(|_| FrameClaim::new(Arc::clone(pool))).collect();
        assert!(claims.iter().all(|c| !c.reserved_for_life()));
        let barrier = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            for (i, claim) in claims.iter().enumerate() {
                let barrier = &barrier;
                s.spawn(move || {
                    let _op = match i {
                        0 => claim.enter_apply(),
                        _ => claim.enter_read().expect("read"),
                    };
                    barrier.wait();
                    std::thread::sleep(hold);
                });
            }
            barrier.wait();
            check();
        });
    }

    #[test]
    fn an_apply_waits_for_permits_however_long_and_a_read_gives_up_after_the_bound() {
        let pool = pool(POOL_FRAMES_MIN);
        pool.budget.set_wait_max(Duration::from_millis(100));
        let lifetime: Vec<FrameClaim> =
            (0..3).map(|_| FrameClaim::new(Arc::clone(&pool))).collect();
        assert!(lifetime.iter().all(FrameClaim::reserved_for_life));
        let claim = FrameClaim::new(Arc::clone(&pool));
        with_shared_permits_held(&pool, Duration::from_millis(400), || {
            let start = Instant::now();
            let apply = claim.enter_apply();
            assert!(
                start.elapsed() >= Duration::from_millis(300),
                "{:?}",
                start.elapsed()
            );
            drop(apply);
        });
        let waits = pool.stats().snapshot().wait(WaitType::FreeBuffer);
        assert_eq!(waits.count, 1, "{waits:?}");
        with_shared_permits_held(&pool, Duration::from_millis(400), || {
            let start = Instant::now();
            match claim.enter_read() {
                Err(Error::PoolExhausted { waited_ms, .. }) => assert!(waited_ms >= 100),
                Err(other) => panic!("expected PoolExhausted, got {other}"),
                Ok(_) => panic!("admitted with every permit held"),
            }
            assert!(start.elapsed() < Duration::from_millis(350));
        });
        // Once they are back, the same claim is admitted at once.
        assert!(claim.enter_read().is_ok());
    }

    /// The debug check itself: an operation admitted for a read that splits a page latches
    /// more frames than its permits cover.
    #[test]
    #[should_panic(expected = "its permits cover 1")]
    fn an_operation_past_its_admission_trips_the_debug_check() {
        let pool = pool(POOL_FRAMES_MIN);
        let _lifetime: Vec<FrameClaim> =
            (0..3).map(|_| FrameClaim::new(Arc::clone(&pool))).collect();
        let claim = FrameClaim::new(Arc::clone(&pool));
        let tree = BTree::create(Arc::clone(&pool), Placement::Spread).expect("tree");
        let _op = claim.enter_read().expect("admitted");
        for i in 0..1000u64 {
            tree.insert(&i.to_be_bytes(), &[7u8; 100]).expect("insert");
        }
    }
}
