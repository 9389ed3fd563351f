//! hotpage-sql: SQL over the hotpage engine, in the PostgreSQL dialect.
//!
//! ```text
//! catalog      pg_catalog and information_schema for psql's \\d and the drivers; settings
//! session      SqlDatabase, SqlSession: parse (sqlparser), plan, execute; settings
//! table        a table's schema with its codecs and compiled defaults
//! expr         expressions compiled once (columns resolved), evaluated per row
//! ddl          CREATE TABLE / SEQUENCE / DROP onto the engine's designs
//! insert, select  the two statements that read and write rows
//! param_types  a query's parameter types, inferred from where it uses them
//! views        the system views (waits, activity, index physical stats, pages, log)
//! schema       a table's columns and key, stored in the engine's catalog as opaque bytes
//! key_codec    primary keys as memcmp-ordered bytes (byte order = SQL order)
//! row_codec    the versioned row format of the non-key columns
//! value, types SQL values and types: parse, coerce, compare, print
//! error        SqlError with its SQLSTATE
//! limits       what a statement may hold: 1 GB a value, hotpage.query_memory a query
//! tsql         T-SQL (GO batches, variables, control flow, DDL) onto the PostgreSQL dialect
//! ```
//!
//! The engine crate knows nothing of SQL: it stores a table's schema as bytes and rows as
//! (key, row) byte pairs.

mod catalog;
mod ddl;
mod error;
mod expr;
mod insert;
mod key_codec;
mod limits;
mod param_types;
mod row_codec;
mod schema;
mod select;
mod session;
mod table;
mod tsql;
mod types;
mod value;
mod views;

pub use catalog::settings::SERVER_VERSION;
pub use error::{SqlError, SqlResult, sqlstate};
pub use session::{
    BatchObserver, ColumnInfo, Prepared, RowStream, SqlDatabase, SqlSession, StatementResult,
    TxnStatus, is_read_result, statement_stopped,
};
pub use types::SqlType;
pub use views::TerminateHook;
// Why a statement was stopped ([`statement_stopped`]'s argument): the engine's reasons.
pub use hotpage::WaitStop;
pub use value::{NUMERIC_OID, Value, WireFormat};
// T-SQL front end (issue 15).
pub use tsql::{Batch, TsqlBatch, TsqlOutput, TsqlSession, split_batches};
