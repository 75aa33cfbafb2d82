//! Sessions and their streams: the registry and the recording of each
//! stream exactly as received (for download); the stream is read into its
//! session by `hprof_analysis::session::feed`.
//!
//! A recording is a temporary file unlinked as soon as it is created: it
//! lives as long as the open handle, so nothing is left behind however the
//! UI ends, and no other user can open it by name.

use super::lock;
use hprof_analysis::session::{Kind, Session};
use std::fs::File;
use std::io::Read;
use std::net::TcpStream;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Most bytes recorded per session; past this the stream is still read,
/// but the download says the recording stopped.
pub const MAX_RECORDING: u64 = 8 << 30;

/// One session: its model and what belongs with it.
pub struct Handle {
    pub id: u32,
    pub data: Mutex<Session>,
    /// The agent connection commands are written to, while it is open.
    pub sender: Mutex<Option<TcpStream>>,
    /// The stream as received (agents, launches, uploads).
    pub recording: Mutex<Option<Arc<Recording>>>,
    /// A file named on the command line: downloaded from where it is.
    pub path: Option<PathBuf>,
    /// The process of a Launch session.
    pub child: Mutex<Option<Child>>,
    /// The heap analyser's indexes of its dumps.
    pub analyser: Mutex<super::analyser::Indexes>,
}

pub type Shared = Arc<Handle>;

impl Handle {
    pub fn new(id: u32, kind: Kind, source: String, path: Option<PathBuf>) -> Shared {
        Arc::new(Handle {
            id,
            data: Mutex::new(Session::new(id, kind, source)),
            sender: Mutex::new(None),
            recording: Mutex::new(None),
            path,
            child: Mutex::new(None),
            analyser: Mutex::default(),
        })
    }

    pub fn recording(&self) -> Option<Arc<Recording>> {
        lock(&self.recording).clone()
    }
}

/// An append-only record of a stream in an unlinked temporary file.
pub struct Recording {
    file: File,
    len: AtomicU64,
    limit: u64,
    stopped: AtomicBool,
}

impl Recording {
    pub fn create(limit: u64) -> std::io::Result<Recording> {
        use std::os::unix::fs::OpenOptionsExt;
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "hprof-rs-ui-{}-{nanos}-{}.rec",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        let _ = std::fs::remove_file(&path);
        Ok(Recording {
            file,
            len: AtomicU64::new(0),
            limit,
            stopped: AtomicBool::new(false),
        })
    }

    /// Append (one writer per recording). A full disk or the limit stops
    /// the recording, not the session.
    pub fn append(&self, b: &[u8]) {
        if self.stopped.load(Ordering::Relaxed) {
            return;
        }
        let at = self.len.load(Ordering::Relaxed);
        if at + b.len() as u64 > self.limit || self.file.write_all_at(b, at).is_err() {
            self.stopped.store(true, Ordering::Relaxed);
            return;
        }
        self.len.store(at + b.len() as u64, Ordering::Release);
    }

    pub fn len(&self) -> u64 {
        self.len.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when bytes were left out (limit or write error).
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// A name that opens the (unlinked) file while this recording lives,
    /// for readers that take a path.
    pub fn proc_path(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
    }

    /// The bytes recorded so far.
    pub fn reader(self: &Arc<Self>) -> RecordingReader {
        RecordingReader {
            rec: self.clone(),
            at: 0,
            end: self.len(),
        }
    }
}

pub struct RecordingReader {
    rec: Arc<Recording>,
    at: u64,
    end: u64,
}

impl Read for RecordingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = (self.end - self.at).min(buf.len() as u64) as usize;
        if want == 0 {
            return Ok(0);
        }
        let n = self.rec.file.read_at(&mut buf[..want], self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// Passes a stream through, recording every byte read.
pub struct Tee<R> {
    pub inner: R,
    pub rec: Arc<Recording>,
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.rec.append(&buf[..n]);
        Ok(n)
    }
}

/// After a stream failed, keep reading (and recording) what the agent
/// still sends, so that its program is not held up by a full socket.
pub fn drain(r: &mut impl Read) {
    let mut buf = [0u8; 1 << 16];
    while matches!(r.read(&mut buf), Ok(n) if n > 0) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_keeps_the_bytes_exactly_and_stops_at_its_limit() {
        let rec = Arc::new(Recording::create(10).unwrap());
        let mut tee = Tee {
            inner: &b"0123456"[..],
            rec: rec.clone(),
        };
        let mut out = Vec::new();
        tee.read_to_end(&mut out).unwrap();
        let mut back = Vec::new();
        rec.reader().read_to_end(&mut back).unwrap();
        assert_eq!(back, b"0123456");
        rec.append(b"789A");
        assert!(rec.stopped());
        assert_eq!(rec.len(), 7, "nothing past the limit, no partial chunk");
    }
}
