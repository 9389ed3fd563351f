//! A run: one OS thread per session inserting rows through its [`TargetSession`], a
//! coordinator on the calling thread that keeps the clock (the warm-up, a timed run's end)
//! and the progress display, per-session latency histograms merged at the end, and the
//! target's figures: the [`Report`].
//!
//! Sessions share nothing on the insert path but a read-mostly phase word and their own
//! progress counter on its own cache lines, so the driver adds no contention of its own
//! to what it measures.

use crate::plan::Plan;
use crate::progress::{Status, Tracker};
use crate::report::{LATENCY_ROWS_ALL, LATENCY_SAMPLE_EVERY, Latency, Measured, Report};
use crate::target::{Target, TargetSession};
use hdrhistogram::Histogram;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

/// The highest latency the histograms record exactly (longer ones are clamped).
const LATENCY_NS_MAX: u64 = 60_000_000_000;

// Run phases, read by every session before each insert (a read-mostly shared line).
const PHASE_WARMUP: u8 = 0;
const PHASE_PAUSE: u8 = 1;
const PHASE_MEASURE: u8 = 2;
const PHASE_STOP: u8 = 3;

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError<E: std::error::Error + 'static> {
    /// A session failed (opening it, inserting, committing, or finishing); the others
    /// were stopped. The first failing session's error, in session order.
    #[error("insert failed")]
    Session(#[source] E),
    /// The target could not report its figures after the run.
    #[error("the target's figures after the run")]
    Figures(#[source] E),
    /// The sessions' latency histograms could not be merged.
    #[error("merging latency histograms")]
    Histogram(#[from] hdrhistogram::AdditionError),
    /// A session thread panicked (a bug in the target or the driver).
    #[error("a stress session panicked")]
    Panicked,
}

// One per session, on its own cache lines, so progress reads never bounce a shared line.
#[repr(align(128))]
#[derive(Default)]
struct SessionProgress {
    rows_done: AtomicU64,
}

/// What a session thread hands back.
struct SessionResult<E> {
    latency_ns: Histogram<u64>,
    // Rows inserted after the warm-up, and how many of them were timed.
    measured: u64,
    rows_timed: u64,
    // When the session left the start line, and when its last row was done: the measured
    // phase's wall time comes from these, not from the coordinator's clock, which ticks
    // every 10 ms and may itself be descheduled while a short run starts and ends.
    started: Option<Instant>,
    ended: Option<Instant>,
    error: Option<E>,
}

/// What the session threads and the coordinator share.
struct Shared {
    progress: Vec<SessionProgress>,
    abort: AtomicBool,
    phase: AtomicU8,
    paused: AtomicUsize,
    barrier: Barrier,
    row: Vec<u8>,
    rows_limit: Option<u64>,
    batch: u64,
}

impl Shared {
    fn new(plan: &Plan) -> Shared {
        let sessions = plan.sessions as usize;
        Shared {
            progress: (0..sessions).map(|_| SessionProgress::default()).collect(),
            abort: AtomicBool::new(false),
            phase: AtomicU8::new(if plan.warmup > Duration::ZERO {
                PHASE_WARMUP
            } else {
                PHASE_MEASURE
            }),
            paused: AtomicUsize::new(0),
            barrier: Barrier::new(sessions + 1),
            row: plan.row.row(),
            rows_limit: plan.rows_per_session(),
            batch: u64::from(plan.batch.max(1)),
        }
    }

    fn rows_now(&self) -> u64 {
        self.progress
            .iter()
            .map(|p| p.rows_done.load(Ordering::Relaxed))
            .sum()
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, LATENCY_NS_MAX, 3)
        .expect("static histogram bounds are valid")
}

/// Runs `plan` against `target` and returns the report. Progress goes to standard error
/// only (when the plan shows it).
pub fn run<T: Target>(plan: &Plan, target: &T) -> Result<Report, RunError<T::Error>> {
    target.reset_waits();
    let shared = Shared::new(plan);
    let (results, warmup_end) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..shared.progress.len())
            .map(|index| {
                let shared = &shared;
                s.spawn(move || session_thread(target, index, shared))
            })
            .collect();
        shared.barrier.wait();
        let warmup_end = coordinate(plan, &shared, &handles, target);
        let results: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        (results, warmup_end)
    });
    let elapsed = measured_wall_time(warmup_end, &results);
    let mut latency_ns = new_histogram();
    let (mut rows_total, mut rows_timed) = (0u64, 0u64);
    let mut first_error = None;
    for result in results {
        let result = result.map_err(|_| RunError::Panicked)?;
        latency_ns.add(&result.latency_ns)?;
        rows_total += result.measured;
        rows_timed += result.rows_timed;
        first_error = first_error.or(result.error);
    }
    if let Some(error) = first_error {
        return Err(RunError::Session(error));
    }
    let pct = |q: f64| latency_ns.value_at_quantile(q) as f64 / 1000.0;
    let measured = Measured {
        rows_total,
        elapsed,
        latency_us: Latency {
            p50: pct(0.50),
            p90: pct(0.90),
            p99: pct(0.99),
            p999: pct(0.999),
            max: latency_ns.max() as f64 / 1000.0,
            rows_timed,
        },
    };
    let figures = target.figures().map_err(RunError::Figures)?;
    Ok(Report::new(plan, measured, figures))
}

/// One session's thread: opens its session, waits for the others, inserts until the plan
/// or the coordinator says stop, then finishes the session.
fn session_thread<T: Target>(target: &T, index: usize, shared: &Shared) -> SessionResult<T::Error> {
    let mut result = SessionResult {
        latency_ns: new_histogram(),
        measured: 0,
        rows_timed: 0,
        started: None,
        ended: None,
        error: None,
    };
    let mut session = match target.session(index) {
        Ok(session) => session,
        Err(error) => {
            shared.abort.store(true, Ordering::Relaxed);
            // Still meet the others at the start line: the coordinator waits for all.
            shared.barrier.wait();
            result.error = Some(error);
            return result;
        }
    };
    shared.barrier.wait();
    result.started = Some(Instant::now());
    let inserted = insert_loop(&mut session, shared, index, &mut result);
    result.ended = Some(Instant::now());
    if let Err(error) = inserted {
        shared.abort.store(true, Ordering::Relaxed);
        result.error = Some(error);
        return result;
    }
    // The last, partial batch: the target commits or rolls it back.
    if let Err(error) = session.finish() {
        result.error = Some(error);
    }
    result
}

/// Which rows a session times: every one of its first [`LATENCY_ROWS_ALL`] measured rows,
/// then a random sample of about one in [`LATENCY_SAMPLE_EVERY`].
///
/// Two clock reads and a histogram update per row were a few percent of a fast insert's
/// CPU (issue 11), so past the first rows only sampled rows are timed, each by its own two
/// reads, and recorded with a weight of `LATENCY_SAMPLE_EVERY`, so that the histogram
/// still counts about one entry per row and its percentiles estimate every row's (a short
/// run, as in the tests, is timed whole). The gap to the next sampled row is drawn
/// uniformly from 1 to `2 * LATENCY_SAMPLE_EVERY - 1` (mean `LATENCY_SAMPLE_EVERY`;
/// xorshift, seeded per session): a fixed stride would alias with anything periodic in
/// the rows, such as the commit that ends every batch of 16.
struct LatencySampler {
    state: u64,
    until_next: u64,
    all_left: u64,
}

impl LatencySampler {
    fn new(session: usize) -> LatencySampler {
        // Any nonzero seed; the golden-ratio constant spreads nearby session numbers.
        let state = (session as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        LatencySampler {
            state,
            until_next: 1,
            all_left: LATENCY_ROWS_ALL,
        }
    }

    fn gap(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        1 + self.state % (2 * LATENCY_SAMPLE_EVERY - 1)
    }

    /// The weight to record the next row with if it is to be timed (`None`: not timed).
    fn take(&mut self) -> Option<u64> {
        if self.all_left > 0 {
            return Some(1);
        }
        self.until_next -= 1;
        if self.until_next > 0 {
            return None;
        }
        self.until_next = self.gap();
        Some(LATENCY_SAMPLE_EVERY)
    }

    /// A measured row was done (the warm-up's rows do not use up the exact rows).
    fn measured(&mut self) {
        self.all_left = self.all_left.saturating_sub(1);
    }
}

/// Inserts rows, `batch` to a transaction, timing a sample of the calls (see
/// `LatencySampler`), until the rows are done, the coordinator stops the run, or another
/// session failed.
fn insert_loop<S: TargetSession>(
    session: &mut S,
    shared: &Shared,
    index: usize,
    result: &mut SessionResult<S::Error>,
) -> Result<(), S::Error> {
    let slot = &shared.progress[index];
    let batch = shared.batch;
    let mut inserted = 0u64;
    let mut sampler = LatencySampler::new(index);
    loop {
        if shared.abort.load(Ordering::Relaxed) {
            break;
        }
        let now_phase = match shared.phase.load(Ordering::Acquire) {
            PHASE_PAUSE => {
                // Outside the target while its statistics are reset.
                shared.paused.fetch_add(1, Ordering::AcqRel);
                while shared.phase.load(Ordering::Acquire) == PHASE_PAUSE {
                    std::thread::sleep(Duration::from_millis(1));
                }
                continue;
            }
            p => p,
        };
        if now_phase == PHASE_STOP {
            break;
        }
        let measuring = now_phase == PHASE_MEASURE;
        if measuring && shared.rows_limit.is_some_and(|r| result.measured >= r) {
            break;
        }
        let timed = sampler.take().map(|weight| (weight, Instant::now()));
        let position = inserted % batch;
        if batch > 1 && position == 0 {
            session.begin()?;
        }
        session.insert(&shared.row)?;
        if position + 1 == batch {
            session.commit()?;
        }
        if measuring {
            if let Some((weight, start)) = timed {
                let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                result
                    .latency_ns
                    .saturating_record_n(ns.clamp(1, LATENCY_NS_MAX), weight);
                result.rows_timed += 1;
            }
            result.measured += 1;
            sampler.measured();
        }
        inserted += 1;
        slot.rows_done.store(inserted, Ordering::Relaxed);
    }
    Ok(())
}

/// The measured phase's wall time: from the end of the warm-up (or, without one, the first
/// session's start) to the last session's last row.
fn measured_wall_time<E>(
    warmup_end: Option<Instant>,
    results: &[std::thread::Result<SessionResult<E>>],
) -> Duration {
    let sessions = || results.iter().filter_map(|r| r.as_ref().ok());
    let start = warmup_end.or_else(|| sessions().filter_map(|r| r.started).min());
    let end = sessions().filter_map(|r| r.ended).max();
    match (start, end) {
        (Some(start), Some(end)) => end.saturating_duration_since(start),
        _ => Duration::ZERO,
    }
}

/// Runs the clock while the sessions insert: ends the warm-up (pausing every session outside
/// the target while its statistics are reset), stops a timed run, and shows progress.
/// Returns when the warm-up ended, or `None` without one.
fn coordinate<T: Target, R>(
    plan: &Plan,
    shared: &Shared,
    handles: &[ScopedJoinHandle<'_, R>],
    target: &T,
) -> Option<Instant> {
    let run_start = Instant::now();
    let mut measure_start = run_start;
    let mut warmup_end = None;
    let mut rows_at_measure = 0u64;
    let finished = || handles.iter().filter(|h| h.is_finished()).count();
    let mut tracker = Tracker::new(plan.progress, target);
    while finished() < handles.len() {
        std::thread::sleep(Duration::from_millis(10));
        let now = Instant::now();
        match shared.phase.load(Ordering::Acquire) {
            PHASE_WARMUP if now - run_start >= plan.warmup => {
                shared.phase.store(PHASE_PAUSE, Ordering::Release);
                // Every live session parks outside the target, so the reset is exact.
                while shared.paused.load(Ordering::Acquire) + finished() < handles.len() {
                    std::thread::sleep(Duration::from_millis(1));
                }
                target.reset_waits();
                rows_at_measure = shared.rows_now();
                measure_start = Instant::now();
                warmup_end = Some(measure_start);
                tracker.restart(rows_at_measure, measure_start);
                shared.phase.store(PHASE_MEASURE, Ordering::Release);
            }
            PHASE_MEASURE if plan.duration().is_some_and(|d| now - measure_start >= d) => {
                shared.phase.store(PHASE_STOP, Ordering::Release);
            }
            _ => {}
        }
        let status = if shared.phase.load(Ordering::Acquire) == PHASE_WARMUP {
            Status::Warmup {
                elapsed: now - run_start,
                total: plan.warmup,
            }
        } else {
            Status::Measure {
                rows: shared.rows_now().saturating_sub(rows_at_measure),
                rows_total: plan.rows_total(),
                elapsed: now - measure_start,
                duration: plan.duration(),
            }
        };
        tracker.update(shared.rows_now(), now, &status);
    }
    tracker.finish();
    warmup_end
}
