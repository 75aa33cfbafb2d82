//! Meeting threads: give each a serial, tag its Thread object so we can
//! recognise it later (sampling, thread end), and announce it.

use super::Agent;
use crate::format::model::ThreadStart;
use crate::jvmti::sys::{jthread, JNIEnv};
use crate::tables::ids::{make_tag, split_tag, TagKind};
use crate::tables::ThreadRecord;
use std::sync::Arc;

/// Serial of a thread already met, from its tag.
pub fn known_serial(agent: &Agent, thread: jthread) -> Option<u32> {
    match split_tag(agent.jvmti.get_tag(thread).ok()?) {
        Some((TagKind::Thread, serial)) => Some(serial as u32),
        _ => None,
    }
}

/// Register a thread (or return its record if already known). `announce`
/// writes THREAD START (not for the VM-init thread nor agent threads).
pub fn register(
    agent: &Agent,
    jni: *mut JNIEnv,
    thread: jthread,
    agent_thread: bool,
    announce: bool,
) -> Option<Arc<ThreadRecord>> {
    if thread.is_null() {
        return None;
    }
    if let Some(serial) = known_serial(agent, thread) {
        return agent.tables.threads.get(serial);
    }
    let j = agent.jvmti;
    let info = j.thread_info(thread).ok();
    let (name, group_obj) = match &info {
        Some(i) => (i.name.clone(), i.group),
        None => (None, std::ptr::null_mut()),
    };
    let (group, parent) = if group_obj.is_null() {
        (None, None)
    } else {
        let g = j.thread_group_info(group_obj).ok();
        let parent_name = g
            .as_ref()
            .filter(|g| !g.parent.is_null())
            .and_then(|g| j.thread_group_info(g.parent).ok())
            .and_then(|p| p.name);
        crate::jvmti::jni::delete_local_ref(jni, group_obj);
        (g.and_then(|g| g.name), parent_name)
    };
    let object_id = agent.tables.objects.allocate_id();
    let rec = agent
        .tables
        .threads
        .insert(object_id, name, group, parent, agent_thread);
    let _ = crate::profile::alloc_sites::retag(
        agent,
        thread,
        make_tag(TagKind::Thread, rec.serial as u64),
    );
    // cpu=old output has no THREAD lines (docs/output-formats.md §1.1).
    if announce && !agent_thread && !agent.opts.cpu_old {
        let trace =
            super::stacks::thread_trace(agent, thread, rec.serial).unwrap_or(agent.system_trace());
        let r = rec.clone();
        let at = agent.stamp();
        agent.out.submit(move |f, out| {
            let ts = ThreadStart {
                thread_serial: r.serial,
                obj_id: r.object_id as u64,
                trace_serial: trace,
                name: r.name.as_deref(),
                group: r.group.as_deref(),
                parent_group: r.parent_group.as_deref(),
            };
            f.thread_start(out, at, &ts)
        });
    }
    Some(rec)
}

/// THREAD END for a thread we know.
pub fn end(agent: &Agent, thread: jthread) {
    let Some(serial) = known_serial(agent, thread) else {
        return;
    };
    let Some(rec) = agent.tables.threads.get(serial) else {
        return;
    };
    agent.tables.threads.mark_dead(serial);
    if rec.agent || agent.opts.cpu_old {
        return;
    }
    let at = agent.stamp();
    agent
        .out
        .submit(move |f, out| f.thread_end(out, at, serial));
}
