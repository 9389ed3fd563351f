//! The public API: a database directory, its tables, and sessions that insert and read.
//!
//! ```no_run
//! use hotpage::{Database, KeyKind, Options};
//! let db = Database::open("/tmp/orders-db", Options::default())?;
//! let orders = db.create_table("orders", "identity", KeyKind::Identity { start: 1, step: 1 })?;
//! let mut session = db.session();
//! let key = session.insert(&orders, b"first order")?;
//! assert_eq!(session.get(&orders, &key)?, Some(b"first order".to_vec()));
//! drop(session);
//! db.close()?;
//! # Ok::<(), hotpage::Error>(())
//! ```
//!
//! Durability in this version: a database closed with [`Database::close`] reopens with all
//! its tables and rows. A crash loses what was not flushed (the write-ahead log comes next).

use crate::btree::{self, BTree, Inserted, TreeStats};
use crate::buffer::{BufferPool, POOL_BYTES_DEFAULT, PoolInfo};
use crate::catalog::{Catalog, NAME_BYTES_MAX, TableEntry};
use crate::error::{Error, Result};
use crate::io::{LOCK_FILE, StdStorage, Storage};
use crate::keys::{Key, KeyGenerator, KeyKind, KeySession};
use crate::page::{self, PAGE_SIZE_DEFAULT};
use crate::stats::{Stats, StatsSnapshot};
use parking_lot::{Mutex, RwLock};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub mod inspect;

/// The data file's name inside the database directory.
pub const DATA_FILE: &str = "data.0";
/// Rows a session counts locally before adding them to the table's shared count (so the
/// count is not a cache line every insert writes).
const ROW_COUNT_FLUSH_EVERY: u64 = 1024;

/// Options for opening a database.
#[derive(Clone, Debug)]
pub struct Options {
    /// Page size for a new database (power of two, 4–64 KiB). An existing database keeps
    /// the page size it was created with.
    pub page_size: usize,
    /// Buffer-pool size in bytes: the engine's page cache never grows past it.
    pub pool_bytes: usize,
    /// Create the directory and database if missing.
    pub create_if_missing: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: PAGE_SIZE_DEFAULT,
            pool_bytes: POOL_BYTES_DEFAULT,
            create_if_missing: true,
        }
    }
}

/// A table: its B+tree and its key generator.
pub struct Table {
    id: usize,
    name: String,
    design: String,
    tree: BTree,
    keys: KeyGenerator,
    rows: AtomicU64,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table").field("name", &self.name).finish()
    }
}

impl Table {
    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The design it was created with.
    pub fn design(&self) -> &str {
        &self.design
    }

    /// How its keys are generated.
    pub fn key_kind(&self) -> KeyKind {
        self.keys.kind()
    }

    /// Its B+tree's root page.
    pub fn root_page(&self) -> u64 {
        self.tree.root()
    }
}

/// A cheap handle to a table, resolved once and passed to every session call.
pub type TableHandle = Arc<Table>;

/// What `Database::tables` reports about a table.
#[derive(Clone, Debug, PartialEq)]
pub struct TableInfo {
    /// The table's name.
    pub name: String,
    /// The design it was created with.
    pub design: String,
    /// How its keys are generated.
    pub kind: KeyKind,
    /// Rows (as counted by sessions; exact once sessions have ended).
    pub rows: u64,
    /// Its B+tree's root page.
    pub root_page: u64,
}

struct Inner {
    path: PathBuf,
    storage: Arc<dyn Storage>,
    pool: Arc<BufferPool>,
    stats: Arc<Stats>,
    tables: RwLock<Vec<TableHandle>>,
    // Serialises catalog rewrites (table creation, close).
    catalog_lock: Mutex<()>,
}

/// An open database. Share it between threads with `&Database` or clone the handle.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("path", &self.inner.path)
            .finish()
    }
}

impl Database {
    /// Opens (or, with `create_if_missing`, creates) the database in directory `path`.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Database> {
        let path = path.as_ref();
        if path.exists() && !path.is_dir() {
            return Err(Error::NotADatabase {
                path: path.to_path_buf(),
                reason: "it is a file, not a directory".into(),
            });
        }
        if !path.exists() && !options.create_if_missing {
            return Err(Error::NotADatabase {
                path: path.to_path_buf(),
                reason: "no such directory".into(),
            });
        }
        let storage = StdStorage::open_dir(path, options.create_if_missing)
            .map_err(|e| Error::io(format!("opening directory {}", path.display()), e))?;
        Database::open_with_storage(Arc::new(storage), path, options)
    }

    /// Opens a database over any [`Storage`] (tests use the fault-injecting one); `path`
    /// only names it in messages.
    pub fn open_with_storage(
        storage: Arc<dyn Storage>,
        path: &Path,
        options: Options,
    ) -> Result<Database> {
        page::validate_page_size(options.page_size).map_err(Error::InvalidOption)?;
        let catalog = Catalog::load(&*storage, path)?;
        let catalog = match catalog {
            Some(catalog) => catalog,
            None => {
                let files = storage
                    .list()
                    .map_err(|e| Error::io(format!("listing {}", path.display()), e))?;
                if files.iter().any(|name| name != LOCK_FILE) {
                    return Err(Error::NotADatabase {
                        path: path.to_path_buf(),
                        reason: "the directory has files but no hotpage catalog".into(),
                    });
                }
                if !options.create_if_missing {
                    return Err(Error::NotADatabase {
                        path: path.to_path_buf(),
                        reason: "no hotpage catalog".into(),
                    });
                }
                Catalog {
                    page_size: options.page_size as u32,
                    tables: Vec::new(),
                }
            }
        };
        // Held for the database's lifetime (the storage lives in `Inner`).
        storage.lock().map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock => Error::Locked {
                path: path.to_path_buf(),
            },
            _ => Error::io(format!("locking {}", path.display()), e),
        })?;
        let page_size = catalog.page_size as usize;
        let data_exists = storage
            .exists(DATA_FILE)
            .map_err(|e| Error::io("looking for the data file", e))?;
        if !catalog.tables.is_empty() && !data_exists {
            return Err(Error::NotADatabase {
                path: path.to_path_buf(),
                reason: format!("{DATA_FILE} is missing"),
            });
        }
        let file = storage
            .open(DATA_FILE, true)
            .map_err(|e| Error::io(format!("opening {DATA_FILE}"), e))?;
        let stats = Stats::new();
        let pool = Arc::new(BufferPool::open(
            file,
            DATA_FILE,
            page_size,
            options.pool_bytes,
            Arc::clone(&stats),
        )?);
        let mut tables = Vec::with_capacity(catalog.tables.len());
        for (id, entry) in catalog.tables.iter().enumerate() {
            tables.push(Arc::new(Table {
                id,
                name: entry.name.clone(),
                design: entry.design.clone(),
                tree: BTree::open(Arc::clone(&pool), entry.root),
                keys: KeyGenerator::new(entry.kind, Some(entry.key_high_water))?,
                rows: AtomicU64::new(entry.rows),
            }));
        }
        let db = Database {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                storage,
                pool,
                stats,
                tables: RwLock::new(tables),
                catalog_lock: Mutex::new(()),
            }),
        };
        if !data_exists {
            // A new database: header page and empty catalog on disk before anyone uses it.
            db.inner.pool.flush_all()?;
            db.write_catalog()?;
        }
        Ok(db)
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The page size in bytes.
    pub fn page_size(&self) -> usize {
        self.inner.pool.page_size()
    }

    /// The largest row this database stores.
    pub fn row_bytes_max(&self) -> usize {
        btree::row_bytes_max(self.page_size())
    }

    /// Buffer-pool figures.
    pub fn pool_info(&self) -> PoolInfo {
        self.inner.pool.info()
    }

    /// Creates a table whose keys come from `kind`. `design` is the name reports show.
    pub fn create_table(&self, name: &str, design: &str, kind: KeyKind) -> Result<TableHandle> {
        if name.is_empty() || name.len() > NAME_BYTES_MAX || design.len() > NAME_BYTES_MAX {
            return Err(Error::InvalidOption(format!(
                "table and design names must be 1 to {NAME_BYTES_MAX} bytes"
            )));
        }
        kind.validate()?;
        let _catalog = self.inner.catalog_lock.lock();
        if self.inner.tables.read().iter().any(|t| t.name == name) {
            return Err(Error::TableExists(name.to_string()));
        }
        let tree = BTree::create(Arc::clone(&self.inner.pool))?;
        let table = {
            let mut tables = self.inner.tables.write();
            let table = Arc::new(Table {
                id: tables.len(),
                name: name.to_string(),
                design: design.to_string(),
                tree,
                keys: KeyGenerator::new(kind, None)?,
                rows: AtomicU64::new(0),
            });
            tables.push(Arc::clone(&table));
            table
        };
        // The root page must be on disk before the catalog names it.
        self.inner.pool.flush_all()?;
        self.write_catalog_locked()?;
        Ok(table)
    }

    /// Looks a table up by name.
    pub fn table(&self, name: &str) -> Result<TableHandle> {
        self.inner
            .tables
            .read()
            .iter()
            .find(|t| t.name == name)
            .cloned()
            .ok_or_else(|| Error::NoSuchTable(name.to_string()))
    }

    /// Every table, in creation order.
    pub fn tables(&self) -> Vec<TableInfo> {
        self.inner
            .tables
            .read()
            .iter()
            .map(|t| TableInfo {
                name: t.name.clone(),
                design: t.design.clone(),
                kind: t.keys.kind(),
                rows: t.rows.load(Ordering::Relaxed),
                root_page: t.tree.root(),
            })
            .collect()
    }

    /// A new session (one per thread).
    pub fn session(&self) -> Session {
        Session {
            db: Arc::clone(&self.inner),
            key_sessions: Vec::new(),
            pending_rows: Vec::new(),
        }
    }

    /// Wait statistics and counters summed over every session so far.
    pub fn stats(&self) -> StatsSnapshot {
        self.inner.stats.snapshot()
    }

    /// Zeroes the statistics.
    pub fn reset_stats(&self) {
        self.inner.stats.reset();
    }

    /// Walks a table's B+tree, checking its structure, and returns its shape and fill.
    pub fn verify_table(&self, table: &TableHandle) -> Result<TreeStats> {
        table.tree.verify()
    }

    fn write_catalog(&self) -> Result<()> {
        let _catalog = self.inner.catalog_lock.lock();
        self.write_catalog_locked()
    }

    fn write_catalog_locked(&self) -> Result<()> {
        let catalog = Catalog {
            page_size: self.page_size() as u32,
            tables: self
                .inner
                .tables
                .read()
                .iter()
                .map(|t| TableEntry {
                    name: t.name.clone(),
                    design: t.design.clone(),
                    kind: t.keys.kind(),
                    root: t.tree.root(),
                    key_high_water: t.keys.high_water(),
                    rows: t.rows.load(Ordering::Relaxed),
                })
                .collect(),
        };
        catalog.store(&*self.inner.storage)
    }

    /// Writes every dirty page, makes the data file durable, and records each table's key
    /// high-water mark and row count. End sessions first: their last uncounted rows are
    /// added when they drop.
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.pool.flush_all()?;
        self.write_catalog()
    }

    /// Closes the database cleanly (a checkpoint). Fails if sessions are still open.
    pub fn close(self) -> Result<()> {
        let handles = Arc::strong_count(&self.inner);
        if handles > 1 {
            return Err(Error::InvalidOption(format!(
                "close: {} other handles or sessions are still open; drop them first",
                handles - 1
            )));
        }
        self.checkpoint()
    }
}

/// One session: a thread's connection to the database. Holds per-session key state
/// (sequence caches, GUID random state), so each thread should have its own.
pub struct Session {
    db: Arc<Inner>,
    key_sessions: Vec<Option<KeySession>>,
    pending_rows: Vec<u64>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("db", &self.db.path)
            .finish()
    }
}

impl Session {
    /// Inserts one row, with a key from the table's generator, and returns the key.
    pub fn insert(&mut self, table: &TableHandle, row: &[u8]) -> Result<Key> {
        let max = btree::row_bytes_max(self.db.pool.page_size());
        if row.len() > max {
            return Err(Error::RowTooLarge {
                len: row.len(),
                max,
            });
        }
        if self.key_sessions.len() <= table.id {
            self.key_sessions.resize_with(table.id + 1, || None);
            self.pending_rows.resize(table.id + 1, 0);
        }
        let key_session = self.key_sessions[table.id].get_or_insert_with(|| table.keys.session());
        let key = table.keys.next_key(key_session)?;
        match table.tree.insert(key.as_bytes(), row)? {
            Inserted::Yes => {}
            Inserted::Duplicate => {
                return Err(Error::DuplicateKey {
                    table: table.name.clone(),
                    key: table.keys.kind().decode(&key),
                });
            }
        }
        let pending = &mut self.pending_rows[table.id];
        *pending += 1;
        if *pending >= ROW_COUNT_FLUSH_EVERY {
            table.rows.fetch_add(*pending, Ordering::Relaxed);
            *pending = 0;
        }
        Ok(key)
    }

    /// Reads the row stored under `key`.
    pub fn get(&self, table: &TableHandle, key: &Key) -> Result<Option<Vec<u8>>> {
        table.tree.get(key.as_bytes())
    }

    /// Visits rows in key order from `from` (inclusive; `None`: the first) until `visit`
    /// returns false.
    pub fn scan(
        &self,
        table: &TableHandle,
        from: Option<&Key>,
        visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        table.tree.scan(from.map(|k| k.as_bytes()), visit)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let tables = self.db.tables.read();
        for (id, pending) in self.pending_rows.iter().enumerate() {
            if *pending > 0
                && let Some(table) = tables.get(id)
            {
                table.rows.fetch_add(*pending, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_close_and_reopen_keeps_tables_rows_and_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        let mut keys = Vec::new();
        {
            let db = Database::open(&path, Options::default()).expect("open");
            let t = db
                .create_table(
                    "orders",
                    "identity",
                    KeyKind::Identity { start: 1, step: 1 },
                )
                .expect("create");
            let g = db
                .create_table("events", "guid", KeyKind::GuidV4)
                .expect("create");
            let mut s = db.session();
            for i in 0..3000u32 {
                keys.push(s.insert(&t, &i.to_le_bytes()).expect("insert"));
                s.insert(&g, b"e").expect("insert");
            }
            drop(s);
            db.close().expect("close");
        }
        let db = Database::open(&path, Options::default()).expect("reopen");
        let infos = db.tables();
        assert_eq!(infos.len(), 2);
        assert_eq!((infos[0].name.as_str(), infos[0].rows), ("orders", 3000));
        assert_eq!((infos[1].design.as_str(), infos[1].rows), ("guid", 3000));
        let t = db.table("orders").expect("table");
        let s = db.session();
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(
                s.get(&t, key).expect("get"),
                Some((i as u32).to_le_bytes().to_vec())
            );
        }
        // New keys continue after the old ones.
        let mut s = db.session();
        let next = s.insert(&t, b"after").expect("insert");
        assert!(next.to_i64() > keys.last().and_then(|k| k.to_i64()));
        assert_eq!(db.verify_table(&t).expect("verify").rows, 3001);
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(dir.path().join("db"), Options::default()).expect("open");
        let t = db
            .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
            .expect("create");
        assert!(matches!(
            db.create_table("t", "identity", KeyKind::GuidV4),
            Err(Error::TableExists(_))
        ));
        assert!(matches!(db.table("nope"), Err(Error::NoSuchTable(_))));
        assert!(matches!(
            db.create_table("z", "x", KeyKind::HashPrefix { buckets: 0 }),
            Err(Error::InvalidOption(_))
        ));
        let mut s = db.session();
        assert!(matches!(
            s.insert(&t, &vec![0u8; db.row_bytes_max() + 1]),
            Err(Error::RowTooLarge { .. })
        ));
        let other = db.clone();
        assert!(matches!(other.close(), Err(Error::InvalidOption(_))));
        let bad = Options {
            page_size: 1000,
            ..Options::default()
        };
        assert!(matches!(
            Database::open(dir.path().join("db2"), bad),
            Err(Error::InvalidOption(_))
        ));
    }

    #[test]
    fn a_directory_of_other_files_is_not_a_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("notes.txt"), b"hello").expect("write");
        let err = Database::open(dir.path(), Options::default()).expect_err("accepted");
        assert!(matches!(err, Error::NotADatabase { .. }), "{err}");
        let file = dir.path().join("notes.txt");
        assert!(matches!(
            Database::open(&file, Options::default()),
            Err(Error::NotADatabase { .. })
        ));
    }
}
