//! Stored procedures (`CREATE PROCEDURE`, `EXEC`, `DROP PROCEDURE`) and error handling
//! (`BEGIN TRY … END TRY BEGIN CATCH … END CATCH`, `THROW`, `RAISERROR`, `ERROR_NUMBER()`,
//! `ERROR_MESSAGE()`).
//!
//! A procedure is kept in the database's metadata as the text of its CREATE statement, as
//! user functions are ([`super::objects`]): every session runs it, and it survives a
//! reopen. Its body runs in the same interpreter as a batch, with its parameters as its own
//! variables (the caller's are put back after), so its statements are prepared once per
//! session as a batch's are.

use super::parse::{self, Procedure, Stmt, is_variable, is_word, split_top_level, syntax_near};
use super::{Flow, TsqlOutput, TsqlSession, translate};
use crate::error::{SqlError, SqlResult, sqlstate};
use crate::schema::TsqlKind;
use crate::value::Value;
use sqlparser::tokenizer::Token;
use std::sync::Arc;

/// The error number of errors SQL Server would number but hotpage's message does not.
const USER_ERROR_NUMBER: i64 = 50000;

/// An error's SQL Server number: the one its message names (`(SQL Server error N)`), else
/// that of SQL Server's error for the same SQLSTATE, else 50000.
pub(super) fn error_number(error: &SqlError) -> i64 {
    if let Some(at) = error.message.rfind("(SQL Server error ") {
        let digits: String = error.message[at + 18..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(n) = digits.parse() {
            return n;
        }
    }
    match error.sqlstate {
        "23505" => 2627,
        "23502" => 515,
        "22012" => 8134,
        "22003" => 8115,
        "22P02" => 245,
        "42P01" => 208,
        "42703" => 207,
        _ => USER_ERROR_NUMBER,
    }
}

/// An error's message without the `(SQL Server error N)` hotpage adds.
fn error_text(error: &SqlError) -> String {
    match error.message.rfind(" (SQL Server error ") {
        Some(at) if error.message.ends_with(')') => error.message[..at].to_string(),
        _ => error.message.clone(),
    }
}

/// A user error (THROW, RAISERROR): PostgreSQL's `raise_exception`, numbered.
fn user_error(number: i64, message: &str) -> SqlError {
    SqlError::new("P0001", format!("{message} (SQL Server error {number})"))
}

impl TsqlSession {
    /// `CREATE [OR ALTER] PROC[EDURE]`: stored, so that every session runs it.
    pub(super) fn create_procedure(&mut self, procedure: &Procedure) -> SqlResult<()> {
        let (name, text) = (&procedure.name, &procedure.source);
        self.store_routine(TsqlKind::Procedure, name, text, procedure.replace)?;
        self.push_tag("CREATE PROCEDURE");
        Ok(())
    }

    /// `DROP PROC[EDURE] [IF EXISTS] name`.
    pub(super) fn drop_procedure(&mut self, toks: &[Token]) -> SqlResult<()> {
        let if_exists = is_word(toks.get(2), "IF") && is_word(toks.get(3), "EXISTS");
        let name = translate::name_of(&toks[if if_exists { 4 } else { 2 }..])?;
        let removed = self.sql.database().update_tsql_objects(|list| {
            let before = list.len();
            list.retain(|o| !(o.kind == TsqlKind::Procedure && o.name == name));
            Ok(list.len() != before)
        })?;
        self.sync_objects()?;
        if !removed && !if_exists {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!(
                    "cannot drop the procedure '{name}', because it does not exist (SQL Server error 3701)"
                ),
            ));
        }
        self.push_tag("DROP PROCEDURE");
        Ok(())
    }
}

/// A procedure call's parameter values, and the caller's variables OUTPUT arguments bind.
type ProcedureArgs = (Vec<Value>, Vec<Option<String>>);

impl TsqlSession {
    /// `EXEC[UTE] [@ret =] name [arg | @p = arg [, …] [OUTPUT]]`.
    pub(super) fn exec(&mut self, toks: &[Token]) -> SqlResult<()> {
        let mut at = 1;
        let mut returns_into = None;
        if is_variable(toks.get(1)) && matches!(toks.get(2), Some(Token::Eq)) {
            returns_into = Some(toks[1].to_string().to_lowercase());
            at = 3;
        }
        if returns_into.is_none()
            && matches!(toks.get(1), Some(Token::LParen))
            && translate::matching_paren(toks, 1).ok() == Some(toks.len() - 1)
        {
            return self.exec_dynamic(&toks[2..toks.len() - 1]);
        }
        let name_start = at;
        at = parse::name_end(toks, name_start);
        if at == name_start {
            return Err(SqlError::unsupported(
                "EXEC of anything but a stored procedure's name or ('string')",
            ));
        }
        let name = translate::name_of(&toks[name_start..at])?;
        let args = split_top_level(&toks[at..], |t| matches!(t, Token::Comma));
        let args = if matches!(args.as_slice(), [[]]) {
            Vec::new()
        } else {
            args
        };
        if name == "sp_executesql" && returns_into.is_none() {
            return match args.as_slice() {
                [statement] => self.exec_dynamic(named_arg(statement, "@stmt")),
                [statement, definitions, values @ ..] => self.exec_with_parameters(
                    named_arg(statement, "@stmt"),
                    named_arg(definitions, "@params"),
                    values,
                ),
                [] => Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    "procedure or function 'sp_executesql' expects parameter '@stmt', which was not supplied (SQL Server error 201)",
                )),
            };
        }
        self.sync_objects()?;
        let procedure = self.objects.procedures.get(&name).map(Arc::clone);
        let procedure = procedure.ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("could not find stored procedure '{name}' (SQL Server error 2812)"),
            )
        })?;
        let (args, bound) = self.procedure_args(&procedure, &args)?;
        let routine = Some(procedure.name.as_str());
        let (value, outputs) = self.call_procedure(&procedure, routine, args)?;
        self.assign_outputs(bound, outputs)?;
        if let Some(var) = returns_into {
            let ty = self
                .vars
                .get(&var)
                .map(|(_, ty)| ty.clone())
                .ok_or_else(|| super::undeclared(&var))?;
            self.vars.insert(var, (value, ty));
        }
        Ok(())
    }

    /// OUTPUT arguments: each parameter's last value into the caller's variable.
    fn assign_outputs(&mut self, bound: Vec<Option<String>>, outputs: Vec<Value>) -> SqlResult<()> {
        for (var, value) in bound.into_iter().zip(outputs) {
            if let Some(var) = var {
                self.assign_output(&var, value)?;
            }
        }
        Ok(())
    }

    /// `EXEC sp_executesql N'…', N'@p type [OUTPUT], …', value | @p = value [OUTPUT], …`:
    /// the string runs as a procedure would whose parameters the definitions declare (in
    /// a scope of its own: it sees only them), with the same argument rules and errors as
    /// a procedure's.
    fn exec_with_parameters(
        &mut self,
        statement: &[Token],
        definitions: &[Token],
        values: &[&[Token]],
    ) -> SqlResult<()> {
        let text = self.dynamic_text(statement)?;
        let definitions = match self.eval(definitions)? {
            Value::Text(text) => text,
            Value::Null => String::new(),
            other => {
                return Err(SqlError::new(
                    sqlstate::DATATYPE_MISMATCH,
                    format!(
                        "sp_executesql takes its parameter definitions as a string, not a {} (SQL Server error 214)",
                        other.type_name()
                    ),
                ));
            }
        };
        let mut params = Vec::new();
        let mut outputs = Vec::new();
        let toks = parse::tokens(&definitions)?;
        for part in split_top_level(&toks, |t| matches!(t, Token::Comma)) {
            if part.is_empty() && toks.is_empty() {
                break;
            }
            let (param, output) = parse::procedure_param(part)?;
            if params
                .iter()
                .any(|(name, _, _): &parse::Declared| *name == param.0)
            {
                return Err(SqlError::new(
                    "42710",
                    format!(
                        "the variable name '{}' has already been declared (SQL Server error 134)",
                        param.0
                    ),
                ));
            }
            params.push(param);
            outputs.push(output);
        }
        let Some(text) = text else {
            return Ok(());
        };
        let body = parse::parse_batch(&text)?;
        let mut declared = params.iter().map(|(name, _, _)| name.clone()).collect();
        parse::check_declarations(&body, &mut declared)?;
        let procedure = Procedure {
            name: "sp_executesql".to_string(),
            params,
            outputs,
            body: Box::new(Stmt::Block(body)),
            replace: false,
            source: String::new(),
        };
        let (args, bound) = self.procedure_args(&procedure, values)?;
        // Dynamic SQL is no routine: ERROR_PROCEDURE() is NULL in it, as in SQL Server.
        let (_, outputs) = self.call_procedure(&procedure, None, args)?;
        self.assign_outputs(bound, outputs)
    }

    /// The T-SQL text a dynamic EXEC runs (None: a NULL string, which runs nothing).
    fn dynamic_text(&mut self, expr: &[Token]) -> SqlResult<Option<String>> {
        match self.eval(expr)? {
            Value::Text(text) => Ok(Some(text)),
            Value::Null => Ok(None),
            other => Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!("EXEC takes a string of T-SQL, not a {}", other.type_name()),
            )),
        }
    }

    /// `EXEC ('…' [+ …])`, `EXEC (@sql)`, `sp_executesql N'…'`: the string's batch, in a
    /// scope of its own (it sees none of the caller's variables, as in SQL Server); its
    /// results and messages are the caller's. A NULL string runs nothing.
    fn exec_dynamic(&mut self, expr: &[Token]) -> SqlResult<()> {
        let Some(text) = self.dynamic_text(expr)? else {
            return Ok(());
        };
        let batch = parse::parse_batch(&text)?;
        self.nested("dynamic SQL", |s| {
            for stmt in &batch {
                if let Flow::Return(_) = s.run(stmt)?.outside_loop()? {
                    break;
                }
            }
            Ok(())
        })
    }

    /// A caller's variable passed `OUTPUT` gets the parameter's last value, in the
    /// variable's own type.
    pub(super) fn assign_output(&mut self, var: &str, value: Value) -> SqlResult<()> {
        let ty = self
            .vars
            .get(var)
            .map(|(_, ty)| ty.clone())
            .ok_or_else(|| super::undeclared(var))?;
        let value = self.converted(value, &ty)?;
        self.vars.insert(var.to_string(), (value, ty));
        Ok(())
    }

    /// The values of a procedure's parameters: positional arguments first, then `@p =
    /// value`, then the parameters' defaults; and per parameter, the caller's variable an
    /// `OUTPUT` argument binds to it.
    fn procedure_args(
        &mut self,
        procedure: &Procedure,
        parts: &[&[Token]],
    ) -> SqlResult<ProcedureArgs> {
        let mut given: Vec<Option<Value>> = vec![None; procedure.params.len()];
        let mut bound: Vec<Option<String>> = vec![None; procedure.params.len()];
        for (position, &part) in parts.iter().enumerate() {
            let (slot, expr) = match part {
                [var, Token::Eq, expr @ ..] if is_variable(Some(var)) => {
                    let var = var.to_string().to_lowercase();
                    let slot = procedure.params.iter().position(|(p, _, _)| *p == var);
                    let slot = slot.ok_or_else(|| {
                        SqlError::new(
                            sqlstate::UNDEFINED_FUNCTION,
                            format!(
                                "{var} is not a parameter for procedure {} (SQL Server error 8145)",
                                procedure.name
                            ),
                        )
                    })?;
                    (slot, expr)
                }
                expr => (position, expr),
            };
            if slot >= given.len() {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    format!(
                        "procedure {} has too many arguments specified (SQL Server error 8144)",
                        procedure.name
                    ),
                ));
            }
            let expr = match expr {
                [var, mode] if is_word(Some(mode), "OUTPUT") || is_word(Some(mode), "OUT") => {
                    if !is_variable(Some(var)) {
                        return Err(syntax_near(Some(mode)));
                    }
                    if !procedure.outputs[slot] {
                        return Err(SqlError::new(
                            sqlstate::INVALID_PARAMETER_VALUE,
                            format!(
                                "the formal parameter \"{}\" was not declared as an OUTPUT parameter, but the actual parameter passed in requested output (SQL Server error 8162)",
                                procedure.params[slot].0
                            ),
                        ));
                    }
                    bound[slot] = Some(var.to_string().to_lowercase());
                    std::slice::from_ref(var)
                }
                expr => expr,
            };
            if expr.is_empty() || expr.iter().any(|t| is_word(Some(t), "OUTPUT")) {
                return Err(syntax_near(expr.last()));
            }
            if !matches!(expr, [d] if is_word(Some(d), "DEFAULT")) {
                given[slot] = Some(self.eval(expr)?);
            }
        }
        let mut values = Vec::with_capacity(given.len());
        for ((param, _, default), value) in procedure.params.iter().zip(given) {
            let value = match (value, default) {
                (Some(value), _) => value,
                (None, Some(default)) => self.eval(default)?,
                (None, None) => {
                    return Err(SqlError::new(
                        sqlstate::UNDEFINED_FUNCTION,
                        format!(
                            "procedure or function '{}' expects parameter '{param}', which was not supplied (SQL Server error 201)",
                            procedure.name
                        ),
                    ));
                }
            };
            values.push(value);
        }
        Ok((values, bound))
    }

    /// Runs a procedure with its own variables; the caller's are put back after. Its value
    /// is what RETURN gave (0 without one, as SQL Server's), with its parameters' last
    /// values (for OUTPUT arguments).
    fn call_procedure(
        &mut self,
        procedure: &Procedure,
        routine: Option<&str>,
        args: Vec<Value>,
    ) -> SqlResult<(Value, Vec<Value>)> {
        self.nested("stored procedure", |s| {
            s.routine = routine.map(str::to_string);
            let value = s.procedure_body(procedure, args)?;
            let params = procedure
                .params
                .iter()
                .map(|(name, _, _)| s.vars.get(name).map_or(Value::Null, |(v, _)| v.clone()))
                .collect();
            Ok((value, params))
        })
    }

    fn procedure_body(&mut self, procedure: &Procedure, args: Vec<Value>) -> SqlResult<Value> {
        for ((name, ty, _), value) in procedure.params.iter().zip(args) {
            let ty = translate::pg_type(ty)?;
            let value = self.converted(value, &ty)?;
            self.vars.insert(name.clone(), (value, ty));
        }
        match self.run(&procedure.body)?.outside_loop()? {
            Flow::Return(Some(value)) => Ok(value),
            _ => Ok(Value::Int(0)),
        }
    }

    /// `BEGIN TRY … END TRY BEGIN CATCH … END CATCH`: an error in the first part runs the
    /// second, where ERROR_NUMBER() and ERROR_MESSAGE() describe it. A transaction the
    /// error failed is rolled back before the handler runs.
    pub(super) fn try_catch(&mut self, body: &[Stmt], handler: &[Stmt]) -> SqlResult<Flow> {
        let mut failed = None;
        for stmt in body {
            match self.run(stmt) {
                Ok(Flow::Next) => {}
                Ok(flow) => return Ok(flow),
                Err(error) => {
                    failed = Some(error);
                    break;
                }
            }
        }
        let Some(error) = failed else {
            return Ok(Flow::Next);
        };
        // A cancel or a timeout stops the batch: SQL Server's CATCH does not handle an
        // attention either, and a loop that caught it could never be stopped.
        if error.sqlstate == crate::error::sqlstate::QUERY_CANCELED {
            return Err(error);
        }
        // PostgreSQL's rule leaves a transaction the error failed refusing every statement
        // (even the handler's PRINT) until ROLLBACK: roll it back now, so that the handler
        // runs (`IF @@TRANCOUNT > 0 ROLLBACK` then finds none, as after SQL Server's
        // XACT_ABORT). A transaction the error did not fail (THROW's) stays open.
        if self.sql.txn_status() == crate::TxnStatus::Failed {
            self.pg("ROLLBACK")?;
        }
        let place = self.failed_at.take();
        self.caught.push(super::Caught { error, place });
        let mut outcome = Ok(Flow::Next);
        for stmt in handler {
            match self.run(stmt) {
                Ok(Flow::Next) => {}
                other => {
                    outcome = other;
                    break;
                }
            }
        }
        self.caught.pop();
        outcome
    }

    /// `ERROR_NUMBER()`, `ERROR_MESSAGE()`, … as literals: the error a CATCH block is
    /// handling, NULL outside one.
    pub(super) fn error_function(&self, name: &str) -> SqlResult<String> {
        let Some(super::Caught { error, place }) = self.caught.last() else {
            return Ok(match name {
                "ERROR_MESSAGE" | "ERROR_PROCEDURE" => "CAST(NULL AS text)",
                _ => "CAST(NULL AS integer)",
            }
            .to_string());
        };
        Ok(match name {
            "ERROR_NUMBER" => error_number(error).to_string(),
            "ERROR_MESSAGE" => format!("'{}'", error_text(error).replace('\'', "''")),
            "ERROR_SEVERITY" => "16".to_string(),
            "ERROR_STATE" => "1".to_string(),
            "ERROR_LINE" => place.as_ref().map_or_else(
                || "CAST(NULL AS integer)".to_string(),
                |p| p.line.to_string(),
            ),
            "ERROR_PROCEDURE" => match place.as_ref().and_then(|p| p.routine.as_deref()) {
                Some(routine) => format!("'{}'", routine.replace('\'', "''")),
                None => "CAST(NULL AS text)".to_string(),
            },
            other => return Err(SqlError::unsupported(format!("{other}() (T-SQL)"))),
        })
    }

    /// `THROW [number, message, state]`: without arguments, inside CATCH, the error being
    /// handled again.
    pub(super) fn throw(&mut self, toks: &[Token]) -> SqlResult<()> {
        let args = split_top_level(&toks[1..], |t| matches!(t, Token::Comma));
        if toks.len() == 1 {
            let Some(caught) = self.caught.last() else {
                return Err(SqlError::new(
                    "0Z002",
                    "THROW without parameters must be inside a CATCH block (SQL Server error 10704)",
                ));
            };
            // Re-raised where it first happened (as SQL Server's ERROR_LINE() then says).
            self.failed_at = caught.place.clone();
            return Err(caught.error.clone());
        }
        let [number, message, state] = args.as_slice() else {
            return Err(syntax_near(toks.last()));
        };
        let number = match self.eval(number)? {
            Value::Int(n) if n >= USER_ERROR_NUMBER => n,
            other => {
                return Err(SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!(
                        "the error number of THROW must be 50000 or more, not {} (SQL Server error 35100)",
                        other.to_pg_text(None).unwrap_or_default()
                    ),
                ));
            }
        };
        let message = self.eval(message)?.to_pg_text(None).unwrap_or_default();
        self.eval(state)?;
        Err(user_error(number, &message))
    }

    /// `RAISERROR (message, severity, state [, arg …])`: severity 11 or more is an error
    /// (error 50000); 10 or less a message, printed as PRINT's. `%s`, `%d`, `%i` and `%u`
    /// take the arguments in order.
    pub(super) fn raiserror(&mut self, toks: &[Token]) -> SqlResult<()> {
        let inner = match toks.get(1..) {
            Some([Token::LParen, inner @ .., Token::RParen]) => inner,
            _ => return Err(syntax_near(toks.get(1))),
        };
        let args = split_top_level(inner, |t| matches!(t, Token::Comma));
        let [message, severity, state, rest @ ..] = args.as_slice() else {
            return Err(syntax_near(toks.last()));
        };
        let format = self.eval(message)?.to_pg_text(None).unwrap_or_default();
        let severity = match self.eval(severity)? {
            Value::Int(n) => n,
            _ => return Err(syntax_near(severity.first())),
        };
        self.eval(state)?;
        let mut values = Vec::new();
        for arg in rest {
            values.push(self.eval(arg)?.to_pg_text(None).unwrap_or_default());
        }
        let text = printf(&format, &values);
        if severity <= 10 {
            self.output.push(TsqlOutput::Print(text));
            return Ok(());
        }
        Err(user_error(USER_ERROR_NUMBER, &text))
    }
}

/// RAISERROR's substitution: each `%s`, `%d`, `%i`, `%u` takes the next argument; `%%` is `%`.
fn printf(format: &str, args: &[String]) -> String {
    let mut out = String::with_capacity(format.len());
    let mut args = args.iter();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('%', Some('%')) => {
                out.push('%');
                chars.next();
            }
            ('%', Some('s' | 'd' | 'i' | 'u')) => {
                chars.next();
                out.push_str(args.next().map_or("(null)", String::as_str));
            }
            (c, _) => out.push(c),
        }
    }
    out
}

/// An argument given by position or as `@name = value` (sp_executesql's `@stmt` and
/// `@params`): its value's tokens.
fn named_arg<'a>(arg: &'a [Token], name: &str) -> &'a [Token] {
    match arg {
        [var, Token::Eq, value @ ..] if var.to_string().eq_ignore_ascii_case(name) => value,
        other => other,
    }
}

/// Loads a stored procedure's text.
pub(super) fn parse_procedure(text: &str) -> SqlResult<Procedure> {
    match parse::parse_batch(text)?
        .into_iter()
        .next()
        .map(Stmt::into_unlocated)
    {
        Some(Stmt::CreateProcedure(procedure)) => Ok(procedure),
        _ => Err(syntax_near(None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printf_substitutes_in_order() {
        let args = ["a".to_string(), "7".to_string()];
        assert_eq!(printf("x %s y %d %% z %s", &args), "x a y 7 % z (null)");
    }

    #[test]
    fn error_numbers_come_from_the_message_or_the_sqlstate() {
        assert_eq!(error_number(&user_error(50001, "boom")), 50001);
        assert_eq!(error_text(&user_error(50001, "boom")), "boom");
        assert_eq!(
            error_number(&SqlError::new("22012", "division by zero")),
            8134
        );
        assert_eq!(error_number(&SqlError::new("XX000", "other")), 50000);
    }
}
