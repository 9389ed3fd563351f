//! A session's "applying a commit" marker.
//!
//! Two readers use it:
//! - the checkpoint takes the smallest `since` (the log's end before the commit reserved
//!   its record) as its logical point, so recovery re-applies a commit whose rows may be
//!   only partly on the pages (see `checkpoint_points`);
//! - a swap (TRUNCATE, ADD PRIMARY KEY, a table's redefinition) waits for every commit
//!   that was applying when it marked the old table dropped (`wait_for_appliers`).
//!
//! The second needs to tell one commit from the next. `since` cannot: without a log it is
//! always 0, and two commits with nothing logged between them share it, so a session
//! committing in a tight loop could keep a waiter sampling "still applying" forever. The
//! `finished` counter, bumped as each commit ends, can.
//!
//! A commit that panics part-way may have logged its record and applied only some rows.
//! Clearing its marker would let a checkpoint move the logical point past it, and recovery
//! would never apply the rest: the guard stops the database first (as a failed apply does),
//! so no checkpoint runs and a reopen re-applies the commit whole.

use crate::error::Error;
use crate::failstop::FailStop;
use crate::log::Wal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The marker's value while no commit is applying.
pub(super) const NOT_APPLYING: u64 = u64::MAX;

/// One session's marker (shared with the database's list of appliers).
#[derive(Debug)]
pub(super) struct ApplyMarker {
    // The log's end before the applying commit reserved its record; NOT_APPLYING if none.
    since: AtomicU64,
    // Commits this session has finished (each bumps it before clearing `since`).
    finished: AtomicU64,
}

/// What a waiter saw of a marker: a commit was applying, and `finished` commits had ended.
#[derive(Clone, Copy, Debug)]
pub(super) struct Applying {
    finished: u64,
}

impl ApplyMarker {
    pub(super) fn new() -> ApplyMarker {
        ApplyMarker {
            since: AtomicU64::new(NOT_APPLYING),
            finished: AtomicU64::new(0),
        }
    }

    /// The applying commit's `since`, or NOT_APPLYING. SeqCst: see `checkpoint_points`.
    pub(super) fn since(&self) -> u64 {
        self.since.load(Ordering::SeqCst)
    }

    /// Marks a commit applying from `since` on. SeqCst, before the commit's check that its
    /// tables are live (`wait_for_appliers` orders its flag and its scan the same way).
    /// The guard ends the commit when dropped, panicking or not.
    pub(super) fn begin<'a>(&'a self, since: u64, stop: StopOnPanic<'a>) -> ApplyGuard<'a> {
        debug_assert_eq!(
            self.since(),
            NOT_APPLYING,
            "one commit at a time per session"
        );
        debug_assert_ne!(since, NOT_APPLYING);
        self.since.store(since, Ordering::SeqCst);
        ApplyGuard {
            marker: self,
            stop,
            unwinding_at_begin: std::thread::panicking(),
        }
    }

    /// Whether a commit is applying now, and if so which (for `wait_until_past`).
    /// `since` is read before `finished`: a commit that ends between the two reads is
    /// counted, and the wait then also covers the session's next commit, if any (longer,
    /// never shorter, than needed).
    pub(super) fn applying(&self) -> Option<Applying> {
        if self.since() == NOT_APPLYING {
            return None;
        }
        let finished = self.finished.load(Ordering::SeqCst);
        Some(Applying { finished })
    }

    /// Waits until the commit `seen` was applying has ended: the session is idle, or has
    /// finished another commit since. A commit waits at most for its flush and its apply,
    /// and never for the caller, so this ends.
    pub(super) fn wait_until_past(&self, seen: Applying) {
        while self.since() != NOT_APPLYING && self.finished.load(Ordering::SeqCst) == seen.finished
        {
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    /// Marks a commit applying without a guard, for tests that drive a commit's steps by
    /// hand (they call `end` themselves).
    #[cfg(test)]
    pub(super) fn mark_by_hand(&self, since: u64) {
        self.since.store(since, Ordering::SeqCst);
    }

    /// Ends the applying commit (what the guard does; tests that drive the steps of a
    /// commit by hand call it directly).
    pub(super) fn end(&self) {
        self.finished.fetch_add(1, Ordering::SeqCst);
        self.since.store(NOT_APPLYING, Ordering::SeqCst);
    }
}

/// The stop's cause when a thread panics while it applies committed rows.
pub(super) fn panicked_while_applying() -> Error {
    Error::Io {
        context: "applying a committed transaction".into(),
        source: std::io::Error::other("the committing thread panicked"),
    }
}

/// Where a panicking commit stops the database.
#[derive(Clone, Copy)]
pub(super) struct StopOnPanic<'a> {
    pub(super) stop: &'a FailStop,
    pub(super) wal: Option<&'a Wal>,
}

/// Ends a commit's marker when dropped (see the module docs for the panicking case).
pub(super) struct ApplyGuard<'a> {
    marker: &'a ApplyMarker,
    stop: StopOnPanic<'a>,
    // The thread was already unwinding when the commit began (a commit made by a `Drop`
    // during another panic): `panicking()` at the end then says nothing about the commit.
    // A panic inside it would abort the process, so reaching the drop means it ended.
    unwinding_at_begin: bool,
}

impl Drop for ApplyGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() && !self.unwinding_at_begin {
            let error = panicked_while_applying();
            match self.stop.wal {
                // Wakes the log's waiters too, so they fail rather than wait.
                Some(wal) => wal.stop("applying a committed transaction", &error),
                None => self
                    .stop
                    .stop
                    .stop_error("applying a committed transaction", &error),
            }
        }
        self.marker.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_is_released_by_the_next_commit_even_if_since_repeats() {
        let marker = ApplyMarker::new();
        let stop = FailStop::new();
        let guard = marker.begin(
            0,
            StopOnPanic {
                stop: &stop,
                wal: None,
            },
        );
        let seen = marker.applying().expect("applying");
        drop(guard);
        // The same `since` again: by value alone the waiter could not tell.
        let _again = marker.begin(
            0,
            StopOnPanic {
                stop: &stop,
                wal: None,
            },
        );
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                marker.wait_until_past(seen);
                let _ = done_tx.send(());
            });
            let released = done_rx.recv_timeout(Duration::from_secs(10)).is_ok();
            // Let a stuck waiter go before asserting, so a failure cannot hang the scope.
            marker.end();
            assert!(
                released,
                "the waiter kept waiting on the session's next commit"
            );
        });
    }

    #[test]
    fn a_panicking_commit_clears_its_marker_and_stops_the_database() {
        let marker = ApplyMarker::new();
        let stop = FailStop::new();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _guard = marker.begin(
                7,
                StopOnPanic {
                    stop: &stop,
                    wal: None,
                },
            );
            panic!("a bug in the apply");
        }));
        assert!(result.is_err());
        assert_eq!(marker.since(), NOT_APPLYING);
        assert!(stop.is_stopped(), "the commit may be half applied: stop");
    }

    /// A commit made by a `Drop` while the thread unwinds from an unrelated panic ends
    /// normally: it must not stop a healthy database (every later commit would fail until
    /// a reopen).
    #[test]
    fn a_commit_ended_while_its_thread_unwinds_from_another_panic_does_not_stop() {
        struct CommitsOnDrop<'a>(&'a ApplyMarker, &'a FailStop);
        impl Drop for CommitsOnDrop<'_> {
            fn drop(&mut self) {
                let stop = StopOnPanic {
                    stop: self.1,
                    wal: None,
                };
                let _guard = self.0.begin(3, stop);
            }
        }
        let marker = ApplyMarker::new();
        let stop = FailStop::new();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _commits = CommitsOnDrop(&marker, &stop);
            panic!("an unrelated panic (injected by the test)");
        }));
        assert!(result.is_err());
        assert_eq!(marker.since(), NOT_APPLYING);
        assert!(
            !stop.is_stopped(),
            "a commit that ended normally stopped the database"
        );
    }
}
