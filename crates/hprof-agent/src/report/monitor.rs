//! MONITOR DUMP and MONITOR TIME (monitor=y), the first sections of every
//! full dump (docs/output-formats.md §1.11-1.12, docs/profiles.md §4.2),
//! from what the monitor profile collected.

use super::traces;
use crate::format::{MonitorDump, MonitorInfo, MonitorThread, MonitorTimeReport, MonitorTimeRow};
use crate::tables::ClassEntry;
use crate::vm::Context;
use std::sync::Arc;

/// One owned monitor, movable to the writer thread.
pub struct OwnedMonitor {
    pub class: Arc<ClassEntry>,
    /// Thread serial of the owner (0: none).
    pub owner: u32,
    pub entry_count: i32,
    pub waiting_to_enter: Vec<u32>,
    pub waiting_to_be_notified: Vec<u32>,
}

/// A copy of one contention entry (monitor class, trace at the contended
/// entry) taken at dump time.
#[derive(Clone, Debug)]
pub struct EntrySnapshot {
    pub trace_serial: u32,
    pub class: Arc<ClassEntry>,
    pub count: u32,
    pub nanos: u64,
}

/// MONITOR DUMP: every thread with its state and trace, then the monitors
/// owned; the traces they name first.
pub fn write_dump(ctx: &Context, threads: Vec<MonitorThread>, monitors: Vec<OwnedMonitor>) {
    traces::submit_all_unprinted(ctx);
    let at = ctx.stamp();
    ctx.out.submit(move |f, out| {
        let dump = MonitorDump {
            threads,
            monitors: monitors
                .iter()
                .map(|m| MonitorInfo {
                    class_sig: &m.class.signature,
                    owner_serial: m.owner,
                    entry_count: m.entry_count,
                    waiting_to_enter: m.waiting_to_enter.clone(),
                    waiting_to_be_notified: m.waiting_to_be_notified.clone(),
                })
                .collect(),
        };
        f.monitor_dump(out, at, &dump)
    });
}

/// MONITOR TIME with `cutoff`, the traces it names first.
pub fn write_time(ctx: &Context, entries: Vec<EntrySnapshot>, cutoff: f64) {
    traces::submit_all_unprinted(ctx);
    let at = ctx.stamp();
    ctx.out
        .submit(move |f, out| f.monitor_time(out, at, &time_report(&entries, cutoff)));
}

/// MONITOR TIME data: rows per entry in ns, total = all contention time.
fn time_report(entries: &[EntrySnapshot], cutoff: f64) -> MonitorTimeReport<'_> {
    MonitorTimeReport {
        cutoff,
        total_ns: entries.iter().map(|e| e.nanos).sum(),
        rows: entries
            .iter()
            .map(|e| MonitorTimeRow {
                trace_serial: e.trace_serial,
                class_sig: &e.class.signature,
                count: e.count,
                time_ns: e.nanos,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{AsciiFormat, AsciiOptions, ProfileFormat, Stamp};

    fn hot() -> Arc<ClassEntry> {
        Arc::new(ClassEntry {
            serial: 100_001,
            signature: "LHot;".into(),
            object_id: 1,
            load_trace: 300_000,
            source_file: None,
        })
    }

    fn entry(class: &Arc<ClassEntry>, trace_serial: u32, count: u32, nanos: u64) -> EntrySnapshot {
        EntrySnapshot {
            trace_serial,
            class: class.clone(),
            count,
            nanos,
        }
    }

    /// The section as printed, a line each.
    fn printed(entries: &[EntrySnapshot]) -> Vec<String> {
        let mut f = AsciiFormat::new(AsciiOptions::default());
        let mut out = Vec::new();
        f.monitor_time(&mut out, Stamp::default(), &time_report(entries, 0.0001));
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }

    #[test]
    fn monitor_time_reports_real_milliseconds() {
        let hot = hot();
        let entries = [
            entry(&hot, 300_004, 12, 1_234_400_000),
            entry(&hot, 300_007, 3, 400_600_000),
        ];
        let r = time_report(&entries, 0.0001);
        assert_eq!(r.total_ns, 1_635_000_000);
        assert_eq!(
            r.rows.iter().map(|r| r.time_ns).collect::<Vec<_>>(),
            [1_234_400_000, 400_600_000]
        );
        let lines = printed(&entries);
        assert!(
            lines[0].starts_with("MONITOR TIME BEGIN (total = 1635 ms) "),
            "{lines:?}"
        );
        assert_eq!(lines[2], "   1 75.50% 75.50%      12 300004 Hot (Java)");
        assert_eq!(lines[3], "   2 24.50% 100.00%       3 300007 Hot (Java)");
        assert_eq!(lines[4], "MONITOR TIME END");
    }

    /// Shares come from nanoseconds: 200 waits of 0.4 ms each beside one
    /// of 120 ms are 40 % of the time, not nothing (rounded to whole ms
    /// first, each was 0 ms and the printed shares summed to 60 %).
    #[test]
    fn short_waits_keep_their_share() {
        let hot = hot();
        let mut entries = vec![entry(&hot, 300_001, 1, 120_000_000)];
        entries.extend((0..200).map(|i| entry(&hot, 300_002 + i, 1, 400_000)));
        let lines = printed(&entries);
        assert!(
            lines[0].starts_with("MONITOR TIME BEGIN (total = 200 ms) "),
            "{lines:?}"
        );
        assert_eq!(lines[2], "   1 60.00% 60.00%       1 300001 Hot (Java)");
        assert_eq!(lines[3], "   2  0.20% 60.20%       1 300002 Hot (Java)");
        assert_eq!(lines.len(), 2 + 201 + 1, "{lines:?}");
        assert!(lines[202].contains(" 0.20% 100.00% "), "{}", lines[202]);
    }
}
