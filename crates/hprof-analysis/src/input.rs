//! One way in for every input of the tool: a file or a stream, gzip or
//! not, a binary HPROF stream or a text report. `hprof-rs flame`, `sites`
//! and the UI's sessions all read through here, so what counts as gzip and
//! what counts as a text report is decided once.

use crate::reader::{GZIP_MAGIC, TEXT_REPORT_START};
use crate::ToolResult;
use std::io::{self, Read};

/// What an input holds once any gzip layer is undone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// A binary HPROF stream (the agent's, or a VM's heap dump).
    Binary,
    /// A text report (`format=a`): it starts `JAVA PROFILE 1.0.1, created`.
    Text,
    /// Nothing at all.
    Empty,
}

/// `r` with any gzip layer undone, and what it holds; the bytes looked at
/// are given back in front of the stream.
pub fn sniff<'a>(r: impl Read + 'a) -> io::Result<(Form, Box<dyn Read + 'a>)> {
    let (head, r) = peek(r, GZIP_MAGIC.len())?;
    let plain: Box<dyn Read + 'a> = if head == GZIP_MAGIC {
        Box::new(flate2::read::MultiGzDecoder::new(r))
    } else {
        Box::new(r)
    };
    let (start, plain) = peek(plain, TEXT_REPORT_START.len())?;
    let form = if start.is_empty() {
        Form::Empty
    } else if start == TEXT_REPORT_START {
        Form::Text
    } else {
        Form::Binary
    };
    Ok((form, Box::new(plain)))
}

/// The file at `path`, with progress on stderr for large files
/// (`progress`), through [`sniff`].
pub fn open(path: &str) -> ToolResult<(Form, Box<dyn Read>)> {
    let file = crate::progress::open(path)?;
    sniff(io::BufReader::with_capacity(1 << 16, file))
        .map_err(|e| format!("cannot read {path}: {e}"))
}

/// A reader with the bytes already read from it put back in front.
type Replayed<R> = io::Chain<io::Cursor<Vec<u8>>, R>;

/// The first `n` bytes of `r` (fewer at its end), and `r` with them put
/// back in front.
fn peek<R: Read>(mut r: R, n: usize) -> io::Result<(Vec<u8>, Replayed<R>)> {
    let mut head = Vec::with_capacity(n);
    Read::take(&mut r, n as u64).read_to_end(&mut head)?;
    Ok((head.clone(), io::Cursor::new(head).chain(r)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(b: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }

    fn read(b: &[u8]) -> (Form, Vec<u8>) {
        let (form, mut r) = sniff(b).unwrap();
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        (form, all)
    }

    #[test]
    fn gzip_text_and_binary_are_told_apart_and_nothing_is_lost() {
        let text = b"JAVA PROFILE 1.0.1, created today\nTRACE 1:\n".to_vec();
        let binary = b"JAVA PROFILE 1.0.2\0\0\0\0\x08".to_vec();
        assert_eq!(read(&text), (Form::Text, text.clone()));
        assert_eq!(read(&gz(&text)), (Form::Text, text.clone()));
        assert_eq!(read(&binary), (Form::Binary, binary.clone()));
        assert_eq!(read(&gz(&binary)), (Form::Binary, binary.clone()));
        assert_eq!(read(b""), (Form::Empty, Vec::new()));
        assert_eq!(read(b"\x1f"), (Form::Binary, b"\x1f".to_vec()));
        // A text report cut inside its first words is not a text report.
        assert_eq!(
            read(b"JAVA PROFILE 1.0.1"),
            (Form::Binary, b"JAVA PROFILE 1.0.1".to_vec())
        );
    }
}
