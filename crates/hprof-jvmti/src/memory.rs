//! Ownership of memory the JVMTI implementation allocates for us.
//!
//! Functions such as GetClassSignature or GetStackTrace hand back buffers the
//! agent must release with `Deallocate`; these guards do it in `Drop`, so no
//! early return or `?` can leak them.

use super::sys::{jlong, jvmtiEnv};
use std::ffi::CStr;
use std::os::raw::{c_char, c_uchar};

/// An array allocated by JVMTI (`count` elements of `T`).
pub struct JvmtiArray<T> {
    env: *mut jvmtiEnv,
    ptr: *mut T,
    len: usize,
}

impl<T> JvmtiArray<T> {
    /// # Safety
    /// `ptr` must be null or a JVMTI allocation from `env` holding `len`
    /// initialised `T`s, owned by nobody else.
    pub(crate) unsafe fn from_raw(env: *mut jvmtiEnv, ptr: *mut T, len: i32) -> Self {
        JvmtiArray {
            env,
            ptr,
            len: if ptr.is_null() {
                0
            } else {
                len.max(0) as usize
            },
        }
    }

    pub fn as_slice(&self) -> &[T] {
        if self.ptr.is_null() {
            &[]
        } else {
            // SAFETY: from_raw's contract: ptr holds len initialised elements
            // and lives until Drop deallocates it.
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
        }
    }
}

impl<T> std::ops::Deref for JvmtiArray<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T> Drop for JvmtiArray<T> {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            deallocate(self.env, self.ptr as *mut c_uchar);
        }
    }
}

/// Copy a JVMTI-allocated, NUL-terminated modified-UTF-8 string into a Rust
/// `String` and release the original. Null gives `None`.
///
/// # Safety
/// `ptr` must be null or a NUL-terminated JVMTI allocation from `env` that
/// nobody else will free.
pub(crate) unsafe fn take_string(env: *mut jvmtiEnv, ptr: *mut c_char) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: caller guarantees a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned();
    deallocate(env, ptr as *mut c_uchar);
    Some(s)
}

pub(crate) fn deallocate(env: *mut jvmtiEnv, mem: *mut c_uchar) {
    if mem.is_null() || env.is_null() {
        return;
    }
    // SAFETY: env is a live JVMTI environment (agent-lifetime pointer) and
    // mem came from its Allocate; Deallocate accepts any such pointer.
    unsafe {
        if let Some(f) = (**env).Deallocate {
            f(env, mem);
        }
    }
}

/// Memory for ClassFileLoadHook's new class bytes must come from JVMTI
/// Allocate; this copies `bytes` into such a buffer.
pub(crate) fn allocate_copy(env: *mut jvmtiEnv, bytes: &[u8]) -> Option<*mut c_uchar> {
    let mut mem: *mut c_uchar = std::ptr::null_mut();
    // SAFETY: env is live; Allocate writes a pointer to a fresh buffer of
    // the requested size into `mem`.
    let err = unsafe { ((**env).Allocate?)(env, bytes.len() as jlong, &mut mem) };
    if err != 0 || mem.is_null() {
        return None;
    }
    // SAFETY: mem has room for bytes.len() bytes and does not overlap bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), mem, bytes.len()) };
    Some(mem)
}

/// Give free heap memory back to the OS (glibc `malloc_trim`): after a
/// heap dump the VM has freed its tag map (hundreds of MB for millions of
/// objects), which glibc would otherwise keep in the process's RSS. A no-op
/// elsewhere.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of the allocator's arenas
    // to the OS; it touches no memory in use and is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}
