//! The `HPROF listener thread`: an agent thread (RunAgentThread) that reads
//! commands from the front-end's socket and hands each to
//! `control::commands::execute`, until EOF, a closed or broken connection,
//! a malformed command, or VM death.
//!
//! At VM death the agent shuts the socket's reading side down, which wakes
//! the blocked read (it returns 0 bytes: end of commands), and waits for the
//! thread to finish; after the writer's last flush the socket is shut down in
//! both directions so the front-end sees the end of the stream.

use crate::agent::{threads, Agent};
use crate::control::commands::{execute, Flow};
use crate::jvmti::sys::{jvmtiEnv, JNIEnv};
use crate::protocol::{CommandError, CommandReader};
use parking_lot::Mutex;
use std::cell::Cell;
use std::io::BufReader;
use std::net::{Shutdown, TcpStream};
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub const THREAD_NAME: &str = "HPROF listener thread";

/// Listener state, part of the agent.
#[derive(Default)]
pub struct NetState {
    /// A second handle on the output socket: read by the listener, shut
    /// down at VM death.
    socket: Mutex<Option<TcpStream>>,
    running: AtomicBool,
    stop: AtomicBool,
}

impl NetState {
    pub fn new(socket: Option<TcpStream>) -> Self {
        NetState {
            socket: Mutex::new(socket),
            ..Default::default()
        }
    }

    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }
}

thread_local! {
    /// True on the listener thread (VM death may run there after EXIT).
    static ON_LISTENER: Cell<bool> = const { Cell::new(false) };
}

/// Start the listener (VM init, only with `net=`).
pub fn start(agent: &'static Agent, jni: *mut JNIEnv) -> Result<(), String> {
    if agent.net.socket.lock().is_none() {
        return Err("no socket to read commands from".into());
    }
    let thread = crate::jvmti::jni::new_thread_object(jni, THREAD_NAME)
        .ok_or("cannot create the listener's Thread object")?;
    // An agent thread: never sampled, no THREAD START.
    threads::register(agent, jni, thread, true, false);
    agent.net.running.store(true, Ordering::Release);
    let r = agent.jvmti.run_agent_thread(
        thread,
        listener_main,
        std::ptr::null_mut(),
        crate::jvmti::sys::JVMTI_THREAD_MAX_PRIORITY,
    );
    crate::jvmti::jni::delete_local_ref(jni, thread);
    // The front-end sees the header (and CONTROL SETTINGS) at once rather
    // than when the first 64 KiB of output have accumulated.
    agent.out.flush();
    r.map_err(|e| {
        agent.net.running.store(false, Ordering::Release);
        e.to_string()
    })
}

/// VM death, before the writer stops: wake the listener and wait (bounded)
/// until it has finished. Does not wait when called on the listener itself
/// (VM death after an EXIT command).
pub fn stop(agent: &Agent) {
    agent.net.stop.store(true, Ordering::Release);
    if ON_LISTENER.with(|c| c.get()) {
        return;
    }
    if let Some(s) = agent.net.socket.lock().as_ref() {
        let _ = s.shutdown(Shutdown::Read);
    }
    let start = Instant::now();
    while agent.net.running.load(Ordering::Acquire) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// VM death, after the writer's last flush: end the stream for the peer.
pub fn close(agent: &Agent) {
    if let Some(s) = agent.net.socket.lock().take() {
        let _ = s.shutdown(Shutdown::Both);
    }
}

/// VM death stopped the listener: say whether commands the front-end sent
/// are left unexecuted (read into our buffer, or still in the socket).
fn report_unread(reader: &BufReader<TcpStream>) {
    let buffered = reader.buffer().len();
    let socket = reader.get_ref();
    let mut waiting = 0;
    if socket.set_nonblocking(true).is_ok() {
        let mut probe = vec![0u8; 64 * 1024];
        waiting = socket.peek(&mut probe).unwrap_or(0);
    }
    let unread = buffered + waiting;
    if unread > 0 {
        crate::diag::rejected(&format!(
            "the VM is exiting: {unread} bytes of socket commands were received but not executed"
        ));
    }
}

unsafe extern "C" fn listener_main(_env: *mut jvmtiEnv, jni: *mut JNIEnv, _arg: *mut c_void) {
    let Some(agent) = crate::agent::agent() else {
        return;
    };
    ON_LISTENER.with(|c| c.set(true));
    if catch_unwind(AssertUnwindSafe(|| run(agent, jni))).is_err() {
        crate::diag::error("internal error in the listener thread; commands are no longer read");
    }
    agent.net.running.store(false, Ordering::Release);
}

fn run(agent: &'static Agent, jni: *mut JNIEnv) {
    let stream = match agent.net.socket.lock().as_ref().map(|s| s.try_clone()) {
        Some(Ok(s)) => s,
        _ => return,
    };
    let mut reader = CommandReader::new(BufReader::new(stream));
    let verbose = agent.opts.verbose;
    loop {
        if agent.net.stop.load(Ordering::Acquire) {
            report_unread(reader.get_ref());
            return;
        }
        match reader.next_command() {
            Ok(cmd) if agent.gate.is_closed() => {
                // VM death began after the read: the command cannot run.
                crate::diag::rejected(&format!(
                    "the VM is exiting: socket command {cmd:?} not executed"
                ));
                report_unread(reader.get_ref());
                return;
            }
            Ok(cmd) => {
                if execute(agent, jni, cmd) == Flow::Stop {
                    return;
                }
            }
            Err(CommandError::Closed) => {
                if agent.net.stop.load(Ordering::Acquire) {
                    report_unread(reader.get_ref());
                } else {
                    crate::diag::verbose(
                        verbose,
                        "HPROF: front-end closed the command stream; listener stopped\n",
                    );
                }
                return;
            }
            Err(CommandError::Io(_)) if agent.net.stop.load(Ordering::Acquire) => {
                report_unread(reader.get_ref());
                return;
            }
            Err(e) => {
                crate::diag::rejected(&format!(
                    "{e}; no further commands are read (profiling and output continue)"
                ));
                return;
            }
        }
    }
}
