//! `hprof-rs attach PID [OPTIONS]`: loads the agent into a running JVM
//! (through `hprof_attach`) and prints the JVM's answer; with `--listen` it
//! also records the attached agent's stream as `hprof-rs listen` does.
//! `hprof-rs jvms` lists the JVMs it could attach to. See docs/attach.md.

pub use hprof_attach::*;

use crate::listen::{self, ListenArgs};
use crate::CliResult;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// `--listen`: where the attached agent's stream goes.
pub struct ListenSession {
    pub out: String,
    pub send: Vec<String>,
    pub interactive: bool,
    /// How long the agent has to connect once it has started.
    pub connect_within: Duration,
}

pub struct AttachArgs {
    pub pid: u32,
    /// The agent's option string, as after `-agentpath:LIB=`; None:
    /// [`hprof_core::options::TOOL_DEFAULT_OPTIONS`].
    pub options: Option<String>,
    /// The agent library; default: `libhprof_rs.so` next to this tool.
    pub agent: Option<String>,
    /// Longest wait for the JVM's attach listener to start.
    pub timeout: Duration,
    /// Longest wait for the JVM's answer (Agent_OnAttach runs before it).
    pub reply_timeout: Duration,
    pub protocol: ProtocolChoice,
    pub listen: Option<ListenSession>,
}

/// The library path the JVM is asked to load: absolute, since the JVM
/// resolves it from its own working directory.
fn agent_path(given: Option<&str>) -> CliResult<String> {
    let path = match given {
        Some(p) => {
            let p = Path::new(p);
            let abs = if p.is_absolute() {
                p.to_path_buf()
            } else {
                std::env::current_dir()
                    .map_err(|e| format!("cannot resolve {}: {e}", p.display()))?
                    .join(p)
            };
            if !abs.exists() {
                eprintln!(
                    "hprof-rs attach: note: {} does not exist here; the JVM looks for it in its own file system",
                    abs.display()
                );
            }
            abs
        }
        None => bundled::bundled_agent().map_err(|e| format!("{e}; name it with --agent PATH"))?,
    };
    path.into_os_string()
        .into_string()
        .map_err(|p| format!("the agent path {p:?} is not UTF-8"))
}

pub fn run(a: AttachArgs) -> CliResult<()> {
    let agent = agent_path(a.agent.as_deref())?;
    let defaulted = a.options.is_none();
    let mut options = a
        .options
        .unwrap_or_else(|| hprof_core::options::TOOL_DEFAULT_OPTIONS.to_string());
    let mut session = None;
    if let Some(l) = a.listen {
        refuse_net(&options)?;
        listen::check_script(&l.send)?;
        let listener = listen::bind("127.0.0.1", 0)?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        options = with_net(&options, port)?;
        let args = ListenArgs {
            host: "127.0.0.1".into(),
            port,
            out: l.out,
            send: l.send,
            interactive: l.interactive,
        };
        // Recording starts before the load request: an agent that connects
        // and writes from Agent_OnAttach must find a reader, or the JVM
        // would not answer until its socket buffer drained.
        let within = l.connect_within;
        session = Some(std::thread::spawn(move || {
            listen::serve(listener, &args, Some(within))
        }));
    }

    let loaded = load(
        a.pid,
        &agent,
        &options,
        (a.timeout, a.reply_timeout),
        a.protocol,
        &mut |step| eprintln!("hprof-rs attach: {step}"),
    )?;
    // The JVM's answer as it came; a closed standard output must not hide
    // the outcome on stderr.
    let mut out = std::io::stdout().lock();
    let _ = out
        .write_all(loaded.answer.as_bytes())
        .and_then(|_| out.flush());
    drop(out);
    if loaded.truncated {
        eprintln!("hprof-rs attach: the JVM's answer was longer than shown; the rest was dropped");
    }
    if defaulted {
        eprintln!(
            "hprof-rs attach: no options were given: the tool's default is CPU samples and \
             sampled allocation sites, about the cost of no agent"
        );
    }
    for line in meaning(&loaded, &options)? {
        eprintln!("hprof-rs attach: {line}");
    }
    match session {
        Some(s) if !hprof_core::options::is_stop_request(&options) => s
            .join()
            .unwrap_or_else(|_| Err("the listen session failed".into())),
        _ => Ok(()),
    }
}
