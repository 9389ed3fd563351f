//! `hotpage_dblog(NULL, NULL)` (T-SQL's `sys.fn_dblog(NULL, NULL)`): the log's records one
//! by one (`Database::visit_log_records`) since the last checkpoint's redo point (the
//! active log, as fn_dblog shows it after a CHECKPOINT in SQL Server's simple recovery),
//! as SQL Server's operation and context names.
//!
//! | hotpage record | rows: Operation, Context, Page ID |
//! |---|---|
//! | txn-commit, txn-part | LOP_COMMIT_XACT, LCX_NULL |
//! | txn-abort | LOP_ABORT_XACT, LCX_NULL |
//! | page-insert | LOP_INSERT_ROWS, the page's context, the page |
//! | heap-link | LOP_MODIFY_HEADER, LCX_HEAP, the chain's tail; LOP_FORMAT_PAGE, LCX_HEAP, the new page |
//! | page-images | LOP_FORMAT_PAGE, the page's context, per page |
//! | tree-split | LOP_DELETE_SPLIT (left), LOP_FORMAT_PAGE (right), LOP_INSERT_ROWS, LCX_INDEX_INTERIOR (parent) |
//! | flush-mark | none (SQL Server has no such record) |
//!
//! Contexts by page type: LCX_HEAP, LCX_CLUSTERED (a B+tree leaf), LCX_INDEX_INTERIOR,
//! LCX_FILE_HEADER; LCX_NULL when the scan does not know the page's type. After a heap
//! page's row, when the change moves the page to another free-space category (SQL
//! Server's PFS update; hotpage's map is never logged, the scan derives the change from
//! the page's fill), a row LOP_MODIFY_ROW, LCX_PFS for that page follows; a new heap page
//! gets one too (its entry in the map).

use super::bigint;
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::session::{SqlDatabase, engine_error};
use crate::types::SqlType;
use crate::value::Value;
use hotpage::{LogRecordInfo, LoggedPage, PageChange, PageId, PageType};
use std::collections::HashMap;

/// The most rows one call makes: a view's rows are held in memory while the query runs.
const ROWS_MAX: usize = 1_000_000;

pub(super) fn columns() -> Vec<(&'static str, SqlType)> {
    vec![
        ("current lsn", SqlType::Text),
        ("operation", SqlType::Text),
        ("context", SqlType::Text),
        ("transaction id", SqlType::Text),
        ("page id", SqlType::Text),
        ("allocunitname", SqlType::Text),
        ("log record length", SqlType::BigInt),
        ("transaction name", SqlType::Text),
    ]
}

pub(super) fn rows(db: &SqlDatabase, args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    if args.iter().any(|a| !a.is_null()) {
        return Err(SqlError::unsupported(
            "fn_dblog with a start or end LSN (hotpage takes fn_dblog(NULL, NULL): the whole retained log)",
        ));
    }
    let engine = db.engine();
    let owners = page_tables(db)?;
    let mut out = Vec::new();
    let mut too_many = false;
    engine
        .visit_log_records(true, |record| {
            for (n, (operation, context, page)) in operations(record).into_iter().enumerate() {
                let owner = page.and_then(|p| owners.get(&p).cloned());
                out.push(vec![
                    Value::Text(lsn_text(record.lsn, n + 1)),
                    Value::Text(operation.to_string()),
                    Value::Text(context.to_string()),
                    record
                        .txn
                        .map_or(Value::Null, |t| Value::Text(format!("0000:{t:08x}"))),
                    page.map_or(Value::Null, |p| {
                        Value::Text(format!("{:04x}:{:08x}", p.file(), p.number()))
                    }),
                    owner.map_or(Value::Null, |t| Value::Text(format!("dbo.{t}"))),
                    bigint(record.bytes),
                    // hotpage keeps no transaction names.
                    Value::Null,
                ]);
            }
            too_many = out.len() > ROWS_MAX;
            Ok(!too_many)
        })
        .map_err(engine_error)?;
    if too_many {
        return Err(SqlError::new(
            sqlstate::PROGRAM_LIMIT_EXCEEDED,
            format!(
                "fn_dblog: the retained log makes more than {ROWS_MAX} rows (a query's rows are held in memory); CHECKPOINT lets the log drop old segments"
            ),
        ));
    }
    Ok(out)
}

/// SQL Server's `[Current LSN]` form, `VLF:block:slot` in hex: here the LSN's high and low
/// 32 bits and the row's number within its record, so that text order is log order.
fn lsn_text(lsn: u64, row: usize) -> String {
    format!("{:08x}:{:08x}:{row:04x}", lsn >> 32, lsn & 0xffff_ffff)
}

/// The page -> table map, from every table's pages (one walk per table).
fn page_tables(db: &SqlDatabase) -> SqlResult<HashMap<PageId, String>> {
    let engine = db.engine();
    let mut owners = HashMap::new();
    for table in engine.tables() {
        let Ok(handle) = engine.table(&table.name) else {
            continue;
        };
        for page in engine.table_pages(&handle).map_err(engine_error)? {
            owners.insert(page.page_id, table.name.clone());
        }
    }
    Ok(owners)
}

type Operation = (&'static str, &'static str, Option<PageId>);

/// A record's rows: operation, context, page.
fn operations(record: &LogRecordInfo) -> Vec<Operation> {
    let mut rows = Vec::new();
    match record.kind {
        "txn-commit" | "txn-part" => rows.push(("LOP_COMMIT_XACT", "LCX_NULL", None)),
        "txn-abort" => rows.push(("LOP_ABORT_XACT", "LCX_NULL", None)),
        _ => {}
    }
    for page in &record.pages {
        let operation = match (page.change, record.kind) {
            (PageChange::Insert, _) => "LOP_INSERT_ROWS",
            (PageChange::Separator, _) => "LOP_INSERT_ROWS",
            (PageChange::Header, "tree-split") => "LOP_DELETE_SPLIT",
            (PageChange::Header, _) => "LOP_MODIFY_HEADER",
            (PageChange::Image | PageChange::Format, _) => "LOP_FORMAT_PAGE",
        };
        rows.push((operation, context(page.page_type), Some(page.page_id)));
        if moves_category(page) {
            rows.push(("LOP_MODIFY_ROW", "LCX_PFS", Some(page.page_id)));
        }
    }
    rows
}

fn context(page_type: Option<PageType>) -> &'static str {
    match page_type {
        Some(PageType::Heap) => "LCX_HEAP",
        Some(PageType::Leaf) => "LCX_CLUSTERED",
        Some(PageType::Inner) => "LCX_INDEX_INTERIOR",
        Some(PageType::FileHeader) => "LCX_FILE_HEADER",
        _ => "LCX_NULL",
    }
}

/// Whether the change gives a heap page another free-space category (or, new, its first).
fn moves_category(page: &LoggedPage) -> bool {
    match page.fill_category {
        Some((Some(before), after)) => before != after,
        Some((None, _)) => page.change == PageChange::Format,
        None => false,
    }
}
