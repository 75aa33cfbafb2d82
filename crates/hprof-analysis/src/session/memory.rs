//! Memory views of a session (heap=sites): the table of allocation sites
//! by class and site, the tree by allocation stack, and the begin/end
//! marks.
//!
//! A mark is an ALLOC SITES report kept aside. Allocated counts in a report
//! are totals since the start, so what was allocated between two marks is
//! the end report's count minus the begin report's, site by site (a site is
//! its class and its trace). Live counts are a state, not a flow: between
//! marks the views show the live counts at the end mark. Without an end
//! mark, the latest report is the end.

use super::filter::MethodFilter;
use super::tree::{Open, Tree, TreeRow, TreeView};
use super::{Session, SourceAt, SITES_ESTIMATED};
use crate::format::SITES_TAKEN;
use crate::reader::{AllocSite, AllocSites};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Begin,
    End,
}

impl Which {
    pub fn name(self) -> &'static str {
        match self {
            Which::Begin => "begin",
            Which::End => "end",
        }
    }
}

/// A report kept as a mark.
pub struct Snapshot {
    /// Which ALLOC SITES report of the session (1 = first).
    pub report: u32,
    /// The record's time (ms since the agent started).
    pub at_ms: f64,
    pub sites: AllocSites,
}

#[derive(Default)]
pub struct Marks {
    pub begin: Option<Snapshot>,
    pub end: Option<Snapshot>,
    /// The next ALLOC SITES report becomes this mark (it was asked for).
    pub pending: Option<Which>,
    /// Bumped when a mark changes (the memory cache follows it).
    pub version: u32,
}

impl Marks {
    /// Called for every ALLOC SITES report: keeps it when a mark waits for
    /// it, and says which.
    pub fn take_report(&mut self, s: &AllocSites, report: u32, at_ms: f64) -> Option<&'static str> {
        let which = self.pending.take()?;
        self.set(
            which,
            Snapshot {
                report,
                at_ms,
                sites: s.clone(),
            },
        );
        Some(which.name())
    }

    pub fn set(&mut self, which: Which, snap: Snapshot) {
        match which {
            Which::Begin => {
                self.begin = Some(snap);
                // A new begin starts a new interval.
                self.end = None;
            }
            Which::End => self.end = Some(snap),
        }
        self.version += 1;
    }

    pub fn clear(&mut self) {
        *self = Marks {
            version: self.version + 1,
            ..Marks::default()
        };
    }

    pub fn summary(&self) -> MarksSummary {
        let one = |m: &Option<Snapshot>| {
            m.as_ref().map(|s| MarkAt {
                report: s.report,
                at_ms: s.at_ms,
            })
        };
        MarksSummary {
            begin: one(&self.begin),
            end: one(&self.end),
            pending: self.pending,
        }
    }
}

/// Which report a mark is and when it came.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MarkAt {
    pub report: u32,
    pub at_ms: f64,
}

/// The marks, for the page.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MarksSummary {
    pub begin: Option<MarkAt>,
    pub end: Option<MarkAt>,
    /// The mark waiting for the next report.
    pub pending: Option<Which>,
}

/// A row of the memory table: a site, named, with its stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteView {
    pub rank: usize,
    pub class: String,
    pub trace: u32,
    /// The allocating frame with its line.
    pub site: Option<String>,
    pub src: Option<SourceAt>,
    /// Top-first frames with lines.
    pub stack: Vec<String>,
    pub bytes: u64,
    pub objects: u64,
    pub live_bytes: u64,
    pub live_objects: u64,
}

/// The memory table: the marks always; the page when there is a report.
#[derive(Clone, Debug, PartialEq)]
pub struct SitesView {
    pub marks: MarksSummary,
    pub page: Option<SitesPage>,
}

/// One page of the memory table.
#[derive(Clone, Debug, PartialEq)]
pub struct SitesPage {
    pub estimated: bool,
    /// Between marks: (begin report, end report; 0 = the latest).
    pub between: Option<(u32, u32)>,
    /// The latest report's totals.
    pub total_live_bytes: u32,
    pub total_live_objects: u32,
    pub total_bytes: u64,
    pub total_objects: u64,
    /// Sites in the latest report.
    pub sites: usize,
    /// Rows matching the class filter.
    pub matched: usize,
    /// Bytes, objects, live bytes, live objects of the rows matched.
    pub sum: [u64; 4],
    pub offset: usize,
    pub rows: Vec<SiteView>,
}

/// The tree by allocation stack, for the opened nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocTreeView {
    pub estimated: bool,
    /// Bytes, objects, live bytes, live objects of the whole tree.
    pub total: [u64; 4],
    pub rows: Vec<TreeRow>,
}

/// One row of the memory views, counts widened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteRow {
    /// Rank of the site in its report (1 = first).
    pub rank: usize,
    pub class_serial: u32,
    pub array_type: u8,
    pub trace: u32,
    pub bytes: u64,
    pub objects: u64,
    pub live_bytes: u64,
    pub live_objects: u64,
}

/// Which counter orders rows and trees.
pub fn sort_key(sort: &str) -> usize {
    match sort {
        "objects" => 1,
        "live" => 2,
        "liveObjects" => 3,
        _ => 0,
    }
}

/// The report's rows, ranked in order. A take writes a site that allocated
/// 4 GiB or more as several rows adding up (docs/alloc_sites.md): in a
/// take they are one row, summed in 64 bits by the stream's own sum
/// ([`crate::allocated::one_take`]), ranked where the site first appears.
fn site_rows(report: &AllocSites) -> Vec<SiteRow> {
    if report.flags & SITES_TAKEN == 0 {
        return report
            .sites
            .iter()
            .enumerate()
            .map(|(i, x)| row(i + 1, x))
            .collect();
    }
    crate::allocated::one_take(&report.sites)
        .into_iter()
        .enumerate()
        .map(|(i, x)| SiteRow {
            rank: i + 1,
            class_serial: x.class_serial,
            array_type: x.array_type,
            trace: x.trace_serial,
            bytes: x.bytes_allocated,
            objects: x.instances_allocated,
            live_bytes: u64::from(x.live_bytes),
            live_objects: u64::from(x.live_instances),
        })
        .collect()
}

fn row(rank: usize, x: &AllocSite) -> SiteRow {
    SiteRow {
        rank,
        class_serial: x.class_serial,
        array_type: x.array_type,
        trace: x.trace_serial,
        bytes: u64::from(x.bytes_allocated),
        objects: u64::from(x.instances_allocated),
        live_bytes: u64::from(x.live_bytes),
        live_objects: u64::from(x.live_instances),
    }
}

/// What the memory views show, and the rows.
pub struct SiteSet {
    pub rows: Vec<SiteRow>,
    pub estimated: bool,
    /// Between marks: (begin report, end report; 0 = the latest).
    pub between: Option<(u32, u32)>,
}

#[derive(Default)]
pub struct MemCache {
    key: Option<(u32, u32, bool, String, String, usize)>,
    tree: Option<Arc<Tree<4>>>,
}

impl Session {
    /// The rows of the latest report, or what was allocated between the
    /// marks when `between` is asked and a begin mark exists.
    pub fn site_set(&self, between: bool) -> Option<SiteSet> {
        let latest = self.sites.as_ref()?;
        let begin = self.marks.begin.as_ref().filter(|_| between);
        let Some(begin) = begin else {
            return Some(SiteSet {
                rows: site_rows(latest),
                estimated: latest.flags & SITES_ESTIMATED != 0,
                between: None,
            });
        };
        let (end, end_report) = match &self.marks.end {
            Some(e) => (&e.sites, e.report),
            None => (latest, 0),
        };
        let mut before: HashMap<(u32, u8, u32), (u64, u64)> = HashMap::new();
        for x in &begin.sites.sites {
            let e = before
                .entry((x.class_serial, x.array_type, x.trace_serial))
                .or_insert((0, 0));
            e.0 += u64::from(x.bytes_allocated);
            e.1 += u64::from(x.instances_allocated);
        }
        let rows = site_rows(end)
            .into_iter()
            .filter_map(|mut r| {
                let (b, o) = before
                    .get(&(r.class_serial, r.array_type, r.trace))
                    .copied()
                    .unwrap_or((0, 0));
                // Clear sites between the marks restarts the counts; what
                // remains is then counted from zero, never negative.
                r.bytes = r.bytes.saturating_sub(b);
                r.objects = r.objects.saturating_sub(o);
                (r.objects > 0 || r.bytes > 0).then_some(r)
            })
            .collect();
        Some(SiteSet {
            rows,
            estimated: (begin.sites.flags | end.flags) & SITES_ESTIMATED != 0,
            between: Some((begin.report, end_report)),
        })
    }

    /// Memory view: site rows ordered by `sort`, with an optional
    /// class-name substring, `offset`/`limit` paged.
    pub fn sites_view(
        &self,
        class: &str,
        sort: &str,
        offset: usize,
        limit: usize,
        between: bool,
    ) -> SitesView {
        let marks = self.marks.summary();
        let (Some(set), Some(latest)) = (self.site_set(between), &self.sites) else {
            return SitesView { marks, page: None };
        };
        let key = sort_key(sort);
        let vals = |r: &SiteRow| [r.bytes, r.objects, r.live_bytes, r.live_objects];
        let mut rows: Vec<(SiteRow, String)> = set
            .rows
            .into_iter()
            .map(|r| {
                let name = self.site_class(r.class_serial, r.array_type);
                (r, name)
            })
            .filter(|(_, n)| class.is_empty() || n.contains(class))
            .collect();
        rows.sort_by(|a, b| {
            vals(&b.0)[key]
                .cmp(&vals(&a.0)[key])
                .then(a.0.rank.cmp(&b.0.rank))
        });
        let matched = rows.len();
        let sum = rows.iter().fold([0u64; 4], |mut acc, (r, _)| {
            for (a, v) in acc.iter_mut().zip(vals(r)) {
                *a += v;
            }
            acc
        });
        let rows = rows
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|(x, class)| {
                let top = self.trace_frames(x.trace).and_then(|t| t.first()).copied();
                SiteView {
                    rank: x.rank,
                    class,
                    trace: x.trace,
                    site: top.map(|f| self.frame_with_line(f)),
                    src: top.and_then(|f| self.frame_src(f)),
                    stack: self.stack_with_lines(x.trace),
                    bytes: x.bytes,
                    objects: x.objects,
                    live_bytes: x.live_bytes,
                    live_objects: x.live_objects,
                }
            })
            .collect();
        SitesView {
            marks,
            page: Some(SitesPage {
                estimated: set.estimated,
                between: set.between,
                total_live_bytes: latest.total_live_bytes,
                total_live_objects: latest.total_live_instances,
                total_bytes: latest.total_bytes_allocated,
                total_objects: latest.total_instances_allocated,
                sites: latest.sites.len(),
                matched,
                sum,
                offset,
                rows,
            }),
        }
    }

    /// The tree by allocation stack: root frames first (by method) down to
    /// the allocating frame (with its line), then one leaf per class
    /// (`new CLASS`), with bytes, objects, live bytes and live objects per
    /// node.
    fn alloc_tree(
        &mut self,
        class: &str,
        filter: &str,
        sort: &str,
        between: bool,
    ) -> Option<Arc<Tree<4>>> {
        let key = (
            self.sites_reports,
            self.marks.version,
            between,
            class.to_string(),
            filter.to_string(),
            sort_key(sort),
        );
        if self.mem_cache.key.as_ref() == Some(&key) {
            if let Some(t) = &self.mem_cache.tree {
                return Some(t.clone());
            }
        }
        let set = self.site_set(between)?;
        let f = MethodFilter::parse(filter);
        let mut tree = Tree::new();
        let mut names: HashMap<(u64, bool), Option<u32>> = HashMap::new();
        let mut path = Vec::new();
        for r in &set.rows {
            let cname = self.site_class(r.class_serial, r.array_type);
            if !class.is_empty() && !cname.contains(class) {
                continue;
            }
            path.clear();
            if let Some(frames) = self.trace_frames(r.trace) {
                for (depth, &fr) in frames.iter().enumerate().rev() {
                    // Callers by method, so that calls from different lines
                    // of a method merge; the allocating frame with its line.
                    let id = *names.entry((fr, depth == 0)).or_insert_with(|| {
                        let label = self.frame_label(fr);
                        if !f.keeps(&label) {
                            None
                        } else if depth == 0 {
                            Some(tree.intern(&self.frame_with_line(fr)))
                        } else {
                            Some(tree.intern(&label))
                        }
                    });
                    if let Some(id) = id {
                        path.push(id);
                    }
                }
            }
            path.push(tree.intern(&format!("new {cname}")));
            tree.add(&path, [r.bytes, r.objects, r.live_bytes, r.live_objects]);
        }
        tree.finish(key.5);
        let tree = Arc::new(tree);
        self.mem_cache = MemCache {
            key: Some(key),
            tree: Some(tree.clone()),
        };
        Some(tree)
    }

    /// Rows of the allocation tree for the opened nodes.
    #[allow(clippy::too_many_arguments)]
    pub fn alloc_tree_view(
        &mut self,
        class: &str,
        filter: &str,
        sort: &str,
        between: bool,
        open: &[Open],
        limit: usize,
    ) -> Option<AllocTreeView> {
        let estimated = self.site_set(between).is_some_and(|s| s.estimated);
        let t = self.alloc_tree(class, filter, sort, between)?;
        Some(AllocTreeView {
            estimated,
            total: t.root().total,
            rows: t.rows(open, limit),
        })
    }

    pub fn site_class(&self, serial: u32, array_type: u8) -> String {
        match crate::pprof::primitive_array(array_type) {
            Some(prim) if !self.classes.contains_key(&serial) => prim.into(),
            _ => self.class_name(serial),
        }
    }

    /// Take the latest report as a mark now (a session that takes no
    /// commands), or wait for the next one (the caller asked the agent).
    pub fn mark(&mut self, which: Which, ask_agent: bool) -> Result<String, String> {
        if ask_agent {
            self.marks.pending = Some(which);
            self.version += 1;
            return Ok(format!(
                "{} mark: waiting for the allocation sites asked for",
                which.name()
            ));
        }
        let Some(s) = &self.sites else {
            return Err("no ALLOC SITES report yet to mark".into());
        };
        let snap = Snapshot {
            report: self.sites_reports,
            at_ms: 0.0,
            sites: s.clone(),
        };
        self.marks.set(which, snap);
        self.version += 1;
        let line = format!(
            "{} mark: ALLOC SITES report {}",
            which.name(),
            self.sites_reports
        );
        self.log(line.clone());
        Ok(line)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{report, sample_session, site};
    use super::*;

    fn page(
        s: &Session,
        class: &str,
        sort: &str,
        offset: usize,
        limit: usize,
        between: bool,
    ) -> SitesPage {
        s.sites_view(class, sort, offset, limit, between)
            .page
            .unwrap()
    }

    fn tree_rows(v: &AllocTreeView, key: usize) -> Vec<String> {
        v.rows
            .iter()
            .map(|r| match r {
                TreeRow::Node {
                    depth, name, total, ..
                } => format!("{depth}{name}={}", total[key]),
                TreeRow::More { depth, hidden, .. } => format!("{depth}more{hidden}"),
            })
            .collect()
    }

    #[test]
    fn sites_view_sorts_filters_pages_and_marks_estimates() {
        let mut s = sample_session();
        assert_eq!(s.sites_view("", "bytes", 0, 5, false).page, None);
        let mut sites: Vec<AllocSite> = (0..100_000).map(|i| site(1, 1, i, 1)).collect();
        sites.push(site(2, 2, 7, 3));
        report(&mut s, SITES_ESTIMATED, sites);
        let start = std::time::Instant::now();
        let v = page(&s, "", "bytes", 10, 5, false);
        assert!(start.elapsed().as_secs() < 2, "100 000 rows stay quick");
        assert!(v.estimated);
        assert_eq!(v.matched, 100_001);
        assert_eq!(v.rows.len(), 5);
        assert_eq!(v.rows[0].bytes, 99_989);
        let v = page(&s, "java.io", "objects", 0, 50, false);
        assert_eq!(v.matched, 1);
        assert_eq!(v.sum, [7, 3, 3, 1]);
        let r = &v.rows[0];
        assert_eq!(r.class, "java.io.X");
        assert_eq!((r.objects, r.live_objects), (3, 1));
        assert_eq!(r.site.as_deref(), Some("java.io.X.read(Native method)"));
        assert_eq!(
            r.stack,
            ["java.io.X.read(Native method)", "Main.main(Main.java:5)"]
        );
    }

    #[test]
    fn a_takes_rows_of_one_site_are_one_row_summed_in_64_bits() {
        let mut s = sample_session();
        // Site (1, 1) allocated 9 GB since the last take: three rows of
        // at most u32::MAX - 1 bytes, each with the site's live counts.
        let big = |bytes: u32, objects: u32| AllocSite {
            live_bytes: 640,
            live_instances: 20,
            ..site(1, 1, bytes, objects)
        };
        let piece = u32::MAX - 1;
        let tail = (9_000_000_000u64 - 2 * u64::from(piece)) as u32;
        report(
            &mut s,
            SITES_TAKEN,
            vec![
                big(piece, 100),
                site(2, 2, 50, 5),
                big(piece, 0),
                big(tail, 0),
            ],
        );
        let v = page(&s, "", "bytes", 0, 10, false);
        assert_eq!(v.matched, 2);
        let got: Vec<(&str, usize, u64, u64, u64, u64)> = v
            .rows
            .iter()
            .map(|r| {
                (
                    r.class.as_str(),
                    r.rank,
                    r.bytes,
                    r.objects,
                    r.live_bytes,
                    r.live_objects,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("Main", 1, 9_000_000_000, 100, 640, 20),
                ("java.io.X", 2, 50, 5, 25, 2)
            ]
        );
        assert_eq!(v.sum[0], 9_000_000_050);
    }

    #[test]
    fn between_marks_shows_what_was_allocated_in_between() {
        let mut s = sample_session();
        report(&mut s, 0, vec![site(1, 1, 1000, 100), site(2, 2, 50, 5)]);
        s.mark(Which::Begin, false).unwrap();
        // Later: 30 more Main objects, a new site, java.io.X unchanged.
        report(
            &mut s,
            0,
            vec![site(1, 1, 1300, 130), site(2, 2, 50, 5), site(2, 1, 80, 8)],
        );
        let v = page(&s, "", "objects", 0, 10, true);
        assert_eq!(v.between, Some((1, 0)));
        let got: Vec<(&str, u64, u64)> = v
            .rows
            .iter()
            .map(|r| (r.class.as_str(), r.objects, r.bytes))
            .collect();
        assert_eq!(got, [("Main", 30, 300), ("java.io.X", 8, 80)]);
        // Live counts are those at the end.
        assert_eq!(v.rows[0].live_objects, 65);
        // An end mark taken from the next report the agent sends.
        s.mark(Which::End, true).unwrap();
        assert_eq!(s.marks.summary().pending, Some(Which::End));
        report(
            &mut s,
            0,
            vec![site(1, 1, 1500, 150), site(2, 2, 50, 5), site(2, 1, 80, 8)],
        );
        report(
            &mut s,
            0,
            vec![site(1, 1, 9000, 900), site(2, 2, 50, 5), site(2, 1, 80, 8)],
        );
        let v = page(&s, "", "objects", 0, 10, true);
        assert_eq!(v.between, Some((1, 3)));
        assert_eq!(
            v.rows[0].objects, 50,
            "end mark is report 3, not the latest"
        );
        let m = s.marks.summary();
        assert_eq!(
            (m.begin.unwrap().report, m.end.unwrap().report, m.pending),
            (1, 3, None)
        );
        // Without `between`, the latest report as it is.
        assert_eq!(page(&s, "", "objects", 0, 10, false).rows[0].objects, 900);
        s.marks.clear();
        assert_eq!(page(&s, "", "objects", 0, 10, true).between, None);
    }

    #[test]
    fn marks_of_sampled_reports_are_estimates() {
        let mut s = sample_session();
        report(&mut s, SITES_ESTIMATED, vec![site(1, 1, 100, 10)]);
        s.mark(Which::Begin, false).unwrap();
        report(&mut s, SITES_ESTIMATED, vec![site(1, 1, 300, 30)]);
        let v = page(&s, "", "bytes", 0, 10, true);
        assert!(v.estimated);
        assert_eq!(v.rows[0].objects, 20);
    }

    #[test]
    fn allocation_tree_goes_from_roots_to_the_allocated_class() {
        let mut s = sample_session();
        assert_eq!(s.alloc_tree_view("", "", "objects", false, &[], 10), None);
        report(
            &mut s,
            0,
            vec![site(1, 1, 1000, 100), site(2, 2, 50, 5), site(2, 1, 80, 8)],
        );
        let open = [
            Open {
                path: vec!["Main.main".into()],
                limit: 10,
            },
            Open {
                path: vec!["Main.main".into(), "Main.hot(Main.java:9)".into()],
                limit: 10,
            },
        ];
        let v = s
            .alloc_tree_view("", "", "objects", false, &open, 10)
            .unwrap();
        assert_eq!(v.total, [1130, 113, 565, 56]);
        assert_eq!(
            tree_rows(&v, 1),
            [
                "0Main.main=113",
                "1Main.hot(Main.java:9)=108",
                "2new Main=100",
                "2new java.io.X=8",
                "1java.io.X.read(Native method)=5",
            ]
        );
        // The class filter keeps only that class's leaves.
        let v = s
            .alloc_tree_view("java.io", "", "objects", false, &open, 10)
            .unwrap();
        assert_eq!(v.total[1], 13);
        // The method filter drops frames, not allocations.
        let v = s
            .alloc_tree_view("", "!Main.main", "bytes", false, &[], 10)
            .unwrap();
        assert_eq!(v.total[1], 113);
        assert_eq!(tree_rows(&v, 0)[0], "0Main.hot(Main.java:9)=1080");
    }
}
