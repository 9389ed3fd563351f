//! Transaction names ([`Session::name_transaction`](super::Session::name_transaction)), for
//! the log's readers (SQL Server's `[Transaction Name]` in `fn_dblog`). They are kept in
//! memory, not in the log: a name is not needed to recover, and a log record for it would
//! be a format change older binaries could not read. So the database knows the names of
//! the transactions committed since it was opened (the log before that shows
//! [`TxnName::Unknown`]), at most [`NAMES_MAX`] of them (the oldest are forgotten, and the
//! log up to them becomes unknown too).

use crate::log::Lsn;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Named transactions remembered; past this many, the oldest are forgotten.
pub const NAMES_MAX: usize = 1 << 16;

/// What the database knows of a logged transaction's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnName {
    /// Named by [`Session::name_transaction`](super::Session::name_transaction).
    Named(Arc<str>),
    /// Committed since the database was opened, without a name.
    Unnamed,
    /// Not known: committed before the database was opened, or forgotten (or the record
    /// is not a transaction's).
    Unknown,
}

/// The names of the transactions committed since the open.
#[derive(Debug)]
pub(crate) struct TxnNames {
    /// Commit records at or after this LSN are known: named if in `names`, else unnamed.
    known_from: Lsn,
    names: HashMap<u64, Arc<str>>,
    /// Oldest first: each name's transaction and the log's end before its commit.
    order: VecDeque<(u64, Lsn)>,
}

impl TxnNames {
    /// Knows the transactions whose commit records start at `known_from` or later.
    pub(crate) fn new(known_from: Lsn) -> TxnNames {
        TxnNames {
            known_from,
            names: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// Records transaction `txn`'s name before its commit record is appended at
    /// `log_end` or later (so that no reader sees the record without its name).
    pub(crate) fn record(&mut self, txn: u64, name: Arc<str>, log_end: Lsn) {
        if self.order.len() >= NAMES_MAX
            && let Some((oldest, _)) = self.order.pop_front()
        {
            self.names.remove(&oldest);
            // Its commit was appended after its own `log_end`, somewhere before this one's
            // (NAMES_MAX named commits ago): the log before this one's is no longer known.
            self.known_from = self.known_from.max(log_end);
        }
        self.names.insert(txn, name);
        self.order.push_back((txn, log_end));
    }

    /// The name of transaction `txn`, whose commit record (or first part) is at `lsn`.
    pub(crate) fn name(&self, txn: u64, lsn: Lsn) -> TxnName {
        if lsn < self.known_from {
            return TxnName::Unknown;
        }
        match self.names.get(&txn) {
            Some(name) => TxnName::Named(Arc::clone(name)),
            None => TxnName::Unnamed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_known_from_the_open_and_forgotten_oldest_first() {
        let mut names = TxnNames::new(100);
        assert_eq!(names.name(1, 50), TxnName::Unknown);
        assert_eq!(names.name(1, 100), TxnName::Unnamed);
        names.record(7, Arc::from("InsertRecord"), 200);
        assert_eq!(
            names.name(7, 208),
            TxnName::Named(Arc::from("InsertRecord"))
        );
        for txn in 0..NAMES_MAX as u64 {
            names.record(1000 + txn, Arc::from("t"), 300 + txn);
        }
        // 7 was forgotten: its commit (at 208) and everything before is unknown now.
        let last = NAMES_MAX as u64 - 1;
        assert_eq!(names.name(7, 208), TxnName::Unknown);
        assert_eq!(names.name(5, 150), TxnName::Unknown);
        assert_eq!(names.name(1001, 301), TxnName::Unknown);
        assert_eq!(
            names.name(1000 + last, 300 + last),
            TxnName::Named(Arc::from("t"))
        );
        assert_eq!(names.name(1, 300 + last + 8), TxnName::Unnamed);
    }
}
