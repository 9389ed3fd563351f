//! `hotpage check`: renders the engine's integrity check ([`hotpage::Database::check`]:
//! every page's checksum, each table's B+tree, the catalog against the trees, row counts,
//! memory tables' checkpoint files). Lists every fault and exits 7 if there is one; an
//! empty, unlinked page that no table reaches is leaked space, listed as a warning.
//!
//! The JSON is built here from the typed report rather than by serde derives in the engine:
//! its field names are this command's documented contract, and the engine stays free of a
//! serialisation dependency that only the command line needs.

use crate::{CliError, EXIT_CORRUPT, open_existing};
use hotpage::{CheckReport, Fault, FaultKind, TableCheck};
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Database directory
    #[arg(long)]
    db: PathBuf,
    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
}

/// Opens the database to check it: with crash recovery (in memory), or, where recovery
/// itself meets damage (exit 7), without replaying the log, so that the faults on the
/// pages can still be listed. The second value is recovery's error in that case.
fn open_checking(path: &std::path::Path) -> Result<(hotpage::Database, Option<String>), CliError> {
    let error = match open_existing(path) {
        Ok(db) => return Ok((db, None)),
        Err(error) if error.code == EXIT_CORRUPT => error,
        Err(error) => return Err(error),
    };
    let options = hotpage::Options {
        replay_log: false,
        ..crate::read_only_options()
    };
    match hotpage::Database::open(path, options) {
        Ok(db) => Ok((db, Some(error.message))),
        // Damage before the log (the catalog, data.0's header): recovery's error says it.
        Err(_) => Err(error),
    }
}

/// Runs `hotpage check`.
pub fn run(args: &CheckArgs) -> Result<(), CliError> {
    let name = args.db.display().to_string();
    let (db, recovery_failed) = match open_checking(&args.db) {
        Ok(opened) => opened,
        Err(error) => {
            if args.json {
                // A script that reads the JSON learns why there is no report, too.
                outln!(
                    "{}",
                    json!({
                        "db": name, "opened": false, "ok": false,
                        "error": error.message, "exit_code": error.code,
                    })
                )?;
            }
            return Err(error);
        }
    };
    let mut report = db
        .check()
        .map_err(|e| CliError::failure(format!("reading the data files: {e}")))?;
    let log_skipped = recovery_failed.is_some();
    if let Some(message) = recovery_failed {
        report.faults.insert(
            0,
            Fault {
                kind: FaultKind::Recovery,
                page: None,
                table: None,
                message: format!(
                    "crash recovery fails ({message}); the pages below were checked as the data files hold them, without the changes logged since the last checkpoint"
                ),
            },
        );
    }
    if args.json {
        let mut json = report_json(&name, &report);
        json["log_replayed"] = Value::Bool(!log_skipped);
        outln!("{json}")?;
    } else {
        print_text(&name, &report)?;
    }
    match report.faults.first() {
        None => Ok(()),
        Some(first) => Err(CliError::new(
            EXIT_CORRUPT,
            format!(
                "check found {} faults in {name} (first: {})",
                report.faults.len(),
                fault_line(first)
            ),
        )),
    }
}

fn fault_json(fault: &Fault) -> Value {
    json!({
        "kind": fault.kind.name(),
        "file": fault.page.map(|p| p.file),
        "page": fault.page.map(|p| p.page),
        "table": fault.table,
        "message": fault.message,
    })
}

/// A fault on one line: `page F:N: table T: message`.
fn fault_line(fault: &Fault) -> String {
    let mut out = String::new();
    if let Some(page) = fault.page {
        out.push_str(&format!("page {page}: "));
    }
    if let Some(table) = &fault.table {
        out.push_str(&format!("table {table}: "));
    }
    out.push_str(&fault.message);
    out
}

fn table_json(table: &TableCheck) -> Value {
    let Some(f) = &table.figures else {
        return json!({"name": table.name, "ok": table.ok});
    };
    json!({
        "name": table.name,
        "design": f.design,
        "rows_catalog": f.rows_catalog,
        "rows_tree": f.rows_tree,
        "pages": f.pages,
        "trees": f.trees,
        "heap_chains": f.heap_chains,
        "memory_file": f.memory.as_ref().map(|m| m.file.clone()),
        "memory_file_bytes": f.memory.as_ref().map(|m| m.file_bytes),
        "ok": table.ok,
    })
}

fn report_json(db: &str, report: &CheckReport) -> Value {
    json!({
        "db": db,
        "opened": true,
        "pages_checked": report.pages_checked,
        "files": report.pages_per_file.len(),
        "pages_per_file": report.pages_per_file,
        "unlogged_file_pages": report.unlogged_file_pages,
        "tables": report.tables.iter().map(table_json).collect::<Vec<_>>(),
        "faults": report.faults.iter().map(fault_json).collect::<Vec<_>>(),
        "warnings": report.warnings.iter().map(fault_json).collect::<Vec<_>>(),
        "ok": report.ok(),
    })
}

/// The text report: a line per table, then the warnings and the faults.
fn print_text(db: &str, report: &CheckReport) -> Result<(), CliError> {
    let pages_each = &report.pages_per_file;
    let mut files = if pages_each.len() == 1 {
        "of data.0".to_string()
    } else {
        format!(
            "in {} data files (data.0 to data.{}: {} pages)",
            pages_each.len(),
            pages_each.len().saturating_sub(1),
            pages_each
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    if report.unlogged_file_pages > 0 {
        files += &format!(" and {} of data.unlogged", report.unlogged_file_pages);
    }
    outln!(
        "hotpage check {db}: {} pages {files}, {} tables",
        report.pages_checked,
        report.tables.len()
    )?;
    for table in &report.tables {
        outln!("  {}", table_line(table))?;
    }
    if !report.warnings.is_empty() {
        outln!("{} warnings:", report.warnings.len())?;
        for w in &report.warnings {
            outln!("  {}", fault_line(w))?;
        }
    }
    if report.faults.is_empty() {
        outln!("No faults found.")?;
    } else {
        outln!("{} faults:", report.faults.len())?;
        for f in &report.faults {
            outln!("  {}", fault_line(f))?;
        }
    }
    Ok(())
}

/// One table's line. A figure the walk could not count (it stopped at a damaged page, or
/// the root page is missing) is `?` here, `null` in the JSON.
fn table_line(t: &TableCheck) -> String {
    let verdict = if t.ok { "ok" } else { "FAULTS" };
    let f = t.figures.as_ref();
    let or_unknown = |figure: Option<String>| figure.unwrap_or_else(|| "?".to_string());
    let rows_catalog = or_unknown(f.map(|f| f.rows_catalog.to_string()));
    let rows_tree = or_unknown(f.and_then(|f| f.rows_tree.map(|n| n.to_string())));
    if let Some(memory) = f.and_then(|f| f.memory.as_ref()) {
        return format!(
            "table {}: {rows_catalog} rows in the catalog, {rows_tree} in memory, checkpoint file {} ({} bytes), no pages: {verdict}",
            t.name, memory.file, memory.file_bytes
        );
    }
    let holder = match f.map(|f| (f.trees, f.heap_chains)) {
        Some((0, c)) => format!("heap ({c} page chains)"),
        Some((_, c)) if c > 0 => format!("heap ({c} page chains) and its index"),
        Some((n, _)) if n > 1 => format!("tree ({n} partitions)"),
        _ => "tree".to_string(),
    };
    format!(
        "table {}: {rows_catalog} rows in the catalog, {rows_tree} in the {holder}, {} pages: {verdict}",
        t.name,
        or_unknown(f.and_then(|f| f.pages.map(|n| n.to_string())))
    )
}
