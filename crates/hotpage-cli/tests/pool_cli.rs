//! Issue 9, item 3, as a user ran it: 64 sessions through a 1 MiB pool of 64 KiB pages (16
//! frames). Formerly the run stopped with "the log failed"; now the sessions wait for frames
//! (`FREE_BUFFER`, in the report), every row arrives, and `hotpage check` passes.
//!
//! The run has 2000 rows of 40 bytes per session. Rows of 1000 bytes outgrow the
//! pool after far fewer rows (the old binary failed from 40 rows per session on), which
//! keeps a debug build's run short.

mod common;
use common::*;

#[test]
fn sixty_four_sessions_through_a_one_mib_pool_complete_and_check_clean() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let report = json(&hotpage(&[
        "stress",
        "--design",
        "guid",
        "--pool-mib",
        "1",
        "--page-size",
        "65536",
        "--sessions",
        "64",
        "--rows",
        "60",
        "--row-bytes",
        "1000",
        "--db",
        s(&db),
        "--json",
    ]));
    assert_eq!(report["rows_total"], 64 * 60, "{report}");
    assert_eq!(report["index"]["rows_in_table"], 64 * 60, "{report}");
    let waits = report["waits"].as_array().expect("waits");
    let free_buffer = waits
        .iter()
        .find(|w| w["type"] == "FREE_BUFFER")
        .unwrap_or_else(|| panic!("no FREE_BUFFER wait in {waits:?}"));
    assert!(free_buffer["count"].as_u64().expect("count") > 0);

    let check = hotpage(&["check", "--db", s(&db)]);
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "check failed: {stdout}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(stdout.contains("No faults found"), "{stdout}");
}
