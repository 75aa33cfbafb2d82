//! The wall clock of cpu=times (`clock=wall`, and threads that could not
//! get a CPU-time timer): an agent thread advances a nanosecond counter
//! every [`TICK`]; the instrumented code reads it through its address (one
//! load per event), the agent directly.
//!
//! Why not a precise clock per event: reading the time-stamp counter costs
//! ~10 ns on this class of machine and `clock_gettime` ~25 ns, more than
//! the whole buffered event; Java has no cheaper clock than `nanoTime`.
//! Durations measured with a ticking clock are exact in sum (timestamps
//! are monotonic, so nested intervals add up) and unbiased per trace (a
//! tick falls inside a call with probability duration / TICK), at the
//! original HPROF's millisecond granularity. docs/cpu-times.md.

use crate::jvmti::{AgentThread, Jni};
use crate::vm::Context;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Clock period.
pub const TICK: Duration = Duration::from_millis(1);

const THREAD_NAME: &str = "HPROF cpu=times clock";

/// Ticks between two checks that SIGPROF is still the CPU clocks' (a
/// system call).
const HANDLER_CHECK_TICKS: u32 = 100;

/// The counter: one per process, `'static` because the Tracker reads it
/// through its address.
static NOW: AtomicU64 = AtomicU64::new(0);

pub struct Clock {
    origin: OnceLock<Instant>,
    thread: AgentThread,
}

impl Default for Clock {
    fn default() -> Self {
        Clock {
            origin: OnceLock::new(),
            thread: AgentThread::new(THREAD_NAME),
        }
    }
}

impl Clock {
    /// The counter the instrumented code reads: nanoseconds since the clock
    /// started, as of the last tick.
    pub fn counter(&self) -> &'static AtomicU64 {
        &NOW
    }

    fn tick(&self) {
        let ns = self.origin.get_or_init(Instant::now).elapsed().as_nanos() as u64;
        NOW.fetch_max(ns, Ordering::AcqRel);
    }

    /// Start the ticking thread; the first tick is published before this
    /// returns.
    pub fn start(&'static self, ctx: &Context, jni: Jni<'_>) -> Result<(), String> {
        self.tick();
        crate::vm::threads::start_agent_thread(
            ctx,
            jni,
            &self.thread,
            crate::jvmti::sys::JVMTI_THREAD_MAX_PRIORITY,
            move |_jni| {
                let mut ticks: u32 = 0;
                while !self.thread.should_stop() {
                    std::thread::sleep(TICK);
                    self.tick();
                    ticks = ticks.wrapping_add(1);
                    // The sampler's upkeep: another handler on its signal,
                    // perf events for threads that ran (docs/cpu-samples.md,
                    // "Other profilers in the same JVM").
                    if ticks.is_multiple_of(HANDLER_CHECK_TICKS) {
                        if let Some(why) = crate::jvmti::async_sampler::maintain() {
                            why.say();
                        }
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
