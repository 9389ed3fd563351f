//! `hotpage stress`: N sessions, each on its own OS thread, each inserting R rows one per
//! call into one table, then a report of throughput, latency, waits and index shape.

use crate::CliError;
use crate::designs::{self, KeyOptions};
use anyhow::Context;
use comfy_table::Table;
use hdrhistogram::Histogram;
use hotpage::stats::Counter;
use hotpage::{Database, Error as EngineError, Options};
use serde_json::json;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The most sessions one run may start.
const SESSIONS_MAX: u32 = 4096;
/// The highest latency the histograms record exactly (longer ones are clamped).
const LATENCY_NS_MAX: u64 = 60_000_000_000;
/// How often the progress line is refreshed on a terminal.
const PROGRESS_INTERVAL_TTY: Duration = Duration::from_millis(100);
/// How often a progress line is printed when stderr is not a terminal.
const PROGRESS_INTERVAL_PLAIN: Duration = Duration::from_secs(5);

#[derive(clap::Args, Debug, Clone)]
pub struct StressArgs {
    /// Table design: identity, guid, guid-v7, hash-prefix, bit-reverse, session-range, or
    /// all (each in turn, then a side-by-side summary)
    #[arg(long, default_value = "identity")]
    pub design: String,
    /// Concurrent sessions, each an OS thread with its own session
    #[arg(long, default_value_t = 8)]
    pub sessions: u32,
    /// Rows each session inserts, one row per call (autocommit)
    #[arg(long, default_value_t = 10_000)]
    pub rows: u64,
    /// Bytes of each row (the key is extra)
    #[arg(long, default_value_t = 40)]
    pub row_bytes: usize,
    /// Database directory; without it a temporary one is used and removed afterwards
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Table to insert into (default: the design's name; created if missing)
    #[arg(long)]
    pub table: Option<String>,
    /// Print one JSON object instead of the text report
    #[arg(long)]
    pub json: bool,
    /// Page size in bytes for a new database (power of two, 4096 to 65536)
    #[arg(long, default_value_t = 8192)]
    pub page_size: usize,
    /// Buffer-pool size in MiB
    #[arg(long, default_value_t = 256)]
    pub pool_mib: usize,
    /// hash-prefix: number of buckets (seed 001 used 16)
    #[arg(long, default_value_t = 16)]
    pub buckets: u16,
    /// bit-reverse: sequence cache size (seed 000 used 10000)
    #[arg(long, default_value_t = 10_000)]
    pub cache: u32,
    /// session-range: ids per block (default: about one page of rows)
    #[arg(long)]
    pub block: Option<u32>,
}

// One per session, on its own cache lines, so progress reads never bounce a shared line.
#[repr(align(128))]
#[derive(Default)]
struct SessionProgress {
    rows_done: AtomicU64,
}

struct SessionResult {
    latency_ns: Histogram<u64>,
    error: Option<EngineError>,
}

fn validate(args: &StressArgs) -> Result<(), CliError> {
    if args.design != ALL_DESIGNS && designs::key_kind(&args.design, key_options(args)).is_none() {
        return Err(CliError::usage(format!(
            "unknown design '{}'; choose one of: {}, or all",
            args.design,
            designs::names()
        )));
    }
    if args.sessions == 0 || args.sessions > SESSIONS_MAX {
        return Err(CliError::usage(format!(
            "--sessions must be from 1 to {SESSIONS_MAX}, not {}",
            args.sessions
        )));
    }
    if args.rows == 0 {
        return Err(CliError::usage("--rows must be at least 1"));
    }
    hotpage::page::validate_page_size(args.page_size).map_err(CliError::usage)?;
    let row_max = hotpage::btree::row_bytes_max(args.page_size);
    if args.row_bytes > row_max {
        return Err(CliError::usage(format!(
            "--row-bytes {} exceeds the largest row, {row_max} bytes, for {}-byte pages (try a larger --page-size)",
            args.row_bytes, args.page_size
        )));
    }
    if args.pool_mib == 0 {
        return Err(CliError::usage("--pool-mib must be at least 1"));
    }
    Ok(())
}

fn key_options(args: &StressArgs) -> KeyOptions {
    // About one page of rows per block: 64-byte header, then (slot + key-length byte + 8-byte
    // key + row) per row.
    let per_page = (args.page_size - 64) / (4 + 1 + 8 + args.row_bytes.max(1));
    KeyOptions {
        buckets: args.buckets,
        cache: args.cache,
        block: args.block.unwrap_or(per_page.max(1) as u32),
    }
}

/// `--design all`: every design in turn.
const ALL_DESIGNS: &str = "all";

/// Runs the stress command.
pub fn run(args: &StressArgs) -> Result<(), CliError> {
    validate(args)?;
    if args.design != ALL_DESIGNS {
        let (report, wait_ns_total) = run_one(args)?;
        if args.json {
            println!("{report}");
        } else {
            print_report(args, &report, wait_ns_total);
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
        let (report, wait_ns_total) = run_one(&one)?;
        if !args.json {
            print_report(&one, &report, wait_ns_total);
            println!();
        }
        reports.push(report);
    }
    if args.json {
        println!("{}", json!({ "designs": reports }));
    } else {
        print_summary(&reports);
    }
    Ok(())
}

fn print_summary(reports: &[serde_json::Value]) {
    println!("Summary (ratios to identity, same run)");
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
        "leaf fill %",
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
            format!("{:.1}", number(&r["index"]["avg_fill_pct"])),
        ]);
    }
    right_align(&mut table, &[1, 2, 3, 5]);
    println!("{table}");
}

/// One design: returns its report and the total wait time (for percentages).
fn run_one(args: &StressArgs) -> Result<(serde_json::Value, u64), CliError> {
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
    let options = Options {
        page_size: args.page_size,
        pool_bytes: args.pool_mib << 20,
        create_if_missing: true,
    };
    let db = Database::open(&path, options)
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
            .create_table(&table_name, &args.design, kind)
            .context("creating the table")?,
        Err(other) => return Err(anyhow::Error::new(other).into()),
    };
    if args.row_bytes > db.row_bytes_max() {
        return Err(CliError::usage(format!(
            "--row-bytes {} exceeds the largest row of this database, {} bytes",
            args.row_bytes,
            db.row_bytes_max()
        )));
    }
    db.reset_stats();

    let sessions = args.sessions as usize;
    let progress: Vec<SessionProgress> =
        (0..sessions).map(|_| SessionProgress::default()).collect();
    let abort = AtomicBool::new(false);
    let barrier = Barrier::new(sessions + 1);
    let row: Vec<u8> = b"testing heavy "
        .iter()
        .copied()
        .cycle()
        .take(args.row_bytes)
        .collect();
    let total_rows = args.rows * sessions as u64;
    let show_progress = !args.json;

    let (results, elapsed) = std::thread::scope(|s| {
        let handles: Vec<_> = progress
            .iter()
            .map(|slot| {
                let (db, table, barrier, abort, row) = (&db, &table, &barrier, &abort, &row);
                s.spawn(move || {
                    let mut latency_ns = Histogram::<u64>::new_with_bounds(1, LATENCY_NS_MAX, 3)
                        .expect("static histogram bounds are valid");
                    let mut session = db.session();
                    barrier.wait();
                    for i in 0..args.rows {
                        if abort.load(Ordering::Relaxed) {
                            break;
                        }
                        let start = Instant::now();
                        if let Err(error) = session.insert(table, row) {
                            abort.store(true, Ordering::Relaxed);
                            return SessionResult {
                                latency_ns,
                                error: Some(error),
                            };
                        }
                        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        latency_ns.saturating_record(ns.clamp(1, LATENCY_NS_MAX));
                        slot.rows_done.store(i + 1, Ordering::Relaxed);
                    }
                    SessionResult {
                        latency_ns,
                        error: None,
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        if show_progress {
            report_progress(&progress, total_rows, start, &handles, &db);
        }
        let results: Vec<SessionResult> = handles
            .into_iter()
            .map(|h| h.join().expect("a stress session panicked"))
            .collect();
        (results, start.elapsed())
    });

    let mut latency_ns = Histogram::<u64>::new_with_bounds(1, LATENCY_NS_MAX, 3)
        .expect("static histogram bounds are valid");
    for result in &results {
        latency_ns
            .add(&result.latency_ns)
            .context("merging latency histograms")?;
    }
    if let Some(error) = results.into_iter().find_map(|r| r.error) {
        return Err(CliError::failure(format!("insert failed: {error}")));
    }
    let snapshot = db.stats();
    let tree = db
        .verify_table(&table)
        .context("checking the table after the run")?;
    let rows_total = total_rows;
    let elapsed_s = elapsed.as_secs_f64();
    let rows_per_s = rows_total as f64 / elapsed_s.max(1e-9);
    let splits = snapshot.counter(Counter::PageSplits);
    let wait_ns_total: u64 = snapshot.top_waits().iter().map(|(_, t)| t.wait_ns).sum();
    let pct = |q: f64| latency_ns.value_at_quantile(q) as f64 / 1000.0;
    let report = json!({
        "design": args.design,
        "table": table_name,
        "sessions": args.sessions,
        "rows_per_session": args.rows,
        "rows_total": rows_total,
        "row_bytes": args.row_bytes,
        "page_size": db.page_size(),
        "elapsed_s": elapsed_s,
        "rows_per_s": rows_per_s,
        "latency_us": {
            "p50": pct(0.50),
            "p99": pct(0.99),
            "p999": pct(0.999),
            "max": latency_ns.max() as f64 / 1000.0,
        },
        "waits": snapshot.top_waits().iter().map(|(w, t)| json!({
            "type": w.name(),
            "count": t.count,
            "wait_ms": t.wait_ns as f64 / 1e6,
            "avg_us": t.wait_ns as f64 / 1e3 / t.count.max(1) as f64,
            "max_ms": t.wait_ns_max as f64 / 1e6,
        })).collect::<Vec<_>>(),
        "hot_pages": snapshot.hot_pages.iter().take(10).map(|(page, w)| json!({
            "file": 0,
            "page": page,
            "waits": w.count,
            "wait_ms": w.wait_ns as f64 / 1e6,
        })).collect::<Vec<_>>(),
        "index": {
            "pages": tree.pages(),
            "levels": tree.levels,
            "avg_fill_pct": tree.leaf_fill_pct,
            "splits": splits,
            "rows_in_table": tree.rows,
        },
        "db": args.db.as_ref().map(|p| p.display().to_string()),
    });
    drop(table);
    db.close().context("closing the database")?;
    Ok((report, wait_ns_total))
}

fn report_progress<T>(
    progress: &[SessionProgress],
    total_rows: u64,
    start: Instant,
    handles: &[std::thread::ScopedJoinHandle<'_, T>],
    db: &Database,
) {
    let tty = std::io::stderr().is_terminal();
    let interval = if tty {
        PROGRESS_INTERVAL_TTY
    } else {
        PROGRESS_INTERVAL_PLAIN
    };
    let mut last_print = Instant::now();
    let (mut last_rows, mut last_time) = (0u64, start);
    while !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(20));
        if last_print.elapsed() < interval {
            continue;
        }
        last_print = Instant::now();
        let done: u64 = progress
            .iter()
            .map(|p| p.rows_done.load(Ordering::Relaxed))
            .sum();
        let now = Instant::now();
        let rate = (done - last_rows) as f64 / (now - last_time).as_secs_f64().max(1e-9);
        (last_rows, last_time) = (done, now);
        let eta_s = if rate > 0.0 {
            (total_rows - done) as f64 / rate
        } else {
            f64::INFINITY
        };
        let top = db
            .stats()
            .top_waits()
            .first()
            .map_or("none".to_string(), |(w, _)| w.name().to_string());
        let line =
            format!("{done}/{total_rows} rows  {rate:.0} rows/s  ETA {eta_s:.0} s  top wait {top}");
        if tty {
            eprint!("\r\x1b[2K{line}");
        } else {
            eprintln!("{line}");
        }
    }
    if tty {
        eprint!("\r\x1b[2K");
    }
}

fn number(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn print_report(args: &StressArgs, r: &serde_json::Value, wait_ns_total: u64) {
    println!(
        "hotpage stress: design {}, {} sessions x {} rows, {}-byte rows, {}-byte pages",
        args.design, args.sessions, args.rows, args.row_bytes, r["page_size"]
    );
    let lat = &r["latency_us"];
    println!(
        "rows {}   elapsed {:.3} s   {:.0} rows/s",
        r["rows_total"],
        number(&r["elapsed_s"]),
        number(&r["rows_per_s"])
    );
    println!(
        "latency (us): p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
        number(&lat["p50"]),
        number(&lat["p99"]),
        number(&lat["p999"]),
        number(&lat["max"])
    );
    println!();
    println!("Top waits");
    let mut waits = Table::new();
    waits.set_header(vec![
        "wait type",
        "count",
        "total ms",
        "avg us",
        "% of wait time",
    ]);
    let list = r["waits"].as_array().cloned().unwrap_or_default();
    if list.is_empty() {
        waits.add_row(vec!["(none)", "0", "0", "0", "0"]);
    }
    for w in &list {
        let wait_ms = number(&w["wait_ms"]);
        waits.add_row(vec![
            w["type"].as_str().unwrap_or("").to_string(),
            w["count"].to_string(),
            format!("{wait_ms:.1}"),
            format!("{:.1}", number(&w["avg_us"])),
            format!(
                "{:.1}",
                100.0 * wait_ms * 1e6 / (wait_ns_total.max(1) as f64)
            ),
        ]);
    }
    right_align(&mut waits, &[1, 2, 3, 4]);
    println!("{waits}");
    println!();
    println!("Hottest pages (file:page)");
    let mut hot = Table::new();
    hot.set_header(vec!["page", "waits", "total ms"]);
    for p in r["hot_pages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .take(5)
    {
        hot.add_row(vec![
            format!("{}:{}", p["file"], p["page"]),
            p["waits"].to_string(),
            format!("{:.1}", number(&p["wait_ms"])),
        ]);
    }
    right_align(&mut hot, &[1, 2]);
    println!("{hot}");
    println!();
    let index = &r["index"];
    println!(
        "Index: {} levels, {} pages, leaf fill {:.1} %, {} page splits, {} rows in the table",
        index["levels"],
        index["pages"],
        number(&index["avg_fill_pct"]),
        index["splits"],
        index["rows_in_table"]
    );
}

fn right_align(table: &mut Table, columns: &[usize]) {
    for &c in columns {
        if let Some(column) = table.column_mut(c) {
            column.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
}
