//! The tool's session model: one [`Session`] per agent connection,
//! launched program or opened file, fed record by record (binary streams
//! by the crate's strict reader, text streams by [`text`]; [`feed`] reads a
//! whole stream of either), from which the views are built as plain types
//! ([`cpu`], [`memory`], [`heap`], [`monitors`], [`threads`], and the
//! console here). The UI turns them into its JSON; `hprof-rs export` reads
//! a file into a session too.
//!
//! Memory stays bounded: the console keeps the last [`CONSOLE_LINES`]
//! lines, CPU and site views keep only the latest section (CPU SAMPLES are
//! cumulative, docs/socket-protocol.md) plus the two marks, heap dumps are
//! reduced to per-class counts, names are cut at [`MAX_NAME`] bytes, and
//! a session whose names, classes, frames, traces and threads take more
//! than [`MAX_RETAINED`] is stopped with an error.

pub mod cpu;
pub mod feed;
pub mod filter;
pub mod heap;
pub mod memory;
pub mod monitors;
pub mod text;
pub mod threads;
pub mod tree;

use crate::allocated::Allocated;
use crate::format::LostSamples;
use crate::reader::{java_class_name, AllocSites, CpuSamples, Frame, RecordBody, Trace};
use cpu::CpuCache;
use heap::HeapState;
use memory::{Marks, MemCache};
use monitors::Monitors;
use std::collections::{HashMap, VecDeque};

/// Console lines kept per session (older ones are dropped).
pub const CONSOLE_LINES: usize = 5000;
/// Longest name kept (of a class, method, file or thread); a longer one
/// is cut, with `…`. Thousands of threads may share one name: each keeps
/// its copy.
pub const MAX_NAME: usize = 4096;
/// What one session may keep of names, classes, frames, traces and
/// threads, each counted with the maps that hold it: far above a real
/// profile (100 000 traces of depth 16 take some 20 MiB), so that a
/// hostile stream cannot grow the UI.
pub const MAX_RETAINED: u64 = 512 << 20;
pub use crate::format::SITES_ESTIMATED;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Live,
    Ended,
    Failed,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Live => "live",
            State::Ended => "ended",
            State::Failed => "error",
        }
    }
}

/// `s`, cut at [`MAX_NAME`] bytes (at a character) with `…`.
pub fn cut_name(mut s: String) -> String {
    if s.len() > MAX_NAME {
        let mut at = MAX_NAME;
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        s.truncate(at);
        s.push('…');
    }
    s
}

/// Where a session's stream comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An agent that connected to the agents port.
    Listen,
    /// A program started from the Launch form.
    Launch,
    /// A running JVM the agent was loaded into from the Attach form.
    Attach,
    /// A file named on the command line.
    File,
    /// A file sent from the page.
    Upload,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Listen => "listen",
            Kind::Launch => "launch",
            Kind::Attach => "attach",
            Kind::File => "file",
            Kind::Upload => "upload",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ThreadInfo {
    pub serial: u32,
    /// The thread object ID (what CONTROL sampling on/off take); 0 unknown.
    pub object_id: u64,
    pub name: String,
    pub group: String,
    /// When it started, in ms since the agent loaded (`None` in text
    /// streams, whose THREAD START lines carry no time).
    pub start_ms: Option<f64>,
    /// When it ended (`None` while it runs, or in text streams).
    pub end_ms: Option<f64>,
    /// An END THREAD (THREAD END) was seen.
    pub ended: bool,
}

/// The process of a Launch session.
#[derive(Clone, Debug, Default)]
pub struct ProcessInfo {
    pub pid: u32,
    pub argv: Vec<String>,
    pub running: bool,
    /// How it ended (`exit status 0`, `killed by signal 9`, ...).
    pub exit: Option<String>,
}

/// Everything the views need from one stream.
pub struct Session {
    pub id: u32,
    pub kind: Kind,
    /// Peer address, file name or command.
    pub source: String,
    pub started_unix_ms: u64,
    pub state: State,
    pub error: Option<String>,
    /// The binary header's label and identifier size, or "text".
    pub format: String,
    /// True for a text stream (`format=a`).
    pub text: bool,
    pub records: u64,
    pub bytes: u64,
    /// Bumped on every change (the event stream and view caches follow it).
    pub version: u64,
    /// Estimated bytes of the name tables and threads, against
    /// [`MAX_RETAINED`].
    retained: u64,
    pub(crate) strings: HashMap<u64, String>,
    /// class serial -> name string ID
    pub(crate) classes: HashMap<u32, u64>,
    /// class object ID -> name string ID (heap dumps name classes by ID)
    pub(crate) class_ids: HashMap<u64, u64>,
    pub(crate) frames: HashMap<u64, Frame>,
    pub(crate) traces: HashMap<u32, Trace>,
    pub threads: Vec<ThreadInfo>,
    pub(crate) thread_index: HashMap<u32, usize>,
    /// START and END THREAD records seen (the Threads view follows it).
    pub thread_events: u64,
    pub cpu: Option<CpuSamples>,
    /// What the last CPU SAMPLES report says it did not count (the line
    /// or record after it, `format::lost`).
    pub cpu_lost: Option<LostSamples>,
    pub cpu_sections: u32,
    /// CPU TIME sections of a text stream (cpu=times|old: shown on the
    /// console, not in the CPU views).
    pub cpu_time_sections: u32,
    pub(crate) cpu_cache: CpuCache,
    /// The last ALLOC SITES report (the Memory views and their marks).
    pub sites: Option<AllocSites>,
    /// Every report's allocations, takes summed in 64 bits (pprof, JFR).
    pub allocated: Allocated,
    pub sites_reports: u32,
    pub marks: Marks,
    pub(crate) mem_cache: MemCache,
    pub heap: HeapState,
    pub monitors: Monitors,
    pub control: Option<(u32, u16)>,
    console: VecDeque<(u64, String)>,
    console_seq: u64,
    /// Commands sent so far (the serial of the next one).
    pub commands_sent: u32,
    pub process: Option<ProcessInfo>,
    /// The JVM an Attach session loaded the agent into (the page's Stop
    /// ends that profile there).
    pub attached_pid: Option<u32>,
    /// When the stream's sections were written (binary streams: the
    /// header's time and the records' offsets), for the exports.
    pub times: Times,
}

/// A frame's parts, as formats that name methods by their parts take them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameParts {
    pub class: String,
    pub method: String,
    pub descriptor: Option<String>,
    pub line: i32,
}

/// When a binary stream's sections were written.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Times {
    /// The header's time, ms since the epoch (0: unknown, a text stream).
    pub start_ms: u64,
    /// The latest CPU SAMPLES and ALLOC SITES records' times, and the
    /// latest record's: µs from the start.
    pub cpu_us: u64,
    pub sites_us: u64,
    pub end_us: u64,
}

impl Session {
    pub fn new(id: u32, kind: Kind, source: String) -> Self {
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
            text: false,
            records: 0,
            bytes: 0,
            version: 0,
            retained: 0,
            strings: HashMap::new(),
            classes: HashMap::new(),
            class_ids: HashMap::new(),
            frames: HashMap::new(),
            traces: HashMap::new(),
            threads: Vec::new(),
            thread_index: HashMap::new(),
            thread_events: 0,
            cpu: None,
            cpu_lost: None,
            cpu_sections: 0,
            cpu_time_sections: 0,
            cpu_cache: CpuCache::default(),
            sites: None,
            allocated: Allocated::default(),
            sites_reports: 0,
            marks: Marks::default(),
            mem_cache: MemCache::default(),
            heap: HeapState::default(),
            monitors: Monitors::default(),
            control: None,
            console: VecDeque::new(),
            console_seq: 0,
            commands_sent: 0,
            process: None,
            attached_pid: None,
            times: Times::default(),
        }
    }

    pub fn log(&mut self, line: String) {
        self.console_seq += 1;
        self.version += 1;
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

    /// Count `bytes` (and the maps' overhead) kept for this session.
    pub(crate) fn keep(&mut self, bytes: usize) -> Result<(), String> {
        self.grow(bytes as u64 + 64)
    }

    /// Count a definition that replaces one of `old` bytes (`None`: a new
    /// one) with one of `new`: only what it adds. A stream that defines
    /// the same names again (each VM dump announces every class) costs
    /// once.
    fn keep_again(&mut self, old: Option<usize>, new: usize) -> Result<(), String> {
        match old {
            None => self.keep(new),
            Some(old) => self.grow(new.saturating_sub(old) as u64),
        }
    }

    fn grow(&mut self, bytes: u64) -> Result<(), String> {
        self.retained += bytes;
        if self.retained > MAX_RETAINED {
            return Err(format!(
                "the stream defines more than {} MiB of names, frames, traces, threads and sites: \
                 stopped to bound the UI's memory",
                MAX_RETAINED >> 20
            ));
        }
        Ok(())
    }

    pub(crate) fn string(&self, id: u64) -> &str {
        self.strings.get(&id).map_or("?", String::as_str)
    }

    pub fn class_name(&self, serial: u32) -> String {
        self.java_name(self.classes.get(&serial), || {
            format!("<class serial {serial}>")
        })
    }

    /// The name of a class by its object ID (heap dumps).
    pub fn class_name_by_id(&self, id: u64) -> String {
        self.java_name(self.class_ids.get(&id), || {
            format!("<unknown class 0x{id:x}>")
        })
    }

    /// The Java name of the class named by string `name_id`, else `unknown()`.
    fn java_name(&self, name_id: Option<&u64>, unknown: impl FnOnce() -> String) -> String {
        name_id
            .and_then(|n| self.strings.get(n))
            .map_or_else(unknown, |n| java_class_name(n))
    }

    /// A frame's class, method name, method descriptor (the file's
    /// signature when it is one) and line (> 0 when known, else 0).
    pub fn frame_parts(&self, id: u64) -> Option<FrameParts> {
        let f = self.frames.get(&id)?;
        Some(FrameParts {
            class: self.class_name(f.class_serial),
            method: self.string(f.method_name_id).to_string(),
            descriptor: self
                .strings
                .get(&f.signature_id)
                .filter(|d| d.starts_with('(') && d.contains(')'))
                .cloned(),
            line: f.line.max(0),
        })
    }

    /// The name of thread `serial` when a THREAD START gave one.
    pub fn known_thread_name(&self, serial: u32) -> Option<&str> {
        self.thread_index
            .get(&serial)
            .map(|&i| self.threads[i].name.as_str())
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
    pub fn frame_with_line(&self, id: u64) -> String {
        let (label, Some((file, line))) = self.frame_place(id) else {
            return self.frame_label(id);
        };
        let file = file.map_or("Unknown", String::as_str);
        match line {
            n if n > 0 => format!("{label}({file}:{n})"),
            -2 => format!("{label}(Compiled method)"),
            -3 => format!("{label}(Native method)"),
            _ => format!("{label}({file})"),
        }
    }

    /// A frame as a text report prints it in a TRACE:
    /// `pkg.Class.method(File.java:12)`, `(<Unknown Source>:Native method)`...
    pub fn frame_as_reported(&self, id: u64) -> String {
        let (label, Some((file, line))) = self.frame_place(id) else {
            return self.frame_label(id);
        };
        let file = file
            .filter(|s| !s.is_empty())
            .map_or("<Unknown Source>", String::as_str);
        match line {
            n if n >= 0 => format!("{label}({file}:{n})"),
            -2 => format!("{label}({file}:Compiled method)"),
            -3 => format!("{label}({file}:Native method)"),
            _ => format!("{label}({file}:Unknown line)"),
        }
    }

    /// A frame's label, and its source file (when named) and line when
    /// the frame is known.
    fn frame_place(&self, id: u64) -> (String, Option<(Option<&String>, i32)>) {
        let label = self.frame_label(id);
        let place = self
            .frames
            .get(&id)
            .map(|f| (self.strings.get(&f.source_file_id), f.line));
        (label, place)
    }

    /// Where a frame's source is, for the source view: class name, source
    /// file name and line (> 0), when all are known.
    pub fn frame_src(&self, id: u64) -> Option<SourceAt> {
        let f = self.frames.get(&id)?;
        let file = self.strings.get(&f.source_file_id)?;
        (f.line > 0 && !file.is_empty()).then(|| SourceAt {
            class: self.class_name(f.class_serial),
            file: file.clone(),
            line: f.line,
        })
    }

    /// Frame IDs of a trace, top of stack first.
    pub fn trace_frames(&self, serial: u32) -> Option<&[u64]> {
        self.traces.get(&serial).map(|t| t.frame_ids.as_slice())
    }

    /// The thread a trace belongs to (0 without `thread=y`).
    pub fn trace_thread(&self, serial: u32) -> u32 {
        self.traces.get(&serial).map_or(0, |t| t.thread_serial)
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

    /// Top-first frames with lines, for tables that show a trace.
    pub fn stack_with_lines(&self, serial: u32) -> Vec<String> {
        self.traces.get(&serial).map_or_else(Vec::new, |t| {
            t.frame_ids
                .iter()
                .map(|&f| self.frame_with_line(f))
                .collect()
        })
    }

    pub fn thread_name(&self, serial: u32) -> String {
        match self.thread_index.get(&serial) {
            Some(&i) => self.threads[i].name.clone(),
            None => format!("thread {serial}"),
        }
    }

    /// Take one record in and log it on the console. Errors end the
    /// session (the caller calls [`Session::fail`]).
    pub fn apply(&mut self, time_us: u32, name: &str, body: RecordBody) -> Result<(), String> {
        let t = f64::from(time_us) / 1000.0;
        let us = u64::from(time_us);
        self.times.end_us = self.times.end_us.max(us);
        match &body {
            RecordBody::CpuSamples(_) => self.times.cpu_us = us,
            RecordBody::AllocSites(_) => self.times.sites_us = us,
            _ => {}
        }
        if let Some(detail) = self.take(t, body)? {
            self.log(format!(
                "{t:>10.3} ms  {name}{}{detail}",
                if detail.is_empty() { "" } else { "  " }
            ));
        }
        Ok(())
    }

    /// Take one record in; the console line's detail, or None for records
    /// not worth a line (names, classes, frames, traces, heap segments).
    pub fn take(&mut self, t: f64, body: RecordBody) -> Result<Option<String>, String> {
        self.records += 1;
        self.version += 1;
        let detail = match body {
            RecordBody::Utf8 { id, text } => {
                if let Some(lost) = LostSamples::parse(&text) {
                    self.cpu_lost = Some(lost);
                    return Ok(Some(cut_name(text)));
                }
                let text = cut_name(text);
                let old = self.strings.get(&id).map(String::len);
                self.keep_again(old, text.len())?;
                self.strings.insert(id, text);
                return Ok(None);
            }
            RecordBody::LoadClass(c) => {
                let old = self.class_ids.contains_key(&c.class_id)
                    && self.classes.contains_key(&c.class_serial);
                self.keep_again(old.then_some(32), 32)?;
                self.classes.insert(c.class_serial, c.name_id);
                self.class_ids.insert(c.class_id, c.name_id);
                return Ok(None);
            }
            RecordBody::Frame(f) => {
                let size = std::mem::size_of::<Frame>();
                let old = self.frames.contains_key(&f.id).then_some(size);
                self.keep_again(old, size)?;
                self.frames.insert(f.id, f);
                return Ok(None);
            }
            RecordBody::Trace(tr) => {
                let cost = |t: &Trace| 8 * t.frame_ids.len() + 32;
                let old = self.traces.get(&tr.serial).map(cost);
                self.keep_again(old, cost(&tr))?;
                self.traces.insert(tr.serial, tr);
                return Ok(None);
            }
            RecordBody::UnloadClass { class_serial } => format!("class serial {class_serial}"),
            RecordBody::StartThread(s) => {
                let (name, group) = (self.string(s.name_id), self.string(s.group_name_id));
                self.keep(name.len() + group.len() + std::mem::size_of::<ThreadInfo>())?;
                let info = ThreadInfo {
                    serial: s.thread_serial,
                    object_id: s.thread_id,
                    name: self.string(s.name_id).to_string(),
                    group: self.string(s.group_name_id).to_string(),
                    start_ms: (!self.text).then_some(t),
                    end_ms: None,
                    ended: false,
                };
                self.thread_events += 1;
                let line = format!("thread {} \"{}\"", info.serial, info.name);
                self.thread_index
                    .insert(s.thread_serial, self.threads.len());
                self.threads.push(info);
                line
            }
            RecordBody::EndThread { thread_serial } => {
                self.thread_events += 1;
                if let Some(&i) = self.thread_index.get(&thread_serial) {
                    self.threads[i].end_ms = (!self.text).then_some(t);
                    self.threads[i].ended = true;
                    format!("thread {thread_serial} \"{}\"", self.threads[i].name)
                } else {
                    format!("thread {thread_serial} (never started)")
                }
            }
            RecordBody::CpuSamples(c) => {
                let line = format!("total {} samples in {} traces", c.total, c.entries.len());
                self.cpu = Some(c);
                self.cpu_lost = None;
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
                self.sites_reports += 1;
                let mark = self.marks.take_report(&s, self.sites_reports, t);
                // A take's new sites stay in the sum: bounded as names are.
                let new_sites = self.allocated.add(s.clone());
                self.keep(new_sites * Allocated::SITE_BYTES)?;
                self.sites = Some(s);
                match mark {
                    Some(m) => format!("{line}; taken as the {m} mark"),
                    None => line,
                }
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
            RecordBody::HeapDumpStart { segment } => {
                self.heap.start(segment, t);
                if segment && self.heap.segments_open() > 1 {
                    return Ok(None); // one line per dump, not per segment
                }
                "heap dump follows".into()
            }
            RecordBody::HeapDumpEnd => {
                self.heap.end_segments();
                String::new()
            }
            _ => String::new(),
        };
        Ok(Some(detail))
    }

    /// A line of the program's own output (Launch sessions) or of a text
    /// stream, kept for the console as it is.
    pub fn log_raw(&mut self, line: String) {
        self.log(line);
    }

    /// The sequence number of the last console line.
    pub fn console_last(&self) -> u64 {
        self.console_seq
    }

    /// Console lines after sequence number `since`.
    pub fn console_view(&self, since: u64) -> ConsoleView {
        ConsoleView {
            last: self.console_seq,
            lines: self
                .console
                .iter()
                .filter(|(n, _)| *n > since)
                .cloned()
                .collect(),
        }
    }
}

/// Where a frame's source is: its class, source file name and line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceAt {
    pub class: String,
    pub file: String,
    pub line: i32,
}

/// Console lines with their sequence numbers, and the last number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsoleView {
    pub last: u64,
    pub lines: Vec<(u64, String)>,
}

#[cfg(any(test, feature = "testing"))]
pub mod testing;

#[cfg(test)]
mod tests {
    use super::testing::{self, cpu, sample_session, utf8};
    use super::*;
    use crate::reader::StartThread;

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
                thread_id: 0x5000_0001,
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
        cpu(&mut s, &[(75, 1), (25, 2)]);
        let v = s.threads_view();
        assert!(v.per_thread_samples);
        let t = &v.threads;
        let worker = &t[0].thread;
        assert_eq!(worker.name, "worker-1");
        assert_eq!(worker.object_id, 0x5000_0001u64);
        assert_eq!((worker.start_ms, worker.end_ms), (Some(2.0), Some(5.0)));
        assert!(worker.ended && t[0].started);
        // What each thread was doing, from the per-thread traces.
        assert_eq!(t[0].samples, 75);
        assert_eq!(t[0].top, [("Main.hot".to_string(), 75)]);
        assert_eq!(
            t[1].thread.name, "thread 8",
            "a thread known only from samples"
        );
        assert!(!t[1].started);
        assert_eq!(t[1].top[0].0, "java.io.X.read");
        let c = s.console_view(0);
        let lines: Vec<&str> = c.lines.iter().map(|l| l.1.as_str()).collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].contains("START THREAD  thread 7 \"worker-1\""));
        assert_eq!(c.last, s.console_last());
        assert!(s.console_view(c.last).lines.is_empty());
        s.fail("bad record".into());
        assert_eq!(s.state, State::Failed);
        assert_eq!(s.error.as_deref(), Some("bad record"));
    }

    #[test]
    fn frames_print_for_the_page_and_as_the_text_report_does() {
        let s = sample_session();
        assert_eq!(s.frame_with_line(11), "Main.hot(Main.java:9)");
        assert_eq!(s.frame_as_reported(11), "Main.hot(Main.java:9)");
        assert_eq!(s.frame_with_line(12), "java.io.X.read(Native method)");
        assert_eq!(
            s.frame_as_reported(12),
            "java.io.X.read(Main.java:Native method)"
        );
        assert_eq!(s.frame_as_reported(99), "<unknown frame 0x63>");
        // A text report's frames print back as they were written.
        let (t, res) = testing::from_text(testing::TEXT_REPORT);
        res.unwrap();
        let top = |serial| t.trace_frames(serial).unwrap()[0];
        assert_eq!(
            t.frame_as_reported(top(300001)),
            "Contention.blockOnHot(Contention.java:47)"
        );
        assert_eq!(
            t.frame_as_reported(top(300002)),
            "java.lang.Object.wait(Object.java:Native method)"
        );
    }

    #[test]
    fn the_console_keeps_only_the_last_lines() {
        let mut s = Session::new(1, Kind::File, "t".into());
        for i in 0..CONSOLE_LINES + 10 {
            s.log_raw(format!("line {i}"));
        }
        let c = s.console_view(0);
        assert_eq!(c.lines.len(), CONSOLE_LINES);
        assert_eq!(c.lines[0].1, "line 10");
    }

    #[test]
    fn names_are_cut_and_counted_once() {
        let mut s = Session::new(1, Kind::File, "t".into());
        utf8(&mut s, 1, &"x".repeat(1 << 20));
        assert_eq!(s.string(1).len(), MAX_NAME + '…'.len_utf8());
        let once = s.retained;
        for _ in 0..1000 {
            utf8(&mut s, 1, &"x".repeat(MAX_NAME));
        }
        assert_eq!(s.retained, once);
        utf8(&mut s, 2, &"y".repeat(MAX_NAME));
        assert_eq!(
            s.retained,
            once + (MAX_NAME + 64) as u64,
            "a new name counts"
        );
        s.retained = MAX_RETAINED - 10;
        let e = s
            .take(
                0.0,
                RecordBody::Utf8 {
                    id: 3,
                    text: "z".repeat(100),
                },
            )
            .unwrap_err();
        assert!(e.contains("more than 512 MiB"), "{e}");
    }
}
