//! The page's pprof download: the session gives the tool's pprof encoder
//! (`hprof_analysis::pprof`) its samples.

use super::model::Session;
use crate::format::LostSamples;
use crate::reader::{AllocSites, CpuSamples};
use hprof_analysis::pprof::Samples;

impl Samples for Session {
    fn cpu(&self) -> Option<&CpuSamples> {
        self.cpu.as_ref()
    }
    fn cpu_lost(&self) -> Option<&LostSamples> {
        self.cpu_lost.as_ref()
    }
    fn sites(&self) -> Option<&AllocSites> {
        self.sites.as_ref()
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
