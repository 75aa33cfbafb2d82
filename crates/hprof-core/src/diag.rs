//! HPROF-style diagnostics on stderr.
//!
//! The original printed `HPROF ERROR: <message> [<source>:<line>]`; tools and
//! scripts grep for the prefix, so we keep it and put our own source
//! location in the brackets.

use std::io::Write;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, Ordering};

/// `errorexit=y`: every error takes the fatal path.
static ERROR_EXIT: AtomicBool = AtomicBool::new(false);
/// `coredump=y` / `debug=y`: the fatal path aborts (core dump) instead of exit(9).
static CORE_DUMP: AtomicBool = AtomicBool::new(false);

pub fn configure(error_exit: bool, core_dump: bool) {
    ERROR_EXIT.store(error_exit, Ordering::Relaxed);
    CORE_DUMP.store(core_dump, Ordering::Relaxed);
}

/// Format one error line (without printing it).
pub fn error_line(message: &str, loc: &Location<'_>) -> String {
    let file = loc.file().rsplit('/').next().unwrap_or(loc.file());
    format!("HPROF ERROR: {message} [{file}:{}]\n", loc.line())
}

/// Unit tests of other crates turned collecting on (`captured::enable`).
static CAPTURE: AtomicBool = AtomicBool::new(false);

/// Write one message line to stderr. Unit tests collect the lines instead
/// (see `captured`), so an error a test provokes on purpose is checked by
/// that test rather than printed among passing tests.
fn emit(line: &str) {
    if cfg!(test) || CAPTURE.load(Ordering::Relaxed) {
        captured::push(line);
    } else {
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}

/// Lines the agent would have printed, in unit tests: this crate's always,
/// another crate's once it called [`captured::enable`] (a switch rather
/// than a cargo feature, which would reach the agent the tests run too).
pub mod captured {
    use std::sync::atomic::Ordering;
    use std::sync::Mutex;

    /// Collect every message line from now on instead of printing it.
    pub fn enable() {
        super::CAPTURE.store(true, Ordering::Relaxed);
    }

    static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

    pub(super) fn push(line: &str) {
        LINES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(line.to_string());
    }

    /// Remove and return the captured lines that contain `text`.
    pub fn take_matching(text: &str) -> Vec<String> {
        let mut all = LINES.lock().unwrap_or_else(|e| e.into_inner());
        let (hit, keep): (Vec<String>, Vec<String>) = all.drain(..).partition(|l| l.contains(text));
        *all = keep;
        hit
    }
}

/// Print a non-fatal error; with `errorexit=y` it becomes fatal.
#[track_caller]
pub fn error(message: &str) {
    let line = error_line(message, Location::caller());
    emit(&line);
    if ERROR_EXIT.load(Ordering::Relaxed) {
        terminate();
    }
}

/// Print an error and end the process the way the original's fatal path did.
#[track_caller]
pub fn fatal(message: &str) -> ! {
    let line = error_line(message, Location::caller());
    emit(&line);
    terminate()
}

fn terminate() -> ! {
    let mut err = std::io::stderr();
    let _ = err.write_all(b"HPROF TERMINATED PROCESS\n");
    if CORE_DUMP.load(Ordering::Relaxed) {
        let _ = err.write_all(b"HPROF DUMPING CORE\n");
        std::process::abort();
    }
    std::process::exit(9)
}

/// Progress messages that `verbose=y` allows (e.g. `Dumping ... done.`).
pub fn verbose(enabled: bool, text: &str) {
    if enabled {
        let mut err = std::io::stderr();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    }
}

/// Report a socket command the agent rejects. Never fatal (not even with
/// `errorexit=y`): a misbehaving front-end must not bring the JVM down.
#[track_caller]
pub fn rejected(message: &str) {
    let line = error_line(message, Location::caller());
    emit(&line);
}

/// A note about how the agent runs (a fallback it took), never an error:
/// `HPROF: <message>`.
pub fn notice(message: &str) {
    emit(&format!("HPROF: {message}\n"));
}

/// `HPROF WARNING: <message>`: something the user should know that is not
/// an error (never fatal, whatever `errorexit` says).
pub fn warning(message: &str) {
    emit(&format!("HPROF WARNING: {message}\n"));
}

/// A `debugflags` line: internal detail asked for by the user, never an
/// error.
pub fn debug(message: &str) {
    emit(&format!("HPROF DEBUG: {message}\n"));
}

#[cfg(test)]
mod tests {
    #[test]
    fn error_line_has_hprof_prefix_and_location() {
        let loc = std::panic::Location::caller();
        let l = super::error_line("can't create profile file: /x", loc);
        assert!(l.starts_with("HPROF ERROR: can't create profile file: /x [diag.rs:"));
        assert!(l.ends_with("]\n"));
    }
}
