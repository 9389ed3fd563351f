#!/usr/bin/env bash
# Interleaved rounds: raw --design identity (10-byte rows) vs the same inserts through SQL.
B=${B:-target/release/hotpage}
SETUP=$(dirname "$0")/sql_cost_setup.sql
run() { # label durability sessions rows extra...
  local label=$1 dur=$2 n=$3 r=$4; shift 4
  local out; out=$( { /usr/bin/time -f "%U %S" "$B" stress "$@" -n "$n" -r "$r" --durability "$dur" --json > "${TMPDIR:-/tmp}/sqlcost.json"; } 2>&1 | tail -1)
  python3 - "$label" "$dur" "$n" "$r" "$out" "${TMPDIR:-/tmp}/sqlcost.json" <<'PY'
import json,sys
label,dur,n,r,t,path=sys.argv[1:7]
rep=json.load(open(path))
u,s=map(float,t.split())
rows=int(n)*int(r)
print(f"{label:4} {dur:5} n={n:>3} rows/s {rep['rows_per_s']:>10.0f}  cpu/row {1e6*(u+s)/rows:6.3f} us  user/row {1e6*u/rows:6.3f} us")
PY
}
for round in 1 2 3; do
  for cfg in "none 1 300000" "none 64 10000" "sync 1 3000" "sync 64 2000"; do
    set -- $cfg
    run raw $1 $2 $3 --design identity --row-bytes 10
    run sql $1 $2 $3 --setup-sql "$SETUP" -Q "INSERT INTO t (status) VALUES ('CREATED')"
  done
done
