//! What signals a thread after each period of its CPU time: a perf
//! `task-clock` event, or a POSIX timer on the thread's CPU clock
//! (docs/cpu-samples.md, "How a thread is signalled").
//!
//! * A **perf event** (`PERF_COUNT_SW_TASK_CLOCK`) counts the thread's CPU
//!   time with a high-resolution timer that runs while the thread runs; it
//!   overflows after exactly its period, wherever the thread is, and its
//!   descriptor sends the signal to that thread (`O_ASYNC`, `F_SETSIG`,
//!   `F_SETOWN_EX` with `F_OWNER_TID`).
//! * A **POSIX timer** on the thread's CPU clock (`timer_create`,
//!   `SIGEV_THREAD_ID`) is checked by the kernel only at its scheduler tick
//!   (every 4 ms at `HZ=250`): it expires at the first tick after its period.
//!
//! Either way the period is drawn anew after every signal, uniformly
//! between half and one and a half times the mean: with a fixed period a
//! program whose work repeats with a commensurate period (a loop whose
//! rounds take 2 ms, sampled every 2 ms) is seen at the same few places of
//! its round, and the shares of its methods are biased. Ticks still
//! quantise when a POSIX timer fires, which randomising cannot undo: perf
//! events are used where the kernel allows them ([`probe`]), timers
//! otherwise (`perf_event_paranoid` 3 on some distributions, containers
//! whose seccomp profile refuses `perf_event_open`).
//!
//! Every thread gets a POSIX timer when it is registered (cheap, no file
//! descriptor); a thread that then uses CPU is given a perf event by the
//! sampler thread (`super::maintain`), so threads that never run hold no
//! descriptor. The POSIX timer stays, disarmed, as the slot's tie to its
//! thread (setting a timer whose thread has ended fails with ESRCH, also
//! when the thread's ID was reused).

use super::sys::{self, FOwnerEx, PerfEventAttr};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// How threads are signalled in this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// Perf task-clock events; `exclude_kernel` when the kernel refuses to
    /// count kernel time for this process (`perf_event_paranoid` 2 without
    /// CAP_PERFMON): the event then overflows only in user mode, and time
    /// in the kernel is charged to the thread's next sample.
    Perf { exclude_kernel: bool },
    /// POSIX timers on the threads' CPU clocks; why perf events are not
    /// used.
    Timers { why: String },
}

const UNKNOWN: u8 = 0;
const PERF: u8 = 1;
const PERF_USER: u8 = 2;
const TIMERS: u8 = 3;
static MECHANISM: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Wall-clock sampling (`cpusampler=wall`): threads are signalled after
/// each period of real time by a second POSIX timer on `CLOCK_MONOTONIC`
/// (a slot's `wall` timer); the CPU-clock timer stays, disarmed, as the
/// slot's tie to its thread, and no perf event is given.
static WALL: AtomicBool = AtomicBool::new(false);

/// Sample by the wall clock from the next arming on (set while no profile
/// runs the timers).
pub fn set_wall(on: bool) {
    WALL.store(on, Ordering::Release);
}

pub fn wall() -> bool {
    WALL.load(Ordering::Acquire)
}

/// Perf descriptors open now, and how many the agent may hold.
static OPEN_FDS: AtomicUsize = AtomicUsize::new(0);
static FD_BUDGET: AtomicUsize = AtomicUsize::new(0);

/// Decide the mechanism, once per process: a perf event on the calling
/// thread is tried (counting kernel time, then user time only).
pub fn probe() -> Mechanism {
    match MECHANISM.load(Ordering::Acquire) {
        PERF => {
            return Mechanism::Perf {
                exclude_kernel: false,
            }
        }
        PERF_USER => {
            return Mechanism::Perf {
                exclude_kernel: true,
            }
        }
        TIMERS => return Mechanism::Timers { why: String::new() },
        _ => {}
    }
    let tid = sys::gettid();
    let mut why = String::new();
    for (exclude_kernel, code) in [(false, PERF), (true, PERF_USER)] {
        match open_event(tid, exclude_kernel, 1_000_000) {
            Ok(fd) => {
                // SAFETY: fd is the probe's own descriptor.
                unsafe { libc::close(fd) };
                MECHANISM.store(code, Ordering::Release);
                FD_BUDGET.store(fd_budget(), Ordering::Release);
                return Mechanism::Perf { exclude_kernel };
            }
            Err(e) => why = format!("perf_event_open: {}", std::io::Error::from_raw_os_error(e)),
        }
    }
    MECHANISM.store(TIMERS, Ordering::Release);
    Mechanism::Timers { why }
}

/// Threads are given perf events.
pub fn uses_perf() -> bool {
    matches!(MECHANISM.load(Ordering::Acquire), PERF | PERF_USER)
}

/// A quarter of the process's descriptor limit: the program keeps the
/// rest (beyond it, threads keep their POSIX timers).
fn fd_budget() -> usize {
    // SAFETY: a valid out-pointer.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return 256;
    }
    (r.rlim_cur as usize / 4).clamp(64, super::by_fd::MAX_FD)
}

fn open_event(tid: i32, exclude_kernel: bool, period_ns: u64) -> Result<c_int, i32> {
    let attr = PerfEventAttr {
        kind: sys::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: sys::PERF_COUNT_SW_TASK_CLOCK,
        sample_period: period_ns.max(1),
        flags: sys::PERF_ATTR_FLAG_DISABLED
            | if exclude_kernel {
                sys::PERF_ATTR_FLAG_EXCLUDE_KERNEL
            } else {
                0
            },
        wakeup_events: 1,
        ..Default::default()
    };
    // SAFETY: a valid attr of the size it states; pid = a thread of this
    // process, any CPU, no group; the descriptor is close-on-exec so it
    // never leaks into a program the JVM executes.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            tid,
            -1 as c_int,
            -1 as c_int,
            sys::PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    Ok(fd as c_int)
}

/// A disabled perf event on thread `tid`'s CPU time that, once enabled,
/// sends `signal` to that thread on every overflow. `Err` when perf events
/// are not used, the descriptor budget is spent, or the kernel refuses.
pub fn open_perf(tid: i32, signal: c_int, period_ns: u64) -> Result<c_int, String> {
    let exclude_kernel = match MECHANISM.load(Ordering::Acquire) {
        PERF => false,
        PERF_USER => true,
        _ => return Err("perf events not used".into()),
    };
    if OPEN_FDS.load(Ordering::Acquire) >= FD_BUDGET.load(Ordering::Acquire) {
        return Err("descriptor budget spent".into());
    }
    let fd = open_event(tid, exclude_kernel, period_ns)
        .map_err(|e| format!("perf_event_open: {}", std::io::Error::from_raw_os_error(e)))?;
    let owner = FOwnerEx {
        kind: sys::F_OWNER_TID,
        pid: tid,
    };
    // SAFETY: fd is ours; the arguments are the ones these fcntl commands
    // take (flags, a signal number, a pointer to f_owner_ex).
    let ok = unsafe {
        libc::fcntl(fd, sys::F_SETOWN_EX, &owner as *const FOwnerEx) == 0
            && libc::fcntl(fd, sys::F_SETSIG, signal) == 0
            && libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC) == 0
    };
    if !ok {
        let e = std::io::Error::last_os_error();
        // SAFETY: fd is ours and not published anywhere.
        unsafe { libc::close(fd) };
        return Err(format!("fcntl on a perf event: {e}"));
    }
    OPEN_FDS.fetch_add(1, Ordering::AcqRel);
    Ok(fd)
}

/// Close a perf event (disabled first: no signal after this returns
/// except one already queued).
pub fn close_perf(fd: c_int) {
    // SAFETY: fd is a perf event of ours that nobody else closes (the
    // caller took it out of its slot).
    unsafe {
        libc::ioctl(fd, sys::PERF_EVENT_IOC_DISABLE, 0);
        libc::close(fd);
    }
    OPEN_FDS.fetch_sub(1, Ordering::AcqRel);
}

/// Perf descriptors open now.
pub fn open_fds() -> usize {
    OPEN_FDS.load(Ordering::Acquire)
}

/// The next period of a perf event; async-signal-safe (one ioctl). The
/// event restarts its count towards an overflow from now.
pub fn set_perf_period(fd: c_int, period_ns: u64) {
    let p: u64 = period_ns.max(10_000);
    // SAFETY: fd is a live perf event of ours (the caller owns the slot's
    // trigger); PERIOD takes a pointer to a u64.
    unsafe { libc::ioctl(fd, sys::PERF_EVENT_IOC_PERIOD, &p as *const u64) };
}

/// Enable (true) or disable a perf event.
pub fn enable_perf(fd: c_int, on: bool) -> Result<(), String> {
    let req = if on {
        sys::PERF_EVENT_IOC_ENABLE
    } else {
        sys::PERF_EVENT_IOC_DISABLE
    };
    // SAFETY: fd is a live perf event of ours.
    if unsafe { libc::ioctl(fd, req, 0) } != 0 {
        return Err(format!(
            "perf event ioctl: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Send `signal` from now on (a perf event's descriptor).
pub fn set_perf_signal(fd: c_int, signal: c_int) -> bool {
    // SAFETY: fd is a live perf event of ours.
    unsafe { libc::fcntl(fd, sys::F_SETSIG, signal) == 0 }
}

/// A POSIX timer on thread `tid`'s CPU clock that sends `signal` with
/// `value` to that thread (SIGEV_THREAD_ID: the thread that used the CPU,
/// not any thread of the process). Not armed.
pub fn create_timer(tid: i32, signal: c_int, value: u64) -> Result<i64, String> {
    create_on(sys::thread_cpu_clock(tid), tid, signal, value)
        .map_err(|e| format!("timer_create on the thread's CPU clock: {e}"))
}

/// A POSIX timer on the monotonic clock that sends `signal` with `value`
/// to thread `tid` (wall-clock sampling). Not armed.
pub fn create_wall_timer(tid: i32, signal: c_int, value: u64) -> Result<i64, String> {
    create_on(libc::CLOCK_MONOTONIC, tid, signal, value)
        .map_err(|e| format!("timer_create on the monotonic clock: {e}"))
}

fn create_on(
    clock: libc::clockid_t,
    tid: i32,
    signal: c_int,
    value: u64,
) -> Result<i64, std::io::Error> {
    // SAFETY: all-zero is a valid sigevent; we set the fields we use.
    let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
    sev.sigev_notify = libc::SIGEV_THREAD_ID;
    sev.sigev_signo = signal;
    sev.sigev_value = libc::sigval {
        sival_ptr: value as usize as *mut libc::c_void,
    };
    sev.sigev_notify_thread_id = tid;
    let mut timer: libc::timer_t = std::ptr::null_mut();
    // SAFETY: valid sigevent and out-pointer; the clock id is the
    // monotonic clock or the CPU clock of a thread of this process
    // (glibc's own encoding).
    let r = unsafe { libc::timer_create(clock, &mut sev, &mut timer) };
    if r == 0 {
        Ok(timer as usize as i64)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

pub fn delete_timer(t: i64) {
    // SAFETY: t is a timer this module created and the caller took out of
    // its slot (nobody else deletes it).
    unsafe { libc::timer_delete(t as usize as libc::timer_t) };
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// Set a POSIX timer: first expiry after `first_ns`, then every
/// `every_ns` (0 for both: disarmed). Async-signal-safe. The repeat keeps
/// the thread sampled even if one signal is lost (merged with a pending
/// one); the handler draws the next first expiry. `Err` carries errno.
pub fn set_timer(t: i64, first_ns: u64, every_ns: u64) -> Result<(), i32> {
    let spec = libc::itimerspec {
        it_interval: timespec(every_ns),
        it_value: timespec(first_ns),
    };
    // SAFETY: t is a live timer of ours (a stale id after a concurrent
    // delete only makes the call fail with EINVAL); spec is valid.
    let r =
        unsafe { libc::timer_settime(t as usize as libc::timer_t, 0, &spec, std::ptr::null_mut()) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

/// A period drawn uniformly from [mean/2, 3·mean/2) (xorshift64 on
/// `state`, which only the slot's owner of the moment advances).
/// Async-signal-safe.
pub fn random_period(state: &AtomicU64, mean_ns: u64) -> u64 {
    let mut x = state.load(Ordering::Relaxed);
    if x == 0 {
        x = 0x9E37_79B9_7F4A_7C15;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    state.store(x, Ordering::Relaxed);
    let mean = mean_ns.max(2);
    mean / 2 + x % mean
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_periods_cover_half_to_one_and_a_half_times_the_mean() {
        let s = AtomicU64::new(12345);
        let n = 100_000u64;
        let (mut lo, mut hi, mut sum) = (u64::MAX, 0, 0u64);
        for _ in 0..n {
            let p = random_period(&s, 1_000_000);
            lo = lo.min(p);
            hi = hi.max(p);
            sum += p;
        }
        assert!((500_000..510_000).contains(&lo), "{lo}");
        assert!(hi < 1_500_000 && hi > 1_490_000, "{hi}");
        let mean = sum / n;
        assert!((mean as i64 - 1_000_000).abs() < 5_000, "{mean}");
    }

    #[test]
    fn a_perf_event_signals_its_thread_where_the_kernel_allows_it() {
        // The test process may run where perf events are refused: then
        // the mechanism says why and nothing else is checked.
        match probe() {
            Mechanism::Timers { why } => println!("perf events refused here: {why}"),
            Mechanism::Perf { .. } => {
                let tid = sys::gettid();
                let fd = open_perf(tid, libc::SIGPROF, 1_000_000).expect("perf event");
                assert_eq!(open_fds(), 1);
                // SAFETY (test): fd is the event just opened.
                let fl = unsafe { libc::fcntl(fd, libc::F_GETFD) };
                assert_eq!(fl & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
                set_perf_period(fd, 2_000_000);
                close_perf(fd);
                assert_eq!(open_fds(), 0);
            }
        }
    }
}
