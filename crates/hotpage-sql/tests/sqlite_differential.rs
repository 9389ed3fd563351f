//! Differential test: the same rows in hotpage and in SQLite (rusqlite, bundled), the same
//! queries from the SQL both speak, the answers compared row for row.
//!
//! The rows (6,000 of them) come from a fixed-seed LCG: keys
//! spread over negatives and positives, NULLs in every non-key column, many duplicates in
//! the non-key columns. hotpage holds them four ways: a user-key table, the same under
//! `design = 'hash-partition'` and `design = 'memory'`, and an identity table; SQLite
//! holds them in one table with the same column affinities.
//!
//! Where PostgreSQL and SQLite legitimately differ, the queries are written so that they
//! agree, or the answers are normalised:
//! - avg() of integers is numeric in PostgreSQL and real in SQLite, a*1.5 is numeric vs
//!   real: numbers are compared as numbers (floats with a relative tolerance);
//! - booleans are `t`/`f` in PostgreSQL and 1/0 in SQLite: compared as 1/0;
//! - NULLs sort last ascending in PostgreSQL and first in SQLite: every ORDER BY on a
//!   nullable column says NULLS FIRST/LAST;
//! - LIKE ignores ASCII case in SQLite: `PRAGMA case_sensitive_like = ON`;
//! - OFFSET needs a LIMIT in SQLite: always both;
//! - x/0 is NULL in SQLite and 22012 in PostgreSQL, and integer overflow differs: no query
//!   divides by a column or comes near i64's range;
//! - count(DISTINCT …) is not in hotpage yet: left out.
//!
//! Results are compared in order where ORDER BY fixes it, else as sorted multisets.

use hotpage::{Database, MemStorage, Options, Storage};
use hotpage_sql::{SqlDatabase, SqlSession, Value};
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use rusqlite::Connection;
use rusqlite::types::ValueRef;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

/// Rows in each table: more than hotpage's scan batch (4,096), so scans resume.
const ROWS: usize = 6_000;

/// Rows per INSERT statement.
const BATCH: usize = 500;

/// A tiny deterministic generator (Knuth's MMIX LCG, high bits out).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// Uniform in `lo..hi` (small ranges: the modulo bias does not matter here).
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo) as u64) as i64
    }

    /// True one time in `n`.
    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }
}

/// One generated row: (id, a, b, c).
#[derive(Clone)]
struct Row {
    id: i64,
    a: Option<i64>,
    b: Option<&'static str>,
    c: Option<f64>,
}

const WORDS: &[&str] = &[
    "apple",
    "Apple",
    "banana",
    "cherry",
    "date",
    "",
    "fig",
    "grape",
    "kiwi",
    "lemon",
    "mango",
    "O'Brien",
    "a",
    "ab",
    "abc",
    "b",
    "zebra",
    "Zulu",
    "apple pie",
    "100",
];

fn generate_rows() -> Vec<Row> {
    let mut rng = Lcg(0x5eed_1e55_0d15_ea5e);
    let mut seen = HashSet::new();
    let mut rows = Vec::with_capacity(ROWS);
    while rows.len() < ROWS {
        let id = rng.range(-20_000, 20_000);
        if !seen.insert(id) {
            continue;
        }
        let a = (!rng.one_in(10)).then(|| rng.range(-50, 51));
        let b = (!rng.one_in(10)).then(|| WORDS[rng.range(0, WORDS.len() as i64) as usize]);
        // Quarters are exact in binary, so both sides read the same double.
        let c = (!rng.one_in(10)).then(|| rng.range(-40_000, 40_000) as f64 / 4.0);
        rows.push(Row { id, a, b, c });
    }
    rows
}

fn sql_literal_text(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `(id, a, b, c)` VALUES lists, `with_id` false for the identity table.
fn values_sql(rows: &[Row], with_id: bool) -> String {
    let mut sql = String::new();
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        if with_id {
            write!(sql, "{}, ", row.id).unwrap();
        }
        match row.a {
            Some(a) => write!(sql, "{a}, ").unwrap(),
            None => sql.push_str("NULL, "),
        }
        match row.b {
            Some(b) => write!(sql, "{}, ", sql_literal_text(b)).unwrap(),
            None => sql.push_str("NULL, "),
        }
        match row.c {
            Some(c) => write!(sql, "{c:?}").unwrap(),
            None => sql.push_str("NULL"),
        }
        sql.push(')');
    }
    sql
}

/// The hotpage tables the queries run on, each holding the same rows.
const HOTPAGE_TABLES: &[&str] = &["t", "t_part", "t_mem"];

struct Fixture {
    hotpage: SqlSession,
    sqlite: Connection,
}

fn fixture() -> Fixture {
    let rows = generate_rows();
    let mem: Arc<dyn Storage> = MemStorage::new(11);
    let engine = Database::open_with_storage(mem, Path::new("m"), Options::default())
        .expect("open an in-memory database");
    let sql = SqlDatabase::new(Arc::new(engine)).expect("SQL over the database");
    let mut hotpage = sql.session();
    let columns = "a int, b text, c double precision";
    for ddl in [
        format!("CREATE TABLE t (id bigint PRIMARY KEY, {columns})"),
        format!(
            "CREATE TABLE t_part (id bigint PRIMARY KEY, {columns}) WITH (design = 'hash-partition', partitions = 4)"
        ),
        format!("CREATE TABLE t_mem (id bigint PRIMARY KEY, {columns}) WITH (design = 'memory')"),
        format!("CREATE TABLE ti (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, {columns})"),
    ] {
        hotpage
            .execute(&ddl)
            .unwrap_or_else(|e| panic!("{ddl}: {e}"));
    }
    let sqlite = Connection::open_in_memory().expect("open SQLite");
    sqlite
        .execute_batch(
            "PRAGMA case_sensitive_like = ON;
             CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL);
             CREATE TABLE ti (id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c REAL);",
        )
        .expect("SQLite tables");
    let mut next_identity = 1i64;
    for chunk in rows.chunks(BATCH) {
        let values = values_sql(chunk, true);
        for table in HOTPAGE_TABLES {
            let insert = format!("INSERT INTO {table} (id, a, b, c) VALUES {values}");
            let results = hotpage.execute(&insert).expect("hotpage INSERT");
            assert_eq!(results[0].tag, format!("INSERT 0 {}", chunk.len()));
        }
        sqlite
            .execute_batch(&format!("INSERT INTO t (id, a, b, c) VALUES {values}"))
            .expect("SQLite INSERT");
        // The identity table: hotpage makes the keys 1, 2, …; SQLite is given the same.
        let insert = format!(
            "INSERT INTO ti (a, b, c) VALUES {} RETURNING id",
            values_sql(chunk, false)
        );
        let made = hotpage.execute(&insert).expect("hotpage identity INSERT");
        let expected: Vec<Vec<Value>> = (next_identity..next_identity + chunk.len() as i64)
            .map(|id| vec![Value::Int(id)])
            .collect();
        assert_eq!(made[0].rows, expected, "identity keys");
        let with_ids: Vec<Row> = chunk
            .iter()
            .zip(next_identity..)
            .map(|(row, id)| Row { id, ..row.clone() })
            .collect();
        sqlite
            .execute_batch(&format!(
                "INSERT INTO ti (id, a, b, c) VALUES {}",
                values_sql(&with_ids, true)
            ))
            .expect("SQLite identity INSERT");
        next_identity += chunk.len() as i64;
    }
    Fixture { hotpage, sqlite }
}

/// A value as both sides are compared.
#[derive(Clone, Debug)]
enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
}

impl Cell {
    fn number(&self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(*i as f64),
            Cell::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// Equal as the comparison means it: numbers by value (floats within a relative
    /// 1e-9), text exactly.
    fn matches(&self, other: &Cell) -> bool {
        match (self, other) {
            (Cell::Null, Cell::Null) => true,
            (Cell::Int(a), Cell::Int(b)) => a == b,
            (Cell::Text(a), Cell::Text(b)) => a == b,
            _ => match (self.number(), other.number()) {
                (Some(a), Some(b)) => a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()),
                _ => false,
            },
        }
    }

    /// A total order to sort unordered results by.
    fn sort_cmp(&self, other: &Cell) -> Ordering {
        let rank = |c: &Cell| match c {
            Cell::Null => 0,
            Cell::Int(_) | Cell::Float(_) => 1,
            Cell::Text(_) => 2,
        };
        match (self, other) {
            (Cell::Text(a), Cell::Text(b)) => a.cmp(b),
            _ => match (self.number(), other.number()) {
                (Some(a), Some(b)) => a.total_cmp(&b),
                _ => rank(self).cmp(&rank(other)),
            },
        }
    }
}

fn hotpage_cell(v: &Value) -> Cell {
    match v {
        Value::Null => Cell::Null,
        Value::Int(i) => Cell::Int(*i),
        Value::Bool(b) => Cell::Int(i64::from(*b)),
        Value::Float(f) => Cell::Float(*f),
        // numeric (avg, sum of bigint, a * 1.5): compared as a number.
        Value::Numeric { .. } => Cell::Float(
            v.to_pg_text(None)
                .and_then(|t| t.parse().ok())
                .expect("numeric text parses"),
        ),
        other => Cell::Text(other.to_pg_text(None).unwrap_or_default()),
    }
}

fn sqlite_cell(v: ValueRef<'_>) -> Cell {
    match v {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(i) => Cell::Int(i),
        ValueRef::Real(f) => Cell::Float(f),
        ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Cell::Text(format!("{b:?}")),
    }
}

fn run_hotpage(session: &mut SqlSession, sql: &str) -> Vec<Vec<Cell>> {
    let mut results = session
        .execute(sql)
        .unwrap_or_else(|e| panic!("hotpage: {sql}: {e}"));
    let result = results.pop().expect("one result");
    assert!(result.has_rows(), "{sql} returns no rows");
    result
        .rows
        .iter()
        .map(|row| row.iter().map(hotpage_cell).collect())
        .collect()
}

fn run_sqlite(conn: &Connection, sql: &str) -> Vec<Vec<Cell>> {
    let mut statement = conn
        .prepare(sql)
        .unwrap_or_else(|e| panic!("SQLite: {sql}: {e}"));
    let width = statement.column_count();
    let rows = statement
        .query_map([], |row| {
            Ok((0..width)
                .map(|i| sqlite_cell(row.get_ref_unwrap(i)))
                .collect::<Vec<_>>())
        })
        .unwrap_or_else(|e| panic!("SQLite: {sql}: {e}"));
    rows.map(|r| r.expect("SQLite row")).collect()
}

fn sort_rows(rows: &mut [Vec<Cell>]) {
    rows.sort_by(|x, y| {
        x.iter()
            .zip(y)
            .map(|(a, b)| a.sort_cmp(b))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(Ordering::Equal)
    });
}

/// The first difference between the two answers, if any.
fn difference(
    mut ours: Vec<Vec<Cell>>,
    mut theirs: Vec<Vec<Cell>>,
    ordered: bool,
) -> Option<String> {
    if !ordered {
        sort_rows(&mut ours);
        sort_rows(&mut theirs);
    }
    if ours.len() != theirs.len() {
        return Some(format!(
            "{} rows from hotpage, {} from SQLite (first rows: {:?} / {:?})",
            ours.len(),
            theirs.len(),
            ours.first(),
            theirs.first()
        ));
    }
    for (i, (x, y)) in ours.iter().zip(&theirs).enumerate() {
        let same = x.len() == y.len() && x.iter().zip(y).all(|(a, b)| a.matches(b));
        if !same {
            return Some(format!("row {i}: hotpage {x:?}, SQLite {y:?}"));
        }
    }
    None
}

/// One query of the fixed list: `{t}` is the table; `ordered` when its ORDER BY fixes
/// the order of every row (else both answers are sorted before they are compared).
struct Case {
    sql: &'static str,
    ordered: bool,
}

const fn ordered(sql: &'static str) -> Case {
    Case { sql, ordered: true }
}

const fn unordered(sql: &'static str) -> Case {
    Case {
        sql,
        ordered: false,
    }
}

const CASES: &[Case] = &[
    // Whole-table scans and aggregates.
    unordered("SELECT id, a, b, c FROM {t}"),
    ordered("SELECT id, a, b, c FROM {t} ORDER BY id"),
    ordered("SELECT id FROM {t} ORDER BY id DESC"),
    unordered("SELECT count(*), count(a), count(b), count(c) FROM {t}"),
    unordered("SELECT min(id), max(id), sum(id), min(a), max(a), sum(a) FROM {t}"),
    unordered("SELECT avg(a), avg(c), sum(c), min(c), max(c) FROM {t}"),
    unordered("SELECT min(b), max(b) FROM {t}"),
    // Key equality and ranges: inclusive, exclusive, BETWEEN, empty, past the ends.
    ordered("SELECT id, a, b, c FROM {t} WHERE id = 0"),
    ordered("SELECT id, a, b, c FROM {t} WHERE id = 20001"),
    ordered("SELECT id, a FROM {t} WHERE id >= -100 AND id <= 100 ORDER BY id"),
    ordered("SELECT id, a FROM {t} WHERE id > -100 AND id < 100 ORDER BY id"),
    ordered("SELECT id FROM {t} WHERE id BETWEEN 5000 AND 9000 ORDER BY id"),
    ordered("SELECT id FROM {t} WHERE id BETWEEN 9000 AND 5000 ORDER BY id"),
    unordered("SELECT count(*) FROM {t} WHERE id < -19000"),
    unordered("SELECT count(*), sum(a) FROM {t} WHERE id > 19000"),
    unordered("SELECT count(*) FROM {t} WHERE id > -30000 AND id < 30000"),
    unordered("SELECT id, b FROM {t} WHERE 250 > id AND id >= 0"),
    unordered("SELECT id FROM {t} WHERE id IN (1, 2, 3, -7, 42, 999, 19999)"),
    // Other predicates and NULLs.
    unordered("SELECT id FROM {t} WHERE a IS NULL"),
    unordered("SELECT id, c FROM {t} WHERE b IS NULL AND c IS NOT NULL"),
    unordered("SELECT id FROM {t} WHERE a = 7 OR b = 'kiwi'"),
    unordered("SELECT id FROM {t} WHERE NOT (a > 0) AND c < 0"),
    unordered("SELECT id, a FROM {t} WHERE a IN (1, 2, 3) AND b <> 'apple'"),
    unordered("SELECT count(*) FROM {t} WHERE a NOT IN (1, 2, NULL)"),
    unordered("SELECT id FROM {t} WHERE a BETWEEN -3 AND 3 AND id > 0"),
    unordered("SELECT id, b FROM {t} WHERE b LIKE 'a%'"),
    unordered("SELECT count(*) FROM {t} WHERE b LIKE '%an%' OR b LIKE '_'"),
    unordered("SELECT id FROM {t} WHERE b > 'kiwi' AND b < 'zebra'"),
    unordered("SELECT id FROM {t} WHERE c >= 1000.5 AND c < 2000"),
    unordered("SELECT id FROM {t} WHERE a = NULL"),
    // Expressions.
    unordered("SELECT id, a / 3, a % 3, -a, a * 2 + 1 FROM {t} WHERE id < -19500"),
    unordered("SELECT id, a * 1.5, c / 2, abs(c) FROM {t} WHERE id > 19500"),
    unordered(
        "SELECT id, b || '/' || a, upper(b), lower(b), length(b) FROM {t} WHERE id BETWEEN 0 AND 500",
    ),
    unordered("SELECT id, coalesce(a, -1), coalesce(b, 'none') FROM {t} WHERE id < -19000"),
    unordered("SELECT id, a > 0, b IS NULL FROM {t} WHERE id > 19000"),
    // GROUP BY, HAVING, ORDER BY.
    ordered(
        "SELECT a, count(*), sum(c), min(id), max(id) FROM {t} GROUP BY a ORDER BY a NULLS FIRST",
    ),
    ordered("SELECT b, count(*), avg(a) FROM {t} GROUP BY b ORDER BY b NULLS LAST"),
    ordered("SELECT a % 5, count(*) FROM {t} GROUP BY a % 5 ORDER BY 1 NULLS LAST"),
    ordered(
        "SELECT b, count(*) AS n FROM {t} GROUP BY b HAVING count(*) > 280 ORDER BY n DESC, b NULLS LAST",
    ),
    ordered("SELECT a, max(c) FROM {t} WHERE id > 0 GROUP BY a HAVING a > 40 ORDER BY a DESC"),
    ordered(
        "SELECT b, a, count(*) FROM {t} WHERE a BETWEEN 0 AND 2 GROUP BY b, a ORDER BY b NULLS FIRST, a",
    ),
    ordered("SELECT a, id FROM {t} ORDER BY a DESC NULLS LAST, id"),
    ordered("SELECT c, id FROM {t} ORDER BY c NULLS FIRST, id DESC"),
    ordered("SELECT b AS word, id FROM {t} WHERE id < 0 ORDER BY word NULLS LAST, 2"),
    ordered("SELECT id, a FROM {t} ORDER BY a * -1 NULLS LAST, id"),
    // LIMIT and OFFSET.
    ordered("SELECT id FROM {t} ORDER BY id LIMIT 10"),
    ordered("SELECT id FROM {t} ORDER BY id LIMIT 10 OFFSET 4090"),
    ordered("SELECT id, a FROM {t} ORDER BY id DESC LIMIT 5 OFFSET 5990"),
    ordered("SELECT id FROM {t} WHERE id > 0 ORDER BY id LIMIT 3 OFFSET 100000"),
    ordered("SELECT a, id FROM {t} ORDER BY a NULLS FIRST, id LIMIT 20 OFFSET 600"),
    ordered("SELECT id FROM {t} ORDER BY id LIMIT 0"),
    // DISTINCT.
    ordered("SELECT DISTINCT a FROM {t} ORDER BY a NULLS LAST"),
    ordered("SELECT DISTINCT b FROM {t} ORDER BY b NULLS FIRST"),
    unordered("SELECT DISTINCT a % 4, b IS NULL FROM {t}"),
    ordered("SELECT DISTINCT b FROM {t} WHERE a > 45 ORDER BY b NULLS LAST LIMIT 5 OFFSET 2"),
];

/// Runs every case on each hotpage table (and the identity table) against SQLite's `t`
/// (`ti`); returns the differences.
fn compare_cases(fixture: &mut Fixture) -> Vec<String> {
    let mut failures = Vec::new();
    for case in CASES {
        let theirs = run_sqlite(&fixture.sqlite, &case.sql.replace("{t}", "t"));
        let theirs_identity = run_sqlite(&fixture.sqlite, &case.sql.replace("{t}", "ti"));
        for table in HOTPAGE_TABLES.iter().chain(&["ti"]) {
            let sql = case.sql.replace("{t}", table);
            let ours = run_hotpage(&mut fixture.hotpage, &sql);
            let expected = if *table == "ti" {
                theirs_identity.clone()
            } else {
                theirs.clone()
            };
            if let Some(diff) = difference(ours, expected, case.ordered) {
                failures.push(format!("{sql}\n    {diff}"));
            }
        }
    }
    failures
}

#[test]
fn fixed_queries_agree_with_sqlite() {
    let mut fixture = fixture();
    // The fixture is what we think it is.
    let count = run_sqlite(
        &fixture.sqlite,
        "SELECT count(*), count(a), count(b) FROM t",
    );
    let Cell::Int(n) = count[0][0] else {
        panic!("count")
    };
    assert_eq!(n, ROWS as i64);
    assert!(
        matches!((&count[0][1], &count[0][2]), (Cell::Int(a), Cell::Int(b)) if *a < n && *b < n),
        "some NULLs in a and b"
    );
    let failures = compare_cases(&mut fixture);
    assert!(
        failures.is_empty(),
        "{} of {} queries differ from SQLite:\n{}",
        failures.len(),
        CASES.len() * (HOTPAGE_TABLES.len() + 1),
        failures.join("\n")
    );
}

/// A generated key range: `id BETWEEN lo AND hi`, exclusive, inclusive, or open above.
fn key_range(op: usize, lo: i64, hi: i64) -> String {
    match op {
        0 => format!("id BETWEEN {lo} AND {hi}"),
        1 => format!("id > {lo} AND id < {hi}"),
        2 => format!("{lo} <= id AND id <= {hi}"),
        _ => format!("id > {lo}"),
    }
}

#[test]
fn random_ranges_agree_with_sqlite() {
    let fixture = RefCell::new(fixture());
    let mut runner = TestRunner::new(Config {
        cases: 96,
        rng_seed: RngSeed::Fixed(0x00d1_ff00),
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (
        (0usize..4, -21_000i64..21_000, 0i64..45_000),
        -55i64..55,
        0u32..6_500,
        0u32..3_000,
        0usize..HOTPAGE_TABLES.len() + 1,
    );
    let outcome = runner.run(&strategy, |((op, lo, span), a_min, limit, offset, table)| {
        let range = key_range(op, lo, lo + span);
        let table = HOTPAGE_TABLES.get(table).copied().unwrap_or("ti");
        let sqlite_table = if table == "ti" { "ti" } else { "t" };
        let fixture = &mut *fixture.borrow_mut();
        // The count of the whole range first, then a page of it.
        let count_sql = |t: &str| format!("SELECT count(*) FROM {t} WHERE {range} AND a > {a_min}");
        let ours = run_hotpage(&mut fixture.hotpage, &count_sql(table));
        let theirs = run_sqlite(&fixture.sqlite, &count_sql(sqlite_table));
        if let Some(diff) = difference(ours, theirs, true) {
            return Err(TestCaseError::fail(format!("{}\n    {diff}", count_sql(table))));
        }
        let page_sql = |t: &str| {
            format!(
                "SELECT id, a, b, c FROM {t} WHERE {range} AND a > {a_min} ORDER BY id LIMIT {limit} OFFSET {offset}"
            )
        };
        let ours = run_hotpage(&mut fixture.hotpage, &page_sql(table));
        let theirs = run_sqlite(&fixture.sqlite, &page_sql(sqlite_table));
        if let Some(diff) = difference(ours, theirs, true) {
            return Err(TestCaseError::fail(format!("{}\n    {diff}", page_sql(table))));
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

/// A heap table (no primary key) of 6,000 rows, scanned in physical order, agrees with
/// SQLite (a scan once stopped at 4,096 rows of a heap: this keeps it whole).
#[test]
fn large_heap_agrees_with_sqlite() {
    let mut fixture = fixture();
    fixture
        .hotpage
        .execute("CREATE TABLE th (id bigint, a int, b text, c double precision)")
        .expect("heap table");
    for chunk in generate_rows().chunks(BATCH) {
        fixture
            .hotpage
            .execute(&format!(
                "INSERT INTO th (id, a, b, c) VALUES {}",
                values_sql(chunk, true)
            ))
            .expect("heap INSERT");
    }
    let mut failures = Vec::new();
    for case in CASES {
        let ours = fixture.hotpage.execute(&case.sql.replace("{t}", "th"));
        let theirs = run_sqlite(&fixture.sqlite, &case.sql.replace("{t}", "t"));
        match ours {
            Err(e) => failures.push(format!("{}: {e}", case.sql)),
            Ok(mut results) => {
                let result = results.pop().expect("one result");
                let ours = result
                    .rows
                    .iter()
                    .map(|row| row.iter().map(hotpage_cell).collect())
                    .collect();
                if let Some(diff) = difference(ours, theirs, case.ordered) {
                    failures.push(format!("{}\n    {diff}", case.sql));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
