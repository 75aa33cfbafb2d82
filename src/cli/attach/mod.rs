//! `hprof-rs attach PID [OPTIONS]`: loads the agent into a running JVM by
//! itself, speaking HotSpot's attach protocol over the JVM's Unix domain
//! socket (`hotspot`), and prints the JVM's answer; with `--listen` it
//! also records the attached agent's stream as `hprof-rs listen` does.
//! `hprof-rs jvms` lists the JVMs it could attach to (`jvms`, reading
//! HotSpot's perfdata files with `perfdata`). See docs/attach.md.

pub mod hotspot;
pub mod jvms;
pub mod perfdata;
pub mod procfs;
pub(crate) mod sys;
pub mod untrusted;

use super::listen::{self, ListenArgs};
use super::CliResult;
use crate::protocol::load_outcome;
use hotspot::{LoadOutcome, Protocol};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which attach protocol to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolChoice {
    /// The newest the JVM supports (asked with `getversion`).
    Auto,
    Fixed(Protocol),
}

impl std::str::FromStr for ProtocolChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(ProtocolChoice::Auto),
            "1" => Ok(ProtocolChoice::Fixed(Protocol::V1)),
            "2" => Ok(ProtocolChoice::Fixed(Protocol::V2)),
            _ => Err(format!("'{s}': the attach protocol is auto, 1 or 2")),
        }
    }
}

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
    /// [`crate::options::TOOL_DEFAULT_OPTIONS`].
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

/// Seconds given on the command line as a Duration.
pub fn seconds(s: f64, what: &str) -> CliResult<Duration> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{what} must be a positive number of seconds, not {s}"))
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
        None => {
            let exe = std::env::current_exe()
                .map_err(|e| format!("cannot find the hprof-rs executable: {e}"))?;
            let lib: PathBuf = exe
                .parent()
                .map(|d| d.join(jvms::AGENT_LIBRARY))
                .unwrap_or_default();
            if !lib.is_file() {
                return Err(format!(
                    "no agent library next to hprof-rs ({}); name it with --agent PATH",
                    lib.display()
                ));
            }
            lib
        }
    };
    path.into_os_string()
        .into_string()
        .map_err(|p| format!("the agent path {p:?} is not UTF-8"))
}

/// `--listen` chooses the agent's `net=` itself.
fn refuse_net(options: &str) -> CliResult<()> {
    if options
        .split(',')
        .any(|o| o.trim_start().starts_with("net="))
    {
        return Err(
            "--listen sets the agent's net= option itself; leave net= out of the options".into(),
        );
    }
    Ok(())
}

/// `options` with `net=127.0.0.1:PORT` added.
pub fn with_net(options: &str, port: u16) -> CliResult<String> {
    refuse_net(options)?;
    let net = format!("net=127.0.0.1:{port}");
    Ok(if options.trim().is_empty() {
        net
    } else {
        format!("{options},{net}")
    })
}

pub fn run(a: AttachArgs) -> CliResult<()> {
    let agent = agent_path(a.agent.as_deref())?;
    let defaulted = a.options.is_none();
    let mut options = a
        .options
        .unwrap_or_else(|| crate::options::TOOL_DEFAULT_OPTIONS.to_string());
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
        Some(s) if !crate::options::is_stop_request(&options) => s
            .join()
            .unwrap_or_else(|_| Err("the listen session failed".into())),
        _ => Ok(()),
    }
}

/// What a JVM answered a load request.
pub struct Loaded {
    pub pid: u32,
    /// Status line and output as sent, control characters escaped (ends
    /// with a newline).
    pub answer: String,
    /// The answer was longer than what was kept.
    pub truncated: bool,
    pub outcome: LoadOutcome,
    /// What the agent said about it, when it could be read.
    pub told: Option<Told>,
}

/// The agent's own account of a load (`protocol::load_outcome`), its
/// lines escaped for printing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Told {
    pub status: load_outcome::Status,
    pub lines: Vec<String>,
}

/// Load `agent` into JVM `pid` with the option string `options` through
/// HotSpot's attach mechanism (`waits`: for the attach listener to start,
/// then for the answer). `step` is told each step as it happens.
pub fn load(
    pid: u32,
    agent: &str,
    options: &str,
    waits: (Duration, Duration),
    protocol: ProtocolChoice,
    step: &mut dyn FnMut(String),
) -> CliResult<Loaded> {
    let (listener_wait, reply_wait) = waits;
    let target = hotspot::inspect(pid)?;
    let pid = target.pid;
    if hotspot::start_listener(&target, listener_wait)? {
        step(format!("started the attach listener of JVM {pid}"));
    }
    hotspot::check_socket(&target)?;
    let protocol = match protocol {
        ProtocolChoice::Auto => hotspot::negotiate(&target, reply_wait)?,
        ProtocolChoice::Fixed(p) => p,
    };
    step(format!(
        "loading {agent} into JVM {pid} (attach protocol {}, options {})",
        protocol.number(),
        shown(&crate::options::redact_token(options))
    ));
    let sent_ms = load_outcome::epoch_ms();
    let reply = hotspot::execute(
        &target,
        protocol,
        "load",
        &[agent, "true", options],
        reply_wait,
    )?;
    // The answer is the JVM's (or whoever answers at its socket): shown
    // with its control characters escaped.
    let mut answer = untrusted::escaped(&format!("{}\n{}", reply.status, reply.text));
    if !answer.ends_with('\n') {
        answer.push('\n');
    }
    let outcome = match hotspot::interpret_load(&reply) {
        LoadOutcome::NotLoaded(why) => LoadOutcome::NotLoaded(untrusted::escaped(&why)),
        o => o,
    };
    // The agent ran: what it says about it (docs/attach.md, "What the tool
    // is told"), if it is ours and said it during this request.
    let told = match outcome {
        LoadOutcome::Started | LoadOutcome::AgentFailed(_) => {
            agent_says(&target, sent_ms, reply_wait)
        }
        LoadOutcome::NotLoaded(_) => None,
    };
    Ok(Loaded {
        pid,
        answer,
        truncated: reply.truncated,
        outcome,
        told,
    })
}

/// The agent's account of the load just answered: its agent property, when
/// set since `sent_ms` (an older one is another load's), with control
/// characters escaped. None when it cannot be read (another agent, a JVM
/// without agent properties).
fn agent_says(target: &hotspot::Target, sent_ms: u64, wait: Duration) -> Option<Told> {
    let reply = hotspot::execute(target, Protocol::V1, "agentProperties", &[], wait).ok()?;
    if reply.status != 0 {
        return None;
    }
    let value = load_outcome::property(&reply.text, load_outcome::PROPERTY)?;
    let o = load_outcome::LoadOutcome::decode(&value)?;
    // One clock on one machine; a second of slack for its granularity.
    if o.at_ms + 1000 < sent_ms || o.at_ms > load_outcome::epoch_ms() + 1000 {
        return None;
    }
    Some(Told {
        status: o.status,
        lines: o.lines.iter().map(|l| untrusted::escaped(l)).collect(),
    })
}

/// What a load's answer means: Ok with what happened (one line each:
/// what happened, where the report goes, what the profile costs), or Err
/// with why nothing did.
pub fn meaning(loaded: &Loaded, options: &str) -> CliResult<Vec<String>> {
    let pid = loaded.pid;
    let stop = crate::options::is_stop_request(options);
    let told = loaded.told.as_ref();
    match &loaded.outcome {
        LoadOutcome::Started => {
            let mut lines = vec![if stop {
                format!("profiling stopped in JVM {pid}")
            } else {
                format!("the agent started in JVM {pid}")
            }];
            let said = told.filter(|t| t.status != load_outcome::Status::Refused);
            for l in said.map(|t| t.lines.as_slice()).unwrap_or_default() {
                lines.push(l.clone());
            }
            if !stop && said.is_some() {
                lines.push(format!(
                    "the report is written when profiling stops (hprof-rs attach {pid} stop) or \
                     when the JVM exits"
                ));
            }
            Ok(lines)
        }
        LoadOutcome::AgentFailed(code) => {
            let what = if stop { "stop profiling" } else { "start" };
            match told.filter(|t| t.status == load_outcome::Status::Refused) {
                Some(t) => Err(format!(
                    "the agent did not {what} in JVM {pid}: {}",
                    t.lines.join("; ")
                )),
                None => Err(format!(
                    "the agent did not {what} in JVM {pid}: Agent_OnAttach returned {code} (the \
                     agent's own message, if any, is in the JVM's output)"
                )),
            }
        }
        LoadOutcome::NotLoaded(msg) => Err(format!("JVM {pid} did not load the agent: {msg}")),
    }
}

/// An option string for a progress line (its token already hidden):
/// quoted, and cut when long.
fn shown(options: &str) -> String {
    const MAX: usize = 200;
    if options.chars().count() <= MAX {
        format!("{options:?}")
    } else {
        let head: String = options.chars().take(MAX).collect();
        format!("{head:?}... ({} bytes)", options.len())
    }
}

/// `hprof-rs jvms`.
pub fn run_jvms() -> CliResult<String> {
    Ok(jvms::table(&jvms::list()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_adds_net() {
        assert_eq!(with_net("", 9).unwrap(), "net=127.0.0.1:9");
        assert_eq!(
            with_net("cpu=samples", 9).unwrap(),
            "cpu=samples,net=127.0.0.1:9"
        );
        assert!(with_net("cpu=samples,net=h:1", 9).is_err());
        assert!(with_net(" net=h:1", 9).is_err());
    }

    #[test]
    fn protocol_choices() {
        assert_eq!("auto".parse(), Ok(ProtocolChoice::Auto));
        assert_eq!("2".parse(), Ok(ProtocolChoice::Fixed(Protocol::V2)));
        assert!("3".parse::<ProtocolChoice>().is_err());
    }

    #[test]
    fn timeouts_are_positive() {
        assert_eq!(seconds(1.5, "t").unwrap(), Duration::from_millis(1500));
        assert!(seconds(0.0, "t").is_err());
        assert!(seconds(-1.0, "t").is_err());
        assert!(seconds(f64::NAN, "t").is_err());
        assert!(seconds(f64::INFINITY, "t").is_err());
    }
}
