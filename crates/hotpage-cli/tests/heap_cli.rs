//! The heap designs from the command line: seed 002's fill figures from the free-space map's
//! categories, the `fsm` report, `stress` then `check` and `inspect index`, row-size limits,
//! and a kill-and-recover crash test with nothing lost.

mod common;
use common::*;

/// Seed 002: one session, durable autocommit rows of a fixed size into an empty heap. The
/// page count and fill follow from the category rule (a page "up to 80 %" full takes no
/// row over 20 % of a page), as in the seed's table (2000 bytes: 3 rows a page, 74 %).
#[test]
fn row_size_sets_heap_fill_as_in_seed_002() {
    // (row bytes, rows per page, fill % range)
    for (row_bytes, per_page, fill) in [(2000u64, 3u64, 73.0..76.0), (4000, 2, 97.0..100.0)] {
        let out = hotpage(&[
            "stress",
            "--design",
            "heap",
            "--sessions",
            "1",
            "--rows",
            "600",
            "--row-bytes",
            &row_bytes.to_string(),
            "--durability",
            "none",
            "--json",
        ]);
        let r = json(&out);
        assert_eq!(r["index"]["rows_in_table"], 600);
        // The first page is the chain's head, empty-created with the table.
        assert_eq!(r["index"]["pages"], 600 / per_page, "{row_bytes}: {r}");
        let pct = r["index"]["avg_fill_pct"].as_f64().expect("fill");
        assert!(fill.contains(&pct), "{row_bytes}-byte rows: fill {pct}");
        // Each page's map entry changes at least twice (registered, then fuller).
        let updates = r["fsm"]["updates"].as_u64().expect("updates");
        assert!(updates >= 2 * (600 / per_page), "{updates}");
        assert!(r["fsm"]["waits"].as_u64().is_some());
    }
}

#[test]
fn stress_then_check_and_inspect_for_both_heap_designs() {
    for (design, index) in [("heap", false), ("heap-nc-identity", true)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("db");
        let db = s(&db);
        let report = stress_8x5000(design, db, &[]);
        assert_eq!(report["index"]["rows_in_table"], 40_000, "{design}");
        assert!(report["fsm"]["updates"].as_u64().expect("fsm") > 0);
        let check = json(&hotpage(&["check", "--db", db, "--json"]));
        let table = &check["tables"][0];
        assert_eq!(table["ok"], true, "{design}: {check}");
        assert_eq!(table["rows_tree"], 40_000, "{design}: {check}");
        assert_eq!(table["heap_chains"], 1, "{design}: {check}");
        let inspect = json(&hotpage(&[
            "inspect", "index", design, "--db", db, "--json",
        ]));
        let heap = &inspect["heap"];
        assert_eq!(heap["chains"], 1, "{inspect}");
        let categories: u64 = ["empty", "le_50_pct", "le_80_pct", "le_95_pct", "full"]
            .iter()
            .map(|c| heap["fsm_categories"][c].as_u64().expect("category"))
            .sum();
        assert_eq!(Some(categories), inspect["pages"].as_u64(), "{inspect}");
        assert_eq!(heap["index"].is_null(), !index, "{inspect}");
        if index {
            assert_eq!(heap["index"]["rows"], 40_000, "{inspect}");
        }
        let text = hotpage(&["inspect", "index", design, "--db", db]);
        assert!(String::from_utf8_lossy(&text.stdout).contains("free-space map"));
    }
}

#[test]
fn a_row_larger_than_a_heap_page_is_one_usage_line() {
    let out = hotpage(&[
        "stress",
        "--design",
        "heap",
        "--row-bytes",
        "9000",
        "--rows",
        "1",
    ]);
    assert_one_line_error(&out, 2, "--row-bytes 9000");
    // 4000 bytes is a heap row but not a B+tree row.
    let out = hotpage(&[
        "stress",
        "--design",
        "identity",
        "--row-bytes",
        "4000",
        "--rows",
        "1",
    ]);
    assert_one_line_error(&out, 2, "--row-bytes 4000");
}

#[test]
fn crashtest_loses_nothing_for_both_heap_designs() {
    for design in ["heap", "heap-nc-identity"] {
        crashtest_loses_nothing(design, &[]);
    }
}

/// `stress --help` names every design the command accepts (its list is written by hand).
#[test]
fn stress_help_names_every_design() {
    let unknown = hotpage(&["stress", "--design", "no-such-design", "--rows", "1"]);
    let message = String::from_utf8_lossy(&unknown.stderr).to_string();
    let list = message
        .split("choose one of: ")
        .nth(1)
        .expect("the error lists the designs");
    let help = hotpage(&["stress", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout).to_string();
    let names: Vec<&str> = list
        .trim()
        .trim_end_matches(", or all")
        .split(", ")
        .collect();
    assert!(names.len() >= 11, "{names:?}");
    for name in names {
        assert!(help.contains(name), "stress --help does not name {name}");
    }
}
