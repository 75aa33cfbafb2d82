//! A tree of stacks, root first, with a few counters per node: the CPU call
//! tree (samples) and the memory tree by allocation stack (bytes, objects,
//! live bytes, live objects). The page never gets the whole tree: it asks
//! for the rows of the nodes it has opened, each cut to a number of
//! children, or for a flame graph pruned to what is wide enough to see, so
//! 100 000 nodes stay cheap to show.

use serde_json::{json, Value};
use std::collections::HashMap;

pub use hprof_analysis::flame::tree::{Node, StackTree as Tree};

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

/// The page's views of a tree: rows of opened nodes, a pruned flame graph.
pub trait TreeView {
    fn rows(&self, open: &[Open], default_limit: usize) -> Value;
    fn flame(&self, key: usize, min: u64) -> Value;
}

impl<const N: usize> TreeView for Tree<N> {
    /// The visible rows, depth first: the root's children and, under every
    /// opened node, its first `limit` children, then a row saying how many
    /// more there are. At most [`MAX_ROWS`] rows.
    fn rows(&self, open: &[Open], default_limit: usize) -> Value {
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
                        "k": self.children(n).len(),
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
    fn flame(&self, key: usize, min: u64) -> Value {
        flame_node(self, 0, key.min(N.saturating_sub(1)), min, 0)
    }
}

fn flame_node<const N: usize>(t: &Tree<N>, n: u32, key: usize, min: u64, depth: usize) -> Value {
    let node = &t.nodes[n as usize];
    let c: Vec<Value> = if depth >= MAX_FLAME_DEPTH {
        Vec::new()
    } else {
        t.children(n)
            .iter()
            .filter(|&&k| t.nodes[k as usize].total[key] >= min)
            .map(|&k| flame_node(t, k, key, min, depth + 1))
            .collect()
    };
    json!({"n": t.name(n), "v": node.total[key], "c": c})
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
