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
