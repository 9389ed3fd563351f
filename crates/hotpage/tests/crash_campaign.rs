//! The seeded power-loss campaign. Each seed drives a random run against a model:
//! - autocommit inserts, multi-row transactions that commit or roll back, checkpoints,
//!   lookups;
//! - a pool of 32 small pages, so dirty pages are evicted (and written) all the time;
//! - then power fails at a random moment: unsynced writes are dropped, torn into 512-byte
//!   sectors, or reordered. Sometimes a transaction is left open, and sometimes recovery
//!   itself is cut short by failing writes and the machine crashes again.
//!
//! Every third seed creates its database with 2 or 3 data files, so pages (and the writes
//! a crash drops, tears or reorders) are spread over several files and recovery must put
//! each page image back in the right one.
//!
//! The tables cover the layouts: clustered trees (identity, GUID, hash-prefix keys), a
//! table hash-partitioned by id % 4 (recovery must re-apply rows to the partition their
//! session used), a flow-controlled identity table and a memory-optimized table (no pages:
//! its rows before a checkpoint's logical point come back from its checkpoint file alone,
//! the log before that point having been released; the campaign checks that some seeds
//! did load rows from the file).
//!
//! After every reboot, each table must hold exactly the acknowledged rows: none lost, none
//! from an uncommitted or rolled-back transaction. Its B+tree must also pass the
//! structural check.
//!
//! `HOTPAGE_CRASH_SEEDS=N` runs N seeds (default 1000). `HOTPAGE_CRASH_SEED=S` replays one.
//! A failure names its seed.

use hotpage::io::{CrashMode, MemStorage, Storage};
use hotpage::wal::WalOptions;
use hotpage::{Database, Durability, Key, KeyKind, Layout, Options, TableHandle};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const TABLES: [(&str, &str, KeyKind, Layout); 11] = [
    (
        "ids",
        "identity",
        KeyKind::Identity { start: 1, step: 1 },
        Layout::Clustered,
    ),
    ("guids", "guid", KeyKind::GuidV4, Layout::Clustered),
    ("guids7", "guid-v7", KeyKind::GuidV7, Layout::Clustered),
    (
        "reversed",
        "bit-reverse",
        KeyKind::BitReverse { cache: 10 },
        Layout::Clustered,
    ),
    (
        "ranges",
        "session-range",
        KeyKind::SessionRange { block: 8 },
        Layout::Clustered,
    ),
    (
        "buckets",
        "hash-prefix",
        KeyKind::HashPrefix { buckets: 4 },
        Layout::Clustered,
    ),
    (
        "parts",
        "hash-partition",
        KeyKind::Identity { start: 1, step: 1 },
        Layout::HashPartitioned { partitions: 4 },
    ),
    (
        "flow",
        "identity-flow-control",
        KeyKind::Identity { start: 1, step: 1 },
        Layout::FlowControl { sessions: 2 },
    ),
    (
        "heap",
        "heap",
        KeyKind::Identity { start: 1, step: 1 },
        Layout::Heap { chains: 2 },
    ),
    (
        "heapnc",
        "heap-nc-identity",
        KeyKind::Identity { start: 1, step: 1 },
        Layout::HeapIndexed { chains: 1 },
    ),
    (
        "memory",
        "memory",
        KeyKind::Identity { start: 1, step: 1 },
        Layout::Memory,
    ),
];

/// Data files for a seed's database: 2 or 3 for every third seed, else 1.
fn data_files(seed: u64) -> u32 {
    if seed.is_multiple_of(3) {
        2 + (seed / 3 % 2) as u32
    } else {
        1
    }
}

fn options(data_files: u32) -> Options {
    Options {
        data_files,
        page_size: 4096,
        pool_bytes: 32 * 4096,
        durability: Durability::Sync,
        wal: WalOptions {
            segment_bytes: 1 << 20,
            buffer_bytes: 1 << 20,
            async_flush_interval: Duration::from_millis(1),
        },
        // Checkpoints happen when the campaign says, so a seed replays exactly.
        checkpoint_log_bytes: u64::MAX,
        checkpoint_interval: Duration::from_secs(3600),
        ..Options::default()
    }
}

type Model = BTreeMap<(usize, Vec<u8>), Vec<u8>>;

fn open(
    storage: &Arc<MemStorage>,
    data_files: u32,
) -> Result<(Database, Vec<TableHandle>), String> {
    let db = Database::open_with_storage(
        Arc::clone(storage) as Arc<dyn Storage>,
        Path::new("campaign"),
        options(data_files),
    )
    .map_err(|e| format!("open: {e}"))?;
    // The count is the database's, made durable with its first catalog: no crash loses it.
    if db.data_files() != data_files {
        return Err(format!(
            "the database has {} data files, created with {data_files}",
            db.data_files()
        ));
    }
    let mut handles = Vec::new();
    for (name, design, kind, layout) in TABLES {
        let handle = match db.table(name) {
            Ok(t) => t,
            Err(_) => db
                .create_table_with_layout(name, design, kind, layout)
                .map_err(|e| format!("create {name}: {e}"))?,
        };
        if handle.layout() != layout {
            return Err(format!("table {name} reopened as {:?}", handle.layout()));
        }
        handles.push(handle);
    }
    Ok((db, handles))
}

fn check(db: &Database, tables: &[TableHandle], model: &Model, when: &str) -> Result<(), String> {
    let session = db.session();
    for (t, table) in tables.iter().enumerate() {
        let shape = db
            .verify_table(table)
            .map_err(|e| format!("{when}: table {} fails its check: {e}", table.name()))?;
        let mut found: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        session
            .scan(table, None, |k, v| {
                found.push((k.to_vec(), v.to_vec()));
                true
            })
            .map_err(|e| format!("{when}: scan: {e}"))?;
        if matches!(table.layout(), Layout::Heap { .. }) {
            // A heap without an index scans in physical order.
            found.sort();
        }
        let expected: Vec<(Vec<u8>, Vec<u8>)> = model
            .range((t, Vec::new())..(t + 1, Vec::new()))
            .map(|((_, k), v)| (k.clone(), v.clone()))
            .collect();
        if found != expected {
            let lost = expected.iter().filter(|e| !found.contains(e)).count();
            let extra = found.iter().filter(|f| !expected.contains(f)).count();
            return Err(format!(
                "{when}: table {}: {lost} acknowledged rows lost, {extra} rows that were never acknowledged, {} rows found for {} expected",
                table.name(),
                found.len(),
                expected.len()
            ));
        }
        // Point lookups route by key: a row re-applied to the wrong partition is lost here
        // even though a scan (which merges every partition) would still find it.
        for (k, v) in &expected {
            let key = Key::from_bytes(k).map_err(|e| format!("key: {e}"))?;
            let got = session
                .get(table, &key)
                .map_err(|e| format!("{when}: get: {e}"))?;
            if got.as_ref() != Some(v) {
                return Err(format!(
                    "{when}: table {}: an acknowledged row is not where get looks",
                    table.name()
                ));
            }
        }
        if shape.rows != expected.len() as u64 {
            return Err(format!(
                "{when}: tree counts {} rows, model {}",
                shape.rows,
                expected.len()
            ));
        }
    }
    Ok(())
}

fn row(rng: &mut SmallRng) -> Vec<u8> {
    let len = rng.random_range(0..200usize);
    (0..len).map(|_| rng.random()).collect()
}

/// Runs one seed; returns the rows its opens loaded from memory tables' checkpoint files.
fn run_seed(seed: u64) -> Result<u64, String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut storage = MemStorage::new(seed);
    let mut model: Model = BTreeMap::new();
    let files = data_files(seed);
    let rounds = rng.random_range(1..=4);
    let mut loaded = 0u64;
    for round in 0..rounds {
        let (db, tables) = open(&storage, files)?;
        loaded += db.recovery_report().memory_rows_loaded;
        check(&db, &tables, &model, &format!("round {round} after open"))?;
        let mut session = db.session();
        for _ in 0..rng.random_range(5..40) {
            let roll = rng.random_range(0..100);
            let t = rng.random_range(0..tables.len());
            if roll < 55 {
                let r = row(&mut rng);
                let key = session
                    .insert(&tables[t], &r)
                    .map_err(|e| format!("insert: {e}"))?;
                model.insert((t, key.as_bytes().to_vec()), r);
            } else if roll < 85 {
                session.begin().map_err(|e| format!("begin: {e}"))?;
                let mut rows: Vec<(usize, Key, Vec<u8>)> = Vec::new();
                for _ in 0..rng.random_range(1..25) {
                    let t = rng.random_range(0..tables.len());
                    let r = row(&mut rng);
                    let key = session
                        .insert(&tables[t], &r)
                        .map_err(|e| format!("insert: {e}"))?;
                    rows.push((t, key, r));
                }
                if rng.random_range(0..5) == 0 {
                    session.rollback().map_err(|e| format!("rollback: {e}"))?;
                } else {
                    session.commit().map_err(|e| format!("commit: {e}"))?;
                    for (t, key, r) in rows {
                        model.insert((t, key.as_bytes().to_vec()), r);
                    }
                }
            } else if roll < 92 {
                db.checkpoint().map_err(|e| format!("checkpoint: {e}"))?;
            } else if let Some(((t, key), expected)) = model.iter().nth(
                rng.random_range(0..model.len().max(1))
                    .min(model.len().saturating_sub(1)),
            ) {
                let key = Key::from_bytes(key).map_err(|e| format!("key: {e}"))?;
                let got = session
                    .get(&tables[*t], &key)
                    .map_err(|e| format!("get: {e}"))?;
                if got.as_ref() != Some(expected) {
                    return Err(format!("round {round}: get of an acknowledged row failed"));
                }
            }
        }
        // Sometimes die with a transaction open: its rows must never appear.
        if rng.random_range(0..3) == 0 {
            session.begin().map_err(|e| format!("begin: {e}"))?;
            for _ in 0..rng.random_range(1..10) {
                let t = rng.random_range(0..tables.len());
                let r = row(&mut rng);
                session
                    .insert(&tables[t], &r)
                    .map_err(|e| format!("insert: {e}"))?;
            }
        }
        let mode =
            [CrashMode::DropAll, CrashMode::Reorder, CrashMode::Torn][rng.random_range(0..3)];
        let next_seed = seed.wrapping_mul(1_000_003).wrapping_add(round);
        storage = storage
            .reboot(mode, next_seed)
            .map_err(|e| format!("reboot: {e}"))?;
        drop(session);
        drop(tables);
        drop(db); // the killed process; it can no longer reach the rebooted storage
        if rng.random_range(0..5) == 0 {
            // Recovery cut short by failing writes, then another power failure.
            storage.fail_writes_after(Some(rng.random_range(0..40)));
            let _ = open(&storage, files);
            storage.fail_writes_after(None);
            let mode =
                [CrashMode::DropAll, CrashMode::Reorder, CrashMode::Torn][rng.random_range(0..3)];
            storage = storage
                .reboot(mode, next_seed ^ 0x5eed)
                .map_err(|e| format!("reboot: {e}"))?;
        }
    }
    let (db, tables) = open(&storage, files)?;
    loaded += db.recovery_report().memory_rows_loaded;
    check(&db, &tables, &model, "final")?;
    Ok(loaded)
}

#[test]
fn power_loss_campaign_loses_no_acknowledged_row_and_shows_no_uncommitted_one() {
    if let Ok(seed) = std::env::var("HOTPAGE_CRASH_SEED") {
        let seed: u64 = seed.parse().expect("HOTPAGE_CRASH_SEED must be a number");
        match run_seed(seed) {
            Ok(loaded) => eprintln!("seed {seed}: {loaded} memory rows loaded from files"),
            Err(failure) => panic!("seed {seed}: {failure}"),
        }
        return;
    }
    let seeds: u64 = std::env::var("HOTPAGE_CRASH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let workers = 2u64;
    let mut seeds_loading_memory = 0u64;
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                s.spawn(move || {
                    let mut loading = 0u64;
                    let mut failures = Vec::new();
                    for seed in (0..seeds).filter(|seed| seed % workers == w) {
                        match run_seed(seed) {
                            Ok(loaded) => loading += u64::from(loaded > 0),
                            Err(f) => failures.push(format!(
                                "seed {seed}: {f} (replay: HOTPAGE_CRASH_SEED={seed})"
                            )),
                        }
                    }
                    (loading, failures)
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                let (loading, failures) = h.join().expect("worker");
                seeds_loading_memory += loading;
                failures
            })
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {seeds} seeds failed:\n{}",
        failures.len(),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The memory table's checkpoint file must have been exercised, not only its log.
    eprintln!("{seeds_loading_memory} of {seeds} seeds loaded memory rows from a checkpoint file");
    if seeds >= 50 {
        assert!(
            seeds_loading_memory * 10 >= seeds,
            "only {seeds_loading_memory} of {seeds} seeds loaded memory rows from a checkpoint file"
        );
    }
}
