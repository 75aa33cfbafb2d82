//! JVMTI types, constants and structures, written from `jvmti.h` (JDK 17, which
//! has every function and event up to JDK 11's heap sampling additions).
//! `crates/hprof-e2e/tests/jvmti_abi.rs` compiles a C probe against the installed header and
//! compares sizes, offsets, enum values and capability bit positions.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

pub use jni::sys::{
    jboolean, jchar, jclass, jdouble, jfieldID, jfloat, jint, jlong, jmethodID, jobject, jvalue,
    JNIEnv, JNINativeInterface_, JavaVM,
};
use std::os::raw::{c_char, c_uchar, c_uint, c_void};

use super::functions::jvmtiInterface_1;

/// In C, `jvmtiEnv` is `const struct jvmtiInterface_1_ *`; a `jvmtiEnv*` is
/// therefore a pointer to the function-table pointer.
pub type jvmtiEnv = *const jvmtiInterface_1;
pub type jthread = jobject;
pub type jthreadGroup = jobject;
pub type jlocation = jlong;
#[repr(C)]
pub struct _jrawMonitorID {
    _private: [u8; 0],
}
pub type jrawMonitorID = *mut _jrawMonitorID;
pub type jvmtiError = c_uint;
pub type jvmtiEvent = c_uint;
pub type jvmtiEventMode = c_uint;
pub type jvmtiHeapReferenceKind = c_uint;
pub type jvmtiPrimitiveType = c_uint;

pub const JVMTI_VERSION_1_2: jint = 0x3001_0200;
pub const JVMTI_VERSION_11: jint = 0x300B_0000;
pub const JVMTI_VERSION_MASK_MAJOR: jint = 0x0FFF_0000;
pub const JVMTI_VERSION_SHIFT_MAJOR: jint = 16;

pub const JVMTI_ENABLE: jvmtiEventMode = 1;
pub const JVMTI_DISABLE: jvmtiEventMode = 0;

pub const JVMTI_PHASE_ONLOAD: jint = 1;
pub const JVMTI_PHASE_PRIMORDIAL: jint = 2;
pub const JVMTI_PHASE_START: jint = 6;
pub const JVMTI_PHASE_LIVE: jint = 4;
pub const JVMTI_PHASE_DEAD: jint = 8;

/// Thread state bits (GetThreadState, jvmtiStackInfo.state).
pub mod thread_state {
    pub const ALIVE: i32 = 0x0001;
    pub const TERMINATED: i32 = 0x0002;
    pub const RUNNABLE: i32 = 0x0004;
    pub const WAITING_INDEFINITELY: i32 = 0x0010;
    pub const WAITING_WITH_TIMEOUT: i32 = 0x0020;
    pub const SLEEPING: i32 = 0x0040;
    pub const WAITING: i32 = 0x0080;
    pub const IN_OBJECT_WAIT: i32 = 0x0100;
    pub const PARKED: i32 = 0x0200;
    pub const BLOCKED_ON_MONITOR_ENTER: i32 = 0x0400;
    pub const SUSPENDED: i32 = 0x10_0000;
    pub const INTERRUPTED: i32 = 0x20_0000;
    pub const IN_NATIVE: i32 = 0x40_0000;
}

pub const JVMTI_THREAD_MAX_PRIORITY: jint = 10;
pub const JVMTI_THREAD_NORM_PRIORITY: jint = 5;
pub const JVMTI_HEAP_FILTER_TAGGED: jint = 0x4;
pub const JVMTI_HEAP_FILTER_UNTAGGED: jint = 0x8;
pub const JVMTI_VISIT_OBJECTS: jint = 0x100;
pub const JVMTI_VISIT_ABORT: jint = 0x8000;
pub const JVMTI_CLASS_STATUS_PREPARED: jint = 2;
pub const JVMTI_CLASS_STATUS_ARRAY: jint = 16;
pub const JVMTI_CLASS_STATUS_PRIMITIVE: jint = 32;

/// Event numbers (`jvmtiEvent`).
pub mod event {
    use super::jvmtiEvent;
    pub const VM_INIT: jvmtiEvent = 50;
    pub const VM_DEATH: jvmtiEvent = 51;
    pub const THREAD_START: jvmtiEvent = 52;
    pub const THREAD_END: jvmtiEvent = 53;
    pub const CLASS_FILE_LOAD_HOOK: jvmtiEvent = 54;
    pub const CLASS_LOAD: jvmtiEvent = 55;
    pub const CLASS_PREPARE: jvmtiEvent = 56;
    pub const VM_START: jvmtiEvent = 57;
    pub const EXCEPTION: jvmtiEvent = 58;
    pub const EXCEPTION_CATCH: jvmtiEvent = 59;
    pub const METHOD_ENTRY: jvmtiEvent = 65;
    pub const METHOD_EXIT: jvmtiEvent = 66;
    pub const COMPILED_METHOD_LOAD: jvmtiEvent = 68;
    pub const COMPILED_METHOD_UNLOAD: jvmtiEvent = 69;
    pub const DATA_DUMP_REQUEST: jvmtiEvent = 71;
    pub const MONITOR_WAIT: jvmtiEvent = 73;
    pub const MONITOR_WAITED: jvmtiEvent = 74;
    pub const MONITOR_CONTENDED_ENTER: jvmtiEvent = 75;
    pub const MONITOR_CONTENDED_ENTERED: jvmtiEvent = 76;
    pub const GARBAGE_COLLECTION_START: jvmtiEvent = 81;
    pub const GARBAGE_COLLECTION_FINISH: jvmtiEvent = 82;
    pub const OBJECT_FREE: jvmtiEvent = 83;
    pub const VM_OBJECT_ALLOC: jvmtiEvent = 84;
    pub const SAMPLED_OBJECT_ALLOC: jvmtiEvent = 86;
}

/// Heap reference kinds (FollowReferences).
pub mod heap_ref {
    use super::jvmtiHeapReferenceKind as K;
    pub const CLASS: K = 1;
    pub const FIELD: K = 2;
    pub const ARRAY_ELEMENT: K = 3;
    pub const CLASS_LOADER: K = 4;
    pub const SIGNERS: K = 5;
    pub const PROTECTION_DOMAIN: K = 6;
    pub const INTERFACE: K = 7;
    pub const STATIC_FIELD: K = 8;
    pub const CONSTANT_POOL: K = 9;
    pub const SUPERCLASS: K = 10;
    pub const JNI_GLOBAL: K = 21;
    pub const SYSTEM_CLASS: K = 22;
    pub const MONITOR: K = 23;
    pub const STACK_LOCAL: K = 24;
    pub const JNI_LOCAL: K = 25;
    pub const THREAD: K = 26;
    pub const OTHER: K = 27;
}

/// Primitive type codes (heap callbacks): the JVM signature letters.
pub mod prim {
    use super::jvmtiPrimitiveType as P;
    pub const BOOLEAN: P = 90;
    pub const BYTE: P = 66;
    pub const CHAR: P = 67;
    pub const SHORT: P = 83;
    pub const INT: P = 73;
    pub const LONG: P = 74;
    pub const FLOAT: P = 70;
    pub const DOUBLE: P = 68;
}

/// Error codes we name in messages (GetErrorName gives the rest).
pub mod error {
    use super::jvmtiError;
    pub const NONE: jvmtiError = 0;
    pub const INVALID_THREAD: jvmtiError = 10;
    pub const THREAD_NOT_ALIVE: jvmtiError = 15;
    pub const INVALID_OBJECT: jvmtiError = 20;
    pub const INVALID_CLASS: jvmtiError = 21;
    pub const CLASS_NOT_PREPARED: jvmtiError = 22;
    pub const INVALID_METHODID: jvmtiError = 23;
    pub const NO_MORE_FRAMES: jvmtiError = 31;
    pub const ILLEGAL_ARGUMENT: jvmtiError = 103;
    pub const NOT_AVAILABLE: jvmtiError = 98;
    pub const MUST_POSSESS_CAPABILITY: jvmtiError = 99;
    pub const ABSENT_INFORMATION: jvmtiError = 101;
    pub const NATIVE_METHOD: jvmtiError = 104;
    pub const WRONG_PHASE: jvmtiError = 112;
    pub const UNATTACHED_THREAD: jvmtiError = 115;
    pub const INTERNAL: jvmtiError = 113;
}

/// `jvmtiCapabilities`: 128 bits of C bit-fields. GCC on x86-64/aarch64
/// little-endian allocates bit-fields from the least significant bit of each
/// 32-bit unit, so capability N (0-based, in declaration order) is bit N%32
/// of word N/32. The ABI test checks every position against the C compiler.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct jvmtiCapabilities {
    pub words: [u32; 4],
}

/// Capability bit indices, in `jvmti.h` declaration order.
pub mod cap {
    pub const CAN_TAG_OBJECTS: u32 = 0;
    pub const CAN_GET_BYTECODES: u32 = 3;
    pub const CAN_GET_OWNED_MONITOR_INFO: u32 = 5;
    pub const CAN_GET_CURRENT_CONTENDED_MONITOR: u32 = 6;
    pub const CAN_GET_MONITOR_INFO: u32 = 7;
    pub const CAN_GET_SOURCE_FILE_NAME: u32 = 11;
    pub const CAN_GET_LINE_NUMBERS: u32 = 12;
    pub const CAN_GENERATE_EXCEPTION_EVENTS: u32 = 17;
    pub const CAN_SUSPEND: u32 = 20;
    pub const CAN_GET_CURRENT_THREAD_CPU_TIME: u32 = 22;
    pub const CAN_GET_THREAD_CPU_TIME: u32 = 23;
    pub const CAN_GENERATE_ALL_CLASS_HOOK_EVENTS: u32 = 26;
    pub const CAN_GENERATE_COMPILED_METHOD_LOAD_EVENTS: u32 = 27;
    pub const CAN_GENERATE_MONITOR_EVENTS: u32 = 28;
    pub const CAN_GENERATE_VM_OBJECT_ALLOC_EVENTS: u32 = 29;
    pub const CAN_GENERATE_GARBAGE_COLLECTION_EVENTS: u32 = 31;
    pub const CAN_GENERATE_OBJECT_FREE_EVENTS: u32 = 32;
    pub const CAN_GET_CONSTANT_POOL: u32 = 35;
    pub const CAN_RETRANSFORM_CLASSES: u32 = 37;
    pub const CAN_RETRANSFORM_ANY_CLASS: u32 = 38;
    pub const CAN_GENERATE_EARLY_VMSTART: u32 = 41;
    pub const CAN_GENERATE_EARLY_CLASS_HOOK_EVENTS: u32 = 42;
    pub const CAN_GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS: u32 = 43;
    /// Every named capability as (bit, C field name), for the ABI test.
    pub const ALL: &[(u32, &str)] = &[
        (0, "can_tag_objects"),
        (1, "can_generate_field_modification_events"),
        (2, "can_generate_field_access_events"),
        (3, "can_get_bytecodes"),
        (4, "can_get_synthetic_attribute"),
        (5, "can_get_owned_monitor_info"),
        (6, "can_get_current_contended_monitor"),
        (7, "can_get_monitor_info"),
        (8, "can_pop_frame"),
        (9, "can_redefine_classes"),
        (10, "can_signal_thread"),
        (11, "can_get_source_file_name"),
        (12, "can_get_line_numbers"),
        (13, "can_get_source_debug_extension"),
        (14, "can_access_local_variables"),
        (15, "can_maintain_original_method_order"),
        (16, "can_generate_single_step_events"),
        (17, "can_generate_exception_events"),
        (18, "can_generate_frame_pop_events"),
        (19, "can_generate_breakpoint_events"),
        (20, "can_suspend"),
        (21, "can_redefine_any_class"),
        (22, "can_get_current_thread_cpu_time"),
        (23, "can_get_thread_cpu_time"),
        (24, "can_generate_method_entry_events"),
        (25, "can_generate_method_exit_events"),
        (26, "can_generate_all_class_hook_events"),
        (27, "can_generate_compiled_method_load_events"),
        (28, "can_generate_monitor_events"),
        (29, "can_generate_vm_object_alloc_events"),
        (30, "can_generate_native_method_bind_events"),
        (31, "can_generate_garbage_collection_events"),
        (32, "can_generate_object_free_events"),
        (33, "can_force_early_return"),
        (34, "can_get_owned_monitor_stack_depth_info"),
        (35, "can_get_constant_pool"),
        (36, "can_set_native_method_prefix"),
        (37, "can_retransform_classes"),
        (38, "can_retransform_any_class"),
        (39, "can_generate_resource_exhaustion_heap_events"),
        (40, "can_generate_resource_exhaustion_threads_events"),
        (41, "can_generate_early_vmstart"),
        (42, "can_generate_early_class_hook_events"),
        (43, "can_generate_sampled_object_alloc_events"),
    ];
}

impl jvmtiCapabilities {
    pub fn set(&mut self, bit: u32) {
        self.words[(bit / 32) as usize] |= 1 << (bit % 32);
    }
    pub fn has(&self, bit: u32) -> bool {
        self.words[(bit / 32) as usize] & (1 << (bit % 32)) != 0
    }
}

#[repr(C)]
pub struct jvmtiThreadInfo {
    pub name: *mut c_char,
    pub priority: jint,
    pub is_daemon: jboolean,
    pub thread_group: jthreadGroup,
    pub context_class_loader: jobject,
}

#[repr(C)]
pub struct jvmtiMonitorStackDepthInfo {
    pub monitor: jobject,
    pub stack_depth: jint,
}

#[repr(C)]
pub struct jvmtiThreadGroupInfo {
    pub parent: jthreadGroup,
    pub name: *mut c_char,
    pub max_priority: jint,
    pub is_daemon: jboolean,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct jvmtiFrameInfo {
    pub method: jmethodID,
    pub location: jlocation,
}

#[repr(C)]
pub struct jvmtiStackInfo {
    pub thread: jthread,
    pub state: jint,
    pub frame_buffer: *mut jvmtiFrameInfo,
    pub frame_count: jint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct jvmtiHeapReferenceInfoStackLocal {
    pub thread_tag: jlong,
    pub thread_id: jlong,
    pub depth: jint,
    pub method: jmethodID,
    pub location: jlocation,
    pub slot: jint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct jvmtiHeapReferenceInfoJniLocal {
    pub thread_tag: jlong,
    pub thread_id: jlong,
    pub depth: jint,
    pub method: jmethodID,
}

/// `jvmtiHeapReferenceInfo`: field/array/constant_pool carry one `jint index`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union jvmtiHeapReferenceInfo {
    pub index: jint,
    pub stack_local: jvmtiHeapReferenceInfoStackLocal,
    pub jni_local: jvmtiHeapReferenceInfoJniLocal,
    pub other: [jlong; 8],
}

pub type jvmtiHeapIterationCallback =
    Option<unsafe extern "C" fn(jlong, jlong, *mut jlong, jint, *mut c_void) -> jint>;
pub type jvmtiHeapReferenceCallback = Option<
    unsafe extern "C" fn(
        jvmtiHeapReferenceKind,
        *const jvmtiHeapReferenceInfo,
        jlong,
        jlong,
        jlong,
        *mut jlong,
        *mut jlong,
        jint,
        *mut c_void,
    ) -> jint,
>;
pub type jvmtiPrimitiveFieldCallback = Option<
    unsafe extern "C" fn(
        jvmtiHeapReferenceKind,
        *const jvmtiHeapReferenceInfo,
        jlong,
        *mut jlong,
        jvalue,
        jvmtiPrimitiveType,
        *mut c_void,
    ) -> jint,
>;
pub type jvmtiArrayPrimitiveValueCallback = Option<
    unsafe extern "C" fn(
        jlong,
        jlong,
        *mut jlong,
        jint,
        jvmtiPrimitiveType,
        *const c_void,
        *mut c_void,
    ) -> jint,
>;
pub type jvmtiStringPrimitiveValueCallback =
    Option<unsafe extern "C" fn(jlong, jlong, *mut jlong, *const jchar, jint, *mut c_void) -> jint>;

#[repr(C)]
pub struct jvmtiHeapCallbacks {
    pub heap_iteration_callback: jvmtiHeapIterationCallback,
    pub heap_reference_callback: jvmtiHeapReferenceCallback,
    pub primitive_field_callback: jvmtiPrimitiveFieldCallback,
    pub array_primitive_value_callback: jvmtiArrayPrimitiveValueCallback,
    pub string_primitive_value_callback: jvmtiStringPrimitiveValueCallback,
    pub reserved: [*const c_void; 11],
}

#[repr(C)]
pub struct jvmtiClassDefinition {
    pub klass: jclass,
    pub class_byte_count: jint,
    pub class_bytes: *const c_uchar,
}

#[repr(C)]
pub struct jvmtiMonitorUsage {
    pub owner: jthread,
    pub entry_count: jint,
    pub waiter_count: jint,
    pub waiters: *mut jthread,
    pub notify_waiter_count: jint,
    pub notify_waiters: *mut jthread,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct jvmtiLineNumberEntry {
    pub start_location: jlocation,
    pub line_number: jint,
}

#[repr(C)]
pub struct jvmtiLocalVariableEntry {
    pub start_location: jlocation,
    pub length: jint,
    pub name: *mut c_char,
    pub signature: *mut c_char,
    pub generic_signature: *mut c_char,
    pub slot: jint,
}

#[repr(C)]
pub struct jvmtiTimerInfo {
    pub max_value: jlong,
    pub may_skip_forward: jboolean,
    pub may_skip_backward: jboolean,
    pub kind: c_uint,
    pub reserved1: jlong,
    pub reserved2: jlong,
}

pub type jvmtiStartFunction = Option<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, *mut c_void)>;

type Cb<F> = Option<F>;
/// `jvmtiEventCallbacks`: slots for events 50..=86, in event-number order.
#[repr(C)]
#[derive(Default)]
pub struct jvmtiEventCallbacks {
    pub VMInit: Cb<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread)>,
    pub VMDeath: Cb<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv)>,
    pub ThreadStart: Cb<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread)>,
    pub ThreadEnd: Cb<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread)>,
    pub ClassFileLoadHook: Cb<
        unsafe extern "C" fn(
            *mut jvmtiEnv,
            *mut JNIEnv,
            jclass,
            jobject,
            *const c_char,
            jobject,
            jint,
            *const c_uchar,
            *mut jint,
            *mut *mut c_uchar,
        ),
    >,
    pub ClassLoad: Cb<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread, jclass)>,
    pub ClassPrepare: Cb<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread, jclass)>,
    pub VMStart: Cb<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv)>,
    pub Exception: Cb<unsafe extern "C" fn()>,
    pub ExceptionCatch: Cb<
        unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread, jmethodID, jlocation, jobject),
    >,
    pub SingleStep: Cb<unsafe extern "C" fn()>,
    pub FramePop: Cb<unsafe extern "C" fn()>,
    pub Breakpoint: Cb<unsafe extern "C" fn()>,
    pub FieldAccess: Cb<unsafe extern "C" fn()>,
    pub FieldModification: Cb<unsafe extern "C" fn()>,
    pub MethodEntry: Cb<unsafe extern "C" fn()>,
    pub MethodExit: Cb<unsafe extern "C" fn()>,
    pub NativeMethodBind: Cb<unsafe extern "C" fn()>,
    pub CompiledMethodLoad: Cb<
        unsafe extern "C" fn(
            *mut jvmtiEnv,
            jmethodID,
            jint,
            *const c_void,
            jint,
            *const c_void,
            *const c_void,
        ),
    >,
    pub CompiledMethodUnload: Cb<unsafe extern "C" fn(*mut jvmtiEnv, jmethodID, *const c_void)>,
    pub DynamicCodeGenerated: Cb<unsafe extern "C" fn()>,
    pub DataDumpRequest: Cb<unsafe extern "C" fn(*mut jvmtiEnv)>,
    pub reserved72: Cb<unsafe extern "C" fn()>,
    pub MonitorWait: Cb<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread, jobject, jlong)>,
    pub MonitorWaited:
        Cb<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread, jobject, jboolean)>,
    pub MonitorContendedEnter:
        Cb<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread, jobject)>,
    pub MonitorContendedEntered:
        Cb<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread, jobject)>,
    pub reserved77: Cb<unsafe extern "C" fn()>,
    pub reserved78: Cb<unsafe extern "C" fn()>,
    pub reserved79: Cb<unsafe extern "C" fn()>,
    pub ResourceExhausted: Cb<unsafe extern "C" fn()>,
    pub GarbageCollectionStart: Cb<unsafe extern "C" fn(*mut jvmtiEnv)>,
    pub GarbageCollectionFinish: Cb<unsafe extern "C" fn(*mut jvmtiEnv)>,
    pub ObjectFree: Cb<unsafe extern "C" fn(*mut jvmtiEnv, jlong)>,
    pub VMObjectAlloc:
        Cb<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread, jobject, jclass, jlong)>,
    pub reserved85: Cb<unsafe extern "C" fn()>,
    pub SampledObjectAlloc:
        Cb<unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread, jobject, jclass, jlong)>,
}

/// Field names of `jvmtiEventCallbacks` in order, for the ABI test.
pub const EVENT_CALLBACK_FIELDS: &[&str] = &[
    "VMInit",
    "VMDeath",
    "ThreadStart",
    "ThreadEnd",
    "ClassFileLoadHook",
    "ClassLoad",
    "ClassPrepare",
    "VMStart",
    "Exception",
    "ExceptionCatch",
    "SingleStep",
    "FramePop",
    "Breakpoint",
    "FieldAccess",
    "FieldModification",
    "MethodEntry",
    "MethodExit",
    "NativeMethodBind",
    "CompiledMethodLoad",
    "CompiledMethodUnload",
    "DynamicCodeGenerated",
    "DataDumpRequest",
    "reserved72",
    "MonitorWait",
    "MonitorWaited",
    "MonitorContendedEnter",
    "MonitorContendedEntered",
    "reserved77",
    "reserved78",
    "reserved79",
    "ResourceExhausted",
    "GarbageCollectionStart",
    "GarbageCollectionFinish",
    "ObjectFree",
    "VMObjectAlloc",
    "reserved85",
    "SampledObjectAlloc",
];
