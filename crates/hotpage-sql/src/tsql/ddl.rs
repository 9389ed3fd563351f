//! T-SQL table DDL onto the designs: a `CREATE TABLE` is parsed here (a fixed grammar:
//! sqlparser 0.63 does not parse computed columns, `PRIMARY KEY CLUSTERED … WITH (…)` or
//! `MEMORY_OPTIMIZED`) into a [`TableDef`], which is written out as the PostgreSQL-dialect
//! CREATE TABLE whose design it calls for (the README's table):
//!
//! | T-SQL | design |
//! |---|---|
//! | `IDENTITY(s,i)` key, clustered (a clustered PRIMARY KEY or unique clustered index) | identity |
//! | … `WITH (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON)` | identity-flow-control |
//! | `uniqueidentifier` key `DEFAULT NEWID()` / `NEWSEQUENTIALID()` | guid / guid-v7 |
//! | `h AS (CONVERT(tinyint, ABS(id) % N)) PERSISTED` leading the clustered key `(h, id)` | hash-prefix |
//! | a clustered key `(id, h)` `ON ps(h)`, `h` as above and `ps`'s function one partition per value of `h` | hash-partition (see [`super::objects`]) |
//! | no clustered key | heap |
//! | `PRIMARY KEY NONCLUSTERED` on an identity, no clustered key | heap-nc-identity |
//! | `WITH (MEMORY_OPTIMIZED = ON, DURABILITY = SCHEMA_AND_DATA \| SCHEMA_ONLY)` | memory (SCHEMA_ONLY: unlogged) |
//!
//! The engine fixes a table's design when it is made, but T-SQL scripts often finish a
//! table's definition afterwards (`ALTER TABLE … ADD DEFAULT (newid()) FOR Id`, `CREATE
//! UNIQUE CLUSTERED INDEX`). Such a statement re-makes the table from its amended
//! definition while it is still empty (see [`super::TsqlSession`]).

use super::objects::PartitionFunction;
use super::parse::{is_word, split_top_level, syntax_near, word};
use super::translate::{self, Resolve, matching_paren, name_of, pg_type};
use crate::error::{SqlError, SqlResult, sqlstate};
use serde::{Deserialize, Serialize};
use sqlparser::tokenizer::Token;

/// A table as T-SQL defined it, with what later statements added. Kept in the database's
/// metadata as JSON ([`TableDef::to_stored`]), so that every session, and a reopen, can
/// amend it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct TableDef {
    pub name: String,
    columns: Vec<ColumnDef>,
    primary: Option<KeyDef>,
    /// From `CREATE [UNIQUE] CLUSTERED INDEX`.
    clustered_index: Option<Vec<String>>,
    /// The clustered index's `OPTIMIZE_FOR_SEQUENTIAL_KEY = ON`.
    clustered_index_optimized: bool,
    /// `Some(schema_only)` for `MEMORY_OPTIMIZED = ON`.
    memory: Option<bool>,
    /// `ON ps(col)` as written (the scheme and column), until the session resolves it.
    pub on_scheme: Option<(String, String)>,
    /// The hash partitions `ON ps(col)` resolved to.
    partition: Option<Partitioning>,
}

/// A table on a partition scheme, as the engine's hash-partition design.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Partitioning {
    scheme: String,
    /// The computed column `key % partitions`.
    column: String,
    partitions: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct ColumnDef {
    name: String,
    pg_type: String,
    identity: Option<(i64, i64)>,
    not_null: bool,
    default: Option<String>,
    /// A computed column's PostgreSQL expression.
    computed: Option<String>,
    /// A computed column `col % N`: (col, N).
    bucket: Option<(String, i64)>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct KeyDef {
    columns: Vec<String>,
    clustered: bool,
    optimize_for_sequential_key: bool,
    on_scheme: Option<(String, String)>,
}

/// What may follow an index's columns: `[WITH (…)] [ON filegroup | ON ps(col)]`.
#[derive(Default)]
pub(crate) struct IndexOptions {
    pub optimize_for_sequential_key: bool,
    /// `ON ps(col)`: the scheme and column.
    pub on_scheme: Option<(String, String)>,
}

/// `ALTER INDEX … SET (…)`'s options: OPTIMIZE_FOR_SEQUENTIAL_KEY's value (None: not
/// given); the locking and statistics options change nothing here.
pub(crate) fn index_set_options(toks: &[Token]) -> SqlResult<Option<bool>> {
    let mut optimize = None;
    for (name, value) in options(toks)? {
        match name.as_str() {
            "OPTIMIZE_FOR_SEQUENTIAL_KEY" => optimize = Some(value == "ON"),
            "ALLOW_ROW_LOCKS"
            | "ALLOW_PAGE_LOCKS"
            | "STATISTICS_NORECOMPUTE"
            | "IGNORE_DUP_KEY" => {}
            other => {
                return Err(SqlError::unsupported(format!(
                    "the ALTER INDEX option {other}"
                )));
            }
        }
    }
    Ok(optimize)
}

/// Parses `[WITH (…)] [ON …]` at `at`; returns the options and the index after them.
pub(crate) fn index_options(toks: &[Token], at: usize) -> SqlResult<(IndexOptions, usize)> {
    let mut options = IndexOptions::default();
    let mut i = at;
    if is_word(toks.get(i), "WITH") && matches!(toks.get(i + 1), Some(Token::LParen)) {
        let close = matching_paren(toks, i + 1)?;
        for (name, value) in self::options(&toks[i + 2..close])? {
            match name.as_str() {
                "OPTIMIZE_FOR_SEQUENTIAL_KEY" => {
                    options.optimize_for_sequential_key = value == "ON";
                }
                // Page fill, locking and build options change nothing here.
                "PAD_INDEX"
                | "STATISTICS_NORECOMPUTE"
                | "IGNORE_DUP_KEY"
                | "ALLOW_ROW_LOCKS"
                | "ALLOW_PAGE_LOCKS"
                | "FILLFACTOR"
                | "SORT_IN_TEMPDB"
                | "DROP_EXISTING"
                | "ONLINE"
                | "DATA_COMPRESSION"
                | "MAXDOP" => {}
                other => {
                    return Err(SqlError::unsupported(format!("the index option {other}")));
                }
            }
        }
        i = close + 1;
    }
    if is_word(toks.get(i), "ON") {
        let (end, scheme) = on_clause(toks, i)?;
        options.on_scheme = scheme;
        i = end;
    }
    Ok((options, i))
}

/// Parses `CREATE TABLE name ( … ) [WITH ( … )] [ON …]` (the tokens after CREATE TABLE).
pub(crate) fn parse_create_table(toks: &[Token], env: &dyn Resolve) -> SqlResult<TableDef> {
    let open = toks
        .iter()
        .position(|t| matches!(t, Token::LParen))
        .ok_or_else(|| syntax_near(toks.last()))?;
    let mut def = TableDef {
        name: name_of(&toks[..open])?,
        ..TableDef::default()
    };
    let close = matching_paren(toks, open)?;
    for element in split_top_level(&toks[open + 1..close], |t| matches!(t, Token::Comma)) {
        if element.is_empty() {
            continue; // SQL Server takes a trailing comma.
        }
        let first = word(&element[0]);
        if matches!(
            first.as_deref(),
            Some("CONSTRAINT" | "PRIMARY" | "UNIQUE" | "INDEX" | "CHECK" | "FOREIGN")
        ) {
            table_constraint(&mut def, element)?;
        } else {
            column(&mut def, element, env)?;
        }
    }
    table_options(&mut def, &toks[close + 1..])?;
    Ok(def)
}

fn column(def: &mut TableDef, toks: &[Token], env: &dyn Resolve) -> SqlResult<()> {
    let name = name_of(&toks[..1])?;
    if def.columns.iter().any(|c| c.name == name) {
        return Err(SqlError::new(
            sqlstate::DUPLICATE_COLUMN,
            format!("column \"{name}\" specified more than once (SQL Server error 2705)"),
        ));
    }
    if is_word(toks.get(1), "AS") {
        return computed_column(def, name, &toks[2..], env);
    }
    let type_end = type_end(toks, 1)?;
    let mut column = ColumnDef {
        name,
        pg_type: pg_type(&toks[1..type_end])?,
        identity: None,
        not_null: false,
        default: None,
        computed: None,
        bucket: None,
    };
    let mut i = type_end;
    while i < toks.len() {
        i = column_option(def, &mut column, toks, i, env)?;
    }
    def.columns.push(column);
    Ok(())
}

/// Where a type (`[nvarchar](max)`, `decimal(10, 2)`, `int`) that starts at `at` ends.
fn type_end(toks: &[Token], at: usize) -> SqlResult<usize> {
    if at >= toks.len() {
        return Err(syntax_near(None));
    }
    if matches!(toks.get(at + 1), Some(Token::LParen)) {
        return Ok(matching_paren(toks, at + 1)? + 1);
    }
    Ok(at + 1)
}

/// One column option at `i`; returns the index after it.
fn column_option(
    def: &mut TableDef,
    column: &mut ColumnDef,
    toks: &[Token],
    i: usize,
    env: &dyn Resolve,
) -> SqlResult<usize> {
    let upper = word(&toks[i]).unwrap_or_default();
    match upper.as_str() {
        "IDENTITY" => {
            let (mut seed, mut step, mut next) = (1, 1, i + 1);
            if matches!(toks.get(i + 1), Some(Token::LParen)) {
                let close = matching_paren(toks, i + 1)?;
                let args = split_top_level(&toks[i + 2..close], |t| matches!(t, Token::Comma));
                if let [s, n] = args.as_slice() {
                    seed = integer(s)?;
                    step = integer(n)?;
                }
                next = close + 1;
            }
            column.identity = Some((seed, step));
            Ok(next)
        }
        "NOT" if is_word(toks.get(i + 1), "NULL") => {
            column.not_null = true;
            Ok(i + 2)
        }
        "NULL" => Ok(i + 1),
        "CONSTRAINT" => Ok(i + 2),
        "DEFAULT" => {
            let end = option_end(toks, i + 1)?;
            column.default = Some(translate::expr(
                translate::strip_parens(&toks[i + 1..end]),
                env,
            )?);
            Ok(end)
        }
        "PRIMARY" if is_word(toks.get(i + 1), "KEY") => {
            let (key, end) = key_clause(toks, i + 2, Some(&column.name))?;
            set_primary(def, key)?;
            Ok(end)
        }
        "COLLATE" | "SPARSE" | "ROWGUIDCOL" => Ok(i + 1 + usize::from(upper == "COLLATE")),
        _ => Err(SqlError::unsupported(format!(
            "the column option {} (T-SQL)",
            toks[i]
        ))),
    }
}

/// The end of a DEFAULT's expression: a parenthesized expression, or one token.
fn option_end(toks: &[Token], at: usize) -> SqlResult<usize> {
    match toks.get(at) {
        Some(Token::LParen) => Ok(matching_paren(toks, at)? + 1),
        Some(Token::Word(_)) if matches!(toks.get(at + 1), Some(Token::LParen)) => {
            Ok(matching_paren(toks, at + 1)? + 1)
        }
        Some(_) => Ok(at + 1),
        None => Err(syntax_near(None)),
    }
}

fn integer(toks: &[Token]) -> SqlResult<i64> {
    let text: String = toks.iter().map(ToString::to_string).collect();
    text.parse().map_err(|_| {
        SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("an integer was expected, not {text}"),
        )
    })
}

/// `name AS (expr) [PERSISTED] [NOT NULL]`: a stored generated column. `id % N` under
/// CONVERT and ABS is written as `id % N` (the identity it reads is positive), so that the
/// SQL layer sees a hash-prefix bucket.
fn computed_column(
    def: &mut TableDef,
    name: String,
    toks: &[Token],
    env: &dyn Resolve,
) -> SqlResult<()> {
    let end = option_end(toks, 0)?;
    let persisted = toks[end..].iter().any(|t| is_word(Some(t), "PERSISTED"));
    if !persisted {
        return Err(SqlError::unsupported(
            "a computed column that is not PERSISTED (hotpage stores every computed column)",
        ));
    }
    let text = translate::expr(&toks[..end], env)?;
    let bucket = bucket_of(&toks[..end]);
    let (pg_type, computed) = match &bucket {
        Some((column, buckets)) => ("smallint".to_string(), format!("({column} % {buckets})")),
        None => (computed_type(&toks[..end])?, text),
    };
    def.columns.push(ColumnDef {
        name,
        pg_type,
        identity: None,
        not_null: true,
        default: None,
        computed: Some(computed),
        bucket,
    });
    Ok(())
}

/// A computed column's type: CONVERT's or CAST's when the expression is one (inside
/// parentheses), else bigint (SQL Server infers it from the expression; hotpage does not).
fn computed_type(toks: &[Token]) -> SqlResult<String> {
    let mut toks = toks;
    while matches!(toks.first(), Some(Token::LParen))
        && translate::matching_paren(toks, 0).ok() == Some(toks.len() - 1)
    {
        toks = &toks[1..toks.len() - 1];
    }
    let whole = matches!(toks.get(1), Some(Token::LParen))
        && translate::matching_paren(toks, 1).ok() == Some(toks.len() - 1);
    if whole && is_word(toks.first(), "CONVERT") {
        let parts =
            super::parse::split_top_level(&toks[2..toks.len() - 1], |t| matches!(t, Token::Comma));
        if let [ty, _, ..] = parts.as_slice() {
            return translate::pg_type(ty);
        }
    }
    if whole && is_word(toks.first(), "CAST") {
        let inner = &toks[2..toks.len() - 1];
        let at = inner.iter().rposition(|t| is_word(Some(t), "AS"));
        if let Some(at) = at {
            return translate::pg_type(&inner[at + 1..]);
        }
    }
    Ok("bigint".to_string())
}

/// `col % N` inside CONVERT(…), CAST(…), ABS(…) and parentheses: (col, N).
fn bucket_of(toks: &[Token]) -> Option<(String, i64)> {
    let modulo = toks.iter().position(|t| matches!(t, Token::Mod))?;
    let column = toks[..modulo].iter().rev().find_map(|t| match t {
        Token::Word(w) if w.quote_style.is_some() || !is_function_word(&w.value) => {
            Some(w.value.to_lowercase())
        }
        _ => None,
    })?;
    let number = toks[modulo + 1..].iter().find_map(|t| match t {
        Token::Number(n, _) => n.parse().ok(),
        _ => None,
    })?;
    Some((column, number))
}

fn is_function_word(text: &str) -> bool {
    let upper = text.to_ascii_uppercase();
    [
        "ABS", "CONVERT", "CAST", "TINYINT", "INT", "SMALLINT", "BIGINT", "AS",
    ]
    .contains(&upper.as_str())
}

/// `[CONSTRAINT n] PRIMARY KEY [CLUSTERED|NONCLUSTERED] (cols) [WITH (…)]`.
fn table_constraint(def: &mut TableDef, toks: &[Token]) -> SqlResult<()> {
    let at = if is_word(toks.first(), "CONSTRAINT") {
        2
    } else {
        0
    };
    if is_word(toks.get(at), "PRIMARY") && is_word(toks.get(at + 1), "KEY") {
        let (key, end) = key_clause(toks, at + 2, None)?;
        if end != toks.len() {
            return Err(syntax_near(toks.get(end)));
        }
        return set_primary(def, key);
    }
    Err(SqlError::unsupported(format!(
        "the constraint {} (hotpage takes a PRIMARY KEY)",
        toks.get(at).map(ToString::to_string).unwrap_or_default()
    )))
}

/// `[CLUSTERED|NONCLUSTERED] [(cols)] [WITH (…)]` after PRIMARY KEY at `at`.
fn key_clause(toks: &[Token], at: usize, column: Option<&str>) -> SqlResult<(KeyDef, usize)> {
    let mut i = at;
    let mut clustered = true;
    match word(toks.get(i).unwrap_or(&Token::EOF)).as_deref() {
        Some("CLUSTERED") => i += 1,
        Some("NONCLUSTERED") => {
            clustered = false;
            i += 1;
        }
        _ => {}
    }
    if is_word(toks.get(i), "HASH") {
        return Err(SqlError::unsupported(
            "PRIMARY KEY NONCLUSTERED HASH (a memory table here takes NONCLUSTERED)",
        ));
    }
    let columns = if matches!(toks.get(i), Some(Token::LParen)) {
        let close = matching_paren(toks, i)?;
        let cols = column_list(&toks[i + 1..close])?;
        i = close + 1;
        cols
    } else {
        vec![column.ok_or_else(|| syntax_near(toks.get(i)))?.to_string()]
    };
    let (options, end) = index_options(toks, i)?;
    Ok((
        KeyDef {
            columns,
            clustered,
            optimize_for_sequential_key: options.optimize_for_sequential_key,
            on_scheme: options.on_scheme,
        },
        end,
    ))
}

/// `ON [PRIMARY]` (a filegroup: one here) ends after its name; `ON ps(col)` names a
/// partition scheme and its column. Returns the index after it.
fn on_clause(toks: &[Token], on: usize) -> SqlResult<(usize, Option<(String, String)>)> {
    let name = match toks.get(on + 1) {
        Some(Token::Word(w)) => w.value.to_lowercase(),
        other => return Err(syntax_near(other)),
    };
    if !matches!(toks.get(on + 2), Some(Token::LParen)) {
        return Ok((on + 2, None));
    }
    let close = matching_paren(toks, on + 2)?;
    let column = match &toks[on + 3..close] {
        [Token::Word(w)] => w.value.to_lowercase(),
        other => return Err(syntax_near(other.first())),
    };
    Ok((close + 1, Some((name, column))))
}

/// `[a] ASC, b DESC` as names (DESC is refused: keys here are ascending).
pub(crate) fn column_list(toks: &[Token]) -> SqlResult<Vec<String>> {
    let mut out = Vec::new();
    for part in split_top_level(toks, |t| matches!(t, Token::Comma)) {
        match part {
            [Token::Word(w)] => out.push(w.value.to_lowercase()),
            [Token::Word(w), order] if is_word(Some(order), "ASC") => {
                out.push(w.value.to_lowercase());
            }
            [_, order] if is_word(Some(order), "DESC") => {
                return Err(SqlError::unsupported("a descending key column"));
            }
            other => return Err(syntax_near(other.first())),
        }
    }
    Ok(out)
}

/// `NAME = VALUE, …` (upper case, values as text).
fn options(toks: &[Token]) -> SqlResult<Vec<(String, String)>> {
    split_top_level(toks, |t| matches!(t, Token::Comma))
        .into_iter()
        .map(|part| match part {
            [name, Token::Eq, value] => Ok((
                word(name).unwrap_or_else(|| name.to_string()),
                word(value).unwrap_or_else(|| value.to_string().to_ascii_uppercase()),
            )),
            other => Err(syntax_near(other.first())),
        })
        .collect()
}

fn set_primary(def: &mut TableDef, mut key: KeyDef) -> SqlResult<()> {
    if let Some(on) = key.on_scheme.take() {
        def.on_scheme = Some(on);
    }
    if def.primary.is_some() {
        return Err(SqlError::new(
            sqlstate::INVALID_TABLE_DEFINITION,
            format!(
                "multiple primary keys for table \"{}\" are not allowed (SQL Server error 8110)",
                def.name
            ),
        ));
    }
    def.primary = Some(key);
    Ok(())
}

/// `WITH (MEMORY_OPTIMIZED = ON, DURABILITY = …)`, `ON [PRIMARY]`, `TEXTIMAGE_ON [PRIMARY]`.
fn table_options(def: &mut TableDef, toks: &[Token]) -> SqlResult<()> {
    let mut i = 0;
    while i < toks.len() {
        if is_word(toks.get(i), "WITH") && matches!(toks.get(i + 1), Some(Token::LParen)) {
            let close = matching_paren(toks, i + 1)?;
            let mut memory = false;
            let mut schema_only = false;
            for (name, value) in options(&toks[i + 2..close])? {
                match (name.as_str(), value.as_str()) {
                    ("MEMORY_OPTIMIZED", v) => memory = v == "ON",
                    ("DURABILITY", "SCHEMA_ONLY") => schema_only = true,
                    ("DURABILITY", "SCHEMA_AND_DATA") => schema_only = false,
                    ("DATA_COMPRESSION", _) => {}
                    (other, _) => {
                        return Err(SqlError::unsupported(format!("the table option {other}")));
                    }
                }
            }
            def.memory = memory.then_some(schema_only);
            i = close + 1;
        } else if is_word(toks.get(i), "ON") {
            let (end, scheme) = on_clause(toks, i)?;
            if scheme.is_some() {
                def.on_scheme = scheme;
            }
            i = end;
        } else if is_word(toks.get(i), "TEXTIMAGE_ON") {
            i = on_clause(toks, i)?.0;
        } else {
            return Err(syntax_near(toks.get(i)));
        }
    }
    Ok(())
}

/// The version of the stored form of [`TableDef`]: a stored definition of another version
/// is refused with a clear error rather than misread.
const STORED_VERSION: u32 = 1;

/// [`TableDef`] as stored: its version, then the definition.
#[derive(Serialize, Deserialize)]
struct StoredTableDef {
    version: u32,
    def: TableDef,
}

impl TableDef {
    /// The definition as the database stores it.
    pub(crate) fn to_stored(&self) -> SqlResult<String> {
        let stored = StoredTableDef {
            version: STORED_VERSION,
            def: self.clone(),
        };
        serde_json::to_string(&stored).map_err(|e| {
            SqlError::new(
                sqlstate::INTERNAL_ERROR,
                format!("table \"{}\"'s T-SQL definition: {e}", self.name),
            )
        })
    }

    /// A definition the database stored.
    pub(crate) fn from_stored(text: &str) -> SqlResult<TableDef> {
        let stored: StoredTableDef = serde_json::from_str(text).map_err(|e| {
            SqlError::new(
                sqlstate::DATA_CORRUPTED,
                format!("a stored T-SQL table definition does not read: {e}"),
            )
        })?;
        if stored.version != STORED_VERSION {
            return Err(SqlError::new(
                sqlstate::DATA_CORRUPTED,
                format!(
                    "a T-SQL table definition of version {} (this binary reads version {STORED_VERSION})",
                    stored.version
                ),
            ));
        }
        Ok(stored.def)
    }

    /// `ALTER TABLE t ADD [CONSTRAINT n] DEFAULT (expr) FOR col`.
    pub(crate) fn add_default(&mut self, column: &str, default: String) -> SqlResult<()> {
        let found = self.columns.iter_mut().find(|c| c.name == column);
        let found = found.ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!(
                    "column \"{column}\" of relation \"{}\" does not exist",
                    self.name
                ),
            )
        })?;
        if found.default.is_some() {
            return Err(SqlError::new(
                sqlstate::INVALID_TABLE_DEFINITION,
                format!("column \"{column}\" already has a DEFAULT (SQL Server error 1781)"),
            ));
        }
        found.default = Some(default);
        Ok(())
    }

    /// `ALTER INDEX … SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON | OFF)` on the clustered key.
    pub(crate) fn set_optimize_for_sequential_key(&mut self, on: Option<bool>) -> SqlResult<()> {
        let Some(on) = on else {
            return Ok(());
        };
        if let Some(key) = self.primary.as_mut().filter(|k| k.clustered) {
            key.optimize_for_sequential_key = on;
        } else if self.clustered_index.is_some() {
            self.clustered_index_optimized = on;
        } else {
            return Err(SqlError::unsupported(format!(
                "OPTIMIZE_FOR_SEQUENTIAL_KEY on table \"{}\", which has no clustered key (hotpage's flow control is on the last page of a clustered key)",
                self.name
            )));
        }
        Ok(())
    }

    /// The partition scheme the table is on.
    pub(crate) fn scheme(&self) -> Option<&str> {
        self.partition.as_ref().map(|p| p.scheme.as_str())
    }

    /// `ON scheme(column)`: hash partitions, one per value of `column`, which must be a
    /// persisted computed column `key % N` whose N values the function keeps apart.
    pub(crate) fn partition_on(
        &mut self,
        scheme: &str,
        column: &str,
        function: &PartitionFunction,
    ) -> SqlResult<()> {
        let found = self.columns.iter().find(|c| c.name == column);
        let found = found.ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!("invalid column name '{column}' (SQL Server error 207)"),
            )
        })?;
        let Some((_, buckets)) = found.bucket else {
            return Err(SqlError::unsupported(format!(
                "partitioning on \"{column}\": hotpage partitions by hash, on a persisted computed column key % N (seed 000's HashID AS CONVERT(tinyint, ABS(ID % 8)) PERSISTED)"
            )));
        };
        if !function.separates_residues(buckets) {
            return Err(SqlError::unsupported(format!(
                "partition function '{}' on \"{column}\" (key % {buckets}): hotpage's hash partitions are one per value, and this function does not give each of 0 to {} a partition of its own",
                function.name,
                buckets - 1
            )));
        }
        let partitions = u32::try_from(buckets)
            .ok()
            .filter(|n| (1..=hotpage::limits::PARTITIONS_MAX).contains(n))
            .ok_or_else(|| {
                SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!(
                        "{buckets} partitions: hotpage takes 1 to {}",
                        hotpage::limits::PARTITIONS_MAX
                    ),
                )
            })?;
        self.partition = Some(Partitioning {
            scheme: scheme.to_string(),
            column: column.to_string(),
            partitions,
        });
        Ok(())
    }

    /// The key of a table on a partition scheme: the clustered key without the partition
    /// column, which must be the one integer column that column is computed from.
    fn partitioned_key(&self, partitioning: &Partitioning) -> SqlResult<Vec<String>> {
        if self.memory.is_some() {
            return Err(SqlError::unsupported(
                "a memory-optimized table on a partition scheme",
            ));
        }
        let clustered = match (&self.clustered_index, &self.primary) {
            (Some(index), _) => index.clone(),
            (None, Some(key)) if key.clustered => key.columns.clone(),
            _ => {
                return Err(SqlError::unsupported(
                    "a partitioned heap (hotpage's hash partitions split a clustered key)",
                ));
            }
        };
        let column = &partitioning.column;
        if !clustered.contains(column) {
            return Err(SqlError::new(
                sqlstate::INVALID_TABLE_DEFINITION,
                format!(
                    "partition column '{column}' must be in the clustered key of table \"{}\" (SQL Server error 1908)",
                    self.name
                ),
            ));
        }
        let source = self
            .columns
            .iter()
            .find(|c| &c.name == column)
            .and_then(|c| c.bucket.as_ref())
            .map(|(source, _)| source.clone());
        let key: Vec<String> = clustered.into_iter().filter(|c| c != column).collect();
        if source.is_none() || key != [source.unwrap_or_default()] {
            return Err(SqlError::unsupported(format!(
                "a clustered key other than (key, {column}) on a partition scheme, where {column} is key % N"
            )));
        }
        // (key, key % N) is unique exactly when key is: the engine's key is the key alone.
        Ok(key)
    }

    /// `CREATE [UNIQUE] CLUSTERED INDEX … ON t (cols) [WITH (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON)]`.
    pub(crate) fn add_clustered_index(
        &mut self,
        columns: Vec<String>,
        optimized: bool,
    ) -> SqlResult<()> {
        let clustered_pk = self.primary.as_ref().is_some_and(|k| k.clustered);
        if clustered_pk || self.clustered_index.is_some() {
            return Err(SqlError::new(
                sqlstate::INVALID_TABLE_DEFINITION,
                format!(
                    "cannot create more than one clustered index on table \"{}\" (SQL Server error 1902)",
                    self.name
                ),
            ));
        }
        self.clustered_index = Some(columns);
        self.clustered_index_optimized = optimized;
        Ok(())
    }

    /// The PostgreSQL CREATE TABLE for this definition's design.
    pub(crate) fn to_postgres(&self) -> SqlResult<String> {
        let (key, design) = self.key_and_design()?;
        let mut items: Vec<String> = self.columns.iter().map(column_text).collect();
        if !key.is_empty() {
            items.push(format!("PRIMARY KEY ({})", quoted_list(&key)));
        }
        let unlogged = if self.memory == Some(true) {
            "UNLOGGED "
        } else {
            ""
        };
        let mut text = format!(
            "CREATE {unlogged}TABLE \"{}\" ({})",
            self.name,
            items.join(", ")
        );
        if let Some(partitioning) = &self.partition {
            text.push_str(&format!(
                " WITH (design = 'hash-partition', partitions = {})",
                partitioning.partitions
            ));
        } else if let Some(design) = design {
            text.push_str(&format!(" WITH (design = '{design}')"));
        }
        Ok(text)
    }

    /// The key columns and the design to ask for (None: the columns make it).
    fn key_and_design(&self) -> SqlResult<(Vec<String>, Option<&'static str>)> {
        if let Some(partitioning) = &self.partition {
            return Ok((self.partitioned_key(partitioning)?, None));
        }
        let primary = self.primary.as_ref();
        if self.memory.is_some() {
            let key = primary.map(|k| k.columns.clone()).unwrap_or_default();
            return Ok((key, Some("memory")));
        }
        if let Some(index) = &self.clustered_index {
            if primary.is_some_and(|k| k.columns != *index) {
                return Err(SqlError::unsupported(
                    "a nonclustered primary key beside a clustered index on other columns (one index per table here)",
                ));
            }
            let design = self
                .clustered_index_optimized
                .then_some("identity-flow-control");
            return Ok((index.clone(), design));
        }
        match primary {
            None => Ok((Vec::new(), None)),
            Some(key) if key.clustered => {
                let design = key
                    .optimize_for_sequential_key
                    .then_some("identity-flow-control");
                Ok((key.columns.clone(), design))
            }
            Some(key) => {
                let on_identity = matches!(key.columns.as_slice(), [only] if self.columns.iter().any(|c| &c.name == only && c.identity.is_some()));
                if !on_identity {
                    return Err(SqlError::unsupported(
                        "a nonclustered primary key on anything but an identity column (hotpage's heap-nc-identity)",
                    ));
                }
                Ok((key.columns.clone(), Some("heap-nc-identity")))
            }
        }
    }
}

fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn column_text(c: &ColumnDef) -> String {
    let mut text = format!("\"{}\" {}", c.name, c.pg_type);
    if let Some((seed, step)) = c.identity {
        text.push_str(&format!(
            " GENERATED ALWAYS AS IDENTITY (INCREMENT BY {step} START WITH {seed})"
        ));
    }
    if let Some(computed) = &c.computed {
        text.push_str(&format!(" GENERATED ALWAYS AS ({computed}) STORED"));
    }
    if let Some(default) = &c.default {
        text.push_str(&format!(" DEFAULT {default}"));
    }
    if c.not_null {
        text.push_str(" NOT NULL");
    }
    text
}
