//! The `hash-partition` and `identity-flow-control` designs from the command line: a stress
//! run kept in a database that `hotpage check` then passes (every partition's tree), the
//! flow-control wait in the report, zero-valued options as one usage line, and a
//! kill-and-recover crash test with nothing lost and no partial transaction.

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
        let mut args = vec![
            "stress",
            "--design",
            design,
            "--sessions",
            "8",
            "--rows",
            "5000",
            "--db",
            db,
            "--json",
        ];
        args.extend(extra);
        let report = json(&hotpage(&args));
        assert_eq!(report["design"], design);
        assert_eq!(report["rows_total"], 40_000);
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
        let out = hotpage(&[
            "crashtest",
            "--design",
            design,
            "--trials",
            "2",
            "--sessions",
            "4",
            "--seed",
            "5",
            "--json",
        ]);
        let report = json(&out);
        assert_eq!(report["design"], design);
        assert!(report["rows_acknowledged"].as_u64().expect("acked") > 0);
        assert_eq!(report["rows_lost"], 0, "{design}: {report}");
        assert_eq!(report["partial_transactions"], 0, "{design}: {report}");
        assert_eq!(report["check_failures"], 0, "{design}: {report}");
    }
}
