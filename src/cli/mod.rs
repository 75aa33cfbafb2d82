//! The `hprof-rs` front-end tool: `listen` (socket front-end for
//! `net=host:port`), `attach` and `jvms` (load the agent into a running
//! JVM; list the JVMs), `print` (binary HPROF as text), `flame` (CPU samples as
//! collapsed stacks or an SVG flame graph), `histo` (class histogram of a
//! heap dump), `sites` (where a report's program allocates), `heap` (the
//! heap analyser: dominator tree, retained sizes, paths from GC roots).
//! Built on `crate::reader`; see docs/hprof-rs-tool.md.

pub mod attach;
pub mod flame;
pub mod heap;
pub mod histo;
pub mod lines;
pub mod listen;
pub mod print;
pub mod progress;
pub mod sites;

/// A tool error: message for stderr, exit status 1.
pub type CliResult<T> = Result<T, String>;
