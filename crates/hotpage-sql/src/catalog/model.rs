//! The catalog's objects, read from the database once per query: every relation (the
//! catalog's own, the system views, the user's tables with their primary-key indexes and
//! identity sequences, `CREATE SEQUENCE` sequences), with its columns, and the indexes,
//! sequences and dependencies between them. The catalog relations' rows (`rows.rs`) are
//! made from this.
//!
//! OIDs: PostgreSQL's own for built-in objects; user objects get theirs from the engine's
//! table id, which never changes and is never reused (a dropped table keeps its id):
//! table `16400 + 8·id`, its primary-key index `+1`, its identity sequence `+2`, its
//! primary-key constraint `+3`. Objects kept in the database's metadata (sequences,
//! partitioned tables waiting for partitions) have no id there and are numbered by their
//! place in it from `USER_METADATA_OIDS`.

use super::builtin::{self, BTREE_AM, HEAP_AM, INFORMATION_SCHEMA, PG_CATALOG, PUBLIC};
use super::types::{CType, INT8};
use super::{RelationKind, Schema, defs};
use crate::ddl;
use crate::error::SqlResult;
use crate::schema::{KeyGen, TableSchema};
use crate::session::SqlDatabase;
use crate::types::SqlType;
use hotpage::{KeyKind, Layout};
use sqlparser::ast::Statement;

/// The first OID of objects made from engine tables.
const USER_TABLE_OIDS: u32 = 16400;
/// The first OID of objects kept in the database's metadata.
const USER_METADATA_OIDS: u32 = 1_000_000_000;
/// The first OID of hotpage's system views (other than pg_stat_activity, PostgreSQL's).
const SYSTEM_VIEW_OIDS: u32 = 14000;
/// PostgreSQL's OID of pg_stat_activity.
const PG_STAT_ACTIVITY: u32 = 12222;

/// One column of a relation.
#[derive(Clone, Debug)]
pub(crate) struct Attr {
    pub name: String,
    pub type_oid: u32,
    pub typmod: i32,
    pub not_null: bool,
    /// The DEFAULT (or a generated column's expression) as the CREATE TABLE wrote it:
    /// `pg_get_expr` prints it in PostgreSQL's words (`deparse`).
    pub default: Option<String>,
    /// A user table column's SQL type (the deparser types expressions by it).
    pub sql_type: Option<SqlType>,
    /// `a` (GENERATED ALWAYS AS IDENTITY), `d` (BY DEFAULT), or 0.
    pub identity: u8,
    /// `s` for a stored generated column, or 0.
    pub generated: u8,
    pub collation: u32,
}

/// One relation (`pg_class` row).
#[derive(Clone, Debug)]
pub(crate) struct Class {
    pub oid: u32,
    pub name: String,
    pub namespace: u32,
    /// `r` table, `i` index, `S` sequence, `v` view, `p` partitioned table.
    pub kind: u8,
    pub am: u32,
    pub columns: Vec<Attr>,
    pub has_index: bool,
    /// The engine's row count for a table, where it keeps one.
    pub rows: Option<u64>,
    /// `relpersistence`: `p` permanent, `u` unlogged (an unlogged table and its index).
    pub persistence: u8,
}

/// A primary-key index and its constraint.
#[derive(Clone, Debug)]
pub(crate) struct Index {
    pub oid: u32,
    pub table: u32,
    pub name: String,
    /// The table's key columns, as attribute numbers (1-based).
    pub keys: Vec<i16>,
    pub constraint: u32,
}

/// A sequence's parameters (`pg_sequence`).
#[derive(Clone, Debug)]
pub(crate) struct SequenceInfo {
    pub oid: u32,
    pub type_oid: u32,
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub cache: i64,
}

/// An identity sequence's dependency on its column (`pg_depend`, deptype `i`).
#[derive(Clone, Debug)]
pub(crate) struct Depend {
    pub sequence: u32,
    pub table: u32,
    pub column: i16,
}

/// Every object of the catalog.
#[derive(Default)]
pub(crate) struct Model {
    pub classes: Vec<Class>,
    pub indexes: Vec<Index>,
    pub sequences: Vec<SequenceInfo>,
    pub depends: Vec<Depend>,
}

impl Model {
    /// Reads the database's objects now.
    pub fn load(db: &SqlDatabase) -> SqlResult<Model> {
        let mut model = Model::default();
        model.add_catalog_relations();
        model.add_system_views();
        for info in db.engine().tables() {
            let table = db.table(&info.name)?;
            let oid = user_oid(USER_TABLE_OIDS, info.id);
            model.add_table(
                oid,
                &info.name,
                &table.schema,
                table.handle.layout(),
                Some(info.rows),
            );
            if info.unlogged {
                // The table and its primary-key index (PostgreSQL marks both).
                for class in model
                    .classes
                    .iter_mut()
                    .filter(|c| c.oid == oid || c.oid == oid + 1)
                {
                    class.persistence = b'u';
                }
            }
            model.add_identity_sequence(oid, &info.name, &table.schema, table.handle.key_kind());
        }
        model.add_metadata_objects(db)?;
        model.classes.sort_by_key(|c| c.oid);
        Ok(model)
    }

    /// The relation with this OID.
    pub fn class(&self, oid: u32) -> Option<&Class> {
        self.classes.iter().find(|c| c.oid == oid)
    }

    fn add_catalog_relations(&mut self) {
        for def in defs::RELATIONS {
            let namespace = match def.schema {
                Schema::PgCatalog => PG_CATALOG,
                Schema::InformationSchema => INFORMATION_SCHEMA,
            };
            let kind = match def.kind {
                RelationKind::Table => b'r',
                RelationKind::View => b'v',
            };
            let columns = def
                .columns
                .iter()
                .map(|(name, ty)| catalog_attr(name, *ty))
                .collect();
            self.classes.push(Class {
                oid: def.oid,
                name: def.name.to_string(),
                namespace,
                kind,
                am: if kind == b'r' { HEAP_AM } else { 0 },
                columns,
                has_index: false,
                rows: None,
                persistence: b'p',
            });
        }
    }

    fn add_system_views(&mut self) {
        for (i, name) in crate::views::plain_views().enumerate() {
            let oid = if name == "pg_stat_activity" {
                PG_STAT_ACTIVITY
            } else {
                SYSTEM_VIEW_OIDS + i as u32
            };
            let columns = crate::views::columns(name)
                .unwrap_or_default()
                .into_iter()
                .map(|(column, ty)| catalog_attr(&column, CType::Sql(ty)))
                .collect();
            self.classes.push(Class {
                oid,
                name: name.to_string(),
                namespace: PG_CATALOG,
                kind: b'v',
                am: 0,
                columns,
                has_index: false,
                rows: None,
                persistence: b'p',
            });
        }
    }

    /// A table, and its primary-key index if it has one (a heap's row id is no key).
    fn add_table(
        &mut self,
        oid: u32,
        name: &str,
        schema: &TableSchema,
        layout: Layout,
        rows: Option<u64>,
    ) {
        let has_key = !schema.key.is_empty() && !matches!(layout, Layout::Heap { .. });
        let identity = identity_column(schema);
        let columns: Vec<Attr> = schema
            .columns
            .iter()
            .enumerate()
            .map(|(i, column)| {
                let (type_oid, typmod) = builtin::type_oid_and_typmod(column.ty);
                let in_key = has_key && schema.key.iter().any(|&(k, _)| k == i);
                let identity = match identity {
                    Some((c, always)) if c == i => {
                        if always {
                            b'a'
                        } else {
                            b'd'
                        }
                    }
                    _ => 0,
                };
                let (default, generated) = match (&column.generated, &column.default) {
                    (Some(expr), _) => (Some(expr.clone()), b's'),
                    (None, Some(_)) if identity != 0 => (None, 0),
                    (None, Some(expr)) => (Some(expr.clone()), 0),
                    (None, None) => (None, 0),
                };
                Attr {
                    name: column.name.clone(),
                    type_oid,
                    typmod,
                    not_null: column.not_null || in_key || identity != 0,
                    default,
                    sql_type: Some(column.ty),
                    identity,
                    generated,
                    collation: collation_of(column.ty),
                }
            })
            .collect();
        if has_key {
            let keys: Vec<Attr> = schema
                .key
                .iter()
                .map(|&(c, _)| Attr {
                    default: None,
                    identity: 0,
                    generated: 0,
                    ..columns[c].clone()
                })
                .collect();
            self.indexes.push(Index {
                oid: oid + 1,
                table: oid,
                name: format!("{name}_pkey"),
                keys: schema.key.iter().map(|&(c, _)| c as i16 + 1).collect(),
                constraint: oid + 3,
            });
            self.classes.push(Class {
                oid: oid + 1,
                name: format!("{name}_pkey"),
                namespace: PUBLIC,
                kind: b'i',
                am: BTREE_AM,
                columns: keys,
                has_index: false,
                rows: None,
                persistence: b'p',
            });
        }
        self.classes.push(Class {
            oid,
            name: name.to_string(),
            namespace: PUBLIC,
            kind: b'r',
            am: HEAP_AM,
            columns,
            has_index: has_key,
            rows,
            persistence: b'p',
        });
    }

    /// `<table>_<column>_seq` for an identity column: the generator the engine keeps for
    /// the table (`currval('t_id_seq')` reads it), as PostgreSQL names its sequence.
    fn add_identity_sequence(
        &mut self,
        table: u32,
        name: &str,
        schema: &TableSchema,
        kind: KeyKind,
    ) {
        let Some((column, _)) = identity_column(schema) else {
            return;
        };
        let (start, increment) = match kind {
            KeyKind::Identity { start, step } => (start, step),
            _ => (1, 1),
        };
        let ty = schema.columns[column].ty;
        let oid = table + 2;
        self.add_sequence(
            oid,
            &format!("{name}_{}_seq", schema.columns[column].name),
            ty,
            start,
            increment,
            1,
        );
        self.depends.push(Depend {
            sequence: oid,
            table,
            column: column as i16 + 1,
        });
    }

    fn add_sequence(
        &mut self,
        oid: u32,
        name: &str,
        ty: SqlType,
        start: i64,
        increment: i64,
        cache: i64,
    ) {
        let (min, max) = ty.integer_range().unwrap_or((i64::MIN, i64::MAX));
        let (min, max) = if increment > 0 { (1, max) } else { (min, -1) };
        self.sequences.push(SequenceInfo {
            oid,
            type_oid: ty.pg_oid(),
            start,
            increment,
            min,
            max,
            cache,
        });
        let columns = vec![
            catalog_attr("last_value", INT8),
            catalog_attr("log_cnt", INT8),
            catalog_attr("is_called", super::types::BOOL),
        ]
        .into_iter()
        .map(|a| Attr {
            not_null: true,
            ..a
        })
        .collect();
        self.classes.push(Class {
            oid,
            name: name.to_string(),
            namespace: PUBLIC,
            kind: b'S',
            am: 0,
            columns,
            has_index: false,
            rows: None,
            persistence: b'p',
        });
    }

    /// `CREATE SEQUENCE` sequences, and hash-partitioned tables still waiting for their
    /// partitions (partitioned tables: they have no rows yet).
    fn add_metadata_objects(&mut self, db: &SqlDatabase) -> SqlResult<()> {
        let meta = db.metadata();
        for (i, seq) in meta.sequences.iter().enumerate() {
            if self
                .classes
                .iter()
                .any(|c| c.name == seq.name && c.namespace == PUBLIC)
            {
                continue;
            }
            let oid = user_oid(USER_METADATA_OIDS, i);
            self.add_sequence(
                oid,
                &seq.name,
                SqlType::BigInt,
                seq.start,
                seq.increment,
                i64::from(seq.cache),
            );
        }
        let base = user_oid(USER_METADATA_OIDS, meta.sequences.len());
        for (i, pending) in meta.pending.iter().enumerate() {
            let parsed = crate::session::parse(&pending.create_sql)?;
            let Some(Statement::CreateTable(ct)) = parsed.first() else {
                continue;
            };
            let schema = ddl::plan_table(ct, &meta, db.engine().data_files(), Some(1))?.schema;
            let oid = user_oid(base, i);
            self.add_table(oid, &pending.name, &schema, Layout::Clustered, None);
            if let Some(class) = self.classes.iter_mut().find(|c| c.oid == oid) {
                class.kind = b'p';
            }
        }
        Ok(())
    }
}

/// The OID of the `index`th object numbered from `base`, 8 apart (an object's index, its
/// sequence and its constraint take the next ones). Like PostgreSQL's OID counter, the
/// numbering wraps around past 2^32.
fn user_oid(base: u32, index: usize) -> u32 {
    base.wrapping_add((index as u32).wrapping_mul(8))
}

/// The identity column (its index) and whether it is GENERATED ALWAYS.
fn identity_column(schema: &TableSchema) -> Option<(usize, bool)> {
    match &schema.keygen {
        KeyGen::Identity { always } => schema.key.first().map(|&(c, _)| (c, *always)),
        KeyGen::HashPrefix { always, .. } => schema.key.get(1).map(|&(c, _)| (c, *always)),
        _ => None,
    }
}

/// Text columns have the database's default collation; others none.
fn collation_of(ty: SqlType) -> u32 {
    if ty.is_text_like() {
        builtin::DEFAULT_COLLATION
    } else {
        0
    }
}

/// A column of a catalog relation or view.
fn catalog_attr(name: &str, ty: CType) -> Attr {
    let (type_oid, typmod) = type_of(ty);
    Attr {
        name: name.to_string(),
        type_oid,
        typmod,
        not_null: false,
        default: None,
        sql_type: None,
        identity: 0,
        generated: 0,
        collation: match ty {
            CType::Sql(SqlType::Name) => 950,
            CType::Sql(sql) => collation_of(sql),
            CType::NodeTree => builtin::DEFAULT_COLLATION,
            _ => 0,
        },
    }
}

/// A catalog type's `pg_type` OID and type modifier.
pub(crate) fn type_of(ty: CType) -> (u32, i32) {
    let oid = match ty {
        CType::Sql(sql) => return builtin::type_oid_and_typmod(sql),
        CType::RegClass => 2205,
        CType::RegType => 2206,
        CType::RegNamespace => 4089,
        CType::RegProc => 24,
        CType::RegRole => 4096,
        CType::Xid => 28,
        CType::NodeTree => 194,
        CType::AclItem => 1033,
        CType::AnyArray => 2277,
        CType::Int2Vector => 22,
        CType::OidVector => 30,
        CType::Unknown => 705,
        CType::Array(elem) => {
            let elem_oid = type_of(*elem).0;
            builtin::type_def(elem_oid).map_or(0, |t| t.array)
        }
    };
    (oid, -1)
}
