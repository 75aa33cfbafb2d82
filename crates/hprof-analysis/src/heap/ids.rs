//! Object identifiers: compact storage while a dump is read, and the map
//! from an identifier to the object's number.
//!
//! Identifiers are the VM's addresses (HotSpot's dumps, our VM dumper's) or
//! the agent's dense handles (the JVMTI walk's dumps). Both are compact:
//! they share their high 32 bits with few others, and the objects of a heap
//! fill a contiguous range at a fixed granularity (8-byte alignment for
//! addresses, 1 for handles).
//!
//! * [`KeyVec`] stores identifiers in 4 bytes each while one value of the
//!   high 32 bits is seen, in 5 (a byte naming one of at most 256 high
//!   parts) beyond that, and in 8 only for input whose identifiers spread
//!   wider than any heap (hostile files).
//! * [`IdMap`] answers "which object has this identifier" with its rank
//!   among the dump's identifiers in increasing order: a bitmap over the
//!   range at the identifiers' granularity, allocated in blocks only where
//!   objects are, with rank counts per block and per word (two memory reads
//!   per lookup, no sorting); a sorted array when the identifiers are too
//!   sparse for a bitmap.

use std::collections::TryReserveError;

use super::alloc::{collected, filled, grow, with_room, NoMemory};

/// "No such entry" in the `u32` arrays of this module and its users.
pub const NONE: u32 = u32::MAX;

/// Identifiers in 4 bytes each where possible; see the module notes.
#[derive(Default)]
pub struct KeyVec {
    lo: Vec<u32>,
    /// Index into `highs` per entry; empty while `highs` has one value.
    hi: Vec<u8>,
    highs: Vec<u32>,
    /// Every identifier in full once more than 256 high parts were seen.
    wide: Option<Vec<u64>>,
}

impl KeyVec {
    pub fn len(&self) -> usize {
        match &self.wide {
            Some(w) => w.len(),
            None => self.lo.len(),
        }
    }

    /// Appends `id`, or reports the allocator's refusal (instead of the
    /// abort a refused `Vec::push` would be).
    #[inline]
    pub fn push(&mut self, id: u64) -> Result<(), TryReserveError> {
        if let Some(w) = self.wide.as_mut() {
            grow(w)?;
            w.push(id);
            return Ok(());
        }
        let high = (id >> 32) as u32;
        let slot = match self.highs.iter().position(|&h| h == high) {
            Some(i) => i,
            None if self.highs.len() < 256 => {
                if self.highs.len() == 1 {
                    let mut hi = Vec::new();
                    hi.try_reserve(self.lo.len() + 1)?;
                    hi.resize(self.lo.len(), 0);
                    self.hi = hi;
                }
                self.highs.push(high);
                self.highs.len() - 1
            }
            None => {
                let mut w = Vec::new();
                w.try_reserve(self.lo.len() + 1)?;
                w.extend((0..self.lo.len()).map(|i| self.get(i)));
                w.push(id);
                self.wide = Some(w);
                self.lo = Vec::new();
                self.hi = Vec::new();
                return Ok(());
            }
        };
        grow(&mut self.lo)?;
        self.lo.push(id as u32);
        if self.highs.len() > 1 {
            grow(&mut self.hi)?;
            self.hi.push(slot as u8);
        }
        Ok(())
    }

    #[inline]
    pub fn get(&self, i: usize) -> u64 {
        if let Some(w) = &self.wide {
            return w[i];
        }
        let h = if self.hi.is_empty() {
            self.highs[0]
        } else {
            self.highs[usize::from(self.hi[i])]
        };
        (u64::from(h) << 32) | u64::from(self.lo[i])
    }

    /// Replaces every identifier by `f(position, identifier)`, reusing
    /// the storage of the low halves where it can.
    pub fn map_into_u32(self, mut f: impl FnMut(usize, u64) -> u32) -> Result<Vec<u32>, NoMemory> {
        match self.wide {
            Some(w) => collected(w.iter().enumerate().map(|(i, &id)| f(i, id)), "references"),
            None => {
                let KeyVec {
                    mut lo, hi, highs, ..
                } = self;
                for (i, v) in lo.iter_mut().enumerate() {
                    let h = if hi.is_empty() {
                        highs[0]
                    } else {
                        highs[usize::from(hi[i])]
                    };
                    *v = f(i, (u64::from(h) << 32) | u64::from(*v));
                }
                Ok(lo)
            }
        }
    }
}

/// Slots per bitmap block (a power of two): 8 KiB of bits.
const BLOCK_BITS: u64 = 1 << 16;
const WORDS_PER_BLOCK: usize = (BLOCK_BITS / 64) as usize;

/// The map from an identifier to its rank (see the module notes).
pub enum IdMap {
    Bitmap(Bitmap),
    Sorted(Vec<u64>),
}

/// Bits over `[min, max]` at granularity `1 << shift`, in blocks.
pub struct Bitmap {
    min: u64,
    shift: u32,
    /// Block of the range -> allocated block, or [`NONE`].
    dir: Vec<u32>,
    words: Vec<u64>,
    /// Set bits before each word, within its block.
    word_rank: Vec<u16>,
    /// Set bits before each allocated block.
    block_rank: Vec<u32>,
}

impl Bitmap {
    #[inline]
    fn locate(&self, id: u64) -> Option<(usize, u32, u32)> {
        let d = id.checked_sub(self.min)?;
        if d & ((1u64 << self.shift) - 1) != 0 {
            return None;
        }
        let slot = d >> self.shift;
        let b = *self.dir.get(usize::try_from(slot / BLOCK_BITS).ok()?)?;
        if b == NONE {
            return None;
        }
        let w = b as usize * WORDS_PER_BLOCK + ((slot % BLOCK_BITS) / 64) as usize;
        Some((w, (slot % 64) as u32, b))
    }
}

impl IdMap {
    /// Builds the map of `keys` and the permutation from rank to position
    /// in `keys`. Identifiers given twice keep their first position; the
    /// count of such duplicates is returned too.
    pub fn build(keys: &KeyVec) -> Result<(IdMap, Vec<u32>, u64), NoMemory> {
        let n = keys.len();
        if n == 0 {
            return Ok((IdMap::Sorted(Vec::new()), Vec::new(), 0));
        }
        let (mut min, mut max) = (u64::MAX, 0u64);
        for i in 0..n {
            let k = keys.get(i);
            min = min.min(k);
            max = max.max(k);
        }
        let mut or = 0u64;
        for i in 0..n {
            or |= keys.get(i) - min;
        }
        let shift = if or == 0 { 0 } else { or.trailing_zeros() };
        let range_blocks = ((max - min) >> shift) / BLOCK_BITS + 1;
        // A block directory at most as long as there are objects, and bits
        // at most 16 bytes per object: beyond that a sorted array is smaller.
        if range_blocks <= (n as u64).max(1 << 12) {
            let mut dir = filled(range_blocks as usize, NONE, "identifier blocks")?;
            let mut used = 0u32;
            for i in 0..n {
                let blk = (((keys.get(i) - min) >> shift) / BLOCK_BITS) as usize;
                if dir[blk] == NONE {
                    dir[blk] = used;
                    used += 1;
                }
            }
            let bytes = u64::from(used) * (WORDS_PER_BLOCK as u64) * 10;
            if bytes <= 16 * n as u64 + (1 << 20) {
                // Blocks are numbered in range order (the ranks depend on it).
                for (next, d) in dir.iter_mut().filter(|d| **d != NONE).enumerate() {
                    *d = next as u32;
                }
                return Self::bitmap(keys, min, shift, dir, used as usize);
            }
        }
        Self::sorted(keys)
    }

    fn bitmap(
        keys: &KeyVec,
        min: u64,
        shift: u32,
        dir: Vec<u32>,
        blocks: usize,
    ) -> Result<(IdMap, Vec<u32>, u64), NoMemory> {
        let n = keys.len();
        let mut bm = Bitmap {
            min,
            shift,
            dir,
            words: filled(blocks * WORDS_PER_BLOCK, 0, "identifier bitmap words")?,
            word_rank: Vec::new(),
            block_rank: Vec::new(),
        };
        for i in 0..n {
            let (w, bit, _) = bm
                .locate(keys.get(i))
                .expect("the directory covers every key");
            bm.words[w] |= 1 << bit;
        }
        bm.word_rank = with_room(bm.words.len(), "identifier bitmap words")?;
        bm.block_rank = with_room(blocks, "identifier blocks")?;
        let mut total = 0u32;
        for block in bm.words.chunks(WORDS_PER_BLOCK) {
            bm.block_rank.push(total);
            let mut within = 0u32;
            for &w in block {
                bm.word_rank.push(within as u16);
                within += w.count_ones();
            }
            total += within;
        }
        let map = IdMap::Bitmap(bm);
        let mut perm = filled(total as usize, NONE, "objects")?;
        let mut duplicates = 0;
        for i in 0..n {
            let r = map.rank(keys.get(i)).expect("every key is in the map") as usize;
            if perm[r] == NONE {
                perm[r] = i as u32;
            } else {
                duplicates += 1;
            }
        }
        Ok((map, perm, duplicates))
    }

    fn sorted(keys: &KeyVec) -> Result<(IdMap, Vec<u32>, u64), NoMemory> {
        let mut pairs = collected((0..keys.len()).map(|i| (keys.get(i), i as u32)), "objects")?;
        pairs.sort_unstable();
        let before = pairs.len();
        pairs.dedup_by_key(|p| p.0);
        let duplicates = (before - pairs.len()) as u64;
        let perm = collected(pairs.iter().map(|p| p.1), "objects")?;
        let ids = collected(pairs.into_iter().map(|p| p.0), "objects")?;
        Ok((IdMap::Sorted(ids), perm, duplicates))
    }

    /// The rank of `id` among the identifiers, if it is one of them.
    #[inline]
    pub fn rank(&self, id: u64) -> Option<u32> {
        match self {
            IdMap::Bitmap(bm) => {
                let (w, bit, b) = bm.locate(id)?;
                let word = bm.words[w];
                if word >> bit & 1 == 0 {
                    return None;
                }
                let below = (word & ((1u64 << bit) - 1)).count_ones();
                Some(bm.block_rank[b as usize] + u32::from(bm.word_rank[w]) + below)
            }
            IdMap::Sorted(ids) => ids.binary_search(&id).ok().map(|r| r as u32),
        }
    }
}

/// Buckets of the saved index's directory (see [`Directory`]).
pub const DIRECTORY_BUCKETS: usize = 1 << 16;

/// The saved index's lookup aid: identifiers sorted by rank are read from
/// disk, and this narrows the search for one to the ranks of its bucket
/// (`(id - min) >> shift`, 2^16 buckets over the range).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Directory {
    pub min: u64,
    pub shift: u32,
    /// First rank of each bucket, plus the number of identifiers at the end.
    pub starts: Vec<u32>,
}

impl Directory {
    /// From the identifiers in increasing order.
    pub fn build(sorted: impl Iterator<Item = u64> + Clone) -> Directory {
        let mut it = sorted.clone();
        let Some(min) = it.next() else {
            return Directory {
                min: 0,
                shift: 0,
                starts: vec![0; DIRECTORY_BUCKETS + 1],
            };
        };
        let max = it.last().unwrap_or(min);
        let mut shift = 0;
        while ((max - min) >> shift) >= DIRECTORY_BUCKETS as u64 {
            shift += 1;
        }
        let mut starts = vec![0u32; DIRECTORY_BUCKETS + 1];
        let mut n = 0u32;
        for id in sorted {
            starts[((id - min) >> shift) as usize + 1] += 1;
            n += 1;
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        debug_assert_eq!(starts[DIRECTORY_BUCKETS], n);
        Directory { min, shift, starts }
    }

    /// The ranks where `id` can be, if any.
    pub fn bucket(&self, id: u64) -> Option<std::ops::Range<u32>> {
        let b = usize::try_from(id.checked_sub(self.min)? >> self.shift).ok()?;
        let start = *self.starts.get(b)?;
        let end = *self.starts.get(b + 1)?;
        (start < end).then_some(start..end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(ids: &[u64]) -> KeyVec {
        let mut k = KeyVec::default();
        for &id in ids {
            k.push(id).unwrap();
        }
        k
    }

    fn check(ids: &[u64]) {
        let k = keys(ids);
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(k.get(i), id);
        }
        let (map, perm, dups) = IdMap::build(&k).unwrap();
        let mut sorted: Vec<u64> = ids.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(dups as usize, ids.len() - sorted.len());
        assert_eq!(perm.len(), sorted.len());
        for (r, &id) in sorted.iter().enumerate() {
            assert_eq!(map.rank(id), Some(r as u32), "rank of {id:#x}");
            assert_eq!(ids[perm[r] as usize], id);
            for probe in [id.wrapping_add(1), id.wrapping_sub(1), id ^ (1 << 40)] {
                if sorted.binary_search(&probe).is_err() {
                    assert_eq!(map.rank(probe), None, "{probe:#x}");
                }
            }
        }
        let dir = Directory::build(sorted.iter().copied());
        for (r, &id) in sorted.iter().enumerate() {
            assert!(dir.bucket(id).unwrap().contains(&(r as u32)));
        }
    }

    #[test]
    fn addresses_handles_and_spread_identifiers_map_to_their_rank() {
        // HotSpot-like addresses, 8-byte aligned, two regions, shuffled.
        let mut a: Vec<u64> = (0..5000u64).map(|i| 0x7_0000_0000 + i * 24).collect();
        a.extend((0..300u64).map(|i| 0x7_ff00_0000 + i * 16));
        a.reverse();
        a.swap(7, 4000);
        check(&a);
        // Dense handles with bit 62, granularity 1.
        check(
            &(1..3000u64)
                .map(|i| (1 << 62) | (0x5000_0000 + i))
                .collect::<Vec<_>>(),
        );
        // Spread wider than a bitmap: the sorted array, and > 256 high parts.
        check(
            &(0..600u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
                .collect::<Vec<_>>(),
        );
        // Duplicates and a single identifier.
        check(&[0x10, 0x18, 0x10, 0x28]);
        check(&[42]);
    }

    #[test]
    fn key_vec_goes_from_four_to_five_to_eight_bytes() {
        let mut k = KeyVec::default();
        k.push(0x7_0000_0010).unwrap();
        assert!(k.hi.is_empty());
        k.push(0x8_0000_0010).unwrap();
        assert_eq!(k.hi.len(), 2);
        for i in 0..300u64 {
            k.push(i << 40).unwrap();
        }
        assert!(k.wide.is_some());
        assert_eq!(k.get(0), 0x7_0000_0010);
        assert_eq!(k.get(1), 0x8_0000_0010);
        assert_eq!(k.get(301), 299 << 40);
        assert_eq!(k.len(), 302);
        let mut narrow = KeyVec::default();
        narrow.push(0x7_0000_0010).unwrap();
        narrow.push(0x8_0000_0020).unwrap();
        assert_eq!(
            narrow
                .map_into_u32(|i, id| (id >> 4) as u32 + i as u32)
                .unwrap(),
            vec![0x7000_0001, 0x8000_0003]
        );
        assert_eq!(k.map_into_u32(|_, id| (id >> 40) as u32).unwrap()[301], 299);
    }
}
