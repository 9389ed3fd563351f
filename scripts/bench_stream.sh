#!/bin/bash
# Used for docs/BENCHMARKS.md, "Results streamed to the client". Needs psql; DB holds a
# table big (see there for how it was made).
#   scripts/bench_stream.sh BIN DB PORT copy|select
# One measurement: BIN serves DB on PORT; psql runs MODE (copy | select) of table big into
# /dev/null. Prints the wall seconds of the psql command and the server's peak RSS (VmHWM)
# just before and after it.
BIN=$1 DB=$2 PORT=$3 MODE=$4
P="psql -X -h 127.0.0.1 -p $PORT -U t -d hotpage"
$BIN serve --db "$DB" --listen 127.0.0.1:$PORT > /tmp/serve-$PORT.log 2>&1 &
PID=$!
until $P -Atc "select 1" >/dev/null 2>&1; do kill -0 $PID 2>/dev/null || { echo "serve failed: $(tail -1 /tmp/serve-$PORT.log)"; exit 1; }; sleep 0.2; done
before=$(awk '/VmHWM/{print $2}' /proc/$PID/status)
start=$(date +%s.%N)
if [ "$MODE" = copy ]; then
  $P -c "COPY big TO STDOUT" > /dev/null 2>/tmp/psql-err-$PORT.log
else
  $P -At -c "SELECT * FROM big" > /dev/null 2>/tmp/psql-err-$PORT.log
fi
rc=$?
end=$(date +%s.%N)
after=$(awk '/VmHWM/{print $2}' /proc/$PID/status)
kill $PID; wait $PID 2>/dev/null
printf "%s %s rc=%s secs=%.2f hwm_before_mb=%d hwm_after_mb=%d %s\n" "$(basename $BIN)" "$MODE" "$rc" "$(echo "$end - $start" | bc)" $((before/1024)) $((after/1024)) "$(head -c 150 /tmp/psql-err-$PORT.log)"
