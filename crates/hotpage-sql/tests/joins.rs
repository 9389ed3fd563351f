//! Queries that read several user tables (joins, subqueries, set operations) run in the
//! general engine (`catalog/`). `tests/slt/joins.slt` checks their answers against
//! PostgreSQL's; this file checks what a fixed file cannot: joins against a model on random
//! tables, the bound on what a query holds in memory, a join stopped by its timeout, a
//! prepared join whose table is dropped and made again, and WITH queries (recursive ones
//! against a graph model, runaway ones against the bound and the timeout), and window
//! functions against a model.

use hotpage_sql::{SqlSession, Value};
use proptest::prelude::*;

mod common;
use common::open_mem;

/// The rows of `sql`'s last result, each cell as PostgreSQL's text (`None` for NULL).
fn rows(s: &mut SqlSession, sql: &str) -> Vec<Vec<Option<String>>> {
    let results = s.execute(sql).expect(sql);
    let last = results.last().expect("a result");
    last.rows
        .iter()
        .map(|row| {
            row.iter()
                .zip(&last.columns)
                .map(|(v, c)| v.to_pg_text(Some(&c.ty)))
                .collect()
        })
        .collect()
}

/// `n` rows `(i, i)` in a new table `name (id int PRIMARY KEY, v int)`, in one statement.
fn numbers(s: &mut SqlSession, name: &str, n: usize) {
    s.execute(&format!("CREATE TABLE {name} (id int PRIMARY KEY, v int)"))
        .expect("create");
    let values: Vec<String> = (0..n).map(|i| format!("({i}, {i})")).collect();
    s.execute(&format!("INSERT INTO {name} VALUES {}", values.join(", ")))
        .expect("insert");
}

/// An optional join key: `None` is NULL, which joins nothing.
type Keys = Vec<Option<u8>>;

fn insert_keys(s: &mut SqlSession, table: &str, keys: &Keys) {
    s.execute(&format!("CREATE TABLE {table} (id int PRIMARY KEY, k int)"))
        .expect("create");
    for (id, k) in keys.iter().enumerate() {
        let k = k.map_or_else(|| "NULL".to_string(), |k| k.to_string());
        s.execute(&format!("INSERT INTO {table} VALUES ({id}, {k})"))
            .expect("insert");
    }
}

/// The model: every (a.id, b.id) with equal non-NULL keys, plus, for a LEFT JOIN, each
/// `a` row that matched none with NULL.
fn model(a: &Keys, b: &Keys, left: bool) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for (i, ka) in a.iter().enumerate() {
        let matches: Vec<usize> = b
            .iter()
            .enumerate()
            .filter(|(_, kb)| ka.is_some() && *kb == ka)
            .map(|(j, _)| j)
            .collect();
        for j in &matches {
            out.push((i.to_string(), Some(j.to_string())));
        }
        if matches.is_empty() && left {
            out.push((i.to_string(), None));
        }
    }
    out.sort();
    out
}

fn pairs(rows: Vec<Vec<Option<String>>>) -> Vec<(String, Option<String>)> {
    let mut out: Vec<_> = rows
        .into_iter()
        .map(|r| (r[0].clone().expect("a.id"), r[1].clone()))
        .collect();
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Inner and left joins on an equality (answered through a hash of the inner side), on
    /// an expression the hash cannot use, and IN/EXISTS forms, all against the model.
    #[test]
    fn joins_match_the_model(
        a in prop::collection::vec(prop::option::weighted(0.85, 0u8..6), 0..24),
        b in prop::collection::vec(prop::option::weighted(0.85, 0u8..6), 0..24),
    ) {
        let db = open_mem();
        let mut s = db.session();
        insert_keys(&mut s, "a", &a);
        insert_keys(&mut s, "b", &b);
        let inner = model(&a, &b, false);
        let left = model(&a, &b, true);
        prop_assert_eq!(
            pairs(rows(&mut s, "SELECT a.id, b.id FROM a JOIN b ON a.k = b.k")),
            inner.clone()
        );
        prop_assert_eq!(
            pairs(rows(&mut s, "SELECT a.id, b.id FROM a, b WHERE b.k = a.k")),
            inner.clone()
        );
        // `+ 0` hides the equality from the hash: every pair is tried.
        prop_assert_eq!(
            pairs(rows(&mut s, "SELECT a.id, b.id FROM a JOIN b ON a.k + 0 = b.k")),
            inner.clone()
        );
        prop_assert_eq!(
            pairs(rows(&mut s, "SELECT a.id, b.id FROM a LEFT JOIN b ON a.k = b.k")),
            left
        );
        let mut matched: Vec<String> = inner.iter().map(|(i, _)| i.clone()).collect();
        matched.dedup();
        let in_rows = rows(&mut s, "SELECT id FROM a WHERE k IN (SELECT k FROM b) ORDER BY id");
        let exists_rows = rows(
            &mut s,
            "SELECT id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k) ORDER BY id",
        );
        let sort_numeric = |rows: Vec<Vec<Option<String>>>| {
            let mut ids: Vec<String> = rows.into_iter().map(|r| r[0].clone().expect("id")).collect();
            ids.sort();
            ids
        };
        // The subquery's side of the equality reads the outer row too: its hash cannot
        // be kept from one outer row to the next.
        let outer_rows = rows(
            &mut s,
            "SELECT id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k - a.id = a.k - a.id)",
        );
        prop_assert_eq!(sort_numeric(in_rows), matched.clone());
        prop_assert_eq!(sort_numeric(exists_rows), matched.clone());
        prop_assert_eq!(sort_numeric(outer_rows), matched);
        // NOT IN with SQL's NULLs: over no rows it is true, even for a NULL key;
        // otherwise a NULL key, or a NULL among b's keys when the key is not there, makes
        // the test NULL (the row is left out).
        let b_has_null = b.iter().any(Option::is_none);
        let mut not_in: Vec<String> = a
            .iter()
            .enumerate()
            .filter(|(_, k)| {
                b.is_empty() || k.is_some_and(|k| !b.contains(&Some(k))) && !b_has_null
            })
            .map(|(i, _)| i.to_string())
            .collect();
        not_in.sort();
        let not_in_rows = rows(&mut s, "SELECT id FROM a WHERE k NOT IN (SELECT k FROM b)");
        prop_assert_eq!(sort_numeric(not_in_rows), not_in);
    }
}

/// A join that would hold more than the bound fails with 54000 (PostgreSQL would spill
/// to disk) and leaves the session usable; a join of the same tables on a key does not.
#[test]
fn a_join_past_the_memory_bound_fails_with_54000_and_the_session_goes_on() {
    let db = open_mem();
    let mut s = db.session();
    numbers(&mut s, "t", 3000);
    // 9,000,000 pairs of two columns each: past 8 Mi values after about 4 M of them.
    let error = s
        .execute("SELECT count(*) FROM t a, t b")
        .expect_err("past the bound");
    assert_eq!(error.sqlstate, "54000", "{error:?}");
    assert!(error.message.contains("in memory"), "{error:?}");
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM t a JOIN t b ON a.id = b.v"),
        [[Some("3000".to_string())]]
    );
}

/// A join that runs long stops at its statement timeout inside the join itself: the two
/// tables are read in well under the timeout, their 4,000,000 pairs are not.
#[test]
fn a_long_join_stops_at_its_statement_timeout() {
    let db = open_mem();
    let mut s = db.session();
    numbers(&mut s, "t", 2000);
    s.execute("SET statement_timeout = '100ms'").expect("set");
    let started = std::time::Instant::now();
    let error = s
        .execute("SELECT count(*) FROM t a, t b WHERE a.v + b.v < 0")
        .expect_err("timeout");
    assert_eq!(error.sqlstate, "57014", "{error:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    s.execute("SET statement_timeout = 0").expect("off");
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM t a JOIN t b ON a.id = b.id"),
        [[Some("2000".to_string())]]
    );
}

/// A prepared join whose table is dropped and made again reads the new table (the plan
/// is made again, as PostgreSQL re-plans after DDL), not the dropped one.
#[test]
fn a_prepared_join_reads_a_table_made_again() {
    let db = open_mem();
    let mut s = db.session();
    numbers(&mut s, "t", 3);
    numbers(&mut s, "u", 3);
    let join = s
        .prepare("SELECT count(*) FROM t JOIN u ON t.id = u.id")
        .expect("prepare");
    let count = |s: &mut SqlSession| {
        let result = s.execute_prepared(&join, &[]).expect("run");
        result.rows[0][0].clone()
    };
    assert_eq!(count(&mut s), Value::Int(3));
    s.execute("DROP TABLE u").expect("drop");
    numbers(&mut s, "u", 2);
    assert_eq!(count(&mut s), Value::Int(2));
}

/// A full join with USING or NATURAL (whose merged column is a COALESCE of the two sides)
/// fails with 0A000 and says what to write instead (PostgreSQL runs it).
#[test]
fn a_full_join_with_using_is_refused_with_a_hint() {
    let db = open_mem();
    let mut s = db.session();
    numbers(&mut s, "t", 2);
    numbers(&mut s, "u", 2);
    for sql in [
        "SELECT * FROM t FULL JOIN u USING (id)",
        "SELECT * FROM t NATURAL FULL JOIN u",
    ] {
        let error = s.execute(sql).expect_err(sql);
        assert_eq!(error.sqlstate, "0A000", "{sql}: {error:?}");
        assert_eq!(
            error.hint.as_deref(),
            Some("Write the join as FULL JOIN … ON a.column = b.column."),
            "{sql}"
        );
    }
    // The inner forms run.
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM t JOIN u USING (id, v)"),
        [[Some("2".to_string())]]
    );
}

/// A correlated subquery's rows are given back after each outer row: 3,000 runs of a
/// subquery over 3,000 rows (9,000,000 values in all, never more than about 6,000 at
/// once) stay under the bound that a cross join of the same tables passes.
#[test]
fn a_correlated_subquery_does_not_accumulate_toward_the_bound() {
    let db = open_mem();
    let mut s = db.session();
    numbers(&mut s, "t", 3000);
    numbers(&mut s, "u", 3000);
    assert_eq!(
        rows(
            &mut s,
            "SELECT sum((SELECT count(*) FROM u WHERE u.v >= 0 AND t.v >= 0)) FROM t"
        ),
        [[Some("9000000".to_string())]]
    );
    // Each run's 3,000 output rows are dropped after its outer row too.
    assert_eq!(
        rows(
            &mut s,
            "SELECT count(*) FROM t WHERE EXISTS (SELECT u.v FROM u WHERE u.v >= 0 AND t.v >= 0)"
        ),
        [[Some("3000".to_string())]]
    );
}

/// `LIMIT $1` and `OFFSET $2` in a prepared query with a join: the parameters are
/// bigints, as PostgreSQL infers them.
#[test]
fn a_prepared_join_takes_its_limit_as_a_parameter() {
    let db = open_mem();
    let mut s = db.session();
    numbers(&mut s, "t", 5);
    numbers(&mut s, "u", 5);
    let query = s
        .prepare("SELECT t.id FROM t JOIN u ON u.id = t.id ORDER BY t.id LIMIT $1 OFFSET $2")
        .expect("prepare");
    assert_eq!(
        query.param_types,
        vec![Some(hotpage_sql::SqlType::BigInt); 2]
    );
    let result = s
        .execute_prepared(&query, &[Value::Int(2), Value::Int(1)])
        .expect("run");
    assert_eq!(result.rows, vec![vec![Value::Int(1)], vec![Value::Int(2)]]);
}

/// Edges `(from, to)` among a few nodes, as a table `edge (id, src, dst)`.
fn insert_edges(s: &mut SqlSession, edges: &[(u8, u8)]) {
    s.execute("CREATE TABLE edge (id int PRIMARY KEY, src int, dst int)")
        .expect("create");
    for (id, (from, to)) in edges.iter().enumerate() {
        s.execute(&format!("INSERT INTO edge VALUES ({id}, {from}, {to})"))
            .expect("insert");
    }
}

/// The model of reachability: every node reachable from `start` (itself included), sorted
/// as text, as the query's ORDER BY gives them.
fn reachable(edges: &[(u8, u8)], start: u8) -> Vec<u8> {
    let mut seen = vec![start];
    let mut frontier = vec![start];
    while let Some(node) = frontier.pop() {
        for &(from, to) in edges {
            if from == node && !seen.contains(&to) {
                seen.push(to);
                frontier.push(to);
            }
        }
    }
    seen.sort_unstable();
    seen
}

/// The model of walks: how many walks of 0 to `depth` edges start at `start`.
fn walks(edges: &[(u8, u8)], start: u8, depth: usize) -> u64 {
    let mut ends = vec![start];
    let mut total = 1u64;
    for _ in 0..depth {
        ends = ends
            .iter()
            .flat_map(|&node| edges.iter().filter(move |(f, _)| *f == node).map(|e| e.1))
            .collect();
        total += ends.len() as u64;
    }
    total
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// `WITH RECURSIVE … UNION` reaches a fixed point on a graph with cycles (UNION drops
    /// rows already seen, so it ends) and finds what a breadth-first search finds;
    /// `UNION ALL` bounded by a depth column counts every walk, as the model does.
    #[test]
    fn recursive_queries_match_the_model(
        edges in prop::collection::vec((0u8..6, 0u8..6), 0..14),
        start in 0u8..6,
    ) {
        let db = open_mem();
        let mut s = db.session();
        insert_edges(&mut s, &edges);
        let reach = rows(&mut s, &format!(
            "WITH RECURSIVE r(n) AS (SELECT {start} UNION \
             SELECT e.dst FROM edge e JOIN r ON e.src = r.n) SELECT n FROM r ORDER BY n"
        ));
        let expected: Vec<Vec<Option<String>>> = reachable(&edges, start)
            .into_iter()
            .map(|n| vec![Some(n.to_string())])
            .collect();
        prop_assert_eq!(reach, expected);
        let count = rows(&mut s, &format!(
            "WITH RECURSIVE w(n, d) AS (SELECT {start}, 0 UNION ALL \
             SELECT e.dst, w.d + 1 FROM w, edge e WHERE e.src = w.n AND w.d < 3) \
             SELECT count(*) FROM w"
        ));
        prop_assert_eq!(count, [[Some(walks(&edges, start, 3).to_string())]]);
    }
}

/// A recursion that never ends runs into the memory bound (54000) and the session goes
/// on; under a statement timeout it stops there first (57014), well inside it.
#[test]
fn a_runaway_recursion_stops_at_the_bound_or_the_timeout() {
    let db = open_mem();
    let mut s = db.session();
    let runaway = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) \
                   SELECT count(*) FROM r";
    let error = s.execute(runaway).expect_err("past the bound");
    assert_eq!(error.sqlstate, "54000", "{error:?}");
    assert_eq!(
        rows(
            &mut s,
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000) SELECT sum(n) FROM r"
        ),
        [[Some("500500".to_string())]]
    );
    // A cross join of 90,000 pairs in each level keeps every level slow and the working
    // table at one row: the timeout stops it long before the bound would.
    numbers(&mut s, "t", 300);
    s.execute("SET statement_timeout = '100ms'").expect("set");
    let started = std::time::Instant::now();
    let slow = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT r.n + 1 FROM r \
                WHERE (SELECT count(*) FROM t a, t b WHERE a.v + b.v + r.n > 0) > 0) \
                SELECT count(*) FROM r";
    let error = s.execute(slow).expect_err("timeout");
    assert_eq!(error.sqlstate, "57014", "{error:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// A WITH query runs once however often it is read, as in PostgreSQL: `nextval` in it
/// gives both readers the same value and advances the sequence once.
#[test]
fn a_with_query_is_run_once_for_all_its_readers() {
    let db = open_mem();
    let mut s = db.session();
    s.execute("CREATE SEQUENCE q").expect("sequence");
    assert_eq!(
        rows(
            &mut s,
            "WITH x AS (SELECT nextval('q') AS v) SELECT a.v, b.v FROM x a, x b"
        ),
        [[Some("1".to_string()), Some("1".to_string())]]
    );
    assert_eq!(
        rows(&mut s, "SELECT nextval('q')"),
        [[Some("2".to_string())]]
    );
}

/// A prepared WITH query takes its parameter inside the WITH query and runs again with
/// another value.
#[test]
fn a_prepared_with_query_takes_a_parameter() {
    let db = open_mem();
    let mut s = db.session();
    numbers(&mut s, "t", 10);
    let query = s
        .prepare("WITH small AS (SELECT id FROM t WHERE id < $1) SELECT count(*) FROM small")
        .expect("prepare");
    for (limit, count) in [(3, 3), (7, 7), (0, 0)] {
        let result = s
            .execute_prepared(&query, &[Value::Int(limit)])
            .expect("run");
        assert_eq!(result.rows, vec![vec![Value::Int(count)]], "{limit}");
    }
}

/// The model of one row's window values: `(row_number, rank, dense_rank, running sum,
/// partition count)` over rows `(id, part, key, v)` partitioned by `part` and ordered by
/// `key` then `id` for row_number, by `key` alone for the rest (peers share rank and sum).
fn window_model(rows: &[(u8, u8, u8)]) -> Vec<(usize, usize, usize, i64, usize)> {
    rows.iter()
        .enumerate()
        .map(|(id, &(part, key, _))| {
            let same: Vec<(usize, u8, u8)> = rows
                .iter()
                .enumerate()
                .filter(|(_, r)| r.0 == part)
                .map(|(j, r)| (j, r.1, r.2))
                .collect();
            let before = same.iter().filter(|r| (r.1, r.0) < (key, id)).count();
            let lower = same.iter().filter(|r| r.1 < key).count();
            let mut keys: Vec<u8> = same.iter().filter(|r| r.1 < key).map(|r| r.1).collect();
            keys.sort_unstable();
            keys.dedup();
            let sum = same
                .iter()
                .filter(|r| r.1 <= key)
                .map(|r| i64::from(r.2))
                .sum();
            (before + 1, lower + 1, keys.len() + 1, sum, same.len())
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// row_number, rank, dense_rank, a running sum (peers included) and a partition's
    /// count, against the model, on random partitions with many ties.
    #[test]
    fn window_functions_match_the_model(
        table in prop::collection::vec((0u8..3, 0u8..4, 0u8..50), 0..30),
    ) {
        let db = open_mem();
        let mut s = db.session();
        s.execute("CREATE TABLE w (id int PRIMARY KEY, part int, k int, v int)").expect("create");
        for (id, (part, key, v)) in table.iter().enumerate() {
            s.execute(&format!("INSERT INTO w VALUES ({id}, {part}, {key}, {v})")).expect("insert");
        }
        let got = rows(&mut s,
            "SELECT row_number() OVER (PARTITION BY part ORDER BY k, id), \
             rank() OVER (PARTITION BY part ORDER BY k), \
             dense_rank() OVER (PARTITION BY part ORDER BY k), \
             sum(v) OVER (PARTITION BY part ORDER BY k), \
             count(*) OVER (PARTITION BY part) FROM w ORDER BY id");
        let expected: Vec<Vec<Option<String>>> = window_model(&table)
            .into_iter()
            .map(|(n, r, d, sum, count)| {
                [n.to_string(), r.to_string(), d.to_string(), sum.to_string(), count.to_string()]
                    .map(Some)
                    .to_vec()
            })
            .collect();
        prop_assert_eq!(got, expected);
    }
}

/// Window values count toward the memory bound like a join's rows, and a window over a
/// long join stops at the statement timeout.
#[test]
fn a_window_over_a_long_join_stops_at_its_timeout() {
    let db = open_mem();
    let mut s = db.session();
    numbers(&mut s, "t", 2000);
    s.execute("SET statement_timeout = '100ms'").expect("set");
    let error = s
        .execute("SELECT sum(a.v) OVER (PARTITION BY b.v) FROM t a, t b WHERE a.v + b.v >= 0")
        .expect_err("timeout");
    assert_eq!(error.sqlstate, "57014", "{error:?}");
    s.execute("SET statement_timeout = 0").expect("off");
    assert_eq!(
        rows(
            &mut s,
            "SELECT max(r) FROM (SELECT rank() OVER (ORDER BY v DESC) AS r FROM t) x"
        ),
        [[Some("2000".to_string())]]
    );
}
