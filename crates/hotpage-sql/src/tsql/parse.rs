//! A batch's statements, found on sqlparser's tokens (`MsSqlDialect`): the control flow
//! (DECLARE, SET, WHILE, IF … ELSE, BEGIN … END, transactions, PRINT) is parsed here; every
//! other statement is kept as its tokens, for [`super::translate`].
//!
//! T-SQL needs no `;` between statements, so a statement ends where the next one starts:
//! at a statement keyword outside parentheses and CASE … END (see [`starts_statement`]).

use crate::error::{SqlError, SqlResult, sqlstate};
use sqlparser::dialect::MsSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};
use std::collections::HashSet;

/// One statement of a batch.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Stmt {
    /// `DECLARE @a int = 1, @b varchar(10)`.
    Declare(Vec<Declared>),
    /// `SET @a = e`, `SET @a += e` (op `+`), `-=`, `*=`, `/=`.
    SetVar {
        var: String,
        op: Option<char>,
        expr: Vec<Token>,
    },
    /// `SELECT [TOP (n)] @a = e, @b = e [FROM …]`: the variables and their expressions,
    /// the TOP clause's tokens, and the tokens from FROM on (with FROM or TOP, each
    /// variable gets its value from the query's last row).
    SelectAssign {
        items: Vec<(String, Vec<Token>)>,
        top: Vec<Token>,
        from: Option<Vec<Token>>,
    },
    /// `SET NOCOUNT ON` and other session options.
    SetOption(Vec<Token>),
    While {
        cond: Vec<Token>,
        body: Box<Stmt>,
    },
    If {
        cond: Vec<Token>,
        then: Box<Stmt>,
        otherwise: Option<Box<Stmt>>,
    },
    Block(Vec<Stmt>),
    BeginTran(Option<String>),
    Commit,
    Rollback,
    Print(Vec<Token>),
    /// `RETURN [expr]` (in a function's body).
    Return(Option<Vec<Token>>),
    /// `CREATE [OR ALTER] FUNCTION … RETURNS type … AS BEGIN … END`.
    CreateFunction(Function),
    /// `CREATE [OR ALTER] PROC[EDURE] name @p type [= default], … AS …`.
    CreateProcedure(Procedure),
    /// `BEGIN TRY … END TRY BEGIN CATCH … END CATCH`.
    TryCatch {
        body: Vec<Stmt>,
        handler: Vec<Stmt>,
    },
    /// Anything else: translated to the PostgreSQL dialect and run.
    Plain(Vec<Token>),
    /// A statement and the line of its text it begins on (1-based: the batch's, or a
    /// routine's with its CREATE on line 1), for ERROR_LINE().
    At {
        line: u32,
        stmt: Box<Stmt>,
    },
}

impl Stmt {
    /// The statement without its line.
    #[cfg(test)]
    pub(crate) fn unlocated(&self) -> &Stmt {
        match self {
            Stmt::At { stmt, .. } => stmt.unlocated(),
            other => other,
        }
    }

    /// [`unlocated`](Self::unlocated), by value.
    pub(crate) fn into_unlocated(self) -> Stmt {
        match self {
            Stmt::At { stmt, .. } => stmt.into_unlocated(),
            other => other,
        }
    }
}

/// A user scalar function: run by the same interpreter as batches.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Function {
    /// Its name, lower case, without `dbo.`.
    pub name: String,
    /// Parameters: name (lower case, with `@`) and type tokens.
    pub params: Vec<(String, Vec<Token>)>,
    pub returns: Vec<Token>,
    pub body: Box<Stmt>,
    /// `CREATE OR ALTER`: replaces a function of the same name.
    pub replace: bool,
    /// The whole CREATE statement as text (what the database stores).
    pub source: String,
}

/// A stored procedure: run by the same interpreter as batches.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Procedure {
    /// Its name, lower case, without `dbo.`.
    pub name: String,
    /// Parameters: name (lower case, with `@`), type tokens, default expression.
    pub params: Vec<Declared>,
    /// Per parameter: declared `OUTPUT` (its last value goes back to the caller's
    /// variable when the call passes one `OUTPUT`).
    pub outputs: Vec<bool>,
    /// The statements after AS, to the end of the batch (as SQL Server takes them).
    pub body: Box<Stmt>,
    /// `CREATE OR ALTER`: replaces a procedure of the same name.
    pub replace: bool,
    /// The whole CREATE statement as text (what the database stores).
    pub source: String,
}

/// One variable of a DECLARE: name (lower case), type tokens, initial value.
pub(crate) type Declared = (String, Vec<Token>, Option<Vec<Token>>);

/// The tokens of `text` without blanks and comments.
pub(crate) fn tokens(text: &str) -> SqlResult<Vec<Token>> {
    Ok(located_tokens(text)?.0)
}

/// [`tokens`], with the (1-based) line of `text` each token begins on.
fn located_tokens(text: &str) -> SqlResult<(Vec<Token>, Vec<u32>)> {
    let all = Tokenizer::new(&MsSqlDialect {}, text)
        .tokenize_with_location()
        .map_err(|e| SqlError::new(sqlstate::SYNTAX_ERROR, e.to_string()))?;
    Ok(all
        .into_iter()
        // Comments are whitespace tokens too.
        .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .map(|t| {
            (
                t.token,
                u32::try_from(t.span.start.line).unwrap_or(u32::MAX),
            )
        })
        .unzip())
}

/// [`render`], keeping the tokens' lines (`lines[i]` is `toks[i]`'s): the first token's
/// line is line 1 of the text, and each later token is on its own line relative to it, so
/// that a routine's text parses back with its statements' lines (ERROR_LINE()).
fn render_lines(toks: &[Token], lines: &[u32]) -> String {
    let first = lines.first().copied().unwrap_or(1);
    let mut line = first;
    let mut out = String::new();
    for (token, &at) in toks.iter().zip(lines) {
        if at > line {
            for _ in line..at {
                out.push('\n');
            }
            line = at;
        } else if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&render(std::slice::from_ref(token)));
    }
    out
}

/// Tokens as T-SQL text that tokenizes back to them: strings and bracketed names are
/// quoted again (a token's own Display does not double a quote inside).
pub(crate) fn render(toks: &[Token]) -> String {
    toks.iter()
        .map(|t| match t {
            Token::SingleQuotedString(s) => format!("'{}'", s.replace('\'', "''")),
            Token::NationalStringLiteral(s) => format!("N'{}'", s.replace('\'', "''")),
            Token::Word(w) if w.quote_style == Some('[') => {
                format!("[{}]", w.value.replace(']', "]]"))
            }
            Token::Word(w) if w.quote_style == Some('"') => {
                format!("\"{}\"", w.value.replace('"', "\"\""))
            }
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The upper-cased text of an unquoted word (keywords, `@vars`, names).
pub(crate) fn word(token: &Token) -> Option<String> {
    match token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

pub(crate) fn is_word(token: Option<&Token>, expected: &str) -> bool {
    token.and_then(word).as_deref() == Some(expected)
}

/// Parses a batch into its statements.
pub(crate) fn parse_batch(text: &str) -> SqlResult<Vec<Stmt>> {
    let (toks, lines) = located_tokens(text)?;
    let mut parser = StmtParser {
        toks,
        lines,
        pos: 0,
    };
    let mut out = Vec::new();
    while parser.skip_semicolons() {
        if is_word(parser.peek(), "END") || is_word(parser.peek(), "ELSE") {
            return Err(syntax_near(parser.peek()));
        }
        out.push(parser.statement()?);
    }
    check_declarations(&out, &mut HashSet::new())?;
    Ok(out)
}

/// A variable is its batch's (or routine's), whatever block declares it: a name declared
/// twice is SQL Server's error 134, found before anything runs (as its compile finds it).
/// A DECLARE run again (in a loop) is not a second declaration. Routines' bodies are
/// checked when they are parsed, against their parameters.
pub(crate) fn check_declarations(stmts: &[Stmt], declared: &mut HashSet<String>) -> SqlResult<()> {
    stmts
        .iter()
        .try_for_each(|s| check_declaration(s, declared))
}

fn check_declaration(stmt: &Stmt, declared: &mut HashSet<String>) -> SqlResult<()> {
    match stmt {
        Stmt::Declare(vars) => {
            for (name, _, _) in vars {
                if !declared.insert(name.clone()) {
                    return Err(SqlError::new(
                        "42710",
                        format!(
                            "the variable name '{name}' has already been declared (SQL Server error 134)"
                        ),
                    ));
                }
            }
            Ok(())
        }
        Stmt::While { body, .. } => check_declaration(body, declared),
        Stmt::If {
            then, otherwise, ..
        } => {
            check_declaration(then, declared)?;
            match otherwise {
                Some(otherwise) => check_declaration(otherwise, declared),
                None => Ok(()),
            }
        }
        Stmt::Block(body) => check_declarations(body, declared),
        Stmt::TryCatch { body, handler } => {
            check_declarations(body, declared)?;
            check_declarations(handler, declared)
        }
        Stmt::At { stmt, .. } => check_declaration(stmt, declared),
        _ => Ok(()),
    }
}

pub(crate) fn syntax_near(token: Option<&Token>) -> SqlError {
    let near = token.map_or_else(|| "end of batch".to_string(), |t| format!("'{t}'"));
    SqlError::new(
        sqlstate::SYNTAX_ERROR,
        format!("incorrect syntax near {near} (SQL Server error 102)"),
    )
}

const STATEMENT_WORDS: &[&str] = &[
    "DECLARE",
    "SET",
    "WHILE",
    "IF",
    "BEGIN",
    "END",
    "ELSE",
    "COMMIT",
    "ROLLBACK",
    "PRINT",
    "CREATE",
    "ALTER",
    "DROP",
    "INSERT",
    "UPDATE",
    "DELETE",
    "RETURN",
    "DBCC",
    "KILL",
    "USE",
    "CHECKPOINT",
    "EXEC",
    "EXECUTE",
    "TRUNCATE",
    "SELECT",
    "BREAK",
    "CONTINUE",
    "THROW",
    "RAISERROR",
];

/// Words after which `IF` belongs to the statement (`DROP TABLE IF EXISTS`).
const OBJECT_WORDS: &[&str] = &[
    "TABLE",
    "SEQUENCE",
    "FUNCTION",
    "VIEW",
    "PROCEDURE",
    "PROC",
    "INDEX",
    "TYPE",
    "SCHEMA",
    "DATABASE",
];

struct StmtParser {
    toks: Vec<Token>,
    /// The line each token begins on.
    lines: Vec<u32>,
    pos: usize,
}

impl StmtParser {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.pos)
    }

    fn peek_word(&self, offset: usize) -> Option<String> {
        self.toks.get(self.pos + offset).and_then(word)
    }

    /// Skips `;`s; false at the end of the batch.
    fn skip_semicolons(&mut self) -> bool {
        while matches!(self.peek(), Some(Token::SemiColon)) {
            self.pos += 1;
        }
        self.pos < self.toks.len()
    }

    /// The statement here, with its line.
    fn statement(&mut self) -> SqlResult<Stmt> {
        let line = self.lines.get(self.pos).copied().unwrap_or(1);
        let stmt = Box::new(self.unlocated_statement()?);
        Ok(Stmt::At { line, stmt })
    }

    fn unlocated_statement(&mut self) -> SqlResult<Stmt> {
        let first = self.peek_word(0).unwrap_or_default();
        match first.as_str() {
            "DECLARE" => self.declare(),
            "SET" if is_variable(self.toks.get(self.pos + 1)) => self.set_var(),
            "SET" => {
                let toks = self.take_statement(self.pos + 1);
                Ok(Stmt::SetOption(toks))
            }
            "WHILE" => {
                self.pos += 1;
                let cond = self.condition()?;
                let body = Box::new(self.body()?);
                Ok(Stmt::While { cond, body })
            }
            "IF" => self.if_statement(),
            "BEGIN" => self.begin(),
            "COMMIT" | "ROLLBACK" => {
                self.pos += 1;
                if matches!(
                    self.peek_word(0).as_deref(),
                    Some("TRAN" | "TRANSACTION" | "WORK")
                ) {
                    self.pos += 1;
                    self.skip_transaction_name();
                }
                Ok(if first == "COMMIT" {
                    Stmt::Commit
                } else {
                    Stmt::Rollback
                })
            }
            "PRINT" => {
                let toks = self.take_statement(self.pos + 1);
                Ok(Stmt::Print(toks[1..].to_vec()))
            }
            "RETURN" => {
                let toks = self.take_statement(self.pos + 1);
                Ok(Stmt::Return((toks.len() > 1).then(|| toks[1..].to_vec())))
            }
            "CREATE" if self.creates("PROC") || self.creates("PROCEDURE") => {
                self.create_procedure()
            }
            "CREATE"
                if self.peek_word(1).as_deref() == Some("FUNCTION")
                    || (self.peek_word(1).as_deref() == Some("OR")
                        && self.peek_word(3).as_deref() == Some("FUNCTION")) =>
            {
                self.create_function()
            }
            "SELECT"
                if is_variable(self.toks.get(self.top_end(self.pos + 1)))
                    && matches!(
                        self.toks.get(self.top_end(self.pos + 1) + 1),
                        Some(Token::Eq)
                    ) =>
            {
                self.select_assign()
            }
            _ => {
                let toks = self.take_statement(self.pos + 1);
                Ok(Stmt::Plain(toks))
            }
        }
    }

    /// Whether the statement here is `CREATE [OR ALTER] what`.
    fn creates(&self, what: &str) -> bool {
        self.peek_word(1).as_deref() == Some(what)
            || (self.peek_word(1).as_deref() == Some("OR")
                && self.peek_word(3).as_deref() == Some(what))
    }

    /// `CREATE [OR ALTER] PROC[EDURE] name [(]@p [AS] type [= default] [, …][)] [WITH …] AS
    /// statements`: the body is the rest of the batch.
    fn create_procedure(&mut self) -> SqlResult<Stmt> {
        let start = self.pos;
        let replace = is_word(self.toks.get(start + 1), "OR");
        let name_at = start + if replace { 4 } else { 2 };
        let at = name_end(&self.toks, name_at);
        let name = super::translate::name_of(&self.toks[name_at..at])?;
        // The AS that begins the body: the first one at depth 0 not after a parameter.
        let mut depth = 0usize;
        let as_at = (at..self.toks.len()).find(|&i| {
            match self.toks[i] {
                Token::LParen => depth += 1,
                Token::RParen => depth = depth.saturating_sub(1),
                _ => {}
            }
            depth == 0 && is_word(self.toks.get(i), "AS") && !is_variable(self.toks.get(i - 1))
        });
        let as_at = as_at.ok_or_else(|| syntax_near(None))?;
        let with_at = (at..as_at).find(|&i| is_word(self.toks.get(i), "WITH"));
        let mut head = &self.toks[at..with_at.unwrap_or(as_at)];
        if let [Token::LParen, inner @ .., Token::RParen] = head {
            head = inner;
        }
        let mut params = Vec::new();
        let mut outputs = Vec::new();
        for part in split_top_level(head, |t| matches!(t, Token::Comma)) {
            if !part.is_empty() {
                let (param, output) = procedure_param(part)?;
                params.push(param);
                outputs.push(output);
            }
        }
        self.pos = as_at + 1;
        let mut body = Vec::new();
        while self.skip_semicolons() {
            body.push(self.statement()?);
        }
        let mut declared = params.iter().map(|(name, _, _)| name.clone()).collect();
        check_declarations(&body, &mut declared)?;
        Ok(Stmt::CreateProcedure(Procedure {
            name,
            params,
            outputs,
            body: Box::new(Stmt::Block(body)),
            replace,
            source: render_lines(&self.toks[start..self.pos], &self.lines[start..self.pos]),
        }))
    }

    /// `CREATE [OR ALTER] FUNCTION name (@p type, …) RETURNS type [WITH …] AS BEGIN … END`.
    fn create_function(&mut self) -> SqlResult<Stmt> {
        let start = self.pos;
        let open = (start..self.toks.len())
            .find(|&i| matches!(self.toks[i], Token::LParen))
            .ok_or_else(|| syntax_near(None))?;
        let name_start = (start..open)
            .find(|&i| is_word(self.toks.get(i), "FUNCTION"))
            .ok_or_else(|| syntax_near(None))?;
        let name = self.toks[name_start + 1..open]
            .iter()
            .rev()
            .find_map(|t| match t {
                Token::Word(w) => Some(w.value.to_lowercase()),
                _ => None,
            })
            .ok_or_else(|| syntax_near(self.toks.get(open)))?;
        let close = super::translate::matching_paren(&self.toks, open)?;
        let mut params = Vec::new();
        for part in split_top_level(&self.toks[open + 1..close], |t| matches!(t, Token::Comma)) {
            match part {
                [] => {}
                [var, ty @ ..] if !ty.is_empty() && !ty.iter().any(|t| matches!(t, Token::Eq)) => {
                    params.push((variable_name(var)?, ty.to_vec()));
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "the function parameter {} (T-SQL: @name type, no defaults)",
                        other
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(" ")
                    )));
                }
            }
        }
        if !is_word(self.toks.get(close + 1), "RETURNS") {
            return Err(SqlError::unsupported(
                "a function that is not a scalar function (RETURNS type … AS BEGIN … END)",
            ));
        }
        let as_at = (close + 2..self.toks.len())
            .find(|&i| is_word(self.toks.get(i), "AS"))
            .ok_or_else(|| syntax_near(None))?;
        let with_at = (close + 2..as_at).find(|&i| is_word(self.toks.get(i), "WITH"));
        let returns = self.toks[close + 2..with_at.unwrap_or(as_at)].to_vec();
        self.pos = as_at + 1;
        if !is_word(self.peek(), "BEGIN") {
            return Err(SqlError::unsupported(
                "a function whose body is not BEGIN … END (inline table functions)",
            ));
        }
        let body = Box::new(self.statement()?);
        let mut declared = params.iter().map(|(name, _)| name.clone()).collect();
        check_declaration(&body, &mut declared)?;
        Ok(Stmt::CreateFunction(Function {
            name,
            params,
            returns,
            body,
            replace: is_word(self.toks.get(start + 1), "OR"),
            source: render_lines(&self.toks[start..self.pos], &self.lines[start..self.pos]),
        }))
    }

    fn skip_transaction_name(&mut self) {
        if let Some(Token::Word(w)) = self.peek() {
            let upper = w.value.to_ascii_uppercase();
            if w.quote_style.is_some() || !STATEMENT_WORDS.contains(&upper.as_str()) {
                self.pos += 1;
            }
        }
    }

    /// The tokens from the current position to the end of the statement (which is
    /// consumed); the scan for its end begins at `scan_from`.
    fn take_statement(&mut self, scan_from: usize) -> Vec<Token> {
        let end = statement_end(&self.toks, self.pos, scan_from);
        let toks = self.toks[self.pos..end].to_vec();
        self.pos = end;
        toks
    }

    fn declare(&mut self) -> SqlResult<Stmt> {
        self.pos += 1;
        let toks = self.take_statement(self.pos);
        let mut vars = Vec::new();
        for part in split_top_level(&toks, |t| matches!(t, Token::Comma)) {
            let Some((name, rest)) = part.split_first() else {
                return Err(syntax_near(None));
            };
            let name = variable_name(name)?;
            let eq = rest.iter().position(|t| matches!(t, Token::Eq));
            let (ty, init) = match eq {
                Some(at) => (rest[..at].to_vec(), Some(rest[at + 1..].to_vec())),
                None => (rest.to_vec(), None),
            };
            let ty: Vec<Token> = match ty.split_first() {
                Some((first, rest)) if is_word(Some(first), "AS") => rest.to_vec(),
                _ => ty,
            };
            if ty.is_empty() || init.as_ref().is_some_and(Vec::is_empty) {
                return Err(syntax_near(None));
            }
            vars.push((name, ty, init));
        }
        Ok(Stmt::Declare(vars))
    }

    fn set_var(&mut self) -> SqlResult<Stmt> {
        let var = variable_name(&self.toks[self.pos + 1])?;
        self.pos += 2;
        let op = match (self.toks.get(self.pos), self.toks.get(self.pos + 1)) {
            (Some(Token::Eq), _) => None,
            (Some(Token::Plus), Some(Token::Eq)) => Some('+'),
            (Some(Token::Minus), Some(Token::Eq)) => Some('-'),
            (Some(Token::Mul), Some(Token::Eq)) => Some('*'),
            (Some(Token::Div), Some(Token::Eq)) => Some('/'),
            (other, _) => return Err(syntax_near(other)),
        };
        self.pos += if op.is_some() { 2 } else { 1 };
        let expr = self.take_statement(self.pos);
        if expr.is_empty() {
            return Err(syntax_near(None));
        }
        Ok(Stmt::SetVar { var, op, expr })
    }

    /// Where a `TOP n` or `TOP (n)` at `at` ends (`at` itself when there is none).
    fn top_end(&self, at: usize) -> usize {
        if !is_word(self.toks.get(at), "TOP") {
            return at;
        }
        match self.toks.get(at + 1) {
            Some(Token::LParen) => {
                super::translate::matching_paren(&self.toks, at + 1).map_or(at, |close| close + 1)
            }
            Some(_) => at + 2,
            None => at,
        }
    }

    fn select_assign(&mut self) -> SqlResult<Stmt> {
        let top_at = self.pos + 1;
        self.pos = self.top_end(top_at);
        let top = self.toks[top_at..self.pos].to_vec();
        let all = self.take_statement(self.pos);
        let mut depth = 0usize;
        let from_at = all.iter().position(|t| {
            match t {
                Token::LParen => depth += 1,
                Token::RParen => depth = depth.saturating_sub(1),
                _ => {}
            }
            depth == 0 && is_word(Some(t), "FROM")
        });
        let (toks, from) = match from_at {
            Some(at) => (&all[..at], Some(all[at..].to_vec())),
            None => (&all[..], None),
        };
        let mut out = Vec::new();
        for part in split_top_level(toks, |t| matches!(t, Token::Comma)) {
            match part {
                [var, Token::Eq, expr @ ..] if !expr.is_empty() => {
                    out.push((variable_name(var)?, expr.to_vec()));
                }
                _ => return Err(syntax_near(part.first())),
            }
        }
        Ok(Stmt::SelectAssign {
            items: out,
            top,
            from,
        })
    }

    /// An IF or WHILE condition: up to the statement that is its body.
    fn condition(&mut self) -> SqlResult<Vec<Token>> {
        let start = self.pos;
        let end = statement_end(&self.toks, start, start);
        if end == start {
            return Err(syntax_near(self.peek()));
        }
        self.pos = end;
        Ok(self.toks[start..end].to_vec())
    }

    /// The statement an IF, ELSE or WHILE runs.
    fn body(&mut self) -> SqlResult<Stmt> {
        if !self.skip_semicolons() || is_word(self.peek(), "END") || is_word(self.peek(), "ELSE") {
            return Err(syntax_near(self.peek()));
        }
        self.statement()
    }

    fn if_statement(&mut self) -> SqlResult<Stmt> {
        self.pos += 1;
        let cond = self.condition()?;
        let then = Box::new(self.body()?);
        let save = self.pos;
        while matches!(self.peek(), Some(Token::SemiColon)) {
            self.pos += 1;
        }
        let otherwise = if is_word(self.peek(), "ELSE") {
            self.pos += 1;
            Some(Box::new(self.body()?))
        } else {
            self.pos = save;
            None
        };
        Ok(Stmt::If {
            cond,
            then,
            otherwise,
        })
    }

    fn begin(&mut self) -> SqlResult<Stmt> {
        self.pos += 1;
        match self.peek_word(0).as_deref() {
            Some("TRAN" | "TRANSACTION") => {
                self.pos += 1;
                let at = self.pos;
                self.skip_transaction_name();
                let name = match (self.pos > at, self.toks.get(at)) {
                    (true, Some(Token::Word(w))) => Some(w.value.clone()),
                    _ => None,
                };
                return Ok(Stmt::BeginTran(name));
            }
            Some("TRY") => return self.try_catch(),
            Some("CATCH" | "DISTRIBUTED" | "ATOMIC" | "DIALOG" | "CONVERSATION") => {
                return Err(SqlError::unsupported(format!(
                    "BEGIN {} (T-SQL)",
                    self.peek_word(0).unwrap_or_default()
                )));
            }
            _ => {}
        }
        let mut body = Vec::new();
        loop {
            if !self.skip_semicolons() {
                return Err(SqlError::new(
                    sqlstate::SYNTAX_ERROR,
                    "BEGIN without its END (SQL Server error 102)",
                ));
            }
            if is_word(self.peek(), "END") {
                self.pos += 1;
                return Ok(Stmt::Block(body));
            }
            if is_word(self.peek(), "ELSE") {
                return Err(syntax_near(self.peek()));
            }
            body.push(self.statement()?);
        }
    }
}

impl StmtParser {
    /// `TRY … END TRY BEGIN CATCH … END CATCH` (after BEGIN).
    fn try_catch(&mut self) -> SqlResult<Stmt> {
        self.pos += 1;
        let body = self.statements_to_end("TRY")?;
        if !is_word(self.peek(), "BEGIN") || self.peek_word(1).as_deref() != Some("CATCH") {
            return Err(SqlError::new(
                sqlstate::SYNTAX_ERROR,
                "END TRY must be followed by BEGIN CATCH (SQL Server error 102)",
            ));
        }
        self.pos += 2;
        let handler = self.statements_to_end("CATCH")?;
        Ok(Stmt::TryCatch { body, handler })
    }

    /// Statements up to `END label` (consumed).
    fn statements_to_end(&mut self, label: &str) -> SqlResult<Vec<Stmt>> {
        let mut body = Vec::new();
        loop {
            if !self.skip_semicolons() {
                return Err(SqlError::new(
                    sqlstate::SYNTAX_ERROR,
                    format!("BEGIN {label} without its END {label} (SQL Server error 102)"),
                ));
            }
            if is_word(self.peek(), "END") && self.peek_word(1).as_deref() == Some(label) {
                self.pos += 2;
                return Ok(body);
            }
            if is_word(self.peek(), "END") || is_word(self.peek(), "ELSE") {
                return Err(syntax_near(self.peek()));
            }
            body.push(self.statement()?);
        }
    }
}

/// Where an object's name `part[.part…]` that begins at `start` ends.
pub(crate) fn name_end(toks: &[Token], start: usize) -> usize {
    let mut at = start;
    loop {
        match toks.get(at) {
            Some(Token::Word(w))
                if !w.value.starts_with('@')
                    && (at == start || matches!(toks[at - 1], Token::Period)) =>
            {
                at += 1;
            }
            Some(Token::Period) if at > start => at += 1,
            _ => return at,
        }
    }
}

/// One parameter of CREATE PROCEDURE: `@p [AS] type [= default] [OUT | OUTPUT]`, and
/// whether it is an OUTPUT parameter.
pub(crate) fn procedure_param(part: &[Token]) -> SqlResult<(Declared, bool)> {
    let Some((var, rest)) = part.split_first() else {
        return Err(syntax_near(None));
    };
    let name = variable_name(var)?;
    let rest = match rest.split_first() {
        Some((first, tail)) if is_word(Some(first), "AS") => tail,
        _ => rest,
    };
    let (rest, output) = match rest.split_last() {
        Some((last, head)) if is_word(Some(last), "OUTPUT") || is_word(Some(last), "OUT") => {
            (head, true)
        }
        _ => (rest, false),
    };
    if let Some(mode) = rest.iter().find(|t| {
        ["OUTPUT", "OUT", "READONLY"]
            .iter()
            .any(|m| is_word(Some(t), m))
    }) {
        return Err(SqlError::unsupported(format!(
            "a procedure parameter {mode} here (T-SQL: OUTPUT ends a parameter; READONLY table parameters are not supported)"
        )));
    }
    let eq = rest.iter().position(|t| matches!(t, Token::Eq));
    let (ty, default) = match eq {
        Some(at) => (rest[..at].to_vec(), Some(rest[at + 1..].to_vec())),
        None => (rest.to_vec(), None),
    };
    if ty.is_empty() || default.as_ref().is_some_and(Vec::is_empty) {
        return Err(syntax_near(part.last()));
    }
    Ok(((name, ty, default), output))
}

pub(crate) fn is_variable(token: Option<&Token>) -> bool {
    matches!(token, Some(Token::Word(w)) if w.quote_style.is_none() && w.value.starts_with('@') && !w.value.starts_with("@@"))
}

fn variable_name(token: &Token) -> SqlResult<String> {
    if let Token::Word(w) = token
        && is_variable(Some(token))
    {
        return Ok(w.value.to_lowercase());
    }
    Err(SqlError::new(
        sqlstate::SYNTAX_ERROR,
        format!("a variable (@name) was expected, not '{token}' (SQL Server error 102)"),
    ))
}

/// Where the statement that begins at `start` ends: the first token at or after `scan_from`
/// that starts another statement, outside parentheses and CASE … END.
pub(crate) fn statement_end(toks: &[Token], start: usize, scan_from: usize) -> usize {
    let mut depth = 0usize;
    let mut cases = 0usize;
    let mut is_insert = is_word(toks.get(start), "INSERT");
    // An INSERT's source: its first SELECT belongs to it unless VALUES came first.
    let mut seen_source = false;
    // A WITH's statement: its first SELECT, INSERT, UPDATE or DELETE after the WITH queries.
    let mut awaits_body = is_word(toks.get(start), "WITH");
    // The statement is an UPDATE (written first, or as a WITH's body): its SET is its own.
    let mut is_update = is_word(toks.get(start), "UPDATE");
    for (index, token) in toks.iter().enumerate().skip(start) {
        match token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::SemiColon if depth == 0 => return index,
            _ => {}
        }
        let Some(w) = word(token) else { continue };
        if depth == 0 && (w == "VALUES" || w == "DEFAULT") {
            seen_source = true;
        }
        if w == "CASE" {
            cases += 1;
            continue;
        }
        if w == "END" && cases > 0 {
            cases -= 1;
            continue;
        }
        if depth == 0
            && cases == 0
            && index > start.max(scan_from)
            && starts_with_query(toks, index)
        {
            return index;
        }
        if depth > 0 || cases > 0 || index < scan_from || !STATEMENT_WORDS.contains(&w.as_str()) {
            continue;
        }
        let previous = index
            .checked_sub(1)
            .and_then(|i| toks.get(i))
            .and_then(word);
        // UPDATE and DELETE too, so that `WITH … UPDATE` is one statement (refused as
        // a whole, 0A000) rather than a WITH cut off before its body.
        if awaits_body && matches!(w.as_str(), "SELECT" | "INSERT" | "UPDATE" | "DELETE") {
            awaits_body = false;
            is_insert = w == "INSERT";
            is_update = w == "UPDATE";
            continue;
        }
        let continues = match w.as_str() {
            "SELECT" => {
                let first = is_insert && !seen_source;
                seen_source = true;
                first
                    || matches!(
                        previous.as_deref(),
                        Some("UNION" | "ALL" | "EXCEPT" | "INTERSECT" | "AS")
                    )
            }
            "IF" => previous.is_some_and(|p| OBJECT_WORDS.contains(&p.as_str())),
            // `ALTER TABLE t ADD … DEFAULT … FOR c` has no statement word; `SET` after
            // UPDATE's table belongs to it.
            // `ALTER INDEX … SET (…)` and `ALTER DATABASE … SET …` too.
            "SET" => is_update || is_word(toks.get(start), "ALTER"),
            _ => false,
        };
        if !continues {
            return index;
        }
    }
    toks.len()
}

/// Whether a WITH query (`WITH name AS (` or `WITH name (columns) AS (`) begins at `at`.
/// WITH is no statement word: table hints, `START WITH` and `WITH SCHEMABINDING` use it
/// inside statements.
fn starts_with_query(toks: &[Token], at: usize) -> bool {
    if !is_word(toks.get(at), "WITH") || word_token(toks.get(at + 1)).is_none() {
        return false;
    }
    let mut next = at + 2;
    if matches!(toks.get(next), Some(Token::LParen)) {
        let mut depth = 0usize;
        while let Some(token) = toks.get(next) {
            match token {
                Token::LParen => depth += 1,
                Token::RParen if depth == 1 => break,
                Token::RParen => depth -= 1,
                _ => {}
            }
            next += 1;
        }
        next += 1;
    }
    is_word(toks.get(next), "AS") && matches!(toks.get(next + 1), Some(Token::LParen))
}

fn word_token(token: Option<&Token>) -> Option<&sqlparser::tokenizer::Word> {
    match token {
        Some(Token::Word(w)) => Some(w),
        _ => None,
    }
}

/// Splits at `is_separator` tokens outside parentheses.
pub(crate) fn split_top_level(
    toks: &[Token],
    is_separator: impl Fn(&Token) -> bool,
) -> Vec<&[Token]> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut from = 0;
    for (index, token) in toks.iter().enumerate() {
        match token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            t if depth == 0 && is_separator(t) => {
                parts.push(&toks[from..index]);
                from = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&toks[from..]);
    parts
}
