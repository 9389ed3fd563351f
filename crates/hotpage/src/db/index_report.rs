//! [`Database::index_report`]: a table's physical stats (sys.dm_db_index_physical_stats):
//! levels, pages per level, leaf fill, fragmentation; a heap's chains and free-space map;
//! a memory table's bytes. A typed value for `hotpage inspect index` to render.

use super::inspect::PageLocation;
use super::{Database, TableHandle};
use crate::access::TreeStats;
use crate::access::heap::Heap;
use crate::access::memtable::MemoryUsage;
use crate::error::Result;

/// Heap pages by how full the free-space map says they are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsmCategories {
    /// Empty pages.
    pub empty: u64,
    /// Up to 50 % full.
    pub le_50_pct: u64,
    /// Up to 80 % full.
    pub le_80_pct: u64,
    /// Up to 95 % full.
    pub le_95_pct: u64,
    /// Full.
    pub full: u64,
}

/// A heap's nonclustered index.
#[derive(Clone, Debug, PartialEq)]
pub struct HeapIndexShape {
    /// Its root page.
    pub root: PageLocation,
    /// Its shape and fill.
    pub tree: TreeStats,
}

/// A heap's chains and free-space map.
#[derive(Clone, Debug, PartialEq)]
pub struct HeapShape {
    /// Page chains (one per data file).
    pub chains: usize,
    /// Pages the free-space map registers, per data file.
    pub pages_per_chain: Vec<usize>,
    /// Those pages by fullness.
    pub fsm_categories: FsmCategories,
    /// The nonclustered index, if the heap has one.
    pub index: Option<HeapIndexShape>,
}

/// The shape of a table's storage.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexShape {
    /// A memory table: no pages, no levels.
    Memory {
        /// Rows, counted by a walk of them.
        rows: u64,
        /// Their bytes in memory and in the checkpoint file.
        usage: MemoryUsage,
    },
    /// A B+tree (or a heap: the shape is then the heap's pages).
    Pages {
        /// The first root page.
        root: PageLocation,
        /// Levels, pages, fill, fragmentation.
        tree: TreeStats,
        /// A heap's chains, free-space map and index; `None` for a B+tree.
        heap: Option<HeapShape>,
    },
}

/// A table's physical stats (see [`Database::index_report`]).
#[derive(Clone, Debug, PartialEq)]
pub struct IndexReport {
    /// The table's name.
    pub table: String,
    /// The design it was created with.
    pub design: String,
    /// Its shape.
    pub shape: IndexShape,
}

impl Database {
    /// Walks a table (and a heap's index) for its physical stats; a malformed tree is an
    /// error, as for [`Database::verify_table`]. Meant for a quiescent table.
    pub fn index_report(&self, table: &TableHandle) -> Result<IndexReport> {
        let tree = self.verify_table(table)?;
        let shape = match self.memory_usage(table) {
            // No pages, levels or fill: the rows and what they take in memory and on disk.
            Some(usage) => IndexShape::Memory {
                rows: tree.rows,
                usage,
            },
            None => IndexShape::Pages {
                root: PageLocation::of(table.root_page()),
                heap: table
                    .heap()
                    .map(|heap| heap_shape(table, heap))
                    .transpose()?,
                tree,
            },
        };
        Ok(IndexReport {
            table: table.name().to_string(),
            design: table.design().to_string(),
            shape,
        })
    }
}

/// A heap's chains, its free-space map's categories and its index's shape.
fn heap_shape(table: &TableHandle, heap: &Heap) -> Result<HeapShape> {
    let mut categories = [0u64; 5];
    let mut pages_per_chain = Vec::new();
    for file in 0..heap.fsm().file_count() {
        let entries = heap.fsm().entries(file);
        pages_per_chain.push(entries.len());
        for (_, category) in entries {
            categories[usize::from(category.min(4))] += 1;
        }
    }
    let index = match table.trees().next() {
        Some(index) => Some(HeapIndexShape {
            root: PageLocation::of(index.root()),
            tree: index.verify()?,
        }),
        None => None,
    };
    let [empty, le_50_pct, le_80_pct, le_95_pct, full] = categories;
    Ok(HeapShape {
        chains: heap.heads().len(),
        pages_per_chain,
        fsm_categories: FsmCategories {
            empty,
            le_50_pct,
            le_80_pct,
            le_95_pct,
            full,
        },
        index,
    })
}
