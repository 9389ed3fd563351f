//! `hotpage compare --html FILE`: the comparison as one self-contained HTML report: the
//! ratio table, then per design the scaling curve (rows/s by sessions, one line per
//! engine), the 99th-percentile latency curve, and every cell with its spread.

use crate::CliError;
use crate::report_html;
use hotpage_report::{Block, Chart, Document, LineChart, Section, Series, Table};
use hotpage_workload::compare::{Cell, Comparison};
use std::path::Path;

/// Writes the comparison's report to `path`.
pub fn write(comparison: &Comparison, command: &str, path: &Path) -> Result<(), CliError> {
    report_html::write(&document(comparison, command), path)
}

/// The report of a comparison.
pub fn document(comparison: &Comparison, command: &str) -> Document {
    let mut document = Document::new(format!(
        "hotpage compare: {} durability, {} round(s) per cell",
        comparison.durability, comparison.rounds
    ));
    document.subtitle = Some(report_html::subtitle(command));
    let mut summary = vec![Block::Table(ratio_table(comparison))];
    for skipped in &comparison.skipped {
        summary.push(Block::Note(format!(
            "{} was not measured: {}",
            skipped.engine, skipped.reason
        )));
    }
    document.sections.push(Section {
        heading: "hotpage against the best peer".into(),
        blocks: summary,
    });
    let mut designs: Vec<&str> = comparison.cells.iter().map(|c| c.design.as_str()).collect();
    designs.dedup();
    for design in designs {
        document.sections.push(design_section(comparison, design));
    }
    document
}

fn ratio_table(comparison: &Comparison) -> Table {
    let rate = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
    Table {
        caption: Some("Median rows/s per cell; ratio = hotpage ÷ the best peer".into()),
        header: [
            "design",
            "sessions",
            "hotpage rows/s",
            "best peer",
            "its rows/s",
            "ratio",
        ]
        .map(String::from)
        .to_vec(),
        rows: comparison
            .ratios
            .iter()
            .map(|r| {
                vec![
                    r.design.clone(),
                    r.sessions.to_string(),
                    rate(r.hotpage_rows_per_s),
                    r.best_peer.clone().unwrap_or_else(|| "-".into()),
                    rate(r.best_peer_rows_per_s),
                    r.ratio.map_or("-".into(), |v| format!("{v:.2}×")),
                ]
            })
            .collect(),
    }
}

/// One design: the two curves and its cells.
fn design_section(comparison: &Comparison, design: &str) -> Section {
    let cells: Vec<&Cell> = comparison
        .cells
        .iter()
        .filter(|c| c.design == design)
        .collect();
    let curve = |title: &str, y_label: &str, y_log10: bool, value: fn(&Cell) -> f64| {
        Block::Chart(Chart::Lines(LineChart {
            title: title.to_string(),
            x_label: "sessions".into(),
            y_label: y_label.to_string(),
            x_log2: true,
            y_log10,
            series: comparison
                .engines
                .iter()
                .map(|engine| {
                    let points = cells
                        .iter()
                        .filter(|c| &c.engine == engine)
                        .map(|c| (f64::from(c.sessions), value(c)))
                        .collect();
                    Series::new(engine.clone(), points)
                })
                .filter(|s| !s.points.is_empty())
                .collect(),
        }))
    };
    Section {
        heading: format!("Design {design}"),
        blocks: vec![
            curve(
                &format!("{design}: rows/s by sessions (median of the rounds)"),
                "rows/s",
                false,
                |c| c.rows_per_s_spread.median,
            ),
            curve(
                &format!("{design}: 99th-percentile latency of one commit"),
                "µs (log scale)",
                true,
                |c| c.latency_p99_us,
            ),
            Block::Table(cells_table(&cells)),
        ],
    }
}

fn cells_table(cells: &[&Cell]) -> Table {
    Table {
        caption: Some("Every cell: median rows/s with the rounds' range, and latency".into()),
        header: [
            "engine",
            "sessions",
            "durability",
            "rows/s",
            "min–max",
            "p50 µs",
            "p99 µs",
        ]
        .map(String::from)
        .to_vec(),
        rows: cells
            .iter()
            .map(|c| {
                let s = &c.rows_per_s_spread;
                vec![
                    c.engine.clone(),
                    c.sessions.to_string(),
                    c.durability.clone(),
                    format!("{:.0}", s.median),
                    format!("{:.0}–{:.0}", s.min, s.max),
                    format!("{:.0}", c.latency_p50_us),
                    format!("{:.0}", c.latency_p99_us),
                ]
            })
            .collect(),
    }
}
