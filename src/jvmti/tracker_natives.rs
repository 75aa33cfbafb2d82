//! The native methods of the Tracker class (profiles.md §2.1): the injected
//! byte code calls `Tracker.CallSite(cnum, mnum)` and friends, which call
//! these JNI entry points with the current Thread. Each one runs the
//! profile's handler inside `catch_unwind`, so a panic never unwinds into
//! the JVM.

use super::sys::{jclass, jint, jobject, JNIEnv};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// What the agent does when instrumented code reports an event. Defaults
/// do nothing, so a profile implements only what it injected.
#[allow(unused_variables)]
pub trait TrackerCalls: Send + Sync {
    /// Method entry (`CallSite`): class and method numbers of the method.
    fn call_site(&self, jni: *mut JNIEnv, thread: jobject, cnum: u32, mnum: u32) {}
    /// Just before a return instruction (`ReturnSite`).
    fn return_site(&self, jni: *mut JNIEnv, thread: jobject, cnum: u32, mnum: u32) {}
    /// Start of `Object.<init>` (`ObjectInit`).
    fn object_init(&self, jni: *mut JNIEnv, thread: jobject, obj: jobject) {}
    /// After an array allocation (`NewArray`).
    fn new_array(&self, jni: *mut JNIEnv, thread: jobject, obj: jobject) {}
}

static CALLS: OnceLock<&'static dyn TrackerCalls> = OnceLock::new();

/// Internal name of the class whose natives the exported symbols below
/// implement (`Java_<mangled class>_<method>`, JNI's naming scheme).
pub const TRACKER_CLASS: &str = "java/lang/HprofTracker";

/// Install the handler (once per process). The natives are bound by the
/// JVM itself: HotSpot looks up `Java_...` symbols in agent libraries
/// when it links a native method. RegisterNatives would work too, but on
/// JDK 15+ it logs a warning on stdout for classes of named modules
/// (`Re-registering of platform native method`), which would change the
/// program's output.
pub fn install(calls: &'static dyn TrackerCalls) {
    let _ = CALLS.set(calls);
}

#[inline]
fn run(what: &str, f: impl FnOnce(&'static dyn TrackerCalls)) {
    let Some(calls) = CALLS.get().copied() else {
        return;
    };
    if catch_unwind(AssertUnwindSafe(|| f(calls))).is_err() {
        crate::diag::error(&format!("internal error in Tracker.{what}; call ignored"));
    }
}

#[no_mangle]
pub extern "system" fn Java_java_lang_HprofTracker_nativeCallSite(
    jni: *mut JNIEnv,
    _cls: jclass,
    thread: jobject,
    cnum: jint,
    mnum: jint,
) {
    run("CallSite", |c| {
        c.call_site(jni, thread, cnum as u32, mnum as u32)
    })
}

#[no_mangle]
pub extern "system" fn Java_java_lang_HprofTracker_nativeReturnSite(
    jni: *mut JNIEnv,
    _cls: jclass,
    thread: jobject,
    cnum: jint,
    mnum: jint,
) {
    run("ReturnSite", |c| {
        c.return_site(jni, thread, cnum as u32, mnum as u32)
    })
}

#[no_mangle]
pub extern "system" fn Java_java_lang_HprofTracker_nativeObjectInit(
    jni: *mut JNIEnv,
    _cls: jclass,
    thread: jobject,
    obj: jobject,
) {
    run("ObjectInit", |c| c.object_init(jni, thread, obj))
}

#[no_mangle]
pub extern "system" fn Java_java_lang_HprofTracker_nativeNewArray(
    jni: *mut JNIEnv,
    _cls: jclass,
    thread: jobject,
    obj: jobject,
) {
    run("NewArray", |c| c.new_array(jni, thread, obj))
}
