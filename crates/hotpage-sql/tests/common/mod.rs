//! What several test files share: a SQL database on a fresh in-memory store.

use hotpage::{Database, MemStorage, Options, Storage};
use hotpage_sql::{SqlDatabase, Value};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The engine and a SQL database on `mem`, a store a test reboots to crash it and
/// reopens. (Each test binary that includes this module uses some of it: hence the
/// `allow`s.)
#[allow(dead_code)]
pub fn open_on(mem: &Arc<MemStorage>) -> (Arc<Database>, Arc<SqlDatabase>) {
    let engine = Arc::new(
        Database::open_with_storage(
            Arc::clone(mem) as Arc<dyn Storage>,
            Path::new("m"),
            Options::default(),
        )
        .expect("open"),
    );
    let sql = SqlDatabase::new(Arc::clone(&engine)).expect("sql");
    (engine, sql)
}

/// A SQL database on its own in-memory store (a new seed for each).
#[allow(dead_code)]
pub fn open_mem() -> Arc<SqlDatabase> {
    static SEED: AtomicU64 = AtomicU64::new(1);
    let mem: Arc<dyn Storage> = MemStorage::new(SEED.fetch_add(1, Ordering::Relaxed));
    let engine =
        Database::open_with_storage(mem, Path::new("m"), Options::default()).expect("open");
    SqlDatabase::new(Arc::new(engine)).expect("sql")
}

/// Each row's values as PostgreSQL's text output prints them, NULL as `NULL`.
#[allow(dead_code)]
pub fn row_texts(rows: &[Vec<Value>]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|row| {
            row.iter()
                .map(|v| v.to_pg_text(None).unwrap_or_else(|| "NULL".into()))
                .collect()
        })
        .collect()
}
