//! `hotpage check`: the integrity check (DBCC CHECKDB). Every page's checksum, each table's
//! B+tree (order, separators, levels, sibling links), the catalog against the trees (root
//! pages, no page in two tables, no page in none) and row counts. A memory table has no
//! pages: its checkpoint file's frames (checksums, lengths, keys) are checked against the
//! rows in memory, which must be in key order. Lists every fault and exits 7 if there is
//! one.

use crate::{CliError, EXIT_CORRUPT, open_existing};
use hotpage::page::{self, PageBuf, PageType};
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
            "file": self.page.map(|_| 0),
            "page": self.page,
            "table": self.table,
            "message": self.message,
        })
    }

    fn line(&self) -> String {
        let mut out = String::new();
        if let Some(page) = self.page {
            out.push_str(&format!("page 0:{page}: "));
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
    let file_pages = db.pool_info().file_pages;

    // 1. Every page of data.0: checksum, page id, slot directory.
    let mut page_types: Vec<Option<PageType>> = Vec::with_capacity(file_pages as usize);
    for page_id in 0..file_pages {
        match db.raw_page_image(page_id) {
            Ok(image) => {
                if let Err(reason) = page::verify(&image, page_id) {
                    faults.push(Fault {
                        kind: "page",
                        page: Some(page_id),
                        table: None,
                        message: reason,
                    });
                    page_types.push(None);
                } else {
                    let buf = PageBuf::new(image.len());
                    buf.page().copy_from(&image);
                    page_types.push(buf.page().page_type());
                }
            }
            Err(error) => {
                faults.push(engine_fault("page", None, &error));
                page_types.push(None);
            }
        }
    }
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
        if let Some(root) = info.roots.iter().copied().find(|r| *r >= file_pages) {
            faults.push(fault(
                "catalog",
                None,
                format!("root page {root} is past the end of data.0 ({file_pages} pages)"),
            ));
            all_trees_ok = false;
            table_reports.push(json!({"name": name, "ok": false}));
            continue;
        }
        for &root in &info.roots {
            if let Some(Some(t)) = page_types.get(root as usize)
                && !matches!(t, PageType::Leaf | PageType::Inner)
            {
                faults.push(fault(
                    "catalog",
                    Some(root),
                    format!("root page is a {} page, not a B+tree page", t.name()),
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
            "trees": info.roots.len(),
            "memory_file": memory.as_ref().map(|m| m.file.clone()),
            "memory_file_bytes": memory.as_ref().map(|m| m.file_bytes),
            "ok": ok,
        }));
    }

    // 3. Pages no table reaches (only meaningful when every tree could be walked).
    if all_trees_ok && page_faults == 0 {
        for page_id in 1..file_pages {
            if !owners.contains_key(&page_id) {
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
        "tables": table_reports,
        "faults": faults.iter().map(Fault::to_json).collect::<Vec<_>>(),
        "ok": faults.is_empty(),
    });
    if args.json {
        println!("{report}");
    } else {
        println!(
            "hotpage check {}: {} pages of data.0, {} tables",
            args.db.display(),
            file_pages,
            table_reports.len()
        );
        for t in &table_reports {
            if let Some(file) = t["memory_file"].as_str() {
                println!(
                    "  table {}: {} rows in the catalog, {} in memory, checkpoint file {file} ({} bytes), no pages: {}",
                    t["name"].as_str().unwrap_or("?"),
                    t["rows_catalog"],
                    t["rows_tree"],
                    t["memory_file_bytes"],
                    if t["ok"] == true { "ok" } else { "FAULTS" }
                );
                continue;
            }
            println!(
                "  table {}: {} rows in the catalog, {} in the tree{}, {} pages: {}",
                t["name"].as_str().unwrap_or("?"),
                t["rows_catalog"],
                t["rows_tree"],
                match t["trees"].as_u64() {
                    Some(n) if n > 1 => format!(" ({n} partitions)"),
                    _ => String::new(),
                },
                t["pages"],
                if t["ok"] == true { "ok" } else { "FAULTS" }
            );
        }
        if faults.is_empty() {
            println!("No faults found.");
        } else {
            println!("{} faults:", faults.len());
            for f in &faults {
                println!("  {}", f.line());
            }
        }
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
