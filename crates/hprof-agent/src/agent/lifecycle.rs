//! The starts and ends of a profiling session: VM init and attach (the vm
//! floor's set-up, then the profiles'), VM death and stop (the profiles'
//! end, the final dump, the floor's tear-down).

use super::Agent;
use crate::diag;
use crate::jvmti::sys::event;
use crate::jvmti::{Jni, Obj};
use crate::vm::{classes, log, output, threads, Context};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Binary header version: 1.0.2 (segmented heap dumps) when the heap may
/// exceed what one 1.0.1 record can describe (max heap >= 2e9 bytes,
/// docs/profiles.md §1.2).
const SEGMENTED_HEAP_LIMIT: i64 = 2_000_000_000;

/// Events of the vm floor itself (threads, classes, dump requests).
const FLOOR_EVENTS: [u32; 4] = [
    event::THREAD_START,
    event::THREAD_END,
    event::CLASS_LOAD,
    event::DATA_DUMP_REQUEST,
];

/// How long a stop waits for event callbacks and commands in progress (a
/// heap dump asked for with SIGQUIT may be running) before it goes on
/// without giving the JVMTI environment back.
const STOP_DRAIN_LIMIT: Duration = Duration::from_secs(60);
/// How long a stop waits for the agent's threads to end before it gives
/// the JVMTI environment back.
const STOP_THREADS_LIMIT: Duration = Duration::from_secs(5);

/// The header (text) or header and CONTROL SETTINGS (binary), in the
/// format chosen now that the VM can say how large its heap may grow; then
/// the system trace (300000: the empty stack, used wherever no real stack
/// is known).
fn write_header(ctx: &Context, jni: Jni<'_>) {
    let max_heap = crate::jvmti::jni::runtime_max_memory(jni).unwrap_or(0);
    let format = output::new_format(&ctx.opts, max_heap >= SEGMENTED_HEAP_LIMIT);
    let settings = crate::format::ControlSettings {
        heap_or_sites: ctx.opts.heap_dump || ctx.opts.heap_sites,
        cpu_sampling: ctx.opts.cpu_samples,
        depth: ctx.opts.depth.min(u16::MAX as u32) as u16,
    };
    let old_format = ctx.opts.cpu_old;
    let at = ctx.stamp();
    ctx.out.submit(move |f, out| {
        *f = format;
        // cpu=old output has no header of any kind.
        if !old_format {
            f.header(out, at);
        }
        f.control_settings(out, at, &settings);
    });
    let system = ctx.tables.traces.intern(&[0]);
    ctx.set_system_trace(system.serial);
}

fn enable_floor_events(ctx: &Context) -> Result<(), String> {
    for ev in FLOOR_EVENTS {
        ctx.jvmti
            .set_event_mode(true, ev)
            .map_err(|e| format!("cannot enable JVMTI event {ev}: {e}"))?;
    }
    Ok(())
}

fn start_listener(agent: &'static Agent, jni: Jni<'_>) -> Result<(), String> {
    let ctx = &agent.ctx;
    if ctx.opts.net.is_some() || ctx.opts.listen.is_some() {
        agent
            .net
            .start(ctx, &agent.profiles, jni)
            .map_err(|e| format!("cannot start the listener thread: {e}"))?;
    }
    Ok(())
}

pub fn vm_init(agent: &'static Agent, jni: Jni<'_>, thread: Obj<'_>) {
    let ctx = &agent.ctx;
    write_header(ctx, jni);
    // The VM-init thread is 200001 and gets no THREAD START.
    threads::register(ctx, jni, thread, false, false);
    classes::refresh(ctx, jni);

    // Reverse dump order (profile::list).
    for p in agent.profiles.iter().rev() {
        p.vm_start(ctx, jni);
    }
    if let Err(e) = start_listener(agent, jni) {
        diag::error(&e);
    }
    if let Err(e) = agent.push.start(ctx, jni) {
        diag::error(&format!("cannot start the push thread: {e}"));
    }
    if let Err(e) = enable_floor_events(ctx) {
        diag::error(&e);
    }
    ctx.vm_initialised.store(true, Ordering::Release);
    log::log(ctx, "VM init done");
    log::dump_tables(ctx, "VM init");
}

/// Agent_OnAttach, on the attach listener thread: what VM init does, for a
/// VM that has been running for a while. `Err` is the one line the caller
/// prints before it ends the session again ([`abandon`]).
pub fn attach(agent: &'static Agent, jni: Jni<'_>) -> Result<(), String> {
    let ctx = &agent.ctx;
    write_header(ctx, jni);
    // Events first, so a thread or class that appears while the existing
    // ones are registered is not missed; meeting one twice is harmless.
    enable_floor_events(ctx)?;
    let all = ctx
        .jvmti
        .all_threads(jni)
        .map_err(|e| format!("cannot list the running threads: {e}"))?;
    for t in all.iter() {
        let Some(rec) = threads::register_existing(ctx, jni, t) else {
            continue;
        };
        // The JVM's own service threads (Reference Handler, Signal
        // Dispatcher, ...) run since before VM init, where a profile
        // started with the VM never meets them: not sampled here either,
        // or the Reference Handler, waiting in a native method and so
        // RUNNABLE, would take a sample in every pass.
        if rec.group.as_deref() == Some("system") {
            rec.sampled.store(false, Ordering::Relaxed);
        }
    }
    drop(all);
    classes::refresh(ctx, jni);
    for p in agent.profiles.iter().rev() {
        p.attach(ctx, jni)?;
    }
    start_listener(agent, jni)?;
    agent
        .push
        .start(ctx, jni)
        .map_err(|e| format!("cannot start the push thread: {e}"))?;
    ctx.vm_initialised.store(true, Ordering::Release);
    log::log(ctx, "attach done");
    log::dump_tables(ctx, "attach");
    Ok(())
}

/// Why a session ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ending {
    VmDeath,
    /// A load with the option string `stop`: the VM runs on.
    Stop,
    /// An attach that failed half-way: no final dump.
    Abandoned,
}

pub fn vm_death(agent: &'static Agent, jni: Jni<'_>) {
    // A stop in progress finishes first (it ends this same session).
    let _t = super::transition_within(Duration::from_secs(120));
    agent.ctx.dying.store(true, Ordering::Release);
    if !agent.mark_stopped() {
        return;
    }
    finish(agent, jni, Ending::VmDeath);
}

/// Stop the session while the VM runs on: the final report (with `doe=y`),
/// output closed, events off, agent threads ended, and the JVMTI
/// environment given back (its tags, events and capabilities go with it).
/// Returns where the output went, for the caller's message.
pub fn stop(agent: &'static Agent, jni: Jni<'_>) -> String {
    agent.mark_stopped();
    let quiet = finish(agent, jni, Ending::Stop);
    release_environment(agent, quiet);
    match (&agent.output_file, &agent.ctx.opts) {
        (Some(p), _) => p.display().to_string(),
        (None, o) if o.net.is_some() => "the front-end".into(),
        _ => "the front-end's recording".into(),
    }
}

/// End a session whose attach failed after it started (the caller says
/// why): nothing is dumped, everything started is ended.
pub fn abandon(agent: &'static Agent, jni: Jni<'_>) {
    agent.mark_stopped();
    let quiet = finish(agent, jni, Ending::Abandoned);
    release_environment(agent, quiet);
}

/// The end of a session; true when no event callback or command was still
/// running (the environment may then be given back).
fn finish(agent: &'static Agent, jni: Jni<'_>, ending: Ending) -> bool {
    let ctx = &agent.ctx;
    let limit = match ending {
        Ending::VmDeath => Duration::from_secs(10),
        _ => STOP_DRAIN_LIMIT,
    };
    let drained = ctx.gate.close_and_drain(0, limit);
    if !drained {
        diag::rejected(&match ending {
            Ending::VmDeath => "event callbacks still running at VM death; continuing".to_string(),
            _ => format!(
                "event callbacks or a dump still running after {} s; stopping anyway",
                limit.as_secs()
            ),
        });
    }
    for p in &agent.profiles {
        p.stop(ctx, jni);
    }
    // The last partial interval, now that the samplers have handed in
    // what they had (bounded: push::FINAL_BOUND).
    agent.push.stop();
    if ctx.opts.doe && ending != Ending::Abandoned {
        // Skipped when a dump or command is still running (the original
        // skipped it too); full_dump checks under the lock.
        crate::control::dump::full_dump(ctx, &agent.profiles, jni);
    }
    for p in &agent.profiles {
        p.shut_down(ctx);
    }
    if ending != Ending::VmDeath {
        for p in &agent.profiles {
            p.detach(ctx, jni);
        }
    }
    agent.net.stop();
    for ev in FLOOR_EVENTS {
        let _ = ctx.jvmti.set_event_mode(false, ev);
    }
    ctx.out.stop();
    agent.net.close();
    if let (true, Some(path), true) = (
        ctx.opts.check_binary_output(),
        &agent.output_file,
        ending != Ending::Abandoned,
    ) {
        if let Err(e) = super::check::check_output(path) {
            diag::error(&format!(
                "cannot write {}: {e}",
                crate::options::CHECK_FILE_NAME
            ));
        }
    }
    let when = if ctx.dying.load(Ordering::Acquire) {
        "VM death"
    } else {
        "stop"
    };
    log::dump_tables(ctx, when);
    drained
}

/// A session that ends while the VM runs on gives its JVMTI environment
/// back: the VM then drops every tag it set (one per tracked object with
/// heap=sites), its events and its capabilities. Only once nothing uses the
/// environment any more; otherwise its events are off and it stays.
fn release_environment(agent: &Agent, quiet: bool) {
    let ctx = &agent.ctx;
    let _ = ctx.jvmti.set_event_mode(false, event::VM_DEATH);
    let start = Instant::now();
    while crate::jvmti::agent_thread::alive() > 0 && start.elapsed() < STOP_THREADS_LIMIT {
        std::thread::sleep(Duration::from_millis(5));
    }
    if !quiet || crate::jvmti::agent_thread::alive() > 0 {
        diag::rejected(
            "the profiler's threads or callbacks did not end in time: its JVMTI environment is \
             kept (its events are off)",
        );
        return;
    }
    if let Err(e) = ctx.jvmti.dispose() {
        diag::rejected(&format!("cannot give the JVMTI environment back: {e}"));
    }
}
