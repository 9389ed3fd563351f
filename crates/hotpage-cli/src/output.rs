//! The one way commands print. Rust ignores SIGPIPE, so a write into a pipe whose reader
//! has gone (`hotpage inspect tables --db D | head -1`) fails with EPIPE, and `println!`
//! panics on it. Every command writes standard output through [`outln!`], which turns
//! EPIPE into [`CliError::stdout_closed`]: the command stops there, its database is closed
//! or dropped as on any error, and the process exits quietly with
//! [`crate::EXIT_STDOUT_CLOSED`], as a Unix tool that SIGPIPE ends.

use crate::CliError;
use std::io::Write;

/// Prints a line on standard output: `outln!("{x}")?`. A closed pipe is
/// [`CliError::stdout_closed`].
macro_rules! outln {
    () => {
        $crate::output::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}

/// Prints a line on standard error (progress, the final error), ignoring failures.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::diagnostic(format_args!($($arg)*))
    };
}

/// Writes `text` and a newline to standard output.
pub fn line(text: std::fmt::Arguments<'_>) -> Result<(), CliError> {
    writeln!(std::io::stdout().lock(), "{text}").map_err(stdout_error)
}

/// Writes `data` to standard output as it is, in one write where it can: for many lines
/// at once (a chunk of CSV rows or COPY records), where a line at a time would cost a
/// system call per line.
pub fn bytes(data: &[u8]) -> Result<(), CliError> {
    std::io::stdout()
        .lock()
        .write_all(data)
        .map_err(stdout_error)
}

/// A failed write to standard output: a closed pipe ends quietly, anything else fails.
pub fn stdout_error(error: std::io::Error) -> CliError {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        CliError::stdout_closed()
    } else {
        CliError::failure(format!("writing to standard output: {error}"))
    }
}

/// Writes `text` and a newline to standard error. A failure is ignored: there is nowhere
/// left to report it, and a closed standard error must not end a run.
pub fn diagnostic(text: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// Right-aligns the given columns of a table (numbers read best aligned on the right).
pub fn right_align(table: &mut comfy_table::Table, columns: &[usize]) {
    for &c in columns {
        if let Some(column) = table.column_mut(c) {
            column.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
}

/// A value as the JSON shows it (`null` for none), for text lines that print what the
/// JSON has.
pub fn or_null<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "null".to_string(), |v| v.to_string())
}
