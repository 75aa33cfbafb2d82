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

use super::model::{Kind, ProcessInfo, State};
use super::sessions::Shared;
use super::{agent_connection, lock, Ui};
use crate::options;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
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
/// parser, then this UI's address. `format=b` is added unless the profile
/// needs text (monitor=y, cpu=times|old, or format=a asked for).
pub fn agent_options(user: &str, net: &str) -> Result<(String, bool), String> {
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
    let parsed = options::parse(user).map_err(|e| format!("profile options: {}", e.description))?;
    if parsed.file.is_some() || parsed.net.is_some() {
        return Err(
            "profile options: file= and net= are set by the UI (the stream comes here)".into(),
        );
    }
    let asked_text = user.split(',').any(|o| o.trim() == "format=a");
    let text = parsed.monitor || parsed.cpu_timing() || asked_text;
    let mut full = if user.is_empty() {
        format!("net={net}")
    } else {
        format!("{user},net={net}")
    };
    if !text {
        full += ",format=b";
    }
    options::parse(&full).map_err(|e| format!("profile options: {}", e.description))?;
    Ok((full, text))
}

/// A port of its own for one program's agent, so the connection on it is
/// that program's, and the agent options (checked) that connect to it.
pub(super) fn agent_port(
    ui: &Ui,
    user_options: &str,
) -> Result<(TcpListener, String, bool), (u16, String)> {
    let listener = TcpListener::bind((ui.agents_addr.ip(), 0))
        .and_then(|l| l.set_nonblocking(true).map(|_| l))
        .map_err(|e| (500, format!("cannot open an agent port: {e}")))?;
    let port = listener.local_addr().map_err(|e| (500, e.to_string()))?;
    let net = super::agent_options(port);
    let net = net.trim_end_matches(",format=b").trim_start_matches("net=");
    let (opts, text) = agent_options(user_options, net).map_err(|e| (400, e))?;
    Ok((listener, opts, text))
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
    if let Some(a) = argv.iter().find(|a| {
        (a.starts_with("-agentpath:") && a.contains("hprof")) || a.starts_with("-agentlib:hprof")
    }) {
        return Err((
            400,
            format!("command line: the UI adds the agent itself; remove {a:?}"),
        ));
    }
    let cwd = cwd.trim();
    if !cwd.is_empty() && !Path::new(cwd).is_dir() {
        return Err((400, format!("working directory {cwd:?} does not exist")));
    }
    let (listener, opts, text) = agent_port(ui, opts)?;
    let agent_arg = format!("-agentpath:{}={opts}", lib.display());
    let h = ui
        .new_session(Kind::Launch, argv.join(" "), None)
        .map_err(|e| (503, e))?;
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
        .spawn(move || accept_agent(&h, listener));
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

/// Wait for the program's agent on its own port; give up when the
/// program ends first, the session failed (an attach was refused), or
/// after [`CONNECT_WITHIN`].
pub(super) fn accept_agent(h: &Shared, listener: TcpListener) {
    let start = Instant::now();
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                lock(&h.data).log("agent connected".into());
                agent_connection(h, stream);
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => {
                lock(&h.data).fail(format!("agent port: {e}"));
                return;
            }
        }
        let (ended, failed) = {
            let g = lock(&h.data);
            let ended = g.process.as_ref().is_some_and(|p| !p.running);
            (ended, g.state != State::Live)
        };
        if failed {
            return;
        }
        if ended || start.elapsed() > CONNECT_WITHIN {
            let mut g = lock(&h.data);
            if g.state == State::Live {
                let why = if ended {
                    "the program ended before its agent connected (see its output above)"
                } else {
                    "the program's agent did not connect within 120 s"
                };
                g.fail(why.into());
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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
    fn agent_options_are_checked_by_the_agent_parser() {
        let (o, text) = agent_options("cpu=samples,depth=16", "127.0.0.1:9").unwrap();
        assert_eq!(o, "cpu=samples,depth=16,net=127.0.0.1:9,format=b");
        assert!(!text);
        let (o, text) = agent_options("monitor=y", "127.0.0.1:9").unwrap();
        assert_eq!(o, "monitor=y,net=127.0.0.1:9");
        assert!(text);
        assert_eq!(
            agent_options("", "127.0.0.1:9").unwrap().0,
            "net=127.0.0.1:9,format=b"
        );
        assert!(agent_options("cpu=bogus", "h:1")
            .unwrap_err()
            .contains("profile options"));
        assert!(agent_options("file=/etc/passwd", "h:1")
            .unwrap_err()
            .contains("set by the UI"));
        assert!(agent_options("net=evil:1", "h:1")
            .unwrap_err()
            .contains("set by the UI"));
        assert!(agent_options("cpu=samples, depth=4", "h:1")
            .unwrap_err()
            .contains("no spaces"));
        assert!(agent_options("monitor=y,format=b", "h:1").is_err());
    }
}
