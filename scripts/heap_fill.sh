#!/usr/bin/env bash
# Seed 002's heap table: 10,000 rows of each size into an empty heap, one session, durable
# autocommit. Prints pages, fill and free-space-map updates per row size (Markdown).
# Usage: scripts/heap_fill.sh ["100 200 500 1000 2000 3000 4000"] [rows]
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-"100 200 500 1000 2000 3000 4000"}
rows=${2:-10000}
cargo build --release -q -p hotpage-cli
echo "| row bytes | pages | avg page fill % | FSM updates |"
echo "|---|---|---|---|"
for r in $sizes; do
  target/release/hotpage stress --design heap --sessions 1 --rows "$rows" --row-bytes "$r" --json |
    python3 -c "import json,sys; r=json.load(sys.stdin); print(f\"| $r | {r['index']['pages']} | {r['index']['avg_fill_pct']:.2f} | {r['fsm']['updates']} |\")"
done
