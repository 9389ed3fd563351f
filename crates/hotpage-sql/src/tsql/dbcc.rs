//! `DBCC PAGE(db, file, page, 0 | 1 | 3)` over the engine's page inspector
//! (`Database::inspect_page`, what `hotpage inspect page` prints), as the rows of SQL
//! Server's `DBCC PAGE … WITH TABLERESULTS`: ParentObject, Object, Field, VALUE. Seed 000
//! reads a PAGELATCH wait's `db:file:page` from `sys.dm_exec_requests`, then the page's
//! `Metadata: ObjectId` here, then `OBJECT_NAME(id)`: the object id is the one
//! `OBJECT_ID` gives the table that owns the page.
//!
//! Files are numbered as the wait resources number them (`data.0` is file 0); the database
//! id is 1 (`DB_ID()`). Print option 0 is the header; 1 adds each slot's offset, length
//! and record bytes in hex; 3 adds each row's key, decoded.

use super::TsqlSession;
use super::parse::split_top_level;
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::session::{ColumnInfo, StatementResult, engine_error};
use crate::types::SqlType;
use crate::value::Value;
use hotpage::{PageLocation, PageReport, PageType, SlotContent};
use sqlparser::tokenizer::Token;

/// Bytes of a record shown in hex (SQL Server shows a memory dump; a row here is short).
const RECORD_HEX_MAX: usize = 256;

fn bad(message: String) -> SqlError {
    SqlError::new(sqlstate::INVALID_PARAMETER_VALUE, message)
}

/// `DBCC PAGE (…)`'s four integers (`toks` are those after PAGE).
fn arguments(toks: &[Token]) -> SqlResult<[i64; 4]> {
    let inner = match toks {
        [Token::LParen, inner @ .., Token::RParen] => inner,
        _ => return Err(super::parse::syntax_near(toks.first())),
    };
    let parts = split_top_level(inner, |t| matches!(t, Token::Comma));
    let mut out = [0i64; 4];
    if parts.len() != 4 {
        return Err(bad(format!(
            "DBCC PAGE takes (database, file, page, print option), not {} arguments",
            parts.len()
        )));
    }
    for (slot, part) in out.iter_mut().zip(&parts) {
        *slot = match part {
            [Token::Number(n, _)] => n.parse().map_err(|_| bad(format!("{n} is out of range")))?,
            // DB_ID() is this database.
            [Token::Word(w), Token::LParen, Token::RParen]
                if w.value.eq_ignore_ascii_case("DB_ID") =>
            {
                1
            }
            other => {
                return Err(bad(format!(
                    "DBCC PAGE's arguments are integers, not {}",
                    super::parse::render(other)
                )));
            }
        };
    }
    Ok(out)
}

impl TsqlSession {
    /// `DBCC PAGE(db, file, page, option)` (`toks` are those after PAGE).
    pub(super) fn dbcc_page(&mut self, toks: &[Token]) -> SqlResult<()> {
        let [db, file, page, option] = arguments(toks)?;
        if db != 1 {
            return Err(bad(format!(
                "database id {db}: hotpage has one database, id 1 (DB_ID())"
            )));
        }
        if !matches!(option, 0 | 1 | 3) {
            return Err(bad(format!(
                "DBCC PAGE print option {option}: hotpage prints 0, 1 or 3"
            )));
        }
        let location = PageLocation {
            file: u32::try_from(file).map_err(|_| bad(format!("file {file} does not exist")))?,
            page: u64::try_from(page).map_err(|_| bad(format!("page {page} does not exist")))?,
        };
        let engine = std::sync::Arc::clone(self.sql.database().engine());
        // The page as it is now: its file lags the pool until a checkpoint writes it.
        engine.checkpoint().map_err(engine_error)?;
        let report = engine.inspect_page(location).map_err(engine_error)?;
        let rows = page_rows(&report, option, super::object_number);
        let text = |s: &str| Value::Text(s.to_string());
        let result = StatementResult {
            tag: format!("SELECT {}", rows.len()),
            columns: ["ParentObject", "Object", "Field", "VALUE"]
                .iter()
                .map(|name| ColumnInfo {
                    name: (*name).to_string(),
                    ty: SqlType::Text,
                })
                .collect(),
            rows: rows
                .iter()
                .map(|(p, o, f, v)| vec![text(p), text(o), text(f), text(v)])
                .collect(),
        };
        self.output.push(super::TsqlOutput::Result(result));
        Ok(())
    }
}

type Row = (String, String, String, String);

/// The rows of one page: the header, then (options 1 and 3) its slots.
fn page_rows(report: &PageReport, option: i64, object_id: impl Fn(&str) -> i64) -> Vec<Row> {
    let h = &report.header;
    let at = report.location.to_string();
    let parent = "PAGE HEADER:".to_string();
    let object = format!("Page @{at}");
    let mut rows: Vec<Row> = Vec::new();
    let mut field = |name: &str, value: String| {
        rows.push((parent.clone(), object.clone(), name.to_string(), value));
    };
    field("m_pageId", format!("({at})"));
    field(
        "m_type",
        h.page_type.map_or("unknown", PageType::name).to_string(),
    );
    field("m_level", h.level.to_string());
    field("m_slotCnt", h.slot_count.to_string());
    field("m_freeCnt", h.free_bytes.to_string());
    field("m_lsn", h.lsn.to_string());
    let next = h.next.map(|p| PageLocation::of(p).to_string());
    field("m_nextPage", next.unwrap_or_else(|| "(none)".into()));
    let id = report.table.as_deref().map(&object_id);
    field(
        "Metadata: ObjectId",
        id.map_or("0".into(), |i| i.to_string()),
    );
    field("Metadata: Table", report.table.clone().unwrap_or_default());
    field(
        "Metadata: Design",
        report.design.clone().unwrap_or_default(),
    );
    if let Some(problem) = &report.problem {
        field("Problem", problem.clone());
    }
    if option == 0 {
        return rows;
    }
    for slot in &report.slots {
        let parent = format!(
            "Slot {} Offset {:#x} Length {}",
            slot.slot, slot.offset, slot.length
        );
        let shown = &slot.record[..slot.record.len().min(RECORD_HEX_MAX)];
        let hex: String = shown.iter().map(|b| format!("{b:02x}")).collect();
        rows.push((parent.clone(), String::new(), "Record".into(), hex));
        if option == 3 {
            let key = match &slot.content {
                SlotContent::Row { key, .. } | SlotContent::Child { key, .. } => key.clone(),
                _ => continue,
            };
            rows.push((parent, String::new(), "Key".into(), key));
        }
    }
    rows
}
