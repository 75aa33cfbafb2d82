//! The `hprof-rs` front-end tool: `listen` (socket front-end for
//! `net=host:port`), `attach` and `jvms` (load the agent into a running
//! JVM; list the JVMs), `print` (binary HPROF as text), `flame` (CPU samples as
//! collapsed stacks or an SVG flame graph), `histo` (class histogram of a
//! heap dump), `sites` (where a report's program allocates), `heap` (the
//! heap analyser: dominator tree, retained sizes, paths from GC roots).
//! Built on `crate::reader`; see docs/hprof-rs-tool.md.

use hprof_analysis as analysis;
pub use hprof_analysis::{flame, lines, progress};
use hprof_core::{format, os, protocol, reader, transcode, vocab};

pub mod attach;
pub mod heap;
pub mod histo;
pub mod listen;
pub mod print;
pub mod profile;
pub mod push;
pub mod sites;
pub mod terminal;

/// A tool error: message for stderr, exit status 1.
pub type CliResult<T> = hprof_analysis::ToolResult<T>;
