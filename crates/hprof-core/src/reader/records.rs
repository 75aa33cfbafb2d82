//! Top-level records: tags, names, decoded bodies.
//!
//! Every record is `u1 tag, u4 time, u4 length, body[length]`. Bodies of
//! all records except heap dumps are small and are decoded from memory;
//! heap dump bodies are streamed sub-record by sub-record (see `heap.rs`).

use super::source::{Body, Overrun};

pub use crate::vocab::tag;

/// The name of a top-level record tag as the format documents it, or
/// `None` for tags this reader does not know.
pub fn record_name(t: u8) -> Option<&'static str> {
    Some(match t {
        tag::UTF8 => "UTF8",
        tag::LOAD_CLASS => "LOAD CLASS",
        tag::UNLOAD_CLASS => "UNLOAD CLASS",
        tag::FRAME => "FRAME",
        tag::TRACE => "TRACE",
        tag::ALLOC_SITES => "ALLOC SITES",
        tag::HEAP_SUMMARY => "HEAP SUMMARY",
        tag::START_THREAD => "START THREAD",
        tag::END_THREAD => "END THREAD",
        tag::HEAP_DUMP => "HEAP DUMP",
        tag::CPU_SAMPLES => "CPU SAMPLES",
        tag::CONTROL_SETTINGS => "CONTROL SETTINGS",
        tag::HEAP_DUMP_SEGMENT => "HEAP DUMP SEGMENT",
        tag::HEAP_DUMP_END => "HEAP DUMP END",
        _ => return None,
    })
}

/// `record_name`, or `unknown record 0xNN`.
pub(crate) fn record_label(t: u8) -> String {
    match record_name(t) {
        Some(n) => n.to_string(),
        None => format!("unknown record 0x{t:02X}"),
    }
}

/// One top-level record with its framing.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub tag: u8,
    /// The record's time field (microseconds; since agent load for our
    /// agent, always 0 in HotSpot dumps).
    pub time: u32,
    /// File offset of the tag byte (in the uncompressed stream).
    pub offset: u64,
    /// Body length from the record header.
    pub length: u32,
    pub body: RecordBody,
}

impl Record {
    /// The record's name, e.g. `LOAD CLASS`.
    pub fn name(&self) -> String {
        record_label(self.tag)
    }

    /// File offset just past this record's body.
    pub fn end_offset(&self) -> u64 {
        self.offset + 9 + u64::from(self.length)
    }
}

/// Decoded record bodies.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordBody {
    Utf8 {
        id: u64,
        text: String,
    },
    LoadClass(LoadClass),
    UnloadClass {
        class_serial: u32,
    },
    Frame(Frame),
    Trace(Trace),
    AllocSites(AllocSites),
    HeapSummary(HeapSummary),
    StartThread(StartThread),
    EndThread {
        thread_serial: u32,
    },
    CpuSamples(CpuSamples),
    ControlSettings(ControlSettings),
    /// A HEAP DUMP (0x0C) or HEAP DUMP SEGMENT (0x1C) record begins; its
    /// sub-records are pulled with `HprofReader::next_heap_sub_record`
    /// (or skipped by calling `next_record` again).
    HeapDumpStart {
        segment: bool,
    },
    HeapDumpEnd,
    /// A record with a tag this reader does not know; its body was skipped.
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadClass {
    pub class_serial: u32,
    pub class_id: u64,
    pub trace_serial: u32,
    pub name_id: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub id: u64,
    pub method_name_id: u64,
    pub signature_id: u64,
    /// 0 when unknown.
    pub source_file_id: u64,
    pub class_serial: u32,
    /// > 0 line number; 0 no line info; -1 unknown; -2 compiled; -3 native.
    pub line: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    pub serial: u32,
    pub thread_serial: u32,
    /// Frame IDs, top of stack first.
    pub frame_ids: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocSites {
    pub flags: u16,
    /// The cutoff field exactly as written. Our agent (like the original on
    /// x86) writes the low 32 bits of a C double here; other writers may put
    /// IEEE single-precision bits. See [`AllocSites::cutoff_as_f32`].
    pub cutoff_raw: u32,
    pub total_live_bytes: u32,
    pub total_live_instances: u32,
    pub total_bytes_allocated: u64,
    pub total_instances_allocated: u64,
    pub sites: Vec<AllocSite>,
}

impl AllocSites {
    /// The cutoff interpreted as IEEE single precision (the documented
    /// meaning; garbage for the original agent's low-word-of-double quirk).
    pub fn cutoff_as_f32(&self) -> f32 {
        f32::from_bits(self.cutoff_raw)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocSite {
    /// 0 for non-array classes, else the element basic type (2 for arrays
    /// of objects or arrays, 4-11 for primitive arrays).
    pub array_type: u8,
    pub class_serial: u32,
    pub trace_serial: u32,
    pub live_bytes: u32,
    pub live_instances: u32,
    pub bytes_allocated: u32,
    pub instances_allocated: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapSummary {
    pub total_live_bytes: u32,
    pub total_live_instances: u32,
    pub total_bytes_allocated: u64,
    pub total_instances_allocated: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartThread {
    pub thread_serial: u32,
    pub thread_id: u64,
    pub trace_serial: u32,
    pub name_id: u64,
    pub group_name_id: u64,
    /// 0 when the group has no parent.
    pub parent_group_name_id: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSamples {
    pub total: u32,
    pub entries: Vec<CpuSample>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuSample {
    pub count: u32,
    pub trace_serial: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlSettings {
    /// 0x1 heap dumps / allocation sites on, 0x2 cpu sampling on.
    pub flags: u32,
    pub depth: u16,
}

/// Decodes the in-memory body of a non-heap record other than UTF8 (read
/// by the stream, which bounds its text). The caller checks that the whole
/// body was consumed.
pub(crate) fn decode_body(t: u8, b: &mut Body<'_>) -> Result<RecordBody, Overrun> {
    Ok(match t {
        tag::LOAD_CLASS => RecordBody::LoadClass(LoadClass {
            class_serial: b.u4()?,
            class_id: b.id()?,
            trace_serial: b.u4()?,
            name_id: b.id()?,
        }),
        tag::UNLOAD_CLASS => RecordBody::UnloadClass {
            class_serial: b.u4()?,
        },
        tag::FRAME => RecordBody::Frame(Frame {
            id: b.id()?,
            method_name_id: b.id()?,
            signature_id: b.id()?,
            source_file_id: b.id()?,
            class_serial: b.u4()?,
            line: b.i4()?,
        }),
        tag::TRACE => {
            let serial = b.u4()?;
            let thread_serial = b.u4()?;
            let n = b.u4()?;
            let id_size = b.id_size();
            let frame_ids = b.list(u64::from(n), id_size, |b| b.id())?;
            RecordBody::Trace(Trace {
                serial,
                thread_serial,
                frame_ids,
            })
        }
        tag::ALLOC_SITES => {
            let flags = b.u2()?;
            let cutoff_raw = b.u4()?;
            let total_live_bytes = b.u4()?;
            let total_live_instances = b.u4()?;
            let total_bytes_allocated = b.u8()?;
            let total_instances_allocated = b.u8()?;
            let count = b.u4()?;
            let sites = b.list(u64::from(count), 25, |b| {
                Ok(AllocSite {
                    array_type: b.u1()?,
                    class_serial: b.u4()?,
                    trace_serial: b.u4()?,
                    live_bytes: b.u4()?,
                    live_instances: b.u4()?,
                    bytes_allocated: b.u4()?,
                    instances_allocated: b.u4()?,
                })
            })?;
            RecordBody::AllocSites(AllocSites {
                flags,
                cutoff_raw,
                total_live_bytes,
                total_live_instances,
                total_bytes_allocated,
                total_instances_allocated,
                sites,
            })
        }
        tag::HEAP_SUMMARY => RecordBody::HeapSummary(HeapSummary {
            total_live_bytes: b.u4()?,
            total_live_instances: b.u4()?,
            total_bytes_allocated: b.u8()?,
            total_instances_allocated: b.u8()?,
        }),
        tag::START_THREAD => RecordBody::StartThread(StartThread {
            thread_serial: b.u4()?,
            thread_id: b.id()?,
            trace_serial: b.u4()?,
            name_id: b.id()?,
            group_name_id: b.id()?,
            parent_group_name_id: b.id()?,
        }),
        tag::END_THREAD => RecordBody::EndThread {
            thread_serial: b.u4()?,
        },
        tag::CPU_SAMPLES => {
            let total = b.u4()?;
            let n = b.u4()?;
            let entries = b.list(u64::from(n), 8, |b| {
                Ok(CpuSample {
                    count: b.u4()?,
                    trace_serial: b.u4()?,
                })
            })?;
            RecordBody::CpuSamples(CpuSamples { total, entries })
        }
        tag::CONTROL_SETTINGS => RecordBody::ControlSettings(ControlSettings {
            flags: b.u4()?,
            depth: b.u2()?,
        }),
        tag::HEAP_DUMP_END => RecordBody::HeapDumpEnd,
        _ => unreachable!("decode_body called for tag 0x{t:02X}"),
    })
}

/// Decodes UTF8 record text. HotSpot writes its symbols in the JVM's
/// modified UTF-8 (NUL as `C0 80`, supplementary characters as surrogate
/// pairs); plain UTF-8 is taken as is. Undecodable bytes become U+FFFD.
pub fn decode_java_utf8(bytes: &[u8]) -> String {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return s.to_string();
    }
    let mut units: Vec<u16> = Vec::with_capacity(bytes.len());
    let cont = |i: usize| {
        bytes
            .get(i)
            .filter(|&&b| b & 0xC0 == 0x80)
            .map(|&b| u32::from(b & 0x3F))
    };
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (cp, len) = if b < 0x80 {
            (Some(u32::from(b)), 1)
        } else if b & 0xE0 == 0xC0 {
            (cont(i + 1).map(|c1| (u32::from(b & 0x1F) << 6) | c1), 2)
        } else if b & 0xF0 == 0xE0 {
            match (cont(i + 1), cont(i + 2)) {
                (Some(c1), Some(c2)) => (Some((u32::from(b & 0x0F) << 12) | (c1 << 6) | c2), 3),
                _ => (None, 1),
            }
        } else if b & 0xF8 == 0xF0 {
            match (cont(i + 1), cont(i + 2), cont(i + 3)) {
                (Some(c1), Some(c2), Some(c3)) => (
                    Some((u32::from(b & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3),
                    4,
                ),
                _ => (None, 1),
            }
        } else {
            (None, 1)
        };
        match cp {
            Some(cp) if cp >= 0x10000 => {
                let v = cp - 0x10000;
                units.push(0xD800 | (v >> 10) as u16);
                units.push(0xDC00 | (v & 0x3FF) as u16);
                i += len;
            }
            Some(cp) => {
                units.push(cp as u16);
                i += len;
            }
            None => {
                units.push(0xFFFD);
                i += 1;
            }
        }
    }
    String::from_utf16_lossy(&units)
}
