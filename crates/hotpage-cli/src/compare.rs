//! `hotpage compare`: the same workload against hotpage and the engines a user would pick
//! instead (SQLite, RocksDB, fjall, PostgreSQL), in interleaved rounds, as a table of medians
//! with their spread and, for each (design, sessions), hotpage ÷ the best peer.
//!
//! This module reads the command line, finds which peers can run (an unavailable one is
//! skipped with its reason), runs the cells through `hotpage_workload::run` and renders
//! [`Comparison`] (`compare_text`).

use crate::CliError;
use anyhow::Context;
use hotpage::{Database, Durability, Options};
use hotpage_peers::postgres::{PgBinaries, PgInstance};
use hotpage_peers::{Commit, KeyShape, SqliteTarget};
use hotpage_workload::compare::{Cell, Comparison, Skipped};
use hotpage_workload::engine::{EngineConfig, EngineTarget};
use hotpage_workload::{
    Amount, Design, DesignName, DesignOptions, Plan, Progress, Report, RowShape, RunError, Target,
};
use std::path::PathBuf;
use std::time::Duration;

/// The most sessions a cell may have (PostgreSQL's server takes 300 connections).
const SESSIONS_MAX: u32 = 256;
/// The most rounds.
const ROUNDS_MAX: u32 = 100;
/// A round's length when neither `--rows` nor `--duration` is given.
const DURATION_DEFAULT_S: f64 = 2.0;
/// The longest `--duration` or `--warmup`, in seconds.
const SECONDS_MAX: f64 = 3600.0;
/// hotpage's page size and buffer pool in a comparison: `hotpage stress`'s defaults.
const PAGE_SIZE: usize = 8192;
const POOL_BYTES: usize = 256 << 20;

pub const AFTER_HELP: &str = "Durability, engine by engine:
  sync: hotpage commits after an fdatasync (group commit); SQLite synchronous=FULL (WAL);
        RocksDB WriteOptions sync=true; fjall PersistMode::SyncData;
        PostgreSQL synchronous_commit=on
  none: hotpage writes no log at all; SQLite synchronous=OFF (WAL written, never synced);
        RocksDB sync=false (WAL written, not synced); fjall PersistMode::Buffer (journal
        written, not synced); PostgreSQL synchronous_commit=off
Keys: identity is an 8-byte key one more than the last, guid 16 random bytes; each row is
--row-bytes bytes on top. Each round of every engine starts on an empty table.

Examples:
  hotpage compare --engines hotpage,sqlite --sessions 1,8 --duration 1
  hotpage compare --durability none --rounds 5 --json";

#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// Engines, comma-separated: hotpage, sqlite, rocksdb (needs the `rocksdb` cargo
    /// feature), fjall (needs the `fjall` cargo feature; not in the default list), postgres
    /// (a throwaway local server: needs initdb and pg_ctl). One that cannot run here is
    /// skipped, and the reason printed
    #[arg(
        long,
        default_value = "hotpage,sqlite,rocksdb,postgres",
        value_name = "LIST"
    )]
    pub engines: String,
    /// Designs, comma-separated: identity (8-byte ascending key) and/or guid (16 random
    /// bytes)
    #[arg(long, default_value = "identity,guid", value_name = "LIST")]
    pub designs: String,
    /// Session counts, comma-separated, 1 to 256 each: one cell per count
    #[arg(long, default_value = "1,8,64", value_name = "LIST")]
    pub sessions: String,
    /// When a commit returns: sync (after the engine's log is on stable storage) or none
    /// (without waiting for it); see the mapping below
    #[arg(long, default_value = "sync")]
    pub durability: String,
    /// Rows each session inserts per round (instead of --duration)
    #[arg(long, short = 'r', conflicts_with = "duration")]
    pub rows: Option<u64>,
    /// Seconds each round inserts for [default: 2]
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Rounds per cell, interleaved (round 1 of every cell, then round 2, ...): each
    /// figure is the median of the rounds, with their min–max
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Seconds each round inserts first without counting
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    pub warmup: f64,
    /// Bytes of each row (the key is extra)
    #[arg(long, default_value_t = 40)]
    pub row_bytes: usize,
    /// Rows per transaction (1 = every insert commits on its own)
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// Directory of PostgreSQL's initdb and pg_ctl [default: /usr/lib/postgresql/*/bin,
    /// then PATH]
    #[arg(long, value_name = "DIR")]
    pub pg_bin: Option<PathBuf>,
    /// Print one JSON object instead of the tables
    #[arg(long)]
    pub json: bool,
    /// Also write the results as one self-contained HTML file (inline CSS and SVG charts:
    /// rows/s and p99 latency (log scale) by sessions per design, one line per engine), replacing FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// An engine `compare` can measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Hotpage,
    Sqlite,
    Rocksdb,
    Fjall,
    Postgres,
}

impl Engine {
    const ALL: [Engine; 5] = [
        Engine::Hotpage,
        Engine::Sqlite,
        Engine::Rocksdb,
        Engine::Fjall,
        Engine::Postgres,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Engine::Hotpage => "hotpage",
            Engine::Sqlite => "sqlite",
            Engine::Rocksdb => "rocksdb",
            Engine::Fjall => "fjall",
            Engine::Postgres => "postgres",
        }
    }

    /// How the engine's durability was set, in its own words.
    fn durability_label(self, commit: Commit) -> &'static str {
        match (self, commit) {
            (Engine::Hotpage, Commit::Sync) => "sync",
            (Engine::Hotpage, Commit::NoSync) => "none (no log)",
            (Engine::Sqlite, Commit::Sync) => "synchronous=FULL",
            (Engine::Sqlite, Commit::NoSync) => "synchronous=OFF",
            (Engine::Rocksdb, Commit::Sync) => "sync=true",
            (Engine::Rocksdb, Commit::NoSync) => "sync=false",
            (Engine::Fjall, Commit::Sync) => "PersistMode::SyncData",
            (Engine::Fjall, Commit::NoSync) => "PersistMode::Buffer",
            (Engine::Postgres, Commit::Sync) => "synchronous_commit=on",
            (Engine::Postgres, Commit::NoSync) => "synchronous_commit=off",
        }
    }
}

/// The command line, checked.
struct Settings {
    engines: Vec<Engine>,
    designs: Vec<KeyShape>,
    sessions: Vec<u32>,
    commit: Commit,
    plan: Plan,
    rounds: u32,
}

/// A comma-separated list: every item known, none twice, at least one.
fn parse_list<T: PartialEq>(
    option: &str,
    text: &str,
    valid: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, CliError> {
    let mut items = Vec::new();
    for item in text.split(',').map(str::trim) {
        let value = parse(item).ok_or_else(|| {
            CliError::usage(format!("{option}: unknown value '{item}'; valid: {valid}"))
        })?;
        if items.contains(&value) {
            return Err(CliError::usage(format!(
                "{option}: '{item}' is given twice"
            )));
        }
        items.push(value);
    }
    Ok(items)
}

fn parse_sessions(text: &str) -> Option<u32> {
    text.parse().ok().filter(|n| (1..=SESSIONS_MAX).contains(n))
}

/// Checks every option before anything starts.
fn validate(args: &CompareArgs) -> Result<Settings, CliError> {
    if let Some(html) = &args.html {
        crate::report_html::check_path(html)?;
    }
    let engine_names = "hotpage, sqlite, rocksdb, fjall, postgres";
    let engines = parse_list("--engines", &args.engines, engine_names, |s| {
        Engine::ALL.into_iter().find(|e| e.name() == s)
    })?;
    let designs = parse_list(
        "--designs",
        &args.designs,
        "identity, guid",
        KeyShape::parse,
    )?;
    let sessions = parse_list(
        "--sessions",
        &args.sessions,
        &format!("whole numbers from 1 to {SESSIONS_MAX}"),
        parse_sessions,
    )?;
    let commit = match args.durability.as_str() {
        "sync" => Commit::Sync,
        "none" => Commit::NoSync,
        other => {
            return Err(CliError::usage(format!(
                "unknown durability '{other}'; choose sync or none (async has no \
                 counterpart in every peer)"
            )));
        }
    };
    validate_amounts(args)?;
    let row_max = hotpage::Layout::Clustered.row_bytes_max(PAGE_SIZE);
    if args.row_bytes == 0 || args.row_bytes > row_max {
        return Err(CliError::usage(format!(
            "--row-bytes must be from 1 to {row_max} (hotpage's largest row on {PAGE_SIZE}-byte pages), not {}",
            args.row_bytes
        )));
    }
    if let Some(dir) = &args.pg_bin
        && !dir.is_dir()
    {
        return Err(CliError::usage(format!(
            "--pg-bin {} is not a directory",
            dir.display()
        )));
    }
    Ok(Settings {
        engines,
        designs,
        sessions,
        commit,
        plan: plan(args, commit),
        rounds: args.rounds,
    })
}

/// Rounds, rows, time and batch.
fn validate_amounts(args: &CompareArgs) -> Result<(), CliError> {
    if !(1..=ROUNDS_MAX).contains(&args.rounds) {
        return Err(CliError::usage(format!(
            "--rounds must be from 1 to {ROUNDS_MAX}, not {}",
            args.rounds
        )));
    }
    crate::stress::validate_run_amounts(
        args.rows,
        args.duration,
        args.warmup,
        args.batch,
        SECONDS_MAX,
    )
}

/// One round of one cell (the sessions are set per cell).
fn plan(args: &CompareArgs, commit: Commit) -> Plan {
    Plan {
        sessions: 1,
        amount: match (args.rows, args.duration) {
            (Some(rows), _) => Amount::RowsPerSession(rows),
            (None, seconds) => Amount::Duration(Duration::from_secs_f64(
                seconds.unwrap_or(DURATION_DEFAULT_S),
            )),
        },
        warmup: Duration::from_secs_f64(args.warmup),
        batch: args.batch,
        durability: match commit {
            Commit::Sync => Durability::Sync,
            Commit::NoSync => Durability::None,
        },
        row: RowShape {
            bytes: args.row_bytes,
        },
        // compare shows its own progress, one line per cell.
        progress: Progress::Hidden,
    }
}

/// What the available engines need while the cells run.
struct Peers {
    engines: Vec<Engine>,
    skipped: Vec<Skipped>,
    postgres: Option<PgInstance>,
}

/// Which engines can run here; starts the local PostgreSQL when it is asked for.
fn find_peers(settings: &Settings, args: &CompareArgs) -> Peers {
    let mut peers = Peers {
        engines: Vec::new(),
        skipped: Vec::new(),
        postgres: None,
    };
    for &engine in &settings.engines {
        let unavailable = match engine {
            Engine::Hotpage | Engine::Sqlite => None,
            Engine::Rocksdb if hotpage_peers::ROCKSDB_BUILT => None,
            Engine::Rocksdb => Some(
                "this hotpage was built without the `rocksdb` cargo feature \
                 (scripts/with_system_rocksdb.sh cargo build --release -p hotpage-cli \
                 --features rocksdb)"
                    .to_string(),
            ),
            Engine::Fjall if hotpage_peers::FJALL_BUILT => None,
            Engine::Fjall => Some(
                "this hotpage was built without the `fjall` cargo feature \
                 (cargo build --release -p hotpage-cli --features fjall)"
                    .to_string(),
            ),
            Engine::Postgres => {
                match PgBinaries::find(args.pg_bin.as_deref())
                    .and_then(|bins| PgInstance::start(&bins, settings.commit))
                {
                    Ok(instance) => {
                        peers.postgres = Some(instance);
                        None
                    }
                    Err(error) => Some(format!("no local PostgreSQL: {error}")),
                }
            }
        };
        match unavailable {
            None => peers.engines.push(engine),
            Some(reason) => {
                errln!("compare: skipping {}: {reason}", engine.name());
                peers.skipped.push(Skipped {
                    engine: engine.name().to_string(),
                    reason,
                });
            }
        }
    }
    peers
}

/// Runs the compare command.
pub fn run(args: &CompareArgs) -> Result<(), CliError> {
    let settings = validate(args)?;
    // A local PostgreSQL runs detached from the terminal: stop it on Ctrl-C too.
    // Failing to install the handler only loses that cleanup, so it does not stop the run.
    let _ = ctrlc::set_handler(|| {
        errln!("compare: interrupted; stopping and removing the local PostgreSQL, if any");
        hotpage_peers::postgres::stop_all_and_exit(130);
    });
    let peers = find_peers(&settings, args);
    let comparison = measure(&settings, &peers)?;
    // Stops and removes the local PostgreSQL before the results print.
    drop(peers);
    if let Some(path) = &args.html {
        let command: Vec<String> = std::env::args().skip(1).collect();
        crate::compare_html::write(&comparison, &format!("hotpage {}", command.join(" ")), path)?;
        errln!("HTML report written to {}", path.display());
    }
    if args.json {
        let text = serde_json::to_string(&comparison).context("writing the results as JSON")?;
        outln!("{text}")?;
        Ok(())
    } else {
        crate::compare_text::print(&comparison)
    }
}

/// Every round of every cell, interleaved: round 1 of each cell, then round 2, ...
fn measure(settings: &Settings, peers: &Peers) -> Result<Comparison, CliError> {
    let mut cells: Vec<(Engine, KeyShape, u32, Vec<Report>)> = Vec::new();
    for &design in &settings.designs {
        for &sessions in &settings.sessions {
            for &engine in &peers.engines {
                cells.push((engine, design, sessions, Vec::new()));
            }
        }
    }
    let progress =
        crate::compare_text::CellProgress::new(cells.len() as u64 * u64::from(settings.rounds));
    for round in 1..=settings.rounds {
        for (engine, design, sessions, reports) in &mut cells {
            let what = format!(
                "round {round}/{}: {} {design} {sessions} sessions",
                settings.rounds,
                engine.name()
            );
            progress.starting(&what);
            let plan = Plan {
                sessions: *sessions,
                ..settings.plan
            };
            settle_disk();
            let report = run_cell(*engine, *design, &plan, settings.commit, peers)
                .map_err(|e| CliError::new(e.code, format!("{what}: {}", e.message)))?;
            progress.finished(&what, report.rows_per_s);
            reports.push(report);
        }
    }
    progress.done();
    let plan = &settings.plan;
    let mut comparison = Comparison {
        durability: plan.durability.name().to_string(),
        rounds: settings.rounds,
        rows_per_session: plan.rows_per_session(),
        duration_s: plan.duration().map(|d| d.as_secs_f64()),
        row_bytes: plan.row.bytes,
        batch: plan.batch,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        engines: peers.engines.iter().map(|e| e.name().to_string()).collect(),
        skipped: peers.skipped.clone(),
        cells: cells
            .iter()
            .map(|(engine, design, _, reports)| {
                let durability = engine.durability_label(settings.commit);
                Cell::from_rounds(engine.name(), design.name(), durability, reports)
            })
            .collect(),
        ratios: Vec::new(),
    };
    comparison.compute_ratios();
    Ok(comparison)
}

/// Writes back every dirty page of the file system the rounds run on (the temporary
/// directory's) before a round starts, so that no engine's round pays for the write-back
/// of the round before it: another engine's page-cache writes, a removed directory. With
/// 155 MB dirty, hotpage's 8-session sync rounds fell from about 32k to 4–7k rows/s.
/// Every engine gets it alike; a file system that refuses it is simply not settled.
fn settle_disk() {
    if let Ok(dir) = std::fs::File::open(std::env::temp_dir()) {
        let _ = rustix::fs::syncfs(&dir);
    }
}

/// Drives `plan` against `target`; a failure becomes one line.
fn drive<T: Target>(plan: &Plan, target: &T) -> Result<Report, CliError> {
    hotpage_workload::run(plan, target).map_err(|e| match e {
        RunError::Session(error) => CliError::failure(format!("insert failed: {error}")),
        RunError::Figures(error) => CliError::failure(format!("after the run: {error}")),
        RunError::Histogram(error) => {
            CliError::failure(format!("merging latency histograms: {error}"))
        }
        RunError::Panicked => CliError::failure("a session panicked"),
    })
}

/// A fresh temporary directory for one round of an embedded engine.
fn temp_dir() -> Result<tempfile::TempDir, CliError> {
    Ok(tempfile::tempdir().context("creating a temporary directory")?)
}

/// One round of one cell, on an empty table.
fn run_cell(
    engine: Engine,
    design: KeyShape,
    plan: &Plan,
    commit: Commit,
    peers: &Peers,
) -> Result<Report, CliError> {
    match engine {
        Engine::Hotpage => run_hotpage(design, plan),
        Engine::Sqlite => {
            let dir = temp_dir()?;
            let target = SqliteTarget::create(dir.path(), design, commit)
                .map_err(|e| CliError::failure(e.to_string()))?;
            drive(plan, &target)
        }
        Engine::Rocksdb => run_rocksdb(design, plan, commit),
        Engine::Fjall => run_fjall(design, plan, commit),
        Engine::Postgres => {
            let Some(instance) = &peers.postgres else {
                return Err(CliError::failure("no local PostgreSQL was started"));
            };
            let target =
                hotpage_peers::postgres::connect_target(instance.url(), design, &plan.row.row())
                    .map_err(|e| CliError::failure(e.to_string()))?;
            drive(plan, &target)
        }
    }
}

#[cfg(feature = "rocksdb")]
fn run_rocksdb(design: KeyShape, plan: &Plan, commit: Commit) -> Result<Report, CliError> {
    let dir = temp_dir()?;
    let target = hotpage_peers::RocksTarget::create(dir.path(), design, commit)
        .map_err(|e| CliError::failure(e.to_string()))?;
    drive(plan, &target)
}

#[cfg(not(feature = "rocksdb"))]
fn run_rocksdb(_design: KeyShape, _plan: &Plan, _commit: Commit) -> Result<Report, CliError> {
    // find_peers skips RocksDB in this build, so no cell asks for it.
    Err(CliError::failure(
        "this hotpage was built without the `rocksdb` cargo feature",
    ))
}

#[cfg(feature = "fjall")]
fn run_fjall(design: KeyShape, plan: &Plan, commit: Commit) -> Result<Report, CliError> {
    let dir = temp_dir()?;
    let target = hotpage_peers::FjallTarget::create(dir.path(), design, commit)
        .map_err(|e| CliError::failure(e.to_string()))?;
    drive(plan, &target)
}

#[cfg(not(feature = "fjall"))]
fn run_fjall(_design: KeyShape, _plan: &Plan, _commit: Commit) -> Result<Report, CliError> {
    // find_peers skips fjall in this build, so no cell asks for it.
    Err(CliError::failure(
        "this hotpage was built without the `fjall` cargo feature",
    ))
}

/// hotpage's engine in a new database, the design's table created empty.
fn run_hotpage(design: KeyShape, plan: &Plan) -> Result<Report, CliError> {
    let dir = temp_dir()?;
    let path = dir.path().join("db");
    let options = Options {
        page_size: PAGE_SIZE,
        pool_bytes: POOL_BYTES,
        create_if_missing: true,
        durability: plan.durability,
        ..Options::default()
    };
    let db = Database::open(&path, options)
        .with_context(|| format!("cannot open database {}", path.display()))?;
    let name = match design {
        KeyShape::Identity => DesignName::Identity,
        KeyShape::Guid => DesignName::Guid,
    };
    let config = EngineConfig {
        table: name.as_str().to_string(),
        design: Design::new(name, &DesignOptions::default()),
        batch: plan.batch,
        row_bytes: plan.row.bytes,
        ack_dir: None,
        db_label: None,
    };
    let target = EngineTarget::new(db, &path, config).map_err(anyhow::Error::new)?;
    let report = drive(plan, &target)?;
    target
        .into_database()
        .close()
        .context("closing the database")?;
    Ok(report)
}
