//! Class table: one entry per class the agent met, numbered from 100000.

use parking_lot::{Mutex, RwLock};
use std::sync::Arc;

pub const CLASS_SERIAL_BASE: u32 = 100_000;

#[derive(Debug)]
pub struct ClassEntry {
    pub serial: u32,
    /// JVM signature, e.g. `Ljava/lang/String;` or `[I`.
    pub signature: String,
    /// Object ID of the class mirror.
    pub object_id: u32,
    /// Trace serial of the load (the system trace before VM init).
    pub load_trace: u32,
    pub source_file: Option<String>,
}

#[derive(Default)]
pub struct ClassTable {
    entries: RwLock<Vec<Arc<ClassEntry>>>,
    /// Serialises registration so one class never gets two serials when two
    /// threads meet it at once (rare: once per class).
    register: Mutex<()>,
}

impl ClassTable {
    /// Run `f` while holding the registration lock; `f` checks the class's
    /// tag and, if untagged, calls `insert`.
    pub fn with_registration<R>(&self, f: impl FnOnce(&Self) -> R) -> R {
        let _g = self.register.lock();
        f(self)
    }

    /// Add a class; returns its new entry.
    pub fn insert(
        &self,
        signature: String,
        object_id: u32,
        load_trace: u32,
        source_file: Option<String>,
    ) -> Arc<ClassEntry> {
        let mut v = self.entries.write();
        let serial = CLASS_SERIAL_BASE + v.len() as u32;
        let e = Arc::new(ClassEntry {
            serial,
            signature,
            object_id,
            load_trace,
            source_file,
        });
        v.push(e.clone());
        e
    }

    pub fn get(&self, serial: u32) -> Option<Arc<ClassEntry>> {
        let idx = serial.checked_sub(CLASS_SERIAL_BASE)? as usize;
        self.entries.read().get(idx).cloned()
    }

    pub fn len(&self) -> usize {
        self.entries.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn all(&self) -> Vec<Arc<ClassEntry>> {
        self.entries.read().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serials_start_at_100000() {
        let t = ClassTable::default();
        let a = t.insert("Ljava/lang/Object;".into(), 0x5000_0001, 300_000, None);
        let b = t.insert("[I".into(), 0x5000_0002, 300_000, None);
        assert_eq!((a.serial, b.serial), (100_000, 100_001));
        assert_eq!(t.get(100_001).unwrap().signature, "[I");
        assert!(t.get(99_999).is_none());
    }
}
