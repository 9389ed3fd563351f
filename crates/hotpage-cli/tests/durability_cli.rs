//! Issue 9's reproductions, run as a user would: a crashed database whose log is damaged
//! in the middle, or lost a segment; `check` and `inspect` that change nothing (on a
//! read-only mount too); a creation killed early; a transaction larger than a log record;
//! `crashtest --power-loss`.

mod common;

use common::{hotpage, json, s};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every file of a directory and its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|entry| {
            let entry = entry.expect("entry");
            let name = entry.file_name().into_string().expect("utf-8");
            (name, std::fs::read(entry.path()).expect("read"))
        })
        .collect()
}

/// A database killed with SIGKILL while 4 sessions insert (async durability) once its log
/// reaches `segments` segments of 1 MiB; nothing was checkpointed after its creation, so
/// recovery needs the whole log. `extra`: more `stress` options.
fn killed_database(db: &Path, segments: usize, extra: &[&str]) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hotpage"))
        .args(["stress", "--sessions", "4", "--duration", "600"])
        .args(["--durability", "async", "--log-segment-mib", "1"])
        .args(["--row-bytes", "200", "--db", s(db)])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start stress");
    let last = db.join(format!("wal.{:016x}", segments - 1));
    let started = Instant::now();
    while !last.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the log never reached {segments} segments"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // A little more, so that the last segment has flushes (and flush marks) in it too.
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("kill");
    child.wait().expect("wait");
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn mid_log_damage_is_exit_7_changes_nothing_and_salvage_keeps_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    killed_database(&db, 4, &[]);
    let segment = db.join("wal.0000000000000001");
    let mut bytes = std::fs::read(&segment).expect("read");
    let at = bytes.len() / 2;
    bytes[at..at + 64].fill(0x5A);
    std::fs::write(&segment, &bytes).expect("damage");
    let before = files(&db);
    for args in [
        &["check", "--db", s(&db)][..],
        &["inspect", "log", "--db", s(&db)][..],
        &["inspect", "tables", "--db", s(&db)][..],
        &["recover", "--db", s(&db)][..],
    ] {
        let out = hotpage(args);
        assert_eq!(out.status.code(), Some(7), "{args:?}: {}", stderr(&out));
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(said.contains("wal.0000000000000001"), "{args:?}: {said}");
        assert_eq!(files(&db), before, "{args:?} changed a file");
    }
    assert!(stderr(&hotpage(&["check", "--db", s(&db)])).contains("corrupt log"));
    let dry_run = hotpage(&["recover", "--db", s(&db)]);
    let said = String::from_utf8_lossy(&dry_run.stdout);
    assert!(said.contains("would discard"), "{said}");
    // The damaged record's bytes: what commits they held is not known.
    assert!(said.contains("cannot be counted"), "{said}");

    let salvaged = json(&hotpage(&[
        "recover",
        "--db",
        s(&db),
        "--accept-loss",
        "--json",
    ]));
    assert_eq!(salvaged["applied"], true, "{salvaged}");
    assert_eq!(salvaged["damage"]["file"], "wal.0000000000000001");
    assert!(salvaged["discarded"]["commits"].as_u64().expect("commits") > 0);
    assert!(
        salvaged["discarded"]["unreadable_bytes"]
            .as_u64()
            .expect("unreadable")
            >= 64
    );
    let copy = db.join("salvage-1-wal.0000000000000001");
    assert_eq!(
        std::fs::read(copy).expect("copy"),
        bytes,
        "copied aside as it was"
    );
    let check = hotpage(&["check", "--db", s(&db)]);
    assert!(check.status.success(), "{}", stderr(&check));
    let more = hotpage(&["stress", "--rows", "200", "--sessions", "2", "--db", s(&db)]);
    assert!(more.status.success(), "{}", stderr(&more));
}

#[test]
fn a_missing_segment_that_recovery_needs_is_exit_7() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    killed_database(&db, 3, &[]);
    std::fs::remove_file(db.join("wal.0000000000000000")).expect("rm wal.0");
    let before = files(&db);
    let out = hotpage(&["check", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("wal.0000000000000000 at byte 0"),
        "{}",
        stderr(&out)
    );
    assert_eq!(files(&db), before, "check changed a file");
}

/// A middle segment deleted: salvage keeps the log before it (it used to fail, taking the
/// record that runs on into the gap for one that "validated a moment ago"), and says that
/// the segment's commits cannot be counted.
#[test]
fn a_missing_middle_segment_is_salvaged_and_reported_uncounted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    killed_database(&db, 4, &[]);
    std::fs::remove_file(db.join("wal.0000000000000002")).expect("rm wal.2");
    let out = hotpage(&["check", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("wal.0000000000000002"),
        "{}",
        stderr(&out)
    );
    let salvaged = json(&hotpage(&[
        "recover",
        "--db",
        s(&db),
        "--accept-loss",
        "--json",
    ]));
    assert_eq!(salvaged["applied"], true, "{salvaged}");
    let unreadable = salvaged["discarded"]["unreadable_bytes"].as_u64();
    assert!(unreadable.expect("unreadable") >= 1 << 20, "{salvaged}");
    assert_eq!(salvaged["table_faults"].as_array().map(Vec::len), Some(0));
    let check = hotpage(&["check", "--db", s(&db)]);
    assert!(check.status.success(), "{}", stderr(&check));
}

/// Two log segments swapped: `recover` names each and where it belongs, and says to put
/// them back rather than salvage; put back, `check` passes.
#[test]
fn swapped_segments_are_named_by_recover() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    killed_database(&db, 4, &[]);
    let (a, b) = (
        db.join("wal.0000000000000001"),
        db.join("wal.0000000000000002"),
    );
    let swap = || {
        std::fs::rename(&a, db.join("swap")).expect("rename");
        std::fs::rename(&b, &a).expect("rename");
        std::fs::rename(db.join("swap"), &b).expect("rename");
    };
    swap();
    let out = hotpage(&["recover", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("wal.0000000000000001 holds the records of wal.0000000000000002"),
        "{said}"
    );
    assert!(stderr(&out).contains("misplaced"), "{}", stderr(&out));
    let out = hotpage(&["recover", "--db", s(&db), "--json"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        report["misplaced_segments"].as_array().map(Vec::len),
        Some(2)
    );
    swap();
    let check = hotpage(&["check", "--db", s(&db)]);
    assert!(check.status.success(), "{}", stderr(&check));
}

/// The log's tail lost (its last segments gone: nothing in the segments before says they
/// existed): `check` finds it all the same, by the pages on disk whose changes the log no
/// longer reaches.
#[test]
fn a_log_that_lost_its_tail_is_found_by_check() {
    // A small pool: evictions write pages with recent changes all the time.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    killed_database(&db, 4, &["--design", "guid", "--pool-mib", "1"]);
    // The newest change on any page (8 KiB pages, the LSN at byte 16 of each), and every
    // segment from the one that logged it on, removed.
    let data = std::fs::read(db.join("data.0")).expect("data.0");
    let newest = data
        .chunks(8192)
        .map(|page| u64::from_le_bytes(page[16..24].try_into().expect("8 bytes")))
        .max()
        .expect("pages");
    let mut removed = 0;
    for entry in std::fs::read_dir(&db).expect("read_dir") {
        let name = entry
            .expect("entry")
            .file_name()
            .into_string()
            .expect("utf-8");
        if let Some(hex) = name.strip_prefix("wal.")
            && u64::from_str_radix(hex, 16).expect("hex") >= newest >> 20
        {
            std::fs::remove_file(db.join(&name)).expect("rm");
            removed += 1;
        }
    }
    assert!(removed > 0);
    let before = files(&db);
    let out = hotpage(&["check", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(
        said.contains("past the end of the log") || said.contains("corrupt log"),
        "{said}"
    );
    assert_eq!(files(&db), before, "check changed a file");
}

/// Runs `hotpage check` on `db` through a read-only bind mount of it (in a private mount
/// namespace), or, where that is not permitted, as an unprivileged user who can read and
/// not write the files. Fails the test if neither can be arranged.
fn check_read_only(db: &Path) -> std::process::Output {
    let exe = env!("CARGO_BIN_EXE_hotpage");
    let script = format!(
        "mount --bind -o ro '{0}' '{0}' && exec '{exe}' check --db '{0}'",
        db.display()
    );
    let mounted = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output();
    if let Ok(out) = mounted
        && !String::from_utf8_lossy(&out.stderr).contains("mount")
    {
        return out;
    }
    // No mount namespace: the files stay root's, readable by all, writable by none other.
    let status = Command::new("chmod")
        .args(["-R", "a+rX,go-w", s(db)])
        .status();
    assert!(status.is_ok_and(|s| s.success()), "chmod");
    Command::new("setpriv")
        .args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            exe,
            "check",
            "--db",
            s(db),
        ])
        .output()
        .expect("neither a read-only mount nor setpriv is available to run this test")
}

#[test]
fn check_and_inspect_change_no_byte_of_a_crashed_database_and_work_read_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    killed_database(&db, 2, &[]);
    let before = files(&db);
    for args in [
        &["check", "--db", s(&db)][..],
        &["inspect", "log", "--db", s(&db), "--json"][..],
        &["inspect", "tables", "--db", s(&db)][..],
        &["inspect", "index", "identity", "--db", s(&db)][..],
        &["inspect", "page", "0:1", "--db", s(&db)][..],
        &["recover", "--db", s(&db)][..],
    ] {
        let out = hotpage(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(files(&db), before, "{args:?} changed a file");
    }
    let log = json(&hotpage(&["inspect", "log", "--db", s(&db), "--json"]));
    assert!(
        log["recovery"]["records"].as_u64().expect("records") > 0,
        "the crash left recovery to do: {log}"
    );
    let out = check_read_only(&db);
    assert!(
        out.status.success(),
        "check on a read-only directory: {}",
        stderr(&out)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("No faults found"));
    assert_eq!(files(&db), before);
}

#[test]
fn an_interrupted_creation_is_not_a_database_until_a_creating_command_completes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    // What a kill -9 early in `stress --db D` leaves: the lock, the creation marker and an
    // empty data file.
    std::fs::create_dir(&db).expect("mkdir");
    for name in ["LOCK", "creating", "data.0"] {
        std::fs::write(db.join(name), b"").expect("file");
    }
    let out = hotpage(&["check", "--db", s(&db)]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(db.join("data.0")).expect("data.0").len(),
        0,
        "check wrote"
    );
    let out = hotpage(&["stress", "--rows", "100", "--sessions", "2", "--db", s(&db)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!db.join("creating").exists());
    assert!(hotpage(&["check", "--db", s(&db)]).status.success());
    // And real kills at the start of a creation: whatever they leave, a later command
    // opens or completes it.
    for kill_after_ms in [2, 5, 10, 20, 40] {
        let db = dir.path().join(format!("killed-{kill_after_ms}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_hotpage"))
            .args([
                "stress",
                "--sessions",
                "4",
                "--rows",
                "1000000",
                "--db",
                s(&db),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start");
        std::thread::sleep(Duration::from_millis(kill_after_ms));
        child.kill().expect("kill");
        child.wait().expect("wait");
        let out = hotpage(&["stress", "--rows", "10", "--sessions", "1", "--db", s(&db)]);
        assert!(
            out.status.success(),
            "after {kill_after_ms} ms: {}",
            stderr(&out)
        );
        assert!(hotpage(&["check", "--db", s(&db)]).status.success());
    }
}

#[test]
fn a_transaction_larger_than_a_log_record_commits() {
    // 600 rows of 16,327 bytes (the largest at 64 KiB pages): about 9.8 MB in one
    // transaction, over the 8 MiB that one record of the default 16 MiB log buffer holds.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let report = json(&hotpage(&[
        "stress",
        "--page-size",
        "65536",
        "--row-bytes",
        "16327",
        "--batch",
        "600",
        "--sessions",
        "1",
        "--rows",
        "600",
        "--db",
        s(&db),
        "--json",
    ]));
    assert_eq!(report["rows_total"], 600, "{report}");
    let log = json(&hotpage(&["inspect", "log", "--db", s(&db), "--json"]));
    let kinds = log["kinds"].as_array().expect("kinds");
    assert!(
        kinds.iter().any(|k| k["kind"] == "txn-part"),
        "logged in parts: {log}"
    );
    assert!(hotpage(&["check", "--db", s(&db)]).status.success());
}

#[test]
fn crashtest_with_power_loss_loses_nothing() {
    let report = common::crashtest_loses_nothing("identity", &["--power-loss"]);
    assert_eq!(report["power_loss"], true);
}

/// What `strace -f -e trace=mkdir,openat,fsync` saw `hotpage ARGS` do, one call a line.
fn traced(trace: &Path, args: &[&str]) -> Vec<String> {
    let status = Command::new("strace")
        .args([
            "-f",
            "-e",
            "trace=mkdir,mkdirat,openat,fsync",
            "-o",
            s(trace),
        ])
        .arg(env!("CARGO_BIN_EXE_hotpage"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("strace runs (Debian's strace package)");
    assert!(status.success(), "hotpage under strace failed");
    std::fs::read_to_string(trace)
        .expect("trace")
        .lines()
        .map(str::to_string)
        .collect()
}

/// The quoted path of a traced call, and its result.
fn path_and_result(line: &str) -> Option<(&str, &str)> {
    let path = line.split('"').nth(1)?;
    let result = line.rsplit("= ").next()?.split_whitespace().next()?;
    Some((path, result))
}

#[test]
fn a_new_database_directory_is_fsynced_in_its_parent_and_its_marker_before_its_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("new").join("db");
    let calls = traced(
        &dir.path().join("trace"),
        &["stress", "--rows", "1", "--sessions", "1", "--db", s(&db)],
    );
    let position = |want: &dyn Fn(&str) -> bool| calls.iter().position(|c| want(c));
    // Each directory created: its parent is opened and fsynced afterwards.
    for created in [db.parent().expect("parent"), db.as_path()] {
        let mkdir =
            position(&|c| c.contains("mkdir") && path_and_result(c) == Some((s(created), "0")))
                .unwrap_or_else(|| panic!("no mkdir of {}: {calls:#?}", created.display()));
        let parent = s(created.parent().expect("parent"));
        let fsynced = calls[mkdir..].windows(2).any(|pair| {
            pair[0].contains("openat")
                && path_and_result(&pair[0]).is_some_and(|(p, _)| p == parent)
                && pair[1].contains("fsync(")
                && pair[1].ends_with("= 0")
        });
        assert!(
            fsynced,
            "{parent} not fsynced after creating {}",
            created.display()
        );
    }
    // The creation marker, then the directory fsynced, then the first data file.
    let marker = position(&|c| c.contains("/creating\"") && c.contains("O_CREAT"))
        .expect("the creation marker");
    let data = position(&|c| c.contains("/data.0\"") && c.contains("O_CREAT")).expect("data.0");
    assert!(
        calls[marker..data].iter().any(|c| c.contains("fsync(")),
        "the marker is not durable before data.0 exists"
    );
}

/// An OS error is said once, and the failed lock names its file (a damage campaign found
/// "I/O error while locking <dir>: Is a directory (os error 21): Is a directory (os error
/// 21)" for a LOCK replaced by a directory).
#[test]
fn a_lock_file_that_is_a_directory_is_named_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let made = hotpage(&["sql", "--db", s(&db), "-c", "CREATE TABLE t (id bigint)"]);
    assert!(made.status.success(), "{}", stderr(&made));
    std::fs::remove_file(db.join("LOCK")).expect("remove LOCK");
    std::fs::create_dir(db.join("LOCK")).expect("LOCK as a directory");
    let out = hotpage(&["sql", "--db", s(&db), "-c", "SELECT 1"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("locking {}", s(&db.join("LOCK")))),
        "{err}"
    );
    assert_eq!(err.matches("os error 21").count(), 1, "{err}");
}

/// A database whose files are damaged is exit 7 ("damaged", restore a backup), whichever
/// file it is; exit 3 ("not a hotpage database") is kept for a directory that never was
/// one. Before, a damaged catalog or data-file header, or data.0 deleted, said exit 3, and
/// a data file cut inside a page was an I/O error.
#[test]
fn damage_to_any_file_is_exit_7_and_a_foreign_directory_exit_3() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("base");
    let made = hotpage(&[
        "stress",
        "--db",
        s(&base),
        "--design",
        "identity",
        "--sessions",
        "1",
        "--rows",
        "5000",
        "--row-bytes",
        "200",
    ]);
    assert!(made.status.success(), "{}", stderr(&made));
    let page_bytes = 8192;
    let data_len = std::fs::metadata(base.join("data.0"))
        .expect("data.0")
        .len() as usize;
    type Damage = fn(&Path, usize);
    let cases: [(&str, Damage, &str); 6] = [
        (
            "catalog bytes flipped",
            |db, _| flip(&db.join("catalog"), 40),
            "catalog",
        ),
        // Data files and a log, but no catalog: it was one (it said "not a hotpage
        // database", exit 3).
        (
            "catalog emptied",
            |db, _| std::fs::write(db.join("catalog"), b"").expect("empty"),
            "catalog",
        ),
        (
            "catalog deleted",
            |db, _| std::fs::remove_file(db.join("catalog")).expect("rm"),
            "catalog",
        ),
        (
            "data.0's header page zeroed",
            |db, page| zero(&db.join("data.0"), 0, page),
            "data.0",
        ),
        (
            "data.0 deleted",
            |db, _| std::fs::remove_file(db.join("data.0")).expect("rm"),
            "data.0",
        ),
        (
            "data.0 cut inside its last page",
            |db, _| cut(&db.join("data.0"), 3000),
            "cut short",
        ),
    ];
    for (what, damage, named) in cases {
        let db = dir.path().join(what.replace(' ', "-"));
        std::fs::create_dir(&db).expect("mkdir");
        for (name, bytes) in files(&base) {
            std::fs::write(db.join(name), bytes).expect("copy");
        }
        damage(&db, page_bytes);
        let out = hotpage(&["check", "--db", s(&db)]);
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert_eq!(out.status.code(), Some(7), "{what}: {said}");
        assert!(said.contains(named), "{what}: {said}");
        assert!(!said.contains("not a hotpage database"), "{what}: {said}");
        let out = hotpage(&["check", "--db", s(&db), "--json"]);
        assert_eq!(out.status.code(), Some(7), "{what}: {}", stderr(&out));
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("one JSON object, even when no open");
        assert_eq!(report["ok"], false, "{what}: {report}");
        let out = hotpage(&["sql", "--db", s(&db), "-c", "SELECT count(*) FROM identity"]);
        let said = stderr(&out);
        assert!(
            said.contains("damaged hotpage database") || said.contains("XX001"),
            "{what}: {said}"
        );
    }
    assert!(data_len > 2 * page_bytes, "a table of more than one page");
    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).expect("mkdir");
    std::fs::write(foreign.join("notes.txt"), b"hello").expect("write");
    let out = hotpage(&["check", "--db", s(&foreign)]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a hotpage database"),
        "{}",
        stderr(&out)
    );
    // A command that opens for writing leaves no LOCK file in a directory it refuses.
    let out = hotpage(&["stress", "--db", s(&foreign), "--rows", "1"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        !foreign.join("LOCK").exists(),
        "a stray LOCK in the foreign directory"
    );
    // recover says the same of a path that is no database (it said "I/O error", exit 1),
    // and --json prints one object then too.
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").expect("write");
    for path in [dir.path().join("nowhere"), file] {
        let out = hotpage(&["recover", "--db", s(&path), "--json"]);
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("one JSON object, even when no open");
        assert_eq!(report["opened"], false, "{report}");
        assert_eq!(report["exit_code"], 3, "{report}");
    }
}

fn flip(file: &Path, at: usize) {
    let mut bytes = std::fs::read(file).expect("read");
    bytes[at] ^= 0xFF;
    std::fs::write(file, bytes).expect("write");
}

fn zero(file: &Path, at: usize, len: usize) {
    let mut bytes = std::fs::read(file).expect("read");
    bytes[at..at + len].fill(0);
    std::fs::write(file, bytes).expect("write");
}

fn cut(file: &Path, by: u64) {
    let len = std::fs::metadata(file).expect("len").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(file)
        .and_then(|f| f.set_len(len - by))
        .expect("truncate");
}

/// An insert that meets a damaged data file stops the database with exit 7 and says to
/// restore from a backup: it said to check dmesg and reopen (exit 1), and reopening meets
/// the damage again.
#[test]
fn an_insert_that_meets_damage_is_exit_7_and_says_to_restore() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let made = hotpage(&[
        "stress",
        "--db",
        s(&db),
        "--sessions",
        "1",
        "--rows",
        "5000",
    ]);
    assert!(made.status.success(), "{}", stderr(&made));
    std::fs::OpenOptions::new()
        .write(true)
        .open(db.join("data.0"))
        .and_then(|f| f.set_len(100_000))
        .expect("cut data.0 short");
    let out = hotpage(&["stress", "--db", s(&db), "--sessions", "1", "--rows", "1"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("restore the database from a backup"),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&out).contains("reopen the database to recover"),
        "{}",
        stderr(&out)
    );
    // Reopening meets the damage again (recovery re-applies the commit that stopped), yet
    // `check` still lists the faults on the pages: it checks them without the log's replay.
    let check = hotpage(&["check", "--db", s(&db), "--json"]);
    assert_eq!(check.status.code(), Some(7), "{}", stderr(&check));
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).expect("json");
    assert_eq!(report["log_replayed"], false, "{report}");
    let kinds: Vec<&str> = report["faults"]
        .as_array()
        .expect("faults")
        .iter()
        .map(|f| f["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds.first(), Some(&"recovery"), "{report}");
    assert!(
        kinds.contains(&"page"),
        "the cut page is not listed: {report}"
    );
    let text = hotpage(&["check", "--db", s(&db)]);
    assert_eq!(text.status.code(), Some(7));
    assert!(
        stdout(&text).contains("crash recovery fails") && stdout(&text).contains("cut short"),
        "{}",
        stdout(&text)
    );
}
