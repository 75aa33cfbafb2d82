//! One slot per registered Java thread: what signals it after each period
//! of its CPU time (`super::trigger`: a POSIX timer, and once the thread
//! used CPU, a perf event where the kernel allows them) and what the signal
//! handler needs about it (serial, JNI environment, its CPU clock for
//! cpu=times, how much CPU time is owed to the next stack sample).
//!
//! Slots live in chunks that are allocated on normal threads and never
//! freed, published through atomic pointers, so the handler reaches a slot
//! with two loads and never sees freed memory. A slot is reused after its
//! thread ended: its generation changes, and a signal still pending from
//! the old thread (a timer's queued signal can outlive `timer_delete`)
//! carries the old generation and is ignored.
//!
//! A thread has at most one slot: slots are also found by the thread's
//! Linux thread id, so a thread registered twice (by itself at its
//! ThreadStart and by an attach that enumerates the running threads, in
//! either order) keeps one timer, and a thread's end gives its slot back
//! whoever registered it.
//!
//! The handler re-arms the slot's trigger after every signal (a new random
//! period) while normal threads arm, disarm, upgrade, move to another
//! signal or delete it: a slot's `guard` keeps them apart without making
//! the handler wait. The handler marks itself in and leaves the trigger
//! alone when a normal thread holds it; a normal thread takes the guard
//! and waits for a handler already in to leave (one handler run at most).

use super::super::sys::JNIEnv;
use super::{by_fd, signal, sys, trigger};
use std::collections::BTreeMap;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering,
};
use std::sync::Mutex;

const CHUNK: usize = 256;
const MAX_CHUNKS: usize = 4096;
/// Most threads registered at the same time (1 048 576).
pub const MAX_SLOTS: usize = CHUNK * MAX_CHUNKS;

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
    /// Wall-clock sampling: a timer on the monotonic clock that signals
    /// the thread (`trigger::wall`), -1 for none. The CPU-clock timer then
    /// stays disarmed as the slot's tie to its thread.
    wall: AtomicI64,
    /// The signal value of the slot's current generation.
    value: AtomicU64,
    /// The perf event's descriptor, -1 for none.
    fd: AtomicI32,
    /// The thread used CPU while it had no perf event: give it one.
    wants_perf: AtomicBool,
    /// A perf event could not be had for this thread: its timer stays.
    no_perf: AtomicBool,
    /// [`GUARD_HANDLER`] | [`GUARD_NORMAL`].
    guard: AtomicU8,
    /// The thread's CPU time (its CPU clock) at its last signal or arming;
    /// with a wall timer, the monotonic clock's.
    last_cpu_ns: AtomicU64,
    /// State of the slot's random periods.
    rng: AtomicU64,
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
            wall: AtomicI64::new(-1),
            value: AtomicU64::new(0),
            fd: AtomicI32::new(-1),
            wants_perf: AtomicBool::new(false),
            no_perf: AtomicBool::new(false),
            guard: AtomicU8::new(0),
            last_cpu_ns: AtomicU64::new(0),
            rng: AtomicU64::new(0),
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

    /// The perf event's descriptor, if the thread has one.
    pub fn perf_fd(&self) -> Option<i32> {
        let fd = self.fd.load(Ordering::Acquire);
        (fd >= 0).then_some(fd)
    }

    /// The signal handler, on the slot's own thread: CPU time since the
    /// last signal, and the trigger re-armed with a new random period of
    /// mean `mean_ns` (unless a normal thread holds the trigger now: it
    /// arms it itself when done). Async-signal-safe, never waits. Also
    /// notes that a thread without a perf event used CPU.
    pub fn on_signal(&self, mean_ns: u64, rearm: bool) -> u64 {
        let prev = self.guard.fetch_or(GUARD_HANDLER, Ordering::SeqCst);
        let wall = self.wall.load(Ordering::Acquire);
        // A wall timer counts real time since the last signal.
        let now = if wall >= 0 {
            sys::monotonic_ns()
        } else {
            sys::own_cpu_ns()
        };
        let last = self.last_cpu_ns.swap(now, Ordering::Relaxed);
        let elapsed = now.saturating_sub(last);
        if rearm && prev & GUARD_NORMAL == 0 && self.live.load(Ordering::Acquire) {
            let next = trigger::random_period(&self.rng, mean_ns);
            let fd = self.fd.load(Ordering::Acquire);
            if wall >= 0 {
                let _ = trigger::set_timer(wall, next, mean_ns);
            } else if fd >= 0 {
                trigger::set_perf_period(fd, next);
            } else {
                let t = self.timer.load(Ordering::Acquire);
                if t >= 0 {
                    let _ = trigger::set_timer(t, next, mean_ns);
                }
                if trigger::uses_perf() && !self.no_perf.load(Ordering::Relaxed) {
                    self.wants_perf.store(true, Ordering::Release);
                    SOME_WANT_PERF.store(true, Ordering::Release);
                }
            }
        }
        self.guard.fetch_and(!GUARD_HANDLER, Ordering::SeqCst);
        elapsed
    }

    pub fn wants_perf(&self) -> bool {
        self.wants_perf.load(Ordering::Acquire)
    }

    /// Run `f` holding the slot's trigger (normal threads only): no
    /// handler touches it meanwhile.
    fn with_trigger<R>(&self, f: impl FnOnce() -> R) -> R {
        while self.guard.fetch_or(GUARD_NORMAL, Ordering::SeqCst) & GUARD_NORMAL != 0 {
            std::thread::yield_now();
        }
        // A handler that came in before us (on the slot's thread) leaves
        // after one run; one that comes later sees GUARD_NORMAL.
        while self.guard.load(Ordering::SeqCst) & GUARD_HANDLER != 0 {
            std::hint::spin_loop();
        }
        let r = f();
        self.guard.fetch_and(!GUARD_NORMAL, Ordering::SeqCst);
        r
    }
}

/// `Slot::guard`: a signal handler is at the trigger.
const GUARD_HANDLER: u8 = 1;
/// `Slot::guard`: a normal thread holds the trigger.
const GUARD_NORMAL: u8 = 2;

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

/// The slot a perf event's descriptor belongs to, if it is still that
/// thread's event. Async-signal-safe.
pub fn by_fd(fd: i32) -> Option<&'static Slot> {
    let (index, gen) = by_fd::get(fd)?;
    let s = get(index)?;
    (s.live.load(Ordering::Acquire)
        && s.gen.load(Ordering::Acquire) == gen
        && s.fd.load(Ordering::Acquire) == fd)
        .then_some(s)
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
                let chunk = new_chunk().ok_or("slot chunk not built")?;
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
    s.wants_perf.store(false, Ordering::Relaxed);
    s.no_perf.store(false, Ordering::Relaxed);
    // Each slot's periods from their own sequence (never zero: xorshift).
    s.rng.store(
        (u64::from(index) << 32 | u64::from(gen)) ^ 0x9E37_79B9_7F4A_7C15 ^ (tid as u64) << 17,
        Ordering::Relaxed,
    );
    s.value.store(signal_value(index, gen), Ordering::Relaxed);
    match trigger::create_timer(tid, signal::current(), signal_value(index, gen)) {
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

/// A chunk of free slots, built where it lives. `Box::new([...; CHUNK])`
/// built it on the stack first: that gave `take` an 18 KB frame whose
/// stack probes touch four pages at every call, chunk or not; at a new
/// thread's ThreadStart about two of them were not mapped yet (page
/// faults: 2 more per thread started, about 8 µs of CPU a thread).
#[cold]
#[inline(never)]
fn new_chunk() -> Option<Box<Chunk>> {
    let slots: Box<[Slot]> = (0..CHUNK).map(|_| Slot::new()).collect();
    slots.try_into().ok()
}

/// Delete the slot's timer and give the slot back (its thread ended).
pub fn give_back(index: u32) {
    if let Ok(mut a) = ALLOC.lock() {
        release(&mut a, index);
    }
}

/// Give back the slot of thread `tid`, if it has one (the thread ends;
/// whoever registered it). Its trigger is stopped outside the allocation
/// lock: threads ending together (a pool shutting down) would otherwise
/// queue on the lock behind each other's system calls.
pub fn give_back_tid(tid: i32) {
    let retired = match ALLOC.lock() {
        Ok(mut a) => match a.by_tid.get(&tid).copied() {
            Some(i) => retire(&mut a, i).map(|s| (i, s)),
            None => None,
        },
        Err(_) => None,
    };
    if let Some((i, s)) = retired {
        stop_trigger(s);
        if let Ok(mut a) = ALLOC.lock() {
            a.free.push(i);
        }
    }
}

/// `give_back` under the allocation lock. A slot is released once: a
/// second call finds it not live and does nothing (so it cannot enter the
/// free list twice).
fn release(a: &mut Alloc, index: u32) {
    if let Some(s) = retire(a, index) {
        stop_trigger(s);
        a.free.push(index);
    }
}

/// Take slot `index` out of use (under the allocation lock): unmapped
/// from its thread, not live, its generation changed (a signal still
/// queued for it is refused). The caller stops its trigger, then frees it;
/// meanwhile nobody else reaches it (it is neither live nor free). None
/// if it was not live.
fn retire(a: &mut Alloc, index: u32) -> Option<&'static Slot> {
    let s = get(index)?;
    let tid = s.tid();
    if a.by_tid.get(&tid) == Some(&index) {
        a.by_tid.remove(&tid);
    }
    if !s.live.swap(false, Ordering::AcqRel) {
        return None;
    }
    s.gen.fetch_add(1, Ordering::AcqRel);
    Some(s)
}

/// Close a retired slot's perf event and delete its timers.
fn stop_trigger(s: &Slot) {
    s.with_trigger(|| {
        drop_perf(s);
        drop_wall(s);
        let t = s.timer.swap(-1, Ordering::AcqRel);
        if t >= 0 {
            trigger::delete_timer(t);
        }
    });
}

/// Delete the slot's wall timer, if any (the caller holds its trigger).
fn drop_wall(s: &Slot) {
    let w = s.wall.swap(-1, Ordering::AcqRel);
    if w >= 0 {
        trigger::delete_timer(w);
    }
}

/// Arm the slot's wall timer, made on first use (the caller holds its
/// trigger): the CPU-clock timer is disarmed, which also tells whether the
/// thread still exists (ESRCH), and no perf event is kept.
fn arm_wall(s: &Slot, period_ns: u64) -> Result<(), i32> {
    let t = s.timer.load(Ordering::Acquire);
    trigger::set_timer(t, 0, 0)?;
    drop_perf(s);
    let mut w = s.wall.load(Ordering::Acquire);
    if w < 0 {
        w = trigger::create_wall_timer(s.tid(), signal::current(), s.value.load(Ordering::Relaxed))
            .map_err(|_| libc::EAGAIN)?;
        s.wall.store(w, Ordering::Release);
    }
    s.last_cpu_ns.store(sys::monotonic_ns(), Ordering::Relaxed);
    let first = trigger::random_period(&s.rng, period_ns);
    trigger::set_timer(w, first, period_ns)
}

/// Close the slot's perf event, if any (the caller holds its trigger). Its
/// descriptor is unmapped first: a number the program reuses never maps to
/// the slot.
fn drop_perf(s: &Slot) {
    let fd = s.fd.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        by_fd::remove(fd);
        trigger::close_perf(fd);
    }
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

/// Arm (mean period > 0) or disarm (0) a slot's trigger. Arming starts a
/// random period from now and counts the thread's CPU time from now.
pub fn set_period(s: &Slot, period_ns: u64) -> Result<(), String> {
    let r = s.with_trigger(|| {
        let t = s.timer.load(Ordering::Acquire);
        if t < 0 {
            return Ok(());
        }
        if period_ns == 0 {
            if let Some(fd) = s.perf_fd() {
                let _ = trigger::enable_perf(fd, false);
            }
            let w = s.wall.load(Ordering::Acquire);
            if w >= 0 {
                let _ = trigger::set_timer(w, 0, 0);
            }
            return trigger::set_timer(t, 0, 0);
        }
        if trigger::wall() {
            return arm_wall(s, period_ns);
        }
        // Back from wall-clock sampling (a session before this one).
        drop_wall(s);
        s.last_cpu_ns
            .store(sys::thread_cpu_ns(s.tid()), Ordering::Relaxed);
        let first = trigger::random_period(&s.rng, period_ns);
        match s.perf_fd() {
            Some(fd) => {
                trigger::set_perf_period(fd, first);
                if trigger::enable_perf(fd, true).is_err() {
                    // Back to the timer, which is still there.
                    drop_perf(s);
                    s.no_perf.store(true, Ordering::Relaxed);
                    return trigger::set_timer(t, first, period_ns);
                }
                // The timer stays disarmed: it only ties the slot to its
                // thread; an error says the thread has gone.
                trigger::set_timer(t, 0, 0)
            }
            None => trigger::set_timer(t, first, period_ns),
        }
    });
    match r {
        Ok(()) => Ok(()),
        Err(libc::ESRCH) => {
            // The thread ended without its end being seen (no session ran
            // then): its slot goes, as its end would have given it back.
            if let Ok(mut a) = ALLOC.lock() {
                if let Some(i) = a.by_tid.get(&s.tid()).copied() {
                    if get(i).is_some_and(|x| std::ptr::eq(x, s)) {
                        release(&mut a, i);
                    }
                }
            }
            Ok(())
        }
        Err(e) => Err(format!(
            "timer_settime: {}",
            std::io::Error::from_raw_os_error(e)
        )),
    }
}

/// Set when a slot comes to want a perf event (after its own flag), so
/// the sampler's periodic pass looks through the slots only then, not
/// every pass (1000 idle threads made that look a cost per pass).
static SOME_WANT_PERF: AtomicBool = AtomicBool::new(false);

/// Whether a slot may have come to want a perf event since the last call
/// (a caller that gets true looks at every slot's [`Slot::wants_perf`]).
pub fn take_some_want_perf() -> bool {
    SOME_WANT_PERF.swap(false, Ordering::AcqRel)
}

/// Give slot `s`, whose thread used CPU under its POSIX timer, a perf
/// event (perf events in use), armed with `period_ns` if `armed`. False
/// when none could be had: the thread keeps its timer for good.
pub fn give_perf(s: &'static Slot, index: u32, period_ns: u64, armed: bool) -> bool {
    s.wants_perf.store(false, Ordering::Release);
    if !s.is_live() || s.perf_fd().is_some() || s.no_perf.load(Ordering::Relaxed) || trigger::wall()
    {
        return true;
    }
    let gen = s.gen.load(Ordering::Acquire);
    let ok = s.with_trigger(|| {
        // Released (or released and taken again) meanwhile: not ours to
        // change; release drops what it finds under the same guard.
        if !s.is_live() || s.gen.load(Ordering::Acquire) != gen {
            return true;
        }
        let fd = match trigger::open_perf(s.tid(), signal::current(), period_ns.max(1)) {
            Ok(fd) => fd,
            Err(_) => return false,
        };
        if !by_fd::insert(fd, index, gen) {
            trigger::close_perf(fd);
            return false;
        }
        s.fd.store(fd, Ordering::Release);
        if armed {
            let first = trigger::random_period(&s.rng, period_ns);
            trigger::set_perf_period(fd, first);
            if trigger::enable_perf(fd, true).is_err() {
                drop_perf(s);
                return false;
            }
            let t = s.timer.load(Ordering::Acquire);
            if t >= 0 {
                let _ = trigger::set_timer(t, 0, 0);
            }
        }
        true
    });
    if !ok {
        s.no_perf.store(true, Ordering::Relaxed);
    }
    ok
}

/// Close every perf event (the timers are stopped: no descriptor is held
/// while nothing is sampled; a thread that uses CPU after the next start
/// gets a new one).
pub fn drop_all_perf() {
    for_each(|_, s| {
        if s.perf_fd().is_some() {
            s.with_trigger(|| drop_perf(s));
        }
        s.wants_perf.store(false, Ordering::Relaxed);
    });
}

/// Move every slot's trigger to `signal` (the agent's handler moved
/// there): perf events are told the new signal; timers, which cannot
/// change theirs, are made anew (armed as before).
pub fn move_to_signal(signal: libc::c_int, period_ns: u64, armed: bool) {
    let Ok(_a) = ALLOC.lock() else { return };
    let used = _a.used;
    for i in 0..used {
        let Some(s) = get(i) else { continue };
        if !s.is_live() {
            continue;
        }
        s.with_trigger(|| {
            if let Some(fd) = s.perf_fd() {
                if !trigger::set_perf_signal(fd, signal) {
                    drop_perf(s);
                }
            }
            let gen = s.gen.load(Ordering::Acquire);
            let had_wall = s.wall.load(Ordering::Acquire) >= 0;
            if had_wall {
                if let Ok(w) = trigger::create_wall_timer(s.tid(), signal, signal_value(i, gen)) {
                    let old = s.wall.swap(w, Ordering::AcqRel);
                    if old >= 0 {
                        trigger::delete_timer(old);
                    }
                    if armed {
                        let first = trigger::random_period(&s.rng, period_ns);
                        let _ = trigger::set_timer(w, first, period_ns);
                    }
                }
            }
            if let Ok(t) = trigger::create_timer(s.tid(), signal, signal_value(i, gen)) {
                let old = s.timer.swap(t, Ordering::AcqRel);
                if old >= 0 {
                    trigger::delete_timer(old);
                }
                if armed && s.perf_fd().is_none() && !had_wall {
                    let first = trigger::random_period(&s.rng, period_ns);
                    let _ = trigger::set_timer(t, first, period_ns);
                }
            }
        });
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
        let tid = sys::gettid();
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
