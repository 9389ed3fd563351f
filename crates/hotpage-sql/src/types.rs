//! SQL column types: mapping from sqlparser's `DataType`, PostgreSQL's names and OIDs, and
//! the stable byte encoding the schema codec stores.

use sqlparser::ast::{CharLengthUnits, CharacterLength, DataType, ExactNumberInfo, TimezoneInfo};

use crate::error::{SqlError, SqlResult, sqlstate};

/// The largest numeric precision hotpage supports: a scaled value must fit an `i128`.
pub const NUMERIC_PRECISION_MAX: u8 = 38;

/// PostgreSQL's limit on the length of `varchar(n)` / `char(n)`.
pub const CHAR_LENGTH_MAX: u32 = 10_485_760;

/// The hint given when a numeric type is not one hotpage can store.
const NUMERIC_HINT: &str = "give numeric(p,s) with p ≤ 38";

/// A column's SQL type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SqlType {
    /// `smallint` (int2): 16-bit signed.
    SmallInt,
    /// `integer` (int4): 32-bit signed.
    Int,
    /// `bigint` (int8): 64-bit signed.
    BigInt,
    /// `boolean`.
    Bool,
    /// `text`: unbounded UTF-8.
    Text,
    /// `character varying(n)`, or unbounded without `n`.
    Varchar(Option<u32>),
    /// `character(n)`, `n >= 1`: stored padded with spaces to `n` characters.
    Char(u32),
    /// `uuid`.
    Uuid,
    /// `timestamp without time zone`.
    Timestamp,
    /// `timestamp with time zone` (stored as UTC).
    TimestampTz,
    /// `date`: a calendar day, without a time or zone.
    Date,
    /// `interval`: months, days and microseconds.
    Interval,
    /// `numeric(precision, scale)`: `1 <= precision <= 38`, `scale <= precision`.
    Numeric {
        /// Total significant decimal digits.
        precision: u8,
        /// Digits after the decimal point.
        scale: u8,
    },
    /// `numeric` without a precision or scale: each value keeps its own scale, as
    /// PostgreSQL's unconstrained numeric does, within the 38 digits hotpage holds.
    NumericUnconstrained,
    /// `real` (float4).
    Real,
    /// `double precision` (float8).
    Double,
    /// `bytea`.
    Bytea,
    /// `oid` (an object identifier, unsigned 32-bit): only in results of catalog queries
    /// (`pg_class.oid`); no table column has it.
    Oid,
    /// `name` (an identifier, up to 63 bytes): only in results of catalog queries.
    Name,
    /// `"char"` (one byte, PostgreSQL's internal type: `pg_class.relkind`): only in results
    /// of catalog queries.
    InternalChar,
}

/// See [`SqlType::comparison_group`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TypeGroup {
    Number,
    String,
    Boolean,
    /// date, timestamp and timestamptz: a date meets a timestamp as its midnight.
    DateTime,
    /// interval.
    Interval,
}

impl SqlType {
    /// The name without its length, precision or scale, as PostgreSQL's "operator does
    /// not exist" errors write a type (`character varying`, `numeric`).
    pub fn base_name(&self) -> String {
        match self {
            SqlType::Numeric { .. } | SqlType::NumericUnconstrained => "numeric".to_string(),
            SqlType::Varchar(_) => "character varying".to_string(),
            SqlType::Char(_) => "character".to_string(),
            other => other.name(),
        }
    }

    /// PostgreSQL's display name, as `format_type` (and psql's `\d`) shows it.
    pub fn name(&self) -> String {
        match self {
            SqlType::SmallInt => "smallint".to_string(),
            SqlType::Int => "integer".to_string(),
            SqlType::BigInt => "bigint".to_string(),
            SqlType::Bool => "boolean".to_string(),
            SqlType::Text => "text".to_string(),
            SqlType::Varchar(Some(n)) => format!("character varying({n})"),
            SqlType::Varchar(None) => "character varying".to_string(),
            SqlType::Char(n) => format!("character({n})"),
            SqlType::Uuid => "uuid".to_string(),
            SqlType::Timestamp => "timestamp without time zone".to_string(),
            SqlType::TimestampTz => "timestamp with time zone".to_string(),
            SqlType::Date => "date".to_string(),
            SqlType::Interval => "interval".to_string(),
            SqlType::Numeric { precision, scale } => format!("numeric({precision},{scale})"),
            SqlType::NumericUnconstrained => "numeric".to_string(),
            SqlType::Real => "real".to_string(),
            SqlType::Double => "double precision".to_string(),
            SqlType::Bytea => "bytea".to_string(),
            SqlType::Oid => "oid".to_string(),
            SqlType::Name => "name".to_string(),
            SqlType::InternalChar => "\"char\"".to_string(),
        }
    }

    /// The type's OID in PostgreSQL's `pg_type` (what the wire protocol sends).
    pub fn pg_oid(&self) -> u32 {
        match self {
            SqlType::SmallInt => 21,
            SqlType::Int => 23,
            SqlType::BigInt => 20,
            SqlType::Bool => 16,
            SqlType::Text => 25,
            SqlType::Varchar(_) => 1043,
            SqlType::Char(_) => 1042,
            SqlType::Uuid => 2950,
            SqlType::Timestamp => 1114,
            SqlType::TimestampTz => 1184,
            SqlType::Date => 1082,
            SqlType::Interval => 1186,
            SqlType::Numeric { .. } | SqlType::NumericUnconstrained => 1700,
            SqlType::Real => 700,
            SqlType::Double => 701,
            SqlType::Bytea => 17,
            SqlType::Oid => 26,
            SqlType::Name => 19,
            SqlType::InternalChar => 18,
        }
    }

    /// smallint, integer or bigint.
    pub fn is_integer(&self) -> bool {
        matches!(self, SqlType::SmallInt | SqlType::Int | SqlType::BigInt)
    }

    /// text, varchar or char.
    pub fn is_text_like(&self) -> bool {
        matches!(self, SqlType::Text | SqlType::Varchar(_) | SqlType::Char(_))
    }

    /// real or double precision.
    pub fn is_float(&self) -> bool {
        matches!(self, SqlType::Real | SqlType::Double)
    }

    /// Any number: the integers, numeric, real and double precision, and oid (PostgreSQL's
    /// numeric category; psql right-aligns it).
    pub fn is_numeric_family(&self) -> bool {
        self.is_integer() || self.is_float() || self.is_numeric() || matches!(self, SqlType::Oid)
    }

    /// The group PostgreSQL compares and unifies within, where it refuses to mix groups:
    /// numbers, strings, booleans, dates and timestamps (`1 = 'a'::text` is 42883, `coalesce(true, 1)` 42804).
    /// None for the others (oid and the catalog's types compare as its queries need); the
    /// number in each group ranks how wide a type is, as PostgreSQL's common type widens
    /// (integer with numeric is numeric, varchar with text is text).
    pub(crate) fn comparison_group(&self) -> Option<(TypeGroup, u8)> {
        Some(match self {
            SqlType::SmallInt => (TypeGroup::Number, 1),
            SqlType::Int => (TypeGroup::Number, 2),
            SqlType::BigInt => (TypeGroup::Number, 3),
            SqlType::Numeric { .. } | SqlType::NumericUnconstrained => (TypeGroup::Number, 4),
            SqlType::Real => (TypeGroup::Number, 5),
            SqlType::Double => (TypeGroup::Number, 6),
            SqlType::Char(_) | SqlType::Varchar(_) => (TypeGroup::String, 1),
            SqlType::Text => (TypeGroup::String, 2),
            SqlType::Bool => (TypeGroup::Boolean, 1),
            SqlType::Date => (TypeGroup::DateTime, 1),
            SqlType::Timestamp => (TypeGroup::DateTime, 2),
            SqlType::TimestampTz => (TypeGroup::DateTime, 3),
            SqlType::Interval => (TypeGroup::Interval, 1),
            _ => return None,
        })
    }

    /// numeric(p,s) or unconstrained numeric.
    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            SqlType::Numeric { .. } | SqlType::NumericUnconstrained
        )
    }

    /// timestamp or timestamptz.
    pub fn is_timestamp(&self) -> bool {
        matches!(self, SqlType::Timestamp | SqlType::TimestampTz)
    }

    /// The inclusive value range of an integer type; `None` for other types.
    pub fn integer_range(&self) -> Option<(i64, i64)> {
        match self {
            SqlType::SmallInt => Some((i64::from(i16::MIN), i64::from(i16::MAX))),
            SqlType::Int => Some((i64::from(i32::MIN), i64::from(i32::MAX))),
            SqlType::BigInt => Some((i64::MIN, i64::MAX)),
            _ => None,
        }
    }

    /// Maps a parsed column type (sqlparser 0.63, PostgreSQL dialect) onto a `SqlType`.
    ///
    /// `serial`, `bigserial` and `smallserial` map to their integer types here; the DDL layer
    /// asks [`serial_type`] to learn that the column was a serial one.
    pub fn from_sql(data_type: &DataType) -> SqlResult<SqlType> {
        match data_type {
            DataType::SmallInt(None) | DataType::Int2(None) => Ok(SqlType::SmallInt),
            DataType::Int(None) | DataType::Integer(None) | DataType::Int4(None) => {
                Ok(SqlType::Int)
            }
            DataType::BigInt(None) | DataType::Int8(None) => Ok(SqlType::BigInt),
            DataType::Boolean | DataType::Bool => Ok(SqlType::Bool),
            DataType::Text => Ok(SqlType::Text),
            DataType::Varchar(len)
            | DataType::CharacterVarying(len)
            | DataType::CharVarying(len) => match len {
                None => Ok(SqlType::Varchar(None)),
                Some(len) => Ok(SqlType::Varchar(Some(char_length(len, "varchar")?))),
            },
            DataType::Char(len) | DataType::Character(len) => match len {
                None => Ok(SqlType::Char(1)),
                Some(len) => Ok(SqlType::Char(char_length(len, "bpchar")?)),
            },
            DataType::Uuid => Ok(SqlType::Uuid),
            DataType::Timestamp(precision, tz) => timestamp_type(*precision, *tz),
            DataType::Date => Ok(SqlType::Date),
            DataType::Interval {
                fields: None,
                precision: None,
            } => Ok(SqlType::Interval),
            DataType::Interval { .. } => Err(SqlError::unsupported(format!(
                "type {data_type} (an interval's fields or precision)"
            ))
            .with_hint("declare it interval: hotpage keeps every field, to microseconds")),
            DataType::Numeric(info) | DataType::Decimal(info) | DataType::Dec(info) => {
                numeric_type(info)
            }
            DataType::Real | DataType::Float4 => Ok(SqlType::Real),
            DataType::DoublePrecision
            | DataType::Float8
            | DataType::Double(ExactNumberInfo::None) => Ok(SqlType::Double),
            DataType::Float(info) => float_type(info),
            DataType::Bytea => Ok(SqlType::Bytea),
            DataType::Custom(_, _) => custom_type(data_type),
            other => Err(SqlError::unsupported(format!("type {other}"))),
        }
    }

    /// Appends the type's stable encoding: a one-byte tag, then its parameters.
    ///
    /// | tag | type                     | parameters                      |
    /// |-----|--------------------------|---------------------------------|
    /// | 1   | smallint                 |                                 |
    /// | 2   | integer                  |                                 |
    /// | 3   | bigint                   |                                 |
    /// | 4   | boolean                  |                                 |
    /// | 5   | text                     |                                 |
    /// | 6   | character varying        |                                 |
    /// | 7   | character varying(n)     | n: u32 little-endian            |
    /// | 8   | character(n)             | n: u32 little-endian            |
    /// | 9   | uuid                     |                                 |
    /// | 10  | timestamp                |                                 |
    /// | 11  | timestamp with time zone |                                 |
    /// | 12  | numeric(p,s)             | p: u8, s: u8                    |
    /// | 13  | real                     |                                 |
    /// | 14  | double precision         |                                 |
    /// | 15  | bytea                    |                                 |
    /// | 16  | oid                      |                                 |
    /// | 17  | name                     |                                 |
    /// | 18  | "char"                   |                                 |
    /// | 19  | numeric                  |                                 |
    /// | 20  | date                     |                                 |
    /// | 21  | interval                 |                                 |
    ///
    /// Tags 16 to 18 are only catalog results' types: no table column has them, so
    /// [`SqlType::decode`] refuses their tags as corrupt schema bytes.
    ///
    /// The tags are stored in catalogs: never renumber them.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            SqlType::SmallInt => out.push(1),
            SqlType::Int => out.push(2),
            SqlType::BigInt => out.push(3),
            SqlType::Bool => out.push(4),
            SqlType::Text => out.push(5),
            SqlType::Varchar(None) => out.push(6),
            SqlType::Varchar(Some(n)) => {
                out.push(7);
                out.extend_from_slice(&n.to_le_bytes());
            }
            SqlType::Char(n) => {
                out.push(8);
                out.extend_from_slice(&n.to_le_bytes());
            }
            SqlType::Uuid => out.push(9),
            SqlType::Timestamp => out.push(10),
            SqlType::TimestampTz => out.push(11),
            SqlType::Numeric { precision, scale } => {
                out.extend_from_slice(&[12, *precision, *scale]);
            }
            SqlType::Real => out.push(13),
            SqlType::Double => out.push(14),
            SqlType::Bytea => out.push(15),
            SqlType::Oid => out.push(16),
            SqlType::Name => out.push(17),
            SqlType::InternalChar => out.push(18),
            SqlType::NumericUnconstrained => out.push(19),
            SqlType::Date => out.push(20),
            SqlType::Interval => out.push(21),
        }
    }

    /// Reads a type written by [`SqlType::encode`] at `*at`, advancing `*at` past it. Bad
    /// bytes (unknown tag, short input, out-of-range parameters) are `DATA_CORRUPTED`.
    pub fn decode(bytes: &[u8], at: &mut usize) -> SqlResult<SqlType> {
        let tag = take_u8(bytes, at)?;
        let ty = match tag {
            1 => SqlType::SmallInt,
            2 => SqlType::Int,
            3 => SqlType::BigInt,
            4 => SqlType::Bool,
            5 => SqlType::Text,
            6 => SqlType::Varchar(None),
            7 => SqlType::Varchar(Some(decode_length(bytes, at)?)),
            8 => SqlType::Char(decode_length(bytes, at)?),
            9 => SqlType::Uuid,
            10 => SqlType::Timestamp,
            11 => SqlType::TimestampTz,
            12 => {
                let precision = take_u8(bytes, at)?;
                let scale = take_u8(bytes, at)?;
                if precision == 0 || precision > NUMERIC_PRECISION_MAX || scale > precision {
                    return Err(SqlError::corrupted(format!(
                        "stored type numeric({precision},{scale}) is out of range"
                    )));
                }
                SqlType::Numeric { precision, scale }
            }
            13 => SqlType::Real,
            14 => SqlType::Double,
            15 => SqlType::Bytea,
            19 => SqlType::NumericUnconstrained,
            20 => SqlType::Date,
            21 => SqlType::Interval,
            other => {
                return Err(SqlError::corrupted(format!(
                    "unknown stored type tag {other}"
                )));
            }
        };
        Ok(ty)
    }
}

/// If `data_type` is `serial`, `bigserial` or `smallserial` (or their `serialN` aliases),
/// the integer type it stands for; the DDL layer makes such columns identity columns.
pub fn serial_type(data_type: &DataType) -> Option<SqlType> {
    let DataType::Custom(_, modifiers) = data_type else {
        return None;
    };
    if !modifiers.is_empty() {
        return None;
    }
    match custom_name(data_type)?.as_str() {
        "smallserial" | "serial2" => Some(SqlType::SmallInt),
        "serial" | "serial4" => Some(SqlType::Int),
        "bigserial" | "serial8" => Some(SqlType::BigInt),
        _ => None,
    }
}

/// The name of a single-part `DataType::Custom`, folded to lower case unless quoted (as
/// PostgreSQL folds identifiers).
fn custom_name(data_type: &DataType) -> Option<String> {
    let DataType::Custom(name, _) = data_type else {
        return None;
    };
    let [part] = name.0.as_slice() else {
        return None;
    };
    let ident = part.as_ident()?;
    Some(match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    })
}

/// Types sqlparser has no keyword for: the serials and `bpchar(n)`.
fn custom_type(data_type: &DataType) -> SqlResult<SqlType> {
    if let Some(ty) = serial_type(data_type) {
        return Ok(ty);
    }
    let unsupported = || SqlError::unsupported(format!("type {data_type}"));
    let DataType::Custom(_, modifiers) = data_type else {
        return Err(unsupported());
    };
    if custom_name(data_type).as_deref() != Some("bpchar") {
        return Err(unsupported());
    }
    match modifiers.as_slice() {
        [length] => {
            let length: u64 = length.trim().parse().map_err(|_| unsupported())?;
            let length = CharacterLength::IntegerLength { length, unit: None };
            Ok(SqlType::Char(char_length(&length, "bpchar")?))
        }
        // A bare `bpchar` is PostgreSQL's unbounded blank-padded type, which hotpage lacks.
        _ => Err(unsupported().with_hint("use character(n), varchar or text")),
    }
}

/// Checks a `varchar(n)` / `char(n)` length with PostgreSQL's messages.
fn char_length(length: &CharacterLength, type_name: &str) -> SqlResult<u32> {
    let CharacterLength::IntegerLength { length, unit } = length else {
        return Err(SqlError::unsupported(format!("{type_name}(max)")));
    };
    if matches!(unit, Some(CharLengthUnits::Octets)) {
        return Err(SqlError::unsupported("a length in octets"));
    }
    if *length < 1 {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("length for type {type_name} must be at least 1"),
        ));
    }
    u32::try_from(*length)
        .ok()
        .filter(|n| *n <= CHAR_LENGTH_MAX)
        .ok_or_else(|| {
            SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("length for type {type_name} cannot exceed {CHAR_LENGTH_MAX}"),
            )
        })
}

/// The result type of `l op r` (`op` one of `+ - * /`) where a side is a date, a
/// timestamp or an interval, as PostgreSQL's operators give it: `None` where neither side
/// is one (the numbers' rules apply), `Some(None)` where PostgreSQL has no such operator
/// (42883). A date with an interval is a timestamp; a date with an integer a date.
pub(crate) fn datetime_operator_type(
    op: char,
    l: Option<SqlType>,
    r: Option<SqlType>,
) -> Option<Option<SqlType>> {
    use SqlType::{Date, Interval, Timestamp, TimestampTz};
    let datetime =
        |t: Option<SqlType>| matches!(t, Some(Date | Timestamp | TimestampTz | Interval));
    if !datetime(l) && !datetime(r) {
        return None;
    }
    let instant = |t: Option<SqlType>| match t {
        Some(Date) => Some(Timestamp),
        Some(t @ (Timestamp | TimestampTz)) => Some(t),
        _ => None,
    };
    let integer = |t: Option<SqlType>| t.is_some_and(|t| t.is_integer());
    let number = |t: Option<SqlType>| t.is_some_and(|t| t.is_numeric_family() && t != SqlType::Oid);
    let interval = |t: Option<SqlType>| t == Some(Interval);
    Some(match op {
        '+' | '-' if l == Some(Date) && integer(r) => Some(Date),
        '+' if integer(l) && r == Some(Date) => Some(Date),
        '-' if l == Some(Date) && r == Some(Date) => Some(SqlType::Int),
        '+' | '-' if instant(l).is_some() && interval(r) => instant(l),
        '+' if interval(l) && instant(r).is_some() => instant(r),
        '+' | '-' if interval(l) && interval(r) => Some(Interval),
        // A timestamp minus a timestamp with time zone is taken in the zone's type.
        '-' if instant(l).is_some() && instant(r).is_some() => Some(Interval),
        '*' if interval(l) && number(r) || number(l) && interval(r) => Some(Interval),
        '/' if interval(l) && number(r) => Some(Interval),
        _ => None,
    })
}

/// `timestamp[(p)] [with[out] time zone]` and `timestamptz`. Only the default precision (6,
/// microseconds) is stored, so an explicit other precision is refused rather than ignored.
fn timestamp_type(precision: Option<u64>, tz: TimezoneInfo) -> SqlResult<SqlType> {
    if let Some(p) = precision.filter(|p| *p != 6) {
        return Err(SqlError::unsupported(format!("timestamp precision {p}"))
            .with_hint("omit the precision: timestamps keep microseconds"));
    }
    match tz {
        TimezoneInfo::None | TimezoneInfo::WithoutTimeZone => Ok(SqlType::Timestamp),
        TimezoneInfo::WithTimeZone | TimezoneInfo::Tz => Ok(SqlType::TimestampTz),
    }
}

/// `numeric(p[,s])` / `decimal(p[,s])` with `1 <= p <= 38`; `numeric` alone is
/// unconstrained.
fn numeric_type(info: &ExactNumberInfo) -> SqlResult<SqlType> {
    let (precision, scale) = match info {
        ExactNumberInfo::None => return Ok(SqlType::NumericUnconstrained),
        ExactNumberInfo::Precision(p) => (*p, 0),
        ExactNumberInfo::PrecisionAndScale(p, s) => (*p, *s),
    };
    if precision == 0 {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("NUMERIC precision {precision} must be between 1 and 1000"),
        ));
    }
    let Some(precision) = u8::try_from(precision)
        .ok()
        .filter(|p| *p <= NUMERIC_PRECISION_MAX)
    else {
        return Err(
            SqlError::unsupported(format!("numeric precision {precision}")).with_hint(NUMERIC_HINT),
        );
    };
    // PostgreSQL 15 accepts a negative scale or one above the precision; hotpage does not.
    let Some(scale) = u8::try_from(scale).ok().filter(|s| *s <= precision) else {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("NUMERIC scale {scale} must be between 0 and precision {precision}"),
        ));
    };
    Ok(SqlType::Numeric { precision, scale })
}

/// `float` is double precision; `float(p)` is real for `p <= 24` (PostgreSQL's rule).
fn float_type(info: &ExactNumberInfo) -> SqlResult<SqlType> {
    match info {
        ExactNumberInfo::None => Ok(SqlType::Double),
        ExactNumberInfo::Precision(0) => Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "precision for type float must be at least 1 bit",
        )),
        ExactNumberInfo::Precision(p) if *p <= 24 => Ok(SqlType::Real),
        ExactNumberInfo::Precision(p) if *p <= 53 => Ok(SqlType::Double),
        ExactNumberInfo::Precision(_) => Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "precision for type float must be less than 54 bits",
        )),
        ExactNumberInfo::PrecisionAndScale(_, _) => {
            Err(SqlError::unsupported("float with a scale"))
        }
    }
}

/// Reads one byte at `*at`.
fn take_u8(bytes: &[u8], at: &mut usize) -> SqlResult<u8> {
    let byte = bytes
        .get(*at)
        .copied()
        .ok_or_else(|| SqlError::corrupted("stored type is truncated".to_string()))?;
    *at += 1;
    Ok(byte)
}

/// Reads a `varchar(n)` / `char(n)` length: u32 little-endian, `1..=CHAR_LENGTH_MAX`.
fn decode_length(bytes: &[u8], at: &mut usize) -> SqlResult<u32> {
    let raw = at
        .checked_add(4)
        .and_then(|end| bytes.get(*at..end))
        .and_then(|slice| <[u8; 4]>::try_from(slice).ok())
        .ok_or_else(|| SqlError::corrupted("stored type is truncated".to_string()))?;
    *at += 4;
    let n = u32::from_le_bytes(raw);
    if n == 0 || n > CHAR_LENGTH_MAX {
        return Err(SqlError::corrupted(format!(
            "stored character length {n} is out of range"
        )));
    }
    Ok(n)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use sqlparser::ast::{ColumnDef, Statement};
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    /// Every `SqlType`, with valid parameters.
    pub(crate) fn any_sql_type() -> impl Strategy<Value = SqlType> {
        prop_oneof![
            Just(SqlType::SmallInt),
            Just(SqlType::Int),
            Just(SqlType::BigInt),
            Just(SqlType::Bool),
            Just(SqlType::Text),
            Just(SqlType::Varchar(None)),
            (1..=CHAR_LENGTH_MAX).prop_map(|n| SqlType::Varchar(Some(n))),
            (1..=CHAR_LENGTH_MAX).prop_map(SqlType::Char),
            Just(SqlType::Uuid),
            Just(SqlType::Timestamp),
            Just(SqlType::TimestampTz),
            Just(SqlType::Date),
            Just(SqlType::Interval),
            (1..=NUMERIC_PRECISION_MAX)
                .prop_flat_map(|p| (Just(p), 0..=p))
                .prop_map(|(precision, scale)| SqlType::Numeric { precision, scale }),
            Just(SqlType::NumericUnconstrained),
            Just(SqlType::Real),
            Just(SqlType::Double),
            Just(SqlType::Bytea),
        ]
    }

    /// The columns of one `CREATE TABLE`.
    fn columns(sql: &str) -> Vec<ColumnDef> {
        let statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap();
        match statements.into_iter().next() {
            Some(Statement::CreateTable(create)) => create.columns,
            other => panic!("not a CREATE TABLE: {other:?}"),
        }
    }

    fn map(type_text: &str) -> SqlResult<SqlType> {
        let cols = columns(&format!("CREATE TABLE t (a {type_text})"));
        SqlType::from_sql(&cols[0].data_type)
    }

    #[test]
    fn maps_every_column_of_a_create_table() {
        let sql = "CREATE TABLE t (a int2, b varchar(5), c smallint, d int, e integer, \
                   f int4, g bigint, h int8, i boolean, j bool, k text, \
                   l character varying(10), m character varying, n char(3), o character(4), \
                   p char, q bpchar(2), r uuid, s timestamp, t timestamp without time zone, \
                   u timestamptz, v timestamp with time zone, w numeric(10,2), x decimal(7), \
                   y real, z float4, aa double precision, ab float8, ac float, ad float(24), \
                   ae float(25), af bytea, ag serial, ah bigserial, ai smallserial, \
                   aj varchar, ak numeric(38,38), al SERIAL, am date)";
        let expected = [
            SqlType::SmallInt,
            SqlType::Varchar(Some(5)),
            SqlType::SmallInt,
            SqlType::Int,
            SqlType::Int,
            SqlType::Int,
            SqlType::BigInt,
            SqlType::BigInt,
            SqlType::Bool,
            SqlType::Bool,
            SqlType::Text,
            SqlType::Varchar(Some(10)),
            SqlType::Varchar(None),
            SqlType::Char(3),
            SqlType::Char(4),
            SqlType::Char(1),
            SqlType::Char(2),
            SqlType::Uuid,
            SqlType::Timestamp,
            SqlType::Timestamp,
            SqlType::TimestampTz,
            SqlType::TimestampTz,
            SqlType::Numeric {
                precision: 10,
                scale: 2,
            },
            SqlType::Numeric {
                precision: 7,
                scale: 0,
            },
            SqlType::Real,
            SqlType::Real,
            SqlType::Double,
            SqlType::Double,
            SqlType::Double,
            SqlType::Real,
            SqlType::Double,
            SqlType::Bytea,
            SqlType::Int,
            SqlType::BigInt,
            SqlType::SmallInt,
            SqlType::Varchar(None),
            SqlType::Numeric {
                precision: 38,
                scale: 38,
            },
            SqlType::Int,
            SqlType::Date,
        ];
        let cols = columns(sql);
        assert_eq!(cols.len(), expected.len());
        for (col, want) in cols.iter().zip(expected) {
            assert_eq!(
                SqlType::from_sql(&col.data_type),
                Ok(want),
                "column {}",
                col.name
            );
        }
        let serials: Vec<_> = cols.iter().map(|c| serial_type(&c.data_type)).collect();
        assert_eq!(
            serials[32..35],
            [
                Some(SqlType::Int),
                Some(SqlType::BigInt),
                Some(SqlType::SmallInt)
            ]
        );
        assert_eq!(serials[37], Some(SqlType::Int));
        assert!(serials[..32].iter().all(Option::is_none));
    }

    #[test]
    fn refuses_what_it_cannot_store() {
        assert_eq!(map("numeric").unwrap(), SqlType::NumericUnconstrained);
        assert_eq!(map("date").unwrap(), SqlType::Date);
        assert_eq!(map("decimal").unwrap(), SqlType::NumericUnconstrained);
        let err = map("numeric(39,2)").unwrap_err();
        assert_eq!(err.sqlstate, sqlstate::FEATURE_NOT_SUPPORTED);
        assert_eq!(err.hint.as_deref(), Some(NUMERIC_HINT));
        for text in [
            "json",
            "interval day",
            "interval(3)",
            "int[]",
            "money",
            "bpchar",
            "timestamp(3)",
        ] {
            let err = map(text).unwrap_err();
            assert_eq!(err.sqlstate, sqlstate::FEATURE_NOT_SUPPORTED, "{text}");
        }
        assert!(map("json").unwrap_err().message.contains("JSON"));
        for text in [
            "numeric(5,6)",
            "numeric(0)",
            "varchar(0)",
            "char(20000000)",
            "float(54)",
        ] {
            let err = map(text).unwrap_err();
            assert_eq!(err.sqlstate, sqlstate::INVALID_PARAMETER_VALUE, "{text}");
        }
    }

    #[test]
    fn names_and_oids_are_postgresql_s() {
        let cases = [
            (SqlType::SmallInt, "smallint", 21),
            (SqlType::Int, "integer", 23),
            (SqlType::BigInt, "bigint", 20),
            (SqlType::Bool, "boolean", 16),
            (SqlType::Text, "text", 25),
            (SqlType::Varchar(Some(10)), "character varying(10)", 1043),
            (SqlType::Varchar(None), "character varying", 1043),
            (SqlType::Char(3), "character(3)", 1042),
            (SqlType::Uuid, "uuid", 2950),
            (SqlType::Timestamp, "timestamp without time zone", 1114),
            (SqlType::TimestampTz, "timestamp with time zone", 1184),
            (SqlType::Date, "date", 1082),
            (SqlType::Interval, "interval", 1186),
            (
                SqlType::Numeric {
                    precision: 10,
                    scale: 2,
                },
                "numeric(10,2)",
                1700,
            ),
            (SqlType::Real, "real", 700),
            (SqlType::Double, "double precision", 701),
            (SqlType::Bytea, "bytea", 17),
        ];
        for (ty, name, oid) in cases {
            assert_eq!(ty.name(), name);
            assert_eq!(ty.pg_oid(), oid, "{name}");
        }
    }

    #[test]
    fn encoding_is_pinned() {
        let mut out = Vec::new();
        SqlType::Varchar(Some(5)).encode(&mut out);
        SqlType::Numeric {
            precision: 10,
            scale: 2,
        }
        .encode(&mut out);
        SqlType::Bytea.encode(&mut out);
        assert_eq!(out, [7, 5, 0, 0, 0, 12, 10, 2, 15]);
    }

    #[test]
    fn decode_refuses_bad_bytes() {
        let bad: [&[u8]; 8] = [
            &[],
            &[0],
            &[16],
            &[7, 1, 0],
            &[8, 0, 0, 0, 0],
            &[12, 39, 0],
            &[12, 5, 6],
            &[12, 5],
        ];
        for bytes in bad {
            let err = SqlType::decode(bytes, &mut 0).unwrap_err();
            assert_eq!(err.sqlstate, sqlstate::DATA_CORRUPTED, "{bytes:?}");
        }
    }

    proptest! {
        #[test]
        fn encode_decode_round_trip(types in proptest::collection::vec(any_sql_type(), 0..10)) {
            let mut out = Vec::new();
            for ty in &types {
                ty.encode(&mut out);
            }
            let mut at = 0;
            for ty in &types {
                prop_assert_eq!(SqlType::decode(&out, &mut at)?, *ty);
            }
            prop_assert_eq!(at, out.len());
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
            let mut at = 0;
            while at < bytes.len() && SqlType::decode(&bytes, &mut at).is_ok() {}
        }
    }
}
