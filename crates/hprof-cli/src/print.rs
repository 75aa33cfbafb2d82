//! `hprof-rs print`: a binary HPROF file (ours or HotSpot's, plain or gzip)
//! as text. Records that the text format has (TRACE, THREAD START/END, CPU
//! SAMPLES, SITES, HEAP DUMP with ROOT/CLS/OBJ/ARR lines) are written by
//! the agent's own `format=a` serializer, so they read exactly like a
//! `format=a` report; the others (LOAD/UNLOAD CLASS, CONTROL SETTINGS,
//! HEAP SUMMARY) get one line each in the same style. UTF8 and FRAME
//! records are shown through the records that use them.
//!
//! The records are turned into text by `crate::transcode::text`, which the
//! agent also uses for text heap dumps made by the VM's own dumper.
//!
//! Two passes: the first collects the class layouts needed to name the
//! reference fields of INSTANCE DUMPs (our agent writes CLASS DUMPs after
//! the instances) and the object counts of each heap dump; the second
//! prints.
//!
//! Memory stays bounded whatever the file: records are read one at a time,
//! names and the other definitions kept are bounded by `Retained`, payloads
//! over [`MAX_PAYLOAD`] are not read (the object is printed without its
//! fields or elements, and stderr says how many were), primitive array
//! data is never read (text prints only its length).

use super::CliResult;
use crate::format::{self as fmt, AsciiFormat, AsciiOptions, ProfileFormat, Stamp};
use crate::reader::{
    self as rd, ClassLayouts, HeapSubRecord, HprofReader, ReadOptions, RecordBody, Retained,
};
use crate::transcode::symbols::Symbols;
use crate::transcode::text;
use std::io::Write;

/// Longest instance values or object array elements read (a real object
/// has at most 65535 fields per class).
pub const MAX_PAYLOAD: u64 = 64 << 20;
/// Heap dumps whose object counts the first pass keeps (later ones print
/// 0 in their HEAP DUMP BEGIN line).
const MAX_DUMPS_COUNTED: usize = 1 << 20;

struct Prepass {
    layouts: ClassLayouts,
    /// Objects and value bytes of each heap dump, in order.
    dumps: Vec<(u32, u64)>,
    strings: rustc_hash::FxHashMap<u64, String>,
    kept: Retained,
}

fn open(
    path: &str,
    opts: ReadOptions,
) -> CliResult<HprofReader<super::progress::Progress<std::fs::File>>> {
    let f = super::progress::open(path)?;
    HprofReader::with_options(f, opts).map_err(|e| format!("{path}: {e}"))
}

fn prepass(path: &str) -> CliResult<Prepass> {
    if path == "-" {
        return Err(
            "hprof-rs print needs a file, not standard input: it reads the file twice \
                    (class layouts first, to name the fields of objects dumped before their \
                    class); save the stream to a file first"
                .into(),
        );
    }
    let mut r = open(path, ReadOptions::skip_bodies())?;
    let mut p = Prepass {
        layouts: ClassLayouts::new(r.id_size()),
        dumps: Vec::new(),
        strings: Default::default(),
        kept: Retained::default(),
    };
    let mut open_segments = false;
    let mut spare = (0, 0);
    while let Some(rec) = r.next_record().map_err(|e| format!("{path}: {e}"))? {
        match rec.body {
            RecordBody::Utf8 { id, text } => {
                let len = text.len() as u64;
                if p.strings.insert(id, text).is_none() {
                    p.kept.keep(len).map_err(|e| {
                        format!("{path}: UTF8 record at offset {}: {e}", rec.offset)
                    })?;
                }
            }
            RecordBody::HeapDumpStart { segment } => {
                if !(segment && open_segments) && p.dumps.len() < MAX_DUMPS_COUNTED {
                    p.dumps.push((0, 0));
                }
                open_segments = segment;
                while let Some(sub) = r
                    .next_heap_sub_record()
                    .map_err(|e| format!("{path}: {e}"))?
                {
                    let d = if p.dumps.len() < MAX_DUMPS_COUNTED {
                        p.dumps.last_mut().expect("pushed above")
                    } else {
                        &mut spare
                    };
                    match sub {
                        HeapSubRecord::ClassDump(cd) => p.layouts.add(&cd),
                        HeapSubRecord::InstanceDump(i) => {
                            *d = (d.0 + 1, d.1 + u64::from(i.values_len))
                        }
                        HeapSubRecord::ObjectArrayDump(a) => {
                            *d = (d.0 + 1, d.1 + u64::from(a.length) * u64::from(r.id_size()))
                        }
                        HeapSubRecord::PrimitiveArrayDump(a) => *d = (d.0 + 1, d.1 + a.data_len()),
                        HeapSubRecord::Root(_) => {}
                    }
                }
            }
            RecordBody::HeapDumpEnd => open_segments = false,
            _ => {}
        }
    }
    Ok(p)
}

/// Print `path` to `out`.
pub fn run(path: &str, out: &mut dyn Write) -> CliResult<()> {
    let mut pre = prepass(path)?;
    let mut r = open(
        path,
        ReadOptions {
            primitive_array_data: false,
            max_kept: MAX_PAYLOAD,
            ..ReadOptions::full()
        },
    )?;
    let h = r.header().clone();
    let io = |e: std::io::Error| format!("cannot write the output: {e}");
    let stamp = |micros: u32| {
        let ms = h.timestamp_ms as i64 + i64::from(micros / 1000);
        Stamp {
            micros_since_load: u64::from(micros),
            unix_millis: ms,
            utc_offset_secs: crate::os::local_utc_offset(ms / 1000),
        }
    };
    writeln!(
        out,
        "{}, identifier size {}, created {}",
        h.label,
        h.id_size,
        fmt::ctime::ctime_of(&stamp(0)).trim_end()
    )
    .map_err(io)?;
    writeln!(out, "\n--------\n").map_err(io)?;

    let mut f = AsciiFormat::new(AsciiOptions::default());
    let mut syms = Symbols {
        strings: std::mem::take(&mut pre.strings),
        ..Default::default()
    };
    let mut kept = std::mem::take(&mut pre.kept);
    // Objects printed without the payload that was over MAX_PAYLOAD.
    let mut unread = 0u64;
    let mut names = text::HeapNames::default();
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut dump_index = 0usize;
    let mut dump_open = false;
    let mut open_segments = false;
    let err = |e: rd::ReadError| format!("{path}: {e}");
    while let Some(rec) = r.next_record().map_err(err)? {
        let at = stamp(rec.time);
        let learned = super::flame::learn_bounded(&mut syms, &rec.body, &mut kept)
            .map_err(|e| format!("{path}: {} at offset {}: {e}", rec.name(), rec.offset))?;
        if learned {
            if let RecordBody::Trace(t) = &rec.body {
                text::trace(&mut f, &mut buf, at, &syms, t);
            } else if let Some(lost) = match &rec.body {
                RecordBody::Utf8 { text, .. } => fmt::LostSamples::parse(text),
                _ => None,
            } {
                // The note after CPU SAMPLES: its line, as in text output.
                f.cpu_lost(&mut buf, at, &lost);
            } else if let RecordBody::LoadClass(lc) = &rec.body {
                let name = syms.string(lc.name_id).unwrap_or("<unknown>");
                buf.extend_from_slice(
                    format!(
                        "LOAD CLASS {} (name={}, id={:x}, trace={})\n",
                        lc.class_serial,
                        rd::java_class_name(name),
                        lc.class_id,
                        lc.trace_serial
                    )
                    .as_bytes(),
                );
            }
        } else {
            match &rec.body {
                RecordBody::UnloadClass { class_serial } => buf.extend_from_slice(format!("UNLOAD CLASS {class_serial}\n").as_bytes()),
                RecordBody::StartThread(st) => {
                    let ts = fmt::ThreadStart {
                        thread_serial: st.thread_serial,
                        obj_id: st.thread_id,
                        trace_serial: st.trace_serial,
                        name: syms.string(st.name_id),
                        group: syms.string(st.group_name_id),
                        parent_group: syms.string(st.parent_group_name_id),
                    };
                    f.thread_start(&mut buf, at, &ts);
                }
                RecordBody::EndThread { thread_serial } => f.thread_end(&mut buf, at, *thread_serial),
                RecordBody::CpuSamples(cs) => text::cpu(&mut f, &mut buf, at, &syms, cs),
                RecordBody::AllocSites(s) => text::sites(&mut f, &mut buf, at, &syms, s),
                RecordBody::HeapSummary(s) => buf.extend_from_slice(
                    format!(
                        "HEAP SUMMARY (live: {} bytes in {} instances; allocated: {} bytes in {} instances)\n",
                        s.total_live_bytes, s.total_live_instances, s.total_bytes_allocated, s.total_instances_allocated
                    )
                    .as_bytes(),
                ),
                RecordBody::ControlSettings(c) => buf.extend_from_slice(
                    format!(
                        "CONTROL SETTINGS (flags=0x{:x}: allocation traces {}, cpu sampling {}; depth={})\n",
                        c.flags,
                        if c.flags & 1 != 0 { "on" } else { "off" },
                        if c.flags & 2 != 0 { "on" } else { "off" },
                        c.depth
                    )
                    .as_bytes(),
                ),
                RecordBody::HeapDumpStart { segment } => {
                    if !(*segment && open_segments) {
                        let (objects, bytes) = pre.dumps.get(dump_index).copied().unwrap_or((0, 0));
                        dump_index += 1;
                        let totals = fmt::HeapTotals { live_bytes: bytes as u32, live_instances: objects, ..Default::default() };
                        f.heap_dump_begin(&mut buf, at, &totals);
                        dump_open = true;
                    }
                    open_segments = *segment;
                    while let Some(sub) = r.next_heap_sub_record().map_err(err)? {
                        unread += u64::from(match &sub {
                            HeapSubRecord::InstanceDump(i) => i.values.is_none(),
                            HeapSubRecord::ObjectArrayDump(a) => a.elements.is_none(),
                            _ => false,
                        });
                        text::heap_sub(&mut f, &mut buf, &syms, &pre.layouts, &mut names, r.id_size(), &sub);
                        if buf.len() >= 1 << 16 {
                            out.write_all(&buf).map_err(io)?;
                            buf.clear();
                        }
                    }
                    if !*segment {
                        f.heap_dump_end(&mut buf, at);
                        dump_open = false;
                    }
                }
                RecordBody::HeapDumpEnd => {
                    if dump_open {
                        f.heap_dump_end(&mut buf, at);
                        dump_open = false;
                    }
                    open_segments = false;
                }
                RecordBody::Unknown => buf.extend_from_slice(
                    format!("UNKNOWN RECORD 0x{:02X} at offset {} ({} bytes)\n", rec.tag, rec.offset, rec.length).as_bytes(),
                ),
                _ => {}
            }
        }
        out.write_all(&buf).map_err(io)?;
        buf.clear();
    }
    if dump_open {
        f.heap_dump_end(&mut buf, stamp(0));
        out.write_all(&buf).map_err(io)?;
    }
    if unread > 0 {
        eprintln!(
            "hprof-rs print: {unread} object(s) with more than {} MiB of fields or elements were \
             printed without them",
            MAX_PAYLOAD >> 20
        );
    }
    out.flush().map_err(io)
}
