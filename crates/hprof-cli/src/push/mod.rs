//! `hprof-rs push` (docs/push.md): the agent's `push=` done by the tool
//! from a stream. The stream comes from an agent started with
//! `net=HOST:PORT,tokenfile=FILE,format=b` that connects to the tool and
//! proves the secret of FILE (a new one in a private directory, printed,
//! or `--token-file`'s): whoever connects without it is turned away, so
//! another local user cannot feed the fleet's server. Or, with
//! `--connect`, from an agent started with `listen=`, reached as
//! `hprof-rs connect` reaches it (`listen::dial`, its token first).
//!
//! It reads the stream into a session, and every interval asks the agent
//! for its CPU SAMPLES (and ALLOC SITES when the stream says sites are
//! tracked), takes the difference from the previous answer, and queues it
//! as gzipped pprof for a Pyroscope-compatible server's `/ingest`, with
//! the same request as the agent's (`hprof_core::ingest`). The posts are
//! [`outbox`]'s, on their own thread: neither the ticks nor the reader of
//! the stream wait for the server.
//!
//! What an HPROF stream does not carry: the sampling interval (CONTROL
//! SETTINGS has the depth and flags only), so the CPU profile is typed
//! `cpu/nanoseconds` only when `--sampling-interval` says it, else
//! `samples/count`; allocation counters are 32-bit in the records (they
//! saturate as in the SITES report).

pub mod outbox;

use super::CliResult;
use crate::protocol::Command;
use hprof_analysis::session::feed::{lock, read_binary};
use hprof_analysis::session::{Kind, Session, State};
use hprof_core::ingest;
use hprof_core::options::push as values;
use hprof_core::pprof::Builder;
use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where the stream comes from.
pub enum Source {
    /// Wait on HOST:PORT for an agent started with `net=`.
    Listen { host: String, port: u16 },
    /// Connect to an agent started with `listen=` at HOST:PORT, waiting
    /// at most this long for it to take the connection.
    Connect { addr: String, within: Duration },
}

pub struct PushArgs {
    pub source: Source,
    pub url: String,
    pub interval: Duration,
    pub app: String,
    pub labels: Option<String>,
    /// The agent's `interval=` in ms, when the user says it.
    pub sampling_ms: Option<u32>,
    /// The agent's token file (for `net=`, without it: a new secret in a
    /// private directory).
    pub token_file: Option<String>,
}

/// Longest wait for the agent's answer to the interval's requests.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);
/// At the end: how long what is queued may take to send.
const FINAL_WITHIN: Duration = Duration::from_secs(5);

fn unix_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// What the previous answer ended with, per trace and per site.
#[derive(Default)]
pub struct Deltas {
    cpu: HashMap<u32, u64>,
    sites: HashMap<(u32, u32), (u64, u64)>,
}

impl Deltas {
    /// The CPU samples since the last call, encoded; None without a CPU
    /// SAMPLES answer. Counts that went down were reset by a dump: all of
    /// them are new.
    pub fn cpu(
        &mut self,
        s: &Session,
        span: (i64, i64),
        period_ns: Option<i64>,
    ) -> Option<Vec<u8>> {
        let cpu = s.cpu.as_ref()?;
        let mut b = match period_ns {
            Some(p) => {
                let mut b = Builder::new(&ingest::CPU_TYPES);
                b.period("cpu", "nanoseconds", p);
                b
            }
            None => Builder::new(&[("samples", "count")]),
        };
        b.time(span.0, span.1 - span.0);
        for e in &cpu.entries {
            let now = u64::from(e.count);
            let before = self.cpu.insert(e.trace_serial, now).unwrap_or(0);
            let n = now.checked_sub(before).unwrap_or(now) as i64;
            if n == 0 {
                continue;
            }
            let locs = stack(&mut b, s, e.trace_serial, None);
            match period_ns {
                Some(p) => b.sample(&locs, &[n * p, n], &[]),
                None => b.sample(&locs, &[n], &[]),
            }
        }
        Some(b.finish())
    }

    /// The allocations since the last call and what the sites hold live.
    pub fn alloc(&mut self, s: &Session, span: (i64, i64)) -> Option<Vec<u8>> {
        let sites = s.sites.as_ref()?;
        let mut b = Builder::new(&ingest::ALLOC_TYPES);
        b.time(span.0, span.1 - span.0);
        for x in &sites.sites {
            let now = (
                u64::from(x.instances_allocated),
                u64::from(x.bytes_allocated),
            );
            let before = self
                .sites
                .insert((x.class_serial, x.trace_serial), now)
                .unwrap_or((0, 0));
            let objects = now.0.checked_sub(before.0).unwrap_or(now.0);
            let bytes = now.1.checked_sub(before.1).unwrap_or(now.1);
            if objects == 0 && bytes == 0 && x.live_bytes == 0 {
                continue;
            }
            let class = s.site_class(x.class_serial, x.array_type);
            let leaf = (u64::MAX - u64::from(x.class_serial), class);
            let locs = stack(&mut b, s, x.trace_serial, Some(leaf));
            b.sample(
                &locs,
                &[
                    objects as i64,
                    bytes as i64,
                    i64::from(x.live_instances),
                    i64::from(x.live_bytes),
                ],
                &[],
            );
        }
        Some(b.finish())
    }
}

fn stack(b: &mut Builder, s: &Session, trace: u32, leaf: Option<(u64, String)>) -> Vec<u64> {
    let mut locs = Vec::new();
    if let Some((k, name)) = leaf {
        locs.push(b.location(k, &name, "", 0));
    }
    for &f in s.trace_frames(trace).unwrap_or(&[]) {
        let id = match b.known_location(f) {
            Some(id) => id,
            None => {
                let (file, line) = s.frame_source(f);
                b.location(f, &s.frame_label(f), &file, i64::from(line.max(0)))
            }
        };
        locs.push(id);
    }
    if locs.is_empty() {
        locs.push(b.location(u64::MAX / 2, "[no Java frames]", "", 0));
    }
    locs
}

pub fn run(a: PushArgs) -> CliResult<()> {
    let target = values::target(Some(&a.url)).map_err(|e| format!("--url: {e}"))?;
    let app = values::app(Some(&a.app)).map_err(|e| format!("--app: {e}"))?;
    let labels = match &a.labels {
        Some(l) => values::labels(Some(l)).map_err(|e| format!("--labels: {e}"))?,
        None => Vec::new(),
    };
    if a.interval < Duration::from_secs(1)
        || a.interval > Duration::from_secs(3600)
        || a.interval.subsec_nanos() != 0
    {
        return Err(
            "--interval must be whole seconds from 1s to 1h (the server counts in seconds)".into(),
        );
    }
    let name = ingest::app_name_with_labels(&app, &labels);
    let period_ns = a.sampling_ms.map(|ms| i64::from(ms) * 1_000_000);
    let (stream, first, peer) = match &a.source {
        Source::Listen { host, port } => accept_agent(host, *port, a.token_file.as_deref())?,
        Source::Connect { addr, within } => {
            let token = match &a.token_file {
                Some(f) => Some(super::listen::read_token_file(f)?),
                None => None,
            };
            let (s, first) = super::listen::dial(addr, token, *within)?;
            eprintln!("connected to {addr}; pushing to {}", target.url);
            (s, first, addr.clone())
        }
    };
    let session = Arc::new(Mutex::new(Session::new(0, Kind::Listen, peer.clone())));
    let quiet = Arc::new(Quiet::default());
    let reader = {
        let (s, q) = (session.clone(), quiet.clone());
        let r = Noting {
            inner: std::io::Cursor::new(first)
                .chain(stream.try_clone().map_err(|e| e.to_string())?),
            quiet: q,
        };
        std::thread::spawn(move || {
            if let Err(e) = read_binary(&s, BufReader::with_capacity(1 << 16, r), false) {
                lock(&s).fail(e);
            }
            let mut g = lock(&s);
            if g.state == State::Live {
                g.end();
            }
        })
    };
    let mut agent = Agent {
        out: stream,
        serial: 0,
        session: session.clone(),
    };
    let mut deltas = Deltas::default();
    if matches!(a.source, Source::Connect { .. }) {
        // An agent with listen= sends its stream from the first byte: the
        // answers to earlier front-ends' requests, and counts from before
        // this connection. The first answer after the history is the
        // baseline, not an interval.
        quiet.wait(Duration::from_millis(200), ANSWER_WITHIN);
        agent.ask();
        let g = lock(&session);
        deltas.cpu(&g, (0, 0), None);
        deltas.alloc(&g, (0, 0));
    }
    let outbox = outbox::Outbox::start(target.clone(), outbox::BOUNDS);
    let queue =
        |kind: &'static str, query: String, raw: Vec<u8>| match hprof_core::pprof::gzip(&raw) {
            Ok(body) => outbox.send(outbox::Pending {
                kind,
                request: ingest::request(&target, &query, &body),
            }),
            Err(e) => eprintln!("push: cannot compress a profile: {e}"),
        };
    let start = Instant::now();
    // Interval k ends at start + k x interval; `from`/`until` in whole
    // seconds count from start's second, so they follow one another.
    let start_ns = unix_ns();
    let (mut from_ns, mut from_s) = (start_ns, start_ns / 1_000_000_000);
    let base_s = from_s;
    let mut k = 0u64;
    loop {
        k += 1;
        let tick = start + a.interval * k as u32;
        while Instant::now() < tick && lock(&session).state == State::Live {
            std::thread::sleep(Duration::from_millis(50));
        }
        let live = agent.ask();
        let (tick_ns, tick_s) = (
            start_ns + (k as i64) * a.interval.as_nanos() as i64,
            base_s + (k * a.interval.as_secs()) as i64,
        );
        let (until_ns, until_s) = if live {
            (tick_ns, tick_s)
        } else {
            // The stream ended in this interval, or at its tick while it
            // was asked (the ask then waits for an answer that does not
            // come): the interval ends then, and never after its tick.
            let n = unix_ns().clamp(from_ns, tick_ns);
            (n, (n / 1_000_000_000).clamp(from_s, tick_s))
        };
        let (cpu, alloc) = {
            let g = lock(&session);
            (
                deltas.cpu(&g, (from_ns, until_ns), period_ns),
                deltas.alloc(&g, (from_ns, until_ns)),
            )
        };
        if let Some(raw) = cpu {
            queue(
                "cpu",
                ingest::query(&name, from_s, until_s, "hprof-rs", period_ns),
                raw,
            );
        }
        if let Some(raw) = alloc {
            queue(
                "alloc",
                ingest::query(&name, from_s, until_s, "hprof-rs", None),
                raw,
            );
        }
        (from_ns, from_s) = (until_ns, until_s);
        if !live {
            break;
        }
    }
    outbox.finish(FINAL_WITHIN);
    let _ = reader.join();
    let g = lock(&session);
    match &g.error {
        Some(e) => Err(format!("the stream from {peer}: {e}")),
        None => Ok(()),
    }
}

/// `net=`: the first agent on HOST:PORT that proves the secret, its first
/// bytes and its address.
fn accept_agent(
    host: &str,
    port: u16,
    token_file: Option<&str>,
) -> CliResult<(TcpStream, Vec<u8>, String)> {
    // The agent proves a secret before its stream is read: a port that
    // takes anyone's stream lets another local user push what they like.
    let (secret, own) = match token_file {
        Some(f) => (super::listen::read_token_file(f)?, None),
        None => {
            let s = hprof_ui::secrets::Secrets::create()?;
            (s.agents.clone().into_bytes(), Some(s))
        }
    };
    let token_file = token_file.map(str::to_string).unwrap_or_else(|| {
        own.as_ref()
            .map_or_else(String::new, |s| s.agents_file.display().to_string())
    });
    let listener = super::listen::bind(host, port)?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!("start the agent with net={local},tokenfile={token_file},format=b (and cpu=samples or heap=sites)");
    let accepted =
        super::profile::accept_proven(&listener, &secret, Duration::MAX, "hprof-rs push");
    // Whatever came of it, the secret is not needed any more.
    own.iter().for_each(|s| s.remove());
    let (stream, first) = accepted?;
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "the agent".to_string(), |p| p.to_string());
    eprintln!("agent connected from {peer}");
    Ok((stream, first, peer))
}

/// The agent's side of the session: requests go out on `out`, answers
/// come into `session` through the reader.
struct Agent {
    out: TcpStream,
    serial: u32,
    session: Arc<Mutex<Session>>,
}

impl Agent {
    /// Ask for CPU SAMPLES (and ALLOC SITES when the stream says sites are
    /// tracked) and wait for the answers (at most [`ANSWER_WITHIN`]).
    /// False once the stream has ended.
    fn ask(&mut self) -> bool {
        let (live, cpu_before, sites_before, sites_wanted) = {
            let g = lock(&self.session);
            let flags = g.control.map_or(0, |c| c.0);
            (
                g.state == State::Live,
                g.cpu_sections,
                g.sites_reports,
                flags & 0x1 != 0,
            )
        };
        if !live {
            return false;
        }
        let mut req = Command::CpuSamples {
            ignored: 0,
            cutoff: 0.0,
        }
        .encode(self.serial);
        self.serial += 1;
        if sites_wanted {
            req.extend(
                Command::AllocSites {
                    flags: 0,
                    cutoff: 0.0,
                }
                .encode(self.serial),
            );
            self.serial += 1;
        }
        if self.out.write_all(&req).is_ok() {
            let until = Instant::now() + ANSWER_WITHIN;
            while Instant::now() < until {
                let g = lock(&self.session);
                let done = g.cpu_sections > cpu_before
                    && (!sites_wanted || g.sites_reports > sites_before);
                if done || g.state != State::Live {
                    break;
                }
                drop(g);
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        true
    }
}

/// When the stream last brought bytes (ms since `at`).
struct Quiet {
    at: Instant,
    last_ms: AtomicU64,
}

impl Default for Quiet {
    fn default() -> Self {
        Quiet {
            at: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }
}

impl Quiet {
    /// Wait until nothing has come for `gap` (the history a `listen=`
    /// agent sends first has been read), at most `within`.
    fn wait(&self, gap: Duration, within: Duration) {
        let end = Instant::now() + within;
        while Instant::now() < end {
            let last = self.at + Duration::from_millis(self.last_ms.load(Ordering::Acquire));
            if last.elapsed() >= gap {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The stream, noting when bytes come.
struct Noting<R> {
    inner: R,
    quiet: Arc<Quiet>,
}

impl<R: Read> Read for Noting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            let ms = self.quiet.at.elapsed().as_millis() as u64;
            self.quiet.last_ms.store(ms, Ordering::Release);
        }
        Ok(n)
    }
}
