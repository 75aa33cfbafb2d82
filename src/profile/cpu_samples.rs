//! cpu=samples: an agent thread wakes every `interval` ms, fetches the
//! stacks of every thread the agent knows in one JVMTI call (one safepoint),
//! and adds one hit to the trace of each thread that is RUNNABLE, not
//! suspended and not interrupted (the original's rule).
//!
//! Also the CPU side of the socket commands: CPU SAMPLES, sampling on/off
//! for all threads or one, clearing the counts.

use super::{Answer, Profile};
use crate::diag::rejected;
use crate::format::CpuTitle;
use crate::jvmti::sys::{thread_state, JVMTI_THREAD_MAX_PRIORITY};
use crate::jvmti::{AgentThread, Jni, Obj, RawMonitor};
use crate::protocol::{Command, Control, ThreadRef};
use crate::vm::{stacks, threads, Context};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const THREAD_NAME: &str = "HPROF cpu sampling thread";

pub struct CpuSamples {
    /// `cpu=samples` was given: sample from VM start and write CPU SAMPLES
    /// in full dumps. Otherwise the profile only waits for a front-end to
    /// turn sampling on.
    active: bool,
    thread: AgentThread,
    /// The sampler waits on it between passes; stop and pause notify it.
    /// Created once and never locked by anything but itself: the thread
    /// waits inside the raw monitor for up to `interval` ms, so any other
    /// lock held across that wait would make stop and pause wait for the
    /// interval (with `interval=2147483647`, forever).
    monitor: OnceLock<RawMonitor>,
    /// No thread is to be sampled (socket CONTROL 0x0004).
    paused: AtomicBool,
    /// Passes taken and time spent in them, for `verbose` and the benchmark.
    pub passes: AtomicU64,
    pub pass_nanos: AtomicU64,
}

impl CpuSamples {
    pub fn new(active: bool) -> Self {
        CpuSamples {
            active,
            thread: AgentThread::new(THREAD_NAME),
            monitor: OnceLock::new(),
            paused: AtomicBool::new(false),
            passes: AtomicU64::new(0),
            pass_nanos: AtomicU64::new(0),
        }
    }

    /// Pause or resume sampling (socket command); wakes the thread.
    fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Release);
        self.wake();
    }

    fn wake(&self) {
        if let Some(m) = self.monitor.get() {
            m.enter().notify_all();
        }
    }

    fn is_running(&self) -> bool {
        self.thread.is_running()
    }

    /// Start the sampling thread (VM init, or a socket command).
    fn start(&'static self, ctx: &'static Context, jni: Jni<'_>) -> Result<(), String> {
        if self.monitor.get().is_none() {
            let mon = ctx
                .jvmti
                .create_raw_monitor("HPROF cpu sampler")
                .map_err(|e| e.to_string())?;
            // Starts run on the VM-init thread or under the command lock:
            // a second set would only drop a raw monitor.
            let _ = self.monitor.set(mon);
        }
        threads::start_agent_thread(ctx, jni, &self.thread, JVMTI_THREAD_MAX_PRIORITY, move |jni| {
            self.run(ctx, jni)
        })
    }

    fn run(&self, ctx: &Context, jni: Jni<'_>) {
        let interval = ctx.opts.interval_ms as i64;
        let mut key = Vec::new();
        let mut serials: Vec<u32> = Vec::new();
        loop {
            {
                let Some(m) = self.monitor.get() else {
                    return;
                };
                let g = m.enter();
                // Checked inside the monitor: stop sets the flag before it
                // notifies under the same monitor, so no wake-up is lost.
                if !self.thread.should_stop() {
                    g.wait(interval);
                }
            }
            if self.thread.should_stop() || ctx.gate.is_closed() {
                return;
            }
            if ctx.dumping.is_held() || self.paused.load(Ordering::Acquire) {
                continue;
            }
            let t0 = Instant::now();
            self.sample_pass(ctx, jni, &mut serials, &mut key);
            self.passes.fetch_add(1, Ordering::Relaxed);
            self.pass_nanos
                .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
    }

    /// One pass: stacks of all known, non-agent threads; one hit per
    /// eligible thread.
    fn sample_pass(&self, ctx: &Context, jni: Jni<'_>, serials: &mut Vec<u32>, key: &mut Vec<u32>) {
        let depth = ctx.depth() as usize;
        if depth == 0 {
            return;
        }
        let Ok(all) = ctx.jvmti.all_threads(jni) else {
            return;
        };
        let mut sampled: Vec<Obj<'_>> = Vec::with_capacity(all.len());
        serials.clear();
        for t in all.iter() {
            let Some(serial) = threads::known_serial(ctx, t) else {
                continue;
            };
            match ctx.tables.threads.get(serial) {
                Some(rec) if !rec.agent && rec.sampled.load(Ordering::Relaxed) => {
                    sampled.push(t);
                    serials.push(serial);
                }
                _ => {}
            }
        }
        if sampled.is_empty() {
            return;
        }
        let Ok(stacks) = ctx
            .jvmti
            .thread_list_stack_traces(&sampled, depth + ctx.hidden.extra_depth())
        else {
            return;
        };
        for (i, &serial) in serials.iter().enumerate().take(stacks.len()) {
            let (state, frames) = stacks.get(i);
            let frames = ctx.hidden.strip(frames);
            let eligible = state & thread_state::RUNNABLE != 0
                && state & (thread_state::SUSPENDED | thread_state::INTERRUPTED) == 0
                && !frames.is_empty();
            if eligible {
                if let Some(trace) = stacks::trace_of(ctx, jni, serial, frames, key) {
                    trace.add_sample();
                }
            }
        }
    }

    /// CONTROL 3/4. ID 0 means every thread, for "off" too (the original
    /// made "off 0" a no-op). A non-zero ID is matched against the thread
    /// object IDs the agent published, big-endian first, then in the
    /// original's native order. Turning sampling on starts the sampler if
    /// it is not running.
    fn sampling(&'static self, ctx: &'static Context, jni: Jni<'_>, on: bool, thread: ThreadRef) {
        let threads = ctx.tables.threads.all();
        if thread.is_all() {
            for t in threads.iter().filter(|t| !t.agent) {
                t.sampled.store(on, Ordering::Relaxed);
            }
            self.set_paused(!on);
        } else {
            let known = |id: u32| threads.iter().any(|t| !t.agent && t.object_id == id);
            let Some(id) = thread.resolve(known) else {
                rejected(&format!(
                    "cpu sampling {}: no application thread has object ID 0x{:x}; command ignored",
                    if on { "on" } else { "off" },
                    thread.big_endian()
                ));
                return;
            };
            for t in threads.iter().filter(|t| t.object_id == id) {
                t.sampled.store(on, Ordering::Relaxed);
            }
            let any = threads.iter().any(|t| {
                !t.agent && t.alive.load(Ordering::Relaxed) && t.sampled.load(Ordering::Relaxed)
            });
            self.set_paused(!any);
        }
        if on && !self.is_running() {
            if let Err(e) = self.start(ctx, jni) {
                rejected(&format!("cannot start the cpu sampling thread: {e}"));
            }
        }
    }
}

impl Profile for CpuSamples {
    fn name(&self) -> &'static str {
        "cpu=samples"
    }

    fn vm_start(&'static self, ctx: &'static Context, jni: Jni<'_>) {
        if self.active {
            if let Err(e) = self.start(ctx, jni) {
                crate::diag::error(&format!("cannot start the cpu sampling thread: {e}"));
            }
        }
    }

    /// As at VM init: the threads running now were registered by the vm
    /// floor, so the first pass samples them all.
    fn attach(&'static self, ctx: &'static Context, jni: Jni<'_>) -> Result<(), String> {
        if self.active {
            self.start(ctx, jni)
                .map_err(|e| format!("cannot start the cpu sampling thread: {e}"))?;
        }
        Ok(())
    }

    fn dump(&'static self, ctx: &'static Context, _jni: Jni<'_>) {
        if self.active {
            crate::diag::verbose(ctx.opts.verbose, " CPU usage by sampling running threads ...");
            crate::report::cpu::write_samples(ctx, ctx.opts.cutoff, CpuTitle::Samples);
        }
    }

    /// CPU reports cover the time since the last dump.
    fn after_dump(&self, ctx: &Context) {
        ctx.tables.traces.reset_costs();
    }

    fn command(&'static self, ctx: &'static Context, jni: Jni<'_>, cmd: &Command) -> Answer {
        match *cmd {
            // Costs are not reset. Titled `CPU TIME (ms)` in text when
            // sampling is off (the original's rule); binary has only the
            // CPU SAMPLES record.
            Command::CpuSamples { cutoff, .. } => {
                let sampling = self.active || self.is_running();
                let binary = ctx.opts.format == crate::options::Format::Binary;
                let title = if sampling || binary {
                    CpuTitle::Samples
                } else {
                    CpuTitle::Times
                };
                crate::report::cpu::write_samples(ctx, f64::from(cutoff), title);
            }
            Command::Control(Control::Sampling { on, thread }) => self.sampling(ctx, jni, on, thread),
            Command::Control(Control::ClearCpuSamples) => ctx.tables.traces.reset_costs(),
            _ => return Answer::NotMine,
        }
        Answer::Done
    }

    fn stop(&self, _ctx: &Context, _jni: Jni<'_>) {
        self.thread.stop(|| self.wake(), Duration::from_secs(5));
    }
}
