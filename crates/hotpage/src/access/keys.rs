//! Key generators for tables.
//!
//! The choice of key decides where inserts land in the B+tree: an identity or
//! a time-ordered GUID funnels every insert onto the last page (SQL Server's
//! last-page insert contention), while random GUIDs, hash prefixes,
//! bit-reversed sequences and per-session ranges spread them out.
//!
//! Keys are byte strings compared with `memcmp` by the B+tree, so every
//! encoding here makes byte order equal the logical order.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering as AtomicOrdering};
use std::time::{SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::error::{Error, Result};

/// The largest encoded key, in bytes.
pub const KEY_BYTES_MAX: usize = 32;

/// Flipping the sign bit maps `i64` order onto unsigned big-endian byte order.
const SIGN_BIT: u64 = 1 << 63;

/// The largest unix timestamp a v7 UUID can carry (48 bits of milliseconds).
const V7_MS_MAX: u64 = (1 << 48) - 1;

/// The largest value of the 12-bit v7 counter (`rand_a`).
const V7_COUNTER_MAX: u16 = 0x0FFF;

/// A fresh millisecond starts its counter below this, leaving room to count up.
const V7_COUNTER_SEED_MASK: u16 = 0x07FF;

/// Distinguishes generators so a session cannot be used with the wrong one.
static NEXT_GENERATOR_ID: AtomicU64 = AtomicU64::new(1);

/// Diversifies fallback RNG seeds when the OS RNG is unavailable.
static NEXT_FALLBACK_SEED: AtomicU64 = AtomicU64::new(0);

/// An encoded key: up to [`KEY_BYTES_MAX`] bytes inline, ordered by `memcmp`
/// of its bytes (then by length, so a prefix sorts first).
#[derive(Clone, Copy)]
pub struct Key {
    len: u8,
    bytes: [u8; KEY_BYTES_MAX],
}

impl Key {
    /// Copies `bytes` into a key; longer than [`KEY_BYTES_MAX`] is
    /// [`Error::KeyTooLarge`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Key> {
        if bytes.len() > KEY_BYTES_MAX {
            return Err(Error::KeyTooLarge {
                len: bytes.len(),
                max: KEY_BYTES_MAX,
            });
        }
        let mut inline = [0u8; KEY_BYTES_MAX];
        for (dst, src) in inline.iter_mut().zip(bytes) {
            *dst = *src;
        }
        Ok(Key {
            len: bytes.len() as u8,
            bytes: inline,
        })
    }

    /// The key's encoded bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// Encodes an `i64` as 8 big-endian bytes with the sign bit flipped, so
    /// `memcmp` order equals numeric order.
    pub fn from_i64(v: i64) -> Key {
        Key::from_array(encode_i64(v))
    }

    /// The inverse of [`Key::from_i64`]; `None` unless the key is exactly 8 bytes.
    pub fn to_i64(&self) -> Option<i64> {
        let raw = <[u8; 8]>::try_from(self.as_bytes()).ok()?;
        Some(decode_i64(raw))
    }

    /// Builds a key from a fixed-size array (callers only use arrays that fit).
    fn from_array<const N: usize>(src: [u8; N]) -> Key {
        let mut bytes = [0u8; KEY_BYTES_MAX];
        for (dst, byte) in bytes.iter_mut().zip(src) {
            *dst = byte;
        }
        Key {
            len: N.min(KEY_BYTES_MAX) as u8,
            bytes,
        }
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        // Slice order is memcmp of the common prefix, then length.
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(")?;
        write_hex(f, self.as_bytes())?;
        f.write_str(")")
    }
}

/// The kind of key a table's rows get. Stored in the catalog, so it stays a
/// plain enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// A global counter: `start`, `start + step`, ... (`step != 0`). Every
    /// insert lands on the last page.
    Identity {
        /// The first value.
        start: i64,
        /// The increment between values; never 0.
        step: i64,
    },
    /// A plain ascending sequence; a session reserves `cache` values at a time
    /// (`cache >= 1`), like `CREATE SEQUENCE ... CACHE n`.
    Sequence {
        /// The first value.
        start: i64,
        /// Values a session reserves per touch of the shared counter.
        cache: u32,
    },
    /// Random version-4 UUIDs: inserts spread over the whole tree.
    GuidV4,
    /// Time-ordered version-7 UUIDs: inserts funnel onto the last page again.
    GuidV7,
    /// Sequence values from 0 (cached like [`KeyKind::Sequence`]) with their
    /// 63 low bits reversed, so consecutive values land far apart.
    BitReverse {
        /// Values a session reserves per touch of the shared counter.
        cache: u32,
    },
    /// An identity (start 1, step 1) prefixed by `id.rem_euclid(buckets)` as a
    /// big-endian `u16`: `buckets` insertion points.
    HashPrefix {
        /// The number of buckets; at least 1.
        buckets: u16,
    },
    /// Each session takes blocks of `block` ids (from 1) from a shared
    /// counter and inserts ascending within its block, like TPC-E's
    /// `TID_RANGES`.
    SessionRange {
        /// Ids a session takes per touch of the shared counter.
        block: u32,
    },
}

impl KeyKind {
    /// The kind's short name, as the CLI and catalog dumps show it.
    pub fn name(&self) -> &'static str {
        match self {
            KeyKind::Identity { .. } => "identity",
            KeyKind::Sequence { .. } => "sequence",
            KeyKind::GuidV4 => "guid",
            KeyKind::GuidV7 => "guid-v7",
            KeyKind::BitReverse { .. } => "bit-reverse",
            KeyKind::HashPrefix { .. } => "hash-prefix",
            KeyKind::SessionRange { .. } => "session-range",
        }
    }

    /// Whether the keys it generates ascend, overall, in the order they are handed out
    /// (all of them, or within each bucket or block): inserts then go to the end of a run,
    /// where applying rows in key order keeps the pages full (`db::group_apply`).
    pub fn ascends(&self) -> bool {
        match *self {
            KeyKind::Identity { step, .. } => step > 0,
            KeyKind::Sequence { .. }
            | KeyKind::GuidV7
            | KeyKind::HashPrefix { .. }
            | KeyKind::SessionRange { .. } => true,
            KeyKind::GuidV4 | KeyKind::BitReverse { .. } => false,
        }
    }

    /// Rejects parameters that cannot generate keys: a zero step, cache,
    /// bucket count or block size.
    pub fn validate(&self) -> Result<()> {
        let problem = match *self {
            KeyKind::Identity { step: 0, .. } => Some("identity step must not be 0"),
            KeyKind::Sequence { cache: 0, .. } => Some("sequence cache must be at least 1"),
            KeyKind::BitReverse { cache: 0 } => Some("bit-reverse cache must be at least 1"),
            KeyKind::HashPrefix { buckets: 0 } => Some("hash-prefix buckets must be at least 1"),
            KeyKind::SessionRange { block: 0 } => Some("session-range block must be at least 1"),
            _ => None,
        };
        match problem {
            Some(message) => Err(Error::InvalidOption(message.to_owned())),
            None => Ok(()),
        }
    }

    /// A human-readable form of a key of this kind: the number for integer
    /// kinds (`"42"`; bit-reverse shows the stored, reversed number),
    /// `"bucket 3, id 42"` for hash-prefix, the hyphenated UUID for GUIDs, and
    /// `0x`-prefixed hex for a key that is not a valid encoding of this kind.
    pub fn decode(&self, key: &Key) -> String {
        let bytes = key.as_bytes();
        let decoded = match self {
            KeyKind::Identity { .. }
            | KeyKind::Sequence { .. }
            | KeyKind::BitReverse { .. }
            | KeyKind::SessionRange { .. } => key.to_i64().map(|v| v.to_string()),
            KeyKind::HashPrefix { .. } => <[u8; 10]>::try_from(bytes).ok().map(|raw| {
                let [b0, b1, i0, i1, i2, i3, i4, i5, i6, i7] = raw;
                let bucket = u16::from_be_bytes([b0, b1]);
                let id = decode_i64([i0, i1, i2, i3, i4, i5, i6, i7]);
                format!("bucket {bucket}, id {id}")
            }),
            KeyKind::GuidV4 | KeyKind::GuidV7 => <[u8; 16]>::try_from(bytes)
                .ok()
                .map(|raw| uuid::Uuid::from_bytes(raw).hyphenated().to_string()),
        };
        decoded.unwrap_or_else(|| {
            let mut hex = String::with_capacity(2 + 2 * bytes.len());
            hex.push_str("0x");
            for byte in bytes {
                hex.push_str(&format!("{byte:02x}"));
            }
            hex
        })
    }
}

impl KeyKind {
    /// The counter value that produced `key`, or `None` for GUID kinds and malformed keys.
    /// Recovery uses it to restart a generator past every key it finds in the log.
    pub fn value_of(&self, key: &Key) -> Option<i64> {
        match self {
            KeyKind::Identity { .. } | KeyKind::Sequence { .. } | KeyKind::SessionRange { .. } => {
                key.to_i64()
            }
            KeyKind::BitReverse { .. } => {
                let reversed = key.to_i64()?;
                (reversed >= 0).then(|| reverse_bits_63(reversed as u64) as i64)
            }
            KeyKind::HashPrefix { .. } => {
                let raw = <[u8; 10]>::try_from(key.as_bytes()).ok()?;
                let mut id = [0u8; 8];
                id.copy_from_slice(&raw[2..]);
                Some(decode_i64(id))
            }
            KeyKind::GuidV4 | KeyKind::GuidV7 => None,
        }
    }

    /// The value that follows `value` in this kind's order: where a generator restarts so
    /// that `value` is never handed out again.
    pub fn next_after(&self, value: i64) -> Option<i64> {
        match self {
            KeyKind::Identity { step, .. } => value.checked_add(*step),
            _ => value.checked_add(1),
        }
    }

    /// True if value `a` comes after value `b` in this kind's order.
    pub fn is_later(&self, a: i64, b: i64) -> bool {
        match self {
            KeyKind::Identity { step, .. } if *step < 0 => a < b,
            _ => a > b,
        }
    }
}

/// Keeps a hot atomic on its own cache lines so it does not share them with
/// read-mostly fields.
#[derive(Debug)]
#[repr(align(128))]
struct Padded<T>(T);

/// Shared (per-table) generator state: `Send + Sync`, used by many sessions
/// at once.
///
/// Counter kinds hand out tickets `0, 1, 2, ...` from one shared atomic;
/// ticket `t` is the value `base + t * step`. A value is only handed out if
/// the value after it is still representable, so [`KeyGenerator::high_water`]
/// can always name the first value never handed out.
#[derive(Debug)]
pub struct KeyGenerator {
    kind: KeyKind,
    /// Ties sessions to their generator.
    id: u64,
    /// The value of ticket 0.
    base: i64,
    /// The distance between consecutive tickets' values.
    step: i64,
    /// Tickets taken per touch of the shared counter (1, or the cache/block).
    tickets_per_touch: u32,
    /// Tickets `[0, ticket_limit)` map to values that may be handed out.
    ticket_limit: i128,
    /// The next ticket; goes negative only after 2^63 tickets, which reads as
    /// exhausted.
    tickets: Padded<AtomicI64>,
    /// Set once exhausted so failing callers stop advancing `tickets`.
    exhausted: AtomicBool,
    /// For tests and simulations: GUIDs come from this seed and v7 GUIDs from a logical
    /// clock, so that a run replays exactly (see `Options::key_seed`).
    seed: Option<u64>,
    /// Sessions made so far, to give each seeded session its own stream.
    sessions_made: AtomicU64,
}

impl KeyGenerator {
    /// Creates a generator. `next_value` is the persisted high-water mark
    /// from the catalog (the first value never handed out), or `None` for a
    /// new table, which starts from the kind's start. GUID kinds ignore it.
    pub fn new(kind: KeyKind, next_value: Option<i64>) -> Result<KeyGenerator> {
        kind.validate()?;
        let (start, step, tickets_per_touch) = match kind {
            KeyKind::Identity { start, step } => (start, step, 1),
            KeyKind::Sequence { start, cache } => (start, 1, cache),
            KeyKind::BitReverse { cache } => (0, 1, cache),
            KeyKind::HashPrefix { .. } => (1, 1, 1),
            KeyKind::SessionRange { block } => (1, 1, block),
            KeyKind::GuidV4 | KeyKind::GuidV7 => (0, 1, 1),
        };
        let base = match kind {
            KeyKind::GuidV4 | KeyKind::GuidV7 => 0,
            _ => next_value.unwrap_or(start),
        };
        if matches!(kind, KeyKind::BitReverse { .. }) && base < 0 {
            // Bit reversal is defined on [0, 2^63) only.
            return Err(Error::InvalidOption(format!(
                "bit-reverse next value must not be negative, got {base}"
            )));
        }
        // Room for `value + step` to stay representable, in whole steps.
        let room = if step > 0 {
            i128::from(i64::MAX) - i128::from(base)
        } else {
            i128::from(base) - i128::from(i64::MIN)
        };
        let ticket_limit = room / i128::from(step).abs();
        Ok(KeyGenerator {
            kind,
            id: NEXT_GENERATOR_ID.fetch_add(1, AtomicOrdering::Relaxed),
            base,
            step,
            tickets_per_touch,
            ticket_limit,
            tickets: Padded(AtomicI64::new(0)),
            exhausted: AtomicBool::new(false),
            seed: None,
            sessions_made: AtomicU64::new(0),
        })
    }

    /// Draws GUIDs from `seed` (each session its own stream, by creation order) and v7
    /// timestamps from a logical clock: a run replays exactly. For tests and simulations;
    /// `None` keeps the OS random source and the wall clock.
    pub fn with_seed(mut self, seed: Option<u64>) -> KeyGenerator {
        self.seed = seed;
        self
    }

    /// The kind of key this generator makes.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// A per-session context (sequence cache, RNG, v7 clock): one per
    /// session, never shared.
    pub fn session(&self) -> KeySession {
        let rng = match (self.kind, self.seed) {
            (KeyKind::GuidV4 | KeyKind::GuidV7, Some(seed)) => {
                let session = self.sessions_made.fetch_add(1, AtomicOrdering::Relaxed);
                SmallRng::seed_from_u64(seed ^ session.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            }
            (KeyKind::GuidV4 | KeyKind::GuidV7, None) => os_seeded_rng(),
            // Integer kinds never draw from the RNG; skip the OS call.
            _ => SmallRng::seed_from_u64(self.id),
        };
        KeySession {
            generator_id: self.id,
            next: 0,
            left: 0,
            rng,
            v7_ms: 0,
            v7_counter: 0,
        }
    }

    /// The next key for `session`. Counter kinds never wrap: past the end of
    /// their range they return [`Error::KeySpaceExhausted`].
    pub fn next_key(&self, session: &mut KeySession) -> Result<Key> {
        if session.generator_id != self.id {
            return Err(Error::InvalidOption(
                "key session used with a generator other than the one that created it".to_owned(),
            ));
        }
        match self.kind {
            KeyKind::Identity { .. } => Ok(Key::from_i64(self.reserve(1)?.0)),
            KeyKind::Sequence { .. } | KeyKind::SessionRange { .. } => {
                Ok(Key::from_i64(self.next_cached(session)?))
            }
            KeyKind::BitReverse { .. } => {
                let value = self.next_cached(session)?;
                let value = u64::try_from(value).map_err(|_| self.exhausted_error())?;
                let reversed =
                    i64::try_from(reverse_bits_63(value)).map_err(|_| self.exhausted_error())?;
                Ok(Key::from_i64(reversed))
            }
            KeyKind::HashPrefix { buckets } => {
                let id = self.reserve(1)?.0;
                let bucket = id
                    .checked_rem_euclid(i64::from(buckets))
                    .and_then(|b| u16::try_from(b).ok())
                    .ok_or_else(|| self.exhausted_error())?;
                let [b0, b1] = bucket.to_be_bytes();
                let [i0, i1, i2, i3, i4, i5, i6, i7] = encode_i64(id);
                Ok(Key::from_array([b0, b1, i0, i1, i2, i3, i4, i5, i6, i7]))
            }
            KeyKind::GuidV4 => {
                let mut random = [0u8; 16];
                session.rng.fill(&mut random);
                let uuid = uuid::Builder::from_random_bytes(random).into_uuid();
                Ok(Key::from_array(uuid.into_bytes()))
            }
            // Seeded: one logical millisecond for ever (the counter, then the borrowed
            // milliseconds past it, keep the keys ascending).
            KeyKind::GuidV7 => session.next_v7(match self.seed {
                Some(_) => SEEDED_V7_MS,
                None => unix_now_ms(),
            }),
        }
    }

    /// The value to persist at a clean close so that a reopened generator
    /// never repeats a value: for counter kinds the first value not yet
    /// reserved (reserved-but-unused cache values are skipped after reopen,
    /// as SQL Server's sequence cache does). GUID kinds: 0.
    pub fn high_water(&self) -> i64 {
        if self.is_guid() {
            return 0;
        }
        let taken = self.tickets.0.load(AtomicOrdering::Relaxed);
        // Tickets past the limit (or wrapped negative) were never handed out.
        let used = if taken < 0 {
            self.ticket_limit
        } else {
            i128::from(taken).min(self.ticket_limit)
        };
        let value = i128::from(self.base) + used * i128::from(self.step);
        // In range by construction of `ticket_limit`; saturate defensively.
        i64::try_from(value).unwrap_or(if self.step > 0 { i64::MAX } else { i64::MIN })
    }

    /// Makes sure no value at or before `latest` (a counter value, as
    /// [`KeyKind::value_of`] gives it) is handed out from now on. Salvage uses it when
    /// rows with keys the log no longer knows are on pages. GUID kinds: nothing to do.
    pub fn raise_past(&self, latest: i64) -> Result<()> {
        if self.is_guid() {
            return Ok(());
        }
        // Tickets up to the one that produced `latest` are used; the next is free.
        let distance = (i128::from(latest) - i128::from(self.base)) / i128::from(self.step);
        if distance < 0 {
            return Ok(()); // `latest` comes before anything this generator hands out
        }
        let next_ticket = i64::try_from(distance + 1).map_err(|_| self.exhausted_error())?;
        self.tickets
            .0
            .fetch_max(next_ticket, AtomicOrdering::Relaxed);
        Ok(())
    }

    #[cfg(test)]
    /// How many times shared state was touched (identity: once per value;
    /// cached kinds: once per block; GUID kinds: never).
    pub fn shared_touches(&self) -> u64 {
        if self.is_guid() {
            return 0;
        }
        // Every touch adds exactly `tickets_per_touch`; the reinterpreting
        // cast keeps counting past 2^63.
        let taken = self.tickets.0.load(AtomicOrdering::Relaxed) as u64;
        taken / u64::from(self.tickets_per_touch.max(1))
    }

    fn is_guid(&self) -> bool {
        matches!(self.kind, KeyKind::GuidV4 | KeyKind::GuidV7)
    }

    fn exhausted_error(&self) -> Error {
        Error::KeySpaceExhausted(self.kind.name())
    }

    /// Takes the session's next cached value, reserving a new block when the
    /// cache is empty.
    fn next_cached(&self, session: &mut KeySession) -> Result<i64> {
        if session.left == 0 {
            let (first, count) = self.reserve(self.tickets_per_touch)?;
            session.next = first;
            session.left = count;
        }
        let value = session.next;
        session.left -= 1;
        // Every handed-out value has a representable successor.
        session.next = value
            .checked_add(self.step)
            .ok_or_else(|| self.exhausted_error())?;
        Ok(value)
    }

    /// Reserves up to `count` consecutive tickets with one atomic add; returns
    /// the first value and how many values may be handed out (>= 1).
    fn reserve(&self, count: u32) -> Result<(i64, u32)> {
        if self.exhausted.load(AtomicOrdering::Relaxed) {
            return Err(self.exhausted_error());
        }
        let first_ticket = self
            .tickets
            .0
            .fetch_add(i64::from(count), AtomicOrdering::Relaxed);
        let usable = if first_ticket < 0 {
            0
        } else {
            (self.ticket_limit - i128::from(first_ticket)).clamp(0, i128::from(count))
        };
        if usable == 0 {
            self.exhausted.store(true, AtomicOrdering::Relaxed);
            return Err(self.exhausted_error());
        }
        let first = i128::from(self.base) + i128::from(first_ticket) * i128::from(self.step);
        let first = i64::try_from(first).map_err(|_| self.exhausted_error())?;
        let usable = u32::try_from(usable).map_err(|_| self.exhausted_error())?;
        Ok((first, usable))
    }
}

/// Per-session key state: the reserved block of a cached kind, the RNG and
/// the v7 clock. `Send`, used by one session at a time.
#[derive(Debug)]
pub struct KeySession {
    generator_id: u64,
    /// The next value of the reserved block.
    next: i64,
    /// Values left in the reserved block.
    left: u32,
    rng: SmallRng,
    /// The logical millisecond of the last v7 UUID (may run ahead of the clock).
    v7_ms: u64,
    /// The 12-bit counter (`rand_a`) of the last v7 UUID.
    v7_counter: u16,
}

impl KeySession {
    /// The next v7 UUID given the wall clock `now_ms`; strictly increasing
    /// within the session even if the clock stalls or goes backwards.
    fn next_v7(&mut self, now_ms: u64) -> Result<Key> {
        if now_ms > self.v7_ms {
            self.v7_ms = now_ms;
            self.v7_counter = self.rng.random::<u16>() & V7_COUNTER_SEED_MASK;
        } else if self.v7_counter < V7_COUNTER_MAX {
            self.v7_counter += 1;
        } else {
            // Counter overflow: borrow the next millisecond.
            self.v7_ms = self
                .v7_ms
                .checked_add(1)
                .ok_or(Error::KeySpaceExhausted("guid-v7"))?;
            self.v7_counter = self.rng.random::<u16>() & V7_COUNTER_SEED_MASK;
        }
        if self.v7_ms > V7_MS_MAX {
            return Err(Error::KeySpaceExhausted("guid-v7"));
        }
        let [c0, c1] = self.v7_counter.to_be_bytes();
        let [r0, r1, r2, r3, r4, r5, r6, r7] = self.rng.random::<u64>().to_be_bytes();
        let tail = [c0, c1, r0, r1, r2, r3, r4, r5, r6, r7];
        let uuid = uuid::Builder::from_unix_timestamp_millis(self.v7_ms, &tail).into_uuid();
        Ok(Key::from_array(uuid.into_bytes()))
    }
}

/// 63-bit bit reversal: a bijection on `[0, 2^63)`. Bit 0 becomes bit 62.
pub fn reverse_bits_63(v: u64) -> u64 {
    debug_assert!(v < SIGN_BIT, "reverse_bits_63 input {v} is not below 2^63");
    (v << 1).reverse_bits()
}

fn encode_i64(v: i64) -> [u8; 8] {
    ((v as u64) ^ SIGN_BIT).to_be_bytes()
}

fn decode_i64(raw: [u8; 8]) -> i64 {
    (u64::from_be_bytes(raw) ^ SIGN_BIT) as i64
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for byte in bytes {
        write!(f, "{byte:02x}")?;
    }
    Ok(())
}

/// Milliseconds since the unix epoch; 0 if the clock reads before it.
/// The logical clock of seeded v7 GUIDs: 2026-01-01T00:00:00Z.
const SEEDED_V7_MS: u64 = 1_767_225_600_000;

fn unix_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A session RNG seeded once from the OS; if the OS RNG fails, falls back to
/// the clock and a process counter (GUIDs stay unique in practice, not
/// cryptographically unpredictable).
fn os_seeded_rng() -> SmallRng {
    SmallRng::try_from_os_rng().unwrap_or_else(|_| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let salt = NEXT_FALLBACK_SEED.fetch_add(1, AtomicOrdering::Relaxed);
        SmallRng::seed_from_u64(nanos ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;
    use std::sync::Arc;

    const THREADS: usize = 16;
    const PER_THREAD: usize = 100_000;

    /// Every counter kind plus the GUID kinds, with small caches so blocks
    /// interleave between threads.
    fn all_kinds() -> Vec<KeyKind> {
        vec![
            KeyKind::Identity { start: 1, step: 1 },
            KeyKind::Sequence {
                start: -500,
                cache: 1000,
            },
            KeyKind::GuidV4,
            KeyKind::GuidV7,
            KeyKind::BitReverse { cache: 10_000 },
            KeyKind::HashPrefix { buckets: 16 },
            KeyKind::SessionRange { block: 777 },
        ]
    }

    /// Pads a key of at most 16 bytes into a u128 (same-length keys only).
    fn key_u128(key: &Key) -> u128 {
        let mut raw = [0u8; 16];
        raw[..key.as_bytes().len()].copy_from_slice(key.as_bytes());
        u128::from_be_bytes(raw)
    }

    /// The logical integer a key stands for, for kinds ascending by id.
    fn logical_id(kind: KeyKind, key: &Key) -> i64 {
        match kind {
            KeyKind::HashPrefix { .. } => Key::from_bytes(&key.as_bytes()[2..])
                .unwrap()
                .to_i64()
                .unwrap(),
            _ => key.to_i64().unwrap(),
        }
    }

    fn check_concurrent_unique(kind: KeyKind) {
        let generator = Arc::new(KeyGenerator::new(kind, None).unwrap());
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let generator = Arc::clone(&generator);
                std::thread::spawn(move || {
                    let mut session = generator.session();
                    let mut keys = Vec::with_capacity(PER_THREAD);
                    for _ in 0..PER_THREAD {
                        keys.push(generator.next_key(&mut session).unwrap());
                    }
                    keys
                })
            })
            .collect();
        let mut all = Vec::with_capacity(THREADS * PER_THREAD);
        for handle in handles {
            let keys = handle.join().unwrap();
            let expected_len = keys[0].as_bytes().len();
            assert!(keys.iter().all(|k| k.as_bytes().len() == expected_len));
            match kind {
                KeyKind::Identity { .. }
                | KeyKind::Sequence { .. }
                | KeyKind::SessionRange { .. }
                | KeyKind::HashPrefix { .. } => {
                    // Ids follow the step's direction (only identity may descend).
                    let descending = matches!(kind, KeyKind::Identity { step, .. } if step < 0);
                    for pair in keys.windows(2) {
                        let (first, second) =
                            (logical_id(kind, &pair[0]), logical_id(kind, &pair[1]));
                        assert!(
                            if descending {
                                first > second
                            } else {
                                first < second
                            },
                            "{kind:?}: {:?} then {:?}",
                            pair[0],
                            pair[1]
                        );
                    }
                }
                KeyKind::GuidV7 => {
                    for pair in keys.windows(2) {
                        assert!(pair[0] < pair[1], "{:?} then {:?}", pair[0], pair[1]);
                    }
                }
                KeyKind::GuidV4 | KeyKind::BitReverse { .. } => {}
            }
            all.extend(keys.iter().map(key_u128));
        }
        all.sort_unstable();
        let before = all.len();
        all.dedup();
        assert_eq!(before, THREADS * PER_THREAD);
        assert_eq!(all.len(), before, "{kind:?} produced duplicate keys");
    }

    #[test]
    fn raising_past_a_value_skips_it_and_everything_before() {
        for kind in [
            KeyKind::Identity { start: 1, step: 1 },
            KeyKind::Identity {
                start: 100,
                step: -3,
            },
            KeyKind::Sequence {
                start: 1,
                cache: 10,
            },
            KeyKind::BitReverse { cache: 10 },
            KeyKind::HashPrefix { buckets: 4 },
            KeyKind::SessionRange { block: 8 },
        ] {
            let generator = KeyGenerator::new(kind, None).expect("generator");
            let mut session = generator.session();
            let first = generator.next_key(&mut session).expect("key");
            let first_value = kind.value_of(&first).expect("a counter value");
            let latest = kind
                .next_after(first_value)
                .and_then(|v| kind.next_after(v))
                .expect("value");
            let generator = KeyGenerator::new(kind, None).expect("generator");
            generator.raise_past(latest).expect("raise");
            let mut session = generator.session();
            let next = generator.next_key(&mut session).expect("key");
            let next_value = kind.value_of(&next).expect("a counter value");
            assert!(
                kind.is_later(next_value, latest),
                "{kind:?}: {next_value} after {latest}"
            );
            // Raising to an earlier value changes nothing.
            generator.raise_past(first_value).expect("raise");
            let again = kind.value_of(&generator.next_key(&mut session).expect("key"));
            assert!(again.is_some_and(|v| kind.is_later(v, latest)), "{kind:?}");
        }
    }

    #[test]
    fn concurrent_keys_unique_identity() {
        check_concurrent_unique(all_kinds()[0]);
    }

    #[test]
    fn concurrent_keys_unique_sequence() {
        check_concurrent_unique(all_kinds()[1]);
    }

    #[test]
    fn concurrent_keys_unique_guid_v4() {
        check_concurrent_unique(all_kinds()[2]);
    }

    #[test]
    fn concurrent_keys_unique_guid_v7() {
        check_concurrent_unique(all_kinds()[3]);
    }

    #[test]
    fn concurrent_keys_unique_bit_reverse() {
        check_concurrent_unique(all_kinds()[4]);
    }

    #[test]
    fn concurrent_keys_unique_hash_prefix() {
        check_concurrent_unique(all_kinds()[5]);
    }

    #[test]
    fn concurrent_keys_unique_session_range() {
        check_concurrent_unique(all_kinds()[6]);
    }

    #[test]
    fn concurrent_keys_unique_identity_negative_step() {
        check_concurrent_unique(KeyKind::Identity { start: 0, step: -3 });
    }

    #[test]
    fn identity_counts_from_start_by_step_and_touches_per_value() {
        let generator = KeyGenerator::new(
            KeyKind::Identity {
                start: 10,
                step: -5,
            },
            None,
        )
        .unwrap();
        let mut session = generator.session();
        let values: Vec<i64> = (0..4)
            .map(|_| generator.next_key(&mut session).unwrap().to_i64().unwrap())
            .collect();
        assert_eq!(values, vec![10, 5, 0, -5]);
        assert_eq!(generator.shared_touches(), 4);
        assert_eq!(generator.high_water(), -10);
    }

    #[test]
    fn sequence_cache_touches_once_per_block() {
        for (cache, values) in [(1u32, 7u64), (100, 1050), (100, 1000), (10_000, 1), (3, 10)] {
            let generator = KeyGenerator::new(KeyKind::Sequence { start: 0, cache }, None).unwrap();
            let mut session = generator.session();
            for expected in 0..values {
                let key = generator.next_key(&mut session).unwrap();
                assert_eq!(key.to_i64(), Some(expected as i64));
            }
            assert_eq!(
                generator.shared_touches(),
                values.div_ceil(u64::from(cache)),
                "cache {cache}, {values} values"
            );
        }
    }

    #[test]
    fn session_ranges_are_blocks_per_session() {
        let generator = KeyGenerator::new(KeyKind::SessionRange { block: 10 }, None).unwrap();
        let mut a = generator.session();
        let mut b = generator.session();
        let a1 = generator.next_key(&mut a).unwrap().to_i64().unwrap();
        let b1 = generator.next_key(&mut b).unwrap().to_i64().unwrap();
        let a2 = generator.next_key(&mut a).unwrap().to_i64().unwrap();
        assert_eq!((a1, b1, a2), (1, 11, 2));
        assert_eq!(generator.shared_touches(), 2);
        assert_eq!(generator.high_water(), 21);
    }

    #[test]
    fn hash_prefix_bucket_is_id_mod_buckets() {
        let kind = KeyKind::HashPrefix { buckets: 7 };
        let generator = KeyGenerator::new(kind, None).unwrap();
        let mut session = generator.session();
        for id in 1..=50i64 {
            let key = generator.next_key(&mut session).unwrap();
            let bytes = key.as_bytes();
            assert_eq!(bytes.len(), 10);
            assert_eq!(u16::from_be_bytes([bytes[0], bytes[1]]) as i64, id % 7);
            assert_eq!(Key::from_bytes(&bytes[2..]).unwrap().to_i64(), Some(id));
        }
        assert_eq!(generator.shared_touches(), 50);
        // Reopened at a negative high-water mark the bucket stays in range.
        let generator = KeyGenerator::new(kind, Some(-3)).unwrap();
        let key = generator.next_key(&mut generator.session()).unwrap();
        assert_eq!(kind.decode(&key), "bucket 4, id -3");
    }

    #[test]
    fn bit_reverse_keys_are_reversed_sequence_values() {
        let generator = KeyGenerator::new(KeyKind::BitReverse { cache: 4 }, None).unwrap();
        let mut session = generator.session();
        let values: Vec<i64> = (0..4)
            .map(|_| generator.next_key(&mut session).unwrap().to_i64().unwrap())
            .collect();
        assert_eq!(values, vec![0, 1 << 62, 1 << 61, 3 << 61]);
        assert!(KeyGenerator::new(KeyKind::BitReverse { cache: 4 }, Some(-1)).is_err());
    }

    #[test]
    fn guid_v7_version_variant_and_monotonic() {
        let generator = KeyGenerator::new(KeyKind::GuidV7, None).unwrap();
        let mut session = generator.session();
        let mut previous: Option<Key> = None;
        for _ in 0..20_000 {
            let key = generator.next_key(&mut session).unwrap();
            let uuid = uuid::Uuid::from_slice(key.as_bytes()).unwrap();
            assert_eq!(uuid.get_version_num(), 7);
            assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122);
            assert_eq!(key.as_bytes()[6] >> 4, 7);
            assert_eq!(key.as_bytes()[8] >> 6, 0b10);
            if let Some(previous) = previous {
                assert!(previous < key);
            }
            previous = Some(key);
        }
        assert_eq!(generator.shared_touches(), 0);
        assert_eq!(generator.high_water(), 0);
    }

    #[test]
    fn guid_v7_survives_stalled_and_backward_clock() {
        let generator = KeyGenerator::new(KeyKind::GuidV7, None).unwrap();
        let mut session = generator.session();
        let mut previous = session.next_v7(1_000_000).unwrap();
        // A stalled clock overflows the 12-bit counter; a backward one is ignored.
        let clocks = std::iter::repeat_n(1_000_000, 10_000)
            .chain(std::iter::repeat_n(999_000, 10))
            .chain([2_000_000, 5, 2_000_000]);
        for now_ms in clocks {
            let key = session.next_v7(now_ms).unwrap();
            let uuid = uuid::Uuid::from_slice(key.as_bytes()).unwrap();
            assert_eq!(uuid.get_version_num(), 7);
            assert!(previous < key, "{previous:?} then {key:?} at {now_ms}");
            previous = key;
        }
        assert_eq!(session.v7_ms, 2_000_000);
        let mut far = generator.session();
        assert!(matches!(
            far.next_v7(V7_MS_MAX + 1),
            Err(Error::KeySpaceExhausted("guid-v7"))
        ));
    }

    #[test]
    fn guid_v4_version_and_variant() {
        let generator = KeyGenerator::new(KeyKind::GuidV4, Some(99)).unwrap();
        let mut session = generator.session();
        for _ in 0..1000 {
            let key = generator.next_key(&mut session).unwrap();
            let uuid = uuid::Uuid::from_slice(key.as_bytes()).unwrap();
            assert_eq!(uuid.get_version_num(), 4);
            assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122);
        }
        assert_eq!(generator.high_water(), 0);
    }

    #[test]
    fn reopened_generator_never_repeats_a_value() {
        let kinds = [
            KeyKind::Identity { start: 5, step: 3 },
            KeyKind::Identity { start: 5, step: -3 },
            KeyKind::Sequence {
                start: -20,
                cache: 50,
            },
            KeyKind::BitReverse { cache: 64 },
            KeyKind::HashPrefix { buckets: 5 },
            KeyKind::SessionRange { block: 32 },
        ];
        for kind in kinds {
            let mut seen = HashSet::new();
            let mut next_value = None;
            for _generation in 0..3 {
                let generator = KeyGenerator::new(kind, next_value).unwrap();
                // Several sessions, each leaving part of its cache unused.
                for session_number in 0..4 {
                    let mut session = generator.session();
                    for _ in 0..(10 + 7 * session_number) {
                        let key = generator.next_key(&mut session).unwrap();
                        assert!(seen.insert(key), "{kind:?} repeated {key:?}");
                    }
                }
                next_value = Some(generator.high_water());
            }
        }
    }

    #[test]
    fn counters_stop_at_the_end_of_their_range() {
        // Identity: never hands out i64::MAX, so high_water stays representable.
        let kind = KeyKind::Identity {
            start: i64::MAX - 3,
            step: 1,
        };
        let generator = KeyGenerator::new(kind, None).unwrap();
        let mut session = generator.session();
        let got: Vec<i64> = (0..3)
            .map(|_| generator.next_key(&mut session).unwrap().to_i64().unwrap())
            .collect();
        assert_eq!(got, vec![i64::MAX - 3, i64::MAX - 2, i64::MAX - 1]);
        for _ in 0..3 {
            assert!(matches!(
                generator.next_key(&mut session),
                Err(Error::KeySpaceExhausted("identity"))
            ));
        }
        assert_eq!(generator.high_water(), i64::MAX);
        let reopened = KeyGenerator::new(kind, Some(generator.high_water())).unwrap();
        assert!(reopened.next_key(&mut reopened.session()).is_err());

        // Negative step with a stride that does not divide the room.
        let kind = KeyKind::Identity {
            start: i64::MIN + 25,
            step: -10,
        };
        let generator = KeyGenerator::new(kind, None).unwrap();
        let mut session = generator.session();
        assert_eq!(
            generator.next_key(&mut session).unwrap().to_i64(),
            Some(i64::MIN + 25)
        );
        assert_eq!(
            generator.next_key(&mut session).unwrap().to_i64(),
            Some(i64::MIN + 15)
        );
        assert!(generator.next_key(&mut session).is_err());
        assert_eq!(generator.high_water(), i64::MIN + 5);

        // Cached kinds hand out a partial last block, then stop.
        let kind = KeyKind::Sequence {
            start: i64::MAX - 5,
            cache: 100,
        };
        let generator = KeyGenerator::new(kind, None).unwrap();
        let mut session = generator.session();
        let got: Vec<i64> = (0..5)
            .map(|_| generator.next_key(&mut session).unwrap().to_i64().unwrap())
            .collect();
        assert_eq!(got.last(), Some(&(i64::MAX - 1)));
        assert!(matches!(
            generator.next_key(&mut session),
            Err(Error::KeySpaceExhausted("sequence"))
        ));
        let mut other = generator.session();
        assert!(generator.next_key(&mut other).is_err());
        assert_eq!(generator.high_water(), i64::MAX);

        let generator =
            KeyGenerator::new(KeyKind::BitReverse { cache: 8 }, Some(i64::MAX - 2)).unwrap();
        let mut session = generator.session();
        let last = generator.next_key(&mut session).unwrap();
        assert_eq!(
            last.to_i64(),
            Some(reverse_bits_63((i64::MAX - 2) as u64) as i64)
        );
        assert!(generator.next_key(&mut session).is_ok());
        assert!(matches!(
            generator.next_key(&mut session),
            Err(Error::KeySpaceExhausted("bit-reverse"))
        ));
    }

    #[test]
    fn session_from_another_generator_is_rejected() {
        let kind = KeyKind::Sequence {
            start: 1,
            cache: 10,
        };
        let a = KeyGenerator::new(kind, None).unwrap();
        let b = KeyGenerator::new(kind, None).unwrap();
        let mut session = a.session();
        assert!(matches!(
            b.next_key(&mut session),
            Err(Error::InvalidOption(_))
        ));
    }

    #[test]
    fn value_of_inverts_every_counter_kind() {
        for kind in [
            KeyKind::Identity { start: 5, step: -3 },
            KeyKind::Sequence { start: 1, cache: 7 },
            KeyKind::BitReverse { cache: 7 },
            KeyKind::HashPrefix { buckets: 16 },
            KeyKind::SessionRange { block: 7 },
        ] {
            let generator = KeyGenerator::new(kind, None).expect("generator");
            let mut session = generator.session();
            let mut last: Option<i64> = None;
            for _ in 0..50 {
                let key = generator.next_key(&mut session).expect("key");
                let value = kind.value_of(&key).expect("value");
                if let Some(previous) = last {
                    assert!(kind.is_later(value, previous), "{kind:?}");
                }
                last = Some(value);
            }
            let restart = kind.next_after(last.expect("value")).expect("next");
            let reopened = KeyGenerator::new(kind, Some(restart)).expect("generator");
            let next = reopened.next_key(&mut reopened.session()).expect("key");
            assert!(kind.is_later(kind.value_of(&next).expect("value"), last.expect("value")));
        }
        assert_eq!(KeyKind::GuidV4.value_of(&Key::from_i64(1)), None);
    }

    #[test]
    fn validate_rejects_zero_parameters() {
        let bad = [
            KeyKind::Identity { start: 1, step: 0 },
            KeyKind::Sequence { start: 1, cache: 0 },
            KeyKind::BitReverse { cache: 0 },
            KeyKind::HashPrefix { buckets: 0 },
            KeyKind::SessionRange { block: 0 },
        ];
        for kind in bad {
            match kind.validate() {
                Err(Error::InvalidOption(message)) => {
                    assert!(message.contains(kind.name()), "{message}")
                }
                other => panic!("{kind:?} validated as {other:?}"),
            }
            assert!(KeyGenerator::new(kind, None).is_err());
        }
        for kind in all_kinds() {
            kind.validate().unwrap();
        }
    }

    #[test]
    fn kind_names() {
        let names: Vec<&str> = all_kinds().iter().map(KeyKind::name).collect();
        assert_eq!(
            names,
            vec![
                "identity",
                "sequence",
                "guid",
                "guid-v7",
                "bit-reverse",
                "hash-prefix",
                "session-range"
            ]
        );
    }

    #[test]
    fn decode_strings() {
        let identity = KeyKind::Identity { start: 1, step: 1 };
        assert_eq!(identity.decode(&Key::from_i64(42)), "42");
        assert_eq!(identity.decode(&Key::from_i64(-7)), "-7");
        assert_eq!(
            KeyKind::BitReverse { cache: 1 }.decode(&Key::from_i64(1 << 62)),
            (1i64 << 62).to_string()
        );
        let hash = KeyKind::HashPrefix { buckets: 13 };
        let mut raw = vec![0, 3];
        raw.extend_from_slice(Key::from_i64(42).as_bytes());
        assert_eq!(
            hash.decode(&Key::from_bytes(&raw).unwrap()),
            "bucket 3, id 42"
        );
        let uuid = uuid::Uuid::parse_str("0190a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b").unwrap();
        let key = Key::from_bytes(uuid.as_bytes()).unwrap();
        assert_eq!(
            KeyKind::GuidV7.decode(&key),
            "0190a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b"
        );
        let malformed = Key::from_bytes(&[0x00, 0xab]).unwrap();
        assert_eq!(identity.decode(&malformed), "0x00ab");
        assert_eq!(KeyKind::GuidV4.decode(&malformed), "0x00ab");
        assert_eq!(hash.decode(&Key::from_bytes(&[]).unwrap()), "0x");
    }

    #[test]
    fn key_from_bytes_limits_and_round_trips() {
        let max = [7u8; KEY_BYTES_MAX];
        assert_eq!(Key::from_bytes(&max).unwrap().as_bytes(), &max[..]);
        match Key::from_bytes(&[0u8; KEY_BYTES_MAX + 1]) {
            Err(Error::KeyTooLarge { len, max }) => {
                assert_eq!((len, max), (KEY_BYTES_MAX + 1, KEY_BYTES_MAX))
            }
            other => panic!("expected KeyTooLarge, got {other:?}"),
        }
        assert_eq!(Key::from_bytes(&[]).unwrap().as_bytes(), &[] as &[u8]);
        assert_eq!(Key::from_bytes(&[1, 2, 3]).unwrap().to_i64(), None);
        assert_eq!(Key::from_bytes(&[0; 9]).unwrap().to_i64(), None);
        assert_eq!(Key::from_i64(0).as_bytes(), &[0x80, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(Key::from_i64(i64::MIN).as_bytes(), &[0; 8]);
    }

    #[test]
    fn key_order_is_memcmp_then_length() {
        let k = |b: &[u8]| Key::from_bytes(b).unwrap();
        assert!(k(&[]) < k(&[0]));
        assert!(k(&[1]) < k(&[1, 0]));
        assert!(k(&[1, 0]) < k(&[2]));
        assert!(k(&[0x7f, 0xff]) < k(&[0x80]));
        assert_eq!(k(&[5, 6]), k(&[5, 6]));
        let mut set = HashSet::new();
        set.insert(k(&[5, 6]));
        assert!(set.contains(&k(&[5, 6])));
        assert!(!set.contains(&k(&[5, 6, 0])));
    }

    #[test]
    fn key_debug_is_hex() {
        assert_eq!(
            format!("{:?}", Key::from_bytes(&[0x00, 0xab, 0x10]).unwrap()),
            "Key(00ab10)"
        );
        assert_eq!(format!("{:?}", Key::from_bytes(&[]).unwrap()), "Key()");
    }

    #[test]
    fn reverse_bits_63_known_values_and_distinct_sample() {
        assert_eq!(reverse_bits_63(0), 0);
        assert_eq!(reverse_bits_63(1), 1 << 62);
        assert_eq!(reverse_bits_63(1 << 62), 1);
        assert_eq!(reverse_bits_63((1 << 63) - 1), (1 << 63) - 1);
        let mut outputs: Vec<u64> = (0..100_000u64)
            .chain((0..1000u64).map(|i| (1 << 63) - 1 - i))
            .map(reverse_bits_63)
            .collect();
        let before = outputs.len();
        outputs.sort_unstable();
        outputs.dedup();
        assert_eq!(outputs.len(), before);
    }

    proptest! {
        #[test]
        fn reverse_bits_63_is_an_involution_below_2_63(x in 0u64..(1u64 << 63)) {
            let reversed = reverse_bits_63(x);
            prop_assert!(reversed < 1 << 63);
            prop_assert_eq!(reverse_bits_63(reversed), x);
        }

        #[test]
        fn reverse_bits_63_distinct_inputs_distinct_outputs(
            a in 0u64..(1u64 << 63),
            b in 0u64..(1u64 << 63),
        ) {
            prop_assert_eq!(a == b, reverse_bits_63(a) == reverse_bits_63(b));
        }

        #[test]
        fn from_i64_order_matches_numeric_order(a in any::<i64>(), b in any::<i64>()) {
            prop_assert_eq!(a.cmp(&b), Key::from_i64(a).cmp(&Key::from_i64(b)));
            prop_assert_eq!(a.cmp(&b), Key::from_i64(a).as_bytes().cmp(Key::from_i64(b).as_bytes()));
        }

        #[test]
        fn from_i64_round_trips(v in any::<i64>()) {
            prop_assert_eq!(Key::from_i64(v).to_i64(), Some(v));
            prop_assert_eq!(Key::from_bytes(Key::from_i64(v).as_bytes()).unwrap().to_i64(), Some(v));
        }
    }
}
