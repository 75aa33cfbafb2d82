//! From JVMTI stack frames to interned traces.

use super::Agent;
use crate::jvmti::sys::{jmethodID, jthread, jvmtiFrameInfo};
use crate::tables::{MethodEntry, Trace};
use std::sync::Arc;

/// Describe a method for the frame table (called once per jmethodID).
fn resolve_method(agent: &Agent, method: jmethodID) -> Option<MethodEntry> {
    let j = agent.jvmti;
    let names = j.method_name(method).ok()?;
    let klass = j.method_declaring_class(method).ok()?;
    let class = super::classes::ensure(agent, klass, agent.system_trace());
    // The declaring class is a local ref from a JVMTI call on this thread;
    // it is released with the caller's local frame / native return.
    let lines = if agent.opts.lineno {
        j.line_number_table(method).unwrap_or_default()
    } else {
        Vec::new()
    };
    let class = class?;
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
pub fn method_entry(agent: &Agent, method: jmethodID) -> Option<Arc<MethodEntry>> {
    agent
        .tables
        .frames
        .method(method as usize, || resolve_method(agent, method))
}

/// Intern the trace of `frames` (top first), cut to `depth`. `key` is a
/// reusable buffer so the hot path allocates nothing once frames and traces
/// exist.
pub fn trace_of(
    agent: &Agent,
    thread_serial: u32,
    frames: &[jvmtiFrameInfo],
    key: &mut Vec<u32>,
) -> Option<Arc<Trace>> {
    key.clear();
    key.push(if agent.opts.thread { thread_serial } else { 0 });
    for f in frames.iter().take(agent.depth() as usize) {
        let id = agent.tables.frames.frame_id(
            f.method as usize,
            f.location,
            agent.opts.lineno,
            || resolve_method(agent, f.method),
        )?;
        key.push(id);
    }
    Some(agent.tables.traces.intern(key))
}

/// Trace serial of a thread's current stack (null = current thread).
pub fn thread_trace(agent: &Agent, thread: jthread, thread_serial: u32) -> Option<u32> {
    let mut frames = Vec::new();
    agent
        .jvmti
        .stack_trace(thread, agent.depth() as usize, &mut frames)
        .ok()?;
    let mut key = Vec::with_capacity(frames.len() + 1);
    trace_of(agent, thread_serial, &frames, &mut key).map(|t| t.serial)
}

/// Frame id of (method, location), resolving the method on first sight
/// (cpu=times uses location -1: method-level frames, `Unknown line`).
pub fn method_frame(agent: &Agent, method: jmethodID, location: i64) -> Option<u32> {
    agent
        .tables
        .frames
        .frame_id(method as usize, location, agent.opts.lineno, || {
            resolve_method(agent, method)
        })
}
