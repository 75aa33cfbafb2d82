//! Class histogram (`hprof-rs histo`): instances and shallow bytes per class
//! for one heap dump of a stream (the last by default), computed in one
//! streaming pass with sub-record payloads skipped.
//!
//! # Counting
//!
//! Instance counts are exact: one per INSTANCE DUMP, OBJECT ARRAY DUMP and
//! PRIMITIVE ARRAY DUMP sub-record of the last heap dump (a HEAP DUMP
//! record, or HEAP DUMP SEGMENTs up to HEAP DUMP END). Class objects (CLASS
//! DUMPs) are not counted as `java.lang.Class` instances. Rows are per class
//! object ID, so two classes of the same name from different loaders get
//! two rows; primitive arrays are grouped by element type.
//!
//! # Shallow size convention
//!
//! The dump does not record object sizes, so they are estimated with a
//! [`ShallowSizeModel`]. The default models a 64-bit HotSpot VM with
//! compressed oops and compressed class pointers (the default for heaps
//! under 32 GiB), like `jmap -histo` on such a VM:
//!
//! * instance: `align8(12 + 4 * references + primitive field bytes)`, summed
//!   over the fields of the class and its superclasses as declared in the
//!   CLASS DUMPs (so 8-byte IDs in the dump do not inflate it). If the class
//!   chain is incomplete, `align8(12 + value bytes as written)`.
//! * object array: `align8(16 + 4 * length)`;
//! * primitive array: `align8(16 + length * element size)`.
//!
//! Field packing gaps are ignored, so instance sizes can be slightly lower
//! than the VM's. Object arrays from our agent carry the length up to the
//! last non-null element, so their size is a lower bound.

use std::io::Read;

use rustc_hash::FxHashMap;

use super::error::ReadError;
use super::heap::{BasicType, ClassLayouts, HeapSubRecord, ReadOptions};
use super::names::java_class_name;
use super::records::RecordBody;
use super::retained::Retained;
use super::stream::HprofReader;

/// One histogram row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoEntry {
    /// Java-style name (`java.lang.String`, `int[]`, `java.lang.String[]`).
    pub class_name: String,
    /// Class object ID; `None` for primitive arrays (grouped by type).
    pub class_id: Option<u64>,
    pub instances: u64,
    pub shallow_bytes: u64,
}

/// Object size estimate parameters; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShallowSizeModel {
    /// Header of a plain object.
    pub object_header: u64,
    /// Header of an array, including the length field.
    pub array_header: u64,
    /// Size of a reference field or element.
    pub reference_size: u64,
    /// Object alignment (a power of two).
    pub alignment: u64,
}

impl ShallowSizeModel {
    /// 64-bit, compressed oops and class pointers (HotSpot's default).
    pub const COMPRESSED_OOPS: Self = ShallowSizeModel {
        object_header: 12,
        array_header: 16,
        reference_size: 4,
        alignment: 8,
    };
    /// 64-bit without compressed oops (`-XX:-UseCompressedOops`, heaps >= 32 GiB).
    pub const UNCOMPRESSED_64: Self = ShallowSizeModel {
        object_header: 16,
        array_header: 24,
        reference_size: 8,
        alignment: 8,
    };

    fn align(&self, n: u64) -> u64 {
        let a = self.alignment.max(1);
        n.div_ceil(a) * a
    }

    pub fn instance_size(&self, references: u64, primitive_bytes: u64) -> u64 {
        self.align(self.object_header + references * self.reference_size + primitive_bytes)
    }

    pub fn object_array_size(&self, length: u64) -> u64 {
        self.align(self.array_header + length * self.reference_size)
    }

    pub fn primitive_array_size(&self, length: u64, element: BasicType) -> u64 {
        self.align(self.array_header + length * u64::from(element.size(0)))
    }
}

impl Default for ShallowSizeModel {
    fn default() -> Self {
        Self::COMPRESSED_OOPS
    }
}

/// Histogram of the last heap dump with the default size model.
pub fn histogram<R: Read>(reader: HprofReader<R>) -> Result<Vec<HistoEntry>, ReadError> {
    histogram_with(reader, &ShallowSizeModel::default())
}

/// Totals for one heap dump, built one sub-record at a time (used by
/// [`histogram_with`] and by callers that read the stream themselves, such
/// as the UI's Heap view).
pub struct HistoBuilder {
    model: ShallowSizeModel,
    layouts: ClassLayouts,
    /// class ID -> (instances, value bytes). Object IDs are addresses or
    /// serials, not attacker-chosen keys worth SipHash: one lookup per
    /// object of the dump is the histogram's hot path.
    instances: FxHashMap<u64, (u64, u64)>,
    /// array class ID -> (arrays, shallow bytes)
    object_arrays: FxHashMap<u64, (u64, u64)>,
    /// element type -> (arrays, shallow bytes)
    primitive_arrays: FxHashMap<BasicType, (u64, u64)>,
    objects: u64,
}

impl HistoBuilder {
    pub fn new(id_size: u32, model: ShallowSizeModel) -> Self {
        HistoBuilder {
            model,
            layouts: ClassLayouts::new(id_size),
            instances: FxHashMap::default(),
            object_arrays: FxHashMap::default(),
            primitive_arrays: FxHashMap::default(),
            objects: 0,
        }
    }

    /// Count one sub-record (roots are ignored).
    pub fn add(&mut self, sub: &HeapSubRecord) {
        let model = &self.model;
        match sub {
            HeapSubRecord::ClassDump(cd) => self.layouts.add(cd),
            HeapSubRecord::InstanceDump(i) => {
                let e = self.instances.entry(i.class_id).or_default();
                e.0 += 1;
                e.1 += u64::from(i.values_len);
                self.objects += 1;
            }
            HeapSubRecord::ObjectArrayDump(a) => {
                let e = self.object_arrays.entry(a.array_class_id).or_default();
                e.0 += 1;
                e.1 += model.object_array_size(u64::from(a.length));
                self.objects += 1;
            }
            HeapSubRecord::PrimitiveArrayDump(a) => {
                let e = self.primitive_arrays.entry(a.element_type).or_default();
                e.0 += 1;
                e.1 += model.primitive_array_size(u64::from(a.length), a.element_type);
                self.objects += 1;
            }
            HeapSubRecord::Root(_) => {}
        }
    }

    /// Instances and arrays counted so far.
    pub fn objects(&self) -> u64 {
        self.objects
    }

    /// The rows, named by `name_of(class ID)`, sorted by shallow bytes
    /// (largest first), then instances, then name.
    pub fn rows(&self, name_of: impl Fn(u64) -> String) -> Vec<HistoEntry> {
        let model = &self.model;
        let mut rows = Vec::new();
        for (&cid, &(count, value_bytes)) in &self.instances {
            let per_instance = match self.layouts.field_counts(cid) {
                Some((refs, prim)) => model.instance_size(refs, prim),
                // Without a complete class chain, count the values as written.
                None => model.instance_size(0, value_bytes / count.max(1)),
            };
            rows.push(HistoEntry {
                class_name: name_of(cid),
                class_id: Some(cid),
                instances: count,
                shallow_bytes: per_instance * count,
            });
        }
        for (&cid, &(count, bytes)) in &self.object_arrays {
            rows.push(HistoEntry {
                class_name: name_of(cid),
                class_id: Some(cid),
                instances: count,
                shallow_bytes: bytes,
            });
        }
        for (&ty, &(count, bytes)) in &self.primitive_arrays {
            rows.push(HistoEntry {
                class_name: format!("{}[]", ty.java_name()),
                class_id: None,
                instances: count,
                shallow_bytes: bytes,
            });
        }
        rows.sort_by(|a, b| {
            b.shallow_bytes
                .cmp(&a.shallow_bytes)
                .then(b.instances.cmp(&a.instances))
                .then_with(|| a.class_name.cmp(&b.class_name))
                .then(a.class_id.cmp(&b.class_id))
        });
        rows
    }
}

/// Histogram of the last heap dump, sorted by shallow bytes (largest
/// first), then instances, then name.
pub fn histogram_with<R: Read>(
    reader: HprofReader<R>,
    model: &ShallowSizeModel,
) -> Result<Vec<HistoEntry>, ReadError> {
    histogram_of(reader, model, WhichDump::Last).map(|h| h.rows)
}

/// Which heap dump of a stream (a HEAP DUMP record, or HEAP DUMP
/// SEGMENTs up to their HEAP DUMP END, is one dump).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhichDump {
    Last,
    /// The Nth, from 1.
    Number(usize),
}

/// A histogram and which dump it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpHistogram {
    pub rows: Vec<HistoEntry>,
    /// Which dump the rows are of (from 1; 0 when the stream has none, or
    /// not the one asked for).
    pub number: usize,
    /// Heap dumps in the stream.
    pub dumps: usize,
}

/// Histogram of one heap dump of the stream; the others are skipped. The
/// names kept are bounded by [`Retained`] (an error past it).
pub fn histogram_of<R: Read>(
    mut reader: HprofReader<R>,
    model: &ShallowSizeModel,
    which: WhichDump,
) -> Result<DumpHistogram, ReadError> {
    reader.set_options(ReadOptions::skip_bodies());
    let id_size = reader.id_size();
    let mut kept = Retained::default();
    let mut strings: FxHashMap<u64, String> = FxHashMap::default();
    let mut class_name_ids: FxHashMap<u64, u64> = FxHashMap::default();
    let mut acc = HistoBuilder::new(id_size, *model);
    let mut number = 0;
    let mut dumps = 0;
    // A segmented dump is open until its HEAP DUMP END.
    let mut segments_open = false;
    while let Some(rec) = reader.next_record()? {
        let (name, offset) = (rec.name(), rec.offset);
        let limit = |e: String| ReadError::limit(name.clone(), offset, e);
        match rec.body {
            RecordBody::Utf8 { id, text } => {
                let len = text.len() as u64;
                if strings.insert(id, text).is_none() {
                    kept.keep(len).map_err(limit)?;
                }
            }
            RecordBody::LoadClass(lc)
                if class_name_ids.insert(lc.class_id, lc.name_id).is_none() =>
            {
                kept.keep(16).map_err(limit)?;
            }
            RecordBody::HeapDumpStart { segment } => {
                if !(segment && segments_open) {
                    dumps += 1;
                    if which == WhichDump::Last || which == WhichDump::Number(dumps) {
                        acc = HistoBuilder::new(id_size, *model);
                        number = dumps;
                    }
                }
                segments_open = segment;
                if number == dumps {
                    while let Some(sub) = reader.next_heap_sub_record()? {
                        acc.add(&sub);
                    }
                }
            }
            RecordBody::HeapDumpEnd => segments_open = false,
            _ => {}
        }
    }
    let rows = acc.rows(|class_id: u64| -> String {
        class_name_ids
            .get(&class_id)
            .and_then(|n| strings.get(n))
            .map_or_else(
                || format!("<unknown class 0x{class_id:x}>"),
                |n| java_class_name(n),
            )
    });
    Ok(DumpHistogram {
        rows,
        number,
        dumps,
    })
}
