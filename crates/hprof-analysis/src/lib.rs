//! The tool's model of what the agent and the JVM wrote: the heap analyser
//! ([`heap`], docs/heap-analyser.md), CPU samples as stacks and their flame
//! graph ([`flame`]), one way to open any input ([`input`]: gzip or not,
//! binary or text, with progress, [`progress`]), the one reader of the text
//! report ([`text`]), bounded lines ([`lines`]), and the session model
//! with its views ([`session`]: CPU, memory, monitors, threads, heap
//! histogram, console) that the UI's page and `hprof-rs export` read. Plain types only: no JSON, no HTTP; the
//! command line (`hprof-cli`) and the UI (`hprof-ui`) render the answers.

#![forbid(unsafe_code)]

use hprof_core::{format, os, reader, transcode, vocab};

pub mod allocated;
pub mod flame;
pub mod heap;
pub mod input;
pub mod jfr;
pub(crate) use hprof_core::leb128;
pub mod lines;
pub mod output;
pub mod pprof;
pub mod progress;
pub mod session;
pub mod text;

/// A failure of the tool's model: a message for the user.
pub type ToolResult<T> = Result<T, String>;
