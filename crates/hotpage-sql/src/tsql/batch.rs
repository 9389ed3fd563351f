//! Splitting a T-SQL script into batches at `GO` lines, as sqlcmd and SSMS do.
//!
//! `GO` is not T-SQL: it is the client's batch separator. It must stand alone on its line
//! (leading and trailing blanks allowed), optionally followed by a repeat count (`GO 10`)
//! and a `--` comment. The split is by lines, as sqlcmd's is: a `GO` line inside a block
//! comment or a string still ends the batch there.

use crate::error::{SqlError, SqlResult, sqlstate};

/// One batch: its text, how many times to run it, and the line it starts on (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub text: String,
    pub repeat: u32,
    pub line: usize,
}

/// The batches of `script`, in order; empty batches (only blanks) are dropped, even with a
/// `GO n` after them.
pub fn split_batches(script: &str) -> SqlResult<Vec<Batch>> {
    let mut batches = Vec::new();
    let mut text = String::new();
    let mut start_line = 1;
    for (index, line) in script.lines().enumerate() {
        match go_line(line) {
            GoLine::NotGo => {
                if text.is_empty() {
                    start_line = index + 1;
                }
                text.push_str(line);
                text.push('\n');
            }
            GoLine::Go(repeat) => {
                push_batch(&mut batches, &mut text, repeat, start_line);
            }
            GoLine::BadCount(count) => {
                return Err(SqlError::new(
                    sqlstate::SYNTAX_ERROR,
                    format!(
                        "a GO line takes a count from 1 to {}, not '{count}' (line {})",
                        u32::MAX,
                        index + 1
                    ),
                ));
            }
        }
    }
    push_batch(&mut batches, &mut text, 1, start_line);
    Ok(batches)
}

fn push_batch(batches: &mut Vec<Batch>, text: &mut String, repeat: u32, line: usize) {
    if !text.trim().is_empty() {
        batches.push(Batch {
            text: std::mem::take(text),
            repeat,
            line,
        });
    }
    text.clear();
}

enum GoLine {
    NotGo,
    Go(u32),
    BadCount(String),
}

fn go_line(line: &str) -> GoLine {
    let code = match line.find("--") {
        Some(at) => &line[..at],
        None => line,
    };
    let mut words = code.split_whitespace();
    match words.next() {
        Some(word) if word.eq_ignore_ascii_case("go") => {}
        _ => return GoLine::NotGo,
    }
    match (words.next(), words.next()) {
        (None, _) => GoLine::Go(1),
        (Some(count), None) => match count.parse::<u32>() {
            Ok(n) if n >= 1 => GoLine::Go(n),
            _ => GoLine::BadCount(count.to_string()),
        },
        // `GO x y` is not a GO line in sqlcmd either: it is T-SQL (and fails there).
        (Some(_), Some(_)) => GoLine::NotGo,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_go_lines_with_counts() {
        let batches =
            split_batches("SELECT 1\nGO\n  go 3 -- thrice\nSELECT 2\nGO 2\n\nGO\nSELECT 3")
                .unwrap();
        assert_eq!(
            batches,
            vec![
                Batch {
                    text: "SELECT 1\n".into(),
                    repeat: 1,
                    line: 1
                },
                Batch {
                    text: "SELECT 2\n".into(),
                    repeat: 2,
                    line: 4
                },
                Batch {
                    text: "SELECT 3\n".into(),
                    repeat: 1,
                    line: 8
                },
            ]
        );
    }

    #[test]
    fn go_inside_a_line_is_not_a_separator() {
        let batches = split_batches("SELECT 'GO'\nSELECT 1 GO\nGOTO x").unwrap();
        assert_eq!(batches.len(), 1);
    }

    #[test]
    fn a_bad_count_is_an_error() {
        let error = split_batches("SELECT 1\nGO 0\n").unwrap_err();
        assert_eq!(error.sqlstate, "42601");
        assert!(split_batches("GO -1").is_err());
        assert!(split_batches("GO 99999999999").is_err());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(script in "(?s).{0,300}") {
            let _ = split_batches(&script);
        }
    }
}
