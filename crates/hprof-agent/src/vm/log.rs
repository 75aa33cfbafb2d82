//! The debugging options: `pause=y` and `logflags` bits 0x1 / 0x2.

use super::Context;
use crate::options::{LOG_DUMP_TABLES, LOG_MISC};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Cleared by a debugger (`set var HPROF_RS_PAUSE = 0` in gdb) to end a
/// `pause=y` wait early. Exported unmangled so the debugger can find it.
#[no_mangle]
pub static HPROF_RS_PAUSE: AtomicBool = AtomicBool::new(true);

/// `pause=y`: print our PID and wait, up to 600 s in 10 s steps, for a
/// debugger to attach and clear `HPROF_RS_PAUSE`.
pub fn pause_for_debugger() {
    let mut err = std::io::stderr();
    let _ = write!(err, "\nHPROF pause for PID {}\n", std::process::id());
    for _ in 0..60 {
        for _ in 0..10 {
            if !HPROF_RS_PAUSE.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    let _ = err.write_all(b"\n HPROF pause got tired of waiting and gave up.\n");
}

/// `logflags=0x1`: one line of internal logging.
pub fn log(ctx: &Context, what: &str) {
    if ctx.opts.logflags & LOG_MISC != 0 {
        let _ = writeln!(std::io::stderr(), "HPROF LOG: {what}");
    }
}

/// `logflags=0x2`: the sizes and contents summary of the internal tables.
pub fn dump_tables(ctx: &Context, when: &str) {
    if ctx.opts.logflags & LOG_DUMP_TABLES == 0 {
        return;
    }
    let t = &ctx.tables;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "HPROF TABLES ({when}):");
    let _ = writeln!(err, "  classes: {}", t.classes.len());
    for c in t.classes.all().iter().take(20) {
        let _ = writeln!(
            err,
            "    class {} {} id={:x} trace={}",
            c.serial, c.signature, c.object_id, c.load_trace
        );
    }
    let _ = writeln!(err, "  threads: {}", t.threads.all().len());
    for r in t.threads.all() {
        let _ = writeln!(
            err,
            "    thread {} {:?} agent={} id={:x}",
            r.serial,
            r.name.as_deref().unwrap_or(""),
            r.agent,
            r.object_id
        );
    }
    let _ = writeln!(err, "  frames: {}", t.frames.len());
    let _ = writeln!(err, "  traces: {}", t.traces.len());
    let _ = writeln!(
        err,
        "  objects: {} live, {} bytes of agent memory",
        t.objects.live(),
        t.objects.memory_bytes()
    );
}
