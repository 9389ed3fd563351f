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
//! | no clustered key | heap |
//! | `PRIMARY KEY NONCLUSTERED` on an identity, no clustered key | heap-nc-identity |
//! | `WITH (MEMORY_OPTIMIZED = ON, DURABILITY = SCHEMA_AND_DATA \| SCHEMA_ONLY)` | memory (SCHEMA_ONLY: unlogged) |
//!
//! The engine fixes a table's design when it is made, but T-SQL scripts often finish a
//! table's definition afterwards (`ALTER TABLE … ADD DEFAULT (newid()) FOR Id`, `CREATE
//! UNIQUE CLUSTERED INDEX`). Such a statement re-makes the table from its amended
//! definition while it is still empty (see [`super::TsqlSession`]).

use super::parse::{is_word, split_top_level, syntax_near, word};
use super::translate::{self, Resolve, matching_paren, name_of, pg_type};
use crate::error::{SqlError, SqlResult, sqlstate};
use sqlparser::tokenizer::Token;

/// A table as T-SQL defined it, with what later statements added.
#[derive(Clone, Debug, Default)]
pub(crate) struct TableDef {
    pub name: String,
    columns: Vec<ColumnDef>,
    primary: Option<KeyDef>,
    /// From `CREATE [UNIQUE] CLUSTERED INDEX`.
    clustered_index: Option<Vec<String>>,
    /// `Some(schema_only)` for `MEMORY_OPTIMIZED = ON`.
    memory: Option<bool>,
}

#[derive(Clone, Debug)]
struct ColumnDef {
    name: String,
    pg_type: String,
    identity: Option<(i64, i64)>,
    not_null: bool,
    default: Option<String>,
    /// A computed column's PostgreSQL expression.
    computed: Option<String>,
}

#[derive(Clone, Debug)]
struct KeyDef {
    columns: Vec<String>,
    clustered: bool,
    optimize_for_sequential_key: bool,
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
    let (pg_type, computed) = match bucket_of(&toks[..end]) {
        Some((column, buckets)) => ("smallint".to_string(), format!("({column} % {buckets})")),
        None => ("bigint".to_string(), text),
    };
    def.columns.push(ColumnDef {
        name,
        pg_type,
        identity: None,
        not_null: true,
        default: None,
        computed: Some(computed),
    });
    Ok(())
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
    let mut optimize_for_sequential_key = false;
    if is_word(toks.get(i), "WITH") && matches!(toks.get(i + 1), Some(Token::LParen)) {
        let close = matching_paren(toks, i + 1)?;
        for (name, value) in options(&toks[i + 2..close])? {
            match name.as_str() {
                "OPTIMIZE_FOR_SEQUENTIAL_KEY" => optimize_for_sequential_key = value == "ON",
                // Page fill and locking options change nothing here.
                "PAD_INDEX"
                | "STATISTICS_NORECOMPUTE"
                | "IGNORE_DUP_KEY"
                | "ALLOW_ROW_LOCKS"
                | "ALLOW_PAGE_LOCKS"
                | "FILLFACTOR" => {}
                other => {
                    return Err(SqlError::unsupported(format!("the index option {other}")));
                }
            }
        }
        i = close + 1;
    }
    if is_word(toks.get(i), "ON") {
        i = on_clause_end(toks, i)?;
    }
    Ok((
        KeyDef {
            columns,
            clustered,
            optimize_for_sequential_key,
        },
        i,
    ))
}

/// `ON [PRIMARY]` (a filegroup: one here) ends after its name; `ON ps(col)` (a partition
/// scheme) is not done yet.
fn on_clause_end(toks: &[Token], on: usize) -> SqlResult<usize> {
    if matches!(toks.get(on + 2), Some(Token::LParen)) {
        return Err(SqlError::unsupported(
            "ON a partition scheme (CREATE PARTITION FUNCTION / SCHEME are not done yet)",
        ));
    }
    Ok(on + 2)
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

fn set_primary(def: &mut TableDef, key: KeyDef) -> SqlResult<()> {
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
        } else if is_word(toks.get(i), "ON") || is_word(toks.get(i), "TEXTIMAGE_ON") {
            i = on_clause_end(toks, i)?;
        } else {
            return Err(syntax_near(toks.get(i)));
        }
    }
    Ok(())
}

impl TableDef {
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

    /// `CREATE [UNIQUE] CLUSTERED INDEX … ON t (cols)`.
    pub(crate) fn add_clustered_index(&mut self, columns: Vec<String>) -> SqlResult<()> {
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
        if let Some(design) = design {
            text.push_str(&format!(" WITH (design = '{design}')"));
        }
        Ok(text)
    }

    /// The key columns and the design to ask for (None: the columns make it).
    fn key_and_design(&self) -> SqlResult<(Vec<String>, Option<&'static str>)> {
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
            return Ok((index.clone(), None));
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
