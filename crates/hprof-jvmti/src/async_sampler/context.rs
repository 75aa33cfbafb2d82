//! The interrupted thread's registers as the kernel saved them for the
//! signal (`ucontext_t`), and walks of AsyncGetCallTrace from another
//! program counter, stack pointer or frame pointer than the saved ones
//! (docs/cpu-samples.md, "Which scope a sample is charged to" and
//! "Failed walks are recovered").
//!
//! AsyncGetCallTrace reads only the program counter, the stack pointer and
//! the frame pointer of the context it is given. A walk from other values
//! gets a copy of the kernel's context with those three changed: the
//! kernel's own context, which the thread resumes from, is never written.
//!
//! x86-64 only; elsewhere [`Regs::of`] gives nothing and every walk starts
//! from the context as it is.

use std::os::raw::c_void;

/// Program counter, stack pointer and frame pointer of a context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regs {
    pub pc: usize,
    pub sp: usize,
    pub fp: usize,
}

#[cfg(target_arch = "x86_64")]
impl Regs {
    /// The registers saved in `ucontext` (the kernel's context of a signal
    /// handled with SA_SIGINFO, or null).
    pub fn of(ucontext: *const c_void) -> Option<Regs> {
        if ucontext.is_null() {
            return None;
        }
        // SAFETY: a non-null third argument of an SA_SIGINFO handler is
        // the kernel's ucontext_t for this signal, readable for the
        // handler's duration.
        let uc = unsafe { &*(ucontext as *const libc::ucontext_t) };
        let g = &uc.uc_mcontext.gregs;
        Some(Regs {
            pc: g[libc::REG_RIP as usize] as usize,
            sp: g[libc::REG_RSP as usize] as usize,
            fp: g[libc::REG_RBP as usize] as usize,
        })
    }

    /// `f` with a copy of `ucontext` whose registers are `self` (the
    /// kernel's context itself is left as it is). Allocates nothing: the
    /// copy lives on the handler's stack.
    pub fn with_context<R>(self, ucontext: *const c_void, f: impl FnOnce(*mut c_void) -> R) -> R {
        // SAFETY: as in `of`; ucontext_t is plain data, so a bitwise copy
        // is a valid value (its pointer to the saved floating-point state
        // still points into the kernel's context, which nothing here
        // reads or writes).
        let mut copy: libc::ucontext_t =
            unsafe { std::ptr::read(ucontext as *const libc::ucontext_t) };
        let g = &mut copy.uc_mcontext.gregs;
        g[libc::REG_RIP as usize] = self.pc as i64;
        g[libc::REG_RSP as usize] = self.sp as i64;
        g[libc::REG_RBP as usize] = self.fp as i64;
        f(&mut copy as *mut libc::ucontext_t as *mut c_void)
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl Regs {
    pub fn of(_ucontext: *const c_void) -> Option<Regs> {
        None
    }

    pub fn with_context<R>(self, ucontext: *const c_void, f: impl FnOnce(*mut c_void) -> R) -> R {
        f(ucontext as *mut c_void)
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn a_walk_from_other_registers_sees_them_and_leaves_the_original_alone() {
        // SAFETY (test): all-zero is a valid ucontext_t.
        let mut uc: libc::ucontext_t = unsafe { std::mem::zeroed() };
        uc.uc_mcontext.gregs[libc::REG_RIP as usize] = 0x1000;
        uc.uc_mcontext.gregs[libc::REG_RSP as usize] = 0x2000;
        uc.uc_mcontext.gregs[libc::REG_RBP as usize] = 0x3000;
        uc.uc_mcontext.gregs[libc::REG_RAX as usize] = 7;
        let p = &uc as *const libc::ucontext_t as *const c_void;
        let r = Regs::of(p).unwrap();
        assert_eq!(
            r,
            Regs {
                pc: 0x1000,
                sp: 0x2000,
                fp: 0x3000
            }
        );
        let moved = Regs {
            pc: 0xfff,
            sp: 0x2008,
            fp: 0x4000,
        };
        let seen = moved.with_context(p, |c| {
            let r = Regs::of(c).unwrap();
            // SAFETY (test): `c` is the copy, alive during the closure.
            let rax = unsafe { (*(c as *const libc::ucontext_t)).uc_mcontext.gregs }
                [libc::REG_RAX as usize];
            (r, rax)
        });
        assert_eq!(seen, (moved, 7));
        assert_eq!(Regs::of(p).unwrap(), r, "the kernel's context is unchanged");
        assert!(Regs::of(std::ptr::null()).is_none());
    }
}
