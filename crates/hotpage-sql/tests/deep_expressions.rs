//! Deeply nested expressions on a thread with Rust's default 2 MiB stack, the smallest a
//! caller of the library is likely to use: up to the depth limit every operator parses,
//! plans and evaluates; past it the statement is 54001, however deep (a 3 KB expression
//! once overflowed a server connection's stack and aborted the whole server).

use hotpage::{Database, MemStorage, Options, Storage};
use hotpage_sql::{SqlDatabase, SqlSession, TsqlSession, Value};
use std::path::Path;
use std::sync::Arc;

/// The deepest chain of binary operators that runs: 999 operators nest 1,000 levels.
const OPERATORS_MAX: usize = 999;

const STACK_BYTES: usize = 2 << 20;

fn open() -> Arc<SqlDatabase> {
    let mem: Arc<dyn Storage> = MemStorage::new(7);
    let engine =
        Database::open_with_storage(mem, Path::new("m"), Options::default()).expect("open");
    SqlDatabase::new(Arc::new(engine)).expect("sql")
}

/// Runs `body` on a thread with a 2 MiB stack; a stack overflow aborts the test binary.
fn on_small_stack(body: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(STACK_BYTES)
        .spawn(body)
        .expect("spawn")
        .join()
        .expect("the thread panicked");
}

fn first_value(session: &mut SqlSession, sql: &str) -> Value {
    let results = session
        .execute(sql)
        .unwrap_or_else(|e| panic!("{} …: {e:?}", &sql[..60.min(sql.len())]));
    results
        .last()
        .and_then(|r| r.rows.first())
        .and_then(|row| row.first())
        .cloned()
        .expect("a row")
}

fn sqlstate(session: &mut SqlSession, sql: &str) -> String {
    match session.execute(sql) {
        Ok(_) => panic!("{} … should have failed", &sql[..60.min(sql.len())]),
        Err(e) => e.sqlstate.to_string(),
    }
}

#[test]
fn every_operator_runs_up_to_the_limit_and_is_54001_past_it() {
    on_small_stack(|| {
        let sql = open();
        let mut s = sql.session();
        let chains: [(&str, &str, Value); 6] = [
            ("1", "+1", Value::Int(OPERATORS_MAX as i64 + 1)),
            ("2", "*1", Value::Int(2)),
            ("true", " AND true", Value::Bool(true)),
            ("false", " OR false", Value::Bool(false)),
            (
                "'a'",
                "||'b'",
                Value::Text(format!("a{}", "b".repeat(OPERATORS_MAX))),
            ),
            ("7", "::int", Value::Int(7)),
        ];
        for (first, op, expected) in chains {
            let deepest = format!("SELECT {first}{}", op.repeat(OPERATORS_MAX));
            assert_eq!(first_value(&mut s, &deepest), expected, "{op}");
            for operators in [OPERATORS_MAX + 1, 20_000, 200_000] {
                let deeper = format!("SELECT {first}{}", op.repeat(operators));
                assert_eq!(sqlstate(&mut s, &deeper), "54001", "{op} × {operators}");
            }
        }
        // The session is whole afterwards.
        assert_eq!(first_value(&mut s, "SELECT 40 + 2"), Value::Int(42));
    });
}

#[test]
fn a_deep_expression_in_a_scan_an_insert_and_a_prepared_statement() {
    on_small_stack(|| {
        let sql = open();
        let mut s = sql.session();
        s.execute("CREATE TABLE t (id bigint PRIMARY KEY, v bigint)")
            .expect("create");
        let deep = format!("v{}", "+1".repeat(OPERATORS_MAX - 1));
        s.execute(&format!(
            "INSERT INTO t VALUES (1, 0{})",
            "+1".repeat(OPERATORS_MAX - 1)
        ))
        .expect("insert");
        s.execute("INSERT INTO t VALUES (2, 5), (3, 6)")
            .expect("insert");
        let scan = format!("SELECT count(*) FROM t WHERE {deep} > 1003");
        assert_eq!(first_value(&mut s, &scan), Value::Int(2));
        let prepared = s
            .prepare(&format!("SELECT {deep} FROM t WHERE id = $1"))
            .expect("prepare");
        let result = s
            .execute_prepared(&prepared, &[Value::Int(2)])
            .expect("execute");
        assert_eq!(result.rows, [[Value::Int(5 + OPERATORS_MAX as i64 - 1)]]);
        let too_deep = format!("SELECT {deep}+1+1 FROM t WHERE id = $1");
        match s.prepare(&too_deep) {
            Ok(_) => panic!("a statement too deep prepared"),
            Err(e) => assert_eq!(e.sqlstate, "54001"),
        }
    });
}

#[test]
fn tsql_batches_refuse_a_deep_expression_too() {
    on_small_stack(|| {
        let sql = open();
        let mut t = TsqlSession::new(sql.session());
        let (_, error) = t.execute_script(&format!("SELECT 1{}", "+1".repeat(20_000)));
        assert_eq!(error.expect("too deep").sqlstate, "54001");
        let (out, error) = t.execute_script("DECLARE @x int = 1\nSELECT @x + 1");
        assert!(error.is_none(), "{error:?}");
        assert!(!out.is_empty());
    });
}
