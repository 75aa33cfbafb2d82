//! The `HPROF listener thread`: an agent thread (RunAgentThread) that reads
//! commands from the front-end's socket and hands each to
//! `control::commands::execute`, until EOF, a closed or broken connection,
//! a malformed command, or VM death.
//!
//! At VM death the agent shuts the socket's reading side down, which wakes
//! the blocked read (it returns 0 bytes: end of commands), and waits for the
//! thread to finish; after the writer's last flush the socket is shut down in
//! both directions so the front-end sees the end of the stream.

use super::acceptor::{Accepted, Acceptor};
use crate::control::commands::{execute, Flow};
use crate::jvmti::sys::JVMTI_THREAD_MAX_PRIORITY;
use crate::jvmti::{AgentThread, Jni};
use crate::profile::Profile;
use crate::protocol::{Command, CommandError, CommandReader};
use crate::sink::record::{Recording, Replayed};
use crate::vm::Context;
use parking_lot::Mutex;
use std::cell::Cell;
use std::io::{BufReader, Read};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

pub const THREAD_NAME: &str = "HPROF listener thread";

/// `listen=`: the accepting thread and the recording new front-ends are
/// caught up from.
pub struct Listening {
    pub acceptor: Acceptor,
    pub recording: Recording,
}

/// Listener state, part of the agent.
pub struct NetState {
    /// A second handle on the output socket (`net=`), or on the connected
    /// front-end's (`listen=`): read by the listener, shut down at VM death.
    socket: Mutex<Option<TcpStream>>,
    thread: AgentThread,
    listening: Option<Listening>,
}

impl NetState {
    pub fn new(socket: Option<TcpStream>) -> Self {
        NetState {
            socket: Mutex::new(socket),
            thread: AgentThread::new(THREAD_NAME),
            listening: None,
        }
    }

    /// `listen=`: front-ends come through `listening`.
    pub fn listening(listening: Listening) -> Self {
        NetState {
            socket: Mutex::new(None),
            thread: AgentThread::new(THREAD_NAME),
            listening: Some(listening),
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
        // `listen=` serves front-ends as they come; `net=` reads the
        // commands of the one connection it made.
        let stream = if self.listening.is_some() {
            None
        } else {
            match self.socket.lock().as_ref().map(|s| s.try_clone()) {
                Some(Ok(s)) => Some(s),
                Some(Err(e)) => return Err(e.to_string()),
                None => return Err("no socket to read commands from".into()),
            }
        };
        let r = crate::vm::threads::start_agent_thread(
            ctx,
            jni,
            &self.thread,
            JVMTI_THREAD_MAX_PRIORITY,
            move |jni| {
                ON_LISTENER.with(|c| c.set(true));
                match stream {
                    None => self.serve(ctx, profiles, jni),
                    Some(stream) => self.run(ctx, profiles, jni, stream),
                }
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
        if let Some(l) = &self.listening {
            l.acceptor.stop();
        }
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
        if let Some(fe) = self.listening.as_ref().and_then(|l| l.recording.live()) {
            let _ = fe.stream.shutdown(Shutdown::Both);
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
                Err(
                    e @ CommandError::UnknownTag {
                        tag: b'H',
                        offset: 0,
                    },
                ) => {
                    // A front-end that checks the agent's token answers a
                    // wrong one with a line instead of a stream of commands.
                    match refusal(reader.get_mut()) {
                        Some(why) => crate::diag::rejected(&format!(
                            "the front-end refused this agent: {why} (see token= and tokenfile= \
                             in docs/socket-protocol.md); profile output stopped"
                        )),
                        None => crate::diag::rejected(&format!(
                            "{e}; no further commands are read (profiling and output continue)"
                        )),
                    }
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

/// After a first byte `H`: the reason of a `HPROF-RS REFUSED: <why>` line
/// (at most 200 bytes, printable), or `None` when the bytes are not one.
fn refusal(r: &mut impl Read) -> Option<String> {
    const REST: &[u8] = b"PROF-RS REFUSED: ";
    let mut line = Vec::new();
    let _ = r.take(REST.len() as u64 + 200).read_to_end(&mut line);
    let why = line.strip_prefix(REST)?;
    let why = why.split(|&b| b == b'\n').next().unwrap_or_default();
    Some(
        String::from_utf8_lossy(why)
            .chars()
            .filter(|c| !c.is_control())
            .collect(),
    )
}

/// How one front-end's session ended (`listen=`).
enum Ended {
    /// It left, or was let go: the next one may come.
    FrontEndGone,
    /// The agent is stopping (VM death, stop, EXIT): the front-end stays
    /// live for the last output, and `close` ends its stream.
    Stopping,
}

impl NetState {
    /// `listen=`: serve one front-end after another until VM death or stop.
    fn serve(&self, ctx: &'static Context, profiles: &'static [Box<dyn Profile>], jni: Jni<'_>) {
        let Some(l) = &self.listening else { return };
        while !self.thread.should_stop() && !ctx.gate.is_closed() {
            let Some(accepted) = l.acceptor.next(Duration::from_millis(200)) else {
                continue;
            };
            let fe = accepted.front_end.clone();
            match self.serve_one(ctx, profiles, jni, l, accepted) {
                Ended::Stopping => return,
                Ended::FrontEndGone => {
                    l.recording.forget(&fe);
                    let _ = fe.stream.shutdown(Shutdown::Both);
                    self.socket.lock().take();
                    l.acceptor.release();
                    crate::diag::verbose(
                        ctx.opts.verbose,
                        &format!(
                            "HPROF: front-end {} disconnected; waiting for the next\n",
                            fe.peer
                        ),
                    );
                }
            }
        }
    }

    fn serve_one(
        &self,
        ctx: &'static Context,
        profiles: &'static [Box<dyn Profile>],
        jni: Jni<'_>,
        l: &Listening,
        accepted: Accepted,
    ) -> Ended {
        let fe = accepted.front_end;
        let Ok(reading) = fe.stream.try_clone() else {
            return Ended::FrontEndGone;
        };
        *self.socket.lock() = fe.stream.try_clone().ok();
        crate::diag::verbose(
            ctx.opts.verbose,
            &format!("HPROF: front-end {} connected\n", fe.peer),
        );
        // Everything recorded so far first: what a file would hold. A stop
        // or VM death does not cut the replay short: the front-end gets the
        // rest and then the final report, as the file does. It is bounded
        // all the same: each write by the stall limit, and the whole by
        // `stop`'s wait, after which `close` shuts the socket.
        match l.recording.replay(&fe) {
            Ok(Replayed::Live) => {}
            Ok(Replayed::Complete) => return Ended::FrontEndGone,
            Err(_) if self.thread.should_stop() => return Ended::Stopping,
            Err(_) => return Ended::FrontEndGone,
        }
        let input = std::io::Cursor::new(accepted.leftover).chain(reading);
        let mut reader = CommandReader::new(BufReader::new(input));
        loop {
            if self.thread.should_stop() {
                return Ended::Stopping;
            }
            match reader.next_command() {
                Ok(_) if ctx.gate.is_closed() => return Ended::Stopping,
                Ok(Command::Eof) => {
                    // No more commands from it; it keeps the stream until
                    // it closes the connection.
                    let mut sink = [0u8; 4096];
                    loop {
                        match reader.get_mut().read(&mut sink) {
                            Ok(0) => return Ended::FrontEndGone,
                            Ok(_) => {}
                            Err(_) if self.thread.should_stop() => return Ended::Stopping,
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(_) => return Ended::FrontEndGone,
                        }
                        if self.thread.should_stop() {
                            return Ended::Stopping;
                        }
                    }
                }
                Ok(cmd) => {
                    if execute(ctx, profiles, jni, cmd) == Flow::Stop {
                        return Ended::Stopping;
                    }
                }
                Err(_) if self.thread.should_stop() => return Ended::Stopping,
                Err(CommandError::Closed) => return Ended::FrontEndGone,
                Err(CommandError::Io(_)) => return Ended::FrontEndGone,
                Err(e) => {
                    crate::diag::rejected(&format!(
                        "{e}; front-end {} disconnected (profiling and recording continue)",
                        fe.peer
                    ));
                    return Ended::FrontEndGone;
                }
            }
        }
    }
}
