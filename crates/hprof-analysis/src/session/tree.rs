//! A tree of stacks, root first, with a few counters per node: the CPU call
//! tree (samples) and the memory tree by allocation stack (bytes, objects,
//! live bytes, live objects). The page never gets the whole tree: it asks
//! for the rows of the nodes it has opened, each cut to a number of
//! children, or for a flame graph pruned to what is wide enough to see, so
//! 100 000 nodes stay cheap to show.

use std::collections::HashMap;

pub use crate::flame::tree::{Node, StackTree as Tree};

/// Rows of one answer, whatever the page opened.
pub const MAX_ROWS: usize = 5000;
/// Levels of a flame graph answer; deeper frames are left out (a JSON tree
/// that deep is also unsafe to build recursively).
pub const MAX_FLAME_DEPTH: usize = 256;

/// An opened node: its path of names from the root, and how many children
/// to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Open {
    pub path: Vec<String>,
    pub limit: usize,
}

/// A visible row of a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeRow {
    Node {
        depth: usize,
        name: String,
        /// Counters of the node and all under it.
        total: Vec<u64>,
        /// Counters of the node itself.
        own: Vec<u64>,
        /// How many children it has.
        children: usize,
        /// The page opened it.
        opened: bool,
    },
    /// Children of the row above left out.
    More {
        depth: usize,
        shown: usize,
        hidden: usize,
    },
}

/// A node of a pruned flame graph: its name, the chosen counter, its
/// children wide enough to keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlameNode {
    pub name: String,
    pub value: u64,
    pub children: Vec<FlameNode>,
}

/// The page's views of a tree: rows of opened nodes, a pruned flame graph.
pub trait TreeView {
    fn rows(&self, open: &[Open], default_limit: usize) -> Vec<TreeRow>;
    fn flame(&self, key: usize, min: u64) -> FlameNode;
}

impl<const N: usize> TreeView for Tree<N> {
    /// The visible rows, depth first: the root's children and, under every
    /// opened node, its first `limit` children, then a row saying how many
    /// more there are. At most [`MAX_ROWS`] rows.
    fn rows(&self, open: &[Open], default_limit: usize) -> Vec<TreeRow> {
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
                    out.push(TreeRow::More {
                        depth,
                        shown,
                        hidden,
                    });
                }
                Item::Node(n, depth) => {
                    let node = &self.nodes[n as usize];
                    let opened = limits.get(&n).copied();
                    out.push(TreeRow::Node {
                        depth,
                        name: self.name(n).to_string(),
                        total: node.total.to_vec(),
                        own: node.own.to_vec(),
                        children: self.children(n).len(),
                        opened: opened.is_some(),
                    });
                    if let Some(limit) = opened {
                        push_children(self.children(n), depth + 1, limit, &mut stack);
                    }
                }
            }
        }
        out
    }

    /// The flame graph by counter `key`, leaving out nodes below `min`
    /// and below [`MAX_FLAME_DEPTH`] levels.
    fn flame(&self, key: usize, min: u64) -> FlameNode {
        flame_node(self, 0, key.min(N.saturating_sub(1)), min, 0)
    }
}

fn flame_node<const N: usize>(
    t: &Tree<N>,
    n: u32,
    key: usize,
    min: u64,
    depth: usize,
) -> FlameNode {
    let node = &t.nodes[n as usize];
    let children = if depth >= MAX_FLAME_DEPTH {
        Vec::new()
    } else {
        t.children(n)
            .iter()
            .filter(|&&k| t.nodes[k as usize].total[key] >= min)
            .map(|&k| flame_node(t, k, key, min, depth + 1))
            .collect()
    };
    FlameNode {
        name: t.name(n).to_string(),
        value: node.total[key],
        children,
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

    fn names(rows: &[TreeRow]) -> Vec<String> {
        rows.iter()
            .map(|r| match r {
                TreeRow::Node { depth, name, .. } => format!("{depth}{name}"),
                TreeRow::More { depth, hidden, .. } => format!("{depth}more{hidden}"),
            })
            .collect()
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
        assert_eq!(names(&closed), ["0main", "0other"]);
        assert_eq!(
            closed[0],
            TreeRow::Node {
                depth: 0,
                name: "main".into(),
                total: vec![11],
                own: vec![2],
                children: 3,
                opened: false
            }
        );
        let open = t.rows(
            &[Open {
                path: vec!["main".into()],
                limit: 2,
            }],
            10,
        );
        assert_eq!(names(&open), ["0main", "1a", "1b", "1more1", "0other"]);
        assert_eq!(
            open[3],
            TreeRow::More {
                depth: 1,
                shown: 2,
                hidden: 1
            }
        );
        // A path that does not exist (the data changed) is ignored.
        let gone = t.rows(
            &[Open {
                path: vec!["x".into()],
                limit: 3,
            }],
            10,
        );
        assert_eq!(gone.len(), 2);
    }

    #[test]
    fn flame_prunes_narrow_nodes_and_collapsed_keeps_own_counts() {
        let t = tree(&[(&["main", "a"], 5), (&["main", "b"], 1), (&["main"], 2)]);
        let f = t.flame(0, 2);
        assert_eq!(f.value, 8);
        assert_eq!(f.children[0].name, "main");
        assert_eq!(f.children[0].children.len(), 1, "b is under min");
        let mut c = std::collections::BTreeMap::new();
        t.each_stack(0, |path, n| {
            let names: Vec<&str> = path.iter().map(|&p| t.name_of(p)).collect();
            c.insert(names.join(";"), n);
        });
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
        assert_eq!(rows.len(), 102, "root, 100 children, more");
        assert!(matches!(rows[101], TreeRow::More { hidden: 99_900, .. }));
        let f = t.flame(0, t.root().total[0] / 2000);
        assert!(f.children[0].children.len() < 100_000);
        assert!(start.elapsed().as_secs() < 2);
    }
}
