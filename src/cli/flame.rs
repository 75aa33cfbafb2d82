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

use super::symbols::Symbols;
use super::CliResult;
use crate::reader::{HprofReader, RecordBody};
use std::collections::BTreeMap;
use std::io::Read;

/// Collapsed stacks: frame names root first -> samples.
pub type Collapsed = BTreeMap<String, u64>;

/// One CPU section: (trace serial, count) rows.
type Section = Vec<(u32, u64)>;

pub fn collapse_file(path: &str, all: bool) -> CliResult<Collapsed> {
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

fn pick(sections: Vec<Section>, all: bool) -> CliResult<Section> {
    if sections.is_empty() {
        return Err(
            "no CPU SAMPLES or CPU TIME section in the file (run the agent with cpu=samples)"
                .into(),
        );
    }
    Ok(if all {
        sections.into_iter().flatten().collect()
    } else {
        sections.into_iter().next_back().unwrap_or_default()
    })
}

fn merge(rows: Section, stack_of: impl Fn(u32) -> Option<Vec<String>>) -> CliResult<Collapsed> {
    let mut out = Collapsed::new();
    for (serial, count) in rows {
        let mut frames = stack_of(serial).ok_or_else(|| {
            format!("CPU row refers to TRACE {serial}, which the file does not contain")
        })?;
        frames.reverse();
        let key = if frames.is_empty() {
            "<no frames>".to_string()
        } else {
            frames.join(";")
        };
        *out.entry(key).or_insert(0) += count;
    }
    Ok(out)
}

/// Collapse a binary report read from `r`.
pub fn collapse_binary(r: impl Read, all: bool) -> CliResult<Collapsed> {
    let mut reader = HprofReader::new(r).map_err(|e| e.to_string())?;
    let mut syms = Symbols::default();
    let mut sections = Vec::new();
    while let Some(rec) = reader.next_record().map_err(|e| e.to_string())? {
        if syms.learn(&rec.body) {
            continue;
        }
        if let RecordBody::CpuSamples(cs) = rec.body {
            sections.push(
                cs.entries
                    .iter()
                    .map(|e| (e.trace_serial, u64::from(e.count)))
                    .collect(),
            );
        }
    }
    merge(pick(sections, all)?, |serial| {
        syms.traces
            .get(&serial)
            .map(|t| t.frame_ids.iter().map(|&id| syms.frame_label(id)).collect())
    })
}

/// Collapse a text report.
pub fn collapse_text(text: &str, all: bool) -> CliResult<Collapsed> {
    let mut traces: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut sections = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    let bad = |n: usize, what: &str| format!("line {}: {what}", n + 1);
    while let Some((n, l)) = lines.next() {
        if let Some(rest) = l.strip_prefix("TRACE ") {
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
            let end = if l.starts_with("CPU SAMPLES") {
                "CPU SAMPLES END"
            } else {
                "CPU TIME (ms) END"
            };
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
                let (count, trace) = match (
                    c.get(3).and_then(|s| s.parse().ok()),
                    c.get(4).and_then(|s| s.parse().ok()),
                ) {
                    (Some(a), Some(b)) => (a, b),
                    _ => return Err(bad(m, "bad CPU row")),
                };
                rows.push((trace, count));
            }
            sections.push(rows);
        }
    }
    merge(pick(sections, all)?, |serial| traces.get(&serial).cloned())
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

/// A self-contained SVG flame graph (root at the bottom, hover for counts).
pub fn svg(c: &Collapsed, title: &str) -> String {
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
    let height = levels as f64 * ROW + 3.0 * PAD + ROW;
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
    let total = root.value.max(1) as f64;
    let bottom = height - PAD - ROW;
    let mut stack: Vec<(&str, &Node, f64, usize)> = vec![("all", &root, 0.0, 0)];
    while let Some((name, node, x, level)) = stack.pop() {
        let w = node.value as f64 / total * WIDTH;
        let y = bottom - level as f64 * ROW;
        let label = format!(
            "{name} ({} samples, {:.2}%)",
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
            collapsed_text(&c),
            "<no frames> 1\nA.main;A.mid 1\nA.main;A.mid;A.leaf 8\n"
        );
    }

    #[test]
    fn last_section_or_all_sections() {
        let two = format!("{TEXT}CPU SAMPLES BEGIN (total = 2) x\nrank   self  accum   count trace method\n   1 100.00% 100.00%       2 300002 A.mid\nCPU SAMPLES END\n");
        assert_eq!(
            collapsed_text(&collapse_text(&two, false).unwrap()),
            "A.main;A.mid 2\n"
        );
        assert_eq!(
            collapsed_text(&collapse_text(&two, true).unwrap()),
            "<no frames> 1\nA.main;A.mid 3\nA.main;A.mid;A.leaf 8\n"
        );
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
