//! Several data files (`stress --files F`) as a user meets them: the files on disk, the
//! report, `check` over every file, `inspect page data.N:P`, damage and a missing file.

mod common;
use common::*;
use std::path::Path;

const PAGE: u64 = 8192;

fn file_pages(db: &Path, file: u32) -> u64 {
    let data = db.join(format!("data.{file}"));
    std::fs::metadata(&data)
        .unwrap_or_else(|e| panic!("{}: {e}", data.display()))
        .len()
        / PAGE
}

#[test]
fn four_data_files_hold_pages_pass_check_and_show_in_inspect() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let run = [
        "stress",
        "--design",
        "identity",
        "--files",
        "4",
        "--sessions",
        "4",
        "--rows",
        "2000",
        "--db",
        s(&db),
        "--json",
    ];
    let r = json(&hotpage(&run));
    assert_eq!(r["files"], 4, "{r}");
    assert_eq!(r["rows_total"], 8000);
    for p in r["hot_pages"].as_array().expect("hot_pages") {
        assert!(p["file"].as_u64().expect("file") < 4, "{p}");
    }

    // data.0 … data.3, each with pages past its header; no data.4.
    for file in 0..4 {
        assert!(file_pages(&db, file) > 1, "data.{file} holds no page");
    }
    assert!(!db.join("data.4").exists());

    let check = json(&hotpage(&["check", "--db", s(&db), "--json"]));
    assert_eq!(check["ok"], true, "{check}");
    assert_eq!(check["files"], 4);
    let per_file: Vec<u64> = check["pages_per_file"]
        .as_array()
        .expect("pages_per_file")
        .iter()
        .map(|n| n.as_u64().expect("pages"))
        .collect();
    assert_eq!(
        per_file,
        (0..4).map(|f| file_pages(&db, f)).collect::<Vec<_>>()
    );
    assert_eq!(
        per_file.iter().sum::<u64>(),
        check["pages_checked"].as_u64().expect("pages_checked")
    );
    // Proportional fill over equal files: no file is more than a few pages ahead.
    let (min, max) = (per_file.iter().min(), per_file.iter().max());
    assert!(
        max.zip(min).is_some_and(|(a, b)| a - b <= 4),
        "{per_file:?}"
    );
    let text = hotpage(&["check", "--db", s(&db)]);
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("in 4 data files"), "{text}");

    // A page of the last file, by file name and by number.
    let page = json(&hotpage(&[
        "inspect",
        "page",
        "data.3:1",
        "--db",
        s(&db),
        "--json",
    ]));
    assert_eq!(page["file"], 3);
    assert_eq!(page["page"], 1);
    assert_eq!(page["checksum_ok"], true, "{page}");
    assert_eq!(page["table"], "identity", "{page}");
    let same = json(&hotpage(&[
        "inspect",
        "page",
        "3:1",
        "--db",
        s(&db),
        "--json",
    ]));
    assert_eq!(same["header"], page["header"]);
    // The page id in the header is the whole id; as a bare number it names the same page.
    let id = page["header"]["page_id"].as_u64().expect("page_id");
    let by_id = json(&hotpage(&[
        "inspect",
        "page",
        &id.to_string(),
        "--db",
        s(&db),
        "--json",
    ]));
    assert_eq!(
        (&by_id["file"], &by_id["page"]),
        (&page["file"], &page["page"])
    );
    let text = hotpage(&["inspect", "page", "data.3:1", "--db", s(&db)]);
    assert!(text.status.success());
    assert!(String::from_utf8_lossy(&text.stdout).contains("Page 3:1 of"));

    // Each file's header names the file and the count.
    let header = json(&hotpage(&[
        "inspect",
        "page",
        "data.2:0",
        "--db",
        s(&db),
        "--json",
    ]));
    assert_eq!(header["header"]["page_type"], "file-header");
    assert_eq!(header["slots"][0]["file_number"], 2);
    assert_eq!(header["slots"][0]["file_count"], 4);

    // The root, wherever it is, is reachable from `inspect tables`.
    let tables = json(&hotpage(&["inspect", "tables", "--db", s(&db), "--json"]));
    let t = &tables["tables"][0];
    let root = format!("{}:{}", t["root_file"], t["root_page"]);
    let root = json(&hotpage(&[
        "inspect",
        "page",
        &root,
        "--db",
        s(&db),
        "--json",
    ]));
    assert_eq!(root["table"], "identity", "{root}");

    // Past the files or their ends: exit 4, one line.
    assert_one_line_error(
        &hotpage(&["inspect", "page", "data.4:1", "--db", s(&db)]),
        4,
        "4 data files",
    );
    let past = format!("data.1:{}", per_file[1]);
    assert_one_line_error(
        &hotpage(&["inspect", "page", &past, "--db", s(&db)]),
        4,
        "data.1 has",
    );

    // The count is the database's: a later run asking for one file still uses four.
    let mut again = run;
    again[4] = "1";
    assert_eq!(json(&hotpage(&again))["files"], 4);
    assert!(!db.join("data.4").exists());
}

#[test]
fn check_finds_damage_in_a_later_file_and_a_missing_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    json(&hotpage(&[
        "stress",
        "--design",
        "guid",
        "--files",
        "3",
        "--sessions",
        "2",
        "--rows",
        "1500",
        "--db",
        s(&db),
        "--json",
    ]));
    assert_eq!(
        json(&hotpage(&["check", "--db", s(&db), "--json"]))["ok"],
        true
    );
    // Damage page 1 of data.2.
    let data = db.join("data.2");
    let mut bytes = std::fs::read(&data).expect("read data.2");
    let at = (PAGE + 3000) as usize;
    bytes[at] ^= 0x5a;
    std::fs::write(&data, &bytes).expect("write data.2");
    let out = hotpage(&["check", "--db", s(&db), "--json"]);
    assert_eq!(out.status.code(), Some(7));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(
        report["faults"]
            .as_array()
            .expect("faults")
            .iter()
            .any(|f| f["kind"] == "page" && f["file"] == 2 && f["page"] == 1),
        "{report}"
    );
    bytes[at] ^= 0x5a;
    std::fs::write(&data, &bytes).expect("restore data.2");
    assert_eq!(
        json(&hotpage(&["check", "--db", s(&db), "--json"]))["ok"],
        true
    );

    // A missing data file: a damaged database (exit 7), naming the file.
    std::fs::remove_file(&data).expect("remove data.2");
    assert_one_line_error(&hotpage(&["check", "--db", s(&db)]), 7, "data.2 is missing");
    assert_one_line_error(
        &hotpage(&["stress", "--rows", "1", "--db", s(&db)]),
        7,
        "data.2 is missing",
    );
}

#[test]
fn files_out_of_range_is_one_usage_line_and_help_explains_it() {
    for bad in ["0", "65"] {
        assert_one_line_error(
            &hotpage(&["stress", "--files", bad, "--rows", "1"]),
            2,
            "--files must be from 1 to 64",
        );
        assert_one_line_error(
            &hotpage(&["crashtest", "--files", bad, "--trials", "1"]),
            2,
            "--files must be from 1 to 64",
        );
    }
    assert_one_line_error(&hotpage(&["stress", "--files", "many"]), 2, "--files");
    let help = hotpage(&["stress", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    for needle in ["--files", "proportional fill", "Seed 002"] {
        assert!(help.contains(needle), "help lacks {needle:?}: {help}");
    }
}
