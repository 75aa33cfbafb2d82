//! The few C library calls `attach` needs that std does not offer: who we
//! are (effective uid and gid, which HotSpot compares with the socket's and
//! the attach file's owner) and sending a signal to another process.

use std::io;

/// The effective user id of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid takes no arguments, touches no memory of ours and
    // cannot fail (POSIX).
    unsafe { libc::geteuid() }
}

/// The effective group id of this process.
pub fn egid() -> u32 {
    // SAFETY: as geteuid: no arguments, no memory, cannot fail.
    unsafe { libc::getegid() }
}

/// Sends `signal` to process `pid`. Refuses pids that kill() would read
/// as "a process group" or "every process" (0 and negative values), so a
/// damaged number can never signal more than one process.
pub fn send_signal(pid: u32, signal: i32) -> io::Result<()> {
    let Ok(target) = libc::pid_t::try_from(pid) else {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    };
    if target <= 0 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: kill only reads its two integer arguments; a positive pid
    // names exactly one process, and failure is reported through errno.
    let r = unsafe { libc::kill(target, signal) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
