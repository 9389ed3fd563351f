//! The part of PostgreSQL's `pg_catalog` and `information_schema` that psql and the common
//! drivers read, answered from hotpage's own catalog, so that psql's `\d`, `\dt`,
//! `\d table`, `\di`, `\ds`, `\dn` and `\l` work against `hotpage serve`.
//!
//! ```text
//! defs       the catalog relations and their columns, as PostgreSQL 15 declares them
//! builtin    fixed rows: built-in types, schemas, roles, collations, access methods
//! model      the database's objects (tables, primary-key indexes, sequences), read per query
//! rows       each catalog relation's rows, made from the model
//! deparse    pg_get_expr / pg_get_indexdef / pg_get_constraintdef text, as PostgreSQL words it
//! settings   the run-time settings (SHOW, current_setting, set_config, pg_settings)
//! types      the catalog's types (regclass, "char", arrays, …) and values, casts, text I/O
//! plan, compile, expr   a query's plan: scopes, joins, subqueries, typed expressions
//! exec       running a plan; functions: the functions catalog queries call
//! ```
//!
//! A query goes here (not to `select.rs`, which reads one user table) when it names a
//! catalog relation, calls a catalog function, or casts to a catalog type
//! ([`handles`]). It may read only catalog relations and system views: joins, LEFT JOIN,
//! correlated subqueries, `EXISTS`, `IN`, `ARRAY(…)`, `= ANY(array)`, `CASE`, `~` (and
//! `OPERATOR(pg_catalog.~)`), `COLLATE` (the one collation, C), `::regclass`-style casts,
//! UNION/INTERSECT/EXCEPT, GROUP BY with aggregates, ORDER BY, LIMIT. What it does not
//! support fails with a SQLSTATE (0A000, 42883, 42P01, …), never with wrong rows.

mod array_funcs;
mod builtin;
mod compile;
mod cte;
mod defs;
mod deparse;
mod exec;
mod expr;
mod format_func;
mod functions;
mod model;
pub(crate) mod plan;
mod rows;
mod set_funcs;
pub(crate) mod settings;
pub(crate) use builtin::format_type;
pub(crate) use plan::refuse_ordinality;
pub(crate) use window::refuse_without_over;
mod types;
mod window;

use crate::error::SqlResult;
use crate::expr::{fold, object_name};
use crate::session::{ColumnInfo, Ctx, SqlDatabase, StatementResult};
use crate::table::SqlTable;
use crate::types::SqlType;
use builtin::PG_CATALOG;
use model::Model;
use sqlparser::ast::{
    Expr, FunctionArguments, ObjectName, Query, SetExpr, TableFactor, Visit, Visitor,
};
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use types::{CType, Names};

pub(crate) use functions::version;

/// The schema a catalog relation is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Schema {
    PgCatalog,
    InformationSchema,
}

/// A catalog table or view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RelationKind {
    Table,
    View,
}

/// One catalog relation: its OID and name (PostgreSQL's), its kind and its columns.
#[derive(Debug)]
pub(crate) struct RelationDef {
    pub oid: u32,
    pub schema: Schema,
    pub name: &'static str,
    pub kind: RelationKind,
    pub columns: &'static [(&'static str, CType)],
}

/// Whether `query` is one for the catalog: it names a catalog relation (or a system view
/// through `pg_catalog.`), calls a function only the catalog has, or casts to a catalog
/// type.
pub(crate) fn handles(query: &Query) -> bool {
    struct Finder {
        found: bool,
    }
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
            let parts: Vec<String> = relation
                .0
                .iter()
                .filter_map(|p| p.as_ident())
                .map(fold)
                .collect();
            let hit = match parts.as_slice() {
                [name] => defs::RELATIONS
                    .iter()
                    .any(|d| d.schema == Schema::PgCatalog && d.name == name),
                [schema, _] | [_, schema, _] => {
                    schema == "pg_catalog" || schema == "information_schema"
                }
                _ => false,
            };
            self.stop_if(hit)
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            let hit = match e {
                Expr::Function(f) => {
                    let qualified = f.name.0.len() > 1;
                    let name = object_name(&f.name);
                    qualified
                        || matches!(f.args, FunctionArguments::Subquery(_))
                        || (!crate::expr::is_builtin_function(&name)
                            && (functions::is_catalog_function(&name)
                                || expr::AggFunc::by_name(&name).is_some_and(|_| {
                                    matches!(
                                        name.as_str(),
                                        "string_agg"
                                            | "array_agg"
                                            | "bool_and"
                                            | "bool_or"
                                            | "every"
                                    )
                                })))
                }
                Expr::Identifier(ident) => {
                    ident.quote_style.is_none()
                        && matches!(
                            fold(ident).as_str(),
                            "current_schema" | "current_catalog" | "current_role"
                        )
                }
                Expr::Cast { data_type, .. } => {
                    SqlType::from_sql(data_type).is_err() && types::type_from_ast(data_type).is_ok()
                }
                _ => false,
            };
            self.stop_if(hit)
        }
    }
    impl Finder {
        fn stop_if(&mut self, hit: bool) -> ControlFlow<()> {
            if hit {
                self.found = true;
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }
    let mut finder = Finder { found: false };
    let _ = query.visit(&mut finder);
    finder.found
}

/// Whether `query` reads more than one relation, nests a query (a subquery in FROM or in
/// an expression), is a set operation, reads a set-returning function such as
/// `generate_series` or calls a window function (but `row_number()` over a system view
/// with arguments, such as seed 002's `fn_dblog`, stays with `select.rs`, which alone
/// reads those): what `select.rs`, which reads one table or system view, leaves to this
/// engine.
pub(crate) fn joins_or_nests(query: &Query) -> bool {
    #[derive(Default)]
    struct Counter {
        queries: usize,
        factors: usize,
        set_operation: bool,
        set_function: bool,
        /// A window function other than `row_number`, the only one `select.rs` has.
        window: bool,
        /// `row_number() OVER`, which `select.rs` has only in an ungrouped select list.
        row_number: bool,
        /// A system view that takes arguments (`fn_dblog(…)`), which only `select.rs` reads.
        view_with_arguments: bool,
    }
    impl Visitor for Counter {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            self.queries += 1;
            self.set_operation |= matches!(query.body.as_ref(), SetExpr::SetOperation { .. });
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            self.factors += 1;
            self.set_function |= match factor {
                TableFactor::Table {
                    name,
                    args: Some(_),
                    ..
                } => {
                    let view = crate::views::columns(&object_name(name)).is_some();
                    self.view_with_arguments |= view;
                    !view
                }
                TableFactor::Function { .. } => true,
                _ => false,
            };
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = expr
                && f.over.is_none()
            {
                // `SELECT generate_series(…)`: set-returning calls run here only.
                self.set_function |=
                    super::catalog::set_funcs::SetFunc::is_set_function(&object_name(&f.name));
            }
            if let Expr::Function(f) = expr
                && f.over.is_some()
            {
                let row_number = object_name(&f.name) == "row_number";
                self.window |= !row_number;
                self.row_number |= row_number;
            }
            ControlFlow::Continue(())
        }
    }
    let mut counter = Counter::default();
    let _ = query.visit(&mut counter);
    counter.queries > 1
        || counter.factors > 1
        || counter.set_operation
        || counter.set_function
        || counter.window
        || counter.row_number && !counter.view_with_arguments
}

/// A planned catalog query.
pub(crate) struct CatalogPlan {
    query: plan::QueryPlan,
    pub columns: Vec<ColumnInfo>,
    pub param_types: Vec<Option<SqlType>>,
    /// The user tables it reads.
    tables: Vec<Arc<SqlTable>>,
}

impl std::fmt::Debug for CatalogPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogPlan")
            .field("columns", &self.columns)
            .finish()
    }
}

/// Plans a query over the catalog, the system views and, when `db` is given, the user's
/// tables.
pub(crate) fn plan(
    db: Option<&Arc<SqlDatabase>>,
    query: &Query,
    typing: crate::expr::Typing,
) -> SqlResult<CatalogPlan> {
    let mut compiler = compile::Compiler::default();
    compiler.db = db.cloned();
    compiler.implicit_conversions = typing == crate::expr::Typing::Implicit;
    let planned = plan::plan_query(&mut compiler, query)?;
    let columns = planned
        .columns
        .iter()
        .map(|(name, ty)| ColumnInfo {
            name: name.clone(),
            ty: ty.output_type(),
        })
        .collect();
    // A parameter's type is the one its context gave it (`oid` for `t.oid = $1`).
    let mut params = compiler.params.clone();
    planned.walk(&mut |e| {
        if let expr::ExprKind::Param(i) = e.kind
            && e.ty != CType::Unknown
            && let Some(slot) = params.get_mut(i)
            && slot.is_none()
        {
            *slot = Some(e.ty);
        }
    });
    let param_types = params
        .iter()
        .map(|p| Some(p.map_or(SqlType::Text, CType::output_type)))
        .collect();
    Ok(CatalogPlan {
        query: planned,
        columns,
        param_types,
        tables: compiler.tables,
    })
}

impl CatalogPlan {
    /// True if a user table it reads was dropped or replaced after it was planned.
    pub fn is_stale(&self) -> bool {
        self.tables.iter().any(|t| t.handle.is_dropped())
    }

    /// Runs the query against the catalog and the tables as they are now.
    pub fn execute(&self, ctx: &mut Ctx<'_>) -> SqlResult<StatementResult> {
        let pid = ctx.state.pid;
        let catalog = Catalog {
            model: Model::load(ctx.db)?,
            settings: ctx.state.settings.clone(),
        };
        let session = exec::SessionRefs {
            engine: Some(&mut *ctx.engine),
            state: &mut *ctx.state,
        };
        let mut exec = exec::Exec::new(&catalog, ctx.params, pid, ctx.db, session);
        let rows = exec.run_query(&self.query, None)?;
        let rows = exec.output(rows, &self.query.columns);
        Ok(StatementResult {
            tag: format!("SELECT {}", rows.len()),
            columns: self.columns.clone(),
            rows,
        })
    }
}

/// The catalog as one query sees it.
pub(crate) struct Catalog {
    pub model: Model,
    /// The session's settings when the query started.
    pub settings: HashMap<String, String>,
}

impl Catalog {
    /// A schema's name.
    pub fn namespace_text(&self, oid: u32) -> String {
        builtin::NAMESPACES
            .iter()
            .find(|(o, _, _)| *o == oid)
            .map_or_else(|| oid.to_string(), |(_, name, _)| (*name).to_string())
    }

    pub fn namespace_oid_of(&self, name: &str) -> Option<u32> {
        builtin::NAMESPACES
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(oid, _, _)| *oid)
    }

    pub fn role_text(&self, oid: u32) -> Option<String> {
        builtin::ROLES
            .iter()
            .find(|(o, _, _)| *o == oid)
            .map(|(_, name, _)| (*name).to_string())
    }

    /// The schemas searched for an unqualified name: pg_catalog first, then search_path.
    fn search_path(&self) -> Vec<u32> {
        let mut path = vec![PG_CATALOG];
        for schema in settings::search_path(&self.settings) {
            if let Some(oid) = self.namespace_oid_of(&schema)
                && !path.contains(&oid)
            {
                path.push(oid);
            }
        }
        path
    }

    /// `pg_table_is_visible`: the relation is found by its unqualified name.
    pub fn relation_visible(&self, oid: u32) -> bool {
        let Some(class) = self.model.class(oid) else {
            return false;
        };
        let path = self.search_path();
        for schema in path {
            if let Some(first) = self
                .model
                .classes
                .iter()
                .find(|c| c.namespace == schema && c.name == class.name)
            {
                return first.oid == oid;
            }
        }
        false
    }

    /// A relation by (possibly qualified, possibly quoted) name, as `::regclass` reads it.
    pub fn relation_oid_of(&self, name: &str) -> Option<u32> {
        let parts = split_name(name);
        match parts.as_slice() {
            [relname] => self.search_path().into_iter().find_map(|schema| {
                self.model
                    .classes
                    .iter()
                    .find(|c| c.namespace == schema && c.name == *relname)
                    .map(|c| c.oid)
            }),
            [schema, relname] => {
                let schema = self.namespace_oid_of(schema)?;
                self.model
                    .classes
                    .iter()
                    .find(|c| c.namespace == schema && c.name == *relname)
                    .map(|c| c.oid)
            }
            _ => None,
        }
    }

    /// `pg_get_indexdef(index)`: the table qualified with its schema, or (pretty) only
    /// when it is not visible, as PostgreSQL prints it.
    pub fn index_def(&self, oid: u32, pretty: bool) -> Option<String> {
        let index = self.model.indexes.iter().find(|i| i.oid == oid)?;
        let table = self.model.class(index.table)?;
        let columns = self.index_columns(index);
        let table_name = if pretty {
            self.qualified_name(table.oid)?
        } else {
            format!(
                "{}.{}",
                deparse::quote_ident(&self.namespace_text(table.namespace)),
                deparse::quote_ident(&table.name)
            )
        };
        Some(deparse::index_def(&index.name, &table_name, &columns))
    }

    /// Column `attnum` of relation `relid`'s DEFAULT (or generation expression), as
    /// `pg_get_expr` prints it, pretty or plain.
    pub fn expr_text(&self, relid: u32, attnum: usize, pretty: bool) -> Option<String> {
        let class = self.model.class(relid)?;
        let attr = class.columns.get(attnum.checked_sub(1)?)?;
        let text = attr.default.as_deref()?;
        let columns: Vec<(String, SqlType)> = class
            .columns
            .iter()
            .filter_map(|a| a.sql_type.map(|t| (a.name.clone(), t)))
            .collect();
        Some(deparse::expression(text, attr.sql_type?, &columns, pretty))
    }

    /// `pg_get_constraintdef(constraint)`.
    pub fn constraint_def(&self, oid: u32) -> Option<String> {
        let index = self.model.indexes.iter().find(|i| i.constraint == oid)?;
        Some(deparse::primary_key_def(&self.index_columns(index)))
    }

    fn index_columns(&self, index: &model::Index) -> Vec<String> {
        let table = self.model.class(index.table);
        index
            .keys
            .iter()
            .filter_map(|&k| {
                table
                    .and_then(|t| t.columns.get(usize::try_from(k - 1).ok()?))
                    .map(|a| a.name.clone())
            })
            .collect()
    }

    /// A relation's name as `regclass` prints it: qualified when it is not visible.
    fn qualified_name(&self, oid: u32) -> Option<String> {
        let class = self.model.class(oid)?;
        let name = deparse::quote_ident(&class.name);
        if self.relation_visible(oid) {
            Some(name)
        } else {
            Some(format!(
                "{}.{name}",
                deparse::quote_ident(&self.namespace_text(class.namespace))
            ))
        }
    }
}

/// `schema.name` (either part possibly quoted) into its folded parts.
fn split_name(name: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut was_quoted = false;
    let mut chars = name.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                current.push('"');
            }
            '"' => {
                quoted = !quoted;
                was_quoted = true;
            }
            '.' if !quoted => {
                parts.push(if was_quoted {
                    current.clone()
                } else {
                    current.to_lowercase()
                });
                current.clear();
                was_quoted = false;
            }
            other => current.push(other),
        }
    }
    parts.push(if was_quoted {
        current
    } else {
        current.to_lowercase()
    });
    parts
}

impl Names for Catalog {
    fn relation_name(&self, oid: u32) -> Option<String> {
        self.qualified_name(oid)
    }
    fn relation_oid(&self, name: &str) -> Option<u32> {
        self.relation_oid_of(name)
    }
    fn type_name(&self, oid: u32) -> Option<String> {
        builtin::type_def(oid).map(|_| builtin::format_type(oid, None))
    }
    fn type_oid(&self, name: &str) -> Option<u32> {
        builtin::type_oid_named(name)
    }
    fn namespace_name(&self, oid: u32) -> Option<String> {
        builtin::NAMESPACES
            .iter()
            .find(|(o, _, _)| *o == oid)
            .map(|(_, n, _)| deparse::quote_ident(n))
    }
    fn namespace_oid(&self, name: &str) -> Option<u32> {
        match split_name(name).as_slice() {
            [one] => self.namespace_oid_of(one),
            _ => None,
        }
    }
    fn role_name(&self, oid: u32) -> Option<String> {
        self.role_text(oid)
    }
    fn role_oid(&self, name: &str) -> Option<u32> {
        builtin::ROLES
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(o, _, _)| *o)
    }
}
