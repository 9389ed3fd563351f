//! Ending a session from outside (`stop.rs`): `pg_terminate_backend` ends an idle session
//! (FATAL 57P01) and one whose client stopped reading a large result; `pg_cancel_backend`
//! cancels a running statement (57014) and leaves the session; a shutdown no longer waits
//! for ever on a session whose client does not read.

mod support;

use hotpage_server::ServerConfig;
use postgres::error::SqlState;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use support::wire::{query_message, read_message, read_startup};
use support::{Running, connect, finishes_within, start, startup};

/// Rows of the large table, and each row's bytes: 48 MB, far more than the two sockets'
/// buffers hold, so a client that does not read leaves the server's write blocked.
const BIG_ROWS: i64 = 32_000;
const ROW_BYTES: usize = 1_500;

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Whether `pid` is a live session, as `pg_stat_activity` shows.
fn is_live(admin: &mut postgres::Client, pid: i32) -> bool {
    let row = admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
            &[&pid],
        )
        .expect("pg_stat_activity");
    row.get::<_, i64>(0) == 1
}

/// Whether `pid` is running a statement, as `pg_stat_activity` shows.
fn is_running(admin: &mut postgres::Client, pid: i32) -> bool {
    let row = admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND state = 'active'",
            &[&pid],
        )
        .expect("pg_stat_activity");
    row.get::<_, i64>(0) == 1
}

fn pid_of(client: &mut postgres::Client) -> i32 {
    client
        .query_one("SELECT pg_backend_pid()", &[])
        .expect("pid")
        .get(0)
}

fn make_big_table(admin: &mut postgres::Client) {
    admin
        .batch_execute(&format!(
            "CREATE TABLE big (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
             INSERT INTO big (v) SELECT repeat('x', {ROW_BYTES}) FROM generate_series(1, {BIG_ROWS});"
        ))
        .expect("the large table");
}

/// A raw client that starts a session and sends `sql`, reading nothing after startup: its
/// session's pid and socket.
fn raw_client_sending(addr: SocketAddr, sql: &str) -> (i32, TcpStream) {
    let mut socket = TcpStream::connect(addr).expect("connect");
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    socket.write_all(&startup()).expect("startup");
    let pid = read_startup(&mut socket);
    socket.write_all(&query_message(sql)).expect("the query");
    (pid, socket)
}

/// `pg_terminate_backend(pid)` from `admin`: whether it signalled a session.
fn terminate(admin: &mut postgres::Client, pid: i32) -> bool {
    admin
        .query_one("SELECT pg_terminate_backend($1)", &[&pid])
        .expect("terminate")
        .get(0)
}

/// On `server`: an admin session, which makes the large table, and a session whose client
/// asked for all of it and reads nothing, once its write has blocked: the admin, the stuck
/// session's pid and its client's socket.
fn stuck_session(server: &Running) -> (postgres::Client, i32, TcpStream) {
    let mut admin = connect(server.addr);
    make_big_table(&mut admin);
    let (pid, socket) = raw_client_sending(server.addr, "SELECT * FROM big");
    let active = wait_until(Duration::from_secs(30), || is_running(&mut admin, pid));
    assert!(active, "the stuck session's statement never started");
    // Long enough for the sockets' buffers to fill and the write to block.
    std::thread::sleep(Duration::from_millis(500));
    (admin, pid, socket)
}

#[test]
fn pg_terminate_backend_ends_an_idle_session_with_57p01() {
    let server = start(ServerConfig::default());
    let mut admin = connect(server.addr);
    let mut victim = connect(server.addr);
    let pid = pid_of(&mut victim);
    let signalled = terminate(&mut admin, pid);
    assert!(signalled);
    assert!(
        wait_until(Duration::from_secs(10), || !is_live(&mut admin, pid)),
        "the terminated session is still live"
    );
    let error = victim
        .simple_query("SELECT 1")
        .expect_err("the session is ended");
    assert!(
        error.code() == Some(&SqlState::ADMIN_SHUTDOWN) || error.is_closed(),
        "{error}"
    );
    // No such session any more: false, as PostgreSQL.
    let again = terminate(&mut admin, pid);
    assert!(!again);
    server.shutdown.shutdown();
    assert!(finishes_within(&server.run, Duration::from_secs(10)));
}

#[test]
fn pg_cancel_backend_cancels_the_running_statement_and_keeps_the_session() {
    let server = start(ServerConfig::default());
    let mut admin = connect(server.addr);
    let mut victim = connect(server.addr);
    let pid = pid_of(&mut victim);
    let sleeper = std::thread::spawn(move || {
        let started = Instant::now();
        let result = victim.simple_query("SELECT pg_sleep(60)");
        (result.map(|_| ()), started.elapsed(), victim)
    });
    let running = wait_until(Duration::from_secs(30), || is_running(&mut admin, pid));
    assert!(running, "pg_sleep never started");
    let signalled: bool = admin
        .query_one("SELECT pg_cancel_backend($1)", &[&pid])
        .expect("cancel")
        .get(0);
    assert!(signalled);
    let (result, took, mut victim) = sleeper.join().expect("sleeper");
    let error = result.expect_err("the sleep is cancelled");
    assert_eq!(error.code(), Some(&SqlState::QUERY_CANCELED), "{error}");
    assert!(took < Duration::from_secs(30), "cancelled after {took:?}");
    // The session goes on.
    let rows = victim
        .simple_query("SELECT 1")
        .expect("the session goes on");
    assert!(!rows.is_empty());
    server.shutdown.shutdown();
    assert!(finishes_within(&server.run, Duration::from_secs(10)));
}

#[test]
fn pg_terminate_backend_ends_a_session_whose_client_does_not_read() {
    let server = start(ServerConfig::default());
    let (mut admin, pid, _socket) = stuck_session(&server);
    let signalled = terminate(&mut admin, pid);
    assert!(signalled);
    assert!(
        wait_until(Duration::from_secs(15), || !is_live(&mut admin, pid)),
        "a session blocked writing to its client outlives pg_terminate_backend"
    );
    // The other sessions are untouched.
    let count: i64 = admin
        .query_one("SELECT count(*) FROM big", &[])
        .expect("count")
        .get(0);
    assert_eq!(count, BIG_ROWS);
    server.shutdown.shutdown();
    assert!(finishes_within(&server.run, Duration::from_secs(10)));
}

#[test]
fn a_shutdown_ends_a_session_whose_client_does_not_read() {
    let server = start(ServerConfig::default());
    let (admin, _pid, _socket) = stuck_session(&server);
    drop(admin);
    server.shutdown.shutdown();
    assert!(
        finishes_within(&server.run, Duration::from_secs(15)),
        "the shutdown waits for ever on a session blocked writing to its client"
    );
    let summary = server.run.join().expect("run").expect("a clean shutdown");
    assert_eq!(summary.sessions, 2);
}

#[test]
fn a_shutdown_lets_a_client_that_reads_slowly_have_its_whole_result() {
    let server = start(ServerConfig::default());
    let (admin, _pid, mut socket) = stuck_session(&server);
    drop(admin);
    server.shutdown.shutdown();
    // The client reads on, pausing 300 ms after every 2 MB: each of the server's sends
    // makes progress within the write tick, so its statement is let finish.
    let mut data_rows = 0i64;
    let mut read_since_pause = 0usize;
    let tags = loop {
        let (tag, body) = read_message(&mut socket);
        read_since_pause += body.len() + 5;
        if read_since_pause > 2 << 20 {
            std::thread::sleep(Duration::from_millis(300));
            read_since_pause = 0;
        }
        match tag {
            b'D' => data_rows += 1,
            b'C' => break String::from_utf8_lossy(&body).to_string(),
            b'E' => panic!("an error: {}", String::from_utf8_lossy(&body)),
            _ => {}
        }
    };
    assert_eq!(data_rows, BIG_ROWS);
    assert!(tags.starts_with(&format!("SELECT {BIG_ROWS}")), "{tags}");
    assert!(
        finishes_within(&server.run, Duration::from_secs(15)),
        "the shutdown did not end once the statement finished"
    );
}

#[test]
fn pg_terminate_backend_cancels_the_running_statement_and_ends_the_session() {
    let server = start(ServerConfig::default());
    let mut admin = connect(server.addr);
    let mut victim = connect(server.addr);
    let pid = pid_of(&mut victim);
    let sleeper = std::thread::spawn(move || {
        let started = Instant::now();
        let result = victim.simple_query("SELECT pg_sleep(60)");
        let after = victim.simple_query("SELECT 1");
        (result.map(|_| ()), after.map(|_| ()), started.elapsed())
    });
    let running = wait_until(Duration::from_secs(30), || is_running(&mut admin, pid));
    assert!(running, "pg_sleep never started");
    let signalled = terminate(&mut admin, pid);
    assert!(signalled);
    let (result, after, took) = sleeper.join().expect("sleeper");
    let error = result.expect_err("the sleep ran to its end");
    // The server sends one FATAL 57P01 and closes (the raw test below checks the bytes);
    // the postgres crate reports either that FATAL or the closed connection, whichever
    // its connection task sees first.
    match error.as_db_error() {
        Some(db) => {
            assert_eq!(db.code(), &SqlState::ADMIN_SHUTDOWN, "{error}");
            assert_eq!(db.severity(), "FATAL", "{error}");
        }
        None => assert!(error.is_closed(), "{error}"),
    }
    assert!(
        after.is_err(),
        "the session went on after pg_terminate_backend"
    );
    assert!(took < Duration::from_secs(30), "ended after {took:?}");
    assert!(wait_until(Duration::from_secs(10), || !is_live(
        &mut admin, pid
    )));
    server.shutdown.shutdown();
    assert!(finishes_within(&server.run, Duration::from_secs(10)));
}

/// On the wire: a statement stopped by `pg_terminate_backend` is answered with one
/// ErrorResponse, FATAL 57P01, and then the connection ends: no ERROR before it and no
/// ReadyForQuery after it, as PostgreSQL does.
#[test]
fn a_terminated_statement_gets_one_fatal_and_nothing_after_it() {
    let server = start(ServerConfig::default());
    let mut admin = connect(server.addr);
    let (pid, mut socket) = raw_client_sending(server.addr, "SELECT pg_sleep(60)");
    let running = wait_until(Duration::from_secs(30), || is_running(&mut admin, pid));
    assert!(running, "pg_sleep never started");
    let signalled = terminate(&mut admin, pid);
    assert!(signalled);
    let mut messages = Vec::new();
    let mut header = [0u8; 5];
    while std::io::Read::read_exact(&mut socket, &mut header).is_ok() {
        let len = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
        let mut body = vec![0u8; usize::try_from(len - 4).expect("length")];
        std::io::Read::read_exact(&mut socket, &mut body).expect("a message body");
        messages.push((header[0], String::from_utf8_lossy(&body).into_owned()));
    }
    // A RowDescription may come first (PostgreSQL sends one before it runs the sleep).
    let tags: Vec<u8> = messages.iter().map(|(tag, _)| *tag).collect();
    assert_eq!(
        tags.iter().filter(|&&tag| tag == b'E').count(),
        1,
        "{messages:?}"
    );
    assert!(
        !tags.contains(&b'Z'),
        "ReadyForQuery after the FATAL: {messages:?}"
    );
    let body = &messages.last().expect("a message").1;
    assert!(
        body.contains("SFATAL\0") && body.contains("C57P01\0"),
        "{body:?}"
    );
    server.shutdown.shutdown();
    assert!(finishes_within(&server.run, Duration::from_secs(10)));
}
