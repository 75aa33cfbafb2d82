//! Raw JVMTI ABI: the function table (generated from `jvmti.h`) and the
//! hand-written types. Nothing here is safe to call directly; `jvmti::env`
//! wraps it.
// Generated file: its layout is what the generator prints (crates/hprof-e2e/tests/jvmti_abi.rs
// compares them), so rustfmt leaves it alone.
#[rustfmt::skip]
pub mod functions;
pub mod types;

pub use functions::{jvmtiInterface_1, FUNCTION_SLOTS};
pub use types::*;
