//! A panic while answering a client (reached through the test build's
//! `session::TEST_PANIC_QUERY`) ends only that connection, with a FATAL XX000 ErrorResponse
//! that says it is an internal error; the other sessions, and new ones, are served on.
//! Before, the connection just closed (the client saw an unexpected EOF).

use crate::session::TEST_PANIC_QUERY;
use crate::{Server, ServerConfig};
use hotpage::{Database, Options};
use hotpage_sql::SqlDatabase;
use std::net::SocketAddr;
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

#[test]
fn a_panic_answers_fatal_xx000_and_the_server_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (addr, shutdown) = start(dir.path());
    let mut other = connect(addr);
    other
        .batch_execute("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)")
        .expect("setup");
    let mut doomed = connect(addr);
    doomed
        .batch_execute("BEGIN; INSERT INTO t VALUES (2)")
        .expect("an open transaction");
    let error = doomed
        .simple_query(TEST_PANIC_QUERY)
        .expect_err("the panic is an error");
    let db_error = error.as_db_error().unwrap_or_else(|| panic!("{error:?}"));
    assert_eq!(db_error.code().code(), "XX000", "{db_error:?}");
    assert_eq!(db_error.severity(), "FATAL");
    assert!(
        db_error.message().starts_with("internal error: ")
            && db_error.message().contains("please report"),
        "{}",
        db_error.message()
    );
    // The connection is closed; its open transaction is gone with it.
    assert!(doomed.simple_query("SELECT 1").is_err());
    assert_eq!(count(&mut other), 1);
    other
        .batch_execute("INSERT INTO t VALUES (2)")
        .expect("the doomed session's key 2 is free");
    assert_eq!(count(&mut connect(addr)), 2, "a new session is served");
    drop(other);
    shutdown.shutdown();
}
