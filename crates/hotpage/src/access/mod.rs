//! Access methods: how rows are laid out in pages. The clustered B+tree, the heap and its
//! free-space map, the latch-free memory table, the key generators and the table designs
//! (layouts) built from them. The vocabulary they share lives here, below all of them, so
//! that none imports another's internals for it.

pub(crate) mod btree;
mod combine;
pub(crate) mod fsm;
pub(crate) mod heap;
pub(crate) mod keys;
pub(crate) mod layout;
pub(crate) mod logger;
pub(crate) mod memtable;

use crate::buffer::ExclusivePage;
use crate::error::Result;
use crate::format::PageId;
use crate::page::PageType;

/// What an insert did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inserted {
    /// The row was added.
    Yes,
    /// The key exists already; nothing changed.
    Duplicate,
}

/// Shape and fill of a tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TreeStats {
    /// Number of levels (1 for a tree that is one leaf).
    pub levels: u32,
    /// Pages per level, leaves first.
    pub pages_per_level: Vec<u64>,
    /// Rows in the leaves.
    pub rows: u64,
    /// Average fill of the leaves, in percent of the page size.
    pub leaf_fill_pct: f64,
    /// Leaves whose right link is not the next page number of the file (logical order
    /// differs from physical order: what index physical stats call fragmentation).
    pub out_of_order_leaves: u64,
}

impl TreeStats {
    /// All pages of the tree.
    pub fn pages(&self) -> u64 {
        self.pages_per_level.iter().sum()
    }

    /// The leaves (level 0's pages).
    pub fn leaf_pages(&self) -> u64 {
        self.pages_per_level.first().copied().unwrap_or(0)
    }

    /// The share of leaves, in percent, whose right link is not the next page of the file.
    pub fn fragmentation_pct(&self) -> f64 {
        100.0 * self.out_of_order_leaves as f64 / self.leaf_pages().max(1) as f64
    }
}

/// One page of a tree, as [`BTree::pages`] lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreePage {
    /// The page id.
    pub page_id: PageId,
    /// Leaf or inner.
    pub page_type: PageType,
    /// 0 for leaves.
    pub level: u8,
}

/// Where a tree logs its page changes (the write-ahead log), so that they can be redone
/// after a crash. Called with the changed pages still latched exclusively, after
/// `mark_dirty` and the change; it must set each page's LSN.
pub trait PageLogger: Send + Sync {
    /// `key` → `payload` was inserted into `page`.
    fn inserted(&self, page: &ExclusivePage<'_>, key: &[u8], payload: &[u8]) -> Result<()>;
    /// These pages changed together (a split): log them as one atomic record.
    fn images(&self, pages: &[&ExclusivePage<'_>]) -> Result<()>;
    /// `new`, a freshly formatted empty page, was linked after `tail` (a heap chain grew).
    /// The default logs both pages' images.
    fn linked(&self, tail: &ExclusivePage<'_>, new: &ExclusivePage<'_>) -> Result<()> {
        self.images(&[tail, new])
    }
    /// `left` split: its keys from `separator` on moved to `right`, a new page, and
    /// `parent` gained `separator → right`. The default logs the three pages' images.
    fn split(
        &self,
        left: &ExclusivePage<'_>,
        right: &ExclusivePage<'_>,
        parent: &ExclusivePage<'_>,
        separator: &[u8],
    ) -> Result<()> {
        let _ = separator;
        self.images(&[left, right, parent])
    }
}
