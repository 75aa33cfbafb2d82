//! Safe wrappers over the C library facts the agent and the tool share.
//! `format` forbids `unsafe`, so what it needs from libc is asked here.

/// Seconds east of UTC of local time at `unix_secs` (0 if unknown): the
/// offset the text format's `ctime()` dates are printed in.
pub fn local_utc_offset(unix_secs: i64) -> i32 {
    let t: libc::time_t = unix_secs as libc::time_t;
    // SAFETY: all-zero is a valid `tm`; localtime_r only writes into it and
    // reads `t`; both live on this stack frame for the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::localtime_r(&t, &mut tm) };
    if r.is_null() {
        0
    } else {
        tm.tm_gmtoff as i32
    }
}

/// Frees the blocks of `len` bytes of `file` from `offset` (they read as
/// zeros afterwards; the file keeps its size). Fails on filesystems that
/// cannot do it (EOPNOTSUPP).
pub fn punch_hole(file: &std::fs::File, offset: u64, len: u64) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(std::io::ErrorKind::InvalidInput.into());
    };
    // SAFETY: fallocate only reads its integer arguments; the descriptor is
    // open for as long as `file` is borrowed.
    let r = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            off,
            n,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn off_t(v: u64) -> std::io::Result<libc::off_t> {
    libc::off_t::try_from(v).map_err(|_| std::io::ErrorKind::InvalidInput.into())
}

/// Copy up to `len` bytes of `src` from `*offset` (advanced by what was
/// copied) to `dst`, at `*dst_offset` (advanced likewise) or else at its
/// file position, inside the kernel (copy_file_range(2)); 0 at the end of
/// `src`.
pub fn copy_file_range(
    src: &std::fs::File,
    offset: &mut u64,
    dst: &std::fs::File,
    dst_offset: Option<&mut u64>,
    len: usize,
) -> std::io::Result<usize> {
    use std::os::unix::io::AsRawFd;
    let mut off: libc::loff_t = off_t(*offset)?;
    let mut dst_off: Option<libc::loff_t> = match &dst_offset {
        Some(o) => Some(off_t(**o)?),
        None => None,
    };
    let dst_ptr = dst_off
        .as_mut()
        .map_or(std::ptr::null_mut(), |o| o as *mut libc::loff_t);
    // SAFETY: `off` and `dst_off` live on this stack frame for the call
    // (a null output offset means the file position); both descriptors
    // are open while borrowed; the kernel reads and writes nothing else.
    let n = unsafe {
        libc::copy_file_range(src.as_raw_fd(), &mut off, dst.as_raw_fd(), dst_ptr, len, 0)
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    *offset = off as u64;
    if let (Some(o), Some(d)) = (dst_offset, dst_off) {
        *o = d as u64;
    }
    Ok(n as usize)
}

/// Copy up to `len` bytes of `src` from `*offset` (advanced by what was
/// sent) to the socket `dst`, inside the kernel (sendfile(2)); 0 at the
/// end of `src`. A socket with a send timeout fails with WouldBlock when
/// it expires before any byte went.
pub fn sendfile(
    dst: &impl std::os::unix::io::AsRawFd,
    src: &std::fs::File,
    offset: &mut u64,
    len: usize,
) -> std::io::Result<usize> {
    use std::os::unix::io::AsRawFd;
    let mut off: libc::off_t = off_t(*offset)?;
    // SAFETY: `off` lives on this stack frame for the call; both
    // descriptors are open while borrowed.
    let n = unsafe { libc::sendfile(dst.as_raw_fd(), src.as_raw_fd(), &mut off, len) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    *offset = off as u64;
    Ok(n as usize)
}

/// Swap the names `a` and `b` (both must exist) in one step
/// (renameat2(2) RENAME_EXCHANGE); fails with EINVAL on filesystems that
/// cannot.
pub fn rename_exchange(a: &std::path::Path, b: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let ca = std::ffi::CString::new(a.as_os_str().as_bytes())?;
    let cb = std::ffi::CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both strings are NUL-terminated and live for the call; the
    // kernel only reads them.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The process's effective user ID (who owns the files it creates).
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
