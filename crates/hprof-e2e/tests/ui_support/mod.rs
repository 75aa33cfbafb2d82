//! Shared by the `hprof-rs ui` tests: start the tool, talk HTTP to it,
//! write synthetic HPROF files.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running `hprof-rs ui`, killed when dropped.
pub struct UiProc {
    child: Child,
    pub port: u16,
    pub token: String,
    pub agent_opts: String,
}

impl Drop for UiProc {
    /// SIGTERM, as a user ends it (the UI removes its token directory),
    /// then SIGKILL if it is still there after 5 s.
    fn drop(&mut self) {
        // SAFETY: kill() with the pid of our own child, which we have not
        // waited for yet (so the pid is not reused).
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl UiProc {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `HOST:PORT` of the agents port (the printed `net=`).
    pub fn agents_addr(&self) -> String {
        self.agent_option("net").expect("net= in the agent options")
    }

    /// One value of the printed agent options.
    pub fn agent_option(&self, name: &str) -> Option<String> {
        self.agent_opts
            .split(',')
            .find_map(|o| o.strip_prefix(&format!("{name}=")[..]))
            .map(str::to_string)
    }

    /// The agents port's token: the first line of the printed
    /// `tokenfile=`.
    pub fn agent_token(&self) -> String {
        let file = self
            .agent_option("tokenfile")
            .expect("tokenfile= in the agent options");
        let text = std::fs::read_to_string(&file).expect("read the token file");
        text.lines().next().unwrap_or("").to_string()
    }

    /// A connection to the agents port that has proved the token, as an
    /// agent started with the printed options does first.
    pub fn agent_connection(&self) -> TcpStream {
        let mut s = TcpStream::connect(self.agents_addr()).expect("connect to the agents port");
        s.write_all(format!("{}\n", self.agent_token()).as_bytes())
            .unwrap();
        s
    }
}

/// Start the tool and read its two start-up lines (bounded: 30 s).
pub fn start_ui(files: &[&str]) -> UiProc {
    start_ui_with(&[], files)
}

/// Start the tool with extra options (`--agent`, `--source`) and files.
pub fn start_ui_with(opts: &[&str], files: &[&str]) -> UiProc {
    let mut cmd = Command::new(env!("HPROF_RS_TOOL"));
    cmd.arg("ui").args(opts).args(files);
    start_ui_command(cmd)
}

/// Start the tool in directory `dir` with `files` named relative to it
/// (as the screenshots show them).
pub fn start_ui_in(dir: &std::path::Path, files: &[&str]) -> UiProc {
    let mut cmd = Command::new(env!("HPROF_RS_TOOL"));
    cmd.current_dir(dir).arg("ui").args(files);
    start_ui_command(cmd)
}

/// Start the tool in at most `bytes` of address space (no Launch: a JVM
/// started from it would inherit the limit).
pub fn start_ui_limited(bytes: u64) -> UiProc {
    let mut cmd = Command::new(env!("HPROF_RS_TOOL"));
    cmd.arg("ui");
    // SAFETY: only async-signal-safe setrlimit runs between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
            Ok(())
        });
    }
    start_ui_command(cmd)
}

fn start_ui_command(mut cmd: Command) -> UiProc {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start hprof-rs ui");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            let Ok(l) = l else { return };
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    let mut proc_ = UiProc {
        child,
        port: 0,
        token: String::new(),
        agent_opts: String::new(),
    };
    for _ in 0..2 {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("start-up line within 30 s");
        if let Some(url) = line.strip_prefix("hprof-rs ui: open http://127.0.0.1:") {
            let (port, token) = url.split_once("/?token=").expect("URL with a token");
            proc_.port = port.parse().unwrap();
            proc_.token = token.to_string();
        } else if let Some(o) = line.strip_prefix("hprof-rs ui: agent options: ") {
            proc_.agent_opts = o.to_string();
        } else {
            panic!("unexpected start-up line {line:?}");
        }
    }
    assert_eq!(proc_.token.len(), 32, "128-bit token in hex");
    assert!(
        proc_.agent_opts.starts_with("net=127.0.0.1:") && proc_.agent_opts.ends_with(",format=b"),
        "{}",
        proc_.agent_opts
    );
    proc_
}

/// An answer: status, headers (lower-case names), body bytes.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.text()))
    }
}

/// One HTTP request with a byte body (the Host header is added unless
/// given).
pub fn request_bytes(
    port: u16,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the UI");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!("{method} {target} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req += &format!("Host: 127.0.0.1:{port}\r\n");
    }
    for (k, v) in headers {
        req += &format!("{k}: {v}\r\n");
    }
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-length"))
    {
        req += &format!("Content-Length: {}\r\n", body.len());
    }
    req += "Connection: close\r\n\r\n";
    s.write_all(req.as_bytes()).unwrap();
    // The server may answer (403, 413) without reading the body.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse_answer(&raw)
}

fn parse_answer(raw: &[u8]) -> Answer {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no answer head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Answer {
        status,
        headers,
        body: raw[end + 4..].to_vec(),
    }
}

/// One HTTP request; (status, body as text).
pub fn request(
    port: u16,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let a = request_bytes(port, method, target, headers, body.as_bytes());
    (a.status, a.text())
}

impl UiProc {
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A GET under the token; any status.
    pub fn get(&self, path: &str, params: &str) -> Answer {
        request_bytes(
            self.port,
            "GET",
            &format!("{path}?token={}&{params}", self.token),
            &[],
            b"",
        )
    }

    pub fn get_json(&self, path: &str, params: &str) -> Value {
        let a = self.get(path, params);
        assert_eq!(a.status, 200, "{path}: {}", a.text());
        a.json()
    }

    /// A POST under the token, from the page's own Origin.
    pub fn post(&self, path: &str, params: &str, body: &[u8]) -> Answer {
        let origin = self.origin();
        request_bytes(
            self.port,
            "POST",
            &format!("{path}?token={}&{params}", self.token),
            &[("Origin", &origin)],
            body,
        )
    }

    pub fn command(&self, session: u64, cmd: &str) -> (u16, Value) {
        let a = self.post(
            &format!("/api/session/{session}/command"),
            "",
            cmd.as_bytes(),
        );
        (a.status, a.json())
    }

    /// Poll the session list until `pred` holds (bounded).
    pub fn wait_for(&self, what: &str, limit: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            let v = self.get_json("/api/sessions", "");
            if pred(&v) {
                return v;
            }
            assert!(start.elapsed() < limit, "timed out waiting for {what}: {v}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The summary of session `id`.
    pub fn session(&self, id: u64) -> Value {
        let v = self.get_json("/api/sessions", "");
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no session {id} in {v}"))
    }

    /// The whole console of a session.
    pub fn console(&self, id: u64) -> String {
        let c = self.get_json(&format!("/api/session/{id}/console"), "since=0");
        c["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| format!("{}\n", l[1].as_str().unwrap()))
            .collect()
    }

    /// Wait until the console of `id` contains `text` (bounded).
    pub fn wait_console(&self, id: u64, text: &str, limit: Duration) -> String {
        let start = Instant::now();
        loop {
            let c = self.console(id);
            if c.contains(text) {
                return c;
            }
            assert!(
                start.elapsed() < limit,
                "console of session {id} never showed {text:?}:\n{c}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Start a program from the Launch API; its session ID.
    pub fn launch(&self, command: &str, options: &str) -> u64 {
        let body = serde_json::json!({"command": command, "options": options, "cwd": ""});
        let a = self.post("/api/launch", "", body.to_string().as_bytes());
        assert_eq!(a.status, 200, "launch: {}", a.text());
        a.json()["session"].as_u64().unwrap()
    }
}

/// A launched agent's internal errors fail the test (its stderr is in the
/// console), as `common::check_agent_stderr` does for direct runs.
pub fn check_console(console: &str) {
    for bad in ["HPROF ERROR: internal error", "panicked at"] {
        assert!(
            !console.contains(bad),
            "the agent reported `{bad}`:\n{console}"
        );
    }
}

/// Writes a binary HPROF stream record by record (4-byte identifiers),
/// for synthetic profiles of known shape.
pub struct HprofWriter {
    pub out: Vec<u8>,
}

impl HprofWriter {
    pub fn new() -> Self {
        let mut out = b"JAVA PROFILE 1.0.2\0".to_vec();
        out.extend_from_slice(&4u32.to_be_bytes());
        out.extend_from_slice(&0u64.to_be_bytes());
        HprofWriter { out }
    }

    pub fn record(&mut self, tag: u8, body: &[u8]) {
        self.out.push(tag);
        self.out.extend_from_slice(&0u32.to_be_bytes());
        self.out
            .extend_from_slice(&(body.len() as u32).to_be_bytes());
        self.out.extend_from_slice(body);
    }

    fn u4s(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_be_bytes()).collect()
    }

    pub fn utf8(&mut self, id: u32, text: &str) {
        let mut b = id.to_be_bytes().to_vec();
        b.extend_from_slice(text.as_bytes());
        self.record(0x01, &b);
    }

    pub fn load_class(&mut self, serial: u32, id: u32, name_id: u32) {
        self.record(0x02, &Self::u4s(&[serial, id, 0, name_id]));
    }

    pub fn frame(
        &mut self,
        id: u32,
        method_name_id: u32,
        source_id: u32,
        class_serial: u32,
        line: i32,
    ) {
        self.record(
            0x04,
            &Self::u4s(&[id, method_name_id, 0, source_id, class_serial, line as u32]),
        );
    }

    pub fn trace(&mut self, serial: u32, thread: u32, frames: &[u32]) {
        let mut v = vec![serial, thread, frames.len() as u32];
        v.extend_from_slice(frames);
        self.record(0x05, &Self::u4s(&v));
    }

    /// (count, trace serial) rows.
    pub fn cpu_samples(&mut self, rows: &[(u32, u32)]) {
        let total: u32 = rows.iter().map(|r| r.0).sum();
        let mut v = vec![total, rows.len() as u32];
        for &(c, t) in rows {
            v.extend_from_slice(&[c, t]);
        }
        self.record(0x0D, &Self::u4s(&v));
    }

    /// (class serial, trace serial, bytes, objects) rows, all live.
    pub fn alloc_sites(&mut self, rows: &[(u32, u32, u32, u32)]) {
        let bytes: u64 = rows.iter().map(|r| u64::from(r.2)).sum();
        let objs: u64 = rows.iter().map(|r| u64::from(r.3)).sum();
        let mut b = 0u16.to_be_bytes().to_vec();
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(&(bytes as u32).to_be_bytes());
        b.extend_from_slice(&(objs as u32).to_be_bytes());
        b.extend_from_slice(&bytes.to_be_bytes());
        b.extend_from_slice(&objs.to_be_bytes());
        b.extend_from_slice(&(rows.len() as u32).to_be_bytes());
        for &(class, trace, by, ob) in rows {
            b.push(0);
            b.extend_from_slice(&Self::u4s(&[class, trace, by, ob, by, ob]));
        }
        self.record(0x06, &b);
    }
}

/// A profile of known shape: `traces` stacks of depth 8 over 1000 methods
/// of class `big.Work` (`m0`..`m999`), each trace sampled `per_trace`
/// times, except trace 1 (all `m0` frames above `root`) which gets
/// `hot` samples; and one allocation site per trace.
pub fn big_profile(traces: u32, per_trace: u32, hot: u32) -> Vec<u8> {
    let mut w = HprofWriter::new();
    w.utf8(1, "big.Work");
    w.utf8(2, "Work.java");
    w.utf8(3, "root");
    w.load_class(1, 100, 1);
    w.frame(1, 3, 2, 1, 1);
    for m in 0..1000u32 {
        w.utf8(10 + m, &format!("m{m}"));
        w.frame(10 + m, 10 + m, 2, 1, 10 + m as i32);
    }
    let mut rows = Vec::new();
    let mut sites = Vec::new();
    for t in 1..=traces {
        // top first: seven methods, then root.
        let mut frames: Vec<u32> = (0..7u32)
            .map(|d| {
                if t == 1 {
                    10
                } else {
                    10 + (t * 7 + d * 131) % 1000
                }
            })
            .collect();
        frames.push(1);
        w.trace(t, 0, &frames);
        rows.push((if t == 1 { hot } else { per_trace }, t));
        sites.push((1, t, 16 * t, t));
    }
    w.cpu_samples(&rows);
    w.alloc_sites(&sites);
    w.out
}

/// HeapShapes (java-fixtures, the heap analyser's known graphs) started in
/// `dir` with `jvm_args`, once it printed "ready"; it exits when `marker`
/// appears in `dir`.
pub fn start_heap_shapes(dir: &std::path::Path, jvm_args: &[String]) -> Child {
    let mut java = Command::new(crate::common::java())
        .current_dir(dir)
        .arg("-Xmx512m")
        .args(jvm_args)
        .arg("-cp")
        .arg(crate::common::fixture_classes())
        .args(["HeapShapes", "marker", "120"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start HeapShapes");
    let mut line = String::new();
    BufReader::new(java.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("ready"), "HeapShapes: {line:?}");
    java
}

/// `jcmd PID GC.heap_dump FILE` of a HeapShapes started in `dir`, then
/// lets it exit.
pub fn jcmd_dump_and_end(mut java: Child, dir: &std::path::Path, file: &std::path::Path) {
    let out = Command::new(crate::common::jdk_home().join("bin/jcmd"))
        .arg(java.id().to_string())
        .arg("GC.heap_dump")
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", crate::common::stdout(&out));
    std::fs::write(dir.join("marker"), b"").unwrap();
    assert!(java.wait().unwrap().success());
}
