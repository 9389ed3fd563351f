//! What `pg_get_expr`, `pg_get_indexdef` and `pg_get_constraintdef` print, in
//! PostgreSQL's words.
//!
//! hotpage keeps a DEFAULT or generated column's expression as SQL text (what the
//! CREATE TABLE said). PostgreSQL keeps the analysed expression and prints it back with its
//! types resolved: a literal is printed as the constant it became (`'x'::text` for a text
//! column's `DEFAULT 'x'`, `'-1'::integer`, `'5000000000'::bigint`), `nextval('s')` as
//! `nextval('s'::regclass)`, and an operator's argument that needed a cast shows it
//! (`id % 8::bigint` for a bigint `id`; the whole expression in parentheses when the column's
//! type then differs from the expression's). This module redoes that analysis for the
//! expressions hotpage accepts (literals, columns, function calls, arithmetic, casts);
//! anything else is printed as stored.
//!
//! Pretty (`pg_get_expr(…, true)`, what psql asks for) and plain (what information_schema
//! shows) differ as in PostgreSQL: plain output puts every operator expression in
//! parentheses and every shown cast's operand too (`(id % (8)::bigint)`), pretty output
//! only where needed (`id % 8::bigint`).

use super::builtin;
use crate::expr::{fold, object_name, plain_args};
use crate::types::SqlType;
use crate::value::Value;
use sqlparser::ast::{BinaryOperator, Expr, UnaryOperator, Value as AstValue};

/// An expression printed, with its type where known and whether it is an operator
/// expression (which gets parentheses as an argument).
struct Printed {
    text: String,
    ty: Option<SqlType>,
    operator: bool,
}

/// A column's DEFAULT or generation expression (SQL text as stored) as
/// `pg_get_expr(adbin, adrelid, pretty)` prints it; `columns` are the table's.
pub(crate) fn expression(
    text: &str,
    column_ty: SqlType,
    columns: &[(String, SqlType)],
    pretty: bool,
) -> String {
    Deparser { columns, pretty }.top_level(text, column_ty)
}

/// The table's columns and the output style.
struct Deparser<'a> {
    columns: &'a [(String, SqlType)],
    pretty: bool,
}

impl Deparser<'_> {
    fn top_level(&self, text: &str, column_ty: SqlType) -> String {
        let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
            .try_with_sql(text)
            .and_then(|mut p| p.parse_expr());
        let Ok(parsed) = parsed else {
            return text.to_string();
        };
        // An untyped literal takes the column's type; a typed expression is assigned through
        // an implicit cast, which is not printed, but parenthesises an operator expression.
        let printed = match strip(&parsed) {
            Expr::Value(v) if is_string(&v.value) => string_const(&v.value, column_ty),
            other => self.expr(other),
        };
        match printed {
            Some(p)
                if self.pretty && p.operator && p.ty.is_some_and(|t| !same_type(t, column_ty)) =>
            {
                format!("({})", p.text)
            }
            Some(p) => p.text,
            None => text.to_string(),
        }
    }

    fn expr(&self, e: &Expr) -> Option<Printed> {
        match e {
            Expr::Nested(inner) => self.expr(inner),
            Expr::Identifier(ident) => {
                let name = fold(ident);
                let ty = self
                    .columns
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, t)| *t)?;
                Some(Printed {
                    text: quote_ident(&name),
                    ty: Some(ty),
                    operator: false,
                })
            }
            Expr::Value(v) => literal(&v.value),
            Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr: inner,
            } => match strip(inner) {
                Expr::Value(v) => match &v.value {
                    AstValue::Number(n, _) => number(&format!("-{n}")),
                    _ => None,
                },
                _ => None,
            },
            Expr::BinaryOp { left, op, right } => self.binary(left, op, right),
            Expr::Function(f) => self.function(f),
            Expr::Cast {
                expr: inner,
                data_type,
                ..
            } => {
                let ty = SqlType::from_sql(data_type).ok()?;
                let inner = match strip(inner) {
                    Expr::Value(v) if is_string(&v.value) => return string_const(&v.value, ty),
                    other => self.expr(other)?,
                };
                let (oid, typmod) = builtin::type_oid_and_typmod(ty);
                Some(Printed {
                    text: self.cast_text(&inner, &builtin::format_type(oid, Some(typmod))),
                    ty: Some(ty),
                    operator: false,
                })
            }
            _ => None,
        }
    }

    /// An operand: an operator expression in parentheses (plain output has them already).
    fn operand(&self, p: &Printed) -> String {
        if p.operator && self.pretty {
            format!("({})", p.text)
        } else {
            p.text.clone()
        }
    }

    /// `x::type`; plain output puts the operand in parentheses, `(x)::type`.
    fn cast_text(&self, p: &Printed, type_name: &str) -> String {
        if self.pretty {
            format!("{}::{type_name}", self.operand(p))
        } else {
            format!("({})::{type_name}", p.text)
        }
    }

    /// The type an integer or numeric operator computes in, and how each operand reaches it.
    fn binary(&self, left: &Expr, op: &BinaryOperator, right: &Expr) -> Option<Printed> {
        let symbol = match op {
            BinaryOperator::Plus => "+",
            BinaryOperator::Minus => "-",
            BinaryOperator::Multiply => "*",
            BinaryOperator::Divide => "/",
            BinaryOperator::Modulo => "%",
            BinaryOperator::StringConcat => "||",
            _ => return None,
        };
        let (l, r) = (self.expr(left)?, self.expr(right)?);
        let wrap = |text: String| {
            if self.pretty {
                text
            } else {
                format!("({text})")
            }
        };
        if symbol == "||" {
            return Some(Printed {
                text: wrap(format!("{} || {}", self.operand(&l), self.operand(&r))),
                ty: Some(SqlType::Text),
                operator: true,
            });
        }
        let (lt, rt) = (l.ty?, r.ty?);
        let rank = |t: SqlType| match t {
            SqlType::SmallInt => Some(1),
            SqlType::Int => Some(2),
            SqlType::BigInt => Some(3),
            SqlType::Numeric { .. } | SqlType::NumericUnconstrained => Some(4),
            SqlType::Real | SqlType::Double => Some(5),
            _ => None,
        };
        let (lr, rr) = (rank(lt)?, rank(rt)?);
        let wide = if lr >= rr { lt } else { rt };
        // PostgreSQL has cross-type integer + - * /, but % (and numeric or float operators) needs
        // both operands in one type: the narrower one is cast, and the cast is printed.
        let cross_type_ok = symbol != "%" && lr <= 3 && rr <= 3;
        let show = |p: &Printed, rank_of: i32| -> String {
            if cross_type_ok || rank_of == lr.max(rr) {
                self.operand(p)
            } else {
                let (oid, _) = builtin::type_oid_and_typmod(wide);
                self.cast_text(p, &builtin::format_type(oid, Some(-1)))
            }
        };
        Some(Printed {
            text: wrap(format!("{} {symbol} {}", show(&l, lr), show(&r, rr))),
            ty: Some(wide),
            operator: true,
        })
    }

    fn function(&self, f: &sqlparser::ast::Function) -> Option<Printed> {
        let name = object_name(&f.name);
        let args = plain_args(f).ok()?;
        if args.is_empty()
            && matches!(f.args, sqlparser::ast::FunctionArguments::None)
            && matches!(
                name.as_str(),
                "current_timestamp" | "localtimestamp" | "current_user" | "session_user"
            )
        {
            return Some(Printed {
                text: name.to_uppercase(),
                ty: Some(SqlType::TimestampTz),
                operator: false,
            });
        }
        if name == "current_date" && matches!(f.args, sqlparser::ast::FunctionArguments::None) {
            return Some(Printed {
                text: "CURRENT_DATE".to_string(),
                ty: Some(SqlType::Date),
                operator: false,
            });
        }
        let printed_args = args
            .iter()
            .map(|a| match (name.as_str(), strip(a)) {
                ("nextval" | "currval", Expr::Value(v)) if is_string(&v.value) => {
                    let AstValue::SingleQuotedString(s) = &v.value else {
                        return None;
                    };
                    Some(format!("'{}'::regclass", s.replace('\'', "''")))
                }
                (_, other) => self.expr(other).map(|p| p.text),
            })
            .collect::<Option<Vec<_>>>()?;
        let ty = match name.as_str() {
            "now" | "transaction_timestamp" | "statement_timestamp" | "clock_timestamp" => {
                Some(SqlType::TimestampTz)
            }
            "gen_random_uuid" | "uuidv7" | "uuid_generate_v4" | "uuid_generate_v7" => {
                Some(SqlType::Uuid)
            }
            "nextval" | "currval" | "lastval" | "bit_reverse" => Some(SqlType::BigInt),
            _ => None,
        };
        Some(Printed {
            text: format!("{name}({})", printed_args.join(", ")),
            ty,
            operator: false,
        })
    }
}

fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Nested(inner) => strip(inner),
        other => other,
    }
}

fn is_string(v: &AstValue) -> bool {
    matches!(
        v,
        AstValue::SingleQuotedString(_) | AstValue::EscapedStringLiteral(_)
    )
}

/// Whether two column types are one PostgreSQL type (modifiers aside).
fn same_type(a: SqlType, b: SqlType) -> bool {
    a.pg_oid() == b.pg_oid()
}

fn literal(v: &AstValue) -> Option<Printed> {
    match v {
        AstValue::Number(n, _) => number(n),
        AstValue::Boolean(b) => Some(Printed {
            text: b.to_string(),
            ty: Some(SqlType::Bool),
            operator: false,
        }),
        AstValue::Null => Some(Printed {
            text: "NULL".into(),
            ty: None,
            operator: false,
        }),
        // An untyped string in an expression is text to PostgreSQL's printer.
        other if is_string(other) => string_const(other, SqlType::Text),
        _ => None,
    }
}

/// A numeric literal: an integer is int4 (int8 past its range), a decimal numeric.
fn number(text: &str) -> Option<Printed> {
    if let Ok(v) = text.parse::<i64>() {
        return Some(if i32::try_from(v).is_ok() {
            Printed {
                text: if v < 0 {
                    format!("'{v}'::integer")
                } else {
                    v.to_string()
                },
                ty: Some(SqlType::Int),
                operator: false,
            }
        } else {
            Printed {
                text: format!("'{v}'::bigint"),
                ty: Some(SqlType::BigInt),
                operator: false,
            }
        });
    }
    let plain =
        text.bytes().next().is_some_and(|b| b.is_ascii_digit()) && text.contains(['.', 'e', 'E']);
    Some(Printed {
        text: if plain {
            text.to_string()
        } else {
            format!("'{text}'::numeric")
        },
        ty: Some(SqlType::Numeric {
            precision: 38,
            scale: 0,
        }),
        operator: false,
    })
}

/// A string literal made a constant of type `ty`, printed as PostgreSQL prints constants.
fn string_const(v: &AstValue, ty: SqlType) -> Option<Printed> {
    let (AstValue::SingleQuotedString(s) | AstValue::EscapedStringLiteral(s)) = v else {
        return None;
    };
    // A string made a text-like constant keeps its characters: the column's length is
    // applied by a separate (unprinted) cast.
    let value = if ty.is_text_like() {
        Value::Text(s.clone())
    } else {
        Value::from_text(s, &ty).ok()?
    };
    let text = value.to_pg_text(Some(&ty))?;
    let printed = match ty {
        SqlType::Bool => text_of_bool(&value),
        SqlType::Int if !text.starts_with('-') => text,
        ty if ty.is_numeric()
            && text.bytes().next().is_some_and(|b| b.is_ascii_digit())
            && text.contains('.') =>
        {
            text
        }
        _ => {
            let (oid, _) = builtin::type_oid_and_typmod(ty);
            format!(
                "'{}'::{}",
                text.replace('\'', "''"),
                builtin::format_type(oid, Some(-1))
            )
        }
    };
    Some(Printed {
        text: printed,
        ty: Some(ty),
        operator: false,
    })
}

fn text_of_bool(v: &Value) -> String {
    match v {
        Value::Bool(true) => "true".into(),
        _ => "false".into(),
    }
}

/// `quote_ident`: a name as SQL must write it (quoted unless it is lower case letters,
/// digits and underscores, not starting with a digit, and not a reserved word).
pub(crate) fn quote_ident(name: &str) -> String {
    let plain = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !RESERVED.contains(&name);
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// PostgreSQL's keywords that `quote_ident` quotes (reserved, type/function-name and
/// column-name keywords).
const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "both",
    "case",
    "cast",
    "char",
    "character",
    "check",
    "coalesce",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "dec",
    "decimal",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "exists",
    "extract",
    "false",
    "fetch",
    "float",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "greatest",
    "group",
    "grouping",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "inout",
    "int",
    "integer",
    "intersect",
    "interval",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "least",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "not",
    "notnull",
    "null",
    "nullif",
    "numeric",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "placing",
    "position",
    "precision",
    "primary",
    "real",
    "references",
    "returning",
    "right",
    "row",
    "select",
    "session_user",
    "setof",
    "similar",
    "smallint",
    "some",
    "substring",
    "symmetric",
    "system_user",
    "table",
    "tablesample",
    "then",
    "time",
    "timestamp",
    "to",
    "trailing",
    "treat",
    "trim",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "values",
    "varchar",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
    "xmlattributes",
    "xmlconcat",
    "xmlelement",
    "xmlexists",
    "xmlforest",
    "xmlnamespaces",
    "xmlparse",
    "xmlpi",
    "xmlroot",
    "xmlserialize",
    "xmltable",
];

/// `pg_get_indexdef(index)`: the CREATE INDEX that makes a primary-key index.
pub(crate) fn index_def(index: &str, table: &str, columns: &[String]) -> String {
    format!(
        "CREATE UNIQUE INDEX {} ON {} USING btree ({})",
        quote_ident(index),
        table,
        quoted_list(columns)
    )
}

/// `pg_get_constraintdef(constraint)` of a primary key.
pub(crate) fn primary_key_def(columns: &[String]) -> String {
    format!("PRIMARY KEY ({})", quoted_list(columns))
}

fn quoted_list(columns: &[String]) -> String {
    columns
        .iter()
        .map(|c| quote_ident(c))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each case is what PostgreSQL 15 printed for the same DEFAULT (\d of a table made
    /// with every one of them).
    #[test]
    fn defaults_print_as_postgresql_prints_them() {
        let cases: &[(&str, SqlType, &str)] = &[
            ("0", SqlType::BigInt, "0"),
            ("-5", SqlType::BigInt, "'-5'::integer"),
            ("-1", SqlType::Int, "'-1'::integer"),
            ("7", SqlType::Int, "7"),
            (
                "1.5",
                SqlType::Numeric {
                    precision: 10,
                    scale: 2,
                },
                "1.5",
            ),
            (
                "2",
                SqlType::Numeric {
                    precision: 10,
                    scale: 2,
                },
                "2",
            ),
            ("'x'", SqlType::Text, "'x'::text"),
            ("'ab'", SqlType::Varchar(Some(5)), "'ab'::character varying"),
            ("'q'", SqlType::Char(3), "'q'::bpchar"),
            ("false", SqlType::Bool, "false"),
            ("1.5", SqlType::Double, "1.5"),
            ("now()", SqlType::Timestamp, "now()"),
            (
                "CURRENT_TIMESTAMP",
                SqlType::TimestampTz,
                "CURRENT_TIMESTAMP",
            ),
            ("gen_random_uuid()", SqlType::Uuid, "gen_random_uuid()"),
            ("'it''s'", SqlType::Text, "'it''s'::text"),
            ("-1.5", SqlType::Double, "'-1.5'::numeric"),
            ("5000000000", SqlType::BigInt, "'5000000000'::bigint"),
            ("2 + 3", SqlType::Int, "2 + 3"),
            (
                "nextval('ticket_seq')",
                SqlType::BigInt,
                "nextval('ticket_seq'::regclass)",
            ),
        ];
        for (text, ty, want) in cases {
            assert_eq!(
                expression(text, *ty, &[], true),
                *want,
                "DEFAULT {text} on {ty:?}"
            );
        }
        // information_schema's (plain) form differs for operators only.
        assert_eq!(expression("2 + 3", SqlType::Int, &[], false), "(2 + 3)");
        assert_eq!(
            expression("nextval('s')", SqlType::BigInt, &[], false),
            "nextval('s'::regclass)"
        );
    }

    #[test]
    fn generated_columns_show_the_casts_postgresql_adds() {
        let columns = [
            ("id".to_string(), SqlType::BigInt),
            ("d".to_string(), SqlType::Int),
            ("e".to_string(), SqlType::SmallInt),
        ];
        // (expression, column type, pretty, plain): PostgreSQL 15's pg_get_expr with and
        // without its pretty flag (\d and information_schema.columns).
        let cases: &[(&str, SqlType, &str, &str)] = &[
            (
                "id % 8",
                SqlType::SmallInt,
                "(id % 8::bigint)",
                "(id % (8)::bigint)",
            ),
            (
                "id % 4",
                SqlType::BigInt,
                "id % 4::bigint",
                "(id % (4)::bigint)",
            ),
            ("d % 4", SqlType::Int, "d % 4", "(d % 4)"),
            (
                "e % 4",
                SqlType::SmallInt,
                "(e::integer % 4)",
                "((e)::integer % 4)",
            ),
        ];
        for (text, ty, pretty, plain) in cases {
            assert_eq!(
                expression(text, *ty, &columns, true),
                *pretty,
                "{text} as {ty:?}"
            );
            assert_eq!(
                expression(text, *ty, &columns, false),
                *plain,
                "{text} as {ty:?}"
            );
        }
    }

    #[test]
    fn identifiers_are_quoted_when_they_must_be() {
        assert_eq!(quote_ident("abc"), "abc");
        assert_eq!(quote_ident("Abc"), "\"Abc\"");
        assert_eq!(quote_ident("select"), "\"select\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_ident("1a"), "\"1a\"");
    }
}
