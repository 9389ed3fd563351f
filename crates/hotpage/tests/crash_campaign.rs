//! The seeded power-loss campaign. Each seed drives a random run against a model.
//!
//! **One session per seed** (`power_loss_campaign_…`), several rounds of:
//! - autocommit inserts, multi-row transactions that commit or roll back (now and then one
//!   too large for one log record, logged in parts), checkpoints, lookups;
//! - a pool of 32 small pages, so dirty pages are evicted (and written) all the time;
//! - how the round ends, chosen at random: power fails at its end; or the machine halts
//!   after a random number of storage operations (a crash inside a checkpoint, a split, a
//!   segment switch); or an injected failure (write, fdatasync, read, rename, directory
//!   fsync, a full disk) ends it;
//! - then the power cut, in one of three modes: unsynced writes dropped, torn into 512-byte
//!   sectors, or reordered. Sometimes recovery itself is cut short by failing writes and
//!   the machine crashes again. Sometimes a record the log provably made durable is
//!   damaged: the next open must refuse the log (`CorruptLog`), never lose commits quietly.
//! - One seed in ten runs long: bigger rows, a checkpoint every few dozen operations, so
//!   the log crosses segments and recycles them.
//!
//! A commit that returns Ok must be there after every crash; one that returns an error
//! may be there or not, but wholly; a rolled-back or unfinished one never. Every table
//! must then also pass its structural check. Every design is in each seed, and every
//! third seed's database has 2 or 3 data files. Beside them is an unlogged table (its
//! layout varies with the file count), whose rows the model forgets at every reopen: each
//! round ends in a crash, after which it must be empty, while a transaction that wrote to
//! it and to logged tables must still be whole in the logged ones.
//!
//! Flushes happen only when someone waits for one (the flusher's timer is an hour), GUIDs
//! come from the seed (`Options::key_seed`), and a power cut is one atomic moment: a
//! single-session seed replays exactly (`the_same_seed_replays_exactly` checks it).
//!
//! **Concurrent sessions** (`concurrent_sessions_…`): 4 to 28 threads insert and commit
//! into every design at once while power fails at a random moment. Past 16 sessions (and
//! the machine's cores) durable commits into ascending keys are applied in groups, by one
//! committer for all (`db::group_apply`), so the campaign covers both paths. Interleavings do not
//! replay; the acknowledged set is checked all the same.
//!
//! `HOTPAGE_CRASH_SEEDS=N` runs N single-session seeds (default 1000) and
//! `HOTPAGE_CRASH_CONCURRENT_SEEDS=N` N concurrent ones (default 60).
//! `HOTPAGE_CRASH_SEED=S` replays one single-session seed. A failure names its seed.
//! 100,000 seeds: `HOTPAGE_CRASH_SEEDS=100000 cargo test --release -p hotpage --test
//! crash_campaign -- --nocapture` (docs/BENCHMARKS.md has the figures).

use hotpage::testing::Catalog;
use hotpage::testing::{CrashMode, FaultOp, MemStorage, Storage};
use hotpage::testing::{LogReader, RecordKind, WalOptions};
use hotpage::{Database, Durability, Error, Key, KeyKind, Layout, Options, TableHandle, TableSpec};
use parking_lot::Mutex;
use rand::{Rng, SeedableRng, rngs::SmallRng};
use std::collections::{BTreeMap, HashSet};
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

const SEGMENT_BYTES: u64 = 1 << 20;
const PATH: &str = "campaign";

/// Data files for a seed's database: 2 or 3 for every third seed, else 1.
fn data_files(seed: u64) -> u32 {
    if seed.is_multiple_of(3) {
        2 + (seed / 3 % 2) as u32
    } else {
        1
    }
}

fn options(data_files: u32, seed: u64, pool_pages: usize, checkpoint_log_bytes: u64) -> Options {
    Options {
        data_files,
        page_size: 4096,
        pool_bytes: pool_pages * 4096,
        durability: Durability::Sync,
        wal: WalOptions {
            segment_bytes: SEGMENT_BYTES,
            buffer_bytes: 1 << 20,
            // Flushes only when someone waits for one: what is flushed, and when, follows
            // from the session's operations alone (a seed replays exactly).
            async_flush_interval: Duration::from_secs(3600),
        },
        checkpoint_log_bytes,
        checkpoint_interval: Duration::from_secs(3600),
        key_seed: Some(seed),
        ..Options::default()
    }
}

/// A row as the model holds it: (table, key, row).
type Row = (usize, Vec<u8>, Vec<u8>);

/// What must be in the tables after a crash, and what may be.
#[derive(Default)]
struct Model {
    /// Acknowledged commits' rows: each must be there.
    rows: BTreeMap<(usize, Vec<u8>), Vec<u8>>,
    /// Commits that returned an error (the crash or fault hit them): each must be there
    /// wholly or not at all.
    maybe: Vec<Vec<Row>>,
}

impl Model {
    fn acknowledge(&mut self, rows: Vec<Row>) {
        for (t, k, r) in rows {
            self.rows.insert((t, k), r);
        }
    }

    /// After a crash: the unlogged tables are empty, so their rows leave the model (also
    /// from the uncertain commits, whose logged rows must still be all there or none).
    fn forget_unlogged(&mut self, tables: &[TableHandle]) {
        self.rows.retain(|(t, _), _| !tables[*t].is_unlogged());
        for txn in &mut self.maybe {
            txn.retain(|(t, _, _)| !tables[*t].is_unlogged());
        }
        self.maybe.retain(|txn| !txn.is_empty());
    }

    /// After a reopen: each uncertain commit is either wholly there (it became durable,
    /// and joins the acknowledged rows) or not at all.
    fn settle(&mut self, db: &Database, tables: &[TableHandle]) -> Result<(), String> {
        self.forget_unlogged(tables);
        let session = db.session();
        for txn in std::mem::take(&mut self.maybe) {
            let mut present = 0;
            for (t, k, r) in &txn {
                let key = Key::from_bytes(k).map_err(|e| format!("key: {e}"))?;
                match session
                    .get(&tables[*t], &key)
                    .map_err(|e| format!("get: {e}"))?
                {
                    Some(found) if &found == r => present += 1,
                    Some(_) => return Err("an uncertain commit's row has other bytes".into()),
                    None => {}
                }
            }
            if present == txn.len() {
                self.acknowledge(txn);
            } else if present > 0 {
                return Err(format!(
                    "a transaction is partly there: {present} of {} rows",
                    txn.len()
                ));
            }
        }
        Ok(())
    }
}

/// Opens a single-session seed's database: a 32-page pool, checkpoints only when the
/// campaign asks.
fn open_db(storage: &Arc<MemStorage>, files: u32, seed: u64) -> Result<Database, Error> {
    // No durable marks: their writes follow the wall clock, and a seed must replay
    // exactly. The concurrent seeds keep them (crashes while they are written).
    let options = Options {
        durable_marks: false,
        ..options(files, seed, 32, u64::MAX)
    };
    Database::open_with_storage(
        Arc::clone(storage) as Arc<dyn Storage>,
        Path::new(PATH),
        options,
    )
}

/// Opens a concurrent seed's database: a pool for 28 sessions, and the checkpointer runs
/// every 256 KiB of log, fuzzy checkpoints while the sessions commit.
fn open_concurrent(storage: &Arc<MemStorage>, files: u32, seed: u64) -> Result<Database, Error> {
    Database::open_with_storage(
        Arc::clone(storage) as Arc<dyn Storage>,
        Path::new(PATH),
        options(files, seed, 168, 256 << 10),
    )
}

fn tables_of(db: &Database, files: u32) -> Result<Vec<TableHandle>, String> {
    // The count is the database's, made durable with its first catalog: no crash loses it.
    if db.data_files() != files {
        return Err(format!(
            "the database has {} data files, created with {files}",
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
    handles.push(unlogged_table(db, files)?);
    Ok(handles)
}

/// The unlogged table, its layout chosen by the file count so that seeds cover a tree,
/// partitions and a heap with its index in the unlogged file.
fn unlogged_table(db: &Database, files: u32) -> Result<TableHandle, String> {
    let layout = match files {
        1 => Layout::Clustered,
        2 => Layout::HeapIndexed { chains: 2 },
        _ => Layout::HashPartitioned { partitions: 3 },
    };
    let handle = match db.table("scratch") {
        Ok(t) => t,
        Err(_) => db
            .create_table_spec(&TableSpec {
                name: "scratch",
                design: "unlogged",
                kind: KeyKind::Identity { start: 1, step: 1 },
                layout,
                user_keys: false,
                schema: b"",
                unlogged: true,
            })
            .map_err(|e| format!("create scratch: {e}"))?,
    };
    if !handle.is_unlogged() || handle.layout() != layout {
        return Err("the unlogged table reopened as another".into());
    }
    Ok(handle)
}

/// Every table must hold exactly the model's rows and pass its structural check.
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
            .rows
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

fn row(rng: &mut SmallRng, long: bool) -> Vec<u8> {
    let len = if long {
        rng.random_range(200..900usize)
    } else {
        rng.random_range(0..200usize)
    };
    bytes(rng, len)
}

fn bytes(rng: &mut SmallRng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.random()).collect()
}

/// Rows of a transaction too large for one log record (half the 1 MiB buffer): 640 rows
/// of 850 to 950 bytes, over 560 KB.
const BIG_TXN_ROWS: usize = 640;

/// How a round ends.
#[derive(Clone, Copy, Debug)]
enum Ending {
    /// Power fails after the round's operations.
    PowerCut,
    /// The machine halts after this many more storage operations.
    HaltAfter(u64),
    /// This operation starts failing after this many more calls.
    Fault(FaultOp, u64),
    /// The disk fills up after this many more bytes.
    DiskFull(u64),
}

fn choose_ending(rng: &mut SmallRng, long: bool) -> Ending {
    let span = if long { 3000 } else { 400 };
    match rng.random_range(0..100) {
        0..40 => Ending::PowerCut,
        40..70 => Ending::HaltAfter(rng.random_range(0..span)),
        70..90 => {
            let op = [
                FaultOp::Write,
                FaultOp::Sync,
                FaultOp::Read,
                FaultOp::Rename,
                FaultOp::DirSync,
            ][rng.random_range(0..5)];
            Ending::Fault(op, rng.random_range(0..span / 4))
        }
        _ => Ending::DiskFull(rng.random_range(0..256 * 1024)),
    }
}

fn arm(storage: &MemStorage, ending: Ending) {
    match ending {
        Ending::PowerCut => {}
        Ending::HaltAfter(n) => storage.halt_after_ops(Some(n)),
        Ending::Fault(op, n) => storage.fail_after(op, Some(n)),
        Ending::DiskFull(slack) => {
            let used: u64 = storage
                .list()
                .map(|names| {
                    names
                        .iter()
                        .filter_map(|n| storage.read_file(n).ok())
                        .map(|b| b.len() as u64)
                        .sum()
                })
                .unwrap_or(0);
            storage.set_capacity(Some(used + slack));
        }
    }
}

/// Figures a seed reports, summed over the campaign.
#[derive(Default, Debug, Clone, PartialEq, Eq)]
struct Outcome {
    rounds: u64,
    halts: u64,
    faults: u64,
    operations_failed: u64,
    memory_rows_loaded: u64,
    checkpoints: u64,
    segments_recycled: u64,
    multi_part_commits: u64,
    damage_injected: u64,
    damage_refused: u64,
    /// Every file's bytes at the end, hashed: equal for two runs of one seed.
    digest: u64,
}

impl Outcome {
    fn add(&mut self, other: &Outcome) {
        self.rounds += other.rounds;
        self.halts += other.halts;
        self.faults += other.faults;
        self.operations_failed += other.operations_failed;
        self.memory_rows_loaded += other.memory_rows_loaded;
        self.checkpoints += other.checkpoints;
        self.segments_recycled += other.segments_recycled;
        self.multi_part_commits += other.multi_part_commits;
        self.damage_injected += other.damage_injected;
        self.damage_refused += other.damage_refused;
    }
}

/// One round's operations until the plan runs out or an operation fails. Returns whether
/// one failed.
fn run_round(
    rng: &mut SmallRng,
    db: &Database,
    tables: &[TableHandle],
    model: &mut Model,
    long: bool,
    may_fail: bool,
    outcome: &mut Outcome,
) -> Result<bool, String> {
    let mut session = db.session();
    let ops = if long {
        rng.random_range(200..450)
    } else {
        rng.random_range(5..40)
    };
    let checkpoint_pct = if long { 3 } else { 7 };
    for _ in 0..ops {
        let roll = rng.random_range(0..100);
        let failed = if roll < 55 {
            let t = rng.random_range(0..tables.len());
            let r = row(rng, long);
            if may_fail {
                // A failed autocommit gives no key, yet its commit may be durable (a fault
                // in the apply): one row in a transaction keeps the key known.
                single_row_commit(&mut session, t, &tables[t], r, model)?
            } else {
                let key = session
                    .insert(&tables[t], &r)
                    .map_err(|e| format!("insert: {e}"))?;
                model.acknowledge(vec![(t, key.as_bytes().to_vec(), r)]);
                false
            }
        } else if roll < 85 {
            transaction(rng, &mut session, tables, model, long, outcome)?
        } else if roll < 85 + checkpoint_pct {
            match db.checkpoint() {
                Ok(()) => {
                    outcome.checkpoints += 1;
                    false
                }
                Err(_) => true,
            }
        } else {
            lookup(rng, &session, tables, model)?
        };
        if failed {
            outcome.operations_failed += 1;
            return Ok(true);
        }
    }
    // Sometimes die with a transaction open: its rows must never appear.
    if rng.random_range(0..3) == 0 && session.begin().is_ok() {
        for _ in 0..rng.random_range(1..10) {
            let t = rng.random_range(0..tables.len());
            let r = row(rng, false);
            if session.insert(&tables[t], &r).is_err() {
                break;
            }
        }
    }
    Ok(false)
}

/// One row committed as a transaction: acknowledged, or uncertain if the commit failed.
/// Returns whether it failed.
fn single_row_commit(
    session: &mut hotpage::Session,
    t: usize,
    table: &TableHandle,
    r: Vec<u8>,
    model: &mut Model,
) -> Result<bool, String> {
    session.begin().map_err(|e| format!("begin: {e}"))?;
    let key = session
        .insert(table, &r)
        .map_err(|e| format!("insert into a transaction: {e}"))?;
    let rows = vec![(t, key.as_bytes().to_vec(), r)];
    match session.commit() {
        Ok(()) => {
            model.acknowledge(rows);
            Ok(false)
        }
        Err(_) => {
            model.maybe.push(rows);
            Ok(true)
        }
    }
}

/// A transaction that commits (its rows acknowledged, or uncertain if the commit failed)
/// or rolls back. One in forty is too large for one log record. Returns whether an
/// operation failed.
fn transaction(
    rng: &mut SmallRng,
    session: &mut hotpage::Session,
    tables: &[TableHandle],
    model: &mut Model,
    long: bool,
    outcome: &mut Outcome,
) -> Result<bool, String> {
    session.begin().map_err(|e| format!("begin: {e}"))?;
    let big = rng.random_range(0..40) == 0;
    let count = if big {
        BIG_TXN_ROWS
    } else {
        rng.random_range(1..25)
    };
    let mut rows: Vec<Row> = Vec::new();
    for _ in 0..count {
        let t = rng.random_range(0..tables.len());
        let r = if big {
            let len = rng.random_range(850..950);
            bytes(rng, len)
        } else {
            row(rng, long)
        };
        match session.insert(&tables[t], &r) {
            Ok(key) => rows.push((t, key.as_bytes().to_vec(), r)),
            Err(error) => return Err(format!("insert into a transaction: {error}")),
        }
    }
    if !big && rng.random_range(0..5) == 0 {
        return Ok(session.rollback().is_err());
    }
    match session.commit() {
        Ok(()) => {
            outcome.multi_part_commits += u64::from(big);
            model.acknowledge(rows);
            Ok(false)
        }
        Err(_) => {
            model.maybe.push(rows);
            Ok(true)
        }
    }
}

/// Looks an acknowledged row up; returns whether the read failed (an injected fault).
fn lookup(
    rng: &mut SmallRng,
    session: &hotpage::Session,
    tables: &[TableHandle],
    model: &Model,
) -> Result<bool, String> {
    let Some(((t, key), expected)) = model.rows.iter().nth(
        rng.random_range(0..model.rows.len().max(1))
            .min(model.rows.len().saturating_sub(1)),
    ) else {
        return Ok(false);
    };
    let key = Key::from_bytes(key).map_err(|e| format!("key: {e}"))?;
    match session.get(&tables[*t], &key) {
        Ok(got) if got.as_ref() == Some(expected) => Ok(false),
        Ok(_) => Err("get of an acknowledged row failed".into()),
        Err(_) => Ok(true),
    }
}

/// Damages one record that a flush mark proves was durable (in the log recovery needs),
/// as a flipped bit on the disk would. Returns whether there was one to damage.
fn damage_a_durable_record(storage: &MemStorage, rng: &mut SmallRng) -> Result<bool, String> {
    let catalog = Catalog::load(storage, Path::new(PATH))
        .map_err(|e| format!("catalog: {e}"))?
        .ok_or("no catalog")?;
    let reader = LogReader::new(storage, SEGMENT_BYTES, catalog.log_salt);
    let start = catalog.logical_lsn.min(catalog.redo_lsn);
    let mut proven = 0u64;
    let mut records = Vec::new();
    reader
        .scan_prefix(start, |record| {
            if record.kind == RecordKind::FlushMark {
                let durable = u64::from_le_bytes(record.payload[..8].try_into().unwrap_or([0; 8]));
                proven = proven.max(durable);
            } else {
                records.push((record.lsn, record.end));
            }
            Ok(())
        })
        .map_err(|e| format!("scan: {e}"))?;
    let candidates: Vec<u64> = records
        .iter()
        .filter(|(_, end)| *end <= proven)
        .map(|(lsn, _)| *lsn)
        .collect();
    if candidates.is_empty() {
        return Ok(false);
    }
    let lsn = candidates[rng.random_range(0..candidates.len())];
    // The kind byte, just past the header: covered by the checksum.
    let name = format!("wal.{:016x}", lsn / SEGMENT_BYTES);
    let offset = lsn % SEGMENT_BYTES + 8;
    let bytes = storage.read_file(&name).map_err(|e| format!("read: {e}"))?;
    let old = bytes[offset as usize];
    storage
        .damage(&name, offset, &[old ^ 0x40])
        .map_err(|e| format!("damage: {e}"))?;
    Ok(true)
}

/// Every file's bytes, hashed.
fn digest(storage: &MemStorage) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for name in storage.list().unwrap_or_default() {
        name.hash(&mut hasher);
        storage
            .read_file(&name)
            .unwrap_or_default()
            .hash(&mut hasher);
    }
    hasher.finish()
}

/// Runs one single-session seed.
/// Recovery's recount found no table short of the rows the last checkpoint counted: no
/// storage fault here loses a page's rows, so a report would be a false alarm.
fn no_rows_missing(db: &Database, when: &str) -> Result<(), String> {
    let missing = &db.recovery_report().rows_missing;
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{when}: recovery reported rows missing: {missing:?}"
        ))
    }
}

fn run_seed(seed: u64) -> Result<Outcome, String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut storage = MemStorage::new(seed);
    let mut model = Model::default();
    let mut outcome = Outcome::default();
    let files = data_files(seed);
    let long = seed % 10 == 7;
    let rounds = if long {
        rng.random_range(3..=4)
    } else {
        rng.random_range(1..=4)
    };
    for round in 0..rounds {
        let db = open_db(&storage, files, seed).map_err(|e| format!("round {round}: open: {e}"))?;
        outcome.memory_rows_loaded += db.recovery_report().memory_rows_loaded;
        no_rows_missing(&db, &format!("round {round}"))?;
        let tables = tables_of(&db, files)?;
        model
            .settle(&db, &tables)
            .map_err(|e| format!("round {round}: {e}"))?;
        check(&db, &tables, &model, &format!("round {round} after open"))?;
        let ending = choose_ending(&mut rng, long);
        arm(&storage, ending);
        outcome.halts += u64::from(matches!(ending, Ending::HaltAfter(_)));
        outcome.faults += u64::from(matches!(ending, Ending::Fault(..) | Ending::DiskFull(_)));
        let may_fail = !matches!(ending, Ending::PowerCut);
        run_round(
            &mut rng,
            &db,
            &tables,
            &mut model,
            long,
            may_fail,
            &mut outcome,
        )
        .map_err(|e| format!("round {round} ({ending:?}): {e}"))?;
        outcome.segments_recycled += db.log_counters().map_or(0, |c| c.segments_recycled);
        outcome.rounds += 1;
        let mode =
            [CrashMode::DropAll, CrashMode::Reorder, CrashMode::Torn][rng.random_range(0..3)];
        let next_seed = seed.wrapping_mul(1_000_003).wrapping_add(round);
        storage = storage
            .reboot(mode, next_seed)
            .map_err(|e| format!("reboot: {e}"))?;
        drop(tables);
        drop(db); // the killed process; it can no longer reach the rebooted storage
        if rng.random_range(0..5) == 0 {
            // Recovery cut short by failing writes, then another power failure.
            storage.fail_writes_after(Some(rng.random_range(0..40)));
            let _ = open_db(&storage, files, seed);
            storage.fail_writes_after(None);
            let mode =
                [CrashMode::DropAll, CrashMode::Reorder, CrashMode::Torn][rng.random_range(0..3)];
            storage = storage
                .reboot(mode, next_seed ^ 0x5eed)
                .map_err(|e| format!("reboot: {e}"))?;
        }
    }
    if rng.random_range(0..8) == 0 && damage_a_durable_record(&storage, &mut rng)? {
        outcome.damage_injected += 1;
        outcome.digest = digest(&storage);
        return match open_db(&storage, files, seed) {
            Err(Error::CorruptLog { .. }) => {
                outcome.damage_refused += 1;
                Ok(outcome)
            }
            Ok(_) => Err(
                "a damaged durable record went unnoticed: the open took it for the end of the log"
                    .into(),
            ),
            Err(other) => Err(format!("damaged log: expected CorruptLog, got {other}")),
        };
    }
    let db = open_db(&storage, files, seed).map_err(|e| format!("final open: {e}"))?;
    outcome.memory_rows_loaded += db.recovery_report().memory_rows_loaded;
    no_rows_missing(&db, "final open")?;
    let tables = tables_of(&db, files)?;
    model.settle(&db, &tables)?;
    check(&db, &tables, &model, "final")?;
    drop(tables);
    drop(db);
    outcome.digest = digest(&storage);
    Ok(outcome)
}

/// Runs `seeds` seeds of `run` on two threads; returns the summed outcome and failures.
/// Each worker takes the next seed from a shared counter: the long seeds (one in ten, all
/// odd) would otherwise all fall to one worker.
fn campaign(seeds: u64, run: fn(u64) -> Result<Outcome, String>) -> (Outcome, Vec<String>) {
    let workers = 2;
    let next = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let next = &next;
                s.spawn(move || {
                    let mut total = Outcome::default();
                    let mut failures = Vec::new();
                    loop {
                        let seed = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if seed >= seeds {
                            break;
                        }
                        match run(seed) {
                            Ok(outcome) => total.add(&outcome),
                            Err(f) => failures.push(format!("seed {seed}: {f}")),
                        }
                    }
                    (total, failures)
                })
            })
            .collect();
        let mut total = Outcome::default();
        let mut failures = Vec::new();
        for handle in handles {
            let (outcome, mut failed) = handle.join().expect("worker");
            total.add(&outcome);
            failures.append(&mut failed);
        }
        failures.sort();
        (total, failures)
    })
}

fn seeds_from_env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn assert_no_failures(failures: &[String], seeds: u64, replay: &str) {
    assert!(
        failures.is_empty(),
        "{} of {seeds} seeds failed ({replay}):\n{}",
        failures.len(),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn power_loss_campaign_loses_no_acknowledged_row_and_shows_no_uncommitted_one() {
    if let Ok(seed) = std::env::var("HOTPAGE_CRASH_SEED") {
        let seed: u64 = seed.parse().expect("HOTPAGE_CRASH_SEED must be a number");
        match run_seed(seed) {
            Ok(outcome) => eprintln!("seed {seed}: {outcome:?}"),
            Err(failure) => panic!("seed {seed}: {failure}"),
        }
        return;
    }
    let seeds = seeds_from_env("HOTPAGE_CRASH_SEEDS", 1000);
    let (total, failures) = campaign(seeds, run_seed);
    assert_no_failures(&failures, seeds, "replay one with HOTPAGE_CRASH_SEED=S");
    eprintln!("{seeds} seeds: {total:?}");
    if seeds >= 200 {
        // Each kind of ending, and what the long seeds are for, happened.
        assert!(
            total.halts > 0 && total.faults > 0 && total.operations_failed > 0,
            "{total:?}"
        );
        assert!(
            total.segments_recycled > 0,
            "no seed recycled a segment: {total:?}"
        );
        assert!(
            total.multi_part_commits > 0,
            "no multi-part commit: {total:?}"
        );
        assert!(
            total.damage_refused > 0 && total.damage_refused == total.damage_injected,
            "{total:?}"
        );
        // The memory table's checkpoint file was exercised, not only its log.
        assert!(total.memory_rows_loaded > 0, "{total:?}");
    }
}

#[test]
fn the_same_seed_replays_exactly() {
    for seed in [1, 2, 7, 17, 33, 47] {
        let first = run_seed(seed).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let second = run_seed(seed).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(first, second, "seed {seed} did not replay exactly");
    }
}

/// What the threads of a concurrent seed did, for the check after the crash.
#[derive(Default)]
struct Shared {
    model: Model,
    rolled_back: HashSet<(usize, Vec<u8>)>,
}

/// One session's work until the power goes: transactions of 1 to 8 rows (one row being an
/// autocommit whose key stays known when its commit fails) that commit or roll back.
fn session_work(db: &Database, tables: &[TableHandle], shared: &Mutex<Shared>, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut session = db.session();
    for _ in 0..100_000 {
        if session.begin().is_err() {
            return;
        }
        let mut rows = Vec::new();
        let count = if rng.random_range(0..2) == 0 {
            1
        } else {
            rng.random_range(2..9)
        };
        for _ in 0..count {
            let t = rng.random_range(0..tables.len());
            let r = row(&mut rng, false);
            match session.insert(&tables[t], &r) {
                Ok(key) => rows.push((t, key.as_bytes().to_vec(), r)),
                Err(_) => return,
            }
        }
        if rng.random_range(0..6) == 0 {
            let mut shared = shared.lock();
            for (t, k, _) in &rows {
                shared.rolled_back.insert((*t, k.clone()));
            }
            drop(shared);
            if session.rollback().is_err() {
                return;
            }
            continue;
        }
        match session.commit() {
            Ok(()) => shared.lock().model.acknowledge(rows),
            Err(_) => {
                shared.lock().model.maybe.push(rows);
                return;
            }
        }
    }
}

/// One concurrent seed: 4 to 28 sessions at once, power cut at a random moment.
fn run_concurrent_seed(seed: u64) -> Result<Outcome, String> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0xc0c0);
    let storage = MemStorage::new(seed);
    let files = data_files(seed);
    let sessions = 4 + seed % 25;
    let db = open_concurrent(&storage, files, seed).map_err(|e| format!("open: {e}"))?;
    let tables = tables_of(&db, files)?;
    let shared = Mutex::new(Shared::default());
    let cut_after = Duration::from_micros(rng.random_range(2_000..60_000));
    let mode = [CrashMode::DropAll, CrashMode::Reorder, CrashMode::Torn][rng.random_range(0..3)];
    let rebooted = std::thread::scope(|s| {
        for session in 0..sessions {
            let (db, tables, shared) = (&db, &tables, &shared);
            s.spawn(move || session_work(db, tables, shared, seed * 100 + session));
        }
        std::thread::sleep(cut_after);
        // The power cut halts the old machine: every session's next I/O fails, and each
        // records what it was doing and stops.
        storage.reboot(mode, seed + 1)
    })
    .map_err(|e| format!("reboot: {e}"))?;
    drop(tables);
    drop(db);
    let db = open_concurrent(&rebooted, files, seed)
        .map_err(|e| format!("open after the crash: {e}"))?;
    no_rows_missing(&db, "open after the crash")?;
    let tables = tables_of(&db, files)?;
    let mut shared = shared.into_inner();
    shared.model.settle(&db, &tables)?;
    let session = db.session();
    for (t, k) in &shared.rolled_back {
        let key = Key::from_bytes(k).map_err(|e| format!("key: {e}"))?;
        if session
            .get(&tables[*t], &key)
            .map_err(|e| format!("get: {e}"))?
            .is_some()
        {
            return Err("a rolled-back row is there".into());
        }
    }
    drop(session);
    check(&db, &tables, &shared.model, &format!("{sessions} sessions"))?;
    Ok(Outcome {
        rounds: 1,
        ..Outcome::default()
    })
}

#[test]
fn concurrent_sessions_lose_no_acknowledged_row_under_power_loss() {
    let seeds = seeds_from_env("HOTPAGE_CRASH_CONCURRENT_SEEDS", 60);
    let (total, failures) = campaign(seeds, run_concurrent_seed);
    assert_no_failures(&failures, seeds, "concurrent seeds do not replay exactly");
    assert_eq!(total.rounds, seeds);
}
