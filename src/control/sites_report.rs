//! SITES / ALLOC SITES (and HEAP SUMMARY) from the site table.

use super::trace_info;
use crate::agent::Agent;
use crate::format::{
    HeapTotals, SiteRow, SitesReport, SITES_ESTIMATED, SITES_FORCE_GC, SITES_INCREMENTAL,
    SITES_SORT_BY_ALLOC,
};
use crate::profile::alloc_sites::{self, report_instances};
use crate::tables::sites::{totals_of, SiteSnapshot};
use crate::tables::ClassEntry;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One report row with its class entry, movable to the writer thread.
struct OwnedRow {
    class: Arc<ClassEntry>,
    trace_serial: u32,
    live_bytes: u32,
    live_instances: u32,
    alloc_bytes: u32,
    alloc_instances: u32,
}

/// Report counters are 32-bit in both formats; larger values saturate.
fn u32_sat(v: u64) -> u32 {
    v.min(u32::MAX as u64) as u32
}

/// Plain report data from site snapshots. `interval` 0 = exact counts;
/// otherwise instance counters are in sampling units and are converted.
fn rows_and_totals(
    agent: &Agent,
    sites: &[SiteSnapshot],
    interval: u64,
) -> (Vec<OwnedRow>, HeapTotals) {
    let totals = report_totals(sites, interval);
    let rows = sites
        .iter()
        .filter_map(|s| {
            let class = agent.tables.classes.get(s.class_serial)?;
            Some(OwnedRow {
                class,
                trace_serial: s.trace_serial,
                live_bytes: u32_sat(s.live_bytes),
                live_instances: u32_sat(report_instances(s.live_instances, interval)),
                alloc_bytes: u32_sat(s.alloc_bytes),
                alloc_instances: u32_sat(report_instances(s.alloc_instances, interval)),
            })
        })
        .collect();
    (rows, totals)
}

/// Current totals (HEAP DUMP BEGIN counts, HEAP SUMMARY).
pub fn heap_totals(agent: &Agent) -> HeapTotals {
    let interval = agent.alloc.interval.load(Ordering::Relaxed);
    report_totals(&agent.tables.sites.snapshot(), interval)
}

fn report_totals(sites: &[SiteSnapshot], interval: u64) -> HeapTotals {
    let t = totals_of(sites);
    HeapTotals {
        live_bytes: u32_sat(t.live_bytes),
        live_instances: u32_sat(report_instances(t.live_instances, interval)),
        alloc_bytes: t.alloc_bytes,
        alloc_instances: report_instances(t.alloc_instances, interval),
    }
}

/// Full-dump section: GC and frees first (`gcbeforedump`), then every
/// trace not yet written, then SITES / ALLOC SITES.
pub fn write(agent: &Agent, cutoff: f64) {
    let order = if agent.opts.sites_by_alloc {
        SITES_SORT_BY_ALLOC
    } else {
        0
    };
    write_with(agent, order, cutoff);
}

/// SITES / ALLOC SITES with a socket request's flags: 0x1 only sites
/// changed since the last report, 0x2 sorted by allocated bytes, 0x4 force
/// a GC first (also done for every report with `gcbeforedump=y`).
pub fn write_with(agent: &Agent, request_flags: u16, cutoff: f64) {
    alloc_sites::prepare_report(agent, request_flags & SITES_FORCE_GC != 0);
    trace_info::submit_traces(
        agent,
        trace_info::unprinted(agent, agent.tables.traces.all()),
    );

    let interval = agent.alloc.interval.load(Ordering::Relaxed);
    let snapshot = agent.tables.sites.snapshot();
    agent.tables.sites.clear_changed();
    let totals = report_totals(&snapshot, interval);
    let listed: Vec<SiteSnapshot> = if request_flags & SITES_INCREMENTAL != 0 {
        snapshot.into_iter().filter(|s| s.changed).collect()
    } else {
        snapshot
    };
    let (rows, _) = rows_and_totals(agent, &listed, interval);
    // 0x8 says how the counts were made: only the agent knows that, so a
    // peer's request bit never reaches the output.
    let flags = (request_flags & !SITES_ESTIMATED) | if interval > 0 { SITES_ESTIMATED } else { 0 };
    let at = agent.stamp();
    agent.out.submit(move |f, out| {
        let report = SitesReport {
            flags,
            cutoff,
            totals,
            rows: rows
                .iter()
                .map(|r| SiteRow {
                    class_sig: &r.class.signature,
                    class_serial: r.class.serial,
                    trace_serial: r.trace_serial,
                    live_bytes: r.live_bytes,
                    live_instances: r.live_instances,
                    alloc_bytes: r.alloc_bytes,
                    alloc_instances: r.alloc_instances,
                })
                .collect(),
        };
        f.sites(out, at, &report);
    });
    crate::diag::verbose(agent.opts.verbose, &alloc_sites::memory_summary(agent));
}

/// Binary HEAP SUMMARY record with the current totals (socket command;
/// text: nothing).
pub fn write_heap_summary(agent: &Agent) {
    let totals = heap_totals(agent);
    let at = agent.stamp();
    agent
        .out
        .submit(move |f, out| f.heap_summary(out, at, &totals));
}
