//! The page's JSON of the session's views: each answer is made here from
//! the plain types of `hprof_analysis::session` (one module per view), in
//! the shape `assets/app.js` reads (docs/ui.md, "JSON API").

pub mod cpu;
pub mod heap;
pub mod memory;
pub mod monitors;
pub mod threads;
pub mod tree;

#[cfg(test)]
mod tests;

use hprof_analysis::session::{Session, SourceAt};
use serde_json::{json, Value};

/// `[class, file, line]` of the source view.
pub fn source(s: &Option<SourceAt>) -> Value {
    match s {
        None => Value::Null,
        Some(s) => json!([s.class, s.file, s.line]),
    }
}

/// A session's summary: what it is, how far its stream got, what its views
/// have.
pub fn summary(s: &Session) -> Value {
    json!({
        "id": s.id,
        "kind": s.kind.name(),
        "source": s.source,
        "started": s.started_unix_ms,
        "state": s.state.name(),
        "error": s.error,
        "format": s.format,
        "text": s.text,
        "records": s.records,
        "bytes": s.bytes,
        "version": s.version,
        "threads": s.threads.len(),
        "cpuSections": s.cpu_sections,
        "cpuTimeSections": s.cpu_time_sections,
        "sitesReports": s.sites_reports,
        "heapDumps": s.heap.dumps(),
        "heapDumpsRead": s.heap.complete,
        "threadEvents": s.thread_events,
        "consoleLast": s.console_last(),
        "monitorSections": s.monitors.sections(),
        "marks": memory::marks(&s.marks.summary()),
        "control": s.control.map(|(f, d)| json!({"flags": f, "depth": d})),
        "process": s.process.as_ref().map(|p| json!({
            "pid": p.pid, "argv": p.argv, "running": p.running, "exit": p.exit,
        })),
        "attachedPid": s.attached_pid,
    })
}
