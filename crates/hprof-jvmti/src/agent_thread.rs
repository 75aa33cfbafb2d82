//! Agent threads (RunAgentThread) with one discipline for all of them: a
//! `running` flag, a stop request, a panic boundary, and a bounded wait for
//! the thread to finish. Every thread the agent starts goes through
//! [`AgentThread::start`].

use super::env::Jvmti;
use super::refs::{Jni, Obj};
use super::sys::{jvmtiEnv, JNIEnv};
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// One agent thread's name and state. Lives in a `'static` place (the
/// agent's profiles or a static), since the thread refers to it.
pub struct AgentThread {
    name: &'static str,
    running: AtomicBool,
    stop: AtomicBool,
}

/// What the trampoline runs: the thread's state and its body.
struct Job {
    thread: &'static AgentThread,
    body: Box<dyn FnOnce(Jni<'_>) + Send>,
}

/// Agent threads started and not yet finished, in all sessions: a stopped
/// profile gives its JVMTI environment back only when none is left.
static ALIVE: AtomicUsize = AtomicUsize::new(0);

/// How many agent threads are still running (or about to start).
pub fn alive() -> usize {
    ALIVE.load(Ordering::Acquire)
}

/// Clears `running` however the body ends.
struct Running(&'static AgentThread);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.store(false, Ordering::Release);
        ALIVE.fetch_sub(1, Ordering::AcqRel);
    }
}

impl AgentThread {
    pub const fn new(name: &'static str) -> AgentThread {
        AgentThread {
            name,
            running: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Start `body` on a new agent thread. `register` sees the new Thread
    /// object before the thread runs (so the agent knows it as its own and
    /// never samples it or announces it). Fails if it is running already.
    pub fn start(
        &'static self,
        jvmti: &Jvmti,
        jni: Jni<'_>,
        priority: i32,
        register: impl FnOnce(Obj<'_>),
        body: impl FnOnce(Jni<'_>) + Send + 'static,
    ) -> Result<(), String> {
        if self.running.swap(true, Ordering::AcqRel) {
            return Err(format!("the {} is running already", self.name));
        }
        self.stop.store(false, Ordering::Release);
        let Some(thread) = super::jni::new_thread_object(jni, self.name) else {
            self.running.store(false, Ordering::Release);
            return Err(format!("cannot create the {}'s Thread object", self.name));
        };
        register(thread.obj());
        let job = Box::into_raw(Box::new(Job {
            thread: self,
            body: Box::new(body),
        }));
        ALIVE.fetch_add(1, Ordering::AcqRel);
        let r = jvmti.run_agent_thread(thread.raw(), trampoline, job as *mut c_void, priority);
        if let Err(e) = r {
            ALIVE.fetch_sub(1, Ordering::AcqRel);
            // SAFETY: the VM did not start the thread, so the job was not
            // taken: it is still ours, exactly once.
            drop(unsafe { Box::from_raw(job) });
            self.running.store(false, Ordering::Release);
            return Err(e.to_string());
        }
        Ok(())
    }

    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// Set by [`stop`](Self::stop); the body checks it between rounds.
    pub fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Ask the thread to stop, run `wake` (notify what it waits on), and
    /// wait up to `limit` until it has finished. True if it is not running.
    pub fn stop(&self, wake: impl FnOnce(), limit: Duration) -> bool {
        self.stop.store(true, Ordering::Release);
        wake();
        let start = Instant::now();
        while self.is_running() {
            if start.elapsed() >= limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }
}

unsafe extern "C" fn trampoline(_env: *mut jvmtiEnv, raw: *mut JNIEnv, arg: *mut c_void) {
    // SAFETY: arg is the Job leaked by `start` for this one thread start.
    let job = unsafe { Box::from_raw(arg as *mut Job) };
    let thread = job.thread;
    let _running = Running(thread);
    // SAFETY: raw is this agent thread's JNIEnv, valid while it runs.
    let Some(jni) = (unsafe { Jni::from_raw(raw) }) else {
        return;
    };
    let body = job.body;
    // Everything this thread does is the agent's work.
    let _agent_code = super::own_work::enter();
    if catch_unwind(AssertUnwindSafe(|| body(jni))).is_err() {
        crate::diag::error(&format!(
            "internal error in the {}; it stopped",
            thread.name
        ));
    }
}
