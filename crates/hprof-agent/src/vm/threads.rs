//! Meeting threads: give each a serial, tag its Thread object so we can
//! recognise it later (sampling, thread end), and announce it.

use super::Context;
use crate::format::model::ThreadStart;
use crate::jvmti::{AgentThread, Jni, Obj};
use crate::tables::ids::{make_tag, split_tag, TagKind};
use crate::tables::ThreadRecord;
use std::cell::Cell;
use std::sync::Arc;

/// Serial of a thread already met, from its tag.
pub fn known_serial(ctx: &Context, thread: Obj<'_>) -> Option<u32> {
    serial_in_tag(ctx.jvmti.get_tag(thread).ok()?)
}

fn serial_in_tag(tag: i64) -> Option<u32> {
    match split_tag(tag) {
        Some((TagKind::Thread, serial)) => Some(serial as u32),
        _ => None,
    }
}

thread_local! {
    /// The calling thread's serial in one session (the session's Context
    /// address, unique: sessions are never freed), once its ThreadStart
    /// met it. Each JVMTI GetTag takes the VM's tag-map lock, and a
    /// thread's own events asked for its tag five times between its start
    /// and its end: a thousand threads ending together queued on that
    /// lock (issue 27 item 13).
    static MINE: Cell<(usize, u32)> = const { Cell::new((0, 0)) };
}

fn session_key(ctx: &Context) -> usize {
    ctx as *const Context as usize
}

/// Serial of `thread`, which must be the calling thread (the thread of
/// its own ThreadStart, ThreadEnd, ClassLoad events): from the thread's
/// own memory when its ThreadStart met it, else from its tag.
pub fn own_serial(ctx: &Context, thread: Obj<'_>) -> Option<u32> {
    match MINE.try_with(Cell::get) {
        Ok((key, serial)) if key == session_key(ctx) && serial != 0 => Some(serial),
        _ => known_serial(ctx, thread),
    }
}

/// ThreadStart: meet the calling thread `thread` (as [`register`] with
/// THREAD START) and remember its serial on the thread ([`own_serial`]).
pub fn start_own(ctx: &Context, jni: Jni<'_>, thread: Obj<'_>) -> Option<Arc<ThreadRecord>> {
    let rec = register(ctx, jni, thread, false, true)?;
    let _ = MINE.try_with(|m| m.set((session_key(ctx), rec.serial)));
    Some(rec)
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
    // Asked of the VM before the registration lock is taken: threads
    // starting together wait on it for the insert only.
    let names = Names::of(ctx, jni, thread);
    ctx.tables
        .threads
        .with_registration(|| record(ctx, jni, thread, names, agent_thread, start))
}

/// A thread's name, its group's and the group's parent's.
struct Names {
    name: Option<String>,
    group: Option<String>,
    parent: Option<String>,
}

impl Names {
    fn of(ctx: &Context, jni: Jni<'_>, thread: Obj<'_>) -> Names {
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
        Names {
            name,
            group,
            parent,
        }
    }
}

/// `meet` under the registration lock.
fn record(
    ctx: &Context,
    jni: Jni<'_>,
    thread: Obj<'_>,
    names: Names,
    agent_thread: bool,
    start: Start,
) -> Option<Arc<ThreadRecord>> {
    // Another registration may have met it while this one waited.
    let old = ctx.jvmti.get_tag(thread).unwrap_or(0);
    if let Some(serial) = serial_in_tag(old) {
        return ctx.tables.threads.get(serial);
    }
    let object_id = ctx.tables.objects.allocate_id();
    let rec = ctx.tables.threads.insert(
        object_id,
        names.name,
        names.group,
        names.parent,
        agent_thread,
    );
    let _ = ctx.tags.set_identity_over(
        ctx,
        thread,
        old,
        make_tag(TagKind::Thread, rec.serial as u64),
    );
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

/// THREAD END for a thread we know: `thread`, the calling thread (its
/// ThreadEnd).
pub fn end(ctx: &Context, thread: Obj<'_>) {
    let Some(serial) = own_serial(ctx, thread) else {
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
