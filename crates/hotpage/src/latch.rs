//! The hybrid page latch: optimistic version reads, shared mode, exclusive mode.
//!
//! Layout (LeanStore's design): a version word plus a parking reader-writer lock.
//! * Exclusive holders make the version odd on acquire and even again on release, so an
//!   optimistic reader that saw version `v` (even) and still sees `v` afterwards read a page
//!   no writer touched in between (the seqlock protocol, with acquire/release fences).
//! * Waiters park in the OS (parking_lot) after a short adaptive spin, so 64 sessions on
//!   2 cores queue instead of burning the cores: no livelock, no unbounded spinning.
//! * Every acquire first tries the uncontended path; only when that fails do we read the
//!   clock, so a wait costs two `Instant::now` calls and a free latch costs none.
//!
//! The latch knows nothing of statistics: blocking calls return the nanoseconds waited and
//! the buffer pool records them under the page's wait type. They call `on_wait` once a wait
//! begins (never on the uncontended path) and keep what it returns until the wait ends:
//! the buffer pool marks the session's current wait with it (`stats::mark_waiting`).

use crate::stats::elapsed_ns;
use parking_lot::RawRwLock;
use parking_lot::lock_api::RawRwLock as RawRwLockApi;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering, fence};
use std::time::Instant;

/// The cores this process may run on (1 when the system cannot say), read once: whether a
/// waiter spins or gets out of the way depends on whether every session has a core.
pub(crate) fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A page latch. One cache line, so two latches never share a line.
#[repr(align(64))]
pub struct HybridLatch {
    // Even: no exclusive holder. Odd: an exclusive holder may be writing.
    version: AtomicU64,
    lock: RawRwLock,
}

const _: () = assert!(std::mem::size_of::<HybridLatch>() == 64);

impl Default for HybridLatch {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for HybridLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HybridLatch")
            .field("version", &self.version.load(Ordering::Relaxed))
            .finish()
    }
}

impl HybridLatch {
    /// A free latch at version 0.
    pub const fn new() -> Self {
        HybridLatch {
            version: AtomicU64::new(0),
            lock: <RawRwLock as RawRwLockApi>::INIT,
        }
    }

    /// Starts an optimistic read: the current version, or `None` while an exclusive holder
    /// may be writing.
    pub fn optimistic(&self) -> Option<u64> {
        let version = self.version.load(Ordering::Acquire);
        (version & 1 == 0).then_some(version)
    }

    /// Starts an optimistic read, parking (as a shared waiter) while an exclusive holder
    /// works. Returns the version and the nanoseconds waited (0 when none).
    pub fn optimistic_or_wait<W>(&self, on_wait: impl FnOnce() -> W) -> (u64, u64) {
        if let Some(version) = self.optimistic() {
            return (version, 0);
        }
        let start = Instant::now();
        let _waiting = on_wait();
        loop {
            // Queue behind the writer instead of spinning on the version.
            self.lock.lock_shared();
            let version = self.version.load(Ordering::Acquire);
            // SAFETY: we acquired the shared lock on the line above and release it once.
            unsafe { self.lock.unlock_shared() };
            if version & 1 == 0 {
                return (version, elapsed_ns(start));
            }
        }
    }

    /// Ends an optimistic read: true when no exclusive holder wrote since `version` was read,
    /// so every relaxed load made in between saw a consistent page.
    pub fn validate(&self, version: u64) -> bool {
        // Orders the reader's data loads before the version re-check (seqlock reader side).
        fence(Ordering::Acquire);
        self.version.load(Ordering::Relaxed) == version
    }

    #[cfg(test)]
    /// The current version (for tests and diagnostics).
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Acquires the latch shared. Returns the guard and the nanoseconds waited.
    pub fn lock_shared<W>(&self, on_wait: impl FnOnce() -> W) -> (SharedGuard<'_>, u64) {
        if self.lock.try_lock_shared() {
            return (SharedGuard { latch: self }, 0);
        }
        let start = Instant::now();
        let _waiting = on_wait();
        self.lock.lock_shared();
        (SharedGuard { latch: self }, elapsed_ns(start))
    }

    /// Acquires the latch exclusively. Returns the guard and the nanoseconds waited.
    pub fn lock_exclusive<W>(&self, on_wait: impl FnOnce() -> W) -> (ExclusiveGuard<'_>, u64) {
        let mut wait_ns = 0;
        if !self.lock.try_lock_exclusive() {
            let start = Instant::now();
            let _waiting = on_wait();
            self.lock.lock_exclusive();
            wait_ns = elapsed_ns(start);
        }
        (self.enter_exclusive(), wait_ns)
    }

    /// Acquires the latch exclusively only if it is free right now.
    pub fn try_lock_exclusive(&self) -> Option<ExclusiveGuard<'_>> {
        self.lock
            .try_lock_exclusive()
            .then(|| self.enter_exclusive())
    }

    /// Upgrades an optimistic read to exclusive: succeeds only if nobody wrote since
    /// `version`. Returns the guard (or `None`: restart) and the nanoseconds waited.
    ///
    /// A stale upgrade fails without entering exclusive mode: the version is left alone, so
    /// the optimistic readers of the page are not invalidated by an upgrade that changes
    /// nothing (at the tail of a sequential index, dozens of sessions fail this way after
    /// every split, and each used to restart every reader of the parent).
    pub fn upgrade<W>(
        &self,
        version: u64,
        on_wait: impl FnOnce() -> W,
    ) -> (Option<ExclusiveGuard<'_>>, u64) {
        if self.version.load(Ordering::Relaxed) != version {
            return (None, 0);
        }
        let mut wait_ns = 0;
        if !self.lock.try_lock_exclusive() {
            let start = Instant::now();
            let _waiting = on_wait();
            self.lock.lock_exclusive();
            wait_ns = elapsed_ns(start);
        }
        // Only the holder of the exclusive lock changes the version, and that is us now.
        if self.version.load(Ordering::Relaxed) != version {
            // SAFETY: we acquired the exclusive lock above and release it once, without
            // having entered exclusive mode (no guard exists to release it again).
            unsafe { self.lock.unlock_exclusive() };
            return (None, wait_ns);
        }
        (Some(self.enter_exclusive()), wait_ns)
    }

    fn enter_exclusive(&self) -> ExclusiveGuard<'_> {
        // Seqlock writer side: make the version odd, then fence so that no data store below
        // can become visible before the odd version.
        let previous = self.version.fetch_add(1, Ordering::Relaxed);
        debug_assert_eq!(previous & 1, 0, "exclusive latch entered twice");
        fence(Ordering::Release);
        ExclusiveGuard { latch: self }
    }
}

/// Holds a latch in shared mode; releases it on drop.
#[must_use = "the latch is released when the guard is dropped"]
pub struct SharedGuard<'a> {
    latch: &'a HybridLatch,
}

impl Drop for SharedGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: a SharedGuard exists only after a successful shared acquire of this latch,
        // and it is dropped exactly once.
        unsafe { self.latch.lock.unlock_shared() };
    }
}

/// Holds a latch in exclusive mode; releases it (version even again) on drop.
#[must_use = "the latch is released when the guard is dropped"]
pub struct ExclusiveGuard<'a> {
    latch: &'a HybridLatch,
}

impl Drop for ExclusiveGuard<'_> {
    fn drop(&mut self) {
        // Release: every data store above is visible before the even version.
        let previous = self.latch.version.fetch_add(1, Ordering::Release);
        debug_assert_eq!(previous & 1, 1, "exclusive latch released while not held");
        // SAFETY: an ExclusiveGuard exists only after a successful exclusive acquire of this
        // latch, and it is dropped exactly once.
        unsafe { self.latch.lock.unlock_exclusive() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU8, AtomicUsize};
    use std::time::Duration;

    #[test]
    fn optimistic_read_fails_across_a_write() {
        let latch = HybridLatch::new();
        let v = latch.optimistic().expect("free latch");
        assert!(latch.validate(v));
        {
            let (_g, _) = latch.lock_exclusive(|| ());
            assert!(latch.optimistic().is_none(), "odd version while held");
        }
        assert!(!latch.validate(v));
        let v2 = latch.optimistic().expect("free again");
        assert_eq!(v2, v + 2);
    }

    #[test]
    fn shared_holders_do_not_change_the_version() {
        let latch = HybridLatch::new();
        let v = latch.optimistic().expect("free");
        let (a, wait_a) = latch.lock_shared(|| ());
        let (b, wait_b) = latch.lock_shared(|| ());
        assert_eq!((wait_a, wait_b), (0, 0));
        assert!(latch.try_lock_exclusive().is_none());
        drop((a, b));
        assert!(latch.validate(v));
        assert!(latch.try_lock_exclusive().is_some());
    }

    #[test]
    fn upgrade_fails_after_an_intervening_writer() {
        let latch = HybridLatch::new();
        let v = latch.optimistic().expect("free");
        drop(latch.lock_exclusive(|| ()));
        assert!(latch.upgrade(v, || ()).0.is_none());
        let v = latch.optimistic().expect("free");
        assert!(latch.upgrade(v, || ()).0.is_some());
    }

    /// A failed upgrade leaves the version alone: readers of the page stay valid, and the
    /// latch is free afterwards. (It once entered exclusive mode first and then gave up,
    /// which invalidated every optimistic reader for nothing.)
    #[test]
    fn a_stale_upgrade_invalidates_no_reader() {
        let latch = HybridLatch::new();
        let stale = latch.optimistic().expect("free");
        drop(latch.lock_exclusive(|| ()));
        let reader = latch.optimistic().expect("free");
        assert!(latch.upgrade(stale, || ()).0.is_none());
        assert!(
            latch.validate(reader),
            "a failed upgrade invalidated a reader"
        );
        // Stale only once the lock is held: a writer comes between the look and the lock.
        std::thread::scope(|s| {
            let (guard, _) = latch.lock_exclusive(|| ());
            let waiter = s.spawn(|| latch.upgrade(reader, || ()).0.is_none());
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(guard);
            assert!(
                waiter.join().expect("no panic"),
                "the upgrade saw the writer"
            );
        });
        assert!(
            latch.optimistic().is_some(),
            "not exclusive after a failed upgrade"
        );
        assert!(
            latch.try_lock_exclusive().is_some(),
            "the lock was released"
        );
    }

    #[test]
    fn waits_are_measured() {
        let latch = HybridLatch::new();
        std::thread::scope(|s| {
            let (guard, _) = latch.lock_exclusive(|| ());
            let waiter = s.spawn(|| latch.lock_exclusive(|| ()).1);
            std::thread::sleep(Duration::from_millis(20));
            drop(guard);
            let wait_ns = waiter.join().expect("waiter");
            assert!(wait_ns >= 10_000_000, "waited {wait_ns} ns");
        });
    }

    /// 64 threads on however few cores: exclusive sections stay mutually exclusive, every
    /// thread finishes (waiters park rather than livelock), and optimistic readers never
    /// accept a torn pair of values.
    #[test]
    fn sixty_four_threads_exclusive_and_optimistic() {
        const THREADS: usize = 64;
        const ROUNDS: usize = 2_000;
        let latch = HybridLatch::new();
        // Two cells a writer keeps equal; a validated reader must never see them differ.
        let cells = [AtomicU8::new(0), AtomicU8::new(0)];
        let inside = AtomicUsize::new(0);
        let validated_reads = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (latch, cells, inside, validated_reads) =
                    (&latch, &cells, &inside, &validated_reads);
                s.spawn(move || {
                    for i in 0..ROUNDS {
                        if (t + i) % 4 == 0 {
                            let (_g, _) = latch.lock_exclusive(|| ());
                            assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0);
                            let next = cells[0].load(Ordering::Relaxed).wrapping_add(1);
                            cells[0].store(next, Ordering::Relaxed);
                            std::hint::spin_loop();
                            cells[1].store(next, Ordering::Relaxed);
                            inside.fetch_sub(1, Ordering::Relaxed);
                        } else {
                            let (v, _) = latch.optimistic_or_wait(|| ());
                            let a = cells[0].load(Ordering::Relaxed);
                            let b = cells[1].load(Ordering::Relaxed);
                            if latch.validate(v) {
                                assert_eq!(a, b, "validated read saw a torn write");
                                validated_reads.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
        let writes = (0..THREADS)
            .map(|t| (0..ROUNDS).filter(|i| (t + i) % 4 == 0).count())
            .sum::<usize>();
        assert_eq!(latch.version(), 2 * writes as u64);
        assert!(validated_reads.load(Ordering::Relaxed) > 0);
    }
}
