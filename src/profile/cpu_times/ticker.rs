//! The clock of cpu=times: an agent thread advances a nanosecond counter
//! every [`TICK`] and publishes it both here (for the agent's own events,
//! e.g. ExceptionCatch) and in the Tracker's `now` field, which the
//! instrumented code reads with one volatile load per event.
//!
//! Why not a precise clock per event: reading the time-stamp counter costs
//! ~10 ns on this class of machine and `clock_gettime` ~25 ns, more than
//! the whole buffered event; Java has no cheaper clock than `nanoTime`.
//! Durations measured with a ticking clock are exact in sum (timestamps
//! are monotonic, so nested intervals add up) and unbiased per trace (a
//! tick falls inside a call with probability duration / TICK), at the
//! original HPROF's millisecond granularity. docs/cpu-times.md.

use crate::jvmti::tracker_natives::Tracker;
use crate::jvmti::{AgentThread, Jni};
use crate::vm::Context;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Clock period.
pub const TICK: Duration = Duration::from_millis(1);

const THREAD_NAME: &str = "HPROF cpu=times clock";

pub struct Clock {
    origin: OnceLock<Instant>,
    now: AtomicU64,
    thread: AgentThread,
}

impl Default for Clock {
    fn default() -> Self {
        Clock {
            origin: OnceLock::new(),
            now: AtomicU64::new(0),
            thread: AgentThread::new(THREAD_NAME),
        }
    }
}

impl Clock {
    /// Nanoseconds since the clock started, as of the last tick.
    #[inline]
    pub fn now(&self) -> u64 {
        self.now.load(Ordering::Acquire)
    }

    fn tick(&self) -> u64 {
        let ns = self.origin.get_or_init(Instant::now).elapsed().as_nanos() as u64;
        self.now.fetch_max(ns, Ordering::AcqRel);
        self.now()
    }

    /// Start the ticking thread; the first tick is published before this
    /// returns.
    pub fn start(
        &'static self,
        ctx: &Context,
        jni: Jni<'_>,
        tracker: &'static Tracker,
    ) -> Result<(), String> {
        tracker.set_now(jni, self.tick())?;
        crate::vm::threads::start_agent_thread(
            ctx,
            jni,
            &self.thread,
            crate::jvmti::sys::JVMTI_THREAD_MAX_PRIORITY,
            move |jni| {
                while !self.thread.should_stop() {
                    std::thread::sleep(TICK);
                    if tracker.set_now(jni, self.tick()).is_err() {
                        crate::diag::error(
                            "cpu=times: the clock thread cannot update the Tracker; times stop",
                        );
                        return;
                    }
                }
            },
        )
    }

    /// Stop the thread and wait (bounded) until it has.
    pub fn stop(&self) {
        self.thread.stop(|| {}, 10 * TICK);
    }
}
