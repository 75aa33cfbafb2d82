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

use crate::agent::Agent;
use crate::jvmti::sys::{jvmtiEnv, JNIEnv};
use crate::jvmti::tracker_natives::Tracker;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Clock period.
pub const TICK: Duration = Duration::from_millis(1);

const THREAD_NAME: &str = "HPROF cpu=times clock";

#[derive(Default)]
pub struct Clock {
    origin: OnceLock<Instant>,
    now: AtomicU64,
    stop: AtomicBool,
    running: AtomicBool,
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
        agent: &'static Agent,
        jni: *mut JNIEnv,
        tracker: &Tracker,
    ) -> Result<(), String> {
        tracker.set_now(jni, self.tick())?;
        let thread = crate::jvmti::jni::new_thread_object(jni, THREAD_NAME)
            .ok_or("cannot create the clock's Thread object")?;
        // An agent thread: never sampled, no THREAD START.
        crate::agent::threads::register(agent, jni, thread, true, false);
        self.running.store(true, Ordering::Release);
        let r = agent.jvmti.run_agent_thread(
            thread,
            clock_main,
            self as *const Clock as *mut c_void,
            crate::jvmti::sys::JVMTI_THREAD_MAX_PRIORITY,
        );
        crate::jvmti::jni::delete_local_ref(jni, thread);
        r.map_err(|e| {
            self.running.store(false, Ordering::Release);
            e.to_string()
        })
    }

    /// Stop the thread and wait (bounded) until it has.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        let t0 = Instant::now();
        while self.running.load(Ordering::Acquire) && t0.elapsed() < 10 * TICK {
            std::thread::sleep(TICK / 4);
        }
    }
}

unsafe extern "C" fn clock_main(_env: *mut jvmtiEnv, jni: *mut JNIEnv, arg: *mut c_void) {
    // SAFETY: arg is the &'static Clock passed by `start`.
    let clock: &'static Clock = unsafe { &*(arg as *const Clock) };
    let run = || {
        let Some(tracker) = super::tracker() else {
            return;
        };
        while !clock.stop.load(Ordering::Acquire) {
            std::thread::sleep(TICK);
            if tracker.set_now(jni, clock.tick()).is_err() {
                crate::diag::error(
                    "cpu=times: the clock thread cannot update the Tracker; times stop",
                );
                return;
            }
        }
    };
    if catch_unwind(AssertUnwindSafe(run)).is_err() {
        crate::diag::error("internal error in the cpu=times clock thread; times stop");
    }
    clock.running.store(false, Ordering::Release);
}
