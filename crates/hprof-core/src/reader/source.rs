//! Byte-level input: a buffered reader that knows its offset in the
//! (uncompressed) stream, plus a bounded cursor over an in-memory record
//! body. All integers in HPROF are big-endian.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};

use super::gz::Input;

/// An input that can move forward without reading the bytes it passes:
/// a plain file seeks over the array data and instance values a reader
/// skips, so a histogram of a 1 GB dump reads only what it counts.
pub trait SkipForward: Read {
    /// Moves `n` bytes forward when at least `n` bytes are left and returns
    /// true; otherwise does not move and returns false (the caller reads
    /// on, so a truncated input is still reported where it ends).
    fn skip_forward(&mut self, n: u64) -> io::Result<bool>;
}

impl SkipForward for File {
    fn skip_forward(&mut self, n: u64) -> io::Result<bool> {
        let at = self.stream_position()?;
        let len = self.metadata()?.len();
        if at.checked_add(n).is_none_or(|end| end > len) {
            return Ok(false);
        }
        self.seek(SeekFrom::Current(n as i64))?;
        Ok(true)
    }
}

/// Skips shorter than this are read through the buffer: a seek costs
/// three system calls and drops the buffered bytes.
const SEEK_AT_LEAST: u64 = 256 * 1024;

/// Buffer size for the underlying reader; heap dumps are read sequentially.
const BUF_SIZE: usize = 64 * 1024;

/// Decodes a big-endian identifier of 4 or 8 bytes.
#[inline]
pub(crate) fn id_from_be(bytes: &[u8]) -> u64 {
    match *bytes {
        [a, b, c, d] => u64::from(u32::from_be_bytes([a, b, c, d])),
        [a, b, c, d, e, f, g, h] => u64::from_be_bytes([a, b, c, d, e, f, g, h]),
        _ => bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
    }
}

pub(crate) struct Source<R: Read> {
    r: BufReader<Input<R>>,
    pos: u64,
    /// While set, every byte consumed (read or skipped) is appended here
    /// too: a caller that copies records on (the agent re-emitting the VM's
    /// heap dump) gets their exact bytes without a second read.
    pub(crate) capture: Option<Vec<u8>>,
    /// Set for inputs that can skip without reading ([`SkipForward`]).
    skipper: Option<fn(&mut R, u64) -> io::Result<bool>>,
}

fn skip_input<R: SkipForward>(r: &mut R, n: u64) -> io::Result<bool> {
    r.skip_forward(n)
}

impl<R: SkipForward> Source<R> {
    /// Lets [`Source::skip`] move over long stretches without reading them
    /// (plain input only: a gzip stream must be decompressed anyway).
    pub(crate) fn allow_seeking(&mut self) {
        self.skipper = Some(skip_input::<R>);
    }
}

impl<R: Read> Source<R> {
    pub(crate) fn new(input: Input<R>) -> Self {
        Source {
            r: BufReader::with_capacity(BUF_SIZE, input),
            pos: 0,
            capture: None,
            skipper: None,
        }
    }

    /// Offset of the next byte to be read.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    pub(crate) fn is_gzip(&self) -> bool {
        self.r.get_ref().is_gzip()
    }

    /// True when no byte is left.
    pub(crate) fn at_eof(&mut self) -> io::Result<bool> {
        loop {
            match self.r.fill_buf() {
                Ok(b) => return Ok(b.is_empty()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Refills the buffer when it is empty and returns how many bytes it
    /// holds (0 at the end of input). With [`Source::buffer`] and
    /// [`Source::consume`], the heap scan's (`scan.rs`) way of reading a
    /// payload where it lies.
    pub(crate) fn fill(&mut self) -> io::Result<usize> {
        loop {
            match self.r.fill_buf() {
                Ok(b) => return Ok(b.len()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The buffered bytes (see [`Source::fill`]).
    pub(crate) fn buffer(&self) -> &[u8] {
        self.r.buffer()
    }

    /// Consumes `n` of the buffered bytes.
    pub(crate) fn consume(&mut self, n: usize) {
        if let Some(c) = self.capture.as_mut() {
            c.extend_from_slice(&self.r.buffer()[..n]);
        }
        self.r.consume(n);
        self.pos += n as u64;
    }

    /// Fills `buf` completely or fails with `UnexpectedEof`; `pos` counts
    /// the bytes actually consumed, so after an EOF it is the input's end.
    #[inline]
    pub(crate) fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        // Fast path: the bytes are buffered already (nearly always: fields
        // are a few bytes and the buffer holds 64 KiB).
        let n = buf.len();
        if let Some(b) = self.r.buffer().get(..n) {
            buf.copy_from_slice(b);
            if let Some(c) = self.capture.as_mut() {
                c.extend_from_slice(b);
            }
            self.r.consume(n);
            self.pos += n as u64;
            return Ok(());
        }
        let mut got = 0;
        while got < buf.len() {
            match self.r.read(&mut buf[got..]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    if let Some(c) = self.capture.as_mut() {
                        c.extend_from_slice(&buf[got..got + n]);
                    }
                    got += n;
                    self.pos += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Discards `n` bytes without allocating (seeking over long stretches
    /// when the input allows it).
    pub(crate) fn skip(&mut self, mut n: u64) -> io::Result<()> {
        let buffered = self.r.buffer().len() as u64;
        if n >= buffered + SEEK_AT_LEAST && self.capture.is_none() {
            if let (Some(skipper), Input::Plain(chain)) = (self.skipper, self.r.get_mut()) {
                // The peeked header bytes are long gone once a record body
                // is skipped; if not, read on.
                let (peeked, inner) = chain.get_mut();
                if peeked.position() >= peeked.get_ref().len() as u64
                    && skipper(inner, n - buffered)?
                {
                    self.r.consume(buffered as usize);
                    self.pos += n;
                    return Ok(());
                }
            }
        }
        while n > 0 {
            let avail = match self.r.fill_buf() {
                Ok(b) => b.len(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let take = avail.min(usize::try_from(n).unwrap_or(usize::MAX));
            if let Some(c) = self.capture.as_mut() {
                c.extend_from_slice(&self.r.buffer()[..take]);
            }
            self.r.consume(take);
            self.pos += take as u64;
            n -= take as u64;
        }
        Ok(())
    }

    /// Reads `n` bytes into a new vector. The vector grows with the data
    /// actually present, so a corrupt huge length in a short file does not
    /// allocate the claimed size up front.
    pub(crate) fn read_vec(&mut self, n: u64) -> io::Result<Vec<u8>> {
        let mut v = Vec::with_capacity(usize::try_from(n.min(BUF_SIZE as u64)).unwrap_or(0));
        let got = (&mut self.r).take(n).read_to_end(&mut v)?;
        self.pos += got as u64;
        if let Some(c) = self.capture.as_mut() {
            c.extend_from_slice(&v);
        }
        if (got as u64) < n {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(v)
    }

    pub(crate) fn u1(&mut self) -> io::Result<u8> {
        let mut b = [0u8; 1];
        self.read_exact(&mut b)?;
        Ok(b[0])
    }

    pub(crate) fn u2(&mut self) -> io::Result<u16> {
        let mut b = [0u8; 2];
        self.read_exact(&mut b)?;
        Ok(u16::from_be_bytes(b))
    }

    pub(crate) fn u4(&mut self) -> io::Result<u32> {
        let mut b = [0u8; 4];
        self.read_exact(&mut b)?;
        Ok(u32::from_be_bytes(b))
    }

    pub(crate) fn u8(&mut self) -> io::Result<u64> {
        let mut b = [0u8; 8];
        self.read_exact(&mut b)?;
        Ok(u64::from_be_bytes(b))
    }

    pub(crate) fn id(&mut self, id_size: u32) -> io::Result<u64> {
        let mut b = [0u8; 8];
        let b = &mut b[..id_size as usize];
        self.read_exact(b)?;
        Ok(id_from_be(b))
    }
}

/// Ran past the end of a record body: the body is shorter than its fields.
#[derive(Debug)]
pub(crate) struct Overrun;

/// A cursor over a complete record body held in memory.
pub(crate) struct Body<'a> {
    buf: &'a [u8],
    at: usize,
    id_size: u32,
}

impl<'a> Body<'a> {
    pub(crate) fn new(buf: &'a [u8], id_size: u32) -> Self {
        Body {
            buf,
            at: 0,
            id_size,
        }
    }

    pub(crate) fn id_size(&self) -> usize {
        self.id_size as usize
    }

    pub(crate) fn consumed(&self) -> usize {
        self.at
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.at
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], Overrun> {
        if self.remaining() < n {
            return Err(Overrun);
        }
        let s = &self.buf[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    pub(crate) fn u1(&mut self) -> Result<u8, Overrun> {
        Ok(self.bytes(1)?[0])
    }

    pub(crate) fn u2(&mut self) -> Result<u16, Overrun> {
        Ok(u16::from_be_bytes(self.bytes(2)?.try_into().unwrap()))
    }

    pub(crate) fn u4(&mut self) -> Result<u32, Overrun> {
        Ok(u32::from_be_bytes(self.bytes(4)?.try_into().unwrap()))
    }

    pub(crate) fn i4(&mut self) -> Result<i32, Overrun> {
        Ok(self.u4()? as i32)
    }

    pub(crate) fn u8(&mut self) -> Result<u64, Overrun> {
        Ok(u64::from_be_bytes(self.bytes(8)?.try_into().unwrap()))
    }

    pub(crate) fn id(&mut self) -> Result<u64, Overrun> {
        Ok(id_from_be(self.bytes(self.id_size as usize)?))
    }

    /// Reads a count-prefixed list, refusing counts that cannot fit in the
    /// bytes left (so a corrupt count never triggers a huge allocation).
    pub(crate) fn list<T>(
        &mut self,
        count: u64,
        item_size: usize,
        mut item: impl FnMut(&mut Self) -> Result<T, Overrun>,
    ) -> Result<Vec<T>, Overrun> {
        if count.saturating_mul(item_size as u64) > self.remaining() as u64 {
            return Err(Overrun);
        }
        let mut v = Vec::with_capacity(count as usize);
        for _ in 0..count {
            v.push(item(self)?);
        }
        Ok(v)
    }
}
