//! The `hotpage` command: stress a hotpage database the way ostress hammers SQL Server, and
//! report what it waited on.

#[macro_use]
mod output;
mod check;
mod compare;
mod compare_html;
mod compare_text;
mod crashtest;
mod ctrl_c;
mod inspect;
mod recover;
mod report_html;
mod report_server;
mod report_text;
mod repro;
mod serve;
mod sql_print;
mod sql_repl;
mod sql_shell;
mod sql_split;
mod sql_tsql;
mod stress;
mod stress_url;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Exit code for a failure while running.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code for a bad command line (the same as clap's).
pub const EXIT_USAGE: u8 = 2;
/// Exit code when the path is not a hotpage database.
pub const EXIT_NOT_A_DATABASE: u8 = 3;
/// Exit code when a table or page does not exist.
pub const EXIT_NOT_FOUND: u8 = 4;
/// Exit code when another process has the database open.
pub const EXIT_LOCKED: u8 = 5;
/// Exit code when the database's format is not this binary's: written by a newer hotpage,
/// or by an older one whose pages it cannot read.
pub const EXIT_FORMAT_TOO_NEW: u8 = 6;
/// Exit code when damage was found (`check` faults, or a corrupt page met on the way).
pub const EXIT_CORRUPT: u8 = 7;
/// Exit code when standard output was closed before the command had written everything
/// (its reader, such as `head`, went away): 128 + SIGPIPE, what a shell reports for a tool
/// that SIGPIPE ended.
pub const EXIT_STDOUT_CLOSED: u8 = 141;

const EXIT_CODES_HELP: &str = "Exit codes:
  0  success
  1  failure while running (I/O error, ...)
  2  bad command line
  3  the path is not a hotpage database
  4  no such table or page
  5  the database is in use by another process
  6  the database format is newer than this binary
  7  corruption found (hotpage check, a damaged page met on the way, or a damaged log:
     see hotpage recover)
  141  standard output was closed early (e.g. piped into head): the command stopped there";

#[derive(Parser, Debug)]
#[command(
    name = "hotpage",
    version,
    about = "Stress, inspect and check a hotpage database: the last-page insert problem, measured",
    long_about = "hotpage reproduces the last-page insert contention that SQL Server, PostgreSQL \
and MySQL suffer when many sessions insert into a table whose key grows by one, on its own \
embedded storage engine, and shows where the time goes (wait statistics, hottest pages, index \
shape).\n\nStart with:\n  hotpage repro all\n  hotpage stress --design identity --sessions 64 --rows 20000\n  \
hotpage stress --design guid --sessions 64 --rows 20000\n  \
hotpage inspect tables --db PATH\n  hotpage check --db PATH",
    after_help = EXIT_CODES_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Many sessions insert rows one at a time into one table; report rows/s and waits.
    Stress(stress::StressArgs),
    /// Reproduce the seed articles' experiments (000-004 or all) here, the articles'
    /// figures beside ours as ratios; writes an HTML report with charts.
    #[command(long_about = repro::LONG_ABOUT)]
    Repro(repro::ReproArgs),
    /// Look inside a database: a page (DBCC PAGE), an index's physical stats, the last
    /// run's waits, the tables.
    Inspect(inspect::InspectArgs),
    /// Check a database's integrity (DBCC CHECKDB): page checksums, B+tree order and
    /// links, catalog against trees, memory tables' checkpoint files, row counts. Exits 7
    /// on any fault.
    Check(check::CheckArgs),
    /// Kill a stress child with SIGKILL at random moments, recover, and verify that no
    /// acknowledged row is lost, no transaction is partly visible and `check` passes.
    Crashtest(crashtest::CrashtestArgs),
    /// After log damage (an open exits 7 with "corrupt log"): show what is damaged and
    /// what a salvage would discard, or with --accept-loss salvage the database.
    Recover(recover::RecoverArgs),
    /// Run SQL (PostgreSQL dialect) on a database: -c, -f, a script on standard input, or
    /// an interactive shell.
    #[command(long_about = sql_shell::LONG_ABOUT, after_help = sql_shell::AFTER_HELP)]
    Sql(sql_shell::SqlArgs),
    /// Serve a database over PostgreSQL's wire protocol: psql, pgbench and PostgreSQL
    /// drivers connect to it.
    #[command(long_about = serve::LONG_ABOUT, after_help = serve::AFTER_HELP)]
    Serve(serve::ServeArgs),
    /// The same inserts against hotpage and the engines users pick instead (SQLite,
    /// RocksDB, fjall, PostgreSQL): medians of interleaved rounds, and hotpage ÷ the best peer.
    #[command(after_help = compare::AFTER_HELP)]
    Compare(compare::CompareArgs),
}

/// An error with the exit code it should end the process with.
#[derive(Debug)]
pub struct CliError {
    code: u8,
    message: String,
}

impl CliError {
    /// A bad command line: exit code 2.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    /// A failure while running: exit code 1.
    pub fn failure(message: impl Into<String>) -> CliError {
        CliError {
            code: EXIT_FAILURE,
            message: message.into(),
        }
    }

    /// Standard output is a pipe whose reader has gone: end quietly (exit code 141, no
    /// message), as a tool that SIGPIPE ends.
    pub fn stdout_closed() -> CliError {
        CliError {
            code: EXIT_STDOUT_CLOSED,
            message: String::new(),
        }
    }

    /// An error with an explicit exit code.
    pub fn new(code: u8, message: impl Into<String>) -> CliError {
        CliError {
            code,
            message: message.into(),
        }
    }
}

/// The exit code an engine error deserves.
pub fn exit_code(error: &hotpage::Error) -> u8 {
    use hotpage::Error as E;
    match error {
        E::NotADatabase { .. } => EXIT_NOT_A_DATABASE,
        E::NoSuchTable(_) => EXIT_NOT_FOUND,
        E::Locked { .. } => EXIT_LOCKED,
        E::FormatTooNew { .. } | E::FormatTooOld { .. } => EXIT_FORMAT_TOO_NEW,
        E::CorruptPage { .. }
        | E::CorruptFile { .. }
        | E::CorruptLog { .. }
        | E::DamagedDatabase { .. }
        | E::RowsMissing { .. } => EXIT_CORRUPT,
        // A stop that damage caused (the advice says to restore, not to reopen).
        E::Stopped { cause, .. } if cause.kind == std::io::ErrorKind::InvalidData => EXIT_CORRUPT,
        _ => EXIT_FAILURE,
    }
}

impl From<anyhow::Error> for CliError {
    fn from(error: anyhow::Error) -> CliError {
        let code = error
            .chain()
            .find_map(|cause| cause.downcast_ref::<hotpage::Error>())
            .map_or(EXIT_FAILURE, exit_code);
        let mut message = one_line(&error);
        if error.chain().any(|cause| {
            matches!(
                cause.downcast_ref(),
                Some(hotpage::Error::CorruptLog { .. })
            )
        }) {
            message.push_str(
                "; 'hotpage recover --db <database>' shows what a salvage would keep and discard",
            );
        }
        CliError::new(code, message)
    }
}

/// An error's context chain joined on one line, outermost first. A cause that its outer
/// message already ends with is left out: the engine's I/O errors say their OS error
/// themselves, and anyhow's chain would say it again.
fn one_line(error: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if message.ends_with(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

/// Opens an existing database for inspection or checking (never creates one).
pub fn open_existing(path: &std::path::Path) -> Result<hotpage::Database, CliError> {
    use anyhow::Context;
    let db = hotpage::Database::open(path, read_only_options())
        .with_context(|| format!("cannot open database {}", path.display()))?;
    warn_rows_missing(&db);
    Ok(db)
}

/// How `check` and `inspect` open a database.
pub fn read_only_options() -> hotpage::Options {
    hotpage::Options {
        pool_bytes: 8 << 20,
        create_if_missing: false,
        // Recovery of a crashed database runs in memory: inspecting never changes a byte.
        read_only: true,
        ..hotpage::Options::default()
    }
}

/// Says on standard error which tables recovery found short of the rows the last
/// checkpoint had counted (`RecoveryReport::rows_missing`): the database opens, and every
/// whole scan of such a table fails, but a user who only inserts would not see it.
pub fn warn_rows_missing(db: &hotpage::Database) {
    for missing in &db.recovery_report().rows_missing {
        errln!(
            "warning: table {}: recovery found {} rows, but the last checkpoint had counted {} (rows are never deleted: a page was already stale, a lost or misdirected write, when the database stopped); whole-table scans and `hotpage check` report it; restore from a backup",
            missing.table,
            missing.found,
            missing.counted
        );
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            use clap::error::ErrorKind;
            if matches!(
                error.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = error.print();
                return if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    ExitCode::from(EXIT_USAGE)
                } else {
                    ExitCode::SUCCESS
                };
            }
            // Clap's first paragraph as one line (the line after "required arguments were
            // not provided:" names them; the one after an invalid value lists the possible
            // ones, or a tip for a negative number), and a pointer to --help.
            let rendered = error.render().to_string();
            let paragraph: Vec<&str> = rendered
                .lines()
                .map(str::trim)
                .take_while(|line| !line.is_empty())
                .collect();
            let first = match paragraph.join(" ") {
                joined if joined.is_empty() => "error: bad arguments".to_string(),
                joined => joined,
            };
            errln!("{first} (see 'hotpage --help')");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let result = match cli.command {
        Command::Stress(args) => stress::run(&args),
        Command::Repro(args) => repro::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Crashtest(args) => crashtest::run(&args),
        Command::Recover(args) => recover::run(&args),
        Command::Sql(args) => sql_shell::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Compare(args) => compare::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            if error.code != EXIT_STDOUT_CLOSED {
                errln!("error: {}", error.message);
            }
            ExitCode::from(error.code)
        }
    }
}
