//! Run-time settings as clients read them: `SHOW`, `current_setting()`, `set_config()` and
//! the `pg_settings` view share this table of PostgreSQL's settings that drivers and psql
//! look at, with the values hotpage has (a session's `SET` overrides a default).

use std::collections::HashMap;

/// The PostgreSQL version hotpage reports (`server_version`, `version()`): the one whose
/// catalog (`pg_catalog`, as psql 15 queries it) hotpage provides. psql picks its catalog
/// queries by this number.
pub const SERVER_VERSION: &str = "15.0";
/// `server_version_num`.
pub(crate) const SERVER_VERSION_NUM: &str = "150000";

/// One setting: its canonical name, default, unit, category, description, context, type.
pub(crate) struct Setting {
    pub name: &'static str,
    pub default: &'static str,
    pub unit: Option<&'static str>,
    pub category: &'static str,
    pub short_desc: &'static str,
    pub context: &'static str,
    pub vartype: &'static str,
}

const LOCALE: &str = "Client Connection Defaults / Locale and Formatting";
const STATEMENT: &str = "Client Connection Defaults / Statement Behavior";
const PRESET: &str = "Preset Options";

const fn setting(
    name: &'static str,
    default: &'static str,
    category: &'static str,
    short_desc: &'static str,
    context: &'static str,
    vartype: &'static str,
) -> Setting {
    Setting {
        name,
        default,
        unit: None,
        category,
        short_desc,
        context,
        vartype,
    }
}

/// The settings, in name order (case-insensitively), as `pg_settings` lists them.
pub(crate) const SETTINGS: &[Setting] = &[
    setting(
        "application_name",
        "",
        "Reporting and Logging / What to Log",
        "Sets the application name to be reported in statistics and logs.",
        "user",
        "string",
    ),
    setting(
        "bytea_output",
        "hex",
        STATEMENT,
        "Sets the output format for bytea.",
        "user",
        "enum",
    ),
    setting(
        "client_encoding",
        "UTF8",
        LOCALE,
        "Sets the client's character set encoding.",
        "user",
        "string",
    ),
    setting(
        "client_min_messages",
        "notice",
        STATEMENT,
        "Sets the message levels that are sent to the client.",
        "user",
        "enum",
    ),
    setting(
        "DateStyle",
        "ISO, MDY",
        LOCALE,
        "Sets the display format for date and time values.",
        "user",
        "string",
    ),
    setting(
        "default_transaction_isolation",
        "read committed",
        STATEMENT,
        "Sets the transaction isolation level of each new transaction.",
        "user",
        "enum",
    ),
    setting(
        "default_transaction_read_only",
        "off",
        STATEMENT,
        "Sets the default read-only status of new transactions.",
        "user",
        "bool",
    ),
    setting(
        "extra_float_digits",
        "1",
        LOCALE,
        "Sets the number of digits displayed for floating-point values.",
        "user",
        "integer",
    ),
    setting(
        crate::limits::QUERY_MEMORY_SETTING,
        crate::limits::QUERY_MEMORY_DEFAULT,
        "Resource Usage / Memory",
        "Sets the most memory one query may hold (past it the query fails with 54000).",
        "user",
        "string",
    ),
    Setting {
        unit: Some("ms"),
        ..setting(
            "idle_in_transaction_session_timeout",
            "0",
            STATEMENT,
            "Sets the maximum allowed idle time between queries, when in a transaction.",
            "user",
            "integer",
        )
    },
    Setting {
        unit: Some("ms"),
        ..setting(
            "idle_session_timeout",
            "0",
            STATEMENT,
            "Sets the maximum allowed idle time between queries, when not in a transaction.",
            "user",
            "integer",
        )
    },
    setting(
        "integer_datetimes",
        "on",
        PRESET,
        "Shows whether datetimes are integer based.",
        "internal",
        "bool",
    ),
    setting(
        "IntervalStyle",
        "postgres",
        LOCALE,
        "Sets the display format for interval values.",
        "user",
        "enum",
    ),
    setting(
        "is_superuser",
        "on",
        PRESET,
        "Shows whether the current user is a superuser.",
        "internal",
        "bool",
    ),
    setting(
        "lc_collate",
        "C",
        PRESET,
        "Shows the collation order locale.",
        "internal",
        "string",
    ),
    setting(
        "lc_ctype",
        "C",
        PRESET,
        "Shows the character classification and case conversion locale.",
        "internal",
        "string",
    ),
    Setting {
        unit: Some("ms"),
        ..setting(
            "lock_timeout",
            "0",
            STATEMENT,
            "Sets the maximum allowed duration of any wait for a lock.",
            "user",
            "integer",
        )
    },
    setting(
        "max_identifier_length",
        "63",
        PRESET,
        "Shows the maximum identifier length.",
        "internal",
        "integer",
    ),
    setting(
        "row_security",
        "on",
        STATEMENT,
        "Enable row security.",
        "user",
        "bool",
    ),
    setting(
        "search_path",
        "\"$user\", public",
        STATEMENT,
        "Sets the schema search order for names that are not schema-qualified.",
        "user",
        "string",
    ),
    setting(
        "server_encoding",
        "UTF8",
        PRESET,
        "Shows the server (database) character set encoding.",
        "internal",
        "string",
    ),
    setting(
        "server_version",
        SERVER_VERSION,
        PRESET,
        "Shows the server version.",
        "internal",
        "string",
    ),
    setting(
        "server_version_num",
        SERVER_VERSION_NUM,
        PRESET,
        "Shows the server version as an integer.",
        "internal",
        "integer",
    ),
    setting(
        "session_authorization",
        super::builtin::OWNER_NAME,
        "Unknown",
        "Sets the session user name.",
        "superuser",
        "string",
    ),
    setting(
        "standard_conforming_strings",
        "on",
        "Version and Platform Compatibility / Previous PostgreSQL Versions",
        "Causes '...' strings to treat backslashes literally.",
        "user",
        "bool",
    ),
    Setting {
        unit: Some("ms"),
        ..setting(
            "statement_timeout",
            "0",
            STATEMENT,
            "Sets the maximum allowed duration of any statement.",
            "user",
            "integer",
        )
    },
    setting(
        "synchronous_commit",
        "on",
        "Write-Ahead Log / Settings",
        "Sets the current transaction's synchronization level.",
        "user",
        "enum",
    ),
    setting(
        "TimeZone",
        "UTC",
        LOCALE,
        "Sets the time zone for displaying and interpreting time stamps.",
        "user",
        "string",
    ),
    setting(
        "transaction_isolation",
        "read committed",
        STATEMENT,
        "Sets the current transaction's isolation level.",
        "user",
        "enum",
    ),
    setting(
        "transaction_read_only",
        "off",
        STATEMENT,
        "Sets the current transaction's read-only status.",
        "user",
        "bool",
    ),
];

/// The setting named `name` (case-insensitively).
pub(crate) fn find(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name.eq_ignore_ascii_case(name))
}

/// The value a session sees: what it `SET`, else the default. `None` for a name that is
/// neither a known setting nor one the session set.
pub(crate) fn value(set_values: &HashMap<String, String>, name: &str) -> Option<String> {
    let folded = name.to_lowercase();
    if let Some(set) = set_values.get(&folded) {
        return Some(set.clone());
    }
    find(&folded).map(|s| s.default.to_string())
}

/// The schemas of `search_path` that exist, in order (`"$user"` names no schema here, as
/// no schema is named after the role).
pub(crate) fn search_path(set_values: &HashMap<String, String>) -> Vec<String> {
    value(set_values, "search_path")
        .unwrap_or_default()
        .split(',')
        .map(|part| part.trim().trim_matches('"').to_string())
        .filter(|part| !part.is_empty() && part != "$user")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_in_name_order_and_set_values_win() {
        let names: Vec<String> = SETTINGS.iter().map(|s| s.name.to_lowercase()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        let mut set_values = HashMap::new();
        assert_eq!(value(&set_values, "DATESTYLE").as_deref(), Some("ISO, MDY"));
        set_values.insert("datestyle".to_string(), "ISO, DMY".to_string());
        assert_eq!(value(&set_values, "DateStyle").as_deref(), Some("ISO, DMY"));
        assert_eq!(value(&set_values, "no_such_setting"), None);
        assert_eq!(search_path(&set_values), vec!["public".to_string()]);
    }
}
