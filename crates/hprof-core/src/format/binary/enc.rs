//! Big-endian encoding primitives, tags and record framing.

use crate::format::model::Value;

/// Width of identifiers in the stream. With 8 bytes every identifier of
/// the agent's own is written with `vocab::id_space::OURS` set, so that a
/// heap dump by the VM's dumper in the same stream can keep its addresses
/// (docs/output-formats.md, "Identifiers").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IdSize {
    /// 4-byte IDs, as the original agent always wrote. IDs are truncated to
    /// their low 32 bits.
    #[default]
    Four,
    /// 8-byte IDs (what HotSpot's own dumper writes on 64-bit VMs).
    Eight,
}

impl IdSize {
    pub fn bytes(self) -> u8 {
        match self {
            IdSize::Four => 4,
            IdSize::Eight => 8,
        }
    }
}

pub use crate::vocab::tag;

pub use crate::vocab::sub_tag as sub;

#[inline]
pub fn u1(b: &mut Vec<u8>, v: u8) {
    b.push(v);
}

#[inline]
pub fn u2(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_be_bytes());
}

#[inline]
pub fn u4(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_be_bytes());
}

#[inline]
pub fn u8_(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_be_bytes());
}

#[inline]
pub fn id(b: &mut Vec<u8>, size: IdSize, v: u64) {
    match size {
        IdSize::Four => u4(b, v as u32),
        IdSize::Eight => u8_(b, crate::vocab::id_space::ours(v)),
    }
}

/// A typed value at its natural big-endian size (references at ID size).
pub fn value(b: &mut Vec<u8>, size: IdSize, v: &Value) {
    match *v {
        Value::Object(o) => id(b, size, o),
        Value::Boolean(z) => u1(b, z as u8),
        Value::Char(c) => u2(b, c),
        Value::Float(f) => u4(b, f.to_bits()),
        Value::Double(d) => u8_(b, d.to_bits()),
        Value::Byte(x) => u1(b, x as u8),
        Value::Short(s) => u2(b, s as u16),
        Value::Int(i) => u4(b, i as u32),
        Value::Long(l) => u8_(b, l as u64),
    }
}

/// Record header: tag, time, body length.
pub fn record_header(out: &mut Vec<u8>, tag: u8, time: u32, len: u32) {
    u1(out, tag);
    u4(out, time);
    u4(out, len);
}

/// Append one record whose body is produced by `body`; the length field is
/// filled in afterwards.
pub fn record(out: &mut Vec<u8>, tag: u8, time: u32, body: impl FnOnce(&mut Vec<u8>)) {
    record_header(out, tag, time, 0);
    let start = out.len();
    body(out);
    let len = (out.len() - start) as u32;
    out[start - 4..start].copy_from_slice(&len.to_be_bytes());
}
