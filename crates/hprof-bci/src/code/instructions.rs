//! Opcode table and instruction decoding (JVMS 6.5).

use crate::errors::{BciError, Result};

pub mod op {
    pub const ALOAD_0: u8 = 0x2a;
    pub const IINC: u8 = 0x84;
    pub const IFEQ: u8 = 0x99;
    pub const IF_ACMPNE: u8 = 0xa6;
    pub const GOTO: u8 = 0xa7;
    pub const JSR: u8 = 0xa8;
    pub const RET: u8 = 0xa9;
    pub const TABLESWITCH: u8 = 0xaa;
    pub const LOOKUPSWITCH: u8 = 0xab;
    pub const IRETURN: u8 = 0xac;
    pub const RETURN: u8 = 0xb1;
    pub const INVOKESTATIC: u8 = 0xb8;
    pub const NEW: u8 = 0xbb;
    pub const NEWARRAY: u8 = 0xbc;
    pub const ANEWARRAY: u8 = 0xbd;
    pub const ATHROW: u8 = 0xbf;
    pub const WIDE: u8 = 0xc4;
    pub const MULTIANEWARRAY: u8 = 0xc5;
    pub const IFNULL: u8 = 0xc6;
    pub const IFNONNULL: u8 = 0xc7;
    pub const GOTO_W: u8 = 0xc8;
    pub const JSR_W: u8 = 0xc9;
    pub const DUP: u8 = 0x59;
    pub const ICONST_0: u8 = 0x03;
    pub const BIPUSH: u8 = 0x10;
    pub const SIPUSH: u8 = 0x11;
    pub const LDC: u8 = 0x12;
    pub const LDC_W: u8 = 0x13;
}

/// Length of fixed-size instructions; 0 for the variable ones (switches,
/// wide) and for opcodes that may not appear in a class file.
pub fn fixed_length(opcode: u8) -> u32 {
    match opcode {
        0x00..=0x0f => 1,
        0x10 => 2,        // bipush
        0x11 => 3,        // sipush
        0x12 => 2,        // ldc
        0x13 | 0x14 => 3, // ldc_w, ldc2_w
        0x15..=0x19 => 2, // xload
        0x1a..=0x35 => 1,
        0x36..=0x3a => 2, // xstore
        0x3b..=0x83 => 1,
        0x84 => 3, // iinc
        0x85..=0x98 => 1,
        0x99..=0xa8 => 3, // if*, goto, jsr
        0xa9 => 2,        // ret
        0xaa | 0xab => 0, // switches
        0xac..=0xb1 => 1, // returns
        0xb2..=0xb8 => 3, // field access, invokevirtual/special/static
        0xb9 | 0xba => 5, // invokeinterface, invokedynamic
        0xbb => 3,        // new
        0xbc => 2,        // newarray
        0xbd => 3,        // anewarray
        0xbe | 0xbf => 1, // arraylength, athrow
        0xc0 | 0xc1 => 3, // checkcast, instanceof
        0xc2 | 0xc3 => 1, // monitorenter/exit
        0xc4 => 0,        // wide
        0xc5 => 4,        // multianewarray
        0xc6 | 0xc7 => 3, // ifnull, ifnonnull
        0xc8 | 0xc9 => 5, // goto_w, jsr_w
        _ => 0,
    }
}

/// Whether executing this instruction can allocate a Java object for the
/// program: the allocating instructions, `ldc` (a String or a dynamic
/// constant), invocations (resolution and linkage, and the callee), field
/// and array accesses, `arraylength`, `athrow`, casts, monitors, integer
/// division and returns (the exceptions they throw, the classes they load
/// and initialise, the Strings of those exceptions' messages), and any
/// opcode not named by JVMS 6.5. Loads, stores, constants, stack and
/// arithmetic operations, conversions, comparisons, branches and switches
/// cannot: an allocation reported with such an instruction on top of the
/// stack was made by the VM on the thread for its own work (docs/
/// alloc_sites.md, "What is counted").
pub fn may_allocate(opcode: u8) -> bool {
    !matches!(
        opcode,
        0x00..=0x11          // nop, constants, bipush, sipush
            | 0x15..=0x2d    // loads of locals
            | 0x36..=0x4e    // stores to locals
            | 0x57..=0x6b    // stack operations, add, sub, mul
            | 0x6e | 0x6f    // fdiv, ddiv
            | 0x72..=0x98    // frem, drem, neg, shifts, logic, iinc, conversions, comparisons
            | 0x99..=0xab    // if*, goto, jsr, ret, switches
            | 0xc4           // wide (of a load, store, iinc or ret)
            | 0xc6..=0xc9 // ifnull, ifnonnull, goto_w, jsr_w
    )
}

pub fn is_return(opcode: u8) -> bool {
    (op::IRETURN..=op::RETURN).contains(&opcode)
}

/// Conditional 16-bit branches (if*, ifnull, ifnonnull).
pub fn is_conditional(opcode: u8) -> bool {
    (op::IFEQ..=op::IF_ACMPNE).contains(&opcode) || opcode == op::IFNULL || opcode == op::IFNONNULL
}

/// The conditional branch with the opposite condition.
pub fn invert_condition(opcode: u8) -> u8 {
    match opcode {
        op::IFEQ..=op::IF_ACMPNE => ((opcode - op::IFEQ) ^ 1) + op::IFEQ,
        op::IFNULL | op::IFNONNULL => opcode ^ 1,
        _ => panic!("not a conditional branch: {opcode:#x}"),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwitchTable {
    Table {
        low: i32,
        high: i32,
        targets: Vec<u32>,
    },
    Lookup {
        pairs: Vec<(i32, u32)>,
    },
}

impl SwitchTable {
    fn all_targets(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        match self {
            SwitchTable::Table { targets, .. } => Box::new(targets.iter().copied()),
            SwitchTable::Lookup { pairs } => Box::new(pairs.iter().map(|p| p.1)),
        }
    }
}

/// What an instruction needs when it moves. Targets are absolute offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InsnKind {
    /// Copied verbatim (includes `wide` forms and `ret`).
    Plain,
    /// if*, goto, jsr with a 16-bit displacement.
    Branch16 {
        target: u32,
    },
    /// goto_w, jsr_w.
    Branch32 {
        target: u32,
    },
    Switch {
        default: u32,
        table: SwitchTable,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insn {
    pub offset: u32,
    pub opcode: u8,
    pub len: u32,
    pub kind: InsnKind,
}

impl Insn {
    /// Every branch target of this instruction.
    pub fn targets(&self) -> Vec<u32> {
        match &self.kind {
            InsnKind::Plain => vec![],
            InsnKind::Branch16 { target } | InsnKind::Branch32 { target } => vec![*target],
            InsnKind::Switch { default, table } => std::iter::once(*default)
                .chain(table.all_targets())
                .collect(),
        }
    }

    /// The opcode a `wide` prefix modifies, else the opcode itself.
    pub fn effective_opcode(&self, code: &[u8]) -> u8 {
        if self.opcode == op::WIDE {
            code[self.offset as usize + 1]
        } else {
            self.opcode
        }
    }

    /// Local-variable index operand of load/store/iinc/ret (plain or wide).
    pub fn local_index(&self, code: &[u8]) -> u16 {
        let o = self.offset as usize;
        if self.opcode == op::WIDE {
            u16::from_be_bytes([code[o + 2], code[o + 3]])
        } else {
            code[o + 1] as u16
        }
    }

    /// The u2 operand following the opcode (constant-pool indices etc.).
    pub fn u16_operand(&self, code: &[u8]) -> u16 {
        let o = self.offset as usize;
        u16::from_be_bytes([code[o + 1], code[o + 2]])
    }
}

fn read_i32(code: &[u8], at: usize, offset: u32) -> Result<i32> {
    code.get(at..at + 4)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| BciError::BadCode {
            offset,
            msg: "truncated switch".into(),
        })
}

fn target(offset: u32, disp: i64, code_len: usize) -> Result<u32> {
    let t = offset as i64 + disp;
    if t < 0 || t >= code_len as i64 {
        return Err(BciError::BadCode {
            offset,
            msg: format!("branch target {t} outside code"),
        });
    }
    Ok(t as u32)
}

/// Number of padding bytes after a switch opcode at `offset`.
pub fn switch_padding(offset: u32) -> u32 {
    3 - (offset % 4)
}

/// Decodes one instruction at `offset`.
pub fn decode_at(code: &[u8], offset: u32) -> Result<Insn> {
    let o = offset as usize;
    let opcode = code[o];
    let bad = |msg: &str| BciError::BadCode {
        offset,
        msg: msg.to_string(),
    };
    let (len, kind) = match opcode {
        op::TABLESWITCH | op::LOOKUPSWITCH => {
            let base = o + 1 + switch_padding(offset) as usize;
            let default = target(offset, read_i32(code, base, offset)? as i64, code.len())?;
            if opcode == op::TABLESWITCH {
                let low = read_i32(code, base + 4, offset)?;
                let high = read_i32(code, base + 8, offset)?;
                if low > high {
                    return Err(bad("tableswitch low > high"));
                }
                let n = (high as i64 - low as i64 + 1) as usize;
                if n > code.len() {
                    return Err(bad("tableswitch too large"));
                }
                let targets = (0..n)
                    .map(|i| {
                        target(
                            offset,
                            read_i32(code, base + 12 + 4 * i, offset)? as i64,
                            code.len(),
                        )
                    })
                    .collect::<Result<Vec<_>>>()?;
                (
                    (base + 12 + 4 * n - o) as u32,
                    InsnKind::Switch {
                        default,
                        table: SwitchTable::Table { low, high, targets },
                    },
                )
            } else {
                let n = read_i32(code, base + 4, offset)?;
                if n < 0 || n as usize > code.len() {
                    return Err(bad("bad lookupswitch npairs"));
                }
                let n = n as usize;
                let pairs = (0..n)
                    .map(|i| {
                        let k = read_i32(code, base + 8 + 8 * i, offset)?;
                        let d = read_i32(code, base + 12 + 8 * i, offset)?;
                        Ok((k, target(offset, d as i64, code.len())?))
                    })
                    .collect::<Result<Vec<_>>>()?;
                (
                    (base + 8 + 8 * n - o) as u32,
                    InsnKind::Switch {
                        default,
                        table: SwitchTable::Lookup { pairs },
                    },
                )
            }
        }
        op::WIDE => {
            let m = *code.get(o + 1).ok_or_else(|| bad("truncated wide"))?;
            let len = match m {
                0x15..=0x19 | 0x36..=0x3a | op::RET => 4,
                op::IINC => 6,
                _ => return Err(bad("wide with invalid opcode")),
            };
            (len, InsnKind::Plain)
        }
        _ => {
            let len = fixed_length(opcode);
            if len == 0 {
                return Err(bad(&format!("invalid opcode {opcode:#04x}")));
            }
            if o + len as usize > code.len() {
                return Err(bad("truncated instruction"));
            }
            let kind = match opcode {
                op::IFEQ..=op::JSR | op::IFNULL | op::IFNONNULL => {
                    let d = i16::from_be_bytes([code[o + 1], code[o + 2]]);
                    InsnKind::Branch16 {
                        target: target(offset, d as i64, code.len())?,
                    }
                }
                op::GOTO_W | op::JSR_W => {
                    let d = read_i32(code, o + 1, offset)?;
                    InsnKind::Branch32 {
                        target: target(offset, d as i64, code.len())?,
                    }
                }
                _ => InsnKind::Plain,
            };
            (len, kind)
        }
    };
    if o + len as usize > code.len() {
        return Err(bad("truncated instruction"));
    }
    Ok(Insn {
        offset,
        opcode,
        len,
        kind,
    })
}

/// Decodes a whole method body and checks that every branch target is the
/// start of an instruction.
pub fn decode_all(code: &[u8]) -> Result<Vec<Insn>> {
    if code.is_empty() {
        return Err(BciError::BadCode {
            offset: 0,
            msg: "empty code".into(),
        });
    }
    let mut insns = Vec::new();
    let mut offset = 0u32;
    while (offset as usize) < code.len() {
        let i = decode_at(code, offset)?;
        offset += i.len;
        insns.push(i);
    }
    let starts = InsnIndex::new(&insns, code.len());
    for i in &insns {
        for t in i.targets() {
            if starts.index_of(t).is_none() {
                return Err(BciError::BadCode {
                    offset: i.offset,
                    msg: format!("branch into the middle of an instruction at {t}"),
                });
            }
        }
    }
    Ok(insns)
}

/// Maps offsets to instruction indices.
#[derive(Debug)]
pub struct InsnIndex {
    by_offset: Vec<u32>,
}

impl InsnIndex {
    pub fn new(insns: &[Insn], code_len: usize) -> Self {
        let mut by_offset = vec![u32::MAX; code_len + 1];
        for (k, i) in insns.iter().enumerate() {
            by_offset[i.offset as usize] = k as u32;
        }
        by_offset[code_len] = insns.len() as u32;
        InsnIndex { by_offset }
    }

    /// Index of the instruction starting at `offset`; `code_len` maps to
    /// `insns.len()` (the end of the code).
    pub fn index_of(&self, offset: u32) -> Option<usize> {
        match self.by_offset.get(offset as usize) {
            Some(&k) if k != u32::MAX => Some(k as usize),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_instructions_that_can_make_an_object_may_allocate() {
        let allocating: Vec<u8> = (0u8..=0xff).filter(|&o| may_allocate(o)).collect();
        let expected: Vec<u8> = [
            0x12..=0x14, // ldc, ldc_w, ldc2_w
            0x2e..=0x35, // array loads
            0x4f..=0x56, // array stores
            0x6c..=0x6d, // idiv, ldiv
            0x70..=0x71, // irem, lrem
            0xac..=0xc3, // returns .. monitorexit
            0xc5..=0xc5, // multianewarray
            0xca..=0xff, // breakpoint and whatever no class file holds
        ]
        .into_iter()
        .flatten()
        .collect();
        assert_eq!(allocating, expected);
        for o in [
            op::GOTO,
            op::GOTO_W,
            op::IFNULL,
            0x9f,
            op::ALOAD_0,
            op::IINC,
            0x60,
        ] {
            assert!(!may_allocate(o), "{o:#x}");
        }
    }

    #[test]
    fn fixed_lengths_cover_every_valid_opcode() {
        for opc in 0u8..=0xc9 {
            let variable = matches!(opc, op::TABLESWITCH | op::LOOKUPSWITCH | op::WIDE);
            assert_eq!(fixed_length(opc) == 0, variable, "opcode {opc:#x}");
        }
        for opc in 0xca..=0xff {
            assert_eq!(fixed_length(opc), 0, "opcode {opc:#x} must be rejected");
        }
        let spot = [
            (0x10, 2),
            (0x11, 3),
            (0x12, 2),
            (0x14, 3),
            (0x19, 2),
            (0x3a, 2),
            (0x84, 3),
            (0xa9, 2),
            (0xb9, 5),
            (0xba, 5),
            (0xbc, 2),
            (0xc5, 4),
            (0xc8, 5),
        ];
        for (o, l) in spot {
            assert_eq!(fixed_length(o), l, "opcode {o:#x}");
        }
    }

    #[test]
    fn decodes_wide_and_switches() {
        // 0: wide iload 300; 4: wide iinc 300 -1000; 10: nop; 11: tableswitch (pad 0)
        let mut c = vec![
            0xc4, 0x15, 0x01, 0x2c, 0xc4, 0x84, 0x01, 0x2c, 0xfc, 0x18, 0x00, 0xaa,
        ];
        // default +17 (-> 28), low 1, high 1, target +17 -> 28
        for v in [17i32, 1, 1, 17] {
            c.extend_from_slice(&v.to_be_bytes());
        }
        // 28: lookupswitch, pad 3, default -28 -> 0, npairs 1, (5 -> -28)
        c.push(0xab);
        c.extend_from_slice(&[0, 0, 0]);
        for v in [-28i32, 1, 5, -28] {
            c.extend_from_slice(&v.to_be_bytes());
        }
        c.push(0xb1);
        let insns = decode_all(&c).unwrap();
        let shape: Vec<(u32, u32)> = insns.iter().map(|i| (i.offset, i.len)).collect();
        assert_eq!(
            shape,
            vec![(0, 4), (4, 6), (10, 1), (11, 17), (28, 20), (48, 1)]
        );
        assert_eq!(insns[0].local_index(&c), 300);
        assert_eq!(insns[0].effective_opcode(&c), 0x15);
        assert_eq!(insns[3].targets(), vec![28, 28]);
        assert_eq!(insns[4].targets(), vec![0, 0]);
    }

    #[test]
    fn switch_padding_depends_on_offset() {
        assert_eq!([0, 1, 2, 3, 4].map(switch_padding), [3, 2, 1, 0, 3]);
    }

    #[test]
    fn rejects_branch_into_instruction() {
        // 0: goto +1 (into its own operand)
        assert!(decode_all(&[0xa7, 0x00, 0x01, 0xb1]).is_err());
        // branch outside the code
        assert!(decode_all(&[0xa7, 0x00, 0x10]).is_err());
        assert!(decode_all(&[0xfe]).is_err());
        assert!(decode_all(&[0xc4, 0x10, 0, 0]).is_err());
    }

    #[test]
    fn inverts_every_conditional() {
        let pairs = [
            (0x99, 0x9a),
            (0x9b, 0x9c),
            (0x9d, 0x9e),
            (0x9f, 0xa0),
            (0xa1, 0xa2),
            (0xa3, 0xa4),
            (0xa5, 0xa6),
            (0xc6, 0xc7),
        ];
        for (a, b) in pairs {
            assert_eq!(invert_condition(a), b);
            assert_eq!(invert_condition(b), a);
            assert!(is_conditional(a) && is_conditional(b));
        }
        assert!(!is_conditional(op::GOTO) && !is_conditional(op::JSR));
    }
}
