//! The binary HPROF stream (`format=b`).

mod enc;
mod heap;
pub use self::heap::{Scratch, ScratchSource};
mod records;
mod strings;
#[cfg(test)]
#[rustfmt::skip] // keeps the hand-laid byte layouts of expected records
mod tests;

use std::collections::HashSet;

pub use enc::{sub as subrecord_tag, tag as record_tag, IdSize};
pub use strings::FIRST_STRING_ID;

use self::heap::HeapWriter;
use self::records::Records;
use self::strings::StringTable;
use super::model::*;
use super::{FormatKind, LostSamples, ProfileFormat, TraceLog};

/// Segments of a 1.0.2 heap dump stay below this many bytes (the original's
/// limit), unless configured otherwise.
pub const DEFAULT_SEGMENT_LIMIT: u64 = 2_000_000_000;

/// `Runtime.maxMemory()` at or above which the original chose 1.0.2.
pub const V1_0_2_MAX_MEMORY_THRESHOLD: u64 = 2_000_000_000;

/// Stream version; it only changes how heap dumps are framed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HprofVersion {
    /// One HEAP DUMP (0x0C) record per dump.
    V1_0_1,
    /// HEAP DUMP SEGMENT (0x1C) records plus HEAP DUMP END (0x2C).
    #[default]
    V1_0_2,
}

impl HprofVersion {
    /// The original's choice: 1.0.2 iff `Runtime.maxMemory()` >= 2,000,000,000.
    pub fn for_max_memory(max_memory: u64) -> Self {
        if max_memory >= V1_0_2_MAX_MEMORY_THRESHOLD {
            HprofVersion::V1_0_2
        } else {
            HprofVersion::V1_0_1
        }
    }

    /// Header text, without the terminating NUL.
    pub fn magic(self) -> &'static str {
        match self {
            HprofVersion::V1_0_1 => "JAVA PROFILE 1.0.1",
            HprofVersion::V1_0_2 => "JAVA PROFILE 1.0.2",
        }
    }
}

/// How the ALLOC SITES cutoff field is encoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CutoffEncoding {
    /// IEEE-754 single-precision bits of the cutoff (the documented
    /// meaning; 0.0001 -> `38 D1 B7 17`).
    #[default]
    Float32,
    /// Bug-compatible with the original on x86: the low 32 bits of the
    /// IEEE-754 double (0.0001 -> `EB 1C 43 2D`).
    DoubleLowWord,
}

impl CutoffEncoding {
    pub fn bits(self, cutoff: f64) -> u32 {
        match self {
            CutoffEncoding::Float32 => (cutoff as f32).to_bits(),
            CutoffEncoding::DoubleLowWord => cutoff.to_bits() as u32,
        }
    }
}

/// Options of the binary format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinaryOptions {
    pub version: HprofVersion,
    pub id_size: IdSize,
    /// 1.0.2 only: a segment is cut before the sub-record that makes the
    /// buffered data reach this many bytes.
    pub segment_limit: u64,
    pub cutoff_encoding: CutoffEncoding,
    /// Write object arrays with their full length instead of the original's
    /// "highest non-null index + 1".
    pub object_array_full_length: bool,
}

impl Default for BinaryOptions {
    fn default() -> Self {
        BinaryOptions {
            version: HprofVersion::default(),
            id_size: IdSize::default(),
            segment_limit: DEFAULT_SEGMENT_LIMIT,
            cutoff_encoding: CutoffEncoding::default(),
            object_array_full_length: false,
        }
    }
}

/// Serializer of the binary HPROF stream. Keeps the per-stream state:
/// string IDs, which frames and traces were written, the heap dump in
/// progress.
#[derive(Debug)]
pub struct BinaryFormat {
    opts: BinaryOptions,
    strings: StringTable,
    frames: HashSet<u64>,
    traces: TraceLog,
    heap: Option<HeapWriter>,
    name_ids: Vec<u64>,
    /// 1.0.1 heap dumps are staged in areas from here (see `stage_heap_dumps_in`).
    scratch: Option<Box<dyn heap::ScratchSource>>,
    /// A finished staged heap dump still being copied out.
    draining: Option<heap::Draining>,
}

/// Binary record time: microseconds since agent load, truncated to 32 bits.
fn time_of(at: &Stamp) -> u32 {
    at.micros_since_load as u32
}

impl BinaryFormat {
    pub fn new(opts: BinaryOptions) -> Self {
        BinaryFormat {
            opts,
            strings: StringTable::default(),
            frames: HashSet::new(),
            traces: TraceLog::default(),
            heap: None,
            name_ids: Vec::new(),
            scratch: None,
            draining: None,
        }
    }

    /// Copy out whatever is left of a staged heap dump (in memory).
    fn drain_all(&mut self, out: &mut Vec<u8>) {
        while self.drain_staged(out) {}
    }

    /// 1.0.1 heap dumps put their sub-records aside in a scratch area
    /// from `source` (one per dump, dropped once copied out) instead of
    /// memory, so a dump of a large heap needs no more memory than a
    /// segmented one. Without it (or if no area can be made) the record
    /// is buffered in memory.
    pub fn stage_heap_dumps_in(&mut self, source: Box<dyn heap::ScratchSource>) {
        self.scratch = Some(source);
    }

    pub fn options(&self) -> &BinaryOptions {
        &self.opts
    }

    fn records(&mut self, at: &Stamp) -> Records<'_> {
        Records {
            time: time_of(at),
            ids: self.opts.id_size,
            strings: &mut self.strings,
        }
    }

    fn segment_limit(&self) -> Option<u64> {
        match self.opts.version {
            HprofVersion::V1_0_1 => None,
            HprofVersion::V1_0_2 => Some(self.opts.segment_limit),
        }
    }

    /// The dump in progress; a sub-record without `heap_dump_begin` starts
    /// one (time 0).
    fn heap_writer(&mut self) -> &mut HeapWriter {
        debug_assert!(
            self.heap.is_some(),
            "heap sub-record outside heap_dump_begin/end"
        );
        self.heap.get_or_insert_with(|| HeapWriter::new(0))
    }
}

impl ProfileFormat for BinaryFormat {
    fn kind(&self) -> FormatKind {
        FormatKind::Binary
    }

    fn header(&mut self, out: &mut Vec<u8>, at: Stamp) {
        records::header(out, self.opts.version, self.opts.id_size, at.unix_millis);
    }

    fn control_settings(&mut self, out: &mut Vec<u8>, at: Stamp, settings: &ControlSettings) {
        self.records(&at).control_settings(out, settings);
    }

    fn thread_start(&mut self, out: &mut Vec<u8>, at: Stamp, thread: &ThreadStart<'_>) {
        self.records(&at).start_thread(out, thread);
    }

    fn thread_end(&mut self, out: &mut Vec<u8>, at: Stamp, thread_serial: u32) {
        self.records(&at).end_thread(out, thread_serial);
    }

    fn load_class(&mut self, out: &mut Vec<u8>, at: Stamp, class: &LoadClass<'_>) {
        self.records(&at).load_class(out, class);
    }

    fn unload_class(&mut self, out: &mut Vec<u8>, at: Stamp, class_serial: u32) {
        self.records(&at).unload_class(out, class_serial);
    }

    fn trace_written(&self, serial: u32) -> bool {
        self.traces.contains(serial)
    }

    fn traces(&mut self, out: &mut Vec<u8>, at: Stamp, traces: &[TraceInfo<'_>]) {
        let mut rec = Records {
            time: time_of(&at),
            ids: self.opts.id_size,
            strings: &mut self.strings,
        };
        for t in traces {
            if !self.traces.first_time(t.serial) {
                continue;
            }
            for f in &t.frames {
                if self.frames.insert(f.frame_id) {
                    rec.frame(out, f);
                }
            }
            rec.trace(out, t);
        }
    }

    fn sites(&mut self, out: &mut Vec<u8>, at: Stamp, report: &SitesReport<'_>) {
        let cutoff = self.opts.cutoff_encoding;
        self.records(&at).alloc_sites(out, report, cutoff);
    }

    fn heap_summary(&mut self, out: &mut Vec<u8>, at: Stamp, totals: &HeapTotals) {
        self.records(&at).heap_summary(out, totals);
    }

    fn cpu(&mut self, out: &mut Vec<u8>, at: Stamp, report: &CpuReport<'_>) {
        if report.title == CpuTitle::Samples {
            self.records(&at).cpu_samples(out, report);
        }
    }

    fn cpu_lost(&mut self, out: &mut Vec<u8>, at: Stamp, lost: &LostSamples) {
        let (time, ids) = (time_of(&at), self.opts.id_size);
        self.strings.fresh(out, time, ids, &lost.line());
    }

    fn cpu_old(&mut self, _: &mut Vec<u8>, _: Stamp, _: &OldProfReport<'_>) {}

    fn heap_dump_begin(&mut self, out: &mut Vec<u8>, at: Stamp, _: &HeapTotals) {
        debug_assert!(self.heap.is_none(), "heap dump already in progress");
        self.drain_all(out);
        let mut w = HeapWriter::new(time_of(&at));
        if let (HprofVersion::V1_0_1, Some(source)) = (self.opts.version, &mut self.scratch) {
            match source.create() {
                Ok(area) => w.stage_in(heap::Staged::new(area)),
                Err(e) => source.report(&format!(
                    "heap dump: cannot create temporary file {}: {e}; buffering in memory",
                    source.name()
                )),
            }
        }
        self.heap = Some(w);
    }

    fn heap_root(&mut self, out: &mut Vec<u8>, r: &Root<'_>) {
        let (ids, limit) = (self.opts.id_size, self.segment_limit());
        self.heap_writer()
            .sub_record(out, limit, |b| heap::root(b, ids, r));
    }

    fn heap_class(&mut self, out: &mut Vec<u8>, c: &ClassDump<'_>) {
        let (ids, limit) = (self.opts.id_size, self.segment_limit());
        let time = self.heap_writer().begin_time();
        // Field-name UTF8 records go to the stream before the heap record.
        let mut names = std::mem::take(&mut self.name_ids);
        names.clear();
        for s in c.statics {
            names.push(self.strings.id(out, time, ids, Some(s.name)));
        }
        for e in c.constant_pool.iter().rev() {
            let name = heap::constant_pool_field_name(e.index);
            names.push(self.strings.id(out, time, ids, Some(&name)));
        }
        for f in c.instance_fields {
            names.push(self.strings.id(out, time, ids, Some(f.name)));
        }
        self.heap_writer()
            .sub_record(out, limit, |b| heap::class_dump(b, ids, c, &names));
        self.name_ids = names;
    }

    fn heap_instance(&mut self, out: &mut Vec<u8>, o: &InstanceDump<'_>) {
        let (ids, limit) = (self.opts.id_size, self.segment_limit());
        self.heap_writer()
            .sub_record(out, limit, |b| heap::instance_dump(b, ids, o));
    }

    fn heap_obj_array(&mut self, out: &mut Vec<u8>, a: &ObjArrayDump<'_>) {
        let (ids, limit) = (self.opts.id_size, self.segment_limit());
        let full = self.opts.object_array_full_length;
        self.heap_writer()
            .sub_record(out, limit, |b| heap::obj_array_dump(b, ids, a, full));
    }

    fn heap_prim_array(&mut self, out: &mut Vec<u8>, a: &PrimArrayDump<'_>) {
        let (ids, limit) = (self.opts.id_size, self.segment_limit());
        self.heap_writer()
            .sub_record(out, limit, |b| heap::prim_array_dump(b, ids, a));
    }

    fn heap_dump_end(&mut self, out: &mut Vec<u8>, at: Stamp) {
        let writer = self
            .heap
            .take()
            .unwrap_or_else(|| HeapWriter::new(time_of(&at)));
        self.draining = writer.finish(out, self.opts.version, time_of(&at));
    }

    fn binary_options(&self) -> Option<BinaryOptions> {
        Some(self.opts)
    }

    fn drain_staged(&mut self, out: &mut Vec<u8>) -> bool {
        let Some(d) = self.draining.as_mut() else {
            return false;
        };
        match d.step(out, heap::DRAIN_CHUNK) {
            Ok(true) => true,
            Ok(false) => {
                self.draining = None;
                false
            }
            Err(e) => {
                d.report(&format!(
                    "heap dump: cannot read back the temporary file: {e}; dump truncated"
                ));
                self.draining = None;
                true
            }
        }
    }

    fn monitor_dump(&mut self, _: &mut Vec<u8>, _: Stamp, _: &MonitorDump<'_>) {}

    fn monitor_time(&mut self, _: &mut Vec<u8>, _: Stamp, _: &MonitorTimeReport<'_>) {}

    fn monitor_wait(&mut self, _: &mut Vec<u8>, _: Stamp, _: &MonitorWait<'_>) {}

    fn monitor_waited(&mut self, _: &mut Vec<u8>, _: Stamp, _: &MonitorWaited<'_>) {}
}
