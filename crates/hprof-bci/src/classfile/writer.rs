//! Big-endian byte sink and the top-level class-file writer.

use super::attributes::write_attributes;
use super::{ClassFile, Member};

/// Growable big-endian output buffer.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn new() -> Self {
        Writer { buf: Vec::new() }
    }
    pub fn with_capacity(n: usize) -> Self {
        Writer {
            buf: Vec::with_capacity(n),
        }
    }
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }
    pub fn i16(&mut self, v: i16) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }
    pub fn i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    /// Writes a u4 length placeholder; returns its position for [`Writer::patch_len`].
    pub fn len_placeholder(&mut self) -> usize {
        let at = self.buf.len();
        self.u32(0);
        at
    }
    /// Back-patches the u4 at `at` with the number of bytes written after it.
    pub fn patch_len(&mut self, at: usize) {
        let n = (self.buf.len() - at - 4) as u32;
        self.buf[at..at + 4].copy_from_slice(&n.to_be_bytes());
    }
}

/// Serialises a class file.
pub fn write_class(cf: &ClassFile) -> Vec<u8> {
    let mut w = Writer::with_capacity(4096);
    w.u32(0xCAFE_BABE);
    w.u16(cf.minor_version);
    w.u16(cf.major_version);
    cf.constant_pool.write(&mut w);
    w.u16(cf.access_flags);
    w.u16(cf.this_class);
    w.u16(cf.super_class);
    w.u16(cf.interfaces.len() as u16);
    for i in &cf.interfaces {
        w.u16(*i);
    }
    write_members(&mut w, &cf.fields);
    write_members(&mut w, &cf.methods);
    write_attributes(&mut w, &cf.attributes);
    w.buf
}

fn write_members(w: &mut Writer, members: &[Member]) {
    w.u16(members.len() as u16);
    for m in members {
        w.u16(m.access_flags);
        w.u16(m.name_index);
        w.u16(m.descriptor_index);
        write_attributes(w, &m.attributes);
    }
}
