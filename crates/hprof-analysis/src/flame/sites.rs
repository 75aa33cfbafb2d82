//! Allocation sites as a flame graph: the allocated bytes of a binary
//! report's ALLOC SITES, each site's stack (root first) topped by a frame
//! naming the allocated class (`hprof-rs profile -e alloc`). With
//! `heapsample=` the bytes are the agent's estimates from samples
//! (docs/alloc_sites.md).
//!
//! Which sections count: the takes summed and the rest after them
//! ([`crate::allocated`]).

use super::{learn_bounded, Flame, Measure, StackTree};
use crate::allocated::Allocated;
use crate::reader::{java_class_name, HprofReader, ReadOptions, RecordBody, Retained};
use crate::transcode::symbols::Symbols;
use crate::ToolResult;
use rustc_hash::FxHashMap;
use std::io::Read;

/// The allocated class of a site as its top frame (`byte[]`,
/// `java.lang.String`).
fn class_frame(syms: &Symbols, class_serial: u32, array_type: u8) -> String {
    match crate::pprof::primitive_array(array_type) {
        Some(prim) if !syms.classes.contains_key(&class_serial) => prim.to_string(),
        _ => syms
            .class_name(class_serial)
            .map_or_else(|| format!("<class serial {class_serial}>"), java_class_name),
    }
}

/// Collapse the last ALLOC SITES of a binary report read from `r`.
pub fn collapse_sites_binary(r: impl Read) -> ToolResult<Flame> {
    let mut reader =
        HprofReader::with_options(r, ReadOptions::skip_bodies()).map_err(|e| e.to_string())?;
    let mut syms = Symbols::default();
    let mut kept = Retained::default();
    let mut allocated = Allocated::default();
    let mut depth = None;
    while let Some(rec) = reader.next_record().map_err(|e| e.to_string())? {
        let what = |e: String| format!("{} at offset {}: {e}", rec.name(), rec.offset);
        if learn_bounded(&mut syms, &rec.body, &mut kept).map_err(what)? {
            continue;
        }
        match rec.body {
            RecordBody::AllocSites(s) => {
                let new_sites = allocated.add(s);
                kept.keep((new_sites * Allocated::SITE_BYTES) as u64)
                    .map_err(|e| format!("ALLOC SITES at offset {}: {e}", rec.offset))?;
            }
            RecordBody::ControlSettings(c) => depth = Some(usize::from(c.depth)),
            _ => {}
        }
    }
    if allocated.is_empty() {
        return Err(
            "no ALLOC SITES in the stream (the agent writes them with heap=sites at its stop or exit)"
                .into(),
        );
    }
    let mut tree = StackTree::new();
    let mut names: FxHashMap<u64, u32> = FxHashMap::default();
    let mut lengths = Vec::new();
    for site in allocated.sites() {
        let frames: &[u64] = syms
            .traces
            .get(&site.trace_serial)
            .map_or(&[], |t| t.frame_ids.as_slice());
        let mut path: Vec<u32> = frames
            .iter()
            .rev()
            .map(|&id| {
                *names
                    .entry(id)
                    .or_insert_with(|| tree.intern(&syms.frame_label(id)))
            })
            .collect();
        let whole = path
            .first()
            .is_some_and(|&f| super::is_thread_entry(tree.name_of(f)));
        lengths.push((path.len(), site.bytes_allocated, whole));
        let class = class_frame(&syms, site.class_serial, site.array_type);
        path.push(tree.intern(&class));
        tree.add(&path, [site.bytes_allocated]);
    }
    tree.finish_by_name();
    Ok(Flame {
        tree,
        measure: Measure::AllocatedBytes,
        cut_at: super::cut_at(&lengths, depth),
        cumulative_sections: 0,
        saturated_sites: allocated.saturated(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{
        BinaryFormat, BinaryOptions, ProfileFormat, SiteRow, SitesReport, Stamp, SITES_TAKEN,
    };

    /// An ALLOC SITES record of two sites (class serials 1 and 2, no trace).
    fn report(f: &mut BinaryFormat, out: &mut Vec<u8>, flags: u16, one: u32, two: u32) {
        let row = |class_serial, alloc_bytes| SiteRow {
            class_sig: "LA;",
            class_serial,
            trace_serial: 0,
            live_bytes: 0,
            live_instances: 0,
            alloc_bytes,
            alloc_instances: 1,
        };
        let r = SitesReport {
            flags,
            cutoff: 0.0,
            rows: vec![row(1, one), row(2, two)],
            ..Default::default()
        };
        f.sites(out, Stamp::default(), &r);
    }

    fn collapsed(f: &Flame) -> String {
        let mut out = Vec::new();
        f.write_collapsed(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn takes_are_summed_in_64_bits_with_the_rest_after_the_last() {
        let mut f = BinaryFormat::new(BinaryOptions::default());
        let mut out = Vec::new();
        f.header(&mut out, Stamp::default());
        // From the start: the first take counts these again.
        report(&mut f, &mut out, 0, 100, 100);
        report(&mut f, &mut out, SITES_TAKEN, 3_000_000_000, 5);
        report(&mut f, &mut out, SITES_TAKEN, 3_000_000_000, 7);
        // Since the last take, twice: the later one only.
        report(&mut f, &mut out, 0, 10, 1);
        report(&mut f, &mut out, 0, 1_000_000_000, 2);
        let fl = collapse_sites_binary(&out[..]).unwrap();
        assert_eq!(
            collapsed(&fl),
            "<class serial 1> 7000000000\n<class serial 2> 14\n"
        );
        assert_eq!(fl.saturated_sites, 0);

        // Without takes: the last report, its saturated site said.
        let mut out = Vec::new();
        f.header(&mut out, Stamp::default());
        report(&mut f, &mut out, 0, 100, 100);
        report(&mut f, &mut out, 0, u32::MAX, 3);
        let fl = collapse_sites_binary(&out[..]).unwrap();
        assert_eq!(
            collapsed(&fl),
            "<class serial 1> 4294967295\n<class serial 2> 3\n"
        );
        assert_eq!(fl.saturated_sites, 1);
    }
}
