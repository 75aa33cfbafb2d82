//! The few C library calls `attach` needs that std does not offer: who we
//! are (effective uid and gid, which HotSpot compares with the socket's and
//! the attach file's owner), sending a signal to another process, who is
//! at the other end of a Unix socket, creating and removing a file by name
//! inside a directory held open, without following a link, and connecting
//! to exactly the file a name held when it was looked at, within a time
//! limit (std's `UnixStream::connect` follows links and mounts at the name
//! and waits without limit on a listener whose queue is full; the socket2
//! crate would do the last, but not the rest, and is not in the build).

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

/// What a name held when it was pinned ([`Dir::pin`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Looked {
    pub id: FileId,
    pub uid: u32,
    pub gid: u32,
    /// Mode bits with the file type.
    pub mode: u32,
    /// The name is a mount point of its own (something mounted over it),
    /// not an entry of the directory's filesystem.
    pub mounted: bool,
}

impl Looked {
    pub fn is_socket(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFSOCK
    }
}

/// A file opened by name without following it (O_PATH | O_NOFOLLOW: a
/// link is the link itself), so that what it is and a connection to it
/// concern that file, whatever the name holds by then.
pub struct Pinned {
    fd: OwnedFd,
    pub looked: Looked,
}

impl Pinned {
    /// Connects to this socket file (through /proc/self/fd, which names
    /// exactly it), waiting at most `timeout` for a listener whose queue
    /// is full (then an error of kind WouldBlock).
    pub fn connect(
        &self,
        timeout: std::time::Duration,
    ) -> io::Result<std::os::unix::net::UnixStream> {
        let path = format!("/proc/self/fd/{}", self.fd.as_raw_fd());
        // SAFETY: an all-zero sockaddr_un is valid (family set below).
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        if path.len() >= addr.sun_path.len() {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        for (d, b) in addr.sun_path.iter_mut().zip(path.bytes()) {
            *d = b as libc::c_char;
        }
        // SAFETY: socket takes integers and returns a new descriptor or -1.
        let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just returned by socket and is owned by nobody else.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
        let tv = libc::timeval {
            tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_usec: timeout.subsec_micros() as libc::suseconds_t,
        };
        // SAFETY: the descriptor is ours; setsockopt reads `tv`, a timeval
        // of the size given. A Unix socket's connect waits at most this
        // long for room in the listener's queue (SO_SNDTIMEO).
        let r = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_SNDTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        loop {
            // SAFETY: the descriptor is ours; connect reads `addr`, a
            // sockaddr_un of the size given, with a NUL-terminated path.
            let r = unsafe {
                libc::connect(
                    sock.as_raw_fd(),
                    (&addr as *const libc::sockaddr_un).cast(),
                    std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
                )
            };
            if r == 0 {
                return Ok(std::os::unix::net::UnixStream::from(sock));
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN | libc::EINPROGRESS) => {
                    return Err(io::Error::new(io::ErrorKind::WouldBlock, e))
                }
                _ => return Err(e),
            }
        }
    }
}

/// The mount a descriptor's file belongs to, where the kernel says
/// (statx, Linux 5.8 and later).
fn mount_id(fd: &OwnedFd) -> Option<u64> {
    // SAFETY: an all-zero statx is a valid value of this plain C struct.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open for the borrow, the path is an empty
    // NUL-terminated string (AT_EMPTY_PATH: the descriptor itself), and
    // statx writes only into `stx`.
    let r = unsafe {
        libc::statx(
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_MNT_ID,
            &mut stx,
        )
    };
    (r == 0 && stx.stx_mask & libc::STATX_MNT_ID != 0).then_some(stx.stx_mnt_id)
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

    /// Opens `name` here without following it and looks at it; None when
    /// there is no such name.
    pub fn pin(&self, name: &str) -> io::Result<Option<Pinned>> {
        let c = c_name(name)?;
        // SAFETY: the directory descriptor is open for the borrow and `c`
        // is a NUL-terminated name; openat returns a new descriptor we own
        // or -1. O_PATH opens no file for I/O (no FIFO blocks, no device
        // acts) and with O_NOFOLLOW a link is opened as itself.
        let fd = unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOENT) => Ok(None),
                _ => Err(e),
            };
        }
        // SAFETY: fd is a descriptor openat just returned; nobody else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let m = File::from(fd.try_clone()?).metadata()?;
        use std::os::unix::fs::MetadataExt;
        let dir = File::from(self.0.try_clone()?).metadata()?;
        // Another device than the directory's is another mount; on one
        // device, a bind mount of a file shows in the mount id.
        let mounted = m.dev() != dir.dev()
            || matches!((mount_id(&fd), mount_id(&self.0)), (Some(a), Some(b)) if a != b);
        let looked = Looked {
            id: FileId::of(&m),
            uid: m.uid(),
            gid: m.gid(),
            mode: m.mode(),
            mounted,
        };
        Ok(Some(Pinned { fd, looked }))
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

    #[test]
    fn a_pinned_name_is_the_file_looked_at_not_what_the_name_holds_later() {
        use std::os::unix::net::UnixListener;
        let d = scratch("pin");
        let dir = Dir::open(&d).unwrap();
        assert!(dir.pin(".java_pid1").unwrap().is_none());
        // A link is the link itself: not a socket, whatever it leads to.
        let other = UnixListener::bind(d.join("other.sock")).unwrap();
        std::os::unix::fs::symlink(d.join("other.sock"), d.join(".java_pid2")).unwrap();
        let link = dir.pin(".java_pid2").unwrap().unwrap();
        assert!(!link.looked.is_socket());
        assert!(!link.looked.mounted);
        // The socket pinned is the one connected to, though a link to
        // another socket took its name in between.
        let first = UnixListener::bind(d.join(".java_pid3")).unwrap();
        let pinned = dir.pin(".java_pid3").unwrap().unwrap();
        assert!(pinned.looked.is_socket());
        assert_eq!(pinned.looked.uid, euid());
        std::fs::remove_file(d.join(".java_pid3")).unwrap();
        std::os::unix::fs::symlink(d.join("other.sock"), d.join(".java_pid3")).unwrap();
        let _s = pinned.connect(std::time::Duration::from_secs(1)).unwrap();
        first.set_nonblocking(true).unwrap();
        other.set_nonblocking(true).unwrap();
        assert!(
            first.accept().is_ok(),
            "the pinned socket took the connection"
        );
        assert!(
            other.accept().is_err(),
            "the socket the name leads to now got nothing"
        );
        // Nothing listens: refused at once.
        drop(first);
        let e = pinned
            .connect(std::time::Duration::from_secs(1))
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_listener_whose_queue_is_full_costs_a_connect_its_time_limit_only() {
        let d = scratch("full");
        let l = std::os::unix::net::UnixListener::bind(d.join("s")).unwrap();
        // SAFETY: the listener's descriptor is open; listen again only
        // shortens its queue.
        assert_eq!(unsafe { libc::listen(l.as_raw_fd(), 0) }, 0);
        let dir = Dir::open(&d).unwrap();
        let p = dir.pin("s").unwrap().unwrap();
        let wait = std::time::Duration::from_millis(300);
        let mut held = Vec::new();
        let blocked = loop {
            let start = std::time::Instant::now();
            match p.connect(wait) {
                Ok(s) => held.push(s),
                Err(e) => break (e, start.elapsed()),
            }
            assert!(held.len() < 8, "the queue never filled");
        };
        assert_eq!(
            blocked.0.kind(),
            io::ErrorKind::WouldBlock,
            "{:?}",
            blocked.0
        );
        assert!(
            blocked.1 >= wait / 2 && blocked.1 < wait * 5,
            "waited {:?}",
            blocked.1
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
