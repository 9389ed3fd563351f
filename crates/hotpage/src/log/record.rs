//! The log's record format: kinds, the header word, the checksum.
//!
//! A record is 8-byte aligned: a header word `len u32 | crc u32` (little-endian), then the
//! body `kind u8, payload`, then zero padding to 8 bytes. `len` counts header + body. The
//! CRC32C covers the record's own LSN (mixed with the database's log salt) and its body, so
//! a stale record left in a recycled segment, one beyond the end of the log, or one from
//! another database's log never validates at a position it was not written at.

/// A log sequence number: a byte position in the log.
pub type Lsn = u64;

/// Bytes of a record's header word.
pub(crate) const HEADER_BYTES: u64 = 8;

/// The length (`len`: header and body, before padding) of a flush mark.
pub(crate) const FLUSH_MARK_LEN: u64 = HEADER_BYTES + 1 + 8;

/// What a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordKind {
    /// A committed transaction's rows: `txn u64, count u32, (table u32, key_len u8, key, row_len u32, row)*`.
    TxnCommit = 1,
    /// One record inserted into one page: `page u64, key_len u8, key, payload`.
    PageInsert = 2,
    /// Whole page images, applied together: `count u32, (page u64, image)*`.
    PageImages = 3,
    /// A rolled-back transaction (for inspection only): `txn u64, rows u32`.
    TxnAbort = 4,
    /// A new, empty heap page linked after a chain's tail: `tail u64, new u64`. Redo
    /// formats the new page from nothing and sets the tail's `next`.
    HeapLink = 5,
    /// Written by the flusher once per flush: `durable u64`, the log's durable end when it
    /// was appended. Found after a record that fails its checksum, a mark whose `durable`
    /// lies past that record proves the record was made durable, so the damage is not a
    /// torn tail but corruption (see `reader`).
    FlushMark = 6,
    /// One part of a transaction too large for one record: `first u64, last u8`, then a
    /// commit record's payload. `first` is the LSN of the transaction's first part; the
    /// part with `last = 1` is its commit point. Recovery applies the parts of a
    /// transaction only if its last part is in the log.
    TxnPart = 7,
    /// A B+tree split: `log::page_records::TreeSplit` (the left page keeps the keys below
    /// the separator, the new right page gets the record's rows, the parent the separator).
    TreeSplit = 8,
    /// A transaction's name (SQL Server's `BEGIN TRAN name`), for the log's readers only:
    /// `txn u64, name` (UTF-8, the rest of the payload, at most
    /// `db::txn_names::TXN_NAME_BYTES_MAX` bytes). Appended just after the transaction's
    /// commit record (or last part), by the same thread: it names that transaction's latest
    /// commit before it (ids repeat across opens, so a name before its commit could outlive
    /// a lost commit and name another). Recovery skips it. Since catalog format 10.
    TxnName = 9,
}

impl RecordKind {
    /// The kind a body's first byte names, if any.
    pub fn from_byte(byte: u8) -> Option<RecordKind> {
        match byte {
            1 => Some(RecordKind::TxnCommit),
            2 => Some(RecordKind::PageInsert),
            3 => Some(RecordKind::PageImages),
            4 => Some(RecordKind::TxnAbort),
            5 => Some(RecordKind::HeapLink),
            6 => Some(RecordKind::FlushMark),
            7 => Some(RecordKind::TxnPart),
            8 => Some(RecordKind::TreeSplit),
            9 => Some(RecordKind::TxnName),
            _ => None,
        }
    }

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::TxnCommit => "txn-commit",
            RecordKind::PageInsert => "page-insert",
            RecordKind::PageImages => "page-images",
            RecordKind::TxnAbort => "txn-abort",
            RecordKind::HeapLink => "heap-link",
            RecordKind::FlushMark => "flush-mark",
            RecordKind::TxnPart => "txn-part",
            RecordKind::TreeSplit => "tree-split",
            RecordKind::TxnName => "txn-name",
        }
    }
}

/// `n` rounded up to a multiple of 8.
pub(crate) fn round8(n: u64) -> u64 {
    n.div_ceil(8) * 8
}

/// The checksum of a record at `lsn` with body `body_parts` in a log salted with `salt`
/// (0 for a log written before salts: the same checksum as then).
pub(crate) fn record_crc(salt: u64, lsn: Lsn, body_parts: &[&[u8]]) -> u32 {
    let mut crc = crc32c::crc32c(&(lsn ^ salt).to_le_bytes());
    for part in body_parts {
        crc = crc32c::crc32c_append(crc, part);
    }
    crc
}

/// The header word of a record of `len` bytes (header + body) with checksum `crc`.
pub(crate) fn header_word(len: u64, crc: u32) -> u64 {
    debug_assert!(len > HEADER_BYTES && len <= u64::from(u32::MAX));
    (len & u64::from(u32::MAX)) | (u64::from(crc) << 32)
}

/// `(len, crc)` of a header word.
pub(crate) fn parse_header(word: u64) -> (u64, u32) {
    (word & u64::from(u32::MAX), (word >> 32) as u32)
}

/// One record read back from the log.
#[derive(Debug)]
pub struct Record<'a> {
    /// Its LSN.
    pub lsn: Lsn,
    /// The LSN just past it.
    pub end: Lsn,
    /// What it is.
    pub kind: RecordKind,
    /// Its payload (after the kind byte).
    pub payload: &'a [u8],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_unknown_bytes_are_none() {
        for byte in 0..=255u8 {
            if let Some(kind) = RecordKind::from_byte(byte) {
                assert_eq!(kind as u8, byte);
                assert!(!kind.name().is_empty());
            } else {
                assert!(byte == 0 || byte > 9, "{byte}");
            }
        }
    }

    #[test]
    fn a_salt_of_zero_is_the_old_checksum_and_others_differ() {
        let body: &[u8] = b"\x01payload";
        let old = crc32c::crc32c_append(crc32c::crc32c(&4096u64.to_le_bytes()), body);
        assert_eq!(record_crc(0, 4096, &[body]), old);
        assert_ne!(record_crc(0x1234_5678_9abc_def0, 4096, &[body]), old);
        assert_ne!(record_crc(0, 4104, &[body]), old, "another position");
    }

    #[test]
    fn header_words_round_trip() {
        let word = header_word(17, 0xdead_beef);
        assert_eq!(parse_header(word), (17, 0xdead_beef));
        assert_ne!(word, 0, "a published header is never zero");
    }
}
