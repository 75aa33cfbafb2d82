//! Attributes. `Code` (in methods) and its StackMapTable, LineNumberTable,
//! LocalVariableTable and LocalVariableTypeTable sub-attributes are parsed;
//! everything else is kept as raw bytes. A known attribute that does not
//! decode exactly to its declared length is also kept raw, so writing never
//! changes bytes the parser did not fully understand.

use super::constant_pool::ConstantPool;
use super::reader::Reader;
use super::writer::Writer;
use crate::errors::Result;
use crate::stackmap::{self, StackMapFrame};

/// Where an attribute list sits; decides which names are parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrContext {
    Class,
    Field,
    Method,
    Code,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// Constant-pool index of the attribute's name (kept as in the input).
    pub name_index: u16,
    pub info: AttributeInfo,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeInfo {
    Code(Code),
    StackMapTable(Vec<StackMapFrame>),
    LineNumberTable(Vec<LineNumber>),
    LocalVariableTable(Vec<LocalVariable>),
    /// Same layout as LocalVariableTable; `descriptor_index` holds the signature.
    LocalVariableTypeTable(Vec<LocalVariable>),
    Raw(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Code {
    pub max_stack: u16,
    pub max_locals: u16,
    pub code: Vec<u8>,
    pub exception_table: Vec<ExceptionEntry>,
    pub attributes: Vec<Attribute>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExceptionEntry {
    pub start_pc: u16,
    pub end_pc: u16,
    pub handler_pc: u16,
    pub catch_type: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineNumber {
    pub start_pc: u16,
    pub line_number: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalVariable {
    pub start_pc: u16,
    pub length: u16,
    pub name_index: u16,
    pub descriptor_index: u16,
    pub index: u16,
}

pub fn parse_attributes(
    r: &mut Reader,
    cp: &ConstantPool,
    ctx: AttrContext,
) -> Result<Vec<Attribute>> {
    let n = r.u16("attributes_count")?;
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let name_index = r.u16("attribute_name_index")?;
        let len = r.u32("attribute_length")? as usize;
        let body = r.bytes(len, "attribute body")?;
        let name = cp.utf8(name_index).unwrap_or(b"");
        let info =
            parse_known(name, body, cp, ctx).unwrap_or_else(|| AttributeInfo::Raw(body.to_vec()));
        out.push(Attribute { name_index, info });
    }
    Ok(out)
}

/// Decodes a known attribute; `None` (keep raw) if unknown here or if the
/// body does not decode to exactly its length.
fn parse_known(
    name: &[u8],
    body: &[u8],
    cp: &ConstantPool,
    ctx: AttrContext,
) -> Option<AttributeInfo> {
    let mut r = Reader::new(body);
    let info = match (ctx, name) {
        (AttrContext::Method, b"Code") => AttributeInfo::Code(parse_code(&mut r, cp).ok()?),
        (AttrContext::Code, b"StackMapTable") => {
            AttributeInfo::StackMapTable(stackmap::parse_frames(&mut r).ok()?)
        }
        (AttrContext::Code, b"LineNumberTable") => {
            let n = r.u16("").ok()?;
            let mut v = Vec::with_capacity(n as usize);
            for _ in 0..n {
                v.push(LineNumber {
                    start_pc: r.u16("").ok()?,
                    line_number: r.u16("").ok()?,
                });
            }
            AttributeInfo::LineNumberTable(v)
        }
        (AttrContext::Code, b"LocalVariableTable") => {
            AttributeInfo::LocalVariableTable(parse_locals(&mut r).ok()?)
        }
        (AttrContext::Code, b"LocalVariableTypeTable") => {
            AttributeInfo::LocalVariableTypeTable(parse_locals(&mut r).ok()?)
        }
        _ => return None,
    };
    if r.remaining() != 0 {
        return None;
    }
    Some(info)
}

fn parse_code(r: &mut Reader, cp: &ConstantPool) -> Result<Code> {
    let max_stack = r.u16("max_stack")?;
    let max_locals = r.u16("max_locals")?;
    let len = r.u32("code_length")? as usize;
    let code = r.bytes(len, "code")?.to_vec();
    let n = r.u16("exception_table_length")?;
    let mut exception_table = Vec::with_capacity(n as usize);
    for _ in 0..n {
        exception_table.push(ExceptionEntry {
            start_pc: r.u16("start_pc")?,
            end_pc: r.u16("end_pc")?,
            handler_pc: r.u16("handler_pc")?,
            catch_type: r.u16("catch_type")?,
        });
    }
    let attributes = parse_attributes(r, cp, AttrContext::Code)?;
    Ok(Code {
        max_stack,
        max_locals,
        code,
        exception_table,
        attributes,
    })
}

fn parse_locals(r: &mut Reader) -> Result<Vec<LocalVariable>> {
    let n = r.u16("local variable count")?;
    let mut v = Vec::with_capacity(n as usize);
    for _ in 0..n {
        v.push(LocalVariable {
            start_pc: r.u16("lv start_pc")?,
            length: r.u16("lv length")?,
            name_index: r.u16("lv name")?,
            descriptor_index: r.u16("lv descriptor")?,
            index: r.u16("lv index")?,
        });
    }
    Ok(v)
}

pub fn write_attributes(w: &mut Writer, attrs: &[Attribute]) {
    w.u16(attrs.len() as u16);
    for a in attrs {
        w.u16(a.name_index);
        let at = w.len_placeholder();
        match &a.info {
            AttributeInfo::Raw(b) => w.bytes(b),
            AttributeInfo::Code(c) => write_code(w, c),
            AttributeInfo::StackMapTable(f) => stackmap::write_frames(w, f),
            AttributeInfo::LineNumberTable(v) => {
                w.u16(v.len() as u16);
                for l in v {
                    w.u16(l.start_pc);
                    w.u16(l.line_number);
                }
            }
            AttributeInfo::LocalVariableTable(v) | AttributeInfo::LocalVariableTypeTable(v) => {
                w.u16(v.len() as u16);
                for l in v {
                    w.u16(l.start_pc);
                    w.u16(l.length);
                    w.u16(l.name_index);
                    w.u16(l.descriptor_index);
                    w.u16(l.index);
                }
            }
        }
        w.patch_len(at);
    }
}

fn write_code(w: &mut Writer, c: &Code) {
    w.u16(c.max_stack);
    w.u16(c.max_locals);
    w.u32(c.code.len() as u32);
    w.bytes(&c.code);
    w.u16(c.exception_table.len() as u16);
    for e in &c.exception_table {
        w.u16(e.start_pc);
        w.u16(e.end_pc);
        w.u16(e.handler_pc);
        w.u16(e.catch_type);
    }
    write_attributes(w, &c.attributes);
}
