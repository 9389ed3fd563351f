//! The file layer: the only code in the engine that touches files.
//!
//! Everything above goes through [`Storage`] (a flat directory of named files)
//! and [`StorageFile`] (positional reads and writes plus `fdatasync`). The
//! implementations:
//! - [`StdStorage`] over a real directory, read-write or read-only;
//! - [`MemStorage`] (`mem.rs`), an in-memory directory that simulates power loss, a
//!   crash after any chosen operation, and I/O faults (EIO, ENOSPC) for crash tests;
//! - [`OverlayStorage`] (`overlay.rs`), copy-on-write over another storage that it never
//!   writes: a read-only open runs recovery in its memory;
//! - [`VolatileStorage`] (`overlay.rs`), which keeps every write in memory until its
//!   `fdatasync`, so that killing the process loses what was never synced, as a power
//!   loss would (`hotpage crashtest --power-loss`).
//!
//! Errors are plain [`std::io::Result`]; the layers above wrap them into the
//! engine's error type with context.

mod direct;
mod mem;
mod overlay;

pub use direct::BLOCK_BYTES;
pub use mem::{CrashMode, FaultOp, MemStorage};
pub use overlay::{OverlayStorage, VolatileStorage};

use crate::format::LOCK_FILE;
use direct::DirectWriter;
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
    /// Writes all of buf at offset and makes it durable before returning. Provided as
    /// `write_at` then `sync_data`; a real file does it in one direct, synchronous write
    /// when `offset` and the length are multiples of [`BLOCK_BYTES`] (see `direct`). Only
    /// this write is then durable, not earlier ones: the log, its one caller, writes
    /// everything it needs durable through here.
    fn write_durable_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.write_at(buf, offset)?;
        self.sync_data()
    }
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

/// The error every write-side call of a read-only storage returns.
fn read_only_error(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::ReadOnlyFilesystem,
        format!("{what}: the storage was opened read-only"),
    )
}

/// [`Storage`] over a real directory of the local file system.
#[derive(Debug)]
pub struct StdStorage {
    dir: PathBuf,
    // Files are opened without write access, and every call that would change the
    // directory fails: a read-only open works on a read-only mount and cannot change a
    // byte even by mistake.
    read_only: bool,
    // The locked LOCK file, once `lock` has succeeded; closing it releases the lock.
    lock: std::sync::OnceLock<File>,
}

impl StdStorage {
    /// Opens a directory for reading and writing. With `create`, a missing directory is
    /// created (with any missing parents), and each new directory's parent is fsynced, so
    /// that the new entry survives a power loss. Missing and `create == false`: NotFound.
    pub fn open_dir(path: &Path, create: bool) -> io::Result<Self> {
        if create {
            create_dir_durably(path)?;
        }
        Self::open_existing(path, false)
    }

    /// Opens an existing directory read-only: files are opened without write access,
    /// nothing can be created, removed, renamed, written or synced, and the lock taken is
    /// a shared one, which waits for no reader but conflicts with a writer's.
    pub fn open_dir_read_only(path: &Path) -> io::Result<Self> {
        Self::open_existing(path, true)
    }

    fn open_existing(path: &Path, read_only: bool) -> io::Result<Self> {
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
            read_only,
            lock: std::sync::OnceLock::new(),
        })
    }

    /// The directory this storage lives in.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// True when opened with [`StdStorage::open_dir_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn file_path(&self, name: &str) -> io::Result<PathBuf> {
        check_name(name)?;
        Ok(self.dir.join(name))
    }

    fn writable(&self, what: &str) -> io::Result<()> {
        if self.read_only {
            return Err(read_only_error(what));
        }
        Ok(())
    }
}

/// Creates `path` and its missing parents, fsyncing the parent of each directory it
/// created (deepest last), so that a crash cannot lose the new directory's entry.
fn create_dir_durably(path: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(path);
    while let Some(dir) = at {
        if dir.as_os_str().is_empty() || dir.try_exists()? {
            break;
        }
        missing.push(dir);
        at = dir.parent();
    }
    if missing.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(path)?;
    for dir in missing.iter().rev() {
        let parent = match dir.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        File::open(parent)?.sync_all()?;
    }
    Ok(())
}

impl Storage for StdStorage {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        let path = self.file_path(name)?;
        if self.read_only {
            if create && !path.try_exists()? {
                return Err(read_only_error(&format!("creating {name}")));
            }
            let file = OpenOptions::new().read(true).open(&path)?;
            return Ok(Arc::new(StdFile {
                file,
                read_only: true,
                direct: None,
            }));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(&path)?;
        let direct = DirectWriter::new(path, &file);
        Ok(Arc::new(StdFile {
            file,
            read_only: false,
            direct: Some(direct),
        }))
    }

    fn exists(&self, name: &str) -> io::Result<bool> {
        self.file_path(name)?.try_exists()
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        self.writable(&format!("removing {name}"))?;
        std::fs::remove_file(self.file_path(name)?)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.writable(&format!("renaming {from}"))?;
        std::fs::rename(self.file_path(from)?, self.file_path(to)?)
    }

    fn sync_dir(&self) -> io::Result<()> {
        self.writable("syncing the directory")?;
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
        let path = self.file_path(LOCK_FILE)?;
        let file = if self.read_only {
            // A read-only directory without a LOCK file has had no writer that a lock
            // would keep out (a writer makes the file), and none can start on it.
            match OpenOptions::new().read(true).open(&path) {
                Ok(file) => file,
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(error) => return Err(error),
            }
        } else {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)?
        };
        let locked = if self.read_only {
            file.try_lock_shared()
        } else {
            file.try_lock()
        };
        match locked {
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
    read_only: bool,
    // Direct, synchronous writes for `write_durable_at` (None when read-only).
    direct: Option<DirectWriter>,
}

impl StdFile {
    fn writable(&self, what: &str) -> io::Result<()> {
        if self.read_only {
            return Err(read_only_error(what));
        }
        Ok(())
    }
}

impl StorageFile for StdFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.writable("writing")?;
        self.file.write_all_at(buf, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.writable("syncing")?;
        self.file.sync_data()
    }

    fn write_durable_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.writable("writing")?;
        if let Some(written) = self
            .direct
            .as_ref()
            .and_then(|direct| direct.write_durable_at(buf, offset))
        {
            return written;
        }
        self.file.write_all_at(buf, offset)?;
        self.file.sync_data()
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.writable("truncating")?;
        self.file.set_len(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(file: &dyn StorageFile) -> Vec<u8> {
        let len = usize::try_from(file.len().expect("len")).expect("usize");
        let mut buf = vec![0; len];
        file.read_at(&mut buf, 0).expect("read");
        buf
    }

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
    fn creating_a_directory_makes_its_missing_parents_too() {
        let dir = tempfile::tempdir().expect("tempdir");
        let deep = dir.path().join("a").join("b").join("db");
        let storage = StdStorage::open_dir(&deep, true).expect("create");
        assert!(deep.is_dir());
        storage.open("f", true).expect("file");
        // Opening it again with create is a no-op.
        StdStorage::open_dir(&deep, true).expect("reopen");
    }

    #[test]
    fn a_read_only_storage_refuses_every_change_and_reads_everything() {
        let dir = tempfile::tempdir().expect("tempdir");
        let writable = StdStorage::open_dir(dir.path(), false).expect("open");
        writable
            .open("f", true)
            .and_then(|f| f.write_at(b"bytes", 0))
            .expect("write");
        writable.lock().expect("writer's lock");
        let ro = StdStorage::open_dir_read_only(dir.path()).expect("open read-only");
        assert!(ro.is_read_only());
        // The writer holds the lock: a reader is refused, like a second writer.
        assert_eq!(
            ro.lock().expect_err("locked").kind(),
            io::ErrorKind::WouldBlock
        );
        drop(writable);
        ro.lock().expect("shared lock");
        let second = StdStorage::open_dir_read_only(dir.path()).expect("second reader");
        second.lock().expect("readers share the lock");
        let file = ro.open("f", false).expect("open");
        assert_eq!(read_all(&*file), b"bytes");
        let refused = [
            file.write_at(b"x", 0).expect_err("write"),
            file.set_len(0).expect_err("set_len"),
            file.sync_data().expect_err("sync"),
            ro.open("new", true).expect_err("create"),
            ro.remove("f").expect_err("remove"),
            ro.rename("f", "g").expect_err("rename"),
            ro.sync_dir().expect_err("sync dir"),
        ];
        for error in refused {
            assert_eq!(error.kind(), io::ErrorKind::ReadOnlyFilesystem, "{error}");
        }
        assert_eq!(ro.list().expect("list"), vec!["LOCK", "f"]);
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
}
