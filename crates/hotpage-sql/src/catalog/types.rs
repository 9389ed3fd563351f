//! The catalog evaluator's types and values: every [`SqlType`] plus PostgreSQL's catalog
//! types (`regclass`, `int2vector`, arrays, `pg_node_tree`, …), and [`Datum`], a value of
//! any of them.
//!
//! The `reg*` types hold an OID and print as a name (`'pg_class'::regclass` is 1259 and
//! prints `pg_class`); printing and reading them needs the catalog ([`Names`]).

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::types::SqlType;
use crate::value::Value;
use std::cmp::Ordering;

/// A static type of a catalog expression or column.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum CType {
    /// A type the SQL layer has anyway (integers, text, bool, oid, name, "char", …).
    Sql(SqlType),
    RegClass,
    RegType,
    RegNamespace,
    RegProc,
    RegRole,
    /// `xid`: a transaction id (always 0 here: hotpage's catalog rows have none).
    Xid,
    /// `pg_node_tree`: PostgreSQL's parsed-expression text. hotpage keeps SQL text there.
    NodeTree,
    /// `aclitem`: an access privilege (no row has any: hotpage has no privileges).
    AclItem,
    /// `anyarray` (statistics columns; never filled here).
    AnyArray,
    /// `int2vector` (`pg_index.indkey`): an array printed space-separated.
    Int2Vector,
    /// `oidvector` (`pg_index.indclass`): likewise.
    OidVector,
    /// A literal whose type the context decides (`'r'`, `NULL`); text if nothing does.
    Unknown,
    /// An array of the element type.
    Array(&'static CType),
}

pub(crate) const BOOL: CType = CType::Sql(SqlType::Bool);
pub(crate) const INT2: CType = CType::Sql(SqlType::SmallInt);
pub(crate) const INT4: CType = CType::Sql(SqlType::Int);
pub(crate) const INT8: CType = CType::Sql(SqlType::BigInt);
pub(crate) const FLOAT4: CType = CType::Sql(SqlType::Real);
pub(crate) const FLOAT8: CType = CType::Sql(SqlType::Double);
pub(crate) const TEXT: CType = CType::Sql(SqlType::Text);
pub(crate) const NAME: CType = CType::Sql(SqlType::Name);
pub(crate) const OID: CType = CType::Sql(SqlType::Oid);
pub(crate) const CHAR: CType = CType::Sql(SqlType::InternalChar);
pub(crate) const BYTEA: CType = CType::Sql(SqlType::Bytea);
pub(crate) const TIMESTAMPTZ: CType = CType::Sql(SqlType::TimestampTz);
/// information_schema's `character_data`.
pub(crate) const VARCHAR: CType = CType::Sql(SqlType::Varchar(None));
/// information_schema's `yes_or_no`.
pub(crate) const YES_OR_NO: CType = CType::Sql(SqlType::Varchar(Some(3)));

impl CType {
    /// The array type of this element type (PostgreSQL has no arrays of arrays: an array's
    /// array is itself).
    pub fn array_of(self) -> CType {
        use SqlType as S;
        match self {
            CType::Sql(S::Bool) => CType::Array(&BOOL),
            CType::Sql(S::SmallInt) => CType::Array(&INT2),
            CType::Sql(S::Int) => CType::Array(&INT4),
            CType::Sql(S::BigInt) => CType::Array(&INT8),
            CType::Sql(S::Real) => CType::Array(&FLOAT4),
            CType::Sql(S::Double) => CType::Array(&FLOAT8),
            CType::Sql(S::Name) => CType::Array(&NAME),
            CType::Sql(S::Oid) => CType::Array(&OID),
            CType::Sql(S::InternalChar) => CType::Array(&CHAR),
            CType::RegClass => CType::Array(&CType::RegClass),
            CType::RegType => CType::Array(&CType::RegType),
            CType::Int2Vector => CType::Array(&INT2),
            CType::OidVector => CType::Array(&OID),
            CType::AclItem => CType::Array(&CType::AclItem),
            array @ CType::Array(_) => array,
            _ => CType::Array(&TEXT),
        }
    }

    /// The element type of an array type (`int2vector` and `oidvector` are arrays too).
    pub fn element(self) -> Option<CType> {
        match self {
            CType::Array(elem) => Some(*elem),
            CType::Int2Vector => Some(INT2),
            CType::OidVector => Some(OID),
            _ => None,
        }
    }

    /// The type a result column of this type reports (the wire protocol's type): the
    /// `reg*`, vector, array and tree types go out as their text.
    pub fn output_type(self) -> SqlType {
        match self {
            CType::Sql(ty) => ty,
            _ => SqlType::Text,
        }
    }

    /// Whether values of the type are integers (an OID included).
    pub fn is_integer_like(self) -> bool {
        match self {
            CType::Sql(ty) => ty.is_integer() || ty == SqlType::Oid,
            CType::RegClass
            | CType::RegType
            | CType::RegNamespace
            | CType::RegRole
            | CType::Xid => true,
            _ => false,
        }
    }

    /// Whether values of the type are strings.
    pub fn is_text_like(self) -> bool {
        matches!(
            self,
            CType::Sql(
                SqlType::Text
                    | SqlType::Varchar(_)
                    | SqlType::Char(_)
                    | SqlType::Name
                    | SqlType::InternalChar
            ) | CType::NodeTree
                | CType::Unknown
                | CType::RegProc
        )
    }

    /// PostgreSQL's name of the type, for messages.
    pub fn name(self) -> String {
        match self {
            CType::Sql(ty) => ty.name(),
            CType::RegClass => "regclass".into(),
            CType::RegType => "regtype".into(),
            CType::RegNamespace => "regnamespace".into(),
            CType::RegProc => "regproc".into(),
            CType::RegRole => "regrole".into(),
            CType::Xid => "xid".into(),
            CType::NodeTree => "pg_node_tree".into(),
            CType::AclItem => "aclitem".into(),
            CType::AnyArray => "anyarray".into(),
            CType::Int2Vector => "int2vector".into(),
            CType::OidVector => "oidvector".into(),
            CType::Unknown => "unknown".into(),
            CType::Array(elem) => format!("{}[]", elem.name()),
        }
    }
}

/// One value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Datum {
    Null,
    Bool(bool),
    /// Every integer type, OIDs and the `reg*` types.
    Int(i64),
    Float(f64),
    /// Every string type, `"char"` and `pg_node_tree` included.
    Text(String),
    Array(Vec<Datum>),
    /// numeric, bytea, uuid, timestamps: kept as the SQL layer's value.
    Other(Value),
}

impl Datum {
    /// What the value weighs in memory: its own size and what it points to (for the
    /// query's memory bound, `crate::limits`).
    pub fn held_bytes(&self) -> usize {
        std::mem::size_of::<Datum>()
            + match self {
                Datum::Text(s) => s.len(),
                Datum::Array(items) => items.iter().map(Datum::held_bytes).sum(),
                Datum::Other(v) => crate::limits::value_heap_bytes(v),
                Datum::Null | Datum::Bool(_) | Datum::Int(_) | Datum::Float(_) => 0,
            }
    }

    /// The kind of value, in PostgreSQL's words, for an error about a value whose
    /// declared type is no longer known (a comparison found impossible at run time).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Datum::Null => "unknown",
            Datum::Bool(_) => "boolean",
            Datum::Int(_) => "integer",
            Datum::Float(_) => "double precision",
            Datum::Text(_) => "text",
            Datum::Array(_) => "array",
            Datum::Other(v) => v.type_name(),
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Datum::Null)
    }

    /// A SQL layer value as a datum.
    pub fn from_value(value: Value) -> Datum {
        match value {
            Value::Null => Datum::Null,
            Value::Bool(b) => Datum::Bool(b),
            Value::Int(i) => Datum::Int(i),
            Value::Float(f) => Datum::Float(f),
            Value::Text(s) => Datum::Text(s),
            other => Datum::Other(other),
        }
    }

    /// The datum as a SQL layer scalar (arrays are not scalars: `None`).
    pub fn to_value(&self) -> Option<Value> {
        Some(match self {
            Datum::Null => Value::Null,
            Datum::Bool(b) => Value::Bool(*b),
            Datum::Int(i) => Value::Int(*i),
            Datum::Float(f) => Value::Float(*f),
            Datum::Text(s) => Value::Text(s.clone()),
            Datum::Other(v) => v.clone(),
            Datum::Array(_) => return None,
        })
    }

    pub fn text(s: impl Into<String>) -> Datum {
        Datum::Text(s.into())
    }

    pub fn oid(oid: u32) -> Datum {
        Datum::Int(i64::from(oid))
    }

    /// A `"char"` value (a NUL char is the empty string, as PostgreSQL prints it).
    pub fn char(c: u8) -> Datum {
        if c == 0 {
            Datum::Text(String::new())
        } else {
            Datum::Text(char::from(c).to_string())
        }
    }

    /// The value as an `i64`, if it is an integer.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Datum::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// SQL comparison: `None` when either side is NULL or the two do not compare.
    pub fn sql_cmp(&self, other: &Datum) -> Option<Ordering> {
        match (self, other) {
            (Datum::Null, _) | (_, Datum::Null) => None,
            (Datum::Array(a), Datum::Array(b)) => {
                for (x, y) in a.iter().zip(b) {
                    match x.order_cmp(y) {
                        Ordering::Equal => {}
                        unequal => return Some(unequal),
                    }
                }
                Some(a.len().cmp(&b.len()))
            }
            (Datum::Array(_), _) | (_, Datum::Array(_)) => None,
            _ => self.to_value()?.sql_cmp(&other.to_value()?),
        }
    }

    /// A total order (NULLs last), for ORDER BY, DISTINCT and grouping.
    pub fn order_cmp(&self, other: &Datum) -> Ordering {
        match (self, other) {
            (Datum::Null, Datum::Null) => Ordering::Equal,
            (Datum::Null, _) => Ordering::Greater,
            (_, Datum::Null) => Ordering::Less,
            _ => self.sql_cmp(other).unwrap_or_else(|| {
                let rank = |d: &Datum| match d {
                    Datum::Array(_) => 1,
                    _ => 0,
                };
                rank(self).cmp(&rank(other))
            }),
        }
    }
}

/// What printing and reading the `reg*` types needs from the catalog.
pub(crate) trait Names {
    /// The relation's name as `regclass` prints it (qualified when not visible).
    fn relation_name(&self, oid: u32) -> Option<String>;
    /// The relation OID of a `regclass` input (`pg_class`, `pg_catalog.pg_class`).
    fn relation_oid(&self, name: &str) -> Option<u32>;
    fn type_name(&self, oid: u32) -> Option<String>;
    fn type_oid(&self, name: &str) -> Option<u32>;
    fn namespace_name(&self, oid: u32) -> Option<String>;
    fn namespace_oid(&self, name: &str) -> Option<u32>;
    fn role_name(&self, oid: u32) -> Option<String>;
    fn role_oid(&self, name: &str) -> Option<u32>;
}

/// The text PostgreSQL prints for a datum of type `ty` (`None` for NULL).
pub(crate) fn to_text(datum: &Datum, ty: CType, names: &dyn Names) -> Option<String> {
    let oid_name = |lookup: Option<String>, oid: i64| -> String {
        if oid == 0 {
            "-".to_string()
        } else {
            lookup.unwrap_or_else(|| oid.to_string())
        }
    };
    Some(match (datum, ty) {
        (Datum::Null, _) => return None,
        (Datum::Int(oid), CType::RegClass) => oid_name(names.relation_name(*oid as u32), *oid),
        (Datum::Int(oid), CType::RegType) => oid_name(names.type_name(*oid as u32), *oid),
        (Datum::Int(oid), CType::RegNamespace) => oid_name(names.namespace_name(*oid as u32), *oid),
        (Datum::Int(oid), CType::RegRole) => oid_name(names.role_name(*oid as u32), *oid),
        (Datum::Array(items), CType::Int2Vector | CType::OidVector) => items
            .iter()
            .filter_map(|d| to_text(d, INT8, names))
            .collect::<Vec<_>>()
            .join(" "),
        (Datum::Array(items), ty) => {
            let elem = ty.element().unwrap_or(TEXT);
            array_text(items, elem, names)
        }
        (Datum::Float(f), CType::Sql(sql)) => Value::Float(*f).to_pg_text(Some(&sql))?,
        (Datum::Other(v), CType::Sql(sql)) => v.to_pg_text(Some(&sql))?,
        (other, _) => other.to_value()?.to_pg_text(None)?,
    })
}

/// PostgreSQL's array output: `{a,"b c",NULL}`.
fn array_text(items: &[Datum], elem: CType, names: &dyn Names) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|item| match to_text(item, elem, names) {
            None => "NULL".to_string(),
            Some(text) => {
                let needs_quotes = text.is_empty()
                    || text.eq_ignore_ascii_case("null")
                    || text
                        .chars()
                        .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
                if needs_quotes {
                    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
                    format!("\"{escaped}\"")
                } else {
                    text
                }
            }
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// Reads PostgreSQL's array text (`{a,"b c",NULL}`) into its element strings.
fn parse_array_text(text: &str, target: CType) -> SqlResult<Vec<Option<String>>> {
    let bad = || {
        SqlError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!("malformed array literal: \"{text}\""),
        )
    };
    let trimmed = text.trim();
    let inner = trimmed
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or_else(bad)?;
    // int2vector and oidvector read space-separated numbers instead.
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    let _ = target;
    let mut items = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut item = String::new();
        let mut quoted = false;
        if chars.peek() == Some(&'"') {
            quoted = true;
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => item.push(chars.next().ok_or_else(bad)?),
                    Some(c) => item.push(c),
                    None => return Err(bad()),
                }
            }
        }
        while let Some(&c) = chars.peek() {
            if c == ',' {
                break;
            }
            chars.next();
            if quoted && !c.is_whitespace() {
                return Err(bad());
            }
            if matches!(c, '{' | '}' | '"') {
                return Err(bad());
            }
            item.push(c);
        }
        let item = if quoted {
            item
        } else {
            item.trim().to_string()
        };
        items.push((quoted || !item.eq_ignore_ascii_case("null")).then_some(item));
        if chars.next().is_none() {
            break;
        }
    }
    Ok(items)
}

/// 42846: no cast from one type to the other.
fn cannot_cast(from: CType, to: CType) -> SqlError {
    SqlError::new(
        sqlstate::CANNOT_COERCE,
        format!("cannot cast type {} to {}", from.name(), to.name()),
    )
}

/// A value cast to text (`None` for NULL): its output text, but for a boolean, whose
/// cast spells the word out where boolout writes `t` (so does `||`, which casts).
pub(crate) fn cast_to_text(datum: &Datum, ty: CType, names: &dyn Names) -> Option<String> {
    match datum {
        Datum::Bool(b) => Some(b.to_string()),
        _ => to_text(datum, ty, names),
    }
}

/// `datum::to` (explicit casts and the implicit coercion of an untyped literal).
pub(crate) fn cast(datum: Datum, from: CType, to: CType, names: &dyn Names) -> SqlResult<Datum> {
    if datum.is_null() || from == to {
        return Ok(datum);
    }
    if to.is_text_like() || matches!(to, CType::Sql(SqlType::Varchar(_) | SqlType::Char(_))) {
        // `name` and `"char"` read the output text (`true::name` is t).
        let mut text = match to {
            CType::Sql(SqlType::Name | SqlType::InternalChar) => to_text(&datum, from, names),
            _ => cast_to_text(&datum, from, names),
        }
        .unwrap_or_default();
        // char(n)'s padding is not part of its value: PostgreSQL's char-to-text cast
        // drops trailing spaces.
        if matches!(from, CType::Sql(SqlType::Char(_))) {
            text.truncate(text.trim_end_matches(' ').len());
        }
        return match to {
            CType::Sql(sql @ (SqlType::Name | SqlType::InternalChar)) => {
                Ok(Datum::from_value(Value::from_text(&text, &sql)?))
            }
            CType::Sql(sql @ (SqlType::Varchar(_) | SqlType::Char(_))) => Ok(Datum::from_value(
                Value::Text(text.chars().take(char_limit(sql)).collect()).coerce(&sql)?,
            )),
            _ => Ok(Datum::Text(text)),
        };
    }
    match datum {
        Datum::Text(text) => from_text(&text, to, names),
        Datum::Array(items) => match to.element() {
            Some(elem) => {
                let from_elem = from.element().unwrap_or(TEXT);
                let cast_items = items
                    .into_iter()
                    .map(|item| cast(item, from_elem, elem, names))
                    .collect::<SqlResult<_>>()?;
                Ok(Datum::Array(cast_items))
            }
            None => Err(cannot_cast(from, to)),
        },
        Datum::Int(i) if to.is_integer_like() => int_in_range(i, to),
        Datum::Float(f) if from == FLOAT4 && matches!(to, CType::Sql(sql) if sql.is_numeric()) => {
            let CType::Sql(sql) = to else {
                return Err(cannot_cast(from, to));
            };
            crate::value::real_for_numeric(f)
                .coerce(&sql)
                .map(Datum::from_value)
        }
        Datum::Int(i) if to == BOOL && from == INT4 => Ok(Datum::Bool(i != 0)),
        Datum::Bool(b) if to == INT4 => Ok(Datum::Int(i64::from(b))),
        other => match (other.to_value(), to) {
            (Some(value), CType::Sql(sql)) => value
                .coerce(&sql)
                .map(Datum::from_value)
                .map_err(|_| cannot_cast(from, to)),
            _ => Err(cannot_cast(from, to)),
        },
    }
}

fn char_limit(ty: SqlType) -> usize {
    match ty {
        SqlType::Varchar(Some(n)) | SqlType::Char(n) => n as usize,
        _ => usize::MAX,
    }
}

/// An integer into an integer-like type, range-checked.
pub(crate) fn int_in_range(i: i64, to: CType) -> SqlResult<Datum> {
    let (min, max, name) = match to {
        CType::Sql(SqlType::SmallInt) => (i64::from(i16::MIN), i64::from(i16::MAX), "smallint"),
        CType::Sql(SqlType::Int) => (i64::from(i32::MIN), i64::from(i32::MAX), "integer"),
        CType::Sql(SqlType::BigInt) => (i64::MIN, i64::MAX, "bigint"),
        _ => (0, i64::from(u32::MAX), "OID"),
    };
    if (min..=max).contains(&i) {
        Ok(Datum::Int(i))
    } else {
        Err(SqlError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("{name} out of range"),
        ))
    }
}

/// A type's input function: text read as a value of type `to`.
pub(crate) fn from_text(text: &str, to: CType, names: &dyn Names) -> SqlResult<Datum> {
    let reg = |found: Option<u32>, what: &str, state: &'static str| -> SqlResult<Datum> {
        if let Ok(oid) = text.trim().parse::<u32>() {
            return Ok(Datum::oid(oid));
        }
        if text.trim() == "-" {
            return Ok(Datum::oid(0));
        }
        found.map(Datum::oid).ok_or_else(|| {
            SqlError::new(state, format!("{what} \"{}\" does not exist", text.trim()))
        })
    };
    match to {
        CType::RegClass => reg(
            names.relation_oid(text),
            "relation",
            sqlstate::UNDEFINED_TABLE,
        ),
        CType::RegType => reg(names.type_oid(text), "type", sqlstate::UNDEFINED_OBJECT),
        CType::RegNamespace => reg(names.namespace_oid(text), "schema", "3F000"),
        CType::RegRole => reg(names.role_oid(text), "role", sqlstate::UNDEFINED_OBJECT),
        CType::RegProc | CType::NodeTree | CType::Unknown => Ok(Datum::Text(text.to_string())),
        CType::Xid => Value::from_text(text, &SqlType::Oid).map(Datum::from_value),
        CType::Array(elem) => array_from_text(text, to, *elem, names),
        CType::Int2Vector | CType::OidVector => text
            .split_whitespace()
            .map(|part| from_text(part, to.element().unwrap_or(INT8), names))
            .collect::<SqlResult<_>>()
            .map(Datum::Array),
        CType::AclItem | CType::AnyArray => Err(SqlError::unsupported(format!(
            "reading a value of type {}",
            to.name()
        ))),
        CType::Sql(sql) => Value::from_text(text, &sql).map(Datum::from_value),
    }
}

fn array_from_text(text: &str, to: CType, elem: CType, names: &dyn Names) -> SqlResult<Datum> {
    parse_array_text(text, to)?
        .into_iter()
        .map(|item| match item {
            None => Ok(Datum::Null),
            Some(item) => from_text(&item, elem, names),
        })
        .collect::<SqlResult<_>>()
        .map(Datum::Array)
}

/// The type a `CAST`/`::` names: the SQL layer's types, and the catalog's by name
/// (`regclass`, `pg_catalog.oid`, `"char"`, `int2[]`, …).
pub(crate) fn type_from_ast(data_type: &sqlparser::ast::DataType) -> SqlResult<CType> {
    use sqlparser::ast::{ArrayElemTypeDef, DataType};
    match data_type {
        DataType::Array(
            ArrayElemTypeDef::SquareBracket(inner, _) | ArrayElemTypeDef::AngleBracket(inner),
        ) => Ok(type_from_ast(inner)?.array_of()),
        DataType::Regclass => Ok(CType::RegClass),
        DataType::Custom(name, modifiers) if modifiers.is_empty() => {
            let last = name.0.last().and_then(|p| p.as_ident());
            let quoted = last.is_some_and(|i| i.quote_style.is_some());
            let word = last.map(|i| i.value.to_lowercase()).unwrap_or_default();
            catalog_type_named(&word, quoted)
                .map_or_else(|| SqlType::from_sql(data_type).map(CType::Sql), Ok)
        }
        other => SqlType::from_sql(other).map(CType::Sql),
    }
}

/// A type named by one word that [`SqlType::from_sql`] does not know.
fn catalog_type_named(word: &str, quoted: bool) -> Option<CType> {
    Some(match word {
        "char" if quoted => CHAR,
        "oid" => OID,
        "name" => NAME,
        "regclass" => CType::RegClass,
        "regtype" => CType::RegType,
        "regnamespace" => CType::RegNamespace,
        "regproc" | "regprocedure" => CType::RegProc,
        "regrole" => CType::RegRole,
        "xid" => CType::Xid,
        "pg_node_tree" => CType::NodeTree,
        "int2vector" => CType::Int2Vector,
        "oidvector" => CType::OidVector,
        "int2" | "smallint" => INT2,
        "int4" | "integer" | "int" => INT4,
        "int8" | "bigint" => INT8,
        "text" => TEXT,
        "bool" | "boolean" => BOOL,
        "float4" => FLOAT4,
        "float8" => FLOAT8,
        _ => return None,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Names for tests that look none up.
    pub(crate) struct NoNames;
    impl Names for NoNames {
        fn relation_name(&self, _: u32) -> Option<String> {
            None
        }
        fn relation_oid(&self, _: &str) -> Option<u32> {
            None
        }
        fn type_name(&self, _: u32) -> Option<String> {
            None
        }
        fn type_oid(&self, _: &str) -> Option<u32> {
            None
        }
        fn namespace_name(&self, _: u32) -> Option<String> {
            None
        }
        fn namespace_oid(&self, _: &str) -> Option<u32> {
            None
        }
        fn role_name(&self, _: u32) -> Option<String> {
            None
        }
        fn role_oid(&self, _: &str) -> Option<u32> {
            None
        }
    }

    #[test]
    fn arrays_print_and_read_as_postgresql_does() {
        let items = vec![
            Datum::text("a"),
            Datum::text("b c"),
            Datum::text(""),
            Datum::text("NULL"),
            Datum::Null,
            Datum::text("x\"y"),
        ];
        let text = to_text(&Datum::Array(items.clone()), TEXT.array_of(), &NoNames);
        assert_eq!(text.as_deref(), Some(r#"{a,"b c","","NULL",NULL,"x\"y"}"#));
        let back = from_text(text.as_deref().unwrap_or(""), TEXT.array_of(), &NoNames);
        assert_eq!(back, Ok(Datum::Array(items)));
        assert_eq!(
            from_text("{0}", OID.array_of(), &NoNames),
            Ok(Datum::Array(vec![Datum::Int(0)]))
        );
        assert!(from_text("{a", TEXT.array_of(), &NoNames).is_err());
    }

    #[test]
    fn vectors_print_space_separated_and_zero_oids_as_dash() {
        let v = Datum::Array(vec![Datum::Int(1), Datum::Int(2)]);
        assert_eq!(
            to_text(&v, CType::Int2Vector, &NoNames).as_deref(),
            Some("1 2")
        );
        assert_eq!(
            to_text(&Datum::Int(0), CType::RegClass, &NoNames).as_deref(),
            Some("-")
        );
        assert_eq!(
            to_text(&Datum::Int(99999), CType::RegClass, &NoNames).as_deref(),
            Some("99999")
        );
    }

    #[test]
    fn casts_check_ranges_and_names() {
        assert_eq!(
            cast(Datum::text("16385"), CType::Unknown, OID, &NoNames),
            Ok(Datum::Int(16385))
        );
        assert!(cast(Datum::Int(-1), INT8, OID, &NoNames).is_err());
        let missing = cast(Datum::text("nosuch"), TEXT, CType::RegClass, &NoNames);
        assert_eq!(
            missing.map_err(|e| e.sqlstate),
            Err(sqlstate::UNDEFINED_TABLE)
        );
        assert_eq!(
            cast(Datum::Int(7), INT4, TEXT, &NoNames),
            Ok(Datum::text("7"))
        );
    }
}
