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

use crate::access::keys::Key;
use crate::error::{Error, Result};
use crate::format::PageId;

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
        page_id: PageId::new(0, 0),
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

/// One part of a transaction too large for one log record (`RecordKind::TxnPart`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnPart<'a> {
    /// The LSN of the transaction's first part; [`FIRST_PART`] in the first part itself.
    pub first: u64,
    /// True for the transaction's last part: its commit point.
    pub last: bool,
    /// The transaction's id.
    pub txn: u64,
    /// The rows this part holds.
    pub rows: Vec<CommitRow<'a>>,
}

impl TxnPart<'_> {
    /// The LSN of the transaction's first part, given this part's own LSN.
    pub fn first_lsn(&self, own_lsn: u64) -> u64 {
        if self.first == FIRST_PART {
            own_lsn
        } else {
            self.first
        }
    }
}

/// The `first` of a transaction's first part (which cannot name its own LSN before it has
/// one; no record is at LSN `u64::MAX`).
pub const FIRST_PART: u64 = u64::MAX;
/// Bytes a part's header adds before the commit payload: `first u64, last u8`.
pub const PART_HEADER_BYTES: usize = 9;
/// Bytes a commit payload's header takes: `txn u64, count u32`.
pub const COMMIT_HEADER_BYTES: usize = 12;

/// Bytes one row takes in a commit payload: `table u32, key_len u8, key, row_len u32, row`.
pub fn encoded_row_bytes(key: &Key, row: &[u8]) -> usize {
    4 + 1 + key.as_bytes().len() + 4 + row.len()
}

/// Appends a transaction part's payload to `out` (cleared first): `first u64, last u8`,
/// then a commit payload of `rows`.
pub fn encode_part<'a>(
    out: &mut Vec<u8>,
    first: u64,
    last: bool,
    txn: u64,
    rows: impl ExactSizeIterator<Item = (u32, Key, &'a [u8])>,
) {
    let mut body = Vec::new();
    encode_commit(&mut body, txn, rows);
    out.clear();
    out.extend_from_slice(&first.to_le_bytes());
    out.push(u8::from(last));
    out.extend_from_slice(&body);
}

/// Decodes a transaction part's payload.
pub fn decode_part(payload: &[u8]) -> Result<TxnPart<'_>> {
    let bad = || Error::CorruptPage {
        file: "wal".into(),
        page_id: PageId::new(0, 0),
        reason: "malformed transaction part".into(),
    };
    let head = payload.get(..PART_HEADER_BYTES).ok_or_else(bad)?;
    let first = u64::from_le_bytes(head[..8].try_into().map_err(|_| bad())?);
    let last = match head[8] {
        0 => false,
        1 => true,
        _ => return Err(bad()),
    };
    let (txn, rows) = decode_commit(&payload[PART_HEADER_BYTES..])?;
    Ok(TxnPart {
        first,
        last,
        txn,
        rows,
    })
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
    fn parts_round_trip_and_reject_truncation() {
        let rows = [(2u32, Key::from_i64(9), &b"nine"[..])];
        let mut out = Vec::new();
        encode_part(&mut out, 4096, true, 77, rows.iter().copied());
        let part = decode_part(&out).expect("decode");
        assert_eq!((part.first, part.last, part.txn), (4096, true, 77));
        assert_eq!(part.first_lsn(8192), 4096);
        assert_eq!(part.rows.len(), 1);
        assert_eq!(
            out.len(),
            PART_HEADER_BYTES + COMMIT_HEADER_BYTES + encoded_row_bytes(&rows[0].1, rows[0].2)
        );
        encode_part(&mut out, FIRST_PART, false, 77, rows.iter().copied());
        assert_eq!(decode_part(&out).expect("first part").first_lsn(8192), 8192);
        for len in 0..out.len() {
            assert!(decode_part(&out[..len]).is_err());
        }
        out[8] = 2;
        assert!(decode_part(&out).is_err(), "last is 0 or 1");
    }

    #[test]
    fn durability_names_round_trip() {
        for d in [Durability::Sync, Durability::Async, Durability::None] {
            assert_eq!(Durability::parse(d.name()), Some(d));
        }
        assert_eq!(Durability::parse("fast"), None);
    }
}
