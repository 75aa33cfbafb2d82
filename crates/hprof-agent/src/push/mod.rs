//! `push=URL` (docs/push.md): every `pushinterval` seconds the CPU samples
//! and allocations of that interval go, as gzipped pprof, to a
//! Pyroscope-compatible server's `/ingest`.
//!
//! One agent thread does it all: it wakes at each interval's end, takes
//! the interval's differences from the tables ([`collect`]), queues them,
//! and posts what is queued ([`http`]). Nothing on a sampling path or in a
//! JVMTI callback waits for it; the tables' counters are atomics it only
//! reads. The queue holds [`QUEUE_INTERVALS`] intervals; when the server
//! does not take them the oldest is dropped and counted. Every network step
//! has a timeout; failed posts are retried with a doubling pause. The
//! server becoming unreachable, and reachable again, are one line each.

pub mod collect;

use crate::diag;
use crate::ingest as http;
use crate::jvmti::sys::JVMTI_THREAD_NORM_PRIORITY;
use crate::jvmti::{AgentThread, Jni};
use crate::options::push::PushTarget;
use crate::vm::Context;
use collect::{Collector, Span};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const THREAD_NAME: &str = "HPROF push thread";

/// Intervals the queue keeps while the server does not take them.
pub const QUEUE_INTERVALS: usize = 4;
/// Longest a connect, a write or the wait for the answer may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(3);
/// First and longest pause before a post is retried.
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// At VM death or stop: how long the last, partial interval (and what is
/// still queued) may take to send.
pub const FINAL_BOUND: Duration = Duration::from_secs(2);

/// One profile waiting to be posted.
struct Pending {
    /// "cpu" or "alloc" (messages only).
    kind: &'static str,
    request: Vec<u8>,
    /// Which interval it belongs to (drops are counted in intervals).
    interval: u64,
}

/// The state of `push=`, part of the agent.
pub struct Pusher {
    thread: AgentThread,
    /// Set to wake the thread (stop).
    wake: Mutex<bool>,
    cond: Condvar,
}

impl Default for Pusher {
    fn default() -> Self {
        Pusher {
            thread: AgentThread::new(THREAD_NAME),
            wake: Mutex::new(false),
            cond: Condvar::new(),
        }
    }
}

impl Pusher {
    /// VM init or attach: start the thread when `push=` was given.
    pub fn start(&'static self, ctx: &'static Context, jni: Jni<'_>) -> Result<(), String> {
        let Some(target) = ctx.opts.push.clone() else {
            return Ok(());
        };
        let app = ctx.opts.push_app.clone().unwrap_or_else(default_app_name);
        let name = http::app_name_with_labels(&app, &ctx.opts.push_labels);
        let collector = Collector::starting_now(&ctx.tables);
        crate::vm::threads::start_agent_thread(
            ctx,
            jni,
            &self.thread,
            JVMTI_THREAD_NORM_PRIORITY,
            move |_jni| {
                let mut run = Run::new(ctx, target, name, collector);
                run.run(self);
            },
        )
    }

    /// VM death or stop, after the profiles stopped: the thread sends the
    /// last partial interval within [`FINAL_BOUND`] and ends.
    pub fn stop(&self) {
        self.thread.stop(
            || {
                *self.wake.lock() = true;
                self.cond.notify_all();
            },
            FINAL_BOUND + STEP_TIMEOUT,
        );
    }

    /// Wait until `until` or a stop; true when stopping.
    fn wait_until(&self, until: Instant) -> bool {
        let mut w = self.wake.lock();
        while !*w && !self.thread.should_stop() {
            if self.cond.wait_until(&mut w, until).timed_out() {
                break;
            }
        }
        *w || self.thread.should_stop()
    }
}

/// The default application name: the main class's simple name (or the
/// jar's file name without `.jar`) from this process's command line, else
/// `java`.
pub fn default_app_name() -> String {
    std::fs::read("/proc/self/cmdline")
        .ok()
        .and_then(|b| {
            let args: Vec<String> = b
                .split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            main_of(&args)
        })
        .unwrap_or_else(|| "java".to_string())
}

/// The main class or jar named by a `java` command line (`args[0]` is the
/// launcher), as a name the server accepts.
pub fn main_of(args: &[String]) -> Option<String> {
    const WITH_VALUE: [&str; 8] = [
        "-cp",
        "-classpath",
        "--class-path",
        "-p",
        "--module-path",
        "--add-modules",
        "--add-opens",
        "--add-exports",
    ];
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        if a == "-jar" {
            let jar = it.next()?;
            let file = jar.rsplit('/').next()?;
            return clean(file.strip_suffix(".jar").unwrap_or(file));
        }
        if a == "-m" || a == "--module" {
            let m = it.next()?;
            return clean(m.rsplit(['/', '.']).next()?);
        }
        if WITH_VALUE.contains(&a.as_str()) {
            it.next();
            continue;
        }
        if a.starts_with('-') {
            continue;
        }
        // Source-file mode (`java Hello.java`) or a class name.
        let a = a.strip_suffix(".java").unwrap_or(a);
        return clean(a.rsplit(['.', '/']).next()?);
    }
    None
}

/// `s` with every character the server's name syntax does not carry
/// replaced by `_`; None when nothing is left.
fn clean(s: &str) -> Option<String> {
    let c: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    (!c.is_empty()).then_some(c)
}

fn unix_ns(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64)
}

/// The thread's own state.
struct Run {
    ctx: &'static Context,
    target: PushTarget,
    /// `APP{labels}`.
    name: String,
    collector: Collector,
    queue: VecDeque<Pending>,
    /// Intervals dropped since the server was last reached.
    dropped: u64,
    /// The server did not take the last post (the line was printed).
    down: bool,
    backoff: Duration,
    retry_at: Instant,
    refused_statuses: Vec<u16>,
}

impl Run {
    fn new(ctx: &'static Context, target: PushTarget, name: String, collector: Collector) -> Run {
        Run {
            ctx,
            target,
            name,
            collector,
            queue: VecDeque::new(),
            dropped: 0,
            down: false,
            backoff: BACKOFF_MIN,
            retry_at: Instant::now(),
            refused_statuses: Vec::new(),
        }
    }

    fn run(&mut self, pusher: &Pusher) {
        let every = Duration::from_secs(u64::from(self.ctx.opts.push_interval_s));
        let start = Instant::now();
        let start_ns = unix_ns(SystemTime::now());
        // Interval k ends at start + k * every. Its bounds in whole seconds
        // (the server's `from` and `until`) count from start's second, so
        // one interval's `until` is the next one's `from`.
        let base_s = start_ns / NS;
        let mut k: u64 = 0;
        let (mut from_ns, mut from_s) = (start_ns, base_s);
        loop {
            let next_end = start + every * (k as u32 + 1);
            let wake_at = if self.queue.is_empty() {
                next_end
            } else {
                next_end.min(self.retry_at)
            };
            if pusher.wait_until(wake_at) {
                break;
            }
            let now = Instant::now();
            if now >= next_end {
                // Intervals that passed while a post was waiting become one.
                let passed = ((now - start).as_nanos() / every.as_nanos()) as u64;
                k = passed.max(k + 1);
                let until_ns = start_ns + (k as i64) * every.as_nanos() as i64;
                let until_s = base_s + (k * every.as_secs()) as i64;
                self.take(k, (from_ns, until_ns), (from_s, until_s));
                (from_ns, from_s) = (until_ns, until_s);
            }
            self.send_queued(None);
        }
        // The last, partial interval.
        let until_ns = unix_ns(SystemTime::now()).max(from_ns);
        let until_s = (until_ns / NS).max(from_s);
        self.take(k + 1, (from_ns, until_ns), (from_s, until_s));
        self.send_queued(Some(Instant::now() + FINAL_BOUND));
    }

    /// Queue interval `k`'s profiles (ns bounds for the profile, whole
    /// seconds for the server's parameters).
    fn take(&mut self, k: u64, ns: (i64, i64), s: (i64, i64)) {
        let span = Span {
            from_ns: ns.0,
            until_ns: ns.1,
        };
        let opts = &self.ctx.opts;
        let tables = &self.ctx.tables;
        let mut profiles = Vec::new();
        if opts.cpu_samples {
            let period_ns = i64::from(opts.interval_ms) * 1_000_000;
            profiles.push((
                "cpu",
                self.collector.cpu(tables, span, period_ns),
                period_ns,
            ));
        }
        if opts.heap_sites {
            profiles.push(("alloc", self.collector.alloc(tables, span), 0));
        }
        for (kind, taken, period_ns) in profiles {
            let Ok(body) = crate::pprof::gzip(&taken.raw) else {
                continue;
            };
            let query = http::query(&self.name, s.0, s.1, "hprof-rs", Some(period_ns));
            self.queue.push_back(Pending {
                kind,
                request: http::request(&self.target, &query, &body),
                interval: k,
            });
        }
        // Keep the newest QUEUE_INTERVALS intervals.
        while let Some(oldest) = self.queue.front().map(|p| p.interval) {
            let newest = self.queue.back().map_or(oldest, |p| p.interval);
            let intervals = self
                .queue
                .iter()
                .map(|p| p.interval)
                .fold((0usize, u64::MAX), |(n, last), i| {
                    (n + usize::from(i != last), i)
                })
                .0;
            if intervals <= QUEUE_INTERVALS || oldest == newest {
                break;
            }
            self.queue.retain(|p| p.interval != oldest);
            self.dropped += 1;
        }
    }

    /// Post what is queued, oldest first, until one fails (then wait for
    /// the backoff) or, with `deadline` (the end of the session), until
    /// the deadline.
    fn send_queued(&mut self, deadline: Option<Instant>) {
        let last = deadline.is_some();
        if !last && Instant::now() < self.retry_at {
            return;
        }
        while let Some(p) = self.queue.front() {
            let until = deadline.unwrap_or_else(|| Instant::now() + STEP_TIMEOUT * 2);
            match http::post(&self.target, &p.request, until, STEP_TIMEOUT) {
                Ok(()) => {
                    self.queue.pop_front();
                    self.reached();
                }
                Err(http::Failure::Status(code, line)) if code < 500 => {
                    // Refused: the same request would be refused again.
                    let kind = p.kind;
                    self.queue.pop_front();
                    if !self.refused_statuses.contains(&code) {
                        self.refused_statuses.push(code);
                        diag::warning(&format!(
                            "push: {}/ingest refused a {kind} profile: \"{line}\"; such profiles \
                             are dropped",
                            self.target.url.trim_end_matches('/')
                        ));
                    }
                }
                Err(e) => {
                    if !self.down {
                        self.down = true;
                        diag::warning(&format!(
                            "push: cannot send profiles to {}: {e}; keeping the last \
                             {QUEUE_INTERVALS} intervals and retrying",
                            self.target.url
                        ));
                    }
                    self.retry_at = Instant::now() + self.backoff;
                    self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
                    if last {
                        break;
                    }
                    return;
                }
            }
        }
        if last && !self.queue.is_empty() {
            let mut intervals: Vec<u64> = self.queue.iter().map(|p| p.interval).collect();
            intervals.dedup();
            diag::warning(&format!(
                "push: the last {} interval(s) of profile could not be sent to {} within {} s \
                 at the end; dropped",
                intervals.len(),
                self.target.url,
                FINAL_BOUND.as_secs()
            ));
            self.queue.clear();
        }
    }

    /// A post succeeded.
    fn reached(&mut self) {
        self.backoff = BACKOFF_MIN;
        self.retry_at = Instant::now();
        if self.down {
            self.down = false;
            diag::notice(&format!(
                "push: {} takes profiles again; {} interval(s) were dropped while it did not",
                self.target.url,
                std::mem::take(&mut self.dropped)
            ));
        }
    }
}

const NS: i64 = 1_000_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn the_main_class_or_jar_names_the_application() {
        assert_eq!(
            main_of(&args("java -Xmx1g -cp a:b com.shop.Checkout x")).as_deref(),
            Some("Checkout")
        );
        assert_eq!(
            main_of(&args("java -agentpath:x=y -jar /opt/app/shop-1.2.jar")).as_deref(),
            Some("shop-1.2")
        );
        assert_eq!(
            main_of(&args("java -m my.mod/my.pkg.Main")).as_deref(),
            Some("Main")
        );
        assert_eq!(main_of(&args("java Hello.java")).as_deref(), Some("Hello"));
        assert_eq!(main_of(&args("java -version")), None);
    }
}
