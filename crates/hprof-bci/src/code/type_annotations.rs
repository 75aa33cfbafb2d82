//! Relocation of byte-code offsets inside Code-level
//! `RuntimeVisibleTypeAnnotations` / `RuntimeInvisibleTypeAnnotations`
//! (JVMS 4.7.20): local-variable ranges (targets 0x40/0x41) and instruction
//! offsets (0x43..=0x4B). The attribute is otherwise copied byte for byte.

use super::relocate::Relocation;
use crate::classfile::reader::Reader;
use crate::errors::{BciError, Result};

fn skip_element_value(r: &mut Reader) -> Result<()> {
    match r.u8("element_value tag")? {
        b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' | b's' | b'c' => {
            r.u16("const_value_index")?;
        }
        b'e' => {
            r.u16("type_name_index")?;
            r.u16("const_name_index")?;
        }
        b'@' => skip_annotation(r)?,
        b'[' => {
            for _ in 0..r.u16("num_values")? {
                skip_element_value(r)?;
            }
        }
        t => return Err(BciError::Malformed(format!("element_value tag {t}"))),
    }
    Ok(())
}

fn skip_annotation(r: &mut Reader) -> Result<()> {
    r.u16("type_index")?;
    for _ in 0..r.u16("num_element_value_pairs")? {
        r.u16("element_name_index")?;
        skip_element_value(r)?;
    }
    Ok(())
}

/// Returns the attribute body with every offset moved through `reloc`.
pub fn relocate_type_annotations(body: &[u8], reloc: &Relocation) -> Result<Vec<u8>> {
    let mut out = body.to_vec();
    let mut r = Reader::new(body);
    let patch = |out: &mut Vec<u8>, at: usize, v: u32| {
        out[at..at + 2].copy_from_slice(&(v as u16).to_be_bytes())
    };
    for _ in 0..r.u16("num_annotations")? {
        match r.u8("target_type")? {
            0x40 | 0x41 => {
                for _ in 0..r.u16("table_length")? {
                    let at = r.pos();
                    let start = r.u16("start_pc")? as u32;
                    let len = r.u16("length")? as u32;
                    r.u16("index")?;
                    let new_start = reloc.map(start)?;
                    patch(&mut out, at, new_start);
                    patch(&mut out, at + 2, reloc.map(start + len)? - new_start);
                }
            }
            0x42 => {
                r.u16("exception_table_index")?;
            }
            t @ 0x43..=0x4B => {
                let at = r.pos();
                let offset = r.u16("offset")? as u32;
                patch(&mut out, at, reloc.insn_pos(offset)?);
                if t >= 0x47 {
                    r.u8("type_argument_index")?;
                }
            }
            t => {
                return Err(BciError::Malformed(format!(
                    "type annotation target {t:#x} inside Code"
                )))
            }
        }
        let path_length = r.u8("path_length")? as usize;
        r.bytes(2 * path_length, "type_path")?;
        skip_annotation(&mut r)?;
    }
    if r.remaining() != 0 {
        return Err(BciError::Malformed(
            "trailing bytes in type annotations".into(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::instructions::decode_all;
    use crate::code::relocate::{relocate, Insertion};
    use std::collections::BTreeMap;

    #[test]
    fn moves_local_ranges_and_instruction_offsets() {
        // 0 aconst_null; 1 astore_0; 2 aconst_null; 3 checkcast #1; 6 pop; 7 return
        let code = [0x01, 0x4b, 0x01, 0xc0, 0x00, 0x01, 0x57, 0xb1];
        let insns = decode_all(&code).unwrap();
        let mut ins = BTreeMap::new();
        ins.insert(
            0,
            Insertion {
                skip: vec![0; 4],
                land: vec![],
            },
        );
        let r = relocate(&code, &insns, &ins).unwrap();
        let mut body = vec![0, 2];
        // localvar: one range start 2 len 6 index 0; empty path; @A(v = [1, 'x'])
        body.extend([
            0x40, 0, 1, 0, 2, 0, 6, 0, 0, 0, 0, 9, 0, 1, 0, 10, b'[', 0, 2, b'I', 0, 3, b's', 0, 4,
        ]);
        // type_argument on the checkcast at 3, index 0, path of one step; @B()
        body.extend([0x47, 0, 3, 0, 1, 3, 0, 0, 11, 0, 0]);
        let out = relocate_type_annotations(&body, &r).unwrap();
        assert_eq!(&out[5..9], &[0, 6, 0, 6]);
        let at = 2 + 25 + 1;
        assert_eq!(&out[at..at + 2], &[0, 7]);
        assert_eq!(out.len(), body.len());
        assert!(relocate_type_annotations(&[0, 1, 0x00, 0], &r).is_err());
    }
}
