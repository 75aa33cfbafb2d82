//! The object table: one slot per object the agent tracks (allocation
//! sites, heap dumps). A tracked object's JVMTI tag carries its slot, so
//! ObjectFree (which only reports the tag) can find what the object was
//! counted against. The printed object ID is `0x50000000 + slot`, as the
//! original's table handles.
//!
//! Lock-free on the allocation path: a fresh slot is an atomic increment, a
//! reused one comes from a lock-free queue of freed slots, and entries live
//! in lazily allocated fixed chunks of atomics (no resizing, no lock).

use crossbeam_channel::{unbounded, Receiver, Sender};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::ids::OBJECT_ID_BASE;

const CHUNK_BITS: u32 = 16;
const CHUNK: usize = 1 << CHUNK_BITS;
/// 4096 chunks of 65536 slots: 268,435,455 live objects at most, which keeps
/// every 4-byte ID in the original's `0x5xxxxxxx` range.
const MAX_CHUNKS: usize = 4096;
pub const MAX_SLOTS: u32 = (MAX_CHUNKS * CHUNK - 1) as u32;

/// What a slot records: an opaque 32-bit "owner" (the allocation profile
/// stores its site index) and the object's size in bytes (saturated).
/// `owner` of slots that belong to no allocation site.
pub const NO_OWNER: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    pub owner: u32,
    pub size: u32,
}

pub struct ObjectTable {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
    next: AtomicU32,
    free_tx: Sender<u32>,
    free_rx: Receiver<u32>,
    live: AtomicUsize,
}

impl Default for ObjectTable {
    fn default() -> Self {
        let (free_tx, free_rx) = unbounded();
        ObjectTable {
            chunks: (0..MAX_CHUNKS).map(|_| OnceLock::new()).collect(),
            // Slot 0 is never used: ID 0 means null.
            next: AtomicU32::new(1),
            free_tx,
            free_rx,
            live: AtomicUsize::new(0),
        }
    }
}

fn pack(i: ObjectInfo) -> u64 {
    ((i.owner as u64) << 32) | i.size as u64
}

fn unpack(v: u64) -> ObjectInfo {
    ObjectInfo {
        owner: (v >> 32) as u32,
        size: v as u32,
    }
}

impl ObjectTable {
    fn cell(&self, slot: u32) -> Option<&AtomicU64> {
        let c = (slot >> CHUNK_BITS) as usize;
        let chunk = self
            .chunks
            .get(c)?
            .get_or_init(|| (0..CHUNK).map(|_| AtomicU64::new(0)).collect());
        chunk.get(slot as usize & (CHUNK - 1))
    }

    /// Take a slot for a newly tracked object; None when the table is full.
    pub fn insert(&self, info: ObjectInfo) -> Option<u32> {
        let slot = match self.free_rx.try_recv() {
            Ok(s) => s,
            Err(_) => {
                let s = self.next.fetch_add(1, Ordering::Relaxed);
                if s > MAX_SLOTS {
                    self.next.store(MAX_SLOTS + 1, Ordering::Relaxed);
                    return None;
                }
                s
            }
        };
        self.cell(slot)?.store(pack(info), Ordering::Release);
        self.live.fetch_add(1, Ordering::Relaxed);
        Some(slot)
    }

    pub fn get(&self, slot: u32) -> Option<ObjectInfo> {
        if slot == 0 || slot >= self.next.load(Ordering::Acquire) {
            return None;
        }
        Some(unpack(self.cell(slot)?.load(Ordering::Acquire)))
    }

    /// Release a slot (ObjectFree); returns what it held.
    pub fn remove(&self, slot: u32) -> Option<ObjectInfo> {
        let info = self.get(slot)?;
        self.cell(slot)?.store(0, Ordering::Release);
        self.live.fetch_sub(1, Ordering::Relaxed);
        let _ = self.free_tx.send(slot);
        Some(info)
    }

    /// An ID for an object that is named but not counted in allocation
    /// sites (class mirrors, Thread objects); 0 if the table is full.
    pub fn allocate_id(&self) -> u32 {
        self.insert(ObjectInfo {
            owner: NO_OWNER,
            size: 0,
        })
        .map_or(0, Self::object_id)
    }

    pub fn object_id(slot: u32) -> u32 {
        OBJECT_ID_BASE.wrapping_add(slot)
    }

    pub fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// Bytes of agent memory the table uses now (for `verbose`).
    pub fn memory_bytes(&self) -> usize {
        let chunks = self.chunks.iter().filter(|c| c.get().is_some()).count();
        chunks * CHUNK * std::mem::size_of::<AtomicU64>() + self.free_rx.len() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn slots_start_at_one_and_are_reused() {
        let t = ObjectTable::default();
        let a = t.insert(ObjectInfo { owner: 7, size: 24 }).unwrap();
        let b = t.insert(ObjectInfo { owner: 8, size: 16 }).unwrap();
        assert_eq!((a, b), (1, 2));
        assert_eq!(ObjectTable::object_id(a), 0x5000_0001);
        assert_eq!(t.get(b), Some(ObjectInfo { owner: 8, size: 16 }));
        assert_eq!(t.remove(a), Some(ObjectInfo { owner: 7, size: 24 }));
        assert_eq!(t.live(), 1);
        let c = t.insert(ObjectInfo { owner: 9, size: 32 }).unwrap();
        assert_eq!(c, a, "freed slot reused");
        assert!(t.get(0).is_none());
    }

    #[test]
    fn concurrent_inserts_get_distinct_slots() {
        let t = Arc::new(ObjectTable::default());
        let hs: Vec<_> = (0..4)
            .map(|k| {
                let t = t.clone();
                std::thread::spawn(move || {
                    (0..50_000)
                        .map(|i| t.insert(ObjectInfo { owner: k, size: i }).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<u32> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 200_000);
        assert_eq!(t.live(), 200_000);
        assert!(t.memory_bytes() >= 200_000 * 8);
    }
}
