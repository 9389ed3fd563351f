//! The hotpage workload driver: one driver that measures any engine.
//!
//! A run has three parts:
//! - a [`Plan`]: sessions, rows per session or a duration, a warm-up, rows per
//!   transaction, durability and the row;
//! - a [`Target`]: what is measured. Today's embedded engine ([`engine::EngineTarget`]) is
//!   the first; a SQL layer, a PostgreSQL-wire client and peer engines (SQLite, RocksDB)
//!   implement the same trait, so one driver, one progress display and one report
//!   measure all of them alike;
//! - a [`Report`]: typed and `serde`, from which the command's text, its `--json`, the run
//!   saved with the database and `hotpage inspect waits` all come.
//!
//! [`run`] ties them together.
//!
//! # The `Target` contract
//!
//! - **Thread model.** [`run`] starts one OS thread per session, and each thread opens its
//!   own session with [`Target::session`] and uses it alone (a session need not be `Send`).
//!   The target is shared by reference between all of them and the coordinator, hence
//!   `Target: Sync`. Sessions start inserting together, after every one is open.
//! - **Commits.** Per transaction of `batch` rows a session gets [`TargetSession::begin`],
//!   `batch` inserts and [`TargetSession::commit`]. With a batch of one there is no
//!   `begin`: a target may commit each insert on its own (autocommit) and take `commit` as
//!   the moment the row is acknowledged. When `commit` returns, the rows are as durable as
//!   the plan's durability says; the latency of an insert includes the commit it ends.
//!   At the end of the run each session gets [`TargetSession::finish`] once, which may find
//!   a partial batch open.
//! - **Waits.** A target that measures where its sessions wait (latches, log flushes)
//!   reports cumulative wait time by type in [`Target::waits`] for the progress line, and
//!   the totals in its [`TargetFigures`]. [`Target::reset_waits`] is called before the
//!   sessions start and when the warm-up ends, while every session is parked outside the
//!   target, so the report's waits are exactly the measured phase's. A target that
//!   cannot see its waits (a peer engine) returns `None` and empty lists; a remote server
//!   reports what its own statistics or samples show (`hotpage-pgclient`), and says so in
//!   [`report::ServerFigures`].
//! - **Failures.** The first error of any session stops every session; [`run`] returns it
//!   as [`RunError::Session`].

pub mod compare;
pub mod design;
pub mod engine;
pub mod plan;
mod progress;
pub mod report;
mod run;
pub mod sql;
pub mod target;
pub mod tsql;

pub use design::{Design, DesignName, DesignOptions, UnknownDesign};
pub use plan::{Amount, Plan, Progress, RowShape};
pub use report::{Report, ServerFigures, TargetFigures};
pub use run::{RunError, run};
pub use target::{Target, TargetSession};
