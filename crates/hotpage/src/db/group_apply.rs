//! The grouped apply: the rows of every commit one flush covers are applied by one thread,
//! in key order (issue 11, "apply a flush group's rows in key order").
//!
//! A durable commit applies its rows after its flush. When every committer applied its own
//! rows, they reached the tree in the order the scheduler ran the woken committers, not in
//! key order: with 64 sessions on 2 cores, half the rows of an ascending key arrived behind
//! a larger one, and the last leaf's stragglers split closed pages in half (leaf fill 85 %).
//! A trace of one such run showed that commit (LSN) order is nearly key order (0.3 % of
//! rows late, against 50 % in apply order), and that applying each flush's commits sorted
//! by key leaves 0.05 % of them late (docs/BENCHMARKS.md).
//!
//! So a committer whose rows all go to B+trees posts them here with its commit's end LSN
//! before it waits, and waits with its wake-up delegated
//! ([`crate::log::Wal::wait_durable_delegated`]): of the committers a flush covers, the log
//! wakes only the first. That one (or any committer that finds its own request still
//! queued after its wait) takes every request the durable LSN covers, sorts their rows by
//! (table, key), applies them in one pass, and then marks each request done and wakes the
//! owners. Each committer is woken once, with its rows already applied.
//!
//! **One taker at a time.** With two cores, two flushes' takers used to insert at once and
//! interleave their batches at the last leaf (identity at 200 sessions: 87–90 % leaf fill;
//! 94.7 % with one taker at a time: docs/BENCHMARKS.md). So the queue holds a taker's role
//! (`QueueState::taker`). A committer that finds it held leaves its request, and the taker
//! looks again after its batch (`take_more`: the argument that nothing is left behind is
//! there). The role covers only the inserts: it is given up before the owners are woken,
//! and taken back for the next batch. A taker's own commit returns only when it stops, so
//! after `TAKER_BATCHES_MAX` batches it hands the role to the owner of the first request
//! left (`HANDED`), which takes the next batch itself.
//!
//! **Owners are woken as a tree** (`finish_all`): the taker wakes two, and each woken owner
//! two more. A taker that woke all of a batch's owners itself (a futex call each, several
//! microseconds on this VM) held up the next batch by that long.
//!
//! Why no request is left behind: a request is posted before its owner registers with the
//! log, so when a flush takes out a delegated waiter, that waiter's request is already
//! queued. The flush wakes the first delegated waiter it covers; once it runs it either
//! finds its request queued and takes every request the (grown) durable LSN covers, which
//! includes the rest of that flush, or finds it taken by another thread that read a durable
//! LSN at or past it: durable LSNs are flush ends, so that one covered the whole flush too.
//! A committer whose commit was durable before it waited is woken by whoever took its
//! request, since the request names its thread.
//!
//! Two registrations could have broken that, and the log rules both out
//! (`log::commit_wait`): a committer that registered after the flush that covered it is
//! not parked (it saw that flush's durable LSN on its own), so a later flush never picks
//! it as the one to wake; and a committer that gives up (the log stopped) takes its
//! registration back, or, if a flush took it out first, goes on as covered. The crash
//! campaign's concurrent seeds (up to 28 sessions) hung on each before it was fixed.
//!
//! Failure: the rows of a durable commit must all be applied. If one fails (an I/O error),
//! the database stops as it would for a committer's own apply, and then every request of
//! the batch is marked failed, so that its owner returns the stop's cause; once stopped, a
//! taker inserts nothing more and fails what it takes. A panicking taker stops the
//! database and marks its batch failed on its way out (`BatchGuard`), gives up the role and
//! fails every covered request left to it (`TakerGuard`, `ApplyQueue::abandon`).

use super::TableHandle;
use crate::access::keys::Key;
use crate::log::{GROUP_SESSIONS_MAX, Lsn};
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::thread::Thread;

/// Whether a database with `sessions` sessions applies its durable commits in groups:
/// only when its committers park and it has more sessions than the machine has cores.
/// Then the committers a flush wakes queue for a core and run in the scheduler's order,
/// which is where the disorder comes from. With a core each they apply at once and in
/// parallel, and one thread applying for all of them only adds a wait (2 sessions on 2
/// cores: 0.91–0.93× the rows/s grouped). With at most `GROUP_SESSIONS_MAX` sessions the
/// log keeps each commit group whole and its committers spin rather than park, and their
/// leaves stay full without grouping (94.5–95 % at 8 and 16 sessions on 2 cores, grouped
/// or not: docs/BENCHMARKS.md).
pub(super) fn worth_grouping(sessions: usize) -> bool {
    sessions > crate::latch::cores().max(GROUP_SESSIONS_MAX)
}

/// How many batches one taker inserts before it hands the role on (`ApplyQueue::take_more`):
/// a taker's own commit returns only when it stops, so the loop is bounded.
pub(super) const TAKER_BATCHES_MAX: usize = 4;

/// How many owners the taker wakes, and each woken owner wakes in turn (`finish_all`).
const WAKE_FAN_OUT: usize = 2;

/// A request's state (`ApplySlot::state`).
const IDLE: u8 = 0;
const QUEUED: u8 = 1;
const TAKEN: u8 = 2;
const APPLIED: u8 = 3;
const FAILED: u8 = 4;
// Still queued, and its owner is now the taker (`take_more` handed the role on).
const HANDED: u8 = 5;

/// One session's request: the rows of its current commit. Reused for every commit of the
/// session, so a commit allocates nothing here once the buffers have grown.
#[derive(Default)]
pub(super) struct ApplySlot {
    state: AtomicU8,
    rows: Mutex<SlotRows>,
}

#[derive(Default)]
struct SlotRows {
    // (table, key, end of the row in `bytes`); a row starts where the previous one ends.
    rows: Vec<(TableHandle, Key, usize)>,
    bytes: Vec<u8>,
    // The owners this slot's owner wakes once its request is finished (`finish_all`).
    wake_next: Vec<Thread>,
}

impl SlotRows {
    fn row(&self, index: usize) -> (&TableHandle, &Key, &[u8]) {
        let start = index.checked_sub(1).map_or(0, |prev| self.rows[prev].2);
        let (table, key, end) = &self.rows[index];
        (table, key, &self.bytes[start..*end])
    }
}

/// A posted request.
struct Queued {
    end: Lsn,
    slot: Arc<ApplySlot>,
    owner: Thread,
}

/// The requests posted and not yet taken, and whether a taker is inserting.
#[derive(Default)]
pub(super) struct ApplyQueue {
    queued: Mutex<QueueState>,
}

#[derive(Default)]
struct QueueState {
    // In posting order.
    requests: Vec<Queued>,
    // A taker holds the role: it takes and inserts, and nobody else does until it gives
    // the role up (`end_insert`) or hands it on (a HANDED request's owner then holds it).
    taker: bool,
}

/// Requests taken by one thread, to apply as one batch.
#[derive(Default)]
pub(super) struct Batch {
    taken: Vec<Queued>,
    // (table id, key, index into `taken`, row index within its request), sorted by
    // (table, key).
    order: Vec<(usize, Key, usize, usize)>,
}

/// How a grouped commit's wait ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Applied {
    Yes,
    // The database stopped: its cause is the commit's error.
    Failed,
    // Not applied yet: the caller is now the taker (`ApplyQueue::take_handed`).
    Handed,
}

/// What the taker does after a batch (`ApplyQueue::take_more`).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    // Insert the batch taken.
    Apply,
    // Nothing left for this taker: done.
    Done,
}

impl ApplySlot {
    /// Copies a commit's rows in. The slot must be idle (its last commit finished).
    pub(super) fn fill(&self, rows: &[(&TableHandle, Key, &[u8])]) {
        assert_eq!(
            self.state.load(Ordering::Acquire),
            IDLE,
            "a slot reused while busy"
        );
        let mut slot = self.rows.lock();
        let SlotRows {
            rows: out, bytes, ..
        } = &mut *slot;
        out.clear();
        bytes.clear();
        for (table, key, row) in rows {
            bytes.extend_from_slice(row);
            out.push((Arc::clone(table), *key, bytes.len()));
        }
    }

    /// Parks until the thread that took this request has applied it (or failed), wakes
    /// the owners this one is to wake, and makes the slot idle again; or until the taker's
    /// role is handed to this slot's owner (`Applied::Handed`: the request is still queued).
    pub(super) fn wait_applied(&self) -> Applied {
        loop {
            match self.state.load(Ordering::Acquire) {
                APPLIED | FAILED => break,
                HANDED => return Applied::Handed,
                // Parks can end spuriously; the taker unparks after it publishes.
                _ => std::thread::park(),
            }
        }
        let outcome = match self.state.swap(IDLE, Ordering::AcqRel) {
            APPLIED => Applied::Yes,
            _ => Applied::Failed,
        };
        let mut rows = self.rows.lock();
        // Passes the wake-up on before anything else: those owners wait for it.
        for owner in rows.wake_next.drain(..) {
            owner.unpark();
        }
        // Drops the table handles now rather than at the next commit.
        rows.rows.clear();
        outcome
    }

    fn finish(&self, state: u8, owner: &Thread) {
        debug_assert_eq!(self.state.load(Ordering::Acquire), TAKEN);
        self.state.store(state, Ordering::Release);
        unpark_other(owner);
    }
}

/// Unparks `owner` unless it is the calling thread (the taker's own request): a token
/// left behind would end the next park of whatever code runs on this thread early.
fn unpark_other(owner: &Thread) {
    if owner.id() != std::thread::current().id() {
        owner.unpark();
    }
}

impl ApplyQueue {
    /// Posts `slot`'s rows (filled) for the commit that ends at `end`.
    pub(super) fn post(&self, end: Lsn, slot: &Arc<ApplySlot>) {
        let mut queued = self.queued.lock();
        slot.state.store(QUEUED, Ordering::Release);
        queued.requests.push(Queued {
            end,
            slot: Arc::clone(slot),
            owner: std::thread::current(),
        });
    }

    /// Called by the owner of `slot` once its commit is durable. If its request is still
    /// queued and no taker is at work, the caller becomes the taker: it takes its own and
    /// every other request `durable` covers into `batch` and must apply them (true). False
    /// if another thread took the request, or a taker is at work: that taker takes it
    /// after its batch (`take_more`), and the caller waits (`wait_applied`).
    pub(super) fn take_if_queued(&self, slot: &ApplySlot, durable: Lsn, batch: &mut Batch) -> bool {
        let mut queued = self.queued.lock();
        if slot.state.load(Ordering::Acquire) != QUEUED || queued.taker {
            return false;
        }
        queued.taker = true;
        take_covered(&mut queued.requests, durable, batch, slot);
        true
    }

    /// Called by the owner of `slot` whose wait ended `Applied::Handed`: it holds the
    /// taker's role already, and takes its own and every request `durable` covers.
    pub(super) fn take_handed(&self, slot: &ApplySlot, durable: Lsn, batch: &mut Batch) {
        let mut queued = self.queued.lock();
        assert!(queued.taker, "a hand-over without the taker's role");
        assert_eq!(slot.state.load(Ordering::Acquire), HANDED);
        take_covered(&mut queued.requests, durable, batch, slot);
    }

    /// The taker's batch is inserted: gives the role up, so that the next flush's
    /// committer can insert while this one wakes its owners.
    pub(super) fn end_insert(&self) {
        let mut queued = self.queued.lock();
        debug_assert!(queued.taker, "a taker without the role");
        queued.taker = false;
    }

    /// After a batch's owners are woken, the last taker looks again: a committer that
    /// found it at work left its request for it. If no other taker is at work now and
    /// `durable` covers queued requests, it takes the role back and the next batch
    /// (`Next::Apply`), or, after `batches` reached `TAKER_BATCHES_MAX`, hands the role to
    /// the owner of the first of them (`Applied::Handed`) and is done.
    ///
    /// Why nothing is left behind: a committer left its request only after it saw the
    /// role held, under this lock, and after it saw the durable LSN cover its commit.
    /// Every holder of the role gives it up (`end_insert`) and then looks here, reading
    /// the durable LSN after giving it up. So the holder the committer saw, or, if the
    /// role is held again at that look, the later holder (which gives it up and looks in
    /// turn), reads a durable LSN that covers the request, and takes it or hands it on.
    /// A hand-over keeps the role held; its new holder looks after its batch too.
    pub(super) fn take_more(&self, durable: Lsn, batch: &mut Batch, batches: usize) -> Next {
        let mut queued = self.queued.lock();
        if queued.taker {
            return Next::Done;
        }
        let Some(first) = queued.requests.iter().position(|q| q.end <= durable) else {
            return Next::Done;
        };
        queued.taker = true;
        if batches >= TAKER_BATCHES_MAX {
            let first = &queued.requests[first];
            debug_assert_eq!(first.slot.state.load(Ordering::Acquire), QUEUED);
            first.slot.state.store(HANDED, Ordering::Release);
            first.owner.unpark();
            return Next::Done;
        }
        drain_covered(&mut queued.requests, durable, |r| batch.taken.push(r));
        Next::Apply
    }

    /// A taker that panicked: gives the role up, and marks failed every request the
    /// durable LSN covers (their owners may wait for this taker). The database has stopped.
    pub(super) fn abandon(&self, durable: Lsn) {
        let mut queued = self.queued.lock();
        queued.taker = false;
        drain_covered(&mut queued.requests, durable, |request| {
            request.slot.finish(FAILED, &request.owner);
        });
    }

    /// Takes `slot`'s request back when its commit failed before it was durable: true if
    /// it was still queued (nobody applies it). False if another thread took it: the
    /// commit was durable after all, and the caller must wait for it (`wait_applied`).
    pub(super) fn withdraw(&self, slot: &ApplySlot) -> bool {
        let mut queued = self.queued.lock();
        let found = queued
            .requests
            .iter()
            .position(|q| std::ptr::eq(&*q.slot, slot));
        let Some(index) = found else {
            return false;
        };
        debug_assert_eq!(slot.state.load(Ordering::Acquire), QUEUED, "not covered");
        queued.requests.swap_remove(index);
        slot.state.store(IDLE, Ordering::Release);
        // Its table handles would otherwise live until the session's next grouped commit.
        slot.rows.lock().rows.clear();
        true
    }
}

/// Moves every request `durable` covers into `batch`, the caller's own (`own`) last: the
/// last request of a batch wakes nobody (`finish_all`), and the caller wakes no one while
/// it goes on taking batches.
fn take_covered(queued: &mut Vec<Queued>, durable: Lsn, batch: &mut Batch, own: &ApplySlot) {
    drain_covered(queued, durable, |request| batch.taken.push(request));
    let position = batch.taken.iter().position(|q| std::ptr::eq(&*q.slot, own));
    let position = position.expect("a durable commit's own request was not taken");
    let last = batch.taken.len() - 1;
    batch.taken.swap(position, last);
}

/// Takes every request `durable` covers out of `queued`, marks it taken, and hands it to
/// `each`.
fn drain_covered(queued: &mut Vec<Queued>, durable: Lsn, mut each: impl FnMut(Queued)) {
    let mut index = 0;
    while index < queued.len() {
        if queued[index].end <= durable {
            let request = queued.swap_remove(index);
            request.slot.state.store(TAKEN, Ordering::Release);
            each(request);
        } else {
            index += 1;
        }
    }
}

impl Batch {
    /// Applies every taken request's rows in (table, key) order with `insert`, calls
    /// `inserted`, then marks each request applied and wakes the owners (`finish_all`).
    /// Returns how many rows it applied.
    ///
    /// At the first error from `insert` (or a panic) it calls `stop` first, which must stop
    /// the database, and only then marks every request failed. The order matters: an owner
    /// told its request failed ends its commit, which clears its applying marker, and a
    /// checkpoint that ran before the stop could then take its logical point past a commit
    /// whose rows are not all applied, and recovery would never re-apply them.
    pub(super) fn apply(
        &mut self,
        mut insert: impl FnMut(&TableHandle, &Key, &[u8]) -> crate::Result<()>,
        stop: &dyn Fn(&crate::Error),
        inserted: impl FnOnce(),
    ) -> crate::Result<usize> {
        let guard = BatchGuard { batch: self, stop };
        let batch = &mut *guard.batch;
        batch.sort_rows();
        let taken = &batch.taken;
        let mut result = Ok(batch.order.len());
        for &(_, _, index, row) in &batch.order {
            let rows = taken[index].slot.rows.lock();
            let (table, key, bytes) = rows.row(row);
            if let Err(error) = insert(table, key, bytes) {
                result = Err(error);
                break;
            }
        }
        let state = match &result {
            Ok(_) => APPLIED,
            Err(error) => {
                (guard.stop)(error);
                FAILED
            }
        };
        inserted();
        finish_all(&mut batch.taken, state);
        result
    }

    /// Fills `order` with every taken row, sorted by (table, key).
    fn sort_rows(&mut self) {
        self.order.clear();
        for (index, request) in self.taken.iter().enumerate() {
            let slot = request.slot.rows.lock();
            let rows = slot.rows.iter().enumerate();
            self.order
                .extend(rows.map(|(row, (table, key, _))| (table.id, *key, index, row)));
        }
        self.order
            .sort_unstable_by(|a, b| (a.0, a.1.as_bytes()).cmp(&(b.0, b.1.as_bytes())));
    }
}

/// Marks every taken request `state` and wakes the owners as a tree: the taker wakes the
/// first `WAKE_FAN_OUT`, and the owner of request k wakes those of (k + 1) × F … (k + 2) ×
/// F − 1 when it wakes (`wait_applied`). Waking one owner is a futex call of several
/// microseconds on this VM, and a taker that woke every owner itself held up the batches
/// behind it (docs/BENCHMARKS.md, "one grouped applier at a time").
///
/// A child's state is stored before its parent's: an owner that sees its own state
/// (acquire) then sees its children's, so a child it wakes never finds its request still
/// taken and parks again with nobody left to wake it. The taker's own request is last in
/// the batch (`take_covered`), so it has no children, and nobody wakes the taker.
fn finish_all(taken: &mut Vec<Queued>, state: u8) {
    let count = taken.len();
    let me = std::thread::current().id();
    for (index, request) in taken.iter().enumerate() {
        let first = ((index + 1) * WAKE_FAN_OUT).min(count);
        let last = (first + WAKE_FAN_OUT).min(count);
        let mut rows = request.slot.rows.lock();
        debug_assert!(
            rows.wake_next.is_empty(),
            "a wake-up left from the last batch"
        );
        let children = taken[first..last].iter().map(|child| &child.owner);
        rows.wake_next
            .extend(children.filter(|owner| owner.id() != me).cloned());
    }
    for request in taken.iter().rev() {
        debug_assert_eq!(request.slot.state.load(Ordering::Acquire), TAKEN);
        request.slot.state.store(state, Ordering::Release);
    }
    for request in taken.drain(..).take(WAKE_FAN_OUT) {
        unpark_other(&request.owner);
    }
}

/// When a batch's apply ends by a panic: stops the database, then marks every request
/// still taken failed and wakes its owner (an owner must never park for ever).
struct BatchGuard<'a> {
    batch: &'a mut Batch,
    stop: &'a dyn Fn(&crate::Error),
}

impl Drop for BatchGuard<'_> {
    fn drop(&mut self) {
        if self.batch.taken.is_empty() {
            return;
        }
        (self.stop)(&super::apply_marker::panicked_while_applying());
        for request in self.batch.taken.drain(..) {
            request.slot.finish(FAILED, &request.owner);
        }
    }
}

/// Held by a taker while it inserts batches (`Session::apply_as_taker`): if it unwinds, it
/// stops the database (`stop`) and `abandon`s the role, failing every covered request
/// left queued, whose owners may wait for this taker.
pub(super) struct TakerGuard<'a> {
    pub(super) queue: &'a ApplyQueue,
    pub(super) stop: &'a dyn Fn(&crate::Error),
    pub(super) durable: &'a dyn Fn() -> Lsn,
    pub(super) armed: bool,
}

impl TakerGuard<'_> {
    /// The taker is done without a panic.
    pub(super) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for TakerGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            (self.stop)(&super::apply_marker::panicked_while_applying());
            self.queue.abandon((self.durable)());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::race_tests::open;
    use crate::db::{Database, Session};
    use crate::error::Error;
    use crate::storage::MemStorage;
    use crate::txn::Durability;
    use crate::{KeyKind, StatsSnapshot};
    use std::sync::atomic::{AtomicBool, AtomicU64};

    fn key(value: u64) -> Key {
        Key::from_bytes(&value.to_be_bytes()).expect("key")
    }

    fn table(db: &Database) -> TableHandle {
        let identity = KeyKind::Identity { start: 1, step: 1 };
        db.create_table("t", "identity", identity).expect("create")
    }

    /// What the owners of a test share: how many posted, and whether the batch's `stop`
    /// ran (the database stopped).
    #[derive(Default)]
    struct Owners {
        posted: AtomicU64,
        stopped: AtomicBool,
    }

    /// Posts a request of `keys` from a thread of its own, ending at LSN `end`, and returns
    /// that thread: it waits for its request to be taken and applied, and returns how, and
    /// whether the database had stopped by the time it woke.
    fn owner(
        queue: &Arc<ApplyQueue>,
        table: &TableHandle,
        end: Lsn,
        keys: Vec<u64>,
        shared: &Arc<Owners>,
    ) -> std::thread::JoinHandle<(Applied, bool)> {
        let (queue, table, shared) = (Arc::clone(queue), Arc::clone(table), Arc::clone(shared));
        std::thread::spawn(move || {
            let slot = Arc::new(ApplySlot::default());
            let rows: Vec<(&TableHandle, Key, &[u8])> = keys
                .iter()
                .map(|k| (&table, key(*k), &b"row"[..]))
                .collect();
            slot.fill(&rows);
            queue.post(end, &slot);
            shared.posted.fetch_add(1, Ordering::SeqCst);
            let applied = slot.wait_applied();
            (applied, shared.stopped.load(Ordering::SeqCst))
        })
    }

    /// Posts the calling thread's own request of one row, ending at `end`, and takes it
    /// with everything `end` covers, as a committer woken by its flush does.
    fn take_with_own(
        queue: &ApplyQueue,
        table: &TableHandle,
        (own_key, row): (u64, &[u8]),
        end: Lsn,
    ) -> (Arc<ApplySlot>, Batch) {
        let own = Arc::new(ApplySlot::default());
        own.fill(&[(table, key(own_key), row)]);
        queue.post(end, &own);
        let mut batch = Batch::default();
        assert!(queue.take_if_queued(&own, end, &mut batch));
        (own, batch)
    }

    fn wait_posted(shared: &Owners, count: u64) {
        while shared.posted.load(Ordering::SeqCst) < count {
            std::thread::yield_now();
        }
    }

    /// Eight owners post rows in no order; the taker applies all of them, its own too, in
    /// key order, and every owner wakes to `Applied::Yes`.
    #[test]
    fn a_batch_applies_every_covered_request_in_key_order() {
        let db = open(&MemStorage::new(1), Durability::Sync);
        let table = table(&db);
        let queue = Arc::new(ApplyQueue::default());
        let shared = Arc::new(Owners::default());
        let owners: Vec<_> = (0..8u64)
            .map(|i| {
                let keys = vec![(i * 37) % 8 * 10 + 5, (i * 11) % 8 * 10 + 1];
                owner(&queue, &table, 10 + i, keys, &shared)
            })
            .collect();
        wait_posted(&shared, 8);
        let (own, mut batch) = take_with_own(&queue, &table, (40, b"mine"), 100);
        let mut order = Vec::new();
        let record = |_: &TableHandle, k: &Key, row: &[u8]| {
            let value = u64::from_be_bytes(k.as_bytes().try_into().expect("8"));
            order.push((value, row.len()));
            Ok(())
        };
        let applied = batch.apply(record, &|error| panic!("stopped by {error}"), || {});
        assert_eq!(applied.expect("applied"), 17);
        let keys: Vec<u64> = order.iter().map(|(k, _)| *k).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted, "rows applied in key order");
        assert!(
            order.contains(&(40, 4)),
            "the taker's own row, with its bytes"
        );
        for owner in owners {
            assert_eq!(owner.join().expect("owner"), (Applied::Yes, false));
        }
        assert_eq!(own.wait_applied(), Applied::Yes);
        assert!(!queue.withdraw(&own), "nothing is left queued");
        // The taker did not unpark itself: a token left behind would end this thread's
        // next park at once.
        let start = std::time::Instant::now();
        std::thread::park_timeout(std::time::Duration::from_millis(40));
        assert!(start.elapsed().as_millis() >= 30, "a wake-up token left");
    }

    /// A request whose commit the durable LSN does not cover stays queued (its flush has
    /// not happened), and can be withdrawn by its owner.
    #[test]
    fn requests_past_the_durable_lsn_stay_queued() {
        let db = open(&MemStorage::new(2), Durability::Sync);
        let table = table(&db);
        let queue = ApplyQueue::default();
        let handles = Arc::strong_count(&table);
        let slots: Vec<Arc<ApplySlot>> = (0..3).map(|_| Arc::default()).collect();
        for (i, slot) in slots.iter().enumerate() {
            slot.fill(&[(&table, key(i as u64), b"r")]);
            queue.post(10 * (i as u64 + 1), slot);
        }
        let mut batch = Batch::default();
        assert!(queue.take_if_queued(&slots[0], 20, &mut batch));
        assert!(
            !queue.take_if_queued(&slots[1], 20, &mut batch),
            "taken already"
        );
        let applied = batch.apply(
            |_, _, _| Ok(()),
            &|error| panic!("stopped by {error}"),
            || {},
        );
        assert_eq!(applied.expect("applied"), 2);
        assert!(queue.withdraw(&slots[2]), "LSN 30 was not covered");
        assert_eq!(slots[0].wait_applied(), Applied::Yes);
        assert_eq!(slots[1].wait_applied(), Applied::Yes);
        // Neither a finished nor a withdrawn request keeps its table alive.
        assert_eq!(Arc::strong_count(&table), handles, "a table handle kept");
    }

    /// A row that fails marks every request of its batch failed, and a panic while
    /// applying does too: no owner is left parked. In both the database stops first (the
    /// batch's `stop` runs once), before any owner wakes to its failure.
    #[test]
    fn a_failed_or_panicking_batch_stops_then_fails_every_owner() {
        let db = open(&MemStorage::new(3), Durability::Sync);
        let table = table(&db);
        for panics in [false, true] {
            let queue = Arc::new(ApplyQueue::default());
            let shared = Arc::new(Owners::default());
            let owners: Vec<_> = (0..4u64)
                .map(|i| owner(&queue, &table, i + 1, vec![i], &shared))
                .collect();
            wait_posted(&shared, 4);
            let (own, mut batch) = take_with_own(&queue, &table, (9, b"r"), 5);
            let mut rows = 0;
            let stops = AtomicU64::new(0);
            let stop = |_: &Error| {
                // Slow, as a real stop may be: an owner woken before the stop finished
                // would see the flag still down.
                std::thread::sleep(std::time::Duration::from_millis(20));
                stops.fetch_add(1, Ordering::SeqCst);
                shared.stopped.store(true, Ordering::SeqCst);
            };
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let insert = |_: &TableHandle, _: &Key, _: &[u8]| {
                    rows += 1;
                    match rows {
                        2 if panics => panic!("injected by the test"),
                        2 => Err(Error::InvalidOption("injected".into())),
                        _ => Ok(()),
                    }
                };
                batch.apply(insert, &stop, || {})
            }));
            match outcome {
                Ok(result) => assert!(!panics && result.is_err()),
                Err(_) => assert!(panics),
            }
            assert_eq!(stops.load(Ordering::SeqCst), 1, "stopped once");
            for owner in owners {
                let woke = owner.join().expect("owner");
                assert_eq!(woke, (Applied::Failed, true), "failed, after the stop");
            }
            assert_eq!(own.wait_applied(), Applied::Failed);
        }
    }

    /// Posts a request of one row ending at `end` from a thread of its own, which then
    /// looks for the taker's role at `durable` (and must find it held), and waits. Returns
    /// the thread: how its wait ended, and, if the role was handed to it, what it applied.
    fn late_owner(
        queue: &Arc<ApplyQueue>,
        table: &TableHandle,
        (end, durable): (Lsn, Lsn),
        shared: &Arc<Owners>,
    ) -> std::thread::JoinHandle<(Applied, usize)> {
        let (queue, table, shared) = (Arc::clone(queue), Arc::clone(table), Arc::clone(shared));
        std::thread::spawn(move || {
            let slot = Arc::new(ApplySlot::default());
            slot.fill(&[(&table, key(end), b"late")]);
            queue.post(end, &slot);
            let mut batch = Batch::default();
            let took = queue.take_if_queued(&slot, durable, &mut batch);
            shared.posted.fetch_add(1, Ordering::SeqCst);
            assert!(!took, "a second taker while one is at work");
            match slot.wait_applied() {
                Applied::Handed => {
                    queue.take_handed(&slot, durable, &mut batch);
                    let never = |error: &Error| panic!("stopped by {error}");
                    let applied = batch.apply(|_, _, _| Ok(()), &never, || queue.end_insert());
                    assert_eq!(queue.take_more(durable, &mut batch, 1), Next::Done);
                    (slot.wait_applied(), applied.expect("applied"))
                }
                other => (other, 0),
            }
        })
    }

    /// A database's table and an empty queue.
    fn queue_of(storage: &Arc<MemStorage>) -> (Database, TableHandle, Arc<ApplyQueue>) {
        let db = open(storage, Durability::Sync);
        let table = table(&db);
        (db, table, Arc::new(ApplyQueue::default()))
    }

    /// The calling thread takes the role with its own request (key 1, LSN 1), then a late
    /// owner (key 5, LSN 5) finds the role held and leaves its request; durable is 10.
    fn taker_and_late_owner(
        queue: &Arc<ApplyQueue>,
        table: &TableHandle,
    ) -> (
        std::thread::JoinHandle<(Applied, usize)>,
        Arc<ApplySlot>,
        Batch,
    ) {
        let shared = Arc::new(Owners::default());
        let (own, batch) = take_with_own(queue, table, (1, b"r"), 10);
        let late = late_owner(queue, table, (5, 10), &shared);
        wait_posted(&shared, 1);
        (late, own, batch)
    }

    /// One taker at a time: a committer that finds the role held leaves its request, and
    /// the taker takes it after its batch (`take_more`), wakes its owner, and then finds
    /// nothing more.
    #[test]
    fn a_request_left_to_the_taker_is_taken_after_its_batch() {
        let (_db, table, queue) = queue_of(&MemStorage::new(5));
        let (late, _own, mut batch) = taker_and_late_owner(&queue, &table);
        let never = |error: &Error| panic!("stopped by {error}");
        let mut keys = Vec::new();
        let mut record = |_: &TableHandle, k: &Key, _: &[u8]| {
            keys.push(u64::from_be_bytes(k.as_bytes().try_into().expect("8")));
            Ok(())
        };
        batch
            .apply(&mut record, &never, || queue.end_insert())
            .expect("applied");
        assert_eq!(queue.take_more(10, &mut batch, 1), Next::Apply);
        batch
            .apply(&mut record, &never, || queue.end_insert())
            .expect("applied");
        assert_eq!(queue.take_more(10, &mut batch, 2), Next::Done);
        assert_eq!(keys, [1, 5], "the own batch, then the one left to it");
        assert_eq!(late.join().expect("late owner"), (Applied::Yes, 0));
    }

    /// After `TAKER_BATCHES_MAX` batches a taker hands the role to the owner of the first
    /// covered request, which takes its own request and applies it; the role is free after.
    #[test]
    fn after_its_batches_a_taker_hands_the_role_on() {
        let (_db, table, queue) = queue_of(&MemStorage::new(6));
        let (late, own, mut batch) = taker_and_late_owner(&queue, &table);
        let never = |error: &Error| panic!("stopped by {error}");
        let applied = batch.apply(|_, _, _| Ok(()), &never, || queue.end_insert());
        assert_eq!(applied.expect("applied"), 1);
        assert_eq!(own.wait_applied(), Applied::Yes);
        let next = queue.take_more(10, &mut batch, TAKER_BATCHES_MAX);
        assert_eq!(next, Next::Done, "handed on, not taken");
        assert_eq!(late.join().expect("late owner"), (Applied::Yes, 1));
        let (_, batch) = take_with_own(&queue, &table, (7, b"r"), 10);
        assert_eq!(batch.taken.len(), 1, "the role is free again");
    }

    /// A taker that panics stops the database and fails the requests left to it; the
    /// role is free again.
    #[test]
    fn a_panicking_taker_fails_what_was_left_to_it() {
        let (_db, table, queue) = queue_of(&MemStorage::new(7));
        let (late, own, mut batch) = taker_and_late_owner(&queue, &table);
        let stops = AtomicU64::new(0);
        let stop = |_: &Error| {
            stops.fetch_add(1, Ordering::SeqCst);
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _taker = TakerGuard {
                queue: &queue,
                stop: &stop,
                durable: &|| 10,
                armed: true,
            };
            let _ = batch.apply(|_, _, _| panic!("injected by the test"), &stop, || {});
        }));
        assert!(outcome.is_err());
        assert!(stops.load(Ordering::SeqCst) >= 1, "the database stopped");
        assert_eq!(own.wait_applied(), Applied::Failed);
        assert_eq!(late.join().expect("late owner"), (Applied::Failed, 0));
        let (_, batch) = take_with_own(&queue, &table, (7, b"r"), 10);
        assert_eq!(batch.taken.len(), 1, "the role is free again");
    }

    const ROW: &[u8] = b"forty bytes of row, more or less";

    /// Two sessions on any machine apply their own rows; past the log's group size and the
    /// machine's cores, commits are grouped.
    #[test]
    fn grouping_starts_past_the_cores_and_the_log_groups() {
        assert!(!worth_grouping(1) && !worth_grouping(2));
        assert!(!worth_grouping(GROUP_SESSIONS_MAX));
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(worth_grouping(cores.max(GROUP_SESSIONS_MAX) + 1));
    }

    fn counter(stats: &StatsSnapshot, counter: crate::Counter) -> u64 {
        stats.counter(counter)
    }

    /// More sessions than grouping needs (20 on a machine of up to 16 cores) commit one
    /// row at a time with sync durability: every row goes through the grouped apply, each
    /// commit's row is there when it returns, and the tree verifies.
    #[test]
    fn concurrent_durable_commits_are_all_applied_through_groups() {
        let db = open(&MemStorage::new(4), Durability::Sync);
        let table = table(&db);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let sessions = cores.max(GROUP_SESSIONS_MAX) + 4;
        assert!(worth_grouping(sessions));
        let commits = 2400 / sessions;
        let guid = db
            .create_table("g", "guid", KeyKind::GuidV4)
            .expect("create");
        // Every session opens before any commits: grouping depends on how many are open.
        let opened: Vec<Session> = (0..sessions).map(|_| db.session()).collect();
        // And none closes until every one is done.
        let done = std::sync::Barrier::new(sessions);
        std::thread::scope(|s| {
            for mut session in opened {
                let (table, guid, done) = (&table, &guid, &done);
                s.spawn(move || {
                    for _ in 0..commits {
                        let key = session.insert(table, ROW).expect("insert");
                        assert_eq!(
                            session.get(table, &key).expect("get").as_deref(),
                            Some(ROW),
                            "a commit's row is applied when it returns"
                        );
                    }
                    // Random keys are applied by their own committer.
                    session.insert(guid, ROW).expect("insert a guid");
                    done.wait();
                });
            }
        });
        let rows = (sessions * commits) as u64;
        assert_eq!(db.verify_table(&table).expect("verify").rows, rows);
        assert_eq!(
            db.verify_table(&guid).expect("verify").rows,
            sessions as u64
        );
        let stats = db.stats();
        assert_eq!(counter(&stats, crate::Counter::GroupedApplyRows), rows);
        let batches = counter(&stats, crate::Counter::GroupedApplyBatches);
        assert!((1..=rows).contains(&batches), "{batches} batches");
    }
}
