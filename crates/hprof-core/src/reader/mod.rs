//! Streaming reader for binary HPROF files: our agent's `format=b` output
//! (4- or 8-byte IDs, 1.0.1 with HEAP DUMP records or 1.0.2 with HEAP DUMP
//! SEGMENTs) and HotSpot's own heap dumps (`jcmd GC.heap_dump`, `jmap`),
//! plain or gzip-compressed.
//!
//! * [`HprofReader`] reads the header, then one [`Record`] at a time; inside
//!   heap dump records it yields one [`HeapSubRecord`] at a time. Nothing is
//!   loaded whole; [`ReadOptions::skip_bodies`] skips instance values and
//!   array data without allocating.
//! * [`ClassLayouts`] decodes INSTANCE DUMP field values from CLASS DUMPs,
//!   in the same pass (HotSpot writes classes first) or a later one (our
//!   agent writes them last).
//! * [`read_all`] collects a whole (small) file into [`Parsed`] for tests.
//! * [`histogram`] computes a class histogram in one streaming pass.
//! * [`HprofReader::scan_heap_record`] visits a heap dump record's objects
//!   as borrowed views, for one pass over every object of a large dump.
//! * Errors ([`ReadError`]) name the offset and the record or sub-record in
//!   which a truncated or corrupt stream was detected; record lengths are
//!   checked strictly (unknown top-level tags are skipped by length).

mod error;
mod gz;
mod header;
mod heap;
pub mod histo;
pub mod model;
mod names;
mod records;
mod retained;
mod scan;
mod source;
mod stream;

#[cfg(test)]
mod tests;

pub use error::{ErrorKind, ReadError};
pub use gz::GZIP_MAGIC;
pub use header::{Header, LABEL_PREFIX, TEXT_REPORT_MESSAGE, TEXT_REPORT_START};
pub use heap::{
    sub_record_name, sub_tag, BasicType, ClassDump, ClassLayout, ClassLayouts, ConstantPoolEntry,
    FieldDescriptor, FieldValue, HeapSubRecord, InstanceDump, ObjectArrayDump, PrimitiveArrayDump,
    ReadOptions, Root, RootKind, StaticField, Value,
};
pub use histo::{
    histogram, histogram_of, histogram_with, DumpHistogram, HistoBuilder, HistoEntry,
    ShallowSizeModel, WhichDump,
};
pub use model::{collect, read_all, HeapDump, LoadedClass, Parsed, RecordInfo};
pub use names::java_class_name;
pub use records::{
    decode_java_utf8, record_name, tag, AllocSite, AllocSites, ControlSettings, CpuSample,
    CpuSamples, Frame, HeapSummary, LoadClass, Record, RecordBody, StartThread, Trace,
};
pub use retained::Retained;
pub use scan::{
    decode_object_head, ArrayHead, ArrayKind, HeapVisitor, InstanceView, ObjectHead,
    OBJECT_HEAD_MAX,
};
pub use source::SkipForward;
pub use stream::{
    open_path, HprofReader, DEFINITIONS_LIMIT, DEFINITION_OVERHEAD, MAX_NAME, MAX_RECORD,
};
