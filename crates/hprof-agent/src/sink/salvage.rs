//! Where an output file cut by a failed write ends usefully: after its
//! last whole record (binary HPROF) or line (text). See `Sink::salvage`.

use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};

/// The length of the longest prefix of `file` that ends after a whole
/// binary record or a whole text line, and whether (binary 1.0.2) a heap
/// dump is open there (segments without their HEAP DUMP END).
pub fn whole_prefix<R: Read + Seek>(file: &mut R) -> io::Result<(u64, bool)> {
    let len = file.seek(SeekFrom::End(0))?;
    file.seek(SeekFrom::Start(0))?;
    let mut r = BufReader::with_capacity(1 << 20, &mut *file);
    let mut magic = Vec::new();
    r.by_ref().take(32).read_until(0, &mut magic)?;
    let binary = magic.last() == Some(&0) && magic.starts_with(b"JAVA PROFILE 1.0.");
    if !binary {
        drop(r);
        return Ok((last_line_end(file, len)?, false));
    }
    // The header: the name, then u4 ID size and u8 time.
    let mut at = magic.len() as u64 + 12;
    if len < at {
        return Ok((0, false));
    }
    r.seek_relative(12)?;
    let mut open_heap = false;
    let mut head = [0u8; 9];
    while at + 9 <= len {
        r.read_exact(&mut head)?;
        let n = u64::from(u32::from_be_bytes([head[5], head[6], head[7], head[8]]));
        if at + 9 + n > len {
            break;
        }
        r.seek_relative(n as i64)?;
        at += 9 + n;
        match head[0] {
            crate::vocab::tag::HEAP_DUMP_SEGMENT => open_heap = true,
            crate::vocab::tag::HEAP_DUMP_END => open_heap = false,
            _ => {}
        }
    }
    Ok((at, open_heap))
}

/// The end of the last whole line of the first `len` bytes.
fn last_line_end<R: Read + Seek>(file: &mut R, len: u64) -> io::Result<u64> {
    let mut end = len;
    let mut buf = vec![0u8; 64 << 10];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let piece = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(piece)?;
        if let Some(i) = piece.iter().rposition(|&b| b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::tag;
    use std::io::Cursor;

    fn rec(b: &mut Vec<u8>, t: u8, body: &[u8]) {
        b.push(t);
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(&(body.len() as u32).to_be_bytes());
        b.extend_from_slice(body);
    }

    #[test]
    fn a_cut_binary_file_keeps_its_whole_records() {
        let mut b = b"JAVA PROFILE 1.0.2\0".to_vec();
        b.extend_from_slice(&8u32.to_be_bytes());
        b.extend_from_slice(&0u64.to_be_bytes());
        let header = b.len() as u64;
        rec(&mut b, tag::UTF8, &[1; 12]);
        let after_utf8 = b.len() as u64;
        rec(&mut b, tag::HEAP_DUMP_SEGMENT, &[2; 100]);
        let after_seg = b.len() as u64;
        rec(&mut b, tag::HEAP_DUMP_END, &[]);
        let after_end = b.len() as u64;
        rec(&mut b, tag::HEAP_DUMP_SEGMENT, &[3; 50]);
        let whole = b.len() as u64;
        let cases = [
            (5, (0, false)),
            (header, (header, false)),
            (header + 3, (header, false)),
            (after_utf8 + 50, (after_utf8, false)),
            (after_seg, (after_seg, true)),
            (after_seg + 4, (after_seg, true)),
            (after_end + 20, (after_end, false)),
            (whole, (whole, true)),
        ];
        for (cut, want) in cases {
            let got = whole_prefix(&mut Cursor::new(&b[..cut as usize])).unwrap();
            assert_eq!(got, want, "cut at {cut}");
        }
    }

    #[test]
    fn a_cut_text_file_keeps_its_whole_lines() {
        let t = b"JAVA PROFILE 1.0.1, created Tue\n\nHEAP DUMP BEGIN\nOBJ 1 (sz=8";
        assert_eq!(whole_prefix(&mut Cursor::new(&t[..])).unwrap(), (49, false));
        assert_eq!(
            whole_prefix(&mut Cursor::new(&t[..10])).unwrap(),
            (0, false)
        );
        let big: Vec<u8> = std::iter::repeat_n(b'x', 200_000).chain(*b"\nab").collect();
        assert_eq!(
            whole_prefix(&mut Cursor::new(&big)).unwrap(),
            (200_001, false)
        );
    }
}
