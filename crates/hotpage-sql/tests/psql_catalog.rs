//! psql's describe queries against hotpage's pg_catalog, compared with PostgreSQL 15.
//!
//! `tests/psql/` holds, for each meta-command in `commands.txt`, the queries psql 15 sent
//! (`NN.sql`, verbatim from `psql -E`) and what PostgreSQL 15 answered (`NN.out`: column
//! names and types, then the rows in COPY text format), for the tables of `setup.sql`.
//! `tests/psql/queries/` holds hand-written catalog queries (joins, subqueries, set
//! operations, grouping, information_schema) with PostgreSQL's answers, the same way.
//! `scripts/capture_psql_fixtures.sh` made them. Each test here makes the same tables in
//! hotpage, runs each query through `SqlSession::execute` and compares the answer.
//!
//! Normalisation, and nothing else:
//! - **OIDs.** PostgreSQL numbered the tables 16385…; hotpage numbers them its own way. psql
//!   puts the OID its first query found into the later ones (`WHERE c.oid = '16386'`), so
//!   each PostgreSQL OID of `oids.txt` is replaced in the query text by hotpage's OID of
//!   the relation with the same name, and in both answers a cell holding a user
//!   relation's OID reads `<oid:name>`.
//! - **Column types** are compared as PostgreSQL names them, except that the `reg*`,
//!   vector and array types are `text` in hotpage (it sends them as their text form; the
//!   cells are compared as text anyway).
//! - **`\l`**: PostgreSQL's cluster also has the databases `postgres`, `template0` and
//!   `template1`; hotpage has one database, so only PostgreSQL's `hotpage` row is expected.

use hotpage::{Database, MemStorage, Options, Storage};
use hotpage_sql::{SqlDatabase, SqlSession, StatementResult};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/psql")
}

fn open() -> Arc<SqlDatabase> {
    static SEED: AtomicU64 = AtomicU64::new(1);
    let mem: Arc<dyn Storage> = MemStorage::new(SEED.fetch_add(1, Ordering::Relaxed));
    let engine =
        Database::open_with_storage(mem, Path::new("m"), Options::default()).expect("open");
    SqlDatabase::new(Arc::new(engine)).expect("sql")
}

/// A session of a database holding setup.sql's tables.
fn session_with_tables() -> SqlSession {
    let mut session = open().session();
    let setup = std::fs::read_to_string(fixtures().join("setup.sql")).expect("setup.sql");
    session.execute(&setup).expect("setup.sql runs on hotpage");
    session
}

/// PostgreSQL's answer to one query.
struct Expected {
    columns: Vec<(String, String)>,
    rows: Vec<Vec<Option<String>>>,
}

/// Reads an `NN.out`: `-- columns`, name<TAB>type lines, `-- rows`, COPY text rows.
fn read_expected(path: &Path) -> Expected {
    let text = std::fs::read_to_string(path).expect("fixture answer");
    let (columns, rows) = text
        .strip_prefix("-- columns\n")
        .and_then(|t| t.split_once("-- rows\n"))
        .unwrap_or_else(|| panic!("{}: no -- columns / -- rows", path.display()));
    let columns = columns
        .lines()
        .map(|l| {
            let (name, ty) = l.split_once('\t').expect("name<TAB>type");
            (name.to_string(), ty.to_string())
        })
        .collect();
    let rows = rows
        .lines()
        .map(|l| l.split('\t').map(copy_field).collect())
        .collect();
    Expected { columns, rows }
}

/// A COPY text field: `\N` is NULL; backslash escapes.
fn copy_field(field: &str) -> Option<String> {
    if field == "\\N" {
        return None;
    }
    let mut out = String::new();
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    Some(out)
}

/// PostgreSQL's OIDs of setup.sql's relations (`oids.txt`), by name.
fn postgres_oids() -> HashMap<String, String> {
    std::fs::read_to_string(fixtures().join("oids.txt"))
        .expect("oids.txt")
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(oid, name)| (name.to_string(), oid.to_string()))
        .collect()
}

/// hotpage's OIDs of the public schema's relations, by name.
fn hotpage_oids(session: &mut SqlSession) -> HashMap<String, String> {
    let result = session
        .execute("SELECT relname, oid FROM pg_catalog.pg_class WHERE relnamespace = 2200")
        .expect("pg_class")
        .remove(0);
    result
        .rows
        .iter()
        .map(|row| {
            let text = |i: usize| row[i].to_pg_text(None).unwrap_or_default();
            (text(0), text(1))
        })
        .collect()
}

/// The answer's cells as text, with user OIDs named.
fn actual_rows(
    result: &StatementResult,
    oid_names: &HashMap<String, String>,
) -> Vec<Vec<Option<String>>> {
    result
        .rows
        .iter()
        .map(|row| {
            row.iter()
                .zip(&result.columns)
                .map(|(v, c)| v.to_pg_text(Some(&c.ty)).map(|t| name_oid(t, oid_names)))
                .collect()
        })
        .collect()
}

fn name_oid(text: String, oid_names: &HashMap<String, String>) -> String {
    match oid_names.get(&text) {
        Some(name) => format!("<oid:{name}>"),
        None => text,
    }
}

/// The query with each quoted PostgreSQL OID (`'16386'`) replaced by hotpage's OID of the
/// same relation, in one pass (the two numberings overlap).
fn map_oids(
    query: &str,
    pg_names: &HashMap<String, String>,
    ours: &HashMap<String, String>,
) -> String {
    query
        .split('\'')
        .enumerate()
        .map(|(i, part)| {
            let quoted = i % 2 == 1;
            match pg_names.get(part).and_then(|name| ours.get(name)) {
                Some(our_oid) if quoted => our_oid.clone(),
                _ => part.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("'")
}

/// The type as PostgreSQL's `\gdesc` names it, for comparison.
fn comparable_type(pg: &str) -> &str {
    match pg {
        "regclass" | "regtype" | "regnamespace" | "int2vector" | "oidvector" => "text",
        array if array.ends_with("[]") => "text",
        other => other,
    }
}

/// Runs every query psql sent for one meta-command and compares each answer.
fn check_command(slug: &str) {
    let mut session = session_with_tables();
    let pg = postgres_oids();
    let ours = hotpage_oids(&mut session);
    let pg_names: HashMap<String, String> =
        pg.iter().map(|(n, o)| (o.clone(), n.clone())).collect();
    let our_names: HashMap<String, String> =
        ours.iter().map(|(n, o)| (o.clone(), n.clone())).collect();
    let dir = fixtures().join(slug);
    let mut queries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    queries.sort();
    assert!(!queries.is_empty(), "{slug}: no queries captured");
    for query_path in queries {
        let query = map_oids(
            &std::fs::read_to_string(&query_path).expect("query"),
            &pg_names,
            &ours,
        );
        let expected = read_expected(&query_path.with_extension("out"));
        let result = session
            .execute(&query)
            .unwrap_or_else(|e| panic!("{}: {e}\n{query}", query_path.display()))
            .pop()
            .expect("one result");
        let where_ = query_path.display();
        let names: Vec<&str> = result.columns.iter().map(|c| c.name.as_str()).collect();
        let expected_names: Vec<&str> = expected.columns.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, expected_names, "{where_}: column names");
        let types: Vec<String> = result.columns.iter().map(|c| c.ty.name()).collect();
        let expected_types: Vec<&str> = expected
            .columns
            .iter()
            .map(|(_, t)| comparable_type(t))
            .collect();
        assert_eq!(types, expected_types, "{where_}: column types");
        let mut want: Vec<Vec<Option<String>>> = expected
            .rows
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .map(|c| c.map(|t| name_oid(t, &pg_names)))
                    .collect()
            })
            .collect();
        if slug == "l" {
            want.retain(|row| row.first() == Some(&Some("hotpage".to_string())));
        }
        assert_eq!(
            actual_rows(&result, &our_names),
            want,
            "{where_}: rows\n{query}"
        );
    }
}

macro_rules! psql_command_tests {
    ($($name:ident => $slug:literal,)*) => {
        $(
            #[test]
            fn $name() {
                check_command($slug);
            }
        )*
    };
}

psql_command_tests! {
    list_relations => "d",
    list_tables => "dt",
    list_tables_matching => "dt_ord",
    describe_identity_table => "d_orders",
    describe_uuid_table => "d_events",
    describe_heap => "d_log_heap",
    describe_user_key_table => "d_kv",
    describe_hash_prefix_table => "d_hp",
    describe_sequence_default_table => "d_tickets",
    describe_missing => "d_nosuch",
    list_tables_missing => "dt_nosuch",
    describe_index => "d_orders_pkey",
    describe_identity_sequence => "d_orders_id_seq",
    describe_sequence => "d_ticket_seq",
    list_indexes => "di",
    list_sequences => "ds",
    list_schemas => "dn",
    list_databases => "l",
    hand_written_catalog_queries => "queries",
}

/// Every fixture directory has its test above (a newly captured command needs one).
#[test]
fn every_captured_command_is_tested() {
    let tested = [
        "d",
        "dt",
        "dt_ord",
        "d_orders",
        "d_events",
        "d_log_heap",
        "d_kv",
        "d_hp",
        "d_tickets",
        "d_nosuch",
        "dt_nosuch",
        "d_orders_pkey",
        "d_orders_id_seq",
        "d_ticket_seq",
        "di",
        "ds",
        "dn",
        "l",
        "queries",
    ];
    for entry in std::fs::read_dir(fixtures()).expect("fixtures") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            let slug = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            assert!(
                tested.contains(&slug.as_str()),
                "no test for fixture {slug}"
            );
        }
    }
}

/// A table made after the fact is in `\dt`'s answer; a dropped one is not.
#[test]
fn a_new_table_shows_up_in_dt() {
    let mut session = session_with_tables();
    let dt = std::fs::read_to_string(fixtures().join("dt/01.sql")).expect("\\dt query");
    let names = |session: &mut SqlSession| -> Vec<String> {
        let result = session.execute(&dt).expect("\\dt").pop().expect("result");
        result
            .rows
            .iter()
            .map(|r| r[1].to_pg_text(None).unwrap_or_default())
            .collect()
    };
    assert!(!names(&mut session).contains(&"fresh".to_string()));
    session
        .execute("CREATE TABLE fresh (id int PRIMARY KEY, v text)")
        .expect("create");
    let after = names(&mut session);
    assert!(after.contains(&"fresh".to_string()), "{after:?}");
    let mut sorted = after.clone();
    sorted.sort();
    assert_eq!(after, sorted, "\\dt orders by name");
    session.execute("DROP TABLE fresh").expect("drop");
    assert!(!names(&mut session).contains(&"fresh".to_string()));
}

/// What psql and psycopg2 sent on their own around a statement (`connect.txt`, from
/// PostgreSQL's log: nothing at connect, then psycopg2's BEGIN/COMMIT) runs on hotpage.
#[test]
fn what_clients_send_at_connect_runs() {
    let mut session = session_with_tables();
    let statements = std::fs::read_to_string(fixtures().join("connect.txt")).expect("connect.txt");
    assert!(statements.lines().count() >= 1, "connect.txt is empty");
    for statement in statements.lines() {
        let result = session
            .execute(statement)
            .unwrap_or_else(|e| panic!("{statement}: {e}"))
            .pop()
            .expect("a result");
        if statement.contains("pg_class") {
            let names: Vec<String> = result
                .rows
                .iter()
                .map(|r| r[0].to_pg_text(None).unwrap_or_default())
                .collect();
            assert_eq!(names, ["orders"]);
        }
    }
}
