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
pub fn children(idom: &[u32], retained: &[u64]) -> Csr {
    // The root is nobody's child.
    sorted(
        Csr::group_by(
            idom.len(),
            idom.len(),
            |k| if k == 0 { NONE } else { idom[k] },
        ),
        retained,
    )
}

/// Numbers grouped by `key` (`groups` rows; [`NONE`]: in none), each row
/// biggest retained first.
pub fn by_retained(key: &[u32], groups: usize, retained: &[u64]) -> Csr {
    sorted(Csr::group(key, groups), retained)
}

fn sorted(mut tree: Csr, retained: &[u64]) -> Csr {
    for v in 0..tree.rows() {
        let (a, b) = (tree.offsets[v] as usize, tree.offsets[v + 1] as usize);
        tree.targets[a..b].sort_unstable_by(|&x, &y| {
            retained[y as usize]
                .cmp(&retained[x as usize])
                .then(x.cmp(&y))
        });
    }
    tree
}

/// Retained size of each set: `set_of[k]` names the set of number `k`
/// ([`NONE`]: no set), `sets` how many there are.
pub fn set_retained(tree: &Csr, retained: &[u64], set_of: &[u32], sets: usize) -> Vec<u64> {
    let mut total = vec![0u64; sets];
    let mut above = vec![0u32; sets];
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
        stack.push((c, tree.offsets[c as usize]));
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_children_and_sets() {
        // 0 -> 1 -> 2 -> 3, 0 -> 4; sizes 0, 10, 20, 30, 5.
        let idom = [0, 0, 1, 2, 0];
        let mut r = vec![0, 10, 20, 30, 5];
        retained(&idom, &mut r);
        assert_eq!(r, vec![65, 60, 50, 30, 5]);
        let tree = children(&idom, &r);
        assert_eq!(tree.row(0), &[1, 4]);
        assert_eq!(tree.row(2), &[3]);
        // Set A = {1, 3} (3 is below 1: counted once), set B = {2, 4}.
        let sets = set_retained(&tree, &r, &[NONE, 0, 1, 0, 1], 2);
        assert_eq!(sets, vec![60, 55]);
    }
}
