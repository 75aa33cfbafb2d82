//! The Threads and Console answers.

use hprof_analysis::session::threads::ThreadsView;
use hprof_analysis::session::ConsoleView;
use serde_json::{json, Value};

pub fn threads(v: &ThreadsView) -> Value {
    let rows: Vec<Value> = v
        .threads
        .iter()
        .map(|t| {
            let top: Vec<Value> = t
                .top
                .iter()
                .map(|(m, c)| json!({"method": m, "samples": c}))
                .collect();
            let i = &t.thread;
            json!({"serial": i.serial, "objectId": i.object_id, "name": i.name, "group": i.group,
                   "startMs": i.start_ms, "endMs": i.end_ms, "ended": t.started.then_some(i.ended),
                   "samples": t.samples, "top": top})
        })
        .collect();
    json!({"threads": rows, "perThreadSamples": v.per_thread_samples})
}

pub fn console(v: &ConsoleView) -> Value {
    let lines: Vec<Value> = v.lines.iter().map(|(n, l)| json!([n, l])).collect();
    json!({"last": v.last, "lines": lines})
}
