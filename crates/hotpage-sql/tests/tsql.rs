//! T-SQL (`TsqlSession`): the seed articles' scripts as written (split on GO, every batch
//! run, the tables in the designs the articles' DDL calls for, the insert loops from 8
//! sessions), and each T-SQL form with its errors.

use hotpage::{Database, MemStorage, Options, Storage};
use hotpage_sql::{SqlDatabase, SqlError, TsqlBatch, TsqlOutput, TsqlSession, Value};
use std::path::Path;
use std::sync::Arc;

mod common;
use common::open_on;

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

/// The first value of the last result with rows.
fn scalar(outputs: &[TsqlOutput]) -> Value {
    outputs
        .iter()
        .rev()
        .find_map(|o| match o {
            TsqlOutput::Result(r) if r.has_rows() => Some(r.rows[0][0].clone()),
            _ => None,
        })
        .expect("a result with rows")
}

fn count(session: &mut TsqlSession, table: &str) -> Value {
    scalar(&run(session, &format!("SELECT count(*) FROM dbo.{table}")))
}

fn design(engine: &Database, table: &str) -> String {
    engine.table(table).expect("table").design().to_string()
}

const SEED001: &str = include_str!("tsql/seed001_last_page_insert.sql");
const SEED001_PUBLISHED: &str = include_str!("tsql/seed001_as_published.txt");

/// Seed 001's ostress statement: `ostress … -Q"INSERT INTO dbo.[TestTable_V1] ([Status]) VALUES ('CREATED');"`.
const SEED001_INSERT: &str = "INSERT INTO dbo.[TestTable_V1] ([Status]) VALUES ('CREATED');";

fn without_blanks_and_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("-- "))
        .flat_map(|l| l.chars())
        .filter(|c| !c.is_whitespace())
        .collect()
}

#[test]
fn the_seed_001_fixture_is_the_published_text() {
    assert_eq!(
        without_blanks_and_comments(SEED001),
        without_blanks_and_comments(SEED001_PUBLISHED)
    );
}

#[test]
fn seed_001_runs_and_its_tables_land_in_their_designs() {
    let (engine, sql) = open();
    let mut session = TsqlSession::new(sql.session());
    let batches = hotpage_sql::split_batches(SEED001).unwrap();
    assert_eq!(batches.len(), 14);
    run(&mut session, SEED001);
    for (table, expected) in [
        ("testtable_v1", "identity"),
        ("testtable_v2", "identity-flow-control"),
        ("testtable_v3", "heap-nc-identity"),
        ("testtable_v4", "guid"),
        ("testtable_v5", "hash-prefix"),
        ("testtable_v6", "memory"),
    ] {
        assert_eq!(design(&engine, table), expected, "{table}");
    }
    // Each table takes the article's INSERT: the key and CreateDate come from defaults.
    for v in 1..=6 {
        let insert = SEED001_INSERT.replace("V1", &format!("V{v}"));
        let loop_batch = format!(
            "SET NOCOUNT ON\nDECLARE @i int = 0\nWHILE @i < 25\nBEGIN\n{insert}\nSET @i += 1\nEND\nGO 2"
        );
        run(&mut session, &loop_batch);
        assert_eq!(
            count(&mut session, &format!("TestTable_V{v}")),
            Value::Int(50)
        );
        let out = run(
            &mut session,
            &format!(
                "SELECT count(*) FROM dbo.TestTable_V{v} WHERE CreateDate IS NULL OR Id IS NULL"
            ),
        );
        assert_eq!(scalar(&out), Value::Int(0));
    }
    let out = run(
        &mut session,
        "SELECT max(HashValue), min(HashValue), count(*) FROM [dbo].[TestTable_V5] WHERE HashValue = Id % 16",
    );
    assert_eq!(scalar(&out), Value::Int(15));
}

#[test]
fn seed_001_insert_runs_from_8_sessions() {
    let (engine, sql) = open();
    run(&mut TsqlSession::new(sql.session()), SEED001);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let sql = Arc::clone(&sql);
            std::thread::spawn(move || {
                let mut session = TsqlSession::new(sql.session());
                for v in [1, 5] {
                    let insert = SEED001_INSERT.replace("V1", &format!("V{v}"));
                    run(&mut session, &format!("{insert}\nGO 40"));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut session = TsqlSession::new(sql.session());
    assert_eq!(count(&mut session, "TestTable_V1"), Value::Int(320));
    assert_eq!(count(&mut session, "TestTable_V5"), Value::Int(320));
    drop(session);
    assert_eq!(design(&engine, "testtable_v5"), "hash-prefix");
}

#[test]
fn seed_000_heavy_insert_becomes_identity_and_its_loop_runs() {
    let (engine, sql) = open();
    let mut session = TsqlSession::new(sql.session());
    let setup = include_str!("tsql/seed000_heavy_insert.sql");
    run(&mut session, setup);
    assert_eq!(design(&engine, "heavyinsert"), "identity");
    // Its guards see the table now: the same script drops and re-makes it.
    run(&mut session, setup);
    assert_eq!(design(&engine, "heavyinsert"), "identity");
    // The loop as written inserts 99,999 rows; from 8 sessions at a tenth of that here.
    let insert_loop = include_str!("tsql/seed000_insert_loop.sql");
    assert!(insert_loop.contains("WHILE @i < 100000"));
    let shorter = insert_loop.replace("100000", "1001");
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let sql = Arc::clone(&sql);
            let script = shorter.clone();
            std::thread::spawn(move || run(&mut TsqlSession::new(sql.session()), &script))
        })
        .collect();
    for t in threads {
        assert!(t.join().unwrap().is_empty(), "NOCOUNT ON: no output");
    }
    assert_eq!(count(&mut session, "HeavyInsert"), Value::Int(8000));
    let out = run(&mut session, "SELECT max(ID) FROM dbo.HeavyInsert");
    assert_eq!(scalar(&out), Value::Int(8000));
}

#[test]
fn seed_002_heap_and_guarded_drop() {
    let (engine, sql) = open();
    let mut session = TsqlSession::new(sql.session());
    run(&mut session, include_str!("tsql/seed002_heap.sql"));
    assert_eq!(design(&engine, "customers"), "heap");
    run(
        &mut session,
        "INSERT INTO dbo.Customers (C2) DEFAULT VALUES;\nGO 3",
    );
    let out = run(
        &mut session,
        "SELECT TOP (1) C1, C2 FROM dbo.Customers WITH (NOLOCK) ORDER BY C1 DESC",
    );
    assert_eq!(scalar(&out), Value::Int(3));
    run(&mut session, include_str!("tsql/seed002_heap.sql"));
    assert_eq!(count(&mut session, "Customers"), Value::Int(0));
    let demo = include_str!("tsql/seed002_demo_table.sql");
    run(&mut session, demo);
    run(
        &mut session,
        "INSERT INTO dbo.demo_table(C1) VALUES ('This is a test');",
    );
    run(&mut session, demo);
    assert_eq!(count(&mut session, "demo_table"), Value::Int(0));
    assert_eq!(design(&engine, "demo_table"), "heap");
}

#[test]
fn variables_and_control_flow() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    let out = run(
        &mut s,
        "DECLARE @i int = 1, @total bigint = 0, @name nvarchar(20) = N'x'
         WHILE @i <= 10
         BEGIN
             IF (@i % 2) = 0
                 SET @total += @i
             ELSE
             BEGIN
                 SET @total -= 1
                 SET @name = @name + 'y'
             END
             SET @i += 1
         END
         SELECT @i = @i * 2
         PRINT @total
         PRINT @name
         SELECT @i, @total",
    );
    assert_eq!(out[0], TsqlOutput::Print("25".into()));
    assert_eq!(out[1], TsqlOutput::Print("xyyyyy".into()));
    let TsqlOutput::Result(last) = &out[2] else {
        panic!("{out:?}")
    };
    assert_eq!(last.rows, vec![vec![Value::Int(22), Value::Int(25)]]);
}

#[test]
fn variables_end_with_their_batch_and_errors_carry_sql_server_numbers() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    let error = fail(&mut s, "DECLARE @i int = 1\nGO\nSELECT @i");
    assert_eq!(error.sqlstate, "42704");
    assert!(error.message.contains("137"), "{error:?}");
    let error = fail(&mut s, "DECLARE @i int DECLARE @i int");
    assert!(error.message.contains("134"), "{error:?}");
    let error = fail(&mut s, "DECLARE @i tinyint = 1 DECLARE @x geography");
    assert!(error.message.contains("2715"), "{error:?}");
    let error = fail(&mut s, "DECLARE @i int = 'abc'");
    assert_eq!(error.sqlstate, "22P02");
    let error = fail(&mut s, "IF 1 PRINT 'x'");
    assert!(error.message.contains("4145"), "{error:?}");
    assert_eq!(fail(&mut s, "SELECT 1\nGO 0").sqlstate, "42601");
    assert_eq!(fail(&mut s, "SET IDENTITY_INSERT t ON").sqlstate, "0A000");
    assert_eq!(fail(&mut s, "EXEC dbo.p").sqlstate, "42883");
    // The batch stops at its first error; the script at that batch.
    let (out, error) = s.execute_script("PRINT 'a'\nSELECT nope\nPRINT 'b'\nGO\nPRINT 'c'");
    assert_eq!(out, vec![TsqlOutput::Print("a".into())]);
    assert_eq!(error.unwrap().sqlstate, "42703");
}

#[test]
fn transactions() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE TABLE t (id int IDENTITY(1,1) PRIMARY KEY, a int)",
    );
    run(
        &mut s,
        "BEGIN TRAN\nINSERT INTO t (a) VALUES (1)\nROLLBACK TRAN\nBEGIN TRANSACTION x\nINSERT t (a) VALUES (2)\nCOMMIT TRANSACTION x",
    );
    let out = run(&mut s, "SELECT a FROM t");
    assert_eq!(scalar(&out), Value::Int(2));
    let out = run(&mut s, "BEGIN TRAN SELECT @@TRANCOUNT COMMIT");
    assert_eq!(scalar(&out), Value::Int(1));
}

#[test]
fn identity_rowcount_output_top_and_insert_select() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE TABLE [dbo].[o] ([Id] [bigint] IDENTITY(10,5) NOT NULL, [Status] [nvarchar](max) NOT NULL, [At] datetime2 NOT NULL DEFAULT (getdate()), [Flag] bit NULL,
         CONSTRAINT [PK_o] PRIMARY KEY CLUSTERED ([Id] ASC))",
    );
    let out = run(
        &mut s,
        "INSERT INTO dbo.o ([Status]) VALUES ('a'), ('b')\nSELECT @@ROWCOUNT, SCOPE_IDENTITY(), @@IDENTITY",
    );
    let TsqlOutput::Result(r) = out.last().unwrap() else {
        panic!("{out:?}")
    };
    assert_eq!(
        r.rows,
        vec![vec![Value::Int(2), Value::Int(15), Value::Int(15)]]
    );
    let out = run(
        &mut s,
        "INSERT INTO dbo.o (Status) OUTPUT INSERTED.* VALUES ('c')",
    );
    let TsqlOutput::Result(r) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(r.columns.len(), 4);
    assert_eq!(r.rows[0][0], Value::Int(20));
    let out = run(
        &mut s,
        "INSERT INTO dbo.o (Status) OUTPUT INSERTED.Id, inserted.[Status] VALUES ('d')",
    );
    assert_eq!(scalar(&out), Value::Int(25));
    run(
        &mut s,
        "DECLARE @v nvarchar(10) = 'e' INSERT INTO dbo.o (Status, Flag) SELECT @v + 'f', 1",
    );
    let out = run(
        &mut s,
        "SELECT TOP (2) Status FROM dbo.o WITH (NOLOCK) ORDER BY Id DESC",
    );
    let TsqlOutput::Result(r) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(
        r.rows,
        vec![
            vec![Value::Text("ef".into())],
            vec![Value::Text("d".into())]
        ]
    );
    let out = run(&mut s, "SELECT TOP 1 Id FROM o ORDER BY Id");
    assert_eq!(scalar(&out), Value::Int(10));
    assert_eq!(
        fail(&mut s, "INSERT INTO o (Id, Status) VALUES (1, 'x')").sqlstate,
        "428C9"
    );
}

#[test]
fn guards_object_id_and_drop() {
    let (engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    let guarded = "IF OBJECT_ID(N'dbo.g', N'U') IS NOT NULL DROP TABLE dbo.g
        IF NOT EXISTS (SELECT * FROM sys.objects WHERE object_id = OBJECT_ID(N'[dbo].[g]') AND type in (N'U'))
        CREATE TABLE dbo.g (a int)";
    run(&mut s, guarded);
    run(&mut s, "INSERT INTO g (a) VALUES (1)");
    run(&mut s, guarded);
    assert_eq!(count(&mut s, "g"), Value::Int(0));
    let out = run(&mut s, "SELECT OBJECT_ID(N'dbo.g'), OBJECT_ID('nope')");
    let TsqlOutput::Result(r) = &out[0] else {
        panic!("{out:?}")
    };
    assert!(matches!(r.rows[0][0], Value::Int(n) if n > 0));
    assert_eq!(r.rows[0][1], Value::Null);
    run(
        &mut s,
        "DROP TABLE IF EXISTS dbo.g; DROP TABLE IF EXISTS dbo.g",
    );
    assert!(engine.table("g").is_err());
    assert_eq!(fail(&mut s, "DROP TABLE dbo.g").sqlstate, "42P01");
    // sys.objects is a view: any query on it runs (g is gone).
    let out = run(
        &mut s,
        "IF EXISTS (SELECT * FROM sys.objects WHERE name = 'g') PRINT 1 ELSE PRINT 0",
    );
    assert_eq!(out, [TsqlOutput::Print("0".into())]);
}

#[test]
fn ddl_forms_and_their_errors() {
    let (engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE TABLE q (Id uniqueidentifier NOT NULL DEFAULT NEWSEQUENTIALID() PRIMARY KEY CLUSTERED, b tinyint)
         CREATE TABLE m (Id bigint IDENTITY(1,1) NOT NULL PRIMARY KEY NONCLUSTERED, c datetime DEFAULT sysdatetime())
             WITH (MEMORY_OPTIMIZED = ON, DURABILITY = SCHEMA_ONLY)",
    );
    assert_eq!(design(&engine, "q"), "guid-v7");
    assert_eq!(design(&engine, "m"), "memory");
    assert!(engine.table("m").unwrap().is_unlogged());
    run(
        &mut s,
        "INSERT INTO q (b) VALUES (1) INSERT INTO m DEFAULT VALUES",
    );
    assert_eq!(count(&mut s, "m"), Value::Int(1));
    // The design is fixed once the table has rows.
    let error = fail(&mut s, "ALTER TABLE q ADD DEFAULT (1) FOR b");
    assert_eq!(error.sqlstate, "0A000");
    for (bad, state) in [
        ("CREATE TABLE d (a int, a int)", "42701"),
        (
            "CREATE TABLE d (a int PRIMARY KEY, b int, PRIMARY KEY (b))",
            "42P16",
        ),
        ("CREATE TABLE d (a geography)", "42704"),
        ("CREATE TABLE d (a int, h AS (a % 4))", "0A000"),
        ("CREATE TABLE d (a int PRIMARY KEY NONCLUSTERED)", "0A000"),
        // SQL Server error 2726: no such partition scheme.
        ("CREATE TABLE d (a int) ON ps_hash(a)", "42704"),
        ("CREATE NONCLUSTERED INDEX ix ON q (b)", "0A000"),
        (
            "CREATE TABLE d (a int PRIMARY KEY) CREATE CLUSTERED INDEX c ON d (a)",
            "42P16",
        ),
        ("ALTER TABLE q ADD DEFAULT (1) FOR nope", "42703"),
        ("CREATE TABLE d (a int CHECK (a > 0))", "0A000"),
        ("CREATE TABLE d (a int", "42601"),
    ] {
        let error = fail(&mut s, &format!("DROP TABLE IF EXISTS d\nGO\n{bad}"));
        assert_eq!(error.sqlstate, state, "{bad}: {error:?}");
    }
}

#[test]
fn wait_stats_dmv_and_dbcc_sqlperf() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(&mut s, "DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR);");
    let out = run(
        &mut s,
        "SELECT wait_type, waiting_tasks_count, wait_time_ms, max_wait_time_ms FROM sys.dm_os_wait_stats WHERE wait_type = 'PAGELATCH_EX'",
    );
    let TsqlOutput::Result(r) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(r.rows.len(), 1);
    assert_eq!(r.rows[0][1], Value::Int(0));
    // The article's database 9: hotpage has one, id 1.
    assert_eq!(fail(&mut s, "DBCC PAGE(9, 1, 197381, 0)").sqlstate, "22023");
    assert_eq!(
        fail(&mut s, "SELECT * FROM sys.dm_exec_sessions").sqlstate,
        "0A000"
    );
}

#[test]
fn sequences_and_next_value_for() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "IF EXISTS (SELECT * FROM sys.objects WHERE object_id = OBJECT_ID(N'dbo.seqAdvWorks') AND type in (N'SO'))
DROP SEQUENCE dbo.seqAdvWorks
IF NOT EXISTS (SELECT * FROM sys.objects WHERE object_id = OBJECT_ID(N'dbo.seqAdvWorks') AND type in (N'SO'))
CREATE SEQUENCE dbo.seqAdvWorks AS int
START WITH 1
INCREMENT BY 1
START WITH 1
CACHE 10000
GO",
    );
    let out = run(
        &mut s,
        "DECLARE @value int\nSELECT @value = NEXT VALUE FOR dbo.seqAdvWorks\nSELECT @value = NEXT VALUE FOR dbo.seqAdvWorks\nSELECT @value",
    );
    assert_eq!(scalar(&out), Value::Int(2));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Any mix of T-SQL words runs to a result or an error: never a panic or a hang.
    #[test]
    fn arbitrary_batches_never_panic(words in proptest::collection::vec(
        proptest::sample::select(vec![
            "BEGIN", "END", "IF", "ELSE", "WHILE", "SET", "@i", "+=", "=", "<", "DECLARE", "int",
            "(", ")", ",", ";", "SELECT", "INSERT", "INTO", "t", "VALUES", "1", "0", "CASE",
            "WHEN", "THEN", "TRAN", "COMMIT", "ROLLBACK", "PRINT", "EXISTS", "DROP", "TABLE",
            "\nGO\n", "N'x'", "[a]", "dbo", ".", "TOP", "OUTPUT", "INSERTED", "*", "DEFAULT",
            "NOT", "CREATE", "ALTER", "ADD", "FOR", "IDENTITY(1,1)", "PRIMARY", "KEY",
            "CLUSTERED", "OBJECT_ID(N't')", "IS", "NULL", "CONVERT(tinyint, 1)", "%",
            "sys.objects", "DBCC", "SQLPERF",
        ]),
        0..40,
    )) {
        let (_engine, sql) = open();
        let mut s = TsqlSession::new(sql.session());
        // WHILE becomes IF here: random words could make a loop that never ends, as it
        // would in SQL Server (the parser's own proptest takes WHILE).
        let script = words.join(" ").replace("WHILE", "IF");
        let _ = s.execute_script(&format!("DECLARE @i int = 0\n{script}"));
    }
}

#[test]
fn exec_requests_shows_the_running_statement() {
    let (_engine, sql) = open();
    let _idle = sql.session();
    let mut s = TsqlSession::new(sql.session());
    let pid = s.sql_session().pid();
    let out = run(
        &mut s,
        "SELECT session_id, status, command, wait_type, wait_time, wait_resource FROM sys.dm_exec_requests",
    );
    let TsqlOutput::Result(r) = &out[0] else {
        panic!("{out:?}")
    };
    // The idle session is no request; the querying one is, running its SELECT.
    assert_eq!(r.rows.len(), 1, "{r:?}");
    assert_eq!(r.rows[0][0], Value::Int(i64::from(pid)));
    assert_eq!(r.rows[0][1], Value::Text("running".into()));
    assert_eq!(r.rows[0][2], Value::Text("SELECT".into()));
    assert_eq!(r.rows[0][3], Value::Null);
    let out = run(&mut s, "SELECT ISNULL(NULL, 3), LEN(N'abc')");
    let TsqlOutput::Result(r) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(r.rows[0], vec![Value::Int(3), Value::Int(3)]);
}

/// Seed 000's ufn_BitReverse: the low 31 bits of `v` in reverse order.
fn bit_reverse_31(v: i64) -> i64 {
    i64::from((v as u32).reverse_bits() >> 1)
}

#[test]
fn seed_000_bit_reversal_function_and_loop_run() {
    let (engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    let setup = include_str!("tsql/seed000_bit_reversal.sql");
    run(&mut s, setup);
    // Run twice: the guards drop what the first run made.
    run(&mut s, setup);
    // A user key: the IDs come from the INSERTs (bit-reversal done by the function).
    assert_eq!(design(&engine, "heavyinsert_bitreversal"), "user-key");
    let out = run(
        &mut s,
        "SELECT dbo.ufn_BitReverse(1), dbo.ufn_BitReverse(347), [dbo].[ufn_BitReverse](2147483646)",
    );
    let TsqlOutput::Result(r) = &out[0] else {
        panic!("{out:?}")
    };
    // The article's own examples: 347 -> 1832910848, 2147483646 -> 1073741823.
    assert_eq!(
        r.rows[0],
        vec![
            Value::Int(1 << 30),
            Value::Int(1_832_910_848),
            Value::Int(1_073_741_823)
        ]
    );
    let insert_loop = include_str!("tsql/seed000_bit_reversal_loop.sql");
    assert!(insert_loop.contains("WHILE @i < 100000"));
    run(&mut s, &insert_loop.replace("100000", "201"));
    let out = run(
        &mut s,
        "SELECT ID FROM dbo.HeavyInsert_BitReversal ORDER BY ID",
    );
    let TsqlOutput::Result(r) = &out[0] else {
        panic!("{out:?}")
    };
    let mut expected: Vec<i64> = (1..=200).map(bit_reverse_31).collect();
    expected.sort_unstable();
    let got: Vec<i64> = r
        .rows
        .iter()
        .map(|row| match row[0] {
            Value::Int(n) => n,
            ref other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(got, expected);
    // Errors: arity, a missing function, a body without RETURN.
    assert_eq!(
        fail(&mut s, "SELECT dbo.ufn_BitReverse(1, 2)").sqlstate,
        "42883"
    );
    run(&mut s, "DROP FUNCTION dbo.ufn_BitReverse");
    assert_eq!(
        fail(&mut s, "DROP FUNCTION dbo.ufn_BitReverse").sqlstate,
        "42883"
    );
    run(
        &mut s,
        "CREATE FUNCTION f (@a int) RETURNS int AS BEGIN DECLARE @b int = @a END",
    );
    assert!(fail(&mut s, "SELECT f(1)").message.contains("455"));
    run(
        &mut s,
        "CREATE FUNCTION g (@a int) RETURNS int AS BEGIN RETURN g(@a) END",
    );
    assert_eq!(fail(&mut s, "SELECT g(1)").sqlstate, "54001");
    run(&mut s, "DROP FUNCTION IF EXISTS nope");
    run(
        &mut s,
        "CREATE OR ALTER FUNCTION dbo.twice (@a bigint) RETURNS bigint AS BEGIN RETURN @a * 2 END",
    );
    let out = run(&mut s, "SELECT twice(twice(5)) + 1");
    assert_eq!(scalar(&out), Value::Int(21));
    let error = fail(&mut s, "SELECT twice(ID) FROM dbo.HeavyInsert_BitReversal");
    assert_eq!(error.sqlstate, "0A000");
}

#[test]
fn index_physical_stats_and_object_name() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(&mut s, include_str!("tsql/seed002_heap.sql"));
    run(
        &mut s,
        "INSERT INTO dbo.Customers (C2) DEFAULT VALUES;\nGO 10",
    );
    // Seed 002's query, as written.
    let out = run(
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
WHERE   index_level = 0;",
    );
    let TsqlOutput::Result(r) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(r.columns.len(), 4);
    assert_eq!(r.rows.len(), 1, "{r:?}");
    assert_eq!(r.rows[0][1], Value::Int(10));
    let out = run(
        &mut s,
        "DECLARE @id int = OBJECT_ID(N'dbo.Customers') SELECT OBJECT_NAME(@id), OBJECT_NAME(1)",
    );
    let TsqlOutput::Result(r) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(
        r.rows[0],
        vec![Value::Text("customers".into()), Value::Null]
    );
    let error = fail(
        &mut s,
        "SELECT * FROM sys.dm_db_index_physical_stats(DB_ID(), 5, NULL, NULL, NULL)",
    );
    assert_eq!(error.sqlstate, "0A000");
}

fn close(engine: Arc<Database>, sql: Arc<SqlDatabase>) {
    drop(sql);
    Arc::into_inner(engine)
        .expect("the last handle")
        .close()
        .expect("close");
}

#[test]
fn seed_000_hash_partitioned_table_runs_as_written() {
    let mem = MemStorage::new(7);
    let setup = include_str!("tsql/seed000_heavy_insert_hash.sql");
    let insert_loop = include_str!("tsql/seed000_hash_insert_loop.sql");
    assert!(insert_loop.contains("WHILE @i < 100000"));
    let shorter = insert_loop.replace("100000", "101");
    {
        let (engine, sql) = open_on(&mem);
        let mut s = TsqlSession::new(sql.session());
        run(&mut s, setup);
        assert_eq!(design(&engine, "heavyinsert_hash"), "hash-partition");
        assert_eq!(engine.table("heavyinsert_hash").unwrap().roots().len(), 8);
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let sql = Arc::clone(&sql);
                let script = shorter.clone();
                std::thread::spawn(move || run(&mut TsqlSession::new(sql.session()), &script))
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(count(&mut s, "HeavyInsert_Hash"), Value::Int(800));
        // HashID is ID % 8: the partition each row went to.
        let out = run(
            &mut s,
            "SELECT count(*) FROM dbo.HeavyInsert_Hash WHERE HashID = ID % 8 AND HashID >= 0 AND HashID < 8",
        );
        assert_eq!(scalar(&out), Value::Int(800));
        // The scheme and function are the database's: another session sees them.
        let mut other = TsqlSession::new(sql.session());
        let error = fail(
            &mut other,
            "CREATE PARTITION FUNCTION pf_hash (tinyint) AS RANGE LEFT FOR VALUES (0)",
        );
        assert_eq!(error.sqlstate, "42710");
        // In use: the function by the scheme, the scheme by the table.
        assert_eq!(
            fail(&mut other, "DROP PARTITION FUNCTION pf_hash").sqlstate,
            "2BP01"
        );
        assert_eq!(
            fail(&mut other, "DROP PARTITION SCHEME ps_hash").sqlstate,
            "2BP01"
        );
        drop((s, other));
        close(engine, sql);
    }
    // After a reopen the scheme is still there: the seed's script runs again as written
    // (its guard drops the table; the partition function and scheme exist, so the seed's
    // CREATE PARTITION statements are skipped here by running the other batches).
    let (engine, sql) = open_on(&mem);
    let mut s = TsqlSession::new(sql.session());
    assert_eq!(count(&mut s, "HeavyInsert_Hash"), Value::Int(800));
    let batches = hotpage_sql::split_batches(setup).unwrap();
    assert_eq!(batches.len(), 4);
    run(&mut s, &batches[0].text);
    run(&mut s, &batches[3].text);
    assert_eq!(design(&engine, "heavyinsert_hash"), "hash-partition");
    assert_eq!(count(&mut s, "HeavyInsert_Hash"), Value::Int(0));
    // Dropped in order, with their guards.
    run(
        &mut s,
        "DROP TABLE dbo.HeavyInsert_Hash\nDROP PARTITION SCHEME ps_hash\nDROP PARTITION FUNCTION pf_hash\nDROP PARTITION FUNCTION IF EXISTS pf_hash",
    );
    assert_eq!(
        fail(&mut s, "DROP PARTITION SCHEME ps_hash").sqlstate,
        "42704"
    );
    // The whole script runs again, on a clean database.
    run(&mut s, setup);
    assert_eq!(design(&engine, "heavyinsert_hash"), "hash-partition");
}

#[test]
fn partition_forms_and_their_errors() {
    let (engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE PARTITION FUNCTION pf4 (int) AS RANGE RIGHT FOR VALUES (1, 2, 3)
CREATE PARTITION FUNCTION pf2 (int) AS RANGE LEFT FOR VALUES (0)
CREATE PARTITION FUNCTION pf_lumps (int) AS RANGE LEFT FOR VALUES (1, 3)
CREATE PARTITION SCHEME ps4 AS PARTITION pf4 TO ([PRIMARY], [PRIMARY], [PRIMARY], [PRIMARY])
CREATE PARTITION SCHEME ps_lumps AS PARTITION pf_lumps ALL TO ([PRIMARY])",
    );
    // ON the scheme in CREATE TABLE, after the primary key.
    run(
        &mut s,
        "CREATE TABLE t4 (id bigint IDENTITY(1,1) NOT NULL, h AS (id % 4) PERSISTED, v int,
            CONSTRAINT pk PRIMARY KEY CLUSTERED (id, h)) ON ps4(h)",
    );
    assert_eq!(design(&engine, "t4"), "hash-partition");
    assert_eq!(engine.table("t4").unwrap().roots().len(), 4);
    run(&mut s, "INSERT INTO t4 (v) VALUES (1)\nGO 9");
    assert_eq!(count(&mut s, "t4"), Value::Int(9));
    let cases = [
        // Too few filegroups for the function's partitions.
        (
            "CREATE PARTITION SCHEME ps_few AS PARTITION pf4 TO ([PRIMARY])",
            "22023",
        ),
        (
            "CREATE PARTITION SCHEME ps_x AS PARTITION nope ALL TO ([PRIMARY])",
            "42704",
        ),
        (
            "CREATE PARTITION FUNCTION pf_bad (int) AS RANGE LEFT FOR VALUES (3, 1)",
            "22023",
        ),
        (
            "CREATE PARTITION FUNCTION pf_date (datetime) AS RANGE LEFT FOR VALUES ('2020-01-01')",
            "0A000",
        ),
        (
            "CREATE PARTITION FUNCTION pf_s (int) AS RANGE LEFT FOR VALUES ('a')",
            "22023",
        ),
        // A function that puts residues 0 and 1 together.
        (
            "CREATE TABLE t_l (id int IDENTITY, h AS (id % 4) PERSISTED, PRIMARY KEY CLUSTERED (id, h) ON ps_lumps(h))",
            "0A000",
        ),
        // Not a computed key % N column; an unknown scheme; a heap; the column not in the key.
        (
            "CREATE TABLE t_c (id int IDENTITY, v int, PRIMARY KEY CLUSTERED (id) ON ps4(v))",
            "0A000",
        ),
        (
            "CREATE TABLE t_u (id int IDENTITY, h AS (id % 4) PERSISTED, PRIMARY KEY CLUSTERED (id, h) ON nope(h))",
            "42704",
        ),
        (
            "CREATE TABLE t_h (id int IDENTITY, h AS (id % 4) PERSISTED) ON ps4(h)",
            "0A000",
        ),
        (
            "CREATE TABLE t_k (id int IDENTITY, h AS (id % 4) PERSISTED, PRIMARY KEY CLUSTERED (id) ON ps4(h))",
            "42P16",
        ),
        (
            "CREATE TABLE t_m (id int IDENTITY, h AS (id % 4) PERSISTED, PRIMARY KEY CLUSTERED (id, h) ON ps4(nope))",
            "42703",
        ),
        // Residues that need more partitions than the function has.
        (
            "CREATE TABLE t_8 (id int IDENTITY, h AS (id % 8) PERSISTED, PRIMARY KEY CLUSTERED (id, h) ON ps4(h))",
            "0A000",
        ),
        ("DROP PARTITION SCHEME ps4", "2BP01"),
        ("DROP PARTITION FUNCTION nope", "42704"),
    ];
    for (statement, sqlstate) in cases {
        assert_eq!(fail(&mut s, statement).sqlstate, sqlstate, "{statement}");
    }
    // Guarded by the catalog views SQL Server scripts use.
    run(
        &mut s,
        "IF EXISTS (SELECT * FROM sys.partition_schemes WHERE name = N'ps_lumps')
    DROP PARTITION SCHEME ps_lumps
IF NOT EXISTS (SELECT * FROM sys.partition_schemes WHERE name = N'ps_lumps')
    PRINT 'gone'
IF EXISTS (SELECT * FROM sys.partition_functions WHERE name = N'pf_lumps')
    DROP PARTITION FUNCTION pf_lumps",
    );
    assert_eq!(
        fail(&mut s, "DROP PARTITION FUNCTION pf_lumps").sqlstate,
        "42704"
    );
}

/// Statements are prepared once per session and run with the variables' values: what
/// they read must still be right when types, tables, functions and counters change.
#[test]
fn prepared_statements_follow_types_tables_functions_and_counters() {
    let (engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    // The same tokens with an int and then a text variable: `+` adds, then concatenates.
    let out = run(&mut s, "DECLARE @a int = 2 SELECT @a + @a");
    assert_eq!(scalar(&out), Value::Int(4));
    let out = run(&mut s, "DECLARE @a varchar(5) = '2' SELECT @a + @a");
    assert_eq!(scalar(&out), Value::Text("22".into()));
    // @@ROWCOUNT and SCOPE_IDENTITY() are read each time, not fixed at the first run.
    run(
        &mut s,
        "CREATE TABLE t (id int IDENTITY(1,1) PRIMARY KEY CLUSTERED, v int)",
    );
    let out = run(
        &mut s,
        "DECLARE @i int = 0, @sum bigint = 0
WHILE @i < 5
BEGIN
    INSERT INTO t (v) VALUES (@i)
    SET @sum += SCOPE_IDENTITY() * @@ROWCOUNT
    SET @i += 1
END
SELECT @sum",
    );
    assert_eq!(scalar(&out), Value::Int(15));
    // A table dropped and made again (here, and by another session) between two runs of
    // the same loop: the second run inserts into the new table.
    let insert_loop =
        "DECLARE @i int = 0 WHILE @i < 3 BEGIN INSERT INTO t (v) VALUES (@i) SET @i += 1 END";
    run(&mut s, insert_loop);
    let mut other = TsqlSession::new(sql.session());
    run(
        &mut other,
        "DROP TABLE t CREATE TABLE t (id int IDENTITY(1,1) PRIMARY KEY CLUSTERED, v int)",
    );
    let (_, error) = s.execute_script(insert_loop);
    if error.is_some() {
        // At most the one failure of the plan made before the drop; then it is re-planned.
        run(&mut s, insert_loop);
    }
    assert_eq!(count(&mut s, "t"), Value::Int(3));
    assert_eq!(design(&engine, "t"), "identity");
    // A function altered by another session: the next call runs the new body.
    run(
        &mut s,
        "CREATE FUNCTION dbo.f (@x int) RETURNS int AS BEGIN RETURN @x + 1 END",
    );
    let out = run(&mut s, "DECLARE @v int = 1 SELECT dbo.f(@v)");
    assert_eq!(scalar(&out), Value::Int(2));
    run(
        &mut other,
        "CREATE OR ALTER FUNCTION dbo.f (@x int) RETURNS int AS BEGIN RETURN @x * 10 END",
    );
    let out = run(&mut s, "DECLARE @v int = 1 SELECT dbo.f(@v)");
    assert_eq!(scalar(&out), Value::Int(10));
    // CREATE FUNCTION of a name that exists: SQL Server's error 2714.
    let error = fail(
        &mut other,
        "CREATE FUNCTION f (@x int) RETURNS int AS BEGIN RETURN 0 END",
    );
    assert_eq!(error.sqlstate, "42710");
    // Errors are the same on the prepared path: overflow of the declared type, and an
    // undeclared variable.
    let error = fail(
        &mut s,
        "DECLARE @t tinyint = 1 WHILE 1 = 1 SET @t = @t * 1000",
    );
    assert_eq!(error.sqlstate, "22003");
    assert!(
        fail(&mut s, "DECLARE @i int = 0 SET @i += @nope")
            .message
            .contains("137")
    );
}

#[test]
fn user_functions_are_the_databases_and_survive_a_reopen() {
    let mem = MemStorage::new(3);
    {
        let (engine, sql) = open_on(&mem);
        let mut s = TsqlSession::new(sql.session());
        run(&mut s, include_str!("tsql/seed000_bit_reversal.sql"));
        // Another session calls the function the first one made.
        let mut other = TsqlSession::new(sql.session());
        let out = run(&mut other, "SELECT dbo.ufn_BitReverse(347)");
        assert_eq!(scalar(&out), Value::Int(1_832_910_848));
        drop((s, other));
        close(engine, sql);
    }
    let (_engine, sql) = open_on(&mem);
    let mut s = TsqlSession::new(sql.session());
    let out = run(
        &mut s,
        "IF EXISTS (SELECT * FROM sys.objects WHERE object_id = OBJECT_ID(N'[dbo].[ufn_BitReverse]') AND type in (N'FN', N'IF', N'TF', N'FS', N'FT'))
    SELECT dbo.ufn_BitReverse(2147483646)",
    );
    assert_eq!(scalar(&out), Value::Int(1_073_741_823));
    run(&mut s, "DROP FUNCTION dbo.ufn_BitReverse");
    assert_eq!(
        fail(
            &mut TsqlSession::new(sql.session()),
            "SELECT dbo.ufn_BitReverse(1)"
        )
        .sqlstate,
        "42883"
    );
}

#[test]
fn alter_index_optimize_for_sequential_key() {
    let (engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE TABLE dbo.[T1] ([Id] [bigint] IDENTITY(1,1) NOT NULL, [Status] varchar(20),
    CONSTRAINT [PK_T1] PRIMARY KEY CLUSTERED ([Id] ASC))
GO
ALTER INDEX [PK_T1] ON [dbo].[T1] SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON)
GO",
    );
    assert_eq!(design(&engine, "t1"), "identity-flow-control");
    run(
        &mut s,
        "ALTER INDEX PK_T1 ON dbo.T1 SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = OFF, ALLOW_PAGE_LOCKS = ON)",
    );
    assert_eq!(design(&engine, "t1"), "identity");
    // A heap made clustered by an index, then flow-controlled.
    run(
        &mut s,
        "CREATE TABLE h (ID int IDENTITY(1,1) NOT NULL, c varchar(10))
CREATE UNIQUE CLUSTERED INDEX CIX ON h (ID)
ALTER INDEX CIX ON h SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON)
INSERT INTO h (c) VALUES ('x')",
    );
    assert_eq!(design(&engine, "h"), "identity-flow-control");
    assert_eq!(count(&mut s, "h"), Value::Int(1));
    // With rows: the design is fixed (0A000, saying why).
    let error = fail(
        &mut s,
        "ALTER INDEX CIX ON h SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = OFF)",
    );
    assert_eq!(error.sqlstate, "0A000");
    assert!(error.message.contains("once it has rows"), "{error:?}");
    for (bad, state) in [
        ("ALTER INDEX ALL ON h REBUILD", "0A000"),
        ("ALTER INDEX CIX ON h SET (FILLFACTOR = 80)", "0A000"),
        (
            "ALTER INDEX CIX ON h SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON) x",
            "42601",
        ),
        (
            "CREATE TABLE n (a int) ALTER INDEX i ON n SET (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON)",
            "0A000",
        ),
    ] {
        assert_eq!(fail(&mut s, bad).sqlstate, state, "{bad}");
    }
}

#[test]
fn insert_select_from_a_table() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE TABLE src (id int IDENTITY(1,1) PRIMARY KEY CLUSTERED, v varchar(10), n int)
CREATE TABLE dst (id int IDENTITY(1,1) PRIMARY KEY CLUSTERED, v varchar(10), n int)
INSERT INTO src (v, n) VALUES ('a', 1), ('b', 2), ('c', 3)",
    );
    let out = run(
        &mut s,
        "DECLARE @k int = 10
INSERT INTO dbo.dst (v, n) SELECT v, n * @k FROM dbo.src WITH (NOLOCK) WHERE n >= 2
SELECT @@ROWCOUNT",
    );
    assert_eq!(scalar(&out), Value::Int(2));
    let out = run(&mut s, "SELECT sum(n) FROM dst");
    assert_eq!(scalar(&out), Value::Int(50));
    // A table that reads itself inserts what it held before (3 + 3 rows).
    run(&mut s, "INSERT INTO src (v, n) SELECT v, n FROM src");
    assert_eq!(count(&mut s, "src"), Value::Int(6));
    // OUTPUT INSERTED.* returns the new rows; TOP limits the SELECT.
    let out = run(
        &mut s,
        "INSERT INTO dst (v, n) OUTPUT INSERTED.id, INSERTED.v SELECT TOP (1) v, n FROM src ORDER BY n DESC",
    );
    let TsqlOutput::Result(r) = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(r.rows, vec![vec![Value::Int(3), Value::Text("c".into())]]);
    // One statement: a row that fails (too long for varchar(1)) inserts none of them.
    run(
        &mut s,
        "CREATE TABLE narrow (id int IDENTITY(1,1) PRIMARY KEY CLUSTERED, v varchar(1))",
    );
    let error = fail(
        &mut s,
        "INSERT INTO src (v, n) VALUES ('toolong', 9)
INSERT INTO narrow (v) SELECT v FROM src ORDER BY n",
    );
    assert_eq!(error.sqlstate, "22001");
    assert_eq!(count(&mut s, "narrow"), Value::Int(0));
    // Inside the caller's transaction, its rows go with it.
    run(
        &mut s,
        "BEGIN TRAN INSERT INTO narrow (v) SELECT v FROM src WHERE n < 9 ROLLBACK",
    );
    assert_eq!(count(&mut s, "narrow"), Value::Int(0));
    // More expressions than columns, and an unknown source table.
    assert_eq!(
        fail(&mut s, "INSERT INTO narrow (v) SELECT v, n FROM src").sqlstate,
        "42601"
    );
    assert_eq!(
        fail(&mut s, "INSERT INTO narrow (v) SELECT v FROM nope").sqlstate,
        "42P01"
    );
}

#[test]
fn dbcc_page_names_the_pages_table_as_seed_000_reads_it() {
    let (engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(&mut s, include_str!("tsql/seed000_heavy_insert.sql"));
    run(
        &mut s,
        "INSERT INTO dbo.HeavyInsert (col1) VALUES ('testing heavy')\nGO 5",
    );
    let root = engine.table("heavyinsert").unwrap().root_page();
    let at = hotpage::PageLocation::of(root);
    // As seed 000 writes it: trace flag, the page, then the object id's name.
    let out = run(
        &mut s,
        &format!(
            "DBCC TRACEON(3604)\nGO\nDBCC PAGE(1,{},{},3)\nGO",
            at.file, at.page
        ),
    );
    let TsqlOutput::Result(r) = &out[0] else {
        panic!("{out:?}")
    };
    let names: Vec<&str> = r.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["ParentObject", "Object", "Field", "VALUE"]);
    let field = |name: &str| -> Value {
        r.rows
            .iter()
            .find(|row| row[2] == Value::Text(name.into()))
            .map(|row| row[3].clone())
            .unwrap_or_else(|| panic!("no {name} in {r:?}"))
    };
    assert_eq!(field("m_type"), Value::Text("leaf".into()));
    assert_eq!(field("m_slotCnt"), Value::Text("5".into()));
    assert_eq!(field("Metadata: Table"), Value::Text("heavyinsert".into()));
    let Value::Text(object_id) = field("Metadata: ObjectId") else {
        panic!()
    };
    let out = run(&mut s, &format!("SELECT OBJECT_NAME({object_id})"));
    assert_eq!(scalar(&out), Value::Text("heavyinsert".into()));
    // Option 3 decodes each row's key; option 0 is the header alone.
    let keys = r
        .rows
        .iter()
        .filter(|row| row[2] == Value::Text("Key".into()));
    assert_eq!(keys.count(), 5);
    let out = run(
        &mut s,
        &format!("DBCC PAGE(DB_ID(), {}, {}, 0)", at.file, at.page),
    );
    let TsqlOutput::Result(header) = &out[0] else {
        panic!("{out:?}")
    };
    assert!(header.rows.len() < r.rows.len());
    for (bad, state) in [
        (
            format!("DBCC PAGE(9, {}, {}, 0)", at.file, at.page),
            "22023",
        ),
        (
            format!("DBCC PAGE(1, {}, {}, 2)", at.file, at.page),
            "22023",
        ),
        (format!("DBCC PAGE(1, {}, {})", at.file, at.page), "22023"),
        ("DBCC PAGE(1, 0, 'x', 0)".to_string(), "22023"),
        ("DBCC PAGE(1, 7, 1, 0)".to_string(), ""),
        ("DBCC PAGE(1, 0, 99999999, 0)".to_string(), ""),
        ("DBCC CHECKDB".to_string(), "0A000"),
    ] {
        let error = fail(&mut s, &bad);
        if !state.is_empty() {
            assert_eq!(error.sqlstate, state, "{bad}: {error:?}");
        }
    }
}

/// The rows of the last result with rows, as text.
fn rows(outputs: &[TsqlOutput]) -> Vec<Vec<String>> {
    outputs
        .iter()
        .rev()
        .find_map(|o| match o {
            TsqlOutput::Result(r) if r.has_rows() => Some(
                r.rows
                    .iter()
                    .map(|row| {
                        row.iter()
                            .map(|v| v.to_pg_text(None).unwrap_or_else(|| "NULL".into()))
                            .collect()
                    })
                    .collect(),
            ),
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn table_definitions_are_the_databases_in_every_session_and_after_a_reopen() {
    let mem = MemStorage::new(5);
    {
        let (engine, sql) = open_on(&mem);
        let mut maker = TsqlSession::new(sql.session());
        run(
            &mut maker,
            "CREATE TABLE dbo.[TestTable_V3] ([Id] [uniqueidentifier] NOT NULL,
    [Status] [varchar](20) NOT NULL,
    CONSTRAINT [PK_V3] PRIMARY KEY CLUSTERED ([Id] ASC))
GO
CREATE TABLE dbo.h (ID int IDENTITY(1,1) NOT NULL, c varchar(10) DEFAULT ('dflt'),
    b AS (ID % 4) PERSISTED)",
        );
        assert_eq!(design(&engine, "testtable_v3"), "user-key");
        // A second session amends the first one's table: its definition is the database's.
        let mut other = TsqlSession::new(sql.session());
        run(
            &mut other,
            "ALTER TABLE [dbo].[TestTable_V3] ADD CONSTRAINT [DF_V3] DEFAULT (newid()) FOR [Id]",
        );
        assert_eq!(design(&engine, "testtable_v3"), "guid");
        run(
            &mut other,
            "INSERT INTO dbo.TestTable_V3 (Status) VALUES ('x')",
        );
        assert_eq!(count(&mut maker, "TestTable_V3"), Value::Int(1));
        drop((maker, other));
        close(engine, sql);
    }
    // After a reopen, a new session re-makes the heap from its stored definition: the
    // identity, the default and the computed column are all still there.
    let (engine, sql) = open_on(&mem);
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE UNIQUE CLUSTERED INDEX CIX ON dbo.h (ID) WITH (OPTIMIZE_FOR_SEQUENTIAL_KEY = ON)
INSERT INTO dbo.h DEFAULT VALUES
INSERT INTO dbo.h DEFAULT VALUES",
    );
    assert_eq!(design(&engine, "h"), "identity-flow-control");
    assert_eq!(
        rows(&run(&mut s, "SELECT ID, c, b FROM dbo.h ORDER BY ID")),
        [["1", "dflt", "1"], ["2", "dflt", "2"]]
    );
    // A second ADD DEFAULT on the amended column is refused from the stored definition.
    let error = fail(
        &mut s,
        "ALTER TABLE dbo.TestTable_V3 ADD DEFAULT (newid()) FOR Id",
    );
    assert_eq!(error.sqlstate, "42P16", "{error:?}");
    assert!(error.message.contains("1781"), "{error:?}");
    // A table dropped and made again in the PostgreSQL dialect has no T-SQL definition:
    // the old one went with the drop.
    let mut pg = sql.session();
    pg.execute("DROP TABLE h; CREATE TABLE h (ID int PRIMARY KEY, c text)")
        .expect("pg");
    let error = fail(&mut s, "ALTER TABLE h ADD DEFAULT ('x') FOR c");
    assert_eq!(error.sqlstate, "0A000");
    assert!(error.message.contains("not created by T-SQL"), "{error:?}");
}

#[test]
fn sys_objects_is_a_view_that_agrees_with_object_id() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(&mut s, include_str!("tsql/seed000_bit_reversal.sql"));
    run(
        &mut s,
        "CREATE PROC dbo.p AS SELECT 1
GO",
    );
    let out = run(
        &mut s,
        "SELECT name, type, type_desc FROM sys.objects ORDER BY name",
    );
    assert_eq!(
        rows(&out),
        [
            ["heavyinsert_bitreversal", "U", "USER_TABLE"],
            ["p", "P", "SQL_STORED_PROCEDURE"],
            ["seqadvworks", "SO", "SEQUENCE_OBJECT"],
            ["ufn_bitreverse", "FN", "SQL_SCALAR_FUNCTION"],
        ]
    );
    let out = run(
        &mut s,
        "SELECT OBJECT_NAME(OBJECT_ID(N'dbo.p')), name FROM sys.objects WHERE object_id = OBJECT_ID(N'dbo.p')",
    );
    assert_eq!(rows(&out), [["p", "p"]]);
    // OBJECT_NAME of a column: every row's own name back.
    let out = run(
        &mut s,
        "SELECT count(*) FROM sys.objects WHERE OBJECT_NAME(object_id) = name",
    );
    assert_eq!(scalar(&out), Value::Int(4));
    let out = run(&mut s, "SELECT OBJECT_NAME(12345), OBJECT_NAME(NULL)");
    assert_eq!(rows(&out), [["NULL", "NULL"]]);
    // The seeds' guard goes through the view, as does any EXISTS over a query.
    let guard = "IF EXISTS (SELECT * FROM sys.objects WHERE object_id = OBJECT_ID(N'dbo.HeavyInsert_BitReversal') AND type in (N'U'))
    PRINT 'table'
IF NOT EXISTS (SELECT * FROM sys.objects WHERE object_id = OBJECT_ID(N'dbo.HeavyInsert_BitReversal') AND type in (N'SO'))
    PRINT 'not a sequence'
IF EXISTS (SELECT name FROM sys.objects WHERE type_desc = N'SQL_STORED_PROCEDURE' AND name = N'p') PRINT 'proc'
IF EXISTS (SELECT * FROM dbo.HeavyInsert_BitReversal) PRINT 'rows' ELSE PRINT 'empty'";
    let prints: Vec<TsqlOutput> = run(&mut s, guard)
        .into_iter()
        .filter(|o| matches!(o, TsqlOutput::Print(_)))
        .collect();
    assert_eq!(
        prints,
        ["table", "not a sequence", "proc", "empty"].map(|p| TsqlOutput::Print(p.into()))
    );
    // IN (SELECT …): run first; an empty set is false for IN and true for NOT IN.
    let out = run(
        &mut s,
        "SELECT name FROM sys.objects WHERE object_id IN (SELECT object_id FROM sys.objects WHERE type = N'FN')",
    );
    assert_eq!(rows(&out), [["ufn_bitreverse"]]);
    let out = run(
        &mut s,
        "SELECT count(*) FROM sys.objects WHERE name IN (SELECT name FROM sys.objects WHERE type = N'X')",
    );
    assert_eq!(scalar(&out), Value::Int(0));
    let out = run(
        &mut s,
        "SELECT count(*) FROM sys.objects WHERE name NOT IN (SELECT name FROM sys.objects WHERE type = N'X')",
    );
    assert_eq!(scalar(&out), Value::Int(4));
    let error = fail(
        &mut s,
        "SELECT 1 WHERE 1 IN (SELECT name, type FROM sys.objects)",
    );
    assert_eq!(error.sqlstate, "42601");
    // A subquery that names the outer query's table is not run alone: 0A000, saying why.
    let error = fail(
        &mut s,
        "SELECT name FROM sys.objects o WHERE EXISTS (SELECT 1 FROM sys.objects i WHERE i.name = o.name)",
    );
    assert_eq!(error.sqlstate, "0A000", "{error:?}");
    assert!(error.message.contains("correlated"), "{error:?}");
    // Its own table's name and alias as qualifiers are fine.
    let out = run(
        &mut s,
        "SELECT count(*) FROM sys.objects WHERE name IN (SELECT i.name FROM sys.objects AS i WHERE i.type = N'P')
SELECT count(*) FROM sys.objects WHERE name IN (SELECT objects.name FROM sys.objects WHERE objects.type = N'P')",
    );
    assert_eq!(scalar(&out), Value::Int(1));
}

#[test]
fn stored_procedures_run_in_every_session_and_after_a_reopen() {
    let mem = MemStorage::new(6);
    // Seed 002's heap and procedure as written, then its EXEC (at 1% of its count).
    let create = format!(
        "{}\n-- Execution of stored procedures for 10,000 rows\nEXEC dbo.InsertCustomerData @NumOfRecords = 100;\nGO",
        include_str!("tsql/seed002_procedure.sql")
    );
    {
        let (engine, sql) = open_on(&mem);
        let mut s = TsqlSession::new(sql.session());
        run(&mut s, &create);
        assert_eq!(count(&mut s, "Customers"), Value::Int(100));
        // A workload's batch that EXECs the procedure reports on the procedure's table.
        let batch = TsqlBatch::parse("EXEC dbo.InsertCustomerData @NumOfRecords = 5;").unwrap();
        assert_eq!(batch.insert_table(), None);
        assert_eq!(batch.insert_table_in(&sql), Some("customers".to_string()));
        // Another session runs it, positionally; `EXECUTE` too.
        let mut other = TsqlSession::new(sql.session());
        run(
            &mut other,
            "EXECUTE InsertCustomerData 5\nEXEC dbo.InsertCustomerData 1",
        );
        assert_eq!(count(&mut s, "Customers"), Value::Int(106));
        drop((s, other));
        close(engine, sql);
    }
    let (_engine, sql) = open_on(&mem);
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE PROCEDURE dbo.add_some (@n int = 3, @label varchar(10) = 'x') AS
    DECLARE @i int = 0
    WHILE @i < @n
    BEGIN
        EXEC dbo.InsertCustomerData 1
        SET @i += 1
    END
    PRINT @label
    RETURN @n * 10
GO
DECLARE @rc int
EXEC @rc = dbo.add_some @label = 'done'
SELECT @rc
EXEC add_some 2, DEFAULT",
    );
    assert_eq!(count(&mut s, "Customers"), Value::Int(111));
    let out = run(
        &mut s,
        "DECLARE @rc int
EXEC @rc = dbo.add_some 0, 'p'
SELECT @rc",
    );
    assert_eq!(scalar(&out), Value::Int(0));
    assert!(out.contains(&TsqlOutput::Print("p".into())));
    for (bad, state, says) in [
        ("EXEC dbo.nothing", "42883", "2812"),
        ("EXEC dbo.InsertCustomerData", "42883", "201"),
        ("EXEC dbo.InsertCustomerData @Nope = 1", "42883", "8145"),
        ("EXEC dbo.InsertCustomerData 1, 2", "42883", "8144"),
        ("CREATE PROC dbo.add_some AS SELECT 1", "42710", "2714"),
        (
            "CREATE PROC q @x int READONLY AS SELECT 1",
            "0A000",
            "READONLY",
        ),
        ("DROP PROCEDURE nothing", "42883", "3701"),
        (
            "EXEC sp_executesql N'SELECT @q', N'@p int', @p = 1",
            "42704",
            "137",
        ),
        ("CREATE PROC r AS EXEC r\nGO\nEXEC r", "54001", "217"),
        // A procedure's body runs to the end of its batch (SQL Server: CREATE PROCEDURE
        // must begin a batch), so a CREATE PROC inside one takes its END.
        (
            "CREATE PROC n AS BEGIN CREATE PROC m AS SELECT 1 END",
            "42601",
            "102",
        ),
    ] {
        let error = fail(&mut s, bad);
        assert_eq!(error.sqlstate, state, "{bad}: {error:?}");
        assert!(error.message.contains(says), "{bad}: {error:?}");
    }
    run(
        &mut s,
        "DROP PROC dbo.add_some\nDROP PROCEDURE IF EXISTS add_some",
    );
    assert_eq!(fail(&mut s, "EXEC add_some").sqlstate, "42883");
}

#[test]
fn try_catch_throw_and_raiserror() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    let out = run(
        &mut s,
        "CREATE TABLE t (id int PRIMARY KEY)
INSERT INTO t VALUES (1)
BEGIN TRY
    INSERT INTO t VALUES (1)
    PRINT 'not here'
END TRY
BEGIN CATCH
    PRINT CONVERT(varchar(10), ERROR_NUMBER())
    SELECT ERROR_NUMBER(), ERROR_MESSAGE()
END CATCH
BEGIN TRY
    THROW 50001, 'my error', 1;
END TRY
BEGIN CATCH
    PRINT ERROR_MESSAGE()
    PRINT CONVERT(varchar(10), ERROR_NUMBER())
END CATCH
BEGIN TRY
    RAISERROR ('bad %s at %d', 16, 1, 'thing', 7)
END TRY
BEGIN CATCH
    PRINT ERROR_MESSAGE()
END CATCH
RAISERROR ('just a note', 10, 1)
SELECT ERROR_NUMBER()",
    );
    let prints: Vec<&TsqlOutput> = out
        .iter()
        .filter(|o| matches!(o, TsqlOutput::Print(_)))
        .collect();
    assert_eq!(
        prints,
        ["2627", "my error", "50001", "bad thing at 7", "just a note"]
            .map(|p| TsqlOutput::Print(p.into()))
            .iter()
            .collect::<Vec<_>>()
    );
    // Outside CATCH the error functions are NULL.
    assert_eq!(scalar(&out), Value::Null);
    // The usual transaction pattern: the failed transaction is rolled back before the
    // handler runs, so the handler can PRINT and test @@TRANCOUNT.
    let out = run(
        &mut s,
        "BEGIN TRY
    BEGIN TRAN
    INSERT INTO t VALUES (2)
    SELECT XACT_STATE()
    INSERT INTO t VALUES (1)
    COMMIT
END TRY
BEGIN CATCH
    PRINT 'caught'
    IF @@TRANCOUNT > 0 ROLLBACK
    SELECT XACT_STATE(), count(*) FROM t
END CATCH
BEGIN TRAN
BEGIN TRY
    THROW 50003, 'kept', 1
END TRY
BEGIN CATCH
    SELECT XACT_STATE()
END CATCH
ROLLBACK",
    );
    let results: Vec<Vec<Vec<String>>> = out
        .iter()
        .filter(|o| matches!(o, TsqlOutput::Result(r) if r.has_rows()))
        .map(|o| rows(std::slice::from_ref(o)))
        .collect();
    assert_eq!(
        results,
        [vec![vec!["1"]], vec![vec!["0", "1"]], vec![vec!["1"]]],
        "{out:?}"
    );
    assert!(out.contains(&TsqlOutput::Print("caught".into())));
    // THROW without arguments re-raises the error being handled; uncaught, it ends the batch.
    let error = fail(
        &mut s,
        "BEGIN TRY SELECT 1/0 END TRY BEGIN CATCH THROW END CATCH",
    );
    assert_eq!(error.sqlstate, "22012");
    let error = fail(&mut s, "THROW 50002, N'out here', 1");
    assert_eq!(error.sqlstate, "P0001");
    assert!(error.message.contains("out here"), "{error:?}");
    for (bad, state) in [
        ("THROW", "0Z002"),
        ("THROW 1, 'low', 1", "22023"),
        ("BEGIN TRY SELECT 1 END TRY", "42601"),
        ("BEGIN TRY SELECT 1 END TRY BEGIN CATCH SELECT 2", "42601"),
        ("RAISERROR 'x'", "42601"),
    ] {
        assert_eq!(fail(&mut s, bad).sqlstate, state, "{bad}");
    }
}

#[test]
fn fn_dblog_counts_seed_002s_heap_inserts_and_free_space_updates() {
    let (_engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(&mut s, include_str!("tsql/seed002_demo_table.sql"));
    // Seed 002's loop, as written but for the transaction around it (a heap's rows reach
    // its pages, and so the log's page records, when they commit).
    run(
        &mut s,
        "CHECKPOINT;
GO
        DECLARE @I INT = 1;
        WHILE @I <= 3000
        BEGIN
            INSERT INTO dbo.demo_table(C1) VALUES ('This is a test');
            SET @I += 1;
        END",
    );
    let by_kind = rows(&run(
        &mut s,
        "SELECT Operation, Context, COUNT_BIG(*) FROM sys.fn_dblog(NULL, NULL)
        WHERE AllocUnitName = N'dbo.demo_table' GROUP BY Operation, Context ORDER BY Operation, Context",
    ));
    let count_of = |operation: &str, context: &str| -> i64 {
        by_kind
            .iter()
            .find(|r| r[0] == operation && r[1] == context)
            .map_or(0, |r| r[2].parse().expect("count"))
    };
    let pages = scalar(&run(
        &mut s,
        "SELECT page_count FROM sys.dm_db_index_physical_stats(DB_ID(), OBJECT_ID(N'dbo.demo_table', N'U'), 0, NULL, N'DETAILED') WHERE index_level = 0",
    ));
    let Value::Int(pages) = pages else {
        panic!("{pages:?}")
    };
    assert!(pages > 10, "{pages}");
    // Every row is in the log once: a row of its own, but the first, which is in its page's
    // first image since the checkpoint; every other page is formatted by the link that
    // made it (a header change on the chain's tail).
    let inserts = count_of("LOP_INSERT_ROWS", "LCX_HEAP");
    let formats = count_of("LOP_FORMAT_PAGE", "LCX_HEAP");
    assert_eq!(inserts, 2999, "{by_kind:?}");
    assert_eq!(formats, pages, "{by_kind:?}");
    assert_eq!(
        count_of("LOP_MODIFY_HEADER", "LCX_HEAP"),
        pages - 1,
        "{by_kind:?}"
    );
    // Free-space updates: a page's entry moves through the categories as it fills (empty,
    // 50 %, 80 %, 95 %, full), so between one and five per page.
    let pfs = count_of("LOP_MODIFY_ROW", "LCX_PFS");
    assert!(
        pfs >= pages && pfs <= 5 * pages,
        "{pfs} for {pages} pages: {by_kind:?}"
    );
    // Seed 002's query shape: the PFS rows by context.
    let out = run(
        &mut s,
        "SELECT  Context,
                COUNT_BIG(*)
        FROM    sys.fn_dblog(NULL, NULL)
        WHERE   Context = N'LCX_PFS'
        GROUP BY
                Context;",
    );
    assert_eq!(rows(&out), [["LCX_PFS".to_string(), pfs.to_string()]]);
    // Commits carry the transaction ids; LSNs order as text.
    let out = run(
        &mut s,
        "SELECT TOP (2) [Current LSN], [Transaction ID], [Page ID] FROM fn_dblog(NULL, NULL)
        WHERE Operation = N'LOP_COMMIT_XACT' ORDER BY [Current LSN] DESC",
    );
    let commits = rows(&out);
    assert_eq!(commits.len(), 2);
    assert!(commits[0][0] > commits[1][0], "{commits:?}");
    assert!(commits[0][1].starts_with("0000:"), "{commits:?}");
    assert_eq!(commits[0][2], "NULL");
    // The seed's own query runs as written (tsql_seed_queries.rs checks what it counts).
    run(
        &mut s,
        "SELECT  Context,
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
                Context;",
    );
    // A CHECKPOINT starts the active log again.
    run(&mut s, "CHECKPOINT");
    let out = run(
        &mut s,
        "SELECT count(*) FROM sys.fn_dblog(NULL, NULL) WHERE Context = N'LCX_PFS'",
    );
    assert_eq!(scalar(&out), Value::Int(0));
    // A bound that is not an LSN in either of SQL Server's forms.
    assert_eq!(
        fail(&mut s, "SELECT * FROM sys.fn_dblog(1, NULL)").sqlstate,
        "22023"
    );
}

#[test]
fn a_remade_partitioned_table_stays_on_its_scheme() {
    let (engine, sql) = open();
    let mut s = TsqlSession::new(sql.session());
    run(
        &mut s,
        "CREATE PARTITION FUNCTION pf (tinyint) AS RANGE LEFT FOR VALUES (0, 1, 2)
CREATE PARTITION SCHEME ps AS PARTITION pf ALL TO ([PRIMARY])
CREATE TABLE t (id bigint IDENTITY(1,1) NOT NULL, h AS CONVERT(tinyint, ABS(id % 4)) PERSISTED, v int,
    CONSTRAINT pk PRIMARY KEY CLUSTERED (id, h)) ON ps(h)",
    );
    // Another session amends it: the table is re-made, still on the scheme.
    let mut other = TsqlSession::new(sql.session());
    run(&mut other, "ALTER TABLE t ADD DEFAULT (7) FOR v");
    assert_eq!(design(&engine, "t"), "hash-partition");
    assert_eq!(fail(&mut s, "DROP PARTITION SCHEME ps").sqlstate, "2BP01");
    run(&mut s, "INSERT INTO t DEFAULT VALUES");
    assert_eq!(scalar(&run(&mut s, "SELECT v FROM t")), Value::Int(7));
}

/// ERROR_LINE() and ERROR_PROCEDURE() of an error in a procedure, read in another session
/// after a reopen: the stored text keeps the procedure's lines. And a script's uncaught
/// error names its statement's line and its batch's in DETAIL.
#[test]
fn error_lines_survive_a_reopen_and_show_in_detail() {
    let mem = MemStorage::new(3);
    let procedure = "-- line 1 of the script
GO
CREATE PROCEDURE dbo.divide @by int
AS
BEGIN
    DECLARE @x int = 10

    -- a comment
    SELECT @x / @by
END
GO";
    let catch = "BEGIN TRY
    EXEC dbo.divide 0
END TRY
BEGIN CATCH
    SELECT ERROR_LINE(), ERROR_PROCEDURE(), ERROR_NUMBER()
END CATCH";
    let expected = vec![vec![
        "7".to_string(),
        "divide".to_string(),
        "8134".to_string(),
    ]];
    {
        let (engine, sql) = open_on(&mem);
        let mut s = TsqlSession::new(sql.session());
        run(&mut s, procedure);
        assert_eq!(rows(&run(&mut s, catch)), expected);
        drop(s);
        close(engine, sql);
    }
    let (_engine, sql) = open_on(&mem);
    let mut s = TsqlSession::new(sql.session());
    assert_eq!(rows(&run(&mut s, catch)), expected);
    let error = fail(&mut s, "SELECT 1\nGO\nPRINT 'a'\n\nEXEC dbo.divide 0");
    assert_eq!(error.sqlstate, "22012");
    assert_eq!(
        error.detail.as_deref(),
        Some("at line 7 of divide; the batch begins at line 3 of the script"),
        "{error:?}"
    );
    let error = fail(&mut s, "SELECT 1\nGO\nPRINT 'a'\n\nSELECT 1 / 0");
    assert_eq!(
        error.detail.as_deref(),
        Some("at line 3 of the batch; the batch begins at line 3 of the script"),
        "{error:?}"
    );
}

#[test]
fn kill_ends_a_served_session_and_refuses_its_own_and_unknown_ids() {
    let (_engine, sql) = open();
    let mut admin = TsqlSession::new(sql.session());
    let mut served = sql.session();
    let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = Arc::clone(&ended);
    served.set_terminate_hook(Arc::new(move || {
        seen.store(true, std::sync::atomic::Ordering::Relaxed);
    }));
    let outputs = run(&mut admin, &format!("KILL {}", served.pid()));
    assert!(
        ended.load(std::sync::atomic::Ordering::Relaxed),
        "KILL did not end it"
    );
    assert!(
        matches!(outputs.as_slice(), [TsqlOutput::Result(r)] if r.tag == "KILL"),
        "{outputs:?}"
    );
    let own = match scalar(&run(&mut admin, "SELECT @@SPID")) {
        Value::Int(n) => n.to_string(),
        Value::Text(t) => t,
        other => panic!("@@SPID is {other:?}"),
    };
    let error = fail(&mut admin, &format!("KILL {own}"));
    assert!(error.message.contains("SQL Server error 6104"), "{error:?}");
    let error = fail(&mut admin, "KILL 987654");
    assert!(error.message.contains("SQL Server error 6106"), "{error:?}");
    assert_eq!(error.sqlstate, "22023");
    // A session of this process's own, with no connection: not ended, and said so.
    let embedded = sql.session();
    let error = fail(&mut admin, &format!("KILL {}", embedded.pid()));
    assert_eq!(error.sqlstate, "0A000", "{error:?}");
    let error = fail(&mut admin, "KILL 'x'");
    assert_eq!(error.sqlstate, "42601", "{error:?}");
}
