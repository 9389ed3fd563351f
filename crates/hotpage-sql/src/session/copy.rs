//! `COPY table [(columns)] FROM STDIN` and `COPY {table | (query)} TO STDOUT`, in
//! PostgreSQL's text and CSV formats (what `pgbench -i` and `psql \copy` send).
//!
//! - The data comes and goes through the [`BatchObserver`]: a wire server feeds it from
//!   CopyData messages and sends the rows out as CopyData. `hotpage sql` has no STDIN to
//!   give, so there COPY is 0A000.
//! - COPY FROM inserts each record through an `INSERT INTO t (columns) VALUES ($1, …)`
//!   plan, so defaults, keys, constraints and types are the INSERT's. All its rows are one
//!   transaction (the statement's own, or the block's): a bad record anywhere leaves none.
//! - Records are cut from the stream as the chunks come, so a record may span CopyData
//!   messages and the whole input is never held at once (the transaction's rows are, as
//!   any transaction's are, up to the engine's `txn_memory_bytes_max`).

use super::{BatchObserver, SqlSession, TxnStatus, parse};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::object_name;
use crate::session::{ColumnInfo, Prepared, StatementResult};
use crate::types::SqlType;
use crate::value::Value;
use sqlparser::ast::{
    CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Statement,
};

/// How records are written: PostgreSQL's text format or CSV.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CopyFormat {
    csv: bool,
    delimiter: u8,
    null: String,
    header: bool,
    quote: u8,
    escape: u8,
}

impl CopyFormat {
    fn text() -> CopyFormat {
        CopyFormat {
            csv: false,
            delimiter: b'\t',
            null: "\\N".into(),
            header: false,
            quote: b'"',
            escape: b'"',
        }
    }

    /// The format the options ask for (FORMAT, DELIMITER, NULL, HEADER, QUOTE, ESCAPE;
    /// FREEZE and ENCODING 'UTF8' are accepted and change nothing here).
    fn from_options(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> SqlResult<CopyFormat> {
        let mut format = CopyFormat::text();
        let (mut delimiter, mut null, mut quote, mut escape) = (None, None, None, None);
        for option in options {
            match option {
                CopyOption::Format(name) => match name.value.to_lowercase().as_str() {
                    "text" => format.csv = false,
                    "csv" => format.csv = true,
                    "binary" => return Err(SqlError::unsupported("COPY in the binary format")),
                    other => {
                        return Err(SqlError::new(
                            sqlstate::INVALID_PARAMETER_VALUE,
                            format!("COPY format \"{other}\" not recognized"),
                        ));
                    }
                },
                CopyOption::Freeze(_) => {}
                CopyOption::Delimiter(c) => delimiter = Some(*c),
                CopyOption::Null(s) => null = Some(s.clone()),
                CopyOption::Header(on) => format.header = *on,
                CopyOption::Quote(c) => quote = Some(*c),
                CopyOption::Escape(c) => escape = Some(*c),
                CopyOption::Encoding(e) if e.eq_ignore_ascii_case("utf8") => {}
                other => return Err(SqlError::unsupported(format!("the COPY option {other}"))),
            }
        }
        for option in legacy {
            match option {
                CopyLegacyOption::Csv(csv) => {
                    format.csv = true;
                    for c in csv {
                        match c {
                            CopyLegacyCsvOption::Header => format.header = true,
                            CopyLegacyCsvOption::Quote(q) => quote = Some(*q),
                            CopyLegacyCsvOption::Escape(e) => escape = Some(*e),
                            other => {
                                return Err(SqlError::unsupported(format!(
                                    "the COPY option {other}"
                                )));
                            }
                        }
                    }
                }
                CopyLegacyOption::Delimiter(c) => delimiter = Some(*c),
                CopyLegacyOption::Null(s) => null = Some(s.clone()),
                other => return Err(SqlError::unsupported(format!("the COPY option {other}"))),
            }
        }
        if format.csv {
            format.delimiter = b',';
            format.null = String::new();
        }
        format.apply(delimiter, null, quote, escape)?;
        Ok(format)
    }

    /// The explicit options over the format's defaults, checked as PostgreSQL checks them.
    fn apply(
        &mut self,
        delimiter: Option<char>,
        null: Option<String>,
        quote: Option<char>,
        escape: Option<char>,
    ) -> SqlResult<()> {
        let one_byte = |c: char, what: &str| -> SqlResult<u8> {
            u8::try_from(c).ok().filter(u8::is_ascii).ok_or_else(|| {
                SqlError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    format!("COPY {what} must be a single one-byte character"),
                )
            })
        };
        if let Some(c) = delimiter {
            self.delimiter = one_byte(c, "delimiter")?;
        }
        if let Some(n) = null {
            self.null = n;
        }
        if (quote.is_some() || escape.is_some()) && !self.csv {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "COPY QUOTE and ESCAPE are available only in CSV mode",
            ));
        }
        if let Some(c) = quote {
            self.quote = one_byte(c, "quote")?;
        }
        self.escape = match escape {
            Some(c) => one_byte(c, "escape")?,
            None => self.quote,
        };
        if matches!(self.delimiter, b'\r' | b'\n') || (!self.csv && self.delimiter == b'\\') {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "COPY delimiter cannot be newline, carriage return or (in text) backslash",
            ));
        }
        if self.csv && self.delimiter == self.quote {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "COPY delimiter and quote must be different",
            ));
        }
        if self.null.contains(['\r', '\n']) {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "COPY null representation cannot use newline or carriage return",
            ));
        }
        Ok(())
    }
}

/// Cuts records out of the incoming bytes (a record may span chunks; in CSV a quoted
/// field may hold newlines).
struct RecordReader {
    pending: Vec<u8>,
    /// How far `pending` is scanned for the end of its first record.
    scanned: usize,
    in_quote: bool,
}

impl RecordReader {
    fn new() -> RecordReader {
        RecordReader {
            pending: Vec::new(),
            scanned: 0,
            in_quote: false,
        }
    }

    /// The next whole record (without its line end), if the bytes so far hold one.
    fn next_record(&mut self, format: &CopyFormat) -> Option<Vec<u8>> {
        let mut i = self.scanned;
        while i < self.pending.len() {
            let b = self.pending[i];
            // An escape takes the next byte as it is: in CSV, inside quotes; in the text
            // format, a backslash anywhere (a backslash and a newline are a newline in the
            // data, as in PostgreSQL).
            let escapes = if format.csv {
                self.in_quote && b == format.escape && format.escape != format.quote
            } else {
                b == b'\\'
            };
            if escapes {
                if i + 1 == self.pending.len() {
                    // The escaped byte is in the next chunk: look at the escape again then.
                    break;
                }
                i += 2;
                continue;
            }
            if format.csv && b == format.quote {
                self.in_quote = !self.in_quote;
            } else if b == b'\n' && !self.in_quote {
                let mut record: Vec<u8> = self.pending.drain(..=i).collect();
                record.pop();
                if record.last() == Some(&b'\r') {
                    record.pop();
                }
                self.scanned = 0;
                return Some(record);
            }
            i += 1;
        }
        self.scanned = i.min(self.pending.len());
        None
    }

    /// What is left at the end of the data: a last record with no line end.
    fn rest(&mut self) -> Option<Vec<u8>> {
        self.scanned = 0;
        (!self.pending.is_empty()).then(|| std::mem::take(&mut self.pending))
    }
}

/// One record's fields (None: NULL), in the text format.
fn text_fields(record: &[u8], format: &CopyFormat) -> SqlResult<Vec<Option<String>>> {
    let mut fields = Vec::new();
    for raw in split_unescaped(record, format.delimiter) {
        // The null marker is matched before backslashes are undone, as in PostgreSQL.
        if raw == format.null.as_bytes() {
            fields.push(None);
            continue;
        }
        fields.push(Some(unescape_text(raw)?));
    }
    Ok(fields)
}

/// A text-format record cut at each delimiter that no backslash escapes (`\;` with
/// DELIMITER ';' is a semicolon in the data).
fn split_unescaped(record: &[u8], delimiter: u8) -> Vec<&[u8]> {
    let mut fields = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < record.len() {
        match record[i] {
            b'\\' => i += 2,
            b if b == delimiter => {
                fields.push(&record[start..i]);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    fields.push(&record[start.min(record.len())..]);
    fields
}

/// The text format's backslash escapes: \b \f \n \r \t \v, octal \ooo, hex \xhh, and a
/// backslash before any other character is that character.
fn unescape_text(raw: &[u8]) -> SqlResult<String> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        i += 1;
        if b != b'\\' || i >= raw.len() {
            out.push(b);
            continue;
        }
        let c = raw[i];
        i += 1;
        match c {
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut value = u32::from(c - b'0');
                for _ in 0..2 {
                    match raw.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push((value & 0xff) as u8);
            }
            b'x' if raw.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                let mut value = 0u8;
                for _ in 0..2 {
                    match raw.get(i).and_then(|d| (*d as char).to_digit(16)) {
                        Some(d) => {
                            value = value * 16 + d as u8;
                            i += 1;
                        }
                        None => break,
                    }
                }
                out.push(value);
            }
            other => out.push(other),
        }
    }
    utf8(out)
}

fn utf8(bytes: Vec<u8>) -> SqlResult<String> {
    String::from_utf8(bytes).map_err(|_| {
        SqlError::new(
            sqlstate::CHARACTER_NOT_IN_REPERTOIRE,
            "invalid byte sequence for encoding \"UTF8\"",
        )
    })
}

/// One CSV record's fields: an unquoted field equal to the NULL string is NULL (a quoted
/// one never is), quotes are doubled or escaped inside quotes.
fn csv_fields(record: &[u8], format: &CopyFormat) -> SqlResult<Vec<Option<String>>> {
    let mut fields = Vec::new();
    let mut field = Vec::new();
    let (mut quoted, mut in_quote, mut i) = (false, false, 0);
    while i <= record.len() {
        let Some(&b) = record.get(i) else {
            if in_quote {
                return Err(SqlError::new(
                    sqlstate::BAD_COPY_FILE_FORMAT,
                    "unterminated CSV quoted field",
                ));
            }
            fields.push(csv_field(std::mem::take(&mut field), quoted, format)?);
            break;
        };
        i += 1;
        if in_quote {
            if b == format.escape && record.get(i) == Some(&format.quote) {
                field.push(format.quote);
                i += 1;
            } else if b == format.escape
                && format.escape != format.quote
                && let Some(&next) = record.get(i)
            {
                field.push(next);
                i += 1;
            } else if b == format.quote {
                in_quote = false;
            } else {
                field.push(b);
            }
        } else if b == format.quote {
            (in_quote, quoted) = (true, true);
        } else if b == format.delimiter {
            fields.push(csv_field(std::mem::take(&mut field), quoted, format)?);
            quoted = false;
        } else {
            field.push(b);
        }
    }
    Ok(fields)
}

fn csv_field(bytes: Vec<u8>, quoted: bool, format: &CopyFormat) -> SqlResult<Option<String>> {
    if !quoted && bytes == format.null.as_bytes() {
        return Ok(None);
    }
    utf8(bytes).map(Some)
}

/// A COPY statement's parts that this module takes.
struct CopyStatement<'a> {
    source: &'a CopySource,
    to: bool,
    format: CopyFormat,
}

fn copy_statement(statement: &Statement) -> SqlResult<Option<CopyStatement<'_>>> {
    let Statement::Copy {
        source,
        to,
        target,
        options,
        legacy_options,
        values,
    } = statement
    else {
        return Ok(None);
    };
    match (target, *to) {
        (CopyTarget::Stdin, false) | (CopyTarget::Stdout, true) => {}
        (CopyTarget::File { .. } | CopyTarget::Program { .. }, _) => {
            return Err(SqlError::new(
                sqlstate::INSUFFICIENT_PRIVILEGE,
                "COPY to or from a file or program is not allowed in hotpage",
            )
            .with_hint("Use COPY … FROM STDIN or TO STDOUT (psql's \\copy does)."));
        }
        _ => {
            return Err(SqlError::new(
                sqlstate::SYNTAX_ERROR,
                "COPY FROM takes STDIN and COPY TO takes STDOUT",
            ));
        }
    }
    if !values.is_empty() {
        return Err(SqlError::unsupported(
            "COPY data inside the statement's text",
        ));
    }
    if !*to && matches!(source, CopySource::Query(_)) {
        return Err(SqlError::new(
            sqlstate::SYNTAX_ERROR,
            "COPY FROM needs a table, not a query",
        ));
    }
    Ok(Some(CopyStatement {
        source,
        to: *to,
        format: CopyFormat::from_options(options, legacy_options)?,
    }))
}

/// COPY's boolean options as PostgreSQL writes them (`freeze on`, `header 1`: pgbench
/// sends `with (freeze on)`), which sqlparser reads only as TRUE or FALSE: such a
/// statement with its booleans spelled TRUE or FALSE, or None if there is nothing to
/// change (or it is not one COPY statement).
pub(super) fn postgres_copy(sql: &str) -> Option<String> {
    let text = sql.trim().trim_end_matches(';').trim_end();
    let is_copy = text
        .get(..5)
        .is_some_and(|w| w.eq_ignore_ascii_case("copy ") || w.eq_ignore_ascii_case("copy\t"));
    if !is_copy || text.contains(';') || text.contains('\'') {
        return None;
    }
    let open = text.rfind('(')?;
    let close = open + text[open..].find(')')?;
    let mut changed = false;
    let options: Vec<String> = text[open + 1..close]
        .split(',')
        .map(|option| {
            let words: Vec<&str> = option.split_whitespace().collect();
            match words.as_slice() {
                [name, value] if matches!(name.to_lowercase().as_str(), "freeze" | "header") => {
                    let spelled = match value.to_lowercase().as_str() {
                        "on" | "1" | "yes" => "TRUE",
                        "off" | "0" | "no" => "FALSE",
                        _ => return option.to_string(),
                    };
                    changed = true;
                    format!(" {name} {spelled}")
                }
                _ => option.to_string(),
            }
        })
        .collect();
    changed.then(|| {
        format!(
            "{}({}){}",
            &text[..open],
            options.join(","),
            &text[close + 1..]
        )
    })
}

/// The byte offset just past the `;` that ends the first `COPY … FROM STDIN` statement
/// of `sql`, if there is one (see `session::parse`).
pub(super) fn end_of_copy_from_stdin(sql: &str) -> Option<usize> {
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, Tokenizer};
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize_with_location()
        .ok()?;
    let (mut at_start, mut in_copy, mut stdin) = (true, false, false);
    for token in &tokens {
        match &token.token {
            Token::Whitespace(_) => {}
            Token::SemiColon if in_copy && stdin => {
                return byte_offset(sql, token.span.end.line, token.span.end.column);
            }
            Token::SemiColon => (at_start, in_copy, stdin) = (true, false, false),
            Token::Word(word) if at_start => {
                at_start = false;
                in_copy = word.keyword == Keyword::COPY;
            }
            Token::Word(word) if in_copy && word.keyword == Keyword::STDIN => stdin = true,
            _ => at_start = false,
        }
    }
    None
}

/// The byte offset of a 1-based (line, column) in characters.
fn byte_offset(sql: &str, line: u64, column: u64) -> Option<usize> {
    let line_start: usize = sql
        .split_inclusive('\n')
        .take(usize::try_from(line).ok()?.checked_sub(1)?)
        .map(str::len)
        .sum();
    let column = usize::try_from(column).ok()?.checked_sub(1)?;
    let within = sql[line_start..]
        .char_indices()
        .nth(column)
        .map_or(sql.len() - line_start, |(i, _)| i);
    Some(line_start + within)
}

/// A quoted identifier, for the INSERT and SELECT that COPY runs.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl SqlSession {
    /// COPY, if `statement` is one: the rows go through `observer` (a wire server's
    /// CopyData). Returns None for any other statement.
    pub(super) fn run_copy(
        &mut self,
        statement: &Statement,
        observer: &mut dyn BatchObserver,
    ) -> Option<SqlResult<StatementResult>> {
        let copy = match copy_statement(statement) {
            Ok(Some(copy)) => copy,
            Ok(None) => return None,
            Err(error) => return Some(Err(error)),
        };
        if let Err(error) = self.refuse_if_failed() {
            return Some(Err(error));
        }
        if copy.to {
            return Some(self.copy_out(&copy, observer));
        }
        Some(self.copy_in(&copy, observer))
    }

    /// COPY FROM STDIN: one transaction, the statement's own unless a block is open.
    fn copy_in(
        &mut self,
        copy: &CopyStatement<'_>,
        observer: &mut dyn BatchObserver,
    ) -> SqlResult<StatementResult> {
        let CopySource::Table {
            table_name,
            columns,
        } = copy.source
        else {
            return Err(SqlError::internal("COPY FROM a query"));
        };
        let table = self.db.table(&object_name(table_name))?;
        let names: Vec<String> = if columns.is_empty() {
            table.scope.iter().map(|(n, _)| n.clone()).collect()
        } else {
            columns.iter().map(crate::expr::fold).collect()
        };
        let mut types = Vec::with_capacity(names.len());
        for name in &names {
            let ty = table.scope.iter().find(|(n, _)| n == name).map(|(_, t)| *t);
            types.push(ty.ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_COLUMN,
                    format!(
                        "column \"{name}\" of relation \"{}\" does not exist",
                        table.name
                    ),
                )
            })?);
        }
        let insert = format!(
            "INSERT INTO {} ({}) VALUES ({})",
            quote_ident(&table.name),
            names
                .iter()
                .map(|n| quote_ident(n))
                .collect::<Vec<_>>()
                .join(", "),
            (1..=names.len())
                .map(|i| format!("${i}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut statements = parse(&insert)?;
        let prepared = self.plan(statements.remove(0))?;
        observer.copy_in_start(names.len())?;
        let own_transaction = self.txn == TxnStatus::Idle;
        if own_transaction {
            self.engine.begin().map_err(super::engine_error)?;
            self.name_transaction("COPY")?;
        }
        let mut load = CopyLoad {
            table: &table.name,
            format: &copy.format,
            names: &names,
            types: &types,
            prepared: &prepared,
            line: 0,
            rows: 0,
        };
        let loaded = self.copy_records(&mut load, observer);
        if own_transaction {
            let end = match loaded {
                Ok(_) => self.engine.commit(),
                Err(_) => self.engine.rollback(),
            };
            end.map_err(super::engine_error)?;
        }
        loaded.map(|rows| StatementResult::command(format!("COPY {rows}")))
    }

    /// Reads every chunk to the end of the data, inserting each record as it is cut.
    fn copy_records(
        &mut self,
        load: &mut CopyLoad<'_>,
        observer: &mut dyn BatchObserver,
    ) -> SqlResult<u64> {
        let mut reader = RecordReader::new();
        let mut ended = false;
        while !ended {
            match observer.copy_in_next()? {
                Some(chunk) => reader.pending.extend_from_slice(&chunk),
                None => ended = true,
            }
            loop {
                let record = match reader.next_record(load.format) {
                    Some(record) => record,
                    None if ended => match reader.rest() {
                        Some(record) => record,
                        None => break,
                    },
                    None => break,
                };
                if record == b"\\." {
                    // The end-of-data marker: what follows is ignored, as in PostgreSQL.
                    observer_drain(observer, ended)?;
                    return Ok(load.rows);
                }
                load.line += 1;
                if load.line == 1 && load.format.header {
                    continue;
                }
                self.copy_record(load, &record)
                    .map_err(|e| e.with_context(load.context()))?;
            }
        }
        Ok(load.rows)
    }

    fn copy_record(&mut self, load: &mut CopyLoad<'_>, record: &[u8]) -> SqlResult<()> {
        let fields = if load.format.csv {
            csv_fields(record, load.format)?
        } else {
            text_fields(record, load.format)?
        };
        if fields.len() < load.names.len() {
            return Err(SqlError::new(
                sqlstate::BAD_COPY_FILE_FORMAT,
                format!("missing data for column \"{}\"", load.names[fields.len()]),
            ));
        }
        if fields.len() > load.names.len() {
            return Err(SqlError::new(
                sqlstate::BAD_COPY_FILE_FORMAT,
                "extra data after last expected column",
            ));
        }
        let mut params = Vec::with_capacity(fields.len());
        for (field, ty) in fields.into_iter().zip(load.types) {
            params.push(match field {
                None => Value::Null,
                Some(text) => Value::from_text(&text, ty)?,
            });
        }
        self.run_plan(&load.prepared.plan, &params)?;
        load.rows += 1;
        Ok(())
    }

    /// COPY TO STDOUT: the table's rows (or the query's) as records.
    fn copy_out(
        &mut self,
        copy: &CopyStatement<'_>,
        observer: &mut dyn BatchObserver,
    ) -> SqlResult<StatementResult> {
        let select = match copy.source {
            CopySource::Table {
                table_name,
                columns,
            } => {
                let list = if columns.is_empty() {
                    "*".to_string()
                } else {
                    let names: Vec<String> = columns
                        .iter()
                        .map(|c| quote_ident(&crate::expr::fold(c)))
                        .collect();
                    names.join(", ")
                };
                format!(
                    "SELECT {list} FROM {}",
                    quote_ident(&object_name(table_name))
                )
            }
            CopySource::Query(query) => query.to_string(),
        };
        let mut statements = parse(&select)?;
        let prepared = self.plan(statements.remove(0))?;
        observer.copy_out_start(prepared.columns.len())?;
        let format = &copy.format;
        if format.header && format.csv {
            let names: Vec<Option<String>> = prepared
                .columns
                .iter()
                .map(|c| Some(c.name.clone()))
                .collect();
            let mut header = Vec::new();
            write_record(&names, format, &mut header);
            observer.copy_out_records(vec![header])?;
        }
        // A query that streams (a table's rows, filtered) sends its records a chunk at a
        // time as it reads them; one that holds its rows (ORDER BY, a join) comes back
        // whole, and its records then go out in the same chunks.
        let mut sent = 0u64;
        let mut stream = |columns: &[ColumnInfo], rows: Vec<Vec<Value>>| {
            sent += rows.len() as u64;
            observer.copy_out_records(copy_records(&rows, columns, format))
        };
        let result = self.run_plan_streamed(&prepared.plan, &[], Some(&mut stream))?;
        for rows in result.rows.chunks(super::STREAM_CHUNK_ROWS) {
            sent += rows.len() as u64;
            observer.copy_out_records(copy_records(rows, &result.columns, format))?;
        }
        observer.copy_out_end()?;
        Ok(StatementResult::command(format!("COPY {sent}")))
    }
}

/// COPY TO's records of `rows`, one per row, each with its line end.
fn copy_records(rows: &[Vec<Value>], columns: &[ColumnInfo], format: &CopyFormat) -> Vec<Vec<u8>> {
    rows.iter()
        .map(|row| {
            let texts: Vec<Option<String>> = row
                .iter()
                .zip(columns)
                .map(|(v, c)| v.to_pg_text(Some(&c.ty)))
                .collect();
            let mut record = Vec::new();
            write_record(&texts, format, &mut record);
            record
        })
        .collect()
}

/// After `\.`: the rest of the data up to CopyDone is read and dropped.
fn observer_drain(observer: &mut dyn BatchObserver, ended: bool) -> SqlResult<()> {
    if !ended {
        while observer.copy_in_next()?.is_some() {}
    }
    Ok(())
}

/// One COPY FROM's progress.
struct CopyLoad<'a> {
    table: &'a str,
    format: &'a CopyFormat,
    names: &'a [String],
    types: &'a [SqlType],
    prepared: &'a Prepared,
    line: u64,
    rows: u64,
}

impl CopyLoad<'_> {
    /// PostgreSQL's error context: which record failed.
    fn context(&self) -> String {
        format!("COPY {}, line {}", self.table, self.line)
    }
}

/// One record in the output format, with its line end.
fn write_record(fields: &[Option<String>], format: &CopyFormat, out: &mut Vec<u8>) {
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(format.delimiter);
        }
        match field {
            None => out.extend_from_slice(format.null.as_bytes()),
            Some(text) if format.csv => write_csv_field(text, format, out),
            Some(text) => write_text_field(text, format.delimiter, out),
        }
    }
    out.push(b'\n');
}

fn write_text_field(text: &str, delimiter: u8, out: &mut Vec<u8>) {
    for &b in text.as_bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            8 => out.extend_from_slice(b"\\b"),
            12 => out.extend_from_slice(b"\\f"),
            11 => out.extend_from_slice(b"\\v"),
            d if d == delimiter => {
                out.push(b'\\');
                out.push(d);
            }
            other => out.push(other),
        }
    }
}

/// A CSV field, quoted when it must be: it holds the delimiter, a quote, a line end, or
/// equals the NULL string (so that it does not read back as NULL), or is `\.`.
fn write_csv_field(text: &str, format: &CopyFormat, out: &mut Vec<u8>) {
    let bytes = text.as_bytes();
    let needs_quotes = text == format.null
        || text == "\\."
        || bytes
            .iter()
            .any(|&b| b == format.delimiter || b == format.quote || b == b'\n' || b == b'\r');
    if !needs_quotes {
        out.extend_from_slice(bytes);
        return;
    }
    out.push(format.quote);
    for &b in bytes {
        if b == format.quote || b == format.escape {
            out.push(format.escape);
        }
        out.push(b);
    }
    out.push(format.quote);
}

#[cfg(test)]
mod tests;
