//! `hotpage stress --url`: the same driver and report against a PostgreSQL-wire server,
//! through `hotpage_pgclient::PgTarget`. This module only reads the setup script, maps the
//! target's errors to exit codes and says in the report what durability the server had.

use crate::CliError;
use crate::stress::StressArgs;
use anyhow::Context;
use hotpage_pgclient::{PgClientError, PgTarget, PgTargetConfig};
use hotpage_workload::{Plan, Report, RunError};

/// Runs `plan` against the server at `--url` and returns the report.
pub fn run(args: &StressArgs, plan: &Plan) -> Result<Report, CliError> {
    let url = args.url.as_deref().unwrap_or_default();
    let statement = args.sql.as_deref().unwrap_or_default();
    let setup = match &args.setup_sql {
        Some(file) => Some(
            std::fs::read_to_string(file)
                .with_context(|| format!("cannot read --setup-sql {}", file.display()))?,
        ),
        None => None,
    };
    let target = PgTarget::connect(PgTargetConfig {
        url,
        setup_sql: setup.as_deref(),
        statement,
    })
    .map_err(target_error)?;
    let mut report = hotpage_workload::run(plan, &target).map_err(|e| match e {
        RunError::Session(error) => {
            CliError::failure(format!("a session's statement failed: {error}"))
        }
        RunError::Figures(error) => target_error(error),
        RunError::Histogram(error) => {
            CliError::failure(format!("merging latency histograms: {error}"))
        }
        RunError::Panicked => CliError::failure("a stress session panicked"),
    })?;
    // The plan's durability is the embedded engine's; the server's own setting is what
    // was measured.
    report.durability = match target.synchronous_commit() {
        Some(setting) => format!("synchronous_commit={setting}"),
        None => "the server's".to_string(),
    };
    Ok(report)
}

/// Bad input (the URL, the setup script, the statement) exits 2; the rest exits 1.
fn target_error(error: PgClientError) -> CliError {
    if error.is_bad_input() {
        CliError::usage(error.to_string())
    } else {
        CliError::failure(error.to_string())
    }
}
