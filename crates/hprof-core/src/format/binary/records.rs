//! Binary records outside heap dumps.

use super::enc::{self, tag, IdSize};
use super::strings::StringTable;
use super::{CutoffEncoding, HprofVersion};
use crate::format::model::{
    ControlSettings, CpuReport, FrameInfo, HeapTotals, LoadClass, SitesReport, ThreadStart,
    TraceInfo,
};
use crate::format::names::{render_class_name, site_array_kind};
use crate::format::selection::{select_cpu, select_sites};

/// Writes the non-heap records of one stream.
pub struct Records<'s> {
    pub time: u32,
    pub ids: IdSize,
    pub strings: &'s mut StringTable,
}

fn non_empty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

pub fn header(out: &mut Vec<u8>, version: HprofVersion, ids: IdSize, unix_millis: i64) {
    out.extend_from_slice(version.magic().as_bytes());
    out.push(0);
    enc::u4(out, ids.bytes() as u32);
    enc::u8_(out, unix_millis as u64);
}

impl Records<'_> {
    pub fn control_settings(&mut self, out: &mut Vec<u8>, s: &ControlSettings) {
        enc::record(out, tag::CONTROL_SETTINGS, self.time, |b| {
            enc::u4(b, s.flags());
            enc::u2(b, s.depth);
        });
    }

    pub fn load_class(&mut self, out: &mut Vec<u8>, c: &LoadClass<'_>) {
        let name = render_class_name(c.class_sig);
        let name_id = self.strings.id(out, self.time, self.ids, Some(&name));
        let ids = self.ids;
        enc::record(out, tag::LOAD_CLASS, self.time, |b| {
            enc::u4(b, c.class_serial);
            enc::id(b, ids, c.class_obj_id);
            enc::u4(b, c.trace_serial);
            enc::id(b, ids, name_id);
        });
    }

    pub fn unload_class(&mut self, out: &mut Vec<u8>, class_serial: u32) {
        enc::record(out, tag::UNLOAD_CLASS, self.time, |b| {
            enc::u4(b, class_serial)
        });
    }

    pub fn frame(&mut self, out: &mut Vec<u8>, f: &FrameInfo<'_>) {
        let name = self
            .strings
            .id(out, self.time, self.ids, non_empty(f.method_name));
        let sig = self
            .strings
            .id(out, self.time, self.ids, non_empty(f.method_sig));
        let source = self.strings.id(out, self.time, self.ids, f.source_file);
        let ids = self.ids;
        enc::record(out, tag::FRAME, self.time, |b| {
            enc::id(b, ids, f.frame_id);
            enc::id(b, ids, name);
            enc::id(b, ids, sig);
            enc::id(b, ids, source);
            enc::u4(b, f.class_serial);
            enc::u4(b, f.line as u32);
        });
    }

    /// TRACE only; the caller writes the FRAMEs it needs first.
    pub fn trace(&mut self, out: &mut Vec<u8>, t: &TraceInfo<'_>) {
        let ids = self.ids;
        enc::record(out, tag::TRACE, self.time, |b| {
            enc::u4(b, t.serial);
            enc::u4(b, t.thread_serial.unwrap_or(0));
            enc::u4(b, t.frames.len() as u32);
            for f in &t.frames {
                enc::id(b, ids, f.frame_id);
            }
        });
    }

    pub fn alloc_sites(&mut self, out: &mut Vec<u8>, r: &SitesReport<'_>, cutoff: CutoffEncoding) {
        let rows = select_sites(r);
        enc::record(out, tag::ALLOC_SITES, self.time, |b| {
            enc::u2(b, r.flags);
            enc::u4(b, cutoff.bits(r.cutoff));
            enc::u4(b, r.totals.live_bytes);
            enc::u4(b, r.totals.live_instances);
            enc::u8_(b, r.totals.alloc_bytes);
            enc::u8_(b, r.totals.alloc_instances);
            enc::u4(b, rows.len() as u32);
            for s in &rows {
                let row = s.row;
                enc::u1(b, site_array_kind(row.class_sig));
                enc::u4(b, row.class_serial);
                enc::u4(b, row.trace_serial);
                enc::u4(b, row.live_bytes);
                enc::u4(b, row.live_instances);
                enc::u4(b, row.alloc_bytes);
                enc::u4(b, row.alloc_instances);
            }
        });
    }

    pub fn heap_summary(&mut self, out: &mut Vec<u8>, t: &HeapTotals) {
        enc::record(out, tag::HEAP_SUMMARY, self.time, |b| {
            enc::u4(b, t.live_bytes);
            enc::u4(b, t.live_instances);
            enc::u8_(b, t.alloc_bytes);
            enc::u8_(b, t.alloc_instances);
        });
    }

    pub fn start_thread(&mut self, out: &mut Vec<u8>, t: &ThreadStart<'_>) {
        let name = self.strings.id(out, self.time, self.ids, t.name);
        let group = self.strings.id(out, self.time, self.ids, t.group);
        let parent = self.strings.id(out, self.time, self.ids, t.parent_group);
        let ids = self.ids;
        enc::record(out, tag::START_THREAD, self.time, |b| {
            enc::u4(b, t.thread_serial);
            enc::id(b, ids, t.obj_id);
            enc::u4(b, t.trace_serial);
            enc::id(b, ids, name);
            enc::id(b, ids, group);
            enc::id(b, ids, parent);
        });
    }

    pub fn end_thread(&mut self, out: &mut Vec<u8>, thread_serial: u32) {
        enc::record(out, tag::END_THREAD, self.time, |b| {
            enc::u4(b, thread_serial)
        });
    }

    pub fn cpu_samples(&mut self, out: &mut Vec<u8>, r: &CpuReport<'_>) {
        let rows = select_cpu(r);
        enc::record(out, tag::CPU_SAMPLES, self.time, |b| {
            enc::u4(b, r.total as u32);
            enc::u4(b, rows.len() as u32);
            for s in &rows {
                enc::u4(b, s.row.hits);
                enc::u4(b, s.row.trace_serial);
            }
        });
    }
}
