//! The heap analyser's index builder (`hprof-rs heap`) against hostile
//! input in capped memory (issue 29 item 5): dumps whose lengths claim
//! gigabytes, floods of records that a small gzip expands to millions of
//! entries, and a saved index whose table of contents claims gigabytes.
//! Each run is a child process in a capped address space
//! (`tool_limits::tool_in`), its peak memory measured: it ends with a
//! clear error naming the offset (or, for the index, rebuilds it), never
//! with an abort.

use crate::common;
use crate::tool_limits::{tool_in, Run};

use std::io::Write;
use std::path::Path;

/// The address space each run gets.
const CAP: u64 = 512 << 20;

/// A three-node list's dump with `tail` (whole records) before its end.
fn with_records(tail: &[u8]) -> Vec<u8> {
    let mut d = common::synth::dump(&common::synth::list(3));
    // The HEAP DUMP END record: a tag, a time and a zero length.
    let end = d.split_off(d.len() - 9);
    assert_eq!(end[0], 0x2C);
    d.extend_from_slice(tail);
    d.extend_from_slice(&end);
    d
}

/// A HEAP DUMP SEGMENT record claiming `claimed` bytes, holding `body`.
fn segment(claimed: u32, body: &[u8]) -> Vec<u8> {
    let mut r = vec![0x1C];
    r.extend_from_slice(&0u32.to_be_bytes());
    r.extend_from_slice(&claimed.to_be_bytes());
    r.extend_from_slice(body);
    r
}

fn be(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn heap(file: &Path, out: &Path) -> Run {
    tool_in(
        &["heap", file.to_str().unwrap(), "classes", "--no-cache"],
        out,
        CAP,
    )
}

/// An error (exit 1), not an abort, in bounded memory, saying where.
fn refused(r: &Run, what: &str, says: &str) {
    assert_eq!(r.code, Some(1), "{what}: {}", r.stderr);
    assert!(
        r.stderr.contains(says) && r.stderr.contains("offset"),
        "{what}: {}",
        r.stderr
    );
    assert!(r.peak_mib < 300, "{what}: {} MiB", r.peak_mib);
}

#[test]
fn hostile_dumps_end_with_an_error_at_their_offset_in_capped_memory() {
    // Peaks are measured from a fresh process (common::in_own_process).
    common::in_own_process(
        "heap_analyser_limits::hostile_dumps_end_with_an_error_at_their_offset_in_capped_memory",
        || {
            let dir = common::scratch("heap_analyser_limits");
            let out = dir.join("out.txt");
            let id = 0x7_1000_0000u64.to_be_bytes();
            let stack = 1u32.to_be_bytes();
            let object = common::synth::OBJECT_CLASS.to_be_bytes();
            let node1 = common::synth::class_id(1).to_be_bytes();
            let cases: [(&str, Vec<u8>); 4] = [
                // A long[] of 2^32-1 elements (32 GiB) in a 40-byte record.
                (
                    "primitive array",
                    be(&[
                        &[0x23],
                        &id,
                        &stack,
                        &u32::MAX.to_be_bytes(),
                        &[11],
                        &[0; 16],
                    ]),
                ),
                // An Object[] of 2^31-1 elements.
                (
                    "object array",
                    be(&[
                        &[0x22],
                        &id,
                        &stack,
                        &0x7FFF_FFFFu32.to_be_bytes(),
                        &object,
                        &[0; 16],
                    ]),
                ),
                // An instance whose fields claim 4 GiB.
                (
                    "instance",
                    be(&[
                        &[0x21],
                        &id,
                        &stack,
                        &node1,
                        &u32::MAX.to_be_bytes(),
                        &[0; 8],
                    ]),
                ),
                // A class with 65 535 fields, none of them there.
                (
                    "class",
                    be(&[
                        &[0x20],
                        &id,
                        &stack,
                        &object,
                        &[0; 40],
                        &[0, 0, 0, 8],
                        &[0, 0, 0, 0, 0xFF, 0xFF],
                    ]),
                ),
            ];
            for (what, sub) in &cases {
                let p = dir.join("hostile.hprof");
                // In a record of its own length, then in one claiming 4 GiB.
                std::fs::write(&p, with_records(&segment(sub.len() as u32, sub))).unwrap();
                refused(&heap(&p, &out), what, "hostile.hprof");
                std::fs::write(&p, with_records(&segment(u32::MAX, sub))).unwrap();
                refused(&heap(&p, &out), what, "hostile.hprof");
            }

            // Floods: a segment claiming 4 GiB that a 1 MB gzip fills with
            // ~24 million GC roots of absent objects, or ~10 million
            // objects (one ID over and over).
            let root = be(&[&[0xFF], &id]);
            let mut inst = be(&[&[0x21], &id, &stack, &node1, &8u32.to_be_bytes()]);
            inst.extend_from_slice(&[0; 8]);
            for (what, unit, count) in [("roots", &root, 24u64 << 20), ("objects", &inst, 10 << 20)]
            {
                let p = dir.join("flood.hprof.gz");
                let mut gz = flate2::write::GzEncoder::new(
                    std::fs::File::create(&p).unwrap(),
                    flate2::Compression::best(),
                );
                let head = with_records(&[]);
                gz.write_all(&head[..head.len() - 9]).unwrap();
                gz.write_all(&segment(u32::MAX, &[])).unwrap();
                let block = unit.repeat(1 << 14);
                for _ in 0..count >> 14 {
                    gz.write_all(&block).unwrap();
                }
                gz.finish().unwrap();
                let size = std::fs::metadata(&p).unwrap().len();
                assert!(size < 4 << 20, "{what}: {size}");
                let r = heap(&p, &out);
                match r.code {
                    // Indexed within the cap (a flood the index holds)...
                    Some(0) => assert!(r.peak_mib < 500, "{what}: {} MiB", r.peak_mib),
                    // ... or refused, saying where and why.
                    _ => refused(&r, what, "flood.hprof.gz"),
                }
            }
        },
    );
}

/// A saved index beside the dump whose table of contents claims 3 GiB for
/// each byte section (every chunk the same MiB of the file) is not
/// trusted: it is built again, in capped memory.
#[test]
fn a_hostile_saved_index_is_rebuilt_in_capped_memory() {
    // Peaks are measured from a fresh process (common::in_own_process).
    common::in_own_process(
        "heap_analyser_limits::a_hostile_saved_index_is_rebuilt_in_capped_memory",
        || {
            let dir = common::scratch("heap_analyser_limits_index");
            let dump = common::synth::write_list(&dir.join("list.hprof"), 3);
            let out = dir.join("out.txt");
            let args = ["heap", dump.to_str().unwrap(), "classes"];
            let r = tool_in(&args, &out, CAP);
            assert_eq!(r.code, Some(0), "{}", r.stderr);
            let good = std::fs::read_to_string(&out).unwrap();
            let ix = dir.join("list.hprof.hprof-rs-index");
            let bytes = std::fs::read(&ix).unwrap();
            let u32_at =
                |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
            let u64_at =
                |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
            let toc_at = u64_at(&bytes, 24) as usize;
            let toc = &bytes[toc_at..];
            // The data, a MiB of zeros, then the hostile table of contents.
            let mut hostile = bytes[..toc_at].to_vec();
            hostile.resize(toc_at + (1 << 20), 0);
            let mut new_toc = toc[..4].to_vec();
            let mut at = 4;
            for _ in 0..u32_at(toc, 0) {
                let (id_elem, len) = (&toc[at..at + 4], u64_at(toc, at + 4));
                let chunks = u32_at(toc, at + 12) as usize;
                let body = &toc[at + 16..at + 16 + 8 * chunks];
                at += 16 + 8 * chunks;
                new_toc.extend_from_slice(id_elem);
                if id_elem[2] != 1 {
                    new_toc.extend_from_slice(&len.to_le_bytes());
                    new_toc.extend_from_slice(&(chunks as u32).to_le_bytes());
                    new_toc.extend_from_slice(body);
                    continue;
                }
                let claimed: u64 = 3 << 30;
                new_toc.extend_from_slice(&claimed.to_le_bytes());
                new_toc.extend_from_slice(&((claimed >> 20) as u32).to_le_bytes());
                for _ in 0..claimed >> 20 {
                    new_toc.extend_from_slice(&(toc_at as u64).to_le_bytes());
                }
            }
            let new_at = hostile.len() as u64;
            hostile.extend_from_slice(&new_toc);
            hostile[24..32].copy_from_slice(&new_at.to_le_bytes());
            hostile[32..40].copy_from_slice(&(new_toc.len() as u64).to_le_bytes());
            std::fs::write(&ix, &hostile).unwrap();
            let r = tool_in(&args, &out, CAP);
            assert_eq!(r.code, Some(0), "{}", r.stderr);
            assert!(r.peak_mib < 300, "{} MiB", r.peak_mib);
            assert_eq!(std::fs::read_to_string(&out).unwrap(), good);
            assert_ne!(std::fs::read(&ix).unwrap(), hostile, "built again");
        },
    );
}
