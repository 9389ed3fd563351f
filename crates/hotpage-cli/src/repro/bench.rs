//! Runs an experiment's `hotpage stress` runs: interleaved rounds, the median round of
//! each, one progress bar on standard error for the whole `repro`.

use crate::CliError;
use crate::stress::StressArgs;
use clap::Parser;
use hotpage_workload::Report;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// One run of an experiment: its label and its `hotpage stress` arguments.
#[derive(Clone, Debug)]
pub struct Config {
    /// What the tables and charts call it.
    pub label: String,
    /// The arguments after `hotpage stress`.
    pub argv: Vec<String>,
}

impl Config {
    /// A run labelled `label` with these arguments.
    pub fn new(label: impl Into<String>, argv: &[String]) -> Config {
        Config {
            label: label.into(),
            argv: argv.to_vec(),
        }
    }

    /// The command that reruns it by hand.
    pub fn command(&self) -> String {
        format!("hotpage stress {}", self.argv.join(" "))
    }
}

/// `hotpage stress`'s arguments as its own parser reads them.
#[derive(Parser, Debug)]
#[command(name = "stress")]
struct StressLine {
    #[command(flatten)]
    args: StressArgs,
}

/// The runner shared by every article of one `repro`.
pub struct Bench {
    scale: f64,
    rounds: u32,
    durability: Option<String>,
    bar: ProgressBar,
    runs_done: u64,
}

impl Bench {
    /// A runner for `--scale`, `--rounds` and `--durability`.
    pub fn new(scale: f64, rounds: u32, durability: Option<String>) -> Bench {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(
                "repro {prefix} [{bar:30}] {pos}/{len} runs {elapsed_precise} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        Bench {
            scale,
            rounds,
            durability,
            bar,
            runs_done: 0,
        }
    }

    /// Rows per session: `base` times `--scale`, at least `floor`.
    pub fn rows(&self, base: u64, floor: u64) -> u64 {
        ((base as f64 * self.scale).round() as u64).max(floor)
    }

    /// `--durability`, or the article's default.
    pub fn durability(&self, article_default: &str) -> String {
        self.durability
            .clone()
            .unwrap_or_else(|| article_default.to_string())
    }

    /// Whether `--durability` was given (an article then says it runs at that level).
    pub fn durability_given(&self) -> bool {
        self.durability.is_some()
    }

    /// Runs done so far.
    pub fn runs_done(&self) -> u64 {
        self.runs_done
    }

    /// Runs `f` (printing) with the progress bar hidden, so that the two do not mix.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Removes the progress bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// Each config's median run by rows/s over `--rounds` interleaved rounds (`rounds`
    /// overrides it for figures that do not depend on timing).
    pub fn measure(
        &mut self,
        article: &str,
        configs: &[Config],
        rounds: Option<u32>,
    ) -> Result<Vec<Report>, CliError> {
        let rounds = rounds.unwrap_or(self.rounds);
        let parsed = configs.iter().map(parse).collect::<Result<Vec<_>, _>>()?;
        let runs = configs.len() as u64 * u64::from(rounds);
        self.bar.set_prefix(article.to_string());
        self.bar.inc_length(runs);
        if !std::io::stderr().is_terminal() {
            errln!(
                "repro {article}: {runs} runs ({} configurations x {rounds} rounds)",
                configs.len()
            );
        }
        let mut results: Vec<Vec<Report>> = vec![Vec::new(); configs.len()];
        for round in 1..=rounds {
            for ((config, args), reports) in configs.iter().zip(&parsed).zip(&mut results) {
                self.bar
                    .set_message(format!("round {round}/{rounds}: {}", config.label));
                let report = crate::stress::run_checked_quiet(args).map_err(|e| {
                    CliError::new(e.code, format!("{}: {}", config.command(), e.message))
                })?;
                reports.push(report);
                self.bar.inc(1);
                self.runs_done += 1;
            }
        }
        Ok(results.into_iter().map(median_by_rows_per_s).collect())
    }
}

fn parse(config: &Config) -> Result<StressArgs, CliError> {
    StressLine::try_parse_from(std::iter::once("stress".to_string()).chain(config.argv.clone()))
        .map(|line| line.args)
        .map_err(|e| {
            CliError::failure(format!(
                "internal error: repro built a bad command '{}': {}",
                config.command(),
                e.render().to_string().lines().next().unwrap_or_default()
            ))
        })
}

/// The run with the median rows/s (the lower middle one of an even count).
fn median_by_rows_per_s(mut reports: Vec<Report>) -> Report {
    reports.sort_by(|a, b| a.rows_per_s.total_cmp(&b.rows_per_s));
    let middle = reports.len().saturating_sub(1) / 2;
    reports.swap_remove(middle)
}

/// The common arguments of a run: design, sessions, rows, row size, durability.
pub fn stress_argv(
    design: &str,
    sessions: u32,
    rows: u64,
    row_bytes: usize,
    durability: &str,
    extra: &[&str],
) -> Vec<String> {
    let mut argv: Vec<String> = [
        "--design",
        design,
        "--sessions",
        &sessions.to_string(),
        "--rows",
        &rows.to_string(),
        "--row-bytes",
        &row_bytes.to_string(),
        "--durability",
        durability,
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    argv.extend(extra.iter().map(|s| (*s).to_string()));
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(rows_per_s: f64) -> Report {
        Report {
            rows_per_s,
            ..Report::default()
        }
    }

    #[test]
    fn the_median_is_the_middle_run() {
        let median = median_by_rows_per_s(vec![report(3.0), report(1.0), report(2.0)]);
        assert_eq!(median.rows_per_s, 2.0);
        let lower = median_by_rows_per_s(vec![report(4.0), report(1.0)]);
        assert_eq!(lower.rows_per_s, 1.0);
        assert_eq!(median_by_rows_per_s(vec![report(5.0)]).rows_per_s, 5.0);
    }

    #[test]
    fn every_built_command_parses() {
        let argv = stress_argv("hash-partition", 8, 100, 16, "none", &["--partitions", "8"]);
        let args = parse(&Config::new("x", &argv)).expect("parses");
        assert_eq!(args.design, "hash-partition");
        assert_eq!(args.partitions, 8);
        assert_eq!(args.rows, Some(100));
    }
}
