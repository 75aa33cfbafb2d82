//! What the agent does for each socket command (`net=host:port`). The
//! protocol itself is parsed in `protocol`; the profiles answer the
//! commands about their data; what concerns no profile is done here.
//!
//! Each command runs inside the callback gate (so VM death waits for it)
//! and holds the dump lock, so its output never interleaves with a SIGQUIT
//! / data-dump report or another command; the output is flushed to the
//! socket after every command.

use crate::diag::rejected;
use crate::jvmti::Jni;
use crate::profile::{Answer, Profile};
use crate::protocol::{Command, Control};
use crate::report::traces;
use crate::vm::Context;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Read the next command.
    Continue,
    /// Stop reading commands (EOF, EXIT, VM death).
    Stop,
}

/// Execute one command on the listener thread.
pub fn execute(
    ctx: &'static Context,
    profiles: &'static [Box<dyn Profile>],
    jni: Jni<'_>,
    cmd: Command,
) -> Flow {
    let verbose = ctx.opts.verbose;
    match cmd {
        Command::Eof => {
            crate::diag::verbose(
                verbose,
                "HPROF: received EOF command; listener stopped, output continues\n",
            );
            return Flow::Stop;
        }
        Command::Exit => return exit_vm(ctx, jni),
        _ => {}
    }
    let Some(_pass) = ctx.gate.enter() else {
        return Flow::Stop;
    };
    let Some(_excl) = ctx.dumping.lock_unless(|| ctx.gate.is_closed()) else {
        return Flow::Stop;
    };
    let answered = profiles
        .iter()
        .any(|p| p.command(ctx, jni, &cmd) == Answer::Done);
    if !answered {
        general(ctx, &cmd);
    }
    ctx.out.flush();
    Flow::Continue
}

/// The commands no profile answered: those that concern none, and those
/// whose profile is off in this run (said on stderr; nothing is written).
fn general(ctx: &Context, cmd: &Command) {
    match *cmd {
        Command::ForceGc => {
            if let Err(e) = ctx.jvmti.force_garbage_collection() {
                rejected(&format!("FORCE GC failed: {e}"));
            }
        }
        Command::DumpTraces => traces::submit_all_unprinted(ctx),
        Command::Control(Control::SetMaxDepth(d)) => ctx.set_depth(u32::from(d)),
        Command::Control(Control::Unknown(sub)) => {
            rejected(&format!("ignored unknown CONTROL sub-command {sub}"))
        }
        Command::DumpHeap => profile_off("DUMP HEAP", "heap dumping (heap=dump)"),
        Command::AllocSites { .. } => profile_off("ALLOC SITES", "allocation sites (heap=sites)"),
        Command::HeapSummary => profile_off("HEAP SUMMARY", "allocation tracking (heap=sites)"),
        Command::Control(Control::AllocTracking(on)) => profile_off(
            if on {
                "CONTROL allocation tracking on"
            } else {
                "CONTROL allocation tracking off"
            },
            "allocation tracking (heap=sites or heap=dump)",
        ),
        Command::Control(Control::ClearAllocSites) => profile_off(
            "CONTROL clear allocation sites",
            "allocation sites (heap=sites)",
        ),
        // Without `net=` there are no commands; with it the CPU commands
        // always have their profile (profile::list).
        Command::CpuSamples { .. }
        | Command::Control(Control::Sampling { .. } | Control::ClearCpuSamples) => {}
        Command::Eof | Command::Exit => {}
    }
}

fn profile_off(command: &str, profile: &str) {
    rejected(&format!(
        "{command} command ignored: {profile} is off in this run"
    ));
}

/// EXIT THE VM: the original called exit(0) from the listener, skipping
/// the end-of-run dump. We call `System.exit(0)`, so shutdown hooks run and
/// VM death writes the final dump (`doe=y`) to the socket before it closes.
fn exit_vm(ctx: &Context, jni: Jni<'_>) -> Flow {
    if ctx.gate.is_closed() {
        return Flow::Stop;
    }
    crate::diag::verbose(
        ctx.opts.verbose,
        "HPROF: received exit event, exiting ...\n",
    );
    crate::jvmti::jni::system_exit(jni, 0);
    // Only reached if System.exit could not be called.
    std::process::exit(0)
}
