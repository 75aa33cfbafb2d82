//! The JVMTI layer: the only code that holds raw `jvmtiEnv`/`JNIEnv`
//! pointers. `sys` is the ABI, `env` safe wrappers, `memory` ownership of
//! JVMTI allocations, `callbacks` the panic-proof event entry points,
//! `jni` the few JNI calls the agent needs (through the `jni` crate).

pub mod callbacks;
pub mod env;
pub mod heap;
pub mod jni;
pub mod memory;
pub mod sys;
pub mod tracker_natives;

pub use callbacks::EventHandler;
pub use env::{JResult, Jvmti, JvmtiError, MonitorUsage, RawMonitor, StackInfos};
