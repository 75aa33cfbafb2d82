//! Immediate dominators by SEMI-NCA (Georgiadis and Tarjan's simplification
//! of Lengauer-Tarjan: semidominators with path compression, then each
//! immediate dominator as the nearest common ancestor of the DFS parent and
//! the semidominator). Near-linear, one pass each way, no recursion: the
//! dominator tree of a linked list is as deep as the list, and iterative
//! data-flow methods need a pass per link of such chains.
//!
//! Vertices are numbered in DFS preorder from the virtual root 0, which
//! dominates everything; `preds` lists each vertex's predecessors in that
//! numbering (edges from the virtual root are the `from_root` set).

use super::alloc::{collected, filled, push, NoMemory};
use super::csr::{Bits, Csr};
use super::ids::NONE;

/// Immediate dominator of every vertex (`idom[0] = 0`), from the DFS tree
/// (`parent[v] < v` for every `v > 0`, `parent[0] = 0`), each vertex's
/// predecessors, and the vertices the virtual root points to. Consumes
/// `parent` for the result.
pub fn semi_nca(preds: &Csr, from_root: &Bits, parent: Vec<u32>) -> Result<Vec<u32>, NoMemory> {
    let n = parent.len();
    let mut semi = collected(0..n as u32, "semidominators")?;
    // Smallest semidominator on the compressed path up from a vertex.
    let mut label = collected(0..n as u32, "semidominators")?;
    let mut ancestor = filled(n, NONE, "semidominators")?;
    let mut path = Vec::new();
    for w in (1..n).rev() {
        let mut s = if from_root.get(w as u32) { 0 } else { w as u32 };
        for &v in preds.row(w as u32) {
            let v = v as usize;
            let candidate = if ancestor[v] == NONE {
                v as u32
            } else {
                compress(v, &mut ancestor, &mut label, &mut path)?;
                label[v]
            };
            s = s.min(candidate);
        }
        semi[w] = s;
        label[w] = s;
        ancestor[w] = parent[w];
    }
    drop((label, ancestor, path));
    let mut idom = parent;
    idom[0] = 0;
    for w in 1..n {
        let mut d = idom[w];
        while d > semi[w] {
            d = idom[d as usize];
        }
        idom[w] = d;
    }
    Ok(idom)
}

/// Path compression from `v` to the root of its tree, without recursion.
fn compress(
    v: usize,
    ancestor: &mut [u32],
    label: &mut [u32],
    path: &mut Vec<u32>,
) -> Result<(), NoMemory> {
    path.clear();
    let mut x = v;
    while ancestor[ancestor[x] as usize] != NONE {
        push(path, x as u32, "semidominators")?;
        x = ancestor[x] as usize;
    }
    while let Some(y) = path.pop() {
        let y = y as usize;
        let a = ancestor[y] as usize;
        if label[a] < label[y] {
            label[y] = label[a];
        }
        ancestor[y] = ancestor[a];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Rng;
    use super::*;

    /// Dominators by the definition: `d` dominates `v` iff `v` is not
    /// reachable from the root once `d` is removed.
    fn reference(n: usize, succ: &[Vec<usize>]) -> Vec<usize> {
        let reach = |removed: Option<usize>| {
            let mut seen = vec![false; n];
            if removed == Some(0) {
                return seen; // without the root nothing is reached
            }
            let mut stack = vec![0];
            seen[0] = true;
            while let Some(v) = stack.pop() {
                for &t in &succ[v] {
                    if Some(t) != removed && !seen[t] {
                        seen[t] = true;
                        stack.push(t);
                    }
                }
            }
            seen
        };
        let all = reach(None);
        let dominators: Vec<Vec<bool>> = (0..n)
            .map(|d| {
                let r = reach(Some(d));
                (0..n).map(|v| all[v] && (v == d || !r[v])).collect()
            })
            .collect();
        // The immediate dominator is the strict dominator dominated by all others.
        (0..n)
            .map(|v| {
                if v == 0 {
                    return 0;
                }
                if !all[v] {
                    return usize::MAX;
                }
                let strict: Vec<usize> = (0..n).filter(|&d| d != v && dominators[d][v]).collect();
                *strict
                    .iter()
                    .find(|&&d| strict.iter().all(|&o| dominators[o][d]))
                    .unwrap()
            })
            .collect()
    }

    /// Numbers the graph by DFS preorder, then runs SEMI-NCA.
    fn run(n: usize, succ: &[Vec<usize>]) -> Vec<usize> {
        let mut num = vec![NONE; n];
        let mut order = Vec::new();
        let mut parent = Vec::new();
        let mut stack = vec![(0usize, 0usize)];
        num[0] = 0;
        order.push(0);
        parent.push(0u32);
        while let Some(top) = stack.last_mut() {
            let (v, e) = *top;
            if e == succ[v].len() {
                stack.pop();
                continue;
            }
            top.1 += 1;
            let t = succ[v][e];
            if num[t] == NONE {
                num[t] = order.len() as u32;
                order.push(t);
                parent.push(num[v]);
                stack.push((t, 0));
            }
        }
        let m = order.len();
        let mut key = Vec::new();
        let mut src = Vec::new();
        let mut from_root = Bits::new(m).unwrap();
        for (v, ts) in succ.iter().enumerate() {
            for &t in ts {
                if num[v] == NONE || num[t] == NONE {
                    continue;
                }
                if v == 0 {
                    from_root.set(num[t]);
                } else {
                    key.push(num[t]);
                    src.push(num[v]);
                }
            }
        }
        // preds grouped by target, listing sources
        let by = Csr::group(&key, m).unwrap();
        let preds = Csr {
            offsets: by.offsets,
            targets: by.targets.iter().map(|&e| src[e as usize]).collect(),
        };
        let idom = semi_nca(&preds, &from_root, parent).unwrap();
        (0..n)
            .map(|v| {
                if num[v] == NONE {
                    usize::MAX
                } else {
                    order[idom[num[v] as usize] as usize]
                }
            })
            .collect()
    }

    #[test]
    fn agrees_with_the_definition_on_thousands_of_random_graphs() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for round in 0..3000 {
            let n = 2 + rng.below(14) as usize;
            let edges = rng.below(3 * n as u64) as usize;
            let mut succ = vec![Vec::new(); n];
            for _ in 0..edges {
                let a = rng.below(n as u64) as usize;
                let b = rng.below(n as u64) as usize;
                succ[a].push(b);
            }
            // Chains sometimes, the shape data-flow methods are slow on.
            if round % 5 == 0 {
                for (v, s) in succ.iter_mut().enumerate().take(n - 1) {
                    s.push(v + 1);
                }
            }
            let want = reference(n, &succ);
            let got = run(n, &succ);
            assert_eq!(got, want, "round {round}: {succ:?}");
        }
    }

    #[test]
    fn a_long_chain_and_a_long_cycle_need_no_recursion() {
        let n = 400_000;
        let mut succ: Vec<Vec<usize>> = (0..n)
            .map(|v| if v + 1 < n { vec![v + 1] } else { vec![] })
            .collect();
        // A back edge from the end to the middle and a shortcut.
        succ[n - 1].push(n / 2);
        succ[0].push(n - 10);
        let got = run(n, &succ);
        assert_eq!(got[1], 0);
        assert_eq!(got[n / 2 - 1], n / 2 - 2);
        // Reached along the chain and, past the shortcut, from its end.
        assert_eq!(got[n / 2], 0);
        assert_eq!(got[n / 2 + 1], n / 2);
        assert_eq!(got[n - 10], 0, "the shortcut bypasses the chain");
        assert_eq!(got[n - 9], n - 10);
        assert_eq!(got[n - 11], n - 12);
    }
}
