//! Report builders: plain data from the tables and from what a profile
//! collected, turned into one section each (the traces it names first) and
//! handed to the writer thread. Each report is built once, on the caller's
//! thread; the writer only lays it out. Nothing here decides when a report
//! is written (that is `control`) or talks to the JVM.

pub mod cpu;
pub mod cpu_times;
pub mod monitor;
pub mod sites;
pub mod traces;
