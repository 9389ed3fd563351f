//! The progress display of a run: a live bar on a terminal, a plain line every few seconds
//! otherwise, always on standard error (standard output is the report's alone). It names
//! the wait type that grows fastest, when the target measures waits.

use crate::plan::Progress;
use crate::report::WaitTime;
use crate::target::Target;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often the progress line is refreshed on a terminal.
const PROGRESS_INTERVAL_TTY: Duration = Duration::from_millis(100);
/// How often a progress line is printed when stderr is not a terminal.
const PROGRESS_INTERVAL_PLAIN: Duration = Duration::from_secs(5);

/// Where a run is, for the progress display.
pub(crate) enum Status {
    Warmup {
        elapsed: Duration,
        total: Duration,
    },
    Measure {
        rows: u64,
        rows_total: Option<u64>,
        elapsed: Duration,
        duration: Option<Duration>,
    },
}

/// The one reporter: reads the per-session counters and the wait statistics at intervals.
pub(crate) struct Tracker<'a, T: Target> {
    target: &'a T,
    shown: bool,
    bar: Option<ProgressBar>,
    interval: Duration,
    last_print: Instant,
    last_rows: u64,
    last_time: Instant,
    // Wait time per type at the last refresh, to name the wait that grows fastest now.
    last_waits: Vec<WaitTime>,
}

impl<'a, T: Target> Tracker<'a, T> {
    pub(crate) fn new(mode: Progress, target: &'a T) -> Tracker<'a, T> {
        let shown = mode == Progress::Stderr;
        let tty = shown && std::io::stderr().is_terminal();
        let bar = tty.then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr_with_hz(10));
            if let Ok(style) = ProgressStyle::with_template("{bar:30} {msg}") {
                bar.set_style(style);
            }
            bar
        });
        let now = Instant::now();
        Tracker {
            target,
            shown,
            bar,
            interval: if tty {
                PROGRESS_INTERVAL_TTY
            } else {
                PROGRESS_INTERVAL_PLAIN
            },
            last_print: now,
            last_rows: 0,
            last_time: now,
            last_waits: Vec::new(),
        }
    }

    /// The measured phase starts: rates and wait growth count from here.
    pub(crate) fn restart(&mut self, rows: u64, now: Instant) {
        (self.last_rows, self.last_time) = (rows, now);
        self.last_waits.clear();
    }

    fn current_top_wait(&mut self) -> String {
        let Some(waits) = self.target.waits() else {
            return "none".to_string();
        };
        let grown = |w: &WaitTime| {
            let before = self
                .last_waits
                .iter()
                .find(|l| l.name == w.name)
                .map_or(0, |l| l.wait_ns);
            w.wait_ns.saturating_sub(before)
        };
        let top = waits
            .iter()
            .map(|w| (w, grown(w)))
            .filter(|(_, ns)| *ns > 0)
            .max_by_key(|(_, ns)| *ns)
            .map_or("none".to_string(), |(w, _)| w.name.clone());
        self.last_waits = waits;
        top
    }

    /// Refreshes the display if its interval has passed.
    pub(crate) fn update(&mut self, rows: u64, now: Instant, status: &Status) {
        if !self.shown || now - self.last_print < self.interval {
            return;
        }
        self.last_print = now;
        let rate = rows.saturating_sub(self.last_rows) as f64
            / (now - self.last_time).as_secs_f64().max(1e-9);
        (self.last_rows, self.last_time) = (rows, now);
        let top = self.current_top_wait();
        let (fraction, line) = status_line(status, rate, &top);
        match &self.bar {
            Some(bar) => {
                bar.set_position((fraction.clamp(0.0, 1.0) * 1000.0) as u64);
                bar.set_message(line);
            }
            // A closed standard error must not end a run: the failure is ignored.
            None => {
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
        }
    }

    /// Clears the bar.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The fraction done and the line to show.
fn status_line(status: &Status, rate: f64, top: &str) -> (f64, String) {
    match status {
        Status::Warmup { elapsed, total } => (
            elapsed.as_secs_f64() / total.as_secs_f64().max(1e-9),
            format!(
                "warm-up {:.1}/{:.1} s  {rate:.0} rows/s  top wait {top}",
                elapsed.as_secs_f64(),
                total.as_secs_f64()
            ),
        ),
        Status::Measure {
            rows,
            rows_total: Some(total),
            ..
        } => {
            let eta = if rate > 0.0 {
                format!("{:.0} s", total.saturating_sub(*rows) as f64 / rate)
            } else {
                "?".to_string()
            };
            (
                *rows as f64 / (*total).max(1) as f64,
                format!("{rows}/{total} rows  {rate:.0} rows/s  ETA {eta}  top wait {top}"),
            )
        }
        Status::Measure {
            rows,
            elapsed,
            duration,
            ..
        } => {
            let total = duration.map_or(1.0, |d| d.as_secs_f64());
            let left = (total - elapsed.as_secs_f64()).max(0.0);
            (
                elapsed.as_secs_f64() / total.max(1e-9),
                format!("{rows} rows  {rate:.0} rows/s  ETA {left:.0} s  top wait {top}"),
            )
        }
    }
}
