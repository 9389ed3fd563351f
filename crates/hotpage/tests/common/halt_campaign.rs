//! The power-cut campaign that `truncate_crash` and `rebuild_crash` share: an operation is
//! run with the storage halted after 0, 1, 2 … of its storage operations, in each crash
//! mode, until a run finishes without halting; each run's reopened state is checked to be
//! one of the operation's two outcomes.

use hotpage::{CrashMode, Durability, MemStorage};
use std::sync::Arc;

/// One run: halt after that many storage operations (`None`: never), checkpoint after the
/// operation or not, crash in `mode`. Returns (acknowledged, halted, the storage).
pub type Run<'a> = dyn FnMut(Option<u64>, bool, CrashMode) -> (bool, bool, Arc<MemStorage>) + 'a;
/// Reopens the storage and checks it holds one whole outcome: true for "done".
pub type Check<'a> = dyn FnMut(&Arc<MemStorage>, &str) -> bool + 'a;

/// Runs the campaign; asserts that an acknowledged sync operation is always done, that both
/// outcomes were seen, and that a run without a halt is done. Returns (done, not done).
pub fn halt_campaign(
    durability: Durability,
    run: &mut Run<'_>,
    check: &mut Check<'_>,
) -> (u32, u32) {
    let modes = [CrashMode::DropAll, CrashMode::Reorder, CrashMode::Torn];
    let (mut done, mut not_done) = (0, 0);
    let mut n = 0u64;
    loop {
        let mut any_run_halted = false;
        for (i, mode) in modes.iter().enumerate() {
            let (acknowledged, halted, storage) = run(Some(n), i % 2 == 0, *mode);
            let what = format!("{durability:?}, halt after {n} ops, {mode:?}");
            let was_done = check(&storage, &what);
            if acknowledged && durability == Durability::Sync {
                assert!(was_done, "{what}: an acknowledged operation was lost");
            }
            any_run_halted |= halted;
            if was_done {
                done += 1;
            } else {
                not_done += 1;
            }
        }
        n += 1;
        if !any_run_halted {
            break;
        }
        assert!(n < 2_000, "the operation never finished");
    }
    eprintln!("{durability:?}: halts after 0..{n} ops: {done} runs done, {not_done} not");
    // Both outcomes must have been seen, or the campaign tested only one side.
    assert!(done > 0 && not_done > 0, "{done} / {not_done}");
    // A run with no halt finishes, and its checkpoint makes even an async one durable.
    let (acknowledged, _, storage) = run(None, true, CrashMode::DropAll);
    assert!(acknowledged);
    assert!(check(&storage, "no halt"));
    (done, not_done)
}
