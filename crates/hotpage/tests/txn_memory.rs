//! The staged-row budget (`Options::txn_memory_bytes_max`) bounds what open transactions
//! really allocate. This test binary counts every allocation (a counting global allocator:
//! integration tests are binaries of their own, so it counts only here), stages a large
//! transaction, and checks that the bytes charged to it cover what its rows took, while
//! staging and through its commit. It fails if someone adds per-row state to a transaction
//! without charging it.

use hotpage::limits::{STAGED_ROW_OVERHEAD_BYTES, SUPPLIED_KEY_OVERHEAD_BYTES};
use hotpage::{Database, Durability, Error, Key, KeyKind, Layout, Options, TableSpec};
use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes allocated and not yet freed, and the most of them since the last `reset_peak`.
static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK_BYTES: AtomicUsize = AtomicUsize::new(0);

struct Counting;

impl Counting {
    fn grew(bytes: usize) {
        let live = LIVE_BYTES.fetch_add(bytes, Ordering::Relaxed) + bytes;
        PEAK_BYTES.fetch_max(live, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed to the system allocator unchanged; the counters only watch.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is the system allocator's.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            Counting::grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout, as the caller guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: AllocLayout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc` is the system allocator's.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
            Counting::grew(new_size);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The tests measure one process-wide counter: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const ROWS: usize = 200_000;
const ROW_BYTES: usize = 40;
/// What a commit may allocate beyond its rows' charge whatever its size (small: the
/// session keeps its record buffer, and the pool keeps the pages it filled, so the
/// measure leaves both out), with room for a background thread's allocation.
const COMMIT_FIXED_BYTES: usize = 4 << 20;

fn open(dir: &std::path::Path, bytes_max: usize) -> Database {
    let options = Options {
        durability: Durability::Sync,
        txn_memory_bytes_max: bytes_max,
        ..Options::default()
    };
    Database::open(dir, options).expect("open")
}

fn keyed_spec() -> TableSpec<'static> {
    TableSpec {
        name: "keyed",
        design: "identity",
        kind: KeyKind::Identity { start: 1, step: 1 },
        layout: Layout::Clustered,
        user_keys: true,
        schema: b"",
        unlogged: false,
    }
}

/// Stages `ROWS` rows (supplied keys or generated ones) in one transaction and commits
/// it; returns (bytes charged, the most bytes live while staging above what was live
/// before, the most while committing above what was live after).
fn measure(supplied: bool) -> (usize, usize, usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = open(dir.path(), usize::MAX / 4);
    let table = match supplied {
        true => db.create_table_spec(&keyed_spec()).expect("table"),
        false => db
            .create_table(
                "generated",
                "identity",
                KeyKind::Identity { start: 1, step: 1 },
            )
            .expect("table"),
    };
    let mut session = db.session();
    let row = [7u8; ROW_BYTES];
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    PEAK_BYTES.store(before, Ordering::Relaxed);
    session.begin().expect("begin");
    for i in 0..ROWS {
        match supplied {
            true => session
                .insert_keyed(&table, &Key::from_i64(i as i64 + 1), &row)
                .expect("insert"),
            false => drop(session.insert(&table, &row).expect("insert")),
        }
    }
    let staging_peak = PEAK_BYTES.load(Ordering::Relaxed) - before;
    session.commit().expect("commit");
    // What stays allocated after the commit (pages the buffer pool filled, the log's
    // buffer) is bounded by the pool and the log, not by the transaction.
    let commit_peak = PEAK_BYTES.load(Ordering::Relaxed) - LIVE_BYTES.load(Ordering::Relaxed);
    let overhead = STAGED_ROW_OVERHEAD_BYTES + usize::from(supplied) * SUPPLIED_KEY_OVERHEAD_BYTES;
    (ROWS * (8 + ROW_BYTES + overhead), staging_peak, commit_peak)
}

#[test]
fn what_a_transaction_is_charged_covers_what_its_rows_allocate() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for supplied in [false, true] {
        let (charged, staging, committing) = measure(supplied);
        eprintln!(
            "supplied keys {supplied}: charged {charged} B ({} per row), staging peak {staging} B ({} per row), commit peak {committing} B",
            charged / ROWS,
            staging / ROWS
        );
        assert!(
            staging <= charged,
            "supplied keys {supplied}: staging allocated {staging} B, more than the {charged} B charged"
        );
        assert!(
            committing <= charged + COMMIT_FIXED_BYTES,
            "supplied keys {supplied}: the commit peaked at {committing} B, more than the {charged} B charged and {COMMIT_FIXED_BYTES} B for the log's record"
        );
        // A charge far above the real cost would refuse loads the memory could hold. (The
        // charge counts the worst case of the row list's doubling; a run sits between.)
        assert!(
            staging * 3 >= charged,
            "supplied keys {supplied}: charged {charged} B for {staging} B allocated"
        );
    }
}

#[test]
fn open_transactions_share_the_budget_and_a_refused_row_leaves_the_transaction_open() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("temp dir");
    let row = [1u8; ROW_BYTES];
    let per_row = 8 + ROW_BYTES + STAGED_ROW_OVERHEAD_BYTES;
    let db = open(dir.path(), 100 * per_row);
    let t = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("table");
    let (mut first, mut second) = (db.session(), db.session());
    first.begin().expect("begin");
    second.begin().expect("begin");
    for _ in 0..60 {
        first.insert(&t, &row).expect("within the budget");
    }
    for _ in 0..40 {
        second.insert(&t, &row).expect("the rest of the budget");
    }
    match second.insert(&t, &row) {
        Err(Error::TransactionMemory {
            bytes_max,
            own_bytes,
        }) => {
            assert_eq!((bytes_max, own_bytes), (100 * per_row, 41 * per_row));
        }
        other => panic!("a row past the shared budget: {other:?}"),
    }
    // The first transaction's share comes back when it commits.
    first.commit().expect("commit");
    second.insert(&t, &row).expect("room again");
    second
        .commit()
        .expect("the refused row did not spoil the transaction");
    assert_eq!(db.verify_table(&t).expect("verify").rows, 101);
    // Autocommit stages nothing: it is never refused for the budget.
    let mut third = db.session();
    for _ in 0..200 {
        third.insert(&t, &row).expect("autocommit");
    }
}
