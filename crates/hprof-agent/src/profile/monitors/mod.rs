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
//! times are reset after every dump (docs/profiles.md §4.2). A dump's
//! MONITOR DUMP (threads and owned monitors) is collected in `dump.rs`.

mod dump;

use super::{Event, Profile};
use crate::diag;
use crate::jvmti::sys::{cap, event, jvmtiCapabilities};
use crate::jvmti::{Frame, Jni, Obj};
use crate::report::monitor::EntrySnapshot;
use crate::tables::{threads::UNKNOWN_THREAD_SERIAL, ClassEntry};
use crate::vm::{classes, stacks, threads, Context};
use dashmap::DashMap;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The four events this profile enables (only with monitor=y).
const JVMTI_EVENTS: [u32; 4] = [
    event::MONITOR_CONTENDED_ENTER,
    event::MONITOR_CONTENDED_ENTERED,
    event::MONITOR_WAIT,
    event::MONITOR_WAITED,
];

/// Capabilities monitor=y needs (refusal is fatal, as for the original).
const CAPABILITIES: [u32; 2] = [cap::CAN_GENERATE_MONITOR_EVENTS, cap::CAN_GET_MONITOR_INFO];

/// Capabilities of the MONITOR DUMP's list of owned monitors. HotSpot
/// grants them only to an agent loaded at start-up: attached to a running
/// VM, the dump lists the threads and no monitors (docs/attach.md).
const OWNED_MONITOR_CAPABILITIES: [u32; 2] = [
    cap::CAN_GET_OWNED_MONITOR_INFO,
    cap::CAN_GET_CURRENT_CONTENDED_MONITOR,
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

/// monitor=y: all contention entries, keyed by (class serial, trace serial).
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

#[derive(Clone, Copy)]
struct Waiting {
    /// The session (`Context::session`) the wait began in: one that began
    /// before a stop is not reported by the session started after it.
    session: u32,
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
    static SCRATCH: RefCell<(Vec<Frame>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Class-table entry of `obj`'s class.
fn object_class(ctx: &Context, jni: Jni<'_>, obj: Obj<'_>) -> Option<Arc<ClassEntry>> {
    let klass = crate::jvmti::jni::object_class(jni, obj)?;
    classes::ensure(ctx, klass.obj(), ctx.system_trace())
}

/// Serial of `thread`, meeting it now if it is new (no THREAD START then,
/// as for any thread first met outside its ThreadStart event).
fn thread_serial(ctx: &Context, jni: Jni<'_>, thread: Obj<'_>) -> u32 {
    threads::known_serial(ctx, thread)
        .or_else(|| threads::register(ctx, jni, thread, false, false).map(|r| r.serial))
        .unwrap_or(UNKNOWN_THREAD_SERIAL)
}

/// Trace of the current thread's stack (system trace if none).
fn current_trace(ctx: &Context, jni: Jni<'_>, thread_serial: u32) -> u32 {
    SCRATCH
        .with(|s| {
            let (frames, key) = &mut *s.try_borrow_mut().ok()?;
            ctx.jvmti
                .stack_trace(
                    Obj::null(),
                    ctx.depth() as usize + ctx.hidden.extra_depth(),
                    frames,
                )
                .ok()?;
            let frames = ctx.hidden.strip(frames);
            stacks::trace_of(ctx, jni, thread_serial, frames, key).map(|t| t.serial)
        })
        .unwrap_or_else(|| ctx.system_trace())
}

impl Monitors {
    fn enable(&self, ctx: &Context) -> Result<(), String> {
        for ev in JVMTI_EVENTS {
            ctx.jvmti
                .set_event_mode(true, ev)
                .map_err(|e| format!("cannot enable JVMTI event {ev}: {e}"))?;
        }
        Ok(())
    }
}

impl Profile for Monitors {
    fn name(&self) -> &'static str {
        "monitor=y"
    }

    fn capabilities(
        &self,
        potential: &jvmtiCapabilities,
        need: &mut jvmtiCapabilities,
    ) -> Result<(), String> {
        for c in CAPABILITIES {
            if !potential.has(c) {
                return Err(
                    "monitor=y needs JVMTI monitor events, which this VM does not offer.".into(),
                );
            }
            need.set(c);
        }
        for c in OWNED_MONITOR_CAPABILITIES
            .into_iter()
            .filter(|&c| potential.has(c))
        {
            need.set(c);
        }
        Ok(())
    }

    fn events(&self) -> &'static [Event] {
        &[
            Event::MonitorContendedEnter,
            Event::MonitorContendedEntered,
            Event::MonitorWait,
            Event::MonitorWaited,
        ]
    }

    fn vm_start(&'static self, ctx: &'static Context, _jni: Jni<'_>) {
        if let Err(e) = self.enable(ctx) {
            diag::error(&e);
        }
    }

    /// Contention and waits from now on (a thread blocked or waiting since
    /// before the attach is not counted when it gets in).
    fn attach(&'static self, ctx: &'static Context, _jni: Jni<'_>) -> Result<(), String> {
        self.enable(ctx)
    }

    /// MONITOR DUMP then MONITOR TIME, the first sections of a full dump.
    fn dump(&'static self, ctx: &'static Context, jni: Jni<'_>) {
        diag::verbose(ctx.opts.verbose, " contended monitor usage ...");
        let (threads, monitors) = dump::collect(ctx, jni);
        crate::report::monitor::write_dump(ctx, threads, monitors);
        crate::report::monitor::write_time(ctx, self.snapshot(), ctx.opts.cutoff);
    }

    fn after_dump(&self, _ctx: &Context) {
        self.reset_times();
    }

    fn shut_down(&self, ctx: &Context) {
        for ev in JVMTI_EVENTS {
            let _ = ctx.jvmti.set_event_mode(false, ev);
        }
    }

    fn monitor_contended_enter(&self, ctx: &Context, jni: Jni<'_>, thread: Obj<'_>, obj: Obj<'_>) {
        let start = Instant::now();
        let Some(class) = object_class(ctx, jni, obj) else {
            return;
        };
        // The thread serial is only part of the trace key with thread=y.
        let serial = if ctx.opts.thread {
            thread_serial(ctx, jni, thread)
        } else {
            0
        };
        let trace = current_trace(ctx, jni, serial);
        let entry = self.entry(&class, trace);
        CONTENDING.with(|c| c.set(Some((entry, start))));
    }

    /// Runs while the thread already owns the monitor: no lookup, only the
    /// thread's own slot and two atomic adds.
    fn monitor_contended_entered(&self, _ctx: &Context) {
        if let Some((entry, start)) = CONTENDING.with(|c| c.take()) {
            entry.add(start.elapsed());
        }
    }

    fn monitor_wait(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        thread: Obj<'_>,
        obj: Obj<'_>,
        timeout_ms: i64,
    ) {
        let start = Instant::now();
        let Some(class) = object_class(ctx, jni, obj) else {
            return;
        };
        let thread_serial = thread_serial(ctx, jni, thread);
        WAITING.with(|w| {
            w.set(Some(Waiting {
                session: ctx.session,
                class_serial: class.serial,
                thread_serial,
                start,
            }))
        });
        let at = ctx.stamp();
        ctx.out.submit(move |f, out| {
            let w = crate::format::MonitorWait {
                class_sig: &class.signature,
                timeout_ms,
                thread_serial,
            };
            f.monitor_wait(out, at, &w)
        });
    }

    fn monitor_waited(&self, ctx: &Context) {
        let Some(w) = WAITING
            .with(|w| w.take())
            .filter(|w| w.session == ctx.session)
        else {
            return;
        };
        let time_waited_ms = w.start.elapsed().as_millis().min(i64::MAX as u128) as i64;
        let Some(class) = ctx.tables.classes.get(w.class_serial) else {
            return;
        };
        let at = ctx.stamp();
        ctx.out.submit(move |f, out| {
            let w = crate::format::MonitorWaited {
                class_sig: &class.signature,
                time_waited_ms,
                thread_serial: w.thread_serial,
            };
            f.monitor_waited(out, at, &w)
        });
    }
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
}
