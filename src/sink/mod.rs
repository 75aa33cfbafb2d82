//! Where the output stream goes: a file or a TCP socket, behind one type.
//! The writer thread (`writer`) is the only owner and the only thread that
//! does output IO.

pub mod writer;

use std::fs::File;
use std::io::{self, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::{Duration, Instant};

/// A front-end (`net=`) that accepts no byte of output for this long is cut
/// off (docs/socket-protocol.md, "A front-end that stops reading"): the
/// stream ends with one message and the program goes on, instead of its
/// threads waiting behind a full output queue for as long as the peer keeps
/// the connection open.
pub const SOCKET_STALL_LIMIT: Duration = Duration::from_secs(5);

/// Longest single blocking write on the socket, so that the stall limit is
/// checked while a write waits.
const SOCKET_WRITE_SLICE: Duration = Duration::from_millis(250);

pub use writer::{Writer, WriterJob};

pub enum Sink {
    File(File),
    /// A file whose name ends in `.gz`: the whole stream gzip-compressed
    /// (as `jcmd GC.heap_dump -gz` writes), finished when output stops.
    Gzip(flate2::write::GzEncoder<File>),
    Socket(TcpStream),
    /// In-memory, for tests of the writer.
    Memory(std::sync::Arc<parking_lot::Mutex<Vec<u8>>>),
}

impl Sink {
    /// Create (truncate) the output file, as `force=y` does; the caller has
    /// already chosen the name (options decide `force=n` naming).
    /// A name ending in `.gz` gives a gzip stream.
    pub fn create_file(path: &Path) -> io::Result<Sink> {
        let _ = std::fs::remove_file(path);
        let f = File::create(path)?;
        if path.extension().is_some_and(|e| e == "gz") {
            // Fast compression: the writer thread must keep up with heap dumps.
            return Ok(Sink::Gzip(flate2::write::GzEncoder::new(
                f,
                flate2::Compression::fast(),
            )));
        }
        Ok(Sink::File(f))
    }

    /// Complete the stream (gzip trailer); called once when output stops.
    pub fn finish(&mut self) -> io::Result<()> {
        match self {
            Sink::Gzip(g) => {
                g.try_finish()?;
                g.get_mut().flush()
            }
            _ => self.flush(),
        }
    }

    /// Connect to a front-end (`net=host:port`).
    pub fn connect(host: &str, port: u16) -> io::Result<Sink> {
        let addrs = (host, port).to_socket_addrs()?;
        let mut last = io::Error::new(io::ErrorKind::NotFound, "host has no address");
        for a in addrs {
            match TcpStream::connect(a) {
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
        let Sink::Socket(s) = self else {
            return self.write_all(buf);
        };
        let mut rest = buf;
        let mut last_progress = Instant::now();
        while !rest.is_empty() {
            match s.write(rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    rest = &rest[n..];
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

    /// After a failed write: end a socket stream for the peer (what it has
    /// not read is lost anyway) so that nothing else blocks on it.
    pub fn abandon(&mut self) {
        if let Sink::Socket(s) = self {
            let _ = s.shutdown(Shutdown::Write);
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Sink::File(_) | Sink::Gzip(_) => "output file".into(),
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
            Sink::File(f) => f.write(buf),
            Sink::Gzip(g) => g.write(buf),
            Sink::Socket(s) => s.write(buf),
            Sink::Memory(m) => {
                m.lock().extend_from_slice(buf);
                Ok(buf.len())
            }
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File(f) => f.flush(),
            Sink::Gzip(g) => g.flush(),
            Sink::Socket(s) => s.flush(),
            Sink::Memory(_) => Ok(()),
        }
    }
}
