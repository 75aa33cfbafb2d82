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

/// This library's file name as the loader knows it (the path it was
/// loaded from).
fn own_name() -> Result<&'static CStr, String> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    let here = own_name as *const () as *const c_void;
    // SAFETY: dladdr only reads the address and fills `info`, which lives
    // on this frame; the name it returns belongs to the loader.
    if unsafe { libc::dladdr(here, &mut info) } == 0 || info.dli_fname.is_null() {
        return Err("cannot find the agent library's own file name".into());
    }
    // SAFETY: dli_fname is the loader's NUL-terminated name of this
    // library, valid while it is mapped, which is as long as this code
    // runs; once pinned, for the life of the process.
    Ok(unsafe { CStr::from_ptr(info.dli_fname) })
}

/// The path this library was loaded from, for messages.
pub fn own_path() -> Option<String> {
    own_name().ok().map(|n| n.to_string_lossy().into_owned())
}

/// Mark this library RTLD_NODELETE (idempotent).
pub fn pin() -> Result<(), String> {
    let name = own_name()?;
    // SAFETY: `name` is NUL-terminated (above). RTLD_NOLOAD only finds the
    // library already loaded and adds RTLD_NODELETE to it; the handle is
    // deliberately never closed.
    let handle = unsafe {
        libc::dlopen(
            name.as_ptr(),
            libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
        )
    };
    if handle.is_null() {
        return Err(format!("cannot keep {} loaded", name.to_string_lossy()));
    }
    Ok(())
}
