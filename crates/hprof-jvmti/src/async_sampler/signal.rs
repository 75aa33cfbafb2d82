//! Which signal the triggers send, and the agent's handler on it
//! (docs/cpu-samples.md, "Other profilers in the same JVM").
//!
//! SIGPROF is the profiling signal by convention, and other profilers
//! want it too (async-profiler, JFR's CPU-time sampler, an application's
//! own `setitimer`). The agent takes the first of [`CANDIDATES`] that has no
//! handler, so a profiler that holds SIGPROF before the agent starts keeps
//! it and both run. A handler installed over the agent's later (by the
//! application, another native agent, a profiler attached later) is found
//! by [`still_ours`] on the sampler's periodic passes; the agent then moves
//! to the next free candidate ([`move_on`]) and leaves the signal to the
//! newcomer. Only standard signals: a real-time signal would queue one
//! entry per expiry, and a perf event whose real-time signal cannot be
//! queued sends SIGIO instead, which ends the process.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

/// In order of preference (async-profiler prefers the same ones, so two
/// such profilers pick different signals whichever starts first).
pub const CANDIDATES: [c_int; 4] = [
    libc::SIGPROF,
    libc::SIGVTALRM,
    libc::SIGSTKFLT,
    libc::SIGPWR,
];

/// The signal the triggers send now (0: none; SIGPROF is named then, for
/// triggers that are never armed).
static CURRENT: AtomicI32 = AtomicI32::new(0);
/// Candidates given up (bit per index): another handler took them.
static GIVEN_UP: AtomicU32 = AtomicU32::new(0);

pub fn current() -> c_int {
    match CURRENT.load(Ordering::Acquire) {
        0 => libc::SIGPROF,
        s => s,
    }
}

/// The name of a candidate signal, for messages.
pub fn name(sig: c_int) -> &'static str {
    match sig {
        libc::SIGPROF => "SIGPROF",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGPWR => "SIGPWR",
        _ => "a signal",
    }
}

/// The signal's action now (`sa_sigaction`: a handler, SIG_DFL or SIG_IGN).
pub fn action(sig: c_int) -> Result<usize, String> {
    // SAFETY: all-zero is a valid sigaction; sigaction only writes `now`.
    let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
    if unsafe { libc::sigaction(sig, std::ptr::null(), &mut now) } != 0 {
        return Err(format!("sigaction: {}", std::io::Error::last_os_error()));
    }
    Ok(now.sa_sigaction)
}

fn is_free(sig: c_int) -> bool {
    matches!(action(sig), Ok(a) if a == libc::SIG_DFL || a == libc::SIG_IGN)
}

/// Put `handler` (an SA_SIGINFO handler) on `sig`. Every candidate is
/// blocked while it runs: another profiler's signal then waits until the
/// agent's handler returns and lands in the interrupted code, not in the
/// agent's handler.
fn put(sig: c_int, handler: usize) -> Result<(), String> {
    // SAFETY: all-zero is a valid sigaction; we set an SA_SIGINFO handler,
    // restart interrupted system calls, and keep the signal blocked while
    // it runs (no SA_NODEFER).
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler;
    act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: act.sa_mask is a valid sigset to fill.
    unsafe {
        libc::sigemptyset(&mut act.sa_mask);
        for s in CANDIDATES {
            libc::sigaddset(&mut act.sa_mask, s);
        }
    }
    // SAFETY: act is fully initialised; the caller's handler is
    // async-signal-safe.
    if unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) } != 0 {
        return Err(format!("sigaction: {}", std::io::Error::last_os_error()));
    }
    CURRENT.store(sig, Ordering::Release);
    Ok(())
}

/// Install `handler` on the first free candidate not given up. Returns the
/// signal and the candidates passed over because another handler held them.
pub fn install_first_free(handler: usize) -> Result<(c_int, Vec<c_int>), String> {
    let mut taken = Vec::new();
    for (i, &sig) in CANDIDATES.iter().enumerate() {
        if GIVEN_UP.load(Ordering::Acquire) & (1 << i) != 0 {
            continue;
        }
        if is_free(sig) {
            put(sig, handler)?;
            return Ok((sig, taken));
        }
        taken.push(sig);
    }
    Err(format!(
        "{} already have handlers (other profilers?)",
        taken
            .iter()
            .map(|&s| name(s))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Is `handler` still the current signal's? `Err` carries what is there
/// instead.
pub fn still_ours(handler: usize) -> Result<(), usize> {
    let sig = current();
    match action(sig) {
        Ok(a) if a != handler => Err(a),
        _ => Ok(()),
    }
}

/// Give up the current signal (another handler took it) and install
/// `handler` on the next free candidate: the new signal, or `None` when
/// every candidate is taken (the agent then holds none).
pub fn move_on(handler: usize) -> Option<c_int> {
    let sig = current();
    if let Some(i) = CANDIDATES.iter().position(|&s| s == sig) {
        GIVEN_UP.fetch_or(1 << i, Ordering::AcqRel);
    }
    match install_first_free(handler) {
        Ok((s, _)) => Some(s),
        Err(_) => {
            CURRENT.store(0, Ordering::Release);
            None
        }
    }
}

/// What a foreign action is, for messages.
pub fn describe(action: usize) -> &'static str {
    if action == libc::SIG_DFL {
        "reset to the default action"
    } else if action == libc::SIG_IGN {
        "set to be ignored"
    } else {
        "taken by another handler"
    }
}
