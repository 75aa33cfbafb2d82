//! A fast streaming scan of heap dump sub-records, for readers that visit
//! every object of a large dump once (the heap analyser's index builder).
//!
//! [`HprofReader::next_heap_sub_record`] returns owned sub-records: one
//! allocation per instance for its field values, which is most of the cost
//! of reading a 10 M-object dump. [`HprofReader::scan_heap_record`] hands a
//! [`HeapVisitor`] the same sub-records as borrowed views instead: instance
//! values and object-array elements are passed where they lie in the
//! reader's buffer (copied only when they straddle its end), primitive-array
//! data is skipped (sought over in plain files). Roots and class dumps, a
//! few per class, go through the ordinary decoder. Bounds and errors are the
//! reader's own (`heap.rs`): the same checks, the same messages and offsets.
//!
//! [`decode_object_head`] decodes the head of one instance or array dump
//! from bytes read at a known offset (random access to one object).

use std::io::Read;

use super::error::ReadError;
use super::heap::{read_sub_record, BasicType, ClassDump, HeapSubRecord, ReadOptions, Root, Sub};
use super::source::id_from_be;
use super::stream::HprofReader;
use crate::vocab::sub_tag;

/// An INSTANCE DUMP, its field values borrowed.
#[derive(Debug, Clone, Copy)]
pub struct InstanceView<'a> {
    /// Offset of the sub-record's tag byte.
    pub offset: u64,
    pub object_id: u64,
    pub trace_serial: u32,
    pub class_id: u64,
    /// Raw field values (the class's fields, then its superclass's, ...).
    pub values: &'a [u8],
}

/// What an array dump holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayKind {
    /// OBJECT ARRAY DUMP of the array class `class_id`.
    Objects { class_id: u64 },
    /// PRIMITIVE ARRAY DUMP.
    Primitives(BasicType),
}

/// The head of an OBJECT ARRAY or PRIMITIVE ARRAY DUMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayHead {
    pub offset: u64,
    pub array_id: u64,
    pub trace_serial: u32,
    pub length: u32,
    pub kind: ArrayKind,
}

/// Receives the sub-records of one heap dump record, in file order.
pub trait HeapVisitor {
    /// Read errors convert into the visitor's own.
    type Error: From<ReadError>;

    fn root(&mut self, root: Root) -> Result<(), Self::Error>;
    fn class_dump(&mut self, class: ClassDump) -> Result<(), Self::Error>;
    fn instance(&mut self, instance: InstanceView<'_>) -> Result<(), Self::Error>;
    /// An object array's elements (raw big-endian IDs), in chunks: called
    /// once per chunk, at least once (with no element for an empty array);
    /// `first` is the index of the chunk's first element.
    fn object_array(
        &mut self,
        head: &ArrayHead,
        elements: &[u8],
        first: u32,
    ) -> Result<(), Self::Error>;
    /// A primitive array (its data is skipped).
    fn primitive_array(&mut self, head: &ArrayHead) -> Result<(), Self::Error>;
}

/// Object-array elements are handed over in chunks of at most this many
/// bytes, so a huge array needs no buffer of its size.
const ELEMENT_CHUNK: usize = 32 * 1024;

/// Payloads longer than this are read into a fresh vector that grows with
/// the data actually present (a corrupt length cannot allocate its claim).
const SCRATCH_MAX: usize = 1 << 20;

impl<R: Read> HprofReader<R> {
    /// Visits every sub-record of the open heap dump record (after a
    /// `HeapDumpStart`), then closes it; a no-op when none is open. After
    /// an error the reader should not be used further.
    pub fn scan_heap_record<V: HeapVisitor>(&mut self, v: &mut V) -> Result<(), V::Error> {
        let Some(seg) = self.segment else {
            return Ok(());
        };
        let id_size = self.header.id_size;
        let mut scratch = Vec::new();
        while self.src.pos() < seg.end {
            let fast = match self.src.fill() {
                Ok(n) if n > 0 => Some(self.src.buffer()[0]).filter(|&t| {
                    matches!(
                        t,
                        sub_tag::INSTANCE_DUMP
                            | sub_tag::OBJECT_ARRAY_DUMP
                            | sub_tag::PRIMITIVE_ARRAY_DUMP
                    )
                }),
                _ => None,
            };
            if fast.is_none() {
                // Roots, class dumps, and every error path: the decoder.
                match read_sub_record(&mut self.src, seg, id_size, ReadOptions::full())? {
                    HeapSubRecord::Root(r) => v.root(r)?,
                    HeapSubRecord::ClassDump(c) => v.class_dump(*c)?,
                    other => unreachable!("{} took the fast path's tag", other.name()),
                }
                continue;
            }
            let offset = self.src.pos();
            let mut s = Sub {
                src: &mut self.src,
                seg,
                id_size,
                sub_tag: 0,
                offset,
            };
            s.sub_tag = s.u1()?;
            let ids = id_size as usize;
            match s.sub_tag {
                sub_tag::INSTANCE_DUMP => {
                    let mut h = s.head(2 * ids + 8)?;
                    let object_id = h.id();
                    let trace_serial = h.u4();
                    let class_id = h.id();
                    let n = h.u4() as usize;
                    s.need(n as u64)?;
                    with_bytes(&mut s, &mut scratch, n, |values| {
                        v.instance(InstanceView {
                            offset,
                            object_id,
                            trace_serial,
                            class_id,
                            values,
                        })
                    })??;
                }
                sub_tag::OBJECT_ARRAY_DUMP => {
                    let mut h = s.head(2 * ids + 8)?;
                    let array_id = h.id();
                    let trace_serial = h.u4();
                    let length = h.u4();
                    let class_id = h.id();
                    let head = ArrayHead {
                        offset,
                        array_id,
                        trace_serial,
                        length,
                        kind: ArrayKind::Objects { class_id },
                    };
                    s.need(u64::from(length) * u64::from(id_size))?;
                    let per_chunk = ELEMENT_CHUNK / ids;
                    let mut first = 0u32;
                    loop {
                        let count = (length - first).min(per_chunk as u32);
                        with_bytes(&mut s, &mut scratch, count as usize * ids, |e| {
                            v.object_array(&head, e, first)
                        })??;
                        first += count;
                        if first == length {
                            break;
                        }
                    }
                }
                _ => {
                    let mut h = s.head(ids + 9)?;
                    let array_id = h.id();
                    let trace_serial = h.u4();
                    let length = h.u4();
                    let code = h.u1();
                    let element = match BasicType::from_code(code) {
                        Some(t) if t != BasicType::Object => t,
                        _ => {
                            return Err(s
                                .corrupt(format!("element type {code} in a primitive array"))
                                .into())
                        }
                    };
                    let n = u64::from(length) * u64::from(element.size(id_size));
                    s.need(n)?;
                    s.src.skip(n).map_err(|e| s.io(e))?;
                    v.primitive_array(&ArrayHead {
                        offset,
                        array_id,
                        trace_serial,
                        length,
                        kind: ArrayKind::Primitives(element),
                    })?;
                }
            }
        }
        self.segment = None;
        Ok(())
    }
}

/// Calls `f` with the next `n` bytes (bounds already checked): where they
/// lie in the buffer when it holds them all, else copied.
fn with_bytes<R: Read, T>(
    s: &mut Sub<'_, R>,
    scratch: &mut Vec<u8>,
    n: usize,
    f: impl FnOnce(&[u8]) -> T,
) -> Result<T, ReadError> {
    let filled = s.src.fill();
    let buffered = filled.map_err(|e| s.io(e))?;
    if buffered >= n {
        let t = f(&s.src.buffer()[..n]);
        s.src.consume(n);
        return Ok(t);
    }
    if n > SCRATCH_MAX {
        let big = s.src.read_vec(n as u64).map_err(|e| s.io(e))?;
        return Ok(f(&big));
    }
    scratch.resize(n, 0);
    s.src.read_exact(scratch).map_err(|e| s.io(e))?;
    Ok(f(scratch))
}

/// The head of an instance or array dump, decoded from bytes read at a
/// known offset; `payload` is where its values or elements begin, relative
/// to the tag byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectHead {
    Instance {
        object_id: u64,
        trace_serial: u32,
        class_id: u64,
        values_len: u32,
        payload: usize,
    },
    Array {
        head: ArrayHead,
        payload: usize,
    },
}

/// Longest head [`decode_object_head`] needs: tag, two 8-byte IDs, two u4.
pub const OBJECT_HEAD_MAX: usize = 25;

/// Decodes the head of the INSTANCE, OBJECT ARRAY or PRIMITIVE ARRAY DUMP
/// at the start of `bytes`, which were read at `offset`. Anything else, or
/// too few bytes, is an error naming the offset.
pub fn decode_object_head(
    bytes: &[u8],
    offset: u64,
    id_size: u32,
) -> Result<ObjectHead, ReadError> {
    let ids = id_size as usize;
    let bad = |detail: String| ReadError::corrupt("heap dump object", offset, detail);
    let Some(&tag) = bytes.first() else {
        return Err(ReadError::truncated("heap dump object", offset, offset));
    };
    let need = match tag {
        sub_tag::INSTANCE_DUMP | sub_tag::OBJECT_ARRAY_DUMP => 1 + 2 * ids + 8,
        sub_tag::PRIMITIVE_ARRAY_DUMP => 1 + ids + 9,
        t => return Err(bad(format!("sub-record tag 0x{t:02X} is not an object"))),
    };
    if bytes.len() < need {
        return Err(ReadError::truncated(
            "heap dump object",
            offset,
            offset + bytes.len() as u64,
        ));
    }
    let id = |at: usize| id_from_be(&bytes[at..at + ids]);
    let u4 = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    Ok(match tag {
        sub_tag::INSTANCE_DUMP => ObjectHead::Instance {
            object_id: id(1),
            trace_serial: u4(1 + ids),
            class_id: id(5 + ids),
            values_len: u4(5 + 2 * ids),
            payload: need,
        },
        sub_tag::OBJECT_ARRAY_DUMP => ObjectHead::Array {
            head: ArrayHead {
                offset,
                array_id: id(1),
                trace_serial: u4(1 + ids),
                length: u4(5 + ids),
                kind: ArrayKind::Objects {
                    class_id: id(9 + ids),
                },
            },
            payload: need,
        },
        _ => {
            let code = bytes[9 + ids];
            let element = BasicType::from_code(code)
                .filter(|&t| t != BasicType::Object)
                .ok_or_else(|| bad(format!("element type {code} in a primitive array")))?;
            ObjectHead::Array {
                head: ArrayHead {
                    offset,
                    array_id: id(1),
                    trace_serial: u4(1 + ids),
                    length: u4(5 + ids),
                    kind: ArrayKind::Primitives(element),
                },
                payload: need,
            }
        }
    })
}
