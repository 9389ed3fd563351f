//! The embedded hotpage engine as a [`Target`]: a [`Database`] and one table in it.
//!
//! Besides inserting, a session can keep the crash tester's acknowledgement log
//! ([`ACK_STAMP_BYTES`], `hotpage crashtest`): after each commit returns it appends the
//! transaction's keys to a file of its own, and it stamps every row with (session,
//! transaction, position, size) so that a partly visible transaction is recognisable after
//! a crash. It lives here because only this target returns the keys it chose.

use crate::design::Design;
use crate::report::{
    FsmFigures, HotPage, IndexFigures, LogFigures, MemoryFigures, TargetFigures, Wait, WaitTime,
};
use crate::target::{Target, TargetSession};
use hotpage::{Counter, WaitType};
use hotpage::{Database, Key, TableHandle};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Hottest pages a report lists (and looks up the tables of).
pub const HOT_PAGES_REPORTED: usize = 10;

/// Bytes at the front of a row written for the crash tester: session u32, transaction u64,
/// position u32, transaction size u32 (little-endian).
pub const ACK_STAMP_BYTES: usize = 20;

/// Why the engine target failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine refused an operation.
    #[error(transparent)]
    Engine(#[from] hotpage::Error),
    /// The engine refused an operation the target did on its own (after the run).
    #[error("{what}")]
    Context {
        /// What the target was doing.
        what: &'static str,
        /// The engine's error.
        #[source]
        source: hotpage::Error,
    },
    /// The table exists with another design.
    #[error("table '{table}' in {db} has design '{found}', not '{wanted}'; pick another --table")]
    DesignMismatch {
        /// The table.
        table: String,
        /// The database directory.
        db: String,
        /// Its recorded design.
        found: String,
        /// The design asked for.
        wanted: String,
    },
    /// The rows are longer than the table takes.
    #[error("--row-bytes {row_bytes} exceeds the largest row of this table, {row_max} bytes")]
    RowTooLong {
        /// The plan's row bytes.
        row_bytes: usize,
        /// The table's largest row.
        row_max: usize,
    },
}

impl EngineError {
    /// The engine's own error inside, if any (for exit codes).
    pub fn engine(&self) -> Option<&hotpage::Error> {
        match self {
            EngineError::Engine(error) | EngineError::Context { source: error, .. } => Some(error),
            EngineError::DesignMismatch { .. } | EngineError::RowTooLong { .. } => None,
        }
    }

    fn context(what: &'static str) -> impl FnOnce(hotpage::Error) -> EngineError {
        move |source| EngineError::Context { what, source }
    }
}

/// Where the engine target inserts and what it labels its report with.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// The table's name.
    pub table: String,
    /// The design the table is (or is created as).
    pub design: Design,
    /// Rows per transaction (the crash tester's stamps number rows within it).
    pub batch: u32,
    /// Bytes of each row: checked against the table's largest row.
    pub row_bytes: usize,
    /// The crash tester's acknowledgement directory (one `ack.N` file per session).
    pub ack_dir: Option<PathBuf>,
    /// The database directory as the report names it (`None` for a temporary one).
    pub db_label: Option<String>,
}

/// The engine with one table: the first [`Target`].
pub struct EngineTarget {
    db: Database,
    table: TableHandle,
    config: EngineConfig,
}

impl EngineTarget {
    /// Takes the table `config.table` of `db`, creating it with the design's key kind and
    /// layout if missing; refuses a table of another design, or rows it cannot hold.
    /// `path` names the database in messages.
    pub fn new(
        db: Database,
        path: &Path,
        config: EngineConfig,
    ) -> Result<EngineTarget, EngineError> {
        let design = config.design;
        let table = match db.table(&config.table) {
            Ok(table) => {
                if table.design() != design.name().as_str() {
                    return Err(EngineError::DesignMismatch {
                        table: config.table.clone(),
                        db: path.display().to_string(),
                        found: table.design().to_string(),
                        wanted: design.to_string(),
                    });
                }
                table
            }
            Err(hotpage::Error::NoSuchTable(_)) => db
                .create_table_with_layout(
                    &config.table,
                    design.name().as_str(),
                    design.key_kind(),
                    design.layout(db.data_files()),
                )
                .map_err(EngineError::context("creating the table"))?,
            Err(other) => return Err(other.into()),
        };
        let row_max = table.layout().row_bytes_max(db.page_size());
        if config.row_bytes > row_max {
            return Err(EngineError::RowTooLong {
                row_bytes: config.row_bytes,
                row_max,
            });
        }
        Ok(EngineTarget { db, table, config })
    }

    /// The database, once the run is over (to save the report and close it).
    pub fn into_database(self) -> Database {
        let EngineTarget { db, table, .. } = self;
        drop(table);
        db
    }
}

impl Target for EngineTarget {
    type Error = EngineError;
    type Session<'a> = EngineSession<'a>;

    fn session(&self, index: usize) -> Result<EngineSession<'_>, EngineError> {
        let session = self.db.session();
        let acks = AckLog::open(self.config.ack_dir.as_deref(), index)
            .map_err(|e| hotpage::Error::io("opening the ack file", e))?;
        Ok(EngineSession {
            session,
            table: &self.table,
            acks,
            batch: u64::from(self.config.batch.max(1)),
            inserted: 0,
            stamped: Vec::new(),
        })
    }

    fn reset_waits(&self) {
        self.db.reset_stats();
    }

    fn waits(&self) -> Option<Vec<WaitTime>> {
        Some(engine_waits(&self.db))
    }

    fn figures(&self) -> Result<TargetFigures, EngineError> {
        table_figures(
            &self.db,
            &self.table,
            self.config.design.to_string(),
            self.config.db_label.clone(),
        )
    }
}

/// The wait times of `db` since its statistics were last reset, by type, most first: what
/// every target on the embedded engine (this one, SQL, T-SQL) reports while it runs.
pub fn engine_waits(db: &Database) -> Vec<WaitTime> {
    db.stats()
        .top_waits()
        .iter()
        .map(|(w, t)| WaitTime {
            name: w.name().to_string(),
            wait_ns: t.wait_ns,
        })
        .collect()
}

/// What a run left in `table` of `db`: waits, hottest pages, log, free-space map, index
/// shape. Shared by every target that runs on the embedded engine (this one, SQL).
pub fn table_figures(
    db: &Database,
    table: &TableHandle,
    design: String,
    db_label: Option<String>,
) -> Result<TargetFigures, EngineError> {
    let snapshot = db.stats();
    let tree = db
        .verify_table(table)
        .map_err(EngineError::context("checking the table after the run"))?;
    let waits = snapshot.top_waits();
    let wait_ns_total: u64 = waits.iter().map(|(_, t)| t.wait_ns).sum();
    let pct_of_waits = |ns: u64| 100.0 * ns as f64 / wait_ns_total.max(1) as f64;
    let hot_pages = hot_pages(db, &snapshot, pct_of_waits)?;
    let fsm_latch = snapshot.wait(WaitType::FsmLatch);
    Ok(TargetFigures {
        design,
        table: table.name().to_string(),
        page_size: db.page_size(),
        files: db.data_files(),
        waits: waits
            .iter()
            .map(|(w, t)| Wait {
                wait_type: w.name().to_string(),
                count: t.count,
                wait_ms: t.wait_ns as f64 / 1e6,
                avg_us: t.wait_ns as f64 / 1e3 / t.count.max(1) as f64,
                max_ms: t.wait_ns_max as f64 / 1e6,
                pct_of_wait_time: pct_of_waits(t.wait_ns),
            })
            .collect(),
        hot_pages,
        log: db.log_counters().map(|log| LogFigures {
            bytes: log.bytes,
            flushes: log.flushes,
            commits: log.commits,
            commits_per_flush: log.commits as f64 / log.flushes.max(1) as f64,
        }),
        fsm: FsmFigures {
            updates: snapshot.counter(Counter::FsmUpdates),
            waits: fsm_latch.count,
            wait_ms: fsm_latch.wait_ns as f64 / 1e6,
        },
        index: IndexFigures {
            pages: tree.pages(),
            levels: tree.levels,
            avg_fill_pct: tree.leaf_fill_pct,
            splits: snapshot.counter(Counter::PageSplits),
            splits_in_place: snapshot.counter(Counter::SplitsInPlace),
            rows_in_table: tree.rows,
            combined_rows: snapshot.counter(Counter::CombinedRows),
            combine_rounds: snapshot.counter(Counter::CombineRounds),
            grouped_apply_rows: snapshot.counter(Counter::GroupedApplyRows),
            grouped_apply_batches: snapshot.counter(Counter::GroupedApplyBatches),
        },
        memory: db.memory_usage(table).map(|m| MemoryFigures {
            rows: m.rows,
            key_bytes: m.key_bytes,
            row_bytes: m.row_bytes,
            file: m.file,
            file_bytes: m.file_bytes,
        }),
        db: db_label,
        server: None,
    })
}

/// The hottest pages, each with the table and level it belongs to.
fn hot_pages(
    db: &Database,
    snapshot: &hotpage::StatsSnapshot,
    pct_of_waits: impl Fn(u64) -> f64,
) -> Result<Vec<HotPage>, EngineError> {
    let hot: Vec<_> = snapshot.hot_pages.iter().take(HOT_PAGES_REPORTED).collect();
    let owners = db
        .page_owners(&hot.iter().map(|(page, _)| *page).collect::<Vec<_>>())
        .map_err(EngineError::context(
            "finding the tables of the hottest pages",
        ))?;
    Ok(hot
        .iter()
        .zip(owners)
        .map(|((page, w), owner)| {
            let at = hotpage::PageLocation::of(*page);
            (at, w, owner)
        })
        .map(|(at, w, owner)| HotPage {
            file: at.file,
            page: at.page,
            page_type: owner
                .as_ref()
                .map_or("unknown", |o| o.page_type.name())
                .to_string(),
            level: owner.as_ref().map(|o| o.level),
            table: owner.map(|o| o.table),
            waits: w.count,
            wait_ms: w.wait_ns as f64 / 1e6,
            pct_of_wait_time: pct_of_waits(w.wait_ns),
        })
        .collect())
}

/// A session of the engine target.
pub struct EngineSession<'a> {
    session: hotpage::Session,
    table: &'a TableHandle,
    acks: AckLog,
    batch: u64,
    // Rows inserted so far (the crash tester's stamps number transactions from it).
    inserted: u64,
    // The row with the crash tester's stamp (only with an acknowledgement log).
    stamped: Vec<u8>,
}

impl TargetSession for EngineSession<'_> {
    type Error = EngineError;

    fn begin(&mut self) -> Result<(), EngineError> {
        Ok(self.session.begin()?)
    }

    fn insert(&mut self, row: &[u8]) -> Result<(), EngineError> {
        if self.acks.enabled() {
            self.stamped.clear();
            self.stamped.extend_from_slice(row);
            let (txn, position) = (self.inserted / self.batch, self.inserted % self.batch);
            self.acks
                .stamp(&mut self.stamped, txn, position, self.batch);
            let key = self.session.insert(self.table, &self.stamped)?;
            self.acks.pending.push(key);
        } else {
            self.session.insert(self.table, row)?;
        }
        self.inserted += 1;
        Ok(())
    }

    fn commit(&mut self) -> Result<(), EngineError> {
        // With a batch of 1 the insert committed on its own (autocommit).
        if self.session.in_transaction() {
            self.session.commit()?;
        }
        self.acks.committed()?;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), EngineError> {
        // The last, partial batch: committed, except for the crash tester, which expects
        // whole batches only.
        if !self.session.in_transaction() {
            Ok(())
        } else if self.acks.enabled() {
            Ok(self.session.rollback()?)
        } else {
            Ok(self.session.commit()?)
        }
    }
}

/// For `hotpage crashtest`: each session appends the keys of every transaction to its own
/// file right after the commit returns (one line per transaction, keys in hex), and
/// stamps its rows so that a partly visible transaction can be recognised after a crash.
struct AckLog {
    file: Option<std::fs::File>,
    session: u32,
    pending: Vec<Key>,
    line: String,
}

impl AckLog {
    fn open(dir: Option<&Path>, session: usize) -> std::io::Result<AckLog> {
        let file = match dir {
            Some(dir) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join(format!("ack.{session}")))?,
            ),
            None => None,
        };
        Ok(AckLog {
            file,
            session: session as u32,
            pending: Vec::new(),
            line: String::new(),
        })
    }

    fn enabled(&self) -> bool {
        self.file.is_some()
    }

    fn stamp(&self, row: &mut [u8], txn: u64, position: u64, size: u64) {
        if self.file.is_none() || row.len() < ACK_STAMP_BYTES {
            return;
        }
        row[..4].copy_from_slice(&self.session.to_le_bytes());
        row[4..12].copy_from_slice(&txn.to_le_bytes());
        row[12..16].copy_from_slice(&(position as u32).to_le_bytes());
        row[16..20].copy_from_slice(&(size as u32).to_le_bytes());
    }

    /// The transaction in `pending` committed: record its keys.
    fn committed(&mut self) -> hotpage::Result<()> {
        if let Some(file) = &mut self.file {
            self.line.clear();
            for (i, key) in self.pending.iter().enumerate() {
                if i > 0 {
                    self.line.push(' ');
                }
                for byte in key.as_bytes() {
                    self.line.push_str(&format!("{byte:02x}"));
                }
            }
            self.line.push('\n');
            file.write_all(self.line.as_bytes())
                .map_err(|e| hotpage::Error::io("appending to the ack file", e))?;
        }
        self.pending.clear();
        Ok(())
    }
}
