//! Seed 000: identity against hash partitioning (8) and a bit-reversed sequence (cache
//! 10,000): rows/s and page-latch waits.

use super::bench::{Config, stress_argv};
use super::seeds::s000;
use super::{Bench, ratio, wait_count, wait_ms};
use crate::CliError;
use crate::report_html;
use hotpage_report::{Block, Section, Table};
use hotpage_workload::Report;

/// Rows per session at scale 1 (the article: 99,999).
const ROWS: u64 = 2_000;
/// The article's `col1 VARCHAR(50)` holding 'testing heavy'.
const ROW_BYTES: usize = 16;

pub fn run(bench: &mut Bench) -> Result<Section, CliError> {
    let durability = bench.durability("none");
    let rows = bench.rows(ROWS, 1);
    let designs: [(&str, &[&str]); 3] = [
        ("identity", &[]),
        ("hash-partition", &["--partitions", "8"]),
        ("bit-reverse", &["--cache", "10000"]),
    ];
    let configs: Vec<Config> = designs
        .iter()
        .map(|(design, extra)| {
            let argv = stress_argv(design, s000::SESSIONS, rows, ROW_BYTES, &durability, extra);
            Config::new(*design, &argv)
        })
        .collect();
    let reports = bench.measure("000", &configs, None)?;
    let mut blocks = vec![
        Block::Text(format!(
            "Seed 000 inserts one row per call from 120 sessions into HeavyInsert (clustered \
             on an identity), HeavyInsert_Hash (8 hash partitions) and HeavyInsert_BitReversal \
             (a sequence with cache 10,000, bits reversed). Here: designs identity, \
             hash-partition and bit-reverse, 120 sessions x {rows} rows of {ROW_BYTES} bytes, \
             durability {durability}. Ratios are to identity in both columns: the article's \
             speed-up is its identity time over the design's time."
        )),
        Block::Preformatted(commands(&configs)),
        Block::Table(table(&reports)),
        Block::Text(reading(&reports)),
    ];
    blocks.extend(notes(bench, &durability, &reports));
    let runs: Vec<(String, &Report)> = configs
        .iter()
        .map(|c| c.label.clone())
        .zip(&reports)
        .collect();
    blocks.extend(report_html::run_charts("000", "rows/s by design", &runs));
    blocks.push(Block::Chart(report_html::hot_pages_chart(
        "Hottest pages of identity (000)",
        &reports[0],
    )));
    Ok(Section {
        heading: "000: identity vs hash partitions vs bit reversal".into(),
        blocks,
    })
}

/// The commands, one a line.
pub(super) fn commands(configs: &[Config]) -> String {
    configs
        .iter()
        .map(Config::command)
        .collect::<Vec<_>>()
        .join("\n")
}

fn table(reports: &[Report]) -> Table {
    let base = &reports[0];
    let (_, base_s, base_waits, _) = s000::ROWS[0];
    let rows = reports
        .iter()
        .zip(s000::ROWS)
        .map(|(r, (name, seconds, waits_avg, _))| {
            vec![
                r.target.design.clone(),
                name.to_string(),
                format!("{:.0}", r.rows_per_s),
                ratio(r.rows_per_s, base.rows_per_s),
                format!("{seconds:.1}"),
                ratio(base_s, seconds),
                wait_count(r, "PAGELATCH").to_string(),
                format!("{:.1}", wait_ms(r, "PAGELATCH")),
                ratio(wait_ms(r, "PAGELATCH"), wait_ms(base, "PAGELATCH")),
                format!("{waits_avg:.0}"),
                ratio(waits_avg, base_waits),
            ]
        })
        .collect();
    Table {
        caption: Some(format!("Ours beside {}", s000::SOURCE)),
        header: [
            "design",
            "article table",
            "rows/s",
            "× identity",
            "article s",
            "article × identity",
            "PAGELATCH waits",
            "PAGELATCH ms",
            "ms ÷ identity",
            "article latch waits",
            "article ÷ identity",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect(),
        rows,
    }
}

/// What this run showed, in one sentence, from its own figures.
fn reading(reports: &[Report]) -> String {
    let base = &reports[0];
    let rate = |r: &Report| ratio(r.rows_per_s, base.rows_per_s);
    let latch = |r: &Report| ratio(wait_ms(r, "PAGELATCH"), wait_ms(base, "PAGELATCH"));
    format!(
        "Here: hash-partition ran at {}x identity's rows/s and bit-reverse at {}x (the article: \
         2.41x and 1.33x); their page-latch wait time was {}x and {}x identity's (the \
         article's page-latch waits: 0.06x and 0.01x).",
        rate(&reports[1]),
        rate(&reports[2]),
        latch(&reports[1]),
        latch(&reports[2])
    )
}

fn notes(bench: &Bench, durability: &str, reports: &[Report]) -> Vec<Block> {
    let mut notes = vec![Block::Note(format!(
        "This machine has {} CPUs; the article had 4 cores with hyper-threading. With 120 \
         threads on few cores most of a latch wait is a holder that the OS has descheduled, \
         so wait times here overstate what the latch itself costs, and rows/s gains are \
         smaller than on a machine where the sessions really run at once.",
        super::cpus()
    ))];
    if durability == "none" && !bench.durability_given() {
        notes.push(Block::Note(
            "Durability none (this article's default here): the article's runs were durable, \
             but on 2 cores a synchronous log makes every design wait on fdatasync and hides \
             the latch difference (docs/BENCHMARKS.md, \"Every design at 64 and 200 \
             sessions\"). --durability sync runs it durably."
                .into(),
        ));
    }
    let identity = wait_ms(&reports[0], "PAGELATCH");
    if identity <= 0.0 {
        notes.push(Block::Note(
            "identity waited on no page latch in this run, so the latch ratios have no base."
                .into(),
        ));
    }
    notes
}
