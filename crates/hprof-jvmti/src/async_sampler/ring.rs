//! The ring the signal handler writes samples into: preallocated once,
//! lock-free on the producer side (any number of threads, each inside its
//! own signal handler), drained by one consumer at a time on a normal
//! thread (the caller holds the drain lock in `super`).
//!
//! A slot is FREE, BUSY (a handler owns it and is filling it) or READY.
//! A producer takes the slot its ticket names with one compare-and-swap
//! FREE → BUSY (a few tickets in a row are tried when slots are still
//! occupied; then the sample is dropped and counted); it fills the slot and
//! publishes it with a release store READY. The consumer takes READY slots
//! (acquire), reads them and stores FREE. Order does not matter: a sample
//! is a count on a trace. Nothing here allocates, locks or can panic on the
//! producer side.

use super::sys::AsgctFrame;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};

const FREE: u32 = 0;
const BUSY: u32 = 1;
const READY: u32 = 2;

/// Tickets a producer tries before it drops its sample.
const TRIES: usize = 4;

/// One sample's header.
struct Meta {
    state: AtomicU32,
    /// The thread's serial (agent thread table).
    serial: AtomicU32,
    /// CPU intervals this sample stands for (1 + timer overruns, ...).
    weight: AtomicU32,
    /// AsyncGetCallTrace's `num_frames`: frames written, or its error code
    /// (negative); [`NO_STACK`] when no stack was asked for.
    code: AtomicI32,
    /// How the stack was found (`recover::How`), and the interrupted
    /// program counter when it was found from the caller.
    how: AtomicU32,
    pc: AtomicU64,
}

/// A published sample's header, as the consumer sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub serial: u32,
    pub weight: u32,
    pub code: i32,
    pub how: u32,
    pub pc: u64,
}

/// `code` of a sample taken without a stack (safepoint mode: the sampler
/// thread fetches the stack itself).
pub const NO_STACK: i32 = i32::MIN;

pub struct Ring {
    meta: Box<[Meta]>,
    /// `meta.len() * frames_per_slot` frames; slot `i` owns
    /// `[i * frames_per_slot, (i + 1) * frames_per_slot)`.
    frames: Box<[UnsafeCell<AsgctFrame>]>,
    frames_per_slot: usize,
    mask: usize,
    next_ticket: AtomicUsize,
    /// READY slots not yet taken: the consumer skips its scan at 0.
    pending: AtomicUsize,
    /// Where the consumer's next scan starts: the slot after the last one
    /// it took. Producers take tickets in order, so what they published
    /// since lies just after it (consumer-only; atomic only to share the
    /// ring).
    read_from: AtomicUsize,
}

// SAFETY: the frames of a slot are written only by the producer that owns
// the slot (state BUSY, won by compare-and-swap) and read only by the
// consumer after an acquire load of READY; the release store that publishes
// READY orders the writes before the read. No two parties touch a slot's
// frames at the same time.
unsafe impl Sync for Ring {}
// SAFETY: as above; the ring owns plain data.
unsafe impl Send for Ring {}

/// A slot a producer owns until it publishes it.
pub struct Claim<'r> {
    ring: &'r Ring,
    index: usize,
}

impl Ring {
    /// `slots` is rounded up to a power of two (at least 2).
    pub fn new(slots: usize, frames_per_slot: usize) -> Ring {
        let n = slots.max(2).next_power_of_two();
        let frames_per_slot = frames_per_slot.max(1);
        let meta = (0..n)
            .map(|_| Meta {
                state: AtomicU32::new(FREE),
                serial: AtomicU32::new(0),
                weight: AtomicU32::new(0),
                code: AtomicI32::new(0),
                how: AtomicU32::new(0),
                pc: AtomicU64::new(0),
            })
            .collect();
        let frames = (0..n * frames_per_slot)
            .map(|_| UnsafeCell::new(AsgctFrame::default()))
            .collect();
        Ring {
            meta,
            frames,
            frames_per_slot,
            mask: n - 1,
            next_ticket: AtomicUsize::new(0),
            pending: AtomicUsize::new(0),
            read_from: AtomicUsize::new(0),
        }
    }

    pub fn frames_per_slot(&self) -> usize {
        self.frames_per_slot
    }

    pub fn slots(&self) -> usize {
        self.meta.len()
    }

    /// Take a free slot (producer side: async-signal-safe, no allocation).
    pub fn claim(&self) -> Option<Claim<'_>> {
        for _ in 0..TRIES {
            let i = self.next_ticket.fetch_add(1, Ordering::Relaxed) & self.mask;
            let m = self.meta.get(i)?;
            if m.state
                .compare_exchange(FREE, BUSY, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Some(Claim {
                    ring: self,
                    index: i,
                });
            }
        }
        None
    }

    /// Take every published sample (consumer side; one consumer at a time).
    /// `f` gets its header and frames; frames are valid only for `code > 0`
    /// (the first `code` of them).
    ///
    /// The scan starts after the slot last taken and ends once it has taken
    /// as many samples as were pending when it began: a pass every few
    /// milliseconds reads the few slots filled since, not the whole ring
    /// (8192 slots at the default depth, whose scan on every pass cost the
    /// sampler thread more than the samples). A sample published behind the
    /// cursor (its producer took its ticket before the last scan and its
    /// slot after) is found by going round, at most once per call.
    pub fn drain(&self, mut f: impl FnMut(Header, &[AsgctFrame])) -> usize {
        let want = self.pending.load(Ordering::Acquire);
        if want == 0 {
            return 0;
        }
        let n = self.meta.len();
        let from = self.read_from.load(Ordering::Relaxed) & self.mask;
        let mut taken = 0;
        let mut scratch: Vec<AsgctFrame> = Vec::with_capacity(self.frames_per_slot);
        for k in 0..n {
            if taken == want {
                break;
            }
            let i = (from + k) & self.mask;
            let Some(m) = self.meta.get(i) else { break };
            if m.state.load(Ordering::Acquire) != READY {
                continue;
            }
            let code = m.code.load(Ordering::Relaxed);
            scratch.clear();
            if code > 0 {
                let n = (code as usize).min(self.frames_per_slot);
                let start = i * self.frames_per_slot;
                for cell in &self.frames[start..start + n] {
                    // SAFETY: the slot is READY: its producer published the
                    // frames (release/acquire above) and no producer writes
                    // a READY slot; we are the only consumer.
                    scratch.push(unsafe { *cell.get() });
                }
            }
            f(
                Header {
                    serial: m.serial.load(Ordering::Relaxed),
                    weight: m.weight.load(Ordering::Relaxed),
                    code,
                    how: m.how.load(Ordering::Relaxed),
                    pc: m.pc.load(Ordering::Relaxed),
                },
                &scratch,
            );
            m.state.store(FREE, Ordering::Release);
            self.pending.fetch_sub(1, Ordering::AcqRel);
            self.read_from.store(i + 1, Ordering::Relaxed);
            taken += 1;
        }
        taken
    }
}

impl Claim<'_> {
    /// Where AsyncGetCallTrace may write this slot's frames
    /// ([`capacity`](Self::capacity) of them).
    pub fn frames_ptr(&self) -> *mut AsgctFrame {
        // Always in bounds (index < slots and `frames.len() == slots *
        // frames_per_slot`); `get` keeps even a broken invariant from
        // panicking inside a signal handler.
        self.ring
            .frames
            .get(self.index * self.ring.frames_per_slot)
            .map_or(std::ptr::null_mut(), |c| c.get())
    }

    pub fn capacity(&self) -> usize {
        self.ring.frames_per_slot
    }

    /// Fill the header and make the sample visible to the consumer.
    pub fn publish(self, h: Header) {
        let Some(m) = self.ring.meta.get(self.index) else {
            return;
        };
        m.serial.store(h.serial, Ordering::Relaxed);
        m.weight.store(h.weight, Ordering::Relaxed);
        m.code.store(h.code, Ordering::Relaxed);
        m.how.store(h.how, Ordering::Relaxed);
        m.pc.store(h.pc, Ordering::Relaxed);
        self.ring.pending.fetch_add(1, Ordering::AcqRel);
        m.state.store(READY, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(serial: u32, weight: u32, code: i32) -> Header {
        Header {
            serial,
            weight,
            code,
            how: 0,
            pc: 0,
        }
    }

    fn write(c: &Claim<'_>, frames: &[(i32, usize)]) {
        for (k, &(line, m)) in frames.iter().enumerate() {
            // SAFETY (test): the claim owns the slot; k < capacity.
            unsafe {
                *c.frames_ptr().add(k) = AsgctFrame {
                    lineno: line,
                    method_id: m as *mut _,
                };
            }
        }
    }

    #[test]
    fn published_samples_come_out_once_with_their_frames() {
        let r = Ring::new(8, 3);
        let c = r.claim().unwrap();
        write(&c, &[(5, 0x10), (7, 0x20)]);
        c.publish(header(200_001, 2, 2));
        let c = r.claim().unwrap();
        c.publish(Header {
            how: 1,
            pc: 0x7f00_1234,
            ..header(200_002, 1, -9)
        });
        let mut seen = Vec::new();
        assert_eq!(
            r.drain(|h, f| seen.push((
                h.serial,
                h.weight,
                h.code,
                (h.how, h.pc),
                f.iter()
                    .map(|x| (x.lineno, x.method_id as usize))
                    .collect::<Vec<_>>()
            ))),
            2
        );
        seen.sort();
        assert_eq!(
            seen,
            vec![
                (200_001, 2, 2, (0, 0), vec![(5, 0x10), (7, 0x20)]),
                (200_002, 1, -9, (1, 0x7f00_1234), vec![]),
            ]
        );
        assert_eq!(r.drain(|_, _| panic!("drained twice")), 0);
    }

    #[test]
    fn a_sample_published_behind_the_cursor_is_found_by_going_round() {
        let r = Ring::new(8, 1);
        let late = r.claim().unwrap(); // slot 0, published after the next drain
        for serial in 1..=3 {
            r.claim().unwrap().publish(header(serial, 1, NO_STACK));
        }
        let mut seen = Vec::new();
        assert_eq!(r.drain(|h, _| seen.push(h.serial)), 3);
        late.publish(header(9, 1, NO_STACK));
        // Laps of the ring later, still once each.
        for round in 0..20u32 {
            r.claim().unwrap().publish(header(100 + round, 1, NO_STACK));
            r.drain(|h, _| seen.push(h.serial));
        }
        let mut want: Vec<u32> = (1..=3).chain([9]).chain(100..120).collect();
        seen.sort_unstable();
        want.sort_unstable();
        assert_eq!(seen, want);
        assert_eq!(r.drain(|_, _| panic!("nothing is left")), 0);
    }

    #[test]
    fn a_full_ring_drops_instead_of_overwriting() {
        let r = Ring::new(4, 1);
        let claims: Vec<_> = (0..4).map(|_| r.claim().expect("free slot")).collect();
        assert!(r.claim().is_none(), "all slots busy");
        for (i, c) in claims.into_iter().enumerate() {
            c.publish(header(i as u32, 1, NO_STACK));
        }
        assert!(r.claim().is_none(), "all slots ready, none drained");
        let mut n = 0;
        r.drain(|h, _| {
            assert_eq!(h.code, NO_STACK);
            n += 1
        });
        assert_eq!(n, 4);
        assert!(r.claim().is_some());
    }

    #[test]
    fn concurrent_producers_and_one_consumer_lose_nothing_they_published() {
        use std::sync::atomic::AtomicU64;
        use std::sync::Arc;
        let r = Arc::new(Ring::new(64, 2));
        let published = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let producers: Vec<_> = (0..4)
            .map(|t| {
                let (r, p) = (r.clone(), published.clone());
                std::thread::spawn(move || {
                    for i in 0..20_000u32 {
                        if let Some(c) = r.claim() {
                            write(&c, &[(i as i32, t + 1), (t as i32, i as usize)]);
                            c.publish(header(t as u32, 1, 2));
                            p.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        let consumer = {
            let (r, stop) = (r.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut got = 0u64;
                loop {
                    let done = stop.load(Ordering::Acquire);
                    r.drain(|h, f| {
                        assert_eq!(h.code, 2);
                        // Frames belong to the sample they came with.
                        assert_eq!(f[0].method_id as usize, h.serial as usize + 1);
                        assert_eq!(f[1].lineno, h.serial as i32);
                        got += 1;
                    });
                    if done {
                        return got;
                    }
                }
            })
        };
        for p in producers {
            p.join().unwrap();
        }
        stop.store(true, Ordering::Release);
        let got = consumer.join().unwrap();
        assert_eq!(got, published.load(Ordering::Relaxed));
        assert!(got > 0);
    }
}
