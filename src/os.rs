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
