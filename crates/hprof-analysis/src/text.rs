//! The one reader of the text report (`format=a`): its lines, one at a
//! time, each as an [`Event`] of plain values. `hprof-rs flame` and
//! `sites` on a text file and the UI's text sessions all read through it,
//! so what a TRACE, a CPU row or a SITES row is is decided once.
//!
//! Streaming: a line is read (at most [`MAX_LINE`] bytes), turned into
//! its event and given out; nothing of a section is kept here but its
//! kind, so memory stays bounded whatever the input. What a reader keeps
//! of the events (names, stacks, rows) it bounds itself.
//!
//! Strict: a line of a known section that does not parse is an error
//! naming the line. Lines outside the known sections are
//! [`Event::Line`]; sections only shown whole (HEAP DUMP, ...) give
//! [`Event::OtherBegin`], their lines [`Event::Skipped`], then
//! [`Event::OtherEnd`]. The explanatory header after the first line (its
//! legend looks like records: "TRACE           A stack trace: ...") is
//! [`Event::Header`] up to its line of dashes or the first line that can
//! only be a record (reports without one, cpu=old's, start with records).

use crate::format::LostSamples;
use crate::lines::read_line;
use std::io::BufRead;

pub use crate::lines::MAX_LINE;

/// How a text report starts (its first line).
pub const TEXT_START: &str = "JAVA PROFILE 1.0.1, created";

/// What a CPU section counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuKind {
    /// CPU SAMPLES (`cpu=samples`): the count column is samples.
    Samples,
    /// CPU TIME (ms) (`cpu=times`, `cpu=old`): the count column is calls,
    /// the self column the share of the section's total time.
    Time,
}

impl CpuKind {
    fn title(self) -> &'static str {
        match self {
            CpuKind::Samples => "CPU SAMPLES",
            CpuKind::Time => "CPU TIME (ms)",
        }
    }
}

/// `rank self accum count trace method` of a CPU section.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuRow {
    /// The self column, in percent.
    pub self_pct: f64,
    pub count: u64,
    pub trace: u32,
}

/// `rank self accum live-bytes live-objs bytes objs trace class` of SITES.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SiteRow<'a> {
    pub live_bytes: u64,
    pub live_objs: u64,
    pub alloc_bytes: u64,
    pub alloc_objs: u64,
    pub trace: u32,
    pub class: &'a str,
}

/// `THREAD START (obj=..., id = ..., name="...", group="...")`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadStart<'a> {
    pub object_id: u64,
    pub serial: u32,
    pub name: &'a str,
    pub group: &'a str,
}

/// `rank self accum count trace CLASS (Java)` of MONITOR TIME.
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorRow {
    /// Share of the section's total time, 0..1.
    pub ratio: f64,
    /// Contended entries since the start.
    pub count: u64,
    pub trace: u32,
    pub class: String,
}

/// `THREAD n, trace t, status: S` of MONITOR DUMP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpThread {
    pub serial: u32,
    pub trace: u32,
    pub status: String,
}

/// One line of a text report.
#[derive(Clone, Debug, PartialEq)]
pub enum Event<'a> {
    /// The first line, `JAVA PROFILE 1.0.1, created ...`.
    Start,
    /// A line of the explanatory header.
    Header,
    /// A line that carries nothing: a table's heading, `<empty>` in a
    /// TRACE, a line inside a section only shown whole.
    Skipped,
    /// A line outside any known section (messages, blank lines).
    Line,
    /// `TRACE n: (thread=t)`; its frames follow, then [`Event::TraceEnd`].
    TraceBegin {
        serial: u32,
        thread: u32,
    },
    /// `pkg.Class.method(File.java:12)` (see [`frame_parts`]).
    Frame(&'a str),
    /// Given before the line after the last frame (the same line is given
    /// again next, as its own event), or at the end of the input.
    TraceEnd,
    ThreadStart(ThreadStart<'a>),
    ThreadEnd {
        serial: u32,
    },
    /// `CPU SAMPLES BEGIN (total = n)` or `CPU TIME (ms) BEGIN (total = ms)`.
    CpuBegin {
        kind: CpuKind,
        total: f64,
    },
    CpuRow(CpuRow),
    CpuEnd(CpuKind),
    /// The line after CPU SAMPLES about the samples it does not count.
    Lost(LostSamples),
    SitesBegin {
        estimated: bool,
        /// Allocations since the previous such report (`SITES_TAKEN`).
        taken: bool,
    },
    SiteRow(SiteRow<'a>),
    SitesEnd,
    MonitorTimeBegin {
        total_ms: u64,
    },
    MonitorTimeRow(MonitorRow),
    MonitorTimeEnd,
    MonitorDumpBegin,
    DumpThread(DumpThread),
    /// `MONITOR Lpkg/Class;` in a dump: the class, Java style.
    DumpMonitor(String),
    /// The last monitor's `owner: thread n, entry count: c`.
    DumpOwner {
        owner: u32,
        entry_count: u32,
    },
    /// The last monitor's `waiting to enter:` threads.
    DumpWaitingToEnter(Vec<u32>),
    /// The last monitor's `waiting to be notified:` threads.
    DumpWaitingToBeNotified(Vec<u32>),
    MonitorDumpEnd,
    /// `WAIT: MONITOR Lpkg/Class;, timeout=ms, thread n`.
    Wait {
        class: String,
        thread: u32,
        timeout: u64,
    },
    /// `WAITED: MONITOR Lpkg/Class;, time_waited=ms, thread n`.
    Waited {
        class: String,
        thread: u32,
        ms: u64,
    },
    /// `TITLE BEGIN ...` of a section only shown whole (HEAP DUMP, ...).
    OtherBegin {
        title: &'a str,
    },
    /// Its `TITLE END` line.
    OtherEnd,
}

/// A line, its number (from 1) and what it is.
#[derive(Debug)]
pub struct Line<'a> {
    pub number: u64,
    pub text: &'a str,
    pub event: Event<'a>,
}

/// Why the report could not be read.
#[derive(Debug)]
pub enum TextError {
    /// The input failed, or a line is longer than [`MAX_LINE`].
    Io(std::io::Error),
    /// A line of a known section does not parse.
    Line { number: u64, what: String },
    /// The input ends inside a section (not a TRACE, not one shown whole).
    EndsInside(&'static str),
}

impl std::fmt::Display for TextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TextError::Io(e) => write!(f, "{e}"),
            TextError::Line { number, what } => write!(f, "line {number}: {what}"),
            TextError::EndsInside(title) => {
                write!(f, "the text stream ends inside a section ({title})")
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Section {
    None,
    Trace,
    Cpu(CpuKind),
    Sites,
    MonitorTime,
    /// Whether a MONITOR line came (owner and waiter lines need one).
    MonitorDump {
        monitor: bool,
    },
    /// A section only shown whole: the line that ends it.
    Other(String),
}

/// What is known between lines.
struct State {
    section: Section,
    number: u64,
    header: bool,
    /// The current line ended a TRACE: give it again as its own event.
    replay: bool,
}

/// The text report of `r`, one [`Line`] at a time.
pub struct TextReader<R> {
    r: R,
    text: String,
    bytes: u64,
    st: State,
}

impl<R: BufRead> TextReader<R> {
    pub fn new(r: R) -> Self {
        TextReader {
            r,
            text: String::new(),
            bytes: 0,
            st: State {
                section: Section::None,
                number: 0,
                header: false,
                replay: false,
            },
        }
    }

    /// Bytes read so far (each line with one byte for its newline).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The next line, or `None` at the end of the input.
    #[allow(clippy::should_implement_trait)] // its items borrow the reader
    pub fn next(&mut self) -> Result<Option<Line<'_>>, TextError> {
        if !std::mem::take(&mut self.st.replay) {
            let mut buf = std::mem::take(&mut self.text).into_bytes();
            let more = read_line(&mut self.r, &mut buf).map_err(TextError::Io)?;
            if !more {
                return match std::mem::replace(&mut self.st.section, Section::None) {
                    Section::Trace => Ok(Some(Line {
                        number: self.st.number,
                        text: "",
                        event: Event::TraceEnd,
                    })),
                    Section::None | Section::Other(_) => Ok(None),
                    Section::Cpu(k) => Err(TextError::EndsInside(k.title())),
                    Section::Sites => Err(TextError::EndsInside("SITES")),
                    Section::MonitorTime => Err(TextError::EndsInside("MONITOR TIME")),
                    Section::MonitorDump { .. } => Err(TextError::EndsInside("MONITOR DUMP")),
                };
            }
            self.bytes += buf.len() as u64 + 1;
            self.st.number += 1;
            self.text = match String::from_utf8(buf) {
                Ok(s) => s,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            };
        }
        let number = self.st.number;
        let text = self.text.as_str();
        let event = step(&mut self.st, text).map_err(|what| TextError::Line { number, what })?;
        Ok(Some(Line {
            number,
            text,
            event,
        }))
    }
}

fn step<'a>(st: &mut State, l: &'a str) -> Result<Event<'a>, String> {
    if st.number == 1 && l.starts_with(TEXT_START) {
        st.header = true;
        return Ok(Event::Start);
    }
    if st.header {
        if l == "--------" {
            st.header = false;
            return Ok(Event::Header);
        }
        if !looks_like_record(l) {
            return Ok(Event::Header);
        }
        st.header = false;
    }
    match std::mem::replace(&mut st.section, Section::None) {
        Section::None => outside(st, l),
        Section::Trace => match l.strip_prefix('\t') {
            Some(f) => {
                st.section = Section::Trace;
                Ok(if f == "<empty>" {
                    Event::Skipped
                } else {
                    Event::Frame(f)
                })
            }
            None => {
                st.replay = true;
                Ok(Event::TraceEnd)
            }
        },
        Section::Cpu(kind) => {
            if l.strip_prefix(kind.title())
                .is_some_and(|r| r.starts_with(" END"))
            {
                return Ok(Event::CpuEnd(kind));
            }
            st.section = Section::Cpu(kind);
            if l.starts_with("rank") {
                return Ok(Event::Skipped);
            }
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() < 6 {
                return Err(format!("malformed {} row {:?}", kind.title(), truncate(l)));
            }
            Ok(Event::CpuRow(CpuRow {
                self_pct: num(w[1].trim_end_matches('%'), "percentage")?,
                count: num(w[3], "count")?,
                trace: num(w[4], "trace")?,
            }))
        }
        Section::Sites => {
            if l.starts_with("SITES END") {
                return Ok(Event::SitesEnd);
            }
            st.section = Section::Sites;
            let t = l.trim_start();
            if t.starts_with("percent") || t.starts_with("rank") {
                return Ok(Event::Skipped);
            }
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() < 9 {
                return Err(format!("malformed SITES row {:?}", truncate(l)));
            }
            Ok(Event::SiteRow(SiteRow {
                live_bytes: num(w[3], "live bytes")?,
                live_objs: num(w[4], "live objects")?,
                alloc_bytes: num(w[5], "allocated bytes")?,
                alloc_objs: num(w[6], "allocated objects")?,
                trace: num(w[7], "trace")?,
                class: after_words(l, 8),
            }))
        }
        Section::MonitorTime => {
            if l.starts_with("MONITOR TIME END") {
                return Ok(Event::MonitorTimeEnd);
            }
            st.section = Section::MonitorTime;
            if l.starts_with("rank ") {
                return Ok(Event::Skipped);
            }
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() < 7 || w[w.len() - 1] != "(Java)" {
                return Err(format!("malformed MONITOR TIME row {:?}", truncate(l)));
            }
            let pct: f64 = num(w[1].trim_end_matches('%'), "percentage")?;
            Ok(Event::MonitorTimeRow(MonitorRow {
                ratio: pct / 100.0,
                count: num(w[3], "count")?,
                trace: num(w[4], "trace")?,
                class: w[5..w.len() - 1].join(" "),
            }))
        }
        Section::MonitorDump { monitor } => {
            if l.starts_with("MONITOR DUMP END") {
                return Ok(Event::MonitorDumpEnd);
            }
            let e = dump_line(l, monitor)?;
            st.section = Section::MonitorDump {
                monitor: monitor || matches!(e, Event::DumpMonitor(_)),
            };
            Ok(e)
        }
        Section::Other(end) => {
            if l.starts_with(&end) {
                return Ok(Event::OtherEnd);
            }
            st.section = Section::Other(end);
            Ok(Event::Skipped)
        }
    }
}

/// A line outside any section.
fn outside<'a>(st: &mut State, l: &'a str) -> Result<Event<'a>, String> {
    if let Some(lost) = LostSamples::parse(l) {
        return Ok(Event::Lost(lost));
    }
    if let Some(rest) = l.strip_prefix("TRACE ") {
        let (serial, after) = rest
            .split_once(':')
            .ok_or_else(|| format!("malformed TRACE line {:?}", truncate(l)))?;
        let thread = match after.split_once("(thread=") {
            Some((_, t)) => num(t.split(')').next().unwrap_or(""), "thread")?,
            None => 0,
        };
        let serial = num(serial, "trace serial")?;
        st.section = Section::Trace;
        return Ok(Event::TraceBegin { serial, thread });
    }
    if let Some(rest) = l.strip_prefix("THREAD START (") {
        return thread_start(rest)
            .ok_or_else(|| format!("malformed THREAD START line {:?}", truncate(l)))?;
    }
    if let Some(rest) = l.strip_prefix("THREAD END (id = ") {
        let serial = num(rest.trim_end_matches(')'), "thread id")?;
        return Ok(Event::ThreadEnd { serial });
    }
    for kind in [CpuKind::Samples, CpuKind::Time] {
        if l.strip_prefix(kind.title())
            .is_some_and(|r| r.starts_with(" BEGIN"))
        {
            let total = l
                .split_once("(total = ")
                .and_then(|(_, r)| r.split(')').next())
                .ok_or_else(|| format!("{} section without its total", kind.title()))?;
            let total = match kind {
                CpuKind::Samples => num::<u64>(total, "total")? as f64,
                CpuKind::Time => num(total, "total")?,
            };
            st.section = Section::Cpu(kind);
            return Ok(Event::CpuBegin { kind, total });
        }
    }
    if l.starts_with("SITES BEGIN") {
        st.section = Section::Sites;
        return Ok(Event::SitesBegin {
            estimated: l.contains("estimated from samples"),
            taken: l.contains("allocations since the previous report"),
        });
    }
    if let Some(rest) = l.strip_prefix("MONITOR TIME BEGIN (total = ") {
        let total = rest.split(" ms)").next().unwrap_or("");
        let total_ms = num(total, "total")?;
        st.section = Section::MonitorTime;
        return Ok(Event::MonitorTimeBegin { total_ms });
    }
    if l.starts_with("MONITOR DUMP BEGIN") {
        st.section = Section::MonitorDump { monitor: false };
        return Ok(Event::MonitorDumpBegin);
    }
    if let Some(rest) = l.strip_prefix("WAIT: MONITOR ") {
        let bad = || format!("malformed WAIT line {:?}", truncate(l));
        let (sig, rest) = rest.rsplit_once(", timeout=").ok_or_else(bad)?;
        let (timeout, thread) = rest.split_once(", thread ").ok_or_else(bad)?;
        return Ok(Event::Wait {
            class: class_of_sig(sig),
            thread: num(thread, "thread")?,
            timeout: num(timeout, "timeout")?,
        });
    }
    if let Some(rest) = l.strip_prefix("WAITED: MONITOR ") {
        let bad = || format!("malformed WAITED line {:?}", truncate(l));
        let (sig, rest) = rest.rsplit_once(", time_waited=").ok_or_else(bad)?;
        let (ms, thread) = rest.split_once(", thread ").ok_or_else(bad)?;
        return Ok(Event::Waited {
            class: class_of_sig(sig),
            thread: num(thread, "thread")?,
            ms: num(ms, "time waited")?,
        });
    }
    if let Some(title) = l
        .strip_suffix(" BEGIN")
        .or_else(|| l.split(" BEGIN ").next().filter(|_| l.contains(" BEGIN ")))
    {
        st.section = Section::Other(format!("{title} END"));
        return Ok(Event::OtherBegin { title });
    }
    Ok(Event::Line)
}

/// `obj=..., id = ..., name="...", group="...")`; `None` when malformed.
fn thread_start(rest: &str) -> Option<Result<Event<'_>, String>> {
    let field = |k: &str| -> Option<&str> {
        let i = rest.find(k)? + k.len();
        Some(&rest[i..])
    };
    let obj = field("obj=")
        .and_then(|x| x.split(',').next())
        .unwrap_or("0");
    let serial = field("id = ")
        .and_then(|x| x.split(',').next())
        .unwrap_or("");
    // Names may hold quotes and commas: the group is after the last
    // `", group="`.
    let (a, g) = rest.rsplit_once("\", group=\"")?;
    let name = a.split_once("name=\"").map_or("", |x| x.1);
    let group = g.strip_suffix("\")").unwrap_or(g);
    Some((|| {
        Ok(Event::ThreadStart(ThreadStart {
            serial: num(serial, "thread id")?,
            object_id: u64::from_str_radix(obj.trim(), 16)
                .map_err(|_| format!("bad thread object {obj:?}"))?,
            name,
            group,
        }))
    })())
}

fn dump_line(l: &str, monitor: bool) -> Result<Event<'static>, String> {
    let t = l.trim();
    let bad = || format!("malformed MONITOR DUMP line {:?}", truncate(l));
    let need_monitor = || if monitor { Ok(()) } else { Err(bad()) };
    if let Some(rest) = t.strip_prefix("THREAD ") {
        // THREAD 200001, trace 300001, status: R
        let (serial, rest) = rest.split_once(", trace ").ok_or_else(bad)?;
        let (trace, status) = rest.split_once(", status: ").ok_or_else(bad)?;
        Ok(Event::DumpThread(DumpThread {
            serial: num(serial, "thread")?,
            trace: num(trace, "trace")?,
            status: status.to_string(),
        }))
    } else if let Some(sig) = t.strip_prefix("MONITOR ") {
        Ok(Event::DumpMonitor(class_of_sig(sig)))
    } else if let Some(rest) = t.strip_prefix("owner: thread ") {
        need_monitor()?;
        let (owner, count) = rest.split_once(", entry count: ").ok_or_else(bad)?;
        Ok(Event::DumpOwner {
            owner: num(owner, "owner")?,
            entry_count: num(count, "entry count")?,
        })
    } else if let Some(rest) = t.strip_prefix("waiting to enter:") {
        need_monitor()?;
        Ok(Event::DumpWaitingToEnter(threads(rest)?))
    } else if let Some(rest) = t.strip_prefix("waiting to be notified:") {
        need_monitor()?;
        Ok(Event::DumpWaitingToBeNotified(threads(rest)?))
    } else if t.is_empty() {
        Ok(Event::Skipped)
    } else {
        Err(bad())
    }
}

/// ` thread 1, thread 2` -> [1, 2]
fn threads(s: &str) -> Result<Vec<u32>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| num(x.strip_prefix("thread ").unwrap_or(x), "thread"))
        .collect()
}

/// The parts of a frame line: `pkg.Class.method(File.java:12)`, or with
/// `Compiled method`, `Native method` or `Unknown line` for its line
/// (-2, -3, -1), or `<Unknown Source>` for its file (`None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameParts<'a> {
    pub class: &'a str,
    pub method: &'a str,
    pub file: Option<&'a str>,
    pub line: i32,
}

/// The parts of a frame line, or what is wrong with it.
pub fn frame_parts(text: &str) -> Result<FrameParts<'_>, String> {
    let (head, tail) = text
        .rsplit_once('(')
        .ok_or_else(|| format!("frame without a source part: {text:?}"))?;
    let tail = tail
        .strip_suffix(')')
        .ok_or_else(|| format!("frame without ')': {text:?}"))?;
    let (class, method) = head
        .rsplit_once('.')
        .ok_or_else(|| format!("frame without a class: {text:?}"))?;
    let (file, line) = tail
        .rsplit_once(':')
        .ok_or_else(|| format!("frame without a line part: {text:?}"))?;
    let line = match line {
        "Compiled method" => -2,
        "Native method" => -3,
        "Unknown line" => -1,
        n => num::<i32>(n, "line number")?,
    };
    Ok(FrameParts {
        class,
        method,
        file: (file != "<Unknown Source>").then_some(file),
        line,
    })
}

/// `pkg.Class.method` of a frame line (all of it when it has no source
/// part).
pub fn frame_name(text: &str) -> &str {
    text.rfind('(').map_or(text, |p| &text[..p])
}

/// The line from its `n`th whitespace-separated word on (0-based).
fn after_words(l: &str, n: usize) -> &str {
    let mut rest = l.trim_start();
    for _ in 0..n {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        rest = rest[end..].trim_start();
    }
    rest.trim_end()
}

fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.trim().parse().map_err(|_| format!("bad {what} {s:?}"))
}

/// A signature `Lpkg/Class;` (or a Java name) in Java style.
fn class_of_sig(sig: &str) -> String {
    match sig.strip_prefix('L').and_then(|x| x.strip_suffix(';')) {
        Some(inner) => inner.replace('/', "."),
        None => crate::reader::java_class_name(sig),
    }
}

/// `TITLE` of a `TITLE BEGIN` or `TITLE BEGIN (...` line, where a title
/// is a few words in capitals (`HEAP DUMP`, `CPU TIME (ms)`), so that
/// prose mentioning BEGIN is not taken for a section.
fn section_title(l: &str) -> Option<&str> {
    let (title, rest) = l.split_once(" BEGIN")?;
    let title_ok = !title.is_empty()
        && title.len() <= 40
        && !title.contains("  ")
        && title.starts_with(|c: char| c.is_ascii_uppercase())
        && title
            .chars()
            .all(|c| c.is_ascii_alphabetic() || " ()".contains(c));
    (title_ok && (rest.is_empty() || rest.starts_with(" ("))).then_some(title)
}

/// A line that can only be a record (legend lines of the header are not).
fn looks_like_record(l: &str) -> bool {
    l.strip_prefix("TRACE ")
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        || l.starts_with("THREAD START (obj=")
        || l.starts_with("THREAD END (id = ")
        || l.starts_with("WAIT: MONITOR ")
        || l.starts_with("WAITED: MONITOR ")
        || section_title(l).is_some()
}

fn truncate(s: &str) -> String {
    s.chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event of `text`, owned, or the error.
    fn events(text: &str) -> Result<Vec<(u64, String)>, String> {
        let mut r = TextReader::new(text.as_bytes());
        let mut out = Vec::new();
        while let Some(l) = r.next().map_err(|e| e.to_string())? {
            out.push((l.number, format!("{:?}", l.event)));
        }
        Ok(out)
    }

    #[test]
    fn header_traces_and_sections_become_events() {
        let e = events(
            "JAVA PROFILE 1.0.1, created x\n\
             TRACE           A stack trace (legend)\n\
             --------\n\
             TRACE 300001: (thread=200002)\n\tA.b(A.java:3)\n\t<empty>\n\
             CPU SAMPLES BEGIN (total = 2) x\n\
             rank   self  accum   count trace method\n\
             \x20  1 100.00% 100.00%       2 300001 A.b\n\
             CPU SAMPLES END\n\
             HEAP DUMP BEGIN (1 objects, 2 bytes) x\nROOT 1\nHEAP DUMP END\n\
             TRACE 300002:\n",
        )
        .unwrap();
        let kinds: Vec<&str> = e.iter().map(|(_, k)| k.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "Start",
                "Header",
                "Header",
                "TraceBegin { serial: 300001, thread: 200002 }",
                "Frame(\"A.b(A.java:3)\")",
                "Skipped",
                "TraceEnd",
                "CpuBegin { kind: Samples, total: 2.0 }",
                "Skipped",
                "CpuRow(CpuRow { self_pct: 100.0, count: 2, trace: 300001 })",
                "CpuEnd(Samples)",
                "OtherBegin { title: \"HEAP DUMP\" }",
                "Skipped",
                "OtherEnd",
                "TraceBegin { serial: 300002, thread: 0 }",
                "TraceEnd",
            ]
        );
        // The line that ends a TRACE is given twice: as its end, then as
        // itself.
        assert_eq!(e[6].0, 7);
        assert_eq!(e[7].0, 7);
    }

    #[test]
    fn malformed_lines_and_cut_sections_are_errors() {
        let e = events(
            "JAVA PROFILE 1.0.1, created x\nSITES BEGIN (ordered by live bytes) x\n   1 x\n",
        )
        .unwrap_err();
        assert!(e.starts_with("line 3: malformed SITES row"), "{e}");
        let e = events("CPU TIME (ms) BEGIN (total = 4) x\n").unwrap_err();
        assert!(e.contains("ends inside a section (CPU TIME (ms))"), "{e}");
        let e = events("MONITOR DUMP BEGIN\n\towner: thread 1, entry count: 1\n").unwrap_err();
        assert!(e.starts_with("line 2: malformed MONITOR DUMP line"), "{e}");
        let long = format!("x\n{}\n", "a".repeat(MAX_LINE + 1));
        assert!(events(&long).unwrap_err().contains("longer than"));
    }

    #[test]
    fn frames_split_into_their_parts() {
        let p = frame_parts("a.B$C.run(B.java:Native method)").unwrap();
        assert_eq!(
            (p.class, p.method, p.file, p.line),
            ("a.B$C", "run", Some("B.java"), -3)
        );
        let p = frame_parts("X.y(<Unknown Source>:Unknown line)").unwrap();
        assert_eq!((p.file, p.line), (None, -1));
        assert!(frame_parts("no-parens").is_err());
        assert_eq!(frame_name("a.B.c(B.java:1)"), "a.B.c");
        assert_eq!(after_words("  1 2  3 a b  ", 3), "a b");
    }
}
