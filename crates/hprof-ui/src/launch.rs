//! Launch: start a Java command line with the agent wired to this UI.
//!
//! The command line is split into words here (quotes and backslashes as
//! in a shell, nothing else: no variables, globs, pipes, `;` or command
//! substitution) and started directly, without a shell. The first word
//! must be `java` or a path to it. The agent is put first, as
//! `-agentpath:LIB=OPTIONS,net=HOST:PORT[,format=b]`, with the profile
//! options checked by the agent's own option parser before anything runs.
//! Each launch gets its own agent port, so its stream is tied to its
//! process; the program's stdout and stderr go to the session's console,
//! and the page can stop (kill) it.

use super::sessions::Shared;
use super::{agent_connection, lock, Ui};
use crate::options;
use hprof_analysis::session::{Kind, ProcessInfo, State};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Words of a command line.
const MAX_WORDS: usize = 1000;
/// A line of the program's output longer than this is cut.
const MAX_OUTPUT_LINE: usize = 4096;
/// How long a launched JVM has to connect its agent.
const CONNECT_WITHIN: Duration = Duration::from_secs(120);

pub fn info(ui: &Ui) -> Value {
    match &ui.agent_lib {
        Ok(p) => json!({"available": true, "agent": p.display().to_string()}),
        Err(e) => json!({"available": false, "agent": null, "message": e}),
    }
}

/// Split like a shell would split words, and do nothing else a shell does.
pub fn split_command_line(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) if x.is_control() => {
                            return Err("control characters are not allowed".into())
                        }
                        Some(x) => cur.push(x),
                        None => return Err("unterminated ' quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\')) => cur.push(x),
                            Some(x) if x.is_control() => {
                                return Err("control characters are not allowed".into())
                            }
                            Some(x) => {
                                cur.push('\\');
                                cur.push(x);
                            }
                            None => return Err("unterminated \" quote".into()),
                        },
                        Some(x) if x.is_control() => {
                            return Err("control characters are not allowed".into())
                        }
                        Some(x) => cur.push(x),
                        None => return Err("unterminated \" quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(x) if x.is_control() => {
                        return Err("control characters are not allowed".into())
                    }
                    Some(x) => cur.push(x),
                    None => return Err("a backslash at the end".into()),
                }
            }
            c if c.is_control() => {
                return Err("control characters (such as a new line) are not allowed".into())
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
        if out.len() > MAX_WORDS {
            return Err(format!("more than {MAX_WORDS} words"));
        }
    }
    if in_word {
        out.push(cur);
    }
    if out.is_empty() {
        return Err("empty command line".into());
    }
    Ok(out)
}

/// The agent options for a launch: the user's, checked by the agent's
/// parser, then `wiring` (this UI's address and how the agent proves
/// itself: `net=HOST:PORT,tokenfile=FILE` or `...,token=SECRET`).
/// `format=b` is added unless the profile needs text (monitor=y,
/// cpu=times|old, or format=a asked for).
pub fn agent_options(user: &str, wiring: &str) -> Result<(String, bool), String> {
    let user = user.trim().trim_matches(',');
    if user.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(
            "profile options: no spaces (options are comma-separated, e.g. cpu=samples,depth=16)"
                .into(),
        );
    }
    if user == "help" {
        return Err("profile options: help is not a profile".into());
    }
    if user
        .split(',')
        .any(|o| o.starts_with("token=") || o.starts_with("tokenfile="))
    {
        return Err(
            "profile options: token= and tokenfile= are set by the UI (each session has its own)"
                .into(),
        );
    }
    let parsed = options::parse(user).map_err(|e| format!("profile options: {}", e.description))?;
    if parsed.file.is_some() || parsed.net.is_some() || parsed.listen.is_some() {
        return Err(
            "profile options: file=, net= and listen= are set by the UI (the stream comes here)"
                .into(),
        );
    }
    let asked_text = user.split(',').any(|o| o.trim() == "format=a");
    let text = parsed.monitor || parsed.cpu_timing() || asked_text;
    let mut full = if user.is_empty() {
        wiring.to_string()
    } else {
        format!("{user},{wiring}")
    };
    if !text {
        full += ",format=b";
    }
    options::parse(&full).map_err(|e| format!("profile options: {}", e.description))?;
    Ok((full, text))
}

/// What the profile in `options` (checked) will cost, when it is one of
/// the expensive modes: said on the session's console when it starts.
pub fn cost_notes(options: &str) -> Vec<String> {
    let Ok(o) = options::parse(options) else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    if o.heap_sites && o.heap_sample_bytes == 0 {
        notes.push(
            "exact allocation sites (heap=sites without heapsample=) count every allocation: \
             allocation-heavy code runs 10-50 times slower; heapsample=524288 samples instead \
             (docs/alloc_sites.md)"
                .to_string(),
        );
    }
    if o.heap_dump {
        notes.push(
            "heap=dump (or heap=all, the agent's default when no profile is named) writes the \
             whole heap at the end and at each DUMP HEAP: the program pauses while it is written"
                .to_string(),
        );
    }
    if o.cpu_timing() {
        notes.push(
            "cpu=times instruments every method: programs run several times slower \
             (cpu=samples is cheap)"
                .to_string(),
        );
    }
    if o.monitor {
        notes.push(
            "monitor=y reports every contended monitor and wait: costly where threads contend"
                .to_string(),
        );
    }
    notes
}

/// The port of one Launch or Attach: only the agent that sends `secret`
/// first is taken (an impostor that connects first is refused), so the
/// session's stream is that program's.
pub(super) struct SessionPort {
    pub listener: TcpListener,
    pub secret: String,
    /// Launch: the file the agent reads the secret from (its command line
    /// is visible to every user); removed once the agent connected.
    pub token_file: Option<std::path::PathBuf>,
    /// The agent options, checked, that connect here.
    pub options: String,
    /// The profile streams text.
    pub text: bool,
}

impl SessionPort {
    /// `in_file`: the secret goes in a private file (`tokenfile=`), else
    /// in the options (`token=`: Attach, whose options no one else sees
    /// and whose JVM may not see our files).
    pub fn open(ui: &Ui, user_options: &str, in_file: bool) -> Result<SessionPort, (u16, String)> {
        let listener = TcpListener::bind((ui.agents_addr.ip(), 0))
            .and_then(|l| l.set_nonblocking(true).map(|_| l))
            .map_err(|e| (500, format!("cannot open an agent port: {e}")))?;
        let port = listener.local_addr().map_err(|e| (500, e.to_string()))?;
        let net = super::net_option(port);
        let (secret, token_file, wiring) = if in_file {
            let (secret, file) = ui.secrets.launch_file().map_err(|e| (500, e))?;
            let wiring = format!("{net},tokenfile={}", file.display());
            (secret, Some(file), wiring)
        } else {
            let secret = super::secrets::new_secret().map_err(|e| (500, e))?;
            let wiring = format!("{net},token={secret}");
            (secret, None, wiring)
        };
        match agent_options(user_options, &wiring) {
            Ok((options, text)) => Ok(SessionPort {
                listener,
                secret,
                token_file,
                options,
                text,
            }),
            Err(e) => {
                if let Some(f) = &token_file {
                    let _ = std::fs::remove_file(f);
                }
                Err((400, e))
            }
        }
    }
}

/// True for a JVM option that loads an hprof agent, ours or the
/// original: `-agentpath:…hprof…`, `-agentlib:hprof…`, `-Xrunhprof…`
/// (the old form of -agentlib). The UI adds its own agent; a second one
/// would profile the program twice and write elsewhere.
fn loads_hprof(arg: &str) -> bool {
    (arg.starts_with("-agentpath:") && arg.contains("hprof"))
        || arg.starts_with("-agentlib:hprof")
        || arg.starts_with("-Xrunhprof")
}

/// Check and start; the new session's ID, or the status and why not.
pub fn start(ui: &Ui, command: &str, opts: &str, cwd: &str) -> Result<u32, (u16, String)> {
    let lib = ui.agent_lib.as_ref().map_err(|e| (409, e.clone()))?;
    let argv = split_command_line(command).map_err(|e| (400, format!("command line: {e}")))?;
    let program = Path::new(&argv[0]);
    if program.file_name().and_then(|n| n.to_str()) != Some("java") {
        return Err((
            400,
            format!(
                "command line: it must start with java (or a path to java), not {:?}",
                argv[0]
            ),
        ));
    }
    if let Some(a) = argv.iter().find(|a| loads_hprof(a)) {
        return Err((
            400,
            format!("command line: the UI adds the agent itself; remove {a:?}"),
        ));
    }
    let cwd = cwd.trim();
    if !cwd.is_empty() && !Path::new(cwd).is_dir() {
        return Err((400, format!("working directory {cwd:?} does not exist")));
    }
    let port = SessionPort::open(ui, opts, true)?;
    let agent_arg = format!("-agentpath:{}={}", lib.display(), port.options);
    let text = port.text;
    let h = match ui.new_session(Kind::Launch, argv.join(" "), None) {
        Ok(h) => h,
        Err(e) => {
            port.forget();
            return Err((503, e));
        }
    };
    let mut cmd = Command::new(&argv[0]);
    cmd.arg(&agent_arg)
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if !cwd.is_empty() {
        cmd.current_dir(cwd);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("cannot start {}: {e}", argv[0]);
            lock(&h.data).fail(msg.clone());
            port.forget();
            return Err((400, msg));
        }
    };
    let mut full_argv = vec![argv[0].clone(), agent_arg];
    full_argv.extend(argv[1..].iter().cloned());
    {
        let mut g = lock(&h.data);
        g.log(format!(
            "started pid {}: {}",
            child.id(),
            full_argv.join(" ")
        ));
        if text {
            g.log("the profile needs the text format (monitor=y, cpu=times|old or format=a): monitors, CPU samples, sites and threads are read from text".into());
        }
        for note in cost_notes(&port.options) {
            g.log(format!("note: {note}"));
        }
        g.process = Some(ProcessInfo {
            pid: child.id(),
            argv: full_argv,
            running: true,
            exit: None,
        });
    }
    for (out, label) in [
        (
            child
                .stdout
                .take()
                .map(|x| Box::new(x) as Box<dyn Read + Send>),
            "stdout",
        ),
        (
            child
                .stderr
                .take()
                .map(|x| Box::new(x) as Box<dyn Read + Send>),
            "stderr",
        ),
    ] {
        if let Some(out) = out {
            let h = h.clone();
            let _ = std::thread::Builder::new()
                .name("ui-launch-output".into())
                .spawn(move || copy_output(&h, out, label));
        }
    }
    *lock(&h.child) = Some(child);
    let id = h.id;
    {
        let h = h.clone();
        let _ = std::thread::Builder::new()
            .name("ui-launch-wait".into())
            .spawn(move || wait_for_exit(&h));
    }
    let _ = std::thread::Builder::new()
        .name("ui-launch-agent".into())
        .spawn(move || accept_agent(&h, port));
    Ok(id)
}

/// The program's output, line by line, into the console.
fn copy_output(h: &Shared, out: Box<dyn Read + Send>, label: &str) {
    let mut r = BufReader::new(out);
    let mut line = Vec::new();
    loop {
        line.clear();
        // Bounded: a line without a newline is cut at MAX_OUTPUT_LINE.
        let n = match (&mut r)
            .take(MAX_OUTPUT_LINE as u64)
            .read_until(b'\n', &mut line)
        {
            Ok(n) => n,
            Err(_) => return,
        };
        if n == 0 {
            return;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        lock(&h.data).log(format!("[{label}] {text}"));
    }
}

fn wait_for_exit(h: &Shared) {
    loop {
        let status = {
            let mut c = lock(&h.child);
            match c.as_mut().map(|c| c.try_wait()) {
                Some(Ok(Some(st))) => {
                    *c = None;
                    Some(describe(st))
                }
                Some(Ok(None)) => None,
                Some(Err(e)) => {
                    *c = None;
                    Some(format!("unknown ({e})"))
                }
                None => Some("unknown".into()),
            }
        };
        if let Some(how) = status {
            let mut g = lock(&h.data);
            g.log(format!("program ended: {how}"));
            if let Some(p) = g.process.as_mut() {
                p.running = false;
                p.exit = Some(how);
            }
            g.version += 1;
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn describe(st: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(9)) => "killed (signal 9)".into(),
        (None, Some(s)) => format!("killed by signal {s}"),
        (None, None) => "ended".into(),
    }
}

/// Refusals logged on a session's console; later ones are not.
const REFUSALS_LOGGED: usize = 10;

impl SessionPort {
    /// Remove the token file (the agent has read it, or never will).
    fn forget(&self) {
        if let Some(f) = &self.token_file {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Wait for the program's agent on its own port: each connection proves
/// the session's secret on a thread of its own (at most
/// `MAX_WAITING_AGENTS` at once, the oldest turned away); the first that
/// does is the session's stream, every other is refused. Gives up when
/// the program ends first, the session failed (an attach was refused),
/// or after [`CONNECT_WITHIN`].
pub(super) fn accept_agent(h: &Shared, port: SessionPort) {
    let start = Instant::now();
    let waiting = super::gate::Waiting::new(super::MAX_WAITING_AGENTS);
    let claimed = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicUsize::new(0));
    let secret: Arc<str> = Arc::from(port.secret.as_str());
    loop {
        if claimed.load(Ordering::Acquire) {
            break;
        }
        match port.listener.accept() {
            Ok((stream, peer)) => {
                let _ = stream.set_nonblocking(false);
                let ticket = waiting.enter(&stream);
                let (h, claimed, refused, secret) =
                    (h.clone(), claimed.clone(), refused.clone(), secret.clone());
                let _ = std::thread::Builder::new()
                    .name("ui-session-agent".into())
                    .spawn(move || {
                        let proven = super::gate::prove(stream, secret.as_bytes());
                        drop(ticket);
                        let why = match proven {
                            Ok(p) if !claimed.swap(true, Ordering::AcqRel) => {
                                lock(&h.data).log(format!(
                                    "agent connected from {peer} (it sent this session's secret)"
                                ));
                                agent_connection(&h, p);
                                return;
                            }
                            Ok(p) => {
                                let r = super::gate::Refusal::Busy;
                                super::gate::refuse(&p.stream, &r);
                                r
                            }
                            Err(r) => r,
                        };
                        if refused.fetch_add(1, Ordering::Relaxed) < REFUSALS_LOGGED {
                            lock(&h.data).log(format!(
                                "refused a connection from {peer} on this session's agent port: {}",
                                why.why()
                            ));
                        }
                    });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => {
                lock(&h.data).fail(format!("agent port: {e}"));
                break;
            }
        }
        let (ended, failed) = {
            let g = lock(&h.data);
            let ended = g.process.as_ref().is_some_and(|p| !p.running);
            (ended, g.state != State::Live)
        };
        if failed || claimed.load(Ordering::Acquire) {
            break;
        }
        if ended || start.elapsed() > CONNECT_WITHIN {
            // A proof may be under way: give it the time it has.
            let until = Instant::now() + super::gate::PROVE_WITHIN;
            while !waiting.is_empty() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            let mut g = lock(&h.data);
            if g.state == State::Live && !claimed.load(Ordering::Acquire) {
                let why = if ended {
                    "the program ended before its agent connected (see its output above)"
                } else {
                    "the program's agent did not connect within 120 s"
                };
                g.fail(why.into());
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Closing the port refuses whoever comes later.
    port.forget();
}

/// Kill a launched program (the page's Stop button).
pub fn stop(h: &Shared) -> Result<String, String> {
    let mut c = lock(&h.child);
    let child = c.as_mut().ok_or("no running program in this session")?;
    let pid = child.id();
    child
        .kill()
        .map_err(|e| format!("cannot stop pid {pid}: {e}"))?;
    drop(c);
    lock(&h.data).log(format!("stop: killed pid {pid} from the page"));
    Ok(format!("killed pid {pid}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_like_words_and_nothing_more() {
        let w =
            split_command_line(r#"java -cp 'a b' "c \"d\"" e\ f $(touch x) ;rm `y` *"#).unwrap();
        assert_eq!(
            w,
            ["java", "-cp", "a b", "c \"d\"", "e f", "$(touch", "x)", ";rm", "`y`", "*"]
        );
        assert!(split_command_line("java 'open").is_err());
        assert!(split_command_line("java \"open").is_err());
        assert!(split_command_line("java x\\").is_err());
        assert!(split_command_line("java\nrm -rf x").is_err());
        assert!(split_command_line("   ").is_err());
        assert_eq!(split_command_line("java ''").unwrap(), ["java", ""]);
    }

    #[test]
    fn expensive_profiles_are_named() {
        assert!(cost_notes("cpu=samples,heap=sites,heapsample=524288,depth=64").is_empty());
        let n = cost_notes("heap=sites");
        assert_eq!(n.len(), 1);
        assert!(n[0].starts_with("exact allocation sites"), "{n:?}");
        let n = cost_notes("net=h:1");
        assert_eq!(n.len(), 2, "the agent's default is heap=all: {n:?}");
        assert!(cost_notes("cpu=times")[0].contains("cpu=times"));
        assert!(cost_notes("monitor=y")[0].starts_with("monitor=y"));
    }

    #[test]
    fn every_way_of_loading_hprof_is_seen() {
        for a in [
            "-agentpath:/opt/libhprof_rs.so=cpu=samples",
            "-agentlib:hprof_rs=cpu=samples",
            "-agentlib:hprof",
            "-Xrunhprof_rs:cpu=samples",
            "-Xrunhprof:cpu=samples",
        ] {
            assert!(loads_hprof(a), "{a}");
        }
        for a in [
            "-agentpath:/opt/libyourkit.so",
            "-Xmx1g",
            "-Dhprof=1",
            "hprof",
        ] {
            assert!(!loads_hprof(a), "{a}");
        }
    }

    #[test]
    fn agent_options_are_checked_by_the_agent_parser() {
        let w = "net=127.0.0.1:9,tokenfile=/run/t";
        let (o, text) = agent_options("cpu=samples,depth=16", w).unwrap();
        assert_eq!(
            o,
            "cpu=samples,depth=16,net=127.0.0.1:9,tokenfile=/run/t,format=b"
        );
        assert!(!text);
        let (o, text) = agent_options("monitor=y", w).unwrap();
        assert_eq!(o, "monitor=y,net=127.0.0.1:9,tokenfile=/run/t");
        assert!(text);
        assert_eq!(
            agent_options("", "net=127.0.0.1:9,token=abc").unwrap().0,
            "net=127.0.0.1:9,token=abc,format=b"
        );
        assert!(agent_options("cpu=bogus", w)
            .unwrap_err()
            .contains("profile options"));
        assert!(agent_options("file=/etc/passwd", w)
            .unwrap_err()
            .contains("set by the UI"));
        assert!(agent_options("net=evil:1", w)
            .unwrap_err()
            .contains("set by the UI"));
        assert!(agent_options("listen=9000", w)
            .unwrap_err()
            .contains("set by the UI"));
        assert!(agent_options("token=mine", w)
            .unwrap_err()
            .contains("each session has its own"));
        assert!(agent_options("cpu=samples, depth=4", w)
            .unwrap_err()
            .contains("no spaces"));
        assert!(agent_options("monitor=y,format=b", w).is_err());
    }
}
