//! `hotpage recover`: what to do when the log is damaged.
//!
//! Without `--accept-loss` it only looks (read-only): where the damage is, and what a
//! salvage would discard. With `--accept-loss` it salvages: the damaged segments are
//! copied aside first, the database keeps everything the log holds before the damage, and
//! the report says what was discarded. Then run `hotpage check`.

use crate::{CliError, EXIT_CORRUPT};
use anyhow::Context;
use hotpage::{Database, Options, SalvageReport};
use serde_json::json;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct RecoverArgs {
    /// Database directory
    #[arg(long)]
    db: PathBuf,
    /// Salvage: discard the log from the damage on (after copying the damaged segment
    /// files aside as salvage-N-wal.…) and keep everything before it. Without this flag
    /// the command only reports, and changes nothing
    #[arg(long)]
    accept_loss: bool,
    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
}

/// Runs `hotpage recover`.
pub fn run(args: &RecoverArgs) -> Result<(), CliError> {
    let options = Options {
        create_if_missing: false,
        ..Options::default()
    };
    let report = if args.accept_loss {
        Database::salvage(&args.db, options)
            .with_context(|| format!("cannot salvage database {}", args.db.display()))
    } else {
        Database::examine_log(&args.db, options)
            .with_context(|| format!("cannot read database {}", args.db.display()))
    };
    let report = match report {
        Ok(report) => report,
        Err(error) => {
            let error = CliError::from(error);
            if args.json {
                // As `check --json`: a script that reads the JSON learns why there is none.
                outln!(
                    "{}",
                    json!({
                        "db": args.db.display().to_string(), "opened": false,
                        "error": error.message, "exit_code": error.code,
                    })
                )?;
            }
            return Err(error);
        }
    };
    if args.json {
        outln!("{}", to_json(&report))?;
    } else {
        print_text(args, &report)?;
    }
    if report.damage.is_some() && !report.applied {
        let advice = if report.misplaced_segments.is_empty() {
            format!(
                "run 'hotpage recover --db {} --accept-loss' to keep what precedes the damage, or restore a backup",
                args.db.display()
            )
        } else {
            "log segments are misplaced: put them back under the names they hold first (see above); a salvage now would discard their records".to_string()
        };
        return Err(CliError::new(
            EXIT_CORRUPT,
            format!("the log is damaged; {advice}"),
        ));
    }
    Ok(())
}

fn to_json(report: &SalvageReport) -> serde_json::Value {
    json!({
        "damage": report.damage.as_ref().map(|d| json!({
            "file": d.file, "offset": d.offset, "lsn": d.lsn, "reason": d.reason,
        })),
        "discarded": {
            "bytes": report.discarded.bytes,
            "records": report.discarded.records,
            "commits": report.discarded.commits,
            "rows": report.discarded.rows,
            "unreadable_bytes": report.discarded.unreadable_bytes,
        },
        "misplaced_segments": report.misplaced_segments.iter().map(|m| json!({
            "file": m.file, "holds": m.holds,
        })).collect::<Vec<_>>(),
        "copies": report.copies,
        "new_log_start": report.new_log_start,
        "applied": report.applied,
        "table_faults": report.table_faults,
    })
}

fn print_text(args: &RecoverArgs, report: &SalvageReport) -> Result<(), CliError> {
    let Some(damage) = &report.damage else {
        outln!(
            "hotpage recover {}: the log is whole; there is nothing to salvage from it (this says nothing of the data files: `hotpage check --db {}` checks them)",
            args.db.display(),
            args.db.display()
        )?;
        return Ok(());
    };
    outln!("hotpage recover {}", args.db.display())?;
    outln!(
        "damage      {} at byte {} (LSN {}): {}",
        damage.file,
        damage.offset,
        damage.lsn,
        damage.reason
    )?;
    let verb = if report.applied {
        "discarded"
    } else {
        "would discard"
    };
    let d = &report.discarded;
    outln!(
        "{verb:<11} {} bytes of log: {} records still readable past the damage, {} commits holding {} rows",
        d.bytes,
        d.records,
        d.commits,
        d.rows
    )?;
    if d.unreadable_bytes > 0 {
        outln!(
            "unreadable  {} bytes of log that was written are missing or do not validate: the commits and rows they held cannot be counted, so more may be lost than the line above says",
            d.unreadable_bytes
        )?;
    }
    for m in &report.misplaced_segments {
        outln!(
            "misplaced   {} holds the records of {} (renamed, swapped, or overwritten by a copy?): copy the directory aside, put each such file back under the name it holds, and run `hotpage recover` again before salvaging",
            m.file,
            m.holds
        )?;
    }
    if report.applied {
        if report.copies.is_empty() {
            outln!("copied      nothing (no damaged segment was left to copy aside)")?;
        } else {
            outln!("copied      {}", report.copies.join(", "))?;
        }
        outln!(
            "kept        everything the log holds before LSN {}; the new log starts at LSN {}",
            damage.lsn,
            report.new_log_start
        )?;
        if report.table_faults.is_empty() {
            outln!("tables      every table verifies")?;
        } else {
            for fault in &report.table_faults {
                outln!("FAULT       {fault}")?;
            }
            outln!(
                "            the data files hold changes from after the damage that the kept log cannot reconcile: restore a backup"
            )?;
        }
        outln!("next        hotpage check --db {}", args.db.display())?;
    }
    Ok(())
}
