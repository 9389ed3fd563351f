//! The memory that open transactions' staged rows take, bounded database-wide.
//!
//! A transaction's rows wait in its session until COMMIT (deferred update: docs/design.md,
//! "Transactions"), so an open transaction holds its rows in memory. All open transactions
//! together may hold at most [`Options::txn_memory_bytes_max`](super::Options): a row that
//! would pass it is refused at insert ([`Error::TransactionMemory`]), never at commit, and
//! the transaction stays open without it. The budget is the database's, not each
//! transaction's, so that memory stays bounded however many sessions are open, while one
//! bulk load (`pgbench -i`, a long COPY) may use all of it.
//!
//! A row is charged what it costs in memory, not only its key and bytes: its entry in the
//! transaction's row list, its own allocation, and, for a supplied key, the key's entries
//! in the duplicate set, the held-key list and the table's key locks. Vectors and hash
//! tables grow by doubling, and the commit takes one more list of references to the rows,
//! so each entry is counted with room for that. `tests/txn_memory.rs` measures what a
//! transaction at the limit really allocates, with a counting allocator, and fails if the
//! charge falls short of it.

use super::TableHandle;
use crate::access::keys::{KEY_BYTES_MAX, Key};
use crate::error::{Error, Result};
use std::mem::size_of;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What the allocator adds to each allocation (its header and rounding), counted once per
/// allocation a staged row makes.
const ALLOCATION_BYTES: usize = 16;

/// Memory a staged row costs beyond its key and row bytes: its entry in the row list with
/// room for the list's doubling, its entry in the list of references the commit builds,
/// and its row's own allocation.
pub const STAGED_ROW_OVERHEAD_BYTES: usize = 2 * size_of::<(TableHandle, Key, Vec<u8>)>()
    + size_of::<(&TableHandle, Key, &[u8])>()
    + ALLOCATION_BYTES;

/// What a supplied (caller-given) key costs on top of [`STAGED_ROW_OVERHEAD_BYTES`]: its
/// entry in the transaction's duplicate set and its copy of the key, its held-key entry,
/// and its entry in the table's key locks, each with room for its table's doubling.
pub const SUPPLIED_KEY_OVERHEAD_BYTES: usize = 2
    * (size_of::<(usize, Vec<u8>)>() + size_of::<(TableHandle, Key)>() + size_of::<(Key, u64)>())
    + KEY_BYTES_MAX
    + ALLOCATION_BYTES;

/// The bytes all open transactions' staged rows are charged, together.
#[derive(Default)]
pub(super) struct StagedMemory {
    bytes: AtomicUsize,
}

/// One transaction's share of [`StagedMemory`], given back when it ends: committed, rolled
/// back, or dropped with its session.
pub(super) struct Charge {
    memory: Arc<StagedMemory>,
    bytes: usize,
}

impl Charge {
    pub(super) fn new(memory: &Arc<StagedMemory>) -> Charge {
        Charge {
            memory: Arc::clone(memory),
            bytes: 0,
        }
    }

    /// Charges `bytes` more to this transaction, unless all open transactions together
    /// would then hold more than `bytes_max`.
    pub(super) fn add(&mut self, bytes: usize, bytes_max: usize) -> Result<()> {
        let before = self.memory.bytes.fetch_add(bytes, Ordering::AcqRel);
        if before.saturating_add(bytes) > bytes_max {
            self.memory.bytes.fetch_sub(bytes, Ordering::AcqRel);
            return Err(Error::TransactionMemory {
                bytes_max,
                own_bytes: self.bytes + bytes,
            });
        }
        self.bytes += bytes;
        Ok(())
    }

    /// Gives back `bytes` of this transaction's charge (rows it dropped: a TRUNCATE of
    /// their table inside the transaction).
    pub(super) fn give_back(&mut self, bytes: usize) {
        debug_assert!(bytes <= self.bytes, "gave back more than was charged");
        let bytes = bytes.min(self.bytes);
        self.memory.bytes.fetch_sub(bytes, Ordering::AcqRel);
        self.bytes -= bytes;
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        let before = self.memory.bytes.fetch_sub(self.bytes, Ordering::AcqRel);
        debug_assert!(
            before >= self.bytes,
            "staged memory gave back more than was charged"
        );
    }
}

/// What staging `row` under `key` costs in a table that takes supplied keys (`user_keys`)
/// or not. A supplied key is proved unique, so the transaction tracks it too
/// (`insert_unique`).
pub(super) fn row_charge(user_keys: bool, key: &Key, row: &[u8]) -> usize {
    let supplied_bytes = if user_keys {
        SUPPLIED_KEY_OVERHEAD_BYTES
    } else {
        0
    };
    key.as_bytes().len() + row.len() + STAGED_ROW_OVERHEAD_BYTES + supplied_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_transactions_share_one_budget_and_give_it_back_when_they_end() {
        let memory = Arc::new(StagedMemory::default());
        let mut first = Charge::new(&memory);
        let mut second = Charge::new(&memory);
        first.add(600, 1000).expect("within the budget");
        match second.add(401, 1000) {
            Err(Error::TransactionMemory {
                bytes_max: 1000,
                own_bytes: 401,
            }) => {}
            other => panic!("past the shared budget: {other:?}"),
        }
        second.add(400, 1000).expect("exactly at the budget");
        drop(first);
        second
            .add(600, 1000)
            .expect("the first transaction's share came back");
        second.give_back(500);
        assert_eq!(memory.bytes.load(Ordering::Acquire), 500);
        drop(second);
        assert_eq!(memory.bytes.load(Ordering::Acquire), 0);
    }
}
