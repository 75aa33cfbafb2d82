//! Which threads are running the agent's own code right now: every event
//! callback, the agent's threads, Agent_OnLoad and Agent_OnAttach (the
//! cpu=times Tracker's natives make no JNI call that allocates). An object allocated on a thread while the
//! agent's code runs there (a JNI call that makes a String, a thread dump
//! or a heap dump through the VM's MBeans, the agent property an attach
//! publishes) is the agent's, not the program's: allocation profiles ask
//! [`agent_code_below`] and do not count it (docs/alloc_sites.md). So is
//! everything the JVM's attach listener allocates ([`serve_tools_here`]).

use std::cell::Cell;

thread_local! {
    /// How many entries into agent code this thread is inside.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// The thread serves tools for good: the JVM's attach listener.
    static SERVES_TOOLS: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread, for the rest of its life, as one that serves
/// tools and never runs the program's code: the JVM's attach listener,
/// where Agent_OnAttach runs. The requests it handles after the load (the
/// tool reading the agent's outcome, `jcmd` commands) run Java code there
/// whose objects are not the program's.
pub fn serve_tools_here() {
    SERVES_TOOLS.with(|s| s.set(true));
}

/// Marks the current thread as running agent code until dropped.
pub struct OwnWork(());

/// Enter agent code on this thread.
pub fn enter() -> OwnWork {
    DEPTH.with(|d| d.set(d.get().saturating_add(1)));
    OwnWork(())
}

impl Drop for OwnWork {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Inside an allocation callback (itself one entry): whether the
/// allocation happened while agent code ran on this thread, below the
/// callback.
pub fn agent_code_below() -> bool {
    DEPTH.with(|d| d.get() > 1) || SERVES_TOOLS.with(|s| s.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_per_thread() {
        assert!(!agent_code_below());
        let callback = enter();
        assert!(!agent_code_below(), "the callback alone is the program's");
        {
            let _inner = enter();
            assert!(agent_code_below());
            std::thread::spawn(|| {
                let _cb = enter();
                assert!(!agent_code_below(), "another thread");
            })
            .join()
            .unwrap();
        }
        assert!(!agent_code_below());
        drop(callback);
        assert_eq!(DEPTH.with(|d| d.get()), 0);
        std::thread::spawn(|| {
            serve_tools_here();
            let _cb = enter();
            assert!(agent_code_below(), "a thread that serves tools");
        })
        .join()
        .unwrap();
    }
}
