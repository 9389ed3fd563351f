//! `hotpage stress`: N sessions, each on its own OS thread, each inserting R rows one per
//! call into one table, then a report of throughput, latency, waits and index shape.

use crate::CliError;
use crate::designs::{self, KeyOptions};
use crate::inspect::{file_of, page_number};
use anyhow::Context;
use comfy_table::Table;
use hdrhistogram::Histogram;
use hotpage::{Counter, WaitType};
use hotpage::{Database, Durability, Error as EngineError, Key, Options};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use std::io::IsTerminal;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The most sessions one run may start.
const SESSIONS_MAX: u32 = 4096;
/// The highest latency the histograms record exactly (longer ones are clamped).
const LATENCY_NS_MAX: u64 = 60_000_000_000;
/// How often the progress line is refreshed on a terminal.
const PROGRESS_INTERVAL_TTY: Duration = Duration::from_millis(100);
/// How often a progress line is printed when stderr is not a terminal.
const PROGRESS_INTERVAL_PLAIN: Duration = Duration::from_secs(5);
/// The largest `--pool-mib` (1 TiB): larger values would overflow the byte count, and the
/// pool allocates a frame descriptor per page when the database opens.
const POOL_MIB_MAX: usize = 1 << 20;
/// The largest `--checkpoint-mib` (1 TiB of log between checkpoints).
const CHECKPOINT_MIB_MAX: u64 = 1 << 20;
/// Rows per session when neither `--rows` nor `--duration` is given.
const ROWS_DEFAULT: u64 = 10_000;
/// The longest `--duration` or `--warmup`, in seconds (one day).
const SECONDS_MAX: f64 = 86_400.0;

// Run phases, read by every session before each insert (a read-mostly shared line).
const PHASE_WARMUP: u8 = 0;
const PHASE_PAUSE: u8 = 1;
const PHASE_MEASURE: u8 = 2;
const PHASE_STOP: u8 = 3;

#[derive(clap::Args, Debug, Clone)]
pub struct StressArgs {
    /// Table design: identity, identity-flow-control, guid, guid-v7, hash-prefix,
    /// hash-partition, bit-reverse, session-range, heap (free-space map, seed 002),
    /// heap-nc-identity (heap + nonclustered index), memory (memory-optimized: no pages), or
    /// all (each in turn, then a side-by-side summary)
    #[arg(long, default_value = "identity")]
    pub design: String,
    /// Concurrent sessions, each an OS thread with its own session
    #[arg(long, default_value_t = 8)]
    pub sessions: u32,
    /// Rows each session inserts, one row per call (autocommit) [default: 10000]
    #[arg(long, conflicts_with = "duration")]
    pub rows: Option<u64>,
    /// Insert for this many seconds instead of a number of rows (each session inserts until
    /// the time is up)
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Insert for this many seconds first without counting rows, latency or waits (the
    /// statistics are reset when it ends)
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    pub warmup: f64,
    /// Bytes of each row (the key is extra)
    #[arg(long, default_value_t = 40)]
    pub row_bytes: usize,
    /// Database directory; without it a temporary one is used and removed afterwards
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Table to insert into, 1 to 128 bytes (default: the design's name; created if missing)
    #[arg(long)]
    pub table: Option<String>,
    /// Print one JSON object instead of the text report
    #[arg(long)]
    pub json: bool,
    /// Page size in bytes for a new database (power of two, 4096 to 65536)
    #[arg(long, default_value_t = 8192)]
    pub page_size: usize,
    /// Buffer-pool size in MiB (1 to 1048576)
    #[arg(long, default_value_t = 256)]
    pub pool_mib: usize,
    /// Data files for a new database, 1 to 64 (data.0 ... data.F-1); an existing database
    /// keeps the count it was created with. New pages go to the file with the fewest pages
    /// (proportional fill over equal files, as in SQL Server), so consecutive pages land in
    /// different files and their writes and reads spread over F files. Seed 002's "more
    /// data files" remedy: in SQL Server it spreads the allocation pages (PFS/GAM/SGAM, the
    /// free-space map) that concurrent allocations latch; here a heap (`--design heap`,
    /// `heap-nc-identity`) keeps one page chain and one free-space map per data file, so
    /// F files give its sessions F maps to latch. It does not spread the latch on the last
    /// leaf of an ascending key: every insert still goes to one page.
    #[arg(long, default_value_t = 1, value_name = "F")]
    pub files: u32,
    /// hash-prefix: number of buckets (seed 001 used 16)
    #[arg(long, default_value_t = 16)]
    pub buckets: u16,
    /// bit-reverse: sequence cache size (seed 000 used 10000)
    #[arg(long, default_value_t = 10_000)]
    pub cache: u32,
    /// session-range: ids per block (default: about one page of rows)
    #[arg(long)]
    pub block: Option<u32>,
    /// hash-partition: number of partitions, rows going to partition id % N (seed 000 used 8)
    #[arg(long, default_value_t = hotpage::limits::PARTITIONS_DEFAULT)]
    pub partitions: u32,
    /// identity-flow-control: sessions admitted at once to the last page (default: the
    /// number of CPUs)
    #[arg(long, value_name = "N")]
    pub flow_control_sessions: Option<u32>,
    /// When a commit returns: sync (after an fdatasync, group commit), async (at once,
    /// durable within 10 ms) or none (no log: a crash empties the tables)
    #[arg(long, default_value = "sync")]
    pub durability: String,
    /// Rows per transaction: each session commits every B rows (1 = autocommit)
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// Checkpoint after this many MiB of log, 1 to 1048576 (bounds recovery time after a
    /// crash)
    #[arg(long, default_value_t = 256)]
    pub checkpoint_mib: u64,
    /// Log segment file size of a new database, 1 to 1024 MiB (an existing database keeps
    /// the size it was created with)
    #[arg(long, default_value_t = 64, value_name = "M")]
    pub log_segment_mib: u64,
    /// For `hotpage crashtest --power-loss`: keep every write in memory until its
    /// fdatasync, so that a kill loses what was never synced, as a power loss would
    #[arg(long, hide = true)]
    pub simulate_power_loss: bool,
    /// For `hotpage crashtest`: after each commit returns, append the transaction's keys to
    /// a file per session in this directory, and put (session, transaction, position,
    /// size) at the front of every row
    #[arg(long, hide = true)]
    pub ack_dir: Option<PathBuf>,
}

// One per session, on its own cache lines, so progress reads never bounce a shared line.
#[repr(align(128))]
#[derive(Default)]
struct SessionProgress {
    rows_done: AtomicU64,
}

struct SessionResult {
    latency_ns: Histogram<u64>,
    // Rows inserted after the warm-up.
    measured: u64,
    error: Option<EngineError>,
}

/// Checks every option before anything is opened or created: a bad command line leaves no
/// database directory behind.
fn validate(args: &StressArgs) -> Result<(), CliError> {
    validate_design(args)?;
    validate_amounts(args)?;
    validate_storage(args)?;
    if let Some(table) = &args.table {
        validate_name("--table", table)?;
    }
    if let Some(dir) = &args.ack_dir
        && !dir.is_dir()
    {
        return Err(CliError::usage(format!(
            "--ack-dir {} is not a directory",
            dir.display()
        )));
    }
    Ok(())
}

/// Checks a table or design name against the catalog's limit (the engine refuses it only
/// when it creates the table, after the database directory exists).
pub fn validate_name(option: &str, name: &str) -> Result<(), CliError> {
    let max = hotpage::limits::NAME_BYTES_MAX;
    if name.is_empty() || name.len() > max {
        return Err(CliError::usage(format!(
            "{option} must be 1 to {max} bytes (hotpage::limits::NAME_BYTES_MAX), not {}",
            name.len()
        )));
    }
    Ok(())
}

/// The design and the options that shape its keys and layout.
fn validate_design(args: &StressArgs) -> Result<(), CliError> {
    if args.design != ALL_DESIGNS && designs::key_kind(&args.design, key_options(args)).is_none() {
        return Err(CliError::usage(format!(
            "unknown design '{}'; choose one of: {}, or all",
            args.design,
            designs::names()
        )));
    }
    validate_name("--design", &args.design)?;
    // Checked whatever the design (`all` uses every one of them).
    for (option, value) in [
        ("--buckets", u32::from(args.buckets)),
        ("--cache", args.cache),
        ("--block", args.block.unwrap_or(1)),
    ] {
        if value == 0 {
            return Err(CliError::usage(format!("{option} must be at least 1")));
        }
    }
    if !(1..=hotpage::limits::PARTITIONS_MAX).contains(&args.partitions) {
        return Err(CliError::usage(format!(
            "--partitions must be from 1 to {}, not {}",
            hotpage::limits::PARTITIONS_MAX,
            args.partitions
        )));
    }
    if let Some(n) = args.flow_control_sessions
        && !(1..=hotpage::limits::FLOW_CONTROL_SESSIONS_MAX).contains(&n)
    {
        return Err(CliError::usage(format!(
            "--flow-control-sessions must be from 1 to {}, not {n}",
            hotpage::limits::FLOW_CONTROL_SESSIONS_MAX
        )));
    }
    Ok(())
}

/// Sessions, rows, time and batch.
fn validate_amounts(args: &StressArgs) -> Result<(), CliError> {
    if args.sessions == 0 || args.sessions > SESSIONS_MAX {
        return Err(CliError::usage(format!(
            "--sessions must be from 1 to {SESSIONS_MAX}, not {}",
            args.sessions
        )));
    }
    if args.rows == Some(0) {
        return Err(CliError::usage("--rows must be at least 1"));
    }
    if let Some(d) = args.duration
        && !(d > 0.0 && d <= SECONDS_MAX)
    {
        return Err(CliError::usage(format!(
            "--duration must be more than 0 and at most {SECONDS_MAX} seconds, not {d}"
        )));
    }
    if !(0.0..=SECONDS_MAX).contains(&args.warmup) {
        return Err(CliError::usage(format!(
            "--warmup must be from 0 to {SECONDS_MAX} seconds, not {}",
            args.warmup
        )));
    }
    if args.batch == 0 {
        return Err(CliError::usage("--batch must be at least 1"));
    }
    Ok(())
}

/// Pages, rows, pool, log, files and durability.
fn validate_storage(args: &StressArgs) -> Result<(), CliError> {
    hotpage::limits::validate_page_size(args.page_size).map_err(CliError::usage)?;
    let row_max = designs::layout(&args.design, key_options(args)).row_bytes_max(args.page_size);
    if args.row_bytes > row_max {
        return Err(CliError::usage(format!(
            "--row-bytes {} exceeds the largest row, {row_max} bytes, for {}-byte pages (try a larger --page-size)",
            args.row_bytes, args.page_size
        )));
    }
    if args.ack_dir.is_some() && args.row_bytes < ACK_STAMP_BYTES {
        return Err(CliError::usage(format!(
            "--row-bytes must be at least {ACK_STAMP_BYTES} with --ack-dir"
        )));
    }
    if !(1..=POOL_MIB_MAX).contains(&args.pool_mib) {
        return Err(CliError::usage(format!(
            "--pool-mib must be from 1 to {POOL_MIB_MAX}, not {}",
            args.pool_mib
        )));
    }
    validate_checkpoint_mib(args.checkpoint_mib)?;
    if !(1..=LOG_SEGMENT_MIB_MAX).contains(&args.log_segment_mib) {
        return Err(CliError::usage(format!(
            "--log-segment-mib must be from 1 to {LOG_SEGMENT_MIB_MAX}, not {}",
            args.log_segment_mib
        )));
    }
    validate_files(args.files)?;
    if Durability::parse(&args.durability).is_none() {
        return Err(CliError::usage(format!(
            "unknown durability '{}'; choose sync, async or none",
            args.durability
        )));
    }
    Ok(())
}

/// The largest `--log-segment-mib`.
const LOG_SEGMENT_MIB_MAX: u64 = 1024;

/// Opens (or creates) the stress database; with `power_loss`, over a storage that keeps
/// writes in memory until their fdatasync (`crashtest --power-loss`'s child).
fn open_for_stress(
    path: &std::path::Path,
    options: Options,
    power_loss: bool,
) -> hotpage::Result<Database> {
    if !power_loss {
        return Database::open(path, options);
    }
    let dir = hotpage::StdStorage::open_dir(path, true)
        .map_err(|e| hotpage::Error::io(format!("opening directory {}", path.display()), e))?;
    let storage = hotpage::VolatileStorage::new(std::sync::Arc::new(dir));
    Database::open_with_storage(std::sync::Arc::new(storage), path, options)
}

/// Checks `--checkpoint-mib` (also for `crashtest`, which passes it to its child).
pub fn validate_checkpoint_mib(mib: u64) -> Result<(), CliError> {
    if (1..=CHECKPOINT_MIB_MAX).contains(&mib) {
        Ok(())
    } else {
        Err(CliError::usage(format!(
            "--checkpoint-mib must be from 1 to {CHECKPOINT_MIB_MAX}, not {mib}"
        )))
    }
}

/// Checks `--files` (also for `crashtest`, which passes it to its child).
pub fn validate_files(files: u32) -> Result<(), CliError> {
    if (1..=hotpage::limits::DATA_FILES_MAX).contains(&files) {
        Ok(())
    } else {
        Err(CliError::usage(format!(
            "--files must be from 1 to {}, not {files}",
            hotpage::limits::DATA_FILES_MAX
        )))
    }
}

fn key_options(args: &StressArgs) -> KeyOptions {
    // About one page of rows per block: 64-byte header, then (slot + key-length byte + 8-byte
    // key + row) per row.
    let per_page = (args.page_size - 64) / (4 + 1 + 8 + args.row_bytes.max(1));
    KeyOptions {
        buckets: args.buckets,
        cache: args.cache,
        block: args.block.unwrap_or(per_page.max(1) as u32),
        partitions: args.partitions,
        flow_control_sessions: args
            .flow_control_sessions
            .unwrap_or_else(designs::flow_control_sessions_default),
        files: 1,
    }
}

/// `--design all`: every design in turn.
const ALL_DESIGNS: &str = "all";

/// Runs the stress command.
pub fn run(args: &StressArgs) -> Result<(), CliError> {
    validate(args)?;
    if args.design != ALL_DESIGNS {
        let report = run_one(args)?;
        if args.json {
            outln!("{report}")?;
        } else {
            print_report(&report)?;
        }
        return Ok(());
    }
    let mut reports = Vec::new();
    for design in designs::DESIGNS {
        let one = StressArgs {
            design: design.name.to_string(),
            table: None,
            ..args.clone()
        };
        let report = run_one(&one)?;
        if !args.json {
            print_report(&report)?;
            outln!()?;
        }
        reports.push(report);
    }
    if args.json {
        outln!("{}", json!({ "designs": reports }))?;
    } else {
        print_summary(&reports)?;
    }
    Ok(())
}

fn print_summary(reports: &[serde_json::Value]) -> Result<(), CliError> {
    outln!("Summary (ratios to identity, same run)")?;
    let identity_rate = reports
        .iter()
        .find(|r| r["design"] == "identity")
        .map_or(0.0, |r| number(&r["rows_per_s"]));
    let mut table = Table::new();
    table.set_header(vec![
        "design",
        "rows/s",
        "x identity",
        "p99 us",
        "top wait",
        "page fill %",
    ]);
    for r in reports {
        let rate = number(&r["rows_per_s"]);
        let top = r["waits"]
            .as_array()
            .and_then(|w| w.first())
            .and_then(|w| w["type"].as_str())
            .unwrap_or("none")
            .to_string();
        table.add_row(vec![
            r["design"].as_str().unwrap_or("").to_string(),
            format!("{rate:.0}"),
            format!("{:.2}", rate / identity_rate.max(1e-9)),
            format!("{:.1}", number(&r["latency_us"]["p99"])),
            top,
            // Leaf fill for a B+tree, page fill for a heap; a memory table has no pages.
            if r["memory"].is_null() {
                format!("{:.1}", number(&r["index"]["avg_fill_pct"]))
            } else {
                "no pages".to_string()
            },
        ]);
    }
    right_align(&mut table, &[1, 2, 3, 5]);
    outln!("{table}")?;
    Ok(())
}

/// One design: returns its report.
fn run_one(args: &StressArgs) -> Result<serde_json::Value, CliError> {
    let kind = designs::key_kind(&args.design, key_options(args))
        .ok_or_else(|| CliError::usage(format!("unknown design '{}'", args.design)))?;
    let temp_dir;
    let path = match &args.db {
        Some(path) => path.clone(),
        None => {
            temp_dir = tempfile::tempdir().context("creating a temporary directory")?;
            temp_dir.path().join("db")
        }
    };
    let durability = Durability::parse(&args.durability).ok_or_else(|| {
        CliError::usage(format!(
            "unknown durability '{}'; choose sync, async or none",
            args.durability
        ))
    })?;
    let options = Options {
        page_size: args.page_size,
        pool_bytes: args.pool_mib << 20,
        create_if_missing: true,
        durability,
        checkpoint_log_bytes: args.checkpoint_mib << 20,
        data_files: args.files,
        wal: hotpage::WalOptions {
            segment_bytes: args.log_segment_mib << 20,
            ..hotpage::WalOptions::default()
        },
        ..Options::default()
    };
    let db = open_for_stress(&path, options, args.simulate_power_loss)
        .with_context(|| format!("cannot open database {}", path.display()))?;
    let table_name = args.table.clone().unwrap_or_else(|| args.design.clone());
    let table = match db.table(&table_name) {
        Ok(table) => {
            if table.design() != args.design {
                return Err(CliError::usage(format!(
                    "table '{table_name}' in {} has design '{}', not '{}'; pick another --table",
                    path.display(),
                    table.design(),
                    args.design
                )));
            }
            table
        }
        Err(EngineError::NoSuchTable(_)) => db
            .create_table_with_layout(
                &table_name,
                &args.design,
                kind,
                designs::layout(
                    &args.design,
                    KeyOptions {
                        // A heap keeps one page chain and free-space map per data file.
                        files: db.data_files(),
                        ..key_options(args)
                    },
                ),
            )
            .context("creating the table")?,
        Err(other) => return Err(anyhow::Error::new(other).into()),
    };
    let row_max = table.layout().row_bytes_max(db.page_size());
    if args.row_bytes > row_max {
        return Err(CliError::usage(format!(
            "--row-bytes {} exceeds the largest row of this table, {row_max} bytes",
            args.row_bytes,
        )));
    }
    db.reset_stats();

    let sessions = args.sessions as usize;
    let rows_limit = match args.duration {
        Some(_) => None,
        None => Some(args.rows.unwrap_or(ROWS_DEFAULT)),
    };
    let progress: Vec<SessionProgress> =
        (0..sessions).map(|_| SessionProgress::default()).collect();
    let abort = AtomicBool::new(false);
    let phase = AtomicU8::new(if args.warmup > 0.0 {
        PHASE_WARMUP
    } else {
        PHASE_MEASURE
    });
    let paused = AtomicUsize::new(0);
    let barrier = Barrier::new(sessions + 1);
    let row: Vec<u8> = b"testing heavy "
        .iter()
        .copied()
        .cycle()
        .take(args.row_bytes)
        .collect();
    let plan = Plan {
        rows_total: rows_limit.map(|r| r * sessions as u64),
        duration: args.duration.map(Duration::from_secs_f64),
        warmup: Duration::from_secs_f64(args.warmup),
        progress: Progress::new(),
    };

    let (results, elapsed) = std::thread::scope(|s| {
        let handles: Vec<_> = progress
            .iter()
            .enumerate()
            .map(|(session_index, slot)| {
                let (db, table, barrier, abort, row) = (&db, &table, &barrier, &abort, &row);
                let (phase, paused) = (&phase, &paused);
                s.spawn(move || {
                    let mut latency_ns = Histogram::<u64>::new_with_bounds(1, LATENCY_NS_MAX, 3)
                        .expect("static histogram bounds are valid");
                    let mut session = db.session();
                    let mut acks = match AckLog::open(args.ack_dir.as_deref(), session_index) {
                        Ok(acks) => acks,
                        Err(error) => {
                            abort.store(true, Ordering::Relaxed);
                            return SessionResult {
                                latency_ns,
                                measured: 0,
                                error: Some(hotpage::Error::io("opening the ack file", error)),
                            };
                        }
                    };
                    let mut row = row.clone();
                    let batch = u64::from(args.batch);
                    let (mut inserted, mut measured) = (0u64, 0u64);
                    barrier.wait();
                    loop {
                        if abort.load(Ordering::Relaxed) {
                            break;
                        }
                        let now_phase = match phase.load(Ordering::Acquire) {
                            PHASE_PAUSE => {
                                // Outside the engine while the statistics are reset.
                                paused.fetch_add(1, Ordering::AcqRel);
                                while phase.load(Ordering::Acquire) == PHASE_PAUSE {
                                    std::thread::sleep(Duration::from_millis(1));
                                }
                                continue;
                            }
                            p => p,
                        };
                        if now_phase == PHASE_STOP {
                            break;
                        }
                        let measuring = now_phase == PHASE_MEASURE;
                        if measuring && rows_limit.is_some_and(|r| measured >= r) {
                            break;
                        }
                        let start = Instant::now();
                        let position = inserted % batch;
                        acks.stamp(&mut row, inserted / batch, position, batch);
                        let step = (|| -> hotpage::Result<()> {
                            if batch > 1 && position == 0 {
                                session.begin()?;
                            }
                            let key = session.insert(table, &row)?;
                            acks.pending.push(key);
                            if batch == 1 || position + 1 == batch {
                                if batch > 1 {
                                    session.commit()?;
                                }
                                acks.committed()?;
                            }
                            Ok(())
                        })();
                        if let Err(error) = step {
                            abort.store(true, Ordering::Relaxed);
                            return SessionResult {
                                latency_ns,
                                measured,
                                error: Some(error),
                            };
                        }
                        if measuring {
                            let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                            latency_ns.saturating_record(ns.clamp(1, LATENCY_NS_MAX));
                            measured += 1;
                        }
                        inserted += 1;
                        slot.rows_done.store(inserted, Ordering::Relaxed);
                    }
                    // The last, partial batch: committed, except for the crash tester, which
                    // expects whole batches only.
                    let finish = if !session.in_transaction() {
                        Ok(())
                    } else if acks.enabled() {
                        session.rollback()
                    } else {
                        session.commit()
                    };
                    if let Err(error) = finish {
                        return SessionResult {
                            latency_ns,
                            measured,
                            error: Some(error),
                        };
                    }
                    SessionResult {
                        latency_ns,
                        measured,
                        error: None,
                    }
                })
            })
            .collect();
        barrier.wait();
        // Progress goes to stderr only, so `--json` keeps stdout one JSON object.
        let elapsed = coordinate(&plan, &progress, &phase, &paused, &handles, &db);
        let results: Vec<SessionResult> = handles
            .into_iter()
            .map(|h| h.join().expect("a stress session panicked"))
            .collect();
        (results, elapsed)
    });

    let mut latency_ns = Histogram::<u64>::new_with_bounds(1, LATENCY_NS_MAX, 3)
        .expect("static histogram bounds are valid");
    for result in &results {
        latency_ns
            .add(&result.latency_ns)
            .context("merging latency histograms")?;
    }
    let rows_total: u64 = results.iter().map(|r| r.measured).sum();
    if let Some(error) = results.into_iter().find_map(|r| r.error) {
        return Err(CliError::new(
            crate::exit_code(&error),
            format!("insert failed: {error}"),
        ));
    }
    let snapshot = db.stats();
    let tree = db
        .verify_table(&table)
        .context("checking the table after the run")?;
    let elapsed_s = elapsed.as_secs_f64();
    let rows_per_s = rows_total as f64 / elapsed_s.max(1e-9);
    let splits = snapshot.counter(Counter::PageSplits);
    let waits = snapshot.top_waits();
    let wait_ns_total: u64 = waits.iter().map(|(_, t)| t.wait_ns).sum();
    let pct_of_waits = |ns: u64| 100.0 * ns as f64 / wait_ns_total.max(1) as f64;
    let hot: Vec<_> = snapshot.hot_pages.iter().take(HOT_PAGES_REPORTED).collect();
    let owners = db
        .page_owners(&hot.iter().map(|(page, _)| *page).collect::<Vec<_>>())
        .context("finding the tables of the hottest pages")?;
    let pct = |q: f64| latency_ns.value_at_quantile(q) as f64 / 1000.0;
    let report = json!({
        "design": args.design,
        "table": table_name,
        "sessions": args.sessions,
        "rows_per_session": rows_limit,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "rows_total": rows_total,
        "row_bytes": args.row_bytes,
        "page_size": db.page_size(),
        "files": db.data_files(),
        "elapsed_s": elapsed_s,
        "rows_per_s": rows_per_s,
        "latency_us": {
            "p50": pct(0.50),
            "p99": pct(0.99),
            "p999": pct(0.999),
            "max": latency_ns.max() as f64 / 1000.0,
        },
        "waits": waits.iter().map(|(w, t)| json!({
            "type": w.name(),
            "count": t.count,
            "wait_ms": t.wait_ns as f64 / 1e6,
            "avg_us": t.wait_ns as f64 / 1e3 / t.count.max(1) as f64,
            "max_ms": t.wait_ns_max as f64 / 1e6,
            "pct_of_wait_time": pct_of_waits(t.wait_ns),
        })).collect::<Vec<_>>(),
        "hot_pages": hot.iter().zip(&owners).map(|((page, w), owner)| json!({
            "file": file_of(*page),
            "page": page_number(*page),
            "page_type": owner.as_ref().map_or("unknown", |o| o.page_type.name()),
            "level": owner.as_ref().map(|o| o.level),
            "table": owner.as_ref().map(|o| o.table.clone()),
            "waits": w.count,
            "wait_ms": w.wait_ns as f64 / 1e6,
            "pct_of_wait_time": pct_of_waits(w.wait_ns),
        })).collect::<Vec<_>>(),
        "durability": durability.name(),
        "batch": args.batch,
        "log": log_figures(&db),
        "fsm": {
            "updates": snapshot.counter(Counter::FsmUpdates),
            "waits": snapshot.wait(WaitType::FsmLatch).count,
            "wait_ms": snapshot.wait(WaitType::FsmLatch).wait_ns as f64 / 1e6,
        },
        "index": {
            "pages": tree.pages(),
            "levels": tree.levels,
            "avg_fill_pct": tree.leaf_fill_pct,
            "splits": splits,
            "rows_in_table": tree.rows,
        },
        "memory": memory_figures(&db, &table),
        "db": args.db.as_ref().map(|p| p.display().to_string()),
    });
    drop(table);
    if args.db.is_some() {
        // Kept with the database for `hotpage inspect waits`.
        db.save_run_stats(report.to_string().as_bytes())
            .context("saving the run's wait statistics")?;
    }
    db.close().context("closing the database")?;
    Ok(report)
}

/// Hottest pages a report lists (and looks up the tables of).
const HOT_PAGES_REPORTED: usize = 10;

/// What the coordinator runs to.
struct Plan {
    // Measured rows expected in all (None with --duration).
    rows_total: Option<u64>,
    duration: Option<Duration>,
    warmup: Duration,
    progress: Progress,
}

/// Runs the clock while the sessions insert: ends the warm-up (pausing every session outside
/// the engine while the statistics are reset), stops a `--duration` run, and shows progress.
/// Returns the measured phase's wall time.
fn coordinate<T>(
    plan: &Plan,
    progress: &[SessionProgress],
    phase: &AtomicU8,
    paused: &AtomicUsize,
    handles: &[std::thread::ScopedJoinHandle<'_, T>],
    db: &Database,
) -> Duration {
    let run_start = Instant::now();
    let mut measure_start = run_start;
    let mut rows_at_measure = 0u64;
    let rows_now = || -> u64 {
        progress
            .iter()
            .map(|p| p.rows_done.load(Ordering::Relaxed))
            .sum()
    };
    let mut tracker = plan.progress.tracker(db);
    loop {
        let finished = handles.iter().filter(|h| h.is_finished()).count();
        if finished == handles.len() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        let now = Instant::now();
        match phase.load(Ordering::Acquire) {
            PHASE_WARMUP if now - run_start >= plan.warmup => {
                phase.store(PHASE_PAUSE, Ordering::Release);
                // Every live session parks outside the engine, so the reset is exact.
                while paused.load(Ordering::Acquire)
                    + handles.iter().filter(|h| h.is_finished()).count()
                    < handles.len()
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
                db.reset_stats();
                rows_at_measure = rows_now();
                measure_start = Instant::now();
                tracker.restart(rows_at_measure, measure_start);
                phase.store(PHASE_MEASURE, Ordering::Release);
            }
            PHASE_MEASURE if plan.duration.is_some_and(|d| now - measure_start >= d) => {
                phase.store(PHASE_STOP, Ordering::Release);
            }
            _ => {}
        }
        let current = phase.load(Ordering::Acquire);
        let status = if current == PHASE_WARMUP {
            Status::Warmup {
                elapsed: now - run_start,
                total: plan.warmup,
            }
        } else {
            Status::Measure {
                rows: rows_now().saturating_sub(rows_at_measure),
                rows_total: plan.rows_total,
                elapsed: now - measure_start,
                duration: plan.duration,
            }
        };
        tracker.update(rows_now(), now, &status);
    }
    let elapsed = measure_start.elapsed();
    tracker.finish();
    elapsed
}

/// Where a run is, for the progress display.
enum Status {
    Warmup {
        elapsed: Duration,
        total: Duration,
    },
    Measure {
        rows: u64,
        rows_total: Option<u64>,
        elapsed: Duration,
        duration: Option<Duration>,
    },
}

/// How progress is shown: a live bar on a terminal, plain lines otherwise.
struct Progress {
    tty: bool,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            tty: std::io::stderr().is_terminal(),
        }
    }

    fn tracker<'a>(&self, db: &'a Database) -> Tracker<'a> {
        let bar = self.tty.then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr_with_hz(10));
            if let Ok(style) = ProgressStyle::with_template("{bar:30} {msg}") {
                bar.set_style(style);
            }
            bar
        });
        let now = Instant::now();
        Tracker {
            db,
            bar,
            interval: if self.tty {
                PROGRESS_INTERVAL_TTY
            } else {
                PROGRESS_INTERVAL_PLAIN
            },
            last_print: now,
            last_rows: 0,
            last_time: now,
            last_waits: Vec::new(),
        }
    }
}

/// The one reporter: reads the per-session counters and the wait statistics at intervals.
struct Tracker<'a> {
    db: &'a Database,
    bar: Option<ProgressBar>,
    interval: Duration,
    last_print: Instant,
    last_rows: u64,
    last_time: Instant,
    // Wait time per type at the last refresh, to name the wait that grows fastest now.
    last_waits: Vec<(hotpage::WaitType, u64)>,
}

impl Tracker<'_> {
    fn restart(&mut self, rows: u64, now: Instant) {
        (self.last_rows, self.last_time) = (rows, now);
        self.last_waits.clear();
    }

    fn current_top_wait(&mut self) -> String {
        let waits: Vec<_> = self
            .db
            .stats()
            .top_waits()
            .iter()
            .map(|(w, t)| (*w, t.wait_ns))
            .collect();
        let grown = |w: hotpage::WaitType, ns: u64| {
            let before = self
                .last_waits
                .iter()
                .find(|(l, _)| *l == w)
                .map_or(0, |(_, n)| *n);
            ns.saturating_sub(before)
        };
        let top = waits
            .iter()
            .map(|(w, ns)| (*w, grown(*w, *ns)))
            .filter(|(_, ns)| *ns > 0)
            .max_by_key(|(_, ns)| *ns)
            .map_or("none".to_string(), |(w, _)| w.name().to_string());
        self.last_waits = waits;
        top
    }

    fn update(&mut self, rows: u64, now: Instant, status: &Status) {
        if now - self.last_print < self.interval {
            return;
        }
        self.last_print = now;
        let rate = rows.saturating_sub(self.last_rows) as f64
            / (now - self.last_time).as_secs_f64().max(1e-9);
        (self.last_rows, self.last_time) = (rows, now);
        let top = self.current_top_wait();
        let (fraction, line) = match status {
            Status::Warmup { elapsed, total } => (
                elapsed.as_secs_f64() / total.as_secs_f64().max(1e-9),
                format!(
                    "warm-up {:.1}/{:.1} s  {rate:.0} rows/s  top wait {top}",
                    elapsed.as_secs_f64(),
                    total.as_secs_f64()
                ),
            ),
            Status::Measure {
                rows,
                rows_total: Some(total),
                ..
            } => {
                let eta = if rate > 0.0 {
                    format!("{:.0} s", total.saturating_sub(*rows) as f64 / rate)
                } else {
                    "?".to_string()
                };
                (
                    *rows as f64 / (*total).max(1) as f64,
                    format!("{rows}/{total} rows  {rate:.0} rows/s  ETA {eta}  top wait {top}"),
                )
            }
            Status::Measure {
                rows,
                elapsed,
                duration,
                ..
            } => {
                let total = duration.map_or(1.0, |d| d.as_secs_f64());
                let left = (total - elapsed.as_secs_f64()).max(0.0);
                (
                    elapsed.as_secs_f64() / total.max(1e-9),
                    format!("{rows} rows  {rate:.0} rows/s  ETA {left:.0} s  top wait {top}"),
                )
            }
        };
        match &self.bar {
            Some(bar) => {
                bar.set_position((fraction.clamp(0.0, 1.0) * 1000.0) as u64);
                bar.set_message(line);
            }
            None => errln!("{line}"),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn number(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn print_report(r: &serde_json::Value) -> Result<(), CliError> {
    let amount = match (r["duration_s"].as_f64(), r["rows_per_session"].as_u64()) {
        (Some(d), _) => format!("for {d} s"),
        (None, Some(rows)) => format!("x {rows} rows"),
        _ => String::new(),
    };
    let warmup = number(&r["warmup_s"]);
    outln!(
        "hotpage stress: design {}, {} sessions {amount}, {}-byte rows, {}-byte pages{}{}",
        r["design"].as_str().unwrap_or(""),
        r["sessions"],
        r["row_bytes"],
        r["page_size"],
        match r["files"].as_u64() {
            Some(files) if files > 1 => format!(" in {files} data files"),
            _ => String::new(),
        },
        if warmup > 0.0 {
            format!(", after a {warmup} s warm-up")
        } else {
            String::new()
        }
    )?;
    let lat = &r["latency_us"];
    outln!(
        "rows {}   elapsed {:.3} s   {:.0} rows/s",
        r["rows_total"],
        number(&r["elapsed_s"]),
        number(&r["rows_per_s"])
    )?;
    outln!(
        "latency (us): p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
        number(&lat["p50"]),
        number(&lat["p99"]),
        number(&lat["p999"]),
        number(&lat["max"])
    )?;
    outln!()?;
    print_waits_and_pages(r)?;
    outln!()?;
    let index = &r["index"];
    let memory = &r["memory"];
    let heap = r["design"].as_str().is_some_and(|d| d.starts_with("heap"));
    if memory.is_null() {
        outln!(
            "{}: {} levels, {} pages, leaf fill {:.1} %, {} page splits, {} rows in the table",
            if heap {
                "Heap (pages, page fill)"
            } else {
                "Index"
            },
            index["levels"],
            index["pages"],
            number(&index["avg_fill_pct"]),
            index["splits"],
            index["rows_in_table"]
        )?;
    } else {
        outln!(
            "Index: memory-optimized, no pages: {} rows, {:.1} MiB of keys and rows in memory; checkpoint file {} {:.1} MiB (closing appends the rest)",
            memory["rows"],
            (number(&memory["key_bytes"]) + number(&memory["row_bytes"])) / (1024.0 * 1024.0),
            memory["file"].as_str().unwrap_or("?"),
            number(&memory["file_bytes"]) / (1024.0 * 1024.0)
        )?;
    }
    if heap {
        let fsm = &r["fsm"];
        outln!(
            "Free-space map: {} updates, {} FSM_LATCH waits ({:.1} ms)",
            fsm["updates"],
            fsm["waits"],
            number(&fsm["wait_ms"])
        )?;
    }
    let log = &r["log"];
    if log.is_null() {
        outln!("Log: none (--durability none: a crash empties the tables)")?;
    } else {
        outln!(
            "Log ({}, batch {}): {:.1} MiB, {} flushes (fdatasync), {:.1} commits per flush",
            r["durability"].as_str().unwrap_or(""),
            r["batch"],
            number(&log["bytes"]) / (1024.0 * 1024.0),
            log["flushes"],
            number(&log["commits_per_flush"])
        )?;
    }
    Ok(())
}

/// `memory: {rows, key_bytes, row_bytes, file, file_bytes}` of a memory table, or null for
/// a table with pages.
pub fn memory_figures(db: &Database, table: &hotpage::TableHandle) -> serde_json::Value {
    match db.memory_usage(table) {
        Some(m) => json!({
            "rows": m.rows,
            "key_bytes": m.key_bytes,
            "row_bytes": m.row_bytes,
            "file": m.file,
            "file_bytes": m.file_bytes,
        }),
        None => serde_json::Value::Null,
    }
}

/// `log: {bytes, flushes, commits, commits_per_flush}` for the whole run, or null without
/// a log.
fn log_figures(db: &Database) -> serde_json::Value {
    match db.log_counters() {
        Some(log) => json!({
            "bytes": log.bytes,
            "flushes": log.flushes,
            "commits": log.commits,
            "commits_per_flush": log.commits as f64 / log.flushes.max(1) as f64,
        }),
        None => serde_json::Value::Null,
    }
}

/// Prints the "Top waits" and "Hottest pages" tables of a report (`waits`, `hot_pages`).
pub fn print_waits_and_pages(r: &serde_json::Value) -> Result<(), CliError> {
    outln!("Top waits")?;
    let list = r["waits"].as_array().cloned().unwrap_or_default();
    let total_ms: f64 = list.iter().map(|w| number(&w["wait_ms"])).sum();
    let pct = |ms: f64| 100.0 * ms / total_ms.max(1e-12);
    let mut waits = Table::new();
    waits.set_header(vec![
        "wait type",
        "count",
        "total ms",
        "avg us",
        "max ms",
        "% of wait time",
    ]);
    if list.is_empty() {
        waits.add_row(vec!["(none)", "0", "0", "0", "0", "0"]);
    }
    for w in &list {
        let wait_ms = number(&w["wait_ms"]);
        waits.add_row(vec![
            w["type"].as_str().unwrap_or("").to_string(),
            w["count"].to_string(),
            format!("{wait_ms:.1}"),
            format!("{:.1}", number(&w["avg_us"])),
            format!("{:.2}", number(&w["max_ms"])),
            format!("{:.1}", pct(wait_ms)),
        ]);
    }
    right_align(&mut waits, &[1, 2, 3, 4, 5]);
    outln!("{waits}")?;
    outln!()?;
    outln!("Hottest pages (file:page; waits of every type on the page)")?;
    let mut hot = Table::new();
    hot.set_header(vec![
        "page",
        "type",
        "table",
        "waits",
        "total ms",
        "% of wait time",
    ]);
    let pages = r["hot_pages"].as_array().cloned().unwrap_or_default();
    if pages.is_empty() {
        hot.add_row(vec!["(none)", "", "", "0", "0", "0"]);
    }
    for p in pages.iter().take(HOT_PAGES_REPORTED) {
        let wait_ms = number(&p["wait_ms"]);
        let page_type = match (p["page_type"].as_str(), p["level"].as_u64()) {
            (Some("inner"), Some(level)) => format!("inner (level {level})"),
            (Some(t), _) => t.to_string(),
            _ => "unknown".into(),
        };
        hot.add_row(vec![
            format!("{}:{}", p["file"], p["page"]),
            page_type,
            p["table"].as_str().unwrap_or("-").to_string(),
            p["waits"].to_string(),
            format!("{wait_ms:.1}"),
            format!("{:.1}", pct(wait_ms)),
        ]);
    }
    right_align(&mut hot, &[3, 4, 5]);
    outln!("{hot}")?;
    Ok(())
}

/// Right-aligns the given columns of a table.
pub fn right_align(table: &mut Table, columns: &[usize]) {
    for &c in columns {
        if let Some(column) = table.column_mut(c) {
            column.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
}

/// Bytes at the front of a row written for the crash tester: session u32, transaction u64,
/// position u32, transaction size u32 (little-endian).
pub const ACK_STAMP_BYTES: usize = 20;

/// For `hotpage crashtest`: each session appends the keys of every transaction to its own
/// file right after the commit returns (one line per transaction, keys in hex), and
/// stamps its rows so that a partly visible transaction can be recognised after a crash.
struct AckLog {
    file: Option<std::fs::File>,
    session: u32,
    pending: Vec<Key>,
    line: String,
}

impl AckLog {
    fn open(dir: Option<&Path>, session: usize) -> std::io::Result<AckLog> {
        let file = match dir {
            Some(dir) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join(format!("ack.{session}")))?,
            ),
            None => None,
        };
        Ok(AckLog {
            file,
            session: session as u32,
            pending: Vec::new(),
            line: String::new(),
        })
    }

    fn enabled(&self) -> bool {
        self.file.is_some()
    }

    fn stamp(&self, row: &mut [u8], txn: u64, position: u64, size: u64) {
        if self.file.is_none() || row.len() < ACK_STAMP_BYTES {
            return;
        }
        row[..4].copy_from_slice(&self.session.to_le_bytes());
        row[4..12].copy_from_slice(&txn.to_le_bytes());
        row[12..16].copy_from_slice(&(position as u32).to_le_bytes());
        row[16..20].copy_from_slice(&(size as u32).to_le_bytes());
    }

    /// The transaction in `pending` committed: record its keys.
    fn committed(&mut self) -> hotpage::Result<()> {
        if let Some(file) = &mut self.file {
            self.line.clear();
            for (i, key) in self.pending.iter().enumerate() {
                if i > 0 {
                    self.line.push(' ');
                }
                for byte in key.as_bytes() {
                    self.line.push_str(&format!("{byte:02x}"));
                }
            }
            self.line.push('\n');
            file.write_all(self.line.as_bytes())
                .map_err(|e| hotpage::Error::io("appending to the ack file", e))?;
        }
        self.pending.clear();
        Ok(())
    }
}
