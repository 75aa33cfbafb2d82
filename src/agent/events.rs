//! The JVMTI event handler: gate, then dispatch to the lifecycle code and
//! the profiles.

use super::{agent, classes, lifecycle, threads};
use crate::jvmti::sys::{jclass, jmethodID, jobject, jthread, JNIEnv};
use crate::jvmti::EventHandler;
use crate::profile::{alloc_sites, monitors};

pub struct Handler;

impl EventHandler for Handler {
    fn vm_init(&self, jni: *mut JNIEnv, thread: jthread) {
        if let Some(a) = agent() {
            lifecycle::vm_init(a, jni, thread);
        }
    }

    fn vm_death(&self, jni: *mut JNIEnv) {
        if let Some(a) = agent() {
            lifecycle::vm_death(a, jni);
        }
    }

    fn thread_start(&self, jni: *mut JNIEnv, thread: jthread) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        threads::register(a, jni, thread, false, true);
    }

    fn thread_end(&self, jni: *mut JNIEnv, thread: jthread) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        if a.opts.cpu_timing() {
            crate::profile::cpu_times::thread_end(a, jni);
        }
        threads::end(a, thread);
    }

    fn class_load(&self, _jni: *mut JNIEnv, thread: jthread, klass: jclass) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        let serial = threads::known_serial(a, thread).unwrap_or(0);
        let trace = super::stacks::thread_trace(a, std::ptr::null_mut(), serial)
            .unwrap_or(a.system_trace());
        classes::ensure(a, klass, trace);
    }

    fn sampled_object_alloc(
        &self,
        jni: *mut JNIEnv,
        thread: jthread,
        obj: jobject,
        klass: jclass,
        size: i64,
    ) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        alloc_sites::on_alloc(a, jni, thread, obj, klass, size, false);
    }

    fn vm_object_alloc(
        &self,
        jni: *mut JNIEnv,
        thread: jthread,
        obj: jobject,
        klass: jclass,
        size: i64,
    ) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        alloc_sites::on_alloc(a, jni, thread, obj, klass, size, true);
    }

    fn gc_finish(&self) {
        // No gate and no lock: only an atomic counter (JVMTI allows little
        // else in this event).
        if let Some(a) = agent() {
            alloc_sites::on_gc_finish(a);
        }
    }

    fn object_free(&self, tag: i64) {
        // No gate: frees only touch agent tables, which outlive the VM's
        // last callback, and skipping one would leave a live count too high.
        if let Some(a) = agent() {
            alloc_sites::on_free(a, tag);
        }
    }

    fn monitor_contended_enter(&self, jni: *mut JNIEnv, thread: jthread, obj: jobject) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        monitors::contended_enter(a, jni, thread, obj);
    }

    /// Runs while the thread already owns the monitor: no gate, no lookup
    /// (only the thread's own slot and two atomic adds).
    fn monitor_contended_entered(&self, _jni: *mut JNIEnv, _thread: jthread, _obj: jobject) {
        monitors::contended_entered();
    }

    fn monitor_wait(&self, jni: *mut JNIEnv, thread: jthread, obj: jobject, timeout_ms: i64) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        monitors::wait(a, jni, thread, obj, timeout_ms);
    }

    fn monitor_waited(&self, _jni: *mut JNIEnv, _thread: jthread, _obj: jobject, _timed_out: bool) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        monitors::waited(a);
    }

    fn class_file_load_hook(
        &self,
        _jni: *mut JNIEnv,
        _redefining: bool,
        _loader: jobject,
        name: Option<&str>,
        bytes: &[u8],
    ) -> Option<Vec<u8>> {
        let a = agent()?;
        if a.opts.cpu_timing() {
            return crate::profile::cpu_times::class_file_load_hook(name, bytes);
        }
        None
    }

    fn exception_catch(
        &self,
        jni: *mut JNIEnv,
        thread: jthread,
        method: jmethodID,
        _location: i64,
    ) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        if a.opts.cpu_timing() {
            crate::profile::cpu_times::exception_catch(a, jni, thread, method);
        }
    }

    fn data_dump_request(&self) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        crate::control::dump::full_dump(a, std::ptr::null_mut());
    }
}
