//! The agent: one `Agent` value per process, created in Agent_OnLoad and
//! reachable from every callback through `agent()`. It owns the options,
//! the tables, the writer and the per-profile state; the JVMTI event
//! handler (`events`) dispatches to the profiles.

pub mod classes;
pub mod debug;
pub mod events;
pub mod gate;
pub mod lifecycle;
pub mod onload;
pub mod output;
pub mod stacks;
pub mod threads;

use crate::format::ProfileFormat;
use crate::jvmti::Jvmti;
use crate::options::Options;
use crate::profile::cpu_samples::Sampler;
use crate::sink::Writer;
use crate::tables::Tables;
use gate::Gate;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

pub type BoxedFormat = Box<dyn ProfileFormat + Send>;

pub struct Agent {
    pub jvmti: Jvmti,
    pub opts: Options,
    pub tables: Tables,
    pub out: Writer<BoxedFormat>,
    /// Origin of binary record timestamps (µs since agent load).
    pub started: Instant,
    pub gate: Gate,
    /// Serial of the "system trace" (the empty stack at VM init).
    pub system_trace: AtomicU32,
    pub vm_initialised: AtomicBool,
    /// Held while a full dump or a socket command writes: further dump
    /// requests are ignored, commands wait, the sampler pauses.
    pub dumping: gate::DumpLock,
    pub sampler: Sampler,
    /// heap=sites state (allocation events, frees).
    pub alloc: crate::profile::alloc_sites::AllocSites,
    /// Trace depth for traces created from now on (`depth`, changed by the
    /// socket command CONTROL 0x0007).
    pub depth: AtomicU32,
    /// `net=`: the command listener.
    pub net: crate::net::NetState,
}

static AGENT: OnceLock<Agent> = OnceLock::new();

pub fn agent() -> Option<&'static Agent> {
    AGENT.get()
}

pub(crate) fn install(a: Agent) -> &'static Agent {
    let _ = AGENT.set(a);
    AGENT.get().expect("agent just installed")
}

impl Agent {
    /// Record timestamp: microseconds since the agent was loaded (u32 wraps
    /// after ~71 minutes, as in the original format).
    pub fn micros(&self) -> u32 {
        self.started.elapsed().as_micros() as u32
    }

    /// Time stamp for a record written now.
    pub fn stamp(&self) -> crate::format::Stamp {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        crate::format::Stamp {
            micros_since_load: self.started.elapsed().as_micros() as u64,
            unix_millis: now.as_millis() as i64,
            utc_offset_secs: crate::os::local_utc_offset(now.as_secs() as i64),
        }
    }

    /// Current maximum trace depth.
    pub fn depth(&self) -> u32 {
        self.depth.load(Ordering::Relaxed)
    }

    pub fn system_trace(&self) -> u32 {
        self.system_trace.load(Ordering::Relaxed)
    }
}
