//! `numeric` without a precision on disk: each value's own scale is stored with it, so a
//! crash's recovery and a clean reopen give back 1.50 as 1.50 and 0.1 as 0.1, in a heap
//! and in a keyed table.

use hotpage::{CrashMode, MemStorage};
use hotpage_sql::{SqlDatabase, SqlType};
use std::sync::Arc;

mod common;

use common::open_on as open;

/// The text of every row of `query`'s first result.
fn texts(sql: &Arc<SqlDatabase>, query: &str) -> Vec<Vec<String>> {
    let results = sql.session().execute(query).expect("query");
    common::row_texts(&results[0].rows)
}

const WANT: [[&str; 3]; 5] = [
    ["1", "1.50", "1.50"],
    ["2", "0.1", "0.1"],
    [
        "3",
        "-12345678901234567890.123456789012345678",
        "-12345678901234567890.123456789012345678",
    ],
    ["4", "0.000", "0.000"],
    ["5", "NULL", "NULL"],
];

#[test]
fn each_values_scale_survives_a_crash_and_a_reopen() {
    let mem = MemStorage::new(43);
    let (engine, sql) = open(&mem);
    let mut s = sql.session();
    s.execute(
        "CREATE TABLE keyed (id int PRIMARY KEY, v numeric);
         CREATE TABLE heap (id int, v numeric)",
    )
    .expect("create");
    for (id, v) in [
        (1, "1.50"),
        (2, "0.1::float8"),
        (3, "'-12345678901234567890.123456789012345678'"),
        (4, "'-0.000'"),
        (5, "NULL"),
    ] {
        s.execute(&format!(
            "INSERT INTO keyed VALUES ({id}, {v}); INSERT INTO heap VALUES ({id}, {v})"
        ))
        .expect("insert");
    }
    drop(s);
    let query = "SELECT k.id, k.v, h.v FROM keyed k JOIN heap h ON h.id = k.id ORDER BY k.id";
    assert_eq!(texts(&sql, query), WANT);
    // A crash: the killed process's handles are never closed or dropped.
    let rebooted = mem.reboot(CrashMode::Torn, 7).expect("reboot");
    std::mem::forget((engine, sql));

    let (engine, sql) = open(&rebooted);
    assert_eq!(texts(&sql, query), WANT, "after recovery");
    let report = engine.check().expect("check");
    assert!(report.ok() && report.warnings.is_empty(), "{report:?}");
    drop(sql);
    Arc::into_inner(engine)
        .expect("the last handle")
        .close()
        .expect("close");

    let (_engine, sql) = open(&rebooted);
    assert_eq!(texts(&sql, query), WANT, "after a clean close");
}

/// The type each result column reports (its RowDescription typmod): PostgreSQL's numeric
/// operators, common types of different typmods and literals are numeric without a
/// typmod, and only a column or a cast keeps numeric(p,s). Before, `m + n` reported
/// numeric(10,2) (its value need not fit it), a literal numeric(38,1), and `coalesce` of
/// numeric(10,2) and numeric(12,3) numeric(38,3).
#[test]
fn result_columns_are_typed_as_postgresql_types_them() {
    let mem = MemStorage::new(44);
    let (_engine, sql) = open(&mem);
    let mut s = sql.session();
    s.execute(
        "CREATE TABLE t (id int PRIMARY KEY, m numeric(10,2), k numeric(12,3), n numeric);
         INSERT INTO t VALUES (1, 1.5, 2.25, 3)",
    )
    .expect("create");
    let ten_two = SqlType::Numeric {
        precision: 10,
        scale: 2,
    };
    let plain = SqlType::NumericUnconstrained;
    for (query, want) in [
        (
            "SELECT m, m + n, n + m, m * 100, 1.5, m::numeric(10,2), coalesce(m, k), coalesce(m, m) FROM t",
            vec![ten_two, plain, plain, plain, plain, ten_two, plain, ten_two],
        ),
        (
            "SELECT a.m, a.m + b.n, b.n + a.m, a.m * 100, 1.5, coalesce(a.m, b.k), coalesce(a.m, b.m) FROM t a JOIN t b ON a.id = b.id",
            vec![ten_two, plain, plain, plain, plain, plain, ten_two],
        ),
        (
            "SELECT coalesce(a.m, '7.125'), coalesce(a.m, a.id), coalesce(a.m, NULL), CASE WHEN a.id = 1 THEN a.m ELSE 0 END FROM t a JOIN t b ON a.id = b.id",
            vec![plain, plain, ten_two, plain],
        ),
        ("SELECT m FROM t UNION ALL SELECT k FROM t", vec![plain]),
        ("SELECT m FROM t UNION ALL SELECT id FROM t", vec![plain]),
        ("SELECT m FROM t UNION ALL SELECT m FROM t", vec![ten_two]),
    ] {
        let results = s.execute(query).expect(query);
        let types: Vec<SqlType> = results[0].columns.iter().map(|c| c.ty).collect();
        assert_eq!(types, want, "{query}");
    }
}
