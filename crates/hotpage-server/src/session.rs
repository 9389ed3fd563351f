//! One connection's [`SqlSession`] and its protocol state, answering the connection's
//! frontend messages in order. Messages come in batches (a pipeline up to a Sync, a Query
//! or a Flush) from a [`Transport`]; answers go back in chunks (one per statement of a
//! simple Query, so a client sees each result as it ends; one per batch otherwise). The
//! engine is synchronous and a commit waits for its fsync: the connection's own thread
//! runs all of it (`connection`), so that wait blocks no one else.

use crate::encode::{self, code};
use crate::extended::{Portal, Statement};
use hotpage_sql::{
    BatchObserver, ColumnInfo, SqlError, SqlSession, StatementResult, Value, WaitStop, WireFormat,
    is_read_result, statement_stopped,
};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The limits a session applies to each statement.
#[derive(Clone, Copy, Debug)]
pub struct StatementLimits {
    /// `statement_timeout` for sessions that do not SET their own (`--statement-timeout-ms`).
    pub timeout: Option<Duration>,
    pub max_statement_bytes: usize,
}

/// Where a session's messages come from and where its answers go: the connection's socket,
/// or a test's queues.
pub trait Transport {
    /// The next batch of messages; None once the connection has ended (the transport has
    /// told the client why, where there was something to tell).
    fn read_batch(&mut self) -> Option<Vec<PgWireFrontendMessage>>;
    /// Writes answers and flushes them. A client that is gone is not an error here: its
    /// next read ends the session.
    fn write(&mut self, messages: Vec<PgWireBackendMessage>);
    /// True once a write found the client gone: a statement streaming rows stops then.
    fn client_gone(&self) -> bool {
        false
    }
}

/// The messages of the batches, one at a time. A batch is answered (its pending answers
/// written) when its last message has been taken and the session wants the next: so a
/// COPY FROM STDIN in the middle of a Query can answer CopyInResponse and read the
/// CopyData that the client sends only then.
#[derive(Default)]
pub struct Inbox {
    queue: VecDeque<PgWireFrontendMessage>,
    /// A batch was taken and is not answered yet.
    open: bool,
}

impl Inbox {
    pub fn new() -> Inbox {
        Inbox::default()
    }

    /// The next message: the rest of this batch, else (once the batch is answered) the
    /// next batch's first. None when the connection has ended.
    pub fn next(&mut self, out: &mut Output) -> Option<PgWireFrontendMessage> {
        loop {
            if out.fatal_pushed {
                // A FATAL ends the session where it is: what the client sent after it in
                // this batch is not run, and no other batch is read.
                out.send_pending();
                self.queue.clear();
                return None;
            }
            if let Some(message) = self.queue.pop_front() {
                return Some(message);
            }
            if self.open {
                out.send_pending();
                self.open = false;
            }
            self.queue = out.transport.read_batch()?.into();
            self.open = true;
        }
    }
}

/// Answers waiting to be written, written in chunks.
pub struct Output {
    pending: Vec<PgWireBackendMessage>,
    transport: Box<dyn Transport>,
    /// A FATAL is among the answers: the session ends after it.
    fatal_pushed: bool,
}

impl Output {
    pub fn new(transport: Box<dyn Transport>) -> Output {
        Output {
            pending: Vec::new(),
            transport,
            fatal_pushed: false,
        }
    }

    pub fn push(&mut self, message: PgWireBackendMessage) {
        self.fatal_pushed |= encode::is_fatal(&message);
        self.pending.push(message);
    }

    pub fn append(&mut self, messages: &mut Vec<PgWireBackendMessage>) {
        self.fatal_pushed |= messages.iter().any(encode::is_fatal);
        self.pending.append(messages);
    }

    /// Writes what is pending now, and fails (08006) if the client is gone, so that a
    /// statement streaming its rows stops rather than reading on for no one.
    pub fn send_streamed(&mut self) -> Result<(), SqlError> {
        self.send_pending();
        if self.transport.client_gone() {
            return Err(SqlError::new(
                code::CONNECTION_FAILURE,
                "the client closed the connection while rows were being sent",
            ));
        }
        Ok(())
    }

    /// Writes what is pending now.
    pub fn send_pending(&mut self) {
        if !self.pending.is_empty() {
            let chunk = std::mem::take(&mut self.pending);
            self.transport.write(chunk);
        }
    }
}

/// Answers a connection's messages until it ends.
/// A panic while answering (a bug) ends only this connection: the client gets a FATAL
/// XX000 that says so, the panic is logged on stderr, and the other sessions go on. The
/// session is not used again (its state may be half-changed); dropping it rolls back its
/// open transaction, as a closed connection's.
pub fn run(state: &mut SessionState, out: &mut Output) {
    let mut inbox = Inbox::new();
    while let Some(message) = inbox.next(out) {
        let handled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            state.handle(message, out, &mut inbox);
        }));
        if let Err(panic) = handled {
            let what = panic_text(panic.as_ref());
            eprintln!(
                "hotpage serve: internal error, this connection is closed (the others go on): {what}"
            );
            out.push(encode::fatal(
                code::INTERNAL_ERROR,
                format!("internal error: {what}; please report this to the hotpage developers"),
            ));
            out.send_pending();
            return;
        }
    }
}

/// The message a panic was raised with.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic with no message".to_string()
    }
}

/// The query that panics, in this crate's own test build only (no release build, and no
/// other crate's test, has it): how the tests reach the path above.
#[cfg(test)]
pub(crate) const TEST_PANIC_QUERY: &str = "SELECT hotpage_test_panic()";

/// One connection's SQL session and protocol state.
pub struct SessionState {
    pub session: SqlSession,
    /// Prepared statements by name ("" is the unnamed one).
    pub statements: HashMap<String, Arc<Statement>>,
    /// Portals by name ("" is the unnamed one).
    pub portals: HashMap<String, Portal>,
    /// After an error in an extended-protocol message, messages up to the next Sync are
    /// skipped, as PostgreSQL does.
    pub skip_until_sync: bool,
    pub limits: StatementLimits,
    pub cancel: Arc<AtomicBool>,
    /// The SQL session's counts of `DEALLOCATE ALL` / `DISCARD ALL`, and of `DISCARD
    /// ALL`, when the protocol's statements, and its portals, were last dropped for one.
    deallocations: u64,
    discards: u64,
}

/// A Query's or Execute's watch for a cancel request or its timeout, checked between its
/// statements and before a read's rows are sent (the SQL session looks while a statement
/// runs: `SqlSession::set_cancel_flag`).
pub struct Interrupt {
    cancel: Arc<AtomicBool>,
    deadline: Option<Instant>,
}

impl Interrupt {
    /// Starts watching: a cancel request that came before the statement does not count
    /// (PostgreSQL too ignores a cancel that finds nothing running).
    pub fn start(cancel: &Arc<AtomicBool>, timeout: Option<Duration>) -> Interrupt {
        cancel.store(false, Ordering::Relaxed);
        Interrupt {
            cancel: Arc::clone(cancel),
            deadline: timeout.map(|t| Instant::now() + t),
        }
    }

    /// 57014 if a cancel came or the timeout passed.
    pub fn check(&self) -> Result<(), SqlError> {
        if self.cancel.swap(false, Ordering::Relaxed) {
            return Err(statement_stopped(WaitStop::Cancelled));
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(statement_stopped(WaitStop::Deadline));
        }
        Ok(())
    }
}

/// 54000 for SQL text over the limit.
pub fn check_statement_size(sql: &str, limit: usize) -> Result<(), SqlError> {
    if sql.len() > limit {
        return Err(SqlError::new(
            code::PROGRAM_LIMIT_EXCEEDED,
            format!(
                "statement is too long: {} bytes, the limit is {limit} (hotpage serve --max-statement-bytes)",
                sql.len()
            ),
        ));
    }
    Ok(())
}

impl SessionState {
    pub fn new(
        mut session: SqlSession,
        limits: StatementLimits,
        cancel: Arc<AtomicBool>,
    ) -> SessionState {
        // The session stops a running statement itself (a scan, a loop, pg_sleep); the
        // server also looks between statements and before a read's rows are sent.
        session.set_cancel_flag(Arc::clone(&cancel));
        session.set_default_statement_timeout(limits.timeout);
        SessionState {
            session,
            statements: HashMap::new(),
            portals: HashMap::new(),
            skip_until_sync: false,
            limits,
            cancel,
            deallocations: 0,
            discards: 0,
        }
    }

    /// Answers one message (`inbox` gives a COPY FROM STDIN its data).
    pub fn handle(&mut self, message: PgWireFrontendMessage, out: &mut Output, inbox: &mut Inbox) {
        use PgWireFrontendMessage as M;
        if self.skip_until_sync && !matches!(message, M::Sync(_)) {
            return;
        }
        #[cfg(test)]
        if matches!(&message, M::Query(q) if q.query == TEST_PANIC_QUERY) {
            panic!("the test query asked for a panic");
        }
        let outcome = match message {
            M::Query(query) => {
                self.simple_query(&query.query, out, inbox);
                Ok(())
            }
            M::Parse(parse) => self.parse(parse, out),
            M::Bind(bind) => self.bind(bind, out),
            M::Describe(describe) => self.describe(&describe, out),
            M::Execute(execute) => self.execute(&execute, out),
            M::Close(close) => self.close(&close, out),
            M::Sync(_) => {
                self.sync(out);
                Ok(())
            }
            // Answers are flushed at the end of every batch, and a Flush ends one.
            M::Flush(_) => Ok(()),
            // No COPY is in progress (one that failed leaves the client's rest of the
            // data behind): PostgreSQL ignores these.
            M::CopyData(_) | M::CopyDone(_) | M::CopyFail(_) => Ok(()),
            // Startup, password and cancel messages belong before startup.
            _ => Err(SqlError::new(
                code::PROTOCOL_VIOLATION,
                "unexpected startup-phase message after startup",
            )),
        };
        if let Err(error) = outcome {
            self.session.fail_transaction_block();
            self.skip_until_sync = true;
            out.push(encode::error(&error));
        }
        // `DEALLOCATE ALL` and `DISCARD ALL` drop the protocol's named statements too, and
        // `DISCARD ALL` closes its portals, as in PostgreSQL (a pool's reset must leave
        // none behind). The unnamed statement is not in PostgreSQL's table, and stays.
        if self.session.deallocations() != self.deallocations {
            self.deallocations = self.session.deallocations();
            self.statements.retain(|name, _| name.is_empty());
        }
        if self.session.discards() != self.discards {
            self.discards = self.session.discards();
            self.portals.clear();
        }
    }

    /// A Query message: its statements in order, each answered as it ends, then
    /// ReadyForQuery. The unnamed statement and portal are dropped, as in PostgreSQL.
    fn simple_query(&mut self, sql: &str, out: &mut Output, inbox: &mut Inbox) {
        self.statements.remove("");
        self.portals.remove("");
        let checked = match crate::frame::invalid_text_error(sql) {
            Some(error) => Err(error),
            None => check_statement_size(sql, self.limits.max_statement_bytes),
        };
        let error = match checked {
            Err(error) => {
                self.session.fail_transaction_block();
                Some(error)
            }
            Ok(()) => {
                let mut observer = SimpleQuery {
                    interrupt: Interrupt::start(&self.cancel, self.session.statement_timeout()),
                    out: &mut *out,
                    inbox,
                    statements: 0,
                    described: false,
                    chunk_pending: false,
                };
                let error = self.session.execute_query_message(sql, &mut observer);
                if error.is_none() && observer.statements == 0 {
                    out.push(encode::empty_query());
                }
                error
            }
        };
        if let Some(error) = error {
            out.push(encode::error(&error));
        }
        out.push(encode::ready(self.session.txn_status()));
    }

    /// Sync: the end of an extended-protocol exchange. Outside a transaction block the
    /// portals end with the (implicit) transaction, as in PostgreSQL.
    fn sync(&mut self, out: &mut Output) {
        self.skip_until_sync = false;
        let status = self.session.txn_status();
        if status == hotpage_sql::TxnStatus::Idle {
            self.portals.clear();
        }
        out.push(encode::ready(status));
    }
}

/// Streams a simple Query's results and stops it on a cancel or timeout; feeds a COPY
/// FROM STDIN from the client's CopyData and sends a COPY TO STDOUT's.
struct SimpleQuery<'a> {
    interrupt: Interrupt,
    out: &'a mut Output,
    inbox: &'a mut Inbox,
    statements: usize,
    /// The running statement's RowDescription is sent: its rows are streaming.
    described: bool,
    /// A chunk of the running statement's rows (or COPY records) waits in the output.
    chunk_pending: bool,
}

impl SimpleQuery<'_> {
    /// Sends the chunk that waits, if any, and keeps `messages` waiting in its place: so a
    /// result of one chunk (most) goes out in one write with its CommandComplete, and a
    /// longer one holds at most two chunks here.
    fn queue_chunk(&mut self, mut messages: Vec<PgWireBackendMessage>) -> Result<(), SqlError> {
        if self.chunk_pending {
            self.out.send_streamed()?;
        }
        self.out.append(&mut messages);
        self.chunk_pending = true;
        Ok(())
    }
}

impl BatchObserver for SimpleQuery<'_> {
    fn before_statement(&mut self, index: usize) -> Result<(), SqlError> {
        if index > 0 {
            self.interrupt.check()?;
        }
        Ok(())
    }

    fn statement_done(&mut self, result: StatementResult) -> Result<(), SqlError> {
        self.statements += 1;
        // A read's rows may be dropped; a write that ended is reported, whatever came.
        // Rows already streamed are not dropped: the statement that sent them completes.
        if is_read_result(&result) && !self.described {
            self.interrupt.check()?;
        }
        self.chunk_pending = false;
        let mut messages = Vec::new();
        if std::mem::take(&mut self.described) {
            // Its rows went out as they were made (statement_rows).
            messages.push(encode::command_complete(&result.tag));
        } else {
            encode::simple_result(&result, &mut messages)?;
        }
        self.out.append(&mut messages);
        self.out.send_pending();
        Ok(())
    }

    fn streams_rows(&self) -> bool {
        true
    }

    /// Sends each chunk as the next comes: a result of any size takes two chunks of memory
    /// here.
    fn statement_rows(
        &mut self,
        columns: &[ColumnInfo],
        rows: Vec<Vec<Value>>,
    ) -> Result<(), SqlError> {
        self.interrupt.check()?;
        let formats = vec![WireFormat::Text; columns.len()];
        let mut messages = Vec::with_capacity(rows.len() + 1);
        if !self.described {
            self.described = true;
            messages.push(encode::row_description(columns, &formats));
        }
        encode::data_rows(&rows, columns, &formats, &mut messages)?;
        self.queue_chunk(messages)
    }

    fn copy_in_start(&mut self, columns: usize) -> Result<(), SqlError> {
        self.out.push(encode::copy_in_response(columns)?);
        Ok(())
    }

    fn copy_in_next(&mut self) -> Result<Option<Vec<u8>>, SqlError> {
        use PgWireFrontendMessage as M;
        loop {
            self.interrupt.check()?;
            // Taking the next message answers the batch before it (CopyInResponse first).
            let Some(message) = self.inbox.next(self.out) else {
                return Err(SqlError::new(
                    code::CONNECTION_FAILURE,
                    "unexpected EOF on client connection with an open COPY",
                ));
            };
            return match message {
                M::CopyData(data) => Ok(Some(data.data.to_vec())),
                M::CopyDone(_) => Ok(None),
                M::CopyFail(fail) => Err(SqlError::new(
                    code::QUERY_CANCELED,
                    format!("COPY from stdin failed: {}", fail.message),
                )),
                // PostgreSQL ignores Flush and Sync in copy-in mode.
                M::Flush(_) | M::Sync(_) => continue,
                other => Err(SqlError::new(
                    code::PROTOCOL_VIOLATION,
                    format!(
                        "unexpected message type 0x{:02X} during COPY from stdin",
                        message_type(&other)
                    ),
                )),
            };
        }
    }

    fn copy_out_start(&mut self, columns: usize) -> Result<(), SqlError> {
        self.interrupt.check()?;
        self.out.push(encode::copy_out_response(columns)?);
        Ok(())
    }

    /// One CopyData per record, sent as each chunk comes.
    fn copy_out_records(&mut self, records: Vec<Vec<u8>>) -> Result<(), SqlError> {
        self.interrupt.check()?;
        let messages = records.iter().map(|r| encode::copy_data(r)).collect();
        self.queue_chunk(messages)
    }

    fn copy_out_end(&mut self) -> Result<(), SqlError> {
        self.out.push(encode::copy_done());
        Ok(())
    }
}

/// A frontend message's type byte, for the error about one that has no place in a COPY.
fn message_type(message: &PgWireFrontendMessage) -> u8 {
    use PgWireFrontendMessage as M;
    match message {
        M::Query(_) => b'Q',
        M::Parse(_) => b'P',
        M::Bind(_) => b'B',
        M::Describe(_) => b'D',
        M::Execute(_) => b'E',
        M::Close(_) => b'C',
        M::Terminate(_) => b'X',
        _ => 0,
    }
}
