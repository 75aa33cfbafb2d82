//! Text reports read line by line with a bound on each line, so a file
//! without newlines (or a compressed one that expands to one) cannot make
//! a reader hold it whole. Used by `flame` and the UI's text streams.

use std::io::BufRead;

/// Longest line accepted.
pub const MAX_LINE: usize = 1 << 20;

/// Read one line of at most [`MAX_LINE`] bytes (without its newline or a
/// `\r` before it) into `buf`; false at the end of the stream.
pub fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    buf.clear();
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(!buf.is_empty());
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(p) => (p + 1, true),
            None => (chunk.len(), false),
        };
        let keep = if done { take - 1 } else { take };
        if buf.len() + keep > MAX_LINE {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line longer than {MAX_LINE} bytes"),
            ));
        }
        buf.extend_from_slice(&chunk[..keep]);
        r.consume(take);
        if done {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(true);
        }
    }
}
