//! The text form of a stress [`Report`]: the run's header, latency, the "Top waits" and
//! "Hottest pages" tables (shared with `hotpage inspect waits`), the table's shape and
//! the log, and the side-by-side summary of `--design all`. It only renders: every figure
//! comes from the typed report.

use crate::CliError;
use crate::output::right_align;
use comfy_table::Table;
use hotpage_workload::report::{HotPage, LATENCY_ROWS_ALL, LATENCY_SAMPLE_EVERY, Wait};
use hotpage_workload::{DesignName, Report};

/// Hottest pages the tables list.
const HOT_PAGES_SHOWN: usize = hotpage_workload::engine::HOT_PAGES_REPORTED;

const MIB: f64 = 1024.0 * 1024.0;

/// The run's first line: design, sessions, amount, rows, pages, files, warm-up.
fn header(r: &Report) -> String {
    let amount = match (r.duration_s, r.rows_per_session) {
        (Some(d), _) => format!("for {d} s"),
        (None, Some(rows)) => format!("x {rows} rows"),
        _ => String::new(),
    };
    let files = if r.target.files > 1 {
        format!(" in {} data files", r.target.files)
    } else {
        String::new()
    };
    let warmup = if r.warmup_s > 0.0 {
        format!(", after a {} s warm-up", r.warmup_s)
    } else {
        String::new()
    };
    // Through SQL the statement makes the rows (their size is not the plan's).
    let rows = if r.target.design.ends_with("(sql)") {
        "rows from the statement".to_string()
    } else {
        format!("{}-byte rows", r.row_bytes)
    };
    format!(
        "hotpage stress: design {}, {} sessions {amount}, {rows}, {}-byte pages{files}{warmup}",
        r.target.design, r.sessions, r.target.page_size
    )
}

/// Prints one design's report.
pub fn print_report(r: &Report) -> Result<(), CliError> {
    // A server measured over the wire (`--url`) has its own header and waits.
    if let Some(server) = &r.target.server {
        return crate::report_server::print_report(r, server);
    }
    outln!("{}", header(r))?;
    print_rate_and_latency(r)?;
    outln!()?;
    print_waits_and_pages(&r.target.waits, &r.target.hot_pages)?;
    outln!()?;
    print_shape(r)?;
    match &r.target.log {
        None => outln!("Log: none (--durability none: a crash empties the tables)")?,
        Some(log) => outln!(
            "Log ({}, batch {}): {:.1} MiB, {} flushes (fdatasync), {:.1} commits per flush",
            r.durability,
            r.batch,
            log.bytes as f64 / MIB,
            log.flushes,
            log.commits_per_flush
        )?,
    }
    Ok(())
}

/// The run's rows, rate and latency percentiles.
pub fn print_rate_and_latency(r: &Report) -> Result<(), CliError> {
    let lat = &r.latency_us;
    outln!(
        "rows {}   elapsed {:.3} s   {:.0} rows/s",
        r.rows_total,
        r.elapsed_s,
        r.rows_per_s
    )?;
    // Say what the percentiles are of: past each session's first rows, a sample (a report
    // saved before the driver sampled timed every row, and has no count).
    let timed = match lat.rows_timed {
        n if n == 0 || n >= r.rows_total => String::new(),
        n => format!(
            "; {n} of {} rows timed, past each session's first {LATENCY_ROWS_ALL} \
             about 1 in {LATENCY_SAMPLE_EVERY}",
            r.rows_total
        ),
    };
    outln!(
        "latency (us{timed}): p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
        lat.p50,
        lat.p99,
        lat.p999,
        lat.max
    )?;
    Ok(())
}

/// The table's shape: its index or heap pages, or a memory table's bytes; a heap's
/// free-space map.
fn print_shape(r: &Report) -> Result<(), CliError> {
    let heap = r
        .target
        .design
        .parse::<DesignName>()
        .is_ok_and(DesignName::is_heap);
    let index = &r.target.index;
    match &r.target.memory {
        None => outln!(
            "{}: {} levels, {} pages, leaf fill {:.1} %, {} page splits ({} in place), {} rows in the table",
            if heap {
                "Heap (pages, page fill)"
            } else {
                "Index"
            },
            index.levels,
            index.pages,
            index.avg_fill_pct,
            index.splits,
            index.splits_in_place,
            index.rows_in_table
        )?,
        Some(memory) => outln!(
            "Index: memory-optimized, no pages: {} rows, {:.1} MiB of keys and rows in memory; checkpoint file {} {:.1} MiB (closing appends the rest)",
            memory.rows,
            (memory.key_bytes + memory.row_bytes) as f64 / MIB,
            memory.file,
            memory.file_bytes as f64 / MIB
        )?,
    }
    if index.combine_rounds > 0 {
        outln!(
            "Combining at busy leaves: {} rows in {} latch holds, {:.1} rows per hold",
            index.combined_rows,
            index.combine_rounds,
            index.rows_per_combined_hold()
        )?;
    }
    if index.grouped_apply_batches > 0 {
        outln!(
            "Grouped apply (durable commits' rows in key order): {} rows in {} batches, {:.1} rows per batch",
            index.grouped_apply_rows,
            index.grouped_apply_batches,
            index.rows_per_grouped_apply()
        )?;
    }
    if heap {
        let fsm = &r.target.fsm;
        outln!(
            "Free-space map: {} updates, {} FSM_LATCH waits ({:.1} ms)",
            fsm.updates,
            fsm.waits,
            fsm.wait_ms
        )?;
    }
    Ok(())
}

/// `--design all`: rates and shapes side by side, as ratios to identity's.
pub fn print_summary(reports: &[(DesignName, Report)]) -> Result<(), CliError> {
    outln!("Summary (ratios to identity, same run)")?;
    let identity_rate = reports
        .iter()
        .find(|(name, _)| *name == DesignName::Identity)
        .map_or(0.0, |(_, r)| r.rows_per_s);
    let mut table = Table::new();
    table.set_header(vec![
        "design",
        "rows/s",
        "x identity",
        "p99 us",
        "top wait",
        "page fill %",
    ]);
    for (name, r) in reports {
        table.add_row(vec![
            name.to_string(),
            format!("{:.0}", r.rows_per_s),
            format!("{:.2}", r.rows_per_s / identity_rate.max(1e-9)),
            format!("{:.1}", r.latency_us.p99),
            r.top_wait().unwrap_or("none").to_string(),
            // Leaf fill for a B+tree, page fill for a heap; a memory table has no pages.
            if r.target.memory.is_none() {
                format!("{:.1}", r.target.index.avg_fill_pct)
            } else {
                "no pages".to_string()
            },
        ]);
    }
    right_align(&mut table, &[1, 2, 3, 5]);
    outln!("{table}")?;
    Ok(())
}

/// Prints the "Top waits" and "Hottest pages" tables of a report.
pub fn print_waits_and_pages(list: &[Wait], pages: &[HotPage]) -> Result<(), CliError> {
    outln!("Top waits")?;
    let total_ms: f64 = list.iter().map(|w| w.wait_ms).sum();
    let pct = |ms: f64| 100.0 * ms / total_ms.max(1e-12);
    let mut waits = Table::new();
    waits.set_header(vec![
        "wait type",
        "count",
        "total ms",
        "avg us",
        "max ms",
        "% of wait time",
    ]);
    if list.is_empty() {
        waits.add_row(vec!["(none)", "0", "0", "0", "0", "0"]);
    }
    for w in list {
        waits.add_row(vec![
            w.wait_type.clone(),
            w.count.to_string(),
            format!("{:.1}", w.wait_ms),
            format!("{:.1}", w.avg_us),
            format!("{:.2}", w.max_ms),
            format!("{:.1}", pct(w.wait_ms)),
        ]);
    }
    right_align(&mut waits, &[1, 2, 3, 4, 5]);
    outln!("{waits}")?;
    outln!()?;
    outln!("Hottest pages (file:page; waits of every type on the page)")?;
    let mut hot = Table::new();
    hot.set_header(vec![
        "page",
        "type",
        "table",
        "waits",
        "total ms",
        "% of wait time",
    ]);
    if pages.is_empty() {
        hot.add_row(vec!["(none)", "", "", "0", "0", "0"]);
    }
    for p in pages.iter().take(HOT_PAGES_SHOWN) {
        let page_type = match (p.page_type.as_str(), p.level) {
            ("inner", Some(level)) => format!("inner (level {level})"),
            ("", _) => "unknown".into(),
            (t, _) => t.to_string(),
        };
        hot.add_row(vec![
            format!("{}:{}", p.file, p.page),
            page_type,
            p.table.clone().unwrap_or_else(|| "-".into()),
            p.waits.to_string(),
            format!("{:.1}", p.wait_ms),
            format!("{:.1}", pct(p.wait_ms)),
        ]);
    }
    right_align(&mut hot, &[3, 4, 5]);
    outln!("{hot}")?;
    Ok(())
}
