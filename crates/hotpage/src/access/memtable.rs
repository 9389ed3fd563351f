//! Memory-optimized tables (design `memory`; seed 001 V6, SQL Server In-Memory OLTP).
//!
//! A memory table keeps its rows in a latch-free ordered index in memory (a lock-free skip
//! list, `crossbeam_skiplist::SkipMap`): an insert takes no page latch, writes no page and
//! logs nothing of its own. Its only log is the transaction's commit record, which
//! `Session::commit` writes for every design. There is nothing to wait on but that log.
//!
//! Durability comes from two things:
//! - the **commit records** in the log, from the checkpoint's logical point on, and
//! - the table's **checkpoint file** `mem.<table id>`: an append-only sequence of CRC32C
//!   framed rows. Every checkpoint appends the rows applied since the previous one and
//!   fdatasyncs the file before it stores the catalog, and the catalog records the file's
//!   synced length. At open the file is read up to that length (a longer file has a tail a
//!   crash left behind: it is cut off), then recovery re-applies commits from the logical
//!   point (insert if absent). `docs/design.md` has the argument why no acknowledged row is
//!   lost.
//!
//! ```text
//! file:  header | frame*
//! header (16 bytes): magic "HPMEMTB\0" | format u32 | crc32c u32 of the 12 bytes before it
//! frame: body_len u32 | crc32c u32 of (body_len bytes, body) | body
//! body:  key_len u8 | key (1 to 32 bytes) | row
//! ```
//! All integers little-endian. A memory table's rows are not bounded by the buffer pool:
//! the whole table lives in memory (in SQL Server too), plus one file-sized copy of nothing
//! (the file is read in chunks at open).

use crate::access::keys::{KEY_BYTES_MAX, Key};
use crate::access::{Inserted, TreeStats};
use crate::error::{Error, Result};
use crate::format::{MEMTABLE_FORMAT, MEMTABLE_MAGIC, memtable_file_name};
use crate::page::PAGE_SIZE_MAX;
use crate::storage::{Storage, StorageFile};
use crossbeam_queue::SegQueue;
use crossbeam_skiplist::SkipMap;
use parking_lot::Mutex;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of the file header.
pub const HEADER_BYTES: usize = 16;
/// Bytes before each frame's body: its length and checksum.
pub const FRAME_HEADER_BYTES: usize = 8;
/// The largest frame body: key-length byte, the longest key, a row no page size exceeds.
pub const FRAME_BODY_MAX: usize = 1 + KEY_BYTES_MAX + PAGE_SIZE_MAX;
/// Bytes read (at open and by `verify`) and written (at a checkpoint) per call.
const IO_CHUNK_BYTES: usize = 1 << 20;

/// The file header.
pub fn encode_header() -> [u8; HEADER_BYTES] {
    let mut header = [0u8; HEADER_BYTES];
    header[..8].copy_from_slice(MEMTABLE_MAGIC);
    header[8..12].copy_from_slice(&MEMTABLE_FORMAT.to_le_bytes());
    let crc = crc32c::crc32c(&header[..12]);
    header[12..].copy_from_slice(&crc.to_le_bytes());
    header
}

/// Appends one frame holding `key` and `row` to `out`.
pub fn encode_frame(out: &mut Vec<u8>, key: &[u8], row: &[u8]) {
    let body_len = (1 + key.len() + row.len()) as u32;
    let start = out.len();
    out.extend_from_slice(&body_len.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]); // the checksum, filled in below
    out.push(key.len() as u8);
    out.extend_from_slice(key);
    out.extend_from_slice(row);
    let crc = crc32c::crc32c_append(
        crc32c::crc32c(&out[start..start + 4]),
        &out[start + FRAME_HEADER_BYTES..],
    );
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// What [`parse_frame`] found at the front of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A whole, valid frame of `bytes` bytes (header included).
    Frame {
        key: &'a [u8],
        row: &'a [u8],
        bytes: usize,
    },
    /// The frame is longer than the buffer: it needs `bytes` bytes in all.
    Needs { bytes: usize },
}

/// Parses the frame at the front of `bytes`. A damaged frame (bad length, checksum or key)
/// is `Err` with the reason.
pub fn parse_frame(bytes: &[u8]) -> std::result::Result<Parsed<'_>, String> {
    let Some(head) = bytes.get(..FRAME_HEADER_BYTES) else {
        return Ok(Parsed::Needs {
            bytes: FRAME_HEADER_BYTES,
        });
    };
    let word = |at: usize| u32::from_le_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    let body_len = word(0) as usize;
    if !(2..=FRAME_BODY_MAX).contains(&body_len) {
        return Err(format!("frame length {body_len} is out of range"));
    }
    let total = FRAME_HEADER_BYTES + body_len;
    let Some(body) = bytes.get(FRAME_HEADER_BYTES..total) else {
        return Ok(Parsed::Needs { bytes: total });
    };
    let crc = crc32c::crc32c_append(crc32c::crc32c(&head[..4]), body);
    if crc != word(4) {
        return Err("frame checksum mismatch".into());
    }
    let key_len = usize::from(body[0]);
    if key_len == 0 || key_len > KEY_BYTES_MAX || 1 + key_len > body.len() {
        return Err(format!("frame key length {key_len} is out of range"));
    }
    Ok(Parsed::Frame {
        key: &body[1..1 + key_len],
        row: &body[1 + key_len..],
        bytes: total,
    })
}

fn corrupt(file: &str, offset: u64, reason: impl Into<String>) -> Error {
    Error::CorruptFile {
        file: file.to_string(),
        offset,
        reason: reason.into(),
    }
}

fn check_header(header: &[u8], file: &str) -> Result<()> {
    if header.len() < HEADER_BYTES || &header[..8] != MEMTABLE_MAGIC {
        return Err(corrupt(file, 0, "no memory-table file magic"));
    }
    let crc = u32::from_le_bytes([header[12], header[13], header[14], header[15]]);
    if crc32c::crc32c(&header[..12]) != crc {
        return Err(corrupt(file, 0, "header checksum mismatch"));
    }
    let format = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    if format > MEMTABLE_FORMAT {
        return Err(Error::FormatTooNew {
            found: format,
            supported: MEMTABLE_FORMAT,
        });
    }
    Ok(())
}

#[cfg(any(test, feature = "testing"))]
/// Decodes a whole checkpoint file (`bytes` is its durable part): every row in file order.
/// An empty file has no rows; anything damaged is `CorruptFile` naming `file`.
pub fn decode(bytes: &[u8], file: &str) -> Result<Vec<(Key, Vec<u8>)>> {
    let mut rows = Vec::new();
    if bytes.is_empty() {
        return Ok(rows);
    }
    check_header(bytes, file)?;
    let mut at = HEADER_BYTES;
    while at < bytes.len() {
        match parse_frame(&bytes[at..]).map_err(|reason| corrupt(file, at as u64, reason))? {
            Parsed::Frame { key, row, bytes } => {
                rows.push((Key::from_bytes(key)?, row.to_vec()));
                at += bytes;
            }
            Parsed::Needs { .. } => {
                return Err(corrupt(
                    file,
                    at as u64,
                    "a frame runs past the durable end of the file",
                ));
            }
        }
    }
    Ok(rows)
}

/// Reads the frames of `file` in `[0, len)` in chunks, calling `visit(key, row)` for each.
/// Returns the rows read.
fn read_frames(
    file: &dyn StorageFile,
    name: &str,
    len: u64,
    mut visit: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<u64> {
    if len == 0 {
        return Ok(0);
    }
    let io = |e| Error::io(format!("reading {name}"), e);
    let actual = file.len().map_err(io)?;
    if actual < len {
        return Err(corrupt(
            name,
            actual,
            format!("the file has {actual} bytes, the catalog says {len} are durable"),
        ));
    }
    if len < HEADER_BYTES as u64 {
        return Err(corrupt(name, 0, "shorter than its header"));
    }
    let mut header = [0u8; HEADER_BYTES];
    file.read_at(&mut header, 0).map_err(io)?;
    check_header(&header, name)?;
    let mut rows = 0u64;
    // `buf` holds the file's bytes from offset `buf_at`; frames are parsed from `pos`.
    let mut buf: Vec<u8> = Vec::new();
    let mut buf_at = HEADER_BYTES as u64;
    let mut pos = 0usize;
    while buf_at + (pos as u64) < len {
        match parse_frame(&buf[pos..])
            .map_err(|reason| corrupt(name, buf_at + pos as u64, reason))?
        {
            Parsed::Frame { key, row, bytes } => {
                visit(key, row)?;
                rows += 1;
                pos += bytes;
            }
            Parsed::Needs { bytes } => {
                let loaded_end = buf_at + buf.len() as u64;
                let frame_end = buf_at + (pos + bytes) as u64;
                if frame_end > len {
                    return Err(corrupt(
                        name,
                        buf_at + pos as u64,
                        "a frame runs past the durable end of the file",
                    ));
                }
                buf.drain(..pos);
                buf_at += pos as u64;
                pos = 0;
                // At least the rest of this frame, in chunks of IO_CHUNK_BYTES or more.
                let want = (frame_end - loaded_end).max(IO_CHUNK_BYTES as u64);
                let take = want.min(len - loaded_end) as usize;
                let old = buf.len();
                buf.resize(old + take, 0);
                file.read_at(&mut buf[old..], loaded_end).map_err(io)?;
            }
        }
    }
    Ok(rows)
}

/// Figures of a memory table for reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Rows in memory.
    pub rows: u64,
    /// Bytes of their keys.
    pub key_bytes: u64,
    /// Bytes of their rows. (The index adds a node per row on top of keys and rows.)
    pub row_bytes: u64,
    /// The checkpoint file's name.
    pub file: String,
    /// Its durable (synced) length, as the next catalog will record it.
    pub file_bytes: u64,
}

/// A memory-optimized table: the rows, and what the next checkpoint must write.
pub struct MemTable {
    rows: SkipMap<Key, Arc<[u8]>>,
    // Rows inserted since a checkpoint last took them. Lock-free: sessions only push.
    unsaved: SegQueue<(Key, Arc<[u8]>)>,
    // Rows taken from `unsaved` and not yet synced to the file: kept across a failed write
    // or fdatasync, so that the next checkpoint writes them again at the same offset.
    // Only checkpoints (one at a time) lock it.
    pending: Mutex<Vec<(Key, Arc<[u8]>)>>,
    file_name: String,
    file: Arc<dyn StorageFile>,
    // Bytes of the file written and synced: the catalog records this.
    synced_len: AtomicU64,
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("file", &self.file_name)
            .field("rows", &self.rows.len())
            .finish()
    }
}

impl MemTable {
    /// A new, empty memory table for catalog position `table_id`. Any file of that name (from
    /// a table whose creation never reached the catalog) is emptied.
    pub fn create(storage: &dyn Storage, table_id: usize) -> Result<MemTable> {
        let name = memtable_file_name(table_id);
        let file = storage
            .open(&name, true)
            .and_then(|file| file.set_len(0).map(|()| file))
            .map_err(|e| Error::io(format!("creating {name}"), e))?;
        Ok(MemTable::new(name, file, 0))
    }

    /// Opens the memory table at catalog position `table_id` whose file is durable up to
    /// `durable_len` bytes, loading its rows. A longer file is cut to that length (the tail
    /// was written by a checkpoint whose catalog never became durable). Returns the table
    /// and the rows loaded.
    pub fn open(
        storage: &dyn Storage,
        table_id: usize,
        durable_len: u64,
    ) -> Result<(MemTable, u64)> {
        let name = memtable_file_name(table_id);
        let io = |what: &str, e| Error::io(format!("{what} {name}"), e);
        let exists = storage.exists(&name).map_err(|e| io("looking for", e))?;
        if !exists && durable_len > 0 {
            return Err(corrupt(
                &name,
                0,
                format!("the file is missing; the catalog says {durable_len} bytes are durable"),
            ));
        }
        let file = storage.open(&name, true).map_err(|e| io("opening", e))?;
        let table = MemTable::new(name.clone(), Arc::clone(&file), durable_len);
        let loaded = read_frames(&*file, &name, durable_len, |key, row| {
            table.rows.insert(Key::from_bytes(key)?, Arc::from(row));
            Ok(())
        })?;
        if file.len().map_err(|e| io("reading", e))? > durable_len {
            file.set_len(durable_len).map_err(|e| io("truncating", e))?;
        }
        Ok((table, loaded))
    }

    fn new(file_name: String, file: Arc<dyn StorageFile>, synced_len: u64) -> MemTable {
        MemTable {
            rows: SkipMap::new(),
            unsaved: SegQueue::new(),
            pending: Mutex::new(Vec::new()),
            file_name,
            file,
            synced_len: AtomicU64::new(synced_len),
        }
    }

    /// Inserts `row` under `key` unless the key is present (then nothing changes). No latch:
    /// the skip list links the row in with compare-and-swap.
    pub fn insert(&self, key: &[u8], row: &[u8]) -> Result<Inserted> {
        let key = Key::from_bytes(key)?;
        // `Arc` always allocates (its counts live with the bytes, even for an empty row), so
        // the address tells whether the entry the map returns is this insert's: the map
        // builds its node before it finds a racing insert of the same key.
        let row: Arc<[u8]> = Arc::from(row);
        let entry = self.rows.get_or_insert(key, Arc::clone(&row));
        if !Arc::ptr_eq(entry.value(), &row) {
            return Ok(Inserted::Duplicate);
        }
        self.unsaved.push((key, row));
        Ok(Inserted::Yes)
    }

    /// The row under `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let key = Key::from_bytes(key)?;
        Ok(self.rows.get(&key).map(|entry| entry.value().to_vec()))
    }

    /// Visits rows in key order from `from` (inclusive; `None`: the first) until `visit`
    /// returns false. Rows inserted meanwhile may or may not be seen; the order holds.
    pub fn scan(
        &self,
        from: Option<&[u8]>,
        mut visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let lower = match from {
            Some(from) => Bound::Included(Key::from_bytes(from)?),
            None => Bound::Unbounded,
        };
        for entry in self.rows.range((lower, Bound::Unbounded)) {
            if !visit(entry.key().as_bytes(), entry.value()) {
                break;
            }
        }
        Ok(())
    }

    #[cfg(any(test, feature = "testing"))]
    /// Rows in memory.
    pub fn len(&self) -> u64 {
        self.rows.len() as u64
    }

    #[cfg(any(test, feature = "testing"))]
    /// True when the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The checkpoint file's name.
    pub fn file_name(&self) -> &str {
        &self.file_name
    }

    /// The file's synced length (what the catalog records).
    pub fn synced_len(&self) -> u64 {
        self.synced_len.load(Ordering::Acquire)
    }

    /// Checkpoint, step 1: takes every row inserted so far for the file. The caller must
    /// then make the log durable up to its end (every row taken here has its commit record
    /// before that end) before [`MemTable::write_taken`].
    pub(crate) fn take_unsaved(&self) {
        let mut pending = self.pending.lock();
        while let Some(row) = self.unsaved.pop() {
            pending.push(row);
        }
    }

    /// Checkpoint, step 2: appends the taken rows to the file and fdatasyncs it; the synced
    /// length then covers them. On failure they stay taken, and the next checkpoint writes
    /// them again at the same offset.
    pub(crate) fn write_taken(&self) -> Result<()> {
        let mut pending = self.pending.lock();
        if pending.is_empty() {
            return Ok(());
        }
        let start = self.synced_len();
        let io = |what: &str, e| Error::io(format!("{what} {}", self.file_name), e);
        let mut at = start;
        let mut chunk: Vec<u8> = Vec::with_capacity(IO_CHUNK_BYTES + FRAME_BODY_MAX);
        if start == 0 {
            chunk.extend_from_slice(&encode_header());
        }
        for (i, (key, row)) in pending.iter().enumerate() {
            encode_frame(&mut chunk, key.as_bytes(), row);
            if chunk.len() >= IO_CHUNK_BYTES || i + 1 == pending.len() {
                self.file
                    .write_at(&chunk, at)
                    .map_err(|e| io("writing", e))?;
                at += chunk.len() as u64;
                chunk.clear();
            }
        }
        self.file.sync_data().map_err(|e| io("syncing", e))?;
        self.synced_len.store(at, Ordering::Release);
        pending.clear();
        Ok(())
    }

    /// Checks the table: every frame of the file's durable part is valid, its rows are in
    /// memory with the same bytes, and the rows in memory are in strictly ascending key
    /// order. Returns the row count in the shape of a tree's (no pages, no levels).
    pub fn verify(&self) -> Result<TreeStats> {
        let name = &self.file_name;
        let mut file_rows = 0u64;
        read_frames(&*self.file, name, self.synced_len(), |key, row| {
            file_rows += 1;
            match self.get(key)? {
                Some(found) if found == row => Ok(()),
                Some(_) => Err(corrupt(
                    name,
                    0,
                    format!(
                        "key {:?}: the file's row differs from memory's",
                        Key::from_bytes(key)?
                    ),
                )),
                None => Err(corrupt(
                    name,
                    0,
                    format!(
                        "key {:?} is in the file but not in memory",
                        Key::from_bytes(key)?
                    ),
                )),
            }
        })?;
        let mut rows = 0u64;
        let mut last: Option<Key> = None;
        for entry in self.rows.iter() {
            if last.is_some_and(|l| l >= *entry.key()) {
                return Err(corrupt(name, 0, "rows in memory are out of key order"));
            }
            last = Some(*entry.key());
            rows += 1;
        }
        if file_rows > rows {
            return Err(corrupt(
                name,
                0,
                format!("the file has {file_rows} rows, memory {rows}: a row was saved twice"),
            ));
        }
        Ok(TreeStats {
            rows,
            ..TreeStats::default()
        })
    }

    /// Rows and bytes, for reports (a walk of the rows).
    pub fn usage(&self) -> MemoryUsage {
        let mut usage = MemoryUsage {
            file: self.file_name.clone(),
            file_bytes: self.synced_len(),
            ..MemoryUsage::default()
        };
        for entry in self.rows.iter() {
            usage.rows += 1;
            usage.key_bytes += entry.key().as_bytes().len() as u64;
            usage.row_bytes += entry.value().len() as u64;
        }
        usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{CrashMode, MemStorage};

    fn key(i: i64) -> Key {
        Key::from_i64(i)
    }

    fn saved(storage: &dyn Storage, rows: &[(i64, &[u8])]) -> MemTable {
        let table = MemTable::create(storage, 3).expect("create");
        for (k, row) in rows {
            assert_eq!(
                table.insert(key(*k).as_bytes(), row).expect("insert"),
                Inserted::Yes
            );
        }
        table.take_unsaved();
        table.write_taken().expect("write");
        table
    }

    #[test]
    fn inserts_are_if_absent_and_scans_are_ordered() {
        let mem = MemStorage::new(1);
        let table = MemTable::create(&*mem, 0).expect("create");
        for i in [5i64, 1, 9, 3, -2] {
            assert_eq!(
                table.insert(key(i).as_bytes(), b"x").expect("insert"),
                Inserted::Yes
            );
        }
        assert_eq!(
            table.insert(key(9).as_bytes(), b"y").expect("dup"),
            Inserted::Duplicate
        );
        // Empty rows too: the duplicate check does not depend on the row's bytes.
        assert_eq!(
            table.insert(key(7).as_bytes(), b"").expect("empty"),
            Inserted::Yes
        );
        assert_eq!(
            table.insert(key(7).as_bytes(), b"").expect("dup"),
            Inserted::Duplicate
        );
        assert_eq!(
            table.get(key(9).as_bytes()).expect("get"),
            Some(b"x".to_vec())
        );
        assert_eq!(table.get(key(4).as_bytes()).expect("get"), None);
        let mut seen = Vec::new();
        table
            .scan(Some(key(3).as_bytes()), |k, _| {
                seen.push(Key::from_bytes(k).expect("key").to_i64().expect("int"));
                seen.len() < 3
            })
            .expect("scan");
        assert_eq!(seen, vec![3, 5, 7]);
        assert_eq!(table.verify().expect("verify").rows, 6);
    }

    #[test]
    fn concurrent_inserts_of_one_key_report_exactly_one_yes() {
        let mem = MemStorage::new(2);
        let table = MemTable::create(&*mem, 0).expect("create");
        let yes = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..4u8 {
                let (table, yes) = (&table, &yes);
                s.spawn(move || {
                    for i in 0..2000i64 {
                        if table.insert(key(i).as_bytes(), &[t]).expect("insert") == Inserted::Yes {
                            yes.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(yes.load(Ordering::Relaxed), 2000);
        table.take_unsaved();
        assert_eq!(table.pending.lock().len(), 2000, "each row queued once");
    }

    #[test]
    fn rows_survive_a_crash_once_written_and_reload_in_order() {
        let mem = MemStorage::new(3);
        let rows: Vec<(i64, Vec<u8>)> = (0..3000)
            .map(|i| (i * 7 % 3001, vec![i as u8; (i % 50) as usize]))
            .collect();
        let borrowed: Vec<(i64, &[u8])> = rows.iter().map(|(k, r)| (*k, r.as_slice())).collect();
        let table = saved(&*mem, &borrowed);
        let len = table.synced_len();
        mem.sync_dir().expect("dir");
        drop(table);
        let mem = mem.reboot(CrashMode::Torn, 4).expect("reboot");
        let (table, loaded) = MemTable::open(&*mem, 3, len).expect("open");
        assert_eq!(loaded, 3000);
        for (k, row) in &rows {
            assert_eq!(
                table.get(key(*k).as_bytes()).expect("get").as_ref(),
                Some(row)
            );
        }
        assert_eq!(table.verify().expect("verify").rows, 3000);
    }

    #[test]
    fn a_torn_tail_past_the_durable_length_is_ignored_and_cut_off() {
        let mem = MemStorage::new(5);
        let table = saved(&*mem, &[(1, b"one"), (2, b"two")]);
        let durable = table.synced_len();
        // A later checkpoint wrote more, and died before its catalog: half a frame, then
        // garbage.
        let mut tail = Vec::new();
        encode_frame(&mut tail, key(3).as_bytes(), b"three");
        tail.truncate(tail.len() - 2);
        tail.extend_from_slice(&[0xAB; 7]);
        table.file.write_at(&tail, durable).expect("write");
        drop(table);
        let (table, loaded) = MemTable::open(&*mem, 3, durable).expect("open");
        assert_eq!(loaded, 2);
        assert_eq!(table.get(key(3).as_bytes()).expect("get"), None);
        assert_eq!(table.file.len().expect("len"), durable, "tail cut off");
        // The next checkpoint appends where the durable part ends.
        table.insert(key(4).as_bytes(), b"four").expect("insert");
        table.take_unsaved();
        table.write_taken().expect("write");
        let mut bytes = vec![0u8; table.synced_len() as usize];
        table.file.read_at(&mut bytes, 0).expect("read");
        let keys: Vec<i64> = decode(&bytes, "mem.3")
            .expect("decode")
            .iter()
            .filter_map(|(k, _)| k.to_i64())
            .collect();
        assert_eq!(keys, vec![1, 2, 4]);
    }

    #[test]
    fn a_flipped_byte_inside_the_durable_length_is_a_corrupt_file_error() {
        let mem = MemStorage::new(6);
        let table = saved(&*mem, &[(1, b"one"), (2, b"two"), (3, b"three")]);
        let durable = table.synced_len();
        let file = Arc::clone(&table.file);
        drop(table);
        let mut original = vec![0u8; durable as usize];
        file.read_at(&mut original, 0).expect("read");
        for at in 0..durable {
            let mut damaged = original.clone();
            damaged[at as usize] ^= 0x01;
            file.write_at(&damaged, 0).expect("write");
            match MemTable::open(&*mem, 3, durable) {
                Err(Error::CorruptFile { file, .. }) => assert_eq!(file, "mem.3"),
                other => panic!("flip at {at}: {other:?}"),
            }
        }
        file.write_at(&original, 0).expect("restore");
        // A file shorter than the catalog says, or missing, is corrupt too.
        file.set_len(durable - 1).expect("shorten");
        assert!(matches!(
            MemTable::open(&*mem, 3, durable),
            Err(Error::CorruptFile { .. })
        ));
        assert!(matches!(
            MemTable::open(&*mem, 8, 16),
            Err(Error::CorruptFile { .. })
        ));
    }

    #[test]
    fn a_failed_sync_keeps_the_rows_for_the_next_checkpoint() {
        let mem = MemStorage::new(7);
        let table = MemTable::create(&*mem, 1).expect("create");
        mem.sync_dir().expect("dir");
        table.insert(key(1).as_bytes(), b"a").expect("insert");
        table.take_unsaved();
        mem.fail_sync_after(Some(0));
        assert!(table.write_taken().is_err());
        assert_eq!(table.synced_len(), 0);
        mem.fail_sync_after(None);
        table.insert(key(2).as_bytes(), b"b").expect("insert");
        table.take_unsaved();
        table.write_taken().expect("write");
        let len = table.synced_len();
        drop(table);
        let mem = mem.reboot(CrashMode::DropAll, 8).expect("reboot");
        let (table, loaded) = MemTable::open(&*mem, 1, len).expect("open");
        assert_eq!(loaded, 2);
        assert_eq!(
            table.get(key(1).as_bytes()).expect("get"),
            Some(b"a".to_vec())
        );
    }

    #[test]
    fn frames_round_trip_and_every_truncation_is_refused() {
        let mut bytes = encode_header().to_vec();
        encode_frame(&mut bytes, key(42).as_bytes(), b"row");
        encode_frame(&mut bytes, b"k", b"");
        let rows = decode(&bytes, "m").expect("decode");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1], (Key::from_bytes(b"k").expect("key"), Vec::new()));
        for len in 1..bytes.len() {
            if len != HEADER_BYTES && len != bytes.len() - (FRAME_HEADER_BYTES + 2) {
                assert!(decode(&bytes[..len], "m").is_err(), "length {len}");
            }
        }
    }
}
