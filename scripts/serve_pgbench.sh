#!/usr/bin/env bash
# pgbench against `hotpage serve`: interleaved rounds of each durability, a fresh database
# per run. Usage: scripts/serve_pgbench.sh [rounds] [clients] [seconds] [durabilities]
# Prints one line per run: durability, tps, latency average and p99 (ms, from pgbench's
# per-transaction log).
set -euo pipefail
B=${B:-target/release/hotpage}
ROUNDS=${1:-3}
CLIENTS=${2:-64}
SECONDS_PER_RUN=${3:-10}
DURABILITIES=${4:-"sync async"}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "INSERT INTO t (v) VALUES ('pgbench');" > "$WORK/insert.sql"

run() { # durability
  local dur=$1 db="$WORK/db-$1-$RANDOM" log="$WORK/serve.log"
  "$B" serve --db "$db" --listen 127.0.0.1:0 --durability "$dur" --max-connections 200 2> "$log" &
  local pid=$!
  local port=""
  for _ in $(seq 1 100); do
    port=$(grep -o 'listening on [0-9.]*:[0-9]*' "$log" | sed 's/.*://' || true)
    [ -n "$port" ] && break
    sleep 0.1
  done
  psql -X -q -h 127.0.0.1 -p "$port" -U bench -d hotpage \
    -c "CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)"
  (cd "$WORK" && rm -f pgbench_log.* && pgbench -n -M prepared -f insert.sql -c "$CLIENTS" -j 2 \
    -T "$SECONDS_PER_RUN" -l -h 127.0.0.1 -p "$port" -U bench hotpage > pgbench.out 2>&1)
  kill -TERM "$pid"
  wait "$pid"
  python3 - "$dur" "$WORK" <<'PY'
import glob, re, sys
dur, work = sys.argv[1:3]
out = open(f"{work}/pgbench.out").read()
tps = float(re.search(r"tps = ([0-9.]+)", out).group(1))
avg = float(re.search(r"latency average = ([0-9.]+) ms", out).group(1))
lat = sorted(int(line.split()[2]) for f in glob.glob(f"{work}/pgbench_log.*") for line in open(f))
p99 = lat[int(len(lat) * 0.99)] / 1000 if lat else float("nan")
print(f"{dur:5} tps {tps:9.0f}  latency avg {avg:7.2f} ms  p99 {p99:7.2f} ms  ({len(lat)} transactions)")
PY
}

for _ in $(seq 1 "$ROUNDS"); do
  for dur in $DURABILITIES; do
    run "$dur"
  done
done
