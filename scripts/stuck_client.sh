#!/usr/bin/env bash
# How long a client that stops reading a large result holds its session in `hotpage
# serve`: (1) from `pg_terminate_backend(pid)` until the session is gone from
# pg_stat_activity, (2) from SIGTERM until the server has exited. The client asks for
# 32,000 rows of 1,500 bytes (48 MB) and reads nothing after startup.
#
# Usage: scripts/stuck_client.sh BIN [ROUNDS]   (needs psql and python3)
set -euo pipefail
bin=${1:?usage: scripts/stuck_client.sh BIN [ROUNDS]}
rounds=${2:-3}
port=${PORT:-5493}
work=$(mktemp -d)
trap 'pkill -f "serve --db $work/db" 2>/dev/null || true; rm -rf "$work"' EXIT

cat > "$work/stuck.py" <<'PY'
import socket, struct, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
body = struct.pack("!i", 196608) + b"user\0t\0database\0d\0\0"
s.sendall(struct.pack("!i", len(body) + 4) + body)
buf, pid = b"", None
while True:
    while len(buf) < 5:
        buf += s.recv(65536)
    n = struct.unpack("!i", buf[1:5])[0]
    while len(buf) < 1 + n:
        buf += s.recv(65536)
    tag, msg, buf = buf[0:1], buf[5:1 + n], buf[1 + n:]
    if tag == b"K":
        pid = struct.unpack("!i", msg[:4])[0]
    if tag == b"Z":
        break
print(pid, flush=True)
q = b"SELECT * FROM big\0"
s.sendall(b"Q" + struct.pack("!i", len(q) + 4) + q)
time.sleep(600)
PY

psql_() { psql -h 127.0.0.1 -p "$port" -U t -X -At -q "$@"; }
now() { date +%s.%N; }
# Starts a stuck client; prints its session's pid once its statement runs.
stuck() {
  python3 "$work/stuck.py" "$port" > "$work/pid" &
  while [ ! -s "$work/pid" ]; do sleep 0.05; done
  local pid; pid=$(cat "$work/pid"); : > "$work/pid"
  until [ "$(psql_ -c "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid AND state = 'active'")" = 1 ]; do sleep 0.05; done
  sleep 1 # the sockets' buffers fill and the server's write blocks
  echo "$pid"
}

for round in $(seq "$rounds"); do
  rm -rf "$work/db"
  "$bin" serve --db "$work/db" --listen "127.0.0.1:$port" 2> "$work/serve.log" &
  server=$!
  until psql_ -c "SELECT 1" >/dev/null 2>&1; do sleep 0.1; done
  psql_ -c "CREATE TABLE big (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)" \
        -c "INSERT INTO big (v) SELECT repeat('x', 1500) FROM generate_series(1, 32000)"
  pid=$(stuck)
  t0=$(now)
  psql_ -c "SELECT pg_terminate_backend($pid)" >/dev/null
  until [ "$(psql_ -c "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid")" = 0 ]; do sleep 0.02; done
  terminate=$(echo "$(now) - $t0" | bc)
  stuck >/dev/null
  t0=$(now)
  kill -TERM "$server"
  wait "$server" || true
  shutdown=$(echo "$(now) - $t0" | bc)
  pkill -f "$work/stuck.py" || true
  printf 'round %d: pg_terminate_backend -> session gone %.2f s; SIGTERM -> server exited %.2f s\n' \
    "$round" "$terminate" "$shutdown"
done
