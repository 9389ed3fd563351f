//! Table layouts beyond one clustered B+tree: hash partitions (seed 000's `ID % 8`) and
//! sequential-key flow control (seed 001's `OPTIMIZE_FOR_SEQUENTIAL_KEY`).
//!
//! - **Hash partitions**: N B+trees; the row with id `v` lives in partition `v mod N`. The
//!   key bytes stay the plain identity key, so each partition is in id order and a scan
//!   merges them ([`merge_scan`]).
//! - **Flow control**: one B+tree, and a gate ([`FlowGate`]) that admits at most a fixed
//!   number of sessions at a time to inserts at the right end of the tree. Time spent
//!   waiting at the gate is the wait type `BTREE_INSERT_FLOW_CONTROL`.
//! - **Memory**: no B+tree at all; the rows live in a latch-free ordered index in memory,
//!   durable through the log and a checkpoint file (see `crate::access::memtable`).

use crate::access::btree::BTree;
use crate::access::keys::{Key, KeyKind};
use crate::error::{Error, Result};
use crate::stats::{Stats, WaitType};
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// The most partitions a hash-partitioned table has.
pub const PARTITIONS_MAX: u32 = 1024;
/// Partitions of `hash-partition` unless asked otherwise (seed 000 used `ID % 8`).
pub const PARTITIONS_DEFAULT: u32 = 8;
/// The most sessions flow control admits at once.
pub const FLOW_CONTROL_SESSIONS_MAX: u32 = 4096;
/// The most page chains (data files) a heap has.
pub const HEAP_CHAINS_MAX: u32 = 64;
/// Rows a partitioned scan fetches from one partition at a time: memory stays bounded
/// by partitions x this, whatever the table's size.
pub const MERGE_BATCH_ROWS: usize = 256;

/// How a table's rows are organised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One clustered B+tree.
    Clustered,
    /// `partitions` B+trees; the row with integer key `v` goes to partition
    /// `v.rem_euclid(partitions)`. Needs an integer key kind (identity, sequence,
    /// session-range).
    HashPartitioned {
        /// Number of partitions (1 to [`PARTITIONS_MAX`]).
        partitions: u32,
    },
    /// One clustered B+tree whose right-end inserts pass a gate admitting at most
    /// `sessions` at a time (see [`FlowGate`]).
    FlowControl {
        /// Sessions admitted at once (1 to [`FLOW_CONTROL_SESSIONS_MAX`]).
        sessions: u32,
    },
    /// A heap (see `crate::access::heap`): rows placed by a free-space map, one page chain per
    /// data file. No index: `get` reads pages, scans are in physical order.
    Heap {
        /// Page chains (the database's data files when the table was created).
        chains: u32,
    },
    /// A heap plus a nonclustered B+tree on the key whose entries point to heap pages
    /// (seed 001 V3): reads and scans go through the index, in key order.
    HeapIndexed {
        /// Page chains of the heap.
        chains: u32,
    },
    /// A memory-optimized table: no pages, a lock-free skip list in memory, durable through
    /// the commit records and a per-table checkpoint file (see [`crate::access::memtable`]).
    Memory,
}

impl Layout {
    /// Flow control admitting as many sessions as this machine has CPUs (the default: one
    /// runnable inserter per core).
    pub fn flow_control_default() -> Layout {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        Layout::FlowControl {
            sessions: u32::try_from(cpus)
                .unwrap_or(FLOW_CONTROL_SESSIONS_MAX)
                .clamp(1, FLOW_CONTROL_SESSIONS_MAX),
        }
    }

    /// Number of B+trees a table of this layout has (a heap's index counts; a memory table
    /// has none).
    pub fn tree_count(&self) -> usize {
        match self {
            Layout::HashPartitioned { partitions } => *partitions as usize,
            Layout::Clustered | Layout::FlowControl { .. } | Layout::HeapIndexed { .. } => 1,
            Layout::Heap { .. } | Layout::Memory => 0,
        }
    }

    /// Number of heap page chains.
    pub fn chain_count(&self) -> usize {
        match self {
            Layout::Heap { chains } | Layout::HeapIndexed { chains } => *chains as usize,
            _ => 0,
        }
    }

    /// Number of root pages the catalog keeps: every tree's root, then every chain's head.
    pub fn root_count(&self) -> usize {
        self.tree_count() + self.chain_count()
    }

    /// The largest row a table of this layout stores in pages of `page_size` bytes: a heap
    /// page holds rows up to nearly the page (seed 002 goes to 4000 bytes in 8 KiB pages), a
    /// B+tree leaf a quarter of it (so that a split always makes room).
    pub fn row_bytes_max(&self, page_size: usize) -> usize {
        if self.is_heap() {
            crate::access::heap::row_bytes_max(page_size)
        } else {
            crate::access::btree::row_bytes_max(page_size)
        }
    }

    /// True for the heap layouts.
    pub fn is_heap(&self) -> bool {
        self.chain_count() > 0
    }

    /// Checks the layout's numbers, and that `kind` can be partitioned.
    pub fn validate(&self, kind: KeyKind) -> Result<()> {
        match *self {
            Layout::Clustered | Layout::Memory => Ok(()),
            Layout::HashPartitioned { partitions } => {
                if !(1..=PARTITIONS_MAX).contains(&partitions) {
                    return Err(Error::InvalidOption(format!(
                        "partitions must be from 1 to {PARTITIONS_MAX}, not {partitions}"
                    )));
                }
                match kind {
                    KeyKind::Identity { .. }
                    | KeyKind::Sequence { .. }
                    | KeyKind::SessionRange { .. } => Ok(()),
                    other => Err(Error::InvalidOption(format!(
                        "hash partitioning needs integer keys (identity, sequence, session-range), not {}",
                        other.name()
                    ))),
                }
            }
            Layout::Heap { chains } | Layout::HeapIndexed { chains } => {
                if (1..=HEAP_CHAINS_MAX).contains(&chains) {
                    Ok(())
                } else {
                    Err(Error::InvalidOption(format!(
                        "a heap has 1 to {HEAP_CHAINS_MAX} page chains (one per data file), not {chains}"
                    )))
                }
            }
            Layout::FlowControl { sessions } => {
                if (1..=FLOW_CONTROL_SESSIONS_MAX).contains(&sessions) {
                    Ok(())
                } else {
                    Err(Error::InvalidOption(format!(
                        "flow-control sessions must be from 1 to {FLOW_CONTROL_SESSIONS_MAX}, not {sessions}"
                    )))
                }
            }
        }
    }

    /// The catalog's encoding: (tag, parameter).
    pub(crate) fn to_parts(self) -> (u8, u32) {
        match self {
            Layout::Clustered => (0, 0),
            Layout::HashPartitioned { partitions } => (1, partitions),
            Layout::FlowControl { sessions } => (2, sessions),
            Layout::Heap { chains } => (3, chains),
            Layout::HeapIndexed { chains } => (4, chains),
            // Tags 3 and 4 are taken by the heap layouts.
            Layout::Memory => (5, 0),
        }
    }

    /// The inverse of `to_parts`; `None` for an unknown tag.
    pub(crate) fn from_parts(tag: u8, param: u32) -> Option<Layout> {
        Some(match tag {
            0 => Layout::Clustered,
            1 => Layout::HashPartitioned { partitions: param },
            2 => Layout::FlowControl { sessions: param },
            3 => Layout::Heap { chains: param },
            4 => Layout::HeapIndexed { chains: param },
            5 if param == 0 => Layout::Memory,
            _ => return None,
        })
    }
}

/// The partition of an encoded integer key: `value mod partitions` (Euclidean, so negative
/// ids route too). A key that is not an 8-byte integer is `InvalidOption`.
pub fn partition_of(key: &[u8], partitions: u32) -> Result<usize> {
    let value = Key::from_bytes(key)?.to_i64().ok_or_else(|| {
        Error::InvalidOption(format!(
            "a hash-partitioned table needs 8-byte integer keys, not {} bytes",
            key.len()
        ))
    })?;
    Ok(value.rem_euclid(i64::from(partitions.max(1))) as usize)
}

struct Cursor {
    rows: std::collections::VecDeque<(Vec<u8>, Vec<u8>)>,
    // The last key fetched from this partition: the next batch starts after it.
    after: Option<Vec<u8>>,
    done: bool,
}

/// Visits the rows of several trees in one ascending key order from `from` (inclusive)
/// until `visit` returns false: a k-way merge that fetches [`MERGE_BATCH_ROWS`] rows per
/// tree at a time. The output is strictly ascending even while sessions insert: a row
/// that arrives in a partition behind a key already visited is skipped (it committed after
/// the scan passed its place, as with a single tree's scan).
pub fn merge_scan(
    trees: &[&BTree],
    from: Option<&[u8]>,
    mut visit: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<()> {
    let mut cursors: Vec<Cursor> = trees
        .iter()
        .map(|_| Cursor {
            rows: std::collections::VecDeque::new(),
            after: None,
            done: false,
        })
        .collect();
    let mut last: Option<Vec<u8>> = None;
    loop {
        for (tree, cursor) in trees.iter().zip(cursors.iter_mut()) {
            if cursor.done || !cursor.rows.is_empty() {
                continue;
            }
            let start = cursor.after.clone();
            let mut taken = 0usize;
            tree.scan(start.as_deref().or(from), |key, row| {
                if start.as_deref() == Some(key) {
                    return true; // the batch before ended here (`scan` is inclusive)
                }
                cursor.rows.push_back((key.to_vec(), row.to_vec()));
                taken += 1;
                taken < MERGE_BATCH_ROWS
            })?;
            if taken < MERGE_BATCH_ROWS {
                cursor.done = true;
            }
            if let Some((key, _)) = cursor.rows.back() {
                cursor.after = Some(key.clone());
            }
        }
        // Partitions are few (8 by default): a linear pick of the smallest head is enough.
        let mut best: Option<usize> = None;
        for (i, cursor) in cursors.iter().enumerate() {
            if let Some((key, _)) = cursor.rows.front()
                && best.is_none_or(|b| cursors[b].rows.front().is_some_and(|(k, _)| key < k))
            {
                best = Some(i);
            }
        }
        let Some(best) = best else {
            return Ok(());
        };
        let Some((key, row)) = cursors[best].rows.pop_front() else {
            return Ok(());
        };
        if last.as_deref().is_some_and(|l| key.as_slice() <= l) {
            continue;
        }
        if !visit(&key, &row) {
            return Ok(());
        }
        last = Some(key);
    }
}

#[derive(Default)]
struct Waiters {
    // Waiters whose row fits on the last leaf (they finish quickly), and those that will
    // split it.
    fast: u32,
    slow: u32,
}

/// Sequential-key flow control: at most `limit` sessions at a time insert at the right end
/// of a tree; the others park. A session whose row fits on the last leaf without a split is
/// admitted before any session whose row will split it (SQL Server likewise favours threads
/// that will finish quickly). Waiting is recorded as `BTREE_INSERT_FLOW_CONTROL`.
///
/// The uncontended path is one compare-and-swap on `active`; the mutex is only taken by
/// sessions that must wait, and by leavers when someone waits.
pub struct FlowGate {
    limit: u32,
    active: AtomicU32,
    // Sessions inside `enter`'s slow path; read without the mutex by the fast paths.
    waiting: AtomicU32,
    waiters: Mutex<Waiters>,
    fast_ready: Condvar,
    slow_ready: Condvar,
    stats: Arc<Stats>,
}

impl std::fmt::Debug for FlowGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowGate")
            .field("limit", &self.limit)
            .field("active", &self.active.load(Ordering::Relaxed))
            .finish()
    }
}

/// Admission through a [`FlowGate`]; leaving the gate when dropped.
#[derive(Debug)]
pub struct FlowPermit<'a> {
    gate: &'a FlowGate,
}

impl Drop for FlowPermit<'_> {
    fn drop(&mut self) {
        self.gate.leave();
    }
}

impl FlowGate {
    /// A gate admitting `limit` sessions at once (at least one), recording waits in `stats`.
    pub fn new(limit: u32, stats: Arc<Stats>) -> FlowGate {
        FlowGate {
            limit: limit.max(1),
            active: AtomicU32::new(0),
            waiting: AtomicU32::new(0),
            waiters: Mutex::new(Waiters::default()),
            fast_ready: Condvar::new(),
            slow_ready: Condvar::new(),
            stats,
        }
    }

    #[cfg(test)]
    /// Sessions inside the gate now.
    pub fn active(&self) -> u32 {
        self.active.load(Ordering::SeqCst)
    }

    fn try_take(&self) -> bool {
        self.active
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .is_ok()
    }

    /// Waits until admitted. `fast`: the row fits on the last leaf (no split), which gives
    /// priority over waiters that will split.
    pub fn enter(&self, fast: bool) -> FlowPermit<'_> {
        // No one waiting: take a free slot without the mutex (no barging past waiters).
        if self.waiting.load(Ordering::SeqCst) == 0 && self.try_take() {
            return FlowPermit { gate: self };
        }
        let started = Instant::now();
        let waiting = crate::stats::mark_waiting(WaitType::BtreeInsertFlowControl, None);
        let mut waiters = self.waiters.lock();
        // Counted before the re-check under the mutex: a leaver that decrements `active`
        // after our check sees us waiting and notifies under the same mutex.
        self.waiting.fetch_add(1, Ordering::SeqCst);
        if fast {
            waiters.fast += 1;
        } else {
            waiters.slow += 1;
        }
        loop {
            if (fast || waiters.fast == 0) && self.try_take() {
                break;
            }
            if fast {
                self.fast_ready.wait(&mut waiters);
            } else {
                self.slow_ready.wait(&mut waiters);
            }
        }
        if fast {
            waiters.fast -= 1;
        } else {
            waiters.slow -= 1;
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        // Two leavers may both have signalled one fast waiter: pass a free slot on.
        if self.active.load(Ordering::SeqCst) < self.limit {
            self.notify(&waiters);
        }
        drop(waiters);
        drop(waiting);
        let waited_ns = crate::stats::elapsed_ns(started);
        self.stats
            .record_wait(WaitType::BtreeInsertFlowControl, None, waited_ns);
        FlowPermit { gate: self }
    }

    fn notify(&self, waiters: &Waiters) {
        if waiters.fast > 0 {
            self.fast_ready.notify_one();
        } else if waiters.slow > 0 {
            self.slow_ready.notify_one();
        }
    }

    fn leave(&self) {
        self.active.fetch_sub(1, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            let waiters = self.waiters.lock();
            self.notify(&waiters);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn partitions_route_by_id_mod_n() {
        for id in [-9i64, -1, 0, 1, 7, 8, 15, 1_000_003] {
            let key = Key::from_i64(id);
            assert_eq!(
                partition_of(key.as_bytes(), 8).expect("route"),
                id.rem_euclid(8) as usize
            );
        }
        assert!(partition_of(b"abc", 8).is_err());
    }

    #[test]
    fn layouts_validate_and_round_trip() {
        let identity = KeyKind::Identity { start: 1, step: 1 };
        for layout in [
            Layout::Clustered,
            Layout::HashPartitioned { partitions: 8 },
            Layout::FlowControl { sessions: 3 },
            Layout::Memory,
        ] {
            layout.validate(identity).expect("valid");
            let (tag, param) = layout.to_parts();
            assert_eq!(Layout::from_parts(tag, param), Some(layout));
        }
        assert!(
            Layout::HashPartitioned { partitions: 0 }
                .validate(identity)
                .is_err()
        );
        assert!(
            Layout::HashPartitioned { partitions: 8 }
                .validate(KeyKind::GuidV4)
                .is_err()
        );
        assert!(
            Layout::FlowControl { sessions: 0 }
                .validate(identity)
                .is_err()
        );
        assert_eq!(Layout::from_parts(9, 1), None);
        assert_eq!(Layout::from_parts(5, 0), Some(Layout::Memory));
        assert_eq!(Layout::from_parts(5, 1), None);
        Layout::Memory
            .validate(KeyKind::GuidV4)
            .expect("any key kind");
        assert_eq!(Layout::Memory.tree_count(), 0);
    }

    #[test]
    fn the_gate_never_admits_more_than_its_limit_and_records_waits() {
        let stats = Stats::new();
        let gate = Arc::new(FlowGate::new(2, Arc::clone(&stats)));
        let inside_max = Arc::new(AtomicU32::new(0));
        let inside = Arc::new(AtomicU32::new(0));
        let done = Arc::new(AtomicU64::new(0));
        std::thread::scope(|scope| {
            for t in 0..8 {
                let (gate, inside, inside_max, done) = (&gate, &inside, &inside_max, &done);
                scope.spawn(move || {
                    for i in 0..200 {
                        let _permit = gate.enter((t + i) % 3 != 0);
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        inside_max.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(done.load(Ordering::SeqCst), 1600);
        assert!(inside_max.load(Ordering::SeqCst) <= 2);
        assert_eq!(gate.active(), 0);
        assert!(
            stats
                .snapshot()
                .wait(WaitType::BtreeInsertFlowControl)
                .count
                > 0
        );
    }
}
