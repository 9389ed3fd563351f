#!/usr/bin/env bash
# Captures what psql 15 sends for its describe meta-commands, and what PostgreSQL 15 answers,
# as the fixtures of crates/hotpage-sql/tests/psql_catalog.rs.
#
#   scripts/capture_psql_fixtures.sh
#
# Needs PostgreSQL 15's initdb, pg_ctl (/usr/local/bin or /usr/lib/postgresql/15/bin)
# and psql. Starts a throwaway server on a Unix socket in a temporary directory (as the
# `postgres` OS user when run as root, since initdb refuses root), with the bootstrap
# superuser named `hotpage`, locale C and UTF8 (what hotpage reports), creates the database
# `hotpage`, runs tests/psql/setup.sql in it, then for each meta-command in
# tests/psql/commands.txt:
#
#   tests/psql/<slug>/psql.txt   what psql printed (queries shown by -E, then the result)
#   tests/psql/<slug>/NN.sql     each query psql sent, verbatim
#   tests/psql/<slug>/NN.out     PostgreSQL's answer: "-- columns" then name<TAB>type lines
#                                (psql's \gdesc), "-- rows" then the rows in COPY text
#                                format (tab-separated, \N for NULL, backslash escapes)
#
# and tests/psql/oids.txt: the OID and name of every relation setup.sql made (the tests map
# PostgreSQL's OIDs in the queries and answers to hotpage's through the names).
#
# tests/psql/connect.txt: every statement a psql -c 'SELECT 1' and a psycopg2 session
# (when python3-psycopg2 is installed) sent, from the server's log: what clients send on
# their own at connect time (nothing: they read the server's ParameterStatus messages).
#
# tests/psql/queries/NN.sql are hand-written catalog queries (joins, subqueries, set
# operations, grouping, information_schema); their NN.out are PostgreSQL's answers too.
set -euo pipefail
cd "$(dirname "$0")/.."
out=crates/hotpage-sql/tests/psql
bin=/usr/local/bin
[ -x "$bin/initdb" ] || bin=/usr/lib/postgresql/15/bin
for tool in "$bin/initdb" "$bin/pg_ctl" "$(command -v psql || true)"; do
    [ -n "$tool" ] && [ -x "$tool" ] || {
        echo "capture_psql_fixtures: missing $tool (apt-get install postgresql-15 postgresql-client-15)" >&2
        exit 1
    }
done
psql --version | grep -q ' 15\.' || { echo "capture_psql_fixtures: needs psql 15, have $(psql --version)" >&2; exit 1; }

dir=$(mktemp -d /tmp/hotpage-pgcap.XXXXXX)
run_as=()
if [ "$(id -u)" = 0 ]; then
    chown postgres "$dir"
    run_as=(runuser -u postgres --)
fi
stop() { "${run_as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap stop EXIT
"${run_as[@]}" "$bin/initdb" -D "$dir/data" -U hotpage --auth=trust --locale=C -E UTF8 >"$dir/initdb.log"
"${run_as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-p 54399 -k $dir -c listen_addresses= -c log_statement=all" start >/dev/null
psql -X -q -h "$dir" -p 54399 -U hotpage -d postgres -c "CREATE DATABASE hotpage"
pg=(psql -X -q -h "$dir" -p 54399 -U hotpage -d hotpage -v ON_ERROR_STOP=1)
"${pg[@]}" -f "$out/setup.sql" >/dev/null

"${pg[@]}" -A -t -F $'\t' -c \
    "SELECT oid, relname FROM pg_catalog.pg_class WHERE oid >= 16384 ORDER BY oid" >"$out/oids.txt"

# Writes NN.out, PostgreSQL's answer, next to each NN.sql of directory $1.
answer_all() {
    for query in "$1"/*.sql; do
        [ -e "$query" ] || continue
        answer="${query%.sql}.out"
        body=$(sed -e 's/;[[:space:]]*$//' "$query")
        {
            echo "-- columns"
            printf '%s\n\\gdesc\n' "$body" | "${pg[@]}" -A -t -F $'\t'
            echo "-- rows"
            "${pg[@]}" -c "COPY ($body) TO STDOUT"
        } >"$answer"
    done
}

while IFS= read -r command; do
    [ -z "$command" ] && continue
    case "$command" in \#*) continue ;; esac
    slug=$(printf '%s' "$command" | sed -e 's/^\\//' -e 's/[^A-Za-z0-9]\+/_/g' -e 's/_$//')
    rm -rf "${out:?}/$slug"
    mkdir -p "$out/$slug"
    "${pg[@]}" -E -c "$command" >"$out/$slug/psql.txt" 2>&1 || true
    # psql -E prints each query between these two marker lines.
    awk -v dir="$out/$slug" '
        /^\*\*\*\*\*\*\*\*\* QUERY \*\*\*\*\*\*\*\*\*\*$/ { n++; file = sprintf("%s/%02d.sql", dir, n); inq = 1; first = 1; next }
        /^\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*\*$/ { if (inq) { inq = 0; close(file) } next }
        inq { if (first) { printf "%s", $0 > file; first = 0 } else { printf "\n%s", $0 > file } }
    ' "$out/$slug/psql.txt"
    answer_all "$out/$slug"
done <"$out/commands.txt"
answer_all "$out/queries"

# What clients send by themselves when they connect: the server log (log_statement=all)
# for a psql -c and, where python3-psycopg2 is installed, a psycopg2 session.
logged=$(wc -l <"$dir/server.log")
psql -X -q -h "$dir" -p 54399 -U hotpage -d hotpage -c 'SELECT 1' >/dev/null
if /usr/bin/python3 -c 'import psycopg2' 2>/dev/null; then
    /usr/bin/python3 - "$dir" <<'PY'
import sys, psycopg2
c = psycopg2.connect(host=sys.argv[1], port=54399, user="hotpage", dbname="hotpage")
cur = c.cursor()
cur.execute("SELECT relname FROM pg_catalog.pg_class WHERE relname = %s", ("orders",))
cur.fetchall()
c.commit()
c.close()
PY
fi
sleep 0.5
tail -n +"$((logged + 1))" "$dir/server.log" | sed -n 's/.*LOG:  statement: //p' >"$out/connect.txt"
echo "fixtures written under $out"
