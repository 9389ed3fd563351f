#!/usr/bin/env bash
# Durable autocommit throughput: rows/s and commits per fdatasync for each durability at
# several session counts, median of RUNS runs of SECS seconds each, as a Markdown table.
# Usage: scripts/durability.sh [design] [session counts] [secs] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
design=${1:-identity}
sessions_list=${2:-"1 8 64"}
secs=${3:-3}
runs=${4:-3}
cargo build --release -q -p hotpage-cli
bin=target/release/hotpage
echo "| sessions | durability | rows/s (median of $runs) | commits per flush | p99 latency us |"
echo "|---|---|---|---|---|"
for s in $sessions_list; do
  for d in sync async none; do
    results=$(for _ in $(seq "$runs"); do
      "$bin" stress --design "$design" --sessions "$s" --duration "$secs" --warmup 0.5 \
        --durability "$d" --json 2>/dev/null |
        python3 -c 'import json,sys; r=json.load(sys.stdin); l=r["log"] or {}; print(r["rows_per_s"], l.get("commits_per_flush", 0), r["latency_us"]["p99"])'
    done | sort -g)
    median=$(echo "$results" | awk -v n="$runs" 'NR==int((n+1)/2)')
    printf '| %s | %s | %.0f | %.1f | %.0f |\n' "$s" "$d" $median
  done
done
