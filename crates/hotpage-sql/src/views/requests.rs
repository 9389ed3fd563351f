//! `hotpage_exec_requests` (T-SQL's `sys.dm_exec_requests`): the sessions running a
//! statement now, from the same rows as `pg_stat_activity`, in SQL Server's names and forms.

use super::activity;
use crate::error::SqlResult;
use crate::session::SqlDatabase;
use crate::types::SqlType;
use crate::value::Value;

/// The database id that `wait_resource` names (`db:file:page`): there is one database.
const DATABASE_ID: i64 = 1;

pub(super) fn columns() -> Vec<(&'static str, SqlType)> {
    vec![
        ("session_id", SqlType::Int),
        ("status", SqlType::Text),
        ("command", SqlType::Text),
        ("wait_type", SqlType::Text),
        ("wait_time", SqlType::Double),
        ("wait_resource", SqlType::Text),
        ("sql_text", SqlType::Text),
    ]
}

/// One row per active session of `pg_stat_activity`: `suspended` while it waits, else
/// `running`; `wait_resource` as `db:file:page`; `command` the statement's first word.
pub(super) fn rows(db: &SqlDatabase, args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    let activity = activity::rows(db, args)?;
    Ok(activity
        .into_iter()
        .filter(|row| row.get(4) == Some(&Value::Text("active".into())))
        .map(|row| {
            let at = |i: usize| row.get(i).cloned().unwrap_or(Value::Null);
            let wait_type = at(6);
            let status = if wait_type.is_null() {
                "running"
            } else {
                "suspended"
            };
            let resource = match at(7) {
                Value::Text(page) => Value::Text(format!("{DATABASE_ID}:{page}")),
                _ => Value::Null,
            };
            let query = at(9);
            let command = match &query {
                Value::Text(q) => Value::Text(
                    q.split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_uppercase(),
                ),
                _ => Value::Null,
            };
            vec![
                at(0),
                Value::Text(status.into()),
                command,
                wait_type,
                at(8),
                resource,
                query,
            ]
        })
        .collect())
}
