//! A small parser of the HPROF text format, for checking agent output.
#![allow(dead_code)]

use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub class: String,
    pub method: String,
    pub source: String,
    pub line: String,
}

#[derive(Debug, Clone)]
pub struct Trace {
    pub serial: u32,
    pub thread: Option<u32>,
    pub frames: Vec<Frame>,
}

#[derive(Debug, Clone)]
pub struct CpuRow {
    pub rank: u32,
    pub self_pct: f64,
    pub accum_pct: f64,
    pub count: u32,
    pub trace: u32,
    pub method: String,
}

#[derive(Debug, Clone)]
pub struct CpuSection {
    pub title: String,
    pub total: u64,
    pub rows: Vec<CpuRow>,
    /// The line after the section about the samples it does not count
    /// (`CPU SAMPLES LOST ...`), if there is one.
    pub lost: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ThreadStart {
    pub obj: String,
    pub id: u32,
    pub name: String,
    pub group: String,
}

#[derive(Debug, Default)]
pub struct Report {
    pub header_line: String,
    pub traces: HashMap<u32, Trace>,
    /// Serials in the order TRACE records appear.
    pub trace_order: Vec<u32>,
    pub cpu: Vec<CpuSection>,
    pub thread_starts: Vec<ThreadStart>,
    pub thread_ends: Vec<u32>,
    pub body: String,
}

/// Parse a whole text report; panics with context on malformed lines.
pub fn parse(text: &str) -> Report {
    let mut r = Report {
        body: text.to_string(),
        ..Default::default()
    };
    r.header_line = text.lines().next().unwrap_or("").to_string();
    assert!(
        r.header_line.starts_with("JAVA PROFILE 1.0.1, created "),
        "bad header: {:?}",
        r.header_line
    );
    let sep = text.find("\n--------\n\n").expect("prelude separator");
    let lines: Vec<&str> = text[sep + 11..].lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if let Some(rest) = l.strip_prefix("TRACE ") {
            let (serial, tail) = rest.split_once(':').expect("TRACE n:");
            let serial: u32 = serial.parse().unwrap();
            let thread = tail
                .strip_prefix(" (thread=")
                .map(|t| t.trim_end_matches(')').parse().unwrap());
            let mut frames = Vec::new();
            i += 1;
            while i < lines.len() && lines[i].starts_with('\t') {
                let f = &lines[i][1..];
                if f != "<empty>" {
                    frames.push(parse_frame(f));
                }
                i += 1;
            }
            assert!(
                r.traces
                    .insert(
                        serial,
                        Trace {
                            serial,
                            thread,
                            frames
                        }
                    )
                    .is_none(),
                "TRACE {serial} printed twice"
            );
            r.trace_order.push(serial);
            continue;
        }
        if let Some(rest) = l.strip_prefix("THREAD START (") {
            // A name with line breaks continues the record on the next
            // lines, up to the one with its group.
            let mut joined = rest.to_string();
            while !joined.contains("group=\"") && i + 1 < lines.len() {
                i += 1;
                joined.push('\n');
                joined.push_str(lines[i]);
            }
            let rest = joined.as_str();
            let obj = field(rest, "obj=", ",");
            let id = field(rest, "id = ", ",").parse().unwrap();
            // The name may hold quotes: it ends at the last `", group="`.
            let name = {
                let a = rest.find("name=\"").expect("name=") + 6;
                let b = rest.rfind("\", group=\"").unwrap_or(rest.len());
                rest[a..b.max(a)].to_string()
            };
            let group = field(rest, "group=\"", "\"");
            r.thread_starts.push(ThreadStart {
                obj,
                id,
                name,
                group,
            });
        } else if let Some(rest) = l.strip_prefix("THREAD END (id = ") {
            r.thread_ends
                .push(rest.trim_end_matches(')').parse().unwrap());
        } else if l.starts_with("CPU SAMPLES BEGIN") || l.starts_with("CPU TIME (ms) BEGIN") {
            let title = if l.starts_with("CPU SAMPLES") {
                "CPU SAMPLES"
            } else {
                "CPU TIME (ms)"
            };
            let total: u64 = field(l, "(total = ", ")").parse().unwrap();
            let mut rows = Vec::new();
            i += 1;
            let end = format!("{title} END");
            while lines[i] != end {
                if !lines[i].starts_with("rank") {
                    let c: Vec<&str> = lines[i].split_whitespace().collect();
                    rows.push(CpuRow {
                        rank: c[0].parse().unwrap(),
                        self_pct: c[1].trim_end_matches('%').parse().unwrap(),
                        accum_pct: c[2].trim_end_matches('%').parse().unwrap(),
                        count: c[3].parse().unwrap(),
                        trace: c[4].parse().unwrap(),
                        method: c[5..].join(" "),
                    });
                }
                i += 1;
            }
            let lost = lines
                .get(i + 1)
                .filter(|l| l.starts_with("CPU SAMPLES LOST "))
                .map(|l| l.to_string());
            r.cpu.push(CpuSection {
                title: title.into(),
                total,
                rows,
                lost,
            });
        }
        i += 1;
    }
    r
}

fn field(s: &str, start: &str, end: &str) -> String {
    let a = s
        .find(start)
        .unwrap_or_else(|| panic!("no {start:?} in {s:?}"))
        + start.len();
    let b = s[a..].find(end).map(|b| a + b).unwrap_or(s.len());
    s[a..b].to_string()
}

/// `pkg.Class.method(Source.java:12)`.
pub fn parse_frame(f: &str) -> Frame {
    let open = f.rfind('(').expect("frame (");
    let qual = &f[..open];
    let dot = qual.rfind('.').expect("class.method");
    let inner = &f[open + 1..f.len() - 1];
    let (source, line) = inner.rsplit_once(':').expect("source:line");
    Frame {
        class: qual[..dot].into(),
        method: qual[dot + 1..].into(),
        source: source.into(),
        line: line.into(),
    }
}
