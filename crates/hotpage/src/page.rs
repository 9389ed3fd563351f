//! The page format: a fixed header and a slotted record area.
//!
//! ```text
//! offset size field
//!      0    4 checksum      CRC32C of bytes 4..page_size, set when the page is written out
//!      4    1 page_type     see PageType
//!      5    1 level         0 for leaves, height above the leaves for inner pages
//!      6    2 flags         reserved, 0
//!      8    8 page_id       the page's own id (PageId's u64), checked on every read
//!     16    8 lsn           log sequence number of the last change (the WAL issue uses it)
//!     24    2 slot_count    records on the page
//!     26    2 last_insert   slot of the latest insert (0xffff: none), a hint for splits
//!     28    4 free_end      start of the record area; records fill [free_end, page_size)
//!     32    8 next          right sibling at the same level, PageId::NONE if none
//!     40    8 aux           inner pages: leftmost child; otherwise PageId::NONE
//!     48   16 reserved
//!     64    . slot directory: 8 bytes per slot, in key order: u16 offset, u16 length, and
//!             the key's head (its first 4 bytes, zero-padded, as a big-endian u32)
//! ```
//! All integers little-endian. A record is `[key_len u8][key][payload]`: the payload is the
//! row for a leaf and the child's page id (its u64) for an inner page.
//!
//! Pages in the buffer pool are arrays of `AtomicU64` words: optimistic readers read them
//! while a writer may be changing them, and relaxed atomics make that race defined behaviour
//! (a plain `u8` race would be undefined even if the version check discards the result).
//! Every access to page memory is a relaxed load or store of a whole word (never of another
//! size: Rust's memory model makes racing atomic accesses of different sizes undefined), and
//! relaxed word loads and stores compile to plain moves on x86 and ARM. Byte `i` of the page
//! is bits `8 * (i % 8)..` of word `i / 8` (little-endian within a word, on any host), so a
//! word's `to_le_bytes` is the page's bytes as they go to disk.
//!
//! A store of fewer than eight bytes reads the word, changes its bytes and stores it back.
//! That is not an atomic read-modify-write, and needs none: only the holder of the page's
//! exclusive latch (or the owner of a scratch page) writes, so no store can come between
//! the read and the write, and a reader racing with it sees the word before or after.
//!
//! Reads never panic on a page that changes underneath: offsets are bounds-checked and
//! out-of-range bytes read as 0, so a torn read yields garbage that the version check then
//! throws away.

use crate::format::PageId;
use std::cmp::Ordering as CmpOrdering;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of the page header.
pub const HEADER_BYTES: usize = 64;
/// Bytes of one slot-directory entry.
pub const SLOT_BYTES: usize = 8;
/// The default page size.
pub const PAGE_SIZE_DEFAULT: usize = 8192;
/// The smallest page size.
pub const PAGE_SIZE_MIN: usize = 4096;
/// The largest page size (slot offsets are u16).
pub const PAGE_SIZE_MAX: usize = 65536;

const OFF_CHECKSUM: usize = 0;
const OFF_TYPE: usize = 4;
const OFF_LEVEL: usize = 5;
const OFF_PAGE_ID: usize = 8;
const OFF_LSN: usize = 16;
const OFF_SLOT_COUNT: usize = 24;
const OFF_LAST_INSERT: usize = 26;
const NO_SLOT: u16 = u16::MAX;
const OFF_FREE_END: usize = 28;
const OFF_NEXT: usize = 32;
const OFF_AUX: usize = 40;

/// What a page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PageType {
    /// Allocated but not formatted.
    Free = 0,
    /// Page 0 of a data file: magic, format version, page size.
    FileHeader = 1,
    /// A B+tree leaf: records are rows.
    Leaf = 2,
    /// A B+tree inner page: records are separators with child page numbers.
    Inner = 3,
    /// A heap page: rows in key order within the page, pages chained by `next`.
    Heap = 4,
}

impl PageType {
    /// Decodes a page-type byte.
    pub fn from_byte(byte: u8) -> Option<PageType> {
        match byte {
            0 => Some(PageType::Free),
            1 => Some(PageType::FileHeader),
            2 => Some(PageType::Leaf),
            3 => Some(PageType::Inner),
            4 => Some(PageType::Heap),
            _ => None,
        }
    }

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            PageType::Free => "free",
            PageType::FileHeader => "file-header",
            PageType::Leaf => "leaf",
            PageType::Inner => "inner",
            PageType::Heap => "heap",
        }
    }
}

/// Checks that a page size is a power of two in [PAGE_SIZE_MIN, PAGE_SIZE_MAX].
pub fn validate_page_size(page_size: usize) -> Result<(), String> {
    if page_size.is_power_of_two() && (PAGE_SIZE_MIN..=PAGE_SIZE_MAX).contains(&page_size) {
        Ok(())
    } else {
        Err(format!(
            "page size {page_size} must be a power of two from {PAGE_SIZE_MIN} to {PAGE_SIZE_MAX} bytes"
        ))
    }
}

/// The largest record (key-length byte + key + payload) a page of this size accepts: at
/// least four records always fit, so a split of a full page always makes room.
pub fn record_bytes_max(page_size: usize) -> usize {
    (page_size - HEADER_BYTES) / 4 - SLOT_BYTES
}

/// Bytes of a page word.
const WORD_BYTES: usize = 8;

/// An owned page-sized buffer of atomic words (a buffer-pool frame, or a scratch page).
pub struct PageBuf {
    words: Box<[AtomicU64]>,
}

impl PageBuf {
    /// A zeroed buffer of `page_size` bytes (a multiple of 8: page sizes are powers of two
    /// of at least `PAGE_SIZE_MIN`).
    pub fn new(page_size: usize) -> PageBuf {
        debug_assert!(page_size.is_multiple_of(WORD_BYTES));
        PageBuf {
            words: (0..page_size.div_ceil(WORD_BYTES))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// A view of the buffer as a page.
    pub fn page(&self) -> Page<'_> {
        Page { w: &self.words }
    }
}

/// Up to eight bytes as a big-endian integer, zero-padded on the right: comparing two such
/// integers orders their bytes as `memcmp` does.
#[inline]
fn be_prefix(bytes: &[u8]) -> u64 {
    match bytes.first_chunk::<WORD_BYTES>() {
        Some(whole) => u64::from_be_bytes(*whole),
        None => bytes
            .iter()
            .enumerate()
            .fold(0, |v, (j, &b)| v | (u64::from(b) << (56 - 8 * j))),
    }
}

/// A key's head as its slot stores it: the first four bytes, zero-padded, big-endian.
/// Heads that differ order their keys as `memcmp` does (a shorter key's padding is 0, and
/// a key that is a prefix of another sorts first); equal heads decide nothing.
#[inline]
fn key_head(key: &[u8]) -> u32 {
    (be_prefix(&key[..key.len().min(4)]) >> 32) as u32
}

/// A mask of the low `n` bytes of a word (`n` from 0 to 8).
#[inline]
fn low_bytes_mask(n: usize) -> u64 {
    if n >= WORD_BYTES {
        u64::MAX
    } else {
        (1u64 << (8 * n)) - 1
    }
}

/// A view of one page's bytes. Reading needs at least an optimistic latch (and a validation
/// afterwards); the mutating methods need the exclusive latch: the buffer pool hands them out
/// only through an exclusive guard.
#[derive(Clone, Copy)]
pub struct Page<'a> {
    w: &'a [AtomicU64],
}

impl<'a> Page<'a> {
    /// The page size in bytes.
    pub fn size(&self) -> usize {
        self.w.len() * WORD_BYTES
    }

    /// Word `i` (0 past the end).
    #[inline]
    fn word(&self, i: usize) -> u64 {
        self.w.get(i).map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Stores `bytes` into the bytes of word `i` that `mask` selects (callers hold the
    /// exclusive latch: see the module docs for why a load and a store suffice).
    #[inline]
    fn store_masked(&self, i: usize, bytes: u64, mask: u64) {
        let Some(c) = self.w.get(i) else {
            debug_assert!(false, "store past the end of the page at word {i}");
            return;
        };
        let value = if mask == u64::MAX {
            bytes
        } else {
            (c.load(Ordering::Relaxed) & !mask) | (bytes & mask)
        };
        c.store(value, Ordering::Relaxed);
    }

    /// `n` bytes (at most 8) from `off`, as a little-endian integer: one word load, or two
    /// when they straddle words. Bytes past the end read as 0.
    #[inline]
    fn ld_le(&self, off: usize, n: usize) -> u64 {
        debug_assert!(n <= WORD_BYTES);
        let (i, shift) = (off / WORD_BYTES, off % WORD_BYTES);
        let mut v = self.word(i) >> (8 * shift);
        if shift + n > WORD_BYTES {
            v |= self.word(i + 1) << (8 * (WORD_BYTES - shift));
        }
        v & low_bytes_mask(n)
    }

    /// Stores the low `n` bytes (at most 8) of `v` at `off`, little-endian.
    #[inline]
    fn st_le(&self, off: usize, n: usize, v: u64) {
        debug_assert!(n <= WORD_BYTES);
        let (i, shift) = (off / WORD_BYTES, off % WORD_BYTES);
        let v = v & low_bytes_mask(n);
        let first = (WORD_BYTES - shift).min(n);
        self.store_masked(i, v << (8 * shift), low_bytes_mask(first) << (8 * shift));
        if n > first {
            self.store_masked(i + 1, v >> (8 * first), low_bytes_mask(n - first));
        }
    }

    fn ld(&self, off: usize) -> u8 {
        self.ld_le(off, 1) as u8
    }

    fn st(&self, off: usize, v: u8) {
        self.st_le(off, 1, u64::from(v));
    }

    fn ld_u16(&self, off: usize) -> u16 {
        self.ld_le(off, 2) as u16
    }

    fn ld_u32(&self, off: usize) -> u32 {
        self.ld_le(off, 4) as u32
    }

    fn ld_u64(&self, off: usize) -> u64 {
        self.ld_le(off, 8)
    }

    /// A page id field: the id's stored u64 (the one conversion from page bytes).
    fn ld_page_id(&self, off: usize) -> PageId {
        PageId::from_raw(self.ld_u64(off))
    }

    /// Writes a page id field (the one conversion to page bytes).
    fn st_page_id(&self, off: usize, page_id: PageId) {
        self.st_le(off, WORD_BYTES, page_id.to_raw());
    }

    /// Writes `src` at `off`: a word at a time (a whole word is one store; only the ends
    /// of an unaligned range read the word they change).
    fn st_bytes(&self, off: usize, src: &[u8]) {
        self.st_parts(off, &[src], false);
    }

    /// Writes the concatenation of `parts` at `off`, a word at a time: a record's
    /// key-length byte, key and payload cost one store per word they cover. With
    /// `free_below`, the bytes of `off`'s word below `off` are free space, which the first
    /// store may overwrite rather than read (a read of a line not in the cache would stall
    /// the insert, where a store does not).
    fn st_parts(&self, off: usize, parts: &[&[u8]], free_below: bool) {
        let mut word_index = off / WORD_BYTES;
        // Bytes not stored yet: `pending`'s bytes that `mask` selects, in their places in
        // word `word_index`; `at` is the next byte's place in that word.
        let head = off % WORD_BYTES;
        let (mut pending, mut at) = (0u64, head);
        let mut mask = if free_below { low_bytes_mask(head) } else { 0 };
        for part in parts {
            let mut rest: &[u8] = part;
            while let Some((chunk, tail)) = rest.split_first_chunk::<WORD_BYTES>() {
                let v = u64::from_le_bytes(*chunk);
                if at == 0 {
                    self.store_masked(word_index, v, u64::MAX);
                } else {
                    let word = pending | (v << (8 * at));
                    self.store_masked(word_index, word, mask | (u64::MAX << (8 * at)));
                    pending = v >> (8 * (WORD_BYTES - at));
                    mask = low_bytes_mask(at);
                }
                word_index += 1;
                rest = tail;
            }
            for &byte in rest {
                pending |= u64::from(byte) << (8 * at);
                mask |= 0xff << (8 * at);
                at += 1;
                if at == WORD_BYTES {
                    self.store_masked(word_index, pending, mask);
                    (word_index, pending, mask, at) = (word_index + 1, 0, 0, 0);
                }
            }
        }
        if mask != 0 {
            self.store_masked(word_index, pending, mask);
        }
    }

    /// Copies `dst.len()` bytes starting at `off` out of the page: one word load per eight
    /// bytes (after the first, the loads are aligned).
    pub fn read_bytes(&self, off: usize, dst: &mut [u8]) {
        let mut at = off;
        let mut rest = dst;
        while !rest.is_empty() {
            let shift = at % WORD_BYTES;
            let word = self.word(at / WORD_BYTES) >> (8 * shift);
            let n = (WORD_BYTES - shift).min(rest.len());
            let (chunk, tail) = rest.split_at_mut(n);
            if let Ok(whole) = <&mut [u8; WORD_BYTES]>::try_from(&mut *chunk) {
                *whole = word.to_le_bytes();
            } else {
                for (j, byte) in chunk.iter_mut().enumerate() {
                    *byte = (word >> (8 * j)) as u8;
                }
            }
            rest = tail;
            at += n;
        }
    }

    /// Appends `len` bytes from `off` to `out`.
    fn append_bytes(&self, off: usize, len: usize, out: &mut Vec<u8>) {
        let start = out.len();
        out.resize(start + len, 0);
        self.read_bytes(off, &mut out[start..]);
    }

    /// Opens slot `i` of `n`: slots `i..n` move up one (slot `i` is then overwritten).
    /// A slot is one word, so each moved slot is one load and one store.
    fn open_slot(&self, i: usize, n: usize) {
        let base = HEADER_BYTES / WORD_BYTES;
        for k in (i..n).rev() {
            self.store_masked(base + k + 1, self.word(base + k), u64::MAX);
        }
    }

    /// The raw page-type byte.
    pub fn page_type_byte(&self) -> u8 {
        self.ld(OFF_TYPE)
    }

    /// The page type, if the byte is a known one.
    pub fn page_type(&self) -> Option<PageType> {
        PageType::from_byte(self.page_type_byte())
    }

    /// 0 for leaves, the height above the leaves for inner pages.
    pub fn level(&self) -> u8 {
        self.ld(OFF_LEVEL)
    }

    /// The page id recorded in the header.
    pub fn page_id(&self) -> PageId {
        self.ld_page_id(OFF_PAGE_ID)
    }

    /// The LSN of the last change.
    pub fn lsn(&self) -> u64 {
        self.ld_u64(OFF_LSN)
    }

    /// The checksum field as stored (valid only in a page image read from disk).
    pub fn stored_checksum(&self) -> u32 {
        self.ld_u32(OFF_CHECKSUM)
    }

    /// The most slots a page of this size can hold.
    fn slot_capacity(&self) -> usize {
        (self.size() - HEADER_BYTES) / SLOT_BYTES
    }

    /// Records on the page (clamped so a torn optimistic read cannot loop for long).
    pub fn slot_count(&self) -> usize {
        usize::from(self.ld_u16(OFF_SLOT_COUNT)).min(self.slot_capacity())
    }

    /// The slot of the latest insert, if any: a hint for choosing split points.
    pub fn last_insert(&self) -> Option<usize> {
        let slot = self.ld_u16(OFF_LAST_INSERT);
        (slot != NO_SLOT).then_some(usize::from(slot))
    }

    /// Start of the record area.
    pub fn free_end(&self) -> usize {
        (self.ld_u32(OFF_FREE_END) as usize).min(self.size())
    }

    /// The right sibling, or `PageId::NONE`.
    pub fn next(&self) -> PageId {
        self.ld_page_id(OFF_NEXT)
    }

    /// Inner pages: the leftmost child.
    pub fn aux(&self) -> PageId {
        self.ld_page_id(OFF_AUX)
    }

    /// (offset, length) of slot `i`'s record.
    pub fn slot(&self, i: usize) -> (usize, usize) {
        let entry = self.slot_word(i);
        ((entry & 0xffff) as usize, ((entry >> 16) & 0xffff) as usize)
    }

    /// Slot `i`'s key head: its key's first four bytes, zero-padded, big-endian.
    pub fn slot_head(&self, i: usize) -> u32 {
        (self.slot_word(i) >> 32) as u32
    }

    /// Slot `i`'s whole entry: a slot is one aligned word.
    #[inline]
    fn slot_word(&self, i: usize) -> u64 {
        const _: () = assert!(SLOT_BYTES == WORD_BYTES && HEADER_BYTES.is_multiple_of(WORD_BYTES));
        self.word(HEADER_BYTES / WORD_BYTES + i)
    }

    /// Contiguous free bytes between the slot directory and the record area.
    pub fn free_bytes(&self) -> usize {
        self.free_end()
            .saturating_sub(HEADER_BYTES + self.slot_count() * SLOT_BYTES)
    }

    /// Bytes in use: header, slots and records.
    pub fn used_bytes(&self) -> usize {
        self.size() - self.free_bytes()
    }

    /// True if a record of `record_bytes` fits without reorganising the page.
    pub fn fits(&self, record_bytes: usize) -> bool {
        self.free_bytes() >= record_bytes + SLOT_BYTES
    }

    /// (offset, length) of slot `i`'s key.
    pub fn key_range(&self, i: usize) -> (usize, usize) {
        let (off, _) = self.slot(i);
        (off + 1, usize::from(self.ld(off)))
    }

    /// Compares slot `i`'s key with `key` (memcmp order, shorter first on a tie): the
    /// slot's head first, then, where heads tie, the record's key eight bytes per step,
    /// both sides as big-endian integers, zero-padded alike. (Steps aligned
    /// to the page's words instead were measured slower: an 8-byte key then takes two
    /// steps with a partial chunk each.)
    #[inline]
    pub fn compare_key(&self, i: usize, key: &[u8]) -> CmpOrdering {
        self.compare_key_headed(i, key, key_head(key))
    }

    /// `compare_key` with `key`'s head computed once by the caller: where the slot's head
    /// differs it decides alone, from the slot directory, and the record is not read.
    #[inline]
    fn compare_key_headed(&self, i: usize, key: &[u8], head: u32) -> CmpOrdering {
        // One load: the head and the record's offset share the slot's word.
        let entry = self.slot_word(i);
        let stored_head = (entry >> 32) as u32;
        if stored_head != head {
            return stored_head.cmp(&head);
        }
        self.compare_record_key((entry & 0xffff) as usize, key)
    }

    /// Compares the key of the record at `record_off` with `key`.
    #[inline]
    fn compare_record_key(&self, record_off: usize, key: &[u8]) -> CmpOrdering {
        let (off, len) = (record_off + 1, usize::from(self.ld(record_off)));
        let mut at = off;
        let mut given = &key[..len.min(key.len())];
        while !given.is_empty() {
            let n = given.len().min(WORD_BYTES);
            let (chunk, tail) = given.split_at(n);
            // The stored bytes, first byte highest (`ld_le` zeroes the bytes past `n`).
            let stored = self.ld_le(at, n).swap_bytes();
            let wanted = be_prefix(chunk);
            if stored != wanted {
                return stored.cmp(&wanted);
            }
            at += n;
            given = tail;
        }
        len.cmp(&key.len())
    }

    /// Loads one word of each cache line of the slot array, all independent of each other,
    /// so that a page not in the cache (a random insert's leaf) costs one round of misses
    /// for its slots instead of one per step of the binary search that follows.
    fn warm_slots(&self, slots: usize) {
        const WORDS_PER_LINE: usize = 64 / WORD_BYTES;
        let (base, words) = (HEADER_BYTES / WORD_BYTES, slots);
        let mut seen = 0u64;
        for w in (0..words).step_by(WORDS_PER_LINE) {
            seen ^= self.word(base + w);
        }
        std::hint::black_box(seen);
    }

    /// The last of `slots` slots, when the page's latest insert went there (an ascending
    /// key's page): where `search` and `separators_at_or_below` look first.
    fn last_slot_if_appended(&self, slots: usize) -> Option<usize> {
        let last = slots.checked_sub(1)?;
        (self.last_insert() == Some(last)).then_some(last)
    }

    /// Binary search for `key`: `Ok(slot)` if present, `Err(insert position)` if not.
    pub fn search(&self, key: &[u8]) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.slot_count());
        let head = key_head(key);
        // The append fast path: an ascending key goes past the last slot, found with one
        // comparison instead of a search. Only where the latest insert was the last slot
        // (the hint shares the slot count's word): a page of random keys seldom is, and
        // does not pay the comparison's cache line.
        if let Some(last) = self.last_slot_if_appended(hi) {
            match self.compare_key_headed(last, key, head) {
                CmpOrdering::Less => return Err(hi),
                CmpOrdering::Equal => return Ok(last),
                CmpOrdering::Greater => hi = last,
            }
        }
        self.warm_slots(hi);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.compare_key_headed(mid, key, head) {
                CmpOrdering::Less => lo = mid + 1,
                CmpOrdering::Greater => hi = mid,
                CmpOrdering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Appends slot `i`'s key to `out`.
    pub fn copy_key(&self, i: usize, out: &mut Vec<u8>) {
        let (off, len) = self.key_range(i);
        self.append_bytes(off, len, out);
    }

    /// (offset, length) of slot `i`'s payload.
    pub fn payload_range(&self, i: usize) -> (usize, usize) {
        let (off, rec_len) = self.slot(i);
        let key_len = usize::from(self.ld(off));
        (off + 1 + key_len, rec_len.saturating_sub(1 + key_len))
    }

    /// Appends slot `i`'s payload (a leaf's row) to `out`.
    pub fn copy_payload(&self, i: usize, out: &mut Vec<u8>) {
        let (off, len) = self.payload_range(i);
        self.append_bytes(off, len, out);
    }

    /// Appends slot `i`'s whole record to `out`.
    pub fn copy_record(&self, i: usize, out: &mut Vec<u8>) {
        let (off, len) = self.slot(i);
        self.append_bytes(off, len, out);
    }

    /// Inner pages: the child of separator `i`.
    pub fn child(&self, i: usize) -> PageId {
        let (off, _) = self.payload_range(i);
        self.ld_page_id(off)
    }

    /// Inner pages: the child whose key range holds `key` (the last separator <= key, or
    /// the leftmost child).
    pub fn child_for(&self, key: &[u8]) -> PageId {
        match self.separators_at_or_below(key) {
            0 => self.aux(),
            lo => self.child(lo - 1),
        }
    }

    /// Inner pages: how many separators are <= `key`. The child `child_for` returns is
    /// bounded above by separator number this (exclusive), when there is one.
    pub fn separators_at_or_below(&self, key: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.slot_count());
        let head = key_head(key);
        // The append fast path, as in `search`: an ascending key descends to the last child.
        if let Some(last) = self.last_slot_if_appended(hi) {
            if self.compare_key_headed(last, key, head) != CmpOrdering::Greater {
                return hi;
            }
            hi = last;
        }
        self.warm_slots(hi);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.compare_key_headed(mid, key, head) == CmpOrdering::Greater {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// Copies the whole page out (for a write to disk).
    pub fn copy_to(&self, dst: &mut [u8]) {
        self.read_bytes(0, dst);
    }

    // ---- mutation: callers hold the exclusive latch -------------------------------------

    /// Formats the page: empty, with the given identity, type and level.
    pub fn init(&self, page_id: PageId, page_type: PageType, level: u8) {
        self.st_bytes(0, &[0u8; HEADER_BYTES]);
        self.st(OFF_TYPE, page_type as u8);
        self.st(OFF_LEVEL, level);
        self.st_page_id(OFF_PAGE_ID, page_id);
        self.set_slot_count(0);
        self.set_last_insert(None);
        self.set_free_end(self.size());
        self.set_next(PageId::NONE);
        self.set_aux(PageId::NONE);
    }

    /// Overwrites the whole page (after a read from disk).
    pub fn copy_from(&self, src: &[u8]) {
        debug_assert_eq!(src.len(), self.size());
        self.st_bytes(0, src);
    }

    fn set_slot_count(&self, n: usize) {
        debug_assert!(n <= self.slot_capacity());
        self.st_le(OFF_SLOT_COUNT, 2, n as u64);
    }

    fn set_free_end(&self, off: usize) {
        self.st_le(OFF_FREE_END, 4, off as u64);
    }

    /// Sets (or with `None` forgets) the latest-insert hint, after a page is rebuilt.
    pub fn set_last_insert(&self, slot: Option<usize>) {
        let slot = slot.map_or(NO_SLOT, |s| s.min(usize::from(NO_SLOT) - 1) as u16);
        self.st_le(OFF_LAST_INSERT, 2, u64::from(slot));
    }

    /// Sets the right-sibling link.
    pub fn set_next(&self, page_id: PageId) {
        self.st_page_id(OFF_NEXT, page_id);
    }

    /// Sets the leftmost child (inner pages).
    pub fn set_aux(&self, page_id: PageId) {
        self.st_page_id(OFF_AUX, page_id);
    }

    /// Sets the LSN of the last change.
    pub fn set_lsn(&self, lsn: u64) {
        self.st_le(OFF_LSN, WORD_BYTES, lsn);
    }

    /// Loads the word an insert will change first in the record area (it also holds the
    /// first bytes of the latest record), so that a miss on its cache line overlaps the
    /// search that comes before the insert instead of stalling the insert.
    pub fn prefetch_record_area(&self) {
        std::hint::black_box(self.word(self.free_end().saturating_sub(1) / WORD_BYTES));
    }

    /// Inserts a record `[key_len][key][payload...]` as slot `i`. Returns false (page
    /// unchanged) if it does not fit.
    pub fn insert_record(&self, i: usize, key: &[u8], payload: &[u8]) -> bool {
        let n = self.slot_count();
        assert!(i <= n, "slot {i} past slot count {n}");
        assert!(key.len() <= usize::from(u8::MAX), "key too long for a page");
        let rec_len = 1 + key.len() + payload.len();
        if !self.fits(rec_len) || rec_len > usize::from(u16::MAX) {
            return false;
        }
        let rec_off = self.free_end() - rec_len;
        // Below the new record, up to the current end of the slot directory, is free space.
        let dir_end = HEADER_BYTES + n * SLOT_BYTES;
        let free_below = rec_off - rec_off % WORD_BYTES >= dir_end;
        self.st_parts(rec_off, &[&[key.len() as u8], key, payload], free_below);
        self.open_slot(i, n);
        let entry = (rec_off as u64) | ((rec_len as u64) << 16) | (u64::from(key_head(key)) << 32);
        self.store_masked(HEADER_BYTES / WORD_BYTES + i, entry, u64::MAX);
        // Slot count, last insert and record-area start share the header's word 3: one
        // store sets all three.
        const _: () = assert!(
            OFF_SLOT_COUNT.is_multiple_of(WORD_BYTES)
                && OFF_LAST_INSERT == OFF_SLOT_COUNT + 2
                && OFF_FREE_END == OFF_SLOT_COUNT + 4
        );
        debug_assert!(n < self.slot_capacity());
        let counts = (n as u64 + 1) | ((i as u64) << 16) | ((rec_off as u64) << 32);
        self.st_le(OFF_SLOT_COUNT, WORD_BYTES, counts);
        true
    }

    /// Where the record area would start if slots `n..` were dropped: `Some` when their
    /// records all lie below every record of slots `..n`, as on a page filled in key order
    /// (the tail of an ascending index), so dropping them frees one run of bytes at the
    /// area's low end. `None` when a kept record lies among them.
    pub fn low_records_from(&self, n: usize) -> Option<usize> {
        let count = self.slot_count();
        assert!(n <= count, "slot {n} past slot count {count}");
        let kept_low = (0..n).map(|i| self.slot(i).0).min().unwrap_or(self.size());
        let moved_high = (n..count)
            .map(|i| {
                let (off, len) = self.slot(i);
                off + len
            })
            .max()
            .unwrap_or(0);
        (moved_high <= kept_low).then_some(kept_low)
    }

    /// Drops slots `n..`, whose records `low_records_from(n)` said end at `area_start`:
    /// the record area starts there now, and the bytes below it are free.
    pub fn truncate_low(&self, n: usize, area_start: usize) {
        debug_assert_eq!(self.low_records_from(n), Some(area_start));
        assert!(
            n <= self.slot_count() && area_start <= self.size(),
            "truncating to {n} slots, area from {area_start}"
        );
        self.set_slot_count(n);
        self.set_free_end(area_start);
        if self.last_insert().is_some_and(|slot| slot >= n) {
            self.set_last_insert(None);
        }
    }

    /// Appends a whole record (as copied by `copy_record`) after the last slot.
    pub fn push_record(&self, record: &[u8]) -> bool {
        let Some((&key_len, rest)) = record.split_first() else {
            return false;
        };
        let key_len = usize::from(key_len);
        if rest.len() < key_len {
            return false;
        }
        self.insert_record(self.slot_count(), &rest[..key_len], &rest[key_len..])
    }
}

/// Writes the checksum into a page image about to go to disk.
pub fn seal(image: &mut [u8]) {
    let crc = crc32c::crc32c(&image[OFF_CHECKSUM + 4..]);
    image[OFF_CHECKSUM..OFF_CHECKSUM + 4].copy_from_slice(&crc.to_le_bytes());
}

/// The LSN in a page image's header, read without verifying the page (`None` for an
/// image shorter than a header).
pub fn image_lsn(image: &[u8]) -> Option<u64> {
    let bytes = image.get(OFF_LSN..OFF_LSN + 8)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// The page id in a page image's header, read without verifying the page (`None` for an
/// image shorter than a header).
pub fn image_page_id(image: &[u8]) -> Option<PageId> {
    let bytes = image.get(OFF_PAGE_ID..OFF_PAGE_ID + 8)?;
    Some(PageId::from_raw(u64::from_le_bytes(bytes.try_into().ok()?)))
}

/// Verifies a page image read from disk: checksum, page id, and the structure every reader
/// relies on (slot directory and records inside the page). Returns why it is bad.
pub fn verify(image: &[u8], expected_page_id: PageId) -> Result<(), String> {
    if image.len() < PAGE_SIZE_MIN || validate_page_size(image.len()).is_err() {
        return Err(format!("image of {} bytes is not a page", image.len()));
    }
    let stored = u32::from_le_bytes([image[0], image[1], image[2], image[3]]);
    let computed = crc32c::crc32c(&image[4..]);
    if stored != computed {
        return Err(format!(
            "checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
        ));
    }
    let buf = PageBuf::new(image.len());
    let page = buf.page();
    page.copy_from(image);
    if page.page_id() != expected_page_id {
        // The stored ids, as this message has always shown them.
        return Err(format!(
            "header names page {} where page {} was expected",
            page.page_id().to_raw(),
            expected_page_id.to_raw()
        ));
    }
    let Some(page_type) = page.page_type() else {
        return Err(format!("unknown page type {}", page.page_type_byte()));
    };
    if matches!(page_type, PageType::Leaf | PageType::Inner | PageType::Heap) {
        verify_slots(&page)?;
    }
    Ok(())
}

fn verify_slots(page: &Page<'_>) -> Result<(), String> {
    let raw_count = usize::from(page.ld_u16(OFF_SLOT_COUNT));
    if raw_count > page.slot_capacity() {
        return Err(format!("slot count {raw_count} exceeds capacity"));
    }
    let free_end = page.ld_u32(OFF_FREE_END) as usize;
    let dir_end = HEADER_BYTES + raw_count * SLOT_BYTES;
    if free_end < dir_end || free_end > page.size() {
        return Err(format!(
            "record area start {free_end} outside [{dir_end}, {}]",
            page.size()
        ));
    }
    // One buffer for every slot's key: a page read from disk is verified on the way in.
    let mut key = Vec::new();
    for i in 0..raw_count {
        let (off, len) = page.slot(i);
        if len == 0 || off < free_end || off + len > page.size() {
            return Err(format!("slot {i} points outside the record area"));
        }
        if 1 + usize::from(page.ld(off)) > len {
            return Err(format!("slot {i}: key longer than its record"));
        }
        key.clear();
        page.copy_key(i, &mut key);
        if page.slot_head(i) != key_head(&key) {
            return Err(format!(
                "slot {i}: its key head does not match its record's key"
            ));
        }
        if page.page_type() == Some(PageType::Inner) && 1 + usize::from(page.ld(off)) + 8 != len {
            return Err(format!("slot {i}: inner record without an 8-byte child"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn rows(page: &Page<'_>) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..page.slot_count())
            .map(|i| {
                let (mut k, mut v) = (Vec::new(), Vec::new());
                page.copy_key(i, &mut k);
                page.copy_payload(i, &mut v);
                (k, v)
            })
            .collect()
    }

    proptest! {
        /// Random inserts keep the slots in key order, match a BTreeMap model, survive the
        /// trip to disk bytes and back, and the checksum catches any flipped byte.
        #[test]
        fn slotted_layout_round_trips(
            page_shift in 12u32..=16,
            entries in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 0..24),
                 proptest::collection::vec(any::<u8>(), 0..300)), 0..200),
            flip in any::<prop::sample::Index>(),
        ) {
            let page_size = 1usize << page_shift;
            let buf = PageBuf::new(page_size);
            let page = buf.page();
            page.init(PageId::new(0, 7), PageType::Leaf, 0);
            let mut model = BTreeMap::new();
            for (k, v) in entries {
                match page.search(&k) {
                    Ok(_) => prop_assert!(model.contains_key(&k)),
                    Err(pos) => {
                        let before = page.free_bytes();
                        if page.insert_record(pos, &k, &v) {
                            prop_assert_eq!(page.free_bytes(), before - (1 + k.len() + v.len() + SLOT_BYTES));
                            model.insert(k, v);
                        } else {
                            prop_assert!(before < 1 + k.len() + v.len() + SLOT_BYTES);
                        }
                    }
                }
            }
            let expected: Vec<_> = model.into_iter().collect();
            prop_assert_eq!(rows(&page), expected.clone());

            let mut image = vec![0u8; page_size];
            page.copy_to(&mut image);
            seal(&mut image);
            prop_assert_eq!(verify(&image, PageId::new(0, 7)), Ok(()));
            prop_assert!(verify(&image, PageId::new(0, 8)).is_err());
            let back = PageBuf::new(page_size);
            back.page().copy_from(&image);
            prop_assert_eq!(rows(&back.page()), expected);

            let at = flip.index(page_size);
            image[at] ^= 0x40;
            prop_assert!(verify(&image, PageId::new(0, 7)).is_err(), "flip at {} not detected", at);
        }

        /// Inner pages route every key to the child whose range holds it.
        #[test]
        fn child_for_routes_by_separator(seps in proptest::collection::btree_set(any::<u32>(), 1..100), probe in any::<u32>()) {
            let buf = PageBuf::new(8192);
            let page = buf.page();
            page.init(PageId::new(0, 1), PageType::Inner, 1);
            page.set_aux(PageId::new(0, 1000));
            for (i, s) in seps.iter().enumerate() {
                prop_assert!(page.insert_record(i, &s.to_be_bytes(), &(i as u64).to_le_bytes()));
            }
            let below = seps.iter().filter(|s| **s <= probe).count();
            let expected = PageId::new(0, if below == 0 { 1000 } else { (below - 1) as u64 });
            prop_assert_eq!(page.child_for(&probe.to_be_bytes()), expected);
        }
    }

    proptest! {
        /// Dropping the last slots frees their bytes only when their records are the
        /// lowest of the area (`low_records_from`), and then the page keeps exactly the
        /// other rows, verifies, and has that many bytes more free: whatever the order the
        /// rows came in (ascending runs, stragglers, random).
        #[test]
        fn dropping_the_lowest_records_frees_them_exactly(
            keys in proptest::collection::vec(any::<u16>(), 2..150),
            ascending in any::<bool>(),
            payload_bytes in 1usize..60,
            cut in any::<prop::sample::Index>(),
        ) {
            let buf = PageBuf::new(8192);
            let page = buf.page();
            page.init(PageId::new(0, 7), PageType::Leaf, 0);
            let mut keys = keys;
            if ascending {
                keys.sort_unstable();
            }
            for k in &keys {
                let key = k.to_be_bytes();
                if let Err(pos) = page.search(&key) {
                    page.insert_record(pos, &key, &vec![*k as u8; payload_bytes]);
                }
            }
            let count = page.slot_count();
            let n = cut.index(count + 1);
            let before = rows(&page);
            let free_before = page.free_bytes();
            let moved_bytes: usize = (n..count).map(|i| page.slot(i).1).sum();
            // The rule, by brute force: no kept record lies below a moved one.
            let lowest = (n..count).all(|m| (0..n).all(|k| page.slot(m).0 < page.slot(k).0));
            let rule = page.low_records_from(n);
            if ascending {
                prop_assert!(rule.is_some(), "an ascending page drops its tail in place");
            }
            match rule {
                Some(area_start) => {
                    prop_assert!(lowest);
                    page.truncate_low(n, area_start);
                    prop_assert_eq!(rows(&page), before[..n].to_vec());
                    prop_assert_eq!(page.free_bytes(), free_before + moved_bytes + (count - n) * SLOT_BYTES);
                    let mut image = vec![0u8; 8192];
                    page.copy_to(&mut image);
                    seal(&mut image);
                    prop_assert_eq!(verify(&image, PageId::new(0, 7)), Ok(()));
                    // The freed room takes new rows.
                    let key = u32::MAX.to_be_bytes();
                    if page.free_bytes() >= 1 + key.len() + payload_bytes + SLOT_BYTES {
                        prop_assert!(page.insert_record(n, &key, &vec![1; payload_bytes]));
                    }
                }
                None => prop_assert!(!lowest),
            }
        }
    }

    proptest! {
        /// Word-wide access is byte access: stores of any length at any offset (whole
        /// ranges, multi-part records, little-endian fields) and loads of any range match
        /// a plain byte array, and the page goes to disk as those bytes.
        #[test]
        fn word_access_matches_a_byte_array(
            writes in proptest::collection::vec(
                (0usize..4096, proptest::collection::vec(any::<u8>(), 0..40), 0usize..4),
                1..60),
            reads in proptest::collection::vec((0usize..4096, 0usize..40), 1..40),
        ) {
            let buf = PageBuf::new(4096);
            let page = buf.page();
            let mut model = vec![0u8; 4096];
            for (off, bytes, how) in writes {
                let len = bytes.len().min(4096 - off);
                let bytes = &bytes[..len];
                match how {
                    0 => page.st_bytes(off, bytes),
                    1 => {
                        let (a, rest) = bytes.split_at(len / 3);
                        let (b, c) = rest.split_at(rest.len() / 2);
                        page.st_parts(off, &[a, b, c], false);
                    }
                    2 => {
                        for (j, byte) in bytes.iter().enumerate() {
                            page.st(off + j, *byte);
                        }
                    }
                    _ => {
                        let n = len.min(8);
                        let mut word = [0u8; 8];
                        word[..n].copy_from_slice(&bytes[..n]);
                        page.st_le(off, n, u64::from_le_bytes(word));
                        model[off..off + n].copy_from_slice(&bytes[..n]);
                        continue;
                    }
                }
                model[off..off + len].copy_from_slice(bytes);
            }
            for (off, len) in reads {
                let mut got = vec![0u8; len];
                page.read_bytes(off, &mut got);
                // Past the end reads as 0.
                let want: Vec<u8> = (off..off + len).map(|i| model.get(i).copied().unwrap_or(0)).collect();
                prop_assert_eq!(&got, &want);
                for n in 0..=8usize {
                    let mut word = [0u8; 8];
                    for (j, byte) in word.iter_mut().enumerate().take(n) {
                        *byte = model.get(off + j).copied().unwrap_or(0);
                    }
                    prop_assert_eq!(page.ld_le(off, n), u64::from_le_bytes(word), "ld_le({}, {})", off, n);
                }
            }
            let mut image = vec![0u8; 4096];
            page.copy_to(&mut image);
            prop_assert_eq!(image, model);
        }

        /// `compare_key` orders keys as `memcmp` then length does (keys of every length,
        /// at every alignment the record area gives them).
        #[test]
        fn compare_key_is_memcmp_order(
            stored in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..20), 1..40),
            probe in proptest::collection::vec(0u8..4, 0..20),
        ) {
            let buf = PageBuf::new(4096);
            let page = buf.page();
            page.init(PageId::new(0, 1), PageType::Leaf, 0);
            for (i, key) in stored.iter().enumerate() {
                prop_assert!(page.insert_record(i, key, &[0xee; 3][..i % 4]));
            }
            for (i, key) in stored.iter().enumerate() {
                prop_assert_eq!(page.compare_key(i, &probe), key.as_slice().cmp(&probe));
            }
        }
    }

    proptest! {
        /// Keys from a three-letter alphabet, so that many share their 4-byte head (and
        /// some differ only past it, or only in zero padding: `ab` and `ab\0\0`): inserts
        /// through `search` keep key order, every key is found where a sorted model has it,
        /// and an inner page routes every probe as the model does.
        #[test]
        fn keys_whose_heads_tie_are_ordered_by_their_records(
            keys in proptest::collection::btree_set(
                proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(0xffu8)], 0..10),
                0..120),
            probes in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(0xffu8)], 0..10),
                1..20),
        ) {
            let leaf_buf = PageBuf::new(8192);
            let leaf = leaf_buf.page();
            leaf.init(PageId::new(0, 1), PageType::Leaf, 0);
            // Reverse order: every insert goes in front of keys already there.
            for key in keys.iter().rev() {
                let at = leaf.search(key).expect_err("a new key");
                prop_assert!(leaf.insert_record(at, key, b"row"));
            }
            let sorted: Vec<&Vec<u8>> = keys.iter().collect();
            let stored: Vec<Vec<u8>> = rows(&leaf).into_iter().map(|(k, _)| k).collect();
            prop_assert_eq!(stored.iter().collect::<Vec<_>>(), sorted.clone());
            let inner_buf = PageBuf::new(8192);
            let inner = inner_buf.page();
            inner.init(PageId::new(0, 2), PageType::Inner, 1);
            for (i, key) in sorted.iter().enumerate() {
                prop_assert!(inner.insert_record(i, key, &(i as u64).to_le_bytes()));
            }
            // Ascending order: every insert appends, so searches take the append fast path.
            let appended_buf = PageBuf::new(8192);
            let appended = appended_buf.page();
            appended.init(PageId::new(0, 3), PageType::Leaf, 0);
            for (i, key) in sorted.iter().enumerate() {
                prop_assert!(appended.insert_record(i, key, b"row"));
            }
            for probe in probes.iter().chain(keys.iter()) {
                let expected = sorted.binary_search(&probe);
                prop_assert_eq!(leaf.search(probe), expected);
                prop_assert_eq!(appended.search(probe), expected);
                let at_or_below = sorted.iter().filter(|k| k.as_slice() <= probe.as_slice()).count();
                prop_assert_eq!(inner.separators_at_or_below(probe), at_or_below);
            }
            let mut image = vec![0u8; 8192];
            leaf.copy_to(&mut image);
            seal(&mut image);
            prop_assert_eq!(verify(&image, PageId::new(0, 1)), Ok(()));
        }
    }

    /// A head is the first four key bytes, zero-padded, big-endian: heads that differ
    /// order their keys as the keys do.
    #[test]
    fn key_heads_are_the_big_endian_padded_prefix() {
        assert_eq!(key_head(b""), 0);
        assert_eq!(key_head(b"\x01"), 0x0100_0000);
        assert_eq!(key_head(b"\x01\x02\x03\x04\x05"), 0x0102_0304);
        assert!(key_head(b"\x00\xff") < key_head(b"\x01"));
        assert!(key_head(&7u64.to_be_bytes()) == key_head(&8u64.to_be_bytes()));
    }

    /// A slot whose head is not its key's (a bug or damage the checksum was resealed over)
    /// is a structural fault: a search would go the wrong way without reading the record.
    #[test]
    fn a_slot_head_that_is_not_its_keys_is_rejected() {
        let buf = PageBuf::new(4096);
        let page = buf.page();
        page.init(PageId::new(0, 3), PageType::Leaf, 0);
        assert!(page.insert_record(0, b"key-a", b"value"));
        assert!(page.insert_record(1, b"key-b", b"value"));
        let mut image = vec![0u8; 4096];
        page.copy_to(&mut image);
        image[HEADER_BYTES + SLOT_BYTES + 7] ^= 0x01;
        seal(&mut image);
        let err = verify(&image, PageId::new(0, 3)).expect_err("bad head accepted");
        assert!(err.contains("slot 1") && err.contains("head"), "{err}");
    }

    /// Many threads on one page through the hybrid latch, as the buffer pool uses it:
    /// writers rebuild the page under the exclusive latch (records of every length, so
    /// stores straddle words), optimistic readers read it word-wide while it changes, and
    /// every read that validates saw one whole version of the page, never a mix.
    #[test]
    fn optimistic_word_reads_of_a_page_being_rewritten() {
        use crate::latch::HybridLatch;
        use std::sync::atomic::{AtomicU64 as Counter64, Ordering as O};
        const WRITERS: usize = 2;
        const READERS: usize = 6;
        const ROUNDS: u64 = 2_000;
        let latch = HybridLatch::new();
        let buf = PageBuf::new(4096);
        let validated = Counter64::new(0);
        // Generation g: 1 + g % 50 records; record j's key is [g as u8, j], its payload g's
        // eight bytes and then (g + j) % 23 bytes of g as u8 (so lengths, and with them
        // the records' alignment, vary).
        let payload_of = |g: u64, j: u64| {
            let mut payload = g.to_le_bytes().to_vec();
            payload.resize(8 + ((g + j) % 23) as usize, g as u8);
            payload
        };
        let rebuild = |page: &Page<'_>, g: u64| {
            page.init(PageId::new(0, 9), PageType::Leaf, 0);
            for j in 0..1 + g % 50 {
                let key = [g as u8, j as u8];
                assert!(page.insert_record(j as usize, &key, &payload_of(g, j)));
            }
        };
        rebuild(&buf.page(), 0);
        std::thread::scope(|s| {
            for w in 0..WRITERS {
                let (latch, buf, rebuild) = (&latch, &buf, &rebuild);
                s.spawn(move || {
                    for round in 0..ROUNDS {
                        let (_guard, _) = latch.lock_exclusive(|| ());
                        rebuild(&buf.page(), round * WRITERS as u64 + w as u64);
                    }
                });
            }
            for _ in 0..READERS {
                let (latch, buf, validated, payload_of) = (&latch, &buf, &validated, &payload_of);
                s.spawn(move || {
                    for _ in 0..ROUNDS * 4 {
                        let (version, _) = latch.optimistic_or_wait(|| ());
                        let page = buf.page();
                        let n = page.slot_count();
                        let mut seen = Vec::new();
                        for i in 0..n {
                            let (mut key, mut payload) = (Vec::new(), Vec::new());
                            page.copy_key(i, &mut key);
                            page.copy_payload(i, &mut payload);
                            let found = page.search(&key);
                            seen.push((key, payload, found));
                        }
                        if !latch.validate(version) {
                            continue;
                        }
                        let first = seen.first().expect("a page has a record");
                        let g = u64::from_le_bytes(first.1[..8].try_into().expect("8 bytes"));
                        assert_eq!(n as u64, 1 + g % 50, "records of generation {g}");
                        for (j, (key, payload, found)) in seen.iter().enumerate() {
                            assert_eq!(key, &vec![g as u8, j as u8], "key {j} of generation {g}");
                            assert_eq!(payload, &payload_of(g, j as u64), "payload {j}");
                            assert_eq!(*found, Ok(j), "search for key {j}");
                        }
                        validated.fetch_add(1, O::Relaxed);
                    }
                });
            }
        });
        assert!(validated.load(O::Relaxed) > 0, "no read validated");
    }

    #[test]
    fn page_sizes_are_validated() {
        assert!(validate_page_size(8192).is_ok());
        assert!(validate_page_size(65536).is_ok());
        assert!(validate_page_size(2048).is_err());
        assert!(validate_page_size(10000).is_err());
        assert!(validate_page_size(131072).is_err());
        assert_eq!(record_bytes_max(8192), 2024);
    }

    #[test]
    fn corrupt_slot_directory_is_rejected_not_followed() {
        let buf = PageBuf::new(4096);
        let page = buf.page();
        page.init(PageId::new(0, 3), PageType::Leaf, 0);
        assert!(page.insert_record(0, b"k", b"value"));
        let mut image = vec![0u8; 4096];
        page.copy_to(&mut image);
        // Point slot 0 past the end, then reseal so only the structure check can catch it.
        image[HEADER_BYTES..HEADER_BYTES + 2].copy_from_slice(&4095u16.to_le_bytes());
        seal(&mut image);
        let err = verify(&image, PageId::new(0, 3)).expect_err("bad slot accepted");
        assert!(err.contains("slot 0"), "{err}");
    }

    #[test]
    fn torn_reads_do_not_panic() {
        let buf = PageBuf::new(4096);
        let page = buf.page();
        // Garbage header: huge slot count, record area past the end.
        for off in 0..HEADER_BYTES + 64 {
            page.st(off, 0xff);
        }
        let _ = page.search(b"anything");
        let _ = page.child_for(b"anything");
        let mut out = Vec::new();
        page.copy_key(0, &mut out);
        page.copy_payload(0, &mut out);
        assert!(page.slot_count() <= page.slot_capacity());
    }
}
