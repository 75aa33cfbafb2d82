//! The streaming reader: header, then one top-level record at a time, and
//! inside heap dump records one sub-record at a time.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::error::ReadError;
use super::gz::Input;
use super::header::{read_header, Header};
use super::heap::{read_sub_record, HeapSubRecord, ReadOptions, Segment};
use super::records::{decode_body, record_label, tag, Record, RecordBody};
use super::source::{Body, SkipForward, Source};

/// Streaming HPROF reader over any `Read` (buffered internally; gzip input
/// is detected by its magic bytes and decompressed on the fly). Offsets in
/// records and errors are positions in the uncompressed stream.
///
/// Usage: call [`next_record`](Self::next_record) until `None`. After a
/// `HeapDumpStart` record, pull sub-records with
/// [`next_heap_sub_record`](Self::next_heap_sub_record) until it returns
/// `None` (end of that record); calling `next_record` early skips the rest of
/// the heap dump record. After an error the reader's position is undefined
/// and it should not be used further.
pub struct HprofReader<R: Read> {
    pub(super) src: Source<R>,
    pub(super) header: Header,
    options: ReadOptions,
    /// The open heap dump record (`scan.rs` reads it too).
    pub(super) segment: Option<Segment>,
}

/// Longest body of a record decoded in memory (every record but heap
/// dumps): far above what a profile holds (a TRACE of the deepest stack
/// the agent captures, 2^20 frames, is 8 MiB; a million allocation sites
/// 25 MB), and a record claiming more is refused before a byte of it is
/// read.
pub const MAX_RECORD: u32 = 64 << 20;
/// Longest UTF8 text kept: HotSpot's symbols are at most 65535 bytes; a
/// longer string (a thread name) is cut there, the rest skipped, and ends
/// with `…`.
pub const MAX_NAME: usize = 64 << 10;
/// What the tools (`print`, `histo`, `flame`, the UI) keep at most of a
/// file's definitions (names, classes, frames, traces, each counted with
/// [`DEFINITION_OVERHEAD`]), so that a small compressed file cannot make
/// them hold gigabytes: a large application's heap dump defines some tens
/// of MiB.
pub const DEFINITIONS_LIMIT: u64 = 256 << 20;
/// What one kept definition costs besides its bytes (the maps that hold
/// it), for [`DEFINITIONS_LIMIT`].
pub const DEFINITION_OVERHEAD: u64 = 64;

/// Opens a file (plain or gzip-compressed) and reads its header.
pub fn open_path(path: impl AsRef<Path>) -> Result<HprofReader<File>, ReadError> {
    let path = path.as_ref();
    let f =
        File::open(path).map_err(|e| ReadError::io(format!("file {}", path.display()), 0, e))?;
    HprofReader::seekable(f, ReadOptions::full())
}

impl<R: SkipForward> HprofReader<R> {
    /// Like [`with_options`](Self::with_options) for an input that can skip
    /// without reading (a plain file): payloads the options skip are sought
    /// over, not read.
    pub fn seekable(r: R, options: ReadOptions) -> Result<Self, ReadError> {
        let mut reader = Self::with_options(r, options)?;
        reader.src.allow_seeking();
        Ok(reader)
    }
}

impl<R: Read> HprofReader<R> {
    /// Reads the header; sub-record payloads are kept ([`ReadOptions::full`]).
    pub fn new(r: R) -> Result<Self, ReadError> {
        Self::with_options(r, ReadOptions::full())
    }

    pub fn with_options(r: R, options: ReadOptions) -> Result<Self, ReadError> {
        let input = Input::detect(r).map_err(|e| ReadError::io("file header", 0, e))?;
        let mut src = Source::new(input);
        let header = read_header(&mut src)?;
        Ok(HprofReader {
            src,
            header,
            options,
            segment: None,
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn id_size(&self) -> u32 {
        self.header.id_size
    }

    pub fn options(&self) -> ReadOptions {
        self.options
    }

    /// Changes which payloads are kept; takes effect from the next
    /// sub-record.
    pub fn set_options(&mut self, options: ReadOptions) {
        self.options = options;
    }

    /// True if the input was gzip-compressed.
    pub fn is_gzip(&self) -> bool {
        self.src.is_gzip()
    }

    /// Offset of the next unread byte (uncompressed stream).
    pub fn position(&self) -> u64 {
        self.src.pos()
    }

    /// True between a `HeapDumpStart` and the end of that record's body.
    pub fn in_heap_dump(&self) -> bool {
        self.segment.is_some_and(|s| self.src.pos() < s.end)
    }

    /// The next top-level record, or `None` at a clean end of input.
    pub fn next_record(&mut self) -> Result<Option<Record>, ReadError> {
        if let Some(seg) = self.segment.take() {
            let left = seg.end.saturating_sub(self.src.pos());
            self.src.skip(left).map_err(|e| {
                ReadError::from_io(
                    format!("{} record", record_label(seg.tag)),
                    seg.record_offset,
                    self.src.pos(),
                    e,
                )
            })?;
        }
        let offset = self.src.pos();
        let eof = self
            .src
            .at_eof()
            .map_err(|e| ReadError::io("record header", offset, e))?;
        if eof {
            return Ok(None);
        }
        let mut head = [0u8; 9];
        self.src
            .read_exact(&mut head)
            .map_err(|e| ReadError::from_io("record header", offset, self.src.pos(), e))?;
        let t = head[0];
        let time = u32::from_be_bytes(head[1..5].try_into().unwrap());
        let length = u32::from_be_bytes(head[5..9].try_into().unwrap());
        let what = || format!("{} record", record_label(t));
        let body = match t {
            tag::HEAP_DUMP | tag::HEAP_DUMP_SEGMENT => {
                self.segment = Some(Segment {
                    tag: t,
                    record_offset: offset,
                    end: self.src.pos() + u64::from(length),
                });
                RecordBody::HeapDumpStart {
                    segment: t == tag::HEAP_DUMP_SEGMENT,
                }
            }
            tag::HEAP_DUMP_END if length != 0 => {
                return Err(ReadError::corrupt(
                    what(),
                    offset,
                    format!("length {length}, expected 0"),
                ));
            }
            tag::UTF8 => self.utf8(offset, length)?,
            t if super::records::record_name(t).is_some() => {
                if length > MAX_RECORD {
                    return Err(ReadError::limit(
                        what(),
                        offset,
                        format!(
                            "its length {length} is over {} MiB, the longest record this reader \
                             decodes (a damaged or hostile file?)",
                            MAX_RECORD >> 20
                        ),
                    ));
                }
                let bytes = self
                    .src
                    .read_vec(u64::from(length))
                    .map_err(|e| ReadError::from_io(what(), offset, self.src.pos(), e))?;
                let mut b = Body::new(&bytes, self.header.id_size);
                let body = decode_body(t, &mut b).map_err(|_| {
                    ReadError::corrupt(
                        what(),
                        offset,
                        format!("length {length} is too short for its fields"),
                    )
                })?;
                if b.remaining() != 0 {
                    return Err(ReadError::corrupt(
                        what(),
                        offset,
                        format!("length {length} but its fields use {} bytes", b.consumed()),
                    ));
                }
                body
            }
            _ => {
                self.src
                    .skip(u64::from(length))
                    .map_err(|e| ReadError::from_io(what(), offset, self.src.pos(), e))?;
                RecordBody::Unknown
            }
        };
        Ok(Some(Record {
            tag: t,
            time,
            offset,
            length,
            body,
        }))
    }

    /// A UTF8 record: its identifier and at most [`MAX_NAME`] bytes of
    /// text (cut at a character, `…` added); the rest is skipped.
    fn utf8(&mut self, offset: u64, length: u32) -> Result<RecordBody, ReadError> {
        let what = || "UTF8 record".to_string();
        let id_size = self.header.id_size;
        if length < id_size {
            return Err(ReadError::corrupt(
                what(),
                offset,
                format!("length {length} is too short for its fields"),
            ));
        }
        let io = |r: &Self, e| ReadError::from_io(what(), offset, r.src.pos(), e);
        let id = self.src.id(id_size).map_err(|e| io(self, e))?;
        let len = u64::from(length - id_size);
        let kept = len.min(MAX_NAME as u64);
        let mut bytes = self.src.read_vec(kept).map_err(|e| io(self, e))?;
        if kept < len {
            self.src.skip(len - kept).map_err(|e| io(self, e))?;
            // Back to the start of the character the cut fell in.
            while bytes.last().is_some_and(|&b| b & 0xC0 == 0x80) {
                bytes.pop();
            }
            if bytes.last().is_some_and(|&b| b >= 0xC0) {
                bytes.pop();
            }
        }
        let mut text = super::records::decode_java_utf8(&bytes);
        if kept < len {
            text.push('…');
        }
        Ok(RecordBody::Utf8 { id, text })
    }

    /// Like [`next_heap_sub_record`](Self::next_heap_sub_record), and
    /// appends the sub-record's exact bytes to `raw` (checked as strictly:
    /// a sub-record that does not fit its record is an error). Payloads the
    /// read options skip are copied to `raw` without being decoded.
    pub fn next_heap_sub_record_raw(
        &mut self,
        raw: &mut Vec<u8>,
    ) -> Result<Option<HeapSubRecord>, ReadError> {
        self.src.capture = Some(std::mem::take(raw));
        let r = self.next_heap_sub_record();
        *raw = self.src.capture.take().unwrap_or_default();
        r
    }

    /// The next sub-record of the current heap dump record, or `None` when
    /// its body is exhausted (or no heap dump record is open).
    pub fn next_heap_sub_record(&mut self) -> Result<Option<HeapSubRecord>, ReadError> {
        let Some(seg) = self.segment else {
            return Ok(None);
        };
        if self.src.pos() >= seg.end {
            self.segment = None;
            return Ok(None);
        }
        read_sub_record(&mut self.src, seg, self.header.id_size, self.options).map(Some)
    }
}
