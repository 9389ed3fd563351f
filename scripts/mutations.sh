#!/usr/bin/env bash
# Proves the crash campaign can fail: runs it against six deliberate durability bugs, in
# copies of this repository, and reports whether each is caught (it must be).
#   1. a commit acknowledged before its fdatasync;
#   2. no full-page images (no torn-page repair);
#   3. recovery skips re-applying committed transactions;
#   4. heap recovery skips reading the heap, so every logged heap row counts as missing;
#   5. a checkpoint fdatasyncs only data.0 of several data files;
#   6. a checkpoint takes a memory table's unsaved rows but never writes them to its file.
# Usage: scripts/mutations.sh [seeds]   (default 300; takes a few minutes on 2 cores)
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
seeds=${1:-300}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {
  local name=$1 file=$2 old=$3 new=$4
  local copy="$work/$name"
  mkdir -p "$copy" && (cd "$repo" && git ls-files -z | xargs -0 -I{} cp --parents {} "$copy/")
  python3 - "$copy/$file" "$old" "$new" <<'PY' || { echo "$name: patch failed"; return; }
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
assert old in text, "pattern not found"
open(path, "w").write(text.replace(old, new, 1))
PY
  local out
  out=$(cd "$copy" && HOTPAGE_CRASH_SEEDS=$seeds CARGO_TARGET_DIR="$work/target" \
        cargo test -q -p hotpage --test crash_campaign 2>&1)
  if echo "$out" | grep -q "test result: ok"; then
    echo "$name: NOT CAUGHT"
  else
    echo "$name: caught: $(echo "$out" | grep -E 'seeds failed|seed [0-9]+:' | head -2 | tr '\n' ' ' | cut -c1-240)"
  fi
}
run ack-before-fsync crates/hotpage/src/db.rs \
  'if self.durability == Durability::Sync {
                    wal.wait_durable(end)?;
                }' 'let _ = end;'
run no-full-page-images crates/hotpage/src/logger.rs \
  'if image_lsn == 0 || image_lsn <= self.redo_lsn.load(Ordering::SeqCst) {' 'if false && image_lsn == 0 {'
run no-reapply crates/hotpage/src/db.rs \
  '        if redo.commits > 0 {' '        if false && redo.commits > 0 {'
run heap-reapply-without-page-walk crates/hotpage/src/db/routing.rs \
  '            heap.remove_present(keys, |key, page_id| {' '            keys.retain(|_| true);
            heap.remove_present(&mut HashSet::new(), |key, page_id| {'
run sync-only-data0 crates/hotpage/src/buffer.rs \
  'for data in self.files.iter() {
            data.file.sync_data()' 'for data in self.files.iter().take(1) {
            data.file.sync_data()'
run memory-checkpoint-skips-file crates/hotpage/src/db/memory.rs \
  '        table.write_taken()?;' '        let _ = table;'
