//! One slot per registered Java thread: its CPU-time timer and what the
//! signal handler needs about it (serial, JNI environment, its CPU clock
//! for cpu=times, how much CPU time is owed to the next stack sample).
//!
//! Slots live in chunks that are allocated on normal threads and never
//! freed, published through atomic pointers, so the handler reaches a slot
//! with two loads and never sees freed memory. A slot is reused after its
//! thread ended: its generation changes, and a timer signal still pending
//! from the old thread (a timer's queued signal can outlive
//! `timer_delete`) carries the old generation and is ignored.
//!
//! A thread has at most one slot: slots are also found by the thread's
//! Linux thread id, so a thread registered twice (by itself at its
//! ThreadStart and by an attach that enumerates the running threads, in
//! either order) keeps one timer, and a thread's end gives its slot back
//! whoever registered it.

use super::super::sys::JNIEnv;
use super::sys::thread_cpu_clock;
use std::collections::BTreeMap;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering,
};
use std::sync::Mutex;

const CHUNK: usize = 256;
const MAX_CHUNKS: usize = 4096;
/// Most threads registered at the same time (1 048 576).
pub const MAX_SLOTS: usize = CHUNK * MAX_CHUNKS;

/// The signal the timers send.
pub const SIGNAL: libc::c_int = libc::SIGPROF;

/// Marks a timer signal as one of ours: the top 16 bits of its value.
const MAGIC: u64 = 0x4850; // "HP"

pub struct Slot {
    /// Changes when the slot is taken and when it is given back (16 bits
    /// of it travel in the signal value).
    gen: AtomicU32,
    live: AtomicBool,
    pub serial: AtomicU32,
    pub env: AtomicPtr<JNIEnv>,
    tid: AtomicI32,
    /// The kernel timer id, -1 for none.
    timer: AtomicI64,
    /// Stack samples wanted for this thread (socket: sampling per thread).
    pub sampled: AtomicBool,
    /// Stacks may be taken at all (false: a clock for cpu=times only).
    stacks: AtomicBool,
    /// The thread's CPU clock as the timer counts it, in nanoseconds:
    /// advanced by the handler (one period per expiration). cpu=times
    /// reads it from Java through its address.
    pub clock_ns: AtomicU64,
    /// CPU time owed to the next stack sample (handler only).
    pub owed_ns: AtomicU64,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            gen: AtomicU32::new(0),
            live: AtomicBool::new(false),
            serial: AtomicU32::new(0),
            env: AtomicPtr::new(std::ptr::null_mut()),
            tid: AtomicI32::new(0),
            timer: AtomicI64::new(-1),
            sampled: AtomicBool::new(true),
            stacks: AtomicBool::new(true),
            clock_ns: AtomicU64::new(0),
            owed_ns: AtomicU64::new(0),
        }
    }

    pub fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// A thread first timed for cpu=times only becomes sampled too.
    pub fn allow_stacks(&self) {
        self.stacks.store(true, Ordering::Relaxed);
        self.sampled.store(true, Ordering::Relaxed);
    }

    pub fn stacks_allowed(&self) -> bool {
        self.stacks.load(Ordering::Relaxed)
    }

    pub fn tid(&self) -> i32 {
        self.tid.load(Ordering::Relaxed)
    }
}

type Chunk = [Slot; CHUNK];

static CHUNKS: [AtomicPtr<Chunk>; MAX_CHUNKS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_CHUNKS];

struct Alloc {
    free: Vec<u32>,
    /// Slots handed out so far (indices below this exist).
    used: u32,
    /// The live slot of each registered thread, by Linux thread id.
    by_tid: BTreeMap<i32, u32>,
}

static ALLOC: Mutex<Alloc> = Mutex::new(Alloc {
    free: Vec::new(),
    used: 0,
    by_tid: BTreeMap::new(),
});

/// The slot at `index`, if its chunk exists. Async-signal-safe: two atomic
/// loads, no allocation.
pub fn get(index: u32) -> Option<&'static Slot> {
    let i = index as usize;
    let chunk = CHUNKS.get(i / CHUNK)?.load(Ordering::Acquire);
    if chunk.is_null() {
        return None;
    }
    // SAFETY: a non-null chunk pointer was published (release) by `take`
    // after the chunk was fully built from a leaked Box; chunks are never
    // freed, so the reference is valid for 'static.
    let chunk: &'static Chunk = unsafe { &*chunk };
    chunk.get(i % CHUNK)
}

/// Every slot handed out so far (live or not), for rare whole-table work.
pub fn for_each(mut f: impl FnMut(u32, &'static Slot)) {
    let used = ALLOC.lock().map(|a| a.used).unwrap_or(0);
    for i in 0..used {
        if let Some(s) = get(i) {
            f(i, s);
        }
    }
}

/// Signal value of slot `index` in generation `gen`.
pub fn signal_value(index: u32, gen: u32) -> u64 {
    (MAGIC << 48) | (u64::from(gen & 0xFFFF) << 32) | u64::from(index)
}

/// (index, generation) of a signal value of ours.
pub fn parse_signal_value(v: u64) -> Option<(u32, u32)> {
    (v >> 48 == MAGIC).then_some((v as u32, ((v >> 32) & 0xFFFF) as u32))
}

/// The slot a signal value names, if it is still the same thread's.
pub fn by_signal_value(v: u64) -> Option<&'static Slot> {
    let (index, gen) = parse_signal_value(v)?;
    let s = get(index)?;
    (s.live.load(Ordering::Acquire) && s.gen.load(Ordering::Acquire) & 0xFFFF == gen).then_some(s)
}

/// The slot of thread `tid`, taken now with a new timer (not armed), or
/// the one the thread has already (one timer per thread): then `serial`
/// (if not 0) replaces the old serial, a non-null `env` is stored, and
/// `stacks` may allow stacks (never forbid them again). A slot whose timer
/// belongs to a thread that ended unseen (its id now reused by another
/// thread) is given back and a new one taken. `env` may be null for a
/// thread registered by another thread: the handler then asks the VM for
/// it on the thread itself (`super::walk`).
pub fn take(tid: i32, serial: u32, env: *mut JNIEnv, stacks: bool) -> Result<u32, String> {
    let mut a = ALLOC
        .lock()
        .map_err(|_| "thread slots poisoned".to_string())?;
    if let Some(&i) = a.by_tid.get(&tid) {
        match get(i) {
            Some(s) if s.is_live() && timer_has_thread(s) => {
                if serial != 0 {
                    s.serial.store(serial, Ordering::Relaxed);
                }
                if !env.is_null() {
                    s.env.store(env, Ordering::Relaxed);
                }
                if stacks {
                    s.allow_stacks();
                }
                return Ok(i);
            }
            _ => release(&mut a, i),
        }
    }
    let index = match a.free.pop() {
        Some(i) => i,
        None => {
            let i = a.used as usize;
            if i >= MAX_SLOTS {
                return Err(format!("more than {MAX_SLOTS} threads at once"));
            }
            let c = i / CHUNK;
            if CHUNKS[c].load(Ordering::Acquire).is_null() {
                let chunk: Box<Chunk> = Box::new([const { Slot::new() }; CHUNK]);
                CHUNKS[c].store(Box::into_raw(chunk), Ordering::Release);
            }
            a.used += 1;
            i as u32
        }
    };
    let s = get(index).ok_or("slot chunk missing")?;
    let gen = s.gen.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
    s.serial.store(serial, Ordering::Relaxed);
    s.env.store(env, Ordering::Relaxed);
    s.tid.store(tid, Ordering::Relaxed);
    s.sampled.store(stacks, Ordering::Relaxed);
    s.stacks.store(stacks, Ordering::Relaxed);
    s.clock_ns.store(0, Ordering::Relaxed);
    s.owed_ns.store(0, Ordering::Relaxed);
    match create_timer(tid, signal_value(index, gen)) {
        Ok(t) => s.timer.store(t, Ordering::Relaxed),
        Err(e) => {
            a.free.push(index);
            return Err(e);
        }
    }
    s.live.store(true, Ordering::Release);
    a.by_tid.insert(tid, index);
    Ok(index)
}

/// Delete the slot's timer and give the slot back (its thread ended).
pub fn give_back(index: u32) {
    if let Ok(mut a) = ALLOC.lock() {
        release(&mut a, index);
    }
}

/// Give back the slot of thread `tid`, if it has one (the thread ends;
/// whoever registered it).
pub fn give_back_tid(tid: i32) {
    if let Ok(mut a) = ALLOC.lock() {
        if let Some(i) = a.by_tid.get(&tid).copied() {
            release(&mut a, i);
        }
    }
}

/// `give_back` under the allocation lock. A slot is released once: a
/// second call finds it not live and does nothing (so it cannot enter the
/// free list twice).
fn release(a: &mut Alloc, index: u32) {
    let Some(s) = get(index) else { return };
    let tid = s.tid();
    if a.by_tid.get(&tid) == Some(&index) {
        a.by_tid.remove(&tid);
    }
    if !s.live.swap(false, Ordering::AcqRel) {
        return;
    }
    s.gen.fetch_add(1, Ordering::AcqRel);
    let t = s.timer.swap(-1, Ordering::AcqRel);
    if t >= 0 {
        // SAFETY: t is a timer this module created and nobody else deletes
        // (the swap above took it out of the slot).
        unsafe { libc::timer_delete(t as usize as libc::timer_t) };
    }
    a.free.push(index);
}

/// Does the slot's timer still measure a thread that exists? A CPU-time
/// timer outlives its thread; setting it (here: to what it is now) fails
/// with ESRCH once the thread is gone, also when its id was reused.
fn timer_has_thread(s: &Slot) -> bool {
    let t = s.timer.load(Ordering::Acquire);
    if t < 0 {
        return false;
    }
    let t = t as usize as libc::timer_t;
    // SAFETY: all-zero is a valid itimerspec; t is a live timer of ours
    // (the caller holds the allocation lock, so nobody deletes it now).
    let mut now: libc::itimerspec = unsafe { std::mem::zeroed() };
    if unsafe { libc::timer_gettime(t, &mut now) } != 0 {
        return false;
    }
    // timer_gettime gives the time left to the next expiry: setting that
    // back keeps the timer's course (a disarmed one stays disarmed).
    // SAFETY: as above; `now` is a valid itimerspec.
    unsafe { libc::timer_settime(t, 0, &now, std::ptr::null_mut()) == 0 }
}

/// Arm (period > 0) or disarm (0) a slot's timer.
pub fn set_period(s: &Slot, period_ns: u64) -> Result<(), String> {
    let t = s.timer.load(Ordering::Acquire);
    if t < 0 {
        return Ok(());
    }
    let ts = libc::timespec {
        tv_sec: (period_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (period_ns % 1_000_000_000) as libc::c_long,
    };
    let spec = libc::itimerspec {
        it_interval: ts,
        it_value: ts,
    };
    // SAFETY: t is a live timer of ours (a stale id after a concurrent
    // give_back only makes the call fail with EINVAL); spec is valid.
    let r =
        unsafe { libc::timer_settime(t as usize as libc::timer_t, 0, &spec, std::ptr::null_mut()) };
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ESRCH) {
        // The thread ended without its end being seen (no session ran
        // then): its slot goes, as its end would have given it back.
        if let Ok(mut a) = ALLOC.lock() {
            if let Some(i) = a.by_tid.get(&s.tid()).copied() {
                if get(i).is_some_and(|x| std::ptr::eq(x, s)) {
                    release(&mut a, i);
                }
            }
        }
        return Ok(());
    }
    Err(format!("timer_settime: {e}"))
}

/// A timer on thread `tid`'s CPU clock that signals that thread with
/// `value` (SIGEV_THREAD_ID: the signal goes to the thread that used the
/// CPU, not to any thread of the process).
fn create_timer(tid: i32, value: u64) -> Result<i64, String> {
    // SAFETY: all-zero is a valid sigevent; we set the fields we use.
    let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
    sev.sigev_notify = libc::SIGEV_THREAD_ID;
    sev.sigev_signo = SIGNAL;
    sev.sigev_value = libc::sigval {
        sival_ptr: value as usize as *mut libc::c_void,
    };
    sev.sigev_notify_thread_id = tid;
    let mut timer: libc::timer_t = std::ptr::null_mut();
    // SAFETY: valid sigevent and out-pointer; the clock id is the CPU
    // clock of a thread of this process (glibc's own encoding).
    let r = unsafe { libc::timer_create(thread_cpu_clock(tid), &mut sev, &mut timer) };
    if r == 0 {
        Ok(timer as usize as i64)
    } else {
        Err(format!(
            "timer_create on the thread's CPU clock: {}",
            std::io::Error::last_os_error()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_values_carry_slot_and_generation_and_are_recognised() {
        let v = signal_value(123_456, 0x1_0007);
        assert_eq!(parse_signal_value(v), Some((123_456, 7)));
        assert_eq!(parse_signal_value(42), None);
        assert_eq!(parse_signal_value(v ^ (1 << 60)), None);
    }

    #[test]
    fn a_reused_slot_ignores_the_old_generation() {
        // SAFETY (test): gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let i = take(tid, 7, std::ptr::null_mut(), true).expect("timer_create works here");
        let s = get(i).unwrap();
        let old = signal_value(i, s.gen.load(Ordering::Relaxed));
        assert!(by_signal_value(old).is_some());
        give_back(i);
        assert!(by_signal_value(old).is_none(), "freed slot");
        let j = take(tid, 8, std::ptr::null_mut(), true).unwrap();
        if j == i {
            assert!(
                by_signal_value(old).is_none(),
                "slot reused: old generation refused"
            );
        }
        let now = signal_value(j, get(j).unwrap().gen.load(Ordering::Relaxed));
        assert_eq!(
            by_signal_value(now).unwrap().serial.load(Ordering::Relaxed),
            8
        );
        give_back(j);
    }
}
