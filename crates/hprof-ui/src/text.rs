//! Text streams (`format=a`), read line by line into the same session
//! model as binary ones. The agent writes monitor data (monitor=y) only in
//! text, so this is how the Monitors view gets it.
//!
//! Understood: THREAD START / END, TRACE blocks, CPU SAMPLES, SITES,
//! MONITOR TIME, MONITOR DUMP and WAIT / WAITED lines. Names, frames and
//! traces become the records a binary stream would have carried (with IDs
//! made up here), so the CPU, memory and threads views work unchanged.
//! Other lines (heap dumps, CPU TIME, messages) only go to the console.
//!
//! Strict like the binary reader: a line of a known section that does not
//! parse ends the session with an error naming the line. Lines longer than
//! [`MAX_LINE`] are refused, so memory stays bounded.

use super::model::{cut_name, Session, MAX_NAME};
use super::monitors::{DumpMonitor, DumpThread, MonitorDump, MonitorRow, MonitorTime};
use crate::reader::{
    AllocSite, AllocSites, CpuSample, CpuSamples, Frame, LoadClass, RecordBody, StartThread, Trace,
};
use std::collections::HashMap;

pub use hprof_analysis::lines::{read_line, MAX_LINE};

/// How a text report starts (its first line).
pub const TEXT_START: &str = "JAVA PROFILE 1.0.1, created";

enum Section {
    None,
    Trace(Trace),
    Cpu(CpuSamples),
    Sites(AllocSites),
    MonitorTime(MonitorTime),
    MonitorDump(MonitorDump),
    /// A section only shown on the console (HEAP DUMP, CPU TIME, ...):
    /// the line that ends it.
    Other(String),
}

/// The state of one text stream.
pub struct TextFeed {
    strings: HashMap<String, u64>,
    classes: HashMap<String, u32>,
    frames: HashMap<String, u64>,
    section: Section,
    line: u64,
    /// In the explanatory header (its legend lines look like records:
    /// "TRACE           A stack trace: ..."), which ends with `--------`.
    header: bool,
}

impl Default for TextFeed {
    fn default() -> Self {
        Self::new()
    }
}

/// "a, b" / "thread 1, thread 2" helpers.
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

impl TextFeed {
    pub fn new() -> Self {
        TextFeed {
            strings: HashMap::new(),
            classes: HashMap::new(),
            frames: HashMap::new(),
            section: Section::None,
            line: 0,
            header: true,
        }
    }

    /// The ID of a name (cut at `MAX_NAME`, as the session keeps it).
    fn string(&mut self, s: &mut Session, text: &str) -> Result<u64, String> {
        let text = if text.len() > MAX_NAME {
            cut_name(text.to_string())
        } else {
            text.to_string()
        };
        if let Some(&id) = self.strings.get(&text) {
            return Ok(id);
        }
        let id = self.strings.len() as u64 + 1;
        // The key here and the session's copy.
        s.keep(text.len())?;
        self.strings.insert(text.clone(), id);
        s.take(0.0, RecordBody::Utf8 { id, text })?;
        Ok(id)
    }

    fn class(&mut self, s: &mut Session, name: &str) -> Result<u32, String> {
        if let Some(&serial) = self.classes.get(name) {
            return Ok(serial);
        }
        let name_id = self.string(s, name)?;
        s.keep(name.len())?;
        let serial = self.classes.len() as u32 + 1;
        self.classes.insert(name.to_string(), serial);
        s.take(
            0.0,
            RecordBody::LoadClass(LoadClass {
                class_serial: serial,
                class_id: u64::from(serial),
                trace_serial: 0,
                name_id,
            }),
        )?;
        Ok(serial)
    }

    /// `pkg.Class.method(File.java:12)` (or `:Compiled method`, `:Native
    /// method`, `:Unknown line`).
    fn frame(&mut self, s: &mut Session, text: &str) -> Result<u64, String> {
        if let Some(&id) = self.frames.get(text) {
            return Ok(id);
        }
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
        let class_serial = self.class(s, class)?;
        let method_name_id = self.string(s, method)?;
        s.keep(text.len())?;
        let source_file_id = if file == "<Unknown Source>" {
            0
        } else {
            self.string(s, file)?
        };
        let id = self.frames.len() as u64 + 1;
        self.frames.insert(text.to_string(), id);
        s.take(
            0.0,
            RecordBody::Frame(Frame {
                id,
                method_name_id,
                signature_id: 0,
                source_file_id,
                class_serial,
                line,
            }),
        )?;
        Ok(id)
    }

    /// Take one line. Errors name the line and end the session.
    pub fn line(&mut self, s: &mut Session, text: &str) -> Result<(), String> {
        self.line += 1;
        self.step(s, text)
            .map_err(|e| format!("text stream line {}: {e}", self.line))
    }

    fn step(&mut self, s: &mut Session, l: &str) -> Result<(), String> {
        if self.line == 1 {
            if !l.starts_with(TEXT_START) {
                return Err(format!("not a text report (it starts {:?})", truncate(l)));
            }
            s.format = "text (format=a)".into();
            s.text = true;
            s.log(l.to_string());
            return Ok(());
        }
        if self.header {
            // Reports without the header (cpu=old) start with records.
            if l == "--------" || looks_like_record(l) {
                self.header = false;
            }
            if l == "--------" || self.header {
                return Ok(());
            }
        }
        match std::mem::replace(&mut self.section, Section::None) {
            Section::None => self.outside(s, l),
            Section::Trace(mut t) => {
                if let Some(f) = l.strip_prefix('\t') {
                    if f != "<empty>" {
                        let id = self.frame(s, f)?;
                        t.frame_ids.push(id);
                    }
                    self.section = Section::Trace(t);
                    Ok(())
                } else {
                    s.take(0.0, RecordBody::Trace(t))?;
                    self.outside(s, l)
                }
            }
            Section::Cpu(mut c) => {
                if l.starts_with("CPU SAMPLES END") {
                    s.log(format!(
                        "CPU SAMPLES: total {} samples in {} traces",
                        c.total,
                        c.entries.len()
                    ));
                    s.take(0.0, RecordBody::CpuSamples(c))?;
                    return Ok(());
                }
                if !l.starts_with("rank ") {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    if w.len() < 6 {
                        return Err(format!("malformed CPU SAMPLES row {:?}", truncate(l)));
                    }
                    c.entries.push(CpuSample {
                        count: num(w[3], "count")?,
                        trace_serial: num(w[4], "trace")?,
                    });
                }
                self.section = Section::Cpu(c);
                Ok(())
            }
            Section::Sites(mut x) => {
                if l.starts_with("SITES END") {
                    x.total_live_bytes = x
                        .sites
                        .iter()
                        .map(|r| r.live_bytes)
                        .fold(0, u32::saturating_add);
                    x.total_live_instances = x
                        .sites
                        .iter()
                        .map(|r| r.live_instances)
                        .fold(0, u32::saturating_add);
                    x.total_bytes_allocated =
                        x.sites.iter().map(|r| u64::from(r.bytes_allocated)).sum();
                    x.total_instances_allocated = x
                        .sites
                        .iter()
                        .map(|r| u64::from(r.instances_allocated))
                        .sum();
                    s.log(format!("SITES: {} sites", x.sites.len()));
                    s.take(0.0, RecordBody::AllocSites(x))?;
                    return Ok(());
                }
                let t = l.trim_start();
                if !(t.starts_with("percent") || t.starts_with("rank")) {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    if w.len() < 9 {
                        return Err(format!("malformed SITES row {:?}", truncate(l)));
                    }
                    let class_serial = self.class(s, &w[8..].join(" "))?;
                    x.sites.push(AllocSite {
                        array_type: 0,
                        class_serial,
                        trace_serial: num(w[7], "trace")?,
                        live_bytes: num(w[3], "live bytes")?,
                        live_instances: num(w[4], "live objects")?,
                        bytes_allocated: num(w[5], "allocated bytes")?,
                        instances_allocated: num(w[6], "allocated objects")?,
                    });
                }
                self.section = Section::Sites(x);
                Ok(())
            }
            Section::MonitorTime(mut m) => {
                if l.starts_with("MONITOR TIME END") {
                    s.log(format!(
                        "MONITOR TIME: total {} ms in {} rows",
                        m.total_ms,
                        m.rows.len()
                    ));
                    s.monitors.time = Some(m);
                    s.monitors.time_sections += 1;
                    s.version += 1;
                    return Ok(());
                }
                if !l.starts_with("rank ") {
                    // rank self% accum% count trace CLASS (Java)
                    let w: Vec<&str> = l.split_whitespace().collect();
                    if w.len() < 7 || w[w.len() - 1] != "(Java)" {
                        return Err(format!("malformed MONITOR TIME row {:?}", truncate(l)));
                    }
                    let pct: f64 = num(w[1].trim_end_matches('%'), "percentage")?;
                    m.rows.push(MonitorRow {
                        ratio: pct / 100.0,
                        count: num(w[3], "count")?,
                        trace: num(w[4], "trace")?,
                        class: w[5..w.len() - 1].join(" "),
                    });
                }
                self.section = Section::MonitorTime(m);
                Ok(())
            }
            Section::MonitorDump(mut d) => {
                if l.starts_with("MONITOR DUMP END") {
                    s.log(format!(
                        "MONITOR DUMP: {} threads, {} monitors",
                        d.threads.len(),
                        d.monitors.len()
                    ));
                    s.monitors.dump = Some(d);
                    s.monitors.dumps += 1;
                    s.version += 1;
                    return Ok(());
                }
                dump_line(&mut d, l)?;
                self.section = Section::MonitorDump(d);
                Ok(())
            }
            Section::Other(end) => {
                if l.starts_with(&end) {
                    s.log(l.to_string());
                } else {
                    self.section = Section::Other(end);
                }
                Ok(())
            }
        }
    }

    /// A line outside any section.
    fn outside(&mut self, s: &mut Session, l: &str) -> Result<(), String> {
        // The line after CPU SAMPLES about the samples it does not count:
        // the same text as the binary stream's UTF8 record of it.
        if crate::format::LostSamples::parse(l).is_some() {
            s.take(
                0.0,
                RecordBody::Utf8 {
                    id: 0,
                    text: l.to_string(),
                },
            )?;
            return Ok(());
        }
        if let Some(rest) = l.strip_prefix("TRACE ") {
            let (serial, after) = rest
                .split_once(':')
                .ok_or_else(|| format!("malformed TRACE line {:?}", truncate(l)))?;
            let thread_serial = match after.split_once("(thread=") {
                Some((_, t)) => num(t.split(')').next().unwrap_or(""), "thread")?,
                None => 0,
            };
            self.section = Section::Trace(Trace {
                serial: num(serial, "trace serial")?,
                thread_serial,
                frame_ids: Vec::new(),
            });
            return Ok(());
        }
        s.log(l.to_string());
        if let Some(rest) = l.strip_prefix("THREAD START (") {
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
            let (name, group) = match rest.rsplit_once("\", group=\"") {
                Some((a, g)) => (
                    a.split_once("name=\"").map_or("", |x| x.1),
                    g.strip_suffix("\")").unwrap_or(g),
                ),
                None => return Err(format!("malformed THREAD START line {:?}", truncate(l))),
            };
            let name_id = self.string(s, name)?;
            let group_name_id = self.string(s, group)?;
            s.take(
                0.0,
                RecordBody::StartThread(StartThread {
                    thread_serial: num(serial, "thread id")?,
                    thread_id: u64::from_str_radix(obj.trim(), 16)
                        .map_err(|_| format!("bad thread object {obj:?}"))?,
                    trace_serial: 0,
                    name_id,
                    group_name_id,
                    parent_group_name_id: 0,
                }),
            )?;
        } else if let Some(rest) = l.strip_prefix("THREAD END (id = ") {
            let serial = num(rest.trim_end_matches(')'), "thread id")?;
            s.take(
                0.0,
                RecordBody::EndThread {
                    thread_serial: serial,
                },
            )?;
        } else if let Some(rest) = l.strip_prefix("CPU SAMPLES BEGIN (total = ") {
            let total = rest.split(')').next().unwrap_or("");
            self.section = Section::Cpu(CpuSamples {
                total: num(total, "total")?,
                entries: Vec::new(),
            });
        } else if l.starts_with("SITES BEGIN") {
            self.section = Section::Sites(AllocSites {
                flags: if l.contains("estimated from samples") {
                    super::model::SITES_ESTIMATED
                } else {
                    0
                },
                cutoff_raw: 0,
                total_live_bytes: 0,
                total_live_instances: 0,
                total_bytes_allocated: 0,
                total_instances_allocated: 0,
                sites: Vec::new(),
            });
        } else if let Some(rest) = l.strip_prefix("MONITOR TIME BEGIN (total = ") {
            let total = rest.split(" ms)").next().unwrap_or("");
            self.section = Section::MonitorTime(MonitorTime {
                total_ms: num(total, "total")?,
                rows: Vec::new(),
            });
        } else if l.starts_with("MONITOR DUMP BEGIN") {
            self.section = Section::MonitorDump(MonitorDump::default());
        } else if let Some(rest) = l.strip_prefix("WAIT: MONITOR ") {
            let (sig, rest) = rest
                .rsplit_once(", timeout=")
                .ok_or_else(|| format!("malformed WAIT line {:?}", truncate(l)))?;
            let (timeout, thread) = rest
                .split_once(", thread ")
                .ok_or_else(|| format!("malformed WAIT line {:?}", truncate(l)))?;
            s.monitors.wait(
                class_of_sig(sig),
                num(thread, "thread")?,
                num(timeout, "timeout")?,
            );
        } else if let Some(rest) = l.strip_prefix("WAITED: MONITOR ") {
            let (sig, rest) = rest
                .rsplit_once(", time_waited=")
                .ok_or_else(|| format!("malformed WAITED line {:?}", truncate(l)))?;
            let (ms, thread) = rest
                .split_once(", thread ")
                .ok_or_else(|| format!("malformed WAITED line {:?}", truncate(l)))?;
            s.monitors.waited(
                class_of_sig(sig),
                num(thread, "thread")?,
                num(ms, "time waited")?,
            );
        } else if let Some(title) = l
            .strip_suffix(" BEGIN")
            .or_else(|| l.split(" BEGIN ").next().filter(|_| l.contains(" BEGIN ")))
        {
            // HEAP DUMP, CPU TIME (ms), ...: shown as their first and last
            // lines only.
            if title.starts_with("CPU TIME") {
                s.cpu_time_sections += 1;
            }
            self.section = Section::Other(format!("{title} END"));
        }
        Ok(())
    }

    /// The end of the stream: a trace still open is complete.
    pub fn finish(&mut self, s: &mut Session) -> Result<(), String> {
        match std::mem::replace(&mut self.section, Section::None) {
            Section::Trace(t) => {
                s.take(0.0, RecordBody::Trace(t))?;
                Ok(())
            }
            Section::None | Section::Other(_) => Ok(()),
            _ => Err("the text stream ends inside a section".into()),
        }
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

fn dump_line(d: &mut MonitorDump, l: &str) -> Result<(), String> {
    let t = l.trim();
    let bad = || format!("malformed MONITOR DUMP line {:?}", truncate(l));
    if let Some(rest) = t.strip_prefix("THREAD ") {
        // THREAD 200001, trace 300001, status: R
        let (serial, rest) = rest.split_once(", trace ").ok_or_else(bad)?;
        let (trace, status) = rest.split_once(", status: ").ok_or_else(bad)?;
        d.threads.push(DumpThread {
            serial: num(serial, "thread")?,
            trace: num(trace, "trace")?,
            status: status.to_string(),
        });
    } else if let Some(sig) = t.strip_prefix("MONITOR ") {
        d.monitors.push(DumpMonitor {
            class: class_of_sig(sig),
            ..DumpMonitor::default()
        });
    } else if let Some(rest) = t.strip_prefix("owner: thread ") {
        let m = d.monitors.last_mut().ok_or_else(bad)?;
        let (owner, count) = rest.split_once(", entry count: ").ok_or_else(bad)?;
        m.owner = num(owner, "owner")?;
        m.entry_count = num(count, "entry count")?;
    } else if let Some(rest) = t.strip_prefix("waiting to enter:") {
        let m = d.monitors.last_mut().ok_or_else(bad)?;
        m.waiting_to_enter = threads(rest)?;
    } else if let Some(rest) = t.strip_prefix("waiting to be notified:") {
        let m = d.monitors.last_mut().ok_or_else(bad)?;
        m.waiting_to_be_notified = threads(rest)?;
    } else if !t.is_empty() {
        return Err(bad());
    }
    Ok(())
}

/// ` thread 1, thread 2` -> [1, 2]
fn threads(s: &str) -> Result<Vec<u32>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| num(x.strip_prefix("thread ").unwrap_or(x), "thread"))
        .collect()
}

fn truncate(s: &str) -> String {
    s.chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    use super::super::cpu::CpuQuery;
    use super::super::model::{Kind, Session};
    use super::*;

    const REPORT: &str = "JAVA PROFILE 1.0.1, created Mon Nov 24 10:00:00 2025

Header text, legend...
THREAD START
TRACE           A stack trace: its serial number, then one line per frame,
HEAP DUMP       The objects known to the agent, between HEAP DUMP BEGIN and
--------

THREAD START (obj=50000150, id = 200002, name=\"worker, \"one\"\", group=\"main\")
TRACE 300001: (thread=200002)
\tContention.blockOnHot(Contention.java:47)
\tContention.lambda$main$0(Contention.java:80)
TRACE 300002:
\tjava.lang.Object.wait(Object.java:Native method)
TRACE 300003:
\t<empty>
WAIT: MONITOR LContention$WaitBox;, timeout=300, thread 200002
WAITED: MONITOR LContention$WaitBox;, time_waited=301, thread 200002
THREAD END (id = 200002)
MONITOR DUMP BEGIN
    THREAD 200002, trace 300001, status: MW
    THREAD 200001, trace 300002, status: CW
    MONITOR LContention$HotLock;
\towner: thread 200001, entry count: 1
\twaiting to enter: thread 200002
\twaiting to be notified:
MONITOR DUMP END
MONITOR TIME BEGIN (total = 40 ms) Mon Nov 24 10:00:01 2025
rank   self  accum   count trace monitor
   1 75.00% 75.00%      12 300001 Contention$HotLock (Java)
   2 25.00% 100.00%       1 300002 java.lang.Object (Java)
MONITOR TIME END
CPU SAMPLES BEGIN (total = 10) Mon Nov 24 10:00:01 2025
rank   self  accum   count trace method
   1 90.00% 90.00%       9 300001 Contention.blockOnHot
   2 10.00% 100.00%       1 300002 java.lang.Object.wait
CPU SAMPLES END
SITES BEGIN (ordered by live bytes) Mon Nov 24 10:00:01 2025
          percent          live          alloc'ed  stack class
 rank   self  accum     bytes objs     bytes  objs trace name
    1 80.00% 80.00%     16000 1000     16000  1000 300001 AllocSites$Kept
    2 20.00% 100.00%      4000  250      8000   500 300002 int[]
SITES END
HEAP DUMP BEGIN (12 objects, 345 bytes) Mon Nov 24 10:00:01 2025
ROOT 50000150 (kind=<thread>, id=200002, trace=300001)
HEAP DUMP END
";

    fn feed(text: &str) -> (Session, Result<(), String>) {
        let mut s = Session::new(1, Kind::Listen, "x".into());
        let mut f = TextFeed::new();
        let mut r = std::io::BufReader::new(text.as_bytes());
        let mut buf = Vec::new();
        let res = (|| {
            while read_line(&mut r, &mut buf).map_err(|e| e.to_string())? {
                f.line(&mut s, &String::from_utf8_lossy(&buf))?;
            }
            f.finish(&mut s)
        })();
        (s, res)
    }

    #[test]
    fn a_text_report_fills_monitors_cpu_sites_and_threads() {
        let (mut s, res) = feed(REPORT);
        res.unwrap();
        assert!(s.text);
        let m = s.monitors_view();
        assert_eq!(m["note"], serde_json::Value::Null);
        let rows = &m["time"]["rows"];
        assert_eq!(m["time"]["totalMs"], 40);
        assert_eq!(rows[0]["class"], "Contention$HotLock");
        assert_eq!(rows[0]["count"], 12);
        assert_eq!(rows[0]["timeMs"], 30.0);
        assert_eq!(rows[0]["thread"], "worker, \"one\"");
        assert_eq!(
            rows[0]["stack"][0],
            "Contention.blockOnHot(Contention.java:47)"
        );
        assert_eq!(rows[1]["class"], "java.lang.Object");
        assert_eq!(rows[1]["stack"][0], "java.lang.Object.wait(Native method)");
        assert_eq!(m["waits"][0]["class"], "Contention$WaitBox");
        assert_eq!(m["waits"][0]["waitedMs"], 301);
        assert_eq!(m["waits"][0]["timed"], 1);
        let d = &m["dump"];
        assert_eq!(d["threads"][0]["status"], "MW");
        assert_eq!(d["monitors"][0]["class"], "Contention$HotLock");
        assert_eq!(d["monitors"][0]["owner"], "thread 200001");
        assert_eq!(d["monitors"][0]["waitingToEnter"][0], "worker, \"one\"");
        assert_eq!(
            d["monitors"][0]["waitingToBeNotified"]
                .as_array()
                .unwrap()
                .len(),
            0
        );
        let cpu = s.cpu_view(&CpuQuery::default(), 0, 10, true);
        assert_eq!(cpu["rows"][0]["method"], "Contention.blockOnHot");
        assert_eq!(cpu["rows"][0]["self"], 9);
        let sites = s.sites_view("", "objects", 0, 10, false);
        assert_eq!(sites["rows"][0]["class"], "AllocSites$Kept");
        assert_eq!(sites["rows"][0]["objects"], 1000);
        assert_eq!(sites["rows"][1]["liveObjects"], 250);
        let t = s.threads_view();
        assert_eq!(t["threads"][0]["objectId"], 0x5000_0150u64);
        let console = s.console_view(0).to_string();
        assert!(console.contains("HEAP DUMP END"));
        assert!(
            !console.contains("ROOT 50000150"),
            "inside a console-only section"
        );
    }

    #[test]
    fn malformed_lines_name_their_line_number() {
        let (_, res) = feed("JAVA PROFILE 1.0.1, created x\nMONITOR TIME BEGIN (total = 4 ms) x\nrank   self\n   1 garbage\n");
        assert!(res
            .unwrap_err()
            .starts_with("text stream line 4: malformed MONITOR TIME row"));
        let (_, res) = feed("JAVA PROFILE 1.0.2\0\0\0\0");
        assert!(res.unwrap_err().contains("not a text report"));
        let (_, res) = feed("JAVA PROFILE 1.0.1, created x\nCPU SAMPLES BEGIN (total = 4) x\n");
        assert!(res.unwrap_err().contains("ends inside a section"));
        let (_, res) = feed("JAVA PROFILE 1.0.1, created x\nTRACE 1:\n\tno-parens\n");
        assert!(res.unwrap_err().contains("frame without a source part"));
        let long = format!(
            "JAVA PROFILE 1.0.1, created x\n{}\n",
            "a".repeat(MAX_LINE + 1)
        );
        let (_, res) = feed(&long);
        assert!(res.unwrap_err().contains("longer than"));
    }
}
