//! The Monitors view (monitor=y): contended monitors with their time,
//! count and trace (MONITOR TIME), the threads and owned monitors of the
//! last MONITOR DUMP, and waits (WAIT / WAITED).
//!
//! The agent writes monitor data in text only: `monitor=y` with `format=b`
//! is an option error, and the binary format has no monitor records. So
//! this view is filled from text streams (`text.rs`); a binary session
//! shows why it is empty.

use super::Session;
pub use crate::text::{DumpThread, MonitorRow};
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

/// Why a binary session has no monitor data.
pub const BINARY_NOTE: &str = "Monitor data exists only in text streams: the agent writes MONITOR TIME, MONITOR DUMP and WAIT records in format=a only (monitor=y with format=b is an option error). Launch with monitor=y, or start the JVM with monitor=y and the net= option without format=b.";

/// Recent waits shown, newest first.
const RECENT_SHOWN: usize = 100;

/// The Monitors view.
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorsView {
    pub text: bool,
    /// Why there is nothing (binary streams).
    pub note: Option<&'static str>,
    pub time_sections: u32,
    pub time: Option<MonitorTimeView>,
    pub dumps: u32,
    pub dump: Option<MonitorDumpView>,
    pub wait_events: u64,
    /// Per class, most time waited first.
    pub waits: Vec<WaitRow>,
    /// The latest waits, newest first.
    pub recent: Vec<RecentWait>,
}

/// The last MONITOR TIME section.
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorTimeView {
    pub total_ms: u64,
    pub rows: Vec<MonitorTimeRow>,
}

/// A contended monitor of MONITOR TIME.
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorTimeRow {
    pub rank: usize,
    pub class: String,
    pub pct: f64,
    /// Its share of the section's total.
    pub time_ms: f64,
    pub count: u64,
    pub trace: u32,
    /// The trace's thread, when traces name threads.
    pub thread: Option<String>,
    pub stack: Vec<String>,
}

/// The last MONITOR DUMP, with thread names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MonitorDumpView {
    pub threads: Vec<DumpThreadRow>,
    pub monitors: Vec<DumpMonitorRow>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpThreadRow {
    pub serial: u32,
    pub name: String,
    pub status: String,
    pub trace: u32,
    pub stack: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpMonitorRow {
    pub class: String,
    pub owner: String,
    pub entry_count: u32,
    pub waiting_to_enter: Vec<String>,
    pub waiting_to_be_notified: Vec<String>,
}

/// Waits on monitors of one class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitRow {
    pub class: String,
    pub stats: WaitStats,
}

/// A WAIT or WAITED event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecentWait {
    /// `WAIT` or `WAITED`.
    pub kind: &'static str,
    pub class: String,
    pub thread: String,
    /// The timeout (WAIT) or the time waited (WAITED).
    pub ms: u64,
}

impl Session {
    pub fn monitors_view(&self) -> MonitorsView {
        let m = &self.monitors;
        let time = m.time.as_ref().map(|t| MonitorTimeView {
            total_ms: t.total_ms,
            rows: t
                .rows
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let thread = self.trace_thread(r.trace);
                    MonitorTimeRow {
                        rank: i + 1,
                        class: r.class.clone(),
                        pct: r.ratio * 100.0,
                        // The section gives each row's share of the total.
                        time_ms: r.ratio * t.total_ms as f64,
                        count: r.count,
                        trace: r.trace,
                        thread: (thread != 0).then(|| self.thread_name(thread)),
                        stack: self.stack_with_lines(r.trace),
                    }
                })
                .collect(),
        });
        let mut waits: Vec<(&String, &WaitStats)> = m.waits.iter().collect();
        waits.sort_by(|a, b| {
            b.1.waited_ms
                .cmp(&a.1.waited_ms)
                .then(b.1.waits.cmp(&a.1.waits))
                .then(a.0.cmp(b.0))
        });
        let names = |ts: &[u32]| ts.iter().map(|&t| self.thread_name(t)).collect();
        let dump = m.dump.as_ref().map(|d| MonitorDumpView {
            threads: d
                .threads
                .iter()
                .map(|t| DumpThreadRow {
                    serial: t.serial,
                    name: self.thread_name(t.serial),
                    status: t.status.clone(),
                    trace: t.trace,
                    stack: self.stack_with_lines(t.trace),
                })
                .collect(),
            monitors: d
                .monitors
                .iter()
                .map(|x| DumpMonitorRow {
                    class: x.class.clone(),
                    owner: self.thread_name(x.owner),
                    entry_count: x.entry_count,
                    waiting_to_enter: names(&x.waiting_to_enter),
                    waiting_to_be_notified: names(&x.waiting_to_be_notified),
                })
                .collect(),
        });
        MonitorsView {
            text: self.text,
            note: (!self.text).then_some(BINARY_NOTE),
            time_sections: m.time_sections,
            time,
            dumps: m.dumps,
            dump,
            wait_events: m.wait_events,
            waits: waits
                .into_iter()
                .map(|(c, w)| WaitRow {
                    class: c.clone(),
                    stats: w.clone(),
                })
                .collect(),
            recent: m
                .recent
                .iter()
                .rev()
                .take(RECENT_SHOWN)
                .map(|(k, c, t, v)| RecentWait {
                    kind: k,
                    class: c.clone(),
                    thread: self.thread_name(*t),
                    ms: *v,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Kind;
    use super::*;

    #[test]
    fn a_binary_session_says_why_it_has_no_monitors() {
        let s = Session::new(1, Kind::File, "x".into());
        let v = s.monitors_view();
        assert!(v.note.unwrap().contains("format=a"));
        assert_eq!(v.time, None);
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
