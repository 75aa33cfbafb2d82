//! A verifier-lite: the type state after one instruction, derived from the
//! nearest preceding StackMapTable frame and the stack effects of the
//! instructions in between (JVMS 4.10.1 rules, without merging).
//!
//! Used only where the rewriter creates a new basic block: the instruction
//! after a conditional branch widened to `if<!cond> +8; goto_w`. In verified
//! code every instruction that is not reached by fall-through has a frame, so
//! walking forward from the last frame never needs a merge.

use super::instructions::{op, Insn, InsnIndex};
use crate::classfile::constant_pool::{Constant, ConstantPool};
use crate::errors::{BciError, Result};
use crate::stackmap::{Frame, VType};

/// Locals and stack in slot form: a Long/Double is followed by a Top slot.
#[derive(Debug, Clone)]
struct State {
    locals: Vec<VType>,
    stack: Vec<VType>,
}

pub fn to_slots(entries: &[VType]) -> Vec<VType> {
    let mut v = Vec::with_capacity(entries.len() + 2);
    for &e in entries {
        v.push(e);
        if e.is_wide() {
            v.push(VType::Top);
        }
    }
    v
}

/// Slot form back to frame entries; trailing Top locals are dropped.
pub fn from_slots(slots: &[VType], trim_top: bool) -> Vec<VType> {
    let mut v = Vec::with_capacity(slots.len());
    let mut i = 0;
    while i < slots.len() {
        v.push(slots[i]);
        i += if slots[i].is_wide() { 2 } else { 1 };
    }
    if trim_top {
        while v.last() == Some(&VType::Top) {
            v.pop();
        }
    }
    v
}

/// The verification type of a field descriptor starting at `d[*pos]`;
/// `None` for `V`. Advances `pos`.
pub fn descriptor_type(cp: &mut ConstantPool, d: &[u8], pos: &mut usize) -> Result<Option<VType>> {
    let bad = || BciError::Malformed(format!("bad descriptor {}", String::from_utf8_lossy(d)));
    let start = *pos;
    let c = *d.get(*pos).ok_or_else(bad)?;
    *pos += 1;
    Ok(Some(match c {
        b'B' | b'C' | b'I' | b'S' | b'Z' => VType::Integer,
        b'F' => VType::Float,
        b'J' => VType::Long,
        b'D' => VType::Double,
        b'V' => return Ok(None),
        b'L' => {
            let end = d[*pos..].iter().position(|&b| b == b';').ok_or_else(bad)? + *pos;
            let name = d[*pos..end].to_vec();
            *pos = end + 1;
            VType::Object(class_index(cp, &name)?)
        }
        b'[' => {
            while d.get(*pos) == Some(&b'[') {
                *pos += 1;
            }
            match d.get(*pos).ok_or_else(bad)? {
                b'L' => {
                    *pos = d[*pos..].iter().position(|&b| b == b';').ok_or_else(bad)? + *pos + 1
                }
                _ => *pos += 1,
            }
            let name = d[start..*pos].to_vec();
            VType::Object(class_index(cp, &name)?)
        }
        _ => return Err(bad()),
    }))
}

/// Parameter types and return type of a method descriptor.
pub fn method_types(cp: &mut ConstantPool, d: &[u8]) -> Result<(Vec<VType>, Option<VType>)> {
    if d.first() != Some(&b'(') {
        return Err(BciError::Malformed("method descriptor without '('".into()));
    }
    let mut pos = 1;
    let mut args = Vec::new();
    while d.get(pos) != Some(&b')') {
        args.push(
            descriptor_type(cp, d, &mut pos)?
                .ok_or_else(|| BciError::Malformed("void parameter".into()))?,
        );
    }
    pos += 1;
    let ret = descriptor_type(cp, d, &mut pos)?;
    Ok((args, ret))
}

/// Existing Class entry for `name`, else a new one.
fn class_index(cp: &mut ConstantPool, name: &[u8]) -> Result<u16> {
    match cp.find_class(name) {
        Some(i) => Ok(i),
        None => cp.add_class(name),
    }
}

/// The implicit initial frame's locals (JVMS 4.10.1.6).
pub fn initial_locals(
    cp: &mut ConstantPool,
    this_class: u16,
    is_object_class: bool,
    name: &[u8],
    descriptor: &[u8],
    is_static: bool,
) -> Result<Vec<VType>> {
    let mut v = Vec::new();
    if !is_static {
        v.push(if name == b"<init>" && !is_object_class {
            VType::UninitializedThis
        } else {
            VType::Object(this_class)
        });
    }
    v.extend(method_types(cp, descriptor)?.0);
    Ok(v)
}

struct Sim<'a> {
    code: &'a [u8],
    cp: &'a mut ConstantPool,
    this_class: u16,
    st: State,
}

fn underflow(o: u32) -> BciError {
    BciError::BadCode {
        offset: o,
        msg: "operand stack underflow in type inference".into(),
    }
}

impl Sim<'_> {
    fn push(&mut self, v: VType) {
        self.st.stack.push(v);
        if v.is_wide() {
            self.st.stack.push(VType::Top);
        }
    }
    fn pop_slots(&mut self, n: usize, o: u32) -> Result<()> {
        let len = self.st.stack.len();
        if n > len {
            return Err(underflow(o));
        }
        self.st.stack.truncate(len - n);
        Ok(())
    }
    fn pop1(&mut self, o: u32) -> Result<VType> {
        self.st.stack.pop().ok_or_else(|| underflow(o))
    }
    fn local(&self, n: usize) -> VType {
        self.st.locals.get(n).copied().unwrap_or(VType::Top)
    }
    fn store(&mut self, n: usize, v: VType) {
        let need = n + if v.is_wide() { 2 } else { 1 };
        if self.st.locals.len() < need {
            self.st.locals.resize(need, VType::Top);
        }
        if n > 0 && self.st.locals[n - 1].is_wide() {
            self.st.locals[n - 1] = VType::Top;
        }
        self.st.locals[n] = v;
        if v.is_wide() {
            self.st.locals[n + 1] = VType::Top;
        }
    }
    /// Duplicates `n` slots and inserts the copies `depth` slots below the top.
    fn dup(&mut self, n: usize, depth: usize, o: u32) -> Result<()> {
        let len = self.st.stack.len();
        if n + depth > len {
            return Err(underflow(o));
        }
        let copy: Vec<VType> = self.st.stack[len - n..].to_vec();
        let at = len - n - depth;
        self.st.stack.splice(at..at, copy);
        Ok(())
    }
    fn class_type(&mut self, name: &[u8]) -> Result<VType> {
        Ok(VType::Object(class_index(self.cp, name)?))
    }
    fn ldc_type(&mut self, idx: u16) -> Result<VType> {
        match self.cp.get(idx).cloned() {
            Some(Constant::Integer(_)) => Ok(VType::Integer),
            Some(Constant::Float(_)) => Ok(VType::Float),
            Some(Constant::Long(_)) => Ok(VType::Long),
            Some(Constant::Double(_)) => Ok(VType::Double),
            Some(Constant::String(_)) => self.class_type(b"java/lang/String"),
            Some(Constant::Class(_)) => self.class_type(b"java/lang/Class"),
            Some(Constant::MethodType(_)) => self.class_type(b"java/lang/invoke/MethodType"),
            Some(Constant::MethodHandle { .. }) => {
                self.class_type(b"java/lang/invoke/MethodHandle")
            }
            Some(Constant::Dynamic { .. }) => {
                let d = self.cp.dynamic_name_and_type(idx)?.1.to_vec();
                descriptor_type(self.cp, &d, &mut 0)?
                    .ok_or_else(|| BciError::Malformed("void constant".into()))
            }
            _ => Err(BciError::BadConstantIndex {
                index: idx,
                expected: "loadable constant",
            }),
        }
    }
    fn field_type(&mut self, idx: u16) -> Result<VType> {
        let d = self.cp.member_ref(idx)?.2.to_vec();
        descriptor_type(self.cp, &d, &mut 0)?
            .ok_or_else(|| BciError::Malformed("void field".into()))
    }
    fn replace_all(&mut self, from: VType, to: VType) {
        for s in self.st.locals.iter_mut().chain(self.st.stack.iter_mut()) {
            if *s == from {
                *s = to;
            }
        }
    }

    /// Applies one instruction; `Ok(false)` if control does not fall through.
    fn step(&mut self, insn: &Insn) -> Result<bool> {
        use VType::*;
        let code = self.code;
        let o = insn.offset;
        let opc = insn.effective_opcode(code);
        let prim = [Integer, Long, Float, Double];
        let slots = |t: VType| if t.is_wide() { 2 } else { 1 };
        match opc {
            0x00 => {}
            0x01 => self.push(Null),
            0x02..=0x08 | 0x10 | 0x11 => self.push(Integer),
            0x09 | 0x0a => self.push(Long),
            0x0b..=0x0d => self.push(Float),
            0x0e | 0x0f => self.push(Double),
            0x12 => {
                let t = self.ldc_type(code[o as usize + 1] as u16)?;
                self.push(t)
            }
            0x13 | 0x14 => {
                let t = self.ldc_type(insn.u16_operand(code))?;
                self.push(t)
            }
            0x15..=0x18 => self.push(prim[(opc - 0x15) as usize]),
            0x19 => self.push(self.local(insn.local_index(code) as usize)),
            0x1a..=0x29 => self.push(prim[((opc - 0x1a) / 4) as usize]),
            0x2a..=0x2d => self.push(self.local((opc - 0x2a) as usize)),
            0x2e..=0x31 | 0x33..=0x35 => {
                self.pop_slots(2, o)?;
                self.push(if opc >= 0x33 {
                    Integer
                } else {
                    prim[(opc - 0x2e) as usize]
                })
            }
            0x32 => {
                self.pop_slots(1, o)?;
                let t = match self.pop1(o)? {
                    Null => Null,
                    Object(i) => {
                        let name = self.cp.class_name(i)?.to_vec();
                        if name.first() != Some(&b'[') {
                            return Err(BciError::BadCode {
                                offset: o,
                                msg: "aaload on a non-array".into(),
                            });
                        }
                        descriptor_type(self.cp, &name[1..], &mut 0)?.unwrap_or(Top)
                    }
                    _ => {
                        return Err(BciError::BadCode {
                            offset: o,
                            msg: "aaload on a non-reference".into(),
                        })
                    }
                };
                self.push(t)
            }
            0x36..=0x4e => {
                let (kind, n) = if opc <= 0x3a {
                    ((opc - 0x36) as usize, insn.local_index(code) as usize)
                } else {
                    (((opc - 0x3b) / 4) as usize, ((opc - 0x3b) % 4) as usize)
                };
                let v = if kind == 4 {
                    self.pop1(o)?
                } else {
                    let t = prim[kind];
                    self.pop_slots(slots(t), o)?;
                    t
                };
                self.store(n, v)
            }
            0x4f | 0x51 | 0x53..=0x56 => self.pop_slots(3, o)?,
            0x50 | 0x52 => self.pop_slots(4, o)?,
            0x57 => self.pop_slots(1, o)?,
            0x58 => self.pop_slots(2, o)?,
            0x59 => self.dup(1, 0, o)?,
            0x5a => self.dup(1, 1, o)?,
            0x5b => self.dup(1, 2, o)?,
            0x5c => self.dup(2, 0, o)?,
            0x5d => self.dup(2, 1, o)?,
            0x5e => self.dup(2, 2, o)?,
            0x5f => {
                let a = self.pop1(o)?;
                let b = self.pop1(o)?;
                self.st.stack.push(a);
                self.st.stack.push(b);
            }
            0x60..=0x73 => {
                let t = prim[((opc - 0x60) % 4) as usize];
                self.pop_slots(2 * slots(t), o)?;
                self.push(t)
            }
            0x74..=0x77 => {
                let t = prim[((opc - 0x74) % 4) as usize];
                self.pop_slots(slots(t), o)?;
                self.push(t)
            }
            0x78..=0x7d => {
                let long = (opc - 0x78) % 2 == 1;
                self.pop_slots(if long { 3 } else { 2 }, o)?;
                self.push(if long { Long } else { Integer })
            }
            0x7e..=0x83 => {
                let long = (opc - 0x7e) % 2 == 1;
                self.pop_slots(if long { 4 } else { 2 }, o)?;
                self.push(if long { Long } else { Integer })
            }
            op::IINC => {}
            0x85..=0x93 => {
                // i2l i2f i2d l2i l2f l2d f2i f2l f2d d2i d2l d2f i2b i2c i2s
                let (from, to) = match opc {
                    0x85 => (Integer, Long),
                    0x86 => (Integer, Float),
                    0x87 => (Integer, Double),
                    0x88 => (Long, Integer),
                    0x89 => (Long, Float),
                    0x8a => (Long, Double),
                    0x8b => (Float, Integer),
                    0x8c => (Float, Long),
                    0x8d => (Float, Double),
                    0x8e => (Double, Integer),
                    0x8f => (Double, Long),
                    0x90 => (Double, Float),
                    _ => (Integer, Integer),
                };
                self.pop_slots(slots(from), o)?;
                self.push(to)
            }
            0x94 | 0x97 | 0x98 => {
                self.pop_slots(4, o)?;
                self.push(Integer)
            }
            0x95 | 0x96 => {
                self.pop_slots(2, o)?;
                self.push(Integer)
            }
            0x99..=0x9e | op::IFNULL | op::IFNONNULL => self.pop_slots(1, o)?,
            0x9f..=0xa6 => self.pop_slots(2, o)?,
            op::GOTO | op::GOTO_W | 0xac..=0xb1 | op::ATHROW => return Ok(false),
            op::TABLESWITCH | op::LOOKUPSWITCH => return Ok(false),
            op::JSR | op::RET | op::JSR_W => {
                return Err(BciError::BadCode {
                    offset: o,
                    msg: "jsr/ret in a method with a StackMapTable".into(),
                })
            }
            0xb2 => {
                let t = self.field_type(insn.u16_operand(code))?;
                self.push(t)
            }
            0xb3 => {
                let t = self.field_type(insn.u16_operand(code))?;
                self.pop_slots(slots(t), o)?
            }
            0xb4 => {
                let t = self.field_type(insn.u16_operand(code))?;
                self.pop_slots(1, o)?;
                self.push(t)
            }
            0xb5 => {
                let t = self.field_type(insn.u16_operand(code))?;
                self.pop_slots(slots(t) + 1, o)?
            }
            0xb6..=0xba => {
                let idx = insn.u16_operand(code);
                let (name, desc) = if opc == 0xba {
                    let (n, d) = self.cp.dynamic_name_and_type(idx)?;
                    (n.to_vec(), d.to_vec())
                } else {
                    let (_, n, d) = self.cp.member_ref(idx)?;
                    (n.to_vec(), d.to_vec())
                };
                let (args, ret) = method_types(self.cp, &desc)?;
                self.pop_slots(args.iter().map(|&a| slots(a)).sum(), o)?;
                if opc != op::INVOKESTATIC && opc != 0xba {
                    let receiver = self.pop1(o)?;
                    if opc == 0xb7 && name == b"<init>" {
                        let init = match receiver {
                            UninitializedThis => Object(self.this_class),
                            Uninitialized(at) => {
                                let at = at as usize;
                                if code.get(at) != Some(&op::NEW) || at + 2 >= code.len() {
                                    return Err(BciError::BadCode {
                                        offset: o,
                                        msg: "Uninitialized without new".into(),
                                    });
                                }
                                Object(u16::from_be_bytes([code[at + 1], code[at + 2]]))
                            }
                            _ => receiver,
                        };
                        self.replace_all(receiver, init);
                    }
                }
                if let Some(r) = ret {
                    self.push(r)
                }
            }
            op::NEW => self.push(Uninitialized(o as u16)),
            op::NEWARRAY => {
                self.pop_slots(1, o)?;
                let c = match code[o as usize + 1] {
                    4 => b'Z',
                    5 => b'C',
                    6 => b'F',
                    7 => b'D',
                    8 => b'B',
                    9 => b'S',
                    10 => b'I',
                    11 => b'J',
                    t => {
                        return Err(BciError::BadCode {
                            offset: o,
                            msg: format!("bad newarray type {t}"),
                        })
                    }
                };
                let t = self.class_type(&[b'[', c])?;
                self.push(t)
            }
            op::ANEWARRAY => {
                self.pop_slots(1, o)?;
                let elem = self.cp.class_name(insn.u16_operand(code))?.to_vec();
                let mut name = vec![b'['];
                if elem.first() == Some(&b'[') {
                    name.extend_from_slice(&elem);
                } else {
                    name.push(b'L');
                    name.extend_from_slice(&elem);
                    name.push(b';');
                }
                let t = self.class_type(&name)?;
                self.push(t)
            }
            0xbe | 0xc1 => {
                self.pop_slots(1, o)?;
                self.push(Integer)
            }
            0xc0 => {
                self.pop_slots(1, o)?;
                self.push(Object(insn.u16_operand(code)))
            }
            0xc2 | 0xc3 => self.pop_slots(1, o)?,
            op::MULTIANEWARRAY => {
                self.pop_slots(code[o as usize + 3] as usize, o)?;
                self.push(Object(insn.u16_operand(code)))
            }
            _ => {
                return Err(BciError::BadCode {
                    offset: o,
                    msg: format!("opcode {opc:#x} in type inference"),
                })
            }
        }
        Ok(true)
    }
}

/// The frame at the fall-through successor of `insns[target]`, inferred
/// from the last frame at or before it (or the initial frame).
pub fn frame_after(
    code: &[u8],
    insns: &[Insn],
    target: usize,
    frames: &[Frame],
    initial_locals: &[VType],
    cp: &mut ConstantPool,
    this_class: u16,
) -> Result<Frame> {
    let p = insns[target].offset;
    let (start, locals, stack) = match frames.iter().rev().find(|f| f.offset <= p) {
        Some(f) => (f.offset, f.locals.as_slice(), f.stack.as_slice()),
        None => (0, initial_locals, &[][..]),
    };
    let index = InsnIndex::new(insns, code.len());
    let first = index.index_of(start).ok_or_else(|| {
        BciError::BadStackMap(format!("frame at {start} is not at an instruction"))
    })?;
    let mut sim = Sim {
        code,
        cp,
        this_class,
        st: State {
            locals: to_slots(locals),
            stack: to_slots(stack),
        },
    };
    for (k, insn) in insns.iter().enumerate().take(target + 1).skip(first) {
        if !sim.step(insn)? && k != target {
            return Err(BciError::BadStackMap(format!(
                "no frame after the unconditional instruction at {} (dead code?)",
                insn.offset
            )));
        }
    }
    Ok(Frame {
        offset: p + insns[target].len,
        locals: from_slots(&sim.st.locals, true),
        stack: from_slots(&sim.st.stack, false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::instructions::decode_all;

    #[test]
    fn descriptors() {
        let mut cp = ConstantPool::new();
        let (args, ret) =
            method_types(&mut cp, b"(IJ[[Ljava/lang/String;Ljava/lang/Object;[DZ)V").unwrap();
        assert_eq!(ret, None);
        assert_eq!(args.len(), 6);
        assert_eq!(args[1], VType::Long);
        assert_eq!(
            cp.class_name(match args[2] {
                VType::Object(i) => i,
                _ => 0,
            })
            .unwrap(),
            b"[[Ljava/lang/String;"
        );
        assert_eq!(
            cp.class_name(match args[4] {
                VType::Object(i) => i,
                _ => 0,
            })
            .unwrap(),
            b"[D"
        );
        let init = initial_locals(&mut cp, 7, false, b"<init>", b"(JI)V", false).unwrap();
        assert_eq!(
            init,
            vec![VType::UninitializedThis, VType::Long, VType::Integer]
        );
        assert_eq!(to_slots(&init).len(), 4);
        assert_eq!(from_slots(&to_slots(&init), true), init);
    }

    #[test]
    fn infers_state_with_stack_and_locals() {
        let mut cp = ConstantPool::new();
        let s = cp.add_class(b"[Ljava/lang/String;").unwrap();
        // static void m(String[] a): 0: lconst_1; 1: lstore_1; 2: aload_0; 3: iconst_0; 4: aaload;
        // 5: iconst_2; 6: newarray int; 8: iconst_1; 9: ifeq ... ; 12: return
        let code = [
            0x0a, 0x40, 0x2a, 0x03, 0x32, 0x05, 0xbc, 10, 0x04, 0x99, 0x00, 0x03, 0xb1,
        ];
        let insns = decode_all(&code).unwrap();
        let init = vec![VType::Object(s)];
        let f = frame_after(&code, &insns, 8, &[], &init, &mut cp, 1).unwrap();
        assert_eq!(f.offset, 12);
        assert_eq!(f.locals, vec![VType::Object(s), VType::Long]);
        let string = cp.find_class(b"java/lang/String").unwrap();
        let ints = cp.find_class(b"[I").unwrap();
        assert_eq!(f.stack, vec![VType::Object(string), VType::Object(ints)]);
    }

    #[test]
    fn constructor_initialises_uninitialized() {
        let mut cp = ConstantPool::new();
        let init = cp
            .add_methodref(b"java/lang/Object", b"<init>", b"()V")
            .unwrap();
        let obj = cp.find_class(b"java/lang/Object").unwrap();
        // 0: new Object; 3: dup; 4: invokespecial <init>; 7: aload_0; 8: invokespecial <init>; 11: ifnull; 14: return
        let [hi, lo] = init.to_be_bytes();
        let [ohi, olo] = obj.to_be_bytes();
        let code = [
            0xbb, ohi, olo, 0x59, 0xb7, hi, lo, 0x2a, 0xb7, hi, lo, 0xc6, 0x00, 0x03, 0xb1,
        ];
        let insns = decode_all(&code).unwrap();
        let this = [VType::UninitializedThis];
        let before = frame_after(&code, &insns, 1, &[], &this, &mut cp, 9).unwrap();
        assert_eq!(
            before.stack,
            vec![VType::Uninitialized(0), VType::Uninitialized(0)]
        );
        let f = frame_after(&code, &insns, 4, &[], &this, &mut cp, 9).unwrap();
        assert_eq!(f.locals, vec![VType::Object(9)]);
        assert_eq!(f.stack, vec![VType::Object(obj)]);
        let f = frame_after(&code, &insns, 5, &[], &this, &mut cp, 9).unwrap();
        assert_eq!((f.offset, f.stack.len()), (14, 0));
    }

    #[test]
    fn dead_code_without_frame_is_refused() {
        let mut cp = ConstantPool::new();
        // 0: return; 1: iconst_0; 2: ifeq -> 5; 5: return
        let code = [0xb1, 0x03, 0x99, 0x00, 0x03, 0xb1];
        let insns = decode_all(&code).unwrap();
        assert!(frame_after(&code, &insns, 2, &[], &[], &mut cp, 1).is_err());
        let frames = [Frame {
            offset: 1,
            locals: vec![],
            stack: vec![],
        }];
        assert_eq!(
            frame_after(&code, &insns, 2, &frames, &[], &mut cp, 1)
                .unwrap()
                .offset,
            5
        );
    }
}
