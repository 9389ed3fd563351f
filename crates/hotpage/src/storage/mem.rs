//! [`MemStorage`]: an in-memory directory that simulates power loss and I/O faults.
//!
//! Model (what a crash test can rely on):
//! - Each file keeps its *durable* bytes and the list of writes and `set_len` calls not yet
//!   synced. Reads see every write, as through the OS page cache. `sync_data` makes that
//!   file's pending changes durable.
//! - Namespace changes (create, rename, remove) take effect at once for readers and become
//!   durable at [`Storage::sync_dir`]. A file created but never dir-synced vanishes at a
//!   crash, as on ext4 without a directory fsync; a dir-synced file whose data was never
//!   synced survives empty.
//! - **The machine**: every operation runs under a shared "power" lock. A power cut
//!   ([`MemStorage::crash`], [`MemStorage::reboot`]) takes it exclusively, so it happens
//!   between two operations, never inside one: the state it keeps is one atomic snapshot,
//!   and the same seed and the same sequence of operations give the same result.
//! - After [`MemStorage::reboot`] (or once [`MemStorage::halt_after_ops`] fires) the old
//!   machine is *halted*: every operation on it fails, like I/O to a machine without power,
//!   so a "killed" database's threads can neither touch the new machine nor change what
//!   the snapshot saw.
//! - Like Linux, a failed `sync_data` drops the pending writes it covered from the durable
//!   future: reads still see them, but the next crash loses them, and a later successful
//!   sync does not bring them back.
//!
//! File handles refer to inode-like shared objects. After an in-place [`MemStorage::crash`],
//! handles to files that survived keep working (on the durable contents); handles to files
//! that did not survive return an error.

use super::{Storage, StorageFile, check_name};
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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

/// An operation [`MemStorage::fail_after`] can make fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultOp {
    /// `write_at` fails with EIO and changes nothing.
    Write,
    /// `sync_data` fails with EIO and drops the writes it covered from the durable future.
    Sync,
    /// `read_at` fails with EIO.
    Read,
    /// `rename` fails and changes nothing.
    Rename,
    /// `sync_dir` fails: the namespace changes since the last successful one stay
    /// undurable (a later successful `sync_dir` makes them durable).
    DirSync,
}

const FAULT_OPS: usize = 5;

impl FaultOp {
    fn index(self) -> usize {
        match self {
            FaultOp::Write => 0,
            FaultOp::Sync => 1,
            FaultOp::Read => 2,
            FaultOp::Rename => 3,
            FaultOp::DirSync => 4,
        }
    }
}

/// An in-memory [`Storage`] that simulates power loss and I/O faults (see the module docs).
pub struct MemStorage {
    machine: Arc<Machine>,
    ns: Mutex<Namespace>,
}

/// What the storage and every inode of it share: the power, the faults and the counters.
#[derive(Debug, Default)]
struct Machine {
    // Read-locked by every operation, write-locked by a power cut.
    power: RwLock<()>,
    halted: AtomicBool,
    faults: Mutex<Faults>,
    // Bytes of every live file's current contents, for the capacity (ENOSPC) fault.
    used_bytes: AtomicU64,
}

/// Names to inodes, live and durable, plus the crash randomness.
struct Namespace {
    /// What readers see now.
    live: BTreeMap<String, Arc<MemInode>>,
    /// What survives a crash: the namespace as of the last `sync_dir`.
    durable: BTreeMap<String, Arc<MemInode>>,
    /// Every inode ever created and still alive somewhere, so that a crash
    /// can invalidate open handles to unlinked or never-durable files.
    all: Vec<std::sync::Weak<MemInode>>,
    /// Prune `all` when it grows past this many entries.
    prune_at_len: usize,
    rng: rand::rngs::SmallRng,
}

/// Fault-injection state and counters.
#[derive(Debug, Default)]
struct Faults {
    /// Per [`FaultOp`]: successful calls left before they start failing.
    left: [Option<u64>; FAULT_OPS],
    /// Per [`FaultOp`]: calls made, failed ones included.
    count: [u64; FAULT_OPS],
    /// Operations that change the machine (create, write, set_len, sync, rename, remove,
    /// dir sync), failed ones included.
    ops: u64,
    /// Halt the machine once `ops` reaches this.
    halt_at_ops: Option<u64>,
    /// ENOSPC when the live files would hold more bytes than this.
    capacity_bytes: Option<u64>,
}

impl Faults {
    /// Counts one call of `op` and says whether it should fail.
    fn take(&mut self, op: FaultOp) -> bool {
        let i = op.index();
        self.count[i] += 1;
        match &mut self.left[i] {
            None => false,
            Some(0) => true,
            Some(n) => {
                *n -= 1;
                false
            }
        }
    }
}

fn power_lost() -> io::Error {
    io::Error::other("the machine lost power (simulated): nothing reaches this storage")
}

fn injected(op: FaultOp) -> io::Error {
    let what = match op {
        FaultOp::Write => "write",
        FaultOp::Sync => "fsync",
        FaultOp::Read => "read",
        FaultOp::Rename => "rename",
        FaultOp::DirSync => "directory fsync",
    };
    io::Error::other(format!("injected {what} failure"))
}

impl Machine {
    /// Starts an operation that changes the machine: counts it, and fails if the machine is
    /// halted or halts with it. The caller holds the power lock (read).
    fn begin_change(&self) -> io::Result<()> {
        if self.halted.load(Ordering::Acquire) {
            return Err(power_lost());
        }
        let mut faults = self.faults.lock();
        faults.ops += 1;
        if faults.halt_at_ops.is_some_and(|at| faults.ops > at) {
            self.halted.store(true, Ordering::Release);
            return Err(power_lost());
        }
        Ok(())
    }

    /// Starts a read-only operation: fails if the machine is halted.
    fn begin_read(&self) -> io::Result<()> {
        if self.halted.load(Ordering::Acquire) {
            return Err(power_lost());
        }
        Ok(())
    }

    fn fault(&self, op: FaultOp) -> io::Result<()> {
        if self.faults.lock().take(op) {
            return Err(injected(op));
        }
        Ok(())
    }

    /// Reserves `growth` more bytes of capacity, or ENOSPC.
    fn grow(&self, growth: u64) -> io::Result<()> {
        if growth == 0 {
            return Ok(());
        }
        let capacity = self.faults.lock().capacity_bytes;
        let used = self.used_bytes.fetch_add(growth, Ordering::AcqRel) + growth;
        if capacity.is_some_and(|capacity| used > capacity) {
            self.used_bytes.fetch_sub(growth, Ordering::AcqRel);
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "No space left on device (simulated)",
            ));
        }
        Ok(())
    }

    fn shrink(&self, bytes: u64) {
        let _ = self
            .used_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                Some(used.saturating_sub(bytes))
            });
    }
}

impl MemStorage {
    /// An empty in-memory directory; `seed` drives every crash decision.
    pub fn new(seed: u64) -> Arc<MemStorage> {
        use rand::SeedableRng;
        Arc::new(MemStorage {
            machine: Arc::new(Machine::default()),
            ns: Mutex::new(Namespace {
                live: BTreeMap::new(),
                durable: BTreeMap::new(),
                all: Vec::new(),
                prune_at_len: 64,
                rng: rand::rngs::SmallRng::seed_from_u64(seed),
            }),
        })
    }

    /// Power loss, then a reboot: a power cut in `mode` (at one atomic moment, between two
    /// operations), then a new storage holding exactly what survived, all of it durable.
    /// This storage is halted for good: every later operation on it fails, so a "killed"
    /// process that still holds handles (and threads) can neither reach the rebooted
    /// machine's files nor change what the cut kept. `seed` drives the new storage's
    /// crashes. Works on a halted storage too (after [`MemStorage::halt_after_ops`]).
    pub fn reboot(&self, mode: CrashMode, seed: u64) -> io::Result<Arc<MemStorage>> {
        let _cut = self.machine.power.write();
        self.machine.halted.store(true, Ordering::Release);
        let mut ns = self.ns.lock();
        crash_namespace(&mut ns, mode);
        let fresh = MemStorage::new(seed);
        {
            let mut fresh_ns = fresh.ns.lock();
            for (name, inode) in &ns.durable {
                let bytes = inode.data.lock().durable.clone();
                fresh.machine.grow(bytes.len() as u64)?;
                let copy = Arc::new(MemInode {
                    machine: Arc::clone(&fresh.machine),
                    data: Mutex::new(InodeData {
                        current: bytes.clone(),
                        durable: bytes,
                        ..InodeData::default()
                    }),
                });
                fresh_ns.all.push(Arc::downgrade(&copy));
                fresh_ns.live.insert(name.clone(), Arc::clone(&copy));
                fresh_ns.durable.insert(name.clone(), copy);
            }
        }
        Ok(fresh)
    }

    /// Simulates power loss in place: the namespace reverts to the last dir-synced one and
    /// each file to its durable bytes plus whatever of its pending writes `mode` lets
    /// survive. Afterwards nothing is pending, and the storage keeps working (handles to
    /// files that survived read their durable contents).
    ///
    /// Fault-injection settings and counters are left as they are; clear them with
    /// [`MemStorage::fail_after`] and `None`.
    pub fn crash(&self, mode: CrashMode) {
        let _cut = self.machine.power.write();
        let mut ns = self.ns.lock();
        crash_namespace(&mut ns, mode);
        let used: u64 = ns
            .live
            .values()
            .map(|inode| inode.data.lock().current.len() as u64)
            .sum();
        self.machine.used_bytes.store(used, Ordering::Release);
    }

    /// After `n` more successful calls of `op` (over all files), every call of `op` fails
    /// (see [`FaultOp`] for what a failure does). `None` clears the fault.
    pub fn fail_after(&self, op: FaultOp, n: Option<u64>) {
        self.machine.faults.lock().left[op.index()] = n;
    }

    /// How many times `op` was called (over all files), failed calls included.
    pub fn op_count(&self, op: FaultOp) -> u64 {
        self.machine.faults.lock().count[op.index()]
    }

    /// After `n` more successful `sync_data` calls, every one fails (see [`FaultOp::Sync`]).
    pub fn fail_sync_after(&self, n: Option<u64>) {
        self.fail_after(FaultOp::Sync, n);
    }

    /// After `n` more successful `write_at` calls, every one fails (see [`FaultOp::Write`]).
    pub fn fail_writes_after(&self, n: Option<u64>) {
        self.fail_after(FaultOp::Write, n);
    }

    /// How many times `sync_data` was called (over all files), failed calls included.
    pub fn sync_count(&self) -> u64 {
        self.op_count(FaultOp::Sync)
    }

    /// How many times `write_at` was called (over all files), failed calls included.
    pub fn write_count(&self) -> u64 {
        self.op_count(FaultOp::Write)
    }

    /// Operations that change the machine so far (create, write, set_len, sync, rename,
    /// remove, dir sync), failed ones included.
    pub fn change_ops(&self) -> u64 {
        self.machine.faults.lock().ops
    }

    /// Halts the machine after `n` more operations that change it: the next one and every
    /// later one fails, reads too, as if the power went out there. A crash test then
    /// calls [`MemStorage::reboot`]. `None` clears a pending halt (not a halt that
    /// happened).
    pub fn halt_after_ops(&self, n: Option<u64>) {
        let mut faults = self.machine.faults.lock();
        faults.halt_at_ops = n.map(|n| faults.ops.saturating_add(n));
    }

    /// True once the machine is halted (rebooted away, or by `halt_after_ops`).
    pub fn is_halted(&self) -> bool {
        self.machine.halted.load(Ordering::Acquire)
    }

    /// Writes that would make the live files hold more than `bytes` fail with ENOSPC
    /// (`ErrorKind::StorageFull`). `None` removes the limit.
    pub fn set_capacity(&self, bytes: Option<u64>) {
        self.machine.faults.lock().capacity_bytes = bytes;
    }

    /// A file's bytes as readers see them (tests use it to damage or compare files).
    pub fn read_file(&self, name: &str) -> io::Result<Vec<u8>> {
        let file = self.open(name, false)?;
        let mut bytes = vec![0u8; usize::try_from(file.len()?).unwrap_or(0)];
        file.read_at(&mut bytes, 0)?;
        Ok(bytes)
    }

    /// Replaces bytes of a file *durably*, bypassing the fault counters and the halt, as
    /// damage on the disk would (a flipped bit, a sector gone bad). For tests.
    pub fn damage(&self, name: &str, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let _power = self.machine.power.read();
        let inode = self
            .ns
            .lock()
            .live
            .get(name)
            .cloned()
            .ok_or_else(|| not_found(name))?;
        let mut data = inode.data.lock();
        let start = usize::try_from(offset).map_err(|_| not_found(name))?;
        let end = start.saturating_add(bytes.len());
        if end > data.current.len() || end > data.durable.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "damage past the end of the file",
            ));
        }
        data.current[start..end].copy_from_slice(bytes);
        data.durable[start..end].copy_from_slice(bytes);
        Ok(())
    }
}

/// The power cut itself (the caller holds the power lock exclusively).
fn crash_namespace(ns: &mut Namespace, mode: CrashMode) {
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

impl std::fmt::Debug for MemStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names only: the contents could be megabytes.
        let ns = self.ns.lock();
        f.debug_struct("MemStorage")
            .field("live", &ns.live.keys().collect::<Vec<_>>())
            .field("durable", &ns.durable.keys().collect::<Vec<_>>())
            .field("halted", &self.is_halted())
            .finish_non_exhaustive()
    }
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no file named {name:?}"))
}

impl Storage for MemStorage {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        check_name(name)?;
        let _power = self.machine.power.read();
        self.machine.begin_read()?;
        let mut ns = self.ns.lock();
        if let Some(inode) = ns.live.get(name) {
            return Ok(inode.clone());
        }
        if !create {
            return Err(not_found(name));
        }
        self.machine.begin_change()?;
        let inode = Arc::new(MemInode {
            machine: Arc::clone(&self.machine),
            data: Mutex::new(InodeData::default()),
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
        let _power = self.machine.power.read();
        self.machine.begin_read()?;
        Ok(self.ns.lock().live.contains_key(name))
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        check_name(name)?;
        let _power = self.machine.power.read();
        self.machine.begin_change()?;
        // Open handles keep the inode, as with an unlinked open file.
        match self.ns.lock().live.remove(name) {
            Some(inode) => {
                self.machine.shrink(inode.data.lock().current.len() as u64);
                Ok(())
            }
            None => Err(not_found(name)),
        }
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        check_name(from)?;
        check_name(to)?;
        let _power = self.machine.power.read();
        self.machine.begin_change()?;
        self.machine.fault(FaultOp::Rename)?;
        let mut ns = self.ns.lock();
        let inode = ns.live.remove(from).ok_or_else(|| not_found(from))?;
        if let Some(replaced) = ns.live.insert(to.to_owned(), inode) {
            self.machine
                .shrink(replaced.data.lock().current.len() as u64);
        }
        Ok(())
    }

    fn sync_dir(&self) -> io::Result<()> {
        let _power = self.machine.power.read();
        self.machine.begin_change()?;
        self.machine.fault(FaultOp::DirSync)?;
        let mut ns = self.ns.lock();
        ns.durable = ns.live.clone();
        Ok(())
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let _power = self.machine.power.read();
        self.machine.begin_read()?;
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
    debug_assert_eq!(at, offset + data.len() as u64);
    pieces
}

/// One in-memory file, shared by every handle to it.
struct MemInode {
    machine: Arc<Machine>,
    data: Mutex<InodeData>,
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
        let _power = self.machine.power.read();
        self.machine.begin_read()?;
        self.machine.fault(FaultOp::Read)?;
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
        let _power = self.machine.power.read();
        self.machine.begin_change()?;
        // Faults are decided before taking the inode lock; no path holds
        // both locks, so they cannot deadlock.
        self.machine.fault(FaultOp::Write)?;
        let mut data = self.data.lock();
        data.check_alive()?;
        let end = checked_end(offset, buf.len())?;
        self.machine
            .grow((end as u64).saturating_sub(data.current.len() as u64))?;
        let start = end - buf.len();
        apply_write(&mut data.current, start, buf);
        data.pending.push(Pending::Write {
            offset,
            data: buf.to_vec(),
        });
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let _power = self.machine.power.read();
        self.machine.begin_change()?;
        let fail = self.machine.fault(FaultOp::Sync).is_err();
        let mut data = self.data.lock();
        data.check_alive()?;
        let pending = std::mem::take(&mut data.pending);
        if fail {
            // Linux marks the pages clean after a failed writeback: readers
            // still see the data, but it will never reach the disk.
            return Err(injected(FaultOp::Sync));
        }
        for change in &pending {
            data.apply_durable(change);
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let _power = self.machine.power.read();
        self.machine.begin_read()?;
        let data = self.data.lock();
        data.check_alive()?;
        Ok(data.current.len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let _power = self.machine.power.read();
        self.machine.begin_change()?;
        let mut data = self.data.lock();
        data.check_alive()?;
        let new_len = checked_end(len, 0)?;
        let old_len = data.current.len();
        if new_len > old_len {
            self.machine.grow((new_len - old_len) as u64)?;
        } else {
            self.machine.shrink((old_len - new_len) as u64);
        }
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
        // The old machine is off: its handles fail, and cannot reach the new machine.
        assert!(synced.write_at(b"ghost", 0).is_err());
        assert!(mem.open("a", false).is_err());
        assert!(mem.is_halted());
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

    /// A workload of writes, syncs and a rename; returns every file's bytes after a reboot.
    fn rebooted_files(seed: u64, halt_after: Option<u64>) -> Vec<(String, Vec<u8>)> {
        let mem = MemStorage::new(seed);
        mem.halt_after_ops(halt_after);
        let _ = (|| -> io::Result<()> {
            let a = mem.open("a", true)?;
            mem.sync_dir()?;
            for i in 0..40u8 {
                a.write_at(&[i; 700], u64::from(i) * 300)?;
                if i % 7 == 0 {
                    a.sync_data()?;
                }
            }
            let b = mem.open("b.tmp", true)?;
            b.write_at(b"catalog", 0)?;
            b.sync_data()?;
            mem.rename("b.tmp", "b")?;
            mem.sync_dir()?;
            a.write_at(&[99; 2000], 100)?;
            Ok(())
        })();
        let rebooted = mem.reboot(CrashMode::Torn, 1).expect("reboot");
        rebooted
            .list()
            .expect("list")
            .into_iter()
            .map(|name| {
                let bytes = rebooted.read_file(&name).expect("read");
                (name, bytes)
            })
            .collect()
    }

    #[test]
    fn the_same_seed_and_operations_reboot_to_the_same_bytes() {
        for halt_after in [None, Some(3), Some(17), Some(30)] {
            assert_eq!(
                rebooted_files(5, halt_after),
                rebooted_files(5, halt_after),
                "halt after {halt_after:?}"
            );
        }
        assert_ne!(rebooted_files(5, None), rebooted_files(6, None));
    }

    #[test]
    fn a_halt_after_n_operations_keeps_exactly_the_first_n() {
        let mem = MemStorage::new(3);
        let f = mem.open("f", true).expect("create"); // op 1
        mem.sync_dir().expect("dir"); // op 2
        f.write_at(b"one", 0).expect("write"); // op 3
        mem.halt_after_ops(Some(1));
        f.sync_data().expect("the one operation left"); // op 4
        assert!(f.write_at(b"two", 3).is_err(), "the machine is off");
        assert!(f.len().is_err(), "reads fail too");
        assert!(mem.is_halted());
        let rebooted = mem.reboot(CrashMode::DropAll, 4).expect("reboot");
        assert_eq!(rebooted.read_file("f").expect("read"), b"one");
        assert!(!rebooted.is_halted());
    }

    #[test]
    fn a_power_cut_waits_for_an_operation_in_flight() {
        // Writers race the cut: each write is wholly before it (and then kept, synced) or
        // after it (and refused); none is half applied.
        let mem = MemStorage::new(8);
        let file = mem.open("f", true).expect("create");
        mem.sync_dir().expect("dir");
        let writer = {
            let file = Arc::clone(&file);
            std::thread::spawn(move || {
                let mut written = 0u64;
                while file.write_at(&[7; 4096], written * 4096).is_ok() {
                    if file.sync_data().is_err() {
                        break;
                    }
                    written += 1;
                }
                written
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        let rebooted = mem.reboot(CrashMode::DropAll, 9).expect("reboot");
        let written = writer.join().expect("writer");
        let bytes = rebooted.read_file("f").expect("read");
        assert_eq!(bytes.len() % 4096, 0, "no write was cut in half");
        assert!(bytes.len() as u64 <= (written + 1) * 4096);
        assert!(bytes.iter().all(|&b| b == 7));
    }

    #[test]
    fn reads_renames_and_directory_syncs_can_be_made_to_fail() {
        let mem = MemStorage::new(2);
        let f = mem.open("f", true).expect("create");
        f.write_at(b"data", 0).expect("write");
        mem.fail_after(FaultOp::Read, Some(1));
        let mut buf = [0u8; 4];
        f.read_at(&mut buf, 0).expect("first read");
        assert!(f.read_at(&mut buf, 0).is_err());
        mem.fail_after(FaultOp::Read, None);
        mem.fail_after(FaultOp::Rename, Some(0));
        assert!(mem.rename("f", "g").is_err());
        assert!(
            mem.exists("f").expect("exists"),
            "a failed rename changes nothing"
        );
        mem.fail_after(FaultOp::Rename, None);
        mem.fail_after(FaultOp::DirSync, Some(0));
        assert!(mem.sync_dir().is_err());
        mem.crash(CrashMode::DropAll);
        assert!(
            !mem.exists("f").expect("exists"),
            "the failed dir sync kept nothing"
        );
        assert_eq!(mem.op_count(FaultOp::DirSync), 1);
        assert_eq!(mem.op_count(FaultOp::Read), 2);
    }

    #[test]
    fn a_full_disk_is_enospc_and_freeing_space_heals_it() {
        let mem = MemStorage::new(4);
        mem.set_capacity(Some(10_000));
        let f = mem.open("f", true).expect("create");
        f.write_at(&[1; 8000], 0).expect("fits");
        f.write_at(&[2; 100], 0)
            .expect("an overwrite needs no space");
        let full = f.write_at(&[3; 4000], 8000).expect_err("over capacity");
        assert_eq!(full.kind(), io::ErrorKind::StorageFull);
        assert_eq!(
            f.len().expect("len"),
            8000,
            "the failed write changed nothing"
        );
        f.set_len(1000).expect("shrink");
        f.write_at(&[3; 4000], 1000).expect("room again");
        mem.remove("f").expect("remove");
        mem.open("g", true)
            .and_then(|g| g.write_at(&[4; 9000], 0))
            .expect("a removed file's bytes are free");
    }

    #[test]
    fn damage_changes_the_durable_bytes() {
        let mem = MemStorage::new(5);
        let f = mem.open("f", true).expect("create");
        mem.sync_dir().expect("dir");
        f.write_at(b"abcdef", 0).expect("write");
        f.sync_data().expect("sync");
        mem.damage("f", 2, b"X").expect("damage");
        mem.crash(CrashMode::DropAll);
        assert_eq!(mem.read_file("f").expect("read"), b"abXdef");
        assert!(mem.damage("f", 6, b"Y").is_err(), "past the end");
    }
}
