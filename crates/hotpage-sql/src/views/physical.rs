//! `hotpage_index_physical_stats([table])`: each table's storage by structure and level,
//! from the report `hotpage inspect index` prints (`Database::index_report`).

use super::bigint;
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::session::{SqlDatabase, engine_error};
use crate::types::SqlType;
use crate::value::Value;
use hotpage::{IndexReport, IndexShape, TreeStats};

pub(super) fn columns() -> Vec<(&'static str, SqlType)> {
    vec![
        ("table_name", SqlType::Text),
        ("design", SqlType::Text),
        ("index_type_desc", SqlType::Text),
        ("index_level", SqlType::Int),
        ("page_count", SqlType::BigInt),
        ("record_count", SqlType::BigInt),
        ("avg_page_space_used_in_percent", SqlType::Double),
        ("avg_fragmentation_in_percent", SqlType::Double),
    ]
}

pub(super) fn rows(db: &SqlDatabase, args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    let engine = db.engine();
    let names: Vec<String> = match args.first() {
        None | Some(Value::Null) => engine.tables().into_iter().map(|t| t.name).collect(),
        Some(Value::Text(name)) => vec![name.clone()],
        Some(other) => {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!(
                    "hotpage_index_physical_stats takes a table name as text, not a value of \
                     type {}",
                    other.type_name()
                ),
            ));
        }
    };
    let mut rows = Vec::new();
    for name in &names {
        // An unquoted name is stored folded to lower case, as PostgreSQL's regclass finds it.
        let table = engine
            .table(name)
            .or_else(|_| engine.table(&name.to_lowercase()))
            .map_err(engine_error)?;
        let report = engine.index_report(&table).map_err(|e| {
            engine_error(e).with_hint(
                "the walk is meant for a quiet table: one that changes while it is walked can \
                 fail its checks; `hotpage check` tells a damaged table from a busy one",
            )
        })?;
        report_rows(&report, &mut rows);
    }
    Ok(rows)
}

/// The report's rows: a B+tree's levels; a heap's pages, then its index's levels; a memory
/// table's one row.
fn report_rows(report: &IndexReport, rows: &mut Vec<Vec<Value>>) {
    match &report.shape {
        IndexShape::Memory { rows: count, .. } => rows.push(row(
            report,
            "MEMORY OPTIMIZED",
            None,
            0,
            Some(*count),
            None,
            None,
        )),
        IndexShape::Pages {
            tree, heap: None, ..
        } => tree_rows(report, "CLUSTERED INDEX", tree, rows),
        IndexShape::Pages {
            tree,
            heap: Some(heap),
            ..
        } => {
            // The heap's pages are one level; the engine computes no fragmentation for it.
            rows.push(row(
                report,
                "HEAP",
                Some(0),
                tree.pages(),
                Some(tree.rows),
                Some(tree.leaf_fill_pct),
                None,
            ));
            if let Some(index) = &heap.index {
                tree_rows(report, "NONCLUSTERED INDEX", &index.tree, rows);
            }
        }
    }
}

/// One row per level of a tree, leaves first: the report has rows, fill and fragmentation
/// for the leaves only.
fn tree_rows(report: &IndexReport, index_type: &str, tree: &TreeStats, rows: &mut Vec<Vec<Value>>) {
    for (level, &pages) in tree.pages_per_level.iter().enumerate() {
        let leaf = level == 0;
        rows.push(row(
            report,
            index_type,
            Some(level),
            pages,
            leaf.then_some(tree.rows),
            leaf.then_some(tree.leaf_fill_pct),
            leaf.then(|| tree.fragmentation_pct()),
        ));
    }
}

fn row(
    report: &IndexReport,
    index_type: &str,
    level: Option<usize>,
    page_count: u64,
    record_count: Option<u64>,
    fill_pct: Option<f64>,
    fragmentation_pct: Option<f64>,
) -> Vec<Value> {
    vec![
        Value::Text(report.table.clone()),
        Value::Text(report.design.clone()),
        Value::Text(index_type.to_string()),
        level.map_or(Value::Null, super::int),
        bigint(page_count),
        record_count.map_or(Value::Null, bigint),
        fill_pct.map_or(Value::Null, Value::Float),
        fragmentation_pct.map_or(Value::Null, Value::Float),
    ]
}
