//! `TRUNCATE` inside a transaction, atomic with the transaction's commit.
//!
//! [`Session::truncate_at_commit`] makes a table read as empty for the rest of the open
//! transaction; the table is emptied for everyone only if the transaction commits. The
//! engine empties a table by swapping in a new, empty table with the same name and spec,
//! and a table exists durably only once a catalog names it. So the catalog must name the new
//! table before the commit record puts rows into it, and must not let it replace the old
//! one unless that commit record is durable. Hence a **pending truncation**:
//!
//! 1. At commit, [`begin_truncates`] creates each new table and registers a
//!    [`TruncateSwap`] that waits on the transaction's id. One checkpoint writes the catalog
//!    as if the transaction will not commit (old table live, new one dropped) plus
//!    `(txn, old, new)` (catalog format 9). Then, in memory, the new table replaces the old.
//! 2. The commit record is logged under that id, even with no rows. Once it is appended the
//!    swap is `Logged`.
//! 3. The next checkpoint writes the swap as done, and forgets it. That checkpoint makes
//!    the log durable to its redo point, which is past the record.
//!
//! After a crash in between, recovery swaps exactly when the log holds the commit record
//! (`open::resolve_pending_truncates`). A commit that fails before its record is appended
//! abandons the swap: the old table comes back, and the next checkpoint writes it so.
//!
//! The earlier design made the swap durable at its own checkpoint before the commit record:
//! a crash between the two emptied the table of a transaction that never committed.
//!
//! A checkpoint reads the swaps before it takes its points. A swap it sees `Logged` was
//! appended before the redo point, so it is durable once the catalog is written. A swap it
//! sees `Waiting` has a commit record, if any, at or after the logical point: the commit's
//! "applying" marker is set before its record is reserved and cleared only after the swap
//! is marked `Logged`. So recovery, which reads commit records from the logical point,
//! finds it.

use super::{
    Inner, PendingTxn, Session, TableHandle, TableSpec, checkpoint_locked, forget_failed_table,
    new_table,
};
use crate::catalog::{Catalog, PendingTruncate};
use crate::error::{Error, Result};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Where a truncating transaction's commit stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SwapOutcome {
    /// Its commit record is not appended (yet): catalogs write the swap as pending.
    Waiting,
    /// Its commit record is appended: the next checkpoint writes the swap as done.
    Logged,
    /// Its commit failed before its record was appended: the old table is back.
    Abandoned,
}

/// One table a committing transaction truncates.
pub(super) struct TruncateSwap {
    txn: u64,
    old: TableHandle,
    new: TableHandle,
    outcome: SwapOutcome,
}

/// The swaps as one checkpoint saw them, taken before its points.
pub(super) struct SwapSnapshot(Vec<(u64, usize, usize, SwapOutcome)>);

impl SwapSnapshot {
    pub(super) fn take(inner: &Inner) -> SwapSnapshot {
        SwapSnapshot(
            inner
                .truncate_swaps
                .lock()
                .iter()
                .map(|s| (s.txn, s.old.id, s.new.id, s.outcome))
                .collect(),
        )
    }

    /// Writes each waiting swap into `catalog` as pending: the old table live and the new
    /// one dropped, whatever memory says now. Settled swaps need nothing: memory already
    /// shows their outcome.
    pub(super) fn write_into(&self, catalog: &mut Catalog) {
        for &(txn, old, new, outcome) in &self.0 {
            if outcome != SwapOutcome::Waiting {
                continue;
            }
            catalog.tables[old].dropped = false;
            catalog.tables[new].dropped = true;
            catalog.pending_truncates.push(PendingTruncate {
                txn,
                old_table: old as u32,
                new_table: new as u32,
            });
        }
    }

    /// After the catalog is stored: forgets the swaps it wrote as settled.
    pub(super) fn forget_settled(&self, inner: &Inner) {
        inner.truncate_swaps.lock().retain(|swap| {
            !self.0.iter().any(|&(txn, old, _, outcome)| {
                outcome != SwapOutcome::Waiting && txn == swap.txn && old == swap.old.id
            })
        });
    }
}

/// Refuses with [`Error::TableBusy`] while a committing transaction's truncation of the
/// table named `name` waits for its commit record.
pub(super) fn check_not_truncating(inner: &Inner, name: &str) -> Result<()> {
    match swap_waiting(inner, name) {
        true => Err(Error::TableBusy(name.to_string())),
        false => Ok(()),
    }
}

/// The spec of a table, for a new, empty table that replaces it.
pub(super) fn spec_of(table: &TableHandle) -> TableSpec<'_> {
    TableSpec {
        name: &table.name,
        design: &table.design,
        kind: table.key_kind(),
        layout: table.layout,
        user_keys: table.user_keys,
        schema: &table.schema,
        unlogged: table.unlogged,
    }
}

/// Step 1 (see the module docs): for each table named in `truncated`, a new, empty table
/// that replaces it if transaction `txn` commits, made durable as pending, then put in its
/// place in memory. With `redefine`, the new table is made from that spec instead of the
/// old one's (a rebuild: `truncated` is the one table it replaces), and `prepare` sees each
/// new table before anyone can find it. Returns `(old, new)` pairs. Nothing is left
/// registered on error.
pub(super) fn begin_truncates(
    inner: &Arc<Inner>,
    txn: u64,
    truncated: &[TableHandle],
    redefine: Option<&TableSpec<'_>>,
    prepare: &mut dyn FnMut(&TableHandle) -> Result<()>,
) -> Result<Vec<(TableHandle, TableHandle)>> {
    let mut checkpoint_state = inner.checkpoint_lock.lock();
    let mut pairs = Vec::with_capacity(truncated.len());
    for table in truncated {
        let made = new_empty_twin(inner, table, redefine).and_then(|(old, new)| {
            let prepared = prepare(&new);
            pairs.push((old, new));
            prepared
        });
        if let Err(error) = made {
            // No checkpoint may write the twins made so far: each would be a second
            // live table of its name.
            for (_, new) in pairs.iter().rev() {
                forget_failed_table(inner, new);
            }
            return Err(error);
        }
    }
    inner
        .truncate_swaps
        .lock()
        .extend(pairs.iter().map(|(old, new)| TruncateSwap {
            txn,
            old: Arc::clone(old),
            new: Arc::clone(new),
            outcome: SwapOutcome::Waiting,
        }));
    if let Err(error) = checkpoint_locked(inner, &mut checkpoint_state, true) {
        inner.truncate_swaps.lock().retain(|s| s.txn != txn);
        for (_, new) in pairs.iter().rev() {
            forget_failed_table(inner, new);
        }
        return Err(error);
    }
    // The new tables are published only once the swap is logged (`mark_logged`): a row
    // another session committed into one before that would be lost if the swap were then
    // abandoned, or if a crash came before the swap's record was durable. Meanwhile the
    // name answers `TableBusy` (`live_table`).
    for (old, _) in &pairs {
        old.dropped.store(true, Ordering::Release);
    }
    Ok(pairs)
}

/// True if a swap of transaction not yet logged replaces the table named `name`: the name
/// is busy until it is logged or abandoned.
pub(super) fn swap_waiting(inner: &Inner, name: &str) -> bool {
    inner
        .truncate_swaps
        .lock()
        .iter()
        .any(|s| s.outcome == SwapOutcome::Waiting && s.old.name == name)
}

/// The live table named as `table` is (a TRUNCATE outside the transaction may have
/// replaced the one it saw: PostgreSQL would have locked it instead), and a new, empty,
/// unpublished table with its spec (or `redefine`), last in the table list. A rebuild
/// (`redefine`) read its rows from `table` itself: a table replaced since is
/// [`Error::TableBusy`]. The caller holds the checkpoint lock.
fn new_empty_twin(
    inner: &Arc<Inner>,
    table: &TableHandle,
    redefine: Option<&TableSpec<'_>>,
) -> Result<(TableHandle, TableHandle)> {
    let old = super::live_table(inner, &table.name)?;
    check_not_truncating(inner, &old.name)?;
    if redefine.is_some() && old.id != table.id {
        return Err(Error::TableBusy(old.name.clone()));
    }
    let mut tables = inner.tables.write();
    let new = Arc::new(match redefine {
        Some(spec) => new_table(inner, tables.len(), spec, None)?,
        None => new_table(
            inner,
            tables.len(),
            &spec_of(&old),
            Some(old.keys.high_water()),
        )?,
    });
    tables.push(Arc::clone(&new));
    Ok((old, new))
}

/// Step 2: transaction `txn`'s commit record is appended.
pub(super) fn mark_logged(inner: &Inner, txn: u64) {
    for swap in inner.truncate_swaps.lock().iter_mut() {
        if swap.txn == txn {
            assert_eq!(swap.outcome, SwapOutcome::Waiting, "a swap logged twice");
            swap.outcome = SwapOutcome::Logged;
            // From here a row committed into the new table logs after the swap's record.
            swap.new.published.store(true, Ordering::Release);
        }
    }
}

/// Transaction `txn`'s commit failed: each of its swaps still waiting (no record appended)
/// is abandoned, and the old table is back in memory.
pub(super) fn abandon_waiting(inner: &Inner, txn: u64) {
    for swap in inner.truncate_swaps.lock().iter_mut() {
        if swap.txn == txn && swap.outcome == SwapOutcome::Waiting {
            swap.outcome = SwapOutcome::Abandoned;
            swap.new.dropped.store(true, Ordering::Release);
            swap.old.dropped.store(false, Ordering::Release);
        }
    }
}

impl Session {
    /// The commit of a transaction that truncates tables (see the module docs).
    ///
    /// The transaction's keys for a truncated table are locked in its new table before the
    /// new table can be found: otherwise another session could insert one of them there
    /// after the swap and before this commit's rows are applied, and the apply would then
    /// meet a duplicate it cannot take back.
    pub(super) fn commit_truncating(&mut self, txn: &mut PendingTxn) -> Result<()> {
        let truncated = std::mem::take(&mut txn.truncated);
        let mut locked: Vec<(TableHandle, crate::access::keys::Key)> = Vec::new();
        let result = self.commit_truncating_locked(txn, &truncated, &mut locked);
        for (table, key) in locked {
            table.unique.unlock(&key, self.id);
        }
        result
    }

    fn commit_truncating_locked(
        &mut self,
        txn: &mut PendingTxn,
        truncated: &[TableHandle],
        locked: &mut Vec<(TableHandle, crate::access::keys::Key)>,
    ) -> Result<()> {
        let stats = Arc::clone(&self.db.stats);
        // A commit is not stopped midway by a cancel or a timeout: no wait limits.
        let no_limits = super::WaitLimits::default();
        let requester = super::Requester {
            session: self.id,
            holding_others: true,
            limits: &no_limits,
        };
        let rows = &txn.rows;
        let mut lock_keys = |new: &TableHandle| -> Result<()> {
            for (_, key, _) in rows.iter().filter(|(t, _, _)| t.name == new.name) {
                new.unique.lock(key, &requester, &new.name, &stats, |k| {
                    new.keys.kind().decode(k)
                })?;
                locked.push((Arc::clone(new), *key));
            }
            Ok(())
        };
        let txn_id = self.next_txn_id();
        let pairs = begin_truncates(&self.db, txn_id, truncated, None, &mut lock_keys)?;
        #[cfg(test)]
        super::run_hook(&self.db.hooks.after_truncate_swap);
        let result = pairs
            .iter()
            .try_for_each(|(old, new)| self.move_rows(txn, old, new))
            .and_then(|()| self.commit_rows(&txn.row_refs(), Some(txn_id)));
        if result.is_ok() && self.db.wal.is_none() {
            // No log, so no record marked the swap logged: the commit point is here. (A
            // crash empties every table of an unlogged run anyway.) Until now a failure
            // gave every old table back whole, the earlier ones of several included.
            mark_logged(&self.db, txn_id);
        }
        abandon_waiting(&self.db, txn_id);
        result
    }

    /// Moves the transaction's rows for `old` onto `new` (same keys: the new table's
    /// generator goes on from the old one's).
    fn move_rows(
        &mut self,
        txn: &mut PendingTxn,
        old: &TableHandle,
        new: &TableHandle,
    ) -> Result<()> {
        self.check_insert(new, &[])?;
        for row in txn.rows.iter_mut().filter(|(t, _, _)| t.name == old.name) {
            row.0 = Arc::clone(new);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::access::keys::Key;
    use crate::db::race_tests::{keyed, open};
    use crate::db::{Database, Durability};
    use crate::error::Error;
    use crate::storage::MemStorage;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A fresh database (its own in-memory storage) with `durability`.
    fn open_with(durability: Durability) -> Database {
        open(&MemStorage::new(3), durability)
    }

    /// Another session inserts one of a truncating transaction's keys into the new table
    /// once the swap is logged (the table is published) and before the apply: it must wait
    /// for the commit and then find the key taken. (Before the keys were locked in the new table, it got in first, and the
    /// commit's apply met a duplicate and stopped the database.)
    #[test]
    fn a_key_of_a_truncating_commit_is_taken_in_the_new_table_from_the_swap_on() {
        let db = open_with(Durability::Sync);
        let table = db.create_table_spec(&keyed("t", false)).expect("create");
        let key = Key::from_i64(1);
        let mut committer = db.session();
        committer
            .insert_keyed(&table, &key, b"old")
            .expect("insert");
        committer.begin().expect("begin");
        committer.truncate_at_commit(&table).expect("truncate");
        committer
            .insert_keyed(&table, &key, b"new")
            .expect("insert");
        let (sent, received) = mpsc::channel();
        let other_db = db.clone();
        *db.inner.hooks.after_swap_logged.lock() = Some(Box::new(move || {
            std::thread::spawn(move || {
                let new = other_db.table("t").expect("the new table is live");
                let result = other_db.session().insert_keyed(&new, &key, b"other");
                let _ = sent.send(result);
            });
            // Long enough for the other insert to get in, were the key free.
            std::thread::sleep(Duration::from_millis(300));
        }));
        committer.commit().expect("the truncating commit");
        let other = received
            .recv_timeout(Duration::from_secs(10))
            .expect("the other insert ends once the commit is done");
        assert!(
            matches!(other, Err(Error::DuplicateKey { .. })),
            "the other insert: {other:?}"
        );
        let new = db.table("t").expect("table");
        assert_eq!(
            db.session().get(&new, &key).expect("get"),
            Some(b"new".to_vec())
        );
        assert_eq!(db.verify_table(&new).expect("verify").rows, 1);
    }

    /// A transaction that truncates two tables and fails at its commit (the second table
    /// was dropped meanwhile) must leave the first whole, with or without a log. Without
    /// a log it used to empty each table as it went, so the first was emptied by a
    /// transaction that never committed.
    #[test]
    fn a_failed_commit_truncating_two_tables_leaves_both_whole() {
        for durability in [Durability::None, Durability::Sync] {
            let db = open_with(durability);
            let first = db.create_table_spec(&keyed("a", false)).expect("create a");
            let second = db.create_table_spec(&keyed("b", false)).expect("create b");
            let mut session = db.session();
            for i in 1..=3 {
                let key = Key::from_i64(i);
                session.insert_keyed(&first, &key, b"a").expect("insert a");
                session.insert_keyed(&second, &key, b"b").expect("insert b");
            }
            session.begin().expect("begin");
            session.truncate_at_commit(&first).expect("truncate a");
            session.truncate_at_commit(&second).expect("truncate b");
            db.drop_table("b").expect("drop b");
            let commit = session.commit();
            assert!(
                matches!(commit, Err(Error::NoSuchTable(_))),
                "{durability:?}: the commit fails: {commit:?}"
            );
            let live = db.table("a").expect("a is live");
            assert_eq!(
                db.verify_table(&live).expect("verify").rows,
                3,
                "{durability:?}: the failed transaction emptied a"
            );
            // And a later TRUNCATE of it still works.
            let mut again = db.session();
            again.begin().expect("begin");
            again.truncate_at_commit(&live).expect("truncate a");
            again.commit().expect("commit");
            let live = db.table("a").expect("a is live");
            assert_eq!(db.verify_table(&live).expect("verify").rows, 0);
        }
    }
}
