//! The binary HPROF vocabulary shared by the writer (`format::binary`) and
//! the reader: record tags, heap-dump sub-record tags and basic types.
//! One definition, so the two sides cannot drift apart.

/// Top-level record tags.
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
pub mod sub_tag {
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
    pub const OBJECT_ARRAY_DUMP: u8 = 0x22;
    pub const PRIMITIVE_ARRAY_DUMP: u8 = 0x23;
}

/// Where an 8-byte identifier of a binary stream comes from
/// (docs/output-formats.md, "Identifiers"). A stream can hold the agent's
/// own records and heap dumps by the VM's dumper; so that their
/// identifiers can never name each other's objects, each source has its
/// own space:
///
/// * the agent's own identifiers (objects, classes, threads, strings,
///   frames: all below 2^32) have [`id_space::OURS`] set;
/// * the first VM dump of a stream keeps the VM's identifiers as they are
///   (addresses: below 2^57 on every 64-bit Linux), so its heap records go
///   to the output without being read; the names and frames the agent adds
///   for it live under [`id_space::VM_NAMES`] and [`id_space::VM_FRAMES`];
/// * a later VM dump (number k >= 2) has `k << DUMP_SHIFT` added to every
///   identifier (its addresses must be below 2^47), so it names neither
///   the first dump's objects nor another's.
pub mod id_space {
    /// Set in every identifier of the agent's own in 8-byte-ID output.
    pub const OURS: u64 = 1 << 62;
    /// The first VM dump's class names in Java spelling (`VM_NAMES | n`,
    /// n < 2^59).
    pub const VM_NAMES: u64 = 1 << 61;
    /// The first VM dump's stack frames (`VM_FRAMES | HotSpot's frame ID`).
    pub const VM_FRAMES: u64 = (1 << 61) | (1 << 60);
    /// The one UTF8 record that fills the room left before the VM's heap
    /// records when its file becomes the output (`sink::file_copy`): named
    /// by nothing.
    pub const FILLER: u64 = (1 << 61) | (1 << 59);
    /// A raw identifier of the VM must be below this (else it could be
    /// mistaken for one of the spaces above).
    pub const RAW_LIMIT: u64 = 1 << 60;
    /// A later dump's number sits at this bit.
    pub const DUMP_SHIFT: u32 = 48;
    /// Highest dump number that fits below [`VM_NAMES`].
    pub const MAX_TAGGED_DUMP: u32 = (1 << (61 - DUMP_SHIFT)) - 1;
    /// Addresses of a later (tagged) dump must be below this.
    pub const TAGGED_LIMIT: u64 = 1 << 47;
    /// Class names in Java spelling of a tagged dump: `tag | NAME_BIT | n`.
    pub const TAGGED_NAME_BIT: u64 = 1 << 47;

    /// An identifier of the agent's own as written with 8 bytes (0, null,
    /// stays 0).
    #[inline]
    pub fn ours(id: u64) -> u64 {
        if id == 0 {
            0
        } else {
            id | OURS
        }
    }
}

/// Basic type codes (fields, array elements, constants, site kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BasicType {
    Object = 2,
    Boolean = 4,
    Char = 5,
    Float = 6,
    Double = 7,
    Byte = 8,
    Short = 9,
    Int = 10,
    Long = 11,
}

impl BasicType {
    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(code: u8) -> Option<Self> {
        use BasicType::*;
        Some(match code {
            2 => Object,
            4 => Boolean,
            5 => Char,
            6 => Float,
            7 => Double,
            8 => Byte,
            9 => Short,
            10 => Int,
            11 => Long,
            _ => return None,
        })
    }

    /// From a JVM signature's first character (`L` and `[` are objects).
    pub fn from_sig_char(c: u8) -> Option<Self> {
        use BasicType::*;
        Some(match c {
            b'L' | b'[' => Object,
            b'Z' => Boolean,
            b'C' => Char,
            b'F' => Float,
            b'D' => Double,
            b'B' => Byte,
            b'S' => Short,
            b'I' => Int,
            b'J' => Long,
            _ => return None,
        })
    }

    /// Size of one value in bytes; references take `id_size`.
    pub fn size(self, id_size: u32) -> u32 {
        use BasicType::*;
        match self {
            Object => id_size,
            Boolean | Byte => 1,
            Char | Short => 2,
            Float | Int => 4,
            Double | Long => 8,
        }
    }

    /// Java keyword of a primitive type (`"int"`); `None` for `Object`.
    pub fn keyword(self) -> Option<&'static str> {
        use BasicType::*;
        Some(match self {
            Object => return None,
            Boolean => "boolean",
            Char => "char",
            Float => "float",
            Double => "double",
            Byte => "byte",
            Short => "short",
            Int => "int",
            Long => "long",
        })
    }

    /// The keyword, or `java.lang.Object` for references.
    pub fn java_name(self) -> &'static str {
        self.keyword().unwrap_or("java.lang.Object")
    }
}

/// A typed field, static, constant or array-element value. Floats keep
/// their raw bits (no NaN canonicalisation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// Object ID, 0 = null (or untagged).
    Object(u64),
    Boolean(bool),
    Char(u16),
    Float(f32),
    Double(f64),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
}

impl Value {
    /// Decodes one big-endian value; `bytes` must be exactly
    /// `ty.size(id_size)` long.
    pub fn decode(ty: BasicType, bytes: &[u8]) -> Value {
        let be = bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        match ty {
            BasicType::Object => Value::Object(be),
            BasicType::Boolean => Value::Boolean(be != 0),
            BasicType::Char => Value::Char(be as u16),
            BasicType::Float => Value::Float(f32::from_bits(be as u32)),
            BasicType::Double => Value::Double(f64::from_bits(be)),
            BasicType::Byte => Value::Byte(be as u8 as i8),
            BasicType::Short => Value::Short(be as u16 as i16),
            BasicType::Int => Value::Int(be as u32 as i32),
            BasicType::Long => Value::Long(be as i64),
        }
    }

    pub fn basic_type(&self) -> BasicType {
        match self {
            Value::Object(_) => BasicType::Object,
            Value::Boolean(_) => BasicType::Boolean,
            Value::Char(_) => BasicType::Char,
            Value::Float(_) => BasicType::Float,
            Value::Double(_) => BasicType::Double,
            Value::Byte(_) => BasicType::Byte,
            Value::Short(_) => BasicType::Short,
            Value::Int(_) => BasicType::Int,
            Value::Long(_) => BasicType::Long,
        }
    }

    /// The object ID of a reference value.
    pub fn as_object_id(&self) -> Option<u64> {
        match *self {
            Value::Object(id) => Some(id),
            _ => None,
        }
    }

    /// The referenced object if this is a non-null reference.
    pub fn non_null_ref(&self) -> Option<u64> {
        self.as_object_id().filter(|&id| id != 0)
    }

    /// Integral values (boolean, char, byte, short, int, long) widened.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Boolean(b) => Some(i64::from(b)),
            Value::Char(c) => Some(i64::from(c)),
            Value::Byte(v) => Some(i64::from(v)),
            Value::Short(v) => Some(i64::from(v)),
            Value::Int(v) => Some(i64::from(v)),
            Value::Long(v) => Some(v),
            _ => None,
        }
    }
}

/// Serials the agent gives: traces from 300 000, threads from 200 000 (the
/// original's ranges, so that text reports look the same); a VM's heap dump
/// whose serials stay below both can be adopted without renumbering
/// (`transcode::hotspot`).
pub const TRACE_SERIAL_BASE: u32 = 300_000;
/// The thread serial of a trace whose thread is not known.
pub const UNKNOWN_THREAD_SERIAL: u32 = 200_000;

#[cfg(test)]
mod tests {
    use super::BasicType;

    #[test]
    fn codes_signatures_and_sizes_agree() {
        for code in 0..=255u8 {
            if let Some(t) = BasicType::from_code(code) {
                assert_eq!(t.code(), code);
            }
        }
        assert_eq!(BasicType::from_sig_char(b'J'), Some(BasicType::Long));
        assert_eq!(BasicType::from_sig_char(b'['), Some(BasicType::Object));
        assert_eq!(BasicType::Object.size(8), 8);
        assert_eq!(BasicType::Char.size(4), 2);
        assert_eq!(BasicType::Int.keyword(), Some("int"));
        assert_eq!(BasicType::Object.java_name(), "java.lang.Object");
    }

    #[test]
    fn values_decode_big_endian() {
        use super::Value;
        assert_eq!(
            Value::decode(BasicType::Int, &[0xFF, 0xFF, 0xFF, 0xFE]),
            Value::Int(-2)
        );
        assert_eq!(
            Value::decode(BasicType::Char, &[0x00, 0x41]),
            Value::Char(0x41)
        );
        assert_eq!(
            Value::decode(BasicType::Object, &[0, 0, 0, 7]).non_null_ref(),
            Some(7)
        );
        assert_eq!(Value::Object(0).non_null_ref(), None);
        assert_eq!(Value::Long(-5).as_i64(), Some(-5));
    }
}
