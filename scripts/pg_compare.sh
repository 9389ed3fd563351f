#!/usr/bin/env bash
# Issue 13's comparison: pgbench against `hotpage serve` and against PostgreSQL 15 on the
# same machine, in the same run, interleaved, for an identity table and a uuid table, at
# the same durability: hotpage `sync` against synchronous_commit=on, and `async` against
# synchronous_commit=off.
#
#   scripts/pg_compare.sh [rounds] [clients] [seconds]      (defaults 3 64 10)
#
# Each run: a fresh table (a fresh hotpage database; DROP and CREATE on PostgreSQL),
# then `pgbench -n -M prepared -f insert.sql -c CLIENTS -j 2 -T SECONDS`. Prints one line
# per run (system, table, durability, tps, latency average and p99 from pgbench's
# per-transaction log) and then the medians and the hotpage ÷ PostgreSQL ratios: of the
# medians, and round by round (their median and range).
# B= the hotpage binary (default target/release/hotpage). A= an older hotpage binary,
# optional: each round then runs it too, just before B, and a second table gives B ÷ A
# (an A/B comparison interleaved with the same PostgreSQL runs). PostgreSQL is started once
# with scripts/pg_start.sh (installed from Debian's packages if missing) and stopped at
# the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=${B:-target/release/hotpage}
ROUNDS=${1:-3}
CLIENTS=${2:-64}
SECONDS_PER_RUN=${3:-10}
WORK=$(mktemp -d)
chmod 755 "$WORK"
eval "$("$here/pg_start.sh")"
trap '"$here/pg_stop.sh" "$PG_DIR" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
echo "INSERT INTO t (v) VALUES ('pgbench');" > "$WORK/insert.sql"
PG_PORT=${PG_URL##*:}
PG_PORT=${PG_PORT%%/*}

table_sql() { # table
  case $1 in
    identity) echo "CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)" ;;
    uuid) echo "CREATE TABLE t (id uuid DEFAULT gen_random_uuid() PRIMARY KEY, v text)" ;;
  esac
}

# pgbench_run PORT USER DB [PGOPTIONS]: runs pgbench in $WORK and prints "tps avg p99".
pgbench_run() {
  (cd "$WORK" && rm -f pgbench_log.* && PGOPTIONS="${4:-}" pgbench -n -M prepared \
    -f insert.sql -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" -l -h 127.0.0.1 -p "$1" -U "$2" \
    "$3" > pgbench.out 2>&1) || { cat "$WORK/pgbench.out" >&2; return 1; }
  python3 - "$WORK" <<'PY'
import glob, re, sys
work = sys.argv[1]
out = open(f"{work}/pgbench.out").read()
tps = float(re.search(r"tps = ([0-9.]+)", out).group(1))
avg = float(re.search(r"latency average = ([0-9.]+) ms", out).group(1))
lat = sorted(int(line.split()[2]) for f in glob.glob(f"{work}/pgbench_log.*") for line in open(f))
p99 = lat[int(len(lat) * 0.99)] / 1000 if lat else float("nan")
print(f"{tps:.0f} {avg:.2f} {p99:.2f}")
PY
}

hotpage_run() { # table durability [binary]
  local db="$WORK/db-$RANDOM$RANDOM" log="$WORK/serve.log" port=""
  "${3:-$B}" serve --db "$db" --listen 127.0.0.1:0 --durability "$2" --max-connections 200 2> "$log" &
  local pid=$!
  for _ in $(seq 1 100); do
    port=$(grep -o 'listening on [0-9.]*:[0-9]*' "$log" | sed 's/.*://' || true)
    [ -n "$port" ] && break
    sleep 0.1
  done
  psql -X -q -h 127.0.0.1 -p "$port" -U bench -d hotpage -c "$(table_sql "$1")"
  pgbench_run "$port" bench hotpage
  kill -TERM "$pid"
  wait "$pid"
  rm -rf "$db"
}

pg_run() { # table synchronous_commit
  psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres \
    -c "DROP TABLE IF EXISTS t" -c "$(table_sql "$1")" -c "CHECKPOINT"
  pgbench_run "$PG_PORT" postgres postgres "-c synchronous_commit=$2"
}

results="$WORK/results"
for round in $(seq 1 "$ROUNDS"); do
  for table in identity uuid; do
    for pair in "sync on" "async off"; do
      set -- $pair
      if [ -n "${A:-}" ]; then
        line=$(hotpage_run "$table" "$1" "$A")
        echo "round $round hotpage-A  $table $1: tps avg_ms p99_ms = $line"
        echo "hotpage-A $table $1 $line" >> "$results"
      fi
      line=$(hotpage_run "$table" "$1")
      echo "round $round hotpage    $table $1: tps avg_ms p99_ms = $line"
      echo "hotpage $table $1 $line" >> "$results"
      line=$(pg_run "$table" "$2")
      echo "round $round postgresql $table $1 (synchronous_commit=$2): tps avg_ms p99_ms = $line"
      echo "postgresql $table $1 $line" >> "$results"
    done
  done
done

python3 - "$results" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
med = {}
for system, table, dur, tps, avg, p99 in rows:
    med.setdefault((system, table, dur), []).append((float(tps), float(avg), float(p99)))
print()
# "ratio": of the two medians. "round ratios": hotpage ÷ PostgreSQL within each round (the
# two ran back to back), their median and range: the machine's drift between rounds
# cancels out of these.
print("| table | durability | hotpage tps | PostgreSQL tps | ratio | round ratios: median (min–max) | hotpage avg / p99 ms | PostgreSQL avg / p99 ms |")
print("|---|---|---|---|---|---|---|---|")
for table in ("identity", "uuid"):
    for dur in ("sync", "async"):
        h = med[("hotpage", table, dur)]
        p = med[("postgresql", table, dur)]
        m = lambda runs, i: statistics.median(r[i] for r in runs)
        paired = [hr[0] / pr[0] for hr, pr in zip(h, p)]
        print(f"| {table} | {dur} | {m(h,0):,.0f} | {m(p,0):,.0f} | {m(h,0)/m(p,0):.2f} | "
              f"{statistics.median(paired):.2f} ({min(paired):.2f}–{max(paired):.2f}) | "
              f"{m(h,1):.2f} / {m(h,2):.2f} | {m(p,1):.2f} / {m(p,2):.2f} |")
if any(system == "hotpage-A" for system, *_ in rows):
    print()
    print("| table | durability | A tps | B tps | B ÷ A | A ÷ PostgreSQL |")
    print("|---|---|---|---|---|---|")
    for table in ("identity", "uuid"):
        for dur in ("sync", "async"):
            a = statistics.median(r[0] for r in med[("hotpage-A", table, dur)])
            b = statistics.median(r[0] for r in med[("hotpage", table, dur)])
            p = statistics.median(r[0] for r in med[("postgresql", table, dur)])
            print(f"| {table} | {dur} | {a:,.0f} | {b:,.0f} | {b/a:.2f} | {a/p:.2f} |")
PY
