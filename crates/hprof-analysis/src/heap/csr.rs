//! Adjacency as two flat arrays (compressed sparse rows): row `v` is
//! `targets[offsets[v]..offsets[v + 1]]`. Targets are object numbers below
//! 2^31; the top bit marks a reference through the referent of a
//! `java.lang.ref.Reference` (a weak, soft, phantom or final one).

use super::alloc::{filled, NoMemory};
use super::ids::NONE;

/// The flag of a referent edge in a target.
pub const WEAK: u32 = 1 << 31;
/// Object numbers must stay below this (the flag's bit).
pub const MAX_OBJECTS: u64 = (WEAK - 1) as u64;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Csr {
    pub offsets: Vec<u32>,
    pub targets: Vec<u32>,
}

impl Csr {
    pub fn rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    #[inline]
    pub fn row(&self, v: u32) -> &[u32] {
        let v = v as usize;
        &self.targets[self.offsets[v] as usize..self.offsets[v + 1] as usize]
    }

    /// The reverse adjacency: row `t` lists every `v` with an edge to `t`,
    /// in increasing order, the edge's flag kept.
    pub fn transpose(&self) -> Result<Csr, NoMemory> {
        let n = self.rows();
        let mut offsets = filled(n + 1, 0u32, "objects' referrers")?;
        for &t in &self.targets {
            offsets[(t & !WEAK) as usize + 1] += 1;
        }
        for i in 1..=n {
            offsets[i] += offsets[i - 1];
        }
        let mut targets = filled(self.targets.len(), 0u32, "references")?;
        // Each row's start serves as its cursor, then is shifted back.
        for v in 0..n as u32 {
            for &t in self.row(v) {
                let slot = &mut offsets[(t & !WEAK) as usize];
                targets[*slot as usize] = v | (t & WEAK);
                *slot += 1;
            }
        }
        for i in (1..=n).rev() {
            offsets[i] = offsets[i - 1];
        }
        offsets[0] = 0;
        Ok(Csr { offsets, targets })
    }

    /// Rows grouped by a key: `key(v)` for `v` below `n` (below `keys`,
    /// or [`NONE`] to leave `v` out) names the row `v` goes to. Rows list
    /// their members in increasing order.
    pub fn group_by(n: usize, keys: usize, key: impl Fn(usize) -> u32) -> Result<Csr, NoMemory> {
        let mut offsets = filled(keys + 1, 0u32, "rows")?;
        for v in 0..n {
            let k = key(v);
            if k != NONE {
                offsets[k as usize + 1] += 1;
            }
        }
        for i in 1..=keys {
            offsets[i] += offsets[i - 1];
        }
        let mut targets = filled(offsets[keys] as usize, 0u32, "row entries")?;
        // Each row's start serves as its cursor, then is shifted back.
        for v in 0..n {
            let k = key(v);
            if k != NONE {
                let slot = &mut offsets[k as usize];
                targets[*slot as usize] = v as u32;
                *slot += 1;
            }
        }
        for i in (1..=keys).rev() {
            offsets[i] = offsets[i - 1];
        }
        offsets[0] = 0;
        Ok(Csr { offsets, targets })
    }

    /// [`Csr::group_by`] with the keys in a slice.
    pub fn group(key: &[u32], keys: usize) -> Result<Csr, NoMemory> {
        Self::group_by(key.len(), keys, |v| key[v])
    }
}

/// A fixed-size set of numbers.
#[derive(Debug, Clone, Default)]
pub struct Bits(Vec<u64>);

impl Bits {
    pub fn new(n: usize) -> Result<Bits, NoMemory> {
        Ok(Bits(filled(n.div_ceil(64), 0, "bits of a set")?))
    }

    #[inline]
    pub fn get(&self, i: u32) -> bool {
        self.0[(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    #[inline]
    pub fn set(&mut self, i: u32) {
        self.0[(i / 64) as usize] |= 1 << (i % 64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_and_group() {
        let g = Csr {
            offsets: vec![0, 2, 3, 3],
            targets: vec![1, 2 | WEAK, 2],
        };
        let r = g.transpose().unwrap();
        assert_eq!(r.row(0), &[] as &[u32]);
        assert_eq!(r.row(1), &[0]);
        assert_eq!(r.row(2), &[WEAK, 1]);
        let by = Csr::group(&[1, NONE, 1, 0], 2).unwrap();
        assert_eq!(by.row(0), &[3]);
        assert_eq!(by.row(1), &[0, 2]);
        let mut b = Bits::new(70).unwrap();
        b.set(69);
        assert!(b.get(69) && !b.get(68));
    }

    #[test]
    fn sizes_beyond_the_allocator_are_errors() {
        let rows = Csr::group_by(0, usize::MAX / 8, |_| NONE).unwrap_err();
        assert_eq!(rows.what, "rows");
        assert!(Bits::new(usize::MAX).is_err());
    }
}
