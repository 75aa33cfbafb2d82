//! cpu=times and cpu=old: method timing by byte-code injection
//! (profiles.md §2, §7; docs/cpu-times.md).
//!
//! * Agent_OnLoad: capabilities (retransformation, exception events).
//! * VM init: define the Tracker class in the boot loader (JNI DefineClass),
//!   bind its natives, enable the class-file load hook and ExceptionCatch,
//!   retransform every class loaded so far (so start-up classes, `java.base`
//!   included, are instrumented too), then engage the Tracker.
//! * Class-file load hook: `bci::inject` with CallSite/ReturnSite.
//! * Tracker natives and ExceptionCatch: the calling thread's
//!   [`shadow::ShadowStack`] (thread-local, no global lock).
//! * Dumps: `control::cpu_times_report` sums the per-thread counters.

pub mod shadow;

use crate::agent::Agent;
use crate::bci::{self, InjectConfig};
use crate::jvmti::sys::{
    cap, event, jclass, jmethodID, jobject, jvmtiCapabilities, JNIEnv, JVMTI_CLASS_STATUS_ARRAY,
    JVMTI_CLASS_STATUS_PRIMITIVE,
};
use crate::jvmti::tracker_natives::{self, TrackerCalls};
use dashmap::DashMap;
use jni::objects::GlobalRef;
use parking_lot::{Mutex, RwLock};
use shadow::{CellList, MethodKey, ShadowStack, SiteKey, TimingEnv};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Internal name of the Tracker class. It lives in `java.lang` (defined in
/// the boot loader at VM init), so every module reads it (everyone reads
/// `java.base`, and `java.lang` is exported to all) and every class loader
/// finds it (all delegate `java.*` to the boot loader). See
/// docs/cpu-times.md for the alternatives tried.
pub const TRACKER_CLASS: &str = tracker_natives::TRACKER_CLASS;

/// Value of `Tracker.engaged` while tracking (profiles.md §1.4).
const ENGAGED: i32 = 0xFFFF;

/// Stack depth of the injected method below the Tracker frames:
/// 0 = `nativeCallSite`, 1 = `CallSite`, 2 = the instrumented method.
const CALLER_DEPTH: i32 = 2;

/// Classes retransformed per RetransformClasses call at VM init.
const RETRANSFORM_BATCH: usize = 256;

/// Method names and descriptors of one instrumented class (index = method number).
type ClassSites = Arc<[(String, String)]>;

#[derive(Default)]
pub struct CpuTimes {
    /// Class number → its methods, recorded by the class-file load hook.
    classes: RwLock<Vec<ClassSites>>,
    /// (class, method number) → jmethodID, resolved once per site.
    site_methods: DashMap<SiteKey, usize>,
    /// Every thread's counters, for the dump.
    threads: Mutex<Vec<Arc<CellList>>>,
    tracker: OnceLock<GlobalRef>,
    /// jmethodIDs of the Tracker's methods (dropped from real stacks).
    tracker_methods: OnceLock<Vec<usize>>,
    engaged: AtomicBool,
    clock: OnceLock<crate::agent::clock::TickClock>,
    /// Statistics for `logflags=1` and docs.
    pub classes_rewritten: AtomicU64,
    pub methods_instrumented: AtomicU64,
    pub hook_nanos: AtomicU64,
}

static STATE: OnceLock<CpuTimes> = OnceLock::new();

fn state() -> &'static CpuTimes {
    STATE.get_or_init(CpuTimes::default)
}

/// Capabilities cpu=times needs, added to `need` (Agent_OnLoad). Returns
/// the name of a missing one.
pub fn add_capabilities(
    potential: &jvmtiCapabilities,
    need: &mut jvmtiCapabilities,
) -> Result<(), &'static str> {
    for (c, name) in [
        (cap::CAN_RETRANSFORM_CLASSES, "can_retransform_classes"),
        (
            cap::CAN_GENERATE_EXCEPTION_EVENTS,
            "can_generate_exception_events",
        ),
    ] {
        if !potential.has(c) {
            return Err(name);
        }
        need.set(c);
    }
    Ok(())
}

/// VM init: Tracker, natives, hook, retransformation of the classes loaded
/// so far, then engage. Errors are reported and leave timing off.
pub fn vm_init(agent: &'static Agent, jni: *mut JNIEnv) {
    let st = state();
    let _ = st.clock.set(crate::agent::clock::TickClock::new());
    if let Err(e) = start(agent, jni, st) {
        crate::diag::error(&format!("cpu=times: {e}; method timing is off"));
    }
}

fn start(agent: &'static Agent, jni: *mut JNIEnv, st: &'static CpuTimes) -> Result<(), String> {
    let j = agent.jvmti;
    let bytes = bci::tracker_class_bytes(TRACKER_CLASS)
        .map_err(|e| format!("cannot build the Tracker class: {e}"))?;
    let tracker = crate::jvmti::jni::define_boot_class(jni, TRACKER_CLASS, &bytes)
        .map_err(|e| format!("cannot define the Tracker class {TRACKER_CLASS}: {e}"))?;
    let tclass = tracker.as_obj().as_raw();
    tracker_natives::install(&Natives);
    link_natives(jni, tclass)?;
    let mut ids: Vec<usize> = j
        .class_methods(tclass)
        .map(|m| m.iter().map(|&id| id as usize).collect())
        .unwrap_or_default();
    ids.sort_unstable();
    let _ = st.tracker_methods.set(ids);
    let _ = st.tracker.set(tracker);

    for ev in [event::CLASS_FILE_LOAD_HOOK, event::EXCEPTION_CATCH] {
        j.set_event_mode(true, ev)
            .map_err(|e| format!("cannot enable JVMTI event {ev}: {e}"))?;
    }
    let t0 = Instant::now();
    let (done, failed) = retransform_loaded(agent, jni, tclass);
    crate::agent::debug::log(
        agent,
        &format!(
            "cpu=times: retransformed {done} loaded classes in {} ms ({failed} failed, {} ms in the rewriter); {} classes rewritten, {} methods instrumented",
            t0.elapsed().as_millis(),
            st.hook_nanos.load(Ordering::Relaxed) / 1_000_000,
            st.classes_rewritten.load(Ordering::Relaxed),
            st.methods_instrumented.load(Ordering::Relaxed)
        ),
    );
    set_engaged(jni, true);
    Ok(())
}

/// Make the JVM link the four natives now, while `engaged` is 0: linking
/// looks the symbol up through `ClassLoader.findNative`, Java code that is
/// itself instrumented, so linking on the first engaged call would recurse
/// until the stack overflows. Calling each native once through JNI links it
/// (our handlers ignore calls while disengaged).
fn link_natives(jni: *mut JNIEnv, tclass: jobject) -> Result<(), String> {
    use jni::objects::{JObject, JValue};
    let null = JObject::null();
    for (name, sig) in [
        ("nativeCallSite", "(Ljava/lang/Object;II)V"),
        ("nativeReturnSite", "(Ljava/lang/Object;II)V"),
    ] {
        crate::jvmti::jni::call_static_void(
            jni,
            tclass,
            name,
            sig,
            &[JValue::Object(&null), JValue::Int(0), JValue::Int(0)],
        )
        .map_err(|e| format!("cannot link Tracker.{name}: {e}"))?;
    }
    for name in ["nativeObjectInit", "nativeNewArray"] {
        let sig = "(Ljava/lang/Object;Ljava/lang/Object;)V";
        crate::jvmti::jni::call_static_void(
            jni,
            tclass,
            name,
            sig,
            &[JValue::Object(&null), JValue::Object(&null)],
        )
        .map_err(|e| format!("cannot link Tracker.{name}: {e}"))?;
    }
    Ok(())
}

/// Engage (VM init) or disengage (VM death) the Tracker: its `engaged`
/// field gates the native calls on the Java side, our flag on ours.
pub fn set_engaged(jni: *mut JNIEnv, on: bool) {
    let st = state();
    st.engaged.store(on, Ordering::Release);
    if let Some(t) = st.tracker.get() {
        let _ = crate::jvmti::jni::set_static_int(
            jni,
            t.as_obj().as_raw(),
            bci::tracker::ENGAGED_FIELD,
            if on { ENGAGED } else { 0 },
        );
    }
}

/// VM death: stop tracking before the final dump.
pub fn vm_death(agent: &Agent, jni: *mut JNIEnv) {
    set_engaged(jni, false);
    let _ = agent.jvmti.set_event_mode(false, event::EXCEPTION_CATCH);
    let _ = agent
        .jvmti
        .set_event_mode(false, event::CLASS_FILE_LOAD_HOOK);
}

/// Run the hook again on every modifiable class loaded before it was
/// enabled. A batch that fails is retried class by class so one
/// unmodifiable class does not leave the others uninstrumented.
fn retransform_loaded(agent: &Agent, jni: *mut JNIEnv, tracker: jobject) -> (usize, usize) {
    let j = agent.jvmti;
    let Ok(classes) = j.loaded_classes() else {
        return (0, 0);
    };
    let mut todo: Vec<jclass> = Vec::with_capacity(classes.len());
    for &k in classes.iter() {
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
                    crate::agent::debug::log(
                        agent,
                        &format!("cpu=times: cannot retransform {name}: {e}"),
                    );
                }
            }
        }
    }
    for &k in classes.iter() {
        crate::jvmti::jni::delete_local_ref(jni, k);
    }
    (done, failed)
}

/// The class-file load hook: CallSite at entry, ReturnSite before returns.
pub fn class_file_load_hook(name: Option<&str>, bytes: &[u8]) -> Option<Vec<u8>> {
    let st = state();
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

/// ExceptionCatch: prune the shadow stack of the frames the exception left.
pub fn exception_catch(
    agent: &'static Agent,
    jni: *mut JNIEnv,
    thread: jobject,
    method: jmethodID,
) {
    with_shadow(agent, jni, thread, |s, env| {
        s.exception_caught(env, method as usize)
    });
}

/// `frames` (top first) without the Tracker frames on top, if any.
pub fn strip_tracker_frames(
    frames: &[crate::jvmti::sys::jvmtiFrameInfo],
) -> &[crate::jvmti::sys::jvmtiFrameInfo] {
    let Some(tracker) = STATE.get().and_then(|s| s.tracker_methods.get()) else {
        return frames;
    };
    let n = frames
        .iter()
        .take(2)
        .take_while(|f| tracker.binary_search(&(f.method as usize)).is_ok())
        .count();
    &frames[n..]
}

/// Nanoseconds per clock tick (counters are kept in ticks).
pub fn ns_per_tick() -> f64 {
    state().clock.get().map_or(1.0, |c| c.ns_per_tick())
}

/// Every thread's counter list (the dump sums them).
pub fn thread_cells() -> Vec<Arc<CellList>> {
    state().threads.lock().clone()
}

thread_local! {
    static SHADOW: RefCell<Option<ShadowStack>> = const { RefCell::new(None) };
}

/// Run `f` on the current thread's shadow stack, creating it on first use.
/// Skipped when tracking is off, during VM death, and on re-entry (a
/// Tracker call made while the agent handles one on the same thread).
fn with_shadow(
    agent: &'static Agent,
    jni: *mut JNIEnv,
    thread: jobject,
    f: impl FnOnce(&mut ShadowStack, &mut JvmEnv),
) {
    let st = state();
    if !st.engaged.load(Ordering::Acquire) || agent.gate.is_closed() {
        return;
    }
    let _ = SHADOW.try_with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return;
        };
        let mut env = JvmEnv { agent, st };
        let s = slot.get_or_insert_with(|| {
            let thread_key = if agent.opts.thread {
                thread_serial(agent, jni, thread)
            } else {
                0
            };
            let list = Arc::new(CellList::default());
            st.threads.lock().push(list.clone());
            ShadowStack::new(agent.opts.timing_depth() as usize, thread_key, list)
        });
        f(s, &mut env)
    });
}

fn thread_serial(agent: &Agent, jni: *mut JNIEnv, thread: jobject) -> u32 {
    crate::agent::threads::known_serial(agent, thread)
        .or_else(|| {
            crate::agent::threads::register(agent, jni, thread, false, false).map(|r| r.serial)
        })
        .unwrap_or(0)
}

struct Natives;

impl TrackerCalls for Natives {
    fn call_site(&self, jni: *mut JNIEnv, thread: jobject, cnum: u32, mnum: u32) {
        let Some(agent) = crate::agent::agent() else {
            return;
        };
        with_shadow(agent, jni, thread, |s, env| s.call(env, cnum, mnum));
    }

    fn return_site(&self, jni: *mut JNIEnv, thread: jobject, cnum: u32, mnum: u32) {
        let Some(agent) = crate::agent::agent() else {
            return;
        };
        with_shadow(agent, jni, thread, |s, env| s.ret(env, cnum, mnum));
    }
}

/// The JVM behind [`TimingEnv`] for the current thread.
struct JvmEnv {
    agent: &'static Agent,
    st: &'static CpuTimes,
}

impl TimingEnv for JvmEnv {
    #[inline]
    fn now(&mut self) -> u64 {
        self.st.clock.get().map_or(0, |c| c.ticks())
    }

    fn site_method(&mut self, cnum: u32, mnum: u32) -> Option<MethodKey> {
        let key = shadow::site_key(cnum, mnum);
        if let Some(m) = self.st.site_methods.get(&key) {
            return Some(*m);
        }
        // Called from nativeCallSite/nativeReturnSite: the instrumented
        // method is the frame below Tracker.CallSite/ReturnSite.
        let (method, _) = self
            .agent
            .jvmti
            .frame_location(std::ptr::null_mut(), CALLER_DEPTH)
            .ok()?;
        let expected = self
            .st
            .classes
            .read()
            .get(cnum as usize)
            .and_then(|c| c.get(mnum as usize).cloned())?;
        let names = self.agent.jvmti.method_name(method).ok()?;
        if names.name != expected.0 || names.signature != expected.1 {
            crate::agent::debug::log(
                self.agent,
                &format!(
                    "cpu=times: site {cnum}/{mnum} is {}{} but the caller frame is {}{}",
                    expected.0, expected.1, names.name, names.signature
                ),
            );
            return None;
        }
        self.st.site_methods.insert(key, method as usize);
        Some(method as usize)
    }

    fn frame_of(&mut self, method: MethodKey) -> Option<u32> {
        crate::agent::stacks::method_frame(self.agent, method as jmethodID, -1)
    }

    fn intern(&mut self, key: &[u32]) -> u32 {
        self.agent.tables.traces.intern(key).serial
    }

    fn real_stack(&mut self, out: &mut Vec<MethodKey>) -> bool {
        let j = self.agent.jvmti;
        let mut frames = Vec::new();
        let mut max = 1024;
        loop {
            if j.stack_trace(std::ptr::null_mut(), max, &mut frames)
                .is_err()
            {
                return false;
            }
            if frames.len() < max {
                break;
            }
            match j.frame_count(std::ptr::null_mut()) {
                Ok(n) if n > max => max = n + 16,
                _ => break,
            }
        }
        let tracker = self
            .st
            .tracker_methods
            .get()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        out.clear();
        out.extend(
            frames
                .iter()
                .map(|f| f.method as usize)
                .skip_while(|m| tracker.binary_search(m).is_ok()),
        );
        true
    }
}
