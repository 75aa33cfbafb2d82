//! Progress on stderr while a long file is read: a `Read` wrapper that
//! counts bytes and reports every 5 % of the file (only for files above
//! 64 MiB, so short runs stay quiet).

use std::io::{self, Read};
use std::time::Instant;

const QUIET_BELOW: u64 = 64 << 20;

pub struct Progress<R> {
    inner: R,
    what: String,
    total: u64,
    done: u64,
    next_report: u64,
    started: Instant,
}

impl<R: Read> Progress<R> {
    /// `total`: the file size in bytes (compressed size for .gz).
    pub fn new(inner: R, what: &str, total: u64) -> Self {
        let next_report = if total >= QUIET_BELOW {
            total / 20
        } else {
            u64::MAX
        };
        Progress {
            inner,
            what: what.to_string(),
            total,
            done: 0,
            next_report,
            started: Instant::now(),
        }
    }

    /// Count bytes consumed without going through `read` (skips, seeks).
    pub fn add(&mut self, n: u64) {
        self.done += n;
        if self.done >= self.next_report {
            eprintln!(
                "{}: {:3}% ({} of {} MiB)",
                self.what,
                self.done * 100 / self.total.max(1),
                self.done >> 20,
                self.total >> 20
            );
            self.next_report = self.done + self.total / 20;
        }
    }

    pub fn finish(&self) {
        if self.total >= QUIET_BELOW {
            eprintln!(
                "{}: {} MiB read in {:.2} s",
                self.what,
                self.done >> 20,
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}

impl<R: Read> Read for Progress<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.add(n as u64);
        Ok(n)
    }
}

/// Seeks count as progress too: `histo` seeks over most of a dump.
impl<R: crate::reader::SkipForward> crate::reader::SkipForward for Progress<R> {
    fn skip_forward(&mut self, n: u64) -> io::Result<bool> {
        let moved = self.inner.skip_forward(n)?;
        if moved {
            self.add(n);
        }
        Ok(moved)
    }
}

/// Open a file with progress reporting.
pub fn open(path: &str) -> Result<Progress<std::fs::File>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("cannot open {path}: {e}"))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    Ok(Progress::new(f, path, len))
}
