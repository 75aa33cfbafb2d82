//! Where the output stream goes: a file or a TCP socket, behind one type.
//! The writer thread (`writer`) is the only owner and the only thread that
//! does output IO.

pub mod file_copy;
pub mod record;
mod salvage;
pub mod scratch;
mod wake;
pub mod writer;

use std::fs::File;
use std::io::{self, Seek, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::{Duration, Instant};

/// A front-end (`net=`) that accepts no byte of output for this long is cut
/// off (docs/socket-protocol.md, "A front-end that stops reading"): the
/// stream ends with one message and the program goes on, instead of its
/// threads waiting behind a full output queue for as long as the peer keeps
/// the connection open.
pub const SOCKET_STALL_LIMIT: Duration = Duration::from_secs(5);

/// How long `file=` naming a FIFO waits for a process to read it.
const FIFO_READER_WAIT: Duration = Duration::from_secs(10);

/// Open a FIFO for writing without hanging start-up: a non-blocking open
/// fails at once while no process reads the FIFO, so it is retried for
/// [`FIFO_READER_WAIT`]; once a reader is there, a normal (blocking) open
/// returns at once and gives an ordinary blocking stream.
fn open_fifo(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let start = Instant::now();
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(probe) => {
                let f = std::fs::OpenOptions::new().write(true).open(path)?;
                drop(probe);
                return Ok(f);
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if start.elapsed() >= FIFO_READER_WAIT {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "it is a FIFO and no process opened it for reading within {} s",
                            FIFO_READER_WAIT.as_secs()
                        ),
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Longest single blocking write on the socket, so that the stall limit is
/// checked while a write waits.
const SOCKET_WRITE_SLICE: Duration = Duration::from_millis(250);

/// Longest wait for `net=`'s connection: an address that drops packets
/// would otherwise hold start-up (or an attach) for minutes.
pub const CONNECT_LIMIT: Duration = Duration::from_secs(10);

/// Write all of `buf` to a socket whose writes time out after
/// [`SOCKET_WRITE_SLICE`]: a peer that accepts bytes, however slowly, is
/// waited for; one that accepts none for [`SOCKET_STALL_LIMIT`] fails the
/// write with `TimedOut`.
pub fn write_socket_bounded(mut s: &TcpStream, buf: &[u8]) -> io::Result<()> {
    send_bounded(
        buf.len() as u64,
        |done| s.write(&buf[done as usize..]),
        |_| io::ErrorKind::WriteZero.into(),
    )
}

/// Send `total` bytes to a socket by `send` (given what is sent so far,
/// it sends more and says how much), under the stall rule of
/// [`write_socket_bounded`]; `none_sent` is the error for a call that sent
/// nothing.
pub(crate) fn send_bounded(
    total: u64,
    mut send: impl FnMut(u64) -> io::Result<usize>,
    none_sent: impl Fn(u64) -> io::Error,
) -> io::Result<()> {
    let mut done = 0u64;
    let mut last_progress = Instant::now();
    while done < total {
        match send(done) {
            Ok(0) => return Err(none_sent(done)),
            Ok(n) => {
                done += n as u64;
                last_progress = Instant::now();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                if last_progress.elapsed() >= SOCKET_STALL_LIMIT {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "the front-end accepted no output for {} s",
                            SOCKET_STALL_LIMIT.as_secs()
                        ),
                    ));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

pub use file_copy::{Adoption, FileRange};
pub use writer::{SinkAnswer, SinkRequest, Step, Stream, Writer, WriterJob};

/// Open (creating it, mode 0600 when `private`, else 0644, less the
/// umask) and empty the regular file `path` as the output of this process
/// alone: it carries an exclusive flock(2) from then on (the kernel drops
/// it however the process ends). A file whose lock another process holds
/// is that process's output: it is neither emptied nor written, and the
/// error is [`io::ErrorKind::WouldBlock`] (two JVMs given one `file=`
/// made one corrupt file, each writing over the other). An existing file
/// that gets a heap dump is set to 0600. On a filesystem without flock the
/// file is used unlocked.
pub fn open_exclusive(
    path: &Path,
    options: &std::fs::OpenOptions,
    private: bool,
) -> io::Result<File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let existed = path.exists();
    let mut options = options.clone();
    let f = options
        .create(true)
        .truncate(false)
        .mode(if private { 0o600 } else { 0o644 })
        .open(path)?;
    if let Ok(false) = crate::os::try_lock_exclusive(&f) {
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            "another process is writing it",
        ));
    }
    f.set_len(0)?;
    if private && existed {
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(f)
}

/// Largest single write(2) to a file. The writer thread's buffer holds a
/// whole step of a heap dump copy (several MiB); written in one call,
/// Linux copied it into the page cache many times slower than in 1 MiB
/// calls (measured here: 1.2 GB in 8 MiB writes 2.0-3.1 s, in 1 MiB writes
/// 0.24 s; docs/heap_dump.md, "Speed").
const FILE_WRITE_PIECE: usize = 1 << 20;

pub enum Sink {
    /// A file, with its name when it is a regular file the agent opened by
    /// it (a FIFO has none): the name is what `adopt` may replace.
    File(File, Option<std::path::PathBuf>),
    /// A file whose name ends in `.gz`: the whole stream gzip-compressed
    /// (as `jcmd GC.heap_dump -gz` writes), finished when output stops.
    Gzip(flate2::write::GzEncoder<File>),
    Socket(TcpStream),
    /// `listen=`: recorded, and sent live to the front-end connected.
    Recorded(record::Recording),
    /// In-memory, for tests of the writer.
    Memory(std::sync::Arc<parking_lot::Mutex<Vec<u8>>>),
}

impl Sink {
    /// Open the output file, as `force=y` does; the caller has already
    /// chosen the name (options decide `force=n` naming). A name ending in
    /// `.gz` gives a gzip stream. Rules (docs/options.md, "Output files"):
    ///
    /// * nothing is ever unlinked: a regular file is truncated in place, and
    ///   a FIFO, a device or a socket is written into as it is (`file=` used
    ///   to delete and replace them, `/dev/null` included); the one
    ///   replacement is a heap dump's file taking the place of the regular
    ///   file the agent writes, with all its content (`adopt`, only where
    ///   the name is that file's only name and no symlink);
    /// * a new file is created with mode 0600 when `private` (heap dumps
    ///   hold the program's data, as HotSpot's own dumps, which are 0600),
    ///   else 0644, both less the umask; an existing regular file that gets
    ///   a heap dump is set to 0600;
    /// * the name is the user's: a symlink there is followed;
    /// * a regular file another process is writing as its output (two
    ///   JVMs given one `file=`) is left alone: [`io::ErrorKind::WouldBlock`]
    ///   (see [`open_exclusive`]).
    pub fn create_file(path: &Path, private: bool) -> io::Result<Sink> {
        use std::os::unix::fs::FileTypeExt;
        let existing = std::fs::metadata(path).ok().map(|m| m.file_type());
        let regular = existing.is_none_or(|t| t.is_file());
        if existing.is_some_and(|t| t.is_fifo()) {
            return Ok(Sink::File(open_fifo(path)?, None));
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true);
        let f = if regular {
            open_exclusive(path, &options, private)?
        } else {
            // A device or a socket: written into as it is.
            options.open(path)?
        };
        if path.extension().is_some_and(|e| e == "gz") {
            // Fast compression: the writer thread must keep up with heap dumps.
            return Ok(Sink::Gzip(flate2::write::GzEncoder::new(
                f,
                flate2::Compression::fast(),
            )));
        }
        Ok(Sink::File(f, regular.then(|| path.to_path_buf())))
    }

    /// Complete the stream (gzip trailer); called once when output stops.
    pub fn finish(&mut self) -> io::Result<()> {
        match self {
            Sink::Gzip(g) => {
                g.try_finish()?;
                g.get_mut().flush()
            }
            Sink::Recorded(r) => r.finish(),
            _ => self.flush(),
        }
    }

    /// Connect to a front-end (`net=host:port`).
    pub fn connect(host: &str, port: u16) -> io::Result<Sink> {
        let addrs = (host, port).to_socket_addrs()?;
        let mut last = io::Error::new(io::ErrorKind::NotFound, "host has no address");
        for a in addrs {
            match TcpStream::connect_timeout(&a, CONNECT_LIMIT) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    s.set_write_timeout(Some(SOCKET_WRITE_SLICE))?;
                    return Ok(Sink::Socket(s));
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Write all of `buf`. On a socket, fails with `TimedOut` once the peer
    /// has accepted nothing for [`SOCKET_STALL_LIMIT`] (a slow peer that
    /// keeps reading is waited for); other sinks write as `write_all`.
    pub fn write_all_bounded(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Sink::Socket(s) => write_socket_bounded(s, buf),
            Sink::Recorded(r) => r.append(buf),
            Sink::File(f, _) => {
                for piece in buf.chunks(FILE_WRITE_PIECE) {
                    f.write_all(piece)?;
                }
                Ok(())
            }
            _ => self.write_all(buf),
        }
    }

    /// After a failed write: end a socket stream for the peer (what it has
    /// not read is lost anyway) so that nothing else blocks on it.
    pub fn abandon(&mut self) {
        if let Sink::Socket(s) = self {
            let _ = s.shutdown(Shutdown::Write);
        }
    }

    /// After a failed write to a regular file (a full disk): cut the file
    /// back to the end of its last whole record (binary) or line (text),
    /// so that what it holds reads as a complete stream; a 1.0.2 heap dump
    /// left open there gets its HEAP DUMP END (in room the cut freed).
    /// The output used to end inside a record. Returns the bytes kept;
    /// `None` for other sinks or when the file cannot be read back.
    pub fn salvage(&mut self) -> Option<u64> {
        use std::os::unix::io::AsRawFd;
        let Sink::File(f, Some(_)) = self else {
            return None;
        };
        // Our handle is write-only: read through one of its own.
        let mut r = std::fs::File::open(format!("/proc/self/fd/{}", f.as_raw_fd())).ok()?;
        let (keep, open_heap) = salvage::whole_prefix(&mut r).ok()?;
        f.set_len(keep).ok()?;
        f.seek(io::SeekFrom::Start(keep)).ok()?;
        if open_heap {
            let end = [crate::vocab::tag::HEAP_DUMP_END, 0, 0, 0, 0, 0, 0, 0, 0];
            if f.write_all(&end).is_ok() {
                return Some(keep + end.len() as u64);
            }
            let _ = f.set_len(keep);
        }
        Some(keep)
    }

    pub fn describe(&self) -> String {
        match self {
            Sink::File(..) | Sink::Gzip(_) => "output file".into(),
            Sink::Recorded(_) => "recording of the stream".into(),
            Sink::Socket(s) => s
                .peer_addr()
                .map(|a| format!("socket {a}"))
                .unwrap_or_else(|_| "socket".into()),
            Sink::Memory(_) => "memory".into(),
        }
    }

    /// A second handle on the socket for the command reader.
    pub fn try_clone_socket(&self) -> Option<TcpStream> {
        match self {
            Sink::Socket(s) => s.try_clone().ok(),
            _ => None,
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::File(f, _) => f.write(buf),
            Sink::Gzip(g) => g.write(buf),
            Sink::Socket(s) => s.write(buf),
            Sink::Recorded(r) => r.append(buf).map(|()| buf.len()),
            Sink::Memory(m) => {
                m.lock().extend_from_slice(buf);
                Ok(buf.len())
            }
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File(f, _) => f.flush(),
            Sink::Gzip(g) => g.flush(),
            Sink::Socket(s) => s.flush(),
            Sink::Recorded(_) => Ok(()),
            Sink::Memory(_) => Ok(()),
        }
    }
}
