//! What the driver measures: a [`Target`] opens sessions, and a [`TargetSession`] inserts
//! rows and commits. The contract is in the crate documentation.
//!
//! Why generics and not `dyn Target`: the insert loop calls the session once per row, many
//! millions of times a second across sessions, and with a generic session the call is
//! inlined into the loop, so measuring the embedded engine costs what it did before the
//! driver was a crate. Every target is known when the binary is built (the engine, a SQL
//! layer, a PostgreSQL-wire client, peer engines), so nothing needs choosing at run time
//! beyond a `match` in the command that picks which `run::<T>` to call. A session borrows
//! its target (`Session<'a>`), so a target can hand out sessions that hold references into
//! it (the engine's table handle) without reference counting.

use crate::report::{TargetFigures, WaitTime};

/// Something to measure: an engine with one table to insert into.
///
/// `Sync` because every session thread borrows it at once.
pub trait Target: Sync {
    /// What can fail. The driver stops every session at the first failure and returns it.
    type Error: std::error::Error + Send + Sync + 'static;

    /// One session (a connection, a transaction context), used by one thread only.
    type Session<'a>: TargetSession<Error = Self::Error>
    where
        Self: 'a;

    /// Opens session `index` (0 to sessions - 1), on the thread that will use it.
    fn session(&self, index: usize) -> Result<Self::Session<'_>, Self::Error>;

    /// Sets the target's wait statistics to zero. Called once before the sessions start,
    /// and at the end of the warm-up while every session is parked outside the target, so
    /// that the measured waits are exactly the measured phase's.
    fn reset_waits(&self) {}

    /// Time waited so far, by wait type, since the last reset: the progress line names the
    /// type that grows fastest. `None` for a target that does not measure its waits (a
    /// remote server, a peer engine).
    fn waits(&self) -> Option<Vec<WaitTime>> {
        None
    }

    /// What the target reports after the run: its name for the table and design, waits,
    /// hottest pages, and the shape of what was written. Called once, after every session
    /// has finished and been dropped.
    fn figures(&self) -> Result<TargetFigures, Self::Error>;
}

/// One session of a [`Target`].
///
/// The driver calls, per transaction of `batch` rows:
/// - with `batch > 1`: [`begin`](Self::begin), `batch` × [`insert`](Self::insert), then
///   [`commit`](Self::commit);
/// - with `batch == 1`: [`insert`](Self::insert) then [`commit`](Self::commit), never
///   `begin`: a target may commit the insert on its own (autocommit) and take `commit` as
///   only the moment the row is acknowledged.
///
/// When the run ends (rows done, time up, or another session failed) it calls
/// [`finish`](Self::finish) once, which may find a transaction open.
pub trait TargetSession {
    /// What can fail (the target's error).
    type Error;

    /// Starts a transaction of several rows.
    fn begin(&mut self) -> Result<(), Self::Error>;

    /// Inserts one row (the target chooses its key).
    fn insert(&mut self, row: &[u8]) -> Result<(), Self::Error>;

    /// Commits the rows inserted since the last commit. When it returns, they are as
    /// durable as the plan's durability says.
    fn commit(&mut self) -> Result<(), Self::Error>;

    /// The run is over: commit or roll back a transaction left open (a partial batch).
    fn finish(&mut self) -> Result<(), Self::Error>;
}
