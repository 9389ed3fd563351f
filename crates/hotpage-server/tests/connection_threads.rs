//! Each connection runs on its own thread, at most two per connection slot: past that a
//! connection is refused at once with FATAL 53300 (as PostgreSQL's postmaster does when it
//! has too many children), and a slot freed lets the next one in.

mod support;

use hotpage_server::ServerConfig;
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;
use support::connect;

fn start(max_connections: usize) -> (SocketAddr, hotpage_server::ShutdownHandle) {
    let server = support::start(ServerConfig {
        max_connections,
        startup_timeout: Duration::from_secs(30),
        ..ServerConfig::default()
    });
    (server.addr, server.shutdown)
}

/// The one value `SELECT 1` returns, as text.
fn select_one(client: &mut postgres::Client) -> Option<String> {
    client
        .simple_query("SELECT 1")
        .expect("query")
        .into_iter()
        .find_map(|message| match message {
            postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        })
}

/// What the server sends to a connection that says nothing, until it closes it.
fn unprompted_answer(addr: SocketAddr) -> Vec<u8> {
    let mut socket = TcpStream::connect(addr).expect("connect");
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut bytes = Vec::new();
    let _ = socket.read_to_end(&mut bytes);
    bytes
}

#[test]
fn connections_past_twice_the_slots_are_refused_at_once() {
    let (addr, shutdown) = start(1);
    let mut session = connect(addr);
    // The one slot is taken; a second connection still gets a thread (and is refused
    // at its startup message, as before).
    let silent = TcpStream::connect(addr).expect("connect");
    // Give the server time to accept the silent one and give it its thread.
    std::thread::sleep(Duration::from_millis(300));
    let answer = unprompted_answer(addr);
    assert_eq!(answer.first(), Some(&b'E'), "{answer:?}");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.contains("53300"), "{text}");
    assert!(text.contains("sorry, too many clients already"), "{text}");
    // The session is undisturbed; once the silent connection has gone, a new one is let
    // in as far as its startup message (the slot is still the session's).
    assert_eq!(select_one(&mut session).as_deref(), Some("1"));
    drop(silent);
    std::thread::sleep(Duration::from_millis(300));
    let refused = postgres::Client::connect(
        &format!("host=127.0.0.1 port={} user=t dbname=d", addr.port()),
        postgres::NoTls,
    )
    .err()
    .and_then(|e| e.code().cloned());
    assert_eq!(
        refused,
        Some(postgres::error::SqlState::TOO_MANY_CONNECTIONS)
    );
    drop(session);
    std::thread::sleep(Duration::from_millis(300));
    let mut again = connect(addr);
    assert_eq!(select_one(&mut again).as_deref(), Some("1"));
    drop(again);
    shutdown.shutdown();
}
