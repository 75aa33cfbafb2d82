//! The profiles `hprof-rs push` has made and the server has not taken yet
//! (docs/push.md, "`hprof-rs push`"): a queue bounded in profiles and in
//! bytes, the oldest dropped first, and one thread that posts them, so
//! that the interval ticks and the reader of the agent's stream never wait
//! for the server. A failed post is retried after 1 s, then 2, 4, ... up
//! to 60 s; a success resets the pause. The server not taking profiles is
//! one line, its taking them again another with how many were dropped.

use hprof_core::ingest::{self, Failure};
use hprof_core::options::push::PushTarget;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How much may wait for the server.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub profiles: usize,
    pub bytes: usize,
}

/// Two profiles (CPU, allocations) an interval: at 10 s intervals, ten
/// minutes of the server being away; compressed profiles of a busy
/// program are tens of KiB, so the byte bound is for the unusual.
pub const BOUNDS: Bounds = Bounds {
    profiles: 120,
    bytes: 64 << 20,
};
/// Longest a connect, a write or the wait for the answer may take.
const STEP: Duration = Duration::from_secs(3);
/// Longest a post may take.
const POST_WITHIN: Duration = Duration::from_secs(6);
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// One profile's request, ready to post.
pub struct Pending {
    /// "cpu" or "alloc" (messages only).
    pub kind: &'static str,
    pub request: Vec<u8>,
}

/// The queue itself (no thread, no network: unit-tested below).
pub struct Backlog {
    items: VecDeque<Pending>,
    bytes: usize,
    bounds: Bounds,
    /// Dropped since it was last said.
    pub dropped: u64,
}

impl Backlog {
    pub fn new(bounds: Bounds) -> Backlog {
        Backlog {
            items: VecDeque::new(),
            bytes: 0,
            bounds,
            dropped: 0,
        }
    }

    /// Queue `p` last; drop the oldest while over a bound (the newest
    /// stays, however large). Returns how many were dropped.
    pub fn push(&mut self, p: Pending) -> u64 {
        self.bytes += p.request.len();
        self.items.push_back(p);
        self.trim()
    }

    /// Put back at the front what could not be sent (it stays the oldest).
    fn retry_first(&mut self, p: Pending) {
        self.bytes += p.request.len();
        self.items.push_front(p);
        self.trim();
    }

    fn trim(&mut self) -> u64 {
        let mut n = 0;
        while self.items.len() > 1
            && (self.items.len() > self.bounds.profiles || self.bytes > self.bounds.bytes)
        {
            self.pop();
            n += 1;
        }
        self.dropped += n;
        n
    }

    fn pop(&mut self) -> Option<Pending> {
        let p = self.items.pop_front()?;
        self.bytes -= p.request.len();
        Some(p)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

struct Shared {
    backlog: Backlog,
    /// Set by `finish`: post what is left before this instant, then end.
    closing: Option<Instant>,
    /// The bound was reached while the server was taking profiles (said
    /// once until the queue is empty again).
    lagging: bool,
}

/// The queue and its posting thread.
pub struct Outbox {
    shared: Arc<(Mutex<Shared>, Condvar)>,
    url: String,
    thread: Option<JoinHandle<()>>,
}

fn lock(m: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Outbox {
    pub fn start(target: PushTarget, bounds: Bounds) -> Outbox {
        let shared = Arc::new((
            Mutex::new(Shared {
                backlog: Backlog::new(bounds),
                closing: None,
                lagging: false,
            }),
            Condvar::new(),
        ));
        let url = target.url.clone();
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("push-post".into())
            .spawn(move || Sender::new(target, bounds).run(&s))
            .ok();
        Outbox {
            shared,
            url,
            thread,
        }
    }

    /// Queue a profile; never waits for the server.
    pub fn send(&self, p: Pending) {
        let (m, cond) = &*self.shared;
        let mut g = lock(m);
        let dropped = g.backlog.push(p);
        if dropped > 0 && !g.lagging {
            g.lagging = true;
            eprintln!(
                "push: {} has not taken the last {} profiles; dropping the oldest",
                self.url,
                g.backlog.len()
            );
        }
        drop(g);
        cond.notify_all();
    }

    /// Post what is queued within `within`, then end the thread; what is
    /// left is dropped with one line.
    pub fn finish(mut self, within: Duration) {
        {
            let (m, cond) = &*self.shared;
            lock(m).closing = Some(Instant::now() + within);
            cond.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The posting thread's own state.
struct Sender {
    target: PushTarget,
    bounds: Bounds,
    down: bool,
    backoff: Duration,
    retry_at: Instant,
    refused_statuses: Vec<u16>,
}

impl Sender {
    fn new(target: PushTarget, bounds: Bounds) -> Sender {
        Sender {
            target,
            bounds,
            down: false,
            backoff: BACKOFF_MIN,
            retry_at: Instant::now(),
            refused_statuses: Vec::new(),
        }
    }

    fn run(&mut self, shared: &(Mutex<Shared>, Condvar)) {
        let (m, cond) = shared;
        loop {
            // The next profile to post, once it may be posted.
            let (p, deadline) = {
                let mut g = lock(m);
                loop {
                    let now = Instant::now();
                    if let Some(end) = g.closing {
                        if g.backlog.is_empty() {
                            return;
                        }
                        if now >= end {
                            self.give_up(&mut g);
                            return;
                        }
                        // At the end the server gets one more try now,
                        // whatever the pause.
                        break;
                    }
                    if !g.backlog.is_empty() && now >= self.retry_at {
                        break;
                    }
                    if g.backlog.is_empty() {
                        g = cond.wait(g).unwrap_or_else(|e| e.into_inner());
                    } else {
                        let wait = self.retry_at - now;
                        g = cond
                            .wait_timeout(g, wait)
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                    }
                }
                let deadline = match g.closing {
                    Some(end) => end.min(Instant::now() + POST_WITHIN),
                    None => Instant::now() + POST_WITHIN,
                };
                (g.backlog.pop(), deadline)
            };
            let Some(p) = p else { continue };
            match ingest::post(&self.target, &p.request, deadline, STEP) {
                Ok(()) => self.reached(&mut lock(m)),
                Err(Failure::Status(code, line)) if code < 500 => {
                    // Refused: the same request would be refused again.
                    if !self.refused_statuses.contains(&code) {
                        self.refused_statuses.push(code);
                        eprintln!(
                            "push: {}/ingest refused a {} profile: \"{line}\"; such profiles \
                             are dropped",
                            self.target.url.trim_end_matches('/'),
                            p.kind
                        );
                    }
                }
                Err(e) => {
                    if !self.down {
                        self.down = true;
                        eprintln!(
                            "push: cannot send profiles to {}: {e}; keeping up to {} profiles \
                             ({} MiB) and retrying",
                            self.target.url,
                            self.bounds.profiles,
                            self.bounds.bytes >> 20
                        );
                    }
                    self.retry_at = Instant::now() + self.backoff;
                    self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
                    let mut g = lock(m);
                    g.backlog.retry_first(p);
                    if g.closing.is_some() {
                        self.give_up(&mut g);
                        return;
                    }
                }
            }
        }
    }

    /// A post succeeded.
    fn reached(&mut self, g: &mut Shared) {
        self.backoff = BACKOFF_MIN;
        self.retry_at = Instant::now();
        if self.down {
            self.down = false;
            g.lagging = false;
            eprintln!(
                "push: {} takes profiles again; {} profile(s) were dropped while it did not",
                self.target.url,
                std::mem::take(&mut g.backlog.dropped)
            );
        } else if g.lagging && g.backlog.is_empty() {
            g.lagging = false;
            eprintln!(
                "push: {} has caught up; {} profile(s) were dropped",
                self.target.url,
                std::mem::take(&mut g.backlog.dropped)
            );
        }
    }

    fn give_up(&self, g: &mut Shared) {
        eprintln!(
            "push: {} profile(s) could not be sent to {} at the end; dropped",
            g.backlog.len(),
            self.target.url
        );
        while g.backlog.pop().is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: usize) -> Pending {
        Pending {
            kind: "cpu",
            request: vec![n as u8; n],
        }
    }

    fn sizes(b: &Backlog) -> Vec<usize> {
        b.items.iter().map(|p| p.request.len()).collect()
    }

    #[test]
    fn the_oldest_go_first_past_either_bound() {
        let mut b = Backlog::new(Bounds {
            profiles: 3,
            bytes: 100,
        });
        assert_eq!(b.push(p(10)) + b.push(p(11)) + b.push(p(12)), 0);
        assert_eq!(b.push(p(13)), 1, "a fourth profile drops the first");
        assert_eq!(sizes(&b), [11, 12, 13]);
        assert_eq!(b.push(p(70)), 1, "106 bytes: the oldest goes");
        assert_eq!(sizes(&b), [12, 13, 70]);
        assert_eq!(b.push(p(200)), 3, "the newest stays, however large");
        assert_eq!(sizes(&b), [200]);
        assert_eq!((b.dropped, b.bytes), (5, 200));
        b.pop();
        assert_eq!((b.len(), b.bytes), (0, 0));
    }

    #[test]
    fn a_failed_post_stays_the_oldest() {
        let mut b = Backlog::new(Bounds {
            profiles: 2,
            bytes: 1000,
        });
        b.push(p(1));
        b.push(p(2));
        let first = b.pop().unwrap();
        b.push(p(3));
        b.retry_first(first);
        assert_eq!(
            sizes(&b),
            [2, 3],
            "the bound holds with what comes back: the oldest went"
        );
        assert_eq!(b.dropped, 1);
    }
}
