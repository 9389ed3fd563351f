//! A stale page: an older copy of a page, with a valid checksum, where a newer one was
//! written (a lost or misdirected write). Every check of the page passes, so only the rows
//! can tell: a scan of the whole table that meets fewer rows than the table holds says so
//! (`Error::RowsMissing`) instead of returning a short answer.

use hotpage::{Database, Error, KeyKind, Layout, MemStorage, Options, Storage};
use std::path::Path;
use std::sync::Arc;

const PAGE_BYTES: usize = 4096;
const ROWS_PER_STEP: usize = 300;

fn open(mem: &Arc<MemStorage>) -> Database {
    let options = Options {
        page_size: PAGE_BYTES,
        pool_bytes: 256 * PAGE_BYTES,
        ..Options::default()
    };
    Database::open_with_storage(Arc::clone(mem) as Arc<dyn Storage>, Path::new("s"), options)
        .expect("open")
}

/// Inserts `ROWS_PER_STEP` rows of 40 bytes into `name` (created with `layout` if missing),
/// ten rows per commit, and closes the database cleanly.
fn add_rows(mem: &Arc<MemStorage>, name: &str, layout: Layout) {
    let db = open(mem);
    let table = db.table(name).unwrap_or_else(|_| {
        db.create_table_with_layout(name, name, KeyKind::Identity { start: 1, step: 1 }, layout)
            .expect("create")
    });
    let mut session = db.session();
    for chunk in 0..ROWS_PER_STEP / 10 {
        session.begin().expect("begin");
        for i in 0..10 {
            session
                .insert(&table, &[(chunk * 10 + i) as u8; 40])
                .expect("insert");
        }
        session.commit().expect("commit");
    }
    drop((session, table));
    db.close().expect("close");
}

/// The rows a scan of the whole table returns, or its error.
fn scan_all(mem: &Arc<MemStorage>, name: &str) -> Result<u64, Error> {
    let db = open(mem);
    let table = db.table(name).expect("table");
    let mut rows = 0u64;
    let scanned = db.session().scan(&table, None, |_, _| {
        rows += 1;
        true
    });
    scanned.map(|()| rows)
}

/// For each page of the data file that the second half of the rows changed, a copy of
/// the database with that page put back as it was before them. Each copy's whole-table
/// scan must return every row or say it cannot: never fewer rows and success.
fn every_stale_page_is_told(layout: Layout, name: &str) {
    let mem = MemStorage::new(41);
    add_rows(&mem, name, layout);
    let before = mem.read_file("data.0").expect("read");
    add_rows(&mem, name, layout);
    let after = mem.read_file("data.0").expect("read");
    let rows = 2 * ROWS_PER_STEP as u64;
    assert_eq!(scan_all(&mem, name).expect("undamaged scan"), rows);
    let changed: Vec<usize> = (1..before.len() / PAGE_BYTES)
        .filter(|p| {
            let page = p * PAGE_BYTES..(p + 1) * PAGE_BYTES;
            before[page.clone()] != after[page]
        })
        .collect();
    assert!(!changed.is_empty(), "the second half changed no page");
    let mut told_by_count = 0;
    for page in &changed {
        let copy = MemStorage::new(42);
        for file in mem.list().expect("list") {
            let bytes = mem.read_file(&file).expect("read");
            let to = copy.open(&file, true).expect("create");
            to.write_at(&bytes, 0).expect("copy");
            to.sync_data().expect("sync");
        }
        let at = page * PAGE_BYTES;
        copy.damage("data.0", at as u64, &before[at..at + PAGE_BYTES])
            .expect("stale page");
        match scan_all(&copy, name) {
            Ok(found) => assert_eq!(found, rows, "page {page} stale: a short answer"),
            Err(Error::RowsMissing { counted, found, .. }) => {
                assert_eq!(counted, rows, "page {page}");
                assert!(found < rows, "page {page}");
                told_by_count += 1;
            }
            Err(Error::CorruptPage { .. }) => {}
            Err(other) => panic!("page {page} stale: {other}"),
        }
    }
    // Most stale pages pass every check of their own (an older, valid page).
    assert!(
        told_by_count > 0,
        "no stale page of {changed:?} was told by its count"
    );
}

#[test]
fn a_stale_leaf_of_an_ascending_tree_is_told() {
    every_stale_page_is_told(Layout::Clustered, "identity");
}

#[test]
fn a_stale_heap_page_is_told() {
    every_stale_page_is_told(Layout::Heap { chains: 1 }, "heap");
}

#[test]
fn a_stale_page_of_an_indexed_heap_is_told() {
    every_stale_page_is_told(Layout::HeapIndexed { chains: 1 }, "heap-nc-identity");
}

/// The check is of a whole table only: a scan from a key, or one its visitor stops, meets
/// fewer rows by design.
#[test]
fn a_partial_scan_is_not_damage() {
    let mem = MemStorage::new(43);
    add_rows(&mem, "identity", Layout::Clustered);
    let db = open(&mem);
    let table = db.table("identity").expect("table");
    let session = db.session();
    let mut rows = 0;
    session
        .scan(&table, None, |_, _| {
            rows += 1;
            rows < 10
        })
        .expect("a scan its visitor stops");
    assert_eq!(rows, 10);
    let mut keys = Vec::new();
    session
        .scan(&table, None, |key, _| {
            keys.push(key.to_vec());
            true
        })
        .expect("a whole scan");
    let from = hotpage::Key::from_bytes(&keys[100]).expect("key");
    rows = 0;
    session
        .scan(&table, Some(&from), |_, _| {
            rows += 1;
            true
        })
        .expect("a scan from a key");
    assert_eq!(rows, ROWS_PER_STEP - 100);
}
