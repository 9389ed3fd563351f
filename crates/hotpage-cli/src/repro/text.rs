//! A report section as text on standard output: the same tables and notes the HTML has
//! (its charts are in the HTML only).

use crate::CliError;
use hotpage_report::{Block, Section, Table};

/// Width that paragraphs are wrapped to.
const WRAP_COLUMNS: usize = 100;

/// Prints a section: heading, paragraphs, notes, commands and tables.
pub fn print_section(section: &Section) -> Result<(), CliError> {
    outln!("== {}", section.heading)?;
    for block in &section.blocks {
        match block {
            Block::Text(text) => outln!("{}", wrap(text, ""))?,
            Block::Note(text) => outln!("{}", wrap(&format!("Note: {text}"), "  "))?,
            Block::Preformatted(text) => outln!("{text}")?,
            Block::Table(table) => print_table(table)?,
            Block::Chart(_) => continue,
        }
        outln!()?;
    }
    Ok(())
}

fn print_table(table: &Table) -> Result<(), CliError> {
    if let Some(caption) = &table.caption {
        outln!("{}", wrap(caption, ""))?;
    }
    let mut out = comfy_table::Table::new();
    out.set_header(&table.header);
    for row in &table.rows {
        out.add_row(row);
    }
    let numeric: Vec<usize> = (0..table.header.len())
        .filter(|c| {
            table
                .rows
                .iter()
                .filter_map(|row| row.get(*c))
                .any(|cell| cell.trim().parse::<f64>().is_ok())
        })
        .collect();
    crate::output::right_align(&mut out, &numeric);
    outln!("{out}")
}

/// Words wrapped at [`WRAP_COLUMNS`], continuation lines indented by `indent`.
fn wrap(text: &str, indent: &str) -> String {
    let mut out = String::new();
    let mut line_len = 0;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if line_len > 0 && line_len + 1 + len > WRAP_COLUMNS {
            out.push('\n');
            out.push_str(indent);
            line_len = indent.len();
        } else if line_len > 0 {
            out.push(' ');
            line_len += 1;
        }
        out.push_str(word);
        line_len += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paragraphs_wrap_at_word_boundaries() {
        let text = "word ".repeat(60);
        let wrapped = wrap(&text, "  ");
        assert!(wrapped.lines().count() >= 3);
        assert!(wrapped.lines().all(|l| l.chars().count() <= WRAP_COLUMNS));
        assert!(wrapped.lines().skip(1).all(|l| l.starts_with("  ")));
        assert_eq!(wrapped.split_whitespace().count(), 60);
    }
}
