//! Turning table traces into the format's `TraceInfo`, and choosing which
//! traces a section must print first (each trace prints once per stream).

use crate::format::{FrameInfo, TraceInfo};
use crate::tables::{FrameEntry, Trace};
use crate::vm::Context;
use std::sync::Arc;

/// An owned trace with its frames, movable to the writer thread.
pub struct OwnedTrace {
    pub serial: u32,
    pub thread_serial: u32,
    pub frames: Vec<Arc<FrameEntry>>,
}

impl OwnedTrace {
    pub fn view(&self, thread_keyed: bool) -> TraceInfo<'_> {
        TraceInfo {
            serial: self.serial,
            thread_serial: thread_keyed.then_some(self.thread_serial),
            phase: Default::default(),
            frames: self
                .frames
                .iter()
                .map(|f| FrameInfo {
                    frame_id: f.id as u64,
                    class_sig: &f.method.class_signature,
                    class_serial: f.method.class_serial,
                    method_name: &f.method.name,
                    method_sig: &f.method.signature,
                    source_file: f.method.source_file.as_deref(),
                    line: f.line,
                })
                .collect(),
        }
    }
}

pub fn owned(ctx: &Context, t: &Trace) -> OwnedTrace {
    OwnedTrace {
        serial: t.serial,
        thread_serial: t.thread_serial,
        frames: t
            .frames
            .iter()
            .filter_map(|&id| ctx.tables.frames.get(id))
            .collect(),
    }
}

/// The traces among `candidates` not printed yet, marking them printed.
pub fn unprinted(
    ctx: &Context,
    candidates: impl IntoIterator<Item = Arc<Trace>>,
) -> Vec<OwnedTrace> {
    candidates
        .into_iter()
        .filter(|t| t.claim_print())
        .map(|t| owned(ctx, &t))
        .collect()
}

/// Queue TRACE records for `traces` (the format skips any already written).
pub fn submit_traces(ctx: &Context, traces: Vec<OwnedTrace>) {
    if traces.is_empty() {
        return;
    }
    let thread_keyed = ctx.opts.thread;
    let at = ctx.stamp();
    ctx.out.submit(move |f, out| {
        let views: Vec<TraceInfo<'_>> = traces.iter().map(|t| t.view(thread_keyed)).collect();
        f.traces(out, at, &views);
    });
}

/// Queue every trace not written yet (before a section whose records may
/// name any of them).
pub fn submit_all_unprinted(ctx: &Context) {
    submit_traces(ctx, unprinted(ctx, ctx.tables.traces.all()));
}
