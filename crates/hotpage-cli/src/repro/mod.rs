//! `hotpage repro 000|001|002|003|004|all`: each seed article's experiment, scaled to this
//! machine, with the article's own figures printed beside ours as ratios, and one HTML
//! report with the tables and charts.
//!
//! Every experiment is a set of `hotpage stress` runs (printed, so each can be rerun by
//! hand). The runs of one experiment are interleaved over `--rounds` rounds and each
//! figure is the median run by rows/s, so a slow moment of a shared machine does not fall
//! on one design only. The article figures live in [`seeds`], each with the table or
//! section it comes from.

mod a000;
mod a001;
mod a002;
mod a003;
mod a004;
mod bench;
mod seeds;
mod text;

use crate::CliError;
use hotpage_report::{Document, Section};
use std::path::PathBuf;
use std::time::Instant;

pub use bench::Bench;

/// The report `repro` writes when no `--html` is given.
const HTML_DEFAULT: &str = "hotpage-report.html";
/// The largest `--scale`: 100x the default is already minutes per article.
const SCALE_MAX: f64 = 100.0;
/// The most `--rounds`.
const ROUNDS_MAX: u32 = 99;

pub const LONG_ABOUT: &str = "Reproduce the seed articles' experiments on this machine and \
print the articles' figures beside ours, as ratios (the article's figures are cited by table \
or section):
  000  identity vs hash partitioning (8) vs a bit-reversed sequence: rows/s and page-latch waits
  001  the tables V1-V6 of 'Last-Page Insert Contention': seconds and ratio to V1
  002  the heap: pages, fill and free-space-map updates per row size; FSM waits at 1 to 64
       sessions, with 1 data file and with 4
  003  sequential vs spread keys at 1, 2, 4 ... 64 sessions
  004  autocommit vs 1000-row transactions, and the log waits
  all  every one in turn (about a minute on 2 cores at the default scale)

Each experiment is a set of `hotpage stress` runs, printed so that each can be rerun by hand; \
they are interleaved over --rounds rounds and the median run (by rows/s) is reported. Where \
this machine cannot show what an article showed (the articles used 4 to 64 cores), the output \
says so and why. The tables go to standard output, progress to standard error, and the HTML \
report (tables and charts) to --html (default hotpage-report.html).";

#[derive(clap::Args, Debug, Clone)]
pub struct ReproArgs {
    /// Which article: 000, 001, 002, 003, 004, or all
    #[arg(value_name = "ARTICLE")]
    pub article: String,
    /// Multiply every experiment's rows by F (0.01 to 100): 0.1 for a quick look, 10 for
    /// steadier figures
    #[arg(long, default_value_t = 1.0, value_name = "F")]
    pub scale: f64,
    /// Write the HTML report (tables and charts, self-contained) to FILE
    #[arg(long, value_name = "FILE", default_value = HTML_DEFAULT)]
    pub html: PathBuf,
    /// Durability of every run: sync, async or none. Default: none for 000-003 (so that
    /// the latches they are about, not this machine's fdatasync, are what the designs
    /// meet) and sync for 004 (its subject is the log)
    #[arg(long)]
    pub durability: Option<String>,
    /// Rounds of each experiment (1 to 99): its runs are interleaved, and each figure is
    /// the median round's
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
}

/// The articles, in order.
const ARTICLES: [&str; 5] = ["000", "001", "002", "003", "004"];

fn validate(args: &ReproArgs) -> Result<Vec<&'static str>, CliError> {
    let articles: Vec<&'static str> = if args.article == "all" {
        ARTICLES.to_vec()
    } else {
        match ARTICLES.iter().find(|a| **a == args.article) {
            Some(a) => vec![*a],
            None => {
                return Err(CliError::usage(format!(
                    "unknown article '{}'; choose 000, 001, 002, 003, 004 or all",
                    args.article
                )));
            }
        }
    };
    if !(args.scale >= 0.01 && args.scale <= SCALE_MAX) {
        return Err(CliError::usage(format!(
            "--scale must be from 0.01 to {SCALE_MAX}, not {}",
            args.scale
        )));
    }
    if !(1..=ROUNDS_MAX).contains(&args.rounds) {
        return Err(CliError::usage(format!(
            "--rounds must be from 1 to {ROUNDS_MAX}, not {}",
            args.rounds
        )));
    }
    if let Some(d) = &args.durability
        && hotpage::Durability::parse(d).is_none()
    {
        return Err(CliError::usage(format!(
            "unknown durability '{d}'; choose sync, async or none"
        )));
    }
    crate::report_html::check_path(&args.html)?;
    Ok(articles)
}

/// Runs `hotpage repro`.
pub fn run(args: &ReproArgs) -> Result<(), CliError> {
    let articles = validate(args)?;
    let started = Instant::now();
    let mut bench = Bench::new(args.scale, args.rounds, args.durability.clone());
    let mut document = Document::new(format!("hotpage repro {}", args.article));
    let command: Vec<String> = std::env::args().skip(1).collect();
    document.subtitle = Some(crate::report_html::subtitle(&format!(
        "hotpage {}",
        command.join(" ")
    )));
    for article in articles {
        let section = run_article(article, &mut bench)?;
        // The bar is cleared while the tables print, and drawn again below them.
        bench.suspend(|| {
            text::print_section(&section)?;
            outln!()
        })?;
        document.sections.push(section);
    }
    bench.finish();
    let elapsed_s = started.elapsed().as_secs_f64();
    crate::report_html::write(&document, &args.html)?;
    outln!(
        "{} runs in {elapsed_s:.1} s; HTML report: {}",
        bench.runs_done(),
        args.html.display()
    )?;
    Ok(())
}

fn run_article(article: &str, bench: &mut Bench) -> Result<Section, CliError> {
    match article {
        "000" => a000::run(bench),
        "001" => a001::run(bench),
        "002" => a002::run(bench),
        "003" => a003::run(bench),
        _ => a004::run(bench),
    }
}

/// CPUs this process may use.
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// `ours / baseline` as a ratio cell, or "—" without a baseline.
fn ratio(ours: f64, baseline: f64) -> String {
    if baseline > 0.0 && ours.is_finite() {
        format!("{:.2}", ours / baseline)
    } else {
        "—".to_string()
    }
}

/// Wait time of every wait type whose name starts with `prefix`, in ms.
fn wait_ms(report: &hotpage_workload::Report, prefix: &str) -> f64 {
    report
        .target
        .waits
        .iter()
        .filter(|w| w.wait_type.starts_with(prefix))
        .map(|w| w.wait_ms)
        // Not `sum()`: an empty f64 sum is -0.0, which would print as "-0.0".
        .fold(0.0, |total, ms| total + ms)
}

/// Waits of every type whose name starts with `prefix`.
fn wait_count(report: &hotpage_workload::Report, prefix: &str) -> u64 {
    report
        .target
        .waits
        .iter()
        .filter(|w| w.wait_type.starts_with(prefix))
        .map(|w| w.count)
        .sum()
}

/// Share of all wait time spent in waits whose name starts with `prefix`, percent.
fn wait_share_pct(report: &hotpage_workload::Report, prefix: &str) -> f64 {
    let total = report.target.waits.iter().fold(0.0, |t, w| t + w.wait_ms);
    if total > 0.0 {
        100.0 * wait_ms(report, prefix) / total
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(article: &str) -> ReproArgs {
        ReproArgs {
            article: article.into(),
            scale: 1.0,
            html: PathBuf::from("r.html"),
            durability: None,
            rounds: 3,
        }
    }

    #[test]
    fn bad_arguments_are_usage_errors() {
        assert_eq!(validate(&args("all")).map(|a| a.len()).ok(), Some(5));
        assert!(validate(&args("005")).is_err());
        let mut a = args("000");
        a.scale = 0.0;
        assert!(validate(&a).is_err());
        a.scale = f64::NAN;
        assert!(validate(&a).is_err());
        let mut a = args("000");
        a.rounds = 0;
        assert!(validate(&a).is_err());
        let mut a = args("000");
        a.durability = Some("fast".into());
        assert!(validate(&a).is_err());
    }

    #[test]
    fn ratios_say_when_there_is_no_baseline() {
        assert_eq!(ratio(2.0, 4.0), "0.50");
        assert_eq!(ratio(2.0, 0.0), "—");
    }
}
