//! CREATE TABLE onto the engine's designs (the README's table lists the mapping):
//!
//! | DDL | design |
//! |---|---|
//! | integer primary key `GENERATED {ALWAYS\|BY DEFAULT} AS IDENTITY`, or `bigserial` | identity |
//! | `uuid` primary key `DEFAULT gen_random_uuid()` / `DEFAULT uuidv7()` | guid / guid-v7 |
//! | `PARTITION BY HASH (id)` + `PARTITION OF … FOR VALUES WITH (MODULUS m, REMAINDER r)` | hash-partition |
//! | `bucket GENERATED ALWAYS AS (id % N) STORED` leading the primary key `(bucket, id)` | hash-prefix |
//! | integer primary key `DEFAULT nextval('s')` / `DEFAULT bit_reverse(nextval('s'))` | sequence / bit-reverse |
//! | no primary key | heap |
//! | any other primary key | user-key (keys are given by the INSERTs) |
//! | `WITH (design = 'identity-flow-control' \| 'session-range' \| 'memory' \| 'heap-nc-identity' \| 'hash-partition', …)` | that design |

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::{fold, object_name};
use crate::key_codec::KeyEncoding;
use crate::schema::{Column, KeyGen, Metadata, TableSchema};
use crate::types::{SqlType, serial_type};
use hotpage::{KeyKind, Layout, TableSpec};
use sqlparser::ast::{
    BinaryOperator, ColumnDef, ColumnOption, CreateTable, CreateTableOptions, Expr, GeneratedAs,
    SequenceOptions, SqlOption, TableConstraint, Value as AstValue,
};

/// What a CREATE TABLE makes in the engine.
#[derive(Clone, Debug)]
pub(crate) struct TablePlan {
    pub name: String,
    pub design: String,
    pub kind: KeyKind,
    pub layout: Layout,
    pub user_keys: bool,
    pub schema: TableSchema,
    /// `CREATE UNLOGGED TABLE`: the engine logs none of its rows, and a crash empties it.
    pub unlogged: bool,
    /// A sequence that becomes this table's key generator.
    pub adopts_sequence: Option<String>,
}

impl TablePlan {
    /// The engine's spec for this plan, with `schema` (this plan's schema, encoded).
    pub(crate) fn spec<'a>(&'a self, schema: &'a [u8]) -> TableSpec<'a> {
        TableSpec {
            name: &self.name,
            design: &self.design,
            kind: self.kind,
            layout: self.layout,
            user_keys: self.user_keys,
            schema,
            unlogged: self.unlogged,
        }
    }
}

/// One column as declared, before the key is known.
struct Declared {
    column: Column,
    identity: Option<Identity>,
    inline_primary_key: bool,
}

#[derive(Clone, Copy)]
struct Identity {
    always: bool,
    start: i64,
    step: i64,
}

/// Plans a CREATE TABLE (not a partitioned parent or a partition: see `session`).
pub(crate) fn plan_table(
    ct: &CreateTable,
    meta: &Metadata,
    data_files: u32,
    modulus: Option<u32>,
) -> SqlResult<TablePlan> {
    refuse_unsupported(ct)?;
    let name = object_name(&ct.name);
    let mut declared = Vec::with_capacity(ct.columns.len());
    for def in &ct.columns {
        if declared
            .iter()
            .any(|d: &Declared| d.column.name == fold(&def.name))
        {
            return Err(SqlError::new(
                sqlstate::DUPLICATE_COLUMN,
                format!("column \"{}\" specified more than once", fold(&def.name)),
            ));
        }
        declared.push(declare_column(def)?);
    }
    let key_names = primary_key(ct, &declared)?;
    let mut key = Vec::with_capacity(key_names.len());
    for key_name in &key_names {
        let index = declared
            .iter()
            .position(|d| &d.column.name == key_name)
            .ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_COLUMN,
                    format!("column \"{key_name}\" named in key does not exist"),
                )
            })?;
        declared[index].column.not_null = true;
        refuse_unkeyable(&declared[index].column)?;
        key.push(index);
    }
    let mut plan = choose_design(&name, &declared, &key, meta, data_files)?;
    // A stored generated column this layer cannot compute is refused here, by name.
    crate::table::generated_columns(&plan.schema)?;
    plan.unlogged = ct.unlogged;
    apply_options(&mut plan, &ct.table_options, data_files)?;
    if let Some(partitions) = modulus {
        require_integer_key(&plan, "hash partitions")?;
        plan.layout = Layout::HashPartitioned { partitions };
        plan.design = "hash-partition".into();
    }
    plan.layout
        .validate(plan.kind)
        .map_err(|e| SqlError::new(sqlstate::INVALID_PARAMETER_VALUE, e.to_string()))?;
    check_constant_defaults(&plan.schema)?;
    Ok(plan)
}

/// A constant DEFAULT must fit its column: `a int DEFAULT 'x'` fails at CREATE TABLE, as
/// in PostgreSQL, not at the first INSERT.
fn check_constant_defaults(schema: &TableSchema) -> SqlResult<()> {
    let empty: &[(String, SqlType)] = &[];
    for column in &schema.columns {
        let Some(text) = &column.default else {
            continue;
        };
        let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
            .try_with_sql(text)
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| SqlError::new(sqlstate::SYNTAX_ERROR, e.to_string()))?;
        if let crate::expr::Scalar::Const(value, _) = crate::expr::compile(&parsed, empty)? {
            value.coerce_to_column(&column.ty, &column.name)?;
        }
    }
    Ok(())
}

fn refuse_unsupported(ct: &CreateTable) -> SqlResult<()> {
    let what = if ct.temporary {
        Some("TEMPORARY tables")
    } else if ct.query.is_some() {
        Some("CREATE TABLE ... AS")
    } else if ct.like.is_some() || ct.clone.is_some() {
        Some("CREATE TABLE ... LIKE")
    } else if ct.inherits.is_some() {
        Some("INHERITS")
    } else {
        None
    };
    match what {
        Some(what) => Err(SqlError::unsupported(what)),
        None => Ok(()),
    }
}

fn declare_column(def: &ColumnDef) -> SqlResult<Declared> {
    let name = fold(&def.name);
    let ty = SqlType::from_sql(&def.data_type)?;
    let mut declared = Declared {
        column: Column {
            name,
            ty,
            not_null: false,
            default: None,
            generated: None,
        },
        identity: serial_type(&def.data_type).map(|_| Identity {
            always: false,
            start: 1,
            step: 1,
        }),
        inline_primary_key: false,
    };
    for option in &def.options {
        apply_column_option(&mut declared, &option.option)?;
    }
    if declared.identity.is_some() {
        if !ty.is_integer() {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!(
                    "identity column type must be smallint, integer, or bigint, not {}",
                    ty.name()
                ),
            ));
        }
        declared.column.not_null = true;
    }
    Ok(declared)
}

fn apply_column_option(declared: &mut Declared, option: &ColumnOption) -> SqlResult<()> {
    match option {
        ColumnOption::NotNull => declared.column.not_null = true,
        ColumnOption::Null => declared.column.not_null = false,
        ColumnOption::Default(expr) => declared.column.default = Some(expr.to_string()),
        ColumnOption::PrimaryKey(_) => declared.inline_primary_key = true,
        ColumnOption::Generated {
            generated_as: GeneratedAs::ExpStored,
            generation_expr: Some(expr),
            ..
        } => declared.column.generated = Some(expr.to_string()),
        ColumnOption::Generated {
            generated_as: generated_as @ (GeneratedAs::Always | GeneratedAs::ByDefault),
            sequence_options,
            generation_expr: None,
            ..
        } => {
            let (start, step) = identity_options(sequence_options.as_deref().unwrap_or(&[]))?;
            declared.identity = Some(Identity {
                always: *generated_as == GeneratedAs::Always,
                start,
                step,
            });
        }
        other => {
            return Err(SqlError::unsupported(format!("the column option {other}")));
        }
    }
    Ok(())
}

/// START WITH and INCREMENT BY of an identity (other options are refused).
fn identity_options(options: &[SequenceOptions]) -> SqlResult<(i64, i64)> {
    let (mut start, mut step) = (None, 1i64);
    for option in options {
        match option {
            SequenceOptions::StartWith(e, _) => start = Some(integer_literal(e)?),
            SequenceOptions::IncrementBy(e, _) => step = integer_literal(e)?,
            SequenceOptions::Cache(_) => {}
            other => {
                return Err(SqlError::unsupported(format!(
                    "the identity option {other}"
                )));
            }
        }
    }
    if step == 0 {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "INCREMENT must not be zero",
        ));
    }
    Ok((start.unwrap_or(if step > 0 { 1 } else { -1 }), step))
}

/// A (possibly negative) integer literal.
pub(crate) fn integer_literal(e: &Expr) -> SqlResult<i64> {
    let bad = || {
        SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("an integer constant was expected, not {e}"),
        )
    };
    match e {
        Expr::Value(v) => match &v.value {
            AstValue::Number(n, _) => n.parse().map_err(|_| bad()),
            _ => Err(bad()),
        },
        Expr::UnaryOp {
            op: sqlparser::ast::UnaryOperator::Minus,
            expr,
        } => integer_literal(expr).and_then(|v| v.checked_neg().ok_or_else(bad)),
        Expr::Nested(inner) => integer_literal(inner),
        _ => Err(bad()),
    }
}

/// A key column must encode in a fixed order: an unconstrained numeric's values each keep
/// their own scale, and `1.0` and `1.00` would be two keys where PostgreSQL sees one; so
/// would an interval's `1 mon` and `30 days`, equal as PostgreSQL compares them.
fn refuse_unkeyable(column: &Column) -> SqlResult<()> {
    if column.ty == SqlType::Interval {
        return Err(SqlError::unsupported(format!(
            "a primary key on column \"{}\" of type interval",
            column.name
        ))
        .with_hint(
            "key on another column: intervals of different parts can be equal (1 mon = 30 days)",
        ));
    }
    if column.ty == SqlType::NumericUnconstrained {
        return Err(SqlError::unsupported(format!(
            "a primary key on column \"{}\" of type numeric without a precision",
            column.name
        ))
        .with_hint("give the column numeric(p,s) with p ≤ 38"));
    }
    Ok(())
}

fn primary_key(ct: &CreateTable, declared: &[Declared]) -> SqlResult<Vec<String>> {
    let mut keys: Vec<Vec<String>> = declared
        .iter()
        .filter(|d| d.inline_primary_key)
        .map(|d| vec![d.column.name.clone()])
        .collect();
    for constraint in &ct.constraints {
        match constraint {
            TableConstraint::PrimaryKey(pk) => keys.push(
                pk.columns
                    .iter()
                    .map(|c| match &c.column.expr {
                        Expr::Identifier(ident) => Ok(fold(ident)),
                        other => Err(SqlError::unsupported(format!(
                            "a primary key on the expression {other}"
                        ))),
                    })
                    .collect::<SqlResult<_>>()?,
            ),
            other => {
                return Err(SqlError::unsupported(format!("the constraint {other}")));
            }
        }
    }
    if keys.len() > 1 {
        return Err(SqlError::new(
            sqlstate::INVALID_TABLE_DEFINITION,
            format!(
                "multiple primary keys for table \"{}\" are not allowed",
                object_name(&ct.name)
            ),
        ));
    }
    Ok(keys.pop().unwrap_or_default())
}

/// The design the columns and key call for, before WITH options.
fn choose_design(
    name: &str,
    declared: &[Declared],
    key: &[usize],
    meta: &Metadata,
    data_files: u32,
) -> SqlResult<TablePlan> {
    let columns: Vec<Column> = declared.iter().map(|d| d.column.clone()).collect();
    let natural = |k: &[usize]| k.iter().map(|&i| (i, KeyEncoding::Natural)).collect();
    let plan = |design: &str, kind, layout, user_keys, key, keygen| TablePlan {
        name: name.to_string(),
        design: design.to_string(),
        kind,
        layout,
        user_keys,
        schema: TableSchema {
            columns: columns.clone(),
            key,
            keygen,
        },
        unlogged: false,
        adopts_sequence: None,
    };
    refuse_misplaced_generators(declared, key)?;
    if key.is_empty() {
        return heap_plan(declared, data_files, plan);
    }
    if let [only] = key {
        let d = &declared[*only];
        if let Some(identity) = d.identity {
            let kind = KeyKind::Identity {
                start: identity.start,
                step: identity.step,
            };
            let keygen = KeyGen::Identity {
                always: identity.always,
            };
            return Ok(plan(
                "identity",
                kind,
                Layout::Clustered,
                !identity.always,
                natural(key),
                keygen,
            ));
        }
        if let Some(found) = default_generator(d, meta)? {
            let mut chosen = plan(
                found.design,
                found.kind,
                Layout::Clustered,
                true,
                natural(key),
                found.keygen,
            );
            chosen.adopts_sequence = found.sequence;
            return Ok(chosen);
        }
    }
    if let Some(found) = hash_prefix(declared, key)? {
        return Ok(found_hash_prefix(found, &plan));
    }
    let kind = KeyKind::Identity { start: 1, step: 1 };
    Ok(plan(
        "user-key",
        kind,
        Layout::Clustered,
        true,
        natural(key),
        KeyGen::Supplied,
    ))
}

type PlanFn<'a> =
    dyn Fn(&str, KeyKind, Layout, bool, Vec<(usize, KeyEncoding)>, KeyGen) -> TablePlan + 'a;

/// No primary key: a heap. An identity column there is the heap's row id.
fn heap_plan(
    declared: &[Declared],
    data_files: u32,
    plan: impl Fn(&str, KeyKind, Layout, bool, Vec<(usize, KeyEncoding)>, KeyGen) -> TablePlan,
) -> SqlResult<TablePlan> {
    let layout = Layout::Heap { chains: data_files };
    let identities: Vec<usize> = (0..declared.len())
        .filter(|&i| declared[i].identity.is_some())
        .collect();
    match identities.as_slice() {
        [] => Ok(plan(
            "heap",
            KeyKind::Identity { start: 1, step: 1 },
            layout,
            false,
            Vec::new(),
            KeyGen::RowId,
        )),
        [i] => {
            let identity = declared[*i].identity.unwrap_or(Identity {
                always: true,
                start: 1,
                step: 1,
            });
            Ok(plan(
                "heap",
                KeyKind::Identity {
                    start: identity.start,
                    step: identity.step,
                },
                layout,
                false,
                vec![(*i, KeyEncoding::Natural)],
                KeyGen::Identity { always: true },
            ))
        }
        _ => Err(SqlError::unsupported("more than one identity column")),
    }
}

/// Identity columns and generated defaults work only as (part of) the key.
fn refuse_misplaced_generators(declared: &[Declared], key: &[usize]) -> SqlResult<()> {
    for (i, d) in declared.iter().enumerate() {
        if d.identity.is_some() && !key.is_empty() && !key.contains(&i) {
            return Err(SqlError::unsupported(format!(
                "an identity column (\"{}\") that is not the primary key",
                d.column.name
            )));
        }
    }
    Ok(())
}

struct DefaultGenerator {
    design: &'static str,
    kind: KeyKind,
    keygen: KeyGen,
    sequence: Option<String>,
}

/// A key column's DEFAULT that is one of the engine's generators.
fn default_generator(d: &Declared, meta: &Metadata) -> SqlResult<Option<DefaultGenerator>> {
    let Some(default) = &d.column.default else {
        return Ok(None);
    };
    let text = default.to_lowercase().replace(' ', "");
    if text == "gen_random_uuid()" || text == "uuidv7()" {
        if d.column.ty != SqlType::Uuid {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!(
                    "column \"{}\" is of type {} but its default is a uuid",
                    d.column.name,
                    d.column.ty.name()
                ),
            ));
        }
        let v7 = text == "uuidv7()";
        return Ok(Some(DefaultGenerator {
            design: if v7 { "guid-v7" } else { "guid" },
            kind: if v7 { KeyKind::GuidV7 } else { KeyKind::GuidV4 },
            keygen: KeyGen::Uuid { v7 },
            sequence: None,
        }));
    }
    let (inner, bit_reverse) = match text
        .strip_prefix("bit_reverse(")
        .and_then(|t| t.strip_suffix(')'))
    {
        Some(inner) => (inner.to_string(), true),
        None => (text.clone(), false),
    };
    let Some(sequence) = inner
        .strip_prefix("nextval('")
        .and_then(|t| t.strip_suffix("')"))
        .map(|t| t.trim_end_matches("'::regclass").to_string())
    else {
        return Ok(None);
    };
    sequence_generator(d, meta, sequence, bit_reverse).map(Some)
}

/// `DEFAULT nextval('s')` or `DEFAULT bit_reverse(nextval('s'))` on a key column: the
/// sequence becomes the table's key generator.
fn sequence_generator(
    d: &Declared,
    meta: &Metadata,
    sequence: String,
    bit_reverse: bool,
) -> SqlResult<DefaultGenerator> {
    if !d.column.ty.is_integer() {
        return Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "column \"{}\" takes nextval() but is of type {}",
                d.column.name,
                d.column.ty.name()
            ),
        ));
    }
    let seq = meta
        .sequences
        .iter()
        .find(|s| s.name == sequence)
        .ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_TABLE,
                format!("relation \"{sequence}\" does not exist"),
            )
        })?;
    if !seq.owner.is_empty() {
        return Err(SqlError::unsupported(format!(
            "a second table on sequence \"{sequence}\" (table \"{}\" generates its keys from it)",
            seq.owner
        )));
    }
    if bit_reverse && d.column.ty != SqlType::BigInt {
        return Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "column \"{}\" takes bit_reverse(), a bigint, but is of type {}",
                d.column.name,
                d.column.ty.name()
            ),
        ));
    }
    let kind = if bit_reverse {
        // The engine's bit-reverse generator counts from 0: a sequence that already handed
        // out values would hand them out again.
        if seq.next != seq.start {
            return Err(SqlError::new(
                sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!(
                    "sequence \"{sequence}\" has been used already; a bit-reverse key needs a new sequence"
                ),
            ));
        }
        KeyKind::BitReverse { cache: seq.cache }
    } else {
        if seq.increment != 1 {
            return Err(SqlError::unsupported(
                "a key sequence whose INCREMENT is not 1",
            ));
        }
        // Values an unowned sequence handed out (and reserved) are never handed out again.
        KeyKind::Sequence {
            start: seq.next,
            cache: seq.cache,
        }
    };
    Ok(DefaultGenerator {
        design: if bit_reverse {
            "bit-reverse"
        } else {
            "sequence"
        },
        kind,
        keygen: KeyGen::Sequence {
            name: sequence.clone(),
            bit_reverse,
        },
        sequence: Some(sequence),
    })
}

struct HashPrefixFound {
    buckets: u16,
    always: bool,
    bucket: usize,
    id: usize,
    start: i64,
    step: i64,
}

/// `(bucket, id)` with `bucket GENERATED ALWAYS AS (id % N) STORED` and `id` an identity.
fn hash_prefix(declared: &[Declared], key: &[usize]) -> SqlResult<Option<HashPrefixFound>> {
    let [bucket, id] = key else {
        return Ok(None);
    };
    let (b, i) = (&declared[*bucket], &declared[*id]);
    let (Some(generated), Some(identity)) = (&b.column.generated, i.identity) else {
        return Ok(None);
    };
    let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(generated)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::new(sqlstate::SYNTAX_ERROR, e.to_string()))?;
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Modulo,
        right,
    } = strip_nested(&parsed)
    else {
        return Ok(None);
    };
    let refers_to_id =
        matches!(strip_nested(left), Expr::Identifier(ident) if fold(ident) == i.column.name);
    let buckets = integer_literal(right)?;
    if !refers_to_id || !b.column.ty.is_integer() {
        return Ok(None);
    }
    let buckets = u16::try_from(buckets)
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| {
            SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("a hash-prefix bucket count is 1 to 65535, not {buckets}"),
            )
        })?;
    if identity.start != 1 || identity.step != 1 {
        return Err(SqlError::unsupported(
            "a hash-prefix identity that does not start at 1 and count by 1",
        ));
    }
    Ok(Some(HashPrefixFound {
        buckets,
        always: identity.always,
        bucket: *bucket,
        id: *id,
        start: identity.start,
        step: identity.step,
    }))
}

fn found_hash_prefix(found: HashPrefixFound, plan: &PlanFn<'_>) -> TablePlan {
    debug_assert_eq!((found.start, found.step), (1, 1));
    plan(
        "hash-prefix",
        KeyKind::HashPrefix {
            buckets: found.buckets,
        },
        Layout::Clustered,
        !found.always,
        vec![
            (found.bucket, KeyEncoding::BucketU16),
            (found.id, KeyEncoding::Natural),
        ],
        KeyGen::HashPrefix {
            buckets: found.buckets,
            always: found.always,
        },
    )
}

pub(crate) fn strip_nested(e: &Expr) -> &Expr {
    match e {
        Expr::Nested(inner) => strip_nested(inner),
        other => other,
    }
}

fn require_integer_key(plan: &TablePlan, what: &str) -> SqlResult<()> {
    let integer_key =
        matches!(plan.schema.key.as_slice(), [(c, _)] if plan.schema.columns[*c].ty.is_integer());
    if integer_key {
        Ok(())
    } else {
        Err(SqlError::new(
            sqlstate::INVALID_TABLE_DEFINITION,
            format!("{what} need a one-column integer primary key"),
        ))
    }
}

/// `WITH (design = '…', sessions | partitions | block = n, files = n)`.
fn apply_options(
    plan: &mut TablePlan,
    options: &CreateTableOptions,
    data_files: u32,
) -> SqlResult<()> {
    let list: &[SqlOption] = match options {
        CreateTableOptions::None => return Ok(()),
        CreateTableOptions::With(list) => list,
        other => return Err(SqlError::unsupported(format!("the table options {other}"))),
    };
    let mut design = None;
    let mut numbers = Vec::new();
    for option in list {
        let SqlOption::KeyValue { key, value } = option else {
            return Err(SqlError::unsupported(format!("the table option {option}")));
        };
        let name = fold(key);
        match (name.as_str(), value) {
            ("design", Expr::Value(v)) => match &v.value {
                AstValue::SingleQuotedString(s) => design = Some(s.to_lowercase()),
                _ => return Err(bad_option(&name, value)),
            },
            // PostgreSQL's page fill for updates (pgbench -i asks for it). hotpage never
            // updates in place and fills its pages by its own rule (95 % rightmost
            // splits), so the value is checked, as PostgreSQL does, and not used.
            ("fillfactor", _) => {
                let fill = integer_literal(value)?;
                if !(10..=100).contains(&fill) {
                    return Err(SqlError::new(
                        sqlstate::INVALID_PARAMETER_VALUE,
                        format!("value {fill} out of bounds for option \"fillfactor\""),
                    )
                    .with_detail("Valid values are between \"10\" and \"100\"."));
                }
            }
            ("sessions" | "partitions" | "block" | "files" | "chains", _) => {
                let n =
                    u32::try_from(integer_literal(value)?).map_err(|_| bad_option(&name, value))?;
                numbers.push((name, n));
            }
            _ => {
                return Err(SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!("unrecognized parameter \"{name}\""),
                )
                .with_hint(
                    "hotpage takes design, sessions, partitions, block, files and fillfactor",
                ));
            }
        }
    }
    let number = |name: &str, default: u32| {
        numbers
            .iter()
            .find(|(n, _)| n == name || (name == "files" && n == "chains"))
            .map_or(default, |(_, v)| *v)
    };
    let Some(design) = design else {
        if !numbers.is_empty() {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "storage parameters other than design need design = '…'",
            ));
        }
        return Ok(());
    };
    apply_design(plan, &design, &number, data_files)
}

fn apply_design(
    plan: &mut TablePlan,
    design: &str,
    number: &dyn Fn(&str, u32) -> u32,
    data_files: u32,
) -> SqlResult<()> {
    let identity_only = |plan: &TablePlan, what: &str| match plan.schema.keygen {
        KeyGen::Identity { .. } if !plan.schema.key.is_empty() => Ok(()),
        _ => Err(SqlError::new(
            sqlstate::INVALID_TABLE_DEFINITION,
            format!("design '{what}' needs an identity primary key"),
        )),
    };
    match design {
        "identity" | "guid" | "guid-v7" | "hash-prefix" | "bit-reverse" | "sequence"
        | "user-key" => {
            if plan.design != design {
                return Err(SqlError::new(
                    sqlstate::INVALID_TABLE_DEFINITION,
                    format!(
                        "design '{design}' comes from the columns, and these columns make '{}'",
                        plan.design
                    ),
                )
                .with_hint("the README's table shows the DDL of each design"));
            }
        }
        "identity-flow-control" => {
            identity_only(plan, design)?;
            let default = match Layout::flow_control_default() {
                Layout::FlowControl { sessions } => sessions,
                _ => 1,
            };
            plan.layout = Layout::FlowControl {
                sessions: number("sessions", default),
            };
        }
        "session-range" => {
            identity_only(plan, design)?;
            plan.kind = KeyKind::SessionRange {
                block: number("block", 1000),
            };
        }
        "hash-partition" => {
            require_integer_key(plan, "hash partitions")?;
            plan.layout = Layout::HashPartitioned {
                partitions: number("partitions", hotpage::limits::PARTITIONS_DEFAULT),
            };
        }
        "memory" => plan.layout = Layout::Memory,
        "heap-nc-identity" => {
            identity_only(plan, design)?;
            plan.layout = Layout::HeapIndexed {
                chains: number("files", data_files),
            };
        }
        "heap" => {
            if !matches!(plan.schema.keygen, KeyGen::RowId | KeyGen::Identity { .. })
                || plan.user_keys
            {
                return Err(SqlError::new(
                    sqlstate::INVALID_TABLE_DEFINITION,
                    "design 'heap' is a table without a primary key",
                ));
            }
            plan.layout = Layout::Heap {
                chains: number("files", data_files),
            };
        }
        other => {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("unknown design '{other}'"),
            )
            .with_hint("designs: identity, identity-flow-control, guid, guid-v7, hash-prefix, hash-partition, bit-reverse, sequence, session-range, heap, heap-nc-identity, memory, user-key"));
        }
    }
    plan.design = design.to_string();
    Ok(())
}

fn bad_option(name: &str, value: &Expr) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("invalid value for parameter \"{name}\": \"{value}\""),
    )
}
