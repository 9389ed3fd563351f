//! `hotpage sql --dialect tsql`: scripts in SQL Server's dialect, split into batches at
//! `GO` lines and run by `hotpage_sql::TsqlSession` (as `sqlcmd -b -i FILE` would).

use crate::CliError;
use crate::ctrl_c::CtrlC;
use crate::sql_print::{self, Format};
use crate::sql_shell::EXIT_SQL_ERROR;
use hotpage_sql::{SqlDatabase, TsqlOutput, TsqlSession};
use std::sync::Arc;

/// Runs each script in turn in one session, stopping at the first error: the batches
/// before it keep their effects, and the exit code is 3.
pub fn run_scripts(
    sql: &Arc<SqlDatabase>,
    scripts: &[(String, String)],
    format: Format,
    ctrl_c: &CtrlC,
) -> Result<(), CliError> {
    let mut sql_session = sql.session();
    sql_session.set_cancel_flag(ctrl_c.cancel_flag());
    let mut session = TsqlSession::new(sql_session);
    for (label, text) in scripts {
        let (outputs, error) = ctrl_c.while_running(|| session.execute_script(text));
        for output in &outputs {
            match output {
                TsqlOutput::Result(result) => sql_print::print_result(result, format)?,
                // PRINT's message on its own line, as sqlcmd shows it.
                TsqlOutput::Print(message) => outln!("{message}")?,
            }
        }
        if let Some(error) = error {
            sql_print::print_error(&error, "");
            return Err(CliError::new(
                EXIT_SQL_ERROR,
                format!("stopped at the first error, in {label}"),
            ));
        }
    }
    Ok(())
}
