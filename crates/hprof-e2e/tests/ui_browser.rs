//! The `hprof-rs ui` page in a real headless Chromium, driven through
//! WebDriver (chromedriver) over plain HTTP. Install the browser with
//! scripts/install-test-tools.sh; without it the tests are skipped with a
//! message. Screenshots are kept as test output under
//! target/tmp/ui-screenshots/ (docs/ui/ is made by scripts/ui-screenshots.py).

use crate::common;
use crate::ui_support;

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
    let port = common::free_port();
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

    /// Set an input's value as typing would (the page listens to `input`).
    fn type_into(&self, id: &str, text: &str) {
        self.call(
            "POST",
            "execute/sync",
            Some(json!({"script": "const e = document.getElementById(arguments[0]); e.value = arguments[1]; e.dispatchEvent(new Event('input')); e.dispatchEvent(new Event('change')); return 1", "args": [id, text]})),
        );
    }

    fn click(&self, selector: &str) {
        let done = self.call(
            "POST",
            "execute/sync",
            Some(json!({"script": "const e = document.querySelector(arguments[0]); if (!e) return false; e.click(); return true", "args": [selector]})),
        );
        assert_eq!(done, json!(true), "nothing to click at {selector}");
    }

    /// Text of the first element matching `selector` (null when none).
    fn text(&self, selector: &str) -> Value {
        self.call(
            "POST",
            "execute/sync",
            Some(json!({"script": "const e = document.querySelector(arguments[0]); return e ? e.textContent : null", "args": [selector]})),
        )
    }

    /// Wait until the text at `selector` equals `want` (bounded).
    fn wait_text(&self, selector: &str, want: &str, limit: Duration) {
        let start = Instant::now();
        loop {
            let v = self.text(selector);
            if v == json!(want) {
                return;
            }
            assert!(
                start.elapsed() < limit,
                "{selector} never showed {want:?}; last {v}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Wait until the text at `selector` contains `part` (bounded).
    fn wait_contains(&self, selector: &str, part: &str, limit: Duration) -> String {
        let start = Instant::now();
        loop {
            let v = self.text(selector);
            if let Some(t) = v.as_str() {
                if t.contains(part) {
                    return t.to_string();
                }
            }
            assert!(
                start.elapsed() < limit,
                "{selector} never showed {part:?}; last {v}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The cells of the first row of a table body, joined by `|`.
    fn first_row(&self, table: &str) -> Value {
        self.js(&format!(
            "const r = document.querySelector('#{table} tbody tr'); return r ? [...r.cells].map(c => c.textContent).join('|') : null"
        ))
    }

    fn open_page(&self, ui: &ui_support::UiProc) {
        let url = format!("http://127.0.0.1:{}/?token={}", ui.port, ui.token);
        self.call("POST", "url", Some(json!({"url": url})));
    }

    fn screenshot(&self, name: &str) -> std::path::PathBuf {
        let b64 = self.call("GET", "screenshot", None);
        let png = base64_decode(b64.as_str().unwrap());
        assert!(png.starts_with(b"\x89PNG"), "a PNG image");
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, &png).unwrap();
        eprintln!("screenshot: {}", p.display());
        // HPROF_UI_SCREENSHOTS=DIR also writes it there (docs/ui/ takes
        // the screenshots the documentation shows).
        if let Some(docs) = std::env::var_os("HPROF_UI_SCREENSHOTS") {
            std::fs::write(std::path::Path::new(&docs).join(name), &png).unwrap();
        }
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

const LIMIT: Duration = Duration::from_secs(60);

fn ok_run(run: &common::BoundedRun) {
    assert!(
        !run.timed_out && run.output.status.success(),
        "{}",
        common::stderr(&run.output)
    );
}

/// The Kept row as the page should show it: the fixture's exact counts
/// (1000 allocated, 1000 live), the bytes as the server reports them (the
/// object size depends on the VM's layout), numbers grouped as en-US.
fn kept_row(ui: &ui_support::UiProc, session: u64) -> String {
    let v = ui.get_json(
        &format!("/api/session/{session}/sites"),
        "class=AllocSites%24Kept",
    );
    let r = &v["rows"][0];
    assert_eq!(r["objects"], 1000, "{r}");
    assert_eq!(r["liveObjects"], 1000, "{r}");
    let g = |k: &str| grouped(r[k].as_u64().unwrap());
    format!(
        "AllocSites$Kept|{}|{}|{}|{}|{}",
        r["site"].as_str().unwrap(),
        g("bytes"),
        g("objects"),
        g("liveBytes"),
        g("liveObjects")
    )
}

/// 1234567 -> "1,234,567", as the page writes numbers.
fn grouped(n: u64) -> String {
    let n = n.to_string();
    let mut out = String::new();
    for (i, c) in n.chars().enumerate() {
        if i > 0 && (n.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
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
    ok_run(&common::run_with_agent_bounded(
        &dir,
        "heap=sites,cutoff=0,depth=4,format=b,file=sites.hprof",
        "AllocSites",
        &[],
        Duration::from_secs(120),
    ));
    let sites = dir.join("sites.hprof");
    let ui = ui_support::start_ui(&[sites.to_str().unwrap()]);
    ok_run(&common::run_with_agent_bounded(
        &dir,
        &format!("cpu=samples,interval=2,depth=16,{}", ui.agent_opts),
        "CpuSplit",
        &["3"],
        Duration::from_secs(120),
    ));
    browser.open_page(&ui);
    // Session 2 is the agent: select it; the flame graph comes first.
    browser.wait_js(
        "return document.querySelectorAll('#sessions li').length",
        &json!(2),
        LIMIT,
    );
    browser.click("#sessions li[data-id=\"2\"]");
    // The flame graph is the tool's one document (the SVG `hprof-rs flame
    // --svg` writes), shown in a frame: its frames are there...
    const FLAME: &str = "const d = document.getElementById('flame').contentDocument; ";
    browser.wait_js(
        &format!("{FLAME} return !!d && d.querySelectorAll('g.f').length >= 4 && [...d.querySelectorAll('g.f')].some(g => g.getAttribute('data-n') === 'CpuSplit.work60')"),
        &json!(true),
        LIMIT,
    );
    browser.screenshot("cpu-flame.png");
    // ...and its own script runs under the page's policy (allowed by its
    // hash, nothing inline otherwise): a click on work60 zooms it to the
    // whole width and shows "Reset zoom", and the zoom is in its fragment.
    browser.wait_js(
        &format!("{FLAME} const g = [...d.querySelectorAll('g.f')].find(g => g.getAttribute('data-n') === 'CpuSplit.work60'); \
         g.querySelector('rect').dispatchEvent(new MouseEvent('click', {{bubbles: true}})); \
         return [g.querySelector('rect').getAttribute('width'), d.getElementById('reset').getAttribute('display'), \
           document.getElementById('flame').contentWindow.location.hash.includes('CpuSplit.work60')]"),
        &json!(["1200.00", null, true]),
        Duration::from_secs(10),
    );
    // Search from the page's box marks the matching frames and says their share.
    browser.type_into("search", "work60");
    browser.wait_js(
        &format!("{FLAME} const hits = [...d.querySelectorAll('g.f')].filter(g => g.querySelector('rect').getAttribute('fill') === 'rgb(230,0,230)'); \
         return hits.length > 0 && hits.every(g => g.getAttribute('data-n').includes('work60')) \
           && d.getElementById('matched').getAttribute('data-share') === '100.0'"),
        &json!(true),
        Duration::from_secs(10),
    );
    // Reset zoom from the page: every frame at its drawn place again.
    browser.click("#unzoom");
    browser.wait_js(
        &format!("{FLAME} return d.getElementById('reset').getAttribute('display') === 'none' && ![...d.querySelectorAll('g.f')].some(g => g.getAttribute('display') === 'none')"),
        &json!(true),
        Duration::from_secs(10),
    );
    // The hot-methods table: work60 on top, with the server's counts.
    browser.click("input[name=cpuview][value=table]");
    let cpu = ui.get_json("/api/session/2/cpu", "flame=0&limit=1");
    let top = &cpu["rows"][0];
    assert_eq!(top["method"], "CpuSplit.work60");
    browser.wait_text("#hot tbody tr td:nth-child(2)", "CpuSplit.work60", LIMIT);
    browser.wait_text(
        "#hot tbody tr td:nth-child(3)",
        &grouped(top["self"].as_u64().unwrap()),
        LIMIT,
    );
    browser.screenshot("cpu-hot-methods.png");
    // Session 1 is the file: the Memory view has the fixture's exact counts.
    browser.click("#sessions li[data-id=\"1\"]");
    browser.click("#tabs button[data-tab=\"memory\"]");
    browser.type_into("classfilter", "AllocSites$Kept");
    let want = kept_row(&ui, 1);
    let start = Instant::now();
    loop {
        let row = browser.first_row("sites");
        let cells: Option<String> = row
            .as_str()
            .map(|r| r.split('|').skip(1).take(6).collect::<Vec<_>>().join("|"));
        if cells.as_deref() == Some(want.as_str()) {
            break;
        }
        assert!(
            start.elapsed() < LIMIT,
            "sites row {row} never became {want}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The table leads with where allocation happens (allocated bytes, the
    // default order) and says so; the report's own order is live bytes.
    browser.wait_contains(
        "#memsum",
        "ordered by allocated bytes (the report's own order is live bytes)",
        LIMIT,
    );
    // The allocation tree of the same class: the stack down to the class,
    // with the same exact count.
    browser.click("input[name=memview][value=tree]");
    browser.wait_contains("#memsum", "1,000 objects", LIMIT);
    browser.type_into("classfilter", "");
    browser.wait_js(
        "return document.querySelectorAll('#alloctree tbody tr').length > 3",
        &json!(true),
        LIMIT,
    );
    browser.screenshot("memory-tree.png");
    browser.click("input[name=memview][value=table]");
    browser.type_into("classfilter", "AllocSites$");
    browser.wait_js(
        "return document.querySelectorAll('#sites tbody tr').length >= 5",
        &json!(true),
        LIMIT,
    );
    browser.screenshot("memory-sites.png");
    // The Attach button opens its form: the agent found, and the JVMs of
    // this user to choose from (the API side: crates/hprof-e2e/tests/ui.rs).
    assert_eq!(
        browser.js("return document.getElementById('attachbtn').disabled"),
        json!(false)
    );
    browser.click("#attachbtn");
    browser.wait_contains("#attachagent", "agent: ", LIMIT);
    assert_eq!(
        browser.js("return document.getElementById('attachpanel').hidden"),
        json!(false)
    );
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
        "-agentpath:{}=cpu=samples,heap=sites,thread=y,{}",
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
    ui.wait_for("the agent to connect", LIMIT, |v| {
        v["sessions"][0]["commands"] == true
    });
    browser.open_page(&ui);
    browser.wait_js(
        "return !document.querySelector('#commands button[data-cmd=\"heap-summary\"]').disabled",
        &json!(true),
        LIMIT,
    );
    browser.click("#commands button[data-cmd=\"heap-summary\"]");
    browser.click("#tabs button[data-tab=\"console\"]");
    browser.wait_contains("#console", "HEAP SUMMARY  live", LIMIT);
    browser.screenshot("console.png");
    // CPU samples on demand: the busy method is on top.
    browser.click("#commands button[data-cmd=\"cpu 0\"]");
    browser.click("#tabs button[data-tab=\"cpu\"]");
    browser.click("input[name=cpuview][value=table]");
    browser.wait_text("#hot tbody tr td:nth-child(2)", "WaitForSignal.busy", LIMIT);
    // The Threads view: main was busy, and its sampling can be turned off
    // from its row (the command reaches the agent: sent, no error).
    browser.click("#tabs button[data-tab=\"threads\"]");
    browser.wait_contains("#threads tbody", "WaitForSignal.busy", LIMIT);
    browser.screenshot("threads.png");
    // Sampling off for one thread, from its row: the command names it.
    let id = browser.js("const b = document.querySelector('#threads button[data-cmd^=\"sampling-off 0x\"]'); if (!b) return null; b.click(); return b.dataset.cmd.split(' ')[1]");
    let id = id
        .as_str()
        .expect("a running thread with sampling buttons")
        .to_string();
    ui.wait_console(
        1,
        &format!("sent: CONTROL cpu sampling off thread={id}"),
        LIMIT,
    );
    // Auto-refresh on while the session is live...
    browser.click("#autocpu");
    assert_eq!(
        browser.js("return document.getElementById('autocpu').checked"),
        json!(true)
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
    browser.wait_text("#state", "ended", LIMIT);
    // ... and off (and not to be ticked) once it ended.
    assert_eq!(
        browser.js("const a = document.getElementById('autocpu'); return [a.checked, a.disabled]"),
        json!([false, true])
    );
    // A finished session's stream downloads whole from its link.
    let size = async_js(&browser, "fetch(document.getElementById('download').href).then(r => r.arrayBuffer()).then(b => done(b.byteLength))");
    assert_eq!(
        size,
        ui.get_json("/api/sessions", "")["sessions"][0]["recorded"]["bytes"]
    );
}

/// Evaluate a script that calls `done(value)` when it is finished.
fn async_js(b: &Driver, body: &str) -> Value {
    b.call(
        "POST",
        "execute/async",
        Some(json!({"script": format!("const done = arguments[arguments.length - 1]; {body}"), "args": []})),
    )
}

/// The Launch form: bad input refused on the page; a monitor=y program's
/// contended lock and waits in the Monitors view; begin/end marks from
/// their buttons; Stop kills a running program.
#[test]
fn launch_form_marks_monitors_and_stop_in_the_page() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("ui_browser_launch");
    let Some(browser) = start_browser(&dir.join("chromium-profile")) else {
        return;
    };
    let ui = ui_support::start_ui_with(
        &[&format!("--agent={}", common::agent_path().display())],
        &[],
    );
    let java = common::java().display().to_string();
    let classes = common::fixture_classes().display().to_string();
    browser.open_page(&ui);
    browser.click("#launchbtn");
    browser.wait_contains("#launchagent", "libhprof_rs.so", LIMIT);
    browser.type_into("launchcmd", "sh -c 'rm -rf /'");
    browser.click("#launchgo");
    browser.wait_contains("#launchresult", "must start with java", LIMIT);
    // A monitor=y program: text stream, the Monitors view.
    browser.type_into(
        "launchcmd",
        &format!("{java} -cp {classes} Contention measure 4 5 20"),
    );
    browser.type_into("launchopts", "monitor=y");
    browser.screenshot("launch.png");
    browser.click("#launchgo");
    browser.wait_js(
        "return document.getElementById('launchpanel').hidden",
        &json!(true),
        LIMIT,
    );
    browser.click("#tabs button[data-tab=\"monitors\"]");
    // rank | monitor | time | % | entries: the fixture's 4 workers x 5 rounds.
    let start = Instant::now();
    loop {
        let row = browser.first_row("montime");
        let cells: Vec<String> = row
            .as_str()
            .unwrap_or("")
            .split('|')
            .map(str::to_string)
            .collect();
        if cells.len() > 4 && cells[1] == "Contention$HotLock" {
            assert_eq!(cells[4], "20", "{row}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "no HotLock row: {row}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    browser.wait_js(
        "return [...document.querySelectorAll('#waits tbody tr')].some(r => r.cells[0].textContent === 'Contention$WaitBox' && r.cells[1].textContent === '2' && r.cells[2].textContent === '1')",
        &json!(true),
        LIMIT,
    );
    browser.screenshot("monitors.png");
    // Begin/end marks from their buttons: what AllocPhases allocated in
    // between, exactly.
    browser.click("#launchbtn");
    browser.type_into(
        "launchcmd",
        &format!("{java} -cp {classes} AllocPhases {}", dir.display()),
    );
    browser.type_into("launchopts", "heap=sites,depth=8");
    browser.click("#launchgo");
    browser.wait_js(
        "return document.getElementById('launchpanel').hidden",
        &json!(true),
        LIMIT,
    );
    let id = ui.get_json("/api/sessions", "")["sessions"][1]["id"]
        .as_u64()
        .unwrap();
    ui.wait_console(id, "[stdout] phase1", LIMIT);
    browser.click("#tabs button[data-tab=\"memory\"]");
    browser.wait_js(
        "return !document.getElementById('markbegin').disabled",
        &json!(true),
        LIMIT,
    );
    browser.click("#markbegin");
    browser.wait_contains("#markinfo", "begin report", LIMIT);
    std::fs::write(dir.join("go"), b"").unwrap();
    ui.wait_console(id, "[stdout] phase2", LIMIT);
    browser.click("#markend");
    browser.wait_contains("#markinfo", "end report", LIMIT);
    browser.type_into("classfilter", "AllocPhases$");
    browser.type_into("sort", "objects");
    let start = Instant::now();
    loop {
        let rows = browser.js("return [...document.querySelectorAll('#sites tbody tr')].map(r => r.cells[1].textContent + '=' + r.cells[4].textContent).join(' ')");
        if rows == json!("AllocPhases$B=3,000 AllocPhases$A=500") {
            break;
        }
        assert!(start.elapsed() < LIMIT, "between the marks: {rows}");
        std::thread::sleep(Duration::from_millis(200));
    }
    browser.wait_contains("#memsum", "allocated between report", LIMIT);
    browser.screenshot("memory-marks.png");
    // Stop: the program is killed, the page says so.
    browser.wait_js(
        "return !document.getElementById('stop').hidden",
        &json!(true),
        LIMIT,
    );
    browser.click("#stop");
    browser.wait_contains("#proc", "killed (signal 9)", LIMIT);
    browser.click("#tabs button[data-tab=\"console\"]");
    browser.wait_contains("#console", "program ended: killed (signal 9)", LIMIT);
    ui_support::check_console(&ui.console(id));
}

/// Files: a 1 000 000-sample profile of 100 000 traces and sites renders
/// at once, paged and cut; a NamedThreads profile's thread filter and line
/// granularity open the source at the sampled line; an uploaded heap dump
/// shows its exact counts in the Heap view.
#[test]
fn big_profiles_uploads_threads_and_the_source_view_in_the_page() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("ui_browser_files");
    let Some(browser) = start_browser(&dir.join("chromium-profile")) else {
        return;
    };
    let (traces, per_trace, hot) = (100_000u32, 10u32, 5000u32);
    std::fs::write(
        dir.join("big.hprof"),
        ui_support::big_profile(traces, per_trace, hot),
    )
    .unwrap();
    ok_run(&common::run_with_agent_bounded(
        &dir,
        "cpu=samples,interval=2,thread=y,depth=16,format=b,file=named.hprof",
        "NamedThreads",
        &["600"],
        Duration::from_secs(120),
    ));
    ok_run(&common::run_with_agent_bounded(
        &dir,
        "heap=dump,format=b,file=dump.hprof",
        "HoldObjects",
        &[],
        Duration::from_secs(120),
    ));
    let src = common::fixtures_src();
    let ui = ui_support::start_ui_with(
        &["--source", src.to_str().unwrap()],
        &[
            dir.join("big.hprof").to_str().unwrap(),
            dir.join("named.hprof").to_str().unwrap(),
        ],
    );
    ui.wait_for("the files to be read", LIMIT, |v| {
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["state"] == "ended")
    });
    browser.open_page(&ui);
    // Session 1, the big profile, is shown first: its flame graph.
    browser.wait_js("return window.hprofFirstView !== null && document.getElementById('flame').contentDocument.querySelectorAll('g.f').length > 0", &json!(true), LIMIT);
    let first = browser.js("return window.hprofFirstView").as_f64().unwrap();
    let frames = browser
        .js("return document.getElementById('flame').contentDocument.querySelectorAll('g.f').length")
        .as_u64()
        .unwrap();
    eprintln!("1 004 990-sample profile: first view drawn {first:.0} ms after navigation, {frames} flame frames");
    assert!(first < 5000.0, "first view took {first} ms");
    assert!(
        frames < 20_000,
        "the flame graph is cut to what is visible: {frames}"
    );
    // The hot methods: 100 rows a page; m0's exact self count.
    let m0_self: u64 = u64::from(hot)
        + (2..=traces).filter(|t| (t * 7) % 1000 == 0).count() as u64 * u64::from(per_trace);
    browser.click("input[name=cpuview][value=table]");
    browser.wait_text("#hot tbody tr td:nth-child(2)", "big.Work.m0", LIMIT);
    browser.wait_text("#hot tbody tr td:nth-child(3)", &grouped(m0_self), LIMIT);
    assert_eq!(
        browser.js("return document.querySelectorAll('#hot tbody tr').length"),
        json!(100)
    );
    browser.click("#hotnext");
    browser.wait_contains("#hotpage", "101–200 of 1,001", LIMIT);
    // The call tree: one root, then 50 of its 1000 children and a row to
    // show more.
    browser.click("input[name=cpuview][value=tree]");
    browser.wait_contains("#calltree tbody", "big.Work.root", LIMIT);
    // A click on the row's name opens it, not only one on its ▸.
    browser.click("#calltree tbody tr .nm");
    browser.wait_js(
        "return document.querySelectorAll('#calltree tbody tr').length",
        &json!(52),
        LIMIT,
    );
    browser.wait_contains("#calltree tbody tr.more", "950 more", LIMIT);
    browser.click("#calltree tbody tr.more");
    browser.wait_js(
        "return document.querySelectorAll('#calltree tbody tr').length",
        &json!(152),
        LIMIT,
    );
    // 100 000 sites: a page of 100.
    browser.click("#tabs button[data-tab=\"memory\"]");
    browser.wait_contains("#page", "1–100 of 100,000", LIMIT);
    assert_eq!(
        browser.js("return document.querySelectorAll('#sites tbody tr').length"),
        json!(100)
    );
    // Session 2: per-thread samples and lines, and the source at a line.
    browser.click("#sessions li[data-id=\"2\"]");
    browser.click("#tabs button[data-tab=\"cpu\"]");
    browser.click("input[name=cpuview][value=flame]");
    browser.wait_js(
        "return document.querySelectorAll('#threadsel option').length > 3",
        &json!(true),
        LIMIT,
    );
    browser.screenshot("cpu-threads.png");
    let alpha = browser.js("return [...document.querySelectorAll('#threadsel option')].find(o => o.textContent.startsWith('worker-alpha')).value");
    browser.type_into("threadsel", alpha.as_str().unwrap());
    browser.type_into("gran", "line");
    browser.click("input[name=cpuview][value=table]");
    browser.wait_text(
        "#hot tbody tr td:nth-child(2)",
        "NamedThreads.spinAlpha(NamedThreads.java:9)",
        LIMIT,
    );
    browser.click("#hot tbody tr td.src");
    browser.wait_contains("#sourcepath", "NamedThreads.java:9", LIMIT);
    browser.wait_contains("#srcline", "static void spinAlpha(long ms)", LIMIT);
    browser.screenshot("source.png");
    browser.click("#sourceclose");
    browser.type_into("threadsel", "");
    browser.type_into("gran", "method");
    browser.click("input[name=cpuview][value=tree]");
    browser.wait_contains("#calltree tbody", "java.lang.Thread.run", LIMIT);
    browser.click("#calltree tbody tr .toggle");
    browser.wait_js(
        "return document.querySelectorAll('#calltree tbody tr').length > 3",
        &json!(true),
        LIMIT,
    );
    browser.screenshot("cpu-call-tree.png");
    // An upload from the page: the heap dump, its exact counts.
    let el = browser.call(
        "POST",
        "element",
        Some(json!({"using": "css selector", "value": "#upload"})),
    );
    let eid = el
        .as_object()
        .and_then(|o| o.values().next())
        .and_then(Value::as_str)
        .expect("element id")
        .to_string();
    let path = dir.join("dump.hprof");
    browser.call(
        "POST",
        &format!("element/{eid}/value"),
        Some(json!({"text": path.to_str().unwrap()})),
    );
    browser.wait_contains("#uploadresult", "dump.hprof: session #3", LIMIT);
    browser.click("#tabs button[data-tab=\"heap\"]");
    browser.type_into("heapfilter", "HoldObjects");
    let start = Instant::now();
    loop {
        let rows = browser.js("return [...document.querySelectorAll('#heaptable tbody tr')].map(r => r.cells[1].textContent + '=' + r.cells[2].textContent).sort().join(' ')");
        if rows == json!("HoldObjects$HeldA=3,000 HoldObjects$HeldA[]=50 HoldObjects$HeldB=700") {
            break;
        }
        assert!(start.elapsed() < LIMIT, "heap rows: {rows}");
        std::thread::sleep(Duration::from_millis(200));
    }
    browser.type_into("heapfilter", "");
    browser.wait_js(
        "return document.querySelectorAll('#heaptable tbody tr').length",
        &json!(100),
        LIMIT,
    );
    browser.screenshot("heap.png");
}

/// Click the link of the analyser's answer whose text is `text` (the
/// first one in `scope`).
fn click_link(b: &Driver, scope: &str, text: &str) {
    assert!(
        try_click_link(b, scope, text),
        "no link {text:?} in {scope}"
    );
}

/// Clicks the link reading `text` within `scope`, if there is one.
fn try_click_link(b: &Driver, scope: &str, text: &str) -> bool {
    b.call(
        "POST",
        "execute/sync",
        Some(json!({"script": "const a = [...document.querySelectorAll(arguments[0] + ' a')].find(a => a.textContent === arguments[1]); if (!a) return false; a.click(); return true", "args": [scope, text]})),
    ) == json!(true)
}

/// The Heap tab's analyser (issue 29 item 4) on a `jcmd GC.heap_dump` of
/// HeapShapes: from the class table by clicks to an instance, its fields
/// and referrers, and the path from a GC root; back and forward are the
/// browser's.
#[test]
fn the_heap_analyser_follows_a_path_from_a_class_to_a_gc_root() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("ui_browser_heap_path");
    let Some(browser) = start_browser(&dir.join("chromium-profile")) else {
        return;
    };
    let java = ui_support::start_heap_shapes(&dir, &[]);
    let file = dir.join("heap.hprof");
    ui_support::jcmd_dump_and_end(java, &dir, &file);

    let ui = ui_support::start_ui_in(&dir, &["heap.hprof"]);
    open_heap_tab(&browser, &ui);
    browser.click("#heapanalyse");
    browser.wait_contains("#heapanswer h3", "objects", LIMIT);
    browser.type_into("heapfilter", "HeapShapes$Owner");
    browser.wait_js(
        "return [...document.querySelectorAll('#heapanswer .heapclasses tbody tr')].map(r => r.cells[0].textContent + '=' + r.cells[1].textContent + '/' + r.cells[3].textContent).join(' ')",
        &json!("HeapShapes$Owner=1/10,392"),
        LIMIT,
    );
    // Class -> its instances -> the one Owner.
    click_link(&browser, "#heapanswer .heapclasses", "HeapShapes$Owner");
    browser.wait_contains("#heapanswer h3", "1 object of HeapShapes$Owner", LIMIT);
    let owner = browser
        .js("return document.querySelector('#heapanswer .heapobjects tbody tr td a').textContent");
    let owner = owner.as_str().unwrap().to_string();
    assert!(owner.starts_with("0x"), "{owner}");
    click_link(&browser, "#heapanswer .heapobjects", &owner);
    browser.wait_contains("#heapanswer h3", "HeapShapes$Owner (instance)", LIMIT);
    let about = browser.wait_contains("#heapanswer p", "retained 10,392 bytes", LIMIT);
    assert!(about.contains("shallow 16 bytes"), "{about}");
    // Its field and its referrer (the static) are there, as links.
    let fields = browser.js("return [...document.querySelectorAll('#heapanswer .heapfields tbody tr')].map(r => r.cells[0].textContent + ':' + r.cells[1].textContent).join(' ')");
    assert_eq!(fields, json!("leaves:java.lang.Object"));
    let referrer = browser.js("return [...document.querySelectorAll('#heapanswer .heaprefs')][1].tBodies[0].rows[0].cells[2].textContent");
    assert_eq!(referrer, json!("owner"));
    // The path from a GC root: ends at the Owner, through the static.
    click_link(&browser, "#heapanswer", "path from a GC root");
    browser.wait_contains("#heapanswer h3", "Path from a GC root", LIMIT);
    let steps = browser.js(
        "return [...document.querySelectorAll('#heapanswer .heappath li')].map(l => l.textContent)",
    );
    let steps: Vec<String> = serde_json::from_value(steps).unwrap();
    assert!(steps.len() >= 2, "{steps:?}");
    assert_eq!(
        steps.last().unwrap(),
        &format!(".owner → {owner} HeapShapes$Owner")
    );
    // The static's holder is named by the class it stands for.
    let holder = &steps[steps.len() - 2];
    assert!(holder.ends_with(" class HeapShapes"), "{steps:?}");
    browser.screenshot("heap-path.png");
    // Up to the root by a click: it says it is one.
    let root =
        browser.js("return document.querySelector('#heapanswer .heappath li a').textContent");
    click_link(&browser, "#heapanswer .heappath", root.as_str().unwrap());
    browser.wait_contains("#heapanswer p", "GC root:", LIMIT);
    // Back to the path, forward to the root again: the browser's history.
    browser.click("#heapback");
    browser.wait_contains("#heapanswer h3", "Path from a GC root", LIMIT);
    browser.click("#heapfwd");
    browser.wait_contains("#heapanswer p", "GC root:", LIMIT);
    browser.click("#heapback");
    browser.click("#heapback");
    browser.wait_contains("#heapanswer h3", "HeapShapes$Owner (instance)", LIMIT);
    // The top of the dominator tree: the HeapShapes class object, whose
    // statics hold the 200 000 Nodes, is among the first retainers.
    browser.click("#heaptop");
    browser.wait_contains("#heapanswer h3", "The biggest retainers", LIMIT);
    // Leak suspects: the list's head retains more than 10 % of the heap.
    browser.click("#heapsuspects");
    let s = browser.wait_contains("#heapanswer", "Leak suspects", LIMIT);
    assert!(s.contains("HeapShapes$Node"), "{s}");
    // HotSpot's dumps carry no allocation traces: said.
    browser.click("#heapsites");
    browser.wait_contains("#heapanswer .error", "no allocation traces", LIMIT);
}

/// Picks `value` in the select `id`, as a user would (a change event).
fn choose(b: &Driver, id: &str, value: &str) {
    let done = b.call(
        "POST",
        "execute/sync",
        Some(json!({"script": "const s = document.getElementById(arguments[0]); if (![...s.options].some(o => o.value === arguments[1])) return false; s.value = arguments[1]; s.dispatchEvent(new Event('change')); return true", "args": [id, value]})),
    );
    assert_eq!(done, json!(true), "no option {value:?} in #{id}");
}

/// The Heap tab's diff (issue 29 item 4): another session's dump chosen
/// (two files here, lists of 3 and 5 nodes), the change per class sorted by
/// a column, each class a link to its instances in either dump.
#[test]
fn the_heap_tab_compares_two_dumps() {
    let dir = common::scratch("ui_browser_heap_diff");
    let Some(browser) = start_browser(&dir.join("chromium-profile")) else {
        return;
    };
    let a = common::synth::write_list(&dir.join("a.hprof"), 3);
    let b = common::synth::write_list(&dir.join("b.hprof"), 5);
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let ui = ui_support::start_ui(&[a, b]);
    open_heap_tab(&browser, &ui);
    // Every dump of every session, and an upload.
    browser.wait_js(
        "return [...document.querySelectorAll('#heapother option')].map(o => o.value).join(' ')",
        &json!(" 1:1 2:1 upload"),
        LIMIT,
    );
    choose(&browser, "heapother", "2:1");
    browser.wait_contains(
        "#heapanswer h3",
        "from dump 1 of session #1 to dump 1 of session #2: 1 class changed",
        LIMIT,
    );
    let rows = "return [...document.querySelectorAll('#heapanswer .heapdiff tbody tr')].map(r => [...r.cells].slice(0, 4).map(c => c.textContent).join('|')).join(' ')";
    let row = browser.js(rows);
    let cells: Vec<String> = row.as_str().unwrap().split('|').map(String::from).collect();
    assert_eq!(cells[..2], ["Node1", "+2"], "{row}");
    assert!(cells[2].starts_with('+') && cells[2] == cells[3], "{row}");
    // Sorted by another column: its heading says so.
    click_link(&browser, "#heapanswer .heapdiff thead", "Δ instances");
    browser.wait_contains("#heapanswer .heapdiff thead", "Δ instances ▼", LIMIT);
    assert_eq!(browser.js(rows), row);
    // The class in the other dump: the other session, its 4 Node1.
    click_link(&browser, "#heapanswer .heapdiff", "dump 1 of #2");
    browser.wait_contains("#heapanswer h3", "4 objects of Node1", LIMIT);
    browser.wait_js(
        "return document.querySelector('#sessions li.sel').dataset.id",
        &json!("2"),
        LIMIT,
    );
    // Back to the diff, then the class in this dump: its 2 Node1.
    browser.click("#heapback");
    browser.wait_contains("#heapanswer h3", "1 class changed", LIMIT);
    click_link(&browser, "#heapanswer .heapdiff tbody", "Node1");
    browser.wait_contains("#heapanswer h3", "2 objects of Node1", LIMIT);
}

/// DUMP HEAP of a live session opens its dump in the analyser (issue 29
/// item 4): the histogram and the index build's progress first, then the
/// class table; an object's allocation frames lead to the source view at
/// the allocating line and to the objects allocated at the same site, and
/// the sites view's counts to each site's objects.
#[test]
fn a_live_heap_dump_opens_in_the_analyser_and_its_frames_lead_on() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("ui_browser_heap_live");
    let Some(browser) = start_browser(&dir.join("chromium-profile")) else {
        return;
    };
    let src = common::fixtures_src();
    let ui = ui_support::start_ui_with(&["--source", src.to_str().unwrap()], &[]);
    let agent = format!(
        "-agentpath:{}=heap=all,depth=4,{}",
        common::agent_path().display(),
        ui.agent_opts
    );
    let java = ui_support::start_heap_shapes(&dir, &[agent]);
    browser.open_page(&ui);
    browser.wait_js(
        "return !!document.querySelector('#sessions li.sel') && !document.getElementById('dumpheap').disabled",
        &json!(true),
        LIMIT,
    );
    browser.click("#tabs button[data-tab=\"heap\"]");
    // What the status line says, and whether the histogram shows, as the
    // dump arrives and its index is built.
    browser.js("window.heapSeen = []; new MutationObserver(() => window.heapSeen.push(document.getElementById('heapstatus').textContent + '|' + document.getElementById('heaptable').hidden)).observe(document.getElementById('heapstatus'), {childList: true, characterData: true, subtree: true}); return true");
    browser.click("#dumpheap");
    browser.wait_contains("#heapanswer h3", "Dump 1:", LIMIT);
    let hash = browser.js("return location.hash");
    assert!(
        hash.as_str().unwrap().contains("q=classes&dump=1"),
        "{hash}"
    );
    let seen: Vec<String> = serde_json::from_value(browser.js("return window.heapSeen")).unwrap();
    assert!(
        seen.iter().any(|s| s.starts_with("Heap dump asked for")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|s| s.starts_with("Indexing dump 1") && s.ends_with("|false")),
        "progress with the histogram shown: {seen:?}"
    );
    // Owner, allocated in HeapShapes.makeOwner at a line of the fixture.
    let line = std::fs::read_to_string(src.join("HeapShapes.java"))
        .unwrap()
        .lines()
        .position(|l| l.contains("Owner o = new Owner()"))
        .expect("the allocation of Owner")
        + 1;
    browser.type_into("heapfilter", "HeapShapes$Owner");
    click_link_when(&browser, "#heapanswer .heapclasses", "HeapShapes$Owner");
    browser.wait_contains("#heapanswer h3", "1 object of HeapShapes$Owner", LIMIT);
    let owner = browser
        .js("return document.querySelector('#heapanswer .heapobjects tbody tr td a').textContent");
    let owner = owner.as_str().unwrap().to_string();
    click_link(&browser, "#heapanswer .heapobjects", &owner);
    browser.wait_contains("#heapanswer h3", "HeapShapes$Owner (instance)", LIMIT);
    let frames = browser.js("return [...document.querySelectorAll('#heapanswer .heaptrace li')].map(l => l.querySelector('a.frame').textContent + '|' + (l.querySelector('.src') ? 'src' : ''))");
    let frames: Vec<String> = serde_json::from_value(frames).unwrap();
    assert_eq!(
        frames.first().map(String::as_str),
        Some(format!("HeapShapes.makeOwner (HeapShapes.java:{line})|src").as_str()),
        "{frames:?}"
    );
    // The frame's source, at its line.
    browser.click("#heapanswer .heaptrace li .src");
    browser.wait_text("#sourcepath", &format!("HeapShapes.java:{line}"), LIMIT);
    let at = browser.text("#srcline");
    assert!(at.as_str().unwrap().contains("new Owner()"), "{at}");
    browser.click("#sourceclose");
    // The frame itself: the objects allocated at its site, the Owner among them.
    browser.click("#heapanswer .heaptrace li a.frame");
    browser.wait_contains("#heapanswer h3", "allocated at trace", LIMIT);
    let ids = browser.js("return [...document.querySelectorAll('#heapanswer .heapobjects tbody tr')].map(r => r.cells[0].textContent)");
    let ids: Vec<String> = serde_json::from_value(ids).unwrap();
    assert!(ids.contains(&owner), "{owner} in {ids:?}");
    // Every site; the ten Leafs' site (makeOwner's loop) by its count.
    click_link(&browser, "#heapanswer", "every allocation site");
    browser.wait_contains("#heapanswer h3", "per allocation site", LIMIT);
    let leafs = browser.js("const r = [...document.querySelectorAll('#heapanswer .heapsites tbody tr')].find(r => r.cells[0].textContent === '10' && r.cells[3].textContent.startsWith('HeapShapes.makeOwner')); if (!r) return false; r.cells[0].querySelector('a').click(); return true");
    assert_eq!(leafs, json!(true));
    browser.wait_contains("#heapanswer h3", "10 objects allocated at trace", LIMIT);
    let classes = browser.js("return [...new Set([...document.querySelectorAll('#heapanswer .heapobjects tbody tr')].map(r => r.cells[1].textContent))].join(' ')");
    assert_eq!(classes, json!("HeapShapes$Leaf"));
    std::fs::write(dir.join("marker"), b"").unwrap();
    let mut java = java;
    assert!(java.wait().unwrap().success());
}

/// `click_link`, once the link is there (an answer still being fetched).
fn click_link_when(b: &Driver, scope: &str, text: &str) {
    let start = Instant::now();
    while !try_click_link(b, scope, text) {
        assert!(start.elapsed() < LIMIT, "no link {text:?} in {scope}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The page, once a session is selected, on its Heap tab.
fn open_heap_tab(browser: &Driver, ui: &ui_support::UiProc) {
    browser.open_page(ui);
    browser.wait_js(
        "return document.querySelectorAll('#sessions li.sel').length",
        &json!(1),
        LIMIT,
    );
    browser.click("#tabs button[data-tab=\"heap\"]");
}
