//! The extended protocol: Parse makes a statement (named or unnamed), Bind makes a portal
//! from it with parameter values, Describe tells a statement's parameter types and either
//! one's columns, Execute runs a portal (with a row limit, suspending it), Close drops
//! either, Sync ends the exchange. An error makes the session skip to the next Sync.

use crate::encode::{self, code};
use crate::session::{Interrupt, Output, SessionState, check_statement_size};
use bytes::Bytes;
use hotpage_sql::{
    ColumnInfo, Prepared, RowStream, SqlError, SqlSession, SqlType, StatementResult, Value,
    WireFormat, is_read_result,
};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::data::{NoData, ParameterDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete,
    PortalSuspended,
};
use std::collections::HashMap;
use std::sync::Arc;

/// PostgreSQL's OID of the `unknown` pseudo-type, which a client may declare for a
/// parameter it wants the server to type.
const UNKNOWN_OID: u32 = 705;
/// `text`: the type of a parameter nothing determines.
const TEXT_OID: u32 = 25;

/// How a parameter's bytes are read.
#[derive(Clone, Debug, PartialEq)]
enum ParamType {
    /// As this type (declared by the client or inferred from the statement).
    Typed(SqlType),
    /// Nothing gives a type: read as text, cast where the statement uses it.
    Untyped,
    /// A type hotpage does not have: text is left to the statement's cast, binary refused.
    Unsupported(u32),
}

/// A parsed statement.
pub struct Statement {
    /// None for an empty query string (Execute answers EmptyQueryResponse).
    prepared: Option<Prepared>,
    params: Vec<ParamType>,
    /// What Describe reports for each parameter.
    param_oids: Vec<u32>,
    columns: Vec<ColumnInfo>,
}

/// A bound statement, ready to run.
pub struct Portal {
    statement: Arc<Statement>,
    params: Vec<Value>,
    formats: Vec<WireFormat>,
    state: PortalState,
}

enum PortalState {
    Ready,
    /// Rows left after an Execute with a row limit.
    Suspended {
        result: StatementResult,
        sent: usize,
    },
    /// Run to completion; a further Execute returns no rows.
    Done,
}

/// A parameter's type: the client's declared OID (0 or 705 for none) and what the
/// statement implies. A length or precision the statement implies is dropped, as
/// PostgreSQL's parameter types carry none: `WHERE v = $1` on a varchar(10) column finds
/// no row for a longer value rather than refusing it, `WHERE price = $1` on a
/// numeric(10,2) column compares the value sent, not a rounded one, and an INSERT applies
/// the column's own rules when it stores the value.
fn param_type(declared: u32, inferred: Option<SqlType>) -> (ParamType, u32) {
    let typed = |ty: SqlType| match ty {
        SqlType::Varchar(_) => ParamType::Typed(SqlType::Varchar(None)),
        // Read exactly, at its own scale, whatever typmod the statement gives it.
        SqlType::Numeric { .. } => ParamType::Typed(SqlType::NumericUnconstrained),
        other => ParamType::Typed(other),
    };
    match declared {
        0 | UNKNOWN_OID => match inferred {
            Some(ty) => (typed(ty), ty.pg_oid()),
            None => (ParamType::Untyped, TEXT_OID),
        },
        // char(n): the statement's length pads the value as the column stores it.
        oid if inferred.is_some_and(|ty| ty.pg_oid() == oid) => {
            (typed(inferred.unwrap_or(SqlType::Text)), oid)
        }
        oid => match SqlType::from_pg_oid(oid) {
            Some(ty) => (ParamType::Typed(ty), oid),
            None => (ParamType::Unsupported(oid), oid),
        },
    }
}

fn decode_param(kind: &ParamType, bytes: &[u8], format: WireFormat) -> Result<Value, SqlError> {
    match (kind, format) {
        (ParamType::Typed(ty), _) => Value::from_wire(bytes, format, ty),
        (ParamType::Unsupported(oid), WireFormat::Binary) => Err(SqlError::new(
            code::FEATURE_NOT_SUPPORTED,
            format!(
                "a parameter of type OID {oid} in binary format is not supported; send it as text"
            ),
        )),
        // Text of no known type: PostgreSQL's `unknown` literal, cast where it is used.
        _ => Value::from_wire(bytes, WireFormat::Text, &SqlType::Text),
    }
}

/// The format of each of `n` parameters.
fn param_formats(codes: &[i16], n: usize) -> Result<Vec<WireFormat>, SqlError> {
    if codes.len() > 1 && codes.len() != n {
        return Err(SqlError::new(
            code::PROTOCOL_VIOLATION,
            format!(
                "bind message has {} parameter formats but {n} parameters",
                codes.len()
            ),
        ));
    }
    encode::result_formats(codes, n)
}

fn statement_label(name: &str) -> String {
    if name.is_empty() {
        "unnamed prepared statement".to_string()
    } else {
        format!("prepared statement \"{name}\"")
    }
}

impl SessionState {
    pub(crate) fn parse(&mut self, parse: Parse, out: &mut Output) -> Result<(), SqlError> {
        if let Some(error) = crate::frame::invalid_text_error(&parse.query) {
            return Err(error);
        }
        let name = parse.name.unwrap_or_default();
        if !name.is_empty() && self.statements.contains_key(&name) {
            return Err(SqlError::new(
                code::DUPLICATE_PREPARED_STATEMENT,
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        check_statement_size(&parse.query, self.limits.max_statement_bytes)?;
        let statement = if parse.query.trim().is_empty() {
            Statement {
                prepared: None,
                params: Vec::new(),
                param_oids: Vec::new(),
                columns: Vec::new(),
            }
        } else {
            let prepared = self.session.prepare(&parse.query)?;
            let count = prepared.param_types.len().max(parse.type_oids.len());
            let (params, param_oids) = (0..count)
                .map(|i| {
                    let declared = parse.type_oids.get(i).copied().unwrap_or(0);
                    param_type(declared, prepared.param_types.get(i).copied().flatten())
                })
                .unzip();
            Statement {
                columns: prepared.result_columns(),
                prepared: Some(prepared),
                params,
                param_oids,
            }
        };
        self.statements.insert(name, Arc::new(statement));
        out.push(PgWireBackendMessage::ParseComplete(ParseComplete::new()));
        Ok(())
    }

    pub(crate) fn bind(&mut self, bind: Bind, out: &mut Output) -> Result<(), SqlError> {
        let statement_name = bind.statement_name.unwrap_or_default();
        let statement = self
            .statements
            .get(&statement_name)
            .cloned()
            .ok_or_else(|| {
                SqlError::new(
                    code::INVALID_STATEMENT_NAME,
                    format!("{} does not exist", statement_label(&statement_name)),
                )
            })?;
        let portal_name = bind.portal_name.unwrap_or_default();
        if !portal_name.is_empty() && self.portals.contains_key(&portal_name) {
            return Err(SqlError::new(
                code::DUPLICATE_CURSOR,
                format!("portal \"{portal_name}\" already exists"),
            ));
        }
        let params = bind_params(
            &statement,
            &statement_name,
            &bind.parameters,
            &bind.parameter_format_codes,
        )?;
        let formats =
            encode::result_formats(&bind.result_column_format_codes, statement.columns.len())?;
        self.portals.insert(
            portal_name,
            Portal {
                statement,
                params,
                formats,
                state: PortalState::Ready,
            },
        );
        out.push(PgWireBackendMessage::BindComplete(BindComplete::new()));
        Ok(())
    }

    /// Describe re-plans a statement that DDL made stale, as Execute does: what it reports
    /// is what Execute will return (or the error Execute would give: the table is gone, or
    /// its columns changed under a statement the client holds).
    pub(crate) fn describe(
        &mut self,
        describe: &Describe,
        out: &mut Output,
    ) -> Result<(), SqlError> {
        let name = describe.name.clone().unwrap_or_default();
        let (columns, formats) = if describe.target_type == b'S' {
            let mut statement = self.statements.get(&name).cloned().ok_or_else(|| {
                SqlError::new(
                    code::INVALID_STATEMENT_NAME,
                    format!("{} does not exist", statement_label(&name)),
                )
            })?;
            if is_stale(&statement) {
                statement = replan(&mut self.session, &mut self.statements, &statement)?;
            }
            out.push(PgWireBackendMessage::ParameterDescription(
                ParameterDescription::new(statement.param_oids.clone()),
            ));
            // A statement's result formats are not known yet: text, as PostgreSQL says.
            (statement.columns.clone(), Vec::new())
        } else {
            let portal = ready_portal(
                &mut self.portals,
                &mut self.session,
                &mut self.statements,
                &name,
            )?;
            (portal.statement.columns.clone(), portal.formats.clone())
        };
        out.push(if columns.is_empty() {
            PgWireBackendMessage::NoData(NoData::new())
        } else {
            encode::row_description(&columns, &formats)
        });
        Ok(())
    }

    pub(crate) fn execute(&mut self, execute: &Execute, out: &mut Output) -> Result<(), SqlError> {
        let name = execute.name.clone().unwrap_or_default();
        let timeout = self.session.statement_timeout();
        let cancel = Arc::clone(&self.cancel);
        let portal = ready_portal(
            &mut self.portals,
            &mut self.session,
            &mut self.statements,
            &name,
        )?;
        let Some(prepared) = &portal.statement.prepared else {
            out.push(encode::empty_query());
            return Ok(());
        };
        // A negative or zero limit means all rows.
        let limit = usize::try_from(execute.max_rows).ok().filter(|n| *n > 0);
        if matches!(portal.state, PortalState::Ready) {
            let interrupt = Interrupt::start(&cancel, timeout);
            // All rows wanted: they go out as they are made (a query that streams), so a
            // result of any size takes one chunk of memory. With a row limit they are
            // held, for the Executes that follow.
            let mut streamed = false;
            let mut stream = |columns: &[ColumnInfo], rows: Vec<Vec<Value>>| {
                interrupt.check()?;
                // The chunk before goes out now; this one waits, so that a result of one
                // chunk is answered in the batch's one write, as a held one is.
                if streamed {
                    out.send_streamed()?;
                }
                streamed = true;
                let mut messages = Vec::with_capacity(rows.len());
                encode::data_rows(&rows, columns, &portal.formats, &mut messages)?;
                out.append(&mut messages);
                Ok(())
            };
            let stream: Option<&mut RowStream<'_>> = match limit {
                None => Some(&mut stream),
                Some(_) => None,
            };
            let result =
                self.session
                    .execute_prepared_streamed(prepared, &portal.params, stream)?;
            // Rows already streamed are not dropped: the statement that sent them completes.
            if is_read_result(&result) && !streamed {
                interrupt.check()?;
            }
            if streamed {
                out.push(encode::command_complete(&result.tag));
                portal.state = PortalState::Done;
                return Ok(());
            }
            portal.state = PortalState::Suspended { result, sent: 0 };
        }
        send_rows(portal, limit, out)
    }

    pub(crate) fn close(&mut self, close: &Close, out: &mut Output) -> Result<(), SqlError> {
        let name = close.name.clone().unwrap_or_default();
        // Closing what does not exist is not an error.
        if close.target_type == b'S' {
            self.statements.remove(&name);
        } else {
            self.portals.remove(&name);
        }
        out.push(PgWireBackendMessage::CloseComplete(CloseComplete::new()));
        Ok(())
    }
}

/// The portal `name`, its statement planned again if DDL made it stale before it ran.
fn ready_portal<'p>(
    portals: &'p mut HashMap<String, Portal>,
    session: &mut SqlSession,
    statements: &mut HashMap<String, Arc<Statement>>,
    name: &str,
) -> Result<&'p mut Portal, SqlError> {
    let portal = portals.get_mut(name).ok_or_else(|| {
        SqlError::new(
            code::INVALID_CURSOR_NAME,
            format!("portal \"{name}\" does not exist"),
        )
    })?;
    if is_stale(&portal.statement) && matches!(portal.state, PortalState::Ready) {
        portal.statement = replan(session, statements, &portal.statement)?;
    }
    Ok(portal)
}

/// True if DDL dropped or replaced a table the statement uses since it was planned.
fn is_stale(statement: &Statement) -> bool {
    statement.prepared.as_ref().is_some_and(Prepared::is_stale)
}

/// Plans a statement again after DDL dropped or replaced a table it uses, and keeps the
/// fresh plan for every name that holds the statement, so that it is planned once, not at
/// each Describe or Execute. Returns the fresh statement.
fn replan(
    session: &mut SqlSession,
    statements: &mut HashMap<String, Arc<Statement>>,
    stale: &Arc<Statement>,
) -> Result<Arc<Statement>, SqlError> {
    let Some(prepared) = &stale.prepared else {
        return Ok(Arc::clone(stale));
    };
    let fresh = session.replan(prepared)?;
    let statement = Arc::new(Statement {
        columns: fresh.result_columns(),
        prepared: Some(fresh),
        params: stale.params.clone(),
        param_oids: stale.param_oids.clone(),
    });
    for held in statements.values_mut() {
        if Arc::ptr_eq(held, stale) {
            *held = Arc::clone(&statement);
        }
    }
    Ok(statement)
}

/// The parameter values of a Bind, read by the statement's parameter types.
fn bind_params(
    statement: &Statement,
    statement_name: &str,
    values: &[Option<Bytes>],
    format_codes: &[i16],
) -> Result<Vec<Value>, SqlError> {
    if values.len() != statement.params.len() {
        return Err(SqlError::new(
            code::PROTOCOL_VIOLATION,
            format!(
                "bind message supplies {} parameters, but {} requires {}",
                values.len(),
                statement_label(statement_name),
                statement.params.len()
            ),
        ));
    }
    let formats = param_formats(format_codes, values.len())?;
    values
        .iter()
        .zip(&statement.params)
        .zip(formats)
        .map(|((bytes, kind), format)| match bytes {
            None => Ok(Value::Null),
            Some(bytes) => decode_param(kind, bytes, format),
        })
        .collect()
}

/// Sends a run portal's rows (at most `limit`, then PortalSuspended) or its completion.
fn send_rows(portal: &mut Portal, limit: Option<usize>, out: &mut Output) -> Result<(), SqlError> {
    let PortalState::Suspended { result, sent } = &mut portal.state else {
        // Already complete: no more rows.
        out.push(encode::command_complete("SELECT 0"));
        return Ok(());
    };
    let remaining = &result.rows[*sent..];
    let take = limit.map_or(remaining.len(), |n| n.min(remaining.len()));
    let mut messages = Vec::with_capacity(take + 1);
    encode::data_rows(
        &remaining[..take],
        &result.columns,
        &portal.formats,
        &mut messages,
    )?;
    out.append(&mut messages);
    *sent += take;
    if *sent < result.rows.len() {
        out.push(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()));
        return Ok(());
    }
    // A SELECT run in several Executes reports the rows of the last one, as PostgreSQL.
    let tag = if result.tag.starts_with("SELECT") {
        format!("SELECT {take}")
    } else {
        result.tag.clone()
    };
    out.push(encode::command_complete(&tag));
    portal.state = PortalState::Done;
    Ok(())
}

#[cfg(test)]
mod tests;
