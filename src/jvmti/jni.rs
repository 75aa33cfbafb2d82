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
            .new_object(
                "java/lang/Thread",
                "(Ljava/lang/String;)V",
                &[JValue::Object(&JObject::from(jname))],
            )
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
            .call_static_method(
                "java/lang/Runtime",
                "getRuntime",
                "()Ljava/lang/Runtime;",
                &[],
            )
            .ok()?
            .l()
            .ok()?;
        env.call_method(&rt, "maxMemory", "()J", &[]).ok()?.j().ok()
    })();
    clear(&mut env);
    result
}

/// `System.exit(status)` (socket EXIT command). Returns only if the call
/// could not be made; otherwise VM death runs on this thread and the VM halts.
pub fn system_exit(raw: *mut JNIEnv, status: i32) {
    let Some(mut env) = env(raw) else { return };
    let _ = env.call_static_method("java/lang/System", "exit", "(I)V", &[JValue::Int(status)]);
    clear(&mut env);
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

/// The process's JavaVM, stored at Agent_OnLoad so threads that receive no
/// JNIEnv with their event (DataDumpRequest) can get theirs.
static VM: std::sync::atomic::AtomicPtr<super::sys::JavaVM> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

pub fn set_vm(vm: *mut super::sys::JavaVM) {
    VM.store(vm, std::sync::atomic::Ordering::Release);
}

/// The JavaVM stored at Agent_OnLoad (null before).
pub fn java_vm() -> *mut super::sys::JavaVM {
    VM.load(std::sync::atomic::Ordering::Acquire)
}

/// The JNIEnv of the current thread if the VM knows it (null otherwise).
pub fn current_env() -> *mut JNIEnv {
    let vm = VM.load(std::sync::atomic::Ordering::Acquire);
    if vm.is_null() {
        return std::ptr::null_mut();
    }
    let mut env: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: vm is the live JavaVM handed to Agent_OnLoad (valid for the
    // process); GetEnv only writes the env pointer for the calling thread.
    let rc = unsafe {
        match (**vm).GetEnv {
            Some(get_env) => get_env(vm, &mut env, jni::sys::JNI_VERSION_1_6),
            None => -1,
        }
    };
    if rc == 0 {
        env as *mut JNIEnv
    } else {
        std::ptr::null_mut()
    }
}

/// Superclass of a class as a local reference (null for java.lang.Object,
/// interfaces and primitive types).
pub fn superclass(raw: *mut JNIEnv, klass: super::sys::jclass) -> super::sys::jclass {
    let Some(mut env) = env(raw) else {
        return std::ptr::null_mut();
    };
    // SAFETY: klass is a live class reference on this thread; the wrapper
    // borrows it and must not delete it.
    let k = unsafe { jni::objects::JClass::from_raw(klass) };
    let r = match env.get_superclass(&k) {
        Ok(Some(s)) => s.into_raw(),
        _ => std::ptr::null_mut(),
    };
    clear(&mut env);
    std::mem::forget(k);
    r
}

/// Define a class from `bytes` in the bootstrap class loader (JNI
/// DefineClass with a null loader); a global reference to it, kept for the
/// life of the process. Any pending exception (e.g. the class exists
/// already) is cleared and reported as `Err` with its text.
pub fn define_boot_class(
    raw: *mut JNIEnv,
    name: &str,
    bytes: &[u8],
) -> Result<jni::objects::GlobalRef, String> {
    let mut env = env(raw).ok_or("no JNIEnv")?;
    let r = env
        .define_class(name, &JObject::null(), bytes)
        .and_then(|c| env.new_global_ref(c));
    if env.exception_check().unwrap_or(false) {
        let _ = env.exception_describe();
    }
    clear(&mut env);
    r.map_err(|e| e.to_string())
}

/// JNI IsSameObject.
pub fn is_same_object(raw: *mut JNIEnv, a: jobject, b: jobject) -> bool {
    let Some(env) = env(raw) else { return false };
    // SAFETY: borrowed live references; forgotten below, never deleted here.
    let (x, y) = unsafe { (JObject::from_raw(a), JObject::from_raw(b)) };
    let r = env.is_same_object(&x, &y).unwrap_or(false);
    std::mem::forget(x);
    std::mem::forget(y);
    r
}

/// Call a static void method of `class` (any access) with int/object
/// arguments; any exception it throws is cleared and reported as `Err`.
pub fn call_static_void(
    raw: *mut JNIEnv,
    class: jobject,
    name: &str,
    sig: &str,
    args: &[JValue<'_, '_>],
) -> Result<(), String> {
    let mut env = env(raw).ok_or("no JNIEnv")?;
    // SAFETY: a borrowed live class reference.
    let class_obj = unsafe { jni::objects::JClass::from_raw(class) };
    let r = env
        .call_static_method(&class_obj, name, sig, args)
        .map(|_| ());
    std::mem::forget(class_obj);
    let threw = env.exception_check().unwrap_or(false);
    clear(&mut env);
    match r {
        Ok(()) if !threw => Ok(()),
        Ok(()) => Err("exception".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Link `klass` without initializing it: `Class.getDeclaredFields()` links
/// the class before it answers (HotSpot's JVM_GetClassDeclaredFields) and
/// runs none of the class's code. The array it returns is dropped; any
/// exception (a linkage error) is cleared. Returns whether it succeeded.
pub fn link_class(raw: *mut JNIEnv, klass: super::sys::jclass) -> bool {
    let Some(mut env) = env(raw) else {
        return false;
    };
    // SAFETY: klass is a live class reference on this thread, borrowed for
    // the call (forgotten below, never deleted here).
    let k = unsafe { JObject::from_raw(klass) };
    let r = env.call_method(&k, "getDeclaredFields", "()[Ljava/lang/reflect/Field;", &[]);
    std::mem::forget(k);
    let threw = env.exception_check().unwrap_or(false);
    clear(&mut env);
    match r {
        Ok(v) => {
            if let Ok(arr) = v.l() {
                let _ = env.delete_local_ref(arr);
            }
            !threw
        }
        Err(_) => false,
    }
}

/// The method ID of `class.name(sig)` (JNI FindClass + GetMethodID); None
/// if either fails (the exception is cleared).
pub fn method_id(
    raw: *mut JNIEnv,
    class: &str,
    name: &str,
    sig: &str,
) -> Option<super::sys::jmethodID> {
    let mut env = env(raw)?;
    let c = env.find_class(class);
    let r = match c {
        Ok(c) => {
            let m = env.get_method_id(&c, name, sig);
            let _ = env.delete_local_ref(c);
            m
        }
        Err(e) => Err(e),
    };
    clear(&mut env);
    r.ok().map(|m| m.into_raw() as super::sys::jmethodID)
}
