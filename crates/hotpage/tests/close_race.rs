//! `Database::close` must not fail because the background checkpointer happens to hold the
//! database at that moment (issue 9: `hotpage stress --durability async` failed about one
//! run in six with "close: 1 other handles or sessions are still open").

use hotpage::{Database, Durability, Error, KeyKind, Options};
use std::time::{Duration, Instant};

/// How often the checkpointer wakes up to see whether a checkpoint is due (`db.rs`).
const CHECKPOINTER_TICK: Duration = Duration::from_millis(100);
/// Open/insert/close rounds; each lasts a little over one checkpointer tick.
const ROUNDS: u32 = 24;

#[test]
fn close_succeeds_while_the_checkpointer_is_checkpointing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let options = Options {
        page_size: 4096,
        pool_bytes: 256 * 4096,
        durability: Durability::Async,
        // Every tick finds a checkpoint due, so the checkpointer holds the database for a
        // whole checkpoint (page writes, fdatasyncs, the catalog) at every tick.
        checkpoint_interval: Duration::from_millis(2),
        ..Options::default()
    };
    for round in 0..ROUNDS {
        let db = Database::open(&path, options.clone()).expect("open");
        let table = match db.table("t") {
            Ok(table) => table,
            Err(Error::NoSuchTable(_)) => db
                .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
                .expect("create"),
            Err(other) => panic!("table lookup: {other}"),
        };
        let mut session = db.session();
        let opened = Instant::now();
        // Insert until just after the checkpointer's first tick, closing at a slightly
        // different moment each round, so that most closes land in a checkpoint.
        let close_at = CHECKPOINTER_TICK + Duration::from_micros(250 * u64::from(round % 12));
        let mut row = 0u32;
        while opened.elapsed() < close_at {
            session.insert(&table, &row.to_le_bytes()).expect("insert");
            row += 1;
        }
        drop(session);
        drop(table);
        if let Err(error) = db.close() {
            panic!("round {round}: close failed: {error}");
        }
    }
    // The rows of every round are there after the last close.
    let db = Database::open(&path, options).expect("reopen");
    let table = db.table("t").expect("table");
    assert!(db.verify_table(&table).expect("verify").rows > 0);
}

#[test]
fn a_refused_close_leaves_the_checkpointer_running() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options {
        page_size: 4096,
        pool_bytes: 256 * 4096,
        durability: Durability::Async,
        checkpoint_interval: Duration::from_millis(2),
        ..Options::default()
    };
    let db = Database::open(dir.path().join("db"), options).expect("open");
    let table = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("create");
    let other = db.clone();
    assert!(matches!(other.close(), Err(Error::InvalidOption(_))));
    let before = db.checkpoints();
    let mut session = db.session();
    let started = Instant::now();
    // New log and three ticks: the checkpointer, if it still runs, checkpoints.
    while started.elapsed() < 3 * CHECKPOINTER_TICK {
        session.insert(&table, b"row").expect("insert");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        db.checkpoints() > before,
        "no checkpoint since the refused close"
    );
    drop((session, table));
    db.close().expect("close");
}
