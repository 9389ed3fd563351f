#!/usr/bin/env bash
# Installs PostgreSQL's server and client from Debian's packages when they are missing (CI
# machines have only the Rust toolchain), and prints the directory of its binaries.
# Idempotent: with PostgreSQL present it changes nothing and runs no apt-get.
#
#   scripts/pg_install.sh          # prints e.g. /usr/lib/postgresql/15/bin
set -euo pipefail

# The directory holding initdb, pg_ctl and postgres: Debian keeps them in
# /usr/lib/postgresql/VERSION/bin (newest first), other installs put them on PATH.
pg_bin_dir() {
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
        if [[ -x $dir/initdb && -x $dir/pg_ctl && -x $dir/postgres ]]; then
            echo "$dir"
            return 0
        fi
    done
    if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
        dirname "$(readlink -f "$(command -v initdb)")"
        return 0
    fi
    return 1
}

if ! dir=$(pg_bin_dir); then
    if [[ $(id -u) -ne 0 ]]; then
        echo "pg_install.sh: PostgreSQL is not installed, and installing it needs root (apt-get install postgresql)" >&2
        exit 1
    fi
    echo "pg_install.sh: installing PostgreSQL from Debian's packages" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql postgresql-client >&2
    dir=$(pg_bin_dir) || {
        echo "pg_install.sh: apt-get installed postgresql but no initdb/pg_ctl was found" >&2
        exit 1
    }
fi
echo "$dir"
