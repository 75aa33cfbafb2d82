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
