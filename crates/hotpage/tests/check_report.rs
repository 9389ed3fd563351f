//! `Database::check` through the public API: a clean database has no fault, and damage
//! made through the storage (a flipped byte, keys out of order in a re-sealed leaf) is a
//! fault that names its kind, page and table.

use hotpage::testing::page::{PageBuf, seal};
use hotpage::{
    CheckReport, Database, FaultKind, KeyKind, Layout, MemStorage, Options, PageLocation, PageType,
    Storage,
};
use std::path::Path;
use std::sync::Arc;

const PAGE: usize = 4096;
const IDENTITY: KeyKind = KeyKind::Identity { start: 1, step: 1 };

fn options(read_only: bool) -> Options {
    Options {
        page_size: PAGE,
        pool_bytes: 64 * PAGE,
        read_only,
        ..Options::default()
    }
}

fn open(mem: &Arc<MemStorage>, read_only: bool) -> Database {
    Database::open_with_storage(
        Arc::clone(mem) as Arc<dyn Storage>,
        Path::new("m"),
        options(read_only),
    )
    .expect("open")
}

/// A closed database with a clustered table (several levels), a heap with an index, a
/// hash-partitioned table and a memory table, each with rows.
fn build() -> Arc<MemStorage> {
    let mem = MemStorage::new(11);
    let db = open(&mem, false);
    let tables = [
        db.create_table("orders", "identity", IDENTITY)
            .expect("orders"),
        db.create_table_with_layout(
            "events",
            "heap-nc-identity",
            IDENTITY,
            Layout::HeapIndexed { chains: 1 },
        )
        .expect("events"),
        db.create_table_with_layout(
            "parts",
            "hash-partition",
            IDENTITY,
            Layout::HashPartitioned { partitions: 3 },
        )
        .expect("parts"),
        db.create_table_with_layout("hot", "memory", IDENTITY, Layout::Memory)
            .expect("hot"),
    ];
    let mut session = db.session();
    for table in &tables {
        for i in 0..1500u32 {
            session
                .insert(table, &i.to_le_bytes().repeat(10))
                .expect("insert");
        }
    }
    drop(session);
    db.close().expect("close");
    mem
}

fn check(mem: &Arc<MemStorage>) -> CheckReport {
    open(mem, true).check().expect("check")
}

/// Reads page `page` of data.0, lets `change` alter the image, and writes it back.
fn rewrite_page(mem: &Arc<MemStorage>, page: u64, change: impl FnOnce(&mut [u8])) {
    let file = mem.open("data.0", false).expect("data.0");
    let mut image = vec![0u8; PAGE];
    file.read_at(&mut image, page * PAGE as u64).expect("read");
    change(&mut image);
    file.write_at(&image, page * PAGE as u64).expect("write");
}

/// A leaf of `orders` that is not its root, with at least two rows.
fn a_leaf_of_orders(mem: &Arc<MemStorage>) -> PageLocation {
    let db = open(mem, true);
    let root = db.table("orders").expect("orders").root_page();
    let pages = db.pool_info().file_pages_each[0];
    (1..pages)
        .map(|page| PageLocation { file: 0, page })
        .find(|&at| {
            let report = db.inspect_page(at).expect("page");
            report.header.page_type == Some(PageType::Leaf)
                && report.table.as_deref() == Some("orders")
                && at.page_id() != root
                && report.slots.len() >= 2
        })
        .expect("a leaf of orders")
}

#[test]
fn a_clean_database_has_no_fault_and_its_figures() {
    let mem = build();
    let report = check(&mem);
    assert!(report.ok(), "{:?}", report.faults);
    assert!(report.faults.is_empty() && report.warnings.is_empty());
    assert_eq!(report.pages_per_file.len(), 1);
    assert_eq!(report.pages_checked, report.pages_per_file[0]);
    assert!(report.pages_checked > 20, "{}", report.pages_checked);
    let names: Vec<&str> = report.tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["orders", "events", "parts", "hot"]);
    for table in &report.tables {
        let figures = table.figures.as_ref().expect("figures");
        assert!(table.ok, "{table:?}");
        assert_eq!(figures.rows_catalog, 1500, "{table:?}");
        assert_eq!(figures.rows_tree, Some(1500), "{table:?}");
        assert_eq!(figures.memory.is_some(), table.name == "hot", "{table:?}");
    }
    let figures = |name: &str| {
        let t = report.tables.iter().find(|t| t.name == name).expect(name);
        t.figures.clone().expect("figures")
    };
    assert_eq!(
        (figures("parts").trees, figures("parts").heap_chains),
        (3, 0)
    );
    assert_eq!(
        (figures("events").trees, figures("events").heap_chains),
        (1, 1)
    );
    assert_eq!(figures("hot").pages, Some(0));
    // Every page but each file's header belongs to a table (none leaked, none orphaned).
    let table_pages: usize = report
        .tables
        .iter()
        .map(|t| t.figures.as_ref().and_then(|f| f.pages).unwrap_or(0))
        .sum();
    assert_eq!(table_pages as u64 + 1, report.pages_checked);
}

#[test]
fn a_flipped_byte_is_a_page_fault_naming_its_page() {
    let mem = build();
    let leaf = a_leaf_of_orders(&mem);
    rewrite_page(&mem, leaf.page, |image| image[PAGE / 2] ^= 0x5a);
    let report = check(&mem);
    assert!(!report.ok());
    let fault = report
        .faults
        .iter()
        .find(|f| f.kind == FaultKind::Page)
        .expect("a page fault");
    assert_eq!(fault.page, Some(leaf), "{:?}", report.faults);
    assert_eq!(fault.table, None);
    assert!(fault.message.contains("checksum"), "{}", fault.message);
    // The damaged leaf also stops the walk of its tree: the table is not ok.
    let orders = report
        .tables
        .iter()
        .find(|t| t.name == "orders")
        .expect("orders");
    assert!(!orders.ok);
    assert!(
        report
            .tables
            .iter()
            .filter(|t| t.name != "orders")
            .all(|t| t.ok)
    );
}

#[test]
fn a_zeroed_leaf_a_table_reaches_is_a_fault_and_an_unreached_zero_page_only_a_warning() {
    // A leaf whose image is all zeros (a lost write) still fails its table.
    let mem = build();
    let leaf = a_leaf_of_orders(&mem);
    rewrite_page(&mem, leaf.page, |image| image.fill(0));
    let report = check(&mem);
    assert!(!report.ok(), "a zeroed leaf passed: {:?}", report.warnings);
    let orders = report.tables.iter().find(|t| t.name == "orders");
    assert!(!orders.expect("orders").ok);
    // A zero page past every table (the file grew for a table whose creation a crash cut
    // short) loses no row: a leaked-space warning, not a fault.
    let mem = build();
    let pages = open(&mem, true).pool_info().file_pages_each[0];
    let file = mem.open("data.0", false).expect("data.0");
    file.write_at(&vec![0u8; PAGE], pages * PAGE as u64)
        .expect("grow");
    let report = check(&mem);
    assert!(report.ok(), "{:?}", report.faults);
    let leaked = report.warnings.iter().find(|w| w.kind == FaultKind::Leaked);
    assert_eq!(
        leaked.and_then(|w| w.page),
        Some(PageLocation {
            file: 0,
            page: pages
        }),
        "{:?}",
        report.warnings
    );
}

#[test]
fn keys_out_of_order_in_a_sealed_leaf_are_a_tree_fault() {
    let mem = build();
    let leaf = a_leaf_of_orders(&mem);
    // The first key made a copy of the second (identity keys are all as long): the page
    // verifies, and its keys stay inside the parent's range, but they are not in order.
    rewrite_page(&mem, leaf.page, |image| {
        let buf = PageBuf::new(PAGE);
        buf.page().copy_from(image);
        let (first, len) = buf.page().key_range(0);
        let (second, len_second) = buf.page().key_range(1);
        assert_eq!(len, len_second);
        image.copy_within(second..second + len, first);
        seal(image);
    });
    let report = check(&mem);
    assert!(!report.ok());
    assert_eq!(report.faults.len(), 1, "{:?}", report.faults);
    let fault = &report.faults[0];
    assert_eq!(fault.kind, FaultKind::Tree);
    assert_eq!(fault.table.as_deref(), Some("orders"));
    assert_eq!(fault.page, Some(leaf));
    assert!(fault.message.contains("out of order"), "{}", fault.message);
    let orders = report
        .tables
        .iter()
        .find(|t| t.name == "orders")
        .expect("orders");
    let figures = orders.figures.as_ref().expect("figures");
    assert!(!orders.ok);
    assert_eq!((figures.rows_tree, figures.pages), (None, None));
}
