//! Heap dump sub-records and their framing into HEAP DUMP (1.0.1) or
//! HEAP DUMP SEGMENT + HEAP DUMP END (1.0.2) records.

use super::enc::{self, sub, tag, IdSize};
use super::HprofVersion;
use crate::format::model::{
    ClassDump, InstanceDump, InstanceValues, ObjArrayDump, PrimArrayDump, PrimElements, Root,
};

/// Buffers the sub-records of the current segment (1.0.2) or of the whole
/// dump (1.0.1) until their record length is known.
#[derive(Debug)]
pub struct HeapWriter {
    buf: Vec<u8>,
    begin_time: u32,
    segments: u32,
}

impl HeapWriter {
    pub fn new(begin_time: u32) -> Self {
        HeapWriter {
            buf: Vec::new(),
            begin_time,
            segments: 0,
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
    pub fn finish(mut self, out: &mut Vec<u8>, version: HprofVersion, time: u32) {
        match version {
            HprofVersion::V1_0_1 => {
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

/// CLASS DUMP. `names` holds the string IDs of the statics followed by
/// those of the instance fields, already announced in UTF8 records.
pub fn class_dump(b: &mut Vec<u8>, ids: IdSize, c: &ClassDump<'_>, names: &[u64]) {
    let (static_names, field_names) = names.split_at(c.statics.len());
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
    enc::u2(b, c.constant_pool.len() as u16);
    for e in c.constant_pool.iter().rev() {
        enc::u2(b, e.index);
        enc::u1(b, 2);
        enc::id(b, ids, e.obj_id);
    }
    enc::u2(b, c.statics.len() as u16);
    for (s, &name) in c.statics.iter().zip(static_names) {
        enc::id(b, ids, name);
        enc::u1(b, s.value.basic_type().code());
        enc::value(b, ids, &s.value);
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
    enc::u1(b, sub::OBJ_ARRAY_DUMP);
    enc::id(b, ids, a.obj_id);
    enc::u4(b, a.trace_serial);
    enc::u4(b, n as u32);
    enc::id(b, ids, a.array_class_id);
    for &e in &a.elements[..n] {
        enc::id(b, ids, e);
    }
}

pub fn prim_array_dump(b: &mut Vec<u8>, ids: IdSize, a: &PrimArrayDump<'_>) {
    enc::u1(b, sub::PRIM_ARRAY_DUMP);
    enc::id(b, ids, a.obj_id);
    enc::u4(b, a.trace_serial);
    enc::u4(b, a.elements.len() as u32);
    enc::u1(b, a.elements.elem_type().code());
    match a.elements {
        PrimElements::Omitted(_) => {}
        PrimElements::Boolean(v) => b.extend_from_slice(v),
        PrimElements::Byte(v) => b.extend(v.iter().map(|&x| x as u8)),
        PrimElements::Char(v) => v.iter().for_each(|&x| enc::u2(b, x)),
        PrimElements::Short(v) => v.iter().for_each(|&x| enc::u2(b, x as u16)),
        PrimElements::Int(v) => v.iter().for_each(|&x| enc::u4(b, x as u32)),
        PrimElements::Float(v) => v.iter().for_each(|&x| enc::u4(b, x.to_bits())),
        PrimElements::Long(v) => v.iter().for_each(|&x| enc::u8_(b, x as u64)),
        PrimElements::Double(v) => v.iter().for_each(|&x| enc::u8_(b, x.to_bits())),
        PrimElements::BigEndian(t, bytes) => {
            let whole = bytes.len() / t.size(4).max(1) * t.size(4);
            b.extend_from_slice(&bytes[..whole]);
        }
        PrimElements::NativeEndian(t, bytes) => extend_swapped(b, bytes, t.size(4)),
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

fn swap_into<const N: usize, T>(dst: &mut [u8], src: &[u8], from: fn([u8; N]) -> T, to: fn(T) -> [u8; N]) {
    for (d, s) in dst.chunks_exact_mut(N).zip(src.chunks_exact(N)) {
        d.copy_from_slice(&to(from(s.try_into().unwrap_or([0; N]))));
    }
}
