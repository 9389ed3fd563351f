//! `hotpage_dblog(NULL, NULL)` (T-SQL's `sys.fn_dblog(NULL, NULL)`): the log's records one
//! by one (`Database::visit_log_records`) since the last checkpoint's redo point (the
//! active log, as fn_dblog shows it after a CHECKPOINT in SQL Server's simple recovery),
//! as SQL Server's operation and context names, between a start and an end LSN
//! (inclusive, SQL Server's two forms: `lsn_bound`) when given; with trace flag 2537 on (`DBCC
//! TRACEON(2537)`, as in SQL Server), the whole retained log, from before the last
//! checkpoint and the last open too. The flag is a session's (T-SQL passes it as a third
//! argument, `true`) or global (`DBCC TRACEON(2537, -1)`, `SqlDatabase`'s).
//!
//! | hotpage record | rows: Operation, Context, Page ID |
//! |---|---|
//! | txn-commit | LOP_BEGIN_XACT (with `[Transaction Name]`), LOP_COMMIT_XACT, LCX_NULL |
//! | txn-part | LOP_BEGIN_XACT for the first part, LOP_COMMIT_XACT for the last |
//! | txn-abort | LOP_ABORT_XACT, LCX_NULL |
//! | page-insert | LOP_INSERT_ROWS, the page's context, the page |
//! | heap-link | LOP_MODIFY_HEADER, LCX_HEAP, the chain's tail; LOP_FORMAT_PAGE, LCX_HEAP, the new page |
//! | page-images | LOP_FORMAT_PAGE, the page's context, per page |
//! | tree-split | LOP_DELETE_SPLIT (left), LOP_FORMAT_PAGE (right), LOP_INSERT_ROWS, LCX_INDEX_INTERIOR (parent) |
//! | flush-mark | none (SQL Server has no such record) |
//! | txn-name | none (the name is its transaction's LOP_BEGIN_XACT's `[Transaction Name]`) |
//!
//! Contexts by page type: LCX_HEAP, LCX_CLUSTERED (a B+tree leaf), LCX_INDEX_INTERIOR,
//! LCX_FILE_HEADER; LCX_NULL when the scan does not know the page's type. After a heap
//! page's row, when the change moves the page to another free-space category (SQL
//! Server's PFS update; hotpage's map is never logged, the scan derives the change from
//! the page's fill), a row LOP_MODIFY_ROW, LCX_PFS for that page follows; a new heap page
//! gets one too (its entry in the map). A heap row's rows carry the transaction whose
//! commit record holds the row (the engine matches them), and its `[Slot ID]`.

use super::bigint;
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::session::{SqlDatabase, engine_error};
use crate::types::SqlType;
use crate::value::Value;
use hotpage::{LogRecordInfo, LoggedPage, PageChange, PageId, PageType, TxnName};
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
        ("slot id", SqlType::Int),
    ]
}

pub(super) fn rows(db: &SqlDatabase, args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    let start = args.first().map(lsn_bound).transpose()?.flatten();
    let end = args.get(1).map(lsn_bound).transpose()?.flatten();
    let inactive_too = match args.get(2) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(on)) => *on,
        Some(other) => {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!(
                    "hotpage_dblog's third argument is a boolean (read the inactive log too), not {}",
                    other.to_pg_text(None).unwrap_or_default()
                ),
            ));
        }
    };
    let engine = db.engine();
    let owners = page_tables(db)?;
    let mut out = Vec::new();
    let mut too_many = false;
    engine
        .visit_log_records(!(inactive_too || db.dblog_reads_inactive_log()), |record| {
            if end.is_some_and(|(lsn, _)| record.lsn > lsn) {
                return Ok(false);
            }
            for (n, op) in operations(record).into_iter().enumerate() {
                let at = (record.lsn, n as u64 + 1);
                if start.is_some_and(|start| at < start) || end.is_some_and(|end| at > end) {
                    continue;
                }
                let owner = op.page.and_then(|p| owners.get(&p).cloned());
                out.push(vec![
                    Value::Text(lsn_text(record.lsn, n + 1)),
                    Value::Text(op.operation.to_string()),
                    Value::Text(op.context.to_string()),
                    record
                        .txn
                        .map_or(Value::Null, |t| Value::Text(format!("0000:{t:08x}"))),
                    op.page.map_or(Value::Null, |p| {
                        Value::Text(format!("{:04x}:{:08x}", p.file(), p.number()))
                    }),
                    owner.map_or(Value::Null, |t| Value::Text(format!("dbo.{t}"))),
                    bigint(record.bytes),
                    match op.operation {
                        "LOP_BEGIN_XACT" => transaction_name(&record.txn_name),
                        _ => Value::Null,
                    },
                    op.slot.map_or(Value::Null, |s| Value::Int(s as i64)),
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

/// A start or end argument: NULL (no bound), or an LSN as SQL Server's fn_dblog takes it,
/// `a:b:c` in decimal or `0xA:B:C` in hex (the `[Current LSN]` column's digits with `0x`
/// before them): the record's LSN (`a`'s 32 bits, then `b`'s) and the row in it (`c`).
fn lsn_bound(value: &Value) -> SqlResult<Option<(u64, u64)>> {
    let text = match value {
        Value::Null => return Ok(None),
        Value::Text(text) => text.trim(),
        other => return Err(bad_lsn(&other.to_pg_text(None).unwrap_or_default())),
    };
    let (digits, radix) = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (text, 10),
    };
    let parts: Vec<u64> = digits
        .split(':')
        .map(|part| u64::from_str_radix(part, radix).map_err(|_| bad_lsn(text)))
        .collect::<SqlResult<_>>()?;
    match parts.as_slice() {
        [high, low, row]
            if *high <= u64::from(u32::MAX) && *low <= u64::from(u32::MAX) && *row <= 0xffff =>
        {
            Ok(Some(((high << 32) | low, *row)))
        }
        _ => Err(bad_lsn(text)),
    }
}

fn bad_lsn(text: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!(
            "fn_dblog: {text} is not an LSN (decimal a:b:c, or hex 0xAAAAAAAA:BBBBBBBB:CCCC as [Current LSN] shows it with 0x)"
        ),
    )
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

/// SQL Server's `[Transaction Name]` for a transaction's LOP_BEGIN_XACT: the name the
/// SQL layer gave it (`BEGIN TRAN name`, `user_transaction` for a BEGIN without one,
/// `COPY`); a transaction committed since the open without a name is one INSERT
/// statement's (autocommit), `INSERT` as SQL Server names it: every row a hotpage
/// transaction logs is an inserted row. Names are logged (a `txn-name` record before the
/// commit), so they survive a reopen; NULL when the database does not know (a log an
/// older binary wrote, which kept names in memory).
fn transaction_name(name: &TxnName) -> Value {
    match name {
        TxnName::Named(name) => Value::Text(name.to_string()),
        TxnName::Unnamed => Value::Text("INSERT".to_string()),
        TxnName::Unknown => Value::Null,
    }
}

/// One row of a record: operation, context, page, and the slot of an inserted row.
struct Operation {
    operation: &'static str,
    context: &'static str,
    page: Option<PageId>,
    slot: Option<usize>,
}

/// A record's rows. A commit record (or a large transaction's parts) makes
/// LOP_BEGIN_XACT (its first record) and LOP_COMMIT_XACT (its commit point): hotpage logs
/// a transaction's rows in its commit record, so both rows stand for that one record, and
/// a heap row's page record follows them (it is applied after the commit).
fn operations(record: &LogRecordInfo) -> Vec<Operation> {
    let mut rows = Vec::new();
    let xact = |operation| Operation {
        operation,
        context: "LCX_NULL",
        page: None,
        slot: None,
    };
    match record.kind {
        "txn-commit" | "txn-part" => {
            if record.txn_first {
                rows.push(xact("LOP_BEGIN_XACT"));
            }
            if record.txn_commit {
                rows.push(xact("LOP_COMMIT_XACT"));
            }
        }
        "txn-abort" => rows.push(xact("LOP_ABORT_XACT")),
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
        rows.push(Operation {
            operation,
            context: context(page.page_type),
            page: Some(page.page_id),
            slot: page.slot,
        });
        if moves_category(page) {
            rows.push(Operation {
                operation: "LOP_MODIFY_ROW",
                context: "LCX_PFS",
                page: Some(page.page_id),
                slot: None,
            });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsn_bounds_take_sql_servers_decimal_and_hex_forms() {
        let text = |s: &str| Value::Text(s.to_string());
        let hex = lsn_bound(&text("0x00000001:00001a3c:0002")).unwrap();
        assert_eq!(hex, Some(((1 << 32) | 0x1a3c, 2)));
        assert_eq!(lsn_bound(&text("1:6716:2")).unwrap(), hex);
        assert_eq!(lsn_bound(&Value::Null).unwrap(), None);
        // The displayed form itself, without 0x, is decimal: SQL Server's rule too.
        assert_eq!(
            lsn_bound(&text("00000000:00000010:0001")).unwrap(),
            Some((10, 1))
        );
        for bad in ["1:2", "x", "0x1:2:10000", "4294967296:0:1", "1:2:3:4", ""] {
            let error = lsn_bound(&text(bad)).unwrap_err();
            assert_eq!(error.sqlstate, "22023", "{bad}");
        }
        assert!(lsn_bound(&Value::Int(5)).is_err());
    }
}
