//! Where each compiled method's code lies, from JVMTI's CompiledMethodLoad
//! and CompiledMethodUnload events: it names the method of a sample taken
//! where that method's frame is not built yet or already taken down (its
//! prologue or epilogue), which AsyncGetCallTrace cannot walk; the sample
//! is walked from the caller and the method is put on top
//! (docs/cpu-samples.md, "Failed walks are recovered").
//!
//! Filled on the threads the events arrive on, read when the samples are
//! taken out of the ring (both normal threads); never from the signal
//! handler.

use super::super::refs::MethodId;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Start of a method's code → (end, method).
static CODE: Mutex<BTreeMap<usize, (usize, MethodId)>> = Mutex::new(BTreeMap::new());

fn code() -> std::sync::MutexGuard<'static, BTreeMap<usize, (usize, MethodId)>> {
    // The map stays consistent whatever a panicking holder did (single
    // inserts and removals).
    CODE.lock().unwrap_or_else(|e| e.into_inner())
}

/// `method` was compiled to `size` bytes at `start`.
pub fn loaded(start: usize, size: usize, method: MethodId) {
    if start == 0 || size == 0 {
        return;
    }
    let end = start.saturating_add(size);
    let mut map = code();
    // Code that overlapped the new code is gone (its unload event may not
    // have been seen yet).
    let stale: Vec<usize> = map
        .range(..end)
        .rev()
        .take_while(|(_, &(e, _))| e > start)
        .map(|(&s, _)| s)
        .collect();
    for s in stale {
        map.remove(&s);
    }
    map.insert(start, (end, method));
}

/// The code at `start` was freed.
pub fn unloaded(start: usize) {
    code().remove(&start);
}

/// The method whose compiled code holds `pc`, as far as the events told.
pub fn method_at(pc: usize) -> Option<MethodId> {
    let map = code();
    let (_, &(end, method)) = map.range(..=pc).next_back()?;
    (pc < end).then_some(method)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_is_found_by_any_address_inside_and_forgotten_when_replaced_or_unloaded() {
        let (a, b, c) = (
            MethodId::from_raw(0x10 as _),
            MethodId::from_raw(0x20 as _),
            MethodId::from_raw(0x30 as _),
        );
        let base = 0x7f00_0000_0000usize;
        loaded(base, 0x100, a);
        loaded(base + 0x100, 0x80, b);
        assert_eq!(method_at(base), Some(a));
        assert_eq!(method_at(base + 0xff), Some(a));
        assert_eq!(method_at(base + 0x100), Some(b));
        assert_eq!(method_at(base + 0x180), None);
        assert_eq!(method_at(base - 1), None);
        // New code over freed code whose unload was not seen yet.
        loaded(base + 0x80, 0x40, c);
        assert_eq!(method_at(base + 0x10), None);
        assert_eq!(method_at(base + 0x90), Some(c));
        assert_eq!(method_at(base + 0x120), Some(b));
        unloaded(base + 0x100);
        assert_eq!(method_at(base + 0x120), None);
        unloaded(base + 0x80);
        assert_eq!(method_at(base + 0x90), None);
    }
}
