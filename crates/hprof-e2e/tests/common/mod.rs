//! Shared helpers for integration tests: locate the JDK and the agent
//! library, compile `java-fixtures/`, and run a JVM with the agent.
#![allow(dead_code)]

pub mod ascii;
pub mod heap_shapes;
pub mod pprof;
pub mod sites;
pub mod sources;
pub mod synth;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// JDK under test: `HPROF_TEST_JDK` (set by scripts/test.sh for the
/// other versions), else `JAVA_HOME`, else the `java` on the PATH.
pub fn jdk_home() -> PathBuf {
    if let Ok(p) = std::env::var("HPROF_TEST_JDK") {
        return PathBuf::from(p);
    }
    if let Ok(p) = std::env::var("JAVA_HOME") {
        if Path::new(&p).join("bin/java").exists() {
            return PathBuf::from(p);
        }
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg("readlink -f \"$(command -v java)\"")
        .output()
        .expect("find java");
    let java = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    java.parent()
        .and_then(|p| p.parent())
        .expect("java under JDK/bin")
        .to_path_buf()
}

pub fn java() -> PathBuf {
    jdk_home().join("bin/java")
}

/// `java.version` of the JDK under test.
pub fn java_version() -> &'static str {
    static V: OnceLock<String> = OnceLock::new();
    V.get_or_init(|| {
        let out = Command::new(java())
            .args(["-XshowSettings:properties", "-version"])
            .output()
            .unwrap();
        stderr(&out)
            .lines()
            .find_map(|l| l.trim().strip_prefix("java.version = ").map(String::from))
            .expect("java.version in -XshowSettings:properties")
    })
}

/// The feature release of the JDK under test (11, 17, 21, 25).
pub fn java_major() -> u32 {
    java_version()
        .split(['.', '-', '+'])
        .next()
        .and_then(|m| m.parse().ok())
        .expect("a numeric java.version")
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// javac always comes from the build JDK (JDK 17 on the PATH, or
/// HPROF_JAVAC_HOME): runtime-only JDKs used for the cross-version runs
/// have no compiler, and fixtures are compiled for release 11 so every
/// tested JVM can run them.
pub fn javac() -> PathBuf {
    if let Ok(p) = std::env::var("HPROF_JAVAC_HOME") {
        return PathBuf::from(p).join("bin/javac");
    }
    let j = jdk_home().join("bin/javac");
    if j.exists() && std::env::var("HPROF_TEST_JDK").is_err() {
        return j;
    }
    PathBuf::from("javac")
}

/// target/<profile>/ of the running test binary.
pub fn target_profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// The agent library built alongside the tests (`HPROF_AGENT` overrides).
pub fn agent_path() -> PathBuf {
    if let Ok(p) = std::env::var("HPROF_AGENT") {
        return PathBuf::from(p);
    }
    let p = target_profile_dir().join("libhprof_rs.so");
    assert!(p.exists(), "agent library not built: {}", p.display());
    p
}

pub fn fixtures_src() -> PathBuf {
    PathBuf::from(env!("HPROF_REPO")).join("java-fixtures")
}

/// Compile every fixture once per test process; returns the classes dir.
pub fn fixture_classes() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("fixtures-{}", std::process::id()));
        std::fs::create_dir_all(&out).unwrap();
        let mut sources = Vec::new();
        for e in std::fs::read_dir(fixtures_src()).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "java") {
                sources.push(p);
            }
        }
        let st = Command::new(javac())
            .args(["--release", "11", "-g", "-d"])
            .arg(&out)
            .args(&sources)
            .status()
            .expect("run javac");
        assert!(st.success(), "javac failed");
        out
    })
}

/// A fresh scratch directory, unique per call (tests run in parallel).
pub fn scratch(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `java -agentpath:<agent>=<opts> -cp <fixtures> <main> <args>` in `cwd`.
pub fn run_with_agent(cwd: &Path, opts: &str, main: &str, args: &[&str]) -> Output {
    let agent = if opts.is_empty() {
        format!("-agentpath:{}", agent_path().display())
    } else {
        format!("-agentpath:{}={}", agent_path().display(), opts)
    };
    run_java(cwd, &[&agent], main, args)
}

pub fn run_java(cwd: &Path, jvm_args: &[&str], main: &str, args: &[&str]) -> Output {
    let out = Command::new(java())
        .current_dir(cwd)
        .args(jvm_args)
        .arg("-cp")
        .arg(fixture_classes())
        .arg(main)
        .args(args)
        .output()
        .expect("run java");
    check_agent_stderr(jvm_args, &out);
    out
}

/// An internal error of the agent fails the test that provoked it, even if
/// everything the test checks looks right: the agent turns panics into
/// `HPROF ERROR: internal error ...` lines and goes on, so a passing test
/// could hide one. Tests that inject faults on purpose start their JVMs
/// without these helpers.
pub fn check_agent_stderr(jvm_args: &[&str], out: &Output) {
    if !jvm_args.iter().any(|a| a.starts_with("-agentpath:")) {
        return;
    }
    let err = stderr(out);
    for bad in ["HPROF ERROR: internal error", "panicked at"] {
        assert!(
            !err.contains(bad),
            "the agent reported `{bad}` (options {jvm_args:?}):\n{err}"
        );
    }
}

/// `hprof-rs listen --port 0 --out OUT [more…]` running, stdout piped,
/// and the port it said it listens on (its first line on stderr, which
/// `first` keeps). `stderr` is the rest of that stream, kept open for the
/// tool to write to.
pub struct Listen {
    pub child: std::process::Child,
    pub port: u16,
    pub first: String,
    pub stderr: std::io::BufReader<std::process::ChildStderr>,
}

pub fn start_listen(out: &Path, more: &[&str]) -> Listen {
    use std::io::BufRead;
    let mut child = Command::new(env!("HPROF_RS_TOOL"))
        .args(["listen", "--port", "0", "--out"])
        .arg(out)
        .args(more)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let port = first
        .trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("listen said: {first}"));
    Listen {
        child,
        port,
        first,
        stderr,
    }
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Serialises timing-sensitive JVM runs within one test binary: tests run
/// in parallel, and on a 2-core machine a second JVM would steal the CPU a
/// timing measurement depends on.
pub fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a bounded JVM run produced: `timed_out` is true when the process
/// had to be killed (its output up to then is still returned).
pub struct BoundedRun {
    pub output: Output,
    pub timed_out: bool,
    pub elapsed: std::time::Duration,
}

/// Run `java <jvm_args> -cp <fixtures> <main> <args>` in `cwd`, killing it
/// after `limit`. Tests of hangs and of hostile input must use this (never
/// `run_java`), so a regression fails the test instead of hanging CI.
/// stdout and stderr are drained by threads while waiting, so a chatty JVM
/// cannot block on a full pipe.
pub fn run_java_bounded(
    cwd: &Path,
    jvm_args: &[&str],
    main: &str,
    args: &[&str],
    limit: std::time::Duration,
) -> BoundedRun {
    let mut cmd = Command::new(java());
    cmd.current_dir(cwd)
        .args(jvm_args)
        .arg("-cp")
        .arg(fixture_classes())
        .arg(main)
        .args(args);
    let r = run_command_bounded(cmd, limit);
    check_agent_stderr(jvm_args, &r.output);
    r
}

/// `run_java_bounded` with the agent and its options in front.
pub fn run_with_agent_bounded(
    cwd: &Path,
    opts: &str,
    main: &str,
    args: &[&str],
    limit: std::time::Duration,
) -> BoundedRun {
    let agent = format!("-agentpath:{}={}", agent_path().display(), opts);
    run_java_bounded(cwd, &[&agent], main, args, limit)
}

/// Run any command with a time limit (see `run_java_bounded`).
/// Kills a process a test started, if it has not been reaped yet, and
/// reaps it. A JVM killed outright leaves its attach socket
/// `/tmp/.java_pid<PID>` behind (HotSpot removes it only as it exits
/// normally), and a run of this suite goes through every pid (they wrap
/// at 32768): a later JVM given the same pid would find it there, and the
/// JDK's `jcmd` would be refused (hprof-rs attach copes, docs/attach.md).
/// The socket goes while the killed process is a zombie, so that its pid
/// cannot have been given to another process yet.
pub fn kill_and_reap(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    if child.kill().is_ok() {
        let pid = child.id() as libc::pid_t;
        // SAFETY: an all-zero siginfo_t is a valid value of this C struct,
        // filled by waitid, which waits for `pid` to exit without reaping
        // it (WNOWAIT) and writes only into `info`.
        let exited = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            ) == 0
        };
        if exited {
            remove_left_attach_socket(child.id());
        }
    }
    child.wait().ok()
}

/// Removes `/tmp/.java_pid<PID>` if it is a socket (see [`kill_and_reap`]).
fn remove_left_attach_socket(pid: u32) {
    use std::os::unix::fs::FileTypeExt;
    let path = PathBuf::from(format!("/tmp/.java_pid{pid}"));
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_socket()) {
        let _ = std::fs::remove_file(&path);
    }
}

pub fn run_command_bounded(mut cmd: Command, limit: std::time::Duration) -> BoundedRun {
    use std::io::Read;
    use std::process::Stdio;
    let start = std::time::Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start command");
    let mut out_pipe = child.stdout.take().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out_pipe.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err_pipe.read_to_end(&mut v);
        v
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait for command") {
            break st;
        }
        if start.elapsed() >= limit {
            timed_out = true;
            break kill_and_reap(&mut child).expect("reap killed command");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    BoundedRun {
        output: Output {
            status,
            stdout,
            stderr,
        },
        timed_out,
        elapsed,
    }
}

/// Instances and arrays per class name (Java style; `int[]` for
/// primitive arrays) in one heap dump.
pub fn instance_counts(
    p: &hprof_core::reader::Parsed,
    d: &hprof_core::reader::HeapDump,
) -> std::collections::HashMap<String, u64> {
    let mut m = std::collections::HashMap::new();
    let name = |id: u64| {
        p.class_name(id)
            .map(hprof_core::reader::java_class_name)
            .unwrap_or_else(|| format!("?{id:x}"))
    };
    for i in &d.instances {
        *m.entry(name(i.class_id)).or_default() += 1;
    }
    for a in &d.object_arrays {
        *m.entry(name(a.array_class_id)).or_default() += 1;
    }
    for a in &d.primitive_arrays {
        *m.entry(format!("{}[]", a.element_type.java_name()))
            .or_default() += 1;
    }
    m
}

/// `jmap -histo:live` instance counts by class name (Java style), from
/// the JDK under test's jmap (or the PATH's), within a minute.
pub fn jmap_histo_live(pid: u32) -> std::collections::HashMap<String, u64> {
    let jmap = jdk_home().join("bin/jmap");
    let jmap = if jmap.exists() {
        jmap
    } else {
        PathBuf::from("jmap")
    };
    let mut c = Command::new(jmap);
    c.args(["-histo:live", &pid.to_string()]);
    let r = run_command_bounded(c, std::time::Duration::from_secs(60));
    assert!(r.output.status.success(), "jmap: {}", stderr(&r.output));
    let mut m = std::collections::HashMap::new();
    for line in stdout(&r.output).lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() >= 4 && cols[0].ends_with(':') {
            m.insert(
                hprof_core::reader::java_class_name(cols[3]),
                cols[1].parse().unwrap(),
            );
        }
    }
    m
}

/// Wait (at most a minute) until the binary file holds `n` complete heap
/// dumps.
pub fn wait_for_dumps(path: &Path, n: usize) {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(60) {
        if let Ok(p) = hprof_core::reader::read_all(path) {
            if p.heap_dumps.iter().filter(|d| d.ended).count() >= n {
                return;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("no complete heap dump in {}", path.display());
}

/// Environment variable naming the one test a fresh copy of this binary runs
/// (see [`in_own_process`]).
const OWN_PROCESS: &str = "HPROF_E2E_OWN_PROCESS";

/// Run `body` in a fresh process of this test binary that runs only the
/// test `name` (its full path, `area::test`), and fail when it fails.
/// For tests that measure a child's peak memory with `wait4`: a child's
/// peak includes what its parent held when it forked (the kernel keeps
/// the larger of the old and new images' peaks across `exec`), and the
/// one test binary, running other tests beside, holds far more than the
/// program measured. A fresh process holds only this test's data.
pub fn in_own_process(name: &str, body: impl FnOnce()) {
    if std::env::var(OWN_PROCESS).as_deref() == Ok(name) {
        body();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(OWN_PROCESS, name)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the test in its own process");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{name} in its own process: {}\n{stdout}",
        out.status
    );
}

/// Total variation distance between measured shares and CpuSplit's
/// 60/30/10 (work60, work30, work10).
pub fn split_tvd(shares: [f64; 3]) -> f64 {
    shares
        .iter()
        .zip([0.6, 0.3, 0.1])
        .map(|(s, e)| (s - e).abs())
        .sum::<f64>()
        / 2.0
}
