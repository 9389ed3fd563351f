//! Seed 001: the tables V1-V6, seconds and ratio to V1.

use super::a000::commands;
use super::bench::{Config, stress_argv};
use super::seeds::s001;
use super::{Bench, cpus, ratio};
use crate::CliError;
use crate::report_html;
use hotpage_report::{Block, Section, Table};
use hotpage_workload::Report;

/// Rows per session at scale 1 (the article: 10,000).
const ROWS: u64 = 1_000;
/// The article's Status 'CREATED' (nvarchar, 14 bytes) and CreateDate (8 bytes).
const ROW_BYTES: usize = 24;

/// Each version's design and its options.
const DESIGNS: [(&str, &[&str]); 6] = [
    ("identity", &[]),
    ("identity-flow-control", &[]),
    ("heap-nc-identity", &[]),
    ("guid", &[]),
    ("hash-prefix", &["--buckets", "16"]),
    ("memory", &[]),
];

pub fn run(bench: &mut Bench) -> Result<Section, CliError> {
    let durability = bench.durability("none");
    let rows = bench.rows(ROWS, 1);
    let configs: Vec<Config> = DESIGNS
        .iter()
        .zip(s001::ROWS)
        .map(|((design, extra), (version, ..))| {
            let argv = stress_argv(design, s001::SESSIONS, rows, ROW_BYTES, &durability, extra);
            Config::new(format!("{version} {design}"), &argv)
        })
        .collect();
    let reports = bench.measure("001", &configs, None)?;
    let mut blocks = vec![
        Block::Text(format!(
            "Seed 001 runs ostress -n200 -r10000 (200 threads, one INSERT per call) against six \
             versions of one table (crates/hotpage-sql/tests/tsql/seed001_last_page_insert.sql \
             holds their T-SQL). Each version is a hotpage design: V1 identity, V2 \
             identity-flow-control (OPTIMIZE_FOR_SEQUENTIAL_KEY), V3 heap-nc-identity \
             (nonclustered PK), V4 guid, V5 hash-prefix with 16 buckets, V6 memory. Here: 200 \
             sessions x {rows} rows of {ROW_BYTES} bytes, durability {durability}. Seconds \
             differ with the row count; compare the ratios to V1."
        )),
        Block::Preformatted(commands(&configs)),
        Block::Table(table(&reports)),
        Block::Text(format!(
            "Here: V4 (guid) took {}x V1's time and V5 (hash-prefix) {}x (the article: 0.48 and \
             0.47); V6 (memory) {}x (0.51).",
            ratio(reports[3].elapsed_s, reports[0].elapsed_s),
            ratio(reports[4].elapsed_s, reports[0].elapsed_s),
            ratio(reports[5].elapsed_s, reports[0].elapsed_s)
        )),
        Block::Note(format!(
            "The article had 16 CPUs and this machine has {}. V4 and V5 halved the article's \
             time because 16 cores could insert in parallel once the last page stopped \
             serialising them; with 200 threads on {} cores there is little parallelism to \
             free, so the spread designs cannot gain as much here, and V2's gate (admitting as \
             many sessions as CPUs) admits only {}.",
            cpus(),
            cpus(),
            cpus()
        )),
    ];
    if durability == "none" && !bench.durability_given() {
        blocks.push(Block::Note(
            "Durability none: the article's top wait was WRITELOG for every version, and with a \
             synchronous log on 2 cores our designs all land within noise of V1 \
             (docs/BENCHMARKS.md). Without a log the latch differences show; --durability sync \
             runs it as the article did."
                .into(),
        ));
    }
    let runs: Vec<(String, &Report)> = configs
        .iter()
        .map(|c| c.label.clone())
        .zip(&reports)
        .collect();
    blocks.extend(report_html::run_charts("001", "rows/s by version", &runs));
    Ok(Section {
        heading: "001: V1-V6, seconds and ratio to V1".into(),
        blocks,
    })
}

fn table(reports: &[Report]) -> Table {
    let base = &reports[0];
    let base_s = s001::ROWS[0].2;
    let rows = reports
        .iter()
        .zip(s001::ROWS)
        .map(|(r, (version, table, seconds, waits))| {
            vec![
                version.to_string(),
                table.to_string(),
                r.target.design.clone(),
                format!("{:.3}", r.elapsed_s),
                ratio(r.elapsed_s, base.elapsed_s),
                format!("{seconds:.0}"),
                ratio(seconds, base_s),
                r.top_wait().unwrap_or("none").to_string(),
                waits.to_string(),
            ]
        })
        .collect();
    Table {
        caption: Some(format!("Ours beside {}", s001::SOURCE)),
        header: [
            "version",
            "article table",
            "design",
            "seconds",
            "/ V1",
            "article s",
            "article / V1",
            "our top wait",
            "article's top waits",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect(),
        rows,
    }
}
