//! The full dump: every enabled section in the original's order, then the
//! CPU counters are reset (CPU reports cover the time since the last dump).

use crate::agent::Agent;
use crate::diag;
use crate::jvmti::sys::JNIEnv;

/// Run a full dump unless one is already running (a request arriving during
/// a dump is ignored, as in the original).
pub fn full_dump(agent: &Agent, jni: *mut JNIEnv) {
    let Some(_exclusive) = agent.dumping.try_lock() else {
        return;
    };
    fault_injection::panic_if_asked("dump-panic");
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
}

/// Faults a test can ask for through `HPROF_RS_TEST_FAULT` (docs/design.md,
/// "Fault injection"), to prove that failures inside a dump release
/// everything they hold. Dumps are rare, so reading the variable costs
/// nothing that matters.
mod fault_injection {
    use std::sync::atomic::{AtomicBool, Ordering};

    static FIRED: AtomicBool = AtomicBool::new(false);

    /// Panic once per process when the variable names `fault`.
    pub fn panic_if_asked(fault: &str) {
        let asked = std::env::var("HPROF_RS_TEST_FAULT").is_ok_and(|v| v == fault);
        if asked && !FIRED.swap(true, Ordering::Relaxed) {
            panic!("fault injected by HPROF_RS_TEST_FAULT={fault}");
        }
    }
}
