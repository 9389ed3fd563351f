//! The interactive shell of `hotpage sql`: rustyline reads lines (editing, history; with
//! its `buffer-redux` feature, so that lines that arrive together, a paste into a terminal
//! without bracketed paste, are all read: without it each line's reader dropped what it had
//! read past its line, and the next statements were lost without a word), the
//! [`Runner`] runs them. An error is printed and the shell goes on.

use crate::CliError;
use crate::sql_shell::{Outcome, Runner};
use rustyline::error::ReadlineError;
use rustyline::{Config, DefaultEditor};
use std::path::PathBuf;

/// What `\?` prints.
pub const BACKSLASH_HELP: &str = "SQL (PostgreSQL dialect) runs when a line ends it with ;
Backslash commands:
  \\q              quit (Ctrl-D too)
  \\?              this help
  \\dt             list tables: name, design, rows (this session's latest inserts are
                  counted every 1024 rows and when it ends)
  \\d NAME         a table's columns and types
  \\timing [on|off] print each statement's time
Ctrl-C clears the statement being typed, or cancels the one running.
System views: hotpage_wait_stats, pg_stat_activity (SELECT * FROM ...)";

/// Lines of history kept.
const HISTORY_MAX: usize = 1000;

/// The history file: `$HOTPAGE_SQL_HISTORY`, else `~/.hotpage_sql_history`; none if
/// neither can be named.
fn history_path() -> Option<PathBuf> {
    match std::env::var_os("HOTPAGE_SQL_HISTORY") {
        Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
        _ => std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".hotpage_sql_history")),
    }
}

/// Runs the shell until `\q`, Ctrl-D or end of input.
pub fn run(runner: &mut Runner, db_label: &str) -> Result<(), CliError> {
    let config = Config::builder()
        .max_history_size(HISTORY_MAX)
        .map_err(|e| CliError::failure(format!("setting up the line editor: {e}")))?
        .auto_add_history(false)
        .build();
    let mut editor = DefaultEditor::with_config(config)
        .map_err(|e| CliError::failure(format!("setting up the line editor: {e}")))?;
    let history = history_path();
    if let Some(path) = &history {
        match editor.load_history(path) {
            Ok(()) => {}
            // No history yet: the first session.
            Err(ReadlineError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            // History is a convenience: the shell works without it.
            Err(e) => errln!("warning: cannot read history {}: {e}", path.display()),
        }
    }
    outln!("hotpage sql on {db_label}. Type \\? for help, \\q to quit.")?;
    let outcome = read_loop(runner, &mut editor);
    if let Some(path) = &history
        && let Err(e) = editor.save_history(path)
    {
        errln!("warning: cannot write history {}: {e}", path.display());
    }
    outcome
}

/// Reads and runs lines.
fn read_loop(runner: &mut Runner, editor: &mut DefaultEditor) -> Result<(), CliError> {
    loop {
        match editor.readline(&runner.prompt()) {
            Ok(text) => {
                if !text.trim().is_empty() {
                    // A history entry that cannot be added is no reason to stop.
                    let _ = editor.add_history_entry(text.as_str());
                }
                // A paste (bracketed) comes as one text of several lines: each is a line,
                // so that a backslash command on its own line is one, and lines count.
                for line in text.split('\n') {
                    if runner.feed_line(line.trim_end_matches('\r'))? == Outcome::Quit {
                        return Ok(());
                    }
                }
            }
            Err(ReadlineError::Interrupted) => runner.clear_input(),
            Err(ReadlineError::Eof) => {
                // End the prompt's line, so that the user's shell starts on a new one.
                outln!()?;
                return Ok(());
            }
            Err(e) => return Err(CliError::failure(format!("reading a line: {e}"))),
        }
    }
}
