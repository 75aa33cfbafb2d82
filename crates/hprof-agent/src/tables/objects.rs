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
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
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

/// `owner` of a slot whose object a heap check found dead before its
/// ObjectFree arrived (docs/alloc_sites.md, "Live counts"): its site no
/// longer counts it, and the slot goes back to the free list only when the
/// free comes, so a late free can never reach the slot's next object.
pub const REAPED: u32 = u32::MAX - 1;

/// `owner` of a slot whose tag the VM can no longer find on its object
/// but will still report freed: a clone's first tag (see
/// `profile::alloc_sites`, "clones"). Its object is counted in another
/// slot; this one only waits for its ObjectFree, which must not be counted.
pub const GHOST: u32 = u32::MAX - 2;

/// Flag on `owner` while the allocating thread has a slot but has not yet
/// tagged its object: a heap check cannot see such an object, and must not
/// take it for dead. Site indices stay far below this bit.
pub const PENDING: u32 = 1 << 30;

/// A slot whose object is still being tagged (`PENDING` on a site index;
/// the special owners above have the top bit set too).
pub fn is_pending(owner: u32) -> bool {
    owner >> 30 == 1
}

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
    /// Set while a heap check compares the table with the heap: freed
    /// slots are not handed out again meanwhile (see `pause_recycling`).
    recycling_paused: AtomicBool,
    /// Inserts between their look at `recycling_paused` and their pop.
    popping: AtomicUsize,
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
            recycling_paused: AtomicBool::new(false),
            popping: AtomicUsize::new(0),
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

/// What a raw cell value (from `copy_cells`) holds; None for a free slot.
pub fn decode(v: u64) -> Option<ObjectInfo> {
    (v != 0).then(|| unpack(v))
}

/// While alive, freed slots are not reused (`ObjectTable::pause_recycling`).
pub struct RecyclingPause<'a>(&'a ObjectTable);

impl Drop for RecyclingPause<'_> {
    fn drop(&mut self) {
        self.0.recycling_paused.store(false, Ordering::SeqCst);
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
        let slot = match self.recycled_slot() {
            Some(s) => s,
            None => {
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

    /// A freed slot to reuse, unless there is none or a heap check has
    /// paused recycling. The check announces itself before it waits for
    /// `popping` to drain, and each insert announces itself before it looks
    /// at the flag (both sequentially consistent), so no pop can start
    /// after the check has begun.
    fn recycled_slot(&self) -> Option<u32> {
        if self.free_rx.is_empty() {
            return None;
        }
        self.popping.fetch_add(1, Ordering::SeqCst);
        let slot = if self.recycling_paused.load(Ordering::SeqCst) {
            None
        } else {
            self.free_rx.try_recv().ok()
        };
        self.popping.fetch_sub(1, Ordering::SeqCst);
        slot
    }

    /// Stop handing out freed slots until the guard is dropped; returns once
    /// no insert is in the middle of taking one. A slot's contents then
    /// change only from a value to empty (free) or from pending to tagged,
    /// never to another object's, for as long as the guard lives.
    pub fn pause_recycling(&self) -> RecyclingPause<'_> {
        self.recycling_paused.store(true, Ordering::SeqCst);
        while self.popping.load(Ordering::SeqCst) != 0 {
            std::hint::spin_loop();
        }
        RecyclingPause(self)
    }

    pub fn get(&self, slot: u32) -> Option<ObjectInfo> {
        if slot == 0 || slot >= self.next.load(Ordering::Acquire) {
            return None;
        }
        decode(self.cell(slot)?.load(Ordering::Acquire))
    }

    /// Release a slot (ObjectFree); returns what it held, or None when it
    /// was free already (so a slot is never queued for reuse twice).
    pub fn remove(&self, slot: u32) -> Option<ObjectInfo> {
        if slot == 0 || slot >= self.next.load(Ordering::Acquire) {
            return None;
        }
        let info = decode(self.cell(slot)?.swap(0, Ordering::AcqRel))?;
        self.live.fetch_sub(1, Ordering::Relaxed);
        let _ = self.free_tx.send(slot);
        Some(info)
    }

    /// Replace what `slot` holds if it still holds `expected`.
    pub fn replace(&self, slot: u32, expected: ObjectInfo, new: ObjectInfo) -> bool {
        if slot == 0 || slot >= self.next.load(Ordering::Acquire) {
            return false;
        }
        self.cell(slot).is_some_and(|c| {
            c.compare_exchange(
                pack(expected),
                pack(new),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
        })
    }

    /// One past the highest slot handed out so far.
    pub fn slot_limit(&self) -> u32 {
        self.next.load(Ordering::Acquire).min(MAX_SLOTS + 1)
    }

    /// Raw values of slots `0..out.len()` (see `decode`), read one by one.
    /// Slots in chunks never used read as free; this allocates nothing, so
    /// it may run inside a heap callback.
    pub fn copy_cells(&self, out: &mut [u64]) {
        for (slot, v) in out.iter_mut().enumerate() {
            let c = slot >> CHUNK_BITS;
            *v = match self.chunks.get(c).and_then(|c| c.get()) {
                Some(chunk) => chunk[slot & (CHUNK - 1)].load(Ordering::Acquire),
                None => 0,
            };
        }
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
    fn a_slot_is_released_once_and_not_reused_while_recycling_is_paused() {
        let t = ObjectTable::default();
        let info = ObjectInfo { owner: 3, size: 40 };
        let a = t.insert(info).unwrap();
        assert_eq!(t.remove(a), Some(info));
        assert_eq!(t.remove(a), None, "second free of one slot");
        assert_eq!(t.get(a), None, "a free slot holds nothing");
        {
            let _pause = t.pause_recycling();
            let b = t.insert(info).unwrap();
            assert_ne!(b, a, "freed slot handed out during a pause");
        }
        assert_eq!(t.insert(info), Some(a), "reused after the pause");
    }

    #[test]
    fn replace_only_swaps_the_expected_contents() {
        let t = ObjectTable::default();
        let pending = ObjectInfo {
            owner: 5 | PENDING,
            size: 16,
        };
        let settled = ObjectInfo { owner: 5, size: 16 };
        let s = t.insert(pending).unwrap();
        assert!(t.replace(s, pending, settled));
        assert!(!t.replace(s, pending, settled), "contents changed already");
        let reaped = ObjectInfo {
            owner: REAPED,
            size: 16,
        };
        assert!(t.replace(s, settled, reaped));
        assert_eq!(t.remove(s), Some(reaped));
        let mut cells = vec![1u64; t.slot_limit() as usize];
        t.copy_cells(&mut cells);
        assert_eq!(cells, [0, 0], "slot 0 unused, slot 1 free");
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
