//! Analysis of what the agent and the JVM wrote: the heap analyser
//! ([`heap`], docs/heap-analyser.md). Plain types only: no JSON, no HTTP;
//! the command line (`cli::heap`) and the UI render the answers.

#![forbid(unsafe_code)]

pub mod heap;
