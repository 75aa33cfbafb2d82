//! SITES / ALLOC SITES and HEAP SUMMARY from the site table.

use super::traces;
use crate::format::{
    HeapTotals, SiteRow, SitesReport, SITES_ESTIMATED, SITES_INCREMENTAL, SITES_SINCE_ATTACH,
    SITES_TAKEN,
};
use crate::tables::sites::{report_instances, totals_of, SiteSnapshot};
use crate::tables::ClassEntry;
use crate::vm::Context;
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

/// The totals for a report (HEAP DUMP BEGIN counts, HEAP SUMMARY): exact
/// counts, or estimates converted from sampling units.
pub fn heap_totals(ctx: &Context) -> HeapTotals {
    report_totals(&ctx.tables.sites.snapshot(), ctx.tables.sites.interval())
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

/// Every trace not written yet, then SITES / ALLOC SITES with `request_flags`
/// (0x1 only sites changed since the last report, 0x2 sorted by allocated
/// bytes; 0x4, a GC first, is the caller's). The report is built once here;
/// the writer thread only lays it out.
pub fn write(ctx: &Context, request_flags: u16, cutoff: f64) {
    traces::submit_all_unprinted(ctx);
    let interval = ctx.tables.sites.interval();
    let take = request_flags & SITES_TAKEN != 0;
    let snapshot = if take {
        ctx.tables.sites.snapshot_taking_allocations()
    } else {
        ctx.tables.sites.snapshot()
    };
    ctx.tables.sites.clear_changed();
    let totals = report_totals(&snapshot, interval);
    let rows: Vec<OwnedRow> = snapshot
        .iter()
        // A take reports every count it restarted, changed or not.
        .filter(|s| {
            request_flags & SITES_INCREMENTAL == 0 || s.changed || (take && s.alloc_instances > 0)
        })
        .filter_map(|s| {
            let class = ctx.tables.classes.get(s.class_serial)?;
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
    // 0x8 and 0x10 say how the counts were made: only the agent knows
    // that, so a peer's request bits never reach the output.
    let mut flags = request_flags & !(SITES_ESTIMATED | SITES_SINCE_ATTACH);
    if interval > 0 {
        flags |= SITES_ESTIMATED;
    }
    if ctx.attached {
        flags |= SITES_SINCE_ATTACH;
    }
    let at = ctx.stamp();
    ctx.out.submit(move |f, out| {
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
}

/// Binary HEAP SUMMARY record with the current totals (text: nothing).
pub fn write_heap_summary(ctx: &Context) {
    let totals = heap_totals(ctx);
    let at = ctx.stamp();
    ctx.out
        .submit(move |f, out| f.heap_summary(out, at, &totals));
}
