//! CPU-time triggers per Java thread and the asynchronous stack sampler
//! (docs/cpu-samples.md).
//!
//! Every registered thread is signalled after each period of CPU time it
//! *used* ([`trigger`]: a perf task-clock event where the kernel allows
//! them, a POSIX timer on the thread's CPU clock otherwise; periods drawn
//! at random around the mean), and the signal (SIGPROF, or the next free
//! profiling signal: [`signal`]) is delivered to that thread, interrupting
//! it where it runs. Threads that block, park, wait or sleep use no CPU and
//! get no signal: nothing is done per tick for idle threads.
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
//! With `cpusampler=wall` ([`Config::wall`]) each thread is signalled
//! after each period of *real* time instead, by a second timer on the
//! monotonic clock, whether it runs, blocks, waits or sleeps: the samples
//! are wall-clock samples, and the CPU clock is not advanced meaningfully
//! (cpu=times on the CPU clock is refused with it).
//!
//! Everything here is process-wide (one signal, one handler): [`install`]
//! once, then [`register_current`] on each thread to be timed.

pub mod by_fd;
pub mod code_map;
mod context;
mod hotspot;
mod recover;
pub mod ring;
pub mod signal;
pub mod slots;
pub mod sys;
pub mod trigger;

use super::refs::{Frame, Jni, MethodId};
pub use recover::How;
use ring::{Header, Ring, NO_STACK};
use std::cell::Cell;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use std::sync::Mutex;
use sys::{AsgctFn, AsgctTrace, PollSigInfo, TimerSigInfo};
pub use trigger::Mechanism;

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
    /// Periods of real time instead of CPU time (`cpusampler=wall`): every
    /// thread is signalled, whatever it does.
    pub wall: bool,
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

/// What [`install`] set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// How threads are signalled.
    pub mechanism: Mechanism,
    /// The signal the agent took.
    pub signal: c_int,
    /// Candidate signals passed over: another handler held them (another
    /// profiler loaded before the agent, or the application).
    pub passed_over: Vec<c_int>,
}

fn handler_address() -> usize {
    handler as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize
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
pub fn install(cfg: Config, agct: Option<AsgctFn>) -> Result<Setup, String> {
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
        return Ok(Setup {
            mechanism: trigger::probe(),
            signal: signal::current(),
            passed_over: Vec::new(),
        });
    }
    let ring = Box::new(Ring::new(cfg.ring_slots, cfg.max_frames));
    DEPTH.store(ring.frames_per_slot() as u32, Ordering::Relaxed);
    RING.store(Box::into_raw(ring), Ordering::Release);
    PERIOD_NS.store(cfg.period_ns.max(1), Ordering::Relaxed);
    STACK_INTERVAL_NS.store(cfg.stack_interval_ns.max(1), Ordering::Relaxed);
    MODE.store(mode_code(cfg.mode), Ordering::Relaxed);
    trigger::set_wall(cfg.wall);
    if let Some(f) = agct {
        AGCT.store(f as usize, Ordering::Release);
    }
    // A signal nobody else handles: taking one another profiler (or the
    // application) handles would make both wrong.
    let (sig, passed_over) = signal::install_first_free(handler_address())?;
    let mechanism = trigger::probe();
    STATE.store(INSTALLED, Ordering::Release);
    Ok(Setup {
        mechanism,
        signal: sig,
        passed_over,
    })
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
    // Slots move to (or off) their wall timers when next armed.
    trigger::set_wall(cfg.wall);
    if let Some(f) = agct {
        AGCT.store(f as usize, Ordering::Release);
    }
}

/// Samples the ring holds (0 before [`install`]).
pub fn ring_slots() -> usize {
    // SAFETY: the ring was leaked at install and is never freed (or null).
    unsafe { RING.load(Ordering::Acquire).as_ref() }.map_or(0, Ring::slots)
}

pub fn is_installed() -> bool {
    STATE.load(Ordering::Acquire) == INSTALLED
}

thread_local! {
    /// This thread's slot (normal code only; the handler finds the slot
    /// through the signal's value).
    static MY_SLOT: Cell<Option<u32>> = const { Cell::new(None) };
    /// This thread's Linux thread ID, once asked (0: not yet): a thread
    /// registers and unregisters itself, a system call each otherwise.
    static MY_TID: Cell<i32> = const { Cell::new(0) };
}

/// The calling thread's Linux thread ID.
fn my_tid() -> i32 {
    MY_TID
        .try_with(|c| {
            if c.get() == 0 {
                c.set(sys::gettid());
            }
            c.get()
        })
        .unwrap_or_else(|_| sys::gettid())
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
    let tid = my_tid();
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
    slots::give_back_tid(my_tid());
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

/// Every candidate signal was taken by other handlers: the timers are
/// off for good.
static HANDLER_LOST: AtomicBool = AtomicBool::new(false);

/// Something the agent has to say about the signal (once per event).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Said {
    /// It goes on (`HPROF: ...`).
    Notice(String),
    /// CPU sampling stopped (`HPROF ERROR: ...`).
    Error(String),
}

impl Said {
    pub fn say(&self) {
        match self {
            Said::Notice(t) => crate::diag::notice(t),
            Said::Error(t) => crate::diag::error(t),
        }
    }
}

/// The sampler's periodic upkeep (its passes, every 10 to 100 ms):
///
/// * is our handler still on our signal? The application or another tool
///   (JFR's CPU-time sampler, a profiler or native agent loaded later) may
///   have installed its own, and our signals would go to it. The agent
///   then leaves that signal to it and moves to the next free candidate
///   ([`signal::move_on`]); when none is left, every trigger is disarmed
///   for good. Either is returned to be said, once;
/// * threads that used CPU under their POSIX timer get a perf event
///   (perf events in use: [`trigger`]).
///
/// A system call per check: callers run this on their periodic passes,
/// not per sample.
pub fn maintain() -> Option<Said> {
    if !is_installed() || HANDLER_LOST.load(Ordering::Acquire) {
        return None;
    }
    let said = check_signal();
    if trigger::uses_perf() && RUNNING.load(Ordering::Acquire) && slots::take_some_want_perf() {
        if let Ok(_c) = CONTROL.lock() {
            let running = RUNNING.load(Ordering::Acquire);
            let period = PERIOD_NS.load(Ordering::Relaxed);
            slots::for_each(|i, s| {
                if running && s.wants_perf() {
                    slots::give_perf(s, i, period, true);
                }
            });
        }
    }
    said
}

fn check_signal() -> Option<Said> {
    let Err(found) = signal::still_ours(handler_address()) else {
        return None;
    };
    let Ok(_c) = CONTROL.lock() else { return None };
    if HANDLER_LOST.load(Ordering::Acquire) || signal::still_ours(handler_address()).is_ok() {
        return None;
    }
    let old = signal::name(signal::current());
    let how = signal::describe(found);
    let period = PERIOD_NS.load(Ordering::Relaxed);
    if let Some(new) = signal::move_on(handler_address()) {
        slots::move_to_signal(new, period, RUNNING.load(Ordering::Acquire));
        return Some(Said::Notice(format!(
            "{old} was {how} while profiling (by the application or another tool): the agent leaves {old} to it and signals its CPU-time samples with {} from now on",
            signal::name(new)
        )));
    }
    HANDLER_LOST.store(true, Ordering::Release);
    RUNNING.store(false, Ordering::Release);
    STACKS_ON.store(false, Ordering::Release);
    slots::for_each(|_, s| {
        if s.is_live() {
            let _ = slots::set_period(s, 0);
        }
    });
    slots::drop_all_perf();
    Some(Said::Error(format!(
        "{old} was {how} while profiling (by the application or another tool), and every other profiling signal has a handler too: the CPU-time timers are stopped; cpu=samples takes no more samples and cpu=times charges no more CPU time"
    )))
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
        return Err("every profiling signal was taken by other handlers".into());
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
        // No descriptor held while nothing is sampled.
        slots::drop_all_perf();
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

/// Most periods counted for one signal (a thread whose signal stayed
/// blocked for long does not get an absurd weight).
const MAX_OVERRUN: u64 = 10_000;

/// The slot a signal of ours is for: a POSIX timer's (`SI_TIMER`, our
/// value) or a perf event's (`POLL_IN`, one of our descriptors). Other
/// signals are counted as foreign, ours for a thread that has ended as
/// stale. Async-signal-safe.
fn slot_of(info: *mut libc::siginfo_t) -> Option<&'static slots::Slot> {
    // SAFETY: the kernel passes a valid siginfo_t (SA_SIGINFO), which is
    // at least as large as both views (checked at compile time).
    let ti: &TimerSigInfo = unsafe { &*(info as *const TimerSigInfo) };
    if ti.si_code == libc::SI_TIMER {
        if slots::parse_signal_value(ti.si_value as u64).is_none() {
            FOREIGN.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let s = slots::by_signal_value(ti.si_value as u64);
        if s.is_none() {
            STALE.fetch_add(1, Ordering::Relaxed);
        }
        return s;
    }
    if ti.si_code == sys::POLL_IN {
        // SAFETY: as above.
        let pi: &PollSigInfo = unsafe { &*(info as *const PollSigInfo) };
        let s = slots::by_fd(pi.si_fd);
        if s.is_none() {
            // A descriptor still mapped belongs to a slot whose event
            // changed meanwhile; one not mapped is another tool's (or an
            // event of ours closed while its signal was queued).
            if by_fd::get(pi.si_fd).is_some() {
                STALE.fetch_add(1, Ordering::Relaxed);
            } else {
                FOREIGN.fetch_add(1, Ordering::Relaxed);
            }
        }
        return s;
    }
    FOREIGN.fetch_add(1, Ordering::Relaxed);
    None
}

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
    let Some(slot) = slot_of(info) else { return };
    if !RUNNING.load(Ordering::Acquire) {
        return;
    }
    SIGNALS.fetch_add(1, Ordering::Relaxed);
    let period = PERIOD_NS.load(Ordering::Relaxed);
    // The thread's CPU time since its last signal (the periods are random,
    // and a perf event in user mode only skips overflows in the kernel).
    let elapsed = slot
        .on_signal(period, true)
        .min(period.saturating_mul(MAX_OVERRUN + 1));
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
