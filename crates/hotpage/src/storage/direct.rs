//! Durable writes that bypass the page cache: `O_DIRECT | O_DSYNC` (Linux).
//!
//! The log's flush is a write and an fdatasync of a few kilobytes. Through the page cache
//! that is a copy into the cache, a writeback of the dirty pages and a cache flush; with
//! `O_DIRECT | O_DSYNC` it is one write that returns once the data is on stable storage
//! (the kernel issues the device's FUA write or cache flush itself, and commits the file
//! system's journal when the write needs metadata, as fdatasync would). On the
//! development machine (ext4 on virtio) that took a 12 KB flush from a median 209 µs to
//! 123 µs, and a 600-byte one from 137 µs to 121 µs (docs/BENCHMARKS.md). PostgreSQL does
//! the same for its WAL (`wal_sync_method = open_datasync`, with direct I/O).
//!
//! Direct I/O needs the offset, the length and the buffer's address aligned to the
//! device's logical block. Callers give block-aligned offsets and lengths (`BLOCK_BYTES`);
//! the buffer is copied into an aligned bounce buffer here. Where direct I/O is not to be
//! had (tmpfs refuses `O_DIRECT`, another OS, a device with larger blocks: `EINVAL`), the
//! write falls back for good to a buffered write and an fdatasync: the same durability,
//! only slower.

use parking_lot::Mutex;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The alignment direct writes need here: 4096 covers devices with 512-byte and 4 KiB
/// logical blocks.
pub const BLOCK_BYTES: u64 = 4096;

/// A file's direct, synchronous write handle, opened on first use.
#[derive(Debug)]
pub(super) struct DirectWriter {
    path: PathBuf,
    // The (device, inode) of the file the caller opened: the handle is opened by path, later,
    // and the name may name another file by then (the directory moved, the file replaced):
    // writing there would leave the caller's file without the bytes it was told are durable.
    // None when unknown: never direct.
    identity: Option<(u64, u64)>,
    handle: OnceLock<Option<File>>,
    // An aligned copy of what is written (direct I/O needs an aligned address).
    bounce: Mutex<Vec<u8>>,
    // Set when a direct write was refused as invalid: every later write is buffered.
    refused: AtomicBool,
}

impl DirectWriter {
    /// A writer for `file`, which was opened from `path`.
    pub(super) fn new(path: PathBuf, file: &File) -> DirectWriter {
        DirectWriter {
            path,
            identity: identity_of(file),
            handle: OnceLock::new(),
            bounce: Mutex::new(Vec::new()),
            refused: AtomicBool::new(false),
        }
    }

    /// Writes `buf` at `offset`, durable when it returns. `None` when direct I/O cannot
    /// do it (unaligned, unsupported, or refused before): the caller writes through the
    /// page cache and fdatasyncs instead.
    pub(super) fn write_durable_at(&self, buf: &[u8], offset: u64) -> Option<io::Result<()>> {
        let aligned = offset.is_multiple_of(BLOCK_BYTES)
            && (buf.len() as u64).is_multiple_of(BLOCK_BYTES)
            && !buf.is_empty();
        if !aligned || self.refused.load(Ordering::Relaxed) {
            return None;
        }
        let file = self
            .handle
            .get_or_init(|| {
                let identity = self.identity?;
                open_direct(&self.path).filter(|direct| identity_of(direct) == Some(identity))
            })
            .as_ref()?;
        let mut bounce = self.bounce.lock();
        let start = aligned_copy(&mut bounce, buf);
        match file.write_all_at(&bounce[start..start + buf.len()], offset) {
            // EINVAL is checked before any I/O: the device wants a larger alignment.
            Err(error) if error.raw_os_error() == Some(EINVAL) => {
                self.refused.store(true, Ordering::Relaxed);
                None
            }
            result => Some(result),
        }
    }
}

/// A file's (device, inode), or None if it cannot be had.
fn identity_of(file: &File) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    file.metadata().ok().map(|meta| (meta.dev(), meta.ino()))
}

/// Copies `buf` into `bounce` at a `BLOCK_BYTES`-aligned address and returns where.
fn aligned_copy(bounce: &mut Vec<u8>, buf: &[u8]) -> usize {
    let needed = buf.len() + BLOCK_BYTES as usize;
    if bounce.len() < needed {
        *bounce = vec![0u8; needed.next_power_of_two()];
    }
    let start = bounce.as_ptr().align_offset(BLOCK_BYTES as usize);
    assert!(
        start < BLOCK_BYTES as usize,
        "a byte buffer can always be aligned"
    );
    bounce[start..start + buf.len()].copy_from_slice(buf);
    start
}

#[cfg(target_os = "linux")]
const EINVAL: i32 = libc::EINVAL;
#[cfg(not(target_os = "linux"))]
const EINVAL: i32 = 22;

/// The file opened for direct, synchronous writes; `None` where that is refused.
#[cfg(target_os = "linux")]
fn open_direct(path: &std::path::Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT | libc::O_DSYNC)
        .open(path)
        .ok()
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_path: &std::path::Path) -> Option<File> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_writes_go_direct_and_read_back_through_the_cache() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("create");
        file.set_len(4 * BLOCK_BYTES).expect("len");
        // Fill the cache with the old bytes first: a direct write must not leave them.
        let mut old = vec![0u8; 4 * BLOCK_BYTES as usize];
        file.read_exact_at(&mut old, 0).expect("read");
        let writer = DirectWriter::new(path.clone(), &file);
        let block: Vec<u8> = (0..2 * BLOCK_BYTES).map(|i| (i % 251) as u8).collect();
        let written = writer.write_durable_at(&block, BLOCK_BYTES);
        assert!(matches!(written, Some(Ok(())) | None), "{written:?}");
        let direct_used = written.is_some();
        if !direct_used {
            // No direct I/O on this file system (tmpfs): the caller's fallback is tested
            // through StdFile; nothing more to see here.
            return;
        }
        let mut back = vec![0u8; block.len()];
        file.read_exact_at(&mut back, BLOCK_BYTES)
            .expect("read back");
        assert_eq!(back, block);
    }

    /// The direct handle is opened by path at the first durable write. If the name by then
    /// names another file (the directory moved and was made again, the file replaced), the
    /// bytes must still land in the file the caller opened, never in the other one: else
    /// a flush reports durable records its segment does not hold.
    #[test]
    fn a_durable_write_lands_in_the_opened_file_after_its_name_moved_on() {
        use super::super::{StdStorage, Storage};
        let dir = tempfile::tempdir().expect("tempdir");
        let storage = StdStorage::open_dir(dir.path(), false).expect("storage");
        let file = storage.open("segment", true).expect("open");
        std::fs::rename(dir.path().join("segment"), dir.path().join("moved")).expect("rename");
        std::fs::write(dir.path().join("segment"), b"").expect("another file, same name");
        let block: Vec<u8> = (0..BLOCK_BYTES).map(|i| (i % 251) as u8).collect();
        file.write_durable_at(&block, 0).expect("write");
        let mut back = vec![0u8; block.len()];
        file.read_at(&mut back, 0)
            .expect("the opened file holds the bytes");
        assert_eq!(back, block);
        let other = std::fs::metadata(dir.path().join("segment")).expect("metadata");
        assert_eq!(other.len(), 0, "the write went to the other file");
    }

    #[test]
    fn unaligned_writes_are_left_to_the_caller() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let file = File::create(&path).expect("create");
        let writer = DirectWriter::new(path, &file);
        assert!(writer.write_durable_at(&[1u8; 100], 0).is_none());
        assert!(writer.write_durable_at(&[1u8; 4096], 100).is_none());
        assert!(writer.write_durable_at(&[], 0).is_none());
    }

    #[test]
    fn the_bounce_buffer_is_aligned_whatever_the_source() {
        let mut bounce = Vec::new();
        for len in [1usize, 4096, 5000, 70_000] {
            let buf = vec![7u8; len];
            let start = aligned_copy(&mut bounce, &buf[..]);
            assert_eq!((bounce.as_ptr() as usize + start) % BLOCK_BYTES as usize, 0);
            assert_eq!(&bounce[start..start + len], &buf[..]);
        }
    }
}
