//! PostgreSQL's `format(formatstr, args…)`: `%s` (the value's text, NULL as nothing),
//! `%I` (an identifier, quoted as needed), `%L` (a literal, NULL as `NULL`) and `%%`; each
//! with an optional argument position (`%2$s`), `-` (left-justify) and a width (a number,
//! `*` or `*n$`, taken from an argument). Errors are PostgreSQL's, SQLSTATE 22023 (22004
//! for a NULL identifier).

use super::types::{self, CType, Datum, Names};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::limits;

/// `format(args[0], args[1..])`; `types` are the arguments' static types. NULL when the
/// format is NULL.
pub(crate) fn format(args: &[Datum], types: &[CType], names: &dyn Names) -> SqlResult<Datum> {
    let Some(Datum::Text(template)) = args.first() else {
        return Ok(Datum::Null);
    };
    let values = Values {
        args: &args[1..],
        types: types.get(1..).unwrap_or(&[]),
        names,
    };
    let mut out = String::with_capacity(template.len());
    let mut chars = template.chars().peekable();
    // The next argument a specifier without a position takes (0-based, of args[1..]).
    let mut next = 0usize;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let spec = Spec::read(&mut chars)?;
        let width = match spec.width {
            Width::None => None,
            Width::Fixed(w) => Some(w),
            Width::Argument(position) => {
                let at = position.unwrap_or(next);
                next = at + 1;
                values.width(at)?
            }
        };
        let at = spec.position.unwrap_or(next);
        next = at + 1;
        let text = values.render(at, spec.kind)?;
        pad(&mut out, &text, width, spec.left)?;
    }
    Ok(Datum::Text(out))
}

/// The arguments after the format.
struct Values<'a> {
    args: &'a [Datum],
    types: &'a [CType],
    names: &'a dyn Names,
}

impl Values<'_> {
    fn get(&self, at: usize) -> SqlResult<(&Datum, CType)> {
        match (self.args.get(at), self.types.get(at)) {
            (Some(d), Some(t)) => Ok((d, *t)),
            (Some(d), None) => Ok((d, types::TEXT)),
            _ => Err(bad("too few arguments for format()")),
        }
    }

    /// A width taken from an argument: NULL is none; negative left-justifies.
    fn width(&self, at: usize) -> SqlResult<Option<i64>> {
        match self.get(at)? {
            (Datum::Null, _) => Ok(None),
            (Datum::Int(w), _) => int_width(*w).map(Some),
            (other, ty) => {
                let text = types::to_text(other, ty, self.names).unwrap_or_default();
                let w = text.trim().parse().map_err(|_| {
                    SqlError::new(
                        sqlstate::INVALID_TEXT_REPRESENTATION,
                        format!("invalid input syntax for type integer: \"{text}\""),
                    )
                })?;
                int_width(w).map(Some)
            }
        }
    }

    fn render(&self, at: usize, kind: char) -> SqlResult<String> {
        let (value, ty) = self.get(at)?;
        let text = types::to_text(value, ty, self.names);
        Ok(match (kind, text) {
            ('s', text) => text.unwrap_or_default(),
            ('I', Some(text)) => super::deparse::quote_ident(&text),
            ('I', None) => {
                return Err(SqlError::new(
                    sqlstate::NULL_VALUE_NOT_ALLOWED,
                    "null values cannot be formatted as an SQL identifier",
                ));
            }
            (_, Some(text)) => crate::expr::quote_literal(&text),
            (_, None) => "NULL".to_string(),
        })
    }
}

/// Where a specifier's width comes from.
enum Width {
    None,
    Fixed(i64),
    /// `*` (the next argument) or `*n$`.
    Argument(Option<usize>),
}

/// One `%[n$][-][width]type` specifier, after its `%`.
struct Spec {
    position: Option<usize>,
    left: bool,
    width: Width,
    kind: char,
}

impl Spec {
    fn read(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> SqlResult<Spec> {
        let mut spec = Spec {
            position: None,
            left: false,
            width: Width::None,
            kind: 's',
        };
        // Digits first: a position if `$` follows, else the width.
        let digits = read_number(chars)?;
        if let Some(n) = digits {
            if chars.peek() == Some(&'$') {
                chars.next();
                spec.position = Some(argument_index(n)?);
            } else {
                spec.width = Width::Fixed(n);
            }
        }
        if matches!(spec.width, Width::None) {
            while chars.next_if_eq(&'-').is_some() {
                spec.left = true;
            }
            spec.width = match chars.peek() {
                Some('*') => {
                    chars.next();
                    match read_number(chars)? {
                        Some(n) if chars.next_if_eq(&'$').is_some() => {
                            Width::Argument(Some(argument_index(n)?))
                        }
                        Some(_) => {
                            return Err(bad("width argument position must be ended by \"$\""));
                        }
                        None => Width::Argument(None),
                    }
                }
                _ => read_number(chars)?.map_or(Width::None, Width::Fixed),
            };
        }
        spec.kind = match chars.next() {
            None => return Err(unterminated()),
            Some(kind @ ('s' | 'I' | 'L')) => kind,
            Some(other) => {
                return Err(
                    bad(format!("unrecognized format() type specifier \"{other}\""))
                        .with_hint("For a single \"%\" use \"%%\"."),
                );
            }
        };
        Ok(spec)
    }
}

/// Decimal digits, if any (past int's range: PostgreSQL's 22003 "number is out of range").
fn read_number(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> SqlResult<Option<i64>> {
    let mut value: Option<i64> = None;
    while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
        chars.next();
        let so_far = value.unwrap_or(0);
        value = Some(so_far * 10 + i64::from(d));
        if value > Some(i64::from(i32::MAX)) {
            return Err(out_of_range());
        }
    }
    Ok(value)
}

/// `n$` as an index into the arguments after the format (n counts from 1).
fn argument_index(n: i64) -> SqlResult<usize> {
    usize::try_from(n - 1)
        .map_err(|_| bad("format specifies argument 0, but arguments are numbered from 1"))
}

/// `text` into `out`, padded with spaces to `width` characters: on the left, or on the
/// right with `-` or a negative width.
/// Checked before the text is made: past 1 GB it never exists.
fn pad(out: &mut String, text: &str, width: Option<i64>, left: bool) -> SqlResult<()> {
    let fill = width.map_or(0, |w| {
        usize::try_from(w.unsigned_abs())
            .unwrap_or(usize::MAX)
            .saturating_sub(text.chars().count())
    });
    limits::check_text_len(out.len().saturating_add(text.len()).saturating_add(fill))?;
    let left = left || width.is_some_and(|w| w < 0);
    if !left {
        out.extend(std::iter::repeat_n(' ', fill));
    }
    out.push_str(text);
    if left {
        out.extend(std::iter::repeat_n(' ', fill));
    }
    Ok(())
}

/// A width argument: an int (22003 past its range, or at its minimum, whose magnitude
/// has no int).
fn int_width(w: i64) -> SqlResult<i64> {
    match i32::try_from(w) {
        Err(_) => Err(SqlError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            "integer out of range",
        )),
        Ok(i32::MIN) => Err(out_of_range()),
        Ok(w) => Ok(i64::from(w)),
    }
}

fn out_of_range() -> SqlError {
    SqlError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        "number is out of range",
    )
}

fn bad(message: impl Into<String>) -> SqlError {
    SqlError::new(sqlstate::INVALID_PARAMETER_VALUE, message)
}

fn unterminated() -> SqlError {
    bad("unterminated format() type specifier").with_hint("For a single \"%\" use \"%%\".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::types::tests::NoNames;
    use proptest::prelude::*;

    fn run(template: &str, args: &[Datum]) -> SqlResult<Datum> {
        let mut all = vec![Datum::Text(template.to_string())];
        all.extend_from_slice(args);
        let types = vec![types::TEXT; all.len()];
        format(&all, &types, &NoNames)
    }

    #[test]
    fn a_huge_width_is_refused_before_it_is_made() {
        let error = run("%2147483647s", &[Datum::Text("x".into())]).expect_err("1 GB bound");
        assert_eq!(error.sqlstate, sqlstate::PROGRAM_LIMIT_EXCEEDED);
        let error = run("%2147483648s", &[Datum::Text("x".into())]).expect_err("past int");
        assert_eq!(error.sqlstate, sqlstate::NUMERIC_VALUE_OUT_OF_RANGE);
    }

    proptest! {
        /// Any template, any arguments: a value or a typed error, never a panic; a template
        /// without `%` comes back as it is.
        #[test]
        fn any_template_formats_or_fails_cleanly(
            template in "[%sIL$*0-9a-]{0,24}",
            args in proptest::collection::vec(proptest::option::of(-50i64..50), 0..4),
        ) {
            let args: Vec<Datum> = args
                .into_iter()
                .map(|a| a.map_or(Datum::Null, Datum::Int))
                .collect();
            match run(&template, &args) {
                Ok(Datum::Text(out)) if !template.contains('%') => prop_assert_eq!(out, template),
                Ok(_) => {}
                Err(e) => prop_assert!(
                    ["22023", "22004", "22P02", "22003", "54000"].contains(&e.sqlstate),
                    "{template}: {e:?}"
                ),
            }
        }
    }
}
