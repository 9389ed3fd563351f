//! `hotpage serve` driven by the Rust `postgres` client (and a bare protocol client for
//! what a driver hides): the simple and extended protocols, every type in binary, errors
//! with their SQLSTATE, the failed-transaction state, cancel, the limits and timeouts, and
//! a clean shutdown on SIGTERM.

mod serve_support;

use bytes::BytesMut;
use postgres::error::{ErrorPosition, SqlState};
use postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use postgres::{NoTls, SimpleQueryMessage};
use serve_support::{RawClient, Serve, check, query_body};
use std::error::Error;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// A column's bytes as the server sent them (binary format), whatever the type.
struct Raw(Vec<u8>);

impl<'a> FromSql<'a> for Raw {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(Raw(raw.to_vec()))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// A parameter sent as these bytes in binary format (uuid, numeric: types the postgres
/// crate has no built-in Rust type for).
#[derive(Debug)]
struct RawParam(Vec<u8>);

impl ToSql for RawParam {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.extend_from_slice(&self.0);
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn code(error: &postgres::Error) -> &SqlState {
    error
        .code()
        .unwrap_or_else(|| panic!("not a server error: {error}"))
}

#[test]
fn several_statements_in_one_simple_query() {
    let dir = temp();
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let mut client = serve.client();
    let messages = client
        .simple_query(
            "CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
             INSERT INTO t (v) VALUES ('a'), ('b');
             SELECT id, v FROM t ORDER BY id;
             SELECT count(*) FROM t",
        )
        .expect("query");
    let mut tags = Vec::new();
    let mut rows = Vec::new();
    for message in messages {
        match message {
            SimpleQueryMessage::CommandComplete(n) => tags.push(n),
            SimpleQueryMessage::Row(row) => rows.push(
                (0..row.len())
                    .map(|i| row.get(i).unwrap_or("NULL").to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            _ => {}
        }
    }
    // CommandComplete's row counts: CREATE (0), INSERT 2, SELECT 2, SELECT 1.
    assert_eq!(tags, [0, 2, 2, 1]);
    assert_eq!(rows, ["1,a", "2,b", "2"]);
}

#[test]
fn prepared_statements_take_typed_parameters() {
    let dir = temp();
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let mut client = serve.client();
    client
        .batch_execute(
            "CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v varchar(5), n integer)",
        )
        .expect("create");
    let insert = client
        .prepare("INSERT INTO t (v, n) VALUES ($1, $2) RETURNING id")
        .expect("prepare");
    // The parameter types come from the columns; the result from RETURNING.
    assert_eq!(insert.params(), [Type::VARCHAR, Type::INT4]);
    assert_eq!(insert.columns()[0].type_(), &Type::INT8);
    let mut ids = Vec::new();
    for (i, v) in ["a", "b", "c"].iter().enumerate() {
        let row = client
            .query_one(&insert, &[v, &(i as i32 * 10)])
            .expect("insert");
        ids.push(row.get::<_, i64>(0));
    }
    assert_eq!(ids, [1, 2, 3]);
    let by_id = client
        .prepare("SELECT v, n FROM t WHERE id = $1")
        .expect("prepare");
    assert_eq!(by_id.params(), [Type::INT8]);
    let row = client.query_one(&by_id, &[&2i64]).expect("select");
    assert_eq!(row.get::<_, String>(0), "b");
    assert_eq!(row.get::<_, i32>(1), 10);
    // A value too long for varchar(5), sent as a parameter: the column's rule applies.
    let err = client.execute(&insert, &[&"toolong", &1i32]).unwrap_err();
    assert_eq!(code(&err), &SqlState::STRING_DATA_RIGHT_TRUNCATION);
    // Named statements survive other statements; unnamed ones are used once (query_one
    // with a string prepares an unnamed statement each time).
    let n: i64 = client
        .query_one("SELECT count(*) FROM t WHERE n >= $1", &[&10i32])
        .expect("count")
        .get(0);
    assert_eq!(n, 2);
}

/// numeric_send of 12345.67: 3 digits (1 2345 6700), weight 1, positive, scale 2.
const NUMERIC_12345_67: [u8; 14] = [0, 3, 0, 1, 0, 0, 0, 2, 0, 1, 0x09, 0x29, 0x1a, 0x2c];
const UUID: [u8; 16] = [
    0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef, 0x81, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
];

#[test]
fn every_type_round_trips_in_binary_and_prints_in_text() {
    let dir = temp();
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let mut client = serve.client();
    client
        .batch_execute(
            "CREATE TABLE every (id int PRIMARY KEY, a smallint, b integer, c bigint, d boolean,
             e text, f varchar(10), g char(5), h uuid, i timestamp, j timestamptz,
             k numeric(10,2), l real, m double precision, n bytea)",
        )
        .expect("create");
    let when = UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
    let insert = client
        .prepare("INSERT INTO every VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)")
        .expect("prepare");
    let bytes: Vec<u8> = vec![0, 1, 255];
    let params: [&(dyn ToSql + Sync); 15] = [
        &1i32,
        &12i16,
        &-7i32,
        &(1i64 << 40),
        &true,
        &"héllo",
        &"short",
        &"ab",
        &RawParam(UUID.to_vec()),
        &when,
        &when,
        &RawParam(NUMERIC_12345_67.to_vec()),
        &1.5f32,
        &-2.25f64,
        &bytes,
    ];
    client.execute(&insert, &params).expect("insert in binary");
    let nulls: [&(dyn ToSql + Sync); 15] = [
        &2i32,
        &None::<i16>,
        &None::<i32>,
        &None::<i64>,
        &None::<bool>,
        &None::<&str>,
        &None::<&str>,
        &None::<&str>,
        &None::<RawParam>,
        &None::<SystemTime>,
        &None::<SystemTime>,
        &None::<RawParam>,
        &None::<f32>,
        &None::<f64>,
        &None::<Vec<u8>>,
    ];
    client.execute(&insert, &nulls).expect("insert NULLs");

    // The postgres crate asks for every result column in binary.
    let row = client
        .query_one(
            "SELECT a, b, c, d, e, f, g, h, i, j, k, l, m, n FROM every WHERE id = $1",
            &[&1i32],
        )
        .expect("select");
    assert_eq!(row.get::<_, i16>(0), 12);
    assert_eq!(row.get::<_, i32>(1), -7);
    assert_eq!(row.get::<_, i64>(2), 1 << 40);
    assert!(row.get::<_, bool>(3));
    assert_eq!(row.get::<_, String>(4), "héllo");
    assert_eq!(row.get::<_, String>(5), "short");
    assert_eq!(row.get::<_, String>(6), "ab   ");
    assert_eq!(row.get::<_, Raw>(7).0, UUID);
    assert_eq!(row.get::<_, SystemTime>(8), when);
    assert_eq!(row.get::<_, SystemTime>(9), when);
    assert_eq!(row.get::<_, Raw>(10).0, NUMERIC_12345_67);
    assert_eq!(row.get::<_, f32>(11), 1.5);
    assert_eq!(row.get::<_, f64>(12), -2.25);
    assert_eq!(row.get::<_, Vec<u8>>(13), [0, 1, 255]);
    let types: Vec<&str> = row.columns().iter().map(|c| c.type_().name()).collect();
    assert_eq!(
        types,
        [
            "int2",
            "int4",
            "int8",
            "bool",
            "text",
            "varchar",
            "bpchar",
            "uuid",
            "timestamp",
            "timestamptz",
            "numeric",
            "float4",
            "float8",
            "bytea"
        ]
    );
    let nulls = client
        .query_one("SELECT a, e, h, i, k, n FROM every WHERE id = 2", &[])
        .expect("select NULLs");
    assert_eq!(nulls.get::<_, Option<i16>>(0), None);
    assert_eq!(nulls.get::<_, Option<String>>(1), None);
    assert!(nulls.get::<_, Option<Raw>>(2).is_none());
    assert_eq!(nulls.get::<_, Option<SystemTime>>(3), None);
    assert!(nulls.get::<_, Option<Raw>>(4).is_none());
    assert_eq!(nulls.get::<_, Option<Vec<u8>>>(5), None);

    // The simple protocol's text format of the same row.
    let text = client
        .simple_query("SELECT a, b, c, d, e, f, g, h, i, j, k, l, m, n FROM every WHERE id = 1")
        .expect("select text");
    let Some(SimpleQueryMessage::Row(row)) = text
        .iter()
        .find(|m| matches!(m, SimpleQueryMessage::Row(_)))
    else {
        panic!("no row")
    };
    let values: Vec<&str> = (0..row.len())
        .map(|i| row.get(i).unwrap_or("NULL"))
        .collect();
    assert_eq!(
        values,
        [
            "12",
            "-7",
            "1099511627776",
            "t",
            "héllo",
            "short",
            "ab   ",
            "12345678-9abc-4def-8123-456789abcdef",
            "2023-11-14 22:13:20.123456",
            "2023-11-14 22:13:20.123456+00",
            "12345.67",
            "1.5",
            "-2.25",
            "\\x0001ff"
        ]
    );
}

#[test]
fn errors_carry_their_sqlstate_and_fail_the_transaction_block() {
    let dir = temp();
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let mut client = serve.client();
    client
        .batch_execute("CREATE TABLE t (id bigint PRIMARY KEY, v text)")
        .expect("create");
    // Simple protocol: SQLSTATE and the position in the query text.
    let err = client.simple_query("SELECT nope FROM t").unwrap_err();
    let db = err.as_db_error().expect("a server error");
    assert_eq!(db.code(), &SqlState::UNDEFINED_COLUMN);
    assert_eq!(db.message(), "column \"nope\" does not exist");
    assert_eq!(db.position(), Some(&ErrorPosition::Original(8)));
    // Extended protocol: a Parse error and a duplicate key with its detail.
    let err = client.prepare("SELEC 1").unwrap_err();
    assert_eq!(code(&err), &SqlState::SYNTAX_ERROR);
    client
        .execute("INSERT INTO t VALUES ($1, 'a')", &[&1i64])
        .expect("insert");
    let err = client
        .execute("INSERT INTO t VALUES ($1, 'b')", &[&1i64])
        .unwrap_err();
    assert_eq!(code(&err), &SqlState::UNIQUE_VIOLATION);
    // A failed block refuses statements (simple and extended) until ROLLBACK, which the
    // extended protocol may send too.
    client
        .batch_execute("BEGIN; INSERT INTO t VALUES (2, 'in block')")
        .expect("begin");
    assert!(client.batch_execute("SELECT nope FROM t").is_err());
    let err = client.batch_execute("SELECT 1").unwrap_err();
    assert_eq!(code(&err), &SqlState::IN_FAILED_SQL_TRANSACTION);
    let err = client
        .execute("INSERT INTO t VALUES ($1, 'x')", &[&3i64])
        .unwrap_err();
    assert_eq!(code(&err), &SqlState::IN_FAILED_SQL_TRANSACTION);
    client
        .execute("ROLLBACK", &[])
        .expect("rollback through the extended protocol");
    let ids: Vec<i64> = client
        .query("SELECT id FROM t ORDER BY id", &[])
        .expect("select")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(ids, [1], "the failed block's insert was rolled back");
    // The postgres crate's transaction API: an error, then its rollback.
    let mut tx = client.transaction().expect("transaction");
    tx.execute("INSERT INTO t VALUES (4, 'tx')", &[])
        .expect("insert");
    assert!(
        tx.execute("INSERT INTO t VALUES (4, 'again')", &[])
            .is_err()
    );
    tx.rollback().expect("rollback");
    let count: i64 = client
        .query_one("SELECT count(*) FROM t", &[])
        .expect("count")
        .get(0);
    assert_eq!(count, 1);
}

#[test]
fn one_connection_too_many_is_fatal_53300() {
    let dir = temp();
    let serve = Serve::start(&dir.path().join("db"), &["--max-connections", "2"]);
    let first = serve.client();
    let mut second = serve.client();
    let Err(err) = postgres::Client::connect(&serve.conninfo(), NoTls) else {
        panic!("a third session was let in");
    };
    let db = err.as_db_error().expect("a server error");
    assert_eq!(db.code(), &SqlState::TOO_MANY_CONNECTIONS);
    assert_eq!(db.severity(), "FATAL");
    assert_eq!(db.message(), "sorry, too many clients already");
    // The open sessions are undisturbed, and a slot frees when a session ends.
    second.simple_query("SELECT 1").expect("second still works");
    drop(first);
    let mut third = None;
    for _ in 0..100 {
        if let Ok(client) = postgres::Client::connect(&serve.conninfo(), NoTls) {
            third = Some(client);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    third
        .expect("a freed slot")
        .simple_query("SELECT 1")
        .expect("third works");
}

/// Waits until some session is running `query` (pg_stat_activity), so that a test acts
/// while the statement is inside the server rather than on its way there.
fn wait_until_running(client: &mut postgres::Client, query: &str) {
    for _ in 0..600 {
        let running: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query = $1",
                &[&query],
            )
            .expect("pg_stat_activity")
            .get(0);
        if running > 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{query} never ran");
}

/// Session A holds key 1 in an open transaction; session B runs `INSERT 2; INSERT 1;
/// INSERT 3` and waits inside its second statement until A rolls back. Returns B's outcome
/// and the ids in the table after; `during` runs while B waits.
fn blocked_batch(
    serve: &Serve,
    during: impl FnOnce(&postgres::CancelToken),
) -> (Result<(), postgres::Error>, Vec<i64>) {
    let mut setup = serve.client();
    setup
        .batch_execute("CREATE TABLE k (id bigint PRIMARY KEY)")
        .expect("create");
    let mut a = serve.client();
    a.batch_execute("BEGIN; INSERT INTO k VALUES (1)")
        .expect("a holds key 1");
    let mut b = serve.client();
    let token = b.cancel_token();
    let waiting = std::thread::spawn(move || {
        b.batch_execute(
            "INSERT INTO k VALUES (2); INSERT INTO k VALUES (1); INSERT INTO k VALUES (3)",
        )
    });
    wait_until_running(&mut setup, "INSERT INTO k VALUES (1)");
    during(&token);
    a.batch_execute("ROLLBACK").expect("a rolls back");
    let outcome = waiting.join().expect("b's thread");
    let ids = setup
        .query("SELECT id FROM k ORDER BY id", &[])
        .expect("select")
        .iter()
        .map(|r| r.get(0))
        .collect();
    (outcome, ids)
}

#[test]
fn a_cancel_request_stops_a_query_before_its_next_statement() {
    let dir = temp();
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let (outcome, ids) = blocked_batch(&serve, |token| {
        token.cancel_query(NoTls).expect("cancel request");
        std::thread::sleep(Duration::from_millis(200));
    });
    let err = outcome.unwrap_err();
    assert_eq!(code(&err), &SqlState::QUERY_CANCELED);
    assert_eq!(
        err.as_db_error().map(|e| e.message()),
        Some("canceling statement due to user request")
    );
    // The statement that was waiting for key 1 stopped waiting, and the one after it never
    // ran; the Query was one implicit transaction, so the cancel rolled back its first
    // insert too, as in PostgreSQL.
    assert_eq!(ids, Vec::<i64>::new());
}

#[test]
fn the_statement_timeout_stops_a_query_before_its_next_statement() {
    let dir = temp();
    let serve = Serve::start(&dir.path().join("db"), &["--statement-timeout-ms", "300"]);
    // A rolls back after the timeout has passed: B's second statement then ends late.
    let (outcome, ids) = blocked_batch(&serve, |_| std::thread::sleep(Duration::from_millis(600)));
    let err = outcome.unwrap_err();
    assert_eq!(code(&err), &SqlState::QUERY_CANCELED);
    assert_eq!(
        err.as_db_error().map(|e| e.message()),
        Some("canceling statement due to statement timeout")
    );
    assert_eq!(
        ids,
        Vec::<i64>::new(),
        "the Query's implicit transaction rolled back"
    );
    // Quick statements are not touched by the timeout.
    let mut client = serve.client();
    client
        .batch_execute("INSERT INTO k VALUES (5); SELECT * FROM k")
        .expect("quick");
}

/// Runs `query` on a client of its own and returns its outcome and how long it took;
/// `during` runs once the query is seen running.
fn stopped_query(
    serve: &Serve,
    query: &'static str,
    during: impl FnOnce(&postgres::CancelToken),
) -> (
    Result<Vec<postgres::Row>, postgres::Error>,
    Duration,
    postgres::Client,
) {
    let mut watcher = serve.client();
    let mut client = serve.client();
    let token = client.cancel_token();
    let running = std::thread::spawn(move || {
        let started = std::time::Instant::now();
        let outcome = client.query(query, &[]);
        (outcome, started.elapsed(), client)
    });
    wait_until_running(&mut watcher, query);
    during(&token);
    running.join().expect("the query's thread")
}

#[test]
fn a_cancel_request_stops_a_statement_while_it_runs() {
    let dir = temp();
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let (outcome, took, mut client) = stopped_query(&serve, "SELECT pg_sleep(60)", |token| {
        token.cancel_query(NoTls).expect("cancel request");
    });
    let err = outcome.unwrap_err();
    assert_eq!(code(&err), &SqlState::QUERY_CANCELED);
    assert_eq!(
        err.as_db_error().map(|e| e.message()),
        Some("canceling statement due to user request")
    );
    assert!(took < Duration::from_secs(20), "the sleep ran on: {took:?}");
    // The session goes on, and the cancel is spent.
    client.batch_execute("SELECT pg_sleep(0.2)").expect("next");
}

#[test]
fn statement_timeout_set_by_the_session_stops_a_statement_while_it_runs() {
    let dir = temp();
    let serve = Serve::start(&dir.path().join("db"), &["--statement-timeout-ms", "60000"]);
    let mut client = serve.client();
    let show = |client: &mut postgres::Client| -> String {
        client
            .query_one("SHOW statement_timeout", &[])
            .expect("show")
            .get(0)
    };
    assert_eq!(show(&mut client), "1min", "the server's default");
    client
        .batch_execute("SET statement_timeout = '200ms'")
        .expect("set");
    assert_eq!(show(&mut client), "200ms");
    for query in ["SELECT pg_sleep(60)", "SELECT 1; SELECT pg_sleep(60)"] {
        let started = std::time::Instant::now();
        // Extended protocol (query) and simple (batch_execute).
        let err = match query.contains(';') {
            true => client.batch_execute(query).unwrap_err(),
            false => client.query(query, &[]).unwrap_err(),
        };
        assert_eq!(code(&err), &SqlState::QUERY_CANCELED, "{query}");
        assert_eq!(
            err.as_db_error().map(|e| e.message()),
            Some("canceling statement due to statement timeout")
        );
        assert!(started.elapsed() < Duration::from_secs(20), "{query}");
    }
    // 0 turns it off for this session, whatever the server's default.
    client
        .batch_execute("SET statement_timeout = 0")
        .expect("off");
    client
        .batch_execute("SELECT pg_sleep(0.4)")
        .expect("no timeout");
    let err = client
        .batch_execute("SET statement_timeout = 'soon'")
        .unwrap_err();
    assert_eq!(code(&err), &SqlState::INVALID_PARAMETER_VALUE);
}

#[test]
fn the_servers_statement_timeout_stops_a_statement_while_it_runs() {
    let dir = temp();
    let serve = Serve::start(&dir.path().join("db"), &["--statement-timeout-ms", "300"]);
    let mut client = serve.client();
    let started = std::time::Instant::now();
    let err = client.query("SELECT pg_sleep(60)", &[]).unwrap_err();
    let took = started.elapsed();
    assert_eq!(code(&err), &SqlState::QUERY_CANCELED);
    assert!(took < Duration::from_secs(20), "the sleep ran on: {took:?}");
}

#[test]
fn an_idle_session_is_closed_with_57p05_or_25p03_in_a_block() {
    let dir = temp();
    let serve = Serve::start(
        &dir.path().join("db"),
        &["--idle-session-timeout-ms", "300"],
    );
    let mut idle = RawClient::connect(serve.port);
    let (severity, code, message) = idle.read_error();
    assert_eq!((severity.as_str(), code.as_str()), ("FATAL", "57P05"));
    assert_eq!(
        message,
        "terminating connection due to idle-session timeout"
    );
    assert!(idle.is_closed());
    let mut in_block = RawClient::connect(serve.port);
    in_block.send(b'Q', &query_body("BEGIN"));
    let (_, code, _) = in_block.read_error();
    assert_eq!(code, "25P03");
    // A busy client is not idle.
    let mut busy = serve.client();
    for _ in 0..10 {
        busy.simple_query("SELECT 1").expect("busy");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn oversized_statements_and_messages_are_refused_with_54000() {
    let dir = temp();
    let serve = Serve::start(
        &dir.path().join("db"),
        &[
            "--max-statement-bytes",
            "1000",
            "--max-message-bytes",
            "4096",
        ],
    );
    let mut client = serve.client();
    let long = format!("SELECT '{}'", "x".repeat(2000));
    let err = client.simple_query(&long).unwrap_err();
    assert_eq!(code(&err), &SqlState::PROGRAM_LIMIT_EXCEEDED);
    let message = err.as_db_error().map(|e| e.message().to_string());
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.starts_with("statement is too long: 2009 bytes")),
        "{message:?}"
    );
    let err = client.prepare(&long).unwrap_err();
    assert_eq!(code(&err), &SqlState::PROGRAM_LIMIT_EXCEEDED);
    client
        .simple_query("SELECT 1")
        .expect("the session goes on");
    // A message over the limit ends its connection, before its body is read.
    let mut raw = RawClient::connect(serve.port);
    raw.write(&[b'Q', 0, 0, 0x20, 0]);
    let (severity, code, message) = raw.read_error();
    assert_eq!((severity.as_str(), code.as_str()), ("FATAL", "54000"));
    assert!(
        message.contains("a message of 8192 bytes is longer than the limit of 4096 bytes"),
        "{message}"
    );
    assert!(raw.is_closed());
    client
        .simple_query("SELECT 1")
        .expect("other sessions go on");
}

#[test]
fn sigterm_lets_a_running_statement_finish_then_closes_cleanly() {
    let dir = temp();
    let db = dir.path().join("db");
    let serve = Serve::start(&db, &[]);
    let mut setup = serve.client();
    setup
        .batch_execute("CREATE TABLE k (id bigint PRIMARY KEY); INSERT INTO k VALUES (10)")
        .expect("setup");
    // A holds key 1 in an open block; B waits for it inside its statement.
    let mut a = serve.client();
    a.batch_execute("BEGIN; INSERT INTO k VALUES (1); INSERT INTO k VALUES (11)")
        .expect("a");
    // B speaks the protocol bare: the postgres crate reports a FATAL that follows an
    // answer in the same read as the request's error.
    let mut b = RawClient::connect(serve.port);
    b.send(b'Q', &query_body("INSERT INTO k VALUES (1)"));
    wait_until_running(&mut setup, "INSERT INTO k VALUES (1)");
    let (status, stderr) = serve.terminate();
    assert!(status.success(), "exit {status}: {stderr}");
    assert!(
        stderr.contains("the database is closed cleanly"),
        "{stderr}"
    );
    // A's block ended with its connection (FATAL 57P01); B's insert then ran to its end and
    // was answered, and only then B's connection ended.
    let mut answers = Vec::new();
    while let Some((tag, body)) = b.read() {
        answers.push((tag, String::from_utf8_lossy(&body).to_string()));
    }
    let tags: Vec<u8> = answers.iter().map(|(t, _)| *t).collect();
    assert_eq!(tags, b"CZE", "{answers:?}");
    assert!(answers[0].1.starts_with("INSERT 0 1"), "{answers:?}");
    assert!(answers[2].1.contains("57P01"), "{answers:?}");
    assert!(a.simple_query("SELECT 1").is_err(), "a's connection ended");
    let checked = check(&db);
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );
    let serve = Serve::start(&db, &[]);
    let ids: Vec<i64> = serve
        .client()
        .query("SELECT id FROM k ORDER BY id", &[])
        .expect("select")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(ids, [1, 10], "B's row kept, A's uncommitted rows gone");
    assert!(
        !serve.stderr_text().contains("recovered"),
        "{}",
        serve.stderr_text()
    );
}

/// `numeric` without a precision over the wire: a binary parameter goes into the column at
/// the scale it was sent with and comes back as the same numeric_send bytes; a text value
/// cast to numeric keeps its written scale (1.500, not 1.5).
#[test]
fn unconstrained_numeric_keeps_each_values_scale_over_the_wire() {
    let dir = temp();
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let mut client = serve.client();
    client
        .batch_execute("CREATE TABLE amounts (id int PRIMARY KEY, v numeric)")
        .expect("create");
    client
        .execute(
            "INSERT INTO amounts VALUES ($1, $2)",
            &[&1i32, &RawParam(NUMERIC_12345_67.to_vec())],
        )
        .expect("insert in binary");
    client
        .execute(
            "INSERT INTO amounts VALUES ($1, $2::text::numeric)",
            &[&2i32, &"1.500"],
        )
        .expect("insert text");
    let rows = client
        .query("SELECT v, v::text FROM amounts ORDER BY id", &[])
        .expect("select");
    assert_eq!(rows[0].get::<_, Raw>(0).0, NUMERIC_12345_67);
    assert_eq!(rows[0].get::<_, String>(1), "12345.67");
    assert_eq!(rows[1].get::<_, String>(1), "1.500");
    assert_eq!(rows[0].columns()[0].type_().name(), "numeric");
    let sum: String = client
        .query_one(
            "SELECT sum(v)::text FROM amounts WHERE v > $1",
            &[&RawParam(vec![0, 0, 0, 0, 0, 0, 0, 0])],
        )
        .expect("sum")
        .get(0);
    assert_eq!(sum, "12347.170");
}

/// `date` over the wire: a binary parameter is date_send's int4 of days since 2000-01-01,
/// a result column comes back in that form (the postgres crate asks for binary) and in
/// text, and a parameter compared with a date column is typed date.
#[test]
fn dates_travel_as_postgresql_s_int4_of_days() {
    let dir = temp();
    let serve = Serve::start(&dir.path().join("db"), &[]);
    let mut client = serve.client();
    client
        .batch_execute("CREATE TABLE days (id int PRIMARY KEY, d date)")
        .expect("create");
    // 2024-01-05 is day 8,770 after 2000-01-01.
    let day = 8_770i32.to_be_bytes().to_vec();
    client
        .execute(
            "INSERT INTO days VALUES ($1, $2)",
            &[&1i32, &RawParam(day.clone())],
        )
        .expect("insert in binary");
    client
        .execute(
            "INSERT INTO days VALUES (2, $1::text::date)",
            &[&"2024-01-06"],
        )
        .expect("insert text");
    let row = client
        .query_one(
            "SELECT d, d::text, d + 1 FROM days WHERE d = $1",
            &[&RawParam(day.clone())],
        )
        .expect("select by a binary date");
    assert_eq!(row.get::<_, Raw>(0).0, day);
    assert_eq!(row.get::<_, String>(1), "2024-01-05");
    assert_eq!(row.get::<_, Raw>(2).0, 8_771i32.to_be_bytes());
    assert_eq!(row.columns()[0].type_().name(), "date");
    let text = client
        .simple_query("SELECT d FROM days ORDER BY id")
        .expect("select text");
    let dates: Vec<&str> = text
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => row.get(0),
            _ => None,
        })
        .collect();
    assert_eq!(dates, ["2024-01-05", "2024-01-06"]);
    let far = client
        .execute(
            "INSERT INTO days VALUES (3, $1)",
            &[&RawParam(4_000_000i32.to_be_bytes().to_vec())],
        )
        .expect_err("past year 9999");
    assert_eq!(code(&far).code(), "22008");
}
