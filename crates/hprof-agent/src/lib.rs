//! hprof-rs's agent: the HPROF profiling agent (heap and CPU profiles in the
//! classic HPROF text and binary formats) rebuilt in Rust for JDK 11 and
//! later; built as `libhprof_rs.so`.
//!
//! Data flows one way: JVMTI events -> profilers -> tables -> report
//! builders -> format -> sink. Only `hprof-jvmti` touches raw JVM pointers.
//! The crates below the agent are re-exported under their module names,
//! so that `crate::reader` names the same thing in every module here and
//! the rank test (crates/hprof-agent/tests/layering.rs) reads one table.

pub use hprof_bci as bci;
pub use hprof_core::{
    build_info, diag, format, ingest, options, os, pprof, protocol, reader, transcode, vocab,
};
pub use hprof_jvmti as jvmti;

pub mod agent;
pub mod control;
pub mod net;
pub mod profile;
pub mod push;
pub mod report;
pub mod sink;
pub mod tables;
pub mod vm;
