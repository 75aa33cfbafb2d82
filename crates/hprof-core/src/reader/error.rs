//! The reader's error type: every failure names the byte offset and the
//! record (or heap sub-record) in which it was detected, so a corrupt or
//! truncated file can be located with a hex dump.

use std::fmt;
use std::io;

/// What went wrong; see [`ReadError`] for where.
#[derive(Debug)]
pub enum ErrorKind {
    /// The input ended inside the named item. `file_end` is the offset at
    /// which the data ran out.
    Truncated { file_end: u64 },
    /// The bytes are present but do not form a valid item (bad header,
    /// length that does not match the fields, unknown sub-record tag,
    /// unknown basic type, ...).
    Corrupt(String),
    /// The underlying reader failed for a reason other than end of input.
    Io(io::Error),
    /// The item is over one of the bounds a reader was given (its size, or
    /// what the file has defined so far), so it was not read: memory stays
    /// bounded whatever the file claims.
    Limit(String),
}

/// An error while reading an HPROF stream.
///
/// `offset` is the file offset (in the uncompressed stream) of the start of
/// the item named by `what`, e.g. `HEAP DUMP SEGMENT sub-record INSTANCE
/// DUMP`. Its `Display` reads like
/// `truncated HEAP DUMP SEGMENT sub-record INSTANCE DUMP at offset 123456 (input ends at offset 123470)`.
#[derive(Debug)]
pub struct ReadError {
    pub kind: ErrorKind,
    pub offset: u64,
    pub what: String,
}

impl ReadError {
    pub fn truncated(what: impl Into<String>, offset: u64, file_end: u64) -> Self {
        ReadError {
            kind: ErrorKind::Truncated { file_end },
            offset,
            what: what.into(),
        }
    }

    pub fn corrupt(what: impl Into<String>, offset: u64, detail: impl Into<String>) -> Self {
        ReadError {
            kind: ErrorKind::Corrupt(detail.into()),
            offset,
            what: what.into(),
        }
    }

    pub fn limit(what: impl Into<String>, offset: u64, detail: impl Into<String>) -> Self {
        ReadError {
            kind: ErrorKind::Limit(detail.into()),
            offset,
            what: what.into(),
        }
    }

    pub fn io(what: impl Into<String>, offset: u64, err: io::Error) -> Self {
        ReadError {
            kind: ErrorKind::Io(err),
            offset,
            what: what.into(),
        }
    }

    /// Converts an error from the byte source (see `source.rs`): an
    /// `UnexpectedEof` becomes [`ErrorKind::Truncated`] ending at `pos`.
    pub(crate) fn from_io(what: impl Into<String>, offset: u64, pos: u64, err: io::Error) -> Self {
        if err.kind() == io::ErrorKind::UnexpectedEof {
            Self::truncated(what, offset, pos)
        } else {
            Self::io(what, offset, err)
        }
    }

    pub fn is_truncated(&self) -> bool {
        matches!(self.kind, ErrorKind::Truncated { .. })
    }

    pub fn is_corrupt(&self) -> bool {
        matches!(self.kind, ErrorKind::Corrupt(_))
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Truncated { file_end } => write!(
                f,
                "truncated {} at offset {} (input ends at offset {})",
                self.what, self.offset, file_end
            ),
            ErrorKind::Corrupt(detail) => {
                write!(
                    f,
                    "corrupt {} at offset {}: {}",
                    self.what, self.offset, detail
                )
            }
            ErrorKind::Io(e) => {
                write!(
                    f,
                    "I/O error reading {} at offset {}: {}",
                    self.what, self.offset, e
                )
            }
            ErrorKind::Limit(detail) => {
                write!(
                    f,
                    "refused {} at offset {}: {}",
                    self.what, self.offset, detail
                )
            }
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}
