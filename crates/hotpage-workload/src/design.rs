//! Table designs as typed values: the seeds' remedies as key kinds and layouts (one
//! clustered B+tree, hash partitions, a B+tree with sequential-key flow control, a heap, or
//! a memory-optimized table with no pages at all).
//!
//! A design's name is parsed once, into [`DesignName`], where the command line is read;
//! its options ([`DesignOptions`]) make it a [`Design`]. Everything after that matches on
//! the enum, so adding a design is one new variant that the compiler makes every `match`
//! handle, instead of a string to find in several places.

use hotpage::{KeyKind, Layout};
use std::fmt;
use std::str::FromStr;

/// The name of a design, as users type it (`--design NAME`). It is also the default table
/// name and the design recorded in the catalog, so every name fits the catalog's name
/// limit (a test checks it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DesignName {
    /// Clustered on an identity key: every session inserts on the last page.
    Identity,
    /// Identity with at most N sessions at a time on the last page.
    IdentityFlowControl,
    /// Clustered on a random GUID (v4).
    Guid,
    /// Clustered on a time-ordered GUID (v7).
    GuidV7,
    /// Clustered on (id % buckets, id).
    HashPrefix,
    /// N partitions by id % N.
    HashPartition,
    /// Clustered on a cached sequence with its bits reversed.
    BitReverse,
    /// Clustered on ids each session takes in blocks.
    SessionRange,
    /// A heap placed by a free-space map.
    Heap,
    /// A heap plus a nonclustered B+tree on the identity key.
    HeapNcIdentity,
    /// Memory-optimized: no pages.
    Memory,
}

impl DesignName {
    /// Every design, in the order reports list them.
    pub const ALL: [DesignName; 11] = [
        DesignName::Identity,
        DesignName::IdentityFlowControl,
        DesignName::Guid,
        DesignName::GuidV7,
        DesignName::HashPrefix,
        DesignName::HashPartition,
        DesignName::BitReverse,
        DesignName::SessionRange,
        DesignName::Heap,
        DesignName::HeapNcIdentity,
        DesignName::Memory,
    ];

    /// The name users type.
    pub fn as_str(self) -> &'static str {
        match self {
            DesignName::Identity => "identity",
            DesignName::IdentityFlowControl => "identity-flow-control",
            DesignName::Guid => "guid",
            DesignName::GuidV7 => "guid-v7",
            DesignName::HashPrefix => "hash-prefix",
            DesignName::HashPartition => "hash-partition",
            DesignName::BitReverse => "bit-reverse",
            DesignName::SessionRange => "session-range",
            DesignName::Heap => "heap",
            DesignName::HeapNcIdentity => "heap-nc-identity",
            DesignName::Memory => "memory",
        }
    }

    /// What it is, for `--help` and reports.
    pub fn summary(self) -> &'static str {
        match self {
            DesignName::Identity => {
                "clustered on an identity key: every session inserts on the last page (seed 000, 001 V1)"
            }
            DesignName::IdentityFlowControl => {
                "clustered on an identity key, at most N sessions at a time on the last page (OPTIMIZE_FOR_SEQUENTIAL_KEY, seed 001 V2)"
            }
            DesignName::Guid => {
                "clustered on a random GUID (v4): inserts spread over all leaves (seed 001 V4)"
            }
            DesignName::GuidV7 => {
                "clustered on a time-ordered GUID (v7): the hot last page comes back"
            }
            DesignName::HashPrefix => {
                "clustered on (id % buckets, id): one hot page per bucket (seed 001 V5)"
            }
            DesignName::HashPartition => {
                "N partitions by id % N, each a B+tree on the identity key (seed 000 HeavyInsert_Hash)"
            }
            DesignName::BitReverse => {
                "clustered on a cached sequence with its bits reversed (seed 000)"
            }
            DesignName::SessionRange => {
                "clustered on ids each session takes in blocks (TPC-E TID_RANGES, seed 003)"
            }
            DesignName::Heap => {
                "a heap: rows placed by a free-space map (empty/50/80/95/100 % categories), one page chain per data file (seed 002)"
            }
            DesignName::HeapNcIdentity => {
                "a heap plus a nonclustered B+tree on the identity key: the hot page moves to the index's last leaf (seed 001 V3)"
            }
            DesignName::Memory => {
                "memory-optimized on an identity key: a latch-free ordered index in memory, durable through the log and a checkpoint file, no pages (In-Memory OLTP, seed 001 V6)"
            }
        }
    }

    /// Whether rows live in a heap (placed by a free-space map) rather than in the leaves of
    /// a B+tree: its report names pages and page fill instead of an index.
    pub fn is_heap(self) -> bool {
        matches!(self, DesignName::Heap | DesignName::HeapNcIdentity)
    }

    /// The comma-separated names, for messages and `--help`.
    pub fn list() -> String {
        DesignName::ALL.map(DesignName::as_str).join(", ")
    }
}

impl fmt::Display for DesignName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a design; its message lists the valid ones.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown design '{name}'; choose one of: {}", DesignName::list())]
pub struct UnknownDesign {
    /// What was typed.
    pub name: String,
}

impl FromStr for DesignName {
    type Err = UnknownDesign;

    fn from_str(name: &str) -> Result<DesignName, UnknownDesign> {
        DesignName::ALL
            .into_iter()
            .find(|d| d.as_str() == name)
            .ok_or_else(|| UnknownDesign {
                name: name.to_string(),
            })
    }
}

/// The options that shape a design's keys and layout (each design reads only its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DesignOptions {
    /// Buckets for hash-prefix.
    pub buckets: u16,
    /// Sequence cache for bit-reverse.
    pub cache: u32,
    /// Ids per block for session-range.
    pub block: u32,
    /// Partitions for hash-partition.
    pub partitions: u32,
    /// Sessions admitted at once for identity-flow-control.
    pub flow_control_sessions: u32,
}

impl Default for DesignOptions {
    /// The command line's defaults (`--buckets 16 --cache 10000 --partitions 8`, a block of
    /// 64 ids, flow control at this machine's CPUs).
    fn default() -> DesignOptions {
        DesignOptions {
            buckets: 16,
            cache: 10_000,
            block: 64,
            partitions: hotpage::limits::PARTITIONS_DEFAULT,
            flow_control_sessions: flow_control_sessions_default(),
        }
    }
}

/// A design with its options: what a table is built as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Design {
    /// Clustered on an identity key.
    Identity,
    /// Identity, at most `sessions` at a time on the last page.
    IdentityFlowControl {
        /// Sessions admitted at once.
        sessions: u32,
    },
    /// Clustered on a random GUID (v4).
    Guid,
    /// Clustered on a time-ordered GUID (v7).
    GuidV7,
    /// Clustered on (id % buckets, id).
    HashPrefix {
        /// Number of buckets.
        buckets: u16,
    },
    /// `partitions` B+trees, rows going to partition id % N.
    HashPartition {
        /// Number of partitions.
        partitions: u32,
    },
    /// A cached sequence with its bits reversed.
    BitReverse {
        /// Sequence cache size.
        cache: u32,
    },
    /// Ids each session takes in blocks.
    SessionRange {
        /// Ids per block.
        block: u32,
    },
    /// A heap (one page chain and free-space map per data file).
    Heap,
    /// A heap plus a nonclustered index on the identity key.
    HeapNcIdentity,
    /// Memory-optimized, no pages.
    Memory,
}

impl Design {
    /// The design `name` with the options it reads.
    pub fn new(name: DesignName, options: &DesignOptions) -> Design {
        match name {
            DesignName::Identity => Design::Identity,
            DesignName::IdentityFlowControl => Design::IdentityFlowControl {
                sessions: options.flow_control_sessions,
            },
            DesignName::Guid => Design::Guid,
            DesignName::GuidV7 => Design::GuidV7,
            DesignName::HashPrefix => Design::HashPrefix {
                buckets: options.buckets,
            },
            DesignName::HashPartition => Design::HashPartition {
                partitions: options.partitions,
            },
            DesignName::BitReverse => Design::BitReverse {
                cache: options.cache,
            },
            DesignName::SessionRange => Design::SessionRange {
                block: options.block,
            },
            DesignName::Heap => Design::Heap,
            DesignName::HeapNcIdentity => Design::HeapNcIdentity,
            DesignName::Memory => Design::Memory,
        }
    }

    /// Its name.
    pub fn name(&self) -> DesignName {
        match self {
            Design::Identity => DesignName::Identity,
            Design::IdentityFlowControl { .. } => DesignName::IdentityFlowControl,
            Design::Guid => DesignName::Guid,
            Design::GuidV7 => DesignName::GuidV7,
            Design::HashPrefix { .. } => DesignName::HashPrefix,
            Design::HashPartition { .. } => DesignName::HashPartition,
            Design::BitReverse { .. } => DesignName::BitReverse,
            Design::SessionRange { .. } => DesignName::SessionRange,
            Design::Heap => DesignName::Heap,
            Design::HeapNcIdentity => DesignName::HeapNcIdentity,
            Design::Memory => DesignName::Memory,
        }
    }

    /// The engine's key kind for this design.
    pub fn key_kind(&self) -> KeyKind {
        match *self {
            Design::Identity
            | Design::IdentityFlowControl { .. }
            | Design::HashPartition { .. }
            | Design::Heap
            | Design::HeapNcIdentity
            | Design::Memory => KeyKind::Identity { start: 1, step: 1 },
            Design::Guid => KeyKind::GuidV4,
            Design::GuidV7 => KeyKind::GuidV7,
            Design::HashPrefix { buckets } => KeyKind::HashPrefix { buckets },
            Design::BitReverse { cache } => KeyKind::BitReverse { cache },
            Design::SessionRange { block } => KeyKind::SessionRange { block },
        }
    }

    /// The engine's layout for this design in a database of `data_files` files: a heap
    /// keeps one page chain and free-space map per data file, which is a property of the
    /// database, not of the design.
    pub fn layout(&self, data_files: u32) -> Layout {
        match *self {
            Design::HashPartition { partitions } => Layout::HashPartitioned { partitions },
            Design::IdentityFlowControl { sessions } => Layout::FlowControl { sessions },
            Design::Heap => Layout::Heap { chains: data_files },
            Design::HeapNcIdentity => Layout::HeapIndexed { chains: data_files },
            Design::Memory => Layout::Memory,
            Design::Identity
            | Design::Guid
            | Design::GuidV7
            | Design::HashPrefix { .. }
            | Design::BitReverse { .. }
            | Design::SessionRange { .. } => Layout::Clustered,
        }
    }
}

impl fmt::Display for Design {
    /// The design's name (its options are not part of it: the catalog records the name).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name().as_str())
    }
}

/// The default of `--flow-control-sessions`: this machine's CPUs.
pub fn flow_control_sessions_default() -> u32 {
    match Layout::flow_control_default() {
        Layout::FlowControl { sessions } => sessions,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips_through_display_and_from_str() {
        for name in DesignName::ALL {
            let text = name.to_string();
            assert_eq!(text.parse::<DesignName>(), Ok(name));
            let design = Design::new(name, &DesignOptions::default());
            assert_eq!(design.name(), name);
            assert_eq!(design.to_string(), text);
        }
    }

    #[test]
    fn a_bad_name_lists_the_valid_ones() {
        let error = "btree-of-doom".parse::<DesignName>().unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("unknown design 'btree-of-doom'"),
            "{message}"
        );
        for name in DesignName::ALL {
            assert!(message.contains(name.as_str()), "{message}");
        }
    }

    #[test]
    fn every_design_name_fits_the_catalog() {
        // A design's name is its table's default name and its catalog design field.
        for name in DesignName::ALL {
            let len = name.as_str().len();
            assert!(
                (1..=hotpage::limits::NAME_BYTES_MAX).contains(&len),
                "{name}"
            );
        }
    }

    #[test]
    fn options_reach_the_key_kind_and_layout() {
        let options = DesignOptions {
            buckets: 3,
            cache: 5,
            block: 7,
            partitions: 11,
            flow_control_sessions: 13,
        };
        let kind = |name| Design::new(name, &options).key_kind();
        assert_eq!(
            kind(DesignName::HashPrefix),
            KeyKind::HashPrefix { buckets: 3 }
        );
        assert_eq!(
            kind(DesignName::BitReverse),
            KeyKind::BitReverse { cache: 5 }
        );
        assert_eq!(
            kind(DesignName::SessionRange),
            KeyKind::SessionRange { block: 7 }
        );
        let layout = |name| Design::new(name, &options).layout(4);
        assert_eq!(
            layout(DesignName::HashPartition),
            Layout::HashPartitioned { partitions: 11 }
        );
        assert_eq!(
            layout(DesignName::IdentityFlowControl),
            Layout::FlowControl { sessions: 13 }
        );
        assert_eq!(layout(DesignName::Heap), Layout::Heap { chains: 4 });
        assert_eq!(layout(DesignName::Memory), Layout::Memory);
        assert!(DesignName::HeapNcIdentity.is_heap() && !DesignName::Identity.is_heap());
    }
}
