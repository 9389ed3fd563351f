//! `hotpage stress`: N sessions, each on its own OS thread, each inserting R rows one per
//! call into one table, then a report of throughput, latency, waits and index shape.
//!
//! This module reads and checks the arguments, opens the database and hands a plan and
//! the engine target to `hotpage_workload::run`; the report is rendered by
//! [`crate::report_text`].

use crate::CliError;
use crate::report_text;
use anyhow::Context;
use hotpage::{Database, Durability, Options};
use hotpage_workload::engine::{ACK_STAMP_BYTES, EngineConfig, EngineError, EngineTarget};
use hotpage_workload::sql::{SqlTarget, SqlTargetError};
use hotpage_workload::tsql::{TsqlTarget, TsqlTargetError};
use hotpage_workload::{
    Amount, Design, DesignName, DesignOptions, Plan, Progress, Report, RowShape, RunError,
};
use std::path::PathBuf;
use std::time::Duration;

/// The most sessions one run may start.
pub const SESSIONS_MAX: u32 = 4096;
/// The largest `--pool-mib` (1 TiB): larger values would overflow the byte count, and the
/// pool allocates a frame descriptor per page when the database opens.
const POOL_MIB_MAX: usize = 1 << 20;
/// The largest `--checkpoint-mib` (1 TiB of log between checkpoints).
const CHECKPOINT_MIB_MAX: u64 = 1 << 20;
/// Rows per session when neither `--rows` nor `--duration` is given.
const ROWS_DEFAULT: u64 = 10_000;
/// The longest `--duration` or `--warmup`, in seconds (one day).
const SECONDS_MAX: f64 = 86_400.0;

#[derive(clap::Args, Debug, Clone)]
pub struct StressArgs {
    /// Table design: identity, identity-flow-control, guid, guid-v7, hash-prefix,
    /// hash-partition, bit-reverse, session-range, heap (free-space map, seed 002),
    /// heap-nc-identity (heap + nonclustered index), memory (memory-optimized: no pages), or
    /// all (each in turn, then a side-by-side summary)
    #[arg(long, default_value = "identity")]
    pub design: String,
    /// Concurrent sessions, each an OS thread with its own session (ostress's -n)
    #[arg(long, short = 'n', default_value_t = 8)]
    pub sessions: u32,
    /// Rows each session inserts, one row per call (autocommit) [default: 10000] (ostress's
    /// -r)
    #[arg(long, short = 'r', conflicts_with = "duration")]
    pub rows: Option<u64>,
    /// Insert through the SQL layer instead of a --design: each session prepares this
    /// INSERT once and executes it for every row, e.g. "INSERT INTO t (status) VALUES
    /// ('CREATED')" (ostress's -Q). The report is the table's, as for a design
    #[arg(
        long,
        short = 'Q',
        value_name = "STATEMENT",
        // The statement's table is the design: these were ignored without a word.
        conflicts_with_all = [
            "design", "row_bytes", "buckets", "cache", "block", "partitions",
            "flow_control_sessions",
        ]
    )]
    pub sql: Option<String>,
    /// With --sql: a SQL script run once before the sessions start (CREATE TABLE ...); a
    /// table that exists already makes its CREATE TABLE fail unless it says IF NOT EXISTS
    #[arg(long, value_name = "FILE", requires = "sql")]
    pub setup_sql: Option<PathBuf>,
    /// With --sql: the dialect of --sql and --setup-sql. postgres: --sql is one INSERT,
    /// prepared once per session. tsql (SQL Server's, run as ostress runs it): --setup-sql
    /// is a script of GO-separated batches run once; --sql is one batch (an INSERT, or a
    /// loop such as seed 000's WHILE @i < 100000 … INSERT … END) that each session parses
    /// once and runs whole -r times, so a row of the report is one run of the batch and
    /// the table's figures count the rows it holds. Not with --url
    #[arg(long, default_value = "postgres", value_parser = ["postgres", "tsql"])]
    pub dialect: String,
    /// With --sql: run it against a PostgreSQL-wire server instead of the embedded SQL
    /// layer (PostgreSQL, a `hotpage serve`, CockroachDB, ...), e.g.
    /// postgres://user[:password]@host[:port]/database. Each session is one connection
    /// that prepares the statement once; --setup-sql runs first on a connection of its
    /// own. Waits come from the server: a hotpage server's hotpage_wait_stats, otherwise
    /// pg_stat_activity sampled every 10 ms (each wait event's share of the active
    /// sessions found; CPU when none). Options of the embedded engine (--db, --design,
    /// --durability, --page-size, ...) do not apply: the server has its own settings.
    /// Exit 2 for a bad URL, a failed setup script or a statement that does not prepare;
    /// exit 1 for a connection that fails or a statement that fails while running (the
    /// server's SQLSTATE and message are printed)
    #[arg(
        long,
        value_name = "URL",
        requires = "sql",
        conflicts_with_all = [
            "db", "design", "table", "durability", "row_bytes", "page_size", "pool_mib",
            "files", "buckets", "cache", "block", "partitions", "flow_control_sessions",
            "checkpoint_mib", "log_segment_mib", "simulate_power_loss", "ack_dir",
        ]
    )]
    pub url: Option<String>,
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
    /// Also write the report as one self-contained HTML file (inline CSS and SVG charts:
    /// wait time by type, latency percentiles, hottest pages; rows/s by design with
    /// --design all), replacing FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
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

/// Checks every option before anything is opened or created: a bad command line leaves no
/// database directory behind.
fn validate(args: &StressArgs) -> Result<DesignChoice, CliError> {
    let choice = validate_design(args)?;
    validate_amounts(args)?;
    validate_storage(args, choice)?;
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
    Ok(choice)
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

/// The design (parsed here, once) and the options that shape its keys and layout. Every
/// design's name fits the catalog (a test of hotpage-workload checks it).
fn validate_design(args: &StressArgs) -> Result<DesignChoice, CliError> {
    let choice = DesignChoice::parse(&args.design)?;
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
    Ok(choice)
}

/// Sessions, rows, time and batch.
fn validate_amounts(args: &StressArgs) -> Result<(), CliError> {
    if args.sessions == 0 || args.sessions > SESSIONS_MAX {
        return Err(CliError::usage(format!(
            "--sessions must be from 1 to {SESSIONS_MAX}, not {}",
            args.sessions
        )));
    }
    validate_run_amounts(
        args.rows,
        args.duration,
        args.warmup,
        args.batch,
        SECONDS_MAX,
    )
}

/// `--rows`, `--duration`, `--warmup` and `--batch` of a workload run (stress, compare):
/// at least one row, a time in (0, `seconds_max`], a warmup in [0, `seconds_max`], a
/// batch of at least one row.
pub(crate) fn validate_run_amounts(
    rows: Option<u64>,
    duration_s: Option<f64>,
    warmup_s: f64,
    batch: u32,
    seconds_max: f64,
) -> Result<(), CliError> {
    if rows == Some(0) {
        return Err(CliError::usage("--rows must be at least 1"));
    }
    if let Some(d) = duration_s
        && !(d > 0.0 && d <= seconds_max)
    {
        return Err(CliError::usage(format!(
            "--duration must be more than 0 and at most {seconds_max} seconds, not {d}"
        )));
    }
    if !(0.0..=seconds_max).contains(&warmup_s) {
        return Err(CliError::usage(format!(
            "--warmup must be from 0 to {seconds_max} seconds, not {warmup_s}"
        )));
    }
    if batch == 0 {
        return Err(CliError::usage("--batch must be at least 1"));
    }
    Ok(())
}

/// Pages, rows, pool, log, files and durability.
fn validate_storage(args: &StressArgs, choice: DesignChoice) -> Result<(), CliError> {
    hotpage::limits::validate_page_size(args.page_size).map_err(CliError::usage)?;
    let layout = match choice {
        DesignChoice::One(name) => Design::new(name, &design_options(args)).layout(1),
        // Checked against a clustered table's rows (each design's own limit is checked
        // when its table is opened).
        DesignChoice::All => hotpage::Layout::Clustered,
    };
    let row_max = layout.row_bytes_max(args.page_size);
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
    hotpage::limits::validate_pool_bytes(args.pool_mib << 20).map_err(CliError::usage)?;
    if let Some(html) = &args.html {
        crate::report_html::check_path(html)?;
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

/// The options of `--design`, from the command line.
fn design_options(args: &StressArgs) -> DesignOptions {
    // About one page of rows per block: 64-byte header, then (slot + key-length byte + 8-byte
    // key + row) per row.
    let per_page = (args.page_size - 64) / (4 + 1 + 8 + args.row_bytes.max(1));
    DesignOptions {
        buckets: args.buckets,
        cache: args.cache,
        block: args.block.unwrap_or(per_page.max(1) as u32),
        partitions: args.partitions,
        flow_control_sessions: args
            .flow_control_sessions
            .unwrap_or_else(hotpage_workload::design::flow_control_sessions_default),
    }
}

/// What `--design` names: one design, or `all` of them in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DesignChoice {
    One(DesignName),
    All,
}

impl DesignChoice {
    /// Parses `--design`; an unknown name lists the valid ones.
    fn parse(text: &str) -> Result<DesignChoice, CliError> {
        if text == "all" {
            return Ok(DesignChoice::All);
        }
        text.parse()
            .map(DesignChoice::One)
            .map_err(|error| CliError::usage(format!("{error}, or all")))
    }
}

/// Runs the stress command.
pub fn run(args: &StressArgs) -> Result<(), CliError> {
    if args.dialect == "tsql" && (args.url.is_some() || args.sql.is_none()) {
        return Err(CliError::usage(
            "--dialect tsql runs --sql (and --setup-sql) on the embedded SQL layer: it needs --sql, and not --url",
        ));
    }
    if args.url.is_some() {
        validate_amounts(args)?;
        let report = crate::stress_url::run(args, &plan(args, Durability::Sync))?;
        return print_one(args, &report);
    }
    if args.sql.is_some() {
        validate_amounts(args)?;
        let report = run_sql(args)?;
        return print_one(args, &report);
    }
    let name = match validate(args)? {
        DesignChoice::One(name) => name,
        DesignChoice::All => return run_all(args),
    };
    let table = args.table.clone().unwrap_or_else(|| name.to_string());
    let report = run_one(args, name, &table)?;
    print_one(args, &report)
}

fn print_one(args: &StressArgs, report: &Report) -> Result<(), CliError> {
    write_html(args, &[(report.target.design.clone(), report)])?;
    if args.json {
        outln!("{}", to_json(report)?)?;
    } else {
        report_text::print_report(report)?;
    }
    Ok(())
}

/// `--sql`: the statement through the SQL layer, after the setup script.
fn run_sql(args: &StressArgs) -> Result<Report, CliError> {
    let statement = args.sql.as_deref().unwrap_or_default();
    let setup = match &args.setup_sql {
        Some(file) => Some(
            std::fs::read_to_string(file)
                .with_context(|| format!("cannot read --setup-sql {}", file.display()))?,
        ),
        None => None,
    };
    let (path, _temp_dir) = database_path(args)?;
    let durability = parse_durability(args)?;
    let db = open_for_stress(&path, engine_options(args, durability), false)
        .with_context(|| format!("cannot open database {}", path.display()))?;
    crate::warn_rows_missing(&db);
    let label = args.db.as_ref().map(|p| p.display().to_string());
    if args.dialect == "tsql" {
        return run_tsql(args, db, setup.as_deref(), statement, label, durability);
    }
    let target = SqlTarget::new(db, setup.as_deref(), statement, label).map_err(|e| match e {
        SqlTargetError::Setup(_) | SqlTargetError::NotAnInsert | SqlTargetError::Sql(_) => {
            CliError::usage(e.to_string())
        }
        SqlTargetError::Engine(_) => anyhow::Error::new(e).into(),
    })?;
    let report = hotpage_workload::run(&plan(args, durability), &target).map_err(|e| match e {
        RunError::Session(error) => CliError::failure(format!("insert failed: {error}")),
        RunError::Figures(error) => anyhow::Error::new(error).into(),
        RunError::Histogram(error) => {
            CliError::failure(format!("merging latency histograms: {error}"))
        }
        RunError::Panicked => CliError::failure("a stress session panicked"),
    })?;
    if let Some(db) = target.into_database() {
        db.close().context("closing the database")?;
    }
    Ok(report)
}

/// `--sql` with `--dialect tsql`: the batch on T-SQL sessions, after the setup script.
fn run_tsql(
    args: &StressArgs,
    db: Database,
    setup: Option<&str>,
    batch: &str,
    label: Option<String>,
    durability: Durability,
) -> Result<Report, CliError> {
    let target = TsqlTarget::new(db, setup, batch, label).map_err(|e| match e {
        TsqlTargetError::Setup(_) | TsqlTargetError::NotAnInsert | TsqlTargetError::Sql(_) => {
            CliError::usage(e.to_string())
        }
        TsqlTargetError::Engine(_) => anyhow::Error::new(e).into(),
    })?;
    let report = hotpage_workload::run(&plan(args, durability), &target).map_err(|e| match e {
        RunError::Session(error) => CliError::failure(format!("the batch failed: {error}")),
        RunError::Figures(error) => anyhow::Error::new(error).into(),
        RunError::Histogram(error) => {
            CliError::failure(format!("merging latency histograms: {error}"))
        }
        RunError::Panicked => CliError::failure("a stress session panicked"),
    })?;
    if let Some(db) = target.into_database() {
        db.close().context("closing the database")?;
    }
    Ok(report)
}

/// `--db`, or a temporary directory (removed when the returned guard is dropped).
fn database_path(args: &StressArgs) -> Result<(PathBuf, Option<tempfile::TempDir>), CliError> {
    match &args.db {
        Some(path) => Ok((path.clone(), None)),
        None => {
            let temp_dir = tempfile::tempdir().context("creating a temporary directory")?;
            Ok((temp_dir.path().join("db"), Some(temp_dir)))
        }
    }
}

fn parse_durability(args: &StressArgs) -> Result<Durability, CliError> {
    Durability::parse(&args.durability).ok_or_else(|| {
        CliError::usage(format!(
            "unknown durability '{}'; choose sync, async or none",
            args.durability
        ))
    })
}

/// `--design all`: every design in turn, each in a table of its name, then a summary.
fn run_all(args: &StressArgs) -> Result<(), CliError> {
    let mut reports = Vec::new();
    for name in DesignName::ALL {
        let report = run_one(args, name, name.as_str())?;
        if !args.json {
            report_text::print_report(&report)?;
            outln!()?;
        }
        reports.push((name, report));
    }
    let runs: Vec<(String, &Report)> = reports
        .iter()
        .map(|(name, report)| (name.to_string(), report))
        .collect();
    write_html(args, &runs)?;
    if args.json {
        #[derive(serde::Serialize)]
        struct AllDesigns<'a> {
            designs: Vec<&'a Report>,
        }
        let all = AllDesigns {
            designs: reports.iter().map(|(_, report)| report).collect(),
        };
        outln!("{}", to_json(&all)?)?;
    } else {
        report_text::print_summary(&reports)?;
    }
    Ok(())
}

/// `--html FILE`: the runs' tables and charts as one HTML file.
fn write_html(args: &StressArgs, runs: &[(String, &Report)]) -> Result<(), CliError> {
    let Some(path) = &args.html else {
        return Ok(());
    };
    let mut document = hotpage_report::Document::new("hotpage stress");
    let command: Vec<String> = std::env::args().skip(1).collect();
    document.subtitle = Some(crate::report_html::subtitle(&format!(
        "hotpage {}",
        command.join(" ")
    )));
    document
        .sections
        .push(crate::report_html::runs_section("Runs", runs));
    crate::report_html::write(&document, path)?;
    errln!("HTML report written to {}", path.display());
    Ok(())
}

/// One JSON object on one line.
fn to_json(value: &impl serde::Serialize) -> Result<String, CliError> {
    Ok(serde_json::to_string(value).context("writing the report as JSON")?)
}

/// The plan of the command line.
fn plan(args: &StressArgs, durability: Durability) -> Plan {
    plan_with_progress(args, durability, Progress::Stderr)
}

/// The plan of the command line, with its progress shown or not.
fn plan_with_progress(args: &StressArgs, durability: Durability, progress: Progress) -> Plan {
    Plan {
        sessions: args.sessions,
        amount: match args.duration {
            Some(seconds) => Amount::Duration(Duration::from_secs_f64(seconds)),
            None => Amount::RowsPerSession(args.rows.unwrap_or(ROWS_DEFAULT)),
        },
        warmup: Duration::from_secs_f64(args.warmup),
        batch: args.batch,
        durability,
        row: RowShape {
            bytes: args.row_bytes,
        },
        progress,
    }
}

/// The engine's options of the command line.
fn engine_options(args: &StressArgs, durability: Durability) -> Options {
    Options {
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
    }
}

/// One design into table `table_name`: returns its report, saved with the database when
/// it is not a temporary one (for `hotpage inspect waits`).
fn run_one(args: &StressArgs, name: DesignName, table_name: &str) -> Result<Report, CliError> {
    run_one_with_progress(args, name, table_name, Progress::Stderr)
}

/// One design's run for `repro`: its arguments checked as the command line's are, and
/// its own progress line hidden (`repro` shows one bar for all its runs).
pub(crate) fn run_checked_quiet(args: &StressArgs) -> Result<Report, CliError> {
    let DesignChoice::One(name) = validate(args)? else {
        return Err(CliError::usage("repro runs one design at a time"));
    };
    let table = args.table.clone().unwrap_or_else(|| name.to_string());
    run_one_with_progress(args, name, &table, Progress::Hidden)
}

/// [`run_one`], with the run's own progress line shown or not (`repro` shows its own).
fn run_one_with_progress(
    args: &StressArgs,
    name: DesignName,
    table_name: &str,
    progress: Progress,
) -> Result<Report, CliError> {
    let design = Design::new(name, &design_options(args));
    let (path, _temp_dir) = database_path(args)?;
    let durability = parse_durability(args)?;
    let db = open_for_stress(
        &path,
        engine_options(args, durability),
        args.simulate_power_loss,
    )
    .with_context(|| format!("cannot open database {}", path.display()))?;
    crate::warn_rows_missing(&db);
    let config = EngineConfig {
        table: table_name.to_string(),
        design,
        batch: args.batch,
        row_bytes: args.row_bytes,
        ack_dir: args.ack_dir.clone(),
        db_label: args.db.as_ref().map(|p| p.display().to_string()),
    };
    let target = EngineTarget::new(db, &path, config).map_err(setup_error)?;
    let report = hotpage_workload::run(&plan_with_progress(args, durability, progress), &target)
        .map_err(run_error)?;
    let db = target.into_database();
    if args.db.is_some() {
        let bytes = serde_json::to_vec(&report).context("writing the report as JSON")?;
        db.save_run_stats(&bytes)
            .context("saving the run's wait statistics")?;
    }
    db.close().context("closing the database")?;
    Ok(report)
}

/// A table of another design, or rows it cannot hold, are a bad command line (exit 2);
/// the engine's errors keep their exit codes.
fn setup_error(error: EngineError) -> CliError {
    match error {
        EngineError::DesignMismatch { .. } | EngineError::RowTooLong { .. } => {
            CliError::usage(error.to_string())
        }
        EngineError::Engine(_) | EngineError::Context { .. } => anyhow::Error::new(error).into(),
    }
}

/// A failed run: a session's engine error keeps its exit code.
fn run_error(error: RunError<EngineError>) -> CliError {
    match error {
        RunError::Session(error) => CliError::new(
            error.engine().map_or(crate::EXIT_FAILURE, crate::exit_code),
            format!("insert failed: {error}"),
        ),
        RunError::Figures(error) => anyhow::Error::new(error).into(),
        RunError::Histogram(error) => {
            CliError::failure(format!("merging latency histograms: {error}"))
        }
        RunError::Panicked => CliError::failure("a stress session panicked"),
    }
}
