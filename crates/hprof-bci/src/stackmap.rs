//! StackMapTable (JVMS 4.7.4): the exact encoded form (for byte-identical
//! round trips) and an expanded form with absolute offsets and complete
//! locals/stack lists, used when the rewriter moves or adds frames.
//!
//! In the expanded form `locals` and `stack` are lists of verification types
//! as the attribute spells them: a Long or Double is ONE entry (it covers two
//! local slots). `chop k` removes the last k entries, `append` adds entries.

use crate::classfile::reader::Reader;
use crate::classfile::writer::Writer;
use crate::errors::{BciError, Result};

/// verification_type_info.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VType {
    Top,
    Integer,
    Float,
    Double,
    Long,
    Null,
    UninitializedThis,
    /// Constant-pool index of a Class entry.
    Object(u16),
    /// Byte-code offset of the `new` instruction that created the object.
    Uninitialized(u16),
}

impl VType {
    pub fn is_wide(self) -> bool {
        matches!(self, VType::Long | VType::Double)
    }
}

/// One encoded frame, keeping the exact frame type chosen by the compiler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StackMapFrame {
    /// frame_type 0..=63 (the type is the offset delta).
    Same { offset_delta: u8 },
    /// frame_type 64..=127.
    SameLocals1StackItem { offset_delta: u8, stack: VType },
    /// frame_type 247.
    SameLocals1StackItemExtended { offset_delta: u16, stack: VType },
    /// frame_type 248..=250: the last `k` (1..=3) locals are absent.
    Chop { k: u8, offset_delta: u16 },
    /// frame_type 251.
    SameExtended { offset_delta: u16 },
    /// frame_type 252..=254: 1..=3 more locals.
    Append {
        offset_delta: u16,
        locals: Vec<VType>,
    },
    /// frame_type 255.
    Full {
        offset_delta: u16,
        locals: Vec<VType>,
        stack: Vec<VType>,
    },
}

impl StackMapFrame {
    pub fn offset_delta(&self) -> u16 {
        match self {
            StackMapFrame::Same { offset_delta }
            | StackMapFrame::SameLocals1StackItem { offset_delta, .. } => *offset_delta as u16,
            StackMapFrame::SameLocals1StackItemExtended { offset_delta, .. }
            | StackMapFrame::Chop { offset_delta, .. }
            | StackMapFrame::SameExtended { offset_delta }
            | StackMapFrame::Append { offset_delta, .. }
            | StackMapFrame::Full { offset_delta, .. } => *offset_delta,
        }
    }
}

fn parse_vtype(r: &mut Reader) -> Result<VType> {
    Ok(match r.u8("verification type")? {
        0 => VType::Top,
        1 => VType::Integer,
        2 => VType::Float,
        3 => VType::Double,
        4 => VType::Long,
        5 => VType::Null,
        6 => VType::UninitializedThis,
        7 => VType::Object(r.u16("Object cpool_index")?),
        8 => VType::Uninitialized(r.u16("Uninitialized offset")?),
        t => {
            return Err(BciError::BadStackMap(format!(
                "unknown verification type {t}"
            )))
        }
    })
}

fn write_vtype(w: &mut Writer, v: VType) {
    match v {
        VType::Top => w.u8(0),
        VType::Integer => w.u8(1),
        VType::Float => w.u8(2),
        VType::Double => w.u8(3),
        VType::Long => w.u8(4),
        VType::Null => w.u8(5),
        VType::UninitializedThis => w.u8(6),
        VType::Object(i) => {
            w.u8(7);
            w.u16(i)
        }
        VType::Uninitialized(o) => {
            w.u8(8);
            w.u16(o)
        }
    }
}

fn parse_vtypes(r: &mut Reader, n: usize) -> Result<Vec<VType>> {
    (0..n).map(|_| parse_vtype(r)).collect()
}

/// Parses the body of a StackMapTable attribute.
pub fn parse_frames(r: &mut Reader) -> Result<Vec<StackMapFrame>> {
    let n = r.u16("number_of_entries")?;
    let mut frames = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let t = r.u8("frame_type")?;
        let f = match t {
            0..=63 => StackMapFrame::Same { offset_delta: t },
            64..=127 => StackMapFrame::SameLocals1StackItem {
                offset_delta: t - 64,
                stack: parse_vtype(r)?,
            },
            247 => StackMapFrame::SameLocals1StackItemExtended {
                offset_delta: r.u16("offset_delta")?,
                stack: parse_vtype(r)?,
            },
            248..=250 => StackMapFrame::Chop {
                k: 251 - t,
                offset_delta: r.u16("offset_delta")?,
            },
            251 => StackMapFrame::SameExtended {
                offset_delta: r.u16("offset_delta")?,
            },
            252..=254 => {
                let offset_delta = r.u16("offset_delta")?;
                StackMapFrame::Append {
                    offset_delta,
                    locals: parse_vtypes(r, (t - 251) as usize)?,
                }
            }
            255 => {
                let offset_delta = r.u16("offset_delta")?;
                let nl = r.u16("number_of_locals")? as usize;
                let locals = parse_vtypes(r, nl)?;
                let ns = r.u16("number_of_stack_items")? as usize;
                StackMapFrame::Full {
                    offset_delta,
                    locals,
                    stack: parse_vtypes(r, ns)?,
                }
            }
            _ => return Err(BciError::BadStackMap(format!("reserved frame type {t}"))),
        };
        frames.push(f);
    }
    Ok(frames)
}

/// Writes the body of a StackMapTable attribute.
pub fn write_frames(w: &mut Writer, frames: &[StackMapFrame]) {
    w.u16(frames.len() as u16);
    for f in frames {
        match f {
            StackMapFrame::Same { offset_delta } => w.u8(*offset_delta),
            StackMapFrame::SameLocals1StackItem {
                offset_delta,
                stack,
            } => {
                w.u8(64 + offset_delta);
                write_vtype(w, *stack);
            }
            StackMapFrame::SameLocals1StackItemExtended {
                offset_delta,
                stack,
            } => {
                w.u8(247);
                w.u16(*offset_delta);
                write_vtype(w, *stack);
            }
            StackMapFrame::Chop { k, offset_delta } => {
                w.u8(251 - k);
                w.u16(*offset_delta);
            }
            StackMapFrame::SameExtended { offset_delta } => {
                w.u8(251);
                w.u16(*offset_delta);
            }
            StackMapFrame::Append {
                offset_delta,
                locals,
            } => {
                w.u8(251 + locals.len() as u8);
                w.u16(*offset_delta);
                locals.iter().for_each(|v| write_vtype(w, *v));
            }
            StackMapFrame::Full {
                offset_delta,
                locals,
                stack,
            } => {
                w.u8(255);
                w.u16(*offset_delta);
                w.u16(locals.len() as u16);
                locals.iter().for_each(|v| write_vtype(w, *v));
                w.u16(stack.len() as u16);
                stack.iter().for_each(|v| write_vtype(w, *v));
            }
        }
    }
}

/// A frame with its absolute byte-code offset and complete state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub offset: u32,
    pub locals: Vec<VType>,
    pub stack: Vec<VType>,
}

/// Expands encoded frames, given the implicit initial frame's locals.
pub fn expand(frames: &[StackMapFrame], initial_locals: &[VType]) -> Result<Vec<Frame>> {
    let mut out: Vec<Frame> = Vec::with_capacity(frames.len());
    let mut locals = initial_locals.to_vec();
    for (i, f) in frames.iter().enumerate() {
        let offset = match out.last() {
            None => f.offset_delta() as u32,
            Some(prev) => prev.offset + f.offset_delta() as u32 + 1,
        };
        let stack = match f {
            StackMapFrame::Same { .. } | StackMapFrame::SameExtended { .. } => vec![],
            StackMapFrame::SameLocals1StackItem { stack, .. }
            | StackMapFrame::SameLocals1StackItemExtended { stack, .. } => vec![*stack],
            StackMapFrame::Chop { k, .. } => {
                let k = *k as usize;
                if k > locals.len() {
                    return Err(BciError::BadStackMap(format!(
                        "frame {i} chops {k} of {} locals",
                        locals.len()
                    )));
                }
                locals.truncate(locals.len() - k);
                vec![]
            }
            StackMapFrame::Append { locals: more, .. } => {
                locals.extend_from_slice(more);
                vec![]
            }
            StackMapFrame::Full {
                locals: l, stack, ..
            } => {
                locals = l.clone();
                stack.clone()
            }
        };
        out.push(Frame {
            offset,
            locals: locals.clone(),
            stack,
        });
    }
    Ok(out)
}

/// Encodes expanded frames (sorted, strictly increasing offsets) in the
/// most compact form relative to each previous frame.
pub fn compress(frames: &[Frame], initial_locals: &[VType]) -> Result<Vec<StackMapFrame>> {
    let mut out = Vec::with_capacity(frames.len());
    let mut prev_locals: &[VType] = initial_locals;
    let mut prev_offset: Option<u32> = None;
    for f in frames {
        let delta = match prev_offset {
            None => f.offset,
            Some(p) if f.offset > p => f.offset - p - 1,
            Some(p) => {
                return Err(BciError::BadStackMap(format!(
                    "frame at {} not after frame at {p}",
                    f.offset
                )))
            }
        };
        let offset_delta = u16::try_from(delta)
            .map_err(|_| BciError::BadStackMap(format!("offset delta {delta} too large")))?;
        let same_locals = f.locals == prev_locals;
        let enc = if same_locals && f.stack.is_empty() {
            if offset_delta < 64 {
                StackMapFrame::Same {
                    offset_delta: offset_delta as u8,
                }
            } else {
                StackMapFrame::SameExtended { offset_delta }
            }
        } else if same_locals && f.stack.len() == 1 {
            if offset_delta < 64 {
                StackMapFrame::SameLocals1StackItem {
                    offset_delta: offset_delta as u8,
                    stack: f.stack[0],
                }
            } else {
                StackMapFrame::SameLocals1StackItemExtended {
                    offset_delta,
                    stack: f.stack[0],
                }
            }
        } else if f.stack.is_empty()
            && f.locals.len() < prev_locals.len()
            && prev_locals.len() - f.locals.len() <= 3
            && prev_locals.starts_with(&f.locals)
        {
            StackMapFrame::Chop {
                k: (prev_locals.len() - f.locals.len()) as u8,
                offset_delta,
            }
        } else if f.stack.is_empty()
            && f.locals.len() > prev_locals.len()
            && f.locals.len() - prev_locals.len() <= 3
            && f.locals.starts_with(prev_locals)
        {
            StackMapFrame::Append {
                offset_delta,
                locals: f.locals[prev_locals.len()..].to_vec(),
            }
        } else {
            StackMapFrame::Full {
                offset_delta,
                locals: f.locals.clone(),
                stack: f.stack.clone(),
            }
        };
        out.push(enc);
        prev_locals = &f.locals;
        prev_offset = Some(f.offset);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_kinds() -> Vec<StackMapFrame> {
        use StackMapFrame::*;
        vec![
            Same { offset_delta: 3 },
            SameLocals1StackItem {
                offset_delta: 5,
                stack: VType::Object(9),
            },
            SameLocals1StackItemExtended {
                offset_delta: 300,
                stack: VType::Long,
            },
            Append {
                offset_delta: 2,
                locals: vec![VType::Integer, VType::Double],
            },
            Chop {
                k: 1,
                offset_delta: 7,
            },
            SameExtended { offset_delta: 1000 },
            Full {
                offset_delta: 4,
                locals: vec![VType::UninitializedThis, VType::Top, VType::Null],
                stack: vec![VType::Uninitialized(12), VType::Float],
            },
            Same { offset_delta: 0 },
        ]
    }

    #[test]
    fn every_frame_type_round_trips() {
        let frames = all_kinds();
        let mut w = Writer::new();
        write_frames(&mut w, &frames);
        let back = parse_frames(&mut Reader::new(&w.buf)).unwrap();
        assert_eq!(back, frames);
        assert_eq!(w.buf[0..2], [0, 8]);
        assert_eq!(w.buf[2], 3); // same
        assert_eq!(w.buf[3], 64 + 5); // same_locals_1
    }

    #[test]
    fn expand_then_compress_is_stable() {
        let init = vec![VType::Object(1), VType::Integer];
        let frames = all_kinds();
        let exp = expand(&frames, &init).unwrap();
        let offsets: Vec<u32> = exp.iter().map(|f| f.offset).collect();
        assert_eq!(offsets, vec![3, 9, 310, 313, 321, 1322, 1327, 1328]);
        assert_eq!(
            exp[3].locals,
            vec![
                VType::Object(1),
                VType::Integer,
                VType::Integer,
                VType::Double
            ]
        );
        assert_eq!(exp[4].locals.len(), 3);
        let comp = compress(&exp, &init).unwrap();
        // compression is canonical: expanding it again yields the same states
        assert_eq!(expand(&comp, &init).unwrap(), exp);
        assert_eq!(comp, frames, "these frames are already minimal");
    }

    #[test]
    fn compress_promotes_large_deltas() {
        let init = vec![VType::Integer];
        let exp = vec![
            Frame {
                offset: 70,
                locals: init.clone(),
                stack: vec![],
            },
            Frame {
                offset: 200,
                locals: init.clone(),
                stack: vec![VType::Integer],
            },
            Frame {
                offset: 201,
                locals: vec![],
                stack: vec![],
            },
            Frame {
                offset: 202,
                locals: vec![VType::Long, VType::Top, VType::Null, VType::Float],
                stack: vec![],
            },
        ];
        let comp = compress(&exp, &init).unwrap();
        assert_eq!(
            comp,
            vec![
                StackMapFrame::SameExtended { offset_delta: 70 },
                StackMapFrame::SameLocals1StackItemExtended {
                    offset_delta: 129,
                    stack: VType::Integer
                },
                StackMapFrame::Chop {
                    k: 1,
                    offset_delta: 0
                },
                StackMapFrame::Full {
                    offset_delta: 0,
                    locals: vec![VType::Long, VType::Top, VType::Null, VType::Float],
                    stack: vec![]
                },
            ]
        );
        assert!(compress(&[exp[1].clone(), exp[0].clone()], &init).is_err());
    }

    #[test]
    fn reserved_frame_type_is_an_error() {
        let bytes = [0, 1, 128];
        assert!(parse_frames(&mut Reader::new(&bytes)).is_err());
    }
}
