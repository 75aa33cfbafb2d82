//! Unsigned LEB128 integers ("varints"), as protobuf ([`crate::pprof`])
//! and JFR write them.

/// `v` appended to `out`, seven bits a byte, low bits first.
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// How many bytes [`put`] writes for `v`.
pub fn len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}
