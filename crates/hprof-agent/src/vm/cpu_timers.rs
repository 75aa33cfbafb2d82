//! The per-thread CPU-time timers that cpu=samples and cpu=times share
//! (`jvmti::async_sampler`, docs/cpu-samples.md): which configuration this
//! run needs, installed once for the process, and the calling thread's
//! registration. The floor deletes a thread's timer when the thread ends.

use super::Context;
use crate::jvmti::async_sampler::{self as sampler, signal, Config, Mechanism, SlotId, StackMode};
use crate::jvmti::sys::thread_state;
use crate::jvmti::thread_dump::{Headers, Unmapped};
use crate::jvmti::{Jni, Obj};
use crate::options::{CpuSampler, Options, TimingClock};
use std::collections::HashMap;
use std::sync::OnceLock;

/// CPU time per timer expiration for cpu=times: its clock's granularity,
/// the original's millisecond.
pub const TIMES_PERIOD_NS: u64 = 1_000_000;

/// Most frames one asynchronous sample keeps.
pub const MAX_SAMPLE_FRAMES: usize = 2048;

/// Memory the sample ring may take (frames of 16 bytes).
const RING_BYTES: usize = 16 << 20;
const RING_MIN_SLOTS: usize = 256;
const RING_MAX_SLOTS: usize = 8192;

/// What cpu=samples asked for and what it got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    /// How stacks are taken (Async, or Ticks for the safepoint sampler).
    pub mode: StackMode,
    /// Why the asynchronous sampler is not used, when it was asked for.
    pub fallback: Option<String>,
}

#[derive(Default)]
pub struct CpuTimers {
    state: OnceLock<Result<Installed, String>>,
}

/// cpu=samples (now, or later through the socket) samples by CPU timers.
pub fn samples_by_timer(opts: &Options) -> bool {
    (opts.cpu_samples || opts.net.is_some()) && opts.cpu_sampler != CpuSampler::Runnable
}

/// cpu=times|old charges CPU time (the timers are its clock).
pub fn times_by_cpu(opts: &Options) -> bool {
    opts.cpu_timing() && opts.timing_clock == TimingClock::Cpu
}

/// The timers' configuration for these options (`hidden` = frames that
/// may sit on top of a stack and are dropped, the Tracker's).
pub fn config(opts: &Options, hidden: usize) -> Config {
    let interval_ns = u64::from(opts.interval_ms) * 1_000_000;
    let samples = samples_by_timer(opts);
    let period_ns = if times_by_cpu(opts) {
        TIMES_PERIOD_NS.min(interval_ns)
    } else {
        interval_ns
    };
    let mode = match (samples, opts.cpu_sampler) {
        (false, _) | (_, CpuSampler::Runnable) => StackMode::None,
        (true, CpuSampler::Async | CpuSampler::Wall) => StackMode::Async,
        (true, CpuSampler::Safepoint) => StackMode::Ticks,
    };
    let max_frames = (opts.depth as usize)
        .saturating_add(hidden)
        .clamp(1, MAX_SAMPLE_FRAMES);
    let ring_slots = if mode == StackMode::Async {
        (RING_BYTES / (16 * max_frames + 16)).clamp(RING_MIN_SLOTS, RING_MAX_SLOTS)
    } else {
        // Ticks carry no frames.
        RING_MAX_SLOTS
    };
    Config {
        period_ns,
        stack_interval_ns: interval_ns,
        mode,
        max_frames: if mode == StackMode::Async {
            max_frames
        } else {
            1
        },
        ring_slots,
        wall: samples && opts.cpu_sampler == CpuSampler::Wall,
    }
}

impl CpuTimers {
    /// Install the timers' signal handler and ring (once per process; the
    /// first caller's options decide, and they are the same for all). The
    /// asynchronous sampler falls back to ticks (the safepoint sampler)
    /// when the JVM has no AsyncGetCallTrace.
    pub fn ensure(&self, ctx: &Context, jni: Jni<'_>) -> Result<Installed, String> {
        self.state
            .get_or_init(|| {
                // Room for the Tracker's two frames on top (cpu=times), dropped later.
                let mut cfg = config(&ctx.opts, 2);
                let mut fallback = None;
                let mut agct = None;
                if cfg.mode == StackMode::Async {
                    agct = sampler::find_async_get_call_trace(jni);
                    if agct.is_none() {
                        fallback =
                            Some("this JVM has no AsyncGetCallTrace (not HotSpot?)".to_string());
                        cfg = Config {
                            mode: StackMode::Ticks,
                            max_frames: 1,
                            ..cfg
                        };
                    }
                }
                let setup = sampler::install(cfg, agct)?;
                say_setup(ctx, &setup);
                Ok(Installed {
                    mode: cfg.mode,
                    fallback,
                })
            })
            .clone()
    }

    /// Installed already (by either profile)?
    pub fn installed(&self) -> Option<&Installed> {
        self.state.get().and_then(|r| r.as_ref().ok())
    }

    /// Give the calling thread its timer; `stacks`: cpu=samples may take
    /// its stacks (false for a thread only cpu=times times).
    pub fn register_current(
        &self,
        jni: Jni<'_>,
        serial: u32,
        stacks: bool,
    ) -> Result<SlotId, String> {
        if self.installed().is_none() {
            return Err("the CPU timers are not installed".into());
        }
        sampler::register_current(jni, serial, stacks)
    }

    /// Give CPU-time timers to threads that were running when the agent
    /// attached (they never pass through the agent again, so they cannot
    /// register themselves): each thread's Linux thread ID is read from
    /// the VM's thread dump (`jvmti::thread_dump`), checked against
    /// `/proc/self/task`, and a timer is made for it from here. `threads`
    /// are (serial, Thread object); `dump` is a thread dump taken before
    /// (it is taken again once for threads it does not show: they started
    /// after it). Threads that end meanwhile lose their timer again.
    pub fn time_running_threads(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        threads: &[(u32, Obj<'_>)],
        dump: &str,
    ) -> Running {
        let mut running = Running::default();
        if self.installed().is_none() {
            running.unmapped = threads.len();
            running.why.push("the CPU timers are not installed".into());
            return running;
        }
        let mut later = Vec::new();
        let mut found: Vec<(u32, Obj<'_>, i32)> = Vec::with_capacity(threads.len());
        let first = Headers::new(dump);
        for &(serial, t) in threads {
            match native_id(ctx, jni, &first, t) {
                Err(Unmapped::NotFound) => later.push((serial, t)),
                r => running.note(r, |tid| found.push((serial, t, tid))),
            }
        }
        if !later.is_empty() {
            match crate::jvmti::jni::thread_dump(jni) {
                Ok(again) => {
                    let again = Headers::new(&again);
                    for (serial, t) in later {
                        let r = native_id(ctx, jni, &again, t);
                        running.note(r, |tid| found.push((serial, t, tid)));
                    }
                }
                Err(e) => {
                    running.unmapped += later.len();
                    running.why.push(format!("thread dump failed: {e}"));
                }
            }
        }
        // Two threads with one native ID: neither can be trusted.
        let mut count: HashMap<i32, u32> = HashMap::new();
        for &(_, _, tid) in &found {
            *count.entry(tid).or_default() += 1;
        }
        for (serial, t, tid) in found {
            if count[&tid] > 1 {
                running.unmapped += 1;
                running.add_why("two threads with one native ID");
                continue;
            }
            if !std::path::Path::new(&format!("/proc/self/task/{tid}")).exists() {
                if is_alive(ctx, t) {
                    running.unmapped += 1;
                    running.add_why("native ID not a thread of this process");
                }
                continue;
            }
            if let Err(e) = sampler::register_thread(tid, serial, true) {
                running.unmapped += 1;
                running.why.push(e);
                continue;
            }
            // Ended while it was being timed: its end may have come before
            // the timer was made, and gave back nothing then.
            if !is_alive(ctx, t) {
                sampler::unregister_thread(tid);
                continue;
            }
            running.timed += 1;
        }
        running
    }

    /// The calling thread ends: its timer goes (after every profile saw the
    /// end).
    pub fn thread_end(&self) {
        if self.installed().is_some() {
            sampler::unregister_current();
        }
    }
}

/// Say how threads are signalled: in the internal log always; on standard
/// error when it is not what a user would expect (perf events refused,
/// SIGPROF held by another handler).
fn say_setup(ctx: &Context, setup: &sampler::Setup) {
    let how = match &setup.mechanism {
        Mechanism::Perf {
            exclude_kernel: false,
        } => "perf task-clock events".to_string(),
        Mechanism::Perf {
            exclude_kernel: true,
        } => "perf task-clock events (user time; kernel time is charged to the next sample)"
            .to_string(),
        Mechanism::Timers { why } => {
            crate::diag::notice(&format!(
                "CPU time is sampled with POSIX timers on the threads' CPU clocks, at the kernel's tick ({why}); periods are randomised, but work that repeats in step with the tick may still be seen at a few places only (docs/cpu-samples.md)"
            ));
            "POSIX timers on the threads' CPU clocks".to_string()
        }
    };
    if !setup.passed_over.is_empty() {
        let names: Vec<&str> = setup.passed_over.iter().map(|&s| signal::name(s)).collect();
        crate::diag::notice(&format!(
            "{} already handled (another profiler or the application): CPU-time samples are signalled with {}",
            names.join(", "),
            signal::name(setup.signal)
        ));
    }
    crate::vm::log::log(
        ctx,
        &format!(
            "CPU time sampled with {how}, random periods, signal {}",
            signal::name(setup.signal)
        ),
    );
}

/// What became of the threads running at an attach
/// ([`CpuTimers::time_running_threads`]).
#[derive(Debug, Default)]
pub struct Running {
    /// Threads that got a timer.
    pub timed: usize,
    /// Threads that could not be matched to their Linux thread (no timer).
    pub unmapped: usize,
    /// Why, one entry per kind of failure.
    pub why: Vec<String>,
}

impl Running {
    fn add_why(&mut self, why: &str) {
        if !self.why.iter().any(|w| w == why) {
            self.why.push(why.to_string());
        }
    }

    /// One thread's outcome: `found` is given its native ID, or the
    /// failure is counted (a thread that ended is not a failure).
    fn note(&mut self, r: Result<Option<i32>, Unmapped>, found: impl FnOnce(i32)) {
        match r {
            Ok(Some(tid)) => found(tid),
            Ok(None) => {}
            Err(u) => {
                self.unmapped += 1;
                self.add_why(match u {
                    Unmapped::NotFound => "not in the thread dump",
                    Unmapped::Ambiguous => "name imitates another thread's dump entry",
                    Unmapped::NoNativeId => "no native ID in the thread dump",
                });
            }
        }
    }
}

/// The native ID of thread `t` in `headers`; `Ok(None)`: the thread has
/// ended (nothing to time).
fn native_id(
    ctx: &Context,
    jni: Jni<'_>,
    headers: &Headers<'_>,
    t: Obj<'_>,
) -> Result<Option<i32>, Unmapped> {
    let keys = crate::jvmti::jni::thread_keys(jni, t);
    let id = keys.id;
    if let (Some(address), Some(id)) = (keys.address, id) {
        if let Ok(tid) = headers.native_id_at(address, id) {
            return Ok(Some(tid));
        }
    }
    let name = ctx.jvmti.thread_info(jni, t).ok().and_then(|i| i.name);
    match (name, id) {
        (Some(name), Some(id)) => match headers.native_id(&name, id) {
            Err(Unmapped::NotFound) if !is_alive(ctx, t) => Ok(None),
            r => r.map(Some),
        },
        _ if !is_alive(ctx, t) => Ok(None),
        _ => Err(Unmapped::NotFound),
    }
}

fn is_alive(ctx: &Context, t: Obj<'_>) -> bool {
    ctx.jvmti
        .thread_state(t)
        .is_ok_and(|s| s & thread_state::ALIVE != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(s: &str) -> Options {
        crate::options::parse(s).unwrap()
    }

    #[test]
    fn samples_alone_tick_at_the_interval_and_walk_asynchronously() {
        let c = config(&opts("cpu=samples,interval=10"), 2);
        assert_eq!(c.period_ns, 10_000_000);
        assert_eq!(c.stack_interval_ns, 10_000_000);
        assert_eq!(c.mode, StackMode::Async);
        assert_eq!(c.max_frames, 6);
        assert_eq!(c.ring_slots, RING_MAX_SLOTS);
    }

    #[test]
    fn times_needs_millisecond_ticks_and_samples_keep_their_interval() {
        let c = config(&opts("cpu=samples,cpu=times,interval=20"), 2);
        assert_eq!((c.period_ns, c.stack_interval_ns), (1_000_000, 20_000_000));
        let c = config(&opts("cpu=times"), 2);
        assert_eq!(c.mode, StackMode::None);
        assert_eq!(c.period_ns, 1_000_000);
        assert!(!times_by_cpu(&opts("cpu=times,clock=wall")));
        assert!(times_by_cpu(&opts("cpu=old")));
    }

    #[test]
    fn sampler_option_picks_the_mode() {
        assert_eq!(
            config(&opts("cpu=samples,cpusampler=safepoint"), 2).mode,
            StackMode::Ticks
        );
        assert_eq!(
            config(&opts("cpu=samples,cpusampler=runnable"), 2).mode,
            StackMode::None
        );
        assert!(!samples_by_timer(&opts("cpu=samples,cpusampler=runnable")));
        // A front-end may turn sampling on later.
        assert!(samples_by_timer(&opts("net=localhost:5,heap=sites")));
    }

    #[test]
    fn deep_traces_get_fewer_ring_slots_and_a_frame_ceiling() {
        let c = config(&opts("cpu=samples,depth=100000"), 2);
        assert_eq!(c.max_frames, MAX_SAMPLE_FRAMES);
        assert_eq!(c.ring_slots, RING_BYTES / (16 * MAX_SAMPLE_FRAMES + 16));
        assert!(c.ring_slots >= RING_MIN_SLOTS);
    }
}
