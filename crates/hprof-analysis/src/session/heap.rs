//! The Heap view: a class histogram (instances and shallow bytes per class)
//! of a complete heap dump of the session (the latest, or one the page
//! chooses among the last [`KEPT_DUMPS`]), counted by the reader's
//! [`HistoBuilder`] while the dump streams by, so a dump costs memory per
//! class, not per object.

use super::Session;
use crate::reader::{HistoBuilder, HistoEntry, ShallowSizeModel};
use std::collections::VecDeque;

/// Complete dumps kept for the chooser (the oldest goes first).
pub const KEPT_DUMPS: usize = 8;

/// A dump being read, or the last one read.
pub struct Dump {
    pub histo: HistoBuilder,
    pub roots: u64,
    pub classes: u64,
    pub at_ms: f64,
    /// Which dump of the session (1 = first).
    pub number: u32,
}

#[derive(Default)]
pub struct HeapState {
    building: Option<Dump>,
    /// Segments of the dump being read (1.0.2 streams).
    segments: u32,
    /// The last [`KEPT_DUMPS`] complete dumps, oldest first.
    done: VecDeque<Dump>,
    dumps: u32,
    /// Dumps read to their end.
    pub complete: u32,
    /// Rows of one kept dump (by number), named, with the count of class
    /// names they used.
    rows: Option<(u32, usize, Vec<HistoEntry>)>,
    /// The stream's identifier size (from its header).
    pub id_size: u32,
}

impl HeapState {
    /// A HEAP DUMP or HEAP DUMP SEGMENT record starts.
    pub fn start(&mut self, segment: bool, at_ms: f64) {
        if segment && self.building.is_some() {
            self.segments += 1;
            return;
        }
        // A plain HEAP DUMP, or the first segment of a dump.
        self.dumps += 1;
        self.segments = 1;
        self.building = Some(Dump {
            histo: HistoBuilder::new(self.id_size.max(4), ShallowSizeModel::default()),
            roots: 0,
            classes: 0,
            at_ms,
            number: self.dumps,
        });
    }

    pub fn segments_open(&self) -> u32 {
        self.segments
    }

    /// The dump being read, for the reader's loop to fill without holding
    /// the session (put back with [`HeapState::put_back`]).
    pub fn take_building(&mut self) -> Dump {
        self.building.take().unwrap_or_else(|| {
            self.dumps += 1;
            Dump {
                histo: HistoBuilder::new(self.id_size.max(4), ShallowSizeModel::default()),
                roots: 0,
                classes: 0,
                at_ms: 0.0,
                number: self.dumps,
            }
        })
    }

    /// After a record's sub-records: a plain HEAP DUMP is complete, a
    /// segment waits for HEAP DUMP END.
    pub fn put_back(&mut self, d: Dump, segment: bool) {
        if segment {
            self.building = Some(d);
        } else {
            self.complete(d);
        }
    }

    pub fn end_segments(&mut self) {
        if let Some(d) = self.building.take() {
            self.complete(d);
        }
    }

    fn complete(&mut self, d: Dump) {
        self.complete += 1;
        self.segments = 0;
        if self.done.len() == KEPT_DUMPS {
            self.done.pop_front();
        }
        self.done.push_back(d);
    }

    pub fn dumps(&self) -> u32 {
        self.dumps
    }

    pub fn reading(&self) -> bool {
        self.building.is_some()
    }

    pub fn last(&self) -> Option<&Dump> {
        self.done.back()
    }

    /// A kept dump by number (from 1), or the latest for `None`.
    pub fn dump(&self, number: Option<u32>) -> Option<&Dump> {
        match number {
            None => self.last(),
            Some(n) => self.done.iter().find(|d| d.number == n),
        }
    }

    /// The kept dumps, for the chooser: number and time.
    pub fn kept(&self) -> Vec<KeptDump> {
        self.done
            .iter()
            .map(|d| KeptDump {
                number: d.number,
                at_ms: d.at_ms,
                objects: d.histo.objects(),
            })
            .collect()
    }
}

/// A kept dump, for the chooser.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeptDump {
    pub number: u32,
    pub at_ms: f64,
    pub objects: u64,
}

/// A row of the class histogram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapRow {
    pub rank: usize,
    pub class: String,
    pub instances: u64,
    /// Shallow bytes.
    pub bytes: u64,
}

/// The Heap view: the dumps always; the histogram of the chosen one.
#[derive(Clone, Debug, PartialEq)]
pub struct HeapView {
    /// A dump is being read.
    pub reading: bool,
    /// Dumps seen.
    pub dumps: u32,
    pub kept: Vec<KeptDump>,
    /// The chosen dump's histogram, or whether it was dropped for newer
    /// ones (`gone`).
    pub histogram: Result<HeapHistogram, Gone>,
}

/// The chosen dump is not here: `true` when it was dropped for newer ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gone(pub bool);

/// One page of a dump's class histogram.
#[derive(Clone, Debug, PartialEq)]
pub struct HeapHistogram {
    pub number: u32,
    pub at_ms: f64,
    pub roots: u64,
    pub class_dumps: u64,
    pub objects: u64,
    /// Instances and shallow bytes of all classes.
    pub instances: u64,
    pub bytes: u64,
    pub classes: usize,
    pub matched: usize,
    pub offset: usize,
    pub rows: Vec<HeapRow>,
}

impl Session {
    /// The histogram of a complete dump (`dump`, from 1; the latest for
    /// `None`), rows with `class` in their name, `offset`/`limit` paged,
    /// sorted by bytes or instances.
    pub fn heap_view(
        &mut self,
        dump: Option<u32>,
        class: &str,
        sort: &str,
        offset: usize,
        limit: usize,
    ) -> HeapView {
        let reading = self.heap.reading();
        let kept = self.heap.kept();
        let dumps = self.heap.dumps();
        let Some(d) = self.heap.dump(dump) else {
            let gone = dump.is_some() && self.heap.last().is_some();
            return HeapView {
                reading,
                dumps,
                kept,
                histogram: Err(Gone(gone)),
            };
        };
        let (number, roots, class_dumps, objects, at_ms) =
            (d.number, d.roots, d.classes, d.histo.objects(), d.at_ms);
        let names = self.class_ids.len();
        let fresh = matches!(&self.heap.rows, Some((n, c, _)) if *n == number && *c == names);
        if !fresh {
            let rows = d.histo.rows(|id| self.class_name_by_id(id));
            self.heap.rows = Some((number, names, rows));
        }
        let all: &[HistoEntry] = self.heap.rows.as_ref().map_or(&[], |r| &r.2);
        let mut matched: Vec<&HistoEntry> = all
            .iter()
            .filter(|r| class.is_empty() || r.class_name.contains(class))
            .collect();
        if sort == "instances" {
            matched.sort_by(|a, b| {
                b.instances
                    .cmp(&a.instances)
                    .then_with(|| a.class_name.cmp(&b.class_name))
            });
        }
        let (instances, bytes) = all.iter().fold((0u64, 0u64), |(i, b), r| {
            (i + r.instances, b + r.shallow_bytes)
        });
        let rows = matched
            .iter()
            .enumerate()
            .skip(offset)
            .take(limit)
            .map(|(i, r)| HeapRow {
                rank: i + 1,
                class: r.class_name.clone(),
                instances: r.instances,
                bytes: r.shallow_bytes,
            })
            .collect();
        HeapView {
            reading,
            dumps,
            kept,
            histogram: Ok(HeapHistogram {
                number,
                at_ms,
                roots,
                class_dumps,
                objects,
                instances,
                bytes,
                classes: all.len(),
                matched: matched.len(),
                offset,
                rows,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Kind, Session};
    use super::{Gone, HeapHistogram, KEPT_DUMPS};
    use crate::reader::{
        BasicType, HeapSubRecord, InstanceDump, LoadClass, PrimitiveArrayDump, RecordBody,
    };

    fn hist(s: &mut Session, dump: Option<u32>, class: &str) -> HeapHistogram {
        s.heap_view(dump, class, "bytes", 0, 10).histogram.unwrap()
    }

    fn instance(class_id: u64) -> HeapSubRecord {
        HeapSubRecord::InstanceDump(InstanceDump {
            offset: 0,
            object_id: 1,
            trace_serial: 0,
            class_id,
            values_len: 4,
            values: None,
        })
    }

    #[test]
    fn a_segmented_dump_counts_per_class_when_it_ends() {
        let mut s = Session::new(1, Kind::File, "x".into());
        s.apply(
            0,
            "UTF8",
            RecordBody::Utf8 {
                id: 9,
                text: "demo/Thing".into(),
            },
        )
        .unwrap();
        s.apply(
            0,
            "LOAD CLASS",
            RecordBody::LoadClass(LoadClass {
                class_serial: 1,
                class_id: 77,
                trace_serial: 0,
                name_id: 9,
            }),
        )
        .unwrap();
        for seg in 0..2 {
            s.apply(
                0,
                "HEAP DUMP SEGMENT",
                RecordBody::HeapDumpStart { segment: true },
            )
            .unwrap();
            let mut d = s.heap.take_building();
            for _ in 0..(3 + seg) {
                d.histo.add(&instance(77));
            }
            d.histo
                .add(&HeapSubRecord::PrimitiveArrayDump(PrimitiveArrayDump {
                    offset: 0,
                    array_id: 2,
                    trace_serial: 0,
                    length: 10,
                    element_type: BasicType::Int,
                    data: None,
                }));
            s.heap.put_back(d, true);
            let v = s.heap_view(None, "", "bytes", 0, 10);
            assert_eq!(
                v.histogram,
                Err(Gone(false)),
                "not complete before HEAP DUMP END"
            );
        }
        s.apply(0, "HEAP DUMP END", RecordBody::HeapDumpEnd)
            .unwrap();
        let v = s.heap_view(None, "", "instances", 0, 10);
        assert_eq!(v.dumps, 1);
        let h = v.histogram.unwrap();
        assert_eq!(h.objects, 9);
        let rows: Vec<(&str, u64, u64)> = h
            .rows
            .iter()
            .map(|r| (r.class.as_str(), r.instances, r.bytes))
            .collect();
        assert_eq!(rows[0].0, "demo.Thing");
        assert_eq!(rows[0].1, 7);
        assert_eq!(rows[1], ("int[]", 2, 2 * 56));
        assert_eq!(hist(&mut s, None, "int").matched, 1);
        // One console line per dump, not per segment.
        let c = s.console_view(0).lines;
        assert_eq!(
            c.iter()
                .filter(|l| l.1.contains("heap dump follows"))
                .count(),
            1
        );
    }

    /// Every dump of a session can be chosen, not only the last (the
    /// last [`KEPT_DUMPS`] of them).
    #[test]
    fn each_kept_dump_can_be_chosen() {
        let mut s = Session::new(1, Kind::File, "x".into());
        for dump in 1..=(KEPT_DUMPS as u32 + 2) {
            s.apply(0, "HEAP DUMP", RecordBody::HeapDumpStart { segment: false })
                .unwrap();
            let mut d = s.heap.take_building();
            for _ in 0..dump {
                d.histo.add(&instance(77));
            }
            s.heap.put_back(d, false);
        }
        let last = KEPT_DUMPS as u32 + 2;
        let h = hist(&mut s, None, "");
        assert_eq!((h.number, h.objects), (last, u64::from(last)));
        let v = s.heap_view(None, "", "bytes", 0, 10);
        assert_eq!(v.kept.len(), KEPT_DUMPS);
        assert_eq!(v.kept[0].number, 3);
        let h = hist(&mut s, Some(3), "");
        assert_eq!((h.number, h.objects), (3, 3));
        let v = s.heap_view(Some(1), "", "bytes", 0, 10);
        assert_eq!(v.histogram, Err(Gone(true)), "dropped for the newer ones");
    }
}
