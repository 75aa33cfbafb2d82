//! The CPU SAMPLES / CPU TIME section, shared by cpu=samples, cpu=times
//! and the socket's CPU SAMPLES command.
//!
//! The report is built once, on the caller's thread, from owned data: its
//! rows are ranked and cut there (`format::select_cpu`), only the rows that
//! will be printed are kept (in their printed order), the traces they name
//! are queued, and the same owned report moves to the writer thread, where
//! the format lays it out.

use super::traces::{self, OwnedTrace};
use crate::format::{select_cpu, CpuReport, CpuRow, CpuTitle, LostSamples, MethodRef};
use crate::vm::Context;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One trace's counters, captured at dump time.
pub struct Captured {
    pub trace: Arc<crate::tables::Trace>,
    pub hits: u32,
    pub cost: u64,
}

/// The section's data, owned, so it can move to the writer thread.
struct OwnedCpuReport {
    title: CpuTitle,
    cutoff: f64,
    total: u64,
    /// (trace with frames, hits, cost), in printed order.
    rows: Vec<(OwnedTrace, u32, u64)>,
}

impl OwnedCpuReport {
    fn view(&self) -> CpuReport<'_> {
        CpuReport {
            title: self.title,
            cutoff: self.cutoff,
            total: self.total,
            rows: self
                .rows
                .iter()
                .map(|(t, hits, cost)| CpuRow {
                    trace_serial: t.serial,
                    hits: *hits,
                    cost: *cost,
                    top_frame: t.frames.first().map(|f| MethodRef {
                        class_sig: &f.method.class_signature,
                        method_name: &f.method.name,
                        method_sig: &f.method.signature,
                    }),
                })
                .collect(),
        }
    }
}

/// CPU section of the trace table's sample counts, followed by the line
/// about the samples it does not count (`lost`: given by the samplers that
/// count them, cpu=samples' `async` and `safepoint`; its `counted` is set
/// here to the section's total).
pub fn write_samples(ctx: &Context, cutoff: f64, title: CpuTitle, lost: Option<LostSamples>) {
    let captured: Vec<Captured> = ctx
        .tables
        .traces
        .all()
        .into_iter()
        .map(|t| {
            let hits = t.hits.load(Ordering::Relaxed);
            let cost = t.self_cost.load(Ordering::Relaxed);
            Captured {
                trace: t,
                hits,
                cost,
            }
        })
        .collect();
    let total: u64 = captured.iter().map(|c| c.cost).sum();
    write(ctx, title, captured, total, cutoff);
    if let Some(mut lost) = lost {
        lost.counted = total;
        let at = ctx.stamp();
        ctx.out.submit(move |f, out| f.cpu_lost(out, at, &lost));
    }
}

/// Write the traces the printed rows need, then the section titled
/// `title`. `total` is the cost of all traces, printed ones or not.
pub fn write(ctx: &Context, title: CpuTitle, mut captured: Vec<Captured>, total: u64, cutoff: f64) {
    captured.retain(|c| c.hits > 0);
    let mut report = OwnedCpuReport {
        title,
        cutoff,
        total,
        rows: captured
            .iter()
            .map(|c| (traces::owned(ctx, &c.trace), c.hits, c.cost))
            .collect(),
    };
    // Rank and cut once; keep the printed rows, in order.
    let order: Vec<usize> = select_cpu(&report.view()).iter().map(|r| r.index).collect();
    let mut rows: Vec<Option<(OwnedTrace, u32, u64)>> = report.rows.into_iter().map(Some).collect();
    report.rows = order.into_iter().filter_map(|i| rows[i].take()).collect();

    let needed = report
        .rows
        .iter()
        .filter_map(|(t, _, _)| ctx.tables.traces.get(t.serial));
    traces::submit_traces(ctx, traces::unprinted(ctx, needed));
    let at = ctx.stamp();
    ctx.out.submit(move |f, out| f.cpu(out, at, &report.view()));
}
