//! Transaction names ([`Session::name_transaction`](super::Session::name_transaction)), for
//! the log's readers (SQL Server's `[Transaction Name]` in `fn_dblog`).
//!
//! A name is logged: a `TxnName` record (`txn u64, name`) appended just after the
//! transaction's commit record (or its last part), so that it survives a reopen and a
//! crash. It names the latest commit of that transaction id before it: the same thread
//! appends both, so nothing of that transaction comes between, and a name can never be
//! left to name a later commit (transaction ids repeat across opens: a name logged before
//! its commit, whose commit a crash then lost, would have named the next run's transaction
//! with the same id). A sync commit waits for its name record too, so an acknowledged
//! commit has its name; a commit a crash cut off before its name followed reads as
//! unnamed. Readers therefore read the log twice (`NameCollector`, then [`LoggedNames`]):
//! a record's name is only known once the record after its commit has been read.
//! Recovery skips these records: a name is not needed to recover. They exist since catalog
//! format 10 (`TXN_NAMES_FORMAT_VERSION`), which an older binary refuses as too new
//! instead of taking the new record kind for damage.
//!
//! Before that format, names were kept in memory only, so the log an older binary wrote
//! has none: its commits are [`TxnName::Unknown`], the commits before [`TxnNames`]'
//! `known_from` (the end of the log found by the open that upgraded the database: see
//! `open::names_known_from`). A commit at or after it without a name record is
//! [`TxnName::Unnamed`].

use crate::error::{Error, Result};
use crate::format::PageId;
use crate::log::Lsn;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// The longest transaction name, in bytes (SQL Server's are at most 32 characters).
pub const TXN_NAME_BYTES_MAX: usize = 256;

/// Commits a reader's first pass remembers while it waits for their names: a name record
/// follows its commit closely (only other sessions' records come between), so the most
/// recent ones are enough; a name whose commit was forgotten is lost (see [`LoggedNames`]).
pub const RECENT_COMMITS_MAX: usize = 1 << 16;

/// Names one read of the log holds; past this many, later commits without a name read as
/// [`TxnName::Unknown`] rather than unnamed.
pub const NAMES_READ_MAX: usize = 1 << 20;

/// What the database knows of a logged transaction's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnName {
    /// Named by [`Session::name_transaction`](super::Session::name_transaction).
    Named(Arc<str>),
    /// Logged by a binary that logs names, without a name.
    Unnamed,
    /// Not known: logged before names were (an older binary's log), or the record is not
    /// a transaction's.
    Unknown,
}

/// The payload of a `TxnName` record: `txn u64` (little-endian), then the name's bytes.
pub fn encode_txn_name(txn: u64, name: &str) -> Vec<u8> {
    let mut payload = Vec::with_capacity(8 + name.len());
    payload.extend_from_slice(&txn.to_le_bytes());
    payload.extend_from_slice(name.as_bytes());
    payload
}

/// Decodes a `TxnName` payload into (transaction, name).
pub fn decode_txn_name(payload: &[u8]) -> Result<(u64, &str)> {
    let bad = |reason: &str| Error::CorruptPage {
        file: "wal".into(),
        page_id: PageId::new(0, 0),
        reason: format!("malformed txn-name record: {reason}"),
    };
    let (txn, name) = payload
        .split_first_chunk::<8>()
        .ok_or_else(|| bad("shorter than its transaction id"))?;
    if name.len() > TXN_NAME_BYTES_MAX {
        return Err(bad("name too long"));
    }
    let name = std::str::from_utf8(name).map_err(|_| bad("name not UTF-8"))?;
    Ok((u64::from_le_bytes(*txn), name))
}

/// Where in the log a commit without a name record is known to be unnamed.
#[derive(Clone, Debug)]
pub(crate) struct TxnNames {
    /// Commit records at or after this LSN were logged by a binary that logs names.
    known_from: Lsn,
}

impl TxnNames {
    /// Knows the transactions whose commit records start at `known_from` or later.
    pub(crate) fn new(known_from: Lsn) -> TxnNames {
        TxnNames { known_from }
    }

    /// The name of the transaction whose commit record (or first part) is at `lsn`, given
    /// the name record the scan found for it, if any.
    pub(crate) fn name(&self, logged: Option<Arc<str>>, lsn: Lsn) -> TxnName {
        match logged {
            Some(name) => TxnName::Named(name),
            None if lsn >= self.known_from => TxnName::Unnamed,
            None => TxnName::Unknown,
        }
    }
}

/// A reader's first pass: each transaction's latest commit (or first part) and the name
/// records that follow.
#[derive(Debug, Default)]
pub(crate) struct NameCollector {
    recent: HashMap<u64, Lsn>,
    /// Oldest first, to forget past [`RECENT_COMMITS_MAX`].
    order: VecDeque<(u64, Lsn)>,
    read: LoggedNames,
}

impl NameCollector {
    /// Transaction `txn`'s commit record (or first part) is at `lsn`.
    pub(crate) fn committed(&mut self, txn: u64, lsn: Lsn) {
        if self.order.len() >= RECENT_COMMITS_MAX
            && let Some((oldest, at)) = self.order.pop_front()
            && self.recent.get(&oldest) == Some(&at)
        {
            self.recent.remove(&oldest);
        }
        self.recent.insert(txn, lsn);
        self.order.push_back((txn, lsn));
    }

    /// A name record for transaction `txn`: it names that transaction's latest commit.
    pub(crate) fn named(&mut self, txn: u64, name: &str) {
        match self.recent.remove(&txn) {
            Some(lsn) if self.read.names.len() < NAMES_READ_MAX => {
                self.read.names.insert(lsn, Arc::from(name));
            }
            // Its commit was forgotten, or there is no room: the name is lost.
            _ => self.read.lossy = true,
        }
    }

    /// The names read.
    pub(crate) fn finish(self) -> LoggedNames {
        self.read
    }
}

/// The names a reader's first pass found, by their commit record's LSN.
#[derive(Debug, Default)]
pub(crate) struct LoggedNames {
    names: HashMap<Lsn, Arc<str>>,
    /// A name was dropped: a commit without one may have had one.
    lossy: bool,
}

impl LoggedNames {
    /// The name of the transaction whose commit record (or first part) is at `lsn`.
    pub(crate) fn name(&self, lsn: Lsn, known: &TxnNames) -> TxnName {
        match self.names.get(&lsn) {
            Some(name) => TxnName::Named(Arc::clone(name)),
            None if self.lossy => TxnName::Unknown,
            None => known.name(None, lsn),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_names_its_transactions_latest_commit_and_no_later_one() {
        let known = TxnNames::new(100);
        let mut collector = NameCollector::default();
        collector.committed(7, 50);
        collector.committed(8, 60);
        collector.named(7, "old run");
        // Transaction ids repeat across opens: a later commit of 7 is not "old run".
        collector.committed(7, 208);
        collector.committed(9, 216);
        collector.named(9, "InsertRecord");
        let names = collector.finish();
        assert_eq!(names.name(50, &known), TxnName::Named(Arc::from("old run")));
        assert_eq!(
            names.name(60, &known),
            TxnName::Unknown,
            "before known_from"
        );
        assert_eq!(names.name(208, &known), TxnName::Unnamed);
        assert_eq!(
            names.name(216, &known),
            TxnName::Named(Arc::from("InsertRecord"))
        );
    }

    #[test]
    fn a_name_whose_commit_was_forgotten_makes_unnamed_commits_unknown() {
        let known = TxnNames::new(0);
        let mut collector = NameCollector::default();
        collector.committed(1, 8);
        for txn in 2..=RECENT_COMMITS_MAX as u64 + 1 {
            collector.committed(txn, txn * 8);
        }
        collector.named(1, "too late");
        collector.named(2, "in time");
        let names = collector.finish();
        assert_eq!(names.name(16, &known), TxnName::Named(Arc::from("in time")));
        assert_eq!(names.name(8, &known), TxnName::Unknown);
        assert_eq!(names.name(24, &known), TxnName::Unknown);
    }

    #[test]
    fn name_records_round_trip_and_bad_ones_are_refused() {
        let payload = encode_txn_name(0x0102_0304_0506_0708, "InsertRecord");
        assert_eq!(
            decode_txn_name(&payload).unwrap(),
            (0x0102_0304_0506_0708, "InsertRecord")
        );
        assert_eq!(decode_txn_name(&encode_txn_name(9, "")).unwrap(), (9, ""));
        assert!(decode_txn_name(&payload[..7]).is_err());
        let mut not_utf8 = encode_txn_name(1, "x");
        not_utf8.push(0xff);
        assert!(decode_txn_name(&not_utf8).is_err());
        let long = "n".repeat(TXN_NAME_BYTES_MAX + 1);
        assert!(decode_txn_name(&encode_txn_name(1, &long)).is_err());
    }
}
