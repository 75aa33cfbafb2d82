//! Errors of the class-file parser, writer and rewriter.

use std::fmt;

/// Everything that can go wrong while reading, writing or rewriting a class file.
///
/// Class-level problems (truncated file, unknown constant tag, unsupported
/// version) are returned from [`crate::inject`] as `Err`; problems confined
/// to one method are turned into a [`crate::SkipReason`] for that method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BciError {
    /// The input ended while reading `what` at byte `offset`.
    Truncated { what: &'static str, offset: usize },
    /// The first four bytes are not 0xCAFEBABE.
    BadMagic(u32),
    /// Major version outside 45..=69 (JDK 1.1 to JDK 25).
    UnsupportedVersion { major: u16, minor: u16 },
    /// A constant-pool tag this parser does not know.
    UnknownConstantTag { tag: u8, index: u16 },
    /// A constant-pool index is out of range or refers to the wrong kind of entry.
    BadConstantIndex { index: u16, expected: &'static str },
    /// Bytes left after the last class attribute.
    TrailingBytes(usize),
    /// Adding constants would exceed the 65535-entry limit.
    ConstantPoolOverflow,
    /// Malformed byte code (bad opcode, branch into the middle of an instruction, ...).
    BadCode { offset: u32, msg: String },
    /// The method would exceed 65535 bytes of code after injection.
    CodeTooLarge { new_length: usize },
    /// A StackMapTable that cannot be decoded or re-derived.
    BadStackMap(String),
    /// Anything else that makes the structure inconsistent.
    Malformed(String),
}

impl fmt::Display for BciError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BciError::Truncated { what, offset } => {
                write!(
                    f,
                    "class file truncated while reading {what} at byte {offset}"
                )
            }
            BciError::BadMagic(m) => write!(f, "bad magic 0x{m:08X}"),
            BciError::UnsupportedVersion { major, minor } => {
                write!(f, "unsupported class file version {major}.{minor}")
            }
            BciError::UnknownConstantTag { tag, index } => {
                write!(f, "unknown constant pool tag {tag} at index {index}")
            }
            BciError::BadConstantIndex { index, expected } => {
                write!(f, "constant pool index {index} is not a valid {expected}")
            }
            BciError::TrailingBytes(n) => write!(f, "{n} trailing bytes after the class file"),
            BciError::ConstantPoolOverflow => write!(f, "constant pool would exceed 65535 entries"),
            BciError::BadCode { offset, msg } => write!(f, "bad byte code at {offset}: {msg}"),
            BciError::CodeTooLarge { new_length } => {
                write!(
                    f,
                    "code would be {new_length} bytes after injection (limit 65535)"
                )
            }
            BciError::BadStackMap(m) => write!(f, "bad StackMapTable: {m}"),
            BciError::Malformed(m) => write!(f, "malformed class file: {m}"),
        }
    }
}

impl std::error::Error for BciError {}

pub type Result<T> = std::result::Result<T, BciError>;
