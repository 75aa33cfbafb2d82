//! `listen=`: the stream is recorded, and the one front-end connected gets
//! it live. A front-end that connects later is first sent the recording
//! from its first byte, then the live stream, so it sees exactly what a
//! file would hold (docs/socket-protocol.md, "The agent listens").
//!
//! The recording is the output file when `file=` is given, otherwise a
//! private temporary file that is unlinked as soon as it is created: only
//! the agent's open handle reaches it, it holds what a file output would
//! (disk, not memory, grows with the stream), and it disappears with the
//! process however that ends.
//!
//! The writer thread appends and forwards ([`Recording::append`]); the
//! listener thread replays to a new front-end ([`Recording::replay`]) and
//! makes it live once it has caught up with the end of the recording,
//! under the same lock as the appends, so no byte is skipped or sent twice.

use super::{write_socket_bounded, SOCKET_STALL_LIMIT};
use parking_lot::Mutex;
use std::fs::File;
use std::io::{self, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

/// Bytes read from the recording per write to a front-end being caught up.
const REPLAY_CHUNK: usize = 256 * 1024;

/// One connected front-end.
pub struct FrontEnd {
    pub stream: TcpStream,
    /// `addr:port`, for messages.
    pub peer: String,
}

impl FrontEnd {
    /// A front-end on `stream`. Writes to it are cut into slices so the
    /// stall limit is checked while one waits.
    pub fn new(stream: TcpStream, peer: String) -> io::Result<Arc<FrontEnd>> {
        stream.set_nonblocking(false)?;
        let _ = stream.set_nodelay(true);
        stream.set_write_timeout(Some(super::SOCKET_WRITE_SLICE))?;
        Ok(Arc::new(FrontEnd { stream, peer }))
    }
}

struct State {
    /// Bytes recorded so far.
    len: u64,
    /// The front-end that gets the stream live (caught up with `len`).
    live: Option<Arc<FrontEnd>>,
    /// The writer has finished: `len` is final.
    finished: bool,
}

struct Shared {
    /// Appends go through this handle; replays read with `read_at`, which
    /// does not move the file offset.
    file: File,
    state: Mutex<State>,
}

/// The recording, shared by the writer (as `Sink::Recorded`) and the
/// listener thread.
#[derive(Clone)]
pub struct Recording {
    shared: Arc<Shared>,
}

/// How a replay ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Replayed {
    /// The front-end has everything recorded and now gets the stream live.
    Live,
    /// The stream is over (the writer finished): the front-end has all of it.
    Complete,
}

impl Recording {
    /// Record in the user's file `path` (created or truncated like any
    /// output file, docs/options.md "Output files"), which must be a
    /// regular file: a FIFO or a device cannot be read back.
    pub fn in_file(path: &Path, private: bool) -> io::Result<Recording> {
        if let Ok(m) = std::fs::metadata(path) {
            if !m.is_file() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "listen= replays the file to each front-end, so it must be a regular file",
                ));
            }
        }
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true);
        Ok(Recording::over(super::open_exclusive(
            path, &options, private,
        )?))
    }

    /// Record in a new private file in `dir` that no name reaches: made
    /// without one (O_TMPFILE) where the filesystem can, else under a name
    /// nobody can guess, unlinked at once (a predictable name let another
    /// user plant every candidate and stop `listen=` from starting).
    pub fn private_in(dir: &Path) -> io::Result<Recording> {
        use std::os::unix::fs::OpenOptionsExt;
        let anonymous = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_TMPFILE)
            .open(dir);
        if let Ok(f) = anonymous {
            return Ok(Recording::over(f));
        }
        let mut last = io::Error::other("no name tried");
        for _ in 0..8 {
            let path = dir.join(format!(
                "hprof-rs-{}-{}.recording",
                std::process::id(),
                crate::os::random_hex(8)?
            ));
            match std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
            {
                Ok(f) => {
                    // Only our handle reaches it from now on; the space
                    // goes back when the process ends, however it ends.
                    std::fs::remove_file(&path)?;
                    return Ok(Recording::over(f));
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    fn over(file: File) -> Recording {
        Recording {
            shared: Arc::new(Shared {
                file,
                state: Mutex::new(State {
                    len: 0,
                    live: None,
                    finished: false,
                }),
            }),
        }
    }

    /// Bytes recorded so far.
    pub fn len(&self) -> u64 {
        self.shared.state.lock().len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The writer thread: record `buf`, then send it to the live
    /// front-end, if any. A front-end that fails or stalls is dropped (the
    /// stream goes on being recorded); only a failed recording is an error.
    pub fn append(&self, buf: &[u8]) -> io::Result<()> {
        let live = {
            let mut st = self.shared.state.lock();
            (&self.shared.file).write_all(buf)?;
            st.len += buf.len() as u64;
            st.live.clone()
        };
        if let Some(fe) = live {
            if let Err(e) = write_socket_bounded(&fe.stream, buf) {
                self.drop_front_end(&fe, &e);
            }
        }
        Ok(())
    }

    /// The writer has finished: no more bytes will come.
    pub fn finish(&self) -> io::Result<()> {
        self.shared.state.lock().finished = true;
        (&self.shared.file).flush()
    }

    /// The listener thread: send `fe` everything recorded, then make it
    /// the live front-end. Not cut short by a stop: each write is bounded
    /// by the stall limit, and shutting the socket ends it at once.
    pub fn replay(&self, fe: &Arc<FrontEnd>) -> io::Result<Replayed> {
        let mut sent = 0u64;
        let mut buf = vec![0u8; REPLAY_CHUNK];
        loop {
            let end = {
                let mut st = self.shared.state.lock();
                if sent == st.len {
                    if st.finished {
                        return Ok(Replayed::Complete);
                    }
                    st.live = Some(fe.clone());
                    return Ok(Replayed::Live);
                }
                st.len
            };
            while sent < end {
                let want = ((end - sent) as usize).min(buf.len());
                let n = self.shared.file.read_at(&mut buf[..want], sent)?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                write_socket_bounded(&fe.stream, &buf[..n])?;
                sent += n as u64;
            }
        }
    }

    /// `fe` is gone (it closed, or the listener let it go): it no longer
    /// gets the stream.
    pub fn forget(&self, fe: &Arc<FrontEnd>) {
        let mut st = self.shared.state.lock();
        if st.live.as_ref().is_some_and(|l| Arc::ptr_eq(l, fe)) {
            st.live = None;
        }
    }

    /// The live front-end, if any (VM death ends its stream).
    pub fn live(&self) -> Option<Arc<FrontEnd>> {
        self.shared.state.lock().live.clone()
    }

    /// A write to the live front-end failed: it is cut off (its socket is
    /// shut down, which also ends the listener's read), and the stream goes
    /// on into the recording for the next front-end.
    fn drop_front_end(&self, fe: &Arc<FrontEnd>, e: &io::Error) {
        self.forget(fe);
        let _ = fe.stream.shutdown(Shutdown::Both);
        if e.kind() == io::ErrorKind::TimedOut {
            crate::diag::rejected(&format!(
                "front-end {} accepted no output for {} s: disconnected; the stream goes on being \
                 recorded for the next front-end",
                fe.peer,
                SOCKET_STALL_LIMIT.as_secs()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    fn pair() -> (Arc<FrontEnd>, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, peer) = l.accept().unwrap();
        (FrontEnd::new(server, peer.to_string()).unwrap(), client)
    }

    fn read_exactly(s: &mut TcpStream, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        s.read_exact(&mut v).unwrap();
        v
    }

    #[test]
    fn a_late_front_end_gets_everything_then_the_live_stream() {
        let dir = std::env::temp_dir();
        let rec = Recording::private_in(&dir).unwrap();
        rec.append(b"header;").unwrap();
        rec.append(b"one;").unwrap();
        let (fe, mut client) = pair();
        assert_eq!(rec.replay(&fe).unwrap(), Replayed::Live);
        rec.append(b"two;").unwrap();
        assert_eq!(read_exactly(&mut client, 15), b"header;one;two;");

        // It leaves; the next one gets all of it again, and only it the rest.
        drop(client);
        rec.forget(&fe);
        rec.append(b"three;").unwrap();
        let (fe2, mut client2) = pair();
        assert_eq!(rec.replay(&fe2).unwrap(), Replayed::Live);
        rec.append(b"end").unwrap();
        rec.finish().unwrap();
        assert_eq!(read_exactly(&mut client2, 24), b"header;one;two;three;end");
        assert_eq!(rec.len(), 24);
        // After the end, a replay is complete without going live.
        let (fe3, mut client3) = pair();
        assert_eq!(rec.replay(&fe3).unwrap(), Replayed::Complete);
        assert_eq!(read_exactly(&mut client3, 24), b"header;one;two;three;end");
        assert!(rec.live().is_some_and(|l| Arc::ptr_eq(&l, &fe2)));
    }

    #[test]
    fn the_private_recording_has_no_name() {
        let dir = std::env::temp_dir().join(format!("rec-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rec = Recording::private_in(&dir).unwrap();
        rec.append(b"x").unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn a_file_recording_must_be_a_regular_file() {
        let dir = std::env::temp_dir().join(format!("rec-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = Recording::in_file(&dir, false).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let f = dir.join("out.txt");
        let rec = Recording::in_file(&f, true).unwrap();
        rec.append(b"abc").unwrap();
        rec.finish().unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"abc");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
