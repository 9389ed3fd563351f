//! Seed 002: the heap. Pages, fill and free-space-map updates per row size (one session),
//! then free-space-map waits from 1 to 64 sessions, with 1 data file and with 4.

use super::a000::commands;
use super::bench::{Config, stress_argv};
use super::seeds::s002;
use super::{Bench, cpus, ratio, wait_count, wait_ms};
use crate::CliError;
use hotpage_report::{Block, Chart, LineChart, Section, Series, Table};
use hotpage_workload::Report;

/// Rows per session of the sessions part at scale 1 (the article: 10,000).
const SESSION_ROWS: u64 = 5_000;
/// Row size of the sessions part (the article's customer rows, about this long).
const SESSION_ROW_BYTES: usize = 200;
/// Data files compared.
const FILES: [u32; 2] = [1, 4];

pub fn run(bench: &mut Bench) -> Result<Section, CliError> {
    let durability = bench.durability("none");
    let mut blocks = sizes(bench, &durability)?;
    blocks.extend(sessions(bench, &durability)?);
    blocks.push(Block::Note(format!(
        "The article's sessions ran on a small test system it calls imprecise; this machine \
         has {} CPUs, so beyond {} sessions the threads take turns, and a session's own \
         insert page (the map is read only when it fills) leaves few map latches to contend \
         for in runs this short: the waits here are few and vary from run to run. Whether 4 \
         files buy rows/s needs a machine with more cores; docs/BENCHMARKS.md has longer \
         runs.",
        cpus(),
        cpus()
    )));
    Ok(Section {
        heading: "002: the heap: page fill, free-space-map updates and waits".into(),
        blocks,
    })
}

/// One session, 10,000 rows (times the scale) of each size: pages, fill, map updates.
fn sizes(bench: &mut Bench, durability: &str) -> Result<Vec<Block>, CliError> {
    let rows = bench.rows(s002::SIZES_ROWS, 1);
    let configs: Vec<Config> = s002::SIZES
        .iter()
        .map(|(bytes, ..)| {
            let argv = stress_argv("heap", 1, rows, *bytes, durability, &[]);
            Config::new(format!("{bytes} B"), &argv)
        })
        .collect();
    // Pages, fill and updates of one session do not depend on timing: one round.
    let reports = bench.measure("002", &configs, Some(1))?;
    // The article's counts are for 10,000 rows; ours are scaled to the same.
    let per_article = s002::SIZES_ROWS as f64 / rows as f64;
    let table_rows = reports
        .iter()
        .zip(s002::SIZES)
        .map(|(r, (bytes, _, updates, pages, fill))| {
            let our_pages = r.target.index.pages as f64 * per_article;
            let our_updates = r.target.fsm.updates as f64 * per_article;
            vec![
                bytes.to_string(),
                format!("{our_pages:.0}"),
                format!("{pages:.0}"),
                ratio(our_pages, pages),
                format!("{:.2}", r.target.index.avg_fill_pct),
                format!("{fill:.2}"),
                format!("{our_updates:.0}"),
                format!("{updates:.0}"),
                ratio(our_updates, updates),
            ]
        })
        .collect();
    let header = [
        "row bytes",
        "pages",
        "article pages",
        "ratio",
        "fill %",
        "article fill %",
        "FSM updates",
        "article PFS updates",
        "ratio",
    ];
    let series = |name: &str, f: &dyn Fn(usize) -> f64| {
        Series::new(
            name,
            (0..reports.len())
                .map(|i| (s002::SIZES[i].0 as f64, f(i)))
                .collect(),
        )
    };
    let fill_chart = LineChart {
        title: "Heap page fill by row size (002)".into(),
        x_label: "row bytes".into(),
        y_label: "average page fill, %".into(),
        x_log2: true,
        y_log10: false,
        series: vec![
            series("hotpage", &|i| reports[i].target.index.avg_fill_pct),
            series("seed 002 (SQL Server)", &|i| s002::SIZES[i].4),
        ],
    };
    let updates_chart = LineChart {
        title: "Free-space-map updates per 10,000 rows by row size (002)".into(),
        x_label: "row bytes".into(),
        y_label: "map updates".into(),
        x_log2: true,
        y_log10: false,
        series: vec![
            series("hotpage FSM", &|i| {
                reports[i].target.fsm.updates as f64 * per_article
            }),
            series("seed 002 PFS", &|i| s002::SIZES[i].2),
        ],
    };
    Ok(vec![
        Block::Text(format!(
            "Row sizes: one session inserts {rows} rows of each size into an empty heap, \
             durability {durability}; counts are per 10,000 rows, as in the article, and come from one \
             round (they do not depend on timing)."
        )),
        Block::Preformatted(commands(&configs)),
        Block::Table(Table {
            caption: Some(format!("Ours beside {}", s002::SIZES_SOURCE)),
            header: header.iter().map(|s| (*s).to_string()).collect(),
            rows: table_rows,
        }),
        Block::Chart(Chart::Lines(fill_chart)),
        Block::Chart(Chart::Lines(updates_chart)),
    ])
}

/// 1 to 64 sessions, 1 and 4 files: free-space-map waits and elapsed time.
fn sessions(bench: &mut Bench, durability: &str) -> Result<Vec<Block>, CliError> {
    let rows = bench.rows(SESSION_ROWS, 1);
    let mut configs = Vec::new();
    for files in FILES {
        for (sessions, ..) in s002::SESSIONS {
            let files_arg = files.to_string();
            let argv = stress_argv(
                "heap",
                sessions,
                rows,
                SESSION_ROW_BYTES,
                durability,
                &["--files", &files_arg],
            );
            configs.push(Config::new(format!("{sessions} x {files}f"), &argv));
        }
    }
    let reports = bench.measure("002", &configs, None)?;
    let per_files = s002::SESSIONS.len();
    let mut table_rows = Vec::new();
    for (f, files) in FILES.iter().enumerate() {
        let runs = &reports[f * per_files..(f + 1) * per_files];
        for (r, (sessions, waits, avg_us, runtime_s)) in runs.iter().zip(s002::SESSIONS) {
            let article = *files == 1;
            let count = wait_count(r, "FSM_LATCH");
            let our_avg_us = 1000.0 * wait_ms(r, "FSM_LATCH") / count.max(1) as f64;
            table_rows.push(vec![
                sessions.to_string(),
                files.to_string(),
                format!("{:.0}", r.rows_per_s),
                format!("{:.3}", r.elapsed_s),
                ratio(r.elapsed_s, runs[0].elapsed_s),
                if article {
                    format!("{runtime_s:.2}")
                } else {
                    "—".into()
                },
                if article {
                    ratio(runtime_s, s002::SESSIONS[0].3)
                } else {
                    "—".into()
                },
                count.to_string(),
                format!("{our_avg_us:.0}"),
                if article {
                    format!("{waits:.0}")
                } else {
                    "—".into()
                },
                if article {
                    format!("{avg_us:.0}")
                } else {
                    "—".into()
                },
            ]);
        }
    }
    let mut blocks = session_blocks(&configs, rows, durability, table_rows, &reports);
    let total = |f: usize| -> u64 {
        reports[f * per_files..(f + 1) * per_files]
            .iter()
            .map(|r| wait_count(r, "FSM_LATCH"))
            .sum()
    };
    blocks.push(Block::Text(format!(
        "Here: {} free-space-map latch waits over the seven session counts with 1 file and {} \
         with 4 files (the article: 100 PFS latch waits over its seven, with 1 file).",
        total(0),
        total(1)
    )));
    Ok(blocks)
}

fn session_blocks(
    configs: &[Config],
    rows: u64,
    durability: &str,
    table_rows: Vec<Vec<String>>,
    reports: &[Report],
) -> Vec<Block> {
    let per_files = s002::SESSIONS.len();
    let line = |name: String, f: usize, value: &dyn Fn(&Report) -> f64| {
        Series::new(
            name,
            reports[f * per_files..(f + 1) * per_files]
                .iter()
                .zip(s002::SESSIONS)
                .map(|(r, (sessions, ..))| (f64::from(sessions), value(r)))
                .collect(),
        )
    };
    let mut series: Vec<Series> = FILES
        .iter()
        .enumerate()
        .map(|(f, files)| {
            line(format!("hotpage, {files} file(s)"), f, &|r| {
                wait_count(r, "FSM_LATCH") as f64
            })
        })
        .collect();
    series.push(Series::new(
        "seed 002 PFS waits, 1 file",
        s002::SESSIONS
            .iter()
            .map(|(s, waits, ..)| (f64::from(*s), *waits))
            .collect(),
    ));
    let header = [
        "sessions",
        "files",
        "rows/s",
        "elapsed s",
        "/ 1 session",
        "article runtime s",
        "article / 1 process",
        "FSM_LATCH waits",
        "avg µs",
        "article PFS waits",
        "article avg µs",
    ];
    vec![
        Block::Text(format!(
            "Sessions: each of 1 to 64 sessions inserts {rows} rows of {SESSION_ROW_BYTES} bytes \
             into a heap, with 1 data file and with 4 (each file has its own free-space map), \
             durability {durability}. The article's runtime grows with processes because each \
             inserts 10,000 rows; ours likewise grows with the rows."
        )),
        Block::Preformatted(commands(configs)),
        Block::Table(Table {
            caption: Some(format!("Ours beside {}", s002::SESSIONS_SOURCE)),
            header: header.iter().map(|s| (*s).to_string()).collect(),
            rows: table_rows,
        }),
        Block::Chart(Chart::Lines(LineChart {
            title: "Free-space-map latch waits by sessions (002)".into(),
            x_label: "sessions".into(),
            y_label: "waits".into(),
            x_log2: true,
            y_log10: false,
            series,
        })),
    ]
}
