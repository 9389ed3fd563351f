//! Set-returning functions: `generate_series`, `unnest`, `string_to_table` and
//! `regexp_split_to_table`, in FROM (`FromItem::Function`) and in a SELECT's list
//! (`compile::SetCall`).

use super::exec::row_bytes;
use super::expr::CExpr;
use super::types::{CType, Datum, INT4, INT8, TEXT};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::limits::MemoryBudget;
use crate::types::SqlType;

/// A set-returning function in FROM: which, with how many arguments, and whether `WITH
/// ORDINALITY` numbers its rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SetFunc {
    kind: SetKind,
    arity: usize,
    ordinality: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum SetKind {
    GenerateSeries,
    /// `unnest(a, b, …)`: one column per array, the arrays side by side, the shorter
    /// ones padded with NULLs (PostgreSQL's multi-argument form, FROM only).
    Unnest,
    /// `string_to_table(text, separator [, null_text])`: string_to_array's fields as rows.
    StringToTable,
    /// `regexp_split_to_table(text, pattern [, flags])`: the text between matches.
    RegexpSplitToTable,
}

/// generate_series's most rows in one call.
const SERIES_MAX: usize = 1_000_000;

impl SetFunc {
    /// Whether `name` is a set-returning function hotpage has.
    pub fn is_set_function(name: &str) -> bool {
        matches!(
            name,
            "generate_series" | "unnest" | "string_to_table" | "regexp_split_to_table"
        )
    }

    pub fn resolve(name: &str, args: &mut Vec<CExpr>, ordinality: bool) -> SqlResult<SetFunc> {
        let kind = match name {
            "generate_series" if (2..=3).contains(&args.len()) => SetKind::GenerateSeries,
            "unnest" if !args.is_empty() => SetKind::Unnest,
            "string_to_table" if (2..=3).contains(&args.len()) => SetKind::StringToTable,
            "regexp_split_to_table" if (2..=3).contains(&args.len()) => SetKind::RegexpSplitToTable,
            "generate_series" | "unnest" | "string_to_table" | "regexp_split_to_table" => {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    format!(
                        "function {name} with {} arguments does not exist",
                        args.len()
                    ),
                ));
            }
            other => {
                return Err(SqlError::unsupported(format!(
                    "the function {other}() in FROM"
                )));
            }
        };
        match kind {
            SetKind::GenerateSeries => integer_series_arguments(args)?,
            SetKind::StringToTable | SetKind::RegexpSplitToTable => text_arguments(name, args)?,
            SetKind::Unnest => {
                if let Some(arg) = args.iter().find(|a| a.ty.element().is_none()) {
                    // An untyped literal could be any array: PostgreSQL's 42725.
                    let (state, what) = if arg.ty == CType::Unknown {
                        (sqlstate::AMBIGUOUS_FUNCTION, "is not unique")
                    } else {
                        (sqlstate::UNDEFINED_FUNCTION, "does not exist")
                    };
                    return Err(SqlError::new(
                        state,
                        format!("function unnest({}) {what}", arg.ty.name()),
                    ));
                }
            }
        }
        Ok(SetFunc {
            kind,
            arity: args.len(),
            ordinality,
        })
    }

    /// The columns it returns, the ordinality's included.
    pub fn width(self) -> usize {
        self.value_columns() + usize::from(self.ordinality)
    }

    fn value_columns(self) -> usize {
        match self.kind {
            SetKind::GenerateSeries | SetKind::StringToTable | SetKind::RegexpSplitToTable => 1,
            SetKind::Unnest => self.arity,
        }
    }

    /// Its columns' names as PostgreSQL gives them: a function of one column is named
    /// after the FROM item's alias (or the function), one of several after the function;
    /// `ordinality` last.
    pub fn column_names(self, function: &str, qualifier: &str) -> Vec<String> {
        let mut names = match self.value_columns() {
            1 => vec![qualifier.to_string()],
            n => vec![function.to_string(); n],
        };
        if self.ordinality {
            names.push("ordinality".to_string());
        }
        names
    }

    pub fn column_types(self, args: &[CExpr]) -> Vec<CType> {
        let mut types = match self.kind {
            SetKind::GenerateSeries => vec![match args.first().map(|a| a.ty) {
                Some(CType::Sql(SqlType::BigInt)) => INT8,
                _ => INT4,
            }],
            SetKind::Unnest => args
                .iter()
                .map(|a| a.ty.element().unwrap_or(TEXT))
                .collect(),
            SetKind::StringToTable | SetKind::RegexpSplitToTable => vec![TEXT],
        };
        if self.ordinality {
            types.push(INT8);
        }
        types
    }

    /// Its rows for these argument values, charged to `memory` (the caller gives them
    /// back when it is done with them). A split's rows are charged before they are made,
    /// from a count of its separators, so that a huge text cannot be split past the bound.
    pub fn rows(self, args: &[Datum], memory: &mut MemoryBudget) -> SqlResult<Vec<Vec<Datum>>> {
        let before = memory.held_bytes();
        if matches!(
            self.kind,
            SetKind::StringToTable | SetKind::RegexpSplitToTable
        ) {
            memory.charge(split_bytes(self.kind, args)?)?;
        }
        let mut rows = match self.kind {
            SetKind::Unnest => unnest_rows(args)?,
            SetKind::GenerateSeries => series_rows(args)?,
            SetKind::StringToTable => match super::array_funcs::string_to_array(args) {
                Datum::Array(fields) => fields.into_iter().map(|f| vec![f]).collect(),
                _ => Vec::new(),
            },
            SetKind::RegexpSplitToTable => regexp_split_rows(args)?,
        };
        if self.ordinality {
            for (n, row) in rows.iter_mut().enumerate() {
                row.push(Datum::Int(n as i64 + 1));
            }
        }
        if memory.held_bytes() == before {
            memory.charge(rows.iter().map(|r| row_bytes(r)).sum())?;
        }
        Ok(rows)
    }
}

/// generate_series's arguments: integers only (PostgreSQL also has numeric and timestamp
/// series), an untyped literal read as an integer.
fn integer_series_arguments(args: &mut Vec<CExpr>) -> SqlResult<()> {
    let taken = std::mem::take(args);
    for arg in taken {
        args.push(match arg.ty {
            CType::Unknown => arg.cast_to(INT4),
            ty if ty.is_integer_like() => arg,
            other => {
                return Err(SqlError::unsupported(format!(
                    "generate_series of {}",
                    other.name()
                )));
            }
        });
    }
    Ok(())
}

/// unnest's rows: the arrays side by side, as long as the longest; a NULL array has no
/// items.
fn unnest_rows(args: &[Datum]) -> SqlResult<Vec<Vec<Datum>>> {
    let items: Vec<&[Datum]> = args
        .iter()
        .map(|a| match a {
            Datum::Array(items) => items.as_slice(),
            _ => &[],
        })
        .collect();
    let len = items.iter().map(|i| i.len()).max().unwrap_or(0);
    Ok((0..len)
        .map(|at| {
            items
                .iter()
                .map(|i| i.get(at).cloned().unwrap_or(Datum::Null))
                .collect()
        })
        .collect())
}

fn series_rows(args: &[Datum]) -> SqlResult<Vec<Vec<Datum>>> {
    let int = |i: usize| args.get(i).and_then(Datum::as_int);
    if args.iter().any(Datum::is_null) {
        return Ok(Vec::new());
    }
    let (Some(start), Some(stop)) = (int(0), int(1)) else {
        return Ok(Vec::new());
    };
    let step = int(2).unwrap_or(1);
    if step == 0 {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "step size cannot equal zero",
        ));
    }
    let mut rows = Vec::new();
    let mut v = start;
    while (step > 0 && v <= stop) || (step < 0 && v >= stop) {
        if rows.len() == SERIES_MAX {
            return Err(SqlError::new(
                sqlstate::PROGRAM_LIMIT_EXCEEDED,
                format!("generate_series stops at {SERIES_MAX} rows a call in hotpage"),
            ));
        }
        rows.push(vec![Datum::Int(v)]);
        match v.checked_add(step) {
            Some(next) => v = next,
            None => break,
        }
    }
    Ok(rows)
}

/// The arguments of a function of text: an untyped literal is text, another type 42883.
fn text_arguments(name: &str, args: &mut [CExpr]) -> SqlResult<()> {
    if let Some(other) = args
        .iter()
        .find(|a| a.ty != CType::Unknown && !a.ty.is_text_like())
    {
        return Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("function {name}(…, {}, …) does not exist", other.ty.name()),
        ));
    }
    for arg in args.iter_mut() {
        if arg.ty == CType::Unknown {
            let taken = std::mem::replace(arg, CExpr::constant(Datum::Null, TEXT));
            *arg = taken.cast_to(TEXT);
        }
    }
    Ok(())
}

/// regexp_split_to_table's rows: none for a NULL argument (it is strict).
fn regexp_split_rows(args: &[Datum]) -> SqlResult<Vec<Vec<Datum>>> {
    let text = |i: usize| match args.get(i) {
        Some(Datum::Text(s)) => Some(s.as_str()),
        _ => None,
    };
    let (Some(source), Some(pattern)) = (text(0), text(1)) else {
        return Ok(Vec::new());
    };
    let flags = match args.get(2) {
        None => "",
        Some(Datum::Text(flags)) => flags.as_str(),
        Some(_) => return Ok(Vec::new()),
    };
    Ok(crate::expr::regexp_split(source, pattern, flags)?
        .into_iter()
        .map(|piece| vec![Datum::Text(piece)])
        .collect())
}

/// What a split's rows will weigh, found without making them: its text, and a row per
/// piece (the pieces counted as separators or matches plus one).
fn split_bytes(kind: SetKind, args: &[Datum]) -> SqlResult<usize> {
    let text = |i: usize| match args.get(i) {
        Some(Datum::Text(s)) => Some(s.as_str()),
        _ => None,
    };
    let Some(source) = text(0) else {
        return Ok(0);
    };
    let pieces = match (kind, text(1)) {
        (SetKind::StringToTable, Some(sep)) if !sep.is_empty() => source.matches(sep).count() + 1,
        (SetKind::StringToTable, Some(_)) => 1,
        (SetKind::StringToTable, None) => source.chars().count(),
        (_, Some(pattern)) => {
            let flags = text(2).unwrap_or("");
            crate::expr::regex_with_flags(pattern, flags)?
                .0
                .find_iter(source)
                .count()
                + 1
        }
        (_, None) => 0,
    };
    let per_row = std::mem::size_of::<Vec<Datum>>() + std::mem::size_of::<Datum>();
    Ok(source.len().saturating_add(pieces.saturating_mul(per_row)))
}
