//! `hprof-rs push` (docs/push.md): the agent's `push=` done by the tool
//! from a stream. It waits for one agent started with
//! `net=HOST:PORT,tokenfile=FILE,format=b` that proves the secret of FILE
//! (a new one in a private directory, printed, or `--token-file`'s):
//! whoever connects without it is turned away, so another local user
//! cannot feed the fleet's server. It reads the stream into a session, and every
//! interval asks the agent for its CPU SAMPLES (and ALLOC SITES when the
//! stream says sites are tracked), takes the difference from the previous
//! answer, and posts it as gzipped pprof to a Pyroscope-compatible
//! server's `/ingest`, with the same request as the agent's
//! (`hprof_core::ingest`).
//!
//! What an HPROF stream does not carry: the sampling interval (CONTROL
//! SETTINGS has the depth and flags only), so the CPU profile is typed
//! `cpu/nanoseconds` only when `--sampling-interval` says it, else
//! `samples/count`; allocation counters are 32-bit in the records (they
//! saturate as in the SITES report).

use super::CliResult;
use crate::protocol::Command;
use hprof_analysis::session::feed::{lock, read_binary};
use hprof_analysis::session::{Kind, Session, State};
use hprof_core::ingest;
use hprof_core::options::push as values;
use hprof_core::pprof::Builder;
use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub struct PushArgs {
    pub host: String,
    pub port: u16,
    pub url: String,
    pub interval: Duration,
    pub app: String,
    pub labels: Option<String>,
    /// The agent's `interval=` in ms, when the user says it.
    pub sampling_ms: Option<u32>,
    /// The agent's token file (else a new secret in a private directory).
    pub token_file: Option<String>,
}

/// Longest wait for the agent's answer to the interval's requests.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);
/// Longest a post may take.
const POST_WITHIN: Duration = Duration::from_secs(6);
const STEP: Duration = Duration::from_secs(3);

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

/// Whether the server took the last post (one line each way).
struct Reach {
    down: bool,
    dropped: u64,
}

impl Reach {
    fn post(&mut self, target: &values::PushTarget, query: &str, raw: &[u8]) {
        let body = match hprof_core::pprof::gzip(raw) {
            Ok(b) => b,
            Err(e) => return eprintln!("push: cannot compress a profile: {e}"),
        };
        let req = ingest::request(target, query, &body);
        match ingest::post(target, &req, Instant::now() + POST_WITHIN, STEP) {
            Ok(()) if self.down => {
                self.down = false;
                eprintln!(
                    "push: {} takes profiles again; {} profile(s) were dropped while it did not",
                    target.url,
                    std::mem::take(&mut self.dropped)
                );
            }
            Ok(()) => {}
            Err(e) => {
                self.dropped += 1;
                if !self.down {
                    self.down = true;
                    eprintln!(
                        "push: cannot send profiles to {}: {e}; dropping them until it answers",
                        target.url
                    );
                }
            }
        }
    }
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
    // The agent proves a secret before its stream is read: a port that
    // takes anyone's stream lets another local user push what they like.
    let (secret, own) = match &a.token_file {
        Some(f) => (super::listen::read_token_file(f)?, None),
        None => {
            let s = hprof_ui::secrets::Secrets::create()?;
            (s.agents.clone().into_bytes(), Some(s))
        }
    };
    let token_file = a.token_file.clone().unwrap_or_else(|| {
        own.as_ref()
            .map_or_else(String::new, |s| s.agents_file.display().to_string())
    });
    let listener = super::listen::bind(&a.host, a.port)?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    eprintln!("start the agent with net={local},tokenfile={token_file},format=b (and cpu=samples or heap=sites)");
    let accepted =
        super::profile::accept_proven(&listener, &secret, Duration::MAX, "hprof-rs push");
    let (stream, first) = match accepted {
        Ok(x) => x,
        Err(e) => {
            own.iter().for_each(|s| s.remove());
            return Err(e);
        }
    };
    // The token file has served: the secret is not needed any more.
    own.iter().for_each(|s| s.remove());
    let peer = stream
        .peer_addr()
        .map_or_else(|_| "the agent".to_string(), |p| p.to_string());
    eprintln!("agent connected from {peer}; pushing to {}", target.url);
    let session = Arc::new(Mutex::new(Session::new(0, Kind::Listen, peer.to_string())));
    let reader = {
        let s = session.clone();
        let r = std::io::Cursor::new(first).chain(stream.try_clone().map_err(|e| e.to_string())?);
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
    let mut out = stream;
    let mut deltas = Deltas::default();
    let mut reach = Reach {
        down: false,
        dropped: 0,
    };
    let mut serial = 0u32;
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
        let live = lock(&session).state == State::Live;
        let (cpu_before, sites_before, sites_wanted) = {
            let g = lock(&session);
            let flags = g.control.map_or(0, |c| c.0);
            (g.cpu_sections, g.sites_reports, flags & 0x1 != 0)
        };
        if live {
            let mut req = Command::CpuSamples {
                ignored: 0,
                cutoff: 0.0,
            }
            .encode(serial);
            serial += 1;
            if sites_wanted {
                req.extend(
                    Command::AllocSites {
                        flags: 0,
                        cutoff: 0.0,
                    }
                    .encode(serial),
                );
                serial += 1;
            }
            if out.write_all(&req).is_ok() {
                let until = Instant::now() + ANSWER_WITHIN;
                while Instant::now() < until {
                    let g = lock(&session);
                    let done = g.cpu_sections > cpu_before
                        && (!sites_wanted || g.sites_reports > sites_before);
                    if done || g.state != State::Live {
                        break;
                    }
                    drop(g);
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        let (until_ns, until_s) = if live {
            (
                start_ns + (k as i64) * a.interval.as_nanos() as i64,
                base_s + (k * a.interval.as_secs()) as i64,
            )
        } else {
            let n = unix_ns().max(from_ns);
            (n, (n / 1_000_000_000).max(from_s))
        };
        let (cpu, alloc) = {
            let g = lock(&session);
            (
                deltas.cpu(&g, (from_ns, until_ns), period_ns),
                deltas.alloc(&g, (from_ns, until_ns)),
            )
        };
        if let Some(raw) = cpu {
            let q = ingest::query(&name, from_s, until_s, "hprof-rs", period_ns);
            reach.post(&target, &q, &raw);
        }
        if let Some(raw) = alloc {
            let q = ingest::query(&name, from_s, until_s, "hprof-rs", None);
            reach.post(&target, &q, &raw);
        }
        (from_ns, from_s) = (until_ns, until_s);
        if !live {
            break;
        }
    }
    let _ = reader.join();
    let g = lock(&session);
    match &g.error {
        Some(e) => Err(format!("the stream from {peer}: {e}")),
        None => Ok(()),
    }
}
