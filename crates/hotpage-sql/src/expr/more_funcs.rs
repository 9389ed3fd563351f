//! More of PostgreSQL's scalar functions of their arguments alone (`PureFunc`): text
//! (`md5`, `initcap`, `translate`, `chr`, `ascii`, `octet_length`, `bit_length`,
//! `quote_literal`, `regexp_replace`) and numbers (`div`, `gcd`, `lcm`, `sign`, `ln`,
//! `log`, `exp`, `degrees`, `radians`). Results and errors follow PostgreSQL 15
//! (`tests/slt/functions.slt`). Each is strict: `PureFunc::eval` answers NULL for a NULL
//! argument before it calls these.

use super::builtin::{PureFunc, int_arg, text_of};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::limits::{TEXT_BYTES_MAX, text_too_long as too_long};
use crate::value::Value;
use crate::value::numeric;

pub(super) fn text_func(func: PureFunc, args: &[Value]) -> SqlResult<Value> {
    use PureFunc as F;
    let text = |v: String| Ok(Value::Text(v));
    match func {
        F::Md5 => {
            use md5::Digest;
            let digest = match &args[0] {
                Value::Bytes(bytes) => md5::Md5::digest(bytes),
                other => md5::Md5::digest(text_of(other).as_bytes()),
            };
            text(digest.iter().map(|b| format!("{b:02x}")).collect())
        }
        F::Initcap => text(initcap(&text_of(&args[0]))),
        F::Translate => text(translate(
            &text_of(&args[0]),
            &text_of(&args[1]),
            &text_of(&args[2]),
        )),
        F::Chr => chr(int_arg(&args[0], "chr")?),
        F::Ascii => Ok(Value::Int(
            text_of(&args[0])
                .chars()
                .next()
                .map_or(0, |c| i64::from(u32::from(c))),
        )),
        F::OctetLength | F::BitLength => {
            let bytes = match &args[0] {
                Value::Bytes(b) => b.len(),
                other => text_of(other).len(),
            } as i64;
            Ok(Value::Int(if func == F::BitLength {
                bytes * 8
            } else {
                bytes
            }))
        }
        F::QuoteLiteral => text(quote_literal(&text_of(&args[0]))),
        F::RegexpReplace => regexp_replace(args),
        _ => Err(SqlError::internal(format!(
            "{func:?} is not a text function"
        ))),
    }
}

/// The first letter of each word upper case, the rest lower; a word is a run of letters
/// and digits.
fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        // One character for one, as PostgreSQL's towupper/towlower: `ß` stays `ß`, where
        // Rust's full mapping would give `SS`.
        let mapped = if in_word {
            single(c.to_lowercase())
        } else {
            single(c.to_uppercase())
        };
        out.push(mapped.unwrap_or(c));
        in_word = c.is_alphanumeric();
    }
    out
}

/// The one character of a case mapping, if it is one.
fn single(mut mapping: impl Iterator<Item = char>) -> Option<char> {
    let first = mapping.next()?;
    mapping.next().is_none().then_some(first)
}

/// Each character of `from` becomes the one at its place in `to`, or goes where `to` is
/// shorter; the first place of a repeated character counts.
fn translate(s: &str, from: &str, to: &str) -> String {
    let from: Vec<char> = from.chars().collect();
    let to: Vec<char> = to.chars().collect();
    s.chars()
        .filter_map(|c| match from.iter().position(|f| *f == c) {
            Some(at) => to.get(at).copied(),
            None => Some(c),
        })
        .collect()
}

/// `chr(n)`: the character with code point n (UTF-8), PostgreSQL's errors for 0, a
/// negative n, a surrogate and a number past Unicode.
fn chr(n: i64) -> SqlResult<Value> {
    if n < 0 {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "character number must be positive",
        ));
    }
    if n == 0 {
        return Err(SqlError::new(
            sqlstate::PROGRAM_LIMIT_EXCEEDED,
            "null character not permitted",
        ));
    }
    let code = u32::try_from(n).ok().filter(|c| *c <= 0x10FFFF);
    let Some(code) = code else {
        return Err(SqlError::new(
            sqlstate::PROGRAM_LIMIT_EXCEEDED,
            format!("requested character too large for encoding: {n}"),
        ));
    };
    match char::from_u32(code) {
        Some(c) => Ok(Value::Text(c.to_string())),
        None => Err(SqlError::new(
            sqlstate::PROGRAM_LIMIT_EXCEEDED,
            format!("requested character not valid for encoding: {n}"),
        )),
    }
}

/// `quote_literal(s)`: s in single quotes, quotes doubled; with a backslash, `E'…'` and
/// the backslashes doubled.
pub(crate) fn quote_literal(s: &str) -> String {
    let quoted = s.replace('\'', "''");
    if s.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

/// `regexp_replace(source, pattern, replacement [, flags])`: the first match replaced, or
/// every one with flag `g`; `i` ignores case. In the replacement `\1`…`\9` are the groups
/// and `\&` the whole match, as in PostgreSQL. The pattern is the `regex` crate's syntax,
/// which agrees with PostgreSQL's for the common forms (no back-references or
/// look-around: 2201B, as for `~`).
fn regexp_replace(args: &[Value]) -> SqlResult<Value> {
    let source = text_of(&args[0]);
    let flags = args.get(3).map(text_of).unwrap_or_default();
    let (pattern, global) = regex_with_flags(&text_of(&args[1]), &flags)?;
    let replacement = replacement_template(&text_of(&args[2]));
    let replaced = if global {
        replace_every(&pattern, &source, &replacement)?
    } else {
        pattern.replace(&source, replacement.as_str()).into_owned()
    };
    if replaced.len() > TEXT_BYTES_MAX {
        return Err(too_long());
    }
    Ok(Value::Text(replaced))
}

/// Every match replaced, as PostgreSQL's `g` flag does: an empty match right after a
/// match counts too (`regexp_replace('abc', 'b*', '-', 'g')` is `-a--c-`), where the
/// regex crate's `replace_all` skips it.
fn replace_every(pattern: &regex::Regex, source: &str, replacement: &str) -> SqlResult<String> {
    let mut out = String::with_capacity(source.len());
    let (mut copied, mut from) = (0, 0);
    while from <= source.len() {
        let Some(caps) = pattern.captures_at(source, from) else {
            break;
        };
        let Some(found) = caps.get(0) else {
            break;
        };
        out.push_str(&source[copied..found.start()]);
        caps.expand(replacement, &mut out);
        if out.len() > TEXT_BYTES_MAX {
            return Err(too_long());
        }
        copied = found.end();
        from = match source[found.end()..].chars().next() {
            // An empty match: the next try starts a character on.
            Some(next) if found.is_empty() => found.end() + next.len_utf8(),
            None if found.is_empty() => break,
            _ => found.end(),
        };
    }
    out.push_str(&source[copied..]);
    Ok(out)
}

/// A pattern and its flags as PostgreSQL's regexp functions take them (`g`: every match;
/// `i`: ignore case; `c`: mind it): the compiled pattern, and whether `g` was given.
/// A bad pattern is 2201B, a flag hotpage does not have 22023.
pub(crate) fn regex_with_flags(pattern: &str, flags: &str) -> SqlResult<(regex::Regex, bool)> {
    let mut global = false;
    let mut ignore_case = false;
    for flag in flags.chars() {
        match flag {
            'g' => global = true,
            'i' => ignore_case = true,
            'c' => ignore_case = false,
            other => {
                return Err(SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!("invalid regular expression option: \"{other}\""),
                ));
            }
        }
    }
    let compiled = regex::RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        // PostgreSQL's `.` matches a newline (its `n` flag is off by default).
        .dot_matches_new_line(true)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            SqlError::new(
                "2201B",
                format!("invalid regular expression: {}", first_line(&e.to_string())),
            )
        })?;
    Ok((compiled, global))
}

/// `regexp_split_to_table(source, pattern [, flags])`'s pieces: the text between matches.
/// As in PostgreSQL, an empty match at the start or end of the text, or where the last
/// match ended, does not split (`regexp_split_to_table('abc', '')` is a, b, c).
pub(crate) fn regexp_split(source: &str, pattern: &str, flags: &str) -> SqlResult<Vec<String>> {
    let (pattern, global) = regex_with_flags(pattern, flags)?;
    if global {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "regexp_split_to_table() does not support the \"global\" option",
        ));
    }
    let mut pieces = Vec::new();
    let (mut copied, mut from, mut last_end) = (0, 0, None);
    while let Some(found) = pattern.find_at(source, from) {
        let degenerate = found.is_empty()
            && (found.start() == 0
                || found.end() == source.len()
                || Some(found.start()) == last_end);
        if !degenerate {
            pieces.push(source[copied..found.start()].to_string());
            copied = found.end();
            last_end = Some(found.end());
        }
        from = match source[found.end()..].chars().next() {
            // An empty match: the next try starts a character on.
            Some(next) if found.is_empty() => found.end() + next.len_utf8(),
            None if found.is_empty() => break,
            _ => found.end(),
        };
    }
    pieces.push(source[copied..].to_string());
    Ok(pieces)
}

fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or(s).trim()
}

/// PostgreSQL's replacement text as the `regex` crate's template: `\n` → `${n}`, `\&` →
/// `${0}`, `\\` → `\`, and a literal `$` escaped as `$$`.
fn replacement_template(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.peek().copied() {
                Some(d @ '1'..='9') => {
                    chars.next();
                    out.push_str(&format!("${{{d}}}"));
                }
                Some('&') => {
                    chars.next();
                    out.push_str("${0}");
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            },
            other => out.push(other),
        }
    }
    out
}

/// `div`, `gcd`, `lcm` and `sign` of integers and numerics (`sign` of a double too).
pub(super) fn integer_like(func: PureFunc, args: &[Value]) -> SqlResult<Value> {
    use PureFunc as F;
    match func {
        F::Sign => sign(&args[0]),
        F::Div => div(&args[0], &args[1]),
        F::Gcd | F::Lcm => {
            let (Value::Int(a), Value::Int(b)) = (&args[0], &args[1]) else {
                return Err(SqlError::unsupported(format!(
                    "{}() of {} and {}",
                    if func == F::Gcd { "gcd" } else { "lcm" },
                    args[0].type_name(),
                    args[1].type_name()
                )));
            };
            gcd_lcm(func, *a, *b)
        }
        _ => Err(SqlError::internal(format!(
            "{func:?} is not an integer function"
        ))),
    }
}

fn sign(v: &Value) -> SqlResult<Value> {
    Ok(match v {
        Value::Int(i) => Value::Float(i.signum() as f64),
        // PostgreSQL's float sign of NaN is 0.
        Value::Float(x) if x.is_nan() => Value::Float(0.0),
        Value::Float(x) if *x == 0.0 => Value::Float(0.0),
        Value::Float(x) => Value::Float(x.signum()),
        Value::Numeric { scaled, .. } => Value::Numeric {
            scaled: scaled.signum(),
            scale: 0,
        },
        other => return Err(not_a_number("sign", other)),
    })
}

/// `div(y, x)`: y / x truncated toward zero, as a numeric of scale 0.
fn div(y: &Value, x: &Value) -> SqlResult<Value> {
    let as_numeric = |v: &Value| -> SqlResult<(i128, u8)> {
        match v {
            Value::Float(f) => numeric::from_f64_own_scale(*f),
            other => other.as_numeric().ok_or_else(|| not_a_number("div", other)),
        }
    };
    let (a, b) = (as_numeric(y)?, as_numeric(x)?);
    let scale = a.1.max(b.1);
    let a = numeric::rescale(a.0, a.1, scale).ok_or_else(numeric::overflow)?;
    let b = numeric::rescale(b.0, b.1, scale).ok_or_else(numeric::overflow)?;
    if b == 0 {
        return Err(numeric::division_by_zero());
    }
    // Both are at one scale, so the integer quotient of the scaled values is the
    // quotient's integer part; only i128::MIN / -1 overflows.
    let quotient = a.checked_div(b).ok_or_else(numeric::overflow)?;
    Ok(Value::Numeric {
        scaled: quotient,
        scale: 0,
    })
}

/// `gcd(a, b)` (non-negative; 0 for 0 and 0) and `lcm(a, b)` (0 if either is 0).
fn gcd_lcm(func: PureFunc, a: i64, b: i64) -> SqlResult<Value> {
    let out_of_range =
        || SqlError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, "bigint out of range");
    let (mut x, mut y) = (a.unsigned_abs(), b.unsigned_abs());
    while y != 0 {
        (x, y) = (y, x % y);
    }
    let gcd = x;
    let result = if func == PureFunc::Gcd {
        gcd
    } else {
        // lcm is 0 when either is 0 (then gcd is 0 only if both are).
        match a.unsigned_abs().checked_div(gcd) {
            None => 0,
            Some(part) => part
                .checked_mul(b.unsigned_abs())
                .ok_or_else(out_of_range)?,
        }
    };
    i64::try_from(result)
        .map(Value::Int)
        .map_err(|_| out_of_range())
}

/// `ln`, `log`/`log10`, `exp`, `degrees`, `radians` in double precision (a numeric
/// argument too: docs/design.md, Known limits), with PostgreSQL's errors.
pub(super) fn float_func(func: PureFunc, args: &[Value]) -> SqlResult<Value> {
    use PureFunc as F;
    let name = format!("{func:?}").to_lowercase();
    let x = args[0]
        .as_f64()
        .ok_or_else(|| not_a_number(&name, &args[0]))?;
    let result = match func {
        F::Ln | F::Log10 => {
            if x == 0.0 {
                return Err(log_error("cannot take logarithm of zero"));
            }
            if x < 0.0 {
                return Err(log_error("cannot take logarithm of a negative number"));
            }
            if func == F::Ln { x.ln() } else { x.log10() }
        }
        F::Exp => {
            let e = x.exp();
            if e.is_infinite() && x.is_finite() {
                return Err(out_of_range("overflow"));
            }
            if e == 0.0 && x.is_finite() {
                return Err(out_of_range("underflow"));
            }
            e
        }
        // Real cube roots, negative ones too (PostgreSQL's cbrt is the C library's).
        F::Cbrt => x.cbrt(),
        F::Degrees | F::Radians => {
            let converted = if func == F::Degrees {
                x.to_degrees()
            } else {
                x.to_radians()
            };
            if converted.is_infinite() && x.is_finite() {
                return Err(out_of_range("overflow"));
            }
            converted
        }
        _ => {
            return Err(SqlError::internal(format!(
                "{func:?} is not a float function"
            )));
        }
    };
    Ok(Value::Float(result))
}

fn log_error(message: &str) -> SqlError {
    SqlError::new("2201E", message)
}

fn out_of_range(what: &str) -> SqlError {
    SqlError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("value out of range: {what}"),
    )
}

fn not_a_number(name: &str, v: &Value) -> SqlError {
    SqlError::new(
        sqlstate::UNDEFINED_FUNCTION,
        format!("function {name}({}) does not exist", v.type_name()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacement_templates_read_postgresql_escapes() {
        assert_eq!(replacement_template(r"[\1\&]"), "[${1}${0}]");
        assert_eq!(replacement_template(r"a\\b$c&"), r"a\b$$c&");
        assert_eq!(replacement_template(r"end\"), r"end\");
    }

    #[test]
    fn initcap_and_translate_follow_postgresql() {
        assert_eq!(
            initcap("hello wORLD 1st_place é-x"),
            "Hello World 1st_Place É-X"
        );
        assert_eq!(initcap("ß ﬁsh"), "ß ﬁsh");
        assert_eq!(translate("abcabc", "abb", "xy"), "xycxyc");
    }

    #[test]
    fn gcd_and_lcm_at_the_edges() {
        assert_eq!(gcd_lcm(PureFunc::Gcd, -4, 6).ok(), Some(Value::Int(2)));
        assert_eq!(gcd_lcm(PureFunc::Lcm, 4, 6).ok(), Some(Value::Int(12)));
        assert_eq!(gcd_lcm(PureFunc::Gcd, 0, 0).ok(), Some(Value::Int(0)));
        assert!(gcd_lcm(PureFunc::Gcd, i64::MIN, 0).is_err());
        assert!(gcd_lcm(PureFunc::Lcm, i64::MAX, i64::MAX - 1).is_err());
    }
}
