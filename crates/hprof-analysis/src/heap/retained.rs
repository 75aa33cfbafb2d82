//! Retained sizes over the dominator tree, in preorder numbers.
//!
//! * [`retained`]: an object's retained size is its shallow size plus that
//!   of everything it dominates. A dominator precedes what it dominates in
//!   the DFS preorder, so one sweep from the last number to the first adds
//!   each object's total to its immediate dominator's.
//! * [`set_retained`]: what a set of objects retains together (all
//!   instances of a class, all objects of an allocation site) is the sum of
//!   the retained sizes of its members that no other member dominates;
//!   found in one walk down the dominator tree counting, per set, how many
//!   members are above the current object.
//! * [`accumulation_points`]: where the bytes of the biggest retainers
//!   accumulate (the `suspects` query's answer), found once at index build:
//!   on a 200 000-long linked list the walk is 200 000 levels deep, cheap
//!   in memory and dear through reads of a saved index.

use super::alloc::{filled, push, with_room, NoMemory};
use super::csr::Csr;
use super::ids::NONE;

/// Turns shallow sizes per preorder number into retained sizes, in place
/// (`idom[0] = 0` is the virtual root, whose total is every object's
/// shallow size).
pub fn retained(idom: &[u32], sizes: &mut [u64]) {
    for k in (1..idom.len()).rev() {
        let d = idom[k] as usize;
        sizes[d] += sizes[k];
    }
}

/// The dominator tree's children of each number, biggest retained first
/// (ties: lower number first).
pub fn children(idom: &[u32], retained: &[u64]) -> Result<Csr, NoMemory> {
    // The root is nobody's child.
    sorted(
        Csr::group_by(
            idom.len(),
            idom.len(),
            |k| if k == 0 { NONE } else { idom[k] },
        )?,
        retained,
    )
}

/// Numbers grouped by `key` (`groups` rows; [`NONE`]: in none), each row
/// biggest retained first.
pub fn by_retained(key: &[u32], groups: usize, retained: &[u64]) -> Result<Csr, NoMemory> {
    sorted(Csr::group(key, groups)?, retained)
}

/// Sorts each row biggest retained first, ties lower number first. A row
/// is sorted as packed keys (retained / 8 inverted above the number: the
/// same order) with no lookup of `retained` during the sort: a class's
/// millions of instances compared through random reads of a 200 MB array
/// took most of this phase on a 4 GB dump. Sizes beyond 32 GiB, which do
/// not pack, are compared as they are.
fn sorted(mut tree: Csr, retained: &[u64]) -> Result<Csr, NoMemory> {
    let mut keys: Vec<u64> = Vec::new();
    for v in 0..tree.rows() {
        let (a, b) = (tree.offsets[v] as usize, tree.offsets[v + 1] as usize);
        let row = &mut tree.targets[a..b];
        if row.len() < 2 {
            continue;
        }
        if keys.capacity() < row.len() {
            drop(std::mem::take(&mut keys));
            keys = with_room(row.len(), "members of a row")?;
        }
        keys.clear();
        let mut packs = true;
        keys.extend(row.iter().map(|&k| {
            let r = retained[k as usize];
            packs &= r.is_multiple_of(8) && r / 8 <= u64::from(u32::MAX);
            (u64::from(u32::MAX).saturating_sub(r / 8) << 32) | u64::from(k)
        }));
        if packs {
            keys.sort_unstable();
            for (t, &key) in row.iter_mut().zip(&keys) {
                *t = key as u32;
            }
        } else {
            row.sort_unstable_by(|&x, &y| {
                retained[y as usize]
                    .cmp(&retained[x as usize])
                    .then(x.cmp(&y))
            });
        }
    }
    Ok(tree)
}

/// A walk down from a big retainer goes on to its biggest child while that
/// child retains at least this share of its parent.
pub const ACCUMULATION_SHARE: f64 = 0.8;

/// Where the bytes of each of the first `tops` children of the virtual
/// root accumulate: from each, down the tree to its biggest child while
/// that child retains at least [`ACCUMULATION_SHARE`] of its parent. The
/// walks are in disjoint subtrees: together at most one step per number.
pub fn accumulation_points(tree: &Csr, retained: &[u64], tops: usize) -> Vec<u32> {
    let accumulation = |mut k: u32| {
        // Rows are biggest retained first.
        while let Some(&c) = tree.row(k).first() {
            if (retained[c as usize] as f64) < ACCUMULATION_SHARE * retained[k as usize] as f64 {
                break;
            }
            k = c;
        }
        k
    };
    tree.row(0)
        .iter()
        .take(tops)
        .map(|&t| accumulation(t))
        .collect()
}

/// Retained size of each set: `set_of[k]` names the set of number `k`
/// ([`NONE`]: no set), `sets` how many there are.
pub fn set_retained(
    tree: &Csr,
    retained: &[u64],
    set_of: &[u32],
    sets: usize,
) -> Result<Vec<u64>, NoMemory> {
    let mut total = filled(sets, 0u64, "sets")?;
    let mut above = filled(sets, 0u32, "sets")?;
    // (number, next child position); entering counts, leaving uncounts.
    let mut stack: Vec<(u32, u32)> = vec![(0, tree.offsets[0])];
    while let Some(top) = stack.last_mut() {
        let (v, e) = *top;
        if e == tree.offsets[v as usize + 1] {
            stack.pop();
            if let Some(&g) = set_of.get(v as usize).filter(|&&g| g != NONE && v != 0) {
                above[g as usize] -= 1;
            }
            continue;
        }
        top.1 += 1;
        let c = tree.targets[e as usize];
        let g = set_of[c as usize];
        if g != NONE {
            if above[g as usize] == 0 {
                total[g as usize] += retained[c as usize];
            }
            above[g as usize] += 1;
        }
        push(
            &mut stack,
            (c, tree.offsets[c as usize]),
            "levels of the dominator tree",
        )?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::super::Rng;
    use super::*;

    #[test]
    fn totals_children_and_sets() {
        // 0 -> 1 -> 2 -> 3, 0 -> 4; sizes 0, 10, 20, 30, 5.
        let idom = [0, 0, 1, 2, 0];
        let mut r = vec![0, 10, 20, 30, 5];
        retained(&idom, &mut r);
        assert_eq!(r, vec![65, 60, 50, 30, 5]);
        let tree = children(&idom, &r).unwrap();
        assert_eq!(tree.row(0), &[1, 4]);
        assert_eq!(tree.row(2), &[3]);
        // Set A = {1, 3} (3 is below 1: counted once), set B = {2, 4}.
        let sets = set_retained(&tree, &r, &[NONE, 0, 1, 0, 1], 2).unwrap();
        assert_eq!(sets, vec![60, 55]);
        // 1 -> 2 keeps 50 of 60 (>= 80 %), 2 -> 3 only 30 of 50.
        assert_eq!(accumulation_points(&tree, &r, 64), vec![2, 4]);
        assert_eq!(accumulation_points(&tree, &r, 1), vec![2]);
    }

    #[test]
    fn rows_sort_biggest_first_ties_by_number_packed_or_not() {
        let mut rng = Rng(0x5851_F42D_4C95_7F2D);
        for round in 0..500 {
            let n = 2 + rng.below(60) as usize;
            // Multiples of 8 with many ties; now and then one beyond
            // 32 GiB (not packed) or not a multiple of 8.
            let retained: Vec<u64> = (0..n)
                .map(|_| match rng.below(40) {
                    0 => (40 << 30) + rng.below(3) * 8,
                    1 => 8 * rng.below(5) + 3,
                    _ => 8 * rng.below(5),
                })
                .collect();
            let key: Vec<u32> = (0..n).map(|_| rng.below(4) as u32).collect();
            let got = by_retained(&key, 4, &retained).unwrap();
            for g in 0..4u32 {
                let mut want: Vec<u32> = (0..n as u32).filter(|&k| key[k as usize] == g).collect();
                want.sort_by(|&x, &y| {
                    retained[y as usize]
                        .cmp(&retained[x as usize])
                        .then(x.cmp(&y))
                });
                assert_eq!(got.row(g), &want[..], "round {round}: {retained:?} {key:?}");
            }
        }
    }

    /// The walk as the `suspects` query did it before the points were
    /// saved: each level's children found by scanning every number.
    fn reference_walk(idom: &[u32], r: &[u64], mut k: u32) -> u32 {
        loop {
            let biggest = (1..idom.len() as u32)
                .filter(|&c| idom[c as usize] == k)
                .max_by(|&x, &y| r[x as usize].cmp(&r[y as usize]).then(y.cmp(&x)));
            match biggest {
                Some(c) if r[c as usize] as f64 >= 0.8 * r[k as usize] as f64 => k = c,
                _ => return k,
            }
        }
    }

    #[test]
    fn accumulation_points_agree_with_a_walk_level_by_level_on_random_trees() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let mut below = |n: u64| rng.below(n);
        for round in 0..2000 {
            let n = 2 + below(40) as usize;
            // Dominators precede what they dominate; often a chain (a
            // linked list), sizes from a small range (ties).
            let chain = round % 3 == 0;
            let idom: Vec<u32> = (0..n as u64)
                .map(|k| match k {
                    0 => 0,
                    _ if chain && below(8) != 0 => k as u32 - 1,
                    _ => below(k) as u32,
                })
                .collect();
            let mut r: Vec<u64> = (0..n)
                .map(|k| if k == 0 { 0 } else { 1 + below(4) * 8 })
                .collect();
            retained(&idom, &mut r);
            let tree = children(&idom, &r).unwrap();
            let tops = 1 + below(6) as usize;
            let want: Vec<u32> = tree
                .row(0)
                .iter()
                .take(tops)
                .map(|&t| reference_walk(&idom, &r, t))
                .collect();
            assert_eq!(
                accumulation_points(&tree, &r, tops),
                want,
                "round {round}: {idom:?} {r:?}"
            );
        }
    }
}
