//! Combining at a busy leaf: the page-level twin of group commit.
//!
//! When the leaf an insert needs is latched by another session, the inserting session does
//! not queue for the latch. It leaves its row in its own request and parks. One waiter per
//! leaf becomes the **leader**: it takes the latch (waiting like any session), takes every
//! request waiting for that leaf, and inserts them all in key order in one latch hold, then
//! wakes each owner with its outcome. Requests that arrive while a leader works form the next
//! group, with a leader of their own. So at the tail of a sequential index, 64 sessions cost
//! a handful of latch hand-offs per group instead of 64, rows land in key order (leaves
//! stay full), and each waiter waits on its own request, never on a shared line.
//!
//! **Which rows a leader may insert.** Requests were routed to the leaf by a validated
//! descent, and a leaf's low bound never changes (leaves split to the right and are never
//! merged), so every request's key is at or above the leaf's low bound. The high bound can
//! shrink (a split moves the upper keys to a new right page), so a leader inserts a key only
//! when it is provably below it: at most the leaf's last key, or anything on the rightmost
//! leaf, or below the parent's next separator read under a validated parent version. Every
//! other request is handed back to retry from the root (`Outcome::Retry`), as is every
//! request left when the page is full.
//!
//! Requests live in a thread-local slot reused by every insert of that thread: no allocation
//! per row once a thread's buffers have grown to its row size.

use crate::format::PageId;
use parking_lot::{Mutex, MutexGuard};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::thread::Thread;

/// How a combined insert ended, for its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The leader inserted the row.
    Inserted,
    /// The key exists already.
    Duplicate,
    /// Not inserted: insert again from the root (the leaf split or is full).
    Retry,
    /// The leader's insert of this row failed (its log record was refused: the database
    /// stopped). The row may be on the page unlogged, so it must not be retried.
    Failed,
}

const PENDING: u8 = 0;
const INSERTED: u8 = 1;
const DUPLICATE: u8 = 2;
const RETRY: u8 = 3;
const FAILED: u8 = 4;

/// Spins before parking: a leader's group usually finishes within a few microseconds.
const SPINS_BEFORE_PARK: u32 = 64;

/// The row a request carries. Written by its owner before it is queued; read only by the
/// leader that took it, until that leader publishes the outcome.
#[derive(Default)]
pub(crate) struct RequestRow {
    pub(crate) key: Vec<u8>,
    pub(crate) row: Vec<u8>,
}

/// One session's waiting insert.
pub(crate) struct Request {
    state: AtomicU8,
    row: Mutex<RequestRow>,
    thread: Thread,
}

thread_local! {
    static LOCAL_REQUEST: Arc<Request> = Arc::new(Request {
        state: AtomicU8::new(PENDING),
        row: Mutex::new(RequestRow::default()),
        thread: std::thread::current(),
    });
}

impl Request {
    /// This thread's request, loaded with `key` and `row`.
    pub(crate) fn local(key: &[u8], row: &[u8]) -> Arc<Request> {
        let request = LOCAL_REQUEST.with(Arc::clone);
        {
            let mut data = request.row.lock();
            data.key.clear();
            data.key.extend_from_slice(key);
            data.row.clear();
            data.row.extend_from_slice(row);
        }
        request.state.store(PENDING, Ordering::Relaxed);
        request
    }

    /// A request of no thread's slot, for tests that build a leader's group by hand.
    #[cfg(test)]
    pub(crate) fn detached(key: &[u8], row: &[u8]) -> Arc<Request> {
        Arc::new(Request {
            state: AtomicU8::new(PENDING),
            row: Mutex::new(RequestRow {
                key: key.to_vec(),
                row: row.to_vec(),
            }),
            thread: std::thread::current(),
        })
    }

    /// The row, for the leader that took this request.
    pub(crate) fn row(&self) -> MutexGuard<'_, RequestRow> {
        self.row.lock()
    }

    /// Waits until a leader has dealt with this request.
    pub(crate) fn wait(&self) -> Outcome {
        for _ in 0..SPINS_BEFORE_PARK {
            if let Some(outcome) = self.outcome() {
                return outcome;
            }
            std::hint::spin_loop();
        }
        loop {
            if let Some(outcome) = self.outcome() {
                return outcome;
            }
            // The leader stores the outcome before it unparks: an unpark that comes before
            // this park leaves a token, so it is never lost (and a spurious return loops).
            std::thread::park();
        }
    }

    /// The outcome, once published.
    pub(crate) fn outcome(&self) -> Option<Outcome> {
        match self.state.load(Ordering::Acquire) {
            INSERTED => Some(Outcome::Inserted),
            DUPLICATE => Some(Outcome::Duplicate),
            RETRY => Some(Outcome::Retry),
            FAILED => Some(Outcome::Failed),
            _ => None,
        }
    }

    /// Publishes the outcome and wakes the owner (unless the owner is the caller).
    pub(crate) fn finish(&self, outcome: Outcome) {
        let state = match outcome {
            Outcome::Inserted => INSERTED,
            Outcome::Duplicate => DUPLICATE,
            Outcome::Retry => RETRY,
            Outcome::Failed => FAILED,
        };
        let previous = self.state.swap(state, Ordering::AcqRel);
        debug_assert_eq!(previous, PENDING, "a request finished twice");
        if self.thread.id() != std::thread::current().id() {
            self.thread.unpark();
        }
    }
}

/// Finishes every request of a leader's group still pending when dropped, with `Retry`:
/// a leader that unwinds (a failed assertion) must not leave its waiters parked for ever.
///
/// It must be disarmed once the group is finished: a finished owner reuses its request for
/// its next insert at once, and releasing that new, queued request here would make its owner
/// queue it twice (a leader would then lock its row twice: a deadlock this guard once caused).
pub(crate) struct AbandonOnDrop<'g> {
    group: &'g [Arc<Request>],
    armed: bool,
}

impl<'g> AbandonOnDrop<'g> {
    pub(crate) fn new(group: &'g [Arc<Request>]) -> AbandonOnDrop<'g> {
        AbandonOnDrop { group, armed: true }
    }

    /// Every request of the group has been finished: nothing to release any more.
    pub(crate) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for AbandonOnDrop<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        for request in self.group {
            if request
                .state
                .compare_exchange(PENDING, RETRY, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
                && request.thread.id() != std::thread::current().id()
            {
                request.thread.unpark();
            }
        }
    }
}

#[derive(Default)]
struct Queue {
    // (leaf, request)
    waiting: Vec<(PageId, Arc<Request>)>,
    // Leaves that have a leader now (between its enqueue and its take).
    leaders: Vec<PageId>,
}

/// The requests waiting for the leaves of one tree.
#[derive(Default)]
pub(crate) struct Combiner {
    queue: Mutex<Queue>,
}

impl Combiner {
    /// Queues `request` (for `leaf`). True when the caller is now that leaf's leader: it
    /// must take the leaf's latch, then `take` the group and finish every request in it.
    pub(crate) fn enqueue(&self, request: &Arc<Request>, leaf: PageId) -> bool {
        let mut queue = self.queue.lock();
        queue.waiting.push((leaf, Arc::clone(request)));
        if queue.leaders.contains(&leaf) {
            false
        } else {
            queue.leaders.push(leaf);
            true
        }
    }

    /// The leader's group: every request waiting for `leaf` (its own included), moved into
    /// `group`. From here on, a new request for `leaf` makes a new leader.
    pub(crate) fn take(&self, leaf: PageId, group: &mut Vec<Arc<Request>>) {
        let mut queue = self.queue.lock();
        queue.leaders.retain(|l| *l != leaf);
        let mut i = 0;
        while i < queue.waiting.len() {
            if queue.waiting[i].0 == leaf {
                group.push(queue.waiting.swap_remove(i).1);
            } else {
                i += 1;
            }
        }
        debug_assert!(!group.is_empty(), "a leader's own request is in its group");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Arc<Request> {
        Arc::new(Request {
            state: AtomicU8::new(PENDING),
            row: Mutex::new(RequestRow::default()),
            thread: std::thread::current(),
        })
    }

    #[test]
    fn the_first_request_for_a_leaf_leads_and_takes_only_its_leaf() {
        let combiner = Combiner::default();
        let mine = Request::local(b"k1", b"row");
        assert!(
            combiner.enqueue(&mine, PageId::new(0, 7)),
            "first for leaf 7 leads"
        );
        let other = request();
        assert!(
            !combiner.enqueue(&other, PageId::new(0, 7)),
            "a second waits for the leader"
        );
        assert!(
            combiner.enqueue(&request(), PageId::new(0, 9)),
            "another leaf has its own leader"
        );
        let mut group = Vec::new();
        combiner.take(PageId::new(0, 7), &mut group);
        assert_eq!(group.len(), 2);
        assert!(group.iter().any(|r| Arc::ptr_eq(r, &mine)));
        assert!(group.iter().any(|r| Arc::ptr_eq(r, &other)));
        // Leaf 7 has no leader now: the next request for it leads.
        assert!(combiner.enqueue(&request(), PageId::new(0, 7)));
        for request in &group {
            request.finish(Outcome::Inserted);
        }
        assert_eq!(mine.wait(), Outcome::Inserted);
        assert_eq!(other.outcome(), Some(Outcome::Inserted));
    }

    /// A leader that unwinds before finishing its group still releases every waiter.
    #[test]
    fn an_unwinding_leader_releases_its_waiters() {
        let group = vec![request(), request()];
        group[0].finish(Outcome::Inserted);
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _guard = AbandonOnDrop::new(&group);
            panic!("a leader's assertion failed");
        }));
        assert!(unwound.is_err());
        assert_eq!(
            group[0].outcome(),
            Some(Outcome::Inserted),
            "finished stays"
        );
        assert_eq!(
            group[1].outcome(),
            Some(Outcome::Retry),
            "pending is released"
        );
    }

    /// Once the group is finished the guard is disarmed: an owner that already reused its
    /// request (pending again, queued elsewhere) is left alone.
    #[test]
    fn a_disarmed_guard_leaves_reused_requests_alone() {
        let group = vec![request()];
        let guard = AbandonOnDrop::new(&group);
        group[0].finish(Outcome::Inserted);
        // The owner's next insert: the same request, pending again.
        group[0].state.store(PENDING, Ordering::Relaxed);
        guard.disarm();
        assert_eq!(group[0].outcome(), None, "a reused request was released");
    }
}
