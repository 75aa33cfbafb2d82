//! cpu=samples (docs/cpu-samples.md). Three ways to sample, chosen by
//! `cpusampler=`:
//!
//! * `async` (the default): every application thread has a timer on its own
//!   CPU clock (`vm::cpu_timers`); after each `interval` ms of CPU time the
//!   thread is interrupted where it runs and its stack is walked there by
//!   HotSpot's AsyncGetCallTrace, into a preallocated ring. This profile's
//!   agent thread takes the ring's samples every few milliseconds and turns
//!   them into traces. Only CPU is charged; stacks are exact, also inside
//!   inlined code (the agent asks the JIT for debug information at every
//!   instruction); idle threads cost nothing.
//! * `safepoint` (the fallback when the JVM has no AsyncGetCallTrace): the
//!   same timers say which threads used CPU and how much; every `interval`
//!   ms the agent thread fetches those threads' stacks in one JVMTI call
//!   (at a safepoint).
//! * `runnable`: the original's rule: every `interval` ms, the stacks of
//!   all threads, one hit for each RUNNABLE, not suspended, not interrupted
//!   thread.
//!
//! Also the CPU side of the socket commands: CPU SAMPLES, sampling on/off
//! for all threads or one, clearing the counts.

use super::{Answer, Event, Profile};
use crate::diag::rejected;
use crate::format::{CpuTitle, LostSamples};
use crate::jvmti::async_sampler::{self as sampler, sys::code, Outcome, Sample, StackMode};
use crate::jvmti::refs::GlobalRef;
use crate::jvmti::sys::{cap, event, jvmtiCapabilities, thread_state, JVMTI_THREAD_MAX_PRIORITY};
use crate::jvmti::{AgentThread, Frame, Jni, MethodId, Obj, RawMonitor};
use crate::options::CpuSampler;
use crate::protocol::{Command, Control, ThreadRef};
use crate::vm::{stacks, threads, Context};
use dashmap::DashMap;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const THREAD_NAME: &str = "HPROF cpu sampling thread";

/// How this run samples (decided at VM start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    Async,
    Safepoint,
    Runnable,
}

/// Fewest and most milliseconds between two takes of the asynchronous
/// samples (see [`take_period_ms`]).
const TAKE_MIN_MS: u64 = 10;
const TAKE_MAX_MS: u64 = 100;

/// Least time between two sweeps that make method IDs for every class.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Where a virtual thread's own frames end (JDK 19+): below its bottom
/// frame (`java.lang.VirtualThread.run`) come the frames that mount it,
/// `VirtualThread$VThreadContinuation...run` and
/// `jdk.internal.vm.Continuation.enter0/enter/enterSpecial`, then the
/// carrier's own stack. All of them belong to the carrier.
const CONTINUATION_CLASS: &str = "Ljdk/internal/vm/Continuation;";
const VTHREAD_CONTINUATION_PREFIX: &str = "Ljava/lang/VirtualThread$VThreadContinuation";

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
    how: OnceLock<How>,
    /// Safepoint mode: the Thread objects of the timed threads, by serial.
    thread_refs: DashMap<u32, GlobalRef>,
    /// Per method: does a virtual thread's stack end there (the carrier's
    /// continuation frames)? Filled as methods are first seen.
    carrier_frames: DashMap<MethodId, bool>,
    /// A sample had frames without method IDs: make IDs for every loaded
    /// class (at most once per [`SWEEP_EVERY`]).
    sweep_wanted: AtomicBool,
    counts: Counts,
    /// `counts.not_counted` when the current report period began (a CPU
    /// report says what was not counted since then).
    period_start: parking_lot::Mutex<Vec<(&'static str, u64)>>,
    /// Passes taken and time spent in them, for `verbose` and the benchmark.
    pub passes: AtomicU64,
    pub pass_nanos: AtomicU64,
}

/// What became of the samples (in CPU intervals), since the start.
#[derive(Default)]
struct Counts {
    counted: AtomicU64,
    /// Of the counted, those whose stack was found by a recovery after
    /// AsyncGetCallTrace failed (docs/cpu-samples.md).
    recovered: AtomicU64,
    /// Per AsyncGetCallTrace code 0..=-10 (index = -code), and other codes.
    failed: [AtomicU64; 12],
    /// A frame without a method ID (a method AsyncGetCallTrace met before
    /// any ID was made for it).
    no_method_id: AtomicU64,
    /// A method the JVM no longer knows (its class was unloaded before the
    /// frame was resolved).
    unresolved: AtomicU64,
}

impl Counts {
    fn fail(&self, c: i32, weight: u32) {
        let i = if (-10..=0).contains(&c) {
            (-c) as usize
        } else {
            11
        };
        self.failed[i].fetch_add(u64::from(weight), Ordering::Relaxed);
    }

    /// Samples not counted so far, by reason (`dropped`: the ring was
    /// full), in a fixed order; reasons with none are included.
    fn not_counted(&self, dropped: u64) -> Vec<(&'static str, u64)> {
        let mut v: Vec<(&'static str, u64)> = self
            .failed
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let name = if i == 11 {
                    "other"
                } else {
                    code::name(-(i as i32))
                };
                (name, f.load(Ordering::Relaxed))
            })
            .collect();
        v.push(("no method ID", self.no_method_id.load(Ordering::Relaxed)));
        v.push(("class unloaded", self.unresolved.load(Ordering::Relaxed)));
        v.push(("buffer full", dropped));
        v
    }

    /// "N samples, M not counted (why ...)" for the exit report.
    fn summary(&self, dropped: u64) -> (u64, u64, String) {
        let counted = self.counted.load(Ordering::Relaxed);
        let lost = self.not_counted(dropped);
        let parts: Vec<String> = lost
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(why, n)| format!("{why} {n}"))
            .collect();
        (counted, lost.iter().map(|(_, n)| n).sum(), parts.join(", "))
    }
}

impl CpuSamples {
    pub fn new(active: bool) -> Self {
        CpuSamples {
            active,
            thread: AgentThread::new(THREAD_NAME),
            monitor: OnceLock::new(),
            paused: AtomicBool::new(false),
            how: OnceLock::new(),
            thread_refs: DashMap::new(),
            carrier_frames: DashMap::new(),
            sweep_wanted: AtomicBool::new(false),
            counts: Counts::default(),
            period_start: parking_lot::Mutex::new(Vec::new()),
            passes: AtomicU64::new(0),
            pass_nanos: AtomicU64::new(0),
        }
    }

    fn how(&self) -> How {
        self.how.get().copied().unwrap_or(How::Runnable)
    }

    /// The samples not counted since the report period began, for the
    /// report's line about them; none under the original's rule, which
    /// counts every sample it takes.
    fn lost_in_period(&self) -> Option<LostSamples> {
        if self.how() == How::Runnable {
            return None;
        }
        let now = self.counts.not_counted(sampler::handler_stats().dropped);
        let start = self.period_start.lock();
        let reasons = now
            .iter()
            .enumerate()
            .map(|(i, &(why, n))| {
                let before = start.get(i).map_or(0, |&(_, b)| b);
                (why.to_string(), n.saturating_sub(before))
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        Some(LostSamples {
            counted: 0,
            reasons,
        })
    }

    /// A new report period begins (after a dump, or the counts cleared).
    fn start_period(&self) {
        *self.period_start.lock() = self.counts.not_counted(sampler::handler_stats().dropped);
    }

    /// Pause or resume sampling (socket command); wakes the thread.
    fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Release);
        if self.how() != How::Runnable && self.is_running() {
            sampler::set_stacks(!paused);
        }
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

    /// Decide how to sample: the option's way, or a fallback with one
    /// message saying why.
    fn choose(&self, ctx: &Context, jni: Jni<'_>) -> How {
        if ctx.opts.cpu_sampler == CpuSampler::Runnable {
            return How::Runnable;
        }
        if ctx.opts.cpu_sampler == CpuSampler::Wall {
            warn_of_socket_bugs(ctx);
        }
        match ctx.cpu_timers.ensure(ctx, jni) {
            Ok(inst) => {
                if let Some(why) = &inst.fallback {
                    crate::diag::notice(&format!(
                        "cpu=samples: {why}; stacks are taken at safepoints (cpusampler=safepoint)"
                    ));
                }
                match inst.mode {
                    StackMode::Async => How::Async,
                    _ => How::Safepoint,
                }
            }
            Err(e) => {
                crate::diag::notice(&format!(
                    "cpu=samples: no CPU-time timers ({e}); every RUNNABLE thread is sampled at safepoints (cpusampler=runnable)"
                ));
                How::Runnable
            }
        }
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
        if self.how() != How::Runnable {
            if self.how() == How::Async {
                // Debug information at every instruction from now on, for
                // code compiled later, and where compiled code lies (see
                // jvmti::callbacks), also for code compiled before.
                watch_compiled_code(ctx);
                static REPLAYED: std::sync::Once = std::sync::Once::new();
                REPLAYED.call_once(|| {
                    let _ = ctx.jvmti.generate_events(event::COMPILED_METHOD_LOAD);
                });
            }
            sampler::start()?;
            sampler::set_stacks(!self.paused.load(Ordering::Acquire));
        }
        let started = threads::start_agent_thread(
            ctx,
            jni,
            &self.thread,
            JVMTI_THREAD_MAX_PRIORITY,
            move |jni| self.run(ctx, jni),
        );
        if started.is_err() && self.how() != How::Runnable {
            sampler::set_stacks(false);
            sampler::stop();
        }
        started
    }

    /// Milliseconds between two passes.
    fn pass_period(&self, ctx: &Context) -> i64 {
        match self.how() {
            How::Async => {
                let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
                take_period_ms(sampler::ring_slots(), ctx.opts.interval_ms, cpus) as i64
            }
            _ => i64::from(ctx.opts.interval_ms),
        }
    }

    fn run(&self, ctx: &Context, jni: Jni<'_>) {
        let period = self.pass_period(ctx);
        let mut key = Vec::new();
        let mut serials: Vec<u32> = Vec::new();
        let mut last_sweep: Option<Instant> = None;
        loop {
            {
                let Some(m) = self.monitor.get() else {
                    return;
                };
                let g = m.enter();
                // Checked inside the monitor: stop sets the flag before it
                // notifies under the same monitor, so no wake-up is lost.
                if !self.thread.should_stop() {
                    g.wait(period);
                }
            }
            if self.thread.should_stop() || ctx.gate.is_closed() {
                return;
            }
            if ctx.dumping.is_held() {
                continue;
            }
            let t0 = Instant::now();
            match self.how() {
                How::Async => self.take_async(ctx, jni, &mut key, true),
                How::Safepoint => self.take_ticks(ctx, jni, &mut key, true),
                How::Runnable => {
                    if !self.paused.load(Ordering::Acquire) {
                        self.runnable_pass(ctx, jni, &mut serials, &mut key)
                    }
                }
            }
            if self.how() != How::Runnable {
                if let Some(why) = sampler::maintain() {
                    why.say();
                }
            }
            if self.sweep_wanted.load(Ordering::Acquire)
                && last_sweep.is_none_or(|t| t.elapsed() >= SWEEP_EVERY)
            {
                self.sweep_wanted.store(false, Ordering::Release);
                last_sweep = Some(Instant::now());
                self.create_all_method_ids(ctx, jni);
            }
            self.passes.fetch_add(1, Ordering::Relaxed);
            self.pass_nanos
                .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
    }

    /// Turn the samples in the ring into trace counts. `unless_dumping`:
    /// give way to a dump that started meanwhile (it takes the samples
    /// itself, before its report).
    fn take_async(&self, ctx: &Context, jni: Jni<'_>, key: &mut Vec<u32>, unless_dumping: bool) {
        let depth = ctx.depth() as usize;
        sampler::drain(
            || !(unless_dumping && ctx.dumping.is_held()),
            |s| match s.outcome {
                Outcome::Stack => self.count_stack(ctx, jni, s, depth, key),
                Outcome::Failed(c) => self.counts.fail(c, s.weight),
                Outcome::Tick => {}
            },
        );
    }

    fn count_stack(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        s: &Sample<'_>,
        depth: usize,
        key: &mut Vec<u32>,
    ) {
        if depth == 0 {
            return;
        }
        let frames = ctx.hidden.strip(s.frames);
        let frames = self.own_frames(ctx, jni, frames);
        if frames.is_empty() {
            self.counts.fail(code::NO_JAVA_FRAME, s.weight);
            return;
        }
        let frames = &frames[..frames.len().min(depth)];
        if frames.iter().any(|f| f.method.is_null()) {
            // A class whose ClassPrepare never came (JDK 21+: a class
            // linked on a virtual thread, which has no JVMTI thread state
            // without can_support_virtual_threads): sweep all classes soon.
            self.sweep_wanted.store(true, Ordering::Release);
            self.counts
                .no_method_id
                .fetch_add(u64::from(s.weight), Ordering::Relaxed);
            return;
        }
        match stacks::trace_of_sampled(ctx, jni, s.serial, frames, key) {
            Some(trace) => {
                trace.add_samples(s.weight);
                self.counts
                    .counted
                    .fetch_add(u64::from(s.weight), Ordering::Relaxed);
                if s.how != sampler::How::Direct {
                    self.counts
                        .recovered
                        .fetch_add(u64::from(s.weight), Ordering::Relaxed);
                }
            }
            None => {
                self.counts
                    .unresolved
                    .fetch_add(u64::from(s.weight), Ordering::Relaxed);
            }
        }
    }

    /// A sample's own frames: a virtual thread's stack stops where its
    /// carrier's continues (the carrier is not charged for them, and the
    /// trace is the virtual thread's own, as JVMTI shows it).
    fn own_frames<'f>(&self, ctx: &Context, jni: Jni<'_>, frames: &'f [Frame]) -> &'f [Frame] {
        let end = frames
            .iter()
            .position(|f| !f.method.is_null() && self.is_carrier_frame(ctx, jni, f.method))
            .unwrap_or(frames.len());
        &frames[..end]
    }

    fn is_carrier_frame(&self, ctx: &Context, jni: Jni<'_>, method: MethodId) -> bool {
        if let Some(b) = self.carrier_frames.get(&method) {
            return *b;
        }
        let b = stacks::method_entry(ctx, jni, method).is_some_and(|m| {
            (m.class_signature == CONTINUATION_CLASS && m.name.starts_with("enter"))
                || m.class_signature.starts_with(VTHREAD_CONTINUATION_PREFIX)
        });
        self.carrier_frames.insert(method, b);
        b
    }

    /// Safepoint mode: the threads that used CPU since the last pass (and
    /// how many intervals), then their stacks in one JVMTI call.
    fn take_ticks(&self, ctx: &Context, jni: Jni<'_>, key: &mut Vec<u32>, unless_dumping: bool) {
        let mut owed: HashMap<u32, u32> = HashMap::new();
        sampler::drain(
            || !(unless_dumping && ctx.dumping.is_held()),
            |s| match s.outcome {
                Outcome::Tick => {
                    let w = owed.entry(s.serial).or_default();
                    *w = w.saturating_add(s.weight);
                }
                Outcome::Failed(c) => self.counts.fail(c, s.weight),
                Outcome::Stack => {}
            },
        );
        let depth = ctx.depth() as usize;
        if owed.is_empty() || depth == 0 {
            return;
        }
        let refs: Vec<(u32, u32, GlobalRef)> = owed
            .iter()
            .filter_map(|(&serial, &w)| {
                let r = self.thread_refs.get(&serial)?;
                Some((serial, w, r.clone()))
            })
            .collect();
        let objs: Vec<Obj<'_>> = refs.iter().map(|(_, _, r)| Obj::of_global(r)).collect();
        let Ok(stacks) = ctx
            .jvmti
            .thread_list_stack_traces(&objs, depth + ctx.hidden.extra_depth())
        else {
            return;
        };
        for (i, (serial, weight, _)) in refs.iter().enumerate().take(stacks.len()) {
            let (_, frames) = stacks.get(i);
            let frames = ctx.hidden.strip(frames);
            if frames.is_empty() {
                self.counts.fail(code::NO_JAVA_FRAME, *weight);
                continue;
            }
            match stacks::trace_of(ctx, jni, *serial, frames, key) {
                Some(t) => {
                    t.add_samples(*weight);
                    self.counts
                        .counted
                        .fetch_add(u64::from(*weight), Ordering::Relaxed);
                }
                None => {
                    self.counts
                        .unresolved
                        .fetch_add(u64::from(*weight), Ordering::Relaxed);
                }
            }
        }
    }

    /// Take what the timers sampled so far (before a report).
    fn catch_up(&self, ctx: &Context, jni: Jni<'_>) {
        let mut key = Vec::new();
        match self.how() {
            How::Async => self.take_async(ctx, jni, &mut key, false),
            How::Safepoint => self.take_ticks(ctx, jni, &mut key, false),
            How::Runnable => {}
        }
    }

    /// The original's pass: stacks of all known, non-agent threads; one hit
    /// per RUNNABLE, not suspended, not interrupted thread.
    fn runnable_pass(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        serials: &mut Vec<u32>,
        key: &mut Vec<u32>,
    ) {
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

    /// Give the calling thread its CPU-time timer (and, in safepoint mode,
    /// keep its Thread object for stack queries).
    fn time_thread(&self, ctx: &Context, jni: Jni<'_>, thread: Obj<'_>) {
        if self.how() == How::Runnable {
            return;
        }
        let Some(serial) = threads::own_serial(ctx, thread) else {
            return;
        };
        let Some(rec) = ctx.tables.threads.get(serial).filter(|r| !r.agent) else {
            return;
        };
        // Wall-clock samples leave the JVM's service threads alone (group
        // `system`, as at an attach): they wait all their lives, most with
        // no Java frame at all (JDK 14+'s Notification Thread), and would
        // add a sample that shows nothing to every period
        // (docs/cpu-samples.md, "Wall-clock samples").
        if ctx.opts.cpu_sampler == CpuSampler::Wall && rec.group.as_deref() == Some("system") {
            rec.sampled.store(false, Ordering::Relaxed);
            return;
        }
        if let Err(e) = ctx.cpu_timers.register_current(jni, serial, true) {
            crate::vm::log::log(
                ctx,
                &format!("cpu=samples: thread {serial} has no CPU timer: {e}"),
            );
            return;
        }
        if self.how() == How::Safepoint {
            if let Some(g) = crate::jvmti::jni::new_global_ref(jni, thread) {
                self.thread_refs.insert(serial, g);
            }
        }
    }

    /// Timers for the application threads that run at an attach (the
    /// agent's threads and the JVM's service threads, group `system`, are
    /// not sampled, as at start-up where the profile never meets them).
    /// Threads started since `how` was set time themselves.
    fn time_running_threads(&self, ctx: &Context, jni: Jni<'_>, dump: &str) -> Result<(), String> {
        let all = ctx
            .jvmti
            .all_threads(jni)
            .map_err(|e| format!("cannot list the running threads: {e}"))?;
        let mut app = Vec::with_capacity(all.len());
        for t in all.iter() {
            let Some(serial) = threads::known_serial(ctx, t) else {
                // Not met yet: its ThreadStart is under way and times it.
                continue;
            };
            match ctx.tables.threads.get(serial) {
                Some(rec) if !rec.agent && rec.sampled.load(Ordering::Relaxed) => {
                    app.push((serial, t));
                }
                _ => {}
            }
        }
        let r = ctx.cpu_timers.time_running_threads(ctx, jni, &app, dump);
        if self.how() == How::Safepoint {
            for &(serial, t) in &app {
                if let Some(g) = crate::jvmti::jni::new_global_ref(jni, t) {
                    self.thread_refs.insert(serial, g);
                }
            }
        }
        crate::vm::log::log(
            ctx,
            &format!(
                "cpu=samples: {} threads running at the attach timed, {} not",
                r.timed, r.unmapped
            ),
        );
        if r.unmapped > 0 {
            crate::diag::notice(&format!(
                "cpu=samples in a running VM: {} of {} threads running at the attach could not be matched to their Linux thread ({}); they are not sampled",
                r.unmapped,
                app.len(),
                r.why.join("; ")
            ));
        }
        Ok(())
    }

    /// Method IDs for every method of `klass`: AsyncGetCallTrace can only
    /// name methods whose ID exists (it never creates one).
    fn create_method_ids(&self, ctx: &Context, klass: Obj<'_>) {
        let _ = ctx.jvmti.class_methods(klass);
    }

    /// Method IDs for every prepared class loaded so far.
    fn create_all_method_ids(&self, ctx: &Context, jni: Jni<'_>) {
        if let Ok(classes) = ctx.jvmti.loaded_classes(jni) {
            for k in classes.iter() {
                self.create_method_ids(ctx, k);
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
            sampler::set_sampled(|_| true, on);
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
            let mut chosen = Vec::new();
            for t in threads.iter().filter(|t| t.object_id == id) {
                t.sampled.store(on, Ordering::Relaxed);
                chosen.push(t.serial);
            }
            sampler::set_sampled(|s| chosen.contains(&s), on);
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

/// Milliseconds between two takes of the asynchronous samples: as long as
/// half the ring surely lasts, within [`TAKE_MIN_MS`]..=[`TAKE_MAX_MS`].
/// Samples come at most from as many threads at once as the process has
/// processors (`cpus`), each after at least half an `interval` of its CPU
/// time (periods are drawn from half to one and a half times it): at most
/// `2 · cpus / interval` a millisecond. Each pass is a wake-up of the
/// sampler thread, about 50 µs of CPU on a virtual machine (a pass every
/// 10 ms at `interval=10` was ~1 % of a 2.6 s program, issue 27 item 13);
/// where the ring may fill fast (many processors, `interval=1`, a deep
/// `depth` that leaves few slots) passes stay as frequent as before.
fn take_period_ms(ring_slots: usize, interval_ms: u32, cpus: usize) -> u64 {
    let lasts =
        (ring_slots as u64 / 2).saturating_mul(u64::from(interval_ms)) / (2 * cpus.max(1) as u64);
    lasts.clamp(TAKE_MIN_MS, TAKE_MAX_MS)
}

/// CompiledMethodLoad: HotSpot records debug information at every
/// instruction of code compiled while an agent takes it (the asynchronous
/// sampler names inlined methods with it); with CompiledMethodUnload, where
/// each method's code lies (`async_sampler::code_map`).
fn watch_compiled_code(ctx: &Context) {
    let _ = ctx.jvmti.set_event_mode(true, event::COMPILED_METHOD_LOAD);
    let _ = ctx
        .jvmti
        .set_event_mode(true, event::COMPILED_METHOD_UNLOAD);
}

/// Wall-clock samples interrupt threads blocked in system calls. Before
/// JDK 16 the old socket implementation (the default there) gets two such
/// interruptions wrong: `ServerSocket.accept()` without a timeout throws
/// `SocketTimeoutException: Accept timed out` (JDK-8237858) and
/// `Socket.connect` with a timeout may wait past it (JDK-8312065). Every
/// wall-clock profiler meets them; the user is told before it happens.
fn warn_of_socket_bugs(ctx: &Context) {
    let feature = ctx.jvmti.version().map_or(0, |v| (v >> 16) & 0x0FFF);
    if (1..16).contains(&feature) {
        crate::diag::notice(&format!(
            "cpusampler=wall on JDK {feature}: a sampled thread blocked in ServerSocket.accept() may get \
             SocketTimeoutException \"Accept timed out\" (JDK-8237858, fixed in JDK 16), and \
             Socket.connect with a timeout may wait past it (JDK-8312065): JDK bugs in handling \
             interrupted system calls, met by every wall-clock profiler"
        ));
    }
}

/// What the signal handler's recovery of failed walks reads of HotSpot
/// (docs/cpu-samples.md, "Failed walks are recovered"), learnt on the
/// calling thread; what is missing is logged (those recoveries stay off).
fn prepare_walk(ctx: &Context, jni: Jni<'_>) {
    let thread = ctx
        .jvmti
        .current_thread(jni)
        .ok()
        .and_then(|t| crate::jvmti::jni::thread_keys(jni, t.obj()).address);
    let missing = sampler::prepare_walk(jni, thread);
    if !missing.is_empty() {
        crate::vm::log::log(
            ctx,
            &format!(
                "cpu=samples: failed stack walks are recovered in part only; not found: {}",
                missing.join(", ")
            ),
        );
    }
}

impl Profile for CpuSamples {
    fn name(&self) -> &'static str {
        "cpu=samples"
    }

    /// The asynchronous sampler wants the JIT's debug information at every
    /// instruction: HotSpot records it while an agent takes
    /// CompiledMethodLoad events (unless -XX:-DebugNonSafepoints was given).
    fn capabilities(
        &self,
        potential: &jvmtiCapabilities,
        need: &mut jvmtiCapabilities,
    ) -> Result<(), String> {
        if potential.has(cap::CAN_GENERATE_COMPILED_METHOD_LOAD_EVENTS) {
            need.set(cap::CAN_GENERATE_COMPILED_METHOD_LOAD_EVENTS);
        }
        Ok(())
    }

    fn events(&self) -> &'static [Event] {
        &[Event::ThreadEnd, Event::ClassPrepare]
    }

    /// Before any code is compiled: debug information at every instruction
    /// (async sampling from the start).
    fn on_load(&self, ctx: &Context) {
        if self.active && matches!(ctx.opts.cpu_sampler, CpuSampler::Async | CpuSampler::Wall) {
            watch_compiled_code(ctx);
        }
    }

    fn vm_start(&'static self, ctx: &'static Context, jni: Jni<'_>) {
        let how = self.choose(ctx, jni);
        let _ = self.how.set(how);
        if how == How::Async {
            // Method IDs for each class as it is prepared from now on, then
            // for those prepared so far (in this order, so a class
            // prepared in between is not missed).
            if let Err(e) = ctx.jvmti.set_event_mode(true, event::CLASS_PREPARE) {
                crate::diag::error(&format!("cpu=samples: cannot enable ClassPrepare: {e}"));
            }
            self.create_all_method_ids(ctx, jni);
            prepare_walk(ctx, jni);
        }
        // The VM-init thread (main) was met before VM start: its timer now.
        if let Ok(t) = ctx.jvmti.current_thread(jni) {
            self.time_thread(ctx, jni, t.obj());
        }
        if self.active {
            if let Err(e) = self.start(ctx, jni) {
                crate::diag::error(&format!("cannot start the cpu sampling thread: {e}"));
            }
        }
    }

    fn thread_start(&self, ctx: &Context, jni: Jni<'_>, thread: Obj<'_>) {
        self.time_thread(ctx, jni, thread);
    }

    fn thread_end(&self, ctx: &Context, _jni: Jni<'_>, thread: Obj<'_>) {
        if self.how() == How::Safepoint {
            if let Some(serial) = threads::own_serial(ctx, thread) {
                self.thread_refs.remove(&serial);
            }
        }
    }

    fn class_prepare(&self, ctx: &Context, _jni: Jni<'_>, klass: Obj<'_>) {
        if self.how() == How::Async {
            self.create_method_ids(ctx, klass);
        }
    }

    /// In a running VM: sampling as at start-up. Threads that start from
    /// now on give themselves a timer (ThreadStart, as at start-up); the
    /// threads already running get theirs from here, matched to their
    /// Linux thread through the VM's thread dump (docs/cpu-samples.md,
    /// "After an attach"). Without a thread dump the session falls back
    /// to the original's rule, and says so.
    fn attach(&'static self, ctx: &'static Context, jni: Jni<'_>) -> Result<(), String> {
        // Timers an earlier session left (threads it timed that still run)
        // take no stacks until this session registers their threads again
        // under its own serials.
        sampler::set_sampled(|_| true, false);
        let dump = match ctx.opts.cpu_sampler {
            CpuSampler::Runnable => None,
            _ => Some(crate::jvmti::jni::thread_dump(jni)),
        };
        let how = match &dump {
            Some(Err(e)) => {
                crate::diag::notice(&format!(
                    "cpu=samples in a running VM: no thread dump to find the running threads' Linux thread IDs ({e}); every RUNNABLE thread is sampled at safepoints (cpusampler=runnable)"
                ));
                How::Runnable
            }
            _ => self.choose(ctx, jni),
        };
        let _ = self.how.set(how);
        if how == How::Async {
            ctx.jvmti
                .set_event_mode(true, event::CLASS_PREPARE)
                .map_err(|e| format!("cpu=samples: cannot enable ClassPrepare: {e}"))?;
            self.create_all_method_ids(ctx, jni);
            prepare_walk(ctx, jni);
        }
        if let (Some(Ok(dump)), true) = (&dump, how != How::Runnable) {
            self.time_running_threads(ctx, jni, dump)?;
        }
        if self.active {
            self.start(ctx, jni)
                .map_err(|e| format!("cannot start the cpu sampling thread: {e}"))?;
        }
        Ok(())
    }

    fn dump(&'static self, ctx: &'static Context, jni: Jni<'_>) {
        if self.active {
            crate::diag::verbose(
                ctx.opts.verbose,
                " CPU usage by sampling running threads ...",
            );
            self.catch_up(ctx, jni);
            crate::report::cpu::write_samples(
                ctx,
                ctx.opts.cutoff,
                CpuTitle::Samples,
                self.lost_in_period(),
            );
        }
    }

    /// CPU reports cover the time since the last dump.
    fn after_dump(&self, ctx: &Context) {
        ctx.tables.traces.reset_costs();
        self.start_period();
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
                self.catch_up(ctx, jni);
                let lost = (title == CpuTitle::Samples)
                    .then(|| self.lost_in_period())
                    .flatten();
                crate::report::cpu::write_samples(ctx, f64::from(cutoff), title, lost);
            }
            Command::Control(Control::Sampling { on, thread }) => {
                self.sampling(ctx, jni, on, thread)
            }
            Command::Control(Control::ClearCpuSamples) => {
                self.catch_up(ctx, jni);
                ctx.tables.traces.reset_costs();
                self.start_period();
            }
            _ => return Answer::NotMine,
        }
        Answer::Done
    }

    /// No stacks after this; the samples already taken stay for the final
    /// dump.
    fn stop(&self, _ctx: &Context, _jni: Jni<'_>) {
        let was_running = self.is_running();
        self.thread.stop(|| self.wake(), Duration::from_secs(5));
        if was_running && self.how() != How::Runnable {
            sampler::set_stacks(false);
            sampler::stop();
        }
    }

    /// After the final dump: say what could not be counted.
    fn shut_down(&self, ctx: &Context) {
        if self.how() == How::Runnable || !(self.active || self.passes.load(Ordering::Relaxed) > 0)
        {
            return;
        }
        let h = sampler::handler_stats();
        let (counted, lost, why) = self.counts.summary(h.dropped);
        let recovered = self.counts.recovered.load(Ordering::Relaxed);
        let line = format!(
            "cpu=samples ({}): {counted} samples counted ({recovered} of them from recovered stack walks), {lost} not counted{}",
            match (self.how(), ctx.opts.cpu_sampler) {
                (_, CpuSampler::Wall) => "cpusampler=wall",
                (How::Async, _) => "cpusampler=async",
                _ => "cpusampler=safepoint",
            },
            if why.is_empty() {
                String::new()
            } else {
                format!(" ({why})")
            }
        );
        if lost > 0 && ctx.opts.verbose {
            crate::diag::notice(&line);
        } else {
            crate::vm::log::log(ctx, &line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_are_as_rare_as_the_ring_allows() {
        // Two processors, default interval and depth: the ring lasts
        // seconds, a pass every 100 ms (was 10).
        assert_eq!(take_period_ms(8192, 10, 2), TAKE_MAX_MS);
        // 64 processors at interval=1: half the ring in 32 ms.
        assert_eq!(take_period_ms(8192, 1, 64), 32);
        // A deep depth leaves few slots: as often as ever.
        assert_eq!(take_period_ms(511, 1, 64), TAKE_MIN_MS);
        // No ring yet, or nonsense: within the bounds.
        assert_eq!(take_period_ms(0, 10, 2), TAKE_MIN_MS);
        assert_eq!(take_period_ms(usize::MAX, u32::MAX, 0), TAKE_MAX_MS);
    }
}
