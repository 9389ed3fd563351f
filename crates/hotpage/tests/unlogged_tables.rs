//! Unlogged tables (`TableSpec::unlogged`, SQL's `CREATE UNLOGGED TABLE`), beside logged
//! ones in the same database: their commits log nothing, a clean close keeps their rows, a
//! crash empties them (and only them) with no page left behind for `check` to call an
//! orphan, and every layout with pages keeps them all in the unlogged file.

use hotpage::{
    CrashMode, Database, Durability, KeyKind, Layout, MemStorage, Options, Storage, TableHandle,
    TableSpec,
};
use std::path::Path;
use std::sync::Arc;

const IDENTITY: KeyKind = KeyKind::Identity { start: 1, step: 1 };
/// The unlogged file's number (`format::UNLOGGED_FILE`).
const UNLOGGED_FILE: u32 = 64;

fn options(durability: Durability) -> Options {
    Options {
        page_size: 4096,
        // Small enough that the unlogged tables' pages are evicted to their file while the
        // database runs, not only written at the close.
        pool_bytes: 64 * 4096,
        data_files: 3,
        durability,
        ..Options::default()
    }
}

fn open(mem: &Arc<MemStorage>, durability: Durability) -> Database {
    Database::open_with_storage(
        Arc::clone(mem) as Arc<dyn Storage>,
        Path::new("m"),
        options(durability),
    )
    .expect("open")
}

/// A crash: what was not synced is lost (torn), and the database is never closed or
/// dropped (dropping it would checkpoint).
fn crash(mem: &mut Arc<MemStorage>, db: Database) {
    *mem = mem.reboot(CrashMode::Torn, 23).expect("reboot");
    std::mem::forget(db);
}

fn spec(name: &str, layout: Layout, unlogged: bool) -> TableSpec<'_> {
    TableSpec {
        name,
        design: "identity",
        kind: IDENTITY,
        layout,
        user_keys: false,
        schema: b"",
        unlogged,
    }
}

const LAYOUTS: [Layout; 5] = [
    Layout::Clustered,
    Layout::HashPartitioned { partitions: 4 },
    Layout::Heap { chains: 3 },
    Layout::HeapIndexed { chains: 3 },
    Layout::Memory,
];

fn rows_of(db: &Database, name: &str) -> u64 {
    let table = db.table(name).expect("table");
    db.verify_table(&table).expect("verify").rows
}

/// Inserts `rows` rows into each table: autocommit, then one transaction with rows of both.
fn insert_both(db: &Database, logged: &TableHandle, unlogged: &TableHandle, rows: u32) {
    let mut session = db.session();
    let row = [7u8; 300];
    for _ in 0..rows / 2 {
        session.insert(logged, &row).expect("insert logged");
        session.insert(unlogged, &row).expect("insert unlogged");
    }
    session.begin().expect("begin");
    for _ in rows / 2..rows {
        session.insert(logged, &row).expect("insert logged");
        session.insert(unlogged, &row).expect("insert unlogged");
    }
    session.commit().expect("commit");
}

fn assert_checks_clean(db: &Database) {
    let report = db.check().expect("check");
    assert!(
        report.faults.is_empty() && report.warnings.is_empty(),
        "{:?} {:?}",
        report.faults,
        report.warnings
    );
}

#[test]
fn a_clean_close_keeps_unlogged_rows_and_a_crash_empties_only_the_unlogged_tables() {
    for layout in LAYOUTS {
        let mut mem = MemStorage::new(5);
        let db = open(&mem, Durability::Sync);
        let logged = db.create_table_spec(&spec("t", layout, false)).expect("t");
        let unlogged = db.create_table_spec(&spec("u", layout, true)).expect("u");
        assert!(unlogged.is_unlogged() && !logged.is_unlogged());
        insert_both(&db, &logged, &unlogged, 400);
        drop((logged, unlogged));
        db.close().expect("close");

        let db = open(&mem, Durability::Sync);
        assert!(!db.recovery_report().unlogged_tables_emptied, "{layout:?}");
        assert_eq!(rows_of(&db, "t"), 400, "{layout:?}");
        assert_eq!(
            rows_of(&db, "u"),
            400,
            "{layout:?}: a clean close keeps them"
        );
        assert_checks_clean(&db);
        let (logged, unlogged) = (db.table("t").expect("t"), db.table("u").expect("u"));
        insert_both(&db, &logged, &unlogged, 400);
        drop((logged, unlogged));
        crash(&mut mem, db);

        let db = open(&mem, Durability::Sync);
        assert!(db.recovery_report().unlogged_tables_emptied, "{layout:?}");
        assert_eq!(rows_of(&db, "t"), 800, "{layout:?}: every acknowledged row");
        assert_eq!(rows_of(&db, "u"), 0, "{layout:?}: a crash empties it");
        assert_checks_clean(&db);
        // It takes rows again. (Its keys go on from the last checkpoint's high-water mark:
        // the rows after it went with the crash, as an unlogged PostgreSQL table's
        // sequence is reset with it.)
        let unlogged = db.table("u").expect("u");
        db.session().insert(&unlogged, b"again").expect("insert");
        drop(unlogged);
        db.close().expect("close");
        let db = open(&mem, Durability::Sync);
        assert_eq!(rows_of(&db, "u"), 1, "{layout:?}");
        assert_checks_clean(&db);
    }
}

#[test]
fn unlogged_commits_log_nothing_and_wait_for_no_flush() {
    let mem = MemStorage::new(6);
    let db = open(&mem, Durability::Sync);
    let logged = db
        .create_table_spec(&spec("t", Layout::Clustered, false))
        .expect("t");
    let unlogged = db
        .create_table_spec(&spec("u", Layout::Clustered, true))
        .expect("u");
    let mut session = db.session();
    let before = db.log_end().expect("a log");
    let syncs_before = db.log_counters().expect("log").flushes;
    for _ in 0..500 {
        session.insert(&unlogged, &[1u8; 100]).expect("insert");
    }
    assert_eq!(
        db.log_end(),
        Some(before),
        "an unlogged row reached the log"
    );
    assert_eq!(db.log_counters().expect("log").flushes, syncs_before);
    // A transaction with rows of both logs only the logged table's rows.
    session.begin().expect("begin");
    session.insert(&logged, &[2u8; 100]).expect("insert");
    for _ in 0..50 {
        session.insert(&unlogged, &[3u8; 900]).expect("insert");
    }
    session.commit().expect("commit");
    // The logged row's commit record, and its page's first change since the checkpoint,
    // logged as a full image of the 4 KiB page.
    let grown = db.log_end().expect("log") - before;
    assert!(
        grown < 4096 + 1024,
        "{grown} log bytes for one 100-byte logged row beside 45 KB of unlogged rows"
    );
}

#[test]
fn unlogged_pages_live_only_in_the_unlogged_file() {
    let mem = MemStorage::new(7);
    let db = open(&mem, Durability::Sync);
    let logged = db
        .create_table_spec(&spec("t", Layout::HashPartitioned { partitions: 3 }, false))
        .expect("t");
    let unlogged = db
        .create_table_spec(&spec("u", Layout::HeapIndexed { chains: 3 }, true))
        .expect("u");
    insert_both(&db, &logged, &unlogged, 3000);
    let in_file = |table: &TableHandle| -> (u64, u64) {
        let pages = db.table_pages(table).expect("pages");
        let inside = pages
            .iter()
            .filter(|p| p.page_id.file() == UNLOGGED_FILE)
            .count() as u64;
        (inside, pages.len() as u64 - inside)
    };
    let (in_unlogged, u_elsewhere) = in_file(&unlogged);
    let (t_inside, elsewhere) = in_file(&logged);
    assert_eq!((u_elsewhere, t_inside), (0, 0), "a page in the wrong file");
    assert!(
        in_unlogged > 20 && elsewhere > 20,
        "{in_unlogged} {elsewhere}"
    );
    assert_eq!(db.pool_info().unlogged_file_pages, in_unlogged + 1);
    assert!(
        mem.list()
            .expect("list")
            .contains(&"data.unlogged".to_string())
    );
}

#[test]
fn a_read_only_check_of_a_crashed_database_sees_the_unlogged_tables_empty() {
    let mut mem = MemStorage::new(8);
    let db = open(&mem, Durability::Sync);
    let logged = db
        .create_table_spec(&spec("t", Layout::Clustered, false))
        .expect("t");
    let unlogged = db
        .create_table_spec(&spec("u", Layout::Clustered, true))
        .expect("u");
    insert_both(&db, &logged, &unlogged, 2000);
    drop((logged, unlogged));
    crash(&mut mem, db);
    let read_only = Database::open_with_storage(
        Arc::clone(&mem) as Arc<dyn Storage>,
        Path::new("m"),
        Options {
            read_only: true,
            ..options(Durability::Sync)
        },
    )
    .expect("read-only open");
    assert_checks_clean(&read_only);
    assert_eq!(rows_of(&read_only, "u"), 0);
    assert_eq!(rows_of(&read_only, "t"), 2000);
    drop(read_only);
    // The read-only open changed nothing: a writable open still has the reset to do.
    let db = open(&mem, Durability::Sync);
    assert!(db.recovery_report().unlogged_tables_emptied);
    assert_eq!(rows_of(&db, "u"), 0);
}

#[test]
fn a_crash_right_after_a_clean_open_still_empties_the_unlogged_tables() {
    // The open itself must mark the catalog "open" before any unlogged page can reach the
    // file: here pages are evicted and the machine stops before any later checkpoint.
    let mut mem = MemStorage::new(9);
    let db = open(&mem, Durability::Sync);
    db.create_table_spec(&spec("u", Layout::Clustered, true))
        .expect("u");
    db.close().expect("close");
    let db = open(&mem, Durability::Sync);
    let unlogged = db.table("u").expect("u");
    let mut session = db.session();
    for _ in 0..3000 {
        session.insert(&unlogged, &[5u8; 300]).expect("insert");
    }
    drop((session, unlogged));
    crash(&mut mem, db);
    let db = open(&mem, Durability::Sync);
    assert!(db.recovery_report().unlogged_tables_emptied);
    assert_eq!(rows_of(&db, "u"), 0);
    assert_checks_clean(&db);
}

#[test]
fn an_unlogged_table_in_an_unlogged_run_comes_back_empty_with_the_rest() {
    let mut mem = MemStorage::new(10);
    let db = open(&mem, Durability::None);
    let logged = db
        .create_table_spec(&spec("t", Layout::Clustered, false))
        .expect("t");
    let unlogged = db
        .create_table_spec(&spec("u", Layout::Heap { chains: 3 }, true))
        .expect("u");
    insert_both(&db, &logged, &unlogged, 1000);
    drop((logged, unlogged));
    crash(&mut mem, db);
    let db = open(&mem, Durability::None);
    assert_eq!((rows_of(&db, "t"), rows_of(&db, "u")), (0, 0));
    assert_checks_clean(&db);
}

/// Rewrites data.0's header page (4,096 bytes) as the releases before key heads wrote it:
/// format 3, and the four bytes after slot 0 (its key head now) zero, resealed.
fn make_header_format_3(mem: &MemStorage) {
    let file = mem.open("data.0", false).expect("data.0");
    let mut page = vec![0u8; 4096];
    file.read_at(&mut page, 0).expect("read");
    let record = usize::from(u16::from_le_bytes([page[64], page[65]]));
    let version_at = record + 1 + usize::from(page[record]);
    page[version_at..version_at + 4].copy_from_slice(&3u32.to_le_bytes());
    page[68..72].fill(0);
    let crc = crc32c::crc32c(&page[4..]);
    page[..4].copy_from_slice(&crc.to_le_bytes());
    file.write_at(&page, 0).expect("write");
    file.sync_data().expect("sync");
}

/// A crashed unlogged run removes and re-creates its data files at the next open. Of a
/// database in an older page format that open must refuse, as every other open does,
/// before it removes anything: the files are left as they were.
#[test]
fn a_crashed_unlogged_run_of_an_older_format_is_refused_before_its_files_go() {
    let mut mem = MemStorage::new(11);
    let db = open(&mem, Durability::None);
    let table = db
        .create_table_spec(&spec("t", Layout::Clustered, false))
        .expect("t");
    let mut session = db.session();
    for _ in 0..100 {
        session.insert(&table, b"row").expect("insert");
    }
    drop((session, table));
    crash(&mut mem, db);
    make_header_format_3(&mem);
    let before = mem
        .open("data.0", false)
        .expect("data.0")
        .len()
        .expect("len");
    let Err(error) = Database::open_with_storage(
        Arc::clone(&mem) as Arc<dyn Storage>,
        Path::new("m"),
        options(Durability::None),
    ) else {
        panic!("an older format opened");
    };
    assert!(
        matches!(error, hotpage::Error::FormatTooOld { found: 3, .. }),
        "{error}"
    );
    assert!(mem.exists("data.0").expect("exists"), "data.0 was removed");
    assert_eq!(
        mem.open("data.0", false)
            .expect("data.0")
            .len()
            .expect("len"),
        before
    );
}
