//! Walks of the reference graph from the GC roots, without recursion:
//!
//! * [`shortest_parents`]: for each object, the referrer one step closer
//!   to the nearest GC root (breadth first), over every reference or over
//!   strong ones only: a shortest path back to a root follows them, one
//!   read a step (an object held by thousands of arrays needs no scan of
//!   its referrers).
//! * [`number`]: the depth-first preorder the dominator computation works
//!   in, from a virtual root above every entry point of the heap: the GC
//!   roots, then (each once nothing else reaches them) class objects kept by
//!   live instances, referents of soft, weak, final and phantom references,
//!   and unreachable objects (docs/heap-analyser.md, "What keeps what").
//!   Referent references are not followed: they keep nothing alive.
//! * [`preorder_preds`]: the strong referrers of every object, renumbered in
//!   that preorder (referrers the next collection frees left out).

use std::io;

use super::alloc::{filled, push, with_room, NoMemory};
use super::csr::{Bits, Csr, WEAK};
use super::ids::NONE;
use super::meta::{RefKind, RootEntry, RootKind};
use super::store::{Reader, SectionId};

/// For every object, its referrer on a shortest path from the nearest of
/// `roots`: among the referrers one step closer, the lowest numbered (the
/// object itself for a root, [`NONE`] when no root reaches it); with
/// `follow_weak` off, referent references are not followed.
pub fn shortest_parents(fwd: &Csr, roots: &[u32], follow_weak: bool) -> Result<Vec<u32>, NoMemory> {
    let n = fwd.rows();
    let mut parent = filled(n, NONE, "shortest paths")?;
    // Each object enters the queue once.
    let mut queue: Vec<u32> = with_room(n, "objects to visit")?;
    for &r in roots {
        if parent[r as usize] == NONE {
            parent[r as usize] = r;
            queue.push(r);
        }
    }
    // Level by level, each in increasing numbers: the first referrer to
    // reach an object is the lowest numbered one step closer, so it is
    // kept as found (no second pass over every reference, no distances),
    // and rows are read in file order.
    let mut level = 0;
    while level < queue.len() {
        let end = queue.len();
        queue[level..end].sort_unstable();
        for i in level..end {
            let v = queue[i];
            for &t in fwd.row(v) {
                if t & WEAK != 0 && !follow_weak {
                    continue;
                }
                let t = t & !WEAK;
                if parent[t as usize] == NONE {
                    parent[t as usize] = v;
                    queue.push(t);
                }
            }
        }
        level = end;
    }
    Ok(parent)
}

/// The preorder numbering and its DFS tree.
pub struct Numbering {
    /// Object -> preorder number (1..=n; 0 is the virtual root).
    pub num: Vec<u32>,
    /// Preorder number -> its DFS parent's (0 for entry points).
    pub parent: Vec<u32>,
    /// Preorder numbers the virtual root points to.
    pub from_root: Bits,
    /// The entry points the analyser added (GC roots are the caller's).
    pub added: Vec<RootEntry>,
    /// Numbers below this are strongly reachable (from the GC roots, or
    /// from classes their instances keep); the rest is reachable only
    /// through referents, or not at all.
    pub strong_end: u32,
}

/// What the numbering needs to know about objects besides references.
pub struct Hints<'a> {
    /// Object -> class number.
    pub class_of: &'a [u32],
    /// Class number -> its class object, if any.
    pub class_object: &'a [Option<u32>],
    /// Referent references: position in the targets, sorted, and kind.
    pub weak: &'a [(u32, RefKind)],
}

struct Walk<'a> {
    fwd: &'a Csr,
    hints: Hints<'a>,
    num: Vec<u32>,
    parent: Vec<u32>,
    next: u32,
    stack: Vec<(u32, u32)>,
    live_class: Bits,
    class_queue: Vec<u32>,
    /// Referent references met: target and position of the reference.
    weak_queue: Vec<(u32, u32)>,
    queue_weak: bool,
}

impl Walk<'_> {
    fn first_visit(&mut self, s: u32, parent: u32) -> Result<(), NoMemory> {
        self.num[s as usize] = self.next;
        // Room for every object was made at the start.
        self.parent.push(parent);
        self.next += 1;
        let c = self.hints.class_of[s as usize];
        if (c as usize) < self.hints.class_object.len() && !self.live_class.get(c) {
            self.live_class.set(c);
            push(&mut self.class_queue, c, "classes")?;
        }
        push(
            &mut self.stack,
            (s, self.fwd.offsets[s as usize]),
            "levels of a depth-first walk",
        )
    }

    fn visit(&mut self, root: u32) -> Result<(), NoMemory> {
        if self.num[root as usize] != NONE {
            return Ok(());
        }
        self.first_visit(root, 0)?;
        while let Some(top) = self.stack.last_mut() {
            let (v, e) = *top;
            if e == self.fwd.offsets[v as usize + 1] {
                self.stack.pop();
                continue;
            }
            top.1 += 1;
            let t = self.fwd.targets[e as usize];
            if t & WEAK != 0 {
                if self.queue_weak {
                    push(&mut self.weak_queue, (t & !WEAK, e), "referents")?;
                }
                continue;
            }
            if self.num[t as usize] == NONE {
                let p = self.num[v as usize];
                self.first_visit(t, p)?;
            }
        }
        Ok(())
    }

    fn weak_kind(&self, position: u32) -> RefKind {
        let w = self.hints.weak;
        match w.binary_search_by_key(&position, |p| p.0) {
            Ok(i) => w[i].1,
            Err(_) => RefKind::Weak,
        }
    }
}

/// Numbers every object (see the module notes); `roots` are the GC roots'
/// objects.
pub fn number(fwd: &Csr, roots: &[u32], hints: Hints<'_>) -> Result<Numbering, NoMemory> {
    let n = fwd.rows();
    let classes = hints.class_object.len();
    let mut w = Walk {
        fwd,
        hints,
        num: filled(n, NONE, "preorder numbers")?,
        parent: with_room(n + 1, "preorder numbers")?,
        next: 1,
        stack: Vec::new(),
        live_class: Bits::new(classes)?,
        class_queue: Vec::new(),
        weak_queue: Vec::new(),
        queue_weak: true,
    };
    w.parent.push(0);
    for &r in roots {
        w.visit(r)?;
    }
    let mut added = Vec::new();
    let mut strong_end = None;
    loop {
        if let Some(c) = w.class_queue.pop() {
            if let Some(o) = w.hints.class_object[c as usize] {
                if w.num[o as usize] == NONE {
                    let entry = RootEntry {
                        object: o,
                        kind: RootKind::ClassOfLiveInstances,
                    };
                    push(&mut added, entry, "entry points")?;
                    w.visit(o)?;
                }
            }
        } else if let Some((t, e)) = w.weak_queue.pop() {
            strong_end.get_or_insert(w.next);
            if w.num[t as usize] == NONE {
                let entry = RootEntry {
                    object: t,
                    kind: RootKind::Referent(w.weak_kind(e)),
                };
                push(&mut added, entry, "entry points")?;
                w.visit(t)?;
            }
        } else {
            break;
        }
    }
    let strong_end = strong_end.unwrap_or(w.next);
    // Unreachable objects: first those no other unreachable object refers
    // to, then what is left (cycles), in file order.
    w.queue_weak = false;
    let mut referred = Bits::new(n)?;
    for s in 0..n as u32 {
        if w.num[s as usize] == NONE {
            for &t in fwd.row(s) {
                let t = t & !WEAK;
                if t != s && w.num[t as usize] == NONE {
                    referred.set(t);
                }
            }
        }
    }
    for pass in 0..2 {
        for s in 0..n as u32 {
            if w.num[s as usize] == NONE && (pass == 1 || !referred.get(s)) {
                let entry = RootEntry {
                    object: s,
                    kind: RootKind::Unreachable,
                };
                push(&mut added, entry, "entry points")?;
                w.visit(s)?;
            }
        }
    }
    let mut from_root = Bits::new(n + 1)?;
    // Every GC root hangs from the virtual root, reached first or not.
    for s in roots.iter().copied().chain(added.iter().map(|r| r.object)) {
        from_root.set(w.num[s as usize]);
    }
    Ok(Numbering {
        num: w.num,
        parent: w.parent,
        from_root,
        added,
        strong_end,
    })
}

/// The strong referrers of every object in preorder numbers (row `k` for
/// the object numbered `k`; row 0, the virtual root's, is empty), read
/// from the reverse adjacency sections `off` and `tgt`. A referrer that is
/// not strongly reachable (`strong_end`) does not count for an object that
/// is: what the next collection frees keeps nothing alive.
pub fn preorder_preds(
    r: &Reader,
    off: SectionId,
    tgt: SectionId,
    num: &[u32],
    strong_end: u32,
) -> io::Result<Csr> {
    let counts =
        |p: u32, t: usize| p & WEAK == 0 && (num[t] >= strong_end || num[p as usize] < strong_end);
    let offsets: Vec<u32> = r.all(off)?;
    let n = num.len();
    if offsets.len() != n + 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "referrer offsets",
        ));
    }
    // Row of target position `e`, advancing with it.
    let row_of = |e: u64, t: &mut usize| {
        while u64::from(offsets[*t + 1]) <= e {
            *t += 1;
        }
    };
    let mut starts = filled(n + 2, 0u32, "objects' referrers")?;
    let mut t = 0usize;
    r.for_each::<u32>(tgt, |first, run| {
        for (i, &p) in run.iter().enumerate() {
            row_of(first + i as u64, &mut t);
            if counts(p, t) {
                starts[num[t] as usize + 1] += 1;
            }
        }
    })?;
    for k in 1..starts.len() {
        starts[k] += starts[k - 1];
    }
    let mut targets = filled(starts[n + 1] as usize, 0u32, "references")?;
    let mut t = 0usize;
    r.for_each::<u32>(tgt, |first, run| {
        for (i, &p) in run.iter().enumerate() {
            row_of(first + i as u64, &mut t);
            if counts(p, t) {
                let k = num[t] as usize;
                targets[starts[k] as usize] = num[p as usize];
                starts[k] += 1;
            }
        }
    })?;
    // Each start now holds its row's end: shift back.
    for k in (1..starts.len()).rev() {
        starts[k] = starts[k - 1];
    }
    starts[0] = 0;
    Ok(Csr {
        offsets: starts,
        targets,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Rng;
    use super::*;

    /// The rule `path` followed before the parents were saved: distances
    /// by relaxation, then the lowest-numbered referrer one step closer.
    fn reference(
        n: usize,
        edges: &[(u32, u32, bool)],
        roots: &[u32],
        follow_weak: bool,
    ) -> Vec<u32> {
        let usable = |w: bool| follow_weak || !w;
        let mut dist = vec![NONE; n];
        for &r in roots {
            dist[r as usize] = 0;
        }
        loop {
            let mut changed = false;
            for &(a, b, w) in edges {
                let (a, b) = (a as usize, b as usize);
                if usable(w) && dist[a] != NONE && dist[a] + 1 < dist[b] {
                    dist[b] = dist[a] + 1;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        (0..n)
            .map(|t| match dist[t] {
                NONE => NONE,
                0 => t as u32,
                d => edges
                    .iter()
                    .filter(|&&(a, b, w)| b as usize == t && usable(w) && dist[a as usize] == d - 1)
                    .map(|e| e.0)
                    .min()
                    .unwrap(),
            })
            .collect()
    }

    #[test]
    fn shortest_parents_are_the_lowest_referrer_one_step_closer() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..2000 {
            let n = rng.below(30) as usize + 1;
            let mut edges: Vec<(u32, u32, bool)> = (0..rng.below(3 * n as u64))
                .map(|_| {
                    (
                        rng.below(n as u64) as u32,
                        rng.below(n as u64) as u32,
                        rng.below(4) == 0,
                    )
                })
                .collect();
            edges.sort_by_key(|e| e.0);
            let roots: Vec<u32> = (0..rng.below(3))
                .map(|_| rng.below(n as u64) as u32)
                .collect();
            let key: Vec<u32> = edges.iter().map(|e| e.0).collect();
            let by = Csr::group(&key, n).unwrap();
            let fwd = Csr {
                offsets: by.offsets,
                targets: edges
                    .iter()
                    .map(|&(_, b, w)| if w { b | WEAK } else { b })
                    .collect(),
            };
            for follow_weak in [true, false] {
                assert_eq!(
                    shortest_parents(&fwd, &roots, follow_weak).unwrap(),
                    reference(n, &edges, &roots, follow_weak),
                    "round {round}, weak {follow_weak}: {edges:?} from {roots:?}"
                );
            }
        }
    }
}
