//! Storages that keep writes in memory over another storage:
//! - [`OverlayStorage`]: copy-on-write over a storage it never changes. A read-only open
//!   runs crash recovery through it, so recovery's page writes, log truncation and catalog
//!   land in memory and the files on disk keep every byte (`hotpage check` on a crashed
//!   database leaves it exactly as it found it, on a read-only mount too).
//! - [`VolatileStorage`]: every write and `set_len` stays in memory until the file's
//!   `sync_data`, which then writes it to the file below and fdatasyncs it. Killing the
//!   process loses every unsynced write, as a power loss would, where a plain kill leaves
//!   them in the OS cache. `hotpage crashtest --power-loss` runs its child on it, so a
//!   missing fdatasync loses acknowledged rows and is caught. Directory changes (create,
//!   rename, remove) go to the directory at once: they have process-crash semantics, not
//!   power-loss ones (the in-memory `MemStorage` campaign covers those).
//!
//! Both keep changed data in 4 KiB blocks per file.

use super::{Storage, StorageFile, check_name};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::sync::Arc;

const BLOCK_BYTES: u64 = 4096;

/// A file as a base file (maybe none) plus blocks changed in memory.
#[derive(Debug)]
struct BlockFile {
    base: Option<Arc<dyn StorageFile>>,
    state: Mutex<Blocks>,
}

#[derive(Debug, Default)]
struct Blocks {
    // Changed blocks by block number, each BLOCK_BYTES long (bytes past `len` are zero).
    changed: BTreeMap<u64, Box<[u8]>>,
    // The file's length as readers see it.
    len: u64,
    // Bytes of the base file that still show through: a truncation hides what lay past
    // it even after the file grows again.
    base_visible: u64,
}

impl Blocks {
    /// The invariants every operation keeps: the base shows through only below the length,
    /// and every changed block is one block long and starts below the length.
    fn check(&self) {
        debug_assert!(self.base_visible <= self.len, "the base shows past the end");
        debug_assert!(self.changed.values().all(|b| b.len() as u64 == BLOCK_BYTES));
        debug_assert!(
            self.changed
                .keys()
                .all(|n| *n < self.len.div_ceil(BLOCK_BYTES)),
            "a changed block past the end"
        );
    }
}

impl BlockFile {
    fn over(base: Option<Arc<dyn StorageFile>>) -> io::Result<BlockFile> {
        let len = match &base {
            Some(file) => file.len()?,
            None => 0,
        };
        Ok(BlockFile {
            base,
            state: Mutex::new(Blocks {
                changed: BTreeMap::new(),
                len,
                base_visible: len,
            }),
        })
    }

    /// Block `number` as it stands, from memory or the base (zeros past the base).
    fn load_block(&self, blocks: &Blocks, number: u64, into: &mut [u8]) -> io::Result<()> {
        debug_assert_eq!(into.len() as u64, BLOCK_BYTES);
        if let Some(block) = blocks.changed.get(&number) {
            into.copy_from_slice(block);
            return Ok(());
        }
        into.fill(0);
        let start = number * BLOCK_BYTES;
        let shown = blocks.base_visible.min(blocks.len);
        if start < shown
            && let Some(base) = &self.base
        {
            let take = (shown - start).min(BLOCK_BYTES) as usize;
            base.read_at(&mut into[..take], start)?;
        }
        Ok(())
    }

    fn read(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let blocks = self.state.lock();
        blocks.check();
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|end| *end <= blocks.len)
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past end of file"))?;
        let mut scratch = vec![0u8; BLOCK_BYTES as usize];
        let mut at = offset;
        while at < end {
            let number = at / BLOCK_BYTES;
            let within = (at % BLOCK_BYTES) as usize;
            let take = ((BLOCK_BYTES - at % BLOCK_BYTES).min(end - at)) as usize;
            self.load_block(&blocks, number, &mut scratch)?;
            let out = (at - offset) as usize;
            buf[out..out + take].copy_from_slice(&scratch[within..within + take]);
            at += take as u64;
        }
        Ok(())
    }

    fn write(&self, data: &[u8], offset: u64) -> io::Result<()> {
        let mut blocks = self.state.lock();
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or_else(|| io::Error::new(io::ErrorKind::FileTooLarge, "write past u64"))?;
        let mut at = offset;
        while at < end {
            let number = at / BLOCK_BYTES;
            let within = (at % BLOCK_BYTES) as usize;
            let take = ((BLOCK_BYTES - at % BLOCK_BYTES).min(end - at)) as usize;
            if !blocks.changed.contains_key(&number) {
                let mut block = vec![0u8; BLOCK_BYTES as usize].into_boxed_slice();
                self.load_block(&blocks, number, &mut block)?;
                blocks.changed.insert(number, block);
            }
            let src = (at - offset) as usize;
            if let Some(block) = blocks.changed.get_mut(&number) {
                block[within..within + take].copy_from_slice(&data[src..src + take]);
            }
            at += take as u64;
        }
        blocks.len = blocks.len.max(end);
        blocks.check();
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut blocks = self.state.lock();
        if len < blocks.len {
            // The block holding the new end keeps its head; its tail and every later
            // block read as zeros from now on, whatever the base holds there.
            let number = len / BLOCK_BYTES;
            let within = (len % BLOCK_BYTES) as usize;
            if within > 0 && !blocks.changed.contains_key(&number) {
                let mut block = vec![0u8; BLOCK_BYTES as usize].into_boxed_slice();
                self.load_block(&blocks, number, &mut block)?;
                blocks.changed.insert(number, block);
            }
            if let Some(block) = blocks.changed.get_mut(&number) {
                block[within..].fill(0);
            }
            let first_gone = len.div_ceil(BLOCK_BYTES);
            blocks.changed.retain(|n, _| *n < first_gone);
            blocks.base_visible = blocks.base_visible.min(len);
        }
        blocks.len = len;
        blocks.check();
        Ok(())
    }

    fn len(&self) -> u64 {
        self.state.lock().len
    }

    /// Writes the changed blocks and the length to the base and fdatasyncs it (the
    /// volatile storage's `sync_data`). Only then are the blocks forgotten.
    fn write_through(&self) -> io::Result<()> {
        let mut blocks = self.state.lock();
        let Some(base) = &self.base else {
            return Err(io::Error::other("a volatile file without a file below it"));
        };
        let len = blocks.len;
        if blocks.base_visible < base.len()? {
            // A truncation hid the base's bytes past this point: cut them off first, so
            // that growing the file again below reads zeros there, as it does here.
            base.set_len(blocks.base_visible)?;
        }
        for (number, block) in &blocks.changed {
            let start = number * BLOCK_BYTES;
            if start >= len {
                continue;
            }
            let take = (len - start).min(BLOCK_BYTES) as usize;
            base.write_at(&block[..take], start)?;
        }
        if base.len()? != len {
            base.set_len(len)?;
        }
        base.sync_data()?;
        blocks.changed.clear();
        blocks.base_visible = len;
        Ok(())
    }
}

/// A [`BlockFile`] that lives in an [`OverlayStorage`]: reads and writes in memory, sync
/// does nothing.
#[derive(Debug)]
struct OverlayFile(BlockFile);

impl StorageFile for OverlayFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.0.read(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
}

#[derive(Debug)]
enum Entry {
    File(Arc<OverlayFile>),
    Removed,
}

/// Copy-on-write over a storage that it never writes (see the module docs). Everything
/// written through it stays in memory: the more recovery has to redo, the more memory a
/// read-only open takes (about the pages the log since the last checkpoint touches).
#[derive(Debug)]
pub struct OverlayStorage {
    base: Arc<dyn Storage>,
    entries: Mutex<HashMap<String, Entry>>,
}

impl OverlayStorage {
    /// An overlay over `base`, which it only ever reads (and locks).
    pub fn new(base: Arc<dyn Storage>) -> OverlayStorage {
        OverlayStorage {
            base,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn file(
        &self,
        entries: &mut HashMap<String, Entry>,
        name: &str,
        create: bool,
    ) -> io::Result<Arc<OverlayFile>> {
        let from_base = match entries.get(name) {
            Some(Entry::File(file)) => return Ok(Arc::clone(file)),
            Some(Entry::Removed) => false,
            None => self.base.exists(name)?,
        };
        let file = if from_base {
            Arc::new(OverlayFile(BlockFile::over(Some(
                self.base.open(name, false)?,
            ))?))
        } else if create {
            Arc::new(OverlayFile(BlockFile::over(None)?))
        } else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no file named {name:?}"),
            ));
        };
        entries.insert(name.to_owned(), Entry::File(Arc::clone(&file)));
        Ok(file)
    }
}

impl Storage for OverlayStorage {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        check_name(name)?;
        let file: Arc<dyn StorageFile> = self.file(&mut self.entries.lock(), name, create)?;
        Ok(file)
    }

    fn exists(&self, name: &str) -> io::Result<bool> {
        check_name(name)?;
        match self.entries.lock().get(name) {
            Some(Entry::File(_)) => Ok(true),
            Some(Entry::Removed) => Ok(false),
            None => self.base.exists(name),
        }
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        check_name(name)?;
        let mut entries = self.entries.lock();
        self.file(&mut entries, name, false)?;
        entries.insert(name.to_owned(), Entry::Removed);
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        check_name(from)?;
        check_name(to)?;
        let mut entries = self.entries.lock();
        let file = self.file(&mut entries, from, false)?;
        entries.insert(from.to_owned(), Entry::Removed);
        entries.insert(to.to_owned(), Entry::File(file));
        Ok(())
    }

    fn sync_dir(&self) -> io::Result<()> {
        Ok(())
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let entries = self.entries.lock();
        let mut names: Vec<String> = self
            .base
            .list()?
            .into_iter()
            .filter(|name| !entries.contains_key(name))
            .collect();
        names.extend(entries.iter().filter_map(|(name, entry)| match entry {
            Entry::File(_) => Some(name.clone()),
            Entry::Removed => None,
        }));
        names.sort();
        Ok(names)
    }

    fn lock(&self) -> io::Result<()> {
        self.base.lock()
    }
}

/// A [`BlockFile`] of a [`VolatileStorage`]: sync writes it through.
#[derive(Debug)]
struct VolatileFile(BlockFile);

impl StorageFile for VolatileFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.0.read(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.write_through()
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
}

/// Writes stay in memory until their file's `sync_data` (see the module docs).
#[derive(Debug)]
pub struct VolatileStorage {
    base: Arc<dyn Storage>,
    // One file object per name, so that every handle sees the same unsynced writes.
    open_files: Mutex<HashMap<String, Arc<VolatileFile>>>,
}

impl VolatileStorage {
    /// Volatile writes over `base`, which receives them at each `sync_data`.
    pub fn new(base: Arc<dyn Storage>) -> VolatileStorage {
        VolatileStorage {
            base,
            open_files: Mutex::new(HashMap::new()),
        }
    }
}

impl Storage for VolatileStorage {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        let mut files = self.open_files.lock();
        if let Some(file) = files.get(name) {
            let file: Arc<dyn StorageFile> = Arc::clone(file) as Arc<dyn StorageFile>;
            return Ok(file);
        }
        let file = Arc::new(VolatileFile(BlockFile::over(Some(
            self.base.open(name, create)?,
        ))?));
        files.insert(name.to_owned(), Arc::clone(&file));
        Ok(file)
    }

    fn exists(&self, name: &str) -> io::Result<bool> {
        self.base.exists(name)
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        self.base.remove(name)?;
        self.open_files.lock().remove(name);
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.base.rename(from, to)?;
        let mut files = self.open_files.lock();
        match files.remove(from) {
            Some(file) => {
                files.insert(to.to_owned(), file);
            }
            None => {
                files.remove(to);
            }
        }
        Ok(())
    }

    fn sync_dir(&self) -> io::Result<()> {
        self.base.sync_dir()
    }

    fn list(&self) -> io::Result<Vec<String>> {
        self.base.list()
    }

    fn lock(&self) -> io::Result<()> {
        self.base.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{CrashMode, MemStorage};
    use proptest::prelude::*;

    fn read_all(file: &dyn StorageFile) -> Vec<u8> {
        let mut buf = vec![0u8; usize::try_from(file.len().expect("len")).expect("usize")];
        file.read_at(&mut buf, 0).expect("read");
        buf
    }

    /// A base storage whose every change is durable, to compare against.
    fn base_with(files: &[(&str, &[u8])]) -> Arc<MemStorage> {
        let mem = MemStorage::new(1);
        for (name, bytes) in files {
            let file = mem.open(name, true).expect("create");
            file.write_at(bytes, 0).expect("write");
            file.sync_data().expect("sync");
        }
        mem.sync_dir().expect("dir");
        mem
    }

    #[test]
    fn the_overlay_never_changes_its_base() {
        let base = base_with(&[("a", b"0123456789"), ("b", b"bee")]);
        let overlay = OverlayStorage::new(base.clone());
        let a = overlay.open("a", false).expect("open");
        a.write_at(b"XY", 4).expect("write");
        a.set_len(8).expect("truncate");
        a.write_at(b"!", 9).expect("grow");
        assert_eq!(read_all(&*a), b"0123XY67\0!");
        overlay.rename("b", "c").expect("rename");
        overlay.open("new", true).expect("create");
        overlay.remove("a").expect("remove");
        assert_eq!(overlay.list().expect("list"), vec!["c", "new"]);
        assert!(!overlay.exists("a").expect("exists"));
        assert!(overlay.open("a", false).is_err());
        // The base is exactly as it was.
        assert_eq!(base.list().expect("list"), vec!["a", "b"]);
        assert_eq!(base.read_file("a").expect("read"), b"0123456789");
        assert_eq!(base.read_file("b").expect("read"), b"bee");
        assert_eq!(base.write_count(), 2, "only the setup wrote");
    }

    #[test]
    fn volatile_writes_reach_the_base_only_at_sync() {
        let base = base_with(&[("f", &[1u8; 10_000])]);
        let volatile = VolatileStorage::new(base.clone());
        let f = volatile.open("f", false).expect("open");
        f.write_at(&[2u8; 5000], 3000).expect("write");
        f.set_len(9000).expect("truncate");
        assert_eq!(read_all(&*f)[3000..8000], [2u8; 5000]);
        assert_eq!(base.read_file("f").expect("read"), vec![1u8; 10_000]);
        f.sync_data().expect("sync");
        let mut expected = vec![1u8; 9000];
        expected[3000..8000].fill(2);
        assert_eq!(base.read_file("f").expect("read"), expected);
        // Synced means durable below: a crash of the base keeps it.
        base.crash(CrashMode::DropAll);
        assert_eq!(base.read_file("f").expect("read"), expected);
        // Unsynced writes die with the process (a new storage over the same base).
        f.write_at(b"lost", 0).expect("write");
        drop(volatile);
        let after = VolatileStorage::new(base.clone());
        assert_eq!(read_all(&*after.open("f", false).expect("open")), expected);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Write(u64, Vec<u8>),
        SetLen(u64),
        Sync,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (
                0u64..20_000,
                proptest::collection::vec(any::<u8>(), 0..6000)
            )
                .prop_map(|(at, bytes)| Op::Write(at, bytes)),
            (0u64..24_000).prop_map(Op::SetLen),
            Just(Op::Sync),
        ]
    }

    proptest! {
        /// Both storages read exactly like a plain file under any writes and truncations.
        #[test]
        fn block_files_read_like_a_plain_file(
            start in proptest::collection::vec(any::<u8>(), 0..9000),
            ops in proptest::collection::vec(op(), 1..25),
        ) {
            let model = base_with(&[("f", &start)]);
            let model_file = model.open("f", false).expect("open");
            let overlay = OverlayStorage::new(base_with(&[("f", &start)]));
            let volatile = VolatileStorage::new(base_with(&[("f", &start)]));
            let files = [
                overlay.open("f", false).expect("open"),
                volatile.open("f", false).expect("open"),
            ];
            for op in &ops {
                for file in files.iter().chain(std::iter::once(&model_file)) {
                    match op {
                        Op::Write(at, bytes) => file.write_at(bytes, *at).expect("write"),
                        Op::SetLen(len) => file.set_len(*len).expect("set_len"),
                        Op::Sync => file.sync_data().expect("sync"),
                    }
                }
                let expected = read_all(&*model_file);
                for file in &files {
                    prop_assert_eq!(read_all(&**file), expected.clone());
                }
            }
        }
    }
}
