//! The one pass over the dump: every object gets a number in file order
//! (its "stream number"), its identifier, class, array length, file offset
//! and allocation trace; its references are kept as identifiers, to be
//! turned into numbers once every identifier is known (`index.rs`).
//!
//! The references of an instance are found with its class's layout, so
//! classes must be known before their instances. HotSpot writes every CLASS
//! DUMP first; the agent's JVMTI walk writes them last. The pass starts
//! assuming the former; at the first object of an unknown class it stops,
//! collects the dump's classes in a quick pass of its own, and starts over.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use rustc_hash::FxHashMap;

use crate::reader::{
    java_class_name, ArrayHead, ArrayKind, BasicType, ClassDump, HeapVisitor, HprofReader,
    InstanceView, ReadError, ReadOptions, RecordBody, Root, SkipForward,
};

use super::alloc::grow;
use super::ids::KeyVec;
use super::meta::{FrameInfo, RefKind, TraceInfo};
use super::store::{Sink, Writer};
use super::Progress;

/// Per-object sections streamed to the index file during the pass.
pub const SEC_OFFSETS: u16 = 2;
pub const SEC_TRACE: u16 = 5;

/// A class as the dump describes it (names still string IDs).
#[derive(Debug, Clone)]
pub struct RawClass {
    pub dump: Option<ClassDump>,
    /// Name from LOAD CLASS, Java style; set at the end of the pass.
    pub name: String,
    pub kind: Kind,
    /// Stream number of the class object.
    pub object: Option<u32>,
}

/// What a class's objects are, as far as the pass knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Instance,
    ObjectArray,
    PrimitiveArray(BasicType),
    /// Objects point to a class with no CLASS DUMP.
    Unknown,
}

/// Where an instance's references are, per class.
#[derive(Debug, Clone)]
enum Plan {
    Refs {
        /// Byte offsets of reference fields in the values.
        offsets: Vec<u32>,
        /// The referent field of a `java.lang.ref.Reference`, and its kind.
        referent: Option<(u32, RefKind)>,
        values_len: u32,
    },
    /// The class chain is incomplete: references unknown.
    Opaque,
}

/// Everything the pass produced.
pub struct Collected {
    pub id_size: u32,
    pub dump: u32,
    /// Stream number -> identifier.
    pub keys: KeyVec,
    pub class_of: Vec<u32>,
    /// Array length (0 for instances and class objects).
    pub length: Vec<u32>,
    /// References per object, as identifiers.
    pub fwd_offsets: Vec<u32>,
    pub fwd_keys: KeyVec,
    /// Positions in `fwd_keys` of referent references, with their kind.
    pub weak: Vec<(u32, RefKind)>,
    pub classes: Vec<RawClass>,
    /// Stream numbers of the class objects and their class, by number.
    pub class_objects: Vec<(u32, u32)>,
    /// GC roots: identifier and sub-record tag, in file order.
    pub roots: Vec<(u64, u8)>,
    pub frames: Vec<FrameInfo>,
    pub traces: Vec<TraceInfo>,
    /// Some object names a trace with frames.
    pub has_traces: bool,
    pub strings: FxHashMap<u64, String>,
    pub warnings: Vec<String>,
}

/// Why a pass ended early.
pub enum Stop {
    Read(ReadError),
    Io(io::Error),
    /// An object of a class not described yet: classes come last.
    ClassesLast,
    TooMany(u64),
    /// The allocator refused room for more of `what` (a count of them held
    /// so far) at `offset`.
    Memory {
        what: &'static str,
        held: usize,
        offset: u64,
    },
}

impl From<ReadError> for Stop {
    fn from(e: ReadError) -> Self {
        Stop::Read(e)
    }
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Io(e)
    }
}

/// A file read with its progress reported.
struct Counted<'p> {
    file: File,
    done: u64,
    next: u64,
    progress: &'p dyn Progress,
}

impl Counted<'_> {
    fn add(&mut self, n: u64) {
        self.done += n;
        if self.done >= self.next {
            self.progress.advance(self.done);
            self.next = self.done + (32 << 20);
        }
    }
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.add(n as u64);
        Ok(n)
    }
}

impl SkipForward for Counted<'_> {
    fn skip_forward(&mut self, n: u64) -> io::Result<bool> {
        let moved = self.file.skip_forward(n)?;
        if moved {
            self.add(n);
        }
        Ok(moved)
    }
}

/// Reads dump number `dump` (from 1) of the file at `path`.
pub fn collect(
    path: &Path,
    dump: u32,
    out: &mut Writer,
    progress: &dyn Progress,
) -> Result<Collected, String> {
    let where_ = |e: Stop| {
        match e {
        Stop::Read(e) => format!("{}: {e}", path.display()),
        Stop::Io(e) => format!("{}: {e}", path.display()),
        Stop::ClassesLast => unreachable!("handled below"),
        Stop::TooMany(n) => format!(
            "{}: more than {n} objects or references: beyond what one index can hold",
            path.display()
        ),
        Stop::Memory { what, held, offset } => format!(
            "{}: out of memory at offset {offset}: no room for more than {held} {what} (the dump holds more than this process may allocate)",
            path.display()
        ),
    }
    };
    let len = std::fs::metadata(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?
        .len();
    progress.stage("reading the dump", len);
    match pass(path, dump, out, progress, None) {
        Err(Stop::ClassesLast) => {
            progress.stage("reading the dump's classes (they come last)", len);
            let classes = class_pass(path, dump, progress).map_err(where_)?;
            progress.stage("reading the dump", len);
            pass(path, dump, out, progress, Some(classes)).map_err(|e| match e {
                Stop::ClassesLast => unreachable!("classes are known"),
                e => where_(e),
            })
        }
        r => r.map_err(where_),
    }
}

fn open<'p>(path: &Path, progress: &'p dyn Progress) -> Result<HprofReader<Counted<'p>>, Stop> {
    let file = File::open(path)?;
    let counted = Counted {
        file,
        done: 0,
        next: 32 << 20,
        progress,
    };
    Ok(HprofReader::seekable(counted, ReadOptions::full())?)
}

/// Numbers the heap dumps of a file as their records go by: a HEAP DUMP
/// record is one dump, a run of HEAP DUMP SEGMENTs up to HEAP DUMP END
/// another.
#[derive(Default)]
struct DumpCounter {
    seen: u32,
    segments_open: bool,
}

impl DumpCounter {
    /// A heap dump record begins: the number of the dump it belongs to.
    fn start(&mut self, segment: bool) -> u32 {
        if !segment || !self.segments_open {
            self.seen += 1;
        }
        self.segments_open = segment;
        self.seen
    }

    fn end(&mut self) {
        self.segments_open = false;
    }
}

fn missing_dump(seen: u32, dump: u32) -> Stop {
    Stop::Read(ReadError::corrupt(
        "file",
        0,
        if seen == 0 {
            "no heap dump in the file".to_string()
        } else {
            format!("the file holds {seen} heap dump(s); dump {dump} was asked for")
        },
    ))
}

/// The quick pass for dumps whose classes come last.
fn class_pass(path: &Path, dump: u32, progress: &dyn Progress) -> Result<Vec<ClassDump>, Stop> {
    struct Classes(Vec<ClassDump>);
    impl HeapVisitor for Classes {
        type Error = Stop;
        fn root(&mut self, _: Root) -> Result<(), Stop> {
            Ok(())
        }
        fn class_dump(&mut self, c: ClassDump) -> Result<(), Stop> {
            self.0.push(c);
            Ok(())
        }
        fn instance(&mut self, _: InstanceView<'_>) -> Result<(), Stop> {
            Ok(())
        }
        fn object_array(&mut self, _: &ArrayHead, _: &[u8], _: u32) -> Result<(), Stop> {
            Ok(())
        }
        fn primitive_array(&mut self, _: &ArrayHead) -> Result<(), Stop> {
            Ok(())
        }
    }
    let mut reader = open(path, progress)?;
    let mut classes = Classes(Vec::new());
    let mut dumps = DumpCounter::default();
    while let Some(rec) = reader.next_record()? {
        match rec.body {
            RecordBody::HeapDumpStart { segment } if dumps.start(segment) == dump => {
                reader.scan_heap_record(&mut classes)?;
            }
            RecordBody::HeapDumpEnd => dumps.end(),
            _ => {}
        }
    }
    if dumps.seen < dump {
        return Err(missing_dump(dumps.seen, dump));
    }
    Ok(classes.0)
}

fn pass(
    path: &Path,
    dump: u32,
    out: &mut Writer,
    progress: &dyn Progress,
    known: Option<Vec<ClassDump>>,
) -> Result<Collected, Stop> {
    let mut reader = open(path, progress)?;
    let id_size = reader.id_size();
    let mut c = Collector::new(id_size, out, known.is_some());
    for cd in known.into_iter().flatten() {
        c.describe(cd);
    }
    let mut load_class: FxHashMap<u64, u64> = FxHashMap::default();
    let mut frames: FxHashMap<u64, crate::reader::Frame> = FxHashMap::default();
    let mut class_serials: FxHashMap<u32, u64> = FxHashMap::default();
    let mut raw_traces: Vec<crate::reader::Trace> = Vec::new();
    let mut strings: FxHashMap<u64, String> = FxHashMap::default();
    let mut dumps = DumpCounter::default();
    // Names are needed while the dump is read (reference kinds); HotSpot
    // and the agent both write them before it.
    let mut named = false;
    while let Some(rec) = reader.next_record()? {
        match rec.body {
            RecordBody::HeapDumpStart { segment } if dumps.start(segment) == dump => {
                if !named {
                    c.name_classes(&load_class, &strings);
                    named = true;
                }
                reader.scan_heap_record(&mut c)?;
            }
            RecordBody::HeapDumpEnd => dumps.end(),
            RecordBody::Utf8 { id, text } => {
                strings.insert(id, text);
            }
            RecordBody::LoadClass(lc) => {
                load_class.insert(lc.class_id, lc.name_id);
                class_serials.insert(lc.class_serial, lc.name_id);
            }
            RecordBody::Frame(f) => {
                frames.insert(f.id, f);
            }
            RecordBody::Trace(t) => raw_traces.push(t),
            _ => {}
        }
    }
    if dumps.seen < dump {
        return Err(missing_dump(dumps.seen, dump));
    }
    c.name_classes(&load_class, &strings);
    progress.advance(u64::MAX);
    let Collector {
        keys,
        class_of,
        length,
        offsets,
        trace,
        fwd_offsets,
        fwd_keys,
        weak,
        classes,
        class_objects,
        roots,
        traced,
        mut warnings,
        opaque_instances,
        mismatched,
        out,
        ..
    } = c;
    offsets.finish(out)?;
    trace.finish(out)?;
    if opaque_instances > 0 {
        warnings.push(format!(
            "{opaque_instances} instance(s) of classes without a complete CLASS DUMP chain: their references are unknown"
        ));
    }
    if mismatched > 0 {
        warnings.push(format!(
            "{mismatched} instance(s) whose field values do not match their class's fields: their references are unknown"
        ));
    }
    // Traces and frames, names resolved.
    let name = |id: u64| strings.get(&id).cloned().unwrap_or_default();
    let mut frame_index: FxHashMap<u64, u32> = FxHashMap::default();
    let mut frame_list = Vec::new();
    let mut traces = Vec::new();
    let mut has_traces = false;
    for t in raw_traces {
        let mut ids = Vec::with_capacity(t.frame_ids.len());
        for fid in t.frame_ids {
            let next = frame_list.len() as u32;
            let i = *frame_index.entry(fid).or_insert_with(|| {
                let f = frames.get(&fid);
                frame_list.push(match f {
                    Some(f) => FrameInfo {
                        method: name(f.method_name_id),
                        signature: name(f.signature_id),
                        source: name(f.source_file_id),
                        class: class_serials
                            .get(&f.class_serial)
                            .map(|&n| java_class_name(&name(n)))
                            .unwrap_or_default(),
                        line: f.line,
                    },
                    None => FrameInfo {
                        method: format!("<frame 0x{fid:x}>"),
                        signature: String::new(),
                        source: String::new(),
                        class: String::new(),
                        line: -1,
                    },
                });
                next
            });
            ids.push(i);
        }
        if !ids.is_empty() && traced.contains_key(&t.serial) {
            has_traces = true;
        }
        traces.push(TraceInfo {
            serial: t.serial,
            frames: ids,
        });
    }
    traces.sort_by_key(|t| t.serial);
    traces.dedup_by_key(|t| t.serial);
    Ok(Collected {
        id_size,
        dump,
        keys,
        class_of,
        length,
        fwd_offsets,
        fwd_keys,
        weak,
        classes,
        class_objects,
        roots,
        frames: frame_list,
        traces,
        has_traces,
        strings,
        warnings,
    })
}

struct Collector<'w> {
    id_size: u32,
    out: &'w mut Writer,
    /// Classes were collected before this pass: an unknown class is final.
    classes_known: bool,
    keys: KeyVec,
    class_of: Vec<u32>,
    length: Vec<u32>,
    offsets: Sink<u64>,
    trace: Sink<u32>,
    fwd_offsets: Vec<u32>,
    fwd_keys: KeyVec,
    weak: Vec<(u32, RefKind)>,
    classes: Vec<RawClass>,
    by_id: FxHashMap<u64, u32>,
    plans: Vec<Option<Plan>>,
    primitive_classes: [u32; 12],
    class_objects: Vec<(u32, u32)>,
    roots: Vec<(u64, u8)>,
    /// Trace serials objects name, with a count.
    traced: FxHashMap<u32, u64>,
    warnings: Vec<String>,
    opaque_instances: u64,
    mismatched: u64,
    /// Names from LOAD CLASS, Java style, by class ID.
    names: FxHashMap<u64, String>,
    /// String IDs whose text is `referent`.
    referent_names: Vec<u64>,
    last_class: (u64, u32),
    /// Offset of the object being read (where a refused allocation is
    /// reported).
    at: u64,
}

/// A class's kind told by its name (`int[]`, `java.lang.String[]`).
pub fn kind_of_name(name: &str) -> Kind {
    match name.strip_suffix("[]") {
        None => Kind::Instance,
        Some(elem) => match elem {
            "boolean" => Kind::PrimitiveArray(BasicType::Boolean),
            "char" => Kind::PrimitiveArray(BasicType::Char),
            "float" => Kind::PrimitiveArray(BasicType::Float),
            "double" => Kind::PrimitiveArray(BasicType::Double),
            "byte" => Kind::PrimitiveArray(BasicType::Byte),
            "short" => Kind::PrimitiveArray(BasicType::Short),
            "int" => Kind::PrimitiveArray(BasicType::Int),
            "long" => Kind::PrimitiveArray(BasicType::Long),
            _ => Kind::ObjectArray,
        },
    }
}

/// "Not numbered yet."
pub const UNSET: u32 = u32::MAX;

impl<'w> Collector<'w> {
    fn new(id_size: u32, out: &'w mut Writer, classes_known: bool) -> Self {
        let offsets = out.sink(SEC_OFFSETS);
        let trace = out.sink(SEC_TRACE);
        Collector {
            id_size,
            out,
            classes_known,
            keys: KeyVec::default(),
            class_of: Vec::new(),
            length: Vec::new(),
            offsets,
            trace,
            fwd_offsets: vec![0],
            fwd_keys: KeyVec::default(),
            weak: Vec::new(),
            classes: Vec::new(),
            by_id: FxHashMap::default(),
            plans: Vec::new(),
            primitive_classes: [UNSET; 12],
            class_objects: Vec::new(),
            roots: Vec::new(),
            traced: FxHashMap::default(),
            warnings: Vec::new(),
            opaque_instances: 0,
            mismatched: 0,
            names: FxHashMap::default(),
            referent_names: Vec::new(),
            last_class: (0, UNSET),
            at: 0,
        }
    }

    fn name_classes(&mut self, load_class: &FxHashMap<u64, u64>, strings: &FxHashMap<u64, String>) {
        for (&cid, nid) in load_class {
            if let Some(n) = strings.get(nid) {
                self.names.entry(cid).or_insert_with(|| java_class_name(n));
            }
        }
        for c in &mut self.classes {
            if let Some(n) = c.dump.as_ref().and_then(|d| self.names.get(&d.class_id)) {
                c.name = n.clone();
            }
        }
        self.referent_names = strings
            .iter()
            .filter(|(_, t)| t.as_str() == "referent")
            .map(|(&id, _)| id)
            .collect();
    }

    /// The class numbered for `id` (a stand-in until its CLASS DUMP).
    fn class_index(&mut self, id: u64) -> u32 {
        if let Some(&i) = self.by_id.get(&id) {
            return i;
        }
        let i = self.classes.len() as u32;
        let name = self
            .names
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("<class 0x{id:x}>"));
        self.classes.push(RawClass {
            dump: None,
            name,
            kind: Kind::Unknown,
            object: None,
        });
        self.plans.push(None);
        self.by_id.insert(id, i);
        i
    }

    fn describe(&mut self, cd: ClassDump) -> u32 {
        let i = self.class_index(cd.class_id);
        let c = &mut self.classes[i as usize];
        if let Some(n) = self.names.get(&cd.class_id) {
            c.name = n.clone();
        }
        c.dump = Some(cd);
        i
    }

    #[inline]
    fn class_of_object(&mut self, id: u64) -> Result<u32, Stop> {
        if self.last_class.0 == id && self.last_class.1 != UNSET {
            return Ok(self.last_class.1);
        }
        let known = self.by_id.get(&id).copied();
        let i = match known {
            Some(i) if self.classes[i as usize].dump.is_some() || self.classes_known => i,
            _ if !self.classes_known => return Err(Stop::ClassesLast),
            _ => self.class_index(id),
        };
        self.last_class = (id, i);
        Ok(i)
    }

    fn new_object(
        &mut self,
        id: u64,
        class: u32,
        length: u32,
        offset: u64,
        trace: u32,
    ) -> Result<u32, Stop> {
        let s = self.class_of.len() as u64;
        if s >= super::csr::MAX_OBJECTS {
            return Err(Stop::TooMany(super::csr::MAX_OBJECTS));
        }
        self.at = offset;
        let refused = |_| Stop::Memory {
            what: "objects",
            held: s as usize,
            offset,
        };
        grow(&mut self.class_of).map_err(refused)?;
        grow(&mut self.length).map_err(refused)?;
        grow(&mut self.fwd_offsets).map_err(refused)?;
        self.keys.push(id).map_err(refused)?;
        self.class_of.push(class);
        self.length.push(length);
        self.offsets.push(self.out, offset)?;
        self.trace.push(self.out, trace)?;
        *self.traced.entry(trace).or_default() += 1;
        Ok(s as u32)
    }

    #[inline]
    fn reference(&mut self, id: u64) -> Result<(), Stop> {
        if id != 0 {
            if self.fwd_keys.len() as u64 >= u64::from(u32::MAX) {
                return Err(Stop::TooMany(u64::from(u32::MAX)));
            }
            let (held, offset) = (self.fwd_keys.len(), self.at);
            self.fwd_keys.push(id).map_err(|_| Stop::Memory {
                what: "references",
                held,
                offset,
            })?;
        }
        Ok(())
    }

    fn end_object(&mut self) {
        self.fwd_offsets.push(self.fwd_keys.len() as u32);
    }

    fn make_plan(&self, class: u32) -> Plan {
        let id_size = self.id_size;
        let mut offsets = Vec::new();
        let mut referent = None;
        let mut kind = None;
        let mut at = 0u32;
        let mut c = class;
        for _ in 0..=self.classes.len() {
            let rc = &self.classes[c as usize];
            let Some(cd) = &rc.dump else {
                return Plan::Opaque;
            };
            let name = rc.name.as_str();
            kind = kind.or(match name {
                "java.lang.ref.SoftReference" => Some(RefKind::Soft),
                "java.lang.ref.WeakReference" => Some(RefKind::Weak),
                "java.lang.ref.PhantomReference" => Some(RefKind::Phantom),
                "java.lang.ref.FinalReference" => Some(RefKind::Final),
                _ => None,
            });
            for f in &cd.instance_fields {
                if f.ty == BasicType::Object {
                    if name == "java.lang.ref.Reference" && self.referent_names.contains(&f.name_id)
                    {
                        referent = Some((at, kind.unwrap_or(RefKind::Weak)));
                    }
                    offsets.push(at);
                }
                at += f.ty.size(id_size);
            }
            if cd.super_class_id == 0 {
                return Plan::Refs {
                    offsets,
                    referent,
                    values_len: at,
                };
            }
            match self.by_id.get(&cd.super_class_id) {
                Some(&s) => c = s,
                None => return Plan::Opaque,
            }
        }
        Plan::Opaque // a superclass loop
    }

    /// Records the references of an instance's values.
    fn instance_refs(&mut self, plan: &Plan, values: &[u8]) -> Result<(), Stop> {
        let (offsets, referent) = match plan {
            Plan::Opaque => {
                self.opaque_instances += 1;
                return Ok(());
            }
            Plan::Refs { values_len, .. } if *values_len as usize != values.len() => {
                self.mismatched += 1;
                return Ok(());
            }
            Plan::Refs {
                offsets, referent, ..
            } => (offsets, *referent),
        };
        let ids = self.id_size as usize;
        for &at in offsets {
            let id = be(&values[at as usize..at as usize + ids]);
            if id != 0 {
                if let Some((r, kind)) = referent.filter(|&(r, _)| r == at) {
                    debug_assert_eq!(r, at);
                    let (held, offset) = (self.weak.len(), self.at);
                    grow(&mut self.weak).map_err(|_| Stop::Memory {
                        what: "references' referents",
                        held,
                        offset,
                    })?;
                    self.weak.push((self.fwd_keys.len() as u32, kind));
                }
                self.reference(id)?;
            }
        }
        Ok(())
    }

    fn primitive_class(&mut self, t: BasicType) -> u32 {
        let slot = t.code() as usize;
        if self.primitive_classes[slot] != UNSET {
            return self.primitive_classes[slot];
        }
        let name = format!("{}[]", t.java_name());
        let found = self
            .classes
            .iter()
            .position(|c| c.name == name && c.dump.is_some());
        let i = match found {
            Some(i) => i as u32,
            None => {
                let i = self.classes.len() as u32;
                self.classes.push(RawClass {
                    dump: None,
                    name,
                    kind: Kind::PrimitiveArray(t),
                    object: None,
                });
                self.plans.push(None);
                i
            }
        };
        self.classes[i as usize].kind = Kind::PrimitiveArray(t);
        self.primitive_classes[slot] = i;
        i
    }
}

#[inline]
fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x))
}

impl HeapVisitor for Collector<'_> {
    type Error = Stop;

    fn root(&mut self, root: Root) -> Result<(), Stop> {
        if root.object_id != 0 {
            let held = self.roots.len();
            grow(&mut self.roots).map_err(|_| Stop::Memory {
                what: "GC roots",
                held,
                offset: root.offset,
            })?;
            self.roots.push((root.object_id, root.kind.tag()));
        }
        Ok(())
    }

    fn class_dump(&mut self, cd: ClassDump) -> Result<(), Stop> {
        let refs: Vec<u64> = [
            cd.super_class_id,
            cd.class_loader_id,
            cd.signers_id,
            cd.protection_domain_id,
        ]
        .into_iter()
        .chain(
            cd.static_fields
                .iter()
                .filter_map(|s| s.value.non_null_ref()),
        )
        .chain(
            cd.constant_pool
                .iter()
                .filter_map(|c| c.value.non_null_ref()),
        )
        .collect();
        let (id, offset, trace) = (cd.class_id, cd.offset, cd.trace_serial);
        let class = self.describe(cd);
        let s = self.new_object(id, UNSET, 0, offset, trace)?;
        self.classes[class as usize].object = Some(s);
        self.class_objects.push((s, class));
        for r in refs {
            self.reference(r)?;
        }
        self.end_object();
        Ok(())
    }

    fn instance(&mut self, i: InstanceView<'_>) -> Result<(), Stop> {
        let class = self.class_of_object(i.class_id)?;
        self.new_object(i.object_id, class, 0, i.offset, i.trace_serial)?;
        let plan = match self.plans[class as usize].take() {
            Some(p) => p,
            None => self.make_plan(class),
        };
        let r = self.instance_refs(&plan, i.values);
        self.plans[class as usize] = Some(plan);
        r?;
        self.end_object();
        Ok(())
    }

    fn object_array(&mut self, head: &ArrayHead, elements: &[u8], first: u32) -> Result<(), Stop> {
        let ids = self.id_size as usize;
        if first == 0 {
            let ArrayKind::Objects { class_id } = head.kind else {
                unreachable!("object arrays only")
            };
            let class = self.class_of_object(class_id)?;
            if self.classes[class as usize].kind == Kind::Unknown {
                self.classes[class as usize].kind = Kind::ObjectArray;
            }
            self.new_object(
                head.array_id,
                class,
                head.length,
                head.offset,
                head.trace_serial,
            )?;
        }
        for e in elements.chunks_exact(ids) {
            self.reference(be(e))?;
        }
        if first as usize + elements.len() / ids == head.length as usize {
            self.end_object();
        }
        Ok(())
    }

    fn primitive_array(&mut self, head: &ArrayHead) -> Result<(), Stop> {
        let ArrayKind::Primitives(t) = head.kind else {
            unreachable!("primitive arrays only")
        };
        let class = self.primitive_class(t);
        self.new_object(
            head.array_id,
            class,
            head.length,
            head.offset,
            head.trace_serial,
        )?;
        self.end_object();
        Ok(())
    }
}
