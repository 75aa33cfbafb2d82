//! Meeting threads: give each a serial, tag its Thread object so we can
//! recognise it later (sampling, thread end), and announce it.

use super::Context;
use crate::format::model::ThreadStart;
use crate::jvmti::{AgentThread, Jni, Obj};
use crate::tables::ids::{make_tag, split_tag, TagKind};
use crate::tables::ThreadRecord;
use std::sync::Arc;

/// Serial of a thread already met, from its tag.
pub fn known_serial(ctx: &Context, thread: Obj<'_>) -> Option<u32> {
    match split_tag(ctx.jvmti.get_tag(thread).ok()?) {
        Some((TagKind::Thread, serial)) => Some(serial as u32),
        _ => None,
    }
}

/// Register a thread (or return its record if already known). `announce`
/// writes THREAD START (not for the VM-init thread nor agent threads) with
/// the thread's current stack: this is its ThreadStart event.
pub fn register(
    ctx: &Context,
    jni: Jni<'_>,
    thread: Obj<'_>,
    agent_thread: bool,
    announce: bool,
) -> Option<Arc<ThreadRecord>> {
    let start = if announce { Start::Here } else { Start::Silent };
    meet(ctx, jni, thread, agent_thread, start)
}

/// Register a thread that was already running when the agent attached:
/// THREAD START with the system trace, since where it started is not known.
pub fn register_existing(
    ctx: &Context,
    jni: Jni<'_>,
    thread: Obj<'_>,
) -> Option<Arc<ThreadRecord>> {
    meet(ctx, jni, thread, false, Start::Unknown)
}

/// What THREAD START a newly met thread gets.
#[derive(Clone, Copy, PartialEq)]
enum Start {
    Silent,
    /// Its trace is its current stack (ThreadStart, on the thread itself).
    Here,
    /// The system trace.
    Unknown,
}

fn meet(
    ctx: &Context,
    jni: Jni<'_>,
    thread: Obj<'_>,
    agent_thread: bool,
    start: Start,
) -> Option<Arc<ThreadRecord>> {
    if thread.is_null() {
        return None;
    }
    if let Some(serial) = known_serial(ctx, thread) {
        return ctx.tables.threads.get(serial);
    }
    ctx.tables
        .threads
        .with_registration(|| record(ctx, jni, thread, agent_thread, start))
}

/// `meet` under the registration lock.
fn record(
    ctx: &Context,
    jni: Jni<'_>,
    thread: Obj<'_>,
    agent_thread: bool,
    start: Start,
) -> Option<Arc<ThreadRecord>> {
    // Another registration may have met it while this one waited.
    if let Some(serial) = known_serial(ctx, thread) {
        return ctx.tables.threads.get(serial);
    }
    let j = ctx.jvmti;
    let info = j.thread_info(jni, thread).ok();
    let name = info.as_ref().and_then(|i| i.name.clone());
    let (group, parent) = match info.as_ref().and_then(|i| i.group.as_ref()) {
        None => (None, None),
        Some(g) => {
            let g = j.thread_group_info(jni, g.obj()).ok();
            let parent_name = g
                .as_ref()
                .and_then(|g| g.parent.as_ref())
                .and_then(|p| j.thread_group_info(jni, p.obj()).ok())
                .and_then(|p| p.name);
            (g.and_then(|g| g.name), parent_name)
        }
    };
    let object_id = ctx.tables.objects.allocate_id();
    let rec = ctx
        .tables
        .threads
        .insert(object_id, name, group, parent, agent_thread);
    let _ = ctx
        .tags
        .set_identity(ctx, thread, make_tag(TagKind::Thread, rec.serial as u64));
    // cpu=old output has no THREAD lines (docs/output-formats.md §1.1).
    if start != Start::Silent && !agent_thread && !ctx.opts.cpu_old {
        let trace = match start {
            // At its ThreadStart a thread has no frame yet: JVMTI sends the
            // event "before its initial method executes" (HotSpot 11 to 25
            // do). Its trace is the empty one, without asking the VM for
            // the stack (a JVMTI call per thread started).
            Start::Here => super::stacks::trace_of(ctx, jni, rec.serial, &[], &mut Vec::new())
                .map(|t| t.serial),
            _ => None,
        }
        .unwrap_or(ctx.system_trace());
        let r = rec.clone();
        let at = ctx.stamp();
        // Nobody waits for it: batched with others (a burst of threads
        // starting does not wake the writer for each).
        ctx.out.submit_batched(move |f, out| {
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
pub fn end(ctx: &Context, thread: Obj<'_>) {
    let Some(serial) = known_serial(ctx, thread) else {
        return;
    };
    let Some(rec) = ctx.tables.threads.get(serial) else {
        return;
    };
    ctx.tables.threads.mark_dead(serial);
    if rec.agent || ctx.opts.cpu_old {
        return;
    }
    let at = ctx.stamp();
    ctx.out
        .submit_batched(move |f, out| f.thread_end(out, at, serial));
}

/// Start one of the agent's own threads: known as an agent thread before
/// it runs (never sampled, no THREAD START), panics caught, `running`
/// cleared when it ends (`jvmti::AgentThread`).
pub fn start_agent_thread(
    ctx: &Context,
    jni: Jni<'_>,
    thread: &'static AgentThread,
    priority: i32,
    body: impl FnOnce(Jni<'_>) + Send + 'static,
) -> Result<(), String> {
    thread.start(
        &ctx.jvmti,
        jni,
        priority,
        |t| {
            register(ctx, jni, t, true, false);
        },
        body,
    )
}
