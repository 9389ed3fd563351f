//! Parsing SQL text with sqlparser's PostgreSQL dialect: the checks before a statement's
//! tree is planned (a NUL, an expression nested too deep), the SQL standard's string
//! continuation, COPY's inline data and VACUUM's PostgreSQL forms, and syntax errors with
//! their position.

use super::{copy, maintenance};
use crate::error::{SqlError, SqlResult, sqlstate};
use sqlparser::ast::{Expr, Statement};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// How deep an expression may nest (operators, calls, casts): deeper is 54001, as
/// PostgreSQL refuses an expression past its `max_stack_depth`. Everything that walks a
/// statement's tree (sqlparser's clone, display, visitors and drop, the planners) recurses
/// once per level; at this depth all of it fits a 2 MiB thread stack, Rust's default (a
/// test runs each operator there). Compiling and evaluating grow the stack on the heap
/// besides (`recursive`), their frames being the largest.
pub(crate) const EXPR_DEPTH_MAX: usize = 1000;

/// Statements up to this long cannot nest deeper than [`EXPR_DEPTH_MAX`] (each level takes
/// at least one byte of text), so they are not walked to check.
const SHALLOW_SQL_BYTES: usize = EXPR_DEPTH_MAX;

/// Stack for checking and dropping a long statement's tree: the tree may nest about as
/// deep as the text is long (sqlparser's parser grows its own stack), and a drop takes a
/// small frame per level. Reserved address space only: pages are used as touched.
fn deep_check_stack_bytes(sql_bytes: usize) -> usize {
    (1 << 20) + sql_bytes.saturating_mul(256)
}

/// Parses SQL text with the PostgreSQL dialect; a syntax error gets its position, and an
/// expression nested deeper than [`EXPR_DEPTH_MAX`] is 54001.
pub(crate) fn parse(sql: &str) -> SqlResult<Vec<Statement>> {
    if sql.contains('\0') {
        // PostgreSQL's text cannot hold NUL, and its wire protocol cannot carry one in a
        // statement: a NUL from a script (`hotpage sql -f`) would be stored in a text
        // value and later cut short or refused by every client that reads it.
        return Err(SqlError::new(
            sqlstate::CHARACTER_NOT_IN_REPERTOIRE,
            "invalid byte sequence for encoding \"UTF8\": 0x00",
        ));
    }
    if sql.len() <= SHALLOW_SQL_BYTES {
        return parse_parts(sql);
    }
    // On a stack of its own: the check, and the drop of a tree it refuses, recurse as
    // deep as the tree, which only the parser (growing its stack) has walked so far.
    stacker::grow(deep_check_stack_bytes(sql.len()), || {
        let statements = parse_parts(sql)?;
        match nesting_past_limit(&statements) {
            false => Ok(statements),
            true => {
                drop(statements);
                Err(SqlError::new(
                    sqlstate::STATEMENT_TOO_COMPLEX,
                    "stack depth limit exceeded",
                )
                .with_hint(format!(
                    "An expression may nest at most {EXPR_DEPTH_MAX} levels (operators, \
                     calls, casts). Write a long chain of OR as IN (…), or split the \
                     expression."
                )))
            }
        }
    })
}

/// True if an expression of `statements` nests deeper than [`EXPR_DEPTH_MAX`]. The walk
/// stops at the first level past it.
fn nesting_past_limit(statements: &[Statement]) -> bool {
    use sqlparser::ast::{Visit, Visitor};
    use std::ops::ControlFlow;
    struct Depth(usize);
    impl Visitor for Depth {
        type Break = ();
        fn pre_visit_expr(&mut self, _: &Expr) -> ControlFlow<()> {
            self.0 += 1;
            if self.0 > EXPR_DEPTH_MAX {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
        fn post_visit_expr(&mut self, _: &Expr) -> ControlFlow<()> {
            self.0 -= 1;
            ControlFlow::Continue(())
        }
    }
    statements
        .iter()
        .any(|statement| statement.visit(&mut Depth(0)).is_break())
}

/// True if a string literal may be followed by another after only blanks (`'a'` then
/// `'b'`): a byte scan, so that the token pass below runs only where it may matter.
fn may_have_adjacent_literals(sql: &str) -> bool {
    let bytes = sql.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| {
        b == b'\''
            && bytes[i + 1..]
                .iter()
                .position(|c| !c.is_ascii_whitespace())
                .is_some_and(|n| n > 0 && bytes[i + 1 + n] == b'\'')
    })
}

/// The SQL standard's string continuation, as PostgreSQL has it: two string literals
/// with only whitespace between them, a newline among it, are one (`'a'` newline `'b'` is
/// `'ab'`). Without a newline they are a syntax error. sqlparser's PostgreSQL dialect
/// took the second for a column alias (`SELECT 'a' 'b'` gave `a` in a column "b").
fn join_adjacent_literals(
    tokens: Vec<sqlparser::tokenizer::TokenWithSpan>,
) -> SqlResult<Vec<sqlparser::tokenizer::TokenWithSpan>> {
    use sqlparser::tokenizer::{Token, Whitespace};
    let mut out: Vec<sqlparser::tokenizer::TokenWithSpan> = Vec::with_capacity(tokens.len());
    // Since the last string literal in `out`: only whitespace, and whether a newline.
    let mut gap: Option<(usize, bool)> = None;
    for token in tokens {
        match (&token.token, gap) {
            (Token::Whitespace(w), Some((at, newline))) => {
                let breaks = matches!(
                    w,
                    Whitespace::Newline | Whitespace::SingleLineComment { .. }
                );
                gap = Some((at, newline || breaks));
                out.push(token);
            }
            (Token::SingleQuotedString(next), Some((at, newline))) => {
                if !newline {
                    return Err(SqlError::new(
                        sqlstate::SYNTAX_ERROR,
                        format!("syntax error at or near \"'{next}'\""),
                    ));
                }
                out.truncate(at + 1);
                if let Token::SingleQuotedString(first) = &mut out[at].token {
                    first.push_str(next);
                }
                gap = Some((at, false));
            }
            (Token::SingleQuotedString(_), None) => {
                gap = Some((out.len(), false));
                out.push(token);
            }
            _ => {
                gap = None;
                out.push(token);
            }
        }
    }
    Ok(out)
}

/// [`Parser::parse_sql`], with adjacent string literals joined first where there may be
/// any.
fn parse_sql_text(sql: &str) -> SqlResult<Vec<Statement>> {
    let dialect = PostgreSqlDialect {};
    if !may_have_adjacent_literals(sql) {
        return Parser::parse_sql(&dialect, sql).map_err(|e| syntax_error(sql, &e));
    }
    let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| {
            syntax_error(
                sql,
                &sqlparser::parser::ParserError::TokenizerError(e.to_string()),
            )
        })?;
    Parser::new(&dialect)
        .with_tokens_with_locations(join_adjacent_literals(tokens)?)
        .parse_statements()
        .map_err(|e| syntax_error(sql, &e))
}

fn parse_parts(sql: &str) -> SqlResult<Vec<Statement>> {
    // sqlparser reads everything after `COPY … FROM STDIN;` as the COPY's inline data, so
    // the statements after one in a Query would vanish: parse the two parts apart.
    if let Some(cut) = copy::end_of_copy_from_stdin(sql)
        && !sql[cut..].trim().is_empty()
    {
        let mut statements = parse_one_part(&sql[..cut])?;
        let before = sql[..cut].chars().count();
        let rest = parse_parts(&sql[cut..]).map_err(|e| {
            let position = e.position.map(|p| p + before);
            SqlError { position, ..e }
        })?;
        statements.extend(rest);
        return Ok(statements);
    }
    parse_one_part(sql)
}

fn parse_one_part(sql: &str) -> SqlResult<Vec<Statement>> {
    if let Some(rewritten) = maintenance::postgres_vacuum(sql).or_else(|| copy::postgres_copy(sql))
    {
        return parse_sql_text(&rewritten);
    }
    parse_sql_text(sql)
}

/// sqlparser's "… at Line: L, Column: C" as a 1-based character position.
fn syntax_error(sql: &str, error: &sqlparser::parser::ParserError) -> SqlError {
    let text = error.to_string();
    let message = text
        .trim_start_matches("sql parser error: ")
        .split(" at Line: ")
        .next()
        .unwrap_or_default()
        .to_string();
    let position = text.rsplit_once(" at Line: ").and_then(|(_, at)| {
        let (line, column) = at.split_once(", Column: ")?;
        let line: usize = line.trim().parse().ok()?;
        let column: usize = column.trim().parse().ok()?;
        let before: usize = sql
            .split('\n')
            .take(line.saturating_sub(1))
            .map(|l| l.chars().count() + 1)
            .sum();
        Some(before + column)
    });
    SqlError::new(sqlstate::SYNTAX_ERROR, format!("syntax error: {message}")).at(position)
}
