//! How the writer thread waits for jobs, and when a producer wakes it.
//!
//! A job that someone waits for (a flush, a stream, a dump's batches, a
//! report) wakes a waiting writer at once. A job nobody waits for (a
//! THREAD START or THREAD END record: [`Urgency::Later`]) wakes it only
//! when it sleeps idle; while it naps after some work, such jobs pile up
//! and are taken together when the nap ends (or when the queue grows
//! long). A thousand threads starting then wake the writer a few dozen
//! times instead of twice a thread: each wake-up cost the producer a futex
//! call and the writer a context switch, plus the spinning and yielding of
//! the channel's own blocking receive, about 20 µs of CPU per thread
//! started (issue 27 item 13).
//!
//! No wake-up is lost: the writer states how it waits before it looks at
//! the queue one last time, and a producer looks at that state after its
//! job is in the queue (both sequentially consistent); a wake-up that
//! comes between the look and the park makes the park return at once.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;
use std::thread::Thread;
use std::time::Duration;

/// Running, or about to look at the queue.
const AWAKE: u8 = 0;
/// Resting after some work: only [`Urgency::Now`] wakes it.
const NAPPING: u8 = 1;
/// Idle: any job wakes it.
const SLEEPING: u8 = 2;

/// How soon a queued job needs the writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Urgency {
    /// Someone waits for it (or for what it holds): wake the writer.
    Now,
    /// Nobody waits: written with the next batch.
    Later,
}

/// How the writer rests when its queue is empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rest {
    /// After work: more is likely to come; [`Urgency::Later`] jobs wait.
    Nap,
    /// Idle: the next job of any kind wakes it.
    Sleep,
}

#[derive(Default)]
pub struct Wake {
    state: AtomicU8,
    /// The writer thread (set once it is spawned).
    thread: OnceLock<Thread>,
    /// Times a producer woke it.
    wakeups: AtomicU64,
}

impl Wake {
    pub fn set_thread(&self, t: Thread) {
        let _ = self.thread.set(t);
    }

    /// A job was queued: wake the writer if it rests in a way this job may
    /// not wait through. Returns whether it was woken.
    pub fn queued(&self, urgency: Urgency) -> bool {
        let s = self.state.load(Ordering::SeqCst);
        let wake = match urgency {
            Urgency::Now => s != AWAKE,
            Urgency::Later => s == SLEEPING,
        };
        // One producer wakes it; the others see AWAKE.
        if wake
            && self
                .state
                .compare_exchange(s, AWAKE, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        {
            if let Some(t) = self.thread.get() {
                t.unpark();
            }
            self.wakeups.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Times a producer woke the writer so far.
    pub fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::Relaxed)
    }

    /// The writer rests for at most `limit` (or until woken), unless
    /// `pending()` — asked after the rest is announced — says work came.
    pub fn rest(&self, how: Rest, limit: Duration, pending: impl FnOnce() -> bool) {
        let state = match how {
            Rest::Nap => NAPPING,
            Rest::Sleep => SLEEPING,
        };
        self.state.store(state, Ordering::SeqCst);
        if !pending() {
            std::thread::park_timeout(limit);
        }
        self.state.store(AWAKE, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn later_jobs_wake_a_sleeping_writer_but_not_a_napping_one() {
        let w = Wake::default();
        w.set_thread(std::thread::current());
        assert!(
            !w.queued(Urgency::Later),
            "an awake writer needs no wake-up"
        );
        w.state.store(NAPPING, Ordering::SeqCst);
        assert!(!w.queued(Urgency::Later));
        assert!(w.queued(Urgency::Now));
        assert!(!w.queued(Urgency::Now), "woken once");
        w.state.store(SLEEPING, Ordering::SeqCst);
        assert!(w.queued(Urgency::Later));
    }

    #[test]
    fn a_job_queued_before_the_rest_is_not_slept_through() {
        let w = Wake::default();
        w.set_thread(std::thread::current());
        let t = Instant::now();
        w.rest(Rest::Sleep, Duration::from_secs(5), || true);
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_producer_wakes_a_sleeping_writer_at_once() {
        let w = Arc::new(Wake::default());
        let done = Arc::new(AtomicBool::new(false));
        let (w2, d2) = (w.clone(), done.clone());
        let writer = std::thread::spawn(move || {
            let t = Instant::now();
            while !d2.load(Ordering::SeqCst) {
                w2.rest(Rest::Sleep, Duration::from_secs(10), || {
                    d2.load(Ordering::SeqCst)
                });
            }
            t.elapsed()
        });
        w.set_thread(writer.thread().clone());
        std::thread::sleep(Duration::from_millis(50));
        done.store(true, Ordering::SeqCst);
        w.queued(Urgency::Later);
        assert!(writer.join().unwrap() < Duration::from_secs(5));
    }
}
