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
//! (table, key), applies them in one pass, and then marks each request done and wakes its
//! owner. Each committer is woken once, with its rows already applied.
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
//! the database stops as it would for a committer's own apply, and every request of the
//! batch is marked failed, so that its owner returns the stop's cause. A panicking leader
//! marks them failed on its way out (`BatchGuard`), and its own commit's guard stops the
//! database.

use super::TableHandle;
use crate::access::keys::Key;
use crate::log::{GROUP_SESSIONS_MAX, Lsn};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
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
    static CORES: OnceLock<usize> = OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    sessions > cores.max(GROUP_SESSIONS_MAX)
}

/// A request's state (`ApplySlot::state`).
const IDLE: u8 = 0;
const QUEUED: u8 = 1;
const TAKEN: u8 = 2;
const APPLIED: u8 = 3;
const FAILED: u8 = 4;

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

/// The requests posted and not yet taken, in posting order.
#[derive(Default)]
pub(super) struct ApplyQueue {
    queued: Mutex<Vec<Queued>>,
}

/// Requests taken by one thread, to apply as one batch.
#[derive(Default)]
pub(super) struct Batch {
    taken: Vec<Queued>,
    // (table id, key, index into `taken`, row index within its request), sorted by
    // (table, key).
    order: Vec<(usize, Key, usize, usize)>,
}

/// How a grouped commit's apply ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Applied {
    Yes,
    // The database stopped: its cause is the commit's error.
    Failed,
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
        let SlotRows { rows: out, bytes } = &mut *slot;
        out.clear();
        bytes.clear();
        for (table, key, row) in rows {
            bytes.extend_from_slice(row);
            out.push((Arc::clone(table), *key, bytes.len()));
        }
    }

    /// Parks until the thread that took this request has applied it (or failed), and makes
    /// the slot idle again.
    pub(super) fn wait_applied(&self) -> Applied {
        loop {
            match self.state.load(Ordering::Acquire) {
                APPLIED | FAILED => break,
                // Parks can end spuriously; the taker unparks after it publishes.
                _ => std::thread::park(),
            }
        }
        let outcome = match self.state.swap(IDLE, Ordering::AcqRel) {
            APPLIED => Applied::Yes,
            _ => Applied::Failed,
        };
        // Drops the table handles now rather than at the next commit.
        self.rows.lock().rows.clear();
        outcome
    }

    fn finish(&self, state: u8, owner: &Thread) {
        debug_assert_eq!(self.state.load(Ordering::Acquire), TAKEN);
        self.state.store(state, Ordering::Release);
        // The taker's own request: it is not parked, and a token left behind would end
        // the next park of whatever code runs on this thread early.
        if owner.id() != std::thread::current().id() {
            owner.unpark();
        }
    }
}

impl ApplyQueue {
    /// Posts `slot`'s rows (filled) for the commit that ends at `end`.
    pub(super) fn post(&self, end: Lsn, slot: &Arc<ApplySlot>) {
        let mut queued = self.queued.lock();
        slot.state.store(QUEUED, Ordering::Release);
        queued.push(Queued {
            end,
            slot: Arc::clone(slot),
            owner: std::thread::current(),
        });
    }

    /// Called by the owner of `slot` once its commit is durable: if its request is still
    /// queued, takes it and every other request `durable` covers into `batch` (true: the
    /// caller must apply the batch). False if another thread took it.
    pub(super) fn take_if_queued(&self, slot: &ApplySlot, durable: Lsn, batch: &mut Batch) -> bool {
        let mut queued = self.queued.lock();
        if slot.state.load(Ordering::Acquire) != QUEUED {
            return false;
        }
        let mut index = 0;
        while index < queued.len() {
            if queued[index].end <= durable {
                let request = queued.swap_remove(index);
                request.slot.state.store(TAKEN, Ordering::Release);
                batch.taken.push(request);
            } else {
                index += 1;
            }
        }
        assert_eq!(
            slot.state.load(Ordering::Acquire),
            TAKEN,
            "a durable commit's own request was not taken"
        );
        true
    }

    /// Takes `slot`'s request back when its commit failed before it was durable: true if
    /// it was still queued (nobody applies it). False if another thread took it: the
    /// commit was durable after all, and the caller must wait for it (`wait_applied`).
    pub(super) fn withdraw(&self, slot: &ApplySlot) -> bool {
        let mut queued = self.queued.lock();
        let Some(index) = queued.iter().position(|q| std::ptr::eq(&*q.slot, slot)) else {
            return false;
        };
        queued.swap_remove(index);
        slot.state.store(IDLE, Ordering::Release);
        // Its table handles would otherwise live until the session's next grouped commit.
        slot.rows.lock().rows.clear();
        true
    }
}

impl Batch {
    /// Applies every taken request's rows in (table, key) order with `insert`, then marks
    /// each request applied and wakes its owner. Returns how many rows it applied.
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
    ) -> crate::Result<usize> {
        let guard = BatchGuard { batch: self, stop };
        let batch = &mut *guard.batch;
        batch.order.clear();
        for (index, request) in batch.taken.iter().enumerate() {
            let slot = request.slot.rows.lock();
            let rows = slot.rows.iter().enumerate();
            batch
                .order
                .extend(rows.map(|(row, (table, key, _))| (table.id, *key, index, row)));
        }
        batch
            .order
            .sort_unstable_by(|a, b| (a.0, a.1.as_bytes()).cmp(&(b.0, b.1.as_bytes())));
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
        for request in batch.taken.drain(..) {
            request.slot.finish(state, &request.owner);
        }
        result
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
        let applied = batch.apply(record, &|error| panic!("stopped by {error}"));
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
        let applied = batch.apply(|_, _, _| Ok(()), &|error| panic!("stopped by {error}"));
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
                batch.apply(insert, &stop)
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
