//! T-SQL tokens to PostgreSQL-dialect text that the SQL layer already runs: names
//! (`[x]` and `dbo.`), variables (as literals of their values), functions, `TOP`, table
//! hints, `OUTPUT INSERTED.*`, `INSERT … SELECT` without FROM, the DMV names.

use super::parse::{is_variable, is_word, split_top_level, syntax_near, word};
use crate::error::{SqlError, SqlResult, sqlstate};
use sqlparser::tokenizer::Token;

mod dates;

/// What the translation asks of the session.
pub(crate) trait Resolve {
    /// A variable's value as a literal (`5`, `'x'`, `CAST(NULL AS integer)`).
    fn variable(&self, name: &str) -> SqlResult<String>;
    /// Whether a variable holds text (its `+` is concatenation).
    fn is_text_variable(&self, name: &str) -> bool;
    /// `@@IDENTITY`, `@@ROWCOUNT` … as a literal.
    fn global(&self, name: &str) -> SqlResult<String>;
    /// `OBJECT_ID(name [, type])`: the object's id, or None.
    fn object_id(&self, name: &str, object_type: Option<&str>) -> Option<i64>;
    /// Whether an object of one of `types` (`U`, `SO`, `FN` …) named `name` exists.
    fn object_exists(&self, name: &str, types: &[String]) -> bool;
    /// Whether the session turned trace flag `flag` on for itself (`DBCC TRACEON(flag)`;
    /// the global flags are the database's, read where they act).
    fn session_trace_flag(&self, flag: u32) -> bool;
}

/// An object's name as the SQL layer knows it: no brackets, no `dbo.`, lower case.
pub(crate) fn object_name(text: &str) -> String {
    let parts: Vec<String> = text
        .split('.')
        .map(|p| {
            p.trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_lowercase()
        })
        .collect();
    parts.last().cloned().unwrap_or_default()
}

/// The name in a run of name tokens (`dbo . [t]`): its last part, folded.
pub(crate) fn name_of(toks: &[Token]) -> SqlResult<String> {
    match toks.iter().rev().find(|t| !matches!(t, Token::Period)) {
        Some(Token::Word(w)) => Ok(w.value.to_lowercase()),
        other => Err(syntax_near(other)),
    }
}

/// A T-SQL type as the SQL layer's type name.
pub(crate) fn pg_type(toks: &[Token]) -> SqlResult<String> {
    let Some(Token::Word(w)) = toks.first() else {
        return Err(syntax_near(toks.first()));
    };
    let name = w.value.to_lowercase();
    let args: Vec<String> = match toks.get(1) {
        Some(Token::LParen) => toks[2..]
            .iter()
            .filter(|t| !matches!(t, Token::Comma | Token::RParen))
            .map(|t| t.to_string().to_lowercase())
            .collect(),
        _ => Vec::new(),
    };
    let length = args.first().cloned();
    let max = length.as_deref() == Some("max");
    Ok(match name.as_str() {
        "bigint" => "bigint".into(),
        "int" | "integer" => "integer".into(),
        "smallint" | "tinyint" | "bit" => "smallint".into(),
        "nvarchar" | "varchar" | "nchar" | "char" | "sysname" if max => "text".into(),
        "nvarchar" | "varchar" => match length {
            Some(n) => format!("varchar({n})"),
            None => "varchar(30)".into(),
        },
        "nchar" | "char" => format!("char({})", length.unwrap_or_else(|| "1".into())),
        "sysname" => "varchar(128)".into(),
        "text" | "ntext" => "text".into(),
        "datetime" | "datetime2" | "smalldatetime" => "timestamp".into(),
        "date" => "date".into(),
        "datetimeoffset" => "timestamptz".into(),
        "uniqueidentifier" => "uuid".into(),
        "float" => "double precision".into(),
        "double" if is_word(toks.get(1), "PRECISION") => "double precision".into(),
        "real" => "real".into(),
        "money" => "numeric(19,4)".into(),
        "smallmoney" => "numeric(10,4)".into(),
        "decimal" | "numeric" if args.is_empty() => "numeric(18,0)".into(),
        "decimal" | "numeric" => format!("numeric({})", args.join(",")),
        "varbinary" | "binary" | "image" => "bytea".into(),
        other => {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_OBJECT,
                format!("type \"{other}\" does not exist (SQL Server error 2715)"),
            ));
        }
    })
}

/// `toks` without the parentheses around all of it (`((0))` is `0`): a DEFAULT's
/// generator is recognised by its bare call.
pub(crate) fn strip_parens(mut toks: &[Token]) -> &[Token] {
    while matches!(toks.first(), Some(Token::LParen))
        && matching_paren(toks, 0).is_ok_and(|close| close + 1 == toks.len())
    {
        toks = &toks[1..toks.len() - 1];
    }
    toks
}

/// Index of the `)` matching the `(` at `open`.
pub(crate) fn matching_paren(toks: &[Token], open: usize) -> SqlResult<usize> {
    let mut depth = 0usize;
    for (index, token) in toks.iter().enumerate().skip(open) {
        match token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Ok(index);
                }
            }
            _ => {}
        }
    }
    Err(SqlError::new(
        sqlstate::SYNTAX_ERROR,
        "a '(' without its ')' (SQL Server error 102)",
    ))
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn string_value(token: Option<&Token>) -> Option<String> {
    match token {
        Some(Token::SingleQuotedString(s) | Token::NationalStringLiteral(s)) => Some(s.clone()),
        _ => None,
    }
}

/// The text being built: tokens separated by blanks, none around `.`.
#[derive(Default)]
struct Out {
    text: String,
    glue: bool,
}

impl Out {
    fn push(&mut self, piece: &str) {
        let joins = piece == "." || piece == "::";
        if !self.text.is_empty() && !self.glue && !joins {
            self.text.push(' ');
        }
        self.text.push_str(piece);
        self.glue = joins;
    }
}

/// An expression or statement fragment as PostgreSQL text.
pub(crate) fn expr(toks: &[Token], env: &dyn Resolve) -> SqlResult<String> {
    let mut out = Out::default();
    rewrite(toks, env, &mut out)?;
    Ok(out.text)
}

fn rewrite(toks: &[Token], env: &dyn Resolve, out: &mut Out) -> SqlResult<()> {
    let mut i = 0;
    while i < toks.len() {
        i = rewrite_one(toks, i, env, out)?;
    }
    Ok(())
}

/// Rewrites the token at `i` (and what belongs to it); returns the next index.
fn rewrite_one(toks: &[Token], i: usize, env: &dyn Resolve, out: &mut Out) -> SqlResult<usize> {
    let token = &toks[i];
    let next = toks.get(i + 1);
    let upper = word(token);
    if let Token::Word(w) = token {
        let schema = w.value.eq_ignore_ascii_case("dbo") || w.value.eq_ignore_ascii_case("sys");
        if schema && matches!(next, Some(Token::Period)) {
            if w.value.eq_ignore_ascii_case("sys") {
                return system_object(toks, i + 2, env, out);
            }
            return Ok(i + 2);
        }
    }
    if let Some(upper) = upper.as_deref()
        && let Some(after) = rewrite_word(toks, i, upper, env, out)?
    {
        return Ok(after);
    }
    if matches!(token, Token::LParen) && has_top(&toks[i + 1..]) {
        // A subquery with TOP (a WITH query's, an IN list's): LIMIT inside its parentheses.
        let close = matching_paren(toks, i)?;
        out.push(&format!("({})", select(&toks[i + 1..close], env)?));
        return Ok(close + 1);
    }
    match token {
        Token::Word(w) if w.quote_style == Some('[') => {
            out.push(&format!(
                "\"{}\"",
                w.value.to_lowercase().replace('"', "\"\"")
            ));
        }
        Token::Word(w) if w.quote_style.is_none() && w.value.starts_with("@@") => {
            out.push(&env.global(&w.value.to_ascii_uppercase())?);
        }
        t if is_variable(Some(t)) => {
            if let Token::Word(w) = t {
                out.push(&env.variable(&w.value.to_lowercase())?);
            }
        }
        Token::NationalStringLiteral(s) | Token::SingleQuotedString(s) => out.push(&quote(s)),
        // T-SQL's `^` is exclusive or, PostgreSQL's `#`.
        Token::Caret => out.push("#"),
        Token::Plus
            if is_text(i.checked_sub(1).and_then(|p| toks.get(p)), env) || is_text(next, env) =>
        {
            // T-SQL's `+` on strings is concatenation.
            out.push("||");
        }
        other => out.push(&other.to_string()),
    }
    Ok(i + 1)
}

fn is_text(token: Option<&Token>, env: &dyn Resolve) -> bool {
    match token {
        Some(Token::SingleQuotedString(_) | Token::NationalStringLiteral(_)) => true,
        Some(t @ Token::Word(w)) if is_variable(Some(t)) => {
            env.is_text_variable(&w.value.to_lowercase())
        }
        _ => false,
    }
}

/// `sys.x`: the DMVs the SQL layer has under another name.
fn system_object(toks: &[Token], at: usize, env: &dyn Resolve, out: &mut Out) -> SqlResult<usize> {
    let name = match toks.get(at) {
        Some(Token::Word(w)) => w.value.to_lowercase(),
        other => return Err(syntax_near(other)),
    };
    match name.as_str() {
        "dm_os_wait_stats" => out.push("hotpage_wait_stats"),
        "dm_exec_requests" => out.push("hotpage_exec_requests"),
        "objects" => out.push("hotpage_objects"),
        "fn_dblog" => return dblog_call(toks, at + 1, env, out),
        "dm_db_index_physical_stats" => return index_physical_stats(toks, at + 1, out),
        other => {
            return Err(SqlError::unsupported(format!(
                "the system view sys.{other} in this form (hotpage has sys.objects, sys.dm_os_wait_stats, sys.dm_exec_requests, sys.dm_db_index_physical_stats and sys.fn_dblog, and sys.partition_schemes and sys.partition_functions inside IF [NOT] EXISTS)"
            )));
        }
    }
    Ok(at + 1)
}

/// `fn_dblog(start, end)` as `hotpage_dblog(start, end)`, with a third argument `TRUE` when
/// the session has trace flag 2537 on (read the inactive log too): the flag is the
/// session's, as in SQL Server, so it travels with the call rather than in the database.
fn dblog_call(toks: &[Token], open: usize, env: &dyn Resolve, out: &mut Out) -> SqlResult<usize> {
    if !matches!(toks.get(open), Some(Token::LParen)) {
        return Err(syntax_near(toks.get(open)));
    }
    let close = matching_paren(toks, open)?;
    out.push("hotpage_dblog(");
    out.glue = true;
    rewrite(&toks[open + 1..close], env, out)?;
    if env.session_trace_flag(crate::session::DBLOG_INACTIVE_LOG_TRACE_FLAG) {
        // The flag is the third argument: a bound left out is NULL (no bound).
        let inner = &toks[open + 1..close];
        let given = if inner.is_empty() {
            0
        } else {
            split_top_level(inner, |t| matches!(t, Token::Comma)).len()
        };
        out.glue = given == 0;
        out.push(match given {
            0 => "NULL, NULL, TRUE",
            1 => ", NULL, TRUE",
            // Two bounds, or too many: hotpage_dblog reports the count.
            _ => ", TRUE",
        });
    }
    out.glue = true;
    out.push(")");
    out.glue = false;
    Ok(close + 1)
}

/// `sys.dm_db_index_physical_stats(DB_ID(), OBJECT_ID(N't'[, N'U']) | NULL, index, partition,
/// mode)` as `hotpage_index_physical_stats('t' | NULL)` (every index, every mode's figures).
fn index_physical_stats(toks: &[Token], open: usize, out: &mut Out) -> SqlResult<usize> {
    if !matches!(toks.get(open), Some(Token::LParen)) {
        return Err(syntax_near(toks.get(open)));
    }
    let close = matching_paren(toks, open)?;
    let args = split_top_level(&toks[open + 1..close], |t| matches!(t, Token::Comma));
    let object = match args.get(1) {
        Some([func, Token::LParen, name, ..]) if is_word(Some(func), "OBJECT_ID") => {
            string_value(Some(name)).map(|n| quote(&object_name(&n)))
        }
        Some([null]) if is_word(Some(null), "NULL") => Some("NULL".to_string()),
        _ => None,
    };
    let Some(object) = object else {
        return Err(SqlError::unsupported(
            "sys.dm_db_index_physical_stats other than (DB_ID(), OBJECT_ID(N'name') | NULL, …)",
        ));
    };
    out.push(&format!("hotpage_index_physical_stats({object})"));
    Ok(close + 1)
}

/// Functions, `EXISTS (SELECT … FROM sys.objects …)`, `NEXT VALUE FOR`, table hints.
fn rewrite_word(
    toks: &[Token],
    i: usize,
    upper: &str,
    env: &dyn Resolve,
    out: &mut Out,
) -> SqlResult<Option<usize>> {
    let call = matches!(toks.get(i + 1), Some(Token::LParen));
    let simple = |name: &str, out: &mut Out| {
        out.push(name);
        Ok(Some(i + 1))
    };
    match upper {
        "SYSDATETIME" | "GETDATE" | "GETUTCDATE" | "SYSUTCDATETIME" if call => simple("now", out),
        "NEWID" if call => simple("gen_random_uuid", out),
        "NEWSEQUENTIALID" if call => simple("uuidv7", out),
        "ISNULL" if call => simple("coalesce", out),
        "LEN" if call => simple("length", out),
        "LOG" if call => log(toks, i, env, out).map(Some),
        "COUNT_BIG" if call => simple("count", out),
        "FN_DBLOG" if call => dblog_call(toks, i + 1, env, out).map(Some),
        "ERROR_NUMBER" | "ERROR_MESSAGE" | "ERROR_SEVERITY" | "ERROR_STATE" | "ERROR_LINE"
        | "ERROR_PROCEDURE" | "XACT_STATE"
            if call =>
        {
            let close = matching_paren(toks, i + 1)?;
            out.push(&env.global(upper)?);
            Ok(Some(close + 1))
        }
        "SCOPE_IDENTITY" if call => {
            let close = matching_paren(toks, i + 1)?;
            out.push(&env.global("@@IDENTITY")?);
            Ok(Some(close + 1))
        }
        "OBJECT_ID" if call => {
            let close = matching_paren(toks, i + 1)?;
            let args = split_top_level(&toks[i + 2..close], |t| matches!(t, Token::Comma));
            let name = args.first().and_then(|a| string_value(a.first()));
            let Some(name) = name else {
                return Err(SqlError::unsupported("OBJECT_ID of anything but a string"));
            };
            let object_type = args.get(1).and_then(|a| string_value(a.first()));
            let id = env.object_id(&object_name(&name), object_type.as_deref());
            out.push(&id.map_or_else(|| "CAST(NULL AS integer)".to_string(), |v| v.to_string()));
            Ok(Some(close + 1))
        }
        "OBJECT_NAME" if call => {
            // OBJECT_NAME(id [, database_id]): run per row, so a column's ids work too.
            let close = matching_paren(toks, i + 1)?;
            let args = split_top_level(&toks[i + 2..close], |t| matches!(t, Token::Comma));
            let Some(id) = args.first().filter(|a| !a.is_empty()) else {
                return Err(syntax_near(toks.get(close)));
            };
            out.push("hotpage_object_name(");
            rewrite(id, env, out)?;
            out.push(")");
            Ok(Some(close + 1))
        }
        "DB_ID" if call => {
            let close = matching_paren(toks, i + 1)?;
            out.push("1");
            Ok(Some(close + 1))
        }
        "CONVERT" | "TRY_CONVERT" if call => convert(toks, i, env, out).map(Some),
        "CAST" if call => cast(toks, i, env, out).map(Some),
        "DATEDIFF" | "DATEDIFF_BIG" if call => dates::date_diff(toks, i, env, out).map(Some),
        "DATEADD" if call => dates::date_add(toks, i, env, out).map(Some),
        "DATEPART" if call => dates::date_part(toks, i, env, out).map(Some),
        "YEAR" | "MONTH" | "DAY" if call => dates::part_call(toks, i, upper, env, out).map(Some),
        "EOMONTH" if call => dates::end_of_month(toks, i, env, out).map(Some),
        "DATEFROMPARTS" if call => simple("make_date", out),
        "EXISTS" if is_sys_objects_query(toks, i + 1) => {
            let close = matching_paren(toks, i + 1)?;
            let found = sys_objects_exists(&toks[i + 2..close], env)?;
            out.push(if found { "TRUE" } else { "FALSE" });
            Ok(Some(close + 1))
        }
        "NEXT" if is_word(toks.get(i + 1), "VALUE") && is_word(toks.get(i + 2), "FOR") => {
            let mut end = i + 3;
            while matches!(toks.get(end), Some(Token::Word(_) | Token::Period)) {
                end += 1;
            }
            let name = name_of(&toks[i + 3..end])?;
            out.push(&format!("nextval({})", quote(&name)));
            Ok(Some(end))
        }
        "WITH" if is_table_hint(toks, i + 1) => Ok(Some(matching_paren(toks, i + 1)? + 1)),
        "STRING_AGG" if call => string_agg(toks, i, env, out).map(Some),
        "ORDER" if is_word(toks.get(i + 1), "BY") => order_by(toks, i, env, out).map(Some),
        "CROSS" | "OUTER" if is_word(toks.get(i + 1), "APPLY") => {
            apply(toks, i, upper == "OUTER", env, out).map(Some)
        }
        _ => Ok(None),
    }
}

/// `LOG(x [, base])`: SQL Server's LOG is the natural logarithm (PostgreSQL's `log` is
/// base 10), so `ln(x)`, or `ln(x) / ln(base)`.
fn log(toks: &[Token], i: usize, env: &dyn Resolve, out: &mut Out) -> SqlResult<usize> {
    let close = matching_paren(toks, i + 1)?;
    let args = split_top_level(&toks[i + 2..close], |t| matches!(t, Token::Comma));
    match args.as_slice() {
        [x] => {
            out.push("ln(");
            rewrite(x, env, out)?;
            out.push(")");
        }
        [x, base] => {
            out.push("(ln(");
            rewrite(x, env, out)?;
            out.push(") / ln(");
            rewrite(base, env, out)?;
            out.push("))");
        }
        _ => return Err(syntax_near(toks.get(close))),
    }
    Ok(close + 1)
}

/// `STRING_AGG(value, separator) [WITHIN GROUP (ORDER BY …)]` as PostgreSQL's
/// `string_agg(value, separator ORDER BY …)`. SQL Server converts a value of any type to
/// text; PostgreSQL's string_agg takes text, so the value is cast.
fn string_agg(toks: &[Token], i: usize, env: &dyn Resolve, out: &mut Out) -> SqlResult<usize> {
    let close = matching_paren(toks, i + 1)?;
    let args = split_top_level(&toks[i + 2..close], |t| matches!(t, Token::Comma));
    let [value, separator] = args.as_slice() else {
        return Err(syntax_near(toks.get(close)));
    };
    out.push("string_agg(CAST(");
    rewrite(value, env, out)?;
    out.push("AS text),");
    rewrite(separator, env, out)?;
    let mut end = close + 1;
    if is_word(toks.get(end), "WITHIN")
        && is_word(toks.get(end + 1), "GROUP")
        && matches!(toks.get(end + 2), Some(Token::LParen))
    {
        let group_close = matching_paren(toks, end + 2)?;
        if !is_word(toks.get(end + 3), "ORDER") {
            return Err(syntax_near(toks.get(end + 3)));
        }
        rewrite(&toks[end + 3..group_close], env, out)?;
        end = group_close + 1;
    }
    out.push(")");
    Ok(end)
}

/// `ORDER BY item [ASC | DESC], …` with SQL Server's order of NULLs made explicit: NULL
/// sorts below every value there (first ascending, last descending), and above every
/// value in PostgreSQL. The list ends at its closing parenthesis (a window's, WITHIN
/// GROUP's), at a frame (`ROWS`, `RANGE`), or at the clause after it.
fn order_by(toks: &[Token], i: usize, env: &dyn Resolve, out: &mut Out) -> SqlResult<usize> {
    let start = i + 2;
    let mut end = start;
    let mut depth = 0usize;
    while let Some(token) = toks.get(end) {
        match token {
            Token::LParen => depth += 1,
            Token::RParen | Token::SemiColon if depth == 0 => break,
            Token::RParen => depth -= 1,
            Token::Word(w) if depth == 0 && ends_order_by(w) => break,
            _ => {}
        }
        end += 1;
    }
    out.push("ORDER BY");
    let items = split_top_level(&toks[start..end], |t| matches!(t, Token::Comma));
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push(",");
        }
        rewrite(item, env, out)?;
        out.push(if is_word(item.last(), "DESC") {
            "NULLS LAST"
        } else {
            "NULLS FIRST"
        });
    }
    Ok(end)
}

/// A word after an ORDER BY list: a window frame's, or the next clause's.
fn ends_order_by(w: &sqlparser::tokenizer::Word) -> bool {
    w.quote_style.is_none()
        && matches!(
            w.value.to_ascii_uppercase().as_str(),
            "ROWS"
                | "RANGE"
                | "GROUPS"
                | "OFFSET"
                | "FETCH"
                | "LIMIT"
                | "FOR"
                | "OPTION"
                | "UNION"
                | "EXCEPT"
                | "INTERSECT"
        )
}

/// `CROSS APPLY item` as `CROSS JOIN LATERAL item`, and `OUTER APPLY item` as `LEFT JOIN
/// LATERAL item ON TRUE`: the item (a subquery or a function call, with its alias) runs
/// once per row of the items before it, as in SQL Server.
fn apply(
    toks: &[Token],
    i: usize,
    outer: bool,
    env: &dyn Resolve,
    out: &mut Out,
) -> SqlResult<usize> {
    let start = i + 2;
    let mut end = start;
    // The item: a parenthesized subquery, or a (qualified) function name and its
    // arguments; then `[AS] alias [(columns)]`.
    while matches!(toks.get(end), Some(Token::Word(_) | Token::Period))
        && !is_word(toks.get(end), "AS")
    {
        end += 1;
    }
    if !matches!(toks.get(end), Some(Token::LParen)) {
        return Err(syntax_near(toks.get(end)));
    }
    end = matching_paren(toks, end)? + 1;
    if is_word(toks.get(end), "AS") {
        end += 1;
    }
    if matches!(toks.get(end), Some(Token::Word(w)) if !is_clause_word(w)) {
        end += 1;
        if matches!(toks.get(end), Some(Token::LParen)) {
            end = matching_paren(toks, end)? + 1;
        }
    }
    out.push(if outer {
        "LEFT JOIN LATERAL"
    } else {
        "CROSS JOIN LATERAL"
    });
    rewrite(&toks[start..end], env, out)?;
    if outer {
        out.push("ON TRUE");
    }
    Ok(end)
}

/// A word that ends a FROM item rather than naming it (an alias is any other word).
fn is_clause_word(w: &sqlparser::tokenizer::Word) -> bool {
    w.quote_style.is_none()
        && matches!(
            w.value.to_ascii_uppercase().as_str(),
            "WHERE"
                | "GROUP"
                | "ORDER"
                | "HAVING"
                | "CROSS"
                | "OUTER"
                | "INNER"
                | "LEFT"
                | "RIGHT"
                | "FULL"
                | "JOIN"
                | "ON"
                | "UNION"
                | "EXCEPT"
                | "INTERSECT"
                | "OPTION"
                | "FOR"
        )
}

/// `CONVERT(type, expr [, style])` as `CAST(expr AS type)`.
fn convert(toks: &[Token], i: usize, env: &dyn Resolve, out: &mut Out) -> SqlResult<usize> {
    let close = matching_paren(toks, i + 1)?;
    let args = split_top_level(&toks[i + 2..close], |t| matches!(t, Token::Comma));
    let [ty, value, ..] = args.as_slice() else {
        return Err(syntax_near(toks.get(close)));
    };
    out.push("CAST(");
    rewrite(value, env, out)?;
    out.push(&format!("AS {})", pg_type(ty)?));
    Ok(close + 1)
}

/// `CAST(expr AS type)` with the type as SQL Server reads it: `decimal` alone is
/// decimal(18,0) there (`CAST(2.5 AS decimal)` is 3), where PostgreSQL's is unconstrained.
fn cast(toks: &[Token], i: usize, env: &dyn Resolve, out: &mut Out) -> SqlResult<usize> {
    let close = matching_paren(toks, i + 1)?;
    let inner = &toks[i + 2..close];
    // The type is last and has no AS in it, so the last AS is CAST's own.
    let Some(at) = inner.iter().rposition(|t| is_word(Some(t), "AS")) else {
        return Err(syntax_near(toks.get(close)));
    };
    out.push("CAST(");
    rewrite(&inner[..at], env, out)?;
    out.push(&format!("AS {})", pg_type(&inner[at + 1..])?));
    Ok(close + 1)
}

const TABLE_HINTS: &[&str] = &[
    "NOLOCK",
    "READUNCOMMITTED",
    "READCOMMITTED",
    "ROWLOCK",
    "PAGLOCK",
    "TABLOCK",
    "TABLOCKX",
    "UPDLOCK",
    "HOLDLOCK",
    "NOWAIT",
    "READPAST",
    "XLOCK",
    "SERIALIZABLE",
    "REPEATABLEREAD",
];

/// `WITH (NOLOCK)` and the other table hints: accepted, and ignored (a reader here never
/// blocks on a writer's rows anyway).
fn is_table_hint(toks: &[Token], open: usize) -> bool {
    matches!(toks.get(open), Some(Token::LParen))
        && toks
            .get(open + 1)
            .and_then(word)
            .is_some_and(|w| TABLE_HINTS.contains(&w.as_str()))
}

fn is_sys_objects_query(toks: &[Token], open: usize) -> bool {
    matches!(toks.get(open), Some(Token::LParen))
        && is_word(toks.get(open + 1), "SELECT")
        && sys_view(toks, open).is_some()
}

/// The catalog view an `EXISTS (SELECT … FROM sys.x …)` reads, if it is one answered here
/// rather than as a query: `PARTITION_SCHEMES` or `PARTITION_FUNCTIONS` (the session runs
/// other EXISTS subqueries, `sys.objects` among them, before translation).
pub(crate) fn sys_view(toks: &[Token], open: usize) -> Option<String> {
    toks.windows(3).skip(open).take(8).find_map(|w| {
        let view = w.get(2).and_then(word)?;
        let known = ["PARTITION_SCHEMES", "PARTITION_FUNCTIONS"];
        (is_word(w.first(), "SYS") && known.contains(&view.as_str())).then_some(view)
    })
}

/// `SELECT * FROM sys.partition_schemes | sys.partition_functions WHERE name = N'…'`, the
/// existence test the articles guard their partition DDL with (a fixed grammar: these
/// are not views).
fn sys_objects_exists(query: &[Token], env: &dyn Resolve) -> SqlResult<bool> {
    let unsupported = || {
        SqlError::unsupported(
            "a query on sys.partition_schemes / sys.partition_functions other than WHERE name = N'name'",
        )
    };
    let where_at = query
        .iter()
        .position(|t| is_word(Some(t), "WHERE"))
        .ok_or_else(unsupported)?;
    let name = match &query[where_at + 1..] {
        [column, Token::Eq, value] if is_word(Some(column), "NAME") => {
            string_value(Some(value)).map(|n| object_name(&n))
        }
        _ => None,
    };
    let kind = if sys_view(query, 0).as_deref() == Some("PARTITION_SCHEMES") {
        "PS"
    } else {
        "PF"
    };
    Ok(env.object_exists(&name.ok_or_else(unsupported)?, &[kind.to_string()]))
}

/// A statement other than control flow, as PostgreSQL text.
pub(crate) fn statement(toks: &[Token], env: &dyn Resolve) -> SqlResult<String> {
    match word(&toks[0]).as_deref() {
        Some("INSERT") => insert(toks, env),
        Some("SELECT") => select(toks, env),
        Some("WITH") => with_statement(toks, env),
        _ => expr(toks, env),
    }
}

/// T-SQL's WITH: a WITH query may name itself (recursion) without PostgreSQL's RECURSIVE,
/// which also lets a query that does not name itself run as before.
fn with_statement(toks: &[Token], env: &dyn Resolve) -> SqlResult<String> {
    if is_word(toks.get(1), "RECURSIVE") {
        return Err(syntax_near(toks.get(1)));
    }
    Ok(format!("WITH RECURSIVE {}", expr(&toks[1..], env)?))
}

/// Whether `toks` begin `SELECT [DISTINCT | ALL] TOP`.
fn has_top(toks: &[Token]) -> bool {
    let at = if is_word(toks.get(1), "DISTINCT") || is_word(toks.get(1), "ALL") {
        2
    } else {
        1
    };
    is_word(toks.first(), "SELECT") && is_word(toks.get(at), "TOP")
}

/// `SELECT TOP (n) …` as `SELECT … LIMIT n`.
fn select(toks: &[Token], env: &dyn Resolve) -> SqlResult<String> {
    let mut at = 1;
    if is_word(toks.get(at), "DISTINCT") || is_word(toks.get(at), "ALL") {
        at += 1;
    }
    if !is_word(toks.get(at), "TOP") {
        return expr(toks, env);
    }
    let (limit, after) = match toks.get(at + 1) {
        Some(Token::LParen) => {
            let close = matching_paren(toks, at + 1)?;
            (expr(&toks[at + 2..close], env)?, close + 1)
        }
        Some(_) => (expr(&toks[at + 1..at + 2], env)?, at + 2),
        None => return Err(syntax_near(None)),
    };
    if is_word(toks.get(after), "PERCENT") || is_word(toks.get(after), "WITH") {
        return Err(SqlError::unsupported("TOP … PERCENT and TOP … WITH TIES"));
    }
    let mut rest = toks[..at].to_vec();
    rest.extend_from_slice(&toks[after..]);
    Ok(format!("{} LIMIT {limit}", expr(&rest, env)?))
}

/// `INSERT [INTO] t [(cols)] [OUTPUT INSERTED.*] VALUES … | SELECT e, … | DEFAULT VALUES`.
fn insert(toks: &[Token], env: &dyn Resolve) -> SqlResult<String> {
    let mut body: Vec<Token> = vec![toks[0].clone()];
    let mut rest = &toks[1..];
    if !is_word(rest.first(), "INTO") {
        body.push(Token::make_keyword("INTO"));
    }
    let depth_zero = depth_zero_positions(rest);
    let find = |w: &str| {
        depth_zero
            .iter()
            .copied()
            .find(|&p| is_word(rest.get(p), w))
    };
    let source = ["VALUES", "SELECT", "DEFAULT", "EXEC", "EXECUTE"]
        .iter()
        .filter_map(|w| find(w))
        .min()
        .ok_or_else(|| syntax_near(None))?;
    let mut returning = None;
    if let Some(output) = find("OUTPUT").filter(|&p| p < source) {
        returning = Some(output_items(&rest[output + 1..source], env)?);
        body.extend_from_slice(&rest[..output]);
        rest = &rest[source..];
    } else {
        body.extend_from_slice(&rest[..source]);
        rest = &rest[source..];
    }
    if is_word(rest.first(), "DEFAULT") && matches!(body.last(), Some(Token::RParen)) {
        // `INSERT t (c2) DEFAULT VALUES`: T-SQL takes (and ignores) the column list.
        if let Some(open) = body.iter().position(|t| matches!(t, Token::LParen)) {
            body.truncate(open);
        }
    }
    let mut text = expr(&body, env)?;
    if is_word(rest.first(), "SELECT") {
        if depth_zero_positions(rest)
            .iter()
            .any(|&p| is_word(rest.get(p), "FROM"))
        {
            return Err(SqlError::new(
                sqlstate::INTERNAL_ERROR,
                "INSERT … SELECT … FROM is run by the session, not translated",
            ));
        }
        text.push_str(" VALUES (");
        text.push_str(&expr(&rest[1..], env)?);
        text.push(')');
    } else if is_word(rest.first(), "EXEC") || is_word(rest.first(), "EXECUTE") {
        return Err(SqlError::unsupported("INSERT … EXEC"));
    } else {
        text.push(' ');
        text.push_str(&expr(rest, env)?);
    }
    if let Some(items) = returning {
        text.push_str(" RETURNING ");
        text.push_str(&items);
    }
    Ok(text)
}

/// For `INSERT … SELECT … FROM …`: where its SELECT starts (None for any other INSERT).
pub(crate) fn insert_select_from(toks: &[Token]) -> Option<usize> {
    let top = depth_zero_positions(toks);
    let select = top
        .iter()
        .copied()
        .find(|&p| is_word(toks.get(p), "SELECT") || is_word(toks.get(p), "VALUES"))?;
    let has_from = top
        .iter()
        .any(|&p| p > select && is_word(toks.get(p), "FROM"));
    (is_word(toks.get(select), "SELECT") && has_from).then_some(select)
}

/// `INSERT [INTO] t [(cols)] [OUTPUT …]` (an INSERT's head) with `VALUES ($1, …, $n)`.
pub(crate) fn insert_with_parameters(
    head: &[Token],
    columns: usize,
    env: &dyn Resolve,
) -> SqlResult<String> {
    let mut toks = head.to_vec();
    toks.push(Token::make_keyword("VALUES"));
    toks.push(Token::LParen);
    for n in 1..=columns {
        if n > 1 {
            toks.push(Token::Comma);
        }
        toks.push(Token::Placeholder(format!("${n}")));
    }
    toks.push(Token::RParen);
    insert(&toks, env)
}

/// `OUTPUT INSERTED.*, INSERTED.id` as RETURNING's items.
fn output_items(toks: &[Token], env: &dyn Resolve) -> SqlResult<String> {
    if toks.iter().any(|t| is_word(Some(t), "INTO")) {
        return Err(SqlError::unsupported("OUTPUT … INTO"));
    }
    let mut kept = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        let prefix = word(&toks[i]);
        if matches!(prefix.as_deref(), Some("INSERTED"))
            && matches!(toks.get(i + 1), Some(Token::Period))
        {
            i += 2;
            continue;
        }
        if matches!(prefix.as_deref(), Some("DELETED")) {
            return Err(SqlError::unsupported(
                "OUTPUT DELETED.… (an INSERT deletes nothing)",
            ));
        }
        kept.push(toks[i].clone());
        i += 1;
    }
    expr(&kept, env)
}

fn depth_zero_positions(toks: &[Token]) -> Vec<usize> {
    let mut depth = 0usize;
    let mut out = Vec::new();
    for (index, token) in toks.iter().enumerate() {
        match token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(index),
            _ => {}
        }
    }
    out
}
