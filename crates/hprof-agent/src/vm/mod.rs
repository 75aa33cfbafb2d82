//! The floor every profile stands on: one [`Context`] per process holding
//! what the profiles share (the options, the tables, the JVMTI handle, the
//! writer), and the services they all use on the JVM: meeting classes and
//! threads (serials, tags, LOAD CLASS / THREAD START records), turning
//! stacks into traces, the per-thread CPU-time timers, identity tags, the
//! callback gate and the dump lock, the output format, internal logging.
//! Nothing here knows a profile.

pub mod classes;
pub mod cpu_timers;
pub mod gate;
pub mod log;
pub mod output;
pub mod stacks;
pub mod tags;
pub mod threads;

use crate::format::Stamp;
use crate::jvmti::Jvmti;
use crate::options::Options;
use crate::sink::Writer;
use crate::tables::Tables;
use gate::{DumpLock, Gate};
use output::BoxedFormat;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Instant;

/// Sessions started in this process so far (a stopped profile can be
/// followed by a new attach, docs/attach.md).
static SESSIONS: AtomicU32 = AtomicU32::new(0);

/// What every profile shares.
pub struct Context {
    pub jvmti: Jvmti,
    pub opts: Options,
    pub tables: Tables,
    /// The writer thread's queue: everything written goes through it.
    pub out: Writer<BoxedFormat>,
    /// Origin of binary record timestamps (µs since agent load).
    started: Instant,
    /// Event callbacks enter it; VM death closes it and waits for them.
    pub gate: Gate,
    /// Held while a full dump or a socket command writes: further dump
    /// requests are ignored, commands wait, the sampler pauses.
    pub dumping: DumpLock,
    /// Serial of the "system trace" (the empty stack at VM init).
    system_trace: AtomicU32,
    pub vm_initialised: AtomicBool,
    /// Trace depth for traces created from now on (`depth`, changed by the
    /// socket command CONTROL 0x0007).
    depth: AtomicU32,
    /// Identity tags (class mirrors, Thread objects) and the environments
    /// that must see them too.
    pub tags: tags::Tags,
    /// Methods that never appear in traces (the cpu=times Tracker's).
    pub hidden: stacks::HiddenMethods,
    /// The per-thread CPU-time timers of cpu=samples and cpu=times.
    pub cpu_timers: cpu_timers::CpuTimers,
    /// Started in a running VM (Agent_OnAttach) rather than at VM start:
    /// what happened before is not in the profile.
    pub attached: bool,
    /// This session's number, 1 for the first in the process. Thread-local
    /// caches of the profiles carry it, so a session started after a stop
    /// never takes what an earlier one left in a thread.
    pub session: u32,
    /// VM death has begun (as opposed to a stop while the VM runs on).
    pub dying: AtomicBool,
}

impl Context {
    pub fn new(jvmti: Jvmti, opts: Options, out: Writer<BoxedFormat>, attached: bool) -> Context {
        let depth = AtomicU32::new(opts.depth);
        Context {
            jvmti,
            opts,
            tables: Tables::default(),
            out,
            started: Instant::now(),
            gate: Gate::default(),
            dumping: DumpLock::default(),
            system_trace: AtomicU32::new(0),
            vm_initialised: AtomicBool::new(false),
            depth,
            tags: tags::Tags::default(),
            hidden: stacks::HiddenMethods::default(),
            cpu_timers: cpu_timers::CpuTimers::default(),
            attached,
            session: SESSIONS.fetch_add(1, Ordering::Relaxed) + 1,
            dying: AtomicBool::new(false),
        }
    }

    /// Time stamp for a record written now.
    pub fn stamp(&self) -> Stamp {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Stamp {
            micros_since_load: self.started.elapsed().as_micros() as u64,
            unix_millis: now.as_millis() as i64,
            utc_offset_secs: crate::os::local_utc_offset(now.as_secs() as i64),
        }
    }

    /// Current maximum trace depth.
    pub fn depth(&self) -> u32 {
        self.depth.load(Ordering::Relaxed)
    }

    /// Depth of traces created from now on (socket CONTROL 0x0007).
    pub fn set_depth(&self, depth: u32) {
        self.depth.store(depth, Ordering::Relaxed);
    }

    pub fn system_trace(&self) -> u32 {
        self.system_trace.load(Ordering::Relaxed)
    }

    pub(crate) fn set_system_trace(&self, serial: u32) {
        self.system_trace.store(serial, Ordering::Relaxed);
    }
}
