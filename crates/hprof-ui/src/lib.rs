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
//! `launch`, `source`, `secrets` (the agents' tokens and their files),
//! `gate` (connections not yet proven: bounded, brief, never a session),
//! `views` (the JSON of the session's views), `analyser` and `heap_json`
//! (the heap analyser's routes and JSON). The session model and its views
//! are the tool's, in `hprof_analysis::session`.
//!
//! Every port authenticates its peer: page requests carry the URL's token,
//! agents on the agents port send the printed `tokenfile=`'s secret first,
//! and each Launch or Attach port takes only the agent that sends that
//! session's own secret.

#[cfg(test)]
use hprof_core::reader;
use hprof_core::{options, protocol};

pub mod analyser;
pub mod api;
pub mod attach;
pub mod events;
pub mod gate;
pub mod guard;
pub mod heap_json;
pub mod http;
pub mod launch;
pub mod secrets;
pub mod sessions;
pub mod source;
pub mod transfer;
pub mod views;

pub use hprof_analysis::session::feed::lock;
use hprof_analysis::session::{feed, Kind, State};
use sessions::{Handle, Recording, Shared, Tee};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Page connections served at once (event streams included), after their
/// token was checked; more are answered 503.
const MAX_CONNECTIONS: usize = 64;
/// Page connections whose request head is still being read; one more
/// turns the oldest away.
const MAX_WAITING_PAGES: usize = 32;
/// How long a page connection has to send its whole request head.
const HEAD_WITHIN: Duration = Duration::from_secs(5);
/// Sessions at once (agents, launches, files, uploads); more are refused
/// until some are closed from the page.
pub const MAX_SESSIONS: usize = 256;
/// Agents connected at once; more are refused (closed at once).
const MAX_AGENTS: usize = 64;
/// Connections on one agent port that have not sent their token yet.
pub const MAX_WAITING_AGENTS: usize = 16;

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
    hosts: guard::Hosts,
    sessions: Mutex<Vec<Shared>>,
    next_id: AtomicU32,
    agents_addr: SocketAddr,
    /// The agents port's token and the files of tokens.
    secrets: secrets::Secrets,
    /// The agent library Launch uses, or why there is none.
    agent_lib: Result<PathBuf, String>,
    source_roots: Vec<PathBuf>,
    /// Event streams open now.
    streams: AtomicUsize,
}

/// Start-up lines printed on stdout (the contract of docs/ui.md).
pub fn startup_lines(page: SocketAddr, agents: &str, token: &str) -> [String; 2] {
    [
        format!(
            "hprof-rs ui: open http://{}/?token={token}",
            host_port(page)
        ),
        format!("hprof-rs ui: agent options: {agents}"),
    ]
}

fn host_port(a: SocketAddr) -> String {
    match a {
        SocketAddr::V6(x) => format!("[{}]:{}", x.ip(), x.port()),
        SocketAddr::V4(x) => format!("{}:{}", x.ip(), x.port()),
    }
}

/// What to append to a profile's options to stream to `agents`, proving
/// the secret in `token_file`. `format=b` comes last: a text profile drops
/// it.
pub fn agent_options(agents: SocketAddr, token_file: &std::path::Path) -> String {
    format!(
        "{},tokenfile={},format=b",
        net_option(agents),
        token_file.display()
    )
}

/// `net=HOST:PORT` for an agent port.
pub fn net_option(port: SocketAddr) -> String {
    format!("net={}", host_port(port))
}

impl Ui {
    /// The options of the agents port (printed, and shown on the page).
    pub fn agents_port_options(&self) -> String {
        agent_options(self.agents_addr, &self.secrets.agents_file)
    }
}

/// The agent library next to the running program, or `--agent`.
fn find_agent(given: Option<&str>) -> Result<PathBuf, String> {
    let p = match given {
        Some(p) => {
            let p = PathBuf::from(p);
            if !p.is_file() {
                return Err(format!(
                    "no agent library at {}: build it (cargo build --release) or give --agent PATH",
                    p.display()
                ));
            }
            p.canonicalize()
                .map_err(|e| format!("{}: {e}", p.display()))?
        }
        None => hprof_attach::bundled::bundled_agent()
            .map_err(|e| format!("{e}; build it (cargo build --release) or give --agent PATH"))?,
    };
    hprof_attach::bundled::for_agentpath(p)
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
             anyone holding the token can drive the profiler, and the token and the \
             profiles travel in clear (tunnel the port with ssh -L rather than open it)"
        );
    }
    if !agents_addr.ip().is_loopback() {
        eprintln!(
            "hprof-rs ui: warning: the agents port and the port of each Launch and Attach \
             are reachable from other hosts on {}; agents prove their token there, but \
             tokens and streams travel in clear",
            agents_addr.ip()
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
    let secrets = secrets::Secrets::create()?;
    // Before any other thread starts: they inherit the blocked signals.
    if let Err(e) = secrets::remove_on_termination(secrets.dir().to_path_buf()) {
        secrets.remove();
        return Err(e);
    }
    let ui = Arc::new(Ui {
        token: guard::random_token()?,
        hosts: guard::host_names(web_addr),
        sessions: Mutex::new(Vec::new()),
        next_id: AtomicU32::new(1),
        agents_addr,
        secrets,
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
    let [page, opts] = startup_lines(web_addr, &ui.agents_port_options(), &ui.token);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{page}\n{opts}");
    let _ = out.flush();
    drop(out);

    let served = Arc::new(AtomicUsize::new(0));
    let waiting = gate::Waiting::new(MAX_WAITING_PAGES);
    for conn in web.incoming() {
        let Ok(stream) = conn else { continue };
        // Its place among the connections whose head is being read, taken
        // here, before the thread: a flood of connections turns its own
        // oldest away rather than piling up threads.
        let ticket = waiting.enter(&stream);
        let ui = ui.clone();
        let served = served.clone();
        let _ = std::thread::Builder::new()
            .name("ui-http".into())
            .spawn(move || serve(&ui, stream, ticket, &served));
    }
    Ok(())
}

/// One of the [`MAX_CONNECTIONS`] page connections, counted while held.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    /// A slot, or `None` when all are taken.
    fn take(count: &Arc<AtomicUsize>, max: usize) -> Option<Slot> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(count.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The agents port: each connection proves the printed token on a thread
/// of its own (few at a time, see `gate`); only then is it a session.
fn accept_agents(ui: Arc<Ui>, listener: TcpListener) {
    let waiting = gate::Waiting::new(MAX_WAITING_AGENTS);
    for conn in listener.incoming() {
        let Ok(stream) = conn else { continue };
        let ticket = waiting.enter(&stream);
        let ui = ui.clone();
        let _ = std::thread::Builder::new()
            .name("ui-agent".into())
            .spawn(move || {
                let peer = stream
                    .peer_addr()
                    .map_or_else(|_| "agent".to_string(), |a| a.to_string());
                let proven = gate::prove(stream, ui.secrets.agents.as_bytes());
                drop(ticket);
                let proven = match proven {
                    Ok(p) => p,
                    Err(r) => return gate::say_refused("agents port", &peer, &r),
                };
                let agents = ui
                    .all()
                    .iter()
                    .filter(|h| lock(&h.sender).is_some())
                    .count();
                if agents >= MAX_AGENTS {
                    gate::refuse(&proven.stream, &gate::Refusal::Busy);
                    return gate::say_refused("agents port", &peer, &gate::Refusal::Busy);
                }
                let Ok(h) = ui.new_session(Kind::Listen, peer, None) else {
                    return; // too many sessions: the connection is closed
                };
                agent_connection(&h, proven);
            });
    }
}

/// Read an agent's stream into its session, recording it; its commands go
/// back on the same connection.
pub fn agent_connection(h: &Shared, agent: gate::Proven) {
    let gate::Proven { stream, leftover } = agent;
    if let Ok(w) = stream.try_clone() {
        *lock(&h.sender) = Some(w);
    }
    let mut input =
        std::io::Cursor::new(leftover).chain(std::io::BufReader::with_capacity(1 << 16, stream));
    match h.recording() {
        Some(rec) => {
            let mut tee = Tee { inner: input, rec };
            feed::feed(&h.data, &mut tee);
            sessions::drain(&mut tee);
        }
        None => {
            feed::feed(&h.data, &mut input);
            sessions::drain(&mut input);
        }
    }
    *lock(&h.sender) = None;
}

fn serve(ui: &Arc<Ui>, mut stream: TcpStream, waiting: gate::Ticket, served: &Arc<AtomicUsize>) {
    let _ = stream.set_read_timeout(Some(HEAD_WITHIN));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(30)));
    // A whole head within a few seconds: a client sending a byte now and
    // then cannot hold a place for long.
    let mut timed = http::Deadline::new(&stream, HEAD_WITHIN);
    let head = http::read_head(&mut timed);
    let mut req = match head {
        Ok(r) => r,
        Err((status, msg)) => {
            drop(waiting);
            let _ = http::respond(&mut stream, status, "text/plain", msg.as_bytes());
            return;
        }
    };
    drop(waiting);
    // Uploads read on with a plain per-read timeout: they may be long.
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    if let Err(why) = guard::allowed(&ui.token, &ui.hosts, &req) {
        let _ = http::respond(&mut stream, 403, "text/plain", why.as_bytes());
        return;
    }
    // Only a request with the token takes one of the served places.
    let Some(_slot) = Slot::take(served, MAX_CONNECTIONS) else {
        let _ = http::respond(&mut stream, 503, "text/plain", b"too many requests at once");
        return;
    };
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
                Ok(f) => feed::feed(&h.data, &mut std::io::BufReader::with_capacity(1 << 16, f)),
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
        let opts = agent_options(
            "127.0.0.1:9000".parse().unwrap(),
            std::path::Path::new("/run/user/1/hprof-rs-ui-1/agents.token"),
        );
        let [p, a] = startup_lines("127.0.0.1:8080".parse().unwrap(), &opts, "abc");
        assert_eq!(p, "hprof-rs ui: open http://127.0.0.1:8080/?token=abc");
        assert_eq!(
            a,
            "hprof-rs ui: agent options: net=127.0.0.1:9000,\
             tokenfile=/run/user/1/hprof-rs-ui-1/agents.token,format=b"
        );
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
