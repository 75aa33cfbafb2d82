//! The heap walk visitor: turns FollowReferences callbacks into heap dump
//! sub-records, streamed out in batches while the walk runs.
//!
//! Streaming relies on how HotSpot walks: all roots are reported first,
//! then each reachable object is visited once, and everything a visit
//! reports (the reference to the object's class, then its fields or
//! elements, or its primitive array contents) comes in one run of
//! callbacks with that object as referrer. So one open record — the object
//! being visited — is enough: when the referrer changes, the record is
//! complete and goes into the current batch. Nothing else of the heap is
//! kept. A referrer that shows up again after its record was closed would
//! lose those references; they are counted (`late_refs`) and reported.
//!
//! Class mirrors are not records of their own during the walk: what their
//! visit reports (loader, signers, protection domain, constant pool
//! entries, static values) is kept per class and written as CLASS DUMPs at
//! the end, superclasses first (`epilogue.rs`).
//!
//! Classes the dump's context cannot lay out — loaded after the context was
//! built (the walk's safepoint comes later), or not yet prepared when it
//! was — are not guessed at: their objects and static values are kept by
//! JVMTI field index (`Leftovers`) and written after the walk, once the
//! caller has described those classes (see `epilogue.rs`). docs/heap_dump.md,
//! "Classes loaded while a dump starts".

use super::layout::{ClassKind, Layout, Slot};
use crate::format::{
    BasicType, ClassDump, ConstantPoolEntry, FieldDecl, InstanceDump, InstanceValues, NamedValue,
    ObjArrayDump, PrimArrayDump, PrimElements, ProfileFormat, Root, Value,
};
use crate::jvmti::heap::{prim_size, HeapVisitor, Prim, RefDetail, Reference};
use crate::jvmti::sys::heap_ref;
use crate::tables::classes::CLASS_SERIAL_BASE;
use crate::tables::ids::{make_tag, split_tag, TagKind, OBJECT_ID_BASE};
use crate::tables::objects::NO_OWNER;
use crate::tables::threads::UNKNOWN_THREAD_SERIAL;
use crate::tables::ClassTable;
use crate::tables::{ObjectInfo, ObjectTable, ThreadTable};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A class as the dump sees it.
#[derive(Clone, Debug)]
pub struct ClassInfo {
    pub serial: u32,
    pub object_id: u64,
    pub signature: Arc<str>,
    pub kind: ClassKind,
    pub super_serial: Option<u32>,
    pub load_trace: u32,
    pub layout: Layout,
}

/// Everything fixed for one dump, shared by the walk and the writer.
#[derive(Debug, Default)]
pub struct DumpContext {
    pub id_size: u8,
    pub system_trace: u32,
    /// By class serial - 100000; `None` for classes not loaded now.
    pub classes: Vec<Option<ClassInfo>>,
    /// Trace serial of each allocation site, by site index (the object
    /// table's `owner`); empty when allocation sites are not tracked.
    pub site_traces: Vec<u32>,
    /// Object arrays keep their real length (`arraylen=y`).
    pub true_array_len: bool,
    /// Object IDs of known Thread objects, by thread serial.
    pub thread_ids: HashMap<u32, u64>,
    /// Objects first met by the walk get per-dump numbers (IDs
    /// `DUMP_ID_BASE + n`, tags in a scratch environment dropped after the
    /// dump) instead of object table slots (kept, IDs `0x50000000 + slot`).
    pub scratch_ids: bool,
    /// Remember object sizes (the text format prints them; binary records
    /// have none).
    pub need_sizes: bool,
}

/// Memory the walk may spend on values of objects whose class it cannot
/// lay out yet (`Leftovers`); objects beyond it are counted as lost.
pub const LATE_BYTES_LIMIT: usize = 256 << 20;

/// First ID of objects named only for one dump (`DumpContext::scratch_ids`):
/// above the object table's `0x5xxxxxxx` and below frame IDs.
pub const DUMP_ID_BASE: u64 = 0x6000_0000;
/// Per-dump numbers available with 4-byte IDs.
const MAX_DUMP_NUMBER: u64 = 0x0FFF_FFFF;

impl DumpContext {
    /// The same context with `extra` classes added (or replacing entries
    /// of the same serial): for the records written after the walk.
    pub fn with_classes(&self, extra: Vec<ClassInfo>) -> DumpContext {
        let mut classes = self.classes.clone();
        for c in extra {
            let idx = (c.serial - CLASS_SERIAL_BASE) as usize;
            if classes.len() <= idx {
                classes.resize_with(idx + 1, || None);
            }
            classes[idx] = Some(c);
        }
        DumpContext {
            id_size: self.id_size,
            system_trace: self.system_trace,
            classes,
            site_traces: self.site_traces.clone(),
            true_array_len: self.true_array_len,
            thread_ids: self.thread_ids.clone(),
            scratch_ids: self.scratch_ids,
            need_sizes: self.need_sizes,
        }
    }

    /// A class whose records this context can write: known, with every
    /// field of its hierarchy described.
    #[inline]
    fn complete_class(&self, serial: u32) -> Option<&ClassInfo> {
        self.class(serial).filter(|c| !c.layout.incomplete)
    }

    #[inline]
    pub fn class(&self, serial: u32) -> Option<&ClassInfo> {
        self.classes
            .get(serial.checked_sub(CLASS_SERIAL_BASE)? as usize)?
            .as_ref()
    }

    fn class_of_tag(&self, tag: i64) -> Option<&ClassInfo> {
        match split_tag(tag) {
            Some((TagKind::Class, s)) => self.class(s as u32),
            _ => None,
        }
    }

    fn trace_of_owner(&self, owner: u32) -> u32 {
        if owner == NO_OWNER {
            return self.system_trace;
        }
        self.site_traces
            .get(owner as usize)
            .copied()
            .unwrap_or(self.system_trace)
    }
}

/// A root, owned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootRec {
    Unknown(u64),
    JniGlobal { obj: u64, id: u64, trace: u32 },
    JniLocal { obj: u64, thread: u32, depth: i32 },
    JavaFrame { obj: u64, thread: u32, depth: i32 },
    StickyClass { obj: u64, class: u32 },
    ThreadBlock { obj: u64, thread: u32 },
    Monitor(u64),
    ThreadObject { obj: u64, thread: u32, trace: u32 },
}

/// One sub-record; variable data lives in the batch's arenas.
#[derive(Clone, Debug, PartialEq)]
pub enum Rec {
    Root(RootRec),
    Instance {
        obj: u64,
        size: u32,
        trace: u32,
        class: u32,
        at: usize,
    },
    ObjArray {
        obj: u64,
        size: u32,
        trace: u32,
        class: u32,
        at: usize,
        len: usize,
    },
    PrimArray {
        obj: u64,
        size: u32,
        trace: u32,
        ty: BasicType,
        at: usize,
        len: usize,
        omitted: bool,
    },
    Class {
        serial: u32,
        statics_at: usize,
        cp_at: usize,
        cp_len: usize,
        loader: u64,
        signers: u64,
        domain: u64,
    },
}

/// A run of sub-records handed to the writer in one job.
#[derive(Debug, Default)]
pub struct Batch {
    pub recs: Vec<Rec>,
    /// Instance values (big-endian), primitive array data (native byte
    /// order), static values (big-endian).
    pub bytes: Vec<u8>,
    /// Object array elements.
    pub ids: Vec<u64>,
    pub cps: Vec<ConstantPoolEntry>,
}

impl Batch {
    /// Empty, keeping the capacity.
    pub fn clear(&mut self) {
        self.recs.clear();
        self.bytes.clear();
        self.ids.clear();
        self.cps.clear();
    }

    pub fn weight(&self) -> usize {
        self.bytes.len() + self.ids.len() * 8 + self.recs.len() * 48
    }

    /// Serialize every record through the format.
    pub fn write(&self, ctx: &DumpContext, f: &mut dyn ProfileFormat, out: &mut Vec<u8>) {
        let text = f.kind() == crate::format::FormatKind::Ascii;
        let ids = ctx.id_size as usize;
        let mut refs: Vec<(&str, u64)> = Vec::new();
        for rec in &self.recs {
            match *rec {
                Rec::Root(r) => f.heap_root(out, &root_model(ctx, r)),
                Rec::Instance {
                    obj,
                    size,
                    trace,
                    class,
                    at,
                } => {
                    let Some(c) = ctx.class(class) else { continue };
                    let bytes = &self.bytes[at..at + c.layout.instance_size as usize];
                    refs.clear();
                    if text {
                        for (name, off) in &c.layout.ref_fields {
                            refs.push((name, read_id(&bytes[*off as usize..], ids)));
                        }
                    }
                    f.heap_instance(
                        out,
                        &InstanceDump {
                            obj_id: obj,
                            size,
                            trace_serial: trace,
                            class_id: c.object_id,
                            class_sig: &c.signature,
                            values: InstanceValues::Encoded {
                                bytes,
                                ref_fields: &refs,
                            },
                        },
                    );
                }
                Rec::ObjArray {
                    obj,
                    size,
                    trace,
                    class,
                    at,
                    len,
                } => {
                    let (class_id, sig) = ctx
                        .class(class)
                        .map_or((0, ""), |c| (c.object_id, &*c.signature));
                    f.heap_obj_array(
                        out,
                        &ObjArrayDump {
                            obj_id: obj,
                            size,
                            trace_serial: trace,
                            array_class_id: class_id,
                            array_class_sig: sig,
                            elements: &self.ids[at..at + len],
                        },
                    );
                }
                Rec::PrimArray {
                    obj,
                    size,
                    trace,
                    ty,
                    at,
                    len,
                    omitted,
                } => {
                    let elements = if omitted {
                        PrimElements::Omitted(ty)
                    } else {
                        PrimElements::NativeEndian(ty, &self.bytes[at..at + len])
                    };
                    f.heap_prim_array(
                        out,
                        &PrimArrayDump {
                            obj_id: obj,
                            size,
                            trace_serial: trace,
                            elements,
                        },
                    );
                }
                Rec::Class {
                    serial,
                    statics_at,
                    cp_at,
                    cp_len,
                    loader,
                    signers,
                    domain,
                } => {
                    let Some(c) = ctx.class(serial) else { continue };
                    let statics: Vec<NamedValue<'_>> = c
                        .layout
                        .statics
                        .iter()
                        .map(|(name, ty, off)| NamedValue {
                            name,
                            value: read_value(*ty, &self.bytes[statics_at + *off as usize..], ids),
                        })
                        .collect();
                    let fields: Vec<FieldDecl<'_>> = c
                        .layout
                        .own_fields
                        .iter()
                        .map(|(name, ty)| FieldDecl { name, ty: *ty })
                        .collect();
                    let super_id = c
                        .super_serial
                        .and_then(|s| ctx.class(s))
                        .map_or(0, |s| s.object_id);
                    f.heap_class(
                        out,
                        &ClassDump {
                            class_id: c.object_id,
                            class_sig: &c.signature,
                            trace_serial: c.load_trace,
                            super_id,
                            loader_id: loader,
                            signers_id: signers,
                            protection_domain_id: domain,
                            instance_size: c.layout.instance_size,
                            constant_pool: &self.cps[cp_at..cp_at + cp_len],
                            statics: &statics,
                            instance_fields: &fields,
                        },
                    );
                }
            }
        }
    }
}

fn root_model(ctx: &DumpContext, r: RootRec) -> Root<'_> {
    match r {
        RootRec::Unknown(obj_id) => Root::Unknown { obj_id },
        RootRec::JniGlobal { obj, id, trace } => Root::JniGlobal {
            obj_id: obj,
            global_ref_id: id,
            trace_serial: trace,
        },
        RootRec::JniLocal { obj, thread, depth } => Root::JniLocal {
            obj_id: obj,
            thread_serial: thread,
            frame_depth: depth,
        },
        RootRec::JavaFrame { obj, thread, depth } => Root::JavaFrame {
            obj_id: obj,
            thread_serial: thread,
            frame_depth: depth,
        },
        RootRec::StickyClass { obj, class } => Root::StickyClass {
            obj_id: obj,
            class_sig: ctx.class(class).map_or("", |c| &c.signature),
        },
        RootRec::ThreadBlock { obj, thread } => Root::ThreadBlock {
            obj_id: obj,
            thread_serial: thread,
        },
        RootRec::Monitor(obj_id) => Root::MonitorUsed { obj_id },
        RootRec::ThreadObject { obj, thread, trace } => Root::ThreadObject {
            obj_id: obj,
            thread_serial: thread,
            trace_serial: trace,
        },
    }
}

fn read_id(b: &[u8], id_size: usize) -> u64 {
    if id_size == 8 {
        u64::from_be_bytes(b[..8].try_into().unwrap_or_default())
    } else {
        u32::from_be_bytes(b[..4].try_into().unwrap_or_default()) as u64
    }
}

fn read_value(ty: BasicType, b: &[u8], id_size: usize) -> Value {
    let u = |n: usize| b[..n].iter().fold(0u64, |acc, &x| (acc << 8) | x as u64);
    match ty {
        BasicType::Object => Value::Object(read_id(b, id_size)),
        BasicType::Boolean => Value::Boolean(b[0] != 0),
        BasicType::Byte => Value::Byte(b[0] as i8),
        BasicType::Char => Value::Char(u(2) as u16),
        BasicType::Short => Value::Short(u(2) as i16),
        BasicType::Int => Value::Int(u(4) as i32),
        BasicType::Float => Value::Float(f32::from_bits(u(4) as u32)),
        BasicType::Long => Value::Long(u(8) as i64),
        BasicType::Double => Value::Double(f64::from_bits(u(8))),
    }
}

/// An object ID into encoded values: 8-byte IDs are binary output's and
/// carry the agent's mark (`vocab::id_space`), as `format::binary` writes
/// them.
pub(super) fn put_id(b: &mut [u8], id: u64, id_size: usize) {
    if id_size == 8 {
        b[..8].copy_from_slice(&crate::vocab::id_space::ours(id).to_be_bytes());
    } else {
        b[..4].copy_from_slice(&(id as u32).to_be_bytes());
    }
}

/// Write a primitive value big-endian if its type is `ty`; false on a
/// type mismatch (the field index did not mean what the layout says).
pub(super) fn put_prim(b: &mut [u8], ty: BasicType, v: Prim) -> bool {
    match (ty, v) {
        (BasicType::Boolean, Prim::Boolean(z)) => b[0] = z as u8,
        (BasicType::Byte, Prim::Byte(x)) => b[0] = x as u8,
        (BasicType::Char, Prim::Char(x)) => b[..2].copy_from_slice(&x.to_be_bytes()),
        (BasicType::Short, Prim::Short(x)) => b[..2].copy_from_slice(&x.to_be_bytes()),
        (BasicType::Int, Prim::Int(x)) => b[..4].copy_from_slice(&x.to_be_bytes()),
        (BasicType::Float, Prim::Float(x)) => b[..4].copy_from_slice(&x.to_bits().to_be_bytes()),
        (BasicType::Long, Prim::Long(x)) => b[..8].copy_from_slice(&x.to_be_bytes()),
        (BasicType::Double, Prim::Double(x)) => b[..8].copy_from_slice(&x.to_bits().to_be_bytes()),
        _ => return false,
    }
    true
}

/// Where finished batches go (the writer thread in the agent, a vector in
/// tests).
pub trait BatchSink {
    /// Take a full batch; returns an empty one to fill next (a recycled
    /// one keeps its buffers, sparing the walk large allocations).
    fn submit(&mut self, batch: Batch) -> Batch;
}

/// Counts reported at the end of a dump.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkStats {
    pub roots: u64,
    pub instances: u64,
    pub obj_arrays: u64,
    pub prim_arrays: u64,
    pub classes: u64,
    /// Objects first met by this dump (tagged during the walk).
    pub new_objects: u64,
    /// References whose referee's class is untagged (skipped).
    pub untagged_class: u64,
    /// References or values arriving after their referrer's record was
    /// written (lost).
    pub late_refs: u64,
    /// Field values whose type disagrees with the computed layout (dropped).
    pub mismatched_fields: u64,
    /// Values of objects whose class the VM had still not prepared after
    /// the walk (dropped: no field list; their records have no values).
    pub unprepared_values: u64,
    /// The object table was full: objects that could not get an ID.
    pub table_full: u64,
    /// Objects whose class had no complete layout when the dump began,
    /// kept by field index and written after the walk.
    pub late_objects: u64,
    /// Objects of that kind beyond `LATE_BYTES_LIMIT`, or whose class could
    /// not be found after the walk: no record.
    pub late_lost: u64,
}

/// A field, element or static value kept by JVMTI index until its class is
/// described.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LateValue {
    Ref(u64),
    Prim(Prim),
}

/// An object whose class the context could not lay out when it was met.
#[derive(Debug)]
pub struct LateObject {
    pub tag: i64,
    /// Tag of its class mirror during the walk (0: not tagged). A class
    /// registered after the walk began may still carry the object tag of
    /// its allocation.
    pub class_tag: i64,
    pub obj: u64,
    pub size: u32,
    pub trace: u32,
    /// Instance fields or object array elements, by JVMTI index.
    pub values: Vec<(i32, LateValue)>,
    /// Length of an object array (`arraylen=y`), when known.
    pub length: Option<u32>,
    /// Primitive array contents: JVMTI element type, native byte order.
    pub prims: Option<(u32, Vec<u8>)>,
}

impl LateObject {
    fn weight(&self) -> usize {
        64 + self.values.len() * 24 + self.prims.as_ref().map_or(0, |p| p.1.len())
    }
}

/// What the walk leaves to the dump's epilogue: objects of classes without
/// a complete layout, and the mirror facts of every class (by serial).
#[derive(Debug, Default)]
pub struct Leftovers {
    pub objects: Vec<LateObject>,
    pub mirrors: HashMap<u32, MirrorFacts>,
}

#[derive(Debug)]
enum Open {
    None,
    /// An object kept for after the walk: index into `Walker::late`.
    Late(usize),
    /// References from an object we do not write (already written, or
    /// unknown).
    Skip(i64),
    Mirror {
        tag: i64,
        serial: u32,
    },
    Object {
        tag: i64,
        obj: u64,
        size: u32,
        trace: u32,
        class: u32,
        kind: ClassKind,
        at: usize,
    },
}

/// Per-class facts gathered from its mirror's visit.
#[derive(Debug, Default)]
pub struct MirrorFacts {
    pub loader: u64,
    pub signers: u64,
    pub domain: u64,
    pub cp: Vec<ConstantPoolEntry>,
    /// Static values laid out by the context's layout (complete classes).
    pub statics: Vec<u8>,
    /// Static values by JVMTI index, for classes without a complete layout.
    pub late_statics: Vec<(i32, LateValue)>,
}

/// Bytes (roughly) after which a batch is handed over.
pub const BATCH_BYTES: usize = 1 << 20;

pub struct Walker<'a, S: BatchSink> {
    ctx: Arc<DumpContext>,
    objects: &'a ObjectTable,
    classes: &'a ClassTable,
    /// Object IDs of classes registered after the context was built.
    late_class_ids: HashMap<u32, u64>,
    late: Vec<LateObject>,
    late_bytes: usize,
    threads: &'a ThreadTable,
    sink: S,
    batch: Batch,
    open: Open,
    elems: Vec<u64>,
    /// Object slots whose record was written in this dump.
    written: Vec<u64>,
    written_threads: HashSet<u32>,
    mirrors: HashMap<u32, MirrorFacts>,
    array_len: HashMap<u32, u32>,
    thread_sizes: HashMap<u32, u32>,
    new_thread_ids: HashMap<u32, u64>,
    globals: u64,
    prim_arrays: bool,
    /// Next per-dump number (`scratch_ids`).
    next_number: u64,
    /// Size of each numbered object (`scratch_ids` with `need_sizes`).
    sizes: Vec<u32>,
    pub stats: WalkStats,
}

impl<'a, S: BatchSink> Walker<'a, S> {
    pub fn new(
        ctx: Arc<DumpContext>,
        objects: &'a ObjectTable,
        classes: &'a ClassTable,
        threads: &'a ThreadTable,
        sink: S,
        prim_arrays: bool,
    ) -> Self {
        Walker {
            ctx,
            objects,
            classes,
            late_class_ids: HashMap::new(),
            late: Vec::new(),
            late_bytes: 0,
            threads,
            sink,
            batch: Batch::default(),
            open: Open::None,
            elems: Vec::new(),
            written: Vec::new(),
            written_threads: HashSet::new(),
            mirrors: HashMap::new(),
            array_len: HashMap::new(),
            thread_sizes: HashMap::new(),
            new_thread_ids: HashMap::new(),
            globals: 0,
            prim_arrays,
            next_number: 1,
            sizes: Vec::new(),
            stats: WalkStats::default(),
        }
    }

    /// A root written before the walk (the pseudo thread root).
    pub fn root(&mut self, r: RootRec) {
        self.batch.recs.push(Rec::Root(r));
        self.stats.roots += 1;
    }

    #[inline]
    fn id_of(&mut self, tag: i64) -> u64 {
        match split_tag(tag) {
            Some((TagKind::Object, n)) if self.ctx.scratch_ids => DUMP_ID_BASE + n,
            Some((TagKind::Object, slot)) => OBJECT_ID_BASE.wrapping_add(slot as u32) as u64,
            Some((TagKind::Class, s)) => match self.ctx.class(s as u32) {
                Some(c) => c.object_id,
                None => self.late_class_id(s as u32),
            },
            Some((TagKind::Thread, s)) => {
                let s = s as u32;
                self.ctx
                    .thread_ids
                    .get(&s)
                    .or_else(|| self.new_thread_ids.get(&s))
                    .copied()
                    .unwrap_or(0)
            }
            None => 0,
        }
    }

    /// The object ID of a class registered after the context was built
    /// (the class table only takes a short read lock; no JVM call).
    fn late_class_id(&mut self, serial: u32) -> u64 {
        if let Some(&id) = self.late_class_ids.get(&serial) {
            return id;
        }
        let id = self.classes.get(serial).map_or(0, |e| e.object_id as u64);
        self.late_class_ids.insert(serial, id);
        id
    }

    fn trace_of(&self, tag: i64) -> u32 {
        match split_tag(tag) {
            Some((TagKind::Object, slot)) if !self.ctx.scratch_ids => self
                .objects
                .get(slot as u32)
                .map_or(self.ctx.system_trace, |i| self.ctx.trace_of_owner(i.owner)),
            _ => self.ctx.system_trace,
        }
    }

    fn thread_serial(tag: i64) -> u32 {
        match split_tag(tag) {
            Some((TagKind::Thread, s)) => s as u32,
            _ => UNKNOWN_THREAD_SERIAL,
        }
    }

    /// Tag a referee met for the first time; false if it cannot be named.
    /// An object whose class the context does not know is named too: its
    /// record is written after the walk (`Leftovers`).
    fn tag_new(&mut self, r: &mut Reference<'_>) -> bool {
        if self.ctx.class_of_tag(r.class_tag).is_none() {
            self.stats.untagged_class += 1;
        }
        let size = r.size.clamp(0, u32::MAX as i64) as u32;
        if r.kind == heap_ref::THREAD {
            // A thread we never saw start: give it a serial now.
            let rec = self
                .threads
                .insert(self.objects.allocate_id(), None, None, None, false);
            *r.tag = make_tag(TagKind::Thread, rec.serial as u64);
            self.new_thread_ids.insert(rec.serial, rec.object_id as u64);
            self.thread_sizes.insert(rec.serial, size);
            return true;
        }
        if self.ctx.scratch_ids {
            let n = self.next_number;
            if n > MAX_DUMP_NUMBER && self.ctx.id_size < 8 {
                self.stats.table_full += 1;
                return false;
            }
            self.next_number += 1;
            *r.tag = make_tag(TagKind::Object, n);
            if self.ctx.need_sizes {
                if self.sizes.is_empty() {
                    self.sizes.push(0);
                }
                self.sizes.push(size);
            }
            self.stats.new_objects += 1;
            return true;
        }
        match self.objects.insert(ObjectInfo {
            owner: NO_OWNER,
            size,
        }) {
            Some(slot) => {
                *r.tag = make_tag(TagKind::Object, slot as u64);
                self.stats.new_objects += 1;
                true
            }
            None => {
                self.stats.table_full += 1;
                false
            }
        }
    }

    fn is_written(&self, tag: i64) -> bool {
        match split_tag(tag) {
            Some((TagKind::Object, slot)) => {
                let s = slot as usize;
                self.written
                    .get(s / 64)
                    .is_some_and(|w| w & (1 << (s % 64)) != 0)
            }
            Some((TagKind::Thread, s)) => self.written_threads.contains(&(s as u32)),
            _ => false,
        }
    }

    fn mark_written(&mut self, tag: i64) {
        match split_tag(tag) {
            Some((TagKind::Object, slot)) => {
                let s = slot as usize;
                if self.written.len() <= s / 64 {
                    self.written.resize(s / 64 + 1 + s / 512, 0);
                }
                self.written[s / 64] |= 1 << (s % 64);
            }
            Some((TagKind::Thread, s)) => {
                self.written_threads.insert(s as u32);
            }
            _ => {}
        }
    }

    /// Make `tag` the open record (closing the previous one).
    #[inline]
    fn enter(&mut self, tag: i64, class_tag: i64) {
        let same = match self.open {
            Open::None => false,
            Open::Skip(t) | Open::Mirror { tag: t, .. } | Open::Object { tag: t, .. } => t == tag,
            Open::Late(i) => self.late[i].tag == tag,
        };
        if same {
            return;
        }
        self.close();
        self.open = match split_tag(tag) {
            Some((TagKind::Class, s)) => Open::Mirror {
                tag,
                serial: s as u32,
            },
            Some((TagKind::Object | TagKind::Thread, _)) if self.is_written(tag) => {
                self.stats.late_refs += 1;
                Open::Skip(tag)
            }
            Some((TagKind::Object | TagKind::Thread, payload)) => {
                let class = match split_tag(class_tag) {
                    Some((TagKind::Class, s)) => self.ctx.complete_class(s as u32),
                    _ => None,
                };
                match class {
                    None => self.open_late(tag, class_tag, payload),
                    Some(c) => {
                        let (class, kind, isize) =
                            (c.serial, c.kind, c.layout.instance_size as usize);
                        let size = self.size_of(tag, payload);
                        let at = match kind {
                            ClassKind::Instance | ClassKind::Interface => {
                                let at = self.batch.bytes.len();
                                self.batch.bytes.resize(at + isize, 0);
                                at
                            }
                            ClassKind::ObjArray => {
                                self.elems.clear();
                                0
                            }
                            ClassKind::PrimArray(_) => self.batch.bytes.len(),
                        };
                        let obj = self.id_of(tag);
                        let trace = self.trace_of(tag);
                        Open::Object {
                            tag,
                            obj,
                            size,
                            trace,
                            class,
                            kind,
                            at,
                        }
                    }
                }
            }
            None => Open::Skip(tag),
        };
    }

    fn size_of(&self, tag: i64, payload: u64) -> u32 {
        match split_tag(tag) {
            Some((TagKind::Thread, _)) => self
                .thread_sizes
                .get(&(payload as u32))
                .copied()
                .unwrap_or(0),
            _ if self.ctx.scratch_ids => self.sizes.get(payload as usize).copied().unwrap_or(0),
            _ => self.objects.get(payload as u32).map_or(0, |i| i.size),
        }
    }

    /// Open an object whose class has no complete layout: its values are
    /// kept by index for the records written after the walk.
    fn open_late(&mut self, tag: i64, class_tag: i64, payload: u64) -> Open {
        if self.late_bytes >= LATE_BYTES_LIMIT {
            self.stats.late_lost += 1;
            return Open::Skip(tag);
        }
        let late = LateObject {
            tag,
            class_tag,
            obj: self.id_of(tag),
            size: self.size_of(tag, payload),
            trace: self.trace_of(tag),
            values: Vec::new(),
            length: None,
            prims: None,
        };
        self.late.push(late);
        Open::Late(self.late.len() - 1)
    }

    /// Write the open record into the batch.
    fn close(&mut self) {
        let open = std::mem::replace(&mut self.open, Open::None);
        if let Open::Late(i) = open {
            let tag = self.late[i].tag;
            self.mark_written(tag);
            if let Some((TagKind::Object, slot)) = split_tag(tag) {
                self.late[i].length = self.array_len.remove(&(slot as u32));
            }
            self.late_bytes += self.late[i].weight();
            self.stats.late_objects += 1;
            return;
        }
        let Open::Object {
            tag,
            obj,
            size,
            trace,
            class,
            kind,
            at,
        } = open
        else {
            return;
        };
        self.mark_written(tag);
        let rec = match kind {
            ClassKind::Instance | ClassKind::Interface => {
                self.stats.instances += 1;
                Rec::Instance {
                    obj,
                    size,
                    trace,
                    class,
                    at,
                }
            }
            ClassKind::ObjArray => {
                self.stats.obj_arrays += 1;
                if self.ctx.true_array_len {
                    if let Some((TagKind::Object, slot)) = split_tag(tag) {
                        if let Some(n) = self.array_len.remove(&(slot as u32)) {
                            if self.elems.len() < n as usize {
                                self.elems.resize(n as usize, 0);
                            }
                        }
                    }
                }
                let at = self.batch.ids.len();
                self.batch.ids.extend_from_slice(&self.elems);
                Rec::ObjArray {
                    obj,
                    size,
                    trace,
                    class,
                    at,
                    len: self.elems.len(),
                }
            }
            ClassKind::PrimArray(ty) => {
                self.stats.prim_arrays += 1;
                let len = self.batch.bytes.len() - at;
                Rec::PrimArray {
                    obj,
                    size,
                    trace,
                    ty,
                    at,
                    len,
                    omitted: !self.prim_arrays,
                }
            }
        };
        self.batch.recs.push(rec);
        if self.batch.weight() >= BATCH_BYTES {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        if !self.batch.recs.is_empty() {
            let b = std::mem::take(&mut self.batch);
            self.batch = self.sink.submit(b);
        }
    }

    /// Close the last record and hand over everything written. Returns the
    /// sink, the counts and what the dump's epilogue writes: the objects
    /// kept for after the walk and every class mirror's facts (CLASS DUMPs
    /// come last, `epilogue::write`).
    pub fn finish(mut self) -> (S, WalkStats, Leftovers) {
        self.close();
        self.hand_over();
        let left = Leftovers {
            objects: std::mem::take(&mut self.late),
            mirrors: std::mem::take(&mut self.mirrors),
        };
        (self.sink, self.stats, left)
    }

    /// A value a complete layout has no slot for: a numbering problem.
    fn mismatch(&mut self) {
        self.stats.mismatched_fields += 1;
    }

    fn mirror(&mut self, serial: u32) -> &mut MirrorFacts {
        let size = self
            .ctx
            .class(serial)
            .map_or(0, |c| c.layout.static_size as usize);
        self.mirrors.entry(serial).or_insert_with(|| MirrorFacts {
            statics: vec![0; size],
            ..Default::default()
        })
    }

    fn root_ref(&mut self, kind: u32, detail: RefDetail, tag: i64) {
        let obj = self.id_of(tag);
        let local = |d: RefDetail| match d {
            RefDetail::Local { thread_tag, depth } => (Self::thread_serial(thread_tag), depth),
            RefDetail::Index(_) => (UNKNOWN_THREAD_SERIAL, -1),
        };
        let recs: [Option<RootRec>; 2] = match kind {
            heap_ref::JNI_GLOBAL => {
                self.globals += 1;
                [
                    Some(RootRec::JniGlobal {
                        obj,
                        id: self.globals,
                        trace: self.trace_of(tag),
                    }),
                    None,
                ]
            }
            heap_ref::SYSTEM_CLASS => match split_tag(tag) {
                Some((TagKind::Class, s)) => [
                    Some(RootRec::StickyClass {
                        obj,
                        class: s as u32,
                    }),
                    None,
                ],
                _ => [Some(RootRec::Unknown(obj)), None],
            },
            heap_ref::MONITOR => [Some(RootRec::Monitor(obj)), None],
            heap_ref::STACK_LOCAL => {
                let (thread, depth) = local(detail);
                [Some(RootRec::JavaFrame { obj, thread, depth }), None]
            }
            heap_ref::JNI_LOCAL => {
                let (thread, depth) = local(detail);
                [Some(RootRec::JniLocal { obj, thread, depth }), None]
            }
            heap_ref::THREAD => {
                let thread = Self::thread_serial(tag);
                let trace = self.ctx.system_trace;
                [
                    Some(RootRec::ThreadObject { obj, thread, trace }),
                    Some(RootRec::ThreadBlock { obj, thread }),
                ]
            }
            _ => [Some(RootRec::Unknown(obj)), None],
        };
        for r in recs.into_iter().flatten() {
            self.root(r);
        }
    }
}

impl<S: BatchSink> HeapVisitor for Walker<'_, S> {
    fn reference(&mut self, mut r: Reference<'_>) {
        if *r.tag == 0 && !self.tag_new(&mut r) {
            return;
        }
        let tag = *r.tag;
        match split_tag(tag) {
            Some((TagKind::Thread, s)) => {
                let size = r.size.clamp(0, u32::MAX as i64) as u32;
                self.thread_sizes.entry(s as u32).or_insert(size);
            }
            // An array of a class the context does not know yet may be an
            // object array too (its record is written later).
            Some((TagKind::Object, slot))
                if self.ctx.true_array_len
                    && r.length >= 0
                    && self
                        .ctx
                        .class_of_tag(r.class_tag)
                        .is_none_or(|c| c.kind == ClassKind::ObjArray)
                    && !self.is_written(tag) =>
            {
                self.array_len.entry(slot as u32).or_insert(r.length as u32);
            }
            _ => {}
        }
        let Some(referrer) = r.referrer_tag else {
            self.root_ref(r.kind, r.detail, tag);
            return;
        };
        self.enter(referrer, r.referrer_class_tag);
        let id = self.id_of(tag);
        let ids = self.ctx.id_size as usize;
        let index = match r.detail {
            RefDetail::Index(i) => i,
            RefDetail::Local { .. } => -1,
        };
        match (&self.open, r.kind) {
            (
                Open::Object {
                    class,
                    kind: ClassKind::Instance,
                    at,
                    ..
                },
                heap_ref::FIELD,
            ) => {
                let (class, at) = (*class, *at);
                match self.ctx.class(class).map(|c| c.layout.slot(index)) {
                    Some(Slot::Instance {
                        offset,
                        ty: BasicType::Object,
                    }) => put_id(&mut self.batch.bytes[at + offset as usize..], id, ids),
                    _ => self.mismatch(),
                }
            }
            (Open::Late(i), heap_ref::FIELD | heap_ref::ARRAY_ELEMENT) if index >= 0 => {
                let i = *i;
                self.late[i].values.push((index, LateValue::Ref(id)));
            }
            // The object's class mirror, named now (if it was not): a class
            // outlives its objects, so after the walk the class is found
            // through this tag even if the object is gone by then.
            (Open::Late(i), heap_ref::CLASS) => {
                let i = *i;
                self.late[i].class_tag = tag;
            }
            (
                Open::Object {
                    kind: ClassKind::ObjArray,
                    ..
                },
                heap_ref::ARRAY_ELEMENT,
            ) if index >= 0 => {
                let i = index as usize;
                if self.elems.len() <= i {
                    self.elems.resize(i + 1, 0);
                }
                self.elems[i] = id;
            }
            (Open::Mirror { serial, .. }, kind) => {
                let serial = *serial;
                match kind {
                    heap_ref::STATIC_FIELD if self.ctx.complete_class(serial).is_none() => {
                        self.mirror(serial)
                            .late_statics
                            .push((index, LateValue::Ref(id)));
                    }
                    heap_ref::STATIC_FIELD => {
                        match self.ctx.class(serial).map(|c| c.layout.slot(index)) {
                            Some(Slot::Static {
                                offset,
                                ty: BasicType::Object,
                            }) => {
                                put_id(&mut self.mirror(serial).statics[offset as usize..], id, ids)
                            }
                            _ => self.mismatch(),
                        }
                    }
                    heap_ref::CONSTANT_POOL => self.mirror(serial).cp.push(ConstantPoolEntry {
                        index: index as u16,
                        obj_id: id,
                    }),
                    heap_ref::CLASS_LOADER => self.mirror(serial).loader = id,
                    heap_ref::SIGNERS => self.mirror(serial).signers = id,
                    heap_ref::PROTECTION_DOMAIN => self.mirror(serial).domain = id,
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn primitive_field(
        &mut self,
        kind: u32,
        index: i32,
        owner_class_tag: i64,
        owner_tag: i64,
        value: Prim,
    ) {
        if owner_tag == 0 {
            return;
        }
        self.enter(owner_tag, owner_class_tag);
        match (&self.open, kind) {
            (
                Open::Object {
                    class,
                    kind: ClassKind::Instance,
                    at,
                    ..
                },
                heap_ref::FIELD,
            ) => {
                let (class, at) = (*class, *at);
                let ok = match self.ctx.class(class).map(|c| c.layout.slot(index)) {
                    Some(Slot::Instance { offset, ty }) => {
                        put_prim(&mut self.batch.bytes[at + offset as usize..], ty, value)
                    }
                    _ => false,
                };
                if !ok {
                    self.mismatch();
                }
            }
            (Open::Late(i), heap_ref::FIELD) => {
                let i = *i;
                self.late[i].values.push((index, LateValue::Prim(value)));
            }
            (Open::Mirror { serial, .. }, heap_ref::STATIC_FIELD)
                if self.ctx.complete_class(*serial).is_none() =>
            {
                let serial = *serial;
                self.mirror(serial)
                    .late_statics
                    .push((index, LateValue::Prim(value)));
            }
            (Open::Mirror { serial, .. }, heap_ref::STATIC_FIELD) => {
                let serial = *serial;
                let ok = match self.ctx.class(serial).map(|c| c.layout.slot(index)) {
                    Some(Slot::Static { offset, ty }) => put_prim(
                        &mut self.mirror(serial).statics[offset as usize..],
                        ty,
                        value,
                    ),
                    _ => false,
                };
                if !ok {
                    self.mismatch();
                }
            }
            _ => {}
        }
    }

    fn primitive_array(
        &mut self,
        class_tag: i64,
        tag: i64,
        _size: i64,
        elem_type: u32,
        _count: i32,
        data: &[u8],
    ) {
        if tag == 0 {
            return;
        }
        self.enter(tag, class_tag);
        if let Open::Late(i) = self.open {
            let whole = data.len() / prim_size(elem_type) * prim_size(elem_type);
            self.late[i].prims = Some((elem_type, data[..whole].to_vec()));
            return;
        }
        if let Open::Object {
            kind: ClassKind::PrimArray(_),
            at,
            ..
        } = self.open
        {
            if self.batch.bytes.len() == at {
                // Swapped to big-endian by the writer thread, off the walk.
                let whole = data.len() / prim_size(elem_type) * prim_size(elem_type);
                self.batch.bytes.extend_from_slice(&data[..whole]);
            }
        }
    }
}

#[cfg(test)]
mod tests;
