//! A panic while answering a client (reached through the test build's
//! `session::TEST_PANIC_QUERY`) ends only that connection, with a FATAL XX000 ErrorResponse
//! that says it is an internal error; the other sessions, and new ones, are served on.
//! Before, the connection just closed (the client saw an unexpected EOF).
//!
//! The doomed connection speaks the protocol by hand and reads to the end of the stream:
//! a client library may report a FATAL followed at once by the close as just "closed" (the
//! `postgres` crate did, about one run in twelve), which would hide whether it was sent.

use crate::session::TEST_PANIC_QUERY;
use crate::{Server, ServerConfig};
use hotpage::{Database, Options};
use hotpage_sql::SqlDatabase;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

fn start(dir: &std::path::Path) -> (SocketAddr, crate::ShutdownHandle) {
    let options = Options {
        create_if_missing: true,
        ..Options::default()
    };
    let engine = Database::open(dir.join("db"), options).expect("open");
    let sql = SqlDatabase::new(Arc::new(engine)).expect("sql");
    let config = ServerConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        startup_timeout: Duration::from_secs(30),
        ..ServerConfig::default()
    };
    let server = Server::bind(sql, config).expect("bind");
    let addr = server.local_addr();
    let handle = server.shutdown_handle();
    std::thread::spawn(move || server.run());
    (addr, handle)
}

fn connect(addr: SocketAddr) -> postgres::Client {
    let conninfo = format!("host=127.0.0.1 port={} user=t dbname=d", addr.port());
    postgres::Client::connect(&conninfo, postgres::NoTls).expect("connect")
}

fn count(client: &mut postgres::Client) -> i64 {
    client
        .query_one("SELECT count(*) FROM t", &[])
        .expect("count")
        .get(0)
}

/// One frontend message: its type byte, then its length and body.
fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut bytes = vec![kind];
    bytes.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    bytes.extend_from_slice(body);
    bytes
}

fn query(sql: &str) -> Vec<u8> {
    message(b'Q', format!("{sql}\0").as_bytes())
}

/// A raw connection, past the startup: it has read the first ReadyForQuery.
fn connect_raw(addr: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut body = 196_608u32.to_be_bytes().to_vec(); // protocol 3.0
    body.extend_from_slice(b"user\0t\0database\0d\0\0");
    let mut startup = (body.len() as u32 + 4).to_be_bytes().to_vec();
    startup.extend_from_slice(&body);
    stream.write_all(&startup).expect("startup");
    read_until_ready(&mut stream);
    stream
}

/// Reads backend messages up to a ReadyForQuery; returns their type bytes.
fn read_until_ready(stream: &mut TcpStream) -> Vec<u8> {
    let mut kinds = Vec::new();
    loop {
        let mut header = [0u8; 5];
        stream.read_exact(&mut header).expect("a message header");
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        let mut body = vec![0u8; len - 4];
        stream.read_exact(&mut body).expect("a message body");
        kinds.push(header[0]);
        if header[0] == b'Z' {
            return kinds;
        }
    }
}

#[test]
fn a_panic_answers_fatal_xx000_and_the_server_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (addr, shutdown) = start(dir.path());
    let mut other = connect(addr);
    other
        .batch_execute("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)")
        .expect("setup");
    let mut doomed = connect_raw(addr);
    doomed
        .write_all(&query("BEGIN; INSERT INTO t VALUES (2)"))
        .expect("send");
    let answered = read_until_ready(&mut doomed);
    assert!(
        !answered.contains(&b'E'),
        "the open transaction began: {answered:?}"
    );
    doomed.write_all(&query(TEST_PANIC_QUERY)).expect("send");
    // Everything up to the close: one ErrorResponse, FATAL XX000, saying what happened.
    let mut rest = Vec::new();
    doomed.read_to_end(&mut rest).expect("read to the close");
    assert_eq!(rest.first(), Some(&b'E'), "an ErrorResponse: {rest:?}");
    let text = String::from_utf8_lossy(&rest);
    for field in ["SFATAL\0", "VFATAL\0", "CXX000\0", "Minternal error: "] {
        assert!(text.contains(field), "{field:?} in {text:?}");
    }
    assert!(text.contains("please report"), "{text:?}");
    assert!(
        !text.contains('Z'),
        "no ReadyForQuery after a FATAL: {text:?}"
    );
    // Its open transaction is gone with it.
    assert_eq!(count(&mut other), 1);
    other
        .batch_execute("INSERT INTO t VALUES (2)")
        .expect("the doomed session's key 2 is free");
    assert_eq!(count(&mut connect(addr)), 2, "a new session is served");
    drop(other);
    shutdown.shutdown();
}
