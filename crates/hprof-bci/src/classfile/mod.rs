//! Class-file model (JVMS chapter 4) for major versions 45..=69.
//!
//! `ClassFile::parse` followed by `ClassFile::to_bytes` reproduces the input
//! byte for byte: nothing is normalised, unknown attributes stay raw, and
//! known ones keep their original constant-pool indices and frame encodings.

pub mod attributes;
pub mod constant_pool;
pub mod reader;
pub mod writer;

use crate::errors::Result;
use attributes::{Attribute, AttributeInfo, Code};
use constant_pool::ConstantPool;

/// JDK 1.1.
pub const MIN_MAJOR: u16 = 45;
/// JDK 25.
pub const MAX_MAJOR: u16 = 69;

pub const ACC_STATIC: u16 = 0x0008;
pub const ACC_NATIVE: u16 = 0x0100;
pub const ACC_INTERFACE: u16 = 0x0200;
pub const ACC_ABSTRACT: u16 = 0x0400;
pub const ACC_MODULE: u16 = 0x8000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassFile {
    pub minor_version: u16,
    pub major_version: u16,
    pub constant_pool: ConstantPool,
    pub access_flags: u16,
    pub this_class: u16,
    pub super_class: u16,
    pub interfaces: Vec<u16>,
    pub fields: Vec<Member>,
    pub methods: Vec<Member>,
    pub attributes: Vec<Attribute>,
}

/// A field or a method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub access_flags: u16,
    pub name_index: u16,
    pub descriptor_index: u16,
    pub attributes: Vec<Attribute>,
}

impl Member {
    /// The parsed `Code` attribute, if any.
    pub fn code(&self) -> Option<&Code> {
        self.attributes.iter().find_map(|a| match &a.info {
            AttributeInfo::Code(c) => Some(c),
            _ => None,
        })
    }

    pub fn code_mut(&mut self) -> Option<&mut Code> {
        self.attributes.iter_mut().find_map(|a| match &mut a.info {
            AttributeInfo::Code(c) => Some(c),
            _ => None,
        })
    }
}

impl ClassFile {
    pub fn parse(bytes: &[u8]) -> Result<ClassFile> {
        reader::parse_class(bytes)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        writer::write_class(self)
    }

    /// Internal name of this class (e.g. `java/lang/String`).
    pub fn name(&self) -> Result<String> {
        Ok(constant_pool::decode_mutf8(
            self.constant_pool.class_name(self.this_class)?,
        ))
    }

    /// An empty class (no members) for building class files from scratch,
    /// e.g. the Tracker class or test inputs.
    pub fn new(
        major_version: u16,
        access_flags: u16,
        name: &str,
        super_name: Option<&str>,
    ) -> Result<ClassFile> {
        let mut constant_pool = ConstantPool::new();
        let this_class = constant_pool.add_class(name.as_bytes())?;
        let super_class = match super_name {
            Some(s) => constant_pool.add_class(s.as_bytes())?,
            None => 0,
        };
        Ok(ClassFile {
            minor_version: 0,
            major_version,
            constant_pool,
            access_flags,
            this_class,
            super_class,
            interfaces: vec![],
            fields: vec![],
            methods: vec![],
            attributes: vec![],
        })
    }

    /// Appends a method, with a Code attribute when `code` is given; returns its index.
    pub fn add_method(
        &mut self,
        access_flags: u16,
        name: &str,
        descriptor: &str,
        code: Option<Code>,
    ) -> Result<usize> {
        let name_index = self.constant_pool.add_utf8(name.as_bytes())?;
        let descriptor_index = self.constant_pool.add_utf8(descriptor.as_bytes())?;
        let mut attributes = vec![];
        if let Some(c) = code {
            attributes.push(Attribute {
                name_index: self.constant_pool.add_utf8(b"Code")?,
                info: AttributeInfo::Code(c),
            });
        }
        self.methods.push(Member {
            access_flags,
            name_index,
            descriptor_index,
            attributes,
        });
        Ok(self.methods.len() - 1)
    }
}
