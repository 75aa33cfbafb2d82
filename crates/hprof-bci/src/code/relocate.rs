//! Lays out a method body with inserted byte sequences and re-targets every
//! branch and switch, widening 16-bit branches that no longer reach.
//!
//! Each original instruction may get an [`Insertion`] placed in front of it:
//! `skip` bytes first (branches to the instruction jump over them: entry code,
//! the NewArray call after an array allocation), then `land` bytes (branches
//! to the instruction land on them: ReturnSite code before a return).
//!
//! Layout is a fixpoint: positions depend on switch padding (which depends on
//! positions) and on which branches were widened; widening is monotonic, so
//! the loop ends after at most one iteration per branch.

use std::collections::BTreeMap;

use super::instructions::{
    invert_condition, is_conditional, op, switch_padding, Insn, InsnIndex, InsnKind, SwitchTable,
};
use crate::errors::{BciError, Result};

/// Bytes inserted before one original instruction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Insertion {
    /// Executed on fall-through only; branch targets skip it.
    pub skip: Vec<u8>,
    /// Branch targets land on it.
    pub land: Vec<u8>,
}

/// The relocated code and the offset maps.
#[derive(Debug)]
pub struct Relocation {
    pub code: Vec<u8>,
    /// Original offsets of conditional branches that became
    /// `if<!cond> +8; goto_w target`.
    pub widened_conditionals: Vec<u32>,
    index: InsnIndex,
    /// Per original instruction (plus one for the end of the code): where
    /// branches to it land.
    target_pos: Vec<u32>,
    /// Per original instruction: where its opcode now is.
    insn_pos: Vec<u32>,
}

impl Relocation {
    /// New position for an original branch target / table offset (an
    /// instruction start or the end of the code).
    pub fn map(&self, orig: u32) -> Result<u32> {
        self.index
            .index_of(orig)
            .map(|k| self.target_pos[k])
            .ok_or_else(|| BciError::BadCode {
                offset: orig,
                msg: "offset is not an instruction boundary".into(),
            })
    }

    /// New position of the original instruction's opcode.
    pub fn insn_pos(&self, orig: u32) -> Result<u32> {
        self.index
            .index_of(orig)
            .map(|k| self.insn_pos[k])
            .ok_or_else(|| BciError::BadCode {
                offset: orig,
                msg: "offset is not an instruction boundary".into(),
            })
    }
}

fn size(insn: &Insn, pos: u64, widened: bool) -> u64 {
    match &insn.kind {
        InsnKind::Switch { table, .. } => {
            let fixed = match table {
                SwitchTable::Table { targets, .. } => 12 + 4 * targets.len() as u64,
                SwitchTable::Lookup { pairs } => 8 + 8 * pairs.len() as u64,
            };
            1 + switch_padding((pos % 4) as u32) as u64 + fixed
        }
        InsnKind::Branch16 { .. } if widened => {
            if is_conditional(insn.opcode) {
                8
            } else {
                5
            }
        }
        _ => insn.len as u64,
    }
}

/// Relocates `insns` (decoded from `code`) with `insertions` keyed by the
/// original offset of the instruction they precede.
pub fn relocate(
    code: &[u8],
    insns: &[Insn],
    insertions: &BTreeMap<u32, Insertion>,
) -> Result<Relocation> {
    let n = insns.len();
    let index = InsnIndex::new(insns, code.len());
    let mut skip = vec![0u64; n + 1];
    let mut land = vec![0u64; n + 1];
    for (&off, ins) in insertions {
        let k = index
            .index_of(off)
            .filter(|&k| k < n)
            .ok_or_else(|| BciError::BadCode {
                offset: off,
                msg: "insertion not at an instruction".into(),
            })?;
        skip[k] = ins.skip.len() as u64;
        land[k] = ins.land.len() as u64;
    }
    let target_index: Vec<Option<usize>> = insns
        .iter()
        .map(|i| match i.kind {
            InsnKind::Branch16 { target } => index.index_of(target),
            _ => None,
        })
        .collect();

    let mut widened = vec![false; n];
    let mut block = vec![0u64; n + 1];
    let mut ipos = vec![0u64; n + 1];
    loop {
        let mut pos = 0u64;
        for (k, insn) in insns.iter().enumerate() {
            block[k] = pos;
            pos += skip[k] + land[k];
            ipos[k] = pos;
            pos += size(insn, pos, widened[k]);
        }
        block[n] = pos;
        ipos[n] = pos;
        let mut changed = false;
        for k in 0..n {
            if let (Some(t), false) = (target_index[k], widened[k]) {
                let d = (block[t] + skip[t]) as i64 - ipos[k] as i64;
                if i16::try_from(d).is_err() {
                    widened[k] = true;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    if block[n] > 0xFFFF {
        return Err(BciError::CodeTooLarge {
            new_length: block[n] as usize,
        });
    }
    let target_pos: Vec<u32> = (0..=n).map(|k| (block[k] + skip[k]) as u32).collect();
    let insn_pos: Vec<u32> = ipos.iter().map(|&p| p as u32).collect();
    let tpos =
        |t: u32| target_pos[index.index_of(t).expect("decoded targets are boundaries")] as i64;

    let mut out = Vec::with_capacity(block[n] as usize);
    let mut widened_conditionals = Vec::new();
    for (k, insn) in insns.iter().enumerate() {
        if let Some(ins) = insertions.get(&insn.offset) {
            out.extend_from_slice(&ins.skip);
            out.extend_from_slice(&ins.land);
        }
        let here = insn_pos[k] as i64;
        debug_assert_eq!(out.len() as i64, here);
        match &insn.kind {
            InsnKind::Plain => {
                out.extend_from_slice(
                    &code[insn.offset as usize..(insn.offset + insn.len) as usize],
                );
            }
            InsnKind::Branch16 { target } if !widened[k] => {
                out.push(insn.opcode);
                out.extend_from_slice(&((tpos(*target) - here) as i16).to_be_bytes());
            }
            InsnKind::Branch16 { target } => {
                if is_conditional(insn.opcode) {
                    out.push(invert_condition(insn.opcode));
                    out.extend_from_slice(&8i16.to_be_bytes());
                    out.push(op::GOTO_W);
                    out.extend_from_slice(&((tpos(*target) - here - 3) as i32).to_be_bytes());
                    widened_conditionals.push(insn.offset);
                } else {
                    out.push(if insn.opcode == op::GOTO {
                        op::GOTO_W
                    } else {
                        op::JSR_W
                    });
                    out.extend_from_slice(&((tpos(*target) - here) as i32).to_be_bytes());
                }
            }
            InsnKind::Branch32 { target } => {
                out.push(insn.opcode);
                out.extend_from_slice(&((tpos(*target) - here) as i32).to_be_bytes());
            }
            InsnKind::Switch { default, table } => {
                out.push(insn.opcode);
                out.resize(out.len() + switch_padding(here as u32) as usize, 0);
                out.extend_from_slice(&((tpos(*default) - here) as i32).to_be_bytes());
                match table {
                    SwitchTable::Table { low, high, targets } => {
                        out.extend_from_slice(&low.to_be_bytes());
                        out.extend_from_slice(&high.to_be_bytes());
                        for t in targets {
                            out.extend_from_slice(&((tpos(*t) - here) as i32).to_be_bytes());
                        }
                    }
                    SwitchTable::Lookup { pairs } => {
                        out.extend_from_slice(&(pairs.len() as i32).to_be_bytes());
                        for (key, t) in pairs {
                            out.extend_from_slice(&key.to_be_bytes());
                            out.extend_from_slice(&((tpos(*t) - here) as i32).to_be_bytes());
                        }
                    }
                }
            }
        }
    }
    debug_assert_eq!(out.len() as u64, block[n]);
    Ok(Relocation {
        code: out,
        widened_conditionals,
        index,
        target_pos,
        insn_pos,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::instructions::decode_all;

    fn reloc(code: &[u8], ins: &[(u32, &[u8], &[u8])]) -> Relocation {
        let insns = decode_all(code).unwrap();
        let map = ins
            .iter()
            .map(|(o, s, l)| {
                (
                    *o,
                    Insertion {
                        skip: s.to_vec(),
                        land: l.to_vec(),
                    },
                )
            })
            .collect();
        relocate(code, &insns, &map).unwrap()
    }

    #[test]
    fn no_insertions_is_identity() {
        let code = [0x03, 0x99, 0x00, 0x04, 0x04, 0xac];
        let r = reloc(&code, &[]);
        assert_eq!(r.code, code);
    }

    #[test]
    fn entry_code_is_skipped_by_backward_branch_to_zero() {
        // 0: nop; 1: goto -1 (loop to 0)
        let code = [0x00, 0xa7, 0xff, 0xff];
        let r = reloc(&code, &[(0, &[0xAA, 0xBB], &[])]);
        // 0-1 entry bytes, 2: nop, 3: goto -1 -> 2
        assert_eq!(r.code, vec![0xAA, 0xBB, 0x00, 0xa7, 0xff, 0xff]);
        assert_eq!(r.map(0).unwrap(), 2);
        assert_eq!(r.map(4).unwrap(), 6);
    }

    #[test]
    fn branch_to_return_lands_on_inserted_code() {
        // 0: iconst_0; 1: ifeq +4 -> 5; 4: nop; 5: return
        let code = [0x03, 0x99, 0x00, 0x04, 0x00, 0xb1];
        let r = reloc(&code, &[(5, &[], &[0xEE, 0xEE, 0xEE])]);
        assert_eq!(
            r.code,
            vec![0x03, 0x99, 0x00, 0x04, 0x00, 0xEE, 0xEE, 0xEE, 0xb1]
        );
        assert_eq!(r.map(5).unwrap(), 5);
        assert_eq!(r.insn_pos(5).unwrap(), 8);
    }

    #[test]
    fn backward_and_forward_branches_shift() {
        // 0: nop; 1: goto +4 -> 5; 4: return; 5: goto -4 -> 1; 8: return
        let code = [0x00, 0xa7, 0x00, 0x04, 0xb1, 0xa7, 0xff, 0xfc, 0xb1];
        let r = reloc(&code, &[(4, &[], &[1, 2]), (8, &[], &[3, 4, 5])]);
        // 0 nop; 1 goto -> 7; 4,5 ins; 6 return; 7 goto -> 1; 10.. ins; 13 return
        assert_eq!(
            r.code,
            vec![0x00, 0xa7, 0x00, 0x06, 1, 2, 0xb1, 0xa7, 0xff, 0xfa, 3, 4, 5, 0xb1]
        );
    }

    #[test]
    fn switch_padding_is_recomputed_at_the_new_offset() {
        // 0: iconst_0; 1: tableswitch (pad 2), default and [0..0] -> 20; 20: return
        let mut code = vec![0x03, 0xaa, 0, 0];
        for v in [19i32, 0, 0, 19] {
            code.extend_from_slice(&v.to_be_bytes());
        }
        code.push(0xb1);
        for shift in 0..4usize {
            let entry = vec![0x00; shift + 1];
            let r = reloc(&code, &[(0, &entry, &[])]);
            let sw = 1 + shift + 1;
            assert_eq!(r.insn_pos(1).unwrap() as usize, sw);
            let pad = (4 - (sw + 1) % 4) % 4;
            let base = sw + 1 + pad;
            assert!(r.code[sw + 1..base].iter().all(|&b| b == 0));
            let ret = r.map(20).unwrap() as usize;
            assert_eq!(r.code[ret], 0xb1);
            assert_eq!(ret, base + 16);
            let d = i32::from_be_bytes(r.code[base..base + 4].try_into().unwrap()) as usize;
            assert_eq!(sw + d, ret, "default target for shift {shift}");
            let t = i32::from_be_bytes(r.code[base + 12..base + 16].try_into().unwrap()) as usize;
            assert_eq!(sw + t, ret);
        }
    }

    #[test]
    fn lookupswitch_relocates() {
        // 0: iconst_0; 1: lookupswitch pad 2; default, npairs 2, keys 1, 9; then return at 28
        let mut code = vec![0x03, 0xab, 0, 0];
        for v in [27i32, 2, 1, 27, 9, 27] {
            code.extend_from_slice(&v.to_be_bytes());
        }
        code.push(0xb1);
        let insns = decode_all(&code).unwrap();
        assert_eq!(insns[2].offset, 28);
        let r = reloc(&code, &[(28, &[], &[7, 7, 7])]);
        assert_eq!(r.code.len(), code.len() + 3);
        // branches land on the inserted code
        let d = i32::from_be_bytes(r.code[4..8].try_into().unwrap());
        assert_eq!(d, 27);
        assert_eq!(&r.code[28..32], &[7, 7, 7, 0xb1]);
    }

    #[test]
    fn far_branches_are_widened() {
        // 0: iconst_0; 1: ifeq -> 32764; 4: goto -> 32764; 7..: nops; 32764: return
        let mut code = vec![0x03, 0x99];
        code.extend_from_slice(&(32763i16).to_be_bytes());
        code.push(0xa7);
        code.extend_from_slice(&(32760i16).to_be_bytes());
        code.resize(32764, 0x00);
        code.push(0xb1);
        // a jsr backwards that stays in range, and insertion to push targets out of range
        let r = reloc(&code, &[(7, &[], &[0; 10])]);
        assert_eq!(r.widened_conditionals, vec![1]);
        // 1: ifne +8; 4: goto_w -> ret; 9: goto_w -> ret
        assert_eq!(&r.code[1..4], &[0x9a, 0x00, 0x08]);
        assert_eq!(r.code[4], op::GOTO_W);
        let ret = r.map(32764).unwrap() as i32;
        assert_eq!(ret, 32764 + 10 + 5 + 2);
        assert_eq!(
            i32::from_be_bytes(r.code[5..9].try_into().unwrap()),
            ret - 4
        );
        assert_eq!(r.code[9], op::GOTO_W);
        assert_eq!(
            i32::from_be_bytes(r.code[10..14].try_into().unwrap()),
            ret - 9
        );
        assert_eq!(r.map(4).unwrap(), 9);
        assert_eq!(r.map(7).unwrap(), 14);
        assert_eq!(r.code[ret as usize], 0xb1);
    }

    #[test]
    fn widening_cascades_to_fixpoint() {
        // Two forward gotos: the first one only overflows because the second grows.
        // 0: goto -> 32767 ; 3: goto -> 32770 (end return); nops; 32767: nop..; 32770 return
        let mut code = vec![0xa7];
        code.extend_from_slice(&(32767i16).to_be_bytes());
        code.push(0xa7);
        code.extend_from_slice(&(32767i16).to_be_bytes());
        code.resize(32770, 0x00);
        code.push(0xb1);
        let insns = decode_all(&code).unwrap();
        let mut m = BTreeMap::new();
        m.insert(
            6,
            Insertion {
                skip: vec![],
                land: vec![0x00],
            },
        );
        let r = relocate(&code, &insns, &m).unwrap();
        assert_eq!(r.code[0], op::GOTO_W);
        assert_eq!(r.code[5], op::GOTO_W);
        assert_eq!(r.code.len(), code.len() + 1 + 2 + 2);
    }

    #[test]
    fn too_large_is_reported() {
        let mut code = vec![0x00; 65530];
        code.push(0xb1);
        let insns = decode_all(&code).unwrap();
        let mut m = BTreeMap::new();
        m.insert(
            65530,
            Insertion {
                skip: vec![],
                land: vec![0; 8],
            },
        );
        assert!(matches!(
            relocate(&code, &insns, &m),
            Err(BciError::CodeTooLarge { new_length: 65539 })
        ));
    }
}
