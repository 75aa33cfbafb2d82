//! Byte code: instruction decoding and relocation.

pub mod instructions;
pub mod relocate;
pub mod type_annotations;
pub mod typeflow;
