//! Thread records, numbered from 200001 (200000 is the "unknown thread").

use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

pub use crate::vocab::UNKNOWN_THREAD_SERIAL;

#[derive(Debug)]
pub struct ThreadRecord {
    pub serial: u32,
    pub object_id: u32,
    pub name: Option<String>,
    pub group: Option<String>,
    pub parent_group: Option<String>,
    /// HPROF's own threads are never sampled or reported.
    pub agent: bool,
    pub alive: AtomicBool,
    /// Last trace captured for this thread (MONITOR DUMP), 0 = none.
    pub last_trace: AtomicU32,
    /// CPU sampling on for this thread (socket CONTROL 3/4; on by default).
    pub sampled: AtomicBool,
}

#[derive(Default)]
pub struct ThreadTable {
    records: RwLock<Vec<Arc<ThreadRecord>>>,
    /// Held while one thread is met (looked up, recorded, tagged): at an
    /// attach, the threads already running are registered while ThreadStart
    /// events arrive for new ones, and one thread must not get two records.
    registration: parking_lot::Mutex<()>,
}

impl ThreadTable {
    /// Run `f` as the only registration in progress.
    pub fn with_registration<R>(&self, f: impl FnOnce() -> R) -> R {
        let _one = self.registration.lock();
        f()
    }

    pub fn insert(
        &self,
        object_id: u32,
        name: Option<String>,
        group: Option<String>,
        parent_group: Option<String>,
        agent: bool,
    ) -> Arc<ThreadRecord> {
        let mut v = self.records.write();
        let r = Arc::new(ThreadRecord {
            serial: UNKNOWN_THREAD_SERIAL + 1 + v.len() as u32,
            object_id,
            name,
            group,
            parent_group,
            agent,
            alive: AtomicBool::new(true),
            last_trace: AtomicU32::new(0),
            sampled: AtomicBool::new(true),
        });
        v.push(r.clone());
        r
    }

    pub fn get(&self, serial: u32) -> Option<Arc<ThreadRecord>> {
        let idx = serial.checked_sub(UNKNOWN_THREAD_SERIAL + 1)? as usize;
        self.records.read().get(idx).cloned()
    }

    pub fn all(&self) -> Vec<Arc<ThreadRecord>> {
        self.records.read().clone()
    }

    pub fn mark_dead(&self, serial: u32) {
        if let Some(r) = self.get(serial) {
            r.alive.store(false, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_real_thread_is_200001() {
        let t = ThreadTable::default();
        let main = t.insert(
            0x5000_0001,
            Some("main".into()),
            Some("main".into()),
            Some("system".into()),
            false,
        );
        assert_eq!(main.serial, 200_001);
        let w = t.insert(0x5000_0002, Some("w".into()), None, None, false);
        assert_eq!(w.serial, 200_002);
        t.mark_dead(200_001);
        assert!(!t.get(200_001).unwrap().alive.load(Ordering::Relaxed));
        assert!(t.get(UNKNOWN_THREAD_SERIAL).is_none());
    }
}
