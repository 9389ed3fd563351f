#!/usr/bin/env bash
# Scaling curve: rows/s of each design at several session counts, median of RUNS runs,
# as a Markdown table with ratios to identity measured in the same round.
# Usage: scripts/scaling.sh [designs] [session counts] [total rows per run] [runs]
#   scripts/scaling.sh "identity guid hash-prefix" "1 2 8 64" 640000 3
set -euo pipefail
cd "$(dirname "$0")/.."
designs=${1:-"identity guid hash-prefix"}
sessions_list=${2:-"1 2 8 64"}
total_rows=${3:-640000}
runs=${4:-3}
cargo build --release -q -p hotpage-cli
bin=target/release/hotpage
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "| sessions | $(for d in $designs; do printf '%s rows/s | ' "$d"; done)$(for d in $designs; do [ "$d" = identity ] || printf 'identity / %s | ' "$d"; done)"
echo "|---|$(for d in $designs; do printf -- '---|'; done)$(for d in $designs; do [ "$d" = identity ] || printf -- '---|'; done)"
for s in $sessions_list; do
  rows=$(( total_rows / s ))
  declare -A med=()
  for d in $designs; do
    med[$d]=$(for _ in $(seq "$runs"); do
      "$bin" stress --design "$d" --sessions "$s" --rows "$rows" --json |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["rows_per_s"])'
    done | median)
  done
  line="| $s |"
  for d in $designs; do line+=" $(printf '%.0f' "${med[$d]}") |"; done
  for d in $designs; do
    [ "$d" = identity ] && continue
    line+=" $(python3 -c "print(f'{${med[identity]}/${med[$d]}:.2f}')") |"
  done
  echo "$line"
done
