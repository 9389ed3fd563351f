//! The file layer: the only code in the engine that touches files.
//!
//! Everything above goes through [`Storage`] (a flat directory of named files)
//! and [`StorageFile`] (positional reads and writes plus `fdatasync`). Two
//! implementations exist: [`StdStorage`] over a real directory, and
//! [`MemStorage`], an in-memory directory that simulates power loss and I/O
//! faults for crash tests.
//!
//! Errors are plain [`std::io::Result`]; the layers above wrap them into the
//! engine's error type with context.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One open file: positional I/O that is safe to share between threads.
pub trait StorageFile: Send + Sync + std::fmt::Debug {
    /// Reads exactly buf.len() bytes at offset; reading past the end is an UnexpectedEof error.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of buf at offset, extending the file if needed.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// fdatasync: makes every write before it durable.
    fn sync_data(&self) -> io::Result<()>;
    /// The current length of the file in bytes (as readers see it).
    fn len(&self) -> io::Result<u64>;
    /// Truncates or extends (with zeros) the file to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Whether the file has no bytes. Provided; implementors need not write it.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// A directory of named files (flat names, no slashes).
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// Opens `name`; with `create` it is created empty when missing.
    /// `create == false` and missing => `NotFound`.
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn StorageFile>>;
    /// Whether a file called `name` exists.
    fn exists(&self, name: &str) -> io::Result<bool>;
    /// Removes `name`; missing => `NotFound`.
    fn remove(&self, name: &str) -> io::Result<()>;
    /// Atomically replaces `to` with `from` (POSIX rename semantics).
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// fsync of the directory itself: makes creates/renames/removes durable.
    fn sync_dir(&self) -> io::Result<()>;
    /// The names of the files in the directory, sorted.
    fn list(&self) -> io::Result<Vec<String>>;
    /// Takes an exclusive advisory lock on the directory, held until this storage is
    /// dropped, so that a second process (or a second open) cannot use it meanwhile.
    /// `WouldBlock` when another holder has it. Provided as a no-op: storage that cannot
    /// be shared between processes (in memory) needs no lock.
    fn lock(&self) -> io::Result<()> {
        Ok(())
    }
}

/// The file [`StdStorage::lock`] locks (it stays behind, empty, when the lock is released).
pub const LOCK_FILE: &str = "LOCK";

/// Rejects names that could escape the directory or name it: empty, `.`,
/// anything containing `/`, `..` or NUL.
fn check_name(name: &str) -> io::Result<()> {
    if name.is_empty()
        || name == "."
        || name.contains('/')
        || name.contains("..")
        || name.contains('\0')
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid file name {name:?}: must be a flat, non-empty name"),
        ));
    }
    Ok(())
}

/// [`Storage`] over a real directory of the local file system.
#[derive(Debug)]
pub struct StdStorage {
    dir: PathBuf,
    // The locked LOCK file, once `lock` has succeeded; closing it releases the lock.
    lock: std::sync::OnceLock<File>,
}

impl StdStorage {
    /// Opens (create_dir_all when create=true) a directory. Missing dir and create=false => NotFound.
    pub fn open_dir(path: &Path, create: bool) -> io::Result<Self> {
        if create {
            std::fs::create_dir_all(path)?;
        }
        // metadata() reports NotFound for a missing directory.
        let meta = std::fs::metadata(path)?;
        if !meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", path.display()),
            ));
        }
        Ok(Self {
            dir: path.to_path_buf(),
            lock: std::sync::OnceLock::new(),
        })
    }

    /// The directory this storage lives in.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn file_path(&self, name: &str) -> io::Result<PathBuf> {
        check_name(name)?;
        Ok(self.dir.join(name))
    }
}

impl Storage for StdStorage {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        let path = self.file_path(name)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(&path)?;
        Ok(Arc::new(StdFile { file }))
    }

    fn exists(&self, name: &str) -> io::Result<bool> {
        self.file_path(name)?.try_exists()
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        std::fs::remove_file(self.file_path(name)?)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        std::fs::rename(self.file_path(from)?, self.file_path(to)?)
    }

    fn sync_dir(&self) -> io::Result<()> {
        // On Linux a directory opened read-only can be fsynced; this persists
        // the directory entries (creates, renames, removes).
        File::open(&self.dir)?.sync_all()
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            if !entry.file_type()?.is_file() {
                continue;
            }
            // Names the engine did not write (not UTF-8) are not ours: skip them.
            if let Ok(name) = entry.file_name().into_string() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    fn lock(&self) -> io::Result<()> {
        if self.lock.get().is_some() {
            return Ok(());
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.file_path(LOCK_FILE)?)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("{} is locked by another holder", self.dir.display()),
                ));
            }
            Err(std::fs::TryLockError::Error(error)) => return Err(error),
        }
        // A racing `lock` on this same storage would have failed on our lock above.
        let _ = self.lock.set(file);
        Ok(())
    }
}

/// A real file opened by [`StdStorage`].
#[derive(Debug)]
struct StdFile {
    file: File,
}

impl StorageFile for StdFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
}

/// How [`MemStorage::crash`] treats writes that were not yet synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Every unsynced write (and `set_len`) is lost.
    DropAll,
    /// Each unsynced write (and `set_len`) is independently kept or lost:
    /// any subset survives, which models the disk reordering writes.
    Reorder,
    /// Each unsynced write is split into 512-byte sectors (aligned to file
    /// offsets that are multiples of 512) and each sector is independently
    /// kept or lost: models torn writes. Each `set_len` is kept or lost.
    Torn,
}

/// The unit of atomicity that [`CrashMode::Torn`] assumes for the disk.
pub const SECTOR_BYTES: u64 = 512;

/// The largest file [`MemStorage`] agrees to hold, so that a bogus offset
/// is an error rather than an attempt to allocate terabytes.
pub const MEM_FILE_MAX_BYTES: u64 = 1 << 32;

/// An in-memory [`Storage`] that simulates power loss and I/O faults.
///
/// Model (what a crash test can rely on):
/// - Each file keeps its *durable* bytes and the list of writes and
///   `set_len` calls not yet synced. Reads see every write, as through the OS
///   page cache. `sync_data` makes that file's pending changes durable.
/// - Namespace changes (create, rename, remove) take effect at once for
///   readers and become durable at [`Storage::sync_dir`]. A file created but
///   never dir-synced vanishes at a crash, as on ext4 without a directory
///   fsync; a dir-synced file whose data was never synced survives empty.
/// - [`MemStorage::crash`] reverts to the durable state, deterministically
///   from the seed and the sequence of operations.
/// - Like Linux, a failed `sync_data` drops the pending writes it covered
///   from the durable future: reads still see them, but the next crash loses
///   them, and a later successful sync does not bring them back.
///
/// File handles refer to inode-like shared objects. After a crash, handles
/// to files that survived keep working (on the durable contents); handles to
/// files that did not survive return an error.
pub struct MemStorage {
    ns: parking_lot::Mutex<Namespace>,
    faults: Arc<parking_lot::Mutex<Faults>>,
}

/// Names to inodes, live and durable, plus the crash randomness.
struct Namespace {
    /// What readers see now.
    live: std::collections::BTreeMap<String, Arc<MemInode>>,
    /// What survives a crash: the namespace as of the last `sync_dir`.
    durable: std::collections::BTreeMap<String, Arc<MemInode>>,
    /// Every inode ever created and still alive somewhere, so that a crash
    /// can invalidate open handles to unlinked or never-durable files.
    all: Vec<std::sync::Weak<MemInode>>,
    /// Prune `all` when it grows past this many entries.
    prune_at_len: usize,
    rng: rand::rngs::SmallRng,
}

/// Fault-injection state and counters, shared by every inode.
#[derive(Debug, Default)]
struct Faults {
    /// Successful `sync_data` calls left before they start failing.
    syncs_left: Option<u64>,
    /// Successful `write_at` calls left before they start failing.
    writes_left: Option<u64>,
    sync_count: u64,
    write_count: u64,
}

impl Faults {
    /// Counts one call and says whether it should fail.
    fn take(left: &mut Option<u64>, count: &mut u64) -> bool {
        *count += 1;
        match left {
            None => false,
            Some(0) => true,
            Some(n) => {
                *n -= 1;
                false
            }
        }
    }
}

impl MemStorage {
    /// An empty in-memory directory; `seed` drives every crash decision.
    pub fn new(seed: u64) -> Arc<MemStorage> {
        use rand::SeedableRng;
        Arc::new(MemStorage {
            ns: parking_lot::Mutex::new(Namespace {
                live: Default::default(),
                durable: Default::default(),
                all: Vec::new(),
                prune_at_len: 64,
                rng: rand::rngs::SmallRng::seed_from_u64(seed),
            }),
            faults: Arc::new(parking_lot::Mutex::new(Faults::default())),
        })
    }

    /// Power loss, then a reboot: `crash(mode)`, then a new storage holding exactly what
    /// survived, all of it durable. Nothing opened from `self` can reach the new storage,
    /// so a "killed" process that still holds handles (and threads) cannot touch the
    /// rebooted machine's files. `seed` drives the new storage's later crashes.
    pub fn reboot(&self, mode: CrashMode, seed: u64) -> io::Result<Arc<MemStorage>> {
        self.crash(mode);
        let fresh = MemStorage::new(seed);
        for name in self.list()? {
            let old = self.open(&name, false)?;
            let mut bytes = vec![0u8; usize::try_from(old.len()?).unwrap_or(0)];
            old.read_at(&mut bytes, 0)?;
            let new = fresh.open(&name, true)?;
            new.write_at(&bytes, 0)?;
            new.sync_data()?;
        }
        fresh.sync_dir()?;
        Ok(fresh)
    }

    /// Simulates power loss: the namespace reverts to the last dir-synced
    /// one and each file to its durable bytes plus whatever of its pending
    /// writes `mode` lets survive. Afterwards nothing is pending.
    ///
    /// Fault-injection settings and counters are left as they are; clear
    /// them with `fail_sync_after(None)` / `fail_writes_after(None)`.
    pub fn crash(&self, mode: CrashMode) {
        let mut guard = self.ns.lock();
        let ns = &mut *guard;
        ns.live = ns.durable.clone();
        // BTreeMap order makes the random choices deterministic per seed.
        for inode in ns.durable.values() {
            inode.data.lock().crash(mode, &mut ns.rng);
        }
        for weak in &ns.all {
            if let Some(inode) = weak.upgrade() {
                let survived = ns.durable.values().any(|d| Arc::ptr_eq(d, &inode));
                if !survived {
                    inode.data.lock().kill();
                }
            }
        }
        let durable = &ns.durable;
        ns.all.retain(|weak| {
            weak.upgrade()
                .is_some_and(|inode| durable.values().any(|d| Arc::ptr_eq(d, &inode)))
        });
        ns.prune_at_len = (ns.all.len() * 2).max(64);
    }

    /// After `n` more successful `sync_data` calls (over all files), every
    /// `sync_data` fails with an EIO-like error and drops the writes it
    /// covered from the durable future. `None` clears the fault.
    pub fn fail_sync_after(&self, n: Option<u64>) {
        self.faults.lock().syncs_left = n;
    }

    /// After `n` more successful `write_at` calls (over all files), every
    /// `write_at` fails with an EIO-like error and changes nothing.
    /// `None` clears the fault.
    pub fn fail_writes_after(&self, n: Option<u64>) {
        self.faults.lock().writes_left = n;
    }

    /// How many times `sync_data` was called (over all files), failed calls included.
    pub fn sync_count(&self) -> u64 {
        self.faults.lock().sync_count
    }

    /// How many times `write_at` was called (over all files), failed calls included.
    pub fn write_count(&self) -> u64 {
        self.faults.lock().write_count
    }
}

impl std::fmt::Debug for MemStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names only: the contents could be megabytes.
        let ns = self.ns.lock();
        f.debug_struct("MemStorage")
            .field("live", &ns.live.keys().collect::<Vec<_>>())
            .field("durable", &ns.durable.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no file named {name:?}"))
}

impl Storage for MemStorage {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        check_name(name)?;
        let mut ns = self.ns.lock();
        if let Some(inode) = ns.live.get(name) {
            return Ok(inode.clone());
        }
        if !create {
            return Err(not_found(name));
        }
        let inode = Arc::new(MemInode {
            faults: self.faults.clone(),
            data: parking_lot::Mutex::new(InodeData::default()),
        });
        ns.live.insert(name.to_owned(), inode.clone());
        if ns.all.len() >= ns.prune_at_len {
            ns.all.retain(|weak| weak.strong_count() > 0);
            ns.prune_at_len = (ns.all.len() * 2).max(64);
        }
        ns.all.push(Arc::downgrade(&inode));
        Ok(inode)
    }

    fn exists(&self, name: &str) -> io::Result<bool> {
        check_name(name)?;
        Ok(self.ns.lock().live.contains_key(name))
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        check_name(name)?;
        // Open handles keep the inode, as with an unlinked open file.
        match self.ns.lock().live.remove(name) {
            Some(_) => Ok(()),
            None => Err(not_found(name)),
        }
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        check_name(from)?;
        check_name(to)?;
        let mut ns = self.ns.lock();
        let inode = ns.live.remove(from).ok_or_else(|| not_found(from))?;
        ns.live.insert(to.to_owned(), inode);
        Ok(())
    }

    fn sync_dir(&self) -> io::Result<()> {
        let mut ns = self.ns.lock();
        ns.durable = ns.live.clone();
        Ok(())
    }

    fn list(&self) -> io::Result<Vec<String>> {
        Ok(self.ns.lock().live.keys().cloned().collect())
    }
}

/// A change to a file not yet made durable.
#[derive(Debug, Clone)]
enum Pending {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

/// The contents of one in-memory file.
#[derive(Debug, Default)]
struct InodeData {
    /// What survives a crash.
    durable: Vec<u8>,
    /// What readers see (the page-cache view).
    current: Vec<u8>,
    /// Changes since the last sync, oldest first.
    pending: Vec<Pending>,
    /// The file did not survive a crash: every operation fails.
    dead: bool,
}

fn checked_end(offset: u64, len_bytes: usize) -> io::Result<usize> {
    let end = u64::try_from(len_bytes)
        .ok()
        .and_then(|len| offset.checked_add(len))
        .filter(|end| *end <= MEM_FILE_MAX_BYTES)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("in-memory file would exceed {MEM_FILE_MAX_BYTES} bytes"),
            )
        })?;
    usize::try_from(end).map_err(|_| io::Error::new(io::ErrorKind::FileTooLarge, "file too large"))
}

/// Applies a validated write to `bytes`, zero-filling any gap.
fn apply_write(bytes: &mut Vec<u8>, offset: usize, data: &[u8]) {
    let end = offset + data.len();
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[offset..end].copy_from_slice(data);
}

impl InodeData {
    fn check_alive(&self) -> io::Result<()> {
        if self.dead {
            return Err(io::Error::other(
                "stale handle: the file did not survive the simulated crash",
            ));
        }
        Ok(())
    }

    /// Applies one pending change to the durable bytes. Offsets and lengths
    /// were validated when the change was made, so the conversions hold.
    fn apply_durable(&mut self, change: &Pending) {
        match change {
            Pending::Write { offset, data } => {
                if let Ok(offset) = usize::try_from(*offset) {
                    apply_write(&mut self.durable, offset, data);
                }
            }
            Pending::SetLen(len) => {
                if let Ok(len) = usize::try_from(*len) {
                    self.durable.resize(len, 0);
                }
            }
        }
    }

    fn crash(&mut self, mode: CrashMode, rng: &mut rand::rngs::SmallRng) {
        use rand::Rng;
        let pending = std::mem::take(&mut self.pending);
        match mode {
            CrashMode::DropAll => {}
            CrashMode::Reorder => {
                // Survivors are applied in their original order: the page
                // cache holds only the newest data for a range, so an older
                // write never lands on top of a newer one.
                for change in &pending {
                    if rng.random_bool(0.5) {
                        self.apply_durable(change);
                    }
                }
            }
            CrashMode::Torn => {
                for change in pending {
                    match change {
                        Pending::Write { offset, data } => {
                            for (sector_offset, sector) in sectors(offset, &data) {
                                if rng.random_bool(0.5) {
                                    self.apply_durable(&Pending::Write {
                                        offset: sector_offset,
                                        data: sector.to_vec(),
                                    });
                                }
                            }
                        }
                        set_len @ Pending::SetLen(_) => {
                            if rng.random_bool(0.5) {
                                self.apply_durable(&set_len);
                            }
                        }
                    }
                }
            }
        }
        self.current = self.durable.clone();
    }

    /// The file did not survive a crash: free its bytes, fail its handles.
    fn kill(&mut self) {
        self.dead = true;
        self.durable = Vec::new();
        self.current = Vec::new();
        self.pending = Vec::new();
    }
}

/// Splits a write at `offset` into pieces that each lie within one
/// `SECTOR_BYTES`-aligned sector of the file.
fn sectors(offset: u64, data: &[u8]) -> Vec<(u64, &[u8])> {
    let mut pieces = Vec::new();
    let mut rest = data;
    let mut at = offset;
    while !rest.is_empty() {
        let room_bytes = SECTOR_BYTES - at % SECTOR_BYTES;
        let take_bytes = usize::try_from(room_bytes).map_or(rest.len(), |r| r.min(rest.len()));
        let (piece, tail) = rest.split_at(take_bytes);
        pieces.push((at, piece));
        at += take_bytes as u64;
        rest = tail;
    }
    pieces
}

/// One in-memory file, shared by every handle to it.
struct MemInode {
    faults: Arc<parking_lot::Mutex<Faults>>,
    data: parking_lot::Mutex<InodeData>,
}

impl std::fmt::Debug for MemInode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Sizes only: the contents could be megabytes.
        let data = self.data.lock();
        f.debug_struct("MemFile")
            .field("len_bytes", &data.current.len())
            .field("durable_len_bytes", &data.durable.len())
            .field("pending", &data.pending.len())
            .field("dead", &data.dead)
            .finish()
    }
}

impl StorageFile for MemInode {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let data = self.data.lock();
        data.check_alive()?;
        let eof = || io::Error::new(io::ErrorKind::UnexpectedEof, "read past end of file");
        let start = usize::try_from(offset).map_err(|_| eof())?;
        let end = start.checked_add(buf.len()).ok_or_else(eof)?;
        let src = data.current.get(start..end).ok_or_else(eof)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        // Faults are decided before taking the inode lock; no path holds
        // both locks, so they cannot deadlock.
        let fail = {
            let mut faults = self.faults.lock();
            let Faults {
                writes_left,
                write_count,
                ..
            } = &mut *faults;
            Faults::take(writes_left, write_count)
        };
        let mut data = self.data.lock();
        data.check_alive()?;
        if fail {
            return Err(io::Error::other("injected write failure"));
        }
        let end = checked_end(offset, buf.len())?;
        let start = end - buf.len();
        apply_write(&mut data.current, start, buf);
        data.pending.push(Pending::Write {
            offset,
            data: buf.to_vec(),
        });
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let fail = {
            let mut faults = self.faults.lock();
            let Faults {
                syncs_left,
                sync_count,
                ..
            } = &mut *faults;
            Faults::take(syncs_left, sync_count)
        };
        let mut data = self.data.lock();
        data.check_alive()?;
        let pending = std::mem::take(&mut data.pending);
        if fail {
            // Linux marks the pages clean after a failed writeback: readers
            // still see the data, but it will never reach the disk.
            return Err(io::Error::other("injected fsync failure"));
        }
        for change in &pending {
            data.apply_durable(change);
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let data = self.data.lock();
        data.check_alive()?;
        Ok(data.current.len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut data = self.data.lock();
        data.check_alive()?;
        let new_len = checked_end(len, 0)?;
        data.current.resize(new_len, 0);
        data.pending.push(Pending::SetLen(len));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(file: &dyn StorageFile) -> Vec<u8> {
        let len = usize::try_from(file.len().unwrap()).unwrap();
        let mut buf = vec![0; len];
        file.read_at(&mut buf, 0).unwrap();
        buf
    }

    const ALL_MODES: [CrashMode; 3] = [CrashMode::DropAll, CrashMode::Reorder, CrashMode::Torn];

    #[test]
    fn std_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        assert_eq!(
            StdStorage::open_dir(&path, false).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let storage = StdStorage::open_dir(&path, true).unwrap();
        assert_eq!(storage.path(), path.as_path());
        assert_eq!(
            storage.open("a", false).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let file = storage.open("a", true).unwrap();
        file.write_at(b"hello", 0).unwrap();
        file.write_at(b"world", 10).unwrap();
        file.sync_data().unwrap();
        assert_eq!(file.len().unwrap(), 15);
        assert_eq!(read_all(&*file), b"hello\0\0\0\0\0world");
        storage.sync_dir().unwrap();

        storage.rename("a", "b").unwrap();
        assert!(!storage.exists("a").unwrap());
        assert!(storage.exists("b").unwrap());
        storage.open("c", true).unwrap();
        assert_eq!(storage.list().unwrap(), vec!["b", "c"]);
        storage.remove("c").unwrap();
        assert_eq!(storage.list().unwrap(), vec!["b"]);

        let reopened = storage.open("b", false).unwrap();
        let mut buf = [0; 5];
        reopened.read_at(&mut buf, 10).unwrap();
        assert_eq!(&buf, b"world");
        reopened.set_len(5).unwrap();
        assert_eq!(read_all(&*reopened), b"hello");
    }

    #[test]
    fn std_read_past_eof_is_error() {
        let dir = tempfile::tempdir().unwrap();
        let storage = StdStorage::open_dir(dir.path(), false).unwrap();
        let file = storage.open("f", true).unwrap();
        file.write_at(&[7; 100], 0).unwrap();
        let mut buf = [0; 10];
        let err = file.read_at(&mut buf, 95).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn bad_names_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let std_storage = StdStorage::open_dir(dir.path(), false).unwrap();
        let mem = MemStorage::new(1);
        let stores: [&dyn Storage; 2] = [&std_storage, &*mem];
        for storage in stores {
            for name in ["", "a/b", "..", "../x", "/abs"] {
                let err = storage.open(name, true).unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{name:?}");
                assert!(storage.exists(name).is_err());
                assert!(storage.remove(name).is_err());
            }
        }
    }

    #[test]
    fn mem_read_past_eof_is_error() {
        let mem = MemStorage::new(1);
        let file = mem.open("f", true).unwrap();
        file.write_at(&[7; 100], 0).unwrap();
        let mut buf = [0; 10];
        let err = file.read_at(&mut buf, 95).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        let err = file.read_at(&mut buf, u64::MAX).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert!(file.write_at(&buf, u64::MAX - 2).is_err());
    }

    #[test]
    fn mem_synced_data_survives_crash_in_every_mode() {
        for (seed, mode) in ALL_MODES.into_iter().enumerate() {
            let mem = MemStorage::new(seed as u64);
            let s: Arc<dyn Storage> = mem.clone();
            let file = s.open("f", true).unwrap();
            file.write_at(&[1; 2000], 0).unwrap();
            file.set_len(1500).unwrap();
            file.write_at(&[2; 10], 1500).unwrap();
            file.sync_data().unwrap();
            s.sync_dir().unwrap();
            mem.crash(mode);

            let mut expected = vec![1; 1500];
            expected.extend_from_slice(&[2; 10]);
            // The old handle still works, and a fresh one sees the same bytes.
            assert_eq!(read_all(&*file), expected, "{mode:?}");
            assert_eq!(read_all(&*s.open("f", false).unwrap()), expected);
        }
    }

    #[test]
    fn mem_unsynced_data_lost_with_drop_all() {
        let mem = MemStorage::new(7);
        let s: Arc<dyn Storage> = mem.clone();
        let file = s.open("f", true).unwrap();
        file.write_at(b"durable", 0).unwrap();
        file.sync_data().unwrap();
        s.sync_dir().unwrap();
        file.write_at(b"DURABLE and more", 0).unwrap();
        file.set_len(3).unwrap();
        // Reads see unsynced writes before the crash...
        assert_eq!(read_all(&*file), b"DUR");
        mem.crash(CrashMode::DropAll);
        // ...and not after.
        assert_eq!(read_all(&*file), b"durable");
    }

    #[test]
    fn mem_reorder_keeps_some_subset_of_whole_writes() {
        let mut saw_partial = false;
        for seed in 0..20 {
            let mem = MemStorage::new(seed);
            let s: Arc<dyn Storage> = mem.clone();
            let file = s.open("f", true).unwrap();
            file.write_at(&[0; 4096], 0).unwrap();
            file.sync_data().unwrap();
            s.sync_dir().unwrap();
            for i in 0..4u8 {
                file.write_at(&[i + 1; 1024], u64::from(i) * 1024).unwrap();
            }
            mem.crash(CrashMode::Reorder);
            let bytes = read_all(&*file);
            assert_eq!(bytes.len(), 4096);
            let mut kept = 0;
            for (i, chunk) in bytes.chunks(1024).enumerate() {
                let new = u8::try_from(i).unwrap() + 1;
                assert!(chunk.iter().all(|&b| b == 0) || chunk.iter().all(|&b| b == new));
                kept += usize::from(chunk[0] == new);
            }
            saw_partial |= kept > 0 && kept < 4;
        }
        assert!(saw_partial, "20 seeds should produce a partial subset");
    }

    #[test]
    fn mem_torn_leaves_whole_sectors_of_old_or_new() {
        let mut kinds_seen = [false; 2];
        for seed in 0..10 {
            let mem = MemStorage::new(seed);
            let s: Arc<dyn Storage> = mem.clone();
            let file = s.open("f", true).unwrap();
            let old: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
            file.write_at(&old, 0).unwrap();
            file.sync_data().unwrap();
            s.sync_dir().unwrap();
            // Unaligned start, spans many sectors; the new bytes differ from
            // the old everywhere.
            let new: Vec<u8> = old[300..7000].iter().map(|b| b ^ 0xff).collect();
            file.write_at(&new, 300).unwrap();
            mem.crash(CrashMode::Torn);

            let bytes = read_all(&*file);
            assert_eq!(bytes.len(), old.len());
            let mut expected_new = old.clone();
            expected_new[300..7000].copy_from_slice(&new);
            for (sector, got) in bytes.chunks(512).enumerate() {
                let range = sector * 512..(sector + 1) * 512;
                let is_old = got == &old[range.clone()];
                let is_new = got == &expected_new[range];
                assert!(is_old || is_new, "seed {seed} sector {sector} is mixed");
                if is_old != is_new {
                    kinds_seen[usize::from(is_new)] = true;
                }
            }
        }
        assert_eq!(kinds_seen, [true, true]);
    }

    #[test]
    fn mem_namespace_reverts_at_crash() {
        let mem = MemStorage::new(3);
        let s: Arc<dyn Storage> = mem.clone();
        let kept = s.open("tmp", true).unwrap();
        kept.write_at(b"new contents", 0).unwrap();
        kept.sync_data().unwrap();
        s.rename("tmp", "main").unwrap();
        s.sync_dir().unwrap();

        let lost = s.open("lost", true).unwrap();
        lost.write_at(b"gone", 0).unwrap();
        lost.sync_data().unwrap();
        // Removed but not dir-synced: comes back.
        s.remove("main").unwrap();
        assert_eq!(s.list().unwrap(), vec!["lost"]);

        mem.crash(CrashMode::DropAll);
        assert_eq!(s.list().unwrap(), vec!["main"]);
        assert!(!s.exists("lost").unwrap());
        assert!(!s.exists("tmp").unwrap());
        assert_eq!(
            s.open("lost", false).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(read_all(&*s.open("main", false).unwrap()), b"new contents");
        // A handle to a file that did not survive errors instead of panicking.
        assert!(lost.len().is_err());
        assert!(lost.write_at(b"x", 0).is_err());
        assert!(lost.sync_data().is_err());
    }

    #[test]
    fn mem_dir_synced_but_data_unsynced_file_survives_empty() {
        let mem = MemStorage::new(4);
        let s: Arc<dyn Storage> = mem.clone();
        let file = s.open("f", true).unwrap();
        s.sync_dir().unwrap();
        file.write_at(b"never synced", 0).unwrap();
        mem.crash(CrashMode::DropAll);
        assert!(file.is_empty().unwrap());
    }

    #[test]
    fn mem_failed_sync_loses_write_at_next_crash() {
        let mem = MemStorage::new(5);
        let s: Arc<dyn Storage> = mem.clone();
        let file = s.open("f", true).unwrap();
        s.sync_dir().unwrap();
        file.write_at(b"first", 0).unwrap();
        mem.fail_sync_after(Some(1));
        file.sync_data().unwrap();

        file.write_at(b"second", 5).unwrap();
        let err = file.sync_data().unwrap_err();
        assert!(err.to_string().contains("injected fsync failure"));
        // Still visible through the page cache...
        assert_eq!(read_all(&*file), b"firstsecond");
        // ...and a later successful sync does not make it durable.
        mem.fail_sync_after(None);
        file.sync_data().unwrap();
        mem.crash(CrashMode::Reorder);
        assert_eq!(read_all(&*file), b"first");
    }

    #[test]
    fn mem_failed_write_changes_nothing() {
        let mem = MemStorage::new(6);
        let s: Arc<dyn Storage> = mem.clone();
        let file = s.open("f", true).unwrap();
        mem.fail_writes_after(Some(2));
        file.write_at(b"a", 0).unwrap();
        file.write_at(b"b", 1).unwrap();
        assert!(file.write_at(b"c", 2).is_err());
        assert!(file.write_at(b"d", 3).is_err());
        assert_eq!(read_all(&*file), b"ab");
        mem.fail_writes_after(None);
        file.write_at(b"e", 2).unwrap();
        assert_eq!(read_all(&*file), b"abe");
    }

    #[test]
    fn reboot_keeps_what_survived_and_cuts_old_handles_off() {
        let mem = MemStorage::new(11);
        let synced = mem.open("a", true).expect("open");
        synced.write_at(b"durable", 0).expect("write");
        synced.sync_data().expect("sync");
        mem.sync_dir().expect("sync dir");
        synced.write_at(b"lost", 100).expect("write");
        let rebooted = mem.reboot(CrashMode::DropAll, 12).expect("reboot");
        let file = rebooted.open("a", false).expect("open");
        assert_eq!(file.len().expect("len"), 7);
        // The old handle writes into the old machine only.
        synced
            .write_at(b"ghost", 0)
            .expect("old handle still works on the old storage");
        let mut buf = [0u8; 7];
        file.read_at(&mut buf, 0).expect("read");
        assert_eq!(&buf, b"durable");
    }

    #[test]
    fn mem_counters() {
        let mem = MemStorage::new(8);
        let s: Arc<dyn Storage> = mem.clone();
        let a = s.open("a", true).unwrap();
        let b = s.open("b", true).unwrap();
        assert_eq!((mem.write_count(), mem.sync_count()), (0, 0));
        a.write_at(b"1", 0).unwrap();
        b.write_at(b"2", 0).unwrap();
        b.write_at(b"3", 1).unwrap();
        a.sync_data().unwrap();
        b.sync_data().unwrap();
        assert_eq!((mem.write_count(), mem.sync_count()), (3, 2));
        mem.fail_sync_after(Some(0));
        assert!(a.sync_data().is_err());
        assert_eq!(mem.sync_count(), 3);
    }

    #[test]
    fn mem_crash_is_deterministic_per_seed() {
        let run = |seed| {
            let mem = MemStorage::new(seed);
            let s: Arc<dyn Storage> = mem.clone();
            let file = s.open("f", true).unwrap();
            s.sync_dir().unwrap();
            for i in 0..16u8 {
                file.write_at(&[i; 700], u64::from(i) * 700).unwrap();
            }
            mem.crash(CrashMode::Torn);
            read_all(&*file)
        };
        assert_eq!(run(42), run(42));
    }

    #[test]
    fn mem_concurrent_handles_share_one_file() {
        let mem = MemStorage::new(9);
        let s: Arc<dyn Storage> = mem.clone();
        let threads: Vec<_> = (0..4u8)
            .map(|i| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let file = s.open("shared", true).unwrap();
                    for j in 0..100u64 {
                        file.write_at(&[i; 8], (u64::from(i) * 100 + j) * 8)
                            .unwrap();
                    }
                    file.sync_data().unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        s.sync_dir().unwrap();
        mem.crash(CrashMode::DropAll);
        let bytes = read_all(&*s.open("shared", false).unwrap());
        for (k, chunk) in bytes.chunks(800).enumerate() {
            assert!(chunk.iter().all(|&b| usize::from(b) == k));
        }
    }
}
