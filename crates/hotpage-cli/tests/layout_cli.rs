//! The `hash-partition`, `identity-flow-control` and `memory` designs from the command
//! line: a stress run kept in a database that `hotpage check` then passes (every
//! partition's tree; a memory table's file and rows), the flow-control wait in the report,
//! zero-valued options as one usage line, and a kill-and-recover crash test with nothing
//! lost and no partial transaction (for memory, with checkpoints before the kill).

mod common;
use common::*;

#[test]
fn stress_then_check_passes_for_both_designs() {
    for (design, extra, trees) in [
        ("hash-partition", ["--partitions", "8"], 8),
        ("identity-flow-control", ["--flow-control-sessions", "1"], 1),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("db");
        let db = db.to_str().expect("utf-8 path");
        let report = stress_8x5000(design, db, &extra);
        assert_eq!(report["index"]["rows_in_table"], 40_000, "{design}");
        let waits: Vec<&str> = report["waits"]
            .as_array()
            .expect("waits")
            .iter()
            .filter_map(|w| w["type"].as_str())
            .collect();
        if design == "identity-flow-control" {
            // 8 sessions through a gate of one: some must have waited at it.
            assert!(
                waits.contains(&"BTREE_INSERT_FLOW_CONTROL"),
                "{design}: {waits:?}"
            );
        } else {
            assert!(!waits.contains(&"BTREE_INSERT_FLOW_CONTROL"), "{waits:?}");
        }
        let check = json(&hotpage(&["check", "--db", db, "--json"]));
        let text = check.to_string();
        let table = &check["tables"][0];
        assert_eq!(table["ok"], true, "{design}: {text}");
        assert_eq!(table["trees"], trees, "{design}: {text}");
        assert_eq!(table["rows_tree"], 40_000, "{design}: {text}");
        let plain = hotpage(&["check", "--db", db]);
        assert!(plain.status.success(), "{design}: check failed");
        assert!(String::from_utf8_lossy(&plain.stdout).contains("No faults found."));
    }
}

#[test]
fn zero_partitions_or_admitted_sessions_is_one_usage_line() {
    for (design, option) in [
        ("hash-partition", "--partitions"),
        ("identity-flow-control", "--flow-control-sessions"),
    ] {
        let out = hotpage(&["stress", "--design", design, option, "0", "--rows", "1"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr:?}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(option),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn crashtest_loses_nothing_for_both_designs() {
    for design in ["hash-partition", "identity-flow-control"] {
        crashtest_loses_nothing(design, &[]);
    }
}

#[test]
fn memory_stress_then_check_inspect_and_a_damaged_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let db = s(&db);
    let report = stress_8x5000("memory", db, &[]);
    assert_eq!(report["index"]["rows_in_table"], 40_000);
    assert_eq!(report["index"]["pages"], 0);
    assert_eq!(report["memory"]["rows"], 40_000);
    assert_eq!(report["memory"]["key_bytes"], 40_000 * 8);
    assert_eq!(report["memory"]["row_bytes"], 40_000 * 40);
    // No page latch, no page: no wait but the log's.
    for wait in report["waits"].as_array().expect("waits") {
        let name = wait["type"].as_str().unwrap_or("");
        assert!(
            !name.starts_with("PAGELATCH") && !name.starts_with("PAGEIOLATCH"),
            "{name}"
        );
    }
    assert!(report["hot_pages"].as_array().expect("hot").is_empty());

    let check = json(&hotpage(&["check", "--db", db, "--json"]));
    let text = check.to_string();
    let table = &check["tables"][0];
    assert_eq!(table["ok"], true, "{text}");
    assert_eq!(table["trees"], 0, "{text}");
    assert_eq!(table["pages"], 0, "{text}");
    assert_eq!(table["rows_tree"], 40_000, "{text}");
    assert_eq!(table["rows_catalog"], 40_000, "{text}");
    assert_eq!(table["memory_file"], "mem.0", "{text}");
    let file_bytes = table["memory_file_bytes"].as_u64().expect("file bytes");
    let on_disk = std::fs::metadata(dir.path().join("db").join("mem.0"))
        .expect("mem.0")
        .len();
    assert_eq!(file_bytes, on_disk, "{text}");
    // Every row is in the file after the clean close: 8-byte header and checksum, a
    // key-length byte, the key and the row per frame, after a 16-byte file header.
    assert_eq!(file_bytes, 16 + 40_000 * (8 + 1 + 8 + 40));
    let plain = hotpage(&["check", "--db", db]);
    assert!(plain.status.success(), "check failed");
    let stdout = String::from_utf8_lossy(&plain.stdout);
    assert!(stdout.contains("No faults found."), "{stdout}");
    assert!(stdout.contains("40000 in memory"), "{stdout}");

    let index = json(&hotpage(&[
        "inspect", "index", "memory", "--db", db, "--json",
    ]));
    assert_eq!(index["memory_optimized"], true);
    assert_eq!(index["pages"], 0);
    assert_eq!(index["rows"], 40_000);
    assert_eq!(index["file_bytes"], file_bytes);
    let tables = json(&hotpage(&["inspect", "tables", "--db", db, "--json"]));
    assert_eq!(tables["tables"][0]["root_page"], serde_json::Value::Null);
    assert_eq!(tables["tables"][0]["memory_bytes"], 40_000 * 48);
    let plain = hotpage(&["inspect", "index", "memory", "--db", db]);
    assert!(plain.status.success());
    assert!(String::from_utf8_lossy(&plain.stdout).contains("no pages"));

    // One flipped byte inside the durable part of the file: a typed error naming the file,
    // exit 7, one line, no panic.
    let path = dir.path().join("db").join("mem.0");
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[1000] ^= 0x20;
    std::fs::write(&path, &bytes).expect("write");
    let out = hotpage(&["check", "--db", db]);
    assert_one_line_error(&out, 7, "mem.0");
}

#[test]
fn crashtest_loses_nothing_for_memory_with_checkpoints_before_the_kill() {
    // Transactions of 3 rows, and a checkpoint every MiB of log before the kills.
    let report = crashtest_loses_nothing("memory", &["--batch", "3", "--checkpoint-mib", "1"]);
    assert_eq!(report["checkpoint_mib"], 1);
}
