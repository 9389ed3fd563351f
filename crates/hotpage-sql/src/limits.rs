//! What one statement may hold in memory, so that no query can take the process down:
//! a value is at most 1 GB (PostgreSQL's limit), and the rows a query keeps (tables read,
//! join rows, sort input, groups, WITH queries) are at most `hotpage.query_memory` bytes.
//! Past either, the statement fails with 54000 (program_limit_exceeded) and the session
//! goes on. PostgreSQL would spill a large sort or hash to disk; hotpage does not (yet),
//! so the bound is what keeps an allocation failure, which aborts a Rust process and with
//! it every session of a server, out of reach.
//!
//! The count is of bytes, not values: a row of ten 100 KB strings weighs 1 MB here. Each
//! engine charges what it keeps as it keeps it (see [`MemoryBudget`]), so a query stops
//! near the bound, not after it has allocated far past it.

use crate::error::{SqlError, SqlResult, sqlstate};
use crate::value::Value;
use std::collections::HashMap;

/// The longest text (or bytea) a value may be: PostgreSQL's 1 GB less one byte.
pub(crate) const TEXT_BYTES_MAX: usize = (1 << 30) - 1;

/// The most elements an array may have (PostgreSQL's `MaxArraySize`).
pub(crate) const ARRAY_ITEMS_MAX: usize = 134_217_727;

/// The setting that bounds a query's memory, and its default.
pub(crate) const QUERY_MEMORY_SETTING: &str = "hotpage.query_memory";
/// 1GB: a query over a few hundred MB of table, whose rows a join copies once more,
/// still runs; a server's sessions each have their own.
pub(crate) const QUERY_MEMORY_DEFAULT: &str = "1GB";
const QUERY_MEMORY_DEFAULT_BYTES: usize = 1 << 30;
/// Below this, catalog queries psql sends for `\d` would not fit.
const QUERY_MEMORY_MIN_BYTES: usize = 1 << 20;

/// 54000 for a text of `len` bytes past [`TEXT_BYTES_MAX`].
pub(crate) fn check_text_len(len: usize) -> SqlResult<()> {
    if len > TEXT_BYTES_MAX {
        return Err(text_too_long());
    }
    Ok(())
}

/// PostgreSQL's error for a text past 1 GB.
pub(crate) fn text_too_long() -> SqlError {
    SqlError::new(
        sqlstate::PROGRAM_LIMIT_EXCEEDED,
        "requested length too large",
    )
}

/// 54000 for an array of `items` elements past [`ARRAY_ITEMS_MAX`].
pub(crate) fn check_array_len(items: usize) -> SqlResult<()> {
    if items > ARRAY_ITEMS_MAX {
        return Err(SqlError::new(
            sqlstate::PROGRAM_LIMIT_EXCEEDED,
            format!("array size exceeds the maximum allowed ({ARRAY_ITEMS_MAX})"),
        ));
    }
    Ok(())
}

/// A memory size as PostgreSQL writes one: a number with `B`, `kB`, `MB`, `GB` or `TB`
/// (a bare number is kB, as for `work_mem`). `None` if it is not one, or past `usize`.
pub(crate) fn parse_memory(text: &str) -> Option<usize> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: usize = number.parse().ok()?;
    let scale: usize = match unit.trim() {
        "B" => 1,
        "" | "kB" => 1 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        "TB" => 1 << 40,
        _ => return None,
    };
    number.checked_mul(scale)
}

/// Whether `text` is a value `SET hotpage.query_memory` takes; the error says why not.
pub(crate) fn check_query_memory(text: &str) -> SqlResult<()> {
    match parse_memory(text) {
        Some(bytes) if bytes >= QUERY_MEMORY_MIN_BYTES => Ok(()),
        parsed => Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"{QUERY_MEMORY_SETTING}\": \"{text}\""),
        )
        .with_hint(if parsed.is_some() {
            "It must be at least 1MB."
        } else {
            "Write a size such as 64MB or 2GB (valid units: B, kB, MB, GB, TB)."
        })),
    }
}

/// The bound in force for a session whose `SET` values are `settings`.
pub(crate) fn query_memory_bytes(settings: &HashMap<String, String>) -> usize {
    settings
        .get(QUERY_MEMORY_SETTING)
        .and_then(|text| parse_memory(text))
        .unwrap_or(QUERY_MEMORY_DEFAULT_BYTES)
}

/// What a statement holds, against its bound.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemoryBudget {
    held_bytes: usize,
    max_bytes: usize,
}

impl MemoryBudget {
    pub fn new(max_bytes: usize) -> MemoryBudget {
        MemoryBudget {
            held_bytes: 0,
            max_bytes,
        }
    }

    /// Counts `bytes` more held; 54000 once the total passes the bound.
    pub fn charge(&mut self, bytes: usize) -> SqlResult<()> {
        self.held_bytes = self.held_bytes.saturating_add(bytes);
        if self.held_bytes > self.max_bytes {
            return Err(self.exceeded());
        }
        Ok(())
    }

    /// Gives back `bytes` no longer held.
    pub fn release(&mut self, bytes: usize) {
        self.held_bytes = self.held_bytes.saturating_sub(bytes);
    }

    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    /// Sets what is held (after a step that dropped what it made but kept its output).
    pub fn set_held_bytes(&mut self, bytes: usize) {
        self.held_bytes = bytes;
    }

    fn exceeded(&self) -> SqlError {
        SqlError::new(
            sqlstate::PROGRAM_LIMIT_EXCEEDED,
            format!(
                "this query would hold more than {} in memory (the rows it reads, joins, sorts or groups)",
                show_bytes(self.max_bytes)
            ),
        )
        .with_hint(format!(
            "Narrow the rows with WHERE or LIMIT, join on an equality of the two sides' columns, or raise the bound: SET {QUERY_MEMORY_SETTING} = '2GB'."
        ))
    }
}

/// `bytes` in the largest unit that writes it whole (`512MB`, `1536kB`).
fn show_bytes(bytes: usize) -> String {
    for (unit, scale) in [
        ("TB", 1usize << 40),
        ("GB", 1 << 30),
        ("MB", 1 << 20),
        ("kB", 1 << 10),
    ] {
        if bytes >= scale && bytes.is_multiple_of(scale) {
            return format!("{}{unit}", bytes / scale);
        }
    }
    format!("{bytes}B")
}

/// What a value weighs in memory: its own size and what it points to.
pub(crate) fn value_bytes(v: &Value) -> usize {
    std::mem::size_of::<Value>() + value_heap_bytes(v)
}

/// What a value points to (its text or bytes), beyond its own size.
pub(crate) fn value_heap_bytes(v: &Value) -> usize {
    match v {
        Value::Text(s) => s.len(),
        Value::Bytes(b) => b.len(),
        _ => 0,
    }
}

/// What a row of values weighs in memory.
pub(crate) fn row_bytes(row: &[Value]) -> usize {
    std::mem::size_of::<Vec<Value>>() + row.iter().map(value_bytes).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes_parse_as_postgresql_writes_them() {
        assert_eq!(parse_memory("512MB"), Some(512 << 20));
        assert_eq!(parse_memory(" 2GB "), Some(2 << 30));
        assert_eq!(parse_memory("64"), Some(64 << 10));
        assert_eq!(parse_memory("100B"), Some(100));
        assert_eq!(parse_memory("1 kB"), Some(1024));
        for bad in ["", "MB", "12XB", "-1MB", "1.5GB", "99999999999999999999TB"] {
            assert_eq!(parse_memory(bad), None, "{bad}");
        }
        assert!(check_query_memory("1MB").is_ok());
        let small = check_query_memory("512kB").expect_err("below 1MB");
        assert_eq!(small.sqlstate, sqlstate::INVALID_PARAMETER_VALUE);
        assert_eq!(show_bytes(512 << 20), "512MB");
        assert_eq!(show_bytes(1536 << 10), "1536kB");
        assert_eq!(show_bytes(1000), "1000B");
    }

    #[test]
    fn a_budget_fails_past_its_bound_and_takes_back_what_is_released() {
        let mut budget = MemoryBudget::new(100);
        budget.charge(60).expect("within");
        budget.release(30);
        budget.charge(70).expect("at the bound");
        let error = budget.charge(1).expect_err("past the bound");
        assert_eq!(error.sqlstate, sqlstate::PROGRAM_LIMIT_EXCEEDED);
        assert!(error.message.contains("100B"), "{error:?}");
        assert!(row_bytes(&[Value::Text("x".repeat(1000))]) > 1000);
    }
}
