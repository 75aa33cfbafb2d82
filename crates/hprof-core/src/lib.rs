//! What both products of hprof-rs speak (docs/design.md, "Code map"): the
//! record vocabulary, messages, options, the socket protocol, HPROF in its
//! binary and text forms (`format` writes, `reader` reads, `transcode`
//! turns one into the other). No JVM, no JSON, no command line; no HTTP but
//! the one request both products post to a profiling server (`ingest`).

pub mod build_info;
pub mod diag;
pub mod format;
pub mod fs;
pub mod ingest;
pub mod leb128;
pub mod options;
pub mod os;
pub mod pprof;
pub mod protocol;
pub mod reader;
pub mod transcode;
pub mod untrusted;
pub mod vocab;
