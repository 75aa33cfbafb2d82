//! cpu=samples: an agent thread wakes every `interval` ms, fetches the
//! stacks of every thread the agent knows in one JVMTI call (one safepoint),
//! and adds one hit to the trace of each thread that is RUNNABLE, not
//! suspended and not interrupted (the original's rule).

use crate::agent::{stacks, threads, Agent};
use crate::jvmti::sys::{jthread, jvmtiEnv, thread_state, JNIEnv};
use crate::jvmti::RawMonitor;
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const THREAD_NAME: &str = "HPROF cpu sampling thread";

#[derive(Default)]
pub struct Sampler {
    /// The sampler waits on it between passes; stop and pause notify it.
    /// Created once and never locked by anything but itself: the thread
    /// waits inside the raw monitor for up to `interval` ms, so any other
    /// lock held across that wait would make stop and pause wait for the
    /// interval (with `interval=2147483647`, forever).
    monitor: OnceLock<RawMonitor>,
    stop: AtomicBool,
    running: AtomicBool,
    /// No thread is to be sampled (socket CONTROL 0x0004).
    paused: AtomicBool,
    /// Passes taken and time spent in them, for `verbose` and the benchmark.
    pub passes: AtomicU64,
    pub pass_nanos: AtomicU64,
}

impl Sampler {
    /// Pause or resume sampling (socket command); wakes the thread.
    pub fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Release);
        self.wake();
    }

    fn wake(&self) {
        if let Some(m) = self.monitor.get() {
            m.enter().notify_all();
        }
    }
}

pub fn is_running(agent: &Agent) -> bool {
    agent.sampler.running.load(Ordering::Acquire)
}

/// Start the sampling agent thread (at VM init, or on a socket command).
pub fn start(agent: &'static Agent, jni: *mut JNIEnv) -> Result<(), String> {
    if agent.sampler.monitor.get().is_none() {
        let mon = agent
            .jvmti
            .create_raw_monitor("HPROF cpu sampler")
            .map_err(|e| e.to_string())?;
        // A concurrent start (impossible: starts run on the VM-init thread
        // and under the command lock) would only leak one raw monitor.
        let _ = agent.sampler.monitor.set(mon);
    }
    let thread = crate::jvmti::jni::new_thread_object(jni, THREAD_NAME)
        .ok_or("cannot create the sampler's Thread object")?;
    // Known and flagged as an agent thread before it runs, so it never
    // samples itself nor appears in THREAD START.
    threads::register(agent, jni, thread, true, false);
    agent.sampler.running.store(true, Ordering::Release);
    let r = agent.jvmti.run_agent_thread(
        thread,
        sampler_main,
        std::ptr::null_mut(),
        crate::jvmti::sys::JVMTI_THREAD_MAX_PRIORITY,
    );
    crate::jvmti::jni::delete_local_ref(jni, thread);
    r.map_err(|e| {
        agent.sampler.running.store(false, Ordering::Release);
        e.to_string()
    })
}

/// Ask the thread to stop and wait (bounded) until it has.
pub fn stop(agent: &Agent) {
    agent.sampler.stop.store(true, Ordering::Release);
    agent.sampler.wake();
    let start = Instant::now();
    while agent.sampler.running.load(Ordering::Acquire) && start.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
}

unsafe extern "C" fn sampler_main(_env: *mut jvmtiEnv, jni: *mut JNIEnv, _arg: *mut c_void) {
    let Some(agent) = crate::agent::agent() else {
        return;
    };
    if catch_unwind(AssertUnwindSafe(|| run(agent, jni))).is_err() {
        crate::diag::error("internal error in the cpu sampling thread; sampling stopped");
    }
    agent.sampler.running.store(false, Ordering::Release);
}

fn run(agent: &'static Agent, jni: *mut JNIEnv) {
    let interval = agent.opts.interval_ms as i64;
    let mut key = Vec::new();
    let mut threads: Vec<jthread> = Vec::new();
    let mut serials: Vec<u32> = Vec::new();
    loop {
        {
            let Some(m) = agent.sampler.monitor.get() else {
                return;
            };
            let g = m.enter();
            // Checked inside the monitor: stop sets the flag before it
            // notifies under the same monitor, so no wake-up is lost.
            if !agent.sampler.stop.load(Ordering::Acquire) {
                g.wait(interval);
            }
        }
        if agent.sampler.stop.load(Ordering::Acquire) || agent.gate.is_closed() {
            return;
        }
        if agent.dumping.is_held() || agent.sampler.paused.load(Ordering::Acquire) {
            continue;
        }
        let t0 = Instant::now();
        crate::jvmti::jni::with_local_frame(jni, 64, || {
            sample_pass(agent, &mut threads, &mut serials, &mut key)
        });
        agent.sampler.passes.fetch_add(1, Ordering::Relaxed);
        agent
            .sampler
            .pass_nanos
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
}

/// One pass: stacks of all known, non-agent threads; one hit per eligible thread.
fn sample_pass(
    agent: &Agent,
    threads: &mut Vec<jthread>,
    serials: &mut Vec<u32>,
    key: &mut Vec<u32>,
) {
    let depth = agent.depth() as usize;
    if depth == 0 {
        return;
    }
    let Ok(all) = agent.jvmti.all_threads() else {
        return;
    };
    threads.clear();
    serials.clear();
    for &t in all.iter() {
        let Some(serial) = threads::known_serial(agent, t) else {
            continue;
        };
        match agent.tables.threads.get(serial) {
            Some(rec) if !rec.agent && rec.sampled.load(Ordering::Relaxed) => {
                threads.push(t);
                serials.push(serial);
            }
            _ => {}
        }
    }
    if threads.is_empty() {
        return;
    }
    // With cpu=times, up to two Tracker frames may sit on top (docs/profiles.md §3).
    let extra = if agent.opts.cpu_timing() { 2 } else { 0 };
    let Ok(stacks) = agent.jvmti.thread_list_stack_traces(threads, depth + extra) else {
        return;
    };
    for (i, &serial) in serials.iter().enumerate().take(stacks.len()) {
        let (state, frames) = stacks.get(i);
        let frames = crate::profile::cpu_times::strip_tracker_frames(frames);
        let eligible = state & thread_state::RUNNABLE != 0
            && state & (thread_state::SUSPENDED | thread_state::INTERRUPTED) == 0
            && !frames.is_empty();
        if eligible {
            if let Some(trace) = stacks::trace_of(agent, serial, frames, key) {
                trace.add_sample();
            }
        }
    }
}
