//! hotpage's stress driver against any PostgreSQL-wire server (`hotpage stress --url`):
//! a [`PgTarget`] implements the workload's [`hotpage_workload::Target`], so the same
//! driver, progress line and report that measure the embedded engine measure PostgreSQL,
//! a `hotpage serve`, or a distributed engine that speaks the protocol (CockroachDB,
//! YugabyteDB, Citus).
//!
//! - **Sessions.** Each session is one connection (the `postgres` crate's synchronous
//!   client) that prepares the statement once and executes it for every row; with a
//!   batch of several rows it wraps them in `BEGIN` … `COMMIT`.
//! - **Waits.** The server decides where they come from (`SELECT version()` names hotpage
//!   as `PostgreSQL … (hotpage X.Y.Z) …`):
//!   - hotpage: its `hotpage_wait_stats` view, reset with `SELECT
//!     hotpage_reset_wait_stats()` before the measured phase and read after it, and its
//!     `hotpage_hot_pages`;
//!   - anything else: `pg_stat_activity` sampled every 10 ms on a connection of its own
//!     (ASH-style: each active backend of the run's database counts once per sample under
//!     its `wait_event_type:wait_event`, or `CPU` when it waits on nothing), reported as
//!     each event's share of the samples.
//! - **Errors.** A server's error keeps its SQLSTATE and message ([`ServerMessage`]); a
//!   bad URL, a refused connection, a failed setup script and a failed statement are each
//!   a variant of [`PgClientError`].
//!
//! tokio comes in with the `postgres` crate and stays in this crate: the engine, the SQL
//! layer and the workload driver stay synchronous.

mod error;
mod sampler;
mod target;
mod waits;

pub use error::{PgClientError, ServerMessage};
pub use target::{PgSession, PgTarget, PgTargetConfig, ServerKind};
pub use waits::{SAMPLE_INTERVAL, sampled_waits};
