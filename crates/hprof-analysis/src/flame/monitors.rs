//! Monitor contention as a flame graph: the last MONITOR TIME of a text
//! report (`monitor=y` writes text only), each row's stack at the
//! contended entry (root first) topped by a frame naming the monitor's
//! class, weighted by the time blocked, in microseconds (the row's share
//! of the section's total; `hprof-rs profile -e lock`). docs/monitors.md.

use super::{Flame, Measure, StackTree};
use crate::text::{self, Event, TextReader};
use crate::ToolResult;
use rustc_hash::FxHashMap;
use std::io::BufRead;

/// Collapse the last MONITOR TIME section of a text report.
pub fn collapse_monitors_text(r: impl BufRead) -> ToolResult<Flame> {
    let mut tree = StackTree::new();
    let mut traces: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    let mut trace: Option<(u32, Vec<u32>)> = None;
    // The section being read (its total, ms, and rows) and the last one.
    let mut section: Option<(u64, Vec<text::MonitorRow>)> = None;
    let mut last: Option<(u64, Vec<text::MonitorRow>)> = None;
    let mut seen_dump = false;
    let mut lines = TextReader::new(r);
    while let Some(line) = lines.next().map_err(|e| e.to_string())? {
        match line.event {
            Event::TraceBegin { serial, .. } => trace = Some((serial, Vec::new())),
            Event::Frame(f) => {
                if let Some((_, frames)) = trace.as_mut() {
                    frames.push(tree.intern(text::frame_name(f)));
                }
            }
            Event::TraceEnd => {
                if let Some((serial, frames)) = trace.take() {
                    traces.insert(serial, frames);
                }
            }
            Event::MonitorDumpBegin => seen_dump = true,
            Event::MonitorTimeBegin { total_ms } => section = Some((total_ms, Vec::new())),
            Event::MonitorTimeRow(row) => {
                if let Some((_, rows)) = section.as_mut() {
                    rows.push(row);
                }
            }
            Event::MonitorTimeEnd => last = section.take(),
            _ => {}
        }
    }
    let Some((total_ms, rows)) = last else {
        return Err(if seen_dump {
            "no monitor contention was seen: no thread blocked entering a monitor held by another"
                .into()
        } else {
            "no MONITOR TIME or MONITOR DUMP in the stream (the agent writes them with monitor=y at its stop or exit)".into()
        });
    };
    for row in rows {
        let mut path: Vec<u32> = traces
            .get(&row.trace)
            .map(|f| f.iter().rev().copied().collect())
            .unwrap_or_default();
        path.push(tree.intern(&row.class));
        let micros = (row.ratio * total_ms as f64 * 1000.0).round() as u64;
        tree.add(&path, [micros]);
    }
    tree.finish_by_name();
    Ok(Flame {
        tree,
        measure: Measure::BlockedMicros,
        cut_at: None,
        cumulative_sections: 0,
        saturated_sites: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flame::collapsed_text;

    const REPORT: &str = "JAVA PROFILE 1.0.1, created Sun Nov 22 04:00:00 2026\n\n--------\n\n\
TRACE 300001:\n\tA.take(A.java:3)\n\tA.run(A.java:9)\n\
TRACE 300002:\n\tB.put(B.java:5)\n\
MONITOR TIME BEGIN (total = 10 ms) Sun Nov 22 04:00:01 2026\n\
rank   self  accum   count trace monitor\n\
   1 75.00% 75.00%      12 300001 A$Lock (Java)\n\
   2 25.00% 100.00%      3 300002 java.lang.Object (Java)\n\
MONITOR TIME END\n";

    #[test]
    fn monitor_time_rows_become_stacks_topped_by_the_monitor_class() {
        let f = collapse_monitors_text(REPORT.as_bytes()).unwrap();
        assert_eq!(f.measure, Measure::BlockedMicros);
        assert_eq!(
            collapsed_text(&f),
            "A.run;A.take;A$Lock 7500\nB.put;java.lang.Object 2500\n"
        );
    }

    #[test]
    fn no_contention_is_said_as_such() {
        let dump_only = "JAVA PROFILE 1.0.1, created x\n\nMONITOR DUMP BEGIN\nMONITOR DUMP END\n";
        let e = collapse_monitors_text(dump_only.as_bytes()).err().unwrap();
        assert!(e.contains("no monitor contention"), "{e}");
        let e = collapse_monitors_text("JAVA PROFILE 1.0.1, created x\n".as_bytes())
            .err()
            .unwrap();
        assert!(e.contains("monitor=y"), "{e}");
    }
}
