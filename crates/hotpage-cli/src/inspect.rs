//! `hotpage inspect`: look inside a database the way DBCC PAGE, sys.dm_db_index_physical_stats
//! and sys.dm_os_wait_stats look inside SQL Server.
//!
//! Each subcommand gets a typed report from the engine ([`PageReport`], [`IndexReport`],
//! [`TableSummary`], [`LogReport`]; `waits` a [`Report`] saved with the database) and
//! renders it: the text printers (`print_*`) read the report's fields, and `--json` prints
//! what the `*_json` builders make of the same report.
//!
//! The JSON stays built as a [`Value`] rather than by `#[derive(Serialize)]` view structs:
//! serde_json's map (no `preserve_order`) sorts keys, so the documented output has its
//! fields in alphabetical order, with `null` for what a report lacks and some fields only
//! for some values (a slot's `child`, `row_bytes`, `format_version`...). View structs would
//! have to declare their fields alphabetically and mark each optional one to stay
//! byte-identical; the builders already are, and are now used only for `--json`.

use crate::output::{or_null, right_align};
use crate::{CliError, EXIT_FAILURE, EXIT_NOT_FOUND, open_existing, report_text};
use anyhow::Context;
use hotpage::{
    Database, HeapShape, IndexReport, IndexShape, LogReport, MemoryUsage, PageId, PageLocation,
    PageReport, PageType, SlotContent, SlotReport, TableSummary, TreeStats,
};
use hotpage_workload::Report;
use hotpage_workload::report::{HotPage, Wait};
use serde::Serialize;
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Args, Debug)]
struct DbArgs {
    /// Database directory
    #[arg(long)]
    db: PathBuf,
    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
}

#[derive(clap::Subcommand, Debug)]
enum What {
    /// One page (DBCC PAGE): header, slot directory, records in hex with decoded keys
    Page {
        /// FILE:PAGE, e.g. 0:1 or data.2:5 (file N is data.N); a bare number is a page id
        /// as the JSON links show them (file 0's ids are its page numbers)
        location: String,
        #[command(flatten)]
        db: DbArgs,
    },
    /// A table's index physical stats: levels, pages per level, leaf fill, fragmentation
    Index {
        /// The table's name
        table: String,
        #[command(flatten)]
        db: DbArgs,
    },
    /// The wait statistics of the last stress run kept with the database
    Waits {
        #[command(flatten)]
        db: DbArgs,
    },
    /// Tables with their design and row counts
    Tables {
        #[command(flatten)]
        db: DbArgs,
    },
    /// The write-ahead log (fn_dblog): records and bytes by kind, in the retained log files
    /// and since the last checkpoint, and what recovery did when this command opened the
    /// database
    Log {
        #[command(flatten)]
        db: DbArgs,
    },
}

/// Runs `hotpage inspect`.
pub fn run(args: &InspectArgs) -> Result<(), CliError> {
    match &args.what {
        What::Page { location, db } => {
            let report = page_report(db, location)?;
            let name = db.db.display().to_string();
            render(
                db,
                &report,
                |r| page_json(&name, r),
                |r| print_page(&name, r),
            )
        }
        What::Index { table, db } => {
            let report = index_report(db, table)?;
            render(db, &report, index_json, print_index)
        }
        What::Waits { db } => waits(db),
        What::Tables { db } => {
            let report = tables_report(db)?;
            render(db, report.as_slice(), tables_json, print_tables)
        }
        What::Log { db } => {
            let report = log_report(db)?;
            render(db, &report, log_json, print_log)
        }
    }
}

/// Prints a typed report: as one JSON object (what `json` builds of it) with `--json`,
/// else as text (`text` renders it from its fields).
fn render<R: ?Sized>(
    args: &DbArgs,
    report: &R,
    json: impl FnOnce(&R) -> Value,
    text: impl FnOnce(&R) -> Result<(), CliError>,
) -> Result<(), CliError> {
    if args.json {
        outln!("{}", json(report))
    } else {
        text(report)
    }
}

/// Parses `FILE:PAGE` (see [`PageLocation::parse`]).
fn parse_location(location: &str) -> Result<PageLocation, CliError> {
    PageLocation::parse(location).ok_or_else(|| {
        CliError::usage(format!(
            "'{location}' is not a page: write FILE:PAGE, e.g. 0:1 or data.0:1"
        ))
    })
}

/// A page id as `FILE:PAGE`, the form `inspect page` takes.
fn location(page_id: PageId) -> String {
    PageLocation::of(page_id).to_string()
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Refuses a location outside the database's data files, with what the database has.
fn check_bounds(db: &Database, args: &DbArgs, at: PageLocation) -> Result<(), CliError> {
    let PageLocation { file, page: number } = at;
    let files = db.data_files();
    let info = db.pool_info();
    let unlogged = file == hotpage::limits::UNLOGGED_FILE && info.unlogged_file_pages > 0;
    if file >= files && !unlogged {
        return Err(CliError::new(
            EXIT_NOT_FOUND,
            format!(
                "no file {file} in {}: this database has {}",
                args.db.display(),
                if files == 1 {
                    "one data file, 0 (data.0)".to_string()
                } else {
                    format!(
                        "{files} data files, 0 to {} (data.0 to data.{})",
                        files - 1,
                        files - 1
                    )
                }
            ),
        ));
    }
    let file_pages = if unlogged {
        info.unlogged_file_pages
    } else {
        info.file_pages_each
            .get(file as usize)
            .copied()
            .unwrap_or(0)
    };
    if number >= file_pages {
        return Err(CliError::new(
            EXIT_NOT_FOUND,
            format!(
                "no page {file}:{number} in {}: {} has {file_pages} pages (0 to {})",
                args.db.display(),
                at.file_name(),
                file_pages.saturating_sub(1)
            ),
        ));
    }
    Ok(())
}

fn slot_json(s: &SlotReport) -> Value {
    let mut slot = json!({
        "slot": s.slot,
        "offset": s.offset,
        "length": s.length,
        "head_hex": format!("{:08x}", s.head),
        "key_hex": hex(&s.key),
        "hex": hex(&s.record),
    });
    match &s.content {
        SlotContent::Child { key, child } => {
            slot["key"] = json!(key);
            slot["child"] = json!(child.to_raw());
        }
        SlotContent::Row { key, row_bytes } => {
            slot["key"] = json!(key);
            slot["row_bytes"] = json!(row_bytes);
        }
        SlotContent::FileHeader {
            magic,
            format_version,
            page_size,
            file_count,
            file_number,
        } => {
            slot["key"] = json!(magic);
            slot["format_version"] = json!(format_version);
            slot["page_size"] = json!(page_size);
            slot["file_count"] = json!(file_count);
            slot["file_number"] = json!(file_number);
        }
        SlotContent::Other => {}
    }
    slot
}

fn page_json(db: &str, r: &PageReport) -> Value {
    let h = &r.header;
    json!({
        "db": db,
        "file": r.location.file,
        "page": r.location.page,
        "checksum_ok": r.problem.is_none(),
        "problem": r.problem,
        "header": {
            "page_id": h.page_id.to_raw(),
            "page_type": h.page_type.map_or("unknown", PageType::name),
            "page_type_byte": h.page_type_byte,
            "level": h.level,
            "lsn": h.lsn,
            "slot_count": h.slot_count,
            "free_bytes": h.free_bytes,
            "free_end": h.free_end,
            "next": h.next.map(PageId::to_raw),
            "leftmost_child": h.leftmost_child().map(PageId::to_raw),
            "aux": h.aux.map(PageId::to_raw),
            "checksum": format!("{:#010x}", h.checksum),
        },
        "table": r.table,
        "design": r.design,
        "slots": r.slots.iter().map(slot_json).collect::<Vec<_>>(),
    })
}

fn page_report(args: &DbArgs, location: &str) -> Result<PageReport, CliError> {
    let at = parse_location(location)?;
    let db = open_existing(&args.db)?;
    check_bounds(&db, args, at)?;
    Ok(db
        .inspect_page(at)
        .with_context(|| format!("reading page {at}"))?)
}

/// A link from a report (a page id, or `None` for none) as `FILE:PAGE`.
fn link_location(page_id: Option<PageId>) -> String {
    page_id.map_or_else(|| "none".into(), location)
}

fn print_page(db: &str, r: &PageReport) -> Result<(), CliError> {
    let h = &r.header;
    let owner = match &r.table {
        Some(table) => format!(
            "table {table} (design {})",
            r.design.as_deref().unwrap_or("?")
        ),
        None => "no table".into(),
    };
    outln!("Page {} of {db} ({owner})", r.location)?;
    let checksum = match &r.problem {
        None => format!("{:#010x} ok", h.checksum),
        Some(problem) => format!("{:#010x} BAD: {problem}", h.checksum),
    };
    let rows = [
        ("page id", location(h.page_id)),
        (
            "type",
            format!(
                "{} ({})",
                h.page_type.map_or("unknown", PageType::name),
                h.page_type_byte
            ),
        ),
        ("level", h.level.to_string()),
        ("lsn", h.lsn.to_string()),
        ("slot count", h.slot_count.to_string()),
        ("free bytes", h.free_bytes.to_string()),
        ("record area", format!("{}..", h.free_end)),
        ("next (right link)", link_location(h.next)),
        ("leftmost child", link_location(h.leftmost_child())),
        ("checksum", checksum),
    ];
    for (name, value) in rows {
        outln!("  {name:<18} {value}")?;
    }
    outln!()?;
    outln!("Slots ({})", r.slots.len())?;
    let mut table = comfy_table::Table::new();
    table.set_header(vec![
        "slot",
        "offset",
        "length",
        "head",
        "key",
        "value",
        "record (hex)",
    ]);
    for s in &r.slots {
        table.add_row(slot_row(s));
    }
    right_align(&mut table, &[0, 1, 2]);
    outln!("{table}")?;
    Ok(())
}

/// Bytes of a record shown in hex; a longer one is cut, with its length.
const RECORD_BYTES_SHOWN: usize = 24;

/// A slot's row in `inspect page`'s table: slot, offset, length, head, key, value, record.
fn slot_row(s: &SlotReport) -> Vec<String> {
    let (key, value) = match &s.content {
        SlotContent::Child { key, child } => {
            (key.as_str(), format!("-> child {}", location(*child)))
        }
        SlotContent::Row { key, row_bytes } => (key.as_str(), format!("row, {row_bytes} bytes")),
        SlotContent::FileHeader {
            magic,
            format_version: Some(version),
            page_size,
            file_count,
            file_number,
        } => (
            magic.as_str(),
            format!(
                "format {version}, page size {}, data file {file_number} of {file_count}",
                or_null(*page_size)
            ),
        ),
        // A header record without a format version has no figures to show.
        SlotContent::FileHeader { magic, .. } => (magic.as_str(), String::new()),
        SlotContent::Other => ("", String::new()),
    };
    let shown = if s.record.len() > RECORD_BYTES_SHOWN {
        format!(
            "{}... ({} bytes)",
            hex(&s.record[..RECORD_BYTES_SHOWN]),
            s.record.len()
        )
    } else {
        hex(&s.record)
    };
    vec![
        s.slot.to_string(),
        s.offset.to_string(),
        s.length.to_string(),
        format!("{:08x}", s.head),
        key.to_string(),
        value,
        shown,
    ]
}

fn index_report(args: &DbArgs, name: &str) -> Result<IndexReport, CliError> {
    let db = open_existing(&args.db)?;
    let table = db
        .table(name)
        .with_context(|| format!("in {}", args.db.display()))?;
    Ok(db
        .index_report(&table)
        .with_context(|| format!("walking table {name}"))?)
}

fn index_json(r: &IndexReport) -> Value {
    let (root, tree, heap) = match &r.shape {
        IndexShape::Memory { rows, usage } => {
            return json!({
                "table": r.table,
                "design": r.design,
                "memory_optimized": true,
                "root_page": null,
                "levels": 0,
                "pages": 0,
                "rows": rows,
                "key_bytes": usage.key_bytes,
                "row_bytes": usage.row_bytes,
                "file": usage.file,
                "file_bytes": usage.file_bytes,
            });
        }
        IndexShape::Pages { root, tree, heap } => (root, tree, heap),
    };
    json!({
        "heap": heap.as_ref().map_or(Value::Null, heap_json),
        "table": r.table,
        "design": r.design,
        "root_file": root.file,
        "root_page": root.page,
        "levels": tree.levels,
        "pages": tree.pages(),
        "pages_per_level": tree.pages_per_level,
        "leaf_pages": tree.leaf_pages(),
        "avg_fill_pct": tree.leaf_fill_pct,
        "rows": tree.rows,
        "out_of_order_leaves": tree.out_of_order_leaves,
        "fragmentation_pct": tree.fragmentation_pct(),
    })
}

/// A heap's chains, free-space map and index (whose root is a page id, as links are).
fn heap_json(heap: &HeapShape) -> Value {
    let c = &heap.fsm_categories;
    let index = heap.index.as_ref().map_or(Value::Null, |index| {
        json!({
            "root_page": index.root.page_id().to_raw(),
            "levels": index.tree.levels,
            "pages": index.tree.pages(),
            "pages_per_level": index.tree.pages_per_level,
            "avg_fill_pct": index.tree.leaf_fill_pct,
            "rows": index.tree.rows,
        })
    });
    json!({
        "chains": heap.chains,
        "pages_per_chain": heap.pages_per_chain,
        "fsm_categories": {
            "empty": c.empty,
            "le_50_pct": c.le_50_pct,
            "le_80_pct": c.le_80_pct,
            "le_95_pct": c.le_95_pct,
            "full": c.full,
        },
        "index": index,
    })
}

fn print_index(r: &IndexReport) -> Result<(), CliError> {
    match &r.shape {
        IndexShape::Memory { rows, usage } => print_memory(r, *rows, usage),
        IndexShape::Pages {
            tree,
            heap: Some(heap),
            ..
        } => print_heap(r, tree, heap),
        IndexShape::Pages {
            root,
            tree,
            heap: None,
        } => print_tree(r, *root, tree),
    }
}

fn print_memory(r: &IndexReport, rows: u64, usage: &MemoryUsage) -> Result<(), CliError> {
    outln!(
        "Memory-optimized table {} (design {}): no pages, no levels",
        r.table,
        r.design
    )?;
    outln!("  rows               {rows}")?;
    outln!(
        "  in memory          {} bytes of keys, {} bytes of rows (plus one index node per row; not bounded by the buffer pool)",
        usage.key_bytes,
        usage.row_bytes
    )?;
    outln!(
        "  checkpoint file    {}, {} bytes durable",
        usage.file,
        usage.file_bytes
    )?;
    Ok(())
}

fn print_tree(r: &IndexReport, root: PageLocation, tree: &TreeStats) -> Result<(), CliError> {
    outln!(
        "Index of table {} (design {}), root page {root}",
        r.table,
        r.design
    )?;
    let per_level: Vec<String> = tree
        .pages_per_level
        .iter()
        .enumerate()
        .map(|(level, n)| format!("level {level}: {n}"))
        .collect();
    outln!("  levels             {}", tree.levels)?;
    outln!(
        "  pages              {} ({})",
        tree.pages(),
        per_level.join(", ")
    )?;
    outln!("  rows               {}", tree.rows)?;
    outln!("  avg leaf fill      {:.1} %", tree.leaf_fill_pct)?;
    outln!(
        "  fragmentation      {:.1} % ({} of {} leaves link to a page that is not the next one in the file)",
        tree.fragmentation_pct(),
        tree.out_of_order_leaves,
        tree.leaf_pages()
    )?;
    Ok(())
}

/// A heap: its pages (`tree`, the heap's shape), chains, free-space map and index.
fn print_heap(r: &IndexReport, tree: &TreeStats, heap: &HeapShape) -> Result<(), CliError> {
    outln!(
        "Heap table {} (design {}), {} page chains (one per data file)",
        r.table,
        r.design,
        heap.chains
    )?;
    outln!("  pages              {}", tree.pages())?;
    outln!("  rows               {}", tree.rows)?;
    outln!("  avg page fill      {:.1} %", tree.leaf_fill_pct)?;
    let c = &heap.fsm_categories;
    outln!(
        "  free-space map     {} empty, {} up to 50 %, {} up to 80 %, {} up to 95 %, {} full",
        c.empty,
        c.le_50_pct,
        c.le_80_pct,
        c.le_95_pct,
        c.full
    )?;
    if let Some(index) = &heap.index {
        // The root as a page id, as the JSON has it.
        outln!(
            "  index              root page {}, {} levels, {} pages, leaf fill {:.1} %, {} entries",
            index.root.page_id(),
            index.tree.levels,
            index.tree.pages(),
            index.tree.leaf_fill_pct,
            index.tree.rows
        )?;
    }
    Ok(())
}

/// The last stress run saved with the database, if any. A run saved by a hotpage whose
/// report this one cannot read is a clear error, not a panic.
fn load_run(db: &Database) -> Result<Option<Report>, CliError> {
    let Some(bytes) = db
        .load_run_stats()
        .context("reading the last run's statistics")?
    else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        CliError::new(
            EXIT_FAILURE,
            format!("the last run's statistics are not a report this hotpage can read: {e}"),
        )
    })
}

/// `inspect waits`: the saved run's waits and hottest pages.
#[derive(Serialize)]
struct WaitsReport {
    /// Whether a stress run saved its report in this database.
    recorded: bool,
    run: Option<RunSummary>,
    waits: Vec<Wait>,
    hot_pages: Vec<HotPage>,
}

/// What `inspect waits` says of the run itself.
#[derive(Serialize)]
struct RunSummary {
    design: String,
    table: String,
    sessions: u32,
    rows_total: u64,
    elapsed_s: f64,
    warmup_s: f64,
    rows_per_s: f64,
}

fn waits_report(args: &DbArgs) -> Result<WaitsReport, CliError> {
    let db = open_existing(&args.db)?;
    Ok(match load_run(&db)? {
        None => WaitsReport {
            recorded: false,
            run: None,
            waits: Vec::new(),
            hot_pages: Vec::new(),
        },
        Some(r) => WaitsReport {
            recorded: true,
            run: Some(RunSummary {
                design: r.target.design,
                table: r.target.table,
                sessions: r.sessions,
                rows_total: r.rows_total,
                elapsed_s: r.elapsed_s,
                warmup_s: r.warmup_s,
                rows_per_s: r.rows_per_s,
            }),
            waits: r.target.waits,
            hot_pages: r.target.hot_pages,
        },
    })
}

/// Runs `inspect waits`: JSON or text from the typed report.
fn waits(args: &DbArgs) -> Result<(), CliError> {
    let report = waits_report(args)?;
    if args.json {
        let text = serde_json::to_string(&report).context("writing the report as JSON")?;
        return outln!("{text}");
    }
    let Some(run) = &report.run else {
        outln!("No stress run has recorded wait statistics in this database yet.")?;
        return Ok(());
    };
    outln!(
        "Waits of the last stress run: design {}, table {}, {} sessions, {} rows in {:.3} s",
        run.design,
        run.table,
        run.sessions,
        run.rows_total,
        run.elapsed_s
    )?;
    outln!()?;
    report_text::print_waits_and_pages(&report.waits, &report.hot_pages)
}

fn tables_report(args: &DbArgs) -> Result<Vec<TableSummary>, CliError> {
    Ok(open_existing(&args.db)?.table_summaries())
}

fn tables_json(tables: &[TableSummary]) -> Value {
    let tables: Vec<Value> = tables
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "design": t.design,
                "rows": t.rows,
                // A memory table has no root page; its bytes are in memory and its file.
                "root_file": t.root.map(|r| r.file),
                "root_page": t.root.map(|r| r.page),
                "memory_bytes": t.memory.as_ref().map(|m| m.key_bytes + m.row_bytes),
                "memory_file_bytes": t.memory.as_ref().map(|m| m.file_bytes),
                "unlogged": t.unlogged,
            })
        })
        .collect();
    json!({ "tables": tables })
}

fn print_tables(list: &[TableSummary]) -> Result<(), CliError> {
    let mut table = comfy_table::Table::new();
    table.set_header(vec!["table", "design", "rows", "root page"]);
    for t in list {
        table.add_row(vec![
            t.name.clone(),
            if t.unlogged {
                format!("{} (unlogged)", t.design)
            } else {
                t.design.clone()
            },
            t.rows.to_string(),
            match t.root {
                Some(root) => root.to_string(),
                None => format!(
                    "none (memory: {} bytes)",
                    t.memory.as_ref().map_or(0, |m| m.key_bytes + m.row_bytes)
                ),
            },
        ]);
    }
    right_align(&mut table, &[2, 3]);
    outln!("{} tables", list.len())?;
    outln!("{table}")?;
    Ok(())
}

fn log_report(args: &DbArgs) -> Result<LogReport, CliError> {
    open_existing(&args.db)?
        .log_report()
        .map_err(|e| CliError::failure(format!("reading the log: {e}")))
}

fn log_json(report: &LogReport) -> Value {
    let LogReport { summary, recovery } = report;
    json!({
        "from_lsn": summary.from_lsn,
        "redo_lsn": summary.redo_lsn,
        "end_lsn": summary.end_lsn,
        "kinds": summary.kinds.iter().map(|k| json!({
            "kind": k.kind,
            "records": k.records,
            "bytes": k.bytes,
            "records_since_checkpoint": k.records_since_checkpoint,
            "bytes_since_checkpoint": k.bytes_since_checkpoint,
        })).collect::<Vec<_>>(),
        "recovery": {
            "records": recovery.records,
            "log_bytes": recovery.log_bytes,
            "pages_redone": recovery.pages_redone,
            "rows_reapplied": recovery.rows_reapplied,
            "elapsed_s": recovery.elapsed.as_secs_f64(),
            "unlogged_tables_emptied": recovery.unlogged_tables_emptied,
            "rows_missing": recovery.rows_missing.iter().map(|m| json!({
                "table": m.table, "counted": m.counted, "found": m.found,
            })).collect::<Vec<_>>(),
        },
    })
}

fn print_log(r: &LogReport) -> Result<(), CliError> {
    let LogReport { summary, recovery } = r;
    outln!(
        "Log: LSN {} to {}, last checkpoint's redo point {}",
        summary.from_lsn,
        summary.end_lsn,
        summary.redo_lsn
    )?;
    let mut table = comfy_table::Table::new();
    table.set_header(vec![
        "record kind",
        "records",
        "bytes",
        "since checkpoint",
        "bytes since checkpoint",
    ]);
    for k in &summary.kinds {
        table.add_row(vec![
            k.kind.to_string(),
            k.records.to_string(),
            k.bytes.to_string(),
            k.records_since_checkpoint.to_string(),
            k.bytes_since_checkpoint.to_string(),
        ]);
    }
    right_align(&mut table, &[1, 2, 3, 4]);
    outln!("{table}")?;
    outln!(
        "Recovery at this open: {} records, {:.1} MiB of log after the redo point, {} pages redone, {} rows re-applied, {:.3} s",
        recovery.records,
        recovery.log_bytes as f64 / (1024.0 * 1024.0),
        recovery.pages_redone,
        recovery.rows_reapplied,
        recovery.elapsed.as_secs_f64()
    )?;
    Ok(())
}
