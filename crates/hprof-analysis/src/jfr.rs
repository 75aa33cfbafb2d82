//! CPU samples and allocation sites as a JDK Flight Recorder file (`.jfr`),
//! for `jfr print`/`jfr summary`, JDK Mission Control and the IDEs:
//! `hprof-rs export FILE --jfr OUT`. The layout is written down in
//! docs/jfr.md; what the code relies on, in short:
//!
//! * one chunk: a 68-byte header (big-endian), the events, one checkpoint
//!   event holding every constant pool, one metadata event describing every
//!   type used; integers in events are LEB128 varints;
//! * CPU SAMPLES become `jdk.ExecutionSample` events, one per sample (a
//!   row of count N gives N events with its stack: JFR tools count
//!   events), all at the time of the CPU SAMPLES record, since HPROF does
//!   not say when each sample was taken; the thread is the trace's when
//!   the agent ran with `thread=y`, else one thread that says it stands
//!   for all;
//! * ALLOC SITES become `jdk.ObjectAllocationSample` events, one per site,
//!   whose `weight` is the site's allocated bytes (what JFR's own sampled
//!   allocation events weigh), at the record's time;
//! * MONITOR TIME (`monitor=y`, a text report) becomes `jdk.JavaMonitorEnter`
//!   events: a row of N contended entries gives N events with its stack and
//!   monitor class, whose durations add up to the row's time (HPROF keeps
//!   the count and the total per stack, not each entry's time, so each
//!   event lasts the mean).
//!
//! Binary files and text reports are read alike (the session model); like
//! the pprof export, the last section of each kind is used.

use crate::leb128;
use crate::session::Session;
use crate::ToolResult;
use std::collections::HashMap;

/// Type IDs of this file's metadata (any numbers work: readers take the
/// types by name from the metadata event).
mod id {
    pub const METADATA: u64 = 0;
    pub const CHECKPOINT: u64 = 1;
    pub const LONG: u64 = 20;
    pub const INT: u64 = 21;
    pub const BOOLEAN: u64 = 22;
    pub const STRING: u64 = 23;
    pub const THREAD: u64 = 30;
    pub const CLASS: u64 = 31;
    pub const STACK_TRACE: u64 = 32;
    pub const STACK_FRAME: u64 = 33;
    pub const METHOD: u64 = 34;
    pub const THREAD_STATE: u64 = 36;
    pub const EXECUTION_SAMPLE: u64 = 101;
    pub const ALLOCATION_SAMPLE: u64 = 102;
    pub const MONITOR_ENTER: u64 = 103;
    pub const LABEL: u64 = 200;
    pub const TIMESTAMP: u64 = 201;
    pub const DATA_AMOUNT: u64 = 202;
    pub const TIMESPAN: u64 = 203;
}

/// CPU samples and contended monitor entries exported at most: one event
/// each, built in memory (a count field of a damaged file would otherwise
/// ask for 40 GB).
const MAX_EVENTS: u64 = 50_000_000;

/// Chunk header size; the header's field offsets are docs/jfr.md's.
const HEADER: usize = 68;

/// An event or constant pool body: LEB128 integers, tagged strings.
#[derive(Default)]
struct Buf(Vec<u8>);

impl Buf {
    fn varint(&mut self, v: u64) {
        leb128::put(&mut self.0, v);
    }
    fn int(&mut self, v: i64) {
        // Negative values never occur here (lines are clamped to 0 and
        // above); JFR's varint of a negative long is its 64-bit pattern.
        self.varint(v as u64);
    }
    fn boolean(&mut self, b: bool) {
        self.0.push(u8::from(b));
    }
    /// A string inline, UTF-8 encoded (encoding 3).
    fn string(&mut self, s: &str) {
        self.0.push(3);
        self.varint(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
}

/// `body` as an event of type `type_id`: its size (the size field
/// included) then the type, then the body.
fn event(out: &mut Vec<u8>, type_id: u64, body: &[u8]) {
    let mut head = Buf::default();
    head.varint(type_id);
    let rest = head.0.len() + body.len();
    let mut size = rest + 1;
    while leb128::len(size as u64) + rest != size {
        size = leb128::len(size as u64) + rest;
    }
    let mut sz = Buf::default();
    sz.varint(size as u64);
    out.extend_from_slice(&sz.0);
    out.extend_from_slice(&head.0);
    out.extend_from_slice(body);
}

/// One method, as JFR names it.
#[derive(PartialEq, Eq, Hash, Clone)]
struct MethodKey {
    class: String,
    name: String,
    descriptor: String,
}

/// The constant pools, filled as events refer to their entries; keys
/// from 1 (0 is no value).
#[derive(Default)]
struct Pools {
    classes: HashMap<String, u64>,
    methods: HashMap<MethodKey, u64>,
    /// Stack traces by HPROF trace serial, each written once.
    traces: HashMap<u32, u64>,
    threads: HashMap<u32, u64>,
    class_bodies: Buf,
    method_bodies: Buf,
    trace_bodies: Buf,
    thread_bodies: Buf,
}

impl Pools {
    fn class(&mut self, name: &str) -> u64 {
        if let Some(&k) = self.classes.get(name) {
            return k;
        }
        let k = self.classes.len() as u64 + 1;
        self.classes.insert(name.to_string(), k);
        let b = &mut self.class_bodies;
        b.varint(k);
        b.string(name);
        b.int(0); // modifiers: HPROF does not record them
        k
    }

    fn method(&mut self, m: MethodKey) -> u64 {
        if let Some(&k) = self.methods.get(&m) {
            return k;
        }
        let class = self.class(&m.class);
        let k = self.methods.len() as u64 + 1;
        let b = &mut self.method_bodies;
        b.varint(k);
        b.varint(class);
        b.string(&m.name);
        b.string(&m.descriptor);
        b.int(0);
        b.boolean(false);
        self.methods.insert(m, k);
        k
    }

    /// The stack trace of HPROF trace `serial`, leaf first.
    fn trace(&mut self, p: &Session, serial: u32) -> u64 {
        if let Some(&k) = self.traces.get(&serial) {
            return k;
        }
        let frames: Vec<(u64, i32)> = p
            .trace_frames(serial)
            .unwrap_or(&[])
            .iter()
            .map(|&f| {
                let (key, line) = match p.frame_parts(f) {
                    Some(parts) => (
                        MethodKey {
                            class: parts.class,
                            name: parts.method,
                            // JFR readers parse the descriptor: one the
                            // file does not give is written as taking and
                            // returning nothing.
                            descriptor: parts.descriptor.unwrap_or_else(|| "()V".into()),
                        },
                        parts.line,
                    ),
                    None => (
                        MethodKey {
                            class: format!("<unknown frame 0x{f:x}>"),
                            name: "?".into(),
                            descriptor: "()V".into(),
                        },
                        0,
                    ),
                };
                (self.method(key), line)
            })
            .collect();
        let k = self.traces.len() as u64 + 1;
        self.traces.insert(serial, k);
        let b = &mut self.trace_bodies;
        b.varint(k);
        b.boolean(false);
        b.varint(frames.len() as u64);
        for (m, line) in frames {
            b.varint(m);
            b.int(i64::from(line.max(0)));
            b.int(0); // bytecode index: not in HPROF frames
        }
        k
    }

    /// The thread of a trace (its serial with `thread=y`, else 0: all).
    fn thread(&mut self, p: &Session, serial: u32) -> u64 {
        if let Some(&k) = self.threads.get(&serial) {
            return k;
        }
        let k = self.threads.len() as u64 + 1;
        self.threads.insert(serial, k);
        let name = match (serial, p.known_thread_name(serial)) {
            (0, _) => "all threads (run the agent with thread=y for each thread)".to_string(),
            (_, Some(name)) => name.to_string(),
            (_, None) => format!("thread serial {serial}"),
        };
        let b = &mut self.thread_bodies;
        b.varint(k);
        b.string(&name);
        b.int(0);
        b.string(&name);
        // HPROF's thread serial, not the Java thread ID (which HPROF
        // does not record).
        b.int(i64::from(serial));
        k
    }

    /// The checkpoint event's body after its header fields.
    fn write(&self, out: &mut Buf) {
        let pools: [(u64, usize, &Buf); 5] = [
            (id::CLASS, self.classes.len(), &self.class_bodies),
            (id::METHOD, self.methods.len(), &self.method_bodies),
            (id::STACK_TRACE, self.traces.len(), &self.trace_bodies),
            (id::THREAD, self.threads.len(), &self.thread_bodies),
            (id::THREAD_STATE, 1, &state_pool()),
        ];
        out.varint(pools.len() as u64);
        for (type_id, n, body) in pools {
            out.varint(type_id);
            out.varint(n as u64);
            out.0.extend_from_slice(&body.0);
        }
    }
}

/// The one thread state of CPU samples: they are taken while it runs.
fn state_pool() -> Buf {
    let mut b = Buf::default();
    b.varint(1);
    b.string("STATE_RUNNABLE");
    b
}

/// The metadata event's element tree: a name, attributes, children.
struct Element {
    name: &'static str,
    attrs: Vec<(&'static str, String)>,
    children: Vec<Element>,
}

fn el(name: &'static str, attrs: &[(&'static str, &str)], children: Vec<Element>) -> Element {
    Element {
        name,
        attrs: attrs.iter().map(|(k, v)| (*k, v.to_string())).collect(),
        children,
    }
}

/// A field of `type_id`; `pool` when its values are constant pool keys.
fn field(name: &str, type_id: u64, pool: bool, annotations: Vec<Element>) -> Element {
    let t = type_id.to_string();
    let mut attrs = vec![("name", name), ("class", t.as_str())];
    if pool {
        attrs.push(("constantPool", "true"));
    }
    el("field", &attrs, annotations)
}

fn array_field(name: &str, type_id: u64) -> Element {
    let t = type_id.to_string();
    el(
        "field",
        &[("name", name), ("class", &t), ("dimension", "1")],
        vec![],
    )
}

fn annotation(type_id: u64, value: &str) -> Element {
    let t = type_id.to_string();
    el("annotation", &[("class", &t), ("value", value)], vec![])
}

fn class(name: &str, type_id: u64, super_type: Option<&str>, children: Vec<Element>) -> Element {
    let t = type_id.to_string();
    let mut attrs = vec![("name", name), ("id", t.as_str())];
    if let Some(s) = super_type {
        attrs.push(("superType", s));
    }
    el("class", &attrs, children)
}

/// A type whose values are one string, shown as that string.
fn simple_class(name: &str, type_id: u64, children: Vec<Element>) -> Element {
    let t = type_id.to_string();
    el(
        "class",
        &[("name", name), ("id", &t), ("simpleType", "true")],
        children,
    )
}

/// An event type with JFR's common fields: `startTime`, then `timing`
/// (`duration`, for events that last), `eventThread` and `stackTrace`, then
/// its own.
fn event_class(
    name: &str,
    type_id: u64,
    title: &str,
    timing: Vec<Element>,
    own: Vec<Element>,
) -> Element {
    let mut children = vec![
        annotation(id::LABEL, title),
        field(
            "startTime",
            id::LONG,
            false,
            vec![
                annotation(id::LABEL, "Start Time"),
                annotation(id::TIMESTAMP, "TICKS"),
            ],
        ),
    ];
    children.extend(timing);
    children.push(field(
        "eventThread",
        id::THREAD,
        true,
        vec![annotation(id::LABEL, "Event Thread")],
    ));
    children.push(field(
        "stackTrace",
        id::STACK_TRACE,
        true,
        vec![annotation(id::LABEL, "Stack Trace")],
    ));
    children.extend(own);
    class(name, type_id, Some("jdk.jfr.Event"), children)
}

fn metadata_tree() -> Element {
    let ann = "java.lang.annotation.Annotation";
    let label = |v: &str| annotation(id::LABEL, v);
    let start_time = || {
        field(
            "startTime",
            id::LONG,
            false,
            vec![label("Start Time"), annotation(id::TIMESTAMP, "TICKS")],
        )
    };
    let classes = vec![
        class("long", id::LONG, None, vec![]),
        class("int", id::INT, None, vec![]),
        class("boolean", id::BOOLEAN, None, vec![]),
        class("java.lang.String", id::STRING, None, vec![]),
        class(
            "jdk.jfr.Label",
            id::LABEL,
            Some(ann),
            vec![field("value", id::STRING, false, vec![])],
        ),
        class(
            "jdk.jfr.Timestamp",
            id::TIMESTAMP,
            Some(ann),
            vec![field("value", id::STRING, false, vec![])],
        ),
        class(
            "jdk.jfr.DataAmount",
            id::DATA_AMOUNT,
            Some(ann),
            vec![field("value", id::STRING, false, vec![])],
        ),
        class(
            "jdk.jfr.Timespan",
            id::TIMESPAN,
            Some(ann),
            vec![field("value", id::STRING, false, vec![])],
        ),
        class(
            "java.lang.Thread",
            id::THREAD,
            None,
            vec![
                field("osName", id::STRING, false, vec![label("OS Thread Name")]),
                field("osThreadId", id::LONG, false, vec![label("OS Thread Id")]),
                field(
                    "javaName",
                    id::STRING,
                    false,
                    vec![label("Java Thread Name")],
                ),
                field(
                    "javaThreadId",
                    id::LONG,
                    false,
                    vec![label("Java Thread Id")],
                ),
            ],
        ),
        class(
            "java.lang.Class",
            id::CLASS,
            None,
            vec![
                field("name", id::STRING, false, vec![label("Name")]),
                field("modifiers", id::INT, false, vec![label("Access Modifiers")]),
            ],
        ),
        class(
            "jdk.types.Method",
            id::METHOD,
            None,
            vec![
                field("type", id::CLASS, true, vec![label("Type")]),
                field("name", id::STRING, false, vec![label("Name")]),
                field("descriptor", id::STRING, false, vec![label("Descriptor")]),
                field("modifiers", id::INT, false, vec![label("Access Modifiers")]),
                field("hidden", id::BOOLEAN, false, vec![label("Hidden")]),
            ],
        ),
        class(
            "jdk.types.StackFrame",
            id::STACK_FRAME,
            None,
            vec![
                field("method", id::METHOD, true, vec![label("Java Method")]),
                field("lineNumber", id::INT, false, vec![label("Line Number")]),
                field(
                    "bytecodeIndex",
                    id::INT,
                    false,
                    vec![label("Bytecode Index")],
                ),
            ],
        ),
        class(
            "jdk.types.StackTrace",
            id::STACK_TRACE,
            None,
            vec![
                field("truncated", id::BOOLEAN, false, vec![label("Truncated")]),
                array_field("frames", id::STACK_FRAME),
            ],
        ),
        simple_class(
            "jdk.types.ThreadState",
            id::THREAD_STATE,
            vec![field("name", id::STRING, false, vec![label("Name")])],
        ),
        class(
            "jdk.ExecutionSample",
            id::EXECUTION_SAMPLE,
            Some("jdk.jfr.Event"),
            vec![
                label("Method Profiling Sample"),
                start_time(),
                field("sampledThread", id::THREAD, true, vec![label("Thread")]),
                field(
                    "stackTrace",
                    id::STACK_TRACE,
                    true,
                    vec![label("Stack Trace")],
                ),
                field("state", id::THREAD_STATE, true, vec![label("Thread State")]),
            ],
        ),
        event_class(
            "jdk.ObjectAllocationSample",
            id::ALLOCATION_SAMPLE,
            "Object Allocation Sample",
            vec![],
            vec![
                field("objectClass", id::CLASS, true, vec![label("Object Class")]),
                field(
                    "weight",
                    id::LONG,
                    false,
                    vec![label("Sample Weight"), annotation(id::DATA_AMOUNT, "BYTES")],
                ),
            ],
        ),
        event_class(
            "jdk.JavaMonitorEnter",
            id::MONITOR_ENTER,
            "Java Monitor Blocked",
            vec![field(
                "duration",
                id::LONG,
                false,
                vec![label("Duration"), annotation(id::TIMESPAN, "TICKS")],
            )],
            vec![
                field(
                    "monitorClass",
                    id::CLASS,
                    true,
                    vec![label("Monitor Class")],
                ),
                field(
                    "previousOwner",
                    id::THREAD,
                    true,
                    vec![label("Previous Monitor Owner")],
                ),
                field("address", id::LONG, false, vec![label("Monitor Address")]),
            ],
        ),
    ];
    el(
        "root",
        &[],
        vec![
            el("metadata", &[], classes),
            el("region", &[("locale", "en_US"), ("gmtOffset", "0")], vec![]),
        ],
    )
}

/// The metadata event's body: times, its ID, the string table, the tree.
fn metadata_body(start_ticks: u64) -> Buf {
    let tree = metadata_tree();
    let mut table: Vec<String> = Vec::new();
    let mut index: HashMap<String, u64> = HashMap::new();
    let mut intern = |s: &str| -> u64 {
        if let Some(&i) = index.get(s) {
            return i;
        }
        let i = table.len() as u64;
        table.push(s.to_string());
        index.insert(s.to_string(), i);
        i
    };
    // The tree with its strings as indexes, depth first without recursion
    // (the tree is ours and shallow, but one walk shape for every tree).
    let mut tree_bytes = Buf::default();
    let mut stack: Vec<&Element> = vec![&tree];
    while let Some(e) = stack.pop() {
        tree_bytes.varint(intern(e.name));
        tree_bytes.varint(e.attrs.len() as u64);
        for (k, v) in &e.attrs {
            tree_bytes.varint(intern(k));
            tree_bytes.varint(intern(v));
        }
        tree_bytes.varint(e.children.len() as u64);
        stack.extend(e.children.iter().rev());
    }
    let mut b = Buf::default();
    b.varint(start_ticks);
    b.varint(0); // duration
    b.varint(1); // metadata ID
    b.varint(table.len() as u64);
    for s in &table {
        b.string(s);
    }
    b.0.extend_from_slice(&tree_bytes.0);
    b
}

/// The whole recording: a single chunk, ticks in nanoseconds from the
/// file's start (its header's time).
pub fn encode(p: &Session) -> ToolResult<Vec<u8>> {
    let monitors = p.monitors.time.as_ref();
    if p.cpu.is_none() && p.sites.is_none() && monitors.is_none() {
        return Err("no CPU SAMPLES, SITES or MONITOR TIME in the file (run the agent with cpu=samples, heap=sites or monitor=y)".into());
    }
    let samples = cpu_samples(p);
    let entries = monitor_entries(p);
    if samples.saturating_add(entries) > MAX_EVENTS {
        return Err(format!(
            "{samples} CPU samples and {entries} contended monitor entries: more than a JFR file of \
             one event each is written for ({MAX_EVENTS}, ~10 bytes each); export --pprof, which \
             counts CPU samples per stack"
        ));
    }
    let times = p.times;
    let mut out = vec![0u8; HEADER];
    let mut pools = Pools::default();
    if let Some(cpu) = &p.cpu {
        let at = times.cpu_us * 1000;
        for e in &cpu.entries {
            let thread = pools.thread(p, p.trace_thread(e.trace_serial));
            let trace = pools.trace(p, e.trace_serial);
            let mut b = Buf::default();
            b.varint(at);
            b.varint(thread);
            b.varint(trace);
            b.varint(1);
            for _ in 0..e.count {
                event(&mut out, id::EXECUTION_SAMPLE, &b.0);
            }
        }
    }
    if !p.allocated.is_empty() {
        let at = times.sites_us * 1000;
        for s in p.allocated.sites() {
            let thread = pools.thread(p, p.trace_thread(s.trace_serial));
            let trace = pools.trace(p, s.trace_serial);
            let class = pools.class(&p.site_class(s.class_serial, s.array_type));
            let mut b = Buf::default();
            b.varint(at);
            b.varint(thread);
            b.varint(trace);
            b.varint(class);
            b.varint(s.bytes_allocated);
            event(&mut out, id::ALLOCATION_SAMPLE, &b.0);
        }
    }
    if let Some(m) = monitors {
        // A text report's sections carry no time: the events are at the
        // end of what was read.
        let at = times.end_us * 1000;
        let total_ns = m.total_ms.saturating_mul(1_000_000);
        for row in &m.rows {
            if row.count == 0 {
                continue;
            }
            let thread = pools.thread(p, p.trace_thread(row.trace));
            let trace = pools.trace(p, row.trace);
            let class = pools.class(&row.class);
            for d in spread(row_ns(row.ratio, total_ns), row.count) {
                let mut b = Buf::default();
                b.varint(at);
                b.varint(d);
                b.varint(thread);
                b.varint(trace);
                b.varint(class);
                b.varint(0); // previous owner: not in HPROF
                b.varint(0); // address: not in HPROF
                event(&mut out, id::MONITOR_ENTER, &b.0);
            }
        }
    }
    let end_ticks = times.end_us * 1000;
    let cp_pos = out.len();
    let mut cp = Buf::default();
    cp.varint(end_ticks); // start time
    cp.varint(0); // duration
    cp.varint(0); // delta to the next checkpoint: none
    cp.0.push(0); // checkpoint type: a plain one
    pools.write(&mut cp);
    event(&mut out, id::CHECKPOINT, &cp.0);
    let md_pos = out.len();
    event(&mut out, id::METADATA, &metadata_body(0).0);
    let size = out.len();
    let h = &mut out[..HEADER];
    h[0..4].copy_from_slice(b"FLR\0");
    h[4..6].copy_from_slice(&2u16.to_be_bytes());
    h[6..8].copy_from_slice(&0u16.to_be_bytes());
    h[8..16].copy_from_slice(&(size as u64).to_be_bytes());
    h[16..24].copy_from_slice(&(cp_pos as u64).to_be_bytes());
    h[24..32].copy_from_slice(&(md_pos as u64).to_be_bytes());
    h[32..40].copy_from_slice(&(times.start_ms.saturating_mul(1_000_000)).to_be_bytes());
    h[40..48].copy_from_slice(&end_ticks.to_be_bytes());
    h[48..56].copy_from_slice(&0u64.to_be_bytes()); // start ticks
    h[56..64].copy_from_slice(&1_000_000_000u64.to_be_bytes()); // ticks are ns
                                                                // A finished chunk (state byte 0), integers compressed (bit 0 of the
                                                                // flag byte), the recording's last chunk (bit 1).
    h[64..68].copy_from_slice(&[0, 0, 0, 0b11]);
    Ok(out)
}

/// A row's time: its share of the section's total, which the text report
/// prints to a hundredth of a percent.
fn row_ns(ratio: f64, total_ns: u64) -> u64 {
    let ns = (ratio.clamp(0.0, 1.0) * total_ns as f64).round();
    ns as u64
}

/// `count` durations adding up to exactly `total`, each the mean (the
/// remainder given one unit at a time to the first).
fn spread(total: u64, count: u64) -> impl Iterator<Item = u64> {
    let each = total / count.max(1);
    let extra = total % count.max(1);
    (0..count).map(move |i| each + u64::from(i < extra))
}

fn cpu_samples(p: &Session) -> u64 {
    p.cpu
        .as_ref()
        .map_or(0, |c| c.entries.iter().map(|e| u64::from(e.count)).sum())
}

fn monitor_entries(p: &Session) -> u64 {
    p.monitors.time.as_ref().map_or(0, |m| {
        m.rows.iter().map(|r| r.count).fold(0, u64::saturating_add)
    })
}

/// `hprof-rs export FILE --jfr OUT`, of a binary file or a text report:
/// what was written.
pub fn export(input: &str, out: &str) -> ToolResult<String> {
    // An empty input is refused by read_input ("empty stream").
    let (form, r) = crate::input::open(input)?;
    let mut p =
        crate::session::feed::read_input(input, form, r).map_err(|e| format!("{input}: {e}"))?;
    crate::session::feed::date_by_file(&mut p, std::path::Path::new(input));
    let bytes = encode(&p)?;
    crate::output::write(out, &bytes)?;
    let said = format!(
        "wrote {}: {} CPU samples as jdk.ExecutionSample, {} allocation sites as jdk.ObjectAllocationSample, {} contended monitor entries as jdk.JavaMonitorEnter",
        crate::output::name(out),
        cpu_samples(&p),
        p.allocated.sites().len(),
        monitor_entries(&p)
    );
    Ok(match p.allocated.note() {
        Some(n) => format!("{said}\n{n}"),
        None => said,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_starts_with_its_own_size() {
        let mut out = Vec::new();
        event(&mut out, 101, &[7; 10]);
        assert_eq!(out[0] as usize, out.len());
        assert_eq!(out[1], 101);
        let mut out = Vec::new();
        event(&mut out, 1, &[0; 200]);
        // 200 + type + two bytes of size.
        assert_eq!(out.len(), 203);
        assert_eq!(out[0], 0x80 | (203 & 0x7f) as u8);
        assert_eq!(out[1], (203 >> 7) as u8);
    }

    #[test]
    fn a_file_without_samples_or_sites_is_refused() {
        let empty = Session::new(0, crate::session::Kind::File, "x".into());
        assert!(encode(&empty).unwrap_err().contains("monitor=y"));
    }

    #[test]
    fn a_rows_entries_last_its_time_in_all() {
        let d: Vec<u64> = spread(10, 3).collect();
        assert_eq!(d, [4, 3, 3]);
        assert_eq!(spread(7, 7).sum::<u64>(), 7);
        assert_eq!(spread(0, 2).collect::<Vec<_>>(), [0, 0]);
        assert_eq!(row_ns(0.1234, 1_000_000_000), 123_400_000);
        assert_eq!(row_ns(2.0, 5), 5);
    }
}
