//! What the agent does for each socket command (`net=host:port`). The
//! protocol itself is parsed in `protocol`; this is the JVM side.
//!
//! Each command runs inside the callback gate (so VM death waits for it)
//! and holds the agent's `dumping` flag, so its output never interleaves
//! with a SIGQUIT / data-dump report or another command; the output is
//! flushed to the socket after every command.

use crate::agent::Agent;
use crate::diag::rejected;
use crate::jvmti::sys::JNIEnv;
use crate::protocol::{Command, Control, ThreadRef};
use std::sync::atomic::Ordering;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Read the next command.
    Continue,
    /// Stop reading commands (EOF, EXIT, VM death).
    Stop,
}

/// Execute one command on the listener thread.
pub fn execute(agent: &'static Agent, jni: *mut JNIEnv, cmd: Command) -> Flow {
    let verbose = agent.opts.verbose;
    match cmd {
        Command::Eof => {
            crate::diag::verbose(
                verbose,
                "HPROF: received EOF command; listener stopped, output continues\n",
            );
            return Flow::Stop;
        }
        Command::Exit => return exit_vm(agent, jni),
        _ => {}
    }
    let Some(_pass) = agent.gate.enter() else {
        return Flow::Stop;
    };
    let Some(_excl) = agent.dumping.lock_unless(|| agent.gate.is_closed()) else {
        return Flow::Stop;
    };
    match cmd {
        Command::ForceGc => force_gc(agent),
        Command::DumpHeap => super::heap_commands::dump_heap_on_command(agent, jni),
        Command::AllocSites { flags, cutoff } => {
            super::heap_commands::alloc_sites_on_command(agent, jni, flags, f64::from(cutoff))
        }
        Command::HeapSummary => super::heap_commands::heap_summary_on_command(agent),
        Command::DumpTraces => {
            let all = agent.tables.traces.all();
            super::trace_info::submit_traces(agent, super::trace_info::unprinted(agent, all));
        }
        Command::CpuSamples { cutoff, .. } => cpu_samples(agent, f64::from(cutoff)),
        Command::Control(c) => control(agent, jni, c),
        Command::Eof | Command::Exit => unreachable!("handled above"),
    }
    agent.out.flush();
    Flow::Continue
}

pub(crate) fn force_gc(agent: &Agent) {
    if let Err(e) = agent.jvmti.force_garbage_collection() {
        rejected(&format!("FORCE GC failed: {e}"));
    }
}

/// CPU section with the command's cutoff; costs are not reset. Titled
/// `CPU TIME (ms)` in text when sampling is off (the original's rule);
/// binary has only the CPU SAMPLES record.
fn cpu_samples(agent: &Agent, cutoff: f64) {
    use crate::format::CpuTitle;
    let sampling = agent.opts.cpu_samples || crate::profile::cpu_samples::is_running(agent);
    let binary = agent.opts.format == crate::options::Format::Binary;
    let title = if sampling || binary {
        CpuTitle::Samples
    } else {
        CpuTitle::Times
    };
    super::cpu_report::write_titled(agent, cutoff, title);
}

fn control(agent: &'static Agent, jni: *mut JNIEnv, c: Control) {
    match c {
        Control::AllocTracking(on) => {
            super::heap_commands::allocation_tracking_on_command(agent, on)
        }
        Control::Sampling { on, thread } => sampling(agent, jni, on, thread),
        Control::ClearCpuSamples => agent.tables.traces.reset_costs(),
        Control::ClearAllocSites => super::heap_commands::clear_alloc_sites_on_command(agent),
        Control::SetMaxDepth(d) => agent.depth.store(u32::from(d), Ordering::Relaxed),
        Control::Unknown(sub) => rejected(&format!("ignored unknown CONTROL sub-command {sub}")),
    }
}

/// CONTROL 3/4. ID 0 means every thread, for "off" too (the original made
/// "off 0" a no-op). A non-zero ID is matched against the thread object IDs
/// the agent published, big-endian first, then in the original's native
/// order. Turning sampling on starts the sampler if it is not running.
fn sampling(agent: &'static Agent, jni: *mut JNIEnv, on: bool, thread: ThreadRef) {
    let threads = agent.tables.threads.all();
    if thread.is_all() {
        for t in threads.iter().filter(|t| !t.agent) {
            t.sampled.store(on, Ordering::Relaxed);
        }
        agent.sampler.set_paused(!on);
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
        agent.sampler.set_paused(!any);
    }
    if on && !crate::profile::cpu_samples::is_running(agent) {
        if let Err(e) = crate::profile::cpu_samples::start(agent, jni) {
            rejected(&format!("cannot start the cpu sampling thread: {e}"));
        }
    }
}

/// EXIT THE VM: the original called exit(0) from the listener, skipping
/// the end-of-run dump. We call `System.exit(0)`, so shutdown hooks run and
/// VM death writes the final dump (`doe=y`) to the socket before it closes.
fn exit_vm(agent: &Agent, jni: *mut JNIEnv) -> Flow {
    if agent.gate.is_closed() {
        return Flow::Stop;
    }
    crate::diag::verbose(
        agent.opts.verbose,
        "HPROF: received exit event, exiting ...\n",
    );
    crate::jvmti::jni::system_exit(jni, 0);
    // Only reached if System.exit could not be called.
    std::process::exit(0)
}
