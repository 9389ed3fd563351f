//! A running statement stops on a cancel or its `statement_timeout` (57014) wherever it
//! can run long: a table scan, a window over sliding frames, a T-SQL WHILE loop (even
//! inside TRY … CATCH), `pg_sleep`.
//! What it was writing is not applied, and a transaction block it ran in is failed.
//! (Before 2026-12-05 the server looked only between statements, so each of these ran to
//! its end.)

use hotpage_sql::{SqlDatabase, SqlError, SqlSession, TsqlSession, TxnStatus, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod common;
use common::open_mem;

fn cancelled(error: &SqlError, why: &str) {
    assert_eq!(error.sqlstate, "57014", "{error:?}");
    assert_eq!(error.message, format!("canceling statement due to {why}"));
}

fn one_value(s: &mut SqlSession, sql: &str) -> Value {
    let results = s.execute(sql).expect(sql);
    results.last().expect("a result").rows[0][0].clone()
}

/// A session on a new database with `big_table`, and a 1 ms statement timeout set.
fn big_table_and_1ms_timeout() -> (Arc<SqlDatabase>, SqlSession) {
    let db = open_mem();
    let mut s = db.session();
    big_table(&mut s);
    // 1 ms: a statement that reads 131,072 rows takes far longer.
    s.execute("SET statement_timeout = '1ms'").expect("set");
    (db, s)
}

/// `SELECT count(*) FROM {from}` with the session's timeout turned off.
fn count_without_timeout(s: &mut SqlSession, from: &str) -> Value {
    s.execute("SET statement_timeout = 0").expect("off");
    one_value(s, &format!("SELECT count(*) FROM {from}"))
}

/// A table of 2^17 rows (131,072), doubled with INSERT … SELECT.
fn big_table(s: &mut SqlSession) {
    s.execute("CREATE TABLE big (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)")
        .expect("create");
    s.execute("INSERT INTO big (v) VALUES ('x')")
        .expect("first row");
    for _ in 0..17 {
        s.execute("INSERT INTO big (v) SELECT v FROM big")
            .expect("double");
    }
    assert_eq!(
        one_value(s, "SELECT count(*) FROM big"),
        Value::Int(1 << 17)
    );
}

#[test]
fn a_scan_stops_at_its_timeout() {
    let (_db, mut s) = big_table_and_1ms_timeout();
    let error = s
        .execute("SELECT count(*) FROM big WHERE length(v) = 1")
        .unwrap_err();
    cancelled(&error, "statement timeout");
    // The same statement with no timeout reads them all.
    assert_eq!(
        count_without_timeout(&mut s, "big WHERE length(v) = 1"),
        Value::Int(1 << 17)
    );
}

#[test]
fn a_window_over_sliding_frames_stops_at_its_timeout() {
    let db = open_mem();
    let mut s = db.session();
    s.execute("SET statement_timeout = '100ms'").expect("set");
    // Each row's frame runs to the end: 40,000 rows make 800 million additions.
    let started = Instant::now();
    let error = s
        .execute(
            "SELECT max(t) FROM (SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN CURRENT ROW \
             AND UNBOUNDED FOLLOWING) AS t FROM generate_series(1, 40000) x) q",
        )
        .unwrap_err();
    cancelled(&error, "statement timeout");
    assert!(started.elapsed() < Duration::from_secs(20));
    // Frames of three rows over the same rows finish: the largest is 39,998 + 39,999 + 40,000.
    s.execute("SET statement_timeout = 0").expect("off");
    assert_eq!(
        one_value(
            &mut s,
            "SELECT max(t) FROM (SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN CURRENT ROW \
             AND 2 FOLLOWING) AS t FROM generate_series(1, 40000) x) q"
        ),
        Value::Int(119_997)
    );
}

#[test]
fn an_insert_select_stopped_inserts_nothing_and_fails_its_block() {
    let (_db, mut s) = big_table_and_1ms_timeout();
    s.execute("CREATE TABLE copy (id bigint PRIMARY KEY, v text)")
        .expect("create");
    let error = s
        .execute("INSERT INTO copy SELECT id, v FROM big")
        .unwrap_err();
    cancelled(&error, "statement timeout");
    assert_eq!(count_without_timeout(&mut s, "copy"), Value::Int(0));

    s.execute("BEGIN; INSERT INTO copy VALUES (1, 'kept?')")
        .expect("block");
    s.execute("SET statement_timeout = '50ms'").expect("set");
    cancelled(
        &s.execute("SELECT pg_sleep(60)").unwrap_err(),
        "statement timeout",
    );
    assert_eq!(s.txn_status(), TxnStatus::Failed);
    s.execute("ROLLBACK").expect("rollback");
    assert_eq!(
        one_value(&mut s, "SELECT count(*) FROM copy"),
        Value::Int(0)
    );
}

#[test]
fn a_cancel_from_another_thread_stops_a_sleep_and_is_spent() {
    let db = open_mem();
    let mut s = db.session();
    let flag = Arc::new(AtomicBool::new(false));
    s.set_cancel_flag(Arc::clone(&flag));
    // A cancel that came while nothing ran does not stop the next statement.
    flag.store(true, Ordering::Relaxed);
    s.execute("SELECT pg_sleep(0.05)").expect("not cancelled");
    let canceller = {
        let flag = Arc::clone(&flag);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            flag.store(true, Ordering::Relaxed);
        })
    };
    let started = Instant::now();
    cancelled(
        &s.execute("SELECT pg_sleep(60)").unwrap_err(),
        "user request",
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    canceller.join().expect("canceller");
    s.execute("SELECT pg_sleep(0.05)")
        .expect("the cancel is spent");
}

#[test]
fn a_server_default_applies_until_the_session_sets_its_own() {
    let db = open_mem();
    let mut s = db.session();
    s.set_default_statement_timeout(Some(Duration::from_millis(50)));
    assert_eq!(s.statement_timeout(), Some(Duration::from_millis(50)));
    assert_eq!(
        one_value(&mut s, "SHOW statement_timeout"),
        Value::Text("50ms".into())
    );
    cancelled(
        &s.execute("SELECT pg_sleep(60)").unwrap_err(),
        "statement timeout",
    );
    s.execute("SET statement_timeout = '2s'").expect("set");
    assert_eq!(s.statement_timeout(), Some(Duration::from_secs(2)));
    s.execute("SELECT pg_sleep(0.1)").expect("within 2 s");
    s.execute("SET statement_timeout TO DEFAULT")
        .expect("default");
    assert_eq!(s.statement_timeout(), Some(Duration::from_millis(50)));
}

#[test]
fn a_tsql_loop_stops_at_its_timeout_even_inside_try_catch() {
    let db = open_mem();
    let mut sql = db.session();
    sql.set_default_statement_timeout(Some(Duration::from_millis(100)));
    let mut t = TsqlSession::new(sql);
    // The loops would end by themselves, seconds later (so that a test of a loop that is
    // not stopped ends too): the timeout stops them first.
    for batch in [
        "DECLARE @i bigint = 0\nWHILE @i < 5000000\nBEGIN\n  SET @i += 1\nEND",
        "DECLARE @i bigint = 0\nWHILE @i < 5000000\nBEGIN\n  BEGIN TRY\n    SET @i += 1\n  END TRY\n  BEGIN CATCH\n    PRINT 'caught'\n  END CATCH\nEND",
        "BEGIN TRY\n  SELECT pg_sleep(60)\nEND TRY\nBEGIN CATCH\n  PRINT 'caught'\nEND CATCH",
    ] {
        let started = Instant::now();
        let (outputs, error) = t.execute_batch(batch);
        let error = error.unwrap_or_else(|| panic!("{batch} ended by itself"));
        cancelled(&error, "statement timeout");
        assert!(outputs.is_empty(), "the CATCH block ran: {outputs:?}");
        assert!(started.elapsed() < Duration::from_secs(20));
    }
    // The next batch has a timeout of its own.
    let (_, error) = t.execute_batch("DECLARE @i int = 1\nSET @i += 1");
    assert!(error.is_none(), "{error:?}");
}

/// Session A holds key 1 in an open transaction; `run` gets a second session, which then
/// waits for that key. Returns what `run` returned and how long it took.
fn while_a_holds_key_1<T>(run: impl FnOnce(&mut SqlSession) -> T) -> (T, Duration) {
    let db = open_mem();
    let mut a = db.session();
    a.execute("CREATE TABLE k (id int PRIMARY KEY)")
        .expect("create");
    a.execute("BEGIN; INSERT INTO k VALUES (1)")
        .expect("a holds key 1");
    let mut b = db.session();
    let started = Instant::now();
    let outcome = run(&mut b);
    let took = started.elapsed();
    a.execute("ROLLBACK").expect("a rolls back");
    (outcome, took)
}

#[test]
fn a_wait_for_another_transactions_key_ends_at_lock_timeout_statement_timeout_or_cancel() {
    let (error, took) = while_a_holds_key_1(|b| {
        b.execute("SET lock_timeout = '100ms'").expect("set");
        b.execute("INSERT INTO k VALUES (1)").unwrap_err()
    });
    assert_eq!(error.sqlstate, "55P03", "{error:?}");
    assert_eq!(error.message, "canceling statement due to lock timeout");
    assert!(took < Duration::from_secs(20), "{took:?}");

    let (error, _) = while_a_holds_key_1(|b| {
        b.execute("SET statement_timeout = '100ms'").expect("set");
        b.execute("INSERT INTO k VALUES (1)").unwrap_err()
    });
    cancelled(&error, "statement timeout");

    let (error, _) = while_a_holds_key_1(|b| {
        let flag = Arc::new(AtomicBool::new(false));
        b.set_cancel_flag(Arc::clone(&flag));
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            flag.store(true, Ordering::Relaxed);
        });
        let error = b.execute("INSERT INTO k VALUES (1)").unwrap_err();
        canceller.join().expect("canceller");
        error
    });
    cancelled(&error, "user request");
}

#[test]
fn without_limits_a_key_wait_lasts_until_the_other_transaction_ends() {
    let db = open_mem();
    let mut a = db.session();
    a.execute("CREATE TABLE k (id int PRIMARY KEY)")
        .expect("create");
    a.execute("BEGIN; INSERT INTO k VALUES (1)")
        .expect("a holds key 1");
    let mut b = db.session();
    b.set_cancel_flag(Arc::new(AtomicBool::new(false)));
    let waiter = std::thread::spawn(move || b.execute("INSERT INTO k VALUES (1)"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(!waiter.is_finished(), "b stopped waiting with no limit set");
    a.execute("ROLLBACK").expect("a rolls back");
    waiter
        .join()
        .expect("b")
        .expect("b inserts key 1 once a is gone");
}

/// `SELECT {call}` in `s`: its one value.
fn call(s: &mut SqlSession, call: &str) -> Value {
    one_value(s, &format!("SELECT {call}"))
}

#[test]
fn pg_cancel_backend_sets_the_other_sessions_cancel_flag() {
    let db = open_mem();
    let mut admin = db.session();
    let mut victim = db.session();
    let flag = Arc::new(AtomicBool::new(false));
    victim.set_cancel_flag(Arc::clone(&flag));
    let pid = victim.pid();
    assert_eq!(
        call(&mut admin, &format!("pg_cancel_backend({pid})")),
        Value::Bool(true)
    );
    assert!(flag.load(Ordering::Relaxed), "the victim's flag is not set");
    // Every session can be cancelled, one without a flag of its own too.
    let plain = db.session();
    assert_eq!(
        call(&mut admin, &format!("pg_cancel_backend({})", plain.pid())),
        Value::Bool(true)
    );
    // A pid that is no live session is false; NULL is NULL (as PostgreSQL).
    drop(plain);
    assert_eq!(
        call(&mut admin, "pg_cancel_backend(987654)"),
        Value::Bool(false)
    );
    assert_eq!(call(&mut admin, "pg_cancel_backend(NULL)"), Value::Null);
    assert_eq!(
        call(&mut admin, "pg_cancel_backend(-1)"),
        Value::Bool(false)
    );
}

#[test]
fn pg_cancel_backend_stops_a_running_sleep() {
    let db = open_mem();
    let mut victim = db.session();
    let pid = victim.pid();
    let sleeper = std::thread::spawn(move || {
        let started = Instant::now();
        let result = victim.execute("SELECT pg_sleep(60)");
        (result.map(|_| ()), started.elapsed())
    });
    let mut admin = db.session();
    let active =
        format!("SELECT count(*) FROM pg_stat_activity WHERE pid = {pid} AND state = 'active'");
    let deadline = Instant::now() + Duration::from_secs(30);
    while one_value(&mut admin, &active) != Value::Int(1) {
        assert!(Instant::now() < deadline, "pg_sleep never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        call(&mut admin, &format!("pg_cancel_backend({pid})")),
        Value::Bool(true)
    );
    let (result, took) = sleeper.join().expect("sleeper");
    cancelled(&result.unwrap_err(), "user request");
    assert!(took < Duration::from_secs(30), "cancelled after {took:?}");
}

#[test]
fn pg_terminate_backend_calls_the_sessions_hook_and_waits_only_when_asked() {
    let db = open_mem();
    let mut admin = db.session();
    let mut served = db.session();
    let called = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&called);
    served.set_terminate_hook(Arc::new(move || seen.store(true, Ordering::Relaxed)));
    let pid = served.pid();
    assert_eq!(
        call(&mut admin, &format!("pg_terminate_backend({pid})")),
        Value::Bool(true)
    );
    assert!(called.load(Ordering::Relaxed), "the hook was not called");
    // The terminated session's statements stop with 57P01, however often its statement
    // clock starts again (a cancel would be forgotten at the next start).
    for _ in 0..2 {
        let started = Instant::now();
        let error = served.execute("SELECT pg_sleep(10)").unwrap_err();
        assert_eq!(error.sqlstate, "57P01", "{error:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
    // With a timeout it waits for the session to end: this one does not, so false.
    let started = Instant::now();
    assert_eq!(
        call(&mut admin, &format!("pg_terminate_backend({pid}, 100)")),
        Value::Bool(false)
    );
    assert!(started.elapsed() >= Duration::from_millis(100));
    // A session that ends within the timeout: true.
    let ender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        drop(served);
    });
    assert_eq!(
        call(&mut admin, &format!("pg_terminate_backend({pid}, 10000)")),
        Value::Bool(true)
    );
    ender.join().expect("ender");
    // An embedded session has no connection to end: false.
    let embedded = db.session();
    assert_eq!(
        call(
            &mut admin,
            &format!("pg_terminate_backend({})", embedded.pid())
        ),
        Value::Bool(false)
    );
    let error = admin
        .execute(&format!(
            "SELECT pg_terminate_backend({}, -5)",
            embedded.pid()
        ))
        .unwrap_err();
    assert_eq!(error.sqlstate, "22003", "{error:?}");
}
