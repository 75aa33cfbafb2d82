//! Loading the agent into a running JVM without the JDK's tools: HotSpot's
//! attach protocol over the JVM's Unix domain socket (`hotspot`), what the
//! JVM and the agent answered (`load`, `meaning`), and the JVMs one could
//! attach to (`jvms`, reading HotSpot's perfdata files with `perfdata`).
//! Used by `hprof-rs attach`/`jvms` and the UI's Attach. See docs/attach.md.

pub mod bundled;
pub mod hotspot;
pub mod jvms;
pub mod perfdata;
pub mod procfs;
pub mod sys;
pub use hprof_core::untrusted;

use hprof_core::options;
use hprof_core::protocol;

/// An attach error: a message for the user.
pub type AttachResult<T> = Result<T, String>;
use hotspot::{LoadOutcome, Protocol};
use protocol::load_outcome;
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

/// Seconds given on the command line as a Duration.
pub fn seconds(s: f64, what: &str) -> AttachResult<Duration> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{what} must be a positive number of seconds, not {s}"))
}

/// `--listen` chooses the agent's `net=` itself.
pub fn refuse_net(options: &str) -> AttachResult<()> {
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
pub fn with_net(options: &str, port: u16) -> AttachResult<String> {
    refuse_net(options)?;
    let net = format!("net=127.0.0.1:{port}");
    Ok(if options.trim().is_empty() {
        net
    } else {
        format!("{options},{net}")
    })
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
) -> AttachResult<Loaded> {
    let (listener_wait, reply_wait) = waits;
    let target = hotspot::inspect(pid)?;
    let pid = target.pid;
    if hotspot::start_listener(&target, listener_wait, step)? {
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
        shown(&options::redact_token(options))
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
pub fn meaning(loaded: &Loaded, options: &str) -> AttachResult<Vec<String>> {
    let pid = loaded.pid;
    let stop = options::is_stop_request(options);
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
pub fn run_jvms() -> AttachResult<String> {
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
