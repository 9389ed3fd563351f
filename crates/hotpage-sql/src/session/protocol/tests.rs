//! The server-facing session calls: results statement by statement, a stop between
//! statements, Describe's columns, and COMMIT/ROLLBACK prepared in a failed block.

use super::*;
use crate::session::{SqlDatabase, TxnStatus};
use hotpage::{Database, MemStorage, Options, Storage};
use std::path::Path;
use std::sync::Arc;

fn open_mem() -> Arc<SqlDatabase> {
    let mem: Arc<dyn Storage> = MemStorage::new(7);
    let engine =
        Database::open_with_storage(mem, Path::new("m"), Options::default()).expect("open");
    SqlDatabase::new(Arc::new(engine)).expect("sql")
}

/// Records the tags it is given and stops before statement `stop_before`.
struct Recorder {
    tags: Vec<String>,
    stop_before: usize,
}

impl BatchObserver for Recorder {
    fn before_statement(&mut self, index: usize) -> SqlResult<()> {
        if index == self.stop_before {
            return Err(SqlError::new(
                "57014",
                "canceling statement due to user request",
            ));
        }
        Ok(())
    }

    fn statement_done(&mut self, result: StatementResult) -> SqlResult<()> {
        self.tags.push(result.tag);
        Ok(())
    }
}

#[test]
fn a_batch_reports_each_result_and_stops_between_statements() {
    let db = open_mem();
    let mut s = db.session();
    let mut all = Recorder {
        tags: Vec::new(),
        stop_before: usize::MAX,
    };
    let sql = "CREATE TABLE t (id bigint PRIMARY KEY); INSERT INTO t VALUES (1); SELECT * FROM t";
    assert_eq!(s.execute_batch_observed(sql, &mut all), None);
    assert_eq!(all.tags, ["CREATE TABLE", "INSERT 0 1", "SELECT 1"]);

    // Stopped before the third statement inside a block: the block is failed, and the
    // first two statements ran.
    let mut stopped = Recorder {
        tags: Vec::new(),
        stop_before: 2,
    };
    let sql = "BEGIN; INSERT INTO t VALUES (2); INSERT INTO t VALUES (3)";
    let error = s
        .execute_batch_observed(sql, &mut stopped)
        .expect("stopped");
    assert_eq!(error.sqlstate, "57014");
    assert_eq!(stopped.tags, ["BEGIN", "INSERT 0 1"]);
    assert_eq!(s.txn_status(), TxnStatus::Failed);

    // A statement's own error carries its position in the batch's text.
    let mut rec = Recorder {
        tags: Vec::new(),
        stop_before: usize::MAX,
    };
    s.execute("ROLLBACK").expect("rollback");
    let error = s
        .execute_batch_observed("SELECT 1; SELECT nope FROM t", &mut rec)
        .expect("error");
    assert_eq!(error.sqlstate, "42703");
    assert_eq!(error.position, Some(18));
    assert_eq!(rec.tags, ["SELECT 1"]);
}

#[test]
fn prepared_commit_and_rollback_end_a_failed_block() {
    let db = open_mem();
    let mut s = db.session();
    s.execute("CREATE TABLE t (id bigint PRIMARY KEY)")
        .expect("create");
    let rollback = s.prepare("ROLLBACK").expect("prepare");
    assert!(rollback.ends_transaction());
    s.execute("BEGIN").expect("begin");
    assert!(s.execute("SELECT nope FROM t").is_err());
    assert_eq!(s.txn_status(), TxnStatus::Failed);
    let insert = s.prepare("INSERT INTO t VALUES ($1)").expect("prepare");
    assert!(!insert.ends_transaction());
    let refused = s
        .execute_prepared(&insert, &[crate::value::Value::Int(1)])
        .expect_err("refused in a failed block");
    assert_eq!(refused.sqlstate, "25P02");
    let done = s.execute_prepared(&rollback, &[]).expect("rollback runs");
    assert_eq!(done.tag, "ROLLBACK");
    assert_eq!(s.txn_status(), TxnStatus::Idle);
}

#[test]
fn describe_knows_show_and_select_columns() {
    let db = open_mem();
    let mut s = db.session();
    let show = s.prepare("SHOW synchronous_commit").expect("prepare");
    assert_eq!(
        show.result_columns(),
        [ColumnInfo {
            name: "synchronous_commit".into(),
            ty: SqlType::Text
        }]
    );
    let ran = s.execute_prepared(&show, &[]).expect("show");
    assert_eq!(ran.columns, show.result_columns());
    let select = s.prepare("SELECT 1 AS one").expect("prepare");
    assert_eq!(select.result_columns().len(), 1);
    assert_eq!(select.result_columns()[0].name, "one");
    let begin = s.prepare("BEGIN").expect("prepare");
    assert!(begin.result_columns().is_empty());
}

#[test]
fn an_outside_error_fails_only_an_open_block() {
    let db = open_mem();
    let mut s = db.session();
    s.fail_transaction_block();
    assert_eq!(s.txn_status(), TxnStatus::Idle);
    s.execute("BEGIN").expect("begin");
    s.fail_transaction_block();
    assert_eq!(s.txn_status(), TxnStatus::Failed);
}

#[test]
fn reads_are_told_from_writes() {
    let read = StatementResult {
        tag: "SELECT 3".into(),
        columns: Vec::new(),
        rows: Vec::new(),
    };
    assert!(is_read_result(&read));
    let write = StatementResult {
        tag: "INSERT 0 1".into(),
        ..read
    };
    assert!(!is_read_result(&write));
}

fn count(s: &mut SqlSession, table: &str) -> String {
    let result = s
        .execute(&format!("SELECT count(*) FROM {table}"))
        .expect("count")
        .remove(0);
    result.rows[0][0].to_pg_text(None).unwrap_or_default()
}

fn query_message(s: &mut SqlSession, sql: &str) -> (Vec<String>, Option<SqlError>) {
    let mut rec = Recorder {
        tags: Vec::new(),
        stop_before: usize::MAX,
    };
    let error = s.execute_query_message(sql, &mut rec);
    (rec.tags, error)
}

#[test]
fn a_query_message_is_one_implicit_transaction() {
    let db = open_mem();
    let mut s = db.session();
    // DDL is not transactional here: it commits before it and runs alone.
    let (tags, error) = query_message(
        &mut s,
        "CREATE TABLE t (id bigint PRIMARY KEY); INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)",
    );
    assert_eq!(error, None);
    assert_eq!(tags, ["CREATE TABLE", "INSERT 0 1", "INSERT 0 1"]);
    assert_eq!(s.txn_status(), TxnStatus::Idle, "committed at the end");
    assert_eq!(count(&mut s, "t"), "2");

    // A failing statement rolls back the ones before it, and the session is idle.
    let (tags, error) = query_message(
        &mut s,
        "INSERT INTO t VALUES (3); INSERT INTO t VALUES (4); INSERT INTO t VALUES ('x')",
    );
    assert_eq!(error.expect("bad value").sqlstate, "22P02");
    assert_eq!(tags, ["INSERT 0 1", "INSERT 0 1"]);
    assert_eq!(s.txn_status(), TxnStatus::Idle);
    assert_eq!(count(&mut s, "t"), "2");

    // A stop between statements (a cancel) rolls it back too.
    let mut stopped = Recorder {
        tags: Vec::new(),
        stop_before: 1,
    };
    let error = s.execute_query_message(
        "INSERT INTO t VALUES (5); INSERT INTO t VALUES (6)",
        &mut stopped,
    );
    assert_eq!(error.expect("stopped").sqlstate, "57014");
    assert_eq!(count(&mut s, "t"), "2");

    // The older rule, kept for `hotpage sql` scripts: each statement its own transaction.
    let error = s.execute_batch_observed(
        "INSERT INTO t VALUES (7); INSERT INTO t VALUES ('x')",
        &mut Recorder {
            tags: Vec::new(),
            stop_before: usize::MAX,
        },
    );
    assert!(error.is_some());
    assert_eq!(count(&mut s, "t"), "3");
}

#[test]
fn explicit_begin_and_commit_inside_a_query_message_take_over() {
    let db = open_mem();
    let mut s = db.session();
    s.execute("CREATE TABLE t (id bigint PRIMARY KEY)")
        .expect("create");
    // BEGIN takes the statement before it into its block; COMMIT commits both; the
    // failure after it rolls back only its own implicit transaction.
    let (tags, error) = query_message(
        &mut s,
        "INSERT INTO t VALUES (1); BEGIN; INSERT INTO t VALUES (2); COMMIT; INSERT INTO t VALUES (3); INSERT INTO t VALUES (1)",
    );
    assert_eq!(error.expect("duplicate").sqlstate, "23505");
    assert_eq!(
        tags,
        ["INSERT 0 1", "BEGIN", "INSERT 0 1", "COMMIT", "INSERT 0 1"]
    );
    assert_eq!(s.txn_status(), TxnStatus::Idle);
    assert_eq!(count(&mut s, "t"), "2");

    // An error inside an explicit block fails the block (25P02 until ROLLBACK), as
    // before.
    let (_, error) = query_message(
        &mut s,
        "BEGIN; INSERT INTO t VALUES (9); SELECT nope FROM t",
    );
    assert_eq!(error.expect("no column").sqlstate, "42703");
    assert_eq!(s.txn_status(), TxnStatus::Failed);
    s.execute("ROLLBACK").expect("rollback");
    assert_eq!(count(&mut s, "t"), "2");

    // A block left open by the message stays open.
    let (_, error) = query_message(
        &mut s,
        "INSERT INTO t VALUES (10); BEGIN; INSERT INTO t VALUES (11)",
    );
    assert_eq!(error, None);
    assert_eq!(s.txn_status(), TxnStatus::InTransaction);
    s.execute("COMMIT").expect("commit");
    assert_eq!(count(&mut s, "t"), "4");
}

/// DDL in a multi-statement Query never commits a write before it: after a write it is
/// refused (25001) and the write rolls back; VACUUM is refused as PostgreSQL refuses it.
#[test]
fn ddl_after_a_write_in_a_query_message_is_refused_and_nothing_commits() {
    let db = open_mem();
    let mut s = db.session();
    s.execute("CREATE TABLE t (id bigint PRIMARY KEY)")
        .expect("create");
    for sql in [
        "INSERT INTO t VALUES (1); CREATE TABLE u (id int)",
        "INSERT INTO t VALUES (1); DROP TABLE t",
        "INSERT INTO t VALUES (1); CREATE SEQUENCE q",
        "INSERT INTO t VALUES (1); ALTER TABLE t ADD PRIMARY KEY (id)",
        "TRUNCATE t; DROP TABLE t",
    ] {
        let (tags, error) = query_message(&mut s, sql);
        let error = error.expect(sql);
        assert_eq!(error.sqlstate, "25001", "{sql}: {error:?}");
        assert!(error.message.contains("not transactional"), "{error:?}");
        assert_eq!(tags.len(), 1, "{sql}");
        assert_eq!(s.txn_status(), TxnStatus::Idle);
        assert_eq!(count(&mut s, "t"), "0", "{sql}: the write rolled back");
    }
    assert!(s.execute("SELECT * FROM u").is_err(), "u was never made");
    let (_, error) = query_message(&mut s, "SELECT 1; VACUUM t");
    assert_eq!(
        error.expect("vacuum").message,
        "VACUUM cannot run inside a transaction block"
    );
    // DISCARD ALL likewise, first or not (PostgreSQL 15's answers); DISCARD PLANS runs.
    for sql in ["SELECT 1; DISCARD ALL", "DISCARD ALL; SELECT 1"] {
        let (_, error) = query_message(&mut s, sql);
        let error = error.expect(sql);
        assert_eq!(error.sqlstate, "25001", "{sql}: {error:?}");
        assert_eq!(
            error.message,
            "DISCARD ALL cannot run inside a transaction block"
        );
    }
    let (tags, error) = query_message(&mut s, "SELECT 1; DISCARD PLANS");
    assert_eq!(error, None);
    assert_eq!(tags, ["SELECT 1", "DISCARD PLANS"]);
    // Reads before DDL are fine, and DDL first still runs alone before the writes.
    let (tags, error) = query_message(
        &mut s,
        "SELECT count(*) FROM t; CREATE TABLE v (id int); INSERT INTO v VALUES (1)",
    );
    assert_eq!(error, None);
    assert_eq!(tags, ["SELECT 1", "CREATE TABLE", "INSERT 0 1"]);
    assert_eq!(count(&mut s, "v"), "1");
}

/// Takes a query's rows as they are made, and may fail after `fail_after` chunks.
#[derive(Default)]
struct Streamer {
    chunks: Vec<usize>,
    rows: Vec<Vec<crate::value::Value>>,
    done: Vec<StatementResult>,
    fail_after: Option<usize>,
}

impl BatchObserver for Streamer {
    fn before_statement(&mut self, _: usize) -> SqlResult<()> {
        Ok(())
    }

    fn statement_done(&mut self, result: StatementResult) -> SqlResult<()> {
        self.done.push(result);
        Ok(())
    }

    fn streams_rows(&self) -> bool {
        true
    }

    fn statement_rows(
        &mut self,
        columns: &[crate::session::ColumnInfo],
        rows: Vec<Vec<crate::value::Value>>,
    ) -> SqlResult<()> {
        assert_eq!(columns.len(), 2);
        if self.fail_after == Some(self.chunks.len()) {
            return Err(SqlError::new("08006", "the client went away"));
        }
        self.chunks.push(rows.len());
        self.rows.extend(rows);
        Ok(())
    }
}

/// 5,000 rows of about 200 bytes each: 1 MB and more of values.
fn big_table(s: &mut SqlSession) {
    s.execute("CREATE TABLE big (id bigint PRIMARY KEY, v text)")
        .expect("create");
    s.execute("INSERT INTO big SELECT g, repeat('x', 200) FROM generate_series(1, 5000) g")
        .expect("insert");
    s.execute("SET hotpage.query_memory = '1MB'").expect("set");
}

#[test]
fn a_query_streams_its_rows_in_chunks_past_the_memory_bound() {
    let db = open_mem();
    let mut s = db.session();
    big_table(&mut s);
    // Held, the rows pass the 1MB bound.
    let error = s.execute("SELECT * FROM big").expect_err("held");
    assert_eq!(error.sqlstate, "54000");
    // Streamed, they come in chunks, in key order, and none is held.
    let mut streamer = Streamer::default();
    let sql = "SELECT * FROM big WHERE id > 10 LIMIT 4000 OFFSET 5";
    assert_eq!(s.execute_batch_observed(sql, &mut streamer), None);
    assert!(streamer.chunks.len() >= 4, "{:?}", streamer.chunks);
    assert!(streamer.chunks.iter().all(|&n| n <= 1024));
    let ids: Vec<i64> = streamer
        .rows
        .iter()
        .map(|r| match r[0] {
            crate::value::Value::Int(i) => i,
            ref other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids, (16..4016).collect::<Vec<i64>>());
    assert_eq!(streamer.done[0].tag, "SELECT 4000");
    assert!(streamer.done[0].rows.is_empty());
    assert_eq!(streamer.done[0].columns.len(), 2);
    // LIMIT 0 evaluates no output row, held or streamed (PostgreSQL's answer).
    let none = s.execute("SELECT 1 / 0 FROM big LIMIT 0").expect("limit 0");
    assert!(none[0].rows.is_empty());
    let mut zero = Streamer::default();
    assert_eq!(
        s.execute_batch_observed("SELECT 1 / 0 FROM big LIMIT 0", &mut zero),
        None
    );
    assert_eq!(zero.done[0].tag, "SELECT 0");
    // ORDER BY needs every row first: held, and bounded.
    let mut ordered = Streamer::default();
    let error = s
        .execute_batch_observed("SELECT * FROM big ORDER BY v, id DESC", &mut ordered)
        .expect("bounded");
    assert_eq!(error.sqlstate, "54000");
    assert!(ordered.chunks.is_empty());
    // A small ordered query comes back whole, in its order.
    let mut small = Streamer::default();
    let sql = "SELECT * FROM big WHERE id < 4 ORDER BY id DESC";
    assert_eq!(s.execute_batch_observed(sql, &mut small), None);
    assert!(small.chunks.is_empty());
    let first = &small.done[0].rows[0][0];
    assert_eq!(*first, crate::value::Value::Int(3));
}

#[test]
fn a_failing_stream_stops_the_query_and_fails_the_block() {
    let db = open_mem();
    let mut s = db.session();
    big_table(&mut s);
    s.execute("BEGIN").expect("begin");
    let mut streamer = Streamer {
        fail_after: Some(1),
        ..Streamer::default()
    };
    let error = s
        .execute_batch_observed("SELECT * FROM big", &mut streamer)
        .expect("stopped");
    assert_eq!(error.sqlstate, "08006");
    assert_eq!(streamer.chunks.len(), 1);
    assert!(streamer.done.is_empty());
    assert_eq!(s.txn_status(), TxnStatus::Failed);
    s.execute("ROLLBACK").expect("rollback");
}

#[test]
fn nextval_in_the_output_is_not_streamed() {
    let db = open_mem();
    let mut s = db.session();
    s.execute(
        "CREATE TABLE t (id bigint PRIMARY KEY); CREATE SEQUENCE q; INSERT INTO t VALUES (1), (2)",
    )
    .expect("setup");
    let mut streamer = Streamer::default();
    assert_eq!(
        s.execute_batch_observed("SELECT id, nextval('q') FROM t", &mut streamer),
        None
    );
    assert!(streamer.chunks.is_empty());
    assert_eq!(streamer.done[0].rows.len(), 2);
}

/// RESET gives the engine session the durability the settings left ask for, else the
/// database's; SHOW says what the engine does.
#[test]
fn reset_restores_the_engine_sessions_durability() {
    let db = open_mem();
    let mut s = db.session();
    let show = |s: &mut SqlSession| match &s.execute("SHOW hotpage.durability").expect("show")[0]
        .rows[0][0]
    {
        crate::value::Value::Text(t) => t.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(s.engine.durability(), hotpage::Durability::Sync);
    s.execute("SET hotpage.durability = async; SET synchronous_commit = off")
        .expect("set");
    assert_eq!(s.engine.durability(), hotpage::Durability::Async);
    // The other name still says async: the engine stays async.
    s.execute("RESET hotpage.durability").expect("reset");
    assert_eq!(s.engine.durability(), hotpage::Durability::Async);
    assert_eq!(show(&mut s), "async");
    s.execute("RESET synchronous_commit").expect("reset");
    assert_eq!(s.engine.durability(), hotpage::Durability::Sync);
    assert_eq!(show(&mut s), "sync");
    s.execute("SET synchronous_commit = off").expect("set");
    s.execute("RESET ALL").expect("reset all");
    assert_eq!(s.engine.durability(), hotpage::Durability::Sync);
}
