//! MONITOR DUMP and MONITOR TIME (monitor=y), the first sections of every
//! full dump (docs/output-formats.md §1.11-1.12, docs/profiles.md §4.2).

use super::trace_info;
use crate::agent::{stacks, threads, Agent};
use crate::format::{
    MonitorDump, MonitorInfo, MonitorThread, MonitorTimeReport, MonitorTimeRow, ThreadStatus,
};
use crate::jvmti::sys::{jthread, thread_state, JNIEnv};
use crate::profile::monitors::{self, nanos_to_ms, EntrySnapshot};
use crate::tables::ClassEntry;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// One owned monitor, movable to the writer thread.
struct OwnedMonitor {
    class: Arc<ClassEntry>,
    owner: u32,
    entry_count: i32,
    waiting_to_enter: Vec<u32>,
    waiting_to_be_notified: Vec<u32>,
}

/// Write MONITOR DUMP then MONITOR TIME, each preceded by every trace not
/// printed yet. `jni` may be null (DataDumpRequest gets none): the current
/// thread's is fetched then.
pub fn write(agent: &Agent, jni: *mut JNIEnv) {
    let jni = if jni.is_null() {
        crate::jvmti::jni::current_env()
    } else {
        jni
    };
    let (threads, monitors) = crate::jvmti::jni::with_local_frame(jni, 256, || collect(agent, jni));

    trace_info::submit_traces(
        agent,
        trace_info::unprinted(agent, agent.tables.traces.all()),
    );
    let at = agent.stamp();
    agent.out.submit(move |f, out| {
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

    let entries = monitors::state().snapshot();
    let cutoff = agent.opts.cutoff;
    trace_info::submit_traces(
        agent,
        trace_info::unprinted(agent, agent.tables.traces.all()),
    );
    let at = agent.stamp();
    agent
        .out
        .submit(move |f, out| f.monitor_time(out, at, &time_report(&entries, cutoff)));
}

/// MONITOR TIME data: rows per entry in ms, total = all contention time.
fn time_report(entries: &[EntrySnapshot], cutoff: f64) -> MonitorTimeReport<'_> {
    MonitorTimeReport {
        cutoff,
        total_ms: nanos_to_ms(entries.iter().map(|e| e.nanos).sum()),
        rows: entries
            .iter()
            .map(|e| MonitorTimeRow {
                trace_serial: e.trace_serial,
                class_sig: &e.class.signature,
                count: e.count,
                time_ms: nanos_to_ms(e.nanos),
            })
            .collect(),
    }
}

/// Every known live thread (thread-table order) with its state and a fresh
/// trace, then the monitors each owns.
fn collect(agent: &Agent, jni: *mut JNIEnv) -> (Vec<MonitorThread>, Vec<OwnedMonitor>) {
    let j = agent.jvmti;
    let Ok(all) = j.all_threads() else {
        return Default::default();
    };
    let mut known: Vec<(u32, jthread)> = all
        .iter()
        .filter_map(|&t| threads::known_serial(agent, t).map(|s| (s, t)))
        .collect();
    known.sort_by_key(|&(s, _)| s);
    let handles: Vec<jthread> = known.iter().map(|&(_, t)| t).collect();

    // States and stacks of all of them in one safepoint.
    let mut states: HashMap<u32, i32> = HashMap::new();
    let mut lines = Vec::with_capacity(known.len());
    let stacks = j
        .thread_list_stack_traces(&handles, agent.opts.depth as usize)
        .ok();
    let mut key = Vec::new();
    for (i, &(serial, t)) in known.iter().enumerate() {
        let (state, trace) = match &stacks {
            Some(s) if i < s.len() => {
                let (state, frames) = s.get(i);
                (
                    state,
                    stacks::trace_of(agent, serial, frames, &mut key).map(|t| t.serial),
                )
            }
            _ => (j.thread_state(t).unwrap_or(0), None),
        };
        let trace = trace.unwrap_or_else(|| agent.system_trace());
        if let Some(rec) = agent.tables.threads.get(serial) {
            rec.last_trace.store(trace, Ordering::Relaxed);
        }
        states.insert(serial, state);
        lines.push(MonitorThread {
            thread_serial: serial,
            trace_serial: trace,
            status: ThreadStatus::from_jvmti_state(state as u32),
        });
    }

    let mut owned = Vec::new();
    for &(_, t) in &known {
        let Ok(objs) = j.owned_monitors(t) else {
            continue;
        };
        for &obj in objs.iter() {
            let Ok(usage) = j.monitor_usage(obj) else {
                continue;
            };
            let Some(class) = monitors::object_class(agent, jni, obj) else {
                continue;
            };
            let owner = if usage.owner.is_null() {
                0
            } else {
                monitors::thread_serial(agent, jni, usage.owner)
            };
            let listed = usage
                .waiters
                .iter()
                .chain(usage.notify_waiters.iter())
                .map(|&w| {
                    let s = monitors::thread_serial(agent, jni, w);
                    (
                        s,
                        states
                            .get(&s)
                            .copied()
                            .unwrap_or_else(|| j.thread_state(w).unwrap_or(0)),
                    )
                });
            let (enter, notify) = classify_waiters(listed);
            owned.push(OwnedMonitor {
                class,
                owner,
                entry_count: usage.entry_count,
                waiting_to_enter: enter,
                waiting_to_be_notified: notify,
            });
        }
    }
    (lines, owned)
}

/// Split the threads GetObjectMonitorUsage lists (both lists, as (serial,
/// JVMTI state)) into "waiting to enter" and "waiting to be notified".
/// HotSpot before JDK 23 mixes the lists (its waiters also hold threads in
/// Object.wait()), so each thread is filed by its own state, once, and all
/// JDKs print the same thing.
fn classify_waiters(listed: impl IntoIterator<Item = (u32, i32)>) -> (Vec<u32>, Vec<u32>) {
    let mut enter = Vec::new();
    let mut notify = Vec::new();
    for (s, state) in listed {
        if enter.contains(&s) || notify.contains(&s) {
            continue;
        }
        if state & thread_state::BLOCKED_ON_MONITOR_ENTER != 0 {
            enter.push(s);
        } else {
            notify.push(s);
        }
    }
    (enter, notify)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{AsciiFormat, AsciiOptions, ProfileFormat, Stamp};

    #[test]
    fn waiters_are_filed_by_state_once() {
        const BLOCKED: i32 = 0x0401; // alive + blocked on monitor enter
        const WAITING: i32 = 0x0191; // alive + waiting indefinitely + in Object.wait
                                     // Pre-JDK-23 shape: the waiter in Object.wait() is in both lists.
        let listed = [
            (200_006, BLOCKED),
            (200_004, WAITING),
            (200_004, WAITING),
            (200_007, BLOCKED),
        ];
        assert_eq!(
            classify_waiters(listed),
            (vec![200_006, 200_007], vec![200_004])
        );
        assert_eq!(classify_waiters([]), (vec![], vec![]));
    }

    #[test]
    fn monitor_time_reports_real_milliseconds() {
        let hot = Arc::new(ClassEntry {
            serial: 100_001,
            signature: "LHot;".into(),
            object_id: 1,
            load_trace: 300_000,
            source_file: None,
        });
        let entries = vec![
            EntrySnapshot {
                trace_serial: 300_004,
                class: hot.clone(),
                count: 12,
                nanos: 1_234_400_000,
            },
            EntrySnapshot {
                trace_serial: 300_007,
                class: hot,
                count: 3,
                nanos: 400_600_000,
            },
        ];
        let r = time_report(&entries, 0.0001);
        assert_eq!(r.total_ms, 1635);
        assert_eq!(
            r.rows.iter().map(|r| r.time_ms).collect::<Vec<_>>(),
            [1234, 401]
        );
        let mut f = AsciiFormat::new(AsciiOptions::default());
        let mut out = Vec::new();
        f.monitor_time(&mut out, Stamp::default(), &r);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("MONITOR TIME BEGIN (total = 1635 ms) "),
            "{text}"
        );
        assert_eq!(lines[2], "   1 75.47% 75.47%      12 300004 Hot (Java)");
        assert_eq!(lines[3], "   2 24.53% 100.00%       3 300007 Hot (Java)");
        assert_eq!(lines[4], "MONITOR TIME END");
    }
}
