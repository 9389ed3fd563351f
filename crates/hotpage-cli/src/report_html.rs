//! Workload reports as `hotpage-report` blocks: the run tables and the four charts (wait
//! time by type, latency percentiles, hottest pages, rows/s). `stress --html` and `repro`
//! build their documents from these; any command with `hotpage_workload::Report`s can.

use crate::CliError;
use hotpage_report::{
    Bar, BarChart, Block, Chart, Document, LatencyChart, LatencyRun, Percentiles, Section, Segment,
    StackedBar, StackedBarChart, Table,
};
use hotpage_workload::Report;
use std::path::Path;

/// Hot pages drawn per run (the text report lists ten as well).
const HOT_PAGES_SHOWN: usize = 10;

/// A run's latency percentiles, for the latency chart.
pub fn percentiles(report: &Report) -> Percentiles {
    let l = report.latency_us;
    Percentiles {
        p50: l.p50,
        p90: l.p90,
        p99: l.p99,
        p999: l.p999,
        max: l.max,
    }
}

/// A run's wait time by type as one stacked bar (milliseconds, summed over sessions).
pub fn waits_bar(label: &str, report: &Report) -> StackedBar {
    StackedBar {
        label: label.to_string(),
        segments: report
            .target
            .waits
            .iter()
            .map(|w| Segment {
                name: w.wait_type.clone(),
                value: w.wait_ms,
            })
            .collect(),
    }
}

/// Wait time by type, one bar per run.
pub fn waits_chart(title: &str, runs: &[(String, &Report)]) -> Chart {
    Chart::StackedBars(StackedBarChart {
        title: title.to_string(),
        y_label: "wait time, ms (summed over sessions)".into(),
        bars: runs.iter().map(|(name, r)| waits_bar(name, r)).collect(),
    })
}

/// Latency percentiles, one line per run.
pub fn latency_chart(title: &str, runs: &[(String, &Report)]) -> Chart {
    Chart::Latency(LatencyChart {
        title: title.to_string(),
        runs: runs
            .iter()
            .map(|(name, r)| LatencyRun {
                name: name.clone(),
                percentiles: percentiles(r),
            })
            .collect(),
    })
}

/// rows/s, one bar per run.
pub fn rows_per_s_chart(title: &str, runs: &[(String, &Report)]) -> Chart {
    Chart::Bars(BarChart {
        title: title.to_string(),
        value_label: "rows/s".into(),
        bars: runs
            .iter()
            .map(|(name, r)| Bar {
                label: name.clone(),
                value: r.rows_per_s,
            })
            .collect(),
    })
}

/// The three charts every comparison of runs shows: rows/s (titled `rows_title`), wait
/// time by type and latency percentiles, each title ending in `(tag)`.
pub fn run_charts(tag: &str, rows_title: &str, runs: &[(String, &Report)]) -> [Block; 3] {
    [
        Block::Chart(rows_per_s_chart(&format!("{rows_title} ({tag})"), runs)),
        Block::Chart(waits_chart(&format!("Wait time by type ({tag})"), runs)),
        Block::Chart(latency_chart(&format!("Latency percentiles ({tag})"), runs)),
    ]
}

/// The pages waited on most in one run, hottest on top.
pub fn hot_pages_chart(title: &str, report: &Report) -> Chart {
    Chart::Bars(BarChart {
        title: title.to_string(),
        value_label: "time waited on the page, ms".into(),
        bars: report
            .target
            .hot_pages
            .iter()
            .take(HOT_PAGES_SHOWN)
            .map(|p| {
                let kind = match p.level {
                    Some(level) if level > 0 => format!("{} (level {level})", p.page_type),
                    _ => p.page_type.clone(),
                };
                Bar {
                    label: format!("{}:{} {kind}", p.file, p.page),
                    value: p.wait_ms,
                }
            })
            .collect(),
    })
}

/// One row per run: what it did and what it measured.
pub fn runs_table(caption: &str, runs: &[(String, &Report)]) -> Table {
    let header = [
        "run",
        "sessions",
        "rows",
        "elapsed s",
        "rows/s",
        "p50 µs",
        "p90 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
        "top wait",
        "wait ms",
        "pages",
        "fill %",
    ];
    Table {
        caption: Some(caption.to_string()),
        header: header.iter().map(|h| (*h).to_string()).collect(),
        rows: runs
            .iter()
            .map(|(name, r)| {
                let l = r.latency_us;
                let wait_ms = r.target.waits.iter().fold(0.0, |t, w| t + w.wait_ms);
                vec![
                    name.clone(),
                    r.sessions.to_string(),
                    r.rows_total.to_string(),
                    format!("{:.3}", r.elapsed_s),
                    format!("{:.0}", r.rows_per_s),
                    format!("{:.1}", l.p50),
                    format!("{:.1}", l.p90),
                    format!("{:.1}", l.p99),
                    format!("{:.1}", l.p999),
                    format!("{:.1}", l.max),
                    r.top_wait().unwrap_or("none").to_string(),
                    format!("{wait_ms:.1}"),
                    r.target.index.pages.to_string(),
                    format!("{:.1}", r.target.index.avg_fill_pct),
                ]
            })
            .collect(),
    }
}

/// A section with a run table and the charts: rows/s (for several runs), waits, latency,
/// and each run's hottest pages (for runs that waited on pages).
pub fn runs_section(heading: &str, runs: &[(String, &Report)]) -> Section {
    let mut blocks = vec![Block::Table(runs_table("Runs", runs))];
    if runs.len() > 1 {
        blocks.push(Block::Chart(rows_per_s_chart("rows/s by run", runs)));
    }
    blocks.push(Block::Chart(waits_chart("Wait time by type", runs)));
    blocks.push(Block::Chart(latency_chart(
        "Latency of one insert: percentiles",
        runs,
    )));
    for (name, report) in runs {
        if runs.len() == 1 || !report.target.hot_pages.is_empty() {
            blocks.push(Block::Chart(hot_pages_chart(
                &format!("Hottest pages: {name}"),
                report,
            )));
        }
    }
    Section {
        heading: heading.to_string(),
        blocks,
    }
}

/// The machine and date line under a report's title.
pub fn subtitle(command: &str) -> String {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!(
        "{command} · hotpage {} · {cores} CPUs · {} UTC",
        env!("CARGO_PKG_VERSION"),
        utc_timestamp(seconds)
    )
}

/// `YYYY-MM-DD HH:MM` of a Unix time (UTC), without a date crate.
fn utc_timestamp(unix_s: u64) -> String {
    let days = unix_s / 86_400;
    let (hour, minute) = ((unix_s % 86_400) / 3600, (unix_s % 3600) / 60);
    // Howard Hinnant's days-to-civil algorithm.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}")
}

/// Writes `document` to `path`; a failure is exit 1 with the path in the message.
/// Refuses an `--html` path that cannot be written, before the run it would report on:
/// found afterwards, the whole run was lost to it.
pub fn check_path(path: &Path) -> Result<(), CliError> {
    if path.as_os_str().is_empty() || path.is_dir() {
        return Err(CliError::usage(format!(
            "--html '{}' must name a file",
            path.display()
        )));
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent
        && !parent.is_dir()
    {
        return Err(CliError::usage(format!(
            "--html '{}': the directory {} does not exist",
            path.display(),
            parent.display()
        )));
    }
    Ok(())
}

pub fn write(document: &Document, path: &Path) -> Result<(), CliError> {
    hotpage_report::write_html(document, path).map_err(|e| CliError::failure(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_timestamps_are_civil_dates() {
        assert_eq!(utc_timestamp(0), "1970-01-01 00:00");
        assert_eq!(utc_timestamp(1_795_542_420), "2026-11-24 17:47");
        assert_eq!(utc_timestamp(951_782_400), "2000-02-29 00:00");
    }
}
