//! A plain TCP session reads its socket with blocking calls (`blocking.rs`): what the
//! connection's runtime used to give must still hold. A shutdown ends a session that
//! waits for its client (FATAL 57P01) and the server's `run` returns; the idle timeout
//! ends an idle session (FATAL 57P05); messages pipelined in one write are all answered;
//! an answer longer than a write chunk arrives whole.

mod support;

use hotpage_server::ServerConfig;
use postgres::error::SqlState;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;
use support::wire::{query_message, read_message};
use support::{connect, finishes_within, start, startup};

fn config(idle_session_timeout: Option<Duration>) -> ServerConfig {
    ServerConfig {
        idle_session_timeout,
        ..ServerConfig::default()
    }
}

#[test]
fn a_shutdown_ends_a_session_blocked_on_its_client_with_57p01() {
    let server = start(config(None));
    let mut idle = connect(server.addr);
    idle.simple_query("SELECT 1").expect("a first statement");
    // The session now blocks in `recv`, waiting for its client, which says nothing more.
    std::thread::sleep(Duration::from_millis(200));
    server.shutdown.shutdown();
    assert!(
        finishes_within(&server.run, Duration::from_secs(10)),
        "the server waits for ever on a session blocked on its client"
    );
    let summary = server.run.join().expect("run").expect("a clean shutdown");
    assert_eq!(summary.sessions, 1);
    let error = idle
        .simple_query("SELECT 1")
        .expect_err("the session is ended");
    assert_eq!(error.code(), Some(&SqlState::ADMIN_SHUTDOWN), "{error}");
}

#[test]
fn an_idle_session_is_ended_by_the_idle_timeout_with_57p05() {
    let server = start(config(Some(Duration::from_millis(300))));
    let mut idle = connect(server.addr);
    idle.simple_query("SELECT 1").expect("a first statement");
    std::thread::sleep(Duration::from_millis(900));
    let error = idle
        .simple_query("SELECT 1")
        .expect_err("the session timed out");
    assert_eq!(
        error.code(),
        Some(&SqlState::IDLE_SESSION_TIMEOUT),
        "{error}"
    );
    // A session that keeps talking is not ended.
    let mut busy = connect(server.addr);
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(100));
        busy.simple_query("SELECT 1")
            .expect("a busy session goes on");
    }
    server.shutdown.shutdown();
    assert!(finishes_within(&server.run, Duration::from_secs(10)));
}

/// Reads messages until the `count`-th ReadyForQuery; returns the tags read.
fn read_until_ready(socket: &mut TcpStream, count: usize) -> Vec<u8> {
    let mut tags = Vec::new();
    let mut ready = 0;
    while ready < count {
        let (tag, _) = read_message(socket);
        tags.push(tag);
        ready += usize::from(tag == b'Z');
    }
    tags
}

#[test]
fn messages_pipelined_in_one_write_are_each_answered() {
    let server = start(config(None));
    let mut socket = TcpStream::connect(server.addr).expect("connect");
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    socket.write_all(&startup()).expect("startup");
    read_until_ready(&mut socket, 1);
    // Three queries in one write, with a fourth cut in two across two writes.
    let mut bytes = [
        query_message("SELECT 1"),
        query_message("SELECT 2"),
        query_message("SELECT 3"),
    ]
    .concat();
    let fourth = query_message("SELECT 4");
    bytes.extend_from_slice(&fourth[..3]);
    socket.write_all(&bytes).expect("pipelined queries");
    std::thread::sleep(Duration::from_millis(100));
    socket.write_all(&fourth[3..]).expect("the fourth's rest");
    let tags = read_until_ready(&mut socket, 4);
    assert_eq!(
        tags,
        b"TDCZTDCZTDCZTDCZ",
        "{:?}",
        String::from_utf8_lossy(&tags)
    );
    server.shutdown.shutdown();
    assert!(finishes_within(&server.run, Duration::from_secs(10)));
}

#[test]
fn an_answer_longer_than_a_write_chunk_arrives_whole_and_in_order() {
    let server = start(config(None));
    let mut client = connect(server.addr);
    client
        .batch_execute(
            "CREATE TABLE big (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)",
        )
        .expect("create");
    let rows = 3000_i64;
    let mut txn = client.transaction().expect("begin");
    let insert = txn
        .prepare("INSERT INTO big (v) VALUES ($1)")
        .expect("prepare");
    for i in 1..=rows {
        txn.execute(&insert, &[&format!("{i:0>100}")])
            .expect("insert");
    }
    txn.commit().expect("commit");
    // About 330 KiB of DataRows in one answer: several 64 KiB writes.
    let answer = client.query("SELECT id, v FROM big", &[]).expect("select");
    assert_eq!(answer.len(), usize::try_from(rows).expect("rows"));
    for (row, expected) in answer.iter().zip(1..) {
        let id: i64 = row.get(0);
        let v: String = row.get(1);
        assert_eq!((id, v), (expected, format!("{expected:0>100}")));
    }
    server.shutdown.shutdown();
    assert!(finishes_within(&server.run, Duration::from_secs(10)));
}
