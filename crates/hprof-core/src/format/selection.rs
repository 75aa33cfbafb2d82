//! Row selection shared by both formats: sorting, cutoff and percentages of
//! the SITES, CPU, MONITOR TIME and old prof reports. Each report has exactly
//! one selection function here; the text and binary writers both call it, so
//! they always agree on which rows appear and in which order.

use std::cmp::Ordering;

use super::model::{
    CpuReport, CpuRow, MonitorTimeReport, MonitorTimeRow, OldProfReport, OldProfRow, SiteRow,
    SitesReport,
};

/// A selected row with its rank and ratios.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ranked<'r, T> {
    /// 1-based rank.
    pub rank: u32,
    pub row: &'r T,
    /// Position of the row in the report's `rows`.
    pub index: usize,
    /// Row's share of the total (0..1; NaN when the total is 0).
    pub ratio: f64,
    /// Running sum of `ratio` over this and all earlier rows.
    pub accum: f64,
}

/// Sort `rows` by `cmp` (stable: equal rows keep their input order), then
/// take rows from the top while `keep(row, ratio)` holds.
fn rank_rows<'r, T>(
    rows: &'r [T],
    cmp: impl Fn(&T, &T) -> Ordering,
    ratio: impl Fn(&T) -> f64,
    keep: impl Fn(&T, f64) -> bool,
) -> Vec<Ranked<'r, T>> {
    let mut order: Vec<(usize, &'r T)> = rows.iter().enumerate().collect();
    order.sort_by(|a, b| cmp(a.1, b.1));
    let mut out = Vec::with_capacity(order.len());
    let mut accum = 0.0f64;
    for (i, (index, row)) in order.into_iter().enumerate() {
        let r = ratio(row);
        if !keep(row, r) {
            break;
        }
        accum += r;
        out.push(Ranked {
            rank: i as u32 + 1,
            row,
            index,
            ratio: r,
            accum,
        });
    }
    out
}

/// `part / total` in double precision (NaN for 0/0, like C).
fn share(part: f64, total: f64) -> f64 {
    part / total
}

/// True when the ratio is below the cutoff. NaN is never below anything, so
/// with a zero total every row passes.
fn below(ratio: f64, cutoff: f64) -> bool {
    ratio < cutoff
}

/// SITES / ALLOC SITES rows: descending live bytes (or allocated bytes with
/// [`crate::format::SITES_SORT_BY_ALLOC`]); the printed ratio is always
/// live bytes / total live bytes.
///
/// Exact counts in live order keep the original's rule: stop at the first
/// row whose live share is below the cutoff. Ordered by allocated bytes,
/// or with counts estimated from samples, a row is kept when its live share
/// *or* its share of the allocated bytes reaches the cutoff, so sites that
/// allocate much and retain little are not hidden behind a live share of 0
/// (docs/alloc_sites.md, "Which rows are shown"). The original sorted by
/// allocation but still stopped at the first small live share.
pub fn select_sites<'r>(report: &'r SitesReport<'_>) -> Vec<Ranked<'r, SiteRow<'r>>> {
    let by_alloc = report.sorted_by_alloc();
    let total = report.totals.live_bytes as f64;
    let total_alloc = report
        .rows
        .iter()
        .map(|r| u64::from(r.alloc_bytes))
        .sum::<u64>() as f64;
    let cutoff = report.cutoff;
    let cmp = |a: &SiteRow<'_>, b: &SiteRow<'_>| {
        if by_alloc {
            b.alloc_bytes.cmp(&a.alloc_bytes)
        } else {
            b.live_bytes.cmp(&a.live_bytes)
        }
    };
    let live_share = |r: &SiteRow<'_>| share(r.live_bytes as f64, total);
    if !(by_alloc || report.estimated()) {
        return rank_rows(&report.rows, cmp, live_share, |_, ratio| {
            !below(ratio, cutoff)
        });
    }
    let kept: Vec<(usize, &SiteRow<'_>)> = report
        .rows
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            !below(live_share(r), cutoff)
                || !below(share(r.alloc_bytes as f64, total_alloc), cutoff)
        })
        .collect();
    let mut ranked = rank_rows(
        &kept,
        |a, b| cmp(a.1, b.1),
        |r| live_share(r.1),
        |_, _| true,
    );
    // Re-point the rows at the report's own rows (rank_rows saw pairs).
    ranked
        .drain(..)
        .map(|r| Ranked {
            rank: r.rank,
            row: r.row.1,
            index: r.row.0,
            ratio: r.ratio,
            accum: r.accum,
        })
        .collect()
}

/// CPU SAMPLES / CPU TIME rows: descending self cost; stop at the first row
/// with zero hits or a cost ratio below the cutoff.
pub fn select_cpu<'r>(report: &'r CpuReport<'_>) -> Vec<Ranked<'r, CpuRow<'r>>> {
    let total = report.total as f64;
    let cutoff = report.cutoff;
    rank_rows(
        &report.rows,
        |a, b| b.cost.cmp(&a.cost),
        |r| share(r.cost as f64, total),
        |r, ratio| r.hits != 0 && !below(ratio, cutoff),
    )
}

/// MONITOR TIME rows: descending time, then descending count; the ratio is
/// time / total; stop like CPU (zero count or ratio below the cutoff).
pub fn select_monitor_time<'r>(
    report: &'r MonitorTimeReport<'_>,
) -> Vec<Ranked<'r, MonitorTimeRow<'r>>> {
    let total = report.total_ns as f64;
    let cutoff = report.cutoff;
    rank_rows(
        &report.rows,
        |a, b| b.time_ns.cmp(&a.time_ns).then(b.count.cmp(&a.count)),
        |r| share(r.time_ns as f64, total),
        |r, ratio| r.count != 0 && !below(ratio, cutoff),
    )
}

/// Old prof rows: descending hits, stop at the first row with zero hits, no
/// cutoff. The ratios are not used by the format (left at 0).
pub fn select_old_prof<'r>(report: &'r OldProfReport<'_>) -> Vec<Ranked<'r, OldProfRow<'r>>> {
    rank_rows(
        &report.rows,
        |a, b| b.hits.cmp(&a.hits),
        |_| 0.0,
        |r, _| r.hits != 0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::model::{HeapTotals, SITES_SORT_BY_ALLOC};

    fn site(serial: u32, live: u32, alloc: u32) -> SiteRow<'static> {
        SiteRow {
            class_sig: "LX;",
            class_serial: 100000,
            trace_serial: serial,
            live_bytes: live,
            live_instances: 1,
            alloc_bytes: alloc,
            alloc_instances: 1,
        }
    }

    fn sites(
        flags: u16,
        cutoff: f64,
        total_live: u32,
        rows: Vec<SiteRow<'static>>,
    ) -> SitesReport<'static> {
        SitesReport {
            flags,
            cutoff,
            totals: HeapTotals {
                live_bytes: total_live,
                ..Default::default()
            },
            rows,
        }
    }

    fn serials<T>(v: &[Ranked<'_, T>], f: impl Fn(&T) -> u32) -> Vec<u32> {
        v.iter().map(|r| f(r.row)).collect()
    }

    #[test]
    fn sites_sorted_by_live_and_stable() {
        let r = sites(
            0,
            0.0,
            100,
            vec![
                site(1, 10, 0),
                site(2, 50, 0),
                site(3, 10, 0),
                site(4, 30, 0),
            ],
        );
        let sel = select_sites(&r);
        assert_eq!(serials(&sel, |s| s.trace_serial), [2, 4, 1, 3]);
        assert_eq!(sel.iter().map(|r| r.rank).collect::<Vec<_>>(), [1, 2, 3, 4]);
        assert_eq!(sel[0].ratio, 0.5);
        assert_eq!(sel[1].accum, 0.5 + 0.3);
    }

    #[test]
    fn sites_cutoff_stops_at_first_row_below() {
        let r = sites(
            0,
            0.1,
            100,
            vec![
                site(1, 50, 0),
                site(2, 10, 0),
                site(3, 9, 0),
                site(4, 31, 0),
            ],
        );
        let sel = select_sites(&r);
        // 50%, 31%, 10% (not below 10%), then 9% stops.
        assert_eq!(serials(&sel, |s| s.trace_serial), [1, 4, 2]);
    }

    #[test]
    fn sites_by_alloc_keep_rows_that_allocate_or_retain_enough() {
        // Sorted by allocated bytes: row 2 retains nothing but allocated
        // 44 % of the bytes, row 3 allocated little but holds 90 % of the
        // live bytes, row 4 is small both ways.
        let r = sites(
            SITES_SORT_BY_ALLOC,
            0.01,
            100,
            vec![
                site(1, 10, 500),
                site(2, 0, 400),
                site(3, 90, 10),
                site(4, 0, 1),
            ],
        );
        let sel = select_sites(&r);
        assert_eq!(serials(&sel, |s| s.trace_serial), [1, 2, 3]);
        assert_eq!(sel[0].ratio, 0.1);
        assert_eq!(sel[1].ratio, 0.0);
        assert_eq!(sel.iter().map(|r| r.rank).collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn estimated_sites_keep_allocation_heavy_rows_in_live_order() {
        let r = sites(
            crate::format::SITES_ESTIMATED,
            0.01,
            100,
            vec![site(1, 100, 10), site(2, 0, 900)],
        );
        assert_eq!(serials(&select_sites(&r), |s| s.trace_serial), [1, 2]);
    }

    #[test]
    fn sites_zero_total_prints_every_row_as_nan() {
        let r = sites(0, 0.5, 0, vec![site(1, 0, 5), site(2, 0, 7)]);
        let sel = select_sites(&r);
        assert_eq!(sel.len(), 2);
        assert!(sel.iter().all(|r| r.ratio.is_nan() && r.accum.is_nan()));
    }

    #[test]
    fn sites_nan_cutoff_keeps_everything() {
        let r = sites(0, f64::NAN, 100, vec![site(1, 0, 0), site(2, 1, 0)]);
        assert_eq!(select_sites(&r).len(), 2);
    }

    fn cpu(serial: u32, hits: u32, cost: u64) -> CpuRow<'static> {
        CpuRow {
            trace_serial: serial,
            hits,
            cost,
            top_frame: None,
        }
    }

    #[test]
    fn cpu_stops_at_zero_hits_or_cutoff() {
        let r = CpuReport {
            cutoff: 0.0,
            total: 10,
            rows: vec![cpu(1, 3, 3), cpu(2, 0, 0), cpu(3, 7, 7)],
            ..Default::default()
        };
        assert_eq!(serials(&select_cpu(&r), |c| c.trace_serial), [3, 1]);

        // cpu=times: hits but zero cost -> ratio 0 < cutoff stops.
        let r = CpuReport {
            cutoff: 0.0001,
            total: 10,
            rows: vec![cpu(1, 5, 0), cpu(3, 2, 10)],
            ..Default::default()
        };
        assert_eq!(serials(&select_cpu(&r), |c| c.trace_serial), [3]);

        // Total counts all traces, not only the rows given.
        let r = CpuReport {
            cutoff: 0.3,
            total: 10,
            rows: vec![cpu(1, 2, 2)],
            ..Default::default()
        };
        assert!(select_cpu(&r).is_empty());
    }

    #[test]
    fn monitor_time_sorts_by_time_then_count() {
        let row = |t, c, ns| MonitorTimeRow {
            trace_serial: t,
            class_sig: "LX;",
            count: c,
            time_ns: ns,
        };
        let r = MonitorTimeReport {
            cutoff: 0.0,
            total_ns: 30,
            rows: vec![
                row(1, 1, 10),
                row(2, 5, 10),
                row(3, 1, 10),
                row(4, 2, 0),
                row(5, 0, 0),
            ],
        };
        assert_eq!(
            serials(&select_monitor_time(&r), |m| m.trace_serial),
            [2, 1, 3, 4]
        );
    }

    #[test]
    fn old_prof_by_hits_until_zero() {
        let row = |h| OldProfRow {
            hits: h,
            total_ms: 0,
            callee: None,
            caller: None,
        };
        let r = OldProfReport {
            rows: vec![row(1), row(0), row(9), row(3)],
        };
        assert_eq!(serials(&select_old_prof(&r), |o| o.hits), [9, 3, 1]);
    }
}
