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

use super::CliResult;
use crate::format::LostSamples;
use crate::reader::{HprofReader, RecordBody};
use crate::transcode::symbols::Symbols;
use std::collections::BTreeMap;
use std::io::Read;

/// Collapsed stacks: frame names root first -> samples.
pub type Collapsed = BTreeMap<String, u64>;

/// What a CPU section measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// CPU SAMPLES: one unit per sample.
    Samples,
    /// CPU TIME (ms) of `cpu=times`: microseconds.
    Micros,
}

impl Measure {
    pub fn unit(self) -> &'static str {
        match self {
            Measure::Samples => "samples",
            Measure::Micros => "us",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Measure::Samples => "CPU samples",
            Measure::Micros => "CPU time (us, cpu=times)",
        }
    }
}

/// One CPU section: what it measures and its (trace serial, weight) rows.
#[derive(Clone, Debug)]
struct Section {
    measure: Measure,
    rows: Vec<(u32, u64)>,
}

/// Collapsed stacks and what they mean.
#[derive(Debug)]
pub struct Flame {
    pub stacks: Collapsed,
    pub measure: Measure,
    /// Set when the traces were cut at this many frames (the agent's
    /// `depth`): the roots of the stacks are missing.
    pub cut_at: Option<usize>,
    /// `all`: how many sections were cumulative and counted once.
    pub cumulative_sections: usize,
}

impl Flame {
    /// Notes for the user (stderr, and the SVG's subtitle).
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(n) = self.cut_at {
            notes.push(format!(
                "stacks are cut at {n} frames (the agent's depth option, 4 by default), so their roots are missing; run the agent with depth=64 (or more) for a readable graph"
            ));
        }
        if self.cumulative_sections > 0 {
            notes.push(format!(
                "{} section(s) were cumulative (CPU samples asked for over the socket are not reset) and were counted once",
                self.cumulative_sections
            ));
        }
        notes
    }
}

pub fn collapse_file(path: &str, all: bool) -> CliResult<Flame> {
    let mut head = [0u8; 2];
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot open {path}: {e}"))?;
    let n = f
        .read(&mut head)
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    drop(f);
    let gz = n == 2 && head == crate::reader::GZIP_MAGIC;
    let file = super::progress::open(path)?;
    let mut input: Box<dyn Read> = if gz {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut start = vec![0u8; 32];
    let got = read_up_to(&mut input, &mut start).map_err(|e| format!("cannot read {path}: {e}"))?;
    start.truncate(got);
    let rest = std::io::Cursor::new(start.clone()).chain(input);
    if start.starts_with(b"JAVA PROFILE 1.0.1, created") {
        let mut text = String::new();
        let mut rest = rest;
        rest.read_to_string(&mut text)
            .map_err(|e| format!("{path} is not a text report: {e}"))?;
        collapse_text(&text, all)
    } else {
        collapse_binary(rest, all)
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// The rows to draw: the last section, or with `all` every section of the
/// last section's kind, where a section that only grew from the one before
/// (every trace's count the same or higher) replaces it instead of adding
/// to it. Returns the rows, their measure and how many sections were
/// cumulative.
fn pick(sections: Vec<Section>, all: bool) -> CliResult<(Vec<(u32, u64)>, Measure, usize)> {
    let Some(last) = sections.last() else {
        return Err(
            "no CPU SAMPLES or CPU TIME section in the file (run the agent with cpu=samples)"
                .into(),
        );
    };
    let measure = last.measure;
    if !all {
        return Ok((last.rows.clone(), measure, 0));
    }
    let mut runs: Vec<BTreeMap<u32, u64>> = Vec::new();
    let mut cumulative = 0;
    for s in sections.into_iter().filter(|s| s.measure == measure) {
        let mut by_trace = BTreeMap::new();
        for (t, c) in s.rows {
            *by_trace.entry(t).or_insert(0) += c;
        }
        match runs.last_mut() {
            Some(prev) if grew_from(prev, &by_trace) => {
                *prev = by_trace;
                cumulative += 1;
            }
            _ => runs.push(by_trace),
        }
    }
    let rows = runs.into_iter().flatten().collect();
    Ok((rows, measure, cumulative))
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
fn is_thread_entry(frame: &str) -> bool {
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
fn cut_at(stacks: &[(usize, u64, bool)], depth: Option<usize>) -> Option<usize> {
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
    /// Add the rows of `lost` to `section`.
    fn add(&mut self, section: Option<&mut Section>, lost: &LostSamples) {
        let Some(section) = section.filter(|s| s.measure == Measure::Samples) else {
            return;
        };
        for (why, n) in &lost.reasons {
            let i = match self.reasons.iter().position(|r| r == why) {
                Some(i) => i,
                None => {
                    self.reasons.push(why.clone());
                    self.reasons.len() - 1
                }
            };
            section.rows.push((u32::MAX - i as u32, *n));
        }
    }

    /// The stack of a pseudo serial.
    fn stack(&self, serial: u32) -> Option<Vec<String>> {
        let i = (u32::MAX - serial) as usize;
        self.reasons.get(i).map(|why| vec![lost_frame(why)])
    }
}

fn merge(
    rows: Vec<(u32, u64)>,
    measure: Measure,
    cumulative_sections: usize,
    depth: Option<usize>,
    stack_of: impl Fn(u32) -> Option<Vec<String>>,
) -> CliResult<Flame> {
    let mut out = Collapsed::new();
    let mut lengths = Vec::new();
    for (serial, count) in rows {
        let mut frames = stack_of(serial).ok_or_else(|| {
            format!("CPU row refers to TRACE {serial}, which the file does not contain")
        })?;
        let whole = frames.last().is_some_and(|f| is_thread_entry(f));
        lengths.push((frames.len(), count, whole));
        frames.reverse();
        let key = if frames.is_empty() {
            "<no frames>".to_string()
        } else {
            frames.join(";")
        };
        *out.entry(key).or_insert(0) += count;
    }
    Ok(Flame {
        stacks: out,
        measure,
        cut_at: cut_at(&lengths, depth),
        cumulative_sections,
    })
}

/// Collapse a binary report read from `r`.
pub fn collapse_binary(r: impl Read, all: bool) -> CliResult<Flame> {
    let mut reader = HprofReader::new(r).map_err(|e| e.to_string())?;
    let mut syms = Symbols::default();
    let mut sections = Vec::new();
    let mut depth = None;
    let mut lost = LostRows::default();
    while let Some(rec) = reader.next_record().map_err(|e| e.to_string())? {
        if let RecordBody::Utf8 { text, .. } = &rec.body {
            if let Some(l) = LostSamples::parse(text) {
                lost.add(sections.last_mut(), &l);
                continue;
            }
        }
        if syms.learn(&rec.body) {
            continue;
        }
        match rec.body {
            RecordBody::CpuSamples(cs) => sections.push(Section {
                measure: Measure::Samples,
                rows: cs
                    .entries
                    .iter()
                    .map(|e| (e.trace_serial, u64::from(e.count)))
                    .collect(),
            }),
            RecordBody::ControlSettings(c) => depth = Some(usize::from(c.depth)),
            _ => {}
        }
    }
    let (rows, measure, cumulative) = pick(sections, all)?;
    merge(rows, measure, cumulative, depth, |serial| {
        syms.traces
            .get(&serial)
            .map(|t| t.frame_ids.iter().map(|&id| syms.frame_label(id)).collect())
            .or_else(|| lost.stack(serial))
    })
}

/// Collapse a text report.
pub fn collapse_text(text: &str, all: bool) -> CliResult<Flame> {
    let mut traces: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut sections = Vec::new();
    // The explanatory header (legend lines such as "TRACE   A stack
    // trace: ...") ends with a line of dashes; records start after it.
    // Reports without a header (cpu=old) start with records.
    let skip = text
        .lines()
        .take(200)
        .position(|l| l == "--------")
        .map_or(0, |p| p + 1);
    let mut lines = text.lines().enumerate().skip(skip).peekable();
    let bad = |n: usize, what: &str| format!("line {}: {what}", n + 1);
    let mut lost = LostRows::default();
    while let Some((n, l)) = lines.next() {
        if let Some(l) = LostSamples::parse(l) {
            lost.add(sections.last_mut(), &l);
        } else if let Some(rest) = l.strip_prefix("TRACE ") {
            let serial = rest
                .split(':')
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad(n, "bad TRACE line"))?;
            let mut frames = Vec::new();
            while let Some((_, f)) = lines.next_if(|(_, f)| f.starts_with('\t')) {
                let f = &f[1..];
                if f != "<empty>" {
                    frames.push(f.rfind('(').map_or(f, |p| &f[..p]).to_string());
                }
            }
            traces.insert(serial, frames);
        } else if l.starts_with("CPU SAMPLES BEGIN") || l.starts_with("CPU TIME (ms) BEGIN") {
            let (end, measure) = if l.starts_with("CPU SAMPLES") {
                ("CPU SAMPLES END", Measure::Samples)
            } else {
                ("CPU TIME (ms) END", Measure::Micros)
            };
            let total_ms: f64 = l
                .split("total = ")
                .nth(1)
                .and_then(|r| r.split(')').next())
                .and_then(|t| t.trim().parse().ok())
                .ok_or_else(|| bad(n, "CPU section without its total"))?;
            let mut rows = Vec::new();
            loop {
                let (m, row) = lines
                    .next()
                    .ok_or_else(|| bad(n, "CPU section without its END line"))?;
                if row == end {
                    break;
                }
                if row.starts_with("rank") {
                    continue;
                }
                let c: Vec<&str> = row.split_whitespace().collect();
                let self_pct = c
                    .get(1)
                    .and_then(|s| s.strip_suffix('%'))
                    .and_then(|s| s.parse::<f64>().ok());
                let (count, trace, self_pct) = match (
                    c.get(3).and_then(|s| s.parse::<u64>().ok()),
                    c.get(4).and_then(|s| s.parse().ok()),
                    self_pct,
                ) {
                    (Some(a), Some(b), Some(p)) => (a, b, p),
                    _ => return Err(bad(m, "bad CPU row")),
                };
                let weight = match measure {
                    Measure::Samples => count,
                    // The row's time is its share of the section's total
                    // (the count column is the number of calls).
                    Measure::Micros => (self_pct / 100.0 * total_ms * 1000.0).round() as u64,
                };
                rows.push((trace, weight));
            }
            sections.push(Section { measure, rows });
        }
    }
    let (rows, measure, cumulative) = pick(sections, all)?;
    merge(rows, measure, cumulative, None, |serial| {
        traces.get(&serial).cloned().or_else(|| lost.stack(serial))
    })
}

pub fn collapsed_text(c: &Collapsed) -> String {
    c.iter().map(|(k, v)| format!("{k} {v}\n")).collect()
}

#[derive(Default)]
struct Node {
    value: u64,
    children: BTreeMap<String, Node>,
}

const WIDTH: f64 = 1200.0;
const ROW: f64 = 16.0;
const PAD: f64 = 10.0;

/// A self-contained SVG flame graph (root at the bottom, hover for counts)
/// titled `title`, with the flame's notes under the title.
pub fn svg(flame: &Flame, title: &str) -> String {
    let c = &flame.stacks;
    let unit = flame.measure.unit();
    let notes = flame.notes();
    let mut root = Node::default();
    for (stack, &count) in c {
        root.value += count;
        let mut node = &mut root;
        for f in stack.split(';') {
            node = node.children.entry(f.to_string()).or_default();
            node.value += count;
        }
    }
    fn depth(n: &Node) -> usize {
        n.children.values().map(|c| 1 + depth(c)).max().unwrap_or(0)
    }
    let levels = depth(&root) + 1;
    let height = (levels + notes.len()) as f64 * ROW + 3.0 * PAD + ROW;
    let mut out = String::new();
    out.push_str(&format!(
        "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"{w}\" height=\"{height}\" viewBox=\"0 0 {w} {height}\" xmlns=\"http://www.w3.org/2000/svg\">\n\
<style>text {{ font-family: monospace; font-size: 11px; }} rect:hover {{ stroke: black; }}</style>\n\
<rect fill=\"#f8f8f0\" x=\"0\" y=\"0\" width=\"{w}\" height=\"{height}\"/>\n\
<text x=\"{cx}\" y=\"{ty}\" text-anchor=\"middle\" font-size=\"14px\">{t}</text>\n",
        w = WIDTH + 2.0 * PAD,
        cx = WIDTH / 2.0 + PAD,
        ty = PAD + ROW * 0.75,
        t = escape(title),
    ));
    for (i, note) in notes.iter().enumerate() {
        out.push_str(&format!(
            "<text x=\"{cx}\" y=\"{y}\" text-anchor=\"middle\" class=\"note\">{n}</text>\n",
            cx = WIDTH / 2.0 + PAD,
            y = PAD + ROW * (1.75 + i as f64),
            n = escape(note),
        ));
    }
    let total = root.value.max(1) as f64;
    let bottom = height - PAD - ROW;
    let mut stack: Vec<(&str, &Node, f64, usize)> = vec![("all", &root, 0.0, 0)];
    while let Some((name, node, x, level)) = stack.pop() {
        let w = node.value as f64 / total * WIDTH;
        let y = bottom - level as f64 * ROW;
        let label = format!(
            "{name} ({} {unit}, {:.2}%)",
            node.value,
            node.value as f64 * 100.0 / total
        );
        out.push_str(&format!(
            "<g><title>{}</title><rect x=\"{:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"{}\"/>",
            escape(&label),
            x + PAD,
            w.max(0.1),
            ROW - 1.0,
            color(name)
        ));
        let chars = ((w - 6.0) / 7.0).floor() as usize;
        if chars >= 3 {
            let shown: String = if name.chars().count() <= chars {
                name.to_string()
            } else {
                name.chars().take(chars - 2).collect::<String>() + ".."
            };
            out.push_str(&format!(
                "<text x=\"{:.2}\" y=\"{:.1}\">{}</text>",
                x + PAD + 3.0,
                y + ROW - 4.5,
                escape(&shown)
            ));
        }
        out.push_str("</g>\n");
        let mut cx = x;
        for (child_name, child) in &node.children {
            stack.push((child_name, child, cx, level + 1));
            cx += child.value as f64 / total * WIDTH;
        }
    }
    out.push_str("</svg>\n");
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Warm colours, stable per name.
fn color(name: &str) -> String {
    let h = name.bytes().fold(2166136261u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(16777619)
    });
    let r = 205 + (h % 50);
    let g = 80 + ((h >> 8) % 150);
    let b = 40 + ((h >> 16) % 50);
    format!("rgb({r},{g},{b})")
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn text_rows_become_merged_root_first_stacks() {
        let c = collapse_text(TEXT, false).unwrap();
        assert_eq!(
            collapsed_text(&c.stacks),
            "<no frames> 1\nA.main;A.mid 1\nA.main;A.mid;A.leaf 8\n"
        );
    }

    #[test]
    fn last_section_or_all_sections() {
        let two = format!("{TEXT}CPU SAMPLES BEGIN (total = 2) x\nrank   self  accum   count trace method\n   1 100.00% 100.00%       2 300002 A.mid\nCPU SAMPLES END\n");
        assert_eq!(
            collapsed_text(&collapse_text(&two, false).unwrap().stacks),
            "A.main;A.mid 2\n"
        );
        assert_eq!(
            collapsed_text(&collapse_text(&two, true).unwrap().stacks),
            "<no frames> 1\nA.main;A.mid 3\nA.main;A.mid;A.leaf 8\n"
        );
    }

    #[test]
    fn samples_not_counted_are_a_stack_per_reason() {
        let text = format!(
            "{TEXT}CPU SAMPLES LOST 3 of 13 (23.08%): deoptimizing 1, unknown frame in Java 2\n"
        );
        let c = collapse_text(&text, false).unwrap();
        assert_eq!(
            collapsed_text(&c.stacks),
            "<no frames> 1\nA.main;A.mid 1\nA.main;A.mid;A.leaf 8\n\
             [lost samples: deoptimizing] 1\n[lost samples: unknown frame in Java] 2\n"
        );
        // A later section without losses has none.
        let two = format!("{text}CPU SAMPLES BEGIN (total = 2) x\nrank   self  accum   count trace method\n   1 100.00% 100.00%       2 300002 A.mid\nCPU SAMPLES END\nCPU SAMPLES LOST 0 of 2 (0.00%)\n");
        assert_eq!(
            collapsed_text(&collapse_text(&two, false).unwrap().stacks),
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
        let c = collapse_text(&with_legend, false).unwrap();
        assert_eq!(c.stacks.values().sum::<u64>(), 10);
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
        let f = collapse_text(text, false).unwrap();
        assert_eq!(f.measure, Measure::Micros);
        assert_eq!(f.stacks["A.main;A.slow"], 150_000);
        assert_eq!(f.stacks["A.main;A.fast"], 50_000);
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
        let f = collapse_text(&text, true).unwrap();
        assert_eq!(f.stacks["A.leaf"], 6);
        assert_eq!(f.stacks["A.mid"], 2);
        assert_eq!(f.cumulative_sections, 1);
        assert!(
            f.notes().iter().any(|n| n.contains("cumulative")),
            "{:?}",
            f.notes()
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
        assert!(collapse_text("JAVA PROFILE 1.0.1, created x\n", false)
            .unwrap_err()
            .contains("no CPU SAMPLES"));
        let e = collapse_text(
            "CPU SAMPLES BEGIN (total = 1) x\n   1 100.00% 100.00% 1 300009 X.y\nCPU SAMPLES END\n",
            false,
        )
        .unwrap_err();
        assert!(e.contains("TRACE 300009"), "{e}");
    }

    #[test]
    fn svg_has_one_box_per_frame_with_counts() {
        let c = collapse_text(TEXT, false).unwrap();
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
