//! VM init and VM death.

use super::{classes, threads, Agent};
use crate::diag;
use crate::jvmti::sys::{event, jthread, JNIEnv};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Binary header version: 1.0.2 (segmented heap dumps) when the heap may
/// exceed what one 1.0.1 record can describe (max heap >= 2e9 bytes, docs/profiles.md §1.2).
const SEGMENTED_HEAP_LIMIT: i64 = 2_000_000_000;

pub fn vm_init(agent: &'static Agent, jni: *mut JNIEnv, thread: jthread) {
    let max_heap = crate::jvmti::jni::runtime_max_memory(jni).unwrap_or(0);
    let format = super::output::new_format(&agent.opts, max_heap >= SEGMENTED_HEAP_LIMIT);
    let settings = crate::format::ControlSettings {
        heap_or_sites: agent.opts.heap_dump || agent.opts.heap_sites,
        cpu_sampling: agent.opts.cpu_samples,
        depth: agent.opts.depth.min(u16::MAX as u32) as u16,
    };
    let old_format = agent.opts.cpu_old;
    let at = agent.stamp();
    agent.out.submit(move |f, out| {
        *f = format;
        // cpu=old output has no header of any kind.
        if !old_format {
            f.header(out, at);
        }
        f.control_settings(out, at, &settings);
    });

    // The empty stack of the VM-init thread is the first trace (300000),
    // the "system trace" used wherever no real stack is known.
    let system = agent.tables.traces.intern(&[0]);
    agent.system_trace.store(system.serial, Ordering::Relaxed);
    // The VM-init thread is 200001 and gets no THREAD START.
    threads::register(agent, jni, thread, false, false);
    classes::refresh(agent, jni);
    if agent.opts.cpu_timing() {
        crate::profile::cpu_times::vm_init(agent, jni);
    }

    if agent.opts.cpu_samples {
        if let Err(e) = crate::profile::cpu_samples::start(agent, jni) {
            diag::error(&format!("cannot start the cpu sampling thread: {e}"));
        }
    }
    if agent.opts.heap_sites {
        crate::profile::alloc_sites::start(agent);
    }
    if agent.opts.net.is_some() {
        if let Err(e) = crate::net::listener::start(agent, jni) {
            diag::error(&format!("cannot start the listener thread: {e}"));
        }
    }
    let j = agent.jvmti;
    for ev in [
        event::THREAD_START,
        event::THREAD_END,
        event::CLASS_LOAD,
        event::DATA_DUMP_REQUEST,
    ] {
        if let Err(e) = j.set_event_mode(true, ev) {
            diag::error(&format!("cannot enable JVMTI event {ev}: {e}"));
        }
    }
    if agent.opts.monitor {
        crate::profile::monitors::enable(agent);
    }
    agent.vm_initialised.store(true, Ordering::Release);
    super::debug::log(agent, "VM init done");
    super::debug::dump_tables(agent, "VM init");
}

pub fn vm_death(agent: &'static Agent, jni: *mut JNIEnv) {
    if !agent.gate.close_and_drain(0, Duration::from_secs(10)) {
        diag::error("event callbacks still running at VM death; continuing");
    }
    if agent.opts.cpu_timing() {
        crate::profile::cpu_times::vm_death(agent, jni);
    }
    crate::profile::cpu_samples::stop(agent);
    if agent.opts.doe {
        // Skipped when a dump or command is still running (the original
        // skipped it too); full_dump checks under the lock.
        crate::control::dump::full_dump(agent, jni);
    }
    crate::profile::alloc_sites::stop(agent);
    crate::net::listener::stop(agent);
    let j = agent.jvmti;
    for ev in [
        event::THREAD_START,
        event::THREAD_END,
        event::CLASS_LOAD,
        event::DATA_DUMP_REQUEST,
    ] {
        let _ = j.set_event_mode(false, ev);
    }
    if agent.opts.monitor {
        crate::profile::monitors::disable(agent);
    }
    agent.out.stop();
    crate::net::listener::close(agent);
    super::debug::dump_tables(agent, "VM death");
}
