//! From JVMTI stack frames to interned traces.

use super::Context;
use crate::jvmti::{Frame, Jni, MethodId, Obj};
use crate::tables::{MethodEntry, Trace};
use std::sync::{Arc, OnceLock};

/// Methods that never appear in traces: the cpu=times Tracker's, which sit
/// on top of a timed thread's stack (docs/profiles.md §3). Set once.
#[derive(Default)]
pub struct HiddenMethods {
    sorted: OnceLock<Vec<MethodId>>,
}

impl HiddenMethods {
    /// Declare the hidden methods (once; later calls are ignored).
    pub fn set(&self, mut methods: Vec<MethodId>) {
        methods.sort_unstable();
        let _ = self.sorted.set(methods);
    }

    /// How many frames on top of a stack may be hidden ones: a stack
    /// capture asks for that many more.
    pub fn extra_depth(&self) -> usize {
        if self.sorted.get().is_some_and(|m| !m.is_empty()) {
            2
        } else {
            0
        }
    }

    /// `frames` without the hidden frames on top.
    pub fn strip<'f>(&self, frames: &'f [Frame]) -> &'f [Frame] {
        let Some(hidden) = self.sorted.get() else {
            return frames;
        };
        let n = frames
            .iter()
            .take_while(|f| hidden.binary_search(&f.method).is_ok())
            .count();
        &frames[n..]
    }
}

/// Describe a method for the frame table (called once per method).
fn resolve_method(ctx: &Context, jni: Jni<'_>, method: MethodId) -> Option<MethodEntry> {
    let j = ctx.jvmti;
    let names = j.method_name(method).ok()?;
    let klass = j.method_declaring_class(jni, method).ok()?;
    let class = super::classes::ensure(ctx, klass.obj(), ctx.system_trace())?;
    let lines = if ctx.opts.lineno {
        j.line_number_table(method).unwrap_or_default()
    } else {
        Vec::new()
    };
    Some(MethodEntry {
        class_serial: class.serial,
        class_signature: class.signature.clone(),
        name: names.name,
        signature: names.signature,
        source_file: class.source_file.clone(),
        lines,
    })
}

/// The (cached) description of a method.
pub fn method_entry(ctx: &Context, jni: Jni<'_>, method: MethodId) -> Option<Arc<MethodEntry>> {
    ctx.tables
        .frames
        .method(method.as_usize(), || resolve_method(ctx, jni, method))
}

/// Intern the trace of `frames` (top first), cut to `depth`. `key` is a
/// reusable buffer so the hot path allocates nothing once frames and traces
/// exist.
pub fn trace_of(
    ctx: &Context,
    jni: Jni<'_>,
    thread_serial: u32,
    frames: &[Frame],
    key: &mut Vec<u32>,
) -> Option<Arc<Trace>> {
    intern_trace(ctx, jni, thread_serial, frames, key, |f| Some(f.location))
}

/// Like [`trace_of`] for a stack sampled where the thread ran (anywhere in
/// a method, not at a safepoint poll): each frame's location is moved to
/// the start of its line, so samples on one line share one frame and one
/// trace instead of one per byte-code index.
pub fn trace_of_sampled(
    ctx: &Context,
    jni: Jni<'_>,
    thread_serial: u32,
    frames: &[Frame],
    key: &mut Vec<u32>,
) -> Option<Arc<Trace>> {
    intern_trace(ctx, jni, thread_serial, frames, key, |f| {
        Some(method_entry(ctx, jni, f.method)?.line_start(f.location))
    })
}

/// The trace of `frames` cut to `depth`, each frame at the location
/// `location` gives it.
fn intern_trace(
    ctx: &Context,
    jni: Jni<'_>,
    thread_serial: u32,
    frames: &[Frame],
    key: &mut Vec<u32>,
    mut location: impl FnMut(&Frame) -> Option<i64>,
) -> Option<Arc<Trace>> {
    key.clear();
    key.push(if ctx.opts.thread { thread_serial } else { 0 });
    for f in frames.iter().take(ctx.depth() as usize) {
        let id = method_frame(ctx, jni, f.method, location(f)?)?;
        key.push(id);
    }
    Some(ctx.tables.traces.intern(key))
}

/// Trace serial of a thread's current stack (null = current thread).
pub fn thread_trace(
    ctx: &Context,
    jni: Jni<'_>,
    thread: Obj<'_>,
    thread_serial: u32,
) -> Option<u32> {
    let mut frames = Vec::new();
    ctx.jvmti
        .stack_trace(
            thread,
            ctx.depth() as usize + ctx.hidden.extra_depth(),
            &mut frames,
        )
        .ok()?;
    let frames = ctx.hidden.strip(&frames);
    let mut key = Vec::with_capacity(frames.len() + 1);
    trace_of(ctx, jni, thread_serial, frames, &mut key).map(|t| t.serial)
}

/// Frame id of (method, location), resolving the method on first sight
/// (cpu=times uses location -1: method-level frames, `Unknown line`).
pub fn method_frame(ctx: &Context, jni: Jni<'_>, method: MethodId, location: i64) -> Option<u32> {
    ctx.tables
        .frames
        .frame_id(method.as_usize(), location, ctx.opts.lineno, || {
            resolve_method(ctx, jni, method)
        })
}
