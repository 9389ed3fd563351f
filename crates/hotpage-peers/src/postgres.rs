//! PostgreSQL as a peer: a throwaway local server ([`PgInstance`]: initdb in a temporary
//! directory, started with `synchronous_commit` mapped from the durability, stopped and
//! removed when dropped) and the table and statement of each key shape. The sessions are
//! `hotpage-pgclient`'s [`PgTarget`] (a connection per session, the statement prepared
//! once, `pg_stat_activity` sampled for waits), wrapped in [`PostgresTarget`] so that a
//! last, partial batch is committed as every other engine here commits it.
//!
//! - **Durability**: `synchronous_commit = on` for [`Commit::Sync`] (a commit waits for
//!   its WAL flush; PostgreSQL's WAL writer groups concurrent commits' flushes), `off` for
//!   [`Commit::NoSync`] (a commit returns at once, the WAL writer flushes within about
//!   three `wal_writer_delay`s). `fsync` stays on: tables are logged either way.
//! - **Keys**: identity is `bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY` (8 bytes);
//!   guid is `uuid PRIMARY KEY DEFAULT gen_random_uuid()` (16 bytes). PostgreSQL's table
//!   is a heap with a B-tree on the key, not a clustered B+tree; the B-tree's last page is
//!   where identity's inserts meet.
//! - **Ctrl-C**: the server runs in its own session (pg_ctl detaches it), so a terminal's
//!   SIGINT does not reach it; [`stop_all_and_exit`] stops every live instance for a
//!   signal handler, which cannot rely on destructors.

use crate::Commit;
use crate::key::KeyShape;
use hotpage_pgclient::{PgClientError, PgSession, PgTarget, PgTargetConfig};
use hotpage_workload::report::{TargetFigures, WaitTime};
use hotpage_workload::{Target, TargetSession};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// The table every run inserts into (dropped and created again for each run).
pub const TABLE: &str = "hp_compare";

/// Connections the server accepts: 64 sessions, the sampler and the setup connection with
/// room to spare.
pub const MAX_CONNECTIONS: u32 = 300;

/// Why no local PostgreSQL could be started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum PgInstanceError {
    /// initdb and pg_ctl were not found.
    #[error("{0}")]
    NotFound(String),
    /// A file or directory could not be made.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A PostgreSQL program failed.
    #[error("{program} failed ({status}): {output}")]
    Program {
        /// initdb or pg_ctl.
        program: &'static str,
        /// Its exit status.
        status: String,
        /// The end of what it printed (or its log).
        output: String,
    },
}

/// Where initdb and pg_ctl are.
#[derive(Clone, Debug)]
pub struct PgBinaries {
    dir: PathBuf,
}

impl PgBinaries {
    /// `dir` if given (it must hold both programs); otherwise Debian's
    /// `/usr/lib/postgresql/VERSION/bin`, newest first, then each directory of `PATH`.
    pub fn find(dir: Option<&Path>) -> Result<PgBinaries, PgInstanceError> {
        let has_both = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
        if let Some(dir) = dir {
            return if has_both(dir) {
                Ok(PgBinaries { dir: dir.into() })
            } else {
                Err(PgInstanceError::NotFound(format!(
                    "no initdb and pg_ctl in {}",
                    dir.display()
                )))
            };
        }
        let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let version = entry.file_name().to_str()?.parse().ok()?;
                Some((version, entry.path().join("bin")))
            })
            .collect();
        debian.sort_by_key(|entry| std::cmp::Reverse(entry.0));
        let path_dirs = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default();
        debian
            .into_iter()
            .map(|(_, dir)| dir)
            .chain(path_dirs)
            .find(|d| has_both(d))
            .map(|dir| PgBinaries { dir })
            .ok_or_else(|| {
                PgInstanceError::NotFound(
                    "initdb and pg_ctl not found (looked in /usr/lib/postgresql/*/bin and PATH); \
                     install PostgreSQL (Debian: apt-get install postgresql) or give --pg-bin DIR"
                        .to_string(),
                )
            })
    }

    /// The directory holding them.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// What a signal handler needs to stop an instance.
#[derive(Clone, Debug, PartialEq)]
struct LiveInstance {
    pg_ctl: PathBuf,
    data: PathBuf,
    dir: PathBuf,
    run_as: Option<String>,
}

/// Every instance started and not yet stopped, for [`stop_all_and_exit`].
static LIVE: Mutex<Vec<LiveInstance>> = Mutex::new(Vec::new());

fn live_instances() -> std::sync::MutexGuard<'static, Vec<LiveInstance>> {
    // The list stays consistent whatever panicked while holding it (pushes and removes).
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Stops every live instance at once (`pg_ctl stop -m immediate`), removes its directory
/// and exits the process with `code`: for a Ctrl-C handler, since the signal does not
/// unwind and destructors would not run. The list of instances stays locked until the
/// process is gone, so a [`PgInstance`] being dropped on another thread (its session saw
/// the server go) waits instead of racing the removal or exiting first with its own code.
pub fn stop_all_and_exit(code: i32) -> ! {
    let mut instances = live_instances();
    for instance in instances.drain(..) {
        let _ = pg_ctl_stop(&instance, "immediate");
        let _ = std::fs::remove_dir_all(&instance.dir);
    }
    std::process::exit(code)
}

fn pg_ctl_stop(instance: &LiveInstance, mode: &str) -> std::io::Result<Output> {
    command(instance.run_as.as_deref(), &instance.pg_ctl)
        .arg("-D")
        .arg(&instance.data)
        .args(["-m", mode, "-w", "-t", "30", "stop"])
        .output()
}

/// `program`, run as `user` through runuser when given (PostgreSQL refuses to run as root).
fn command(user: Option<&str>, program: &Path) -> Command {
    match user {
        Some(user) => {
            let mut command = Command::new("runuser");
            command.args(["-u", user, "--"]).arg(program);
            command
        }
        None => Command::new(program),
    }
}

/// The end of a program's output (or a log), for an error message.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

fn program_error(program: &'static str, output: &Output) -> PgInstanceError {
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    PgInstanceError::Program {
        program,
        status: output.status.to_string(),
        output: tail(&text),
    }
}

/// A PostgreSQL server of our own on 127.0.0.1, in a temporary directory: stopped and
/// removed when dropped.
pub struct PgInstance {
    live: LiveInstance,
    url: String,
    // Removed on drop, after the server stopped.
    dir: Option<tempfile::TempDir>,
}

/// The user PostgreSQL runs as when we are root (it refuses root): Debian's `postgres`,
/// else `nobody`. `None` when we are not root.
fn unprivileged_user() -> Result<Option<(String, u32, u32)>, PgInstanceError> {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata("/proc/self").map_err(|source| PgInstanceError::Io {
        what: "finding the current user (/proc/self)".into(),
        source,
    })?;
    if me.uid() != 0 {
        return Ok(None);
    }
    let id = |flag: &str, user: &str| -> Option<u32> {
        let output = Command::new("id").args([flag, user]).output().ok()?;
        if !output.status.success() {
            return None;
        }
        String::from_utf8_lossy(&output.stdout).trim().parse().ok()
    };
    for user in ["postgres", "nobody"] {
        if let (Some(uid), Some(gid)) = (id("-u", user), id("-g", user)) {
            return Ok(Some((user.to_string(), uid, gid)));
        }
    }
    Err(PgInstanceError::NotFound(
        "running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as"
            .into(),
    ))
}

/// A port nothing listens on now (another process may still take it before the server
/// binds: [`PgInstance::start`] then tries another).
fn free_port() -> Result<u16, PgInstanceError> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|source| PgInstanceError::Io {
            what: "finding a free port".into(),
            source,
        })?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|source| PgInstanceError::Io {
            what: "finding a free port".into(),
            source,
        })
}

impl PgInstance {
    /// initdb in a new temporary directory, then starts the server with
    /// `synchronous_commit` on ([`Commit::Sync`]) or off, fsync on, trust authentication
    /// for `postgres` on 127.0.0.1 only, and [`MAX_CONNECTIONS`]. Takes a few seconds.
    pub fn start(binaries: &PgBinaries, commit: Commit) -> Result<PgInstance, PgInstanceError> {
        let run_as = unprivileged_user()?;
        let io = |what: &str| {
            let what = what.to_string();
            move |source| PgInstanceError::Io { what, source }
        };
        let dir = tempfile::Builder::new()
            .prefix("hotpage-pg.")
            .tempdir()
            .map_err(io("creating a temporary directory for PostgreSQL"))?;
        if let Some((_, uid, gid)) = &run_as {
            std::os::unix::fs::chown(dir.path(), Some(*uid), Some(*gid))
                .map_err(io("handing the temporary directory to PostgreSQL's user"))?;
        }
        let user = run_as.as_ref().map(|(name, _, _)| name.as_str());
        let live = LiveInstance {
            pg_ctl: binaries.dir.join("pg_ctl"),
            data: dir.path().join("data"),
            dir: dir.path().to_path_buf(),
            run_as: user.map(str::to_string),
        };
        // Listed before initdb runs, not once the server is up: a Ctrl-C while initdb or
        // pg_ctl start is running (seconds on a loaded machine) must still remove the
        // directory and stop a server that has started (stop_all_and_exit). A test that
        // interrupted 2 s after the server's pid file appeared found it left behind.
        live_instances().push(live.clone());
        let started =
            init_cluster(binaries, user, &live.data).and_then(|()| start_server(&live, commit));
        match started {
            Ok(port) => Ok(PgInstance {
                live,
                url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
                dir: Some(dir),
            }),
            Err(error) => {
                // Under the lock, as in Drop. pg_ctl start may have given up (30 s) on a
                // server still starting: stop it (without one, pg_ctl just fails). Then
                // dropping `dir` removes the directory.
                let mut instances = live_instances();
                if instances.contains(&live) {
                    instances.retain(|listed| *listed != live);
                    let _ = pg_ctl_stop(&live, "immediate");
                }
                Err(error)
            }
        }
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The temporary directory holding its data and log (removed when dropped).
    pub fn dir(&self) -> &Path {
        &self.live.dir
    }
}

/// A new cluster in `data` (initdb), run as `user` when given.
fn init_cluster(
    binaries: &PgBinaries,
    user: Option<&str>,
    data: &Path,
) -> Result<(), PgInstanceError> {
    let output = command(user, &binaries.dir.join("initdb"))
        .arg("-D")
        .arg(data)
        .args([
            "-U",
            "postgres",
            "--auth=trust",
            "--no-locale",
            "-E",
            "UTF8",
        ])
        // Skips flushing the fresh cluster's files once; the server itself fsyncs.
        .arg("--no-sync")
        .output()
        .map_err(|source| PgInstanceError::Io {
            what: "running initdb".to_string(),
            source,
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(program_error("initdb", &output))
    }
}

/// Starts the server on a free port (up to 5 tries if another process takes the port
/// first); returns the port.
fn start_server(live: &LiveInstance, commit: Commit) -> Result<u16, PgInstanceError> {
    let log = live.dir.join("log");
    let synchronous_commit = match commit {
        Commit::Sync => "on",
        Commit::NoSync => "off",
    };
    let mut last_error = None;
    for _ in 0..5 {
        let port = free_port()?;
        let options = format!(
            "-c port={port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} \
             -c fsync=on -c synchronous_commit={synchronous_commit} -c max_connections={MAX_CONNECTIONS}",
            live.dir.display()
        );
        let output = command(live.run_as.as_deref(), &live.pg_ctl)
            .arg("-D")
            .arg(&live.data)
            .arg("-l")
            .arg(&log)
            .args(["-w", "-t", "30", "-o", &options, "start"])
            .output()
            .map_err(|source| PgInstanceError::Io {
                what: "running pg_ctl start".into(),
                source,
            })?;
        if output.status.success() {
            return Ok(port);
        }
        let log_text = std::fs::read_to_string(&log).unwrap_or_default();
        let error = PgInstanceError::Program {
            program: "pg_ctl start",
            status: output.status.to_string(),
            output: tail(&log_text),
        };
        if !(log_text.contains("could not bind") || log_text.contains("already in use")) {
            return Err(error);
        }
        last_error = Some(error);
    }
    Err(last_error.unwrap_or_else(|| PgInstanceError::NotFound("no free port".into())))
}

impl Drop for PgInstance {
    fn drop(&mut self) {
        // Under the lock, so that a Ctrl-C handler ([`stop_all_and_exit`]) either finds
        // this instance still to stop or waits until it is stopped and removed.
        let mut instances = live_instances();
        if !instances.contains(&self.live) {
            // The handler stopped and removed it.
            return;
        }
        instances.retain(|instance| instance != &self.live);
        // Fast: roll back and disconnect the sessions, then a clean shutdown.
        let _ = pg_ctl_stop(&self.live, "fast");
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

/// The setup script of a run: a fresh, empty table of `key`'s shape.
pub fn setup_sql(key: KeyShape) -> String {
    let id = match key {
        KeyShape::Identity => "id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
        KeyShape::Guid => "id uuid PRIMARY KEY DEFAULT gen_random_uuid()",
    };
    format!("DROP TABLE IF EXISTS {TABLE}; CREATE TABLE {TABLE} ({id}, payload bytea NOT NULL)")
}

/// The insert every session prepares: the key from its default, `row` as a bytea literal.
pub fn insert_sql(row: &[u8]) -> String {
    let mut hex = String::with_capacity(row.len() * 2);
    for byte in row {
        hex.push_str(&format!("{byte:02x}"));
    }
    format!("INSERT INTO {TABLE} (payload) VALUES ('\\x{hex}'::bytea)")
}

/// The server at `url` as a target for `key` and `row`: its table made anew (dropped if
/// it exists), each session preparing [`insert_sql`].
pub fn connect_target(
    url: &str,
    key: KeyShape,
    row: &[u8],
) -> Result<PostgresTarget, PgClientError> {
    let inner = PgTarget::connect(PgTargetConfig {
        url,
        setup_sql: Some(&setup_sql(key)),
        statement: &insert_sql(row),
    })?;
    Ok(PostgresTarget { inner })
}

/// [`PgTarget`] with one difference: a session's last, partial batch is committed at the
/// end of the run, as every other engine in the comparison does (`hotpage stress --url`
/// rolls it back), so the rows the driver counts are the rows in the table.
pub struct PostgresTarget {
    inner: PgTarget,
}

impl PostgresTarget {
    /// The server's `synchronous_commit`.
    pub fn synchronous_commit(&self) -> Option<&str> {
        self.inner.synchronous_commit()
    }
}

impl Target for PostgresTarget {
    type Error = PgClientError;
    type Session<'a> = PostgresSession;

    fn session(&self, index: usize) -> Result<PostgresSession, PgClientError> {
        Ok(PostgresSession(self.inner.session(index)?))
    }

    fn reset_waits(&self) {
        self.inner.reset_waits();
    }

    fn waits(&self) -> Option<Vec<WaitTime>> {
        self.inner.waits()
    }

    fn figures(&self) -> Result<TargetFigures, PgClientError> {
        self.inner.figures()
    }
}

/// One connection of a [`PostgresTarget`].
pub struct PostgresSession(PgSession);

impl TargetSession for PostgresSession {
    type Error = PgClientError;

    fn begin(&mut self) -> Result<(), PgClientError> {
        self.0.begin()
    }

    fn insert(&mut self, row: &[u8]) -> Result<(), PgClientError> {
        self.0.insert(row)
    }

    fn commit(&mut self) -> Result<(), PgClientError> {
        self.0.commit()
    }

    fn finish(&mut self) -> Result<(), PgClientError> {
        // COMMIT a transaction left open; then nothing is left for PgSession to roll back.
        self.0.commit()?;
        self.0.finish()
    }
}
