//! `hotpage crashtest`: real processes, real SIGKILL (RocksDB's db_crashtest for hotpage).
//!
//! Each trial:
//! 1. runs `hotpage stress --durability sync` in a child process on a fresh database; each
//!    child session appends the keys of every transaction to its ack file after the commit
//!    returns;
//! 2. kills the child with SIGKILL at a random moment (with `--power-loss`, the child kept
//!    its unsynced writes in memory, so they die with it, as in a power loss);
//! 3. reopens the database here (recovery runs), and checks three things:
//!    - every acknowledged key is present;
//!    - no transaction is partly visible: rows carry (session, transaction, position,
//!      size), and each transaction must be there whole or not at all;
//!    - `hotpage check` passes.

use crate::CliError;
use anyhow::Context;
use hotpage::{Database, Key, Options};
use hotpage_workload::engine::ACK_STAMP_BYTES;
use rand::{Rng, SeedableRng, rngs::SmallRng};
use serde_json::json;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest a child may run before it is killed.
const KILL_AFTER_MAX: Duration = Duration::from_millis(2500);
/// The shortest: long enough for the child to open, create its table and commit a little.
const KILL_AFTER_MIN: Duration = Duration::from_millis(300);

#[derive(clap::Args, Debug)]
pub struct CrashtestArgs {
    /// Table design the child stresses
    #[arg(long, default_value = "identity")]
    pub design: String,
    /// Sessions in the child
    #[arg(long, default_value_t = 8)]
    pub sessions: u32,
    /// Rows per transaction in the child (1 = autocommit)
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// Data files of the child's database (its `stress --files`)
    #[arg(long, default_value_t = 1, value_name = "F")]
    pub files: u32,
    /// Kill-and-recover trials
    #[arg(long, default_value_t = 10)]
    pub trials: u32,
    /// The child checkpoints after this many MiB of log: a small value puts checkpoints
    /// (and, for memory tables, rows that only their checkpoint file holds) before the kill
    #[arg(long, default_value_t = 256)]
    pub checkpoint_mib: u64,
    /// Seed for the kill moments (default: from the clock; printed in the report)
    #[arg(long)]
    pub seed: Option<u64>,
    /// Simulate power loss, not just a process kill: the child keeps every write in memory
    /// until its fdatasync, so the kill loses whatever was not synced (a plain kill leaves
    /// it in the OS cache, which hides a missing fdatasync)
    #[arg(long)]
    pub power_loss: bool,
    /// Print one JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Default)]
struct Totals {
    rows_acknowledged: u64,
    rows_lost: u64,
    partial_transactions: u64,
    check_failures: u64,
}

fn parse_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// Runs the crash test.
pub fn run(args: &CrashtestArgs) -> Result<(), CliError> {
    validate(args)?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    let mut rng = SmallRng::seed_from_u64(seed);
    let exe = std::env::current_exe().context("finding the hotpage binary")?;
    let mut totals = Totals::default();
    let started = Instant::now();
    for trial in 0..args.trials {
        let dir = tempfile::tempdir().context("creating a temporary directory")?;
        let db_path = dir.path().join("db");
        let ack_dir = dir.path().join("acks");
        std::fs::create_dir(&ack_dir).context("creating the ack directory")?;
        let mut child = Command::new(&exe)
            .args(["stress", "--design", &args.design, "--durability", "sync"])
            .args(["--sessions", &args.sessions.to_string()])
            .args(["--batch", &args.batch.to_string()])
            .args(["--files", &args.files.to_string()])
            .args(["--checkpoint-mib", &args.checkpoint_mib.to_string()])
            .args(["--duration", "3600", "--pool-mib", "16"])
            .args(args.power_loss.then_some("--simulate-power-loss"))
            .arg("--db")
            .arg(&db_path)
            .arg("--ack-dir")
            .arg(&ack_dir)
            .arg("--json")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting the stress child")?;
        let kill_after = rng.random_range(KILL_AFTER_MIN..KILL_AFTER_MAX);
        std::thread::sleep(kill_after);
        if let Ok(Some(status)) = child.try_wait() {
            return Err(CliError::failure(format!(
                "trial {trial}: the stress child exited early ({status}); run the same stress command by hand to see why"
            )));
        }
        // Child::kill sends SIGKILL on Unix: no destructor, no flush, no goodbye.
        child.kill().context("killing the stress child")?;
        let _ = child.wait();
        let trial_totals = verify_trial(&exe, &db_path, &ack_dir, &args.design)
            .with_context(|| format!("trial {trial} (seed {seed})"))?;
        if !args.json {
            errln!(
                "trial {}/{}: killed after {} ms, {} rows acknowledged, {} lost, {} partial transactions, check {}",
                trial + 1,
                args.trials,
                kill_after.as_millis(),
                trial_totals.rows_acknowledged,
                trial_totals.rows_lost,
                trial_totals.partial_transactions,
                if trial_totals.check_failures == 0 {
                    "passed"
                } else {
                    "FAILED"
                }
            );
        }
        totals.rows_acknowledged += trial_totals.rows_acknowledged;
        totals.rows_lost += trial_totals.rows_lost;
        totals.partial_transactions += trial_totals.partial_transactions;
        totals.check_failures += trial_totals.check_failures;
    }
    print_report(args, seed, &totals, started.elapsed())?;
    if totals.rows_lost + totals.partial_transactions + totals.check_failures > 0 {
        return Err(CliError {
            code: crate::EXIT_CORRUPT,
            message: format!(
                "durability violated: {} rows lost, {} partial transactions, {} check failures (replay with --seed {seed})",
                totals.rows_lost, totals.partial_transactions, totals.check_failures
            ),
        });
    }
    Ok(())
}

/// Checks the arguments before any child starts.
fn validate(args: &CrashtestArgs) -> Result<(), CliError> {
    if args.trials == 0 || args.sessions == 0 || args.batch == 0 {
        return Err(CliError::usage(
            "--trials, --sessions and --batch must be at least 1",
        ));
    }
    if args.sessions > crate::stress::SESSIONS_MAX {
        // The stress child would refuse it, and a child that exits early reads as a
        // failed trial.
        return Err(CliError::usage(format!(
            "--sessions must be from 1 to {}, not {}",
            crate::stress::SESSIONS_MAX,
            args.sessions
        )));
    }
    crate::stress::validate_checkpoint_mib(args.checkpoint_mib)?;
    crate::stress::validate_files(args.files)?;
    if let Err(error) = args.design.parse::<hotpage_workload::DesignName>() {
        return Err(CliError::usage(error.to_string()));
    }
    Ok(())
}

/// The report: one JSON object, or text.
fn print_report(
    args: &CrashtestArgs,
    seed: u64,
    totals: &Totals,
    elapsed: Duration,
) -> Result<(), CliError> {
    if args.json {
        let report = json!({
            "design": args.design,
            "sessions": args.sessions,
            "batch": args.batch,
            "files": args.files,
            "checkpoint_mib": args.checkpoint_mib,
            "power_loss": args.power_loss,
            "seed": seed,
            "trials": args.trials,
            "rows_acknowledged": totals.rows_acknowledged,
            "rows_lost": totals.rows_lost,
            "partial_transactions": totals.partial_transactions,
            "check_failures": totals.check_failures,
            "elapsed_s": elapsed.as_secs_f64(),
        });
        return outln!("{report}");
    }
    outln!(
        "hotpage crashtest: design {}, {} sessions, batch {}, {} data file{}, {}, seed {}",
        args.design,
        args.sessions,
        args.batch,
        args.files,
        if args.files == 1 { "" } else { "s" },
        if args.power_loss {
            "power loss (unsynced writes lost)"
        } else {
            "process kill"
        },
        seed
    )?;
    outln!("trials                {}", args.trials)?;
    outln!("rows acknowledged     {}", totals.rows_acknowledged)?;
    outln!("rows lost             {}", totals.rows_lost)?;
    outln!("partial transactions  {}", totals.partial_transactions)?;
    outln!("check failures        {}", totals.check_failures)
}

fn verify_trial(
    exe: &Path,
    db_path: &Path,
    ack_dir: &Path,
    design: &str,
) -> anyhow::Result<Totals> {
    let mut totals = Totals::default();
    if !db_path.join("catalog").exists() {
        // Killed while the database was being created: nothing can have been acknowledged
        // (every acknowledged row counts as lost), and the directory must not be wedged:
        // a creating open completes the interrupted creation.
        totals.rows_acknowledged = count_acknowledged(ack_dir)?;
        totals.rows_lost = totals.rows_acknowledged;
        let completed = Database::open(db_path, Options::default()).and_then(Database::close);
        if completed.is_err() {
            totals.check_failures += 1;
        }
        return Ok(totals);
    }
    // Recovery happens here, in a new process's view of the files.
    let db = Database::open(
        db_path,
        Options {
            create_if_missing: false,
            ..Options::default()
        },
    )
    .context("reopening the killed child's database")?;
    let table = match db.table(design) {
        Ok(table) => Some(table),
        // Killed before its first checkpoint named the table: then nothing was acknowledged.
        Err(hotpage::Error::NoSuchTable(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let session = db.session();
    for entry in std::fs::read_dir(ack_dir).context("reading the ack files")? {
        let text = std::fs::read_to_string(entry.context("ack file")?.path())
            .context("reading an ack file")?;
        // Only whole lines: the child may die in the middle of writing one.
        for line in text.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
            for hex in line.split_whitespace() {
                let bytes = parse_hex(hex).context("a malformed ack line")?;
                let key = Key::from_bytes(&bytes)?;
                totals.rows_acknowledged += 1;
                let present = match &table {
                    Some(table) => session.get(table, &key)?.is_some(),
                    None => false,
                };
                if !present {
                    totals.rows_lost += 1;
                }
            }
        }
    }
    if let Some(table) = &table {
        // (session, transaction) → (rows seen, size each row claims)
        let mut transactions: HashMap<(u32, u64), (u32, u32)> = HashMap::new();
        let mut malformed = 0u64;
        session.scan(table, None, |_, row| {
            if row.len() < ACK_STAMP_BYTES {
                malformed += 1;
                return true;
            }
            let field = |range: std::ops::Range<usize>| {
                let mut bytes = [0u8; 8];
                bytes[..range.len()].copy_from_slice(&row[range]);
                u64::from_le_bytes(bytes)
            };
            let id = (field(0..4) as u32, field(4..12));
            let size = field(16..20) as u32;
            let entry = transactions.entry(id).or_insert((0, size));
            entry.0 += 1;
            true
        })?;
        totals.partial_transactions = malformed
            + transactions
                .values()
                .filter(|(seen, size)| seen != size)
                .count() as u64;
    }
    drop(session);
    drop(table);
    db.close().context("closing the recovered database")?;
    let check = Command::new(exe)
        .arg("check")
        .arg("--db")
        .arg(db_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("running hotpage check")?;
    if !check.success() {
        totals.check_failures += 1;
    }
    Ok(totals)
}

/// Acknowledged keys in the ack files (whole lines only).
fn count_acknowledged(ack_dir: &Path) -> anyhow::Result<u64> {
    let mut count = 0u64;
    for entry in std::fs::read_dir(ack_dir).context("reading the ack files")? {
        let text = std::fs::read_to_string(entry.context("ack file")?.path())
            .context("reading an ack file")?;
        count += text
            .split_inclusive('\n')
            .filter(|l| l.ends_with('\n'))
            .map(|l| l.split_whitespace().count() as u64)
            .sum::<u64>();
    }
    Ok(count)
}
