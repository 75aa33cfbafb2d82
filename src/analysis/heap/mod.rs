//! The heap analyser: an index of one heap dump (docs/heap-analyser.md),
//! and the questions it answers.
//!
//! * `ids` and `csr` are the index's compact parts (identifiers to object
//!   numbers, adjacency as flat arrays); `store` is the index file; `meta`
//!   what the index holds besides per-object arrays; `sizes` the shallow
//!   size of every object as the JVM counts it; `reach`, `dominators` and
//!   `retained` walk the graph (no recursion) to the dominator tree and
//!   retained sizes.

#![allow(dead_code)] // until the index builder uses them

mod csr;
mod dominators;
mod ids;
mod meta;
mod reach;
mod retained;
mod sizes;
mod store;

pub use meta::{
    ClassInfo, ClassKind, FieldDef, FrameInfo, Meta, RefKind, RootEntry, RootKind, SiteInfo,
    StaticDef, TraceInfo,
};
pub use sizes::{FieldLayout, SizeModel};
