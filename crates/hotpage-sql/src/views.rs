//! The system views, queried with SELECT like tables: each is a name, its columns, and a
//! function that makes its rows from the engine's own figures (the same typed reports and
//! statistics `hotpage inspect` renders, so the two always agree).

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::session::{SqlDatabase, lock, now_micros};
use crate::types::SqlType;
use crate::value::Value;
use std::sync::Mutex;

/// What one session is doing, for `pg_stat_activity`.
pub(crate) struct Activity {
    pub pid: u32,
    pub backend_start: i64,
    state: Mutex<ActivityState>,
}

#[derive(Clone, Default)]
struct ActivityState {
    active: bool,
    query: String,
    query_start: Option<i64>,
}

impl Activity {
    pub fn new(pid: u32) -> Activity {
        Activity {
            pid,
            backend_start: now_micros(),
            state: Mutex::new(ActivityState::default()),
        }
    }

    /// A statement starts.
    pub fn begin(&self, query: &str) {
        let mut state = lock(&self.state);
        state.active = true;
        state.query.clear();
        // Long statements are cut: the view shows what a person reads.
        state.query.extend(query.chars().take(1024));
        state.query_start = Some(now_micros());
    }

    /// The statement ended.
    pub fn end(&self) {
        lock(&self.state).active = false;
    }
}

/// Makes a view's rows from the database and the table function's arguments.
type RowsFn = fn(&SqlDatabase, &[Value]) -> SqlResult<Vec<Vec<Value>>>;

/// One view: its name, columns, and rows.
struct View {
    name: &'static str,
    columns: fn() -> Vec<(&'static str, SqlType)>,
    rows: RowsFn,
}

const VIEWS: &[View] = &[
    View {
        name: "hotpage_wait_stats",
        columns: wait_stats_columns,
        rows: wait_stats_rows,
    },
    View {
        name: "pg_stat_activity",
        columns: activity_columns,
        rows: activity_rows,
    },
];

fn find(name: &str) -> Option<&'static View> {
    VIEWS.iter().find(|v| v.name == name)
}

/// True if `name` is a system view or table function.
pub(crate) fn is_view(name: &str) -> bool {
    find(name).is_some()
}

/// The view's columns, if `name` is one.
pub(crate) fn columns(name: &str) -> Option<Vec<(String, SqlType)>> {
    find(name).map(|v| {
        (v.columns)()
            .into_iter()
            .map(|(n, t)| (n.to_string(), t))
            .collect()
    })
}

/// The view's rows now; `args` are a table function's arguments.
pub(crate) fn rows(name: &str, db: &SqlDatabase, args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    match find(name) {
        Some(view) => (view.rows)(db, args),
        None => Err(SqlError::new(
            sqlstate::UNDEFINED_TABLE,
            format!("relation \"{name}\" does not exist"),
        )),
    }
}

fn wait_stats_columns() -> Vec<(&'static str, SqlType)> {
    vec![
        ("wait_type", SqlType::Text),
        ("waiting_tasks_count", SqlType::BigInt),
        ("wait_time_ms", SqlType::Double),
        ("max_wait_time_ms", SqlType::Double),
    ]
}

/// `sys.dm_os_wait_stats`'s figures: cumulative since open or the last reset
/// (`SELECT hotpage_reset_wait_stats()`).
fn wait_stats_rows(db: &SqlDatabase, _args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    let snapshot = db.engine().stats();
    Ok(hotpage::WaitType::ALL
        .iter()
        .map(|&wait_type| {
            let totals = snapshot.wait(wait_type);
            vec![
                Value::Text(wait_type.name().to_string()),
                Value::Int(totals.count as i64),
                Value::Float(totals.wait_ns as f64 / 1e6),
                Value::Float(totals.wait_ns_max as f64 / 1e6),
            ]
        })
        .collect())
}

fn activity_columns() -> Vec<(&'static str, SqlType)> {
    vec![
        ("pid", SqlType::Int),
        ("datname", SqlType::Text),
        ("backend_start", SqlType::TimestampTz),
        ("query_start", SqlType::TimestampTz),
        ("state", SqlType::Text),
        ("wait_event_type", SqlType::Text),
        ("wait_event", SqlType::Text),
        ("wait_resource", SqlType::Text),
        ("query", SqlType::Text),
    ]
}

fn activity_rows(db: &SqlDatabase, _args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    Ok(db
        .activities()
        .iter()
        .map(|a| {
            let state = lock(&a.state).clone();
            vec![
                Value::Int(i64::from(a.pid)),
                Value::Text("hotpage".into()),
                Value::Timestamp(a.backend_start),
                state.query_start.map_or(Value::Null, Value::Timestamp),
                Value::Text(if state.active { "active" } else { "idle" }.into()),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Text(state.query),
            ]
        })
        .collect())
}
