//! The `HPROF listener thread`: an agent thread (RunAgentThread) that reads
//! commands from the front-end's socket and hands each to
//! `control::commands::execute`, until EOF, a closed or broken connection,
//! a malformed command, or VM death.
//!
//! At VM death the agent shuts the socket's reading side down, which wakes
//! the blocked read (it returns 0 bytes: end of commands), and waits for the
//! thread to finish; after the writer's last flush the socket is shut down in
//! both directions so the front-end sees the end of the stream.

use crate::control::commands::{execute, Flow};
use crate::jvmti::sys::JVMTI_THREAD_MAX_PRIORITY;
use crate::jvmti::{AgentThread, Jni};
use crate::profile::Profile;
use crate::protocol::{CommandError, CommandReader};
use crate::vm::Context;
use parking_lot::Mutex;
use std::cell::Cell;
use std::io::BufReader;
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

pub const THREAD_NAME: &str = "HPROF listener thread";

/// Listener state, part of the agent.
pub struct NetState {
    /// A second handle on the output socket: read by the listener, shut
    /// down at VM death.
    socket: Mutex<Option<TcpStream>>,
    thread: AgentThread,
}

impl NetState {
    pub fn new(socket: Option<TcpStream>) -> Self {
        NetState {
            socket: Mutex::new(socket),
            thread: AgentThread::new(THREAD_NAME),
        }
    }

    pub fn is_running(&self) -> bool {
        self.thread.is_running()
    }
}

thread_local! {
    /// True on the listener thread (VM death may run there after EXIT).
    static ON_LISTENER: Cell<bool> = const { Cell::new(false) };
}

impl NetState {
    /// Start the listener (VM init, only with `net=`): commands go to
    /// `control::commands` with the agent's profiles.
    pub fn start(
        &'static self,
        ctx: &'static Context,
        profiles: &'static [Box<dyn Profile>],
        jni: Jni<'_>,
    ) -> Result<(), String> {
        let stream = match self.socket.lock().as_ref().map(|s| s.try_clone()) {
            Some(Ok(s)) => s,
            Some(Err(e)) => return Err(e.to_string()),
            None => return Err("no socket to read commands from".into()),
        };
        let r = crate::vm::threads::start_agent_thread(
            ctx,
            jni,
            &self.thread,
            JVMTI_THREAD_MAX_PRIORITY,
            move |jni| {
                ON_LISTENER.with(|c| c.set(true));
                self.run(ctx, profiles, jni, stream)
            },
        );
        // The front-end sees the header (and CONTROL SETTINGS) at once
        // rather than when the first 64 KiB of output have accumulated.
        ctx.out.flush();
        r
    }

    /// VM death, before the writer stops: wake the listener and wait
    /// (bounded) until it has finished. Does not wait when called on the
    /// listener itself (VM death after an EXIT command).
    pub fn stop(&self) {
        let wake = || {
            if let Some(s) = self.socket.lock().as_ref() {
                let _ = s.shutdown(Shutdown::Read);
            }
        };
        if ON_LISTENER.with(|c| c.get()) {
            self.thread.stop(|| {}, Duration::ZERO);
            return;
        }
        self.thread.stop(wake, Duration::from_secs(5));
    }

    /// VM death, after the writer's last flush: end the stream for the peer.
    pub fn close(&self) {
        if let Some(s) = self.socket.lock().take() {
            let _ = s.shutdown(Shutdown::Both);
        }
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

impl NetState {
fn run(
    &self,
    ctx: &'static Context,
    profiles: &'static [Box<dyn Profile>],
    jni: Jni<'_>,
    stream: TcpStream,
) {
    let mut reader = CommandReader::new(BufReader::new(stream));
    let verbose = ctx.opts.verbose;
    loop {
        if self.thread.should_stop() {
            report_unread(reader.get_ref());
            return;
        }
        match reader.next_command() {
            Ok(cmd) if ctx.gate.is_closed() => {
                // VM death began after the read: the command cannot run.
                crate::diag::rejected(&format!(
                    "the VM is exiting: socket command {cmd:?} not executed"
                ));
                report_unread(reader.get_ref());
                return;
            }
            Ok(cmd) => {
                if execute(ctx, profiles, jni, cmd) == Flow::Stop {
                    return;
                }
            }
            Err(CommandError::Closed) => {
                if self.thread.should_stop() {
                    report_unread(reader.get_ref());
                } else {
                    crate::diag::verbose(
                        verbose,
                        "HPROF: front-end closed the command stream; listener stopped\n",
                    );
                }
                return;
            }
            Err(CommandError::Io(_)) if self.thread.should_stop() => {
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
}
