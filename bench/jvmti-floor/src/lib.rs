//! A measuring probe, not a profiler: a minimal JVMTI agent that does the
//! JVM-side work of one of hprof-rs's profiles and nothing else (no tables,
//! no output), so `bench/jvmti_floor.py` can show how much of a profile's
//! overhead the JVM itself charges for the mechanism the profile is built
//! on. Options (comma-separated, any subset):
//!
//! * `event` — `SampledObjectAlloc` for every allocation (interval 0), the
//!   callback returns at once;
//! * `stack` — with `event`: `GetStackTrace` of 4 frames in the callback;
//! * `tag` — with `event`: `SetTag` on every allocated object;
//! * `free` — `ObjectFree` events for tagged objects, counted;
//! * `walk` — on `DataDumpRequest` (`jcmd <pid> JVMTI.data_dump`): a full
//!   GC, then `FollowReferences` in a scratch environment that tags every
//!   reachable object with a serial and reads every primitive field and
//!   array (what a heap dump must see), then the environment is disposed;
//! * `threads` — `ThreadStart` and `ThreadEnd` events, the callbacks return
//!   at once (what following threads costs the JVM: monitor=y, cpu=samples);
//! * `timers` — with `threads`: a POSIX timer on each thread's CPU clock,
//!   made and armed at its ThreadStart (10 ms, signal ignored), deleted at
//!   its ThreadEnd (the least a CPU-time trigger per thread costs).
//!
//! Counts are printed to stderr at the walk and at VM death.

// The JVMTI ABI of hprof-rs itself, so the probe calls the JVM exactly as
// the agent does.
#[allow(
    dead_code,
    unused_imports,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals
)]
#[path = "../../../crates/hprof-jvmti/src/sys/mod.rs"]
mod sys;

use std::ffi::{c_char, c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Instant;
use sys::*;

#[derive(Default, Debug)]
struct Modes {
    event: bool,
    stack: bool,
    tag: bool,
    free: bool,
    walk: bool,
    threads: bool,
    timers: bool,
}

static MODES: OnceLock<Modes> = OnceLock::new();
static VM: OnceLock<usize> = OnceLock::new();
static EVENTS: AtomicU64 = AtomicU64::new(0);
static FRAMES: AtomicU64 = AtomicU64::new(0);
static FREES: AtomicU64 = AtomicU64::new(0);
static NEXT_TAG: AtomicI64 = AtomicI64::new(1);
static FAILED: AtomicBool = AtomicBool::new(false);
static THREADS: AtomicU64 = AtomicU64::new(0);

std::thread_local! {
    /// The calling thread's timer (`timers`), 0 for none.
    static TIMER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Calls a JVMTI function through the env's table.
macro_rules! jvmti {
    ($env:expr, $f:ident $(, $a:expr)*) => {
        match (**$env).$f { Some(f) => f($env $(, $a)*), None => 99 }
    };
}

fn modes() -> &'static Modes {
    MODES.get_or_init(Modes::default)
}

fn parse(options: &str) -> Result<Modes, String> {
    let mut m = Modes::default();
    for word in options.split(',').filter(|w| !w.is_empty()) {
        match word {
            "event" => m.event = true,
            "stack" => m.stack = true,
            "tag" => m.tag = true,
            "free" => m.free = true,
            "walk" => m.walk = true,
            "threads" => m.threads = true,
            "timers" => m.timers = true,
            other => return Err(format!("unknown option '{other}'")),
        }
    }
    if (m.stack || m.tag) && !m.event {
        return Err("'stack' and 'tag' need 'event'".into());
    }
    if m.timers && !m.threads {
        return Err("'timers' needs 'threads'".into());
    }
    Ok(m)
}

/// A new JVMTI environment of the VM.
///
/// # Safety
/// `vm` must be the live JavaVM.
unsafe fn new_env(vm: *mut JavaVM) -> Option<*mut jvmtiEnv> {
    let mut env: *mut c_void = ptr::null_mut();
    let get_env = (**vm).GetEnv?;
    (get_env(vm, &mut env, JVMTI_VERSION_11) == 0 && !env.is_null()).then_some(env as *mut jvmtiEnv)
}

fn check(what: &str, rc: jvmtiError) -> bool {
    if rc != 0 {
        eprintln!("jvmti-floor: {what} failed with JVMTI error {rc}");
        FAILED.store(true, Relaxed);
    }
    rc == 0
}

/// # Safety
/// Called by the JVM with a live VM pointer and a C string or null.
#[no_mangle]
pub unsafe extern "system" fn Agent_OnLoad(
    vm: *mut JavaVM,
    options: *mut c_char,
    _: *mut c_void,
) -> jint {
    let text = if options.is_null() {
        String::new()
    } else {
        CStr::from_ptr(options).to_string_lossy().into_owned()
    };
    let m = match parse(&text) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("jvmti-floor: {e}");
            return 1;
        }
    };
    let _ = VM.set(vm as usize);
    let Some(env) = new_env(vm) else {
        eprintln!("jvmti-floor: no JVMTI 11 environment");
        return 1;
    };
    let mut caps = jvmtiCapabilities::default();
    if m.event {
        caps.set(cap::CAN_GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS);
    }
    if m.tag || m.free {
        caps.set(cap::CAN_TAG_OBJECTS);
    }
    if m.free {
        caps.set(cap::CAN_GENERATE_OBJECT_FREE_EVENTS);
    }
    let cbs = jvmtiEventCallbacks {
        VMDeath: Some(on_vm_death),
        SampledObjectAlloc: Some(on_alloc),
        ObjectFree: Some(on_free),
        DataDumpRequest: Some(on_data_dump),
        ThreadStart: Some(on_thread_start),
        ThreadEnd: Some(on_thread_end),
        ..Default::default()
    };
    if m.timers {
        // An expiry the probe cannot see must not end the process.
        libc::signal(libc::SIGPROF, libc::SIG_IGN);
    }
    let _ = MODES.set(m);
    let m = modes();
    let ok = check("AddCapabilities", jvmti!(env, AddCapabilities, &caps))
        && check(
            "SetEventCallbacks",
            jvmti!(
                env,
                SetEventCallbacks,
                &cbs,
                std::mem::size_of::<jvmtiEventCallbacks>() as jint
            ),
        )
        && check(
            "VMDeath",
            jvmti!(
                env,
                SetEventNotificationMode,
                JVMTI_ENABLE,
                event::VM_DEATH,
                ptr::null_mut()
            ),
        )
        && (!m.event
            || check(
                "SetHeapSamplingInterval",
                jvmti!(env, SetHeapSamplingInterval, 0),
            ) && check(
                "SampledObjectAlloc",
                jvmti!(
                    env,
                    SetEventNotificationMode,
                    JVMTI_ENABLE,
                    event::SAMPLED_OBJECT_ALLOC,
                    ptr::null_mut()
                ),
            ))
        && (!m.free
            || check(
                "ObjectFree",
                jvmti!(
                    env,
                    SetEventNotificationMode,
                    JVMTI_ENABLE,
                    event::OBJECT_FREE,
                    ptr::null_mut()
                ),
            ))
        && (!m.threads
            || check(
                "ThreadStart",
                jvmti!(
                    env,
                    SetEventNotificationMode,
                    JVMTI_ENABLE,
                    event::THREAD_START,
                    ptr::null_mut()
                ),
            ) && check(
                "ThreadEnd",
                jvmti!(
                    env,
                    SetEventNotificationMode,
                    JVMTI_ENABLE,
                    event::THREAD_END,
                    ptr::null_mut()
                ),
            ))
        && (!m.walk
            || check(
                "DataDumpRequest",
                jvmti!(
                    env,
                    SetEventNotificationMode,
                    JVMTI_ENABLE,
                    event::DATA_DUMP_REQUEST,
                    ptr::null_mut()
                ),
            ));
    if ok {
        eprintln!("jvmti-floor: {m:?}");
        0
    } else {
        1
    }
}

unsafe extern "C" fn on_alloc(
    env: *mut jvmtiEnv,
    _: *mut JNIEnv,
    thread: jthread,
    obj: jobject,
    _: jclass,
    _: jlong,
) {
    EVENTS.fetch_add(1, Relaxed);
    let m = modes();
    if m.stack {
        let mut frames = [jvmtiFrameInfo {
            method: ptr::null_mut(),
            location: 0,
        }; 4];
        let mut n: jint = 0;
        // SAFETY: the event's env and thread are live for the callback; the
        // buffer holds the 4 frames asked for.
        if jvmti!(
            env,
            GetStackTrace,
            thread,
            0,
            4,
            frames.as_mut_ptr(),
            &mut n
        ) == 0
        {
            FRAMES.fetch_add(n as u64, Relaxed);
        }
    }
    if m.tag {
        // SAFETY: obj is the event's live local reference.
        jvmti!(env, SetTag, obj, NEXT_TAG.fetch_add(1, Relaxed));
    }
}

unsafe extern "C" fn on_thread_start(_: *mut jvmtiEnv, _: *mut JNIEnv, _: jthread) {
    THREADS.fetch_add(1, Relaxed);
    if !modes().timers {
        return;
    }
    let tid = libc::gettid();
    // glibc's clock id of a thread's CPU clock (CPUCLOCK_SCHED, per thread).
    let clock = ((!tid) << 3) | 6;
    let mut sev: libc::sigevent = std::mem::zeroed();
    sev.sigev_notify = libc::SIGEV_THREAD_ID;
    sev.sigev_signo = libc::SIGPROF;
    sev.sigev_notify_thread_id = tid;
    let mut timer: libc::timer_t = ptr::null_mut();
    if libc::timer_create(clock, &mut sev, &mut timer) != 0 {
        FAILED.store(true, Relaxed);
        return;
    }
    let ten_ms = libc::timespec {
        tv_sec: 0,
        tv_nsec: 10_000_000,
    };
    let spec = libc::itimerspec {
        it_interval: ten_ms,
        it_value: ten_ms,
    };
    libc::timer_settime(timer, 0, &spec, ptr::null_mut());
    TIMER.with(|t| t.set(timer as usize));
}

unsafe extern "C" fn on_thread_end(_: *mut jvmtiEnv, _: *mut JNIEnv, _: jthread) {
    let t = TIMER.with(|t| t.replace(0));
    if t != 0 {
        libc::timer_delete(t as libc::timer_t);
    }
}

unsafe extern "C" fn on_free(_: *mut jvmtiEnv, _: jlong) {
    FREES.fetch_add(1, Relaxed);
}

unsafe extern "C" fn on_vm_death(_: *mut jvmtiEnv, _: *mut JNIEnv) {
    eprintln!(
        "jvmti-floor: {} allocation events, {} frames, {} tags, {} frees, {} threads started{}",
        EVENTS.load(Relaxed),
        FRAMES.load(Relaxed),
        NEXT_TAG.load(Relaxed) - 1,
        FREES.load(Relaxed),
        THREADS.load(Relaxed),
        if FAILED.load(Relaxed) {
            " (a JVMTI call FAILED)"
        } else {
            ""
        }
    );
}

#[derive(Default)]
struct WalkCounts {
    refs: u64,
    prim_values: u64,
    prim_bytes: u64,
    checksum: u64,
}

unsafe extern "C" fn on_ref(
    _: jvmtiHeapReferenceKind,
    _: *const jvmtiHeapReferenceInfo,
    _: jlong,
    _: jlong,
    _: jlong,
    tag_ptr: *mut jlong,
    referrer_tag_ptr: *mut jlong,
    _: jint,
    user: *mut c_void,
) -> jint {
    // SAFETY: user is the WalkCounts passed to FollowReferences; tag
    // pointers are valid and writable during the callback (JVMTI spec).
    let c = &mut *(user as *mut WalkCounts);
    c.refs += 1;
    if *tag_ptr == 0 {
        *tag_ptr = NEXT_TAG.fetch_add(1, Relaxed);
    }
    if !referrer_tag_ptr.is_null() && *referrer_tag_ptr == 0 {
        *referrer_tag_ptr = NEXT_TAG.fetch_add(1, Relaxed);
    }
    c.checksum = c.checksum.wrapping_add(*tag_ptr as u64);
    JVMTI_VISIT_OBJECTS
}

unsafe extern "C" fn on_prim_field(
    _: jvmtiHeapReferenceKind,
    _: *const jvmtiHeapReferenceInfo,
    _: jlong,
    tag_ptr: *mut jlong,
    value: jvalue,
    _: jvmtiPrimitiveType,
    user: *mut c_void,
) -> jint {
    // SAFETY: as in on_ref; the jvalue's j member covers all 8 bytes.
    let c = &mut *(user as *mut WalkCounts);
    c.prim_values += 1;
    c.checksum = c.checksum.wrapping_add(value.j as u64 ^ *tag_ptr as u64);
    0
}

unsafe extern "C" fn on_prim_array(
    _: jlong,
    size: jlong,
    tag_ptr: *mut jlong,
    len: jint,
    ty: jvmtiPrimitiveType,
    elements: *const c_void,
    user: *mut c_void,
) -> jint {
    // SAFETY: as in on_ref; elements holds `len` elements of type `ty`.
    let c = &mut *(user as *mut WalkCounts);
    c.prim_values += len as u64;
    c.prim_bytes += size as u64;
    let width = match ty as u8 {
        b'Z' | b'B' => 1,
        b'C' | b'S' => 2,
        b'I' | b'F' => 4,
        _ => 8,
    };
    if len > 0 {
        // Read the contents once, as a writer copying them would.
        let bytes = std::slice::from_raw_parts(elements as *const u8, len as usize * width);
        c.checksum = c
            .checksum
            .wrapping_add(bytes.iter().map(|&b| b as u64).sum::<u64>() ^ *tag_ptr as u64);
    }
    0
}

unsafe extern "C" fn on_data_dump(env: *mut jvmtiEnv) {
    if !modes().walk {
        return;
    }
    let Some(&vm) = VM.get() else {
        return;
    };
    let vm = vm as *mut JavaVM;
    // SAFETY: VM is the live JavaVM stored at Agent_OnLoad.
    let Some(scratch) = new_env(vm) else {
        eprintln!("jvmti-floor: no scratch environment");
        return;
    };
    let mut caps = jvmtiCapabilities::default();
    caps.set(cap::CAN_TAG_OBJECTS);
    if !check("AddCapabilities", jvmti!(scratch, AddCapabilities, &caps)) {
        return;
    }
    let t0 = Instant::now();
    check(
        "ForceGarbageCollection",
        jvmti!(env, ForceGarbageCollection),
    );
    let gc = t0.elapsed();
    let t1 = Instant::now();
    let first = NEXT_TAG.load(Relaxed);
    let callbacks = jvmtiHeapCallbacks {
        heap_iteration_callback: None,
        heap_reference_callback: Some(on_ref),
        primitive_field_callback: Some(on_prim_field),
        array_primitive_value_callback: Some(on_prim_array),
        string_primitive_value_callback: None,
        reserved: [ptr::null(); 11],
    };
    let mut counts = WalkCounts::default();
    check(
        "FollowReferences",
        jvmti!(
            scratch,
            FollowReferences,
            0,
            ptr::null_mut(),
            ptr::null_mut(),
            &callbacks,
            &mut counts as *mut WalkCounts as *const c_void
        ),
    );
    let walk = t1.elapsed();
    eprintln!(
        "jvmti-floor walk: GC {} ms, walk {} ms: {} objects tagged, {} references, {} primitive values, {} MiB of primitive arrays (checksum {:x}) done.",
        gc.as_millis(),
        walk.as_millis(),
        NEXT_TAG.load(Relaxed) - first,
        counts.refs,
        counts.prim_values,
        counts.prim_bytes >> 20,
        counts.checksum
    );
    let t2 = Instant::now();
    check("DisposeEnvironment", jvmti!(scratch, DisposeEnvironment));
    eprintln!(
        "jvmti-floor: scratch environment disposed in {} ms",
        t2.elapsed().as_millis()
    );
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn options_select_the_probe_levels() {
        let m = parse("event,stack,tag,free").unwrap();
        assert!(m.event && m.stack && m.tag && m.free && !m.walk);
        let m = parse("walk").unwrap();
        assert!(m.walk && !m.event);
        let m = parse("threads,timers").unwrap();
        assert!(m.threads && m.timers && !m.event);
        assert!(parse("").is_ok());
    }

    #[test]
    fn bad_options_are_refused() {
        assert_eq!(
            parse("stack").unwrap_err(),
            "'stack' and 'tag' need 'event'"
        );
        assert_eq!(parse("event,heap").unwrap_err(), "unknown option 'heap'");
        assert_eq!(parse("timers").unwrap_err(), "'timers' needs 'threads'");
    }
}
