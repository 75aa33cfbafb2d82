//! The agent: composes everything. One [`Agent`] per profiling session,
//! created in Agent_OnLoad or Agent_OnAttach and reachable from every
//! callback through [`agent`]: the shared context (`vm`), the profiles of
//! this run (`profile::list`) with the table that routes each JVMTI event
//! to the profiles that want it, and the socket listener. `onload` holds
//! the library's entry points, `lifecycle` VM init, attach, VM death and
//! stop, `events` the JVMTI event handler.
//!
//! A session ends at VM death or when it is stopped (a load with the option
//! string `stop`); a new attach may then start another. Each session lives
//! for the rest of the process (it is leaked): threads, thread-local caches
//! and callbacks already running may still hold references to it, and it
//! is small once stopped next to what the VM keeps for a loaded agent.
//! (Only the tables' memory is not given back; a process may have up to
//! [`MAX_SESSIONS`] sessions.)

pub mod attach;
pub mod check;
pub mod events;
pub mod lifecycle;
pub mod onload;
mod setup;

use crate::net::NetState;
use crate::profile::{Event, Profile};
use crate::vm::Context;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

pub struct Agent {
    pub ctx: Context,
    /// In dump order (`profile::list`).
    pub profiles: Vec<Box<dyn Profile>>,
    /// For each event, the profiles that asked for it.
    pub routes: Routes,
    /// `net=`: the command listener.
    pub net: NetState,
    /// `push=`: the thread that sends each interval's profile.
    pub push: crate::push::Pusher,
    /// The output file (None with `net=`, and with `listen=` without
    /// `file=`).
    pub output_file: Option<std::path::PathBuf>,
    /// Stopped while the VM runs on (`stop`), or VM death has run.
    stopped: AtomicBool,
    /// When it started, for the "already profiling" message.
    pub started: std::time::SystemTime,
}

/// Per event, the profiles to call, built once at load: an event reaches
/// only the profiles that listed it (`Profile::events`).
pub struct Routes {
    by_event: [Vec<usize>; Event::COUNT],
}

impl Routes {
    fn new(profiles: &[Box<dyn Profile>]) -> Routes {
        let mut by_event: [Vec<usize>; Event::COUNT] = Default::default();
        for (i, p) in profiles.iter().enumerate() {
            for &ev in p.events() {
                by_event[ev as usize].push(i);
            }
        }
        Routes { by_event }
    }

    /// Indices (into the profile list) of the profiles that take `ev`.
    pub fn of(&self, ev: Event) -> &[usize] {
        &self.by_event[ev as usize]
    }
}

impl Agent {
    pub fn new(
        ctx: Context,
        profiles: Vec<Box<dyn Profile>>,
        net: NetState,
        output_file: Option<std::path::PathBuf>,
    ) -> Agent {
        let routes = Routes::new(&profiles);
        Agent {
            ctx,
            profiles,
            routes,
            net,
            push: crate::push::Pusher::default(),
            output_file,
            stopped: AtomicBool::new(false),
            started: std::time::SystemTime::now(),
        }
    }

    /// The session has ended (stop or VM death): nothing more happens in it.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Mark the session ended; false if it already was.
    pub(crate) fn mark_stopped(&self) -> bool {
        !self.stopped.swap(true, Ordering::AcqRel)
    }

    /// The profiles that take `ev`.
    pub fn routed(&self, ev: Event) -> impl Iterator<Item = &dyn Profile> + '_ {
        self.routes.of(ev).iter().map(move |&i| &*self.profiles[i])
    }
}

/// Sessions a process may have, at most (an attach after the last is
/// refused). Each slot is set once and never cleared: a session's callbacks
/// and threads may outlive it briefly, so it must stay valid.
pub const MAX_SESSIONS: usize = 64;

static SESSIONS: [OnceLock<Agent>; MAX_SESSIONS] = [const { OnceLock::new() }; MAX_SESSIONS];

/// Index of the current session's slot + 1 (0: none yet).
static CURRENT: AtomicUsize = AtomicUsize::new(0);

/// The current session (the latest started, maybe stopped since).
pub fn agent() -> Option<&'static Agent> {
    let i = CURRENT.load(Ordering::Acquire);
    SESSIONS.get(i.checked_sub(1)?)?.get()
}

/// Make `a` the current session; Err when every slot has been used.
// The Err hands the whole session back so that the caller drops it on its
// own thread with its message; it happens at most once per attach.
#[allow(clippy::result_large_err)]
pub(crate) fn install(a: Agent) -> Result<&'static Agent, Agent> {
    let next = CURRENT.load(Ordering::Acquire);
    let Some(slot) = SESSIONS.get(next) else {
        return Err(a);
    };
    slot.set(a)?;
    CURRENT.store(next + 1, Ordering::Release);
    Ok(slot.get().expect("session just installed"))
}

/// Serialises the starts and ends of sessions: an attach, a stop and VM
/// death never run at the same time.
static TRANSITIONS: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// Hold while a session starts or ends.
pub(crate) fn transition() -> parking_lot::MutexGuard<'static, ()> {
    TRANSITIONS.lock()
}

/// `transition`, giving up after `limit` (VM death must not wait forever
/// for a stop that is stuck).
pub(crate) fn transition_within(
    limit: std::time::Duration,
) -> Option<parking_lot::MutexGuard<'static, ()>> {
    TRANSITIONS.try_lock_for(limit)
}
