//! The heap dump section of a dump (`heap=dump`), also the entry point for
//! a socket DUMP HEAP command.

use crate::agent::Agent;
use crate::jvmti::sys::JNIEnv;

/// Write one heap dump (HEAP DUMP BEGIN ... END, or the binary heap dump
/// records). `jni` may be null: the current thread's JNIEnv is used.
pub fn write(agent: &Agent, jni: *mut JNIEnv) {
    crate::profile::heap_dump::dump(agent, jni);
}
