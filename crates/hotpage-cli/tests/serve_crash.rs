//! kill -9 of `hotpage serve` while clients insert (pgbench and clients that record every
//! id the server acknowledged): `hotpage check` passes on the crashed database, the next
//! `serve` recovers it, and every acknowledged row is there.

mod serve_support;

use serve_support::{Serve, check, require_program};
use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Inserts one row per statement until the server goes away; returns the ids acknowledged.
fn insert_until_error(conninfo: &str, client: i32, stop: &AtomicBool) -> Vec<i64> {
    let mut db = postgres::Client::connect(conninfo, postgres::NoTls).expect("connect");
    let insert = db
        .prepare("INSERT INTO acked (client, n) VALUES ($1, $2) RETURNING id")
        .expect("prepare");
    let mut acked = Vec::new();
    for n in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match db.query_one(&insert, &[&client, &n]) {
            Ok(row) => acked.push(row.get(0)),
            Err(_) => break,
        }
    }
    acked
}

#[test]
fn every_acknowledged_row_survives_a_kill_9() {
    let pgbench = require_program("pgbench");
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db");
    let serve = Serve::start(&db, &["--durability", "sync"]);
    serve
        .client()
        .batch_execute(
            "CREATE TABLE acked (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, client integer, n integer);
             CREATE TABLE bench (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)",
        )
        .expect("create");
    let script = dir.path().join("insert.sql");
    std::fs::write(&script, "INSERT INTO bench (v) VALUES ('load');\n").expect("script");
    let port = serve.port.to_string();
    let mut load = Command::new(pgbench)
        .args([
            "-n",
            "-M",
            "prepared",
            "-c",
            "4",
            "-T",
            "60",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
        ])
        .args(["-U", "tester", "-f"])
        .arg(&script)
        .arg("hotpage")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run pgbench");
    let acked = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|client| {
            let (conninfo, acked, stop) = (serve.conninfo(), Arc::clone(&acked), Arc::clone(&stop));
            std::thread::spawn(move || {
                let ids = insert_until_error(&conninfo, client, &stop);
                acked.lock().unwrap().extend(ids);
            })
        })
        .collect();
    // Let rows be acknowledged, then kill the server in the middle of it all.
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(1500));
    serve.kill9();
    for client in clients {
        client.join().expect("client thread");
    }
    stop.store(true, Ordering::Relaxed);
    let _ = load.kill();
    let _ = load.wait();
    let acked: BTreeSet<i64> = acked.lock().unwrap().iter().copied().collect();
    assert!(
        acked.len() > 10,
        "too few rows before the kill ({:?}): {}",
        started.elapsed(),
        acked.len()
    );

    // The crashed database checks clean (recovery in memory, nothing changed).
    let checked = check(&db);
    assert!(
        checked.status.success(),
        "check after kill -9: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    // The next serve recovers it: every acknowledged id is there.
    let serve = Serve::start(&db, &[]);
    assert!(
        serve.stderr_text().contains("recovered the database"),
        "{}",
        serve.stderr_text()
    );
    let mut client = serve.client();
    let present: BTreeSet<i64> = client
        .query("SELECT id FROM acked", &[])
        .expect("select")
        .iter()
        .map(|r| r.get(0))
        .collect();
    let missing: Vec<&i64> = acked.difference(&present).collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged rows lost: {missing:?}",
        missing.len()
    );
    // The table goes on from where it was: a new row, no duplicate key.
    client
        .execute("INSERT INTO acked (client, n) VALUES (99, 0)", &[])
        .expect("insert after recovery");
    drop(client);
    let (status, stderr) = serve.terminate();
    assert!(status.success(), "{stderr}");
    let checked = check(&db);
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stdout)
    );
}
