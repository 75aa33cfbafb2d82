//! Shared by the `hprof-rs ui` tests: start the tool, talk HTTP to it.

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
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start the tool and read its two start-up lines (bounded: 30 s).
pub fn start_ui(files: &[&str]) -> UiProc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hprof-rs"))
        .arg("ui")
        .args(files)
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

/// One HTTP request; (status, body).
pub fn request(
    port: u16,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the UI");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!("{method} {target} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req += &format!("Host: 127.0.0.1:{port}\r\n");
    }
    for (k, v) in headers {
        req += &format!("{k}: {v}\r\n");
    }
    req += &format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read the answer");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|x| x.1)
        .unwrap_or("")
        .to_string();
    (status, body)
}

impl UiProc {
    pub fn get_json(&self, path: &str, params: &str) -> serde_json::Value {
        let (st, body) = request(
            self.port,
            "GET",
            &format!("{path}?token={}&{params}", self.token),
            &[],
            "",
        );
        assert_eq!(st, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
    }

    pub fn command(&self, session: u64, cmd: &str) -> (u16, serde_json::Value) {
        let (st, body) = request(
            self.port,
            "POST",
            &format!("/api/session/{session}/command?token={}", self.token),
            &[("Origin", &format!("http://127.0.0.1:{}", self.port))],
            cmd,
        );
        (st, serde_json::from_str(&body).unwrap())
    }

    /// Poll the session list until `pred` holds (bounded).
    pub fn wait_for(
        &self,
        what: &str,
        limit: Duration,
        pred: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
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
}
