//! Big-endian byte cursor used by every parser in `bci`, and the top-level
//! class-file parser.

use super::attributes::{parse_attributes, AttrContext};
use super::constant_pool::ConstantPool;
use super::{ClassFile, Member, MAX_MAJOR, MIN_MAJOR};
use crate::errors::{BciError, Result};

/// A forward-only reader over a byte slice; every read is bounds-checked.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(BciError::Truncated {
                what,
                offset: self.pos,
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.bytes(1, what)?[0])
    }

    pub fn u16(&mut self, what: &'static str) -> Result<u16> {
        let b = self.bytes(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self, what: &'static str) -> Result<u32> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self, what: &'static str) -> Result<u64> {
        let hi = self.u32(what)? as u64;
        Ok((hi << 32) | self.u32(what)? as u64)
    }
}

/// Parses a complete class file. Trailing bytes are an error, as in the JVM.
pub fn parse_class(bytes: &[u8]) -> Result<ClassFile> {
    let mut r = Reader::new(bytes);
    let magic = r.u32("magic")?;
    if magic != 0xCAFE_BABE {
        return Err(BciError::BadMagic(magic));
    }
    let minor_version = r.u16("minor_version")?;
    let major_version = r.u16("major_version")?;
    if !(MIN_MAJOR..=MAX_MAJOR).contains(&major_version) {
        return Err(BciError::UnsupportedVersion {
            major: major_version,
            minor: minor_version,
        });
    }
    let constant_pool = ConstantPool::parse(&mut r)?;
    let access_flags = r.u16("access_flags")?;
    let this_class = r.u16("this_class")?;
    let super_class = r.u16("super_class")?;
    let n = r.u16("interfaces_count")?;
    let interfaces = (0..n)
        .map(|_| r.u16("interfaces"))
        .collect::<Result<Vec<_>>>()?;
    let fields = parse_members(&mut r, &constant_pool, AttrContext::Field)?;
    let methods = parse_members(&mut r, &constant_pool, AttrContext::Method)?;
    let attributes = parse_attributes(&mut r, &constant_pool, AttrContext::Class)?;
    if r.remaining() != 0 {
        return Err(BciError::TrailingBytes(r.remaining()));
    }
    Ok(ClassFile {
        minor_version,
        major_version,
        constant_pool,
        access_flags,
        this_class,
        super_class,
        interfaces,
        fields,
        methods,
        attributes,
    })
}

fn parse_members(r: &mut Reader, cp: &ConstantPool, ctx: AttrContext) -> Result<Vec<Member>> {
    let n = r.u16("member count")?;
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let access_flags = r.u16("member access_flags")?;
        let name_index = r.u16("member name_index")?;
        let descriptor_index = r.u16("member descriptor_index")?;
        let attributes = parse_attributes(r, cp, ctx)?;
        out.push(Member {
            access_flags,
            name_index,
            descriptor_index,
            attributes,
        });
    }
    Ok(out)
}
