//! Byte-code injection (`bci`): a class-file parser/writer and the HPROF
//! rewriter that inserts calls to the Tracker class (docs/profiles.md §2).
//!
//! Pure safe Rust, independent of the JVM: the class-file load hook hands
//! class bytes to [`inject`] and gets rewritten bytes back.

pub mod classfile;
pub mod code;
pub mod errors;
pub mod stackmap;

pub use errors::BciError;
pub mod inject;

pub use inject::{
    inject, ClassSkip, InjectConfig, InjectOutcome, MethodInfo, SkipReason, CALL_SITE,
    DEFAULT_TRACKER_CLASS, NEW_ARRAY, OBJECT_INIT, RETURN_SITE,
};
