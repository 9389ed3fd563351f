//! The system and DMV queries the five seed articles show, taken as written and run after
//! the seed's workload (issue 15): each runs and returns rows, with a sane value where the
//! article's point depends on it. Seed 002's `fn_dblog` queries (ROW_NUMBER() OVER,
//! `[Slot ID]`, `[Transaction Name]`) are here too. The statements that do not run are
//! listed in the README (T-SQL section) with the reason; the tests check their errors.

use hotpage::{Database, MemStorage, Options, Storage};
use hotpage_sql::{SqlDatabase, SqlError, TsqlOutput, TsqlSession};
use std::path::Path;
use std::sync::Arc;

mod common;

fn open() -> (Arc<Database>, Arc<SqlDatabase>) {
    let mem = MemStorage::new(1);
    let engine = Arc::new(
        Database::open_with_storage(mem as Arc<dyn Storage>, Path::new("m"), Options::default())
            .expect("open"),
    );
    let sql = SqlDatabase::new(Arc::clone(&engine)).expect("sql");
    (engine, sql)
}

fn run(session: &mut TsqlSession, script: &str) -> Vec<TsqlOutput> {
    let (outputs, error) = session.execute_script(script);
    if let Some(error) = error {
        panic!("{script}\nfailed: {error:?}");
    }
    outputs
}

fn fail(session: &mut TsqlSession, script: &str) -> SqlError {
    match session.execute_script(script) {
        (_, Some(error)) => error,
        (_, None) => panic!("{script}\nshould have failed"),
    }
}

/// The last result's rows as text (NULL as "NULL"), and its column names.
fn table(outputs: &[TsqlOutput]) -> (Vec<String>, Vec<Vec<String>>) {
    let result = outputs
        .iter()
        .rev()
        .find_map(|o| match o {
            TsqlOutput::Result(r) if !r.columns.is_empty() => Some(r),
            _ => None,
        })
        .expect("a result with columns");
    let columns = result.columns.iter().map(|c| c.name.clone()).collect();
    let rows = common::row_texts(&result.rows);
    (columns, rows)
}

fn rows(outputs: &[TsqlOutput]) -> Vec<Vec<String>> {
    table(outputs).1
}

fn number(text: &str) -> i64 {
    text.parse()
        .unwrap_or_else(|_| panic!("{text} is not a number"))
}

/// Seed 002's first fn_dblog query, as written.
const SEED002_STEPS: &str = "SELECT     ROW_NUMBER() OVER (ORDER BY [Current LSN])      [Step #],
        [Current LSN],
        Operation,
        Context,
        AllocUnitName,
        [Page ID],
        [Slot ID]
FROM    sys.fn_dblog(NULL, NULL)
WHERE   CONTEXT <> N'LCX_NULL'
        AND AllocUnitName IS NOT NULL;
GO";

/// Seed 002's last script, as written (its row count cut from 10,000 to 2,000).
const SEED002_INSERT_RECORD: &str = "CHECKPOINT;
GO
BEGIN TRANSACTION InsertRecord;
GO
        DECLARE @I INT = 1;
        WHILE @I <= 2000
        BEGIN
            INSERT INTO dbo.demo_table(C1) VALUES ('This is a test');
            SET @I += 1;
        END
        -- Afterwards we count the log entries for the PFS updates
        SELECT  Context,
                COUNT_BIG(*)
        FROM    sys.fn_dblog(NULL, NULL)
        WHERE   [Transaction ID] IN 
                (
                        SELECT [Transaction ID]
                        FROM sys.fn_dblog(NULL, NULL)
                        WHERE   [Transaction Name] = N'InsertRecord'
                                OR Context = N'LCX_PFS'
                )
        GROUP BY
                Context;
        -- and have a look to the avg space used in the heap
        SELECT  page_count,
                avg_page_space_used_in_percent
        FROM    sys.dm_db_index_physical_stats
                (
                        DB_ID(),
                        OBJECT_ID(N'dbo.demo_table', N'U'),
                        0,
                        NULL,
                        N'DETAILED'
                );
        GO
ROLLBACK TRANSACTION;
GO";

#[test]
fn seed_002_steps_query_numbers_the_log_and_shows_slots() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(&mut s, include_str!("tsql/seed002_demo_table.sql"));
    run(
        &mut s,
        "CHECKPOINT;
GO
DECLARE @I INT = 1
WHILE @I <= 300
BEGIN
    INSERT INTO dbo.demo_table(C1) VALUES ('This is a test')
    SET @I += 1
END
GO",
    );
    let (columns, steps) = table(&run(&mut s, SEED002_STEPS));
    assert_eq!(
        columns,
        [
            "step #",
            "current lsn",
            "operation",
            "context",
            "allocunitname",
            "page id",
            "slot id"
        ]
    );
    assert!(steps.len() > 300, "{}", steps.len());
    // Step # numbers the rows 1, 2, … in LSN order.
    let mut by_lsn = steps.clone();
    by_lsn.sort_by(|a, b| a[1].cmp(&b[1]));
    for (i, row) in by_lsn.iter().enumerate() {
        assert_eq!(number(&row[0]), i as i64 + 1, "{row:?}");
        assert_eq!(row[4], "dbo.demo_table");
        assert_ne!(row[3], "LCX_NULL");
    }
    // Each heap row has its slot: 0, 1, 2, … on each page, in the order they came.
    let inserts: Vec<&Vec<String>> = by_lsn
        .iter()
        .filter(|r| r[2] == "LOP_INSERT_ROWS" && r[3] == "LCX_HEAP")
        .collect();
    assert_eq!(inserts.len(), 299, "the first row is in its page's image");
    for pair in inserts.windows(2) {
        let (a, b) = (number(&pair[0][6]), number(&pair[1][6]));
        if pair[0][5] == pair[1][5] {
            assert_eq!(b, a + 1, "{pair:?}");
        } else {
            assert_eq!(b, 0, "a new page starts at slot 0: {pair:?}");
        }
    }
    assert!(steps.iter().any(|r| r[3] == "LCX_PFS" && r[6] == "NULL"));
    // PARTITION BY numbers each page's rows from 1 (the SQL layer's, both dialects).
    let out = rows(&run(
        &mut s,
        "SELECT [Page ID], [Slot ID], ROW_NUMBER() OVER (PARTITION BY [Page ID] ORDER BY [Current LSN]) AS n
        FROM sys.fn_dblog(NULL, NULL) WHERE Operation = N'LOP_INSERT_ROWS' AND [Slot ID] IS NOT NULL",
    ));
    assert_eq!(out.len(), 299);
    assert!(
        out.iter()
            .all(|r| number(&r[2]) >= 1 && number(&r[1]) >= number(&r[2]) - 1)
    );
    let mut pg = sql.session();
    let results = pg
        .execute(
            "SELECT operation, row_number() OVER (ORDER BY \"current lsn\" DESC) FROM hotpage_dblog(NULL, NULL) ORDER BY 2 LIMIT 1",
        )
        .expect("pg dialect");
    assert_eq!(results[0].rows.len(), 1);
    let error = pg
        .execute("SELECT rank() OVER (ORDER BY 1) FROM hotpage_dblog(NULL, NULL)")
        .expect_err("rank");
    assert_eq!(error.sqlstate, "0A000");
}

#[test]
fn seed_002_insert_record_script_runs_and_names_its_transaction() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(&mut s, include_str!("tsql/seed002_demo_table.sql"));
    // As written: inside the open transaction hotpage's log has none of its rows (they
    // are logged when it commits), so the count finds no rows; the physical stats query
    // returns its row (the table is still empty for everyone).
    let out = run(&mut s, SEED002_INSERT_RECORD);
    let results: Vec<_> = out
        .iter()
        .filter_map(|o| match o {
            TsqlOutput::Result(r) if !r.columns.is_empty() => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{out:?}");
    assert!(results[0].rows.is_empty(), "{:?}", results[0].rows);
    assert_eq!(results[1].rows.len(), 1);
    // The same script with COMMIT for ROLLBACK: the transaction named InsertRecord, its
    // heap rows and the free-space updates they made.
    let committed = SEED002_INSERT_RECORD.replace("ROLLBACK TRANSACTION;", "COMMIT TRANSACTION;");
    run(&mut s, &committed);
    let by_context = rows(&run(
        &mut s,
        "SELECT Context, COUNT_BIG(*) FROM sys.fn_dblog(NULL, NULL)
        WHERE [Transaction ID] IN (SELECT [Transaction ID] FROM sys.fn_dblog(NULL, NULL)
            WHERE [Transaction Name] = N'InsertRecord' OR Context = N'LCX_PFS')
        GROUP BY Context ORDER BY Context",
    ));
    let count = |context: &str| {
        by_context
            .iter()
            .find(|r| r[0] == context)
            .map_or(0, |r| number(&r[1]))
    };
    // BEGIN and COMMIT; a row of its own for each row but those in page images.
    assert_eq!(count("LCX_NULL"), 2, "{by_context:?}");
    assert!(count("LCX_HEAP") >= 1990, "{by_context:?}");
    let pages = rows(&run(
        &mut s,
        "SELECT page_count FROM sys.dm_db_index_physical_stats(DB_ID(), OBJECT_ID(N'dbo.demo_table', N'U'), 0, NULL, N'DETAILED')",
    ));
    let pages = number(&pages[0][0]);
    assert!(
        count("LCX_PFS") >= pages && count("LCX_PFS") <= 5 * pages,
        "{pages} pages: {by_context:?}"
    );
    // Names: BEGIN TRAN's own, user_transaction without one, INSERT for autocommit.
    run(
        &mut s,
        "INSERT INTO dbo.demo_table(C1) VALUES ('autocommit')
BEGIN TRAN
INSERT INTO dbo.demo_table(C1) VALUES ('explicit')
COMMIT",
    );
    let names = rows(&run(
        &mut s,
        "SELECT [Transaction Name] FROM sys.fn_dblog(NULL, NULL) WHERE Operation = N'LOP_BEGIN_XACT' ORDER BY [Current LSN]",
    ));
    let names: Vec<&str> = names.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["InsertRecord", "INSERT", "user_transaction"]);
    // Only LOP_BEGIN_XACT carries the name; its COMMIT has the same transaction id.
    let xacts = rows(&run(
        &mut s,
        "SELECT Operation, [Transaction ID], [Transaction Name] FROM sys.fn_dblog(NULL, NULL)
        WHERE Context = N'LCX_NULL' ORDER BY [Current LSN]",
    ));
    assert_eq!(xacts.len(), 6, "{xacts:?}");
    for pair in xacts.chunks(2) {
        assert_eq!(pair[0][0], "LOP_BEGIN_XACT");
        assert_eq!(pair[1][0], "LOP_COMMIT_XACT");
        assert_eq!(pair[0][1], pair[1][1]);
        assert_eq!(pair[1][2], "NULL");
    }
}

/// Names are logged (a `txn-name` record before the commit), so a reopen still shows them:
/// after a crash-like close and after a clean one. fn_dblog shows the active log (since the
/// last checkpoint, and an open checkpoints), so the records from before the reopen are
/// read with trace flag 2537, as in SQL Server.
#[test]
fn transaction_names_survive_a_reopen() {
    let mem = MemStorage::new(1);
    let open_mem = || {
        let engine = Arc::new(
            Database::open_with_storage(
                Arc::clone(&mem) as Arc<dyn Storage>,
                Path::new("m"),
                Options::default(),
            )
            .expect("open"),
        );
        let sql = SqlDatabase::new(Arc::clone(&engine)).expect("sql");
        (engine, sql)
    };
    let names_query = "SELECT [Transaction Name] FROM fn_dblog(NULL, NULL) WHERE Operation = N'LOP_BEGIN_XACT' ORDER BY [Current LSN]";
    let (engine, sql) = open_mem();
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE TABLE dbo.h (c int NOT NULL)\nGO\nCHECKPOINT\nGO\nBEGIN TRAN named\nINSERT INTO dbo.h (c) VALUES (1)\nCOMMIT\nINSERT INTO dbo.h (c) VALUES (2)",
    );
    let before: Vec<Vec<String>> = rows(&run(&mut s, names_query));
    assert_eq!(before, [["named"], ["INSERT"]]);
    drop(s);
    drop(sql);
    drop(engine);
    let (engine, sql) = open_mem();
    let mut s = TsqlSession::new(sql.session());
    assert_eq!(
        rows(&run(&mut s, names_query)).len(),
        0,
        "the active log is new"
    );
    run(&mut s, "DBCC TRACEON(2537)");
    assert_eq!(
        rows(&run(&mut s, names_query)),
        before,
        "after a crash-like close"
    );
    drop(s);
    drop(sql);
    match Arc::try_unwrap(engine) {
        Ok(engine) => engine.close().expect("close"),
        Err(_) => panic!("another handle to the database is still open"),
    }
    let (_engine, sql) = open_mem();
    let mut s = TsqlSession::new(sql.session());
    run(&mut s, "DBCC TRACEON(2537, -1)");
    assert_eq!(
        rows(&run(&mut s, names_query)),
        before,
        "after a clean close"
    );
    run(&mut s, "DBCC TRACEOFF(2537, -1)");
    assert_eq!(
        rows(&run(&mut s, names_query)).len(),
        0,
        "trace flag 2537 off"
    );
}

/// Trace flag 2537 is a session's own, as in SQL Server (`DBCC TRACEON(2537)`), or every
/// session's with `-1`: two sessions of one database see different fn_dblog extents, and
/// TRACEOFF gives a session the active log back. The same statement text runs before and
/// after each change, so a statement prepared with the old flag would show here.
#[test]
fn trace_flag_2537_is_per_session_unless_global() {
    let (_engine, sql) = open();
    let (mut a, mut b) = (
        TsqlSession::new(sql.session()),
        TsqlSession::new(sql.session()),
    );
    run(
        &mut a,
        "CREATE TABLE dbo.traced (c int NOT NULL)\nGO\nBEGIN TRAN before_checkpoint\nINSERT INTO dbo.traced (c) VALUES (1)\nCOMMIT\nGO\nCHECKPOINT\nGO\nBEGIN TRAN after_checkpoint\nINSERT INTO dbo.traced (c) VALUES (2)\nCOMMIT",
    );
    let names_query = "SELECT [Transaction Name] FROM sys.fn_dblog(NULL, NULL) WHERE Operation = N'LOP_BEGIN_XACT' ORDER BY [Current LSN]";
    let names = |s: &mut TsqlSession| -> Vec<String> {
        rows(&run(s, names_query)).into_iter().flatten().collect()
    };
    let active = vec!["after_checkpoint".to_string()];
    assert_eq!(names(&mut a), active);
    assert_eq!(names(&mut b), active);

    run(&mut a, "DBCC TRACEON(2537)");
    let whole = names(&mut a);
    assert!(
        whole.contains(&"before_checkpoint".to_string()) && whole.ends_with(&active),
        "session a reads the inactive log too: {whole:?}"
    );
    assert_eq!(names(&mut b), active, "session b's flag is off");
    // In a loop too (its statements are prepared once per session otherwise).
    let looped = "DECLARE @i int = 0, @n bigint\nWHILE @i < 2\nBEGIN\n    SELECT @n = COUNT_BIG(*) FROM sys.fn_dblog(NULL, NULL) WHERE Operation = N'LOP_BEGIN_XACT'\n    SET @i += 1\nEND\nSELECT @n";
    assert_eq!(rows(&run(&mut a, looped)), [[whole.len().to_string()]]);
    assert_eq!(rows(&run(&mut b, looped)), [["1"]]);

    run(&mut a, "DBCC TRACEOFF(2537)");
    assert_eq!(
        names(&mut a),
        active,
        "TRACEOFF gives a the active log back"
    );

    // Global: every session, a new one too, until TRACEOFF with -1; a session's own
    // TRACEOFF leaves the global flag on.
    run(&mut b, "DBCC TRACEON(2537, -1)");
    assert_eq!(names(&mut a), whole);
    assert_eq!(names(&mut TsqlSession::new(sql.session())), whole);
    run(&mut a, "DBCC TRACEOFF(2537)");
    assert_eq!(names(&mut a), whole, "still on globally");
    assert_eq!(
        rows(&run(&mut a, "DBCC TRACESTATUS(2537)")),
        [["2537", "1", "1", "0"]]
    );
    run(&mut a, "DBCC TRACEOFF(2537, -1)");
    assert_eq!(names(&mut a), active);
    assert_eq!(names(&mut b), active);

    // The PostgreSQL dialect's form of a session's flag: hotpage_dblog's third argument.
    let mut pg = sql.session();
    let count = |pg: &mut hotpage_sql::SqlSession, inactive: &str| -> i64 {
        let query = format!(
            "SELECT count(*) FROM hotpage_dblog(NULL, NULL{inactive}) WHERE operation = 'LOP_BEGIN_XACT'"
        );
        let results = pg.execute(&query).expect("hotpage_dblog");
        number(&results[0].rows[0][0].to_pg_text(None).expect("a count"))
    };
    assert_eq!(count(&mut pg, ""), 1);
    assert_eq!(count(&mut pg, ", false"), 1);
    assert_eq!(count(&mut pg, ", true"), whole.len() as i64);
    let error = pg
        .execute("SELECT * FROM hotpage_dblog(NULL, NULL, 'yes')")
        .expect_err("a text flag");
    assert_eq!(error.sqlstate, "42804");
}

/// Seed 000's loop (`rows` rows for its 100,000) from 8 sessions while a ninth samples
/// `sys.dm_exec_requests`; returns the most rows one sample showed.
fn heavy_insert_from_8_sessions(sql: &Arc<SqlDatabase>, rows_each: u32) -> usize {
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let sql = Arc::clone(sql);
            std::thread::spawn(move || {
                let mut session = TsqlSession::new(sql.session());
                let loop_text = include_str!("tsql/seed000_insert_loop.sql")
                    .replace("100000", &(rows_each + 1).to_string());
                run(&mut session, &loop_text);
            })
        })
        .collect();
    let mut sampler = TsqlSession::new(sql.session());
    let mut seen = 0;
    while threads.iter().any(|t| !t.is_finished()) {
        let out = rows(&run(
            &mut sampler,
            "SELECT session_id, status, command, wait_type, wait_resource FROM sys.dm_exec_requests",
        ));
        seen = seen.max(out.len());
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    for t in threads {
        t.join().unwrap();
    }
    seen
}

#[test]
fn the_seeds_dmv_queries_return_rows_after_their_workloads() {
    // Async commits, as the article's laptop run is bound by the page, not the log (with
    // sync commits each insert waits for the log and the sessions rarely meet on the page).
    let mem = MemStorage::new(1);
    let options = Options {
        durability: hotpage::Durability::Async,
        ..Options::default()
    };
    let engine = Arc::new(
        Database::open_with_storage(mem as Arc<dyn Storage>, Path::new("m"), options)
            .expect("open"),
    );
    let sql = SqlDatabase::new(Arc::clone(&engine)).expect("sql");
    let mut s = TsqlSession::new(sql.session());
    // Seed 001: wait stats cleared before each load.
    run(&mut s, "DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR);\nGO");
    // Seed 000: HeavyInsert and its loop from 8 sessions. Latch waits need two sessions
    // to meet on the last page; on a busy 2-core machine one round may not show one, so
    // up to three rounds run.
    run(&mut s, include_str!("tsql/seed000_heavy_insert.sql"));
    let mut rounds = 0;
    let waits = loop {
        rounds += 1;
        let seen = heavy_insert_from_8_sessions(&sql, 3000);
        assert!(seen >= 1, "dm_exec_requests showed no session running");
        let waits = rows(&run(
            &mut s,
            "SELECT wait_type, waiting_tasks_count, wait_time_ms, max_wait_time_ms FROM sys.dm_os_wait_stats",
        ));
        let ex = waits
            .iter()
            .find(|r| r[0] == "PAGELATCH_EX")
            .map(|r| number(&r[1]));
        if ex.unwrap_or(0) > 0 || rounds == 3 {
            break waits;
        }
    };
    assert!(waits.len() >= 2, "{waits:?}");
    let tasks = |wait: &str| {
        waits
            .iter()
            .find(|r| r[0] == wait)
            .map_or(0, |r| number(&r[1]))
    };
    // The article's point: sessions inserting at a clustered identity's last page wait on
    // its latch.
    assert!(
        tasks("PAGELATCH_EX") > 0,
        "after {rounds} rounds: {waits:?}"
    );
    let rows_in = rows(&run(&mut s, "SELECT count(*) FROM dbo.HeavyInsert"));
    assert_eq!(rows_in, [[(rounds * 24_000).to_string()]]);
    // Seed 000's page look-up: DBCC TRACEON, DBCC PAGE on the table's page (hotpage's
    // database 1 and its own file and page numbers for the article's 9:1:197381), then
    // OBJECT_NAME on the header's object id.
    let root = engine.table("heavyinsert").unwrap().root_page();
    let at = hotpage::PageLocation::of(root);
    let page = rows(&run(
        &mut s,
        &format!(
            "DBCC TRACEON(3604)\nGO\nDBCC PAGE(1,{},{},0)\nGO",
            at.file, at.page
        ),
    ));
    let object_id = page
        .iter()
        .find(|r| r[2] == "Metadata: ObjectId")
        .map(|r| r[3].clone())
        .expect("the header's object id");
    let name = rows(&run(
        &mut s,
        &format!("SELECT OBJECT_NAME({object_id},1)\nGO"),
    ));
    assert_eq!(name, [["heavyinsert"]]);
    // The article's own numbers: there is no database 9 here.
    assert_eq!(fail(&mut s, "DBCC PAGE(9,1,197381,0)").sqlstate, "22023");
    // Seed 001: the waits cleared.
    run(&mut s, "DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR);\nGO");
    let cleared = rows(&run(
        &mut s,
        "SELECT wait_type, waiting_tasks_count FROM sys.dm_os_wait_stats WHERE wait_type = 'PAGELATCH_EX'",
    ));
    assert_eq!(cleared, [["PAGELATCH_EX", "0"]]);
    // Seed 000's guards read sys.objects.
    let objects = rows(&run(
        &mut s,
        "SELECT * FROM sys.objects WHERE object_id = OBJECT_ID(N'dbo.HeavyInsert') AND type in (N'U')",
    ));
    assert_eq!(objects.len(), 1);
    // Seed 004's spinlock DMV: hotpage has no spinlocks to count (README).
    assert_eq!(
        fail(
            &mut s,
            "SELECT * FROM sys.dm_os_spinlock_stats\nWHERE backoffs > 0\nORDER BY spins DESC"
        )
        .sqlstate,
        "0A000"
    );
}

#[test]
fn seed_002_physical_stats_queries_after_the_procedure() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(&mut s, include_str!("tsql/seed002_procedure.sql"));
    run(
        &mut s,
        "-- Execution of stored procedures for 10,000 rows
EXEC dbo.InsertCustomerData @NumOfRecords = 10000;
GO",
    );
    let out = rows(&run(
        &mut s,
        "SELECT     page_count,
        record_count,
        record_count / page_count       AS      avg_rows_per_page,
        avg_page_space_used_in_percent
FROM    sys.dm_db_index_physical_stats
        (
        DB_ID(),
        OBJECT_ID(N'dbo.Customers', N'U'),
        NULL,
        NULL,
        N'DETAILED'
        )
WHERE   index_level = 0;
GO",
    ));
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(number(&out[0][1]), 10_000);
    // 2,000-byte rows on 8 KiB pages: the article's "two or three records" (hotpage's
    // heap fills its pages: three).
    let per_page = number(&out[0][2]);
    assert!((2..=4).contains(&per_page), "{out:?}");
}

#[test]
fn a_subquery_reading_an_unqualified_outer_column_is_refused() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE TABLE dbo.a (id int NOT NULL PRIMARY KEY CLUSTERED, k int NOT NULL)
CREATE TABLE dbo.b (id2 int NOT NULL PRIMARY KEY CLUSTERED, v int NOT NULL)
GO
INSERT INTO dbo.a (id, k) VALUES (1, 10)
INSERT INTO dbo.a (id, k) VALUES (2, 20)
INSERT INTO dbo.b (id2, v) VALUES (1, 20)",
    );
    // `k` and `id` are the outer query's columns, named without their table: SQL Server
    // runs these correlated; hotpage runs a subquery once, first, so it refuses them.
    for query in [
        "SELECT id FROM dbo.a WHERE EXISTS (SELECT * FROM dbo.b WHERE v = k)",
        "SELECT id FROM dbo.a WHERE k IN (SELECT v FROM dbo.b WHERE id2 = id)",
        "SELECT id FROM dbo.a WHERE NOT EXISTS (SELECT 1 WHERE k > 10)",
        "IF EXISTS (SELECT * FROM dbo.b WHERE v = k) PRINT 'yes'",
        "SELECT name FROM sys.objects WHERE EXISTS (SELECT * FROM dbo.b WHERE v = object_id)",
    ] {
        let error = fail(&mut s, query);
        assert_eq!(error.sqlstate, "0A000", "{query}: {error:?}");
        assert!(error.message.contains("correlated"), "{query}: {error:?}");
    }
    // A name the subquery's own table has is its own (SQL's scoping): not correlated.
    let out = rows(&run(
        &mut s,
        "SELECT id FROM dbo.a WHERE k IN (SELECT v FROM dbo.b WHERE v > 0)",
    ));
    assert_eq!(out, [["2"]]);
}

#[test]
fn computed_columns_are_computed_on_insert_or_refused_by_name() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE TABLE dbo.c (
    id int NOT NULL PRIMARY KEY CLUSTERED,
    qty int NOT NULL,
    price int NOT NULL DEFAULT (7),
    total AS (qty * price) PERSISTED,
    shown AS CAST(qty AS varchar(10)) PERSISTED)
GO
INSERT INTO dbo.c (id, qty) VALUES (1, 3)
INSERT INTO dbo.c (id, qty, price) VALUES (2, 4, 10)",
    );
    let out = rows(&run(
        &mut s,
        "SELECT id, total, shown FROM dbo.c ORDER BY id",
    ));
    assert_eq!(out, [["1", "21", "3"], ["2", "40", "4"]]);
    // A value for a computed column is refused (SQL Server error 271).
    assert_eq!(
        fail(
            &mut s,
            "INSERT INTO dbo.c (id, qty, total) VALUES (3, 1, 5)"
        )
        .sqlstate,
        "428C9"
    );
    // Seed 000's comment's inline bit reversal reads the IDENTITY, which the engine makes
    // after the row is built: refused, naming the column, never stored as NULL.
    let error = fail(
        &mut s,
        "CREATE TABLE dbo.d (ID int IDENTITY(1,1) NOT NULL, col1 varchar(24), IDRev AS (ID * 2) PERSISTED)",
    );
    assert_eq!(error.sqlstate, "0A000");
    assert!(error.message.contains("\"idrev\""), "{error:?}");
    assert!(error.message.contains("\"id\""), "{error:?}");
    // The PostgreSQL dialect's stored generated columns are the same path.
    let mut pg = sql.session();
    pg.execute(
        "CREATE TABLE g (id int PRIMARY KEY, a int NOT NULL, b int GENERATED ALWAYS AS (a + 1) STORED)",
    )
    .expect("create");
    pg.execute("INSERT INTO g (id, a) VALUES (1, 41)")
        .expect("insert");
    let results = pg.execute("SELECT b FROM g").expect("select");
    assert_eq!(results[0].rows, [[hotpage_sql::Value::Int(42)]]);
    let error = pg
        .execute("CREATE TABLE h (a int NOT NULL, b int GENERATED ALWAYS AS (a + 1) STORED, c int GENERATED ALWAYS AS (b + 1) STORED)")
        .expect_err("reads a generated column");
    assert_eq!(error.sqlstate, "0A000");
    assert!(error.message.contains("\"c\""), "{error:?}");
}

#[test]
fn output_parameters_and_dynamic_exec() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE PROC dbo.add_two @x int, @sum int OUTPUT, @note varchar(20) = 'none' OUT
AS
BEGIN
    SET @sum = @x + 2
    SET @note = 'added'
END
GO",
    );
    let out = rows(&run(
        &mut s,
        "DECLARE @s bigint = 0, @n varchar(20) = 'before'
EXEC dbo.add_two 40, @s OUTPUT, @note = @n OUTPUT
SELECT @s, @n",
    ));
    assert_eq!(out, [["42", "added"]]);
    // Without OUTPUT at the call the caller's variable keeps its value.
    let out = rows(&run(
        &mut s,
        "DECLARE @s int = 7\nEXEC dbo.add_two 1, @s\nSELECT @s",
    ));
    assert_eq!(out, [["7"]]);
    // OUTPUT on a parameter not declared OUTPUT (SQL Server error 8162); on a constant.
    let error = fail(
        &mut s,
        "DECLARE @v int\nEXEC dbo.add_two @v OUTPUT, @v OUTPUT",
    );
    assert_eq!(error.sqlstate, "22023", "{error:?}");
    assert!(error.message.contains("8162"), "{error:?}");
    assert_eq!(
        fail(&mut s, "EXEC dbo.add_two 1, 5 OUTPUT").sqlstate,
        "42601"
    );
    // Dynamic SQL: EXEC ('…'), EXEC (@sql) with + , sp_executesql N'…'; its own scope.
    run(
        &mut s,
        "CREATE TABLE dbo.dyn (id int NOT NULL PRIMARY KEY CLUSTERED)",
    );
    run(
        &mut s,
        "EXEC ('INSERT INTO dbo.dyn (id) VALUES (1)')
DECLARE @sql nvarchar(200) = N'INSERT INTO dbo.dyn (id) VALUES (' + CONVERT(varchar(10), 2) + N')'
EXEC (@sql)
EXECUTE sp_executesql N'INSERT INTO dbo.dyn (id) VALUES (3)'
SET @sql = N'INSERT INTO dbo.dyn (id) VALUES (4)'
EXEC sp_executesql @sql",
    );
    let out = rows(&run(&mut s, "SELECT count(*) FROM dbo.dyn"));
    assert_eq!(out, [["4"]]);
    let out = run(&mut s, "EXEC ('SELECT 5 AS five PRINT ''printed''')");
    assert!(
        out.contains(&TsqlOutput::Print("printed".into())),
        "{out:?}"
    );
    assert_eq!(rows(&out), [["5"]]);
    let error = fail(&mut s, "DECLARE @x int = 1\nEXEC ('SELECT @x')");
    assert_eq!(
        error.sqlstate, "42704",
        "the caller's variable is not in scope: {error:?}"
    );
    assert_eq!(fail(&mut s, "EXEC (42)").sqlstate, "42804");
}

/// Seed 001's "top wait script" (`tsql/seed001_top_waits.sql`) after 200 sync inserts:
/// it runs as T-SQL readers write it (a CTE with window functions, a self-join, `N'…' +`
/// text) and ranks the waits: WRITELOG is among them, shares fall from the top, each row
/// reads its own type's figures, and the signal wait hotpage does not measure is NULL.
#[test]
fn seed_001_top_waits_script_ranks_the_waits() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE TABLE dbo.t (Id bigint IDENTITY(1,1) NOT NULL PRIMARY KEY CLUSTERED, Status nvarchar(max) NOT NULL)\nGO\n\
         DECLARE @i int = 0\nWHILE @i < 200\nBEGIN\n  INSERT INTO dbo.t (Status) VALUES (N'x')\n  SET @i += 1\nEND\nGO",
    );
    let (columns, waits) = table(&run(&mut s, include_str!("tsql/seed001_top_waits.sql")));
    assert_eq!(
        columns,
        [
            "waittype",
            "wait_s",
            "resource_s",
            "signal_s",
            "waitcount",
            "percentage",
            "avgwait_s",
            "help/info url"
        ]
    );
    assert!(waits.iter().any(|w| w[0] == "WRITELOG"), "{waits:?}");
    let shares: Vec<f64> = waits
        .iter()
        .map(|w| w[5].parse().expect("a percentage"))
        .collect();
    assert!(shares.windows(2).all(|p| p[0] >= p[1]), "{waits:?}");
    assert!(
        shares.iter().all(|p| (0.0..=100.0).contains(p)),
        "{waits:?}"
    );
    for w in &waits {
        assert!(number(&w[4]) > 0, "{w:?}");
        assert_eq!(w[3], "NULL", "signal wait: {w:?}");
        assert_eq!(
            w[7],
            format!("https://www.sqlskills.com/help/waits/{}", w[0])
        );
    }
}
