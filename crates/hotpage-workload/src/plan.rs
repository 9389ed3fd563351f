//! What a run does: how many sessions, how long, how rows are grouped into transactions
//! and what a row looks like. A plan says nothing about the target it runs against, so the
//! same plan measures the embedded engine, a SQL layer or a peer engine alike.

use hotpage::Durability;
use std::time::Duration;

/// How much each session inserts in the measured phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Amount {
    /// Each session inserts this many rows (after the warm-up).
    RowsPerSession(u64),
    /// Every session inserts until this much time has passed (after the warm-up).
    Duration(Duration),
}

/// What a row is: today a fixed number of bytes of repeated text (the key is the target's
/// and comes on top).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowShape {
    /// Bytes of each row.
    pub bytes: usize,
}

impl RowShape {
    /// The row every insert writes: `testing heavy ` repeated to `bytes` (the seed
    /// scripts' filler). Targets may copy and change it (the crash tester stamps its rows).
    pub fn row(&self) -> Vec<u8> {
        b"testing heavy "
            .iter()
            .copied()
            .cycle()
            .take(self.bytes)
            .collect()
    }
}

/// Whether a run shows progress on standard error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// A live bar on a terminal, a plain line every 5 s otherwise (never on standard
    /// output, so a `--json` report stays the only thing there).
    Stderr,
    /// Nothing (tests, embedding).
    Hidden,
}

/// A run's plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// Concurrent sessions, each on its own OS thread.
    pub sessions: u32,
    /// Rows per session, or a duration.
    pub amount: Amount,
    /// Inserting before the measured phase, not counted: the target's wait statistics are
    /// reset when it ends.
    pub warmup: Duration,
    /// Rows per transaction (1: every insert commits on its own).
    pub batch: u32,
    /// When a commit returns. The target is opened with it; the plan carries it so that
    /// the report says what was measured.
    pub durability: Durability,
    /// The row each insert writes.
    pub row: RowShape,
    /// Whether progress is shown.
    pub progress: Progress,
}

impl Plan {
    /// Rows each session inserts, or `None` for a timed run.
    pub fn rows_per_session(&self) -> Option<u64> {
        match self.amount {
            Amount::RowsPerSession(rows) => Some(rows),
            Amount::Duration(_) => None,
        }
    }

    /// The measured phase's length, or `None` for a run by rows.
    pub fn duration(&self) -> Option<Duration> {
        match self.amount {
            Amount::RowsPerSession(_) => None,
            Amount::Duration(duration) => Some(duration),
        }
    }

    /// Measured rows expected in all (`None` for a timed run).
    pub fn rows_total(&self) -> Option<u64> {
        self.rows_per_session()
            .map(|rows| rows.saturating_mul(u64::from(self.sessions)))
    }
}
