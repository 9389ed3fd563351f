//! `hotpage_log`: the log's records by kind, from the report `hotpage inspect log` prints
//! (`Database::log_report`).

use super::bigint;
use crate::error::SqlResult;
use crate::session::{SqlDatabase, engine_error};
use crate::types::SqlType;
use crate::value::Value;

pub(super) fn columns() -> Vec<(&'static str, SqlType)> {
    vec![
        ("kind", SqlType::Text),
        ("records", SqlType::BigInt),
        ("bytes", SqlType::BigInt),
        ("records_since_checkpoint", SqlType::BigInt),
        ("bytes_since_checkpoint", SqlType::BigInt),
    ]
}

pub(super) fn rows(db: &SqlDatabase, _args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    let engine = db.engine();
    // A database opened without a log has none to show, whatever segment files an earlier
    // open with a log left behind.
    if engine.log_end().is_none() {
        return Ok(Vec::new());
    }
    let report = engine.log_report().map_err(engine_error)?;
    Ok(report
        .summary
        .kinds
        .iter()
        .map(|k| {
            vec![
                Value::Text(k.kind.to_string()),
                bigint(k.records),
                bigint(k.bytes),
                bigint(k.records_since_checkpoint),
                bigint(k.bytes_since_checkpoint),
            ]
        })
        .collect())
}
