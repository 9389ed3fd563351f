//! The arithmetic of a server's waits, kept apart from the connections so that tests can
//! hold it to its numbers:
//! - sampled waits (PostgreSQL's `pg_stat_activity`, ASH-style): each event's share of
//!   the samples, and the session time it stands for;
//! - a hotpage server's `hotpage_wait_stats` and `hotpage_hot_pages` rows, as text (the
//!   simple protocol), turned into the report's waits and hot pages.

use hotpage_workload::report::{HotPage, Wait};
use std::collections::BTreeMap;
use std::time::Duration;

/// How often `pg_stat_activity` is sampled (the ASH extensions' usual period is 10 ms to
/// 1 s; a run of a few seconds needs the short end to get hundreds of samples).
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(10);

/// The label of a sampled backend: `wait_event_type:wait_event`, or `CPU` when it waits
/// on nothing (an active backend with no wait event is running or runnable, which is how
/// pg_wait_sampling, pgsentinel and PASH-Viewer show it).
pub(crate) fn event_label(wait_event_type: Option<&str>, wait_event: Option<&str>) -> String {
    match (wait_event_type, wait_event) {
        (None, _) => "CPU".to_string(),
        (Some(kind), None) => kind.to_string(),
        (Some(kind), Some(event)) => format!("{kind}:{event}"),
    }
}

/// The report's waits from samples: per event, `count` is its samples, `wait_ms` the
/// session time they stand for (samples × the mean interval between samples, as ASH
/// estimates DB time), and `pct_of_wait_time` its share of all samples, so the shares
/// sum to 100 %. Most samples first (ties by name). Samples say nothing about single
/// waits, so `avg_us` and `max_ms` are 0.
pub fn sampled_waits(samples: &BTreeMap<String, u64>, interval_ms: f64) -> Vec<Wait> {
    let total: u64 = samples.values().sum();
    let mut waits: Vec<Wait> = samples
        .iter()
        .filter(|(_, count)| **count > 0)
        .map(|(label, &count)| Wait {
            wait_type: label.clone(),
            count,
            wait_ms: count as f64 * interval_ms,
            avg_us: 0.0,
            max_ms: 0.0,
            pct_of_wait_time: 100.0 * count as f64 / total.max(1) as f64,
        })
        .collect();
    waits.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.wait_type.cmp(&b.wait_type))
    });
    waits
}

/// One row of a simple-protocol result: each column as text, `None` for NULL.
pub(crate) type TextRow = Vec<Option<String>>;

fn column<'a>(row: &'a TextRow, index: usize, name: &str) -> Result<&'a str, String> {
    row.get(index)
        .and_then(|value| value.as_deref())
        .ok_or_else(|| format!("column {name} is missing or NULL"))
}

fn number<T: std::str::FromStr>(row: &TextRow, index: usize, name: &str) -> Result<T, String> {
    let text = column(row, index, name)?;
    text.trim()
        .parse()
        .map_err(|_| format!("column {name} is not a number: {text:?}"))
}

/// `SELECT wait_type, waiting_tasks_count, wait_time_ms, max_wait_time_ms FROM
/// hotpage_wait_stats` as the report's waits: the types with at least one wait, most time
/// first, each with its share of all wait time (as the embedded report computes it).
pub(crate) fn view_waits(rows: &[TextRow]) -> Result<Vec<Wait>, String> {
    let mut waits = Vec::new();
    for row in rows {
        let count: i64 = number(row, 1, "waiting_tasks_count")?;
        let wait_ms: f64 = number(row, 2, "wait_time_ms")?;
        if count <= 0 {
            continue;
        }
        waits.push(Wait {
            wait_type: column(row, 0, "wait_type")?.to_string(),
            count: count as u64,
            wait_ms,
            avg_us: wait_ms * 1000.0 / count as f64,
            max_ms: number(row, 3, "max_wait_time_ms")?,
            pct_of_wait_time: 0.0,
        });
    }
    let total_ms: f64 = waits.iter().map(|w| w.wait_ms).sum();
    for wait in &mut waits {
        wait.pct_of_wait_time = 100.0 * wait.wait_ms / total_ms.max(1e-12);
    }
    waits.sort_by(|a, b| b.wait_ms.total_cmp(&a.wait_ms));
    Ok(waits)
}

/// `SELECT page, page_type, level, table_name, waits, wait_time_ms FROM
/// hotpage_hot_pages` as the report's hot pages (at most `limit`), each page's share
/// taken of `wait_ms_total`, all waits' time.
pub(crate) fn view_hot_pages(
    rows: &[TextRow],
    wait_ms_total: f64,
    limit: usize,
) -> Result<Vec<HotPage>, String> {
    let mut pages = Vec::new();
    for row in rows.iter().take(limit) {
        let location = column(row, 0, "page")?;
        let (file, page) = location
            .split_once(':')
            .and_then(|(file, page)| Some((file.parse().ok()?, page.parse().ok()?)))
            .ok_or_else(|| format!("column page is not FILE:PAGE: {location:?}"))?;
        let wait_ms: f64 = number(row, 5, "wait_time_ms")?;
        let text = |index: usize| row.get(index).cloned().flatten();
        pages.push(HotPage {
            file,
            page,
            page_type: text(1).unwrap_or_else(|| "unknown".to_string()),
            level: text(2).and_then(|level| level.parse().ok()),
            table: text(3),
            waits: number::<i64>(row, 4, "waits")?.max(0) as u64,
            wait_ms,
            pct_of_wait_time: 100.0 * wait_ms / wait_ms_total.max(1e-12),
        });
    }
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(l, c)| (l.to_string(), *c)).collect()
    }

    fn row(values: &[Option<&str>]) -> TextRow {
        values.iter().map(|v| v.map(str::to_string)).collect()
    }

    #[test]
    fn a_backend_with_no_wait_event_is_on_cpu() {
        assert_eq!(event_label(None, None), "CPU");
        assert_eq!(
            event_label(Some("LWLock"), Some("BufferContent")),
            "LWLock:BufferContent"
        );
        assert_eq!(event_label(Some("IO"), None), "IO");
    }

    #[test]
    fn shares_are_each_events_part_of_all_samples_and_sum_to_100() {
        let waits = sampled_waits(
            &samples(&[
                ("CPU", 30),
                ("LWLock:BufferContent", 50),
                ("IO:WALSync", 20),
            ]),
            10.0,
        );
        let names: Vec<&str> = waits.iter().map(|w| w.wait_type.as_str()).collect();
        assert_eq!(names, ["LWLock:BufferContent", "CPU", "IO:WALSync"]);
        let pcts: Vec<f64> = waits.iter().map(|w| w.pct_of_wait_time).collect();
        assert_eq!(pcts, [50.0, 30.0, 20.0]);
        let sum: f64 = pcts.iter().sum();
        assert!((sum - 100.0).abs() < 1e-9);
        // Session time is samples x the interval between samples.
        assert_eq!(waits[0].count, 50);
        assert_eq!(waits[0].wait_ms, 500.0);
        assert_eq!(waits[2].wait_ms, 200.0);
    }

    #[test]
    fn shares_of_uneven_counts_still_sum_to_100() {
        let waits = sampled_waits(&samples(&[("a", 1), ("b", 1), ("c", 1)]), 9.5);
        let sum: f64 = waits.iter().map(|w| w.pct_of_wait_time).sum();
        assert!((sum - 100.0).abs() < 1e-9, "{sum}");
        assert!((waits[0].pct_of_wait_time - 100.0 / 3.0).abs() < 1e-9);
        // Ties keep a stable order: by name.
        assert_eq!(waits[0].wait_type, "a");
        assert_eq!(waits[0].wait_ms, 9.5);
    }

    #[test]
    fn no_samples_make_no_waits_and_no_division_by_zero() {
        assert!(sampled_waits(&BTreeMap::new(), 10.0).is_empty());
        assert!(sampled_waits(&samples(&[("CPU", 0)]), 10.0).is_empty());
    }

    #[test]
    fn the_wait_view_skips_types_without_waits_and_orders_by_time() {
        let rows = vec![
            row(&[Some("PAGELATCH_SH"), Some("0"), Some("0"), Some("0")]),
            row(&[Some("PAGELATCH_EX"), Some("10"), Some("5.0"), Some("2.5")]),
            row(&[Some("WRITELOG"), Some("5"), Some("15"), Some("4")]),
        ];
        let waits = view_waits(&rows).expect("parses");
        assert_eq!(waits.len(), 2);
        assert_eq!(waits[0].wait_type, "WRITELOG");
        assert_eq!(waits[0].pct_of_wait_time, 75.0);
        assert_eq!(waits[0].avg_us, 3000.0);
        assert_eq!(waits[1].count, 10);
        assert_eq!(waits[1].max_ms, 2.5);
        assert_eq!(waits[1].pct_of_wait_time, 25.0);
    }

    #[test]
    fn a_malformed_wait_view_row_is_an_error_not_a_panic() {
        let error = view_waits(&[row(&[Some("X"), Some("many"), Some("1"), Some("1")])])
            .expect_err("not a number");
        assert!(error.contains("waiting_tasks_count"), "{error}");
        assert!(view_waits(&[row(&[Some("X")])]).is_err());
    }

    #[test]
    fn hot_pages_parse_file_and_page_and_keep_nulls() {
        let rows = vec![
            row(&[
                Some("0:17"),
                Some("leaf"),
                Some("0"),
                Some("t"),
                Some("4"),
                Some("30"),
            ]),
            row(&[Some("1:9"), None, None, None, Some("1"), Some("10")]),
            row(&[Some("2:1"), None, None, None, Some("1"), Some("1")]),
        ];
        let pages = view_hot_pages(&rows, 40.0, 2).expect("parses");
        assert_eq!(pages.len(), 2, "the limit holds");
        assert_eq!((pages[0].file, pages[0].page), (0, 17));
        assert_eq!(pages[0].level, Some(0));
        assert_eq!(pages[0].table.as_deref(), Some("t"));
        assert_eq!(pages[0].pct_of_wait_time, 75.0);
        assert_eq!(pages[1].page_type, "unknown");
        assert_eq!(pages[1].table, None);
        let bad = view_hot_pages(
            &[row(&[Some("17"), None, None, None, Some("1"), Some("1")])],
            1.0,
            5,
        );
        assert!(bad.expect_err("no colon").contains("FILE:PAGE"));
    }
}
