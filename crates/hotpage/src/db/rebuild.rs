//! Rebuilding a table under a new definition with its rows (SQL's `ALTER TABLE … ADD
//! PRIMARY KEY` on a table that holds rows: a keyed table is a different layout, so the
//! rows move into a new table).
//!
//! It is a pending truncation (see `truncate`) whose new table has another spec and whose
//! transaction carries the rows: one checkpoint writes the new table as pending on the
//! transaction (the old one live), memory swaps them, and the rows are committed under that
//! transaction's id. After a crash, recovery keeps the new table (with all its rows, redone
//! from the commit record) exactly when the log holds that commit, and the old table whole
//! otherwise. No second mechanism, and no catalog change: a pending truncation's two
//! tables already carried their own specs.
//!
//! The caller read the rows from the old table, and nothing locks a table against other
//! sessions' inserts. So once the old table is out of memory (no new insert can reach it)
//! and every commit that may still be applying to it is done (`wait_for_appliers`: a
//! commit sets its marker before it checks that its tables are live), its rows are counted
//! again: a count that differs from the rows given means another session committed in
//! between, and the rebuild is abandoned ([`Error::TableBusy`]).

use super::{Session, TableHandle, TableSpec, truncate, validate_spec};
use crate::access::keys::Key;
use crate::error::{Error, Result};
use std::collections::HashSet;
use std::sync::Arc;

impl Session {
    /// Replaces the table `old` with a new one made from `spec` (same name; it must take
    /// supplied keys) holding exactly `rows`, atomically, crashes included: afterwards, and
    /// after any crash, the database holds either the old table with all its rows or the
    /// new one with all of `rows`. `rows` must be every row of `old`, read from it: if the
    /// table gained or lost rows meanwhile the rebuild is refused ([`Error::TableBusy`]).
    /// A duplicate key is [`Error::DuplicateKey`], a row too large [`Error::RowTooLarge`];
    /// on any error nothing has changed. Outside a transaction only. Returns the new table.
    pub fn rebuild_table(
        &mut self,
        old: &TableHandle,
        spec: &TableSpec<'_>,
        rows: &[(Key, Vec<u8>)],
    ) -> Result<TableHandle> {
        self.check_rebuild(old, spec, rows)?;
        let session = self.id;
        // A commit is not stopped midway by a cancel or a timeout: no wait limits.
        let no_limits = super::WaitLimits::default();
        let requester = super::Requester {
            session,
            holding_others: true,
            limits: &no_limits,
        };
        let stats = Arc::clone(&self.db.stats);
        // Every key is locked in the new table before anyone can find it: a session
        // inserting into it must not prove a key unique that this commit is about to apply.
        let mut locked: Option<TableHandle> = None;
        let mut lock_keys = |new: &TableHandle| {
            for (key, _) in rows {
                new.unique.lock(key, &requester, &new.name, &stats, |k| {
                    new.keys.kind().decode(k)
                })?;
            }
            locked = Some(Arc::clone(new));
            Ok(())
        };
        let result = if self.db.wal.is_none() {
            // No log: a crash empties every table anyway, so the swap is durable at once;
            // the count is made inside it, after the old table is out of reach and every
            // commit applying to it is done.
            let expected = Some(rows.len());
            super::truncate_locked(&self.db, spec.name, Some(spec), expected, &mut lock_keys)
                .and_then(|new| self.commit_rebuilt(&new, rows, None).map(|()| new))
        } else {
            self.rebuild_logged(old, spec, rows, &mut lock_keys)
        };
        // Set once every key was locked (a failed lock gives the new table up unseen).
        if let Some(new) = locked {
            for (key, _) in rows {
                new.unique.unlock(key, session);
            }
        }
        result
    }

    /// [`Session::rebuild_table`] in a logged database: a pending truncation whose
    /// transaction carries the rows.
    fn rebuild_logged(
        &mut self,
        old: &TableHandle,
        spec: &TableSpec<'_>,
        rows: &[(Key, Vec<u8>)],
        lock_keys: &mut dyn FnMut(&TableHandle) -> Result<()>,
    ) -> Result<TableHandle> {
        let txn = self.next_txn_id();
        let pairs = truncate::begin_truncates(
            &self.db,
            txn,
            std::slice::from_ref(old),
            Some(spec),
            lock_keys,
        )?;
        let new = Arc::clone(&pairs[0].1);
        // A commit that saw the old table live may still be applying its rows to it:
        // wait for it, so that the count below sees them (or refuses the rebuild).
        super::wait_for_appliers(&self.db, Some(&self.applying));
        let result = self
            .check_rows_unchanged(old, rows.len())
            .and_then(|()| self.commit_rebuilt(&new, rows, Some(txn)));
        truncate::abandon_waiting(&self.db, txn);
        result.map(|()| new)
    }

    /// Refuses a rebuild that could not commit whole: checked before anything is made.
    fn check_rebuild(
        &self,
        old: &TableHandle,
        spec: &TableSpec<'_>,
        rows: &[(Key, Vec<u8>)],
    ) -> Result<()> {
        validate_spec(spec)?;
        if self.db.read_only {
            return Err(Error::ReadOnly("rebuilding a table".into()));
        }
        if self.txn.is_some() {
            return Err(Error::InvalidOption(
                "rebuild_table inside a transaction".into(),
            ));
        }
        if spec.name != old.name || !spec.user_keys {
            return Err(Error::InvalidOption(format!(
                "a rebuild of table {} needs a spec of the same name that takes supplied keys",
                old.name
            )));
        }
        let max = spec.layout.row_bytes_max(self.db.pool.page_size());
        let mut bytes = 0usize;
        let mut keys = HashSet::with_capacity(rows.len());
        for (key, row) in rows {
            if row.len() > max {
                return Err(Error::RowTooLarge {
                    len: row.len(),
                    max,
                });
            }
            if !keys.insert(*key) {
                return Err(Error::DuplicateKey {
                    table: old.name.clone(),
                    key: spec.kind.decode(key),
                });
            }
            // Held as a transaction holds rows with supplied keys, and their key locks.
            bytes += super::staged::row_charge(spec.user_keys, key, row);
        }
        let bytes_max = self.db.options.txn_memory_bytes_max;
        if bytes > bytes_max {
            return Err(Error::TransactionMemory {
                bytes_max,
                own_bytes: bytes,
            });
        }
        Ok(())
    }

    /// [`Error::TableBusy`] unless `old` (out of memory now) holds exactly `expected` rows.
    fn check_rows_unchanged(&self, old: &TableHandle, expected: usize) -> Result<()> {
        let mut count = 0usize;
        self.scan(old, None, |_, _| {
            count += 1;
            true
        })?;
        if count != expected {
            return Err(Error::TableBusy(old.name.clone()));
        }
        Ok(())
    }

    /// Commits `rows` into the new table (under the swap's transaction id, if logged).
    fn commit_rebuilt(
        &mut self,
        new: &TableHandle,
        rows: &[(Key, Vec<u8>)],
        txn: Option<u64>,
    ) -> Result<()> {
        self.check_insert(new, &[])?;
        let refs: Vec<(&TableHandle, Key, &[u8])> = rows
            .iter()
            .map(|(key, row)| (new, *key, row.as_slice()))
            .collect();
        self.commit_rows(&refs, txn)
    }
}

// Its race with a commit into the old table is tested in `db::race_tests`.
