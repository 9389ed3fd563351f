//! The HTML report in a real browser: headless Chromium loads what `hotpage repro all`
//! wrote, every chart must be laid out with a visible size, nothing may be fetched, the
//! console must stay silent, and a screenshot is saved under the target directory
//! (`report-screenshot.png`) for the developer to look at.
//!
//! Chromium is Debian's `chromium` package (`.ci/run` installs it when missing); set
//! `HOTPAGE_CHROMIUM` to use another binary. Without one this test fails and says so.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest a browser run may take before the test kills it.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

/// Checks the page from inside the browser once it has loaded, and reports in the title
/// (which `--dump-dom` prints): the charts laid out, resources fetched, errors seen.
/// Injected into a copy only: the report itself carries no script.
const CHECKER: &str = r#"<script>
window.__errors = [];
window.addEventListener('error', function (e) {
  window.__errors.push(String(e.message || (e.target && (e.target.src || e.target.href)) || 'error'));
}, true);
window.addEventListener('load', function () {
  var figures = document.querySelectorAll('figure.chart');
  var drawn = 0, bad = [], empty = [];
  figures.forEach(function (f, i) {
    var name = i + ':' + (f.getAttribute('data-chart') || '?');
    var svg = f.querySelector('svg');
    var box = svg && svg.getBoundingClientRect();
    var marks = svg ? svg.querySelectorAll('rect, polyline, circle, text, line').length : 0;
    var laidOut = svg instanceof SVGSVGElement && box.width > 100 && box.height > 100;
    // A run with nothing to draw (no waits at a tiny scale) says so in a frame.
    var saysNoData = svg && svg.textContent.indexOf('no data') >= 0;
    if (laidOut && marks > 5) {
      drawn++;
    } else if (laidOut && saysNoData) {
      drawn++;
      empty.push(name);
    } else {
      bad.push(name);
    }
  });
  var result = {
    figures: figures.length,
    drawn: drawn,
    bad: bad,
    empty: empty,
    resources: performance.getEntriesByType('resource').map(function (r) { return r.name; }),
    errors: window.__errors,
    height: document.documentElement.scrollHeight
  };
  document.title = 'CHECK:' + JSON.stringify(result);
});
</script>"#;

fn hotpage() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hotpage"))
}

/// The target directory (`target/` in a plain checkout).
fn target_dir() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().map_or(tmp.clone(), Path::to_path_buf)
}

fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("HOTPAGE_CHROMIUM") {
        return PathBuf::from(path);
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let found = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {name}"))
            .output()
            .expect("runs sh");
        if found.status.success() {
            return PathBuf::from(String::from_utf8_lossy(&found.stdout).trim().to_string());
        }
    }
    panic!(
        "headless Chromium is needed for this test and none was found: install Debian's \
         package ('apt-get install -y chromium'; .ci/run does it when missing) or set \
         HOTPAGE_CHROMIUM to a Chromium binary"
    );
}

/// What a browser run printed.
struct BrowserOutput {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Runs the browser on `url` with `args`, killing it after [`BROWSER_TIMEOUT`]. Its output
/// goes to files, not pipes: a dumped DOM is larger than a pipe's buffer, and a browser
/// blocked on a full pipe would never exit while this waits for it.
fn run_browser(profile: &Path, args: &[String], url: &str) -> BrowserOutput {
    let stdout_path = profile.with_extension("stdout");
    let stderr_path = profile.with_extension("stderr");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).expect("stdout file"))
        .stderr(std::fs::File::create(&stderr_path).expect("stderr file"))
        .spawn()
        .expect("starts chromium");
    let started = Instant::now();
    while child.try_wait().expect("polls chromium").is_none() {
        if started.elapsed() > BROWSER_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {BROWSER_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    BrowserOutput {
        stdout: std::fs::read(&stdout_path).expect("reads stdout"),
        stderr: std::fs::read(&stderr_path).expect("reads stderr"),
    }
}

/// Console messages the page caused: Chromium logs each as a `CONSOLE` line naming its
/// `source:` (the page's URL). Other `CONSOLE` lines (none expected) are shown, not failed
/// on, since they do not come from the page.
fn console_lines(stderr: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stderr);
    for line in text.lines() {
        if line.contains("CONSOLE") && !line.contains("source:") {
            eprintln!("chromium logged (not from the page): {line}");
        }
    }
    text.lines()
        .filter(|l| l.contains("CONSOLE") && l.contains("source:"))
        .map(str::to_string)
        .collect()
}

/// A small field of the checker's JSON, by name (the test has no JSON parser of its own).
fn field<'a>(json: &'a str, name: &str) -> &'a str {
    let start = json
        .find(&format!("\"{name}\":"))
        .unwrap_or_else(|| panic!("no {name} in {json}"))
        + name.len()
        + 3;
    let rest = &json[start..];
    let end = if rest.starts_with('[') {
        rest.find(']').map_or(rest.len(), |i| i + 1)
    } else {
        rest.find([',', '}']).unwrap_or(rest.len())
    };
    &rest[..end]
}

#[test]
fn the_repro_report_renders_in_headless_chromium() {
    let dir = tempfile::tempdir().expect("temp dir");
    let target = target_dir();
    std::fs::create_dir_all(&target).expect("target dir");
    let report = target.join("report-browser.html");
    let out = hotpage()
        .current_dir(dir.path())
        .args(["repro", "all", "--scale", "0.02", "--rounds", "1", "--html"])
        .arg(&report)
        .output()
        .expect("runs hotpage repro");
    assert!(
        out.status.success(),
        "repro failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&report).expect("the report exists");
    let charts_in_file = html.matches("<figure class=\"chart\"").count();
    assert!(charts_in_file >= 14, "only {charts_in_file} charts written");

    // The checker's copy: the same page with the script first in <head>.
    let checked = dir.path().join("checked.html");
    std::fs::write(
        &checked,
        html.replacen("<head>", &format!("<head>{CHECKER}"), 1),
    )
    .expect("writes the checker copy");
    let profile = dir.path().join("profile");
    let dumped = run_browser(
        &profile,
        &["--dump-dom".into(), "--virtual-time-budget=5000".into()],
        &format!("file://{}", checked.display()),
    );
    let dom = String::from_utf8_lossy(&dumped.stdout);
    let title_start = dom.find("<title>CHECK:").unwrap_or_else(|| {
        panic!(
            "the checker did not run; chromium said: {}",
            String::from_utf8_lossy(&dumped.stderr)
        )
    }) + "<title>CHECK:".len();
    let json =
        &dom[title_start..title_start + dom[title_start..].find("</title>").expect("closes")];
    let json = json.replace("&quot;", "\"");
    assert_eq!(
        field(&json, "figures"),
        charts_in_file.to_string(),
        "{json}"
    );
    assert_eq!(
        field(&json, "drawn"),
        charts_in_file.to_string(),
        "a chart is missing or empty: {json}"
    );
    // At this tiny scale a run may wait on nothing; most charts must still have data.
    let empty = field(&json, "empty").matches(':').count();
    assert!(empty <= 3, "{empty} charts without data: {json}");
    assert_eq!(
        field(&json, "resources"),
        "[]",
        "the report fetched something: {json}"
    );
    assert_eq!(field(&json, "errors"), "[]", "errors while loading: {json}");
    let console = console_lines(&dumped.stderr);
    assert!(console.is_empty(), "console messages: {console:?}");

    // The screenshot of the report itself, as tall as the page (capped).
    let height: u32 = field(&json, "height").parse().expect("a page height");
    let screenshot = target.join("report-screenshot.png");
    let _ = std::fs::remove_file(&screenshot);
    let shot = run_browser(
        &profile,
        &[
            format!("--screenshot={}", screenshot.display()),
            format!("--window-size=1100,{}", height.clamp(600, 16_000)),
        ],
        &format!("file://{}", report.display()),
    );
    let console = console_lines(&shot.stderr);
    assert!(console.is_empty(), "console messages: {console:?}");
    let png = std::fs::read(&screenshot).unwrap_or_else(|e| {
        panic!(
            "no screenshot at {} ({e}); chromium said: {}",
            screenshot.display(),
            String::from_utf8_lossy(&shot.stderr)
        )
    });
    assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
    assert!(png.len() > 50_000, "the screenshot is nearly empty");
    eprintln!("screenshot: {}", screenshot.display());
}
