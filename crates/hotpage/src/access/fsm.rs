//! The free-space map of a heap: SQL Server's PFS page, as seed 002 describes it.
//!
//! Each heap page has a **category** (how full it is): empty, up to 50 %, up to 80 %, up
//! to 95 %, or over 95 % ("100 %"). A row may go to a page only if the page's category
//! *guarantees* room for it: a page "up to 80 %" full is only known to have 20 % free, so a
//! row of 25 % of a page goes elsewhere even if the page is in fact 51 % full. That rule is
//! what makes heaps waste space for large rows (seed 002's table: 2000-byte rows leave
//! pages 74 % full), and reproducing it is the point of this design.
//!
//! The map of one data file is a list of **map pages**, each covering
//! [`FSM_PAGES_PER_MAP`] heap pages (SQL Server's PFS interval) behind its own latch. New
//! heap pages land in the last map page, so every session that fills a page or looks for
//! one meets the others there: the FSM_LATCH wait. More data files give more map pages to
//! spread over (seed 002's cure).
//!
//! Categories only ever grow (rows are never deleted), so an update keeps the larger of the
//! old and new category, and a stale entry is harmless: the page itself is checked under its
//! latch before a row goes in, and a session that finds it fuller than the map says updates
//! the map. The map is rebuilt from the heap pages when the database opens (it is a hint,
//! like PostgreSQL's free-space map, so it is never logged).

use crate::format::PageId;
use crate::page::HEADER_BYTES;
use crate::stats::{Counter, Stats, WaitType};
use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Heap pages one map page covers (SQL Server's PFS interval).
pub const FSM_PAGES_PER_MAP: usize = 8088;
/// The category of a full page (over 95 %).
pub const CATEGORY_FULL: u8 = 4;
/// Upper bound of each category's fill, in percent (empty is exactly 0 bytes used).
const CATEGORY_FILL_PCT: [usize; 4] = [0, 50, 80, 95];
/// Free space a category guarantees, in percent of the usable page.
const CATEGORY_FREE_PCT: [usize; 5] = [100, 50, 20, 5, 0];

/// The category of a heap page with `records_bytes` of records and slots, out of
/// `usable` bytes (the page minus its header).
pub fn category(records_bytes: usize, usable: usize) -> u8 {
    if records_bytes == 0 {
        return 0;
    }
    for (category, pct) in CATEGORY_FILL_PCT.iter().enumerate().skip(1) {
        if records_bytes * 100 <= usable * pct {
            return category as u8;
        }
    }
    CATEGORY_FULL
}

/// The category of the page `page_size` bytes long whose `used_bytes` include its header.
pub fn category_of_page(used_bytes: usize, page_size: usize) -> u8 {
    category(
        used_bytes.saturating_sub(HEADER_BYTES),
        page_size - HEADER_BYTES,
    )
}

/// True if a page of `category` is guaranteed to hold `need` more bytes (record + slot).
pub fn admits(category: u8, need: usize, usable: usize) -> bool {
    let free_pct = CATEGORY_FREE_PCT[usize::from(category.min(CATEGORY_FULL))];
    need * 100 <= usable * free_pct
}

/// The fullest category that admits `need` bytes, or `None` if not even an empty page does.
pub fn fullest_admitting(need: usize, usable: usize) -> Option<u8> {
    (0..CATEGORY_FULL)
        .rev()
        .find(|&category| admits(category, need, usable))
}

/// A heap page's place in the map: which data file's map, and its position there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapSlot {
    /// The data file (its map).
    pub file: u32,
    /// The page's position in that file's map (0 = the first heap page of the file).
    pub ordinal: usize,
}

/// A page the map offers for a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Where the page is in the map.
    pub slot: MapSlot,
    /// The page id.
    pub page_id: PageId,
}

/// One map page: (heap page id, category) for up to [`FSM_PAGES_PER_MAP`] pages.
type MapPage = RwLock<Vec<(PageId, u8)>>;

/// The map of one data file.
struct FileMap {
    pages: RwLock<Vec<Arc<MapPage>>>,
    // Heap pages registered in this file.
    len: AtomicUsize,
    // Per "fullest admitting category" c: no page before this ordinal has category <= c.
    // Pages only fill up, so these only move forward (searches stay amortised O(1)).
    search_from: [AtomicUsize; CATEGORY_FULL as usize],
    // Serialises registrations (and so the growth of `pages`).
    grow: Mutex<()>,
}

/// The free-space map of one heap: one [`FileMap`] per data file.
pub struct FreeSpaceMap {
    files: Box<[FileMap]>,
    usable: usize,
    stats: Arc<Stats>,
}

impl std::fmt::Debug for FreeSpaceMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FreeSpaceMap")
            .field("files", &self.files.len())
            .finish()
    }
}

impl FreeSpaceMap {
    /// An empty map over `files` data files, for pages of `page_size` bytes.
    pub fn new(files: u32, page_size: usize, stats: Arc<Stats>) -> FreeSpaceMap {
        FreeSpaceMap {
            files: (0..files.max(1))
                .map(|_| FileMap {
                    pages: RwLock::new(Vec::new()),
                    len: AtomicUsize::new(0),
                    search_from: Default::default(),
                    grow: Mutex::new(()),
                })
                .collect(),
            usable: page_size - HEADER_BYTES,
            stats,
        }
    }

    /// Bytes of a page rows and slots may use.
    pub fn usable(&self) -> usize {
        self.usable
    }

    /// Number of data files (maps).
    pub fn file_count(&self) -> u32 {
        self.files.len() as u32
    }

    /// Heap pages registered in `file`'s map.
    pub fn len(&self, file: u32) -> usize {
        self.files
            .get(file as usize)
            .map_or(0, |f| f.len.load(Ordering::Acquire))
    }

    fn read<'a>(&self, page: &'a MapPage) -> RwLockReadGuard<'a, Vec<(PageId, u8)>> {
        self.stats
            .timed_wait(WaitType::FsmLatch, || page.try_read(), || page.read())
    }

    fn write<'a>(&self, page: &'a MapPage) -> RwLockWriteGuard<'a, Vec<(PageId, u8)>> {
        self.stats
            .timed_wait(WaitType::FsmLatch, || page.try_write(), || page.write())
    }

    fn map_page(&self, file: u32, ordinal: usize) -> Option<Arc<MapPage>> {
        let map = self.files.get(file as usize)?;
        map.pages.read().get(ordinal / FSM_PAGES_PER_MAP).cloned()
    }

    /// Registers a new heap page of `file` with its category; returns its slot. Counts as a
    /// map update (SQL Server marks a page allocated in PFS).
    pub fn register(&self, file: u32, page_id: PageId, category: u8) -> MapSlot {
        let index = (file as usize).min(self.files.len() - 1);
        let map = &self.files[index];
        let _grow = map.grow.lock();
        let ordinal = map.len.load(Ordering::Acquire);
        if ordinal.is_multiple_of(FSM_PAGES_PER_MAP) {
            map.pages
                .write()
                .push(Arc::new(RwLock::new(Vec::with_capacity(FSM_PAGES_PER_MAP))));
        }
        let page = map.pages.read()[ordinal / FSM_PAGES_PER_MAP].clone();
        self.write(&page).push((page_id, category));
        map.len.store(ordinal + 1, Ordering::Release);
        self.stats.count(Counter::FsmUpdates, 1);
        MapSlot {
            file: index as u32,
            ordinal,
        }
    }

    /// Loads `file`'s map from the pages of its chain (at open; not counted as updates).
    pub fn load(&self, file: u32, pages: &[(PageId, u8)]) {
        let Some(map) = self.files.get(file as usize) else {
            return;
        };
        let _grow = map.grow.lock();
        let mut map_pages = map.pages.write();
        map_pages.clear();
        for chunk in pages.chunks(FSM_PAGES_PER_MAP) {
            let mut entries = Vec::with_capacity(FSM_PAGES_PER_MAP);
            entries.extend_from_slice(chunk);
            map_pages.push(Arc::new(RwLock::new(entries)));
        }
        map.len.store(pages.len(), Ordering::Release);
        for cursor in &map.search_from {
            cursor.store(0, Ordering::Relaxed);
        }
    }

    /// Raises the category of the page at `slot` to `category` (a lower one is ignored:
    /// pages only fill up). Counts an update when the entry changes.
    pub fn raise(&self, slot: MapSlot, category: u8) {
        let Some(page) = self.map_page(slot.file, slot.ordinal) else {
            return;
        };
        // Most calls find the entry already there (a session rejecting a page another one
        // filled): a shared latch answers that without blocking the map page's readers.
        let index = slot.ordinal % FSM_PAGES_PER_MAP;
        if self.read(&page).get(index).is_none_or(|e| e.1 >= category) {
            return;
        }
        let mut entries = self.write(&page);
        if let Some(entry) = entries.get_mut(slot.ordinal % FSM_PAGES_PER_MAP)
            && entry.1 < category
        {
            entry.1 = category;
            drop(entries);
            self.stats.count(Counter::FsmUpdates, 1);
        }
    }

    /// The category the map holds for `slot` (for tests and inspection).
    pub fn category_at(&self, slot: MapSlot) -> Option<u8> {
        let page = self.map_page(slot.file, slot.ordinal)?;
        let entries = self.read(&page);
        entries.get(slot.ordinal % FSM_PAGES_PER_MAP).map(|e| e.1)
    }

    /// Finds a page whose category admits `need` bytes: first in `home`'s map, then in the
    /// other files' in turn. `None` means a new page is needed.
    pub fn find(&self, home: u32, need: usize) -> Option<Candidate> {
        let fullest = fullest_admitting(need, self.usable)?;
        let files = self.files.len();
        (0..files)
            .map(|i| ((home as usize + i) % files) as u32)
            .find_map(|file| self.find_in(file, fullest))
    }

    fn find_in(&self, file: u32, fullest: u8) -> Option<Candidate> {
        let map = &self.files[file as usize];
        // Every page before the cursor is fuller than `fullest`, and pages never empty:
        // moving it past the pages scanned here keeps later searches short.
        let cursor = &map.search_from[usize::from(fullest)];
        let len = map.len.load(Ordering::Acquire);
        let mut ordinal = cursor.load(Ordering::Relaxed);
        while ordinal < len {
            let page = self.map_page(file, ordinal)?;
            let start = ordinal % FSM_PAGES_PER_MAP;
            let entries = self.read(&page);
            let fitting = entries
                .iter()
                .enumerate()
                .skip(start)
                .find(|(_, entry)| entry.1 <= fullest);
            if let Some((i, &(page_id, _))) = fitting {
                let found = ordinal - start + i;
                cursor.fetch_max(found, Ordering::Relaxed);
                return Some(Candidate {
                    slot: MapSlot {
                        file,
                        ordinal: found,
                    },
                    page_id,
                });
            }
            let scanned = entries.len().saturating_sub(start);
            drop(entries);
            if scanned == 0 {
                break;
            }
            ordinal += scanned;
            cursor.fetch_max(ordinal, Ordering::Relaxed);
        }
        None
    }

    /// Every registered page of `file` with its category, in map order.
    pub fn entries(&self, file: u32) -> Vec<(PageId, u8)> {
        let Some(map) = self.files.get(file as usize) else {
            return Vec::new();
        };
        let pages: Vec<Arc<MapPage>> = map.pages.read().clone();
        pages.iter().flat_map(|p| p.read().clone()).collect()
    }

    /// The last page registered in `file`, if any (the file's chain tail).
    pub fn last(&self, file: u32) -> Option<PageId> {
        let map = self.files.get(file as usize)?;
        let pages = map.pages.read();
        let last = pages.last()?;
        last.read().last().map(|e| e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USABLE: usize = 8192 - HEADER_BYTES;

    fn id(number: u64) -> PageId {
        PageId::new(0, number)
    }

    #[test]
    fn categories_follow_seed_002_thresholds() {
        assert_eq!(category(0, USABLE), 0);
        assert_eq!(category(1, USABLE), 1);
        assert_eq!(category(USABLE / 2, USABLE), 1);
        assert_eq!(category(USABLE / 2 + 1, USABLE), 2);
        assert_eq!(category(USABLE * 80 / 100, USABLE), 2);
        assert_eq!(category(USABLE * 80 / 100 + 1, USABLE), 3);
        assert_eq!(category(USABLE * 95 / 100, USABLE), 3);
        assert_eq!(category(USABLE * 95 / 100 + 1, USABLE), CATEGORY_FULL);
        assert_eq!(category(USABLE, USABLE), CATEGORY_FULL);
    }

    #[test]
    fn a_category_admits_only_what_it_guarantees() {
        // A page "up to 80 %" full guarantees 20 %: 1625 bytes of 8128, not 2000.
        assert!(admits(2, 1625, USABLE));
        assert!(!admits(2, 2000, USABLE));
        assert!(admits(1, 4064, USABLE));
        assert!(!admits(1, 4065, USABLE));
        assert!(!admits(CATEGORY_FULL, 1, USABLE));
        assert_eq!(fullest_admitting(2013, USABLE), Some(1));
        assert_eq!(fullest_admitting(113, USABLE), Some(3));
        assert_eq!(fullest_admitting(USABLE + 1, USABLE), None);
    }

    #[test]
    fn find_skips_pages_that_cannot_fit_and_prefers_the_home_file() {
        let fsm = FreeSpaceMap::new(2, 8192, Stats::new());
        let a = fsm.register(0, id(10), CATEGORY_FULL);
        let b = fsm.register(0, id(11), 2);
        let c = fsm.register(1, id(12), 1);
        assert_eq!((a.ordinal, b.ordinal, c.ordinal), (0, 1, 0));
        // 2000 bytes need category <= 1: file 0 has none, file 1 has page 12.
        assert_eq!(fsm.find(0, 2013).map(|c| c.page_id), Some(id(12)));
        // 500 bytes fit category 2: page 11 in the home file.
        assert_eq!(fsm.find(0, 513).map(|c| c.page_id), Some(id(11)));
        assert_eq!(fsm.find(1, 513).map(|c| c.page_id), Some(id(12)));
        fsm.raise(c, 3);
        fsm.raise(c, 1); // lower: ignored
        assert_eq!(fsm.category_at(c), Some(3));
        assert_eq!(fsm.find(0, 2013), None);
        let updates = fsm.stats.snapshot().counter(Counter::FsmUpdates);
        assert_eq!(updates, 4, "three registrations and one raise");
        assert_eq!(fsm.last(0), Some(id(11)));
        assert_eq!(fsm.entries(0), vec![(id(10), CATEGORY_FULL), (id(11), 2)]);
    }

    #[test]
    fn find_crosses_map_pages() {
        let fsm = FreeSpaceMap::new(1, 8192, Stats::new());
        for i in 0..FSM_PAGES_PER_MAP + 5 {
            fsm.register(0, id(100 + i as u64), CATEGORY_FULL);
        }
        assert_eq!(fsm.find(0, 100), None);
        let last = fsm.register(0, id(1), 0);
        assert_eq!(last.ordinal, FSM_PAGES_PER_MAP + 5);
        assert_eq!(fsm.find(0, 100).map(|c| c.slot), Some(last));
    }
}
