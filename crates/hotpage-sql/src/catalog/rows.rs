//! The rows of each catalog relation, made from the [`Model`] (and, for `pg_settings`,
//! the session's settings). Relations hotpage has nothing for (policies, publications,
//! triggers, inheritance, statistics objects, …) have no rows: there is none of those
//! objects in a hotpage database.

use super::builtin::{self, DATABASE, DATABASE_NAME, DEFAULT_TABLESPACE, OWNER, PG_CATALOG};
use super::model::{Class, Model};
use super::settings;
use super::types::{CType, Datum};
use super::{Catalog, RelationDef, Schema};
use crate::error::{SqlError, SqlResult};
use crate::types::SqlType;

/// One row being made: every column starts at its type's default (false, 0, NULL) and
/// is set by name.
struct Row {
    def: &'static RelationDef,
    values: Vec<Datum>,
    unknown: Option<&'static str>,
}

impl Row {
    fn new(def: &'static RelationDef) -> Row {
        // pg_catalog's columns are mostly NOT NULL; information_schema's are not.
        let nullable = def.schema == Schema::InformationSchema;
        let values = def
            .columns
            .iter()
            .map(|(_, ty)| match ty {
                _ if nullable => Datum::Null,
                CType::Sql(SqlType::Bool) => Datum::Bool(false),
                CType::Sql(SqlType::Real | SqlType::Double) => Datum::Float(0.0),
                ty if ty.is_integer_like() => Datum::Int(0),
                _ => Datum::Null,
            })
            .collect();
        Row {
            def,
            values,
            unknown: None,
        }
    }

    fn set(mut self, column: &'static str, value: Datum) -> Row {
        match self.def.columns.iter().position(|(c, _)| *c == column) {
            Some(i) => self.values[i] = value,
            None => self.unknown = Some(column),
        }
        self
    }

    fn text(self, column: &'static str, value: impl Into<String>) -> Row {
        self.set(column, Datum::Text(value.into()))
    }

    fn int(self, column: &'static str, value: impl Into<i64>) -> Row {
        self.set(column, Datum::Int(value.into()))
    }

    fn bool(self, column: &'static str, value: bool) -> Row {
        self.set(column, Datum::Bool(value))
    }

    fn char(self, column: &'static str, value: u8) -> Row {
        self.set(column, Datum::char(value))
    }

    fn finish(self) -> SqlResult<Vec<Datum>> {
        match self.unknown {
            Some(column) => Err(SqlError::internal(format!(
                "catalog row of {} sets no column {column}",
                self.def.name
            ))),
            None => Ok(self.values),
        }
    }
}

/// Every row of `def` now.
pub(crate) fn rows(def: &'static RelationDef, catalog: &Catalog) -> SqlResult<Vec<Vec<Datum>>> {
    let m = &catalog.model;
    let rows: Vec<Row> = match (def.schema, def.name) {
        (Schema::PgCatalog, "pg_namespace") => namespaces(def),
        (Schema::PgCatalog, "pg_class") => m.classes.iter().map(|c| class(def, c, m)).collect(),
        (Schema::PgCatalog, "pg_attribute") => attributes(def, m),
        (Schema::PgCatalog, "pg_attrdef") => attrdefs(def, m),
        (Schema::PgCatalog, "pg_type") => types(def),
        (Schema::PgCatalog, "pg_index") => indexes(def, m),
        (Schema::PgCatalog, "pg_constraint") => constraints(def, m),
        (Schema::PgCatalog, "pg_am") => access_methods(def),
        (Schema::PgCatalog, "pg_database") => vec![database(def)],
        (Schema::PgCatalog, "pg_authid" | "pg_roles" | "pg_user") => roles(def),
        (Schema::PgCatalog, "pg_sequence") => sequences(def, m),
        (Schema::PgCatalog, "pg_sequences") => sequences_view(def, m, catalog),
        (Schema::PgCatalog, "pg_depend") => depends(def, m),
        (Schema::PgCatalog, "pg_collation") => collations(def),
        (Schema::PgCatalog, "pg_settings") => settings_rows(def, catalog),
        (Schema::PgCatalog, "pg_tablespace") => tablespaces(def),
        (Schema::PgCatalog, "pg_tables") => tables_view(def, m, catalog),
        (Schema::PgCatalog, "pg_indexes") => indexes_view(def, m, catalog),
        (Schema::PgCatalog, "pg_views") => views_view(def, m, catalog),
        (Schema::InformationSchema, "tables") => information_tables(def, m, catalog),
        (Schema::InformationSchema, "columns") => information_columns(def, m, catalog),
        (Schema::InformationSchema, "schemata") => information_schemata(def, catalog),
        _ => Vec::new(),
    };
    rows.into_iter().map(Row::finish).collect()
}

fn namespaces(def: &'static RelationDef) -> Vec<Row> {
    builtin::NAMESPACES
        .iter()
        .map(|&(oid, name, owner)| {
            Row::new(def)
                .int("oid", oid)
                .text("nspname", name)
                .int("nspowner", owner)
        })
        .collect()
}

fn class(def: &'static RelationDef, c: &Class, m: &Model) -> Row {
    let storage = matches!(c.kind, b'r' | b'i' | b'S');
    let tuples = match (c.kind, c.rows) {
        (b'r', Some(rows)) => rows as f64,
        (b'r' | b'p', None) => -1.0,
        _ => 0.0,
    };
    let _ = m;
    Row::new(def)
        .int("oid", c.oid)
        .text("relname", c.name.clone())
        .int("relnamespace", c.namespace)
        .int("relowner", OWNER)
        .int("relam", c.am)
        .int("relfilenode", if storage { c.oid } else { 0 })
        .set("reltuples", Datum::Float(tuples))
        .bool("relhasindex", c.has_index)
        .char("relpersistence", c.persistence)
        .char("relkind", c.kind)
        .int("relnatts", c.columns.len() as i64)
        .bool("relispopulated", true)
        .char("relreplident", if c.kind == b'r' { b'd' } else { b'n' })
}

fn attributes(def: &'static RelationDef, m: &Model) -> Vec<Row> {
    let mut rows = Vec::new();
    for c in &m.classes {
        for (i, a) in c.columns.iter().enumerate() {
            let t = builtin::type_def(a.type_oid);
            rows.push(
                Row::new(def)
                    .int("attrelid", c.oid)
                    .text("attname", a.name.clone())
                    .int("atttypid", a.type_oid)
                    .int("attstattarget", -1)
                    .int("attlen", t.map_or(-1, |t| t.len))
                    .int("attnum", i as i64 + 1)
                    .int("attcacheoff", -1)
                    .int("atttypmod", a.typmod)
                    .bool("attbyval", t.is_some_and(|t| t.byval))
                    .char("attalign", t.map_or(b'i', |t| t.align))
                    .char("attstorage", t.map_or(b'p', |t| t.storage))
                    .char("attcompression", 0)
                    .bool("attnotnull", a.not_null)
                    .bool("atthasdef", a.default.is_some())
                    .char("attidentity", a.identity)
                    .char("attgenerated", a.generated)
                    .bool("attislocal", true)
                    .int("attcollation", a.collation),
            );
        }
    }
    rows
}

/// An attribute default's OID: not shared with any relation's.
fn attrdef_oid(table: u32, column: usize) -> i64 {
    2_000_000_000 + (i64::from(table) * 1601 + column as i64) % 2_000_000_000
}

fn attrdefs(def: &'static RelationDef, m: &Model) -> Vec<Row> {
    let mut rows = Vec::new();
    for c in &m.classes {
        for (i, a) in c.columns.iter().enumerate() {
            if let Some(default) = &a.default {
                rows.push(
                    Row::new(def)
                        .int("oid", attrdef_oid(c.oid, i))
                        .int("adrelid", c.oid)
                        .int("adnum", i as i64 + 1)
                        .text("adbin", node_tree(i + 1, default)),
                );
            }
        }
    }
    rows
}

/// What `pg_attrdef.adbin` holds: PostgreSQL keeps the analysed expression's node tree;
/// hotpage keeps which column's expression it is (`pg_get_expr` prints it from the
/// catalog) and, for people reading it, the SQL text.
pub(crate) fn node_tree(attnum: usize, text: &str) -> String {
    format!("{{HOTPAGE_EXPR :attnum {attnum} :text {text:?}}}")
}

/// The column number in an `adbin` made by [`node_tree`].
pub(crate) fn node_tree_attnum(tree: &str) -> Option<usize> {
    tree.strip_prefix("{HOTPAGE_EXPR :attnum ")?
        .split(' ')
        .next()?
        .parse()
        .ok()
}

fn types(def: &'static RelationDef) -> Vec<Row> {
    builtin::TYPES
        .iter()
        .map(|t| {
            let [input, output, receive, send] = t.io;
            Row::new(def)
                .int("oid", t.oid)
                .text("typname", t.name)
                .int("typnamespace", PG_CATALOG)
                .int("typowner", OWNER)
                .int("typlen", t.len)
                .bool("typbyval", t.byval)
                .char("typtype", t.kind)
                .char("typcategory", t.category)
                .bool("typispreferred", t.preferred)
                .bool("typisdefined", true)
                .char("typdelim", b',')
                .text(
                    "typsubscript",
                    if t.category == b'A' {
                        "array_subscript_handler"
                    } else {
                        "-"
                    },
                )
                .int("typelem", t.elem)
                .int("typarray", t.array)
                .text("typinput", input)
                .text("typoutput", output)
                .text("typreceive", receive)
                .text("typsend", send)
                .text("typmodin", "-")
                .text("typmodout", "-")
                .text("typanalyze", "-")
                .char("typalign", t.align)
                .char("typstorage", t.storage)
                .int("typtypmod", -1)
                .int("typcollation", t.collation)
        })
        .collect()
}

fn indexes(def: &'static RelationDef, m: &Model) -> Vec<Row> {
    m.indexes
        .iter()
        .map(|ix| {
            let n = ix.keys.len() as i64;
            let keys = ix.keys.iter().map(|&k| Datum::Int(i64::from(k))).collect();
            let collations = m.class(ix.oid).map_or_else(Vec::new, |c| {
                c.columns
                    .iter()
                    .map(|a| Datum::Int(i64::from(a.collation)))
                    .collect()
            });
            Row::new(def)
                .int("indexrelid", ix.oid)
                .int("indrelid", ix.table)
                .int("indnatts", n)
                .int("indnkeyatts", n)
                .bool("indisunique", true)
                .bool("indisprimary", true)
                .bool("indimmediate", true)
                .bool("indisvalid", true)
                .bool("indisready", true)
                .bool("indislive", true)
                .set("indkey", Datum::Array(keys))
                .set("indcollation", Datum::Array(collations))
                .set("indclass", Datum::Array(vec![Datum::Int(0); ix.keys.len()]))
                .set(
                    "indoption",
                    Datum::Array(vec![Datum::Int(0); ix.keys.len()]),
                )
        })
        .collect()
}

fn constraints(def: &'static RelationDef, m: &Model) -> Vec<Row> {
    m.indexes
        .iter()
        .map(|ix| {
            let keys = ix.keys.iter().map(|&k| Datum::Int(i64::from(k))).collect();
            Row::new(def)
                .int("oid", ix.constraint)
                .text("conname", ix.name.clone())
                .int("connamespace", builtin::PUBLIC)
                .char("contype", b'p')
                .bool("convalidated", true)
                .int("conrelid", ix.table)
                .int("conindid", ix.oid)
                .char("confupdtype", b' ')
                .char("confdeltype", b' ')
                .char("confmatchtype", b' ')
                .bool("conislocal", true)
                .bool("connoinherit", true)
                .set("conkey", Datum::Array(keys))
        })
        .collect()
}

fn access_methods(def: &'static RelationDef) -> Vec<Row> {
    builtin::ACCESS_METHODS
        .iter()
        .map(|&(oid, name, handler, kind)| {
            Row::new(def)
                .int("oid", oid)
                .text("amname", name)
                .text("amhandler", handler)
                .char("amtype", kind)
        })
        .collect()
}

fn database(def: &'static RelationDef) -> Row {
    Row::new(def)
        .int("oid", DATABASE)
        .text("datname", DATABASE_NAME)
        .int("datdba", OWNER)
        .int("encoding", 6)
        .char("datlocprovider", b'c')
        .bool("datallowconn", true)
        .int("datconnlimit", -1)
        .int("datminmxid", 1)
        .int("dattablespace", DEFAULT_TABLESPACE)
        .text("datcollate", "C")
        .text("datctype", "C")
}

/// pg_authid, pg_roles and pg_user (login roles only) share the role list.
fn roles(def: &'static RelationDef) -> Vec<Row> {
    builtin::ROLES
        .iter()
        .filter(|(_, _, login)| def.name != "pg_user" || *login)
        .map(|&(oid, name, login)| {
            let row = Row::new(def);
            if def.name == "pg_user" {
                return row
                    .text("usename", name)
                    .int("usesysid", oid)
                    .bool("usecreatedb", true)
                    .bool("usesuper", true)
                    .bool("userepl", true)
                    .bool("usebypassrls", true)
                    .text("passwd", "********");
            }
            let row = if def.name == "pg_roles" {
                row.text("rolpassword", "********")
            } else {
                row
            };
            row.int("oid", oid)
                .text("rolname", name)
                .bool("rolsuper", login)
                .bool("rolinherit", true)
                .bool("rolcreaterole", login)
                .bool("rolcreatedb", login)
                .bool("rolcanlogin", login)
                .bool("rolreplication", login)
                .bool("rolbypassrls", login)
                .int("rolconnlimit", -1)
        })
        .collect()
}

fn sequences(def: &'static RelationDef, m: &Model) -> Vec<Row> {
    m.sequences
        .iter()
        .map(|s| {
            Row::new(def)
                .int("seqrelid", s.oid)
                .int("seqtypid", s.type_oid)
                .int("seqstart", s.start)
                .int("seqincrement", s.increment)
                .int("seqmax", s.max)
                .int("seqmin", s.min)
                .int("seqcache", s.cache)
        })
        .collect()
}

fn sequences_view(def: &'static RelationDef, m: &Model, catalog: &Catalog) -> Vec<Row> {
    m.sequences
        .iter()
        .filter_map(|s| {
            let class = m.class(s.oid)?;
            Some(
                Row::new(def)
                    .text("schemaname", catalog.namespace_text(class.namespace))
                    .text("sequencename", class.name.clone())
                    .text("sequenceowner", builtin::OWNER_NAME)
                    .int("data_type", s.type_oid)
                    .int("start_value", s.start)
                    .int("min_value", s.min)
                    .int("max_value", s.max)
                    .int("increment_by", s.increment)
                    .int("cache_size", s.cache),
            )
        })
        .collect()
}

fn depends(def: &'static RelationDef, m: &Model) -> Vec<Row> {
    m.depends
        .iter()
        .map(|d| {
            Row::new(def)
                .int("classid", 1259)
                .int("objid", d.sequence)
                .int("refclassid", 1259)
                .int("refobjid", d.table)
                .int("refobjsubid", d.column)
                .char("deptype", b'i')
        })
        .collect()
}

fn collations(def: &'static RelationDef) -> Vec<Row> {
    builtin::COLLATIONS
        .iter()
        .map(|&(oid, name, provider, collate, ctype)| {
            let row = Row::new(def)
                .int("oid", oid)
                .text("collname", name)
                .int("collnamespace", PG_CATALOG)
                .int("collowner", OWNER)
                .char("collprovider", provider)
                .bool("collisdeterministic", true)
                .int("collencoding", -1);
            if collate.is_empty() {
                row
            } else {
                row.text("collcollate", collate).text("collctype", ctype)
            }
        })
        .collect()
}

fn settings_rows(def: &'static RelationDef, catalog: &Catalog) -> Vec<Row> {
    settings::SETTINGS
        .iter()
        .map(|s| {
            let value = settings::value(&catalog.settings, s.name).unwrap_or_default();
            let source = if catalog.settings.contains_key(&s.name.to_lowercase()) {
                "session"
            } else {
                "default"
            };
            let row = Row::new(def)
                .text("name", s.name)
                .text("setting", value)
                .text("category", s.category)
                .text("short_desc", s.short_desc)
                .text("context", s.context)
                .text("vartype", s.vartype)
                .text("source", source)
                .text("boot_val", s.default)
                .text("reset_val", s.default);
            match s.unit {
                Some(unit) => row.text("unit", unit),
                None => row,
            }
        })
        .collect()
}

fn tablespaces(def: &'static RelationDef) -> Vec<Row> {
    builtin::TABLESPACES
        .iter()
        .map(|&(oid, name)| {
            Row::new(def)
                .int("oid", oid)
                .text("spcname", name)
                .int("spcowner", OWNER)
        })
        .collect()
}

fn tables_view(def: &'static RelationDef, m: &Model, catalog: &Catalog) -> Vec<Row> {
    m.classes
        .iter()
        .filter(|c| matches!(c.kind, b'r' | b'p'))
        .map(|c| {
            Row::new(def)
                .text("schemaname", catalog.namespace_text(c.namespace))
                .text("tablename", c.name.clone())
                .text("tableowner", builtin::OWNER_NAME)
                .bool("hasindexes", c.has_index)
        })
        .collect()
}

fn indexes_view(def: &'static RelationDef, m: &Model, catalog: &Catalog) -> Vec<Row> {
    m.indexes
        .iter()
        .filter_map(|ix| {
            let table = m.class(ix.table)?;
            Some(
                Row::new(def)
                    .text("schemaname", catalog.namespace_text(table.namespace))
                    .text("tablename", table.name.clone())
                    .text("indexname", ix.name.clone())
                    .text("indexdef", catalog.index_def(ix.oid, false)?),
            )
        })
        .collect()
}

fn views_view(def: &'static RelationDef, m: &Model, catalog: &Catalog) -> Vec<Row> {
    m.classes
        .iter()
        .filter(|c| c.kind == b'v')
        .map(|c| {
            Row::new(def)
                .text("schemaname", catalog.namespace_text(c.namespace))
                .text("viewname", c.name.clone())
                .text("viewowner", builtin::OWNER_NAME)
        })
        .collect()
}

fn information_tables(def: &'static RelationDef, m: &Model, catalog: &Catalog) -> Vec<Row> {
    m.classes
        .iter()
        .filter(|c| matches!(c.kind, b'r' | b'p' | b'v'))
        .map(|c| {
            let user_table = c.namespace == builtin::PUBLIC && c.kind != b'v';
            Row::new(def)
                .text("table_catalog", DATABASE_NAME)
                .text("table_schema", catalog.namespace_text(c.namespace))
                .text("table_name", c.name.clone())
                .text(
                    "table_type",
                    if c.kind == b'v' { "VIEW" } else { "BASE TABLE" },
                )
                .text("is_insertable_into", if user_table { "YES" } else { "NO" })
                .text("is_typed", "NO")
        })
        .collect()
}

fn information_columns(def: &'static RelationDef, m: &Model, catalog: &Catalog) -> Vec<Row> {
    let mut rows = Vec::new();
    for c in m
        .classes
        .iter()
        .filter(|c| matches!(c.kind, b'r' | b'p' | b'v'))
    {
        for (i, a) in c.columns.iter().enumerate() {
            let t = builtin::type_def(a.type_oid);
            let data_type = match t {
                Some(t) if t.category == b'A' => "ARRAY".to_string(),
                _ => builtin::format_type(a.type_oid, None),
            };
            let mut row = Row::new(def)
                .text("table_catalog", DATABASE_NAME)
                .text("table_schema", catalog.namespace_text(c.namespace))
                .text("table_name", c.name.clone())
                .text("column_name", a.name.clone())
                .int("ordinal_position", i as i64 + 1)
                .text("is_nullable", if a.not_null { "NO" } else { "YES" })
                .text("data_type", data_type)
                .text("udt_catalog", DATABASE_NAME)
                .text("udt_schema", "pg_catalog")
                .text("udt_name", t.map_or("", |t| t.name))
                .text("dtd_identifier", (i + 1).to_string())
                .text("is_self_referencing", "NO")
                .text("is_identity", if a.identity != 0 { "YES" } else { "NO" })
                .text("identity_cycle", "NO")
                .text(
                    "is_generated",
                    if a.generated != 0 { "ALWAYS" } else { "NEVER" },
                )
                .text("is_updatable", if c.kind == b'v' { "NO" } else { "YES" });
            row = column_type_facts(row, a.type_oid, a.typmod);
            if a.identity != 0 {
                let how = if a.identity == b'a' {
                    "ALWAYS"
                } else {
                    "BY DEFAULT"
                };
                row = row.text("identity_generation", how);
            }
            let expr = catalog.expr_text(c.oid, i + 1, false);
            row = match (expr, a.generated) {
                (Some(expr), 0) => row.text("column_default", expr),
                (Some(expr), _) => row.text("generation_expression", expr),
                _ => row,
            };
            rows.push(row);
        }
    }
    rows
}

/// information_schema.columns' length, precision and scale of a type.
fn column_type_facts(row: Row, type_oid: u32, typmod: i32) -> Row {
    let modifier = (typmod >= 4).then_some(typmod - 4);
    match (type_oid, modifier) {
        (1043 | 1042, Some(n)) => row
            .int("character_maximum_length", n)
            .int("character_octet_length", n * 4),
        (1043 | 1042 | 25, None) => row.int("character_octet_length", 1_073_741_824),
        (1700, Some(m)) => row
            .int("numeric_precision", m >> 16)
            .int("numeric_precision_radix", 10)
            .int("numeric_scale", m & 0xffff),
        (1700, None) => row.int("numeric_precision_radix", 10),
        (21 | 23 | 20, _) => {
            let bits = match type_oid {
                21 => 16,
                23 => 32,
                _ => 64,
            };
            row.int("numeric_precision", bits)
                .int("numeric_precision_radix", 2)
                .int("numeric_scale", 0)
        }
        (700 | 701, _) => row
            .int("numeric_precision", if type_oid == 700 { 24 } else { 53 })
            .int("numeric_precision_radix", 2),
        (1114 | 1184, _) => row.int("datetime_precision", 6),
        (1082, _) => row.int("datetime_precision", 0),
        _ => row,
    }
}

fn information_schemata(def: &'static RelationDef, catalog: &Catalog) -> Vec<Row> {
    builtin::NAMESPACES
        .iter()
        .map(|&(oid, name, owner)| {
            Row::new(def)
                .text("catalog_name", DATABASE_NAME)
                .text("schema_name", name)
                .text(
                    "schema_owner",
                    catalog.role_text(owner).unwrap_or_else(|| oid.to_string()),
                )
        })
        .collect()
}
