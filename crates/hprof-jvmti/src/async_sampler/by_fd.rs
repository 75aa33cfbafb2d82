//! Which thread slot a perf event's file descriptor belongs to, for the
//! signal handler: a perf event's signal carries only its descriptor
//! (`si_fd`), no value of ours.
//!
//! Entries live in chunks allocated on normal threads and never freed,
//! published through atomic pointers, as the slots are (`super::slots`):
//! the handler looks a descriptor up with two atomic loads. An entry is
//! cleared before its descriptor is closed, so a descriptor number reused
//! by the program never maps to a slot.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

const CHUNK: usize = 1024;
const MAX_CHUNKS: usize = 4096;
/// Descriptors at or above this are not mapped (their thread keeps its
/// POSIX timer).
pub const MAX_FD: usize = CHUNK * MAX_CHUNKS;

type Chunk = [AtomicU64; CHUNK];

static CHUNKS: [AtomicPtr<Chunk>; MAX_CHUNKS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_CHUNKS];

/// Serialises chunk allocation (normal threads only).
static GROW: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn entry(fd: i32) -> Option<&'static AtomicU64> {
    let fd = usize::try_from(fd).ok().filter(|&f| f < MAX_FD)?;
    let chunk = CHUNKS[fd / CHUNK].load(Ordering::Acquire);
    if chunk.is_null() {
        return None;
    }
    // SAFETY: a non-null chunk was published (release) after it was fully
    // built from a leaked Box and is never freed.
    let chunk: &'static Chunk = unsafe { &*chunk };
    Some(&chunk[fd % CHUNK])
}

fn pack(index: u32, gen: u32) -> u64 {
    (u64::from(gen) << 32) | (u64::from(index) + 1)
}

/// Map `fd` to slot `index` in generation `gen`. False when `fd` is too
/// large to be mapped or the map cannot grow.
pub fn insert(fd: i32, index: u32, gen: u32) -> bool {
    let Some(f) = usize::try_from(fd).ok().filter(|&f| f < MAX_FD) else {
        return false;
    };
    let c = f / CHUNK;
    if CHUNKS[c].load(Ordering::Acquire).is_null() {
        let Ok(_g) = GROW.lock() else { return false };
        if CHUNKS[c].load(Ordering::Acquire).is_null() {
            let chunk: Box<Chunk> = Box::new([const { AtomicU64::new(0) }; CHUNK]);
            CHUNKS[c].store(Box::into_raw(chunk), Ordering::Release);
        }
    }
    match entry(fd) {
        Some(e) => {
            e.store(pack(index, gen), Ordering::Release);
            true
        }
        None => false,
    }
}

/// Forget `fd` (before it is closed).
pub fn remove(fd: i32) {
    if let Some(e) = entry(fd) {
        e.store(0, Ordering::Release);
    }
}

/// (slot index, generation) of `fd`. Async-signal-safe: two atomic loads.
pub fn get(fd: i32) -> Option<(u32, u32)> {
    let v = entry(fd)?.load(Ordering::Acquire);
    let index = (v as u32).checked_sub(1)?;
    Some((index, (v >> 32) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_map_to_slots_until_removed() {
        assert!(insert(3, 0, 7));
        assert!(insert(70_000, 41, 0xFFFF_FFFF));
        assert_eq!(get(3), Some((0, 7)));
        assert_eq!(get(70_000), Some((41, 0xFFFF_FFFF)));
        assert_eq!(get(4), None);
        assert_eq!(get(-1), None);
        remove(3);
        assert_eq!(get(3), None);
        assert!(!insert(MAX_FD as i32, 1, 1));
        assert!(!insert(-5, 1, 1));
        remove(70_000);
    }
}
