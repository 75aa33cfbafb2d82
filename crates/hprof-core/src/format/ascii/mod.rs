//! The text format (`format=a`).

mod heap;
mod prelude;
mod printer;
mod records;
mod reports;
#[cfg(test)]
mod tests;

pub use prelude::prelude;
pub use printer::{Pct, MAX_WRITE};

use self::printer::{pf, Printer};
use super::ctime::ctime_of;
use super::model::*;
use super::{FormatKind, LostSamples, ProfileFormat, TraceLog};

/// Options of the text format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AsciiOptions {
    /// Reproduce the original MONITOR TIME units bug: divide the total by
    /// 1,000,000 and write the section only when that quotient is > 0.
    /// Default `false`: the real total in ms, written whenever it is > 0.
    pub monitor_time_legacy_units: bool,
}

/// Serializer of the HPROF text format.
#[derive(Debug, Default)]
pub struct AsciiFormat {
    opts: AsciiOptions,
    p: Printer,
    traces: TraceLog,
}

impl AsciiFormat {
    pub fn new(opts: AsciiOptions) -> Self {
        AsciiFormat {
            opts,
            p: Printer::default(),
            traces: TraceLog::default(),
        }
    }
}

impl ProfileFormat for AsciiFormat {
    fn kind(&self) -> FormatKind {
        FormatKind::Ascii
    }

    fn header(&mut self, out: &mut Vec<u8>, at: Stamp) {
        pf!(
            self.p,
            out,
            "{}, created {}\n",
            "JAVA PROFILE 1.0.1",
            ctime_of(&at)
        );
        out.extend_from_slice(prelude().as_bytes());
        out.extend_from_slice(b"\n--------\n\n");
    }

    fn control_settings(&mut self, _: &mut Vec<u8>, _: Stamp, _: &ControlSettings) {}

    fn thread_start(&mut self, out: &mut Vec<u8>, _: Stamp, thread: &ThreadStart<'_>) {
        records::thread_start(&mut self.p, out, thread);
    }

    fn thread_end(&mut self, out: &mut Vec<u8>, _: Stamp, thread_serial: u32) {
        records::thread_end(&mut self.p, out, thread_serial);
    }

    fn load_class(&mut self, _: &mut Vec<u8>, _: Stamp, _: &LoadClass<'_>) {}

    fn unload_class(&mut self, _: &mut Vec<u8>, _: Stamp, _: u32) {}

    fn trace_written(&self, serial: u32) -> bool {
        self.traces.contains(serial)
    }

    fn traces(&mut self, out: &mut Vec<u8>, _: Stamp, traces: &[TraceInfo<'_>]) {
        for t in traces {
            if self.traces.first_time(t.serial) {
                records::trace(&mut self.p, out, t);
            }
        }
    }

    fn sites(&mut self, out: &mut Vec<u8>, at: Stamp, report: &SitesReport<'_>) {
        reports::sites(&mut self.p, out, &at, report);
    }

    fn heap_summary(&mut self, _: &mut Vec<u8>, _: Stamp, _: &HeapTotals) {}

    fn cpu(&mut self, out: &mut Vec<u8>, at: Stamp, report: &CpuReport<'_>) {
        reports::cpu(&mut self.p, out, &at, report);
    }

    fn cpu_lost(&mut self, out: &mut Vec<u8>, _: Stamp, lost: &LostSamples) {
        reports::cpu_lost(&mut self.p, out, lost);
    }

    fn cpu_old(&mut self, out: &mut Vec<u8>, _: Stamp, report: &OldProfReport<'_>) {
        reports::cpu_old(&mut self.p, out, report);
    }

    fn heap_dump_begin(&mut self, out: &mut Vec<u8>, at: Stamp, totals: &HeapTotals) {
        heap::begin(&mut self.p, out, &at, totals);
    }

    fn heap_root(&mut self, out: &mut Vec<u8>, root: &Root<'_>) {
        heap::root(&mut self.p, out, root);
    }

    fn heap_class(&mut self, out: &mut Vec<u8>, class: &ClassDump<'_>) {
        heap::class(&mut self.p, out, class);
    }

    fn heap_instance(&mut self, out: &mut Vec<u8>, obj: &InstanceDump<'_>) {
        heap::instance(&mut self.p, out, obj);
    }

    fn heap_obj_array(&mut self, out: &mut Vec<u8>, arr: &ObjArrayDump<'_>) {
        heap::obj_array(&mut self.p, out, arr);
    }

    fn heap_prim_array(&mut self, out: &mut Vec<u8>, arr: &PrimArrayDump<'_>) {
        heap::prim_array(&mut self.p, out, arr);
    }

    fn heap_dump_end(&mut self, out: &mut Vec<u8>, _: Stamp) {
        heap::end(&mut self.p, out);
    }

    fn monitor_dump(&mut self, out: &mut Vec<u8>, _: Stamp, dump: &MonitorDump<'_>) {
        reports::monitor_dump(&mut self.p, out, dump);
    }

    fn monitor_time(&mut self, out: &mut Vec<u8>, at: Stamp, report: &MonitorTimeReport<'_>) {
        reports::monitor_time(
            &mut self.p,
            out,
            &at,
            report,
            self.opts.monitor_time_legacy_units,
        );
    }

    fn monitor_wait(&mut self, out: &mut Vec<u8>, _: Stamp, wait: &MonitorWait<'_>) {
        records::monitor_wait(&mut self.p, out, wait);
    }

    fn monitor_waited(&mut self, out: &mut Vec<u8>, _: Stamp, waited: &MonitorWaited<'_>) {
        records::monitor_waited(&mut self.p, out, waited);
    }
}
