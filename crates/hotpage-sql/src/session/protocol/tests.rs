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
