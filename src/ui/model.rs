//! The UI's data model: one [`Session`] per agent connection or opened
//! file, fed record by record by the crate's strict reader, and the views
//! the page fetches (CPU, memory, threads, console) built from it as JSON.
//!
//! Memory stays bounded: the console keeps the last [`CONSOLE_LINES`]
//! lines, CPU and site views keep only the latest section (CPU SAMPLES are
//! cumulative, docs/socket-protocol.md), and the name tables stop a session
//! with an error once they hold more than [`MAX_SYMBOLS`] entries.

use crate::reader::{java_class_name, AllocSites, CpuSamples, Frame, RecordBody, Trace};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};

/// Console lines kept per session (older ones are dropped and counted).
pub const CONSOLE_LINES: usize = 5000;
/// Names, classes, frames, traces and threads a session may define.
pub const MAX_SYMBOLS: usize = 20_000_000;
/// ALLOC SITES flag bit: counts are estimates from heap sampling
/// (docs/alloc_sites.md, "Sampled mode").
pub const SITES_ESTIMATED: u16 = 0x8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Live,
    Ended,
    Failed,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Live => "live",
            State::Ended => "ended",
            State::Failed => "error",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ThreadInfo {
    pub serial: u32,
    pub name: String,
    pub group: String,
    pub start_ms: f64,
    pub end_ms: Option<f64>,
}

/// Everything the views need from one stream.
pub struct Session {
    pub id: u32,
    /// "listen" (an agent connection) or "file".
    pub kind: &'static str,
    /// Peer address or file name.
    pub source: String,
    pub started_unix_ms: u64,
    pub state: State,
    pub error: Option<String>,
    /// The binary header's label and identifier size.
    pub format: String,
    pub records: u64,
    pub bytes: u64,
    strings: HashMap<u64, String>,
    classes: HashMap<u32, u64>,
    frames: HashMap<u64, Frame>,
    traces: HashMap<u32, Trace>,
    pub threads: Vec<ThreadInfo>,
    thread_index: HashMap<u32, usize>,
    pub cpu: Option<CpuSamples>,
    pub cpu_sections: u32,
    pub sites: Option<AllocSites>,
    pub sites_reports: u32,
    pub control: Option<(u32, u16)>,
    console: VecDeque<(u64, String)>,
    console_seq: u64,
    /// Commands sent so far (the serial of the next one).
    pub commands_sent: u32,
}

impl Session {
    pub fn new(id: u32, kind: &'static str, source: String) -> Self {
        Session {
            id,
            kind,
            source,
            started_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            state: State::Live,
            error: None,
            format: String::new(),
            records: 0,
            bytes: 0,
            strings: HashMap::new(),
            classes: HashMap::new(),
            frames: HashMap::new(),
            traces: HashMap::new(),
            threads: Vec::new(),
            thread_index: HashMap::new(),
            cpu: None,
            cpu_sections: 0,
            sites: None,
            sites_reports: 0,
            control: None,
            console: VecDeque::new(),
            console_seq: 0,
            commands_sent: 0,
        }
    }

    pub fn log(&mut self, line: String) {
        self.console_seq += 1;
        if self.console.len() == CONSOLE_LINES {
            self.console.pop_front();
        }
        self.console.push_back((self.console_seq, line));
    }

    pub fn fail(&mut self, msg: String) {
        self.log(format!("ERROR: {msg}"));
        self.error = Some(msg);
        self.state = State::Failed;
    }

    pub fn end(&mut self) {
        if self.state == State::Live {
            self.state = State::Ended;
            self.log("stream ended".into());
        }
    }

    fn symbols(&self) -> usize {
        self.strings.len()
            + self.classes.len()
            + self.frames.len()
            + self.traces.len()
            + self.threads.len()
    }

    fn string(&self, id: u64) -> &str {
        self.strings.get(&id).map_or("?", String::as_str)
    }

    pub fn class_name(&self, serial: u32) -> String {
        self.classes
            .get(&serial)
            .and_then(|n| self.strings.get(n))
            .map_or_else(
                || format!("<class serial {serial}>"),
                |n| java_class_name(n),
            )
    }

    /// `pkg.Class.method` of a frame.
    pub fn frame_label(&self, id: u64) -> String {
        match self.frames.get(&id) {
            None => format!("<unknown frame 0x{id:x}>"),
            Some(f) => format!(
                "{}.{}",
                self.class_name(f.class_serial),
                self.string(f.method_name_id)
            ),
        }
    }

    /// `pkg.Class.method(File.java:12)` of a frame.
    fn frame_with_line(&self, id: u64) -> String {
        let label = self.frame_label(id);
        let Some(f) = self.frames.get(&id) else {
            return label;
        };
        let file = self
            .strings
            .get(&f.source_file_id)
            .map_or("Unknown", String::as_str);
        match f.line {
            n if n > 0 => format!("{label}({file}:{n})"),
            -2 => format!("{label}(Compiled method)"),
            -3 => format!("{label}(Native method)"),
            _ => format!("{label}({file})"),
        }
    }

    /// Frame IDs of a trace, top of stack first.
    pub fn trace_frames(&self, serial: u32) -> Option<&[u64]> {
        self.traces.get(&serial).map(|t| t.frame_ids.as_slice())
    }

    /// Source file name and line (> 0 when known) of a frame.
    pub fn frame_source(&self, id: u64) -> (String, i32) {
        match self.frames.get(&id) {
            None => (String::new(), 0),
            Some(f) => (
                self.strings
                    .get(&f.source_file_id)
                    .cloned()
                    .unwrap_or_default(),
                f.line,
            ),
        }
    }

    /// Top-first frame names of a trace.
    pub fn stack(&self, serial: u32) -> Option<Vec<String>> {
        self.traces
            .get(&serial)
            .map(|t| t.frame_ids.iter().map(|&f| self.frame_label(f)).collect())
    }

    /// Take one record in. Errors end the session (the caller calls
    /// [`Session::fail`]).
    pub fn apply(&mut self, time_us: u32, name: &str, body: RecordBody) -> Result<(), String> {
        self.records += 1;
        if self.symbols() > MAX_SYMBOLS {
            return Err(format!(
                "more than {MAX_SYMBOLS} names, frames and traces: stream refused to bound memory"
            ));
        }
        let t = f64::from(time_us) / 1000.0;
        let detail = match body {
            RecordBody::Utf8 { id, text } => {
                self.strings.insert(id, text);
                return Ok(()); // names are not worth a console line each
            }
            RecordBody::LoadClass(c) => {
                self.classes.insert(c.class_serial, c.name_id);
                return Ok(());
            }
            RecordBody::Frame(f) => {
                self.frames.insert(f.id, f);
                return Ok(());
            }
            RecordBody::Trace(tr) => {
                self.traces.insert(tr.serial, tr);
                return Ok(());
            }
            RecordBody::UnloadClass { class_serial } => format!("class serial {class_serial}"),
            RecordBody::StartThread(s) => {
                let info = ThreadInfo {
                    serial: s.thread_serial,
                    name: self.string(s.name_id).to_string(),
                    group: self.string(s.group_name_id).to_string(),
                    start_ms: t,
                    end_ms: None,
                };
                let line = format!("thread {} \"{}\"", info.serial, info.name);
                self.thread_index
                    .insert(s.thread_serial, self.threads.len());
                self.threads.push(info);
                line
            }
            RecordBody::EndThread { thread_serial } => {
                if let Some(&i) = self.thread_index.get(&thread_serial) {
                    self.threads[i].end_ms = Some(t);
                    format!("thread {thread_serial} \"{}\"", self.threads[i].name)
                } else {
                    format!("thread {thread_serial} (never started)")
                }
            }
            RecordBody::CpuSamples(c) => {
                let line = format!("total {} samples in {} traces", c.total, c.entries.len());
                self.cpu = Some(c);
                self.cpu_sections += 1;
                line
            }
            RecordBody::AllocSites(s) => {
                let line = format!(
                    "{} sites, {} live bytes of {} allocated{}",
                    s.sites.len(),
                    s.total_live_bytes,
                    s.total_bytes_allocated,
                    if s.flags & SITES_ESTIMATED != 0 {
                        " (estimates)"
                    } else {
                        ""
                    }
                );
                self.sites = Some(s);
                self.sites_reports += 1;
                line
            }
            RecordBody::HeapSummary(h) => format!(
                "live {} bytes in {} objects; allocated {} bytes in {} objects",
                h.total_live_bytes,
                h.total_live_instances,
                h.total_bytes_allocated,
                h.total_instances_allocated
            ),
            RecordBody::ControlSettings(c) => {
                self.control = Some((c.flags, c.depth));
                format!("flags 0x{:x}, depth {}", c.flags, c.depth)
            }
            RecordBody::HeapDumpStart { .. } => "heap dump follows".into(),
            _ => String::new(),
        };
        self.log(format!(
            "{t:>10.3} ms  {name}{}{detail}",
            if detail.is_empty() { "" } else { "  " }
        ));
        Ok(())
    }

    /// A heap dump's sub-records were counted by the caller.
    pub fn heap_dump_summary(&mut self, roots: u64, classes: u64, objects: u64) {
        self.log(format!(
            "             heap dump: {roots} roots, {classes} classes, {objects} objects and arrays"
        ));
    }

    pub fn summary(&self) -> Value {
        json!({
            "id": self.id,
            "kind": self.kind,
            "source": self.source,
            "started": self.started_unix_ms,
            "state": self.state.name(),
            "error": self.error,
            "format": self.format,
            "records": self.records,
            "bytes": self.bytes,
            "threads": self.threads.len(),
            "cpuSections": self.cpu_sections,
            "sitesReports": self.sites_reports,
            "control": self.control.map(|(f, d)| json!({"flags": f, "depth": d})),
        })
    }

    /// CPU view: hot methods (self samples = top kept frame; total =
    /// samples whose stack contains the method) and a flame graph tree,
    /// after the method filter. `top` limits the table rows.
    pub fn cpu_view(&self, filter: &MethodFilter, top: usize) -> Value {
        let Some(cpu) = &self.cpu else {
            return json!({"available": false, "total": 0, "rows": [], "flame": {"n": "all", "v": 0, "c": []}});
        };
        let mut selfs: HashMap<String, u64> = HashMap::new();
        let mut totals: HashMap<String, u64> = HashMap::new();
        let mut root = FlameNode::default();
        let mut kept = 0u64;
        for e in &cpu.entries {
            let count = u64::from(e.count);
            let stack: Vec<String> = match self.stack(e.trace_serial) {
                Some(s) => s,
                None => vec![format!("<trace {} not sent>", e.trace_serial)],
            };
            let stack: Vec<String> = stack.into_iter().filter(|m| filter.keeps(m)).collect();
            if stack.is_empty() {
                continue;
            }
            kept += count;
            *selfs.entry(stack[0].clone()).or_insert(0) += count;
            let mut seen = std::collections::HashSet::new();
            for m in &stack {
                if seen.insert(m.as_str()) {
                    *totals.entry(m.clone()).or_insert(0) += count;
                }
            }
            root.add(stack.iter().rev(), count);
        }
        let mut rows: Vec<(&String, &u64)> = totals.iter().collect();
        rows.sort_by(|a, b| {
            let sa = selfs.get(a.0).copied().unwrap_or(0);
            let sb = selfs.get(b.0).copied().unwrap_or(0);
            sb.cmp(&sa).then(b.1.cmp(a.1)).then(a.0.cmp(b.0))
        });
        let pct = |n: u64| {
            if kept == 0 {
                0.0
            } else {
                (n as f64) * 100.0 / kept as f64
            }
        };
        let table: Vec<Value> = rows
            .iter()
            .take(top)
            .map(|(m, &t)| {
                let s = selfs.get(*m).copied().unwrap_or(0);
                json!({"method": m, "self": s, "selfPct": pct(s), "total": t, "totalPct": pct(t)})
            })
            .collect();
        // Nodes under 1/2000 of the samples are merged into their parent's
        // own width: they would be under a pixel wide and only cost bytes.
        let min = (kept / 2000).max(1);
        json!({
            "available": true,
            "total": cpu.total,
            "kept": kept,
            "methods": rows.len(),
            "rows": table,
            "flame": root.to_json("all", kept, min),
        })
    }

    /// Memory view: ALLOC SITES rows ordered by `sort`, with an optional
    /// class-name substring, `offset`/`limit` paging.
    pub fn sites_view(&self, class: &str, sort: &str, offset: usize, limit: usize) -> Value {
        let Some(s) = &self.sites else {
            return json!({"available": false, "rows": [], "matched": 0});
        };
        let mut rows: Vec<(usize, String)> = s
            .sites
            .iter()
            .enumerate()
            .map(|(i, x)| (i, self.site_class(x.class_serial, x.array_type)))
            .filter(|(_, n)| class.is_empty() || n.contains(class))
            .collect();
        let key = |i: usize| {
            let x = &s.sites[i];
            match sort {
                "objects" => u64::from(x.instances_allocated),
                "live" => u64::from(x.live_bytes),
                "liveObjects" => u64::from(x.live_instances),
                _ => u64::from(x.bytes_allocated),
            }
        };
        rows.sort_by(|a, b| key(b.0).cmp(&key(a.0)).then(a.0.cmp(&b.0)));
        let matched = rows.len();
        let page: Vec<Value> = rows
            .into_iter()
            .skip(offset)
            .take(limit)
            .map(|(i, name)| {
                let x = &s.sites[i];
                json!({
                    "rank": i + 1,
                    "class": name,
                    "trace": x.trace_serial,
                    "site": self.traces.get(&x.trace_serial)
                        .and_then(|t| t.frame_ids.first())
                        .map(|&f| self.frame_with_line(f)),
                    "bytes": x.bytes_allocated,
                    "objects": x.instances_allocated,
                    "liveBytes": x.live_bytes,
                    "liveObjects": x.live_instances,
                })
            })
            .collect();
        json!({
            "available": true,
            "estimated": s.flags & SITES_ESTIMATED != 0,
            "totalLiveBytes": s.total_live_bytes,
            "totalLiveObjects": s.total_live_instances,
            "totalBytes": s.total_bytes_allocated,
            "totalObjects": s.total_instances_allocated,
            "sites": s.sites.len(),
            "matched": matched,
            "offset": offset,
            "rows": page,
        })
    }

    pub fn site_class(&self, serial: u32, array_type: u8) -> String {
        let prim = match array_type {
            4 => "boolean[]",
            5 => "char[]",
            6 => "float[]",
            7 => "double[]",
            8 => "byte[]",
            9 => "short[]",
            10 => "int[]",
            11 => "long[]",
            _ => "",
        };
        if !prim.is_empty() && !self.classes.contains_key(&serial) {
            return prim.into();
        }
        self.class_name(serial)
    }

    pub fn threads_view(&self) -> Value {
        Value::Array(
            self.threads
                .iter()
                .map(|t| {
                    json!({"serial": t.serial, "name": t.name, "group": t.group,
                           "startMs": t.start_ms, "endMs": t.end_ms})
                })
                .collect(),
        )
    }

    /// Console lines after sequence number `since`.
    pub fn console_view(&self, since: u64) -> Value {
        let lines: Vec<Value> = self
            .console
            .iter()
            .filter(|(n, _)| *n > since)
            .map(|(n, l)| json!([n, l]))
            .collect();
        json!({"last": self.console_seq, "lines": lines})
    }
}

#[derive(Default)]
struct FlameNode {
    value: u64,
    children: HashMap<String, FlameNode>,
}

impl FlameNode {
    fn add<'a>(&mut self, mut path: impl Iterator<Item = &'a String>, count: u64) {
        self.value += count;
        if let Some(name) = path.next() {
            self.children
                .entry(name.clone())
                .or_default()
                .add(path, count);
        }
    }

    fn to_json(&self, name: &str, value: u64, min: u64) -> Value {
        let mut kids: Vec<(&String, &FlameNode)> = self
            .children
            .iter()
            .filter(|(_, c)| c.value >= min)
            .collect();
        kids.sort_by(|a, b| a.0.cmp(b.0));
        let c: Vec<Value> = kids
            .into_iter()
            .map(|(n, k)| k.to_json(n, k.value, min))
            .collect();
        json!({"n": name, "v": value, "c": c})
    }
}

/// The thesis's method filter: comma-separated patterns, `!` in front
/// excludes. A pattern that starts with `.` matches anywhere in the name
/// (`!.io.` drops `java.io.X.m`); others match a name's start (`java.`).
/// A frame is kept when no include is given or one include matches, and no
/// exclude matches.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MethodFilter {
    include: Vec<String>,
    exclude: Vec<String>,
}

impl MethodFilter {
    pub fn parse(s: &str) -> Self {
        let mut f = MethodFilter::default();
        for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match p.strip_prefix('!') {
                Some(x) if !x.trim().is_empty() => f.exclude.push(x.trim().to_string()),
                Some(_) => {}
                None => f.include.push(p.to_string()),
            }
        }
        f
    }

    fn matches(p: &str, name: &str) -> bool {
        if p.starts_with('.') {
            name.contains(p)
        } else {
            name.starts_with(p)
        }
    }

    pub fn keeps(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|p| Self::matches(p, name)))
            && !self.exclude.iter().any(|p| Self::matches(p, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::{AllocSite, CpuSample, LoadClass, StartThread};

    fn utf8(s: &mut Session, id: u64, t: &str) {
        s.apply(0, "UTF8", RecordBody::Utf8 { id, text: t.into() })
            .unwrap();
    }

    /// Two classes, three frames, two traces:
    /// trace 1 = Main.main <- Main.hot ; trace 2 = Main.main <- java.io.X.read
    fn sample_session() -> Session {
        let mut s = Session::new(1, "file", "t".into());
        utf8(&mut s, 1, "Main");
        utf8(&mut s, 2, "java.io.X");
        utf8(&mut s, 3, "main");
        utf8(&mut s, 4, "hot");
        utf8(&mut s, 5, "read");
        utf8(&mut s, 6, "Main.java");
        for (serial, name) in [(1, 1), (2, 2)] {
            s.apply(
                0,
                "LOAD CLASS",
                RecordBody::LoadClass(LoadClass {
                    class_serial: serial,
                    class_id: 100 + u64::from(serial),
                    trace_serial: 0,
                    name_id: name,
                }),
            )
            .unwrap();
        }
        for (id, m, c, line) in [(10, 3, 1, 5), (11, 4, 1, 9), (12, 5, 2, -3)] {
            s.apply(
                0,
                "FRAME",
                RecordBody::Frame(Frame {
                    id,
                    method_name_id: m,
                    signature_id: 0,
                    source_file_id: 6,
                    class_serial: c,
                    line,
                }),
            )
            .unwrap();
        }
        for (serial, frames) in [(1, vec![11, 10]), (2, vec![12, 10])] {
            s.apply(
                0,
                "TRACE",
                RecordBody::Trace(Trace {
                    serial,
                    thread_serial: 1,
                    frame_ids: frames,
                }),
            )
            .unwrap();
        }
        s
    }

    fn cpu(s: &mut Session, rows: &[(u32, u32)]) {
        s.apply(
            1000,
            "CPU SAMPLES",
            RecordBody::CpuSamples(CpuSamples {
                total: rows.iter().map(|r| r.0).sum(),
                entries: rows
                    .iter()
                    .map(|&(count, trace_serial)| CpuSample {
                        count,
                        trace_serial,
                    })
                    .collect(),
            }),
        )
        .unwrap();
    }

    #[test]
    fn cpu_view_ranks_self_samples_and_builds_the_flame_tree() {
        let mut s = sample_session();
        cpu(&mut s, &[(75, 1), (25, 2)]);
        let v = s.cpu_view(&MethodFilter::default(), 10);
        assert_eq!(v["kept"], 100);
        assert_eq!(v["rows"][0]["method"], "Main.hot");
        assert_eq!(v["rows"][0]["self"], 75);
        assert_eq!(v["rows"][0]["selfPct"], 75.0);
        assert_eq!(v["rows"][1]["method"], "java.io.X.read");
        // Main.main is on every stack: total 100, self 0.
        assert_eq!(v["rows"][2]["method"], "Main.main");
        assert_eq!(v["rows"][2]["total"], 100);
        assert_eq!(v["rows"][2]["self"], 0);
        let flame = &v["flame"];
        assert_eq!(flame["v"], 100);
        assert_eq!(flame["c"][0]["n"], "Main.main");
        let kids: Vec<(&str, u64)> = flame["c"][0]["c"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| (k["n"].as_str().unwrap(), k["v"].as_u64().unwrap()))
            .collect();
        assert_eq!(kids, vec![("Main.hot", 75), ("java.io.X.read", 25)]);
    }

    #[test]
    fn a_later_cpu_section_replaces_the_earlier_one() {
        let mut s = sample_session();
        cpu(&mut s, &[(1, 1)]);
        cpu(&mut s, &[(5, 2)]);
        let v = s.cpu_view(&MethodFilter::default(), 10);
        assert_eq!(v["kept"], 5);
        assert_eq!(v["rows"][0]["method"], "java.io.X.read");
    }

    #[test]
    fn method_filter_in_the_thesis_syntax() {
        let f = MethodFilter::parse("java., !.io., demo.");
        assert!(f.keeps("java.lang.String.hashCode"));
        assert!(f.keeps("demo.App.run"));
        assert!(!f.keeps("java.io.FileInputStream.read"));
        assert!(!f.keeps("Main.main"));
        assert!(MethodFilter::parse("").keeps("anything"));
        assert!(!MethodFilter::parse("!Main.").keeps("Main.main"));

        let mut s = sample_session();
        cpu(&mut s, &[(75, 1), (25, 2)]);
        // Excluding java.io drops that frame; the sample keeps Main.main
        // as its top frame.
        let v = s.cpu_view(&MethodFilter::parse("!.io."), 10);
        assert_eq!(v["kept"], 100);
        assert_eq!(v["rows"][0]["method"], "Main.hot");
        assert_eq!(v["rows"][1]["method"], "Main.main");
        assert_eq!(v["rows"][1]["self"], 25);
        // Only java.*: the Main-only trace 1 disappears entirely.
        let v = s.cpu_view(&MethodFilter::parse("java."), 10);
        assert_eq!(v["kept"], 25);
        assert_eq!(v["methods"], 1);
    }

    fn site(class_serial: u32, trace_serial: u32, bytes: u32, objects: u32) -> AllocSite {
        AllocSite {
            array_type: 0,
            class_serial,
            trace_serial,
            live_bytes: bytes / 2,
            live_instances: objects / 2,
            bytes_allocated: bytes,
            instances_allocated: objects,
        }
    }

    #[test]
    fn sites_view_sorts_filters_pages_and_marks_estimates() {
        let mut s = sample_session();
        let mut sites: Vec<AllocSite> = (0..100_000).map(|i| site(1, 1, i, 1)).collect();
        sites.push(site(2, 2, 7, 3));
        s.apply(
            0,
            "ALLOC SITES",
            RecordBody::AllocSites(AllocSites {
                flags: SITES_ESTIMATED,
                cutoff_raw: 0,
                total_live_bytes: 1,
                total_live_instances: 1,
                total_bytes_allocated: 2,
                total_instances_allocated: 2,
                sites,
            }),
        )
        .unwrap();
        let start = std::time::Instant::now();
        let v = s.sites_view("", "bytes", 10, 5);
        assert!(start.elapsed().as_secs() < 2, "100 000 rows stay quick");
        assert_eq!(v["estimated"], true);
        assert_eq!(v["matched"], 100_001);
        assert_eq!(v["rows"].as_array().unwrap().len(), 5);
        assert_eq!(v["rows"][0]["bytes"], 99_989);
        let v = s.sites_view("java.io", "objects", 0, 50);
        assert_eq!(v["matched"], 1);
        assert_eq!(v["rows"][0]["class"], "java.io.X");
        assert_eq!(v["rows"][0]["objects"], 3);
        assert_eq!(v["rows"][0]["liveObjects"], 1);
        assert_eq!(v["rows"][0]["site"], "java.io.X.read(Native method)");
    }

    #[test]
    fn threads_and_console_follow_the_records() {
        let mut s = sample_session();
        utf8(&mut s, 20, "worker-1");
        utf8(&mut s, 21, "main");
        s.apply(
            2000,
            "START THREAD",
            RecordBody::StartThread(StartThread {
                thread_serial: 7,
                thread_id: 1,
                trace_serial: 0,
                name_id: 20,
                group_name_id: 21,
                parent_group_name_id: 0,
            }),
        )
        .unwrap();
        s.apply(
            5000,
            "END THREAD",
            RecordBody::EndThread { thread_serial: 7 },
        )
        .unwrap();
        let t = s.threads_view();
        assert_eq!(t[0]["name"], "worker-1");
        assert_eq!(t[0]["startMs"], 2.0);
        assert_eq!(t[0]["endMs"], 5.0);
        let c = s.console_view(0);
        let lines: Vec<&str> = c["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l[1].as_str().unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].contains("START THREAD  thread 7 \"worker-1\""));
        let last = c["last"].as_u64().unwrap();
        assert_eq!(s.console_view(last)["lines"].as_array().unwrap().len(), 0);
        s.fail("bad record".into());
        assert_eq!(s.summary()["state"], "error");
        assert_eq!(s.summary()["error"], "bad record");
    }
}
