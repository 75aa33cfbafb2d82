//! `net=host:port`: the agent's command listener thread. The commands'
//! wire format is `protocol` (pure, shared with the `hprof-rs` front-end);
//! the output stream goes through the ordinary writer thread (`sink`).

pub mod acceptor;
pub mod listener;

pub use listener::{Listening, NetState};
