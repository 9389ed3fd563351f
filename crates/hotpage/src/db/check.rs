//! [`Database::check`]: the integrity check (DBCC CHECKDB). Every page's checksum (of every
//! data file), each table's B+tree (order, separators, levels, sibling links), the catalog
//! against the trees (root pages, no page in two tables, no page with rows or links in
//! none) and row counts. A memory table has no pages: its checkpoint file's frames
//! (checksums, lengths, keys) are checked against the rows in memory, which must be in key
//! order. Every fault is listed; an empty, unlinked page that no table reaches is leaked
//! space, listed as a warning.
//!
//! The report is a typed value; rendering it (text, JSON) is the caller's business, so the
//! engine carries no serialisation dependency (`hotpage check` renders it).

use super::inspect::PageLocation;
use super::{Database, TableHandle, TableInfo};
use crate::access::memtable::MemoryUsage;
use crate::error::{Error, Result};
use crate::format::{self, PageId, UNLOGGED_FILE};
use crate::page::{self, PageBuf, PageType};
use std::collections::{HashMap, HashSet};

/// What a [`Fault`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// A page fails its checksum, page id or slot directory, cannot be read, or holds
    /// changes past the end of the log.
    Page,
    /// The catalog names a root page that is missing or not a B+tree or heap page, or a
    /// table that cannot be opened.
    Catalog,
    /// A table's B+tree, heap or memory rows are malformed.
    Tree,
    /// A page that two tables reach.
    Ownership,
    /// The catalog's row count differs from the rows the table holds.
    Rows,
    /// A page with rows or links that no table reaches.
    Orphan,
    /// An empty, unlinked page that no table reaches: leaked space (a warning, not a fault).
    Leaked,
    /// Crash recovery fails (the log's replay meets damage): the pages were checked as the
    /// data files hold them, without the log ([`Options::replay_log`](crate::Options)).
    Recovery,
}

impl FaultKind {
    /// The kind's name, as reports show it (`page`, `catalog`, `tree`, ...).
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Page => "page",
            FaultKind::Catalog => "catalog",
            FaultKind::Tree => "tree",
            FaultKind::Ownership => "ownership",
            FaultKind::Rows => "rows",
            FaultKind::Orphan => "orphan",
            FaultKind::Leaked => "leaked",
            FaultKind::Recovery => "recovery",
        }
    }
}

/// One finding of [`Database::check`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What it is about.
    pub kind: FaultKind,
    /// The page it names, if any.
    pub page: Option<PageLocation>,
    /// The table it names, if any.
    pub table: Option<String>,
    /// What is wrong, in words.
    pub message: String,
}

impl Fault {
    fn new(kind: FaultKind, page: Option<PageId>, table: Option<&str>, message: String) -> Fault {
        Fault {
            kind,
            page: page.map(PageLocation::of),
            table: table.map(str::to_string),
            message,
        }
    }

    /// A fault from an engine error: a `CorruptPage` names its page.
    fn from_error(kind: FaultKind, table: Option<&str>, error: &Error) -> Fault {
        let page = match error {
            Error::CorruptPage { page_id, .. } => Some(*page_id),
            _ => None,
        };
        Fault::new(kind, page, table, error.to_string())
    }
}

/// The figures of a table whose catalog entry could be checked.
#[derive(Clone, Debug, PartialEq)]
pub struct TableFigures {
    /// The design it was created with.
    pub design: String,
    /// Rows as the catalog counts them.
    pub rows_catalog: u64,
    /// Rows the tree (heap, memory table) holds; `None` when it could not be walked.
    pub rows_tree: Option<u64>,
    /// Pages the table reaches; `None` when they could not be listed.
    pub pages: Option<usize>,
    /// Its B+trees (partitions, a heap's index).
    pub trees: usize,
    /// Its heap page chains.
    pub heap_chains: usize,
    /// A memory table's figures (its checkpoint file); `None` for a table with pages.
    pub memory: Option<MemoryUsage>,
}

/// One table's result.
#[derive(Clone, Debug, PartialEq)]
pub struct TableCheck {
    /// The table's name.
    pub name: String,
    /// `None` when a root page the catalog names does not exist (nothing more was checked).
    pub figures: Option<TableFigures>,
    /// True when no fault names the table.
    pub ok: bool,
}

/// What [`Database::check`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckReport {
    /// Pages in all data files together, header pages included: every one was checked.
    pub pages_checked: u64,
    /// Pages in each data file (`data.0` first).
    pub pages_per_file: Vec<u64>,
    /// Pages in the unlogged file (0 if the database has none).
    pub unlogged_file_pages: u64,
    /// One entry per table, in creation order (a table that cannot be opened has none; its
    /// fault says why).
    pub tables: Vec<TableCheck>,
    /// Every fault, pages first, then tables, then pages no table reaches.
    pub faults: Vec<Fault>,
    /// Findings that lose no rows (leaked pages).
    pub warnings: Vec<Fault>,
}

impl CheckReport {
    /// True when there is no fault (warnings allowed).
    pub fn ok(&self) -> bool {
        self.faults.is_empty()
    }
}

/// The type of each page, by file and page number (`None`: damaged or of no known type).
struct PageTypes(Vec<Vec<Option<PageType>>>);

impl PageTypes {
    /// `None` when the page is past the end of its file or its file does not exist.
    fn get(&self, page_id: PageId) -> Option<Option<PageType>> {
        let file = usize::try_from(page_id.file()).ok()?;
        let number = usize::try_from(page_id.number()).ok()?;
        self.0.get(file).and_then(|f| f.get(number)).copied()
    }
}

/// The state of the walk over the tables.
struct TableWalk<'a> {
    db: &'a Database,
    types: &'a PageTypes,
    pages_each: &'a [u64],
    // Which table reaches each page.
    owners: HashMap<PageId, String>,
    faults: Vec<Fault>,
    // False once a table's trees could not all be walked: then `owners` is incomplete and
    // pages no table reaches cannot be told.
    all_trees_ok: bool,
}

impl Database {
    /// Checks the whole database (see the module docs of `hotpage check` for the list):
    /// every page of every data file, every table, and the pages no table reaches. Reads
    /// every page; meant for a quiescent database (the command opens it read-only). Faults
    /// are in the report; an `Err` only when the data files cannot be read for the check
    /// of the log's end.
    pub fn check(&self) -> Result<CheckReport> {
        let info = self.pool_info();
        let pages_each = info.file_pages_each;
        // Indexed by file number: the shared files, then (if open) the unlogged file at its
        // number, with no pages in the numbers between.
        let mut walked_each = pages_each.clone();
        if info.unlogged_file_pages > 0 {
            walked_each.resize(UNLOGGED_FILE as usize, 0);
            walked_each.push(info.unlogged_file_pages);
        }
        let (types, mut faults, never_written) = self.check_pages(&walked_each);
        faults.extend(self.log_tail_faults()?);
        let page_faults = faults.len();
        let mut walk = TableWalk {
            db: self,
            types: &types,
            pages_each: &walked_each,
            owners: HashMap::new(),
            faults,
            all_trees_ok: true,
        };
        let tables: Vec<TableCheck> = self
            .table_infos(true)
            .iter()
            .filter_map(|table| walk.check_table(table))
            .collect();
        let (mut faults, owners) = (walk.faults, walk.owners);
        let mut warnings = Vec::new();
        // Pages no table reaches mean something only when every tree could be walked.
        if walk.all_trees_ok && page_faults == 0 {
            for page_id in unreached_pages(&walked_each, &owners) {
                if never_written.contains(&page_id) {
                    warnings.push(Fault::new(
                        FaultKind::Leaked,
                        Some(page_id),
                        None,
                        "an all-zero page no table reaches (allocated, then never written: a \
                         table's creation or truncation that a crash cut short): leaked \
                         space, no rows"
                            .into(),
                    ));
                } else if self.is_empty_and_unlinked(page_id) {
                    warnings.push(Fault::new(
                        FaultKind::Leaked,
                        Some(page_id),
                        None,
                        "an empty page no table reaches (a table whose creation failed \
                         or was cut short): leaked space, no rows"
                            .into(),
                    ));
                } else {
                    faults.push(Fault::new(
                        FaultKind::Orphan,
                        Some(page_id),
                        None,
                        "no table's B+tree reaches this page".into(),
                    ));
                }
            }
        }
        Ok(CheckReport {
            pages_checked: info.file_pages,
            pages_per_file: pages_each,
            unlogged_file_pages: info.unlogged_file_pages,
            tables,
            faults,
            warnings,
        })
    }

    /// Every page of every data file: checksum, page id, slot directory. Returns each
    /// page's type, the faults, and the pages that are all zeros (never written).
    fn check_pages(&self, pages_each: &[u64]) -> (PageTypes, Vec<Fault>, HashSet<PageId>) {
        let mut faults = Vec::new();
        let mut never_written = HashSet::new();
        let mut all = Vec::with_capacity(pages_each.len());
        for (file, &pages) in (0u32..).zip(pages_each) {
            let mut types = Vec::with_capacity(usize::try_from(pages).unwrap_or(0));
            for number in 0..pages {
                let page_id = PageId::new(file, number);
                let page_type = match self.raw_page_image(page_id) {
                    Ok(image) => match page::verify(&image, page_id) {
                        Ok(()) => image_page_type(&image),
                        // The file grew to hold the page but its first write never reached
                        // the disk. No table may reach it (the walk reads it and fails
                        // then); one that none reaches is leaked space.
                        Err(_) if image.iter().all(|&b| b == 0) => {
                            never_written.insert(page_id);
                            None
                        }
                        Err(reason) => {
                            faults.push(Fault::new(FaultKind::Page, Some(page_id), None, reason));
                            None
                        }
                    },
                    Err(error) => {
                        faults.push(Fault::from_error(FaultKind::Page, None, &error));
                        None
                    }
                };
                types.push(page_type);
            }
            all.push(types);
        }
        (PageTypes(all), faults, never_written)
    }

    /// Pages that, on disk, hold changes the log no longer reaches: a lost tail of the log
    /// (see [`Database::pages_past_log_end`]).
    fn log_tail_faults(&self) -> Result<Vec<Fault>> {
        let Some(end) = self.log_end() else {
            return Ok(Vec::new());
        };
        Ok(self
            .pages_past_log_end()?
            .into_iter()
            .map(|(page_id, lsn)| {
                Fault::new(
                    FaultKind::Page,
                    Some(page_id),
                    None,
                    format!(
                        "on disk, the page holds changes logged up to LSN {lsn}, past the end of the log ({end}): log records are missing (a deleted or lost last log segment?)"
                    ),
                )
            })
            .collect())
    }

    /// True for a page that holds no record and links to no page: what a table's creation
    /// allocates (an empty root leaf, an empty heap chain head). Unreached, it is leaked
    /// space (pages are never freed), not lost rows: a warning (docs/design.md, "Leaked
    /// pages").
    fn is_empty_and_unlinked(&self, page_id: PageId) -> bool {
        let Ok(image) = self.raw_page_image(page_id) else {
            return false;
        };
        let buf = PageBuf::new(image.len());
        let page = buf.page();
        page.copy_from(&image);
        matches!(
            page.page_type(),
            Some(PageType::Leaf | PageType::Heap | PageType::Free)
        ) && page.level() == 0
            && page.slot_count() == 0
            && page.next().is_none()
            && page.aux().is_none()
    }
}

/// The page type of a verified image.
fn image_page_type(image: &[u8]) -> Option<PageType> {
    let buf = PageBuf::new(image.len());
    buf.page().copy_from(image);
    buf.page().page_type()
}

impl TableWalk<'_> {
    /// Checks one table: catalog entry, tree structure, pages, row count. `None` when the
    /// table cannot be opened (its fault says why).
    fn check_table(&mut self, info: &TableInfo) -> Option<TableCheck> {
        // A dropped table's pages are still its own; a live table may have its name.
        let shown = if info.dropped {
            format!("{} (dropped)", info.name)
        } else {
            info.name.clone()
        };
        let name = shown.as_str();
        // Every partition's root (one for an unpartitioned table) must exist.
        if let Some(fault) = self.missing_root(info) {
            self.faults.push(fault);
            self.all_trees_ok = false;
            return Some(TableCheck {
                name: name.to_string(),
                figures: None,
                ok: false,
            });
        }
        let mut ok = self.roots_are_tree_pages(info);
        let table = match self.db.table_by_id(info.id) {
            Ok(table) => table,
            Err(error) => {
                let fault = Fault::from_error(FaultKind::Catalog, Some(name), &error);
                self.faults.push(fault);
                self.all_trees_ok = false;
                return None;
            }
        };
        let (mut rows_tree, mut pages) = (None, None);
        if ok {
            match self.db.verify_table(&table) {
                Ok(stats) => rows_tree = Some(stats.rows),
                Err(error) => {
                    let fault = Fault::from_error(FaultKind::Tree, Some(name), &error);
                    self.faults.push(fault);
                    ok = false;
                }
            }
        }
        if ok {
            let (listed, unshared) = self.claim_pages(&table);
            pages = listed;
            ok = listed.is_some() && unshared;
        }
        if let Some(rows) = rows_tree
            && rows != info.rows
        {
            let message = format!("the catalog says {} rows, the tree holds {rows}", info.rows);
            let fault = Fault::new(FaultKind::Rows, None, Some(name), message);
            self.faults.push(fault);
            ok = false;
        }
        self.all_trees_ok &= ok;
        let figures = TableFigures {
            design: info.design.clone(),
            rows_catalog: info.rows,
            rows_tree,
            pages,
            trees: info.layout.tree_count(),
            heap_chains: info.layout.chain_count(),
            memory: self.db.memory_usage(&table),
        };
        Some(TableCheck {
            name: name.to_string(),
            figures: Some(figures),
            ok,
        })
    }

    /// A catalog fault for the first root page that lies past its file's end or in a data
    /// file the database does not have.
    fn missing_root(&self, info: &TableInfo) -> Option<Fault> {
        let root = info
            .roots
            .iter()
            .copied()
            .find(|&root| self.types.get(root).is_none())?;
        let PageLocation { file, page } = PageLocation::of(root);
        let message = match self.pages_each.get(file as usize) {
            Some(pages) if *pages > 0 => format!(
                "root page {file}:{page} is past the end of {} ({pages} pages)",
                format::data_file_name(file)
            ),
            _ => format!(
                "root page {file}:{page} is in data file {file}, which the database does not have ({} data files)",
                self.db.data_files()
            ),
        };
        Some(Fault::new(
            FaultKind::Catalog,
            None,
            Some(&info.name),
            message,
        ))
    }

    /// Whether every root page is a B+tree or heap page (a damaged one is a page fault
    /// already); a fault for each that is not.
    fn roots_are_tree_pages(&mut self, info: &TableInfo) -> bool {
        let mut ok = true;
        for &root in &info.roots {
            if let Some(Some(t)) = self.types.get(root)
                && !matches!(t, PageType::Leaf | PageType::Inner | PageType::Heap)
            {
                let message = format!(
                    "root page is a {} page, not a B+tree or heap page",
                    t.name()
                );
                let fault = Fault::new(FaultKind::Catalog, Some(root), Some(&info.name), message);
                self.faults.push(fault);
                ok = false;
            }
        }
        ok
    }

    /// Lists the table's pages and records it as their owner: a page another table
    /// reaches too is a fault. Returns the number of pages (`None` when they cannot be
    /// listed) and whether none is shared.
    fn claim_pages(&mut self, table: &TableHandle) -> (Option<usize>, bool) {
        let name = table.name();
        let list = match self.db.table_pages(table) {
            Ok(list) => list,
            Err(error) => {
                let fault = Fault::from_error(FaultKind::Tree, Some(name), &error);
                self.faults.push(fault);
                return (None, false);
            }
        };
        let mut ok = true;
        for p in &list {
            if let Some(other) = self.owners.insert(p.page_id, name.to_string()) {
                let message = format!("page belongs to table {other} too");
                let fault = Fault::new(FaultKind::Ownership, Some(p.page_id), Some(name), message);
                self.faults.push(fault);
                ok = false;
            }
        }
        (Some(list.len()), ok)
    }
}

/// Every page of every data file that no table reaches (page 0 of each file is its header;
/// a file number with no pages is no file).
fn unreached_pages(pages_each: &[u64], owners: &HashMap<PageId, String>) -> Vec<PageId> {
    (0u32..)
        .zip(pages_each)
        .flat_map(|(file, &pages)| (1..pages).map(move |number| PageId::new(file, number)))
        .filter(|page_id| !owners.contains_key(page_id))
        .collect()
}
