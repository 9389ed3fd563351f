//! What a connection pool sends before it hands a connection to its next user
//! (PgBouncer's `server_reset_query = DISCARD ALL`): `DISCARD ALL` resets the settings and
//! drops every prepared statement, the protocol's (Parse) included, as PostgreSQL's does;
//! so does `DEALLOCATE ALL` for the statements.

mod support;

use hotpage_server::ServerConfig;
use postgres::error::SqlState;
use std::time::Duration;
use support::{connect, finishes_within, start};

fn show(client: &mut postgres::Client, name: &str) -> String {
    client
        .query_one(&format!("SHOW {name}"), &[])
        .expect("show")
        .get(0)
}

#[test]
fn discard_all_and_deallocate_all_drop_the_protocols_prepared_statements() {
    let server = start(ServerConfig::default());
    let mut client = connect(server.addr);
    client
        .batch_execute("CREATE TABLE t (id bigint PRIMARY KEY); INSERT INTO t VALUES (41)")
        .expect("a table");
    for reset in ["DISCARD ALL", "DEALLOCATE ALL"] {
        let statement = client
            .prepare("SELECT id + 1 FROM t WHERE id = $1")
            .expect("prepare");
        let sum: i64 = client
            .query_one(&statement, &[&41i64])
            .expect("a prepared query")
            .get(0);
        assert_eq!(sum, 42);
        client
            .batch_execute("SET statement_timeout = '5s'")
            .expect("set");
        client.batch_execute(reset).expect(reset);
        let error = client
            .query_one(&statement, &[&41i64])
            .expect_err("the statement is gone");
        assert_eq!(
            error.code(),
            Some(&SqlState::INVALID_SQL_STATEMENT_NAME),
            "{reset}: {error}"
        );
        let timeout = show(&mut client, "statement_timeout");
        if reset == "DISCARD ALL" {
            assert_eq!(timeout, "0", "DISCARD ALL resets the settings");
        } else {
            assert_eq!(timeout, "5s", "DEALLOCATE ALL leaves the settings");
        }
    }
    // The session goes on, and prepares again.
    let statement = client
        .prepare("SELECT id * 2 FROM t WHERE id = $1")
        .expect("prepare");
    let double: i64 = client
        .query_one(&statement, &[&41i64])
        .expect("a new prepared query")
        .get(0);
    assert_eq!(double, 82);
    server.shutdown.shutdown();
    assert!(finishes_within(&server.run, Duration::from_secs(10)));
}
