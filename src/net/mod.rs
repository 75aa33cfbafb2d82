//! `net=host:port`: the command protocol (pure, shared with the `hprof-rs`
//! front-end) and the agent's command listener thread. The output stream
//! itself goes through the ordinary writer thread (`sink`).

pub mod commands;
pub mod listener;

pub use listener::NetState;
