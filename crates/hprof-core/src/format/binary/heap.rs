//! Heap dump sub-records and their framing into HEAP DUMP (1.0.1) or
//! HEAP DUMP SEGMENT + HEAP DUMP END (1.0.2) records.

use super::enc::{self, sub, tag, IdSize};
use super::HprofVersion;
use crate::format::model::{
    ClassDump, InstanceDump, InstanceValues, ObjArrayDump, PrimArrayDump, PrimElements, Root,
};
use std::io::{self, Read, Seek, SeekFrom, Write};

/// Buffers the sub-records of the current segment (1.0.1: of the whole
/// dump) until their record length is known. A 1.0.1 dump can be staged
/// in a scratch area the caller provides instead, so memory stays bounded.
#[derive(Debug)]
pub struct HeapWriter {
    buf: Vec<u8>,
    begin_time: u32,
    segments: u32,
    stage: Option<Staged>,
    /// The scratch area could not take more: what it holds is kept and
    /// copied out first, the rest of the dump stays in memory.
    stage_full: bool,
}

/// Where a 1.0.1 heap dump's sub-records are put aside while the dump runs,
/// to be read back behind the HEAP DUMP record header once its length is
/// known (the original did the same with a file). The format only reads
/// and writes it: what it is, where it lives and when it goes away are the
/// caller's (the agent: a private file beside the output, removed when the
/// area is dropped).
pub trait Scratch: Read + Write + Seek + Send + std::fmt::Debug {
    /// What to call it in a message (a file's path).
    fn name(&self) -> String;
    /// Tell the user about a problem with this area (the format does not
    /// print; the agent reports it as an HPROF message).
    fn report(&self, what: &str);
}

/// Gives each 1.0.1 dump a new [`Scratch`] area.
pub trait ScratchSource: Send + std::fmt::Debug {
    fn create(&mut self) -> io::Result<Box<dyn Scratch>>;
    /// What to call the area it makes in a message.
    fn name(&self) -> String;
    /// Tell the user that no area could be made (the dump is then kept in
    /// memory).
    fn report(&self, what: &str);
}

/// A dump's scratch area and how much of it holds sub-records.
#[derive(Debug)]
pub struct Staged {
    area: Box<dyn Scratch>,
    /// Bytes written to the area.
    len: u64,
}

/// Bytes of sub-records kept in memory before they go to the scratch area.
const STAGE_CHUNK: usize = 1 << 20;
/// Bytes copied back per step when a staged dump is written out.
pub const DRAIN_CHUNK: usize = 4 << 20;

impl Staged {
    pub fn new(area: Box<dyn Scratch>) -> Staged {
        Staged { area, len: 0 }
    }

    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.area.write_all(bytes)?;
        self.len += bytes.len() as u64;
        Ok(())
    }
}

/// A finished 1.0.1 dump whose record header is out and whose staged body
/// still has to follow (before any other record).
#[derive(Debug)]
pub struct Draining {
    stage: Staged,
    /// Staged bytes not copied yet.
    left: u64,
    /// Sub-records that were still in memory, after the staged ones.
    tail: Vec<u8>,
}

impl Draining {
    /// Tell the user about a problem with the dump's scratch area.
    pub fn report(&self, what: &str) {
        self.stage.area.report(what);
    }

    /// Append up to `max` bytes of the record body; false when nothing was
    /// left. A read error ends the stream here (reported by the caller
    /// through the truncated output) rather than hanging.
    pub fn step(&mut self, out: &mut Vec<u8>, max: usize) -> io::Result<bool> {
        if self.left > 0 {
            let n = (self.left as usize).min(max);
            let start = out.len();
            out.resize(start + n, 0);
            if let Err(e) = self.stage.area.read_exact(&mut out[start..]) {
                out.truncate(start);
                self.left = 0;
                return Err(e);
            }
            self.left -= n as u64;
            return Ok(true);
        }
        if self.tail.is_empty() {
            return Ok(false);
        }
        out.append(&mut self.tail);
        Ok(true)
    }
}

impl HeapWriter {
    pub fn new(begin_time: u32) -> Self {
        HeapWriter {
            buf: Vec::new(),
            begin_time,
            segments: 0,
            stage: None,
            stage_full: false,
        }
    }

    /// Stage a 1.0.1 dump's sub-records in a scratch area.
    pub fn stage_in(&mut self, stage: Staged) {
        self.stage = Some(stage);
    }

    /// Move buffered sub-records to the scratch area. On a write error (a
    /// full disk) the bytes staged so far stay valid and are still copied
    /// out; the rest of the dump is kept in memory. (Dropping the staged
    /// part lost every ROOT and half the objects without a word.)
    fn spill(&mut self) {
        if self.stage_full {
            return;
        }
        if let Some(st) = self.stage.as_mut() {
            let staged = st.len;
            if let Err(e) = st.append(&self.buf) {
                st.area.report(&format!(
                    "heap dump: cannot write temporary file {}: {e}; the rest of the dump is kept in memory",
                    st.area.name()
                ));
                // A partial write leaves bytes past `len`; only `len`
                // bytes are copied back, and later bytes stay in memory.
                st.len = staged;
                self.stage_full = true;
                return;
            }
            self.buf.clear();
        }
    }

    /// Time of records written while the dump is in progress (UTF8 records
    /// of field names, segments cut before the end).
    pub fn begin_time(&self) -> u32 {
        self.begin_time
    }

    /// Append one sub-record written by `write`. With a `segment_limit`
    /// (1.0.2), when the buffered bytes reach the limit, everything before
    /// this sub-record is emitted as a HEAP DUMP SEGMENT: no sub-record is
    /// ever split and a segment stays below the limit unless a single
    /// sub-record is larger.
    pub fn sub_record(
        &mut self,
        out: &mut Vec<u8>,
        segment_limit: Option<u64>,
        write: impl FnOnce(&mut Vec<u8>),
    ) {
        let start = self.buf.len();
        write(&mut self.buf);
        if let Some(limit) = segment_limit {
            if start > 0 && self.buf.len() as u64 >= limit {
                self.emit_segment(out, start, self.begin_time);
                self.buf.drain(..start);
            }
        } else if self.stage.is_some() && self.buf.len() >= STAGE_CHUNK {
            self.spill();
        }
    }

    fn emit_segment(&mut self, out: &mut Vec<u8>, len: usize, time: u32) {
        enc::record_header(out, tag::HEAP_DUMP_SEGMENT, time, len as u32);
        out.extend_from_slice(&self.buf[..len]);
        self.segments += 1;
    }

    /// Write what is left: the HEAP DUMP record (1.0.1), or the last
    /// segment and HEAP DUMP END (1.0.2; a dump always has at least one
    /// segment).
    /// A staged 1.0.1 dump returns what is still to be copied out after
    /// the record header.
    pub fn finish(
        mut self,
        out: &mut Vec<u8>,
        version: HprofVersion,
        time: u32,
    ) -> Option<Draining> {
        match version {
            HprofVersion::V1_0_1 => {
                if let Some(mut stage) = self.stage.take() {
                    let staged = stage.len;
                    enc::record_header(
                        out,
                        tag::HEAP_DUMP,
                        time,
                        (staged + self.buf.len() as u64) as u32,
                    );
                    if stage.area.seek(SeekFrom::Start(0)).is_ok() {
                        return Some(Draining {
                            stage,
                            left: staged,
                            tail: std::mem::take(&mut self.buf),
                        });
                    }
                    stage
                        .area
                        .report("heap dump: cannot read back the temporary file; dump truncated");
                    return None;
                }
                enc::record_header(out, tag::HEAP_DUMP, time, self.buf.len() as u32);
                out.extend_from_slice(&self.buf);
            }
            HprofVersion::V1_0_2 => {
                if !self.buf.is_empty() || self.segments == 0 {
                    self.emit_segment(out, self.buf.len(), time);
                }
                enc::record_header(out, tag::HEAP_DUMP_END, time, 0);
            }
        }
        None
    }
}

pub fn root(b: &mut Vec<u8>, ids: IdSize, root: &Root<'_>) {
    match *root {
        Root::Unknown { obj_id } => {
            enc::u1(b, sub::ROOT_UNKNOWN);
            enc::id(b, ids, obj_id);
        }
        Root::JniGlobal {
            obj_id,
            global_ref_id,
            ..
        } => {
            enc::u1(b, sub::ROOT_JNI_GLOBAL);
            enc::id(b, ids, obj_id);
            enc::id(b, ids, global_ref_id);
        }
        Root::JniLocal {
            obj_id,
            thread_serial,
            frame_depth,
        } => {
            enc::u1(b, sub::ROOT_JNI_LOCAL);
            enc::id(b, ids, obj_id);
            enc::u4(b, thread_serial);
            enc::u4(b, frame_depth as u32);
        }
        Root::JavaFrame {
            obj_id,
            thread_serial,
            frame_depth,
        } => {
            enc::u1(b, sub::ROOT_JAVA_FRAME);
            enc::id(b, ids, obj_id);
            enc::u4(b, thread_serial);
            enc::u4(b, frame_depth as u32);
        }
        Root::NativeStack {
            obj_id,
            thread_serial,
        } => {
            enc::u1(b, sub::ROOT_NATIVE_STACK);
            enc::id(b, ids, obj_id);
            enc::u4(b, thread_serial);
        }
        Root::StickyClass { obj_id, .. } => {
            enc::u1(b, sub::ROOT_STICKY_CLASS);
            enc::id(b, ids, obj_id);
        }
        Root::ThreadBlock {
            obj_id,
            thread_serial,
        } => {
            enc::u1(b, sub::ROOT_THREAD_BLOCK);
            enc::id(b, ids, obj_id);
            enc::u4(b, thread_serial);
        }
        Root::MonitorUsed { obj_id } => {
            enc::u1(b, sub::ROOT_MONITOR_USED);
            enc::id(b, ids, obj_id);
        }
        Root::ThreadObject {
            obj_id,
            thread_serial,
            trace_serial,
        } => {
            enc::u1(b, sub::ROOT_THREAD_OBJECT);
            enc::id(b, ids, obj_id);
            enc::u4(b, thread_serial);
            enc::u4(b, trace_serial);
        }
    }
}

/// Name of the pseudo static field that carries constant-pool entry
/// `index` of a CLASS DUMP. The format's constant-pool section is written
/// empty, as HotSpot writes it (it puts the same references in a pseudo
/// static `<resolved_references>`): some readers refuse anything else (the
/// `jvm-hprof` crate asserts it is empty), while every reader takes static
/// fields.
pub fn constant_pool_field_name(index: u16) -> String {
    format!("<constant pool[{index}]>")
}

/// CLASS DUMP. `names` holds the string IDs of the statics, then those of
/// the constant-pool entries (in the order written: last entry first, like
/// the original) as pseudo statics, then those of the instance fields, all
/// already announced in UTF8 records.
pub fn class_dump(b: &mut Vec<u8>, ids: IdSize, c: &ClassDump<'_>, names: &[u64]) {
    let (static_names, rest) = names.split_at(c.statics.len());
    let (cp_names, field_names) = rest.split_at(c.constant_pool.len());
    enc::u1(b, sub::CLASS_DUMP);
    enc::id(b, ids, c.class_id);
    enc::u4(b, c.trace_serial);
    enc::id(b, ids, c.super_id);
    enc::id(b, ids, c.loader_id);
    enc::id(b, ids, c.signers_id);
    enc::id(b, ids, c.protection_domain_id);
    enc::id(b, ids, 0);
    enc::id(b, ids, 0);
    enc::u4(b, c.instance_size);
    enc::u2(b, 0);
    enc::u2(b, (c.statics.len() + c.constant_pool.len()) as u16);
    for (s, &name) in c.statics.iter().zip(static_names) {
        enc::id(b, ids, name);
        enc::u1(b, s.value.basic_type().code());
        enc::value(b, ids, &s.value);
    }
    for (e, &name) in c.constant_pool.iter().rev().zip(cp_names) {
        enc::id(b, ids, name);
        enc::u1(b, crate::format::BasicType::Object.code());
        enc::id(b, ids, e.obj_id);
    }
    enc::u2(b, c.instance_fields.len() as u16);
    for (f, &name) in c.instance_fields.iter().zip(field_names) {
        enc::id(b, ids, name);
        enc::u1(b, f.ty.code());
    }
}

pub fn instance_dump(b: &mut Vec<u8>, ids: IdSize, o: &InstanceDump<'_>) {
    enc::u1(b, sub::INSTANCE_DUMP);
    enc::id(b, ids, o.obj_id);
    enc::u4(b, o.trace_serial);
    enc::id(b, ids, o.class_id);
    match o.values {
        InstanceValues::Fields(groups) => {
            let len_at = b.len();
            enc::u4(b, 0);
            for group in groups {
                for f in group.iter() {
                    enc::value(b, ids, &f.value);
                }
            }
            let n = (b.len() - len_at - 4) as u32;
            b[len_at..len_at + 4].copy_from_slice(&n.to_be_bytes());
        }
        InstanceValues::Encoded { bytes, .. } => {
            enc::u4(b, bytes.len() as u32);
            b.extend_from_slice(bytes);
        }
    }
}

pub fn obj_array_dump(b: &mut Vec<u8>, ids: IdSize, a: &ObjArrayDump<'_>, full_length: bool) {
    let n = if full_length {
        a.elements.len()
    } else {
        a.elements
            .iter()
            .rposition(|&e| e != 0)
            .map_or(0, |i| i + 1)
    };
    enc::u1(b, sub::OBJECT_ARRAY_DUMP);
    enc::id(b, ids, a.obj_id);
    enc::u4(b, a.trace_serial);
    enc::u4(b, n as u32);
    enc::id(b, ids, a.array_class_id);
    for &e in &a.elements[..n] {
        enc::id(b, ids, e);
    }
}

pub fn prim_array_dump(b: &mut Vec<u8>, ids: IdSize, a: &PrimArrayDump<'_>) {
    enc::u1(b, sub::PRIMITIVE_ARRAY_DUMP);
    enc::id(b, ids, a.obj_id);
    enc::u4(b, a.trace_serial);
    let written = match a.elements {
        PrimElements::Counted(..) => 0,
        _ => a.elements.len(),
    };
    enc::u4(b, written as u32);
    enc::u1(b, a.elements.elem_type().code());
    match a.elements {
        PrimElements::Omitted(_) | PrimElements::Counted(..) => {}
        PrimElements::Boolean(v) => b.extend_from_slice(v),
        PrimElements::Byte(v) => b.extend(v.iter().map(|&x| x as u8)),
        PrimElements::Char(v) => v.iter().for_each(|&x| enc::u2(b, x)),
        PrimElements::Short(v) => v.iter().for_each(|&x| enc::u2(b, x as u16)),
        PrimElements::Int(v) => v.iter().for_each(|&x| enc::u4(b, x as u32)),
        PrimElements::Float(v) => v.iter().for_each(|&x| enc::u4(b, x.to_bits())),
        PrimElements::Long(v) => v.iter().for_each(|&x| enc::u8_(b, x as u64)),
        PrimElements::Double(v) => v.iter().for_each(|&x| enc::u8_(b, x.to_bits())),
        PrimElements::BigEndian(t, bytes) => {
            let whole = bytes.len() / (t.size(4) as usize).max(1) * t.size(4) as usize;
            b.extend_from_slice(&bytes[..whole]);
        }
        PrimElements::NativeEndian(t, bytes) => extend_swapped(b, bytes, t.size(4) as usize),
    }
}

/// Append native-order elements of `size` bytes each as big-endian
/// (a trailing partial element is dropped).
fn extend_swapped(b: &mut Vec<u8>, bytes: &[u8], size: usize) {
    let size = size.max(1);
    let whole = &bytes[..bytes.len() / size * size];
    if size == 1 || cfg!(target_endian = "big") {
        b.extend_from_slice(whole);
        return;
    }
    let start = b.len();
    b.resize(start + whole.len(), 0);
    let dst = &mut b[start..];
    match size {
        2 => swap_into::<2, _>(dst, whole, u16::from_ne_bytes, u16::to_be_bytes),
        4 => swap_into::<4, _>(dst, whole, u32::from_ne_bytes, u32::to_be_bytes),
        _ => swap_into::<8, _>(dst, whole, u64::from_ne_bytes, u64::to_be_bytes),
    }
}

fn swap_into<const N: usize, T>(
    dst: &mut [u8],
    src: &[u8],
    from: fn([u8; N]) -> T,
    to: fn(T) -> [u8; N],
) {
    for (d, s) in dst.chunks_exact_mut(N).zip(src.chunks_exact(N)) {
        d.copy_from_slice(&to(from(s.try_into().unwrap_or([0; N]))));
    }
}
