//! The system views against the engine's typed reports: each view must show the figures
//! `hotpage inspect` renders from the same report, for tables made through SQL; and
//! `pg_stat_activity` must show a session's wait while it is in progress.

use hotpage::{
    Database, Durability, IndexShape, MemStorage, Options, PageLocation, PageType, SlotContent,
    Storage, TreeStats, WaitType,
};
use hotpage_sql::{SqlDatabase, SqlSession, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a test waits for concurrent sessions to produce the waits it looks for.
const WAIT_FOR_WAITS: Duration = Duration::from_secs(20);

fn open_mem(durability: Durability) -> Arc<SqlDatabase> {
    static SEED: AtomicU64 = AtomicU64::new(1);
    let mem: Arc<dyn Storage> = MemStorage::new(SEED.fetch_add(1, Ordering::Relaxed));
    let options = Options {
        durability,
        ..Options::default()
    };
    let engine = Database::open_with_storage(mem, Path::new("m"), options).expect("open");
    SqlDatabase::new(Arc::new(engine)).expect("sql")
}

/// A directory removed when the test ends.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!(
            "hotpage-sql-views-{tag}-{}-{nanos}",
            std::process::id()
        ));
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn open_dir(dir: &TempDir, durability: Durability) -> Arc<SqlDatabase> {
    let options = Options {
        durability,
        ..Options::default()
    };
    let engine = Database::open(dir.0.join("db"), options).expect("open");
    SqlDatabase::new(Arc::new(engine)).expect("sql")
}

/// The rows of the last statement of `sql`.
fn query(session: &mut SqlSession, sql: &str) -> Vec<Vec<Value>> {
    let mut results = session
        .execute(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    results.pop().expect("a result").rows
}

fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

fn int(n: u64) -> Value {
    Value::Int(i64::try_from(n).expect("fits"))
}

fn ms(ns: u64) -> Value {
    Value::Float(ns as f64 / 1e6)
}

/// Inserts `rows` rows of `row_chars` characters into `table`, 200 per statement, in one
/// transaction.
fn fill(sql: &Arc<SqlDatabase>, table: &str, rows: usize, row_chars: usize) {
    let mut session = sql.session();
    let value = format!("('{}')", "x".repeat(row_chars));
    session.execute("BEGIN").expect("begin");
    let mut left = rows;
    while left > 0 {
        let batch = left.min(200);
        let values = vec![value.as_str(); batch].join(", ");
        session
            .execute(&format!("INSERT INTO {table} (v) VALUES {values}"))
            .expect("insert");
        left -= batch;
    }
    session.execute("COMMIT").expect("commit");
}

/// Sets the flag when dropped, so that inserting threads stop even when the test panics.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Runs `threads` sessions that insert one row per statement into `table` while `watch`
/// looks (every millisecond) for what it wants, for at most [`WAIT_FOR_WAITS`]. Returns
/// what it found and the inserting sessions' pids.
fn while_inserting<T>(
    sql: &Arc<SqlDatabase>,
    table: &str,
    threads: usize,
    mut watch: impl FnMut() -> Option<T>,
) -> (Option<T>, Vec<u32>) {
    let stop = AtomicBool::new(false);
    let pids = Mutex::new(Vec::new());
    let insert = format!("INSERT INTO {table} (v) VALUES ('{}')", "y".repeat(40));
    let found = std::thread::scope(|s| {
        let _stop = StopOnDrop(&stop);
        for _ in 0..threads {
            s.spawn(|| {
                let mut session = sql.session();
                pids.lock().expect("pids").push(session.pid());
                while !stop.load(Ordering::Acquire) {
                    session.execute(&insert).expect("insert");
                }
            });
        }
        let deadline = Instant::now() + WAIT_FOR_WAITS;
        loop {
            if let Some(found) = watch() {
                break Some(found);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    (found, pids.into_inner().expect("pids"))
}

/// Reads a view between two reads of the engine's figures until both reads agree (a
/// background thread, the log flusher or a checkpoint, may change them meanwhile), and
/// returns the view's rows with those figures.
fn at_a_quiet_moment<F: PartialEq, R>(
    mut figures: impl FnMut() -> F,
    mut read_view: impl FnMut() -> R,
) -> (R, F) {
    for _ in 0..100 {
        let before = figures();
        let rows = read_view();
        if figures() == before {
            return (rows, before);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the engine's figures never held still across a query");
}

#[test]
fn wait_stats_equal_the_engine_statistics_and_reset() {
    let dir = TempDir::new("waits");
    let sql = open_dir(&dir, Durability::Sync);
    let engine = Arc::clone(sql.engine());
    let mut session = sql.session();
    session
        .execute("CREATE TABLE w (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)")
        .expect("create");
    // Commits on a file-backed database with sync durability wait for an fdatasync.
    let (found, _) = while_inserting(&sql, "w", 4, || {
        (engine.stats().wait(WaitType::WriteLog).count >= 20).then_some(())
    });
    assert!(found.is_some(), "no WRITELOG waits");
    let figures = |snapshot: &hotpage::StatsSnapshot| {
        WaitType::ALL
            .iter()
            .map(|&t| {
                let w = snapshot.wait(t);
                vec![
                    text(t.name()),
                    int(w.count),
                    ms(w.wait_ns),
                    ms(w.wait_ns_max),
                    // signal_wait_time_ms: not measured, so unknown.
                    Value::Null,
                ]
            })
            .collect::<Vec<_>>()
    };
    let (rows, expected) = at_a_quiet_moment(
        || figures(&engine.stats()),
        || query(&mut session, "SELECT * FROM hotpage_wait_stats"),
    );
    assert_eq!(rows, expected);
    assert!(
        rows.iter()
            .any(|r| r[0] == text("WRITELOG") && r[1] != Value::Int(0))
    );
    query(&mut session, "SELECT hotpage_reset_wait_stats()");
    let rows = query(
        &mut session,
        "SELECT wait_type, waiting_tasks_count, wait_time_ms FROM hotpage_wait_stats",
    );
    assert_eq!(rows.len(), WaitType::ALL.len());
    assert!(
        rows.iter()
            .all(|r| r[1] == Value::Int(0) && r[2] == Value::Float(0.0)),
        "{rows:?}"
    );
}

#[test]
fn pg_stat_activity_lists_the_sessions_and_their_statements() {
    let sql = open_mem(Durability::Sync);
    let mut watcher = sql.session();
    let mut other = sql.session();
    query(&mut other, "SELECT 1");
    let rows = query(
        &mut watcher,
        "SELECT pid, datname, state, query, wait_event_type, wait_event, wait_resource, \
         wait_time_ms FROM pg_stat_activity ORDER BY pid",
    );
    let null4 = [Value::Null, Value::Null, Value::Null, Value::Null];
    let watcher_row = rows
        .iter()
        .find(|r| r[0] == Value::Int(i64::from(watcher.pid())))
        .expect("the watcher's row");
    assert_eq!(watcher_row[1..3], [text("hotpage"), text("active")]);
    assert!(
        matches!(&watcher_row[3], Value::Text(q) if q.contains("pg_stat_activity")),
        "{watcher_row:?}"
    );
    assert_eq!(watcher_row[4..], null4, "the watcher waits for nothing");
    let other_row = rows
        .iter()
        .find(|r| r[0] == Value::Int(i64::from(other.pid())))
        .expect("the other session's row");
    assert_eq!(
        other_row[1..4],
        [text("hotpage"), text("idle"), text("SELECT 1")]
    );
    assert_eq!(other_row[4..], null4);
    assert_eq!(rows.len(), 2);
    drop(other);
    let rows = query(&mut watcher, "SELECT pid FROM pg_stat_activity");
    assert_eq!(rows, vec![vec![Value::Int(i64::from(watcher.pid()))]]);
}

/// The live wait: sessions inserting into one identity table with sync commits wait for
/// the last page's latch and for the log's fdatasync; another session must see such a
/// wait in `pg_stat_activity` while it is in progress.
#[test]
fn pg_stat_activity_shows_a_wait_in_progress() {
    let dir = TempDir::new("live");
    let sql = open_dir(&dir, Durability::Sync);
    let mut watcher = sql.session();
    query(
        &mut watcher,
        "CREATE TABLE hot (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)",
    );
    let look = "SELECT pid, state, wait_event_type, wait_event, wait_resource, wait_time_ms \
                FROM pg_stat_activity WHERE wait_event IS NOT NULL";
    let (seen, pids) = while_inserting(&sql, "hot", 8, || {
        query(&mut watcher, look).into_iter().find(|row| {
            matches!(&row[3], Value::Text(e) if e.starts_with("PAGELATCH_") || e == "WRITELOG")
        })
    });
    let row = seen.expect("no PAGELATCH_* or WRITELOG wait seen in progress within 20 s");
    let Value::Int(pid) = row[0] else {
        panic!("pid {:?}", row[0]);
    };
    assert!(
        pids.iter().any(|p| i64::from(*p) == pid),
        "{row:?} is no inserter"
    );
    assert_eq!(row[1], text("active"));
    let Value::Text(event) = &row[3] else {
        panic!("{row:?}")
    };
    if event == "WRITELOG" {
        assert_eq!(row[2], text("Log"));
        assert_eq!(row[4], Value::Null, "a log wait names no page");
    } else {
        assert_eq!(row[2], text("PageLatch"));
        let Value::Text(page) = &row[4] else {
            panic!("a page wait without its page: {row:?}")
        };
        let at = PageLocation::parse(page).expect("FILE:PAGE");
        assert_eq!(at.to_string(), *page);
    }
    assert!(matches!(row[5], Value::Float(ms) if ms >= 0.0), "{row:?}");
    // Every inserter has ended: no wait is left behind.
    let rows = query(
        &mut watcher,
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event IS NOT NULL",
    );
    assert_eq!(rows, vec![vec![Value::Int(0)]]);
}

/// The rows `hotpage_index_physical_stats` must show for one tree of a report.
fn expected_tree_rows(table: &str, design: &str, kind: &str, tree: &TreeStats) -> Vec<Vec<Value>> {
    tree.pages_per_level
        .iter()
        .enumerate()
        .map(|(level, pages)| {
            let leaf = level == 0;
            vec![
                text(table),
                text(design),
                text(kind),
                int(level as u64),
                int(*pages),
                if leaf { int(tree.rows) } else { Value::Null },
                if leaf {
                    Value::Float(tree.leaf_fill_pct)
                } else {
                    Value::Null
                },
                if leaf {
                    Value::Float(tree.fragmentation_pct())
                } else {
                    Value::Null
                },
            ]
        })
        .collect()
}

#[test]
fn index_physical_stats_equal_the_index_report() {
    let sql = open_mem(Durability::Sync);
    let engine = Arc::clone(sql.engine());
    let mut session = sql.session();
    session
        .execute(
            "CREATE TABLE seq (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text); \
             CREATE TABLE rnd (id uuid DEFAULT gen_random_uuid() PRIMARY KEY, v text); \
             CREATE TABLE pile (v text); \
             CREATE TABLE nc (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text) \
                 WITH (design = 'heap-nc-identity'); \
             CREATE TABLE mem (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text) \
                 WITH (design = 'memory')",
        )
        .expect("create");
    for table in ["seq", "rnd", "pile", "nc", "mem"] {
        fill(&sql, table, 6000, 200);
    }
    let mut all_expected = Vec::new();
    for table in ["seq", "rnd", "pile", "nc", "mem"] {
        let report = engine
            .index_report(&engine.table(table).expect("table"))
            .expect("report");
        let expected = match &report.shape {
            IndexShape::Pages {
                tree, heap: None, ..
            } => {
                assert!(tree.levels >= 2, "{table}: {tree:?}");
                expected_tree_rows(table, &report.design, "CLUSTERED INDEX", tree)
            }
            IndexShape::Pages {
                tree,
                heap: Some(heap),
                ..
            } => {
                let mut rows = vec![vec![
                    text(table),
                    text(&report.design),
                    text("HEAP"),
                    int(0),
                    int(tree.pages()),
                    int(tree.rows),
                    Value::Float(tree.leaf_fill_pct),
                    Value::Null,
                ]];
                if let Some(index) = &heap.index {
                    rows.extend(expected_tree_rows(
                        table,
                        &report.design,
                        "NONCLUSTERED INDEX",
                        &index.tree,
                    ));
                }
                rows
            }
            IndexShape::Memory { rows, .. } => vec![vec![
                text(table),
                text(&report.design),
                text("MEMORY OPTIMIZED"),
                Value::Null,
                int(0),
                int(*rows),
                Value::Null,
                Value::Null,
            ]],
        };
        let rows = query(
            &mut session,
            &format!("SELECT * FROM hotpage_index_physical_stats('{table}')"),
        );
        assert_eq!(rows, expected, "{table}");
        all_expected.extend(expected);
    }
    // Random keys split leaves anywhere: new leaves land out of key order.
    let rnd = query(
        &mut session,
        "SELECT avg_fragmentation_in_percent FROM hotpage_index_physical_stats('rnd') \
         WHERE index_level = 0",
    );
    assert!(matches!(rnd[0][0], Value::Float(f) if f > 0.0), "{rnd:?}");
    let kinds = query(
        &mut session,
        "SELECT DISTINCT index_type_desc FROM hotpage_index_physical_stats ORDER BY index_type_desc",
    );
    assert_eq!(
        kinds,
        [
            "CLUSTERED INDEX",
            "HEAP",
            "MEMORY OPTIMIZED",
            "NONCLUSTERED INDEX"
        ]
        .map(|k| vec![text(k)])
    );
    // Without an argument (or with NULL): every table, in creation order.
    assert_eq!(
        query(&mut session, "SELECT * FROM hotpage_index_physical_stats"),
        all_expected
    );
    assert_eq!(
        query(
            &mut session,
            "SELECT * FROM hotpage_index_physical_stats(NULL)"
        ),
        all_expected
    );
    let err = session
        .execute("SELECT * FROM hotpage_index_physical_stats('nope')")
        .expect_err("no such table");
    assert_eq!(err.sqlstate, "42P01", "{err}");
}

#[test]
fn hot_pages_equal_the_engine_statistics() {
    let sql = open_mem(Durability::Sync);
    let engine = Arc::clone(sql.engine());
    let mut session = sql.session();
    query(
        &mut session,
        "CREATE TABLE h (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)",
    );
    let (found, _) = while_inserting(&sql, "h", 8, || {
        (engine.stats().hot_pages.len() >= 2).then_some(())
    });
    assert!(found.is_some(), "no page waits");
    let (rows, hot) = at_a_quiet_moment(
        || engine.stats().hot_pages,
        || query(&mut session, "SELECT * FROM hotpage_hot_pages"),
    );
    let owners = engine
        .page_owners(&hot.iter().map(|(p, _)| *p).collect::<Vec<_>>())
        .expect("owners");
    let expected: Vec<Vec<Value>> = hot
        .iter()
        .zip(&owners)
        .map(|((page_id, waits), owner)| {
            vec![
                text(&PageLocation::of(*page_id).to_string()),
                owner
                    .as_ref()
                    .map_or(Value::Null, |o| text(o.page_type.name())),
                owner
                    .as_ref()
                    .map_or(Value::Null, |o| int(u64::from(o.level))),
                owner.as_ref().map_or(Value::Null, |o| text(&o.table)),
                int(waits.count),
                ms(waits.wait_ns),
            ]
        })
        .collect();
    assert_eq!(rows, expected);
    assert!(
        rows.iter().any(|r| r[3] == text("h")),
        "no hot page of table h: {rows:?}"
    );
    // Hottest first.
    let times: Vec<f64> = rows
        .iter()
        .map(|r| match r[5] {
            Value::Float(t) => t,
            _ => panic!("{r:?}"),
        })
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
}

/// The header row the view must show for a page.
fn expected_header(report: &hotpage::PageReport) -> Vec<Value> {
    let h = &report.header;
    let at = |p: hotpage::PageId| text(&PageLocation::of(p).to_string());
    vec![
        text(&report.location.to_string()),
        int(h.page_id.to_raw()),
        text(h.page_type.map_or("unknown", PageType::name)),
        int(u64::from(h.page_type_byte)),
        int(u64::from(h.level)),
        int(h.lsn),
        int(h.slot_count as u64),
        int(h.free_bytes as u64),
        int(h.free_end as u64),
        h.next.map_or(Value::Null, at),
        h.leftmost_child().map_or(Value::Null, at),
        text(&format!("{:#010x}", h.checksum)),
        Value::Bool(report.problem.is_none()),
        report.problem.as_deref().map_or(Value::Null, text),
        report.table.as_deref().map_or(Value::Null, text),
        report.design.as_deref().map_or(Value::Null, text),
    ]
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The slot rows the view must show for a page.
fn expected_slots(report: &hotpage::PageReport) -> Vec<Vec<Value>> {
    report
        .slots
        .iter()
        .map(|s| {
            let (content, key, row_bytes, child) = match &s.content {
                SlotContent::Row { key, row_bytes } => {
                    ("row", text(key), int(*row_bytes as u64), Value::Null)
                }
                SlotContent::Child { key, child } => (
                    "child",
                    text(key),
                    Value::Null,
                    text(&PageLocation::of(*child).to_string()),
                ),
                SlotContent::FileHeader { magic, .. } => {
                    ("file header", text(magic), Value::Null, Value::Null)
                }
                SlotContent::Other => ("other", Value::Null, Value::Null, Value::Null),
            };
            vec![
                int(s.slot as u64),
                int(s.offset as u64),
                int(s.length as u64),
                text(content),
                key,
                text(&hex(&s.key)),
                row_bytes,
                child,
                text(&hex(&s.record)),
            ]
        })
        .collect()
}

#[test]
fn page_views_equal_the_page_report() {
    let sql = open_mem(Durability::Sync);
    let engine = Arc::clone(sql.engine());
    let mut session = sql.session();
    query(
        &mut session,
        "CREATE TABLE p (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)",
    );
    fill(&sql, "p", 3000, 100);
    // The views read the data file: write the pool's pages to it first.
    engine.checkpoint().expect("checkpoint");
    let root = PageLocation::of(engine.table("p").expect("table").root_page());
    let root_report = engine.inspect_page(root).expect("root");
    assert_eq!(root_report.header.page_type, Some(PageType::Inner));
    let first_leaf = root_report
        .header
        .leftmost_child()
        .expect("a leftmost child");
    let leaf = PageLocation::of(first_leaf);
    let file_header = PageLocation { file: 0, page: 0 };
    for at in [root, leaf, file_header] {
        let report = engine.inspect_page(at).expect("report");
        let (file, page) = (at.file, at.page);
        let header = query(
            &mut session,
            &format!("SELECT * FROM hotpage_page_header({file}, {page})"),
        );
        assert_eq!(header, vec![expected_header(&report)], "{at}");
        let slots = query(
            &mut session,
            &format!("SELECT * FROM hotpage_page({file}, {page})"),
        );
        assert_eq!(slots, expected_slots(&report), "{at}");
        assert!(!slots.is_empty(), "{at}");
        // The same page named as one text argument.
        let by_text = query(&mut session, &format!("SELECT * FROM hotpage_page('{at}')"));
        assert_eq!(by_text, slots, "{at}");
    }
    // The leaf's rows are the table's: the first key is 1, with its row's length.
    let first = query(
        &mut session,
        &format!("SELECT key, content FROM hotpage_page('{leaf}') WHERE slot = 0"),
    );
    assert_eq!(first, vec![vec![text("1"), text("row")]]);
    let owner = query(
        &mut session,
        &format!("SELECT table_name, page_type, level FROM hotpage_page_header('{root}')"),
    );
    assert_eq!(owner, vec![vec![text("p"), text("inner"), int(1)]]);
    // Pages that are not there, and arguments that name no page.
    let pages = engine.pool_info().file_pages_each[0];
    for bad in [
        format!("hotpage_page(0, {pages})"),
        "hotpage_page(7, 1)".to_string(),
        "hotpage_page(-1, 1)".to_string(),
        "hotpage_page('nowhere')".to_string(),
    ] {
        let err = session
            .execute(&format!("SELECT * FROM {bad}"))
            .expect_err(&bad);
        assert_eq!(err.sqlstate, "22023", "{bad}: {err}");
    }
    let err = session
        .execute("SELECT * FROM hotpage_page()")
        .expect_err("no arguments");
    assert_eq!(err.sqlstate, "42883", "{err}");
}

#[test]
fn log_view_equals_the_log_report() {
    let sql = open_mem(Durability::Sync);
    let engine = Arc::clone(sql.engine());
    let mut session = sql.session();
    query(
        &mut session,
        "CREATE TABLE l (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)",
    );
    fill(&sql, "l", 2000, 100);
    engine.checkpoint().expect("checkpoint");
    fill(&sql, "l", 500, 100);
    let expected = |engine: &Database| -> Vec<Vec<Value>> {
        let report = engine.log_report().expect("log report");
        report
            .summary
            .kinds
            .iter()
            .map(|k| {
                vec![
                    text(k.kind),
                    int(k.records),
                    int(k.bytes),
                    int(k.records_since_checkpoint),
                    int(k.bytes_since_checkpoint),
                ]
            })
            .collect()
    };
    let (rows, report_rows) = at_a_quiet_moment(
        || expected(&engine),
        || query(&mut session, "SELECT * FROM hotpage_log"),
    );
    assert_eq!(rows, report_rows);
    assert!(!rows.is_empty());
    // The checkpoint split the log: some records lie before its redo point.
    assert!(
        rows.iter().any(|r| r[3] != r[1]),
        "nothing before the checkpoint: {rows:?}"
    );
    let err = session
        .execute("SELECT * FROM hotpage_log(1)")
        .expect_err("no arguments taken");
    assert_eq!(err.sqlstate, "42883", "{err}");

    let unlogged = open_mem(Durability::None);
    let mut session = unlogged.session();
    query(
        &mut session,
        "CREATE TABLE u (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)",
    );
    fill(&unlogged, "u", 100, 10);
    assert_eq!(
        query(&mut session, "SELECT * FROM hotpage_log"),
        Vec::<Vec<Value>>::new()
    );
}
