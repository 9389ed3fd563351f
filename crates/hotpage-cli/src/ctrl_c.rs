//! Ctrl-C in `hotpage sql`, as psql treats it: while a statement runs it cancels the
//! statement (57014; the shell goes on, a script stops at the error as at any other);
//! otherwise, or pressed again before the statement saw the first, it ends the program
//! (exit 130) as the default signal action did. The interactive shell reads lines with
//! the terminal in raw mode, where Ctrl-C is a key (it clears the line), not a signal.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the signal handler and the statement runner share.
#[derive(Clone)]
pub struct CtrlC {
    /// Given to the SQL session (`SqlSession::set_cancel_flag`).
    cancel: Arc<AtomicBool>,
    /// A statement is running.
    running: Arc<AtomicBool>,
}

impl CtrlC {
    /// Installs the handler. If another one is installed already (a second call), the
    /// default action stays and statements cannot be cancelled; nothing else changes.
    pub fn install() -> CtrlC {
        let ctrl_c = CtrlC {
            cancel: Arc::new(AtomicBool::new(false)),
            running: Arc::new(AtomicBool::new(false)),
        };
        let handler = ctrl_c.clone();
        let _ = ctrlc::set_handler(move || {
            let cancelling = handler.running.load(Ordering::SeqCst)
                && !handler.cancel.swap(true, Ordering::SeqCst);
            if !cancelling {
                std::process::exit(130);
            }
        });
        ctrl_c
    }

    /// The flag a session watches.
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancel)
    }

    /// Runs one statement (or batch) with Ctrl-C cancelling it.
    pub fn while_running<T>(&self, run: impl FnOnce() -> T) -> T {
        self.cancel.store(false, Ordering::SeqCst);
        self.running.store(true, Ordering::SeqCst);
        let outcome = run();
        self.running.store(false, Ordering::SeqCst);
        outcome
    }
}
