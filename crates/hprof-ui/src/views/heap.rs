//! The Heap tab's class histogram of the session's dumps.

use hprof_analysis::session::heap::HeapView;
use serde_json::{json, Value};

pub fn heap(v: &HeapView) -> Value {
    let kept: Vec<Value> = v
        .kept
        .iter()
        .map(|d| json!({"number": d.number, "atMs": d.at_ms, "objects": d.objects}))
        .collect();
    let h = match &v.histogram {
        Err(gone) => {
            return json!({"available": false, "reading": v.reading, "dumps": v.dumps,
                          "kept": kept, "gone": gone.0})
        }
        Ok(h) => h,
    };
    let rows: Vec<Value> = h
        .rows
        .iter()
        .map(|r| json!({"rank": r.rank, "class": r.class, "instances": r.instances, "bytes": r.bytes}))
        .collect();
    json!({
        "available": true,
        "reading": v.reading,
        "dumps": v.dumps,
        "kept": kept,
        "number": h.number,
        "atMs": h.at_ms,
        "roots": h.roots,
        "classDumps": h.class_dumps,
        "objects": h.objects,
        "instances": h.instances,
        "bytes": h.bytes,
        "classes": h.classes,
        "matched": h.matched,
        "offset": h.offset,
        "rows": rows,
    })
}
