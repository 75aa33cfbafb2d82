//! The stream header: `JAVA PROFILE <version>\0`, `u4` identifier size,
//! `u8` milliseconds since the epoch (written as high word, low word).

use std::io::Read;

use super::error::ReadError;
use super::source::Source;

/// Every HPROF label starts with this.
pub const LABEL_PREFIX: &str = "JAVA PROFILE ";

/// Longest label accepted before the terminating NUL; real ones are 18
/// bytes, anything much longer is not an HPROF stream.
const MAX_LABEL: usize = 64;

const WHAT: &str = "file header";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The version part of the label, e.g. `1.0.1` or `1.0.2`.
    pub version: String,
    /// The full label, e.g. `JAVA PROFILE 1.0.2`.
    pub label: String,
    /// Width of identifiers in bytes: 4 or 8.
    pub id_size: u32,
    /// Milliseconds since 1970-01-01 00:00 UTC.
    pub timestamp_ms: u64,
    /// Header length in bytes, i.e. the offset of the first record.
    pub len: u64,
}

impl Header {
    /// True for the `1.0.2` (segmented heap dump) variant.
    pub fn is_segmented_version(&self) -> bool {
        self.version == "1.0.2"
    }
}

/// How a text report (`format=a`) begins; a binary file has a NUL where
/// the text has this comma.
pub const TEXT_REPORT_START: &[u8] = b"JAVA PROFILE 1.0.1,";

/// What readers of binary files say when given a text report.
pub const TEXT_REPORT_MESSAGE: &str = "this is a text report (format=a), not a binary HPROF file: print, histo and export read binary files (run the agent with format=b); flame reads both, and the text itself is meant to be read as it is";

pub(crate) fn read_header<R: Read>(src: &mut Source<R>) -> Result<Header, ReadError> {
    let err = |src: &Source<R>, e| ReadError::from_io(WHAT, 0, src.pos(), e);
    let mut label = Vec::new();
    loop {
        let b = src.u1().map_err(|e| err(src, e))?;
        if b == 0 {
            break;
        }
        label.push(b);
        if label == TEXT_REPORT_START {
            return Err(ReadError::corrupt(WHAT, 0, TEXT_REPORT_MESSAGE));
        }
        if label.len() > MAX_LABEL {
            return Err(ReadError::corrupt(
                WHAT,
                0,
                "not an HPROF file: no NUL-terminated label",
            ));
        }
    }
    let label = match String::from_utf8(label) {
        Ok(s) if s.starts_with(LABEL_PREFIX) => s,
        _ => {
            return Err(ReadError::corrupt(
                WHAT,
                0,
                format!("not an HPROF file: label does not start with {LABEL_PREFIX:?}"),
            ))
        }
    };
    let version = label[LABEL_PREFIX.len()..].to_string();
    let id_at = src.pos();
    let id_size = src.u4().map_err(|e| err(src, e))?;
    if id_size != 4 && id_size != 8 {
        return Err(ReadError::corrupt(
            WHAT,
            0,
            format!("identifier size {id_size} at offset {id_at} (only 4 and 8 are supported)"),
        ));
    }
    let timestamp_ms = src.u8().map_err(|e| err(src, e))?;
    Ok(Header {
        version,
        label,
        id_size,
        timestamp_ms,
        len: src.pos(),
    })
}
