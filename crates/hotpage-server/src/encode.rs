//! Results and errors as backend messages: RowDescription, DataRow in the text or binary
//! format, CommandComplete, ErrorResponse, ReadyForQuery.

use bytes::{BufMut, BytesMut};
use hotpage_sql::{ColumnInfo, SqlError, StatementResult, TxnStatus, Value, WireFormat};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyInResponse, CopyOutResponse};
use pgwire::messages::data::{DataRow, FieldDescription, RowDescription};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ErrorResponse, ReadyForQuery, TransactionStatus,
};

/// SQLSTATEs the server itself raises.
pub mod code {
    /// protocol_violation
    pub const PROTOCOL_VIOLATION: &str = "08P01";
    /// too_many_connections
    pub const TOO_MANY_CONNECTIONS: &str = "53300";
    /// program_limit_exceeded
    pub const PROGRAM_LIMIT_EXCEEDED: &str = "54000";
    /// query_canceled (a cancel request or the statement timeout)
    pub const QUERY_CANCELED: &str = "57014";
    /// admin_shutdown
    pub const ADMIN_SHUTDOWN: &str = "57P01";
    /// idle_session_timeout
    pub const IDLE_SESSION_TIMEOUT: &str = "57P05";
    /// idle_in_transaction_session_timeout
    pub const IDLE_IN_TRANSACTION_TIMEOUT: &str = "25P03";
    /// invalid_sql_statement_name
    pub const INVALID_STATEMENT_NAME: &str = "26000";
    /// duplicate_prepared_statement
    pub const DUPLICATE_PREPARED_STATEMENT: &str = "42P05";
    /// invalid_cursor_name (no such portal)
    pub const INVALID_CURSOR_NAME: &str = "34000";
    /// duplicate_cursor (the portal exists)
    pub const DUPLICATE_CURSOR: &str = "42P03";
    /// feature_not_supported
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    /// invalid_password (a wrong password or an unknown user)
    pub const INVALID_PASSWORD: &str = "28P01";
    /// invalid_authorization_specification
    pub const INVALID_AUTHORIZATION: &str = "28000";
    /// connection_failure (the client went away in the middle of a COPY)
    pub const CONNECTION_FAILURE: &str = "08006";
    /// internal_error: a bug in hotpage (a panic while answering).
    pub const INTERNAL_ERROR: &str = "XX000";
}

/// The column count of a COPY response (an i16 on the wire).
fn copy_columns(columns: usize) -> Result<i16, SqlError> {
    i16::try_from(columns).map_err(|_| {
        SqlError::new(
            code::PROGRAM_LIMIT_EXCEEDED,
            format!("COPY of {columns} columns: the protocol allows 32767"),
        )
    })
}

/// CopyInResponse: the client is to send COPY data, every column in the text format.
pub fn copy_in_response(columns: usize) -> Result<PgWireBackendMessage, SqlError> {
    let columns = copy_columns(columns)?;
    Ok(PgWireBackendMessage::CopyInResponse(CopyInResponse::new(
        0,
        columns,
        vec![0; columns as usize],
    )))
}

/// CopyOutResponse: COPY data follows, every column in the text format.
pub fn copy_out_response(columns: usize) -> Result<PgWireBackendMessage, SqlError> {
    let columns = copy_columns(columns)?;
    Ok(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
        0,
        columns,
        vec![0; columns as usize],
    )))
}

/// One CopyData message of COPY TO's output.
pub fn copy_data(bytes: &[u8]) -> PgWireBackendMessage {
    PgWireBackendMessage::CopyData(CopyData::new(bytes::Bytes::copy_from_slice(bytes)))
}

/// The end of COPY TO's output.
pub fn copy_done() -> PgWireBackendMessage {
    PgWireBackendMessage::CopyDone(CopyDone::new())
}

/// The transaction status ReadyForQuery reports.
pub fn ready(status: TxnStatus) -> PgWireBackendMessage {
    let status = match status {
        TxnStatus::Idle => TransactionStatus::Idle,
        TxnStatus::InTransaction => TransactionStatus::Transaction,
        TxnStatus::Failed => TransactionStatus::Error,
    };
    PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(status))
}

/// Protocol strings are NUL-terminated: a NUL inside one (from a value quoted in a
/// message) would end it early and break the framing.
fn cstring(text: &str) -> String {
    text.replace('\0', "\\0")
}

/// An ErrorResponse with `severity` ERROR or FATAL.
pub fn error_with(error: &SqlError, severity: &str) -> PgWireBackendMessage {
    let mut fields = vec![
        (b'S', severity.to_string()),
        (b'V', severity.to_string()),
        (b'C', error.sqlstate.to_string()),
        (b'M', cstring(&error.message)),
    ];
    if let Some(detail) = &error.detail {
        fields.push((b'D', cstring(detail)));
    }
    if let Some(hint) = &error.hint {
        fields.push((b'H', cstring(hint)));
    }
    if let Some(position) = error.position {
        fields.push((b'P', position.to_string()));
    }
    if let Some(context) = &error.context {
        fields.push((b'W', cstring(context)));
    }
    PgWireBackendMessage::ErrorResponse(ErrorResponse::new(fields))
}

/// ERROR: the statement failed, the session goes on. A statement stopped by
/// `pg_terminate_backend` (57P01) is FATAL instead: its session ends, and PostgreSQL's
/// client sees that one message, not an ERROR and then a FATAL.
pub fn error(error: &SqlError) -> PgWireBackendMessage {
    match error.sqlstate {
        code::ADMIN_SHUTDOWN => error_with(error, "FATAL"),
        _ => error_with(error, "ERROR"),
    }
}

/// Whether `message` is a FATAL ErrorResponse, after which nothing more is sent.
pub fn is_fatal(message: &PgWireBackendMessage) -> bool {
    matches!(message, PgWireBackendMessage::ErrorResponse(error)
        if error.fields.iter().any(|(field, value)| *field == b'S' && value == "FATAL"))
}

/// FATAL: the connection ends after this message.
pub fn fatal(sqlstate: &'static str, message: impl Into<String>) -> PgWireBackendMessage {
    error_with(&SqlError::new(sqlstate, message), "FATAL")
}

pub fn command_complete(tag: &str) -> PgWireBackendMessage {
    PgWireBackendMessage::CommandComplete(CommandComplete::new(cstring(tag)))
}

pub fn empty_query() -> PgWireBackendMessage {
    PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new())
}

/// The formats Bind asked for, one per column: no codes means text for all, one code
/// applies to all, else one code per column.
pub fn result_formats(codes: &[i16], columns: usize) -> Result<Vec<WireFormat>, SqlError> {
    let format = |code: i16| match code {
        0 => Ok(WireFormat::Text),
        1 => Ok(WireFormat::Binary),
        other => Err(SqlError::new(
            code::PROTOCOL_VIOLATION,
            format!("unsupported format code: {other}"),
        )),
    };
    match codes {
        [] => Ok(vec![WireFormat::Text; columns]),
        [one] => Ok(vec![format(*one)?; columns]),
        many if many.len() == columns => many.iter().map(|c| format(*c)).collect(),
        many => Err(SqlError::new(
            code::PROTOCOL_VIOLATION,
            format!(
                "bind message has {} result formats but query has {columns} columns",
                many.len()
            ),
        )),
    }
}

fn format_code(format: WireFormat) -> i16 {
    match format {
        WireFormat::Text => 0,
        WireFormat::Binary => 1,
    }
}

/// RowDescription of `columns` in `formats` (text where `formats` is shorter).
pub fn row_description(columns: &[ColumnInfo], formats: &[WireFormat]) -> PgWireBackendMessage {
    let fields = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            FieldDescription::new(
                cstring(&c.name),
                0,
                0,
                c.ty.pg_oid(),
                c.ty.pg_type_size(),
                c.ty.pg_type_modifier(),
                format_code(formats.get(i).copied().unwrap_or(WireFormat::Text)),
            )
        })
        .collect();
    PgWireBackendMessage::RowDescription(RowDescription::new(fields))
}

/// One DataRow: each value's length (-1 for NULL) and bytes.
pub fn data_row(
    row: &[Value],
    columns: &[ColumnInfo],
    formats: &[WireFormat],
) -> Result<PgWireBackendMessage, SqlError> {
    let mut data = BytesMut::new();
    for (i, value) in row.iter().enumerate() {
        let column = columns
            .get(i)
            .ok_or_else(|| SqlError::internal("a row has more values than columns"))?;
        let format = formats.get(i).copied().unwrap_or(WireFormat::Text);
        match value.to_wire(&column.ty, format)? {
            None => data.put_i32(-1),
            Some(bytes) => {
                let len = i32::try_from(bytes.len()).map_err(|_| {
                    SqlError::new(code::PROGRAM_LIMIT_EXCEEDED, "a value over 2 GiB")
                })?;
                data.put_i32(len);
                data.put_slice(&bytes);
            }
        }
    }
    let field_count = i16::try_from(row.len())
        .map_err(|_| SqlError::new(code::PROGRAM_LIMIT_EXCEEDED, "too many columns"))?;
    Ok(PgWireBackendMessage::DataRow(DataRow::new(
        data,
        field_count,
    )))
}

/// A statement's rows `rows` as DataRows, appended to `out`. On an error (a value that
/// does not fit its column's binary form) nothing is appended.
pub fn data_rows(
    rows: &[Vec<Value>],
    columns: &[ColumnInfo],
    formats: &[WireFormat],
    out: &mut Vec<PgWireBackendMessage>,
) -> Result<(), SqlError> {
    let mut encoded = Vec::with_capacity(rows.len());
    for row in rows {
        encoded.push(data_row(row, columns, formats)?);
    }
    out.append(&mut encoded);
    Ok(())
}

/// A simple-protocol statement's whole answer: RowDescription and DataRows (text) if it
/// returns rows, then CommandComplete.
pub fn simple_result(
    result: &StatementResult,
    out: &mut Vec<PgWireBackendMessage>,
) -> Result<(), SqlError> {
    if result.has_rows() {
        let formats = vec![WireFormat::Text; result.columns.len()];
        let mut rows = Vec::with_capacity(result.rows.len() + 2);
        rows.push(row_description(&result.columns, &formats));
        data_rows(&result.rows, &result.columns, &formats, &mut rows)?;
        out.append(&mut rows);
    }
    out.push(command_complete(&result.tag));
    Ok(())
}

#[cfg(test)]
mod tests;
