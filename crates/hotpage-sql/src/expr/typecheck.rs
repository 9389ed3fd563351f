//! PostgreSQL's type rules for the one-table path (`select.rs`), applied when a statement
//! is planned.
//!
//! The compiled expressions compare a number with text at run time, converting text that
//! reads as a number: T-SQL's statements run through them, and SQL Server converts so
//! (`WHERE id = v` with v = '5' matches there). PostgreSQL refuses the two types before
//! any row is read. Without this check a PostgreSQL-dialect `WHERE v IN (1, 10)` on a text
//! column matched the rows whose text read as 1 or 10, and gave no error at all while
//! every row did. The general engine (`catalog/compile.rs`) makes the same checks as it
//! compiles, with the same groups ([`SqlType::comparison_group`]).

use super::{Func, Scalar};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::types::SqlType;

/// Which type rules a session's statements are planned under.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Typing {
    /// PostgreSQL's: a number, a string and a boolean are not compared or unified with
    /// each other (42883, 42804), found when the statement is planned.
    #[default]
    Postgres,
    /// T-SQL's: text meeting a number is converted at run time, and an error only where it
    /// does not read as one.
    Implicit,
}

/// Refuses, as PostgreSQL does when planning, a comparison of values from different
/// groups (42883: `operator does not exist: text = integer`) and a CASE, COALESCE,
/// GREATEST or LEAST whose results mix them (42804: `COALESCE types text and integer
/// cannot be matched`). A string literal has no type yet and meets anything, as there.
#[recursive::recursive]
pub(crate) fn refuse_mixed_types(scalar: &Scalar) -> SqlResult<()> {
    check_node(scalar)?;
    scalar
        .children()
        .into_iter()
        .try_for_each(refuse_mixed_types)
}

fn check_node(scalar: &Scalar) -> SqlResult<()> {
    use sqlparser::ast::BinaryOperator::*;
    match scalar {
        Scalar::Binary(op @ (Eq | NotEq | Lt | LtEq | Gt | GtEq), left, right) => {
            comparable(left, &op.to_string(), right)
        }
        Scalar::InList(value, list, negated, _) => {
            let op = if *negated { "<>" } else { "=" };
            list.iter().try_for_each(|item| comparable(value, op, item))
        }
        // PostgreSQL's BETWEEN is `>= AND <=`, NOT BETWEEN `< OR >`: the errors name those.
        Scalar::Between(value, low, high, negated) => {
            let (low_op, high_op) = if *negated { ("<", ">") } else { (">=", "<=") };
            comparable(value, low_op, low)?;
            comparable(value, high_op, high)
        }
        Scalar::Case(operand, arms, otherwise) => {
            if let Some(operand) = operand {
                arms.iter()
                    .try_for_each(|(when, _)| comparable(operand, "=", when))?;
            }
            // PostgreSQL looks at ELSE first, then the THENs in order.
            let results = otherwise.iter().map(|e| e.as_ref());
            one_group("CASE", results.chain(arms.iter().map(|(_, result)| result)))
        }
        Scalar::Call(Func::Coalesce, args) => one_group("COALESCE", args.iter()),
        Scalar::Call(Func::Pure(func), args) => {
            use super::builtin::PureFunc;
            match (func, args.as_slice()) {
                (PureFunc::Greatest, _) => one_group("GREATEST", args.iter()),
                (PureFunc::Least, _) => one_group("LEAST", args.iter()),
                (PureFunc::NullIf, [left, right]) => comparable(left, "=", right),
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// The type PostgreSQL would name for `scalar`: a char(n) operand the compiler turned into
/// text for the comparison is still `character` to it.
fn operand_type(scalar: &Scalar) -> Option<SqlType> {
    match scalar {
        Scalar::Call(Func::CharToText, args) => args.first().and_then(Scalar::ty),
        Scalar::Deep(inner) => operand_type(inner),
        other => other.ty(),
    }
}

fn comparable(left: &Scalar, op: &str, right: &Scalar) -> SqlResult<()> {
    let (Some(a), Some(b)) = (operand_type(left), operand_type(right)) else {
        return Ok(());
    };
    match (a.comparison_group(), b.comparison_group()) {
        (Some((x, _)), Some((y, _))) if x != y => Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!(
                "operator does not exist: {} {op} {}",
                a.base_name(),
                b.base_name()
            ),
        )
        .with_hint(
            "No operator matches the given name and argument types. You might need to add explicit type casts.",
        )),
        _ => Ok(()),
    }
}

/// PostgreSQL's common type of `values` (`select_common_type`), as far as refusing goes:
/// the first typed value sets the type, a wider one of its group replaces it, and one
/// from another group is 42804 naming the type so far and the newcomer.
fn one_group<'a>(what: &str, values: impl Iterator<Item = &'a Scalar>) -> SqlResult<()> {
    match fold_common(values.filter_map(operand_type)) {
        (_, Some((so_far, newcomer))) => Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "{what} types {} and {} cannot be matched",
                so_far.base_name(),
                newcomer.base_name()
            ),
        )),
        (_, None) => Ok(()),
    }
}

/// The common type of `types` (None where none is typed): the widest of the first typed
/// one's group. Types of another group are left out here; [`refuse_mixed_types`] refuses
/// them in PostgreSQL's dialect, and T-SQL converts them at run time.
pub(crate) fn common_type(types: impl Iterator<Item = Option<SqlType>>) -> Option<SqlType> {
    fold_common(types.flatten()).0
}

/// The common type of `types` so far, and the first pair (common type so far, newcomer)
/// whose groups differ, if any.
fn fold_common(
    types: impl Iterator<Item = SqlType>,
) -> (Option<SqlType>, Option<(SqlType, SqlType)>) {
    let mut common: Option<SqlType> = None;
    let mut mismatch = None;
    for ty in types {
        let Some((group, rank)) = ty.comparison_group() else {
            common.get_or_insert(ty);
            continue;
        };
        match common.and_then(|c| c.comparison_group().map(|g| (c, g))) {
            None if common.is_none() => common = Some(ty),
            None => {}
            Some((so_far, (common_group, _))) if common_group != group => {
                mismatch.get_or_insert((so_far, ty));
            }
            Some((_, (_, common_rank))) if rank > common_rank => common = Some(ty),
            // Numerics of different typmods meet in numeric without one, as in PostgreSQL.
            Some((so_far, _)) if so_far.is_numeric() && ty.is_numeric() && so_far != ty => {
                common = Some(SqlType::NumericUnconstrained);
            }
            Some(_) => {}
        }
    }
    (common, mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use sqlparser::ast::BinaryOperator;

    fn column(ty: SqlType) -> Scalar {
        Scalar::Column(0, ty)
    }

    fn literal_text() -> Scalar {
        Scalar::Const(Value::Text("7".into()), None)
    }

    #[test]
    fn a_string_literal_meets_any_type_and_a_typed_string_no_number() {
        let eq = |l, r| Scalar::Binary(BinaryOperator::Eq, Box::new(l), Box::new(r));
        let fine = eq(column(SqlType::BigInt), literal_text());
        assert!(refuse_mixed_types(&fine).is_ok());
        let mixed = eq(column(SqlType::Text), column(SqlType::Int));
        let error = refuse_mixed_types(&mixed).expect_err("text = integer");
        assert_eq!(error.sqlstate, sqlstate::UNDEFINED_FUNCTION);
        assert_eq!(error.message, "operator does not exist: text = integer");
    }

    #[test]
    fn a_common_type_widens_within_its_group_and_names_the_widest_so_far() {
        let args = vec![
            column(SqlType::Int),
            column(SqlType::Double),
            column(SqlType::Varchar(Some(3))),
        ];
        let call = Scalar::Call(Func::Coalesce, args);
        let error = refuse_mixed_types(&call).expect_err("mixed");
        assert_eq!(error.sqlstate, sqlstate::DATATYPE_MISMATCH);
        assert_eq!(
            error.message,
            "COALESCE types double precision and character varying cannot be matched"
        );
    }
}
