//! The document as one HTML file: inline CSS, inline SVG, no script, no external resource.

use crate::{Block, Document, ReportError, Section, Table, charts};
use std::fmt::Write as _;
use std::path::Path;

/// The style sheet, inline so that the file needs nothing else. Numbers in tables are
/// right-aligned by the `num` class the renderer puts on cells that parse as numbers.
const STYLE: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; margin: 2rem auto;
  max-width: 980px; padding: 0 1rem; color: #1d1d1f; background: #fff; line-height: 1.45; }
h1 { font-size: 1.7rem; margin-bottom: 0.2rem; }
.subtitle { color: #555; margin-top: 0; font-size: 0.95rem; }
h2 { font-size: 1.25rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; margin-top: 2.2rem; }
table { border-collapse: collapse; margin: 0.8rem 0 1.2rem; font-size: 0.9rem; display: block;
  overflow-x: auto; max-width: 100%; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.3rem; }
th, td { border: 1px solid #d5d5d5; padding: 0.25rem 0.55rem; }
th { background: #f3f4f6; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr:nth-child(even) td { background: #fafafa; }
pre { background: #f6f8fa; padding: 0.7rem; overflow-x: auto; font-size: 0.85rem; }
.note { border-left: 4px solid #e0a100; background: #fff8e1; padding: 0.5rem 0.8rem; }
figure.chart { margin: 1rem 0 1.6rem; }
figure.chart svg { max-width: 100%; height: auto; display: block; }
figcaption { font-weight: 600; margin-bottom: 0.3rem; }
";

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// The document as one self-contained HTML page.
pub fn render_html(document: &Document) -> Result<String, ReportError> {
    let mut out = String::new();
    let title = escape_html(&document.title);
    // `write!` to a String cannot fail; its Result is discarded on purpose throughout.
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
    );
    if let Some(subtitle) = &document.subtitle {
        let _ = writeln!(out, "<p class=\"subtitle\">{}</p>", escape_html(subtitle));
    }
    for section in &document.sections {
        render_section(&mut out, section)?;
    }
    out.push_str("</body>\n</html>\n");
    Ok(out)
}

/// Renders the document and writes it to `path` (replacing the file).
pub fn write_html(document: &Document, path: &Path) -> Result<(), ReportError> {
    let html = render_html(document)?;
    std::fs::write(path, html).map_err(|source| ReportError::Write {
        path: path.display().to_string(),
        source,
    })
}

fn render_section(out: &mut String, section: &Section) -> Result<(), ReportError> {
    let _ = writeln!(out, "<section>\n<h2>{}</h2>", escape_html(&section.heading));
    for block in &section.blocks {
        match block {
            Block::Text(text) => {
                let _ = writeln!(out, "<p>{}</p>", escape_html(text));
            }
            Block::Note(text) => {
                let _ = writeln!(out, "<p class=\"note\">{}</p>", escape_html(text));
            }
            Block::Preformatted(text) => {
                let _ = writeln!(out, "<pre>{}</pre>", escape_html(text));
            }
            Block::Table(table) => render_table(out, table),
            Block::Chart(chart) => {
                let svg = charts::render_svg(chart)?;
                let _ = writeln!(
                    out,
                    "<figure class=\"chart\" data-chart=\"{}\">\n<figcaption>{}</figcaption>\n{svg}</figure>",
                    chart.kind(),
                    escape_html(chart.title())
                );
            }
        }
    }
    out.push_str("</section>\n");
    Ok(())
}

fn render_table(out: &mut String, table: &Table) {
    out.push_str("<table>\n");
    if let Some(caption) = &table.caption {
        let _ = writeln!(out, "<caption>{}</caption>", escape_html(caption));
    }
    out.push_str("<thead><tr>");
    for name in &table.header {
        let _ = write!(out, "<th>{}</th>", escape_html(name));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let columns = table.header.len();
    for row in &table.rows {
        out.push_str("<tr>");
        for cell in row
            .iter()
            .map(String::as_str)
            .chain(std::iter::repeat_n("", columns.saturating_sub(row.len())))
        {
            let class = if looks_numeric(cell) {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", escape_html(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// A cell that reads as a number (with a unit suffix such as `x` or `%`), to right-align.
fn looks_numeric(cell: &str) -> bool {
    let trimmed = cell.trim().trim_end_matches(['x', '×', '%', 's']).trim();
    !trimmed.is_empty() && trimmed.replace([',', '_'], "").parse::<f64>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_recognised_for_alignment() {
        assert!(looks_numeric("1,234.5"));
        assert!(looks_numeric("0.69x"));
        assert!(looks_numeric("74.3 %"));
        assert!(!looks_numeric("identity"));
        assert!(!looks_numeric(""));
    }

    #[test]
    fn short_rows_are_padded_to_the_header() {
        let mut out = String::new();
        render_table(
            &mut out,
            &Table {
                caption: None,
                header: vec!["a".into(), "b".into(), "c".into()],
                rows: vec![vec!["1".into()]],
            },
        );
        assert_eq!(out.matches("<td").count(), 3);
    }
}
