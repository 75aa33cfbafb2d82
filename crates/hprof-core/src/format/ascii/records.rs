//! Text records written as events happen: THREAD START/END, TRACE,
//! WAIT/WAITED.

use super::printer::{pf, Printer};
use crate::format::model::{
    FrameInfo, MonitorWait, MonitorWaited, ThreadStart, TraceInfo, LINE_COMPILED, LINE_NATIVE,
};
use crate::format::names::render_class_name;

pub fn thread_start(p: &mut Printer, out: &mut Vec<u8>, t: &ThreadStart<'_>) {
    pf!(
        p,
        out,
        "THREAD START (obj={:x}, id = {}, name=\"{}\", group=\"{}\")\n",
        t.obj_id,
        t.thread_serial,
        t.name.unwrap_or(""),
        t.group.unwrap_or("")
    );
}

pub fn thread_end(p: &mut Printer, out: &mut Vec<u8>, thread_serial: u32) {
    pf!(p, out, "THREAD END (id = {})\n", thread_serial);
}

pub fn trace(p: &mut Printer, out: &mut Vec<u8>, t: &TraceInfo<'_>) {
    pf!(p, out, "TRACE {}:", t.serial);
    if let Some(thread) = t.thread_serial {
        pf!(p, out, " (thread={})", thread);
    }
    if let Some(phase) = t.phase.label() {
        pf!(p, out, " (from {} phase of JVM)", phase);
    }
    pf!(p, out, "\n");
    if t.frames.is_empty() {
        pf!(p, out, "\t<empty>\n");
    }
    for f in &t.frames {
        frame(p, out, f);
    }
}

fn frame(p: &mut Printer, out: &mut Vec<u8>, f: &FrameInfo<'_>) {
    let method = if f.method_name.is_empty() {
        "<Unknown Method>"
    } else {
        f.method_name
    };
    let source = f.source_file.unwrap_or("<Unknown Source>");
    let class = render_class_name(f.class_sig);
    match f.line {
        n if n >= 0 => pf!(p, out, "\t{}.{}({}:{})\n", class, method, source, n),
        LINE_COMPILED => pf!(
            p,
            out,
            "\t{}.{}({}:Compiled method)\n",
            class,
            method,
            source
        ),
        LINE_NATIVE => pf!(p, out, "\t{}.{}({}:Native method)\n", class, method, source),
        _ => pf!(p, out, "\t{}.{}({}:Unknown line)\n", class, method, source),
    }
}

pub fn monitor_wait(p: &mut Printer, out: &mut Vec<u8>, w: &MonitorWait<'_>) {
    pf!(
        p,
        out,
        "WAIT: MONITOR {}, timeout={}, thread {}\n",
        w.class_sig,
        w.timeout_ms,
        w.thread_serial
    );
}

pub fn monitor_waited(p: &mut Printer, out: &mut Vec<u8>, w: &MonitorWaited<'_>) {
    pf!(
        p,
        out,
        "WAITED: MONITOR {}, time_waited={}, thread {}\n",
        w.class_sig,
        w.time_waited_ms,
        w.thread_serial
    );
}
