//! The profiles. Each is one room with one door: a type that implements
//! [`Profile`] and owns its state. The agent keeps the list [`list`]
//! returns and drives every profile through the trait: capabilities at
//! load, events, VM start, dumps, socket commands, VM death. Adding a
//! profile is its own module and one line of [`list`].
//!
//! The list's order is the dump order (the original's: MONITOR, HEAP DUMP,
//! SITES, CPU SAMPLES, CPU TIME); profiles start in the reverse order, so
//! the ones whose start-up runs Java code or starts threads (cpu=times'
//! Tracker, the sampler) are running before the allocation and monitor
//! profiles begin to count.

pub mod alloc_sites;
pub mod cpu_samples;
pub mod cpu_times;
pub mod heap_dump;
pub mod monitors;

use crate::jvmti::sys::jvmtiCapabilities;
use crate::jvmti::{Jni, MethodId, Obj};
use crate::options::Options;
use crate::protocol::Command;
use crate::vm::Context;

/// JVMTI events a profile may ask the agent to dispatch to it. (Enabling
/// them is the profile's own business: some are switched on only at VM
/// start or on request.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    ThreadEnd,
    ClassFileLoadHook,
    ExceptionCatch,
    SampledObjectAlloc,
    VmObjectAlloc,
    ObjectFree,
    GcFinish,
    MonitorContendedEnter,
    MonitorContendedEntered,
    MonitorWait,
    MonitorWaited,
    ClassPrepare,
}

impl Event {
    /// How many kinds there are (events index tables by `as usize`).
    pub const COUNT: usize = 12;
}

/// What a socket command meant to a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Not this profile's command.
    NotMine,
    /// Done (output written, or nothing to write).
    Done,
}

/// What the agent asks of a profile. Every method but `name` has a default
/// that does nothing, so a profile implements what it takes part in.
#[allow(unused_variables)]
pub trait Profile: Send + Sync {
    /// Name in messages (`cpu=samples`, `heap=dump`, ...).
    fn name(&self) -> &'static str;

    /// Agent_OnLoad: add the JVMTI capabilities this profile needs to
    /// `need`; `Err` is the start-up error when the VM lacks one.
    fn capabilities(
        &self,
        potential: &jvmtiCapabilities,
        need: &mut jvmtiCapabilities,
    ) -> Result<(), String> {
        Ok(())
    }

    /// Events the agent dispatches to this profile.
    fn events(&self) -> &'static [Event] {
        &[]
    }

    /// Agent_OnLoad, after capabilities: what must happen before VM init.
    fn on_load(&self, ctx: &Context) {}

    /// VM init: start collecting.
    fn vm_start(&'static self, ctx: &'static Context, jni: Jni<'_>) {}

    /// Started in a VM that is already running (`Agent_OnAttach`, after
    /// the vm floor met the running threads and loaded classes): start
    /// collecting from now on, or say why this profile cannot. (What the VM
    /// grants only at start-up is refused earlier, by `capabilities`.)
    fn attach(&'static self, ctx: &'static Context, jni: Jni<'_>) -> Result<(), String> {
        Err(format!("{} cannot start in a running VM", self.name()))
    }

    /// An application thread started (after the agent registered it).
    fn thread_start(&self, ctx: &Context, jni: Jni<'_>, thread: Obj<'_>) {}

    /// An application thread ends (before the agent marks it dead).
    fn thread_end(&self, ctx: &Context, jni: Jni<'_>, thread: Obj<'_>) {}

    /// Write this profile's section of a full dump (exit, SIGQUIT,
    /// `jcmd JVMTI.data_dump`).
    fn dump(&'static self, ctx: &'static Context, jni: Jni<'_>) {}

    /// After every section of a full dump: start the next period.
    fn after_dump(&self, ctx: &Context) {}

    /// A socket command: do it if it is this profile's.
    fn command(&'static self, ctx: &'static Context, jni: Jni<'_>, cmd: &Command) -> Answer {
        Answer::NotMine
    }

    /// VM death or stop, before the final dump: stop producing and take in
    /// what is still buffered.
    fn stop(&self, ctx: &Context, jni: Jni<'_>) {}

    /// VM death or stop, after the final dump: switch the events off.
    fn shut_down(&self, ctx: &Context) {}

    /// Stopped while the VM runs on (after `shut_down`): give back what the
    /// profile changed in the VM that would outlast it.
    fn detach(&self, ctx: &Context, jni: Jni<'_>) {}

    // ---- events (only those listed by `events`) -------------------------

    fn class_file_load_hook(
        &self,
        ctx: &Context,
        name: Option<&str>,
        bytes: &[u8],
    ) -> Option<Vec<u8>> {
        None
    }
    fn exception_catch(&self, ctx: &Context, jni: Jni<'_>, thread: Obj<'_>, method: MethodId) {}
    /// SampledObjectAlloc, or VMObjectAlloc with `from_vm`.
    #[allow(clippy::too_many_arguments)]
    fn object_alloc(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        thread: Obj<'_>,
        obj: Obj<'_>,
        klass: Obj<'_>,
        size: i64,
        from_vm: bool,
    ) {
    }
    fn object_free(&self, ctx: &Context, tag: i64) {}
    fn gc_finish(&self, ctx: &Context) {}
    fn monitor_contended_enter(&self, ctx: &Context, jni: Jni<'_>, thread: Obj<'_>, obj: Obj<'_>) {}
    fn monitor_contended_entered(&self, ctx: &Context) {}
    fn monitor_wait(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        thread: Obj<'_>,
        obj: Obj<'_>,
        timeout_ms: i64,
    ) {
    }
    fn monitor_waited(&self, ctx: &Context) {}
    fn class_prepare(&self, ctx: &Context, jni: Jni<'_>, klass: Obj<'_>) {}
}

/// The profiles of this run, in dump order. A profile whose options are
/// off is not in the list; cpu=samples is listed, idle, when a front-end
/// may start sampling with a socket command (`net=`, `listen=`).
pub fn list(opts: &Options) -> Vec<Box<dyn Profile>> {
    let mut v: Vec<Box<dyn Profile>> = Vec::new();
    if opts.monitor {
        v.push(Box::new(monitors::Monitors::default()));
    }
    if opts.heap_dump {
        v.push(Box::new(heap_dump::HeapDump::default()));
    }
    if opts.heap_sites {
        v.push(Box::new(alloc_sites::AllocSites::default()));
    }
    if opts.cpu_samples || opts.net.is_some() || opts.listen.is_some() {
        v.push(Box::new(cpu_samples::CpuSamples::new(opts.cpu_samples)));
    }
    if opts.cpu_timing() {
        v.push(Box::new(cpu_times::CpuTimes::default()));
    }
    v
}
