//! A prepared statement's parameter types, as a driver learns them (Describe) before it
//! sends values: inferred from the select list and from an INSERT's values too, not only
//! from WHERE (`SELECT $1::bigint + 1` was text, and the Rust postgres crate then refused
//! to bind an i64). Each case's types are PostgreSQL 15's (`pg_prepared_statements`).

use hotpage_sql::SqlType::{self, BigInt, Int, Text};

mod common;
use common::open_mem;

fn types_of(sql: &str) -> Vec<Option<SqlType>> {
    let db = open_mem();
    let mut s = db.session();
    s.execute("CREATE TABLE t (id bigint PRIMARY KEY, v text)")
        .expect("create");
    s.prepare(sql).expect(sql).param_types
}

#[test]
fn parameters_in_the_select_list_and_in_insert_values_take_postgresqls_types() {
    let cases: [(&str, Vec<Option<SqlType>>); 7] = [
        ("SELECT $1::bigint + 1", vec![Some(BigInt)]),
        ("SELECT $1 + 1", vec![Some(Int)]),
        ("SELECT id + $1 FROM t", vec![Some(BigInt)]),
        (
            "INSERT INTO t VALUES ($1::bigint, $2)",
            vec![Some(BigInt), Some(Text)],
        ),
        (
            "INSERT INTO t VALUES ($2 + 1, $1)",
            vec![Some(Text), Some(Int)],
        ),
        (
            "SELECT id FROM t WHERE id = $1 AND $1 > 0",
            vec![Some(BigInt)],
        ),
        ("SELECT lower($1), $2::text", vec![Some(Text), Some(Text)]),
    ];
    for (sql, expected) in cases {
        assert_eq!(types_of(sql), expected, "{sql}");
    }
}
