//! Allocation sites: one entry per (class serial, trace serial), with
//! allocated and live byte/instance counters.
//!
//! Sites are numbered by an index (stored as the `owner` of object-table
//! slots, so ObjectFree can find the site to decrement). Entries live in
//! lazily allocated fixed chunks, so reading a site by index takes no lock
//! and entries never move. Two lookups lead to an index:
//!
//! * `(class serial, trace serial)`, the site's identity;
//! * an opaque "fingerprint" key the allocation profile builds from the raw
//!   stack (class serial, thread, `(method, location)` pairs), so the hot
//!   path finds its site with one sharded-map lookup and no frame or trace
//!   interning. Several fingerprints may lead to one site.
//!
//! Both maps are sharded (`DashMap`): lookups and counter updates take no
//! global lock; only creating a new site takes a small mutex (once per
//! site, so indices stay dense). The table is bounded
//! ([`MAX_SITES`]); when full, `intern` returns None and the caller counts
//! the allocation as dropped.

use dashmap::DashMap;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;

const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;
const MAX_CHUNKS: usize = 1024;
/// At most this many sites (4,194,304); beyond it allocations are dropped.
pub const MAX_SITES: u32 = (MAX_CHUNKS * CHUNK) as u32;

/// Counters of one site. "Live" counters go down when objects are freed;
/// allocated counters never go down (except by [`SiteTable::clear`]).
#[derive(Debug, Default)]
pub struct Site {
    pub class_serial: AtomicU32,
    pub trace_serial: AtomicU32,
    pub alloc_bytes: AtomicU64,
    pub alloc_instances: AtomicU64,
    pub live_bytes: AtomicU64,
    pub live_instances: AtomicU64,
    /// Counters changed since the last report (socket "incremental" ALLOC
    /// SITES requests list only these).
    pub changed: AtomicBool,
}

/// A consistent-enough copy of one site's counters (each counter is read
/// atomically; a report taken while threads allocate may mix moments).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteSnapshot {
    pub index: u32,
    pub class_serial: u32,
    pub trace_serial: u32,
    pub alloc_bytes: u64,
    pub alloc_instances: u64,
    pub live_bytes: u64,
    pub live_instances: u64,
    pub changed: bool,
}

/// Sums over all sites.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteTotals {
    pub alloc_bytes: u64,
    pub alloc_instances: u64,
    pub live_bytes: u64,
    pub live_instances: u64,
}

// Keys here are agent-made integers (serials, method IDs, byte-code
// indices): the Fx hash is enough and much cheaper than SipHash on the
// allocation path.
type FxBuild = rustc_hash::FxBuildHasher;

pub struct SiteTable {
    /// Sampling interval in bytes the counters are made with (0 = exact):
    /// the unit of the instance counters (see [`report_instances`]).
    interval: AtomicU64,
    /// Allocated counts were taken at least once (`snapshot_taking_allocations`):
    /// every report from then on counts since the last take.
    taken: AtomicBool,
    chunks: Box<[OnceLock<Box<[Site]>>]>,
    len: AtomicU32,
    by_identity: DashMap<(u32, u32), u32, FxBuild>,
    by_fingerprint: DashMap<Box<[u64]>, u32, FxBuild>,
    create: Mutex<()>,
}

impl Default for SiteTable {
    fn default() -> Self {
        SiteTable {
            interval: AtomicU64::new(0),
            taken: AtomicBool::new(false),
            chunks: (0..MAX_CHUNKS).map(|_| OnceLock::new()).collect(),
            len: AtomicU32::new(0),
            by_identity: DashMap::default(),
            by_fingerprint: DashMap::default(),
            create: Mutex::new(()),
        }
    }
}

impl SiteTable {
    /// Sampling interval of the counters (bytes; 0 = every allocation).
    pub fn interval(&self) -> u64 {
        self.interval.load(Ordering::Relaxed)
    }

    /// Set once, before counting starts.
    pub fn set_interval(&self, bytes: u64) {
        self.interval.store(bytes, Ordering::Relaxed);
    }

    /// The site at `index`, if it exists.
    pub fn get(&self, index: u32) -> Option<&Site> {
        if index >= self.len.load(Ordering::Acquire) {
            return None;
        }
        self.chunks
            .get((index >> CHUNK_BITS) as usize)?
            .get()?
            .get(index as usize & (CHUNK - 1))
    }

    fn chunk_site(&self, index: u32) -> Option<&Site> {
        let chunk = self.chunks.get((index >> CHUNK_BITS) as usize)?;
        chunk
            .get_or_init(|| (0..CHUNK).map(|_| Site::default()).collect())
            .get(index as usize & (CHUNK - 1))
    }

    /// Index of the site (class, trace), creating it on first sight; None
    /// when the table is full.
    pub fn intern(&self, class_serial: u32, trace_serial: u32) -> Option<u32> {
        if let Some(i) = self.by_identity.get(&(class_serial, trace_serial)) {
            return Some(*i);
        }
        // entry() holds this identity's shard lock, so one identity gets one
        // index; `create` (taken inside it, never the other way round)
        // serialises the rare creations so indices are dense.
        let idx = *self
            .by_identity
            .entry((class_serial, trace_serial))
            .or_insert_with(|| {
                let _g = self.create.lock();
                let i = self.len.load(Ordering::Acquire);
                let Some(s) = (i < MAX_SITES).then(|| self.chunk_site(i)).flatten() else {
                    return u32::MAX;
                };
                s.class_serial.store(class_serial, Ordering::Relaxed);
                s.trace_serial.store(trace_serial, Ordering::Relaxed);
                self.len.store(i + 1, Ordering::Release);
                i
            });
        if idx == u32::MAX {
            self.by_identity
                .remove_if(&(class_serial, trace_serial), |_, v| *v == u32::MAX);
            return None;
        }
        Some(idx)
    }

    /// Site index cached for a fingerprint key.
    pub fn by_fingerprint(&self, key: &[u64]) -> Option<u32> {
        self.by_fingerprint.get(key).map(|i| *i)
    }

    /// Remember which site a fingerprint key leads to.
    pub fn remember_fingerprint(&self, key: &[u64], index: u32) {
        self.by_fingerprint.insert(key.into(), index);
    }

    /// Count an allocation of `instances` objects totalling `bytes`; `live`
    /// also adds them to the live counters (only for objects whose free
    /// will be reported).
    #[inline]
    pub fn allocated(&self, index: u32, bytes: u64, instances: u64, live: bool) {
        if let Some(s) = self.get(index) {
            s.alloc_bytes.fetch_add(bytes, Ordering::Relaxed);
            s.alloc_instances.fetch_add(instances, Ordering::Relaxed);
            if live {
                s.live_bytes.fetch_add(bytes, Ordering::Relaxed);
                s.live_instances.fetch_add(instances, Ordering::Relaxed);
            }
            if !s.changed.load(Ordering::Relaxed) {
                s.changed.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Count a free (live counters only; saturating at 0 so a counter never
    /// wraps if a site was cleared while its objects lived).
    #[inline]
    pub fn freed(&self, index: u32, bytes: u64, instances: u64) {
        if let Some(s) = self.get(index) {
            sub_saturating(&s.live_bytes, bytes);
            sub_saturating(&s.live_instances, instances);
            if !s.changed.load(Ordering::Relaxed) {
                s.changed.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Zero every counter (socket CONTROL "clear sites"); sites stay known.
    pub fn clear(&self) {
        for s in self.iter() {
            for c in [
                &s.alloc_bytes,
                &s.alloc_instances,
                &s.live_bytes,
                &s.live_instances,
            ] {
                c.store(0, Ordering::Relaxed);
            }
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Site> {
        (0..self.len()).filter_map(move |i| self.get(i as u32))
    }

    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies of every site's counters, in index order.
    pub fn snapshot(&self) -> Vec<SiteSnapshot> {
        self.snapshot_with(|c| c.load(Ordering::Relaxed))
    }

    /// The same, each site's allocated counts taken (restarted from 0 in
    /// the same atomic step, so an allocation counted meanwhile goes to
    /// the next take): ALLOC SITES with `SITES_TAKEN`.
    pub fn snapshot_taking_allocations(&self) -> Vec<SiteSnapshot> {
        self.taken.store(true, Ordering::Relaxed);
        self.snapshot_with(|c| c.swap(0, Ordering::Relaxed))
    }

    /// Whether allocated counts were ever taken: reports then hold the
    /// allocations since the last take, for the front-end that takes them.
    pub fn taken(&self) -> bool {
        self.taken.load(Ordering::Relaxed)
    }

    fn snapshot_with(&self, alloc: impl Fn(&AtomicU64) -> u64) -> Vec<SiteSnapshot> {
        self.iter()
            .enumerate()
            .map(|(i, s)| SiteSnapshot {
                index: i as u32,
                class_serial: s.class_serial.load(Ordering::Relaxed),
                trace_serial: s.trace_serial.load(Ordering::Relaxed),
                alloc_bytes: alloc(&s.alloc_bytes),
                alloc_instances: alloc(&s.alloc_instances),
                live_bytes: s.live_bytes.load(Ordering::Relaxed),
                live_instances: s.live_instances.load(Ordering::Relaxed),
                changed: s.changed.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Clear every site's "changed" flag (after each report).
    pub fn clear_changed(&self) {
        for s in self.iter() {
            s.changed.store(false, Ordering::Relaxed);
        }
    }

    /// Totals over all sites (HEAP DUMP BEGIN, SITES and HEAP SUMMARY).
    pub fn totals(&self) -> SiteTotals {
        totals_of(&self.snapshot())
    }

    /// Bytes of agent memory used (for `verbose`): site chunks plus both
    /// maps' entries (approximate: key bytes and a per-entry overhead).
    pub fn memory_bytes(&self) -> usize {
        let chunks = self.chunks.iter().filter(|c| c.get().is_some()).count();
        let fp: usize = self
            .by_fingerprint
            .iter()
            .map(|e| e.key().len() * 8 + 48)
            .sum();
        chunks * CHUNK * std::mem::size_of::<Site>() + self.by_identity.len() * 32 + fp
    }

    pub fn fingerprints(&self) -> usize {
        self.by_fingerprint.len()
    }
}

/// In sampled mode instance counters count 1/65536 objects, so weights
/// like 1.58 add up without rounding bias; exact mode counts whole objects.
pub const INSTANCE_SCALE: u64 = 1 << 16;

/// (bytes, instances in counter units) one event adds for an object of
/// `size` bytes. Exact: (size, 1). Sampled: both scaled by the inverse of
/// the probability of sampling an object of that size.
pub fn weight(size: u64, interval: u64) -> (u64, u64) {
    if interval == 0 {
        return (size, 1);
    }
    let p = -(-(size.max(1) as f64) / interval as f64).exp_m1();
    let w = if p > 0.0 { 1.0 / p } else { 1.0 };
    (
        (size as f64 * w).round() as u64,
        (w * INSTANCE_SCALE as f64).round() as u64,
    )
}

/// Instances for a report from counter units.
pub fn report_instances(units: u64, interval: u64) -> u64 {
    if interval == 0 {
        units
    } else {
        (units + INSTANCE_SCALE / 2) / INSTANCE_SCALE
    }
}

pub fn totals_of(sites: &[SiteSnapshot]) -> SiteTotals {
    sites.iter().fold(SiteTotals::default(), |t, s| SiteTotals {
        alloc_bytes: t.alloc_bytes + s.alloc_bytes,
        alloc_instances: t.alloc_instances + s.alloc_instances,
        live_bytes: t.live_bytes + s.live_bytes,
        live_instances: t.live_instances + s.live_instances,
    })
}

fn sub_saturating(c: &AtomicU64, v: u64) {
    let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| {
        Some(x.saturating_sub(v))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn sites_are_interned_by_class_and_trace() {
        let t = SiteTable::default();
        let a = t.intern(100_001, 300_005).unwrap();
        let b = t.intern(100_002, 300_005).unwrap();
        assert_eq!((a, b), (0, 1));
        assert_eq!(t.intern(100_001, 300_005), Some(a));
        t.allocated(a, 24, 1, true);
        t.allocated(a, 24, 1, true);
        t.allocated(b, 1000, 1, true);
        t.freed(a, 24, 1);
        let snap = t.snapshot();
        assert_eq!(
            snap[0],
            SiteSnapshot {
                index: 0,
                class_serial: 100_001,
                trace_serial: 300_005,
                alloc_bytes: 48,
                alloc_instances: 2,
                live_bytes: 24,
                live_instances: 1,
                changed: true,
            }
        );
        t.clear_changed();
        assert!(!t.snapshot()[0].changed);
        assert_eq!(
            t.totals(),
            SiteTotals {
                alloc_bytes: 1048,
                alloc_instances: 3,
                live_bytes: 1024,
                live_instances: 2
            }
        );
    }

    #[test]
    fn a_take_restarts_the_allocated_counts_only() {
        let t = SiteTable::default();
        let a = t.intern(1, 2).unwrap();
        t.allocated(a, 5_000_000_000, 3, true);
        let taken = t.snapshot_taking_allocations();
        assert_eq!(
            (taken[0].alloc_bytes, taken[0].alloc_instances),
            (5_000_000_000, 3)
        );
        t.allocated(a, 10, 1, true);
        let s = t.snapshot_taking_allocations()[0];
        assert_eq!((s.alloc_bytes, s.alloc_instances), (10, 1));
        assert_eq!((s.live_bytes, s.live_instances), (5_000_000_010, 4));
        let s = t.snapshot()[0];
        assert_eq!((s.alloc_bytes, s.alloc_instances), (0, 0));
    }

    #[test]
    fn frees_never_wrap_and_clear_zeroes_counters() {
        let t = SiteTable::default();
        let a = t.intern(1, 2).unwrap();
        t.allocated(a, 10, 1, true);
        t.clear();
        t.freed(a, 10, 1);
        assert_eq!(t.totals(), SiteTotals::default());
        assert_eq!(t.len(), 1, "sites stay known after clear");
    }

    #[test]
    fn fingerprints_lead_to_sites() {
        let t = SiteTable::default();
        let a = t.intern(1, 2).unwrap();
        assert_eq!(t.by_fingerprint(&[1, 0xdead, 7]), None);
        t.remember_fingerprint(&[1, 0xdead, 7], a);
        t.remember_fingerprint(&[1, 0xbeef, 7], a);
        assert_eq!(t.by_fingerprint(&[1, 0xdead, 7]), Some(a));
        assert_eq!(t.fingerprints(), 2);
        assert!(t.memory_bytes() >= CHUNK * std::mem::size_of::<Site>());
    }

    #[test]
    fn concurrent_interning_and_counting() {
        let t = Arc::new(SiteTable::default());
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000u32 {
                        let s = t.intern(100_000 + i % 100, 300_000 + i % 7).unwrap();
                        t.allocated(s, 16, 1, true);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(t.len(), 700);
        let tot = t.totals();
        assert_eq!((tot.alloc_instances, tot.alloc_bytes), (80_000, 1_280_000));
        let mut ids: Vec<(u32, u32)> = t
            .snapshot()
            .iter()
            .map(|s| (s.class_serial, s.trace_serial))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 700, "every index holds a distinct site");
    }

    #[test]
    fn exact_weight_is_one_object() {
        assert_eq!(weight(24, 0), (24, 1));
        assert_eq!(report_instances(7, 0), 7);
    }

    #[test]
    fn sampled_weights_are_inverse_probabilities() {
        let n = 1024 * 1024;
        // An object far larger than the interval is always sampled.
        assert_eq!(weight(64 * n, n), (64 * n, INSTANCE_SCALE));
        // An object of exactly the interval: p = 1 - 1/e.
        let (b, u) = weight(n, n);
        let w = 1.0 / (1.0 - (-1.0f64).exp());
        assert_eq!(b, (n as f64 * w).round() as u64);
        assert_eq!(report_instances(u, n), 2);
        // Small objects stand for about interval/size objects each.
        let (b, u) = weight(16, n);
        assert!((b as f64 - n as f64).abs() < 16.0, "{b}");
        assert!(report_instances(u, n).abs_diff(n / 16) <= 1, "{u}");
    }

    #[test]
    fn expected_estimate_matches_truth() {
        // Sum over many objects of p(s) * weight(s) equals the true totals.
        let n = 512 * 1024u64;
        for s in [16u64, 1000, 100_000, 2_000_000] {
            let p = -(-(s as f64) / n as f64).exp_m1();
            let (b, u) = weight(s, n);
            let est_objs = p * u as f64 / INSTANCE_SCALE as f64;
            let est_bytes = p * b as f64;
            assert!((est_objs - 1.0).abs() < 1e-3, "{s}: {est_objs}");
            assert!(
                (est_bytes / s as f64 - 1.0).abs() < 1e-3,
                "{s}: {est_bytes}"
            );
        }
    }
}
