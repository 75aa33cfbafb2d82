//! Fast path of `hprof-rs histo` for uncompressed files: the same counting
//! and size model as `reader::histo` (exact counts per class object ID,
//! estimated shallow sizes, last heap dump), but parsed straight out of a
//! large buffer instead of field by field, and with cheap integer hashing.
//! Gzip input goes through the streaming reader instead.

use crate::reader::{java_class_name, BasicType, HistoEntry, ShallowSizeModel};
use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{Read, Seek, SeekFrom};

/// Multiplicative hash for object IDs (they are addresses or small serials).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

const CHUNK: usize = 8 << 20;

struct Input {
    f: File,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// File offset of buf[0].
    base: u64,
    eof: bool,
    progress: super::progress::Progress<std::io::Empty>,
}

impl Input {
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Make at least `n` bytes available at `pos`; false at end of file.
    fn ensure(&mut self, n: usize) -> Result<bool, String> {
        if self.end - self.pos >= n {
            return Ok(true);
        }
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        if self.buf.len() < n {
            self.buf.resize(n.max(CHUNK), 0);
        }
        while self.end < n && !self.eof {
            let got = self.f.read(&mut self.buf[self.end..]).map_err(|e| {
                format!("read error at offset {}: {e}", self.base + self.end as u64)
            })?;
            if got == 0 {
                self.eof = true;
            }
            self.end += got;
            self.progress_bytes(got);
        }
        Ok(self.end - self.pos >= n)
    }

    fn progress_bytes(&mut self, n: usize) {
        self.progress.add(n as u64);
    }

    fn skip(&mut self, n: u64) -> Result<bool, String> {
        let avail = (self.end - self.pos) as u64;
        if n <= avail {
            self.pos += n as usize;
            return Ok(true);
        }
        let target = self.offset() + n;
        self.f
            .seek(SeekFrom::Start(target))
            .map_err(|e| e.to_string())?;
        let len = self.f.metadata().map(|m| m.len()).unwrap_or(0);
        self.progress_bytes((n - avail) as usize);
        self.base = target;
        self.pos = 0;
        self.end = 0;
        Ok(target <= len)
    }

    fn u1(&mut self) -> u8 {
        let v = self.buf[self.pos];
        self.pos += 1;
        v
    }
    fn u2(&mut self) -> u16 {
        let v = u16::from_be_bytes([self.buf[self.pos], self.buf[self.pos + 1]]);
        self.pos += 2;
        v
    }
    fn u4(&mut self) -> u32 {
        let v = u32::from_be_bytes(self.buf[self.pos..self.pos + 4].try_into().unwrap());
        self.pos += 4;
        v
    }
    fn id(&mut self, size: usize) -> u64 {
        let v = if size == 8 {
            u64::from_be_bytes(self.buf[self.pos..self.pos + 8].try_into().unwrap())
        } else {
            u64::from(u32::from_be_bytes(
                self.buf[self.pos..self.pos + 4].try_into().unwrap(),
            ))
        };
        self.pos += size;
        v
    }
}

struct ClassInfo {
    super_id: u64,
    refs: u64,
    prim: u64,
}

#[derive(Default)]
struct Acc {
    classes: IdMap<ClassInfo>,
    instances: IdMap<(u64, u64)>,
    object_arrays: IdMap<(u64, u64)>,
    primitive_arrays: [(u64, u64); 12],
}

fn sub_name(t: u8) -> &'static str {
    crate::reader::sub_record_name(t).unwrap_or("unknown")
}

/// `None`: not a plain HPROF file (e.g. gzip); use the streaming reader.
pub fn histogram(path: &str, model: &ShallowSizeModel) -> Result<Option<Vec<HistoEntry>>, String> {
    let f = File::open(path).map_err(|e| format!("cannot open {path}: {e}"))?;
    let total = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut inp = Input {
        f,
        buf: vec![0; CHUNK],
        pos: 0,
        end: 0,
        base: 0,
        eof: false,
        progress: super::progress::Progress::new(std::io::empty(), path, total),
    };
    if !inp.ensure(64)? || !inp.buf.starts_with(b"JAVA PROFILE ") {
        return Ok(None);
    }
    if inp.buf.starts_with(crate::reader::TEXT_REPORT_START) {
        return Err(crate::reader::TEXT_REPORT_MESSAGE.into());
    }
    let nul = inp.buf[..inp.end]
        .iter()
        .position(|&b| b == 0)
        .filter(|&p| p + 13 <= inp.end)
        .ok_or(
            "corrupt file header: no NUL-terminated label followed by the identifier size and time",
        )?;
    inp.pos = nul + 1;
    let id_size = inp.u4() as usize;
    if id_size != 4 && id_size != 8 {
        return Err(format!(
            "corrupt file header: identifier size {id_size} at offset {}",
            nul + 1
        ));
    }
    inp.pos += 8;
    let ids = id_size as u64;

    let mut strings: IdMap<String> = IdMap::default();
    let mut class_names: IdMap<u64> = IdMap::default();
    let mut acc = Acc::default();
    let mut segments_open = false;
    let trunc = |what: &str, at: u64| format!("truncated {what} at offset {at}");
    loop {
        let rec_at = inp.offset();
        if !inp.ensure(9)? {
            if inp.end != inp.pos {
                return Err(trunc("record header", rec_at));
            }
            break;
        }
        let tag = inp.u1();
        inp.pos += 4;
        let len = u64::from(inp.u4());
        let rec_name = crate::reader::record_name(tag).unwrap_or("unknown");
        // Lengths come from the file and may be damaged: never trust one
        // beyond the bytes the file has (memory follows the file, not the
        // length field).
        if rec_at + 9 + len > total {
            return Err(format!(
                "truncated {rec_name} record at offset {rec_at}: its length {len} runs past the end of the file ({total} bytes)"
            ));
        }
        match tag {
            0x01 | 0x02 => {
                if tag == 0x01 && len < ids {
                    return Err(format!("corrupt UTF8 record at offset {rec_at}: length {len} is shorter than an identifier ({ids} bytes)"));
                }
                if !inp.ensure(len as usize)? {
                    return Err(trunc(&format!("{rec_name} record"), rec_at));
                }
                let body_end = inp.pos + len as usize;
                if tag == 0x01 {
                    let id = inp.id(id_size);
                    strings.insert(
                        id,
                        String::from_utf8_lossy(&inp.buf[inp.pos..body_end]).into_owned(),
                    );
                } else if len >= 8 + 2 * ids {
                    inp.pos += 4;
                    let cid = inp.id(id_size);
                    inp.pos += 4;
                    let nid = inp.id(id_size);
                    class_names.insert(cid, nid);
                }
                inp.pos = body_end;
            }
            0x0C | 0x1C => {
                if !(tag == 0x1C && segments_open) {
                    acc = Acc::default();
                }
                segments_open = tag == 0x1C;
                let seg_end = rec_at + 9 + len;
                while inp.offset() < seg_end {
                    let at = inp.offset();
                    let bad = |t: u8| {
                        format!("corrupt {rec_name} record (at offset {rec_at}): sub-record {} at offset {at} runs past the record's end {seg_end}", sub_name(t))
                    };
                    if !inp.ensure(1 + 2 * id_size + 8)? && inp.end - inp.pos < 1 + id_size {
                        return Err(trunc(&format!("{rec_name} sub-record"), at));
                    }
                    let st = inp.u1();
                    let fixed = match st {
                        0xFF | 0x05 | 0x07 => ids,
                        0x01 => 2 * ids,
                        0x02 | 0x03 | 0x08 => ids + 8,
                        0x04 | 0x06 => ids + 4,
                        0x21 => {
                            if !inp.ensure(2 * id_size + 8)? {
                                return Err(trunc(&format!("{rec_name} sub-record {}", sub_name(st)), at));
                            }
                            inp.pos += id_size + 4;
                            let cid = inp.id(id_size);
                            let n = u64::from(inp.u4());
                            let e = acc.instances.entry(cid).or_default();
                            e.0 += 1;
                            e.1 += n;
                            n
                        }
                        0x22 => {
                            if !inp.ensure(2 * id_size + 8)? {
                                return Err(trunc(&format!("{rec_name} sub-record {}", sub_name(st)), at));
                            }
                            inp.pos += id_size + 4;
                            let n = u64::from(inp.u4());
                            let cid = inp.id(id_size);
                            let e = acc.object_arrays.entry(cid).or_default();
                            e.0 += 1;
                            e.1 += model.object_array_size(n);
                            n * ids
                        }
                        0x23 => {
                            if !inp.ensure(id_size + 9)? {
                                return Err(trunc(&format!("{rec_name} sub-record {}", sub_name(st)), at));
                            }
                            inp.pos += id_size + 4;
                            let n = u64::from(inp.u4());
                            let code = inp.u1();
                            let ty = BasicType::from_code(code)
                                .filter(|t| *t != BasicType::Object)
                                .ok_or_else(|| format!("corrupt {rec_name} sub-record PRIMITIVE ARRAY DUMP at offset {at}: element type {code}"))?;
                            let e = &mut acc.primitive_arrays[code as usize];
                            e.0 += 1;
                            e.1 += model.primitive_array_size(n, ty);
                            n * u64::from(ty.size(0))
                        }
                        0x20 => {
                            class_dump(&mut inp, &mut acc, id_size).map_err(|e| format!("{rec_name} sub-record CLASS DUMP at offset {at}: {e}"))?;
                            0
                        }
                        t => return Err(format!("corrupt {rec_name} record (at offset {rec_at}): unknown sub-record tag 0x{t:02X} at offset {at}")),
                    };
                    if inp.offset() + fixed > seg_end {
                        return Err(bad(st));
                    }
                    if !inp.skip(fixed)? {
                        return Err(trunc(
                            &format!("{rec_name} sub-record {}", sub_name(st)),
                            at,
                        ));
                    }
                }
                if inp.offset() != seg_end {
                    return Err(format!("corrupt {rec_name} record at offset {rec_at}: sub-records end at {}, record at {seg_end}", inp.offset()));
                }
            }
            _ => {
                if tag == 0x2C {
                    segments_open = false;
                }
                if !inp.skip(len)? {
                    return Err(trunc(&format!("{rec_name} record"), rec_at));
                }
            }
        }
    }
    inp.progress.finish();

    let name_of = |cid: u64| {
        class_names
            .get(&cid)
            .and_then(|n| strings.get(n))
            .map_or_else(
                || format!("<unknown class 0x{cid:x}>"),
                |n| java_class_name(n),
            )
    };
    let field_counts = |cid: u64| -> Option<(u64, u64)> {
        let (mut refs, mut prim, mut id, mut steps) = (0, 0, cid, 0);
        while id != 0 {
            let c = acc.classes.get(&id)?;
            refs += c.refs;
            prim += c.prim;
            id = c.super_id;
            steps += 1;
            if steps > acc.classes.len() {
                return None;
            }
        }
        Some((refs, prim))
    };
    let mut rows = Vec::new();
    for (&cid, &(count, value_bytes)) in &acc.instances {
        let per = match field_counts(cid) {
            Some((r, p)) => model.instance_size(r, p),
            None => model.instance_size(0, value_bytes / count),
        };
        rows.push(HistoEntry {
            class_name: name_of(cid),
            class_id: Some(cid),
            instances: count,
            shallow_bytes: per * count,
        });
    }
    for (&cid, &(count, bytes)) in &acc.object_arrays {
        rows.push(HistoEntry {
            class_name: name_of(cid),
            class_id: Some(cid),
            instances: count,
            shallow_bytes: bytes,
        });
    }
    for (code, &(count, bytes)) in acc.primitive_arrays.iter().enumerate() {
        if count > 0 {
            let ty = BasicType::from_code(code as u8).expect("counted types are valid");
            rows.push(HistoEntry {
                class_name: format!("{}[]", ty.java_name()),
                class_id: None,
                instances: count,
                shallow_bytes: bytes,
            });
        }
    }
    rows.sort_by(|a, b| {
        b.shallow_bytes
            .cmp(&a.shallow_bytes)
            .then(b.instances.cmp(&a.instances))
            .then_with(|| a.class_name.cmp(&b.class_name))
            .then(a.class_id.cmp(&b.class_id))
    });
    Ok(Some(rows))
}

fn class_dump(inp: &mut Input, acc: &mut Acc, id_size: usize) -> Result<(), String> {
    let need = |inp: &mut Input, n: usize| -> Result<(), String> {
        if inp.ensure(n)? {
            Ok(())
        } else {
            Err("truncated".into())
        }
    };
    let value_size = |code: u8| -> Result<usize, String> {
        BasicType::from_code(code)
            .map(|t| t.size(id_size as u32) as usize)
            .ok_or_else(|| format!("unknown basic type {code}"))
    };
    need(inp, 7 * id_size + 4 + 4 + 2)?;
    let cid = inp.id(id_size);
    inp.pos += 4;
    let super_id = inp.id(id_size);
    inp.pos += 5 * id_size + 4;
    let cp = inp.u2();
    for _ in 0..cp {
        need(inp, 3)?;
        inp.pos += 2;
        let s = value_size(inp.u1())?;
        need(inp, s)?;
        inp.pos += s;
    }
    need(inp, 2)?;
    for _ in 0..inp.u2() {
        need(inp, id_size + 1)?;
        inp.pos += id_size;
        let s = value_size(inp.u1())?;
        need(inp, s)?;
        inp.pos += s;
    }
    need(inp, 2)?;
    let (mut refs, mut prim) = (0, 0);
    for _ in 0..inp.u2() {
        need(inp, id_size + 1)?;
        inp.pos += id_size;
        match BasicType::from_code(inp.u1()) {
            Some(BasicType::Object) => refs += 1,
            Some(t) => prim += u64::from(t.size(0)),
            None => return Err("unknown field type".into()),
        }
    }
    acc.classes.insert(
        cid,
        ClassInfo {
            super_id,
            refs,
            prim,
        },
    );
    Ok(())
}
