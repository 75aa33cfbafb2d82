//! Progress on stderr while a long file is read: a `Read` wrapper that
//! counts bytes and reports (only for files above 64 MiB, so short runs
//! stay quiet): on a terminal one bar redrawn in place at every percent,
//! elsewhere (logs, CI) a plain line every 5 %; nothing with `--quiet`
//! ([`set_quiet`]).

use std::io::{self, IsTerminal, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

const QUIET_BELOW: u64 = 64 << 20;

static QUIET: AtomicBool = AtomicBool::new(false);

/// No progress at all (the tool's `--quiet`).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether progress is off (`--quiet`).
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// How progress shows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Style {
    Off,
    /// A bar redrawn in place (stderr is a terminal).
    Bar,
    /// A line every 5 %.
    Lines,
}

/// The style for this process: off with `--quiet`, a bar on a terminal.
pub fn style() -> Style {
    if quiet() {
        Style::Off
    } else if io::stderr().is_terminal() {
        Style::Bar
    } else {
        Style::Lines
    }
}

/// One progress bar line: `what [#####.....]  45% (x of y MiB, t s)`.
pub fn bar_line(what: &str, done: u64, total: u64, secs: f64) -> String {
    const WIDTH: u64 = 30;
    let done = done.min(total);
    let filled = (done * WIDTH).checked_div(total).unwrap_or(0) as usize;
    format!(
        "{what} [{}{}] {:3}% ({} of {} MiB, {secs:.1} s)",
        "#".repeat(filled),
        ".".repeat(WIDTH as usize - filled),
        (done * 100).checked_div(total).unwrap_or(0),
        done >> 20,
        total >> 20
    )
}

pub struct Progress<R> {
    inner: R,
    what: String,
    total: u64,
    done: u64,
    next_report: u64,
    started: Instant,
    style: Style,
}

impl<R: Read> Progress<R> {
    /// `total`: the file size in bytes (compressed size for .gz).
    pub fn new(inner: R, what: &str, total: u64) -> Self {
        let style = if total >= QUIET_BELOW {
            style()
        } else {
            Style::Off
        };
        let next_report = match style {
            Style::Off => u64::MAX,
            Style::Bar => total / 100,
            Style::Lines => total / 20,
        };
        Progress {
            inner,
            // A file's name is anyone's (a control character in it would
            // reach the terminal).
            what: hprof_core::untrusted::escaped(what),
            total,
            done: 0,
            next_report,
            started: Instant::now(),
            style,
        }
    }

    /// Count bytes consumed without going through `read` (skips, seeks).
    pub fn add(&mut self, n: u64) {
        self.done += n;
        if self.done < self.next_report {
            return;
        }
        match self.style {
            Style::Off => {}
            Style::Bar => {
                let secs = self.started.elapsed().as_secs_f64();
                eprint!("\r{}", bar_line(&self.what, self.done, self.total, secs));
                self.next_report = self.done + self.total / 100;
            }
            Style::Lines => {
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
    }

    pub fn finish(&self) {
        if self.style == Style::Off {
            return;
        }
        if self.style == Style::Bar {
            eprintln!();
        }
        eprintln!(
            "{}: {} MiB read in {:.2} s",
            self.what,
            self.done >> 20,
            self.started.elapsed().as_secs_f64()
        );
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

/// Open a file with progress reporting; `-` is standard input (read
/// through: a pipe cannot seek, and its size is not known, so it shows no
/// progress).
pub fn open(path: &str) -> Result<Progress<std::fs::File>, String> {
    let f = if path == "-" {
        use std::os::fd::AsFd;
        let fd = io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        std::fs::File::from(fd)
    } else {
        std::fs::File::open(path).map_err(|e| format!("cannot open {path}: {e}"))?
    };
    let len = match f.metadata() {
        Ok(m) if m.is_file() => m.len(),
        _ => 0,
    };
    Ok(Progress::new(f, path, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_fills_with_the_share_read() {
        let l = bar_line("dump.hprof", 45 << 20, 100 << 20, 1.25);
        assert_eq!(
            l,
            "dump.hprof [#############.................]  45% (45 of 100 MiB, 1.2 s)"
        );
        assert!(bar_line("x", 5, 0, 0.0).contains("  0%"));
        assert!(bar_line("x", 200, 100, 0.0).contains("100%"));
    }
}
