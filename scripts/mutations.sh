#!/usr/bin/env bash
# Proves the crash proofs can fail: patches deliberate durability bugs into copies of this
# repository and reports whether each is caught (each must be).
# The crash campaign (tests/crash_campaign.rs) must catch:
#   1. a commit acknowledged before its fdatasync;
#   2. no full-page images (no torn-page repair);
#   3. recovery skips re-applying committed transactions;
#   4. heap recovery skips reading the heap, so every logged heap row counts as missing;
#   5. a checkpoint fdatasyncs only data.0 of several data files;
#   6. a checkpoint takes a memory table's unsaved rows but never writes them to its file;
#   7. the log's fdatasync removed;
#   8. no directory fsync after a log segment is created (or renamed for reuse);
#   9. damage in the middle of the log taken for the end of the log.
# And `hotpage crashtest --power-loss` must catch:
#  10. the log's fdatasync removed (a plain crashtest, which only kills a process, cannot:
#      the OS keeps every written byte).
# And the engine's own tests must catch (issue 11's concurrency and log changes):
#  11. a combining leader ignores its leaf's high bound (rows land on the wrong leaf);
#  12. a combining leader takes any key as its leaf's (the model test's tree breaks);
#  13. a stale latch upgrade enters exclusive mode first (invalidates every reader);
#  14. the log segment is not zero-filled ahead (every fdatasync extends the file);
#  15. a combining leader's guard is left armed after its group is finished (it releases a
#      request its owner already reused, which is then queued twice: a deadlock, which the
#      model test's watchdog turns into a failure).
# And (issue 12: supplied keys, dropped tables, SQL statements):
#  16. a supplied key found in the table is logged anyway (a duplicate at apply: half a
#      transaction);
#  17. a session that holds no key lock does not wait for another's key;
#  18. the catalog forgets that a table was dropped;
#  19. a multi-row INSERT outside a transaction is not its own transaction.
# And (issue 12: unlogged tables):
#  20. a crash no longer resets the unlogged tables;
#  21. an open does not mark the catalog open before unlogged pages can be written;
#  22. unlogged tables' rows go into the commit record like any other.
# And (issue 11: leaf inserts unlogged, splits as tree-split records):
#  23. redo of a split leaves the left page's rows from the separator on (they are on the
#      right page too);
#  24. redo of a split skips the parent's separator (the right page is lost);
#  25. a checkpoint publishes its redo point before it takes its logical point (a commit
#      applied in between is in no page record and not re-applied: lost).
# And (the WAL rule under async; tests/async_crash_campaign.rs, tests/logical_leaves.rs):
#  26. a leaf insert does not raise its page's LSN to the log's end (an evicted leaf goes
#      out before its rows' commit record is durable);
#  27. a page write-back does not wait for the log (the async campaign finds heap rows and
#      torn pages no durable record explains);
#  28. a session made `sync` in an async database does not wait for its commit;
#  29. a reservation refused at shutdown is not marked abandoned (the flusher waits for it
#      for ever, and so does shutdown).
# And (TRUNCATE inside a transaction; tests/truncate_crash.rs):
#  30. a truncation is written to the catalog as settled before its commit record exists
#      (a crash in between empties the table of a transaction that never committed);
#  31. a truncating commit is never marked logged (its checkpoint lets the commit record
#      go while the catalog still says "pending": recovery then undoes a durable commit).
# And (ALTER TABLE … ADD PRIMARY KEY on a table with rows; tests/rebuild_crash.rs):
#  32. a rebuild's rows are committed under another transaction id than its swap's (the
#      swap and the rows are no longer one commit: recovery keeps the old table after an
#      acknowledged rebuild).
# And (swaps racing commits; src/db/race_tests.rs, truncate.rs and apply_marker.rs tests):
#  33. a rebuild does not wait for the commits applying to the old table;
#  34. a truncating commit's keys are not locked in the new table;
#  35. a swap's new table is published before the swap is logged;
#  36. a mixed logged/unlogged commit clears its marker before the unlogged apply;
#  37. a swap's wait tells commits apart only by their marker's value (which repeats);
#  38. a panicking commit clears its marker without stopping the database.
# And (the log's block-aligned, direct flushes; tests/crash_campaign.rs):
#  39. a flush rewrites the start of its first block with zeros instead of the records
#      already there (durable commits overwritten).
# And (review of the apply marker, 2026-11-25; apply_marker.rs and race_tests.rs tests):
#  40. a commit that ends normally while its thread unwinds from another panic (a `Drop`
#      that commits) stops the database.
#  41. the direct write handle, opened by path at the first durable write, is not checked
#      to be the file the caller opened (src/storage/direct.rs test).
# And (TRUNCATE without a log, src/db/truncate.rs tests):
#  42. a truncating commit without a log never settles its swap (the TRUNCATE is lost).
# And (a commit group kept whole between flushes, src/log/group.rs; log tests):
#  43. a flush waits for its group without a bound (a group that never comes back holds
#      every later commit).
# And (a plain TCP session's blocking socket, hotpage-server's tests/blocking_reads.rs):
#  44. a shutdown does not wake the sessions blocked on their clients (the server never
#      ends);
#  45. the idle timeout is not set on a blocking socket (an idle session lives for ever);
#  46. a long answer's full write chunks are dropped instead of written.
# And (key heads in the slot directory, src/page.rs tests):
#  47. a key's head is stored little-endian (heads that differ then order keys wrongly);
#  48. `page::verify` does not check a slot's head against its record's key.
# And (the grouped apply, src/db/group_apply.rs and src/log/commit_wait.rs tests):
#  49. a batch applies its rows in posting order, not key order;
#  50. a flush wakes no delegated waiter (nobody applies its commits' rows);
#  51. a flush may wake a delegated waiter that registered after an earlier flush covered
#      it (not parked: nobody applies this flush's commits; the crash campaign hung).
# And (no spin on a busy leaf with more sessions than cores, src/access/btree.rs and
# src/db/mod.rs tests):
#  52. an insert spins on a busy leaf however many sessions there are;
#  53. a session is not counted (the count stays 0: every insert spins).
# (Later mutations are listed only beside their `unit` lines at the end of this file.)
# ONLY=name,name runs just those.
# Usage: scripts/mutations.sh [seeds]   (default 300; about 15 minutes on 2 cores)
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
seeds=${1:-300}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# copy NAME FILE OLD NEW: a copy of the repository with OLD replaced by NEW in FILE.
copy() {
  local name=$1 file=$2 old=$3 new=$4
  local dir="$work/$name"
  mkdir -p "$dir" && (cd "$repo" && git ls-files -z | xargs -0 -I{} cp --parents {} "$dir/")
  python3 - "$dir/$file" "$old" "$new" <<'PY' || return 1
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
assert old in text, "pattern not found"
open(path, "w").write(text.replace(old, new, 1))
PY
}

# campaign NAME FILE OLD NEW: the mutation must make the crash campaign fail.
campaign() {
  local name=$1
  wanted "$name" || return 0
  copy "$@" || { echo "$name: patch failed"; return; }
  local out
  out=$(cd "$work/$name" && HOTPAGE_CRASH_SEEDS=$seeds CARGO_TARGET_DIR="$work/target" \
        cargo test -q -p hotpage --test crash_campaign 2>&1)
  if echo "$out" | grep -q "test result: ok"; then
    echo "$name: NOT CAUGHT"
  elif ! echo "$out" | grep -q "seeds failed\|seed [0-9]*:\|panicked"; then
    echo "$name: no verdict (the mutated copy did not build or run): $(echo "$out" | grep -m1 -E '^error')"
  else
    echo "$name: caught: $(echo "$out" | grep -E 'seeds failed|seed [0-9]+:' | head -2 | tr '\n' ' ' | cut -c1-240)"
  fi
}

# wanted NAME: true if ONLY is unset or names NAME.
wanted() {
  [ -z "${ONLY:-}" ] || [[ ",$ONLY," == *",$1,"* ]]
}

# unit NAME FILE OLD NEW TEST...: the mutation must make `cargo test -p hotpage TEST...` fail
# (PACKAGE=hotpage-sql tests another package).
unit() {
  local name=$1 file=$2 old=$3 new=$4
  wanted "$name" || return 0
  shift 4
  copy "$name" "$file" "$old" "$new" || { echo "$name: patch failed"; return; }
  local out
  out=$(cd "$work/$name" && CARGO_TARGET_DIR="$work/target" cargo test -q -p "${PACKAGE:-hotpage}" "$@" 2>&1)
  if echo "$out" | grep -q "test result: FAILED"; then
    echo "$name: caught: $(echo "$out" | grep -E -m1 'panicked at|assertion' | cut -c1-200)"
  elif echo "$out" | grep -q "has overflowed its stack"; then
    echo "$name: caught: the test binary aborted on a stack overflow"
  elif echo "$out" | grep -q "test result: ok"; then
    echo "$name: NOT CAUGHT"
  else
    echo "$name: no verdict (the mutated copy did not build or run): $(echo "$out" | grep -m1 -E '^error')"
  fi
}

# power_loss NAME FILE OLD NEW: the mutation must make `crashtest --power-loss` fail, and
# (to show why the option exists) a plain crashtest passes it.
power_loss() {
  local name=$1
  wanted "$name" || return 0
  copy "$@" || { echo "$name: patch failed"; return; }
  (cd "$work/$name" && CARGO_TARGET_DIR="$work/target-cli" cargo build -q --release -p hotpage-cli) || {
    echo "$name: build failed"; return; }
  local bin="$work/target-cli/release/hotpage" plain loss
  plain=$("$bin" crashtest --trials 3 --seed 5 --json 2>/dev/null)
  loss=$("$bin" crashtest --power-loss --trials 3 --seed 5 --json 2>/dev/null)
  if echo "$loss" | grep -q '"rows_lost":0,'; then
    echo "$name: NOT CAUGHT by crashtest --power-loss: $loss"
  else
    echo "$name: caught by crashtest --power-loss ($(echo "$loss" | grep -o '"rows_lost":[0-9]*')); plain crashtest: $(echo "$plain" | grep -o '"rows_lost":[0-9]*')"
  fi
}

campaign ack-before-fsync crates/hotpage/src/db/mod.rs \
  'if self.durability == Durability::Sync {
                wal.wait_durable(end)?;
            }' 'let _ = end;'
campaign no-full-page-images crates/hotpage/src/access/logger.rs \
  'if image_lsn == 0 || image_lsn <= self.redo_lsn.load(Ordering::SeqCst) {' 'if false && image_lsn == 0 {'
campaign no-reapply crates/hotpage/src/db/open.rs \
  '    if redo.commits > 0 {' '    if false && redo.commits > 0 {'
campaign heap-reapply-without-page-walk crates/hotpage/src/db/routing.rs \
  '            heap.remove_present(keys, |key, page_id| {' '            keys.retain(|_| true);
            heap.remove_present(&mut HashSet::new(), |key, page_id| {'
campaign sync-only-data0 crates/hotpage/src/buffer/mod.rs \
  'for data in self.files.iter() {
            data.file.sync_data()' 'for data in self.files.iter().take(1) {
            data.file.sync_data()'
campaign memory-checkpoint-skips-file crates/hotpage/src/db/memory.rs \
  '        table.write_taken()?;' '        let _ = table;'
campaign no-log-fdatasync crates/hotpage/src/log/mod.rs \
  'for (index, file) in &touched {' 'for (index, file) in touched.iter().take(0) {'
campaign no-dir-fsync-after-new-segment crates/hotpage/src/log/mod.rs \
  '        // A new (or renamed) segment must survive a crash before records in it count.
        self.storage.sync_dir()?;' ''
campaign mid-log-damage-taken-for-the-end crates/hotpage/src/log/reader.rs \
  'self.durable_mark_past(end, &segments)? {' 'None::<(Lsn, Lsn)> {'
power_loss no-log-fdatasync-crashtest crates/hotpage/src/log/mod.rs \
  'for (index, file) in &touched {' 'for (index, file) in touched.iter().take(0) {'
unit combine-ignores-high-bound crates/hotpage/src/access/btree.rs \
  '|| high.is_some_and(|high| key < high)' '|| high.is_some()' \
  --lib a_combining_leader
unit combine-takes-any-key crates/hotpage/src/access/btree.rs \
  '    rightmost
        ||' '    true || rightmost
        ||' --test concurrent_model
unit stale-upgrade-enters-exclusive crates/hotpage/src/latch.rs \
  '        if self.version.load(Ordering::Relaxed) != version {
            return (None, 0);
        }' '        let (guard, wait_ns) = self.lock_exclusive(|| ());
        if self.version.load(Ordering::Relaxed) == version.wrapping_add(1) {
            return (Some(guard), wait_ns);
        }
        drop(guard);
        return (None, wait_ns);
        #[allow(unreachable_code)]' --lib latch::
unit no-log-preallocation crates/hotpage/src/log/mod.rs \
  'if open.allocated < needed {' 'if false && open.allocated < needed {' \
  --lib flushes_write_inside_zero_filled_space
unit abandon-guard-left-armed crates/hotpage/src/access/btree.rs \
  '        abandon.disarm();' '' --test concurrent_model
unit unique-key-logged-though-found crates/hotpage/src/db/mod.rs \
  'Some(_) => Err(duplicate()),' 'Some(_) => self.stage_or_commit(table, key, row),' \
  --test user_keys
unit key-lock-not-waited-for crates/hotpage/src/db/unique.rs \
  'Some(_) if !holding_others => shard.released.wait(&mut held),' \
  'Some(_) if !holding_others => return Ok(()),' --test user_keys
unit drop-forgotten-by-the-catalog crates/hotpage/src/catalog.rs \
  'if t.dropped { FLAG_DROPPED } else { 0 }' 'if false { FLAG_DROPPED } else { 0 }' \
  --test user_keys
PACKAGE=hotpage-sql unit multi-row-insert-not-atomic crates/hotpage-sql/src/insert.rs \
  'let own_transaction = self.rows.len() > 1 &&' 'let own_transaction = false &&' \
  --test sqllogictest
unit unlogged-not-reset-after-crash crates/hotpage/src/db/open.rs \
  '    catalog.rows_uncounted || catalog.unlogged_open' '    catalog.unlogged_open' \
  --test unlogged_tables
unit open-not-marked-for-unlogged crates/hotpage/src/db/open.rs \
  'catalog.tables.iter().any(|t| t.unlogged) ||' 'false ||' --test unlogged_tables
unit unlogged-rows-logged crates/hotpage/src/db/mod.rs \
  'if rows.iter().any(|(t, _, _)| t.unlogged) {' 'if false {' --test unlogged_tables
unit split-left-not-cut crates/hotpage/src/recovery.rs \
  '.take_while(|&i| page.compare_key(i, &split.separator).is_lt())' '.take_while(|_| true)' \
  --test logical_leaves
unit split-parent-not-redone crates/hotpage/src/recovery.rs \
  'if parent.page().lsn() >= record.end {' 'if true || parent.page().lsn() >= record.end {' \
  --test logical_leaves
unit checkpoint-redo-first crates/hotpage/src/db/mod.rs \
  '    let mut logical = wal.end();
    inner.appliers.lock().retain(|weak| match weak.upgrade() {
        Some(applying) => {
            logical = logical.min(applying.load(Ordering::SeqCst));
            true
        }
        None => false,
    });
    #[cfg(test)]
    if let Some(step) = inner.between_checkpoint_points.lock().take() {
        step();
    }
    let redo = wal.end();' '    let redo = wal.end();
    inner.redo_lsn.store(redo, Ordering::SeqCst);
    #[cfg(test)]
    if let Some(step) = inner.between_checkpoint_points.lock().take() {
        step();
    }
    let mut logical = redo;
    inner.appliers.lock().retain(|weak| match weak.upgrade() {
        Some(applying) => {
            logical = logical.min(applying.load(Ordering::SeqCst));
            true
        }
        None => false,
    });' --lib a_commit_applied_while
# Issue 11's WAL rule for unlogged leaf inserts, and the async campaign.
unit leaf-lsn-not-raised crates/hotpage/src/access/logger.rs \
  'if page.page().lsn() < end {' 'if false && page.page().lsn() < end {' \
  --test logical_leaves under_async
unit wal-rule-skipped-at-write-back crates/hotpage/src/buffer/mod.rs \
  'if page_lsn > log.durable() {' 'if false && page_lsn > log.durable() {' \
  --test async_crash_campaign
unit session-sync-not-waited crates/hotpage/src/db/mod.rs \
  'if self.durability == Durability::Sync {' 'if false && self.durability == Durability::Sync {' \
  --test async_crash_campaign
unit abandoned-reservation-not-marked crates/hotpage/src/log/mod.rs \
  'self.abandoned.fetch_min(start, Ordering::SeqCst);' 'let _ = start;' \
  --lib shutdown_returns_while
# Issue 13's TRUNCATE inside a transaction, atomic with its commit across power cuts.
unit truncate-settled-before-commit crates/hotpage/src/db/truncate.rs \
  '            if outcome != SwapOutcome::Waiting {' \
  '            if outcome != SwapOutcome::Waiting || outcome == SwapOutcome::Waiting {' \
  --test truncate_crash
unit truncate-commit-never-marked-logged crates/hotpage/src/db/mod.rs \
  '            truncate::mark_logged(&self.db, txn);' '            let _ = txn;' \
  --test truncate_crash
# Issue 13's ADD PRIMARY KEY on a table with rows: the swap and the rows are one commit.
unit rebuild-rows-not-under-swap-txn crates/hotpage/src/db/rebuild.rs \
  '.and_then(|()| self.commit_rebuilt(&new, rows, Some(txn)));' \
  '.and_then(|()| self.commit_rebuilt(&new, rows, None));' \
  --test rebuild_crash
# A rebuild that counts the old table's rows without waiting for a commit applying to it.
unit rebuild-skips-appliers crates/hotpage/src/db/rebuild.rs \
  '        super::wait_for_appliers(&self.db, Some(&self.applying));' '        let _ = &self.applying;' \
  --lib a_commit_into_the_old_table_racing_the_swap
# A truncating commit whose keys are not locked in the new table before it is published.
unit truncate-keys-unlocked crates/hotpage/src/db/truncate.rs \
  'let pairs = begin_truncates(&self.db, txn_id, truncated, None, &mut lock_keys)?;' \
  'let pairs = begin_truncates(&self.db, txn_id, truncated, None, &mut |_| Ok(()))?;' \
  --lib a_key_of_a_truncating_commit_is_taken
# A swap's new table published before the swap is logged (a row committed there could be lost).
unit swap-published-before-logged crates/hotpage/src/db/truncate.rs \
  '        old.dropped.store(true, Ordering::Release);
    }
    Ok(pairs)' \
  '        old.dropped.store(true, Ordering::Release);
    }
    for (_, new) in &pairs {
        new.published.store(true, Ordering::Release);
    }
    Ok(pairs)' \
  --lib race_tests
# A mixed logged/unlogged commit that clears its applying marker before the unlogged apply.
unit unlogged-apply-unmarked crates/hotpage/src/db/mod.rs \
  '            self.commit_rows_marked(&logged, truncating)?;' \
  '            self.commit_rows(&logged, truncating)?;' \
  --lib a_mixed_commits_unlogged_row_is_waited_for
# A swap's wait tells commits apart only by their marker's value (which repeats): a session
# committing in a tight loop keeps it waiting.
unit applier-told-by-value crates/hotpage/src/db/apply_marker.rs \
  '        while self.since() != NOT_APPLYING && self.finished.load(Ordering::SeqCst) == seen.finished' \
  '        while self.since() != NOT_APPLYING' \
  --lib a_waiter_is_released_by_the_next_commit_even_if_since_repeats
# A commit that panics clears its marker without stopping the database (a checkpoint could
# then pass a half-applied commit).
unit panicking-commit-unstopped crates/hotpage/src/db/apply_marker.rs \
  '        if std::thread::panicking() && !self.unwinding_at_begin {' \
  '        if false {' \
  --lib a_panicking_commit_clears_its_marker_and_stops_the_database
# A flush that rewrites its first block's already-durable start with zeros.
unit flush-tail-zeroed crates/hotpage/src/log/mod.rs \
  '            state.tail.extend_from_slice(&image[kept]);' \
  '            state.tail.resize(kept.len(), 0);' \
  --test crash_campaign
# A commit that ends normally while its thread unwinds from an unrelated panic stops the
# database (the guard took `panicking()` for its own panic).
unit unwinding-commit-stops crates/hotpage/src/db/apply_marker.rs \
  '        if std::thread::panicking() && !self.unwinding_at_begin {' \
  '        if std::thread::panicking() {' \
  --lib a_commit_ended_while_its_thread_unwinds_from_another_panic_does_not_stop
# The direct handle is not checked to be the caller's file: a name that moved on gets the
# bytes a flush reports durable.
unit direct-handle-unchecked crates/hotpage/src/storage/direct.rs \
  '                open_direct(&self.path).filter(|direct| identity_of(direct) == Some(identity))' \
  '                open_direct(&self.path)' \
  --lib a_durable_write_lands_in_the_opened_file_after_its_name_moved_on
# Without a log, a truncating commit that never marks its swap done (the old table comes back).
unit nolog-truncate-never-settled crates/hotpage/src/db/truncate.rs \
  '        if result.is_ok() && self.db.wal.is_none() {' \
  '        if false {' \
  --lib a_failed_commit_truncating_two_tables_leaves_both_whole
# A staged row charged only its key and bytes (the budget then bounds a fraction of the
# memory the rows take).
unit staged-overhead-uncounted crates/hotpage/src/db/staged.rs \
  '    key.as_bytes().len() + row.len() + STAGED_ROW_OVERHEAD_BYTES + supplied_bytes' \
  '    key.as_bytes().len() + row.len()' \
  --test txn_memory
# A transaction's charge never given back: after enough transactions, every insert in a
# transaction is refused.
unit staged-charge-kept crates/hotpage/src/db/staged.rs \
  '        let before = self.memory.bytes.fetch_sub(self.bytes, Ordering::AcqRel);' \
  '        let before = self.memory.bytes.load(Ordering::Acquire);' \
  --test txn_memory
# A flush waits for its commit group without a bound: a group that never comes back (its
# sessions stopped committing) holds every later commit.
unit gather-unbounded crates/hotpage/src/log/mod.rs \
  '        let Some(until) = state.group.gather_until() else {' \
  '        let Some(until) = state.group.gather_until().map(|u| u + Duration::from_secs(3600)) else {' \
  --lib a_group_that_never_comes_back_holds_no_commit_for_long
# A shutdown that does not wake the sessions blocked in `recv` on their clients.
PACKAGE=hotpage-server unit blocked-read-not-woken crates/hotpage-server/src/server.rs \
  '            shared.end_blocked_reads();' \
  '' \
  --test blocking_reads a_shutdown_ends_a_session_blocked_on_its_client
# A blocking socket without the idle timeout as its read timeout.
PACKAGE=hotpage-server unit idle-timeout-unset crates/hotpage-server/src/blocking.rs \
  '        stream.set_read_timeout(idle)?;' \
  '' \
  --test blocking_reads an_idle_session_is_ended_by_the_idle_timeout
# A long answer whose full write chunks are cleared without being written.
PACKAGE=hotpage-server unit write-chunk-dropped crates/hotpage-server/src/blocking.rs \
  '                send(&mut self.stream, &self.stop, &self.write_buf)?;
                self.write_buf.clear();' \
  '                self.write_buf.clear();' \
  --test blocking_reads an_answer_longer_than_a_write_chunk
# A key head stored little-endian: where heads differ they no longer order keys as memcmp.
unit key-head-little-endian crates/hotpage/src/page.rs \
  '    (be_prefix(&key[..key.len().min(4)]) >> 32) as u32' \
  '    ((be_prefix(&key[..key.len().min(4)]) >> 32) as u32).swap_bytes()' \
  --lib page::tests
# A slot's head not checked against its record's key when a page is read from disk.
unit verify-head-unchecked crates/hotpage/src/page.rs \
  '        if page.slot_head(i) != key_head(&key) {' \
  '        if false {' \
  --lib page::tests::a_slot_head_that_is_not_its_keys_is_rejected
# A grouped apply in posting order: rows of an ascending key reach the leaf out of order.
unit grouped-apply-unsorted crates/hotpage/src/db/group_apply.rs \
  '            .sort_unstable_by(|a, b| (a.0, a.1.as_bytes()).cmp(&(b.0, b.1.as_bytes())));' \
  '            .sort_unstable_by(|_, _| std::cmp::Ordering::Equal);' \
  --lib db::group_apply::tests::a_batch_applies_every_covered_request_in_key_order
# No delegated waiter woken: the one that should apply the flush's commits sleeps on.
unit delegate-never-woken crates/hotpage/src/log/commit_wait.rs \
  '                lsn > durable_before && !std::mem::replace(&mut delegate_woken, true)' \
  '                false' \
  --lib log::commit_wait::tests::only_the_first_delegated_waiter_of_a_flush_is_woken
# A late registration counted as waiting for this flush.
unit delegate-late-registration crates/hotpage/src/log/commit_wait.rs \
  '                lsn > durable_before && !std::mem::replace(&mut delegate_woken, true)' \
  '                !std::mem::replace(&mut delegate_woken, true)' \
  --lib log::commit_wait::tests::a_late_registration_is_not_the_delegated_waiter_woken
# A failed grouped apply that tells the batch's owners before it stops the database (the
# order before the review of 2026-11-28): an owner could end its commit, and clear its
# applying marker, while the database still ran, and a checkpoint pass the commit.
unit grouped-failure-before-stop crates/hotpage/src/db/group_apply.rs \
  '                (guard.stop)(error);
                FAILED
            }
        };
        inserted();
        finish_all(&mut batch.taken, state);' \
  '                FAILED
            }
        };
        inserted();
        finish_all(&mut batch.taken, state);
        if let Err(error) = &result {
            (guard.stop)(error);
        }' \
  --lib db::group_apply::tests::a_failed_or_panicking_batch_stops_then_fails_every_owner
# A give-up that takes back any registration of its thread: an older one, left by a late
# registration, goes instead, and the newer stays for a flush to pick as the one to wake.
unit deregister-any-entry crates/hotpage/src/log/commit_wait.rs \
  '.position(|(at, t, _)| *at == lsn && t.id() == me);' \
  '.position(|(_, t, _)| t.id() == me);' \
  --lib log::commit_wait::tests::a_give_up_takes_back_its_own_registration_not_an_older_one
# Two takers at once: a committer that finds the role held takes a batch anyway, and the
# two batches' rows interleave at the last leaf.
unit taker-role-ignored crates/hotpage/src/db/group_apply.rs \
  'if slot.state.load(Ordering::Acquire) != QUEUED || queued.taker {' \
  'if slot.state.load(Ordering::Acquire) != QUEUED {' \
  --lib db::group_apply::tests::a_request_left_to_the_taker_is_taken_after_its_batch
# A taker that does not look again after its batch: a request left to it is never taken,
# and its owner waits for ever.
unit left-request-never-taken crates/hotpage/src/db/group_apply.rs \
  'let Some(first) = queued.requests.iter().position(|q| q.end <= durable) else {' \
  'let Some(first) = None::<usize> else {' \
  --lib db::group_apply::tests::a_request_left_to_the_taker_is_taken_after_its_batch
# A line chart that ignores its log y axis: compare's p99 curves flatten under one
# engine's outlier.
PACKAGE=hotpage-report unit log-y-ignored crates/hotpage-report/src/charts.rs \
  'match (chart.x_log2, chart.y_log10) {' \
  'match (chart.x_log2, false) {' \
  --test render a_log_y_axis_keeps_small_values_apart_beside_an_outlier
# No room left for the legend above the lines: it covers the points in its corner.
PACKAGE=hotpage-report unit legend-room-none crates/hotpage-report/src/charts.rs \
  '(legend_px / plot_px).min(0.5)' \
  '0.0 * (legend_px / plot_px).min(0.5)' \
  --test render the_legend_covers_no_point
# The append fast path of a leaf's search misses an equal last key: a duplicate at the
# end of a page is taken for a new key.
unit search-fast-path-equal-missed crates/hotpage/src/page.rs \
  'CmpOrdering::Equal => return Ok(last),' \
  'CmpOrdering::Equal => return Err(hi),' \
  --lib page::tests::keys_whose_heads_tie_are_ordered_by_their_records
# The append fast path of an inner page sends a key equal to the last separator to the
# child before it.
unit separator-fast-path-equal-missed crates/hotpage/src/page.rs \
  'if self.compare_key_headed(last, key, head) != CmpOrdering::Greater {' \
  'if self.compare_key_headed(last, key, head) == CmpOrdering::Less {' \
  --lib page::tests::keys_whose_heads_tie_are_ordered_by_their_records
# An insert spins on a busy leaf however many sessions share the cores.
unit leaf-spin-always crates/hotpage/src/access/btree.rs \
  'if sessions > cores {' \
  'if sessions > cores.max(usize::MAX - 1) {' \
  --lib access::btree::tests::an_insert_spins_on_a_busy_leaf_only_while_each_session_has_a_core
# A session is not counted: the database's count stays 0, and every insert spins.
unit sessions-uncounted crates/hotpage/src/db/mod.rs \
  '_slot: self.inner.stats.session_slot(),' \
  '_slot: crate::stats::Stats::new().session_slot(),' \
  --lib db::tests::open_sessions_are_counted_with_or_without_a_log
# A split in place leaves the new record out of the right page (the row is acknowledged
# and lost).
unit in-place-split-drops-new-row crates/hotpage/src/access/btree.rs \
  'for i in at..=count {' \
  'for i in at..count {' \
  --lib access::btree::split_tests::a_split_in_place_makes_the_tree_a_full_split_makes
# Any last slots count as the page's lowest records: a split in place then frees bytes a
# kept record still uses.
unit in-place-split-any-records crates/hotpage/src/page.rs \
  '(moved_high <= kept_low).then_some(kept_low)' \
  'Some(kept_low.max(moved_high))' \
  --lib page::tests::dropping_the_lowest_records_frees_them_exactly
# A split in place keeps the left page's slots from the split point on (their rows are
# then on both pages).
unit in-place-split-keeps-slots crates/hotpage/src/page.rs \
  '        self.set_slot_count(n);
        self.set_free_end(area_start);' \
  '        self.set_free_end(area_start);' \
  --lib access::btree::split_tests::a_split_in_place_makes_the_tree_a_full_split_makes
# A split in place weighs the records after the new one by the wrong slots.
unit in-place-split-sizes-shifted crates/hotpage/src/access/btree.rs \
  'Ordering::Greater => self.page.slot(i - 1).1,' \
  'Ordering::Greater => self.page.slot(i.min(self.page.slot_count() - 1)).1,' \
  --lib access::btree::split_tests::slot_sizes_are_the_copied_records_sizes
# A checkpoint keeps every obsolete log segment for reuse, however many a burst left.
unit free-segments-unbounded crates/hotpage/src/log/mod.rs \
  '            take_surplus(&mut segments.free, keep)' \
  '            take_surplus(&mut segments.free, usize::MAX.max(keep))' \
  --lib log::tests::surplus_free_segments_are_removed_the_newest_kept
# A scan of a whole table that meets fewer rows than the table holds returns them as if
# that were all (a stale page's lost rows, silently).
unit scan-count-unchecked crates/hotpage/src/db/routing.rs \
  '        if from.is_none() && !stopped && met < counted {' \
  '        if from.is_none() && !stopped && met < counted && counted == 0 {' \
  --test stale_pages
# An open ignores log.durable: a log whose last segment lost its flush marks reads as a
# torn tail again.
unit durable-mark-ignored crates/hotpage/src/db/open.rs \
  '        reader.check_reaches_durable_mark(end.end, durable)?;' \
  '        let _ = durable;' \
  --test log_damage
# The flushes no longer write the durable mark (only the checkpointer's 100 ms tick does).
unit durable-mark-flush-silent crates/hotpage/src/log/mod.rs \
  '                self.note_durable_mark(state, false);' \
  '' \
  --test log_damage the_durable_mark_keeps_up_with_a_busy_log
# The flusher goes to sleep without bringing the durable mark up to the log's end.
unit durable-mark-idle-silent crates/hotpage/src/log/mod.rs \
  '        if slept_idle && idle() {' \
  '        if slept_idle && idle() && false {' \
  --test log_damage the_durable_mark_keeps_up_with_a_busy_log
# A missing middle segment is placed at its first byte, though the record before it runs
# on into it: salvage then fails ("the files changed").
unit missing-segment-at-its-boundary crates/hotpage/src/log/reader.rs \
  '        let (lsn, reason) = if readable_end == missing_from {' \
  '        let (lsn, reason) = if readable_end <= missing_from {' \
  --test log_damage salvage_after_a_missing_middle_segment
# Salvage counts only the records that still validate: a lost segment reads as 0 rows.
unit salvage-unreadable-uncounted crates/hotpage/src/db/salvage.rs \
  '    discarded.unreadable_bytes = written_end - damage.lsn - readable_bytes;' \
  '    discarded.unreadable_bytes = 0 * (written_end - damage.lsn - readable_bytes);' \
  --test log_damage salvage_after_a_missing_middle_segment
# After a crash, a recount below the last checkpoint's count becomes the count (a page
# already stale at the crash: its rows silently gone).
unit recount-below-checkpoint-taken crates/hotpage/src/db/open.rs \
  '            let rows = if found < counted && !recount.lossy && !table.is_dropped() {' \
  '            let rows = if found < counted && !recount.lossy && !table.is_dropped() && false {' \
  --test stale_pages
# A checkpoint counts rows after its points (as it did): an async commit it counted can be
# lost by a crash, and recovery takes that for missing rows (a race: caught in 2 of 3 runs
# of 10 seeds when measured; the test runs 20).
unit checkpoint-counts-late crates/hotpage/src/db/mod.rs \
  '        .map_or(0, |(_, rows)| *rows);' \
  '        .map_or(0, |(_, rows)| *rows)
        .max(t.rows.load(Ordering::Relaxed));' \
  --test stale_pages an_async_crash_is_never_taken_for_missing_rows
# A segment whose records validate as another's is not reported (a swap reads as damage
# only, and salvage discards what the swapped files hold).
unit misplaced-never-named crates/hotpage/src/log/reader.rs \
  '                    return Ok((home != index).then_some(home));' \
  '                    return Ok((home != index && false).then_some(home));' \
  --test log_damage swapped_segments
# An interrupted creation that made log.durable takes it for a file hotpage did not make,
# and the creation can never be completed.
unit creation-forgets-durable-mark crates/hotpage/src/db/open.rs \
  '            || name == crate::log::durable_mark::DURABLE_MARK_FILE' \
  '            || name == "log.durable.not"' \
  --test atomic_creation
# Files that do not fit a catalog that verified are "not a hotpage database" again (exit 3).
PACKAGE=hotpage-cli unit damaged-database-not-a-database crates/hotpage/src/db/open.rs \
  '        Error::NotADatabase { path, reason } if !creating => {' \
  '        Error::NotADatabase { path, reason } if !creating && false => {' \
  --test durability_cli damage_to_any_file_is_exit_7
# The depth check is gone: a deep expression overflows the stack (an abort that took a
# whole server down) instead of being 54001.
PACKAGE=hotpage-sql unit expression-depth-unchecked crates/hotpage-sql/src/session.rs \
  '            if self.0 > EXPR_DEPTH_MAX {' \
  '            if self.0 > EXPR_DEPTH_MAX * 1000 {' \
  --test deep_expressions
# Evaluation no longer grows its stack at a deep node: its frames are the largest, and
# 1,000 levels of them overflow a 2 MiB thread.
PACKAGE=hotpage-sql unit eval-stack-not-grown crates/hotpage-sql/src/expr.rs \
  '                stacker::maybe_grow(DEEP_STACK_BYTES, DEEP_STACK_BYTES, || inner.eval(row, ctx))?' \
  '                inner.eval(row, ctx)?' \
  --test deep_expressions
# A read-only transaction's writes are let through (they were: BEGIN READ ONLY wrote).
PACKAGE=hotpage-sql unit read-only-ignored crates/hotpage-sql/src/session/access_mode.rs \
  '        if read_only {' \
  '        if read_only && false {' \
  --test sqllogictest
# DROP of several names checks none first (it dropped the names before a missing one).
PACKAGE=hotpage-sql unit drop-checks-nothing-first crates/hotpage-sql/src/session.rs \
  '            if !self.droppable(object_type, name)? && !if_exists {' \
  '            if false && !self.droppable(object_type, name)? && !if_exists {' \
  --test sqllogictest
# A long IN list's hash lookup forgets its NULL (x NOT IN (…, NULL) would be true, not NULL).
PACKAGE=hotpage-sql unit in-lookup-forgets-null crates/hotpage-sql/src/expr.rs \
  '                    lookup.has_null = true;' \
  '                    lookup.has_null = false;' \
  --test sqllogictest
# A scan no longer looks for a cancel or its timeout: a long SELECT ran to its end.
PACKAGE=hotpage-sql unit scan-never-interrupted crates/hotpage-sql/src/select.rs \
  '            if let Err(e) = scan_ctx.state.clock.poll() {' \
  '            if let Err(e) = Ok::<(), crate::error::SqlError>(()) {' \
  --test interrupts
# A T-SQL WHILE loop no longer looks: `WHILE 1 = 1` ran until its iteration limit.
PACKAGE=hotpage-sql unit while-never-interrupted crates/hotpage-sql/src/tsql/mod.rs \
  '                    self.sql.poll_interrupt()?;' \
  '' \
  --test interrupts
# TRY … CATCH swallows a timeout: a loop around it could never be stopped.
PACKAGE=hotpage-sql unit catch-swallows-cancel crates/hotpage-sql/src/tsql/procedures.rs \
  '        if error.sqlstate == crate::error::sqlstate::QUERY_CANCELED {' \
  '        if error.sqlstate == "never" {' \
  --test interrupts
# A wait for another transaction's key ignores the session's limits: a statement waiting
# for a key an idle transaction held could not be cancelled or timed out.
PACKAGE=hotpage unit key-wait-ignores-limits crates/hotpage/src/db/unique.rs \
  '                    if let Some(stop) = limits.stop(started, now) {' \
  '                    if let Some(stop) = None::<WaitStop> {' \
  --lib a_wait_ends_at
# COPY's text format splits at an escaped delimiter again (`\;` with DELIMITER ';').
PACKAGE=hotpage-sql unit copy-splits-escaped-delimiter crates/hotpage-sql/src/session/copy.rs \
  '            b'"'"'\\'"'"' => i += 2,' \
  '            b'"'"'\\'"'"' => i += 1,' \
  --lib copy
# COPY's text format ends a record at a backslash-newline again.
PACKAGE=hotpage-sql unit copy-cuts-at-escaped-newline crates/hotpage-sql/src/session/copy.rs \
  '                b == b'"'"'\\'"'"'' \
  '                false' \
  --lib copy
# round() of a numeric rounds a half down (PostgreSQL rounds it away from zero).
PACKAGE=hotpage-sql unit numeric-round-half-down crates/hotpage-sql/src/expr/builtin.rs \
  '        F::Round if remainder.unsigned_abs() * 2 >= unit.unsigned_abs() => scaled.signum(),' \
  '        F::Round if remainder.unsigned_abs() * 2 > unit.unsigned_abs() => scaled.signum(),' \
  --test sqllogictest
# Joins (the general engine reading user tables, catalog/exec.rs):
# a join loop no longer looks for a cancel or a timeout where a pair fails its filter.
PACKAGE=hotpage-sql unit join-never-interrupted crates/hotpage-sql/src/catalog/exec.rs \
  '                } else {
                    self.reader.clock.poll()?;
                }' \
  '                }' \
  --test joins a_long_join
# What a query holds in memory is no longer bounded.
PACKAGE=hotpage-sql unit join-memory-unbounded crates/hotpage-sql/src/catalog/exec.rs \
  '        if self.values_held > VALUES_HELD_MAX {' \
  '        if false {' \
  --test joins a_join_past
# A prepared join is never stale: it reads a dropped table.
PACKAGE=hotpage-sql unit join-plan-never-stale crates/hotpage-sql/src/catalog/mod.rs \
  '        self.tables.iter().any(|t| t.handle.is_dropped())' \
  '        self.tables.iter().any(|_| false)' \
  --test joins a_prepared_join
# A table read leaves out the open transaction's own rows (select.rs shares the read).
PACKAGE=hotpage-sql unit read-skips-own-rows crates/hotpage-sql/src/table.rs \
  '        let mut pending = engine.pending_rows(&self.handle);' \
  '        let mut pending = engine.pending_rows(&self.handle); pending.clear();' \
  --test sqllogictest
# A correlated subquery's hash is kept across outer rows even when its key reads the
# outer row (each outer row then probes the first one's hash).
PACKAGE=hotpage-sql unit probe-kept-across-outer-rows crates/hotpage-sql/src/catalog/exec.rs \
  '    visit_columns(e, &mut |l, _| only &= l == level);' \
  '    visit_columns(e, &mut |l, _| only &= l == level || true);' \
  --test joins joins_match
# An IN subquery's hashed set forgets its NULLs (NOT IN then keeps rows PostgreSQL leaves
# out).
PACKAGE=hotpage-sql unit in-set-forgets-nulls crates/hotpage-sql/src/catalog/exec.rs \
  '                _ => set.has_null = true,' \
  '                _ => {}' \
  --test joins joins_match
# JOIN … USING: the other side's copy of the column stays visible to an unqualified name
# (then ambiguous, 42702, where PostgreSQL sees one merged column).
PACKAGE=hotpage-sql unit using-column-not-merged crates/hotpage-sql/src/catalog/compile.rs \
  '                    c.name == *name && qualifier.map_or(!c.hidden, |q| c.qualifier == q)' \
  '                    c.name == *name && qualifier.is_none_or(|q| c.qualifier == q)' \
  --test sqllogictest
# A correlated subquery's rows stay counted toward the bound after each outer row (a
# query holding a few thousand values at once fails with 54000).
PACKAGE=hotpage-sql unit correlated-rows-kept-counted crates/hotpage-sql/src/catalog/exec.rs \
  '            self.values_held = held_before + (self.table_values - tables_before);
        } else {' \
  '        } else {' \
  --test joins a_correlated_subquery
# EXCEPT ALL drops every copy of a row the right side has (not one per copy there).
PACKAGE=hotpage-sql unit except-all-ignores-counts crates/hotpage-sql/src/catalog/exec.rs \
  '                            if all {
                                *n -= 1;
                            }' \
  '' \
  --test sqllogictest
# char(n) is compared with its padding (a join of char(3) and char(5) finds nothing).
PACKAGE=hotpage-sql unit char-compared-padded crates/hotpage-sql/src/catalog/compile.rs \
  '        CType::Sql(SqlType::Char(_)) => e.cast_to(TEXT),
        _ => e,' \
  '        _ => e,' \
  --test sqllogictest
# Numerics of other scales hash apart (UNION keeps 12.50 and 12.5000).
PACKAGE=hotpage-sql unit numeric-hash-by-scale crates/hotpage-sql/src/catalog/exec.rs \
  '            while scale > 0 && scaled % 10 == 0 {' \
  '            while false && scale > 0 && scaled % 10 == 0 {' \
  --test sqllogictest
# A join cannot call the SQL layer's session functions (abs, nextval, DATEDIFF: 42883).
PACKAGE=hotpage-sql unit join-without-session-functions crates/hotpage-sql/src/catalog/functions.rs \
  '                other => Ok(ScalarFunc::resolve_sql(other, args)),' \
  '                _ => Err(SqlError::new(sqlstate::UNDEFINED_FUNCTION, "gone")),' \
  --test sqllogictest
# WITH RECURSIVE … UNION keeps rows it found before (a walk of a cyclic graph never ends:
# the recursion runs into the memory bound).
PACKAGE=hotpage-sql unit recursive-union-keeps-duplicates crates/hotpage-sql/src/catalog/exec.rs \
  '            if !all {
                made.retain' \
  '            if false {
                made.retain' \
  --test joins recursive_queries
# A reference to a WITH query does not carry the query's outer reads (a subquery that
# reads a correlated WITH query is run once, for the first outer row only).
PACKAGE=hotpage-sql unit cte-reference-not-correlated crates/hotpage-sql/src/catalog/compile.rs \
  '        self.read_log.extend_from_slice(reads);' \
  '        let _ = reads;' \
  --test sqllogictest
# Two FROM items with one name are taken (PostgreSQL's 42712 is not raised).
PACKAGE=hotpage-sql unit duplicate-table-name-taken crates/hotpage-sql/src/catalog/compile.rs \
  '            if !qualifier.is_empty() && level.cols' \
  '            if false && level.cols' \
  --test sqllogictest
# A number compared with a string is let through to run time (no 42883 at planning).
PACKAGE=hotpage-sql unit compare-types-unchecked crates/hotpage-sql/src/catalog/compile.rs \
  '            check_comparable(a.ty, &op, b.ty)?;' \
  '' \
  --test sqllogictest
# Under DISTINCT, an ORDER BY expression missing from the select list is taken (as the
# first output column) instead of refused with 42P10.
PACKAGE=hotpage-sql unit distinct-order-by-unlisted crates/hotpage-sql/src/catalog/plan.rs \
  'let listed = items.iter().position(|item| format!("{item:?}") == wanted);' \
  'let listed = items.iter().position(|item| format!("{item:?}") == wanted).or(Some(0));' \
  --test sqllogictest
# rank() numbers rows like row_number() (peers no longer share a rank).
PACKAGE=hotpage-sql unit window-rank-ignores-peers crates/hotpage-sql/src/catalog/window.rs \
  'WindowFunc::Rank => Datum::Int(peer_start as i64 + 1),' \
  'WindowFunc::Rank => Datum::Int(at as i64 + 1),' \
  --test joins window_functions
# A window's partitions run together (PARTITION BY ignored after the sort).
PACKAGE=hotpage-sql unit window-partition-ignored crates/hotpage-sql/src/catalog/window.rs \
  '.take_while(|&&i| keys_cmp(&inputs[i].partition, first, None) == Ordering::Equal)' \
  '.take_while(|_| true)' \
  --test sqllogictest
# ROWS frames: CURRENT ROW as a start means the row's first peer (RANGE's meaning).
PACKAGE=hotpage-sql unit window-rows-current-start-at-peers crates/hotpage-sql/src/catalog/window.rs \
  'FrameBound::CurrentRow if self.rows => at,' \
  'FrameBound::CurrentRow if false => at,' \
  --test sqllogictest
# ROWS frames: CURRENT ROW as an end means the row's last peer (RANGE's meaning).
PACKAGE=hotpage-sql unit window-rows-current-end-at-peers crates/hotpage-sql/src/catalog/window.rs \
  'FrameBound::CurrentRow if self.rows => at + 1,' \
  'FrameBound::CurrentRow if false => at + 1,' \
  --test sqllogictest
# A frame ending n PRECEDING ends a row early (n + 1 rows back).
PACKAGE=hotpage-sql unit window-preceding-end-off-by-one crates/hotpage-sql/src/catalog/window.rs \
  'FrameBound::Preceding(k) => (at + 1).saturating_sub(step(k)),' \
  'FrameBound::Preceding(k) => at.saturating_sub(step(k)),' \
  --test sqllogictest
# A frame ending n FOLLOWING leaves out its last row.
PACKAGE=hotpage-sql unit window-following-end-off-by-one crates/hotpage-sql/src/catalog/window.rs \
  'FrameBound::Following(k) => at.saturating_add(step(k)).saturating_add(1),' \
  'FrameBound::Following(k) => at.saturating_add(step(k)),' \
  --test sqllogictest
# A running frame's state adds its rows again for every row.
PACKAGE=hotpage-sql unit window-running-state-readds crates/hotpage-sql/src/catalog/window.rs \
  'added = added.max(end);' \
  'added = added.max(0);' \
  --test sqllogictest
# Every row takes the first frame's aggregate (the reuse ignores the bounds).
PACKAGE=hotpage-sql unit window-frame-value-reused crates/hotpage-sql/src/catalog/window.rs \
  'Some((bounds, value)) if *bounds == (start, end) => value.clone(),' \
  'Some((_, value)) => value.clone(),' \
  --test sqllogictest
# lag looks ahead like lead.
PACKAGE=hotpage-sql unit window-lag-looks-ahead crates/hotpage-sql/src/catalog/window.rs \
  '(at as i64).checked_sub(offset)' \
  '(at as i64).checked_add(offset)' \
  --test sqllogictest
# lag/lead's default is ignored past the partition's edge.
PACKAGE=hotpage-sql unit window-shift-default-ignored crates/hotpage-sql/src/catalog/window.rs \
  '_ => self.arg(at, 2),' \
  '_ => Datum::Null,' \
  --test sqllogictest
# A NULL lag/lead offset counts as 1 instead of giving NULL.
PACKAGE=hotpage-sql unit window-shift-null-offset-is-one crates/hotpage-sql/src/catalog/window.rs \
  '_ => return Datum::Null,' \
  '_ => 1,' \
  --test sqllogictest
# ntile spreads the remainder one bucket short (7 rows in 3 buckets of 2: a row without a
# bucket).
PACKAGE=hotpage-sql unit window-ntile-remainder-lost crates/hotpage-sql/src/catalog/window.rs \
  'let rows = size + usize::from(bucket <= larger);' \
  'let rows = size + usize::from(bucket < larger);' \
  --test sqllogictest
# percent_rank by row position (peers no longer share it).
PACKAGE=hotpage-sql unit window-percent-rank-by-position crates/hotpage-sql/src/catalog/window.rs \
  'Datum::Float(peer_start as f64 / (len - 1) as f64)' \
  'Datum::Float(at as f64 / (len - 1) as f64)' \
  --test sqllogictest
# cume_dist by row position (peers no longer share it).
PACKAGE=hotpage-sql unit window-cume-dist-by-position crates/hotpage-sql/src/catalog/window.rs \
  'WindowFunc::CumeDist => Datum::Float(peer_end as f64 / len as f64),' \
  'WindowFunc::CumeDist => Datum::Float((at + 1) as f64 / len as f64),' \
  --test sqllogictest
# last_value is the current row's value.
PACKAGE=hotpage-sql unit window-last-value-is-current crates/hotpage-sql/src/catalog/window.rs \
  'WindowFunc::LastValue => self.arg(end - 1, 0),' \
  'WindowFunc::LastValue => self.arg(at, 0),' \
  --test sqllogictest
# nth_value takes the (n+1)th row.
PACKAGE=hotpage-sql unit window-nth-value-off-by-one crates/hotpage-sql/src/catalog/window.rs \
  '.checked_add(n as usize - 1)' \
  '.checked_add(n as usize)' \
  --test sqllogictest
# OVER (w …) drops the named window's PARTITION BY.
PACKAGE=hotpage-sql unit window-copy-drops-partition crates/hotpage-sql/src/catalog/window.rs \
  'partition_by: base.partition_by.clone(),' \
  'partition_by: spec.partition_by.clone(),' \
  --test sqllogictest
# ROWS BETWEEN CURRENT ROW AND 1 PRECEDING is accepted (an empty frame) instead of 42P20.
PACKAGE=hotpage-sql unit window-frame-current-to-preceding-allowed crates/hotpage-sql/src/catalog/window.rs \
  '(B::CurrentRow, B::Preceding(_), _) => Err(misplaced(' \
  '(B::CurrentRow, B::Preceding(_), _) if false => Err(misplaced(' \
  --test sqllogictest
# A negative frame offset wraps to a huge count instead of 22013.
PACKAGE=hotpage-sql unit window-negative-offset-allowed crates/hotpage-sql/src/catalog/window.rs \
  'Datum::Int(n) if n >= 0 => Ok(n as u64),' \
  'Datum::Int(n) => Ok(n as u64),' \
  --test sqllogictest
# OVER (w ORDER BY …) replaces the named window's ORDER BY instead of 42P20.
PACKAGE=hotpage-sql unit window-copy-overrides-order crates/hotpage-sql/src/catalog/window.rs \
  'if !spec.order_by.is_empty() && !base.order_by.is_empty() {' \
  'if false {' \
  --test sqllogictest
# WINDOW w AS (), w AS () is accepted (the first wins) instead of 42P20.
PACKAGE=hotpage-sql unit window-name-defined-twice crates/hotpage-sql/src/catalog/window.rs \
  'if defined.iter().any(|(k, _)| *k == key) {' \
  'if false {' \
  --test sqllogictest
# A window's frames never look for a cancel or a timeout (a sliding frame over 40,000 rows
# runs its 800 million additions to the end).
PACKAGE=hotpage-sql unit window-never-polls crates/hotpage-sql/src/catalog/exec.rs \
  'window_values(spec, &frame, &inputs, &mut || clock.poll())?' \
  'window_values(spec, &frame, &inputs, &mut || Ok(()))?' \
  --test interrupts window
# VALUES rows of different lengths are not refused (42601).
PACKAGE=hotpage-sql unit values-row-length-unchecked crates/hotpage-sql/src/catalog/plan.rs \
  'if values.rows.iter().any(|row| row.content.len() != width) {' \
  'if false {' \
  --test sqllogictest
# A VALUES column takes its first row's type, not the rows' common type.
PACKAGE=hotpage-sql unit values-first-row-type crates/hotpage-sql/src/catalog/plan.rs \
  'ty = set_column_type("VALUES", ty, row[i].ty)?;' \
  'ty = if ty == CType::Unknown { row[i].ty } else { ty };' \
  --test sqllogictest
# VALUES rows keep their own types (an untyped literal stays text in an integer column).
PACKAGE=hotpage-sql unit values-rows-not-cast crates/hotpage-sql/src/catalog/plan.rs \
  '.map(|(e, (_, ty))| super::functions::cast_to_common(e, *ty))' \
  '.map(|(e, _)| e)' \
  --test sqllogictest
# A set operation lets a number meet a boolean (the first side's type wins).
PACKAGE=hotpage-sql unit set-kinds-meet crates/hotpage-sql/src/catalog/plan.rs \
  '_ if matches!((kind(l), kind(r)), (Some(a), Some(b)) if a != b) => {' \
  '_ if false => {' \
  --test sqllogictest
# More column names than columns in a FROM alias are dropped without a word.
PACKAGE=hotpage-sql unit alias-extra-names-dropped crates/hotpage-sql/src/catalog/compile.rs \
  'if renamed.len() > columns.len() {' \
  'if false {' \
  --test sqllogictest
# A one-table query reads a table alias's column names as the table's own (they were dropped).
PACKAGE=hotpage-sql unit one-table-alias-columns-ignored crates/hotpage-sql/src/select.rs \
  '} if !alias.columns.is_empty() => {' \
  '} if false => {' \
  --test sqllogictest
# The day of the week is a day off.
PACKAGE=hotpage-sql unit date-iso-dow-shifted crates/hotpage-sql/src/value/date_fields.rs \
  '(self.days + 3).rem_euclid(7) + 1' \
  '(self.days + 4).rem_euclid(7) + 1' \
  --test sqllogictest
# ISO weeks are placed by their Wednesday, not their Thursday.
PACKAGE=hotpage-sql unit date-iso-week-from-wednesday crates/hotpage-sql/src/value/date_fields.rs \
  'let thursday = self.days - self.iso_dow() + 4;' \
  'let thursday = self.days - self.iso_dow() + 3;' \
  --test sqllogictest
# extract(second …) has 3 decimals, not 6 (a value a thousand times too large).
PACKAGE=hotpage-sql unit date-second-scale crates/hotpage-sql/src/value/date_fields.rs \
  'F::Second => (in_minute_us, 6),' \
  'F::Second => (in_minute_us, 3),' \
  --test sqllogictest
# A century starts at year 0, not year 1 (2000 is in the 21st).
PACKAGE=hotpage-sql unit date-century-from-zero crates/hotpage-sql/src/value/date_fields.rs \
  'F::Century => whole((c.year + 99).div_euclid(100)),' \
  'F::Century => whole(c.year.div_euclid(100) + 1),' \
  --test sqllogictest
# date_trunc('week', …) goes back to Sunday, not Monday.
PACKAGE=hotpage-sql unit date-trunc-week-sunday crates/hotpage-sql/src/value/date_fields.rs \
  'F::Week => return Ok((c.days - c.iso_dow() + 1 - PG_EPOCH_DAYS) * USECS_PER_DAY),' \
  'F::Week => return Ok((c.days - c.iso_dow() - PG_EPOCH_DAYS) * USECS_PER_DAY),' \
  --test sqllogictest
# date_part of an infinite timestamp's month is 0, not NULL.
PACKAGE=hotpage-sql unit date-part-infinite-month-zero crates/hotpage-sql/src/value/date_fields.rs \
  'INFINITY | NEG_INFINITY => None,' \
  'INFINITY | NEG_INFINITY => Some(0.0),' \
  --test sqllogictest
# extract(year …) of an infinite timestamp is NULL, where it is Infinity (refused, 0A000).
PACKAGE=hotpage-sql unit extract-infinite-year-null crates/hotpage-sql/src/value/date_fields.rs \
  '        if field.grows_with_time() {' \
  '        if false {' \
  --test sqllogictest
# The unit spelling mon is not recognized.
PACKAGE=hotpage-sql unit date-unit-mon-unknown crates/hotpage-sql/src/value/date_fields.rs \
  '"month" | "months" | "mon" | "mons" => F::Month,' \
  '"month" | "months" => F::Month,' \
  --test sqllogictest
# EXTRACT's column is ?column?, not extract.
PACKAGE=hotpage-sql unit extract-column-unnamed crates/hotpage-sql/src/catalog/plan.rs \
  'Expr::Extract { .. } => ("extract".into(), 2),' \
  'Expr::Extract { .. } => (String::new(), 0),' \
  --test catalog_queries unnamed
# POSITION(x IN s) over a join searches x for s.
PACKAGE=hotpage-sql unit position-arguments-swapped crates/hotpage-sql/src/catalog/compile.rs \
  'vec![self.expr(r#in)?, self.expr(expr)?],' \
  'vec![self.expr(expr)?, self.expr(r#in)?],' \
  --test sqllogictest
# A SELECT's untyped literals are text before a set operation sees them (SELECT 1 UNION SELECT NULL is 42804).
PACKAGE=hotpage-sql unit set-literals-resolved-first crates/hotpage-sql/src/catalog/plan.rs \
  'Body::Select(select) if select.items.len() == side.columns.len() => {' \
  'Body::Select(select) if false => {' \
  --test sqllogictest
# timestamp meeting timestamptz is timestamp (the left side's type).
PACKAGE=hotpage-sql unit set-timestamp-beats-timestamptz crates/hotpage-sql/src/catalog/plan.rs \
  '(CType::Sql(SqlType::Timestamp), CType::Sql(SqlType::TimestampTz))' \
  '(CType::Sql(SqlType::Bytea), CType::Sql(SqlType::TimestampTz))' \
  --test sqllogictest
# lag(x) without OVER is 42883 (function does not exist), not 42809.
PACKAGE=hotpage-sql unit window-function-without-over crates/hotpage-sql/src/catalog/window.rs \
  '    if window_only {' \
  '    if false {' \
  --test sqllogictest
# lag's default meets any value: a timestamp default of a text value is cast to text.
PACKAGE=hotpage-sql unit lag-default-any-kind crates/hotpage-sql/src/catalog/window.rs \
  'super::plan::set_column_type("lag", value, default.ty).map_err(|_| no_such(args))?' \
  'super::plan::set_column_type("lag", value, value).map_err(|_| no_such(args))?' \
  --test sqllogictest
# A quoted frame offset (ROWS 2 PRECEDING written with quotes) stays an interval (0A000).
PACKAGE=hotpage-sql unit frame-quoted-offset-refused crates/hotpage-sql/src/catalog/window.rs \
  '                interval.value.as_ref()' \
  '                e' \
  --test sqllogictest
# A subquery's own columns in a frame offset count as the query's (42P10).
PACKAGE=hotpage-sql unit frame-subquery-offset-refused crates/hotpage-sql/src/catalog/window.rs \
  'reads_columns |= matches!(node.kind, ExprKind::Column { level: l, .. } if l <= level)' \
  'reads_columns |= matches!(node.kind, ExprKind::Column { .. })' \
  --test sqllogictest
# A text value weighs nothing in the query's memory bound (a recursion carrying a long
# string runs far past the bound; hotpage.query_memory, src/limits.rs).
PACKAGE=hotpage-sql unit text-bytes-uncounted crates/hotpage-sql/src/catalog/types.rs \
  'Datum::Text(s) => s.len(),' \
  'Datum::Text(_) => 0,' \
  --test memory_bound
# The one-table path does not count the rows it reads and holds for a sort.
PACKAGE=hotpage-sql unit select-rows-read-uncounted crates/hotpage-sql/src/select.rs \
  '                    memory.charge(limits::row_bytes(&row))?;' \
  '' \
  --test memory_bound
# `||` in the general engine builds a text past 1 GB.
PACKAGE=hotpage-sql unit concat-past-one-gigabyte crates/hotpage-sql/src/catalog/exec.rs \
  '                        limits::check_text_len(l.len().saturating_add(r.len()))?;' \
  '' \
  --test memory_bound
# string_agg builds a text past 1 GB.
PACKAGE=hotpage-sql unit string-agg-past-one-gigabyte crates/hotpage-sql/src/catalog/exec.rs \
  '    if len > limits::TEXT_BYTES_MAX {' \
  '    if false {' \
  --test memory_bound
# A string literal compared with a numeric column takes the column's precision and scale
# (PostgreSQL: plain numeric; `n = '12345'` on numeric(3,0) is false, not 22003).
PACKAGE=hotpage-sql unit numeric-literal-takes-typmod crates/hotpage-sql/src/expr.rs \
  '        (Scalar::Const(Value::Text(text), None), Some(ty)) if ty.is_numeric() => {' \
  '        (Scalar::Const(Value::Text(text), None), Some(ty)) if false && ty.is_numeric() => {' \
  --test sqllogictest
# An uncorrelated subquery's rows, kept for the execution, stop counting when the SELECT
# around them ends.
PACKAGE=hotpage-sql unit subquery-rows-not-kept crates/hotpage-sql/src/catalog/exec.rs \
  '            self.table_bytes += rows_bytes(&rows);' \
  '' \
  --test memory_bound
# count(DISTINCT …) counts every row it is given, not the values it keeps.
PACKAGE=hotpage-sql unit distinct-counts-every-row crates/hotpage-sql/src/catalog/exec.rs \
  'let key_bytes = std::mem::size_of::<String>() + key.len();' \
  'let key_bytes = std::mem::size_of::<String>() + key.len(); kept = key_bytes;' \
  --test memory_bound
# A table's own WHERE conditions are no longer tested as it is read (the general engine
# keeps every row: a selective join of a wide table no longer fits its bound).
PACKAGE=hotpage-sql unit table-conditions-not-pushed crates/hotpage-sql/src/catalog/exec.rs \
  '                .partition(|f| pushable(f, level, width, end)),' \
  '                .partition(|_| false),' \
  --test memory_bound
# A condition that reads an outer row (or another table) is tested at the table read.
PACKAGE=hotpage-sql unit pushed-condition-reads-outer-row crates/hotpage-sql/src/catalog/exec.rs \
  '            ExprKind::Column { level: l, index } => *l == level && (lo..hi).contains(index),' \
  '            ExprKind::Column { .. } => true,' \
  --test sqllogictest
# No query streams its rows: a result larger than hotpage.query_memory fails with 54000
# again under a wire server (PostgreSQL streams it).
PACKAGE=hotpage-sql unit rows-not-streamed crates/hotpage-sql/src/select.rs \
  '        self.grouping.is_none()' \
  '        false && self.grouping.is_none()' \
  --lib protocol
# A query with ORDER BY streams its rows in the table's order, unsorted.
PACKAGE=hotpage-sql unit ordered-rows-streamed crates/hotpage-sql/src/select.rs \
  '            && self.order.is_empty()' \
  '' \
  --lib protocol
# A streamed query sends the rows OFFSET should skip.
PACKAGE=hotpage-sql unit streamed-offset-ignored crates/hotpage-sql/src/select.rs \
  '            if skipped < offset {' \
  '            if skipped < offset && false {' \
  --lib protocol
# The wire server takes no streamed rows: psql's SELECT and COPY TO of a table larger
# than the bound fail again.
PACKAGE=hotpage-cli unit server-holds-rows crates/hotpage-server/src/session.rs \
  '    fn streams_rows(&self) -> bool {
        true' \
  '    fn streams_rows(&self) -> bool {
        false' \
  --test serve_copy results_larger
# hotpage sql --csv holds a query's rows again: a table larger than the bound fails to
# print.
PACKAGE=hotpage-cli unit shell-csv-rows-held crates/hotpage-cli/src/sql_shell.rs \
  '        self.format == Format::Csv' \
  '        false' \
  --test sql_cli copy_to_stdout
# Each streamed chunk is written at once: a one-row result costs a write of its own (a
# syscall more per query under pgbench), in the simple and the extended protocol.
PACKAGE=hotpage-server unit simple-chunk-written-at-once crates/hotpage-server/src/session.rs \
  '        self.chunk_pending = true;
        Ok(())' \
  '        self.chunk_pending = true;
        self.out.send_streamed()' \
  --lib rows_stream
PACKAGE=hotpage-server unit extended-chunk-written-at-once crates/hotpage-server/src/extended.rs \
  '                if streamed {' \
  '                if true {' \
  --lib rows_stream
# RESET of one durability name gives the engine the database's durability, although the
# other name still asks for another (SHOW and the engine disagree).
PACKAGE=hotpage-sql unit reset-takes-database-durability crates/hotpage-sql/src/session.rs \
  '            let durability = self
                .durability_setting()
                .unwrap_or(self.db.engine.durability());' \
  '            let durability = self.db.engine.durability();' \
  --lib reset_restores
# LIMIT 0 keeps and projects one row in the held path (SELECT 1/0 … LIMIT 0 fails).
PACKAGE=hotpage-sql unit held-limit-zero-projects-a-row crates/hotpage-sql/src/select.rs \
  '                    if enough == Some(0) {' \
  '                    if enough == Some(0) && false {' \
  --lib protocol
# A plain session's write that is never given up: a client that stops reading holds its
# session past pg_terminate_backend, and the server's shutdown for ever.
PACKAGE=hotpage-server unit stuck-write-never-given-up crates/hotpage-server/src/blocking.rs \
  '                if stop.is_stopped() {
                    idle_ticks_stopped += 1;' \
  '                if false {
                    idle_ticks_stopped += 1;' \
  --test stuck_clients does_not_read
# A stopped session's write given up at once, however steadily its client reads: a
# shutdown cuts a slow reader's result short.
PACKAGE=hotpage-server unit stopped-write-cut-at-once crates/hotpage-server/src/blocking.rs \
  '    while sent < bytes.len() {
        match stream.write(&bytes[sent..]) {' \
  '    while sent < bytes.len() {
        if stop.is_stopped() {
            return Err(write_given_up());
        }
        match stream.write(&bytes[sent..]) {' \
  --test stuck_clients reads_slowly
# A terminate that does not wake the session's blocked read: an idle session outlives it.
PACKAGE=hotpage-server unit terminate-read-not-woken crates/hotpage-server/src/stop.rs \
  '        self.token.cancel();
        self.wake_reader();' \
  '        self.token.cancel();' \
  --test stuck_clients idle_session
# A terminate that does not flag the session as terminated: its running statement ends
# with 57014 (a cancel) instead of 57P01, and a cancel is forgotten at the next start.
PACKAGE=hotpage-server unit terminate-not-flagged crates/hotpage-sql/src/views/activity.rs \
  '                self.terminated.store(true, Ordering::Relaxed);' \
  '' \
  --test stuck_clients cancels_the_running_statement_and_ends
# A TLS session's write that waits for ever once the session is stopped.
PACKAGE=hotpage-cli unit tls-stuck-write-never-given-up crates/hotpage-server/src/stop.rs \
  '    match tokio::time::timeout(WRITE_TICK, write).await {' \
  '    match Ok::<_, ()>(write.await) {' \
  --test serve_tls a_tls_session_whose_client_does_not_read
# pg_cancel_backend that says true and sets no flag.
PACKAGE=hotpage-sql unit cancel-backend-sets-nothing crates/hotpage-sql/src/catalog/functions.rs \
  '        return Ok(Datum::Bool(activity.cancel()));' \
  '        return Ok(Datum::Bool(true));' \
  --test interrupts pg_cancel_backend
# pg_terminate_backend(pid, timeout) that does not wait for the session to end.
PACKAGE=hotpage-sql unit terminate-timeout-not-waited crates/hotpage-sql/src/catalog/functions.rs \
  '    while timeout_ms > 0 && exec.db.activity_of(pid).is_some() {' \
  '    while false && exec.db.activity_of(pid).is_some() {' \
  --test interrupts pg_terminate_backend
# KILL of the session's own spid let through (SQL Server refuses it: error 6104).
PACKAGE=hotpage-sql unit kill-own-session crates/hotpage-sql/src/tsql/mod.rs \
  '        if spid == self.sql.pid() {' \
  '        if spid == u32::MAX {' \
  --test tsql kill_ends
# DISCARD ALL / DEALLOCATE ALL that leave the protocol's prepared statements in place
# (a pool's next user runs the last user's statements).
PACKAGE=hotpage-server unit protocol-statements-kept-after-discard crates/hotpage-server/src/session.rs \
  '        if self.session.deallocations() != self.deallocations {' \
  '        if false {' \
  --test pool_reset
# DISCARD ALL that keeps the session's settings.
PACKAGE=hotpage-sql unit discard-all-keeps-settings crates/hotpage-sql/src/session.rs \
  '                self.reset(&sqlparser::ast::Reset::ALL)?;
                self.prepared.clear();' \
  '                self.prepared.clear();' \
  --test sqllogictest
# Parameters in the select list left untyped (SELECT $1::bigint + 1 described as text).
PACKAGE=hotpage-sql unit select-list-params-untyped crates/hotpage-sql/src/select.rs \
  '        for item in &self.projection.items {
            param_types::infer(item, &mut types);
        }' \
  '' \
  --test param_types
# An INSERT value that is an expression of a parameter left untyped ($1::bigint as text).
PACKAGE=hotpage-sql unit insert-expression-params-untyped crates/hotpage-sql/src/insert.rs \
  '            crate::param_types::infer_growing(&scalar, params);' \
  '' \
  --test param_types
# A terminated session's statements not stopped by the terminated flag (a cancel set by
# the terminate is forgotten when the next statement starts).
PACKAGE=hotpage-sql unit terminated-not-checked crates/hotpage-sql/src/session/interrupt.rs \
  '        if self.is_terminated() {
            return Err(SqlError::new(' \
  '        if false {
            return Err(SqlError::new(' \
  --test interrupts pg_terminate_backend
# pg_terminate_backend in a select list with LIMIT let through: LIMIT 1 signals every row.
PACKAGE=hotpage-sql unit signals-before-limit-allowed crates/hotpage-sql/src/catalog/plan.rs \
  '            if limit.is_some() || offset.is_some() {
                refuse_signals_before_limit(&plan.items)?;' \
  '            if false {
                refuse_signals_before_limit(&plan.items)?;' \
  --test sqllogictest
# A create whose creation checkpoint fails keeps its table in memory (issue 9's bug).
unit failed-create-keeps-table crates/hotpage/src/db/mod.rs \
  '            forget_failed_table(&self.inner, &table);
            return Err(error);' \
  '            return Err(error);' \
  --test failed_create

# PostgreSQL's type rules at planning (expr/typecheck.rs, 2026-12-07).
PACKAGE=hotpage-sql unit postgres-typing-not-checked crates/hotpage-sql/src/select.rs \
  '    if typing == Typing::Postgres {
        plan.scalars()' \
  '    if false {
        plan.scalars()' \
  --test sqllogictest
PACKAGE=hotpage-sql unit tsql-typed-as-postgres crates/hotpage-sql/src/tsql/mod.rs \
  '        sql.set_typing(crate::expr::Typing::Implicit);' \
  '' \
  --test sqllogictest
PACKAGE=hotpage-sql unit in-list-incomparable-taken-as-unequal crates/hotpage-sql/src/expr.rs \
  'match compare_or_refuse(&v, &if negated { "<>" } else { "=" }, &candidate)? {' \
  'match compare_or_refuse(&v, &"=", &candidate).unwrap_or(Some(Ordering::Less)) {' \
  --test sqllogictest
PACKAGE=hotpage-sql unit in-list-literals-untyped crates/hotpage-sql/src/expr.rs \
  '                        compile(e, scope).map(Box::new)?,
                        value.ty(),' \
  '                        compile(e, scope).map(Box::new)?,
                        None,' \
  --test sqllogictest
PACKAGE=hotpage-sql unit insert-values-unchecked crates/hotpage-sql/src/insert.rs \
  '    if typing == Typing::Postgres {
        let values' \
  '    if false {
        let values' \
  --test sqllogictest
PACKAGE=hotpage-sql unit in-subquery-types-unchecked crates/hotpage-sql/src/catalog/compile.rs \
  '                        check_comparable(left.ty, &BinaryOperator::Eq, *ty)?;' \
  '' \
  --test sqllogictest
PACKAGE=hotpage-sql unit common-type-not-widened crates/hotpage-sql/src/expr/typecheck.rs \
  'Some((_, (_, common_rank))) if rank > common_rank => common = Some(ty),' \
  'Some((_, (_, common_rank))) if rank > common_rank && false => common = Some(ty),' \
  --lib typecheck
PACKAGE=hotpage-sql unit case-else-not-first crates/hotpage-sql/src/expr/typecheck.rs \
  'one_group("CASE", results.chain(arms.iter().map(|(_, result)| result)))' \
  'one_group("CASE", arms.iter().map(|(_, result)| result).chain(results))' \
  --test sqllogictest

# A terminated statement's one FATAL, and nothing after it (2026-12-07).
PACKAGE=hotpage-server unit terminate-error-not-fatal crates/hotpage-server/src/encode.rs \
  '        code::ADMIN_SHUTDOWN => error_with(error, "FATAL"),' \
  '        code::ADMIN_SHUTDOWN => error_with(error, "ERROR"),' \
  --test stuck_clients
PACKAGE=hotpage-server unit fatal-followed-by-ready crates/hotpage-server/src/connection.rs \
  '        if let Some(at) = messages.iter().position(encode::is_fatal) {' \
  '        if let Some(at) = messages.iter().position(encode::is_fatal).filter(|_| false) {' \
  --test stuck_clients

# PostgreSQL's answers where hotpage gave silent wrong ones (a differential run against
# PostgreSQL 15, 2026-12-07).
# LIKE takes the pattern's % as the text's literal % where the text has one there.
PACKAGE=hotpage-sql unit like-percent-taken-literally crates/hotpage-sql/src/expr.rs \
  "            Some('%') => {" \
  "            Some('%') if s[si] != '%' => {" \
  --test sqllogictest
# LIKE without its default escape character.
PACKAGE=hotpage-sql unit like-backslash-literal crates/hotpage-sql/src/expr.rs \
  "            Some('\\\\') if escapes => match p.get(pi + 1) {" \
  "            Some('\\\\') if false => match p.get(pi + 1) {" \
  --test sqllogictest
# coalesce evaluates every argument (coalesce(x, 1/0) fails where x is not NULL).
PACKAGE=hotpage-sql unit coalesce-eager crates/hotpage-sql/src/expr.rs \
  '            Scalar::Call(Func::Coalesce, args) => {
                for arg in args {' \
  '            Scalar::Call(Func::Coalesce, args) if false => {
                for arg in args {' \
  --test sqllogictest
# CASE/COALESCE/GREATEST/LEAST values left in their own types.
PACKAGE=hotpage-sql unit common-type-not-applied crates/hotpage-sql/src/expr.rs \
  '    let scalar = range_checked(widen_to_common(compile_node(expr, scope)?)?);' \
  '    let scalar = range_checked(compile_node(expr, scope)?);' \
  --test sqllogictest
# Negation and abs of an integer not range-checked.
PACKAGE=hotpage-sql unit negation-unchecked crates/hotpage-sql/src/expr.rs \
  '    let scalar = range_checked(widen_to_common(compile_node(expr, scope)?)?);' \
  '    let scalar = widen_to_common(compile_node(expr, scope)?)?;' \
  --test sqllogictest
# A string literal in arithmetic read as a number (1 + '2.5' is 4).
PACKAGE=hotpage-sql unit arithmetic-literal-untyped crates/hotpage-sql/src/expr.rs \
  '        Eq | NotEq | Lt | LtEq | Gt | GtEq | Plus | Minus | Multiply | Divide | Modulo' \
  '        Eq | NotEq | Lt | LtEq | Gt | GtEq' \
  --test sqllogictest
# WITH ORDINALITY run without its column.
PACKAGE=hotpage-sql unit ordinality-dropped crates/hotpage-sql/src/catalog/plan.rs \
  '        } => Err(SqlError::unsupported("WITH ORDINALITY")),' \
  '        } => Ok(()),' \
  --test sqllogictest
# GROUP BY and DISTINCT keyed by the values' Debug text (10.0 and 10 two groups).
PACKAGE=hotpage-sql unit one-table-group-key-by-text crates/hotpage-sql/src/select.rs \
  '            let id = crate::value::group_key(&keys);' \
  '            let id = format!("{keys:?}");' \
  --test sqllogictest
PACKAGE=hotpage-sql unit general-group-key-by-text crates/hotpage-sql/src/catalog/exec.rs \
  '            let id = row_key(&keys);' \
  '            let id = format!("{keys:?}");' \
  --test sqllogictest
# DISCARD ALL let run inside a transaction block (a Query message of several statements is
# one; PostgreSQL refuses both with 25001).
PACKAGE=hotpage-sql unit discard-all-in-block-allowed crates/hotpage-sql/src/session.rs \
  '            DiscardObject::ALL => {
                if self.txn != TxnStatus::Idle {' \
  '            DiscardObject::ALL => {
                if false {' \
  --lib protocol
# A set operation's numerics cast to the column's typmod (1.0 UNION ALL 2.25 shows 1.00,
# and with the first side's typmod 2.25 was 2.3).
PACKAGE=hotpage-sql unit set-operation-numerics-recast crates/hotpage-sql/src/catalog/exec.rs \
  '            .filter(|(_, ((_, f), (_, t)))| f != t && !(is_numeric(*f) && is_numeric(*t)))' \
  '            .filter(|(_, ((_, f), (_, t)))| f != t)' \
  --test sqllogictest
# A T-SQL session's LIKE takes a backslash as PostgreSQL's escape (SQL Server has none).
PACKAGE=hotpage-sql unit tsql-like-escapes crates/hotpage-sql/src/session.rs \
  '        self.state.typing == Typing::Postgres
    }

    fn call(&mut self, func: Func, args: &[Value]) -> SqlResult<Value> {
        functions::call(self.db, self.state, None,' \
  '        true
    }

    fn call(&mut self, func: Func, args: &[Value]) -> SqlResult<Value> {
        functions::call(self.db, self.state, None,' \
  --test sqllogictest
# (coalesce-numeric-recast, which cast a numeric to a widened numeric(38,s) typmod, was
# retired 2026-12-07: the common numeric of different typmods is now numeric without a
# typmod, so that cast keeps every value and no test can see it.)
# The general engine's CASE takes its first typed result's type again (`THEN 1 ELSE 2.5`
# over a join gave 3).
PACKAGE=hotpage-sql unit case-first-typed-result crates/hotpage-sql/src/catalog/functions.rs \
  '            _ => common_type([common, t].into_iter()),' \
  '            _ => common,' \
  --test sqllogictest
# Values of two type groups meet without an error (a text ELSE after an integer THEN).
PACKAGE=hotpage-sql unit mixed-groups-unified crates/hotpage-sql/src/catalog/functions.rs \
  '            (Some(a), Some(b)) if a != b => {' \
  '            (Some(a), Some(b)) if a != b && false => {' \
  --test sqllogictest
# ARRAY's elements cast to the first one's type again (ARRAY[1, 2.5] was {1,3}).
PACKAGE=hotpage-sql unit array-first-element-type crates/hotpage-sql/src/catalog/compile.rs \
  '        let common = functions::unify_types("ARRAY", self.implicit_conversions, items.iter())?;' \
  '        let common = functions::unify_types("ARRAY", self.implicit_conversions, items.iter().take(1))?;' \
  --test sqllogictest
# An exponent literal is double precision again (`0.1e0 + 0.2e0` is 0.30000000000000004).
PACKAGE=hotpage-sql unit exponent-literal-double crates/hotpage-sql/src/expr.rs \
  '    let (mantissa, exponent) = text.split_once(['\''e'\'', '\''E'\''])?;' \
  '    let (mantissa, exponent) = text.split_once('\''#'\'')?;' \
  --test sqllogictest
# char(n) in IN, BETWEEN and a simple CASE compared with its padding again.
PACKAGE=hotpage-sql unit char-operands-padded crates/hotpage-sql/src/expr.rs \
  '    if operands.first().is_some_and(is_char) {' \
  '    if false {' \
  --test sqllogictest
# With no column list, fewer values than columns is refused again.
PACKAGE=hotpage-sql unit insert-no-implied-columns crates/hotpage-sql/src/insert.rs \
  '            targets.truncate(supplied);' \
  '            let _ = supplied;' \
  --test sqllogictest
# After a FATAL, the rest of the batch is handled again.
PACKAGE=hotpage-server unit handled-after-fatal crates/hotpage-server/src/session.rs \
  '            if out.fatal_pushed {' \
  '            if out.fatal_pushed && false {' \
  --lib nothing_after_a_fatal
# = ANY (subquery) answers NOT IN.
PACKAGE=hotpage-sql unit any-subquery-negated crates/hotpage-sql/src/catalog/compile.rs \
  '            (CmpOp::Eq, false) => false,' \
  '            (CmpOp::Eq, false) => true,' \
  --test sqllogictest
# A cast's column is named by its type as written again (`int`, not PostgreSQL's `int4`).
PACKAGE=hotpage-sql unit cast-named-as-written crates/hotpage-sql/src/catalog/plan.rs \
  '        .map_or_else(|| last.to_string(), |t| t.name.to_string())' \
  '        .map_or_else(|| last.to_string(), |_| last.to_string())' \
  --test catalog_queries unnamed
# T-SQL's joins refuse mixed types in ISNULL/COALESCE/CASE again (42804).
PACKAGE=hotpage-sql unit tsql-general-engine-refuses-mixed crates/hotpage-sql/src/catalog/functions.rs \
  '            (Some(a), Some(b)) if a != b && implicit_conversions => common,' \
  '            (Some(a), Some(b)) if a != b && implicit_conversions && false => common,' \
  --test sqllogictest
# Strings of different types take the first one's type again (a varchar(4) cuts a text).
PACKAGE=hotpage-sql unit strings-meet-as-first-type crates/hotpage-sql/src/catalog/functions.rs \
  '            (Some(TypeGroup::String), Some(TypeGroup::String)) if common != t => TEXT,' \
  '            (Some(TypeGroup::String), Some(TypeGroup::String)) if false => TEXT,' \
  --test sqllogictest
# A char(n) compared with a text value keeps its padding again.
PACKAGE=hotpage-sql unit char-item-padded crates/hotpage-sql/src/expr.rs \
  '        .map(|o| *char_as_text(Box::new(o)))' \
  '        .map(|o| o)' \
  --test sqllogictest
# numeric without a precision: the stored row drops each value's scale (1.50 comes back
# as 150).
PACKAGE=hotpage-sql unit unconstrained-scale-not-stored crates/hotpage-sql/src/row_codec.rs \
  '            out.push(*scale);' \
  '            out.push(0);' \
  --test numeric
# A digit past the 38th place after the point is rounded away silently (1e-40 is 0).
PACKAGE=hotpage-sql unit unconstrained-rounds-silently crates/hotpage-sql/src/value/numeric.rs \
  '        if self.digits.iter().rev().take(past).any(|digit| *digit != 0) {' \
  '        if false {' \
  --test sqllogictest
# A float cast to numeric keeps the zeros of its 15 digits (0.1 is 0.100000000000000).
PACKAGE=hotpage-sql unit float-numeric-trailing-zeros crates/hotpage-sql/src/value/numeric.rs \
  '    while decimal.digits.last() == Some(&0) {' \
  '    while false {' \
  --test sqllogictest
# An unconstrained numeric becomes a primary key, where 1.0 and 1.00 would be two keys.
PACKAGE=hotpage-sql unit unconstrained-numeric-key crates/hotpage-sql/src/ddl.rs \
  '        refuse_unkeyable(&declared[index].column)?;' \
  '' \
  --test sqllogictest
# T-SQL's CAST(x AS decimal) keeps the value's scale, where SQL Server's decimal is (18,0).
PACKAGE=hotpage-sql unit tsql-cast-decimal-unconstrained crates/hotpage-sql/src/tsql/translate.rs \
  '        "CAST" if call => cast(toks, i, env, out).map(Some),' \
  '' \
  --test sqllogictest
# pg_typeof of an untyped literal says text, where PostgreSQL says unknown.
PACKAGE=hotpage-sql unit typeof-unknown-as-text crates/hotpage-sql/src/catalog/model.rs \
  '        CType::Unknown => 705,' \
  '        CType::Unknown => 25,' \
  --test sqllogictest
# A parameter the statement types numeric(10,2) is read at that scale again, so
# `m = $1` with '1.249' finds 1.25.
PACKAGE=hotpage-server unit numeric-param-keeps-typmod crates/hotpage-server/src/extended.rs \
  '        SqlType::Numeric { .. } => ParamType::Typed(SqlType::NumericUnconstrained),' \
  '        SqlType::Numeric { .. } => ParamType::Typed(ty),' \
  --lib
# A real becomes text as the double it is held in again (0.10000000149011612).
PACKAGE=hotpage-sql unit real-text-as-double crates/hotpage-sql/src/expr.rs \
  '        Func::TextOf(ty) => first.to_pg_text(Some(&ty)).map_or(Value::Null, Value::Text),' \
  '        Func::TextOf(_) => first.to_pg_text(None).map_or(Value::Null, Value::Text),' \
  --test sqllogictest
# concat's arguments are printed without their types (a real as a double).
PACKAGE=hotpage-sql unit concat-args-untyped crates/hotpage-sql/src/expr.rs \
  '            } else if concat {' \
  '            } else if false {' \
  --test sqllogictest
# A float zero cast to numeric keeps the 14 places of its digits (0.00000000000000).
PACKAGE=hotpage-sql unit float-zero-scale crates/hotpage-sql/src/value/numeric.rs \
  '        decimal.exponent = 0;' \
  '        decimal.exponent += 0;' \
  --test sqllogictest
# Numeric arithmetic over a join reports its first operand's typmod again.
PACKAGE=hotpage-sql unit arith-keeps-typmod crates/hotpage-sql/src/catalog/compile.rs \
  '        4 => CType::Sql(SqlType::NumericUnconstrained),' \
  '        4 => a,' \
  --test numeric
# Numeric arithmetic in a one-table query reports its operand's typmod again.
PACKAGE=hotpage-sql unit one-table-arith-keeps-typmod crates/hotpage-sql/src/expr.rs \
  '            (Some(a), _) | (_, Some(a)) if a.is_numeric() => Some(SqlType::NumericUnconstrained),' \
  '            (Some(a), _) | (_, Some(a)) if a.is_numeric() => Some(a),' \
  --test numeric
# An untyped literal among CASE's results keeps its text (`THEN 'x' ELSE 1` gives x).
PACKAGE=hotpage-sql unit case-literal-untyped crates/hotpage-sql/src/expr.rs \
  '        && (target.is_numeric_family() && target != SqlType::Oid || target == SqlType::Bool)' \
  '        && false' \
  --test sqllogictest
# A one-table COALESCE of numeric(10,2) and numeric(12,3) reports numeric(10,2).
PACKAGE=hotpage-sql unit common-numeric-first-typmod crates/hotpage-sql/src/expr/typecheck.rs \
  '            Some((so_far, _)) if so_far.is_numeric() && ty.is_numeric() && so_far != ty => {' \
  '            Some((so_far, _)) if false && so_far.is_numeric() && ty.is_numeric() => {' \
  --test numeric
# pg_typeof in an INSERT's values is 42883 again.
PACKAGE=hotpage-sql unit typeof-in-values-unknown crates/hotpage-sql/src/expr.rs \
  '    if name == "pg_typeof" {' \
  '    if false {' \
  --test sqllogictest
# T-SQL types an untyped string among CASE's results when planning, as PostgreSQL does
# (`CASE WHEN @x > 0 THEN @x ELSE 'neg' END` fails where SQL Server gives 3).
PACKAGE=hotpage-sql unit tsql-literals-typed-at-plan crates/hotpage-sql/src/expr.rs \
  '        && COMPILE_TYPING.with(|rules| rules.get()) == Typing::Postgres' \
  '        && true' \
  --test sqllogictest
# numeric(10,2) meeting an integer keeps its typmod (UNION ALL of m and id).
PACKAGE=hotpage-sql unit common-numeric-mixed-keeps-typmod crates/hotpage-sql/src/catalog/functions.rs \
  '        Some(CType::Sql(SqlType::Numeric { .. })) if mixed => {' \
  '        Some(CType::Sql(SqlType::Numeric { .. })) if false && mixed => {' \
  --test numeric
# numeric(10,2) meeting an untyped literal keeps its typmod over a join.
PACKAGE=hotpage-sql unit literal-keeps-numeric-typmod crates/hotpage-sql/src/catalog/functions.rs \
  '        CType::Sql(SqlType::Numeric { .. }) if literal => CType::Sql(SqlType::NumericUnconstrained),' \
  '        CType::Sql(SqlType::Numeric { .. }) if false && literal => CType::Sql(SqlType::NumericUnconstrained),' \
  --test numeric
# A real stored into a text column from VALUES is the double's text again.
PACKAGE=hotpage-sql unit insert-real-text-as-double crates/hotpage-sql/src/insert.rs \
  '        let scalar = match table.schema.columns[column].ty.is_text_like() {' \
  '        let scalar = match false {' \
  --test sqllogictest
# A real stored into a text column from a query is the double's text again.
PACKAGE=hotpage-sql unit insert-select-real-text-as-double crates/hotpage-sql/src/insert.rs \
  '        let into_text = self.table.schema.columns[column].ty.is_text_like();' \
  '        let into_text = false;' \
  --test sqllogictest
# pg_typeof of a CASE of untyped literals in an INSERT's values says unknown.
PACKAGE=hotpage-sql unit typeof-unresolved-unknown crates/hotpage-sql/src/expr.rs \
  '        (None, _) => "text".to_string(),' \
  '        (None, _) => "unknown".to_string(),' \
  --test sqllogictest
# Aggregate FILTER, ORDER BY, DISTINCT ON, unnest/ORDINALITY, LATERAL, T-SQL STRING_AGG and APPLY
# (2026-12-07, fourth session).
# FILTER (WHERE …) is ignored: every row is aggregated.
PACKAGE=hotpage-sql unit agg-filter-ignored crates/hotpage-sql/src/catalog/exec.rs \
  '                    && !self.holds(filter, &env)?' \
  '                    && false && !self.holds(filter, &env)?' \
  --test sqllogictest
# An aggregate ORDER BY is ignored: rows are fed in the order they came.
PACKAGE=hotpage-sql unit agg-order-ignored crates/hotpage-sql/src/catalog/exec.rs \
  '                for args in sort_rows(rows, &spec.order) {' \
  '                for args in sort_rows(rows, &[]) {' \
  --test sqllogictest
# DISTINCT with an ORDER BY key outside the arguments is not refused.
PACKAGE=hotpage-sql unit agg-distinct-order-unchecked crates/hotpage-sql/src/catalog/compile.rs \
  '            distinct_order_in_arguments(&args, &order)?;' \
  '            distinct_order_in_arguments(&args, &order).ok();' \
  --test sqllogictest
# DISTINCT ON compares whole rows: every row is kept.
PACKAGE=hotpage-sql unit distinct-on-whole-rows crates/hotpage-sql/src/catalog/exec.rs \
  '            sorted.retain(|items| seen.insert(row_key(&items[width..])));' \
  '            sorted.retain(|items| seen.insert(row_key(items)));' \
  --test sqllogictest
# An ORDER BY that does not begin with DISTINCT ON's expressions is not refused.
PACKAGE=hotpage-sql unit distinct-on-order-unchecked crates/hotpage-sql/src/catalog/plan.rs \
  '        if !wanted.contains(&by) {' \
  '        if false && !wanted.contains(&by) {' \
  --test sqllogictest
# WITH ORDINALITY counts from 0.
PACKAGE=hotpage-sql unit ordinality-from-zero crates/hotpage-sql/src/catalog/set_funcs.rs \
  '                row.push(Datum::Int(n as i64 + 1));' \
  '                row.push(Datum::Int(n as i64));' \
  --test sqllogictest
# unnest of several arrays stops at the shortest instead of padding with NULLs.
PACKAGE=hotpage-sql unit unnest-stops-at-shortest crates/hotpage-sql/src/catalog/set_funcs.rs \
  '    let len = items.iter().map(|i| i.len()).max().unwrap_or(0);' \
  '    let len = items.iter().map(|i| i.len()).min().unwrap_or(0);' \
  --test sqllogictest
# A subquery in FROM without LATERAL reads the items before it.
PACKAGE=hotpage-sql unit lateral-without-the-word crates/hotpage-sql/src/catalog/compile.rs \
  '        if beside && !lateral {' \
  '        if false && beside && !lateral {' \
  --test sqllogictest
# A LATERAL reference under RIGHT or FULL JOIN runs (and loses the right side's rows).
PACKAGE=hotpage-sql unit lateral-right-join-unchecked crates/hotpage-sql/src/catalog/plan.rs \
  '    if matches!(kind, JoinKind::Right | JoinKind::Full) && reads_left(c, &right) {' \
  '    if false && reads_left(c, &right) {' \
  --test sqllogictest
# T-SQL STRING_AGG drops its WITHIN GROUP order.
PACKAGE=hotpage-sql unit tsql-string-agg-order-dropped crates/hotpage-sql/src/tsql/translate.rs \
  '        rewrite(&toks[end + 3..group_close], env, out)?;' \
  '        rewrite(&[], env, out)?;' \
  --test sqllogictest
# T-SQL OUTER APPLY joins as CROSS APPLY does.
PACKAGE=hotpage-sql unit tsql-outer-apply-as-cross crates/hotpage-sql/src/tsql/translate.rs \
  '    out.push(if outer {' \
  '    out.push(if false {' \
  --test sqllogictest
# More scalar functions (expr/more_funcs.rs, 2026-12-07, fourth session).
# initcap leaves the rest of a word as it was.
PACKAGE=hotpage-sql unit initcap-rest-not-lowered crates/hotpage-sql/src/expr/more_funcs.rs \
  '            single(c.to_lowercase())' \
  '            Some(c)' \
  --test sqllogictest
# translate keeps a character whose place in from is past the end of to.
PACKAGE=hotpage-sql unit translate-keeps-unmapped crates/hotpage-sql/src/expr/more_funcs.rs \
  '            Some(at) => to.get(at).copied(),' \
  '            Some(at) => to.get(at).copied().or(Some(c)),' \
  --test sqllogictest
# chr(0) gives a NUL character.
PACKAGE=hotpage-sql unit chr-zero-allowed crates/hotpage-sql/src/expr/more_funcs.rs \
  '    if n == 0 {' \
  '    if false {' \
  --test sqllogictest
# regexp_replace replaces every match without the g flag.
PACKAGE=hotpage-sql unit regexp-replace-always-global crates/hotpage-sql/src/expr/more_funcs.rs \
  '    let replaced = if global {' \
  '    let replaced = if true {' \
  --test sqllogictest
# A group reference in the replacement is written as its digit.
PACKAGE=hotpage-sql unit regexp-replace-group-literal crates/hotpage-sql/src/expr/more_funcs.rs \
  '                    out.push_str(&format!("${{{d}}}"));' \
  '                    out.push(d);' \
  --test sqllogictest
# div compares its arguments at the smaller scale.
PACKAGE=hotpage-sql unit div-at-smaller-scale crates/hotpage-sql/src/expr/more_funcs.rs \
  '    let scale = a.1.max(b.1);' \
  '    let scale = a.1.min(b.1);' \
  --test sqllogictest
# lcm answers the gcd.
PACKAGE=hotpage-sql unit lcm-is-gcd crates/hotpage-sql/src/expr/more_funcs.rs \
  '    let result = if func == PureFunc::Gcd {' \
  '    let result = if true {' \
  --test sqllogictest
# ln(0) is minus infinity instead of 2201E.
PACKAGE=hotpage-sql unit ln-of-zero-allowed crates/hotpage-sql/src/expr/more_funcs.rs \
  '            if x == 0.0 {' \
  '            if false {' \
  --test sqllogictest
# exp underflows to 0 without 22003.
PACKAGE=hotpage-sql unit exp-underflow-unchecked crates/hotpage-sql/src/expr/more_funcs.rs \
  '            if e == 0.0 && x.is_finite() {' \
  '            if false {' \
  --test sqllogictest
# log is the natural logarithm (it is base 10 in PostgreSQL).
PACKAGE=hotpage-sql unit log-is-natural crates/hotpage-sql/src/expr/more_funcs.rs \
  '            if func == F::Ln { x.ln() } else { x.log10() }' \
  '            x.ln()' \
  --test sqllogictest
# num_nonnulls counts the NULLs.
PACKAGE=hotpage-sql unit num-nonnulls-counts-nulls crates/hotpage-sql/src/expr/builtin.rs \
  '                let counted = if self == F::NumNulls {' \
  '                let counted = if true {' \
  --test sqllogictest
# md5 of a bytea digests its printed text.
PACKAGE=hotpage-sql unit md5-bytea-as-text crates/hotpage-sql/src/expr/more_funcs.rs \
  '                Value::Bytes(bytes) => md5::Md5::digest(bytes),' \
  '                Value::Bytes(_) => md5::Md5::digest(text_of(&args[0]).as_bytes()),' \
  --test sqllogictest
# T-SQL LOG is translated to PostgreSQL log (base 10).
PACKAGE=hotpage-sql unit tsql-log-base-ten crates/hotpage-sql/src/tsql/translate.rs \
  '            out.push("ln(");' \
  '            out.push("log(");' \
  --test sqllogictest
# Array functions (catalog/array_funcs.rs, 2026-12-07, fourth session).
# array_remove removes nothing.
PACKAGE=hotpage-sql unit array-remove-keeps-all crates/hotpage-sql/src/catalog/array_funcs.rs \
  '                all.into_iter().filter(|d| !same(d, &wanted)).collect()' \
  '                all.into_iter().collect()' \
  --test sqllogictest
# A NULL never finds a NULL (array_position, array_remove).
PACKAGE=hotpage-sql unit array-null-not-found crates/hotpage-sql/src/catalog/array_funcs.rs \
  '        (true, true) => true,' \
  '        (true, true) => false,' \
  --test sqllogictest
# array_position ignores its start.
PACKAGE=hotpage-sql unit array-position-start-ignored crates/hotpage-sql/src/catalog/array_funcs.rs \
  '        .skip(skip)' \
  '        .skip(0)' \
  --test sqllogictest
# string_to_array ignores its null string.
PACKAGE=hotpage-sql unit string-to-array-null-text-ignored crates/hotpage-sql/src/catalog/array_funcs.rs \
  '                if null_text == Some(f.as_str()) {' \
  '                if false {' \
  --test sqllogictest
# array_cat of a NULL and an array is NULL.
PACKAGE=hotpage-sql unit array-cat-null-is-null crates/hotpage-sql/src/catalog/array_funcs.rs \
  '            (None, None) => return Ok(Datum::Null),' \
  '            (None, _) | (_, None) => return Ok(Datum::Null),' \
  --test sqllogictest
# Arrays of kinds that never meet are cast to the first kind.
PACKAGE=hotpage-sql unit array-kinds-unchecked crates/hotpage-sql/src/catalog/array_funcs.rs \
  '    if !numbers && elements.iter().any(|t| *t != first) {' \
  '    if false {' \
  --test sqllogictest
# A window aggregate's FILTER is ignored: every row of the frame is aggregated.
PACKAGE=hotpage-sql unit window-filter-ignored crates/hotpage-sql/src/catalog/exec.rs \
  '                        Some(filter) => self.holds(filter, &env)?,' \
  '                        Some(_) => true,' \
  --test sqllogictest
# Review fixes (2026-12-07, fourth session).
# ORDER BY … USING > is read as ASC again (the one-table engine).
PACKAGE=hotpage-sql unit order-using-ascending crates/hotpage-sql/src/expr.rs \
  '            ">" | ">=" => Ok(true),' \
  '            ">" | ">=" => Ok(false),' \
  --test sqllogictest
# A regular expression's . stops at a newline (Rust's default).
PACKAGE=hotpage-sql unit regex-dot-stops-at-newline crates/hotpage-sql/src/expr/more_funcs.rs \
  '        .dot_matches_new_line(true)' \
  '        .dot_matches_new_line(false)' \
  --test sqllogictest
# initcap writes a character's full upper case (ß as SS).
PACKAGE=hotpage-sql unit initcap-full-mapping crates/hotpage-sql/src/expr/more_funcs.rs \
  '    mapping.next().is_none().then_some(first)' \
  '    Some(first)' \
  --test sqllogictest
# T-SQL LOG(x, base) ignores its base.
PACKAGE=hotpage-sql unit tsql-log-base-ignored crates/hotpage-sql/src/tsql/translate.rs \
  '            out.push(") / ln(");' \
  '            out.push(") / log(");' \
  --test sqllogictest
# A LATERAL subquery's output stays counted after its left row is done.
PACKAGE=hotpage-sql unit lateral-output-kept-counted crates/hotpage-sql/src/catalog/exec.rs \
  '                self.set_held(held_before + (self.table_bytes - tables_before));
                Ok(rows)' \
  '                let _ = (held_before, tables_before);
                Ok(rows)' \
  --test memory_bound
# Set-returning calls in a SELECT's list, typing and range fixes (2026-12-07, fifth session).
# A boolean cast to text is boolout's t/f again (the general engine).
PACKAGE=hotpage-sql unit bool-cast-as-boolout crates/hotpage-sql/src/catalog/types.rs \
  '        Datum::Bool(b) => Some(b.to_string()),' \
  '        Datum::Bool(_) => to_text(datum, ty, names),' \
  --test sqllogictest
# A function's integer result is not checked against its type (the general engine).
PACKAGE=hotpage-sql unit call-int-range-unchecked crates/hotpage-sql/src/catalog/exec.rs \
  '                        types::int_in_range(i, e.ty)?' \
  '                        Datum::Int(i)' \
  --test sqllogictest
# ... nor in the one-table engine.
PACKAGE=hotpage-sql unit scalar-call-int-range-unchecked crates/hotpage-sql/src/expr.rs \
  '                        fit_integer(i, self.ty())?' \
  '                        Value::Int(i)' \
  --test sqllogictest
# gcd, lcm and mod take their first argument's type.
PACKAGE=hotpage-sql unit gcd-type-of-first crates/hotpage-sql/src/expr/builtin.rs \
  '                return match super::typecheck::common_type(args.iter().copied()) {' \
  '                return match first {' \
  --test sqllogictest
# A minus is not folded into an integer literal (the one-table engine: -2147483648 is bigint).
PACKAGE=hotpage-sql unit minus-literal-unfolded crates/hotpage-sql/src/expr.rs \
  '            UnaryOperator::Minus if let Some(digits) = integer_literal_digits(expr) => {' \
  '            UnaryOperator::Minus if let Some(digits) = integer_literal_digits(expr).filter(|_| false) => {' \
  --test sqllogictest
# ... nor in the general engine.
PACKAGE=hotpage-sql unit catalog-minus-literal-unfolded crates/hotpage-sql/src/catalog/compile.rs \
  '            && let Some(digits) = crate::expr::integer_literal_digits(inner)' \
  '            && let Some(digits) = crate::expr::integer_literal_digits(inner).filter(|_| false)' \
  --test sqllogictest
# FETCH FIRST is ignored without a LIMIT (the one-table engine).
PACKAGE=hotpage-sql unit fetch-first-ignored crates/hotpage-sql/src/select.rs \
  '            fetch_count(query)?
                .map(|e| expr::compile(e, empty))
                .transpose()?,
            None,' \
  '            None,
            None,' \
  --test sqllogictest
# ... and in the general engine.
PACKAGE=hotpage-sql unit catalog-fetch-first-ignored crates/hotpage-sql/src/catalog/plan.rs \
  '        None => Ok((fetch.map(|e| count(c, e)).transpose()?, None)),' \
  '        None => Ok((fetch.map(|_| None).unwrap_or(None), None)),' \
  --test sqllogictest
# A SELECT list's set-returning calls stop at the shortest, not the longest.
PACKAGE=hotpage-sql unit set-calls-shortest crates/hotpage-sql/src/catalog/exec.rs \
  '            let longest = sets.iter().map(Vec::len).max().unwrap_or(0);' \
  '            let longest = sets.iter().map(Vec::len).min().unwrap_or(0);' \
  --test sqllogictest
# A set-returning call inside CASE or COALESCE is run instead of refused (0A000).
PACKAGE=hotpage-sql unit set-call-in-case-run crates/hotpage-sql/src/catalog/compile.rs \
  '            Some(l) if l.set_calls.is_some() => l.set_blocked.map(|what| match what {' \
  '            Some(l) if l.set_calls.is_some() => l.set_blocked.filter(|_| false).map(|what| match what {' \
  --test sqllogictest
# A query with a set-returning call in its list goes to the one-table engine (42883).
PACKAGE=hotpage-sql unit set-call-not-routed crates/hotpage-sql/src/catalog/mod.rs \
  '                self.set_function |=' \
  '                self.set_function |= false &&' \
  --test sqllogictest
# T-SQL's ORDER BY keeps PostgreSQL's order of NULLs (last ascending).
PACKAGE=hotpage-sql unit tsql-nulls-high crates/hotpage-sql/src/tsql/translate.rs \
  '            "NULLS LAST"
        } else {
            "NULLS FIRST"' \
  '            "NULLS FIRST"
        } else {
            "NULLS LAST"' \
  --test sqllogictest
# An aggregate of only outer columns is computed in the subquery again (a wrong answer).
PACKAGE=hotpage-sql unit outer-aggregate-in-subquery crates/hotpage-sql/src/catalog/compile.rs \
  '        if !reads.is_empty() && reads.iter().all(|(level, _)| *level < top) {' \
  '        if !reads.is_empty() && reads.iter().all(|(level, _)| *level < top) && false {' \
  --test sqllogictest
# regexp_replace's g skips an empty match right after a match again (the regex crate's rule).
PACKAGE=hotpage-sql unit regexp-g-skips-empty-after-match crates/hotpage-sql/src/expr/more_funcs.rs \
  '        replace_every(&pattern, &source, &replacement)?' \
  '        pattern.replace_all(&source, replacement.as_str()).into_owned()' \
  --test sqllogictest
# format(): a specifier after a positional one takes the next argument in sequence, not the
# one after the position.
PACKAGE=hotpage-sql unit format-position-keeps-sequence crates/hotpage-sql/src/catalog/format_func.rs \
  '        let at = spec.position.unwrap_or(next);
        next = at + 1;' \
  '        let at = spec.position.unwrap_or(next);
        next += 1;' \
  --test sqllogictest
# ... a negative width right-justifies.
PACKAGE=hotpage-sql unit format-negative-width-right crates/hotpage-sql/src/catalog/format_func.rs \
  '    let left = left || width.is_some_and(|w| w < 0);' \
  '    let left = left;' \
  --test sqllogictest
# ... %L of NULL is empty instead of NULL.
PACKAGE=hotpage-sql unit format-null-literal-empty crates/hotpage-sql/src/catalog/format_func.rs \
  '            (_, None) => "NULL".to_string(),' \
  '            (_, None) => String::new(),' \
  --test sqllogictest
# regexp_split_to_table splits at an empty match at the start or end too.
PACKAGE=hotpage-sql unit regexp-split-degenerate-splits crates/hotpage-sql/src/expr/more_funcs.rs \
  '        let degenerate = found.is_empty()' \
  '        let degenerate = false && found.is_empty()' \
  --test sqllogictest
# string_to_table drops its first field.
PACKAGE=hotpage-sql unit string-to-table-drops-first crates/hotpage-sql/src/catalog/set_funcs.rs \
  '                Datum::Array(fields) => fields.into_iter().map(|f| vec![f]).collect(),' \
  '                Datum::Array(fields) => fields.into_iter().skip(1).map(|f| vec![f]).collect(),' \
  --test sqllogictest
# Review fixes of the fifth session.
# The general engine's LIKE ignores a lone escape at the pattern's end (no 22025).
PACKAGE=hotpage-sql unit like-dangling-escape-ignored crates/hotpage-sql/src/catalog/exec.rs \
  '        if dangling {' \
  '        if false && dangling {' \
  --test sqllogictest
# A T-SQL session's LIKE in the general engine takes \ as an escape.
PACKAGE=hotpage-sql unit tsql-like-escapes-in-general-engine crates/hotpage-sql/src/catalog/exec.rs \
  '        let escapes = self.session.state.typing == crate::expr::Typing::Postgres;' \
  '        let escapes = true;' \
  --test sqllogictest
# A real cast to numeric keeps the double's digits (1.2345677614212).
PACKAGE=hotpage-sql unit real-numeric-double-digits crates/hotpage-sql/src/value.rs \
  '    if f.is_finite() {' \
  '    if false && f.is_finite() {' \
  --test sqllogictest
# quote_literal of a boolean is boolout's 't' (the general engine).
PACKAGE=hotpage-sql unit quote-literal-bool-boolout crates/hotpage-sql/src/catalog/functions.rs \
  '                ty if ty == BOOL && pure == PureFunc::QuoteLiteral => a.cast_to(TEXT),' \
  '                ty if false && ty == BOOL && pure == PureFunc::QuoteLiteral => a.cast_to(TEXT),' \
  --test sqllogictest
# true::name spells the word (the boolean-to-text cast taken for name too).
PACKAGE=hotpage-sql unit name-cast-spells-bool crates/hotpage-sql/src/catalog/types.rs \
  '            CType::Sql(SqlType::Name | SqlType::InternalChar) => to_text(&datum, from, names),' \
  '            CType::Sql(SqlType::Name | SqlType::InternalChar) => cast_to_text(&datum, from, names),' \
  --test sqllogictest
# A FROM set function's rows stay counted after the join is done with them.
PACKAGE=hotpage-sql unit set-rows-kept-counted crates/hotpage-sql/src/catalog/exec.rs \
  '                let rows = func.rows(&values, &mut self.memory)?;
                self.set_held(held_before);' \
  '                let rows = func.rows(&values, &mut self.memory)?;
                let _ = held_before;' \
  --test memory_bound
# T-SQL SELECT TOP (n) @v = … is a plain query again (the variable never assigned).
PACKAGE=hotpage-sql unit tsql-select-top-assign-plain crates/hotpage-sql/src/tsql/parse.rs \
  '                if is_variable(self.toks.get(self.top_end(self.pos + 1)))' \
  '                if is_variable(self.toks.get(self.pos + 1))' \
  --test sqllogictest
# NOT, AND and OR of a set-returning call are computed instead of refused (42804).
PACKAGE=hotpage-sql unit set-under-not-computed crates/hotpage-sql/src/catalog/compile.rs \
  '        if set {' \
  '        if false && set {' \
  --test sqllogictest
# cbrt is a square root.
PACKAGE=hotpage-sql unit cbrt-as-sqrt crates/hotpage-sql/src/expr/more_funcs.rs \
  '        F::Cbrt => x.cbrt(),' \
  '        F::Cbrt => x.sqrt(),' \
  --test sqllogictest
# A date key without its sign bit flipped: days before 2000-01-01 sort after the others.
PACKAGE=hotpage-sql unit date-key-sign-unflipped crates/hotpage-sql/src/key_codec.rs \
  '            out.extend_from_slice(&((*d as u32) ^ SIGN_BIT_32).to_be_bytes());' \
  '            out.extend_from_slice(&(*d as u32).to_be_bytes());' \
  --lib
# date - date subtracts the wrong way round.
PACKAGE=hotpage-sql unit date-minus-date-reversed crates/hotpage-sql/src/value.rs \
  '            Ok(Value::Int(i64::from(*a) - i64::from(*b)))' \
  '            Ok(Value::Int(i64::from(*b) - i64::from(*a)))' \
  --test sqllogictest
# An infinite date plus days is shifted like a finite one (out of range).
PACKAGE=hotpage-sql unit date-infinity-shifted crates/hotpage-sql/src/value.rs \
  '        if !datetime::is_finite_date(date) {' \
  '        if false && !datetime::is_finite_date(date) {' \
  --lib
# A month added past a month's end rolls into the next month (January 31 + 1 mon = March 2).
PACKAGE=hotpage-sql unit month-end-not-clamped crates/hotpage-sql/src/value/interval.rs \
  '        days = days_from_civil(year, month, day.min(days_in_month(year, month)));' \
  '        days = days_from_civil(year, month, day);' \
  --test sqllogictest
# Intervals compared with 31-day months: 1 mon is no longer 30 days.
PACKAGE=hotpage-sql unit interval-month-31-days crates/hotpage-sql/src/value/interval.rs \
  'const DAYS_PER_MONTH: i64 = 30;' \
  'const DAYS_PER_MONTH: i64 = 31;' \
  --test sqllogictest
# An interval's positive part after a negative one loses its + (then reads back wrong).
PACKAGE=hotpage-sql unit interval-plus-sign-dropped crates/hotpage-sql/src/value/interval.rs \
  '        let plus = if is_before && value > 0 { "+" } else { "" };' \
  '        let plus = if false && is_before && value > 0 { "+" } else { "" };' \
  --lib
# timestamp - timestamp keeps whole days as hours (100:00:00, not 4 days 04:00:00).
PACKAGE=hotpage-sql unit timestamp-minus-unjustified crates/hotpage-sql/src/value/interval.rs \
  '        micros,
    }
    .justify_hours()' \
  '        micros,
    }
    .plus(&Interval::default(), false)' \
  --test sqllogictest
# T-SQL DATEPART(week) ignores January 1's weekday.
PACKAGE=hotpage-sql unit datepart-week-ignores-jan1 crates/hotpage-sql/src/expr/tsql_dates.rs \
  '            (day_of_year - 1 + january_first) / 7 + 1' \
  '            (day_of_year - 1) / 7 + 1' \
  --test sqllogictest
# T-SQL DATEADD makes a date a datetime (and takes hours on it).
PACKAGE=hotpage-sql unit dateadd-date-as-datetime crates/hotpage-sql/src/expr/tsql_dates.rs \
  '    if let Value::Date(days) = date {' \
  '    if let Value::Date(days) = date
        && false
    {' \
  --test sqllogictest
# sum() and avg() take any type again (a text sums to itself).
PACKAGE=hotpage-sql unit sum-takes-any-type crates/hotpage-sql/src/select.rs \
  '        Some(ty) if !(ty.is_numeric_family() && ty != SqlType::Oid || ty == SqlType::Interval) => {' \
  '        Some(ty) if false && !(ty.is_numeric_family() && ty != SqlType::Oid) => {' \
  --test sqllogictest
# extract of a date keeps the timestamp's scale (epoch 1709596800.000000).
PACKAGE=hotpage-sql unit extract-date-scale-kept crates/hotpage-sql/src/value/date_fields.rs \
  '            scaled: scaled / 10i128.pow(u32::from(scale)),
            scale: 0,' \
  '            scaled,
            scale,' \
  --test sqllogictest
# The general engine hashes an interval by its fields (1 mon and 30 days two keys).
PACKAGE=hotpage-sql unit hash-key-interval-fields crates/hotpage-sql/src/catalog/exec.rs \
  '            | Value::Interval(_)
            | Value::Date(_)' \
  '            | Value::Date(_)' \
  --test sqllogictest
# A date's text takes the day a time of 24:00 rolls into.
PACKAGE=hotpage-sql unit date-text-rolls-over crates/hotpage-sql/src/value/datetime.rs \
  "    let day_end = trimmed.find([' ', 'T', 't']).unwrap_or(trimmed.len());" \
  '    let day_end = trimmed.len();' \
  --test sqllogictest
# A timestamp past 9999 becomes a date the codecs refuse to read back.
PACKAGE=hotpage-sql unit date-past-9999-stored crates/hotpage-sql/src/value/datetime.rs \
  '        _ => checked_date(micros.div_euclid(USECS_PER_DAY)),' \
  '        _ => Ok(micros.div_euclid(USECS_PER_DAY) as i32),' \
  --test sqllogictest
# The general engine's NULLIF compares an untyped literal as text (never NULL for a date).
PACKAGE=hotpage-sql unit nullif-literal-as-text crates/hotpage-sql/src/catalog/functions.rs \
  '                let (a, b) = super::compile::unify(a, b);' \
  '                let (a, b) = (a, b.cast_to(TEXT));' \
  --test sqllogictest
# A string literal added to a timestamp stays text (ts + '1 day' fails).
PACKAGE=hotpage-sql unit timestamp-plus-literal-text crates/hotpage-sql/src/expr.rs \
  '        (Plus, Some(SqlType::Timestamp | SqlType::TimestampTz)) | (_, Some(SqlType::Interval)) => {' \
  '        (Plus, Some(SqlType::Date)) => {' \
  --test sqllogictest
# age borrows the days of the wrong month (always the later date's).
PACKAGE=hotpage-sql unit age-borrows-wrong-month crates/hotpage-sql/src/value/interval.rs \
  '        let (year, month) = if a < b { (y1, m1) } else { (y2, m2) };' \
  '        let (year, month) = if a < b { (y2, m2) } else { (y1, m1) };' \
  --test sqllogictest
# A constant cast PostgreSQL has not is 42804 again (an assignment's code).
PACKAGE=hotpage-sql unit cast-not-42846 crates/hotpage-sql/src/expr.rs \
  '                        sqlstate::CANNOT_COERCE,' \
  '                        sqlstate::DATATYPE_MISMATCH,' \
  --test sqllogictest
