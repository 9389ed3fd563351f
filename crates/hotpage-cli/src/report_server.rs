//! The text report of a run against a PostgreSQL-wire server (`hotpage stress --url`):
//! the same rate and latency lines as an embedded run, then the server's waits where an
//! embedded run shows its "Top waits": a hotpage server's own wait statistics and hottest
//! pages, or PostgreSQL's `pg_stat_activity` samples as each event's share.

use crate::CliError;
use crate::output::right_align;
use crate::report_text::{print_rate_and_latency, print_waits_and_pages};
use comfy_table::Table;
use hotpage_workload::Report;
use hotpage_workload::report::{ServerFigures, Wait};

/// Prints the report of a run against `server`.
pub fn print_report(r: &Report, server: &ServerFigures) -> Result<(), CliError> {
    let amount = match (r.duration_s, r.rows_per_session) {
        (Some(d), _) => format!("for {d} s"),
        (None, Some(rows)) => format!("x {rows} statements"),
        _ => String::new(),
    };
    let warmup = if r.warmup_s > 0.0 {
        format!(", after a {} s warm-up", r.warmup_s)
    } else {
        String::new()
    };
    outln!(
        "hotpage stress: {} server at {}, {} sessions {amount}, batch {}, {}{warmup}",
        server.kind,
        server.url,
        r.sessions,
        r.batch,
        r.durability
    )?;
    outln!("server: {}", server.version)?;
    print_rate_and_latency(r)?;
    outln!()?;
    if server.waits_source == "pg_stat_activity" {
        print_sampled_waits(&r.target.waits, server)?;
    } else {
        outln!("Waits from the server's {}", server.waits_source)?;
        print_waits_and_pages(&r.target.waits, &r.target.hot_pages)?;
    }
    if let Some(error) = &server.waits_error {
        outln!("Waits incomplete: {error}")?;
    }
    Ok(())
}

/// The "Top waits" of a sampled server: each event's samples and share.
fn print_sampled_waits(list: &[Wait], server: &ServerFigures) -> Result<(), CliError> {
    outln!(
        "Top waits (pg_stat_activity sampled every {:.1} ms, {} samples; the run's active \
         sessions by wait event, CPU = active with no wait event)",
        server.sample_interval_ms,
        server.sample_rounds
    )?;
    let mut table = Table::new();
    table.set_header(vec![
        "wait event",
        "samples",
        "est. session ms",
        "% of samples",
    ]);
    if list.is_empty() {
        table.add_row(vec!["(no active session sampled)", "0", "0", "0"]);
    }
    for w in list {
        table.add_row(vec![
            w.wait_type.clone(),
            w.count.to_string(),
            format!("{:.0}", w.wait_ms),
            format!("{:.1}", w.pct_of_wait_time),
        ]);
    }
    right_align(&mut table, &[1, 2, 3]);
    outln!("{table}")?;
    Ok(())
}
