//! The little the signal handler reads of HotSpot's own data, found
//! through the table HotSpot exports for its Serviceability Agent
//! (`gHotSpotVMStructs`: for each field a type name, a field name, and
//! the field's offset, or a static field's address) rather than through
//! offsets written here: the bounds of the code cache, a thread's stack
//! bounds, and the last Java frame a thread in the VM recorded (its frame
//! anchor). See docs/cpu-samples.md, "Failed walks are recovered".
//!
//! [`load`] runs once on a normal thread; what it finds is kept in
//! atomics. A field it does not find leaves the recovery that needs it
//! off. The handler-side functions only load atomics and read memory
//! that HotSpot keeps for as long as the thread runs.

use super::super::sys::JNIEnv;
use super::context::Regs;
use std::ffi::CStr;
use std::os::raw::{c_char, c_void};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

const UNKNOWN: usize = usize::MAX;

/// Addresses of the static fields `CodeCache::_low_bound` and
/// `_high_bound` (they hold the bounds of the reserved code cache).
static CODE_LOW: AtomicUsize = AtomicUsize::new(UNKNOWN);
static CODE_HIGH: AtomicUsize = AtomicUsize::new(UNKNOWN);
/// Offsets in `JavaThread` of its frame anchor's last Java stack pointer
/// and program counter, and of the thread's stack base and size.
static ANCHOR_SP: AtomicUsize = AtomicUsize::new(UNKNOWN);
static ANCHOR_PC: AtomicUsize = AtomicUsize::new(UNKNOWN);
static ANCHOR_FP: AtomicUsize = AtomicUsize::new(UNKNOWN);
/// Offset in `JavaThread` of its state (an `int`), and the state's value
/// while the thread runs VM code (`_thread_in_vm`).
static STATE: AtomicUsize = AtomicUsize::new(UNKNOWN);
static IN_VM: AtomicUsize = AtomicUsize::new(UNKNOWN);
static STACK_BASE: AtomicUsize = AtomicUsize::new(UNKNOWN);
static STACK_SIZE: AtomicUsize = AtomicUsize::new(UNKNOWN);
/// Where a thread's `JNIEnv` lies in its `JavaThread` (the environment is
/// a field of the thread): `env - thread`, 0 until [`calibrate`].
static ENV_OFFSET: AtomicIsize = AtomicIsize::new(0);

/// Largest offset believed: HotSpot's thread object is a few KiB.
const MAX_OFFSET: usize = 1 << 16;

/// One entry of the table, as read.
struct Entry<'a> {
    type_name: &'a [u8],
    field_name: &'a [u8],
    is_static: bool,
    offset: u64,
    address: usize,
}

/// Read HotSpot's field table and keep what the handler needs. `symbol`
/// finds an exported data symbol of the JVM library. Returns what was not
/// found (empty: all of it).
pub fn load(symbol: impl Fn(&CStr) -> *mut c_void) -> Vec<&'static str> {
    let mut missing = Vec::new();
    let value = |name: &CStr| -> Option<usize> {
        let p = symbol(name) as *const u64;
        // SAFETY: the exported `gHotSpotVMStructEntry*` symbols are
        // `uint64_t` variables of the JVM library (vmStructs.cpp),
        // initialised statically.
        (!p.is_null()).then(|| unsafe { *p } as usize)
    };
    let table = symbol(c"gHotSpotVMStructs") as *const *const u8;
    let layout = (
        value(c"gHotSpotVMStructEntryArrayStride"),
        value(c"gHotSpotVMStructEntryTypeNameOffset"),
        value(c"gHotSpotVMStructEntryFieldNameOffset"),
        value(c"gHotSpotVMStructEntryIsStaticOffset"),
        value(c"gHotSpotVMStructEntryOffsetOffset"),
        value(c"gHotSpotVMStructEntryAddressOffset"),
    );
    let (Some(stride), Some(tn), Some(fname), Some(st), Some(off), Some(addr)) = layout else {
        missing.push("the JVM exports no field table (gHotSpotVMStructs)");
        return missing;
    };
    if table.is_null() || stride == 0 {
        missing.push("the JVM exports no field table (gHotSpotVMStructs)");
        return missing;
    }
    // SAFETY: `gHotSpotVMStructs` is a pointer variable holding the
    // address of the table, an array of entries `stride` bytes apart
    // ending with an entry whose type name is null.
    let base = unsafe { *table };
    if base.is_null() {
        missing.push("the JVM's field table is empty");
        return missing;
    }
    let mut anchor = None;
    let mut anchor_sp = None;
    let mut anchor_pc = None;
    let mut anchor_fp = None;
    let mut state = None;
    let mut stack_base = None;
    let mut stack_size = None;
    // A bound on the walk in case the table were not terminated (HotSpot
    // has about 2000 entries).
    for i in 0..100_000usize {
        // SAFETY: within the table (see above); each field is read at the
        // offset the JVM publishes for it, with the type it declares
        // (const char*, int32_t, uint64_t, void*).
        let e = unsafe {
            let e = base.add(i * stride);
            let type_name = *(e.add(tn) as *const *const c_char);
            if type_name.is_null() {
                break;
            }
            let field_name = *(e.add(fname) as *const *const c_char);
            if field_name.is_null() {
                continue;
            }
            Entry {
                type_name: CStr::from_ptr(type_name).to_bytes(),
                field_name: CStr::from_ptr(field_name).to_bytes(),
                is_static: *(e.add(st) as *const i32) != 0,
                offset: *(e.add(off) as *const u64),
                address: *(e.add(addr) as *const usize),
            }
        };
        let small = (e.offset as usize) < MAX_OFFSET;
        match (e.type_name, e.field_name, e.is_static) {
            (b"CodeCache", b"_low_bound", true) if e.address != 0 => {
                CODE_LOW.store(e.address, Ordering::Relaxed)
            }
            (b"CodeCache", b"_high_bound", true) if e.address != 0 => {
                CODE_HIGH.store(e.address, Ordering::Relaxed)
            }
            (b"JavaThread", b"_anchor", false) if small => anchor = Some(e.offset as usize),
            (b"JavaFrameAnchor", b"_last_Java_sp", false) if small => {
                anchor_sp = Some(e.offset as usize)
            }
            (b"JavaFrameAnchor", b"_last_Java_pc", false) if small => {
                anchor_pc = Some(e.offset as usize)
            }
            (b"JavaFrameAnchor", b"_last_Java_fp", false) if small => {
                anchor_fp = Some(e.offset as usize)
            }
            (b"JavaThread", b"_thread_state", false) if small => state = Some(e.offset as usize),
            (b"JavaThread" | b"Thread", b"_stack_base", false) if small => {
                stack_base = Some(e.offset as usize)
            }
            (b"JavaThread" | b"Thread", b"_stack_size", false) if small => {
                stack_size = Some(e.offset as usize)
            }
            _ => {}
        }
    }
    if CODE_LOW.load(Ordering::Relaxed) == UNKNOWN || CODE_HIGH.load(Ordering::Relaxed) == UNKNOWN {
        missing.push("CodeCache bounds");
    }
    match (anchor, anchor_sp, anchor_pc, anchor_fp) {
        (Some(a), Some(sp), Some(pc), Some(fp)) => {
            ANCHOR_SP.store(a + sp, Ordering::Relaxed);
            ANCHOR_PC.store(a + pc, Ordering::Relaxed);
            ANCHOR_FP.store(a + fp, Ordering::Relaxed);
        }
        _ => missing.push("JavaThread frame anchor"),
    }
    match (state, int_constant(&symbol, c"_thread_in_vm")) {
        (Some(off), Some(v)) if v >= 0 => {
            STATE.store(off, Ordering::Relaxed);
            IN_VM.store(v as usize, Ordering::Relaxed);
        }
        _ => missing.push("JavaThread state"),
    }
    match (stack_base, stack_size) {
        (Some(b), Some(s)) => {
            STACK_BASE.store(b, Ordering::Relaxed);
            STACK_SIZE.store(s, Ordering::Relaxed);
        }
        _ => missing.push("JavaThread stack bounds"),
    }
    missing
}

/// The value of one of the integer constants HotSpot exports beside its
/// field table (`gHotSpotVMIntConstants`: name and `int32_t` value).
fn int_constant(symbol: &impl Fn(&CStr) -> *mut c_void, name: &CStr) -> Option<i32> {
    let value = |n: &CStr| -> Option<usize> {
        let p = symbol(n) as *const u64;
        // SAFETY: as for the field table's layout symbols in `load`.
        (!p.is_null()).then(|| unsafe { *p } as usize)
    };
    let stride = value(c"gHotSpotVMIntConstantEntryArrayStride")?;
    let name_off = value(c"gHotSpotVMIntConstantEntryNameOffset")?;
    let value_off = value(c"gHotSpotVMIntConstantEntryValueOffset")?;
    let table = symbol(c"gHotSpotVMIntConstants") as *const *const u8;
    if table.is_null() || stride == 0 {
        return None;
    }
    // SAFETY: a pointer variable holding the table's address; the table
    // is an array of entries `stride` bytes apart ending with a null name.
    let base = unsafe { *table };
    if base.is_null() {
        return None;
    }
    for i in 0..100_000usize {
        // SAFETY: within the table; the name is a `const char*` and the
        // value an `int32_t` at the published offsets.
        unsafe {
            let e = base.add(i * stride);
            let n = *(e.add(name_off) as *const *const c_char);
            if n.is_null() {
                return None;
            }
            if CStr::from_ptr(n) == name {
                return Some(*(e.add(value_off) as *const i32));
            }
        }
    }
    None
}

/// Learn where a thread's JNI environment lies in HotSpot's thread object,
/// from one thread's environment and the address of its thread object
/// (`java.lang.Thread.eetop`). False if the two do not fit together.
pub fn calibrate(env: *mut JNIEnv, thread: u64) -> bool {
    let off = (env as isize).wrapping_sub(thread as isize);
    if thread == 0 || off <= 0 || off as usize >= MAX_OFFSET || off % 8 != 0 {
        return false;
    }
    ENV_OFFSET.store(off, Ordering::Relaxed);
    true
}

/// Is `pc` inside the code cache (compiled code, stubs, the interpreter)?
/// Async-signal-safe.
pub fn in_code_cache(pc: usize) -> bool {
    let (lo, hi) = (
        CODE_LOW.load(Ordering::Relaxed),
        CODE_HIGH.load(Ordering::Relaxed),
    );
    if lo == UNKNOWN || hi == UNKNOWN {
        return false;
    }
    // SAFETY: the addresses of two static variables of the JVM library
    // (found in its own table), readable as long as the library is loaded.
    let (lo, hi) = unsafe { (*(lo as *const usize), *(hi as *const usize)) };
    lo != 0 && lo <= pc && pc < hi
}

/// HotSpot's thread object of the thread whose JNI environment is `env`.
#[derive(Clone, Copy, Debug)]
pub struct Thread(usize);

impl Thread {
    /// The calling thread's, given its own environment. Async-signal-safe.
    pub fn of(env: *mut JNIEnv) -> Option<Thread> {
        let off = ENV_OFFSET.load(Ordering::Relaxed);
        if env.is_null() || off == 0 {
            return None;
        }
        Some(Thread((env as usize).wrapping_sub(off as usize)))
    }

    fn field(self, offset: &AtomicUsize) -> Option<usize> {
        let off = offset.load(Ordering::Relaxed);
        if off == UNKNOWN {
            return None;
        }
        // SAFETY: `self` is the calling thread's own HotSpot thread object
        // (its JNI environment minus the calibrated offset), alive while
        // the thread runs; `off` is a pointer-sized field's offset from the
        // JVM's own table.
        Some(unsafe { std::ptr::read_volatile((self.0 + off) as *const usize) })
    }

    /// Is `[addr, addr + len)` inside this thread's stack?
    pub fn stack_contains(self, addr: usize, len: usize) -> bool {
        let (Some(base), Some(size)) = (self.field(&STACK_BASE), self.field(&STACK_SIZE)) else {
            return false;
        };
        let low = base.saturating_sub(size);
        addr >= low && addr.checked_add(len).is_some_and(|end| end <= base)
    }

    /// The last Java frame's stack pointer the thread recorded when it
    /// left Java code (0: none recorded).
    pub fn anchor_sp(self) -> Option<usize> {
        self.field(&ANCHOR_SP)
    }

    /// Is the thread running VM code (state `_thread_in_vm`)? Then no
    /// other thread walks its stack or reads its frame anchor: the VM
    /// waits for such a thread to leave the state before it walks it
    /// (safepoints, handshakes).
    pub fn in_vm(self) -> bool {
        let (off, in_vm) = (STATE.load(Ordering::Relaxed), IN_VM.load(Ordering::Relaxed));
        if off == UNKNOWN || in_vm == UNKNOWN {
            return false;
        }
        // SAFETY: as in `field`; the state is an `int`.
        let state = unsafe { std::ptr::read_volatile((self.0 + off) as *const i32) };
        state >= 0 && state as usize == in_vm
    }

    /// The last Java frame the thread recorded.
    pub fn anchor(self) -> Option<Regs> {
        Some(Regs {
            sp: self.field(&ANCHOR_SP)?,
            pc: self.field(&ANCHOR_PC)?,
            fp: self.field(&ANCHOR_FP)?,
        })
    }

    /// Record `a` as the last Java frame, as HotSpot records one: the
    /// stack pointer cleared first and set last, so that a non-zero stack
    /// pointer always goes with the frame's other fields. Only for a
    /// thread [`in_vm`](Self::in_vm), from its own signal handler, which
    /// puts the recorded frame back before it returns (see
    /// `recover::walk`).
    pub fn set_anchor(self, a: Regs) {
        let offs = (
            ANCHOR_SP.load(Ordering::Relaxed),
            ANCHOR_PC.load(Ordering::Relaxed),
            ANCHOR_FP.load(Ordering::Relaxed),
        );
        if offs.0 == UNKNOWN || offs.1 == UNKNOWN || offs.2 == UNKNOWN {
            return;
        }
        let at = |off: usize| (self.0 + off) as *mut usize;
        // SAFETY: pointer-sized fields of the calling thread's own thread
        // object (see `field`); no other thread reads them while the
        // thread is in the VM (caller's contract), and the thread itself is
        // stopped in this handler.
        unsafe {
            std::ptr::write_volatile(at(offs.0), 0);
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
            std::ptr::write_volatile(at(offs.2), a.fp);
            std::ptr::write_volatile(at(offs.1), a.pc);
            std::sync::atomic::compiler_fence(Ordering::SeqCst);
            std::ptr::write_volatile(at(offs.0), a.sp);
        }
    }

    /// Make the recorded last Java frame walkable, as HotSpot does itself
    /// before it walks such a stack: when the thread recorded the frame's
    /// stack pointer but not its program counter (HotSpot's interpreter
    /// and stubs record it lazily), the program counter is the return
    /// address the call into the VM left below that stack pointer. True
    /// if the anchor now has both. Async-signal-safe; only for a thread
    /// [`in_vm`](Self::in_vm), from its own signal handler.
    pub fn complete_anchor(self) -> bool {
        let pc_off = ANCHOR_PC.load(Ordering::Relaxed);
        let Some(sp) = self.anchor_sp() else {
            return false;
        };
        if sp == 0 || pc_off == UNKNOWN || sp % 8 != 0 || !self.stack_contains(sp - 8, 8) {
            return false;
        }
        let slot = (self.0 + pc_off) as *mut usize;
        // SAFETY: a pointer-sized field of the calling thread's own thread
        // object (see `field`). The thread is interrupted by this handler,
        // so nothing else of its own runs; other threads do not write the
        // anchor of a thread that is running. HotSpot sets the stack
        // pointer last and clears it first, so a non-zero one means the
        // anchor's other fields belong to it; `sp - 8` is inside the
        // thread's stack (checked).
        unsafe {
            if std::ptr::read_volatile(slot) != 0 {
                return true;
            }
            let ret = std::ptr::read_volatile((sp - 8) as *const usize);
            if !in_code_cache(ret) {
                return false;
            }
            std::ptr::write_volatile(slot, ret);
        }
        true
    }
}
