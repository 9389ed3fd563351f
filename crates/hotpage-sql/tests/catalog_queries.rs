//! What drivers send at connect time and when they meet a type, and catalog queries that
//! must fail with PostgreSQL's SQLSTATE rather than answer wrongly. Expected rows are
//! PostgreSQL 15's answers to the same statements (for the same tables).

use hotpage::{Database, MemStorage, Options, Storage};
use hotpage_sql::{SqlDatabase, SqlSession, SqlType, StatementResult, Value};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

fn session() -> SqlSession {
    static SEED: AtomicU64 = AtomicU64::new(100);
    let mem: Arc<dyn Storage> = MemStorage::new(SEED.fetch_add(1, Ordering::Relaxed));
    let engine =
        Database::open_with_storage(mem, Path::new("m"), Options::default()).expect("open");
    let mut session = SqlDatabase::new(Arc::new(engine)).expect("sql").session();
    session
        .execute(
            "CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, \
             ref uuid DEFAULT gen_random_uuid(), customer varchar(40) NOT NULL, \
             amount numeric(12,2), note text)",
        )
        .expect("create");
    session
}

fn one(session: &mut SqlSession, sql: &str) -> StatementResult {
    session
        .execute(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .pop()
        .expect("a result")
}

/// Each row's cells as PostgreSQL's text (NULL as `None`).
fn texts(result: &StatementResult) -> Vec<Vec<Option<String>>> {
    result
        .rows
        .iter()
        .map(|row| {
            row.iter()
                .zip(&result.columns)
                .map(|(v, c)| v.to_pg_text(Some(&c.ty)))
                .collect()
        })
        .collect()
}

fn row(cells: &[Option<&str>]) -> Vec<Option<String>> {
    cells.iter().map(|c| c.map(str::to_string)).collect()
}

fn sqlstate(session: &mut SqlSession, sql: &str) -> &'static str {
    match session.execute(sql) {
        Ok(results) => panic!("{sql}: expected an error, got {results:?}"),
        Err(e) => e.sqlstate,
    }
}

/// tokio-postgres's TYPEINFO_QUERY (its prepare.rs), as it sends it: prepared, `$1` an
/// OID sent in binary, so the parameter and the result columns must have PostgreSQL's
/// types (`u32` reads only `oid`, `i8` only `"char"`).
const TYPEINFO_QUERY: &str =
    "SELECT t.typname, t.typtype, t.typelem, r.rngsubtype, t.typbasetype, n.nspname, t.typrelid
FROM pg_catalog.pg_type t
LEFT OUTER JOIN pg_catalog.pg_range r ON r.rngtypid = t.oid
INNER JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid
WHERE t.oid = $1
";

#[test]
fn tokio_postgres_type_lookup_is_answered_with_postgresql_types() {
    let mut s = session();
    let prepared = s.prepare(TYPEINFO_QUERY).expect("prepare");
    assert_eq!(prepared.param_types, vec![Some(SqlType::Oid)]);
    let types: Vec<SqlType> = prepared.columns.iter().map(|c| c.ty).collect();
    use SqlType::{InternalChar, Name, Oid};
    assert_eq!(types, vec![Name, InternalChar, Oid, Oid, Oid, Name, Oid]);
    // PostgreSQL 15's rows for text, text[] and int4.
    let cases = [
        (25, ["text", "b", "0", "", "0", "pg_catalog", "0"]),
        (1009, ["_text", "b", "25", "", "0", "pg_catalog", "0"]),
        (23, ["int4", "b", "0", "", "0", "pg_catalog", "0"]),
    ];
    for (oid, want) in cases {
        let result = s
            .execute_prepared(&prepared, &[Value::Int(oid)])
            .expect("execute");
        let want: Vec<Option<&str>> = want
            .iter()
            .map(|c| if c.is_empty() { None } else { Some(*c) })
            .collect();
        assert_eq!(texts(&result), vec![row(&want)], "type {oid}");
    }
    let none = s
        .execute_prepared(&prepared, &[Value::Int(424242)])
        .expect("execute");
    assert!(none.rows.is_empty());
}

#[test]
fn tokio_postgres_fallback_enum_and_composite_queries_work() {
    let mut s = session();
    let fallback = one(
        &mut s,
        "SELECT t.typname, t.typtype, t.typelem, NULL::OID, t.typbasetype, n.nspname, t.typrelid \
         FROM pg_catalog.pg_type t INNER JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid \
         WHERE t.oid = 2950",
    );
    assert_eq!(
        texts(&fallback),
        vec![row(&[
            Some("uuid"),
            Some("b"),
            Some("0"),
            None,
            Some("0"),
            Some("pg_catalog"),
            Some("0")
        ])]
    );
    assert_eq!(fallback.columns[3].ty, SqlType::Oid);
    let enums = one(
        &mut s,
        "SELECT enumlabel FROM pg_catalog.pg_enum WHERE enumtypid = 25 ORDER BY enumsortorder",
    );
    assert!(enums.rows.is_empty());
    let attributes = one(
        &mut s,
        "SELECT attname, atttypid FROM pg_catalog.pg_attribute \
         WHERE attrelid = 'orders'::regclass AND NOT attisdropped AND attnum > 0 ORDER BY attnum",
    );
    let want = [
        ("id", "20"),
        ("ref", "2950"),
        ("customer", "1043"),
        ("amount", "1700"),
        ("note", "25"),
    ];
    let want: Vec<_> = want.iter().map(|(n, t)| row(&[Some(n), Some(t)])).collect();
    assert_eq!(texts(&attributes), want);
}

#[test]
fn connect_time_settings_and_functions() {
    let mut s = session();
    let version = one(&mut s, "SELECT version()");
    let text = version.rows[0][0].to_pg_text(None).unwrap_or_default();
    assert!(text.starts_with("PostgreSQL 15.0 (hotpage "), "{text}");
    assert_eq!(
        texts(&one(&mut s, "SHOW server_version")),
        vec![row(&[Some("15.0")])]
    );
    for set in [
        "SET client_encoding TO 'UTF8'",
        "SET DateStyle TO 'ISO'",
        "SET extra_float_digits = 3",
        "SET application_name = 'psql'",
    ] {
        assert_eq!(one(&mut s, set).tag, "SET", "{set}");
    }
    assert_eq!(
        texts(&one(&mut s, "SHOW DateStyle")),
        vec![row(&[Some("ISO")])]
    );
    let functions = one(
        &mut s,
        "SELECT current_database(), current_schema(), current_user, session_user, \
         current_schemas(true), current_setting('application_name'), \
         pg_catalog.current_setting('server_version_num')",
    );
    assert_eq!(
        texts(&functions),
        vec![row(&[
            Some("hotpage"),
            Some("public"),
            Some("hotpage"),
            Some("hotpage"),
            Some("{pg_catalog,public}"),
            Some("psql"),
            Some("150000")
        ])]
    );
    // pg_dump's first statement: an empty search_path leaves no current schema.
    let set = one(
        &mut s,
        "SELECT pg_catalog.set_config('search_path', '', false)",
    );
    assert_eq!(texts(&set), vec![row(&[Some("")])]);
    assert_eq!(
        texts(&one(&mut s, "SELECT current_schema()")),
        vec![row(&[None])]
    );
    assert_eq!(sqlstate(&mut s, "SET server_version = '9.6'"), "55P02");
    assert_eq!(
        sqlstate(&mut s, "SELECT current_setting('no_such_setting')"),
        "42704"
    );
    let missing_ok = one(
        &mut s,
        "SELECT current_setting('no_such_setting', true) IS NULL",
    );
    assert_eq!(texts(&missing_ok), vec![row(&[Some("t")])]);
}

#[test]
fn pg_settings_shows_the_session_values() {
    let mut s = session();
    one(&mut s, "SET application_name = 'mine'");
    let result = one(
        &mut s,
        "SELECT name, setting, source FROM pg_settings \
         WHERE name IN ('application_name', 'server_version', 'TimeZone') ORDER BY name",
    );
    // Names sort by their bytes (the database's collation is C), as in PostgreSQL.
    assert_eq!(
        texts(&result),
        vec![
            row(&[Some("TimeZone"), Some("UTC"), Some("default")]),
            row(&[Some("application_name"), Some("mine"), Some("session")]),
            row(&[Some("server_version"), Some("15.0"), Some("default")]),
        ]
    );
}

#[test]
fn information_schema_lists_tables_and_columns() {
    let mut s = session();
    let tables = one(
        &mut s,
        "SELECT table_name, table_type FROM information_schema.tables \
         WHERE table_schema = 'public' ORDER BY table_name",
    );
    assert_eq!(
        texts(&tables),
        vec![row(&[Some("orders"), Some("BASE TABLE")])]
    );
    let columns = one(
        &mut s,
        "SELECT column_name, data_type, is_nullable, character_maximum_length, \
         numeric_precision, numeric_scale, is_identity, identity_generation \
         FROM information_schema.columns WHERE table_name = 'orders' ORDER BY ordinal_position",
    );
    // PostgreSQL 15's answer for the same table.
    let want = vec![
        row(&[
            Some("id"),
            Some("bigint"),
            Some("NO"),
            None,
            Some("64"),
            Some("0"),
            Some("YES"),
            Some("ALWAYS"),
        ]),
        row(&[
            Some("ref"),
            Some("uuid"),
            Some("YES"),
            None,
            None,
            None,
            Some("NO"),
            None,
        ]),
        row(&[
            Some("customer"),
            Some("character varying"),
            Some("NO"),
            Some("40"),
            None,
            None,
            Some("NO"),
            None,
        ]),
        row(&[
            Some("amount"),
            Some("numeric"),
            Some("YES"),
            None,
            Some("12"),
            Some("2"),
            Some("NO"),
            None,
        ]),
        row(&[
            Some("note"),
            Some("text"),
            Some("YES"),
            None,
            None,
            None,
            Some("NO"),
            None,
        ]),
    ];
    assert_eq!(texts(&columns), want);
}

#[test]
fn general_queries_over_the_catalog() {
    let mut s = session();
    one(
        &mut s,
        "CREATE TABLE tickets (id bigint PRIMARY KEY, title text)",
    );
    // Grouping, HAVING, ORDER BY DESC and LIMIT (PostgreSQL 15's answer).
    let grouped = one(
        &mut s,
        "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
         WHERE c.relkind = 'r' AND n.nspname = 'public' \
         GROUP BY 1,2 HAVING count(*) = 1 ORDER BY 2 DESC LIMIT 2",
    );
    assert_eq!(
        texts(&grouped),
        vec![
            row(&[Some("public"), Some("tickets")]),
            row(&[Some("public"), Some("orders")]),
        ]
    );
    let aggregates = one(
        &mut s,
        "SELECT count(*), string_agg(relname, ',') IS NOT NULL \
         FROM pg_class WHERE relnamespace = 2200 AND relkind = 'i'",
    );
    assert_eq!(aggregates.rows[0][0], Value::Int(2));
    let union = one(
        &mut s,
        "SELECT relname FROM pg_class WHERE relname = 'orders' \
         UNION SELECT relname FROM pg_class WHERE relname LIKE 'ord%s' ORDER BY 1",
    );
    assert_eq!(texts(&union), vec![row(&[Some("orders")])]);
    let in_subquery = one(
        &mut s,
        "SELECT relname FROM pg_class WHERE oid IN \
         (SELECT indrelid FROM pg_index) AND relnamespace = 2200 ORDER BY relname",
    );
    assert_eq!(
        texts(&in_subquery),
        vec![row(&[Some("orders")]), row(&[Some("tickets")])]
    );
    let regclass = one(
        &mut s,
        "SELECT 'orders'::regclass::oid = (SELECT oid FROM pg_class WHERE relname = 'orders'), \
         'pg_catalog.pg_class'::regclass::oid, 1259::regclass, 0::regclass",
    );
    assert_eq!(
        texts(&regclass),
        vec![row(&[Some("t"), Some("1259"), Some("pg_class"), Some("-")])]
    );
}

#[test]
fn what_the_catalog_cannot_answer_fails_with_a_sqlstate() {
    let mut s = session();
    // A catalog relation hotpage does not have.
    assert_eq!(
        sqlstate(&mut s, "SELECT * FROM pg_catalog.pg_operator"),
        "0A000"
    );
    // pg_proc is there for psql's \df, with no rows.
    let procs = s
        .execute("SELECT count(*) FROM pg_catalog.pg_proc")
        .expect("pg_proc");
    assert_eq!(procs[0].rows[0][0].to_pg_text(None).as_deref(), Some("0"));
    // A catalog query may also read a user table; one in another schema is not there.
    assert_eq!(
        sqlstate(&mut s, "SELECT * FROM pg_class, other.orders"),
        "42P01"
    );
    assert_eq!(
        sqlstate(&mut s, "SELECT pg_catalog.no_such_function()"),
        "42883"
    );
    assert_eq!(sqlstate(&mut s, "SELECT nosuch FROM pg_class"), "42703");
    assert_eq!(sqlstate(&mut s, "SELECT 'nosuch'::regclass"), "42P01");
    assert_eq!(
        sqlstate(&mut s, "SELECT (SELECT relname FROM pg_class)"),
        "21000"
    );
    assert_eq!(
        sqlstate(&mut s, "SELECT oid FROM pg_class, pg_type"),
        "42702"
    );
    assert_eq!(
        sqlstate(&mut s, "SELECT relname FROM pg_class WHERE count(*) > 1"),
        "42803"
    );
    assert_eq!(
        sqlstate(&mut s, "SELECT relname FROM pg_class WHERE relname ~ '('"),
        "2201B"
    );
    // An ordered-set aggregate (WITHIN GROUP) is not done: refused, not run as a plain one.
    assert_eq!(
        sqlstate(
            &mut s,
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY oid) FROM pg_class"
        ),
        "0A000"
    );
}

/// Every catalog relation and system view answers `SELECT *` with the columns it declares
/// in pg_attribute (a row made with a misnamed column would fail here).
#[test]
fn every_catalog_relation_answers_select_star() {
    let mut s = session();
    let relations = one(
        &mut s,
        "SELECT n.nspname, c.relname, c.relnatts FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname IN ('pg_catalog', 'information_schema') ORDER BY 1, 2",
    );
    assert!(
        relations.rows.len() >= 40,
        "{} relations",
        relations.rows.len()
    );
    for row in &relations.rows {
        let text = |i: usize| row[i].to_pg_text(None).unwrap_or_default();
        let (schema, name) = (text(0), text(1));
        let natts: usize = text(2).parse().expect("relnatts");
        let result = one(&mut s, &format!("SELECT * FROM {schema}.{name}"));
        assert_eq!(result.columns.len(), natts, "{schema}.{name}");
        let aliased = one(
            &mut s,
            &format!("SELECT r.* FROM {schema}.{name} r LIMIT 1"),
        );
        assert_eq!(aliased.columns, result.columns, "{schema}.{name}");
    }
    let star = one(&mut s, "SELECT * FROM pg_catalog.pg_am ORDER BY oid");
    let names: Vec<&str> = star.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["oid", "amname", "amhandler", "amtype"]);
    assert_eq!(
        texts(&star),
        vec![
            row(&[
                Some("2"),
                Some("heap"),
                Some("heap_tableam_handler"),
                Some("t")
            ]),
            row(&[Some("403"), Some("btree"), Some("bthandler"), Some("i")]),
            row(&[Some("405"), Some("hash"), Some("hashhandler"), Some("i")]),
        ]
    );
}

mod random_queries {
    use super::session;
    use proptest::prelude::*;

    // Each relation cut to a few rows (a derived table), so three-way products stay small.
    const TABLES: &[(&str, &[&str])] = &[
        (
            "(SELECT * FROM pg_catalog.pg_class ORDER BY relname DESC LIMIT 12) c",
            &[
                "c.oid",
                "c.relname",
                "c.relkind",
                "c.relnatts",
                "c.relhasindex",
            ],
        ),
        (
            "(SELECT * FROM pg_catalog.pg_attribute WHERE attrelid > 16000 LIMIT 12) a",
            &["a.attrelid", "a.attname", "a.attnum", "a.attnotnull"],
        ),
        (
            "(SELECT * FROM pg_catalog.pg_type LIMIT 12) t",
            &["t.oid", "t.typname", "t.typlen", "t.typtype"],
        ),
    ];

    fn literal() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("'r'".to_string()),
            Just("1".to_string()),
            Just("NULL".to_string()),
            Just("true".to_string()),
            Just("'{1,2}'".to_string()),
            Just("'orders'".to_string()),
            Just("-2147483648".to_string()),
        ]
    }

    fn expr(columns: Vec<&'static str>) -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            proptest::sample::select(columns).prop_map(str::to_string),
            literal()
        ];
        leaf.prop_recursive(3, 24, 3, |inner| {
            prop_oneof![
                (
                    inner.clone(),
                    proptest::sample::select(
                        &["=", "<>", "<", "+", "||", "~", "AND", "OR", "%", "/"][..]
                    ),
                    inner.clone()
                )
                    .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
                (
                    inner.clone(),
                    proptest::sample::select(
                        &[
                            "text", "oid", "regclass", "int2", "\"char\"", "name", "int4[]", "bool"
                        ][..]
                    )
                )
                    .prop_map(|(a, ty)| format!("({a})::{ty}")),
                (
                    proptest::sample::select(
                        &[
                            "pg_get_userbyid",
                            "lower",
                            "quote_ident",
                            "pg_table_is_visible",
                            "pg_get_indexdef",
                            "array_upper",
                            "current_setting",
                            "cardinality"
                        ][..]
                    ),
                    inner.clone()
                )
                    .prop_map(|(f, a)| format!("pg_catalog.{f}({a})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("format_type({a}, {b})")),
                (inner.clone(), inner.clone(), inner.clone())
                    .prop_map(|(a, b, c)| format!("CASE WHEN {a} THEN {b} ELSE {c} END")),
                inner.clone().prop_map(|a| format!("({a}) IS NULL")),
                inner
                    .clone()
                    .prop_map(|a| format!("(SELECT {a} FROM pg_catalog.pg_namespace n LIMIT 1)")),
                inner
                    .clone()
                    .prop_map(|a| format!("{a} = ANY (ARRAY[1, 2])")),
                inner.prop_map(|a| format!("EXISTS (SELECT 1 FROM pg_catalog.pg_am WHERE {a})")),
            ]
        })
    }

    fn query() -> impl Strategy<Value = String> {
        (
            1usize..=3,
            proptest::sample::select(&[",", "JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"][..]),
        )
            .prop_flat_map(|(n, join)| {
                let tables: Vec<&(&str, &[&str])> = TABLES.iter().take(n).collect();
                let columns: Vec<&'static str> = tables
                    .iter()
                    .flat_map(|(_, cols)| cols.iter().copied())
                    .collect();
                let from = tables
                    .iter()
                    .enumerate()
                    .map(|(i, (t, _))| match (i, join) {
                        (0, _) => t.to_string(),
                        (_, ",") => format!(", {t}"),
                        (_, j) => format!(" {j} {t} ON true"),
                    })
                    .collect::<String>();
                (
                    Just(from),
                    expr(columns.clone()),
                    proptest::option::of(expr(columns.clone())),
                    any::<bool>(),
                    0u8..5,
                )
            })
            .prop_map(|(from, item, filter, grouped, limit)| {
                let filter = filter.map(|f| format!(" WHERE {f}")).unwrap_or_default();
                if grouped {
                    format!("SELECT count(*), min(({item})::text) FROM {from}{filter}")
                } else {
                    format!("SELECT {item} FROM {from}{filter} ORDER BY 1 LIMIT {limit}")
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// Any catalog query answers or fails with a SQLSTATE: never a panic.
        #[test]
        fn random_catalog_queries_never_panic(sql in query()) {
            let mut s = session();
            match s.execute(&sql) {
                Ok(results) => prop_assert_eq!(results.len(), 1),
                Err(e) => prop_assert_eq!(e.sqlstate.len(), 5, "{}", e),
            }
        }
    }
}

/// psql's `\d` and `\d table` queries on a database of 300 tables: right answers, and in
/// time (joins hash on their equalities; nested loops over pg_class × pg_class grow with
/// the square of the tables, and the bound of 2 s per query catches that coming back).
#[test]
fn many_tables_are_described_correctly_and_fast() {
    let mut s = session();
    let tables = 300;
    for i in 0..tables {
        s.execute(&format!(
            "CREATE TABLE t{i} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, a text, b int)"
        ))
        .expect("create");
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/psql");
    let read = |name: &str| std::fs::read_to_string(fixtures.join(name)).expect("fixture");
    let timed = |s: &mut SqlSession, sql: &str| {
        let started = std::time::Instant::now();
        let result = one(s, sql);
        let elapsed = started.elapsed();
        println!("{elapsed:?} for {}", sql.lines().next().unwrap_or_default());
        assert!(elapsed.as_secs_f64() < 2.0, "{elapsed:?}: {sql}");
        result
    };
    // \d lists orders, its sequence, and the 300 tables with theirs.
    let list = timed(&mut s, &read("d/01.sql"));
    assert_eq!(list.rows.len(), 2 * (tables + 1));
    let found = timed(
        &mut s,
        &read("d_orders/01.sql").replace("^(orders)$", "^(t150)$"),
    );
    let oid = found.rows[0][0].to_pg_text(None).expect("oid");
    let describe: Vec<String> = (2..=9)
        .map(|n| read(&format!("d_orders/{n:02}.sql")).replace("'16386'", &format!("'{oid}'")))
        .collect();
    let info = timed(&mut s, &describe[0]);
    assert_eq!(info.rows.len(), 1);
    let columns = timed(&mut s, &describe[1]);
    assert_eq!(
        texts(&columns)
            .iter()
            .map(|r| r[0].clone())
            .collect::<Vec<_>>(),
        vec![Some("id".into()), Some("a".into()), Some("b".into())]
    );
    let indexes = timed(&mut s, &describe[2]);
    assert_eq!(
        texts(&indexes)[0][5].as_deref(),
        Some("CREATE UNIQUE INDEX t150_pkey ON t150 USING btree (id)")
    );
    for query in &describe[3..] {
        assert!(timed(&mut s, query).rows.is_empty());
    }
}

/// psql 15's `\dt+` (from `psql -E`), verbatim.
const PSQL_DT_PLUS: &str = "SELECT n.nspname as \"Schema\",
  c.relname as \"Name\",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as \"Type\",
  pg_catalog.pg_get_userbyid(c.relowner) as \"Owner\",
  CASE c.relpersistence WHEN 'p' THEN 'permanent' WHEN 't' THEN 'temporary' WHEN 'u' THEN 'unlogged' END as \"Persistence\",
  am.amname as \"Access method\",
  pg_catalog.pg_size_pretty(pg_catalog.pg_table_size(c.oid)) as \"Size\",
  pg_catalog.obj_description(c.oid, 'pg_class') as \"Description\"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;";

#[test]
fn table_sizes_are_their_pages_for_psql_dt_plus() {
    let mut s = session();
    s.execute("CREATE TABLE empty (id bigint PRIMARY KEY)")
        .expect("create");
    let size = |s: &mut SqlSession, sql: &str| match one(s, sql).rows[0][0] {
        Value::Int(bytes) => bytes,
        ref other => panic!("{sql}: {other:?}"),
    };
    let before = size(&mut s, "SELECT pg_table_size('orders')");
    assert!(before >= 8192 && before % 8192 == 0, "{before}");
    // 2,000 rows of ~300 bytes fill many 8 KiB pages: the size grows with them.
    let note = "x".repeat(300);
    for _ in 0..20 {
        let values: Vec<String> = (0..100).map(|_| format!("('c', 1.5, '{note}')")).collect();
        s.execute(&format!(
            "INSERT INTO orders (customer, amount, note) VALUES {}",
            values.join(", ")
        ))
        .expect("insert");
    }
    let after = size(&mut s, "SELECT pg_table_size('orders')");
    assert!(after >= before + 60 * 8192, "{before} -> {after}");
    assert_eq!(
        size(&mut s, "SELECT pg_total_relation_size('orders')"),
        after
    );
    assert_eq!(size(&mut s, "SELECT pg_relation_size('orders')"), after);
    // The primary key is the table's own clustered tree: no pages of its own.
    assert_eq!(size(&mut s, "SELECT pg_indexes_size('orders')"), 0);
    assert_eq!(size(&mut s, "SELECT pg_relation_size('orders_pkey')"), 0);
    // An OID that names nothing: NULL, as in PostgreSQL.
    assert_eq!(
        one(&mut s, "SELECT pg_table_size(4000000000)").rows[0][0],
        Value::Null
    );
    let pretty = |bytes: i64| {
        let text = texts(&one(
            &mut session(),
            &format!("SELECT pg_size_pretty({bytes})"),
        ));
        text[0][0].clone()
    };
    let listed = texts(&one(&mut s, PSQL_DT_PLUS));
    let by_name = |name: &str| {
        listed
            .iter()
            .find(|r| r[1].as_deref() == Some(name))
            .cloned()
            .unwrap_or_else(|| panic!("{name} not in {listed:?}"))
    };
    let orders = by_name("orders");
    assert_eq!(orders[2].as_deref(), Some("table"));
    assert_eq!(orders[6], pretty(after));
    let empty = by_name("empty");
    assert_eq!(empty[6], pretty(8192));
}

/// Unnamed output columns are named as PostgreSQL 15.18 names them (its FigureColname), in
/// a one-table query and a join alike: a cast by its type's internal name, a CASE `case`,
/// a constant `?column?` (`true` too, since 15), a function with a syntax of its own
/// (EXTRACT, SUBSTRING … FROM, TRIM, POSITION) by the function it calls. The one-table
/// path named every cast and CASE `?column?`, the general engine a cast by its type as
/// written (`int`), and both named those functions `?column?`.
#[test]
fn unnamed_columns_are_named_as_postgresql_names_them() {
    let mut s = session();
    one(&mut s, "CREATE TABLE named (id int PRIMARY KEY, c char(3))");
    let list = "1::int, '1'::bigint, 2::numeric(5,1), 'x'::text, id::varchar(3), \
        CAST(1 AS integer), 'a'::char(2), 1.5::double precision, '{1}'::int[], 1::int2, \
        1::real, true::boolean, 'x'::character varying, 'a'::\"char\", \
        CASE WHEN id = 1 THEN 1 END, CASE WHEN id = 1 THEN 1 ELSE id END, true, 1 + 1, upper(c), \
        1::decimal(5,2), 1::float, 1::float(3), 'x'::char varying(3), \
        extract(year from now()), substring('abc' from 2), trim(' a '), trim(leading ' a'), \
        floor(1.5), ceil(1.5), position('b' in 'abc')";
    let expected = [
        "int4",
        "int8",
        "numeric",
        "text",
        "id",
        "int4",
        "bpchar",
        "float8",
        "int4",
        "int2",
        "float4",
        "bool",
        "varchar",
        "char",
        "case",
        "id",
        "?column?",
        "?column?",
        "upper",
        "numeric",
        "float8",
        "float4",
        "varchar",
        "extract",
        "substring",
        "btrim",
        "ltrim",
        "floor",
        "ceil",
        "position",
    ];
    for from in ["named", "named JOIN named n2 USING (id, c)"] {
        let result = one(&mut s, &format!("SELECT {list} FROM {from}"));
        let names: Vec<&str> = result.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, expected, "FROM {from}");
    }
}
