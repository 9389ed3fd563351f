//! Issue 9, item 3: running out of buffer-pool frames is back-pressure, not a stop. 64
//! sessions insert through a pool of 16 frames (64 KiB pages, 1 MiB): far more sessions
//! than frames, each commit durable before its rows are applied. Formerly the pool ran out
//! of frames in an apply after a durable commit, the log was failed (fail-stop), and every
//! session got I/O errors. Now sessions wait for frames (`FREE_BUFFER`), every row arrives,
//! and the database stays up.

use hotpage::testing::WaitType;
use hotpage::{Database, Key, KeyKind, Options};
use std::collections::HashMap;

const SESSIONS: usize = 64;
const ROWS_PER_SESSION: usize = 80;
const PAGE_BYTES: usize = 64 << 10;
const POOL_FRAMES: usize = 16;
// Rows this large make the table outgrow the pool many times over within a few rows per
// session (the old code failed from about 40 per session on).
const ROW_BYTES: usize = 1000;

fn options() -> Options {
    Options {
        page_size: PAGE_BYTES,
        pool_bytes: POOL_FRAMES * PAGE_BYTES,
        ..Options::default()
    }
}

#[test]
fn sixty_four_sessions_through_sixteen_frames_all_commit_and_wait_for_frames() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let db = Database::open(&path, options()).expect("open");
    assert_eq!(db.pool_info().frames, POOL_FRAMES);
    let table = db
        .create_table("guid", "guid", KeyKind::GuidV4)
        .expect("create");
    let written: Vec<(Key, Vec<u8>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..SESSIONS)
            .map(|t| {
                let (db, table) = (&db, &table);
                s.spawn(move || {
                    let mut session = db.session();
                    (0..ROWS_PER_SESSION)
                        .map(|i| {
                            let mut row = format!("session {t} row {i} ").into_bytes();
                            row.resize(ROW_BYTES, b'.');
                            let key = session.insert(table, &row).expect("insert");
                            (key, row)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a session panicked"))
            .collect()
    });
    assert_eq!(written.len(), SESSIONS * ROWS_PER_SESSION);

    // The waits were counted as their own type.
    let waits = db.stats().wait(WaitType::FreeBuffer);
    assert!(waits.count > 0, "no FREE_BUFFER wait: {waits:?}");
    assert!(
        db.stats()
            .top_waits()
            .iter()
            .any(|(w, _)| w.name() == "FREE_BUFFER")
    );

    // Every row is there (one scan, and a sample of point reads), and the database is
    // still up: a new insert, a checkpoint, a clean close and reopen.
    let mut session = db.session();
    let mut scanned: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    session
        .scan(&table, None, |key, row| {
            scanned.insert(key.to_vec(), row.to_vec());
            true
        })
        .expect("scan");
    assert_eq!(scanned.len(), written.len());
    for (i, (key, row)) in written.iter().enumerate() {
        assert_eq!(scanned.get(key.as_bytes()), Some(row));
        if i % 16 == 0 {
            assert_eq!(session.get(&table, key).expect("get").as_ref(), Some(row));
        }
    }
    let late = session.insert(&table, b"after the storm").expect("insert");
    assert_eq!(
        session.get(&table, &late).expect("get"),
        Some(b"after the storm".to_vec())
    );
    db.checkpoint().expect("checkpoint");
    assert_eq!(
        db.verify_table(&table).expect("verify").rows,
        written.len() as u64 + 1
    );
    drop((session, table));
    db.close().expect("close");

    let db = Database::open(&path, options()).expect("reopen");
    let table = db.table("guid").expect("table");
    assert_eq!(
        db.verify_table(&table).expect("verify").rows,
        written.len() as u64 + 1
    );
}
