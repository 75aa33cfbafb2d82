//! VM init and VM death: the vm floor's set-up and tear-down around the
//! profiles' own.

use super::Agent;
use crate::diag;
use crate::jvmti::sys::event;
use crate::jvmti::{Jni, Obj};
use crate::vm::{classes, log, output, threads};
use std::sync::atomic::Ordering;
use std::time::Duration;

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

pub fn vm_init(agent: &'static Agent, jni: Jni<'_>, thread: Obj<'_>) {
    let ctx = &agent.ctx;
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

    // The empty stack of the VM-init thread is the first trace (300000),
    // the "system trace" used wherever no real stack is known.
    let system = ctx.tables.traces.intern(&[0]);
    ctx.set_system_trace(system.serial);
    // The VM-init thread is 200001 and gets no THREAD START.
    threads::register(ctx, jni, thread, false, false);
    classes::refresh(ctx, jni);

    // Reverse dump order (profile::list).
    for p in agent.profiles.iter().rev() {
        p.vm_start(ctx, jni);
    }
    if ctx.opts.net.is_some() {
        if let Err(e) = agent.net.start(ctx, &agent.profiles, jni) {
            diag::error(&format!("cannot start the listener thread: {e}"));
        }
    }
    for ev in FLOOR_EVENTS {
        if let Err(e) = ctx.jvmti.set_event_mode(true, ev) {
            diag::error(&format!("cannot enable JVMTI event {ev}: {e}"));
        }
    }
    ctx.vm_initialised.store(true, Ordering::Release);
    log::log(ctx, "VM init done");
    log::dump_tables(ctx, "VM init");
}

pub fn vm_death(agent: &'static Agent, jni: Jni<'_>) {
    let ctx = &agent.ctx;
    if !ctx.gate.close_and_drain(0, Duration::from_secs(10)) {
        diag::error("event callbacks still running at VM death; continuing");
    }
    for p in &agent.profiles {
        p.stop(ctx, jni);
    }
    if ctx.opts.doe {
        // Skipped when a dump or command is still running (the original
        // skipped it too); full_dump checks under the lock.
        crate::control::dump::full_dump(ctx, &agent.profiles, jni);
    }
    for p in &agent.profiles {
        p.shut_down(ctx);
    }
    agent.net.stop();
    for ev in FLOOR_EVENTS {
        let _ = ctx.jvmti.set_event_mode(false, ev);
    }
    ctx.out.stop();
    agent.net.close();
    if let (true, Some(path)) = (ctx.opts.check_binary_output(), &agent.output_file) {
        if let Err(e) = super::check::check_output(path) {
            diag::error(&format!(
                "cannot write {}: {e}",
                crate::options::CHECK_FILE_NAME
            ));
        }
    }
    log::dump_tables(ctx, "VM death");
}
