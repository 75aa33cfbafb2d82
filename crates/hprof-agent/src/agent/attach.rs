//! Agent_OnAttach's work: start a profiling session in a running VM, or
//! stop the one that runs (docs/attach.md).
//!
//! Everything that can be refused is refused before anything starts: the
//! option string, options that make no sense in a running program, a
//! session already running, the JVMTI capabilities the VM grants now, the
//! output. Only then do threads start; from there a failure ends the
//! session again ([`lifecycle::abandon`]) before Agent_OnAttach returns,
//! and the library has made itself unloadable first (`jvmti::library`),
//! so a JDK that unloads the library of a failed attach cannot pull code
//! from under a thread that is still ending.
//!
//! Every outcome is also published for the tool that asked
//! (`protocol::load_outcome`): the reason of a refusal, or where the
//! report goes and what the profile costs.

use super::lifecycle;
use super::onload::{JNI_ERR, JNI_OK};
use super::{agent, events, Agent};
use crate::diag;
use crate::jvmti::sys::{event, jint, JavaVM};
use crate::jvmti::{with_current_jni, Jvmti};
use crate::options::{self, Options};
use crate::protocol::load_outcome::{self, LoadOutcome, Status};

/// What a load did: Agent_OnAttach's return code and what to tell the
/// tool.
struct Done {
    rc: jint,
    outcome: LoadOutcome,
}

/// Say why nothing started (or stopped), on the JVM's standard error and
/// to the tool; the JVM's answer carries the return code.
#[track_caller]
fn refuse(message: &str) -> Done {
    diag::rejected(message);
    Done {
        rc: JNI_ERR,
        outcome: LoadOutcome::now(Status::Refused, vec![message.to_string()]),
    }
}

pub(super) fn on_attach(vm: *mut JavaVM, cmdline: &str) -> jint {
    crate::jvmti::jni::set_vm(vm);
    // One start or end at a time (a second attach waits for the first).
    let _one = super::transition();
    let done = load(cmdline);
    publish(&done.outcome);
    done.rc
}

/// Set the outcome as the JVM's agent property for the tool to read; a JVM
/// without agent properties only has the message on its standard error.
fn publish(outcome: &LoadOutcome) {
    with_current_jni(|jni| {
        if let Some(jni) = jni {
            crate::jvmti::jni::set_agent_property(jni, load_outcome::PROPERTY, &outcome.encode());
        }
    });
}

fn load(cmdline: &str) -> Done {
    if options::is_stop_request(cmdline) {
        return stop();
    }
    if options::is_help_request(cmdline) {
        use std::io::Write;
        let mut out = std::io::stdout();
        let _ = out.write_all(options::help_text().as_bytes());
        let _ = out.flush();
        return refuse("help was printed on the JVM's standard output; profiling did not start");
    }
    if let Some(a) = agent().filter(|a| !a.is_stopped()) {
        return refuse(&already_profiling(a));
    }
    // The options of the load request only: the program's environment
    // (_JAVA_HPROF_OPTIONS) was meant for a start-up load.
    let opts = match options::parse(cmdline) {
        Ok(o) => o,
        Err(e) => {
            return refuse(&match options::cut_by_jcmd(cmdline) {
                Some(name) => options::cut_by_jcmd_message(
                    name,
                    std::process::id(),
                    &crate::jvmti::library::own_path().unwrap_or_else(|| "LIB".into()),
                ),
                None => e.to_string(),
            })
        }
    };
    if let Err(why) = refused_in_a_running_vm(&opts) {
        return refuse(&why);
    }
    match start(opts) {
        Ok(lines) => Done {
            rc: JNI_OK,
            outcome: LoadOutcome::now(Status::Started, lines),
        },
        Err(why) => refuse(&why),
    }
}

/// The message for a load while a session runs.
fn already_profiling(a: &Agent) -> String {
    let since = a
        .started
        .elapsed()
        .map(|d| format!("{} s", d.as_secs()))
        .unwrap_or_else(|_| "a while".into());
    let how = if a.ctx.attached {
        "attached"
    } else {
        "loaded at start-up"
    };
    format!(
        "hprof-rs is already profiling this JVM ({how} {since} ago, options \"{}\"); load it \
         with the option string stop to end that profile first",
        options::redact_token(&a.ctx.opts.raw)
    )
}

/// Options that make sense only when the agent starts with the VM.
fn refused_in_a_running_vm(opts: &Options) -> Result<(), String> {
    if opts.errorexit {
        return Err(
            "errorexit=y is refused in a running VM: the first error would end the program".into(),
        );
    }
    if opts.pause {
        return Err(
            "pause=y is refused in a running VM: it would hold the attach request for up to 10 minutes"
                .into(),
        );
    }
    Ok(())
}

/// GetEnv returns JNI_EDETACHED for a JVMTI environment while the VM is
/// still starting (its JVMTI phase neither OnLoad nor live): the attach
/// listener answers from the moment the VM's SIGQUIT handler is up, before
/// VM initialisation ends, and a tool attaching to a JVM that just started
/// (or a loaded machine) gets there first. That state passes within the
/// VM's start-up; it is waited out, on the attach listener's thread, for at
/// most `START_WAIT`.
fn env_once_live() -> Result<Jvmti, i32> {
    const JNI_EDETACHED: i32 = -2;
    const START_WAIT: std::time::Duration = std::time::Duration::from_secs(20);
    let since = std::time::Instant::now();
    loop {
        match Jvmti::new_env() {
            Err(JNI_EDETACHED) if since.elapsed() < START_WAIT => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            r => return r,
        }
    }
}

/// Set up a session; `Ok` says where the report goes and what the
/// profile costs, `Err` is the one line to print.
fn start(opts: Options) -> Result<Vec<String>, String> {
    // From the first thread on, this library must stay mapped (module doc).
    crate::jvmti::library::pin()?;
    let jvmti = env_once_live().map_err(|rc| {
        format!("cannot get a JVMTI environment (GetEnv returned {rc}); profiling did not start")
    })?;
    let give_back = |e: String| {
        let _ = jvmti.dispose();
        e
    };
    diag::configure(false, opts.dumps_core());
    let raw = opts.raw.clone();
    let verbose = opts.verbose;
    let warnings = opts.cost_warnings();
    let agent = super::setup::set_up(jvmti, opts, true).map_err(give_back)?;
    let mut told = vec![destination(&agent.ctx.opts, agent.output_file.as_deref())];
    told.extend(warnings.iter().map(|w| format!("warning: {w}")));
    let started = with_current_jni(|jni| {
        let Some(jni) = jni else {
            return Err("the attach thread has no JNI environment".to_string());
        };
        let r = crate::jvmti::callbacks::install(jvmti, &events::Handler)
            .map_err(|e| format!("cannot set JVMTI event callbacks: {e}"))
            .and_then(|()| {
                jvmti
                    .set_event_mode(true, event::VM_DEATH)
                    .map_err(|e| format!("cannot enable JVMTI events: {e}"))
            })
            .and_then(|()| lifecycle::attach(agent, jni));
        if r.is_err() {
            lifecycle::abandon(agent, jni);
        }
        r
    });
    started.map_err(|e| format!("{e}; profiling did not start"))?;
    diag::verbose(
        verbose,
        &format!(
            "HPROF: profiling started in this running JVM (options \"{}\")\n",
            options::redact_token(&raw)
        ),
    );
    for w in &warnings {
        diag::verbose(verbose, &format!("HPROF WARNING: {w}\n"));
    }
    Ok(told)
}

/// `f` resolved against the JVM's working directory (where a relative
/// `file=` was opened).
fn absolute(f: &std::path::Path) -> std::path::PathBuf {
    std::env::current_dir()
        .map(|d| d.join(f))
        .unwrap_or_else(|_| f.to_path_buf())
}

/// Where the session's output goes, in words, with a file's absolute path
/// (a relative `file=` is resolved against the JVM's working directory).
fn destination(opts: &Options, file: Option<&std::path::Path>) -> String {
    if let Some(net) = &opts.net {
        return format!("the profile streams to {}:{}", net.host, net.port);
    }
    match (&opts.listen, file.map(absolute)) {
        (Some(l), Some(f)) => format!(
            "front-ends connect to {}:{} (listen=); the stream is also written to {}",
            l.host,
            l.port,
            f.display()
        ),
        (Some(l), None) => format!("front-ends connect to {}:{} (listen=)", l.host, l.port),
        (None, Some(f)) => format!("the report goes to {}", f.display()),
        (None, None) => "the report goes to the agent's output".into(),
    }
}

/// The option string `stop`: end the session that runs, with its final
/// report (`doe=y`), and leave the VM as it was.
fn stop() -> Done {
    let Some(a) = agent().filter(|a| !a.is_stopped()) else {
        return refuse("stop: hprof-rs is not profiling this JVM");
    };
    let went = with_current_jni(|jni| jni.map(|jni| lifecycle::stop(a, jni)));
    match went {
        Some(to) => {
            diag::verbose(
                a.ctx.opts.verbose,
                &format!("HPROF: profiling stopped; the report went to {to}\n"),
            );
            let to = match &a.output_file {
                Some(f) => absolute(f).display().to_string(),
                None => to,
            };
            Done {
                rc: JNI_OK,
                outcome: LoadOutcome::now(
                    Status::Stopped,
                    vec![format!("the report went to {to}")],
                ),
            }
        }
        None => refuse("stop: the attach thread has no JNI environment"),
    }
}
