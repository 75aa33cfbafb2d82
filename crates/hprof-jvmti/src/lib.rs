//! The JVMTI layer: the only code that holds raw `jvmtiEnv`/`JNIEnv`
//! pointers and raw JNI references. `sys` is the ABI, `env` and `heap`
//! safe wrappers, `memory` ownership of JVMTI allocations, `refs` the
//! lifetime-bound JNI environment and references everything above uses,
//! `callbacks` the panic-proof event entry points, `agent_thread` the one
//! way agent threads start and stop, `jni` the few JNI calls the agent
//! needs (through the `jni` crate), `tracker_natives` the cpu=times
//! Tracker's native methods, `async_sampler` the per-thread CPU-time
//! timers and the signal handler that samples stacks where threads run,
//! `thread_dump` the native thread IDs of Java threads (from the VM's
//! thread dump), `own_work` which threads are running agent code (so what
//! the agent allocates is not counted as the program's).

use hprof_core::diag;

pub mod agent_thread;
pub mod async_sampler;
pub mod callbacks;
pub mod env;
pub mod heap;
pub mod jni;
pub mod library;
pub mod memory;
pub mod own_work;
pub mod refs;
pub mod sys;
pub mod thread_dump;
pub mod tracker_natives;

pub use agent_thread::AgentThread;
pub use callbacks::EventHandler;
pub use env::{JResult, Jvmti, JvmtiError, MonitorUsage, RawMonitor, ScratchEnv, StackInfos};
pub use jni::with_current_jni;
pub use refs::{Frame, Jni, Local, Locals, MethodId, Obj};
