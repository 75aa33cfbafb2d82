//! Files the agent writes, under hostile conditions (docs/options.md,
//! "Output files"; docs/heap_dump.md, "Scratch file"): a FIFO or a device
//! node named by `file=` is written into and left in place, symlinks at
//! the scratch file's name are never followed, heap dumps are private
//! (0600), and a scratch file on a full disk loses nothing.
//!
//! Device nodes and the small full disk (tmpfs) need root; without it those
//! checks say SKIPPED and the others run.

use crate::common;

use hprof_core::reader::read_all;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

fn run(dir: &Path, opts: &str, main: &str, args: &[&str]) -> common::BoundedRun {
    let r = common::run_with_agent_bounded(dir, opts, main, args, LIMIT);
    assert!(!r.timed_out, "{opts}: did not finish");
    r
}

/// As `run`, with a heap small enough (< 2 GB) for HPROF 1.0.1, whose
/// heap dumps are staged in a scratch file beside the output.
fn run_staged(dir: &Path, opts: &str, main: &str, args: &[&str]) -> common::BoundedRun {
    let agent = format!("-agentpath:{}={opts}", common::agent_path().display());
    let r = common::run_java_bounded(dir, &["-Xmx512m", &agent], main, args, LIMIT);
    assert!(!r.timed_out, "{opts}: did not finish");
    r
}

fn sh(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .status()
        .is_ok_and(|s| s.success())
}

/// A tmpfs of `size` mounted at `dir/small`, unmounted when dropped;
/// `None` (after saying SKIPPED) without the right to mount.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(dir: &Path, size: &str, what: &str) -> Option<SmallDisk> {
        let small = dir.join("small");
        std::fs::create_dir_all(&small).unwrap();
        let opts = format!("size={size}");
        if !sh(
            "mount",
            &["-t", "tmpfs", "-o", &opts, "tmpfs", small.to_str().unwrap()],
        ) {
            eprintln!("SKIPPED: mounting a small tmpfs needs root; {what} not run");
            return None;
        }
        Some(SmallDisk(small))
    }
}

/// A small disk with the output FIFO `out.hprof` on it, drained by a
/// thread (see `drain_fifo`).
fn small_disk_with_fifo(
    dir: &Path,
    size: &str,
    what: &str,
    pause_after: usize,
) -> Option<(
    SmallDisk,
    std::path::PathBuf,
    std::thread::JoinHandle<Vec<u8>>,
)> {
    let disk = SmallDisk::mount(dir, size, what)?;
    let fifo = disk.0.join("out.hprof");
    assert!(sh("mkfifo", &[fifo.to_str().unwrap()]));
    let reader = drain_fifo_pausing(&fifo, pause_after, Duration::from_secs(3));
    Some((disk, fifo, reader))
}

/// The VM's private directory is gone from `small`, and what the FIFO
/// gave (`bytes`, kept in `dir`) parses.
fn vm_dir_gone_and_parsed(
    small: &Path,
    dir: &Path,
    bytes: &[u8],
    what: &str,
) -> hprof_core::reader::Parsed {
    let left: Vec<_> = std::fs::read_dir(small)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains(".vmdump."))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let copy = dir.join("copy.hprof");
    std::fs::write(&copy, bytes).unwrap();
    read_all(&copy).expect(what)
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Reads a FIFO to its end on a thread, for at most `LIMIT`: opened
/// without blocking (so a writer that never comes cannot hang the test),
/// it is read until a writer has come and gone.
fn drain_fifo(path: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    drain_fifo_pausing(path, usize::MAX, Duration::ZERO)
}

/// As `drain_fifo`, and stops reading for `pause` once `after` bytes came
/// (the writer then blocks: a stalled consumer).
fn drain_fifo_pausing(
    path: &Path,
    after: usize,
    pause: Duration,
) -> std::thread::JoinHandle<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(p)
            .unwrap();
        let (mut v, mut buf) = (Vec::new(), vec![0u8; 1 << 16]);
        let start = std::time::Instant::now();
        while start.elapsed() < LIMIT {
            match f.read(&mut buf) {
                Ok(0) if !v.is_empty() => break,
                Ok(0) => std::thread::sleep(Duration::from_millis(5)),
                Ok(n) => {
                    let before = v.len();
                    v.extend_from_slice(&buf[..n]);
                    if before < after && v.len() >= after {
                        std::thread::sleep(pause);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) => panic!("reading the FIFO: {e}"),
            }
        }
        v
    })
}

/// `file=` naming a FIFO used to unlink it and write a regular file.
#[test]
fn a_fifo_gets_the_output_and_stays_a_fifo() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("faults_fifo");
    let fifo = dir.join("out.fifo");
    assert!(sh("mkfifo", &[fifo.to_str().unwrap()]));
    let reader = drain_fifo(&fifo);
    let r = run(
        &dir,
        &format!("cpu=samples,file={}", fifo.display()),
        "CpuSplit",
        &["1"],
    );
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let text = String::from_utf8(reader.join().unwrap()).unwrap();
    assert!(text.starts_with("JAVA PROFILE 1.0.1, created"), "{text}");
    assert!(text.contains("CPU SAMPLES END"));
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}

/// A copy of /dev/null and of /dev/full (made with mknod): still device
/// nodes afterwards; /dev/full's ENOSPC is one message and a normal exit.
#[test]
fn device_nodes_are_written_into_not_replaced() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("faults_dev");
    let null = dir.join("null");
    let full = dir.join("full");
    if !sh("mknod", &[null.to_str().unwrap(), "c", "1", "3"])
        || !sh("mknod", &[full.to_str().unwrap(), "c", "1", "7"])
    {
        eprintln!("SKIPPED: mknod needs root; device-node checks not run");
        return;
    }
    let r = run(
        &dir,
        &format!("heap=sites,file={}", null.display()),
        "Hello",
        &[],
    );
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let r = run(
        &dir,
        &format!("heap=dump,format=b,file={}", full.display()),
        "Hello",
        &[],
    );
    let err = common::stderr(&r.output);
    assert!(r.output.status.success(), "{err}");
    assert_eq!(
        err.matches("HPROF ERROR: write to output file failed")
            .count(),
        1,
        "{err}"
    );
    for dev in [&null, &full] {
        let t = std::fs::symlink_metadata(dev).unwrap().file_type();
        assert!(t.is_char_device(), "{} was replaced", dev.display());
    }
}

/// The scratch file of a 1.0.1 heap dump (`<file>.TMP`) used to follow a
/// symlink there: create its target, or truncate and overwrite the file it
/// points to.
#[test]
fn symlinks_at_the_scratch_name_are_not_followed() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("faults_symlink");
    let precious = dir.join("precious");
    std::fs::write(&precious, b"keep me").unwrap();
    let elsewhere = dir.join("created-through-link");
    for (target, name) in [(&precious, "a.hprof"), (&elsewhere, "b.hprof")] {
        std::os::unix::fs::symlink(target, dir.join(format!("{name}.TMP"))).unwrap();
        let r = run_staged(
            &dir,
            &format!("heap=dump,format=b,file={name}"),
            "HoldObjects",
            &[],
        );
        assert!(r.output.status.success(), "{}", common::stderr(&r.output));
        let dump = read_all(dir.join(name)).expect("dump parses");
        assert_eq!(dump.header.version, "1.0.1", "a staged dump");
        assert_eq!(dump.heap_dumps.len(), 1);
    }
    assert_eq!(std::fs::read(&precious).unwrap(), b"keep me");
    assert!(!elsewhere.exists(), "the link's target was created");
    // Scratch files are gone and the links left alone.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".TMP") && !n.ends_with(".hprof.TMP"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Heap dumps are 0600 (they hold passwords and keys), new or overwritten;
/// other outputs are 0644 less the umask.
#[test]
fn heap_dumps_are_private() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("faults_modes");
    let mode = |n: &str| std::fs::metadata(dir.join(n)).unwrap().permissions().mode() & 0o777;
    std::fs::write(dir.join("old.hprof"), b"x").unwrap();
    std::fs::set_permissions(
        dir.join("old.hprof"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    for (opts, file) in [
        ("heap=dump,format=b", "new.hprof"),
        ("heap=dump,format=b", "old.hprof"),
        ("heap=all", "all.txt"),
        ("cpu=samples", "cpu.txt"),
    ] {
        let r = run(&dir, &format!("{opts},file={file}"), "Hello", &[]);
        assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    }
    assert_eq!(mode("new.hprof"), 0o600);
    assert_eq!(mode("old.hprof"), 0o600);
    assert_eq!(mode("all.txt"), 0o600);
    assert_eq!(mode("cpu.txt") & 0o600, 0o600);
    assert_eq!(mode("cpu.txt") & 0o111, 0);
}

/// A 1.0.1 dump's scratch file on a full disk (a 1 MiB tmpfs) while the
/// output goes elsewhere (a FIFO read by the test): the dump is complete,
/// with one message. It used to drop what was staged (every ROOT, half the
/// objects) and exit 0.
#[test]
fn a_full_disk_under_the_scratch_file_loses_nothing() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("faults_full");
    let Some((disk, fifo, reader)) =
        small_disk_with_fifo(&dir, "1m", "full-disk check", usize::MAX)
    else {
        return;
    };
    let small = disk.0.clone();
    let r = run_staged(
        &dir,
        &format!("heap=dump,format=b,file={}", fifo.display()),
        "HoldObjects",
        &["20"],
    );
    let err = common::stderr(&r.output);
    assert!(r.output.status.success(), "{err}");
    let bytes = reader.join().unwrap();
    assert!(
        bytes.len() > 2 << 20,
        "the dump must not fit the 1 MiB disk"
    );
    assert_eq!(
        err.matches("cannot write temporary file").count(),
        1,
        "{err}"
    );
    // The VM's dumper (heap=dump's default) writes its file beside the
    // output too: it fails on the full disk before any of its dump was
    // copied, says so once, and the walk makes the dump; its private
    // directory is gone.
    assert_eq!(
        err.matches("the VM's dumper could not make it").count(),
        1,
        "{err}"
    );
    assert!(err.contains("the JVMTI walk makes it instead"), "{err}");
    let dump = vm_dir_gone_and_parsed(&small, &dir, &bytes, "the dump parses");
    let d = &dump.heap_dumps[0];
    assert!(d.ended, "a complete HEAP DUMP record");
    assert!(!d.roots.is_empty(), "ROOT records kept");
    // HoldObjects keeps 3000 HeldA per scale unit.
    let held_a = dump
        .classes
        .iter()
        .find(|c| c.name.as_deref() == Some("HoldObjects$HeldA"))
        .expect("HeldA loaded");
    let count = d
        .instances
        .iter()
        .filter(|i| i.class_id == held_a.class_id)
        .count();
    assert_eq!(count, 3000 * 20);
}

/// The VM's dumper running out of disk after some of its heap records
/// were copied (a 16 MiB tmpfs holds its directory: room for the VM's
/// first records, whatever its segment size; the output is a FIFO
/// there, read by the test, which stops reading for 3 s after 3 MiB, so
/// the copy stalls and the VM's file is not freed as it is copied;
/// -Xmx2100m for 1.0.2, whose segments are copied while the VM writes): the output ends with HEAP DUMP END and parses,
/// one message says the dump is incomplete, no walk follows (its objects
/// would be counted twice), the program exits normally and the VM's
/// directory is removed.
#[test]
fn a_vm_dump_cut_short_by_a_full_disk_is_closed_and_reported() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("faults_vm_midway");
    let Some((disk, fifo, reader)) =
        small_disk_with_fifo(&dir, "16m", "VM dump cut-short check", 3 << 20)
    else {
        return;
    };
    let small = disk.0.clone();
    let agent = format!(
        "-agentpath:{}=heap=dump,format=b,file={}",
        common::agent_path().display(),
        fifo.display()
    );
    // 400 x (3000 HeldA + ...): a VM dump of about 60 MiB.
    let r = common::run_java_bounded(&dir, &["-Xmx2100m", &agent], "HoldObjects", &["400"], LIMIT);
    assert!(!r.timed_out, "did not finish");
    let err = common::stderr(&r.output);
    assert!(r.output.status.success(), "{err}");
    let bytes = reader.join().unwrap();
    if common::java_major() >= 22 {
        // JDK 22 and later write the heap part of their dump into a part
        // file (`<name>.p0`) and append it to the dump file only at the
        // end (docs/heap_dump.md): the disk fills before any heap record
        // could be copied, so the walk makes the dump.
        assert_eq!(
            err.matches("the VM's dumper could not make it").count(),
            1,
            "{err}"
        );
        assert!(err.contains("the JVMTI walk makes it instead"), "{err}");
        let dump = vm_dir_gone_and_parsed(&small, &dir, &bytes, "the walk's dump parses");
        assert_eq!(dump.heap_dumps.len(), 1);
        assert!(dump.heap_dumps[0].ended);
        return;
    }
    assert_eq!(
        err.matches("the VM's dumper failed after part of its dump was written")
            .count(),
        1,
        "{err}"
    );
    assert!(!err.contains("the JVMTI walk makes it instead"), "{err}");
    let dump = vm_dir_gone_and_parsed(&small, &dir, &bytes, "the cut dump parses");
    assert_eq!(dump.header.version, "1.0.2");
    assert_eq!(dump.header.id_size, 8, "the VM's dump");
    assert_eq!(dump.heap_dumps.len(), 1);
    let d = &dump.heap_dumps[0];
    assert!(d.ended, "closed with HEAP DUMP END");
    let objects = d.instances.len() + d.primitive_arrays.len() + d.object_arrays.len();
    assert!(objects > 0, "the copied part is kept");
    let held_a = dump
        .classes
        .iter()
        .find(|c| c.name.as_deref() == Some("HoldObjects$HeldA"))
        .map(|c| c.class_id);
    let a = d
        .instances
        .iter()
        .filter(|i| Some(i.class_id) == held_a)
        .count();
    assert!(
        a < 3000 * 400,
        "only part of the heap fits the disk: {a} HeldA"
    );
}

/// The output's own disk fills while the VM's dump is copied into it: the
/// output name is a symlink to a file on a 16 MiB tmpfs, so the VM's file
/// (beside the name) is elsewhere and complete, and its heap records are
/// copied, not adopted. One message says the output failed, the heap dump
/// message blames the output too (not the VM's dumper, which did its
/// part), no walk follows, the program exits normally and the VM's
/// directory is removed.
#[test]
fn the_output_filling_its_disk_during_a_vm_dump_is_said_once() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("faults_vm_output_full");
    let Some(disk) = SmallDisk::mount(&dir, "16m", "output-full check") else {
        return;
    };
    std::os::unix::fs::symlink(disk.0.join("real.hprof"), dir.join("out.hprof")).unwrap();
    let agent = format!(
        "-agentpath:{}=heap=dump,format=b,file=out.hprof",
        common::agent_path().display()
    );
    let r = common::run_java_bounded(&dir, &["-Xmx2100m", &agent], "HoldObjects", &["400"], LIMIT);
    assert!(!r.timed_out, "did not finish");
    let err = common::stderr(&r.output);
    assert!(r.output.status.success(), "{err}");
    assert_eq!(
        err.matches("write to output file failed").count(),
        1,
        "{err}"
    );
    assert_eq!(
        err.matches("heap dump: the output stopped while the VM's dump was being written to it")
            .count(),
        1,
        "{err}"
    );
    assert!(!err.contains("the VM's dumper failed"), "{err}");
    assert!(!err.contains("the JVMTI walk makes it instead"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".vmdump."))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// What a JVM has written to its stderr so far, collected on a thread.
#[derive(Clone, Default)]
struct Stderr(std::sync::Arc<parking_lot::Mutex<String>>);

impl Stderr {
    fn text(&self) -> String {
        self.0.lock().clone()
    }

    /// Wait (at most `LIMIT`) until `part` was said `n` times.
    fn wait_for(&self, part: &str, n: usize) {
        let start = std::time::Instant::now();
        while self.text().matches(part).count() < n {
            assert!(
                start.elapsed() < LIMIT,
                "never said {n} x {part}: {}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// HoldObjects with the agent in `dir`, stdin kept open (it idles until
/// stdin closes), its "ready" read; stderr collected.
fn start_holding(dir: &Path, agent_opts: &str, scale: &str) -> (std::process::Child, Stderr) {
    use std::io::BufRead;
    use std::process::Stdio;
    let agent = format!("-agentpath:{}={agent_opts}", common::agent_path().display());
    let mut child = Command::new(common::java())
        .current_dir(dir)
        .args(["-Xmx2100m", &agent, "-cp"])
        .arg(common::fixture_classes())
        .args(["HoldObjects", scale])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let mut err = child.stderr.take().unwrap();
    let said = Stderr::default();
    let to = said.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            to.0.lock().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    (child, said)
}

/// Close its stdin (HoldObjects then exits: the exit dump) and wait.
fn end_holding(mut child: std::process::Child) {
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    // The stderr thread reads to the end.
    std::thread::sleep(Duration::from_millis(200));
}

/// Peak and current RSS of a process, in KiB.
fn rss_kib(pid: u32) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |f: &str| {
        s.lines()
            .find(|l| l.starts_with(f))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Item 19: the output file and the VM's private directory beside it on a
/// disk too small for the dump (a 24 MiB tmpfs; HoldObjects' dump is about
/// 60 MiB). The VM's dumper runs out of room; the JVMTI walk used to make
/// the dump instead, into the same full disk: its tags kept the dump's
/// size in the JVM's memory (+664 MB peak and +400 MB still held on a 1 GB
/// heap), the output ended inside a record, and every later dump did it
/// again. Now each dump says in one line why it was not made, no walk
/// runs, and the output reads whole. (The peak RSS growth is printed: the
/// walk's tags alone would add ~100 MiB for this heap.)
#[test]
fn a_full_disk_under_the_output_makes_no_walk() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("faults_output_disk_full");
    let Some(disk) = SmallDisk::mount(&dir, "24m", "full output disk check") else {
        return;
    };
    let out = disk.0.join("out.hprof");
    let (child, err) = start_holding(
        &dir,
        &format!("heap=dump,format=b,verbose=y,file={}", out.display()),
        "400",
    );
    let pid = child.id();
    let (_, before) = rss_kib(pid);
    // The clear_refs reset of the peak needs Linux >= 4.0.
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
    assert!(sh("kill", &["-QUIT", &pid.to_string()]));
    err.wait_for(" done.", 1);
    let (peak, _) = rss_kib(pid);
    eprintln!(
        "peak RSS growth during the dump on the full disk: {} MiB",
        peak.saturating_sub(before) >> 10
    );
    end_holding(child);
    let err = err.text();
    assert_eq!(
        err.matches(
            "HPROF ERROR: heap dump not made: the VM's dumper ran out of room beside the output"
        )
        .count(),
        2,
        "the SIGQUIT dump and the exit dump: {err}"
    );
    assert!(!err.contains("(JVMTI walk)"), "{err}");
    assert!(!err.contains("the JVMTI walk makes it instead"), "{err}");
    assert_eq!(err.matches("HPROF ERROR").count(), 2, "{err}");
    let p = read_all(&out).unwrap_or_else(|e| panic!("the output reads whole: {e}\n{err}"));
    assert!(p.heap_dumps.is_empty());
    let left: Vec<_> = std::fs::read_dir(&disk.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("out.hprof")]);
}

/// Item 19: the output's own disk fills while a dump is written into it
/// (the output name is a symlink to a 16 MiB tmpfs, so the VM's file is
/// elsewhere and its records are copied). The output used to end inside a
/// record, and every later SIGQUIT made the VM dump the whole heap again
/// into the stopped output. Now the file is cut back to its last whole
/// record (our reader reads it), the HEAP DUMP END closes the cut dump,
/// and later dumps are not made: one line says so.
#[test]
fn dumps_stop_with_an_output_that_filled_its_disk() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("faults_output_died");
    let Some(disk) = SmallDisk::mount(&dir, "16m", "dead output check") else {
        return;
    };
    std::os::unix::fs::symlink(disk.0.join("real.hprof"), dir.join("out.hprof")).unwrap();
    let (child, err) = start_holding(
        &dir,
        "heap=dump,format=b,verbose=y,logflags=1,file=out.hprof",
        "400",
    );
    let pid = child.id();
    for n in 1..=3 {
        assert!(sh("kill", &["-QUIT", &pid.to_string()]));
        err.wait_for(" done.", n);
    }
    end_holding(child);
    let err = err.text();
    assert_eq!(
        err.matches("write to output file failed").count(),
        1,
        "{err}"
    );
    assert_eq!(
        err.matches("heap dump phases (VM dumper)").count(),
        1,
        "one VM dump, none after the output stopped: {err}"
    );
    assert_eq!(
        err.matches("heap dump not made: the output stopped earlier")
            .count(),
        1,
        "{err}"
    );
    let p = read_all(disk.0.join("real.hprof"))
        .unwrap_or_else(|e| panic!("the output reads whole: {e}\n{err}"));
    assert_eq!(p.heap_dumps.len(), 1);
    assert!(p.heap_dumps[0].ended, "closed by HEAP DUMP END");
}
