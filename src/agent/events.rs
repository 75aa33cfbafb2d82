//! The JVMTI event handler: gate, then dispatch to the lifecycle code and
//! the profiles.

use super::{agent, classes, lifecycle, threads};
use crate::jvmti::sys::{jclass, jobject, jthread, JNIEnv};
use crate::profile::alloc_sites;
use crate::jvmti::EventHandler;

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

    fn thread_end(&self, _jni: *mut JNIEnv, thread: jthread) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        threads::end(a, thread);
    }

    fn class_load(&self, _jni: *mut JNIEnv, thread: jthread, klass: jclass) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        let serial = threads::known_serial(a, thread).unwrap_or(0);
        let trace = super::stacks::thread_trace(a, std::ptr::null_mut(), serial).unwrap_or(a.system_trace());
        classes::ensure(a, klass, trace);
    }

    fn sampled_object_alloc(&self, jni: *mut JNIEnv, thread: jthread, obj: jobject, klass: jclass, size: i64) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        alloc_sites::on_alloc(a, jni, thread, obj, klass, size, false);
    }

    fn vm_object_alloc(&self, jni: *mut JNIEnv, thread: jthread, obj: jobject, klass: jclass, size: i64) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        alloc_sites::on_alloc(a, jni, thread, obj, klass, size, true);
    }

    fn object_free(&self, tag: i64) {
        // No gate: frees only touch agent tables, which outlive the VM's
        // last callback, and skipping one would leave a live count too high.
        if let Some(a) = agent() {
            alloc_sites::on_free(a, tag);
        }
    }

    fn data_dump_request(&self) {
        let Some(a) = agent() else { return };
        let Some(_pass) = a.gate.enter() else { return };
        crate::control::dump::full_dump(a, std::ptr::null_mut());
    }
}
