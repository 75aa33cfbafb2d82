//! The per-thread CPU-time timers that cpu=samples and cpu=times share
//! (`jvmti::async_sampler`, docs/cpu-samples.md): which configuration this
//! run needs, installed once for the process, and the calling thread's
//! registration. The floor deletes a thread's timer when the thread ends.

use super::Context;
use crate::jvmti::async_sampler::{self as sampler, Config, SlotId, StackMode};
use crate::jvmti::Jni;
use crate::options::{CpuSampler, Options, TimingClock};
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
        (true, CpuSampler::Async) => StackMode::Async,
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
                sampler::install(cfg, agct)?;
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

    /// The calling thread ends: its timer goes (after every profile saw the
    /// end).
    pub fn thread_end(&self) {
        if self.installed().is_some() {
            sampler::unregister_current();
        }
    }
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
