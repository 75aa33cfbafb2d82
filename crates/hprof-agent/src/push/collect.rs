//! One interval's profiles from the tables: the CPU samples and the
//! allocations counted since the previous interval (the tables' counters
//! only grow, so an interval is a difference), as pprof messages.

use crate::format::names::render_class_name;
use crate::pprof::Builder;
use crate::tables::sites::report_instances;
use crate::tables::traces::TRACE_SERIAL_BASE;
use crate::tables::Tables;
use std::sync::atomic::Ordering;

/// Location key of the pseudo frame of a stack without Java frames; frame
/// ids are 32-bit, class frames are above them.
const NO_FRAMES_KEY: u64 = 1 << 40;
const CLASS_KEY_BASE: u64 = 1 << 41;

/// What the previous interval ended with.
#[derive(Default)]
pub struct Collector {
    /// Per trace (index = serial - 300000): `Trace::total` at the last take.
    cpu_seen: Vec<u64>,
    /// Per site index: (allocated bytes, allocated instance units).
    sites_seen: Vec<(u64, u64)>,
}

/// One interval's profile, encoded (not yet compressed).
pub struct Taken {
    pub raw: Vec<u8>,
    /// Samples (CPU) or sites (allocations) with a non-zero value.
    pub rows: usize,
}

/// The interval `[from_ns, until_ns]` (ns since the epoch).
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub from_ns: i64,
    pub until_ns: i64,
}

impl Collector {
    /// Start counting from what the tables hold now (an attach, or samples
    /// taken before the first interval began, are not sent).
    pub fn starting_now(tables: &Tables) -> Collector {
        let mut c = Collector::default();
        let _ = c.cpu(
            tables,
            Span {
                from_ns: 0,
                until_ns: 0,
            },
            1,
        );
        let _ = c.alloc(
            tables,
            Span {
                from_ns: 0,
                until_ns: 0,
            },
        );
        c
    }

    /// The CPU samples since the last take, each worth `period_ns` of CPU
    /// (`cpu/nanoseconds`, with `samples/count` beside it).
    pub fn cpu(&mut self, tables: &Tables, span: Span, period_ns: i64) -> Taken {
        let mut b = Builder::new(&crate::ingest::CPU_TYPES);
        b.period("cpu", "nanoseconds", period_ns);
        b.time(span.from_ns, span.until_ns - span.from_ns);
        let traces = tables.traces.all();
        let mut rows = 0;
        for t in &traces {
            let i = (t.serial - TRACE_SERIAL_BASE) as usize;
            if self.cpu_seen.len() <= i {
                self.cpu_seen.resize(i + 1, 0);
            }
            let now = t.total.load(Ordering::Relaxed);
            let n = now.saturating_sub(self.cpu_seen[i]);
            self.cpu_seen[i] = now;
            if n == 0 {
                continue;
            }
            let locs = stack(&mut b, tables, &t.frames, None);
            b.sample(&locs, &[n as i64 * period_ns, n as i64], &[]);
            rows += 1;
        }
        Taken {
            raw: b.finish(),
            rows,
        }
    }

    /// The allocations since the last take (`alloc_objects`,
    /// `alloc_space`) and what those sites hold live now (`inuse_objects`,
    /// `inuse_space`), the allocated class as the leaf frame.
    pub fn alloc(&mut self, tables: &Tables, span: Span) -> Taken {
        let mut b = Builder::new(&crate::ingest::ALLOC_TYPES);
        b.time(span.from_ns, span.until_ns - span.from_ns);
        let interval = tables.sites.interval();
        let mut rows = 0;
        for s in tables.sites.snapshot() {
            let i = s.index as usize;
            if self.sites_seen.len() <= i {
                self.sites_seen.resize(i + 1, (0, 0));
            }
            let (bytes0, units0) = self.sites_seen[i];
            // A counter that went down was cleared (socket command): all
            // of it is new.
            let bytes = s.alloc_bytes.checked_sub(bytes0).unwrap_or(s.alloc_bytes);
            let units = s
                .alloc_instances
                .checked_sub(units0)
                .unwrap_or(s.alloc_instances);
            self.sites_seen[i] = (s.alloc_bytes, s.alloc_instances);
            if bytes == 0 && units == 0 && s.live_bytes == 0 {
                continue;
            }
            let frames = tables
                .traces
                .get(s.trace_serial)
                .map(|t| t.frames.clone())
                .unwrap_or_default();
            let class = tables
                .classes
                .get(s.class_serial)
                .map(|c| render_class_name(&c.signature).into_owned())
                .unwrap_or_else(|| "[unknown class]".to_string());
            let leaf = (CLASS_KEY_BASE + u64::from(s.class_serial), class);
            let locs = stack(&mut b, tables, &frames, Some(leaf));
            b.sample(
                &locs,
                &[
                    report_instances(units, interval) as i64,
                    bytes as i64,
                    report_instances(s.live_instances, interval) as i64,
                    s.live_bytes as i64,
                ],
                &[],
            );
            rows += 1;
        }
        Taken {
            raw: b.finish(),
            rows,
        }
    }
}

/// Location ids of a trace's frames (top first, as pprof wants: leaf
/// first), after `leaf` when given (the allocated class).
fn stack(
    b: &mut Builder,
    tables: &Tables,
    frames: &[u32],
    leaf: Option<(u64, String)>,
) -> Vec<u64> {
    let mut locs = Vec::with_capacity(frames.len() + 1);
    if let Some((key, name)) = leaf {
        locs.push(b.location(key, &name, "", 0));
    }
    for &f in frames {
        let key = u64::from(f);
        if let Some(id) = b.known_location(key) {
            locs.push(id);
            continue;
        }
        let id = match tables.frames.get(f) {
            Some(e) => {
                let m = &e.method;
                let name = format!("{}.{}", render_class_name(&m.class_signature), m.name);
                let file = m.source_file.as_deref().unwrap_or("");
                b.location(key, &name, file, i64::from(e.line.max(0)))
            }
            None => b.location(key, "[unknown frame]", "", 0),
        };
        locs.push(id);
    }
    if locs.is_empty() {
        locs.push(b.location(NO_FRAMES_KEY, "[no Java frames]", "", 0));
    }
    locs
}
