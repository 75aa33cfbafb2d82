//! A tree of stacks, root first, with `N` counters per node (a flame
//! graph's samples; the UI's memory tree has four): `hprof-rs flame`
//! draws from it, and the UI's call tree and allocation tree are one.
//!
//! Nodes live in one array and name their children through indexes, and
//! every walk over the tree is a loop with a stack of its own: a stack of
//! a million frames is a chain of a million nodes, which recursion (or a
//! tree of owned boxes, whose drop recurses) would not survive. Children
//! are a sibling list while the tree is built, then a slice of one shared
//! array: no allocation per node.

use rustc_hash::FxHashMap;

/// No node (end of a sibling list).
const NONE: u32 = u32::MAX;

/// A node with `N` counters.
#[derive(Clone)]
pub struct Node<const N: usize> {
    pub name: u32,
    pub total: [u64; N],
    pub own: [u64; N],
    first: u32,
    next: u32,
    /// After [`StackTree::finish`]: the children are `kids[start..start + len]`.
    start: u32,
    len: u32,
}

#[derive(Clone)]
pub struct StackTree<const N: usize> {
    names: Vec<String>,
    name_index: FxHashMap<String, u32>,
    pub nodes: Vec<Node<N>>,
    kids: Vec<u32>,
    /// (parent, name) -> child, while the tree is being built.
    lookup: FxHashMap<(u32, u32), u32>,
}

impl<const N: usize> Default for StackTree<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> StackTree<N> {
    pub fn new() -> Self {
        let mut t = StackTree {
            names: Vec::new(),
            name_index: FxHashMap::default(),
            nodes: Vec::new(),
            kids: Vec::new(),
            lookup: FxHashMap::default(),
        };
        let all = t.intern("all");
        t.nodes.push(Node::new(all));
        t
    }

    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.name_index.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.to_string());
        self.name_index.insert(s.to_string(), i);
        i
    }

    /// An interned name by its ID (from [`StackTree::intern`]).
    pub fn name_of(&self, name_id: u32) -> &str {
        self.names.get(name_id as usize).map_or("?", String::as_str)
    }

    /// The name of a node.
    pub fn name(&self, node: u32) -> &str {
        self.nodes
            .get(node as usize)
            .and_then(|n| self.names.get(n.name as usize))
            .map_or("?", String::as_str)
    }

    /// Names interned so far.
    pub fn name_count(&self) -> usize {
        self.names.len()
    }

    /// Add `vals` along `path` (interned names, root first); the last node
    /// gets them as its own.
    pub fn add(&mut self, path: &[u32], vals: [u64; N]) {
        let mut at = 0u32;
        add_to(&mut self.nodes[0].total, &vals);
        for &name in path {
            let next = match self.lookup.get(&(at, name)) {
                Some(&c) => c,
                None => {
                    let c = self.nodes.len() as u32;
                    let mut node = Node::new(name);
                    node.next = self.nodes[at as usize].first;
                    self.nodes.push(node);
                    self.nodes[at as usize].first = c;
                    self.lookup.insert((at, name), c);
                    c
                }
            };
            add_to(&mut self.nodes[next as usize].total, &vals);
            at = next;
        }
        add_to(&mut self.nodes[at as usize].own, &vals);
    }

    /// Lay the children out in one array, each node's ordered by counter
    /// `key` (largest first, then name), and drop the build index.
    pub fn finish(&mut self, key: usize) {
        self.finish_by(|a, b| {
            b.total[key.min(N.saturating_sub(1))].cmp(&a.total[key.min(N.saturating_sub(1))])
        });
    }

    /// Like [`StackTree::finish`], children ordered by name alone.
    pub fn finish_by_name(&mut self) {
        self.finish_by(|_, _| std::cmp::Ordering::Equal);
    }

    fn finish_by(&mut self, order: impl Fn(&Node<N>, &Node<N>) -> std::cmp::Ordering) {
        self.lookup = FxHashMap::default();
        let mut kids = Vec::with_capacity(self.nodes.len());
        for i in 0..self.nodes.len() {
            let start = kids.len();
            let mut c = self.nodes[i].first;
            while c != NONE {
                kids.push(c);
                c = self.nodes[c as usize].next;
            }
            let slice = &mut kids[start..];
            slice.sort_by(|&a, &b| {
                let (na, nb) = (&self.nodes[a as usize], &self.nodes[b as usize]);
                order(na, nb)
                    .then_with(|| self.names[na.name as usize].cmp(&self.names[nb.name as usize]))
            });
            self.nodes[i].start = start as u32;
            self.nodes[i].len = (kids.len() - start) as u32;
        }
        self.kids = kids;
    }

    /// The children of a node, in order (after [`StackTree::finish`]).
    pub fn children(&self, node: u32) -> &[u32] {
        let n = &self.nodes[node as usize];
        self.kids
            .get(n.start as usize..(n.start + n.len) as usize)
            .unwrap_or(&[])
    }

    pub fn root(&self) -> &Node<N> {
        &self.nodes[0]
    }

    /// The node at a path of names from the root.
    pub fn find(&self, path: &[String]) -> Option<u32> {
        let mut at = 0u32;
        for name in path {
            at = *self.children(at).iter().find(|&&c| self.name(c) == name)?;
        }
        Some(at)
    }

    /// Frames of the deepest stack (levels below the root).
    pub fn depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(0u32, 0usize)];
        while let Some((n, d)) = stack.pop() {
            deepest = deepest.max(d);
            stack.extend(self.children(n).iter().map(|&c| (c, d + 1)));
        }
        deepest
    }

    /// Every node with an own count of `key` in depth-first order (children
    /// in their order), with its path of name IDs from the root: the
    /// collapsed stacks. `visit` gets the path and the count.
    pub fn each_stack(&self, key: usize, mut visit: impl FnMut(&[u32], u64)) {
        let key = key.min(N.saturating_sub(1));
        let mut path: Vec<u32> = Vec::new();
        // (node, depth below the root): the path is cut to the depth
        // before the node's name goes on it.
        let mut stack: Vec<(u32, usize)> = self.children(0).iter().rev().map(|&c| (c, 0)).collect();
        while let Some((n, d)) = stack.pop() {
            path.truncate(d);
            let node = &self.nodes[n as usize];
            path.push(node.name);
            if node.own[key] > 0 {
                visit(&path, node.own[key]);
            }
            stack.extend(self.children(n).iter().rev().map(|&c| (c, d + 1)));
        }
    }
}

impl<const N: usize> Node<N> {
    fn new(name: u32) -> Self {
        Node {
            name,
            total: [0; N],
            own: [0; N],
            first: NONE,
            next: NONE,
            start: 0,
            len: 0,
        }
    }
}

fn add_to<const N: usize>(a: &mut [u64; N], b: &[u64; N]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = x.saturating_add(*y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_million_frame_chain_is_built_walked_and_dropped_without_recursion() {
        let mut t: StackTree<1> = StackTree::new();
        let f = t.intern("Deep.recurse");
        let path = vec![f; 1_000_000];
        t.add(&path, [3]);
        t.add(&path[..500_000], [2]);
        t.finish(0);
        assert_eq!(t.nodes.len(), 1_000_001);
        assert_eq!(t.depth(), 1_000_000);
        let mut stacks = Vec::new();
        t.each_stack(0, |p, n| stacks.push((p.len(), n)));
        assert_eq!(stacks, [(500_000, 2), (1_000_000, 3)]);
        assert_eq!(t.root().total[0], 5);
        drop(t);
    }
}
