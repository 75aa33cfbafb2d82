//! Heap dump sub-records (inside HEAP DUMP 0x0C and HEAP DUMP SEGMENT 0x1C
//! records), the basic types and values they carry, and the class-layout
//! helper that decodes INSTANCE DUMP field values.
//!
//! Sub-records have no length prefix: each one is decoded field by field
//! straight from the stream, checking that it stays inside its enclosing
//! record.

use std::collections::HashMap;
use std::io::Read;

use super::error::ReadError;
use super::records::record_label;
use super::source::{id_from_be, Source};

pub use crate::vocab::sub_tag;

/// The documented name of a sub-record tag, or `None` if unknown.
pub fn sub_record_name(t: u8) -> Option<&'static str> {
    use sub_tag::*;
    Some(match t {
        ROOT_UNKNOWN => "ROOT UNKNOWN",
        ROOT_JNI_GLOBAL => "ROOT JNI GLOBAL",
        ROOT_JNI_LOCAL => "ROOT JNI LOCAL",
        ROOT_JAVA_FRAME => "ROOT JAVA FRAME",
        ROOT_NATIVE_STACK => "ROOT NATIVE STACK",
        ROOT_STICKY_CLASS => "ROOT STICKY CLASS",
        ROOT_THREAD_BLOCK => "ROOT THREAD BLOCK",
        ROOT_MONITOR_USED => "ROOT MONITOR USED",
        ROOT_THREAD_OBJECT => "ROOT THREAD OBJECT",
        CLASS_DUMP => "CLASS DUMP",
        INSTANCE_DUMP => "INSTANCE DUMP",
        OBJECT_ARRAY_DUMP => "OBJECT ARRAY DUMP",
        PRIMITIVE_ARRAY_DUMP => "PRIMITIVE ARRAY DUMP",
        _ => return None,
    })
}

pub use crate::vocab::BasicType;

pub use crate::vocab::Value;

/// A heap dump sub-record.
#[derive(Debug, Clone, PartialEq)]
pub enum HeapSubRecord {
    Root(Root),
    /// Boxed: a class dump is many times the size of the other variants,
    /// which are nearly every sub-record a reader returns.
    ClassDump(Box<ClassDump>),
    InstanceDump(InstanceDump),
    ObjectArrayDump(ObjectArrayDump),
    PrimitiveArrayDump(PrimitiveArrayDump),
}

impl HeapSubRecord {
    /// File offset of the sub-record's tag byte.
    pub fn offset(&self) -> u64 {
        match self {
            HeapSubRecord::Root(r) => r.offset,
            HeapSubRecord::ClassDump(r) => r.offset,
            HeapSubRecord::InstanceDump(r) => r.offset,
            HeapSubRecord::ObjectArrayDump(r) => r.offset,
            HeapSubRecord::PrimitiveArrayDump(r) => r.offset,
        }
    }

    pub fn tag(&self) -> u8 {
        match self {
            HeapSubRecord::Root(r) => r.kind.tag(),
            HeapSubRecord::ClassDump(_) => sub_tag::CLASS_DUMP,
            HeapSubRecord::InstanceDump(_) => sub_tag::INSTANCE_DUMP,
            HeapSubRecord::ObjectArrayDump(_) => sub_tag::OBJECT_ARRAY_DUMP,
            HeapSubRecord::PrimitiveArrayDump(_) => sub_tag::PRIMITIVE_ARRAY_DUMP,
        }
    }

    pub fn name(&self) -> &'static str {
        sub_record_name(self.tag()).unwrap_or("?")
    }
}

/// A GC root sub-record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Root {
    pub offset: u64,
    /// The rooted object (thread object for THREAD OBJECT/BLOCK, class for
    /// STICKY CLASS).
    pub object_id: u64,
    pub kind: RootKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    Unknown,
    JniGlobal {
        jni_global_ref_id: u64,
    },
    /// `frame_depth` 0xFFFFFFFF means "empty stack".
    JniLocal {
        thread_serial: u32,
        frame_depth: u32,
    },
    JavaFrame {
        thread_serial: u32,
        frame_depth: u32,
    },
    NativeStack {
        thread_serial: u32,
    },
    StickyClass,
    ThreadBlock {
        thread_serial: u32,
    },
    MonitorUsed,
    ThreadObject {
        thread_serial: u32,
        trace_serial: u32,
    },
}

impl RootKind {
    pub fn tag(&self) -> u8 {
        use sub_tag::*;
        match self {
            RootKind::Unknown => ROOT_UNKNOWN,
            RootKind::JniGlobal { .. } => ROOT_JNI_GLOBAL,
            RootKind::JniLocal { .. } => ROOT_JNI_LOCAL,
            RootKind::JavaFrame { .. } => ROOT_JAVA_FRAME,
            RootKind::NativeStack { .. } => ROOT_NATIVE_STACK,
            RootKind::StickyClass => ROOT_STICKY_CLASS,
            RootKind::ThreadBlock { .. } => ROOT_THREAD_BLOCK,
            RootKind::MonitorUsed => ROOT_MONITOR_USED,
            RootKind::ThreadObject { .. } => ROOT_THREAD_OBJECT,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConstantPoolEntry {
    pub index: u16,
    pub value: Value,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StaticField {
    pub name_id: u64,
    pub value: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDescriptor {
    pub name_id: u64,
    pub ty: BasicType,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClassDump {
    pub offset: u64,
    pub class_id: u64,
    pub trace_serial: u32,
    /// 0 for java.lang.Object and interfaces.
    pub super_class_id: u64,
    pub class_loader_id: u64,
    pub signers_id: u64,
    pub protection_domain_id: u64,
    pub reserved1: u64,
    pub reserved2: u64,
    /// As written: byte count of this class's INSTANCE DUMP values for our
    /// agent; HotSpot writes the VM's own instance size estimate.
    pub instance_size: u32,
    pub constant_pool: Vec<ConstantPoolEntry>,
    pub static_fields: Vec<StaticField>,
    /// Instance fields declared by this class only (supers excluded).
    pub instance_fields: Vec<FieldDescriptor>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceDump {
    pub offset: u64,
    pub object_id: u64,
    pub trace_serial: u32,
    pub class_id: u64,
    /// Byte count of the field values (the `u4` before them).
    pub values_len: u32,
    /// The raw field values (this class's fields first, then the super
    /// class's, ...); `None` when read with `instance_values` off. Decode
    /// with [`ClassLayouts::decode_instance`].
    pub values: Option<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectArrayDump {
    pub offset: u64,
    pub array_id: u64,
    pub trace_serial: u32,
    /// Element count as written (our agent drops trailing nulls).
    pub length: u32,
    pub array_class_id: u64,
    /// Element IDs, `None` when read with `object_array_elements` off.
    pub elements: Option<Vec<u64>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrimitiveArrayDump {
    pub offset: u64,
    pub array_id: u64,
    pub trace_serial: u32,
    pub length: u32,
    pub element_type: BasicType,
    /// Raw big-endian element data, `None` when read with
    /// `primitive_array_data` off.
    pub data: Option<Vec<u8>>,
}

impl PrimitiveArrayDump {
    /// The elements decoded, if the data was read.
    pub fn elements(&self) -> Option<Vec<Value>> {
        let size = self.element_type.size(8) as usize;
        self.data.as_ref().map(|d| {
            d.chunks_exact(size)
                .map(|c| Value::decode(self.element_type, c))
                .collect()
        })
    }

    /// Byte count of the element data.
    pub fn data_len(&self) -> u64 {
        u64::from(self.length) * u64::from(self.element_type.size(8))
    }
}

/// Which variable-size payloads to keep when reading sub-records. Skipped
/// payloads are passed over without allocation; their lengths stay known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    pub instance_values: bool,
    pub object_array_elements: bool,
    pub primitive_array_data: bool,
    /// Payloads longer than this are skipped even when asked for (their
    /// field is `None`): a reader of files from anywhere keeps its memory
    /// bounded whatever a sub-record claims.
    pub max_kept: u64,
}

impl ReadOptions {
    /// Keep everything (the default).
    pub const fn full() -> Self {
        ReadOptions {
            instance_values: true,
            object_array_elements: true,
            primitive_array_data: true,
            max_kept: u64::MAX,
        }
    }

    /// Keep no payload: the cheap mode for histograms and counting.
    pub const fn skip_bodies() -> Self {
        ReadOptions {
            instance_values: false,
            object_array_elements: false,
            primitive_array_data: false,
            max_kept: u64::MAX,
        }
    }
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self::full()
    }
}

/// Where the reader stands inside a heap dump record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    pub(crate) tag: u8,
    pub(crate) record_offset: u64,
    /// Offset just past the record body.
    pub(crate) end: u64,
}

/// Bounded reads of one sub-record; errors name it lazily. (Also used by
/// the heap scan, `scan.rs`.)
pub(super) struct Sub<'a, R: Read> {
    pub(super) src: &'a mut Source<R>,
    pub(super) seg: Segment,
    pub(super) id_size: u32,
    pub(super) sub_tag: u8,
    pub(super) offset: u64,
}

impl<R: Read> Sub<'_, R> {
    fn what(&self) -> String {
        let name = match sub_record_name(self.sub_tag) {
            Some(n) => n.to_string(),
            None => format!("0x{:02X}", self.sub_tag),
        };
        format!("{} sub-record {}", record_label(self.seg.tag), name)
    }

    pub(super) fn corrupt(&self, detail: impl Into<String>) -> ReadError {
        ReadError::corrupt(self.what(), self.offset, detail)
    }

    #[inline]
    pub(super) fn need(&self, n: u64) -> Result<(), ReadError> {
        let pos = self.src.pos();
        if pos.saturating_add(n) > self.seg.end {
            return Err(self.corrupt(format!(
                "needs {} bytes at offset {} but its {} record (at offset {}) ends at offset {}",
                n,
                pos,
                record_label(self.seg.tag),
                self.seg.record_offset,
                self.seg.end
            )));
        }
        Ok(())
    }

    pub(super) fn io(&self, e: std::io::Error) -> ReadError {
        ReadError::from_io(self.what(), self.offset, self.src.pos(), e)
    }

    #[inline]
    pub(super) fn u1(&mut self) -> Result<u8, ReadError> {
        self.need(1)?;
        self.src.u1().map_err(|e| self.io(e))
    }

    fn u2(&mut self) -> Result<u16, ReadError> {
        self.need(2)?;
        self.src.u2().map_err(|e| self.io(e))
    }

    fn u4(&mut self) -> Result<u32, ReadError> {
        self.need(4)?;
        self.src.u4().map_err(|e| self.io(e))
    }

    fn id(&mut self) -> Result<u64, ReadError> {
        self.need(u64::from(self.id_size))?;
        self.src.id(self.id_size).map_err(|e| self.io(e))
    }

    fn basic_type(&mut self, role: &str) -> Result<BasicType, ReadError> {
        let at = self.src.pos();
        let code = self.u1()?;
        BasicType::from_code(code).ok_or_else(|| {
            self.corrupt(format!(
                "unknown basic type {code} for {role} at offset {at}"
            ))
        })
    }

    fn value(&mut self, ty: BasicType) -> Result<Value, ReadError> {
        let n = ty.size(self.id_size) as usize;
        self.need(n as u64)?;
        let mut b = [0u8; 8];
        self.src.read_exact(&mut b[..n]).map_err(|e| self.io(e))?;
        Ok(Value::decode(ty, &b[..n]))
    }

    /// The fixed-size head of an instance or array dump (`n` bytes, at most
    /// [`Head::MAX`]) with one bounds check and one copy: these heads are
    /// nearly every sub-record of a dump, and field-by-field reads of them
    /// were most of a histogram's time.
    #[inline]
    pub(super) fn head(&mut self, n: usize) -> Result<Head, ReadError> {
        debug_assert!(n <= Head::MAX);
        self.need(n as u64)?;
        let mut h = Head {
            b: [0; Head::MAX],
            at: 0,
            id_size: self.id_size as usize,
        };
        self.src.read_exact(&mut h.b[..n]).map_err(|e| self.io(e))?;
        Ok(h)
    }

    /// Reads (`keep`) or skips `n` payload bytes.
    fn payload(&mut self, n: u64, keep: bool) -> Result<Option<Vec<u8>>, ReadError> {
        self.need(n)?;
        if keep {
            self.src.read_vec(n).map(Some).map_err(|e| self.io(e))
        } else {
            self.src.skip(n).map(|_| None).map_err(|e| self.io(e))
        }
    }
}

/// The bytes of a sub-record head, decoded in order.
pub(super) struct Head {
    b: [u8; Head::MAX],
    at: usize,
    id_size: usize,
}

impl Head {
    /// Two identifiers of 8 bytes and two u4s.
    const MAX: usize = 24;

    #[inline]
    pub(super) fn u1(&mut self) -> u8 {
        self.at += 1;
        self.b[self.at - 1]
    }

    #[inline]
    pub(super) fn u4(&mut self) -> u32 {
        self.at += 4;
        u32::from_be_bytes(self.b[self.at - 4..self.at].try_into().unwrap())
    }

    #[inline]
    pub(super) fn id(&mut self) -> u64 {
        self.at += self.id_size;
        id_from_be(&self.b[self.at - self.id_size..self.at])
    }
}

/// Reads one sub-record starting at the current position, which must be
/// inside `seg`.
pub(crate) fn read_sub_record<R: Read>(
    src: &mut Source<R>,
    seg: Segment,
    id_size: u32,
    opts: ReadOptions,
) -> Result<HeapSubRecord, ReadError> {
    let offset = src.pos();
    let mut s = Sub {
        src,
        seg,
        id_size,
        sub_tag: 0,
        offset,
    };
    s.sub_tag = s.u1()?;
    let root = |object_id, kind| {
        Ok(HeapSubRecord::Root(Root {
            offset,
            object_id,
            kind,
        }))
    };
    match s.sub_tag {
        sub_tag::ROOT_UNKNOWN => root(s.id()?, RootKind::Unknown),
        sub_tag::ROOT_JNI_GLOBAL => {
            let obj = s.id()?;
            root(
                obj,
                RootKind::JniGlobal {
                    jni_global_ref_id: s.id()?,
                },
            )
        }
        sub_tag::ROOT_JNI_LOCAL => {
            let obj = s.id()?;
            root(
                obj,
                RootKind::JniLocal {
                    thread_serial: s.u4()?,
                    frame_depth: s.u4()?,
                },
            )
        }
        sub_tag::ROOT_JAVA_FRAME => {
            let obj = s.id()?;
            root(
                obj,
                RootKind::JavaFrame {
                    thread_serial: s.u4()?,
                    frame_depth: s.u4()?,
                },
            )
        }
        sub_tag::ROOT_NATIVE_STACK => {
            let obj = s.id()?;
            root(
                obj,
                RootKind::NativeStack {
                    thread_serial: s.u4()?,
                },
            )
        }
        sub_tag::ROOT_STICKY_CLASS => root(s.id()?, RootKind::StickyClass),
        sub_tag::ROOT_THREAD_BLOCK => {
            let obj = s.id()?;
            root(
                obj,
                RootKind::ThreadBlock {
                    thread_serial: s.u4()?,
                },
            )
        }
        sub_tag::ROOT_MONITOR_USED => root(s.id()?, RootKind::MonitorUsed),
        sub_tag::ROOT_THREAD_OBJECT => {
            let obj = s.id()?;
            root(
                obj,
                RootKind::ThreadObject {
                    thread_serial: s.u4()?,
                    trace_serial: s.u4()?,
                },
            )
        }
        sub_tag::CLASS_DUMP => {
            read_class_dump(&mut s).map(|cd| HeapSubRecord::ClassDump(Box::new(cd)))
        }
        sub_tag::INSTANCE_DUMP => {
            let mut h = s.head(2 * id_size as usize + 8)?;
            let object_id = h.id();
            let trace_serial = h.u4();
            let class_id = h.id();
            let values_len = h.u4();
            let values = s.payload(
                u64::from(values_len),
                opts.instance_values && u64::from(values_len) <= opts.max_kept,
            )?;
            Ok(HeapSubRecord::InstanceDump(InstanceDump {
                offset,
                object_id,
                trace_serial,
                class_id,
                values_len,
                values,
            }))
        }
        sub_tag::OBJECT_ARRAY_DUMP => {
            let mut h = s.head(2 * id_size as usize + 8)?;
            let array_id = h.id();
            let trace_serial = h.u4();
            let length = h.u4();
            let array_class_id = h.id();
            let n = u64::from(length) * u64::from(id_size);
            let elements = s
                .payload(n, opts.object_array_elements && n <= opts.max_kept)?
                .map(|b| b.chunks_exact(id_size as usize).map(id_from_be).collect());
            Ok(HeapSubRecord::ObjectArrayDump(ObjectArrayDump {
                offset,
                array_id,
                trace_serial,
                length,
                array_class_id,
                elements,
            }))
        }
        sub_tag::PRIMITIVE_ARRAY_DUMP => {
            let mut h = s.head(id_size as usize + 9)?;
            let array_id = h.id();
            let trace_serial = h.u4();
            let length = h.u4();
            let type_at = s.src.pos() - 1;
            let code = h.u1();
            let element_type = BasicType::from_code(code).ok_or_else(|| {
                s.corrupt(format!(
                    "unknown basic type {code} for array elements at offset {type_at}"
                ))
            })?;
            if element_type == BasicType::Object {
                return Err(s.corrupt("element type 2 (object) in a primitive array"));
            }
            let n = u64::from(length) * u64::from(element_type.size(id_size));
            let data = s.payload(n, opts.primitive_array_data && n <= opts.max_kept)?;
            Ok(HeapSubRecord::PrimitiveArrayDump(PrimitiveArrayDump {
                offset,
                array_id,
                trace_serial,
                length,
                element_type,
                data,
            }))
        }
        t => Err(s.corrupt(format!(
            "unknown sub-record tag 0x{t:02X} (sub-records have no length, so it cannot be skipped)"
        ))),
    }
}

fn read_class_dump<R: Read>(s: &mut Sub<'_, R>) -> Result<ClassDump, ReadError> {
    let offset = s.offset;
    let class_id = s.id()?;
    let trace_serial = s.u4()?;
    let super_class_id = s.id()?;
    let class_loader_id = s.id()?;
    let signers_id = s.id()?;
    let protection_domain_id = s.id()?;
    let reserved1 = s.id()?;
    let reserved2 = s.id()?;
    let instance_size = s.u4()?;
    // Each count is checked against the bytes left before allocating.
    let cp_count = s.u2()?;
    s.need(u64::from(cp_count) * 4)?;
    let mut constant_pool = Vec::with_capacity(usize::from(cp_count));
    for _ in 0..cp_count {
        let index = s.u2()?;
        let ty = s.basic_type("constant pool entry")?;
        constant_pool.push(ConstantPoolEntry {
            index,
            value: s.value(ty)?,
        });
    }
    let static_count = s.u2()?;
    s.need(u64::from(static_count) * (u64::from(s.id_size) + 2))?;
    let mut static_fields = Vec::with_capacity(usize::from(static_count));
    for _ in 0..static_count {
        let name_id = s.id()?;
        let ty = s.basic_type("static field")?;
        static_fields.push(StaticField {
            name_id,
            value: s.value(ty)?,
        });
    }
    let field_count = s.u2()?;
    s.need(u64::from(field_count) * (u64::from(s.id_size) + 1))?;
    let mut instance_fields = Vec::with_capacity(usize::from(field_count));
    for _ in 0..field_count {
        let name_id = s.id()?;
        let ty = s.basic_type("instance field")?;
        instance_fields.push(FieldDescriptor { name_id, ty });
    }
    Ok(ClassDump {
        offset,
        class_id,
        trace_serial,
        super_class_id,
        class_loader_id,
        signers_id,
        protection_domain_id,
        reserved1,
        reserved2,
        instance_size,
        constant_pool,
        static_fields,
        instance_fields,
    })
}

/// One decoded instance field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldValue {
    /// The class that declares the field.
    pub class_id: u64,
    pub name_id: u64,
    pub value: Value,
}

/// What INSTANCE DUMP decoding needs to know about one class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassLayout {
    pub class_id: u64,
    pub super_class_id: u64,
    pub instance_size: u32,
    pub fields: Vec<FieldDescriptor>,
}

/// Class layouts collected from CLASS DUMPs, for decoding INSTANCE DUMP
/// values. Build it while reading (HotSpot writes class dumps first) or in a
/// first pass (our agent writes them last), then decode instances lazily.
///
/// At most [`ClassLayouts::MAX_FIELDS`] fields are kept in all: a class
/// past that is left out (its instances are then counted as written, as
/// for a class whose dump is missing), so a small compressed file of many
/// 65535-field classes cannot take gigabytes. Real heaps have a few
/// hundred thousand fields.
#[derive(Debug, Clone, Default)]
pub struct ClassLayouts {
    id_size: u32,
    classes: HashMap<u64, ClassLayout>,
    fields: usize,
    /// Classes left out for [`ClassLayouts::MAX_FIELDS`].
    pub left_out: u64,
}

impl ClassLayouts {
    /// Instance fields kept over all classes.
    pub const MAX_FIELDS: usize = 8 << 20;

    pub fn new(id_size: u32) -> Self {
        ClassLayouts {
            id_size,
            classes: HashMap::new(),
            fields: 0,
            left_out: 0,
        }
    }

    pub fn id_size(&self) -> u32 {
        self.id_size
    }

    /// Records a class; a later dump of the same class replaces it.
    pub fn add(&mut self, cd: &ClassDump) {
        let before = self.classes.get(&cd.class_id).map_or(0, |c| c.fields.len());
        let fields = self.fields - before + cd.instance_fields.len();
        if fields > Self::MAX_FIELDS {
            self.left_out += 1;
            return;
        }
        self.fields = fields;
        self.classes.insert(
            cd.class_id,
            ClassLayout {
                class_id: cd.class_id,
                super_class_id: cd.super_class_id,
                instance_size: cd.instance_size,
                fields: cd.instance_fields.clone(),
            },
        );
    }

    pub fn get(&self, class_id: u64) -> Option<&ClassLayout> {
        self.classes.get(&class_id)
    }

    pub fn len(&self) -> usize {
        self.classes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }

    /// Visits the class and its superclasses, subclass first, stopping at a
    /// super ID of 0. Errors on a missing class or a cycle.
    fn walk(&self, class_id: u64, mut f: impl FnMut(&ClassLayout)) -> Result<(), String> {
        let mut id = class_id;
        let mut steps = 0usize;
        while id != 0 {
            let c = self
                .classes
                .get(&id)
                .ok_or_else(|| format!("class 0x{id:x} has no CLASS DUMP"))?;
            f(c);
            id = c.super_class_id;
            steps += 1;
            if steps > self.classes.len() {
                return Err(format!("superclass chain of class 0x{class_id:x} loops"));
            }
        }
        Ok(())
    }

    /// All instance fields of `class_id` in INSTANCE DUMP order: its own,
    /// then its superclass's, ... Each with its declaring class.
    pub fn all_fields(&self, class_id: u64) -> Result<Vec<(u64, FieldDescriptor)>, String> {
        let mut v = Vec::new();
        self.walk(class_id, |c| {
            v.extend(c.fields.iter().map(|f| (c.class_id, *f)))
        })?;
        Ok(v)
    }

    /// `(references, primitive bytes)` over the instance fields of the
    /// class and its supers; `None` if the chain is incomplete.
    pub fn field_counts(&self, class_id: u64) -> Option<(u64, u64)> {
        let (mut refs, mut prim) = (0u64, 0u64);
        self.walk(class_id, |c| {
            for f in &c.fields {
                match f.ty {
                    BasicType::Object => refs += 1,
                    t => prim += u64::from(t.size(0)),
                }
            }
        })
        .ok()?;
        Some((refs, prim))
    }

    /// Decodes raw instance values of an object of class `class_id`. The
    /// values must be consumed exactly.
    pub fn decode_values(&self, class_id: u64, values: &[u8]) -> Result<Vec<FieldValue>, String> {
        let mut out = Vec::new();
        let mut at = 0usize;
        let mut short = false;
        let id_size = self.id_size;
        self.walk(class_id, |c| {
            for f in &c.fields {
                let n = f.ty.size(id_size) as usize;
                if short || at + n > values.len() {
                    short = true;
                    return;
                }
                out.push(FieldValue {
                    class_id: c.class_id,
                    name_id: f.name_id,
                    value: Value::decode(f.ty, &values[at..at + n]),
                });
                at += n;
            }
        })?;
        if short {
            return Err(format!(
                "the fields of class 0x{class_id:x} and its superclasses need more than the {} value bytes",
                values.len()
            ));
        }
        if at != values.len() {
            return Err(format!(
                "the fields of class 0x{class_id:x} and its superclasses use {at} of {} value bytes",
                values.len()
            ));
        }
        Ok(out)
    }

    /// Decodes an INSTANCE DUMP's field values; errors name the sub-record.
    pub fn decode_instance(&self, inst: &InstanceDump) -> Result<Vec<FieldValue>, ReadError> {
        let what = "INSTANCE DUMP";
        let values = inst.values.as_deref().ok_or_else(|| {
            ReadError::corrupt(
                what,
                inst.offset,
                "field values were skipped (instance_values off)",
            )
        })?;
        self.decode_values(inst.class_id, values)
            .map_err(|d| ReadError::corrupt(what, inst.offset, d))
    }
}
