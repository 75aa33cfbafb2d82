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

/// A weak global reference to `obj` (kept by the caller for as long as it
/// wants to recognise the object with [`is_same_object`]).
pub fn new_weak_ref(raw: *mut JNIEnv, obj: jobject) -> Option<jni::objects::WeakRef> {
    let env = env(raw)?;
    // SAFETY: obj is a live local reference on this thread; JObject is a
    // borrowed view that does not delete the reference when dropped.
    let o = unsafe { JObject::from_raw(obj) };
    env.new_weak_ref(&o).ok().flatten()
}

/// JNI IsSameObject: true if `a` and `b` (local, global or weak references,
/// valid on this thread) denote the same object. A cleared weak reference
/// equals only null.
pub fn is_same_object(raw: *mut JNIEnv, a: jobject, b: jobject) -> bool {
    let Some(env) = env(raw) else { return false };
    // SAFETY: both are valid references (caller); the views never delete them.
    let (a, b) = unsafe { (JObject::from_raw(a), JObject::from_raw(b)) };
    env.is_same_object(&a, &b).unwrap_or(false)
}
