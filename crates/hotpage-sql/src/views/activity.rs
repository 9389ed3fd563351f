//! `pg_stat_activity`: the sessions, what each runs, and the wait it is in now.

use super::{ms, text_or_null};
use crate::error::SqlResult;
use crate::session::{SqlDatabase, lock, now_micros};
use crate::types::SqlType;
use crate::value::Value;
use hotpage::{CurrentWait, PageLocation, WaitType};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Ends a session from another one (`pg_terminate_backend`): given by whoever serves the
/// session's client (`hotpage serve`), which alone can close its connection.
pub type TerminateHook = Arc<dyn Fn() + Send + Sync>;

/// What one session is doing, for `pg_stat_activity`.
pub(crate) struct Activity {
    pub pid: u32,
    pub backend_start: i64,
    state: Mutex<ActivityState>,
    /// The wait in progress: installed in the thread that runs a statement while it runs,
    /// where the engine writes each wait as it begins and clears it as it ends.
    wait: Arc<CurrentWait>,
    /// How other sessions reach this one: `pg_cancel_backend`, `pg_terminate_backend`.
    signals: Mutex<Signals>,
    /// Set by a terminate that reached the session's connection; its statement clock
    /// reads it (57P01).
    terminated: Arc<AtomicBool>,
}

/// The handles `pg_cancel_backend` and `pg_terminate_backend` use.
#[derive(Default)]
struct Signals {
    /// The flag the session's statement clock polls (the server's cancel key sets the same).
    cancel: Option<Arc<AtomicBool>>,
    terminate: Option<TerminateHook>,
}

#[derive(Clone, Default)]
struct ActivityState {
    active: bool,
    query: String,
    query_start: Option<i64>,
}

impl Activity {
    pub fn new(pid: u32) -> Activity {
        Activity {
            pid,
            backend_start: now_micros(),
            state: Mutex::new(ActivityState::default()),
            wait: CurrentWait::new(),
            signals: Mutex::new(Signals::default()),
            terminated: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The flag a terminate sets, for the session's statement clock.
    pub fn terminated_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.terminated)
    }

    /// The flag that cancels this session's running statement.
    pub fn set_cancel_flag(&self, cancel: Arc<AtomicBool>) {
        lock(&self.signals).cancel = Some(cancel);
    }

    /// How to end this session's connection.
    pub fn set_terminate_hook(&self, hook: TerminateHook) {
        lock(&self.signals).terminate = Some(hook);
    }

    /// Cancels the running statement, as a cancel request does (nothing if none runs).
    /// False if the session has no cancel flag.
    pub fn cancel(&self) -> bool {
        match &lock(&self.signals).cancel {
            Some(cancel) => {
                cancel.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// Ends the session's connection. False if nothing serves it that can (an embedded
    /// session: its owner ends it).
    pub fn terminate(&self) -> bool {
        // Called outside the lock: the hook may take the server's own locks.
        let hook = lock(&self.signals).terminate.clone();
        match hook {
            Some(hook) => {
                // Before the hook wakes the session: its running statement, or its next
                // one, stops with 57P01.
                self.terminated.store(true, Ordering::Relaxed);
                hook();
                true
            }
            None => false,
        }
    }

    /// A statement starts, on this thread.
    pub fn begin(&self, query: &str) {
        {
            let mut state = lock(&self.state);
            state.active = true;
            // Long statements are cut: the view shows what a person reads. A statement run
            // again (a prepared one, in a loop) is not copied again.
            let end = query
                .char_indices()
                .nth(1024)
                .map_or(query.len(), |(i, _)| i);
            if state.query != query[..end] {
                state.query.clear();
                state.query.push_str(&query[..end]);
            }
            state.query_start = Some(now_micros());
        }
        // A session may run its next statement on another thread: installed per statement.
        self.wait.install();
    }

    /// The statement ended, on this thread.
    pub fn end(&self) {
        self.wait.uninstall();
        lock(&self.state).active = false;
    }
}

/// The class `wait_event_type` shows for a wait type (PostgreSQL groups its wait events
/// the same way: `LWLock`, `IO`, …; these are hotpage's own classes).
fn wait_class(wait_type: WaitType) -> &'static str {
    match wait_type {
        WaitType::PageLatchSh | WaitType::PageLatchEx | WaitType::PageLatchCombine => "PageLatch",
        WaitType::PageIoLatchSh => "IO",
        WaitType::WriteLog | WaitType::LogBuffer => "Log",
        WaitType::FsmLatch => "FreeSpaceMap",
        WaitType::Sequence => "Sequence",
        WaitType::BtreeInsertFlowControl => "FlowControl",
        WaitType::FreeBuffer => "BufferPool",
        WaitType::KeyLock => "Lock",
    }
}

pub(super) fn columns() -> Vec<(&'static str, SqlType)> {
    vec![
        ("pid", SqlType::Int),
        ("datname", SqlType::Text),
        ("backend_start", SqlType::TimestampTz),
        ("query_start", SqlType::TimestampTz),
        ("state", SqlType::Text),
        ("wait_event_type", SqlType::Text),
        ("wait_event", SqlType::Text),
        ("wait_resource", SqlType::Text),
        ("wait_time_ms", SqlType::Double),
        ("query", SqlType::Text),
    ]
}

pub(super) fn rows(db: &SqlDatabase, _args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    Ok(db
        .activities()
        .iter()
        .map(|a| {
            let state = lock(&a.state).clone();
            // An idle session waits for nothing the engine knows of.
            let wait = state.active.then(|| a.wait.snapshot()).flatten();
            vec![
                Value::Int(i64::from(a.pid)),
                Value::Text("hotpage".into()),
                Value::Timestamp(a.backend_start),
                state.query_start.map_or(Value::Null, Value::Timestamp),
                Value::Text(if state.active { "active" } else { "idle" }.into()),
                text_or_null(wait.map(|w| wait_class(w.wait_type).to_string())),
                text_or_null(wait.map(|w| w.wait_type.name().to_string())),
                text_or_null(
                    wait.and_then(|w| w.page_id)
                        .map(|page_id| PageLocation::of(page_id).to_string()),
                ),
                wait.map_or(Value::Null, |w| ms(w.waited_ns)),
                Value::Text(state.query),
            ]
        })
        .collect())
}
