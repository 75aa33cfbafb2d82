//! HotSpot's own heap dump re-emitted inside the agent's binary stream.
//!
//! HotSpot's dumper writes object addresses as identifiers (8 bytes on a
//! 64-bit VM) for objects and classes (a class is its mirror's address),
//! `Symbol*` addresses for its UTF8 strings, small numbers for its frames,
//! and serials of its own (classes, threads and stack traces from 1). In
//! one of our files these meet our own records (LOAD CLASS, START THREAD,
//! strings, frames, traces) and possibly other dumps, between which the VM
//! moves objects and reuses addresses. The identifier spaces are in
//! `vocab::id_space` (docs/output-formats.md, "Identifiers"):
//!
//! * **Raw** (the first VM dump of a stream): the VM's identifiers stay as
//!   they are (ours all carry `id_space::OURS`), and so do its stack trace
//!   and thread serials, which sit far below ours (traces from 300000,
//!   threads from 200001; [`Translator::raw_serials_fit`] says whether they
//!   did). Its heap records then need no change at all: the caller copies
//!   them as they are, or keeps the VM's very file (`profile::heap_dump::
//!   vm`). Only the records before the heap are translated here: class
//!   serials, class names in Java spelling, frame identifiers.
//! * **Tagged** (later dumps, or a first one whose serials do not fit):
//!   every identifier of dump number `k` gets `k << 48` added
//!   ([`Translator::tag`]): user-space addresses stay below 2^47 (an ID
//!   that is not is refused), so a tagged ID can be neither one of ours
//!   nor one of another dump's, and a reader that keeps one map of class
//!   IDs or strings for the whole file names every class of every dump
//!   right. References keep pointing where they did (an object's ID and
//!   every reference to it get the same tag), and every sub-record keeps
//!   its length, so HotSpot's segments are copied with their own framing.
//!   Its stack traces (one per thread, referenced by the thread roots) and
//!   threads get fresh serials; its empty dummy trace becomes our system
//!   trace.
//!
//! Class serials, both ways: each of HotSpot's classes gets a fresh serial
//! in each dump, since a class serial names one class object and the
//! VM's class (its mirror's address) is not the object our own LOAD CLASS
//! named (the agent's ID); it takes our load trace when its name is loaded
//! once in the VM and in our table. Fresh serials come from a counter the
//! caller keeps for the whole run (from [`FIRST_FRESH_SERIAL`], far above
//! ours).
//!
//! The input is strict: the records come from `crate::reader`, which checks
//! every length, and the translation checks again what it rewrites (a
//! sub-record's fields must match its class layout; an ID must be in its
//! range); damaged input gives an error, never a panic.

use crate::reader::{HeapSubRecord, Record, RecordBody};
use crate::vocab::{sub_tag, tag, BasicType};
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::sync::Arc;

/// First serial handed out to HotSpot's classes, threads and traces that
/// have none of ours (ours stay far below: classes from 100000, threads
/// from 200001, traces from 300000).
pub const FIRST_FRESH_SERIAL: u32 = 0x4000_0000;

use crate::vocab::id_space;

/// Bits of a tagged identifier that carry the dump number.
pub const TAG_SHIFT: u32 = id_space::DUMP_SHIFT;

/// Identifier size of the VM's dumps this translator reads and of the
/// stream it writes to.
pub const ID_SIZE: u32 = 8;

/// What the translator needs to know of the agent's own records.
#[derive(Debug, Default, Clone)]
pub struct OurClasses {
    /// Class name in HotSpot's spelling (`java/lang/String`, `[I`) to the
    /// trace our LOAD CLASS gave it (where it was loaded), for names loaded
    /// once; `None` for names we saw more than once.
    pub by_name: HashMap<String, Option<u32>>,
    /// Our system trace (the empty stack), for HotSpot's dummy trace.
    pub system_trace: u32,
}

impl OurClasses {
    /// Add one of our classes by its JVM signature (`Ljava/lang/String;`,
    /// `[I`).
    pub fn add(&mut self, signature: &str, load_trace: u32) {
        let name = match signature
            .strip_prefix('L')
            .and_then(|s| s.strip_suffix(';'))
        {
            Some(n) => n,
            None => signature,
        };
        self.by_name
            .entry(name.to_string())
            .and_modify(|e| *e = None)
            .or_insert(Some(load_trace));
    }
}

/// A translation error: what was wrong, where in the VM's dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadDump(pub String);

impl std::fmt::Display for BadDump {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One class's instance layout, as far as references go.
#[derive(Debug)]
struct ClassInfo {
    super_id: u64,
    fields: Vec<BasicType>,
}

#[derive(Debug)]
struct Refs {
    /// Byte count of an instance's field values.
    values_len: u32,
    /// Offsets of the reference fields within the values.
    offsets: Box<[u32]>,
}

/// Counts of what one dump held, for messages and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub classes: u64,
    pub instances: u64,
    pub object_arrays: u64,
    pub primitive_arrays: u64,
    pub roots: u64,
    /// HotSpot classes that got our load trace.
    pub load_traces_ours: u64,
}

/// Serials for HotSpot's stack traces and threads in our stream (see the
/// module documentation): its dummy trace becomes our system trace, the
/// others and its threads get fresh serials from a counter kept for the
/// whole run. Shared by the binary translation and the text one.
#[derive(Debug)]
pub struct Serials {
    next: u32,
    system_trace: u32,
    traces: FxHashMap<u32, u32>,
    threads: FxHashMap<u32, u32>,
    /// The last trace mapped (HotSpot's, ours): every object of a dump
    /// names the same dummy trace.
    last_trace: Option<(u32, u32)>,
}

impl Serials {
    pub fn new(next: u32, system_trace: u32) -> Serials {
        Serials {
            next: next.max(FIRST_FRESH_SERIAL),
            system_trace,
            traces: FxHashMap::default(),
            threads: FxHashMap::default(),
            last_trace: None,
        }
    }

    /// The next fresh serial (for the next dump).
    pub fn next(&self) -> u32 {
        self.next
    }

    pub fn fresh(&mut self) -> u32 {
        let s = self.next;
        self.next = self.next.wrapping_add(1).max(FIRST_FRESH_SERIAL);
        s
    }

    /// Ours for HotSpot's trace serial `hs`.
    pub fn trace(&mut self, hs: u32) -> u32 {
        if let Some((h, s)) = self.last_trace {
            if h == hs {
                return s;
            }
        }
        let s = match self.traces.get(&hs) {
            Some(&s) => s,
            None => {
                let s = self.fresh();
                self.traces.insert(hs, s);
                s
            }
        };
        self.last_trace = Some((hs, s));
        s
    }

    /// Ours for HotSpot's thread serial `hs`.
    pub fn thread(&mut self, hs: u32) -> u32 {
        if let Some(&s) = self.threads.get(&hs) {
            return s;
        }
        let s = self.fresh();
        self.threads.insert(hs, s);
        s
    }

    /// A STACK TRACE record of HotSpot's: `None` for its dummy trace (no
    /// thread, no frame), which its objects and classes name and which
    /// becomes our system trace (not written again); else the (trace,
    /// thread) serials to write it with.
    pub fn of_trace(&mut self, t: &crate::reader::Trace) -> Option<(u32, u32)> {
        if t.frame_ids.is_empty() && t.thread_serial == 0 {
            self.traces.insert(t.serial, self.system_trace);
            self.last_trace = None;
            return None;
        }
        Some((self.trace(t.serial), self.thread(t.thread_serial)))
    }

    /// Rewrite the trace and thread serials a decoded heap sub-record
    /// names (the text path; the binary one rewrites the bytes).
    pub fn map_sub_record(&mut self, sub: &mut HeapSubRecord) {
        use crate::reader::RootKind;
        match sub {
            HeapSubRecord::Root(r) => match &mut r.kind {
                RootKind::JniLocal { thread_serial, .. }
                | RootKind::JavaFrame { thread_serial, .. }
                | RootKind::NativeStack { thread_serial }
                | RootKind::ThreadBlock { thread_serial } => {
                    *thread_serial = self.thread(*thread_serial)
                }
                RootKind::ThreadObject {
                    thread_serial,
                    trace_serial,
                } => {
                    *thread_serial = self.thread(*thread_serial);
                    *trace_serial = self.trace(*trace_serial);
                }
                RootKind::Unknown
                | RootKind::JniGlobal { .. }
                | RootKind::StickyClass
                | RootKind::MonitorUsed => {}
            },
            HeapSubRecord::ClassDump(cd) => cd.trace_serial = self.trace(cd.trace_serial),
            HeapSubRecord::InstanceDump(i) => i.trace_serial = self.trace(i.trace_serial),
            HeapSubRecord::ObjectArrayDump(a) => a.trace_serial = self.trace(a.trace_serial),
            HeapSubRecord::PrimitiveArrayDump(a) => a.trace_serial = self.trace(a.trace_serial),
        }
    }
}

/// Translates one VM dump (see the module documentation).
pub struct Translator {
    /// `k << 48` for a tagged dump; 0 for a raw one (identifiers and
    /// trace/thread serials kept).
    tag: u64,
    /// Highest stack trace and thread serials of the VM seen (raw).
    max_trace_serial: u32,
    max_thread_serial: u32,
    /// Where fresh serials started (for a restart).
    first_serial: u32,
    ours: OurClasses,
    serials: Serials,
    /// HotSpot's class serials to ours.
    class_serials: FxHashMap<u32, u32>,
    /// Strings kept until the LOAD CLASS records that name classes with
    /// them are through.
    strings: Option<FxHashMap<u64, String>>,
    classes: FxHashMap<u64, ClassInfo>,
    refs: FxHashMap<u64, Arc<Refs>>,
    last_refs: Option<(u64, Arc<Refs>)>,
    /// Class names written in Java spelling so far.
    names: u64,
    pub counts: Counts,
}

/// Set in the IDs of the Java-spelled class names a tagged translation
/// adds.
const RENDERED_NAME_BIT: u64 = id_space::TAGGED_NAME_BIT;

/// Big-endian writers for the records we emit.
fn u4(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_be_bytes());
}
fn u8_(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_be_bytes());
}

/// Append a record whose body `body` writes.
pub fn record(out: &mut Vec<u8>, t: u8, time: u32, body: impl FnOnce(&mut Vec<u8>)) {
    out.push(t);
    u4(out, time);
    let len_at = out.len();
    u4(out, 0);
    body(out);
    let len = (out.len() - len_at - 4) as u32;
    out[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
}

/// A record header (tag, time, length).
pub fn record_header(out: &mut Vec<u8>, t: u8, time: u32, len: u32) {
    out.push(t);
    u4(out, time);
    u4(out, len);
}

fn get_u4(b: &[u8], at: usize) -> Result<u32, BadDump> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| BadDump(format!("sub-record too short for a u4 at byte {at}")))
}

fn put_u4(b: &mut [u8], at: usize, v: u32) -> Result<(), BadDump> {
    b.get_mut(at..at + 4)
        .map(|s| s.copy_from_slice(&v.to_be_bytes()))
        .ok_or_else(|| BadDump(format!("sub-record too short for a u4 at byte {at}")))
}

fn get_u8(b: &[u8], at: usize) -> Result<u64, BadDump> {
    b.get(at..at + 8)
        .map(|s| u64::from_be_bytes(s.try_into().unwrap_or([0; 8])))
        .ok_or_else(|| BadDump(format!("sub-record too short for an ID at byte {at}")))
}

/// Where [`Translator::tag_heap`] stands in a run of heap sub-records: a
/// large array may reach past the bytes at hand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HeapScan {
    /// At a sub-record's first byte.
    #[default]
    Start,
    /// Inside a primitive array's values: bytes still to pass unchanged.
    Values(u64),
    /// Inside an object array's elements: identifiers still to tag.
    Elements(u64),
}

/// Bytes of a root sub-record of tag `t` (its tag included; 8-byte IDs),
/// 0 for other tags.
fn root_len(t: u8) -> usize {
    match t {
        sub_tag::ROOT_UNKNOWN | sub_tag::ROOT_STICKY_CLASS | sub_tag::ROOT_MONITOR_USED => 9,
        sub_tag::ROOT_NATIVE_STACK | sub_tag::ROOT_THREAD_BLOCK => 13,
        sub_tag::ROOT_JNI_GLOBAL
        | sub_tag::ROOT_JNI_LOCAL
        | sub_tag::ROOT_JAVA_FRAME
        | sub_tag::ROOT_THREAD_OBJECT => 17,
        _ => 0,
    }
}

/// The parts of a CLASS DUMP after its fixed 65 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    Constant,
    Static,
    Field,
}

/// One entry of a CLASS DUMP: where its name ID is (statics and fields),
/// its type, and where its value is (constants and statics).
#[derive(Debug, Clone, Copy)]
struct Entry {
    kind: EntryKind,
    name: Option<usize>,
    ty: BasicType,
    value: usize,
}

/// The entries of a CLASS DUMP in `raw` (which may end early: the walk
/// then ends with an error), and where they end ([`ClassDumpEntries::end`]).
struct ClassDumpEntries<'a> {
    raw: &'a [u8],
    at: usize,
    kind: EntryKind,
    /// Entries left of `kind`; `None` before its count is read.
    left: Option<u16>,
    failed: bool,
    /// It failed where `raw` ended.
    short: bool,
}

impl<'a> ClassDumpEntries<'a> {
    fn new(raw: &'a [u8]) -> Self {
        ClassDumpEntries {
            raw,
            at: 65,
            kind: EntryKind::Constant,
            left: None,
            failed: false,
            short: false,
        }
    }

    /// Where the entries ended (after the last one is returned).
    fn end(&self) -> usize {
        self.at
    }

    fn ended_early(&mut self) -> Option<Result<Entry, BadDump>> {
        self.failed = true;
        self.short = true;
        Some(Err(BadDump("CLASS DUMP shorter than its entries".into())))
    }
}

impl Iterator for ClassDumpEntries<'_> {
    type Item = Result<Entry, BadDump>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            let left = match self.left {
                Some(n) => n,
                None => {
                    let Some(c) = self.raw.get(self.at..self.at + 2) else {
                        return self.ended_early();
                    };
                    self.at += 2;
                    u16::from_be_bytes([c[0], c[1]])
                }
            };
            if left > 0 {
                self.left = Some(left - 1);
                break;
            }
            self.left = None;
            self.kind = match self.kind {
                EntryKind::Constant => EntryKind::Static,
                EntryKind::Static => EntryKind::Field,
                EntryKind::Field => return None,
            };
        }
        // Constant: u2 index, u1 type, value; static: ID, u1 type, value;
        // field: ID, u1 type.
        let (name, ty_at) = match self.kind {
            EntryKind::Constant => (None, self.at + 2),
            _ => (Some(self.at), self.at + 8),
        };
        let Some(&code) = self.raw.get(ty_at) else {
            return self.ended_early();
        };
        let Some(ty) = BasicType::from_code(code) else {
            self.failed = true;
            return Some(Err(BadDump(format!("CLASS DUMP: basic type {code}"))));
        };
        let value = ty_at + 1;
        self.at = match self.kind {
            EntryKind::Field => value,
            _ => value + ty.size(ID_SIZE) as usize,
        };
        if self.at > self.raw.len() {
            return self.ended_early();
        }
        Some(Ok(Entry {
            kind: self.kind,
            name,
            ty,
            value,
        }))
    }
}

/// The length of the CLASS DUMP `r` begins with, `None` if `r` ends
/// before it does.
fn class_dump_len(r: &[u8]) -> Result<Option<usize>, BadDump> {
    if r.len() < 67 {
        return Ok(None);
    }
    let mut entries = ClassDumpEntries::new(r);
    while let Some(e) = entries.next() {
        if let Err(e) = e {
            return if entries.short { Ok(None) } else { Err(e) };
        }
    }
    Ok(Some(entries.end()))
}

impl Translator {
    /// Translator for dump number `dump` (from 1) of this run, tagged;
    /// fresh serials start at `next_serial` (see
    /// [`Translator::next_serial`]).
    pub fn new(dump: u32, ours: OurClasses, next_serial: u32) -> Translator {
        Translator {
            tag: u64::from(dump.clamp(1, id_space::MAX_TAGGED_DUMP)) << TAG_SHIFT,
            max_trace_serial: 0,
            max_thread_serial: 0,
            first_serial: next_serial,
            serials: Serials::new(next_serial, ours.system_trace),
            ours,
            class_serials: FxHashMap::default(),
            strings: Some(FxHashMap::default()),
            classes: FxHashMap::default(),
            refs: FxHashMap::default(),
            last_refs: None,
            names: 0,
            counts: Counts::default(),
        }
    }

    /// Translator for the first VM dump of a stream, which keeps the VM's
    /// identifiers and trace/thread serials (see the module documentation).
    pub fn new_raw(ours: OurClasses, next_serial: u32) -> Translator {
        Translator {
            tag: 0,
            ..Translator::new(1, ours, next_serial)
        }
    }

    /// Start again from the VM's first record, tagged as dump `dump` (a raw
    /// translation whose serials did not fit: nothing it made may be used).
    pub fn restart_tagged(&mut self, dump: u32) {
        let ours = std::mem::take(&mut self.ours);
        *self = Translator::new(dump.max(2), ours, self.first_serial);
    }

    pub fn is_raw(&self) -> bool {
        self.tag == 0
    }

    /// Raw: whether the VM's stack trace and thread serials seen so far
    /// stay below ours (traces from 300000, threads from 200000), so its
    /// heap records can keep them. (JDK 23 and later write a stack trace
    /// per virtual thread: a dump of hundreds of thousands of them does
    /// not fit and is translated instead.)
    pub fn raw_serials_fit(&self) -> bool {
        self.max_trace_serial < crate::vocab::TRACE_SERIAL_BASE
            && self.max_thread_serial < crate::vocab::UNKNOWN_THREAD_SERIAL
    }

    /// The next fresh serial after this dump (for the next dump).
    pub fn next_serial(&self) -> u32 {
        self.serials.next()
    }

    /// The identifier `id` of the VM's dump as written in ours.
    pub fn tag(&self, id: u64) -> Result<u64, BadDump> {
        if id == 0 {
            return Ok(0);
        }
        if self.is_raw() {
            if id >= id_space::RAW_LIMIT {
                return Err(BadDump(format!(
                    "identifier 0x{id:x} is not an address (bits 60-63 tell our names apart)"
                )));
            }
            return Ok(id);
        }
        if id >= id_space::TAGGED_LIMIT {
            return Err(BadDump(format!(
                "identifier 0x{id:x} is not a user-space address (bits 47-63 tell dumps and our names apart)"
            )));
        }
        Ok(id | self.tag)
    }

    /// A frame identifier of the VM's (a small number) as written in ours.
    fn frame_id(&self, f: u64) -> Result<u64, BadDump> {
        if !self.is_raw() {
            return self.tag(f);
        }
        if f >= id_space::RAW_LIMIT {
            return Err(BadDump(format!("frame identifier 0x{f:x} out of range")));
        }
        Ok(id_space::VM_FRAMES | f)
    }

    fn tag_at(&self, b: &mut [u8], at: usize) -> Result<(), BadDump> {
        let s = b
            .get_mut(at..at + 8)
            .ok_or_else(|| BadDump(format!("sub-record too short for an ID at byte {at}")))?;
        let id = u64::from_be_bytes(s.try_into().unwrap_or([0; 8]));
        let t = self.tag(id)?;
        s.copy_from_slice(&t.to_be_bytes());
        Ok(())
    }

    fn map_trace_at(&mut self, b: &mut [u8], at: usize) -> Result<(), BadDump> {
        let hs = get_u4(b, at)?;
        let s = self.serials.trace(hs);
        put_u4(b, at, s)
    }

    fn map_thread_at(&mut self, b: &mut [u8], at: usize) -> Result<(), BadDump> {
        let hs = get_u4(b, at)?;
        let s = self.serials.thread(hs);
        put_u4(b, at, s)
    }

    /// A top-level record other than a heap dump record: write its
    /// translation to `out` (nothing for records that have none).
    pub fn record(&mut self, rec: &Record, out: &mut Vec<u8>) -> Result<(), BadDump> {
        // Strings are needed for class names until the first record that
        // is neither a string nor a class.
        if !matches!(rec.body, RecordBody::Utf8 { .. } | RecordBody::LoadClass(_)) {
            self.strings = None;
        }
        match &rec.body {
            RecordBody::Utf8 { id, text } => {
                let tagged = self.tag(*id)?;
                record(out, tag::UTF8, 0, |b| {
                    u8_(b, tagged);
                    b.extend_from_slice(text.as_bytes());
                });
                if let Some(s) = self.strings.as_mut() {
                    s.insert(*id, text.clone());
                }
            }
            RecordBody::LoadClass(lc) => {
                let name = self
                    .strings
                    .as_ref()
                    .and_then(|s| s.get(&lc.name_id))
                    .cloned();
                let name = name.as_deref();
                // A serial of its own: a class serial names one class
                // object, and this is not the one our LOAD CLASS named
                // (ours carries the agent's ID, this the VM's address).
                let serial = self.serials.fresh();
                let trace = match name.and_then(|n| self.ours.by_name.get(n).copied().flatten()) {
                    Some(t) => {
                        self.counts.load_traces_ours += 1;
                        t
                    }
                    None => self.ours.system_trace,
                };
                self.class_serials.insert(lc.class_serial, serial);
                let id = self.tag(lc.class_id)?;
                // Our LOAD CLASS records spell names the Java way
                // (`java.lang.String`, `int[]`); HotSpot's internal form
                // is kept for its strings, which also name fields and
                // methods: the Java spelling gets a string of its own, with
                // bit 47 set (user-space addresses stay below 2^47, so no
                // HotSpot string has it).
                let name_id = match name {
                    Some(n) => {
                        let sig = if n.starts_with('[') {
                            n.to_string()
                        } else {
                            format!("L{n};")
                        };
                        let rendered = crate::format::render_class_name(&sig).into_owned();
                        self.names += 1;
                        let nid = if self.is_raw() {
                            id_space::VM_NAMES | self.names
                        } else {
                            self.tag | RENDERED_NAME_BIT | self.names
                        };
                        record(out, tag::UTF8, 0, |b| {
                            u8_(b, nid);
                            b.extend_from_slice(rendered.as_bytes());
                        });
                        nid
                    }
                    None => self.tag(lc.name_id)?,
                };
                record(out, tag::LOAD_CLASS, 0, |b| {
                    u4(b, serial);
                    u8_(b, id);
                    u4(b, trace);
                    u8_(b, name_id);
                });
            }
            RecordBody::Frame(f) => {
                let class = match self.class_serials.get(&f.class_serial) {
                    Some(&s) => s,
                    None => 0,
                };
                let ids = [
                    self.frame_id(f.id)?,
                    self.tag(f.method_name_id)?,
                    self.tag(f.signature_id)?,
                    self.tag(f.source_file_id)?,
                ];
                record(out, tag::FRAME, 0, |b| {
                    ids.iter().for_each(|&i| u8_(b, i));
                    u4(b, class);
                    u4(b, f.line as u32);
                });
            }
            RecordBody::Trace(t) => {
                let (serial, thread) = if self.is_raw() {
                    // Kept as they are: the heap records name them.
                    self.max_trace_serial = self.max_trace_serial.max(t.serial);
                    self.max_thread_serial = self.max_thread_serial.max(t.thread_serial);
                    (t.serial, t.thread_serial)
                } else {
                    // HotSpot's dummy trace (no thread, no frame) is what
                    // its objects and classes name: our system trace, not
                    // written again.
                    let Some(s) = self.serials.of_trace(t) else {
                        return Ok(());
                    };
                    s
                };
                let frames = t
                    .frame_ids
                    .iter()
                    .map(|&f| self.frame_id(f))
                    .collect::<Result<Vec<u64>, BadDump>>()?;
                record(out, tag::TRACE, 0, |b| {
                    u4(b, serial);
                    u4(b, thread);
                    u4(b, frames.len() as u32);
                    frames.iter().for_each(|&f| u8_(b, f));
                });
            }
            // Heap dump framing is the caller's; HotSpot writes no other
            // record, and anything else has no meaning in our stream.
            _ => {}
        }
        Ok(())
    }

    /// Tag the heap sub-records in `b` in place (identifiers of this
    /// dump's number, trace and thread serials ours), from where `scan`
    /// stands: a run of a heap record's body, read in pieces of any size.
    /// Returns how many bytes of `b` are done; the rest (the start of a
    /// sub-record whose fixed part `b` does not hold whole) must come again
    /// at the front of the next piece. Arrays are done as far as `b` goes
    /// (`scan` says what is left of them), so a piece never has to hold
    /// more than one instance or CLASS DUMP. Nothing but this dump's bytes
    /// is read or kept, and the lengths of records and sub-records never
    /// change. (A raw translation has none to do: its heap records are
    /// kept as they are.)
    pub fn tag_heap(&mut self, b: &mut [u8], scan: &mut HeapScan) -> Result<usize, BadDump> {
        let mut at = 0usize;
        loop {
            let left = b.len() - at;
            match *scan {
                HeapScan::Values(n) => {
                    let k = n.min(left as u64);
                    at += k as usize;
                    if k < n {
                        *scan = HeapScan::Values(n - k);
                        return Ok(at);
                    }
                    *scan = HeapScan::Start;
                }
                HeapScan::Elements(n) => {
                    let k = n.min((left / 8) as u64);
                    let end = at + k as usize * 8;
                    self.tag_ids(&mut b[at..end])?;
                    at = end;
                    if k < n {
                        *scan = HeapScan::Elements(n - k);
                        return Ok(at);
                    }
                    *scan = HeapScan::Start;
                }
                HeapScan::Start if left == 0 => return Ok(at),
                HeapScan::Start => match self.tag_sub_record(&mut b[at..], scan)? {
                    Some(n) => at += n,
                    None => return Ok(at),
                },
            }
        }
    }

    /// Tag the sub-record `r` begins with: whole, or the fixed part of an
    /// array (`scan` then says what of it follows). Its bytes done, or
    /// `None` (nothing changed) if `r` does not hold them yet.
    fn tag_sub_record(
        &mut self,
        r: &mut [u8],
        scan: &mut HeapScan,
    ) -> Result<Option<usize>, BadDump> {
        let t = r[0];
        let n = root_len(t);
        if n > 0 {
            if r.len() < n {
                return Ok(None);
            }
            self.counts.roots += 1;
            self.tag_at(r, 1)?;
            match t {
                sub_tag::ROOT_JNI_GLOBAL => self.tag_at(r, 9)?,
                sub_tag::ROOT_JNI_LOCAL
                | sub_tag::ROOT_JAVA_FRAME
                | sub_tag::ROOT_NATIVE_STACK
                | sub_tag::ROOT_THREAD_BLOCK => self.map_thread_at(r, 9)?,
                sub_tag::ROOT_THREAD_OBJECT => {
                    self.map_thread_at(r, 9)?;
                    self.map_trace_at(r, 13)?;
                }
                _ => {}
            }
            return Ok(Some(n));
        }
        match t {
            sub_tag::CLASS_DUMP => {
                let Some(n) = class_dump_len(r)? else {
                    return Ok(None);
                };
                self.counts.classes += 1;
                self.class_dump(&mut r[..n])?;
                Ok(Some(n))
            }
            sub_tag::INSTANCE_DUMP => {
                if r.len() < 25 {
                    return Ok(None);
                }
                let class_id = get_u8(r, 13)?;
                let refs = self.refs_of(class_id)?;
                let values_len = get_u4(r, 21)?;
                if refs.values_len != values_len {
                    return Err(BadDump(format!(
                        "INSTANCE DUMP of class 0x{class_id:x} has {values_len} value bytes, its class {}",
                        refs.values_len
                    )));
                }
                let n = 25 + values_len as usize;
                if r.len() < n {
                    return Ok(None);
                }
                self.counts.instances += 1;
                self.tag_at(r, 1)?;
                self.map_trace_at(r, 9)?;
                self.tag_at(r, 13)?;
                for &o in refs.offsets.iter() {
                    self.tag_at(r, 25 + o as usize)?;
                }
                Ok(Some(n))
            }
            sub_tag::OBJECT_ARRAY_DUMP => {
                if r.len() < 25 {
                    return Ok(None);
                }
                self.counts.object_arrays += 1;
                self.tag_at(r, 1)?;
                self.map_trace_at(r, 9)?;
                self.tag_at(r, 17)?;
                *scan = HeapScan::Elements(u64::from(get_u4(r, 13)?));
                Ok(Some(25))
            }
            sub_tag::PRIMITIVE_ARRAY_DUMP => {
                if r.len() < 18 {
                    return Ok(None);
                }
                let ty = BasicType::from_code(r[17])
                    .filter(|&t| t != BasicType::Object)
                    .ok_or_else(|| {
                        BadDump(format!("PRIMITIVE ARRAY DUMP of element type {}", r[17]))
                    })?;
                self.counts.primitive_arrays += 1;
                self.tag_at(r, 1)?;
                self.map_trace_at(r, 9)?;
                let n = u64::from(get_u4(r, 13)?);
                *scan = HeapScan::Values(n * u64::from(ty.size(ID_SIZE)));
                Ok(Some(18))
            }
            t => Err(BadDump(format!("heap sub-record of unknown tag 0x{t:02x}"))),
        }
    }

    /// Tag a run of object array elements (8-byte identifiers, 0 = null).
    fn tag_ids(&self, b: &mut [u8]) -> Result<(), BadDump> {
        let t = self.tag;
        for e in b.chunks_exact_mut(8) {
            let id = u64::from_be_bytes(e.try_into().unwrap_or([0; 8]));
            if id != 0 {
                if id >= id_space::TAGGED_LIMIT {
                    self.tag(id)?;
                }
                e.copy_from_slice(&(id | t).to_be_bytes());
            }
        }
        Ok(())
    }

    /// Tag a whole CLASS DUMP (`raw`, as measured by [`class_dump_len`])
    /// and keep its instance layout for the instances that follow.
    fn class_dump(&mut self, raw: &mut [u8]) -> Result<(), BadDump> {
        let class_id = get_u8(raw, 1)?;
        let super_id = get_u8(raw, 13)?;
        self.tag_at(raw, 1)?;
        self.map_trace_at(raw, 9)?;
        for at in [13, 21, 29, 37, 45, 53] {
            self.tag_at(raw, at)?;
        }
        let entries = ClassDumpEntries::new(raw).collect::<Result<Vec<_>, _>>()?;
        let mut fields = Vec::new();
        for e in entries {
            if let Some(name) = e.name {
                self.tag_at(raw, name)?;
            }
            match e.kind {
                EntryKind::Field => fields.push(e.ty),
                _ if e.ty == BasicType::Object => self.tag_at(raw, e.value)?,
                _ => {}
            }
        }
        self.classes
            .insert(class_id, ClassInfo { super_id, fields });
        Ok(())
    }

    /// Reference offsets of instances of `class_id` (own fields first,
    /// then the superclass's, as INSTANCE DUMP values are laid out).
    fn refs_of(&mut self, class_id: u64) -> Result<Arc<Refs>, BadDump> {
        if let Some((id, r)) = &self.last_refs {
            if *id == class_id {
                return Ok(r.clone());
            }
        }
        let r = match self.refs.get(&class_id) {
            Some(r) => r.clone(),
            None => {
                let mut offsets = Vec::new();
                let mut at = 0u32;
                let mut id = class_id;
                let mut depth = 0;
                while id != 0 {
                    let c = self.classes.get(&id).ok_or_else(|| {
                        BadDump(format!(
                            "an instance of class 0x{class_id:x} comes before the CLASS DUMP of 0x{id:x}"
                        ))
                    })?;
                    for &t in &c.fields {
                        if t == BasicType::Object {
                            offsets.push(at);
                        }
                        at += t.size(ID_SIZE);
                    }
                    id = c.super_id;
                    depth += 1;
                    if depth > self.classes.len() {
                        return Err(BadDump(format!("superclasses of 0x{class_id:x} loop")));
                    }
                }
                let r = Arc::new(Refs {
                    values_len: at,
                    offsets: offsets.into(),
                });
                self.refs.insert(class_id, r.clone());
                r
            }
        };
        self.last_refs = Some((class_id, r.clone()));
        Ok(r)
    }
}

/// HotSpot's heap dumps are 1.0.2 with 8-byte identifiers on the 64-bit
/// VMs this agent supports; anything else is not translated.
pub fn check_header(h: &crate::reader::Header) -> Result<(), BadDump> {
    if h.id_size != ID_SIZE {
        return Err(BadDump(format!(
            "the VM's dump has {}-byte identifiers, 8 expected",
            h.id_size
        )));
    }
    Ok(())
}

/// Test dumps for the agent's unit tests too (`test-support` feature:
/// adds items, changes nothing).
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
#[cfg_attr(not(test), allow(dead_code))]
pub mod tests {
    use super::*;
    use crate::reader::HprofReader;

    fn u2(b: &mut Vec<u8>, v: u16) {
        b.extend_from_slice(&v.to_be_bytes());
    }

    /// A small HotSpot-like dump: strings, one class with a reference
    /// field, one instance pointing at itself, an object array, a thread
    /// root with its trace.
    pub(crate) fn hotspot_like() -> Vec<u8> {
        hotspot_like_with(0)
    }

    /// The same with `symbols` more UTF8 records no record names, method
    /// descriptors as HotSpot writes them (room the agent may take).
    pub fn hotspot_like_with(symbols: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"JAVA PROFILE 1.0.2\0");
        u4(&mut b, 8);
        u8_(&mut b, 0);
        record(&mut b, tag::UTF8, 0, |r| {
            u8_(r, 0x7f00_0010);
            r.extend_from_slice(b"p/Foo");
        });
        record(&mut b, tag::UTF8, 0, |r| {
            u8_(r, 0x7f00_0020);
            r.extend_from_slice(b"next");
        });
        for i in 0..symbols {
            record(&mut b, tag::UTF8, 0, |r| {
                u8_(r, 0x7e00_0000 + i * 8);
                r.extend_from_slice(format!("(Ljava/lang/String;I)V{i}").as_bytes());
            });
        }
        record(&mut b, tag::LOAD_CLASS, 0, |r| {
            u4(r, 1);
            u8_(r, 0xE000_0100);
            u4(r, 1);
            u8_(r, 0x7f00_0010);
        });
        record(&mut b, tag::TRACE, 0, |r| {
            u4(r, 1);
            u4(r, 0);
            u4(r, 0);
        });
        record(&mut b, tag::TRACE, 0, |r| {
            u4(r, 2);
            u4(r, 1);
            u4(r, 0);
        });
        record(&mut b, tag::HEAP_DUMP_SEGMENT, 0, |r| {
            // CLASS DUMP Foo: no constant pool, no statics, field `next`.
            r.push(sub_tag::CLASS_DUMP);
            u8_(r, 0xE000_0100);
            u4(r, 1);
            for _ in 0..6 {
                u8_(r, 0);
            }
            u4(r, 8);
            u2(r, 0);
            u2(r, 0);
            u2(r, 1);
            u8_(r, 0x7f00_0020);
            r.push(2);
            // INSTANCE DUMP whose `next` is itself.
            r.push(sub_tag::INSTANCE_DUMP);
            u8_(r, 0xE000_1000);
            u4(r, 1);
            u8_(r, 0xE000_0100);
            u4(r, 8);
            u8_(r, 0xE000_1000);
            r.push(sub_tag::OBJECT_ARRAY_DUMP);
            u8_(r, 0xE000_2000);
            u4(r, 1);
            u4(r, 2);
            u8_(r, 0xE000_0200);
            u8_(r, 0);
            u8_(r, 0xE000_1000);
            r.push(sub_tag::ROOT_THREAD_OBJECT);
            u8_(r, 0xE000_3000);
            u4(r, 1);
            u4(r, 2);
        });
        record(&mut b, tag::HEAP_DUMP_END, 0, |_| {});
        b
    }

    fn translate(input: &[u8], dump: u32) -> Result<(Vec<u8>, Translator), BadDump> {
        translate_in_pieces(input, dump, usize::MAX)
    }

    /// The heap records' bodies are tagged `piece` bytes at a time, the
    /// way the agent reads a large record: what a piece ends inside of
    /// comes again at the front of the next.
    fn tag_in_pieces(t: &mut Translator, body: &[u8], piece: usize) -> Result<Vec<u8>, BadDump> {
        let (mut out, mut carry, mut scan) = (Vec::new(), Vec::new(), HeapScan::Start);
        for p in body.chunks(piece.max(1)) {
            let mut b = std::mem::take(&mut carry);
            b.extend_from_slice(p);
            let done = t.tag_heap(&mut b, &mut scan)?;
            carry = b.split_off(done);
            out.extend_from_slice(&b);
        }
        if !carry.is_empty() || scan != HeapScan::Start {
            return Err(BadDump("a sub-record runs past its record".into()));
        }
        Ok(out)
    }

    fn translate_in_pieces(
        input: &[u8],
        dump: u32,
        piece: usize,
    ) -> Result<(Vec<u8>, Translator), BadDump> {
        let mut ours = OurClasses {
            system_trace: 300000,
            ..Default::default()
        };
        ours.add("Lp/Foo;", 300005);
        // Dump 0 here: the first dump's raw translation.
        let mut t = if dump == 0 {
            Translator::new_raw(ours, 0)
        } else {
            Translator::new(dump, ours, 0)
        };
        let mut r = HprofReader::with_options(input, crate::reader::ReadOptions::skip_bodies())
            .map_err(|e| BadDump(e.to_string()))?;
        check_header(r.header())?;
        let mut out = Vec::new();
        while let Some(rec) = r.next_record().map_err(|e| BadDump(e.to_string()))? {
            if let RecordBody::HeapDumpStart { .. } = rec.body {
                let mut seg = Vec::new();
                while r
                    .next_heap_sub_record_raw(&mut seg)
                    .map_err(|e| BadDump(e.to_string()))?
                    .is_some()
                {}
                // A raw translation's heap records go as they are.
                if !t.is_raw() {
                    seg = tag_in_pieces(&mut t, &seg, piece)?;
                }
                record_header(&mut out, tag::HEAP_DUMP_SEGMENT, 0, seg.len() as u32);
                out.extend_from_slice(&seg);
            } else if rec.tag == tag::HEAP_DUMP_END {
                record_header(&mut out, tag::HEAP_DUMP_END, 0, 0);
            } else {
                t.record(&rec, &mut out)?;
            }
        }
        Ok((out, t))
    }

    /// However the bytes come in pieces, the result is the same.
    #[test]
    fn tagging_in_pieces_of_any_size_gives_the_same_bytes() {
        let input = hotspot_like();
        let (whole, _) = translate(&input, 2).unwrap();
        for piece in [1, 2, 3, 7, 8, 9, 17, 25, 26, 64, 100] {
            let (got, t) = translate_in_pieces(&input, 2, piece).unwrap();
            assert_eq!(got, whole, "pieces of {piece}");
            assert_eq!(t.counts.instances, 1);
            assert_eq!(t.counts.object_arrays, 1);
            assert_eq!(t.counts.roots, 1);
        }
    }

    #[test]
    fn every_id_is_tagged_and_serials_are_ours_or_fresh() {
        let (out, t) = translate(&hotspot_like(), 3).unwrap();
        let mut file = b"JAVA PROFILE 1.0.2\0".to_vec();
        u4(&mut file, 8);
        u8_(&mut file, 0);
        file.extend_from_slice(&out);
        let p = crate::reader::collect(HprofReader::new(&file[..]).unwrap()).unwrap();
        let tag = 3u64 << 48;
        let foo = p.class_by_name("p.Foo").expect("LOAD CLASS p.Foo");
        assert_eq!(foo.class_id, tag | 0xE000_0100);
        assert!(foo.serial >= FIRST_FRESH_SERIAL, "a serial of its own");
        assert_eq!(foo.trace_serial, 300005, "our load trace");
        let d = &p.heap_dumps[0];
        let i = &d.instances[0];
        assert_eq!(i.object_id, tag | 0xE000_1000);
        assert_eq!(i.class_id, foo.class_id);
        assert_eq!(
            i.trace_serial, 300000,
            "HotSpot's dummy trace is our system trace"
        );
        let f = p.field_values(d, i).unwrap();
        assert_eq!(f[0].1.as_object_id(), Some(tag | 0xE000_1000));
        let a = &d.object_arrays[0];
        assert_eq!(a.elements.as_deref(), Some(&[0, tag | 0xE000_1000][..]));
        assert_eq!(a.array_class_id, tag | 0xE000_0200);
        let root = d.roots[0];
        assert_eq!(root.object_id, tag | 0xE000_3000);
        let crate::reader::RootKind::ThreadObject {
            thread_serial,
            trace_serial,
        } = root.kind
        else {
            panic!("{root:?}")
        };
        assert!(thread_serial >= FIRST_FRESH_SERIAL && trace_serial >= FIRST_FRESH_SERIAL);
        assert!(p
            .traces
            .iter()
            .any(|tr| tr.serial == trace_serial && tr.thread_serial == thread_serial));
        assert_eq!(t.counts.instances, 1);
        assert_eq!(t.counts.load_traces_ours, 1);
        assert_eq!(p.string(tag | 0x7f00_0020), Some("next"));
        assert_eq!(
            p.class_name(foo.class_id),
            Some("p.Foo"),
            "spelled like ours"
        );
        assert_ne!(
            foo.name_id,
            tag | 0x7f00_0010,
            "a name of its own, in Java spelling"
        );
    }

    /// The first dump: heap records byte for byte as the VM wrote them,
    /// the VM's stack trace and thread serials kept (and written), class
    /// names and frames in spaces of their own.
    #[test]
    fn a_raw_translation_keeps_the_heap_records_and_serials() {
        let input = hotspot_like();
        let (out, t) = translate(&input, 0).unwrap();
        assert!(t.is_raw() && t.raw_serials_fit());
        let seg_at = |b: &[u8]| {
            b.windows(1)
                .position(|w| w[0] == tag::HEAP_DUMP_SEGMENT)
                .unwrap()
        };
        // The segment (header and body) is the input's.
        let (i, o) = (seg_at(&input[31..]) + 31, seg_at(&out));
        assert_eq!(&out[o..], &input[i..]);
        let mut file = b"JAVA PROFILE 1.0.2\0".to_vec();
        u4(&mut file, 8);
        u8_(&mut file, 0);
        file.extend_from_slice(&out);
        let p = crate::reader::collect(HprofReader::new(&file[..]).unwrap()).unwrap();
        let foo = p.class_by_name("p.Foo").expect("LOAD CLASS p.Foo");
        assert_eq!(foo.class_id, 0xE000_0100, "the VM's address");
        assert!(foo.serial >= FIRST_FRESH_SERIAL);
        assert_eq!(foo.name_id & id_space::VM_NAMES, id_space::VM_NAMES);
        assert_eq!(p.string(0x7f00_0020), Some("next"));
        let d = &p.heap_dumps[0];
        assert_eq!(d.instances[0].trace_serial, 1, "the VM's dummy trace");
        assert!(p
            .traces
            .iter()
            .any(|tr| tr.serial == 1 && tr.frame_ids.is_empty()));
        assert!(p
            .traces
            .iter()
            .any(|tr| tr.serial == 2 && tr.thread_serial == 1));
        // Serials that would reach ours are noticed, and a restart is
        // tagged.
        let mut t = Translator::new_raw(OurClasses::default(), 0);
        let big = crate::reader::Trace {
            serial: 300_000,
            thread_serial: 5,
            frame_ids: vec![],
        };
        let rec = Record {
            tag: tag::TRACE,
            time: 0,
            offset: 0,
            length: 0,
            body: RecordBody::Trace(big),
        };
        t.record(&rec, &mut Vec::new()).unwrap();
        assert!(!t.raw_serials_fit());
        t.restart_tagged(1);
        assert!(!t.is_raw());
        assert_eq!(
            t.tag(0x1000).unwrap(),
            (2 << 48) | 0x1000,
            "a tagged dump is number 2 at least"
        );
        // Raw identifiers must stay below the agent's spaces.
        let raw = Translator::new_raw(OurClasses::default(), 0);
        assert!(raw.tag(id_space::RAW_LIMIT).is_err());
        assert_eq!(raw.tag(0x7fff_0000_1000).unwrap(), 0x7fff_0000_1000);
    }

    #[test]
    fn damaged_dumps_are_errors_not_panics() {
        let good = hotspot_like();
        // Every single-byte change and every truncation either translates
        // or fails cleanly.
        for i in 0..good.len() {
            for v in [0u8, 0xFF, 0x21] {
                let mut bad = good.clone();
                bad[i] = v;
                let _ = translate(&bad, 1);
            }
            let _ = translate(&good[..i], 1);
            let _ = translate(&good[..i], 0);
        }
        // An instance whose values do not fit its class is refused.
        let mut bad = good.clone();
        let inst = [sub_tag::INSTANCE_DUMP, 0, 0, 0, 0, 0xE0, 0, 0x10, 0];
        let at = bad.windows(9).position(|w| w == inst).unwrap() + 21;
        bad[at + 3] = 16;
        assert!(translate(&bad, 1).is_err());
        // A high identifier cannot be tagged.
        assert!(Translator::new(1, OurClasses::default(), 0)
            .tag(1 << 50)
            .is_err());
    }
}
