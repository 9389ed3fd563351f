#!/bin/bash
# Used for docs/BENCHMARKS.md, "Results streamed to the client". Needs psql and pgbench.
#   scripts/pgbench_select_ab.sh BIN PORT
# pgbench -S (select-only, 1 row per query) against BIN serve: prepared and simple. Prints tps.
BIN=$1 PORT=$2 DB=/tmp/pgb-$PORT
rm -rf $DB
$BIN serve --db $DB --listen 127.0.0.1:$PORT > /tmp/pgb-serve-$PORT.log 2>&1 &
PID=$!
until psql -X -h 127.0.0.1 -p $PORT -U t -d hotpage -Atc "select 1" >/dev/null 2>&1; do kill -0 $PID 2>/dev/null || { echo "serve failed"; exit 1; }; sleep 0.2; done
pgbench -h 127.0.0.1 -p $PORT -U t -i -s 1 -q hotpage > /dev/null 2>&1 || echo "init failed"
for mode in prepared simple; do
  tps=$(pgbench -h 127.0.0.1 -p $PORT -U t -n -S -M $mode -c 8 -j 2 -T 8 hotpage 2>/dev/null | awk '/^tps/{print int($3)}')
  echo "$(basename $BIN) $mode tps=$tps"
done
kill $PID; wait $PID 2>/dev/null; rm -rf $DB
