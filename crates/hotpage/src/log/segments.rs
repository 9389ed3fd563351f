//! Segment files: segment `n` is the file `wal.<n as 16 hex digits>` and holds LSNs
//! `[n * segment_bytes, (n + 1) * segment_bytes)`, at file offset `lsn % segment_bytes`.

use crate::error::{Error, Result};
use crate::format::{segment_index, segment_name};
use crate::storage::Storage;

/// The indexes of every segment file in `storage`, ascending.
pub fn list_segments(storage: &dyn Storage) -> Result<Vec<u64>> {
    let names = storage
        .list()
        .map_err(|e| Error::io("listing log segments", e))?;
    let mut indexes: Vec<u64> = names.iter().filter_map(|n| segment_index(n)).collect();
    indexes.sort_unstable();
    Ok(indexes)
}

/// Makes every log segment on disk durable (and the directory). Recovery calls it before
/// redo writes any page: after a process crash, log bytes may sit only in the OS cache, and a
/// page written from them must not outlive them.
pub fn sync_segments(storage: &dyn Storage) -> Result<()> {
    for index in list_segments(storage)? {
        let name = segment_name(index);
        storage
            .open(&name, false)
            .and_then(|file| file.sync_data())
            .map_err(|e| Error::io(format!("syncing log segment {name}"), e))?;
    }
    storage
        .sync_dir()
        .map_err(|e| Error::io("syncing the log directory", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_other_files_are_not_segments() {
        for index in [0, 1, 0xabc, u64::MAX] {
            assert_eq!(segment_index(&segment_name(index)), Some(index));
        }
        for other in [
            "wal.1",
            "wal.000000000000000g",
            "catalog",
            "salvage-1-wal.0000000000000001",
            "wal.0000000000000001.tmp",
            "wal.+000000000000001",
        ] {
            assert_eq!(segment_index(other), None, "{other}");
        }
    }
}
