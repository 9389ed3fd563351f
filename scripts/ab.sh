#!/usr/bin/env bash
# Compares two hotpage binaries on the same stress runs, interleaved (A B, then B A, ...),
# and prints per configuration the median rows/s of each, the median of the per-round
# ratios B/A, B's log bytes per row and commits per flush, and each one's median leaf fill.
# A configuration without --design runs identity.
# Usage: scripts/ab.sh BINARY_A BINARY_B [rounds] -- CONFIG...
#   each CONFIG is a quoted set of stress options, e.g. "--sessions 64 --rows 2000".
# Example (issue 9's cost check):
#   scripts/ab.sh /tmp/hotpage-before target/release/hotpage 3 -- \
#     "--sessions 1 --rows 5000" "--sessions 64 --rows 2000" \
#     "--sessions 1 --rows 500000 --durability none" "--sessions 64 --rows 10000 --durability none"
set -euo pipefail
a=$1 b=$2 rounds=${3:-3}
shift 3
[ "${1:-}" = "--" ] && shift
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq 1 "$rounds"); do
  for config in "$@"; do
    order="a b"
    [ $((round % 2)) -eq 0 ] && order="b a"
    for which in $order; do
      bin=$a; [ "$which" = b ] && bin=$b
      design="--design identity"
      case " $config " in *" --design "*) design="" ;; esac
      # shellcheck disable=SC2086 # each config is a list of options
      "$bin" stress $design $config --json 2>/dev/null |
        python3 -c "import json,sys; r=json.load(sys.stdin); l=r.get('log') or {}; \
print('$which', '$config', r['rows_per_s'], (l.get('bytes') or 0)/max(r['rows_total'],1), l.get('commits_per_flush') or 0, r['index']['avg_fill_pct'], sep='\t')" >>"$results"
    done
  done
done
python3 - "$results" "$rounds" <<'PY'
import sys, statistics, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
rounds = int(sys.argv[2])
by = collections.defaultdict(lambda: {"a": [], "b": []})
for which, config, rps, bpr, cpf, fill in rows:
    by[config][which].append((float(rps), float(bpr), float(cpf), float(fill)))
print(f"{'configuration':60} {'A rows/s':>11} {'B rows/s':>11} {'B/A':>6}  {'B log B/row':>11} {'B commits/flush':>15} {'A fill %':>8} {'B fill %':>8}")
for config, runs in by.items():
    a = [r[0] for r in runs["a"]]; b = [r[0] for r in runs["b"]]
    ratios = [y / x for x, y in zip(a, b)]
    print(f"{config:60} {statistics.median(a):>11,.0f} {statistics.median(b):>11,.0f} {statistics.median(ratios):>6.3f}"
          f"  {statistics.median(r[1] for r in runs['b']):>11.0f} {statistics.median(r[2] for r in runs['b']):>15.1f}"
          f" {statistics.median(r[3] for r in runs['a']):>8.1f} {statistics.median(r[3] for r in runs['b']):>8.1f}")
print(f"(median of {rounds} interleaved rounds; B/A is the median of the per-round ratios)")
PY
