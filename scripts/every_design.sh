#!/usr/bin/env bash
# Issue 5's "done when", for every design: stress into a kept database then check it, and a
# kill-and-recover crash test. Prints one Markdown row per design; exits 1 if any fails.
# Usage: scripts/every_design.sh [trials]   (default 5)
set -uo pipefail
cd "$(dirname "$0")/.."
trials=${1:-5}
cargo build --release -q -p hotpage-cli || exit 1
bin=target/release/hotpage
designs=$("$bin" stress --design '?' --rows 1 2>&1 | sed -n 's/.*choose one of: //p' |
  sed 's/, or all//; s/,//g')
[ -n "$designs" ] || { echo "no designs found in stress --help"; exit 1; }
status=0
echo "| design | stress rows | check | crashtest trials | acknowledged | lost | partial | check failures |"
echo "|---|---|---|---|---|---|---|---|"
for d in $designs; do
  dir=$(mktemp -d)
  rows=$("$bin" stress --design "$d" --sessions 8 --rows 5000 --db "$dir/db" --json 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["rows_total"])') || rows=FAILED
  if "$bin" check --db "$dir/db" >/dev/null 2>&1; then check=ok; else check=FAILED; status=1; fi
  rm -rf "$dir"
  crash=$("$bin" crashtest --design "$d" --trials "$trials" --sessions 8 --seed 7 --json 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["trials"], r["rows_acknowledged"], r["rows_lost"], r["partial_transactions"], r["check_failures"], sep=" | ")') ||
    { crash="FAILED"; status=1; }
  echo "| $d | $rows | $check | $crash |"
done
exit $status
