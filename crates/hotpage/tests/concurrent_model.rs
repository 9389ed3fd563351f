//! Many threads insert into one B+tree at once, with ascending, random and mixed keys,
//! through a buffer pool much smaller than the tree (so eviction races with the inserts),
//! while reader threads look rows up and scan. Afterwards the tree must hold exactly the
//! model's rows (a `BTreeMap` built from what each insert reported), in order, and pass
//! its structural check.
//!
//! A tree outside a database counts no sessions, and an insert that finds its leaf busy
//! spins first. The `…_counted_as_sessions` runs count every writer as a database counts
//! its sessions, so that with more writers than cores an insert on a busy leaf combines
//! at once, as it does in a database.

use hotpage::testing::{BTree, Inserted};
use hotpage::testing::{BufferPool, Placement};
use hotpage::testing::{Counter, SessionSlot, Stats};
use hotpage::testing::{MemStorage, Storage};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One insert as its thread saw it: key, row, outcome.
type Outcome = ([u8; 8], Vec<u8>, Inserted);

/// Sets the flag when dropped, including while unwinding.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[derive(Clone, Copy, Debug)]
enum Pattern {
    Ascending,
    Random,
    Mixed,
    // Ascending within each of four key prefixes (hash-prefix's buckets): the hot leaves
    // are in the middle of the tree, bounded above by the next bucket.
    Buckets,
}

const BUCKETS: u64 = 4;

/// How long one model run may take before it counts as hung (a few seconds normally, in a
/// debug build on 2 cores).
const RUN_SECONDS_MAX: u64 = 240;

/// Runs the pattern on a thread of its own and fails, instead of hanging the test binary,
/// if it does not finish in time (a deadlock among the inserting threads). Returns the rows
/// the busy leaves' combining leaders inserted.
fn run(pattern: Pattern, threads: usize, rows_per_thread: u64, seed: u64) -> u64 {
    run_with(Run {
        pattern,
        threads,
        rows_per_thread,
        seed,
        sessions: Sessions::Uncounted,
    })
}

/// Runs `run` and proves that some rows were combined at a busy leaf, so that the model
/// check covered combining. Whether a row is combined depends on timing: one run of a fast
/// build on a loaded machine can go by without a leaf busy for long enough (threads not
/// counted as sessions spin for a busy leaf first). So up to five seeds, from `run.seed`
/// on, are tried for one that combined; every run is checked against the model.
fn assert_combines(run: Run) {
    const RUNS_MAX: u64 = 5;
    for seed in run.seed..run.seed + RUNS_MAX {
        if run_with(Run { seed, ..run }) > 0 {
            return;
        }
    }
    panic!("no insert was combined in {RUNS_MAX} runs of {run:?}");
}

/// Whether the writers are counted as sessions (`Stats::session_slot`).
#[derive(Clone, Copy, Debug)]
enum Sessions {
    Uncounted,
    Counted,
}

/// One model run.
#[derive(Clone, Copy, Debug)]
struct Run {
    pattern: Pattern,
    threads: usize,
    rows_per_thread: u64,
    seed: u64,
    sessions: Sessions,
}

/// `run` for any `Run`.
fn run_with(run: Run) -> u64 {
    let Run {
        pattern, threads, ..
    } = run;
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let combined = run_model(run);
        let _ = done.send(combined);
    });
    match finished.recv_timeout(std::time::Duration::from_secs(RUN_SECONDS_MAX)) {
        Ok(combined) => combined,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{pattern:?} with {threads} threads hung for {RUN_SECONDS_MAX} s: a deadlock")
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            panic!("{pattern:?} with {threads} threads failed (see the panic above)")
        }
    }
}

fn run_model(run: Run) -> u64 {
    let Run {
        pattern,
        threads,
        rows_per_thread,
        seed,
        sessions,
    } = run;
    let mem = MemStorage::new(seed);
    let file = mem.open("data.0", true).expect("open");
    // 4 KiB pages, 64 frames: the finished tree is several times the pool.
    let stats = Stats::new();
    let _slots: Vec<SessionSlot> = match sessions {
        Sessions::Counted => (0..threads).map(|_| stats.session_slot()).collect(),
        Sessions::Uncounted => Vec::new(),
    };
    let pool = BufferPool::open(file, "data.0", 4096, 64 * 4096, Arc::clone(&stats)).expect("pool");
    let tree = BTree::create(Arc::new(pool), Placement::Spread).expect("tree");
    let counter = AtomicU64::new(0);
    let bucket_counters: Vec<AtomicU64> = (0..BUCKETS).map(|_| AtomicU64::new(0)).collect();
    let done = AtomicBool::new(false);
    // The writers start together, so that they meet at the busy leaves from the first row.
    let start = std::sync::Barrier::new(threads);

    let results: Vec<Vec<Outcome>> = std::thread::scope(|s| {
        // Two readers: every validated get of a key a writer already saw inserted must find
        // it, and every scan must come back in strictly ascending order.
        for r in 0..2u64 {
            let (tree, done, counter) = (&tree, &done, &counter);
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed ^ (r + 100));
                while !done.load(Ordering::Relaxed) {
                    let mut last: Option<Vec<u8>> = None;
                    let mut seen = 0;
                    let start = rng.random::<u64>().to_be_bytes();
                    tree.scan(Some(&start), |k, _| {
                        if let Some(l) = &last {
                            assert!(l.as_slice() < k, "scan out of order");
                        }
                        last = Some(k.to_vec());
                        seen += 1;
                        seen < 500
                    })
                    .expect("scan");
                    let upto = counter.load(Ordering::Relaxed);
                    if upto > 0 {
                        // Ascending keys below the counter's value may still be in flight;
                        // lookups must simply never fail or see a wrong row.
                        let probe = rng.random_range(0..upto);
                        if let Some(v) = tree.get(&probe.to_be_bytes()).expect("get") {
                            assert_eq!(v[..8], probe.to_le_bytes(), "row under the wrong key");
                        }
                    }
                }
            });
        }
        let writers: Vec<_> = (0..threads)
            .map(|t| {
                let (tree, counter, buckets) = (&tree, &counter, &bucket_counters);
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    let mut rng =
                        SmallRng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(t as u64));
                    let mut mine = Vec::with_capacity(rows_per_thread as usize);
                    for i in 0..rows_per_thread {
                        let ascending = match pattern {
                            Pattern::Ascending | Pattern::Buckets => true,
                            Pattern::Random => false,
                            Pattern::Mixed => (t + i as usize).is_multiple_of(2),
                        };
                        let id = if matches!(pattern, Pattern::Buckets) {
                            let bucket = (t as u64 + i) % BUCKETS;
                            bucket << 56 | buckets[bucket as usize].fetch_add(1, Ordering::Relaxed)
                        } else if ascending {
                            counter.fetch_add(1, Ordering::Relaxed)
                        } else {
                            // A small key space so that threads collide on duplicates.
                            rng.random_range(0..rows_per_thread * threads as u64 * 2)
                        };
                        let key = id.to_be_bytes();
                        let mut value = id.to_le_bytes().to_vec();
                        value.extend_from_slice(&(t as u32).to_le_bytes());
                        value.resize(8 + 4 + (id % 60) as usize, 0xAB);
                        let outcome = tree.insert(&key, &value).expect("insert");
                        mine.push((key, value, outcome));
                        if outcome == Inserted::Yes {
                            // Our own insert must be visible to us at once.
                            assert_eq!(
                                tree.get(&key).expect("get"),
                                Some(mine.last().expect("row").1.clone())
                            );
                        }
                    }
                    mine
                })
            })
            .collect();
        // Stop the readers however the writers end: a writer that panics (a failed check)
        // must fail the test, not leave the readers spinning and the scope waiting forever.
        let _stop_readers = StopOnDrop(&done);
        writers
            .into_iter()
            .map(|w| w.join().expect("writer"))
            .collect()
    });

    let mut model: BTreeMap<[u8; 8], Vec<u8>> = BTreeMap::new();
    let mut duplicates_reported = 0u64;
    for (key, value, outcome) in results.into_iter().flatten() {
        match outcome {
            Inserted::Yes => {
                assert!(
                    model.insert(key, value).is_none(),
                    "two inserts of {key:?} both succeeded"
                );
            }
            Inserted::Duplicate => duplicates_reported += 1,
        }
    }
    let total = threads as u64 * rows_per_thread;
    assert_eq!(model.len() as u64 + duplicates_reported, total);
    if matches!(pattern, Pattern::Ascending) {
        assert_eq!(duplicates_reported, 0);
    }

    let stats_handle = stats;
    let stats = tree.verify().expect("tree structure");
    assert_eq!(stats.rows, model.len() as u64);
    let mut scanned = Vec::with_capacity(model.len());
    tree.scan(None, |k, v| {
        scanned.push((k.to_vec(), v.to_vec()));
        true
    })
    .expect("scan");
    let expected: Vec<(Vec<u8>, Vec<u8>)> =
        model.iter().map(|(k, v)| (k.to_vec(), v.clone())).collect();
    assert!(scanned == expected, "scan differs from the model");
    for (key, value) in model.iter().step_by(7) {
        assert_eq!(tree.get(key).expect("get").as_ref(), Some(value));
    }
    // Every duplicate a thread was told about must really exist.
    assert!(
        stats.pages() > 64 * 3,
        "tree of {} pages did not outgrow the 64-frame pool",
        stats.pages()
    );
    combined_rows(&stats_handle)
}

fn combined_rows(stats: &Stats) -> u64 {
    stats.snapshot().counter(Counter::CombinedRows)
}

#[test]
fn eight_threads_ascending_keys() {
    run(Pattern::Ascending, 8, 6_000, 1);
}

#[test]
fn eight_threads_random_keys() {
    run(Pattern::Random, 8, 6_000, 2);
}

#[test]
fn sixteen_threads_mixed_keys() {
    run(Pattern::Mixed, 16, 3_000, 3);
}

#[test]
fn sixty_four_threads_ascending_keys_on_two_cores() {
    // The busy last leaf is where combining happens: prove the test exercises it.
    assert_combines(Run {
        pattern: Pattern::Ascending,
        threads: 64,
        rows_per_thread: 800,
        seed: 4,
        sessions: Sessions::Uncounted,
    });
}

#[test]
fn eight_threads_ascending_keys_counted_as_sessions() {
    run_with(Run {
        pattern: Pattern::Ascending,
        threads: 8,
        rows_per_thread: 6_000,
        seed: 6,
        sessions: Sessions::Counted,
    });
}

#[test]
fn sixty_four_threads_ascending_keys_counted_as_sessions() {
    assert_combines(Run {
        pattern: Pattern::Ascending,
        threads: 64,
        rows_per_thread: 800,
        seed: 7,
        sessions: Sessions::Counted,
    });
}

#[test]
fn thirty_two_threads_ascending_in_four_buckets_counted_as_sessions() {
    assert_combines(Run {
        pattern: Pattern::Buckets,
        threads: 32,
        rows_per_thread: 1_500,
        seed: 8,
        sessions: Sessions::Counted,
    });
}

#[test]
fn thirty_two_threads_ascending_in_four_buckets() {
    assert_combines(Run {
        pattern: Pattern::Buckets,
        threads: 32,
        rows_per_thread: 1_500,
        seed: 5,
        sessions: Sessions::Uncounted,
    });
}
