#!/usr/bin/env bash
# docs/BENCHMARKS.md's `hotpage stress --url` figure: a local PostgreSQL (scripts/pg_start.sh:
# fsync on, synchronous_commit on), an identity table, 64 sessions for D seconds, each
# statement its own transaction; each round runs `hotpage stress --url` and then, for the
# same table and statement, `pgbench -M prepared` (the PostgreSQL community's own driver),
# so the two clients are compared in the same run. Prints one line per run and the medians.
#
#   B=target/release/hotpage ROUNDS=3 D=10 scripts/pg_url_bench.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=${B:-target/release/hotpage}
ROUNDS=${ROUNDS:-3}
D=${D:-10}
N=${N:-64}
bin=$("$here/pg_install.sh")
eval "$("$here/pg_start.sh")"
work=$(mktemp -d)
trap '"$here/pg_stop.sh" "$PG_DIR"; rm -rf "$work"' EXIT
setup=$work/setup.sql
echo "CREATE TABLE IF NOT EXISTS t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, status varchar(20) NOT NULL);" >"$setup"
insert="INSERT INTO t(status) VALUES ('CREATED')"
echo "$insert;" >"$work/insert.sql"

stress_rates=() pgbench_rates=()
for round in $(seq 1 "$ROUNDS"); do
    report=$("$B" stress --url "$PG_URL" --setup-sql "$setup" -Q "$insert" -n "$N" --duration "$D" --json 2>/dev/null)
    rate=$(grep -o '"rows_per_s":[0-9.]*' <<<"$report" | cut -d: -f2)
    p99=$(grep -o '"p99":[0-9.]*' <<<"$report" | cut -d: -f2)
    top=$(grep -o '"waits":\[{"type":"[^"]*","count":[0-9]*' <<<"$report" | sed 's/.*"type":"//; s/","count":/ /')
    echo "round $round: hotpage stress --url: $(printf %.0f "$rate") rows/s, p99 $p99 us, top wait sample: $top"
    stress_rates+=("$rate")
    out=$("$bin/pgbench" -n -M prepared -f "$work/insert.sql" -c "$N" -j 2 -T "$D" "$PG_URL" 2>&1)
    tps=$(grep -o 'tps = [0-9.]*' <<<"$out" | head -1 | cut -d' ' -f3)
    lat=$(grep -o 'latency average = [0-9.]* ms' <<<"$out" | cut -d' ' -f4)
    echo "round $round: pgbench -M prepared: $tps tps, latency average $lat ms"
    pgbench_rates+=("$tps")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median hotpage stress --url: $(median "${stress_rates[@]}") rows/s"
echo "median pgbench -M prepared: $(median "${pgbench_rates[@]}") tps"
psql_rows=$("$bin/psql" "$PG_URL" -Atc "SELECT count(*) FROM t")
echo "rows in t after all runs: $psql_rows"
