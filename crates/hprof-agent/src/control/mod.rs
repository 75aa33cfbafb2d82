//! Orchestration: when reports are written. A full dump (at VM death, on
//! SIGQUIT / `jcmd JVMTI.data_dump`) asks every profile for its section in
//! order; a socket command goes to the profile that answers it. Both hold
//! the dump lock, so their sections never interleave.
pub mod commands;
pub mod dump;
