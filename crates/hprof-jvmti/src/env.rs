//! Safe wrappers over the JVMTI function table.
//!
//! `Jvmti` is a copyable handle on the agent's one `jvmtiEnv`. JVMTI
//! environments are usable from any thread the VM knows, and the env pointer
//! lives until the VM exits, so the handle is `Send + Sync`. Every method
//! returns `Result<_, JvmtiError>`; JVMTI allocations are returned as owned
//! Rust values or as `JvmtiArray` guards that deallocate on drop.

use super::memory::{take_string, JvmtiArray};
use super::refs::{self, Frame, Jni, Local, Locals, MethodId, Obj};
use super::sys::*;
use std::ffi::CString;
use std::fmt;
use std::os::raw::{c_char, c_void};
use std::ptr;

/// A JVMTI error code with the function that produced it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JvmtiError {
    pub code: jvmtiError,
    pub function: &'static str,
}

impl fmt::Display for JvmtiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed (JVMTI Error {}({}))",
            self.function,
            error_name(self.code),
            self.code
        )
    }
}

impl std::error::Error for JvmtiError {}

/// Names of the JVMTI error codes, as GetErrorName would give them.
pub fn error_name(code: jvmtiError) -> &'static str {
    match code {
        0 => "JVMTI_ERROR_NONE",
        10 => "JVMTI_ERROR_INVALID_THREAD",
        11 => "JVMTI_ERROR_INVALID_THREAD_GROUP",
        13 => "JVMTI_ERROR_THREAD_NOT_SUSPENDED",
        14 => "JVMTI_ERROR_THREAD_SUSPENDED",
        15 => "JVMTI_ERROR_THREAD_NOT_ALIVE",
        20 => "JVMTI_ERROR_INVALID_OBJECT",
        21 => "JVMTI_ERROR_INVALID_CLASS",
        22 => "JVMTI_ERROR_CLASS_NOT_PREPARED",
        23 => "JVMTI_ERROR_INVALID_METHODID",
        24 => "JVMTI_ERROR_INVALID_LOCATION",
        25 => "JVMTI_ERROR_INVALID_FIELDID",
        26 => "JVMTI_ERROR_INVALID_MODULE",
        31 => "JVMTI_ERROR_NO_MORE_FRAMES",
        32 => "JVMTI_ERROR_OPAQUE_FRAME",
        50 => "JVMTI_ERROR_INVALID_MONITOR",
        51 => "JVMTI_ERROR_NOT_MONITOR_OWNER",
        52 => "JVMTI_ERROR_INTERRUPT",
        60 => "JVMTI_ERROR_INVALID_CLASS_FORMAT",
        62 => "JVMTI_ERROR_FAILS_VERIFICATION",
        68 => "JVMTI_ERROR_UNSUPPORTED_VERSION",
        79 => "JVMTI_ERROR_UNMODIFIABLE_CLASS",
        98 => "JVMTI_ERROR_NOT_AVAILABLE",
        99 => "JVMTI_ERROR_MUST_POSSESS_CAPABILITY",
        100 => "JVMTI_ERROR_NULL_POINTER",
        101 => "JVMTI_ERROR_ABSENT_INFORMATION",
        102 => "JVMTI_ERROR_INVALID_EVENT_TYPE",
        103 => "JVMTI_ERROR_ILLEGAL_ARGUMENT",
        104 => "JVMTI_ERROR_NATIVE_METHOD",
        106 => "JVMTI_ERROR_CLASS_LOADER_UNSUPPORTED",
        110 => "JVMTI_ERROR_OUT_OF_MEMORY",
        111 => "JVMTI_ERROR_ACCESS_DENIED",
        112 => "JVMTI_ERROR_WRONG_PHASE",
        113 => "JVMTI_ERROR_INTERNAL",
        115 => "JVMTI_ERROR_UNATTACHED_THREAD",
        116 => "JVMTI_ERROR_INVALID_ENVIRONMENT",
        _ => "?",
    }
}

pub type JResult<T> = Result<T, JvmtiError>;

/// Call one slot of the function table, turning a missing slot (a VM older
/// than the function) into JVMTI_ERROR_NOT_AVAILABLE and a non-zero return
/// into `JvmtiError`.
macro_rules! call {
    ($self:ident, $name:ident $(, $arg:expr)*) => {{
        // SAFETY: `$self.env` is the agent's live jvmtiEnv (see `Jvmti::from_raw`);
        // each wrapper passes arguments that satisfy the function's contract
        // in the JVMTI specification (valid out-pointers, live references).
        let code = unsafe {
            match (**$self.env).$name {
                Some(f) => f($self.env $(, $arg)*),
                None => error::NOT_AVAILABLE,
            }
        };
        if code == error::NONE {
            Ok(())
        } else {
            Err(JvmtiError { code, function: stringify!($name) })
        }
    }};
}

/// A second JVMTI environment of the agent's own, with `can_tag_objects`,
/// whose tags are dropped all at once when it is disposed (on drop). The
/// heap dump tags every object in one of these, so the VM's tag map for
/// them lives only while the dump runs. The `Jvmti` handle it lends must
/// not be kept beyond the `ScratchEnv`.
pub struct ScratchEnv {
    env: Jvmti,
}

impl ScratchEnv {
    /// A fresh environment with `can_tag_objects` (None if the VM refuses).
    pub fn new() -> Option<ScratchEnv> {
        let vm = super::jni::java_vm();
        if vm.is_null() {
            return None;
        }
        // SAFETY: java_vm() is the live JavaVM stored at Agent_OnLoad; each
        // GetEnv call for a JVMTI version creates a new environment.
        let env = unsafe { Jvmti::from_vm(vm) }.ok()?;
        let scratch = ScratchEnv { env };
        let mut caps = jvmtiCapabilities::default();
        caps.set(cap::CAN_TAG_OBJECTS);
        scratch.env.add_capabilities(&caps).ok()?;
        Some(scratch)
    }

    pub fn env(&self) -> &Jvmti {
        &self.env
    }
}

impl Drop for ScratchEnv {
    fn drop(&mut self) {
        // SAFETY: the env was created by `new` and is disposed exactly once,
        // here; DisposeEnvironment also drops its tags (JVMTI spec).
        unsafe {
            let raw = self.env.raw();
            if let Some(f) = (**raw).DisposeEnvironment {
                f(raw);
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jvmti {
    env: *mut jvmtiEnv,
}

// SAFETY: a jvmtiEnv may be used from every thread (JVMTI spec, "Function
// Access"); the pointer stays valid until VM exit and is never freed by us.
unsafe impl Send for Jvmti {}
// SAFETY: as above; the handle has no interior state.
unsafe impl Sync for Jvmti {}

/// Method facts needed to render a frame.
#[derive(Clone, Debug, Default)]
pub struct MethodNames {
    pub name: String,
    pub signature: String,
}

impl Jvmti {
    /// # Safety
    /// `env` must be a jvmtiEnv obtained from `JavaVM::GetEnv`, valid for the
    /// rest of the process.
    pub unsafe fn from_raw(env: *mut jvmtiEnv) -> Self {
        Jvmti { env }
    }

    /// Ask the VM for a JVMTI environment of the newest version we know
    /// (JVMTI 11 for heap sampling), falling back to 1.2 on older VMs.
    ///
    /// # Safety
    /// `vm` must be the live JavaVM pointer handed to Agent_OnLoad.
    pub unsafe fn from_vm(vm: *mut JavaVM) -> Result<Self, jint> {
        let mut env: *mut c_void = ptr::null_mut();
        let mut last = -1;
        for version in [JVMTI_VERSION_11, JVMTI_VERSION_1_2] {
            // SAFETY: vm is live (caller); GetEnv writes the env pointer.
            let rc = unsafe {
                match (**vm).GetEnv {
                    Some(get_env) => get_env(vm, &mut env, version),
                    None => -1,
                }
            };
            if rc == 0 && !env.is_null() {
                // SAFETY: GetEnv succeeded, so env is a jvmtiEnv for the VM's life.
                return Ok(unsafe { Jvmti::from_raw(env as *mut jvmtiEnv) });
            }
            last = rc;
        }
        Err(last)
    }

    /// A new environment of the JavaVM stored with `jni::set_vm` (each
    /// GetEnv for a JVMTI version creates one). Err: GetEnv's answer.
    pub fn new_env() -> Result<Self, jint> {
        let vm = super::jni::java_vm();
        if vm.is_null() {
            return Err(-1);
        }
        // SAFETY: java_vm() is the live JavaVM stored by the entry point
        // that received it; it stays valid for the process.
        unsafe { Jvmti::from_vm(vm) }
    }

    pub fn raw(&self) -> *mut jvmtiEnv {
        self.env
    }

    pub fn version(&self) -> JResult<i32> {
        let mut v: jint = 0;
        call!(self, GetVersionNumber, &mut v)?;
        Ok(v)
    }

    pub fn phase(&self) -> JResult<i32> {
        let mut p: jint = 0;
        call!(self, GetPhase, &mut p)?;
        Ok(p)
    }

    pub fn potential_capabilities(&self) -> JResult<jvmtiCapabilities> {
        let mut caps = jvmtiCapabilities::default();
        call!(self, GetPotentialCapabilities, &mut caps)?;
        Ok(caps)
    }

    pub fn add_capabilities(&self, caps: &jvmtiCapabilities) -> JResult<()> {
        call!(self, AddCapabilities, caps)
    }

    /// DisposeEnvironment: the VM drops this environment's events,
    /// callbacks, capabilities and tags (a profile stopped while the VM
    /// runs on gives everything back). Only for an environment no callback
    /// and no agent thread uses any more: every later call on it, from any
    /// copy of this handle, is invalid.
    pub fn dispose(&self) -> JResult<()> {
        call!(self, DisposeEnvironment)
    }

    pub fn capabilities(&self) -> JResult<jvmtiCapabilities> {
        let mut caps = jvmtiCapabilities::default();
        call!(self, GetCapabilities, &mut caps)?;
        Ok(caps)
    }

    pub fn set_event_callbacks(&self, callbacks: &jvmtiEventCallbacks) -> JResult<()> {
        call!(
            self,
            SetEventCallbacks,
            callbacks,
            std::mem::size_of::<jvmtiEventCallbacks>() as jint
        )
    }

    pub fn set_event_mode(&self, enable: bool, event: jvmtiEvent) -> JResult<()> {
        let mode = if enable { JVMTI_ENABLE } else { JVMTI_DISABLE };
        call!(
            self,
            SetEventNotificationMode,
            mode,
            event,
            ptr::null_mut::<std::ffi::c_void>() as jthread
        )
    }

    /// Send the events of `event` for what exists already
    /// (CompiledMethodLoad, DynamicCodeGenerated).
    pub fn generate_events(&self, event: jvmtiEvent) -> JResult<()> {
        call!(self, GenerateEvents, event)
    }

    pub fn create_raw_monitor(&self, name: &str) -> JResult<RawMonitor> {
        let cname = CString::new(name).unwrap_or_default();
        let mut mon: jrawMonitorID = ptr::null_mut();
        call!(self, CreateRawMonitor, cname.as_ptr(), &mut mon)?;
        Ok(RawMonitor {
            jvmti: *self,
            id: mon,
        })
    }

    // ---- classes and methods ---------------------------------------------

    /// (signature, generic signature) of a class, e.g. `Ljava/lang/String;`.
    pub fn class_signature(&self, klass: Obj<'_>) -> JResult<String> {
        let mut sig: *mut c_char = ptr::null_mut();
        call!(
            self,
            GetClassSignature,
            klass.raw(),
            &mut sig,
            ptr::null_mut()
        )?;
        // SAFETY: GetClassSignature returned a JVMTI-allocated C string.
        Ok(unsafe { take_string(self.env, sig) }.unwrap_or_default())
    }

    pub fn class_status(&self, klass: Obj<'_>) -> JResult<i32> {
        let mut st: jint = 0;
        call!(self, GetClassStatus, klass.raw(), &mut st)?;
        Ok(st)
    }

    pub fn source_file_name(&self, klass: Obj<'_>) -> JResult<Option<String>> {
        let mut name: *mut c_char = ptr::null_mut();
        match call!(self, GetSourceFileName, klass.raw(), &mut name) {
            // SAFETY: on success name is a JVMTI-allocated C string.
            Ok(()) => Ok(unsafe { take_string(self.env, name) }),
            Err(e) if e.code == error::ABSENT_INFORMATION => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The class's defining loader; None for the boot loader.
    pub fn class_loader<'a>(&self, jni: Jni<'a>, klass: Obj<'_>) -> JResult<Option<Local<'a>>> {
        let mut loader: jobject = ptr::null_mut();
        call!(self, GetClassLoader, klass.raw(), &mut loader)?;
        // SAFETY: GetClassLoader returns a new local reference (or null).
        Ok(unsafe { jni.own(loader) })
    }

    pub fn loaded_classes<'a>(&self, jni: Jni<'a>) -> JResult<Locals<'a>> {
        let mut count: jint = 0;
        let mut classes: *mut jclass = ptr::null_mut();
        call!(self, GetLoadedClasses, &mut count, &mut classes)?;
        // SAFETY: GetLoadedClasses returned `count` local refs of this
        // thread in a JVMTI buffer, handed over to us.
        Ok(unsafe { Locals::new(JvmtiArray::from_raw(self.env, classes, count), jni) })
    }

    pub fn method_name(&self, method: MethodId) -> JResult<MethodNames> {
        let method = method.raw();
        let mut name: *mut c_char = ptr::null_mut();
        let mut sig: *mut c_char = ptr::null_mut();
        call!(
            self,
            GetMethodName,
            method,
            &mut name,
            &mut sig,
            ptr::null_mut()
        )?;
        // SAFETY: both are JVMTI-allocated C strings on success.
        let (name, signature) =
            unsafe { (take_string(self.env, name), take_string(self.env, sig)) };
        Ok(MethodNames {
            name: name.unwrap_or_default(),
            signature: signature.unwrap_or_default(),
        })
    }

    pub fn method_declaring_class<'a>(&self, jni: Jni<'a>, method: MethodId) -> JResult<Local<'a>> {
        let mut klass: jclass = ptr::null_mut();
        call!(self, GetMethodDeclaringClass, method.raw(), &mut klass)?;
        // SAFETY: a new local reference of this thread.
        unsafe { jni.own(klass) }.ok_or(JvmtiError {
            code: error::INVALID_CLASS,
            function: "GetMethodDeclaringClass",
        })
    }

    /// (start location, line) pairs; empty when the method has none.
    pub fn line_number_table(&self, method: MethodId) -> JResult<Vec<(i64, i32)>> {
        let mut count: jint = 0;
        let mut table: *mut jvmtiLineNumberEntry = ptr::null_mut();
        match call!(
            self,
            GetLineNumberTable,
            method.raw(),
            &mut count,
            &mut table
        ) {
            Ok(()) => {
                // SAFETY: on success the table holds `count` entries.
                let arr = unsafe { JvmtiArray::from_raw(self.env, table, count) };
                Ok(arr
                    .iter()
                    .map(|e| (e.start_location, e.line_number))
                    .collect())
            }
            Err(e) if e.code == error::ABSENT_INFORMATION || e.code == error::NATIVE_METHOD => {
                Ok(Vec::new())
            }
            Err(e) => Err(e),
        }
    }

    /// The instruction at byte-code `location` of `method`: its opcode and
    /// the two bytes after it (0 past the end) (GetBytecodes, which needs
    /// `can_get_bytecodes`); None outside the code.
    pub fn instruction_at(&self, method: MethodId, location: i64) -> JResult<Option<[u8; 3]>> {
        let mut count: jint = 0;
        let mut code: *mut std::os::raw::c_uchar = ptr::null_mut();
        call!(self, GetBytecodes, method.raw(), &mut count, &mut code)?;
        // SAFETY: on success `code` holds `count` bytes the agent owns.
        let code = unsafe { JvmtiArray::from_raw(self.env, code, count) };
        let Some(at) = usize::try_from(location).ok().filter(|&i| i < code.len()) else {
            return Ok(None);
        };
        let byte = |i: usize| code.get(i).copied().unwrap_or(0);
        Ok(Some([byte(at), byte(at + 1), byte(at + 2)]))
    }

    /// The constant pool of `klass` as a class file holds it: the entry
    /// count (`constant_pool_count`) and the entries' bytes
    /// (GetConstantPool, which needs `can_get_constant_pool`).
    pub fn constant_pool(&self, klass: Obj<'_>) -> JResult<(u16, Vec<u8>)> {
        let mut count: jint = 0;
        let mut len: jint = 0;
        let mut bytes: *mut std::os::raw::c_uchar = ptr::null_mut();
        call!(
            self,
            GetConstantPool,
            klass.raw(),
            &mut count,
            &mut len,
            &mut bytes
        )?;
        // SAFETY: on success `bytes` holds `len` bytes the agent owns.
        let bytes = unsafe { JvmtiArray::from_raw(self.env, bytes, len) };
        Ok((u16::try_from(count).unwrap_or(u16::MAX), bytes.to_vec()))
    }

    // ---- threads -----------------------------------------------------------

    pub fn thread_info<'a>(&self, jni: Jni<'a>, thread: Obj<'_>) -> JResult<ThreadInfo<'a>> {
        // SAFETY: all-zero is a valid jvmtiThreadInfo (null pointers, zero ints).
        let mut info: jvmtiThreadInfo = unsafe { std::mem::zeroed() };
        call!(self, GetThreadInfo, thread.raw(), &mut info)?;
        // SAFETY: name is a JVMTI-allocated C string (or null); the group
        // and the context class loader are new local references.
        let (name, group, _loader) = unsafe {
            (
                take_string(self.env, info.name),
                jni.own(info.thread_group),
                jni.own(info.context_class_loader),
            )
        };
        Ok(ThreadInfo {
            name,
            group,
            is_daemon: info.is_daemon != 0,
        })
    }

    pub fn thread_group_info<'a>(
        &self,
        jni: Jni<'a>,
        group: Obj<'_>,
    ) -> JResult<ThreadGroupInfo<'a>> {
        // SAFETY: all-zero is a valid jvmtiThreadGroupInfo.
        let mut info: jvmtiThreadGroupInfo = unsafe { std::mem::zeroed() };
        call!(self, GetThreadGroupInfo, group.raw(), &mut info)?;
        // SAFETY: name is a JVMTI-allocated C string (or null); parent is
        // a new local reference (or null).
        let (name, parent) = unsafe { (take_string(self.env, info.name), jni.own(info.parent)) };
        Ok(ThreadGroupInfo { name, parent })
    }

    pub fn thread_state(&self, thread: Obj<'_>) -> JResult<i32> {
        let mut st: jint = 0;
        call!(self, GetThreadState, thread.raw(), &mut st)?;
        Ok(st)
    }

    /// The calling thread's Thread object.
    pub fn current_thread<'a>(&self, jni: Jni<'a>) -> JResult<Local<'a>> {
        let mut t: jthread = ptr::null_mut();
        call!(self, GetCurrentThread, &mut t)?;
        // SAFETY: GetCurrentThread returns a new local reference.
        unsafe { jni.own(t) }.ok_or(JvmtiError {
            code: error::INVALID_THREAD,
            function: "GetCurrentThread",
        })
    }

    pub fn all_threads<'a>(&self, jni: Jni<'a>) -> JResult<Locals<'a>> {
        let mut count: jint = 0;
        let mut threads: *mut jthread = ptr::null_mut();
        call!(self, GetAllThreads, &mut count, &mut threads)?;
        // SAFETY: `count` local refs of this thread in a JVMTI buffer.
        Ok(unsafe { Locals::new(JvmtiArray::from_raw(self.env, threads, count), jni) })
    }

    /// Stack of one thread (null = current thread), top frame first, at
    /// most `max_depth` frames. Memory follows the stack, not `max_depth`
    /// (see `capture_sizes`).
    pub fn stack_trace(
        &self,
        thread: Obj<'_>,
        max_depth: usize,
        buf: &mut Vec<Frame>,
    ) -> JResult<()> {
        let thread = thread.raw();
        for cap in capture_sizes(max_depth) {
            buf.clear();
            buf.reserve(cap);
            let mut count: jint = 0;
            call!(
                self,
                GetStackTrace,
                thread,
                0,
                cap as jint,
                // Frame has jvmtiFrameInfo's layout (refs.rs).
                buf.as_mut_ptr() as *mut jvmtiFrameInfo,
                &mut count
            )?;
            let count = count.clamp(0, cap as jint) as usize;
            // SAFETY: GetStackTrace initialised `count` (<= cap, and cap <=
            // the capacity just reserved) frames.
            unsafe { buf.set_len(count) };
            if count < cap {
                break;
            }
        }
        Ok(())
    }

    /// Stacks of several threads in one safepoint, at most `max_depth`
    /// frames each. A capture in which some thread filled the frames asked
    /// for is taken again with room for more (a new safepoint: the result
    /// is still one consistent moment).
    pub fn thread_list_stack_traces(
        &self,
        threads: &[Obj<'_>],
        max_depth: usize,
    ) -> JResult<StackInfos> {
        let threads = refs::raw_list(threads);
        let mut last = None;
        for cap in capture_sizes(max_depth) {
            let mut infos: *mut jvmtiStackInfo = ptr::null_mut();
            call!(
                self,
                GetThreadListStackTraces,
                threads.len() as jint,
                threads.as_ptr(),
                cap as jint,
                &mut infos
            )?;
            // SAFETY: one JVMTI allocation holding threads.len()
            // jvmtiStackInfo (frame buffers live inside the same allocation).
            let stacks =
                StackInfos(unsafe { JvmtiArray::from_raw(self.env, infos, threads.len() as i32) });
            let full = (0..stacks.len()).any(|i| stacks.get(i).1.len() >= cap);
            last = Some(stacks);
            if !full {
                break;
            }
        }
        Ok(last.expect("capture_sizes yields at least one size"))
    }

    pub(crate) fn run_agent_thread(
        &self,
        thread: jthread,
        proc_: unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, *mut c_void),
        arg: *mut c_void,
        priority: i32,
    ) -> JResult<()> {
        call!(
            self,
            RunAgentThread,
            thread,
            Some(proc_),
            arg as *const c_void,
            priority
        )
    }

    // ---- objects -------------------------------------------------------------

    pub fn get_tag(&self, obj: Obj<'_>) -> JResult<i64> {
        let mut tag: jlong = 0;
        call!(self, GetTag, obj.raw(), &mut tag)?;
        Ok(tag)
    }

    pub fn set_tag(&self, obj: Obj<'_>, tag: i64) -> JResult<()> {
        call!(self, SetTag, obj.raw(), tag)
    }

    pub fn force_garbage_collection(&self) -> JResult<()> {
        call!(self, ForceGarbageCollection)
    }

    pub fn set_heap_sampling_interval(&self, bytes: i32) -> JResult<()> {
        call!(self, SetHeapSamplingInterval, bytes)
    }

    // ---- byte-code injection (cpu=times) -------------------------------------

    /// Method and location of the frame `depth` below the top of `thread`'s
    /// stack (null = current thread).
    pub fn frame_location(&self, thread: Obj<'_>, depth: i32) -> JResult<(MethodId, i64)> {
        let mut method: jmethodID = ptr::null_mut();
        let mut location: jlocation = 0;
        call!(
            self,
            GetFrameLocation,
            thread.raw(),
            depth,
            &mut method,
            &mut location
        )?;
        Ok((MethodId::from_raw(method), location))
    }

    /// Number of frames on `thread`'s stack (null = current thread).
    pub fn frame_count(&self, thread: Obj<'_>) -> JResult<usize> {
        let mut n: jint = 0;
        call!(self, GetFrameCount, thread.raw(), &mut n)?;
        Ok(n.max(0) as usize)
    }

    pub fn is_modifiable_class(&self, klass: Obj<'_>) -> JResult<bool> {
        let mut b: jboolean = 0;
        call!(self, IsModifiableClass, klass.raw(), &mut b)?;
        Ok(b != 0)
    }

    /// Re-run the class-file load hook on `classes` (their original bytes).
    pub fn retransform_classes(&self, classes: &[Obj<'_>]) -> JResult<()> {
        let classes = refs::raw_list(classes);
        call!(
            self,
            RetransformClasses,
            classes.len() as jint,
            classes.as_ptr()
        )
    }

    /// The methods a class declares.
    pub fn class_methods(&self, klass: Obj<'_>) -> JResult<Vec<MethodId>> {
        let mut count: jint = 0;
        let mut methods: *mut jmethodID = ptr::null_mut();
        call!(self, GetClassMethods, klass.raw(), &mut count, &mut methods)?;
        // SAFETY: on success `count` method IDs in a JVMTI buffer.
        let ids = unsafe { JvmtiArray::from_raw(self.env, methods, count) };
        Ok(ids.iter().map(|&m| MethodId::from_raw(m)).collect())
    }
}

// ---- monitors (monitor=y) ----------------------------------------------------

/// Result of GetObjectMonitorUsage; its references are deleted on drop.
pub struct MonitorUsage<'a> {
    pub owner: Option<Local<'a>>,
    pub entry_count: i32,
    /// Threads waiting to own the monitor (before JDK 23 HotSpot also lists
    /// the threads waiting in `Object.wait()` here).
    pub waiters: Locals<'a>,
    /// Threads waiting to be notified (before JDK 23 possibly also threads
    /// re-entering after a notify).
    pub notify_waiters: Locals<'a>,
}

impl Jvmti {
    /// Monitors owned by `thread`. Needs can_get_owned_monitor_info.
    pub fn owned_monitors<'a>(&self, jni: Jni<'a>, thread: Obj<'_>) -> JResult<Locals<'a>> {
        let mut count: jint = 0;
        let mut objs: *mut jobject = ptr::null_mut();
        call!(
            self,
            GetOwnedMonitorInfo,
            thread.raw(),
            &mut count,
            &mut objs
        )?;
        // SAFETY: on success `objs` is a JVMTI allocation holding `count`
        // local references of this thread, handed over to us.
        Ok(unsafe { Locals::new(JvmtiArray::from_raw(self.env, objs, count), jni) })
    }

    /// Owner, entry count and waiting threads of `obj`'s monitor. Needs
    /// can_get_monitor_info.
    pub fn monitor_usage<'a>(&self, jni: Jni<'a>, obj: Obj<'_>) -> JResult<MonitorUsage<'a>> {
        // SAFETY: all-zero is a valid jvmtiMonitorUsage (null pointers, zero counts).
        let mut u: jvmtiMonitorUsage = unsafe { std::mem::zeroed() };
        call!(self, GetObjectMonitorUsage, obj.raw(), &mut u)?;
        // SAFETY: on success the owner is a new local reference (or null)
        // and both lists are JVMTI allocations (or null) of the stated
        // number of local references, owned by the caller.
        let (owner, waiters, notify_waiters) = unsafe {
            (
                jni.own(u.owner),
                Locals::new(
                    JvmtiArray::from_raw(self.env, u.waiters, u.waiter_count),
                    jni,
                ),
                Locals::new(
                    JvmtiArray::from_raw(self.env, u.notify_waiters, u.notify_waiter_count),
                    jni,
                ),
            )
        };
        Ok(MonitorUsage {
            owner,
            entry_count: u.entry_count,
            waiters,
            notify_waiters,
        })
    }
}

pub struct ThreadInfo<'a> {
    pub name: Option<String>,
    pub group: Option<Local<'a>>,
    pub is_daemon: bool,
}

pub struct ThreadGroupInfo<'a> {
    pub name: Option<String>,
    pub parent: Option<Local<'a>>,
}

/// Result of GetThreadListStackTraces, released on drop.
/// Frames asked for by a first stack capture. Traces are usually a few
/// frames deep (default depth 4), so one call is the rule.
const FIRST_CAPTURE_FRAMES: usize = 256;

/// Most frames one capture returns, whatever the `depth` option says
/// (docs/options.md, "depth"): 2^20 frames is deeper than a Java thread's
/// stack can be with any usual `-Xss`, and keeps a buffer for one stack
/// under 16 MiB.
pub const MAX_CAPTURE_FRAMES: usize = 1 << 20;

/// The frame counts to ask the JVM for, in turn, to capture up to
/// `max_depth` frames: small first, four times more while the stack fills
/// what was asked. The JVM (and our buffer) reserve room for every frame
/// asked for, so asking for `depth=2147483647` frames at once would need
/// 32 GiB; growing keeps memory proportional to the real stack.
pub fn capture_sizes(max_depth: usize) -> impl Iterator<Item = usize> {
    let limit = max_depth.min(MAX_CAPTURE_FRAMES);
    let first = limit.min(FIRST_CAPTURE_FRAMES);
    std::iter::successors(Some(first), move |&n| {
        (n < limit).then(|| n.saturating_mul(4).min(limit))
    })
}

pub struct StackInfos(JvmtiArray<jvmtiStackInfo>);

impl StackInfos {
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// (thread state, frames top first) of entry `i`.
    pub fn get(&self, i: usize) -> (i32, &[Frame]) {
        let info = &self.0[i];
        let frames = if info.frame_buffer.is_null() || info.frame_count <= 0 {
            &[][..]
        } else {
            // SAFETY: the VM filled frame_count frames in frame_buffer, which
            // lives inside the allocation self.0 owns.
            refs::frames(unsafe {
                std::slice::from_raw_parts(info.frame_buffer, info.frame_count as usize)
            })
        };
        (info.state, frames)
    }
}

/// A JVMTI raw monitor: a VM-aware mutex + condition usable in any phase,
/// and safe against safepoints (unlike a Rust mutex held across a VM call).
pub struct RawMonitor {
    jvmti: Jvmti,
    id: jrawMonitorID,
}

// SAFETY: raw monitors are designed to be shared between threads.
unsafe impl Send for RawMonitor {}
// SAFETY: as above.
unsafe impl Sync for RawMonitor {}

impl RawMonitor {
    pub fn enter(&self) -> RawMonitorGuard<'_> {
        let j = self.jvmti;
        let _ = call!(j, RawMonitorEnter, self.id);
        RawMonitorGuard { mon: self }
    }
}

pub struct RawMonitorGuard<'a> {
    mon: &'a RawMonitor,
}

impl RawMonitorGuard<'_> {
    /// Wait up to `millis` (0 = until notified). Returns false if the wait
    /// was interrupted or failed.
    pub fn wait(&self, millis: i64) -> bool {
        let j = self.mon.jvmti;
        call!(j, RawMonitorWait, self.mon.id, millis).is_ok()
    }
    pub fn notify_all(&self) {
        let j = self.mon.jvmti;
        let _ = call!(j, RawMonitorNotifyAll, self.mon.id);
    }
}

impl Drop for RawMonitorGuard<'_> {
    fn drop(&mut self) {
        let j = self.mon.jvmti;
        let _ = call!(j, RawMonitorExit, self.mon.id);
    }
}

#[cfg(test)]
mod capture_size_tests {
    use super::{capture_sizes, MAX_CAPTURE_FRAMES};

    #[test]
    fn small_depths_take_one_capture_of_exactly_the_depth() {
        assert_eq!(capture_sizes(4).collect::<Vec<_>>(), [4]);
        assert_eq!(capture_sizes(0).collect::<Vec<_>>(), [0]);
        assert_eq!(capture_sizes(256).collect::<Vec<_>>(), [256]);
    }

    #[test]
    fn large_depths_grow_to_the_depth_or_the_ceiling() {
        assert_eq!(capture_sizes(1000).collect::<Vec<_>>(), [256, 1000]);
        let huge: Vec<_> = capture_sizes(i32::MAX as usize).collect();
        assert_eq!(huge.first(), Some(&256));
        assert_eq!(huge.last(), Some(&MAX_CAPTURE_FRAMES));
        assert!(huge.windows(2).all(|w| w[1] > w[0]));
        assert!(huge.len() < 10);
    }
}
