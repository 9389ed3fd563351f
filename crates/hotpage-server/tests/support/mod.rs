//! What the server's integration tests share: a server on a fresh database, running on a
//! thread of its own, and a client for it.

#![allow(dead_code)] // each test file uses its own part

pub mod wire;

use hotpage::{Database, Options};
use hotpage_server::{Server, ServerConfig, ServerError, ServerSummary, ShutdownHandle};
use hotpage_sql::SqlDatabase;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A server running on its own thread.
pub struct Running {
    pub addr: SocketAddr,
    pub shutdown: ShutdownHandle,
    /// The thread of `Server::run`: it ends once the server has shut down.
    pub run: JoinHandle<Result<ServerSummary, ServerError>>,
}

/// A server on a fresh database in a temporary directory (kept: a test that fails can be
/// looked at), listening on a loopback port the system chose; `config`'s `listen` is
/// replaced by that.
pub fn start(config: ServerConfig) -> Running {
    let dir = tempfile::tempdir().expect("temp dir").keep();
    let options = Options {
        create_if_missing: true,
        ..Options::default()
    };
    let engine = Database::open(dir.join("db"), options).expect("open");
    let sql = SqlDatabase::new(Arc::new(engine)).expect("sql");
    let config = ServerConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        ..config
    };
    let server = Server::bind(sql, config).expect("bind");
    Running {
        addr: server.local_addr(),
        shutdown: server.shutdown_handle(),
        run: std::thread::spawn(move || server.run()),
    }
}

/// A client of user `t` on database `d`, trusted, in clear.
pub fn connect(addr: SocketAddr) -> postgres::Client {
    let conninfo = format!("host=127.0.0.1 port={} user=t dbname=d", addr.port());
    postgres::Client::connect(&conninfo, postgres::NoTls).expect("connect")
}

/// A startup packet (protocol 3.0, user `t`, database `d`).
pub fn startup() -> Vec<u8> {
    let mut body = 196_608i32.to_be_bytes().to_vec();
    body.extend_from_slice(b"user\0t\0database\0d\0\0");
    let mut packet = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    packet.extend_from_slice(&body);
    packet
}

/// Waits up to `limit` for the server's thread to end.
pub fn finishes_within(
    run: &JoinHandle<Result<ServerSummary, ServerError>>,
    limit: Duration,
) -> bool {
    let start = Instant::now();
    while !run.is_finished() {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}
