#!/usr/bin/env bash
# Starts a throwaway PostgreSQL as a user process on a temporary directory (initdb +
# pg_ctl), installing it from Debian's packages first if it is missing, and prints two
# lines for `eval`:
#
#   PG_URL=postgres://postgres@127.0.0.1:PORT/postgres
#   PG_DIR=/tmp/hotpage-pg.XXXXXX
#
#   eval "$(scripts/pg_start.sh)"
#   hotpage stress --url "$PG_URL" ...
#   scripts/pg_stop.sh "$PG_DIR"
#
# The server listens on 127.0.0.1 only, on a free port, with trust authentication for the
# superuser `postgres`, fsync on and synchronous_commit on (PostgreSQL's defaults, set
# explicitly so that a changed default elsewhere cannot change what is measured), and up
# to 300 connections. initdb runs with --no-sync: that only skips flushing the fresh
# cluster's files once (seconds on a busy disk); the server itself fsyncs as usual.
#
# initdb and postgres refuse to run as root, so as root they run as the `postgres` user
# (which Debian's package creates), or as `nobody` where that user does not exist.
# Environment: PG_MAX_CONNECTIONS (default 300), PG_TMP (default /tmp: the directory must
# be reachable by that user).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$("$here/pg_install.sh")

as_user=()
owner=$(id -un)
if [[ $(id -u) -eq 0 ]]; then
    if id postgres >/dev/null 2>&1; then owner=postgres; else owner=nobody; fi
    as_user=(runuser -u "$owner" --)
fi

dir=$(mktemp -d "${PG_TMP:-/tmp}/hotpage-pg.XXXXXX")
chmod 700 "$dir"
[[ $(id -u) -eq 0 ]] && chown "$owner" "$dir"

fail() {
    echo "pg_start.sh: $1" >&2
    [[ -f $dir/log ]] && tail -n 20 "$dir/log" >&2
    rm -rf "$dir"
    exit 1
}

"${as_user[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-locale -E UTF8 \
    --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; fail "initdb failed"; }

# A free port: one nothing answers on. Another process may take it before the server
# binds, so a failed start tries another.
port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for attempt in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    port_is_free "$port" || continue
    options="-c port=$port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$dir"
    options+=" -c fsync=on -c synchronous_commit=on -c max_connections=${PG_MAX_CONNECTIONS:-300}"
    if "${as_user[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 -o "$options" \
        start >/dev/null 2>&1; then
        echo "PG_URL=postgres://postgres@127.0.0.1:$port/postgres"
        echo "PG_DIR=$dir"
        exit 0
    fi
    grep -q "could not bind\|already in use" "$dir/log" 2>/dev/null || fail "pg_ctl start failed"
done
fail "no free port found in 5 attempts"
