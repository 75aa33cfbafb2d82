//! hprof-rs: the HPROF profiling agent (heap and CPU profiles in the classic
//! HPROF text and binary formats) rebuilt in Rust for JDK 11 and later.
//!
//! Data flows one way: JVMTI events -> profilers -> tables -> report
//! builders -> format -> sink. Only `jvmti` touches raw JVM pointers.

pub mod agent;
pub mod analysis;
pub mod bci;
pub mod build_info;
pub mod cli;
pub mod control;
pub mod diag;
pub mod format;
pub mod jvmti;
pub mod net;
pub mod options;
pub mod os;
pub mod profile;
pub mod protocol;
pub mod reader;
pub mod report;
pub mod sink;
pub mod tables;
pub mod transcode;
pub mod ui;
pub mod vm;
pub mod vocab;
