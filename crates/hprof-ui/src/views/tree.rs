//! Tree rows `{d, n, t, s, k, o}` (or `{d, more, shown}`) and flame graph
//! nodes `{n, v, c}`.

use hprof_analysis::session::tree::{FlameNode, TreeRow};
use serde_json::{json, Value};

pub fn rows(rows: &[TreeRow]) -> Value {
    rows.iter()
        .map(|r| match r {
            TreeRow::Node {
                depth,
                name,
                total,
                own,
                children,
                opened,
            } => json!({"d": depth, "n": name, "t": total, "s": own, "k": children, "o": opened}),
            TreeRow::More {
                depth,
                shown,
                hidden,
            } => json!({"d": depth, "more": hidden, "shown": shown}),
        })
        .collect()
}

/// Recursive: a flame graph is at most `tree::MAX_FLAME_DEPTH` deep.
pub fn flame(n: &FlameNode) -> Value {
    let c: Vec<Value> = n.children.iter().map(flame).collect();
    json!({"n": n.name, "v": n.value, "c": c})
}
