//! The constant pool: every tag of class files 45..69, exact round-trip, and a
//! small de-duplicating builder for the entries the rewriter adds.

use super::reader::Reader;
use super::writer::Writer;
use crate::errors::{BciError, Result};

/// One constant-pool slot. Float and Double keep their raw bits so NaN
/// payloads survive a round trip; Utf8 keeps the modified-UTF-8 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Constant {
    /// Slot 0 and the slot after a Long or Double.
    Unusable,
    Utf8(Vec<u8>),
    Integer(i32),
    Float(u32),
    Long(i64),
    Double(u64),
    Class(u16),
    String(u16),
    Fieldref {
        class_index: u16,
        name_and_type_index: u16,
    },
    Methodref {
        class_index: u16,
        name_and_type_index: u16,
    },
    InterfaceMethodref {
        class_index: u16,
        name_and_type_index: u16,
    },
    NameAndType {
        name_index: u16,
        descriptor_index: u16,
    },
    MethodHandle {
        reference_kind: u8,
        reference_index: u16,
    },
    MethodType(u16),
    Dynamic {
        bootstrap_method_attr_index: u16,
        name_and_type_index: u16,
    },
    InvokeDynamic {
        bootstrap_method_attr_index: u16,
        name_and_type_index: u16,
    },
    Module(u16),
    Package(u16),
}

impl Constant {
    /// Long and Double take two slots.
    pub fn is_wide(&self) -> bool {
        matches!(self, Constant::Long(_) | Constant::Double(_))
    }
}

/// The constant pool, indexed like the class file (entry 0 unusable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstantPool {
    entries: Vec<Constant>,
}

impl Default for ConstantPool {
    fn default() -> Self {
        ConstantPool {
            entries: vec![Constant::Unusable],
        }
    }
}

impl ConstantPool {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn parse(r: &mut Reader) -> Result<Self> {
        let count = r.u16("constant_pool_count")?;
        let mut entries = Vec::with_capacity(count as usize);
        entries.push(Constant::Unusable);
        while entries.len() < count as usize {
            let index = entries.len() as u16;
            let tag = r.u8("constant tag")?;
            let c = match tag {
                1 => {
                    let n = r.u16("utf8 length")? as usize;
                    Constant::Utf8(r.bytes(n, "utf8 bytes")?.to_vec())
                }
                3 => Constant::Integer(r.u32("integer")? as i32),
                4 => Constant::Float(r.u32("float")?),
                5 => Constant::Long(r.u64("long")? as i64),
                6 => Constant::Double(r.u64("double")?),
                7 => Constant::Class(r.u16("class name")?),
                8 => Constant::String(r.u16("string")?),
                9 | 10 | 11 | 12 | 17 | 18 => {
                    let a = r.u16("ref")?;
                    let b = r.u16("ref")?;
                    match tag {
                        9 => Constant::Fieldref {
                            class_index: a,
                            name_and_type_index: b,
                        },
                        10 => Constant::Methodref {
                            class_index: a,
                            name_and_type_index: b,
                        },
                        11 => Constant::InterfaceMethodref {
                            class_index: a,
                            name_and_type_index: b,
                        },
                        12 => Constant::NameAndType {
                            name_index: a,
                            descriptor_index: b,
                        },
                        17 => Constant::Dynamic {
                            bootstrap_method_attr_index: a,
                            name_and_type_index: b,
                        },
                        _ => Constant::InvokeDynamic {
                            bootstrap_method_attr_index: a,
                            name_and_type_index: b,
                        },
                    }
                }
                15 => Constant::MethodHandle {
                    reference_kind: r.u8("method handle kind")?,
                    reference_index: r.u16("method handle ref")?,
                },
                16 => Constant::MethodType(r.u16("method type")?),
                19 => Constant::Module(r.u16("module")?),
                20 => Constant::Package(r.u16("package")?),
                _ => return Err(BciError::UnknownConstantTag { tag, index }),
            };
            let wide = c.is_wide();
            entries.push(c);
            if wide {
                if entries.len() >= count as usize {
                    return Err(BciError::Malformed(format!(
                        "wide constant at last index {index}"
                    )));
                }
                entries.push(Constant::Unusable);
            }
        }
        Ok(ConstantPool { entries })
    }

    pub fn write(&self, w: &mut Writer) {
        w.u16(self.entries.len() as u16);
        for c in &self.entries {
            match c {
                Constant::Unusable => {}
                Constant::Utf8(b) => {
                    w.u8(1);
                    w.u16(b.len() as u16);
                    w.bytes(b);
                }
                Constant::Integer(v) => {
                    w.u8(3);
                    w.i32(*v);
                }
                Constant::Float(v) => {
                    w.u8(4);
                    w.u32(*v);
                }
                Constant::Long(v) => {
                    w.u8(5);
                    w.u64(*v as u64);
                }
                Constant::Double(v) => {
                    w.u8(6);
                    w.u64(*v);
                }
                Constant::Class(i) => two(w, 7, *i),
                Constant::String(i) => two(w, 8, *i),
                Constant::Fieldref {
                    class_index,
                    name_and_type_index,
                } => four(w, 9, *class_index, *name_and_type_index),
                Constant::Methodref {
                    class_index,
                    name_and_type_index,
                } => four(w, 10, *class_index, *name_and_type_index),
                Constant::InterfaceMethodref {
                    class_index,
                    name_and_type_index,
                } => four(w, 11, *class_index, *name_and_type_index),
                Constant::NameAndType {
                    name_index,
                    descriptor_index,
                } => four(w, 12, *name_index, *descriptor_index),
                Constant::MethodHandle {
                    reference_kind,
                    reference_index,
                } => {
                    w.u8(15);
                    w.u8(*reference_kind);
                    w.u16(*reference_index);
                }
                Constant::MethodType(i) => two(w, 16, *i),
                Constant::Dynamic {
                    bootstrap_method_attr_index,
                    name_and_type_index,
                } => four(w, 17, *bootstrap_method_attr_index, *name_and_type_index),
                Constant::InvokeDynamic {
                    bootstrap_method_attr_index,
                    name_and_type_index,
                } => four(w, 18, *bootstrap_method_attr_index, *name_and_type_index),
                Constant::Module(i) => two(w, 19, *i),
                Constant::Package(i) => two(w, 20, *i),
            }
        }
    }

    /// The constant_pool_count value (number of slots including slot 0).
    pub fn count(&self) -> usize {
        self.entries.len()
    }

    pub fn get(&self, index: u16) -> Option<&Constant> {
        self.entries.get(index as usize)
    }

    pub fn entries(&self) -> &[Constant] {
        &self.entries
    }

    /// Modified-UTF-8 bytes of a Utf8 entry.
    pub fn utf8(&self, index: u16) -> Result<&[u8]> {
        match self.get(index) {
            Some(Constant::Utf8(b)) => Ok(b),
            _ => Err(BciError::BadConstantIndex {
                index,
                expected: "Utf8",
            }),
        }
    }

    /// A Utf8 entry decoded to a Rust string.
    pub fn utf8_string(&self, index: u16) -> Result<String> {
        Ok(decode_mutf8(self.utf8(index)?))
    }

    /// Internal name bytes of a Class entry.
    pub fn class_name(&self, index: u16) -> Result<&[u8]> {
        match self.get(index) {
            Some(Constant::Class(n)) => self.utf8(*n),
            _ => Err(BciError::BadConstantIndex {
                index,
                expected: "Class",
            }),
        }
    }

    /// (name, descriptor) of a NameAndType entry.
    pub fn name_and_type(&self, index: u16) -> Result<(&[u8], &[u8])> {
        match self.get(index) {
            Some(Constant::NameAndType {
                name_index,
                descriptor_index,
            }) => Ok((self.utf8(*name_index)?, self.utf8(*descriptor_index)?)),
            _ => Err(BciError::BadConstantIndex {
                index,
                expected: "NameAndType",
            }),
        }
    }

    /// (class name, member name, descriptor) of a Field/Method/InterfaceMethod ref.
    pub fn member_ref(&self, index: u16) -> Result<(&[u8], &[u8], &[u8])> {
        match self.get(index) {
            Some(
                Constant::Fieldref {
                    class_index,
                    name_and_type_index,
                }
                | Constant::Methodref {
                    class_index,
                    name_and_type_index,
                }
                | Constant::InterfaceMethodref {
                    class_index,
                    name_and_type_index,
                },
            ) => {
                let (n, d) = self.name_and_type(*name_and_type_index)?;
                Ok((self.class_name(*class_index)?, n, d))
            }
            _ => Err(BciError::BadConstantIndex {
                index,
                expected: "member ref",
            }),
        }
    }

    /// (name, descriptor) of the NameAndType behind an InvokeDynamic or Dynamic entry.
    pub fn dynamic_name_and_type(&self, index: u16) -> Result<(&[u8], &[u8])> {
        match self.get(index) {
            Some(
                Constant::InvokeDynamic {
                    name_and_type_index,
                    ..
                }
                | Constant::Dynamic {
                    name_and_type_index,
                    ..
                },
            ) => self.name_and_type(*name_and_type_index),
            _ => Err(BciError::BadConstantIndex {
                index,
                expected: "(Invoke)Dynamic",
            }),
        }
    }

    /// Index of an existing entry equal to `c`, if any.
    pub fn find(&self, c: &Constant) -> Option<u16> {
        self.entries.iter().position(|e| e == c).map(|i| i as u16)
    }

    /// Returns the index of `c`, appending it if no equal entry exists.
    pub fn add(&mut self, c: Constant) -> Result<u16> {
        if let Some(i) = self.find(&c) {
            return Ok(i);
        }
        let slots = if c.is_wide() { 2 } else { 1 };
        if self.entries.len() + slots > 0xFFFF {
            return Err(BciError::ConstantPoolOverflow);
        }
        let index = self.entries.len() as u16;
        self.entries.push(c);
        if slots == 2 {
            self.entries.push(Constant::Unusable);
        }
        Ok(index)
    }

    /// Adds (or finds) a Utf8 entry; `s` is already modified UTF-8.
    pub fn add_utf8(&mut self, s: &[u8]) -> Result<u16> {
        self.add(Constant::Utf8(s.to_vec()))
    }

    pub fn add_class(&mut self, internal_name: &[u8]) -> Result<u16> {
        let n = self.add_utf8(internal_name)?;
        self.add(Constant::Class(n))
    }

    /// Finds a Class entry by name without adding anything.
    pub fn find_class(&self, internal_name: &[u8]) -> Option<u16> {
        let n = self.find(&Constant::Utf8(internal_name.to_vec()))?;
        self.find(&Constant::Class(n))
    }

    pub fn add_name_and_type(&mut self, name: &[u8], descriptor: &[u8]) -> Result<u16> {
        let name_index = self.add_utf8(name)?;
        let descriptor_index = self.add_utf8(descriptor)?;
        self.add(Constant::NameAndType {
            name_index,
            descriptor_index,
        })
    }

    pub fn add_methodref(&mut self, class: &[u8], name: &[u8], descriptor: &[u8]) -> Result<u16> {
        let class_index = self.add_class(class)?;
        let name_and_type_index = self.add_name_and_type(name, descriptor)?;
        self.add(Constant::Methodref {
            class_index,
            name_and_type_index,
        })
    }

    pub fn add_integer(&mut self, v: i32) -> Result<u16> {
        self.add(Constant::Integer(v))
    }
}

fn two(w: &mut Writer, tag: u8, a: u16) {
    w.u8(tag);
    w.u16(a);
}

fn four(w: &mut Writer, tag: u8, a: u16, b: u16) {
    w.u8(tag);
    w.u16(a);
    w.u16(b);
}

/// The internal name (`java/lang/String`) of the CONSTANT_Class entry
/// `index` of a constant pool given as a class file holds it (`count`
/// entries' slots, then the entries' bytes, as JVMTI's GetConstantPool
/// returns it), read without building the pool. None when `index` is no
/// Class entry or the bytes are damaged.
pub fn class_name_at(count: u16, entries: &[u8], index: u16) -> Option<&[u8]> {
    // Offsets of every entry up to the ones the answer needs.
    let mut offsets = vec![usize::MAX; usize::from(count)];
    let mut pos = 0;
    let mut slot = 1usize;
    while slot < usize::from(count) {
        offsets[slot] = pos;
        let tag = *entries.get(pos)?;
        let (len, slots) = match tag {
            1 => (3 + u16_at_slice(entries, pos + 1)?, 1),
            3 | 4 => (5, 1),
            5 | 6 => (9, 2),
            7 | 8 | 16 | 19 | 20 => (3, 1),
            9 | 10 | 11 | 12 | 17 | 18 => (5, 1),
            15 => (4, 1),
            _ => return None,
        };
        pos += len;
        slot += slots;
    }
    let at = *offsets.get(usize::from(index))?;
    if entries.get(at) != Some(&7) {
        return None;
    }
    let name = *offsets.get(u16_at_slice(entries, at + 1)?)?;
    if entries.get(name) != Some(&1) {
        return None;
    }
    let len = u16_at_slice(entries, name + 1)?;
    entries.get(name + 3..name + 3 + len)
}

fn u16_at_slice(b: &[u8], p: usize) -> Option<usize> {
    Some(usize::from(u16::from_be_bytes([
        *b.get(p)?,
        *b.get(p + 1)?,
    ])))
}

/// Decodes modified UTF-8 (JVMS 4.4.7): `C0 80` is NUL, supplementary
/// characters are surrogate pairs. Malformed sequences become U+FFFD.
pub fn decode_mutf8(b: &[u8]) -> String {
    let mut units: Vec<u16> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let x = b[i] as u32;
        let (u, n) = if x < 0x80 {
            (x, 1)
        } else if x & 0xE0 == 0xC0 && i + 1 < b.len() {
            (((x & 0x1F) << 6) | (b[i + 1] as u32 & 0x3F), 2)
        } else if x & 0xF0 == 0xE0 && i + 2 < b.len() {
            (
                ((x & 0x0F) << 12) | ((b[i + 1] as u32 & 0x3F) << 6) | (b[i + 2] as u32 & 0x3F),
                3,
            )
        } else {
            (0xFFFD, 1)
        };
        units.push(u as u16);
        i += n;
    }
    String::from_utf16_lossy(&units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tag_round_trips() {
        let mut w = Writer::new();
        // count = 1 + 20 slots (Long and Double take two each)
        w.u16(21);
        w.u8(1);
        w.u16(3);
        w.bytes(b"abc"); // 1
        w.u8(3);
        w.i32(-7); // 2
        w.u8(4);
        w.u32(0x7FC0_0001); // 3 NaN with payload
        w.u8(5);
        w.u64(1 << 40); // 4,5
        w.u8(6);
        w.u64(0x7FF8_0000_0000_0001); // 6,7
        two(&mut w, 7, 1); // 8
        two(&mut w, 8, 1); // 9
        four(&mut w, 12, 1, 1); // 10
        four(&mut w, 9, 8, 10); // 11
        four(&mut w, 10, 8, 10); // 12
        four(&mut w, 11, 8, 10); // 13
        w.u8(15);
        w.u8(6);
        w.u16(12); // 14
        two(&mut w, 16, 1); // 15
        four(&mut w, 17, 0, 10); // 16
        four(&mut w, 18, 0, 10); // 17
        two(&mut w, 19, 1); // 18
        two(&mut w, 20, 1); // 19
        w.u8(1);
        w.u16(2);
        w.bytes(&[0xC0, 0x80]); // 20
        let bytes = w.buf.clone();
        let cp = ConstantPool::parse(&mut Reader::new(&bytes)).unwrap();
        assert_eq!(cp.count(), 21);
        assert_eq!(cp.get(5), Some(&Constant::Unusable));
        assert_eq!(
            cp.get(16),
            Some(&Constant::Dynamic {
                bootstrap_method_attr_index: 0,
                name_and_type_index: 10
            })
        );
        assert_eq!(cp.utf8_string(20).unwrap(), "\0");
        assert_eq!(
            cp.member_ref(13).unwrap(),
            (&b"abc"[..], &b"abc"[..], &b"abc"[..])
        );
        let mut out = Writer::new();
        cp.write(&mut out);
        assert_eq!(out.buf, bytes);
        // The Class entry 8 names "abc" (entry 1), found in the raw bytes
        // past the two-slot Long and Double; other entries are no Class.
        let raw = &bytes[2..];
        assert_eq!(class_name_at(21, raw, 8), Some(&b"abc"[..]));
        for not_a_class in [0, 1, 5, 9, 20, 21, 400] {
            assert_eq!(class_name_at(21, raw, not_a_class), None, "{not_a_class}");
        }
        assert_eq!(
            class_name_at(21, &raw[..raw.len() - 3], 8),
            None,
            "cut short"
        );
    }

    #[test]
    fn unknown_tag_is_an_error() {
        let bytes = [0u8, 2, 13, 0, 0];
        assert_eq!(
            ConstantPool::parse(&mut Reader::new(&bytes)),
            Err(BciError::UnknownConstantTag { tag: 13, index: 1 })
        );
    }

    #[test]
    fn builder_deduplicates() {
        let mut cp = ConstantPool::new();
        let a = cp.add_methodref(b"T", b"CallSite", b"(II)V").unwrap();
        let b = cp.add_methodref(b"T", b"CallSite", b"(II)V").unwrap();
        assert_eq!(a, b);
        let r = cp.add_methodref(b"T", b"ReturnSite", b"(II)V").unwrap();
        assert_ne!(a, r);
        // Utf8 T, Class, name, desc, NaT, Methodref, + name, NaT, Methodref
        assert_eq!(cp.count(), 1 + 9);
        assert_eq!(cp.add_integer(0x1000_0000).unwrap(), 10);
        assert_eq!(cp.add_integer(0x1000_0000).unwrap(), 10);
        assert_eq!(cp.find_class(b"T"), Some(2));
    }

    #[test]
    fn mutf8_supplementary() {
        // U+1F600 as surrogate pair D83D DE00 in modified UTF-8
        let b = [0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80];
        assert_eq!(decode_mutf8(&b), "\u{1F600}");
    }
}
