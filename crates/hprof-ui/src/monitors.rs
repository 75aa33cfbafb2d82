//! The Monitors view (monitor=y): contended monitors with their time,
//! count and trace (MONITOR TIME), the threads and owned monitors of the
//! last MONITOR DUMP, and waits (WAIT / WAITED).
//!
//! The agent writes monitor data in text only: `monitor=y` with `format=b`
//! is an option error, and the binary format has no monitor records. So
//! this view is filled from text streams (`text.rs`); a binary session
//! shows why it is empty.

use super::model::Session;
pub use hprof_analysis::text::{DumpThread, MonitorRow};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};

/// Wait events kept for the "recent waits" list.
pub const RECENT_WAITS: usize = 500;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct MonitorTime {
    pub total_ms: u64,
    pub rows: Vec<MonitorRow>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpMonitor {
    pub class: String,
    pub owner: u32,
    pub entry_count: u32,
    pub waiting_to_enter: Vec<u32>,
    pub waiting_to_be_notified: Vec<u32>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MonitorDump {
    pub threads: Vec<DumpThread>,
    pub monitors: Vec<DumpMonitor>,
}

/// Waits on monitors of one class.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitStats {
    pub waits: u64,
    /// Waits with a timeout.
    pub timed: u64,
    pub waited: u64,
    pub waited_ms: u64,
    pub max_ms: u64,
}

#[derive(Default)]
pub struct Monitors {
    pub time: Option<MonitorTime>,
    pub time_sections: u32,
    pub dump: Option<MonitorDump>,
    pub dumps: u32,
    pub waits: HashMap<String, WaitStats>,
    /// (WAIT or WAITED, class, thread, timeout or time waited in ms)
    pub recent: VecDeque<(&'static str, String, u32, u64)>,
    pub wait_events: u64,
}

impl Monitors {
    /// Sections and events seen (0: nothing about monitors yet).
    pub fn sections(&self) -> u64 {
        u64::from(self.time_sections) + u64::from(self.dumps) + self.wait_events
    }

    pub fn wait(&mut self, class: String, thread: u32, timeout_ms: u64) {
        let w = self.waits.entry(class.clone()).or_default();
        w.waits += 1;
        if timeout_ms > 0 {
            w.timed += 1;
        }
        self.event("WAIT", class, thread, timeout_ms);
    }

    pub fn waited(&mut self, class: String, thread: u32, ms: u64) {
        let w = self.waits.entry(class.clone()).or_default();
        w.waited += 1;
        w.waited_ms = w.waited_ms.saturating_add(ms);
        w.max_ms = w.max_ms.max(ms);
        self.event("WAITED", class, thread, ms);
    }

    fn event(&mut self, kind: &'static str, class: String, thread: u32, v: u64) {
        self.wait_events += 1;
        if self.recent.len() == RECENT_WAITS {
            self.recent.pop_front();
        }
        self.recent.push_back((kind, class, thread, v));
    }
}

impl Session {
    pub fn monitors_view(&self) -> Value {
        let m = &self.monitors;
        let note = if self.text {
            None
        } else {
            Some("Monitor data exists only in text streams: the agent writes MONITOR TIME, MONITOR DUMP and WAIT records in format=a only (monitor=y with format=b is an option error). Launch with monitor=y, or start the JVM with monitor=y and the net= option without format=b.")
        };
        let time = m.time.as_ref().map(|t| {
            let rows: Vec<Value> = t
                .rows
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let thread = self.trace_thread(r.trace);
                    json!({
                        "rank": i + 1,
                        "class": r.class,
                        "pct": r.ratio * 100.0,
                        // The section gives each row's share of the total.
                        "timeMs": r.ratio * t.total_ms as f64,
                        "count": r.count,
                        "trace": r.trace,
                        "thread": (thread != 0).then(|| self.thread_name(thread)),
                        "stack": self.stack_with_lines(r.trace),
                    })
                })
                .collect();
            json!({"totalMs": t.total_ms, "rows": rows})
        });
        let mut waits: Vec<(&String, &WaitStats)> = m.waits.iter().collect();
        waits.sort_by(|a, b| {
            b.1.waited_ms
                .cmp(&a.1.waited_ms)
                .then(b.1.waits.cmp(&a.1.waits))
                .then(a.0.cmp(b.0))
        });
        let waits: Vec<Value> = waits
            .into_iter()
            .map(|(c, w)| {
                json!({"class": c, "waits": w.waits, "timed": w.timed, "waited": w.waited,
                                 "waitedMs": w.waited_ms, "maxMs": w.max_ms})
            })
            .collect();
        let recent: Vec<Value> = m
            .recent
            .iter()
            .rev()
            .take(100)
            .map(|(k, c, t, v)| json!({"kind": k, "class": c, "thread": self.thread_name(*t), "ms": v}))
            .collect();
        let dump = m.dump.as_ref().map(|d| {
            json!({
                "threads": d.threads.iter().map(|t| json!({
                    "serial": t.serial, "name": self.thread_name(t.serial), "status": t.status,
                    "trace": t.trace, "stack": self.stack_with_lines(t.trace),
                })).collect::<Vec<_>>(),
                "monitors": d.monitors.iter().map(|x| json!({
                    "class": x.class, "owner": self.thread_name(x.owner), "entryCount": x.entry_count,
                    "waitingToEnter": x.waiting_to_enter.iter().map(|&t| self.thread_name(t)).collect::<Vec<_>>(),
                    "waitingToBeNotified": x.waiting_to_be_notified.iter().map(|&t| self.thread_name(t)).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        });
        json!({
            "text": self.text,
            "note": note,
            "timeSections": m.time_sections,
            "time": time,
            "dumps": m.dumps,
            "dump": dump,
            "waitEvents": m.wait_events,
            "waits": waits,
            "recent": recent,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::{Kind, Session};
    use super::*;

    #[test]
    fn a_binary_session_says_why_it_has_no_monitors() {
        let s = Session::new(1, Kind::File, "x".into());
        let v = s.monitors_view();
        assert!(v["note"].as_str().unwrap().contains("format=a"));
        assert_eq!(v["time"], Value::Null);
    }

    #[test]
    fn waits_add_up_per_class() {
        let mut m = Monitors::default();
        m.wait("A".into(), 1, 300);
        m.waited("A".into(), 1, 301);
        m.wait("A".into(), 1, 0);
        m.waited("A".into(), 1, 20);
        let a = &m.waits["A"];
        assert_eq!(
            (a.waits, a.timed, a.waited, a.waited_ms, a.max_ms),
            (2, 1, 2, 321, 301)
        );
        for i in 0..RECENT_WAITS + 5 {
            m.wait("B".into(), 2, i as u64);
        }
        assert_eq!(m.recent.len(), RECENT_WAITS);
        assert_eq!(m.sections(), 4 + RECENT_WAITS as u64 + 5);
    }
}
