//! The database `truncate_crash` and `rebuild_crash` open: small pages, pool and log
//! segments so a campaign's runs are short, no automatic checkpoint or async flush (the
//! campaign decides when they happen), and seeded keys so every run replays.

use hotpage::{Database, Durability, MemStorage, Options, Storage, WalOptions};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The campaign's options at `durability`.
pub fn options(durability: Durability) -> Options {
    Options {
        page_size: 4096,
        pool_bytes: 64 * 4096,
        durability,
        wal: WalOptions {
            segment_bytes: 1 << 20,
            buffer_bytes: 1 << 20,
            async_flush_interval: Duration::from_secs(3600),
        },
        checkpoint_log_bytes: u64::MAX,
        checkpoint_interval: Duration::from_secs(3600),
        key_seed: Some(7),
        ..Options::default()
    }
}

/// Opens the database at `path` in `storage` with the campaign's options.
pub fn open_at(storage: &Arc<MemStorage>, path: &str, durability: Durability) -> Database {
    Database::open_with_storage(
        Arc::clone(storage) as Arc<dyn Storage>,
        Path::new(path),
        options(durability),
    )
    .expect("open")
}
