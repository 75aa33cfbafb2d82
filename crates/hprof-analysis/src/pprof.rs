//! CPU samples and allocation sites as a pprof profile (the
//! `profile.proto` format `go tool pprof` and continuous-profiling servers
//! read), gzipped: `hprof-rs export FILE --pprof OUT` and the page's pprof
//! download.
//!
//! One profile, five sample types: `samples/count` (CPU SAMPLES rows, the
//! default type), `alloc_objects/count`, `alloc_space/bytes`,
//! `inuse_objects/count`, `inuse_space/bytes` (ALLOC SITES rows, each also
//! labelled with its class). Like the UI, the last section of each kind is
//! used: CPU SAMPLES are cumulative. Stacks come from TRACE records, leaf
//! first in both formats. The encoding is `hprof_core::pprof`, the one the
//! agent's `push=` uses too.
//!
//! What is encoded is a [`Session`]: the UI's, or a binary file read into
//! one here.

use crate::session::feed::read_input;
use crate::session::Session;
use crate::ToolResult;
use hprof_core::pprof::Builder;

const TYPES: [(&str, &str); 5] = [
    ("samples", "count"),
    ("alloc_objects", "count"),
    ("alloc_space", "bytes"),
    ("inuse_objects", "count"),
    ("inuse_space", "bytes"),
];

/// Location keys of the `[lost samples: reason]` pseudo frames: above
/// every HPROF frame id.
const LOST_KEY_BASE: u64 = 1 << 63;

/// The profile, not yet compressed. Errors when the file has neither CPU
/// samples nor allocation sites.
pub fn encode(s: &Session) -> ToolResult<Vec<u8>> {
    if s.cpu.is_none() && s.sites.is_none() {
        return Err("no CPU SAMPLES or ALLOC SITES record in the file (run the agent with cpu=samples or heap=sites, format=b)".into());
    }
    let mut b = Builder::new(&TYPES);
    // Locations and functions: one per HPROF frame.
    let stack_of = |b: &mut Builder, trace: u32| -> Vec<u64> {
        let frames = s.trace_frames(trace).unwrap_or(&[]);
        frames
            .iter()
            .map(|&f| {
                if let Some(id) = b.known_location(f) {
                    return id;
                }
                let (file, line) = s.frame_source(f);
                b.location(f, &s.frame_label(f), &file, i64::from(line))
            })
            .collect()
    };
    if let Some(cpu) = &s.cpu {
        for e in &cpu.entries {
            let locs = stack_of(&mut b, e.trace_serial);
            b.sample(&locs, &[i64::from(e.count)], &[]);
        }
    }
    // Takes summed in 64 bits (crate::allocated); pprof's values are i64.
    let wide = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    for x in s.allocated.sites() {
        let locs = stack_of(&mut b, x.trace_serial);
        let class = s.site_class(x.class_serial, x.array_type);
        b.sample(
            &locs,
            &[
                0,
                wide(x.instances_allocated),
                wide(x.bytes_allocated),
                i64::from(x.live_instances),
                i64::from(x.live_bytes),
            ],
            &[("class", &class)],
        );
    }
    // Samples the report did not count: one pseudo function and location
    // each, `[lost samples: reason]`, as `hprof-rs flame` draws them.
    for (i, (why, n)) in s.cpu_lost.iter().flat_map(|l| &l.reasons).enumerate() {
        let name = crate::flame::lost_frame(why);
        let id = b.location(LOST_KEY_BASE + i as u64, &name, "", 0);
        b.sample(&[id], &[*n as i64], &[]);
    }
    if let Some(l) = &s.cpu_lost {
        // Profile.comment: the report's own line.
        b.comment(&l.line());
    }
    // When the profile was taken: the file's header time, its length to
    // its last record (binary streams; a text report has neither).
    if s.times.start_ms > 0 {
        b.time(
            s.times.start_ms.saturating_mul(1_000_000) as i64,
            s.times.end_us.saturating_mul(1000) as i64,
        );
    }
    Ok(b.finish())
}

/// Gzip a profile (pprof files are gzipped protobuf).
pub fn gzip(raw: &[u8]) -> ToolResult<Vec<u8>> {
    hprof_core::pprof::gzip(raw).map_err(|e| format!("cannot compress the profile: {e}"))
}

/// `int[]` for an ALLOC SITES row's array type (4 to 11), else `None`.
pub fn primitive_array(array_type: u8) -> Option<&'static str> {
    Some(match array_type {
        4 => "boolean[]",
        5 => "char[]",
        6 => "float[]",
        7 => "double[]",
        8 => "byte[]",
        9 => "short[]",
        10 => "int[]",
        11 => "long[]",
        _ => return None,
    })
}

/// The session of the binary file `input` (gzipped or not, `-` for
/// standard input); a text report is refused with what to do.
pub fn read_binary_file(input: &str) -> ToolResult<Session> {
    let (form, r) = crate::input::open(input)?;
    match form {
        crate::input::Form::Text => Err(format!("{input}: {}", crate::reader::TEXT_REPORT_MESSAGE)),
        crate::input::Form::Empty => Err(format!("{input}: empty stream: no HPROF header")),
        crate::input::Form::Binary => {
            read_input(input, form, r).map_err(|e| format!("{input}: {e}"))
        }
    }
}

/// `hprof-rs export`: read the binary file `input` (gzipped or not) and
/// write its gzipped profile to `out`; what was written.
pub fn export(input: &str, out: &str) -> ToolResult<String> {
    let p = read_binary_file(input)?;
    let gz = gzip(&encode(&p)?)?;
    crate::output::write(out, &gz)?;
    let said = format!(
        "wrote {}: {} CPU sample rows, {} allocation sites",
        crate::output::name(out),
        p.cpu.as_ref().map_or(0, |c| c.entries.len()),
        p.allocated.sites().len()
    );
    Ok(match p.allocated.note() {
        Some(n) => format!("{said}\n{n}"),
        None => said,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_samples_or_sites_is_refused() {
        let p = Session::new(0, crate::session::Kind::File, "x".into());
        assert!(encode(&p).unwrap_err().contains("cpu=samples"));
    }
}
