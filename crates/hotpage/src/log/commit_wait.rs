//! Commit waiters: sessions parked until the log is durable up to their own LSN, and the
//! thread that wakes them.
//!
//! A session that must wait registers `(lsn, its thread)` and parks. After each flush the
//! flusher (the log's thread, or a committer that found no flush under way and made its
//! own: `Wal::wait_durable`) takes out exactly the waiters that flush covers
//! (`lsn <= durable`) and wakes them: no waiter is woken for a flush that does not cover
//! it, and none is woken twice.
//! No mutex is handed from one woken waiter to the next (the old condvar did that: every
//! woken waiter re-took the flusher's mutex in turn).
//!
//! Waking is a futex call per waiter, microseconds each: at 64 sessions that is as long as
//! an fdatasync. So beyond [`DIRECT_WAKES_MAX`] waiters the flusher hands the list to the
//! **waker** thread and goes straight on to its next write and fdatasync: the wake-ups of
//! one flush overlap the disk time of the next. A flush covering a few waiters (one session)
//! wakes them directly, saving the waker's own context switch.
//!
//! A waiter may **delegate** its wake-up (`Wal::wait_durable_delegated`): of the delegated
//! waiters one flush covers, only the first in LSN order is woken. Its caller promises
//! that whoever that is wakes the others: the database's grouped apply, where the woken
//! committer applies the rows of every commit the flush covers, in key order, and then
//! wakes their owners (`db::group_apply`). Each of them is then woken once, with its rows
//! applied, not twice.
//!
//! No wake-up is ever lost: a waiter registers (under the list's mutex) before it checks
//! `durable` for the last time, and the flusher publishes `durable` before it takes the list
//! out (under the same mutex, which orders the two), so either the waiter sees the new
//! `durable`, or the flusher sees the waiter.
//! `Thread::unpark` keeps a token, so an unpark that comes before the park is not lost
//! either. A waiter re-checks after every wake-up (parks can end spuriously).

use super::record::Lsn;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{JoinHandle, Thread};

/// A flush that covers at most this many waiters wakes them on the flusher's thread.
pub(super) const DIRECT_WAKES_MAX: usize = 2;

/// Sessions waiting for the durable LSN to reach their commit's end.
#[derive(Default)]
pub(super) struct Waiters {
    // (LSN waited for, the waiting thread, whether its wake-up is delegated).
    parked: Mutex<Vec<(Lsn, Thread, bool)>>,
    // `parked.len()`, kept under the mutex, read without it (`len`): a flush gathering its
    // group looks at it in a loop (`Shared::gather_group`) and must not contend with the
    // committers registering.
    count: AtomicUsize,
}

impl Waiters {
    /// Registers the calling thread as waiting for `lsn`. It must then re-check what it
    /// waits for before it parks (see the module docs).
    /// `delegated`: see the module docs.
    pub(super) fn register(&self, lsn: Lsn, delegated: bool) {
        let mut parked = self.parked.lock();
        parked.push((lsn, std::thread::current(), delegated));
        self.count.store(parked.len(), Ordering::Release);
    }

    /// Takes out every waiter that `durable` covers and moves the ones to wake into `out`,
    /// in LSN order: every waiter that did not delegate its wake-up, and the first that
    /// did and waits for this flush, the one from `durable_before` to `durable` (see the
    /// module docs); the others stay. Returns how many it took out (the commits this flush
    /// covers).
    ///
    /// A delegated waiter at or below `durable_before` registered after the flush that
    /// covered it had taken its waiters out. It saw that flush's `durable` on its own (its
    /// last look comes after it registers) and is not parked: waking it would wake nobody
    /// who applies this flush's commits.
    pub(super) fn take_covered(
        &self,
        durable_before: Lsn,
        durable: Lsn,
        out: &mut Vec<Thread>,
    ) -> usize {
        let mut parked = self.parked.lock();
        // Registered nearly in LSN order already: the sort is cheap.
        parked.sort_unstable_by_key(|(lsn, _, _)| *lsn);
        let covered = parked.partition_point(|(lsn, _, _)| *lsn <= durable);
        let mut delegate_woken = false;
        for (lsn, thread, delegated) in parked.drain(..covered) {
            let wake = if delegated {
                lsn > durable_before && !std::mem::replace(&mut delegate_woken, true)
            } else {
                true
            };
            if wake {
                out.push(thread);
            }
        }
        self.count.store(parked.len(), Ordering::Release);
        covered
    }

    /// Removes the calling thread's registration for `lsn`, if no flush has taken it out
    /// yet: a waiter that gives up (the log stopped) must not stay in the list, or a later
    /// flush could pick it as the one delegated waiter to wake, and nobody would wake the
    /// others. False if a flush took it out already: that flush covered it. Matched on the
    /// LSN too: a registration made after its covering flush stays until the next one, so
    /// the same thread may have an older entry listed.
    pub(super) fn deregister(&self, lsn: Lsn) -> bool {
        let me = std::thread::current().id();
        let mut parked = self.parked.lock();
        let found = parked
            .iter()
            .position(|(at, t, _)| *at == lsn && t.id() == me);
        let Some(index) = found else {
            return false;
        };
        parked.remove(index);
        self.count.store(parked.len(), Ordering::Release);
        true
    }

    /// Moves every waiter into `out` (the log stopped or shuts down: all must look again).
    pub(super) fn take_all(&self, out: &mut Vec<Thread>) {
        let mut parked = self.parked.lock();
        out.extend(parked.drain(..).map(|(_, thread, _)| thread));
        self.count.store(0, Ordering::Release);
    }

    /// How many committers wait now (parked or spinning: both are registered).
    pub(super) fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }
}

/// The waker thread: wakes the waiters the flusher hands it.
pub(super) struct Waker {
    shared: Arc<WakerShared>,
    thread: Thread,
    handle: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
struct WakerShared {
    queue: Mutex<Vec<Thread>>,
    exit: AtomicBool,
}

impl Waker {
    pub(super) fn start() -> std::io::Result<Waker> {
        let shared = Arc::new(WakerShared::default());
        let thread_shared = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("hotpage-wal-waker".into())
            .spawn(move || thread_shared.run())?;
        Ok(Waker {
            shared,
            thread: handle.thread().clone(),
            handle: Mutex::new(Some(handle)),
        })
    }

    /// Wakes `threads` (emptying it): directly when there are few, else on the waker
    /// thread, which this call hands them to without waiting.
    pub(super) fn wake(&self, threads: &mut Vec<Thread>) {
        if threads.len() <= DIRECT_WAKES_MAX {
            threads.drain(..).for_each(|t| t.unpark());
            return;
        }
        self.shared.queue.lock().append(threads);
        self.thread.unpark();
    }

    /// Wakes everything still queued and stops the thread.
    pub(super) fn stop(&self) {
        self.shared.exit.store(true, Ordering::SeqCst);
        if let Some(handle) = self.handle.lock().take() {
            self.thread.unpark();
            let _ = handle.join();
        }
        // Anything queued after the thread's last look.
        self.shared.queue.lock().drain(..).for_each(|t| t.unpark());
    }
}

impl Drop for Waker {
    fn drop(&mut self) {
        self.stop();
    }
}

impl WakerShared {
    fn run(&self) {
        let mut batch: Vec<Thread> = Vec::new();
        loop {
            std::mem::swap(&mut batch, &mut *self.queue.lock());
            if batch.is_empty() {
                if self.exit.load(Ordering::SeqCst) {
                    return;
                }
                // The flusher unparks this thread after queueing: its token ends this park
                // at once if the queueing came between the look above and here.
                std::thread::park();
                continue;
            }
            batch.drain(..).for_each(|t| t.unpark());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::time::Duration;

    /// Many threads wait for LSNs a slow "flusher" makes durable one step at a time: each
    /// is woken only once its own LSN is covered, and every one is woken.
    #[test]
    fn each_waiter_wakes_once_its_lsn_is_durable() {
        let waiters = Waiters::default();
        let waker = Waker::start().expect("waker");
        let durable = AtomicU64::new(0);
        let early_wakes = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..16u64 {
                let (waiters, durable, early) = (&waiters, &durable, &early_wakes);
                s.spawn(move || {
                    let lsn = 1 + t % 4;
                    waiters.register(lsn, false);
                    while durable.load(Ordering::SeqCst) < lsn {
                        std::thread::park();
                        if durable.load(Ordering::SeqCst) < lsn {
                            early.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
            while waiters.len() < 16 {
                std::thread::yield_now();
            }
            let mut out = Vec::new();
            for step in 1..=4u64 {
                durable.store(step, Ordering::SeqCst);
                waiters.take_covered(step - 1, step, &mut out);
                assert_eq!(out.len(), 4, "exactly the waiters of LSN {step}");
                waker.wake(&mut out);
                assert!(out.is_empty());
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        assert_eq!(waiters.len(), 0);
        waker.stop();
        // Nobody was woken by a flush that did not cover it (the old condvar woke all).
        assert_eq!(early_wakes.load(Ordering::Relaxed), 0);
    }

    /// Registers each (LSN, delegated) from a thread of its own, so that the threads tell
    /// the registrations apart; returns each LSN's thread.
    fn register_from_threads(
        waiters: &Waiters,
        registrations: &[(u64, bool)],
    ) -> Vec<(u64, std::thread::ThreadId)> {
        registrations
            .iter()
            .map(|&(lsn, delegated)| {
                let id = std::thread::scope(|s| {
                    s.spawn(|| {
                        waiters.register(lsn, delegated);
                        std::thread::current().id()
                    })
                    .join()
                    .expect("registered")
                });
                (lsn, id)
            })
            .collect()
    }

    /// Covered waiters come out in LSN order whatever order they registered in (the order
    /// they are woken in, and so nearly the order their rows are applied in).
    #[test]
    fn covered_waiters_come_out_in_lsn_order() {
        let waiters = Waiters::default();
        let ids = register_from_threads(
            &waiters,
            &[(30, false), (10, false), (40, false), (20, false)],
        );
        let mut out = Vec::new();
        waiters.take_covered(0, 30, &mut out);
        let order: Vec<_> = out.iter().map(Thread::id).collect();
        let expected: Vec<_> = [10u64, 20, 30]
            .iter()
            .map(|lsn| ids.iter().find(|(l, _)| l == lsn).expect("registered").1)
            .collect();
        assert_eq!(order, expected);
        assert_eq!(waiters.len(), 1, "LSN 40 is not covered");
    }

    /// Of the delegated waiters one flush covers only the first (in LSN order) is handed
    /// out to wake; every waiter that did not delegate is; the count is all it covered.
    #[test]
    fn only_the_first_delegated_waiter_of_a_flush_is_woken() {
        let waiters = Waiters::default();
        let ids = register_from_threads(
            &waiters,
            &[(30, true), (10, true), (20, false), (25, true), (50, true)],
        );
        let id_of = |lsn: u64| ids.iter().find(|(l, _)| *l == lsn).expect("registered").1;
        let mut out = Vec::new();
        assert_eq!(
            waiters.take_covered(5, 30, &mut out),
            4,
            "LSNs 10, 20, 25 and 30"
        );
        let woken: Vec<_> = out.iter().map(Thread::id).collect();
        assert_eq!(woken, vec![id_of(10), id_of(20)]);
        out.clear();
        assert_eq!(waiters.take_covered(30, 60, &mut out), 1);
        assert_eq!(
            out.iter().map(Thread::id).collect::<Vec<_>>(),
            vec![id_of(50)]
        );
    }

    /// A delegated waiter that registered after the flush that covered it (it is not
    /// parked) is never the one woken for a later flush: the first delegated waiter that
    /// waits for that flush is.
    #[test]
    fn a_late_registration_is_not_the_delegated_waiter_woken() {
        let waiters = Waiters::default();
        let ids = register_from_threads(&waiters, &[(8, true), (15, true), (18, true)]);
        let mut out = Vec::new();
        assert_eq!(waiters.take_covered(10, 20, &mut out), 3);
        assert_eq!(
            out.iter().map(Thread::id).collect::<Vec<_>>(),
            vec![ids[1].1]
        );
    }

    /// A thread can be listed twice: a registration made after its covering flush stays
    /// until the next flush. Giving up on its newer commit takes back that commit's entry,
    /// not the older one, which the next flush must still find (and take out, not wake).
    #[test]
    fn a_give_up_takes_back_its_own_registration_not_an_older_one() {
        let waiters = Waiters::default();
        waiters.register(5, true);
        waiters.register(10, true);
        assert!(waiters.deregister(10));
        assert!(!waiters.deregister(10), "taken back once");
        let mut woken = Vec::new();
        assert_eq!(waiters.take_covered(5, 5, &mut woken), 1, "the LSN 5 entry");
        assert!(woken.is_empty(), "a late registration is not woken");
        assert_eq!(waiters.len(), 0);
    }

    #[test]
    fn take_all_empties_the_list() {
        let waiters = Waiters::default();
        waiters.register(10, false);
        waiters.register(5, false);
        let mut out = Vec::new();
        waiters.take_covered(0, 7, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(waiters.len(), 1);
        waiters.take_all(&mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(waiters.len(), 0);
    }
}
