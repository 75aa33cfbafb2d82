//! `hprof-rs print`, `histo` and `flame` at the extremes (issue 27, items
//! 15 and 23): small compressed files that expand to gigabytes (one huge
//! record, many huge names, a million-line trace) are read in bounded
//! memory and time, each run in 1 GiB of address space with its peak
//! resident memory measured; and a stack of a million frames is drawn and
//! collapsed in linear time, without recursion.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How one run of the tool went.
pub struct Run {
    pub code: Option<i32>,
    pub stderr: String,
    /// Peak resident memory, MiB.
    pub peak_mib: u64,
    pub elapsed: Duration,
}

/// Run the tool in 1 GiB of address space (an allocation by a hostile
/// length then fails and aborts it, which the exit status shows), its
/// standard output to `out`, and measure its peak memory.
fn tool(args: &[&str], out: &Path) -> Run {
    tool_in(args, out, 1 << 30)
}

/// [`tool`] in `cap` bytes of address space.
pub fn tool_in(args: &[&str], out: &Path, cap: u64) -> Run {
    let mut cmd = Command::new(env!("HPROF_RS_TOOL"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(out).unwrap())
        .stderr(Stdio::piped());
    // SAFETY: only async-signal-safe setrlimit runs between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: cap,
                rlim_max: cap,
            };
            libc::setrlimit(libc::RLIMIT_AS, &limit);
            Ok(())
        });
    }
    let start = Instant::now();
    // Waited for with wait4 below, which also gives its peak memory.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd.spawn().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let pid = child.id() as libc::pid_t;
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: rusage is plain data filled by wait4 for our own child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break (status, usage);
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "hprof-rs {args:?} hung"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let r = Run {
        code,
        stderr: reader.join().unwrap(),
        peak_mib: usage.ru_maxrss as u64 / 1024,
        elapsed: start.elapsed(),
    };
    eprintln!(
        "hprof-rs {args:?}: exit {:?} in {:?}, peak {} MiB; {}",
        r.code,
        r.elapsed,
        r.peak_mib,
        r.stderr.lines().last().unwrap_or("")
    );
    r
}

fn scratch() -> PathBuf {
    common::scratch("tool_limits")
}

/// A binary HPROF stream (4-byte identifiers), record by record.
struct Hprof(Vec<u8>);

impl Hprof {
    fn new() -> Self {
        let mut out = b"JAVA PROFILE 1.0.2\0".to_vec();
        out.extend_from_slice(&4u32.to_be_bytes());
        out.extend_from_slice(&0u64.to_be_bytes());
        Hprof(out)
    }
    fn record(&mut self, tag: u8, body: &[u8]) -> &mut Self {
        self.head(tag, body.len() as u32);
        self.0.extend_from_slice(body);
        self
    }
    fn head(&mut self, tag: u8, len: u32) {
        self.0.push(tag);
        self.0.extend_from_slice(&0u32.to_be_bytes());
        self.0.extend_from_slice(&len.to_be_bytes());
    }
    fn u4s(&mut self, tag: u8, v: &[u32]) -> &mut Self {
        let b: Vec<u8> = v.iter().flat_map(|x| x.to_be_bytes()).collect();
        self.record(tag, &b)
    }
}

/// `head`, then `fill` bytes of `byte`, gzipped (best compression).
fn gzip_with_fill(path: &Path, head: &[u8], fill: u64, byte: u8, tail: &[u8]) -> u64 {
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::best(),
    );
    gz.write_all(head).unwrap();
    let chunk = vec![byte; 1 << 20];
    let mut left = fill;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        gz.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    gz.write_all(tail).unwrap();
    gz.finish().unwrap();
    std::fs::metadata(path).unwrap().len()
}

/// One record of 1.5 GiB in a 1.5 MB gzip: a name (cut at 64 KiB and read
/// on), and a TRACE (refused by its length before a byte of it is read).
#[test]
fn one_huge_record_is_read_in_bounded_memory() {
    // Its peaks are measured from a fresh process (common::in_own_process).
    common::in_own_process(
        "tool_limits::one_huge_record_is_read_in_bounded_memory",
        || {
            let dir = scratch();
            let out = dir.join("out.txt");
            let len: u32 = 3 << 29;
            let mut tail = Hprof(Vec::new());
            tail.u4s(0x02, &[1, 0x100, 0, 7]); // LOAD CLASS of name 7
            let mut utf8 = Hprof::new();
            utf8.head(0x01, len);
            utf8.0.extend_from_slice(&7u32.to_be_bytes());
            let p = dir.join("huge-utf8.hprof.gz");
            let size = gzip_with_fill(&p, &utf8.0, u64::from(len) - 4, b'n', &tail.0);
            assert!(size < 2 << 20, "{size}");
            let p = p.to_str().unwrap();
            let r = tool(&["print", p], &out);
            assert_eq!(r.code, Some(0), "{}", r.stderr);
            let text = std::fs::read_to_string(&out).unwrap();
            let line = text
                .lines()
                .find(|l| l.starts_with("LOAD CLASS 1"))
                .unwrap();
            assert!(
                line.contains(&format!("name={}…", "n".repeat(65536))),
                "the name is cut at 64 KiB"
            );
            assert!(r.peak_mib < 100, "print: {} MiB", r.peak_mib);
            for cmd in ["histo", "flame"] {
                let r = tool(&[cmd, p], &out);
                assert_eq!(r.code, Some(1), "{cmd}: {}", r.stderr);
                assert!(r.peak_mib < 100, "{cmd}: {} MiB", r.peak_mib);
            }

            let mut trace = Hprof::new();
            trace.head(0x05, len);
            let p = dir.join("huge-trace.hprof.gz");
            gzip_with_fill(&p, &trace.0, u64::from(len), 0, &[]);
            let p = p.to_str().unwrap();
            for cmd in ["print", "histo", "flame"] {
                let r = tool(&[cmd, p], &out);
                assert_eq!(r.code, Some(1), "{cmd}: {}", r.stderr);
                assert!(
                    r.stderr.contains(&format!(
                        "refused TRACE record at offset 31: its length {len} is over 64 MiB"
                    )),
                    "{cmd}: {}",
                    r.stderr
                );
                assert!(r.peak_mib < 100, "{cmd}: {} MiB", r.peak_mib);
            }
        },
    );
}

/// Many distinct names of 64 KiB each (gzip makes each a few hundred
/// bytes): what the tools keep is bounded, and past the bound the file is
/// refused, saying why.
#[test]
fn many_huge_names_are_refused_past_the_bound() {
    // Its peaks are measured from a fresh process (common::in_own_process).
    common::in_own_process(
        "tool_limits::many_huge_names_are_refused_past_the_bound",
        || {
            let dir = scratch();
            let out = dir.join("out.txt");
            let p = dir.join("names.hprof.gz");
            let mut gz = flate2::write::GzEncoder::new(
                std::fs::File::create(&p).unwrap(),
                flate2::Compression::best(),
            );
            gz.write_all(&Hprof::new().0).unwrap();
            let name = vec![b'x'; 65536 - 8];
            for id in 0..8192u32 {
                let mut h = Hprof(Vec::new());
                let mut body = id.to_be_bytes().to_vec();
                body.extend_from_slice(&name);
                body.extend_from_slice(format!("{id:08}").as_bytes());
                h.record(0x01, &body);
                gz.write_all(&h.0).unwrap();
            }
            gz.finish().unwrap();
            let size = std::fs::metadata(&p).unwrap().len();
            assert!(size < 4 << 20, "{size}");
            let p = p.to_str().unwrap();
            for cmd in ["print", "histo", "flame"] {
                let r = tool(&[cmd, p], &out);
                assert_eq!(r.code, Some(1), "{cmd}: {}", r.stderr);
                assert!(
                    r.stderr.contains(
                        "the file defines more than 256 MiB of names, classes, frames and traces"
                    ),
                    "{cmd}: {}",
                    r.stderr
                );
                assert!(r.peak_mib < 400, "{cmd}: {} MiB", r.peak_mib);
            }
        },
    );
}

/// A text report whose one TRACE has 80 million frame lines (a 0.6 MB
/// gzip; a frame costs 4 bytes, so the bound is passed at some 66
/// million): flame reads it line by line and stops at the bound.
#[test]
fn a_text_trace_of_endless_frames_is_bounded() {
    // Its peaks are measured from a fresh process (common::in_own_process).
    common::in_own_process(
        "tool_limits::a_text_trace_of_endless_frames_is_bounded",
        || {
            let dir = scratch();
            let out = dir.join("out.txt");
            let p = dir.join("frames.txt.gz");
            let head =
            b"JAVA PROFILE 1.0.1, created Sun Nov 22 04:00:00 2026\n\n--------\n\nTRACE 300001:\n";
            let line = b"\tA.b(A.java:1)\n";
            let mut gz = flate2::write::GzEncoder::new(
                std::fs::File::create(&p).unwrap(),
                flate2::Compression::best(),
            );
            gz.write_all(head).unwrap();
            let block: Vec<u8> = line.repeat(1 << 16);
            for _ in 0..(80_000_000 >> 16) {
                gz.write_all(&block).unwrap();
            }
            gz.write_all(b"CPU SAMPLES BEGIN (total = 1) x\nrank   self  accum   count trace method\n   1 100.00% 100.00%       1 300001 A.b\nCPU SAMPLES END\n")
            .unwrap();
            gz.finish().unwrap();
            let r = tool(&["flame", p.to_str().unwrap()], &out);
            assert_eq!(r.code, Some(1), "{}", r.stderr);
            assert!(
                r.stderr.contains("the file defines more than 256 MiB"),
                "{}",
                r.stderr
            );
            assert!(r.peak_mib < 400, "{} MiB", r.peak_mib);
        },
    );
}

/// A stack of a million frames (a recursion sampled with a depth that
/// keeps it whole): `flame` collapses it and `flame --svg` draws it, in
/// linear time and without recursing over it (the SVG is drawn to 4096
/// levels and says so).
#[test]
fn a_million_frame_stack_is_collapsed_and_drawn() {
    // Its peaks are measured from a fresh process (common::in_own_process).
    common::in_own_process(
        "tool_limits::a_million_frame_stack_is_collapsed_and_drawn",
        || {
            let dir = scratch();
            let mut h = Hprof::new();
            // CONTROL SETTINGS: cpu sampling on, the largest depth it can say.
            let mut cs = 2u32.to_be_bytes().to_vec();
            cs.extend_from_slice(&u16::MAX.to_be_bytes());
            h.record(0x0E, &cs);
            for (id, text) in [(1, "Deep"), (2, "recurse"), (3, "main"), (4, "Deep.java")] {
                let mut b = (id as u32).to_be_bytes().to_vec();
                b.extend_from_slice(text.as_bytes());
                h.record(0x01, &b);
            }
            h.u4s(0x02, &[1, 0x100, 0, 1]);
            h.u4s(0x04, &[10, 2, 0, 4, 1, 7]); // FRAME 10: Deep.recurse
            h.u4s(0x04, &[11, 3, 0, 4, 1, 3]); // FRAME 11: Deep.main
            let frames = 1_000_000u32;
            let mut trace = vec![300001, 0, frames];
            trace.extend(std::iter::repeat_n(10, frames as usize - 1));
            trace.push(11);
            h.u4s(0x05, &trace);
            // A second trace, half as deep.
            let mut half = vec![300002, 0, frames / 2];
            half.extend(std::iter::repeat_n(10, frames as usize / 2 - 1));
            half.push(11);
            h.u4s(0x05, &half);
            h.u4s(0x0D, &[30, 2, 20, 300001, 10, 300002]);
            let p = dir.join("deep.hprof");
            std::fs::write(&p, &h.0).unwrap();
            let p = p.to_str().unwrap();

            let out = dir.join("deep.collapsed");
            let r = tool(&["flame", p], &out);
            assert_eq!(r.code, Some(0), "{}", r.stderr);
            let text = std::fs::read_to_string(&out).unwrap();
            let rows: Vec<(usize, &str)> = text
                .lines()
                .map(|l| {
                    let (stack, n) = l.rsplit_once(' ').unwrap();
                    (stack.split(';').count(), n)
                })
                .collect();
            assert_eq!(rows, [(500_000, "10"), (1_000_000, "20")]);
            assert!(text.starts_with("Deep.main;Deep.recurse;Deep.recurse;"));
            assert!(r.elapsed < Duration::from_secs(30), "{:?}", r.elapsed);

            let svg = dir.join("deep.svg");
            let r = tool(
                &["flame", p, "--svg", svg.to_str().unwrap()],
                &dir.join("svg.out"),
            );
            assert_eq!(r.code, Some(0), "{}", r.stderr);
            let s = std::fs::read_to_string(&svg).unwrap();
            assert!(s.contains("<title>Deep.main (30 samples, 100.00%)</title>"));
            assert!(s.contains("stacks deeper than 4096 frames are drawn to that depth"));
            assert_eq!(s.matches("<rect x=").count(), 1 + 4096);
            assert!(r.elapsed < Duration::from_secs(30), "{:?}", r.elapsed);
        },
    );
}
