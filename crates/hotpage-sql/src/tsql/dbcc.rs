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
//!
//! Also `DBCC TRACEON | TRACEOFF (flag, … [, -1])` and `DBCC TRACESTATUS [(flag, … [, -1])]`:
//! a flag is the session's, or with `-1` global (the database's, every session's, until
//! TRACEOFF with `-1` or a reopen), as in SQL Server. Flag 2537 is the one that acts here
//! (fn_dblog reads the inactive log too); others are kept and shown, and do nothing.

use super::TsqlSession;
use super::parse::split_top_level;
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::session::{ColumnInfo, StatementResult, engine_error};
use crate::types::SqlType;
use crate::value::Value;
use hotpage::{PageLocation, PageReport, PageType, SlotContent};
use sqlparser::tokenizer::Token;
use std::collections::BTreeSet;

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

/// The trace flags a `DBCC TRACEON | TRACEOFF | TRACESTATUS` names (`toks` are those after
/// the command: `(2537, -1)`, `WITH NO_INFOMSGS`, or nothing), and whether `-1` (global)
/// is among them.
fn trace_arguments(command: &str, toks: &[Token]) -> SqlResult<(BTreeSet<u32>, bool)> {
    let mut toks = toks;
    if let [rest @ .., Token::SemiColon] = toks {
        toks = rest;
    }
    if let [rest @ .., with, option] = toks
        && super::parse::is_word(Some(with), "WITH")
        && super::parse::is_word(Some(option), "NO_INFOMSGS")
    {
        toks = rest;
    }
    let inner = match toks {
        [] => return Ok((BTreeSet::new(), false)),
        [Token::LParen, inner @ .., Token::RParen] => inner,
        _ => return Err(super::parse::syntax_near(toks.first())),
    };
    let (mut flags, mut global) = (BTreeSet::new(), false);
    if inner.is_empty() {
        return Ok((flags, global));
    }
    for part in split_top_level(inner, |t| matches!(t, Token::Comma)) {
        let flag = match part {
            [Token::Minus, Token::Number(n, _)] if n == "1" => {
                global = true;
                continue;
            }
            [Token::Number(n, _)] => n.parse::<i32>().ok().and_then(|f| u32::try_from(f).ok()),
            _ => None,
        };
        let Some(flag) = flag else {
            return Err(bad(format!(
                "DBCC {command} takes trace flag numbers (0 or more) and -1 for global, not {}",
                // `-5`, not `- 5`: the tokens as written, unspaced.
                part.iter()
                    .map(|t| super::parse::render(std::slice::from_ref(t)))
                    .collect::<String>()
            )));
        };
        flags.insert(flag);
    }
    Ok((flags, global))
}

impl TsqlSession {
    /// `DBCC TRACEON | TRACEOFF (flag, … [, -1])`: the session's flags, or with `-1` the
    /// database's global ones. Turning a flag off for the session leaves it on globally
    /// when it is (SQL Server's rule: TRACESTATUS then shows Global 1, Session 0).
    pub(super) fn dbcc_trace(&mut self, command: &str, toks: &[Token]) -> SqlResult<()> {
        let (flags, global) = trace_arguments(command, toks)?;
        if flags.is_empty() {
            return Err(bad(format!(
                "DBCC {command} needs a trace flag: DBCC {command}(2537) for this session, DBCC {command}(2537, -1) for every session"
            )));
        }
        let on = command == "TRACEON";
        for flag in flags {
            if global {
                self.sql.database().set_global_trace_flag(flag, on);
            } else if on {
                self.trace_flags.insert(flag);
            } else {
                self.trace_flags.remove(&flag);
            }
        }
        Ok(())
    }

    /// `DBCC TRACESTATUS [(flag, … [, -1])]`: a row per flag named, or without one, per flag
    /// on for this session (its own and the global ones): TraceFlag, Status (on for this
    /// session, either way), Global, Session, each 1 or 0.
    pub(super) fn dbcc_trace_status(&mut self, toks: &[Token]) -> SqlResult<()> {
        let (named, _) = trace_arguments("TRACESTATUS", toks)?;
        let global = self.sql.database().global_trace_flags();
        let shown: BTreeSet<u32> = if named.is_empty() {
            global.union(&self.trace_flags).copied().collect()
        } else {
            named
        };
        let int = |on: bool| Value::Int(i64::from(on));
        let rows: Vec<Vec<Value>> = shown
            .iter()
            .map(|flag| {
                let (g, s) = (global.contains(flag), self.trace_flags.contains(flag));
                vec![Value::Int(i64::from(*flag)), int(g || s), int(g), int(s)]
            })
            .collect();
        self.output.push(super::TsqlOutput::Result(StatementResult {
            tag: format!("SELECT {}", rows.len()),
            columns: ["TraceFlag", "Status", "Global", "Session"]
                .iter()
                .map(|name| ColumnInfo {
                    name: (*name).to_string(),
                    ty: SqlType::Int,
                })
                .collect(),
            rows,
        }));
        Ok(())
    }

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
