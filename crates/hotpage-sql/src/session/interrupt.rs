//! Stopping a statement while it runs: a cancel request (a wire client's CancelRequest,
//! Ctrl-C in `hotpage sql`) or `statement_timeout`.
//!
//! Until 2026-12-05 the server looked only between statements, so a long scan, a T-SQL
//! `WHILE` loop or a sleep ran to its end whatever the client asked. Now the session's
//! [`StatementClock`] is started by each statement a client sends and polled where a
//! statement can run long: every row a scan reads, every turn of a `WHILE` loop, and
//! every few milliseconds of `pg_sleep`. A poll costs a decrement; only every
//! [`POLL_EVERY`]th reads the flag and the clock.
//!
//! A statement stopped this way fails with 57014 as any error does: its own changes are
//! not applied (hotpage defers a transaction's rows to its commit), and inside a
//! transaction block the block is failed.

use crate::error::{SqlError, SqlResult, sqlstate};
use hotpage::WaitStop;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How many polls pass between two real looks at the flag and the clock. A scan reads a
/// row in about a microsecond, so a stop is seen within a millisecond or so.
const POLL_EVERY: u32 = 1024;

/// One session's watch over the statement it runs.
#[derive(Debug, Default)]
pub(crate) struct StatementClock {
    /// Set by whoever may cancel this session's statement (a server's cancel request, a
    /// shell's Ctrl-C); none for a session no one can cancel.
    cancel: Option<Arc<AtomicBool>>,
    /// When the running statement's `statement_timeout` passes.
    deadline: Option<Instant>,
    /// Polls left before the next real look.
    polls_left: u32,
    /// Statements started inside another (a T-SQL batch's) keep the outer's deadline.
    nested: u32,
    /// Set for good by `pg_terminate_backend`: every statement from then on stops with
    /// 57P01, and no statement's start forgets it (a cancel is forgotten).
    terminated: Option<Arc<AtomicBool>>,
}

impl StatementClock {
    /// Who may cancel from now on.
    pub(crate) fn set_cancel_flag(&mut self, cancel: Arc<AtomicBool>) {
        self.cancel = Some(cancel);
    }

    /// The flag `pg_terminate_backend` sets for this session.
    pub(crate) fn set_terminated_flag(&mut self, terminated: Arc<AtomicBool>) {
        self.terminated = Some(terminated);
    }

    fn is_terminated(&self) -> bool {
        self.terminated
            .as_ref()
            .is_some_and(|t| t.load(Ordering::Relaxed))
    }

    /// A statement sent by a client starts: its deadline is `timeout` from now (none for
    /// no timeout). A cancel that came before it does not count, as PostgreSQL ignores a
    /// cancel that finds nothing running. Inside a batch that holds the clock
    /// ([`StatementClock::hold`]) nothing changes.
    /// Returns whether it started (false inside a held batch).
    pub(crate) fn start(&mut self, timeout: Option<Duration>) -> bool {
        if self.nested > 0 {
            return false;
        }
        if let Some(cancel) = &self.cancel {
            // A terminated session's flag stays set: the engine's key waits read it.
            cancel.store(self.is_terminated(), Ordering::Relaxed);
        }
        self.deadline = timeout.map(|t| Instant::now() + t);
        self.polls_left = POLL_EVERY;
        true
    }

    /// What ends the engine's waits for another session's key during this statement.
    pub(crate) fn wait_limits(&self, lock_timeout: Option<Duration>) -> hotpage::WaitLimits {
        hotpage::WaitLimits {
            cancel: self.cancel.clone(),
            deadline: self.deadline,
            lock_timeout,
        }
    }

    /// The statements started from now until [`StatementClock::release`] belong to the
    /// one running (a T-SQL batch runs many): they keep its deadline.
    pub(crate) fn hold(&mut self) {
        self.nested += 1;
    }

    /// Whether a batch holds the clock (statements started now keep its deadline).
    pub(crate) fn is_held(&self) -> bool {
        self.nested > 0
    }

    /// Ends a [`StatementClock::hold`].
    pub(crate) fn release(&mut self) {
        assert!(self.nested > 0, "a statement clock released more than held");
        self.nested -= 1;
    }

    /// Cheap: looks at the flag and the clock every [`POLL_EVERY`] calls.
    pub(crate) fn poll(&mut self) -> SqlResult<()> {
        if self.polls_left > 0 {
            self.polls_left -= 1;
            return Ok(());
        }
        self.polls_left = POLL_EVERY;
        self.check()
    }

    /// 57P01 if the session was terminated, 57014 if a cancel came or the deadline passed.
    pub(crate) fn check(&mut self) -> SqlResult<()> {
        if self.is_terminated() {
            return Err(SqlError::new(
                sqlstate::ADMIN_SHUTDOWN,
                "terminating connection due to administrator command",
            ));
        }
        if let Some(cancel) = &self.cancel
            && cancel.swap(false, Ordering::Relaxed)
        {
            return Err(statement_stopped(WaitStop::Cancelled));
        }
        if self
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
        {
            // Once: the error ends the statement, and what runs after it (a CATCH block,
            // the transaction's end) is not stopped again by the same deadline.
            self.deadline = None;
            return Err(statement_stopped(WaitStop::Deadline));
        }
        Ok(())
    }

    /// Waits `duration` (pg_sleep), looking for a stop every 10 ms.
    pub(crate) fn sleep(&mut self, duration: Duration) -> SqlResult<()> {
        const SLICE: Duration = Duration::from_millis(10);
        // None: too far to name (infinity), so until stopped.
        let until = Instant::now().checked_add(duration);
        loop {
            self.check()?;
            let now = Instant::now();
            let left = match until {
                Some(until) if now >= until => return Ok(()),
                Some(until) => until - now,
                None => SLICE,
            };
            std::thread::sleep(left.min(SLICE));
        }
    }
}

/// The error for a statement stopped while it ran (by the session's clock, the engine's
/// key wait or a server between statements), as PostgreSQL words each.
pub fn statement_stopped(stop: WaitStop) -> SqlError {
    match stop {
        WaitStop::Cancelled => SqlError::new(
            sqlstate::QUERY_CANCELED,
            "canceling statement due to user request",
        ),
        WaitStop::Deadline => SqlError::new(
            sqlstate::QUERY_CANCELED,
            "canceling statement due to statement timeout",
        ),
        WaitStop::LockTimeout => SqlError::new(
            sqlstate::LOCK_NOT_AVAILABLE,
            "canceling statement due to lock timeout",
        ),
    }
}

/// `statement_timeout`'s value as PostgreSQL reads it: a number of milliseconds, or a
/// number with a unit (`us`, `ms`, `s`, `min`, `h`, `d`); 0 is no timeout. None for a value
/// it would refuse.
pub(crate) fn parse_timeout(text: &str) -> Option<Option<Duration>> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let millis_per_unit = match unit.trim() {
        "" | "ms" => 1.0,
        "us" => 0.001,
        "s" => 1_000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return None,
    };
    let millis = (number * millis_per_unit).round();
    // PostgreSQL's limit: INT_MAX milliseconds.
    if !millis.is_finite() || !(0.0..=f64::from(i32::MAX)).contains(&millis) {
        return None;
    }
    Some((millis > 0.0).then(|| Duration::from_millis(millis as u64)))
}

/// A timeout as `SHOW statement_timeout` prints it: in the largest unit that divides it
/// (`5s`, `100ms`, `2min`), `0` for none.
pub(crate) fn show_timeout(timeout: Option<Duration>) -> String {
    let Some(timeout) = timeout else {
        return "0".to_string();
    };
    let millis = timeout.as_millis();
    if millis == 0 {
        return "0".to_string();
    }
    let units: [(u128, &str); 4] = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "min"),
        (1_000, "s"),
    ];
    units
        .iter()
        .find(|(per_unit, _)| millis % per_unit == 0)
        .map_or_else(
            || format!("{millis}ms"),
            |(per_unit, unit)| format!("{}{unit}", millis / per_unit),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_as_postgresql_reads_them() {
        let ms = |n| Some(Some(Duration::from_millis(n)));
        assert_eq!(parse_timeout("100"), ms(100));
        assert_eq!(parse_timeout("100ms"), ms(100));
        assert_eq!(parse_timeout(" 2s"), ms(2_000));
        assert_eq!(parse_timeout("1.5s"), ms(1_500));
        assert_eq!(parse_timeout("1min"), ms(60_000));
        assert_eq!(parse_timeout("0"), Some(None));
        assert_eq!(parse_timeout("-1"), None);
        assert_eq!(parse_timeout("soon"), None);
        assert_eq!(parse_timeout("5 fortnights"), None);
        assert_eq!(parse_timeout("99999999999"), None);
        assert_eq!(show_timeout(None), "0");
        assert_eq!(show_timeout(Some(Duration::from_millis(100))), "100ms");
        assert_eq!(show_timeout(Some(Duration::from_millis(5_000))), "5s");
        assert_eq!(show_timeout(Some(Duration::from_millis(120_000))), "2min");
    }

    #[test]
    fn a_cancel_stops_the_statement_once_and_one_before_it_does_not_count() {
        let flag = Arc::new(AtomicBool::new(true));
        let mut clock = StatementClock::default();
        clock.set_cancel_flag(Arc::clone(&flag));
        clock.start(None);
        assert!(
            clock.check().is_ok(),
            "a cancel before the statement counted"
        );
        flag.store(true, Ordering::Relaxed);
        let polls_before = (0..=POLL_EVERY + 1).position(|_| clock.poll().is_err());
        assert_eq!(polls_before, Some(POLL_EVERY as usize));
        assert!(clock.check().is_ok(), "one cancel stopped twice");
    }

    #[test]
    fn a_deadline_passes_once_and_a_held_clock_keeps_it() {
        let mut clock = StatementClock::default();
        clock.start(Some(Duration::from_millis(20)));
        clock.hold();
        clock.start(Some(Duration::from_secs(3_600)));
        let started = Instant::now();
        let error = clock.sleep(Duration::from_secs(5)).unwrap_err();
        assert_eq!(error.sqlstate, sqlstate::QUERY_CANCELED);
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(clock.check().is_ok());
        clock.release();
    }
}
