//! The `hotpage` command: stress a hotpage database the way ostress hammers SQL Server, and
//! report what it waited on.

mod designs;
mod stress;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Exit code for a bad command line (the same as clap's).
pub const EXIT_USAGE: u8 = 2;
/// Exit code for a failure while running.
pub const EXIT_FAILURE: u8 = 1;

#[derive(Parser, Debug)]
#[command(
    name = "hotpage",
    version,
    about = "Stress, inspect and check a hotpage database: the last-page insert problem, measured",
    long_about = "hotpage reproduces the last-page insert contention that SQL Server, PostgreSQL \
and MySQL suffer when many sessions insert into a table whose key grows by one, on its own \
embedded storage engine, and shows where the time goes (wait statistics, hottest pages, index \
shape).\n\nStart with:\n  hotpage stress --design identity --sessions 64 --rows 20000\n  \
hotpage stress --design guid --sessions 64 --rows 20000"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Many sessions insert rows one at a time into one table; report rows/s and waits.
    Stress(stress::StressArgs),
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
}

impl From<anyhow::Error> for CliError {
    fn from(error: anyhow::Error) -> CliError {
        // One line: the context chain joined, outermost first.
        CliError::failure(format!("{error:#}"))
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
            // Keep clap's first line ("error: ...") and point at --help: one clear line.
            let rendered = error.render().to_string();
            let first = rendered.lines().next().unwrap_or("error: bad arguments");
            eprintln!("{first} (see 'hotpage --help')");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let result = match cli.command {
        Command::Stress(args) => stress::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", error.message);
            ExitCode::from(error.code)
        }
    }
}
