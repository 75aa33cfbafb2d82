//! CPU TIME (ms) section (`cpu=times`) and the old prof block (`cpu=old`)
//! from the per-thread timing counters (docs/output-formats.md §1.9-1.10).
//!
//! Times are accumulated in nanoseconds and converted to milliseconds per
//! trace at dump time (rounded to nearest), so a method called a million
//! times for 2 µs each shows about 2000 ms instead of 0.

use super::cpu_report::{write_report, Captured};
use super::trace_info;
use crate::agent::Agent;
use crate::format::{CpuTitle, MethodRef, OldProfReport, OldProfRow};
use crate::profile::cpu_times::{ns_per_tick, thread_cells};
use std::collections::BTreeMap;

/// Per trace serial: (completed calls, self ns, total ns) since the last dump.
pub type Totals = BTreeMap<u32, (u64, u64, u64)>;

/// Sum every thread's counters since the previous dump (clock ticks,
/// converted to nanoseconds), and start the next period (the dump resets
/// CPU costs, docs/profiles.md §4.2).
pub fn take_totals() -> Totals {
    let mut totals = Totals::new();
    let scale = ns_per_tick();
    for list in thread_cells() {
        list.for_each(|c| {
            let (h, s, t) = c.take_delta();
            let e = totals.entry(c.trace_serial).or_default();
            e.0 += h;
            e.1 += s;
            e.2 += t;
        });
    }
    for v in totals.values_mut() {
        v.1 = (v.1 as f64 * scale) as u64;
        v.2 = (v.2 as f64 * scale) as u64;
    }
    totals
}

pub fn ns_to_ms(ns: u64) -> u64 {
    (ns + 500_000) / 1_000_000
}

pub fn write(agent: &Agent, cutoff: f64) {
    let totals = take_totals();
    if agent.opts.cpu_old {
        write_old(agent, &totals);
        return;
    }
    let captured: Vec<Captured> = totals
        .iter()
        .filter_map(|(&serial, &(hits, self_ns, _))| {
            let trace = agent.tables.traces.get(serial)?;
            Some(Captured {
                trace,
                hits: hits.min(u32::MAX as u64) as u32,
                cost: ns_to_ms(self_ns),
            })
        })
        .collect();
    let total = captured.iter().map(|c| c.cost).sum();
    write_report(agent, CpuTitle::Times, captured, total, cutoff);
}

/// `count callee caller time` rows (no TRACE records), time = total ms.
fn write_old(agent: &Agent, totals: &Totals) {
    let rows: Vec<(u32, u64, trace_info::OwnedTrace)> = totals
        .iter()
        .filter(|(_, v)| v.0 > 0)
        .filter_map(|(&serial, &(hits, _, total_ns))| {
            let t = agent.tables.traces.get(serial)?;
            Some((
                hits.min(u32::MAX as u64) as u32,
                ns_to_ms(total_ns),
                trace_info::owned(agent, &t),
            ))
        })
        .collect();
    let at = agent.stamp();
    agent.out.submit(move |f, out| {
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

fn method(t: &trace_info::OwnedTrace, i: usize) -> Option<MethodRef<'_>> {
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
