//! `hotpage_wait_stats` and `hotpage_hot_pages`: the engine's wait statistics
//! (`Database::stats`), by type and by page.

use super::{bigint, ms, text_or_null};
use crate::error::SqlResult;
use crate::session::{SqlDatabase, engine_error};
use crate::types::SqlType;
use crate::value::Value;
use hotpage::{PageId, PageLocation, WaitType};

pub(super) fn wait_stats_columns() -> Vec<(&'static str, SqlType)> {
    vec![
        ("wait_type", SqlType::Text),
        ("waiting_tasks_count", SqlType::BigInt),
        ("wait_time_ms", SqlType::Double),
        ("max_wait_time_ms", SqlType::Double),
        ("signal_wait_time_ms", SqlType::Double),
    ]
}

/// `sys.dm_os_wait_stats`'s figures: cumulative since open or the last reset
/// (`SELECT hotpage_reset_wait_stats()`).
pub(super) fn wait_stats_rows(db: &SqlDatabase, _args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    let snapshot = db.engine().stats();
    Ok(WaitType::ALL
        .iter()
        .map(|&wait_type| {
            let totals = snapshot.wait(wait_type);
            vec![
                Value::Text(wait_type.name().to_string()),
                bigint(totals.count),
                ms(totals.wait_ns),
                ms(totals.wait_ns_max),
                // SQL Server's time from a wait's end to getting a CPU back: hotpage does
                // not see it, so it is unknown (NULL), never a made-up 0.
                Value::Null,
            ]
        })
        .collect())
}

pub(super) fn hot_pages_columns() -> Vec<(&'static str, SqlType)> {
    vec![
        ("page", SqlType::Text),
        ("page_type", SqlType::Text),
        ("level", SqlType::Int),
        ("table_name", SqlType::Text),
        ("waits", SqlType::BigInt),
        ("wait_time_ms", SqlType::Double),
    ]
}

/// The pages with waits, hottest first, each with the table that owns it (as the stress
/// report's "Hottest pages" finds it: one walk of each table).
pub(super) fn hot_pages_rows(db: &SqlDatabase, _args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    let engine = db.engine();
    let hot = engine.stats().hot_pages;
    let page_ids: Vec<PageId> = hot.iter().map(|(page_id, _)| *page_id).collect();
    let owners = engine.page_owners(&page_ids).map_err(engine_error)?;
    Ok(hot
        .iter()
        .zip(owners)
        .map(|((page_id, waits), owner)| {
            vec![
                Value::Text(PageLocation::of(*page_id).to_string()),
                text_or_null(owner.as_ref().map(|o| o.page_type.name().to_string())),
                owner
                    .as_ref()
                    .map_or(Value::Null, |o| Value::Int(i64::from(o.level))),
                text_or_null(owner.map(|o| o.table)),
                bigint(waits.count),
                ms(waits.wait_ns),
            ]
        })
        .collect())
}
