//! `hotpage sql`: SQL (PostgreSQL dialect, through `hotpage_sql`) on a database, from
//! `-c`, `-f`, a script on standard input, or an interactive shell as psql's.
//!
//! The input is split into statements here ([`crate::sql_split`]) and each is executed on
//! its own, so its results print as soon as it ends and an error's position is within the
//! statement shown under it. The shell itself is [`crate::sql_repl`].

use crate::ctrl_c::CtrlC;
use crate::sql_print::{self, Format};
use crate::sql_split::{self, Splitter, Statement};
use crate::{CliError, sql_repl};
use anyhow::Context;
use clap::{ArgMatches, FromArgMatches};
use hotpage::{Database, Durability, Options};
use hotpage_sql::{
    BatchObserver, ColumnInfo, SqlDatabase, SqlError, SqlSession, SqlType, StatementResult,
    TxnStatus, Value,
};
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Collects a statement's results for printing, and writes what can go out as it is
/// made: `COPY … TO STDOUT`'s records (without the `COPY n` tag, as psql) and, with
/// `--csv`, a query's rows. So an export of any size takes one chunk of memory.
struct ShellObserver {
    format: Format,
    results: Vec<StatementResult>,
    /// The running statement's output is already written (COPY TO STDOUT, or CSV rows):
    /// its result is not printed again.
    written: bool,
    /// Writing standard output failed (a closed pipe): the statement stopped, and the
    /// shell ends with this error.
    output_error: Option<CliError>,
}

impl ShellObserver {
    fn new(format: Format) -> ShellObserver {
        ShellObserver {
            format,
            results: Vec::new(),
            written: false,
            output_error: None,
        }
    }

    /// Keeps a failed write's error for the shell, and stops the statement.
    fn output(&mut self, written: Result<(), CliError>) -> Result<(), SqlError> {
        written.map_err(|error| {
            self.output_error = Some(error);
            SqlError::new(
                hotpage_sql::sqlstate::IO_ERROR,
                "could not write to standard output",
            )
        })
    }
}

impl BatchObserver for ShellObserver {
    fn before_statement(&mut self, _: usize) -> Result<(), SqlError> {
        Ok(())
    }

    fn statement_done(&mut self, result: StatementResult) -> Result<(), SqlError> {
        if !std::mem::take(&mut self.written) {
            self.results.push(result);
        }
        Ok(())
    }

    fn streams_rows(&self) -> bool {
        self.format == Format::Csv
    }

    fn statement_rows(
        &mut self,
        columns: &[ColumnInfo],
        rows: Vec<Vec<Value>>,
    ) -> Result<(), SqlError> {
        let header = if self.written {
            Ok(())
        } else {
            self.written = true;
            sql_print::print_csv_header(columns)
        };
        let written = header.and_then(|()| sql_print::print_csv_rows(&rows, columns));
        self.output(written)
    }

    fn copy_out_start(&mut self, _columns: usize) -> Result<(), SqlError> {
        self.written = true;
        Ok(())
    }

    /// The chunk's records in one write.
    fn copy_out_records(&mut self, records: Vec<Vec<u8>>) -> Result<(), SqlError> {
        let written = crate::output::bytes(&records.concat());
        self.output(written)
    }

    fn copy_out_end(&mut self) -> Result<(), SqlError> {
        let flushed = std::io::stdout()
            .lock()
            .flush()
            .map_err(crate::output::stdout_error);
        self.output(flushed)
    }
}

/// Exit code when a statement of `-c`, `-f` or a script failed (psql's `ON_ERROR_STOP`
/// exits 3 too). The database was still closed cleanly, and the statements before the
/// failed one kept their effects.
pub const EXIT_SQL_ERROR: u8 = 3;

/// `hotpage sql --help`, after the one-line summary.
pub const LONG_ABOUT: &str = "Run SQL (PostgreSQL dialect) on a hotpage database, as psql does.

The database is opened, or created if missing, and closed cleanly at the end. -c and -f
run in the order given, each statement on its own. Without them, standard input is read:
a terminal gets an interactive shell; anything else (a pipe, a file) is run as one script.
With -c, -f or a script, the first error stops the run: what ran before it stays done,
and the exit code is 3.

Output (standard output):
  default  an aligned table per statement that returns rows, then (N rows); NULL is
           empty. Other statements print their tag: CREATE TABLE, INSERT 0 1.
  --csv    RFC 4180 CSV: a header line, then a line per row, for each statement that
           returns rows (others print nothing). A field with a comma, quote or line break
           is quoted; NULL is an empty field, the empty string is \"\".
  --json   one JSON document per statement, each on its own line:
           {\"tag\":\"SELECT 2\",\"columns\":[{\"name\":\"id\",\"type\":\"bigint\"}],\"rows\":[[\"1\"],[null]]}
           values are PostgreSQL's text of them (strings) or null; columns and rows are
           empty for statements that return no rows.

Errors go to standard error, as psql shows them:
  ERROR 42703: column \"nope\" does not exist
  LINE 1: SELECT nope FROM t;
                 ^
  then DETAIL: and HINT: lines when the error has them.

The shell: the prompt is hotpage=> , and hotpage-> while a statement is unfinished (no ;
yet); =*> in a transaction, =!> in a failed one (ROLLBACK ends it). An error is printed
and the shell goes on. Ctrl-C clears the input; while a statement runs it cancels the
statement (57014). Ctrl-D quits. History is kept in
~/.hotpage_sql_history, or in the file $HOTPAGE_SQL_HISTORY names. Backslash commands
(at the start of a line; in scripts too):
  \\q              quit
  \\?              help
  \\dt             list tables: name, design, rows (the engine's count: a session's
                  inserts are counted every 1024 rows and when it ends)
  \\d NAME         a table's columns and types
  \\timing [on|off] print each statement's time (toggles without an argument)";

/// `hotpage sql --help`'s closing part.
pub const AFTER_HELP: &str = "Examples:
  hotpage sql --db ./mydb -c \"CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, status text DEFAULT 'CREATED')\" \\
      -c \"INSERT INTO t (status) VALUES ('A'), ('B') RETURNING *\" -c \"SELECT * FROM t\"
  echo 'SELECT * FROM hotpage_wait_stats;' | hotpage sql --db ./mydb --json

Exit codes: 0 success; 1 failure (I/O, a file that cannot be read); 2 bad command line;
3 a statement failed (or the path is not a hotpage database); 5 the database is in use
by another process; 6 its format is newer than this binary; 7 corruption found.";

/// The options of `hotpage sql`.
#[derive(clap::Args, Debug, Clone)]
pub struct SqlOptions {
    /// Database directory (created if missing)
    #[arg(long)]
    pub db: PathBuf,
    /// Run this text: SQL statements separated by ';', or one backslash command. Repeat
    /// it for more; -c and -f run in the order given
    #[arg(short = 'c', long = "command", value_name = "SQL")]
    pub command: Vec<String>,
    /// Run the SQL script in this file ('-' reads standard input). Repeatable
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: Vec<PathBuf>,
    /// Print one JSON document per statement, each on its own line (see above)
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print the rows of each statement that returns rows as RFC 4180 CSV with a header
    #[arg(long)]
    pub csv: bool,
    #[command(flatten)]
    pub open: OpenArgs,
    /// The SQL dialect: postgres, or tsql (SQL Server's: batches split at GO lines,
    /// variables, WHILE/IF, T-SQL CREATE TABLE onto the designs; a script from -c, -f or
    /// standard input, no interactive shell)
    #[arg(long, default_value = "postgres", value_parser = ["postgres", "tsql"])]
    pub dialect: String,
}

/// Where one piece of input comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Command(String),
    File(PathBuf),
}

/// The options, and `-c` and `-f` in the order they were given (clap keeps each option's
/// values apart, so their order comes from the values' indices on the command line).
#[derive(Clone, Debug)]
pub struct SqlArgs {
    pub options: SqlOptions,
    pub sources: Vec<Source>,
}

impl FromArgMatches for SqlArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let options = SqlOptions::from_arg_matches(matches)?;
        let mut sources: Vec<(usize, Source)> = Vec::new();
        if let (Some(values), Some(indices)) = (
            matches.get_many::<String>("command"),
            matches.indices_of("command"),
        ) {
            sources.extend(indices.zip(values.cloned().map(Source::Command)));
        }
        if let (Some(values), Some(indices)) = (
            matches.get_many::<PathBuf>("file"),
            matches.indices_of("file"),
        ) {
            sources.extend(indices.zip(values.cloned().map(Source::File)));
        }
        sources.sort_by_key(|(index, _)| *index);
        Ok(SqlArgs {
            options,
            sources: sources.into_iter().map(|(_, source)| source).collect(),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = SqlArgs::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for SqlArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        SqlOptions::augment_args(cmd)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        SqlOptions::augment_args_for_update(cmd)
    }
}

/// A script to run and the name its errors give it.
struct Script {
    label: String,
    text: String,
}

/// Runs `hotpage sql`.
pub fn run(args: &SqlArgs) -> Result<(), CliError> {
    let options = engine_options(&args.options)?;
    let format = match (args.options.json, args.options.csv) {
        (true, _) => Format::Json,
        (_, true) => Format::Csv,
        _ => Format::Table,
    };
    // Read every script first: a missing file leaves no new database behind.
    let scripts = read_scripts(&args.sources)?;
    let path = &args.options.db;
    let db = Arc::new(
        Database::open(path, options)
            .with_context(|| format!("cannot open database {}", path.display()))?,
    );
    crate::warn_rows_missing(&db);
    let ctrl_c = CtrlC::install();
    let outcome = SqlDatabase::new(Arc::clone(&db))
        .map_err(|e| CliError::failure(format!("cannot read the SQL catalog: {e}")))
        .and_then(|sql| {
            if args.options.dialect == "tsql" {
                return run_tsql(&sql, scripts.as_deref(), format, &ctrl_c);
            }
            let mut runner = Runner::new(&sql, format, scripts.is_some(), ctrl_c);
            match &scripts {
                Some(scripts) => run_scripts(&mut runner, scripts),
                None => sql_repl::run(&mut runner, &path.display().to_string()),
            }
        });
    // Every session and SQL handle is dropped by now: the engine refuses to close under
    // open handles.
    let closed = close(db);
    outcome.and(closed)
}

/// `--dialect tsql`: the scripts, each as one T-SQL script of GO-separated batches.
fn run_tsql(
    sql: &Arc<SqlDatabase>,
    scripts: Option<&[Script]>,
    format: Format,
    ctrl_c: &CtrlC,
) -> Result<(), CliError> {
    let Some(scripts) = scripts else {
        return Err(CliError::usage(
            "--dialect tsql runs a script (-c, -f or standard input); the interactive shell is PostgreSQL-only",
        ));
    };
    let scripts: Vec<(String, String)> = scripts
        .iter()
        .map(|s| (s.label.clone(), s.text.clone()))
        .collect();
    crate::sql_tsql::run_scripts(sql, &scripts, format, ctrl_c)
}

/// Checks the options and turns them into the engine's.
fn engine_options(args: &SqlOptions) -> Result<Options, CliError> {
    open_options(&args.open)
}

/// How `hotpage sql` and `hotpage serve` open their database.
#[derive(clap::Args, Debug, Clone)]
pub struct OpenArgs {
    /// When a commit returns: sync (after an fdatasync, group commit), async (at once,
    /// durable within 10 ms) or none (no log: a crash empties the tables)
    #[arg(long, default_value = "sync")]
    pub durability: String,
    /// Buffer-pool size in MiB (1 to 1048576)
    #[arg(long, default_value_t = 256)]
    pub pool_mib: usize,
    /// The most memory, in MiB, that all open transactions' rows may take together before
    /// they commit (1 to 1048576). A transaction's rows wait in memory until COMMIT; an
    /// insert past this is refused with SQLSTATE 53200 and the transaction stays open. A
    /// row costs its bytes plus about 230 bytes of bookkeeping (530 with a primary key), so
    /// the default holds about 3 million small rows in one transaction, and `pgbench -i -s
    /// 16` (its ADD PRIMARY KEY holds every account with its key)
    #[arg(long, default_value_t = TXN_MIB_DEFAULT)]
    pub txn_mib: usize,
}

/// `--txn-mib`'s default: the engine's.
const TXN_MIB_DEFAULT: usize = hotpage::limits::TXN_MEMORY_BYTES_DEFAULT >> 20;
/// The largest `--pool-mib` and `--txn-mib` (1 TiB).
const OPEN_MIB_MAX: usize = 1 << 20;

/// The engine's options for a database that SQL opens (created if missing), from
/// `--durability`, `--pool-mib` and `--txn-mib` (`hotpage sql` and `hotpage serve`).
pub fn open_options(args: &OpenArgs) -> Result<Options, CliError> {
    let durability = Durability::parse(&args.durability).ok_or_else(|| {
        CliError::usage(format!(
            "unknown durability '{}'; choose sync, async or none",
            args.durability
        ))
    })?;
    for (flag, mib) in [("--pool-mib", args.pool_mib), ("--txn-mib", args.txn_mib)] {
        if !(1..=OPEN_MIB_MAX).contains(&mib) {
            return Err(CliError::usage(format!(
                "{flag} must be from 1 to {OPEN_MIB_MAX}, not {mib}"
            )));
        }
    }
    hotpage::limits::validate_pool_bytes(args.pool_mib << 20).map_err(CliError::usage)?;
    Ok(Options {
        pool_bytes: args.pool_mib << 20,
        txn_memory_bytes_max: args.txn_mib << 20,
        create_if_missing: true,
        durability,
        ..Options::default()
    })
}

/// The scripts of `-c` and `-f` in order; a script from standard input when there are
/// none and it is not a terminal; `None` for the interactive shell.
fn read_scripts(sources: &[Source]) -> Result<Option<Vec<Script>>, CliError> {
    if sources.is_empty() {
        if std::io::stdin().is_terminal() {
            return Ok(None);
        }
        return Ok(Some(vec![read_stdin()?]));
    }
    let mut scripts = Vec::new();
    let mut commands = 0;
    for source in sources {
        scripts.push(match source {
            Source::Command(text) => {
                commands += 1;
                Script {
                    label: format!("-c {commands}"),
                    text: text.clone(),
                }
            }
            Source::File(path) if path.as_os_str() == "-" => read_stdin()?,
            Source::File(path) => Script {
                label: path.display().to_string(),
                text: std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?,
            },
        });
    }
    Ok(Some(scripts))
}

fn read_stdin() -> Result<Script, CliError> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("cannot read standard input")?;
    Ok(Script {
        label: "standard input".to_string(),
        text,
    })
}

/// Closes the database: the last handle must be ours.
pub fn close(db: Arc<Database>) -> Result<(), CliError> {
    let db = Arc::try_unwrap(db)
        .map_err(|_| CliError::failure("cannot close the database: a handle is still open"))?;
    db.close().context("closing the database")?;
    Ok(())
}

/// Runs each script in turn, stopping at the first error.
fn run_scripts(runner: &mut Runner, scripts: &[Script]) -> Result<(), CliError> {
    for script in scripts {
        runner.start_input();
        let mut outcome = Outcome::Ok;
        for line in script.text.lines() {
            outcome = runner.feed_line(line)?;
            if outcome != Outcome::Ok {
                break;
            }
        }
        if outcome == Outcome::Ok {
            outcome = runner.end_input()?;
        }
        match outcome {
            Outcome::Ok => {}
            Outcome::Quit => return Ok(()),
            Outcome::Failed { line } => {
                return Err(CliError::new(
                    EXIT_SQL_ERROR,
                    format!(
                        "stopped at the first error, at line {line} of {}",
                        script.label
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// What feeding input came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// `\q`.
    Quit,
    /// A statement or command failed; `line` is where it starts in its input.
    Failed {
        line: usize,
    },
}

/// Runs input line by line: SQL statements as they are completed, and backslash commands.
pub struct Runner {
    sql: Arc<SqlDatabase>,
    session: SqlSession,
    format: Format,
    /// Print each statement's elapsed time (`\timing`).
    timing: bool,
    /// Stop at the first error (scripts), or go on (the shell).
    stop_on_error: bool,
    splitter: Splitter,
    /// Ctrl-C cancels the running statement.
    ctrl_c: CtrlC,
}

impl Runner {
    pub fn new(
        sql: &Arc<SqlDatabase>,
        format: Format,
        stop_on_error: bool,
        ctrl_c: CtrlC,
    ) -> Runner {
        let mut session = sql.session();
        session.set_cancel_flag(ctrl_c.cancel_flag());
        Runner {
            sql: Arc::clone(sql),
            session,
            ctrl_c,
            format,
            timing: false,
            stop_on_error,
            splitter: Splitter::new(),
        }
    }

    /// Starts a new input (a script): line numbers count from 1 again.
    pub fn start_input(&mut self) {
        self.splitter = Splitter::new();
    }

    /// Runs the unfinished statement at the end of an input.
    pub fn end_input(&mut self) -> Result<Outcome, CliError> {
        match self.splitter.finish() {
            Some(statement) => self.execute(&statement),
            None => Ok(Outcome::Ok),
        }
    }

    /// Forgets the unfinished statement (Ctrl-C in the shell).
    pub fn clear_input(&mut self) {
        self.splitter.clear();
    }

    /// The shell's prompt, psql's: `=` or `-` (a statement unfinished), then `*` in a
    /// transaction or `!` in a failed one.
    pub fn prompt(&self) -> String {
        let state = if self.splitter.is_idle() { '=' } else { '-' };
        let txn = match self.session.txn_status() {
            TxnStatus::Idle => "",
            TxnStatus::InTransaction => "*",
            TxnStatus::Failed => "!",
        };
        format!("hotpage{state}{txn}> ")
    }

    /// Takes one line: a backslash command, or SQL that may complete statements, which
    /// run at once.
    pub fn feed_line(&mut self, line: &str) -> Result<Outcome, CliError> {
        let trimmed = line.trim();
        if self.splitter.in_code() && trimmed.starts_with('\\') {
            // The line is not SQL, but it counts for the line numbers of what follows.
            let line_no = self.splitter.skip_line();
            let outcome = self.backslash(trimmed)?;
            return Ok(match outcome {
                Outcome::Failed { .. } => Outcome::Failed { line: line_no },
                other => other,
            });
        }
        let mut outcome = Outcome::Ok;
        for statement in self.splitter.push_line(line) {
            let result = self.execute(&statement)?;
            if outcome == Outcome::Ok {
                outcome = result;
            }
            if outcome != Outcome::Ok && self.stop_on_error {
                break;
            }
        }
        Ok(outcome)
    }

    /// Executes one statement and prints its results, or its error on standard error.
    fn execute(&mut self, statement: &Statement) -> Result<Outcome, CliError> {
        let flat = sql_split::flatten(&statement.text);
        let started = Instant::now();
        let session = &mut self.session;
        let mut observer = ShellObserver::new(self.format);
        let error = self
            .ctrl_c
            .while_running(|| session.execute_batch_observed(&flat, &mut observer));
        let elapsed = started.elapsed();
        if let Some(output_error) = observer.output_error {
            return Err(output_error);
        }
        let results = observer.results;
        for result in &results {
            sql_print::print_result(result, self.format)?;
        }
        if self.timing {
            outln!("Time: {:.3} ms", elapsed.as_secs_f64() * 1000.0)?;
        }
        Ok(match error {
            None => Outcome::Ok,
            Some(error) => {
                sql_print::print_error(&error, &statement.text);
                Outcome::Failed {
                    line: statement.line,
                }
            }
        })
    }

    /// A backslash command.
    fn backslash(&mut self, line: &str) -> Result<Outcome, CliError> {
        let mut words = line.split_whitespace();
        let command = words.next().unwrap_or_default();
        // psql takes `\d t;` too.
        let argument = words.next().map(|a| a.trim_end_matches(';'));
        match (command, argument) {
            ("\\q", _) => return Ok(Outcome::Quit),
            ("\\?", _) => outln!("{}", sql_repl::BACKSLASH_HELP)?,
            ("\\dt", _) | ("\\d", None) => self.list_tables()?,
            ("\\d", Some(name)) => return self.describe(name),
            ("\\timing", setting) => {
                self.timing = match setting {
                    Some("on") => true,
                    Some("off") => false,
                    _ => !self.timing,
                };
                outln!("Timing is {}.", if self.timing { "on" } else { "off" })?;
            }
            _ => {
                errln!("invalid command {command}; try \\? for help");
                return Ok(Outcome::Failed { line: 0 });
            }
        }
        Ok(Outcome::Ok)
    }

    /// `\dt`: the tables, from the engine's catalog (tables made without SQL too).
    fn list_tables(&self) -> Result<(), CliError> {
        let text = |name: &str| ColumnInfo {
            name: name.to_string(),
            ty: SqlType::Text,
        };
        let tables = self.sql.engine().tables();
        let listing = StatementResult {
            tag: format!("SELECT {}", tables.len()),
            columns: vec![
                text("name"),
                text("design"),
                ColumnInfo {
                    name: "rows".to_string(),
                    ty: SqlType::BigInt,
                },
            ],
            rows: tables
                .into_iter()
                .map(|t| {
                    let rows = i64::try_from(t.rows).unwrap_or(i64::MAX);
                    vec![Value::Text(t.name), Value::Text(t.design), Value::Int(rows)]
                })
                .collect(),
        };
        sql_print::print_result(&listing, self.format)
    }

    /// `\d NAME`: the columns of a table or view, from a query that returns none of its
    /// rows. An error has no caret: the text it would point into is not the user's.
    fn describe(&mut self, name: &str) -> Result<Outcome, CliError> {
        let query = format!("SELECT * FROM {name} LIMIT 0");
        let result = match self.session.execute(&query) {
            Ok(mut results) if results.len() == 1 => results.remove(0),
            Ok(_) => {
                errln!("\\d takes one table name, not {name}");
                return Ok(Outcome::Failed { line: 0 });
            }
            Err(mut error) => {
                error.position = None;
                sql_print::print_error(&error, "");
                return Ok(Outcome::Failed { line: 0 });
            }
        };
        let text = |name: &str| ColumnInfo {
            name: name.to_string(),
            ty: SqlType::Text,
        };
        let columns = StatementResult {
            tag: format!("SELECT {}", result.columns.len()),
            columns: vec![text("column"), text("type")],
            rows: result
                .columns
                .iter()
                .map(|c| vec![Value::Text(c.name.clone()), Value::Text(c.ty.name())])
                .collect(),
        };
        if self.format == Format::Table {
            outln!("Table \"{}\"", name.trim_matches('"'))?;
        }
        sql_print::print_result(&columns, self.format)?;
        Ok(Outcome::Ok)
    }
}
