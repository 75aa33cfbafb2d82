//! The Monitors answer.

use hprof_analysis::session::monitors::MonitorsView;
use serde_json::{json, Value};

pub fn monitors(v: &MonitorsView) -> Value {
    let time = v.time.as_ref().map(|t| {
        let rows: Vec<Value> = t
            .rows
            .iter()
            .map(|r| {
                json!({
                    "rank": r.rank,
                    "class": r.class,
                    "pct": r.pct,
                    "timeMs": r.time_ms,
                    "count": r.count,
                    "trace": r.trace,
                    "thread": r.thread,
                    "stack": r.stack,
                })
            })
            .collect();
        json!({"totalMs": t.total_ms, "rows": rows})
    });
    let waits: Vec<Value> = v
        .waits
        .iter()
        .map(|w| {
            let s = &w.stats;
            json!({"class": w.class, "waits": s.waits, "timed": s.timed, "waited": s.waited,
                   "waitedMs": s.waited_ms, "maxMs": s.max_ms})
        })
        .collect();
    let recent: Vec<Value> = v
        .recent
        .iter()
        .map(|r| json!({"kind": r.kind, "class": r.class, "thread": r.thread, "ms": r.ms}))
        .collect();
    let dump = v.dump.as_ref().map(|d| {
        json!({
            "threads": d.threads.iter().map(|t| json!({
                "serial": t.serial, "name": t.name, "status": t.status,
                "trace": t.trace, "stack": t.stack,
            })).collect::<Vec<_>>(),
            "monitors": d.monitors.iter().map(|x| json!({
                "class": x.class, "owner": x.owner, "entryCount": x.entry_count,
                "waitingToEnter": x.waiting_to_enter,
                "waitingToBeNotified": x.waiting_to_be_notified,
            })).collect::<Vec<_>>(),
        })
    });
    json!({
        "text": v.text,
        "note": v.note,
        "timeSections": v.time_sections,
        "time": time,
        "dumps": v.dumps,
        "dump": dump,
        "waitEvents": v.wait_events,
        "waits": waits,
        "recent": recent,
    })
}
