//! The full dump: every enabled section in the original's order, then the
//! CPU counters are reset (CPU reports cover the time since the last dump).

use crate::agent::Agent;
use crate::diag;
use crate::jvmti::sys::JNIEnv;
use std::sync::atomic::Ordering;

/// Run a full dump unless one is already running (a request arriving during
/// a dump is ignored, as in the original).
pub fn full_dump(agent: &Agent, jni: *mut JNIEnv) {
    if agent.dumping.swap(true, Ordering::AcqRel) {
        return;
    }
    let verbose = agent.opts.verbose;
    diag::verbose(verbose, "Dumping");
    if agent.opts.monitor {
        diag::verbose(verbose, " contended monitor usage ...");
        super::monitor_report::write(agent, jni);
    }
    if agent.opts.heap_dump {
        diag::verbose(verbose, " Java heap ...");
        super::heap_dump::write(agent, jni);
    }
    if agent.opts.heap_sites {
        diag::verbose(verbose, " allocation sites ...");
        super::sites_report::write(agent, agent.opts.cutoff);
    }
    if agent.opts.cpu_samples {
        diag::verbose(verbose, " CPU usage by sampling running threads ...");
        super::cpu_report::write(agent, agent.opts.cutoff);
    }
    if agent.opts.cpu_timing() {
        let what = if agent.opts.cpu_old {
            " CPU usage in old prof format ..."
        } else {
            " CPU usage by timing methods ..."
        };
        diag::verbose(verbose, what);
        crate::profile::cpu_times::catch_up(jni);
        super::cpu_times_report::write(agent, agent.opts.cutoff);
    }
    agent.tables.traces.reset_costs();
    crate::profile::monitors::state().reset_times();
    agent.out.flush();
    diag::verbose(verbose, " done.\n");
    agent.dumping.store(false, Ordering::Release);
}
