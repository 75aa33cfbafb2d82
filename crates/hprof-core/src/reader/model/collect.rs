//! `read_all` / `collect`: read a whole stream into a [`Parsed`] value.
//! Everything is kept in memory, so this is meant for tests and small
//! files; large dumps should be streamed with `HprofReader`.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use crate::reader::error::ReadError;
use crate::reader::header::Header;
use crate::reader::heap::{
    ClassDump, ClassLayouts, FieldValue, HeapSubRecord, InstanceDump, ObjectArrayDump,
    PrimitiveArrayDump, Root, Value,
};
use crate::reader::names::java_class_name;
use crate::reader::records::{
    AllocSites, ControlSettings, CpuSamples, Frame, HeapSummary, RecordBody, StartThread, Trace,
};
use crate::reader::stream::{open_path, HprofReader};

/// Framing of one top-level record, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordInfo {
    pub tag: u8,
    pub time: u32,
    pub offset: u64,
    pub length: u32,
}

/// A LOAD CLASS record with its name resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedClass {
    pub serial: u32,
    pub class_id: u64,
    pub trace_serial: u32,
    pub name_id: u64,
    /// The name as written (`None` if no UTF8 record has the ID).
    pub name: Option<String>,
}

/// One heap dump: a HEAP DUMP record, or the HEAP DUMP SEGMENTs up to a
/// HEAP DUMP END.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeapDump {
    /// Offset of the first record of the dump.
    pub offset: u64,
    /// Number of HEAP DUMP / HEAP DUMP SEGMENT records it spans.
    pub records: u32,
    /// Made of HEAP DUMP SEGMENTs (1.0.2) rather than one HEAP DUMP.
    pub segmented: bool,
    /// Complete: a HEAP DUMP record, or segments closed by HEAP DUMP END.
    pub ended: bool,
    /// Sub-record tags in file order.
    pub sub_record_tags: Vec<u8>,
    pub roots: Vec<Root>,
    pub class_dumps: Vec<ClassDump>,
    pub instances: Vec<InstanceDump>,
    pub object_arrays: Vec<ObjectArrayDump>,
    pub primitive_arrays: Vec<PrimitiveArrayDump>,
}

impl HeapDump {
    /// Class layouts from this dump's CLASS DUMPs.
    pub fn layouts(&self, id_size: u32) -> ClassLayouts {
        let mut l = ClassLayouts::new(id_size);
        for cd in &self.class_dumps {
            l.add(cd);
        }
        l
    }

    pub fn class_dump(&self, class_id: u64) -> Option<&ClassDump> {
        self.class_dumps.iter().find(|c| c.class_id == class_id)
    }

    pub fn instances_of(&self, class_id: u64) -> impl Iterator<Item = &InstanceDump> + '_ {
        self.instances
            .iter()
            .filter(move |i| i.class_id == class_id)
    }

    fn add(&mut self, sub: HeapSubRecord) {
        self.sub_record_tags.push(sub.tag());
        match sub {
            HeapSubRecord::Root(r) => self.roots.push(r),
            HeapSubRecord::ClassDump(c) => self.class_dumps.push(*c),
            HeapSubRecord::InstanceDump(i) => self.instances.push(i),
            HeapSubRecord::ObjectArrayDump(a) => self.object_arrays.push(a),
            HeapSubRecord::PrimitiveArrayDump(a) => self.primitive_arrays.push(a),
        }
    }
}

/// Everything in an HPROF stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub header: Header,
    /// Every top-level record, in file order.
    pub records: Vec<RecordInfo>,
    pub strings: HashMap<u64, String>,
    pub classes: Vec<LoadedClass>,
    pub unloaded_classes: Vec<u32>,
    pub frames: Vec<Frame>,
    pub traces: Vec<Trace>,
    pub thread_starts: Vec<StartThread>,
    pub thread_ends: Vec<u32>,
    pub alloc_sites: Vec<AllocSites>,
    pub heap_summaries: Vec<HeapSummary>,
    pub cpu_samples: Vec<CpuSamples>,
    pub control_settings: Vec<ControlSettings>,
    pub heap_dumps: Vec<HeapDump>,
}

impl Parsed {
    pub fn string(&self, id: u64) -> Option<&str> {
        self.strings.get(&id).map(String::as_str)
    }

    /// The most recent LOAD CLASS for a class object ID.
    pub fn class(&self, class_id: u64) -> Option<&LoadedClass> {
        self.classes.iter().rev().find(|c| c.class_id == class_id)
    }

    /// The class name as written in the file.
    pub fn class_name(&self, class_id: u64) -> Option<&str> {
        self.class(class_id).and_then(|c| c.name.as_deref())
    }

    /// Finds a class by name; both sides are compared in Java style, so
    /// `java.lang.String` finds HotSpot's `java/lang/String` and `int[]`
    /// finds `[I`.
    pub fn class_by_name(&self, name: &str) -> Option<&LoadedClass> {
        let want = java_class_name(name);
        self.classes.iter().rev().find(|c| {
            c.name
                .as_deref()
                .is_some_and(|n| java_class_name(n) == want)
        })
    }

    /// Decodes an instance's fields with the class dumps of `dump`,
    /// returning `(field name, value)` pairs in INSTANCE DUMP order.
    pub fn field_values(
        &self,
        dump: &HeapDump,
        inst: &InstanceDump,
    ) -> Result<Vec<(String, Value)>, ReadError> {
        let fields: Vec<FieldValue> = dump.layouts(self.header.id_size).decode_instance(inst)?;
        Ok(fields
            .into_iter()
            .map(|f| {
                let name = self
                    .string(f.name_id)
                    .map_or_else(|| format!("<0x{:x}>", f.name_id), str::to_string);
                (name, f.value)
            })
            .collect())
    }
}

/// Reads a whole file (plain or gzip) into memory.
pub fn read_all(path: impl AsRef<Path>) -> Result<Parsed, ReadError> {
    collect(open_path(path)?)
}

/// Reads the rest of a stream into memory.
pub fn collect<R: Read>(mut reader: HprofReader<R>) -> Result<Parsed, ReadError> {
    let mut p = Parsed {
        header: reader.header().clone(),
        records: Vec::new(),
        strings: HashMap::new(),
        classes: Vec::new(),
        unloaded_classes: Vec::new(),
        frames: Vec::new(),
        traces: Vec::new(),
        thread_starts: Vec::new(),
        thread_ends: Vec::new(),
        alloc_sites: Vec::new(),
        heap_summaries: Vec::new(),
        cpu_samples: Vec::new(),
        control_settings: Vec::new(),
        heap_dumps: Vec::new(),
    };
    while let Some(rec) = reader.next_record()? {
        p.records.push(RecordInfo {
            tag: rec.tag,
            time: rec.time,
            offset: rec.offset,
            length: rec.length,
        });
        match rec.body {
            RecordBody::Utf8 { id, text } => {
                p.strings.insert(id, text);
            }
            RecordBody::LoadClass(lc) => p.classes.push(LoadedClass {
                serial: lc.class_serial,
                class_id: lc.class_id,
                trace_serial: lc.trace_serial,
                name_id: lc.name_id,
                name: None,
            }),
            RecordBody::UnloadClass { class_serial } => p.unloaded_classes.push(class_serial),
            RecordBody::Frame(f) => p.frames.push(f),
            RecordBody::Trace(t) => p.traces.push(t),
            RecordBody::AllocSites(a) => p.alloc_sites.push(a),
            RecordBody::HeapSummary(h) => p.heap_summaries.push(h),
            RecordBody::StartThread(s) => p.thread_starts.push(s),
            RecordBody::EndThread { thread_serial } => p.thread_ends.push(thread_serial),
            RecordBody::CpuSamples(c) => p.cpu_samples.push(c),
            RecordBody::ControlSettings(c) => p.control_settings.push(c),
            RecordBody::HeapDumpStart { segment } => {
                let continues =
                    segment && p.heap_dumps.last().is_some_and(|d| d.segmented && !d.ended);
                if !continues {
                    p.heap_dumps.push(HeapDump {
                        offset: rec.offset,
                        segmented: segment,
                        // A HEAP DUMP record is a complete dump by itself.
                        ended: !segment,
                        ..HeapDump::default()
                    });
                }
                let dump = p.heap_dumps.last_mut().expect("pushed above");
                dump.records += 1;
                while let Some(sub) = reader.next_heap_sub_record()? {
                    dump.add(sub);
                }
            }
            RecordBody::HeapDumpEnd => {
                if let Some(d) = p.heap_dumps.last_mut().filter(|d| d.segmented && !d.ended) {
                    d.ended = true;
                }
            }
            RecordBody::Unknown => {}
        }
    }
    for c in &mut p.classes {
        c.name = p.strings.get(&c.name_id).cloned();
    }
    Ok(p)
}
