//! The agent: composes everything. One [`Agent`] per process, created in
//! Agent_OnLoad and reachable from every callback through [`agent`]: the
//! shared context (`vm`), the profiles of this run (`profile::list`) with
//! the table that routes each JVMTI event to the profiles that want it,
//! and the socket listener. `onload` holds the library's entry points,
//! `lifecycle` VM init and VM death, `events` the JVMTI event handler.

pub mod check;
pub mod events;
pub mod lifecycle;
pub mod onload;

use crate::net::NetState;
use crate::profile::{Event, Profile};
use crate::vm::Context;
use std::sync::OnceLock;

pub struct Agent {
    pub ctx: Context,
    /// In dump order (`profile::list`).
    pub profiles: Vec<Box<dyn Profile>>,
    /// For each event, the profiles that asked for it.
    pub routes: Routes,
    /// `net=`: the command listener.
    pub net: NetState,
    /// The output file (None with `net=`).
    pub output_file: Option<std::path::PathBuf>,
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
            output_file,
        }
    }

    /// The profiles that take `ev`.
    pub fn routed(&self, ev: Event) -> impl Iterator<Item = &dyn Profile> + '_ {
        self.routes.of(ev).iter().map(move |&i| &*self.profiles[i])
    }
}

static AGENT: OnceLock<Agent> = OnceLock::new();

pub fn agent() -> Option<&'static Agent> {
    AGENT.get()
}

pub(crate) fn install(a: Agent) -> &'static Agent {
    let _ = AGENT.set(a);
    AGENT.get().expect("agent just installed")
}
