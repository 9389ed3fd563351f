//! Every decoder of on-disk bytes, fed arbitrary and damaged input: a clear error or a
//! value, never a panic. (cargo-fuzz needs a nightly toolchain; these run in CI on stable.)

use hotpage::PageId;
use hotpage::testing as wal;
use hotpage::testing::Catalog;
use hotpage::testing::Stats;
use hotpage::testing::memtable;
use hotpage::testing::page;
use hotpage::testing::txn::{self, decode_commit};
use hotpage::testing::{BufferPool, FileHeader};
use hotpage::testing::{MemStorage, Storage};
use hotpage::testing::{TreeSplit, decode_heap_link, decode_page_images, decode_page_insert};
use hotpage::testing::{decode_txn_name, encode_txn_name};
use proptest::prelude::*;
use std::path::Path;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn page_verify_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..9000), id in any::<u64>()) {
        let _ = page::verify(&bytes, PageId::from_raw(id));
        // A page-sized buffer with a valid checksum but random structure.
        let mut image = bytes.clone();
        image.resize(4096, 0);
        page::seal(&mut image);
        let _ = page::verify(&image, PageId::from_raw(id));
    }

    #[test]
    fn txn_name_records_never_panic_and_round_trip(
        bytes in proptest::collection::vec(any::<u8>(), 0..400),
        txn in any::<u64>(),
        name in "\\PC{0,64}",
    ) {
        let _ = decode_txn_name(&bytes);
        // At most 64 characters of at most 4 bytes: within TXN_NAME_BYTES_MAX.
        let payload = encode_txn_name(txn, &name);
        prop_assert_eq!(decode_txn_name(&payload).expect("round trip"), (txn, name.as_str()));
        // Any prefix of a record is refused or decodes to a prefix of the name.
        for cut in 0..payload.len() {
            if let Ok((t, n)) = decode_txn_name(&payload[..cut]) {
                prop_assert_eq!(t, txn);
                prop_assert!(name.starts_with(n));
            }
        }
    }

    #[test]
    fn catalog_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = Catalog::decode(&bytes, Path::new("fuzz"));
        // With the right magic and a correct CRC, so the body parser is reached.
        let mut body = b"HPCATLG\0".to_vec();
        body.extend_from_slice(&bytes);
        let crc = crc32c::crc32c(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        let _ = Catalog::decode(&body, Path::new("fuzz"));
    }

    #[test]
    fn data_file_headers_never_panic(
        payload in proptest::collection::vec(any::<u8>(), 0..40),
        files in 1u32..4,
        damaged in 0u32..4,
    ) {
        // A header page with the right magic and any payload, sealed: the decoder and
        // the open of a several-file database reach every field.
        let buf = page::PageBuf::new(4096);
        buf.page().init(PageId::new(0, 0), page::PageType::FileHeader, 0);
        prop_assert!(buf.page().insert_record(0, hotpage::testing::DATA_FILE_MAGIC, &payload));
        let mut image = vec![0u8; 4096];
        buf.page().copy_to(&mut image);
        page::seal(&mut image);
        let _ = FileHeader::decode(&image);
        let mem = MemStorage::new(2);
        {
            let pool = BufferPool::open_in(&*mem, Path::new("fuzz"), 4096, 16 * 4096, files, Stats::new())
                .expect("create");
            pool.flush_all().expect("flush");
        }
        let name = format!("data.{}", damaged % files);
        mem.open(&name, false).expect("open").write_at(&image, 0).expect("write");
        let _ = BufferPool::open_in(&*mem, Path::new("fuzz"), 4096, 16 * 4096, 1, Stats::new());
    }

    #[test]
    fn log_record_decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = decode_commit(&bytes);
        let _ = decode_page_insert(&bytes);
        let _ = decode_page_images(&bytes, 4096);
        let link = decode_heap_link(&bytes);
        prop_assert_eq!(link.is_ok(), bytes.len() == 16);
        let _ = TreeSplit::decode(&bytes);
    }

    /// A split record decodes to what was encoded, and any cut of it is an error.
    #[test]
    fn tree_split_records_round_trip_and_truncations_fail(
        ids in proptest::array::uniform5(any::<u64>()),
        hints in (any::<u16>(), any::<u16>(), any::<u8>(), any::<u8>()),
        separator in proptest::collection::vec(any::<u8>(), 0..40),
        records in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..60), 0..12),
        cut in any::<prop::sample::Index>(),
    ) {
        let split = TreeSplit {
            left: PageId::from_raw(ids[0]),
            right: PageId::from_raw(ids[1]),
            parent: PageId::from_raw(ids[2]),
            page_type: hints.2,
            level: hints.3,
            left_last: hints.0,
            right_last: hints.1,
            right_next: PageId::from_raw(ids[3]),
            right_aux: PageId::from_raw(ids[4]),
            separator,
            right_records: records,
        };
        let bytes = split.encode();
        prop_assert_eq!(TreeSplit::decode(&bytes).expect("decode"), split);
        let short = cut.index(bytes.len());
        prop_assert!(TreeSplit::decode(&bytes[..short]).is_err());
        let mut long = bytes.clone();
        long.push(0);
        prop_assert!(TreeSplit::decode(&long).is_err());
    }

    #[test]
    fn memory_table_file_decoders_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let _ = memtable::decode(&bytes, "fuzz");
        let _ = memtable::parse_frame(&bytes);
        // Behind a valid header, with a valid frame whose bytes are then damaged, so the
        // frame parser is reached with plausible lengths.
        let mut file = memtable::encode_header().to_vec();
        memtable::encode_frame(&mut file, b"key", &bytes);
        file.extend_from_slice(&bytes);
        for (at, value) in flips {
            let i = at.index(file.len());
            file[i] = value;
        }
        let _ = memtable::decode(&file, "fuzz");
        // And through the loader, which reads the file in chunks up to a durable length.
        let mem = MemStorage::new(1);
        let handle = mem.open(&hotpage::testing::memtable_file_name(0), true).expect("open");
        handle.write_at(&file, 0).expect("write");
        let durable = file.len() as u64;
        let _ = memtable::MemTable::open(&*mem, 0, durable);
        let _ = memtable::MemTable::open(&*mem, 0, durable / 2);
    }

    #[test]
    fn log_scan_never_panics_on_damaged_segments(
        segment in proptest::collection::vec(any::<u8>(), 0..3000),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
    ) {
        let mem = MemStorage::new(1);
        let file = mem.open("wal.0000000000000000", true).expect("open");
        let mut bytes = segment;
        // Make the first record header plausible, so the scanner reads a body.
        if bytes.len() >= 8 {
            let len = (bytes.len() as u32).clamp(9, 64);
            bytes[..4].copy_from_slice(&len.to_le_bytes());
        }
        for (at, value) in flips {
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] = value;
            }
        }
        file.write_at(&bytes, 0).expect("write");
        let reader = wal::LogReader::new(&*mem, 1 << 20, 0);
        let end = reader.scan_prefix(0, |_| Ok(())).expect("scan reads what it can");
        prop_assert!(end <= bytes.len() as u64 + 8);
        // Finding the end either proves one or reports damage; it never panics, and a
        // proven end is where the valid records stop.
        if let Ok(found) = reader.find_end(0, 0) {
            prop_assert_eq!(found.end, end);
        }
    }

    #[test]
    fn finding_the_end_never_panics_across_segments(
        first in proptest::collection::vec(any::<u8>(), 0..2048),
        second in proptest::collection::vec(any::<u8>(), 0..2048),
        from_words in 0u64..64,
    ) {
        let mem = MemStorage::new(2);
        // Segment 0 full length (1 MiB) ending in `first`, then a short segment 1.
        let seg = 1u64 << 20;
        let a = mem.open("wal.0000000000000000", true).expect("open");
        a.set_len(seg).expect("len");
        a.write_at(&first, seg - first.len() as u64).expect("write");
        let b = mem.open("wal.0000000000000001", true).expect("open");
        b.write_at(&second, 0).expect("write");
        let reader = wal::LogReader::new(&*mem, seg, 7);
        let from = seg - (from_words * 8).min(seg);
        let _ = reader.find_end(from, 0);
        let _ = reader.find_end(from, seg + 8);
    }

    #[test]
    fn transaction_parts_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = txn::decode_part(&bytes);
    }
}
