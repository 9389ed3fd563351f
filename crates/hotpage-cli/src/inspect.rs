//! `hotpage inspect`: look inside a database the way DBCC PAGE, sys.dm_db_index_physical_stats
//! and sys.dm_os_wait_stats look inside SQL Server.

use crate::output::right_align;
use crate::{CliError, EXIT_FAILURE, EXIT_NOT_FOUND, open_existing, report_text};
use anyhow::Context;
use hotpage::testing::NO_PAGE;
use hotpage::testing::page::{self, PageBuf, PageType};
use hotpage::testing::{file_of, page_number};
use hotpage::{Database, Key, KeyKind};
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
    let (db_args, out) = match &args.what {
        What::Page { location, db } => (db, page_report(db, location)?),
        What::Index { table, db } => (db, index_report(db, table)?),
        What::Waits { db } => return waits(db),
        What::Tables { db } => (db, tables_report(db)?),
        What::Log { db } => (db, log_report(db)?),
    };
    if db_args.json {
        outln!("{out}")?;
    } else {
        match &args.what {
            What::Page { .. } => print_page(&out)?,
            What::Index { .. } => print_index(&out)?,
            // Printed by `waits` from its typed report, which returned above.
            What::Waits { .. } => {}
            What::Tables { .. } => print_tables(&out)?,
            What::Log { .. } => print_log(&out)?,
        }
    }
    Ok(())
}

/// Parses `FILE:PAGE`, FILE being a number N or a data file name `data.N`, or a bare page
/// id (as the JSON links hold; file 0's page ids are its page numbers).
fn parse_location(location: &str) -> Result<(u32, u64), CliError> {
    let bad = || {
        CliError::usage(format!(
            "'{location}' is not a page: write FILE:PAGE, e.g. 0:1 or data.0:1"
        ))
    };
    let Some((file, page)) = location.split_once(':') else {
        let page_id: u64 = location.trim().parse().map_err(|_| bad())?;
        return Ok((file_of(page_id), page_number(page_id)));
    };
    let file = file.trim();
    let file: u32 = match hotpage::testing::parse_data_file_name(file) {
        Some(number) => number,
        None => file.parse().map_err(|_| bad())?,
    };
    let page: u64 = page.trim().parse().map_err(|_| bad())?;
    Ok((file, page))
}

/// A page id as `FILE:PAGE`, the form `inspect page` takes.
pub fn location(page_id: u64) -> String {
    format!("{}:{}", file_of(page_id), page_number(page_id))
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

fn link(page_id: u64) -> Value {
    if page_id == NO_PAGE {
        Value::Null
    } else {
        json!(page_id)
    }
}

fn decode_key(kind: Option<KeyKind>, key: &[u8]) -> String {
    match kind.and_then(|k| Key::from_bytes(key).ok().map(|key| k.decode(&key))) {
        Some(decoded) => decoded,
        None => format!("0x{}", hex(key)),
    }
}

fn page_report(args: &DbArgs, location: &str) -> Result<Value, CliError> {
    let (file, number) = parse_location(location)?;
    let db = open_existing(&args.db)?;
    let files = db.data_files();
    if file >= files {
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
    let file_pages = db
        .pool_info()
        .file_pages_each
        .get(file as usize)
        .copied()
        .unwrap_or(0);
    if number >= file_pages {
        return Err(CliError::new(
            EXIT_NOT_FOUND,
            format!(
                "no page {file}:{number} in {}: {} has {file_pages} pages (0 to {})",
                args.db.display(),
                hotpage::testing::data_file_name(file),
                file_pages.saturating_sub(1)
            ),
        ));
    }
    let page_id = hotpage::testing::page_id_of(file, number);
    let image = db
        .raw_page_image(page_id)
        .with_context(|| format!("reading page {file}:{number}"))?;
    let verified = page::verify(&image, page_id);
    let buf = PageBuf::new(image.len());
    let page = buf.page();
    page.copy_from(&image);
    let page_type = page.page_type();
    // Ownership needs a walk of the trees; a damaged tree just leaves the owner unknown.
    let owner = if matches!(page_type, Some(PageType::Leaf | PageType::Inner)) {
        db.page_owner(page_id).ok().flatten()
    } else {
        None
    };
    let table = owner.as_ref().and_then(|o| db.table(&o.table).ok());
    let kind = table.as_ref().map(|t| t.key_kind());
    let slots: Vec<Value> = (0..page.slot_count())
        .map(|i| slot_report(&page, i, page_type, kind))
        .collect();
    let is_inner = page_type == Some(PageType::Inner);
    Ok(json!({
        "db": args.db.display().to_string(),
        "file": file,
        "page": number,
        "checksum_ok": verified.is_ok(),
        "problem": verified.err(),
        "header": {
            "page_id": page.page_id(),
            "page_type": page_type.map_or("unknown", PageType::name),
            "page_type_byte": page.page_type_byte(),
            "level": page.level(),
            "lsn": page.lsn(),
            "slot_count": page.slot_count(),
            "free_bytes": page.free_bytes(),
            "free_end": page.free_end(),
            "next": link(page.next()),
            "leftmost_child": if is_inner { link(page.aux()) } else { Value::Null },
            "aux": link(page.aux()),
            "checksum": format!("{:#010x}", page.stored_checksum()),
        },
        "table": owner.as_ref().map(|o| o.table.clone()),
        "design": table.as_ref().map(|t| t.design().to_string()),
        "slots": slots,
    }))
}

/// One slot of `inspect page`: where its record is, the record in hex, and what it
/// decodes to for the page's type (a key and child, a key and row, a file header).
fn slot_report(
    page: &page::Page<'_>,
    i: usize,
    page_type: Option<PageType>,
    kind: Option<KeyKind>,
) -> Value {
    let (offset, length) = page.slot(i);
    let mut key = Vec::new();
    page.copy_key(i, &mut key);
    let mut record = Vec::new();
    page.copy_record(i, &mut record);
    let mut slot = json!({
        "slot": i,
        "offset": offset,
        "length": length,
        "key_hex": hex(&key),
        "hex": hex(&record),
    });
    match page_type {
        Some(PageType::Inner) => {
            slot["key"] = json!(decode_key(kind, &key));
            slot["child"] = json!(page.child(i));
        }
        Some(PageType::Leaf) => {
            let mut row = Vec::new();
            page.copy_payload(i, &mut row);
            slot["key"] = json!(decode_key(kind, &key));
            slot["row_bytes"] = json!(row.len());
        }
        Some(PageType::FileHeader) => {
            let mut payload = Vec::new();
            page.copy_payload(i, &mut payload);
            let word = |at: usize| {
                payload
                    .get(at..at + 4)
                    .and_then(|b| <[u8; 4]>::try_from(b).ok())
                    .map(u32::from_le_bytes)
            };
            slot["key"] = json!(String::from_utf8_lossy(&key).trim_end_matches('\0'));
            slot["format_version"] = json!(word(0));
            slot["page_size"] = json!(word(4));
            // Absent from headers written before several data files.
            slot["file_count"] = json!(word(8).unwrap_or(1));
            slot["file_number"] = json!(word(12).unwrap_or(0));
        }
        _ => {}
    }
    slot
}

/// A page id from a report (a number, or null for none) as `FILE:PAGE`.
fn id_location(v: &Value) -> String {
    match v.as_u64() {
        Some(page_id) => location(page_id),
        None => "none".into(),
    }
}

fn print_page(r: &Value) -> Result<(), CliError> {
    let h = &r["header"];
    let owner = match r["table"].as_str() {
        Some(table) => format!(
            "table {table} (design {})",
            r["design"].as_str().unwrap_or("?")
        ),
        None => "no table".into(),
    };
    outln!(
        "Page {}:{} of {} ({})",
        r["file"],
        r["page"],
        r["db"].as_str().unwrap_or(""),
        owner
    )?;
    let checksum = if r["checksum_ok"] == true {
        format!("{} ok", h["checksum"].as_str().unwrap_or(""))
    } else {
        format!(
            "{} BAD: {}",
            h["checksum"].as_str().unwrap_or(""),
            r["problem"].as_str().unwrap_or("")
        )
    };
    let rows = [
        ("page id", id_location(&h["page_id"])),
        (
            "type",
            format!(
                "{} ({})",
                h["page_type"].as_str().unwrap_or(""),
                h["page_type_byte"]
            ),
        ),
        ("level", h["level"].to_string()),
        ("lsn", h["lsn"].to_string()),
        ("slot count", h["slot_count"].to_string()),
        ("free bytes", h["free_bytes"].to_string()),
        ("record area", format!("{}..", h["free_end"])),
        ("next (right link)", id_location(&h["next"])),
        ("leftmost child", id_location(&h["leftmost_child"])),
        ("checksum", checksum),
    ];
    for (name, value) in rows {
        outln!("  {name:<18} {value}")?;
    }
    outln!()?;
    let slots = r["slots"].as_array().cloned().unwrap_or_default();
    outln!("Slots ({})", slots.len())?;
    let mut table = comfy_table::Table::new();
    table.set_header(vec![
        "slot",
        "offset",
        "length",
        "key",
        "value",
        "record (hex)",
    ]);
    for s in &slots {
        let value = if !s["child"].is_null() {
            format!("-> child {}", id_location(&s["child"]))
        } else if !s["row_bytes"].is_null() {
            format!("row, {} bytes", s["row_bytes"])
        } else if !s["format_version"].is_null() {
            format!(
                "format {}, page size {}, data file {} of {}",
                s["format_version"], s["page_size"], s["file_number"], s["file_count"]
            )
        } else {
            String::new()
        };
        let record = s["hex"].as_str().unwrap_or("");
        let shown = if record.len() > 48 {
            format!("{}... ({} bytes)", &record[..48], record.len() / 2)
        } else {
            record.to_string()
        };
        table.add_row(vec![
            s["slot"].to_string(),
            s["offset"].to_string(),
            s["length"].to_string(),
            s["key"].as_str().unwrap_or("").to_string(),
            value,
            shown,
        ]);
    }
    right_align(&mut table, &[0, 1, 2]);
    outln!("{table}")?;
    Ok(())
}

fn index_report(args: &DbArgs, name: &str) -> Result<Value, CliError> {
    let db = open_existing(&args.db)?;
    let table = db
        .table(name)
        .with_context(|| format!("in {}", args.db.display()))?;
    let tree = db
        .verify_table(&table)
        .with_context(|| format!("walking table {name}"))?;
    if let Some(memory) = db.memory_usage(&table) {
        // No pages, levels or fill: the rows and what they take in memory and on disk.
        return Ok(json!({
            "table": name,
            "design": table.design(),
            "memory_optimized": true,
            "root_page": null,
            "levels": 0,
            "pages": 0,
            "rows": tree.rows,
            "key_bytes": memory.key_bytes,
            "row_bytes": memory.row_bytes,
            "file": memory.file,
            "file_bytes": memory.file_bytes,
        }));
    }
    let leaves = tree.pages_per_level.first().copied().unwrap_or(0);
    // A heap: the shape above is the heap's pages; add the free-space map's categories,
    // and the nonclustered index's own shape if there is one.
    let heap = match table.heap() {
        None => Value::Null,
        Some(heap) => {
            let mut categories = [0u64; 5];
            let mut chain_pages = Vec::new();
            for file in 0..heap.fsm().file_count() {
                let entries = heap.fsm().entries(file);
                chain_pages.push(entries.len());
                for (_, category) in entries {
                    categories[usize::from(category.min(4))] += 1;
                }
            }
            let index = match table.trees().next() {
                Some(index) => {
                    let shape = index
                        .verify()
                        .with_context(|| format!("walking the index of {name}"))?;
                    json!({
                        "root_page": index.root(),
                        "levels": shape.levels,
                        "pages": shape.pages(),
                        "pages_per_level": shape.pages_per_level,
                        "avg_fill_pct": shape.leaf_fill_pct,
                        "rows": shape.rows,
                    })
                }
                None => Value::Null,
            };
            json!({
                "chains": heap.heads().len(),
                "pages_per_chain": chain_pages,
                "fsm_categories": {
                    "empty": categories[0],
                    "le_50_pct": categories[1],
                    "le_80_pct": categories[2],
                    "le_95_pct": categories[3],
                    "full": categories[4],
                },
                "index": index,
            })
        }
    };
    Ok(json!({
        "heap": heap,
        "table": name,
        "design": table.design(),
        "root_file": file_of(table.root_page()),
        "root_page": page_number(table.root_page()),
        "levels": tree.levels,
        "pages": tree.pages(),
        "pages_per_level": tree.pages_per_level,
        "leaf_pages": leaves,
        "avg_fill_pct": tree.leaf_fill_pct,
        "rows": tree.rows,
        "out_of_order_leaves": tree.out_of_order_leaves,
        "fragmentation_pct": 100.0 * tree.out_of_order_leaves as f64 / leaves.max(1) as f64,
    }))
}

fn print_index(r: &Value) -> Result<(), CliError> {
    if r["memory_optimized"] == true {
        outln!(
            "Memory-optimized table {} (design {}): no pages, no levels",
            r["table"].as_str().unwrap_or(""),
            r["design"].as_str().unwrap_or("")
        )?;
        outln!("  rows               {}", r["rows"])?;
        outln!(
            "  in memory          {} bytes of keys, {} bytes of rows (plus one index node per row; not bounded by the buffer pool)",
            r["key_bytes"],
            r["row_bytes"]
        )?;
        outln!(
            "  checkpoint file    {}, {} bytes durable",
            r["file"].as_str().unwrap_or("?"),
            r["file_bytes"]
        )?;
        return Ok(());
    }
    let heap = &r["heap"];
    if !heap.is_null() {
        return print_heap(r, heap);
    }
    outln!(
        "Index of table {} (design {}), root page {}:{}",
        r["table"].as_str().unwrap_or(""),
        r["design"].as_str().unwrap_or(""),
        r["root_file"],
        r["root_page"]
    )?;
    let per_level: Vec<String> = r["pages_per_level"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(level, n)| format!("level {level}: {n}"))
        .collect();
    outln!("  levels             {}", r["levels"])?;
    outln!(
        "  pages              {} ({})",
        r["pages"],
        per_level.join(", ")
    )?;
    outln!("  rows               {}", r["rows"])?;
    outln!(
        "  avg leaf fill      {:.1} %",
        r["avg_fill_pct"].as_f64().unwrap_or(0.0)
    )?;
    outln!(
        "  fragmentation      {:.1} % ({} of {} leaves link to a page that is not the next one in the file)",
        r["fragmentation_pct"].as_f64().unwrap_or(0.0),
        r["out_of_order_leaves"],
        r["leaf_pages"]
    )?;
    Ok(())
}

fn print_heap(r: &Value, heap: &Value) -> Result<(), CliError> {
    outln!(
        "Heap table {} (design {}), {} page chains (one per data file)",
        r["table"].as_str().unwrap_or(""),
        r["design"].as_str().unwrap_or(""),
        heap["chains"]
    )?;
    outln!("  pages              {}", r["pages"])?;
    outln!("  rows               {}", r["rows"])?;
    outln!(
        "  avg page fill      {:.1} %",
        r["avg_fill_pct"].as_f64().unwrap_or(0.0)
    )?;
    let c = &heap["fsm_categories"];
    outln!(
        "  free-space map     {} empty, {} up to 50 %, {} up to 80 %, {} up to 95 %, {} full",
        c["empty"],
        c["le_50_pct"],
        c["le_80_pct"],
        c["le_95_pct"],
        c["full"]
    )?;
    let index = &heap["index"];
    if !index.is_null() {
        outln!(
            "  index              root page {}, {} levels, {} pages, leaf fill {:.1} %, {} entries",
            index["root_page"],
            index["levels"],
            index["pages"],
            index["avg_fill_pct"].as_f64().unwrap_or(0.0),
            index["rows"]
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

fn tables_report(args: &DbArgs) -> Result<Value, CliError> {
    let db = open_existing(&args.db)?;
    let tables: Vec<Value> = db
        .tables()
        .iter()
        .map(|t| {
            let memory = db.table(&t.name).ok().and_then(|h| db.memory_usage(&h));
            json!({
                "name": t.name,
                "design": t.design,
                "rows": t.rows,
                // A memory table has no root page; its bytes are in memory and its file.
                "root_file": if memory.is_some() { Value::Null } else { json!(file_of(t.root_page)) },
                "root_page": if memory.is_some() { Value::Null } else { json!(page_number(t.root_page)) },
                "memory_bytes": memory.as_ref().map(|m| m.key_bytes + m.row_bytes),
                "memory_file_bytes": memory.as_ref().map(|m| m.file_bytes),
            })
        })
        .collect();
    Ok(json!({ "tables": tables }))
}

fn print_tables(r: &Value) -> Result<(), CliError> {
    let mut table = comfy_table::Table::new();
    table.set_header(vec!["table", "design", "rows", "root page"]);
    let list = r["tables"].as_array().cloned().unwrap_or_default();
    for t in &list {
        table.add_row(vec![
            t["name"].as_str().unwrap_or("").to_string(),
            t["design"].as_str().unwrap_or("").to_string(),
            t["rows"].to_string(),
            match t["root_page"].as_u64() {
                Some(root) => format!("{}:{root}", t["root_file"]),
                None => format!(
                    "none (memory: {} bytes)",
                    t["memory_bytes"].as_u64().unwrap_or(0)
                ),
            },
        ]);
    }
    right_align(&mut table, &[2, 3]);
    outln!("{} tables", list.len())?;
    outln!("{table}")?;
    Ok(())
}

fn log_report(args: &DbArgs) -> Result<Value, CliError> {
    let db = open_existing(&args.db)?;
    let summary = db
        .log_summary()
        .map_err(|e| CliError::failure(format!("reading the log: {e}")))?;
    let recovery = db.recovery_report();
    Ok(json!({
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
        },
    }))
}

fn print_log(r: &Value) -> Result<(), CliError> {
    outln!(
        "Log: LSN {} to {}, last checkpoint's redo point {}",
        r["from_lsn"],
        r["end_lsn"],
        r["redo_lsn"]
    )?;
    let mut table = comfy_table::Table::new();
    table.set_header(vec![
        "record kind",
        "records",
        "bytes",
        "since checkpoint",
        "bytes since checkpoint",
    ]);
    for k in r["kinds"].as_array().cloned().unwrap_or_default() {
        table.add_row(vec![
            k["kind"].as_str().unwrap_or("").to_string(),
            k["records"].to_string(),
            k["bytes"].to_string(),
            k["records_since_checkpoint"].to_string(),
            k["bytes_since_checkpoint"].to_string(),
        ]);
    }
    right_align(&mut table, &[1, 2, 3, 4]);
    outln!("{table}")?;
    let rec = &r["recovery"];
    outln!(
        "Recovery at this open: {} records, {:.1} MiB of log after the redo point, {} pages redone, {} rows re-applied, {:.3} s",
        rec["records"],
        rec["log_bytes"].as_f64().unwrap_or(0.0) / (1024.0 * 1024.0),
        rec["pages_redone"],
        rec["rows_reapplied"],
        rec["elapsed_s"].as_f64().unwrap_or(0.0)
    )?;
    Ok(())
}
