//! `hprof-rs ui`: a local web front-end (docs/ui.md). One process serves an
//! embedded page on a loopback port, accepts agents started with the printed
//! `net=` option on a second port (each connection is a session), opens the
//! files given on the command line, and answers the page's JSON requests
//! and commands. Every request must carry the random token of the printed
//! URL and a Host (and, when present, Origin) naming this server, so other
//! local pages and users cannot read or drive the profiler.

pub mod http;
pub mod model;
pub mod pprof;

use crate::protocol::Command;
use crate::reader::{HeapSubRecord, HprofReader, ReadOptions, RecordBody};
use model::{MethodFilter, Session, State};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PAGE: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/style.css");

/// Page connections served at once; more wait in the accept queue.
const MAX_CONNECTIONS: usize = 64;
/// Agents connected at once; more are refused (closed at once).
const MAX_AGENTS: usize = 64;

pub struct UiArgs {
    pub bind: String,
    pub agents: String,
    pub files: Vec<String>,
}

type Shared = Arc<Mutex<Session>>;

/// What every request handler sees.
pub struct Ui {
    token: String,
    /// Host header values that name this server.
    hosts: Vec<String>,
    sessions: Mutex<Vec<Shared>>,
    /// Command channels of live agent sessions, by session id.
    senders: Mutex<HashMap<u32, TcpStream>>,
    next_id: AtomicU32,
    agents_addr: SocketAddr,
}

/// Lock a session, recovering from a panicked holder (its data stays
/// usable: every update is one assignment).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// 128 random bits from the kernel, as hex.
fn random_token() -> Result<String, String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| format!("cannot read /dev/urandom for the access token: {e}"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

fn host_names(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut v = vec![match addr {
        SocketAddr::V4(a) => format!("{}:{port}", a.ip()),
        SocketAddr::V6(a) => format!("[{}]:{port}", a.ip()),
    }];
    if addr.ip().is_loopback() {
        v.push(format!("localhost:{port}"));
        v.push(format!("127.0.0.1:{port}"));
        v.push(format!("[::1]:{port}"));
    }
    v
}

/// Start-up lines printed on stdout (the contract of docs/ui.md).
pub fn startup_lines(page: SocketAddr, agents: SocketAddr, token: &str) -> [String; 2] {
    let host = |a: SocketAddr| match a {
        SocketAddr::V6(x) => format!("[{}]:{}", x.ip(), x.port()),
        SocketAddr::V4(x) => format!("{}:{}", x.ip(), x.port()),
    };
    [
        format!("hprof-rs ui: open http://{}/?token={token}", host(page)),
        format!("hprof-rs ui: agent options: net={},format=b", host(agents)),
    ]
}

pub fn run(args: UiArgs) -> Result<(), String> {
    let web = TcpListener::bind(args.bind.as_str())
        .map_err(|e| format!("cannot listen on {}: {e}", args.bind))?;
    let agents = TcpListener::bind(args.agents.as_str())
        .map_err(|e| format!("cannot listen for agents on {}: {e}", args.agents))?;
    let web_addr = web.local_addr().map_err(|e| e.to_string())?;
    let agents_addr = agents.local_addr().map_err(|e| e.to_string())?;
    if !web_addr.ip().is_loopback() {
        eprintln!(
            "hprof-rs ui: warning: the page is reachable from other hosts at {web_addr}; \
             anyone holding the token can drive the profiler"
        );
    }
    let ui = Arc::new(Ui {
        token: random_token()?,
        hosts: host_names(web_addr),
        sessions: Mutex::new(Vec::new()),
        senders: Mutex::new(HashMap::new()),
        next_id: AtomicU32::new(1),
        agents_addr,
    });
    for f in &args.files {
        open_file(&ui, f);
    }
    {
        let ui = ui.clone();
        std::thread::Builder::new()
            .name("ui-agents".into())
            .spawn(move || accept_agents(ui, agents))
            .map_err(|e| e.to_string())?;
    }
    let [page, opts] = startup_lines(web_addr, agents_addr, &ui.token);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{page}\n{opts}");
    let _ = out.flush();
    drop(out);

    let busy = Arc::new(AtomicUsize::new(0));
    for conn in web.incoming() {
        let Ok(stream) = conn else { continue };
        if busy.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
            continue; // dropped: the browser retries
        }
        busy.fetch_add(1, Ordering::Relaxed);
        let (ui, done) = (ui.clone(), busy.clone());
        let spawned = std::thread::Builder::new()
            .name("ui-http".into())
            .spawn(move || {
                serve(&ui, stream);
                done.fetch_sub(1, Ordering::Relaxed);
            });
        if spawned.is_err() {
            busy.fetch_sub(1, Ordering::Relaxed);
        }
    }
    Ok(())
}

fn new_session(ui: &Ui, kind: &'static str, source: String) -> Shared {
    let id = ui.next_id.fetch_add(1, Ordering::Relaxed);
    let s = Arc::new(Mutex::new(Session::new(id, kind, source)));
    lock(&ui.sessions).push(s.clone());
    s
}

fn open_file(ui: &Arc<Ui>, path: &str) {
    let s = new_session(ui, "file", path.to_string());
    let path = path.to_string();
    let _ = std::thread::Builder::new()
        .name("ui-file".into())
        .spawn(move || match std::fs::File::open(&path) {
            Ok(f) => feed(&s, std::io::BufReader::with_capacity(1 << 16, f)),
            Err(e) => lock(&s).fail(format!("cannot open {path}: {e}")),
        });
}

fn accept_agents(ui: Arc<Ui>, listener: TcpListener) {
    for conn in listener.incoming() {
        let Ok(stream) = conn else { continue };
        if lock(&ui.senders).len() >= MAX_AGENTS {
            continue;
        }
        let peer = stream
            .peer_addr()
            .map_or_else(|_| "agent".to_string(), |a| a.to_string());
        let s = new_session(&ui, "listen", peer);
        let id = lock(&s).id;
        if let Ok(w) = stream.try_clone() {
            lock(&ui.senders).insert(id, w);
        }
        let ui = ui.clone();
        let _ = std::thread::Builder::new()
            .name("ui-agent".into())
            .spawn(move || {
                feed(&s, std::io::BufReader::with_capacity(1 << 16, stream));
                lock(&ui.senders).remove(&id);
            });
    }
}

/// Read a whole stream into a session with the crate's strict reader.
/// Heap dump payloads are skipped (only counted), so memory stays bounded
/// by the names and the latest sections. Any read error ends this session
/// only.
pub fn feed(s: &Shared, mut r: impl Read) {
    const TEXT: &[u8] = b"JAVA PROFILE 1.0.1, created";
    let mut start = [0u8; 27];
    let mut got = 0;
    while got < start.len() {
        match r.read(&mut start[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return lock(s).fail(format!("read: {e}")),
        }
    }
    if got == 0 {
        lock(s).fail("empty stream: no HPROF header".into());
        return;
    }
    if start[..got] == TEXT[..got.min(TEXT.len())] && got == TEXT.len() {
        lock(s).fail(
            "this is a text report (format=a): the UI reads the binary format, \
             add format=b to the agent options"
                .into(),
        );
        return;
    }
    let input = std::io::Cursor::new(start[..got].to_vec()).chain(r);
    if let Err(e) = read_records(s, input) {
        lock(s).fail(e);
    } else {
        lock(s).end();
    }
}

fn read_records(s: &Shared, r: impl Read) -> Result<(), String> {
    let mut reader =
        HprofReader::with_options(r, ReadOptions::skip_bodies()).map_err(|e| e.to_string())?;
    {
        let h = reader.header();
        let mut g = lock(s);
        g.format = format!("{} (identifier size {})", h.label, h.id_size);
        let line = format!("header: {}", g.format);
        g.log(line);
    }
    while let Some(rec) = reader.next_record().map_err(|e| e.to_string())? {
        let name = rec.name();
        let is_dump = matches!(rec.body, RecordBody::HeapDumpStart { .. });
        {
            let mut g = lock(s);
            g.apply(rec.time, &name, rec.body)?;
            g.bytes = reader.position();
        }
        if is_dump {
            let (mut roots, mut classes, mut objects) = (0u64, 0u64, 0u64);
            while let Some(sub) = reader.next_heap_sub_record().map_err(|e| e.to_string())? {
                match sub {
                    HeapSubRecord::Root(_) => roots += 1,
                    HeapSubRecord::ClassDump(_) => classes += 1,
                    _ => objects += 1,
                }
            }
            let mut g = lock(s);
            g.heap_dump_summary(roots, classes, objects);
            g.bytes = reader.position();
        }
    }
    Ok(())
}

/// Token comparison that does not stop at the first differing byte.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The security checks every request passes first.
fn allowed(ui: &Ui, req: &http::Request) -> Result<(), &'static str> {
    let host = req.header("host").ok_or("no Host header")?;
    if !ui.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return Err("Host header does not name this server");
    }
    if let Some(origin) = req.header("origin") {
        if !ui
            .hosts
            .iter()
            .any(|h| origin.eq_ignore_ascii_case(&format!("http://{h}")))
        {
            return Err("request from a foreign Origin");
        }
    }
    match req.param("token") {
        Some(t) if same(t, &ui.token) => Ok(()),
        _ => Err("missing or wrong token"),
    }
}

fn serve(ui: &Ui, mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(30)));
    let req = match http::read_request(&mut stream) {
        Ok(r) => r,
        Err((status, msg)) => {
            let _ = http::respond(&mut stream, status, "text/plain", msg.as_bytes());
            return;
        }
    };
    if let Err(why) = allowed(ui, &req) {
        let _ = http::respond(&mut stream, 403, "text/plain", why.as_bytes());
        return;
    }
    let (status, ctype, body) = route(ui, &req);
    let _ = http::respond(&mut stream, status, ctype, &body);
}

fn json_reply(status: u16, v: Value) -> (u16, &'static str, Vec<u8>) {
    (status, "application/json", v.to_string().into_bytes())
}

fn route(ui: &Ui, req: &http::Request) -> (u16, &'static str, Vec<u8>) {
    let parts: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    match (req.method.as_str(), parts.as_slice()) {
        ("GET", [""]) => {
            let page = PAGE
                .replace("/*STYLE*/", STYLE)
                .replace("/*SCRIPT*/", SCRIPT);
            (200, "text/html; charset=utf-8", page.into_bytes())
        }
        ("GET", ["api", "sessions"]) => {
            let list: Vec<Value> = lock(&ui.sessions)
                .iter()
                .map(|s| {
                    let g = lock(s);
                    let mut v = g.summary();
                    v["commands"] = json!(ui.can_send(g.id));
                    v
                })
                .collect();
            json_reply(
                200,
                json!({"sessions": list, "agentOptions": format!("net={},format=b", ui.agents_addr)}),
            )
        }
        ("GET", ["api", "attach"]) => json_reply(
            200,
            json!({"available": false,
                   "message": "Attach is not available yet: the agent cannot be loaded into a running JVM (it refuses Agent_OnAttach). Start the JVM with the agent options shown above instead."}),
        ),
        ("GET", ["api", "session", id, view]) => {
            let Some(s) = ui.session(id) else {
                return json_reply(404, json!({"error": "no such session"}));
            };
            let g = lock(&s);
            let num = |k: &str, d: usize| req.param(k).and_then(|v| v.parse().ok()).unwrap_or(d);
            let v = match *view {
                "cpu" => g.cpu_view(
                    &MethodFilter::parse(req.param("filter").unwrap_or("")),
                    num("top", 100).min(10_000),
                ),
                "sites" => g.sites_view(
                    req.param("class").unwrap_or(""),
                    req.param("sort").unwrap_or("bytes"),
                    num("offset", 0),
                    num("limit", 100).min(10_000),
                ),
                "threads" => g.threads_view(),
                "console" => g.console_view(num("since", 0) as u64),
                "summary" => g.summary(),
                _ => return json_reply(404, json!({"error": "no such view"})),
            };
            json_reply(200, v)
        }
        ("POST", ["api", "session", id, "command"]) => {
            let Ok(text) = std::str::from_utf8(&req.body) else {
                return json_reply(400, json!({"error": "command is not UTF-8"}));
            };
            let cmd: Command = match text.parse() {
                Ok(c) => c,
                Err(e) => return json_reply(400, json!({"error": e})),
            };
            let Some(s) = ui.session(id) else {
                return json_reply(404, json!({"error": "no such session"}));
            };
            match ui.send(&s, cmd) {
                Ok(()) => json_reply(200, json!({"sent": cmd.to_string()})),
                Err(e) => json_reply(409, json!({"error": e})),
            }
        }
        ("GET" | "POST", _) => json_reply(404, json!({"error": "not found"})),
        _ => json_reply(405, json!({"error": "method not allowed"})),
    }
}

impl Ui {
    fn session(&self, id: &str) -> Option<Shared> {
        let id: u32 = id.parse().ok()?;
        lock(&self.sessions)
            .iter()
            .find(|s| lock(s).id == id)
            .cloned()
    }

    fn can_send(&self, id: u32) -> bool {
        lock(&self.senders).contains_key(&id)
    }

    /// Encode with the crate's protocol encoder and write to the agent.
    fn send(&self, s: &Shared, cmd: Command) -> Result<(), String> {
        let (id, serial) = {
            let g = lock(s);
            if g.state != State::Live {
                return Err("the session has ended".into());
            }
            (g.id, g.commands_sent + 1)
        };
        let mut senders = lock(&self.senders);
        let w = senders
            .get_mut(&id)
            .ok_or("this session takes no commands (not an agent connection)")?;
        w.write_all(&cmd.encode(serial))
            .map_err(|e| format!("cannot send {cmd}: {e}"))?;
        drop(senders);
        let mut g = lock(s);
        g.commands_sent = serial;
        g.log(format!("sent: {cmd}"));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_stream_fails_only_its_session() {
        let s: Shared = Arc::new(Mutex::new(Session::new(1, "file", "x".into())));
        feed(
            &s,
            &b"JAVA PROFILE 1.0.2\0\0\0\0\x08\0\0\0\0\0\0\0\0\x0c\xff\xff"[..],
        );
        let g = lock(&s);
        assert_eq!(g.state, State::Failed);
        assert!(g.error.is_some());
        let t: Shared = Arc::new(Mutex::new(Session::new(2, "file", "y".into())));
        feed(&t, &b"JAVA PROFILE 1.0.1, created Mon\n"[..]);
        assert!(lock(&t).error.as_deref().unwrap().contains("format=b"));
    }

    #[test]
    fn startup_lines_follow_the_contract() {
        let [p, a] = startup_lines(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            "abc",
        );
        assert_eq!(p, "hprof-rs ui: open http://127.0.0.1:8080/?token=abc");
        assert_eq!(a, "hprof-rs ui: agent options: net=127.0.0.1:9000,format=b");
        assert_eq!(random_token().unwrap().len(), 32);
        assert_ne!(random_token().unwrap(), random_token().unwrap());
    }
}
