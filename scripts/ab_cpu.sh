#!/usr/bin/env bash
# Like scripts/ab.sh, but compares CPU time per row, which a busy machine disturbs far
# less than rows/s: each run is recorded with `perf record -e cpu-clock` (one sample per
# 250 us of CPU), and the samples of the session threads (every thread but the main one,
# which opens, verifies and closes the database) times 250 us, divided by the rows, is
# the run's CPU per row. Prints per configuration the median CPU us/row of each binary,
# the median of the per-round ratios B/A (below 1: B uses less CPU per row), and the
# median rows/s of each.
# Usage: scripts/ab_cpu.sh BINARY_A BINARY_B [rounds] -- CONFIG...   (needs perf)
set -euo pipefail
a=$1 b=$2 rounds=${3:-3}
shift 3
[ "${1:-}" = "--" ] && shift
command -v perf >/dev/null || { echo "ab_cpu.sh: perf is missing (apt-get install linux-perf)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
period_ns=250000
for round in $(seq 1 "$rounds"); do
  for config in "$@"; do
    order="a b"
    [ $((round % 2)) -eq 0 ] && order="b a"
    for which in $order; do
      bin=$a; [ "$which" = b ] && bin=$b
      design="--design identity"
      case " $config " in *" --design "*) design="" ;; esac
      # shellcheck disable=SC2086 # each config is a list of options
      perf record -q -e cpu-clock -c "$period_ns" -o "$work/perf.data" \
        "$bin" stress $design $config --json >"$work/report.json" 2>/dev/null
      perf report -i "$work/perf.data" --sort pid --stdio -g none -F sample,pid 2>/dev/null |
        grep -E '^ +[0-9]+ ' >"$work/threads.txt" || true
      python3 - "$which" "$config" "$work/report.json" "$work/threads.txt" "$period_ns" >>"$work/results" <<'PY'
import json, sys
which, config, report, threads, period = sys.argv[1:6]
r = json.load(open(report))
rows = [l.split() for l in open(threads)]
# pid column is "tid:comm"; the main thread's tid is the process id, the smallest tid.
counts = {int(tid.split(":")[0]): int(n) for n, tid in rows}
main = min(counts)
session = sum(n for tid, n in counts.items() if tid != main)
print(which, config, session * int(period) / 1000 / max(r["rows_total"], 1), r["rows_per_s"], sep="\t")
PY
    done
  done
done
python3 - "$work/results" "$rounds" <<'PY'
import sys, statistics, collections
by = collections.defaultdict(lambda: {"a": [], "b": []})
for line in open(sys.argv[1]):
    which, config, cpu, rps = line.rstrip("\n").split("\t")
    by[config][which].append((float(cpu), float(rps)))
print(f"{'configuration':62} {'A cpu us/row':>12} {'B cpu us/row':>12} {'B/A cpu':>8} {'A rows/s':>11} {'B rows/s':>11}")
for config, runs in by.items():
    a = [r[0] for r in runs["a"]]; b = [r[0] for r in runs["b"]]
    ratios = [y / x for x, y in zip(a, b)]
    print(f"{config:62} {statistics.median(a):>12.3f} {statistics.median(b):>12.3f} {statistics.median(ratios):>8.3f}"
          f" {statistics.median(r[1] for r in runs['a']):>11,.0f} {statistics.median(r[1] for r in runs['b']):>11,.0f}")
print(f"(median of {sys.argv[2]} interleaved rounds; B/A cpu is the median of the per-round ratios of CPU per row)")
PY
