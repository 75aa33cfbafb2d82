//! Heap dumps by the VM's dumper against a hostile local user and against
//! accidents (docs/heap_dump.md, "The VM's dumper"): names planted where
//! the VM's private directory goes, a file put at the output's name while
//! the VM's file takes its place, two JVMs given one output file, and a
//! JVM killed during a dump.
//!
//! The planted names come from another user (uid 65534, through setpriv):
//! that needs root; without it those checks say SKIPPED.

use crate::common;

use hprof_core::reader::read_all;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The unprivileged user the attacks run as.
const OTHER_UID: &str = "65534";

/// Whether commands can be run as [`OTHER_UID`] (root and setpriv).
fn can_act_as_other_user(what: &str) -> bool {
    let root = hprof_cli::attach::procfs::status(std::process::id()).is_ok_and(|s| s.euid == 0);
    if !root || !Path::new("/usr/bin/setpriv").exists() {
        eprintln!("SKIPPED: {what} needs root and setpriv to act as another user");
        return false;
    }
    true
}

/// Run `sh -c script` as [`OTHER_UID`].
fn as_other_user(script: &str) {
    let st = Command::new("/usr/bin/setpriv")
        .args([
            &format!("--reuid={OTHER_UID}"),
            &format!("--regid={OTHER_UID}"),
            "--clear-groups",
            "sh",
            "-c",
            script,
        ])
        .status()
        .unwrap();
    assert!(st.success(), "as uid {OTHER_UID}: {script}");
}

/// A directory like /tmp: anyone may create names in it, only their owner
/// may remove or rename them.
fn sticky_shared_dir(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let shared = dir.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    shared
}

/// HeapGraph with the agent, in `dir`, `env` added; stdout's "ready" read.
fn start(dir: &Path, opts: &str, jvm_args: &[&str], env: &[(&str, &Path)]) -> Child {
    let agent = format!("-agentpath:{}={opts}", common::agent_path().display());
    let mut cmd = Command::new(common::java());
    cmd.current_dir(dir)
        .args(jvm_args)
        .arg(agent)
        .arg("-cp")
        .arg(common::fixture_classes())
        .args(["HeapGraph", "marker", "120"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start java");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready", "fixture did not start");
    child
}

/// Let HeapGraph exit (its exit dump follows) and return its stderr.
fn finish(dir: &Path, child: Child) -> String {
    std::fs::write(dir.join("marker"), b"").unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "java failed: {err}");
    common::check_agent_stderr(&["-agentpath:"], &out);
    err
}

fn sigquit(pid: u32) {
    assert!(Command::new("kill")
        .args(["-QUIT", &pid.to_string()])
        .status()
        .unwrap()
        .success());
}

/// Names in `dir` that hold `part`.
fn names_with(dir: &Path, part: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(part))
        .collect()
}

/// The 64 names the VM's private directory could have had under the old
/// rule (`<base>.vmdump.<pid>.0` .. `.63`) planted in `shared` by another
/// user, as symlinks to a directory of theirs (even) and to a name that
/// does not exist (odd). Returns their directory.
fn plant_old_names(shared: &Path, base: &str, pid: u32) -> PathBuf {
    let theirs = shared.join("theirs");
    as_other_user(&format!(
        "mkdir -m 777 {t} && for n in $(seq 0 63); do \
           if [ $((n % 2)) = 0 ]; then ln -s {t} {s}/{base}.vmdump.{pid}.$n; \
           else ln -s {t}/nothing-$n {s}/{base}.vmdump.{pid}.$n; fi; done",
        t = theirs.display(),
        s = shared.display(),
    ));
    theirs
}

/// Nothing was written through the planted links, which are all still
/// there.
fn planted_untouched(shared: &Path, theirs: &Path, base: &str, pid: u32) {
    assert_eq!(
        std::fs::read_dir(theirs).unwrap().count(),
        0,
        "written into the other user's directory: {:?}",
        names_with(theirs, "")
    );
    for n in 0..64 {
        let link = shared.join(format!("{base}.vmdump.{pid}.{n}"));
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink(),
            "{}",
            link.display()
        );
    }
}

/// Item 17: the VM's private directory had a name made of the output's
/// and the PID and a counter (`/tmp/hprof-rs-<pid>...` for every `net=`
/// JVM), so another user who planted the 64 candidates sent every dump to
/// the JVMTI walk (JVM memory +34 MB became +579 MB). Now its name cannot
/// be guessed: with the same 64 names planted (beside a `file=` output in
/// a /tmp-like directory, and in `$TMPDIR` for `net=`), both dumps are the
/// VM dumper's, whole, and nothing goes through the links.
#[test]
fn planted_names_never_send_a_dump_to_the_walk() {
    if !can_act_as_other_user("the planted-name check") {
        return;
    }
    let _only_jvm = common::exclusive();
    // file= in a shared directory.
    let dir = common::scratch("hostile_planted_file");
    let shared = sticky_shared_dir(&dir);
    let out = shared.join("out.hprof");
    let child = start(
        &dir,
        &format!("heap=dump,format=b,verbose=y,file={}", out.display()),
        &["-Xmx2100m"],
        &[],
    );
    let pid = child.id();
    let theirs = plant_old_names(&shared, "out.hprof", pid);
    sigquit(pid);
    common::wait_for_dumps(&out, 1);
    let err = finish(&dir, child);
    assert_eq!(
        err.matches("Dumping Java heap (VM dumper) ... done.")
            .count(),
        2,
        "{err}"
    );
    assert!(!err.contains("HPROF ERROR"), "{err}");
    planted_untouched(&shared, &theirs, "out.hprof", pid);
    assert_eq!(
        names_with(&shared, ".vmdump.").len(),
        64,
        "only the planted names left"
    );
    let p = read_all(&out).unwrap_or_else(|e| panic!("our reader: {e}"));
    assert_eq!(p.heap_dumps.len(), 2);
    assert!(p.heap_dumps.iter().all(|d| d.ended));

    // net=: the VM's directory goes in $TMPDIR.
    let dir = common::scratch("hostile_planted_net");
    let shared = sticky_shared_dir(&dir);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut c, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got).unwrap();
        got
    });
    let child = start(
        &dir,
        &format!("heap=dump,format=b,verbose=y,net=127.0.0.1:{port}"),
        &["-Xmx2100m"],
        &[("TMPDIR", &shared)],
    );
    let pid = child.id();
    let base = format!("hprof-rs-{pid}");
    let theirs = plant_old_names(&shared, &base, pid);
    sigquit(pid);
    std::thread::sleep(Duration::from_secs(2));
    let err = finish(&dir, child);
    assert_eq!(
        err.matches("Dumping Java heap (VM dumper) ... done.")
            .count(),
        2,
        "{err}"
    );
    assert!(!err.contains("HPROF ERROR"), "{err}");
    planted_untouched(&shared, &theirs, &base, pid);
    let stream = dir.join("stream.hprof");
    std::fs::write(&stream, server.join().unwrap()).unwrap();
    let p = read_all(&stream).unwrap_or_else(|e| panic!("our reader: {e}"));
    assert_eq!(p.heap_dumps.len(), 2);
    assert!(p.heap_dumps.iter().all(|d| d.ended));
}

/// Wait until `pred` holds for a line of `lines` (at most a minute).
fn wait_line(lines: &std::sync::mpsc::Receiver<String>, pred: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if let Ok(l) = lines.recv_timeout(Duration::from_millis(100)) {
            if pred(&l) {
                return l;
            }
        }
    }
    panic!("no such line on the JVM's stderr");
}

/// The JVM's stderr, line by line, on a thread: the lines as they come,
/// and all of it once the JVM ends.
fn stderr_lines(
    child: &mut Child,
) -> (
    std::sync::mpsc::Receiver<String>,
    std::thread::JoinHandle<String>,
) {
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let all = std::thread::spawn(move || {
        let mut all = String::new();
        let mut r = BufReader::new(err);
        let mut line = Vec::new();
        // Progress text ends in " done." without a newline: split there too.
        while let Ok(n) = r.read_until(b'\n', &mut line) {
            if n == 0 {
                break;
            }
            let l = String::from_utf8_lossy(&line).into_owned();
            all.push_str(&l);
            let _ = tx.send(l);
            line.clear();
        }
        all
    });
    (rx, all)
}

/// Item 22: a file put at the output's name while the VM's file was taking
/// its place was deleted: the agent swapped the two names and removed what
/// the swap brought into its directory, whatever it was. The window
/// between the agent's checks and the swap is widened to 3 s
/// (`HPROF_RS_TEST_FAULT=adopt-window`); in it the user moves the output
/// away and puts a file of theirs at its name. Their file keeps the name
/// and its content, the agent's dumps go on into the file moved away
/// (whole, both of them), and one warning says the name now names another
/// file.
#[test]
fn a_file_put_at_the_output_name_during_the_swap_is_kept() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("hostile_swap");
    let out = dir.join("out.hprof");
    let fault = PathBuf::from("adopt-window");
    let mut child = start(
        &dir,
        "heap=dump,format=b,verbose=y,file=out.hprof",
        &["-Xmx2100m"],
        &[("HPROF_RS_TEST_FAULT", &fault)],
    );
    let (lines, all) = stderr_lines(&mut child);
    sigquit(child.id());
    wait_line(&lines, |l| l.contains("test fault adopt-window"));
    let moved = dir.join("moved.hprof");
    std::fs::rename(&out, &moved).unwrap();
    std::fs::write(&out, b"the user's own file").unwrap();
    wait_line(&lines, |l| l.contains(" done."));
    std::fs::write(dir.join("marker"), b"").unwrap();
    assert!(child.wait().unwrap().success());
    let err = all.join().unwrap();
    let now = std::fs::read(&out).unwrap();
    assert!(
        now == b"the user's own file",
        "out.hprof holds {} bytes, not the user's file: {err}",
        now.len()
    );
    assert_eq!(
        err.matches("HPROF WARNING: out.hprof names another file now")
            .count(),
        1,
        "{err}"
    );
    assert!(!err.contains("HPROF ERROR"), "{err}");
    assert!(names_with(&dir, ".vmdump.").is_empty());
    let p = read_all(&moved).unwrap_or_else(|e| panic!("our reader: {e}"));
    assert_eq!(p.heap_dumps.len(), 2, "the SIGQUIT dump and the exit dump");
    assert!(p.heap_dumps.iter().all(|d| d.ended));
}

/// Item 24: two JVMs given one `file=` wrote over each other, making one
/// corrupt file without a word. The output is now locked while a JVM
/// writes it: the second JVM writes the `force=n` name (`out.hprof.<pid>`)
/// and says so, and each file holds its JVM's two dumps, whole.
#[test]
fn two_jvms_given_one_output_file_write_two_files() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("hostile_two_jvms");
    let opts = "heap=dump,format=b,file=out.hprof";
    let first = start(&dir, opts, &["-Xmx2100m"], &[]);
    let second = start(&dir, opts, &["-Xmx2100m"], &[]);
    let pid2 = second.id();
    sigquit(first.id());
    sigquit(pid2);
    let own = dir.join(format!("out.hprof.{pid2}"));
    common::wait_for_dumps(&dir.join("out.hprof"), 1);
    common::wait_for_dumps(&own, 1);
    std::fs::write(dir.join("marker"), b"").unwrap();
    let errs: Vec<String> = [first, second]
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success());
            String::from_utf8_lossy(&o.stderr).into_owned()
        })
        .collect();
    assert!(!errs[0].contains("HPROF"), "{}", errs[0]);
    let said: Vec<&str> = errs[1].lines().filter(|l| l.contains("HPROF")).collect();
    assert_eq!(
        said,
        [format!(
            "HPROF WARNING: out.hprof is the output of another process that is still running \
             (two JVMs given the same file=): this one writes out.hprof.{pid2}"
        )]
    );
    for f in [dir.join("out.hprof"), own] {
        let p = read_all(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(p.heap_dumps.len(), 2, "{}", f.display());
        assert!(p.heap_dumps.iter().all(|d| d.ended));
    }
}

/// Item 24: a JVM killed (SIGKILL) while the VM writes its dump left the
/// VM's private directory and its partial dump behind for good (no code of
/// the agent runs). The next JVM dumping beside the same output name
/// removes it; a directory of a dump that is running is never touched.
#[test]
fn a_dump_directory_left_by_a_killed_jvm_is_removed_by_the_next_dump() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("hostile_kill9");
    let agent = format!(
        "-agentpath:{}=heap=dump,format=b,file=out.hprof",
        common::agent_path().display()
    );
    let mut child = Command::new(common::java())
        .current_dir(&dir)
        .args([&agent, "-cp"])
        .arg(common::fixture_classes())
        .args(["HeapBench", "256", "marker"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    sigquit(child.id());
    // Killed once the VM's file holds a few MiB.
    let began = Instant::now();
    let growing = || {
        names_with(&dir, ".vmdump.").iter().any(|d| {
            std::fs::metadata(dir.join(d).join("heap.hprof")).is_ok_and(|m| m.len() > 4 << 20)
        })
    };
    while !growing() {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "no VM dump began"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    common::kill_and_reap(&mut child).unwrap();
    let left = names_with(&dir, ".vmdump.");
    assert_eq!(left.len(), 1, "what SIGKILL leaves: {left:?}");

    // The next JVM writing out.hprof: its dump removes the dead one's
    // directory.
    let next = start(&dir, "heap=dump,format=b,file=out.hprof", &[], &[]);
    sigquit(next.id());
    common::wait_for_dumps(&dir.join("out.hprof"), 1);
    assert!(
        !dir.join(&left[0]).exists(),
        "{} left after the next dump",
        left[0]
    );
    let err = finish(&dir, next);
    assert!(!err.contains("HPROF ERROR"), "{err}");
    assert!(names_with(&dir, ".vmdump.").is_empty());
}
