//! The functions catalog queries call: PostgreSQL's catalog functions (`format_type`,
//! `pg_get_expr`, `pg_table_is_visible`, …), the session's (`current_setting`,
//! `set_config`, `current_schema`, …), a few on strings and arrays, and the set-returning
//! `generate_series` and `unnest`.

use super::builtin;
use super::exec::Exec;
use super::expr::{CExpr, ExprKind};
use super::settings;
use super::types::{self, BOOL, CType, Datum, INT4, INT8, NAME, OID, TEXT};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::{Func, PureFunc};
use crate::types::{SqlType, TypeGroup};
use crate::value::Value;

/// A scalar function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ScalarFunc {
    /// A function of the SQL layer's own (see [`ScalarFunc::resolve_pure`]).
    Pure(PureFunc),
    /// `array_append`, `string_to_array`, … (`array_funcs.rs`).
    Array(super::array_funcs::ArrayFunc),
    /// One that needs the session (see [`ScalarFunc::resolve_sql`]).
    Sql(Func),
    TableIsVisible,
    TypeIsVisible,
    GetUserById,
    FormatType,
    GetExpr,
    GetIndexDef,
    GetConstraintDef,
    ArrayToString,
    ArrayUpper,
    ArrayLower,
    ArrayLength,
    Cardinality,
    EncodingToChar,
    RelationIsPublishable,
    Description,
    QuoteIdent,
    CurrentSchema,
    CurrentSchemas,
    CurrentDatabase,
    CurrentUser,
    CurrentSetting,
    SetConfig,
    Version,
    BackendPid,
    /// `pg_cancel_backend(pid)`: cancels another session's running statement.
    CancelBackend,
    /// `pg_terminate_backend(pid[, timeout])`: ends another session's connection.
    TerminateBackend,
    HasPrivilege,
    IsInRecovery,
    GetSerialSequence,
    SizePretty,
    /// `pg_relation_size`, `pg_table_size`, `pg_total_relation_size`: a table's pages.
    RelationSize,
    /// `pg_indexes_size`: 0, the primary key being the table's own tree.
    IndexesSize,
    Coalesce,
    NullIf,
    Lower,
    Upper,
    Length,
    Concat,
    /// `format(formatstr, …)` (`format_func.rs`).
    Format,
    Now,
    /// A function that exists for its name's sake but that hotpage cannot compute: reached
    /// only for objects hotpage does not have (statistics objects, partition keys).
    Unsupported(&'static str),
}

/// A function's declared parameters (`None`: any type) and how many may be left out.
struct Signature {
    func: ScalarFunc,
    params: &'static [Option<CType>],
    optional: usize,
    /// Any number of arguments (each of the one declared type).
    variadic: bool,
    result: CType,
}

const fn sig(
    func: ScalarFunc,
    params: &'static [Option<CType>],
    optional: usize,
    result: CType,
) -> Signature {
    Signature {
        func,
        params,
        optional,
        variadic: false,
        result,
    }
}

fn signature(name: &str) -> Option<Signature> {
    use ScalarFunc as F;
    const OID_: Option<CType> = Some(OID);
    const TEXT_: Option<CType> = Some(TEXT);
    const INT_: Option<CType> = Some(INT4);
    const BOOL_: Option<CType> = Some(BOOL);
    Some(match name {
        "pg_table_is_visible" => sig(F::TableIsVisible, &[OID_], 0, BOOL),
        "pg_type_is_visible" => sig(F::TypeIsVisible, &[OID_], 0, BOOL),
        "pg_get_userbyid" => sig(F::GetUserById, &[OID_], 0, NAME),
        "format_type" => sig(F::FormatType, &[OID_, INT_], 0, TEXT),
        "pg_get_expr" => sig(F::GetExpr, &[Some(CType::NodeTree), OID_, BOOL_], 1, TEXT),
        "pg_get_indexdef" => sig(F::GetIndexDef, &[OID_, INT_, BOOL_], 2, TEXT),
        "pg_get_constraintdef" => sig(F::GetConstraintDef, &[OID_, BOOL_], 1, TEXT),
        "array_to_string" => sig(F::ArrayToString, &[None, TEXT_, TEXT_], 1, TEXT),
        "array_upper" => sig(F::ArrayUpper, &[None, INT_], 0, INT4),
        "array_lower" => sig(F::ArrayLower, &[None, INT_], 0, INT4),
        "array_length" => sig(F::ArrayLength, &[None, INT_], 0, INT4),
        "cardinality" => sig(F::Cardinality, &[None], 0, INT4),
        "pg_encoding_to_char" => sig(F::EncodingToChar, &[INT_], 0, NAME),
        "pg_relation_is_publishable" => {
            sig(F::RelationIsPublishable, &[Some(CType::RegClass)], 0, BOOL)
        }
        "obj_description" | "shobj_description" => {
            sig(F::Description, &[OID_, Some(NAME)], 1, TEXT)
        }
        "col_description" => sig(F::Description, &[OID_, INT_], 0, TEXT),
        "quote_ident" => sig(F::QuoteIdent, &[TEXT_], 0, TEXT),
        "current_schema" => sig(F::CurrentSchema, &[], 0, NAME),
        "current_schemas" => sig(F::CurrentSchemas, &[BOOL_], 0, NAME.array_of()),
        "current_database" | "current_catalog" => sig(F::CurrentDatabase, &[], 0, NAME),
        "current_user" | "session_user" | "user" | "current_role" => {
            sig(F::CurrentUser, &[], 0, NAME)
        }
        "current_setting" => sig(F::CurrentSetting, &[TEXT_, BOOL_], 1, TEXT),
        "set_config" => sig(F::SetConfig, &[TEXT_, TEXT_, BOOL_], 0, TEXT),
        "version" => sig(F::Version, &[], 0, TEXT),
        "pg_backend_pid" => sig(F::BackendPid, &[], 0, INT4),
        "pg_cancel_backend" => sig(F::CancelBackend, &[INT_], 0, BOOL),
        "pg_terminate_backend" => sig(F::TerminateBackend, &[INT_, Some(INT8)], 1, BOOL),
        "has_table_privilege"
        | "has_schema_privilege"
        | "has_database_privilege"
        | "has_column_privilege"
        | "has_sequence_privilege"
        | "has_any_column_privilege" => sig(F::HasPrivilege, &[None, None, None], 1, BOOL),
        "pg_is_in_recovery" => sig(F::IsInRecovery, &[], 0, BOOL),
        "pg_get_serial_sequence" => sig(F::GetSerialSequence, &[TEXT_, TEXT_], 0, TEXT),
        "pg_size_pretty" => sig(F::SizePretty, &[Some(INT8)], 0, TEXT),
        "pg_relation_size" | "pg_table_size" | "pg_total_relation_size" => {
            sig(F::RelationSize, &[Some(CType::RegClass), TEXT_], 1, INT8)
        }
        "pg_indexes_size" => sig(F::IndexesSize, &[Some(CType::RegClass)], 0, INT8),
        "coalesce" => Signature {
            variadic: true,
            ..sig(F::Coalesce, &[None], 0, CType::Unknown)
        },
        "nullif" => sig(F::NullIf, &[None, None], 0, CType::Unknown),
        "lower" => sig(F::Lower, &[TEXT_], 0, TEXT),
        "upper" => sig(F::Upper, &[TEXT_], 0, TEXT),
        "length" | "char_length" | "character_length" => sig(F::Length, &[TEXT_], 0, INT4),
        "concat" => Signature {
            variadic: true,
            ..sig(F::Concat, &[None], 0, TEXT)
        },
        "format" => Signature {
            variadic: true,
            ..sig(F::Format, &[TEXT_, None], 0, TEXT)
        },
        "now" | "current_timestamp" | "transaction_timestamp" | "statement_timestamp" => {
            sig(F::Now, &[], 0, types::TIMESTAMPTZ)
        }
        "pg_get_statisticsobjdef_columns" => sig(
            F::Unsupported("pg_get_statisticsobjdef_columns (hotpage has no statistics objects)"),
            &[OID_],
            0,
            TEXT,
        ),
        // pg_proc has no rows (see defs.rs), so psql's \df never reaches these.
        "pg_function_is_visible" => sig(
            F::Unsupported("pg_function_is_visible (hotpage lists no functions in pg_proc)"),
            &[OID_],
            0,
            BOOL,
        ),
        "pg_get_function_result" | "pg_get_function_arguments" => sig(
            F::Unsupported("pg_get_function_result and _arguments (pg_proc has no rows)"),
            &[OID_],
            0,
            TEXT,
        ),
        "pg_get_partkeydef" => sig(
            F::Unsupported("pg_get_partkeydef (a table waiting for its partitions has no key yet)"),
            &[OID_],
            0,
            TEXT,
        ),
        _ => return None,
    })
}

/// Whether `name` is a function of the catalog's (`pg_typeof` is planned apart: its
/// result is its argument's type, known when the query is planned).
pub(crate) fn is_catalog_function(name: &str) -> bool {
    signature(name).is_some() || name == "pg_typeof" || super::array_funcs::is_array_function(name)
}

impl ScalarFunc {
    /// The function `name` called with `args` (whose untyped literals take the declared
    /// parameter types), and its result type.
    /// `implicit_conversions`: T-SQL's rule for COALESCE's arguments ([`unify_types`]).
    pub fn resolve(
        name: &str,
        args: &mut Vec<CExpr>,
        implicit_conversions: bool,
    ) -> SqlResult<(ScalarFunc, CType)> {
        if let Some(resolved) = super::array_funcs::resolve(name, args) {
            let (func, ty) = resolved?;
            return Ok((ScalarFunc::Array(func), ty));
        }
        if signature(name).is_none()
            && let Some(func) = Func::by_name(name)
        {
            return match func {
                Func::Pure(pure) => ScalarFunc::resolve_pure(name, pure, args),
                other => Ok(ScalarFunc::resolve_sql(other, args)),
            };
        }
        let sig = signature(name).ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("function {name}() does not exist"),
            )
            .with_hint("hotpage's catalog has the functions psql and the common drivers call")
        })?;
        let (min, max) = if sig.variadic {
            (1, usize::MAX)
        } else {
            (sig.params.len() - sig.optional, sig.params.len())
        };
        if !(min..=max).contains(&args.len()) {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!(
                    "function {name} with {} arguments does not exist",
                    args.len()
                ),
            ));
        }
        let taken = std::mem::take(args);
        for (i, arg) in taken.into_iter().enumerate() {
            let declared = sig.params.get(i).or(sig.params.last()).copied().flatten();
            args.push(match declared {
                Some(ty) => arg.cast_to(ty),
                None if arg.ty == CType::Unknown
                    && !matches!(sig.func, ScalarFunc::Coalesce | ScalarFunc::NullIf) =>
                {
                    arg.cast_to(TEXT)
                }
                None => arg,
            });
        }
        if matches!(
            sig.func,
            ScalarFunc::ArrayToString
                | ScalarFunc::ArrayUpper
                | ScalarFunc::ArrayLower
                | ScalarFunc::ArrayLength
                | ScalarFunc::Cardinality
        ) {
            let first = args.remove(0);
            let first = match first.ty {
                ty if ty.element().is_some() => first,
                CType::Unknown => first.cast_to(TEXT.array_of()),
                other => {
                    return Err(SqlError::new(
                        sqlstate::UNDEFINED_FUNCTION,
                        format!("function {name}({}, …) does not exist", other.name()),
                    ));
                }
            };
            args.insert(0, first);
        }
        let result = match sig.func {
            ScalarFunc::Coalesce => {
                let ty = unify_types("COALESCE", implicit_conversions, args.iter())?;
                let taken = std::mem::take(args);
                args.extend(taken.into_iter().map(|a| cast_to_common(a, ty)));
                ty
            }
            // An untyped side takes the other's type, as PostgreSQL resolves `=`: a date
            // compared with '2024-01-31' as a date, not as text.
            ScalarFunc::NullIf => {
                let (Some(b), Some(a)) = (args.pop(), args.pop()) else {
                    return Err(SqlError::internal("nullif takes two arguments"));
                };
                let (a, b) = super::compile::unify(a, b);
                args.extend([a, b]);
                args[0].ty
            }
            _ => sig.result,
        };
        Ok((sig.func, result))
    }

    /// One of the SQL layer's functions that reads or changes the session (`nextval`,
    /// `lastval`, `pg_sleep`), makes a value (`gen_random_uuid`) or has a T-SQL use
    /// (`hotpage_datediff`, `abs`); untyped arguments are text, as there.
    fn resolve_sql(func: Func, args: &mut Vec<CExpr>) -> (ScalarFunc, CType) {
        let types = sql_layer_arguments(args);
        let result = func.result_type(&types).map_or(TEXT, CType::Sql);
        (ScalarFunc::Sql(func), result)
    }

    /// One of the SQL layer's functions (`substr`, `round`, `greatest`, …: `expr/builtin.rs`),
    /// so that a query with joins has the functions a one-table query has. An untyped
    /// argument is text; the result's type follows the arguments' as there.
    pub fn resolve_pure(
        name: &str,
        pure: PureFunc,
        args: &mut Vec<CExpr>,
    ) -> SqlResult<(ScalarFunc, CType)> {
        if !pure.takes(args.len()) {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!(
                    "function {name} with {} arguments does not exist",
                    args.len()
                ),
            ));
        }
        if matches!(pure, PureFunc::ConcatWs | PureFunc::QuoteLiteral) {
            // They write each value as its output does, and a value carries no width: a
            // real would print as the double it is held in (`1.100000023841858`).
            let taken = std::mem::take(args);
            args.extend(taken.into_iter().map(|a| match a.ty {
                ty if ty == types::FLOAT4 => a.cast_to(TEXT),
                // quote_literal casts its value to text: a boolean is true/false.
                ty if ty == BOOL && pure == PureFunc::QuoteLiteral => a.cast_to(TEXT),
                _ => a,
            }));
        }
        if matches!(pure, PureFunc::Greatest | PureFunc::Least) {
            datetime_to_common(args);
        }
        let types = sql_layer_arguments(args);
        let result = pure.ty(&types).map_or(TEXT, CType::Sql);
        Ok((ScalarFunc::Pure(pure), result))
    }
}

/// GREATEST's or LEAST's dates, timestamps and intervals, and the untyped literals among
/// them, cast to their common type (a date among timestamps is its midnight, `'1 day'`
/// among intervals an interval), as PostgreSQL casts them; numbers and strings are left
/// to the SQL layer, as in a one-table query.
fn datetime_to_common(args: &mut Vec<CExpr>) {
    let common = common_type(args.iter().map(|a| a.ty));
    let datetime = |t: CType| {
        matches!(t, CType::Sql(ty) if matches!(
            ty.comparison_group(),
            Some((TypeGroup::DateTime | TypeGroup::Interval, _))
        ))
    };
    if !datetime(common) {
        return;
    }
    let taken = std::mem::take(args);
    args.extend(taken.into_iter().map(|a| match a.ty {
        t if t == common => a,
        t if t == CType::Unknown || datetime(t) => a.cast_to(common),
        _ => a,
    }));
}

/// Arguments for one of the SQL layer's functions, as a one-table query passes them: an
/// untyped one is text, and char(n) is text without its padding. Returns their types.
fn sql_layer_arguments(args: &mut Vec<CExpr>) -> Vec<Option<SqlType>> {
    let taken = std::mem::take(args);
    args.extend(taken.into_iter().map(|a| match a.ty {
        CType::Unknown | CType::Sql(SqlType::Char(_)) => a.cast_to(TEXT),
        _ => a,
    }));
    args.iter()
        .map(|a| match a.ty {
            CType::Sql(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// The type COALESCE's arguments share: the first typed one's, or, where they are all
/// numbers, the widest (integers < numeric < double precision), as PostgreSQL resolves a
/// numeric category, and likewise date < timestamp < timestamptz; text when none is typed.
pub(crate) fn common_type(types: impl Iterator<Item = CType>) -> CType {
    let rank = |t: CType| match t {
        CType::Sql(ty) => ty
            .comparison_group()
            .filter(|(group, _)| matches!(group, TypeGroup::Number | TypeGroup::DateTime)),
        _ => None,
    };
    let mut chosen: Option<CType> = None;
    let mut mixed = false;
    for t in types.filter(|t| *t != CType::Unknown) {
        mixed |= chosen.is_some_and(|c| c != t);
        chosen = Some(match (chosen, rank(t)) {
            (None, _) => t,
            (Some(c), Some((group, r)))
                if rank(c).is_some_and(|(gc, rc)| gc == group && r > rc) =>
            {
                t
            }
            (Some(c), _) => wider_numeric(c, t),
        });
    }
    match chosen {
        // PostgreSQL's select_common_typmod: a numeric(p,s) keeps its typmod only where
        // every value has it (`coalesce(m, 0)` is numeric, and 10 does not fit (10,2)'s
        // scale).
        Some(CType::Sql(SqlType::Numeric { .. })) if mixed => {
            CType::Sql(SqlType::NumericUnconstrained)
        }
        other => other.unwrap_or(TEXT),
    }
}

/// PostgreSQL's common type of a CASE's results (ELSE first), a COALESCE's arguments or an
/// ARRAY's elements (`select_common_type`): [`common_type`], and a value of another type
/// group (a number among strings, a boolean among numbers) is 42804, `CASE types integer
/// and text cannot be matched`, naming the common type so far and the newcomer. Without
/// it, each value was cast to the first typed one's type, so a text ELSE after an integer
/// THEN came out as text in an integer column. Untyped literals meet anything.
pub(crate) fn unify_types<'a>(
    what: &str,
    implicit_conversions: bool,
    values: impl Iterator<Item = &'a CExpr>,
) -> SqlResult<CType> {
    let values: Vec<&CExpr> = values.collect();
    let common = unify_value_types(what, implicit_conversions, values.iter().map(|v| v.ty))?;
    // An untyped literal other than NULL is numeric without a typmod where it meets
    // numeric(p,s), so the typmod goes (`coalesce(m, '7.125')` is 7.125, typmod -1).
    let literal = values
        .iter()
        .any(|v| v.ty == CType::Unknown && !matches!(v.kind, ExprKind::Const(Datum::Null)));
    Ok(match common {
        CType::Sql(SqlType::Numeric { .. }) if literal => CType::Sql(SqlType::NumericUnconstrained),
        other => other,
    })
}

/// [`unify_types`] over the values' types.
fn unify_value_types(
    what: &str,
    implicit_conversions: bool,
    types: impl Iterator<Item = CType>,
) -> SqlResult<CType> {
    let group = |t: CType| match t {
        CType::Sql(ty) => ty.comparison_group().map(|(group, _)| group),
        _ => None,
    };
    // oid and the reg* types take an integer (`CASE … THEN c.oid ELSE 0 END` is an oid).
    let oid_like = |t: CType| t.is_integer_like() && group(t).is_none();
    let mut so_far: Option<CType> = None;
    for t in types.filter(|t| *t != CType::Unknown) {
        let Some(common) = so_far else {
            so_far = Some(t);
            continue;
        };
        so_far = Some(match (group(common), group(t)) {
            (Some(a), Some(b)) if a != b && implicit_conversions => common,
            (Some(a), Some(b)) if a != b => {
                return Err(SqlError::new(
                    sqlstate::DATATYPE_MISMATCH,
                    format!(
                        "{what} types {} and {} cannot be matched",
                        common.name(),
                        t.name()
                    ),
                ));
            }
            // Strings of different types meet as text: a varchar(4) ELSE must not cut a
            // text THEN to 4 characters.
            (Some(TypeGroup::String), Some(TypeGroup::String)) if common != t => TEXT,
            _ if oid_like(t) && common.is_integer_like() && !oid_like(common) => t,
            _ if oid_like(common) && t.is_integer_like() => common,
            _ => common_type([common, t].into_iter()),
        });
    }
    Ok(so_far.unwrap_or(TEXT))
}

/// `value` cast to `common`, its values' common type. Where that is numeric, a number keeps
/// its own scale (PostgreSQL's common numeric has no typmod): an integer becomes a numeric
/// of scale 0 and a numeric stays as it is, so `coalesce(n, 5)` is 1.50 or 5, not 5.00.
pub(crate) fn cast_to_common(value: CExpr, common: CType) -> CExpr {
    match (value.ty, common) {
        (from, CType::Sql(to)) if to.is_numeric() && from.is_integer_like() => {
            value.cast_to(CType::Sql(SqlType::NumericUnconstrained))
        }
        (CType::Sql(from), CType::Sql(to)) if from.is_numeric() && to.is_numeric() => value,
        // An untyped literal keeps its written scale too: where one meets a numeric,
        // `unify_types` makes the common type numeric without a typmod.
        _ => value.cast_to(common),
    }
}

/// Two numerics of different precision or scale meet in numeric without a typmod, as in
/// PostgreSQL, so each value keeps its own scale (a set operation's rows are not cast
/// between numerics: `cast_rows`); the first side's typmod rounded the other side's
/// values (`SELECT 1.0 UNION ALL SELECT 2.25` gave 2.3, where PostgreSQL gives 2.25).
/// Numerics of one typmod keep it.
fn wider_numeric(so_far: CType, next: CType) -> CType {
    match (so_far, next) {
        (CType::Sql(a), CType::Sql(b)) if a.is_numeric() && b.is_numeric() && a != b => {
            CType::Sql(SqlType::NumericUnconstrained)
        }
        _ => so_far,
    }
}

/// `format_type(type, typmod)`: NULL for a NULL type.
fn format_type(args: &[Datum]) -> Datum {
    match args.first() {
        Some(Datum::Int(type_oid)) => {
            let typmod = args.get(1).and_then(Datum::as_int).map(|m| m as i32);
            Datum::Text(builtin::format_type(*type_oid as u32, typmod))
        }
        _ => Datum::Null,
    }
}

/// One of the SQL layer's functions, on values.
fn call_pure(pure: PureFunc, args: &[Datum]) -> SqlResult<Datum> {
    let values = values_of(pure, args)?;
    Ok(Datum::from_value(pure.eval(values)?))
}

/// The arguments as the SQL layer's values (an array is none: 42883).
fn values_of(func: impl std::fmt::Debug, args: &[Datum]) -> SqlResult<Vec<Value>> {
    args.iter()
        .map(|a| {
            a.to_value().ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    format!("function {func:?}() does not take an array"),
                )
            })
        })
        .collect()
}

/// Calls `func` on evaluated arguments (`types`: their static types).
pub(crate) fn call(
    exec: &mut Exec<'_>,
    func: ScalarFunc,
    args: Vec<Datum>,
    types: &[CType],
) -> SqlResult<Datum> {
    // The SQL layer's functions take NULLs as they do in a one-table query.
    match func {
        ScalarFunc::Pure(pure) => call_pure(pure, &args),
        ScalarFunc::Sql(f) => {
            let values = values_of(f, &args)?;
            let value = crate::session::call_function(
                exec.db,
                exec.session.state,
                exec.session
                    .engine
                    .as_deref_mut()
                    .ok_or_else(|| SqlError::internal("a function called inside a table read"))?,
                f,
                values,
            )?;
            Ok(Datum::from_value(value))
        }
        other => call_catalog(exec, other, args, types),
    }
}

/// A catalog function.
fn call_catalog(
    exec: &mut Exec<'_>,
    func: ScalarFunc,
    args: Vec<Datum>,
    types: &[CType],
) -> SqlResult<Datum> {
    use ScalarFunc as F;
    // Most functions are strict: NULL in, NULL out.
    if let F::Array(array_func) = func {
        return super::array_funcs::call(array_func, args);
    }
    let strict = !matches!(
        func,
        F::Coalesce
            | F::Concat
            | F::Format
            | F::NullIf
            | F::FormatType
            | F::SetConfig
            | F::CurrentSetting
    );
    if strict && args.iter().any(Datum::is_null) {
        return Ok(Datum::Null);
    }
    let oid = |i: usize| args.get(i).and_then(Datum::as_int).unwrap_or(0) as u32;
    let text = |i: usize| match args.get(i) {
        Some(Datum::Text(s)) => s.clone(),
        _ => String::new(),
    };
    let catalog = exec.catalog;
    Ok(match func {
        F::Pure(_) | F::Sql(_) | F::Array(_) => return Err(SqlError::internal("called elsewhere")),
        F::TableIsVisible => Datum::Bool(catalog.relation_visible(oid(0))),
        F::TypeIsVisible => Datum::Bool(builtin::type_def(oid(0)).is_some()),
        F::GetUserById => Datum::Text(
            catalog
                .role_text(oid(0))
                .unwrap_or_else(|| format!("unknown (OID={})", oid(0))),
        ),
        F::FormatType => format_type(&args),
        F::GetExpr => get_expr(
            catalog,
            &text(0),
            oid(1),
            args.get(2) == Some(&Datum::Bool(true)),
        )?,
        F::GetIndexDef => index_def(
            catalog,
            oid(0),
            args.get(1).and_then(Datum::as_int),
            args.get(2) == Some(&Datum::Bool(true)),
        ),
        F::GetConstraintDef => catalog
            .constraint_def(oid(0))
            .map_or(Datum::Null, Datum::Text),
        F::ArrayToString => array_to_string(exec, &args, types),
        F::ArrayUpper | F::ArrayLower | F::ArrayLength | F::Cardinality => {
            array_bounds(func, &args)
        }
        F::EncodingToChar => Datum::text(if oid(0) == 6 { "UTF8" } else { "" }),
        F::RelationIsPublishable => Datum::Bool(
            catalog
                .model
                .class(oid(0))
                .is_some_and(|c| c.kind == b'r' && c.namespace == builtin::PUBLIC),
        ),
        // Nothing in a hotpage database has a comment (pg_description is empty).
        F::Description => Datum::Null,
        F::QuoteIdent => Datum::Text(super::deparse::quote_ident(&text(0))),
        F::CurrentSchema
        | F::CurrentSchemas
        | F::CurrentDatabase
        | F::CurrentUser
        | F::CurrentSetting
        | F::SetConfig
        | F::Version
        | F::BackendPid => session_function(exec, func, &args)?,
        F::CancelBackend | F::TerminateBackend => signal_backend(exec, func, &args)?,
        // hotpage has one role, which may do everything.
        F::HasPrivilege => Datum::Bool(true),
        F::IsInRecovery => Datum::Bool(false),
        F::GetSerialSequence => serial_sequence(catalog, &text(0), &text(1))?,
        F::SizePretty | F::RelationSize | F::IndexesSize => sizes(exec, func, &args)?,
        F::Coalesce => args
            .into_iter()
            .find(|a| !a.is_null())
            .unwrap_or(Datum::Null),
        F::NullIf => match (&args[0], &args[1]) {
            (a, b) if a.sql_cmp(b) == Some(std::cmp::Ordering::Equal) => Datum::Null,
            (a, _) => a.clone(),
        },
        F::Lower => Datum::Text(text(0).to_lowercase()),
        F::Upper => Datum::Text(text(0).to_uppercase()),
        F::Length => Datum::Int(text(0).chars().count() as i64),
        F::Concat => concat(catalog, &args, types)?,
        F::Format => super::format_func::format(&args, types, catalog)?,
        F::Now => Datum::from_value(crate::value::Value::Timestamp(crate::session::now_micros())),
        F::Unsupported(what) => return Err(SqlError::unsupported(what)),
    })
}

/// `concat(…)`: each argument as its type prints it; NULLs are left out.
fn concat(catalog: &super::Catalog, args: &[Datum], types: &[CType]) -> SqlResult<Datum> {
    let parts: Vec<String> = args
        .iter()
        .zip(types)
        .filter_map(|(a, t)| types::to_text(a, *t, catalog))
        .collect();
    // Checked before the joined text is made: past 1 GB it never exists.
    crate::limits::check_text_len(parts.iter().map(String::len).sum())?;
    Ok(Datum::Text(parts.concat()))
}

/// `pg_get_expr(adbin, relid[, pretty])`: the expression an `adbin` of hotpage's stands
/// for, printed from the catalog.
fn get_expr(catalog: &super::Catalog, tree: &str, relid: u32, pretty: bool) -> SqlResult<Datum> {
    let attnum = super::rows::node_tree_attnum(tree).ok_or_else(|| {
        SqlError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!("pg_get_expr: \"{tree}\" is not an expression tree of hotpage's"),
        )
    })?;
    Ok(catalog
        .expr_text(relid, attnum, pretty)
        .map_or(Datum::Null, Datum::Text))
}

/// The functions of the session: its schema, user, settings, version and id.
fn session_function(exec: &mut Exec<'_>, func: ScalarFunc, args: &[Datum]) -> SqlResult<Datum> {
    use ScalarFunc as F;
    Ok(match func {
        F::CurrentSchema => settings::search_path(&exec.session.state.settings)
            .into_iter()
            .find(|s| exec.catalog.namespace_oid_of(s).is_some())
            .map_or(Datum::Null, Datum::Text),
        F::CurrentSchemas => current_schemas(exec, args.first() == Some(&Datum::Bool(true))),
        F::CurrentDatabase => Datum::text(builtin::DATABASE_NAME),
        F::CurrentUser => Datum::text(builtin::OWNER_NAME),
        F::CurrentSetting => current_setting(exec, args)?,
        F::SetConfig => set_config(exec, args)?,
        F::Version => Datum::Text(version()),
        F::BackendPid => Datum::Int(i64::from(exec.pid)),
        other => {
            return Err(SqlError::internal(format!(
                "{other:?} is no session function"
            )));
        }
    })
}

/// How often `pg_terminate_backend(pid, timeout)` looks whether the session has ended.
const WAIT_SLICE_MS: i64 = 10;

/// `pg_cancel_backend(pid)` and `pg_terminate_backend(pid[, timeout])`: true if the
/// session was signalled. As PostgreSQL, a pid that is no live session is false, a NULL
/// argument NULL, and a negative timeout 22003. With a timeout (milliseconds) terminate
/// waits that long for the session to end, and is false if it has not.
fn signal_backend(exec: &mut Exec<'_>, func: ScalarFunc, args: &[Datum]) -> SqlResult<Datum> {
    let Some(pid) = args.first().and_then(Datum::as_int) else {
        return Ok(Datum::Null);
    };
    let timeout_ms = match args.get(1) {
        None => 0,
        Some(Datum::Null) => return Ok(Datum::Null),
        Some(timeout) => timeout.as_int().unwrap_or(0),
    };
    if timeout_ms < 0 {
        return Err(SqlError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            "\"timeout\" must not be negative",
        ));
    }
    let Ok(pid) = u32::try_from(pid) else {
        return Ok(Datum::Bool(false));
    };
    let Some(activity) = exec.db.activity_of(pid) else {
        return Ok(Datum::Bool(false));
    };
    if func == ScalarFunc::CancelBackend {
        return Ok(Datum::Bool(activity.cancel()));
    }
    if !activity.terminate() {
        return Ok(Datum::Bool(false));
    }
    // The session's own handle on its activity goes when it ends; this one must not keep
    // it alive while waiting.
    drop(activity);
    let mut waited_ms = 0;
    while timeout_ms > 0 && exec.db.activity_of(pid).is_some() {
        if waited_ms >= timeout_ms {
            return Ok(Datum::Bool(false));
        }
        // Through the statement's clock: the caller's own cancel, timeout or terminate
        // ends the wait (as PostgreSQL's interrupts do).
        let slice_ms = (timeout_ms - waited_ms).min(WAIT_SLICE_MS);
        exec.session
            .state
            .clock
            .sleep(std::time::Duration::from_millis(slice_ms.unsigned_abs()))?;
        waited_ms += slice_ms;
    }
    Ok(Datum::Bool(true))
}

/// `version()`.
pub(crate) fn version() -> String {
    format!(
        "PostgreSQL {} (hotpage {}) on Rust",
        settings::SERVER_VERSION,
        env!("CARGO_PKG_VERSION")
    )
}

fn index_def(catalog: &super::Catalog, oid: u32, column: Option<i64>, pretty: bool) -> Datum {
    match column {
        Some(c) if c > 0 => catalog
            .model
            .class(oid)
            .and_then(|class| class.columns.get(c as usize - 1))
            .map_or(Datum::Null, |a| {
                Datum::Text(super::deparse::quote_ident(&a.name))
            }),
        _ => catalog
            .index_def(oid, pretty)
            .map_or(Datum::Null, Datum::Text),
    }
}

fn array_to_string(exec: &Exec<'_>, args: &[Datum], types: &[CType]) -> Datum {
    let Datum::Array(items) = &args[0] else {
        return Datum::Null;
    };
    let elem = types.first().and_then(|t| t.element()).unwrap_or(TEXT);
    let separator = match args.get(1) {
        Some(Datum::Text(s)) => s.as_str(),
        _ => "",
    };
    let null_text = match args.get(2) {
        Some(Datum::Text(s)) => Some(s.as_str()),
        _ => None,
    };
    let parts: Vec<String> = items
        .iter()
        .filter_map(|item| match types::to_text(item, elem, exec.catalog) {
            Some(text) => Some(text),
            None => null_text.map(str::to_string),
        })
        .collect();
    Datum::Text(parts.join(separator))
}

fn array_bounds(func: ScalarFunc, args: &[Datum]) -> Datum {
    let Datum::Array(items) = &args[0] else {
        return Datum::Null;
    };
    let len = items.len() as i64;
    if func == ScalarFunc::Cardinality {
        return Datum::Int(len);
    }
    // One-dimensional arrays only: dimension 1 has bounds 1..len; others have none.
    if args.get(1).and_then(Datum::as_int) != Some(1) || len == 0 {
        return Datum::Null;
    }
    Datum::Int(match func {
        ScalarFunc::ArrayLower => 1,
        _ => len,
    })
}

fn current_schemas(exec: &Exec<'_>, implicit: bool) -> Datum {
    let mut schemas = Vec::new();
    if implicit {
        schemas.push(Datum::text("pg_catalog"));
    }
    for schema in settings::search_path(&exec.session.state.settings) {
        if exec.catalog.namespace_oid_of(&schema).is_some() && schema != "pg_catalog" {
            schemas.push(Datum::Text(schema));
        }
    }
    Datum::Array(schemas)
}

fn current_setting(exec: &Exec<'_>, args: &[Datum]) -> SqlResult<Datum> {
    let Some(Datum::Text(name)) = args.first() else {
        return Ok(Datum::Null);
    };
    let missing_ok = args.get(1) == Some(&Datum::Bool(true));
    match settings::value(&exec.session.state.settings, name) {
        Some(value) => Ok(Datum::Text(value)),
        None if missing_ok => Ok(Datum::Null),
        None => Err(SqlError::new(
            sqlstate::UNDEFINED_OBJECT,
            format!("unrecognized configuration parameter \"{name}\""),
        )),
    }
}

/// `set_config(name, value, is_local)`: as `SET`; hotpage keeps a local setting for the
/// rest of the session, as its `SET LOCAL` does.
fn set_config(exec: &mut Exec<'_>, args: &[Datum]) -> SqlResult<Datum> {
    let (Some(Datum::Text(name)), Some(value)) = (args.first(), args.get(1)) else {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "SET requires parameter name",
        ));
    };
    let value = match value {
        Datum::Text(v) => v.clone(),
        _ => String::new(),
    };
    if let Some(setting) = settings::find(name)
        && setting.context == "internal"
    {
        return Err(SqlError::new(
            "55P02",
            format!("parameter \"{}\" cannot be changed", setting.name),
        ));
    }
    if name.eq_ignore_ascii_case(crate::limits::QUERY_MEMORY_SETTING) {
        crate::limits::check_query_memory(&value)?;
    }
    exec.session
        .state
        .settings
        .insert(name.to_lowercase(), value.clone());
    Ok(Datum::Text(value))
}

/// `pg_get_serial_sequence('table', 'column')`: the identity column's sequence.
fn serial_sequence(catalog: &super::Catalog, table: &str, column: &str) -> SqlResult<Datum> {
    let oid = catalog.relation_oid_of(table).ok_or_else(|| {
        SqlError::new(
            sqlstate::UNDEFINED_TABLE,
            format!("relation \"{table}\" does not exist"),
        )
    })?;
    let class = catalog.model.class(oid);
    let attnum = class
        .and_then(|c| c.columns.iter().position(|a| a.name == column))
        .ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!("column \"{column}\" of relation \"{table}\" does not exist"),
            )
        })?;
    let sequence = catalog
        .model
        .depends
        .iter()
        .find(|d| d.table == oid && d.column as usize == attnum + 1)
        .and_then(|d| catalog.model.class(d.sequence));
    Ok(sequence.map_or(Datum::Null, |s| {
        Datum::Text(format!(
            "{}.{}",
            catalog.namespace_text(s.namespace),
            s.name
        ))
    }))
}

/// `pg_size_pretty` and the size functions psql's `\dt+` and `\di+` call. A table's
/// size is its pages (every page of its trees and heap) times the page size, for all
/// three of PostgreSQL's table sizes: a keyed table is one clustered B+tree, so its
/// primary key has no pages of its own (the index's size and `pg_indexes_size` are 0),
/// and there is no TOAST. A sequence or view has no pages either; an OID that names no
/// relation is NULL, as in PostgreSQL.
fn sizes(exec: &Exec<'_>, func: ScalarFunc, args: &[Datum]) -> SqlResult<Datum> {
    let number = args.first().and_then(Datum::as_int).unwrap_or(0);
    if func == ScalarFunc::SizePretty {
        return Ok(Datum::Text(size_pretty(number)));
    }
    let Some(class) = u32::try_from(number)
        .ok()
        .and_then(|oid| exec.catalog.model.class(oid))
    else {
        return Ok(Datum::Null);
    };
    let engine = exec.db.engine();
    let handle = match engine.table(&class.name) {
        Ok(handle) if class.kind == b'r' && func == ScalarFunc::RelationSize => handle,
        _ => return Ok(Datum::Int(0)),
    };
    let pages = engine
        .table_pages(&handle)
        .map_err(crate::session::engine_error)?
        .len();
    let bytes = pages.saturating_mul(engine.page_size());
    Ok(Datum::Int(i64::try_from(bytes).unwrap_or(i64::MAX)))
}

/// `pg_size_pretty(bytes)`: bytes, kB, MB, … rounded as PostgreSQL rounds them (one
/// extra bit kept for rounding half away from zero).
fn size_pretty(bytes: i64) -> String {
    let limit: i128 = 10 * 1024;
    let limit2 = limit * 2 - 1;
    let bytes = i128::from(bytes);
    if bytes.abs() < limit {
        return format!("{bytes} bytes");
    }
    let half_rounded = |x: i128| (x + if x < 0 { -1 } else { 1 }) / 2;
    let mut size = bytes >> 9;
    for unit in ["kB", "MB", "GB", "TB"] {
        if size.abs() < limit2 {
            return format!("{} {unit}", half_rounded(size));
        }
        size >>= 10;
    }
    format!("{} PB", half_rounded(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_as_pg_size_pretty_does() {
        assert_eq!(size_pretty(0), "0 bytes");
        assert_eq!(size_pretty(10 * 1024 - 1), "10239 bytes");
        assert_eq!(size_pretty(10 * 1024), "10 kB");
        assert_eq!(size_pretty(8192 * 1000), "8000 kB");
        assert_eq!(size_pretty(1024 * 1024 * 100), "100 MB");
        assert_eq!(size_pretty(i64::MIN), "-8192 PB");
    }
}
