#!/usr/bin/env bash
# scripts/bench_joins.sh BASE HEAD [ROUNDS] (docs/BENCHMARKS.md, 2026-12-06).
# Queries that read several tables (the general engine) on 10,000 customers and 200,000
# orders, and a one-table scan (select.rs, whose table read the general engine now
# shares), each a fresh `hotpage sql` process, BASE and HEAD interleaved; prints wall
# seconds. BASE may be a build without joins: its join cells then fail fast ("error").
# With PG=1, the same queries on the local PostgreSQL (psql -h /tmp/pgd -p 55432), whose
# database `joinbench` is loaded the same way if it is missing.
# The WITH queries (2026-12-06 evening): a WITH query joined to a table, and a recursive
# count to 100,000 (one working-table round per row). And a window: each customer's
# largest order by rank() over 200,000 orders.
# sort_one_table (2026-12-06, the byte-counted memory bound): a one-table sort, which
# holds every row it reads (select.rs), each row weighed as it is kept.
set -euo pipefail
base=$1 head=$2 rounds=${3:-3}
db=/tmp/bench-joins-db
if [ ! -d $db ]; then
  $head sql --db $db \
    -c "CREATE TABLE customers (id int PRIMARY KEY, name text, city text)" \
    -c "CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int, amount numeric(10,2))" \
    -c "INSERT INTO customers SELECT g, 'c' || g, 'city' || (g % 50) FROM generate_series(1, 10000) g" \
    -c "INSERT INTO orders SELECT g, g % 10000 + 1, (g % 1000) / 10.0 FROM generate_series(1, 200000) g" >/dev/null
fi
psql_bench() { psql -h /tmp/pgd -p 55432 -U postgres -X -q "$@"; }
if [ "${PG:-0}" = 1 ] && ! psql_bench -d joinbench -c "SELECT 1" >/dev/null 2>&1; then
  psql_bench -c "CREATE DATABASE joinbench"
  psql_bench -d joinbench \
    -c "CREATE TABLE customers (id int PRIMARY KEY, name text, city text)" \
    -c "CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int, amount numeric(10,2))" \
    -c "INSERT INTO customers SELECT g, 'c' || g, 'city' || (g % 50) FROM generate_series(1, 10000) g" \
    -c "INSERT INTO orders SELECT g, g % 10000 + 1, (g % 1000) / 10.0 FROM generate_series(1, 200000) g" \
    -c "ANALYZE"
fi
declare -A q
q[hash_join_group]="SELECT c.city, count(*), sum(o.amount) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.city ORDER BY 1"
q[in_subquery]="SELECT count(*) FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE city = 'city7')"
q[correlated_exists]="SELECT count(*) FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.amount > 99)"
q[scan_one_table]="SELECT count(*) FROM orders WHERE amount > 50"
q[with_join]="WITH totals AS (SELECT customer_id, sum(amount) AS total FROM orders GROUP BY customer_id) SELECT c.city, count(*) FROM totals t JOIN customers c ON c.id = t.customer_id WHERE t.total > 1000 GROUP BY c.city ORDER BY 1"
q[recursive_count]="WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 100000) SELECT count(*), sum(n) FROM r"
q[sort_one_table]="SELECT id, amount FROM orders ORDER BY amount DESC, id LIMIT 10"
q[window_rank]="SELECT count(*), sum(amount) FROM (SELECT amount, rank() OVER (PARTITION BY customer_id ORDER BY amount DESC) AS r FROM orders) x WHERE r = 1"
names="hash_join_group in_subquery correlated_exists scan_one_table sort_one_table with_join recursive_count window_rank"
t() { local s=$(date +%s.%N); if "$@" >/dev/null 2>&1; then echo "$(date +%s.%N) - $s" | bc; else echo error; fi; }
for r in $(seq $rounds); do
  for which in base head; do
    bin=${!which}
    line="round $r $which"
    for n in $names; do line="$line $n $(t $bin sql --db $db -c "SET statement_timeout = '120s'" -c "${q[$n]}")"; done
    echo "$line"
  done
  if [ "${PG:-0}" = 1 ]; then
    line="round $r postgres"
    for n in $names; do line="$line $n $(t psql_bench -d joinbench -c "${q[$n]}")"; done
    echo "$line"
  fi
done
