//! Unit tests of the reader on small streams built by hand.

mod errors;
mod heap;
mod records;

use super::records::tag;

pub(super) const TS: u64 = 0x0000_0118_9C2A_5E10;

/// Big-endian byte emitter with a fixed identifier size.
#[derive(Clone)]
pub(super) struct Out {
    pub id_size: u32,
    pub bytes: Vec<u8>,
}

impl Out {
    pub fn new(id_size: u32) -> Self {
        Out {
            id_size,
            bytes: Vec::new(),
        }
    }
    pub fn u1(&mut self, v: u8) -> &mut Self {
        self.bytes.push(v);
        self
    }
    pub fn u2(&mut self, v: u16) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u4(&mut self, v: u32) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u8(&mut self, v: u64) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn id(&mut self, v: u64) -> &mut Self {
        let b = v.to_be_bytes();
        self.bytes
            .extend_from_slice(&b[8 - self.id_size as usize..]);
        self
    }
    pub fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(b);
        self
    }
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    // Heap dump sub-records.

    pub fn instance(&mut self, obj: u64, trace: u32, class: u64, values: &[u8]) -> &mut Self {
        self.u1(0x21)
            .id(obj)
            .u4(trace)
            .id(class)
            .u4(values.len() as u32)
            .raw(values)
    }

    pub fn obj_array(&mut self, arr: u64, trace: u32, class: u64, elems: &[u64]) -> &mut Self {
        self.u1(0x22)
            .id(arr)
            .u4(trace)
            .u4(elems.len() as u32)
            .id(class);
        for &e in elems {
            self.id(e);
        }
        self
    }

    pub fn prim_array(&mut self, arr: u64, trace: u32, ty: u8, n: u32, data: &[u8]) -> &mut Self {
        self.u1(0x23).id(arr).u4(trace).u4(n).u1(ty).raw(data)
    }

    /// A CLASS DUMP without constant pool; `statics` are (name, type, raw
    /// value), `fields` (name, type).
    pub fn class_dump(
        &mut self,
        class: u64,
        sup: u64,
        instance_size: u32,
        statics: &[(u64, u8, &[u8])],
        fields: &[(u64, u8)],
    ) -> &mut Self {
        self.u1(0x20)
            .id(class)
            .u4(7)
            .id(sup)
            .id(0)
            .id(0)
            .id(0)
            .id(0)
            .id(0)
            .u4(instance_size);
        self.u2(0);
        self.u2(statics.len() as u16);
        for (name, ty, v) in statics {
            self.id(*name).u1(*ty).raw(v);
        }
        self.u2(fields.len() as u16);
        for (name, ty) in fields {
            self.id(*name).u1(*ty);
        }
        self
    }
}

/// Builds a whole stream: header, then records.
pub(super) struct FileBuilder {
    pub out: Out,
}

impl FileBuilder {
    pub fn new(version: &str, id_size: u32) -> Self {
        let mut out = Out::new(id_size);
        out.raw(format!("JAVA PROFILE {version}").as_bytes())
            .u1(0)
            .u4(id_size)
            .u8(TS);
        FileBuilder { out }
    }

    /// Current length = offset of the next record.
    pub fn pos(&self) -> u64 {
        self.out.len() as u64
    }

    /// Appends a record whose body `f` writes.
    pub fn record(&mut self, t: u8, time: u32, f: impl FnOnce(&mut Out)) -> &mut Self {
        let mut body = Out::new(self.out.id_size);
        f(&mut body);
        self.raw_record(t, time, body.bytes.len() as u32, &body.bytes)
    }

    /// Appends a record with an explicit (possibly wrong) length.
    pub fn raw_record(&mut self, t: u8, time: u32, length: u32, body: &[u8]) -> &mut Self {
        self.out.u1(t).u4(time).u4(length).raw(body);
        self
    }

    pub fn utf8(&mut self, id: u64, text: &str) -> &mut Self {
        self.record(tag::UTF8, 0, |o| {
            o.id(id).raw(text.as_bytes());
        })
    }

    pub fn load_class(&mut self, serial: u32, class: u64, name_id: u64) -> &mut Self {
        self.record(tag::LOAD_CLASS, 0, |o| {
            o.u4(serial).id(class).u4(0).id(name_id);
        })
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.out.bytes.clone()
    }
}

pub(super) fn reader(bytes: &[u8]) -> super::HprofReader<&[u8]> {
    super::HprofReader::new(bytes).expect("header")
}

pub(super) fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A unique scratch file path for tests that need a real file.
pub(super) fn temp_path(name: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    std::env::temp_dir().join(format!(
        "hprof-rs-reader-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        name
    ))
}
