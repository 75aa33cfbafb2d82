//! The page's pprof download: the session gives the tool's pprof encoder
//! (`hprof_analysis::pprof`) its samples.

use super::model::Session;
use hprof_analysis::pprof::{Last, Samples};

impl Samples for Session {
    fn last(&self) -> Last<'_> {
        Last {
            cpu: self.cpu.as_ref(),
            sites: self.sites.as_ref(),
            cpu_lost: self.cpu_lost.as_ref(),
        }
    }
    fn trace_frames(&self, serial: u32) -> Option<&[u64]> {
        Session::trace_frames(self, serial)
    }
    fn frame_label(&self, id: u64) -> String {
        Session::frame_label(self, id)
    }
    fn frame_source(&self, id: u64) -> (String, i32) {
        Session::frame_source(self, id)
    }
    fn site_class(&self, class_serial: u32, array_type: u8) -> String {
        Session::site_class(self, class_serial, array_type)
    }
}
