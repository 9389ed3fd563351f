//! The types of a query's parameters, inferred from where the query uses them, as
//! PostgreSQL infers an untyped `$n`: from the other side of a comparison or arithmetic
//! (`id = $1` makes `$1` the type of `id`), from a cast (`$1::int`), from the list or
//! bounds it is tested against (`IN`, `BETWEEN`), as text in `LIKE` and text functions,
//! as boolean where a condition stands, and as bigint in LIMIT and OFFSET. A wire protocol
//! server reports these types (Describe) and reads parameters sent in binary by them.

use crate::expr::{Func, Scalar};
use crate::types::SqlType;
use sqlparser::ast::BinaryOperator;

/// Sets `types[i]` for each `$i+1` that `scalar` gives a type, where none is set yet (the
/// first use that implies a type wins).
pub(crate) fn infer(scalar: &Scalar, types: &mut [Option<SqlType>]) {
    match scalar {
        Scalar::Const(..) | Scalar::Column(..) | Scalar::Param(_) => {}
        Scalar::Neg(inner) | Scalar::Deep(inner) => infer(inner, types),
        Scalar::Not(inner) => {
            set(inner, Some(SqlType::Bool), types);
            infer(inner, types);
        }
        Scalar::IsNull(inner, _) => infer(inner, types),
        Scalar::Cast(inner, ty) => {
            set(inner, Some(*ty), types);
            infer(inner, types);
        }
        Scalar::Binary(op, left, right) => {
            if matches!(op, BinaryOperator::And | BinaryOperator::Or) {
                set(left, Some(SqlType::Bool), types);
                set(right, Some(SqlType::Bool), types);
            } else if matches!(op, BinaryOperator::StringConcat) {
                set(left, Some(SqlType::Text), types);
                set(right, Some(SqlType::Text), types);
            } else {
                set(left, right.ty(), types);
                set(right, left.ty(), types);
            }
            infer(left, types);
            infer(right, types);
        }
        Scalar::InList(item, list, _, _) => {
            set(item, list.iter().find_map(Scalar::ty), types);
            for entry in list {
                set(entry, item.ty(), types);
                infer(entry, types);
            }
            infer(item, types);
        }
        Scalar::Between(item, low, high, _) => {
            set(item, low.ty().or(high.ty()), types);
            set(low, item.ty(), types);
            set(high, item.ty(), types);
            for part in [item, low, high] {
                infer(part, types);
            }
        }
        Scalar::Like(item, pattern, _) => {
            set(item, Some(SqlType::Text), types);
            set(pattern, Some(SqlType::Text), types);
            infer(item, types);
            infer(pattern, types);
        }
        Scalar::Case(operand, arms, otherwise) => {
            infer_case(operand.as_deref(), arms, otherwise.as_deref(), types)
        }
        Scalar::Call(func, args) => {
            let text_args = match func {
                Func::Lower | Func::Upper | Func::Length => true,
                Func::Pure(pure) => pure.takes_text(),
                _ => false,
            };
            for arg in args {
                if text_args {
                    set(arg, Some(SqlType::Text), types);
                }
                infer(arg, types);
            }
        }
    }
}

/// CASE: a WHEN compared with the operand takes its type (a condition is boolean), and
/// the results take one another's.
fn infer_case(
    operand: Option<&Scalar>,
    arms: &[(Scalar, Scalar)],
    otherwise: Option<&Scalar>,
    types: &mut [Option<SqlType>],
) {
    let result_ty = arms
        .iter()
        .find_map(|(_, result)| result.ty())
        .or_else(|| otherwise.and_then(Scalar::ty));
    for (when, result) in arms {
        match operand {
            Some(operand) => set(when, operand.ty(), types),
            None => set(when, Some(SqlType::Bool), types),
        }
        set(result, result_ty, types);
        infer(when, types);
        infer(result, types);
    }
    if let Some(operand) = operand {
        set(operand, arms.iter().find_map(|(when, _)| when.ty()), types);
        infer(operand, types);
    }
    if let Some(otherwise) = otherwise {
        set(otherwise, result_ty, types);
        infer(otherwise, types);
    }
}

/// A condition (WHERE, HAVING): a bare `$n` there is a boolean.
pub(crate) fn infer_condition(scalar: &Scalar, types: &mut [Option<SqlType>]) {
    set(scalar, Some(SqlType::Bool), types);
    infer(scalar, types);
}

/// As [`infer`], where the parameter list grows as a statement's parts are planned (an
/// INSERT's VALUES rows): `types` is first made long enough for every `$n` in `scalar`.
pub(crate) fn infer_growing(scalar: &Scalar, types: &mut Vec<Option<SqlType>>) {
    let needed = std::cell::Cell::new(0usize);
    scalar.any_node(&|node| {
        if let Scalar::Param(index) = node {
            needed.set(needed.get().max(index + 1));
        }
        false
    });
    if types.len() < needed.get() {
        types.resize(needed.get(), None);
    }
    infer(scalar, types);
}

/// LIMIT and OFFSET: a bare `$n` there is a bigint.
pub(crate) fn infer_count(scalar: &Scalar, types: &mut [Option<SqlType>]) {
    set(scalar, Some(SqlType::BigInt), types);
    infer(scalar, types);
}

fn set(scalar: &Scalar, ty: Option<SqlType>, types: &mut [Option<SqlType>]) {
    if let (Scalar::Param(index), Some(ty)) = (scalar, ty)
        && let Some(slot) = types.get_mut(*index)
        && slot.is_none()
    {
        *slot = Some(ty);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::compile;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    fn types_of(condition: &str, params: usize) -> Vec<Option<SqlType>> {
        let expr = Parser::new(&PostgreSqlDialect {})
            .try_with_sql(condition)
            .and_then(|mut p| p.parse_expr())
            .expect("parse");
        let scope = [
            ("id".to_string(), SqlType::BigInt),
            ("v".to_string(), SqlType::Varchar(Some(10))),
            ("ok".to_string(), SqlType::Bool),
        ];
        let scalar = compile(&expr, &scope).expect("compile");
        let mut types = vec![None; params];
        infer_condition(&scalar, &mut types);
        types
    }

    #[test]
    fn parameters_take_the_type_of_what_they_meet() {
        use SqlType::*;
        assert_eq!(types_of("id = $1", 1), [Some(BigInt)]);
        assert_eq!(
            types_of("$1 < id AND v = $2", 2),
            [Some(BigInt), Some(Varchar(Some(10)))]
        );
        assert_eq!(types_of("id + $1 > 3", 1), [Some(BigInt)]);
        assert_eq!(types_of("id IN ($1, $2)", 2), [Some(BigInt), Some(BigInt)]);
        assert_eq!(types_of("$1 IN (1, 2)", 1), [Some(Int)]);
        assert_eq!(
            types_of("id BETWEEN $1 AND $2", 2),
            [Some(BigInt), Some(BigInt)]
        );
        assert_eq!(types_of("v LIKE $1", 1), [Some(Text)]);
        assert_eq!(types_of("$1::integer = 3", 1), [Some(Int)]);
        assert_eq!(types_of("lower($1) = v", 1), [Some(Text)]);
        assert_eq!(types_of("ok AND $1", 1), [Some(Bool)]);
        assert_eq!(types_of("$1", 1), [Some(Bool)]);
        assert_eq!(types_of("NOT $1", 1), [Some(Bool)]);
        // Nothing to go by: unknown, as $2 here.
        assert_eq!(types_of("id = $1 OR $2 IS NULL", 2), [Some(BigInt), None]);
        // The first use wins.
        assert_eq!(types_of("id = $1 AND v = $1", 1), [Some(BigInt)]);
    }

    #[test]
    fn a_growing_list_is_made_long_enough_for_its_parameters() {
        let expr = Parser::new(&PostgreSqlDialect {})
            .try_with_sql("$3::bigint + $1")
            .and_then(|mut p| p.parse_expr())
            .expect("parse");
        let scalar = compile(&expr, &[]).expect("compile");
        let mut types = Vec::new();
        infer_growing(&scalar, &mut types);
        assert_eq!(types, [Some(SqlType::BigInt), None, Some(SqlType::BigInt)]);
    }
}
