//! CPU SAMPLES report from the trace table (and the shared writer of the
//! CPU SAMPLES / CPU TIME section, also used by cpu=times).

use super::trace_info::{self, OwnedTrace};
use crate::agent::Agent;
use crate::format::{select_cpu, CpuReport, CpuRow, CpuTitle, MethodRef};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One trace's counters, captured at dump time.
pub struct Captured {
    pub trace: Arc<crate::tables::Trace>,
    pub hits: u32,
    pub cost: u64,
}

/// Write the traces the report's rows need, then the CPU section.
pub fn write(agent: &Agent, cutoff: f64) {
    write_titled(agent, cutoff, CpuTitle::Samples)
}

/// `write` with the section title chosen by the caller (socket command).
pub fn write_titled(agent: &Agent, cutoff: f64, title: CpuTitle) {
    let captured: Vec<Captured> = agent
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
    write_report(agent, title, captured, total, cutoff);
}

/// Write the traces the rows need, then the section titled `title`.
/// `total` is the cost of all traces, printed ones or not.
pub fn write_report(
    agent: &Agent,
    title: CpuTitle,
    mut captured: Vec<Captured>,
    total: u64,
    cutoff: f64,
) {
    captured.retain(|c| c.hits > 0);

    // Rows carry the top frame; resolve them to owned traces up front so
    // the report can be rebuilt (borrowing them) on the writer thread.
    let owned: Vec<OwnedTrace> = captured
        .iter()
        .map(|c| trace_info::owned(agent, &c.trace))
        .collect();
    let rows_data: Vec<(u32, u32, u64)> = captured
        .iter()
        .map(|c| (c.trace.serial, c.hits, c.cost))
        .collect();

    // Which rows survive sorting and cutoff decides which traces print.
    let selected_serials: Vec<u32> = {
        let report = build(title, &owned, &rows_data, total, cutoff);
        select_cpu(&report)
            .into_iter()
            .map(|r| r.row.trace_serial)
            .collect()
    };
    let needed = selected_serials
        .iter()
        .filter_map(|s| agent.tables.traces.get(*s));
    trace_info::submit_traces(agent, trace_info::unprinted(agent, needed));

    let at = agent.stamp();
    agent.out.submit(move |f, out| {
        let report = build(title, &owned, &rows_data, total, cutoff);
        f.cpu(out, at, &report);
    });
}

fn build<'a>(
    title: CpuTitle,
    owned: &'a [OwnedTrace],
    rows: &[(u32, u32, u64)],
    total: u64,
    cutoff: f64,
) -> CpuReport<'a> {
    CpuReport {
        title,
        cutoff,
        total,
        rows: owned
            .iter()
            .zip(rows)
            .map(|(o, &(serial, hits, cost))| CpuRow {
                trace_serial: serial,
                hits,
                cost,
                top_frame: o.frames.first().map(|f| MethodRef {
                    class_sig: &f.method.class_signature,
                    method_name: &f.method.name,
                    method_sig: &f.method.signature,
                }),
            })
            .collect(),
    }
}
