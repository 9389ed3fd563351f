//! `hotpage inspect`, `hotpage check` and the errors a user meets, run as a user runs them:
//! the real binary against databases built by `hotpage stress`.

use std::path::Path;
mod common;
use common::*;

/// A closed database with an `identity` table (sessions x rows) and a `guid` table.
fn build_db(path: &Path, page_size: &str, identity_rows: &str, guid_rows: &str) {
    for (design, rows) in [("identity", identity_rows), ("guid", guid_rows)] {
        json(&hotpage(&[
            "stress",
            "--design",
            design,
            "--sessions",
            "2",
            "--rows",
            rows,
            "--page-size",
            page_size,
            "--pool-mib",
            "8",
            "--db",
            s(path),
            "--json",
        ]));
    }
}

#[test]
fn inspect_tables_index_and_page_show_the_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    build_db(&db, "8192", "3000", "3000");

    let tables = json(&hotpage(&["inspect", "tables", "--db", s(&db), "--json"]));
    let list = tables["tables"].as_array().expect("tables");
    let got: Vec<_> = list
        .iter()
        .map(|t| (t["name"].clone(), t["design"].clone(), t["rows"].clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("identity".into(), "identity".into(), 6000.into()),
            ("guid".into(), "guid".into(), 6000.into()),
        ]
    );

    // Index physical stats: ascending keys fill pages in file order, random keys do not.
    let identity = json(&hotpage(&[
        "inspect",
        "index",
        "identity",
        "--db",
        s(&db),
        "--json",
    ]));
    let guid = json(&hotpage(&[
        "inspect",
        "index",
        "guid",
        "--db",
        s(&db),
        "--json",
    ]));
    for index in [&identity, &guid] {
        assert_eq!(index["rows"], 6000);
        let per_level: Vec<u64> = index["pages_per_level"]
            .as_array()
            .expect("per level")
            .iter()
            .map(|n| n.as_u64().expect("count"))
            .collect();
        assert_eq!(
            per_level.len() as u64,
            index["levels"].as_u64().expect("levels")
        );
        assert_eq!(
            per_level.iter().sum::<u64>(),
            index["pages"].as_u64().expect("pages")
        );
        assert_eq!(per_level.last(), Some(&1), "one root");
    }
    let frag = |i: &serde_json::Value| i["fragmentation_pct"].as_f64().expect("fragmentation");
    assert!(frag(&identity) < 10.0, "identity: {identity}");
    assert!(frag(&guid) > 50.0, "guid: {guid}");
    assert!(identity["avg_fill_pct"].as_f64().expect("fill") > 85.0);

    // DBCC PAGE: the file header, the identity root (inner) and its leftmost leaf.
    let header = json(&hotpage(&[
        "inspect",
        "page",
        "0:0",
        "--db",
        s(&db),
        "--json",
    ]));
    assert_eq!(header["header"]["page_type"], "file-header");
    assert_eq!(header["checksum_ok"], true);
    assert_eq!(header["slots"][0]["key"], "HOTPAGE");
    // The slot's key head: the magic's first four bytes, "HOTP".
    assert_eq!(header["slots"][0]["head_hex"], "484f5450");
    assert_eq!(header["slots"][0]["page_size"], 8192);
    let root_page = list[0]["root_page"].as_u64().expect("root");
    let root = json(&hotpage(&[
        "inspect",
        "page",
        &format!("0:{root_page}"),
        "--db",
        s(&db),
        "--json",
    ]));
    assert_eq!(root["header"]["page_type"], "inner");
    assert_eq!(root["table"], "identity");
    assert_eq!(root["checksum_ok"], true);
    let slots = root["slots"].as_array().expect("slots");
    assert!(!slots.is_empty());
    // Separators decode as identity values, ascending, each with a child.
    let seps: Vec<i64> = slots
        .iter()
        .map(|s| {
            s["key"]
                .as_str()
                .expect("key")
                .parse()
                .expect("integer key")
        })
        .collect();
    assert!(seps.windows(2).all(|w| w[0] < w[1]), "{seps:?}");
    assert!(slots.iter().all(|s| s["child"].is_u64()));
    let mut leftmost = root["header"]["leftmost_child"].as_u64().expect("leftmost");
    // Descend to level 0 along the leftmost children.
    let leaf = loop {
        let page = json(&hotpage(&[
            "inspect",
            "page",
            &leftmost.to_string(),
            "--db",
            s(&db),
            "--json",
        ]));
        if page["header"]["page_type"] == "leaf" {
            break page;
        }
        leftmost = page["header"]["leftmost_child"].as_u64().expect("leftmost");
    };
    assert_eq!(leaf["table"], "identity");
    assert_eq!(leaf["slots"][0]["key"], "1", "the first identity value");
    // Identity keys are order-preserving 8-byte integers (sign bit flipped): the head is
    // their high half.
    assert_eq!(leaf["slots"][0]["head_hex"], "80000000");
    assert_eq!(leaf["slots"][0]["row_bytes"], 40);
    let n = leaf["header"]["slot_count"].as_u64().expect("slots") as usize;
    assert_eq!(leaf["slots"].as_array().expect("slots").len(), n);
    // Each record's hex is key-length byte, key, row: 1 + 8 + 40 bytes.
    assert_eq!(leaf["slots"][0]["hex"].as_str().expect("hex").len(), 2 * 49);

    // The text form names the same things.
    let text = hotpage(&["inspect", "page", &format!("0:{root_page}"), "--db", s(&db)]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("table identity") && text.contains("-> child"),
        "{text}"
    );
}

#[test]
fn inspect_waits_shows_the_last_stress_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    {
        // A database no stress run has touched.
        let options = hotpage::Options {
            pool_bytes: 1 << 20,
            ..hotpage::Options::default()
        };
        let d = hotpage::Database::open(&db, options).expect("open");
        d.close().expect("close");
    }
    let none = json(&hotpage(&["inspect", "waits", "--db", s(&db), "--json"]));
    assert_eq!(none["recorded"], false);
    let run = json(&hotpage(&[
        "stress",
        "--design",
        "identity",
        "--sessions",
        "8",
        "--rows",
        "20000",
        // Without a log the sessions meet at the last page all the time (under sync a
        // small commit group returns from its flush staggered: log/group.rs).
        "--durability",
        "none",
        "--pool-mib",
        "8",
        "--db",
        s(&db),
        "--json",
    ]));
    let waits = json(&hotpage(&["inspect", "waits", "--db", s(&db), "--json"]));
    assert_eq!(waits["recorded"], true);
    assert_eq!(waits["run"]["design"], "identity");
    assert_eq!(waits["run"]["rows_total"], 160000);
    assert_eq!(waits["waits"], run["waits"]);
    assert_eq!(waits["hot_pages"], run["hot_pages"]);
    // Hot pages name their table and page type, and inspect page agrees on the type.
    let hot = run["hot_pages"].as_array().expect("hot pages");
    assert!(
        !hot.is_empty(),
        "8 sessions on one last page waited somewhere"
    );
    for p in hot {
        assert_eq!(p["table"], "identity", "{p}");
        let page = json(&hotpage(&[
            "inspect",
            "page",
            &format!("0:{}", p["page"]),
            "--db",
            s(&db),
            "--json",
        ]));
        assert_eq!(page["header"]["page_type"], p["page_type"], "{p}");
    }
    let text = hotpage(&["inspect", "waits", "--db", s(&db)]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("Top waits") && text.contains("Hottest pages"),
        "{text}"
    );
}

fn flip_byte(file: &Path, at: u64) {
    let mut bytes = std::fs::read(file).expect("read data.0");
    bytes[at as usize] ^= 0x5a;
    std::fs::write(file, bytes).expect("write data.0");
}

/// Rewrites data.0's header page (4,096 bytes) as a binary of format `version` would have
/// written it: the version word in its record; before format 5 its 4-byte slot left the
/// four bytes after it (a key head now) zero. The checksum is resealed, so only the version
/// can refuse it.
fn rewrite_header_version(file: &Path, version: u32) {
    let mut bytes = std::fs::read(file).expect("read data.0");
    let record = usize::from(u16::from_le_bytes([bytes[64], bytes[65]]));
    let key_len = usize::from(bytes[record]);
    let at = record + 1 + key_len;
    bytes[at..at + 4].copy_from_slice(&version.to_le_bytes());
    if version < 5 {
        bytes[68..72].fill(0);
    }
    let crc = crc32c::crc32c(&bytes[4..4096]);
    bytes[..4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(file, bytes).expect("write data.0");
}

/// A database of a format this binary does not read is exit 6 with what to do, whichever
/// side it is on: formats 3 and 4 (4-byte slots) are too old, a future one too new.
#[test]
fn a_database_of_another_format_is_exit_6_and_says_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    build_db(&db, "4096", "200", "50");
    let data = db.join("data.0");
    let intact = std::fs::read(&data).expect("read data.0");
    for (version, says) in [
        (
            3,
            "older than this binary reads (5): its pages have 4-byte slots",
        ),
        (4, "older than this binary reads (5)"),
        (6, "newer than this binary supports (5); upgrade hotpage"),
    ] {
        rewrite_header_version(&data, version);
        for command in [
            &["check", "--db", s(&db)][..],
            &["sql", "--db", s(&db), "-c", "SELECT 1"],
        ] {
            let out = hotpage(command);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(6),
                "format {version}, {command:?}: {stderr}"
            );
            assert!(stderr.contains(says), "format {version}: {stderr}");
        }
        std::fs::write(&data, &intact).expect("restore data.0");
    }
    assert!(hotpage(&["check", "--db", s(&db)]).status.success());
}

#[test]
fn check_passes_an_intact_database_and_names_every_damaged_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    build_db(&db, "4096", "1500", "300");
    let intact = json(&hotpage(&["check", "--db", s(&db), "--json"]));
    assert_eq!(intact["ok"], true, "{intact}");
    assert_eq!(intact["faults"].as_array().expect("faults").len(), 0);
    for t in intact["tables"].as_array().expect("tables") {
        assert_eq!(t["rows_catalog"], t["rows_tree"], "{t}");
    }
    let text = hotpage(&["check", "--db", s(&db)]);
    assert!(text.status.success());
    assert!(String::from_utf8_lossy(&text.stdout).contains("No faults found."));

    let data = db.join("data.0");
    let pages = std::fs::metadata(&data).expect("data.0").len() / 4096;
    assert_eq!(pages, intact["pages_checked"].as_u64().expect("pages"));
    assert!(pages >= 20, "only {pages} pages");
    // The sample covers the header page, inner pages and leaves.
    let mut types = std::collections::BTreeSet::new();
    for page in [0, 1, 2] {
        let p = json(&hotpage(&[
            "inspect",
            "page",
            &page.to_string(),
            "--db",
            s(&db),
            "--json",
        ]));
        types.insert(p["header"]["page_type"].as_str().expect("type").to_string());
    }
    assert_eq!(
        types.into_iter().collect::<Vec<_>>(),
        vec!["file-header", "inner", "leaf"]
    );

    for page in 0..pages {
        // Page 0: a byte of its free space (its magic and version are checked before the
        // checksum, as "not a database" and "format too new"). Others: anywhere.
        let offset = if page == 0 {
            1000
        } else {
            (page * 389 + 7) % 4096
        };
        flip_byte(&data, page * 4096 + offset);
        let out = hotpage(&["check", "--db", s(&db), "--json"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(7), "page {page}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let named = if report["opened"] == false {
            // The header page is read when the database opens: the JSON says why not.
            let error = report["error"].as_str().expect("error");
            stderr.contains(&format!("corrupt page {page} "))
                && error.contains(&format!("corrupt page {page} "))
                && report["exit_code"] == 7
        } else {
            report["ok"] == false
                && report["faults"]
                    .as_array()
                    .expect("faults")
                    .iter()
                    .any(|f| f["page"] == page && f["kind"] == "page")
        };
        assert!(
            named,
            "page {page} not named: {stderr} {}",
            String::from_utf8_lossy(&out.stdout)
        );
        flip_byte(&data, page * 4096 + offset);
    }
    assert_eq!(
        json(&hotpage(&["check", "--db", s(&db), "--json"]))["ok"],
        true
    );
}

#[test]
fn errors_a_user_meets_have_distinct_codes_and_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 3: not a hotpage database (a directory of other files, a missing path, a file).
    let other = dir.path().join("photos");
    std::fs::create_dir(&other).expect("mkdir");
    std::fs::write(other.join("cat.jpg"), b"meow").expect("write");
    for path in [
        other.clone(),
        dir.path().join("missing"),
        other.join("cat.jpg"),
    ] {
        assert_one_line_error(
            &hotpage(&["inspect", "tables", "--db", s(&path)]),
            3,
            "not a hotpage database",
        );
        assert_one_line_error(
            &hotpage(&["check", "--db", s(&path)]),
            3,
            "not a hotpage database",
        );
    }
    assert!(
        !dir.path().join("missing").exists(),
        "inspect created a database"
    );

    let db = dir.path().join("db");
    json(&hotpage(&[
        "stress",
        "--rows",
        "500",
        "--sessions",
        "2",
        "--pool-mib",
        "8",
        "--db",
        s(&db),
        "--json",
    ]));
    // 4: no such table, page or file.
    assert_one_line_error(
        &hotpage(&["inspect", "index", "orders", "--db", s(&db)]),
        4,
        "no table named \"orders\"",
    );
    assert_one_line_error(
        &hotpage(&["inspect", "page", "0:999999", "--db", s(&db)]),
        4,
        "no page 0:999999",
    );
    assert_one_line_error(
        &hotpage(&["inspect", "page", "3:1", "--db", s(&db)]),
        4,
        "no file 3",
    );
    assert_one_line_error(
        &hotpage(&["inspect", "page", "x:y", "--db", s(&db)]),
        2,
        "FILE:PAGE",
    );

    // 5: open in another process (here: this test process holds it).
    {
        let options = hotpage::Options {
            pool_bytes: 1 << 20,
            create_if_missing: false,
            ..hotpage::Options::default()
        };
        let held = hotpage::Database::open(&db, options).expect("open");
        assert_one_line_error(
            &hotpage(&["inspect", "tables", "--db", s(&db)]),
            5,
            "in use",
        );
        assert_one_line_error(&hotpage(&["check", "--db", s(&db)]), 5, "in use");
        assert_one_line_error(
            &hotpage(&["stress", "--rows", "1", "--db", s(&db)]),
            5,
            "in use",
        );
        drop(held);
    }
    json(&hotpage(&["inspect", "tables", "--db", s(&db), "--json"]));

    // 6: written by a newer format: the catalog's version field (bytes 8..12), CRC fixed.
    let catalog = db.join("catalog");
    let mut bytes = std::fs::read(&catalog).expect("catalog");
    let body = bytes.len() - 4;
    bytes[8..12].copy_from_slice(&99u32.to_le_bytes());
    let crc = crc32c::crc32c(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&catalog, &bytes).expect("write catalog");
    assert_one_line_error(
        &hotpage(&["inspect", "tables", "--db", s(&db)]),
        6,
        "format version 99",
    );
    assert_one_line_error(
        &hotpage(&["stress", "--rows", "1", "--db", s(&db)]),
        6,
        "upgrade",
    );

    // The codes are documented in --help.
    let help = hotpage(&["--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    for needle in [
        "Exit codes",
        "3  the path is not a hotpage database",
        "5  ",
        "7  corruption",
    ] {
        assert!(help.contains(needle), "help lacks {needle:?}: {help}");
    }
}

/// A database on `MemStorage` with a table `kept` (one row) whose second table's creation
/// failed: at the catalog's write (`fail_stop` false: the database goes on, checkpoints
/// and closes) or at the data file's first write (`fail_stop` true: the database is
/// dropped, fail-stopped). Its files are copied into `dir` for the binary to check.
fn database_after_a_failed_create(dir: &Path, layout: hotpage::Layout, fail_stop: bool) {
    use hotpage::{Database, KeyKind, Options};
    use hotpage::{MemStorage, Storage};
    use std::sync::Arc;
    let identity = KeyKind::Identity { start: 1, step: 1 };
    let open = |mem: &Arc<MemStorage>| {
        let storage = Arc::clone(mem) as Arc<dyn Storage>;
        // A small pool: a debug build formats every frame of it at open. No write may
        // follow the wall clock (the durable-end mark, a timed checkpoint): the dry run's
        // write count must be the real run's, or the injected failure hits another write
        // (it did on a loaded CI machine, 2026-12-06).
        let options = Options {
            page_size: 4096,
            pool_bytes: 64 * 4096,
            durable_marks: false,
            checkpoint_interval: std::time::Duration::from_secs(3600),
            ..Options::default()
        };
        Database::open_with_storage(storage, Path::new("m"), options).expect("open")
    };
    let first_table = |db: &Database| {
        let kept = db
            .create_table("kept", "identity", identity)
            .expect("create");
        db.session().insert(&kept, b"kept row").expect("insert");
    };
    // A dry run counts the creation's writes: the catalog's is the last.
    let dry = MemStorage::new(1);
    let db = open(&dry);
    first_table(&db);
    let before = dry.write_count();
    db.create_table_with_layout("doomed", "doomed", identity, layout)
        .expect("create");
    let creation_writes = dry.write_count() - before;

    let mem = MemStorage::new(1);
    let db = open(&mem);
    first_table(&db);
    mem.fail_writes_after(Some(if fail_stop { 0 } else { creation_writes - 1 }));
    let created = db.create_table_with_layout("doomed", "doomed", identity, layout);
    mem.fail_writes_after(None);
    assert!(created.is_err());
    if fail_stop {
        assert!(db.checkpoint().is_err(), "not fail-stopped");
        drop(db);
    } else {
        db.checkpoint().expect("checkpoint");
        db.close().expect("close");
    }
    for name in mem.list().expect("list") {
        let file = mem.open(&name, false).expect("open file");
        let mut bytes = vec![0u8; usize::try_from(file.len().expect("len")).expect("size")];
        file.read_at(&mut bytes, 0).expect("read");
        std::fs::write(dir.join(&name), bytes).expect("write");
    }
}

#[test]
fn the_pages_of_a_failed_create_are_warnings_not_faults() {
    use hotpage::Layout;
    // (layout, fail-stop, pages its creation allocates and leaks)
    let cases = [
        (Layout::Clustered, false, 1),
        (Layout::HashPartitioned { partitions: 3 }, false, 3),
        (Layout::HeapIndexed { chains: 1 }, false, 2),
        (Layout::Clustered, true, 0),
    ];
    for (layout, fail_stop, leaked) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        database_after_a_failed_create(dir.path(), layout, fail_stop);
        let db = s(dir.path());
        let report = json(&hotpage(&["check", "--db", db, "--json"]));
        assert_eq!(report["ok"], true, "{layout:?}: {report}");
        let tables: Vec<&str> = report["tables"]
            .as_array()
            .expect("tables")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(tables, ["kept"], "{layout:?}: {report}");
        let warnings = report["warnings"].as_array().expect("warnings");
        assert_eq!(warnings.len(), leaked, "{layout:?}: {report}");
        assert!(warnings.iter().all(|w| w["kind"] == "leaked"), "{report}");
        let text = hotpage(&["check", "--db", db]);
        let stdout = String::from_utf8_lossy(&text.stdout);
        assert!(text.status.success(), "{stdout}");
        assert!(stdout.contains("No faults found."), "{stdout}");
        if leaked > 0 {
            assert!(stdout.contains(&format!("{leaked} warnings:")), "{stdout}");
        }
    }
}
