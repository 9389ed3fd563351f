//! The T-SQL objects every session sees and that outlive a reopen: user scalar functions,
//! partition functions and partition schemes. Each is kept in the database's metadata as
//! the T-SQL text that made it (`schema::TsqlObject`), and a session parses the list again
//! whenever its generation moves (one atomic load per check), so a function created in one
//! session is called in every other.
//!
//! Partitioning maps onto the engine's hash-partition design: a table `ON ps(h)` where `h`
//! is a persisted computed column `key % N` and the scheme's function gives each of the
//! residues 0 … N-1 a partition of its own becomes an engine table of N partitions,
//! partition = key mod N (which is `h`). Other partitionings (ranges of dates, a function
//! that lumps residues together) are refused with 0A000.

use super::TsqlSession;
use super::ddl::TableDef;
use super::parse::{
    self, Function, Procedure, Stmt, is_word, render, split_top_level, syntax_near, word,
};
use super::translate::{matching_paren, name_of};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::schema::{TsqlKind, TsqlObject};
use sqlparser::tokenizer::Token;
use std::collections::HashMap;
use std::sync::Arc;

/// `CREATE PARTITION FUNCTION pf (int type) AS RANGE [LEFT|RIGHT] FOR VALUES (b, …)`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PartitionFunction {
    pub name: String,
    pub range_right: bool,
    /// Ascending, distinct.
    pub boundaries: Vec<i64>,
}

impl PartitionFunction {
    /// The partition (0-based) `value` goes to: RANGE LEFT puts a boundary value in the
    /// partition on its left, RANGE RIGHT in the one on its right.
    fn partition_of(&self, value: i64) -> usize {
        self.boundaries
            .iter()
            .filter(|&&b| {
                if self.range_right {
                    b <= value
                } else {
                    b < value
                }
            })
            .count()
    }

    /// Whether each of the residues 0 … n-1 goes to a partition of its own.
    pub(crate) fn separates_residues(&self, n: i64) -> bool {
        let partitions: Vec<usize> = (0..n).map(|r| self.partition_of(r)).collect();
        partitions.windows(2).all(|w| w[0] < w[1])
    }
}

/// The objects as this session last loaded them.
#[derive(Default)]
pub(crate) struct Objects {
    /// The generation loaded (None: never).
    generation: Option<u64>,
    pub functions: HashMap<String, Arc<Function>>,
    pub partition_functions: HashMap<String, PartitionFunction>,
    /// Scheme name -> its function's name.
    pub schemes: HashMap<String, String>,
    /// Table name -> the scheme it was made on.
    pub tables_on_schemes: HashMap<String, String>,
    /// Table name -> its T-SQL definition (tables made by T-SQL's CREATE TABLE).
    pub tables: HashMap<String, TableDef>,
    pub procedures: HashMap<String, Arc<Procedure>>,
}

fn duplicate(name: &str) -> SqlError {
    SqlError::new(
        sqlstate::DUPLICATE_OBJECT,
        format!(
            "there is already an object named '{name}' in the database (SQL Server error 2714)"
        ),
    )
}

fn undefined(what: &str, name: &str, number: u32) -> SqlError {
    SqlError::new(
        sqlstate::UNDEFINED_OBJECT,
        format!("{what} '{name}' does not exist (SQL Server error {number})"),
    )
}

/// Parses `pf (type) AS RANGE [LEFT|RIGHT] FOR VALUES (…)` (after CREATE PARTITION
/// FUNCTION).
pub(crate) fn parse_partition_function(toks: &[Token]) -> SqlResult<PartitionFunction> {
    let open = toks
        .iter()
        .position(|t| matches!(t, Token::LParen))
        .ok_or_else(|| syntax_near(toks.last()))?;
    let name = name_of(&toks[..open])?;
    let close = matching_paren(toks, open)?;
    let ty = toks[open + 1..close]
        .first()
        .and_then(word)
        .unwrap_or_default();
    if !["TINYINT", "SMALLINT", "INT", "BIGINT"].contains(&ty.as_str()) {
        return Err(SqlError::unsupported(format!(
            "a partition function on {} (hotpage partitions by hash, on tinyint, smallint, int or bigint)",
            render(&toks[open + 1..close])
        )));
    }
    let mut at = close + 1;
    for expected in ["AS", "RANGE"] {
        if !is_word(toks.get(at), expected) {
            return Err(syntax_near(toks.get(at)));
        }
        at += 1;
    }
    let range_right = is_word(toks.get(at), "RIGHT");
    if range_right || is_word(toks.get(at), "LEFT") {
        at += 1;
    }
    if !is_word(toks.get(at), "FOR") || !is_word(toks.get(at + 1), "VALUES") {
        return Err(syntax_near(toks.get(at)));
    }
    let open = at + 2;
    if !matches!(toks.get(open), Some(Token::LParen)) {
        return Err(syntax_near(toks.get(open)));
    }
    let close = matching_paren(toks, open)?;
    if close + 1 != toks.len() {
        return Err(syntax_near(toks.get(close + 1)));
    }
    let mut boundaries = Vec::new();
    for part in split_top_level(&toks[open + 1..close], |t| matches!(t, Token::Comma)) {
        boundaries.push(boundary(part)?);
    }
    if boundaries.windows(2).any(|w| w[0] >= w[1]) {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!(
                "the boundary values of partition function '{name}' must be distinct and ascending here (SQL Server error 7708)"
            ),
        ));
    }
    Ok(PartitionFunction {
        name,
        range_right,
        boundaries,
    })
}

fn boundary(part: &[Token]) -> SqlResult<i64> {
    let (negative, digits) = match part {
        [Token::Minus, Token::Number(n, _)] => (true, n),
        [Token::Number(n, _)] => (false, n),
        other => {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!(
                    "a partition boundary must be an integer literal, not {}",
                    render(other)
                ),
            ));
        }
    };
    let value: i64 = digits.parse().map_err(|_| {
        SqlError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("the partition boundary {digits} is out of range"),
        )
    })?;
    Ok(if negative { -value } else { value })
}

/// Parses `ps AS PARTITION pf [ALL] TO (fg, …)` (after CREATE PARTITION SCHEME): the
/// scheme's name, its function's, whether ALL, and the number of filegroups.
fn parse_partition_scheme(toks: &[Token]) -> SqlResult<(String, String, bool, usize)> {
    let as_at = toks
        .iter()
        .position(|t| is_word(Some(t), "AS"))
        .ok_or_else(|| syntax_near(toks.last()))?;
    let name = name_of(&toks[..as_at])?;
    if !is_word(toks.get(as_at + 1), "PARTITION") {
        return Err(syntax_near(toks.get(as_at + 1)));
    }
    let to_at = toks
        .iter()
        .position(|t| is_word(Some(t), "TO"))
        .ok_or_else(|| syntax_near(toks.last()))?;
    let all = is_word(toks.get(to_at.wrapping_sub(1)), "ALL");
    let function_end = if all { to_at - 1 } else { to_at };
    let function = name_of(&toks[as_at + 2..function_end.max(as_at + 2)])?;
    let open = to_at + 1;
    if !matches!(toks.get(open), Some(Token::LParen)) {
        return Err(syntax_near(toks.get(open)));
    }
    let close = matching_paren(toks, open)?;
    if close + 1 != toks.len() {
        return Err(syntax_near(toks.get(close + 1)));
    }
    let filegroups = split_top_level(&toks[open + 1..close], |t| matches!(t, Token::Comma))
        .into_iter()
        .filter(|p| !p.is_empty())
        .count();
    Ok((name, function, all, filegroups))
}

impl TsqlSession {
    /// Reloads the objects if another session (or this one) changed them.
    pub(super) fn sync_objects(&mut self) -> SqlResult<()> {
        let db = Arc::clone(self.sql.database());
        if self.objects.generation == Some(db.tsql_generation()) {
            return Ok(());
        }
        let (generation, list) = db.tsql_objects();
        let mut objects = Objects {
            generation: Some(generation),
            ..Objects::default()
        };
        for object in list {
            load(&mut objects, &object).map_err(|e| {
                SqlError::new(
                    sqlstate::DATA_CORRUPTED,
                    format!(
                        "the stored T-SQL object '{}' does not load: {}",
                        object.name, e.message
                    ),
                )
            })?;
        }
        self.objects = objects;
        // Prepared statements may have had a function's value, or a table since re-made.
        self.cache.clear();
        Ok(())
    }

    /// `CREATE [OR ALTER] FUNCTION`: stored, so that every session calls it.
    pub(super) fn create_function(&mut self, function: &Function) -> SqlResult<()> {
        let (name, text) = (&function.name, &function.source);
        self.store_routine(TsqlKind::Function, name, text, function.replace)?;
        self.push_tag("CREATE FUNCTION");
        Ok(())
    }

    /// Stores a function's or procedure's CREATE text under `name` (replacing one of that
    /// kind only with `replace`, CREATE OR ALTER), so that every session runs it.
    pub(super) fn store_routine(
        &mut self,
        kind: TsqlKind,
        name: &str,
        text: &str,
        replace: bool,
    ) -> SqlResult<()> {
        let what = if kind == TsqlKind::Function {
            "function"
        } else {
            "procedure"
        };
        if self.depth > 0 {
            return Err(SqlError::unsupported(format!(
                "CREATE {} inside a function or procedure",
                what.to_uppercase()
            )));
        }
        if text.len() > usize::from(u16::MAX) {
            return Err(SqlError::new(
                sqlstate::PROGRAM_LIMIT_EXCEEDED,
                format!(
                    "a {what} of more than 65535 bytes of text (hotpage stores it in the database's metadata)"
                ),
            ));
        }
        self.sql.database().update_tsql_objects(|list| {
            let existing = list.iter().position(|o| o.kind == kind && o.name == name);
            match existing {
                Some(_) if !replace => return Err(duplicate(name)),
                Some(at) => list[at].text = text.to_string(),
                None => list.push(TsqlObject {
                    kind,
                    name: name.to_string(),
                    text: text.to_string(),
                }),
            }
            Ok(())
        })?;
        self.sync_objects()
    }

    /// `DROP FUNCTION [IF EXISTS] name`.
    pub(super) fn drop_function(&mut self, toks: &[Token]) -> SqlResult<()> {
        let if_exists = is_word(toks.get(2), "IF") && is_word(toks.get(3), "EXISTS");
        let name = name_of(&toks[if if_exists { 4 } else { 2 }..])?;
        let removed = self.remove_object(TsqlKind::Function, &name)?;
        if !removed && !if_exists {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!(
                    "cannot drop the function '{name}', because it does not exist (SQL Server error 3701)"
                ),
            ));
        }
        self.push_tag("DROP FUNCTION");
        Ok(())
    }

    /// Removes an object; false if there was none.
    fn remove_object(&mut self, kind: TsqlKind, name: &str) -> SqlResult<bool> {
        let removed = self.sql.database().update_tsql_objects(|list| {
            let before = list.len();
            list.retain(|o| !(o.kind == kind && o.name == name));
            Ok(list.len() != before)
        })?;
        self.sync_objects()?;
        Ok(removed)
    }

    /// `CREATE PARTITION FUNCTION …` / `CREATE PARTITION SCHEME …` (the tokens after
    /// PARTITION).
    pub(super) fn create_partition(&mut self, whole: &[Token], toks: &[Token]) -> SqlResult<()> {
        let what = toks.first().and_then(word).unwrap_or_default();
        let (kind, name) = match what.as_str() {
            "FUNCTION" => {
                let function = parse_partition_function(&toks[1..])?;
                (TsqlKind::PartitionFunction, function.name)
            }
            "SCHEME" => {
                let (name, function, all, filegroups) = parse_partition_scheme(&toks[1..])?;
                self.sync_objects()?;
                let Some(pf) = self.objects.partition_functions.get(&function) else {
                    return Err(undefined("partition function", &function, 7707));
                };
                let partitions = pf.boundaries.len() + 1;
                if !all && filegroups < partitions {
                    return Err(SqlError::new(
                        sqlstate::INVALID_PARAMETER_VALUE,
                        format!(
                            "the partition function '{function}' makes {partitions} partitions and the scheme names {filegroups} filegroups (SQL Server error 7707)"
                        ),
                    ));
                }
                (TsqlKind::PartitionScheme, name)
            }
            other => return Err(SqlError::unsupported(format!("CREATE PARTITION {other}"))),
        };
        let text = render(whole);
        self.sql.database().update_tsql_objects(|list| {
            let taken = list.iter().any(|o| {
                o.name == name
                    && matches!(
                        o.kind,
                        TsqlKind::PartitionFunction | TsqlKind::PartitionScheme
                    )
            });
            if taken {
                return Err(duplicate(&name));
            }
            list.push(TsqlObject {
                kind,
                name: name.clone(),
                text,
            });
            Ok(())
        })?;
        self.sync_objects()?;
        self.push_tag(&format!("CREATE PARTITION {what}"));
        Ok(())
    }

    /// `DROP PARTITION FUNCTION|SCHEME [IF EXISTS] name`: refused while a scheme uses the
    /// function, or a table the scheme.
    pub(super) fn drop_partition(&mut self, toks: &[Token]) -> SqlResult<()> {
        let what = toks.get(2).and_then(word).unwrap_or_default();
        let if_exists = is_word(toks.get(3), "IF") && is_word(toks.get(4), "EXISTS");
        let name = name_of(&toks[if if_exists { 5 } else { 3 }..])?;
        self.sync_objects()?;
        let kind = match what.as_str() {
            "FUNCTION" => {
                let users: Vec<&String> = self
                    .objects
                    .schemes
                    .iter()
                    .filter(|(_, f)| **f == name)
                    .map(|(s, _)| s)
                    .collect();
                if let Some(scheme) = users.first() {
                    return Err(in_use("partition function", &name, "scheme", scheme, 7706));
                }
                TsqlKind::PartitionFunction
            }
            "SCHEME" => {
                let engine = Arc::clone(self.sql.database().engine());
                let user = self
                    .objects
                    .tables_on_schemes
                    .iter()
                    .find(|(t, s)| **s == name && engine.table(t).is_ok());
                if let Some((table, _)) = user {
                    return Err(in_use("partition scheme", &name, "table", table, 7717));
                }
                TsqlKind::PartitionScheme
            }
            other => return Err(SqlError::unsupported(format!("DROP PARTITION {other}"))),
        };
        if !self.remove_object(kind, &name)? && !if_exists {
            let what = what.to_lowercase();
            return Err(undefined(&format!("partition {what}"), &name, 3701));
        }
        self.push_tag(&format!("DROP PARTITION {what}"));
        Ok(())
    }

    /// The partition function of scheme `scheme`.
    pub(super) fn scheme_function(&mut self, scheme: &str) -> SqlResult<PartitionFunction> {
        self.sync_objects()?;
        let function = self
            .objects
            .schemes
            .get(scheme)
            .ok_or_else(|| undefined("partition scheme", scheme, 2726))?;
        self.objects
            .partition_functions
            .get(function)
            .cloned()
            .ok_or_else(|| undefined("partition function", function, 7707))
    }

    /// Stores a table's T-SQL definition (replacing an earlier one of that name: a table
    /// dropped in the PostgreSQL dialect leaves none behind, see `SqlSession::drop_table`).
    pub(super) fn store_table_def(&mut self, def: &TableDef) -> SqlResult<()> {
        let text = def.to_stored()?;
        if text.len() > usize::from(u16::MAX) {
            return Err(SqlError::new(
                sqlstate::PROGRAM_LIMIT_EXCEEDED,
                format!(
                    "table \"{}\"'s T-SQL definition takes more than 65535 bytes (hotpage stores it in the database's metadata)",
                    def.name
                ),
            ));
        }
        self.sql.database().update_tsql_objects(|list| {
            list.retain(|o| !(o.kind == TsqlKind::TableDefinition && o.name == def.name));
            list.push(TsqlObject {
                kind: TsqlKind::TableDefinition,
                name: def.name.clone(),
                text,
            });
            Ok(())
        })?;
        self.sync_objects()
    }

    /// Records (or forgets, with None) the scheme a table was made on.
    pub(super) fn note_table_scheme(&mut self, table: &str, scheme: Option<&str>) -> SqlResult<()> {
        self.sync_objects()?;
        let current = self
            .objects
            .tables_on_schemes
            .get(table)
            .map(String::as_str);
        if current == scheme {
            return Ok(());
        }
        self.sql.database().update_tsql_objects(|list| {
            list.retain(|o| !(o.kind == TsqlKind::TableOnScheme && o.name == table));
            if let Some(scheme) = scheme {
                list.push(TsqlObject {
                    kind: TsqlKind::TableOnScheme,
                    name: table.to_string(),
                    text: scheme.to_string(),
                });
            }
            Ok(())
        })?;
        self.sync_objects()
    }
}

fn in_use(what: &str, name: &str, user_kind: &str, user: &str, number: u32) -> SqlError {
    SqlError::new(
        sqlstate::DEPENDENT_OBJECTS_STILL_EXIST,
        format!(
            "cannot drop {what} '{name}': {user_kind} '{user}' uses it (SQL Server error {number})"
        ),
    )
}

/// Parses one stored object into `objects`.
fn load(objects: &mut Objects, object: &TsqlObject) -> SqlResult<()> {
    match object.kind {
        TsqlKind::Function => {
            let stmts = parse::parse_batch(&object.text)?;
            let Some(Stmt::CreateFunction(function)) =
                stmts.into_iter().next().map(Stmt::into_unlocated)
            else {
                return Err(syntax_near(None));
            };
            objects
                .functions
                .insert(object.name.clone(), Arc::new(function));
        }
        TsqlKind::PartitionFunction => {
            let toks = parse::tokens(&object.text)?;
            let function = parse_partition_function(toks.get(3..).unwrap_or_default())?;
            objects
                .partition_functions
                .insert(object.name.clone(), function);
        }
        TsqlKind::PartitionScheme => {
            let toks = parse::tokens(&object.text)?;
            let (name, function, _, _) = parse_partition_scheme(toks.get(3..).unwrap_or_default())?;
            objects.schemes.insert(name, function);
        }
        TsqlKind::TableOnScheme => {
            objects
                .tables_on_schemes
                .insert(object.name.clone(), object.text.clone());
        }
        TsqlKind::TableDefinition => {
            let def = TableDef::from_stored(&object.text)?;
            objects.tables.insert(object.name.clone(), def);
        }
        TsqlKind::Procedure => load_procedure(objects, object)?,
    }
    Ok(())
}

fn load_procedure(objects: &mut Objects, object: &TsqlObject) -> SqlResult<()> {
    let procedure = super::procedures::parse_procedure(&object.text)?;
    objects
        .procedures
        .insert(object.name.clone(), Arc::new(procedure));
    Ok(())
}
