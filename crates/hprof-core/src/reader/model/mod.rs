//! In-memory model of a whole HPROF file, for tests and small files.

pub mod collect;

pub use collect::{collect, read_all, HeapDump, LoadedClass, Parsed, RecordInfo};
