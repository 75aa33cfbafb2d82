//! The index file: named sections of little-endian integers (or bytes).
//!
//! A section is a run of fixed-size chunks anywhere in the file, so that
//! several sections can be written at once while a dump is read (each
//! appends its next chunk at the end of the file) and a large array can be
//! parked on disk and its memory freed between build phases. Readers fetch
//! one element or a range with `pread`, or a whole section back into memory;
//! nothing is memory-mapped, so what a query does not read costs no memory.
//!
//! Layout: a 64-byte header (magic, format version, where the table of
//! contents is), the chunks, the table of contents. Everything read back is
//! checked against the file's length: a damaged or planted index file gives
//! an error, never a panic or a huge allocation.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;

/// First bytes of every index file.
pub const MAGIC: &[u8; 16] = b"hprof-rs heap ix";
/// Bumped whenever what an index holds or how changes.
pub const FORMAT_VERSION: u32 = 3;

const HEADER_LEN: u64 = 64;
/// Bytes per chunk.
const CHUNK_BYTES: u64 = 1 << 20;

/// Section identifiers (see `index.rs` for what each holds).
pub type SectionId = u16;

/// An element type of a section.
pub trait Elem: Copy + Default {
    const SIZE: usize;
    fn put(self, out: &mut [u8]);
    fn get(b: &[u8]) -> Self;
}

impl Elem for u8 {
    const SIZE: usize = 1;
    fn put(self, out: &mut [u8]) {
        out[0] = self;
    }
    fn get(b: &[u8]) -> Self {
        b[0]
    }
}

impl Elem for u32 {
    const SIZE: usize = 4;
    fn put(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        u32::from_le_bytes(b.try_into().unwrap())
    }
}

impl Elem for u64 {
    const SIZE: usize = 8;
    fn put(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        u64::from_le_bytes(b.try_into().unwrap())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Section {
    id: SectionId,
    elem: u8,
    len: u64,
    /// File offset of each chunk, in order; each holds `chunk_elems`
    /// elements but the last.
    chunks: Vec<u64>,
}

impl Section {
    fn chunk_elems(&self) -> u64 {
        CHUNK_BYTES / u64::from(self.elem)
    }
}

fn bad(detail: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, detail.into())
}

/// Writes an index file front to back.
pub struct Writer {
    file: File,
    end: u64,
    sections: Vec<Section>,
    bytes: Vec<u8>,
}

/// One section being appended to (several may be open at once).
pub struct Sink<T: Elem> {
    id: SectionId,
    buf: Vec<T>,
    len: u64,
    chunks: Vec<u64>,
}

impl<T: Elem> Sink<T> {
    #[inline]
    pub fn push(&mut self, w: &mut Writer, v: T) -> io::Result<()> {
        self.buf.push(v);
        if self.buf.len() as u64 == CHUNK_BYTES / T::SIZE as u64 {
            self.flush(w)?;
        }
        Ok(())
    }

    fn flush(&mut self, w: &mut Writer) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.chunks.push(w.append(&self.buf)?);
        self.len += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Closes the section.
    pub fn finish(mut self, w: &mut Writer) -> io::Result<()> {
        self.flush(w)?;
        w.sections.retain(|s| s.id != self.id);
        w.sections.push(Section {
            id: self.id,
            elem: T::SIZE as u8,
            len: self.len,
            chunks: std::mem::take(&mut self.chunks),
        });
        Ok(())
    }
}

impl Writer {
    pub fn new(mut file: File) -> io::Result<Writer> {
        file.write_all(&[0u8; HEADER_LEN as usize])?;
        Ok(Writer {
            file,
            end: HEADER_LEN,
            sections: Vec::new(),
            bytes: Vec::new(),
        })
    }

    fn append<T: Elem>(&mut self, vs: &[T]) -> io::Result<u64> {
        self.bytes.resize(vs.len() * T::SIZE, 0);
        for (out, &v) in self.bytes.chunks_exact_mut(T::SIZE).zip(vs) {
            v.put(out);
        }
        let at = self.end;
        self.file.write_all_at(&self.bytes, at)?;
        self.end += self.bytes.len() as u64;
        Ok(at)
    }

    pub fn sink<T: Elem>(&self, id: SectionId) -> Sink<T> {
        Sink {
            id,
            buf: Vec::new(),
            len: 0,
            chunks: Vec::new(),
        }
    }

    /// Writes a whole section at once.
    pub fn put<T: Elem>(&mut self, id: SectionId, vs: &[T]) -> io::Result<()> {
        let mut s = self.sink::<T>(id);
        for chunk in vs.chunks((CHUNK_BYTES / T::SIZE as u64) as usize) {
            s.chunks.push(self.append(chunk)?);
            s.len += chunk.len() as u64;
        }
        s.finish(self)
    }

    /// A reader of what is written so far (sections parked during the
    /// build are read back through it).
    pub fn reader(&self) -> io::Result<Reader> {
        Ok(Reader {
            file: self.file.try_clone()?,
            sections: self.sections.clone(),
        })
    }

    /// Writes the table of contents and the header; the file is complete.
    pub fn finish(self) -> io::Result<File> {
        let mut toc = Vec::new();
        toc.extend_from_slice(&(self.sections.len() as u32).to_le_bytes());
        for s in &self.sections {
            toc.extend_from_slice(&s.id.to_le_bytes());
            toc.push(s.elem);
            toc.push(0);
            toc.extend_from_slice(&s.len.to_le_bytes());
            toc.extend_from_slice(&(s.chunks.len() as u32).to_le_bytes());
            for c in &s.chunks {
                toc.extend_from_slice(&c.to_le_bytes());
            }
        }
        let at = self.end;
        self.file.write_all_at(&toc, at)?;
        let mut head = [0u8; HEADER_LEN as usize];
        head[..16].copy_from_slice(MAGIC);
        head[16..20].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        head[24..32].copy_from_slice(&at.to_le_bytes());
        head[32..40].copy_from_slice(&(toc.len() as u64).to_le_bytes());
        self.file.write_all_at(&head, 0)?;
        Ok(self.file)
    }
}

/// Reads sections of a complete index file (or of one being written).
pub struct Reader {
    file: File,
    sections: Vec<Section>,
}

impl Reader {
    /// Opens a complete index file, checking its structure.
    pub fn open(file: File) -> io::Result<Reader> {
        let file_len = file.metadata()?.len();
        let mut head = [0u8; HEADER_LEN as usize];
        file.read_exact_at(&mut head, 0)
            .map_err(|_| bad("shorter than an index header"))?;
        if &head[..16] != MAGIC {
            return Err(bad("not an hprof-rs heap index"));
        }
        let version = u32::from_le_bytes(head[16..20].try_into().unwrap());
        if version != FORMAT_VERSION {
            return Err(bad(format!(
                "index format {version}, this hprof-rs writes {FORMAT_VERSION}"
            )));
        }
        let at = u64::from_le_bytes(head[24..32].try_into().unwrap());
        let len = u64::from_le_bytes(head[32..40].try_into().unwrap());
        if at < HEADER_LEN || at.checked_add(len) != Some(file_len) || len > (64 << 20) {
            return Err(bad("table of contents out of place (an unfinished index?)"));
        }
        let mut toc = vec![0u8; len as usize];
        file.read_exact_at(&mut toc, at)?;
        let sections = parse_toc(&toc, at)?;
        Ok(Reader { file, sections })
    }

    fn section(&self, id: SectionId, elem: usize) -> io::Result<&Section> {
        let s = self
            .sections
            .iter()
            .find(|s| s.id == id)
            .ok_or_else(|| bad(format!("index has no section {id}")))?;
        if usize::from(s.elem) != elem {
            return Err(bad(format!("section {id} has {}-byte elements", s.elem)));
        }
        Ok(s)
    }

    /// Number of elements of a section (0 when absent).
    pub fn len(&self, id: SectionId) -> u64 {
        self.sections
            .iter()
            .find(|s| s.id == id)
            .map_or(0, |s| s.len)
    }

    /// `count` elements from `start`.
    pub fn range<T: Elem>(&self, id: SectionId, start: u64, count: u64) -> io::Result<Vec<T>> {
        let mut out = Vec::new();
        self.range_into(id, start, count, &mut out, &mut Vec::new())?;
        Ok(out)
    }

    /// [`Reader::range`] into `out` (emptied first), through `bytes`: a
    /// caller reading many ranges reuses both (fresh buffers of a chunk
    /// each were fresh pages each).
    fn range_into<T: Elem>(
        &self,
        id: SectionId,
        start: u64,
        count: u64,
        out: &mut Vec<T>,
        bytes: &mut Vec<u8>,
    ) -> io::Result<()> {
        let s = self.section(id, T::SIZE)?;
        let end = start
            .checked_add(count)
            .filter(|&e| e <= s.len)
            .ok_or_else(|| bad(format!("section {id}: {start}+{count} beyond {}", s.len)))?;
        out.clear();
        out.try_reserve_exact(count as usize).map_err(|_| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("section {id}: no memory for {count} elements"),
            )
        })?;
        super::alloc::advise(out);
        let per = s.chunk_elems();
        let mut i = start;
        while i < end {
            let c = i / per;
            let within = i % per;
            let take = (per - within).min(end - i);
            bytes.resize(take as usize * T::SIZE, 0);
            let at = s.chunks[c as usize] + within * T::SIZE as u64;
            self.file.read_exact_at(bytes, at)?;
            out.extend(bytes.chunks_exact(T::SIZE).map(T::get));
            i += take;
        }
        Ok(())
    }

    /// One element.
    pub fn get<T: Elem>(&self, id: SectionId, i: u64) -> io::Result<T> {
        let s = self.section(id, T::SIZE)?;
        if i >= s.len {
            return Err(bad(format!("section {id}: element {i} of {}", s.len)));
        }
        let per = s.chunk_elems();
        let mut b = [0u8; 8];
        let b = &mut b[..T::SIZE];
        self.file
            .read_exact_at(b, s.chunks[(i / per) as usize] + (i % per) * T::SIZE as u64)?;
        Ok(T::get(b))
    }

    /// A whole section.
    pub fn all<T: Elem>(&self, id: SectionId) -> io::Result<Vec<T>> {
        let n = self.len(id);
        self.range(id, 0, n)
    }

    /// Calls `f` with consecutive runs of a section's elements and the
    /// index of each run's first, a chunk at a time (no whole copy).
    pub fn for_each<T: Elem>(&self, id: SectionId, mut f: impl FnMut(u64, &[T])) -> io::Result<()> {
        let s = self.section(id, T::SIZE)?;
        let per = s.chunk_elems();
        let (mut run, mut bytes) = (Vec::new(), Vec::new());
        let mut i = 0;
        while i < s.len {
            let take = per.min(s.len - i);
            self.range_into(id, i, take, &mut run, &mut bytes)?;
            f(i, &run);
            i += take;
        }
        Ok(())
    }
}

fn parse_toc(toc: &[u8], toc_at: u64) -> io::Result<Vec<Section>> {
    let mut at = 0usize;
    let mut take = |n: usize| -> io::Result<&[u8]> {
        let b = toc
            .get(at..at + n)
            .ok_or_else(|| bad("table of contents cut short"))?;
        at += n;
        Ok(b)
    };
    let count = u32::from_le_bytes(take(4)?.try_into().unwrap());
    let mut sections = Vec::new();
    // Sections do not overlap: together they fit between the header and
    // the table. A table claiming more (chunks named twice) would have a
    // read of a section allocate beyond the file.
    let mut claimed = 0u64;
    for _ in 0..count {
        let id = u16::from_le_bytes(take(2)?.try_into().unwrap());
        let elem = take(2)?[0];
        let len = u64::from_le_bytes(take(8)?.try_into().unwrap());
        let nchunks = u32::from_le_bytes(take(4)?.try_into().unwrap()) as usize;
        if ![1u8, 4, 8].contains(&elem) {
            return Err(bad(format!("section {id}: element size {elem}")));
        }
        let per = CHUNK_BYTES / u64::from(elem);
        if len.div_ceil(per) != nchunks as u64 {
            return Err(bad(format!(
                "section {id}: {nchunks} chunks for {len} elements"
            )));
        }
        claimed = len
            .checked_mul(u64::from(elem))
            .and_then(|b| b.checked_add(claimed))
            .filter(|&c| c <= toc_at - HEADER_LEN)
            .ok_or_else(|| bad(format!("section {id}: more bytes than the file holds")))?;
        let mut chunks = Vec::with_capacity(nchunks.min(toc.len() / 8));
        for c in 0..nchunks {
            let off = u64::from_le_bytes(take(8)?.try_into().unwrap());
            let elems = if c + 1 == nchunks {
                len - per * c as u64
            } else {
                per
            };
            let end = off.checked_add(elems * u64::from(elem));
            if off < HEADER_LEN || end.is_none_or(|e| e > toc_at) {
                return Err(bad(format!("section {id}: chunk {c} outside the file")));
            }
            chunks.push(off);
        }
        sections.push(Section {
            id,
            elem,
            len,
            chunks,
        });
    }
    Ok(sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> File {
        let p = std::env::temp_dir().join(format!(
            "hprof-rs-store-test-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        std::fs::remove_file(&p).unwrap();
        f
    }

    #[test]
    fn interleaved_sections_read_back_whole_in_ranges_and_one_by_one() {
        let mut w = Writer::new(temp()).unwrap();
        let mut a = w.sink::<u32>(1);
        let mut b = w.sink::<u64>(2);
        let n = 700_000u64; // several chunks each
        for i in 0..n {
            a.push(&mut w, i as u32 * 3).unwrap();
            b.push(&mut w, i << 33).unwrap();
        }
        a.finish(&mut w).unwrap();
        b.finish(&mut w).unwrap();
        w.put::<u8>(3, b"meta").unwrap();
        let parked = w.reader().unwrap();
        assert_eq!(parked.get::<u32>(1, 5).unwrap(), 15);
        let r = Reader::open(w.finish().unwrap()).unwrap();
        assert_eq!(r.all::<u8>(3).unwrap(), b"meta");
        let all: Vec<u32> = r.all(1).unwrap();
        assert_eq!(all.len() as u64, n);
        assert!(all.iter().enumerate().all(|(i, &v)| v == i as u32 * 3));
        assert_eq!(r.range::<u64>(2, 262_140, 10).unwrap()[5], 262_145u64 << 33);
        assert_eq!(r.get::<u64>(2, n - 1).unwrap(), (n - 1) << 33);
        assert!(r.get::<u64>(2, n).is_err());
        assert!(r.range::<u32>(1, n - 1, 2).is_err());
        assert!(r.all::<u64>(1).is_err(), "wrong element size");
        let mut seen = 0;
        r.for_each::<u32>(1, |first, run| {
            assert_eq!(first, seen);
            seen += run.len() as u64;
        })
        .unwrap();
        assert_eq!(seen, n);
    }

    #[test]
    fn damaged_files_are_refused() {
        let mut w = Writer::new(temp()).unwrap();
        w.put::<u32>(1, &[1, 2, 3]).unwrap();
        let f = w.finish().unwrap();
        let len = f.metadata().unwrap().len();
        // Truncated: the table of contents no longer ends the file.
        f.set_len(len - 1).unwrap();
        assert!(Reader::open(f.try_clone().unwrap()).is_err());
        // A chunk pointing past the table of contents.
        f.set_len(len).unwrap();
        let toc_at = len - (4 + 2 + 2 + 8 + 4 + 8);
        f.write_all_at(&(len * 2).to_le_bytes(), len - 8).unwrap();
        assert!(Reader::open(f.try_clone().unwrap()).is_err());
        f.write_all_at(&toc_at.to_le_bytes(), len - 8).unwrap();
        assert!(Reader::open(f.try_clone().unwrap()).is_err());
        f.write_all_at(&HEADER_LEN.to_le_bytes(), len - 8).unwrap();
        assert!(Reader::open(f.try_clone().unwrap()).is_ok());
        f.write_all_at(b"X", 0).unwrap();
        assert!(Reader::open(f).is_err());
    }
}
