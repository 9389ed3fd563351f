//! The log's records one by one ([`Database::visit_log_records`]): what SQL Server's
//! `fn_dblog` shows, where [`Database::log_summary`] only counts them by kind.
//!
//! Streamed: each record is decoded and handed to the visitor, then dropped. The only state
//! kept across records is the fill of each heap page seen (to tell when a change moves a
//! page to another free-space category, the event SQL Server logs as a PFS update; the map
//! is never logged here, see `access::fsm`), at most [`TRACKED_PAGES_MAX`] pages.

use super::Database;
use super::txn_names::{LoggedNames, NameCollector, TxnName, decode_txn_name};
use crate::access::fsm;
use crate::access::layout::Layout;
use crate::error::Result;
use crate::format::PageId;
use crate::log::RecordKind;
use crate::log::page_records::{
    TreeSplit, decode_heap_link, decode_page_images, decode_page_insert,
};
use crate::page::{PageBuf, PageType, SLOT_BYTES};
use crate::txn::{CommitRow, FIRST_PART, decode_commit, decode_part};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::Ordering;

/// Heap pages whose fill the scan follows; past this many, new pages' categories are
/// unknown (a log that large is read in bounded memory all the same).
pub const TRACKED_PAGES_MAX: usize = 1 << 20;

/// One log record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecordInfo {
    /// Its LSN.
    pub lsn: u64,
    /// Its bytes in the log (header and padding included).
    pub bytes: u64,
    /// Its kind's name, as `inspect log` shows it (`page-insert`, `txn-commit`, …).
    pub kind: &'static str,
    /// The transaction of a commit, abort, part or name record; for a heap row's `page-insert`,
    /// the transaction whose commit record (earlier in the scan) holds that row (matched
    /// by key and row bytes, see [`CommittedRows`]), when the scan saw that commit.
    pub txn: Option<u64>,
    /// A commit's or a first part's transaction name, as far as the database knows it.
    pub txn_name: TxnName,
    /// The record starts its transaction in the log: a commit, or a transaction's first
    /// part.
    pub txn_first: bool,
    /// The record is its transaction's commit point: a commit, or a last part.
    pub txn_commit: bool,
    /// The pages it changes, in the record's order.
    pub pages: Vec<LoggedPage>,
}

/// A page a record changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedPage {
    /// The page.
    pub page_id: PageId,
    /// What the record does to it.
    pub change: PageChange,
    /// Its type, when the record or an earlier one in the scan shows it.
    pub page_type: Option<PageType>,
    /// For a heap page: its free-space category (`access::fsm`, 0 empty … 4 full) before
    /// and after the record, when the scan knows them; `None` before for a page first seen.
    pub fill_category: Option<(Option<u8>, u8)>,
    /// For an inserted heap row: its slot on the page, when the scan knows the page's
    /// slots (from an image, or from its formatting, earlier in the scan).
    pub slot: Option<usize>,
}

/// What a record does to a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageChange {
    /// A whole image (the page's first change since a checkpoint, or a structural one).
    Image,
    /// One record inserted.
    Insert,
    /// Formatted from nothing (a heap page linked after a chain's tail; a split's new half).
    Format,
    /// Its header changed (a heap chain's tail linked to a new page; a split's left half).
    Header,
    /// A separator inserted (a split's parent).
    Separator,
}

impl Database {
    /// Writes the log's buffer out, then visits the records of the retained log files in
    /// LSN order (the range
    /// [`Database::log_summary`] counts; with `since_checkpoint`, only those at or after
    /// the last checkpoint's redo point, the log recovery would read), until `visit`
    /// returns `Ok(false)` or an error. Nothing for a database without a log.
    pub fn visit_log_records(
        &self,
        since_checkpoint: bool,
        mut visit: impl FnMut(&LogRecordInfo) -> Result<bool>,
    ) -> Result<()> {
        if self.log_end().is_none() {
            return Ok(());
        }
        // The reader reads the segment files: the records still in the log's buffer go
        // there first, so that the last rows inserted are among those visited.
        if let Some(wal) = &self.inner.wal {
            wal.flush_all()?;
        }
        let (reader, from_lsn, log_end) = self.retained_log()?;
        let first_lsn = if since_checkpoint {
            self.inner.redo_lsn.load(Ordering::SeqCst)
        } else {
            0
        };
        let mut fills = PageFills {
            page_size: self.page_size(),
            used: HashMap::new(),
            committed: CommittedRows::new(&self.table_infos(true)),
        };
        let known_names = self.inner.txn_names.lock().clone();
        // A name record follows its commit: the first pass finds every commit's name.
        let names = logged_names(&reader, from_lsn, log_end)?;
        let mut stopped = false;
        reader.records_between(from_lsn, log_end, |record| {
            if stopped {
                return Ok(());
            }
            // Records before `first_lsn` still tell the scan the pages' fill.
            let described = fills.describe(record.kind, record.payload)?;
            if record.lsn < first_lsn {
                return Ok(());
            }
            let txn_name = match described.txn {
                Some(_) if described.first => names.name(record.lsn, &known_names),
                _ => TxnName::Unknown,
            };
            let info = LogRecordInfo {
                lsn: record.lsn,
                bytes: record.end - record.lsn,
                kind: record.kind.name(),
                txn: described.txn,
                txn_name,
                txn_first: described.first,
                txn_commit: described.commit,
                pages: described.pages,
            };
            stopped = !visit(&info)?;
            Ok(())
        })?;
        Ok(())
    }
}

/// The names of the transactions whose commits lie in `[from_lsn, log_end)`: each name
/// record names its transaction's latest commit record (or first part) before it.
fn logged_names(
    reader: &crate::log::LogReader<'_>,
    from_lsn: u64,
    log_end: u64,
) -> Result<LoggedNames> {
    let mut collector = NameCollector::default();
    reader.records_between(from_lsn, log_end, |record| {
        match record.kind {
            RecordKind::TxnCommit => {
                let (txn, _) = decode_commit(record.payload)?;
                collector.committed(txn, record.lsn);
            }
            RecordKind::TxnPart => {
                let part = decode_part(record.payload)?;
                if part.first == FIRST_PART {
                    collector.committed(part.txn, record.lsn);
                }
            }
            RecordKind::TxnName => {
                let (txn, name) = decode_txn_name(record.payload)?;
                collector.named(txn, name);
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(collector.finish())
}

/// What the scan makes of one record.
struct Described {
    txn: Option<u64>,
    first: bool,
    commit: bool,
    pages: Vec<LoggedPage>,
}

impl Described {
    fn pages(pages: Vec<LoggedPage>) -> Described {
        Described {
            txn: None,
            first: false,
            commit: false,
            pages,
        }
    }
}

/// The rows of heap tables that commit records hold and no `page-insert` has applied yet
/// in the scan: a hash of (key, row) -> the transaction. A commit is logged before its
/// rows are applied, so a heap row's `page-insert` finds its transaction here. Rows of
/// B+trees are never logged again (their leaves are not logged), so only heaps' rows are
/// kept; a row applied in a page image is never matched, and a later identical (key,
/// row) overwrites it. At most [`ROWS_TRACKED_MAX`] rows.
pub(super) struct CommittedRows {
    heaps: HashSet<u32>,
    rows: HashMap<u64, u64>,
}

/// Committed heap rows the scan follows at once; past this many, new rows' transactions
/// are unknown.
pub const ROWS_TRACKED_MAX: usize = 1 << 20;

impl CommittedRows {
    fn new(tables: &[super::TableInfo]) -> CommittedRows {
        let heaps = tables
            .iter()
            .filter(|t| matches!(t.layout, Layout::Heap { .. } | Layout::HeapIndexed { .. }))
            .map(|t| t.id as u32)
            .collect();
        CommittedRows {
            heaps,
            rows: HashMap::new(),
        }
    }

    fn hash(key: &[u8], row: &[u8]) -> u64 {
        let mut hasher = std::hash::DefaultHasher::new();
        key.hash(&mut hasher);
        row.hash(&mut hasher);
        hasher.finish()
    }

    fn committed(&mut self, txn: u64, rows: &[CommitRow<'_>]) {
        for row in rows.iter().filter(|r| self.heaps.contains(&r.table)) {
            if self.rows.len() >= ROWS_TRACKED_MAX {
                return;
            }
            self.rows.insert(Self::hash(row.key, row.row), txn);
        }
    }

    fn applied(&mut self, key: &[u8], row: &[u8]) -> Option<u64> {
        self.rows.remove(&Self::hash(key, row))
    }
}

/// The heap pages' fill as the scan has seen it: bytes used (header, slots, records) and
/// slots.
struct PageFills {
    page_size: usize,
    used: HashMap<PageId, (PageType, usize, Option<usize>)>,
    committed: CommittedRows,
}

impl PageFills {
    /// A record's transaction and pages.
    fn describe(&mut self, kind: RecordKind, payload: &[u8]) -> Result<Described> {
        Ok(match kind {
            RecordKind::TxnCommit => {
                let (txn, rows) = decode_commit(payload)?;
                self.committed.committed(txn, &rows);
                Described {
                    txn: Some(txn),
                    first: true,
                    commit: true,
                    pages: Vec::new(),
                }
            }
            RecordKind::TxnPart => {
                let part = decode_part(payload)?;
                self.committed.committed(part.txn, &part.rows);
                Described {
                    txn: Some(part.txn),
                    first: part.first == FIRST_PART,
                    commit: part.last,
                    pages: Vec::new(),
                }
            }
            RecordKind::TxnAbort => Described {
                txn: payload
                    .get(..8)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_le_bytes),
                ..Described::pages(Vec::new())
            },
            RecordKind::FlushMark => Described::pages(Vec::new()),
            RecordKind::TxnName => Described {
                txn: Some(decode_txn_name(payload)?.0),
                ..Described::pages(Vec::new())
            },
            RecordKind::PageInsert => {
                let (page_id, key, row) = decode_page_insert(payload)?;
                let added = 1 + key.len() + row.len() + SLOT_BYTES;
                let txn = self.committed.applied(key, row);
                Described {
                    txn,
                    ..Described::pages(vec![self.grow(page_id, PageChange::Insert, added)])
                }
            }
            RecordKind::HeapLink => {
                let (tail, new) = decode_heap_link(payload)?;
                let header = crate::page::HEADER_BYTES;
                let tail = self.grow(tail, PageChange::Header, 0);
                self.forget(new);
                let new = self.set(new, PageChange::Format, PageType::Heap, header, Some(0));
                Described::pages(vec![tail, new])
            }
            RecordKind::PageImages => {
                let images = decode_page_images(payload, self.page_size)?;
                let mut pages = Vec::with_capacity(images.len());
                for (page_id, image) in images {
                    pages.push(self.image(page_id, image));
                }
                Described::pages(pages)
            }
            RecordKind::TreeSplit => {
                let split = TreeSplit::decode(payload)?;
                let half = PageType::from_byte(split.page_type);
                let page = |page_id, change, page_type| LoggedPage {
                    page_id,
                    change,
                    page_type,
                    fill_category: None,
                    slot: None,
                };
                Described::pages(vec![
                    page(split.left, PageChange::Header, half),
                    page(split.right, PageChange::Format, half),
                    page(split.parent, PageChange::Separator, Some(PageType::Inner)),
                ])
            }
        })
    }

    fn image(&mut self, page_id: PageId, image: &[u8]) -> LoggedPage {
        let buf = PageBuf::new(self.page_size);
        let page = buf.page();
        page.copy_from(image);
        match page.page_type() {
            Some(PageType::Heap) => self.set(
                page_id,
                PageChange::Image,
                PageType::Heap,
                page.used_bytes(),
                Some(page.slot_count()),
            ),
            page_type => {
                self.forget(page_id);
                LoggedPage {
                    page_id,
                    change: PageChange::Image,
                    page_type,
                    fill_category: None,
                    slot: None,
                }
            }
        }
    }

    fn category(&self, used: usize) -> u8 {
        fsm::category_of_page(used, self.page_size)
    }

    /// A heap page now holding `used` bytes and `slots` records (if known).
    fn set(
        &mut self,
        page_id: PageId,
        change: PageChange,
        ty: PageType,
        used: usize,
        slots: Option<usize>,
    ) -> LoggedPage {
        let before = self.used.get(&page_id).map(|&(_, u, _)| self.category(u));
        if self.used.len() < TRACKED_PAGES_MAX || self.used.contains_key(&page_id) {
            self.used.insert(page_id, (ty, used, slots));
        }
        LoggedPage {
            page_id,
            change,
            page_type: Some(ty),
            fill_category: Some((before, self.category(used))),
            slot: None,
        }
    }

    /// A page `added` bytes fuller (one record more if `change` is an insert); its
    /// category and the record's slot only if the scan knows the page.
    fn grow(&mut self, page_id: PageId, change: PageChange, added: usize) -> LoggedPage {
        match self.used.get(&page_id).copied() {
            Some((ty, used, slots)) => {
                let inserted = change == PageChange::Insert;
                let after = slots.map(|n| n + usize::from(inserted));
                let mut page = self.set(page_id, change, ty, used + added, after);
                page.slot = slots.filter(|_| inserted);
                page
            }
            None => LoggedPage {
                page_id,
                change,
                page_type: None,
                fill_category: None,
                slot: None,
            },
        }
    }

    fn forget(&mut self, page_id: PageId) {
        self.used.remove(&page_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::layout::Layout;
    use crate::storage::MemStorage;
    use crate::{KeyKind, Options};
    use std::path::Path;
    use std::time::Duration;

    #[test]
    fn heap_rows_links_and_fill_categories_come_back_in_lsn_order() {
        let options = Options {
            page_size: 4096,
            checkpoint_interval: Duration::from_secs(3600),
            ..Options::default()
        };
        let db =
            Database::open_with_storage(MemStorage::new(5), Path::new("m"), options).expect("open");
        let t = db
            .create_table_with_layout(
                "h",
                "heap",
                KeyKind::Identity { start: 1, step: 1 },
                Layout::Heap { chains: 1 },
            )
            .expect("create");
        let mut s = db.session();
        for _ in 0..20 {
            s.insert(&t, &[7u8; 300]).expect("insert");
        }
        db.checkpoint().expect("checkpoint");
        for _ in 0..200 {
            s.insert(&t, &[7u8; 300]).expect("insert");
        }
        let (mut records, mut last_lsn) = (Vec::new(), 0);
        db.visit_log_records(true, |r| {
            assert!(r.lsn >= last_lsn, "LSNs ascend");
            last_lsn = r.lsn;
            records.push(r.clone());
            Ok(true)
        })
        .expect("visit");
        let pages: Vec<&LoggedPage> = records.iter().flat_map(|r| &r.pages).collect();
        let count = |change| pages.iter().filter(|p| p.change == change).count();
        // Every row is a record of its own or in its page's first image since the
        // checkpoint; every new page comes from a link.
        let links = records.iter().filter(|r| r.kind == "heap-link").count();
        assert!(
            links >= 15,
            "{links} links for 200 rows of 300 bytes on 4 KiB pages"
        );
        assert_eq!(count(PageChange::Format), links);
        assert!(count(PageChange::Insert) + count(PageChange::Image) >= 200);
        assert!(
            records
                .iter()
                .any(|r| r.kind == "txn-commit" && r.txn.is_some())
        );
        // A heap page's category only grows, and reaches "over 80 %" (3) or more before
        // the chain moves on (a 300-byte row does not fit in what is left).
        for page in pages.iter().filter(|p| p.page_type == Some(PageType::Heap)) {
            if let Some((Some(before), after)) = page.fill_category {
                assert!(after >= before, "{page:?}");
            }
        }
        let filled = pages
            .iter()
            .filter(|p| matches!(p.fill_category, Some((Some(2), 3))))
            .count();
        assert!(filled >= links - 1, "{filled} pages filled, {links} links");
        // Without `since_checkpoint`, the rows before it come back too; a visitor can stop.
        let (mut all, mut seen) = (0, 0);
        db.visit_log_records(false, |_| {
            all += 1;
            Ok(true)
        })
        .expect("visit");
        assert!(all > records.len());
        db.visit_log_records(false, |_| {
            seen += 1;
            Ok(seen < 3)
        })
        .expect("visit");
        assert_eq!(seen, 3);
    }
}
