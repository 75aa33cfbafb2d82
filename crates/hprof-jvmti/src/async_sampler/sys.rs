//! The C shapes the asynchronous sampler deals in: HotSpot's
//! `AsyncGetCallTrace` (not part of JVMTI: declared by HotSpot's
//! `forte.cpp` and exported by libjvm), the kernel's view of a timer
//! signal and of a perf event's signal, the Linux clock id of another
//! thread's CPU clock, and the part of the perf event interface the
//! triggers use (`perf_event_open(2)`).

use super::super::sys::{jint, jmethodID, JNIEnv};
use std::os::raw::{c_int, c_void};

/// `ASGCT_CallFrame`: `lineno` is the byte-code index of a Java frame, -3
/// for a native method.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AsgctFrame {
    pub lineno: jint,
    pub method_id: jmethodID,
}

impl Default for AsgctFrame {
    fn default() -> Self {
        AsgctFrame {
            lineno: 0,
            method_id: std::ptr::null_mut(),
        }
    }
}

/// `ASGCT_CallTrace`.
#[repr(C)]
pub struct AsgctTrace {
    pub env_id: *mut JNIEnv,
    /// Frames written, or a negative code (below).
    pub num_frames: jint,
    pub frames: *mut AsgctFrame,
}

/// `void AsyncGetCallTrace(ASGCT_CallTrace*, jint depth, void* ucontext)`.
pub type AsgctFn = unsafe extern "C" fn(*mut AsgctTrace, jint, *mut c_void);

/// `lineno` of a native method's frame.
pub const NATIVE_FRAME_LINENO: jint = -3;

/// AsyncGetCallTrace's outcomes besides a frame count (`forte.cpp`).
/// 0 means "no Java frame" (a thread not yet or no longer running Java).
pub mod code {
    pub const NO_JAVA_FRAME: i32 = 0;
    pub const NO_CLASS_LOAD: i32 = -1;
    pub const GC_ACTIVE: i32 = -2;
    pub const UNKNOWN_NOT_JAVA: i32 = -3;
    pub const NOT_WALKABLE_NOT_JAVA: i32 = -4;
    pub const UNKNOWN_JAVA: i32 = -5;
    pub const NOT_WALKABLE_JAVA: i32 = -6;
    pub const UNKNOWN_STATE: i32 = -7;
    pub const THREAD_EXIT: i32 = -8;
    pub const DEOPT: i32 = -9;
    pub const SAFEPOINT: i32 = -10;

    /// Name of an outcome for reports.
    pub fn name(c: i32) -> &'static str {
        match c {
            NO_JAVA_FRAME => "no Java frame",
            NO_CLASS_LOAD => "class load events off",
            GC_ACTIVE => "GC active",
            UNKNOWN_NOT_JAVA => "unknown frame outside Java",
            NOT_WALKABLE_NOT_JAVA => "stack not walkable outside Java",
            UNKNOWN_JAVA => "unknown frame in Java",
            NOT_WALKABLE_JAVA => "stack not walkable in Java",
            UNKNOWN_STATE => "unknown thread state",
            THREAD_EXIT => "thread exiting",
            DEOPT => "deoptimizing",
            SAFEPOINT => "at a safepoint",
            _ => "other",
        }
    }
}

/// The part of `siginfo_t` the kernel fills for a POSIX timer signal
/// (`si_code == SI_TIMER`): `_sifields._timer` on 64-bit Linux. The libc
/// crate has no accessor for `si_overrun`; the layout is checked against
/// its `si_value()` accessor in the tests below.
#[repr(C)]
pub struct TimerSigInfo {
    pub si_signo: c_int,
    pub si_errno: c_int,
    pub si_code: c_int,
    _pad: c_int,
    pub si_timerid: c_int,
    /// Expirations of the timer between this signal's generation and its
    /// delivery (not counting this one).
    pub si_overrun: c_int,
    pub si_value: usize,
}

const _: () =
    assert!(std::mem::size_of::<TimerSigInfo>() <= std::mem::size_of::<libc::siginfo_t>());

/// The part of `siginfo_t` the kernel fills for a signal a file descriptor
/// sends (`F_SETSIG`; a perf event's overflow): `_sifields._sigpoll` on
/// 64-bit Linux, `si_code` being `POLL_IN`.
#[repr(C)]
pub struct PollSigInfo {
    pub si_signo: c_int,
    pub si_errno: c_int,
    pub si_code: c_int,
    _pad: c_int,
    pub si_band: libc::c_long,
    pub si_fd: c_int,
}

const _: () = assert!(std::mem::size_of::<PollSigInfo>() <= std::mem::size_of::<libc::siginfo_t>());

/// `si_code` of a signal sent for a file descriptor that has input (what a
/// perf event sends on overflow).
pub const POLL_IN: c_int = 1;

/// fcntl commands and values the libc crate lacks for glibc (asm-generic
/// `fcntl.h`, the same on every Linux architecture).
pub const F_SETSIG: c_int = 10;
pub const F_SETOWN_EX: c_int = 15;
pub const F_OWNER_TID: c_int = 0;

/// `struct f_owner_ex`: signals of a file descriptor go to this thread.
#[repr(C)]
pub struct FOwnerEx {
    pub kind: c_int,
    pub pid: libc::pid_t,
}

/// The first, 64-byte version of `struct perf_event_attr`
/// (`PERF_ATTR_SIZE_VER0`). The kernel accepts every version it has ever
/// defined and reads fields it does not get as zero; the triggers use only
/// fields of this first one, so this is written out here rather than taken
/// from a binding of the whole header.
#[repr(C)]
#[derive(Default)]
pub struct PerfEventAttr {
    pub kind: u32,
    pub size: u32,
    pub config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    /// Bit field: `disabled` (bit 0), `exclude_kernel` (bit 5), ...
    pub flags: u64,
    pub wakeup_events: u32,
    pub bp_type: u32,
    pub config1: u64,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 64);

pub const PERF_TYPE_SOFTWARE: u32 = 1;
/// The software event counting the task's own CPU time in nanoseconds,
/// driven by a high-resolution timer while the task runs.
pub const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
pub const PERF_ATTR_FLAG_DISABLED: u64 = 1 << 0;
pub const PERF_ATTR_FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
pub const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// `_IO('$', 0)`, `_IO('$', 1)`, `_IOW('$', 4, u64)` of
/// `linux/perf_event.h`.
pub const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
pub const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
pub const PERF_EVENT_IOC_PERIOD: libc::c_ulong = 0x4008_2404;

/// The calling thread's kernel ID. Through syscall(2), not glibc's
/// `gettid` (glibc 2.30+): the release build links against glibc 2.17
/// (docs/release.md). Async-signal-safe.
pub fn gettid() -> libc::pid_t {
    // SAFETY: gettid takes no arguments, cannot fail and touches no memory.
    unsafe { libc::syscall(libc::SYS_gettid) as libc::pid_t }
}

/// The calling thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`:
/// user and system time, what `ThreadMXBean` reports). Async-signal-safe.
pub fn own_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The monotonic clock in nanoseconds (wall-clock sampling).
/// Async-signal-safe.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Thread `tid`'s CPU time in nanoseconds (0 if it cannot be read: the
/// thread has ended).
pub fn thread_cpu_ns(tid: libc::pid_t) -> u64 {
    clock_ns(thread_cpu_clock(tid))
}

/// Clock `clock` in nanoseconds, 0 if it cannot be read. Async-signal-safe.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; clock_gettime is async-signal-safe and
    // fails cleanly (EINVAL) on a clock that does not exist.
    if unsafe { libc::clock_gettime(clock, &mut t) } != 0 {
        return 0;
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The clock id of thread `tid`'s CPU clock (what glibc's
/// `pthread_getcpuclockid` computes: `MAKE_THREAD_CPUCLOCK(tid,
/// CPUCLOCK_SCHED)`, the kernel's encoding in `posix-cpu-timers`): the
/// bitwise complement of the tid shifted left by 3, with the per-thread bit
/// (4) and the SCHED clock (2). Valid for any thread of this process.
pub fn thread_cpu_clock(tid: libc::pid_t) -> libc::clockid_t {
    ((!tid) << 3) | 4 | 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_siginfo_layout_matches_libc() {
        // SAFETY (test): all-zero is a valid siginfo_t; we write through a
        // view no larger than it (checked at compile time above).
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let view = &mut info as *mut libc::siginfo_t as *mut TimerSigInfo;
        unsafe {
            (*view).si_code = libc::SI_TIMER;
            (*view).si_value = 0x1234_5678_9abc_def0;
            (*view).si_overrun = 7;
        }
        assert_eq!(info.si_code, libc::SI_TIMER);
        // SAFETY (test): si_value reads the union member we just wrote.
        assert_eq!(
            unsafe { info.si_value() }.sival_ptr as usize,
            0x1234_5678_9abc_def0
        );
    }

    #[test]
    fn own_cpu_clock_id_reads_like_the_thread_cpu_clock() {
        let tid = super::gettid();
        let mut a = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let mut b = a;
        let mut x = 1u64;
        for i in 0..3_000_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        std::hint::black_box(x);
        // SAFETY (test): valid out-pointers.
        let r1 = unsafe { libc::clock_gettime(thread_cpu_clock(tid), &mut a) };
        let r2 = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut b) };
        assert_eq!((r1, r2), (0, 0));
        let ns = |t: libc::timespec| t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128;
        let (a, b) = (ns(a), ns(b));
        assert!(a > 0 && b >= a && b - a < 50_000_000, "{a} {b}");
    }
}
