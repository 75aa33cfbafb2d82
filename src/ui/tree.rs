//! A tree of stacks, root first, with a few counters per node: the CPU call
//! tree (samples) and the memory tree by allocation stack (bytes, objects,
//! live bytes, live objects). The page never gets the whole tree: it asks
//! for the rows of the nodes it has opened, each cut to a number of
//! children, or for a flame graph pruned to what is wide enough to see, so
//! 100 000 nodes stay cheap to show.

use rustc_hash::FxHashMap;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

/// Rows of one answer, whatever the page opened.
pub const MAX_ROWS: usize = 5000;
/// Levels of a flame graph answer; deeper frames are left out (a JSON tree
/// that deep is also unsafe to build recursively).
pub const MAX_FLAME_DEPTH: usize = 256;

/// No node (end of a sibling list).
const NONE: u32 = u32::MAX;

/// A node with `N` counters (the CPU tree has one, the memory tree four).
/// Children are a sibling list while the tree is built, then a slice of
/// one shared array: no allocation per node, which matters at hundreds of
/// thousands of nodes.
pub struct Node<const N: usize> {
    pub name: u32,
    pub total: [u64; N],
    pub own: [u64; N],
    first: u32,
    next: u32,
    /// After [`Tree::finish`]: the children are `kids[start..start + len]`.
    start: u32,
    len: u32,
}

pub struct Tree<const N: usize> {
    names: Vec<String>,
    name_index: FxHashMap<String, u32>,
    pub nodes: Vec<Node<N>>,
    kids: Vec<u32>,
    /// (parent, name) -> child, while the tree is being built.
    lookup: FxHashMap<(u32, u32), u32>,
}

/// An opened node: its path of names from the root, and how many children
/// to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Open {
    pub path: Vec<String>,
    pub limit: usize,
}

impl<const N: usize> Default for Tree<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Tree<N> {
    pub fn new() -> Self {
        let mut t = Tree {
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

    /// An interned name by its ID (from [`Tree::intern`]).
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
        self.lookup = FxHashMap::default();
        let key = key.min(N.saturating_sub(1));
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
                nb.total[key]
                    .cmp(&na.total[key])
                    .then_with(|| self.names[na.name as usize].cmp(&self.names[nb.name as usize]))
            });
            self.nodes[i].start = start as u32;
            self.nodes[i].len = (kids.len() - start) as u32;
        }
        self.kids = kids;
    }

    /// The children of a node, in order (after [`Tree::finish`]).
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

    /// The visible rows, depth first: the root's children and, under every
    /// opened node, its first `limit` children, then a row saying how many
    /// more there are. At most [`MAX_ROWS`] rows.
    pub fn rows(&self, open: &[Open], default_limit: usize) -> Value {
        let mut limits: HashMap<u32, usize> = HashMap::new();
        for o in open {
            if let Some(n) = self.find(&o.path) {
                limits.insert(n, o.limit.max(1));
            }
        }
        let root_limit = limits.get(&0).copied().unwrap_or(default_limit.max(1));
        let mut out = Vec::new();
        // An explicit stack: stacks can be thousands of frames deep.
        let mut stack: Vec<Item> = Vec::new();
        push_children(self.children(0), 0, root_limit, &mut stack);
        while let Some(item) = stack.pop() {
            if out.len() >= MAX_ROWS {
                break;
            }
            match item {
                Item::More {
                    depth,
                    shown,
                    hidden,
                } => {
                    out.push(json!({"d": depth, "more": hidden, "shown": shown}));
                }
                Item::Node(n, depth) => {
                    let node = &self.nodes[n as usize];
                    let opened = limits.get(&n).copied();
                    out.push(json!({
                        "d": depth,
                        "n": self.name(n),
                        "t": node.total.as_slice(),
                        "s": node.own.as_slice(),
                        "k": node.len,
                        "o": opened.is_some(),
                    }));
                    if let Some(limit) = opened {
                        push_children(self.children(n), depth + 1, limit, &mut stack);
                    }
                }
            }
        }
        Value::Array(out)
    }

    /// Flame graph JSON `{n, v, c}` by counter `key`, leaving out nodes
    /// below `min` and below [`MAX_FLAME_DEPTH`] levels.
    pub fn flame(&self, key: usize, min: u64) -> Value {
        self.flame_node(0, key.min(N.saturating_sub(1)), min, 0)
    }

    fn flame_node(&self, n: u32, key: usize, min: u64, depth: usize) -> Value {
        let node = &self.nodes[n as usize];
        let c: Vec<Value> = if depth >= MAX_FLAME_DEPTH {
            Vec::new()
        } else {
            self.children(n)
                .iter()
                .filter(|&&k| self.nodes[k as usize].total[key] >= min)
                .map(|&k| self.flame_node(k, key, min, depth + 1))
                .collect()
        };
        json!({"n": self.name(n), "v": node.total[key], "c": c})
    }

    /// Collapsed stacks (`root;...;leaf` -> own count of `key`), the input
    /// of the SVG flame graph.
    pub fn collapsed(&self, key: usize) -> BTreeMap<String, u64> {
        let key = key.min(N.saturating_sub(1));
        let mut out = BTreeMap::new();
        let mut stack: Vec<(u32, String)> = self
            .children(0)
            .iter()
            .map(|&c| (c, self.name(c).to_string()))
            .collect();
        while let Some((n, path)) = stack.pop() {
            let node = &self.nodes[n as usize];
            if node.own[key] > 0 {
                *out.entry(path.clone()).or_insert(0) += node.own[key];
            }
            for &c in self.children(n) {
                stack.push((c, format!("{path};{}", self.name(c))));
            }
        }
        out
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

enum Item {
    Node(u32, usize),
    More {
        depth: usize,
        shown: usize,
        hidden: usize,
    },
}

/// Queue the first `limit` of `children`, and after their subtrees a row
/// saying how many were left out.
fn push_children(children: &[u32], depth: usize, limit: usize, stack: &mut Vec<Item>) {
    let shown = children.len().min(limit);
    let hidden = children.len() - shown;
    if hidden > 0 {
        stack.push(Item::More {
            depth,
            shown,
            hidden,
        });
    }
    for &c in children[..shown].iter().rev() {
        stack.push(Item::Node(c, depth));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(paths: &[(&[&str], u64)]) -> Tree<1> {
        let mut t = Tree::new();
        for (p, v) in paths {
            let ids: Vec<u32> = p.iter().map(|n| t.intern(n)).collect();
            t.add(&ids, [*v]);
        }
        t.finish(0);
        t
    }

    #[test]
    fn rows_show_opened_nodes_cut_to_their_limit() {
        let t = tree(&[
            (&["main", "a"], 5),
            (&["main", "b"], 3),
            (&["main", "c"], 1),
            (&["main"], 2),
            (&["other"], 4),
        ]);
        assert_eq!(t.root().total[0], 15);
        let closed = t.rows(&[], 10);
        let names: Vec<&str> = closed
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["n"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["main", "other"]);
        assert_eq!(closed[0]["t"][0], 11);
        assert_eq!(closed[0]["s"][0], 2);
        assert_eq!(closed[0]["k"], 3);
        let open = t.rows(
            &[Open {
                path: vec!["main".into()],
                limit: 2,
            }],
            10,
        );
        let rows = open.as_array().unwrap();
        let shape: Vec<String> = rows
            .iter()
            .map(|r| match r["n"].as_str() {
                Some(n) => format!("{}{n}", r["d"]),
                None => format!("{}more{}", r["d"], r["more"]),
            })
            .collect();
        assert_eq!(shape, ["0main", "1a", "1b", "1more1", "0other"]);
        // A path that does not exist (the data changed) is ignored.
        let gone = t.rows(
            &[Open {
                path: vec!["x".into()],
                limit: 3,
            }],
            10,
        );
        assert_eq!(gone.as_array().unwrap().len(), 2);
    }

    #[test]
    fn flame_prunes_narrow_nodes_and_collapsed_keeps_own_counts() {
        let t = tree(&[(&["main", "a"], 5), (&["main", "b"], 1), (&["main"], 2)]);
        let f = t.flame(0, 2);
        assert_eq!(f["v"], 8);
        assert_eq!(f["c"][0]["n"], "main");
        assert_eq!(
            f["c"][0]["c"].as_array().unwrap().len(),
            1,
            "b is under min"
        );
        let c = t.collapsed(0);
        assert_eq!(c.get("main;a"), Some(&5));
        assert_eq!(c.get("main;b"), Some(&1));
        assert_eq!(c.get("main"), Some(&2));
    }

    #[test]
    fn a_hundred_thousand_nodes_answer_with_bounded_rows() {
        let mut t: Tree<1> = Tree::new();
        let root = t.intern("root");
        for i in 0..100_000u64 {
            let leaf = t.intern(&format!("m{i}"));
            t.add(&[root, leaf], [i % 7 + 1]);
        }
        t.finish(0);
        let start = std::time::Instant::now();
        let rows = t.rows(
            &[Open {
                path: vec!["root".into()],
                limit: 100,
            }],
            100,
        );
        assert_eq!(
            rows.as_array().unwrap().len(),
            102,
            "root, 100 children, more"
        );
        assert_eq!(rows[101]["more"], 99_900);
        let f = t.flame(0, t.root().total[0] / 2000);
        assert!(f.to_string().len() < 10_000_000);
        assert!(start.elapsed().as_secs() < 2);
    }
}
