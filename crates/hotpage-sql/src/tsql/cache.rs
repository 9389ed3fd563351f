//! Statements prepared once per session: a WHILE loop runs the same few expressions and
//! INSERTs many times, and parsing and planning each one's translated text per iteration
//! cost more than running it. Each is translated with its variables as typed parameters
//! (`CAST($1 AS integer)`), prepared on the session underneath, and kept under its tokens;
//! later runs look it up and execute the plan with the variables' current values.
//!
//! The key is the statement's tokens (with what kind of evaluation it is), not its place
//! in a batch: a token slice's address could be reused by another statement once its batch
//! is freed, its content cannot lie. Its translation depends on the types of the variables
//! it reads (`+` on a text variable is `||`), so an entry keeps them and is used only when
//! they match.
//!
//! Not prepared (run as text each time, as before): a statement that calls a user
//! function (the call runs first and its value goes in as a literal), and one whose
//! translation read the catalog or the session's state (`OBJECT_ID`, the `sys.objects`
//! guard, `@@ROWCOUNT`, `@@IDENTITY`, `SCOPE_IDENTITY()`): those are constants in the text,
//! fixed when it was translated. The session empties the cache on its own DDL, when the
//! stored T-SQL objects change, and after any error of a prepared statement (a plan that
//! names a table another session dropped fails once, then is planned again).

use super::translate::Resolve;
use crate::error::SqlResult;
use crate::session::Prepared;
use crate::value::Value;
use sqlparser::tokenizer::Token;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

/// Entries kept before the cache starts again (a script of many distinct statements).
const ENTRIES_MAX: usize = 4096;

/// What the tokens are evaluated as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// `SELECT expr`.
    Value,
    /// `SELECT CAST((expr) AS type)`.
    Typed,
    /// `SELECT CAST((var) op (expr) AS type)` (`SET @v += expr`).
    Compound(char),
    /// A statement (INSERT, SELECT).
    Statement,
}

/// A translated statement as prepared.
pub(crate) enum Plan {
    Prepared {
        prepared: Prepared,
        /// The variables bound to `$1`, `$2` … and the types they had.
        vars: Vec<(String, String)>,
        /// The translated text, for errors.
        text: String,
    },
    /// Run as text each time.
    Unprepared,
}

pub(crate) struct Entry {
    kind: Kind,
    /// What else the translation depends on (the target variable and type).
    extra: String,
    toks: Vec<Token>,
    pub plan: Plan,
}

impl Entry {
    /// Whether the variables it reads still have the types it was translated with.
    pub fn matches(&self, vars: &HashMap<String, (Value, String)>) -> bool {
        match &self.plan {
            Plan::Prepared { vars: used, .. } => used
                .iter()
                .all(|(name, ty)| vars.get(name).is_some_and(|(_, t)| t == ty)),
            Plan::Unprepared => true,
        }
    }
}

#[derive(Default)]
pub(crate) struct StatementCache {
    entries: HashMap<u64, Vec<Arc<Entry>>>,
    len: usize,
}

fn hash_of(kind: Kind, extra: &str, toks: &[Token]) -> u64 {
    let mut hasher = DefaultHasher::new();
    kind.hash(&mut hasher);
    extra.hash(&mut hasher);
    toks.hash(&mut hasher);
    hasher.finish()
}

impl StatementCache {
    pub fn get(&self, kind: Kind, extra: &str, toks: &[Token]) -> Option<Arc<Entry>> {
        self.entries
            .get(&hash_of(kind, extra, toks))?
            .iter()
            .find(|e| e.kind == kind && e.extra == extra && e.toks == toks)
            .cloned()
    }

    pub fn insert(&mut self, kind: Kind, extra: &str, toks: &[Token], plan: Plan) -> Arc<Entry> {
        if self.len >= ENTRIES_MAX {
            self.clear();
        }
        let entry = Arc::new(Entry {
            kind,
            extra: extra.to_string(),
            toks: toks.to_vec(),
            plan,
        });
        let bucket = self.entries.entry(hash_of(kind, extra, toks)).or_default();
        bucket.retain(|e| !(e.kind == kind && e.extra == extra && e.toks == toks));
        bucket.push(Arc::clone(&entry));
        self.len += 1;
        entry
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.len = 0;
    }
}

/// Translates with variables as typed parameters, and notes whether the text read
/// anything that is fixed when translated (then it is not prepared).
pub(crate) struct Parameters<'a> {
    session: &'a dyn Resolve,
    types: &'a HashMap<String, (Value, String)>,
    vars: RefCell<Vec<(String, String)>>,
    volatile: Cell<bool>,
}

impl<'a> Parameters<'a> {
    pub fn new(
        session: &'a dyn Resolve,
        types: &'a HashMap<String, (Value, String)>,
    ) -> Parameters<'a> {
        Parameters {
            session,
            types,
            vars: RefCell::new(Vec::new()),
            volatile: Cell::new(false),
        }
    }

    /// The variables bound, and whether the text may be prepared.
    pub fn finish(self) -> (Vec<(String, String)>, bool) {
        (self.vars.into_inner(), !self.volatile.get())
    }
}

impl Resolve for Parameters<'_> {
    fn variable(&self, name: &str) -> SqlResult<String> {
        let Some((_, ty)) = self.types.get(name) else {
            // The session's own error (must declare the scalar variable).
            return self.session.variable(name);
        };
        let mut vars = self.vars.borrow_mut();
        let index = match vars.iter().position(|(n, _)| n == name) {
            Some(at) => at,
            None => {
                vars.push((name.to_string(), ty.clone()));
                vars.len() - 1
            }
        };
        Ok(format!("CAST(${} AS {ty})", index + 1))
    }

    fn is_text_variable(&self, name: &str) -> bool {
        self.session.is_text_variable(name)
    }

    fn global(&self, name: &str) -> SqlResult<String> {
        self.volatile.set(true);
        self.session.global(name)
    }

    fn object_id(&self, name: &str, object_type: Option<&str>) -> Option<i64> {
        self.volatile.set(true);
        self.session.object_id(name, object_type)
    }

    fn object_exists(&self, name: &str, types: &[String]) -> bool {
        self.volatile.set(true);
        self.session.object_exists(name, types)
    }

    fn session_trace_flag(&self, flag: u32) -> bool {
        // DBCC TRACEON/TRACEOFF can change it between two runs of the statement.
        self.volatile.set(true);
        self.session.session_trace_flag(flag)
    }
}

/// The values of a prepared entry's variables, in `$n` order.
pub(crate) fn bind(
    vars: &[(String, String)],
    values: &HashMap<String, (Value, String)>,
) -> SqlResult<Vec<Value>> {
    vars.iter()
        .map(|(name, _)| {
            values
                .get(name)
                .map(|(v, _)| v.clone())
                .ok_or_else(|| super::undeclared(name))
        })
        .collect()
}
