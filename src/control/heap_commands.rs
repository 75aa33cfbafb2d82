//! Socket commands that belong to the heap profiles (allocation sites, heap
//! dump). When the command's profile is off in this run, it does nothing to
//! the JVM, writes nothing, and says on stderr that its profile is off.

use crate::agent::Agent;
use crate::diag::rejected;
use crate::jvmti::sys::JNIEnv;

fn profile_off(command: &str, profile: &str) {
    rejected(&format!(
        "{command} command ignored: {profile} is off in this run"
    ));
}

/// DUMP HEAP (0x02): a heap dump section, preceded by pending traces
/// (needs `heap=dump` or `heap=all`).
pub fn dump_heap_on_command(agent: &Agent, jni: *mut JNIEnv) {
    if agent.opts.heap_dump {
        super::heap_dump::write(agent, jni);
    } else {
        profile_off("DUMP HEAP", "heap dumping (heap=dump)");
    }
}

/// ALLOC SITES (0x03) with the command's flags (0x1 changed only, 0x2 sort
/// by allocated bytes, 0x4 force a GC first) and cutoff.
/// Wire: the sites report (needs `heap=sites` or `heap=all`).
pub fn alloc_sites_on_command(agent: &Agent, _jni: *mut JNIEnv, flags: u16, cutoff: f64) {
    if agent.opts.heap_sites {
        super::sites_report::write_with(agent, flags, cutoff);
    } else {
        profile_off("ALLOC SITES", "allocation sites (heap=sites)");
    }
}

/// HEAP SUMMARY (0x04): binary HEAP SUMMARY record of the live/allocated
/// totals (text: nothing). Wire: the sites totals.
pub fn heap_summary_on_command(agent: &Agent) {
    if agent.opts.heap_sites {
        super::sites_report::write_heap_summary(agent);
    } else {
        profile_off("HEAP SUMMARY", "allocation tracking (heap=sites)");
    }
}

/// CONTROL 0x0001 / 0x0002: allocation tracking on / off.
pub fn allocation_tracking_on_command(agent: &Agent, on: bool) {
    if agent.opts.heap_sites {
        crate::profile::alloc_sites::set_tracking(agent, on);
        return;
    }
    let what = if on {
        "CONTROL allocation tracking on"
    } else {
        "CONTROL allocation tracking off"
    };
    profile_off(what, "allocation tracking (heap=sites or heap=dump)");
}

/// CONTROL 0x0006: clear allocation sites. Wire: reset the site counters in
/// place (the original discarded the table, leaving tracked objects
/// pointing at freed sites).
pub fn clear_alloc_sites_on_command(agent: &Agent) {
    if agent.opts.heap_sites {
        agent.tables.sites.clear();
        return;
    }
    profile_off(
        "CONTROL clear allocation sites",
        "allocation sites (heap=sites)",
    );
}
