//! PostgreSQL's array functions of the general engine: `array_append`, `array_prepend`,
//! `array_cat`, `array_position`, `array_remove`, `array_replace` and `string_to_array`.
//! Their arguments are typed as PostgreSQL's `anycompatiblearray` / `anycompatible`: the
//! arrays' elements and the lone elements meet in one common type (an untyped literal
//! takes it), and an element is found by `IS NOT DISTINCT FROM` (a NULL finds a NULL).

use super::expr::CExpr;
use super::functions::{cast_to_common, common_type};
use super::types::{CType, Datum, INT4, TEXT};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::types::TypeGroup;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ArrayFunc {
    Append,
    Prepend,
    Cat,
    Position,
    Remove,
    Replace,
    StringToArray,
}

/// What one argument of a polymorphic array function is.
#[derive(Clone, Copy, PartialEq)]
enum Arg {
    Array,
    Element,
    Int,
}

impl ArrayFunc {
    fn by_name(name: &str) -> Option<ArrayFunc> {
        Some(match name {
            "array_append" => ArrayFunc::Append,
            "array_prepend" => ArrayFunc::Prepend,
            "array_cat" => ArrayFunc::Cat,
            "array_position" => ArrayFunc::Position,
            "array_remove" => ArrayFunc::Remove,
            "array_replace" => ArrayFunc::Replace,
            "string_to_array" => ArrayFunc::StringToArray,
            _ => return None,
        })
    }

    /// Its arguments' roles for `n` arguments; None where it has no such form.
    fn arguments(self, n: usize) -> Option<&'static [Arg]> {
        use Arg::{Array as A, Element as E, Int as I};
        let args: &'static [Arg] = match (self, n) {
            (ArrayFunc::Append | ArrayFunc::Remove, 2) => &[A, E],
            (ArrayFunc::Position, 2) => &[A, E],
            (ArrayFunc::Position, 3) => &[A, E, I],
            (ArrayFunc::Prepend, 2) => &[E, A],
            (ArrayFunc::Cat, 2) => &[A, A],
            (ArrayFunc::Replace, 3) => &[A, E, E],
            _ => return None,
        };
        Some(args)
    }
}

/// Whether `name` is one of these functions.
pub(crate) fn is_array_function(name: &str) -> bool {
    ArrayFunc::by_name(name).is_some()
}

/// Resolves a call of `name` if it is one of these functions: its arguments cast to their
/// common types, and its result type.
pub(crate) fn resolve(name: &str, args: &mut Vec<CExpr>) -> Option<SqlResult<(ArrayFunc, CType)>> {
    let func = ArrayFunc::by_name(name)?;
    Some(resolve_call(func, name, args))
}

fn resolve_call(
    func: ArrayFunc,
    name: &str,
    args: &mut Vec<CExpr>,
) -> SqlResult<(ArrayFunc, CType)> {
    if func == ArrayFunc::StringToArray {
        if !(2..=3).contains(&args.len()) {
            return Err(no_such_function(name, args));
        }
        let taken = std::mem::take(args);
        args.extend(taken.into_iter().map(|a| a.cast_to(TEXT)));
        return Ok((func, TEXT.array_of()));
    }
    let roles = func
        .arguments(args.len())
        .ok_or_else(|| no_such_function(name, args))?;
    let mut elements = Vec::new();
    for (arg, role) in args.iter().zip(roles) {
        match (role, arg.ty) {
            (Arg::Int, _) | (_, CType::Unknown) => {}
            (Arg::Array, ty) => match ty.element() {
                Some(element) => elements.push(element),
                None => return Err(no_such_function(name, args)),
            },
            (Arg::Element, ty) if ty.element().is_some() => {
                return Err(no_such_function(name, args));
            }
            (Arg::Element, ty) => elements.push(ty),
        }
    }
    // Untyped literals alone are text, as PostgreSQL resolves anycompatible.
    let first = elements.first().copied().unwrap_or(TEXT);
    let numbers = elements.iter().all(|t| is_number(*t));
    if !numbers && elements.iter().any(|t| *t != first) {
        return Err(no_such_function(name, args));
    }
    let common = if numbers {
        common_type(elements.into_iter())
    } else {
        first
    };
    let taken = std::mem::take(args);
    for (arg, role) in taken.into_iter().zip(roles) {
        args.push(match role {
            Arg::Array if arg.ty.element() == Some(common) => arg,
            Arg::Array => arg.cast_to(common.array_of()),
            Arg::Element => cast_to_common(arg, common),
            Arg::Int => arg.cast_to(INT4),
        });
    }
    let result = match func {
        ArrayFunc::Position => INT4,
        _ => common.array_of(),
    };
    Ok((func, result))
}

fn is_number(t: CType) -> bool {
    matches!(t, CType::Sql(ty) if ty.comparison_group().is_some_and(|(g, _)| g == TypeGroup::Number))
}

fn no_such_function(name: &str, args: &[CExpr]) -> SqlError {
    let types: Vec<String> = args.iter().map(|a| a.ty.name()).collect();
    SqlError::new(
        sqlstate::UNDEFINED_FUNCTION,
        format!("function {name}({}) does not exist", types.join(", ")),
    )
    .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.")
}

/// A call's value. Only `array_position`, `array_remove`, `array_replace` and
/// `string_to_array` are NULL for a NULL array (or text); `array_append`,
/// `array_prepend` and `array_cat` read a NULL array as an empty one.
pub(crate) fn call(func: ArrayFunc, args: Vec<Datum>) -> SqlResult<Datum> {
    let items = |d: &Datum| match d {
        Datum::Array(items) => Some(items.clone()),
        _ => None,
    };
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Datum::Null);
    let array = match func {
        ArrayFunc::Append => {
            let mut all = items(&arg(0)).unwrap_or_default();
            all.push(arg(1));
            all
        }
        ArrayFunc::Prepend => {
            let mut all = vec![arg(0)];
            all.extend(items(&arg(1)).unwrap_or_default());
            all
        }
        ArrayFunc::Cat => match (items(&arg(0)), items(&arg(1))) {
            (None, None) => return Ok(Datum::Null),
            (a, b) => a.into_iter().chain(b).flatten().collect(),
        },
        ArrayFunc::Position => return position(&args),
        ArrayFunc::Remove | ArrayFunc::Replace => {
            let Some(all) = items(&arg(0)) else {
                return Ok(Datum::Null);
            };
            let wanted = arg(1);
            if func == ArrayFunc::Remove {
                all.into_iter().filter(|d| !same(d, &wanted)).collect()
            } else {
                let by = arg(2);
                all.into_iter()
                    .map(|d| if same(&d, &wanted) { by.clone() } else { d })
                    .collect()
            }
        }
        ArrayFunc::StringToArray => return Ok(string_to_array(&args)),
    };
    crate::limits::check_array_len(array.len())?;
    Ok(Datum::Array(array))
}

/// `IS NOT DISTINCT FROM`: NULL is NULL's equal.
fn same(a: &Datum, b: &Datum) -> bool {
    match (a.is_null(), b.is_null()) {
        (true, true) => true,
        (false, false) => a.sql_cmp(b) == Some(std::cmp::Ordering::Equal),
        _ => false,
    }
}

/// `array_position(array, element [, start])`: the first place at or after `start`.
fn position(args: &[Datum]) -> SqlResult<Datum> {
    let Some(Datum::Array(items)) = args.first() else {
        return Ok(Datum::Null);
    };
    let start = match args.get(2) {
        None => 1,
        Some(Datum::Null) => {
            return Err(SqlError::new("22004", "initial position must not be null"));
        }
        Some(d) => d.as_int().unwrap_or(1),
    };
    let wanted = args.get(1).cloned().unwrap_or(Datum::Null);
    let skip = usize::try_from(start.saturating_sub(1)).unwrap_or(0);
    Ok(items
        .iter()
        .enumerate()
        .skip(skip)
        .find(|(_, d)| same(d, &wanted))
        .map_or(Datum::Null, |(i, _)| Datum::Int(i as i64 + 1)))
}

/// `string_to_array(text, separator [, null_text])`: the fields between separators (each
/// character with a NULL separator; the whole text with an empty one); a field equal to
/// `null_text` is NULL.
pub(super) fn string_to_array(args: &[Datum]) -> Datum {
    let Some(Datum::Text(s)) = args.first() else {
        return Datum::Null;
    };
    if s.is_empty() {
        return Datum::Array(Vec::new());
    }
    let fields: Vec<String> = match args.get(1) {
        Some(Datum::Text(sep)) if sep.is_empty() => vec![s.clone()],
        Some(Datum::Text(sep)) => s.split(sep.as_str()).map(str::to_string).collect(),
        _ => s.chars().map(|c| c.to_string()).collect(),
    };
    let null_text = match args.get(2) {
        Some(Datum::Text(n)) => Some(n.as_str()),
        _ => None,
    };
    Datum::Array(
        fields
            .into_iter()
            .map(|f| {
                if null_text == Some(f.as_str()) {
                    Datum::Null
                } else {
                    Datum::Text(f)
                }
            })
            .collect(),
    )
}
