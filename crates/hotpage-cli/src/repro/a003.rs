//! Seed 003: sequential against spread keys at 1, 2, 4 ... 64 sessions.

use super::a000::commands;
use super::bench::{Config, stress_argv};
use super::seeds::s003;
use super::{Bench, cpus, ratio};
use crate::CliError;
use hotpage_report::{Block, Chart, LineChart, Section, Series, Table};
use hotpage_workload::Report;

/// Rows of each run at scale 1, whatever its sessions (so every run does the same work).
const ROWS_TOTAL: u64 = 128_000;
/// The article's 70-byte row (4 bigint, 2 guid, 1 int, a date).
const ROW_BYTES: usize = 70;
/// The session counts.
const SESSIONS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Sequential, then spread: a clustered identity, and a key leading with a grouping value.
const DESIGNS: [&str; 2] = ["identity", "hash-prefix"];

pub fn run(bench: &mut Bench) -> Result<Section, CliError> {
    let durability = bench.durability("none");
    let total = bench.rows(ROWS_TOTAL, SESSIONS[SESSIONS.len() - 1].into());
    let mut configs = Vec::new();
    for sessions in SESSIONS {
        for design in DESIGNS {
            let rows = total / u64::from(sessions);
            let argv = stress_argv(design, sessions, rows, ROW_BYTES, &durability, &[]);
            configs.push(Config::new(format!("{design} x {sessions}"), &argv));
        }
    }
    let reports = bench.measure("003", &configs, None)?;
    let pairs: Vec<(&Report, &Report)> = reports
        .chunks(2)
        .filter_map(|pair| match pair {
            [sequential, spread] => Some((sequential, spread)),
            _ => None,
        })
        .collect();
    let ours = Table {
        caption: Some(
            "Ours: sequential (identity) against spread (hash-prefix, 16 buckets)".into(),
        ),
        header: [
            "sessions",
            "identity rows/s",
            "hash-prefix rows/s",
            "identity / hash-prefix",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect(),
        rows: SESSIONS
            .iter()
            .zip(&pairs)
            .map(|(sessions, (seq, spread))| {
                vec![
                    sessions.to_string(),
                    format!("{:.0}", seq.rows_per_s),
                    format!("{:.0}", spread.rows_per_s),
                    ratio(seq.rows_per_s, spread.rows_per_s),
                ]
            })
            .collect(),
    };
    let line = |name: &str, pick: &dyn Fn(&(&Report, &Report)) -> f64| {
        Series::new(
            name,
            SESSIONS
                .iter()
                .zip(&pairs)
                .map(|(s, pair)| (f64::from(*s), pick(pair)))
                .collect(),
        )
    };
    let chart = LineChart {
        title: "Scaling: rows/s by sessions, sequential vs spread keys (003)".into(),
        x_label: "sessions".into(),
        y_label: "rows/s".into(),
        x_log2: true,
        y_log10: false,
        series: vec![
            line("identity (sequential)", &|p| p.0.rows_per_s),
            line("hash-prefix (spread)", &|p| p.1.rows_per_s),
        ],
    };
    Ok(Section {
        heading: "003: sequential vs spread keys by sessions".into(),
        blocks: vec![
            Block::Text(format!(
                "Seed 003 measures single-row insert calls into a table clustered on a \
                 sequential key against one whose key leads with a grouping value. Here: \
                 identity against hash-prefix, {total} rows of {ROW_BYTES} bytes per run split \
                 over 1 to 64 sessions, durability {durability}. The article gives one figure \
                 per machine, not per session count: compare its ratio with ours at the \
                 highest session counts."
            )),
            Block::Preformatted(commands(&configs)),
            Block::Table(ours),
            Block::Text(reading(&pairs)),
            Block::Table(article_table()),
            Block::Chart(Chart::Lines(chart)),
            Block::Note(format!(
                "The article's point is that the penalty grows with cores and sockets (0.56 on \
                 4 cores, 0.30 on 10, 0.06 on 4 sockets): the last page's cache line moves \
                 between cores on every insert. This machine has {} CPUs in one socket, so \
                 past {} sessions the threads take turns instead of contending at once, and \
                 the curve cannot show the multi-socket collapse.",
                cpus(),
                cpus()
            )),
        ],
    })
}

/// The article's figures: one per machine.
fn article_table() -> Table {
    Table {
        caption: Some(format!("The article: {}", s003::SOURCE)),
        header: [
            "machine",
            "sequential rows/s",
            "spread rows/s",
            "sequential / spread",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect(),
        rows: s003::ROWS
            .iter()
            .map(|(machine, seq, spread)| {
                vec![
                    machine.to_string(),
                    format!("{seq:.0}"),
                    format!("{spread:.0}"),
                    ratio(*seq, *spread),
                ]
            })
            .collect(),
    }
}

/// The range of identity / hash-prefix over the session counts, from 2 sessions on.
fn reading(pairs: &[(&Report, &Report)]) -> String {
    let ratios: Vec<f64> = pairs
        .iter()
        .skip(1)
        .filter(|(_, spread)| spread.rows_per_s > 0.0)
        .map(|(seq, spread)| seq.rows_per_s / spread.rows_per_s)
        .collect();
    if ratios.is_empty() {
        return "Here: no ratio (a run inserted nothing).".into();
    }
    let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let high = ratios.iter().copied().fold(0.0, f64::max);
    let verdict = if low >= 1.0 {
        "The sequential key kept up with the spread one at every session count here: the \
         penalty the article measured comes from cores contending at once (see the note)."
    } else if high < 1.0 {
        "The sequential key was slower at every session count, as in the article."
    } else {
        "Neither design was ahead at every session count: on this machine the difference is \
         within the run-to-run spread."
    };
    format!(
        "Here, from 2 sessions on: identity / hash-prefix between {low:.2} and {high:.2} (the \
         article: 0.56 on 4 cores, 0.30 on 10, 0.06 on 4 sockets). {verdict}"
    )
}
