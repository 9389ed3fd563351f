//! The typed report of a run. `hotpage stress` prints it as text or (`--json`) as one JSON
//! object, saves it with the database, and `hotpage inspect waits` reads it back: all four
//! come from this one type, so a field cannot be named one way in one place and another
//! way elsewhere.
//!
//! The JSON field names are a documented interface (tests, scripts and the README read
//! them): renaming a Rust field here must keep its `serde` name. Every struct takes
//! defaults for missing fields, so a report saved by an older hotpage that lacked a field
//! still loads.

use crate::plan::Plan;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One run's report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Report {
    /// Sessions that inserted.
    pub sessions: u32,
    /// Rows each session inserted after the warm-up (`null` for a timed run).
    pub rows_per_session: Option<u64>,
    /// The measured phase's planned length (`null` for a run by rows).
    pub duration_s: Option<f64>,
    /// The warm-up's length (0 for none).
    pub warmup_s: f64,
    /// Rows inserted in the measured phase, all sessions.
    pub rows_total: u64,
    /// Bytes of each row (the key is extra).
    pub row_bytes: usize,
    /// The measured phase's wall time.
    pub elapsed_s: f64,
    /// `rows_total / elapsed_s`.
    pub rows_per_s: f64,
    /// Latency of one insert call (with its commit when it ends a transaction).
    pub latency_us: Latency,
    /// `sync`, `async` or `none`.
    pub durability: String,
    /// Rows per transaction.
    pub batch: u32,
    /// What the target measured: names, waits, pages, log, shape.
    #[serde(flatten)]
    pub target: TargetFigures,
}

/// What a target reports after a run (see [`crate::Target::figures`]). Its fields sit at
/// the top level of the report's JSON, beside the run's own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TargetFigures {
    /// The design's name.
    pub design: String,
    /// The table inserted into.
    pub table: String,
    /// Page size in bytes.
    pub page_size: usize,
    /// Data files of the database.
    pub files: u32,
    /// Wait types with at least one wait, most time waited first.
    pub waits: Vec<Wait>,
    /// The pages waited on most, most time waited first.
    pub hot_pages: Vec<HotPage>,
    /// The log, or `null` without one (`--durability none`).
    pub log: Option<LogFigures>,
    /// The free-space map (zero for designs without one).
    pub fsm: FsmFigures,
    /// The table's index (or heap) shape.
    pub index: IndexFigures,
    /// A memory-optimized table's figures, or `null` for a table with pages.
    pub memory: Option<MemoryFigures>,
    /// The database directory, or `null` for a temporary one.
    pub db: Option<String>,
    /// The server measured over its wire protocol (`hotpage stress --url`), or `null` for
    /// an embedded target.
    pub server: Option<ServerFigures>,
}

/// A server measured over the PostgreSQL wire protocol: what it is, and where its waits
/// came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerFigures {
    /// `postgresql` or `hotpage` (from `SELECT version()`).
    pub kind: String,
    /// `SELECT version()`.
    pub version: String,
    /// The URL connected to, without its password.
    pub url: String,
    /// The server's `synchronous_commit` setting, or `null` where it has none.
    pub synchronous_commit: Option<String>,
    /// Where `waits` came from: `pg_stat_activity` (sampled) or `hotpage_wait_stats`.
    pub waits_source: String,
    /// For sampled waits: how often `pg_stat_activity` was read, in milliseconds (the
    /// mean over the run), and how many times; 0 for a view's waits.
    pub sample_interval_ms: f64,
    /// Samples taken.
    pub sample_rounds: u64,
    /// Why the waits are missing or cut short, or `null` when they were read in full.
    pub waits_error: Option<String>,
}

/// Latency percentiles of one insert, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 90th percentile (0 in a report saved before it was measured).
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// The longest.
    pub max: f64,
    /// How many rows were timed. Each session times its first [`LATENCY_ROWS_ALL`] rows,
    /// then a random sample of about one row in [`LATENCY_SAMPLE_EVERY`], each counted for
    /// that many (reading the clock for every row cost a few percent of a fast insert):
    /// the percentiles estimate every row's, and `max` is the longest timed row. 0 in a
    /// report saved before sampling, which timed every row.
    pub rows_timed: u64,
}

/// Rows each session times before it samples.
pub const LATENCY_ROWS_ALL: u64 = 256;
/// Past the first rows, about one row in this many is timed (a random sample).
pub const LATENCY_SAMPLE_EVERY: u64 = 16;

/// One wait type's totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Wait {
    /// The wait type's name (`PAGELATCH_EX`, `WRITELOG`, ...).
    #[serde(rename = "type")]
    pub wait_type: String,
    /// How many waits.
    pub count: u64,
    /// Total time waited.
    pub wait_ms: f64,
    /// Average wait.
    pub avg_us: f64,
    /// The longest wait.
    pub max_ms: f64,
    /// Share of all wait time.
    pub pct_of_wait_time: f64,
}

/// One of the pages waited on most.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HotPage {
    /// Its data file.
    pub file: u32,
    /// Its page number in that file.
    pub page: u64,
    /// `leaf`, `inner`, ... or `unknown` when no table owns it.
    pub page_type: String,
    /// Its level (0 for leaves), when a table owns it.
    pub level: Option<u8>,
    /// The table that owns it.
    pub table: Option<String>,
    /// Waits of every type on it.
    pub waits: u64,
    /// Time waited on it.
    pub wait_ms: f64,
    /// Share of all wait time.
    pub pct_of_wait_time: f64,
}

/// The log over the whole run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LogFigures {
    /// Bytes appended.
    pub bytes: u64,
    /// Flushes (write + fdatasync rounds).
    pub flushes: u64,
    /// Commit records.
    pub commits: u64,
    /// Group commit's effect: commits per flush.
    pub commits_per_flush: f64,
}

/// The free-space map over the measured phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FsmFigures {
    /// Map updates.
    pub updates: u64,
    /// `FSM_LATCH` waits.
    pub waits: u64,
    /// Time in them.
    pub wait_ms: f64,
}

/// The table's shape after the run: its B+tree, or its heap's pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IndexFigures {
    /// Pages.
    pub pages: u64,
    /// Levels (1 for one leaf).
    pub levels: u32,
    /// Average leaf (or heap page) fill, percent.
    pub avg_fill_pct: f64,
    /// Page splits in the measured phase.
    pub splits: u64,
    /// Of those, leaf splits that moved only the right half and left the rest in place.
    #[serde(default)]
    pub splits_in_place: u64,
    /// Rows in the table (every run's, not only this one's).
    pub rows_in_table: u64,
    /// Rows inserted by combining at a busy leaf: a session holding the leaf's latch
    /// inserted them for their sessions, with its own (measured phase).
    pub combined_rows: u64,
    /// Latch holds in which such a group was inserted.
    pub combine_rounds: u64,
    /// Rows of durable commits applied in key order by the grouped apply: one committer
    /// applied every commit a flush covered, sorted (measured phase).
    #[serde(default)]
    pub grouped_apply_rows: u64,
    /// Batches those rows were applied in.
    #[serde(default)]
    pub grouped_apply_batches: u64,
}

impl IndexFigures {
    /// Rows a combining latch hold inserted, on average (0 when nothing was combined).
    pub fn rows_per_combined_hold(&self) -> f64 {
        self.combined_rows as f64 / self.combine_rounds.max(1) as f64
    }

    /// Rows a grouped-apply batch applied, on average (0 when none was).
    pub fn rows_per_grouped_apply(&self) -> f64 {
        self.grouped_apply_rows as f64 / self.grouped_apply_batches.max(1) as f64
    }
}

/// A memory-optimized table's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryFigures {
    /// Rows in memory.
    pub rows: u64,
    /// Bytes of their keys.
    pub key_bytes: u64,
    /// Bytes of their rows.
    pub row_bytes: u64,
    /// The checkpoint file's name.
    pub file: String,
    /// Its durable length.
    pub file_bytes: u64,
}

/// Time waited so far on one wait type (for the progress line; not part of the report).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitTime {
    /// The wait type's name.
    pub name: String,
    /// Nanoseconds waited since the last reset.
    pub wait_ns: u64,
}

/// What the driver measured itself.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Measured {
    pub rows_total: u64,
    pub elapsed: Duration,
    pub latency_us: Latency,
}

impl Report {
    /// The report of a run of `plan` that measured `measured` on a target that reported
    /// `target`.
    pub(crate) fn new(plan: &Plan, measured: Measured, target: TargetFigures) -> Report {
        let elapsed_s = measured.elapsed.as_secs_f64();
        Report {
            sessions: plan.sessions,
            rows_per_session: plan.rows_per_session(),
            duration_s: plan.duration().map(|d| d.as_secs_f64()),
            warmup_s: plan.warmup.as_secs_f64(),
            rows_total: measured.rows_total,
            row_bytes: plan.row.bytes,
            elapsed_s,
            rows_per_s: measured.rows_total as f64 / elapsed_s.max(1e-9),
            latency_us: measured.latency_us,
            durability: plan.durability.name().to_string(),
            batch: plan.batch,
            target,
        }
    }

    /// The wait type waited on most, if any.
    pub fn top_wait(&self) -> Option<&str> {
        self.target.waits.first().map(|w| w.wait_type.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The top-level JSON fields, as documented (README, `hotpage stress --json`).
    const TOP_LEVEL_FIELDS: [&str; 23] = [
        "batch",
        "db",
        "design",
        "duration_s",
        "durability",
        "elapsed_s",
        "files",
        "fsm",
        "hot_pages",
        "index",
        "latency_us",
        "log",
        "memory",
        "page_size",
        "row_bytes",
        "rows_per_s",
        "rows_per_session",
        "rows_total",
        "server",
        "sessions",
        "table",
        "waits",
        "warmup_s",
    ];

    fn sample() -> Report {
        Report {
            sessions: 4,
            rows_per_session: Some(100),
            duration_s: None,
            warmup_s: 0.5,
            rows_total: 400,
            row_bytes: 40,
            elapsed_s: 0.25,
            rows_per_s: 1600.0,
            latency_us: Latency {
                p50: 1.5,
                p90: 4.0,
                p99: 20.25,
                p999: 100.0,
                max: 1234.5,
                rows_timed: 62,
            },
            durability: "sync".into(),
            batch: 10,
            target: TargetFigures {
                design: "identity".into(),
                table: "t".into(),
                page_size: 8192,
                files: 2,
                waits: vec![Wait {
                    wait_type: "PAGELATCH_EX".into(),
                    count: 3,
                    wait_ms: 1.5,
                    avg_us: 500.0,
                    max_ms: 1.0,
                    pct_of_wait_time: 100.0,
                }],
                hot_pages: vec![HotPage {
                    file: 1,
                    page: 7,
                    page_type: "leaf".into(),
                    level: Some(0),
                    table: Some("t".into()),
                    waits: 3,
                    wait_ms: 1.5,
                    pct_of_wait_time: 100.0,
                }],
                log: Some(LogFigures {
                    bytes: 4096,
                    flushes: 4,
                    commits: 40,
                    commits_per_flush: 10.0,
                }),
                fsm: FsmFigures::default(),
                index: IndexFigures {
                    pages: 3,
                    levels: 2,
                    avg_fill_pct: 88.5,
                    splits: 2,
                    splits_in_place: 1,
                    rows_in_table: 400,
                    combined_rows: 120,
                    combine_rounds: 30,
                    grouped_apply_rows: 90,
                    grouped_apply_batches: 10,
                },
                memory: None,
                db: Some("/tmp/db".into()),
                server: None,
            },
        }
    }

    #[test]
    fn a_report_round_trips_through_json() {
        let report = sample();
        let text = serde_json::to_string(&report).expect("serializes");
        let back: Report = serde_json::from_str(&text).expect("deserializes");
        assert_eq!(back, report);
    }

    #[test]
    fn the_json_has_the_documented_field_names() {
        let value = serde_json::to_value(sample()).expect("serializes");
        let object = value.as_object().expect("an object");
        let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut expected = TOP_LEVEL_FIELDS.to_vec();
        expected.sort_unstable();
        assert_eq!(keys, expected);
        assert_eq!(value["waits"][0]["type"], "PAGELATCH_EX");
        assert_eq!(value["latency_us"]["p999"], 100.0);
        assert_eq!(value["latency_us"]["p90"], 4.0);
        assert_eq!(value["index"]["rows_in_table"], 400);
        assert_eq!(value["index"]["combined_rows"], 120);
        assert_eq!(value["index"]["grouped_apply_rows"], 90);
        assert_eq!(value["index"]["grouped_apply_batches"], 10);
        assert_eq!(value["index"]["combine_rounds"], 30);
        assert!(value["memory"].is_null() && value["duration_s"].is_null());
        assert!(
            value["server"].is_null(),
            "an embedded target has no server"
        );
        for field in ["bytes", "flushes", "commits", "commits_per_flush"] {
            assert!(value["log"].get(field).is_some(), "log.{field}");
        }
    }

    #[test]
    fn a_report_missing_fields_still_loads() {
        // A report saved before `files`, `fsm` and `memory` existed.
        let old = r#"{"design":"guid","table":"guid","sessions":2,"rows_total":10,
            "elapsed_s":0.1,"rows_per_s":100.0,"waits":[{"type":"WRITELOG","count":1}],
            "hot_pages":[]}"#;
        let report: Report = serde_json::from_str(old).expect("loads");
        assert_eq!(report.target.design, "guid");
        assert_eq!(report.sessions, 2);
        assert_eq!(report.top_wait(), Some("WRITELOG"));
        assert_eq!(report.target.files, 0);
    }
}
