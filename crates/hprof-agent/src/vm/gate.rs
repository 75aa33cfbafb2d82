//! Callback gate: VM death must not tear down state while event callbacks
//! are still running on other threads. Callbacks enter the gate (a counter);
//! VM death closes it, then waits for the counter to drain. Late callbacks
//! find it closed and return without doing anything.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Default)]
pub struct Gate {
    active: AtomicUsize,
    closed: AtomicBool,
}

pub struct Pass<'a>(&'a Gate);

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::Release);
    }
}

impl Gate {
    pub fn enter(&self) -> Option<Pass<'_>> {
        self.active.fetch_add(1, Ordering::Acquire);
        if self.closed.load(Ordering::Acquire) {
            self.active.fetch_sub(1, Ordering::Release);
            return None;
        }
        Some(Pass(self))
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Close and wait (bounded) for callbacks in flight. `own` is the number
    /// of passes the closing thread itself holds.
    pub fn close_and_drain(&self, own: usize, limit: Duration) -> bool {
        self.closed.store(true, Ordering::Release);
        let start = Instant::now();
        while self.active.load(Ordering::Acquire) > own {
            if start.elapsed() > limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_gate_refuses_and_drains() {
        let g = Gate::default();
        let p = g.enter().unwrap();
        assert!(
            !g.close_and_drain(0, Duration::from_millis(20)),
            "one pass still active"
        );
        assert!(g.enter().is_none());
        drop(p);
        assert!(g.close_and_drain(0, Duration::from_millis(20)));
    }
}

/// The dump exclusion: at most one full dump or socket command writes at a
/// time, so their sections never interleave. The only way to hold it is a
/// [`DumpGuard`], released when the guard drops, on every path: a panic
/// caught around a report unwinds through the guard, so the next dump, the
/// sampler and the exit dump are never left waiting for a flag nobody will
/// clear.
#[derive(Default)]
pub struct DumpLock {
    held: AtomicBool,
}

/// Proof of holding the [`DumpLock`]; dropping it releases the lock.
#[must_use = "the dump lock is released as soon as the guard is dropped"]
pub struct DumpGuard<'a>(&'a DumpLock);

impl Drop for DumpGuard<'_> {
    fn drop(&mut self) {
        self.0.held.store(false, Ordering::Release);
    }
}

impl DumpLock {
    /// Take the lock if it is free (a dump request arriving while another
    /// dump runs is dropped, as in the original agent).
    pub fn try_lock(&self) -> Option<DumpGuard<'_>> {
        // `then`, not `then_some`: a guard built for a failed attempt would
        // release the holder's lock when dropped.
        (!self.held.swap(true, Ordering::AcqRel)).then(|| DumpGuard(self))
    }

    /// Wait for the lock, polling every millisecond; `None` as soon as
    /// `give_up()` says so (VM death).
    pub fn lock_unless(&self, give_up: impl Fn() -> bool) -> Option<DumpGuard<'_>> {
        loop {
            if let Some(g) = self.try_lock() {
                return Some(g);
            }
            if give_up() {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A dump or command is running (the sampler pauses meanwhile).
    pub fn is_held(&self) -> bool {
        self.held.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod dump_lock_tests {
    use super::DumpLock;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    #[test]
    fn one_holder_at_a_time() {
        let lock = DumpLock::default();
        let g = lock.try_lock().expect("free lock");
        assert!(lock.is_held());
        assert!(lock.try_lock().is_none());
        assert!(
            lock.is_held(),
            "a failed attempt leaves the holder's lock alone"
        );
        assert!(lock.lock_unless(|| true).is_none());
        assert!(lock.is_held());
        drop(g);
        assert!(!lock.is_held());
        assert!(lock.lock_unless(|| false).is_some());
    }

    #[test]
    fn released_when_the_holder_panics() {
        let lock = DumpLock::default();
        let r = catch_unwind(AssertUnwindSafe(|| {
            let _g = lock.try_lock().expect("free lock");
            panic!("report failed");
        }));
        assert!(r.is_err());
        assert!(!lock.is_held());
        assert!(lock.try_lock().is_some());
    }
}
