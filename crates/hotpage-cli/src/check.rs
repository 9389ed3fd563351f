//! `hotpage check`: the integrity check (DBCC CHECKDB). Every page's checksum (of every data
//! file), each table's B+tree (order, separators, levels, sibling links), the catalog
//! against the trees (root pages, no page in two tables, no page with rows or links in
//! none) and row counts. A memory table has no pages: its checkpoint file's frames
//! (checksums, lengths, keys) are checked against the rows in memory, which must be in key
//! order. Lists every fault and exits 7 if there is one. An empty, unlinked page that no
//! table reaches is leaked space, listed as a warning.

use crate::{CliError, EXIT_CORRUPT, open_existing};
use hotpage::testing::page::{self, PageBuf, PageType};
use hotpage::testing::{data_file_name, file_of, page_id_of, page_number};
use serde_json::{Value, json};
use std::collections::HashMap;
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

struct Fault {
    kind: &'static str,
    page: Option<u64>,
    table: Option<String>,
    message: String,
}

impl Fault {
    fn to_json(&self) -> Value {
        json!({
            "kind": self.kind,
            "file": self.page.map(file_of),
            "page": self.page.map(page_number),
            "table": self.table,
            "message": self.message,
        })
    }

    fn line(&self) -> String {
        let mut out = String::new();
        if let Some(page) = self.page {
            out.push_str(&format!("page {}:{}: ", file_of(page), page_number(page)));
        }
        if let Some(table) = &self.table {
            out.push_str(&format!("table {table}: "));
        }
        out.push_str(&self.message);
        out
    }
}

fn engine_fault(kind: &'static str, table: Option<&str>, error: &hotpage::Error) -> Fault {
    let page = match error {
        hotpage::Error::CorruptPage { page_id, .. } => Some(*page_id),
        _ => None,
    };
    Fault {
        kind,
        page,
        table: table.map(str::to_string),
        message: error.to_string(),
    }
}

/// Runs `hotpage check`.
pub fn run(args: &CheckArgs) -> Result<(), CliError> {
    let db = open_existing(&args.db)?;
    let mut faults: Vec<Fault> = Vec::new();
    let info = db.pool_info();
    let file_pages = info.file_pages;
    let pages_each = info.file_pages_each;
    // The type of each page, by file and page number (None: damaged).
    let page_type = |types: &[Vec<Option<PageType>>], page_id: u64| {
        types
            .get(file_of(page_id) as usize)
            .and_then(|file| file.get(page_number(page_id) as usize))
            .copied()
    };

    // 1. Every page of every data file: checksum, page id, slot directory; and on disk,
    //    an LSN the log reaches (see `Database::pages_past_log_end`).
    let mut page_types: Vec<Vec<Option<PageType>>> = Vec::with_capacity(pages_each.len());
    for (file, &pages) in (0u32..).zip(&pages_each) {
        let mut types = Vec::with_capacity(usize::try_from(pages).unwrap_or(0));
        for number in 0..pages {
            let page_id = page_id_of(file, number);
            match db.raw_page_image(page_id) {
                Ok(image) => {
                    if let Err(reason) = page::verify(&image, page_id) {
                        faults.push(Fault {
                            kind: "page",
                            page: Some(page_id),
                            table: None,
                            message: reason,
                        });
                        types.push(None);
                    } else {
                        let buf = PageBuf::new(image.len());
                        buf.page().copy_from(&image);
                        types.push(buf.page().page_type());
                    }
                }
                Err(error) => {
                    faults.push(engine_fault("page", None, &error));
                    types.push(None);
                }
            }
        }
        page_types.push(types);
    }
    faults.extend(log_tail_faults(&db)?);
    let page_faults = faults.len();

    // 2. Each table: catalog entry, tree structure, pages, row count.
    let mut owners: HashMap<u64, String> = HashMap::new();
    let mut table_reports = Vec::new();
    let mut all_trees_ok = true;
    for info in db.tables() {
        let name = info.name.clone();
        let fault = |kind, page, message: String| Fault {
            kind,
            page,
            table: Some(name.clone()),
            message,
        };
        let mut ok = true;
        // Every partition's root (one for an unpartitioned table).
        if let Some(root) = info
            .roots
            .iter()
            .copied()
            .find(|r| page_type(&page_types, *r).is_none())
        {
            let (file, number) = (file_of(root), page_number(root));
            faults.push(fault(
                "catalog",
                None,
                match pages_each.get(file as usize) {
                    Some(pages) => format!(
                        "root page {file}:{number} is past the end of {} ({pages} pages)",
                        data_file_name(file)
                    ),
                    None => format!(
                        "root page {file}:{number} is in data file {file}, which the database does not have ({} data files)",
                        pages_each.len()
                    ),
                },
            ));
            all_trees_ok = false;
            table_reports.push(json!({"name": name, "ok": false}));
            continue;
        }
        for &root in &info.roots {
            if let Some(Some(t)) = page_type(&page_types, root)
                && !matches!(t, PageType::Leaf | PageType::Inner | PageType::Heap)
            {
                faults.push(fault(
                    "catalog",
                    Some(root),
                    format!(
                        "root page is a {} page, not a B+tree or heap page",
                        t.name()
                    ),
                ));
                ok = false;
            }
        }
        let table = match db.table(&name) {
            Ok(table) => table,
            Err(error) => {
                faults.push(engine_fault("catalog", Some(&name), &error));
                all_trees_ok = false;
                continue;
            }
        };
        let mut tree_rows = None;
        let mut pages = None;
        if ok {
            match db.verify_table(&table) {
                Ok(stats) => tree_rows = Some(stats.rows),
                Err(error) => {
                    faults.push(engine_fault("tree", Some(&name), &error));
                    ok = false;
                }
            }
        }
        if ok {
            match db.table_pages(&table) {
                Ok(list) => {
                    pages = Some(list.len());
                    for p in list {
                        if let Some(other) = owners.insert(p.page_id, name.clone()) {
                            faults.push(fault(
                                "ownership",
                                Some(p.page_id),
                                format!("page belongs to table {other} too"),
                            ));
                            ok = false;
                        }
                    }
                }
                Err(error) => {
                    faults.push(engine_fault("tree", Some(&name), &error));
                    ok = false;
                }
            }
        }
        if let Some(rows) = tree_rows
            && rows != info.rows
        {
            faults.push(fault(
                "rows",
                None,
                format!("the catalog says {} rows, the tree holds {rows}", info.rows),
            ));
            ok = false;
        }
        all_trees_ok &= ok;
        let memory = db.memory_usage(&table);
        table_reports.push(json!({
            "name": name,
            "design": info.design,
            "rows_catalog": info.rows,
            "rows_tree": tree_rows,
            "pages": pages,
            "trees": info.layout.tree_count(),
            "heap_chains": info.layout.chain_count(),
            "memory_file": memory.as_ref().map(|m| m.file.clone()),
            "memory_file_bytes": memory.as_ref().map(|m| m.file_bytes),
            "ok": ok,
        }));
    }

    // 3. Pages no table reaches (only meaningful when every tree could be walked).
    let mut warnings: Vec<Fault> = Vec::new();
    if all_trees_ok && page_faults == 0 {
        for page_id in unreached_pages(&pages_each, &owners) {
            if is_empty_and_unlinked(&db, page_id) {
                warnings.push(Fault {
                    kind: "leaked",
                    page: Some(page_id),
                    table: None,
                    message: "an empty page no table reaches (a table whose creation failed \
                              or was cut short): leaked space, no rows"
                        .into(),
                });
            } else {
                faults.push(Fault {
                    kind: "orphan",
                    page: Some(page_id),
                    table: None,
                    message: "no table's B+tree reaches this page".into(),
                });
            }
        }
    }

    let report = json!({
        "db": args.db.display().to_string(),
        "pages_checked": file_pages,
        "files": pages_each.len(),
        "pages_per_file": pages_each,
        "tables": table_reports,
        "faults": faults.iter().map(Fault::to_json).collect::<Vec<_>>(),
        "warnings": warnings.iter().map(Fault::to_json).collect::<Vec<_>>(),
        "ok": faults.is_empty(),
    });
    if args.json {
        outln!("{report}")?;
    } else {
        print_text(&report, &faults, &warnings)?;
    }
    if faults.is_empty() {
        Ok(())
    } else {
        Err(CliError::new(
            EXIT_CORRUPT,
            format!(
                "check found {} faults in {} (first: {})",
                faults.len(),
                args.db.display(),
                faults[0].line()
            ),
        ))
    }
}

/// Every page of every data file that no table reaches (page 0 of each file is its header).
/// Pages that, on disk, hold changes the log no longer reaches: a lost tail of the log.
fn log_tail_faults(db: &hotpage::Database) -> Result<Vec<Fault>, CliError> {
    let Some(end) = db.log_end() else {
        return Ok(Vec::new());
    };
    let pages = db
        .pages_past_log_end()
        .map_err(|e| CliError::failure(format!("reading the data files: {e}")))?;
    Ok(pages
        .into_iter()
        .map(|(page_id, lsn)| Fault {
            kind: "page",
            page: Some(page_id),
            table: None,
            message: format!(
                "on disk, the page holds changes logged up to LSN {lsn}, past the end of the log ({end}): log records are missing (a deleted or lost last log segment?)"
            ),
        })
        .collect())
}

fn unreached_pages(pages_each: &[u64], owners: &HashMap<u64, String>) -> Vec<u64> {
    (0u32..)
        .zip(pages_each)
        .flat_map(|(file, &pages)| (1..pages).map(move |number| page_id_of(file, number)))
        .filter(|page_id| !owners.contains_key(page_id))
        .collect()
}

/// True for a page that holds no record and links to no page: what a table's creation
/// allocates (an empty root leaf, an empty heap chain head). Unreached, it is leaked space
/// (pages are never freed), not lost rows: a warning (docs/design.md, "Leaked pages").
fn is_empty_and_unlinked(db: &hotpage::Database, page_id: u64) -> bool {
    let Ok(image) = db.raw_page_image(page_id) else {
        return false;
    };
    let buf = PageBuf::new(image.len());
    let page = buf.page();
    page.copy_from(&image);
    matches!(
        page.page_type(),
        Some(PageType::Leaf | PageType::Heap | PageType::Free)
    ) && page.level() == 0
        && page.slot_count() == 0
        && page.next() == hotpage::testing::NO_PAGE
        && page.aux() == hotpage::testing::NO_PAGE
}

/// The text report: a line per table, then the warnings and the faults.
fn print_text(report: &Value, faults: &[Fault], warnings: &[Fault]) -> Result<(), CliError> {
    let pages_each: Vec<u64> = report["pages_per_file"]
        .as_array()
        .map(|files| files.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let table_reports = report["tables"].as_array().cloned().unwrap_or_default();
    let files = if pages_each.len() == 1 {
        "of data.0".to_string()
    } else {
        format!(
            "in {} data files (data.0 to data.{}: {} pages)",
            pages_each.len(),
            pages_each.len() - 1,
            pages_each
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    outln!(
        "hotpage check {}: {} pages {files}, {} tables",
        report["db"].as_str().unwrap_or("?"),
        report["pages_checked"],
        table_reports.len()
    )?;
    for t in &table_reports {
        if let Some(file) = t["memory_file"].as_str() {
            outln!(
                "  table {}: {} rows in the catalog, {} in memory, checkpoint file {file} ({} bytes), no pages: {}",
                t["name"].as_str().unwrap_or("?"),
                t["rows_catalog"],
                t["rows_tree"],
                t["memory_file_bytes"],
                if t["ok"] == true { "ok" } else { "FAULTS" }
            )?;
            continue;
        }
        outln!(
            "  table {}: {} rows in the catalog, {} in the {}, {} pages: {}",
            t["name"].as_str().unwrap_or("?"),
            t["rows_catalog"],
            t["rows_tree"],
            match (t["trees"].as_u64(), t["heap_chains"].as_u64()) {
                (Some(0), Some(c)) => format!("heap ({c} page chains)"),
                (Some(_), Some(c)) if c > 0 => {
                    format!("heap ({c} page chains) and its index")
                }
                (Some(n), _) if n > 1 => format!("tree ({n} partitions)"),
                _ => "tree".to_string(),
            },
            t["pages"],
            if t["ok"] == true { "ok" } else { "FAULTS" }
        )?;
    }
    if !warnings.is_empty() {
        outln!("{} warnings:", warnings.len())?;
        for w in warnings {
            outln!("  {}", w.line())?;
        }
    }
    if faults.is_empty() {
        outln!("No faults found.")?;
    } else {
        outln!("{} faults:", faults.len())?;
        for f in faults {
            outln!("  {}", f.line())?;
        }
    }
    Ok(())
}
