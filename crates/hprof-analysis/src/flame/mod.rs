//! `hprof-rs flame`: CPU samples as collapsed stacks (`root;...;top count`,
//! the input of flamegraph tools) or a self-contained SVG flame graph.
//!
//! Input is a text (`format=a`) or binary (`format=b`) report. Stacks come
//! from its TRACE records (top frame first in the file, root first in the
//! output), counts from its CPU SAMPLES (or CPU TIME) section: the last
//! section by default (reports are reset after each dump, so the last one
//! covers the time since the previous dump; at exit it is the only one),
//! or all sections summed with `all`. Stacks with the same frame names
//! (`pkg.Class.method`, lines dropped) are merged.
//!
//! CPU SAMPLES count samples; CPU TIME (text, `cpu=times`) is weighted by
//! the time of each row (its share of the section's total), in
//! microseconds. Sections that are cumulative (CPU SAMPLES asked for over
//! the socket, which does not reset the counts) are counted once by `all`.
//! When the traces were cut by the agent's `depth`, the output says so.
//! Samples the report did not count (stack walks that failed, the line or
//! record after CPU SAMPLES, `format::lost`) are a stack of their own per
//! reason, `[lost samples: reason]`, as async-profiler draws its failed
//! walks.
//!
//! Memory stays bounded whatever the file: records are read one at a time
//! (text line by line, each line bounded), sections are folded as they
//! come, what is kept of names and traces is bounded by
//! [`crate::reader::Retained`], and the stacks become one [`StackTree`]
//! whose every walk is a loop (no recursion over a stack of a million
//! frames; time linear in the frames).

pub mod monitors;
pub mod sites;
pub mod svg;
pub mod tree;

use crate::format::LostSamples;
use crate::reader::{HprofReader, RecordBody, Retained};
use crate::text::{self, CpuKind, Event, TextReader};
use crate::transcode::symbols::Symbols;
use crate::ToolResult;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
pub use tree::StackTree;

/// What a CPU section measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// CPU SAMPLES: one unit per sample.
    Samples,
    /// CPU TIME (ms) of `cpu=times`: microseconds.
    Micros,
    /// ALLOC SITES: allocated bytes ([`sites`]).
    AllocatedBytes,
    /// MONITOR TIME: microseconds blocked entering monitors ([`monitors`]).
    BlockedMicros,
}

impl Measure {
    pub fn unit(self) -> &'static str {
        match self {
            Measure::Samples => "samples",
            Measure::Micros | Measure::BlockedMicros => "us",
            Measure::AllocatedBytes => "bytes",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Measure::Samples => "CPU samples",
            Measure::Micros => "CPU time (us, cpu=times)",
            Measure::AllocatedBytes => "Allocated bytes",
            Measure::BlockedMicros => "Time blocked on monitors (us)",
        }
    }
}

/// Merged stacks and what they mean.
pub struct Flame {
    /// The stacks, root first, one counter (samples or microseconds).
    pub tree: StackTree<1>,
    pub measure: Measure,
    /// Set when the traces were cut at this many frames (the agent's
    /// `depth`): the roots of the stacks are missing.
    pub cut_at: Option<usize>,
    /// `all`: how many sections were cumulative and counted once.
    pub cumulative_sections: usize,
    /// ALLOC SITES rows whose allocated bytes stand at the record's 32-bit
    /// limit: what they show is a floor.
    pub saturated_sites: usize,
}

/// The note for stacks cut by the agent's depth (the CLI's stderr, the
/// SVG, the UI's flame graph).
pub fn depth_note(n: usize) -> String {
    format!(
        "stacks are cut at {n} frames (the agent's depth option, 4 by default), so their roots are missing; run the agent with depth=64 (or more) for a readable graph"
    )
}

impl Flame {
    /// Notes for the user (stderr, and the SVG's subtitle).
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(n) = self.cut_at {
            notes.push(depth_note(n));
        }
        if self.cumulative_sections > 0 {
            notes.push(format!(
                "{} section(s) were cumulative (CPU samples asked for over the socket are not reset) and were counted once",
                self.cumulative_sections
            ));
        }
        notes.extend(crate::allocated::saturation_note(self.saturated_sites));
        notes
    }

    /// Collapsed stacks, one line each (`root;...;top weight`), depth
    /// first with children by name, written as they are walked.
    pub fn write_collapsed(&self, out: &mut impl Write) -> std::io::Result<()> {
        let mut line = String::new();
        let mut failed = Ok(());
        self.tree.each_stack(0, |path, n| {
            if failed.is_err() {
                return;
            }
            line.clear();
            for (i, &name) in path.iter().enumerate() {
                if i > 0 {
                    line.push(';');
                }
                line.push_str(self.tree.name_of(name));
            }
            line.push(' ');
            line.push_str(&n.to_string());
            line.push('\n');
            failed = out.write_all(line.as_bytes());
        });
        failed
    }
}

/// Collapsed stacks as one string (tests, small profiles).
pub fn collapsed_text(f: &Flame) -> String {
    let mut out = Vec::new();
    let _ = f.write_collapsed(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The SVG flame graph of `flame`, titled `title`, with its notes.
pub fn svg(flame: &Flame, title: &str) -> String {
    svg::draw(&flame.tree, 0, title, &flame.notes(), flame.measure.unit())
}

/// The same flame graph as [`svg`] in a self-contained HTML page (`hprof-rs
/// profile -o out.html`): the SVG inline, its script finding its own
/// `<svg>` (interactive.js), nothing fetched. The XML prolog is dropped (it
/// has no meaning inside HTML).
pub fn html(flame: &Flame, title: &str) -> String {
    let doc = svg(flame, title);
    let inline = doc
        .strip_prefix("<?xml version=\"1.0\" standalone=\"no\"?>\n")
        .unwrap_or(&doc);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n\
         <style>body{{margin:0;background:#f8f8f0}}svg{{display:block;width:100%;height:auto}}</style>\n\
         </head>\n<body>\n{inline}</body>\n</html>\n",
        svg::escape(title)
    )
}

pub fn collapse_file(path: &str, all: bool) -> ToolResult<Flame> {
    let (form, input) = crate::input::open(path)?;
    if form == crate::input::Form::Text {
        collapse_text(std::io::BufReader::with_capacity(1 << 16, input), all)
            .map_err(|e| format!("{path}: {e}"))
    } else {
        collapse_binary(input, all).map_err(|e| format!("{path}: {e}"))
    }
}

/// Rows of a CPU section: (trace serial, count or time).
type Rows = Vec<(u32, u64)>;

/// The CPU sections of one measure, folded as they come: the last
/// section's rows, and for `all` the sum of every run of sections, where a
/// section that only grew from the one before (every trace's count the
/// same or higher: the counts were not reset) replaces it.
#[derive(Default)]
struct Fold {
    last: Rows,
    done: BTreeMap<u32, u64>,
    run: BTreeMap<u32, u64>,
    cumulative: usize,
}

impl Fold {
    fn section(&mut self, rows: Rows, all: bool) {
        if all {
            let mut by_trace = BTreeMap::new();
            for &(t, c) in &rows {
                *by_trace.entry(t).or_insert(0) += c;
            }
            if grew_from(&self.run, &by_trace) {
                self.cumulative += 1;
            } else {
                for (t, c) in std::mem::take(&mut self.run) {
                    *self.done.entry(t).or_insert(0) += c;
                }
            }
            self.run = by_trace;
        }
        self.last = rows;
    }

    /// The rows to draw and how many sections were cumulative.
    fn rows(self, all: bool) -> (Rows, usize) {
        if !all {
            return (self.last, 0);
        }
        let mut sum = self.done;
        for (t, c) in self.run {
            *sum.entry(t).or_insert(0) += c;
        }
        (sum.into_iter().collect(), self.cumulative)
    }
}

/// Every section seen, by measure; the measure of the last one.
#[derive(Default)]
struct Sections {
    samples: Fold,
    micros: Fold,
    last: Option<Measure>,
    /// The last section, folded when the next one comes (or at the end):
    /// what it did not count is said after it.
    pending: Option<(Measure, Rows)>,
}

impl Sections {
    fn add(&mut self, measure: Measure, rows: Rows, all: bool) {
        self.fold_pending(all);
        self.pending = Some((measure, rows));
        self.last = Some(measure);
    }

    fn fold_pending(&mut self, all: bool) {
        match self.pending.take() {
            Some((Measure::Samples, rows)) => self.samples.section(rows, all),
            Some((Measure::Micros, rows)) => self.micros.section(rows, all),
            // Not CPU sections: never added here.
            Some(_) | None => {}
        }
    }

    /// The rows of the last section, when it counts samples.
    fn last_samples(&mut self) -> Option<&mut Rows> {
        match &mut self.pending {
            Some((Measure::Samples, rows)) => Some(rows),
            _ => None,
        }
    }

    /// The last section's measure, and its rows (see [`Fold`]).
    fn pick(mut self, all: bool) -> ToolResult<(Measure, Rows, usize)> {
        self.fold_pending(all);
        let measure = self.last.ok_or(
            "no CPU SAMPLES or CPU TIME section in the file (run the agent with cpu=samples)",
        )?;
        let (rows, cumulative) = match measure {
            Measure::Samples => self.samples.rows(all),
            _ => self.micros.rows(all),
        };
        Ok((measure, rows, cumulative))
    }
}

/// The frame that stands for samples not counted for `why`.
pub fn lost_frame(why: &str) -> String {
    format!("[lost samples: {why}]")
}

/// Reasons for samples not counted, by the pseudo trace serials their rows
/// use in a section (counted down from `u32::MAX`, far above the agent's
/// serials), so that `pick` treats them as any other row.
#[derive(Default)]
struct LostRows {
    reasons: Vec<String>,
}

impl LostRows {
    /// Add the rows of `lost` to the last section, when it counts samples.
    fn add(&mut self, section: Option<&mut Rows>, lost: &LostSamples) {
        let Some(rows) = section else {
            return;
        };
        for (why, n) in &lost.reasons {
            let i = match self.reasons.iter().position(|r| r == why) {
                Some(i) => i,
                // A few reasons in practice; a hostile file's many cost a
                // row each, as its traces do.
                None => {
                    self.reasons.push(why.clone());
                    self.reasons.len() - 1
                }
            };
            rows.push((u32::MAX - i as u32, *n));
        }
    }

    /// The stack of a pseudo serial, its frame interned in `tree`.
    fn stack(&self, tree: &mut StackTree<1>, serial: u32) -> Option<Vec<u32>> {
        let i = (u32::MAX - serial) as usize;
        let why = self.reasons.get(i)?;
        Some(vec![tree.intern(&lost_frame(why))])
    }
}

/// True when `next` holds every trace of `prev` with at least its count:
/// the counts were not reset between the two sections.
fn grew_from(prev: &BTreeMap<u32, u64>, next: &BTreeMap<u32, u64>) -> bool {
    !prev.is_empty()
        && prev
            .iter()
            .all(|(t, &c)| next.get(t).is_some_and(|&n| n >= c))
}

/// Where a thread's stack begins: a stack whose bottom frame is one of
/// these is whole.
pub fn is_thread_entry(frame: &str) -> bool {
    frame.ends_with(".main")
        || frame.starts_with("java.lang.Thread.run")
        || frame == "java.lang.VirtualThread.run"
}

/// Stacks cut by the agent's depth, from (frames, weight, whole) per row.
/// Binary files give the depth (CONTROL SETTINGS): cut if a quarter or
/// more of the weight is on stacks that reach it without a thread's entry
/// point at their bottom. Text files do not: cut if at least half of the
/// weight sits on stacks of exactly the longest length (at most 16) that do
/// not start at an entry point.
pub fn cut_at(stacks: &[(usize, u64, bool)], depth: Option<usize>) -> Option<usize> {
    let longest = stacks.iter().map(|&(n, _, _)| n).max()?;
    let total: u64 = stacks.iter().map(|&(_, w, _)| w).sum();
    if let Some(d) = depth {
        let cut: u64 = stacks
            .iter()
            .filter(|&&(n, _, whole)| n >= d && !whole)
            .map(|&(_, w, _)| w)
            .sum();
        return (d > 0 && total > 0 && cut * 4 >= total).then_some(d);
    }
    let at_longest: u64 = stacks
        .iter()
        .filter(|&&(n, _, whole)| n == longest && !whole)
        .map(|&(_, w, _)| w)
        .sum();
    (longest > 0 && longest <= 16 && total > 0 && at_longest * 2 >= total).then_some(longest)
}

/// The rows' stacks merged into a tree. `stack_of` gives a trace's frames
/// as interned names of `tree`, top first.
fn merge(
    mut tree: StackTree<1>,
    rows: Vec<(u32, u64)>,
    measure: Measure,
    cumulative_sections: usize,
    depth: Option<usize>,
    stack_of: impl Fn(u32) -> Option<Vec<u32>>,
) -> ToolResult<Flame> {
    let mut lengths = Vec::new();
    let no_frames = tree.intern("<no frames>");
    for (serial, count) in rows {
        let mut frames = stack_of(serial).ok_or_else(|| {
            format!("CPU row refers to TRACE {serial}, which the file does not contain")
        })?;
        let whole = frames
            .last()
            .is_some_and(|&f| is_thread_entry(tree.name_of(f)));
        lengths.push((frames.len(), count, whole));
        frames.reverse();
        if frames.is_empty() {
            frames.push(no_frames);
        }
        tree.add(&frames, [count]);
    }
    tree.finish_by_name();
    Ok(Flame {
        tree,
        measure,
        cut_at: cut_at(&lengths, depth),
        cumulative_sections,
        saturated_sites: 0,
    })
}

/// `syms.learn(body)`, counting what it newly keeps against `kept`.
pub fn learn_bounded(
    syms: &mut Symbols,
    body: &RecordBody,
    kept: &mut Retained,
) -> Result<bool, String> {
    let new = match body {
        RecordBody::Utf8 { id, text } => (!syms.strings.contains_key(id)).then_some(text.len()),
        RecordBody::LoadClass(lc) => (!syms.classes.contains_key(&lc.class_serial)).then_some(32),
        RecordBody::Frame(f) => (!syms.frames.contains_key(&f.id)).then_some(40),
        RecordBody::Trace(t) => {
            (!syms.traces.contains_key(&t.serial)).then_some(8 * t.frame_ids.len() + 16)
        }
        _ => None,
    };
    if let Some(b) = new {
        kept.keep(b as u64)?;
    }
    Ok(syms.learn(body))
}

/// Collapse a binary report read from `r`.
pub fn collapse_binary(r: impl Read, all: bool) -> ToolResult<Flame> {
    let mut reader = HprofReader::new(r).map_err(|e| e.to_string())?;
    let mut syms = Symbols::default();
    let mut kept = Retained::default();
    let mut sections = Sections::default();
    let mut depth = None;
    let mut lost = LostRows::default();
    while let Some(rec) = reader.next_record().map_err(|e| e.to_string())? {
        if let RecordBody::Utf8 { text, .. } = &rec.body {
            if let Some(l) = LostSamples::parse(text) {
                lost.add(sections.last_samples(), &l);
                continue;
            }
        }
        let what = |e: String| format!("{} at offset {}: {e}", rec.name(), rec.offset);
        if learn_bounded(&mut syms, &rec.body, &mut kept).map_err(what)? {
            continue;
        }
        match rec.body {
            RecordBody::CpuSamples(cs) => sections.add(
                Measure::Samples,
                cs.entries
                    .iter()
                    .map(|e| (e.trace_serial, u64::from(e.count)))
                    .collect(),
                all,
            ),
            RecordBody::ControlSettings(c) => depth = Some(usize::from(c.depth)),
            _ => {}
        }
    }
    let (measure, rows, cumulative) = sections.pick(all)?;
    let mut tree = StackTree::new();
    // Each frame's name once, by frame ID.
    let mut names: FxHashMap<u64, u32> = FxHashMap::default();
    let mut stacks: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    for &(serial, _) in &rows {
        if stacks.contains_key(&serial) {
            continue;
        }
        let Some(t) = syms.traces.get(&serial) else {
            if let Some(frames) = lost.stack(&mut tree, serial) {
                stacks.insert(serial, frames);
            }
            continue;
        };
        let frames = t
            .frame_ids
            .iter()
            .map(|&id| {
                *names
                    .entry(id)
                    .or_insert_with(|| tree.intern(&syms.frame_label(id)))
            })
            .collect();
        stacks.insert(serial, frames);
    }
    drop(syms);
    merge(tree, rows, measure, cumulative, depth, |serial| {
        stacks.get(&serial).cloned()
    })
}

/// Collapse a text report, read line by line ([`crate::text`]).
pub fn collapse_text(r: impl BufRead, all: bool) -> ToolResult<Flame> {
    let mut tree = StackTree::new();
    let mut kept = Retained::default();
    let mut traces: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
    let mut sections = Sections::default();
    let mut lines = TextReader::new(r);
    // The TRACE being read (its serial and frames) and the CPU section
    // being read (its measure, total and rows).
    let mut trace: Option<(u32, Vec<u32>)> = None;
    let mut cpu: Option<(Measure, f64, Rows)> = None;
    let mut lost = LostRows::default();
    while let Some(line) = lines.next().map_err(|e| e.to_string())? {
        let bad = |e: String| format!("line {}: {e}", line.number);
        match line.event {
            Event::TraceBegin { serial, .. } => {
                kept.keep(16).map_err(bad)?;
                trace = Some((serial, Vec::new()));
            }
            Event::Frame(f) => {
                let Some((_, frames)) = trace.as_mut() else {
                    continue;
                };
                let name = text::frame_name(f);
                let known = tree.name_count();
                let id = tree.intern(name);
                if tree.name_count() > known {
                    kept.keep(name.len() as u64).map_err(bad)?;
                }
                // Frames are counted by the thousand (4 bytes each).
                if frames.len() % 1024 == 0 {
                    kept.keep(4 * 1024).map_err(bad)?;
                }
                frames.push(id);
            }
            Event::TraceEnd => {
                if let Some((serial, frames)) = trace.take() {
                    traces.insert(serial, frames);
                }
            }
            Event::Lost(l) => lost.add(sections.last_samples(), &l),
            Event::CpuBegin { kind, total } => {
                let measure = match kind {
                    CpuKind::Samples => Measure::Samples,
                    CpuKind::Time => Measure::Micros,
                };
                cpu = Some((measure, total, Vec::new()));
            }
            Event::CpuRow(row) => {
                if let Some((measure, total_ms, rows)) = cpu.as_mut() {
                    let weight = match measure {
                        Measure::Samples => row.count,
                        // The row's time is its share of the section's
                        // total (the count column is the number of calls).
                        _ => (row.self_pct / 100.0 * *total_ms * 1000.0).round() as u64,
                    };
                    rows.push((row.trace, weight));
                }
            }
            Event::CpuEnd(_) => {
                if let Some((measure, _, rows)) = cpu.take() {
                    sections.add(measure, rows, all);
                }
            }
            _ => {}
        }
    }
    let (measure, rows, cumulative) = sections.pick(all)?;
    for &(serial, _) in &rows {
        if let std::collections::hash_map::Entry::Vacant(e) = traces.entry(serial) {
            if let Some(frames) = lost.stack(&mut tree, serial) {
                e.insert(frames);
            }
        }
    }
    merge(tree, rows, measure, cumulative, None, |serial| {
        traces.get(&serial).cloned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The weight of one collapsed stack.
    fn count(f: &Flame, stack: &str) -> u64 {
        collapsed_text(f)
            .lines()
            .find_map(|l| {
                let (s, n) = l.rsplit_once(' ')?;
                (s == stack).then(|| n.parse().unwrap())
            })
            .unwrap_or(0)
    }

    const TEXT: &str = "JAVA PROFILE 1.0.1, created Sun Nov 22 04:00:00 2026\n\n--------\n\n\
TRACE 300001:\n\tA.leaf(A.java:3)\n\tA.mid(A.java:9)\n\tA.main(A.java:20)\n\
TRACE 300002:\n\tA.mid(A.java:11)\n\tA.main(A.java:20)\n\
TRACE 300003:\n\tA.leaf(A.java:4)\n\tA.mid(A.java:9)\n\tA.main(A.java:21)\n\
TRACE 300000:\n\t<empty>\n\
CPU SAMPLES BEGIN (total = 10) Sun Nov 22 04:00:01 2026\n\
rank   self  accum   count trace method\n\
   1 50.00% 50.00%       5 300001 A.leaf\n\
   2 30.00% 80.00%       3 300003 A.leaf\n\
   3 10.00% 90.00%       1 300002 A.mid\n\
   4 10.00% 100.00%      1 300000 <empty>\n\
CPU SAMPLES END\n";

    #[test]
    fn the_html_page_holds_the_same_svg_and_its_script() {
        let c = collapse_text(TEXT.as_bytes(), false).unwrap();
        let page = html(&c, "CPU <samples>");
        let doc = svg(&c, "CPU <samples>");
        let inline = doc.split_once("?>\n").unwrap().1;
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains(inline), "the SVG document, inline");
        assert!(page.contains(svg::SCRIPT));
        assert!(page.contains("<title>CPU &lt;samples&gt;</title>"));
        assert!(!page.contains("<?xml"));
    }

    #[test]
    fn text_rows_become_merged_root_first_stacks() {
        let c = collapse_text(TEXT.as_bytes(), false).unwrap();
        assert_eq!(
            collapsed_text(&c),
            "<no frames> 1\nA.main;A.mid 1\nA.main;A.mid;A.leaf 8\n"
        );
    }

    #[test]
    fn last_section_or_all_sections() {
        let two = format!("{TEXT}CPU SAMPLES BEGIN (total = 2) x\nrank   self  accum   count trace method\n   1 100.00% 100.00%       2 300002 A.mid\nCPU SAMPLES END\n");
        assert_eq!(
            collapsed_text(&collapse_text(two.as_bytes(), false).unwrap()),
            "A.main;A.mid 2\n"
        );
        assert_eq!(
            collapsed_text(&collapse_text(two.as_bytes(), true).unwrap()),
            "<no frames> 1\nA.main;A.mid 3\nA.main;A.mid;A.leaf 8\n"
        );
    }

    #[test]
    fn samples_not_counted_are_a_stack_per_reason() {
        let text = format!(
            "{TEXT}CPU SAMPLES LOST 3 of 13 (23.08%): deoptimizing 1, unknown frame in Java 2\n"
        );
        let c = collapse_text(text.as_bytes(), false).unwrap();
        assert_eq!(
            collapsed_text(&c),
            "<no frames> 1\nA.main;A.mid 1\nA.main;A.mid;A.leaf 8\n\
             [lost samples: deoptimizing] 1\n[lost samples: unknown frame in Java] 2\n"
        );
        // A later section without losses has none.
        let two = format!("{text}CPU SAMPLES BEGIN (total = 2) x\nrank   self  accum   count trace method\n   1 100.00% 100.00%       2 300002 A.mid\nCPU SAMPLES END\nCPU SAMPLES LOST 0 of 2 (0.00%)\n");
        assert_eq!(
            collapsed_text(&collapse_text(two.as_bytes(), false).unwrap()),
            "A.main;A.mid 2\n"
        );
    }

    #[test]
    fn the_explanatory_header_is_not_read_as_records() {
        let with_legend = TEXT.replace(
            "--------",
            "TRACE           A stack trace: its serial number, then one line\n\
             CPU SAMPLES     Where running threads were found\n\n--------",
        );
        let c = collapse_text(with_legend.as_bytes(), false).unwrap();
        assert_eq!(c.tree.root().total[0], 10);
    }

    #[test]
    fn cpu_time_is_weighted_by_time_not_calls() {
        let text = "JAVA PROFILE 1.0.1, created x\n\n--------\n\n\
TRACE 301:\n\tA.slow(A.java:1)\n\tA.main(A.java:9)\n\
TRACE 302:\n\tA.fast(A.java:2)\n\tA.main(A.java:9)\n\
CPU TIME (ms) BEGIN (total = 200) x\n\
rank   self  accum   count trace method\n\
   1 75.00% 75.00%       1 301 A.slow\n\
   2 25.00% 100.00%   1000 302 A.fast\n\
CPU TIME (ms) END\n";
        let f = collapse_text(text.as_bytes(), false).unwrap();
        assert_eq!(f.measure, Measure::Micros);
        assert_eq!(count(&f, "A.main;A.slow"), 150_000);
        assert_eq!(count(&f, "A.main;A.fast"), 50_000);
        let s = svg(&f, "t");
        assert!(s.contains("A.slow (150000 us, 75.00%)"), "{s}");
    }

    #[test]
    fn all_counts_cumulative_sections_once() {
        let section = |a: u64, b: u64| {
            format!("CPU SAMPLES BEGIN (total = {}) x\nrank   self  accum   count trace method\n   1 50.00% 50.00% {a} 300001 A.leaf\n   2 50.00% 100.00% {b} 300002 A.mid\nCPU SAMPLES END\n", a + b)
        };
        let traces = "TRACE 300001:\n\tA.leaf(A.java:3)\nTRACE 300002:\n\tA.mid(A.java:3)\n";
        // Socket requests without a reset: 3+1, then 5+2 (grew), then a
        // dump and a reset: 1+0.
        let text = format!(
            "{traces}{}{}{}",
            section(3, 1),
            section(5, 2),
            section(1, 0)
        );
        let f = collapse_text(text.as_bytes(), true).unwrap();
        assert_eq!(count(&f, "A.leaf"), 6);
        assert_eq!(count(&f, "A.mid"), 2);
        assert_eq!(f.cumulative_sections, 1);
        assert!(
            f.notes().iter().any(|n| n.contains("cumulative")),
            "{:?}",
            f.notes()
        );
    }

    #[test]
    fn saturated_sites_are_said() {
        let f = Flame {
            tree: StackTree::new(),
            measure: Measure::AllocatedBytes,
            cut_at: None,
            cumulative_sections: 0,
            saturated_sites: 2,
        };
        let notes = f.notes();
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with("2 allocation site(s) reached the 32-bit counter"),
            "{notes:?}"
        );
    }

    #[test]
    fn stacks_cut_by_depth_are_named() {
        assert_eq!(
            cut_at(&[(4, 10, false), (4, 5, false), (2, 1, true)], None),
            Some(4)
        );
        assert_eq!(
            cut_at(&[(4, 10, true), (4, 5, true)], None),
            None,
            "whole stacks"
        );
        assert_eq!(
            cut_at(&[(40, 10, false), (12, 5, false)], None),
            None,
            "deep stacks"
        );
        assert_eq!(
            cut_at(&[(4, 1, false), (2, 10, false)], None),
            None,
            "most are short"
        );
        assert_eq!(
            cut_at(&[(8, 5, false), (2, 10, true)], Some(8)),
            Some(8),
            "file says"
        );
        assert_eq!(
            cut_at(&[(8, 1, false), (2, 10, true)], Some(8)),
            None,
            "a few cut"
        );
        assert_eq!(
            cut_at(&[(8, 1, true)], Some(8)),
            None,
            "reaches main exactly"
        );
        assert_eq!(cut_at(&[(5, 1, false)], Some(8)), None);
    }

    #[test]
    fn missing_sections_and_traces_are_errors() {
        let e = collapse_text("JAVA PROFILE 1.0.1, created x\n".as_bytes(), false)
            .err()
            .unwrap();
        assert!(e.contains("no CPU SAMPLES"), "{e}");
        let e = collapse_text(
            "CPU SAMPLES BEGIN (total = 1) x\n   1 100.00% 100.00% 1 300009 X.y\nCPU SAMPLES END\n"
                .as_bytes(),
            false,
        )
        .err()
        .unwrap();
        assert!(e.contains("TRACE 300009"), "{e}");
    }

    #[test]
    fn svg_has_one_box_per_frame_with_counts() {
        let c = collapse_text(TEXT.as_bytes(), false).unwrap();
        let s = svg(&c, "t");
        assert!(s.starts_with("<?xml") && s.ends_with("</svg>\n"));
        assert_eq!(
            s.matches("<rect x=").count(),
            1 + 4,
            "all, <no frames>, main, mid, leaf"
        );
        assert!(s.contains("<title>A.leaf (8 samples, 80.00%)</title>"));
        assert!(s.contains("<title>all (10 samples, 100.00%)</title>"));
    }
}
