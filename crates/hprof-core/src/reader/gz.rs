//! Transparent gzip support: a stream starting with the gzip magic bytes
//! `1f 8b` is decompressed on the fly (multi-member streams too, as written
//! by `jcmd GC.heap_dump -gz=N`). HPROF streams always start with
//! `JAVA PROFILE`, so the two cannot be confused.

use std::io::{self, Chain, Cursor, Read};

use flate2::read::MultiGzDecoder;

/// The gzip magic number (RFC 1952).
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

type Peeked<R> = Chain<Cursor<Vec<u8>>, R>;

/// The raw input of a reader: either the bytes as they come, or the
/// decompressed bytes of a gzip stream.
pub(crate) enum Input<R: Read> {
    Plain(Peeked<R>),
    Gzip(Box<MultiGzDecoder<Peeked<R>>>),
}

impl<R: Read> Input<R> {
    /// Peeks at the first two bytes of `r` and chooses plain or gzip input.
    /// The peeked bytes are put back in front of the stream.
    pub(crate) fn detect(mut r: R) -> io::Result<Self> {
        let mut head = [0u8; 2];
        let mut got = 0;
        while got < head.len() {
            match r.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let peeked = Cursor::new(head[..got].to_vec()).chain(r);
        if got == 2 && head == GZIP_MAGIC {
            Ok(Input::Gzip(Box::new(MultiGzDecoder::new(peeked))))
        } else {
            Ok(Input::Plain(peeked))
        }
    }

    pub(crate) fn is_gzip(&self) -> bool {
        matches!(self, Input::Gzip(_))
    }
}

impl<R: Read> Read for Input<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::Plain(r) => r.read(buf),
            Input::Gzip(r) => r.read(buf),
        }
    }
}
