//! The extended protocol driven message by message on a real session: parameter types,
//! statements and portals, Describe, row limits, and skipping to Sync after an error.

use super::*;
use crate::session::{Output, SessionState, StatementLimits, Transport};
use hotpage::{Database, MemStorage, Options, Storage};
use hotpage_sql::SqlDatabase;
use pgwire::messages::PgWireFrontendMessage as M;
use pgwire::messages::extendedquery::Sync as SyncMessage;
use pgwire::messages::simplequery::Query;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;

/// Batches to hand over and the answers written, shared with the harness.
#[derive(Default)]
struct Queues {
    batches: VecDeque<Vec<M>>,
    answers: Vec<PgWireBackendMessage>,
    /// The client is gone after this many writes (the answers are still kept).
    gone_after_writes: Option<usize>,
    writes: usize,
}

/// A transport over [`Queues`]: the connection "ends" when no batch is left.
struct QueueTransport(Rc<RefCell<Queues>>);

impl Transport for QueueTransport {
    fn read_batch(&mut self) -> Option<Vec<M>> {
        self.0.borrow_mut().batches.pop_front()
    }

    fn write(&mut self, mut messages: Vec<PgWireBackendMessage>) {
        let mut queues = self.0.borrow_mut();
        queues.writes += 1;
        queues.answers.append(&mut messages);
    }

    fn client_gone(&self) -> bool {
        let queues = self.0.borrow();
        queues.gone_after_writes.is_some_and(|n| queues.writes >= n)
    }
}

struct Harness {
    state: SessionState,
    out: Output,
    queues: Rc<RefCell<Queues>>,
}

impl Harness {
    fn new() -> Harness {
        let mem: Arc<dyn Storage> = MemStorage::new(3);
        let engine =
            Database::open_with_storage(mem, Path::new("m"), Options::default()).expect("open");
        let sql = SqlDatabase::new(Arc::new(engine)).expect("sql");
        let limits = StatementLimits {
            timeout: None,
            max_statement_bytes: 1000,
        };
        let queues = Rc::new(RefCell::new(Queues::default()));
        Harness {
            state: SessionState::new(sql.session(), limits, Arc::new(AtomicBool::new(false))),
            out: Output::new(Box::new(QueueTransport(Rc::clone(&queues)))),
            queues,
        }
    }

    /// Sends `messages` as one batch and returns the answers, by kind.
    fn send(&mut self, messages: Vec<M>) -> Vec<PgWireBackendMessage> {
        self.queues.borrow_mut().batches.push_back(messages);
        crate::session::run(&mut self.state, &mut self.out);
        std::mem::take(&mut self.queues.borrow_mut().answers)
    }

    fn query(&mut self, sql: &str) -> Vec<PgWireBackendMessage> {
        self.send(vec![M::Query(Query::new(sql.to_string()))])
    }
}

/// A short name for each answer, to compare sequences.
fn kinds(answers: &[PgWireBackendMessage]) -> Vec<String> {
    answers
        .iter()
        .map(|m| match m {
            PgWireBackendMessage::ParseComplete(_) => "ParseComplete".into(),
            PgWireBackendMessage::BindComplete(_) => "BindComplete".into(),
            PgWireBackendMessage::CloseComplete(_) => "CloseComplete".into(),
            PgWireBackendMessage::ParameterDescription(p) => format!("Params{:?}", p.types),
            PgWireBackendMessage::RowDescription(r) => format!("Row{}", r.fields.len()),
            PgWireBackendMessage::NoData(_) => "NoData".into(),
            PgWireBackendMessage::DataRow(_) => "DataRow".into(),
            PgWireBackendMessage::PortalSuspended(_) => "Suspended".into(),
            PgWireBackendMessage::CommandComplete(c) => format!("Complete {}", c.tag),
            PgWireBackendMessage::EmptyQueryResponse(_) => "Empty".into(),
            PgWireBackendMessage::ErrorResponse(e) => {
                let code = e.fields.iter().find(|(c, _)| *c == b'C');
                format!("Error {}", code.map_or("?", |(_, v)| v.as_str()))
            }
            PgWireBackendMessage::ReadyForQuery(r) => format!("Ready {:?}", r.status),
            other => format!("{other:?}"),
        })
        .collect()
}

fn parse(name: &str, sql: &str, oids: Vec<u32>) -> M {
    M::Parse(Parse::new(Some(name.to_string()), sql.to_string(), oids))
}

fn bind(portal: &str, statement: &str, params: Vec<Option<&[u8]>>, formats: Vec<i16>) -> M {
    M::Bind(Bind::new(
        Some(portal.to_string()),
        Some(statement.to_string()),
        vec![0],
        params
            .into_iter()
            .map(|p| p.map(Bytes::copy_from_slice))
            .collect(),
        formats,
    ))
}

fn describe(target: u8, name: &str) -> M {
    M::Describe(Describe::new(target, Some(name.to_string())))
}

fn execute(portal: &str, max_rows: i32) -> M {
    M::Execute(Execute::new(Some(portal.to_string()), max_rows))
}

fn sync() -> M {
    M::Sync(SyncMessage::new())
}

#[test]
fn parameter_types_come_from_the_client_or_the_statement() {
    let varchar10 = SqlType::Varchar(Some(10));
    let unbounded = ParamType::Typed(SqlType::Varchar(None));
    assert_eq!(param_type(0, Some(varchar10)), (unbounded.clone(), 1043));
    assert_eq!(param_type(1043, Some(varchar10)), (unbounded, 1043));
    let char5 = SqlType::Char(5);
    assert_eq!(
        param_type(1042, Some(char5)),
        (ParamType::Typed(char5), 1042)
    );
    let numeric = SqlType::Numeric {
        precision: 10,
        scale: 2,
    };
    assert_eq!(
        param_type(0, Some(numeric)),
        (ParamType::Typed(SqlType::NumericUnconstrained), 1700)
    );
    // A declared type wins over the statement's.
    assert_eq!(
        param_type(20, Some(SqlType::Int)),
        (ParamType::Typed(SqlType::BigInt), 20)
    );
    assert_eq!(param_type(0, None), (ParamType::Untyped, 25));
    assert_eq!(param_type(705, None), (ParamType::Untyped, 25));
    assert_eq!(
        param_type(1700, None),
        (ParamType::Typed(SqlType::NumericUnconstrained), 1700)
    );
    assert_eq!(
        param_type(1082, None),
        (ParamType::Typed(SqlType::Date), 1082)
    );
    assert_eq!(
        param_type(1186, None),
        (ParamType::Typed(SqlType::Interval), 1186)
    );
    // time: a type hotpage has not.
    assert_eq!(param_type(1083, None), (ParamType::Unsupported(1083), 1083));
    let err = decode_param(&ParamType::Unsupported(1083), b"\0\0", WireFormat::Binary).unwrap_err();
    assert_eq!(err.sqlstate, "0A000");
    assert_eq!(
        decode_param(&ParamType::Untyped, b"42", WireFormat::Text).unwrap(),
        Value::Text("42".into())
    );
}

/// A text parameter compared with a numeric(10,2) column is read exactly, not rounded to
/// the column's scale: `m = '1.249'` finds no 1.25 and `m > '1.245'` finds it, as in
/// PostgreSQL. (A version that left the text to the statement's cast rounded it first.)
#[test]
fn numeric_text_parameters_are_not_rounded_to_a_columns_scale() {
    let mut h = Harness::new();
    h.query("CREATE TABLE p (id int PRIMARY KEY, m numeric(10,2)); INSERT INTO p VALUES (1, 1.25)");
    for (sql, value, rows) in [
        ("SELECT id FROM p WHERE m = $1", "1.249", 0),
        ("SELECT id FROM p WHERE m = $1", "1.2500", 1),
        ("SELECT id FROM p WHERE m > $1", "1.245", 1),
        ("SELECT id FROM p WHERE m IN ($1)", "1.249", 0),
    ] {
        let answers = h.send(vec![
            parse("", sql, vec![]),
            bind("", "", vec![Some(value.as_bytes())], vec![]),
            execute("", 0),
            sync(),
        ]);
        let found = kinds(&answers).iter().filter(|k| *k == "DataRow").count();
        assert_eq!(found, rows, "{sql} with {value}: {:?}", kinds(&answers));
    }
}

#[test]
fn parse_bind_describe_execute_sync() {
    let mut h = Harness::new();
    h.query("CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v varchar(10))");
    let answers = h.send(vec![
        parse("ins", "INSERT INTO t (v) VALUES ($1) RETURNING id", vec![]),
        describe(b'S', "ins"),
        bind("", "ins", vec![Some(b"a")], vec![1]),
        describe(b'P', ""),
        execute("", 0),
        sync(),
    ]);
    assert_eq!(
        kinds(&answers),
        [
            "ParseComplete",
            "Params[1043]",
            "Row1",
            "BindComplete",
            "Row1",
            "DataRow",
            "Complete INSERT 0 1",
            "Ready Idle"
        ]
    );
    // The portal asked for binary: the id is 8 bytes.
    let PgWireBackendMessage::DataRow(row) = &answers[5] else {
        panic!()
    };
    assert_eq!(
        &row.data[..],
        [&8i32.to_be_bytes()[..], &1i64.to_be_bytes()].concat()
    );
    // The named statement outlives the Sync; a row limit suspends the portal.
    h.send(vec![
        bind("", "ins", vec![Some(b"b")], vec![]),
        execute("", 0),
        sync(),
    ]);
    let answers = h.send(vec![
        parse("", "SELECT id FROM t ORDER BY id", vec![]),
        bind("p", "", vec![], vec![]),
        execute("p", 1),
        execute("p", 1),
        execute("p", 1),
        sync(),
    ]);
    assert_eq!(
        kinds(&answers),
        [
            "ParseComplete",
            "BindComplete",
            "DataRow",
            "Suspended",
            // The last row ends the portal (PostgreSQL would suspend once more, then
            // answer SELECT 0: both are valid answers).
            "DataRow",
            "Complete SELECT 1",
            "Complete SELECT 0",
            "Ready Idle"
        ]
    );
}

#[test]
fn an_error_skips_to_sync_and_fails_the_block() {
    let mut h = Harness::new();
    h.query("CREATE TABLE t (id bigint PRIMARY KEY); BEGIN");
    let answers = h.send(vec![
        parse("", "INSERT INTO t VALUES ($1)", vec![]),
        bind("", "", vec![Some(b"not a number")], vec![]),
        execute("", 0),
        parse("", "SELECT 1", vec![]),
        sync(),
    ]);
    assert_eq!(
        kinds(&answers),
        ["ParseComplete", "Error 22P02", "Ready Error"]
    );
    // Statements and portals that do not exist, and a wrong parameter count.
    let answers = h.send(vec![
        M::Query(Query::new("ROLLBACK".into())),
        bind("", "nope", vec![], vec![]),
        sync(),
        execute("nope", 0),
        sync(),
        parse("two", "INSERT INTO t VALUES ($1)", vec![]),
        bind("", "two", vec![], vec![]),
        sync(),
        parse("two", "SELECT 1", vec![]),
        sync(),
    ]);
    assert_eq!(
        kinds(&answers),
        [
            "Complete ROLLBACK",
            "Ready Idle",
            "Error 26000",
            "Ready Idle",
            "Error 34000",
            "Ready Idle",
            "ParseComplete",
            "Error 08P01",
            "Ready Idle",
            "Error 42P05",
            "Ready Idle"
        ]
    );
}

#[test]
fn simple_queries_answer_each_statement_and_check_their_size() {
    let mut h = Harness::new();
    let answers = h.query("CREATE TABLE t (id bigint PRIMARY KEY); INSERT INTO t VALUES (1), (2); SELECT * FROM t; SELECT nope");
    assert_eq!(
        kinds(&answers),
        [
            "Complete CREATE TABLE",
            "Complete INSERT 0 2",
            "Row1",
            "DataRow",
            "DataRow",
            "Complete SELECT 2",
            "Error 42703",
            "Ready Idle"
        ]
    );
    assert_eq!(kinds(&h.query("  ")), ["Empty", "Ready Idle"]);
    assert_eq!(kinds(&h.query(";")), ["Empty", "Ready Idle"]);
    let long = format!("SELECT '{}'", "x".repeat(1000));
    assert_eq!(kinds(&h.query(&long)), ["Error 54000", "Ready Idle"]);
    // An empty Parse executes as an empty query.
    let answers = h.send(vec![
        parse("", "", vec![]),
        bind("", "", vec![], vec![]),
        execute("", 0),
        sync(),
    ]);
    assert_eq!(
        kinds(&answers),
        ["ParseComplete", "BindComplete", "Empty", "Ready Idle"]
    );
}

#[test]
fn a_cancel_that_came_before_a_query_does_not_stop_it() {
    let mut h = Harness::new();
    h.query("CREATE TABLE t (id bigint PRIMARY KEY)");
    // A cancel that came before the query started does not count.
    h.state
        .cancel
        .store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        kinds(&h.query("INSERT INTO t VALUES (1)")),
        ["Complete INSERT 0 1", "Ready Idle"]
    );
}

/// The text of a one-column DataRow in text format.
fn text_of(answer: &PgWireBackendMessage) -> String {
    let PgWireBackendMessage::DataRow(row) = answer else {
        panic!("not a DataRow: {answer:?}")
    };
    String::from_utf8(row.data[4..].to_vec()).unwrap()
}

#[test]
fn a_prepared_statement_is_planned_again_after_ddl() {
    let mut h = Harness::new();
    h.query("CREATE TABLE t (id bigint PRIMARY KEY, v text)");
    h.send(vec![
        parse("ins", "INSERT INTO t (id, v) VALUES ($1, $2)", vec![]),
        parse("sel", "SELECT v FROM t ORDER BY id", vec![]),
        bind("", "ins", vec![Some(b"1"), Some(b"old")], vec![]),
        execute("", 0),
        sync(),
    ]);
    // A new table of the same name with other columns: the old plans would write to and
    // read the dropped one (its row "old" would come back).
    h.query("DROP TABLE t");
    h.query("CREATE TABLE t (id bigint PRIMARY KEY, extra int, v text)");
    let run = |h: &mut Harness, statement: &str, params: Vec<Option<&[u8]>>| {
        h.send(vec![
            bind("", statement, params, vec![]),
            execute("", 0),
            sync(),
        ])
    };
    let inserted = run(&mut h, "ins", vec![Some(b"2"), Some(b"new")]);
    assert_eq!(
        kinds(&inserted),
        ["BindComplete", "Complete INSERT 0 1", "Ready Idle"]
    );
    let selected = run(&mut h, "sel", vec![]);
    assert_eq!(
        kinds(&selected),
        ["BindComplete", "DataRow", "Complete SELECT 1", "Ready Idle"]
    );
    assert_eq!(text_of(&selected[1]), "new");
    // TRUNCATE replaces the table as well.
    h.query("TRUNCATE t");
    assert_eq!(
        kinds(&run(&mut h, "sel", vec![])),
        ["BindComplete", "Complete SELECT 0", "Ready Idle"]
    );
    // Columns of other types: the client holds the old result and parameter types.
    h.query("DROP TABLE t");
    h.query("CREATE TABLE t (id bigint PRIMARY KEY, v int)");
    for statement in ["sel", "ins"] {
        let params: Vec<Option<&[u8]>> = if statement == "ins" {
            vec![Some(b"3"), Some(b"x")]
        } else {
            vec![]
        };
        let answers = run(&mut h, statement, params);
        assert_eq!(
            kinds(&answers),
            ["BindComplete", "Error 0A000", "Ready Idle"],
            "{statement}"
        );
    }
    // No table at all.
    h.query("DROP TABLE t");
    let answers = run(&mut h, "ins", vec![Some(b"4"), Some(b"y")]);
    assert_eq!(
        kinds(&answers),
        ["BindComplete", "Error 42P01", "Ready Idle"]
    );
}

/// Describe (statement and portal) plans a stale statement again, as Execute does: after
/// DDL it reports the columns Execute will return, or the error Execute would give, never
/// the old table's columns.
#[test]
fn describe_plans_a_statement_again_after_ddl() {
    let mut h = Harness::new();
    h.query("CREATE TABLE t (id bigint PRIMARY KEY, v text)");
    let answers = h.send(vec![parse("sel", "SELECT * FROM t", vec![]), sync()]);
    assert_eq!(kinds(&answers), ["ParseComplete", "Ready Idle"]);
    let describe_both = |h: &mut Harness| {
        h.send(vec![
            describe(b'S', "sel"),
            bind("p", "sel", vec![], vec![]),
            describe(b'P', "p"),
            M::Close(Close::new(b'P', Some("p".to_string()))),
            sync(),
        ])
    };
    // The same columns again: planned afresh, described, and it runs.
    h.query("DROP TABLE t");
    h.query("CREATE TABLE t (id bigint PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'one')");
    assert_eq!(
        kinds(&describe_both(&mut h)),
        [
            "Params[]",
            "Row2",
            "BindComplete",
            "Row2",
            "CloseComplete",
            "Ready Idle"
        ]
    );
    // Other columns: PostgreSQL's error for a statement whose result changed, at Describe
    // already (before, Describe still said two columns).
    h.query("DROP TABLE t");
    h.query("CREATE TABLE t (id bigint PRIMARY KEY, extra int, v text)");
    assert_eq!(
        kinds(&h.send(vec![describe(b'S', "sel"), sync()])),
        ["Error 0A000", "Ready Idle"]
    );
    // A portal of a statement planned before the DDL is planned again at its Describe.
    h.query("DROP TABLE t");
    h.query("CREATE TABLE t (id bigint PRIMARY KEY, v text)");
    let answers = h.send(vec![parse("sel2", "SELECT v FROM t", vec![]), sync()]);
    assert_eq!(kinds(&answers), ["ParseComplete", "Ready Idle"]);
    h.query("DROP TABLE t");
    h.query("CREATE TABLE t (id bigint PRIMARY KEY, v int)");
    let answers = h.send(vec![
        bind("r", "sel2", vec![], vec![]),
        describe(b'P', "r"),
        sync(),
    ]);
    assert_eq!(
        kinds(&answers),
        ["BindComplete", "Error 0A000", "Ready Idle"]
    );
    // No table at all: the statement's Describe says so.
    h.query("DROP TABLE t");
    assert_eq!(
        kinds(&h.send(vec![describe(b'S', "sel2"), sync()])),
        ["Error 42P01", "Ready Idle"]
    );
}

/// A table of 2,500 rows: three chunks of a streamed result.
fn streamed_table(h: &mut Harness) {
    h.query("CREATE TABLE big (id bigint PRIMARY KEY, v text)");
    h.query("INSERT INTO big SELECT g, 'v' FROM generate_series(1, 2500) g");
}

#[test]
fn rows_stream_in_both_protocols_and_stop_when_the_client_is_gone() {
    let mut h = Harness::new();
    streamed_table(&mut h);
    // Execute without a row limit streams; the tag counts every row. Its chunks (1,024,
    // 1,024, 452 rows) go out as the next comes: three writes, where a held result is
    // one.
    let writes = |h: &Harness| h.queues.borrow().writes;
    let before = writes(&h);
    let answers = h.send(vec![
        parse("s", "SELECT * FROM big WHERE id > $1", vec![]),
        bind("p", "s", vec![Some(b"0".as_slice())], vec![]),
        execute("p", 0),
        M::Sync(SyncMessage::new()),
    ]);
    assert_eq!(writes(&h) - before, 3);
    let k = kinds(&answers);
    assert_eq!(k.iter().filter(|m| *m == "DataRow").count(), 2500);
    assert_eq!(k[k.len() - 2..], ["Complete SELECT 2500", "Ready Idle"]);
    // With a row limit the rows are held for the next Execute, as before.
    let answers = h.send(vec![
        bind("q", "s", vec![Some(b"0".as_slice())], vec![]),
        execute("q", 2000),
        execute("q", 0),
        M::Sync(SyncMessage::new()),
    ]);
    let k = kinds(&answers);
    assert_eq!(k.iter().filter(|m| *m == "DataRow").count(), 2500);
    assert!(k.contains(&"Suspended".to_string()), "{k:?}");
    assert!(k.contains(&"Complete SELECT 500".to_string()), "{k:?}");
    // A result of one chunk costs no write of its own: an extended exchange is answered
    // in one write, a simple query in two (its result, then ReadyForQuery), as when
    // results were held.
    let before = writes(&h);
    h.send(vec![
        bind("r", "s", vec![Some(b"2490".as_slice())], vec![]),
        execute("r", 0),
        M::Sync(SyncMessage::new()),
    ]);
    assert_eq!(writes(&h) - before, 1);
    let before = writes(&h);
    let k = kinds(&h.query("SELECT * FROM big WHERE id > 2400"));
    assert_eq!(k.iter().filter(|m| *m == "DataRow").count(), 100);
    assert_eq!(writes(&h) - before, 2);
    // A simple query whose client is gone after its first chunk stops there (08006)
    // rather than reading the table for no one.
    h.queues.borrow_mut().gone_after_writes = Some(writes(&h) + 1);
    let k = kinds(&h.query("SELECT * FROM big"));
    assert_eq!(k[0], "Row2");
    assert_eq!(k.iter().filter(|m| *m == "DataRow").count(), 1024);
    assert!(k.contains(&"Error 08006".to_string()), "{k:?}");
    // And an Execute the same way.
    h.queues.borrow_mut().gone_after_writes = Some(writes(&h) + 1);
    let k = kinds(&h.send(vec![
        bind("g", "s", vec![Some(b"0".as_slice())], vec![]),
        execute("g", 0),
        M::Sync(SyncMessage::new()),
    ]));
    assert_eq!(k.iter().filter(|m| *m == "DataRow").count(), 1024);
    assert!(k.contains(&"Error 08006".to_string()), "{k:?}");
}

/// A FATAL ends the session there: the messages already read after it in the same batch
/// are not run. PostgreSQL's backend exits after sending one; here a pipelined INSERT
/// after a terminated statement was still handled (and, had it not been stopped too,
/// would have committed for a client that had been told the session was over).
#[test]
fn nothing_after_a_fatal_runs() {
    let mut h = Harness::new();
    // As the server's: the session's connection is told to end (here nothing to wake).
    h.state.session.set_terminate_hook(Arc::new(|| {}));
    h.query("CREATE TABLE t (id int PRIMARY KEY)");
    let answers = h.send(vec![
        parse("", "SELECT pg_terminate_backend(pg_backend_pid())", vec![]),
        bind("", "", vec![], vec![]),
        execute("", 0),
        parse("", "SELECT pg_sleep(0)", vec![]),
        bind("", "", vec![], vec![]),
        execute("", 0),
        parse("ins", "INSERT INTO t VALUES (1)", vec![]),
        bind("", "ins", vec![], vec![]),
        execute("", 0),
        sync(),
    ]);
    let kinds = kinds(&answers);
    let fatal = kinds.iter().position(|k| k == "Error 57P01");
    assert!(fatal.is_some(), "no FATAL: {kinds:?}");
    assert_eq!(
        fatal,
        Some(kinds.len() - 1),
        "answers after the FATAL: {kinds:?}"
    );
    assert!(
        answers.last().is_some_and(crate::encode::is_fatal),
        "{kinds:?}"
    );
}
