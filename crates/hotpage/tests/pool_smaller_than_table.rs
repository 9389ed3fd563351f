//! A table many times larger than the buffer pool: concurrent inserts evict and re-read
//! pages all the time, and after a clean close and reopen (with the same small pool) every
//! row is there, in order, and the tree is sound.

use hotpage::testing::Counter;
use hotpage::{Database, Durability, Key, KeyKind, Options};

const POOL_PAGES: usize = 64;
const PAGE_BYTES: usize = 4096;

fn options() -> Options {
    Options {
        page_size: PAGE_BYTES,
        pool_bytes: POOL_PAGES * PAGE_BYTES,
        // The subject is the pool, not the log: no fdatasync per row.
        durability: Durability::Async,
        ..Options::default()
    }
}

#[test]
fn a_table_ten_times_the_pool_round_trips() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let threads = 4;
    let rows_per_thread = 12_000u32;
    let mut written: Vec<(Key, Vec<u8>)> = Vec::new();
    {
        let db = Database::open(&path, options()).expect("open");
        let ids = db
            .create_table("ids", "identity", KeyKind::Identity { start: 1, step: 1 })
            .expect("create");
        let guids = db
            .create_table("guids", "guid", KeyKind::GuidV4)
            .expect("create");
        let per_thread: Vec<Vec<(Key, Vec<u8>)>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (db, ids, guids) = (&db, &ids, &guids);
                    s.spawn(move || {
                        let mut session = db.session();
                        let mut mine = Vec::new();
                        for i in 0..rows_per_thread {
                            let row =
                                format!("thread {t} row {i} {}", "x".repeat((i % 50) as usize))
                                    .into_bytes();
                            let key = session.insert(ids, &row).expect("insert");
                            session.insert(guids, &row).expect("insert");
                            mine.push((key, row));
                        }
                        mine
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("thread"))
                .collect()
        });
        written.extend(per_thread.into_iter().flatten());
        let shape = db.verify_table(&ids).expect("verify");
        assert!(
            shape.pages() >= (POOL_PAGES * 10) as u64,
            "table of {} pages is not 10x the {POOL_PAGES}-page pool",
            shape.pages()
        );
        let stats = db.stats();
        assert!(
            stats.counter(Counter::PagesWritten) > 0,
            "nothing was evicted"
        );
        assert!(stats.counter(Counter::PagesRead) > 0, "nothing was re-read");
        drop((ids, guids));
        db.close().expect("close");
    }
    let db = Database::open(&path, options()).expect("reopen");
    let ids = db.table("ids").expect("table");
    let guids = db.table("guids").expect("table");
    let total = u64::from(rows_per_thread) * threads as u64;
    assert_eq!(db.verify_table(&ids).expect("verify").rows, total);
    assert_eq!(db.verify_table(&guids).expect("verify").rows, total);
    let session = db.session();
    for (key, row) in &written {
        assert_eq!(session.get(&ids, key).expect("get").as_ref(), Some(row));
    }
    let mut expected = written.clone();
    expected.sort_by_key(|(k, _)| *k);
    let mut scanned = Vec::new();
    session
        .scan(&ids, None, |k, v| {
            scanned.push((k.to_vec(), v.to_vec()));
            true
        })
        .expect("scan");
    let expected: Vec<(Vec<u8>, Vec<u8>)> = expected
        .into_iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v))
        .collect();
    assert!(
        scanned == expected,
        "scan after reopen differs from what was written"
    );
    let infos = db.tables();
    assert_eq!(
        infos.iter().map(|t| t.rows).collect::<Vec<_>>(),
        vec![total, total]
    );
}
