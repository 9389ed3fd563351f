//! The system views, queried with SELECT like tables: each is a name, its columns, and a
//! function that makes its rows from the engine's own figures: the same typed reports and
//! statistics `hotpage inspect` renders (`StatsSnapshot`, `IndexReport`, `PageReport`,
//! `LogReport`), so the two always agree. A view's rows are made when the query runs;
//! WHERE, GROUP BY, ORDER BY and LIMIT then apply as for a table. A view that takes
//! arguments is a table function: `SELECT * FROM hotpage_page(0, 1)`.
//!
//! Types are PostgreSQL's. Counts the engine keeps as `u64` are `bigint` (a count past
//! `i64::MAX` shows as `i64::MAX`); times are milliseconds in `double precision`; pages are
//! `text` in the `FILE:PAGE` form every report uses (`0:17` is page 17 of `data.0`).
//!
//! ## `hotpage_wait_stats` (sys.dm_os_wait_stats)
//!
//! One row per wait type, in the engine's report order; cumulative since the database was
//! opened or since `SELECT hotpage_reset_wait_stats()`.
//!
//! | column | type | meaning |
//! |---|---|---|
//! | wait_type | text | `PAGELATCH_EX`, `WRITELOG`, … (`hotpage::WaitType::name`) |
//! | waiting_tasks_count | bigint | waits |
//! | wait_time_ms | double precision | their total time |
//! | max_wait_time_ms | double precision | the longest one |
//! | signal_wait_time_ms | double precision | always NULL: SQL Server's time from a wait's end until a CPU runs the task again, which hotpage does not measure (the column is there so SQL Server's wait scripts run) |
//!
//! ## `pg_stat_activity`
//!
//! One row per open session (its `SqlSession` alive), the querying one included.
//!
//! | column | type | meaning |
//! |---|---|---|
//! | pid | integer | the session's id (`SqlSession::pid`) |
//! | datname | text | always `hotpage` |
//! | backend_start | timestamptz | when the session was opened |
//! | query_start | timestamptz | when its current (or last) statement started; NULL before the first |
//! | state | text | `active` while a statement runs, else `idle` |
//! | wait_event_type | text | the class of the wait in progress (below); NULL when not waiting |
//! | wait_event | text | the wait type in progress (`PAGELATCH_EX`, `WRITELOG`, …) |
//! | wait_resource | text | the page waited on (`FILE:PAGE`), for page waits; else NULL |
//! | wait_time_ms | double precision | how long the wait in progress has lasted (hotpage's addition, as SQL Server's `sys.dm_exec_requests.wait_time`) |
//! | query | text | the current (or last) statement, cut at 1024 characters |
//!
//! The wait is the session's own, live: the engine writes it into the session's
//! `hotpage::CurrentWait` where a wait begins and clears it where the wait ends (only on
//! the wait path; see `hotpage::CurrentWait`). Classes: `PageLatch` (`PAGELATCH_SH`,
//! `PAGELATCH_EX`, `PAGELATCH_COMBINE`), `IO` (`PAGEIOLATCH_SH`), `Log` (`WRITELOG`,
//! `LOGBUFFER`), `FreeSpaceMap` (`FSM_LATCH`), `Sequence` (`SEQUENCE`), `FlowControl`
//! (`BTREE_INSERT_FLOW_CONTROL`), `BufferPool` (`FREE_BUFFER`), `Lock` (`LCK_M_X`: another
//! session is inserting the same key).
//!
//! ## `hotpage_index_physical_stats([table text])` (sys.dm_db_index_physical_stats)
//!
//! Every table's storage, one row per structure and level; with a table name, that
//! table's only (NULL: every table). From `Database::index_report`, the report
//! `hotpage inspect index` prints. A walk meant for a quiet table: a table that changes
//! while it is walked can fail the walk's checks (the error then says so).
//!
//! | column | type | meaning |
//! |---|---|---|
//! | table_name | text | the table |
//! | design | text | its design (`identity`, `heap`, …) |
//! | index_type_desc | text | `CLUSTERED INDEX` (a B+tree: every partition's, summed), `HEAP`, `NONCLUSTERED INDEX` (a heap's index), `MEMORY OPTIMIZED` (no pages) |
//! | index_level | integer | 0 for leaves (a heap's pages), up to the root's level; NULL for a memory table |
//! | page_count | bigint | pages at this level |
//! | record_count | bigint | rows at the leaf level (a heap's rows, an index's entries); NULL above it (the report counts leaf rows only) |
//! | avg_page_space_used_in_percent | double precision | the leaves' (a heap's pages') average fill, in percent of the page size; NULL above the leaves |
//! | avg_fragmentation_in_percent | double precision | logical fragmentation of the leaves: the share, in percent, whose right link is not the next page of their file (`TreeStats::fragmentation_pct`, as `inspect index` shows it); NULL above the leaves and for a heap (the engine computes none for it) |
//!
//! ## `hotpage_hot_pages` (the stress report's "Hottest pages")
//!
//! Pages with waits, most time waited first (`StatsSnapshot::hot_pages`: waits of every
//! type on the page; each thread tracks up to `HOT_PAGES_TRACKED_MAX` pages), with the
//! table whose tree or heap holds the page (`Database::page_owners`, one walk per table).
//!
//! | column | type | meaning |
//! |---|---|---|
//! | page | text | `FILE:PAGE` |
//! | page_type | text | `leaf`, `inner` or `heap`; NULL when no table reaches the page |
//! | level | integer | its tree level (0: leaf); NULL as above |
//! | table_name | text | the owning table; NULL as above |
//! | waits | bigint | waits on the page |
//! | wait_time_ms | double precision | their total time |
//!
//! ## `hotpage_page_header(file integer, page bigint)` and `hotpage_page(file, page)` (DBCC PAGE)
//!
//! One page decoded (`Database::inspect_page`, what `hotpage inspect page` prints), as the
//! data file holds it: a change still only in the buffer pool shows after the next
//! checkpoint. Both also take the page as one text argument, `'FILE:PAGE'` (or
//! `'data.N:PAGE'`), so `hotpage_hot_pages.page` can be pasted. A page outside the data
//! files is an error (22023).
//!
//! `hotpage_page_header`: one row.
//!
//! | column | type | meaning |
//! |---|---|---|
//! | page | text | `FILE:PAGE` asked for |
//! | page_id | bigint | the id the page records for itself, as stored (links in JSON reports use this form) |
//! | page_type | text | `leaf`, `inner`, `heap`, `file-header`, `free`, or `unknown` |
//! | page_type_byte | smallint | the type byte as stored |
//! | level | integer | B+tree level (0: leaf) |
//! | lsn | bigint | the LSN of the page's last logged change |
//! | slot_count | integer | slots in the slot directory |
//! | free_bytes | integer | free bytes between the slot directory and the record area |
//! | free_end | integer | where the record area starts |
//! | next_page | text | the right link (`FILE:PAGE`); NULL for none |
//! | leftmost_child | text | an inner page's leftmost child; NULL for other pages |
//! | checksum | text | the stored checksum, `0x%08x` |
//! | checksum_ok | boolean | whether the page verifies (checksum, page id, slot directory) |
//! | problem | text | why it does not; NULL when it does |
//! | table_name | text | the table whose B+tree reaches the page; NULL for none (heap pages are not looked up) |
//! | design | text | that table's design |
//!
//! `hotpage_page`: one row per slot, in slot order.
//!
//! | column | type | meaning |
//! |---|---|---|
//! | slot | integer | its index in the slot directory |
//! | offset_bytes | integer | the record's offset in the page (`offset` is a reserved word) |
//! | length_bytes | integer | the record's length |
//! | content | text | `row` (a leaf's), `child` (an inner page's separator), `file header`, or `other` |
//! | key | text | the key decoded as the owning table's keys are (hex when unknown); a file header's magic; NULL for `other` |
//! | key_hex | text | the key's bytes in hex |
//! | row_bytes | integer | a row's length; else NULL |
//! | child_page | text | an inner slot's child (`FILE:PAGE`); else NULL |
//! | record_hex | text | the whole record in hex |
//!
//! ## `hotpage_log` (fn_dblog, summarised)
//!
//! The log's records by kind, most bytes first (`Database::log_report`, what
//! `hotpage inspect log` prints), read from the retained segment files. No rows for a
//! database without a log (durability `none`).
//!
//! | column | type | meaning |
//! |---|---|---|
//! | kind | text | the record kind |
//! | records | bigint | records in the retained log files |
//! | bytes | bigint | their bytes (headers and padding included) |
//! | records_since_checkpoint | bigint | records at or after the last checkpoint's redo point |
//! | bytes_since_checkpoint | bigint | their bytes |
//!
//! ## `hotpage_dblog([start, end [, inactive_too]])` (fn_dblog)
//!
//! The active log's records one by one (the whole retained log with T-SQL's trace flag
//! 2537 on globally, or with `inactive_too` true: a session's flag), between `start` and `end` when they are not NULL (LSNs as `a:b:c` in decimal or
//! `0xA:B:C` in hex, both bounds included), one row per page a record changes (see
//! `views::dblog` for the mapping of record kinds to operations and contexts), plus a
//! `LOP_MODIFY_ROW`, `LCX_PFS` row where a heap page's change moves it to another
//! free-space category. At most 1,000,000 rows (54000 beyond). `allocunitname` comes from a
//! walk of every table's pages (as `hotpage_index_physical_stats`, meant for a quiet
//! database: a table that changes while it is walked can fail the walk's checks).
//!
//! | column | type | meaning |
//! |---|---|---|
//! | current lsn | text | `hhhhhhhh:llllllll:nnnn`: the LSN's high and low 32 bits in hex, the row's number within its record |
//! | operation | text | `LOP_INSERT_ROWS`, `LOP_FORMAT_PAGE`, `LOP_MODIFY_ROW`, `LOP_COMMIT_XACT`, … |
//! | context | text | `LCX_HEAP`, `LCX_CLUSTERED`, `LCX_INDEX_INTERIOR`, `LCX_PFS`, `LCX_NULL` … |
//! | transaction id | text | `0000:xxxxxxxx` for commit, abort and part records; NULL for page records (they carry none) |
//! | page id | text | `ffff:pppppppp` (file and page in hex); NULL for transaction records |
//! | allocunitname | text | `dbo.table` for a page a table holds now; else NULL |
//! | log record length | bigint | the record's bytes |
//! | transaction name | text | always NULL: hotpage keeps no transaction names |
//!
//! ## `hotpage_objects` (sys.objects)
//!
//! One row per table, sequence, T-SQL scalar function and stored procedure, by name.
//!
//! | column | type | meaning |
//! |---|---|---|
//! | name | text | the object's name (lower case) |
//! | object_id | integer | what T-SQL's `OBJECT_ID(name)` gives: a stable hash of the name |
//! | schema_id | integer | 1 (`dbo`) |
//! | parent_object_id | integer | 0 |
//! | type | text | `U` (table), `SO` (sequence), `FN` (scalar function), `P` (procedure) |
//! | type_desc | text | `USER_TABLE`, `SEQUENCE_OBJECT`, `SQL_SCALAR_FUNCTION`, `SQL_STORED_PROCEDURE` |
//! | is_ms_shipped | boolean | false |
//!
//! ## The views, one line each
//!
//! - `hotpage_wait_stats`: waits by type since open or `SELECT hotpage_reset_wait_stats()` (sys.dm_os_wait_stats).
//! - `pg_stat_activity`: the sessions, their statements, and the latch, log or I/O wait each is in now.
//! - `hotpage_index_physical_stats([table])`: pages, rows, fill and fragmentation per table and level (sys.dm_db_index_physical_stats).
//! - `hotpage_hot_pages`: the pages waited on most, with their table and level.
//! - `hotpage_page_header(file, page)`: one page's header fields (DBCC PAGE).
//! - `hotpage_page(file, page)`: one page's slots: offsets, lengths, decoded keys, records in hex (DBCC PAGE).
//! - `hotpage_log`: log records and bytes by kind, all and since the last checkpoint (fn_dblog).
//! - `hotpage_dblog(NULL, NULL)`: the log's records one by one, in SQL Server's operation and context names (fn_dblog).
//! - `hotpage_objects`: tables, sequences, T-SQL functions and procedures with their ids (sys.objects).

mod activity;
// T-SQL's sys.fn_dblog (crate::tsql).
mod dblog;
mod log;
// T-SQL's sys.objects (crate::tsql).
pub(crate) mod objects;
mod page;
mod physical;
// T-SQL's sys.dm_exec_requests (crate::tsql).
mod requests;
mod waits;

pub(crate) use activity::Activity;
pub use activity::TerminateHook;

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::session::SqlDatabase;
use crate::types::SqlType;
use crate::value::Value;

/// Makes a view's rows from the database and the table function's arguments (their
/// number already checked against the view's `arity`).
type RowsFn = fn(&SqlDatabase, &[Value]) -> SqlResult<Vec<Vec<Value>>>;

/// One view: its name, what it takes, its columns, and its rows.
struct View {
    name: &'static str,
    /// The fewest and most arguments it takes.
    arity: (usize, usize),
    /// How it is called, for the error on a wrong number of arguments.
    usage: &'static str,
    columns: fn() -> Vec<(&'static str, SqlType)>,
    rows: RowsFn,
}

const VIEWS: &[View] = &[
    View {
        name: "hotpage_wait_stats",
        arity: (0, 0),
        usage: "hotpage_wait_stats",
        columns: waits::wait_stats_columns,
        rows: waits::wait_stats_rows,
    },
    View {
        name: "pg_stat_activity",
        arity: (0, 0),
        usage: "pg_stat_activity",
        columns: activity::columns,
        rows: activity::rows,
    },
    View {
        name: "hotpage_exec_requests",
        arity: (0, 0),
        usage: "hotpage_exec_requests",
        columns: requests::columns,
        rows: requests::rows,
    },
    View {
        name: "hotpage_index_physical_stats",
        arity: (0, 1),
        usage: "hotpage_index_physical_stats or hotpage_index_physical_stats('table')",
        columns: physical::columns,
        rows: physical::rows,
    },
    View {
        name: "hotpage_hot_pages",
        arity: (0, 0),
        usage: "hotpage_hot_pages",
        columns: waits::hot_pages_columns,
        rows: waits::hot_pages_rows,
    },
    View {
        name: "hotpage_page_header",
        arity: (1, 2),
        usage: "hotpage_page_header(file, page) or hotpage_page_header('FILE:PAGE')",
        columns: page::header_columns,
        rows: page::header_rows,
    },
    View {
        name: "hotpage_page",
        arity: (1, 2),
        usage: "hotpage_page(file, page) or hotpage_page('FILE:PAGE')",
        columns: page::slot_columns,
        rows: page::slot_rows,
    },
    View {
        name: "hotpage_dblog",
        arity: (0, 3),
        usage: "hotpage_dblog or hotpage_dblog(start, end [, inactive_too]): LSNs 'a:b:c' (decimal) or '0xA:B:C' (hex), or NULL; inactive_too a boolean",
        columns: dblog::columns,
        rows: dblog::rows,
    },
    View {
        name: "hotpage_objects",
        arity: (0, 0),
        usage: "hotpage_objects",
        columns: objects::columns,
        rows: objects::rows,
    },
    View {
        name: "hotpage_log",
        arity: (0, 0),
        usage: "hotpage_log",
        columns: log::columns,
        rows: log::rows,
    },
];

fn find(name: &str) -> Option<&'static View> {
    VIEWS.iter().find(|v| v.name == name)
}

/// The views that take no argument (a table function needs its arguments), in order: the
/// catalog lists them as views of `pg_catalog`.
pub(crate) fn plain_views() -> impl Iterator<Item = &'static str> {
    VIEWS.iter().filter(|v| v.arity.0 == 0).map(|v| v.name)
}

/// True if `name` is a system view or table function.
pub(crate) fn is_view(name: &str) -> bool {
    find(name).is_some()
}

/// The view's columns, if `name` is one.
pub(crate) fn columns(name: &str) -> Option<Vec<(String, SqlType)>> {
    find(name).map(|v| {
        (v.columns)()
            .into_iter()
            .map(|(n, t)| (n.to_string(), t))
            .collect()
    })
}

/// The view's rows now; `args` are a table function's arguments.
pub(crate) fn rows(name: &str, db: &SqlDatabase, args: &[Value]) -> SqlResult<Vec<Vec<Value>>> {
    let Some(view) = find(name) else {
        return Err(SqlError::new(
            sqlstate::UNDEFINED_TABLE,
            format!("relation \"{name}\" does not exist"),
        ));
    };
    let (fewest, most) = view.arity;
    if !(fewest..=most).contains(&args.len()) {
        return Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!(
                "{name} does not take {} argument{}",
                args.len(),
                if args.len() == 1 { "" } else { "s" }
            ),
        )
        .with_hint(format!("call it as {}", view.usage)));
    }
    (view.rows)(db, args)
}

/// A `u64` figure as a `bigint` (one past `i64::MAX` shows as `i64::MAX`).
fn bigint(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A `usize` figure (a slot, an offset) as an integer value.
fn int(n: usize) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Nanoseconds as milliseconds, the views' unit of time.
fn ms(ns: u64) -> Value {
    Value::Float(ns as f64 / 1e6)
}

/// Text, or NULL for `None`.
fn text_or_null(text: Option<String>) -> Value {
    text.map_or(Value::Null, Value::Text)
}
