//! hprof-rs: the HPROF profiling agent (heap and CPU profiles in the classic
//! HPROF text and binary formats) rebuilt in Rust for JDK 11 and later.
//!
//! Data flows one way: JVMTI events -> profilers -> tables -> report
//! builders -> format -> sink. Only `jvmti` touches raw JVM pointers.

pub mod bci;
pub mod format;
pub mod options;
pub mod reader;
pub mod diag;
pub mod jvmti;
pub mod tables;
pub mod vocab;
pub mod sink;
pub mod agent;
pub mod control;
pub mod profile;
pub mod net;
pub mod cli;
