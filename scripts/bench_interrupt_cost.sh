#!/usr/bin/env bash
# scripts/bench_interrupt_cost.sh BASE HEAD [ROUNDS] (docs/BENCHMARKS.md, 2026-12-05).
# Interleaved rounds: a 1,048,576-row scan and a 1,000,000-turn T-SQL loop, baseline
# binary against head binary, each a fresh `hotpage sql` process; prints wall seconds.
set -euo pipefail
base=$1 head=$2 rounds=${3:-5}
db=/tmp/bench-scan-db
if [ ! -d $db ]; then
  $head sql --db $db -c "CREATE TABLE big (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)" -c "INSERT INTO big (v) VALUES ('x')" >/dev/null
  for i in $(seq 20); do $head sql --db $db -c "INSERT INTO big (v) SELECT v FROM big" >/dev/null; done
  $head sql --db $db -c "SELECT count(*) FROM big"
fi
scan="SELECT count(*) FROM big WHERE length(v) = 1"
loop=$'DECLARE @i bigint = 0\nWHILE @i < 1000000\nBEGIN\n  SET @i += 1\nEND'
t() { local s=$(date +%s.%N); "$@" >/dev/null; echo "$(date +%s.%N) - $s" | bc; }
for r in $(seq $rounds); do
  for which in base head; do
    bin=${!which}
    echo "round $r $which scan $(t $bin sql --db $db -c "$scan") loop $(t $bin sql --db $db --dialect tsql -c "$loop")"
  done
done
