//! CPU TIME (ms) section (`cpu=times`) and the old prof block (`cpu=old`)
//! from the period's timing totals (docs/output-formats.md §1.9-1.10).
//!
//! Times are accumulated in nanoseconds and converted to milliseconds per
//! trace at dump time (rounded to nearest), so a method called a million
//! times for 2 µs each shows about 2000 ms instead of 0.

use super::cpu::{self, Captured};
use super::traces::{self, OwnedTrace};
use crate::format::{CpuTitle, MethodRef, OldProfReport, OldProfRow};
use crate::vm::Context;
use std::collections::BTreeMap;

/// Per trace serial: (completed calls, self ns, total ns) since the last dump.
pub type Totals = BTreeMap<u32, (u64, u64, u64)>;

pub fn ns_to_ms(ns: u64) -> u64 {
    (ns + 500_000) / 1_000_000
}

/// CPU TIME (ms) from the period's totals, or the old prof block with
/// `cpu=old`.
pub fn write(ctx: &Context, totals: &Totals, cutoff: f64) {
    if ctx.opts.cpu_old {
        write_old(ctx, totals);
        return;
    }
    let captured: Vec<Captured> = totals
        .iter()
        .filter_map(|(&serial, &(hits, self_ns, _))| {
            let trace = ctx.tables.traces.get(serial)?;
            Some(Captured {
                trace,
                hits: hits.min(u32::MAX as u64) as u32,
                cost: ns_to_ms(self_ns),
            })
        })
        .collect();
    let total = captured.iter().map(|c| c.cost).sum();
    cpu::write(ctx, CpuTitle::Times, captured, total, cutoff);
}

/// `count callee caller time` rows (no TRACE records), time = total ms.
fn write_old(ctx: &Context, totals: &Totals) {
    let rows: Vec<(u32, u64, OwnedTrace)> = totals
        .iter()
        .filter(|(_, v)| v.0 > 0)
        .filter_map(|(&serial, &(hits, _, total_ns))| {
            let t = ctx.tables.traces.get(serial)?;
            Some((
                hits.min(u32::MAX as u64) as u32,
                ns_to_ms(total_ns),
                traces::owned(ctx, &t),
            ))
        })
        .collect();
    let at = ctx.stamp();
    ctx.out.submit(move |f, out| {
        let report = OldProfReport {
            rows: rows
                .iter()
                .map(|(hits, total_ms, t)| OldProfRow {
                    hits: *hits,
                    total_ms: *total_ms,
                    callee: method(t, 0),
                    caller: method(t, 1),
                })
                .collect(),
        };
        f.cpu_old(out, at, &report);
    });
}

fn method(t: &OwnedTrace, i: usize) -> Option<MethodRef<'_>> {
    t.frames.get(i).map(|fr| MethodRef {
        class_sig: &fr.method.class_signature,
        method_name: &fr.method.name,
        method_sig: &fr.method.signature,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn nanoseconds_round_to_the_nearest_millisecond() {
        assert_eq!(super::ns_to_ms(0), 0);
        assert_eq!(super::ns_to_ms(499_999), 0);
        assert_eq!(super::ns_to_ms(500_000), 1);
        assert_eq!(super::ns_to_ms(2_400_000_000), 2400);
    }
}
