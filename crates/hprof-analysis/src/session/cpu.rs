//! CPU views of a session: hot methods, flame graph, call tree, and the
//! collapsed stacks of the SVG export, all from the latest CPU SAMPLES
//! record and its traces, after the thread and method filters, at method
//! or line granularity.
//!
//! The filtered call tree is built once per (CPU section, query) and
//! cached, so paging the table or opening tree nodes of a large profile
//! does not rebuild it.

use super::filter::MethodFilter;
use super::tree::{FlameNode, Open, Tree, TreeRow, TreeView};
use super::{Session, SourceAt, State};
use crate::flame;
use crate::format::LostSamples;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What the page asks the CPU views for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuQuery {
    pub filter: MethodFilter,
    /// Thread serials to keep; empty keeps all.
    pub threads: Vec<u32>,
    /// `pkg.Class.method(File.java:12)` instead of `pkg.Class.method`.
    pub lines: bool,
}

impl CpuQuery {
    /// From the page's parameters: `filter`, `threads` (comma-separated
    /// serials; anything else is ignored) and `granularity=line`.
    pub fn from_params(filter: &str, threads: &str, granularity: &str) -> Self {
        let mut threads: Vec<u32> = threads
            .split(',')
            .filter_map(|t| t.trim().parse().ok())
            .collect();
        threads.sort_unstable();
        threads.dedup();
        CpuQuery {
            filter: MethodFilter::parse(filter),
            threads,
            lines: granularity == "line",
        }
    }
}

/// A method (or line) of the hot-methods table.
struct Method {
    name: String,
    own: u64,
    total: u64,
    /// Where its source is, for the source view.
    src: Option<SourceAt>,
}

/// A row of the hot-methods table.
#[derive(Clone, Debug, PartialEq)]
pub struct HotMethod {
    /// Place in the table (1 = most self samples).
    pub rank: usize,
    pub method: String,
    /// Samples with this method on top.
    pub own: u64,
    pub own_pct: f64,
    /// Samples with this method anywhere on the stack.
    pub total: u64,
    pub total_pct: f64,
    pub src: Option<SourceAt>,
}

/// A thread the thread filter can pick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuThread {
    pub serial: u32,
    pub name: String,
    pub samples: u64,
}

/// The CPU view: always the threads; the profile when there are samples.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuView {
    pub threads: Vec<CpuThread>,
    /// CPU TIME sections of a text stream (not shown in these views).
    pub cpu_time_sections: u32,
    /// The session's stream has ended.
    pub ended: bool,
    pub profile: Option<CpuPage>,
}

/// One page of the filtered profile.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuPage {
    /// Samples in the section.
    pub total: u64,
    /// Samples left after the filters.
    pub kept: u64,
    /// Rows of the whole table.
    pub methods: usize,
    pub offset: usize,
    pub rows: Vec<HotMethod>,
    /// What the report says it did not count.
    pub lost: Option<LostSamples>,
    /// The flame graph, when asked for.
    pub flame: Option<FlameNode>,
    /// What the flame graph should say with it.
    pub notes: Vec<String>,
}

/// Call tree rows of the filtered profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuTreeView {
    pub kept: u64,
    pub rows: Vec<TreeRow>,
}

/// The filtered profile: the call tree and the hot-methods table.
pub struct CpuModel {
    pub tree: Tree<1>,
    methods: Vec<Method>,
    pub kept: u64,
    pub total: u64,
    /// Set when the traces were cut at this many frames by the agent's
    /// `depth` (as `hprof-rs flame` tells, `cli::flame::cut_at`).
    pub cut_at: Option<usize>,
}

#[derive(Default)]
pub struct CpuCache {
    key: Option<(u32, CpuQuery)>,
    model: Option<Arc<CpuModel>>,
}

impl Session {
    /// The model for `q`, from the cache when the CPU section is the same.
    pub fn cpu_model(&mut self, q: &CpuQuery) -> Option<Arc<CpuModel>> {
        self.cpu.as_ref()?;
        let key = (self.cpu_sections, q.clone());
        if self.cpu_cache.key.as_ref() == Some(&key) {
            if let Some(m) = &self.cpu_cache.model {
                return Some(m.clone());
            }
        }
        let m = Arc::new(self.build_cpu(q));
        self.cpu_cache = CpuCache {
            key: Some(key),
            model: Some(m.clone()),
        };
        Some(m)
    }

    fn build_cpu(&self, q: &CpuQuery) -> CpuModel {
        let mut tree = Tree::new();
        let mut kept = 0u64;
        let mut total = 0u64;
        // Per frame ID: its interned label, or None when the filter drops it.
        // Fx hashing: these maps are hit once per frame of every sampled
        // stack (1.6 million times for 100 000 traces of depth 16).
        let mut frame_names: FxHashMap<u64, Option<u32>> = FxHashMap::default();
        let mut own: FxHashMap<u32, u64> = FxHashMap::default();
        let mut totals: FxHashMap<u32, u64> = FxHashMap::default();
        let mut src: FxHashMap<u32, SourceAt> = FxHashMap::default();
        let threads: HashSet<u32> = q.threads.iter().copied().collect();
        let Some(cpu) = &self.cpu else {
            return CpuModel {
                tree,
                methods: Vec::new(),
                kept: 0,
                total: 0,
                cut_at: None,
            };
        };
        let mut path: Vec<u32> = Vec::new();
        let mut seen: FxHashSet<u32> = FxHashSet::default();
        // (frames, samples, whole) of every trace, for the depth note.
        let mut lengths: Vec<(usize, u64, bool)> = Vec::with_capacity(cpu.entries.len());
        for e in &cpu.entries {
            let count = u64::from(e.count);
            total += count;
            if let Some(frames) = self.trace_frames(e.trace_serial) {
                let whole = frames
                    .last()
                    .is_some_and(|&f| flame::is_thread_entry(&self.frame_label(f)));
                lengths.push((frames.len(), count, whole));
            }
            if !threads.is_empty() && !threads.contains(&self.trace_thread(e.trace_serial)) {
                continue;
            }
            path.clear();
            match self.trace_frames(e.trace_serial) {
                Some(frames) => {
                    // Root first.
                    for &f in frames.iter().rev() {
                        let name = *frame_names.entry(f).or_insert_with(|| {
                            let label = self.frame_label(f);
                            if !q.filter.keeps(&label) {
                                return None;
                            }
                            let shown = if q.lines {
                                self.frame_with_line(f)
                            } else {
                                label
                            };
                            let id = tree.intern(&shown);
                            if let Some(s) = self.frame_src(f) {
                                src.entry(id).or_insert(s);
                            }
                            Some(id)
                        });
                        if let Some(id) = name {
                            path.push(id);
                        }
                    }
                }
                None => {
                    let label = format!("<trace {} not sent>", e.trace_serial);
                    if q.filter.keeps(&label) {
                        path.push(tree.intern(&label));
                    }
                }
            }
            // A sample left with no frame after the filter is not counted.
            let Some(&top) = path.last() else { continue };
            kept += count;
            *own.entry(top).or_insert(0) += count;
            seen.clear();
            for &m in &path {
                if seen.insert(m) {
                    *totals.entry(m).or_insert(0) += count;
                }
            }
            tree.add(&path, [count]);
        }
        tree.finish(0);
        let mut methods: Vec<Method> = totals
            .into_iter()
            .map(|(id, t)| Method {
                name: tree_name(&tree, id),
                own: own.get(&id).copied().unwrap_or(0),
                total: t,
                src: src.remove(&id),
            })
            .collect();
        methods.sort_by(|a, b| {
            b.own
                .cmp(&a.own)
                .then(b.total.cmp(&a.total))
                .then_with(|| a.name.cmp(&b.name))
        });
        let depth = self.control.map(|(_, d)| usize::from(d));
        CpuModel {
            tree,
            methods,
            kept,
            total,
            cut_at: flame::cut_at(&lengths, depth),
        }
    }

    /// The threads a thread filter can pick: those named by the traces of
    /// the latest CPU section (`thread=y`), with their samples.
    pub fn cpu_threads(&self) -> Vec<CpuThread> {
        let mut per: HashMap<u32, u64> = HashMap::new();
        if let Some(cpu) = &self.cpu {
            for e in &cpu.entries {
                let t = self.trace_thread(e.trace_serial);
                if t != 0 {
                    *per.entry(t).or_insert(0) += u64::from(e.count);
                }
            }
        }
        let mut v: Vec<(u32, u64)> = per.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.into_iter()
            .map(|(serial, samples)| CpuThread {
                serial,
                name: self.thread_name(serial),
                samples,
            })
            .collect()
    }

    /// CPU view: hot methods (self samples = top kept frame; total =
    /// samples whose stack contains the method), `offset`/`limit` paged,
    /// and (when `flame`) the flame graph tree, after the query's filters.
    pub fn cpu_view(&mut self, q: &CpuQuery, offset: usize, limit: usize, flame: bool) -> CpuView {
        let threads = self.cpu_threads();
        let lost = self.cpu_lost.clone();
        let (cpu_time_sections, ended) = (self.cpu_time_sections, self.state != State::Live);
        let profile = self.cpu_model(q).map(|m| {
            let pct = |n: u64| {
                if m.kept == 0 {
                    0.0
                } else {
                    (n as f64) * 100.0 / m.kept as f64
                }
            };
            let rows = m
                .methods
                .iter()
                .enumerate()
                .skip(offset)
                .take(limit)
                .map(|(i, x)| HotMethod {
                    rank: i + 1,
                    method: x.name.clone(),
                    own: x.own,
                    own_pct: pct(x.own),
                    total: x.total,
                    total_pct: pct(x.total),
                    src: x.src.clone(),
                })
                .collect();
            // Nodes under 1/2000 of the samples are left out: they would
            // be under a pixel wide and only cost bytes.
            let min = (m.kept / 2000).max(1);
            CpuPage {
                total: m.total,
                kept: m.kept,
                methods: m.methods.len(),
                offset,
                rows,
                lost,
                flame: flame.then(|| m.tree.flame(0, min)),
                notes: m.notes(),
            }
        });
        CpuView {
            threads,
            cpu_time_sections,
            ended,
            profile,
        }
    }

    /// Call tree rows for the opened nodes (see [`Tree::rows`]).
    pub fn cpu_tree(&mut self, q: &CpuQuery, open: &[Open], limit: usize) -> Option<CpuTreeView> {
        self.cpu_model(q).map(|m| CpuTreeView {
            kept: m.kept,
            rows: m.tree.rows(open, limit),
        })
    }

    /// The filtered profile as an SVG flame graph (the one `hprof-rs
    /// flame --svg` draws), with its notes. The samples not counted are a
    /// stack of their own per reason, `[lost samples: reason]`, as `hprof-rs
    /// flame` draws them (on a copy of the tree: the page's views count
    /// only the samples the report counted).
    pub fn cpu_svg(&mut self, q: &CpuQuery, title: &str) -> Option<String> {
        let lost = self.cpu_lost.clone();
        let m = self.cpu_model(q)?;
        let notes = m.notes();
        let reasons = lost.map(|l| l.reasons).unwrap_or_default();
        if reasons.is_empty() {
            return Some(flame::svg::draw(&m.tree, 0, title, &notes, "samples"));
        }
        let mut tree = m.tree.clone();
        for (why, n) in &reasons {
            let name = tree.intern(&flame::lost_frame(why));
            tree.add(&[name], [*n]);
        }
        tree.finish(0);
        Some(flame::svg::draw(&tree, 0, title, &notes, "samples"))
    }
}

impl CpuModel {
    /// What the flame graph should say with it: stacks cut by `depth`.
    pub fn notes(&self) -> Vec<String> {
        self.cut_at.map(flame::depth_note).into_iter().collect()
    }
}

fn tree_name(t: &Tree<1>, interned: u32) -> String {
    // Interned IDs are name IDs, not node IDs: find the name directly.
    t.name_of(interned).to_string()
}

#[cfg(test)]
mod tests {
    use super::super::testing::{cpu, sample_session, utf8};
    use super::*;

    fn q(filter: &str, threads: &str, gran: &str) -> CpuQuery {
        CpuQuery::from_params(filter, threads, gran)
    }

    fn page(s: &mut Session, q: &CpuQuery, offset: usize, limit: usize) -> CpuPage {
        s.cpu_view(q, offset, limit, true).profile.unwrap()
    }

    fn methods(p: &CpuPage) -> Vec<(&str, u64, u64)> {
        p.rows
            .iter()
            .map(|r| (r.method.as_str(), r.own, r.total))
            .collect()
    }

    #[test]
    fn cpu_view_ranks_self_samples_and_builds_the_flame_tree() {
        let mut s = sample_session();
        assert_eq!(s.cpu_view(&q("", "", ""), 0, 10, true).profile, None);
        cpu(&mut s, &[(75, 1), (25, 2)]);
        let v = page(&mut s, &q("", "", ""), 0, 10);
        assert_eq!(v.kept, 100);
        // Main.main is on every stack: total 100, self 0.
        assert_eq!(
            methods(&v),
            [
                ("Main.hot", 75, 75),
                ("java.io.X.read", 25, 25),
                ("Main.main", 0, 100)
            ]
        );
        assert_eq!(v.rows[0].own_pct, 75.0);
        assert_eq!(
            v.rows[0].src,
            Some(SourceAt {
                class: "Main".into(),
                file: "Main.java".into(),
                line: 9
            })
        );
        let flame = v.flame.unwrap();
        assert_eq!(flame.value, 100);
        assert_eq!(flame.children[0].name, "Main.main");
        let kids: Vec<(&str, u64)> = flame.children[0]
            .children
            .iter()
            .map(|k| (k.name.as_str(), k.value))
            .collect();
        assert_eq!(kids, vec![("Main.hot", 75), ("java.io.X.read", 25)]);
        // Paging the table.
        let p = page(&mut s, &q("", "", ""), 1, 1);
        assert_eq!(p.rows.len(), 1);
        assert_eq!(p.rows[0].rank, 2);
        assert_eq!(p.methods, 3);
    }

    #[test]
    fn a_later_cpu_section_replaces_the_earlier_one() {
        let mut s = sample_session();
        cpu(&mut s, &[(1, 1)]);
        assert_eq!(page(&mut s, &q("", "", ""), 0, 10).kept, 1);
        cpu(&mut s, &[(5, 2)]);
        let v = page(&mut s, &q("", "", ""), 0, 10);
        assert_eq!(v.kept, 5, "the cache follows the new section");
        assert_eq!(v.rows[0].method, "java.io.X.read");
    }

    #[test]
    fn samples_not_counted_are_shown_and_exported_until_the_next_section() {
        let mut s = sample_session();
        cpu(&mut s, &[(75, 1), (25, 2)]);
        assert_eq!(page(&mut s, &q("", "", ""), 0, 10).lost, None);
        // The note after the CPU SAMPLES record (binary: a UTF8 record).
        utf8(
            &mut s,
            0xA000_0099,
            "CPU SAMPLES LOST 4 of 104 (3.85%): deoptimizing 1, unknown frame in Java 3",
        );
        let v = page(&mut s, &q("", "", ""), 0, 10);
        assert_eq!(v.kept, 100, "not counted samples are not in the table");
        let lost = v.lost.unwrap();
        assert_eq!((lost.lost(), lost.taken()), (4, 104));
        let svg = s.cpu_svg(&q("", "", ""), "t").unwrap();
        assert!(
            svg.contains("<title>[lost samples: unknown frame in Java] (3 samples, 2.88%)</title>"),
            "{svg}"
        );
        assert!(svg.contains("<title>Main.hot (75 samples, 72.12%)</title>"));
        let flame = page(&mut s, &q("", "", ""), 0, 10).flame.unwrap();
        assert!(
            !format!("{flame:?}").contains("lost samples"),
            "the page's flame graph has only the samples counted"
        );
        cpu(&mut s, &[(5, 2)]);
        assert_eq!(page(&mut s, &q("", "", ""), 0, 10).lost, None);
    }

    #[test]
    fn method_filter_drops_frames_and_empty_samples() {
        let mut s = sample_session();
        cpu(&mut s, &[(75, 1), (25, 2)]);
        // Excluding java.io drops that frame; the sample keeps Main.main
        // as its top frame.
        let v = page(&mut s, &q("!.io.", "", ""), 0, 10);
        assert_eq!(v.kept, 100);
        assert_eq!(methods(&v), [("Main.hot", 75, 75), ("Main.main", 25, 100)]);
        // Only java.*: the Main-only trace 1 disappears entirely.
        let v = page(&mut s, &q("java.", "", ""), 0, 10);
        assert_eq!(v.kept, 25);
        assert_eq!(v.methods, 1);
    }

    #[test]
    fn thread_filter_keeps_the_samples_of_the_chosen_threads() {
        let mut s = sample_session();
        cpu(&mut s, &[(75, 1), (25, 2)]);
        let v = page(&mut s, &q("", "8", ""), 0, 10);
        assert_eq!((v.kept, v.total), (25, 100));
        assert_eq!(v.rows[0].method, "java.io.X.read");
        let v = s.cpu_view(&q("", "7,8,junk", ""), 0, 10, true);
        assert_eq!(v.profile.unwrap().kept, 100);
        assert_eq!(
            v.threads,
            [
                CpuThread {
                    serial: 7,
                    name: "thread 7".into(),
                    samples: 75
                },
                CpuThread {
                    serial: 8,
                    name: "thread 8".into(),
                    samples: 25
                }
            ]
        );
    }

    #[test]
    fn line_granularity_names_frames_with_their_lines() {
        let mut s = sample_session();
        cpu(&mut s, &[(75, 1), (25, 2)]);
        let v = page(&mut s, &q("", "", "line"), 0, 10);
        assert_eq!(v.rows[0].method, "Main.hot(Main.java:9)");
        assert_eq!(v.rows[1].method, "java.io.X.read(Native method)");
        assert_eq!(v.flame.unwrap().children[0].name, "Main.main(Main.java:5)");
    }

    #[test]
    fn call_tree_rows_and_the_svg_agree_with_the_table() {
        let mut s = sample_session();
        assert_eq!(s.cpu_tree(&q("", "", ""), &[], 10), None);
        cpu(&mut s, &[(75, 1), (25, 2)]);
        let open = [Open {
            path: vec!["Main.main".into()],
            limit: 10,
        }];
        let t = s.cpu_tree(&q("", "", ""), &open, 10).unwrap();
        assert_eq!(t.kept, 100);
        assert_eq!(t.rows.len(), 3);
        assert!(
            matches!(&t.rows[0], TreeRow::Node { name, total, .. } if name == "Main.main" && total == &[100])
        );
        assert!(
            matches!(&t.rows[1], TreeRow::Node { name, depth: 1, own, .. } if name == "Main.hot" && own == &[75])
        );
        let svg = s.cpu_svg(&q("", "", ""), "t").unwrap();
        assert!(
            svg.contains("<title>Main.hot (75 samples, 75.00%)</title>"),
            "{svg}"
        );
        assert!(svg.contains("<title>java.io.X.read (25 samples, 25.00%)</title>"));
    }

    #[test]
    fn a_hundred_thousand_traces_build_quickly() {
        use crate::reader::{CpuSample, CpuSamples, Frame, RecordBody, Trace};
        let mut s = sample_session();
        // 100 000 traces of depth 8 over 1000 methods, 1 000 000 samples.
        for m in 0..1000u64 {
            utf8(&mut s, 1000 + m, &format!("m{m}"));
            s.apply(
                0,
                "FRAME",
                RecordBody::Frame(Frame {
                    id: 5000 + m,
                    method_name_id: 1000 + m,
                    signature_id: 0,
                    source_file_id: 6,
                    class_serial: 1,
                    line: 3,
                }),
            )
            .unwrap();
        }
        let mut entries = Vec::new();
        for t in 0..100_000u32 {
            let frames = (0..8u64)
                .map(|d| 5000 + (u64::from(t) * 7 + d * 131) % 1000)
                .collect();
            s.apply(
                0,
                "TRACE",
                RecordBody::Trace(Trace {
                    serial: 10 + t,
                    thread_serial: 0,
                    frame_ids: frames,
                }),
            )
            .unwrap();
            entries.push(CpuSample {
                count: 10,
                trace_serial: 10 + t,
            });
        }
        s.apply(
            0,
            "CPU SAMPLES",
            RecordBody::CpuSamples(CpuSamples {
                total: 1_000_000,
                entries,
            }),
        )
        .unwrap();
        let start = std::time::Instant::now();
        let v = page(&mut s, &q("", "", ""), 0, 100);
        assert_eq!(v.kept, 1_000_000);
        assert_eq!(v.rows.len(), 100);
        let built = start.elapsed();
        let again = std::time::Instant::now();
        page(&mut s, &q("", "", ""), 100, 100);
        assert!(
            again.elapsed() < built,
            "the second page comes from the cache"
        );
        assert!(built.as_secs() < 5, "built in {built:?}");
    }
}
