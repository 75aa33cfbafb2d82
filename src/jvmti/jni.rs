//! The handful of JNI operations the agent performs, through the `jni`
//! crate. Raw `JNIEnv` pointers arrive with events and agent-thread starts;
//! they are valid only on the thread they were handed to.

use super::sys::{jobject, jthread, JNIEnv};
use jni::objects::{JObject, JValue};

/// Borrow the event's JNIEnv as the `jni` crate's safe type.
fn env<'a>(raw: *mut JNIEnv) -> Option<jni::JNIEnv<'a>> {
    if raw.is_null() {
        return None;
    }
    // SAFETY: raw is the JNIEnv the VM handed to the current thread's
    // callback or agent-thread entry; it is valid on this thread for the
    // duration of that call, which outlives every use below.
    unsafe { jni::JNIEnv::from_raw(raw) }.ok()
}

/// Drop any Java exception our JNI call raised: an agent must never leave
/// one pending in the application's thread.
fn clear(env: &mut jni::JNIEnv<'_>) {
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_clear();
    }
}

/// A new, unstarted `java.lang.Thread` named `name`, as a local reference,
/// for RunAgentThread.
pub fn new_thread_object(raw: *mut JNIEnv, name: &str) -> Option<jthread> {
    let mut env = env(raw)?;
    let result = (|| {
        let jname = env.new_string(name).ok()?;
        let t = env
            .new_object("java/lang/Thread", "(Ljava/lang/String;)V", &[JValue::Object(&JObject::from(jname))])
            .ok()?;
        Some(t.into_raw())
    })();
    clear(&mut env);
    result
}

/// `Runtime.getRuntime().maxMemory()`, which picks the binary header version.
pub fn runtime_max_memory(raw: *mut JNIEnv) -> Option<i64> {
    let mut env = env(raw)?;
    let result = (|| {
        let rt = env
            .call_static_method("java/lang/Runtime", "getRuntime", "()Ljava/lang/Runtime;", &[])
            .ok()?
            .l()
            .ok()?;
        env.call_method(&rt, "maxMemory", "()J", &[]).ok()?.j().ok()
    })();
    clear(&mut env);
    result
}

/// Global reference that outlives the callback (e.g. agent thread objects).
pub fn new_global_ref(raw: *mut JNIEnv, obj: jobject) -> Option<jni::objects::GlobalRef> {
    let env = env(raw)?;
    // SAFETY: obj is a live local or global reference on this thread.
    let o = unsafe { JObject::from_raw(obj) };
    let g = env.new_global_ref(&o).ok();
    std::mem::forget(o); // borrowed, not owned: must not be deleted here
    g
}

pub fn delete_local_ref(raw: *mut JNIEnv, obj: jobject) {
    if obj.is_null() {
        return;
    }
    if let Some(env) = env(raw) {
        // SAFETY: obj is a local reference owned by this native frame.
        let _ = env.delete_local_ref(unsafe { JObject::from_raw(obj) });
    }
}

/// Run `f` inside a JNI local frame so local refs it creates (e.g. from
/// GetAllThreads) are released in one go.
pub fn with_local_frame<R>(raw: *mut JNIEnv, capacity: i32, f: impl FnOnce() -> R) -> R {
    let Some(env) = env(raw) else { return f() };
    // SAFETY-free: push/pop are plain JNI calls; pop with a null result.
    let pushed = env.push_local_frame(capacity).is_ok();
    let r = f();
    if pushed {
        // SAFETY: we pushed exactly one frame above on this thread.
        let _ = unsafe { env.pop_local_frame(&JObject::null()) };
    }
    r
}

/// The class of `obj` as a local reference (JNI GetObjectClass).
pub fn object_class(raw: *mut JNIEnv, obj: jobject) -> Option<jni::sys::jclass> {
    if obj.is_null() {
        return None;
    }
    let env = env(raw)?;
    // SAFETY: obj is a live local or global reference on this thread,
    // borrowed for the call (JObject has no Drop: nothing deletes it).
    let o = unsafe { JObject::from_raw(obj) };
    env.get_object_class(&o).ok().map(|k| k.into_raw())
}

static VM: std::sync::atomic::AtomicPtr<super::sys::JavaVM> = std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

/// Remember the JavaVM (Agent_OnLoad) so callbacks that get no JNIEnv
/// (DataDumpRequest) can fetch the current thread's.
pub fn remember_vm(vm: *mut super::sys::JavaVM) {
    VM.store(vm, std::sync::atomic::Ordering::Release);
}

/// The JNIEnv of the current thread, or null if the thread is not attached
/// to the VM (or no VM was remembered).
pub fn current_env() -> *mut JNIEnv {
    const JNI_VERSION_1_6: i32 = 0x0001_0006;
    let vm = VM.load(std::sync::atomic::Ordering::Acquire);
    if vm.is_null() {
        return std::ptr::null_mut();
    }
    let mut env: *mut std::os::raw::c_void = std::ptr::null_mut();
    // SAFETY: vm is the JavaVM handed to Agent_OnLoad, valid for the life of
    // the process; GetEnv only writes the env pointer for this thread.
    let rc = unsafe {
        match (**vm).GetEnv {
            Some(get_env) => get_env(vm, &mut env, JNI_VERSION_1_6),
            None => -1,
        }
    };
    if rc == 0 {
        env as *mut JNIEnv
    } else {
        std::ptr::null_mut()
    }
}
