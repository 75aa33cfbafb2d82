//! A VM dump as text, in the original's layout (docs/output-formats.md,
//! "HEAP DUMP"; docs/heap_dump.md): ROOT lines, then OBJ and ARR lines,
//! then CLS lines, superclasses before their subclasses. HotSpot writes its
//! CLASS DUMPs first and its roots before (JDK 21 and later) or after
//! (JDK 17) its objects, so its file is read more than once:
//!
//! 1. as the VM writes it (`vm::VmStream`): the ROOT lines, each class's
//!    field layout, and where each CLASS DUMP is ([`ClassPlaces`]);
//! 2. once it is complete ([`Later`]): the objects, from the first heap
//!    record on;
//! 3. the classes, each CLASS DUMP read again at its place, in an order
//!    that puts every superclass first.
//!
//! Nothing is held but the record being read and, per class, its layout
//! and place.

use crate::reader::{ClassDump, ClassLayouts, HeapSubRecord, HprofReader, ReadOptions, RecordBody};
use crate::transcode::hotspot::{self, Serials};
use crate::transcode::symbols::Symbols;
use crate::transcode::text;
use crate::vm::output::BoxedFormat;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::time::Duration;

/// What the text of a VM dump is made with (built up by the first pass).
pub struct TextState {
    pub syms: Box<Symbols>,
    pub layouts: ClassLayouts,
    pub names: Box<text::HeapNames>,
    /// HotSpot's trace and thread serials to ours, as in binary.
    pub serials: Serials,
    pub classes: ClassPlaces,
}

impl TextState {
    pub fn new(serials: Serials) -> TextState {
        TextState {
            syms: Box::default(),
            layouts: ClassLayouts::new(hotspot::ID_SIZE),
            names: Box::default(),
            serials,
            classes: ClassPlaces::default(),
        }
    }

    /// One sub-record of the first pass, which occupies `at..end` of the
    /// VM's file: a root is written, a CLASS DUMP's layout and place kept,
    /// the rest left for [`Later`].
    pub fn first_pass(
        &mut self,
        fmt: &mut BoxedFormat,
        out: &mut Vec<u8>,
        mut sub: HeapSubRecord,
        at: u64,
        end: u64,
    ) {
        match &sub {
            HeapSubRecord::Root(_) => {
                self.serials.map_sub_record(&mut sub);
                self.format(fmt, out, &sub);
            }
            HeapSubRecord::ClassDump(cd) => {
                self.layouts.add(cd);
                self.classes.add(cd, at, end - at);
            }
            _ => {}
        }
    }

    fn format(&mut self, fmt: &mut BoxedFormat, out: &mut Vec<u8>, sub: &HeapSubRecord) {
        text::heap_sub(
            fmt.as_mut(),
            out,
            &self.syms,
            &self.layouts,
            &mut self.names,
            hotspot::ID_SIZE,
            sub,
        );
    }
}

/// Where a CLASS DUMP is in the VM's file.
struct ClassAt {
    class_id: u64,
    super_id: u64,
    offset: u64,
    len: u64,
}

/// The CLASS DUMPs of a VM dump, in the order the VM wrote them.
#[derive(Default)]
pub struct ClassPlaces(Vec<ClassAt>);

impl ClassPlaces {
    fn add(&mut self, cd: &ClassDump, offset: u64, len: u64) {
        self.0.push(ClassAt {
            class_id: cd.class_id,
            super_id: cd.super_class_id,
            offset,
            len,
        });
    }

    /// Indices of the classes, each class's superclasses before it (the
    /// VM's order otherwise). Iterative: superclass chains come from the
    /// file, and a loop in them ends where it closes.
    fn supers_first(&self) -> Vec<usize> {
        let index: rustc_hash::FxHashMap<u64, usize> = self
            .0
            .iter()
            .enumerate()
            .map(|(i, c)| (c.class_id, i))
            .collect();
        let mut placed = vec![false; self.0.len()];
        let mut order = Vec::with_capacity(self.0.len());
        let mut chain = Vec::new();
        for i in 0..self.0.len() {
            let mut at = Some(i);
            while let Some(c) = at.filter(|&c| !placed[c]) {
                placed[c] = true;
                chain.push(c);
                at = index.get(&self.0[c].super_id).copied();
            }
            order.extend(chain.drain(..).rev());
        }
        order
    }
}

/// A stretch of a file, read by position (its own handle's offset is
/// never used, so it may be shared).
struct Slice {
    file: File,
    at: u64,
    end: u64,
}

impl Read for Slice {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (self.end - self.at).min(buf.len() as u64) as usize;
        if n == 0 {
            return Ok(0);
        }
        let k = self.file.read_at(&mut buf[..n], self.at)?;
        self.at += k as u64;
        Ok(k)
    }
}

/// The header of HotSpot's dumps (1.0.2, 8-byte IDs), put before a stretch
/// of the VM's file so that the crate's reader reads it.
fn header() -> Vec<u8> {
    let mut h = b"JAVA PROFILE 1.0.2\0".to_vec();
    h.extend_from_slice(&hotspot::ID_SIZE.to_be_bytes());
    h.extend_from_slice(&0u64.to_be_bytes());
    h
}

enum Stage {
    Objects(Box<HprofReader<io::Chain<io::Cursor<Vec<u8>>, Slice>>>),
    /// The next class to write, in `order`.
    Classes {
        order: Vec<usize>,
        next: usize,
    },
}

/// The second and third passes (see the module documentation).
pub struct Later {
    file: File,
    stage: Stage,
}

/// A pass reads at most this long per step (the writer serves other
/// output between steps).
const STEP_TIME: Duration = Duration::from_millis(50);

impl Later {
    /// The passes over the complete VM's file `file`, whose heap records
    /// are `from..end`.
    pub fn new(file: &File, from: u64, end: u64) -> io::Result<Later> {
        let slice = Slice {
            file: file.try_clone()?,
            at: from,
            end,
        };
        // Text prints the number of a primitive array's elements, never
        // their values: they are skipped, not read.
        let options = ReadOptions {
            primitive_array_data: false,
            ..ReadOptions::full()
        };
        let reader = HprofReader::with_options(io::Cursor::new(header()).chain(slice), options)
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Later {
            file: file.try_clone()?,
            stage: Stage::Objects(Box::new(reader)),
        })
    }

    /// Write some more, up to about `budget` bytes or [`STEP_TIME`]; true
    /// once the last class is written.
    pub fn step(
        &mut self,
        st: &mut TextState,
        fmt: &mut BoxedFormat,
        out: &mut Vec<u8>,
        budget: usize,
    ) -> Result<bool, String> {
        let start = (out.len(), std::time::Instant::now());
        let more = |out: &Vec<u8>| out.len() - start.0 < budget && start.1.elapsed() < STEP_TIME;
        let bad = |e: crate::reader::ReadError| format!("the VM's dump: {e}");
        loop {
            match &mut self.stage {
                Stage::Objects(reader) => {
                    while more(out) {
                        match reader.next_heap_sub_record().map_err(bad)? {
                            Some(mut sub) => {
                                if matches!(
                                    sub,
                                    HeapSubRecord::InstanceDump(_)
                                        | HeapSubRecord::ObjectArrayDump(_)
                                        | HeapSubRecord::PrimitiveArrayDump(_)
                                ) {
                                    st.serials.map_sub_record(&mut sub);
                                    st.format(fmt, out, &sub);
                                }
                            }
                            // Between heap records: the next one, or the end.
                            None => match reader.next_record().map_err(bad)? {
                                Some(r) if !matches!(r.body, RecordBody::HeapDumpEnd) => {}
                                _ => {
                                    self.stage = Stage::Classes {
                                        order: st.classes.supers_first(),
                                        next: 0,
                                    };
                                    break;
                                }
                            },
                        }
                    }
                    if matches!(self.stage, Stage::Objects(_)) {
                        return Ok(false);
                    }
                }
                Stage::Classes { order, next } => {
                    while *next < order.len() {
                        if !more(out) {
                            return Ok(false);
                        }
                        let c = &st.classes.0[order[*next]];
                        *next += 1;
                        let mut sub = read_class(&self.file, c)?;
                        st.serials.map_sub_record(&mut sub);
                        st.format(fmt, out, &sub);
                    }
                    return Ok(true);
                }
            }
        }
    }
}

/// The CLASS DUMP at its place in the VM's file, read again.
fn read_class(file: &File, c: &ClassAt) -> Result<HeapSubRecord, String> {
    let mut b = header();
    crate::transcode::hotspot::record_header(
        &mut b,
        crate::vocab::tag::HEAP_DUMP_SEGMENT,
        0,
        c.len as u32,
    );
    let at = b.len();
    b.resize(at + c.len as usize, 0);
    file.read_exact_at(&mut b[at..], c.offset)
        .map_err(|e| format!("cannot read the VM's dump file: {e}"))?;
    let mut r = HprofReader::new(&b[..]).map_err(|e| e.to_string())?;
    r.next_record().map_err(|e| e.to_string())?;
    match r.next_heap_sub_record() {
        Ok(Some(sub @ HeapSubRecord::ClassDump(_))) => Ok(sub),
        Ok(_) => Err(format!(
            "no CLASS DUMP at byte {} of the VM's dump",
            c.offset
        )),
        Err(e) => Err(format!("the VM's dump: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(class_id: u64, super_id: u64) -> ClassAt {
        ClassAt {
            class_id,
            super_id,
            offset: 0,
            len: 0,
        }
    }

    #[test]
    fn superclasses_come_first() {
        // 4 extends 3 extends 2 extends 1 (Object); 5 extends 1; 6's
        // superclass is not in the dump; 7 and 8 are each other's (the
        // loop ends where it closes).
        let p = ClassPlaces(vec![
            at(4, 3),
            at(5, 1),
            at(2, 1),
            at(1, 0),
            at(3, 2),
            at(6, 99),
            at(7, 8),
            at(8, 7),
        ]);
        let order: Vec<u64> = p.supers_first().iter().map(|&i| p.0[i].class_id).collect();
        assert_eq!(order, [1, 2, 3, 4, 5, 6, 8, 7]);
    }
}
