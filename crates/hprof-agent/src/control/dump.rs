//! The full dump: every profile's section in the list's order (the
//! original's), then each profile starts its next period (CPU reports
//! cover the time since the last dump).

use crate::diag;
use crate::jvmti::Jni;
use crate::profile::Profile;
use crate::vm::Context;

/// Run a full dump unless one is already running (a request arriving during
/// a dump is ignored, as in the original).
pub fn full_dump(ctx: &'static Context, profiles: &'static [Box<dyn Profile>], jni: Jni<'_>) {
    let Some(_exclusive) = ctx.dumping.try_lock() else {
        return;
    };
    fault_injection::panic_if_asked("dump-panic");
    let verbose = ctx.opts.verbose;
    diag::verbose(verbose, "Dumping");
    for p in profiles {
        p.dump(ctx, jni);
    }
    for p in profiles {
        p.after_dump(ctx);
    }
    ctx.out.flush();
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
