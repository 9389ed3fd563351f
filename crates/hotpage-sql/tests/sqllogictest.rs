//! Runs every `tests/slt/*.slt` file through the `sqllogictest` runner against a fresh
//! in-memory database per file; each `connection` of a file is a [`SqlSession`] of it.
//!
//! Records that show a known SQL-layer bug expect PostgreSQL's answer and are marked
//! `skipif hotpage` with a `# BUG:` comment; drop the `skipif` once the bug is fixed.
//! `HOTPAGE_SLT_KNOWN_BUGS=1 cargo test -p hotpage-sql --test sqllogictest` runs those
//! records too (and fails while any of the bugs is left).
//!
//! Every record runs even after one fails: the test fails at the end, listing each failed
//! record with its file and line.
//!
//! `tests/slt_tsql/*.slt` run the same way in T-SQL: each record is one batch of a
//! [`TsqlSession`] (no `GO` lines), whose last result is what it answers.

use hotpage::{Database, MemStorage, Options, Storage};
use hotpage_sql::{
    SqlDatabase, SqlError, SqlSession, SqlType, StatementResult, TsqlOutput, TsqlSession,
};
use sqllogictest::{DB, DBOutput, DefaultColumnType, Record, RecordOutput, Runner};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One connection: a session of the file's database.
struct Hotpage {
    session: SqlSession,
}

/// A fresh in-memory database.
fn open_database() -> Arc<SqlDatabase> {
    let mem: Arc<dyn Storage> = MemStorage::new(7);
    let engine = Database::open_with_storage(mem, Path::new("m"), Options::default())
        .expect("open an in-memory database");
    SqlDatabase::new(Arc::new(engine)).expect("SQL over the database")
}

/// The column type letter sqllogictest's `query` line declares.
fn column_type(ty: &SqlType) -> DefaultColumnType {
    if ty.is_integer() {
        DefaultColumnType::Integer
    } else if ty.is_float() || ty.is_numeric() {
        DefaultColumnType::FloatingPoint
    } else {
        DefaultColumnType::Text
    }
}

/// A value as the .slt files spell it: PostgreSQL's text output, `NULL`, and `(empty)` for
/// the empty string (sqllogictest's convention, since an empty field cannot be seen).
fn cell(value: &hotpage_sql::Value, ty: &SqlType) -> String {
    match value.to_pg_text(Some(ty)) {
        None => "NULL".to_string(),
        Some(text) if text.is_empty() => "(empty)".to_string(),
        Some(text) => text,
    }
}

fn output(result: StatementResult) -> DBOutput<DefaultColumnType> {
    if !result.has_rows() {
        // `INSERT 0 3` and `SELECT 3` count rows; other tags count none.
        let count = result
            .tag
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        return DBOutput::StatementComplete(count);
    }
    let types = result.columns.iter().map(|c| column_type(&c.ty)).collect();
    let rows = result
        .rows
        .iter()
        .map(|row| {
            row.iter()
                .zip(&result.columns)
                .map(|(v, c)| cell(v, &c.ty))
                .collect()
        })
        .collect();
    DBOutput::Rows { types, rows }
}

impl DB for Hotpage {
    // SqlError's Display is `ERROR 23505: message (DETAIL: …)`, so an error regex can
    // name the SQLSTATE; `statement error (23505)` matches it through error_sql_state.
    type Error = SqlError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlError> {
        let mut results = self.session.execute(sql)?;
        // A record is one statement; the last result is what it answers.
        Ok(results.pop().map_or(DBOutput::StatementComplete(0), output))
    }

    fn engine_name(&self) -> &str {
        // `HOTPAGE_SLT_KNOWN_BUGS=1` runs the `skipif hotpage` records too, to see which
        // known bugs are still there.
        if std::env::var_os("HOTPAGE_SLT_KNOWN_BUGS").is_some() {
            "hotpage-with-known-bugs"
        } else {
            "hotpage"
        }
    }

    fn error_sql_state(err: &SqlError) -> Option<String> {
        Some(err.sqlstate.to_string())
    }
}

/// One T-SQL connection: a T-SQL session of the file's database.
struct Tsql {
    session: TsqlSession,
}

impl DB for Tsql {
    type Error = SqlError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, batch: &str) -> Result<DBOutput<DefaultColumnType>, SqlError> {
        let (outputs, error) = self.session.execute_batch(batch);
        if let Some(error) = error {
            return Err(error);
        }
        // A record is one batch; its last result is what it answers (PRINTs are not).
        let last = outputs.into_iter().rev().find_map(|o| match o {
            TsqlOutput::Result(result) => Some(result),
            TsqlOutput::Print(_) => None,
        });
        Ok(last.map_or(DBOutput::StatementComplete(0), output))
    }

    fn engine_name(&self) -> &str {
        "hotpage"
    }

    fn error_sql_state(err: &SqlError) -> Option<String> {
        Some(err.sqlstate.to_string())
    }
}

fn slt_files() -> Vec<PathBuf> {
    slt_files_in("tests/slt")
}

fn slt_files_in(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    files
}

/// What one file's run came to.
struct FileRun {
    /// Statements and queries, skipped ones included.
    records: usize,
    /// Those skipped on hotpage (`skipif hotpage`: known bugs).
    skipped: usize,
    /// Each failed record's description.
    failures: Vec<String>,
}

/// Runs one file record by record, on after a failure.
fn run_file(path: &Path) -> FileRun {
    // Each `connection NAME` of the file is another session of the same database.
    let sql = open_database();
    let runner = Runner::new(move || {
        let session = sql.session();
        async move { Ok(Hotpage { session }) }
    });
    run_records(path, runner)
}

/// [`run_file`] in T-SQL.
fn run_tsql_file(path: &Path) -> FileRun {
    let sql = open_database();
    let runner = Runner::new(move || {
        let session = TsqlSession::new(sql.session());
        async move { Ok(Tsql { session }) }
    });
    run_records(path, runner)
}

fn run_records<D, M>(path: &Path, mut runner: Runner<D, M>) -> FileRun
where
    D: sqllogictest::AsyncDB<ColumnType = DefaultColumnType>,
    M: sqllogictest::MakeConnection<Conn = D>,
{
    let records = sqllogictest::parse_file::<DefaultColumnType>(path)
        .unwrap_or_else(|e| panic!("parse {}: {e}", path.display()));
    runner.with_column_validator(sqllogictest::strict_column_validator);
    let mut run = FileRun {
        records: 0,
        skipped: 0,
        failures: Vec::new(),
    };
    for record in records {
        if let Record::Halt { .. } = record {
            break;
        }
        let counts = matches!(record, Record::Statement { .. } | Record::Query { .. });
        run.records += usize::from(counts);
        match runner.run(record) {
            Ok(RecordOutput::Nothing) if counts => run.skipped += 1,
            Ok(_) => {}
            Err(e) => run.failures.push(e.display(false).to_string()),
        }
    }
    run
}

#[test]
fn slt_files_pass() {
    check_files(&slt_files(), run_file);
}

#[test]
fn tsql_slt_files_pass() {
    check_files(&slt_files_in("tests/slt_tsql"), run_tsql_file);
}

fn check_files(files: &[PathBuf], run_file: fn(&Path) -> FileRun) {
    assert!(!files.is_empty(), "no .slt files");
    let mut failures = Vec::new();
    for file in files {
        let run = run_file(file);
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        println!(
            "{name}: {} records, {} skipped (known bugs), {} failed",
            run.records,
            run.skipped,
            run.failures.len()
        );
        assert!(run.records > run.skipped, "{name} runs no record");
        failures.extend(run.failures);
    }
    assert!(
        failures.is_empty(),
        "{} sqllogictest record(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
