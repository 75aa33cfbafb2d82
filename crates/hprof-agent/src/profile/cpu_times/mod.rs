//! cpu=times and cpu=old: method timing by byte-code injection
//! (docs/cpu-times.md, docs/profiles.md §2).
//!
//! * Agent_OnLoad: capabilities (retransformation, exception events).
//! * VM init: define the Tracker class (`java.lang.HprofTracker`, compiled
//!   from java/java/lang/HprofTracker.java) in the boot loader, link its
//!   natives, start the clocks (the wall-clock thread; with `clock=cpu`
//!   the CPU-time timers, which stamp events with each thread's CPU
//!   time), enable the class-file load hook and ExceptionCatch,
//!   retransform every class loaded so far (so start-up classes,
//!   `java.base` included, are instrumented too), then engage.
//! * Class-file load hook: `bci::inject` with CallSite/ReturnSite.
//! * The Tracker appends (event, time) pairs to a `long[]` buffer of the
//!   calling thread; the agent takes them when the thread next calls a
//!   `sync*` native (full buffer, unresolved method, return with no call
//!   left, first event), on ExceptionCatch, at thread end and at VM death,
//!   and replays them on the thread's [`shadow::ShadowStack`].
//! * Dumps: [`catch_up`] replays every thread's buffer (a thread may be
//!   appending meanwhile: the dump reads only published events and leaves
//!   emptying to the owner), then the per-thread counters are summed
//!   ([`CpuTimes::take_totals`]) and `report::cpu_times` writes them.

pub mod shadow;
mod ticker;

use super::{Event, Profile};
use crate::bci::{self, InjectConfig};
use crate::jvmti::refs::GlobalRef;
use crate::jvmti::sys::{
    cap, event, jvmtiCapabilities, JVMTI_CLASS_STATUS_ARRAY, JVMTI_CLASS_STATUS_PRIMITIVE,
};
use crate::jvmti::tracker_natives::{self, TableEntry, Tracker, TrackerCalls, BUFFER_HEADER};
use crate::jvmti::{Jni, MethodId, Obj};
use crate::report::cpu_times::Totals;
use crate::vm::{log, Context};
use dashmap::DashMap;
use parking_lot::{Mutex, RwLock};
use shadow::{CellList, MethodKey, ShadowStack, SiteKey, TimingEnv};
use std::cell::{Cell as StdCell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Internal name of the Tracker class. It lives in `java.lang` (defined in
/// the boot loader at VM init), so every module reads it (everyone reads
/// `java.base`, and `java.lang` is exported to all) and every class loader
/// finds it (all delegate `java.*` to the boot loader). See
/// docs/cpu-times.md for the alternatives tried.
pub const TRACKER_CLASS: &str = tracker_natives::TRACKER_CLASS;

/// Stack depth of the injected method below the Tracker frames:
/// 0 = `syncCall`/`syncReturn`, 1 = `CallSite`/`ReturnSite`, 2 = the
/// instrumented method.
const CALLER_DEPTH: i32 = 2;

/// Classes retransformed per RetransformClasses call at VM init.
const RETRANSFORM_BATCH: usize = 256;

/// Events a thread's buffer holds before the Tracker hands them over.
pub const BATCH_EVENTS: usize = 512;

/// Smallest thread table (slots; a power of two, kept at most half full).
const TABLE_MIN_SLOTS: usize = 64;

/// Method names and descriptors of one instrumented class (index = method number).
type ClassSites = Arc<[(String, String)]>;

/// One thread's timing: its shadow stack and its Tracker buffer.
struct ThreadTiming {
    inner: Mutex<Replay>,
    /// The thread's `long[]` event buffer.
    buffer: GlobalRef,
    /// The Thread object and its identity hash (thread table key).
    thread: GlobalRef,
    hash: i32,
    /// The clock its events are stamped with (its CPU clock, or the wall
    /// clock).
    clock: &'static AtomicU64,
}

struct Replay {
    stack: ShadowStack,
    /// Scratch copy of the buffer's events.
    events: Vec<i64>,
    /// Buffer index up to which events were replayed by another thread (a
    /// dump): the owner resumes from there and then empties the buffer.
    consumed: usize,
}

/// The threads with a buffer, and the Tracker table's size and fill.
#[derive(Default)]
struct Registry {
    threads: Vec<Arc<ThreadTiming>>,
    slots: usize,
    /// Live entries plus tombstones in the Java table.
    used: usize,
}

/// cpu=times / cpu=old: the profile and its state.
#[derive(Default)]
pub struct CpuTimes {
    ctx: OnceLock<&'static Context>,
    /// Class number → its methods, recorded by the class-file load hook.
    classes: RwLock<Vec<ClassSites>>,
    /// (class, method number) → jmethodID, resolved once per site.
    site_methods: DashMap<SiteKey, usize>,
    /// Every thread's counters, for the dump (kept after the thread ends).
    cells: Mutex<Vec<Arc<CellList>>>,
    registry: Mutex<Registry>,
    /// Serialises updates of the Tracker's `known` bit sets.
    known_lock: Mutex<()>,
    tracker: OnceLock<Tracker>,
    engaged: AtomicBool,
    /// Threads are charged CPU time (their CPU-time timers run), not wall
    /// time.
    cpu_clock: AtomicBool,
    /// A thread fell back to the wall clock (said once).
    timerless_noted: AtomicBool,
    clock: ticker::Clock,
    /// Statistics for `logflags=1` and docs.
    pub classes_rewritten: AtomicU64,
    pub methods_instrumented: AtomicU64,
    pub hook_nanos: AtomicU64,
}

/// Threads cpu=times does not time (docs/cpu-times.md, "Virtual threads"):
/// virtual threads and the carrier threads that mount them. A carrier runs
/// instrumented JDK code inside its mount/unmount transitions, where a
/// JVMTI stack query (which the agent needs to resolve a method or rebuild
/// a stack) waits for the transition to end: a self-deadlock on JDK 21.
/// Classes absent from the running JDK are skipped.
const UNTIMED_THREAD_CLASSES: &[&str] = &[
    "java/lang/BaseVirtualThread",
    "jdk/internal/misc/CarrierThread",
];

impl CpuTimes {
    fn start(&'static self, ctx: &'static Context, jni: Jni<'_>) -> Result<(), String> {
        let st = self;
        let _ = self.ctx.set(ctx);
        let j = ctx.jvmti;
        let tracker = Tracker::define(jni)
            .map_err(|e| format!("cannot define the Tracker class {TRACKER_CLASS}: {e}"))?;
        tracker_natives::install(self);
        tracker
            .link_natives(jni)
            .map_err(|e| format!("cannot link the Tracker's natives: {e}"))?;
        // The Tracker's frames sit on top of timed threads' stacks: no trace
        // shows them.
        ctx.hidden
            .set(j.class_methods(tracker.class()).unwrap_or_default());
        let tracker = st.tracker.get_or_init(|| tracker);
        let untimed = tracker
            .set_untimed(jni, UNTIMED_THREAD_CLASSES)
            .map_err(|e| format!("cannot tell the Tracker which threads to skip: {e}"))?;
        if !untimed.is_empty() {
            log::log(
                ctx,
                &format!(
                    "cpu=times: threads not timed: instances of {}",
                    untimed.join(", ")
                ),
            );
        }
        // The wall clock runs in both modes: with clock=cpu it stamps the
        // events of a thread that could not get a CPU-time timer.
        st.clock
            .start(ctx, jni)
            .map_err(|e| format!("cannot start the clock thread: {e}"))?;
        if crate::vm::cpu_timers::times_by_cpu(&ctx.opts) {
            match ctx
            .cpu_timers
            .ensure(ctx, jni)
            .and_then(|_| crate::jvmti::async_sampler::start())
        {
            Ok(()) => st.cpu_clock.store(true, Ordering::Release),
            Err(e) => crate::diag::notice(&format!(
                "cpu=times: no CPU-time timers ({e}); methods are charged wall-clock time (clock=wall)"
            )),
        }
        }

        for ev in [event::CLASS_FILE_LOAD_HOOK, event::EXCEPTION_CATCH] {
            j.set_event_mode(true, ev)
                .map_err(|e| format!("cannot enable JVMTI event {ev}: {e}"))?;
        }
        let t0 = Instant::now();
        let (done, failed) = retransform_loaded(ctx, jni, tracker.class());
        log::log(
        ctx,
        &format!(
            "cpu=times: retransformed {done} loaded classes in {} ms ({failed} failed, {} ms in the rewriter); {} classes rewritten, {} methods instrumented",
            t0.elapsed().as_millis(),
            st.hook_nanos.load(Ordering::Relaxed) / 1_000_000,
            st.classes_rewritten.load(Ordering::Relaxed),
            st.methods_instrumented.load(Ordering::Relaxed)
        ),
    );
        self.set_engaged(jni, true);
        Ok(())
    }

    /// Engage (VM init) or disengage (VM death) the Tracker: its `engaged`
    /// field gates the events on the Java side, our flag on ours.
    fn set_engaged(&self, jni: Jni<'_>, on: bool) {
        let st = self;
        st.engaged.store(on, Ordering::Release);
        if let Some(t) = st.tracker.get() {
            if let Err(e) = t.set_engaged(jni, on) {
                crate::diag::error(&format!("cpu=times: cannot switch the Tracker: {e}"));
            }
        }
    }
}

/// Run the hook again on every modifiable class loaded before it was
/// enabled. A batch that fails is retried class by class so one
/// unmodifiable class does not leave the others uninstrumented.
fn retransform_loaded(ctx: &Context, jni: Jni<'_>, tracker: Obj<'_>) -> (usize, usize) {
    let j = ctx.jvmti;
    let Ok(classes) = j.loaded_classes(jni) else {
        return (0, 0);
    };
    let mut todo: Vec<Obj<'_>> = Vec::with_capacity(classes.len());
    for k in classes.iter() {
        let status = j.class_status(k).unwrap_or(JVMTI_CLASS_STATUS_ARRAY);
        let skip = status & (JVMTI_CLASS_STATUS_ARRAY | JVMTI_CLASS_STATUS_PRIMITIVE) != 0
            || crate::jvmti::jni::is_same_object(jni, k, tracker)
            || !j.is_modifiable_class(k).unwrap_or(false);
        if !skip {
            todo.push(k);
        }
    }
    let (mut done, mut failed) = (0, 0);
    for batch in todo.chunks(RETRANSFORM_BATCH) {
        if j.retransform_classes(batch).is_ok() {
            done += batch.len();
            continue;
        }
        for &k in batch {
            match j.retransform_classes(&[k]) {
                Ok(()) => done += 1,
                Err(e) => {
                    failed += 1;
                    let name = j.class_signature(k).unwrap_or_default();
                    log::log(ctx, &format!("cpu=times: cannot retransform {name}: {e}"));
                }
            }
        }
    }
    (done, failed)
}

impl CpuTimes {
    /// The class-file load hook: CallSite at entry, ReturnSite before returns.
    fn rewrite_class(&self, name: Option<&str>, bytes: &[u8]) -> Option<Vec<u8>> {
        let st = self;
        if name == Some(TRACKER_CLASS) {
            return None;
        }
        // Reserve the class number (its index) before the slow part.
        let cnum = {
            let mut v = st.classes.write();
            v.push(Arc::from(Vec::new()));
            v.len() as u32 - 1
        };
        let mut cfg = InjectConfig::new(TRACKER_CLASS, cnum);
        cfg.call_sites = true;
        let t0 = Instant::now();
        let result = bci::inject(bytes, &cfg);
        st.hook_nanos
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let out = match result {
            Ok(o) => o,
            Err(e) => {
                crate::diag::error(&format!(
                    "cpu=times: class {} not instrumented: {e}",
                    name.unwrap_or("?")
                ));
                return None;
            }
        };
        let new_bytes = out.new_bytes?;
        let sites: ClassSites = out
            .methods
            .iter()
            .map(|m| (m.name.clone(), m.descriptor.clone()))
            .collect();
        st.classes.write()[cnum as usize] = sites;
        st.classes_rewritten.fetch_add(1, Ordering::Relaxed);
        st.methods_instrumented.fetch_add(
            out.methods.iter().filter(|m| m.skipped.is_none()).count() as u64,
            Ordering::Relaxed,
        );
        Some(new_bytes)
    }

    /// ExceptionCatch: replay the thread's buffer, then prune the shadow stack
    /// of the frames the exception left.
    fn caught(&self, ctx: &Context, jni: Jni<'_>, method: MethodId) {
        let st = self;
        if !st.engaged.load(Ordering::Acquire) || ctx.gate.is_closed() {
            return;
        }
        let Some(t) = current() else { return };
        in_agent(|| {
            let mut r = t.inner.lock();
            st.replay_buffer(ctx, jni, &t, &mut r, Mode::Batch);
            let mut env = JvmEnv::new(ctx, st, jni, t.clock.load(Ordering::Acquire), Mode::Sync);
            r.stack.exception_caught(&mut env, method.as_usize());
            let _ = Tracker::reset(jni, Obj::of_global(&t.buffer), r.stack.depth_now());
        });
    }

    /// ThreadEnd (on the ending thread): replay its buffer and drop it from
    /// the Tracker's table. Its counters stay for the dumps.
    fn ended(&self, ctx: &Context, jni: Jni<'_>) {
        let st = self;
        let Some(t) = TIMING.try_with(|c| c.borrow_mut().take()).ok().flatten() else {
            return;
        };
        in_agent(|| {
            {
                let mut r = t.inner.lock();
                st.replay_buffer(ctx, jni, &t, &mut r, Mode::Batch);
            }
            st.registry.lock().threads.retain(|x| !Arc::ptr_eq(x, &t));
            if let Some(tracker) = st.tracker.get() {
                let _ = tracker.table_update(jni, Obj::of_global(&t.thread), t.hash, None);
            }
        });
    }

    /// Sum every thread's counters since the previous dump (in nanoseconds),
    /// and start the next period (the dump resets CPU costs, docs/profiles.md
    /// §4.2).
    fn take_totals(&self) -> Totals {
        let mut totals = Totals::new();
        for list in self.cells.lock().clone() {
            list.for_each(|c| {
                let (h, s, t) = c.take_delta();
                let e = totals.entry(c.trace_serial).or_default();
                e.0 += h;
                e.1 += s;
                e.2 += t;
            });
        }
        totals
    }
}

thread_local! {
    static TIMING: RefCell<Option<Arc<ThreadTiming>>> = const { RefCell::new(None) };
    /// Set while this thread runs agent code for cpu=times: Java code that
    /// code triggers (class loading through JNI) must not re-enter it.
    static IN_AGENT: StdCell<bool> = const { StdCell::new(false) };
}

fn current() -> Option<Arc<ThreadTiming>> {
    TIMING.try_with(|c| c.borrow().clone()).ok().flatten()
}

/// Run `f` unless this thread is already in agent code (then skip it).
fn in_agent(f: impl FnOnce()) {
    let entered = IN_AGENT.try_with(|b| !b.replace(true)).unwrap_or(false);
    if !entered {
        return;
    }
    f();
    let _ = IN_AGENT.try_with(|b| b.set(false));
}

/// The current thread's timing, registering it (shadow stack, buffer,
/// Tracker table entry) on its first event.
impl CpuTimes {
    fn current_or_register(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        thread: Obj<'_>,
    ) -> Option<Arc<ThreadTiming>> {
        let st = self;
        if let Some(t) = current() {
            return Some(t);
        }
        let tracker = st.tracker.get()?;
        let hash = tracker.identity_hash(jni, thread).ok()?;
        let clock = st.clock_of_current_thread(ctx, jni, thread);
        let buffer = tracker
            .new_buffer(jni, BUFFER_HEADER + 2 * BATCH_EVENTS, clock)
            .ok()?;
        let thread_ref = crate::jvmti::jni::new_global_ref(jni, thread)?;
        let thread_key = if ctx.opts.thread {
            thread_serial(ctx, jni, thread)
        } else {
            0
        };
        let list = Arc::new(CellList::default());
        st.cells.lock().push(list.clone());
        let t = Arc::new(ThreadTiming {
            inner: Mutex::new(Replay {
                stack: ShadowStack::new(ctx.opts.timing_depth() as usize, thread_key, list),
                events: Vec::with_capacity(2 * BATCH_EVENTS),
                consumed: BUFFER_HEADER,
            }),
            buffer,
            thread: thread_ref,
            hash,
            clock,
        });
        {
            let mut reg = st.registry.lock();
            reg.threads.push(t.clone());
            let fits = (reg.used + 1) * 2 <= reg.slots
                && tracker
                    .table_update(jni, thread, hash, Some(Obj::of_global(&t.buffer)))
                    .unwrap_or(false);
            if fits {
                reg.used += 1;
            } else {
                let slots = (reg.threads.len() * 4)
                    .next_power_of_two()
                    .max(TABLE_MIN_SLOTS);
                let entries: Vec<TableEntry<'_>> = reg
                    .threads
                    .iter()
                    .map(|x| (&x.thread, x.hash, &x.buffer))
                    .collect();
                let rebuilt = tracker.rebuild_table(jni, slots, &entries);
                let live = entries.len();
                drop(entries);
                match rebuilt {
                    Ok(()) => {
                        reg.slots = slots;
                        reg.used = live;
                    }
                    // The thread still works, through the sync natives.
                    Err(e) => log::log(
                        ctx,
                        &format!("cpu=times: cannot grow the Tracker's thread table: {e}"),
                    ),
                }
            }
        }
        let _ = TIMING.try_with(|c| *c.borrow_mut() = Some(t.clone()));
        Some(t)
    }
}

impl CpuTimes {
    /// The calling thread's clock: its CPU clock (a CPU-time timer of its own,
    /// which cpu=samples may have given it already), or the wall clock.
    fn clock_of_current_thread(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        thread: Obj<'_>,
    ) -> &'static AtomicU64 {
        if self.cpu_clock.load(Ordering::Acquire) {
            // Its stacks are cpu=samples' business: only threads that
            // cpu=samples registered (at their start) are sampled.
            let serial = crate::vm::threads::known_serial(ctx, thread).unwrap_or(0);
            match ctx.cpu_timers.register_current(jni, serial, false) {
                Ok(slot) => {
                    if let Some(c) = crate::jvmti::async_sampler::clock(slot) {
                        return c;
                    }
                }
                Err(e) => {
                    if !self.timerless_noted.swap(true, Ordering::AcqRel) {
                        crate::diag::notice(&format!(
                        "cpu=times: a thread has no CPU-time timer ({e}); its methods are charged wall-clock time"
                    ));
                    }
                }
            }
        }
        self.clock.counter()
    }
}

fn thread_serial(ctx: &Context, jni: Jni<'_>, thread: Obj<'_>) -> u32 {
    crate::vm::threads::known_serial(ctx, thread)
        .or_else(|| crate::vm::threads::register(ctx, jni, thread, false, false).map(|r| r.serial))
        .unwrap_or(0)
}

/// How events are replayed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The event happens now, on this thread: an unknown site is resolved
    /// from the caller frame, the real stack is this thread's.
    Sync,
    /// Buffered events of this thread: sites are known (the Tracker checked),
    /// the real stack is this thread's but later than the events.
    Batch,
    /// Buffered events of another thread (VM death): no stack access.
    Foreign,
}

/// Replay the thread's buffered events; the caller holds its lock. The
/// owner (Batch) then empties the buffer; a dump (Foreign) only notes how
/// far it got, since the owner may be appending at that moment (it writes
/// an event's slots before the index that publishes them).
impl CpuTimes {
    fn replay_buffer(
        &self,
        ctx: &Context,
        jni: Jni<'_>,
        t: &ThreadTiming,
        r: &mut Replay,
        mode: Mode,
    ) {
        let st = self;
        let mut events = std::mem::take(&mut r.events);
        events.clear();
        let buffer = Obj::of_global(&t.buffer);
        let end = match Tracker::read_events(jni, buffer, r.consumed, &mut events) {
            Ok(end) => end,
            Err(e) => {
                log::log(ctx, &format!("cpu=times: cannot read a buffer: {e}"));
                r.consumed
            }
        };
        let mut env = JvmEnv::new(ctx, st, jni, 0, mode);
        for pair in events.chunks_exact(2) {
            let (ev, time) = (pair[0] as u64, pair[1] as u64);
            env.now = time;
            let site = ev >> 1;
            let (cnum, mnum) = ((site >> 32) as u32, site as u32);
            if ev & 1 == 0 {
                r.stack.call(&mut env, cnum, mnum);
            } else {
                r.stack.ret(&mut env, cnum, mnum);
            }
        }
        r.events = events;
        if mode == Mode::Foreign {
            r.consumed = end;
        } else {
            r.consumed = BUFFER_HEADER;
            let _ = Tracker::reset(jni, buffer, r.stack.depth_now());
        }
    }

    /// Before a dump: replay every thread's buffered events, so the report
    /// includes the calls that completed up to now, also in threads that are
    /// blocked. Used for the VM-death dump too.
    fn catch_up(&self, ctx: &Context, jni: Jni<'_>) {
        let st = self;
        if st.tracker.get().is_none() {
            return;
        }
        let mine = current();
        let threads = st.registry.lock().threads.clone();
        in_agent(|| {
            for t in threads {
                let own = mine.as_ref().is_some_and(|m| Arc::ptr_eq(m, &t));
                let mode = if own { Mode::Batch } else { Mode::Foreign };
                let mut r = t.inner.lock();
                st.replay_buffer(ctx, jni, &t, &mut r, mode);
            }
        });
    }

    /// A call or return the Tracker hands over now.
    fn sync_event(&self, jni: Jni<'_>, thread: Obj<'_>, cnum: u32, mnum: u32, ret: bool) {
        let st = self;
        let Some(&ctx) = self.ctx.get() else {
            return;
        };
        if thread.is_null() || !st.engaged.load(Ordering::Acquire) || ctx.gate.is_closed() {
            return;
        }
        in_agent(|| {
            let Some(t) = st.current_or_register(ctx, jni, thread) else {
                return;
            };
            let key = shadow::site_key(cnum, mnum);
            let was_resolved = st.site_methods.contains_key(&key);
            let mut r = t.inner.lock();
            st.replay_buffer(ctx, jni, &t, &mut r, Mode::Batch);
            // Read after the buffered events' stamps: the clock is monotonic.
            let now = t.clock.load(Ordering::Acquire);
            let mut env = JvmEnv::new(ctx, st, jni, now, Mode::Sync);
            if ret {
                r.stack.ret(&mut env, cnum, mnum);
            } else {
                r.stack.call(&mut env, cnum, mnum);
            }
            let _ = Tracker::reset(jni, Obj::of_global(&t.buffer), r.stack.depth_now());
            drop(r);
            // Most sync events come from full buffers, for resolved sites: the
            // bit is set once, by the thread that resolved the site.
            if !was_resolved && st.site_methods.contains_key(&key) {
                mark_known(st, jni, cnum, mnum);
            }
        });
    }
}

/// Let the Tracker buffer the events of a resolved site.
fn mark_known(st: &CpuTimes, jni: Jni<'_>, cnum: u32, mnum: u32) {
    let Some(tracker) = st.tracker.get() else {
        return;
    };
    let methods = st.classes.read().get(cnum as usize).map_or(0, |c| c.len());
    let _g = st.known_lock.lock();
    let _ = tracker.set_known(jni, cnum, mnum, methods);
}

impl TrackerCalls for CpuTimes {
    fn sync_call(&self, jni: Jni<'_>, thread: Obj<'_>, cnum: u32, mnum: u32) {
        self.sync_event(jni, thread, cnum, mnum, false);
    }

    fn sync_return(&self, jni: Jni<'_>, thread: Obj<'_>, cnum: u32, mnum: u32) {
        self.sync_event(jni, thread, cnum, mnum, true);
    }
}

/// The JVM behind [`TimingEnv`] for the current thread.
struct JvmEnv<'a> {
    ctx: &'a Context,
    st: &'a CpuTimes,
    jni: Jni<'a>,
    /// Time of the event being replayed.
    now: u64,
    mode: Mode,
}

impl<'a> JvmEnv<'a> {
    fn new(ctx: &'a Context, st: &'a CpuTimes, jni: Jni<'a>, now: u64, mode: Mode) -> Self {
        JvmEnv {
            ctx,
            st,
            jni,
            now,
            mode,
        }
    }
}

impl TimingEnv for JvmEnv<'_> {
    #[inline]
    fn now(&mut self) -> u64 {
        self.now
    }

    fn site_method(&mut self, cnum: u32, mnum: u32) -> Option<MethodKey> {
        let key = shadow::site_key(cnum, mnum);
        if let Some(m) = self.st.site_methods.get(&key) {
            return Some(*m);
        }
        if self.mode != Mode::Sync {
            return None;
        }
        // Called from syncCall/syncReturn: the instrumented method is the
        // frame below Tracker.CallSite/ReturnSite.
        let (method, _) = self
            .ctx
            .jvmti
            .frame_location(Obj::null(), CALLER_DEPTH)
            .ok()?;
        let expected = self
            .st
            .classes
            .read()
            .get(cnum as usize)
            .and_then(|c| c.get(mnum as usize).cloned())?;
        let names = self.ctx.jvmti.method_name(method).ok()?;
        if names.name != expected.0 || names.signature != expected.1 {
            log::log(
                self.ctx,
                &format!(
                    "cpu=times: site {cnum}/{mnum} is {}{} but the caller frame is {}{}",
                    expected.0, expected.1, names.name, names.signature
                ),
            );
            return None;
        }
        self.st.site_methods.insert(key, method.as_usize());
        Some(method.as_usize())
    }

    fn frame_of(&mut self, method: MethodKey) -> Option<u32> {
        // SAFETY: every key a shadow stack holds came from
        // `MethodId::as_usize`, in `site_method` or `real_stack` above.
        let method = unsafe { MethodId::from_key(method) };
        crate::vm::stacks::method_frame(self.ctx, self.jni, method, -1)
    }

    fn intern(&mut self, key: &[u32]) -> u32 {
        self.ctx.tables.traces.intern(key).serial
    }

    fn real_stack(&mut self, out: &mut Vec<MethodKey>) -> bool {
        if self.mode == Mode::Foreign {
            return false;
        }
        let j = self.ctx.jvmti;
        let mut frames = Vec::new();
        let mut max = 1024;
        loop {
            if j.stack_trace(Obj::null(), max, &mut frames).is_err() {
                return false;
            }
            if frames.len() < max {
                break;
            }
            match j.frame_count(Obj::null()) {
                Ok(n) if n > max => max = n + 16,
                _ => break,
            }
        }
        out.clear();
        out.extend(
            self.ctx
                .hidden
                .strip(&frames)
                .iter()
                .map(|f| f.method.as_usize()),
        );
        true
    }
}

impl Profile for CpuTimes {
    fn name(&self) -> &'static str {
        "cpu=times"
    }

    fn capabilities(
        &self,
        potential: &jvmtiCapabilities,
        need: &mut jvmtiCapabilities,
    ) -> Result<(), String> {
        if !potential.has(cap::CAN_GENERATE_EXCEPTION_EVENTS) {
            // The Tracker's shadow stacks are repaired on ExceptionCatch;
            // without it a thrown exception would leave them wrong for good.
            return Err(
                "cpu=times and cpu=old need JVMTI exception events, which this VM does not \
                        grant now (HotSpot grants them only to an agent loaded at start-up with \
                        -agentpath:, not to one attached to a running VM)"
                    .into(),
            );
        }
        for c in [
            cap::CAN_RETRANSFORM_CLASSES,
            cap::CAN_GENERATE_EXCEPTION_EVENTS,
        ] {
            if !potential.has(c) {
                return Err("Unable to get necessary JVMTI capabilities.".into());
            }
            need.set(c);
        }
        Ok(())
    }

    fn events(&self) -> &'static [Event] {
        &[
            Event::ClassFileLoadHook,
            Event::ExceptionCatch,
            Event::ThreadEnd,
        ]
    }

    /// Tracker, natives, clock, hook, retransformation of the classes
    /// loaded so far, then engage. Errors are reported and leave timing off.
    fn vm_start(&'static self, ctx: &'static Context, jni: Jni<'_>) {
        if let Err(e) = self.start(ctx, jni) {
            crate::diag::error(&format!("cpu=times: {e}; method timing is off"));
        }
    }

    fn thread_end(&self, ctx: &Context, jni: Jni<'_>, _thread: Obj<'_>) {
        self.ended(ctx, jni);
    }

    /// Replay every thread's buffered events (so the report includes the
    /// calls completed up to now, also in blocked threads), then CPU TIME.
    fn dump(&'static self, ctx: &'static Context, jni: Jni<'_>) {
        let what = if ctx.opts.cpu_old {
            " CPU usage in old prof format ..."
        } else {
            " CPU usage by timing methods ..."
        };
        crate::diag::verbose(ctx.opts.verbose, what);
        self.catch_up(ctx, jni);
        crate::report::cpu_times::write(ctx, &self.take_totals(), ctx.opts.cutoff);
    }

    /// Stop tracking, then replay every thread's buffered events before the
    /// final dump.
    fn stop(&self, ctx: &Context, jni: Jni<'_>) {
        self.set_engaged(jni, false);
        let _ = ctx.jvmti.set_event_mode(false, event::EXCEPTION_CATCH);
        let _ = ctx.jvmti.set_event_mode(false, event::CLASS_FILE_LOAD_HOOK);
        self.clock.stop();
        if self.cpu_clock.load(Ordering::Acquire) {
            crate::jvmti::async_sampler::stop();
        }
        self.catch_up(ctx, jni);
    }

    fn class_file_load_hook(
        &self,
        _ctx: &Context,
        name: Option<&str>,
        bytes: &[u8],
    ) -> Option<Vec<u8>> {
        self.rewrite_class(name, bytes)
    }

    fn exception_catch(&self, ctx: &Context, jni: Jni<'_>, _thread: Obj<'_>, method: MethodId) {
        self.caught(ctx, jni, method);
    }
}
