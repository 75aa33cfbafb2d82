//! Stack traces, numbered from 300000 in order of creation.
//!
//! A trace's identity is (thread serial when `thread=y`, else 0; frame ids).
//! The key is stored as one boxed slice `[thread, frames...]` so a lookup
//! can borrow a stack-built slice: no allocation when the trace exists.

use dashmap::DashMap;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

pub use crate::vocab::TRACE_SERIAL_BASE;

#[derive(Debug)]
pub struct Trace {
    pub serial: u32,
    /// Thread serial in the key (0 unless `thread=y`).
    pub thread_serial: u32,
    /// Frame ids, top of stack first.
    pub frames: Box<[u32]>,
    /// CPU: samples (or completed calls) since the last dump.
    pub hits: AtomicU32,
    /// CPU: self cost since the last dump (samples, or ms for cpu=times).
    pub self_cost: AtomicU64,
    /// CPU samples since the start, never reset: `push=` sends the
    /// difference from one interval to the next (docs/push.md).
    pub total: AtomicU64,
    /// Already written to this output stream (traces print once).
    pub printed: AtomicBool,
}

impl Trace {
    pub fn add_sample(&self) {
        self.add_samples(1);
    }

    /// `n` samples at once (one CPU-timer sample standing for `n` intervals).
    pub fn add_samples(&self, n: u32) {
        self.hits.fetch_add(n, Ordering::Relaxed);
        self.self_cost.fetch_add(u64::from(n), Ordering::Relaxed);
        self.total.fetch_add(u64::from(n), Ordering::Relaxed);
    }

    /// Mark printed; true if this call is the one that should print it.
    pub fn claim_print(&self) -> bool {
        !self.printed.swap(true, Ordering::AcqRel)
    }
}

#[derive(Default)]
pub struct TraceTable {
    by_key: DashMap<Box<[u32]>, Arc<Trace>>,
    by_serial: RwLock<Vec<Arc<Trace>>>,
}

impl TraceTable {
    /// `key` = `[thread_serial_or_0, frame ids...]`.
    pub fn intern(&self, key: &[u32]) -> Arc<Trace> {
        if let Some(t) = self.by_key.get(key) {
            return t.clone();
        }
        self.by_key
            .entry(key.into())
            .or_insert_with(|| {
                let mut v = self.by_serial.write();
                let t = Arc::new(Trace {
                    serial: TRACE_SERIAL_BASE + v.len() as u32,
                    thread_serial: key.first().copied().unwrap_or(0),
                    frames: key.get(1..).unwrap_or(&[]).into(),
                    hits: AtomicU32::new(0),
                    self_cost: AtomicU64::new(0),
                    total: AtomicU64::new(0),
                    printed: AtomicBool::new(false),
                });
                v.push(t.clone());
                t
            })
            .clone()
    }

    pub fn get(&self, serial: u32) -> Option<Arc<Trace>> {
        let idx = serial.checked_sub(TRACE_SERIAL_BASE)? as usize;
        self.by_serial.read().get(idx).cloned()
    }

    pub fn all(&self) -> Vec<Arc<Trace>> {
        self.by_serial.read().clone()
    }

    pub fn len(&self) -> usize {
        self.by_serial.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Zero every CPU counter (done after each dump: CPU reports are
    /// incremental).
    pub fn reset_costs(&self) {
        for t in self.by_serial.read().iter() {
            t.hits.store(0, Ordering::Relaxed);
            t.self_cost.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serials_in_creation_order_and_interned() {
        let t = TraceTable::default();
        let empty = t.intern(&[0]);
        let a = t.intern(&[0, 0x7000_0001, 0x7000_0002]);
        let a2 = t.intern(&[0, 0x7000_0001, 0x7000_0002]);
        let per_thread = t.intern(&[200_001, 0x7000_0001, 0x7000_0002]);
        assert_eq!(empty.serial, 300_000);
        assert!(empty.frames.is_empty());
        assert_eq!(a.serial, 300_001);
        assert!(Arc::ptr_eq(&a, &a2));
        assert_eq!(per_thread.serial, 300_002);
        assert_eq!(per_thread.thread_serial, 200_001);
        assert_eq!(&*a.frames, &[0x7000_0001, 0x7000_0002]);
        assert_eq!(t.get(300_001).unwrap().serial, 300_001);
    }

    #[test]
    fn costs_reset_but_printed_flag_stays() {
        let t = TraceTable::default();
        let a = t.intern(&[0, 1]);
        a.add_sample();
        a.add_sample();
        assert!(a.claim_print());
        assert!(!a.claim_print());
        t.reset_costs();
        assert_eq!(a.hits.load(Ordering::Relaxed), 0);
        assert!(a.printed.load(Ordering::Relaxed));
    }

    #[test]
    fn concurrent_interning_gives_one_serial_per_key() {
        let t = Arc::new(TraceTable::default());
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || {
                    (0..1000u32)
                        .map(|i| t.intern(&[0, i % 50]).serial)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(t.len(), 50);
    }
}
