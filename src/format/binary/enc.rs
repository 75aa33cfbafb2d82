//! Big-endian encoding primitives, tags and record framing.

use crate::format::model::Value;

/// Width of identifiers in the stream.
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

/// Record tags.
pub mod tag {
    pub const UTF8: u8 = 0x01;
    pub const LOAD_CLASS: u8 = 0x02;
    pub const UNLOAD_CLASS: u8 = 0x03;
    pub const FRAME: u8 = 0x04;
    pub const TRACE: u8 = 0x05;
    pub const ALLOC_SITES: u8 = 0x06;
    pub const HEAP_SUMMARY: u8 = 0x07;
    pub const START_THREAD: u8 = 0x0A;
    pub const END_THREAD: u8 = 0x0B;
    pub const HEAP_DUMP: u8 = 0x0C;
    pub const CPU_SAMPLES: u8 = 0x0D;
    pub const CONTROL_SETTINGS: u8 = 0x0E;
    pub const HEAP_DUMP_SEGMENT: u8 = 0x1C;
    pub const HEAP_DUMP_END: u8 = 0x2C;
}

/// Heap dump sub-record tags.
pub mod sub {
    pub const ROOT_UNKNOWN: u8 = 0xFF;
    pub const ROOT_JNI_GLOBAL: u8 = 0x01;
    pub const ROOT_JNI_LOCAL: u8 = 0x02;
    pub const ROOT_JAVA_FRAME: u8 = 0x03;
    pub const ROOT_NATIVE_STACK: u8 = 0x04;
    pub const ROOT_STICKY_CLASS: u8 = 0x05;
    pub const ROOT_THREAD_BLOCK: u8 = 0x06;
    pub const ROOT_MONITOR_USED: u8 = 0x07;
    pub const ROOT_THREAD_OBJECT: u8 = 0x08;
    pub const CLASS_DUMP: u8 = 0x20;
    pub const INSTANCE_DUMP: u8 = 0x21;
    pub const OBJ_ARRAY_DUMP: u8 = 0x22;
    pub const PRIM_ARRAY_DUMP: u8 = 0x23;
}

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
        IdSize::Eight => u8_(b, v),
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
