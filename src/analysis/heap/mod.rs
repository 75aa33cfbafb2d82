//! The heap analyser: an index of one heap dump (docs/heap-analyser.md),
//! and the questions it answers.
//!
//! * `ids` and `csr` are the index's compact parts (identifiers to object
//!   numbers, adjacency as flat arrays); `store` is the index file.

#![allow(dead_code)] // until the index builder uses them

mod csr;
mod ids;
mod store;
