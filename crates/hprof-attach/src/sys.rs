//! The few C library calls `attach` needs that std does not offer: who we
//! are (effective uid and gid, which HotSpot compares with the socket's and
//! the attach file's owner), sending a signal to another process, who is
//! at the other end of a Unix socket, and creating and removing a file by
//! name inside a directory held open, without following a link.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

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

/// Who holds the other end of a connected Unix socket: the process that
/// made its listening socket, as the kernel recorded it (pid as seen from
/// our pid namespace).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    pub pid: u32,
    pub uid: u32,
    pub gid: u32,
}

pub fn peer(socket: &impl AsRawFd) -> io::Result<Peer> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: the descriptor is open for the borrow; getsockopt writes at
    // most `len` bytes into `cred`, which is a ucred of that size.
    let r = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Peer {
        pid: u32::try_from(cred.pid).unwrap_or(0),
        uid: cred.uid,
        gid: cred.gid,
    })
}

/// Identity of a file: device and inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    pub fn of(m: &std::fs::Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        FileId {
            dev: m.dev(),
            ino: m.ino(),
        }
    }
}

/// A directory held open: names are looked up in it, not wherever its
/// path leads by the time of the next call (the path of a process's
/// working directory, /proc/PID/cwd, changes when the process moves).
pub struct Dir(OwnedFd);

impl Dir {
    /// Opens `path`, which must be a directory (a link leading to one is
    /// followed: /proc/PID/cwd is such a link).
    pub fn open(path: &Path) -> io::Result<Dir> {
        let f = File::options()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(path)?;
        Ok(Dir(f.into()))
    }

    /// Owner uid and mode of the directory itself.
    pub fn owner_and_mode(&self) -> io::Result<(u32, u32)> {
        let m = File::from(self.0.try_clone()?).metadata()?;
        use std::os::unix::fs::MetadataExt;
        Ok((m.uid(), m.mode()))
    }

    /// Creates the empty file `name` (mode 0600) here, failing when the
    /// name exists in any form: a file, a directory, a link (which is not
    /// followed). Returns what it created.
    pub fn create_new(&self, name: &str) -> io::Result<FileId> {
        let c = c_name(name)?;
        // SAFETY: the directory descriptor is open for the borrow and `c`
        // is a NUL-terminated name; openat returns a new descriptor we own
        // or -1.
        let fd = unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600 as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a descriptor openat just returned; nobody else owns it.
        let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        Ok(FileId::of(&file.metadata()?))
    }

    /// Removes `name` from this directory if it is still the file `id`
    /// (a name someone put in its place is left alone). True if removed.
    pub fn remove_if(&self, name: &str, id: FileId) -> io::Result<bool> {
        let c = c_name(name)?;
        // SAFETY: an all-zero stat is a valid value of this plain C struct.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: descriptor open for the borrow, `c` NUL-terminated, `st`
        // a stat fstatat may fill.
        let r = unsafe {
            libc::fstatat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        if (st.st_dev, st.st_ino) != (id.dev, id.ino) {
            return Ok(false);
        }
        // SAFETY: as above; unlinkat removes the name (never a directory
        // without AT_REMOVEDIR) in the directory we hold.
        let r = unsafe { libc::unlinkat(self.0.as_raw_fd(), c.as_ptr(), 0) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(true)
    }
}

/// A single path component as a C string.
fn c_name(name: &str) -> io::Result<CString> {
    if name.is_empty() || name.contains('/') {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("hprof-rs-sys-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn create_new_refuses_a_planted_link_and_a_file() {
        let d = scratch("links");
        let target = d.join("victim");
        std::os::unix::fs::symlink(&target, d.join(".attach_pid1")).unwrap();
        std::fs::write(d.join(".attach_pid2"), b"").unwrap();
        let dir = Dir::open(&d).unwrap();
        let e = dir.create_new(".attach_pid1").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EEXIST), "{e}");
        assert!(!target.exists(), "the link was followed");
        let e = dir.create_new(".attach_pid2").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EEXIST), "{e}");
        assert!(dir.create_new("a/b").is_err());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn remove_if_leaves_a_name_put_in_the_files_place() {
        let d = scratch("swap");
        let dir = Dir::open(&d).unwrap();
        let id = dir.create_new("f").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(d.join("f")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // Another file takes the name (made while ours exists, so it
        // cannot have our inode).
        std::fs::write(d.join("g"), b"someone else's").unwrap();
        std::fs::rename(d.join("g"), d.join("f")).unwrap();
        assert!(!dir.remove_if("f", id).unwrap());
        assert!(d.join("f").exists());
        std::fs::remove_file(d.join("f")).unwrap();
        let id = dir.create_new("f").unwrap();
        assert!(dir.remove_if("f", id).unwrap());
        assert!(!d.join("f").exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_peer_of_a_socket_pair_is_this_process() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let p = peer(&a).unwrap();
        assert_eq!(
            p,
            Peer {
                pid: std::process::id(),
                uid: euid(),
                gid: egid()
            }
        );
    }
}
