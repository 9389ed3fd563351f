//! The two key shapes every engine is compared on: hotpage's `identity` and `guid`.

use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use std::fmt;

/// A table's key, as hotpage's designs of the same name make it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyShape {
    /// 8 bytes, one more than the last (hotpage's `identity`): every insert goes to the
    /// end of the key order.
    Identity,
    /// 16 random bytes (hotpage's `guid`, a version-4 GUID): inserts spread over the
    /// whole key order.
    Guid,
}

impl KeyShape {
    /// Both, in the order reports list them.
    pub const ALL: [KeyShape; 2] = [KeyShape::Identity, KeyShape::Guid];

    /// The design's name (`identity`, `guid`).
    pub fn name(self) -> &'static str {
        match self {
            KeyShape::Identity => "identity",
            KeyShape::Guid => "guid",
        }
    }

    /// Parses a design's name; only the two shapes every peer can make.
    pub fn parse(text: &str) -> Option<KeyShape> {
        KeyShape::ALL.into_iter().find(|shape| shape.name() == text)
    }

    /// Bytes of the key.
    pub fn key_bytes(self) -> usize {
        match self {
            KeyShape::Identity => 8,
            KeyShape::Guid => 16,
        }
    }
}

impl fmt::Display for KeyShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Random 16-byte keys for one session, laid out as a version-4 GUID (as hotpage's
/// `guid` design makes them). A fast non-cryptographic generator, seeded per session:
/// the keys only need to spread, and the generator must cost next to nothing per row.
pub(crate) struct GuidKeys {
    rng: SmallRng,
}

impl GuidKeys {
    pub(crate) fn new(session: usize) -> GuidKeys {
        let mut seed = rand::rng();
        GuidKeys {
            rng: SmallRng::seed_from_u64(seed.next_u64() ^ session as u64),
        }
    }

    pub(crate) fn next_key(&mut self) -> [u8; 16] {
        let mut key = [0u8; 16];
        self.rng.fill_bytes(&mut key);
        key[6] = (key[6] & 0x0f) | 0x40;
        key[8] = (key[8] & 0x3f) | 0x80;
        key
    }
}
