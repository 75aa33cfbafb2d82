//! Plain data handed to the serializers.
//!
//! Nothing here refers to the JVM: class and method names are JVM type
//! signatures / descriptors as plain strings, objects are `u64` IDs chosen by
//! the caller. Reports (sites, CPU, monitors, traces) own their row vectors
//! because they are built once per dump; heap-dump sub-records borrow slices
//! because they are produced in large numbers and the caller can reuse its
//! buffers between calls.

/// When a record is produced. Every serializer call that writes a record
/// receives one, so output is deterministic under test.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    /// Microseconds since the agent was loaded (binary record time field,
    /// truncated to 32 bits on output).
    pub micros_since_load: u64,
    /// Wall-clock milliseconds since 1970-01-01 00:00 UTC (binary header,
    /// text dates).
    pub unix_millis: i64,
    /// Offset of local time east of UTC, in seconds, valid at `unix_millis`
    /// (text dates are local time, like C `ctime()`).
    pub utc_offset_secs: i32,
}

/// Line number of a frame whose line is not known (also used for native
/// methods, `lineno=n` and every cpu=times frame).
pub const LINE_UNKNOWN: i32 = -1;
/// Line value meaning "compiled method" (defined by the format, never
/// produced by a JVMTI agent).
pub const LINE_COMPILED: i32 = -2;
/// Line value meaning "native method" (defined by the format, never
/// produced by a JVMTI agent).
pub const LINE_NATIVE: i32 = -3;

/// One stack frame of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo<'a> {
    /// Frame ID (binary FRAME record); one ID per (method, location).
    pub frame_id: u64,
    /// JVM signature of the declaring class, e.g. `Ljava/lang/String;`.
    pub class_sig: &'a str,
    /// Class serial of the declaring class (binary only).
    pub class_serial: u32,
    /// Method name as the VM reports it; empty = unknown.
    pub method_name: &'a str,
    /// Raw JVM method descriptor, e.g. `(I)V`; empty = unknown.
    pub method_sig: &'a str,
    /// Source file name, `None` when the class has none.
    pub source_file: Option<&'a str>,
    /// Line number, or [`LINE_UNKNOWN`] / [`LINE_COMPILED`] / [`LINE_NATIVE`].
    pub line: i32,
}

/// JVMTI phase a trace was captured in. Only non-live phases are shown
/// (text format).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JvmPhase {
    #[default]
    Live,
    OnLoad,
    Primordial,
    Start,
    Dead,
    Unknown,
}

impl JvmPhase {
    /// Word used in ` (from %s phase of JVM)`, `None` for the live phase.
    pub fn label(self) -> Option<&'static str> {
        match self {
            JvmPhase::Live => None,
            JvmPhase::OnLoad => Some("onload"),
            JvmPhase::Primordial => Some("primordial"),
            JvmPhase::Start => Some("start"),
            JvmPhase::Dead => Some("dead"),
            JvmPhase::Unknown => Some("unknown"),
        }
    }
}

/// A stack trace, top frame first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceInfo<'a> {
    pub serial: u32,
    /// Thread serial when traces are kept per thread (`thread=y`).
    pub thread_serial: Option<u32>,
    pub phase: JvmPhase,
    pub frames: Vec<FrameInfo<'a>>,
}

/// A thread start event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadStart<'a> {
    pub thread_serial: u32,
    /// Object ID of the `java.lang.Thread` object.
    pub obj_id: u64,
    /// Trace of the new thread at its start event (binary only).
    pub trace_serial: u32,
    pub name: Option<&'a str>,
    pub group: Option<&'a str>,
    /// Parent of the thread group (binary only); `None` for the root group.
    pub parent_group: Option<&'a str>,
}

/// A class the agent considers newly loaded (binary only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadClass<'a> {
    pub class_serial: u32,
    pub class_obj_id: u64,
    pub trace_serial: u32,
    /// JVM signature; written in rendered Java form (`java.lang.String`).
    pub class_sig: &'a str,
}

/// Settings announced once after the binary header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ControlSettings {
    /// Heap dumping or allocation sites are on (flag bit 0x1).
    pub heap_or_sites: bool,
    /// CPU sampling is on (flag bit 0x2).
    pub cpu_sampling: bool,
    /// The `depth` option.
    pub depth: u16,
}

impl ControlSettings {
    /// The u4 flags word of the CONTROL SETTINGS record.
    pub fn flags(&self) -> u32 {
        (self.heap_or_sites as u32) | ((self.cpu_sampling as u32) << 1)
    }
}

/// Running heap totals from the allocation-site bookkeeping.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapTotals {
    pub live_bytes: u32,
    pub live_instances: u32,
    pub alloc_bytes: u64,
    pub alloc_instances: u64,
}

/// SITES flag: only sites changed since the last report (selection is the
/// caller's job; the flag is just echoed in the binary record).
pub const SITES_INCREMENTAL: u16 = 0x1;
/// SITES flag: sort by allocated bytes instead of live bytes.
pub const SITES_SORT_BY_ALLOC: u16 = 0x2;
/// SITES flag: a GC was forced before the report (echoed only).
pub const SITES_FORCE_GC: u16 = 0x4;

/// SITES flag (hprof-rs extension): the counts are estimates scaled from
/// allocation samples (`heapsample=`). Text: `(ordered by live bytes,
/// estimated from samples)`; binary: bit 0x8 of the ALLOC SITES flags.
pub const SITES_ESTIMATED: u16 = 0x8;

/// SITES flag (hprof-rs extension): the agent was attached to a running
/// VM, so only allocations made since are counted, and live counts cover
/// only those objects. Text: `counted from the attach` in the title;
/// binary: bit 0x10 of the ALLOC SITES flags.
pub const SITES_SINCE_ATTACH: u16 = 0x10;

/// SITES flag (hprof-rs extension): asked for in an ALLOC SITES request,
/// the report's allocated counts are those made since the previous report
/// asked for with it (the agent restarts them at each such report, in the
/// same step, so no allocation is counted twice or lost); live counts stay
/// whole. A peer sums such reports in 64 bits (a record's counters are 32
/// bits: 4 GiB at one site since the start saturated them). Echoed in the
/// record; text: `allocations since the previous report` in the title.
pub const SITES_TAKEN: u16 = 0x20;

/// One allocation site: a (class, allocation trace) pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteRow<'a> {
    /// JVM signature of the allocated class (`[C`, `Ljava/lang/String;`).
    pub class_sig: &'a str,
    pub class_serial: u32,
    pub trace_serial: u32,
    pub live_bytes: u32,
    pub live_instances: u32,
    pub alloc_bytes: u32,
    pub alloc_instances: u32,
}

/// Allocation-site report. Rows may be given in any order: sorting and the
/// cutoff are applied by [`crate::format::select_sites`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SitesReport<'a> {
    /// [`SITES_INCREMENTAL`] | [`SITES_SORT_BY_ALLOC`] | [`SITES_FORCE_GC`];
    /// 0 for the exit / data-dump report.
    pub flags: u16,
    /// Ratio (of live bytes) below which rows stop.
    pub cutoff: f64,
    pub totals: HeapTotals,
    pub rows: Vec<SiteRow<'a>>,
}

impl SitesReport<'_> {
    pub fn sorted_by_alloc(&self) -> bool {
        self.flags & SITES_SORT_BY_ALLOC != 0
    }

    pub fn estimated(&self) -> bool {
        self.flags & SITES_ESTIMATED != 0
    }

    pub fn since_attach(&self) -> bool {
        self.flags & SITES_SINCE_ATTACH != 0
    }

    pub fn taken(&self) -> bool {
        self.flags & SITES_TAKEN != 0
    }
}

/// A method named by class signature, name and descriptor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MethodRef<'a> {
    pub class_sig: &'a str,
    pub method_name: &'a str,
    /// Raw descriptor; only shown by the old prof format.
    pub method_sig: &'a str,
}

/// Which CPU section title to use (chosen by whether sampling is on).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CpuTitle {
    /// `CPU SAMPLES`; also the only kind with a binary record.
    #[default]
    Samples,
    /// `CPU TIME (ms)`; text only.
    Times,
}

/// One trace's CPU cost since the last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuRow<'a> {
    pub trace_serial: u32,
    /// Samples in which the trace was current, or completed calls (times).
    pub hits: u32,
    /// Self cost: samples, or self time in ms. Rows are sorted by it.
    pub cost: u64,
    /// Top frame of the trace, `None` for an empty trace.
    pub top_frame: Option<MethodRef<'a>>,
}

/// CPU SAMPLES / CPU TIME report. Rows in any order (see
/// [`crate::format::select_cpu`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuReport<'a> {
    pub title: CpuTitle,
    pub cutoff: f64,
    /// Sum of the self cost of *all* traces since the last reset (not only
    /// the rows given).
    pub total: u64,
    pub rows: Vec<CpuRow<'a>>,
}

/// One row of the old prof format (`cpu=old`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OldProfRow<'a> {
    pub hits: u32,
    /// Total time of the trace including callees, in ms.
    pub total_ms: u64,
    pub callee: Option<MethodRef<'a>>,
    pub caller: Option<MethodRef<'a>>,
}

/// Old prof report (text only). Rows in any order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OldProfReport<'a> {
    pub rows: Vec<OldProfRow<'a>>,
}

/// Thread state word shown in MONITOR DUMP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ThreadState {
    /// Not alive, terminated: `ZO`.
    Terminated,
    /// Not alive, not started: `NS`.
    NotStarted,
    /// `SL`.
    Sleeping,
    /// Blocked on monitor entry: `MW`.
    MonitorWait,
    /// Waiting on a condition: `CW`.
    CondWait,
    /// `R`.
    Runnable,
    /// `UN`.
    #[default]
    Unknown,
}

impl ThreadState {
    pub fn code(self) -> &'static str {
        match self {
            ThreadState::Terminated => "ZO",
            ThreadState::NotStarted => "NS",
            ThreadState::Sleeping => "SL",
            ThreadState::MonitorWait => "MW",
            ThreadState::CondWait => "CW",
            ThreadState::Runnable => "R",
            ThreadState::Unknown => "UN",
        }
    }
}

/// Full status of a thread in MONITOR DUMP: optional prefixes plus a state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadStatus {
    pub suspended: bool,
    pub interrupted: bool,
    pub in_native: bool,
    pub state: ThreadState,
}

impl ThreadStatus {
    /// Derive the status from a JVMTI `GetThreadState` bit set (pure bit
    /// arithmetic on the published JVMTI constants).
    pub fn from_jvmti_state(s: u32) -> Self {
        const ALIVE: u32 = 0x0001;
        const TERMINATED: u32 = 0x0002;
        const RUNNABLE: u32 = 0x0004;
        const WAITING: u32 = 0x0080;
        const SLEEPING: u32 = 0x0040;
        const BLOCKED_ON_MONITOR_ENTER: u32 = 0x0400;
        const SUSPENDED: u32 = 0x10_0000;
        const INTERRUPTED: u32 = 0x20_0000;
        const IN_NATIVE: u32 = 0x40_0000;
        let state = if s & ALIVE == 0 {
            if s & TERMINATED != 0 {
                ThreadState::Terminated
            } else {
                ThreadState::NotStarted
            }
        } else if s & SLEEPING != 0 {
            ThreadState::Sleeping
        } else if s & BLOCKED_ON_MONITOR_ENTER != 0 {
            ThreadState::MonitorWait
        } else if s & WAITING != 0 {
            ThreadState::CondWait
        } else if s & RUNNABLE != 0 {
            ThreadState::Runnable
        } else {
            ThreadState::Unknown
        };
        ThreadStatus {
            suspended: s & SUSPENDED != 0,
            interrupted: s & INTERRUPTED != 0,
            in_native: s & IN_NATIVE != 0,
            state,
        }
    }
}

impl std::fmt::Display for ThreadStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.suspended {
            f.write_str("S|")?;
        }
        if self.interrupted {
            f.write_str("intr|")?;
        }
        if self.in_native {
            f.write_str("native|")?;
        }
        f.write_str(self.state.code())
    }
}

/// A thread line of MONITOR DUMP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MonitorThread {
    pub thread_serial: u32,
    /// The thread's most recent trace (system trace if none).
    pub trace_serial: u32,
    pub status: ThreadStatus,
}

/// An owned monitor block of MONITOR DUMP.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MonitorInfo<'a> {
    /// Raw JVM signature of the monitor object's class (printed as is).
    pub class_sig: &'a str,
    pub owner_serial: u32,
    pub entry_count: i32,
    pub waiting_to_enter: Vec<u32>,
    pub waiting_to_be_notified: Vec<u32>,
}

/// MONITOR DUMP (text only).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MonitorDump<'a> {
    pub threads: Vec<MonitorThread>,
    pub monitors: Vec<MonitorInfo<'a>>,
}

/// One (trace, monitor class) contention entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MonitorTimeRow<'a> {
    pub trace_serial: u32,
    /// JVM signature of the monitor class (rendered on output).
    pub class_sig: &'a str,
    /// Number of contended entries (not reset between dumps).
    pub count: u32,
    /// Contention time since the last reset, in ns: shares and order come
    /// from it, so entries of less than a millisecond still count (the
    /// report shows shares only; rounded to ms, many short waits summed to
    /// 99.85 % of the total).
    pub time_ns: u64,
}

/// MONITOR TIME (text only). Rows in any order (see
/// [`crate::format::select_monitor_time`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MonitorTimeReport<'a> {
    pub cutoff: f64,
    /// Sum of `time_ns` over all entries, in ns (shown in ms).
    pub total_ns: u64,
    pub rows: Vec<MonitorTimeRow<'a>>,
}

/// `WAIT:` line (text only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MonitorWait<'a> {
    /// Raw JVM signature of the object's class.
    pub class_sig: &'a str,
    /// 0 = forever.
    pub timeout_ms: i64,
    pub thread_serial: u32,
}

/// `WAITED:` line (text only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MonitorWaited<'a> {
    /// Raw JVM signature of the object's class.
    pub class_sig: &'a str,
    pub time_waited_ms: i64,
    pub thread_serial: u32,
}

// ---------------------------------------------------------------- heap dump

pub use crate::vocab::BasicType;

pub use crate::vocab::Value;

/// A field name with its value (statics, instance values).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NamedValue<'a> {
    pub name: &'a str,
    pub value: Value,
}

/// An instance field declaration of a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldDecl<'a> {
    pub name: &'a str,
    pub ty: BasicType,
}

/// An object-typed constant-pool entry of a class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConstantPoolEntry {
    pub index: u16,
    pub obj_id: u64,
}

/// A GC root. The caller emits, in order: the pseudo root
/// `ThreadObject { obj_id: 0, thread_serial: 200000, trace_serial: <system> }`,
/// then the VM's roots, each thread root as `ThreadObject` followed by
/// `ThreadBlock`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root<'a> {
    Unknown {
        obj_id: u64,
    },
    /// `global_ref_id` is the per-dump counter (1, 2, ...); the trace is the
    /// object's allocation trace (text only).
    JniGlobal {
        obj_id: u64,
        global_ref_id: u64,
        trace_serial: u32,
    },
    JniLocal {
        obj_id: u64,
        thread_serial: u32,
        frame_depth: i32,
    },
    /// Stack local; depth 0 = top frame.
    JavaFrame {
        obj_id: u64,
        thread_serial: u32,
        frame_depth: i32,
    },
    /// Defined by the format, not produced by the original agent.
    NativeStack {
        obj_id: u64,
        thread_serial: u32,
    },
    /// System class; `class_sig` is only used by the text format.
    StickyClass {
        obj_id: u64,
        class_sig: &'a str,
    },
    ThreadBlock {
        obj_id: u64,
        thread_serial: u32,
    },
    MonitorUsed {
        obj_id: u64,
    },
    ThreadObject {
        obj_id: u64,
        thread_serial: u32,
        trace_serial: u32,
    },
}

/// CLASS DUMP / `CLS`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassDump<'a> {
    pub class_id: u64,
    /// JVM signature (text `name=`).
    pub class_sig: &'a str,
    /// Trace of the class load.
    pub trace_serial: u32,
    pub super_id: u64,
    pub loader_id: u64,
    pub signers_id: u64,
    pub protection_domain_id: u64,
    /// Byte count of this class's INSTANCE DUMP values (own and inherited
    /// non-static fields; 4 or 8 per reference); 0 for array classes.
    pub instance_size: u32,
    /// Object-typed constant-pool entries **in the order the VM reported
    /// them**; both formats write them in reverse, like the original.
    pub constant_pool: &'a [ConstantPoolEntry],
    /// Statics declared by this class, in declaration order.
    pub statics: &'a [NamedValue<'a>],
    /// Instance fields declared by this class (supers excluded).
    pub instance_fields: &'a [FieldDecl<'a>],
}

/// Field values of an instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InstanceValues<'a> {
    /// One slice per class: the object's own class first, then its
    /// superclass, ... up to `java.lang.Object`; declaration order inside a
    /// class. Binary writes them in that order; text lists the non-null
    /// references superclass side first.
    Fields(&'a [&'a [NamedValue<'a>]]),
    /// Pre-encoded binary value bytes (big-endian, references at the
    /// stream's ID size), plus the text format's field lines: the non-null
    /// reference fields in text order (superclass side first).
    Encoded {
        bytes: &'a [u8],
        ref_fields: &'a [(&'a str, u64)],
    },
}

/// INSTANCE DUMP / `OBJ`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InstanceDump<'a> {
    pub obj_id: u64,
    /// Object size in bytes (text `sz=`).
    pub size: u32,
    pub trace_serial: u32,
    pub class_id: u64,
    /// JVM signature of the class (text `class=`).
    pub class_sig: &'a str,
    pub values: InstanceValues<'a>,
}

/// OBJECT ARRAY DUMP / `ARR` of objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjArrayDump<'a> {
    pub obj_id: u64,
    /// Object size in bytes (text `sz=`).
    pub size: u32,
    pub trace_serial: u32,
    /// Object ID of the array class itself.
    pub array_class_id: u64,
    /// JVM signature of the array class (`[Ljava/lang/String;`).
    pub array_class_sig: &'a str,
    /// All elements (0 = null). Trailing nulls are dropped on output, like
    /// the original (see `BinaryOptions::object_array_full_length`).
    pub elements: &'a [u64],
}

/// Primitive array contents.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PrimElements<'a> {
    /// Contents not collected (`primarrays=n`): no elements written, text
    /// `sz=` shows the object size.
    Omitted(BasicType),
    /// Only the number of elements, not their values: for text output,
    /// which prints the count and never the values (the agent's text
    /// dumps of the VM's dump skip reading them). Binary output has no
    /// values to write and writes none, as for `Omitted`.
    Counted(BasicType, usize),
    /// JNI `jboolean` values, written as bytes.
    Boolean(&'a [u8]),
    Char(&'a [u16]),
    Float(&'a [f32]),
    Double(&'a [f64]),
    Byte(&'a [i8]),
    Short(&'a [i16]),
    Int(&'a [i32]),
    Long(&'a [i64]),
    /// Already big-endian element bytes of the given type (length must be
    /// a multiple of the element size).
    BigEndian(BasicType, &'a [u8]),
    /// Element bytes of the given type in the machine's byte order (as
    /// the VM hands them out); serializers swap while writing.
    NativeEndian(BasicType, &'a [u8]),
}

impl PrimElements<'_> {
    pub fn elem_type(&self) -> BasicType {
        match self {
            PrimElements::Omitted(t)
            | PrimElements::Counted(t, _)
            | PrimElements::BigEndian(t, _)
            | PrimElements::NativeEndian(t, _) => *t,
            PrimElements::Boolean(_) => BasicType::Boolean,
            PrimElements::Char(_) => BasicType::Char,
            PrimElements::Float(_) => BasicType::Float,
            PrimElements::Double(_) => BasicType::Double,
            PrimElements::Byte(_) => BasicType::Byte,
            PrimElements::Short(_) => BasicType::Short,
            PrimElements::Int(_) => BasicType::Int,
            PrimElements::Long(_) => BasicType::Long,
        }
    }

    /// Number of elements written (0 when omitted).
    pub fn len(&self) -> usize {
        match self {
            PrimElements::Omitted(_) => 0,
            PrimElements::Counted(_, n) => *n,
            PrimElements::Boolean(v) => v.len(),
            PrimElements::Char(v) => v.len(),
            PrimElements::Float(v) => v.len(),
            PrimElements::Double(v) => v.len(),
            PrimElements::Byte(v) => v.len(),
            PrimElements::Short(v) => v.len(),
            PrimElements::Int(v) => v.len(),
            PrimElements::Long(v) => v.len(),
            PrimElements::BigEndian(t, b) | PrimElements::NativeEndian(t, b) => {
                b.len() / (t.size(4) as usize).max(1)
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_omitted(&self) -> bool {
        matches!(self, PrimElements::Omitted(_))
    }
}

/// PRIMITIVE ARRAY DUMP / `ARR` of primitives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrimArrayDump<'a> {
    pub obj_id: u64,
    /// Object size in bytes (text `sz=` only when elements are omitted).
    pub size: u32,
    pub trace_serial: u32,
    pub elements: PrimElements<'a>,
}
