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

/// The largest count of one row of a take: below `u32::MAX`, which a
/// reader takes for a counter that stopped at its limit.
const PIECE: u64 = u32::MAX as u64 - 1;

/// A site's allocated counts as at most `most` rows of 32 bits each, that
/// add up to them; past that the last row stops at the limit, as a
/// report's one row does (`most` = 1). A take gets up to [`MAX_PIECES`]:
/// the tool sums a take's rows of one site (hprof_analysis::allocated), so
/// a site that allocated 4 GiB or more since the last take (16 GB/s at one
/// site between two takes of `profile -e alloc`, or the rest at the end of
/// a session that had takes, itself a take) is not held at the limit.
fn rows_of(bytes: u64, instances: u64, most: u64) -> Vec<(u32, u32)> {
    let n = bytes
        .div_ceil(PIECE)
        .max(instances.div_ceil(PIECE))
        .clamp(1, most.max(1));
    let (mut bytes, mut instances) = (bytes, instances);
    (0..n)
        .map(|i| {
            if i + 1 == n {
                return (u32_sat(bytes), u32_sat(instances));
            }
            let piece = (bytes.min(PIECE) as u32, instances.min(PIECE) as u32);
            bytes -= u64::from(piece.0);
            instances -= u64::from(piece.1);
            piece
        })
        .collect()
}

/// The most rows one site gets in a take (4 TiB).
const MAX_PIECES: u64 = 1024;

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
    let mut rows: Vec<OwnedRow> = Vec::new();
    // A take reports every count it restarted, changed or not.
    let listed = snapshot.iter().filter(|s| {
        request_flags & SITES_INCREMENTAL == 0 || s.changed || (take && s.alloc_instances > 0)
    });
    for s in listed {
        let Some(class) = ctx.tables.classes.get(s.class_serial) else {
            continue;
        };
        let instances = report_instances(s.alloc_instances, interval);
        let most = if take { MAX_PIECES } else { 1 };
        for (alloc_bytes, alloc_instances) in rows_of(s.alloc_bytes, instances, most) {
            rows.push(OwnedRow {
                class: class.clone(),
                trace_serial: s.trace_serial,
                live_bytes: u32_sat(s.live_bytes),
                live_instances: u32_sat(report_instances(s.live_instances, interval)),
                alloc_bytes,
                alloc_instances,
            });
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_take_past_32_bits_is_split_into_rows_that_add_up_to_it() {
        assert_eq!(rows_of(0, 0, MAX_PIECES), vec![(0, 0)]);
        assert_eq!(rows_of(80, 1, MAX_PIECES), vec![(80, 1)]);
        let m = u32::MAX;
        assert_eq!(rows_of(PIECE, 3, MAX_PIECES), vec![(m - 1, 3)]);
        assert_eq!(rows_of(PIECE + 1, 3, MAX_PIECES), vec![(m - 1, 3), (1, 0)]);
        for (bytes, instances) in [(12_000_000_000u64, 20_000_000u64), (7, 9_000_000_000)] {
            let rows = rows_of(bytes, instances, MAX_PIECES);
            assert_eq!(rows.iter().map(|r| u64::from(r.0)).sum::<u64>(), bytes);
            assert_eq!(rows.iter().map(|r| u64::from(r.1)).sum::<u64>(), instances);
            assert!(rows.iter().all(|r| r.0 < m && r.1 < m), "{rows:?}");
        }
        // Past 1 024 rows the last one stands at the limit, as a report's.
        let rows = rows_of(u64::MAX, 5, MAX_PIECES);
        assert_eq!(rows.len(), 1024);
        assert_eq!(rows[0], (m - 1, 5));
        assert_eq!(rows[1023], (m, 0));
        // A report that is not a take: one row, at the limit.
        assert_eq!(rows_of(PIECE + 1, 3, 1), vec![(m, 3)]);
    }
}
