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
//! first in both formats. The few messages needed are encoded by hand
//! (varints and length-delimited fields: a protobuf library and its code
//! generator would be more than the encoding).
//!
//! What is encoded is a [`Session`]: the UI's, or a binary file read into
//! one here.

use crate::session::feed::read_input;
use crate::session::Session;
use crate::ToolResult;
use std::collections::HashMap;
use std::io::Write;

#[derive(Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn varint(&mut self, v: u64) {
        crate::leb128::put(&mut self.0, v);
    }
    fn uint(&mut self, field: u32, v: u64) {
        if v != 0 {
            self.varint(u64::from(field) << 3);
            self.varint(v);
        }
    }
    fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }
    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.varint((u64::from(field) << 3) | 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn packed(&mut self, field: u32, vs: impl Iterator<Item = u64>) {
        let mut inner = Pb::default();
        for v in vs {
            inner.varint(v);
        }
        self.bytes(field, &inner.0);
    }
}

#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Self {
        let mut s = Strings::default();
        s.id(""); // index 0 must be the empty string
        s
    }
    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

const TYPES: [(&str, &str); 5] = [
    ("samples", "count"),
    ("alloc_objects", "count"),
    ("alloc_space", "bytes"),
    ("inuse_objects", "count"),
    ("inuse_space", "bytes"),
];

/// The profile, not yet compressed. Errors when the file has neither CPU
/// samples nor allocation sites.
pub fn encode(s: &Session) -> ToolResult<Vec<u8>> {
    if s.cpu.is_none() && s.sites.is_none() {
        return Err("no CPU SAMPLES or ALLOC SITES record in the file (run the agent with cpu=samples or heap=sites, format=b)".into());
    }
    let mut strings = Strings::new();
    let mut p = Pb::default();
    for (t, u) in TYPES {
        let mut vt = Pb::default();
        vt.int(1, strings.id(t));
        vt.int(2, strings.id(u));
        p.bytes(1, &vt.0);
    }
    // Locations and functions: one per HPROF frame, ids from 1.
    let mut loc_ids: HashMap<u64, u64> = HashMap::new();
    let mut funcs: HashMap<String, u64> = HashMap::new();
    let mut locations = Vec::new();
    let mut functions = Vec::new();
    let mut stack_of = |trace: u32, strings: &mut Strings| -> Vec<u64> {
        let frames = s.trace_frames(trace).unwrap_or(&[]);
        frames
            .iter()
            .map(|&f| {
                if let Some(&id) = loc_ids.get(&f) {
                    return id;
                }
                let name = s.frame_label(f);
                let (file, line) = s.frame_source(f);
                let next_fn = funcs.len() as u64 + 1;
                let fid = *funcs.entry(name.clone()).or_insert_with(|| {
                    let mut fu = Pb::default();
                    fu.uint(1, next_fn);
                    fu.int(2, strings.id(&name));
                    fu.int(3, strings.id(&name));
                    fu.int(4, strings.id(&file));
                    functions.push(fu.0);
                    next_fn
                });
                let id = loc_ids.len() as u64 + 1;
                loc_ids.insert(f, id);
                let mut ln = Pb::default();
                ln.uint(1, fid);
                ln.int(2, i64::from(line.max(0)));
                let mut lo = Pb::default();
                lo.uint(1, id);
                lo.bytes(4, &ln.0);
                locations.push(lo.0);
                id
            })
            .collect()
    };
    let sample = |p: &mut Pb, locs: Vec<u64>, values: [u64; 5], label: Option<(i64, i64)>| {
        let mut sa = Pb::default();
        sa.packed(1, locs.into_iter());
        sa.packed(2, values.into_iter());
        if let Some((k, v)) = label {
            let mut la = Pb::default();
            la.int(1, k);
            la.int(2, v);
            sa.bytes(3, &la.0);
        }
        p.bytes(2, &sa.0);
    };
    if let Some(cpu) = &s.cpu {
        for e in &cpu.entries {
            let locs = stack_of(e.trace_serial, &mut strings);
            sample(&mut p, locs, [u64::from(e.count), 0, 0, 0, 0], None);
        }
    }
    if let Some(sites) = &s.sites {
        let key = strings.id("class");
        for x in &sites.sites {
            let locs = stack_of(x.trace_serial, &mut strings);
            let class = strings.id(&s.site_class(x.class_serial, x.array_type));
            sample(
                &mut p,
                locs,
                [
                    0,
                    u64::from(x.instances_allocated),
                    u64::from(x.bytes_allocated),
                    u64::from(x.live_instances),
                    u64::from(x.live_bytes),
                ],
                Some((key, class)),
            );
        }
    }
    // Samples the report did not count: one pseudo function and location
    // each, `[lost samples: reason]`, as `hprof-rs flame` draws them.
    for (why, n) in s.cpu_lost.iter().flat_map(|l| &l.reasons) {
        let name = crate::flame::lost_frame(why);
        let fid = functions.len() as u64 + 1;
        let mut fu = Pb::default();
        fu.uint(1, fid);
        fu.int(2, strings.id(&name));
        fu.int(3, strings.id(&name));
        functions.push(fu.0);
        let id = locations.len() as u64 + 1;
        let mut ln = Pb::default();
        ln.uint(1, fid);
        let mut lo = Pb::default();
        lo.uint(1, id);
        lo.bytes(4, &ln.0);
        locations.push(lo.0);
        sample(&mut p, vec![id], [*n, 0, 0, 0, 0], None);
    }
    if let Some(l) = &s.cpu_lost {
        // Profile.comment: the report's own line.
        p.int(13, strings.id(&l.line()));
    }
    for l in &locations {
        p.bytes(4, l);
    }
    for f in &functions {
        p.bytes(5, f);
    }
    let default_type = strings.id("samples");
    let mut period = Pb::default();
    period.int(1, default_type);
    period.int(2, strings.id("count"));
    for st in &strings.table {
        p.bytes(6, st.as_bytes());
    }
    // When the profile was taken: the file's header time, its length to
    // its last record (binary streams; a text report has neither).
    if s.times.start_ms > 0 {
        p.int(9, s.times.start_ms.saturating_mul(1_000_000) as i64);
        p.int(10, s.times.end_us.saturating_mul(1000) as i64);
    }
    p.bytes(11, &period.0);
    p.int(12, 1);
    p.int(14, default_type);
    Ok(p.0)
}

/// Gzip a profile (pprof files are gzipped protobuf).
pub fn gzip(raw: &[u8]) -> ToolResult<Vec<u8>> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(raw)
        .and_then(|_| gz.finish())
        .map_err(|e| format!("cannot compress the profile: {e}"))
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
    Ok(format!(
        "wrote {}: {} CPU sample rows, {} allocation sites",
        crate::output::name(out),
        p.cpu.as_ref().map_or(0, |c| c.entries.len()),
        p.sites.as_ref().map_or(0, |x| x.sites.len())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_fields_encode_as_protobuf() {
        let mut p = Pb::default();
        p.uint(1, 300);
        assert_eq!(p.0, [0x08, 0xac, 0x02]);
        let mut p = Pb::default();
        p.int(2, -1);
        assert_eq!(p.0.len(), 1 + 10, "negative int64 is ten bytes");
        let mut p = Pb::default();
        p.packed(1, [1u64, 2, 300].into_iter());
        assert_eq!(p.0, [0x0a, 4, 1, 2, 0xac, 0x02]);
        let mut p = Pb::default();
        p.uint(3, 0);
        assert!(p.0.is_empty(), "zero is the default and not written");
    }

    #[test]
    fn a_file_without_samples_or_sites_is_refused() {
        let p = Session::new(0, crate::session::Kind::File, "x".into());
        assert!(encode(&p).unwrap_err().contains("cpu=samples"));
    }
}
