//! The log's durable end, kept outside the log (`log.durable`), so that whole-file damage
//! to the log's last segments is not taken for a torn tail.
//!
//! The flush marks inside the log prove a bad record durable only when a later mark
//! survives (`reader`). Damage that takes the marks with it leaves no such proof: the last
//! segment deleted, truncated, overwritten by another segment or swapped with one, or bytes
//! cut out of it. The log then reads as if the crash had cut it there, and commits that were
//! acknowledged were dropped without a word (a damage campaign of the CLI, 2026-11-29).
//!
//! So the log writes its durable LSN here (`Shared::note_durable_mark`): after a flush
//! when the last mark is at least `MARK_INTERVAL` (1 ms) old, and when the flusher wakes
//! from a whole `async_flush_interval` (10 ms) without a commit, into the page cache; the checkpointer makes the file durable at each of its
//! ticks (100 ms). A log found to end before the mark lost durable records: an open
//! refuses it as damage (`Error::CorruptLog`), exactly as one that ends before the last
//! checkpoint's redo point. What no mark covers is still only as safe as the flush marks
//! make it: after a process is killed, at most the last millisecond of a busy log (the last
//! flush interval of one that fell idle); after a power cut, what the last tick's sync did
//! not cover (about 100 ms).
//!
//! Layout: two 512-byte slots (offsets 0 and 512), written in turn, so that a torn write
//! spoils at most the slot being written and the other still holds the previous mark. A
//! slot: magic `HPDURMK1` | sequence u64 | log salt u64 | durable LSN u64 | crc32c u32 of
//! the 32 bytes before it (little-endian). The valid slot with the higher sequence counts;
//! a mark of another log (its salt differs from the catalog's) counts for nothing, and so
//! does a file with no valid slot (a crash during its first write).

use super::record::Lsn;
use crate::storage::{Storage, StorageFile};
use std::io;
use std::sync::Arc;

/// The file's name in the database directory.
pub const DURABLE_MARK_FILE: &str = "log.durable";
const MAGIC: &[u8; 8] = b"HPDURMK1";
const SLOT_BYTES: usize = 512;
const BODY_BYTES: usize = 32;

/// A mark read back: the log (by its salt) and the LSN it was durable to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DurableMark {
    sequence: u64,
    /// The salt of the log the mark belongs to.
    pub salt: u64,
    /// Everything in the log before this LSN was durable when the mark was written.
    pub durable: Lsn,
}

fn encode(mark: &DurableMark) -> [u8; SLOT_BYTES] {
    let mut slot = [0u8; SLOT_BYTES];
    slot[..8].copy_from_slice(MAGIC);
    slot[8..16].copy_from_slice(&mark.sequence.to_le_bytes());
    slot[16..24].copy_from_slice(&mark.salt.to_le_bytes());
    slot[24..32].copy_from_slice(&mark.durable.to_le_bytes());
    let crc = crc32c::crc32c(&slot[..BODY_BYTES]);
    slot[BODY_BYTES..BODY_BYTES + 4].copy_from_slice(&crc.to_le_bytes());
    slot
}

/// The mark in `slot`, if it is whole.
fn decode(slot: &[u8]) -> Option<DurableMark> {
    let body = slot.get(..BODY_BYTES)?;
    let crc = slot.get(BODY_BYTES..BODY_BYTES + 4)?;
    if &body[..8] != MAGIC || crc32c::crc32c(body).to_le_bytes() != crc {
        return None;
    }
    let word = |at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&body[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    Some(DurableMark {
        sequence: word(8),
        salt: word(16),
        durable: word(24),
    })
}

/// The latest whole mark of the log salted `salt`, if the file holds one. Reads only.
pub fn read(storage: &dyn Storage, salt: u64) -> io::Result<Option<DurableMark>> {
    Ok(read_latest(storage)?.filter(|mark| mark.salt == salt))
}

/// The latest whole mark in the file, of whichever log. Reads only.
pub fn read_latest(storage: &dyn Storage) -> io::Result<Option<DurableMark>> {
    if !storage.exists(DURABLE_MARK_FILE)? {
        return Ok(None);
    }
    let file = storage.open(DURABLE_MARK_FILE, false)?;
    let len = usize::try_from(file.len()?)
        .unwrap_or(0)
        .min(2 * SLOT_BYTES);
    let mut bytes = vec![0u8; len];
    file.read_at(&mut bytes, 0)?;
    Ok(bytes
        .chunks(SLOT_BYTES)
        .filter_map(decode)
        .max_by_key(|mark| mark.sequence))
}

/// Writes marks for one open log, in turn into the two slots.
pub struct MarkWriter {
    storage: Arc<dyn Storage>,
    file: Option<Arc<dyn StorageFile>>,
    salt: u64,
    last: DurableMark,
    // A mark was written since the file was last made durable.
    unsynced: bool,
}

impl MarkWriter {
    /// A writer for the log salted `salt`; it goes on from the file's latest mark, if any.
    pub fn new(storage: Arc<dyn Storage>, salt: u64) -> MarkWriter {
        let found = read(&*storage, salt).ok().flatten();
        let last = found.unwrap_or(DurableMark {
            sequence: 0,
            salt,
            durable: 0,
        });
        MarkWriter {
            storage,
            file: None,
            salt,
            last,
            unsynced: false,
        }
    }

    /// Records that the log was durable to `durable`, unless the last mark said as much
    /// already: written, not yet made durable ([`MarkWriter::unsynced_file`] is for that).
    /// A process killed after this leaves the mark with the kernel, which writes it back
    /// as it does every other file; a power cut may take it, and leaves an older slot.
    /// Either way no mark says more than the log holds: the caller passes only an LSN the
    /// log has already made durable. True when it wrote.
    pub fn record(&mut self, durable: Lsn) -> io::Result<bool> {
        if durable <= self.last.durable {
            return Ok(false);
        }
        let file = self.file()?;
        let mark = DurableMark {
            sequence: self.last.sequence + 1,
            salt: self.salt,
            durable,
        };
        let at = (mark.sequence % 2) * SLOT_BYTES as u64;
        file.write_at(&encode(&mark), at)?;
        self.last = mark;
        self.unsynced = true;
        Ok(true)
    }

    /// The file, when marks were written since it was last made durable: the caller
    /// makes it durable (`sync_data`), outside whatever lock guards this writer. If that
    /// fails, the next mark is written and synced again later: a mark is evidence, not a
    /// promise.
    pub fn unsynced_file(&mut self) -> Option<Arc<dyn StorageFile>> {
        if !std::mem::take(&mut self.unsynced) {
            return None;
        }
        self.file.clone()
    }

    /// Opens the file, creating it (and syncing the directory) if it is missing, so that
    /// the first mark, written on a flush's path, does not wait for a directory sync.
    /// A failure here is tried again at the first mark.
    pub fn prepare(&mut self) -> io::Result<()> {
        self.file().map(|_| ())
    }

    fn file(&mut self) -> io::Result<Arc<dyn StorageFile>> {
        if let Some(file) = &self.file {
            return Ok(Arc::clone(file));
        }
        let created = !self.storage.exists(DURABLE_MARK_FILE)?;
        let file = self.storage.open(DURABLE_MARK_FILE, true)?;
        if created {
            // A mark must not vanish with its directory entry after a crash.
            self.storage.sync_dir()?;
        }
        self.file = Some(Arc::clone(&file));
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{CrashMode, MemStorage};

    #[test]
    fn the_latest_whole_mark_of_the_log_counts() {
        let mem = MemStorage::new(1);
        assert_eq!(read(&*mem, 7).expect("read"), None, "no file: no mark");
        let mut writer = MarkWriter::new(mem.clone(), 7);
        writer.record(4096).expect("write");
        assert!(
            !writer
                .record(4096)
                .expect("the same mark again writes nothing")
        );
        sync(&mut writer);
        assert!(writer.unsynced_file().is_none(), "synced already");
        assert!(writer.record(10_000).expect("write"));
        sync(&mut writer);
        assert_eq!(
            read(&*mem, 7).expect("read").map(|m| m.durable),
            Some(10_000)
        );
        assert_eq!(read(&*mem, 8).expect("read"), None, "another log's mark");
        // A torn write of the newer slot leaves the older mark.
        let newer = (writer.last.sequence % 2) * SLOT_BYTES as u64;
        mem.damage(DURABLE_MARK_FILE, newer + 20, &[0xFF])
            .expect("damage");
        assert_eq!(read(&*mem, 7).expect("read").map(|m| m.durable), Some(4096));
        // A new writer goes on from the file's latest whole mark.
        let mut again = MarkWriter::new(mem.clone(), 7);
        again.record(20_000).expect("write");
        sync(&mut again);
        assert_eq!(
            read(&*mem, 7).expect("read").map(|m| m.durable),
            Some(20_000)
        );
        let older = (again.last.sequence % 2 + 1) % 2 * SLOT_BYTES as u64;
        mem.damage(DURABLE_MARK_FILE, older, &[0u8; SLOT_BYTES])
            .expect("damage");
        assert_eq!(
            read(&*mem, 7).expect("read").map(|m| m.durable),
            Some(20_000)
        );
    }

    fn sync(writer: &mut MarkWriter) {
        let file = writer.unsynced_file().expect("a mark was written");
        file.sync_data().expect("sync");
    }

    /// Marks written and not synced may die in a power cut; what survives never says more
    /// than the marks written, and a synced mark always survives.
    #[test]
    fn a_power_cut_keeps_the_synced_mark_or_a_later_one() {
        for seed in 0..20 {
            let mem = MemStorage::new(seed);
            let mut writer = MarkWriter::new(mem.clone(), 3);
            writer.record(1_000).expect("write");
            sync(&mut writer);
            for durable in [2_000, 3_000, 4_000] {
                writer.record(durable).expect("write");
            }
            let mode = [CrashMode::Torn, CrashMode::DropAll, CrashMode::Reorder][seed as usize % 3];
            let rebooted = mem.reboot(mode, seed).expect("reboot");
            let found = read(&*rebooted, 3).expect("read").map(|m| m.durable);
            assert!(
                matches!(found, Some(1_000 | 2_000 | 3_000 | 4_000)),
                "seed {seed}, {mode:?}: {found:?}"
            );
        }
    }

    #[test]
    fn a_file_without_a_whole_slot_holds_no_mark() {
        let mem = MemStorage::new(2);
        let file = mem.open(DURABLE_MARK_FILE, true).expect("create");
        file.write_at(&[0xAB; 700], 0).expect("write");
        assert_eq!(read(&*mem, 0).expect("read"), None);
        for cut in [0, 10, BODY_BYTES + 3] {
            let slot = encode(&DurableMark {
                sequence: 1,
                salt: 0,
                durable: 99,
            });
            assert_eq!(decode(&slot[..cut]), None, "a slot cut at {cut}");
        }
    }
}
