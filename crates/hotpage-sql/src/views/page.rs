//! `hotpage_page_header(file, page)` and `hotpage_page(file, page)`: one page decoded, from
//! the report `hotpage inspect page` prints (`Database::inspect_page`).

use super::{bigint, int, text_or_null};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::session::{SqlDatabase, engine_error};
use crate::types::SqlType;
use crate::value::Value;
use hotpage::{Database, PageId, PageLocation, PageReport, PageType, SlotContent, SlotReport};

pub(super) fn header_columns() -> Vec<(&'static str, SqlType)> {
    vec![
        ("page", SqlType::Text),
        ("page_id", SqlType::BigInt),
        ("page_type", SqlType::Text),
        ("page_type_byte", SqlType::SmallInt),
        ("level", SqlType::Int),
        ("lsn", SqlType::BigInt),
        ("slot_count", SqlType::Int),
        ("free_bytes", SqlType::Int),
        ("free_end", SqlType::Int),
        ("next_page", SqlType::Text),
        ("leftmost_child", SqlType::Text),
        ("checksum", SqlType::Text),
        ("checksum_ok", SqlType::Bool),
        ("problem", SqlType::Text),
        ("table_name", SqlType::Text),
        ("design", SqlType::Text),
    ]
}

pub(super) fn header_rows(db: &SqlDatabase, args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    let report = page_report(db.engine(), args)?;
    let h = &report.header;
    Ok(vec![vec![
        Value::Text(report.location.to_string()),
        bigint(h.page_id.to_raw()),
        Value::Text(h.page_type.map_or("unknown", PageType::name).to_string()),
        Value::Int(i64::from(h.page_type_byte)),
        Value::Int(i64::from(h.level)),
        bigint(h.lsn),
        int(h.slot_count),
        int(h.free_bytes),
        int(h.free_end),
        text_or_null(h.next.map(location)),
        text_or_null(h.leftmost_child().map(location)),
        Value::Text(format!("{:#010x}", h.checksum)),
        Value::Bool(report.problem.is_none()),
        text_or_null(report.problem.clone()),
        text_or_null(report.table.clone()),
        text_or_null(report.design.clone()),
    ]])
}

pub(super) fn slot_columns() -> Vec<(&'static str, SqlType)> {
    vec![
        ("slot", SqlType::Int),
        ("offset_bytes", SqlType::Int),
        ("length_bytes", SqlType::Int),
        ("content", SqlType::Text),
        ("key", SqlType::Text),
        ("key_hex", SqlType::Text),
        ("row_bytes", SqlType::Int),
        ("child_page", SqlType::Text),
        ("record_hex", SqlType::Text),
    ]
}

pub(super) fn slot_rows(db: &SqlDatabase, args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    let report = page_report(db.engine(), args)?;
    Ok(report.slots.iter().map(slot_row).collect())
}

fn slot_row(s: &SlotReport) -> Vec<Value> {
    let (content, key, row_bytes, child) = match &s.content {
        SlotContent::Row { key, row_bytes } => ("row", Some(key.clone()), Some(*row_bytes), None),
        SlotContent::Child { key, child } => ("child", Some(key.clone()), None, Some(*child)),
        SlotContent::FileHeader { magic, .. } => ("file header", Some(magic.clone()), None, None),
        SlotContent::Other => ("other", None, None, None),
    };
    vec![
        int(s.slot),
        int(s.offset),
        int(s.length),
        Value::Text(content.to_string()),
        text_or_null(key),
        Value::Text(hex(&s.key)),
        row_bytes.map_or(Value::Null, int),
        text_or_null(child.map(location)),
        Value::Text(hex(&s.record)),
    ]
}

/// The page the arguments name, decoded: `(file, page)` numbers or one `'FILE:PAGE'`.
fn page_report(engine: &Database, args: &[Value]) -> SqlResult<PageReport> {
    let at = page_location(args)?;
    check_bounds(engine, at)?;
    engine.inspect_page(at).map_err(engine_error)
}

fn page_location(args: &[Value]) -> SqlResult<PageLocation> {
    let invalid = |what: String| {
        SqlError::new(sqlstate::INVALID_PARAMETER_VALUE, what).with_hint(
            "name a page as (file, page) numbers or as 'FILE:PAGE', e.g. (0, 1) or '0:1'",
        )
    };
    match args {
        [Value::Text(text)] => {
            PageLocation::parse(text).ok_or_else(|| invalid(format!("'{text}' is not a page")))
        }
        [Value::Int(file), Value::Int(page)] => {
            let file = u32::try_from(*file)
                .map_err(|_| invalid(format!("{file} is not a data file number")))?;
            let page = u64::try_from(*page)
                .map_err(|_| invalid(format!("{page} is not a page number")))?;
            Ok(PageLocation { file, page })
        }
        other => {
            let types: Vec<&str> = other.iter().map(Value::type_name).collect();
            Err(invalid(format!(
                "arguments of type ({}) do not name a page",
                types.join(", ")
            )))
        }
    }
}

/// Refuses a page outside the database's data files (as `hotpage inspect page` does),
/// saying what the database has.
fn check_bounds(engine: &Database, at: PageLocation) -> SqlResult<()> {
    let files = engine.data_files();
    if at.file >= files {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!(
                "no data file {}: the database has data files 0 to {}",
                at.file,
                files.saturating_sub(1)
            ),
        ));
    }
    let file_pages = engine
        .pool_info()
        .file_pages_each
        .get(at.file as usize)
        .copied()
        .unwrap_or(0);
    if at.page >= file_pages {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!(
                "no page {at}: {} has {file_pages} pages (0 to {})",
                at.file_name(),
                file_pages.saturating_sub(1)
            ),
        ));
    }
    Ok(())
}

/// A page id as `FILE:PAGE`.
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
