//! Reading the log back, and telling where it truly ends.
//!
//! After a crash the log ends in one of two ways, and recovery must tell them apart:
//! - **A torn tail**: the last flush's write was cut off by the crash. Its records were
//!   never acknowledged (a commit returns only after the fdatasync that covers it), so the
//!   log ends at the first record that does not validate, and reopening discards the rest.
//! - **Damage**: a record the disk once held whole is bad (a flipped bit, a lost sector, a
//!   missing file), and acknowledged records may follow it. Treating that as the end would
//!   silently drop every later commit. It is [`Error::CorruptLog`], and nothing is changed.
//!
//! The evidence is the flusher's **flush marks**: once per flush it appends a small record
//! holding the log's durable end at that moment. The flusher writes a flush's bytes only
//! after the previous flush's fdatasync returned, so a valid mark at LSN `m` saying
//! `durable = d` proves that everything before `d` reached the disk whole. If such a mark
//! lies past the first bad record and `d` is past it too, the bad record was durable: damage.
//! Marks inside the torn write itself were appended before that write's own fdatasync, so
//! their `d` never reaches past its start: a torn tail is never mistaken for damage.
//!
//! Also damage: a missing segment between two that exist, a missing segment that holds the
//! log's starting point, and (for logs written since the checkpoint flushes the log up to
//! its redo point) a log that ends before the last checkpoint's redo point.
//!
//! Whole-file damage to the last segments (deleted, cut, overwritten, swapped) takes their
//! marks with it; `durable_mark` keeps the durable end outside the log for that, and the
//! open checks it (`check_reaches_durable_mark`). What neither can see: damage inside the
//! log written since the last durable mark, with no later flush mark to prove it durable,
//! reads as a torn tail. docs/design.md says so.

use super::RECORD_BYTES_MAX;
use super::record::{
    FLUSH_MARK_LEN, HEADER_BYTES, Lsn, Record, RecordKind, parse_header, record_crc, round8,
};
use super::segments::list_segments;
use crate::error::{Error, Result};
use crate::format::segment_name;
use crate::storage::{Storage, StorageFile};

/// Where the valid log ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogEnd {
    /// The end of the valid log: appends continue here.
    pub end: Lsn,
    /// Bytes the segment files hold past `end`: a torn write that was never acknowledged,
    /// discarded when the log is reopened for writing.
    pub torn_bytes: u64,
}

/// Reads the log of one database.
pub struct LogReader<'a> {
    storage: &'a dyn Storage,
    segment_bytes: u64,
    salt: u64,
}

/// What `next_record` found at a position.
enum Found<'r> {
    Valid(Record<'r>),
    /// No valid record here (torn, damaged, zero, or past the files' end).
    Invalid,
}

impl<'a> LogReader<'a> {
    /// A reader of the log in `storage`, with segments of `segment_bytes` and checksums
    /// salted with `salt` (the catalog's; 0 for a log written before salts).
    pub fn new(storage: &'a dyn Storage, segment_bytes: u64, salt: u64) -> LogReader<'a> {
        debug_assert!(segment_bytes > 0 && segment_bytes.is_multiple_of(8));
        LogReader {
            storage,
            segment_bytes,
            salt,
        }
    }

    /// The log's segment size.
    pub fn segment_bytes(&self) -> u64 {
        self.segment_bytes
    }

    fn damage(&self, lsn: Lsn, reason: impl Into<String>) -> Error {
        Error::CorruptLog {
            file: segment_name(lsn / self.segment_bytes).into(),
            offset: lsn % self.segment_bytes,
            lsn,
            reason: reason.into(),
        }
    }

    /// Finds where the log that starts at `from` ends, and proves it is an end: every
    /// segment from `from` on is present, no durable record past the end is lost, and the
    /// end is not before `required` (the last checkpoint's redo point, where the log was
    /// flushed to; 0 to skip that check). Reads only.
    pub fn find_end(&self, from: Lsn, required: Lsn) -> Result<LogEnd> {
        let segments = list_segments(self.storage)?;
        self.check_segments(&segments, from)?;
        let end = self.valid_prefix_end(from)?;
        debug_assert!(end >= from && end.is_multiple_of(8));
        if let Some((mark, durable)) = self.durable_mark_past(end, &segments)? {
            return Err(self.damage(
                end,
                format!(
                    "a record here fails its checksum, but the log goes on: a flush mark at LSN {mark} says everything before LSN {durable} was durable"
                ),
            ));
        }
        if end < required {
            return Err(self.damage(
                end,
                format!(
                    "the log ends here, before the last checkpoint's redo point (LSN {required}), up to which it was made durable"
                ),
            ));
        }
        let files_end = self.files_end(&segments)?;
        Ok(LogEnd {
            end,
            torn_bytes: files_end.saturating_sub(end),
        })
    }

    /// A log that ends at `end` although `log.durable` says it was durable to `durable`
    /// lost durable records: damage (see `durable_mark`), named at the end.
    pub fn check_reaches_durable_mark(&self, end: Lsn, durable: Lsn) -> Result<()> {
        if end >= durable {
            return Ok(());
        }
        Err(self.damage(
            end,
            format!(
                "the log ends here, but it had been made durable up to LSN {durable} ({} says so): {} bytes of acknowledged log are missing or unreadable (a segment deleted, cut short, overwritten or swapped?)",
                super::durable_mark::DURABLE_MARK_FILE,
                durable - end
            ),
        ))
    }

    /// Every segment from the one holding `from` to the last must exist.
    fn check_segments(&self, segments: &[u64], from: Lsn) -> Result<()> {
        let first = from / self.segment_bytes;
        let needed: Vec<u64> = segments.iter().copied().filter(|i| *i >= first).collect();
        let missing_first = match needed.first() {
            // Nothing at or after the start: fine only where the log ended exactly at a
            // segment boundary and nothing was written after it.
            None => !from.is_multiple_of(self.segment_bytes),
            Some(&index) => index != first,
        };
        if missing_first {
            return Err(self.damage(
                from,
                "this segment is missing, and recovery must start reading the log in it (at the last checkpoint's start point)",
            ));
        }
        let Some(gap) = needed.windows(2).find(|pair| pair[1] != pair[0] + 1) else {
            return Ok(());
        };
        let missing_from = (gap[0] + 1) * self.segment_bytes;
        // Where the readable log stops before the gap: a record that runs on into the
        // missing segment (or damage before it) ends the log that can be kept, and
        // salvage keeps only whole records.
        let readable_end = self.valid_prefix_end(from)?;
        assert!(
            readable_end <= missing_from,
            "a valid record was read from a missing segment"
        );
        let (lsn, reason) = if readable_end == missing_from {
            (missing_from, "this segment is missing".to_string())
        } else {
            (
                readable_end,
                format!(
                    "no whole valid record starts here, and the log cannot be read on: the next segment, {}, is missing",
                    segment_name(gap[0] + 1)
                ),
            )
        };
        Err(self.damage(
            lsn,
            format!(
                "{reason} (between {} and {})",
                segment_name(gap[0]),
                segment_name(gap[1])
            ),
        ))
    }

    /// The LSN just past the last 8-byte word holding a non-zero byte in the segment
    /// files. The writer zero-fills ahead of the log's end, and those zeros were never log;
    /// so a torn write's trailing all-zero words are not counted either (they cannot be
    /// told apart).
    fn files_end(&self, segments: &[u64]) -> Result<Lsn> {
        let Some(&last) = segments.last() else {
            return Ok(0);
        };
        let name = segment_name(last);
        let written = || -> std::io::Result<u64> {
            let file = self.storage.open(&name, false)?;
            last_non_zero_end(&*file, file.len()?.min(self.segment_bytes))
        };
        let written = written().map_err(|e| Error::io(format!("reading log segment {name}"), e))?;
        Ok(last * self.segment_bytes + written)
    }

    /// The first position from `from` that holds no valid record.
    fn valid_prefix_end(&self, from: Lsn) -> Result<Lsn> {
        let mut stream = SegmentStream::new(self.storage, self.segment_bytes, from);
        let mut lsn = from;
        loop {
            match self.next_record(&mut stream, lsn)? {
                Found::Valid(record) => lsn = record.end,
                Found::Invalid => return Ok(lsn),
            }
            stream.consume(lsn);
        }
    }

    /// The record at `lsn`, if a valid one is there. A record that validates but has a
    /// kind this binary does not know is corruption (or a newer format): never an end.
    fn next_record<'s>(&self, stream: &'s mut SegmentStream<'_>, lsn: Lsn) -> Result<Found<'s>> {
        let Some(header) = stream.bytes(lsn, HEADER_BYTES as usize)? else {
            return Ok(Found::Invalid);
        };
        let word = u64::from_le_bytes(header.try_into().unwrap_or([0; 8]));
        let (len, crc) = parse_header(word);
        // No log holds a longer record: a header that claims one is damage (or a torn
        // write), and believing it would read the whole rest of the log for nothing.
        if len <= HEADER_BYTES || len > RECORD_BYTES_MAX {
            return Ok(Found::Invalid);
        }
        let Some(body) = stream.bytes(lsn + HEADER_BYTES, (len - HEADER_BYTES) as usize)? else {
            return Ok(Found::Invalid);
        };
        if record_crc(self.salt, lsn, &[body]) != crc {
            return Ok(Found::Invalid);
        }
        let Some(kind) = RecordKind::from_byte(body[0]) else {
            return Err(self.damage(
                lsn,
                format!(
                    "a record of unknown kind {} passes its checksum (written by a newer hotpage?)",
                    body[0]
                ),
            ));
        };
        Ok(Found::Valid(Record {
            lsn,
            end: lsn + round8(len),
            kind,
            payload: &body[1..],
        }))
    }

    /// Visits every record in `[from, until)`, which `find_end` proved valid: a record that
    /// does not validate there now is corruption (the files changed under the reader).
    pub fn scan(
        &self,
        from: Lsn,
        until: Lsn,
        mut visit: impl FnMut(&Record<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut stream = SegmentStream::new(self.storage, self.segment_bytes, from);
        let mut lsn = from;
        while lsn < until {
            match self.next_record(&mut stream, lsn)? {
                Found::Valid(record) => {
                    debug_assert!(record.end > record.lsn, "LSNs ascend");
                    if record.end > until {
                        return Err(self.damage(lsn, "a record runs past the end of the log"));
                    }
                    visit(&record)?;
                    lsn = record.end;
                }
                Found::Invalid => {
                    return Err(self.damage(
                        lsn,
                        "a record that validated a moment ago does not now (the files changed)",
                    ));
                }
            }
            stream.consume(lsn);
        }
        Ok(())
    }

    #[cfg(any(test, feature = "testing"))]
    /// Visits the valid records from `from` until the first position that holds none, and
    /// returns that position. For tools that show a log as it is (no proof of an end).
    pub fn scan_prefix(
        &self,
        from: Lsn,
        mut visit: impl FnMut(&Record<'_>) -> Result<()>,
    ) -> Result<Lsn> {
        let mut stream = SegmentStream::new(self.storage, self.segment_bytes, from);
        let mut lsn = from;
        loop {
            match self.next_record(&mut stream, lsn)? {
                Found::Valid(record) => {
                    visit(&record)?;
                    lsn = record.end;
                }
                Found::Invalid => return Ok(lsn),
            }
            stream.consume(lsn);
        }
    }

    /// Visits every record that validates in `[from, until)`, found without knowing where
    /// records start: each 8-byte position is tried, and a valid record's end is where the
    /// next try starts. Salvage counts with it what lies past damage; `inspect log` shows
    /// the retained segments with it (a segment need not start on a record). Returns the
    /// LSN past the last byte the segment files hold.
    pub fn records_between(
        &self,
        from: Lsn,
        until: Lsn,
        mut visit: impl FnMut(&Record<'_>) -> Result<()>,
    ) -> Result<Lsn> {
        let segments = list_segments(self.storage)?;
        // Unparsed bytes carried into the next segment (a record may straddle two).
        let mut carry: Vec<u8> = Vec::new();
        let mut carry_start: Lsn = 0;
        for &index in segments.iter().filter(|i| **i >= from / self.segment_bytes) {
            let base = index * self.segment_bytes;
            let bytes = self.read_segment(index)?;
            let (start, window) = if !carry.is_empty() && carry_start + carry.len() as u64 == base {
                let mut joined = std::mem::take(&mut carry);
                joined.extend_from_slice(&bytes);
                (carry_start, joined)
            } else {
                (base, bytes)
            };
            let mut at = from.saturating_sub(start).min(window.len() as u64) as usize;
            at = at.next_multiple_of(8);
            let mut stalled_at = None;
            while at + HEADER_BYTES as usize <= window.len() {
                let lsn = start + at as u64;
                let word = u64::from_le_bytes(window[at..at + 8].try_into().unwrap_or([0; 8]));
                let (len, crc) = parse_header(word);
                let body_end = at as u64 + len;
                if len <= HEADER_BYTES || len > RECORD_BYTES_MAX {
                    at += 8;
                    continue;
                }
                if body_end > window.len() as u64 {
                    // Maybe a record that goes on in the next segment.
                    stalled_at.get_or_insert(at);
                    at += 8;
                    continue;
                }
                let body = &window[at + HEADER_BYTES as usize..body_end as usize];
                match RecordKind::from_byte(body[0]) {
                    Some(kind) if record_crc(self.salt, lsn, &[body]) == crc => {
                        if lsn >= until {
                            return self.files_end(&segments);
                        }
                        visit(&Record {
                            lsn,
                            end: lsn + round8(len),
                            kind,
                            payload: &body[1..],
                        })?;
                        stalled_at = None;
                        at += round8(len) as usize;
                    }
                    _ => at += 8,
                }
            }
            // A record that straddles into the next segment starts within the longest
            // record's length of this one's end: carry no more than that.
            let keep_from = stalled_at
                .unwrap_or(at)
                .max(window.len().saturating_sub(RECORD_BYTES_MAX as usize))
                .min(window.len());
            carry = window[keep_from..].to_vec();
            carry_start = start + keep_from as u64;
        }
        self.files_end(&segments)
    }

    /// The first valid flush mark after `bad` whose durable end lies past `bad`, as
    /// `(its LSN, its durable end)`. Reads every segment from `bad`'s on, across a short
    /// segment too (a torn write can leave one short and the next one written).
    fn durable_mark_past(&self, bad: Lsn, segments: &[u64]) -> Result<Option<(Lsn, Lsn)>> {
        let mark_bytes = FLUSH_MARK_LEN as usize;
        // The bytes just before this segment's start, when they are the previous segment's
        // last ones (a mark may straddle two segments).
        let mut carry: Vec<u8> = Vec::new();
        let mut carry_end: Lsn = 0;
        for &index in segments.iter().filter(|i| **i >= bad / self.segment_bytes) {
            let base = index * self.segment_bytes;
            let bytes = self.read_segment(index)?;
            let (start, window) = if !carry.is_empty() && carry_end == base {
                let mut joined = std::mem::take(&mut carry);
                let start = base - joined.len() as u64;
                joined.extend_from_slice(&bytes);
                (start, joined)
            } else {
                (base, bytes)
            };
            debug_assert!(start.is_multiple_of(8));
            let mut at = 0usize;
            while at + mark_bytes <= window.len() {
                let lsn = start + at as u64;
                if lsn > bad
                    && let Some(durable) = self.flush_mark_at(&window[at..at + mark_bytes], lsn)
                    && durable > bad
                {
                    return Ok(Some((lsn, durable)));
                }
                at += 8;
            }
            // Keep the last whole words for a mark that straddles into the next segment.
            let keep = window.len().min(16) & !7;
            let kept_from = window.len() - keep;
            carry = window[kept_from..].to_vec();
            carry_end = start + window.len() as u64;
            if !carry_end.is_multiple_of(8) {
                carry.clear();
            }
        }
        Ok(None)
    }

    /// The durable end a valid flush mark at `lsn` holds (`bytes` are its first
    /// `FLUSH_MARK_LEN` bytes), or `None` if no valid mark is there.
    fn flush_mark_at(&self, bytes: &[u8], lsn: Lsn) -> Option<Lsn> {
        let word = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
        let (len, crc) = parse_header(word);
        let body = bytes.get(HEADER_BYTES as usize..FLUSH_MARK_LEN as usize)?;
        if len != FLUSH_MARK_LEN || body[0] != RecordKind::FlushMark as u8 {
            return None;
        }
        if record_crc(self.salt, lsn, &[body]) != crc {
            return None;
        }
        Some(u64::from_le_bytes(body[1..9].try_into().ok()?))
    }

    /// Whose records segment `index`'s file holds, when they validate as another
    /// segment's (one of `homes`) and not as its own: a segment renamed, swapped with
    /// another or overwritten by a copy of one. The checksums are salted with each
    /// record's LSN, so the first two records of the file say where it belongs. `None`
    /// when they validate as its own, or as none of `homes` (in the first
    /// `MISPLACED_SCAN_BYTES`). Reads only; for `hotpage recover`'s report.
    pub fn misplaced_home(&self, index: u64, homes: &[u64]) -> Result<Option<u64>> {
        const MISPLACED_SCAN_BYTES: usize = 64 << 10;
        // The records tried start in the first 64 KiB and are at most 1 MiB long.
        let bytes = self.read_segment_prefix(index, MISPLACED_SCAN_BYTES as u64 + (2 << 20))?;
        let candidates: Vec<u64> = std::iter::once(index)
            .chain(homes.iter().copied().filter(|home| *home != index))
            .collect();
        let limit = bytes.len().min(MISPLACED_SCAN_BYTES);
        for at in (0..limit).step_by(8) {
            for &home in &candidates {
                let base = home * self.segment_bytes;
                let Some(len) = self.record_len_at(&bytes, at, base) else {
                    continue;
                };
                if self.record_len_at(&bytes, at + len, base).is_some() {
                    return Ok((home != index).then_some(home));
                }
            }
        }
        Ok(None)
    }

    /// The padded length of the record at `bytes[at..]` if one validates there as the
    /// record at LSN `base + at`.
    fn record_len_at(&self, bytes: &[u8], at: usize, base: Lsn) -> Option<usize> {
        let header = bytes.get(at..at + HEADER_BYTES as usize)?;
        let (len, crc) = parse_header(u64::from_le_bytes(header.try_into().ok()?));
        // Longer records are rare, and a body's checksum is computed for each try.
        if len <= HEADER_BYTES || len > RECORD_BYTES_MAX.min(1 << 20) {
            return None;
        }
        let body = bytes.get(at + HEADER_BYTES as usize..at + len as usize)?;
        let valid = record_crc(self.salt, base + at as u64, &[body]) == crc
            && RecordKind::from_byte(body[0]).is_some();
        valid.then_some(round8(len) as usize)
    }

    fn read_segment(&self, index: u64) -> Result<Vec<u8>> {
        self.read_segment_prefix(index, self.segment_bytes)
    }

    /// The first `max` bytes of segment `index` (fewer if the file is shorter).
    fn read_segment_prefix(&self, index: u64, max: u64) -> Result<Vec<u8>> {
        let name = segment_name(index);
        let read = || -> std::io::Result<Vec<u8>> {
            let file = self.storage.open(&name, false)?;
            let len = file.len()?.min(self.segment_bytes).min(max);
            let mut bytes = vec![0u8; len as usize];
            file.read_at(&mut bytes, 0)?;
            Ok(bytes)
        };
        read().map_err(|e| Error::io(format!("reading log segment {name}"), e))
    }
}

/// Just past the last 8-byte word of `file`'s first `len` bytes that holds a non-zero byte
/// (0 if none), read backwards in chunks: the zero-filled space after the log's end is
/// most of a segment, and is skipped without reading the log before it.
fn last_non_zero_end(file: &dyn StorageFile, len: u64) -> std::io::Result<u64> {
    const CHUNK_BYTES: u64 = 64 << 10;
    let mut chunk = vec![0u8; CHUNK_BYTES as usize];
    let mut end = len;
    while end > 0 {
        let start = end.saturating_sub(CHUNK_BYTES);
        let bytes = &mut chunk[..(end - start) as usize];
        file.read_at(bytes, start)?;
        if let Some(at) = bytes.iter().rposition(|b| *b != 0) {
            return Ok(round8(start + at as u64 + 1));
        }
        end = start;
    }
    Ok(0)
}

/// The log's byte stream across segment files, read forward from a starting LSN. A
/// missing or short segment ends the stream.
struct SegmentStream<'a> {
    storage: &'a dyn Storage,
    segment_bytes: u64,
    data: Vec<u8>,
    // LSN of data[0].
    data_start: Lsn,
    next_segment: u64,
    exhausted: bool,
}

impl<'a> SegmentStream<'a> {
    fn new(storage: &'a dyn Storage, segment_bytes: u64, from: Lsn) -> SegmentStream<'a> {
        SegmentStream {
            storage,
            segment_bytes,
            data: Vec::new(),
            data_start: from,
            next_segment: from / segment_bytes,
            exhausted: false,
        }
    }

    /// `len` bytes at `lsn`, or `None` where the log's files end first.
    fn bytes(&mut self, lsn: Lsn, len: usize) -> Result<Option<&[u8]>> {
        debug_assert!(lsn >= self.data_start, "the stream only reads forward");
        let Some(wanted_end) = lsn.checked_add(len as u64) else {
            return Ok(None);
        };
        while self.data_start + (self.data.len() as u64) < wanted_end {
            if !self.load_next()? {
                return Ok(None);
            }
        }
        let at = (lsn - self.data_start) as usize;
        Ok(Some(&self.data[at..at + len]))
    }

    /// Forgets bytes before `lsn`.
    fn consume(&mut self, lsn: Lsn) {
        let at = ((lsn - self.data_start) as usize).min(self.data.len());
        if at > (1 << 20) {
            self.data.drain(..at);
            self.data_start += at as u64;
        }
    }

    fn load_next(&mut self) -> Result<bool> {
        if self.exhausted {
            return Ok(false);
        }
        let index = self.next_segment;
        let name = segment_name(index);
        let exists = self
            .storage
            .exists(&name)
            .map_err(|e| Error::io("looking for a log segment", e))?;
        if !exists {
            self.exhausted = true;
            return Ok(false);
        }
        let file = self
            .storage
            .open(&name, false)
            .map_err(|e| Error::io(format!("opening log segment {name}"), e))?;
        let len = file
            .len()
            .map_err(|e| Error::io(format!("reading log segment {name}"), e))?
            .min(self.segment_bytes);
        let base = index * self.segment_bytes;
        // Only the bytes from where the stream stands (the first segment may be entered in
        // the middle); a short segment ends the stream after it.
        let stream_at = self.data_start + self.data.len() as u64;
        let skip = stream_at.saturating_sub(base).min(len);
        let mut chunk = vec![0u8; (len - skip) as usize];
        file.read_at(&mut chunk, skip)
            .map_err(|e| Error::io(format!("reading log segment {name}"), e))?;
        self.data.extend_from_slice(&chunk);
        if len < self.segment_bytes {
            self.exhausted = true;
        }
        self.next_segment += 1;
        Ok(true)
    }
}
