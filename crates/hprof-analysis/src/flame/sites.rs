//! Allocation sites as a flame graph: the last ALLOC SITES of a binary
//! report, each site's stack (root first) topped by a frame naming the
//! allocated class, weighted by its allocated bytes (`hprof-rs profile -e
//! alloc`). With `heapsample=` the bytes are the agent's estimates from
//! samples (docs/alloc_sites.md).

use super::{learn_bounded, Flame, Measure, StackTree};
use crate::reader::{java_class_name, AllocSites, HprofReader, ReadOptions, RecordBody, Retained};
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
    let mut last: Option<AllocSites> = None;
    let mut depth = None;
    while let Some(rec) = reader.next_record().map_err(|e| e.to_string())? {
        let what = |e: String| format!("{} at offset {}: {e}", rec.name(), rec.offset);
        if learn_bounded(&mut syms, &rec.body, &mut kept).map_err(what)? {
            continue;
        }
        match rec.body {
            RecordBody::AllocSites(s) => last = Some(s),
            RecordBody::ControlSettings(c) => depth = Some(usize::from(c.depth)),
            _ => {}
        }
    }
    let sites = last.ok_or(
        "no ALLOC SITES in the stream (the agent writes them with heap=sites at its stop or exit)",
    )?;
    let mut tree = StackTree::new();
    let mut names: FxHashMap<u64, u32> = FxHashMap::default();
    let mut lengths = Vec::with_capacity(sites.sites.len());
    for site in &sites.sites {
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
        lengths.push((path.len(), u64::from(site.bytes_allocated), whole));
        let class = class_frame(&syms, site.class_serial, site.array_type);
        path.push(tree.intern(&class));
        tree.add(&path, [u64::from(site.bytes_allocated)]);
    }
    tree.finish_by_name();
    Ok(Flame {
        tree,
        measure: Measure::AllocatedBytes,
        cut_at: super::cut_at(&lengths, depth),
        cumulative_sections: 0,
        saturated_sites: sites
            .sites
            .iter()
            .filter(|s| s.bytes_allocated == u32::MAX)
            .count(),
    })
}
