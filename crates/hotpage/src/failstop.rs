//! Fail-stop, with its first cause kept.
//!
//! After a failed write or fdatasync of the log or a data file, Linux may have dropped the
//! data while reporting the pages clean (PostgreSQL's 2018 fsync lesson). The database
//! must then refuse every later commit and checkpoint until it is reopened, when recovery
//! rebuilds the truth from what reached the disk. One [`FailStop`] per database is shared
//! by the log, the buffer pool and the commit path; whichever fails first records *why*
//! (ENOSPC, EIO, ...), and every later caller gets that cause with what to do about it,
//! instead of a bare "failed earlier".

use crate::error::{Error, StopCause};
use std::io;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The database's fail-stop state (see the module docs).
#[derive(Debug, Default)]
pub struct FailStop {
    stopped: AtomicBool,
    cause: OnceLock<StopCause>,
}

impl FailStop {
    /// A running database.
    pub fn new() -> FailStop {
        FailStop::default()
    }

    /// Stops the database because `error` happened while doing `context`. Only the first
    /// call's cause is kept.
    pub fn stop_io(&self, context: impl Into<String>, error: &io::Error) {
        self.stop(StopCause {
            context: context.into(),
            kind: error.kind(),
            message: error.to_string(),
        });
    }

    /// Stops the database because of an engine error (a failed apply after a durable
    /// commit, say). Keeps the I/O error's kind when the error is one.
    pub fn stop_error(&self, context: impl Into<String>, error: &Error) {
        let kind = match error {
            Error::Io { source, .. } => source.kind(),
            Error::Stopped { .. } => return, // stopped already, with its own cause
            // Damage found on the way (a page past a file's end, a checksum): reopening
            // meets it again, so the advice is not to reopen.
            Error::CorruptPage { .. }
            | Error::CorruptFile { .. }
            | Error::CorruptLog { .. }
            | Error::DamagedDatabase { .. } => io::ErrorKind::InvalidData,
            _ => io::ErrorKind::Other,
        };
        self.stop(StopCause {
            context: context.into(),
            kind,
            message: error.to_string(),
        });
    }

    fn stop(&self, cause: StopCause) {
        let _ = self.cause.set(cause);
        self.stopped.store(true, Ordering::Release);
    }

    /// True once anything stopped the database.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// The first cause, once stopped.
    pub fn cause(&self) -> Option<&StopCause> {
        self.cause.get()
    }

    /// `Err(Error::Stopped)` with the first cause once stopped.
    pub fn check(&self) -> Result<(), Error> {
        if self.is_stopped() {
            return Err(self.error());
        }
        Ok(())
    }

    /// The error every caller gets after the stop.
    pub fn error(&self) -> Error {
        let cause = self.cause.get().cloned().unwrap_or_else(|| StopCause {
            context: "an earlier operation".into(),
            kind: io::ErrorKind::Other,
            message: "unknown".into(),
        });
        Error::Stopped {
            advice: advice(cause.kind),
            cause: Box::new(cause),
        }
    }
}

/// What a user should do about a stop of this kind.
fn advice(kind: io::ErrorKind) -> &'static str {
    match kind {
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => {
            "free space on the disk that holds the database (the log and the data files need room to grow), then reopen the database to recover"
        }
        io::ErrorKind::ReadOnlyFilesystem => {
            "the file system is read-only now (often after disk errors): check the disk and the system log (dmesg), then reopen the database to recover"
        }
        io::ErrorKind::PermissionDenied => {
            "give this user write access to the database files, then reopen the database to recover"
        }
        // Reopening would meet the damage again (recovery re-applies the commit that
        // found it), and the open then fails: said so, the user does not try in vain.
        io::ErrorKind::InvalidData => {
            "a database file is damaged, and reopening meets the damage again: restore the database from a backup"
        }
        _ => {
            "check the disk and the system log (dmesg) for I/O errors, then reopen the database to recover"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_cause_wins_and_every_caller_sees_it() {
        let stop = FailStop::new();
        assert!(stop.check().is_ok());
        stop.stop_io(
            "writing log segment wal.0000000000000001 at byte 4096",
            &io::Error::new(io::ErrorKind::StorageFull, "No space left on device"),
        );
        stop.stop_io("a later failure", &io::Error::other("EIO"));
        let message = stop.check().expect_err("stopped").to_string();
        for needle in [
            "wal.0000000000000001",
            "No space left",
            "free space",
            "reopen",
        ] {
            assert!(
                message.contains(needle),
                "{needle:?} missing from: {message}"
            );
        }
        assert!(!message.contains("a later failure"));
        assert_eq!(
            stop.cause().map(|c| c.kind),
            Some(io::ErrorKind::StorageFull)
        );
    }

    #[test]
    fn an_engine_error_keeps_its_io_kind() {
        let stop = FailStop::new();
        let error = Error::io(
            "writing page 3 of data.0",
            io::Error::new(io::ErrorKind::StorageFull, "disk full"),
        );
        stop.stop_error("applying a committed transaction", &error);
        assert_eq!(
            stop.cause().map(|c| c.kind),
            Some(io::ErrorKind::StorageFull)
        );
        // A stop reported again does not replace the cause with "stopped".
        let other = FailStop::new();
        other.stop_error("x", &stop.error());
        assert!(!other.is_stopped());
    }

    #[test]
    fn a_stop_that_damage_caused_says_to_restore_not_to_reopen() {
        let stop = FailStop::new();
        let damage = Error::CorruptPage {
            file: "data.0".into(),
            page_id: crate::format::PageId::new(0, 31),
            reason: "page number 31 is past the end of data.0 (13 pages)".into(),
        };
        stop.stop_error("applying a committed transaction's rows", &damage);
        let said = stop.error().to_string();
        assert!(
            said.contains("restore the database from a backup"),
            "{said}"
        );
        assert!(!said.contains("reopen the database to recover"), "{said}");
        // An I/O failure still says that reopening recovers.
        let io_stop = FailStop::new();
        io_stop.stop_io("writing the log", &io::Error::other("EIO"));
        assert!(
            io_stop
                .error()
                .to_string()
                .contains("then reopen the database to recover"),
            "{}",
            io_stop.error()
        );
    }
}
