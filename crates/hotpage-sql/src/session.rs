//! [`SqlDatabase`] (one per open database, shared by every session) and [`SqlSession`] (one
//! per connection or thread): parse with sqlparser's PostgreSQL dialect, plan, execute.

use crate::catalog;
use crate::ddl;
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::expr::{EvalContext, Func, Typing, fold, object_name};
use crate::insert::{self, InsertPlan};
use crate::schema::{Metadata, PendingPartitioned, Sequence};
use crate::select::{self, SelectPlan};
use crate::table::SqlTable;
use crate::types::SqlType;
use crate::value::Value;
use crate::views::{self, Activity};
use hotpage::{Database, Durability, Error as EngineError};
use sqlparser::ast::{
    CreateTable, Expr, ForValues, ObjectType, Query, SequenceOptions, Set, SetExpr, Statement, With,
};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

/// SQL Server's trace flag for fn_dblog over the inactive log too.
pub(crate) const DBLOG_INACTIVE_LOG_TRACE_FLAG: u32 = 2537;

mod access_mode;
mod alter;
mod copy;
mod interrupt;
pub use interrupt::statement_stopped;
mod maintenance;
mod parse;
pub(crate) use parse::parse;
mod protocol;

pub use protocol::{BatchObserver, is_read_result};

/// A result column: its name and type.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnInfo {
    pub name: String,
    pub ty: SqlType,
}

/// What one statement returned: its command tag (`INSERT 0 1`, `SELECT 3`, `CREATE TABLE`)
/// and, for statements that return rows, the columns and rows.
#[derive(Clone, Debug, PartialEq)]
pub struct StatementResult {
    pub tag: String,
    pub columns: Vec<ColumnInfo>,
    pub rows: Vec<Vec<Value>>,
}

impl StatementResult {
    fn command(tag: impl Into<String>) -> StatementResult {
        StatementResult {
            tag: tag.into(),
            columns: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// True if the statement returns rows (even none): SELECT, SHOW, RETURNING.
    pub fn has_rows(&self) -> bool {
        !self.columns.is_empty()
    }
}

/// The session's transaction state, as ReadyForQuery reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnStatus {
    /// Not in a transaction block.
    Idle,
    /// In a transaction block.
    InTransaction,
    /// In a failed transaction block: statements are refused until ROLLBACK.
    Failed,
}

/// A statement parsed and planned once, to be executed many times with parameters.
#[derive(Clone)]
pub struct Prepared {
    plan: Plan,
    /// Result columns (empty for statements that return no rows).
    pub columns: Vec<ColumnInfo>,
    /// Parameters `$1…` and the type each was inferred to have, where known.
    pub param_types: Vec<Option<SqlType>>,
    /// The statement's text, as `pg_stat_activity` shows it while it runs.
    text: Arc<str>,
}

impl Prepared {
    /// The table an INSERT writes to (None for other statements): the workload driver
    /// reports that table's figures.
    pub fn insert_table(&self) -> Option<String> {
        match &self.plan {
            Plan::Insert(plan) => Some(plan.table_name().to_string()),
            _ => None,
        }
    }
}

#[derive(Clone)]
enum Plan {
    Insert(Arc<InsertPlan>),
    Select(Arc<SelectPlan>),
    /// A query on pg_catalog / information_schema (`catalog`).
    Catalog(Arc<catalog::CatalogPlan>),
    /// Anything else is executed from its statement each time.
    Other(Box<Statement>),
}

/// An open database as SQL sees it: the engine plus the SQL catalog.
pub struct SqlDatabase {
    engine: Arc<Database>,
    tables: RwLock<HashMap<String, Arc<SqlTable>>>,
    meta: Mutex<Metadata>,
    // Unowned sequences' values reserved in memory: name -> (next, end of reservation).
    sequence_cache: Mutex<HashMap<String, (i64, i64)>>,
    // One DDL statement at a time.
    ddl: Mutex<()>,
    activity: Mutex<Vec<Weak<Activity>>>,
    next_pid: AtomicU32,
    // Bumped whenever the T-SQL objects change: a T-SQL session reloads them when it moves.
    tsql_generation: AtomicU64,
    // T-SQL's global trace flags (`DBCC TRACEON(n, -1)`); a session's own are its
    // TsqlSession's. Flag 2537: fn_dblog reads the whole retained log.
    global_trace_flags: Mutex<BTreeSet<u32>>,
}

impl SqlDatabase {
    /// Wraps an open database. Its metadata (sequences) is read once here.
    pub fn new(engine: Arc<Database>) -> SqlResult<Arc<SqlDatabase>> {
        let meta = Metadata::decode(&engine.metadata())?;
        Ok(Arc::new(SqlDatabase {
            engine,
            tables: RwLock::new(HashMap::new()),
            meta: Mutex::new(meta),
            sequence_cache: Mutex::new(HashMap::new()),
            ddl: Mutex::new(()),
            activity: Mutex::new(Vec::new()),
            next_pid: AtomicU32::new(1),
            tsql_generation: AtomicU64::new(0),
            global_trace_flags: Mutex::new(BTreeSet::new()),
        }))
    }

    /// Turns a global trace flag on or off (T-SQL's `DBCC TRACEON|TRACEOFF(flag, -1)`):
    /// every session of the database sees it until TRACEOFF or a reopen.
    pub(crate) fn set_global_trace_flag(&self, flag: u32, on: bool) {
        let mut flags = lock(&self.global_trace_flags);
        if on {
            flags.insert(flag);
        } else {
            flags.remove(&flag);
        }
    }

    /// The global trace flags that are on.
    pub(crate) fn global_trace_flags(&self) -> BTreeSet<u32> {
        lock(&self.global_trace_flags).clone()
    }

    /// Whether SQL Server's trace flag 2537 is on globally: `hotpage_dblog` (fn_dblog)
    /// then reads the log's inactive part too (the retained log before the last
    /// checkpoint, and so before the database was opened), not only the active log, for
    /// every session. A T-SQL session's own flag reaches it as `hotpage_dblog`'s third
    /// argument instead.
    pub(crate) fn dblog_reads_inactive_log(&self) -> bool {
        lock(&self.global_trace_flags).contains(&DBLOG_INACTIVE_LOG_TRACE_FLAG)
    }

    /// The engine underneath.
    pub fn engine(&self) -> &Arc<Database> {
        &self.engine
    }

    /// A new session.
    pub fn session(self: &Arc<Self>) -> SqlSession {
        let activity = Arc::new(Activity::new(self.next_pid.fetch_add(1, Ordering::Relaxed)));
        lock(&self.activity).push(Arc::downgrade(&activity));
        let mut session = SqlSession {
            db: Arc::clone(self),
            engine: self.engine.session(),
            state: SessionState {
                pid: activity.pid,
                ..SessionState::default()
            },
            txn: TxnStatus::Idle,
            prepared: HashMap::new(),
            activity,
            truncated: Vec::new(),
            read_only: false,
            deallocations: 0,
            discards: 0,
        };
        // Every session can be cancelled by another (`pg_cancel_backend`); whoever serves
        // it may put its own flag in place (a server's cancel key, a shell's Ctrl-C).
        session.set_cancel_flag(Arc::new(std::sync::atomic::AtomicBool::new(false)));
        let terminated = session.activity.terminated_flag();
        session.state.clock.set_terminated_flag(terminated);
        session
    }

    /// The live session `pid`, if there is one.
    pub(crate) fn activity_of(&self, pid: u32) -> Option<Arc<Activity>> {
        self.activities().into_iter().find(|a| a.pid == pid)
    }

    /// The live sessions' activity (for `pg_stat_activity`).
    pub(crate) fn activities(&self) -> Vec<Arc<Activity>> {
        let mut list = lock(&self.activity);
        list.retain(|w| w.strong_count() > 0);
        list.iter().filter_map(Weak::upgrade).collect()
    }

    /// The table named `name`, loaded once and cached.
    pub(crate) fn table(&self, name: &str) -> SqlResult<Arc<SqlTable>> {
        let cached = self
            .tables
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .filter(|t| !t.handle.is_dropped())
            .cloned();
        if let Some(table) = cached {
            return Ok(table);
        }
        if let Some(pending) = self.metadata().pending.iter().find(|p| p.name == name) {
            return Err(SqlError::new(
                "23514",
                format!("no partition of relation \"{name}\" found for row"),
            )
            .with_detail(format!(
                "hotpage makes the table once its partitions cover every remainder; {} of {} so far",
                pending.remainders.len(),
                pending.modulus
            )));
        }
        let handle = self.engine.table(name).map_err(|e| match e {
            EngineError::NoSuchTable(_) => undefined_table(name),
            other => engine_error(other),
        })?;
        let table = Arc::new(SqlTable::new(handle)?);
        self.tables
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string(), Arc::clone(&table));
        Ok(table)
    }

    /// The columns of a hash-partitioned table still waiting for its partitions (it has no
    /// rows yet), or `None` if `name` is not one.
    pub(crate) fn pending_partitioned_scope(
        &self,
        name: &str,
    ) -> SqlResult<Option<Vec<(String, SqlType)>>> {
        let meta = self.metadata();
        let Some(pending) = meta.pending.iter().find(|p| p.name == name) else {
            return Ok(None);
        };
        let parsed = parse(&pending.create_sql)?;
        let Some(Statement::CreateTable(ct)) = parsed.first() else {
            return Ok(None);
        };
        let plan = ddl::plan_table(ct, &meta, self.engine.data_files(), Some(1))?;
        Ok(Some(
            plan.schema
                .columns
                .iter()
                .map(|c| (c.name.clone(), c.ty))
                .collect(),
        ))
    }

    pub(crate) fn metadata(&self) -> Metadata {
        lock(&self.meta).clone()
    }

    /// The T-SQL objects (user functions, partition functions and schemes) and the
    /// generation they are at.
    pub(crate) fn tsql_objects(&self) -> (u64, Vec<crate::schema::TsqlObject>) {
        // The generation first: a change between the two reads is seen again next time.
        let generation = self.tsql_generation.load(Ordering::Acquire);
        (generation, lock(&self.meta).tsql.clone())
    }

    /// The generation of the T-SQL objects: it moves on every change.
    pub(crate) fn tsql_generation(&self) -> u64 {
        self.tsql_generation.load(Ordering::Acquire)
    }

    /// Changes the T-SQL objects, durably, one DDL at a time: `change` edits a copy of the
    /// list, which is stored if it returns Ok.
    pub(crate) fn update_tsql_objects<T>(
        &self,
        change: impl FnOnce(&mut Vec<crate::schema::TsqlObject>) -> SqlResult<T>,
    ) -> SqlResult<T> {
        let _ddl = lock(&self.ddl);
        // A sequence's reservation is stored under the sequence cache's lock, not the DDL
        // lock: hold it too, so that neither store overwrites the other's change.
        let _sequences = lock(&self.sequence_cache);
        let mut meta = self.metadata();
        let out = change(&mut meta.tsql)?;
        self.store_metadata(meta)?;
        self.tsql_generation.fetch_add(1, Ordering::AcqRel);
        Ok(out)
    }

    /// Replaces the metadata, durably.
    fn store_metadata(&self, meta: Metadata) -> SqlResult<()> {
        self.engine
            .set_metadata(&meta.encode())
            .map_err(engine_error)?;
        *lock(&self.meta) = meta;
        Ok(())
    }

    /// The next value of an unowned sequence: from the in-memory reservation, which is
    /// extended (durably, in the metadata) `cache` values at a time.
    fn sequence_next(&self, name: &str) -> SqlResult<i64> {
        let mut cache = lock(&self.sequence_cache);
        let mut meta = self.metadata();
        let seq = meta
            .sequences
            .iter_mut()
            .find(|s| s.name == name)
            .ok_or_else(|| undefined_table(name))?;
        let entry = cache
            .entry(name.to_string())
            .or_insert((seq.next, seq.next));
        if entry.0 == entry.1 {
            let span = i64::from(seq.cache.max(1)).saturating_mul(seq.increment);
            let end = entry.1.checked_add(span).ok_or_else(|| {
                SqlError::new(
                    sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!("nextval: reached maximum value of sequence \"{name}\""),
                )
            })?;
            seq.next = end;
            self.store_metadata(meta)?;
            entry.1 = end;
        }
        let value = entry.0;
        entry.0 += self
            .metadata()
            .sequences
            .iter()
            .find(|s| s.name == name)
            .map_or(1, |s| s.increment);
        Ok(value)
    }
}

/// A poisoned mutex still guards consistent data here (no invariant spans a panic).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn undefined_table(name: &str) -> SqlError {
    SqlError::new(
        sqlstate::UNDEFINED_TABLE,
        format!("relation \"{name}\" does not exist"),
    )
}

/// An engine error as SQL reports it.
pub(crate) fn engine_error(e: EngineError) -> SqlError {
    if let EngineError::WaitStopped(stop) = e {
        return interrupt::statement_stopped(stop);
    }
    let state = match &e {
        EngineError::DuplicateKey { .. } => sqlstate::UNIQUE_VIOLATION,
        EngineError::KeyLockTimeout { .. } => sqlstate::LOCK_NOT_AVAILABLE,
        // object_in_use
        EngineError::TableBusy(_) => "55006",
        EngineError::NoSuchTable(_) => sqlstate::UNDEFINED_TABLE,
        EngineError::TableExists(_) => sqlstate::DUPLICATE_TABLE,
        EngineError::RowTooLarge { .. } | EngineError::KeyTooLarge { .. } => {
            sqlstate::PROGRAM_LIMIT_EXCEEDED
        }
        EngineError::ReadOnly(_) => sqlstate::READ_ONLY_SQL_TRANSACTION,
        EngineError::InvalidOption(_) => sqlstate::INVALID_PARAMETER_VALUE,
        EngineError::KeySpaceExhausted(_) => sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        EngineError::PoolExhausted { .. } | EngineError::TransactionMemory { .. } => "53200",
        EngineError::Io { .. } => sqlstate::IO_ERROR,
        EngineError::CorruptPage { .. }
        | EngineError::CorruptFile { .. }
        | EngineError::CorruptLog { .. }
        | EngineError::DamagedDatabase { .. }
        | EngineError::RowsMissing { .. } => sqlstate::DATA_CORRUPTED,
        _ => sqlstate::INTERNAL_ERROR,
    };
    SqlError::new(state, e.to_string())
}

/// Per-session values functions read: lastval, currval.
#[derive(Default)]
pub(crate) struct SessionState {
    pub lastval: Option<i64>,
    pub currval: HashMap<String, i64>,
    pub settings: HashMap<String, String>,
    /// Stops the running statement on a cancel or its timeout (see `interrupt`).
    pub clock: interrupt::StatementClock,
    /// `statement_timeout` where the session has not SET it: a server's
    /// `--statement-timeout-ms`, as PostgreSQL's postgresql.conf.
    pub default_statement_timeout: Option<Duration>,
    /// The running statement runs in a read-only transaction: nextval() is refused.
    pub read_only: bool,
    /// The session's id (`pg_backend_pid()`, `pg_stat_activity.pid`).
    pub pid: u32,
    /// The type rules statements are planned under: PostgreSQL's, or T-SQL's implicit
    /// conversions for a session a `TsqlSession` wraps. Evaluation reads it too: LIKE's
    /// backslash escapes only in PostgreSQL's dialect.
    pub typing: Typing,
}

/// A session: its engine session, transaction state and prepared statements.
pub struct SqlSession {
    db: Arc<SqlDatabase>,
    engine: hotpage::Session,
    state: SessionState,
    txn: TxnStatus,
    prepared: HashMap<String, Prepared>,
    activity: Arc<Activity>,
    /// Tables the open transaction truncates: their cached plans' tables are replaced at
    /// commit.
    truncated: Vec<String>,
    /// The open block is READ ONLY (see `access_mode`).
    read_only: bool,
    /// How many times `DEALLOCATE ALL` or `DISCARD ALL` ran: a server drops its named
    /// protocol-level statements when this moves, as PostgreSQL does.
    deallocations: u64,
    /// How many times `DISCARD ALL` ran: a server closes its portals too (CLOSE ALL).
    discards: u64,
}

/// Parameter `$index + 1` of a statement's execution.
fn param_at(params: &[Value], index: usize) -> SqlResult<Value> {
    params.get(index).cloned().ok_or_else(|| {
        SqlError::new(
            sqlstate::UNDEFINED_PARAMETER,
            format!("there is no parameter ${}", index + 1),
        )
    })
}

/// What an expression evaluated inside a statement may call on the session.
pub(crate) struct Ctx<'a> {
    pub db: &'a SqlDatabase,
    pub engine: &'a mut hotpage::Session,
    pub state: &'a mut SessionState,
    pub params: &'a [Value],
}

impl EvalContext for Ctx<'_> {
    fn param(&self, index: usize) -> SqlResult<Value> {
        param_at(self.params, index)
    }

    fn like_escapes(&self) -> bool {
        self.state.typing == Typing::Postgres
    }

    fn call(&mut self, func: Func, args: &[Value]) -> SqlResult<Value> {
        functions::call(self.db, self.state, Some(&mut *self.engine), func, args)
    }
}

/// The durability a `synchronous_commit` or `hotpage.durability` value names.
fn durability_named(value: &str) -> Option<Durability> {
    match value.to_lowercase().as_str() {
        "on" | "true" | "sync" | "remote_apply" | "remote_write" | "local" => {
            Some(Durability::Sync)
        }
        "off" | "false" | "async" => Some(Durability::Async),
        _ => None,
    }
}

/// Where a query's rows go as they are made (a wire server's socket), a chunk at a time,
/// instead of into [`StatementResult::rows`]: so a result of any size takes memory for one
/// chunk. Only queries that need no row before the last ([`SelectPlan::streams`]: one
/// table or view, no ORDER BY, grouping, DISTINCT or window) stream; others fill `rows` as
/// before. An error in `stream` (the client went away, a cancel) stops the query.
pub type RowStream<'a> = dyn FnMut(&[ColumnInfo], Vec<Vec<Value>>) -> SqlResult<()> + 'a;

/// A streamed chunk holds at most this many rows…
const STREAM_CHUNK_ROWS: usize = 1024;
/// …or about this many bytes of values, whichever comes first.
const STREAM_CHUNK_BYTES: usize = 1 << 20;

/// Runs `plan` with its rows sent to `stream` in chunks; the result has the columns and the
/// tag, and no rows.
fn stream_select(
    plan: &SelectPlan,
    ctx: &mut Ctx<'_>,
    stream: &mut RowStream<'_>,
) -> SqlResult<StatementResult> {
    let mut chunk = Vec::new();
    let mut chunk_bytes = 0usize;
    let emitted = plan.execute_streamed(ctx, &mut |row| {
        chunk_bytes += crate::limits::row_bytes(&row);
        chunk.push(row);
        if chunk.len() >= STREAM_CHUNK_ROWS || chunk_bytes >= STREAM_CHUNK_BYTES {
            chunk_bytes = 0;
            stream(&plan.columns, std::mem::take(&mut chunk))?;
        }
        Ok(())
    })?;
    if !chunk.is_empty() {
        stream(&plan.columns, chunk)?;
    }
    Ok(StatementResult {
        tag: format!("SELECT {emitted}"),
        columns: plan.columns.clone(),
        rows: Vec::new(),
    })
}

/// Calls one of the SQL layer's functions with the session's state, for the general
/// engine (`catalog/`), which evaluates its own expressions.
pub(crate) fn call_function(
    db: &SqlDatabase,
    state: &mut SessionState,
    engine: &mut hotpage::Session,
    func: Func,
    args: Vec<Value>,
) -> SqlResult<Value> {
    let mut ctx = Ctx {
        db,
        engine,
        state,
        params: &[],
    };
    crate::expr::eval_call(func, args, &mut ctx)
}

/// The context of expressions evaluated inside a table scan, which holds the engine
/// session: everything but `nextval()`.
pub(crate) struct ScanCtx<'a> {
    pub db: &'a SqlDatabase,
    pub state: &'a mut SessionState,
    pub params: &'a [Value],
}

impl EvalContext for ScanCtx<'_> {
    fn param(&self, index: usize) -> SqlResult<Value> {
        param_at(self.params, index)
    }

    fn like_escapes(&self) -> bool {
        self.state.typing == Typing::Postgres
    }

    fn call(&mut self, func: Func, args: &[Value]) -> SqlResult<Value> {
        functions::call(self.db, self.state, None, func, args)
    }
}

mod functions {
    use super::*;

    /// pg_sleep's argument as a wait: NaN and negatives do not wait; infinity waits until
    /// the statement is stopped.
    pub(super) fn sleep_duration(seconds: Option<&Value>) -> SqlResult<Duration> {
        let seconds = match seconds {
            None | Some(Value::Null) => 0.0,
            Some(v) => v.as_f64().ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    "function pg_sleep takes a number of seconds",
                )
            })?,
        };
        Ok(if seconds > 0.0 {
            Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
        } else {
            Duration::ZERO
        })
    }

    pub(super) fn call(
        db: &SqlDatabase,
        state: &mut SessionState,
        engine: Option<&mut hotpage::Session>,
        func: Func,
        args: &[Value],
    ) -> SqlResult<Value> {
        let name_arg = || match args.first() {
            Some(Value::Text(s)) => Ok(s.trim_end_matches("::regclass").to_lowercase()),
            _ => Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                "the function takes a sequence name as text",
            )),
        };
        Ok(match func {
            Func::Now => Value::Timestamp(now_micros()),
            Func::CurrentDate => Value::Date(crate::value::timestamp_to_date(now_micros())?),
            Func::Sleep => {
                state.clock.sleep(sleep_duration(args.first())?)?;
                Value::Null
            }
            Func::GenRandomUuid => Value::Uuid(random_uuid(false)),
            Func::UuidV7 => Value::Uuid(random_uuid(true)),
            Func::LastVal => state.lastval.map(Value::Int).ok_or_else(|| {
                SqlError::new(
                    sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
                    "lastval is not yet defined in this session",
                )
            })?,
            Func::CurrVal => {
                let name = name_arg()?;
                match state.currval.get(&name) {
                    Some(value) => Value::Int(*value),
                    None if db.metadata().sequences.iter().any(|s| s.name == name)
                        || implicit_sequence_exists(db, &name) =>
                    {
                        return Err(SqlError::new(
                            sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
                            format!(
                                "currval of sequence \"{name}\" is not yet defined in this session"
                            ),
                        ));
                    }
                    None => return Err(undefined_table(&name)),
                }
            }
            Func::NextVal => {
                let name = name_arg()?;
                if state.read_only {
                    return Err(SqlError::new(
                        sqlstate::READ_ONLY_SQL_TRANSACTION,
                        "cannot execute nextval() in a read-only transaction",
                    ));
                }
                let Some(engine) = engine else {
                    return Err(SqlError::unsupported(
                        "nextval() inside a query that reads a table",
                    ));
                };
                let value = nextval(db, engine, &name)?;
                state.lastval = Some(value);
                state.currval.insert(name, value);
                Value::Int(value)
            }
            Func::Version => Value::Text(catalog::version()),
            Func::CurrentDatabase => Value::Text("hotpage".into()),
            Func::ResetWaitStats => {
                db.engine.reset_stats();
                Value::Int(0)
            }
            Func::ObjectName => match args.first() {
                Some(Value::Int(id)) => {
                    crate::views::objects::name_of(db, *id).map_or(Value::Null, Value::Text)
                }
                Some(Value::Null) => Value::Null,
                _ => {
                    return Err(SqlError::new(
                        sqlstate::UNDEFINED_FUNCTION,
                        "hotpage_object_name takes an object id (integer)",
                    ));
                }
            },
            other => {
                return Err(SqlError::new(
                    sqlstate::INTERNAL_ERROR,
                    format!("function {other:?} reached the session"),
                ));
            }
        })
    }

    /// `t_id_seq`, the sequence PostgreSQL makes for table `t`'s identity column `id`.
    fn implicit_sequence_exists(db: &SqlDatabase, name: &str) -> bool {
        let Some(stem) = name.strip_suffix("_seq") else {
            return false;
        };
        db.engine.tables().iter().any(|t| {
            stem.strip_prefix(t.name.as_str())
                .and_then(|rest| rest.strip_prefix('_'))
                .is_some_and(|column| !column.is_empty())
        })
    }

    /// nextval: from the owning table's key generator, or the sequence's own reservation.
    fn nextval(db: &SqlDatabase, engine: &mut hotpage::Session, name: &str) -> SqlResult<i64> {
        let meta = db.metadata();
        let seq = meta
            .sequences
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| undefined_table(name))?;
        if seq.owner.is_empty() {
            return db.sequence_next(name);
        }
        let table = db.table(&seq.owner)?;
        let key = engine.next_key(&table.handle).map_err(engine_error)?;
        table.handle.key_kind().value_of(&key).ok_or_else(|| {
            SqlError::new(sqlstate::INTERNAL_ERROR, "a sequence key without a value")
        })
    }

    /// Microseconds since 2000-01-01 UTC, PostgreSQL's epoch.
    pub(crate) fn now_micros() -> i64 {
        const PG_EPOCH_UNIX_SECONDS: i64 = 946_684_800;
        let since_unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        since_unix - PG_EPOCH_UNIX_SECONDS * 1_000_000
    }

    /// A random v4 UUID, or a v7 (millisecond time first, then random bits).
    pub(crate) fn random_uuid(v7: bool) -> [u8; 16] {
        let mut bytes: [u8; 16] = rand_bytes();
        if v7 {
            let ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            bytes[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
            bytes[6] = (bytes[6] & 0x0f) | 0x70;
        } else {
            bytes[6] = (bytes[6] & 0x0f) | 0x40;
        }
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        bytes
    }

    fn rand_bytes() -> [u8; 16] {
        use std::hash::{BuildHasher, RandomState};
        // RandomState is seeded from the OS once per process and per instance: enough for
        // UUIDs that need to be unique, not secret.
        let a = RandomState::new().hash_one(std::time::Instant::now());
        let b = RandomState::new().hash_one(a);
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&a.to_le_bytes());
        out[8..].copy_from_slice(&b.to_le_bytes());
        out
    }
}

pub(crate) use functions::now_micros;

impl SqlSession {
    /// Runs every statement of `sql` in order, stopping at the first error (the statements
    /// before it keep their effects, as in PostgreSQL's simple query protocol).
    pub fn execute(&mut self, sql: &str) -> SqlResult<Vec<StatementResult>> {
        let (results, error) = self.execute_batch(sql);
        match error {
            Some(error) => Err(error),
            None => Ok(results),
        }
    }

    /// Like [`SqlSession::execute`], but returns the results before an error with it.
    pub fn execute_batch(&mut self, sql: &str) -> (Vec<StatementResult>, Option<SqlError>) {
        /// Keeps every result; never stops the batch itself.
        struct Collect(Vec<StatementResult>);
        impl protocol::BatchObserver for Collect {
            fn before_statement(&mut self, _: usize) -> SqlResult<()> {
                Ok(())
            }
            fn statement_done(&mut self, result: StatementResult) -> SqlResult<()> {
                self.0.push(result);
                Ok(())
            }
        }
        let mut collect = Collect(Vec::new());
        let error = self.execute_batch_observed(sql, &mut collect);
        (collect.0, error)
    }

    /// Parses and plans one statement for [`SqlSession::execute_prepared`].
    pub fn prepare(&mut self, sql: &str) -> SqlResult<Prepared> {
        let mut statements = parse(sql)?;
        if statements.len() != 1 {
            return Err(SqlError::new(
                sqlstate::SYNTAX_ERROR,
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        let statement = statements.remove(0);
        let mut prepared = self.plan(statement).map_err(|e| e.resolve_position(sql))?;
        prepared.text = Arc::from(sql.trim());
        Ok(prepared)
    }

    /// Executes a prepared statement with `params` for `$1…`.
    pub fn execute_prepared(
        &mut self,
        prepared: &Prepared,
        params: &[Value],
    ) -> SqlResult<StatementResult> {
        self.execute_prepared_streamed(prepared, params, None)
    }

    /// [`SqlSession::execute_prepared`], a query's rows given to `stream` a chunk at a time
    /// as they are made, where the query allows it (see [`RowStream`]).
    pub fn execute_prepared_streamed(
        &mut self,
        prepared: &Prepared,
        params: &[Value],
        stream: Option<&mut RowStream<'_>>,
    ) -> SqlResult<StatementResult> {
        // A plan whose table was dropped or replaced would reach the old table: plan it
        // again (a caller that keeps statements stores the fresh plan: `replan`).
        let fresh;
        let prepared = if prepared.is_stale() {
            fresh = self.replan(prepared).map_err(|e| self.fail(e))?;
            &fresh
        } else {
            prepared
        };
        // The clock first (see `execute_query_message`).
        self.start_statement_clock();
        self.activity.begin(&prepared.text);
        // COMMIT and ROLLBACK end a failed block, prepared or not.
        let outcome = if prepared.ends_transaction() {
            Ok(())
        } else {
            self.refuse_if_failed()
        };
        let outcome = outcome.and_then(|()| self.run_plan_streamed(&prepared.plan, params, stream));
        self.activity.end();
        outcome.map_err(|e| self.fail(e))
    }

    /// Lets `cancel` stop this session's running statement: whoever sets it (a server's
    /// cancel request, a shell's Ctrl-C) stops the statement with 57014 within about a
    /// millisecond of its work. A flag set while nothing runs is forgotten when the next
    /// statement starts, as PostgreSQL ignores a cancel that finds nothing running.
    pub fn set_cancel_flag(&mut self, cancel: Arc<std::sync::atomic::AtomicBool>) {
        self.activity.set_cancel_flag(Arc::clone(&cancel));
        self.state.clock.set_cancel_flag(cancel);
    }

    /// Lets `pg_terminate_backend` end this session: `hook` closes its connection (and
    /// should cancel what it runs). Only a server can; without one the call says false.
    pub fn set_terminate_hook(&mut self, hook: crate::views::TerminateHook) {
        self.activity.set_terminate_hook(hook);
    }

    /// `statement_timeout` while the session has not SET it (a server's configured
    /// default, as postgresql.conf's); `None` for none.
    pub fn set_default_statement_timeout(&mut self, timeout: Option<Duration>) {
        self.state.default_statement_timeout = timeout;
    }

    /// The `statement_timeout` in force: what the session SET, else the default.
    pub fn statement_timeout(&self) -> Option<Duration> {
        match self.state.settings.get("statement_timeout") {
            // SET checked the value; 0 is no timeout.
            Some(text) => interrupt::parse_timeout(text).flatten(),
            None => self.state.default_statement_timeout,
        }
    }

    /// A statement a client sent starts: its timeout starts now, and a wait for another
    /// session's key ends at it, at a cancel, or at `lock_timeout`.
    fn start_statement_clock(&mut self) {
        // A T-SQL batch's inner statements keep the batch's clock: no settings looked up
        // (a WHILE loop starts several statements a turn).
        if self.state.clock.is_held() {
            return;
        }
        let timeout = self.statement_timeout();
        if self.state.clock.start(timeout) {
            let lock_timeout = self
                .state
                .settings
                .get("lock_timeout")
                .and_then(|text| interrupt::parse_timeout(text).flatten());
            self.engine
                .set_wait_limits(self.state.clock.wait_limits(lock_timeout));
        }
    }

    /// 57014 if the running statement was cancelled or ran past its timeout (cheap: see
    /// `interrupt::StatementClock::poll`).
    pub(crate) fn poll_interrupt(&mut self) -> SqlResult<()> {
        self.state.clock.poll()
    }

    /// Makes the statements started until [`SqlSession::release_statement_clock`] part of
    /// the one running (a T-SQL batch): they keep its deadline.
    pub(crate) fn hold_statement_clock(&mut self) {
        self.start_statement_clock();
        self.state.clock.hold();
    }

    /// Ends a [`SqlSession::hold_statement_clock`].
    pub(crate) fn release_statement_clock(&mut self) {
        self.state.clock.release();
    }

    /// The transaction state.
    pub fn txn_status(&self) -> TxnStatus {
        self.txn
    }

    /// This session's id (`pg_stat_activity.pid`).
    pub fn pid(&self) -> u32 {
        self.activity.pid
    }

    /// Records an error: inside a transaction block, the block is now failed.
    fn fail(&mut self, error: SqlError) -> SqlError {
        if self.txn == TxnStatus::InTransaction {
            self.txn = TxnStatus::Failed;
        }
        error
    }

    fn refuse_if_failed(&self) -> SqlResult<()> {
        if self.txn == TxnStatus::Failed {
            return Err(SqlError::new(
                sqlstate::IN_FAILED_SQL_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        Ok(())
    }

    fn plan(&mut self, statement: Statement) -> SqlResult<Prepared> {
        Ok(match statement {
            Statement::Insert(ins) => {
                let plan = insert::plan(&self.db, &ins, self.state.typing)?;
                Prepared {
                    columns: plan.columns(),
                    param_types: plan.param_types(),
                    plan: Plan::Insert(Arc::new(plan)),
                    text: Arc::from(""),
                }
            }
            // `WITH … INSERT … SELECT`: the WITH belongs to the INSERT's source query.
            Statement::Query(query) if matches!(query.body.as_ref(), SetExpr::Insert(_)) => {
                let Query { with, body, .. } = *query;
                let SetExpr::Insert(Statement::Insert(mut ins)) = *body else {
                    return Err(SqlError::unsupported("this WITH … INSERT"));
                };
                if let (Some(with), Some(source)) = (with, ins.source.as_mut()) {
                    prepend_with(source, with);
                }
                self.plan(Statement::Insert(ins))?
            }
            // `WITH … UPDATE|DELETE|MERGE`: as the statements alone, not yet.
            Statement::Query(query)
                if matches!(
                    query.body.as_ref(),
                    SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_)
                ) =>
            {
                return Err(SqlError::unsupported("UPDATE, DELETE or MERGE after WITH"));
            }
            Statement::Query(query)
                if catalog::handles(&query) || catalog::joins_or_nests(&query) =>
            {
                self.general_query(&query)?
            }
            // One table (or none) is read by select.rs, which streams its rows and uses
            // the key's order; what it does not do (joins, subqueries, set operations)
            // goes to the general engine.
            Statement::Query(query) => match select::plan(&self.db, &query, self.state.typing) {
                Ok(plan) => Prepared {
                    columns: plan.columns.clone(),
                    param_types: plan.param_types(),
                    plan: Plan::Select(Arc::new(plan)),
                    text: Arc::from(""),
                },
                Err(e) if e.sqlstate == sqlstate::FEATURE_NOT_SUPPORTED => {
                    self.general_query(&query)?
                }
                Err(e) => return Err(e),
            },
            other => Prepared {
                columns: Vec::new(),
                param_types: Vec::new(),
                text: Arc::from(other.to_string()),
                plan: Plan::Other(Box::new(other)),
            },
        })
    }

    /// A query for the general engine (`catalog/`): the catalog, the system views and the
    /// user's tables, with joins, subqueries and set operations.
    fn general_query(&self, query: &Query) -> SqlResult<Prepared> {
        let plan = catalog::plan(Some(&self.db), query, self.state.typing)?;
        Ok(Prepared {
            columns: plan.columns.clone(),
            param_types: plan.param_types.clone(),
            plan: Plan::Catalog(Arc::new(plan)),
            text: Arc::from(""),
        })
    }

    fn run_statement(
        &mut self,
        statement: Statement,
        params: &[Value],
    ) -> SqlResult<StatementResult> {
        self.run_statement_streamed(statement, params, None)
    }

    fn run_statement_streamed(
        &mut self,
        statement: Statement,
        params: &[Value],
        stream: Option<&mut RowStream<'_>>,
    ) -> SqlResult<StatementResult> {
        let is_txn_end = matches!(
            statement,
            Statement::Rollback { .. } | Statement::Commit { .. }
        );
        if !is_txn_end {
            self.refuse_if_failed()?;
        }
        let prepared = self.plan(statement)?;
        self.run_plan_streamed(&prepared.plan, params, stream)
    }

    fn run_plan(&mut self, plan: &Plan, params: &[Value]) -> SqlResult<StatementResult> {
        self.run_plan_streamed(plan, params, None)
    }

    /// Runs a plan; a query that [`SelectPlan::streams`] gives its rows to `stream`, if
    /// there is one, and returns a result without rows (its tag counts them).
    fn run_plan_streamed(
        &mut self,
        plan: &Plan,
        params: &[Value],
        stream: Option<&mut RowStream<'_>>,
    ) -> SqlResult<StatementResult> {
        self.refuse_write_if_read_only(plan)?;
        self.state.read_only = self.in_read_only_transaction();
        let mut ctx = Ctx {
            db: &self.db,
            engine: &mut self.engine,
            state: &mut self.state,
            params,
        };
        match plan {
            Plan::Insert(p) => p.execute(&mut ctx),
            Plan::Select(p) => match stream {
                Some(stream) if p.streams() => stream_select(p, &mut ctx, stream),
                _ => p.execute(&mut ctx),
            },
            Plan::Catalog(p) => p.execute(&mut ctx),
            Plan::Other(statement) => self.run_other(statement, params),
        }
    }

    fn run_other(&mut self, statement: &Statement, params: &[Value]) -> SqlResult<StatementResult> {
        match statement {
            Statement::CreateTable(ct) => self.create_table(ct),
            Statement::CreateSequence {
                if_not_exists,
                name,
                sequence_options,
                data_type,
                ..
            } => {
                refuse_narrow_sequence(data_type.as_ref())?;
                self.create_sequence(&object_name(name), *if_not_exists, sequence_options)
            }
            Statement::Drop {
                object_type,
                if_exists,
                names,
                ..
            } => self.drop(*object_type, *if_exists, names),
            Statement::StartTransaction { modes, .. } => self.start_transaction(modes),
            Statement::Commit { chain, .. } => self.end_transaction(true, *chain),
            Statement::Rollback {
                savepoint: Some(_), ..
            } => Err(SqlError::unsupported(
                "ROLLBACK TO SAVEPOINT (hotpage has no savepoints)",
            )),
            Statement::Rollback { chain, .. } => self.end_transaction(false, *chain),
            Statement::Set(set) => self.set(set),
            Statement::Reset(reset) => self.reset(&reset.reset),
            Statement::ShowVariable { variable } => self.show(variable),
            Statement::Prepare {
                name, statement, ..
            } => {
                let name = fold(name);
                if self.prepared.contains_key(&name) {
                    // It replaced the first one: an EXECUTE then ran another statement.
                    return Err(SqlError::new(
                        "42P05",
                        format!("prepared statement \"{name}\" already exists"),
                    ));
                }
                let prepared = self.plan((**statement).clone())?;
                self.prepared.insert(name, prepared);
                Ok(StatementResult::command("PREPARE"))
            }
            Statement::Execute {
                name, parameters, ..
            } => self.execute_named(name.as_ref(), parameters, params),
            Statement::Deallocate { name, .. } => {
                if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all") {
                    self.prepared.clear();
                    self.deallocations += 1;
                } else if self.prepared.remove(&fold(name)).is_none() {
                    return Err(SqlError::new(
                        "26000",
                        format!("prepared statement \"{}\" does not exist", fold(name)),
                    ));
                }
                Ok(StatementResult::command("DEALLOCATE"))
            }
            Statement::Discard { object_type } => self.discard(*object_type),
            Statement::Vacuum(vacuum) => self.vacuum(vacuum),
            Statement::Analyze(analyze) => self.analyze(analyze),
            Statement::AlterTable(alter) => self.alter_table(alter),
            Statement::Truncate(truncate) => self.truncate(truncate),
            Statement::Copy { .. } => Err(SqlError::unsupported(
                "COPY through the extended protocol (send it as a simple Query)",
            )),
            Statement::Update(_) => Err(SqlError::unsupported("UPDATE")),
            Statement::Delete(_) => Err(SqlError::unsupported("DELETE")),
            other => Err(SqlError::unsupported(format!(
                "the statement {}",
                other
                    .to_string()
                    .split_whitespace()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" ")
            ))),
        }
    }

    fn execute_named(
        &mut self,
        name: Option<&sqlparser::ast::ObjectName>,
        arguments: &[Expr],
        params: &[Value],
    ) -> SqlResult<StatementResult> {
        let name = name.map(object_name).unwrap_or_default();
        let prepared = self.prepared.get(&name).cloned().ok_or_else(|| {
            SqlError::new(
                "26000",
                format!("prepared statement \"{name}\" does not exist"),
            )
        })?;
        let expected = prepared.param_types.len();
        if arguments.len() != expected {
            return Err(SqlError::new(
                sqlstate::SYNTAX_ERROR,
                format!("wrong number of parameters for prepared statement \"{name}\""),
            )
            .with_detail(format!(
                "Expected {expected} parameters but got {}.",
                arguments.len()
            )));
        }
        let empty: &[(String, SqlType)] = &[];
        let mut values = Vec::with_capacity(arguments.len());
        for argument in arguments {
            let scalar = crate::expr::compile(argument, empty)?;
            let mut ctx = Ctx {
                db: &self.db,
                engine: &mut self.engine,
                state: &mut self.state,
                params,
            };
            values.push(scalar.eval(&[], &mut ctx)?);
        }
        self.run_plan(&prepared.plan, &values)
    }

    /// Names the open transaction for the log's readers (`[Transaction Name]` in
    /// `hotpage_dblog`); a no-op outside one.
    pub(crate) fn name_transaction(&mut self, name: &str) -> SqlResult<()> {
        if self.engine.in_transaction() {
            self.engine.name_transaction(name).map_err(engine_error)?;
        }
        Ok(())
    }

    fn begin(&mut self) -> SqlResult<StatementResult> {
        if self.txn != TxnStatus::Idle {
            // PostgreSQL warns and goes on; the block stays open.
            return Ok(StatementResult::command("BEGIN"));
        }
        self.engine.begin().map_err(engine_error)?;
        self.txn = TxnStatus::InTransaction;
        Ok(StatementResult::command("BEGIN"))
    }

    fn commit(&mut self) -> SqlResult<StatementResult> {
        match self.txn {
            TxnStatus::Idle => Ok(StatementResult::command("COMMIT")),
            TxnStatus::Failed => {
                self.txn = TxnStatus::Idle;
                self.truncated.clear();
                self.engine.rollback().map_err(engine_error)?;
                Ok(StatementResult::command("ROLLBACK"))
            }
            TxnStatus::InTransaction => {
                self.txn = TxnStatus::Idle;
                let committed = self.engine.commit().map_err(engine_error);
                // Even a failed commit may have truncated some of the tables.
                self.forget_truncated();
                committed?;
                Ok(StatementResult::command("COMMIT"))
            }
        }
    }

    fn rollback(&mut self) -> SqlResult<StatementResult> {
        if self.txn != TxnStatus::Idle {
            self.txn = TxnStatus::Idle;
            self.truncated.clear();
            self.engine.rollback().map_err(engine_error)?;
        }
        Ok(StatementResult::command("ROLLBACK"))
    }

    fn create_table(&mut self, ct: &CreateTable) -> SqlResult<StatementResult> {
        self.refuse_in_transaction("CREATE TABLE")?;
        let db = Arc::clone(&self.db);
        let _ddl = lock(&db.ddl);
        let name = object_name(&ct.name);
        let exists = self.db.engine.table(&name).is_ok()
            || crate::views::is_view(&name)
            || self
                .db
                .metadata()
                .pending
                .iter()
                .any(|p| p.name == name || p.partitions.contains(&name));
        if exists {
            if ct.if_not_exists {
                return Ok(StatementResult::command("CREATE TABLE"));
            }
            return Err(SqlError::new(
                sqlstate::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        if ct.unlogged && ct.partition_by.is_some() {
            // PostgreSQL's own refusal (its partitions may be unlogged; here they are one
            // engine table with the parent, so they may not either).
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "partitioned tables cannot be unlogged",
            ));
        }
        if ct.unlogged && ct.partition_of.is_some() {
            return Err(SqlError::unsupported(
                "UNLOGGED partitions (a hash-partitioned table is one table here, logged as a whole)",
            ));
        }
        if ct.partition_by.is_some() {
            return self.create_partitioned_parent(ct, &name);
        }
        if let Some(parent) = &ct.partition_of {
            return self.create_partition(ct, &name, &object_name(parent));
        }
        let plan = ddl::plan_table(ct, &self.db.metadata(), self.db.engine.data_files(), None)?;
        self.create_planned(plan)?;
        Ok(StatementResult::command("CREATE TABLE"))
    }

    fn create_planned(&mut self, plan: ddl::TablePlan) -> SqlResult<()> {
        let schema = plan.schema.encode();
        self.db
            .engine
            .create_table_spec(&plan.spec(&schema))
            .map_err(engine_error)?;
        if let Some(sequence) = plan.adopts_sequence {
            let mut meta = self.db.metadata();
            if let Some(seq) = meta.sequences.iter_mut().find(|s| s.name == sequence) {
                seq.owner = plan.name.clone();
            }
            // From now on the table's generator hands out its values.
            lock(&self.db.sequence_cache).remove(&sequence);
            self.db.store_metadata(meta)?;
        }
        Ok(())
    }

    /// `CREATE TABLE p (…) PARTITION BY HASH (id)`: remembered until its partitions exist.
    fn create_partitioned_parent(
        &mut self,
        ct: &CreateTable,
        name: &str,
    ) -> SqlResult<StatementResult> {
        let hash_of_one_column = matches!(
            ct.partition_by.as_deref(),
            Some(Expr::Function(f)) if object_name(&f.name) == "hash"
        );
        if !hash_of_one_column {
            return Err(SqlError::unsupported(
                "partitioning other than PARTITION BY HASH (key)",
            ));
        }
        // Plan it now (with a placeholder modulus) so that a bad definition fails here.
        ddl::plan_table(
            ct,
            &self.db.metadata(),
            self.db.engine.data_files(),
            Some(1),
        )?;
        let mut meta = self.db.metadata();
        meta.pending.push(PendingPartitioned {
            name: name.to_string(),
            create_sql: ct.to_string(),
            modulus: 0,
            remainders: Vec::new(),
            partitions: Vec::new(),
        });
        self.db.store_metadata(meta)?;
        Ok(StatementResult::command("CREATE TABLE"))
    }

    /// `CREATE TABLE p0 PARTITION OF p FOR VALUES WITH (MODULUS m, REMAINDER r)`: once every
    /// remainder has its partition, the parent becomes one hash-partitioned engine table.
    fn create_partition(
        &mut self,
        ct: &CreateTable,
        name: &str,
        parent: &str,
    ) -> SqlResult<StatementResult> {
        let Some(ForValues::With { modulus, remainder }) = &ct.for_values else {
            return Err(SqlError::unsupported(
                "partitions other than FOR VALUES WITH (MODULUS, REMAINDER)",
            ));
        };
        let (modulus, remainder) = (*modulus as u32, *remainder as u32);
        let mut meta = self.db.metadata();
        let pending = meta
            .pending
            .iter_mut()
            .find(|p| p.name == parent)
            .ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_TABLE,
                    format!("relation \"{parent}\" does not exist, or is not a hash-partitioned table still taking partitions"),
                )
            })?;
        if modulus == 0
            || remainder >= modulus
            || (pending.modulus != 0 && pending.modulus != modulus)
        {
            return Err(SqlError::new(
                sqlstate::INVALID_TABLE_DEFINITION,
                format!(
                    "every partition of \"{parent}\" needs the same modulus and a remainder below it"
                ),
            ));
        }
        if pending.remainders.contains(&remainder) {
            return Err(SqlError::new(
                sqlstate::INVALID_TABLE_DEFINITION,
                format!("partition \"{name}\" would overlap another partition of \"{parent}\""),
            ));
        }
        pending.modulus = modulus;
        pending.remainders.push(remainder);
        pending.partitions.push(name.to_string());
        let complete = pending.remainders.len() as u32 == modulus;
        let create_sql = pending.create_sql.clone();
        if complete {
            let parsed = parse(&create_sql)?;
            let Some(Statement::CreateTable(parent_ct)) = parsed.first() else {
                return Err(SqlError::new(
                    sqlstate::INTERNAL_ERROR,
                    "a pending parent that is not CREATE TABLE",
                ));
            };
            let plan =
                ddl::plan_table(parent_ct, &meta, self.db.engine.data_files(), Some(modulus))?;
            meta.pending.retain(|p| p.name != parent);
            self.create_planned(plan)?;
        }
        self.db.store_metadata(meta)?;
        Ok(StatementResult::command("CREATE TABLE"))
    }

    fn create_sequence(
        &mut self,
        name: &str,
        if_not_exists: bool,
        options: &[SequenceOptions],
    ) -> SqlResult<StatementResult> {
        self.refuse_in_transaction("CREATE SEQUENCE")?;
        let db = Arc::clone(&self.db);
        let _ddl = lock(&db.ddl);
        let mut meta = self.db.metadata();
        if meta.sequences.iter().any(|s| s.name == name) || self.db.engine.table(name).is_ok() {
            if if_not_exists {
                return Ok(StatementResult::command("CREATE SEQUENCE"));
            }
            return Err(SqlError::new(
                sqlstate::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        let (mut start, mut increment, mut cache) = (None, 1i64, 1u32);
        for option in options {
            match option {
                SequenceOptions::StartWith(e, _) => start = Some(ddl::integer_literal(e)?),
                SequenceOptions::IncrementBy(e, _) => increment = ddl::integer_literal(e)?,
                SequenceOptions::Cache(e) => {
                    cache = u32::try_from(ddl::integer_literal(e)?)
                        .ok()
                        .filter(|&c| c >= 1)
                        .ok_or_else(|| {
                            SqlError::new(
                                sqlstate::INVALID_PARAMETER_VALUE,
                                "CACHE must be 1 to 4294967295",
                            )
                        })?;
                }
                // NO MINVALUE, NO MAXVALUE, NO CYCLE (`Cycle(true)`: sqlparser's flag
                // says NO): what hotpage's sequences are. CYCLE itself was taken, as it
                // read the flag the other way round, and is refused now.
                SequenceOptions::MinValue(None)
                | SequenceOptions::MaxValue(None)
                | SequenceOptions::Cycle(true) => {}
                // Accepted and ignored, they let nextval run past the bound (it gave 3
                // after MAXVALUE 2): refused until a sequence stores its bounds.
                SequenceOptions::MinValue(Some(_)) | SequenceOptions::MaxValue(Some(_)) => {
                    return Err(SqlError::unsupported(
                        "MINVALUE and MAXVALUE with a value (a hotpage sequence runs to \
                         the end of the bigint range; NO MINVALUE and NO MAXVALUE are taken)",
                    ));
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "the sequence option {other}"
                    )));
                }
            }
        }
        if increment == 0 {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "INCREMENT must not be zero",
            ));
        }
        let start = start.unwrap_or(if increment > 0 { 1 } else { -1 });
        meta.sequences.push(Sequence {
            name: name.to_string(),
            start,
            increment,
            cache,
            next: start,
            owner: String::new(),
        });
        self.db.store_metadata(meta)?;
        Ok(StatementResult::command("CREATE SEQUENCE"))
    }

    fn drop(
        &mut self,
        object_type: ObjectType,
        if_exists: bool,
        names: &[sqlparser::ast::ObjectName],
    ) -> SqlResult<StatementResult> {
        self.refuse_in_transaction("DROP")?;
        let db = Arc::clone(&self.db);
        let _ddl = lock(&db.ddl);
        let tag = match object_type {
            ObjectType::Table => "DROP TABLE",
            ObjectType::Sequence => "DROP SEQUENCE",
            other => return Err(SqlError::unsupported(format!("DROP {other}"))),
        };
        // Every name is checked before anything is dropped: a statement that fails drops
        // nothing (it dropped the names before a missing one). A name given twice is
        // dropped once.
        let mut unique: Vec<String> = Vec::with_capacity(names.len());
        for name in names.iter().map(object_name) {
            if !unique.contains(&name) {
                unique.push(name);
            }
        }
        for name in &unique {
            if !self.droppable(object_type, name)? && !if_exists {
                return Err(undefined_table(name));
            }
        }
        for name in &unique {
            match object_type {
                ObjectType::Table => self.drop_table(name)?,
                _ => self.drop_sequence(name)?,
            };
        }
        Ok(StatementResult::command(tag))
    }

    /// True if `name` is a table (or sequence) that `DROP` may drop; an error if it exists
    /// but may not be dropped (a sequence a table's keys depend on).
    fn droppable(&self, object_type: ObjectType, name: &str) -> SqlResult<bool> {
        let meta = self.db.metadata();
        if object_type == ObjectType::Table {
            return Ok(
                meta.pending.iter().any(|p| p.name == name) || self.db.engine.table(name).is_ok()
            );
        }
        let Some(seq) = meta.sequences.iter().find(|s| s.name == name) else {
            return Ok(false);
        };
        if !seq.owner.is_empty() {
            return Err(SqlError::new(
                "2BP01",
                format!(
                    "cannot drop sequence {name} because table {} depends on it",
                    seq.owner
                ),
            ));
        }
        Ok(true)
    }

    fn drop_table(&mut self, name: &str) -> SqlResult<bool> {
        let mut meta = self.db.metadata();
        let pending_before = meta.pending.len();
        meta.pending.retain(|p| p.name != name);
        if meta.pending.len() != pending_before {
            self.db.store_metadata(meta)?;
            return Ok(true);
        }
        // A sequence that generated this table's keys goes on from where the table's
        // generator is (taking one value from it to learn where that is).
        let owned_next = match self.db.engine.table(name) {
            Ok(handle) if self.db.metadata().sequences.iter().any(|s| s.owner == name) => {
                let key = self.engine.next_key(&handle).map_err(engine_error)?;
                handle
                    .key_kind()
                    .value_of(&key)
                    .map(|v| v.saturating_add(1))
            }
            _ => None,
        };
        match self.db.engine.drop_table(name) {
            Ok(()) => {}
            Err(EngineError::NoSuchTable(_)) => return Ok(false),
            Err(other) => return Err(engine_error(other)),
        }
        self.db
            .tables
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        // Its sequence is free again.
        let mut meta = self.db.metadata();
        for seq in meta.sequences.iter_mut().filter(|s| s.owner == name) {
            seq.owner.clear();
            if let Some(next) = owned_next {
                seq.next = seq.next.max(next);
            }
            lock(&self.db.sequence_cache).remove(&seq.name);
        }
        // Its T-SQL definition goes with it (a table of that name made later, in either
        // dialect, must not be re-made from it).
        let tsql_before = meta.tsql.len();
        meta.tsql.retain(|o| {
            !(o.name == name
                && matches!(
                    o.kind,
                    crate::schema::TsqlKind::TableDefinition
                        | crate::schema::TsqlKind::TableOnScheme
                ))
        });
        let tsql_changed = meta.tsql.len() != tsql_before;
        self.db.store_metadata(meta)?;
        if tsql_changed {
            self.db.tsql_generation.fetch_add(1, Ordering::AcqRel);
        }
        Ok(true)
    }

    fn drop_sequence(&mut self, name: &str) -> SqlResult<bool> {
        let mut meta = self.db.metadata();
        if !self.droppable(ObjectType::Sequence, name)? {
            return Ok(false);
        }
        meta.sequences.retain(|s| s.name != name);
        self.db.store_metadata(meta)?;
        lock(&self.db.sequence_cache).remove(name);
        Ok(true)
    }

    fn refuse_in_transaction(&self, what: &str) -> SqlResult<()> {
        if self.txn != TxnStatus::Idle {
            return Err(SqlError::new(
                sqlstate::ACTIVE_SQL_TRANSACTION,
                format!("{what} cannot run inside a transaction block in hotpage"),
            ));
        }
        Ok(())
    }

    fn set(&mut self, set: &Set) -> SqlResult<StatementResult> {
        let (name, value) = match set {
            Set::SingleAssignment {
                variable, values, ..
            } => {
                let value = values.first().map(setting_text).unwrap_or_default();
                // Every part: `hotpage.query_memory` is one name, as SHOW reads it.
                let name: Vec<String> = variable
                    .0
                    .iter()
                    .filter_map(|p| p.as_ident())
                    .map(fold)
                    .collect();
                (name.join("."), value)
            }
            Set::SetTimeZone { value, .. } => ("timezone".to_string(), setting_text(value)),
            Set::SetNames { charset_name, .. } => {
                ("client_encoding".to_string(), charset_name.to_string())
            }
            Set::SetTransaction { modes, session, .. } => {
                return self.set_transaction(modes, *session);
            }
            other => return Err(SqlError::unsupported(format!("{other}"))),
        };
        if let Some(setting) = catalog::settings::find(&name)
            && setting.context == "internal"
        {
            return Err(SqlError::new(
                "55P02",
                format!("parameter \"{}\" cannot be changed", setting.name),
            ));
        }
        if name == "statement_timeout" || name == "lock_timeout" {
            if value.eq_ignore_ascii_case("default") {
                self.state.settings.remove(&name);
                return Ok(StatementResult::command("SET"));
            }
            if interrupt::parse_timeout(&value).is_none() {
                return Err(SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!("invalid value for parameter \"{name}\": \"{value}\""),
                )
                .with_hint(
                    "Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\"; 0 turns the timeout off.",
                ));
            }
        }
        if name == crate::limits::QUERY_MEMORY_SETTING {
            if value.eq_ignore_ascii_case("default") {
                self.state.settings.remove(&name);
                return Ok(StatementResult::command("SET"));
            }
            crate::limits::check_query_memory(&value)?;
        }
        if name == "synchronous_commit" || name == "hotpage.durability" {
            let Some(durability) = durability_named(&value) else {
                return Err(SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!(
                        "invalid value for parameter \"{name}\": \"{}\"",
                        value.to_lowercase()
                    ),
                )
                .with_hint("on (sync: durable at commit) or off (async)"));
            };
            self.engine.set_durability(durability).map_err(|e| {
                SqlError::new(sqlstate::INVALID_PARAMETER_VALUE, e.to_string())
                    .with_hint("a database opened with durability none has no log to wait for")
            })?;
        }
        self.state.settings.insert(name, value);
        Ok(StatementResult::command("SET"))
    }

    /// `RESET name` (PostgreSQL's `SET name TO DEFAULT`) and `RESET ALL`: the session's
    /// values go, and the defaults (the server's, the database's durability) show again.
    fn reset(&mut self, reset: &sqlparser::ast::Reset) -> SqlResult<StatementResult> {
        use sqlparser::ast::Reset;
        let names: Vec<String> = match reset {
            Reset::ALL => self.state.settings.keys().cloned().collect(),
            Reset::ConfigurationParameter(name) => {
                let name = name
                    .0
                    .iter()
                    .filter_map(|part| part.as_ident())
                    .map(fold)
                    .collect::<Vec<_>>()
                    .join(".");
                let setting = catalog::settings::find(&name);
                if setting.is_some_and(|s| s.context == "internal") {
                    return Err(SqlError::new(
                        "55P02",
                        format!("parameter \"{name}\" cannot be changed"),
                    ));
                }
                // A dotted name is a custom setting, as in PostgreSQL: any may be reset.
                if setting.is_none()
                    && !name.contains('.')
                    && !self.state.settings.contains_key(&name)
                {
                    return Err(SqlError::new(
                        sqlstate::UNDEFINED_OBJECT,
                        format!("unrecognized configuration parameter \"{name}\""),
                    ));
                }
                vec![name]
            }
            Reset::SessionAuthorization => {
                return Err(SqlError::unsupported("RESET SESSION AUTHORIZATION"));
            }
        };
        for name in &names {
            self.state.settings.remove(name);
        }
        if names
            .iter()
            .any(|n| n == "synchronous_commit" || n == "hotpage.durability")
        {
            // The engine session takes the durability the settings left say (the other
            // of the two names may still be set), else the database's.
            let durability = self
                .durability_setting()
                .unwrap_or(self.db.engine.durability());
            self.engine
                .set_durability(durability)
                .map_err(engine_error)?;
        }
        Ok(StatementResult::command("RESET"))
    }

    /// `DISCARD ALL | PLANS | SEQUENCES | TEMP`: what a connection pool sends before it
    /// hands a connection to its next user (PgBouncer's `server_reset_query`). ALL is
    /// RESET ALL, DEALLOCATE ALL (the protocol's statements too, through
    /// [`SqlSession::deallocations`]) and DISCARD SEQUENCES, and, as in PostgreSQL, not
    /// inside a transaction block. PLANS has nothing to drop: a prepared statement's plan
    /// is made again when a table it reads changes. TEMP neither: hotpage has no
    /// temporary tables.
    fn discard(&mut self, what: sqlparser::ast::DiscardObject) -> SqlResult<StatementResult> {
        use sqlparser::ast::DiscardObject;
        match what {
            DiscardObject::ALL => {
                if self.txn != TxnStatus::Idle {
                    return Err(SqlError::new(
                        sqlstate::ACTIVE_SQL_TRANSACTION,
                        "DISCARD ALL cannot run inside a transaction block",
                    ));
                }
                self.reset(&sqlparser::ast::Reset::ALL)?;
                self.prepared.clear();
                self.deallocations += 1;
                self.discards += 1;
                self.forget_sequence_values();
            }
            DiscardObject::SEQUENCES => self.forget_sequence_values(),
            DiscardObject::PLANS | DiscardObject::TEMP => {}
        }
        Ok(StatementResult::command(format!("DISCARD {what}")))
    }

    /// `currval()` and `lastval()` are undefined again, as in a new session.
    fn forget_sequence_values(&mut self) {
        self.state.lastval = None;
        self.state.currval.clear();
    }

    /// How many times this session's prepared statements were all dropped (`DEALLOCATE
    /// ALL`, `DISCARD ALL`): a server drops its named protocol-level statements when this
    /// changes (the unnamed one is not in PostgreSQL's table of them, and stays).
    pub fn deallocations(&self) -> u64 {
        self.deallocations
    }

    /// How many times `DISCARD ALL` ran: a server closes its portals when this changes.
    pub fn discards(&self) -> u64 {
        self.discards
    }

    /// Plans this session's statements under `typing`'s rules (a `TsqlSession` sets
    /// [`Typing::Implicit`]).
    pub(crate) fn set_typing(&mut self, typing: Typing) {
        self.state.typing = typing;
    }

    /// The durability the session's settings ask for, if one of `synchronous_commit` and
    /// `hotpage.durability` is set (the later SET wins in the engine; either one alone
    /// decides here).
    fn durability_setting(&self) -> Option<Durability> {
        let value = self
            .state
            .settings
            .get("synchronous_commit")
            .or(self.state.settings.get("hotpage.durability"))?;
        durability_named(value)
    }

    fn show(&mut self, variable: &[sqlparser::ast::Ident]) -> SqlResult<StatementResult> {
        let name = variable.iter().map(fold).collect::<Vec<_>>().join(".");
        let value = match name.as_str() {
            "synchronous_commit" if self.state.settings.contains_key("synchronous_commit") => {
                self.state.settings["synchronous_commit"].clone()
            }
            "synchronous_commit" => match self.engine_durability() {
                Durability::Async => "off".to_string(),
                Durability::None => "off".to_string(),
                _ => "on".to_string(),
            },
            "hotpage.durability" => self.engine_durability().name().to_string(),
            "transaction isolation level" => "read committed".to_string(),
            "statement_timeout" if !self.state.settings.contains_key("statement_timeout") => {
                interrupt::show_timeout(self.state.default_statement_timeout)
            }
            other => catalog::settings::value(&self.state.settings, other).ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_OBJECT,
                    format!("unrecognized configuration parameter \"{other}\""),
                )
            })?,
        };
        Ok(StatementResult {
            tag: "SHOW".into(),
            columns: vec![ColumnInfo {
                name: name.clone(),
                ty: SqlType::Text,
            }],
            rows: vec![vec![Value::Text(value)]],
        })
    }

    fn engine_durability(&self) -> Durability {
        self.durability_setting()
            .unwrap_or(self.db.engine.durability())
    }
}

/// Puts `with`'s queries before those of `query`'s own WITH (an INSERT's source query,
/// for `WITH … INSERT`).
fn prepend_with(query: &mut Query, mut with: With) {
    if let Some(own) = query.with.take() {
        with.recursive |= own.recursive;
        with.cte_tables.extend(own.cte_tables);
    }
    query.with = Some(with);
}

fn setting_text(e: &Expr) -> String {
    match e {
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::SingleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        Expr::Identifier(i) => i.value.clone(),
        other => other.to_string(),
    }
}

/// `CREATE SEQUENCE … AS type`: bigint only. A narrower type was ignored, and nextval ran
/// past its range (32768 from `AS smallint`).
fn refuse_narrow_sequence(data_type: Option<&sqlparser::ast::DataType>) -> SqlResult<()> {
    use sqlparser::ast::DataType as D;
    match data_type {
        None | Some(D::BigInt(_) | D::Int8(_)) => Ok(()),
        Some(other) => Err(SqlError::unsupported(format!(
            "CREATE SEQUENCE … AS {other} (a hotpage sequence is bigint)"
        ))),
    }
}

/// Views and table functions are planned by `select`; this is the name check DDL uses.
#[allow(dead_code)]
pub(crate) fn is_view(name: &str) -> bool {
    views::is_view(name)
}

/// What the T-SQL front end (crate::tsql) reads of a session.
impl SqlSession {
    /// The last value an identity or sequence handed out in this session (`lastval()`),
    /// for `SCOPE_IDENTITY()` and `@@IDENTITY`.
    pub(crate) fn last_value(&self) -> Option<i64> {
        self.state.lastval
    }

    /// The database this session is on.
    pub(crate) fn database(&self) -> &Arc<SqlDatabase> {
        &self.db
    }
}
