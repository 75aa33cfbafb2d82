//! The pprof profile format (`profile.proto`, what `go tool pprof`,
//! Pyroscope and Parca read) written by hand: the few messages a profile
//! needs are varints and length-delimited fields, less than a protobuf
//! library and its code generator would bring. One encoder for both
//! products: the tool's `hprof-rs export --pprof` and `profile -o x.pprof`
//! (crates/hprof-analysis), the agent's `push=` (docs/push.md).
//!
//! A [`Builder`] takes sample types, locations interned by a caller's key,
//! and samples; [`Builder::finish`] gives the encoded `Profile` message
//! (not compressed: [`gzip`] does that).

use std::collections::HashMap;
use std::io::Write;

/// A protobuf message being written.
#[derive(Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn varint(&mut self, v: u64) {
        crate::leb128::put(&mut self.0, v);
    }
    /// Field `field` as a varint; zero (the default) is not written.
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

/// The string table: index 0 is the empty string.
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Self {
        let mut s = Strings {
            table: Vec::new(),
            index: HashMap::new(),
        };
        s.id("");
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

/// One profile being built. Field numbers are those of `profile.proto`.
pub struct Builder {
    strings: Strings,
    /// sample_type (1) and sample (2) messages, in order.
    body: Pb,
    locations: Vec<Vec<u8>>,
    functions: Vec<Vec<u8>>,
    /// Location id by the caller's key.
    loc_ids: HashMap<u64, u64>,
    /// Function id by (name, file).
    fn_ids: HashMap<(String, String), u64>,
    types: usize,
    default_type: i64,
    period: Option<(i64, i64, i64)>,
    time: Option<(i64, i64)>,
    comments: Vec<i64>,
}

impl Builder {
    /// A profile whose samples carry one value per `(type, unit)`, e.g.
    /// `("cpu", "nanoseconds")`; the first is the default type.
    pub fn new(types: &[(&str, &str)]) -> Builder {
        let mut b = Builder {
            strings: Strings::new(),
            body: Pb::default(),
            locations: Vec::new(),
            functions: Vec::new(),
            loc_ids: HashMap::new(),
            fn_ids: HashMap::new(),
            types: types.len(),
            default_type: 0,
            period: None,
            time: None,
            comments: Vec::new(),
        };
        for (t, u) in types {
            let mut vt = Pb::default();
            vt.int(1, b.strings.id(t));
            vt.int(2, b.strings.id(u));
            b.body.bytes(1, &vt.0);
        }
        if let Some((t, _)) = types.first() {
            b.default_type = b.strings.id(t);
        }
        b
    }

    /// What one sample stands for: `period` of `(type, unit)` (pprof's
    /// `period_type` and `period`), e.g. 10,000,000 `cpu/nanoseconds`.
    pub fn period(&mut self, type_: &str, unit: &str, period: i64) {
        let (t, u) = (self.strings.id(type_), self.strings.id(unit));
        self.period = Some((t, u, period));
    }

    /// When the profile was taken: its start (ns since the epoch) and
    /// length (ns).
    pub fn time(&mut self, time_nanos: i64, duration_nanos: i64) {
        self.time = Some((time_nanos, duration_nanos));
    }

    /// A free-text comment (Profile.comment).
    pub fn comment(&mut self, text: &str) {
        let id = self.strings.id(text);
        self.comments.push(id);
    }

    /// The location of `key` (the caller's frame identity), if it was made.
    pub fn known_location(&self, key: u64) -> Option<u64> {
        self.loc_ids.get(&key).copied()
    }

    /// The location of `key`, made on first sight with a function named
    /// `name` in `file` at `line` (0: unknown). Functions are shared by
    /// name and file. Location ids count from 1.
    pub fn location(&mut self, key: u64, name: &str, file: &str, line: i64) -> u64 {
        if let Some(id) = self.known_location(key) {
            return id;
        }
        let fid = match self.fn_ids.get(&(name.to_string(), file.to_string())) {
            Some(&f) => f,
            None => {
                let f = self.functions.len() as u64 + 1;
                let mut fu = Pb::default();
                fu.uint(1, f);
                fu.int(2, self.strings.id(name));
                fu.int(3, self.strings.id(name));
                fu.int(4, self.strings.id(file));
                self.functions.push(fu.0);
                self.fn_ids.insert((name.to_string(), file.to_string()), f);
                f
            }
        };
        let id = self.locations.len() as u64 + 1;
        let mut ln = Pb::default();
        ln.uint(1, fid);
        ln.int(2, line.max(0));
        let mut lo = Pb::default();
        lo.uint(1, id);
        lo.bytes(4, &ln.0);
        self.locations.push(lo.0);
        self.loc_ids.insert(key, id);
        id
    }

    /// A sample: its stack (location ids, leaf first), one value per
    /// sample type (missing ones are 0), and string labels.
    pub fn sample(&mut self, locations: &[u64], values: &[i64], labels: &[(&str, &str)]) {
        let mut sa = Pb::default();
        sa.packed(1, locations.iter().copied());
        sa.packed(
            2,
            (0..self.types).map(|i| values.get(i).copied().unwrap_or(0) as u64),
        );
        for (k, v) in labels {
            let mut la = Pb::default();
            la.int(1, self.strings.id(k));
            la.int(2, self.strings.id(v));
            sa.bytes(3, &la.0);
        }
        self.body.bytes(2, &sa.0);
    }

    /// The encoded `Profile` message.
    pub fn finish(self) -> Vec<u8> {
        let Builder {
            mut strings,
            mut body,
            locations,
            functions,
            period,
            time,
            comments,
            default_type,
            ..
        } = self;
        for l in &locations {
            body.bytes(4, l);
        }
        for f in &functions {
            body.bytes(5, f);
        }
        // The period type's strings may not be in the table yet when no
        // period was given: a profile without one says "count of samples".
        let (pt, pu, p) = period.unwrap_or_else(|| (default_type, strings.id("count"), 1));
        for s in &strings.table {
            body.bytes(6, s.as_bytes());
        }
        if let Some((t, d)) = time {
            body.int(9, t);
            body.int(10, d);
        }
        let mut vt = Pb::default();
        vt.int(1, pt);
        vt.int(2, pu);
        body.bytes(11, &vt.0);
        body.int(12, p);
        for c in comments {
            body.int(13, c);
        }
        body.int(14, default_type);
        body.0
    }
}

/// Gzip a profile (pprof files and uploads are gzipped protobuf).
pub fn gzip(raw: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(raw)?;
    gz.finish()
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
    fn locations_and_functions_are_interned() {
        let mut b = Builder::new(&[("cpu", "nanoseconds")]);
        let a = b.location(7, "A.run", "A.java", 3);
        let a2 = b.location(7, "ignored", "", 0);
        let c = b.location(8, "A.run", "A.java", 4);
        assert_eq!((a, a2, c), (1, 1, 2));
        assert_eq!(b.functions.len(), 1, "one function for two lines of A.run");
        b.sample(&[a, c], &[10], &[]);
        b.period("cpu", "nanoseconds", 10);
        let bytes = b.finish();
        assert!(bytes.windows(6).any(|w| w == b"A.java"));
    }
}
