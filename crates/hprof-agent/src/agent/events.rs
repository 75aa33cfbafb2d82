//! The JVMTI event handler: the callback gate, the vm floor's own
//! bookkeeping (threads, classes), then the profiles the event is routed to.

use super::{agent, lifecycle, Agent};
use crate::jvmti::{EventHandler, Jni, MethodId, Obj};
use crate::profile::Event;
use crate::vm::{stacks, threads};

pub struct Handler;

/// The agent, with a pass through the callback gate (None once VM death
/// has closed it).
fn entered() -> Option<(&'static Agent, crate::vm::gate::Pass<'static>)> {
    let a = agent()?;
    let pass = a.ctx.gate.enter()?;
    Some((a, pass))
}

impl EventHandler for Handler {
    fn vm_init(&self, jni: Jni<'_>, thread: Obj<'_>) {
        if let Some(a) = agent() {
            lifecycle::vm_init(a, jni, thread);
        }
    }

    fn vm_death(&self, jni: Jni<'_>) {
        if let Some(a) = agent() {
            lifecycle::vm_death(a, jni);
        }
    }

    fn thread_start(&self, jni: Jni<'_>, thread: Obj<'_>) {
        let Some((a, _pass)) = entered() else { return };
        threads::start_own(&a.ctx, jni, thread);
        for p in &a.profiles {
            p.thread_start(&a.ctx, jni, thread);
        }
    }

    fn thread_end(&self, jni: Jni<'_>, thread: Obj<'_>) {
        let Some((a, _pass)) = entered() else { return };
        for p in a.routed(Event::ThreadEnd) {
            p.thread_end(&a.ctx, jni, thread);
        }
        threads::end(&a.ctx, thread);
        // Last: its CPU-time timer (profiles may still have read its clock).
        a.ctx.cpu_timers.thread_end();
    }

    fn class_load(&self, jni: Jni<'_>, thread: Obj<'_>, klass: Obj<'_>) {
        let Some((a, _pass)) = entered() else { return };
        let ctx = &a.ctx;
        let serial = threads::own_serial(ctx, thread).unwrap_or(0);
        let trace =
            stacks::thread_trace(ctx, jni, Obj::null(), serial).unwrap_or(ctx.system_trace());
        crate::vm::classes::ensure(ctx, klass, trace);
    }

    fn class_prepare(&self, jni: Jni<'_>, _thread: Obj<'_>, klass: Obj<'_>) {
        let Some((a, _pass)) = entered() else { return };
        for p in a.routed(Event::ClassPrepare) {
            p.class_prepare(&a.ctx, jni, klass);
        }
    }

    fn sampled_object_alloc(
        &self,
        jni: Jni<'_>,
        thread: Obj<'_>,
        obj: Obj<'_>,
        klass: Obj<'_>,
        size: i64,
    ) {
        let Some((a, _pass)) = entered() else { return };
        for p in a.routed(Event::SampledObjectAlloc) {
            p.object_alloc(&a.ctx, jni, thread, obj, klass, size, false);
        }
    }

    fn vm_object_alloc(
        &self,
        jni: Jni<'_>,
        thread: Obj<'_>,
        obj: Obj<'_>,
        klass: Obj<'_>,
        size: i64,
    ) {
        let Some((a, _pass)) = entered() else { return };
        for p in a.routed(Event::VmObjectAlloc) {
            p.object_alloc(&a.ctx, jni, thread, obj, klass, size, true);
        }
    }

    fn gc_finish(&self) {
        // No gate and no lock: JVMTI allows little in this event.
        if let Some(a) = agent() {
            for p in a.routed(Event::GcFinish) {
                p.gc_finish(&a.ctx);
            }
        }
    }

    fn object_free(&self, tag: i64) {
        // No gate: frees only touch agent tables, which outlive the VM's
        // last callback, and skipping one would leave a live count too high.
        if let Some(a) = agent() {
            for p in a.routed(Event::ObjectFree) {
                p.object_free(&a.ctx, tag);
            }
        }
    }

    fn monitor_contended_enter(&self, jni: Jni<'_>, thread: Obj<'_>, obj: Obj<'_>) {
        let Some((a, _pass)) = entered() else { return };
        for p in a.routed(Event::MonitorContendedEnter) {
            p.monitor_contended_enter(&a.ctx, jni, thread, obj);
        }
    }

    /// Runs while the thread already owns the monitor: no gate.
    fn monitor_contended_entered(&self, _jni: Jni<'_>, _thread: Obj<'_>, _obj: Obj<'_>) {
        if let Some(a) = agent() {
            for p in a.routed(Event::MonitorContendedEntered) {
                p.monitor_contended_entered(&a.ctx);
            }
        }
    }

    fn monitor_wait(&self, jni: Jni<'_>, thread: Obj<'_>, obj: Obj<'_>, timeout_ms: i64) {
        let Some((a, _pass)) = entered() else { return };
        for p in a.routed(Event::MonitorWait) {
            p.monitor_wait(&a.ctx, jni, thread, obj, timeout_ms);
        }
    }

    fn monitor_waited(&self, _jni: Jni<'_>, _thread: Obj<'_>, _obj: Obj<'_>, _timed_out: bool) {
        let Some((a, _pass)) = entered() else { return };
        for p in a.routed(Event::MonitorWaited) {
            p.monitor_waited(&a.ctx);
        }
    }

    fn class_file_load_hook(
        &self,
        _jni: Jni<'_>,
        _redefining: bool,
        _loader: Obj<'_>,
        name: Option<&str>,
        bytes: &[u8],
    ) -> Option<Vec<u8>> {
        let a = agent()?;
        a.routed(Event::ClassFileLoadHook)
            .find_map(|p| p.class_file_load_hook(&a.ctx, name, bytes))
    }

    fn exception_catch(&self, jni: Jni<'_>, thread: Obj<'_>, method: MethodId, _location: i64) {
        let Some((a, _pass)) = entered() else { return };
        for p in a.routed(Event::ExceptionCatch) {
            p.exception_catch(&a.ctx, jni, thread, method);
        }
    }

    fn data_dump_request(&self) {
        let Some((a, _pass)) = entered() else { return };
        // DataDumpRequest comes without a JNIEnv: the thread's own.
        crate::jvmti::with_current_jni(|jni| {
            if let Some(jni) = jni {
                crate::control::dump::full_dump(&a.ctx, &a.profiles, jni);
            }
        });
    }
}
