#!/usr/bin/env bash
# Stops a PostgreSQL started by scripts/pg_start.sh and removes its directory.
#
#   scripts/pg_stop.sh "$PG_DIR"
set -euo pipefail
dir=${1:?usage: scripts/pg_stop.sh PG_DIR (the PG_DIR that pg_start.sh printed)}
case $dir in
    */hotpage-pg.*) ;;
    *) echo "pg_stop.sh: $dir is not a directory pg_start.sh made (hotpage-pg.*)" >&2; exit 2 ;;
esac
[[ -d $dir ]] || { echo "pg_stop.sh: no such directory $dir" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
bin=$("$here/pg_install.sh")
as_user=()
if [[ $(id -u) -eq 0 ]]; then
    as_user=(runuser -u "$(stat -c %U "$dir")" --)
fi
if [[ -f $dir/data/postmaster.pid ]]; then
    "${as_user[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
        echo "pg_stop.sh: pg_ctl stop failed (the server may already be gone)" >&2
fi
rm -rf "$dir"
