//! Object IDs and JVMTI tag encoding.
//!
//! Binary and text output name objects by agent handles, not addresses:
//! `0x50000000 + n` with n counting from 1 in the order objects are first
//! met (docs/output-formats.md §1.3). Objects the agent must recognise later (class
//! mirrors, Thread objects) carry a JVMTI tag whose top byte says what the
//! low bits mean.

pub const OBJECT_ID_BASE: u32 = 0x5000_0000;
pub const FRAME_ID_BASE: u32 = 0x7000_0000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum TagKind {
    /// A class mirror; payload = class serial.
    Class = 1,
    /// A java.lang.Thread; payload = thread serial.
    Thread = 2,
    /// Any other object; payload defined by the allocation/heap profiles.
    Object = 3,
}

/// Tag = kind in bits 56..63, payload in bits 0..55.
pub fn make_tag(kind: TagKind, payload: u64) -> i64 {
    (((kind as u64) << 56) | (payload & 0x00FF_FFFF_FFFF_FFFF)) as i64
}

pub fn split_tag(tag: i64) -> Option<(TagKind, u64)> {
    let t = tag as u64;
    let payload = t & 0x00FF_FFFF_FFFF_FFFF;
    match (t >> 56) as u8 {
        1 => Some((TagKind::Class, payload)),
        2 => Some((TagKind::Thread, payload)),
        3 => Some((TagKind::Object, payload)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip() {
        for kind in [TagKind::Class, TagKind::Thread, TagKind::Object] {
            let t = make_tag(kind, 123_456);
            assert_eq!(split_tag(t), Some((kind, 123_456)));
        }
        assert_eq!(split_tag(0), None);
    }
}
