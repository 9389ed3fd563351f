//! The ASH-style sampler: a thread with its own connection reads `pg_stat_activity` every
//! [`SAMPLE_INTERVAL`] and counts, per wait event, the active backends of the run's
//! database (client backends other than its own) found in it.
//!
//! Why sampling: PostgreSQL keeps no cumulative wait times (no `sys.dm_os_wait_stats`),
//! only each backend's wait in progress; counting what a regular sample finds is how the
//! community's tools (pg_wait_sampling, pgsentinel, PASH-Viewer) measure where time goes.
//! A separate connection keeps the sampler off the sessions' connections, and its own
//! backend is excluded by pid.

use crate::error::ServerMessage;
use crate::waits::{SAMPLE_INTERVAL, TextRow, event_label, sampled_waits};
use hotpage_workload::report::{Wait, WaitTime};
use postgres::{Client, SimpleQueryMessage};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

/// One sample: the active client backends of this database but the sampler's own, by
/// wait event (both NULL: on CPU).
const SAMPLE_SQL: &str = "SELECT wait_event_type, wait_event, count(*) FROM pg_stat_activity \
     WHERE datname = current_database() AND pid <> pg_backend_pid() \
     AND backend_type = 'client backend' AND state = 'active' \
     GROUP BY wait_event_type, wait_event";

/// What the samples since the last reset found.
#[derive(Debug)]
struct SampleState {
    /// Bumped by each reset: a sample taken before a reset but counted after it is
    /// dropped, so the measured phase's samples are exactly its own.
    epoch: u64,
    counts: BTreeMap<String, u64>,
    rounds: u64,
    since: Instant,
    last: Instant,
    /// Why sampling stopped early.
    error: Option<String>,
}

impl SampleState {
    /// Mean time between samples since the reset, in milliseconds (the nominal interval
    /// before the first).
    fn interval_ms(&self) -> f64 {
        if self.rounds == 0 {
            return SAMPLE_INTERVAL.as_secs_f64() * 1e3;
        }
        (self.last - self.since).as_secs_f64() * 1e3 / self.rounds as f64
    }
}

struct Shared {
    stop: AtomicBool,
    state: Mutex<SampleState>,
}

impl Shared {
    // A panic elsewhere while the lock was held leaves counts that are still counts.
    fn state(&self) -> MutexGuard<'_, SampleState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What the sampler found, for the report.
pub(crate) struct SampleSummary {
    pub waits: Vec<Wait>,
    pub interval_ms: f64,
    pub rounds: u64,
    pub error: Option<String>,
}

/// The sampling thread and its counts.
pub(crate) struct Sampler {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Sampler {
    /// Starts sampling on `client`, a connection of its own.
    pub(crate) fn start(client: Client) -> std::io::Result<Sampler> {
        let now = Instant::now();
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            state: Mutex::new(SampleState {
                epoch: 0,
                counts: BTreeMap::new(),
                rounds: 0,
                since: now,
                last: now,
                error: None,
            }),
        });
        let thread = std::thread::Builder::new()
            .name("pg_stat_activity sampler".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || sample_loop(client, &shared)
            })?;
        Ok(Sampler {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Forgets every sample: counting starts again now.
    pub(crate) fn reset(&self) {
        let mut state = self.shared.state();
        state.epoch += 1;
        state.counts.clear();
        state.rounds = 0;
        state.since = Instant::now();
        state.last = state.since;
    }

    /// Session time by event so far (samples × interval), for the progress line.
    pub(crate) fn wait_times(&self) -> Vec<WaitTime> {
        let state = self.shared.state();
        let interval_ns = state.interval_ms() * 1e6;
        state
            .counts
            .iter()
            .map(|(name, &count)| WaitTime {
                name: name.clone(),
                wait_ns: (count as f64 * interval_ns) as u64,
            })
            .collect()
    }

    /// Stops the thread (once) and summarises what it counted.
    pub(crate) fn finish(&self) -> SampleSummary {
        self.stop();
        let state = self.shared.state();
        let interval_ms = state.interval_ms();
        SampleSummary {
            waits: sampled_waits(&state.counts, interval_ms),
            interval_ms,
            rounds: state.rounds,
            error: state.error.clone(),
        }
    }

    fn stop(&self) {
        self.shared.stop.store(true, Ordering::Release);
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(handle) = handle
            && handle.join().is_err()
        {
            self.shared.state().error = Some("the sampler thread panicked".into());
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Samples every interval until stopped, or until a sample fails (the error is kept for
/// the report, and the run goes on without waits).
fn sample_loop(mut client: Client, shared: &Shared) {
    let mut next = Instant::now();
    while !shared.stop.load(Ordering::Acquire) {
        let epoch = shared.state().epoch;
        let rows = match client.simple_query(SAMPLE_SQL) {
            Ok(messages) => text_rows(messages),
            Err(error) => {
                shared.state().error = Some(format!(
                    "sampling pg_stat_activity failed: {}",
                    ServerMessage::from_postgres(&error)
                ));
                return;
            }
        };
        if let Err(error) = record(&mut shared.state(), epoch, &rows) {
            shared.state().error = Some(format!("sampling pg_stat_activity: {error}"));
            return;
        }
        // A fixed rate: a slow sample shortens the next sleep rather than shifting them
        // all; a sample slower than the interval starts the next one at once.
        next += SAMPLE_INTERVAL;
        let now = Instant::now();
        match next.checked_duration_since(now) {
            Some(pause) => std::thread::sleep(pause),
            None => next = now,
        }
    }
}

/// Adds one sample's rows (event type, event, backends) to the counts.
fn record(state: &mut SampleState, epoch: u64, rows: &[TextRow]) -> Result<(), String> {
    if state.epoch != epoch {
        return Ok(()); // taken before a reset
    }
    for row in rows {
        let field = |index: usize| row.get(index).and_then(|v| v.as_deref());
        let backends: u64 = field(2)
            .and_then(|count| count.parse().ok())
            .ok_or_else(|| format!("unexpected count {:?}", field(2)))?;
        *state
            .counts
            .entry(event_label(field(0), field(1)))
            .or_default() += backends;
    }
    state.rounds += 1;
    state.last = Instant::now();
    Ok(())
}

/// The rows of a simple-protocol result, each column as text (`None` for NULL).
pub(crate) fn text_rows(messages: Vec<SimpleQueryMessage>) -> Vec<TextRow> {
    messages
        .into_iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|index| row.get(index).map(str::to_string))
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> SampleState {
        let now = Instant::now();
        SampleState {
            epoch: 3,
            counts: BTreeMap::new(),
            rounds: 0,
            since: now,
            last: now,
            error: None,
        }
    }

    fn row(values: &[Option<&str>]) -> TextRow {
        values.iter().map(|v| v.map(str::to_string)).collect()
    }

    #[test]
    fn a_sample_adds_backends_per_event_and_counts_a_round() {
        let mut state = state();
        let rows = vec![
            row(&[Some("LWLock"), Some("BufferContent"), Some("5")]),
            row(&[None, None, Some("2")]),
        ];
        record(&mut state, 3, &rows).expect("records");
        record(&mut state, 3, &rows[1..]).expect("records");
        assert_eq!(state.counts["LWLock:BufferContent"], 5);
        assert_eq!(state.counts["CPU"], 4);
        assert_eq!(state.rounds, 2);
    }

    #[test]
    fn a_sample_from_before_a_reset_is_dropped() {
        let mut state = state();
        record(&mut state, 2, &[row(&[None, None, Some("7")])]).expect("no error");
        assert!(state.counts.is_empty());
        assert_eq!(state.rounds, 0);
    }

    #[test]
    fn an_empty_sample_is_still_a_round() {
        let mut state = state();
        record(&mut state, 3, &[]).expect("records");
        assert_eq!(state.rounds, 1);
        assert!(state.counts.is_empty());
    }

    #[test]
    fn a_bad_count_is_an_error() {
        let mut state = state();
        let error =
            record(&mut state, 3, &[row(&[None, None, Some("x")])]).expect_err("not a count");
        assert!(error.contains("count"), "{error}");
    }

    #[test]
    fn the_interval_is_the_mean_time_between_samples() {
        let mut state = state();
        assert_eq!(state.interval_ms(), 10.0, "nominal before any sample");
        state.rounds = 4;
        state.last = state.since + std::time::Duration::from_millis(50);
        assert!((state.interval_ms() - 12.5).abs() < 1e-9);
    }
}
