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
            t if super::records::record_name(t).is_some() => {
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
