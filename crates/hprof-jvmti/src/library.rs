//! Keeping the agent library mapped.
//!
//! When Agent_OnAttach returns an error, JDK 17 and later unload the
//! library (JDK 11 keeps it). An attach that fails half-way may already
//! have started threads running this library's code (the writer, the
//! acceptor) that take a moment to end; unmapping the code under them
//! would crash the JVM. So before an attach starts anything, the library
//! marks itself as never to be unloaded: a refused attach then leaves an
//! idle library in memory, as JDK 11 always does, and a later attach finds
//! it again.

use std::ffi::CStr;
use std::os::raw::c_void;

/// Mark this library RTLD_NODELETE (idempotent).
pub fn pin() -> Result<(), String> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    let here = pin as *const () as *const c_void;
    // SAFETY: dladdr only reads the address and fills `info`, which lives
    // on this frame; the name it returns belongs to the loader.
    if unsafe { libc::dladdr(here, &mut info) } == 0 || info.dli_fname.is_null() {
        return Err("cannot find the agent library's own file name".into());
    }
    // SAFETY: dli_fname is the loader's NUL-terminated name of this
    // library, valid while it is mapped (it is: we run in it). RTLD_NOLOAD
    // only finds the library already loaded and adds RTLD_NODELETE to it;
    // the handle is deliberately never closed.
    let handle = unsafe {
        libc::dlopen(
            info.dli_fname,
            libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
        )
    };
    if handle.is_null() {
        // SAFETY: as above, still mapped.
        let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
        return Err(format!("cannot keep {name} loaded"));
    }
    Ok(())
}
