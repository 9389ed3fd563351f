//! Keeping a commit group whole between flushes.
//!
//! Without this, a few sessions committing under `sync` split into two halves that take
//! turns: a flush starts as soon as the last one ends, with only the commits that arrived
//! during it, while the commits it just woke are still on their way back (woken, applying
//! their rows, inserting the next). Each commit then waits about two flushes, and a flush
//! carries half the sessions (8 sessions: 4.2 commits a flush). The cure is to let the
//! next flush wait, briefly, for the group the last one woke, and to let those committers
//! come back quickly: a parked thread on this kind of machine takes 80–110 µs to run
//! again after its wake-up, longer than the flush it waits for.
//!
//! Both hold only while the database has few sessions (`GROUP_SESSIONS_MAX`, counted by
//! `Stats::session_slot`). With many sessions a flush is full anyway and the CPU, not the
//! disk, is the limit; there a held-back flush only adds latency (the first try at
//! gathering lost 6–19 % at 64 sessions), and spinning committers wake in no order, so
//! their rows reach the last leaf out of key order and split it early (leaf fill fell from
//! 88 % to 79 % at 64 sessions when spinning was allowed there; docs/BENCHMARKS.md,
//! "Gathering a flush group").
//!
//! Nothing here changes what a flush writes or whom it wakes: only when a flush starts and
//! how a committer waits. Durability does not depend on it.

use std::time::{Duration, Instant};

/// The most sessions a database may have for its flushes to gather their group and its
/// committers to spin: beyond it the flushes are full without waiting.
pub(crate) const GROUP_SESSIONS_MAX: usize = 16;
/// How long after the last flush ended the next one may wait for its group.
const GATHER_WAIT_MAX: Duration = Duration::from_micros(60);
/// How long a committer in a small group spins (yielding its core) before it parks:
/// about two flushes, the longest a commit waits when the disk is the limit.
pub(super) const COMMIT_SPIN_MAX: Duration = Duration::from_micros(400);

/// What the last flush tells the next one about the group to expect.
#[derive(Clone, Copy, Debug)]
pub(super) struct GroupPlan {
    // The commits expected in the next flush: those the last flush covered (they come
    // back) and those already waiting when it ended.
    target: usize,
    flushed_at: Instant,
}

impl GroupPlan {
    /// Before any flush: no group to wait for.
    pub(super) fn none() -> GroupPlan {
        GroupPlan {
            target: 0,
            flushed_at: Instant::now(),
        }
    }

    /// After a flush that covered `covered` commits, with `waiting` more already waiting,
    /// in a database of `sessions` sessions (none expected beyond `GROUP_SESSIONS_MAX`).
    pub(super) fn after_flush(covered: usize, waiting: usize, sessions: usize) -> GroupPlan {
        let target = if sessions <= GROUP_SESSIONS_MAX {
            covered.saturating_add(waiting).min(sessions)
        } else {
            0
        };
        GroupPlan {
            target,
            flushed_at: Instant::now(),
        }
    }

    /// The commits expected in the next flush.
    pub(super) fn target(&self) -> usize {
        self.target
    }

    /// Until when the next flush waits for `target` commits; `None` when it should not
    /// wait (one committer, or a group large enough that waiting only costs).
    pub(super) fn gather_until(&self) -> Option<Instant> {
        Self::is_group(self.target).then(|| self.flushed_at + GATHER_WAIT_MAX)
    }

    /// True when a committer should spin rather than park: the last flush expects a group
    /// (`target`, from `after_flush`) and the database still has few sessions.
    pub(super) fn spin_waits(target: usize, sessions: usize) -> bool {
        Self::is_group(target) && sessions <= GROUP_SESSIONS_MAX
    }

    fn is_group(target: usize) -> bool {
        (2..=GROUP_SESSIONS_MAX).contains(&target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_committer_never_waits_for_a_group() {
        assert!(GroupPlan::after_flush(1, 0, 8).gather_until().is_none());
        assert!(GroupPlan::after_flush(0, 1, 8).gather_until().is_none());
        assert!(GroupPlan::after_flush(4, 4, 1).gather_until().is_none());
        assert!(GroupPlan::none().gather_until().is_none());
        assert!(!GroupPlan::spin_waits(1, 8));
    }

    #[test]
    fn a_small_group_waits_a_bounded_time_and_many_sessions_not_at_all() {
        let plan = GroupPlan::after_flush(4, 4, 8);
        assert_eq!(plan.target(), 8);
        let until = plan.gather_until().expect("a group of 8 is gathered");
        assert!(until <= Instant::now() + GATHER_WAIT_MAX);
        assert!(GroupPlan::spin_waits(8, 8));
        // Never more than the database's sessions.
        assert_eq!(GroupPlan::after_flush(6, 6, 8).target(), 8);
        let many = GroupPlan::after_flush(4, 4, 64);
        assert!(many.gather_until().is_none());
        assert!(!GroupPlan::spin_waits(8, 64));
    }
}
