//! The `hprof-rs ui` page in a real headless Chromium, driven through
//! WebDriver (chromedriver) over plain HTTP. Install the browser with
//! scripts/install-test-tools.sh; without it the test is skipped with a
//! message. Screenshots are kept under target/tmp/ui-screenshots/.

#[allow(dead_code)]
mod common;
#[allow(dead_code)]
mod ui_support;

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Driver {
    child: Child,
    port: u16,
    session: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = wd(
                self.port,
                "DELETE",
                &format!("/session/{}", self.session),
                None,
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One WebDriver call: (HTTP status, JSON answer).
fn wd(port: u16, method: &str, path: &str, body: Option<Value>) -> Result<(u16, Value), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    // chromedriver keeps the connection open: read by Content-Length.
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        let n = s.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed before the answer's head".into());
        }
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_string();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while raw.len() < head_end + len {
        let n = s.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let json = serde_json::from_slice(&raw[head_end..]).unwrap_or(Value::Null);
    Ok((status, json))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn which(name: &str) -> Option<String> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
        .ok()?;
    let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!p.is_empty()).then_some(p)
}

/// A chromedriver with one headless Chromium session, or None (skip).
fn start_browser(profile_dir: &std::path::Path) -> Option<Driver> {
    let (Some(driver), Some(chromium)) = (which("chromedriver"), which("chromium")) else {
        eprintln!(
            "SKIPPED: chromium and chromedriver are not installed; run scripts/install-test-tools.sh"
        );
        return None;
    };
    let port = free_port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    let mut d = Driver {
        child,
        port,
        session: String::new(),
    };
    let start = Instant::now();
    while !matches!(wd(port, "GET", "/status", None), Ok((200, ref v)) if v["value"]["ready"] == true)
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "chromedriver not ready in 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let caps = json!({"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1000",
                     format!("--user-data-dir={}", profile_dir.display())]
        }
    }}});
    let (st, v) = wd(port, "POST", "/session", Some(caps)).expect("new session");
    assert_eq!(st, 200, "WebDriver session: {v}");
    d.session = v["value"]["sessionId"].as_str().unwrap().to_string();
    Some(d)
}

impl Driver {
    fn call(&self, method: &str, what: &str, body: Option<Value>) -> Value {
        let (st, v) = wd(
            self.port,
            method,
            &format!("/session/{}/{what}", self.session),
            body,
        )
        .unwrap();
        assert_eq!(st, 200, "{what}: {v}");
        v["value"].clone()
    }

    fn js(&self, script: &str) -> Value {
        self.call(
            "POST",
            "execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// Evaluate `script` until it returns `want` (bounded).
    fn wait_js(&self, script: &str, want: &Value, limit: Duration) -> Value {
        let start = Instant::now();
        loop {
            let v = self.js(script);
            if &v == want {
                return v;
            }
            assert!(
                start.elapsed() < limit,
                "page never showed {want}; last {v}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn screenshot(&self, name: &str) -> std::path::PathBuf {
        let b64 = self.call("GET", "screenshot", None);
        let png = base64_decode(b64.as_str().unwrap());
        assert!(png.starts_with(b"\x89PNG"), "a PNG image");
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, png).unwrap();
        eprintln!("screenshot: {}", p.display());
        p
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("bad base64 byte {c}"),
    };
    let bytes: Vec<u8> = s
        .bytes()
        .filter(|&c| c != b'=' && !c.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= u32::from(val(c)) << (18 - 6 * i);
        }
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

#[test]
fn the_page_shows_the_hot_method_and_the_sites_of_real_jvms() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("ui_browser");
    let Some(browser) = start_browser(&dir.join("chromium-profile")) else {
        return;
    };
    // A sites file opened from the command line, and a live agent session.
    let run = common::run_with_agent_bounded(
        &dir,
        "heap=sites,cutoff=0,depth=4,format=b,file=sites.hprof",
        "AllocSites",
        &[],
        Duration::from_secs(120),
    );
    assert!(
        !run.timed_out && run.output.status.success(),
        "{}",
        common::stderr(&run.output)
    );
    let sites = dir.join("sites.hprof");
    let ui = ui_support::start_ui(&[sites.to_str().unwrap()]);
    let run = common::run_with_agent_bounded(
        &dir,
        &format!("cpu=samples,interval=2,{}", ui.agent_opts),
        "CpuSplit",
        &["3"],
        Duration::from_secs(120),
    );
    assert!(
        !run.timed_out && run.output.status.success(),
        "{}",
        common::stderr(&run.output)
    );

    let url = format!("http://127.0.0.1:{}/?token={}", ui.port, ui.token);
    browser.call("POST", "url", Some(json!({"url": url})));
    // Session 2 is the agent: select it and read the CPU view's first row.
    browser.wait_js(
        "return document.querySelectorAll('#sessions li').length",
        &json!(2),
        Duration::from_secs(30),
    );
    browser.js("document.querySelector('#sessions li[data-id=\"2\"]').click(); return 1");
    browser.wait_js(
        "const c = document.querySelector('#hot tbody tr td:nth-child(2)'); return c ? c.textContent : null",
        &json!("CpuSplit.work60"),
        Duration::from_secs(30),
    );
    let frames = browser.js("return document.querySelectorAll('#flame .fr').length");
    assert!(frames.as_u64().unwrap() >= 4, "flame graph drawn: {frames}");
    browser.screenshot("cpu.png");
    // Search marks the matching frames.
    browser.js("const s = document.getElementById('search'); s.value = 'work30'; s.dispatchEvent(new Event('input')); return 1");
    browser.wait_js(
        "return [...document.querySelectorAll('#flame .fr.hit')].every(e => e.title.includes('work30')) && document.querySelectorAll('#flame .fr.hit').length > 0",
        &json!(true),
        Duration::from_secs(10),
    );
    // Session 1 is the file: the Memory view has the fixture's exact counts.
    browser.js("document.querySelector('#sessions li[data-id=\"1\"]').click(); document.querySelector('#tabs button[data-tab=\"memory\"]').click(); const c = document.getElementById('classfilter'); c.value = 'AllocSites$Kept'; c.dispatchEvent(new Event('input')); return 1");
    browser.wait_js(
        "const r = document.querySelector('#sites tbody tr'); return r ? [...r.cells].map(c => c.textContent).slice(1, 7).join('|') : null",
        &json!(kept_row(&ui)),
        Duration::from_secs(30),
    );
    browser.screenshot("memory.png");
    // The Attach mode says it is not there yet.
    let attach = browser.js("return document.getElementById('attach').textContent");
    assert!(
        attach.as_str().unwrap().contains("not available yet"),
        "{attach}"
    );
}

/// The Kept row as the page should show it: the fixture's exact counts
/// (1000 allocated, 1000 live), the bytes as the server reports them (the
/// object size depends on the VM's layout), numbers grouped as en-US.
fn kept_row(ui: &ui_support::UiProc) -> String {
    let v = ui.get_json("/api/session/1/sites", "class=AllocSites%24Kept");
    let r = &v["rows"][0];
    assert_eq!(r["objects"], 1000, "{r}");
    assert_eq!(r["liveObjects"], 1000, "{r}");
    let g = |k: &str| {
        let n = r[k].as_u64().unwrap().to_string();
        let mut out = String::new();
        for (i, c) in n.chars().enumerate() {
            if i > 0 && (n.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    format!(
        "AllocSites$Kept|{}|{}|{}|{}|{}",
        r["site"].as_str().unwrap(),
        g("bytes"),
        g("objects"),
        g("liveBytes"),
        g("liveObjects")
    )
}

#[test]
fn buttons_send_commands_to_a_running_agent_and_the_answer_shows() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("ui_browser_cmd");
    let Some(browser) = start_browser(&dir.join("chromium-profile")) else {
        return;
    };
    let ui = ui_support::start_ui(&[]);
    let agent = format!(
        "-agentpath:{}=cpu=samples,heap=sites,{}",
        common::agent_path().display(),
        ui.agent_opts
    );
    let mut cmd = Command::new(common::java());
    cmd.current_dir(&dir)
        .arg(&agent)
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("WaitForSignal")
        .arg(dir.join("never").to_str().unwrap())
        .arg("60");
    // Ended by the Exit VM button; the bound kills it otherwise.
    let jvm = std::thread::spawn(move || common::run_command_bounded(cmd, Duration::from_secs(90)));
    ui.wait_for("the agent to connect", Duration::from_secs(60), |v| {
        v["sessions"][0]["commands"] == true
    });
    let url = format!("http://127.0.0.1:{}/?token={}", ui.port, ui.token);
    browser.call("POST", "url", Some(json!({"url": url})));
    browser.wait_js(
        "return !document.querySelector('#commands button[data-cmd=\"heap-summary\"]').disabled",
        &json!(true),
        Duration::from_secs(30),
    );
    browser.js("document.querySelector('#commands button[data-cmd=\"heap-summary\"]').click(); document.querySelector('#tabs button[data-tab=\"console\"]').click(); return 1");
    browser.wait_js(
        "return document.getElementById('console').textContent.includes('HEAP SUMMARY  live')",
        &json!(true),
        Duration::from_secs(30),
    );
    browser.screenshot("console.png");
    // CPU samples on demand: the busy method is on top.
    browser.js("document.querySelector('#commands button[data-cmd=\"cpu\"]').click(); document.querySelector('#tabs button[data-tab=\"cpu\"]').click(); return 1");
    browser.wait_js(
        "const c = document.querySelector('#hot tbody tr td:nth-child(2)'); return c ? c.textContent : null",
        &json!("WaitForSignal.busy"),
        Duration::from_secs(30),
    );
    // Exit VM asks first; declining sends nothing, accepting ends the JVM.
    browser.js("window.confirm = () => false; document.getElementById('exitvm').click(); return 1");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        ui.get_json("/api/sessions", "")["sessions"][0]["state"],
        "live"
    );
    browser.js("window.confirm = () => true; document.getElementById('exitvm').click(); return 1");
    let run = jvm.join().unwrap();
    assert!(!run.timed_out, "the Exit VM button ended the JVM");
    browser.wait_js(
        "return document.getElementById('state').textContent",
        &json!("ended"),
        Duration::from_secs(30),
    );
}
