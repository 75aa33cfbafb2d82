//! What a stream's ALLOC SITES say was allocated at each site, in 64 bits.
//!
//! A report asked for with `SITES_TAKEN` holds the allocations since the
//! previous such report (the agent restarts its counters in the same
//! step), so those reports are summed; the last report after them holds
//! the rest since the last take (e.g. the final report at the profile's
//! stop). Without takes every report counts from the start and only the
//! last one is read. A record's counters are 32 bits: a site at
//! `u32::MAX` in a counted report stands at that limit, not at its count
//! (docs/alloc_sites.md). The flame graph of `profile -e alloc`, its pprof
//! and its JFR read the sites through this one sum.

use crate::format::SITES_TAKEN;
use crate::reader::{AllocSite, AllocSites};
use rustc_hash::FxHashMap;

/// One site's counts: allocated summed over what counts, live as the
/// latest report that names the site says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteSum {
    pub array_type: u8,
    pub class_serial: u32,
    pub trace_serial: u32,
    pub bytes_allocated: u64,
    pub instances_allocated: u64,
    pub live_bytes: u32,
    pub live_instances: u32,
}

/// A site's key: class, trace, array type.
type Key = (u32, u32, u8);

/// The sum of a stream's ALLOC SITES, fed in stream order.
#[derive(Clone, Debug, Default)]
pub struct Allocated {
    /// The takes summed, in the order sites first appear.
    taken: Vec<SiteSum>,
    /// Where each site is in `taken`.
    at: FxHashMap<Key, usize>,
    takes: u32,
    /// The last report that was not a take (since the last take, or from
    /// the start when there was none).
    rest: Option<AllocSites>,
    /// Rows at the 32-bit limit among the takes.
    saturated_in_takes: usize,
}

/// A row whose 32-bit counters stand at their limit.
fn saturated(x: &AllocSite) -> bool {
    x.bytes_allocated == u32::MAX || x.instances_allocated == u32::MAX
}

/// Add row `x` to its site's sum in `sums` (indexed by `at`), making the
/// sum if it is the site's first row.
fn merge(sums: &mut Vec<SiteSum>, at: &mut FxHashMap<Key, usize>, x: &AllocSite) {
    let i = *at
        .entry((x.class_serial, x.trace_serial, x.array_type))
        .or_insert_with(|| {
            sums.push(SiteSum {
                array_type: x.array_type,
                class_serial: x.class_serial,
                trace_serial: x.trace_serial,
                ..SiteSum::default()
            });
            sums.len() - 1
        });
    let t = &mut sums[i];
    t.bytes_allocated += u64::from(x.bytes_allocated);
    t.instances_allocated += u64::from(x.instances_allocated);
    t.live_bytes = x.live_bytes;
    t.live_instances = x.live_instances;
}

impl Allocated {
    /// What the sum keeps per site, for a caller that bounds its memory.
    pub const SITE_BYTES: usize = std::mem::size_of::<SiteSum>() + 32;

    /// Count one ALLOC SITES report; how many sites the sum newly holds.
    pub fn add(&mut self, s: AllocSites) -> usize {
        if s.flags & SITES_TAKEN == 0 {
            self.rest = Some(s);
            return 0;
        }
        let before = self.taken.len();
        // A report between two takes is within the second one.
        self.rest = None;
        self.takes += 1;
        for x in &s.sites {
            self.saturated_in_takes += usize::from(saturated(x));
            merge(&mut self.taken, &mut self.at, x);
        }
        self.taken.len() - before
    }

    /// No report counted yet.
    pub fn is_empty(&self) -> bool {
        self.takes == 0 && self.rest.is_none()
    }

    /// How many takes were summed.
    pub fn takes(&self) -> u32 {
        self.takes
    }

    /// Rows of the counted reports whose 32-bit counters stand at their
    /// limit.
    pub fn saturated(&self) -> usize {
        self.saturated_in_takes
            + self
                .rest
                .as_ref()
                .map_or(0, |r| r.sites.iter().filter(|x| saturated(x)).count())
    }

    /// The saturation note for these sites, if any.
    pub fn note(&self) -> Option<String> {
        saturation_note(self.saturated())
    }

    /// Every site's sum: the takes' sites in the order they first
    /// appeared, then those only the rest names.
    pub fn sites(&self) -> Vec<SiteSum> {
        let Some(rest) = &self.rest else {
            return self.taken.clone();
        };
        let (mut out, mut at) = (self.taken.clone(), self.at.clone());
        for x in &rest.sites {
            merge(&mut out, &mut at, x);
        }
        out
    }
}

/// One take's rows as one sum per site, in the order the sites first
/// appear: a take writes a site past 4 GiB as several rows adding up.
pub fn one_take(sites: &[AllocSite]) -> Vec<SiteSum> {
    let (mut sums, mut at) = (Vec::with_capacity(sites.len()), FxHashMap::default());
    for x in sites {
        merge(&mut sums, &mut at, x);
    }
    sums
}

/// The note for `n` sites whose counters stood at their 32-bit limit
/// (stderr, the SVG's subtitle), if any.
pub fn saturation_note(n: usize) -> Option<String> {
    (n > 0).then(|| {
        format!(
            "{n} allocation site(s) reached the 32-bit counter of HPROF's ALLOC SITES record (4 GiB allocated at one site in one report): their bytes are a floor, not the count"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(flags: u16, rows: &[(u32, u32, u32)]) -> AllocSites {
        AllocSites {
            flags,
            cutoff_raw: 0,
            total_live_bytes: 0,
            total_live_instances: 0,
            total_bytes_allocated: 0,
            total_instances_allocated: 0,
            sites: rows
                .iter()
                .map(|&(class_serial, bytes, live)| AllocSite {
                    array_type: 0,
                    class_serial,
                    trace_serial: 7,
                    live_bytes: live,
                    live_instances: 1,
                    bytes_allocated: bytes,
                    instances_allocated: 1,
                })
                .collect(),
        }
    }

    fn bytes(a: &Allocated) -> Vec<(u32, u64, u32)> {
        a.sites()
            .iter()
            .map(|s| (s.class_serial, s.bytes_allocated, s.live_bytes))
            .collect()
    }

    #[test]
    fn without_takes_only_the_last_report_counts() {
        let mut a = Allocated::default();
        assert!(a.is_empty());
        a.add(report(0, &[(1, 100, 10)]));
        a.add(report(0, &[(1, 300, 30), (2, 5, 5)]));
        assert_eq!(bytes(&a), [(1, 300, 30), (2, 5, 5)]);
        assert_eq!((a.takes(), a.saturated()), (0, 0));
    }

    #[test]
    fn takes_are_summed_in_64_bits_with_the_rest_after_the_last() {
        let mut a = Allocated::default();
        // From the start: the first take counts these again.
        a.add(report(0, &[(1, 100, 1)]));
        a.add(report(SITES_TAKEN, &[(1, 3_000_000_000, 2)]));
        // Between takes: within the next take.
        a.add(report(0, &[(1, 9, 3)]));
        a.add(report(SITES_TAKEN, &[(1, 3_000_000_000, 4), (2, 7, 4)]));
        // The rest after the last take, with the latest live counts.
        a.add(report(0, &[(1, 1, 5), (3, 2, 5)]));
        assert_eq!(bytes(&a), [(1, 6_000_000_001, 5), (2, 7, 4), (3, 2, 5)]);
        assert_eq!(a.takes(), 2);
        // Reading the sum does not change it.
        assert_eq!(bytes(&a)[0].1, 6_000_000_001);
    }

    #[test]
    fn a_counter_at_its_limit_is_counted_as_saturated() {
        let mut a = Allocated::default();
        a.add(report(0, &[(1, u32::MAX, 0)]));
        assert_eq!(a.saturated(), 1);
        a.add(report(SITES_TAKEN, &[(1, u32::MAX, 0), (2, 1, 0)]));
        // The report before the take is not counted any more.
        assert_eq!(a.saturated(), 1);
    }
}
