//! Each peer target under the real workload driver: the rows the driver reports are the
//! rows counted in the peer afterwards, with the key shape asked for, for single-row
//! commits and for batches (whose last, partial batch `finish` commits).
//!
//! PostgreSQL is required (CI installs it, `.ci/run`): without initdb and pg_ctl its test
//! fails and says so.

use hotpage::Durability;
use hotpage_peers::postgres::{PgBinaries, PgInstance, TABLE};
use hotpage_peers::{Commit, KeyShape, SqliteTarget};
use hotpage_workload::{Amount, Plan, Progress, Report, RowShape, Target};
use std::time::Duration;

fn plan(sessions: u32, rows: u64, batch: u32) -> Plan {
    Plan {
        sessions,
        amount: Amount::RowsPerSession(rows),
        warmup: Duration::ZERO,
        batch,
        durability: Durability::Sync,
        row: RowShape { bytes: 40 },
        progress: Progress::Hidden,
    }
}

fn run<T: Target>(plan: &Plan, target: &T) -> Report {
    hotpage_workload::run(plan, target).expect("the run succeeds")
}

#[test]
fn sqlite_round_trips_rows_of_both_key_shapes() {
    for (key, commit, batch) in [
        (KeyShape::Identity, Commit::Sync, 1),
        (KeyShape::Guid, Commit::NoSync, 1),
        (KeyShape::Identity, Commit::NoSync, 10),
        (KeyShape::Guid, Commit::Sync, 10),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let target = SqliteTarget::create(dir.path(), key, commit).unwrap();
        // 25 rows in batches of 10: the last 5 are a partial batch that finish commits.
        let report = run(&plan(4, 25, batch), &target);
        assert_eq!(report.rows_total, 100, "{key} batch {batch}");
        assert_eq!(target.count_rows().unwrap(), 100, "{key} batch {batch}");
        assert_eq!(report.target.index.rows_in_table, 100);
        let conn = rusqlite::Connection::open(target.path()).unwrap();
        let (min_len, max_len, distinct): (i64, i64, i64) = conn
            .query_row(
                "SELECT min(length(id)), max(length(id)), count(DISTINCT id) FROM hp_compare",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(distinct, 100);
        match key {
            KeyShape::Identity => {
                let (min, max): (i64, i64) = conn
                    .query_row("SELECT min(id), max(id) FROM hp_compare", [], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .unwrap();
                assert_eq!((min, max), (1, 100), "ids one more than the last");
            }
            KeyShape::Guid => assert_eq!((min_len, max_len), (16, 16), "16-byte keys"),
        }
        let payload: Vec<u8> = conn
            .query_row("SELECT payload FROM hp_compare LIMIT 1", [], |r| r.get(0))
            .unwrap();
        assert_eq!(payload, RowShape { bytes: 40 }.row(), "the driver's row");
    }
}

#[test]
fn sqlite_sessions_wait_for_the_write_lock_instead_of_failing() {
    // 16 writers on one file, each commit synced: without the busy timeout some would get
    // SQLITE_BUSY ("database is locked") and the run would fail.
    let dir = tempfile::tempdir().unwrap();
    let target = SqliteTarget::create(dir.path(), KeyShape::Identity, Commit::Sync).unwrap();
    let report = run(&plan(16, 30, 1), &target);
    assert_eq!(report.rows_total, 480);
    assert_eq!(target.count_rows().unwrap(), 480);
}

#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_round_trips_rows_of_both_key_shapes() {
    use hotpage_peers::RocksTarget;
    for (key, commit, batch) in [
        (KeyShape::Identity, Commit::Sync, 1),
        (KeyShape::Guid, Commit::NoSync, 1),
        (KeyShape::Identity, Commit::NoSync, 10),
        (KeyShape::Guid, Commit::Sync, 10),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let target = RocksTarget::create(dir.path(), key, commit).unwrap();
        let report = run(&plan(4, 25, batch), &target);
        assert_eq!(report.rows_total, 100, "{key} batch {batch}");
        assert_eq!(target.count_rows().unwrap(), 100, "{key} batch {batch}");
        drop(target);
        // Reopened from disk: every key has the shape's length, and identity's are 1..=100.
        let db = rocksdb::DB::open_default(dir.path().join("compare.rocksdb")).unwrap();
        let keys: Vec<Vec<u8>> = db
            .iterator(rocksdb::IteratorMode::Start)
            .map(|entry| entry.unwrap().0.to_vec())
            .collect();
        assert_eq!(keys.len(), 100);
        assert!(keys.iter().all(|k| k.len() == key.key_bytes()));
        if key == KeyShape::Identity {
            assert_eq!(keys[0], 1u64.to_be_bytes());
            assert_eq!(keys[99], 100u64.to_be_bytes());
        }
    }
}

#[cfg(feature = "fjall")]
#[test]
fn fjall_round_trips_rows_of_both_key_shapes() {
    use hotpage_peers::FjallTarget;
    for (key, commit, batch) in [
        (KeyShape::Identity, Commit::Sync, 1),
        (KeyShape::Guid, Commit::NoSync, 1),
        (KeyShape::Identity, Commit::NoSync, 10),
        (KeyShape::Guid, Commit::Sync, 10),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let target = FjallTarget::create(dir.path(), key, commit).unwrap();
        let report = run(&plan(4, 25, batch), &target);
        assert_eq!(report.rows_total, 100, "{key} batch {batch}");
        assert_eq!(target.count_rows().unwrap(), 100, "{key} batch {batch}");
        assert_eq!(report.target.index.rows_in_table, 100);
        drop(target);
        // Reopened from disk (its journal recovered): every key has the shape's length,
        // identity's are 1..=100, and each value is the driver's row.
        let reopened = FjallTarget::create(dir.path(), key, commit).unwrap();
        let rows = reopened.rows().unwrap();
        assert!(rows.iter().all(|(_, v)| *v == RowShape { bytes: 40 }.row()));
        let keys: Vec<Vec<u8>> = rows.into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys.len(), 100, "{key} batch {batch}");
        assert!(keys.iter().all(|k| k.len() == key.key_bytes()));
        if key == KeyShape::Identity {
            assert_eq!(keys[0], 1u64.to_be_bytes());
            assert_eq!(keys[99], 100u64.to_be_bytes());
        }
    }
}

fn postgres_binaries() -> PgBinaries {
    PgBinaries::find(None).unwrap_or_else(|e| {
        panic!("this test needs PostgreSQL's initdb and pg_ctl (CI installs them): {e}")
    })
}

#[test]
fn postgres_round_trips_rows_and_maps_synchronous_commit() {
    let bins = postgres_binaries();
    for (commit, setting) in [(Commit::Sync, "on"), (Commit::NoSync, "off")] {
        let instance = PgInstance::start(&bins, commit).unwrap();
        let dir = instance.dir().to_path_buf();
        for (key, batch) in [(KeyShape::Identity, 1), (KeyShape::Guid, 10)] {
            let row = RowShape { bytes: 40 }.row();
            let target =
                hotpage_peers::postgres::connect_target(instance.url(), key, &row).unwrap();
            assert_eq!(target.synchronous_commit(), Some(setting));
            let report = run(&plan(4, 25, batch), &target);
            assert_eq!(report.rows_total, 100);
            drop(target);
            let mut client = postgres::Client::connect(instance.url(), postgres::NoTls).unwrap();
            let sql = format!(
                "SELECT count(*), count(DISTINCT id), min(length(payload)), \
                 (SELECT pg_column_size(id) FROM {TABLE} LIMIT 1) FROM {TABLE}"
            );
            let row = client.query_one(&sql, &[]).unwrap();
            let (count, distinct, payload): (i64, i64, i32) = (row.get(0), row.get(1), row.get(2));
            assert_eq!(
                (count, distinct, payload),
                (100, 100, 40),
                "{key} batch {batch}"
            );
            let key_bytes: i32 = row.get(3);
            assert_eq!(key_bytes as usize, key.key_bytes(), "{key}");
        }
        let url = instance.url().to_string();
        drop(instance);
        assert!(!dir.exists(), "the instance's directory is removed");
        assert!(
            postgres::Client::connect(&url, postgres::NoTls).is_err(),
            "the server is stopped"
        );
    }
}

#[test]
fn missing_postgres_binaries_are_a_clear_reason() {
    let empty = tempfile::tempdir().unwrap();
    let error = PgBinaries::find(Some(empty.path())).unwrap_err();
    assert!(
        error.to_string().contains("no initdb and pg_ctl in"),
        "{error}"
    );
}
