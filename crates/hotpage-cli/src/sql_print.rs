//! How `hotpage sql` prints results (an aligned table as psql's, CSV or JSON lines) and
//! errors (psql's layout: the message, the statement's line with a caret under the error's
//! position, DETAIL and HINT).

use crate::CliError;
use comfy_table::{
    Cell, CellAlignment, ContentArrangement, ContentLineStyle, LineStyle, Table, TableStyle,
};
use hotpage_sql::{ColumnInfo, SqlError, SqlType, StatementResult, Value};

/// The output format of results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Csv,
    Json,
}

/// psql's aligned format: a header, a line of dashes under it, `|` between columns and no
/// outer border.
const PSQL_STYLE: TableStyle = TableStyle::new()
    .header_lines(ContentLineStyle::none().junction('|'))
    .header_separator(LineStyle::none().fill('-').junction('+'))
    .content_lines(ContentLineStyle::none().junction('|'));

/// Prints one statement's result in `format`.
pub fn print_result(result: &StatementResult, format: Format) -> Result<(), CliError> {
    match format {
        Format::Table if result.has_rows() => print_table(result),
        Format::Table => outln!("{}", result.tag),
        // Other statements print nothing, so that standard output is CSV only.
        Format::Csv if result.has_rows() => print_csv(result),
        Format::Csv => Ok(()),
        Format::Json => outln!("{}", json_line(result)?),
    }
}

/// A column psql aligns on the right.
fn is_number(ty: &SqlType) -> bool {
    ty.is_numeric_family()
}

/// The aligned table, then `(N rows)` and a blank line, as psql prints them. NULL is empty.
fn print_table(result: &StatementResult) -> Result<(), CliError> {
    let mut table = Table::new();
    table
        .load_style(PSQL_STYLE)
        // Never wrap a value to the terminal's width: a row stays on its lines.
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(
            result
                .columns
                .iter()
                .map(|c| Cell::new(&c.name).set_alignment(CellAlignment::Center)),
        );
    for row in &result.rows {
        table.add_row(row.iter().zip(&result.columns).map(|(value, column)| {
            Cell::new(value.to_pg_text(Some(&column.ty)).unwrap_or_default())
        }));
    }
    for (index, column) in result.columns.iter().enumerate() {
        if is_number(&column.ty)
            && let Some(c) = table.column_mut(index)
        {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    outln!("{}", table.trim_fmt())?;
    let n = result.rows.len();
    outln!("({n} {})", if n == 1 { "row" } else { "rows" })?;
    outln!()?;
    // psql follows rows that a command returned (RETURNING) with the command's tag.
    if ["INSERT", "UPDATE", "DELETE", "MERGE"]
        .iter()
        .any(|command| result.tag.starts_with(command))
    {
        outln!("{}", result.tag)?;
    }
    Ok(())
}

/// RFC 4180 CSV: a header line, then a line per row. A field is quoted when it holds a
/// comma, a quote or a line break, or is the empty string (NULL is an empty field, not
/// quoted, so the two stay apart, as in psql's `--csv`).
fn print_csv(result: &StatementResult) -> Result<(), CliError> {
    print_csv_header(&result.columns)?;
    print_csv_rows(&result.rows, &result.columns)
}

/// The CSV header line: the column names.
pub fn print_csv_header(columns: &[ColumnInfo]) -> Result<(), CliError> {
    let header: Vec<String> = columns.iter().map(|c| csv_field(&c.name)).collect();
    outln!("{}", header.join(","))
}

/// CSV lines, one per row, written 1,024 lines at a time (standard output writes each
/// line on its own otherwise: a system call per row).
pub fn print_csv_rows(rows: &[Vec<Value>], columns: &[ColumnInfo]) -> Result<(), CliError> {
    for chunk in rows.chunks(1024) {
        let mut text = String::new();
        for row in chunk {
            let fields: Vec<String> = row
                .iter()
                .zip(columns)
                .map(|(value, column)| {
                    value
                        .to_pg_text(Some(&column.ty))
                        .map_or_else(String::new, |text| csv_field(&text))
                })
                .collect();
            text.push_str(&fields.join(","));
            text.push('\n');
        }
        crate::output::bytes(text.as_bytes())?;
    }
    Ok(())
}

fn csv_field(text: &str) -> String {
    if text.is_empty() || text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// One statement as `--json` prints it, its fields in this order.
#[derive(serde::Serialize)]
struct JsonResult<'a> {
    tag: &'a str,
    columns: Vec<JsonColumn<'a>>,
    rows: Vec<Vec<Option<String>>>,
}

#[derive(serde::Serialize)]
struct JsonColumn<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    ty: String,
}

/// `{"tag":…,"columns":[{"name":…,"type":…}],"rows":[[…]]}` on one line: values as
/// PostgreSQL's text of them, NULL as null.
fn json_line(result: &StatementResult) -> Result<String, CliError> {
    let document = JsonResult {
        tag: &result.tag,
        columns: result
            .columns
            .iter()
            .map(|c| JsonColumn {
                name: &c.name,
                ty: c.ty.name(),
            })
            .collect(),
        rows: result
            .rows
            .iter()
            .map(|row| {
                row.iter()
                    .zip(&result.columns)
                    .map(|(value, column)| value.to_pg_text(Some(&column.ty)))
                    .collect()
            })
            .collect(),
    };
    serde_json::to_string(&document)
        .map_err(|e| CliError::failure(format!("writing a result as JSON: {e}")))
}

/// The widest statement line shown under an error; a longer one is cut around the
/// position, with `...` where it was cut (as psql does).
const LINE_SHOWN_MAX: usize = 72;

/// Prints an error to standard error: `ERROR <sqlstate>: <message>`, then the line of
/// `statement` that the error's position is on with a caret under it, then DETAIL and HINT.
pub fn print_error(error: &SqlError, statement: &str) {
    errln!("ERROR {}: {}", error.sqlstate, error.message);
    if let Some(position) = error.position {
        let (line_no, line, column) = locate(statement, position);
        let (shown, caret) = window(&line, column);
        let prefix = format!("LINE {line_no}: ");
        errln!("{prefix}{shown}");
        errln!("{}^", " ".repeat(prefix.chars().count() + caret));
    }
    if let Some(detail) = &error.detail {
        errln!("DETAIL: {detail}");
    }
    if let Some(hint) = &error.hint {
        errln!("HINT: {hint}");
    }
}

/// The 1-based line number, the line's text (tabs as one space each, so the caret lines
/// up) and the 0-based column of the 1-based character `position` of `text`. A position
/// past the end is just after the last character.
fn locate(text: &str, position: usize) -> (usize, Vec<char>, usize) {
    let chars: Vec<char> = text.chars().collect();
    let at = position.saturating_sub(1).min(chars.len());
    let line_start = chars[..at]
        .iter()
        .rposition(|c| *c == '\n')
        .map_or(0, |p| p + 1);
    let line_end = chars[at..]
        .iter()
        .position(|c| *c == '\n')
        .map_or(chars.len(), |p| at + p);
    let line_no = 1 + chars[..line_start].iter().filter(|c| **c == '\n').count();
    let line = chars[line_start..line_end]
        .iter()
        .map(|c| if c.is_whitespace() { ' ' } else { *c })
        .collect();
    (line_no, line, at - line_start)
}

/// The part of `line` shown and the caret's column in it.
fn window(line: &[char], column: usize) -> (String, usize) {
    if line.len() <= LINE_SHOWN_MAX {
        return (line.iter().collect(), column);
    }
    // Keep the position about two thirds of the way along what is shown.
    let start = column
        .saturating_sub(LINE_SHOWN_MAX * 2 / 3)
        .min(line.len() - LINE_SHOWN_MAX);
    let end = start + LINE_SHOWN_MAX;
    let mut shown = String::new();
    if start > 0 {
        shown.push_str("...");
    }
    shown.extend(&line[start..end]);
    if end < line.len() {
        shown.push_str("...");
    }
    let caret = column - start + if start > 0 { 3 } else { 0 };
    (shown, caret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_finds_the_line_and_column() {
        let text = "SELECT a,\n\tnope FROM t";
        let (line_no, line, column) = locate(text, 12);
        assert_eq!(line_no, 2);
        assert_eq!(line.iter().collect::<String>(), " nope FROM t");
        assert_eq!(column, 1);
        // Past the end: after the last character.
        let (line_no, _, column) = locate(text, 100);
        assert_eq!((line_no, column), (2, 12));
    }

    #[test]
    fn a_long_line_is_cut_around_the_position() {
        let line: Vec<char> = format!("SELECT {} FROM t", "x, ".repeat(60))
            .chars()
            .collect();
        let column = line.len() - 6;
        let (shown, caret) = window(&line, column);
        assert!(shown.starts_with("..."), "{shown}");
        assert_eq!(shown.chars().nth(caret), Some('F'), "{shown}");
    }

    #[test]
    fn csv_quotes_only_what_needs_it() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field(""), "\"\"");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
    }
}
