//! Single-session insert and lookup cost through the public API, per design.
//! `cargo bench -p hotpage --bench insert`

use criterion::{Criterion, criterion_group, criterion_main};
use hotpage::{Database, KeyKind, Options};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Each sample inserts into fresh tables of at most `TABLE_ROWS_MAX` rows, so every design
/// is measured on the same table size and the pool never overflows.
const TABLE_ROWS_MAX: u64 = 200_000;

fn inserts(c: &mut Criterion) {
    let mut group = c.benchmark_group("insert_one_row_40_bytes");
    for (design, kind) in [
        ("identity", KeyKind::Identity { start: 1, step: 1 }),
        ("guid", KeyKind::GuidV4),
        ("hash-prefix", KeyKind::HashPrefix { buckets: 16 }),
    ] {
        let row = [7u8; 40];
        group.bench_function(design, |b| {
            b.iter_custom(|iters| {
                let mut measured = Duration::ZERO;
                let mut remaining = iters;
                while remaining > 0 {
                    let chunk = remaining.min(TABLE_ROWS_MAX);
                    let dir = tempfile::tempdir().expect("tempdir");
                    let db =
                        Database::open(dir.path().join("db"), Options::default()).expect("open");
                    let table = db.create_table(design, design, kind).expect("create");
                    let mut session = db.session();
                    let start = Instant::now();
                    for _ in 0..chunk {
                        session.insert(&table, black_box(&row)).expect("insert");
                    }
                    measured += start.elapsed();
                    remaining -= chunk;
                }
                measured
            })
        });
    }
    group.finish();
}

fn lookups(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path().join("db"), Options::default()).expect("open");
    let table = db
        .create_table("t", "identity", KeyKind::Identity { start: 1, step: 1 })
        .expect("create");
    let mut session = db.session();
    let keys: Vec<_> = (0..200_000)
        .map(|_| session.insert(&table, &[7u8; 40]).expect("insert"))
        .collect();
    let mut i = 0usize;
    c.bench_function("get_one_row_of_200k", |b| {
        b.iter(|| {
            i = (i + 7919) % keys.len();
            session.get(&table, black_box(&keys[i])).expect("get")
        })
    });
}

criterion_group!(benches, inserts, lookups);
criterion_main!(benches);
