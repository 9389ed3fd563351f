//! Unique keys for tables whose keys a caller may supply (`Session::insert_keyed`).
//!
//! A row's commit record is logged before its row is applied to the tree, and a row that
//! then turns out to be a duplicate could not be taken back out of a logged transaction:
//! its other rows would be applied and this one not. So a keyed insert proves its key
//! unique *before* it logs anything: it locks the key here (no other session can insert the
//! same key until this one's row is applied or abandoned), then looks the key up in the
//! table. The lock is released once the row is in the table (autocommit), or at the end of
//! the transaction.
//!
//! Deadlock freedom: a session waits for a key only while it holds no key lock itself
//! (then nobody can be waiting for it, so no cycle can form); a session that does hold keys
//! waits at most [`HOLDING_WAIT`] and then gets [`Error::KeyLockTimeout`].
//!
//! A wait also ends when the session's [`WaitLimits`] say so (`Session::set_wait_limits`):
//! a cancel, the statement's deadline, the lock timeout. Without them a statement waiting
//! for a key that an idle transaction holds could be stopped by nothing but that
//! transaction's end.

use crate::access::keys::Key;
use crate::error::{Error, Result};
use crate::stats::{Stats, WaitMark, WaitType, elapsed_ns, mark_waiting};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What may end a session's wait for another session's key, set by its embedder (the SQL
/// layer: a cancel request, `statement_timeout`, `lock_timeout`).
#[derive(Clone, Debug, Default)]
pub struct WaitLimits {
    /// A flag whoever may cancel the session's work sets: the wait ends with
    /// [`WaitStop::Cancelled`] (the flag is left set for the embedder to see).
    pub cancel: Option<Arc<AtomicBool>>,
    /// The wait ends then with [`WaitStop::Deadline`] (the statement's timeout).
    pub deadline: Option<Instant>,
    /// The longest one wait may take: [`WaitStop::LockTimeout`].
    pub lock_timeout: Option<Duration>,
}

/// Why a wait ended early ([`Error::WaitStopped`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitStop {
    /// The cancel flag was set.
    Cancelled,
    /// The deadline passed.
    Deadline,
    /// The lock timeout passed.
    LockTimeout,
}

/// How often a wait looks at the cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(10);

impl WaitLimits {
    /// Why a wait that began at `started` must end now, if it must.
    fn stop(&self, started: Instant, now: Instant) -> Option<WaitStop> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return Some(WaitStop::Cancelled);
        }
        if self.deadline.is_some_and(|d| now >= d) {
            return Some(WaitStop::Deadline);
        }
        if self.lock_timeout.is_some_and(|t| now >= started + t) {
            return Some(WaitStop::LockTimeout);
        }
        None
    }

    /// When to look again (None: only when woken).
    fn next_look(&self, started: Instant, now: Instant) -> Option<Instant> {
        let cancel = self.cancel.as_ref().map(|_| now + CANCEL_POLL);
        let lock = self.lock_timeout.map(|t| started + t);
        [cancel, self.deadline, lock].into_iter().flatten().min()
    }
}

/// The session asking for a key.
pub(super) struct Requester<'a> {
    pub session: u64,
    /// It holds other keys: it may wait [`HOLDING_WAIT`] at most.
    pub holding_others: bool,
    pub limits: &'a WaitLimits,
}

/// Shards: sessions inserting different keys rarely share a mutex.
const SHARDS: usize = 16;

/// The longest a session that holds key locks waits for another's key.
pub(super) const HOLDING_WAIT: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Shard {
    // Key -> the session id inserting it.
    held: Mutex<HashMap<Key, u64>>,
    released: Condvar,
}

/// The keys sessions are inserting into one table and have not yet applied or abandoned.
pub(super) struct KeyLocks {
    shards: [Shard; SHARDS],
    hasher: RandomState,
}

impl Default for KeyLocks {
    fn default() -> Self {
        KeyLocks {
            shards: std::array::from_fn(|_| Shard::default()),
            hasher: RandomState::new(),
        }
    }
}

impl KeyLocks {
    fn shard(&self, key: &Key) -> &Shard {
        let index = (self.hasher.hash_one(key) as usize) % SHARDS;
        &self.shards[index]
    }

    /// Locks `key` for `session`. Waits while another session holds it: for as long as it
    /// takes if `holding_others` is false, else [`HOLDING_WAIT`] at most. A key the session
    /// already holds is [`Error::DuplicateKey`] (it inserted the key before, in this
    /// transaction).
    pub(super) fn lock(
        &self,
        key: &Key,
        requester: &Requester<'_>,
        table: &str,
        stats: &Stats,
        describe: impl Fn(&Key) -> String,
    ) -> Result<()> {
        let Requester {
            session,
            holding_others,
            limits,
        } = *requester;
        let shard = self.shard(key);
        let mut held = shard.held.lock();
        let started = Instant::now();
        let deadline = started + HOLDING_WAIT;
        // Set at the first wait; dropped (recording it) on every way out.
        let mut wait: Option<KeyWait<'_>> = None;
        loop {
            match held.get(key) {
                None => {
                    held.insert(*key, session);
                    return Ok(());
                }
                Some(&owner) if owner == session => {
                    return Err(Error::DuplicateKey {
                        table: table.to_string(),
                        key: describe(key),
                    });
                }
                Some(_) => {
                    wait.get_or_insert_with(|| KeyWait::begin(stats));
                    let now = Instant::now();
                    if let Some(stop) = limits.stop(started, now) {
                        return Err(Error::WaitStopped(stop));
                    }
                    let look = limits.next_look(started, now);
                    if !holding_others {
                        match look {
                            None => shard.released.wait(&mut held),
                            Some(look) => {
                                shard.released.wait_until(&mut held, look);
                            }
                        }
                        continue;
                    }
                    let until = look.map_or(deadline, |look| look.min(deadline));
                    if shard.released.wait_until(&mut held, until).timed_out()
                        && Instant::now() >= deadline
                        && held.get(key).is_some_and(|&owner| owner != session)
                    {
                        return Err(Error::KeyLockTimeout {
                            table: table.to_string(),
                            key: describe(key),
                        });
                    }
                }
            }
        }
    }

    /// Releases `key`, held by `session`, and wakes the sessions waiting in its shard.
    pub(super) fn unlock(&self, key: &Key, session: u64) {
        let shard = self.shard(key);
        let removed = {
            let mut held = shard.held.lock();
            let owned = held.get(key) == Some(&session);
            debug_assert!(owned, "a session released a key lock it does not hold");
            owned && held.remove(key).is_some()
        };
        if removed {
            shard.released.notify_all();
        }
    }

    /// Keys held now (for tests and assertions).
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.shards.iter().map(|s| s.held.lock().len()).sum()
    }
}

/// A wait for a key lock, recorded as `LCK_M_X` when it ends (and shown live meanwhile).
struct KeyWait<'a> {
    stats: &'a Stats,
    start: Instant,
    _mark: WaitMark,
}

impl<'a> KeyWait<'a> {
    fn begin(stats: &'a Stats) -> KeyWait<'a> {
        KeyWait {
            stats,
            start: Instant::now(),
            _mark: mark_waiting(WaitType::KeyLock, None),
        }
    }
}

impl Drop for KeyWait<'_> {
    fn drop(&mut self) {
        self.stats
            .record_wait(WaitType::KeyLock, None, elapsed_ns(self.start));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn describe(key: &Key) -> String {
        format!("{:?}", key.to_i64())
    }

    static NO_LIMITS: WaitLimits = WaitLimits {
        cancel: None,
        deadline: None,
        lock_timeout: None,
    };

    fn requester(session: u64, holding_others: bool) -> Requester<'static> {
        Requester {
            session,
            holding_others,
            limits: &NO_LIMITS,
        }
    }

    #[test]
    fn a_key_held_by_one_session_is_a_duplicate_for_it_and_waited_for_by_others() {
        let locks = Arc::new(KeyLocks::default());
        let stats = Stats::new();
        let key = Key::from_i64(7);
        locks
            .lock(&key, &requester(1, false), "t", &stats, describe)
            .expect("free key");
        assert!(matches!(
            locks.lock(&key, &requester(1, true), "t", &stats, describe),
            Err(Error::DuplicateKey { .. })
        ));
        // A session that holds other keys gives up after HOLDING_WAIT.
        let started = Instant::now();
        assert!(matches!(
            locks.lock(&key, &requester(2, true), "t", &stats, describe),
            Err(Error::KeyLockTimeout { .. })
        ));
        assert!(started.elapsed() >= HOLDING_WAIT);
        // The wait shows in the statistics, a second long.
        let waits = |stats: &Stats| {
            let totals = stats.snapshot().wait(WaitType::KeyLock);
            (totals.count, totals.wait_ns)
        };
        let (count, total_ns) = waits(&stats);
        assert_eq!(count, 1);
        assert!(total_ns >= HOLDING_WAIT.as_nanos() as u64);
        // One that holds none waits until the key is released.
        let got = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (locks, got, stats) = (Arc::clone(&locks), Arc::clone(&got), Arc::clone(&stats));
            std::thread::spawn(move || {
                locks
                    .lock(&key, &requester(3, false), "t", &stats, describe)
                    .expect("after release");
                got.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !got.load(Ordering::SeqCst),
            "took a key another session holds"
        );
        locks.unlock(&key, 1);
        waiter.join().expect("waiter");
        assert!(got.load(Ordering::SeqCst));
        assert_eq!(locks.held(), 1);
        assert_eq!(waits(&stats).0, 2, "the second wait is counted too");
        locks.unlock(&key, 3);
        assert_eq!(locks.held(), 0);
    }

    #[test]
    fn a_wait_ends_at_a_cancel_a_deadline_or_the_lock_timeout() {
        let locks = KeyLocks::default();
        let stats = Stats::new();
        let key = Key::from_i64(9);
        locks
            .lock(&key, &requester(1, false), "t", &stats, describe)
            .expect("free key");
        let wait = |limits: WaitLimits, holding_others| {
            let requester = Requester {
                session: 2,
                holding_others,
                limits: &limits,
            };
            let started = Instant::now();
            let outcome = locks.lock(&key, &requester, "t", &stats, describe);
            (outcome, started.elapsed())
        };
        let short = Duration::from_millis(50);
        // Holding first: without the limits that wait still ends (at HOLDING_WAIT).
        for holding_others in [true, false] {
            let (outcome, took) = wait(
                WaitLimits {
                    lock_timeout: Some(short),
                    ..WaitLimits::default()
                },
                holding_others,
            );
            assert!(matches!(
                outcome,
                Err(Error::WaitStopped(WaitStop::LockTimeout))
            ));
            assert!(took >= short && took < HOLDING_WAIT, "{took:?}");
            let (outcome, _) = wait(
                WaitLimits {
                    deadline: Some(Instant::now() + short),
                    ..WaitLimits::default()
                },
                holding_others,
            );
            assert!(matches!(
                outcome,
                Err(Error::WaitStopped(WaitStop::Deadline))
            ));
        }
        let cancel = Arc::new(AtomicBool::new(false));
        let setter = {
            let cancel = Arc::clone(&cancel);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                cancel.store(true, Ordering::Relaxed);
            })
        };
        let (outcome, took) = wait(
            WaitLimits {
                cancel: Some(Arc::clone(&cancel)),
                ..WaitLimits::default()
            },
            false,
        );
        setter.join().expect("setter");
        assert!(matches!(
            outcome,
            Err(Error::WaitStopped(WaitStop::Cancelled))
        ));
        assert!(took < Duration::from_secs(20));
        assert!(
            cancel.load(Ordering::Relaxed),
            "the flag is the embedder's to clear"
        );
    }
}
