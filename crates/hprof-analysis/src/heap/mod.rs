//! The heap analyser: an index of one heap dump (docs/heap-analyser.md),
//! and the questions it answers.
//!
//! * `collect` reads the dump once; `ids`, `sizes`, `csr`, `reach`,
//!   `dominators` and `retained` turn what it read into the index, which
//!   `index` builds phase by phase into a file (`store`) and reads back;
//!   `meta` is what the index holds besides per-object arrays; `cache`
//!   decides where the index lives and whether a saved one still fits.
//! * `queries` answers with plain types (no JSON here: the command line
//!   and the UI render them).

mod alloc;
mod cache;
mod collect;
mod csr;
mod dominators;
mod ids;
mod index;
mod meta;
mod queries;
mod reach;
mod records;
mod retained;
mod sizes;
mod store;

pub use cache::{identity, locations, open, CacheMode, Opened};
pub use index::HeapIndex;
pub use meta::{
    ClassInfo, ClassKind, FieldDef, FrameInfo, Meta, RefKind, RootEntry, RootKind, SiteInfo,
    StaticDef, TraceInfo,
};
pub use queries::*;
pub use sizes::{FieldLayout, SizeModel};

/// Told how a long build goes (the command line draws it on a terminal).
pub trait Progress {
    /// A phase begins; `total` is its amount of work in bytes (0: unknown).
    fn stage(&self, name: &str, total: u64);
    /// Work done so far in the phase (`u64::MAX`: all of it).
    fn advance(&self, done: u64);
}

/// Progress nobody watches.
pub struct Quiet;

impl Progress for Quiet {
    fn stage(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
}

/// A small deterministic generator for the modules' tests (no dependency).
#[cfg(test)]
struct Rng(u64);

#[cfg(test)]
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}
