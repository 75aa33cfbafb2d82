//! The CPU answers: hot methods with the flame graph, the call tree.

use super::{source, tree};
use hprof_analysis::session::cpu::{CpuTreeView, CpuView};
use serde_json::{json, Value};

pub fn cpu(v: &CpuView) -> Value {
    let threads: Vec<Value> = v
        .threads
        .iter()
        .map(|t| json!({"serial": t.serial, "name": t.name, "samples": t.samples}))
        .collect();
    let Some(p) = &v.profile else {
        return json!({"available": false, "total": 0, "kept": 0, "rows": [], "methods": 0,
                      "threads": threads, "flame": {"n": "all", "v": 0, "c": []},
                      "cpuTime": v.cpu_time_sections, "ended": v.ended});
    };
    let rows: Vec<Value> = p
        .rows
        .iter()
        .map(|x| {
            json!({"rank": x.rank, "method": x.method, "self": x.own, "selfPct": x.own_pct,
                   "total": x.total, "totalPct": x.total_pct, "src": source(&x.src)})
        })
        .collect();
    // The samples the report did not count (walks that failed), for the
    // page's summary line: null when the report says nothing of them.
    let lost = p.lost.as_ref().map_or(Value::Null, |l| {
        json!({"lost": l.lost(), "taken": l.taken(), "pct": l.percent(),
               "reasons": l.reasons.iter().map(|(w, n)| json!([w, n])).collect::<Vec<_>>()})
    });
    json!({
        "available": true,
        "total": p.total,
        "kept": p.kept,
        "methods": p.methods,
        "offset": p.offset,
        "rows": rows,
        "threads": threads,
        "lost": lost,
        "flame": p.flame.as_ref().map_or(Value::Null, tree::flame),
        "notes": p.notes,
    })
}

pub fn cpu_tree(v: Option<&CpuTreeView>) -> Value {
    match v {
        None => json!({"available": false, "rows": []}),
        Some(t) => json!({"available": true, "kept": t.kept, "rows": tree::rows(&t.rows)}),
    }
}
