//! CPU-time timers per Java thread and the asynchronous stack sampler
//! (docs/cpu-samples.md).
//!
//! Every registered thread gets a POSIX timer on its own CPU clock
//! (`timer_create` on the thread's CPU clock id, `SIGEV_THREAD_ID`): it
//! expires only after the thread has *used* a period of CPU time, and its
//! signal (SIGPROF) is delivered to that thread, interrupting it where it
//! runs. Threads that block, park, wait or sleep use no CPU and get no
//! signal: nothing is done per tick for idle threads.
//!
//! The handler ([`handler`]) advances the thread's CPU clock (cpu=times
//! reads it), and when a stack is owed, takes one: with HotSpot's
//! `AsyncGetCallTrace` (async mode: the stack where the thread runs, not at
//! a safepoint) or none (safepoint mode: the sampler thread fetches the
//! stacks of the threads that had ticks). It writes into a preallocated
//! lock-free [`ring::Ring`]; frames are turned into traces later, on a
//! normal thread ([`drain`]). The handler allocates nothing, takes no lock,
//! cannot panic, and keeps `errno`.
//!
//! Everything here is process-wide (one signal, one handler): [`install`]
//! once, then [`register_current`] on each thread to be timed.

pub mod code_map;
mod context;
mod hotspot;
mod recover;
pub mod ring;
pub mod slots;
pub mod sys;

use super::refs::{Frame, Jni, MethodId};
pub use recover::How;
use ring::{Header, Ring, NO_STACK};
use std::cell::Cell;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use std::sync::Mutex;
use sys::{AsgctFn, AsgctTrace, TimerSigInfo};

/// What the handler does when a stack is owed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackMode {
    /// AsyncGetCallTrace in the handler.
    Async,
    /// Only note the tick; the sampler thread takes the stack.
    Ticks,
    /// No stacks at all (only CPU clocks, for cpu=times).
    None,
}

/// Fixed at [`install`].
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// CPU time between two expirations of a thread's timer.
    pub period_ns: u64,
    /// CPU time between two stacks of a thread.
    pub stack_interval_ns: u64,
    pub mode: StackMode,
    /// Frames kept per sample.
    pub max_frames: usize,
    /// Ring slots.
    pub ring_slots: usize,
}

const NOT_INSTALLED: u8 = 0;
const INSTALLED: u8 = 1;

static STATE: AtomicU8 = AtomicU8::new(NOT_INSTALLED);
static PERIOD_NS: AtomicU64 = AtomicU64::new(0);
static STACK_INTERVAL_NS: AtomicU64 = AtomicU64::new(0);
static MODE: AtomicU8 = AtomicU8::new(2);
/// Timers armed (some profile uses the clocks or stacks).
static RUNNING: AtomicBool = AtomicBool::new(false);
/// Stacks taken now (cpu=samples running and not paused).
static STACKS_ON: AtomicBool = AtomicBool::new(false);
/// Frames asked of AsyncGetCallTrace (at most the ring's).
static DEPTH: AtomicU32 = AtomicU32::new(0);
static AGCT: AtomicUsize = AtomicUsize::new(0);
static RING: AtomicPtr<Ring> = AtomicPtr::new(std::ptr::null_mut());
/// Serialises install, start/stop and the consumers of the ring.
static CONTROL: Mutex<Control> = Mutex::new(Control { users: 0 });

struct Control {
    /// Profiles that asked for the timers to run.
    users: u32,
}

/// Counters kept by the handler (plain atomics).
static DROPPED: AtomicU64 = AtomicU64::new(0);
static STALE: AtomicU64 = AtomicU64::new(0);
static FOREIGN: AtomicU64 = AtomicU64::new(0);
static SIGNALS: AtomicU64 = AtomicU64::new(0);

fn mode_code(m: StackMode) -> u8 {
    match m {
        StackMode::Async => 0,
        StackMode::Ticks => 1,
        StackMode::None => 2,
    }
}

/// HotSpot's AsyncGetCallTrace, if this JVM exports it. Looked up in the
/// global symbol scope, then in the library that holds the JNI functions
/// (libjvm), in case it was loaded with local symbols.
pub fn find_async_get_call_trace(jni: Jni<'_>) -> Option<AsgctFn> {
    let p = jvm_symbol(jni, c"AsyncGetCallTrace");
    if p.is_null() {
        return None;
    }
    // SAFETY: HotSpot exports AsyncGetCallTrace with exactly this C
    // signature (forte.cpp, `extern "C" JNIEXPORT void AsyncGetCallTrace(
    // ASGCT_CallTrace*, jint, void*)`).
    Some(unsafe { std::mem::transmute::<*mut c_void, AsgctFn>(p) })
}

/// A symbol the JVM exports: in the global scope, or in the library that
/// holds the JNI functions (libjvm), in case it was loaded with local
/// symbols. Null if neither has it.
fn jvm_symbol(jni: Jni<'_>, name: &std::ffi::CStr) -> *mut c_void {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if p.is_null() {
        symbol_in_jvm_library(jni, name)
    } else {
        p
    }
}

fn symbol_in_jvm_library(jni: Jni<'_>, name: &std::ffi::CStr) -> *mut c_void {
    let env = jni.raw();
    // SAFETY: env is this thread's live JNIEnv; its function table lives
    // inside the JVM library. dladdr only reads the loader's tables.
    unsafe {
        let Some(f) = (**env).GetVersion else {
            return std::ptr::null_mut();
        };
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(f as *const c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return std::ptr::null_mut();
        }
        // RTLD_NOLOAD: only a handle to the library already loaded.
        let h = libc::dlopen(info.dli_fname, libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if h.is_null() {
            return std::ptr::null_mut();
        }
        let p = libc::dlsym(h, name.as_ptr());
        // The JVM keeps the library loaded: dropping our reference leaves
        // the symbol valid.
        libc::dlclose(h);
        p
    }
}

/// Learn what the stack walk's recovery reads of HotSpot's own data (its
/// field table, and where a thread's JNI environment lies in HotSpot's
/// thread object, from the calling thread's environment and `thread`, the
/// address of its thread object). Returns what could not be found (the
/// recoveries that need it stay off). Once per process is enough; later
/// calls change nothing.
pub fn prepare_walk(jni: Jni<'_>, thread: Option<u64>) -> Vec<&'static str> {
    static MISSING: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    let mut missing = MISSING
        .get_or_init(|| hotspot::load(|name| jvm_symbol(jni, name)))
        .clone();
    if !thread.is_some_and(|t| hotspot::calibrate(jni.raw(), t)) {
        missing.push("the JNI environment's place in HotSpot's thread");
    }
    missing
}

/// Install the signal handler and allocate the ring, once per process.
/// A later call (a new session after an attach, with its own options)
/// takes its configuration while no profile runs the timers (otherwise
/// the running one's stays); the ring is replaced by a larger one if the
/// new depth needs it (the old one is left allocated: a signal handler
/// may still be writing into it). `agct` is needed for
/// [`StackMode::Async`].
pub fn install(cfg: Config, agct: Option<AsgctFn>) -> Result<(), String> {
    let c = CONTROL
        .lock()
        .map_err(|_| "sampler control poisoned".to_string())?;
    if cfg.mode == StackMode::Async && agct.is_none() {
        return Err("AsyncGetCallTrace is not available".into());
    }
    if STATE.load(Ordering::Acquire) != NOT_INSTALLED {
        if c.users == 0 {
            reconfigure(cfg, agct);
        }
        return Ok(());
    }
    // Refuse to take a signal somebody else handles (another profiler):
    // both would be wrong.
    // SAFETY: all-zero is a valid sigaction; sigaction only writes `old`.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    if unsafe { libc::sigaction(slots::SIGNAL, std::ptr::null(), &mut old) } != 0 {
        return Err(format!("sigaction: {}", std::io::Error::last_os_error()));
    }
    if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
        return Err("SIGPROF already has a handler (another profiler?)".into());
    }
    let ring = Box::new(Ring::new(cfg.ring_slots, cfg.max_frames));
    DEPTH.store(ring.frames_per_slot() as u32, Ordering::Relaxed);
    RING.store(Box::into_raw(ring), Ordering::Release);
    PERIOD_NS.store(cfg.period_ns.max(1), Ordering::Relaxed);
    STACK_INTERVAL_NS.store(cfg.stack_interval_ns.max(1), Ordering::Relaxed);
    MODE.store(mode_code(cfg.mode), Ordering::Relaxed);
    if let Some(f) = agct {
        AGCT.store(f as usize, Ordering::Release);
    }
    // SAFETY: all-zero is a valid sigaction; we set a handler with the
    // SA_SIGINFO signature, restart interrupted system calls, and keep the
    // signal blocked while its handler runs (the default without
    // SA_NODEFER).
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize;
    act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: act.sa_mask is a valid sigset to clear.
    unsafe { libc::sigemptyset(&mut act.sa_mask) };
    // SAFETY: act is fully initialised; the handler is async-signal-safe.
    if unsafe { libc::sigaction(slots::SIGNAL, &act, std::ptr::null_mut()) } != 0 {
        return Err(format!("sigaction: {}", std::io::Error::last_os_error()));
    }
    STATE.store(INSTALLED, Ordering::Release);
    Ok(())
}

/// A new configuration for an installed sampler whose timers are idle
/// (the caller holds CONTROL with no users).
fn reconfigure(cfg: Config, agct: Option<AsgctFn>) {
    // SAFETY: the ring was leaked at install and is never freed.
    let have = unsafe { RING.load(Ordering::Acquire).as_ref() }.map_or(0, Ring::frames_per_slot);
    if have < cfg.max_frames {
        // Grown at least twofold, so a series of sessions with growing
        // depths leaves few rings behind.
        let frames = cfg.max_frames.max(have.saturating_mul(2));
        let ring = Box::new(Ring::new(cfg.ring_slots, frames));
        RING.store(Box::into_raw(ring), Ordering::Release);
    }
    // SAFETY: as above (the ring just stored, or the old one).
    if let Some(ring) = unsafe { RING.load(Ordering::Acquire).as_ref() } {
        DEPTH.store(
            ring.frames_per_slot().min(cfg.max_frames.max(1)) as u32,
            Ordering::Relaxed,
        );
    }
    PERIOD_NS.store(cfg.period_ns.max(1), Ordering::Relaxed);
    STACK_INTERVAL_NS.store(cfg.stack_interval_ns.max(1), Ordering::Relaxed);
    MODE.store(mode_code(cfg.mode), Ordering::Relaxed);
    if let Some(f) = agct {
        AGCT.store(f as usize, Ordering::Release);
    }
}

pub fn is_installed() -> bool {
    STATE.load(Ordering::Acquire) == INSTALLED
}

thread_local! {
    /// This thread's slot (normal code only; the handler finds the slot
    /// through the signal's value).
    static MY_SLOT: Cell<Option<u32>> = const { Cell::new(None) };
}

/// A registered thread's slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotId(u32);

/// Give the calling thread a CPU-time timer (armed if the timers run).
/// Idempotent; `serial` is the thread's serial in the agent's tables,
/// `stacks` whether its stacks may be sampled (a later registration may
/// allow them, never forbid them again).
pub fn register_current(jni: Jni<'_>, serial: u32, stacks: bool) -> Result<SlotId, String> {
    if !is_installed() {
        return Err("the CPU timers are not installed".into());
    }
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    if let Some(i) = MY_SLOT.try_with(|c| c.get()).ok().flatten() {
        if let Some(s) = slots::get(i).filter(|s| s.is_live() && s.tid() == tid) {
            if serial != 0 {
                s.serial.store(serial, Ordering::Relaxed);
            }
            if stacks {
                s.allow_stacks();
            }
            return Ok(SlotId(i));
        }
    }
    let i = slots::take(tid, serial, jni.raw(), stacks)?;
    let _ = MY_SLOT.try_with(|c| c.set(Some(i)));
    arm_if_running(i)?;
    Ok(SlotId(i))
}

/// Give another thread of this process, Linux thread id `tid`, a CPU-time
/// timer (armed if the timers run): a thread that was running before the
/// agent attached and never passes through it again. Idempotent by thread
/// id, also against the thread's own [`register_current`]. Its JNI
/// environment is not known here; the handler asks the VM for it on the
/// thread itself at its first sample (see [`walk`]).
pub fn register_thread(tid: i32, serial: u32, stacks: bool) -> Result<SlotId, String> {
    if !is_installed() {
        return Err("the CPU timers are not installed".into());
    }
    let i = slots::take(tid, serial, std::ptr::null_mut(), stacks)?;
    arm_if_running(i)?;
    Ok(SlotId(i))
}

fn arm_if_running(i: u32) -> Result<(), String> {
    if RUNNING.load(Ordering::Acquire) {
        if let Some(s) = slots::get(i) {
            slots::set_period(s, PERIOD_NS.load(Ordering::Relaxed))?;
        }
    }
    Ok(())
}

/// Give back the timer of thread `tid` (a thread registered with
/// [`register_thread`] that turned out to have ended already).
pub fn unregister_thread(tid: i32) {
    slots::give_back_tid(tid);
}

/// The calling thread's slot, if it registered.
pub fn current() -> Option<SlotId> {
    MY_SLOT.try_with(|c| c.get()).ok().flatten().map(SlotId)
}

/// The calling thread ends: delete its timer, give its slot back (found
/// by its thread id: it may have been registered by another thread).
pub fn unregister_current() {
    let _ = MY_SLOT.try_with(|c| c.take());
    // SAFETY: gettid has no preconditions.
    slots::give_back_tid(unsafe { libc::gettid() });
}

/// A slot's CPU clock in nanoseconds (it lives as long as the process; it
/// counts another thread's time once the slot is reused). cpu=times hands
/// its address to its Java code.
pub fn clock(id: SlotId) -> Option<&'static AtomicU64> {
    slots::get(id.0).map(|s| &s.clock_ns)
}

/// A slot's CPU clock now.
pub fn clock_ns(id: SlotId) -> u64 {
    slots::get(id.0).map_or(0, |s| s.clock_ns.load(Ordering::Relaxed))
}

/// Somebody else's SIGPROF handler replaced ours: the timers are off for
/// good.
static HANDLER_LOST: AtomicBool = AtomicBool::new(false);

/// Is our handler still SIGPROF's? The application (or another tool: JFR's
/// CPU-time sampler, a profiler loaded later) may install its own while
/// the agent runs; our timers' signals would then go to it. On the first
/// call that finds another handler, every timer is disarmed for good
/// (nobody gets our signals any more) and the message to report is
/// returned; later calls return None. A system call per check: callers
/// check on their periodic passes, not per sample.
pub fn check_handler() -> Option<String> {
    if !is_installed() || HANDLER_LOST.load(Ordering::Acquire) {
        return None;
    }
    // SAFETY: all-zero is a valid sigaction; sigaction only writes `now`.
    let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
    if unsafe { libc::sigaction(slots::SIGNAL, std::ptr::null(), &mut now) } != 0 {
        return None;
    }
    let ours = handler as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize;
    if now.sa_sigaction == ours {
        return None;
    }
    let Ok(_c) = CONTROL.lock() else { return None };
    if HANDLER_LOST.swap(true, Ordering::AcqRel) {
        return None;
    }
    RUNNING.store(false, Ordering::Release);
    STACKS_ON.store(false, Ordering::Release);
    slots::for_each(|_, s| {
        if s.is_live() {
            let _ = slots::set_period(s, 0);
        }
    });
    let whose = if now.sa_sigaction == libc::SIG_DFL {
        "reset to the default action"
    } else if now.sa_sigaction == libc::SIG_IGN {
        "set to be ignored"
    } else {
        "taken by another handler"
    };
    Some(format!(
        "SIGPROF handler replaced while profiling (signal {whose}, by the application or another tool): the CPU-time timers are stopped; cpu=samples takes no more samples and cpu=times charges no more CPU time"
    ))
}

/// A user (profile) needs the timers: arm them all on the first.
pub fn start() -> Result<(), String> {
    let mut c = CONTROL
        .lock()
        .map_err(|_| "sampler control poisoned".to_string())?;
    if !is_installed() {
        return Err("the CPU timers are not installed".into());
    }
    if HANDLER_LOST.load(Ordering::Acquire) {
        return Err("SIGPROF was taken by another handler".into());
    }
    c.users += 1;
    if c.users == 1 {
        RUNNING.store(true, Ordering::Release);
        let period = PERIOD_NS.load(Ordering::Relaxed);
        let mut err = None;
        slots::for_each(|_, s| {
            if s.is_live() {
                if let Err(e) = slots::set_period(s, period) {
                    err.get_or_insert(e);
                }
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
    }
    Ok(())
}

/// A user is done: disarm every timer after the last. The handler stays
/// installed (a signal already queued must find it).
pub fn stop() {
    let Ok(mut c) = CONTROL.lock() else { return };
    if c.users == 0 {
        return;
    }
    c.users -= 1;
    if c.users == 0 {
        RUNNING.store(false, Ordering::Release);
        STACKS_ON.store(false, Ordering::Release);
        slots::for_each(|_, s| {
            if s.is_live() {
                let _ = slots::set_period(s, 0);
            }
        });
    }
}

/// Take stacks (cpu=samples running) or not (paused, or cpu=times only).
pub fn set_stacks(on: bool) {
    STACKS_ON.store(on, Ordering::Release);
}

/// Stack samples for the threads whose serial `select` accepts: on or off
/// (threads registered without stacks stay without).
pub fn set_sampled(mut select: impl FnMut(u32) -> bool, on: bool) {
    slots::for_each(|_, s| {
        if s.is_live() && s.stacks_allowed() && select(s.serial.load(Ordering::Relaxed)) {
            s.sampled.store(on, Ordering::Relaxed);
        }
    });
}

/// How a sample came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A stack (`frames`, top first).
    Stack,
    /// A tick without a stack (safepoint mode).
    Tick,
    /// AsyncGetCallTrace failed with this code (`sys::code`), or returned
    /// no frame (0).
    Failed(i32),
}

/// One sample taken out of the ring.
pub struct Sample<'a> {
    pub serial: u32,
    /// CPU intervals it stands for.
    pub weight: u32,
    pub outcome: Outcome,
    /// How the stack was found.
    pub how: How,
    /// Top first; a frame whose method had no ID yet has a null method.
    pub frames: &'a [Frame],
}

/// Take every sample written so far. One caller at a time (the others
/// wait); samples written meanwhile stay for the next call. `proceed` is
/// asked once the caller's turn has come (a dump may have started while it
/// waited).
pub fn drain(proceed: impl FnOnce() -> bool, mut f: impl FnMut(&Sample<'_>)) -> usize {
    let Ok(_c) = CONTROL.lock() else { return 0 };
    if !proceed() {
        return 0;
    }
    let ring = RING.load(Ordering::Acquire);
    if ring.is_null() {
        return 0;
    }
    // SAFETY: the ring was leaked at install and is never freed.
    let ring: &Ring = unsafe { &*ring };
    let mut frames: Vec<Frame> = Vec::with_capacity(ring.frames_per_slot() + 1);
    ring.drain(|h, raw| {
        frames.clear();
        let how = How::from_raw(h.how);
        let code = h.code;
        let outcome = if code == NO_STACK {
            Outcome::Tick
        } else if code > 0 {
            if how == How::Caller {
                // The code interrupted was a method's without its frame
                // (prologue, epilogue): that method is the top frame.
                if let Some(m) = code_map::method_at(h.pc as usize) {
                    frames.push(Frame {
                        method: m,
                        location: 0,
                    });
                }
            }
            frames.extend(raw.iter().map(|r| Frame {
                method: MethodId::from_raw(r.method_id),
                // A native method's frame: location -1, as JVMTI gives it.
                location: if r.lineno < 0 {
                    -1
                } else {
                    i64::from(r.lineno)
                },
            }));
            Outcome::Stack
        } else {
            Outcome::Failed(code)
        };
        f(&Sample {
            serial: h.serial,
            weight: h.weight,
            outcome,
            how,
            frames: &frames,
        });
    })
}

/// Counters of the handler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandlerStats {
    /// Timer signals handled.
    pub signals: u64,
    /// Samples lost because the ring was full (in CPU intervals).
    pub dropped: u64,
    /// Signals of a thread that had ended (slot given back).
    pub stale: u64,
    /// SIGPROF signals that were not our timers'.
    pub foreign: u64,
}

pub fn handler_stats() -> HandlerStats {
    HandlerStats {
        signals: SIGNALS.load(Ordering::Relaxed),
        dropped: DROPPED.load(Ordering::Relaxed),
        stale: STALE.load(Ordering::Relaxed),
        foreign: FOREIGN.load(Ordering::Relaxed),
    }
}

/// Most overruns counted for one signal (a thread whose signal stayed
/// blocked for long does not get an absurd weight).
const MAX_OVERRUN: u64 = 10_000;

/// The SIGPROF handler. Async-signal-safe: atomics, the ring, and
/// AsyncGetCallTrace (made to be called from a signal handler on the
/// interrupted thread); `errno` is kept.
extern "C" fn handler(_sig: c_int, info: *mut libc::siginfo_t, ucontext: *mut c_void) {
    // SAFETY: __errno_location returns this thread's errno slot.
    let errno = unsafe { libc::__errno_location() };
    // SAFETY: errno points to this thread's errno.
    let saved = unsafe { *errno };
    on_signal(info, ucontext);
    // SAFETY: as above.
    unsafe { *errno = saved };
}

fn on_signal(info: *mut libc::siginfo_t, ucontext: *mut c_void) {
    if info.is_null() {
        return;
    }
    // SAFETY: the kernel passes a valid siginfo_t (SA_SIGINFO), which is
    // at least as large as the timer view (checked at compile time).
    let ti: &TimerSigInfo = unsafe { &*(info as *const TimerSigInfo) };
    if ti.si_code != libc::SI_TIMER {
        FOREIGN.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if slots::parse_signal_value(ti.si_value as u64).is_none() {
        FOREIGN.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let Some(slot) = slots::by_signal_value(ti.si_value as u64) else {
        STALE.fetch_add(1, Ordering::Relaxed);
        return;
    };
    if !RUNNING.load(Ordering::Acquire) {
        return;
    }
    SIGNALS.fetch_add(1, Ordering::Relaxed);
    let expirations = 1 + (ti.si_overrun.max(0) as u64).min(MAX_OVERRUN);
    let elapsed = PERIOD_NS.load(Ordering::Relaxed).wrapping_mul(expirations);
    slot.clock_ns.fetch_add(elapsed, Ordering::Relaxed);
    let mode = MODE.load(Ordering::Relaxed);
    if mode == mode_code(StackMode::None)
        || !STACKS_ON.load(Ordering::Acquire)
        || !slot.sampled.load(Ordering::Relaxed)
    {
        return;
    }
    // Stacks are owed per stack interval of CPU time; the handler is the
    // only writer of `owed_ns` (the signal is blocked while it runs, and it
    // is delivered to this thread only).
    let interval = STACK_INTERVAL_NS.load(Ordering::Relaxed).max(1);
    let owed = slot.owed_ns.load(Ordering::Relaxed).wrapping_add(elapsed);
    let weight = owed / interval;
    slot.owed_ns.store(owed % interval, Ordering::Relaxed);
    if weight == 0 {
        return;
    }
    let weight = weight.min(u64::from(u32::MAX)) as u32;
    let ring = RING.load(Ordering::Acquire);
    if ring.is_null() {
        return;
    }
    // SAFETY: leaked at install, never freed.
    let ring: &Ring = unsafe { &*ring };
    let Some(claim) = ring.claim() else {
        DROPPED.fetch_add(u64::from(weight), Ordering::Relaxed);
        return;
    };
    let serial = slot.serial.load(Ordering::Relaxed);
    let walked = if mode == mode_code(StackMode::Async) {
        walk(slot, &claim, ucontext)
    } else {
        recover::Walked {
            code: NO_STACK,
            how: How::Direct,
            pc: 0,
        }
    };
    claim.publish(Header {
        serial,
        weight,
        code: walked.code,
        how: walked.how as u32,
        pc: walked.pc as u64,
    });
}

/// The interrupted thread's stack into the claimed slot
/// (`recover::walk`: AsyncGetCallTrace, and recoveries when it fails).
fn walk(slot: &slots::Slot, claim: &ring::Claim<'_>, ucontext: *mut c_void) -> recover::Walked {
    let failed = |code| recover::Walked {
        code,
        how: How::Direct,
        pc: 0,
    };
    let f = AGCT.load(Ordering::Acquire);
    let frames = claim.frames_ptr();
    if f == 0 || frames.is_null() {
        return failed(sys::code::UNKNOWN_STATE);
    }
    let mut env = slot.env.load(Ordering::Relaxed);
    if env.is_null() {
        // A thread registered by another thread (it ran before an attach):
        // its JNIEnv, asked of the VM here, on the thread itself. HotSpot's
        // GetEnv reads the current thread from thread-local storage and
        // returns the environment that thread owns: no allocation, no
        // lock, no change of thread state (docs/cpu-samples.md, "After an
        // attach"). Kept for the next signals; a thread the VM does not
        // know (none here: only Java threads are registered) gets null.
        env = super::jni::current_env();
        if env.is_null() {
            return failed(sys::code::UNKNOWN_STATE);
        }
        let _ = slot.env.compare_exchange(
            std::ptr::null_mut(),
            env,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
    // SAFETY: f was stored from a valid AsgctFn at install.
    let agct: AsgctFn = unsafe { std::mem::transmute::<usize, AsgctFn>(f) };
    let depth = DEPTH.load(Ordering::Relaxed).min(claim.capacity() as u32) as i32;
    recover::walk(env, ucontext, |context| {
        let mut trace = AsgctTrace {
            env_id: env,
            num_frames: 0,
            frames,
        };
        // SAFETY: called on the interrupted thread from its signal handler,
        // as AsyncGetCallTrace is meant to be: `env` is this thread's JNIEnv
        // (stored by the thread itself, or asked of the VM on it above; the
        // slot belongs to the thread the timer signals, checked by the
        // generation), `frames` has room for `depth` frames and belongs to
        // this claim alone, `context` is the kernel's context for this
        // signal or a copy of it on this handler's stack with other
        // registers (AsyncGetCallTrace validates any frame it is given
        // before it reads from it, as a signal may come at any
        // instruction).
        unsafe { agct(&mut trace, depth, context) };
        trace.num_frames
    })
}

/// Stack depth asked of AsyncGetCallTrace now (at most the ring's room).
pub fn set_depth(frames: usize) {
    // SAFETY: the ring was leaked at install and is never freed (or null).
    let Some(ring) = (unsafe { RING.load(Ordering::Acquire).as_ref() }) else {
        return;
    };
    DEPTH.store(
        frames.min(ring.frames_per_slot()).max(1) as u32,
        Ordering::Relaxed,
    );
}
