//! The per-thread shadow stack of cpu=times (docs/cpu-times.md), free of JVM
//! calls so it can be tested on its own: everything it needs from the JVM
//! (clock, method IDs, the real stack, trace interning) comes through
//! [`TimingEnv`].
//!
//! * `CallSite` pushes (method, start time); `ReturnSite` pops the method —
//!   charging on the way every entry above it (methods whose return was
//!   never seen: not instrumented, or left by an exception) — and charges it.
//! * Charging an entry: total = now − start, self = total − time spent in
//!   callees; the caller's callee time grows by total; the entry's trace
//!   gets one hit, self and total.
//! * A trace is the entry's method plus up to depth − 1 callers below it
//!   (method-level frames). Each entry remembers its trace's counter cell,
//!   found through a per-thread memo keyed by (caller's cell, method), so
//!   the hot path is a hash lookup on thread-local data: no lock, no
//!   allocation once the thread has seen the call path.
//! * A return of a method that is not on the shadow stack (entered before
//!   tracking was engaged) rebuilds the stack from the real one (the missing
//!   frames start now, docs/cpu-times.md). An ExceptionCatch prunes the entries whose
//!   frames are gone from the real stack.
//!
//! Counters are per thread and single-writer (plain load + store, no
//! atomic read-modify-write); the dump sums them over threads and keeps
//! a baseline per cell so each report covers the time since the last dump.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// A method identity (the JVM's jmethodID as an integer).
pub type MethodKey = usize;

/// (class number << 32) | method number of an instrumented method.
pub type SiteKey = u64;

pub fn site_key(cnum: u32, mnum: u32) -> SiteKey {
    ((cnum as u64) << 32) | mnum as u64
}

const NO_SITE: SiteKey = u64::MAX;
const NO_CELL: u32 = u32::MAX;

/// What the shadow stack needs from the JVM.
pub trait TimingEnv {
    /// Current time in nanoseconds (monotonic).
    fn now(&mut self) -> u64;
    /// The method an instrumented (class, method) number pair denotes,
    /// looked up from the calling frame. None if it cannot be resolved.
    fn site_method(&mut self, cnum: u32, mnum: u32) -> Option<MethodKey>;
    /// Frame id (method-level, `Unknown line`) of a method, for trace keys.
    fn frame_of(&mut self, method: MethodKey) -> Option<u32>;
    /// Serial of the trace `[thread_key, frames...]`.
    fn intern(&mut self, key: &[u32]) -> u32;
    /// The current thread's real stack, top frame first, Tracker frames
    /// removed. False if it cannot be fetched.
    fn real_stack(&mut self, out: &mut Vec<MethodKey>) -> bool;
}

/// Counters of one trace on one thread. Only the owning thread writes
/// `hits/self_ns/total_ns`; only the dumper writes the `reported_*`
/// baselines.
#[derive(Debug, Default)]
pub struct Cell {
    pub trace_serial: u32,
    pub hits: AtomicU64,
    pub self_ns: AtomicU64,
    pub total_ns: AtomicU64,
    reported_hits: AtomicU64,
    reported_self: AtomicU64,
    reported_total: AtomicU64,
}

/// Single-writer add: a plain load and store, no locked instruction.
#[inline]
fn bump(a: &AtomicU64, v: u64) {
    a.store(a.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
}

impl Cell {
    fn new(trace_serial: u32) -> Self {
        Cell {
            trace_serial,
            ..Default::default()
        }
    }

    fn charge(&self, self_ns: u64, total_ns: u64) {
        bump(&self.hits, 1);
        bump(&self.self_ns, self_ns);
        bump(&self.total_ns, total_ns);
    }

    /// (hits, self ns, total ns) since the previous call; advances the
    /// baseline to the values read (dumper only, dumps never overlap).
    pub fn take_delta(&self) -> (u64, u64, u64) {
        let h = self.hits.load(Ordering::Relaxed);
        let s = self.self_ns.load(Ordering::Relaxed);
        let t = self.total_ns.load(Ordering::Relaxed);
        (
            h.wrapping_sub(self.reported_hits.swap(h, Ordering::Relaxed)),
            s.wrapping_sub(self.reported_self.swap(s, Ordering::Relaxed)),
            t.wrapping_sub(self.reported_total.swap(t, Ordering::Relaxed)),
        )
    }
}

/// The cells of one thread, shared with the dumper. The owner locks it only
/// when it creates a cell (first time it meets a call path).
#[derive(Debug, Default)]
pub struct CellList {
    cells: Mutex<Vec<Arc<Cell>>>,
}

impl CellList {
    pub fn for_each(&self, mut f: impl FnMut(&Cell)) {
        for c in self.cells.lock().iter() {
            f(c);
        }
    }
}

/// The memo tables are keyed by small agent-made integers: the Fx hash is
/// enough and far cheaper than SipHash on the call path.
pub type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// Slots of a thread's call-path cache (24 bytes each).
const MEMO_SLOTS: usize = 512;

#[derive(Clone, Copy)]
struct Memo {
    site: SiteKey,
    parent: u32,
    cell: u32,
    method: MethodKey,
}

impl Memo {
    const EMPTY: Memo = Memo {
        site: NO_SITE,
        parent: NO_CELL,
        cell: NO_CELL,
        method: 0,
    };

    fn new(parent: u32, site: SiteKey, cell: u32, method: MethodKey) -> Memo {
        Memo {
            site,
            parent,
            cell,
            method,
        }
    }
}

#[inline]
fn memo_slot(parent: u32, site: SiteKey) -> usize {
    let h = (site ^ ((parent as u64) << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> (64 - MEMO_SLOTS.trailing_zeros())) as usize
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    site: SiteKey,
    method: MethodKey,
    cell: u32,
    start: u64,
    callees: u64,
}

/// One thread's timing state.
pub struct ShadowStack {
    depth: usize,
    thread_key: u32,
    stack: Vec<Entry>,
    cells: Vec<Arc<Cell>>,
    /// Frame ids of each cell's trace, top first (at most `depth`).
    cell_frames: Vec<Box<[u32]>>,
    shared: Arc<CellList>,
    by_site: FastMap<(u32, SiteKey), (u32, MethodKey)>,
    /// Direct-mapped cache in front of `by_site`: the call path of a hot
    /// loop is a handful of (caller's cell, site) pairs, so most calls
    /// cost one probe instead of a hash-table lookup.
    memo: Box<[Memo]>,
    by_method: FastMap<(u32, MethodKey), u32>,
    by_serial: FastMap<u32, u32>,
    site_methods: FastMap<SiteKey, MethodKey>,
    key: Vec<u32>,
    real: Vec<MethodKey>,
}

impl ShadowStack {
    /// `depth`: frames per trace; `thread_key`: thread serial with
    /// `thread=y`, else 0 (first element of every trace key).
    pub fn new(depth: usize, thread_key: u32, shared: Arc<CellList>) -> Self {
        ShadowStack {
            depth,
            thread_key,
            stack: Vec::with_capacity(64),
            cells: Vec::new(),
            cell_frames: Vec::new(),
            shared,
            by_site: FastMap::default(),
            memo: vec![Memo::EMPTY; MEMO_SLOTS].into_boxed_slice(),
            by_method: FastMap::default(),
            by_serial: FastMap::default(),
            site_methods: FastMap::default(),
            key: Vec::new(),
            real: Vec::new(),
        }
    }

    pub fn depth_now(&self) -> usize {
        self.stack.len()
    }

    /// Methods on the shadow stack, bottom first (for tests and logs).
    pub fn methods(&self) -> Vec<MethodKey> {
        self.stack.iter().map(|e| e.method).collect()
    }

    /// Method entry (`CallSite`).
    pub fn call(&mut self, env: &mut impl TimingEnv, cnum: u32, mnum: u32) {
        let now = env.now();
        let site = site_key(cnum, mnum);
        let parent = self.stack.last().map_or(NO_CELL, |e| e.cell);
        let slot = memo_slot(parent, site);
        let memo = self.memo[slot];
        let (cell, method) = if memo.site == site && memo.parent == parent {
            (memo.cell, memo.method)
        } else {
            match self.by_site.get(&(parent, site)) {
                Some(&(c, m)) => {
                    self.memo[slot] = Memo::new(parent, site, c, m);
                    (c, m)
                }
                None => match self.site_method(env, site) {
                    Some(m) => {
                        let c = self.cell_for(env, parent, m);
                        self.by_site.insert((parent, site), (c, m));
                        self.memo[slot] = Memo::new(parent, site, c, m);
                        (c, m)
                    }
                    // Unresolvable: still pushed so its return pops it, never charged.
                    None => (NO_CELL, 0),
                },
            }
        };
        self.stack.push(Entry {
            site,
            method,
            cell,
            start: now,
            callees: 0,
        });
    }

    /// Before a return instruction (`ReturnSite`).
    pub fn ret(&mut self, env: &mut impl TimingEnv, cnum: u32, mnum: u32) {
        let now = env.now();
        let site = site_key(cnum, mnum);
        // Fast path: the returning method is on top.
        if self.stack.last().is_some_and(|e| e.site == site) {
            self.pop_charge(now);
            return;
        }
        let k = match self.stack.iter().rposition(|e| e.site == site) {
            Some(k) => Some(k),
            None => self.site_method(env, site).and_then(|m| {
                self.stack.iter().rposition(|e| e.method == m).or_else(|| {
                    // Entered before tracking started: rebuild from the real stack.
                    self.rebuild(env, now);
                    self.stack.iter().rposition(|e| e.method == m)
                })
            }),
        };
        if let Some(k) = k {
            while self.stack.len() > k + 1 {
                self.pop_charge(now);
            }
            self.pop_charge(now);
        }
    }

    /// ExceptionCatch in `method`: entries whose frames are no longer on the
    /// real stack (left by the exception) are popped and charged.
    pub fn exception_caught(&mut self, env: &mut impl TimingEnv, method: MethodKey) {
        let now = env.now();
        if self.stack.is_empty() {
            return;
        }
        let mut real = std::mem::take(&mut self.real);
        if env.real_stack(&mut real) {
            real.reverse();
            let kept = matched_prefix(&self.stack, &real).len();
            while self.stack.len() > kept {
                self.pop_charge(now);
            }
        } else if let Some(k) = self.stack.iter().rposition(|e| e.method == method) {
            // No real stack: the original's rule, pop down to the catcher.
            while self.stack.len() > k + 1 {
                self.pop_charge(now);
            }
        }
        self.real = real;
    }

    fn site_method(&mut self, env: &mut impl TimingEnv, site: SiteKey) -> Option<MethodKey> {
        if let Some(&m) = self.site_methods.get(&site) {
            return Some(m);
        }
        let m = env.site_method((site >> 32) as u32, site as u32)?;
        self.site_methods.insert(site, m);
        Some(m)
    }

    /// The cell of the trace (method, callers from `parent`'s trace).
    fn cell_for(&mut self, env: &mut impl TimingEnv, parent: u32, method: MethodKey) -> u32 {
        if let Some(&c) = self.by_method.get(&(parent, method)) {
            return c;
        }
        let Some(frame) = env.frame_of(method) else {
            return NO_CELL;
        };
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        key.push(self.thread_key);
        if self.depth > 0 {
            key.push(frame);
            if let Some(pf) = self.cell_frames.get(parent as usize) {
                key.extend(pf.iter().take(self.depth - 1));
            }
        }
        let serial = env.intern(&key);
        let c = match self.by_serial.get(&serial) {
            Some(&c) => c,
            None => {
                let c = self.cells.len() as u32;
                let cell = Arc::new(Cell::new(serial));
                self.shared.cells.lock().push(cell.clone());
                self.cells.push(cell);
                self.cell_frames.push(key[1..].into());
                self.by_serial.insert(serial, c);
                c
            }
        };
        self.key = key;
        self.by_method.insert((parent, method), c);
        c
    }

    fn pop_charge(&mut self, now: u64) {
        let Some(e) = self.stack.pop() else { return };
        let total = now.saturating_sub(e.start);
        let own = total.saturating_sub(e.callees);
        if let Some(top) = self.stack.last_mut() {
            top.callees = top.callees.saturating_add(total);
        }
        if let Some(c) = self.cells.get(e.cell as usize) {
            c.charge(own, total);
        }
    }

    /// Make the shadow stack mirror the real one: entries no longer on it
    /// are charged and dropped, real frames missing from it are inserted
    /// with start = now (docs/cpu-times.md), and every entry's trace is
    /// recomputed from its new callers.
    fn rebuild(&mut self, env: &mut impl TimingEnv, now: u64) {
        let mut real = std::mem::take(&mut self.real);
        if !env.real_stack(&mut real) {
            self.real = real;
            return;
        }
        real.reverse();
        let matched = matched_prefix(&self.stack, &real);
        while self.stack.len() > matched.len() {
            self.pop_charge(now);
        }
        let old = std::mem::take(&mut self.stack);
        let mut next = 0;
        let mut parent = NO_CELL;
        for (i, &m) in real.iter().enumerate() {
            let mut e = if next < matched.len() && matched[next] == i {
                next += 1;
                old[next - 1]
            } else {
                Entry {
                    site: NO_SITE,
                    method: m,
                    cell: NO_CELL,
                    start: now,
                    callees: 0,
                }
            };
            e.cell = self.cell_for(env, parent, m);
            if e.site != NO_SITE {
                self.by_site.insert((parent, e.site), (e.cell, m));
                self.memo[memo_slot(parent, e.site)] = Memo::new(parent, e.site, e.cell, m);
            }
            parent = e.cell;
            self.stack.push(e);
        }
        self.real = real;
    }
}

/// Greedy match of the shadow stack (bottom first) as a subsequence of the
/// real stack (bottom first): for each matched entry, its index in `real`.
/// Entries after the matched prefix are stale.
fn matched_prefix(stack: &[Entry], real: &[MethodKey]) -> Vec<usize> {
    let mut out = Vec::with_capacity(stack.len());
    let mut i = 0;
    for e in stack {
        match real[i..].iter().position(|&m| m == e.method) {
            Some(p) => {
                out.push(i + p);
                i += p + 1;
            }
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests;
