//! Attach: load the agent into a running local JVM, wired to this UI
//! (docs/ui.md, "Attach").
//!
//! As with Launch, each attach gets an agent port of its own that takes
//! only the agent sending this attach's secret (`token=`, in the options
//! that go through the attach socket, which no one else sees), so the
//! connection on it is that JVM's; the options are checked by the agent's
//! own parser first (`launch::SessionPort`). The load goes through
//! HotSpot's attach mechanism (`cli::attach::load`) on a thread of its
//! own, its steps and the JVM's answer going to the session's console;
//! a refusal fails the session with the reason. The page's Stop ends the
//! profile in that JVM the same way (the option string `stop`); the
//! program runs on.

use super::launch::{accept_agent, SessionPort};
use super::{lock, Shared, Ui};
use hprof_analysis::session::Kind;
use hprof_attach::{self as tool, ProtocolChoice};
use serde_json::{json, Value};
use std::time::Duration;

/// How long a JVM has to start its attach listener.
const LISTENER_WITHIN: Duration = Duration::from_secs(10);
/// How long a JVM has to answer (Agent_OnAttach runs before it does).
const ANSWER_WITHIN: Duration = Duration::from_secs(120);

/// The JVMs of this machine the page may offer, and whether attach works.
pub fn info(ui: &Ui) -> Value {
    let jvms: Vec<Value> = tool::jvms::list()
        .into_iter()
        .map(|j| {
            json!({
                "pid": j.pid,
                "command": j.command,
                "java_version": j.java_version,
                "agent_loaded": j.agent,
                "attachable": j.attachable,
            })
        })
        .collect();
    match &ui.agent_lib {
        Ok(p) => json!({"available": true, "agent": p.display().to_string(), "jvms": jvms}),
        Err(e) => json!({"available": false, "agent": null, "message": e, "jvms": jvms}),
    }
}

/// Check and start; the new session's ID, or the status and why not.
pub fn start(ui: &Ui, pid: &str, opts: &str) -> Result<u32, (u16, String)> {
    let lib = ui.agent_lib.as_ref().map_err(|e| (409, e.clone()))?;
    let pid: u32 = pid
        .trim()
        .parse()
        .ok()
        .filter(|&p| p > 0)
        .ok_or((400, format!("pid: {pid:?} is not a process id")))?;
    // No options: the tool's cheap default, not the agent's (heap=all).
    let opts = match opts.trim() {
        "" => crate::options::TOOL_DEFAULT_OPTIONS,
        given => given,
    };
    let port = SessionPort::open(ui, opts, false)?;
    let (opts, text) = (port.options.clone(), port.text);
    let h = ui
        .new_session(Kind::Attach, format!("JVM {pid}"), None)
        .map_err(|e| (503, e))?;
    lock(&h.data).attached_pid = Some(pid);
    if text {
        lock(&h.data).log("the profile needs the text format (monitor=y, cpu=times|old or format=a): monitors, CPU samples, sites and threads are read from text".into());
    }
    for note in super::launch::cost_notes(&opts) {
        lock(&h.data).log(format!("note: {note}"));
    }
    let lib = lib.display().to_string();
    {
        let h = h.clone();
        // The session's secret is in the options: it never reaches the
        // console.
        let secret = port.secret.clone();
        let _ = std::thread::Builder::new()
            .name("ui-attach-load".into())
            .spawn(move || {
                let hide = |s: &str| s.replace(&secret, "***");
                let mut log = |s: String| lock(&h.data).log(hide(&s));
                let loaded = tool::load(
                    pid,
                    &lib,
                    &opts,
                    (LISTENER_WITHIN, ANSWER_WITHIN),
                    ProtocolChoice::Auto,
                    &mut log,
                );
                let outcome = loaded.and_then(|l| {
                    for line in l.answer.lines() {
                        log(format!("[JVM {pid}] {line}"));
                    }
                    tool::meaning(&l, &opts)
                });
                match outcome {
                    Ok(done) => done.into_iter().for_each(log),
                    Err(e) => lock(&h.data).fail(hide(&e)),
                }
            });
    }
    let id = h.id;
    let _ = std::thread::Builder::new()
        .name("ui-attach-agent".into())
        .spawn(move || accept_agent(&h, port));
    Ok(id)
}

/// The page's Stop on an Attach session: load the agent with the option
/// string `stop` into the session's JVM, which ends the profile with its
/// final report (sent to this session before the agent closes the
/// connection) and leaves the program running. Waits for the JVM's
/// answer; `Err` says why nothing stopped.
pub fn stop(ui: &Ui, h: &Shared) -> Result<String, String> {
    let pid = lock(&h.data).attached_pid.ok_or("not an attach session")?;
    let lib = ui.agent_lib.as_ref().map_err(|e| e.clone())?;
    let lib = lib.display().to_string();
    let mut steps = Vec::new();
    let loaded = tool::load(
        pid,
        &lib,
        "stop",
        (LISTENER_WITHIN, ANSWER_WITHIN),
        ProtocolChoice::Auto,
        &mut |s: String| steps.push(s),
    );
    let outcome = loaded.and_then(|l| {
        for line in l.answer.lines() {
            steps.push(format!("[JVM {pid}] {line}"));
        }
        tool::meaning(&l, "stop")
    });
    let mut data = lock(&h.data);
    for s in steps {
        data.log(s);
    }
    match outcome {
        Ok(done) => {
            let done = done.join("; ");
            data.log(format!("stop: {done} from the page; the program runs on"));
            Ok(format!("{done}; the program runs on"))
        }
        Err(e) => {
            data.log(format!("stop: {e}"));
            Err(e)
        }
    }
}
