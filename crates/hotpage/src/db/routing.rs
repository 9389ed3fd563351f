//! Which tree a row of a table goes to, and the table-level reads and checks that cover
//! every tree (see `crate::layout`). A child module of `db` so that these additions stay
//! out of `db.rs`.
//!
//! Sessions (`Session::apply`) and recovery (`recovery::reapply_commits`) both route with
//! [`Table::tree_for`], so a re-applied row lands in the partition its session used. A
//! memory table has no tree: its rows go to its `MemTable` (see `crate::memtable`).

use super::Table;
use crate::btree::{BTree, Inserted, TreeStats};
use crate::error::{Error, Result};
use crate::layout::{self, FlowGate, Layout};
use crate::stats::Stats;
use std::sync::Arc;

/// The admission gate a table of `layout` needs, if any.
pub(super) fn flow_gate(layout: Layout, stats: &Arc<Stats>) -> Option<FlowGate> {
    match layout {
        Layout::FlowControl { sessions } => Some(FlowGate::new(sessions, Arc::clone(stats))),
        Layout::Clustered | Layout::HashPartitioned { .. } | Layout::Memory => None,
    }
}

impl Table {
    /// The tree that holds (or will hold) the row with encoded key `key`: partition
    /// `id mod N` of a hash-partitioned table, the only tree otherwise. A key that is not
    /// an 8-byte integer in a partitioned table is `InvalidOption`, and so is any key of a
    /// memory table (it has no tree).
    pub fn tree_for(&self, key: &[u8]) -> Result<&BTree> {
        match self.layout {
            Layout::HashPartitioned { partitions } => {
                match layout::partition_of(key, partitions)? {
                    0 => Ok(&self.tree),
                    p => Ok(self.extra_trees.get(p - 1).unwrap_or(&self.tree)),
                }
            }
            Layout::Clustered | Layout::FlowControl { .. } => Ok(&self.tree),
            Layout::Memory => Err(Error::InvalidOption(format!(
                "table {} is a memory table: it has no B+tree",
                self.name
            ))),
        }
    }

    /// Every tree of the table, partition 0 first (none for a layout without trees, whose
    /// `tree` is a placeholder: a memory table).
    pub fn trees(&self) -> impl Iterator<Item = &BTree> {
        std::iter::once(&self.tree)
            .filter(|_| self.layout.tree_count() > 0)
            .chain(self.extra_trees.iter())
    }

    /// The committed row under `key`.
    pub(super) fn get_row(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match &self.memory {
            Some(memory) => memory.get(key),
            None => self.tree_for(key)?.get(key),
        }
    }

    /// Recovery's insert of a committed row (if absent): where a session would have put it,
    /// without the flow-control gate (recovery is alone).
    pub(super) fn reapply_row(&self, key: &[u8], row: &[u8]) -> Result<Inserted> {
        match &self.memory {
            Some(memory) => memory.insert(key, row),
            None => self.tree_for(key)?.insert(key, row),
        }
    }

    /// Inserts one committed row where it belongs. In a flow-controlled table an insert
    /// whose leaf is the rightmost one (for identity keys: all of them) first passes the
    /// gate; one whose row fits there without a split is admitted before those that split.
    pub(super) fn insert_row(&self, key: &[u8], row: &[u8]) -> Result<Inserted> {
        if let Some(memory) = &self.memory {
            return memory.insert(key, row);
        }
        let tree = self.tree_for(key)?;
        if let Some(gate) = &self.flow {
            let probe = tree.probe_insert(key, row.len())?;
            if probe.rightmost {
                let _permit = gate.enter(probe.fits);
                return tree.insert(key, row);
            }
        }
        tree.insert(key, row)
    }

    /// Visits committed rows in key order from `from`: one tree's scan, or a merge of the
    /// partitions' scans.
    pub(super) fn scan(
        &self,
        from: Option<&[u8]>,
        visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        if let Some(memory) = &self.memory {
            return memory.scan(from, visit);
        }
        if self.extra_trees.is_empty() {
            return self.tree.scan(from, visit);
        }
        let trees: Vec<&BTree> = self.trees().collect();
        layout::merge_scan(&trees, from, visit)
    }

    /// Verifies every tree and sums their shapes: rows, pages per level and out-of-order
    /// leaves add up, levels is the tallest partition's, leaf fill is the average over all
    /// leaves. A memory table's check is its own (`MemTable::verify`): rows, no pages.
    pub(super) fn verify(&self) -> Result<TreeStats> {
        if let Some(memory) = &self.memory {
            return memory.verify();
        }
        let mut total = TreeStats::default();
        let mut fill_sum = 0.0;
        for tree in self.trees() {
            let shape = tree.verify()?;
            let leaves = shape.pages_per_level.first().copied().unwrap_or(0);
            fill_sum += shape.leaf_fill_pct * leaves as f64;
            total.levels = total.levels.max(shape.levels);
            if total.pages_per_level.len() < shape.pages_per_level.len() {
                total.pages_per_level.resize(shape.pages_per_level.len(), 0);
            }
            for (sum, pages) in total.pages_per_level.iter_mut().zip(&shape.pages_per_level) {
                *sum += pages;
            }
            total.rows += shape.rows;
            total.out_of_order_leaves += shape.out_of_order_leaves;
        }
        let leaves = total.pages_per_level.first().copied().unwrap_or(0);
        total.leaf_fill_pct = if leaves == 0 {
            0.0
        } else {
            fill_sum / leaves as f64
        };
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use crate::io::MemStorage;
    use crate::layout::Layout;
    use crate::{Database, Key, KeyKind, Options};
    use std::path::Path;

    fn small() -> Options {
        Options {
            page_size: 4096,
            pool_bytes: 4 << 20,
            ..Options::default()
        }
    }

    #[test]
    fn partitions_get_id_mod_n_and_scans_merge_them_in_key_order() {
        let mem = MemStorage::new(3);
        let db = Database::open_with_storage(mem, Path::new("m"), small()).expect("open");
        let t = db
            .create_table_with_layout(
                "h",
                "hash-partition",
                KeyKind::Identity { start: 1, step: 1 },
                Layout::HashPartitioned { partitions: 4 },
            )
            .expect("create");
        let mut s = db.session();
        let keys: Vec<Key> = (0..3000u32)
            .map(|i| s.insert(&t, &i.to_le_bytes()).expect("insert"))
            .collect();
        // Each partition holds exactly its residue class.
        for (p, tree) in t.trees().enumerate() {
            let mut n = 0u64;
            tree.scan(None, |k, _| {
                let id = Key::from_bytes(k).expect("key").to_i64().expect("int");
                assert_eq!(id.rem_euclid(4) as usize, p);
                n += 1;
                true
            })
            .expect("scan");
            assert_eq!(n, 750);
        }
        let mut seen = Vec::new();
        s.scan(&t, None, |k, _| {
            seen.push(Key::from_bytes(k).expect("key"));
            true
        })
        .expect("scan");
        assert_eq!(seen, keys);
        // From the middle, and stopping early.
        let mut seen = Vec::new();
        s.scan(&t, Some(&keys[1001]), |k, _| {
            seen.push(Key::from_bytes(k).expect("key"));
            seen.len() < 600
        })
        .expect("scan");
        assert_eq!(seen, keys[1001..1601].to_vec());
        assert_eq!(
            s.get(&t, &keys[77]).expect("get"),
            Some(77u32.to_le_bytes().to_vec())
        );
        let shape = db.verify_table(&t).expect("verify");
        assert_eq!(shape.rows, 3000);
        let pages = db.table_pages(&t).expect("pages").len() as u64;
        assert_eq!(pages, shape.pages());
        assert_eq!(db.tables()[0].roots.len(), 4);
    }

    #[test]
    fn flow_control_inserts_everything_and_counts_no_wait_alone() {
        let mem = MemStorage::new(4);
        let db = Database::open_with_storage(mem, Path::new("m"), small()).expect("open");
        let t = db
            .create_table_with_layout(
                "f",
                "identity-flow-control",
                KeyKind::Identity { start: 1, step: 1 },
                Layout::FlowControl { sessions: 1 },
            )
            .expect("create");
        let mut s = db.session();
        for i in 0..2000u32 {
            s.insert(&t, &i.to_le_bytes()).expect("insert");
        }
        assert_eq!(db.verify_table(&t).expect("verify").rows, 2000);
        // One session never waits at a gate of one.
        let waits = db
            .stats()
            .wait(crate::stats::WaitType::BtreeInsertFlowControl);
        assert_eq!(waits.count, 0);
        assert_eq!(t.layout(), Layout::FlowControl { sessions: 1 });
    }
}
