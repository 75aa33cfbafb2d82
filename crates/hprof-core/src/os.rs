//! Safe wrappers over the C library facts the agent and the tool share.
//! `format` forbids `unsafe`, so what it needs from libc is asked here.

/// Seconds east of UTC of local time at `unix_secs` (0 if unknown): the
/// offset the text format's `ctime()` dates are printed in. The last
/// second asked for is remembered: glibc's `localtime_r` serialises its
/// callers on one process-wide lock, and every record the agent stamps
/// asks (a thousand threads ending together queued on it: issue 27 item
/// 13). The offset is a function of the second, so the cache is exact.
pub fn local_utc_offset(unix_secs: i64) -> i32 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let cached = LAST.load(Ordering::Relaxed);
    if let Some(offset) = unpack_offset(cached, unix_secs) {
        return offset;
    }
    let offset = ask_utc_offset(unix_secs);
    if let Some(packed) = pack_offset(unix_secs, offset) {
        LAST.store(packed, Ordering::Relaxed);
    }
    offset
}

/// Bits of [`local_utc_offset`]'s cache holding the offset (biased).
const OFFSET_BITS: u32 = 24;
const OFFSET_BIAS: i64 = 1 << (OFFSET_BITS - 1);

/// A second and its offset in one word (the second plus one, so that 0
/// means empty); None for what does not fit (before 1970, past year
/// 500 000, an offset beyond ±97 days), which is then never cached.
fn pack_offset(unix_secs: i64, offset: i32) -> Option<u64> {
    let secs = u64::try_from(unix_secs).ok()?.checked_add(1)?;
    let biased = u64::try_from(i64::from(offset) + OFFSET_BIAS).ok()?;
    (secs < 1 << (64 - OFFSET_BITS) && biased < 1 << OFFSET_BITS)
        .then_some(secs << OFFSET_BITS | biased)
}

/// The cached offset, if `packed` holds second `unix_secs`.
fn unpack_offset(packed: u64, unix_secs: i64) -> Option<i32> {
    let secs = u64::try_from(unix_secs).ok()?.checked_add(1)?;
    (packed != 0 && packed >> OFFSET_BITS == secs)
        .then(|| ((packed & ((1 << OFFSET_BITS) - 1)) as i64 - OFFSET_BIAS) as i32)
}

fn ask_utc_offset(unix_secs: i64) -> i32 {
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
    // Through syscall(2), not glibc's wrapper (glibc 2.27+): the release
    // build links against glibc 2.17 (docs/release.md).
    // SAFETY: `off` and `dst_off` live on this stack frame for the call
    // (a null output offset means the file position); both descriptors
    // are open while borrowed; the kernel reads and writes nothing else.
    let n = unsafe {
        libc::syscall(
            libc::SYS_copy_file_range,
            src.as_raw_fd(),
            &mut off as *mut libc::loff_t,
            dst.as_raw_fd(),
            dst_ptr,
            len,
            0u32,
        )
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
/// cannot. Called through syscall(2): the C library's wrapper is younger
/// than the oldest C library the agent supports.
pub fn rename_exchange(a: &std::path::Path, b: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let ca = std::ffi::CString::new(a.as_os_str().as_bytes())?;
    let cb = std::ffi::CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both strings are NUL-terminated and live for the call; the
    // kernel only reads them; the other arguments are integers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
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

/// Fill `buf` with random bytes from the kernel: getrandom(2) (through
/// syscall(2), as for renameat2), else /dev/urandom.
pub fn random_bytes(buf: &mut [u8]) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: the kernel writes at most `rest.len()` bytes into `rest`,
        // which is borrowed mutably for the call.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getrandom,
                rest.as_mut_ptr() as *mut libc::c_void,
                rest.len(),
                0,
            )
        };
        if n > 0 {
            done += n as usize;
            continue;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        // A kernel without getrandom (before 3.17), or a filter refusing it.
        use std::io::Read;
        return std::fs::File::open("/dev/urandom")?.read_exact(rest);
    }
    Ok(())
}

/// `n` random bytes from the kernel, as lowercase hex.
pub fn random_hex(n: usize) -> std::io::Result<String> {
    let mut b = vec![0u8; n];
    random_bytes(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Take an exclusive flock(2) on `f` without waiting: `Ok(false)` when
/// another open file holds one (the lock goes with the process, however
/// it ends).
pub fn try_lock_exclusive(f: &impl std::os::unix::io::AsRawFd) -> std::io::Result<bool> {
    loop {
        // SAFETY: flock only takes a descriptor, open while `f` is borrowed,
        // and integer flags.
        let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(e),
        }
    }
}

/// Whether a process `pid` exists (seen from this process's PID
/// namespace): kill(2) with signal 0 sends nothing.
pub fn process_exists(pid: u32) -> bool {
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if p <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(p, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Asks the kernel to back the whole pages within `mem` with transparent
/// huge pages (madvise(2) `MADV_HUGEPAGE`) where the system allows it
/// ("madvise" mode, the common default). For the heap analyser's arrays of
/// hundreds of MB, filled once a phase: 512 times fewer page faults, and
/// mapping and unmapping them costs a fraction (docs/heap-analyser.md,
/// "Performance"). A hint only: errors are ignored.
pub fn prefer_huge_pages<T>(mem: &[T]) {
    const PAGE: usize = 4096;
    let start = (mem.as_ptr() as usize).next_multiple_of(PAGE);
    let end = (mem.as_ptr() as usize + std::mem::size_of_val(mem)) & !(PAGE - 1);
    if end > start {
        // SAFETY: MADV_HUGEPAGE changes only how the kernel backs pages of
        // this process's own memory (the borrowed range, rounded inward to
        // whole pages), never their contents.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

/// The effective user ID of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// Remove the entry `name` (not a directory) of the directory open as
/// `dir`, by that descriptor (unlinkat(2)): a rename of the directory
/// meanwhile cannot make it remove anything elsewhere.
pub fn unlink_at(dir: &std::fs::File, name: &std::ffi::OsStr) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    let c = std::ffi::CString::new(name.as_bytes())?;
    // SAFETY: the string is NUL-terminated and lives for the call; the
    // descriptor is open while `dir` is borrowed.
    let r = unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Open the directory `name` of the directory `parent` (or of the current
/// one), never through a symlink at `name`.
pub fn open_dir_at(
    parent: Option<&std::fs::File>,
    name: &std::ffi::OsStr,
) -> std::io::Result<std::fs::File> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::{AsRawFd, FromRawFd};
    let c = std::ffi::CString::new(name.as_bytes())?;
    let at = parent.map_or(libc::AT_FDCWD, |p| p.as_raw_fd());
    // SAFETY: the string is NUL-terminated and lives for the call; `at` is
    // AT_FDCWD or a descriptor open while `parent` is borrowed.
    let fd = unsafe {
        libc::openat(
            at,
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Append `len` bytes of `file` from `offset` to `buf` (fewer at the end
/// of the file), read straight into its spare capacity: the bytes are not
/// first filled with zeros, which a heap dump copied through a buffer
/// would pay once per byte. Returns the bytes appended.
pub fn read_at_append(
    file: &std::fs::File,
    buf: &mut Vec<u8>,
    len: usize,
    offset: u64,
) -> std::io::Result<usize> {
    use std::os::unix::io::AsRawFd;
    buf.reserve(len);
    let mut done = 0usize;
    while done < len {
        let spare = buf.spare_capacity_mut();
        let want = (len - done).min(spare.len());
        let at = off_t(offset + done as u64)?;
        // SAFETY: the kernel writes at most `want` bytes at the start of
        // the spare capacity, which `reserve` made at least `len - done`
        // bytes long; the descriptor is open while `file` is borrowed.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                spare.as_mut_ptr() as *mut libc::c_void,
                want,
                at,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        // SAFETY: the kernel initialised the first `n` (<= `want`) bytes
        // of the spare capacity.
        unsafe { buf.set_len(buf.len() + n as usize) };
        done += n as usize;
    }
    Ok(done)
}

/// Handle SIGINT, SIGTERM and SIGHUP on a thread of their own: each one
/// that comes calls `handler` with its number, and when `handler` answers
/// false the process ends as that signal would have (its exit status says
/// so). No code runs in a signal handler: the signals are blocked in this
/// thread and the threads it starts from now on, and one thread waits for
/// them, so call this before any other thread starts. Programs started
/// afterwards get the usual mask back (the standard library resets it in
/// the child).
pub fn on_termination(
    mut handler: impl FnMut(libc::c_int) -> bool + Send + 'static,
) -> Result<(), String> {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise and
    // fill it; pthread_sigmask only reads it.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(format!(
                "cannot block the termination signals: {}",
                std::io::Error::from_raw_os_error(rc)
            ));
        }
        set
    };
    std::thread::Builder::new()
        .name("termination-signals".into())
        .spawn(move || loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is initialised; sigwait writes the signal into
            // `sig`.
            if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
                return;
            }
            if handler(sig) {
                continue;
            }
            // SAFETY: restoring the default action and unblocking the
            // signal in this thread, then raising it, ends the process as
            // the signal would have.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                let mut one: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut one);
                libc::sigaddset(&mut one, sig);
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
                libc::raise(sig);
            }
            return;
        })
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_offset_cache_holds_one_second_and_its_offset() {
        for (secs, offset) in [
            (0, 0),
            (1_764_300_000, 3600),
            (1_764_300_001, -36_000),
            (5, -50_400),
        ] {
            let packed = pack_offset(secs, offset).unwrap();
            assert_eq!(unpack_offset(packed, secs), Some(offset));
            assert_eq!(unpack_offset(packed, secs + 1), None);
            assert_eq!(unpack_offset(packed, secs - 1), None);
        }
        // Empty, and what is never cached.
        assert_eq!(unpack_offset(0, 0), None);
        assert_eq!(pack_offset(-1, 0), None);
        assert_eq!(pack_offset(1 << 40, 0), None);
        assert_eq!(pack_offset(1, 1 << 23), None);
        assert_eq!(unpack_offset(pack_offset(1, 0).unwrap(), -1), None);
    }

    #[test]
    fn cached_utc_offset_is_what_the_c_library_says() {
        for secs in [1_764_300_000, 1_764_300_000, 1_711_846_800, 0] {
            assert_eq!(local_utc_offset(secs), ask_utc_offset(secs));
        }
    }
}
