//! Text streams (`format=a`) into the same session model as binary ones.
//! The agent writes monitor data (monitor=y) only in text, so this is how
//! the Monitors view gets it.
//!
//! The lines are read by the tool's one text-report reader
//! (`crate::text`); here its events become the records a binary
//! stream would have carried (names, frames and traces with IDs made up
//! here), so the CPU, memory and threads views work unchanged, and the
//! monitor sections fill the Monitors view. Lines outside the sections go
//! to the console; sections only shown there (heap dumps, CPU TIME) give
//! their first and last lines.
//!
//! Strict like the binary reader: a line of a known section that does not
//! parse ends the session with an error naming the line.

use super::monitors::{DumpMonitor, MonitorDump, MonitorTime};
use super::{cut_name, Session, MAX_NAME};
use crate::reader::{
    AllocSite, AllocSites, CpuSample, CpuSamples, Frame, LoadClass, RecordBody, StartThread, Trace,
};
use crate::text::{frame_parts, CpuKind, Event, Line, TextError};
use std::collections::HashMap;

/// A section being read.
enum Section {
    None,
    Trace(Trace),
    Cpu(CpuSamples),
    Sites(AllocSites),
    MonitorTime(MonitorTime),
    MonitorDump(MonitorDump),
}

/// The state of one text stream.
pub struct TextFeed {
    strings: HashMap<String, u64>,
    classes: HashMap<String, u32>,
    frames: HashMap<String, u64>,
    section: Section,
}

impl Default for TextFeed {
    fn default() -> Self {
        Self::new()
    }
}

/// The session's error for a reader's error.
pub fn error(e: TextError) -> String {
    match e {
        TextError::Io(e) => format!("read: {e}"),
        TextError::Line { number, what } => format!("text stream line {number}: {what}"),
        e => e.to_string(),
    }
}

/// `v` as a record's narrower field.
fn narrow<T: TryFrom<u64>>(v: u64, what: &str) -> Result<T, String> {
    T::try_from(v).map_err(|_| format!("bad {what} \"{v}\""))
}

impl TextFeed {
    pub fn new() -> Self {
        TextFeed {
            strings: HashMap::new(),
            classes: HashMap::new(),
            frames: HashMap::new(),
            section: Section::None,
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

    /// The ID of a frame line, its FRAME (and names) taken the first time.
    fn frame(&mut self, s: &mut Session, text: &str) -> Result<u64, String> {
        if let Some(&id) = self.frames.get(text) {
            return Ok(id);
        }
        let f = frame_parts(text)?;
        let class_serial = self.class(s, f.class)?;
        let method_name_id = self.string(s, f.method)?;
        s.keep(text.len())?;
        let source_file_id = match f.file {
            None => 0,
            Some(file) => self.string(s, file)?,
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
                line: f.line,
            }),
        )?;
        Ok(id)
    }

    /// Take one line. Errors name the line and end the session.
    pub fn take(&mut self, s: &mut Session, line: Line<'_>) -> Result<(), String> {
        let number = line.number;
        self.step(s, line)
            .map_err(|e| format!("text stream line {number}: {e}"))
    }

    fn step(&mut self, s: &mut Session, line: Line<'_>) -> Result<(), String> {
        let l = line.text;
        if line.number == 1 {
            if line.event != Event::Start {
                return Err(format!(
                    "not a text report (it starts {:?})",
                    l.chars().take(120).collect::<String>()
                ));
            }
            s.format = "text (format=a)".into();
            s.text = true;
            s.log(l.to_string());
            return Ok(());
        }
        match line.event {
            Event::Start | Event::Header | Event::Skipped => {}
            Event::TraceBegin { serial, thread } => {
                self.section = Section::Trace(Trace {
                    serial,
                    thread_serial: thread,
                    frame_ids: Vec::new(),
                })
            }
            Event::Frame(f) => {
                let id = self.frame(s, f)?;
                if let Section::Trace(t) = &mut self.section {
                    t.frame_ids.push(id);
                }
            }
            Event::TraceEnd => self.end_trace(s)?,
            // The same text as the binary stream's UTF8 record of it.
            Event::Lost(_) => {
                s.take(
                    0.0,
                    RecordBody::Utf8 {
                        id: 0,
                        text: l.to_string(),
                    },
                )?;
            }
            Event::CpuRow(r) => {
                if let Section::Cpu(c) = &mut self.section {
                    c.entries.push(CpuSample {
                        count: narrow(r.count, "count")?,
                        trace_serial: r.trace,
                    });
                }
            }
            Event::CpuEnd(CpuKind::Samples) => {
                if let Section::Cpu(c) = std::mem::replace(&mut self.section, Section::None) {
                    s.log(format!(
                        "CPU SAMPLES: total {} samples in {} traces",
                        c.total,
                        c.entries.len()
                    ));
                    s.take(0.0, RecordBody::CpuSamples(c))?;
                }
            }
            // CPU TIME is shown on the console only.
            Event::CpuEnd(CpuKind::Time) | Event::OtherEnd => s.log(l.to_string()),
            Event::SiteRow(r) => {
                let class_serial = self.class(s, r.class)?;
                if let Section::Sites(x) = &mut self.section {
                    x.sites.push(AllocSite {
                        array_type: 0,
                        class_serial,
                        trace_serial: r.trace,
                        live_bytes: narrow(r.live_bytes, "live bytes")?,
                        live_instances: narrow(r.live_objs, "live objects")?,
                        bytes_allocated: narrow(r.alloc_bytes, "allocated bytes")?,
                        instances_allocated: narrow(r.alloc_objs, "allocated objects")?,
                    });
                }
            }
            Event::SitesEnd => {
                if let Section::Sites(mut x) = std::mem::replace(&mut self.section, Section::None) {
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
                }
            }
            Event::MonitorTimeRow(r) => {
                if let Section::MonitorTime(m) = &mut self.section {
                    m.rows.push(r);
                }
            }
            Event::MonitorTimeEnd => {
                if let Section::MonitorTime(m) = std::mem::replace(&mut self.section, Section::None)
                {
                    s.log(format!(
                        "MONITOR TIME: total {} ms in {} rows",
                        m.total_ms,
                        m.rows.len()
                    ));
                    s.monitors.time = Some(m);
                    s.monitors.time_sections += 1;
                    s.version += 1;
                }
            }
            Event::DumpThread(t) => {
                if let Section::MonitorDump(d) = &mut self.section {
                    d.threads.push(t);
                }
            }
            Event::DumpMonitor(class) => {
                if let Section::MonitorDump(d) = &mut self.section {
                    d.monitors.push(DumpMonitor {
                        class,
                        ..DumpMonitor::default()
                    });
                }
            }
            Event::DumpOwner { owner, entry_count } => {
                if let Some(m) = self.last_monitor() {
                    m.owner = owner;
                    m.entry_count = entry_count;
                }
            }
            Event::DumpWaitingToEnter(t) => {
                if let Some(m) = self.last_monitor() {
                    m.waiting_to_enter = t;
                }
            }
            Event::DumpWaitingToBeNotified(t) => {
                if let Some(m) = self.last_monitor() {
                    m.waiting_to_be_notified = t;
                }
            }
            Event::MonitorDumpEnd => {
                if let Section::MonitorDump(d) = std::mem::replace(&mut self.section, Section::None)
                {
                    s.log(format!(
                        "MONITOR DUMP: {} threads, {} monitors",
                        d.threads.len(),
                        d.monitors.len()
                    ));
                    s.monitors.dump = Some(d);
                    s.monitors.dumps += 1;
                    s.version += 1;
                }
            }
            // Lines outside the sections, shown on the console.
            outside => {
                s.log(l.to_string());
                self.outside(s, outside)?;
            }
        }
        Ok(())
    }

    /// A line outside any section, after it was logged.
    fn outside(&mut self, s: &mut Session, event: Event<'_>) -> Result<(), String> {
        match event {
            Event::ThreadStart(t) => {
                let name_id = self.string(s, t.name)?;
                let group_name_id = self.string(s, t.group)?;
                s.take(
                    0.0,
                    RecordBody::StartThread(StartThread {
                        thread_serial: t.serial,
                        thread_id: t.object_id,
                        trace_serial: 0,
                        name_id,
                        group_name_id,
                        parent_group_name_id: 0,
                    }),
                )?;
            }
            Event::ThreadEnd { serial } => {
                s.take(
                    0.0,
                    RecordBody::EndThread {
                        thread_serial: serial,
                    },
                )?;
            }
            Event::CpuBegin {
                kind: CpuKind::Samples,
                total,
            } => {
                self.section = Section::Cpu(CpuSamples {
                    total: narrow(total as u64, "total")?,
                    entries: Vec::new(),
                });
            }
            Event::CpuBegin {
                kind: CpuKind::Time,
                ..
            } => s.cpu_time_sections += 1,
            Event::SitesBegin { estimated, taken } => {
                let estimated = if estimated { super::SITES_ESTIMATED } else { 0 };
                let taken = if taken { crate::format::SITES_TAKEN } else { 0 };
                self.section = Section::Sites(AllocSites {
                    flags: estimated | taken,
                    cutoff_raw: 0,
                    total_live_bytes: 0,
                    total_live_instances: 0,
                    total_bytes_allocated: 0,
                    total_instances_allocated: 0,
                    sites: Vec::new(),
                });
            }
            Event::MonitorTimeBegin { total_ms } => {
                self.section = Section::MonitorTime(MonitorTime {
                    total_ms,
                    rows: Vec::new(),
                });
            }
            Event::MonitorDumpBegin => {
                self.section = Section::MonitorDump(MonitorDump::default());
            }
            Event::Wait {
                class,
                thread,
                timeout,
            } => s.monitors.wait(class, thread, timeout),
            Event::Waited { class, thread, ms } => s.monitors.waited(class, thread, ms),
            _ => {}
        }
        Ok(())
    }

    fn last_monitor(&mut self) -> Option<&mut DumpMonitor> {
        match &mut self.section {
            Section::MonitorDump(d) => d.monitors.last_mut(),
            _ => None,
        }
    }

    fn end_trace(&mut self, s: &mut Session) -> Result<(), String> {
        if let Section::Trace(t) = std::mem::replace(&mut self.section, Section::None) {
            s.take(0.0, RecordBody::Trace(t))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::cpu::CpuQuery;

    use super::super::testing::{from_text as feed, TEXT_REPORT as REPORT};

    #[test]
    fn a_text_report_fills_monitors_cpu_sites_and_threads() {
        let (mut s, res) = feed(REPORT);
        res.unwrap();
        assert!(s.text);
        let m = s.monitors_view();
        assert_eq!(m.note, None);
        let time = m.time.unwrap();
        assert_eq!(time.total_ms, 40);
        let rows = &time.rows;
        assert_eq!(rows[0].class, "Contention$HotLock");
        assert_eq!(rows[0].count, 12);
        assert_eq!(rows[0].time_ms, 30.0);
        assert_eq!(rows[0].thread.as_deref(), Some("worker, \"one\""));
        assert_eq!(
            rows[0].stack[0],
            "Contention.blockOnHot(Contention.java:47)"
        );
        assert_eq!(rows[1].class, "java.lang.Object");
        assert_eq!(rows[1].stack[0], "java.lang.Object.wait(Native method)");
        assert_eq!(m.waits[0].class, "Contention$WaitBox");
        assert_eq!(m.waits[0].stats.waited_ms, 301);
        assert_eq!(m.waits[0].stats.timed, 1);
        let d = m.dump.unwrap();
        assert_eq!(d.threads[0].status, "MW");
        let mon = &d.monitors[0];
        assert_eq!(mon.class, "Contention$HotLock");
        assert_eq!(mon.owner, "thread 200001");
        assert_eq!(mon.waiting_to_enter, ["worker, \"one\""]);
        assert!(mon.waiting_to_be_notified.is_empty());
        let cpu = s
            .cpu_view(&CpuQuery::default(), 0, 10, true)
            .profile
            .unwrap();
        assert_eq!(cpu.rows[0].method, "Contention.blockOnHot");
        assert_eq!(cpu.rows[0].own, 9);
        let sites = s.sites_view("", "objects", 0, 10, false).page.unwrap();
        assert_eq!(sites.rows[0].class, "AllocSites$Kept");
        assert_eq!(sites.rows[0].objects, 1000);
        assert_eq!(sites.rows[1].live_objects, 250);
        let t = s.threads_view();
        assert_eq!(t.threads[0].thread.object_id, 0x5000_0150u64);
        let console: Vec<String> = s.console_view(0).lines.into_iter().map(|l| l.1).collect();
        assert!(console.iter().any(|l| l.contains("HEAP DUMP END")));
        assert!(
            !console.iter().any(|l| l.contains("ROOT 50000150")),
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
            "a".repeat(crate::text::MAX_LINE + 1)
        );
        let (_, res) = feed(&long);
        assert!(res.unwrap_err().contains("longer than"));
    }
}
