//! A pprof profile decoded field by field (profile.proto: just what the
//! tests check), independently of the encoder: the tool's `.pprof` files
//! and what the agent's `push=` sends.
use std::collections::HashMap;
use std::io::Read;

pub struct Profile {
    pub sample_types: Vec<(String, String)>,
    /// (location IDs leaf first, values)
    pub samples: Vec<(Vec<u64>, Vec<i64>)>,
    /// location ID -> function IDs of its lines
    pub locations: HashMap<u64, Vec<u64>>,
    /// function ID -> name
    pub functions: HashMap<u64, String>,
    pub period_type: (String, String),
    pub period: i64,
    pub time_nanos: i64,
    pub duration_nanos: i64,
}

impl Profile {
    /// Value `index` by the name of the leaf function.
    pub fn by_leaf(&self, index: usize) -> HashMap<String, i64> {
        let mut m = HashMap::new();
        for (locs, values) in &self.samples {
            let name = locs
                .first()
                .and_then(|l| self.locations.get(l))
                .and_then(|f| f.first())
                .and_then(|f| self.functions.get(f))
                .cloned()
                .unwrap_or_default();
            *m.entry(name).or_insert(0) += values.get(index).copied().unwrap_or(0);
        }
        m
    }
}

fn varint(b: &[u8], i: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let x = b[*i];
        *i += 1;
        v |= u64::from(x & 0x7f) << shift;
        if x < 0x80 {
            break;
        }
    }
    v
}

/// (field, wire type, varint value or bytes) of one message.
fn fields(b: &[u8]) -> Vec<(u64, u64, u64, &[u8])> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i);
        match key & 7 {
            0 => {
                let v = varint(b, &mut i);
                out.push((key >> 3, 0, v, &b[0..0]));
            }
            2 => {
                let n = varint(b, &mut i) as usize;
                out.push((key >> 3, 2, 0, &b[i..i + n]));
                i += n;
            }
            w => panic!("wire type {w} not expected in a pprof profile"),
        }
    }
    out
}

fn packed(f: (u64, u64, u64, &[u8])) -> Vec<u64> {
    if f.1 == 0 {
        return vec![f.2];
    }
    let mut v = Vec::new();
    let mut i = 0;
    while i < f.3.len() {
        v.push(varint(f.3, &mut i));
    }
    v
}

/// The stacks as `root;...;leaf` names with value `index`, summed.
impl Profile {
    pub fn stacks(&self, index: usize) -> HashMap<String, i64> {
        let mut m = HashMap::new();
        for (locs, values) in &self.samples {
            let names: Vec<String> = locs
                .iter()
                .rev()
                .map(|l| {
                    self.locations
                        .get(l)
                        .and_then(|f| f.first())
                        .and_then(|f| self.functions.get(f))
                        .cloned()
                        .unwrap_or_default()
                })
                .collect();
            *m.entry(names.join(";")).or_insert(0) += values.get(index).copied().unwrap_or(0);
        }
        m
    }
}

pub fn decode(gz: &[u8]) -> Profile {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut raw)
        .expect("gzipped");
    let top = fields(&raw);
    let strings: Vec<String> = top
        .iter()
        .filter(|f| f.0 == 6)
        .map(|f| String::from_utf8(f.3.to_vec()).expect("UTF-8"))
        .collect();
    let s = |i: u64| strings[i as usize].clone();
    let mut p = Profile {
        sample_types: Vec::new(),
        samples: Vec::new(),
        locations: HashMap::new(),
        functions: HashMap::new(),
        period_type: (String::new(), String::new()),
        period: 0,
        time_nanos: 0,
        duration_nanos: 0,
    };
    for &f in &top {
        let sub = || fields(f.3);
        let get = |n: u64| sub().into_iter().find(|x| x.0 == n).map_or(0, |x| x.2);
        match f.0 {
            1 => p.sample_types.push((s(get(1)), s(get(2)))),
            2 => {
                let mut locs = Vec::new();
                let mut vals = Vec::new();
                for x in sub() {
                    match x.0 {
                        1 => locs.extend(packed(x)),
                        2 => vals.extend(packed(x).into_iter().map(|v| v as i64)),
                        _ => {}
                    }
                }
                p.samples.push((locs, vals));
            }
            4 => {
                let lines = sub()
                    .into_iter()
                    .filter(|x| x.0 == 4)
                    .map(|x| {
                        fields(x.3)
                            .into_iter()
                            .find(|y| y.0 == 1)
                            .map_or(0, |y| y.2)
                    })
                    .collect();
                p.locations.insert(get(1), lines);
            }
            5 => {
                p.functions.insert(get(1), s(get(2)));
            }
            9 => p.time_nanos = f.2 as i64,
            10 => p.duration_nanos = f.2 as i64,
            11 => p.period_type = (s(get(1)), s(get(2))),
            12 => p.period = f.2 as i64,
            _ => {}
        }
    }
    p
}
