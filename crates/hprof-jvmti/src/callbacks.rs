//! The `extern "C"` event entry points the VM calls.
//!
//! Each one converts raw arguments, then runs the agent's handler inside
//! `guarded`, so a panic never unwinds into the JVM: it is caught and
//! reported as an HPROF error, and the event is dropped.

use super::env::Jvmti;
use super::refs::{Jni, MethodId, Obj};
use super::sys::*;
use std::ffi::CStr;
use std::os::raw::{c_char, c_uchar};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// What the agent does on each event. Every method has an empty default.
/// The arguments are the VM's, borrowed for the callback: the JNI
/// environment of the thread the event arrives on and references the VM
/// owns (never deleted by the handler).
#[allow(unused_variables)]
pub trait EventHandler: Send + Sync {
    fn vm_init(&self, jni: Jni<'_>, thread: Obj<'_>) {}
    fn vm_death(&self, jni: Jni<'_>) {}
    fn thread_start(&self, jni: Jni<'_>, thread: Obj<'_>) {}
    fn thread_end(&self, jni: Jni<'_>, thread: Obj<'_>) {}
    fn class_load(&self, jni: Jni<'_>, thread: Obj<'_>, klass: Obj<'_>) {}
    fn class_prepare(&self, jni: Jni<'_>, thread: Obj<'_>, klass: Obj<'_>) {}
    /// Return replacement class bytes, or None to leave the class alone.
    fn class_file_load_hook(
        &self,
        jni: Jni<'_>,
        redefining: bool,
        loader: Obj<'_>,
        name: Option<&str>,
        bytes: &[u8],
    ) -> Option<Vec<u8>> {
        None
    }
    fn data_dump_request(&self) {}
    fn gc_start(&self) {}
    fn gc_finish(&self) {}
    fn object_free(&self, tag: i64) {}
    fn vm_object_alloc(
        &self,
        jni: Jni<'_>,
        thread: Obj<'_>,
        obj: Obj<'_>,
        klass: Obj<'_>,
        size: i64,
    ) {
    }
    fn sampled_object_alloc(
        &self,
        jni: Jni<'_>,
        thread: Obj<'_>,
        obj: Obj<'_>,
        klass: Obj<'_>,
        size: i64,
    ) {
    }
    fn monitor_wait(&self, jni: Jni<'_>, thread: Obj<'_>, obj: Obj<'_>, timeout_ms: i64) {}
    fn monitor_waited(&self, jni: Jni<'_>, thread: Obj<'_>, obj: Obj<'_>, timed_out: bool) {}
    fn monitor_contended_enter(&self, jni: Jni<'_>, thread: Obj<'_>, obj: Obj<'_>) {}
    fn monitor_contended_entered(&self, jni: Jni<'_>, thread: Obj<'_>, obj: Obj<'_>) {}
    fn exception_catch(&self, jni: Jni<'_>, thread: Obj<'_>, method: MethodId, location: i64) {}
}

static HANDLER: OnceLock<&'static dyn EventHandler> = OnceLock::new();

/// Install the handler and register every callback with the VM. Events
/// still have to be enabled one by one (`Jvmti::set_event_mode`), so a
/// profile that is off costs nothing.
pub fn install(jvmti: Jvmti, handler: &'static dyn EventHandler) -> Result<(), super::JvmtiError> {
    let _ = HANDLER.set(handler);
    let callbacks = jvmtiEventCallbacks {
        VMInit: Some(on_vm_init),
        VMDeath: Some(on_vm_death),
        ThreadStart: Some(on_thread_start),
        ThreadEnd: Some(on_thread_end),
        ClassFileLoadHook: Some(on_class_file_load_hook),
        ClassLoad: Some(on_class_load),
        ClassPrepare: Some(on_class_prepare),
        ExceptionCatch: Some(on_exception_catch),
        DataDumpRequest: Some(on_data_dump_request),
        MonitorWait: Some(on_monitor_wait),
        MonitorWaited: Some(on_monitor_waited),
        MonitorContendedEnter: Some(on_monitor_contended_enter),
        MonitorContendedEntered: Some(on_monitor_contended_entered),
        GarbageCollectionStart: Some(on_gc_start),
        GarbageCollectionFinish: Some(on_gc_finish),
        ObjectFree: Some(on_object_free),
        VMObjectAlloc: Some(on_vm_object_alloc),
        SampledObjectAlloc: Some(on_sampled_object_alloc),
        CompiledMethodLoad: Some(on_compiled_method_load),
        CompiledMethodUnload: Some(on_compiled_method_unload),
        ..Default::default()
    };
    jvmti.set_event_callbacks(&callbacks)
}

/// Run `f` with the handler, catching any panic. `what` names the event in
/// the error message.
pub fn guarded<R>(what: &str, default: R, f: impl FnOnce(&'static dyn EventHandler) -> R) -> R {
    let Some(handler) = HANDLER.get().copied() else {
        return default;
    };
    let _agent_code = super::own_work::enter();
    match catch_unwind(AssertUnwindSafe(|| f(handler))) {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            crate::diag::error(&format!("internal error in {what}: {msg}; event ignored"));
            default
        }
    }
}

/// The VM's arguments as borrowed views, for the duration of a callback.
///
/// # Safety
/// `jni` must be the current thread's JNIEnv (or null) and `obj` a
/// reference (or null) the VM keeps alive for the whole callback.
unsafe fn args<'a>(jni: *mut JNIEnv, obj: jobject) -> Option<(Jni<'a>, Obj<'a>)> {
    // SAFETY: the caller's contract.
    unsafe { Some((Jni::from_raw(jni)?, Obj::from_raw(obj))) }
}

/// A further reference argument of the same callback.
///
/// # Safety
/// As for `args`.
unsafe fn arg<'a>(obj: jobject) -> Obj<'a> {
    // SAFETY: the caller's contract.
    unsafe { Obj::from_raw(obj) }
}

// SAFETY (every callback below): the VM calls it with the current thread's
// JNIEnv and references that stay valid until the callback returns; the
// views made by `args`/`arg` do not outlive the call.

unsafe extern "C" fn on_vm_init(_: *mut jvmtiEnv, jni: *mut JNIEnv, thread: jthread) {
    let Some((jni, thread)) = (unsafe { args(jni, thread) }) else {
        return;
    };
    guarded("VMInit", (), |h| h.vm_init(jni, thread))
}
unsafe extern "C" fn on_vm_death(_: *mut jvmtiEnv, jni: *mut JNIEnv) {
    let Some((jni, _)) = (unsafe { args(jni, std::ptr::null_mut()) }) else {
        return;
    };
    guarded("VMDeath", (), |h| h.vm_death(jni))
}
unsafe extern "C" fn on_thread_start(_: *mut jvmtiEnv, jni: *mut JNIEnv, thread: jthread) {
    let Some((jni, thread)) = (unsafe { args(jni, thread) }) else {
        return;
    };
    guarded("ThreadStart", (), |h| h.thread_start(jni, thread))
}
unsafe extern "C" fn on_thread_end(_: *mut jvmtiEnv, jni: *mut JNIEnv, thread: jthread) {
    let Some((jni, thread)) = (unsafe { args(jni, thread) }) else {
        return;
    };
    guarded("ThreadEnd", (), |h| h.thread_end(jni, thread))
}
unsafe extern "C" fn on_class_load(
    _: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    thread: jthread,
    klass: jclass,
) {
    let Some((jni, thread)) = (unsafe { args(jni, thread) }) else {
        return;
    };
    let klass = unsafe { arg(klass) };
    guarded("ClassLoad", (), |h| h.class_load(jni, thread, klass))
}
unsafe extern "C" fn on_class_prepare(
    _: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    thread: jthread,
    klass: jclass,
) {
    let Some((jni, thread)) = (unsafe { args(jni, thread) }) else {
        return;
    };
    let klass = unsafe { arg(klass) };
    guarded("ClassPrepare", (), |h| h.class_prepare(jni, thread, klass))
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn on_class_file_load_hook(
    env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    class_being_redefined: jclass,
    loader: jobject,
    name: *const c_char,
    _protection_domain: jobject,
    len: jint,
    data: *const c_uchar,
    new_len: *mut jint,
    new_data: *mut *mut c_uchar,
) {
    let Some((jni, loader)) = (unsafe { args(jni, loader) }) else {
        return;
    };
    guarded("ClassFileLoadHook", (), |h| {
        if data.is_null() || len <= 0 || new_len.is_null() || new_data.is_null() {
            return;
        }
        // SAFETY: the VM passes `len` readable bytes at `data`, valid for the
        // duration of the callback; `name` is null or a NUL-terminated string.
        let bytes = unsafe { std::slice::from_raw_parts(data, len as usize) };
        let name = if name.is_null() {
            None
        } else {
            unsafe { CStr::from_ptr(name) }.to_str().ok()
        };
        if let Some(out) =
            h.class_file_load_hook(jni, !class_being_redefined.is_null(), loader, name, bytes)
        {
            if let Some(mem) = super::memory::allocate_copy(env, &out) {
                // SAFETY: new_len/new_data are the VM's out-parameters (checked
                // non-null above); mem is a JVMTI allocation as the spec demands.
                unsafe {
                    *new_len = out.len() as jint;
                    *new_data = mem;
                }
            }
        }
    })
}

unsafe extern "C" fn on_exception_catch(
    _: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    thread: jthread,
    method: jmethodID,
    location: jlocation,
    _exception: jobject,
) {
    let Some((jni, thread)) = (unsafe { args(jni, thread) }) else {
        return;
    };
    let method = MethodId::from_raw(method);
    guarded("ExceptionCatch", (), |h| {
        h.exception_catch(jni, thread, method, location)
    })
}
/// CompiledMethodLoad is enabled by the asynchronous sampler so that
/// HotSpot records debug information at every instruction of compiled
/// code, not only at safepoints (it does so by default while some agent
/// listens to this event: `DebugInformationRecorder`, "JVMTI may wish to
/// participate in profiling"), which the sampler needs to name inlined
/// methods; and to know which method's code lies where
/// (`async_sampler::code_map`). Nothing here can panic: a map insert.
unsafe extern "C" fn on_compiled_method_load(
    _: *mut jvmtiEnv,
    method: jmethodID,
    code_size: jint,
    code_addr: *const std::os::raw::c_void,
    _map_length: jint,
    _map: *const std::os::raw::c_void,
    _compile_info: *const std::os::raw::c_void,
) {
    super::async_sampler::code_map::loaded(
        code_addr as usize,
        code_size.max(0) as usize,
        MethodId::from_raw(method),
    );
}

/// The compiled code at `code_addr` was freed (see above).
unsafe extern "C" fn on_compiled_method_unload(
    _: *mut jvmtiEnv,
    _method: jmethodID,
    code_addr: *const std::os::raw::c_void,
) {
    super::async_sampler::code_map::unloaded(code_addr as usize);
}

unsafe extern "C" fn on_data_dump_request(_: *mut jvmtiEnv) {
    guarded("DataDumpRequest", (), |h| h.data_dump_request())
}
unsafe extern "C" fn on_monitor_wait(
    _: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    t: jthread,
    o: jobject,
    timeout: jlong,
) {
    let Some((jni, t)) = (unsafe { args(jni, t) }) else {
        return;
    };
    let o = unsafe { arg(o) };
    guarded("MonitorWait", (), |h| h.monitor_wait(jni, t, o, timeout))
}
unsafe extern "C" fn on_monitor_waited(
    _: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    t: jthread,
    o: jobject,
    timed_out: jboolean,
) {
    let Some((jni, t)) = (unsafe { args(jni, t) }) else {
        return;
    };
    let o = unsafe { arg(o) };
    guarded("MonitorWaited", (), |h| {
        h.monitor_waited(jni, t, o, timed_out != 0)
    })
}
unsafe extern "C" fn on_monitor_contended_enter(
    _: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    t: jthread,
    o: jobject,
) {
    let Some((jni, t)) = (unsafe { args(jni, t) }) else {
        return;
    };
    let o = unsafe { arg(o) };
    guarded("MonitorContendedEnter", (), |h| {
        h.monitor_contended_enter(jni, t, o)
    })
}
unsafe extern "C" fn on_monitor_contended_entered(
    _: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    t: jthread,
    o: jobject,
) {
    let Some((jni, t)) = (unsafe { args(jni, t) }) else {
        return;
    };
    let o = unsafe { arg(o) };
    guarded("MonitorContendedEntered", (), |h| {
        h.monitor_contended_entered(jni, t, o)
    })
}
unsafe extern "C" fn on_gc_start(_: *mut jvmtiEnv) {
    guarded("GarbageCollectionStart", (), |h| h.gc_start())
}
unsafe extern "C" fn on_gc_finish(_: *mut jvmtiEnv) {
    guarded("GarbageCollectionFinish", (), |h| h.gc_finish())
}
unsafe extern "C" fn on_object_free(_: *mut jvmtiEnv, tag: jlong) {
    guarded("ObjectFree", (), |h| h.object_free(tag))
}
unsafe extern "C" fn on_vm_object_alloc(
    _: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    t: jthread,
    o: jobject,
    k: jclass,
    size: jlong,
) {
    let Some((jni, t)) = (unsafe { args(jni, t) }) else {
        return;
    };
    let (o, k) = unsafe { (arg(o), arg(k)) };
    guarded("VMObjectAlloc", (), |h| {
        h.vm_object_alloc(jni, t, o, k, size)
    })
}
unsafe extern "C" fn on_sampled_object_alloc(
    _: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    t: jthread,
    o: jobject,
    k: jclass,
    size: jlong,
) {
    let Some((jni, t)) = (unsafe { args(jni, t) }) else {
        return;
    };
    let (o, k) = unsafe { (arg(o), arg(k)) };
    guarded("SampledObjectAlloc", (), |h| {
        h.sampled_object_alloc(jni, t, o, k, size)
    })
}
