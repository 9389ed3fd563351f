//! Seed 004: autocommit against 1000-row transactions, and the log waits.

use super::a000::commands;
use super::bench::{Config, stress_argv};
use super::seeds::s004;
use super::{Bench, cpus, ratio, wait_ms, wait_share_pct};
use crate::CliError;
use crate::report_html;
use hotpage_report::{Block, Section, Table};
use hotpage_workload::Report;

/// Rows per session at scale 1 (the article: 2,500,000); a multiple of the batch.
const ROWS: u64 = 1_000;
/// Row size (the article's `DEFAULT VALUES` row is not described).
const ROW_BYTES: usize = 40;

pub fn run(bench: &mut Bench) -> Result<Section, CliError> {
    let durability = bench.durability("sync");
    let batch = u64::from(s004::BATCH);
    // Whole transactions only: round the rows to the batch.
    let rows = (bench.rows(ROWS, batch) / batch).max(1) * batch;
    let batch_arg = s004::BATCH.to_string();
    let configs = vec![
        Config::new(
            "autocommit",
            &stress_argv(
                "identity",
                s004::SESSIONS,
                rows,
                ROW_BYTES,
                &durability,
                &[],
            ),
        ),
        Config::new(
            "1000-row transactions",
            &stress_argv(
                "identity",
                s004::SESSIONS,
                rows,
                ROW_BYTES,
                &durability,
                &["--batch", &batch_arg],
            ),
        ),
    ];
    let reports = bench.measure("004", &configs, None)?;
    let mut blocks = vec![
        Block::Text(format!(
            "Seed 004 runs 64 sessions, each inserting 2,500,000 rows in transactions of 1000. \
             Here: 64 sessions x {rows} rows of {ROW_BYTES} bytes into identity, durability \
             {durability}, first one commit per row, then one per 1000 rows."
        )),
        Block::Preformatted(commands(&configs)),
        Block::Table(table(&reports)),
        Block::Text(format!(
            "Here: WRITELOG was {:.0} % of wait time with autocommit and {:.0} % with \
             1000-row transactions (the article: about 70 % with 1000-row transactions, the \
             rest PAGELATCH); transactions ran at {}x autocommit's rows/s.",
            wait_share_pct(&reports[0], "WRITELOG"),
            wait_share_pct(&reports[1], "WRITELOG"),
            ratio(reports[1].rows_per_s, reports[0].rows_per_s)
        )),
        Block::Note(format!(
            "The article's 64 cores and 8 FusionIO cards are not this machine's {} CPUs and one \
             disk, so its rows/s are beside ours only for scale; its WRITELOG share is the \
             comparable figure. With 1000-row transactions a commit waits for the log once per \
             1000 rows instead of once per row.",
            cpus()
        )),
    ];
    if durability == "none" {
        blocks.push(Block::Note(
            "Durability none: there is no log, so there are no log waits to compare.".into(),
        ));
    }
    let runs: Vec<(String, &Report)> = configs
        .iter()
        .map(|c| c.label.clone())
        .zip(&reports)
        .collect();
    blocks.extend(report_html::run_charts(
        "004",
        "rows/s: autocommit vs 1000-row transactions",
        &runs,
    ));
    Ok(Section {
        heading: "004: autocommit vs 1000-row transactions, and the log waits".into(),
        blocks,
    })
}

fn table(reports: &[Report]) -> Table {
    let base = &reports[0];
    let modes = ["autocommit", "1000-row transactions"];
    let rows = reports
        .iter()
        .zip(modes)
        .enumerate()
        .map(|(i, (r, mode))| {
            let (flushes, per_flush) = r
                .target
                .log
                .map_or((0, 0.0), |l| (l.flushes, l.commits_per_flush));
            let article = i == 1;
            vec![
                mode.to_string(),
                format!("{:.0}", r.rows_per_s),
                ratio(r.rows_per_s, base.rows_per_s),
                flushes.to_string(),
                format!("{per_flush:.1}"),
                format!("{:.1}", wait_ms(r, "WRITELOG")),
                format!("{:.1}", wait_share_pct(r, "WRITELOG")),
                format!("{:.1}", wait_share_pct(r, "PAGELATCH")),
                if article {
                    format!("{:.0}", s004::WRITELOG_PCT)
                } else {
                    "—".into()
                },
                if article {
                    format!("{:.0}", s004::ROWS_PER_S)
                } else {
                    "—".into()
                },
            ]
        })
        .collect();
    Table {
        caption: Some(format!("Ours beside {}", s004::SOURCE)),
        header: [
            "commits",
            "rows/s",
            "x autocommit",
            "log flushes",
            "commits per flush",
            "WRITELOG ms",
            "WRITELOG % of waits",
            "PAGELATCH % of waits",
            "article WRITELOG %",
            "article rows/s",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect(),
        rows,
    }
}
