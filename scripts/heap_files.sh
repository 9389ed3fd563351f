#!/usr/bin/env bash
# Seed 002's remedy: FSM_LATCH waits of a heap with 1 and with F data files, at several
# session counts, median of RUNS runs (by rows/s; the waits are from the median run).
# Usage: scripts/heap_files.sh ["1 4"] ["8 64"] [total rows] [runs] [durability]
set -euo pipefail
cd "$(dirname "$0")/.."
files_list=${1:-"1 4"}
sessions_list=${2:-"8 64"}
total_rows=${3:-320000}
runs=${4:-3}
durability=${5:-none}
cargo build --release -q -p hotpage-cli
echo "| files | sessions | rows/s | FSM_LATCH waits | FSM_LATCH ms | PAGELATCH_EX ms | FSM updates |"
echo "|---|---|---|---|---|---|---|"
for f in $files_list; do
  for s in $sessions_list; do
    for _ in $(seq "$runs"); do
      target/release/hotpage stress --design heap --files "$f" --sessions "$s" \
        --rows $((total_rows / s)) --row-bytes 200 --durability "$durability" --json
      echo
    done | python3 -c "
import json, sys
runs = [json.loads(l) for l in sys.stdin if l.strip()]
runs.sort(key=lambda r: r['rows_per_s'])
r = runs[len(runs) // 2]
ex = sum(w['wait_ms'] for w in r['waits'] if w['type'] == 'PAGELATCH_EX')
print(f\"| $f | $s | {r['rows_per_s']:.0f} | {r['fsm']['waits']} | {r['fsm']['wait_ms']:.0f} | {ex:.0f} | {r['fsm']['updates']} |\")
"
  done
done
