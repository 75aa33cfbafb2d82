//! Allocations sized by a dump's data, made fallible: a dump may hold more
//! objects or references than this process may allocate (a capped address
//! space, a small machine), and a refused allocation must end the build
//! with a clear error rather than abort the process (as `Vec::push` or
//! `vec![]` would).
//!
//! Room of [`HUGE_ROOM`] bytes or more is marked for transparent huge
//! pages before it is written ([`advise`]): a build fills arrays of a few
//! bytes per object in every phase, and glibc maps and unmaps those above
//! 32 MiB afresh each time. In 4 KiB pages that was 787 k page faults and
//! 7 s of kernel time for a 4 GB dump (docs/heap-analyser.md,
//! "Performance").

use std::collections::TryReserveError;
use std::io;

/// An allocation the allocator refused: how many of what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoMemory {
    pub count: usize,
    pub what: &'static str,
}

impl std::fmt::Display for NoMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no memory for {} {}", self.count, self.what)
    }
}

impl From<NoMemory> for io::Error {
    fn from(e: NoMemory) -> io::Error {
        io::Error::new(io::ErrorKind::OutOfMemory, e.to_string())
    }
}

/// Free room from which [`advise`] asks for huge pages: 2 MiB pages pay
/// only where an array spans several.
pub const HUGE_ROOM: usize = 4 << 20;

/// Marks the free room of `v` for huge pages when it is large (see the
/// module notes).
#[inline]
pub fn advise<T>(v: &mut Vec<T>) {
    let room = v.spare_capacity_mut();
    if std::mem::size_of_val(room) >= HUGE_ROOM {
        crate::os::prefer_huge_pages(room);
    }
}

/// `n` copies of `v`, or the allocator's refusal.
pub fn filled<T: Clone>(n: usize, v: T, what: &'static str) -> Result<Vec<T>, NoMemory> {
    let mut out = with_room(n, what)?;
    out.resize(n, v);
    Ok(out)
}

/// An empty vector with room for `n` elements, or the allocator's refusal.
pub fn with_room<T>(n: usize, what: &'static str) -> Result<Vec<T>, NoMemory> {
    let mut out = Vec::new();
    out.try_reserve_exact(n)
        .map_err(|_| NoMemory { count: n, what })?;
    advise(&mut out);
    Ok(out)
}

/// Room for one more element in `v`: when it is full, its capacity
/// doubles as a `push` would double it, but a refused allocation is an
/// error rather than an abort of the process.
#[inline]
pub fn grow<T>(v: &mut Vec<T>) -> Result<(), TryReserveError> {
    if v.len() == v.capacity() {
        let room = v.len() + v.len().max(64);
        if std::mem::size_of::<T>() * room >= HUGE_ROOM {
            // glibc's realloc copies a large block into fresh 4 KiB pages:
            // copy it ourselves into room marked for huge pages first.
            let mut bigger = Vec::new();
            bigger.try_reserve_exact(room)?;
            advise(&mut bigger);
            bigger.append(v);
            *v = bigger;
        } else {
            v.try_reserve(room - v.len())?;
        }
    }
    Ok(())
}

/// Pushes `x` onto `v` (growing it as [`grow`] does).
#[inline]
pub fn push<T>(v: &mut Vec<T>, x: T, what: &'static str) -> Result<(), NoMemory> {
    grow(v).map_err(|_| NoMemory {
        count: v.len() + 1,
        what,
    })?;
    v.push(x);
    Ok(())
}

/// Collects `it` (whose length is known) into a vector, or refuses.
pub fn collected<T>(
    it: impl ExactSizeIterator<Item = T>,
    what: &'static str,
) -> Result<Vec<T>, NoMemory> {
    let mut out = with_room(it.len(), what)?;
    out.extend(it);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_errors() {
        assert_eq!(filled(3, 7u32, "x").unwrap(), vec![7, 7, 7]);
        let e = filled(usize::MAX / 2, 0u64, "references").unwrap_err();
        assert_eq!(e.what, "references");
        let io: io::Error = e.into();
        assert_eq!(io.kind(), io::ErrorKind::OutOfMemory);
        assert!(io.to_string().contains("references"));
        assert!(with_room::<u32>(usize::MAX / 2, "x").is_err());
        let mut v = Vec::new();
        for i in 0..100 {
            push(&mut v, i, "x").unwrap();
        }
        assert_eq!(v.len(), 100);
        assert_eq!(collected(0..4u8, "x").unwrap(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn large_vectors_grow_into_fresh_room_with_their_elements() {
        // Past HUGE_ROOM bytes `grow` moves the elements itself.
        let n = HUGE_ROOM / 4 * 3;
        let mut v: Vec<u32> = Vec::new();
        for i in 0..n {
            push(&mut v, i as u32, "x").unwrap();
        }
        assert!(v.capacity() * 4 > HUGE_ROOM);
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
        let mut big = with_room::<u64>(HUGE_ROOM, "x").unwrap();
        big.resize(HUGE_ROOM, 7);
        assert!(big.iter().all(|&x| x == 7));
    }
}
