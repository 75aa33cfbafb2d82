//! The stack walk of one sample, in the signal handler: AsyncGetCallTrace
//! charged to the scope of the instruction that ran, and when it cannot
//! walk the stack, walks from where the VM or the stack says the caller
//! is (docs/cpu-samples.md, "Which scope a sample is charged to" and
//! "Failed walks are recovered").
//!
//! Everything here is async-signal-safe: register copies on the stack,
//! atomic loads, reads of the interrupted thread's own stack within its
//! bounds, and AsyncGetCallTrace.

use super::super::sys::JNIEnv;
use super::context::Regs;
use super::hotspot::{self, Thread};
use super::sys::code;
use std::os::raw::c_void;

/// How a sample's stack was found (kept with the sample in the ring).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum How {
    /// From the interrupted context.
    Direct = 0,
    /// From the caller: the interrupted code had no frame AsyncGetCallTrace
    /// can walk (a stub, a method's prologue or epilogue); the stack is the
    /// caller's, and the method whose code was interrupted, if known, is
    /// put on top when the sample is taken out of the ring.
    Caller = 1,
    /// From the last Java frame the thread recorded when it entered the
    /// VM, completed as HotSpot completes it.
    Anchor = 2,
}

impl How {
    pub fn from_raw(v: u32) -> How {
        match v {
            1 => How::Caller,
            2 => How::Anchor,
            _ => How::Direct,
        }
    }
}

/// The outcome of a walk: AsyncGetCallTrace's frame count or error code,
/// how the stack was found, and for [`How::Caller`] the interrupted
/// program counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walked {
    pub code: i32,
    pub how: How,
    pub pc: usize,
}

/// Stack slots above the stack pointer searched for the caller's return
/// address (a stub that saved a few registers before it called).
const SCAN_SLOTS: usize = 8;

/// Largest distance from the stack pointer to a frame pointer believed.
const MAX_FRAME: usize = 1 << 16;

/// Walk the interrupted thread's stack. `agct(context)` runs
/// AsyncGetCallTrace on a context and returns its `num_frames`.
pub fn walk(
    env: *mut JNIEnv,
    ucontext: *mut c_void,
    mut agct: impl FnMut(*mut c_void) -> i32,
) -> Walked {
    let direct = |code| Walked {
        code,
        how: How::Direct,
        pc: 0,
    };
    let Some(regs) = Regs::of(ucontext) else {
        return direct(agct(ucontext));
    };
    let n = walk_from(regs, ucontext, &mut agct, true);
    if n > 0 {
        return direct(n);
    }
    let thread = Thread::of(env);
    match n {
        code::UNKNOWN_JAVA | code::NOT_WALKABLE_JAVA => {
            let mut found = None;
            for_each_caller(regs, thread, |caller| {
                if !hotspot::in_code_cache(caller.pc) {
                    return false;
                }
                let m = walk_from(caller, ucontext, &mut agct, false);
                if m > 0 {
                    found = Some(m);
                }
                m > 0
            });
            match found {
                Some(m) => Walked {
                    code: m,
                    how: How::Caller,
                    pc: regs.pc,
                },
                None => direct(n),
            }
        }
        code::UNKNOWN_NOT_JAVA | code::NOT_WALKABLE_NOT_JAVA => match thread {
            Some(t) => from_anchor(t, n, || agct(ucontext)),
            None => direct(n),
        },
        _ => direct(n),
    }
}

/// A thread in the VM (or native code) is walked by AsyncGetCallTrace from
/// the last Java frame it recorded, its frame anchor, not from the
/// interrupted context (`agct` is called with that context anyway). When
/// that fails (`n`):
///
/// * no frame recorded at all: the thread runs no Java code (its state is
///   counted as "no Java frame");
/// * a frame recorded without its program counter (HotSpot's interpreter
///   and stubs call into the VM that way and complete it when they need
///   it): completed as HotSpot completes it, then walked;
/// * a frame the walk cannot start from: a runtime stub that called the
///   VM (C1's stubs, which HotSpot marks as never safe to walk from): the
///   recorded frame is replaced, for one walk, by the stub's caller, found
///   through the stub's frame pointer, and put back.
///
/// Both changes are made only while the thread is in the VM: no other
/// thread then reads its frame anchor.
fn from_anchor(t: Thread, n: i32, mut agct: impl FnMut() -> i32) -> Walked {
    let walked = |code, how| Walked { code, how, pc: 0 };
    if t.anchor_sp() == Some(0) {
        return walked(code::NO_JAVA_FRAME, How::Direct);
    }
    if !t.in_vm() {
        return walked(n, How::Direct);
    }
    let mut n = n;
    let mut how = How::Direct;
    if n == code::UNKNOWN_NOT_JAVA && t.complete_anchor() {
        n = agct();
        how = How::Anchor;
    }
    if n != code::NOT_WALKABLE_NOT_JAVA {
        return walked(n, if n > 0 { how } else { How::Direct });
    }
    let Some(a) = t.anchor() else {
        return walked(n, How::Direct);
    };
    let fp = a.fp;
    if a.sp == 0 || fp % 8 != 0 || fp < a.sp || fp - a.sp > MAX_FRAME || !t.stack_contains(fp, 16) {
        return walked(n, How::Direct);
    }
    // SAFETY: two aligned words inside the thread's own stack (checked),
    // mapped while it lives.
    let (saved_fp, ret) = unsafe {
        (
            std::ptr::read_volatile(fp as *const usize),
            std::ptr::read_volatile((fp + 8) as *const usize),
        )
    };
    if !hotspot::in_code_cache(ret) {
        return walked(n, How::Direct);
    }
    t.set_anchor(Regs {
        pc: ret,
        sp: fp + 16,
        fp: saved_fp,
    });
    let m = agct();
    t.set_anchor(a);
    if m > 0 {
        walked(m, How::Anchor)
    } else {
        walked(n, How::Direct)
    }
}

/// AsyncGetCallTrace from `regs`, first with the program counter moved
/// back by one byte. Compiled code names the inlined method at an
/// instruction by debug records at the *end* of each run of instructions
/// of one scope, and AsyncGetCallTrace takes the first record after the
/// program counter: a sample taken right after the last instruction of a
/// scope (the interrupted program counter is the next instruction's) would
/// be charged to the next scope. From one byte back, the record found is
/// the one that ends where the program counter is: the scope of the
/// instruction that ran. For a return address, that is the call's own
/// record. A program counter that a byte back is outside the code's frame
/// (the first instruction of a method) is tried as it is. `exact`: the
/// registers are the kernel's context (no copy needed for the second try).
fn walk_from(
    regs: Regs,
    ucontext: *mut c_void,
    agct: &mut impl FnMut(*mut c_void) -> i32,
    exact: bool,
) -> i32 {
    let back = Regs {
        pc: regs.pc.wrapping_sub(1),
        ..regs
    };
    let n = back.with_context(ucontext, &mut *agct);
    // Only a walk in Java code depends on the program counter.
    if n > 0 || !(n == code::UNKNOWN_JAVA || n == code::NOT_WALKABLE_JAVA) {
        return n;
    }
    if exact {
        agct(ucontext)
    } else {
        regs.with_context(ucontext, &mut *agct)
    }
}

/// The contexts the caller of the interrupted code may have, most likely
/// first, until `f` accepts one. HotSpot's code without a walkable frame
/// is a method's code before its frame is built or after it is taken down,
/// or a stub:
///
/// 1. nothing pushed since the call (a method's first instructions, its
///    last ones after the frame pointer was restored, frameless stubs such
///    as the vtable, itable and inline-cache stubs and the adapters): the
///    return address is at the stack pointer;
/// 2. the frame pointer pushed (a method's prologue after `push rbp`, its
///    epilogue before `pop rbp`): the return address is one slot up, the
///    caller's frame pointer is the pushed one when the frame pointer was
///    also set to the stack pointer;
/// 3. a frame-pointer frame (stubs that `enter`, the interpreter while it
///    builds a frame): the return address and the caller's frame pointer
///    are next to the frame pointer, and the caller's stack pointer is
///    above them or, for the interpreter, in the slot below;
/// 4. a few registers saved first (runtime stubs): the return address is
///    a few slots up.
///
/// Only the interrupted thread's own stack is read, within its bounds
/// (without known bounds, only the two slots at the stack pointer, which
/// the interrupted code's caller certainly left).
fn for_each_caller(regs: Regs, thread: Option<Thread>, mut f: impl FnMut(Regs) -> bool) {
    let Regs { sp, fp, .. } = regs;
    if sp % 8 != 0 {
        return;
    }
    let readable = |addr: usize, len: usize| match thread {
        Some(t) => t.stack_contains(addr, len),
        None => addr >= sp && addr + len <= sp + 16,
    };
    // SAFETY (each read below): an aligned word inside the interrupted
    // thread's stack (checked by `readable`), which is mapped while the
    // thread lives; the thread is stopped in this handler.
    let word = |addr: usize| unsafe { std::ptr::read_volatile(addr as *const usize) };
    if readable(sp, 16) {
        let at_sp = Regs {
            pc: word(sp),
            sp: sp + 8,
            fp,
        };
        if f(at_sp) {
            return;
        }
        let pushed = Regs {
            pc: word(sp + 8),
            sp: sp + 16,
            fp: if fp == sp { word(sp) } else { fp },
        };
        if f(pushed) {
            return;
        }
    }
    if fp % 8 == 0 && fp > sp && fp - sp <= MAX_FRAME && readable(fp - 8, 24) {
        let framed = Regs {
            pc: word(fp + 8),
            sp: fp + 16,
            fp: word(fp),
        };
        if f(framed) {
            return;
        }
        // The interpreter building a frame: the slot below the frame
        // pointer holds the caller's stack pointer (before the locals were
        // added below the arguments, or the adapter from compiled code
        // moved them).
        let sender_sp = word(fp - 8);
        if sender_sp % 8 == 0
            && sender_sp > fp
            && sender_sp - fp <= MAX_FRAME
            && f(Regs {
                sp: sender_sp,
                ..framed
            })
        {
            return;
        }
    }
    for k in 2..SCAN_SLOTS {
        let at = sp + 8 * k;
        if !readable(at, 8) {
            return;
        }
        if f(Regs {
            pc: word(at),
            sp: at + 8,
            fp,
        }) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates(regs: Regs, thread: Option<Thread>) -> Vec<Regs> {
        let mut v = Vec::new();
        for_each_caller(regs, thread, |r| {
            v.push(r);
            false
        });
        v
    }

    #[test]
    fn without_stack_bounds_only_the_two_slots_at_the_stack_pointer_are_read() {
        let stack = [0x1111usize, 0x2222, 0x3333, 0x4444];
        let sp = stack.as_ptr() as usize;
        let regs = Regs {
            pc: 0x99,
            sp,
            fp: 0x5000,
        };
        assert_eq!(
            candidates(regs, None),
            vec![
                Regs {
                    pc: 0x1111,
                    sp: sp + 8,
                    fp: 0x5000
                },
                Regs {
                    pc: 0x2222,
                    sp: sp + 16,
                    fp: 0x5000
                },
            ]
        );
        // The frame pointer set to the stack pointer after `push rbp`: the
        // caller's is the pushed one.
        let framed = Regs { fp: sp, ..regs };
        assert_eq!(candidates(framed, None)[1].fp, 0x1111);
        // A misaligned stack pointer is not believed.
        assert!(candidates(Regs { sp: sp + 4, ..regs }, None).is_empty());
    }

    #[test]
    fn the_first_accepted_caller_ends_the_search() {
        let stack = [0x1111usize, 0x2222];
        let regs = Regs {
            pc: 0x99,
            sp: stack.as_ptr() as usize,
            fp: 0,
        };
        let mut seen = 0;
        for_each_caller(regs, None, |r| {
            seen += 1;
            r.pc == 0x1111
        });
        assert_eq!(seen, 1);
    }
}
