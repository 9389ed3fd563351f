//! Transactions: durability levels and the commit record.
//!
//! A transaction's rows wait in its session until commit (deferred update). Commit appends one
//! `TxnCommit` record holding every row (the commit point), waits for it to be durable when
//! the durability is `sync`, and only then applies the rows to the tables. So:
//! * uncommitted and rolled-back rows never touch a page: rollback drops a list, and no
//!   other session can see them;
//! * recovery never undoes anything: it redoes page changes, then re-applies committed
//!   transactions whose rows did not reach a page before the crash (insert if absent).
//!
//! Isolation delivered: **read committed**. Other sessions see a row only after its
//! transaction's commit record is in the log (durable, with `sync`). A committing
//! transaction's rows become visible one by one while it applies them (each row atomically),
//! so a concurrent reader may see some rows of a transaction that has committed and not yet
//! the rest. A session sees its own uncommitted rows through `get`.

use crate::error::{Error, Result};
use crate::keys::Key;

/// When a commit returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// After an fdatasync that covers the commit record (group commit). The default.
    Sync,
    /// At once (delayed durability); the log flusher makes it durable within the log's
    /// `async_flush_interval` (10 ms by default). A crash can lose the last commits, never
    /// part of one.
    Async,
    /// No log at all, for experiments. A crash loses every table's rows: the next open
    /// empties the tables.
    None,
}

impl Durability {
    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            Durability::Sync => "sync",
            Durability::Async => "async",
            Durability::None => "none",
        }
    }

    /// Parses `sync`, `async` or `none`.
    pub fn parse(text: &str) -> Option<Durability> {
        match text {
            "sync" => Some(Durability::Sync),
            "async" => Some(Durability::Async),
            "none" => Some(Durability::None),
            _ => None,
        }
    }
}

/// One row of a commit record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitRow<'a> {
    /// The table's position in the catalog.
    pub table: u32,
    /// The row's key.
    pub key: &'a [u8],
    /// The row.
    pub row: &'a [u8],
}

/// Appends a commit record's payload to `out`: `txn u64, count u32, (table u32, key_len u8,
/// key, row_len u32, row)*`.
pub fn encode_commit<'a>(
    out: &mut Vec<u8>,
    txn: u64,
    rows: impl ExactSizeIterator<Item = (u32, Key, &'a [u8])>,
) {
    out.clear();
    out.extend_from_slice(&txn.to_le_bytes());
    out.extend_from_slice(&(rows.len() as u32).to_le_bytes());
    for (table, key, row) in rows {
        out.extend_from_slice(&table.to_le_bytes());
        out.push(key.as_bytes().len() as u8);
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(&(row.len() as u32).to_le_bytes());
        out.extend_from_slice(row);
    }
}

/// Decodes a commit record's payload.
pub fn decode_commit(payload: &[u8]) -> Result<(u64, Vec<CommitRow<'_>>)> {
    let bad = || Error::CorruptPage {
        file: "wal".into(),
        page_id: 0,
        reason: "malformed commit record".into(),
    };
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8]> {
        let slice = payload.get(at..at + n).ok_or_else(bad)?;
        at += n;
        Ok(slice)
    };
    let txn = u64::from_le_bytes(take(8)?.try_into().map_err(|_| bad())?);
    let count = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?) as usize;
    let mut rows = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        let table = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?);
        let key_len = usize::from(take(1)?[0]);
        let key = take(key_len)?;
        let row_len = u32::from_le_bytes(take(4)?.try_into().map_err(|_| bad())?) as usize;
        let row = take(row_len)?;
        rows.push(CommitRow { table, key, row });
    }
    if at != payload.len() {
        return Err(bad());
    }
    Ok((txn, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_records_round_trip_and_reject_truncation() {
        let rows = [
            (0u32, Key::from_i64(7), &b"seven"[..]),
            (3, Key::from_i64(-1), &b""[..]),
        ];
        let mut out = Vec::new();
        encode_commit(&mut out, 42, rows.iter().copied());
        let (txn, back) = decode_commit(&out).expect("decode");
        assert_eq!(txn, 42);
        assert_eq!(back.len(), 2);
        assert_eq!(
            (back[0].table, back[0].key, back[0].row),
            (0, Key::from_i64(7).as_bytes(), &b"seven"[..])
        );
        assert_eq!((back[1].table, back[1].row), (3, &b""[..]));
        for len in 0..out.len() {
            assert!(decode_commit(&out[..len]).is_err());
        }
    }

    #[test]
    fn durability_names_round_trip() {
        for d in [Durability::Sync, Durability::Async, Durability::None] {
            assert_eq!(Durability::parse(d.name()), Some(d));
        }
        assert_eq!(Durability::parse("fast"), None);
    }
}
