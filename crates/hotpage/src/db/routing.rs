//! Which tree a row of a table goes to, and the table-level reads and checks that cover
//! every tree (see `crate::access::layout`). A child module of `db` so that these additions stay
//! out of `db.rs`.
//!
//! Sessions (`Session::apply`) and recovery (`recovery::reapply_commits`) both route with
//! [`Table::tree_for`], so a re-applied row lands in the partition its session used. A
//! memory table has no tree: its rows go to its `MemTable` (see `crate::access::memtable`).

use super::{Table, TableHandle};
use crate::access::btree::BTree;
use crate::access::heap::{Heap, HeapTarget};
use crate::access::keys::Key;
use crate::access::layout::{self, FlowGate, Layout};
use crate::access::logger::WalLogger;
use crate::access::{Inserted, TreeStats};
use crate::buffer::{BufferPool, Placement};
use crate::error::{Error, Result};
use crate::format::{PageId, UNLOGGED_FILE, data_file_name};
use crate::log::{LogReader, Wal};
use crate::recovery::{self, RedoOutcome};
use crate::stats::Stats;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The admission gate a table of `layout` needs, if any.
pub(super) fn flow_gate(layout: Layout, stats: &Arc<Stats>) -> Option<FlowGate> {
    match layout {
        Layout::FlowControl { sessions } => Some(FlowGate::new(sessions, Arc::clone(stats))),
        _ => None,
    }
}

/// Where a table's pages go: an unlogged table's all in the unlogged file (so that a crash
/// can reset them by re-creating that one file), any other's over the shared data files.
pub(super) fn placement(unlogged: bool) -> Placement {
    if unlogged {
        Placement::In(UNLOGGED_FILE)
    } else {
        Placement::Spread
    }
}

/// New, empty storage for a table of `layout`, its pages placed by `placement`: its
/// B+trees and its heap.
pub(super) fn new_storage(
    pool: &Arc<BufferPool>,
    stats: &Arc<Stats>,
    layout: Layout,
    placement: Placement,
) -> Result<(Vec<BTree>, Option<Heap>)> {
    let trees = (0..layout.tree_count())
        .map(|_| BTree::create(Arc::clone(pool), placement))
        .collect::<Result<Vec<_>>>()?;
    let heap = match layout.chain_count() {
        0 => None,
        chains => Some(Heap::create(
            Arc::clone(pool),
            chains as u32,
            Arc::clone(stats),
            placement,
        )?),
    };
    Ok((trees, heap))
}

/// Root pages in catalog order: the trees' roots, then the heap chains' heads.
pub(super) fn roots_of(trees: &[BTree], heap: Option<&Heap>) -> Vec<PageId> {
    trees
        .iter()
        .map(BTree::root)
        .chain(heap.iter().flat_map(|h| h.heads().iter().copied()))
        .collect()
}

/// Recovery, pass 2: re-applies the rows of commits in `[from, until)` that are not in
/// their tables. B+trees answer "is it there?" by key. A heap has no such lookup, so for
/// heap tables the commits' keys are collected first (memory: about 40 bytes per heap row
/// in the log since the checkpoint's logical point) and the heap's pages are read once to strike out those
/// present; a heap's index gets back entries whose row reached the heap but not the index.
pub(super) fn reapply(
    reader: &LogReader<'_>,
    redo: &RedoOutcome,
    tables: &[TableHandle],
) -> Result<u64> {
    // Ordered by table: recovery touches (and allocates) pages in the same order every
    // time, so a crash test's seed replays exactly.
    let mut absent: BTreeMap<usize, HashSet<Key>> = BTreeMap::new();
    let mut repaired = 0u64;
    if tables.iter().any(|t| t.heap.is_some()) {
        absent = recovery::commit_keys(reader, redo, |table| {
            tables.get(table).is_some_and(|t| t.heap.is_some())
        })?;
        for (table_id, keys) in absent.iter_mut() {
            let table = &tables[*table_id];
            let Some(heap) = &table.heap else { continue };
            heap.remove_present(keys, |key, page_id| {
                if let Some(index) = table.trees.first()
                    && index.insert(key, &pointer_to(page_id))? == Inserted::Yes
                {
                    repaired += 1;
                }
                Ok(())
            })?;
        }
    }
    let mut targets: BTreeMap<usize, HeapTarget> = BTreeMap::new();
    let reinserted = recovery::reapply_commits(reader, redo, |table_id, key, row| {
        let Some(table) = tables.get(table_id) else {
            return Ok(None);
        };
        if table.heap.is_some() {
            // Present unless the page walk above left it in the set.
            let missing = absent
                .get_mut(&table_id)
                .is_some_and(|keys| Key::from_bytes(key).is_ok_and(|key| keys.remove(&key)));
            if !missing {
                return Ok(Some(Inserted::Duplicate));
            }
        }
        table
            .insert_row(key, row, targets.entry(table_id).or_default())
            .map(Some)
    })?;
    Ok(reinserted + repaired)
}

impl Table {
    /// The tree that holds (or will hold) the row with encoded key `key`: partition
    /// `id mod N` of a hash-partitioned table, the only tree otherwise (a heap's index).
    /// A key that is not an 8-byte integer in a partitioned table is `InvalidOption`; a
    /// plain heap and a memory table have no tree (`InvalidOption`).
    pub fn tree_for(&self, key: &[u8]) -> Result<&BTree> {
        let tree = match self.layout {
            Layout::HashPartitioned { partitions } => {
                self.trees.get(layout::partition_of(key, partitions)?)
            }
            _ => self.trees.first(),
        };
        tree.ok_or_else(|| {
            Error::InvalidOption(match self.layout {
                Layout::Memory => {
                    format!("table {} is a memory table: it has no B+tree", self.name)
                }
                _ => format!("table {} is a heap without an index", self.name),
            })
        })
    }

    /// Every tree of the table, partition 0 first (none for a plain heap).
    pub fn trees(&self) -> impl Iterator<Item = &BTree> {
        self.trees.iter()
    }

    /// The table's heap, if it is a heap table.
    pub fn heap(&self) -> Option<&Heap> {
        self.heap.as_ref()
    }

    /// Inserts one committed row where it belongs. In a flow-controlled table an insert
    /// whose leaf is the rightmost one (for identity keys: all of them) first passes the
    /// gate; one whose row fits there without a split is admitted before those that split.
    /// A heap row goes where `target` and the free-space map say, and a heap's index gets
    /// an entry pointing to its page.
    pub(super) fn insert_row(
        &self,
        key: &[u8],
        row: &[u8],
        target: &mut HeapTarget,
    ) -> Result<Inserted> {
        if let Some(memory) = &self.memory {
            return memory.insert(key, row);
        }
        if let Some(heap) = &self.heap {
            let (inserted, page_id) = heap.insert(target, key, row)?;
            if inserted == Inserted::Yes
                && let Some(index) = self.trees.first()
            {
                return index.insert(key, &pointer_to(page_id));
            }
            return Ok(inserted);
        }
        self.insert_into_tree(key, row)
    }

    /// Whether a durable commit's rows of this table go to the grouped apply
    /// (`group_apply`): rows of a B+tree whose generated keys ascend, which an apply in
    /// key order keeps full. Random keys gain nothing from the order and lose the
    /// committers' parallel applies (guid at 64 sessions: 0.82–0.86× the rows/s). A heap
    /// places rows by its session's target page, and a memory table has no pages.
    pub(super) fn applies_in_key_order(&self) -> bool {
        self.heap.is_none()
            && self.memory.is_none()
            && !self.unlogged
            && !self.user_keys
            && self.keys.kind().ascends()
    }

    /// [`Table::insert_row`] for a table that is neither a heap nor a memory table.
    pub(super) fn insert_into_tree(&self, key: &[u8], row: &[u8]) -> Result<Inserted> {
        debug_assert!(self.heap.is_none() && self.memory.is_none());
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

    /// The committed row stored under `key`: through the tree, or the heap's index and
    /// then the heap page it names, or (a plain heap) by reading heap pages.
    pub(super) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(memory) = &self.memory {
            return memory.get(key);
        }
        match (&self.heap, self.trees.first()) {
            (Some(heap), Some(index)) => match index.get(key)? {
                Some(pointer) => fetch_pointed(heap, key, &pointer).map(Some),
                None => Ok(None),
            },
            (Some(heap), None) => heap.get(key),
            (None, _) => self.tree_for(key)?.get(key),
        }
    }

    /// Visits committed rows from `from`: one tree's scan, a merge of the partitions'
    /// scans, a heap's index in key order (each row read from its heap page), or a plain
    /// heap in physical order.
    pub(super) fn scan(
        &self,
        from: Option<&[u8]>,
        mut visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        // Rows are never deleted, and a row is counted only after it is applied, so a scan
        // of the whole table meets at least the rows counted before it starts. One that
        // meets fewer read pages that lost rows while every check of each page passed: an
        // older copy of a page (a lost or misdirected write), or a dropped link. Said, not
        // returned as a short answer.
        let counted = self.rows.load(Ordering::Acquire);
        let (mut met, mut stopped) = (0u64, false);
        self.scan_rows(from, |key, row| {
            met += 1;
            stopped = !visit(key, row);
            !stopped
        })?;
        if from.is_none() && !stopped && met < counted {
            return Err(Error::RowsMissing {
                table: self.name.clone(),
                counted,
                found: met,
            });
        }
        Ok(())
    }

    /// `scan` without the count's check.
    fn scan_rows(
        &self,
        from: Option<&[u8]>,
        visit: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        if let Some(memory) = &self.memory {
            return memory.scan(from, visit);
        }
        match (&self.heap, self.trees.as_slice()) {
            (Some(heap), [index]) => scan_through_index(heap, index, from, visit),
            (Some(heap), _) => heap.scan(from, visit),
            (None, [tree]) => tree.scan(from, visit),
            (None, trees) => {
                let trees: Vec<&BTree> = trees.iter().collect();
                layout::merge_scan(&trees, from, visit)
            }
        }
    }

    /// Verifies every tree and sums their shapes: rows, pages per level and out-of-order
    /// leaves add up, levels is the tallest partition's, leaf fill is the average over all
    /// leaves. For a heap: the heap's pages and fill (and, with an index, that the index
    /// has one entry per heap row, each naming the page that holds it). A memory table's
    /// check is its own (`MemTable::verify`): rows, no pages.
    pub(super) fn verify(&self) -> Result<TreeStats> {
        if let Some(memory) = &self.memory {
            return memory.verify();
        }
        if let Some(heap) = &self.heap {
            let shape = heap.verify()?;
            if let Some(index) = self.trees.first() {
                let index_shape = index.verify()?;
                if index_shape.rows != shape.rows {
                    return Err(Error::CorruptPage {
                        file: data_file_name(index.root().file()),
                        page_id: index.root(),
                        reason: format!(
                            "the index of {} has {} entries, its heap {} rows",
                            self.name, index_shape.rows, shape.rows
                        ),
                    });
                }
                // Every entry must name a heap page that holds its key.
                scan_through_index(heap, index, None, |_, _| true)?;
            }
            return Ok(shape);
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

/// Visits the rows of a heap in its index's key order from `from`, reading each from the
/// heap page its entry names, until `visit` returns false. An entry whose page lacks its
/// key is corruption.
fn scan_through_index(
    heap: &Heap,
    index: &BTree,
    from: Option<&[u8]>,
    mut visit: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<()> {
    let mut failed = None;
    index.scan(from, |key, pointer| {
        match fetch_pointed(heap, key, pointer) {
            Ok(row) => visit(key, &row),
            Err(error) => {
                failed = Some(error);
                false
            }
        }
    })?;
    failed.map_or(Ok(()), Err)
}

/// The row under `key` on the heap page an index entry (`pointer`) names; the page lacking
/// the key is corruption.
fn fetch_pointed(heap: &Heap, key: &[u8], pointer: &[u8]) -> Result<Vec<u8>> {
    let page_id = page_pointer(pointer)?;
    heap.fetch(page_id, key)?.ok_or_else(|| Error::CorruptPage {
        file: data_file_name(page_id.file()),
        page_id,
        reason: format!("an index entry names this page, which lacks key {key:02x?}"),
    })
}

/// An index entry pointing to heap page `page_id`: the id's stored u64, little-endian.
fn pointer_to(page_id: PageId) -> [u8; 8] {
    page_id.to_raw().to_le_bytes()
}

/// The heap page an index entry points to (see [`pointer_to`]).
fn page_pointer(pointer: &[u8]) -> Result<PageId> {
    let bytes: [u8; 8] = pointer.try_into().map_err(|_| Error::CorruptPage {
        file: "index".into(),
        page_id: PageId::new(0, 0),
        reason: format!(
            "an index entry of {} bytes, not an 8-byte page pointer",
            pointer.len()
        ),
    })?;
    Ok(PageId::from_raw(u64::from_le_bytes(bytes)))
}

/// A table's trees and heap with their page loggers: none for an unlogged table or a
/// database without a log. The trees' leaf inserts are not logged (their rows are in the
/// commit records, which recovery re-applies by key); a heap logs every insert, since a
/// heap row's place is physical (see `WalLogger`).
pub(super) fn with_loggers(
    wal: Option<&Arc<Wal>>,
    redo_lsn: &Arc<AtomicU64>,
    unlogged: bool,
    trees: Vec<BTree>,
    heap: Option<Heap>,
) -> (Vec<BTree>, Option<Heap>) {
    let Some(wal) = wal.filter(|_| !unlogged) else {
        return (trees, heap);
    };
    let tree_logger = Arc::new(WalLogger::for_table_trees(
        Arc::clone(wal),
        Arc::clone(redo_lsn),
    ));
    let trees = trees
        .into_iter()
        .map(|tree| tree.with_logger(Arc::clone(&tree_logger) as Arc<_>))
        .collect();
    let heap = heap.map(|heap| {
        heap.with_logger(Arc::new(WalLogger::new(
            Arc::clone(wal),
            Arc::clone(redo_lsn),
        )))
    });
    (trees, heap)
}

#[cfg(test)]
mod tests {
    use crate::access::layout::Layout;
    use crate::storage::MemStorage;
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

    /// A heap that grows after a checkpoint logs its new pages as small heap-link records
    /// (the tail already has a full image). After a power loss that drops every unsynced
    /// data-file write, redo must rebuild each new page and its link, or the rows on it
    /// are lost.
    #[test]
    fn heap_pages_linked_after_a_checkpoint_survive_a_power_loss() {
        use crate::log::WalOptions;
        use crate::storage::CrashMode;
        use std::time::Duration;
        let options = Options {
            page_size: 4096,
            pool_bytes: 4 << 20,
            wal: WalOptions {
                segment_bytes: 1 << 20,
                buffer_bytes: 1 << 20,
                async_flush_interval: Duration::from_millis(1),
            },
            checkpoint_log_bytes: u64::MAX,
            checkpoint_interval: Duration::from_secs(3600),
            ..Options::default()
        };
        let mut mem = MemStorage::new(21);
        let mut rows = Vec::new();
        {
            let db = Database::open_with_storage(mem.clone(), Path::new("m"), options.clone())
                .expect("open");
            let t = db
                .create_table_with_layout(
                    "h",
                    "heap",
                    KeyKind::Identity { start: 1, step: 1 },
                    Layout::Heap { chains: 1 },
                )
                .expect("create");
            let mut s = db.session();
            for i in 0..200u32 {
                rows.push(s.insert(&t, &[i as u8; 300]).expect("insert"));
            }
            db.checkpoint().expect("checkpoint");
            for i in 0..400u32 {
                rows.push(s.insert(&t, &[i as u8; 300]).expect("insert"));
            }
            let log = db.log_summary().expect("log");
            let links = log
                .kinds
                .iter()
                .find(|k| k.kind == "heap-link")
                .map_or(0, |k| k.records_since_checkpoint);
            assert!(
                links >= 10,
                "only {links} heap-link records: {:?}",
                log.kinds
            );
            drop(s);
            drop(t);
            mem = mem.reboot(CrashMode::DropAll, 22).expect("reboot");
        }
        let db = Database::open_with_storage(mem, Path::new("m"), options).expect("reopen");
        let t = db.table("h").expect("table");
        assert_eq!(db.verify_table(&t).expect("verify").rows, 600);
        // Redo alone rebuilt the chain: no page was left out of it (a lost link orphans
        // every page after it) and the re-apply pass, which would put an orphaned page's
        // rows on new pages, had at most the last row (its page insert may not have been
        // durable when the power went) to do.
        let heap_pages = t.heap().expect("heap").pages().expect("pages").len() as u64;
        assert_eq!(heap_pages + 1, db.pool_info().file_pages, "orphaned pages");
        let report = db.recovery_report();
        assert!(report.rows_reapplied <= 1, "{report:?}");
        let mut found = 0;
        db.session()
            .scan(&t, None, |_, row| {
                assert_eq!(row.len(), 300);
                found += 1;
                true
            })
            .expect("scan");
        assert_eq!(found, 600);
        assert!(db.recovery_report().pages_redone > 0);
    }
}
