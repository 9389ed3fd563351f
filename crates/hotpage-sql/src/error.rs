//! The SQL layer's one error type: every error carries a PostgreSQL SQLSTATE.

use std::fmt;

/// SQLSTATE codes the SQL layer raises (PostgreSQL's, Appendix A of its manual).
pub mod sqlstate {
    /// syntax_error
    pub const SYNTAX_ERROR: &str = "42601";
    /// A LIKE pattern that ends in its escape character.
    pub const INVALID_ESCAPE_SEQUENCE: &str = "22025";
    /// undefined_table
    pub const UNDEFINED_TABLE: &str = "42P01";
    /// wrong_object_type
    pub const WRONG_OBJECT_TYPE: &str = "42809";
    /// duplicate_table
    pub const DUPLICATE_TABLE: &str = "42P07";
    /// undefined_column
    pub const UNDEFINED_COLUMN: &str = "42703";
    /// duplicate_column
    pub const DUPLICATE_COLUMN: &str = "42701";
    /// undefined_function
    pub const UNDEFINED_FUNCTION: &str = "42883";
    /// ambiguous_function (an untyped argument that fits more than one)
    pub const AMBIGUOUS_FUNCTION: &str = "42725";
    /// undefined_object (an unknown sequence, setting, ...)
    pub const UNDEFINED_OBJECT: &str = "42704";
    /// datatype_mismatch
    pub const DATATYPE_MISMATCH: &str = "42804";
    /// cannot_coerce: no cast from one type to the other
    pub const CANNOT_COERCE: &str = "42846";
    /// grouping_error
    pub const GROUPING_ERROR: &str = "42803";
    /// windowing_error (a window function where none may be, or nested)
    pub const WINDOWING_ERROR: &str = "42P20";
    /// invalid_table_definition
    pub const INVALID_TABLE_DEFINITION: &str = "42P16";
    /// feature_not_supported
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    /// unique_violation
    pub const UNIQUE_VIOLATION: &str = "23505";
    /// not_null_violation
    pub const NOT_NULL_VIOLATION: &str = "23502";
    /// numeric_value_out_of_range
    pub const NUMERIC_VALUE_OUT_OF_RANGE: &str = "22003";
    /// string_data_right_truncation
    pub const STRING_DATA_RIGHT_TRUNCATION: &str = "22001";
    /// invalid_text_representation
    pub const INVALID_TEXT_REPRESENTATION: &str = "22P02";
    /// invalid_datetime_format
    pub const INVALID_DATETIME_FORMAT: &str = "22007";
    /// datetime_field_overflow
    pub const DATETIME_FIELD_OVERFLOW: &str = "22008";
    /// division_by_zero
    pub const DIVISION_BY_ZERO: &str = "22012";
    /// interval_field_overflow
    pub const INTERVAL_FIELD_OVERFLOW: &str = "22015";
    /// invalid_parameter_value
    pub const INVALID_PARAMETER_VALUE: &str = "22023";
    /// generated_always (a value given for a GENERATED ALWAYS column)
    pub const GENERATED_ALWAYS: &str = "428C9";
    /// object_not_in_prerequisite_state (currval before nextval, ...)
    pub const OBJECT_NOT_IN_PREREQUISITE_STATE: &str = "55000";
    /// active_sql_transaction
    pub const ACTIVE_SQL_TRANSACTION: &str = "25001";
    /// admin_shutdown (a shutdown, `pg_terminate_backend`)
    pub const ADMIN_SHUTDOWN: &str = "57P01";
    /// no_active_sql_transaction (a warning in PostgreSQL; an error here)
    pub const NO_ACTIVE_SQL_TRANSACTION: &str = "25P01";
    /// in_failed_sql_transaction
    pub const IN_FAILED_SQL_TRANSACTION: &str = "25P02";
    /// program_limit_exceeded
    pub const STATEMENT_TOO_COMPLEX: &str = "54001";
    pub const PROGRAM_LIMIT_EXCEEDED: &str = "54000";
    /// read_only_sql_transaction
    pub const READ_ONLY_SQL_TRANSACTION: &str = "25006";
    /// data_corrupted
    pub const DATA_CORRUPTED: &str = "XX001";
    /// io_error
    pub const IO_ERROR: &str = "58030";
    /// internal_error
    pub const INTERNAL_ERROR: &str = "XX000";
    /// undefined_parameter
    pub const UNDEFINED_PARAMETER: &str = "42P02";
    /// invalid_column_reference (an ORDER BY position out of range, a column list longer
    /// than its query's)
    pub const INVALID_COLUMN_REFERENCE: &str = "42P10";
    /// duplicate_object (a T-SQL function or partition function that exists already)
    pub const DUPLICATE_OBJECT: &str = "42710";
    /// duplicate_alias
    pub const DUPLICATE_ALIAS: &str = "42712";
    /// invalid_recursion
    pub const INVALID_RECURSION: &str = "42P19";
    /// dependent_objects_still_exist (a partition scheme a table uses)
    pub const DEPENDENT_OBJECTS_STILL_EXIST: &str = "2BP01";
    /// `bad_copy_file_format`: a COPY record with too few or too many fields.
    pub const BAD_COPY_FILE_FORMAT: &str = "22P04";
    /// `character_not_in_repertoire`: bytes that are not UTF-8.
    pub const CHARACTER_NOT_IN_REPERTOIRE: &str = "22021";
    /// `insufficient_privilege`: COPY to or from a server file or program.
    pub const INSUFFICIENT_PRIVILEGE: &str = "42501";
    /// `query_canceled`: a cancel request, a statement timeout, or a client's CopyFail.
    pub const QUERY_CANCELED: &str = "57014";
    /// `lock_not_available`: a wait for another transaction's key ran past `lock_timeout`
    /// (or, holding keys of its own, past the engine's limit).
    pub const LOCK_NOT_AVAILABLE: &str = "55P03";
    /// `null_value_not_allowed`: a window frame's offset is NULL.
    pub const NULL_VALUE_NOT_ALLOWED: &str = "22004";
    /// `invalid_preceding_or_following_size`: a window frame's offset is negative.
    pub const INVALID_PRECEDING_OR_FOLLOWING_SIZE: &str = "22013";
    /// `invalid_argument_for_ntile_function`.
    pub const INVALID_ARGUMENT_FOR_NTILE: &str = "22014";
    /// `invalid_argument_for_nth_value_function`.
    pub const INVALID_ARGUMENT_FOR_NTH_VALUE: &str = "22016";
}

/// An error with its SQLSTATE, a one-line message and, where known, the 1-based character
/// position in the statement text that it is about (for the caret under the statement).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct SqlError {
    /// The five-character SQLSTATE.
    pub sqlstate: &'static str,
    /// The primary message, PostgreSQL's style: lower case, no final period.
    pub message: String,
    /// A detail line (the duplicate key's value, ...), if any.
    pub detail: Option<String>,
    /// A hint of what to do next, if any.
    pub hint: Option<String>,
    /// 1-based character position in the statement, if known.
    pub position: Option<usize>,
    /// Where it happened, PostgreSQL's CONTEXT line (`COPY t, line 3`), if known (boxed:
    /// the error stays small enough to return by value everywhere).
    pub context: Option<Box<String>>,
    /// Where in the text (1-based line, column) the error is, until the session turns it
    /// into `position` against the text it ran.
    /// Boxed, with `context`: so that an error stays under 128 bytes.
    pub(crate) line_column: Option<Box<(u32, u32)>>,
}

impl SqlError {
    /// An error with no detail, hint or position.
    pub fn new(sqlstate: &'static str, message: impl Into<String>) -> SqlError {
        SqlError {
            sqlstate,
            message: message.into(),
            detail: None,
            hint: None,
            position: None,
            context: None,
            line_column: None,
        }
    }

    /// `feature_not_supported`, for what hotpage does not do yet.
    pub fn unsupported(what: impl fmt::Display) -> SqlError {
        SqlError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!("{what} is not supported yet"),
        )
    }

    /// `data_corrupted`: stored bytes (a row, a key, a schema) that do not decode.
    pub fn corrupted(message: impl Into<String>) -> SqlError {
        SqlError::new(sqlstate::DATA_CORRUPTED, message)
    }

    /// `internal_error`: a caller inside this crate broke a contract (not the user's fault).
    pub fn internal(message: impl Into<String>) -> SqlError {
        SqlError::new(sqlstate::INTERNAL_ERROR, message)
    }

    /// Adds a detail line.
    pub fn with_detail(mut self, detail: impl Into<String>) -> SqlError {
        self.detail = Some(detail.into());
        self
    }

    /// Adds a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> SqlError {
        self.hint = Some(hint.into());
        self
    }

    /// Adds a context line (PostgreSQL's CONTEXT field).
    pub fn with_context(mut self, context: impl Into<String>) -> SqlError {
        self.context = Some(Box::new(context.into()));
        self
    }

    /// Sets the position, unless one is already set.
    pub fn at(mut self, position: Option<usize>) -> SqlError {
        if self.position.is_none() {
            self.position = position;
        }
        self
    }

    /// Whether the error knows its place in the statement's text.
    pub(crate) fn has_place(&self) -> bool {
        self.position.is_some() || self.line_column.is_some()
    }

    /// Sets the (line, column) the error is about, unless a place is already known.
    pub(crate) fn at_line_column(mut self, at: Option<(u32, u32)>) -> SqlError {
        if !self.has_place() {
            self.line_column = at.map(Box::new);
        }
        self
    }

    /// Turns a (line, column) into a character position in `text`, the text that ran.
    pub(crate) fn resolve_position(mut self, text: &str) -> SqlError {
        if self.position.is_none()
            && let Some((line, column)) = self.line_column.take().map(|at| *at)
        {
            let before: usize = text
                .split('\n')
                .take((line as usize).saturating_sub(1))
                .map(|l| l.chars().count() + 1)
                .sum();
            self.position = Some(before + column as usize);
        }
        self
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ERROR {}: {}", self.sqlstate, self.message)?;
        if let Some(detail) = &self.detail {
            write!(f, " (DETAIL: {detail})")?;
        }
        Ok(())
    }
}

/// The SQL layer's result type.
pub type SqlResult<T> = std::result::Result<T, SqlError>;
