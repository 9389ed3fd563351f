//! The catalog: the database's tables, persisted in one small file that is replaced
//! atomically (write `catalog.tmp`, fdatasync, rename over `catalog`, fsync the directory).
//!
//! ```text
//! magic "HPCATLG\0" | format u32 | page_size u32 | redo_lsn u64 | logical_lsn u64 | flags u32
//! (bit 0: open without a log; bit 1, format 6: checkpointed while open, rows may be uncounted)
//! | (format 5 and later) log_salt u64, log_segment_bytes u64 | table_count u32
//! per table: name_len u16, name, design_len u16, design, kind_tag u8, kind_a i64, kind_b i64,
//!            root u64, key_high_water i64, rows u64,
//!            (format 3 and later) layout_tag u8, layout_param u32, extra_root_count u32,
//!            extra_root u64 * extra_root_count,
//!            (layout tag 5, memory, only) memory_bytes u64,
//!            (format 6 and later) flags u8 (bit 0: dropped, bit 1: keys may be supplied;
//!            format 7 and later, bit 2: unlogged),
//!            schema_len u32, schema
//! (format 6 and later) metadata_len u32, metadata
//! (format 9 only) pending_count u32, per pending truncation: txn u64, old_table u32,
//!            new_table u32
//! crc32c u32 of everything before it
//! ```
//! All integers little-endian. A format 2 catalog (before layouts) has no layout fields:
//! its tables are clustered, with one root each. A memory table (layout tag 5) has no tree:
//! its root is `PageId::NONE` (all ones), it has no extra roots, and `memory_bytes` is the synced length of
//! its checkpoint file. A heap (tags 3 and 4) lists its index's root (tag 4) and then one
//! head page per page chain.
//!
//! Since format 5 the log has flush marks and multi-part transactions (record kinds an
//! older binary would take for the end of the log), every record's checksum mixes in the
//! database's random `log_salt`, and each checkpoint makes the log durable up to its redo
//! point before this file names it. Format 6 adds, per table, a schema (bytes the engine
//! stores but never reads: the SQL layer's columns and key) and a dropped flag, and for the
//! database a metadata blob (the SQL layer's sequences). Format 7 adds the unlogged table
//! flag, and format 8 a log without leaf inserts (`LOGICAL_LEAVES_FORMAT_VERSION`). Format 9
//! lists **pending truncations**: a `TRUNCATE` inside a transaction swaps in a new, empty
//! table only if that transaction commits, so its checkpoint writes both tables as if it
//! will not (the old one live, the new one dropped) plus `(txn, old, new)`, and recovery
//! swaps them when it finds that transaction's commit record (`resolve_pending_truncates`).
//! Binaries of format 9 wrote it only while a truncation was pending and format 8
//! otherwise. Format 10 (`TXN_NAMES_FORMAT_VERSION`, fields as format 9) says the log may
//! hold `TxnName` records (transactions' names); this binary writes it always. Older
//! binaries refuse each format newer than theirs. Formats 2 to 7 still open (no
//! schemas, nothing dropped, no metadata before 6); formats 2 to 4 have salt 0, and
//! recovery does not require their log to reach the redo point.
//!
//! A dropped table keeps its entry (and its id, which log records name) and its pages: it
//! is hidden from lookups, and `check` still walks it, so its pages are never orphans.

use crate::access::keys::KeyKind;
use crate::access::layout::{Layout, PARTITIONS_MAX};
use crate::error::{Error, Result};
use crate::format::{
    CATALOG_FILE, CATALOG_FORMAT_VERSION, CATALOG_MAGIC, CATALOG_TMP_FILE, LAYOUT_FORMAT_VERSION,
    LOG_FORMAT_VERSION, PENDING_TRUNCATES_FORMAT_VERSION, PageId, SCHEMA_BYTES_MAX,
    SCHEMA_FORMAT_VERSION, TXN_NAMES_FORMAT_VERSION, UNLOGGED_TABLES_FORMAT_VERSION,
};
use crate::storage::Storage;
use std::path::Path;

/// The most tables a catalog holds.
pub const TABLES_MAX: usize = 4096;
/// The longest table or design name, in bytes.
pub const NAME_BYTES_MAX: usize = 128;

/// The catalog's control flag: checkpointed while open (see `Catalog::rows_uncounted`).
const CATALOG_FLAG_ROWS_UNCOUNTED: u32 = 2;

/// A table entry's flag: the table was dropped.
const FLAG_DROPPED: u8 = 1;
/// A table entry's flag: callers may supply its keys.
const FLAG_USER_KEYS: u8 = 2;
/// A table entry's flag (format 7 and later): the table is unlogged.
const FLAG_UNLOGGED: u8 = 4;

/// One table as the catalog records it.
#[derive(Clone, Debug, PartialEq)]
pub struct TableEntry {
    /// The table's name.
    pub name: String,
    /// The design name it was created with (`identity`, `guid`, ...).
    pub design: String,
    /// How its keys are generated.
    pub kind: KeyKind,
    /// Its B+tree's root page.
    pub root: PageId,
    /// The key generator's high-water mark at the last clean close.
    pub key_high_water: i64,
    /// Rows at the last clean close.
    pub rows: u64,
    /// How the rows are organised.
    pub layout: Layout,
    /// The roots of the trees after the first (partitions 1.. of a hash-partitioned
    /// table; empty otherwise). `root` is partition 0's.
    pub extra_roots: Vec<PageId>,
    /// A memory table's checkpoint file is durable up to here (0 for other layouts).
    pub memory_bytes: u64,
    /// Dropped: hidden from lookups, its pages kept (format 6 and later).
    pub dropped: bool,
    /// Callers may supply keys (`Session::insert_keyed`), so every insert proves its key
    /// unique before it is logged (format 6 and later).
    pub user_keys: bool,
    /// The embedder's schema bytes (empty for a table created without one).
    pub schema: Vec<u8>,
    /// Unlogged (format 7 and later): its rows and pages are never logged, its pages live
    /// in the unlogged file, and a crash empties it.
    pub unlogged: bool,
}

/// A truncation that takes effect only if transaction `txn` commits (format 9): the
/// catalog's entries show the table `old_table` live and its empty replacement `new_table`
/// dropped, as if `txn` never commits; recovery swaps the two when the log holds `txn`'s
/// commit. Table numbers are positions in the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingTruncate {
    /// The truncating transaction's id, as its commit record gives it.
    pub txn: u64,
    /// The table it empties.
    pub old_table: u32,
    /// The empty table with the same name that replaces it at commit.
    pub new_table: u32,
}

/// The whole catalog. It is also the control file: it names the last checkpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct Catalog {
    /// The data file's page size.
    pub page_size: u32,
    /// Recovery redoes page records from here (the last checkpoint's redo point).
    pub redo_lsn: u64,
    /// Recovery re-applies committed transactions from here (at or before `redo_lsn`).
    pub logical_lsn: u64,
    /// Set while the database is open without a log (`Durability::None`): found set at the
    /// next open, it means a crash, and the tables' rows are gone.
    pub unlogged_open: bool,
    /// Set by every checkpoint but the one at a clean close (format 6 and later): sessions
    /// may have rows they had not yet added to the tables' counts, so an open that finds it
    /// set (a crash) recounts the rows even when the log after the checkpoint is empty.
    pub rows_uncounted: bool,
    /// Mixed into every log record's checksum, so that no record of another database's
    /// log validates in this one's (0 in catalogs before format 5).
    pub log_salt: u64,
    /// The log's segment size, fixed when the database is created (0 in catalogs before
    /// format 5: their log used the options' size).
    pub log_segment_bytes: u64,
    /// The format the catalog was read with; [`CATALOG_FORMAT_VERSION`] for one to be
    /// written.
    pub format_version: u32,
    /// Tables in creation order.
    pub tables: Vec<TableEntry>,
    /// The embedder's database-wide metadata bytes (empty before format 6).
    pub metadata: Vec<u8>,
    /// Truncations waiting on their transaction's commit record (format 9; empty before).
    pub pending_truncates: Vec<PendingTruncate>,
}

fn kind_to_parts(kind: KeyKind) -> (u8, i64, i64) {
    match kind {
        KeyKind::Identity { start, step } => (1, start, step),
        KeyKind::Sequence { start, cache } => (2, start, i64::from(cache)),
        KeyKind::GuidV4 => (3, 0, 0),
        KeyKind::GuidV7 => (4, 0, 0),
        KeyKind::BitReverse { cache } => (5, i64::from(cache), 0),
        KeyKind::HashPrefix { buckets } => (6, i64::from(buckets), 0),
        KeyKind::SessionRange { block } => (7, i64::from(block), 0),
    }
}

fn kind_from_parts(tag: u8, a: i64, b: i64) -> Option<KeyKind> {
    Some(match tag {
        1 => KeyKind::Identity { start: a, step: b },
        2 => KeyKind::Sequence {
            start: a,
            cache: u32::try_from(b).ok()?,
        },
        3 => KeyKind::GuidV4,
        4 => KeyKind::GuidV7,
        5 => KeyKind::BitReverse {
            cache: u32::try_from(a).ok()?,
        },
        6 => KeyKind::HashPrefix {
            buckets: u16::try_from(a).ok()?,
        },
        7 => KeyKind::SessionRange {
            block: u32::try_from(a).ok()?,
        },
        _ => return None,
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let slice = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(slice)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    /// A page id as stored: its `u64`.
    fn page_id(&mut self) -> Option<PageId> {
        self.u64().map(PageId::from_raw)
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    /// A u32 length (at most [`SCHEMA_BYTES_MAX`]) and that many bytes.
    fn blob(&mut self) -> Option<Vec<u8>> {
        let len = self.u32()? as usize;
        if len > SCHEMA_BYTES_MAX {
            return None;
        }
        Some(self.take(len)?.to_vec())
    }
    fn string(&mut self) -> Option<String> {
        let len = usize::from(self.u16()?);
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }
}

fn put_blob(out: &mut Vec<u8>, blob: &[u8]) {
    assert!(
        blob.len() <= SCHEMA_BYTES_MAX,
        "schema or metadata over its limit"
    );
    out.extend_from_slice(&(blob.len() as u32).to_le_bytes());
    out.extend_from_slice(blob);
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn catalog_error(path: &Path, reason: &str) -> Error {
    Error::NotADatabase {
        path: path.to_path_buf(),
        reason: format!("catalog: {reason}"),
    }
}

/// One table entry of a catalog written as format `version`.
fn decode_table(r: &mut Reader<'_>, version: u32, path: &Path) -> Result<TableEntry> {
    let bad = |reason: &str| catalog_error(path, reason);
    let truncated = || bad("truncated");
    let name = r.string().ok_or_else(truncated)?;
    let design = r.string().ok_or_else(truncated)?;
    let (tag, a, b) = (
        r.u8().ok_or_else(truncated)?,
        r.i64().ok_or_else(truncated)?,
        r.i64().ok_or_else(truncated)?,
    );
    let kind = kind_from_parts(tag, a, b).ok_or_else(|| bad("unknown key kind"))?;
    let root = r.page_id().ok_or_else(truncated)?;
    let key_high_water = r.i64().ok_or_else(truncated)?;
    let rows = r.u64().ok_or_else(truncated)?;
    let mut memory_bytes = 0;
    let (layout, extra_roots) = if version >= LAYOUT_FORMAT_VERSION {
        let tag = r.u8().ok_or_else(truncated)?;
        let param = r.u32().ok_or_else(truncated)?;
        let layout = Layout::from_parts(tag, param).ok_or_else(|| bad("unknown table layout"))?;
        layout
            .validate(kind)
            .map_err(|_| bad("table layout out of range"))?;
        let count = r.u32().ok_or_else(truncated)? as usize;
        if count != layout.root_count().saturating_sub(1) {
            return Err(bad("root count does not match the table layout"));
        }
        let mut extra_roots = Vec::with_capacity(count);
        for _ in 0..count {
            extra_roots.push(r.page_id().ok_or_else(truncated)?);
        }
        if layout == Layout::Memory {
            memory_bytes = r.u64().ok_or_else(truncated)?;
        }
        (layout, extra_roots)
    } else {
        (Layout::Clustered, Vec::new())
    };
    let (flags, schema) = if version >= SCHEMA_FORMAT_VERSION {
        let flags = r.u8().ok_or_else(truncated)?;
        let known = if version >= UNLOGGED_TABLES_FORMAT_VERSION {
            FLAG_DROPPED | FLAG_USER_KEYS | FLAG_UNLOGGED
        } else {
            FLAG_DROPPED | FLAG_USER_KEYS
        };
        if flags & !known != 0 {
            return Err(bad("unknown table flags"));
        }
        let schema = r
            .blob()
            .ok_or_else(|| bad("truncated or oversized table schema"))?;
        (flags, schema)
    } else {
        (0, Vec::new())
    };
    Ok(TableEntry {
        name,
        design,
        kind,
        root,
        key_high_water,
        rows,
        layout,
        extra_roots,
        memory_bytes,
        dropped: flags & FLAG_DROPPED != 0,
        user_keys: flags & FLAG_USER_KEYS != 0,
        unlogged: flags & FLAG_UNLOGGED != 0,
        schema,
    })
}

/// The pending truncations of a format 9 or 10 catalog, each checked against the entries: both
/// tables exist, share a name, and read as if the truncation never commits (the old one
/// live, the new one dropped), and no table is in two of them.
fn decode_pending_truncates(
    r: &mut Reader<'_>,
    tables: &[TableEntry],
    path: &Path,
    version: u32,
) -> Result<Vec<PendingTruncate>> {
    let bad = |reason: &str| catalog_error(path, reason);
    let count = r.u32().ok_or_else(|| bad("truncated"))? as usize;
    // Format 9 was written only while a truncation was pending; format 10 always is.
    let none_allowed = version >= TXN_NAMES_FORMAT_VERSION;
    if (count == 0 && !none_allowed) || count > tables.len() / 2 {
        return Err(bad("bad pending truncation count"));
    }
    let mut pending = Vec::with_capacity(count);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..count {
        let entry = PendingTruncate {
            txn: r.u64().ok_or_else(|| bad("truncated"))?,
            old_table: r.u32().ok_or_else(|| bad("truncated"))?,
            new_table: r.u32().ok_or_else(|| bad("truncated"))?,
        };
        let (Some(old), Some(new)) = (
            tables.get(entry.old_table as usize),
            tables.get(entry.new_table as usize),
        ) else {
            return Err(bad("a pending truncation names no table"));
        };
        if old.name != new.name || old.dropped || !new.dropped {
            return Err(bad("a pending truncation does not match its tables"));
        }
        if !seen.insert(entry.old_table) || !seen.insert(entry.new_table) {
            return Err(bad("a table is in two pending truncations"));
        }
        pending.push(entry);
    }
    Ok(pending)
}

/// One table entry as format `version` writes it.
fn encode_table(out: &mut Vec<u8>, t: &TableEntry, version: u32) {
    assert!(t.name.len() <= NAME_BYTES_MAX && t.design.len() <= NAME_BYTES_MAX);
    put_string(out, &t.name);
    put_string(out, &t.design);
    let (tag, a, b) = kind_to_parts(t.kind);
    out.push(tag);
    out.extend_from_slice(&a.to_le_bytes());
    out.extend_from_slice(&b.to_le_bytes());
    out.extend_from_slice(&t.root.to_raw().to_le_bytes());
    out.extend_from_slice(&t.key_high_water.to_le_bytes());
    out.extend_from_slice(&t.rows.to_le_bytes());
    if version >= LAYOUT_FORMAT_VERSION {
        let (layout_tag, layout_param) = t.layout.to_parts();
        out.push(layout_tag);
        out.extend_from_slice(&layout_param.to_le_bytes());
        out.extend_from_slice(&(t.extra_roots.len() as u32).to_le_bytes());
        for root in &t.extra_roots {
            out.extend_from_slice(&root.to_raw().to_le_bytes());
        }
        if t.layout == Layout::Memory {
            out.extend_from_slice(&t.memory_bytes.to_le_bytes());
        }
    }
    if version >= SCHEMA_FORMAT_VERSION {
        let unlogged = t.unlogged && version >= UNLOGGED_TABLES_FORMAT_VERSION;
        let flags = if t.dropped { FLAG_DROPPED } else { 0 }
            | if t.user_keys { FLAG_USER_KEYS } else { 0 }
            | if unlogged { FLAG_UNLOGGED } else { 0 };
        out.push(flags);
        put_blob(out, &t.schema);
    }
}

impl Catalog {
    /// Serialises the catalog, as format 10 (`TXN_NAMES_FORMAT_VERSION`).
    pub fn encode(&self) -> Vec<u8> {
        self.encode_format(self.written_format())
    }

    /// The format [`Catalog::encode`] writes: always the newest, since this binary's log
    /// may hold transaction names (`TxnName` records) whatever the catalog lists.
    pub fn written_format(&self) -> u32 {
        TXN_NAMES_FORMAT_VERSION
    }

    /// Serialises the catalog as format `version` (2 or later), leaving out the fields that
    /// format lacks. Only the current format is ever written to disk; tests use the older
    /// ones to prove that this binary still reads them.
    fn encode_format(&self, version: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.tables.len() * 96);
        out.extend_from_slice(CATALOG_MAGIC);
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&self.page_size.to_le_bytes());
        out.extend_from_slice(&self.redo_lsn.to_le_bytes());
        out.extend_from_slice(&self.logical_lsn.to_le_bytes());
        let mut flags = u32::from(self.unlogged_open);
        if version >= SCHEMA_FORMAT_VERSION && self.rows_uncounted {
            flags |= CATALOG_FLAG_ROWS_UNCOUNTED;
        }
        out.extend_from_slice(&flags.to_le_bytes());
        if version >= LOG_FORMAT_VERSION {
            out.extend_from_slice(&self.log_salt.to_le_bytes());
            out.extend_from_slice(&self.log_segment_bytes.to_le_bytes());
        }
        out.extend_from_slice(&(self.tables.len() as u32).to_le_bytes());
        for t in &self.tables {
            encode_table(&mut out, t, version);
        }
        if version >= SCHEMA_FORMAT_VERSION {
            put_blob(&mut out, &self.metadata);
        }
        if version >= PENDING_TRUNCATES_FORMAT_VERSION {
            out.extend_from_slice(&(self.pending_truncates.len() as u32).to_le_bytes());
            for pending in &self.pending_truncates {
                out.extend_from_slice(&pending.txn.to_le_bytes());
                out.extend_from_slice(&pending.old_table.to_le_bytes());
                out.extend_from_slice(&pending.new_table.to_le_bytes());
            }
        } else {
            assert!(
                self.pending_truncates.is_empty(),
                "a pending truncation written in a format without them"
            );
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Parses a catalog; `path` names the database in errors.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Catalog> {
        let bad = |reason: &str| catalog_error(path, reason);
        if bytes.len() < CATALOG_MAGIC.len() + 16 || &bytes[..CATALOG_MAGIC.len()] != CATALOG_MAGIC
        {
            return Err(bad("no catalog magic"));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        let stored = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if crc32c::crc32c(body) != stored {
            // hotpage's magic, then damage: this is a database, and its catalog is hurt
            // (it is replaced whole by a rename, so no crash leaves it torn).
            return Err(Error::DamagedDatabase {
                path: path.to_path_buf(),
                reason: format!(
                    "its catalog fails its checksum (stored {stored:#010x}, computed {:#010x})",
                    crc32c::crc32c(body)
                ),
            });
        }
        let mut r = Reader {
            bytes: body,
            at: CATALOG_MAGIC.len(),
        };
        let truncated = || bad("truncated");
        let version = r.u32().ok_or_else(truncated)?;
        if version > CATALOG_FORMAT_VERSION {
            return Err(Error::FormatTooNew {
                found: version,
                supported: CATALOG_FORMAT_VERSION,
            });
        }
        let page_size = r.u32().ok_or_else(truncated)?;
        let redo_lsn = r.u64().ok_or_else(truncated)?;
        let logical_lsn = r.u64().ok_or_else(truncated)?;
        let flags = r.u32().ok_or_else(truncated)?;
        let known_flags = if version >= SCHEMA_FORMAT_VERSION {
            1 | CATALOG_FLAG_ROWS_UNCOUNTED
        } else {
            1
        };
        if flags & !known_flags != 0 || logical_lsn > redo_lsn {
            return Err(bad("bad control fields"));
        }
        let (log_salt, log_segment_bytes) = if version >= LOG_FORMAT_VERSION {
            let salt = r.u64().ok_or_else(truncated)?;
            let segment_bytes = r.u64().ok_or_else(truncated)?;
            if segment_bytes < (1 << 20) || !segment_bytes.is_multiple_of(4096) {
                return Err(bad("bad log segment size"));
            }
            (salt, segment_bytes)
        } else {
            (0, 0)
        };
        let count = r.u32().ok_or_else(truncated)? as usize;
        if count > TABLES_MAX {
            return Err(bad("too many tables"));
        }
        let mut tables = Vec::with_capacity(count);
        for _ in 0..count {
            tables.push(decode_table(&mut r, version, path)?);
        }
        let metadata = if version >= SCHEMA_FORMAT_VERSION {
            r.blob()
                .ok_or_else(|| bad("truncated or oversized database metadata"))?
        } else {
            Vec::new()
        };
        let pending_truncates = if version >= PENDING_TRUNCATES_FORMAT_VERSION {
            decode_pending_truncates(&mut r, &tables, path, version)?
        } else {
            Vec::new()
        };
        if r.at != body.len() {
            return Err(bad("trailing bytes"));
        }
        Ok(Catalog {
            page_size,
            redo_lsn,
            logical_lsn,
            unlogged_open: flags & 1 != 0,
            rows_uncounted: flags & CATALOG_FLAG_ROWS_UNCOUNTED != 0,
            log_salt,
            log_segment_bytes,
            format_version: version,
            tables,
            metadata,
            pending_truncates,
        })
    }

    /// Reads the catalog, or `None` if the directory has none.
    pub fn load(storage: &dyn Storage, path: &Path) -> Result<Option<Catalog>> {
        let exists = storage
            .exists(CATALOG_FILE)
            .map_err(|e| Error::io("looking for the catalog", e))?;
        if !exists {
            return Ok(None);
        }
        let file = storage
            .open(CATALOG_FILE, false)
            .map_err(|e| Error::io("opening the catalog", e))?;
        let len = file
            .len()
            .map_err(|e| Error::io("reading the catalog", e))?;
        if len
            > (TABLES_MAX as u64) * (512 + SCHEMA_BYTES_MAX as u64)
                + u64::from(PARTITIONS_MAX) * 8 * 64
                + SCHEMA_BYTES_MAX as u64
        {
            return Err(Error::NotADatabase {
                path: path.to_path_buf(),
                reason: "catalog file too large".into(),
            });
        }
        let mut bytes = vec![0u8; len as usize];
        file.read_at(&mut bytes, 0)
            .map_err(|e| Error::io("reading the catalog", e))?;
        Catalog::decode(&bytes, path).map(Some)
    }

    /// Writes the catalog durably and atomically.
    pub fn store(&self, storage: &dyn Storage) -> Result<()> {
        let bytes = self.encode();
        let write = || -> std::io::Result<()> {
            let tmp = storage.open(CATALOG_TMP_FILE, true)?;
            tmp.set_len(0)?;
            tmp.write_at(&bytes, 0)?;
            tmp.sync_data()?;
            storage.rename(CATALOG_TMP_FILE, CATALOG_FILE)?;
            storage.sync_dir()
        };
        write().map_err(|e| Error::io("writing the catalog", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{LOGICAL_LEAVES_FORMAT_VERSION, TABLE_DESIGNS_FORMAT_VERSION};
    use crate::storage::{CrashMode, MemStorage};

    fn id(number: u64) -> PageId {
        PageId::new(0, number)
    }

    fn sample() -> Catalog {
        Catalog {
            page_size: 8192,
            redo_lsn: 4096,
            logical_lsn: 1024,
            unlogged_open: false,
            rows_uncounted: true,
            log_salt: 0x0123_4567_89ab_cdef,
            log_segment_bytes: 1 << 20,
            format_version: TXN_NAMES_FORMAT_VERSION,
            metadata: b"sequences".to_vec(),
            pending_truncates: Vec::new(),
            tables: vec![
                TableEntry {
                    name: "orders".into(),
                    design: "identity".into(),
                    kind: KeyKind::Identity { start: 1, step: 1 },
                    root: id(1),
                    key_high_water: 1001,
                    rows: 1000,
                    layout: Layout::Clustered,
                    extra_roots: Vec::new(),
                    memory_bytes: 0,
                    dropped: false,
                    user_keys: false,
                    schema: Vec::new(),
                    unlogged: false,
                },
                TableEntry {
                    name: "events".into(),
                    design: "hash-prefix".into(),
                    kind: KeyKind::HashPrefix { buckets: 16 },
                    root: id(2),
                    key_high_water: 5,
                    rows: 4,
                    layout: Layout::Clustered,
                    extra_roots: Vec::new(),
                    memory_bytes: 0,
                    dropped: false,
                    user_keys: false,
                    schema: Vec::new(),
                    unlogged: false,
                },
                TableEntry {
                    name: "orders_hash".into(),
                    design: "hash-partition".into(),
                    kind: KeyKind::Identity { start: 1, step: 1 },
                    root: id(3),
                    key_high_water: 9,
                    rows: 8,
                    layout: Layout::HashPartitioned { partitions: 3 },
                    extra_roots: vec![id(4), id(5)],
                    memory_bytes: 0,
                    dropped: false,
                    user_keys: false,
                    schema: Vec::new(),
                    unlogged: false,
                },
                TableEntry {
                    name: "orders_flow".into(),
                    design: "identity-flow-control".into(),
                    kind: KeyKind::Identity { start: 1, step: 1 },
                    root: id(6),
                    key_high_water: 2,
                    rows: 1,
                    layout: Layout::FlowControl { sessions: 2 },
                    extra_roots: Vec::new(),
                    memory_bytes: 0,
                    dropped: false,
                    user_keys: false,
                    schema: Vec::new(),
                    unlogged: false,
                },
                TableEntry {
                    name: "orders_memory".into(),
                    design: "memory".into(),
                    kind: KeyKind::Identity { start: 1, step: 1 },
                    root: PageId::NONE,
                    key_high_water: 30,
                    rows: 29,
                    layout: Layout::Memory,
                    extra_roots: Vec::new(),
                    memory_bytes: 4096 + 7,
                    dropped: true,
                    user_keys: true,
                    schema: b"columns".to_vec(),
                    unlogged: true,
                },
                TableEntry {
                    name: "orders_heap".into(),
                    design: "heap-nc-identity".into(),
                    kind: KeyKind::Identity { start: 1, step: 1 },
                    root: id(7),
                    key_high_water: 3,
                    rows: 2,
                    layout: Layout::HeapIndexed { chains: 2 },
                    extra_roots: vec![id(8), PageId::new(1, 1)],
                    memory_bytes: 0,
                    dropped: false,
                    user_keys: false,
                    schema: Vec::new(),
                    unlogged: false,
                },
            ],
        }
    }

    #[test]
    fn round_trips_and_survives_a_crash_once_stored() {
        let mem = MemStorage::new(9);
        sample().store(&*mem).expect("store");
        mem.crash(CrashMode::Torn);
        let back = Catalog::load(&*mem, Path::new("db"))
            .expect("load")
            .expect("present");
        assert_eq!(back, sample());
    }

    /// `sample()` as an older `version` reads it: what that format lacks is at its default.
    fn as_read_from(version: u32, mut catalog: Catalog) -> Catalog {
        catalog.format_version = version;
        if version < UNLOGGED_TABLES_FORMAT_VERSION {
            for table in &mut catalog.tables {
                table.unlogged = false;
            }
        }
        if version < SCHEMA_FORMAT_VERSION {
            catalog.rows_uncounted = false;
            catalog.metadata.clear();
            for table in &mut catalog.tables {
                table.dropped = false;
                table.user_keys = false;
                table.schema.clear();
            }
        }
        if version < LOG_FORMAT_VERSION {
            catalog.log_salt = 0;
            catalog.log_segment_bytes = 0;
        }
        catalog
    }

    #[test]
    fn a_format_2_catalog_reads_as_clustered_tables() {
        let mut v2 = sample();
        v2.tables.truncate(2);
        let bytes = v2.encode_format(2);
        assert_eq!(
            Catalog::decode(&bytes, Path::new("db")).expect("v2"),
            as_read_from(2, v2)
        );
        // A layout whose root count disagrees is refused even with a good checksum.
        let mut bad = sample();
        bad.tables[2].extra_roots.pop();
        assert!(Catalog::decode(&bad.encode(), Path::new("db")).is_err());
        // A memory table has no extra roots.
        let mut bad = sample();
        bad.tables[4].extra_roots.push(id(9));
        assert!(Catalog::decode(&bad.encode(), Path::new("db")).is_err());
    }

    #[test]
    fn every_catalog_is_written_as_format_10_and_formats_3_to_8_still_read() {
        let version = |c: &Catalog| {
            let bytes = c.encode();
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]])
        };
        assert_eq!(version(&sample()), TXN_NAMES_FORMAT_VERSION);
        let mut trees_only = sample();
        trees_only.tables.truncate(4);
        assert_eq!(version(&trees_only), TXN_NAMES_FORMAT_VERSION);
        for old in [
            LAYOUT_FORMAT_VERSION,
            TABLE_DESIGNS_FORMAT_VERSION,
            LOG_FORMAT_VERSION,
            SCHEMA_FORMAT_VERSION,
            UNLOGGED_TABLES_FORMAT_VERSION,
            LOGICAL_LEAVES_FORMAT_VERSION,
        ] {
            let back = Catalog::decode(&sample().encode_format(old), Path::new("db"))
                .expect("an older format");
            assert_eq!(back, as_read_from(old, sample()), "format {old}");
        }
        // A heap without an index: roots are its chains' heads only.
        let mut heap = sample();
        heap.tables[5].layout = Layout::Heap { chains: 3 };
        assert_eq!(
            Catalog::decode(&heap.encode(), Path::new("db")).expect("heap"),
            heap
        );
        heap.tables[5].layout = Layout::Heap { chains: 2 };
        assert!(Catalog::decode(&heap.encode(), Path::new("db")).is_err());
        // A newer format is refused as too new, not misread.
        let bytes = sample().encode_format(CATALOG_FORMAT_VERSION + 1);
        assert!(matches!(
            Catalog::decode(&bytes, Path::new("db")),
            Err(Error::FormatTooNew { .. })
        ));
    }

    /// `sample()` with table 1 being truncated by transaction 77 into a new table 6.
    fn with_pending_truncate() -> Catalog {
        let mut catalog = sample();
        let mut new = catalog.tables[1].clone();
        new.root = id(40);
        new.rows = 0;
        new.dropped = true;
        catalog.tables.push(new);
        catalog.pending_truncates.push(PendingTruncate {
            txn: 77,
            old_table: 1,
            new_table: 6,
        });
        catalog.format_version = TXN_NAMES_FORMAT_VERSION;
        catalog
    }

    #[test]
    fn a_pending_truncate_is_written_as_format_10_and_read_back_from_format_9_too() {
        let pending = with_pending_truncate();
        let bytes = pending.encode();
        assert_eq!(
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]),
            TXN_NAMES_FORMAT_VERSION
        );
        assert_eq!(
            Catalog::decode(&bytes, Path::new("db")).expect("format 10"),
            pending
        );
        // As a binary of format 9 wrote it while the truncation waited.
        let format_9 = pending.encode_format(PENDING_TRUNCATES_FORMAT_VERSION);
        assert_eq!(
            Catalog::decode(&format_9, Path::new("db")).expect("format 9"),
            as_read_from(PENDING_TRUNCATES_FORMAT_VERSION, pending)
        );
        // Format 9 was written only with a truncation pending: an empty list is damage.
        let empty_9 = sample().encode_format(PENDING_TRUNCATES_FORMAT_VERSION);
        assert!(Catalog::decode(&empty_9, Path::new("db")).is_err());
    }

    #[test]
    fn a_pending_truncate_that_does_not_match_its_tables_is_damage() {
        let damaged: [fn(&mut Catalog); 5] = [
            // The new table must read as dropped until the commit is found.
            |c| c.tables[6].dropped = false,
            // The old table must still be live.
            |c| c.tables[1].dropped = true,
            // Both tables have the table's name.
            |c| c.tables[6].name = "other".into(),
            // A table number past the end.
            |c| c.pending_truncates[0].new_table = 99,
            // A table in two truncations.
            |c| {
                let first = c.pending_truncates[0];
                c.pending_truncates.push(first);
            },
        ];
        for (i, damage) in damaged.iter().enumerate() {
            let mut catalog = with_pending_truncate();
            damage(&mut catalog);
            let bytes = catalog.encode();
            assert!(
                Catalog::decode(&bytes, Path::new("db")).is_err(),
                "damage {i} was read as a catalog"
            );
        }
    }

    #[test]
    fn the_unlogged_flag_is_known_only_from_format_7() {
        let mut one = sample();
        one.tables.truncate(1);
        one.tables[0].unlogged = true;
        let back = Catalog::decode(&one.encode(), Path::new("db")).expect("format 7");
        assert!(back.tables[0].unlogged);
        // In a format 6 catalog the bit is damage, never a table silently read as logged.
        // The table's flags byte is followed by its empty schema's length, the metadata's
        // length and bytes, and the checksum.
        let mut bytes = one.encode_format(SCHEMA_FORMAT_VERSION);
        bytes.truncate(bytes.len() - 4);
        let flags_at = bytes.len() - one.metadata.len() - 4 - 4 - 1;
        assert_eq!(bytes[flags_at], 0);
        bytes[flags_at] = FLAG_UNLOGGED;
        let crc = crc32c::crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            Catalog::decode(&bytes, Path::new("db")),
            Err(Error::NotADatabase { .. })
        ));
    }

    #[test]
    fn a_schema_or_metadata_over_its_limit_is_refused() {
        let mut big = sample();
        big.metadata = vec![7; SCHEMA_BYTES_MAX];
        big.tables[0].schema = vec![9; SCHEMA_BYTES_MAX];
        assert_eq!(
            Catalog::decode(&big.encode(), Path::new("db")).expect("at the limit"),
            big
        );
        let mut bytes = big.encode();
        bytes.truncate(bytes.len() - 4);
        // The metadata's length field sits just before its bytes, which the pending
        // truncations' count (a u32) follows at the end.
        let at = bytes.len() - 4 - SCHEMA_BYTES_MAX - 4;
        bytes[at..at + 4].copy_from_slice(&(SCHEMA_BYTES_MAX as u32 + 1).to_le_bytes());
        let crc = crc32c::crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        assert!(Catalog::decode(&bytes, Path::new("db")).is_err());
    }

    #[test]
    fn every_truncation_and_flip_is_refused_without_panic() {
        let bytes = sample().encode();
        for len in 0..bytes.len() {
            assert!(Catalog::decode(&bytes[..len], Path::new("db")).is_err());
        }
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            assert!(
                Catalog::decode(&bad, Path::new("db")).is_err(),
                "flip at {at}"
            );
        }
    }
}
