//! The memory answers: the sites table, the allocation tree, the marks.

use super::{source, tree};
use hprof_analysis::session::memory::{AllocTreeView, MarkAt, MarksSummary, SitesView, Which};
use serde_json::{json, Value};

pub fn marks(m: &MarksSummary) -> Value {
    let one = |m: &Option<MarkAt>| m.map(|s| json!({"report": s.report, "atMs": s.at_ms}));
    json!({"begin": one(&m.begin), "end": one(&m.end),
           "pending": m.pending.map(Which::name)})
}

pub fn sites(v: &SitesView) -> Value {
    let marks = marks(&v.marks);
    let Some(p) = &v.page else {
        return json!({"available": false, "rows": [], "matched": 0, "marks": marks});
    };
    let rows: Vec<Value> = p
        .rows
        .iter()
        .map(|x| {
            json!({
                "rank": x.rank,
                "class": x.class,
                "trace": x.trace,
                "site": x.site,
                "src": source(&x.src),
                "stack": x.stack,
                "bytes": x.bytes,
                "objects": x.objects,
                "liveBytes": x.live_bytes,
                "liveObjects": x.live_objects,
            })
        })
        .collect();
    let [bytes, objects, live_bytes, live_objects] = p.sum;
    json!({
        "available": true,
        "estimated": p.estimated,
        "between": p.between.map(|(b, e)| json!({"begin": b, "end": e})),
        "totalLiveBytes": p.total_live_bytes,
        "totalLiveObjects": p.total_live_objects,
        "totalBytes": p.total_bytes,
        "totalObjects": p.total_objects,
        "sites": p.sites,
        "matched": p.matched,
        "sum": {"bytes": bytes, "objects": objects, "liveBytes": live_bytes, "liveObjects": live_objects},
        "offset": p.offset,
        "rows": rows,
        "marks": marks,
    })
}

pub fn alloc_tree(v: Option<&AllocTreeView>) -> Value {
    match v {
        None => json!({"available": false, "rows": []}),
        Some(t) => json!({
            "available": true,
            "estimated": t.estimated,
            "total": t.total,
            "rows": tree::rows(&t.rows),
        }),
    }
}
