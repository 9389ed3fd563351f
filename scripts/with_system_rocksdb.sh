#!/usr/bin/env bash
# Runs a cargo command against the system's RocksDB library instead of building RocksDB's
# C++ sources (about 70 minutes on 2 cores, docs/BENCHMARKS.md "RocksDB's build"), so
# the `rocksdb` feature of hotpage-peers (and of hotpage-cli) builds in a few minutes.
#
#   scripts/with_system_rocksdb.sh cargo test -p hotpage-peers --features rocksdb
#   scripts/with_system_rocksdb.sh cargo build --release -p hotpage-cli --features rocksdb
#
# Needs Debian's librocksdb-dev (RocksDB 7.8.3 on bookworm) and libclang-dev; `--install`
# installs them when missing (as .ci/run does). The `rocksdb` crate is pinned to 0.20.1,
# whose bundled RocksDB (7.9.2) is the release nearest 7.8, and bindgen reads the system's
# rocksdb/c.h: every C function the crate calls is checked against the linked library at
# compile time. Another RocksDB: set ROCKSDB_LIB_DIR and ROCKSDB_INCLUDE_DIR first.
# Without this script, `--features rocksdb` falls back to compiling the bundled C++ sources.
set -euo pipefail

if [[ ${1:-} == --install ]]; then
    shift
    # Debian's packages, only when missing (as .ci/run installs PostgreSQL).
    if ! dpkg -s librocksdb-dev libclang-dev >/dev/null 2>&1; then
        sudo=""
        if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
        $sudo apt-get update
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y librocksdb-dev libclang-dev
    fi
fi

multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
export ROCKSDB_LIB_DIR=${ROCKSDB_LIB_DIR:-/usr/lib/$multiarch}
export ROCKSDB_INCLUDE_DIR=${ROCKSDB_INCLUDE_DIR:-/usr/include}

if [[ ! -e $ROCKSDB_INCLUDE_DIR/rocksdb/c.h ]]; then
    echo "with_system_rocksdb.sh: no RocksDB headers in $ROCKSDB_INCLUDE_DIR (apt-get install librocksdb-dev, or run with --install)" >&2
    exit 1
fi
if ! ls "$ROCKSDB_LIB_DIR"/librocksdb.so* >/dev/null 2>&1; then
    echo "with_system_rocksdb.sh: no librocksdb.so in $ROCKSDB_LIB_DIR (apt-get install librocksdb-dev, or run with --install)" >&2
    exit 1
fi
if [[ $# -eq 0 ]]; then
    echo "usage: scripts/with_system_rocksdb.sh [--install] cargo ARGS..." >&2
    exit 2
fi
exec "$@"
