//! The text form of `hotpage compare` ([`Comparison`]): a header, one row per cell (median
//! rows/s with its min–max, latency, top wait), hotpage ÷ the best peer per (design,
//! sessions), and the engines skipped. Also the progress shown while the cells run.

use crate::CliError;
use crate::output::right_align;
use comfy_table::Table;
use hotpage_workload::compare::Comparison;
use std::io::IsTerminal;

/// Prints the comparison's tables on standard output.
pub fn print(c: &Comparison) -> Result<(), CliError> {
    let amount = match (c.duration_s, c.rows_per_session) {
        (Some(d), _) => format!("{d} s"),
        (None, Some(rows)) => format!("{rows} rows per session"),
        _ => String::new(),
    };
    let commits = if c.batch == 1 {
        "1 row per commit".to_string()
    } else {
        format!("{} rows per commit", c.batch)
    };
    outln!(
        "hotpage compare: durability {}, {} interleaved round(s) of {amount}, {}-byte rows, {commits}, {} CPUs",
        c.durability,
        c.rounds,
        c.row_bytes,
        c.cpus
    )?;
    outln!(
        "rows/s is the median of the rounds, with their min–max; latency is one insert with its commit"
    )?;
    outln!()?;
    let mut cells = Table::new();
    cells.set_header(vec![
        "design",
        "sessions",
        "engine",
        "durability",
        "rows/s",
        "min–max",
        "p50 us",
        "p99 us",
        "top wait",
    ]);
    for cell in &c.cells {
        let spread = cell.rows_per_s_spread;
        cells.add_row(vec![
            cell.design.clone(),
            cell.sessions.to_string(),
            cell.engine.clone(),
            cell.durability.clone(),
            format!("{:.0}", spread.median),
            format!("{:.0}–{:.0}", spread.min, spread.max),
            format!("{:.1}", cell.latency_p50_us),
            format!("{:.1}", cell.latency_p99_us),
            cell.waits
                .first()
                .map_or("-".to_string(), |w| w.wait_type.clone()),
        ]);
    }
    right_align(&mut cells, &[1, 4, 5, 6, 7]);
    outln!("{cells}")?;
    outln!()?;
    print_ratios(c)?;
    for skipped in &c.skipped {
        outln!("skipped {}: {}", skipped.engine, skipped.reason)?;
    }
    Ok(())
}

/// hotpage ÷ the best peer, per (design, sessions).
fn print_ratios(c: &Comparison) -> Result<(), CliError> {
    let mut ratios = Table::new();
    ratios.set_header(vec![
        "design",
        "sessions",
        "hotpage rows/s",
        "best peer",
        "its rows/s",
        "hotpage ÷ best peer",
    ]);
    let number = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
    for r in &c.ratios {
        ratios.add_row(vec![
            r.design.clone(),
            r.sessions.to_string(),
            number(r.hotpage_rows_per_s),
            r.best_peer.clone().unwrap_or_else(|| "-".to_string()),
            number(r.best_peer_rows_per_s),
            r.ratio.map_or("-".to_string(), |v| format!("{v:.2}x")),
        ]);
    }
    right_align(&mut ratios, &[1, 2, 4, 5]);
    outln!("{ratios}")
}

/// Progress on standard error: a bar on a terminal, otherwise one line per finished cell
/// round (never on standard output, so `--json` stays one object).
pub struct CellProgress {
    bar: Option<indicatif::ProgressBar>,
}

impl CellProgress {
    pub fn new(total: u64) -> CellProgress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(total),
                indicatif::ProgressDrawTarget::stderr(),
            );
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "compare [{bar:30}] {pos}/{len} cells, ETA {eta}: {msg}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        CellProgress { bar }
    }

    pub fn starting(&self, what: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(what.to_string());
        }
    }

    pub fn finished(&self, what: &str, rows_per_s: f64) {
        match &self.bar {
            Some(bar) => bar.inc(1),
            None => errln!("compare: {what}: {rows_per_s:.0} rows/s"),
        }
    }

    pub fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
