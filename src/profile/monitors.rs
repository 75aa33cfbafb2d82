//! monitor=y: contention and waits on Java object monitors.
//!
//! * MonitorContendedEnter captures the thread's trace and the monitor's
//!   class, finds (or creates) the entry for (class, trace) and notes the
//!   start time in the thread's own slot; MonitorContendedEntered adds the
//!   elapsed time and one entry to that entry.
//! * MonitorWait writes `WAIT:` at once and starts the thread's wait timer;
//!   MonitorWaited writes `WAITED:` with the elapsed ms.
//!
//! The per-thread slots are Rust thread-locals: these four events are
//! delivered on the thread they concern, so start and end meet on the same
//! OS thread without any shared structure. Entries live in a sharded map
//! (`DashMap`) and are never removed, so a slot can hold a plain
//! `&'static` to its entry and the Entered side (which runs while the
//! thread already owns the monitor, i.e. inside the critical section) does
//! no lookup at all: one clock read and two atomic adds.
//!
//! Times are kept in nanoseconds and shown in ms; counts are never reset,
//! times are reset after every dump (docs/profiles.md §4.2).

use crate::agent::{classes, stacks, threads, Agent};
use crate::diag;
use crate::jvmti::sys::{cap, event, jobject, jthread, jvmtiFrameInfo, JNIEnv};
use crate::tables::{threads::UNKNOWN_THREAD_SERIAL, ClassEntry};
use dashmap::DashMap;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The four events this profile enables (only with monitor=y).
pub const EVENTS: [u32; 4] = [
    event::MONITOR_CONTENDED_ENTER,
    event::MONITOR_CONTENDED_ENTERED,
    event::MONITOR_WAIT,
    event::MONITOR_WAITED,
];

/// Capabilities monitor=y needs (refusal is fatal, as for the original).
pub const CAPABILITIES: [u32; 4] = [
    cap::CAN_GENERATE_MONITOR_EVENTS,
    cap::CAN_GET_OWNED_MONITOR_INFO,
    cap::CAN_GET_CURRENT_CONTENDED_MONITOR,
    cap::CAN_GET_MONITOR_INFO,
];

/// Contention of one (monitor class, trace at contended entry) pair.
#[derive(Debug)]
pub struct MonitorEntry {
    pub trace_serial: u32,
    pub class: Arc<ClassEntry>,
    count: AtomicU32,
    nanos: AtomicU64,
}

impl MonitorEntry {
    /// One contended entry that blocked for `blocked`.
    pub fn add(&self, blocked: Duration) {
        self.nanos.fetch_add(
            blocked.as_nanos().min(u64::MAX as u128) as u64,
            Ordering::Relaxed,
        );
        self.count.fetch_add(1, Ordering::Relaxed);
    }
}

/// A consistent-enough copy of one entry taken at dump time.
#[derive(Clone, Debug)]
pub struct EntrySnapshot {
    pub trace_serial: u32,
    pub class: Arc<ClassEntry>,
    pub count: u32,
    pub nanos: u64,
}

/// All contention entries, keyed by (class serial, trace serial).
#[derive(Default)]
pub struct Monitors {
    entries: DashMap<(u32, u32), &'static MonitorEntry>,
}

impl Monitors {
    /// The entry of (class, trace), created on first use. Entries are
    /// leaked on purpose: they live as long as the process, like the map.
    pub fn entry(&self, class: &Arc<ClassEntry>, trace_serial: u32) -> &'static MonitorEntry {
        let key = (class.serial, trace_serial);
        if let Some(e) = self.entries.get(&key) {
            return *e;
        }
        *self.entries.entry(key).or_insert_with(|| {
            Box::leak(Box::new(MonitorEntry {
                trace_serial,
                class: class.clone(),
                count: AtomicU32::new(0),
                nanos: AtomicU64::new(0),
            }))
        })
    }

    /// Every entry with its counters, in (class serial, trace serial) order.
    pub fn snapshot(&self) -> Vec<EntrySnapshot> {
        let mut v: Vec<EntrySnapshot> = self
            .entries
            .iter()
            .map(|e| EntrySnapshot {
                trace_serial: e.trace_serial,
                class: e.class.clone(),
                count: e.count.load(Ordering::Relaxed),
                nanos: e.nanos.load(Ordering::Relaxed),
            })
            .collect();
        v.sort_by_key(|e| (e.class.serial, e.trace_serial));
        v
    }

    /// After a dump: times restart from zero, counts keep accumulating.
    pub fn reset_times(&self) {
        for e in self.entries.iter() {
            e.nanos.store(0, Ordering::Relaxed);
        }
    }
}

/// The profile's state (one agent per process).
pub fn state() -> &'static Monitors {
    static STATE: OnceLock<Monitors> = OnceLock::new();
    STATE.get_or_init(Monitors::default)
}

/// Nanoseconds to whole milliseconds, rounded to nearest.
pub fn nanos_to_ms(n: u64) -> u64 {
    n / 1_000_000 + u64::from(n % 1_000_000 >= 500_000)
}

#[derive(Clone, Copy)]
struct Waiting {
    class_serial: u32,
    thread_serial: u32,
    start: Instant,
}

thread_local! {
    /// The entry this thread is blocked on and since when.
    static CONTENDING: Cell<Option<(&'static MonitorEntry, Instant)>> = const { Cell::new(None) };
    /// The wait this thread is in.
    static WAITING: Cell<Option<Waiting>> = const { Cell::new(None) };
    /// Stack-walk scratch buffers, reused so the event path allocates
    /// nothing once its frames and traces exist.
    static SCRATCH: RefCell<(Vec<jvmtiFrameInfo>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Enable the monitor events (VM init, monitor=y only).
pub fn enable(agent: &Agent) {
    for ev in EVENTS {
        if let Err(e) = agent.jvmti.set_event_mode(true, ev) {
            diag::error(&format!("cannot enable JVMTI event {ev}: {e}"));
        }
    }
}

pub fn disable(agent: &Agent) {
    for ev in EVENTS {
        let _ = agent.jvmti.set_event_mode(false, ev);
    }
}

/// Class-table entry of `obj`'s class.
pub fn object_class(agent: &Agent, jni: *mut JNIEnv, obj: jobject) -> Option<Arc<ClassEntry>> {
    let klass = crate::jvmti::jni::object_class(jni, obj)?;
    let e = classes::ensure(agent, klass, agent.system_trace());
    crate::jvmti::jni::delete_local_ref(jni, klass);
    e
}

/// Serial of `thread`, meeting it now if it is new (no THREAD START then,
/// as for any thread first met outside its ThreadStart event).
pub fn thread_serial(agent: &Agent, jni: *mut JNIEnv, thread: jthread) -> u32 {
    threads::known_serial(agent, thread)
        .or_else(|| threads::register(agent, jni, thread, false, false).map(|r| r.serial))
        .unwrap_or(UNKNOWN_THREAD_SERIAL)
}

/// Trace of the current thread's stack (system trace if none).
fn current_trace(agent: &Agent, thread_serial: u32) -> u32 {
    SCRATCH
        .with(|s| {
            let (frames, key) = &mut *s.try_borrow_mut().ok()?;
            agent
                .jvmti
                .stack_trace(std::ptr::null_mut(), agent.opts.depth as usize, frames)
                .ok()?;
            stacks::trace_of(agent, thread_serial, frames, key).map(|t| t.serial)
        })
        .unwrap_or_else(|| agent.system_trace())
}

pub fn contended_enter(agent: &Agent, jni: *mut JNIEnv, thread: jthread, obj: jobject) {
    let start = Instant::now();
    let Some(class) = object_class(agent, jni, obj) else {
        return;
    };
    // The thread serial is only part of the trace key with thread=y.
    let serial = if agent.opts.thread {
        thread_serial(agent, jni, thread)
    } else {
        0
    };
    let trace = current_trace(agent, serial);
    let entry = state().entry(&class, trace);
    CONTENDING.with(|c| c.set(Some((entry, start))));
}

pub fn contended_entered() {
    if let Some((entry, start)) = CONTENDING.with(|c| c.take()) {
        entry.add(start.elapsed());
    }
}

pub fn wait(agent: &Agent, jni: *mut JNIEnv, thread: jthread, obj: jobject, timeout_ms: i64) {
    let start = Instant::now();
    let Some(class) = object_class(agent, jni, obj) else {
        return;
    };
    let thread_serial = thread_serial(agent, jni, thread);
    WAITING.with(|w| {
        w.set(Some(Waiting {
            class_serial: class.serial,
            thread_serial,
            start,
        }))
    });
    let at = agent.stamp();
    agent.out.submit(move |f, out| {
        let w = crate::format::MonitorWait {
            class_sig: &class.signature,
            timeout_ms,
            thread_serial,
        };
        f.monitor_wait(out, at, &w)
    });
}

pub fn waited(agent: &Agent) {
    let Some(w) = WAITING.with(|w| w.take()) else {
        return;
    };
    let time_waited_ms = w.start.elapsed().as_millis().min(i64::MAX as u128) as i64;
    let Some(class) = agent.tables.classes.get(w.class_serial) else {
        return;
    };
    let at = agent.stamp();
    agent.out.submit(move |f, out| {
        let w = crate::format::MonitorWaited {
            class_sig: &class.signature,
            time_waited_ms,
            thread_serial: w.thread_serial,
        };
        f.monitor_waited(out, at, &w)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(serial: u32, sig: &str) -> Arc<ClassEntry> {
        Arc::new(ClassEntry {
            serial,
            signature: sig.into(),
            object_id: 0x5000_0001,
            load_trace: 300_000,
            source_file: None,
        })
    }

    #[test]
    fn entries_are_keyed_by_class_and_trace_and_times_reset_but_counts_stay() {
        let m = Monitors::default();
        let hot = class(100_010, "LHot;");
        let other = class(100_011, "LOther;");
        let a = m.entry(&hot, 300_005);
        assert!(
            std::ptr::eq(a, m.entry(&hot, 300_005)),
            "same key, same entry"
        );
        let b = m.entry(&hot, 300_006);
        let c = m.entry(&other, 300_005);
        a.add(Duration::from_millis(30));
        a.add(Duration::from_micros(12_500));
        b.add(Duration::from_millis(1));
        let snap = m.snapshot();
        assert_eq!(snap.len(), 3);
        assert_eq!(
            (snap[0].trace_serial, snap[0].count, snap[0].nanos),
            (300_005, 2, 42_500_000)
        );
        assert_eq!((snap[1].trace_serial, snap[1].count), (300_006, 1));
        assert_eq!(
            (
                snap[2].class.signature.as_str(),
                snap[2].count,
                snap[2].nanos
            ),
            ("LOther;", 0, 0)
        );
        let _ = c;
        m.reset_times();
        let snap = m.snapshot();
        assert_eq!(snap.iter().map(|e| e.nanos).sum::<u64>(), 0);
        assert_eq!(snap.iter().map(|e| e.count).collect::<Vec<_>>(), [2, 1, 0]);
    }

    #[test]
    fn concurrent_adds_are_not_lost() {
        let m = Arc::new(Monitors::default());
        let hot = class(100_000, "LHot;");
        let hs: Vec<_> = (0..4)
            .map(|i| {
                let (m, hot) = (m.clone(), hot.clone());
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        m.entry(&hot, 300_000 + i % 2).add(Duration::from_micros(1));
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let snap = m.snapshot();
        assert_eq!(snap.len(), 2);
        assert_eq!(snap.iter().map(|e| e.count).sum::<u32>(), 4000);
        assert_eq!(snap.iter().map(|e| e.nanos).sum::<u64>(), 4_000_000);
    }

    #[test]
    fn ms_rounding() {
        assert_eq!(nanos_to_ms(0), 0);
        assert_eq!(nanos_to_ms(499_999), 0);
        assert_eq!(nanos_to_ms(500_000), 1);
        assert_eq!(nanos_to_ms(2_400_000_000), 2400);
    }
}
