//! Table designs by name: the seeds' remedies as key kinds and layouts (one clustered
//! B+tree, hash partitions, a B+tree with sequential-key flow control, or a memory-optimized
//! table with no pages at all).

use hotpage::{KeyKind, Layout};

/// A design the stress command can build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Design {
    /// The name users type (`--design NAME`).
    pub name: &'static str,
    /// What it is, for `--help` and reports.
    pub summary: &'static str,
}

/// Every design, in the order reports list them.
pub const DESIGNS: &[Design] = &[
    Design {
        name: "identity",
        summary: "clustered on an identity key: every session inserts on the last page (seed 000, 001 V1)",
    },
    Design {
        name: "identity-flow-control",
        summary: "clustered on an identity key, at most N sessions at a time on the last page (OPTIMIZE_FOR_SEQUENTIAL_KEY, seed 001 V2)",
    },
    Design {
        name: "guid",
        summary: "clustered on a random GUID (v4): inserts spread over all leaves (seed 001 V4)",
    },
    Design {
        name: "guid-v7",
        summary: "clustered on a time-ordered GUID (v7): the hot last page comes back",
    },
    Design {
        name: "hash-prefix",
        summary: "clustered on (id % buckets, id): one hot page per bucket (seed 001 V5)",
    },
    Design {
        name: "hash-partition",
        summary: "N partitions by id % N, each a B+tree on the identity key (seed 000 HeavyInsert_Hash)",
    },
    Design {
        name: "bit-reverse",
        summary: "clustered on a cached sequence with its bits reversed (seed 000)",
    },
    Design {
        name: "session-range",
        summary: "clustered on ids each session takes in blocks (TPC-E TID_RANGES, seed 003)",
    },
    Design {
        name: "heap",
        summary: "a heap: rows placed by a free-space map (empty/50/80/95/100 % categories), one page chain per data file (seed 002)",
    },
    Design {
        name: "heap-nc-identity",
        summary: "a heap plus a nonclustered B+tree on the identity key: the hot page moves to the index's last leaf (seed 001 V3)",
    },
    Design {
        name: "memory",
        summary: "memory-optimized on an identity key: a latch-free ordered index in memory, durable through the log and a checkpoint file, no pages (In-Memory OLTP, seed 001 V6)",
    },
];

/// The comma-separated design names, for messages.
pub fn names() -> String {
    DESIGNS
        .iter()
        .map(|d| d.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Options that shape a design's keys.
#[derive(Clone, Copy, Debug)]
pub struct KeyOptions {
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
    /// Data files of the database: a heap keeps one page chain (and map) per file.
    pub files: u32,
}

/// The key kind of a design, or `None` for an unknown name.
pub fn key_kind(name: &str, options: KeyOptions) -> Option<KeyKind> {
    Some(match name {
        "identity"
        | "identity-flow-control"
        | "hash-partition"
        | "heap"
        | "heap-nc-identity"
        | "memory" => KeyKind::Identity { start: 1, step: 1 },
        "guid" => KeyKind::GuidV4,
        "guid-v7" => KeyKind::GuidV7,
        "hash-prefix" => KeyKind::HashPrefix {
            buckets: options.buckets,
        },
        "bit-reverse" => KeyKind::BitReverse {
            cache: options.cache,
        },
        "session-range" => KeyKind::SessionRange {
            block: options.block,
        },
        _ => return None,
    })
}

/// The layout of a design (clustered for every design but those below).
pub fn layout(name: &str, options: KeyOptions) -> Layout {
    match name {
        "hash-partition" => Layout::HashPartitioned {
            partitions: options.partitions,
        },
        "identity-flow-control" => Layout::FlowControl {
            sessions: options.flow_control_sessions,
        },
        "heap" => Layout::Heap {
            chains: options.files,
        },
        "heap-nc-identity" => Layout::HeapIndexed {
            chains: options.files,
        },
        "memory" => Layout::Memory,
        _ => Layout::Clustered,
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
    fn every_design_name_fits_the_catalog() {
        // A design's name is its table's default name and its catalog design field.
        for design in DESIGNS {
            let len = design.name.len();
            assert!(
                (1..=hotpage::limits::NAME_BYTES_MAX).contains(&len),
                "{}",
                design.name
            );
        }
    }
}
