//! Reading objects back from the dump: the index keeps where each object's
//! sub-record is, not its contents (field values, array elements, string
//! text). A plain dump is read where the objects are (`pread`); a gzip
//! dump cannot be entered in the middle, so a batch of objects is read in
//! one pass from its start, stopping after the last one asked for.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use crate::reader::{
    decode_object_head, ArrayKind, BasicType, ObjectHead, GZIP_MAGIC, OBJECT_HEAD_MAX,
};
use crate::vocab::Value;

/// One object's sub-record as read back.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Instance {
        class_id: u64,
        /// Raw field values (class first, then superclasses).
        values: Vec<u8>,
    },
    Array {
        kind: ArrayKind,
        length: u32,
        /// The first elements (as many as asked for).
        elements: Vec<Value>,
    },
}

/// Random access to the dump an index was built from.
pub struct Dump {
    path: PathBuf,
    file: File,
    gzip: bool,
    id_size: u32,
}

/// What to read of one object: its offset, and how many bytes after its
/// head (an instance's values, or as many array elements as wanted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Want {
    pub offset: u64,
    pub payload: u64,
}

/// Most bytes read back for one object (a hostile index cannot make a
/// query allocate more).
const MAX_PAYLOAD: u64 = 16 << 20;

impl Dump {
    pub fn open(path: &Path, id_size: u32) -> io::Result<Dump> {
        let file = File::open(path)?;
        let mut magic = [0u8; 2];
        let gzip = file.read_exact_at(&mut magic, 0).is_ok() && magic == GZIP_MAGIC;
        Ok(Dump {
            path: path.to_path_buf(),
            file,
            gzip,
            id_size,
        })
    }

    /// Reads the objects asked for, in the order asked.
    pub fn read(&self, wants: &[Want]) -> io::Result<Vec<Record>> {
        let spans: Vec<(u64, u64)> = wants
            .iter()
            .map(|w| {
                (
                    w.offset,
                    OBJECT_HEAD_MAX as u64 + w.payload.min(MAX_PAYLOAD),
                )
            })
            .collect();
        let raw = if self.gzip {
            self.read_gzip(&spans)?
        } else {
            spans
                .iter()
                .map(|&(at, len)| {
                    let mut b = vec![0u8; len as usize];
                    let n = read_at_most(&self.file, &mut b, at)?;
                    b.truncate(n);
                    Ok(b)
                })
                .collect::<io::Result<Vec<_>>>()?
        };
        wants
            .iter()
            .zip(raw)
            .map(|(w, b)| self.decode(w, &b))
            .collect()
    }

    fn decode(&self, w: &Want, b: &[u8]) -> io::Result<Record> {
        let bad = |e: String| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", self.path.display()),
            )
        };
        let head = decode_object_head(b, w.offset, self.id_size).map_err(|e| bad(e.to_string()))?;
        let take = |from: usize, n: u64| {
            b.get(from..from + n as usize)
                .ok_or_else(|| bad(format!("object at offset {} is cut short", w.offset)))
        };
        Ok(match head {
            ObjectHead::Instance {
                class_id,
                values_len,
                payload,
                ..
            } => Record::Instance {
                class_id,
                values: take(payload, u64::from(values_len).min(MAX_PAYLOAD))?.to_vec(),
            },
            ObjectHead::Array { head, payload } => {
                let (ty, size) = match head.kind {
                    ArrayKind::Objects { .. } => (BasicType::Object, self.id_size),
                    ArrayKind::Primitives(t) => (t, t.size(self.id_size)),
                };
                let n = u64::from(head.length).min(w.payload.min(MAX_PAYLOAD) / u64::from(size));
                let bytes = take(payload, n * u64::from(size))?;
                Record::Array {
                    kind: head.kind,
                    length: head.length,
                    elements: bytes
                        .chunks_exact(size as usize)
                        .map(|c| Value::decode(ty, c))
                        .collect(),
                }
            }
        })
    }

    fn read_gzip(&self, spans: &[(u64, u64)]) -> io::Result<Vec<Vec<u8>>> {
        let mut order: Vec<usize> = (0..spans.len()).collect();
        order.sort_by_key(|&i| spans[i].0);
        let mut out = vec![Vec::new(); spans.len()];
        let from_start = At {
            file: &self.file,
            pos: 0,
        };
        let mut z = MultiGzDecoder::new(io::BufReader::with_capacity(1 << 16, from_start));
        // Decompressed bytes kept from `window_at` on (spans may overlap).
        let mut window: Vec<u8> = Vec::new();
        let mut window_at = 0u64;
        for i in order {
            let (at, len) = spans[i];
            let end = window_at + window.len() as u64;
            if at >= end {
                io::copy(&mut (&mut z).take(at - end), &mut io::sink())?;
                window.clear();
                window_at = at;
            } else if at > window_at {
                window.drain(..(at - window_at) as usize);
                window_at = at;
            }
            let have = window_at + window.len() as u64;
            if at + len > have {
                (&mut z).take(at + len - have).read_to_end(&mut window)?;
            }
            let from = ((at - window_at) as usize).min(window.len());
            out[i] = window[from..window.len().min(from + len as usize)].to_vec();
        }
        Ok(out)
    }
}

/// A file read from its start by position (no shared file offset).
struct At<'a> {
    file: &'a File,
    pos: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

fn read_at_most(f: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match f.read_at(&mut buf[got..], at + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
