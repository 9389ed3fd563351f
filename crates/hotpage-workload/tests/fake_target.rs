//! The driver against an in-memory target: every row arrives exactly once, transactions
//! are the plan's batches, and the report counts what the plan asked for.

use hotpage::Durability;
use hotpage_workload::report::{TargetFigures, WaitTime};
use hotpage_workload::{Amount, Plan, Progress, RowShape, Target, TargetSession, run};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
#[error("fake failure")]
struct FakeError;

/// Rows by (session, sequence number): a duplicate or a lost row shows in the map.
#[derive(Default)]
struct Fake {
    rows: Mutex<BTreeMap<(usize, u64), Vec<u8>>>,
    commits: AtomicU64,
    begins: AtomicU64,
    finishes: AtomicU64,
    resets: AtomicU64,
    fail_after: Option<u64>,
    /// Time each insert takes.
    insert_sleep: Option<Duration>,
    /// Every Nth row of a session (N, how long) is slow.
    slow_every: Option<(u64, Duration)>,
}

struct FakeSession<'a> {
    target: &'a Fake,
    index: usize,
    next: u64,
}

impl Target for Fake {
    type Error = FakeError;
    type Session<'a> = FakeSession<'a>;

    fn session(&self, index: usize) -> Result<FakeSession<'_>, FakeError> {
        Ok(FakeSession {
            target: self,
            index,
            next: 0,
        })
    }

    fn reset_waits(&self) {
        self.resets.fetch_add(1, Ordering::Relaxed);
    }

    fn waits(&self) -> Option<Vec<WaitTime>> {
        None
    }

    fn figures(&self) -> Result<TargetFigures, FakeError> {
        Ok(TargetFigures {
            design: "fake".into(),
            table: "rows".into(),
            ..TargetFigures::default()
        })
    }
}

impl TargetSession for FakeSession<'_> {
    type Error = FakeError;

    fn begin(&mut self) -> Result<(), FakeError> {
        self.target.begins.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn insert(&mut self, row: &[u8]) -> Result<(), FakeError> {
        if let Some(pause) = self.target.insert_sleep {
            std::thread::sleep(pause);
        }
        if let Some((every, pause)) = self.target.slow_every
            && self.next % every == every - 1
        {
            std::thread::sleep(pause);
        }
        if self.target.fail_after.is_some_and(|n| self.next >= n) {
            return Err(FakeError);
        }
        let mut rows = self.target.rows.lock().expect("no thread panicked");
        let old = rows.insert((self.index, self.next), row.to_vec());
        assert!(
            old.is_none(),
            "row {} of session {} twice",
            self.next,
            self.index
        );
        self.next += 1;
        Ok(())
    }

    fn commit(&mut self) -> Result<(), FakeError> {
        self.target.commits.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), FakeError> {
        self.target.finishes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

fn plan(sessions: u32, rows: u64, batch: u32) -> Plan {
    Plan {
        sessions,
        amount: Amount::RowsPerSession(rows),
        warmup: Duration::ZERO,
        batch,
        durability: Durability::Sync,
        row: RowShape { bytes: 40 },
        progress: Progress::Hidden,
    }
}

#[test]
fn every_row_arrives_exactly_once_in_whole_batches() {
    let fake = Fake::default();
    let report = run(&plan(6, 1000, 10), &fake).expect("the run succeeds");
    let rows = fake.rows.lock().expect("no thread panicked");
    assert_eq!(rows.len(), 6 * 1000);
    for session in 0..6 {
        for n in 0..1000 {
            let row = rows.get(&(session, n)).expect("every row arrived");
            assert_eq!(row.len(), 40);
            assert!(row.starts_with(b"testing heavy testing"));
        }
    }
    assert_eq!(fake.commits.load(Ordering::Relaxed), 6 * 100);
    assert_eq!(fake.begins.load(Ordering::Relaxed), 6 * 100);
    assert_eq!(fake.finishes.load(Ordering::Relaxed), 6);
    assert_eq!(fake.resets.load(Ordering::Relaxed), 1);
    assert_eq!(report.rows_total, 6000);
    assert_eq!(report.sessions, 6);
    assert_eq!(report.rows_per_session, Some(1000));
    assert_eq!(report.batch, 10);
    assert_eq!(report.row_bytes, 40);
    assert_eq!(report.durability, "sync");
    assert_eq!(report.target.design, "fake");
    assert!(report.rows_per_s > 0.0 && report.latency_us.max >= report.latency_us.p50);
}

#[test]
fn a_batch_of_one_commits_every_row_without_begin() {
    let fake = Fake::default();
    let report = run(&plan(3, 250, 1), &fake).expect("the run succeeds");
    assert_eq!(fake.commits.load(Ordering::Relaxed), 750);
    assert_eq!(fake.begins.load(Ordering::Relaxed), 0);
    assert_eq!(report.rows_total, 750);
}

#[test]
fn a_partial_last_batch_is_left_to_finish() {
    let fake = Fake::default();
    run(&plan(2, 25, 10), &fake).expect("the run succeeds");
    // 25 rows: two whole batches committed by the driver, the last 5 left to finish().
    assert_eq!(fake.commits.load(Ordering::Relaxed), 2 * 2);
    assert_eq!(fake.begins.load(Ordering::Relaxed), 2 * 3);
    assert_eq!(fake.rows.lock().expect("no thread panicked").len(), 50);
}

#[test]
fn a_warm_up_resets_the_waits_and_is_not_counted() {
    let fake = Fake::default();
    let plan = Plan {
        warmup: Duration::from_millis(50),
        ..plan(2, 100, 1)
    };
    let report = run(&plan, &fake).expect("the run succeeds");
    assert_eq!(report.rows_total, 200);
    assert_eq!(report.warmup_s, 0.05);
    assert_eq!(fake.resets.load(Ordering::Relaxed), 2);
    assert!(fake.rows.lock().expect("no thread panicked").len() >= 200);
}

#[test]
fn a_timed_run_stops_every_session() {
    let fake = Fake::default();
    let plan = Plan {
        amount: Amount::Duration(Duration::from_millis(100)),
        ..plan(4, 0, 1)
    };
    let report = run(&plan, &fake).expect("the run succeeds");
    assert_eq!(report.rows_per_session, None);
    assert_eq!(report.duration_s, Some(0.1));
    assert!(report.rows_total > 0);
    assert_eq!(
        report.rows_total,
        fake.rows.lock().expect("no thread panicked").len() as u64
    );
}

#[test]
fn a_failing_session_stops_the_run_with_its_error() {
    let fake = Fake {
        fail_after: Some(5),
        ..Fake::default()
    };
    let error = run(&plan(3, 1000, 1), &fake).expect_err("the run fails");
    assert!(matches!(
        error,
        hotpage_workload::RunError::Session(FakeError)
    ));
}

#[test]
fn a_short_run_is_timed_by_its_sessions_not_the_coordinators_tick() {
    // Five 1 ms inserts: the run lasts about 5 ms, less than the coordinator's 10 ms tick,
    // so a wall time read from the coordinator would be 10 ms or more (or 0 when it
    // looked only after the sessions had ended).
    let fake = Fake {
        insert_sleep: Some(Duration::from_millis(1)),
        ..Fake::default()
    };
    let report = run(&plan(1, 5, 1), &fake).expect("the run succeeds");
    let slowest_ms = report.latency_us.max / 1000.0;
    assert!(
        report.elapsed_s >= 0.005,
        "five 1 ms inserts: {}",
        report.elapsed_s
    );
    // The session's own clock: its five inserts and a little bookkeeping, however loaded
    // the machine is.
    assert!(
        report.elapsed_s * 1000.0 <= 5.0 * slowest_ms + 1.0,
        "elapsed {} s against five inserts of at most {slowest_ms} ms",
        report.elapsed_s
    );
}

/// Past each session's first `LATENCY_ROWS_ALL` rows the driver times a random sample of
/// about one row in `LATENCY_SAMPLE_EVERY`, each counted for that many: the percentiles
/// still estimate every row's. With one row in ten slow, p50 is a fast row's and p99 a
/// slow one's, and the count of timed rows is what the sampling rate says.
#[test]
fn sampled_latency_still_sees_the_slow_tenth() {
    use hotpage_workload::report::{LATENCY_ROWS_ALL, LATENCY_SAMPLE_EVERY};
    let fake = Fake {
        slow_every: Some((10, Duration::from_micros(300))),
        ..Fake::default()
    };
    let report = run(&plan(2, 4000, 1), &fake).expect("the run succeeds");
    let latency = report.latency_us;
    assert!(
        latency.p50 < 250.0,
        "p50 {} us is not a fast row",
        latency.p50
    );
    assert!(
        latency.p99 >= 300.0,
        "p99 {} us is not a slow row",
        latency.p99
    );
    assert!(latency.max >= 300.0, "max {} us", latency.max);
    let sampled = (4000 - LATENCY_ROWS_ALL) as f64 / LATENCY_SAMPLE_EVERY as f64;
    let expected = 2.0 * (LATENCY_ROWS_ALL as f64 + sampled);
    let timed = latency.rows_timed as f64;
    assert!(
        (0.8 * expected..1.2 * expected).contains(&timed),
        "{timed} rows timed, about {expected} expected"
    );
}

/// A run shorter than the rows every session times whole is timed row by row.
#[test]
fn a_short_run_times_every_row() {
    let fake = Fake::default();
    let report = run(&plan(3, 200, 1), &fake).expect("the run succeeds");
    assert_eq!(report.latency_us.rows_timed, 600);
}
