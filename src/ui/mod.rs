//! `hprof-rs ui`: a local web front-end (docs/ui.md). One process serves an
//! embedded page on a loopback port, accepts agents started with the printed
//! `net=` option on a second port (each connection is a session), starts
//! programs from the Launch form, opens the files given on the command line
//! or uploaded, and answers the page's JSON requests, commands and event
//! stream. Every request must carry the random token of the printed URL and
//! a Host (and, when present, Origin) naming this server, so other local
//! pages and users cannot read or drive the profiler.
//!
//! Modules by role: `http` (the protocol), `guard` (the checks), `api`
//! (JSON routes), `transfer` (uploads, downloads, exports), `events`
//! (server-sent events), `sessions` (streams, recordings, readers),
//! `launch`, `source`, and the model with its views (`model`, `cpu`,
//! `memory`, `heap`, `monitors`, `text`, `tree`, `filter`, `pprof`).

pub mod api;
pub mod attach;
pub mod cpu;
pub mod events;
pub mod filter;
pub mod guard;
pub mod heap;
pub mod http;
pub mod launch;
pub mod memory;
pub mod model;
pub mod monitors;
pub mod pprof;
pub mod sessions;
pub mod source;
pub mod text;
pub mod transfer;
pub mod tree;

use model::{Kind, State};
use sessions::{Handle, Recording, Shared, Tee};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Page connections served at once (event streams included); more wait
/// in the accept queue.
const MAX_CONNECTIONS: usize = 64;
/// Sessions at once (agents, launches, files, uploads); more are refused
/// until some are closed from the page.
pub const MAX_SESSIONS: usize = 256;
/// Agents connected at once; more are refused (closed at once).
const MAX_AGENTS: usize = 64;

pub struct UiArgs {
    pub bind: String,
    pub agents: String,
    pub files: Vec<String>,
    /// The agent library for Launch (default: next to this program).
    pub agent: Option<String>,
    /// Directories the source view may read from.
    pub sources: Vec<String>,
}

/// What every request handler sees.
pub struct Ui {
    token: String,
    /// Host header values that name this server.
    hosts: Vec<String>,
    sessions: Mutex<Vec<Shared>>,
    next_id: AtomicU32,
    agents_addr: SocketAddr,
    /// The agent library Launch uses, or why there is none.
    agent_lib: Result<PathBuf, String>,
    source_roots: Vec<PathBuf>,
    /// Event streams open now.
    streams: AtomicUsize,
}

/// Lock, recovering from a panicked holder (the data stays usable: every
/// update leaves it consistent).
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Start-up lines printed on stdout (the contract of docs/ui.md).
pub fn startup_lines(page: SocketAddr, agents: SocketAddr, token: &str) -> [String; 2] {
    [
        format!(
            "hprof-rs ui: open http://{}/?token={token}",
            host_port(page)
        ),
        format!("hprof-rs ui: agent options: {}", agent_options(agents)),
    ]
}

fn host_port(a: SocketAddr) -> String {
    match a {
        SocketAddr::V6(x) => format!("[{}]:{}", x.ip(), x.port()),
        SocketAddr::V4(x) => format!("{}:{}", x.ip(), x.port()),
    }
}

/// What to append to a profile's options to stream to this UI.
pub fn agent_options(agents: SocketAddr) -> String {
    format!("net={},format=b", host_port(agents))
}

/// The agent library next to the running program, or `--agent`.
fn find_agent(given: Option<&str>) -> Result<PathBuf, String> {
    let p = match given {
        Some(p) => PathBuf::from(p),
        None => std::env::current_exe()
            .map_err(|e| format!("cannot tell where this program is: {e}"))?
            .with_file_name("libhprof_rs.so"),
    };
    if !p.is_file() {
        return Err(format!(
            "no agent library at {}: build it (cargo build --release) or give --agent PATH",
            p.display()
        ));
    }
    let p = p
        .canonicalize()
        .map_err(|e| format!("{}: {e}", p.display()))?;
    // -agentpath:PATH=OPTIONS: a path with '=' or ',' cannot be passed.
    if p.to_string_lossy().contains(['=', ',']) {
        return Err(format!(
            "the agent path {} contains '=' or ','",
            p.display()
        ));
    }
    Ok(p)
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
    let mut source_roots = Vec::new();
    for d in &args.sources {
        let p = PathBuf::from(d)
            .canonicalize()
            .map_err(|e| format!("--source {d}: {e}"))?;
        if !p.is_dir() {
            return Err(format!("--source {d}: not a directory"));
        }
        source_roots.push(p);
    }
    let ui = Arc::new(Ui {
        token: guard::random_token()?,
        hosts: guard::host_names(web_addr),
        sessions: Mutex::new(Vec::new()),
        next_id: AtomicU32::new(1),
        agents_addr,
        agent_lib: find_agent(args.agent.as_deref()),
        source_roots,
        streams: AtomicUsize::new(0),
    });
    for f in &args.files {
        ui.open_file(f);
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
        let slot = Slot::take(&busy);
        let ui = ui.clone();
        // The slot is given back when the thread ends, however it ends (or
        // at once if it cannot start).
        let _ = std::thread::Builder::new()
            .name("ui-http".into())
            .spawn(move || {
                let _slot = slot;
                serve(&ui, stream);
            });
    }
    Ok(())
}

/// One of the [`MAX_CONNECTIONS`] page connections, counted while held.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(count: &Arc<AtomicUsize>) -> Slot {
        count.fetch_add(1, Ordering::Relaxed);
        Slot(count.clone())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn accept_agents(ui: Arc<Ui>, listener: TcpListener) {
    for conn in listener.incoming() {
        let Ok(stream) = conn else { continue };
        let agents = ui
            .all()
            .iter()
            .filter(|h| lock(&h.sender).is_some())
            .count();
        if agents >= MAX_AGENTS {
            continue;
        }
        let peer = stream
            .peer_addr()
            .map_or_else(|_| "agent".to_string(), |a| a.to_string());
        let Ok(h) = ui.new_session(Kind::Listen, peer, None) else {
            continue; // too many sessions: the connection is closed
        };
        let _ = std::thread::Builder::new()
            .name("ui-agent".into())
            .spawn(move || agent_connection(&h, stream));
    }
}

/// Read an agent's stream into its session, recording it; its commands go
/// back on the same connection.
pub fn agent_connection(h: &Shared, stream: TcpStream) {
    if let Ok(w) = stream.try_clone() {
        *lock(&h.sender) = Some(w);
    }
    let mut input = std::io::BufReader::with_capacity(1 << 16, stream);
    match h.recording() {
        Some(rec) => {
            let mut tee = Tee { inner: input, rec };
            sessions::feed(&h.data, &mut tee);
            sessions::drain(&mut tee);
        }
        None => {
            sessions::feed(&h.data, &mut input);
            sessions::drain(&mut input);
        }
    }
    *lock(&h.sender) = None;
}

fn serve(ui: &Arc<Ui>, mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(30)));
    // A whole head within 10 s: a client sending a byte now and then
    // cannot hold one of the connections for long.
    let mut timed = http::Deadline::new(&stream, Duration::from_secs(10));
    let head = http::read_head(&mut timed);
    let mut req = match head {
        Ok(r) => r,
        Err((status, msg)) => {
            let _ = http::respond(&mut stream, status, "text/plain", msg.as_bytes());
            return;
        }
    };
    // Uploads read on with a plain per-read timeout: they may be long.
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    if let Err(why) = guard::allowed(&ui.token, &ui.hosts, &req) {
        let _ = http::respond(&mut stream, 403, "text/plain", why.as_bytes());
        return;
    }
    // Endpoints that stream their body or their answer.
    let parts: Vec<String> = req
        .path
        .trim_matches('/')
        .split('/')
        .map(str::to_string)
        .collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    match (req.method.as_str(), parts.as_slice()) {
        ("POST", ["api", "upload"]) => return transfer::upload(ui, &req, &mut stream),
        ("GET", ["api", "events"]) => return events::serve(ui, &mut stream),
        ("GET", ["api", "session", id, "download"]) => {
            return transfer::download(ui, id, &mut stream)
        }
        _ => {}
    }
    let mut timed = http::Deadline::new(&stream, Duration::from_secs(10));
    if let Err((status, msg)) = http::read_body(&mut req, &mut timed, http::MAX_BODY) {
        let _ = http::respond(&mut stream, status, "text/plain", msg.as_bytes());
        return;
    }
    let r = api::route(ui, &req);
    let _ = http::write_head(
        &mut stream,
        r.status,
        r.ctype,
        Some(r.body.len() as u64),
        &r.headers,
    )
    .and_then(|_| stream.write_all(&r.body))
    .and_then(|_| stream.flush());
}

impl Ui {
    pub fn all(&self) -> Vec<Shared> {
        lock(&self.sessions).clone()
    }

    pub fn session(&self, id: &str) -> Option<Shared> {
        let id: u32 = id.parse().ok()?;
        lock(&self.sessions).iter().find(|h| h.id == id).cloned()
    }

    /// A new session, recorded unless it is a file named on the command
    /// line; refused past [`MAX_SESSIONS`].
    pub fn new_session(
        &self,
        kind: Kind,
        source: String,
        path: Option<PathBuf>,
    ) -> Result<Shared, String> {
        let mut list = lock(&self.sessions);
        if list.len() >= MAX_SESSIONS {
            return Err(format!(
                "{MAX_SESSIONS} sessions are open: close some first"
            ));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let h = Handle::new(id, kind, source, path);
        if kind != Kind::File {
            match Recording::create(sessions::MAX_RECORDING) {
                Ok(r) => *lock(&h.recording) = Some(Arc::new(r)),
                Err(e) => lock(&h.data).log(format!(
                    "the stream is not recorded (download unavailable): {e}"
                )),
            }
        }
        list.push(h.clone());
        Ok(h)
    }

    /// Remove an ended session (its memory and recording go with it).
    pub fn close(&self, h: &Shared) -> Result<(), String> {
        // One lock at a time (takes_commands locks the other way round).
        let live = lock(&h.data).state == State::Live;
        let connected = lock(&h.sender).is_some();
        if live || connected {
            return Err("the session is live: stop or exit its program first".into());
        }
        if lock(&h.child).is_some() {
            return Err("its program is still running: stop it first".into());
        }
        lock(&self.sessions).retain(|x| x.id != h.id);
        Ok(())
    }

    fn open_file(&self, path: &str) {
        let Ok(h) = self.new_session(Kind::File, path.to_string(), Some(PathBuf::from(path)))
        else {
            return;
        };
        let path = path.to_string();
        let _ = std::thread::Builder::new()
            .name("ui-file".into())
            .spawn(move || match std::fs::File::open(&path) {
                Ok(f) => {
                    sessions::feed(&h.data, &mut std::io::BufReader::with_capacity(1 << 16, f))
                }
                Err(e) => lock(&h.data).fail(format!("cannot open {path}: {e}")),
            });
    }

    /// Encode with the crate's protocol encoder and write to the agent.
    pub fn send(&self, h: &Shared, cmd: crate::protocol::Command) -> Result<(), String> {
        let serial = {
            let g = lock(&h.data);
            if g.state != State::Live {
                return Err("the session has ended".into());
            }
            g.commands_sent + 1
        };
        let mut sender = lock(&h.sender);
        let w = sender
            .as_mut()
            .ok_or("this session takes no commands (not an agent connection)")?;
        w.write_all(&cmd.encode(serial))
            .map_err(|e| format!("cannot send {cmd}: {e}"))?;
        drop(sender);
        let mut g = lock(&h.data);
        g.commands_sent = serial;
        g.log(format!("sent: {cmd}"));
        Ok(())
    }

    pub fn takes_commands(&self, h: &Shared) -> bool {
        // One lock at a time: a guard held across the other lock would
        // order them against close().
        let connected = lock(&h.sender).is_some();
        connected && lock(&h.data).state == State::Live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startup_lines_follow_the_contract() {
        let [p, a] = startup_lines(
            "127.0.0.1:8080".parse().unwrap(),
            "127.0.0.1:9000".parse().unwrap(),
            "abc",
        );
        assert_eq!(p, "hprof-rs ui: open http://127.0.0.1:8080/?token=abc");
        assert_eq!(a, "hprof-rs ui: agent options: net=127.0.0.1:9000,format=b");
    }

    #[test]
    fn a_missing_agent_library_is_said_clearly() {
        let e = find_agent(Some("/nonexistent/libhprof_rs.so")).unwrap_err();
        assert!(
            e.contains("no agent library at /nonexistent/libhprof_rs.so"),
            "{e}"
        );
    }
}
