//! The results of `hotpage compare` as plain, serializable data: each cell (engine,
//! design, sessions) with its per-round figures, the median of the rounds and their
//! spread, and for each (design, sessions) the ratio of hotpage to the best peer.
//!
//! It lives here, beside [`Report`], so that anything that renders reports (the text
//! table, `--json`, an HTML report) reads one type and needs none of the peer engines.

use crate::report::{Report, Wait};
use serde::Serialize;

/// The engine every other is compared with.
pub const HOTPAGE: &str = "hotpage";

/// One `hotpage compare` run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Comparison {
    /// `sync` or `none`.
    pub durability: String,
    /// Rounds each cell ran (interleaved: round 1 of every cell, then round 2, ...).
    pub rounds: u32,
    /// Rows each session inserted per round, or `null` for a timed run.
    pub rows_per_session: Option<u64>,
    /// Each round's measured length, or `null` for a run by rows.
    pub duration_s: Option<f64>,
    /// Bytes of each row (the key is extra: 8 for identity, 16 for guid).
    pub row_bytes: usize,
    /// Rows per transaction (1: every insert commits on its own).
    pub batch: u32,
    /// CPUs the machine has (what the figures were measured on).
    pub cpus: usize,
    /// Engines measured, in the order asked for.
    pub engines: Vec<String>,
    /// Engines asked for but not measured, with the reason.
    pub skipped: Vec<Skipped>,
    /// Every cell measured.
    pub cells: Vec<Cell>,
    /// hotpage against the best peer, per (design, sessions).
    pub ratios: Vec<Ratio>,
}

/// An engine left out, and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Skipped {
    /// Its name.
    pub engine: String,
    /// Why (a cargo feature off, programs missing, a server that did not start).
    pub reason: String,
}

/// One engine, design and session count over every round.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Cell {
    /// `hotpage`, `sqlite`, `rocksdb`, `fjall` or `postgres`.
    pub engine: String,
    /// `identity` or `guid`.
    pub design: String,
    /// Concurrent sessions.
    pub sessions: u32,
    /// What the engine's durability was set to, in its own words.
    pub durability: String,
    /// Rows per second of each round, in round order.
    pub rows_per_s: Vec<f64>,
    /// Their median, minimum and maximum.
    pub rows_per_s_spread: Spread,
    /// Median over the rounds of each round's median insert latency.
    pub latency_p50_us: f64,
    /// Median over the rounds of each round's 99th-percentile insert latency.
    pub latency_p99_us: f64,
    /// The waits of the round whose rows/s was the median (empty for an engine that
    /// cannot see its waits).
    pub waits: Vec<Wait>,
}

/// The median of some rounds and their range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    /// The middle value (the mean of the two middle ones for an even count).
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (all zero for none). NaNs sort last.
    pub fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Spread {
            median,
            min: sorted[0],
            max: sorted[n - 1],
        }
    }
}

/// hotpage against the best peer in one (design, sessions).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Ratio {
    /// The design.
    pub design: String,
    /// Sessions.
    pub sessions: u32,
    /// hotpage's median rows/s, or `null` when hotpage was not measured.
    pub hotpage_rows_per_s: Option<f64>,
    /// The peer with the highest median rows/s, or `null` when no peer was measured.
    pub best_peer: Option<String>,
    /// That peer's median rows/s.
    pub best_peer_rows_per_s: Option<f64>,
    /// hotpage ÷ best peer (above 1: hotpage is faster), or `null` when either is missing.
    pub ratio: Option<f64>,
}

impl Cell {
    /// A cell from its rounds' reports (in round order).
    pub fn from_rounds(engine: &str, design: &str, durability: &str, rounds: &[Report]) -> Cell {
        let rows_per_s: Vec<f64> = rounds.iter().map(|r| r.rows_per_s).collect();
        let spread = Spread::of(&rows_per_s);
        let p50: Vec<f64> = rounds.iter().map(|r| r.latency_us.p50).collect();
        let p99: Vec<f64> = rounds.iter().map(|r| r.latency_us.p99).collect();
        // The round nearest the median (for an even count, the lower middle one).
        let median_round = rounds.iter().min_by(|a, b| {
            (a.rows_per_s - spread.median)
                .abs()
                .total_cmp(&(b.rows_per_s - spread.median).abs())
        });
        Cell {
            engine: engine.to_string(),
            design: design.to_string(),
            sessions: rounds.first().map_or(0, |r| r.sessions),
            durability: durability.to_string(),
            rows_per_s,
            rows_per_s_spread: spread,
            latency_p50_us: Spread::of(&p50).median,
            latency_p99_us: Spread::of(&p99).median,
            waits: median_round
                .map(|r| r.target.waits.clone())
                .unwrap_or_default(),
        }
    }
}

impl Comparison {
    /// Fills [`Comparison::ratios`] from the cells: for every (design, sessions) in the
    /// order the cells first name it, hotpage's median rows/s against the best peer's.
    pub fn compute_ratios(&mut self) {
        let mut keys: Vec<(String, u32)> = Vec::new();
        for cell in &self.cells {
            let key = (cell.design.clone(), cell.sessions);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        self.ratios = keys
            .into_iter()
            .map(|(design, sessions)| {
                let in_cell = self
                    .cells
                    .iter()
                    .filter(|c| c.design == design && c.sessions == sessions);
                let hotpage = in_cell
                    .clone()
                    .find(|c| c.engine == HOTPAGE)
                    .map(|c| c.rows_per_s_spread.median);
                let best = in_cell.filter(|c| c.engine != HOTPAGE).max_by(|a, b| {
                    a.rows_per_s_spread
                        .median
                        .total_cmp(&b.rows_per_s_spread.median)
                });
                let best_rows = best.map(|c| c.rows_per_s_spread.median);
                Ratio {
                    design,
                    sessions,
                    hotpage_rows_per_s: hotpage,
                    best_peer: best.map(|c| c.engine.clone()),
                    best_peer_rows_per_s: best_rows,
                    ratio: match (hotpage, best_rows) {
                        (Some(h), Some(p)) if p > 0.0 => Some(h / p),
                        _ => None,
                    },
                }
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(engine: &str, design: &str, sessions: u32, rows_per_s: &[f64]) -> Cell {
        let rounds: Vec<Report> = rows_per_s
            .iter()
            .map(|&r| Report {
                sessions,
                rows_per_s: r,
                ..Report::default()
            })
            .collect();
        Cell::from_rounds(engine, design, "sync", &rounds)
    }

    #[test]
    fn the_spread_is_the_median_and_the_range() {
        assert_eq!(
            Spread::of(&[3.0, 1.0, 2.0]),
            Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0
            }
        );
        assert_eq!(Spread::of(&[4.0, 1.0, 2.0, 10.0]).median, 3.0);
        assert_eq!(Spread::of(&[]), Spread::default());
    }

    #[test]
    fn a_cell_keeps_every_round_and_the_median_rounds_waits() {
        let mut rounds: Vec<Report> = [100.0, 300.0, 200.0]
            .iter()
            .map(|&r| Report {
                sessions: 8,
                rows_per_s: r,
                ..Report::default()
            })
            .collect();
        rounds[2].target.waits = vec![Wait {
            wait_type: "WRITELOG".into(),
            ..Wait::default()
        }];
        let c = Cell::from_rounds("hotpage", "identity", "sync", &rounds);
        assert_eq!(c.rows_per_s, vec![100.0, 300.0, 200.0]);
        assert_eq!(c.rows_per_s_spread.median, 200.0);
        assert_eq!(c.sessions, 8);
        assert_eq!(c.waits[0].wait_type, "WRITELOG", "the median round's waits");
    }

    #[test]
    fn the_ratio_is_hotpage_over_the_best_peer_per_design_and_sessions() {
        let mut comparison = Comparison {
            cells: vec![
                cell("hotpage", "identity", 1, &[1000.0, 1200.0, 1100.0]),
                cell("sqlite", "identity", 1, &[100.0]),
                cell("rocksdb", "identity", 1, &[500.0]),
                cell("hotpage", "guid", 8, &[800.0]),
                cell("sqlite", "guid", 8, &[900.0]),
                cell("sqlite", "identity", 8, &[50.0]),
            ],
            ..Comparison::default()
        };
        comparison.compute_ratios();
        let r = &comparison.ratios;
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].design.as_str(), r[0].sessions), ("identity", 1));
        assert_eq!(r[0].best_peer.as_deref(), Some("rocksdb"));
        assert_eq!(r[0].ratio, Some(1100.0 / 500.0));
        assert_eq!(r[1].ratio, Some(800.0 / 900.0));
        assert_eq!(r[2].hotpage_rows_per_s, None, "hotpage not measured there");
        assert_eq!(r[2].ratio, None);
    }
}
