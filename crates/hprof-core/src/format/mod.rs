//! Output formats: the HPROF text format (`format=a`) and the binary HPROF
//! stream (`format=b`).
//!
//! Plain data in, bytes out: the serializers never talk to the JVM. Every
//! call appends the bytes of zero or more records to a caller-supplied
//! `Vec<u8>`; the caller writes that buffer to the file or socket. Record
//! times and dates come from a [`Stamp`] given by the caller, so output is
//! deterministic under test.
//!
//! Both formats implement [`ProfileFormat`]. A record kind that a format does
//! not have is a no-op there (e.g. LOAD CLASS in text, MONITOR DUMP in
//! binary). Row selection for reports (sorting, cutoff, percentages) is done
//! once, in [`selection`], for both formats.
//!
//! Layout details and deviations from the original agent are documented in
//! `docs/output-formats.md`.

#![forbid(unsafe_code)]

pub mod ascii;
pub mod binary;
pub mod ctime;
pub mod lost;
pub mod model;
pub mod names;
pub mod selection;

use std::collections::HashSet;

pub use ascii::{AsciiFormat, AsciiOptions};
pub use binary::{BinaryFormat, BinaryOptions, CutoffEncoding, HprofVersion, IdSize};
pub use lost::LostSamples;
pub use model::*;
pub use names::render_class_name;
pub use selection::{select_cpu, select_monitor_time, select_old_prof, select_sites, Ranked};

/// Which of the two formats an implementation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatKind {
    Ascii,
    Binary,
}

/// The output format interface the agent drives.
///
/// Call order expected by both formats:
/// * `header` once (text: not at all with `cpu=old`), then (binary)
///   `control_settings` right after it;
/// * events as they happen (`thread_start`, `thread_end`, `load_class`,
///   `unload_class`, `monitor_wait`, `monitor_waited`);
/// * for each dump, before every section, `traces` with the traces the
///   section refers to (already written ones are skipped), then the section.
///   A heap dump is `heap_dump_begin`, the roots (pseudo root first), the
///   instances and arrays, the classes (superclasses first), then
///   `heap_dump_end`.
pub trait ProfileFormat: Send {
    fn kind(&self) -> FormatKind;

    /// Text: `JAVA PROFILE 1.0.1, created <date>`, prelude, separator.
    /// Binary: the stream header.
    fn header(&mut self, out: &mut Vec<u8>, at: Stamp);

    /// Binary CONTROL SETTINGS (text: nothing).
    fn control_settings(&mut self, out: &mut Vec<u8>, at: Stamp, settings: &ControlSettings);

    fn thread_start(&mut self, out: &mut Vec<u8>, at: Stamp, thread: &ThreadStart<'_>);

    fn thread_end(&mut self, out: &mut Vec<u8>, at: Stamp, thread_serial: u32);

    /// Binary LOAD CLASS (text: nothing).
    fn load_class(&mut self, out: &mut Vec<u8>, at: Stamp, class: &LoadClass<'_>);

    /// Binary UNLOAD CLASS (text: nothing).
    fn unload_class(&mut self, out: &mut Vec<u8>, at: Stamp, class_serial: u32);

    /// Whether the trace with this serial was already written to this stream.
    fn trace_written(&self, serial: u32) -> bool;

    /// Write each trace that was not written before (binary: with the FRAME
    /// and UTF8 records it needs), in the given order.
    fn traces(&mut self, out: &mut Vec<u8>, at: Stamp, traces: &[TraceInfo<'_>]);

    /// SITES / ALLOC SITES.
    fn sites(&mut self, out: &mut Vec<u8>, at: Stamp, report: &SitesReport<'_>);

    /// Binary HEAP SUMMARY (text: nothing).
    fn heap_summary(&mut self, out: &mut Vec<u8>, at: Stamp, totals: &HeapTotals);

    /// CPU SAMPLES / CPU TIME (binary: CPU SAMPLES only; a `Times` report is
    /// a no-op there).
    fn cpu(&mut self, out: &mut Vec<u8>, at: Stamp, report: &CpuReport<'_>);

    /// The samples the CPU SAMPLES report just written does not count
    /// (text: a line after the section; binary: a UTF8 record of the same
    /// text, see `lost`).
    fn cpu_lost(&mut self, out: &mut Vec<u8>, at: Stamp, lost: &LostSamples);

    /// Old prof block of `cpu=old` (binary: nothing).
    fn cpu_old(&mut self, out: &mut Vec<u8>, at: Stamp, report: &OldProfReport<'_>);

    /// Start a heap dump. `totals` gives the text BEGIN line's live
    /// instance and byte counts.
    fn heap_dump_begin(&mut self, out: &mut Vec<u8>, at: Stamp, totals: &HeapTotals);

    fn heap_root(&mut self, out: &mut Vec<u8>, root: &Root<'_>);

    fn heap_class(&mut self, out: &mut Vec<u8>, class: &ClassDump<'_>);

    fn heap_instance(&mut self, out: &mut Vec<u8>, obj: &InstanceDump<'_>);

    fn heap_obj_array(&mut self, out: &mut Vec<u8>, arr: &ObjArrayDump<'_>);

    fn heap_prim_array(&mut self, out: &mut Vec<u8>, arr: &PrimArrayDump<'_>);

    fn heap_dump_end(&mut self, out: &mut Vec<u8>, at: Stamp);

    /// The binary stream's options (`None` for text): what a caller that
    /// writes records of its own into the stream must match.
    fn binary_options(&self) -> Option<binary::BinaryOptions> {
        None
    }

    /// Output a record left pending (a heap dump staged in a temporary
    /// file, whose header is already out): append the next piece to `out`
    /// and return true, or false when nothing is pending. The writer calls
    /// this after every job until it returns false, writing `out` to the
    /// sink in between, so a large record never sits in memory whole.
    fn drain_staged(&mut self, _out: &mut Vec<u8>) -> bool {
        false
    }

    /// MONITOR DUMP (binary: nothing).
    fn monitor_dump(&mut self, out: &mut Vec<u8>, at: Stamp, dump: &MonitorDump<'_>);

    /// MONITOR TIME (binary: nothing).
    fn monitor_time(&mut self, out: &mut Vec<u8>, at: Stamp, report: &MonitorTimeReport<'_>);

    /// `WAIT:` line (binary: nothing).
    fn monitor_wait(&mut self, out: &mut Vec<u8>, at: Stamp, wait: &MonitorWait<'_>);

    /// `WAITED:` line (binary: nothing).
    fn monitor_waited(&mut self, out: &mut Vec<u8>, at: Stamp, waited: &MonitorWaited<'_>);
}

/// Which trace serials have been written to a stream (each trace is written
/// at most once per stream, in both formats).
#[derive(Debug, Default)]
pub(crate) struct TraceLog {
    written: HashSet<u32>,
}

impl TraceLog {
    pub(crate) fn contains(&self, serial: u32) -> bool {
        self.written.contains(&serial)
    }

    /// Record the serial; true if it was not recorded before.
    pub(crate) fn first_time(&mut self, serial: u32) -> bool {
        self.written.insert(serial)
    }
}
