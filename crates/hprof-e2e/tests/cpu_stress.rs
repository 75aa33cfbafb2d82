//! Stress of the asynchronous CPU sampler (`cpu=samples,interval=1`, stacks
//! walked in a signal handler): javac on 400 files, a class-loading and
//! unloading storm, 64 threads whose compiled code is deoptimised while it
//! runs, virtual threads mounting and unmounting (JDK 21+), each with
//! SIGQUIT dumps every 250 ms meanwhile. A run passes when the JVM exits
//! normally, leaves no hs_err file, prints no fatal error and no agent
//! internal error, and every report it wrote parses.
//!
//! Each scenario runs `HPROF_STRESS_ROUNDS` times (default 1, what CI
//! does); `scripts/stress-cpu.sh` runs many rounds on every JDK
//! (docs/testing.md).

use crate::common;

use common::ascii;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const OPTS: &str = "cpu=samples,interval=1,depth=8";
/// Between two SIGQUITs.
const QUIT_EVERY: Duration = Duration::from_millis(250);
const LIMIT: Duration = Duration::from_secs(180);

fn rounds() -> usize {
    std::env::var("HPROF_STRESS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// What one run did.
struct Run {
    quits: usize,
    sections: usize,
    samples: u64,
    note: String,
    /// The fixture said it had nothing to do on this JDK (VirtualThreads
    /// without virtual threads: a few milliseconds of work, which may get
    /// no sample at all).
    nothing_to_do: bool,
}

/// Run `java <agent> <args>` in `dir`, sending SIGQUIT every
/// [`QUIT_EVERY`] until it exits; fail on any sign of a crash.
fn run_once(name: &str, dir: &Path, args: &[String]) -> Run {
    let agent = format!(
        "-agentpath:{}={OPTS},file=out.txt",
        common::agent_path().display()
    );
    let mut child = Command::new(common::java())
        .current_dir(dir)
        .arg(&agent)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start java");
    // SIGQUIT makes the JVM print a thread dump on stdout: drain both pipes.
    let drain = |mut p: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = p.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let out_t = drain(Box::new(child.stdout.take().unwrap()));
    let err_t = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let mut quits = 0;
    // The first dump only once the VM is up (a SIGQUIT before the JVM
    // installs its handler would end it).
    let mut next = start + Duration::from_millis(600);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > LIMIT {
            common::kill_and_reap(&mut child);
            panic!("{name}: still running after {LIMIT:?}");
        }
        if Instant::now() >= next {
            let _ = Command::new("kill")
                .args(["-QUIT", &child.id().to_string()])
                .status();
            quits += 1;
            next += QUIT_EVERY;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stdout = out_t.join().unwrap();
    let stderr = err_t.join().unwrap();
    let hs_err: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("hs_err"))
        })
        .collect();
    assert!(
        hs_err.is_empty(),
        "{name}: the JVM crashed: {hs_err:?}\n{stderr}"
    );
    for bad in [
        "A fatal error has been detected",
        "SIGSEGV",
        "SIGBUS",
        "HPROF ERROR: internal error",
        "panicked at",
    ] {
        assert!(
            !stderr.contains(bad),
            "{name}: `{bad}` on stderr:\n{stderr}"
        );
    }
    assert!(
        status.success(),
        "{name}: exit {status}:\n{stderr}\n{}",
        tail(&stdout)
    );
    let text = std::fs::read_to_string(dir.join("out.txt")).expect("output");
    let rep = ascii::parse(&text);
    assert!(!rep.cpu.is_empty(), "{name}: no CPU SAMPLES section");
    let samples = rep.cpu.iter().map(|c| c.total).sum();
    let note = stderr
        .lines()
        .find(|l| l.starts_with("HPROF: cpu=samples"))
        .unwrap_or("")
        .to_string();
    Run {
        quits,
        sections: rep.cpu.len(),
        samples,
        note,
        nothing_to_do: stdout.contains("no virtual threads"),
    }
}

fn tail(s: &str) -> &str {
    &s[s.len().saturating_sub(2000)..]
}

fn stress(name: &str, setup: impl Fn(&Path) -> Vec<String>) {
    let _only_jvm = common::exclusive();
    for round in 1..=rounds() {
        let dir = common::scratch(name);
        let args = setup(&dir);
        let t0 = Instant::now();
        let r = run_once(name, &dir, &args);
        eprintln!(
            "STRESS {name} round {round}: ok in {:.1} s, {} SIGQUIT, {} CPU sections, {} samples; {}",
            t0.elapsed().as_secs_f64(),
            r.quits,
            r.sections,
            r.samples,
            r.note
        );
        assert!(r.samples > 0 || r.nothing_to_do, "{name}: nothing sampled");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn fixture(main: &str, args: &[&str]) -> Vec<String> {
    let mut v = vec![
        "-cp".to_string(),
        common::fixture_classes().display().to_string(),
        main.to_string(),
    ];
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

fn has_javac() -> bool {
    Command::new(common::java())
        .arg("--list-modules")
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.starts_with("jdk.compiler@"))
        })
}

#[test]
fn async_sampler_survives_javac_on_400_files() {
    if !has_javac() {
        println!("skipped: the JDK under test has no jdk.compiler module");
        return;
    }
    stress("stress_javac", |dir| {
        let files = common::sources::generate(dir, 400);
        std::fs::create_dir_all(dir.join("classes")).unwrap();
        let mut v: Vec<String> = [
            "-m",
            "jdk.compiler/com.sun.tools.javac.Main",
            "--release",
            "11",
            "-d",
            "classes",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(files.iter().map(|f| f.display().to_string()));
        v
    });
}

#[test]
fn async_sampler_survives_a_class_loading_and_unloading_storm() {
    stress("stress_classes", |_| {
        fixture("CpuStress", &["classes", "3"])
    });
}

#[test]
fn async_sampler_survives_64_threads_being_deoptimised() {
    stress("stress_deopt", |_| fixture("CpuStress", &["deopt", "3"]));
}

/// JDK 21+: 20 000 virtual threads that sleep twice each, then CPU-bound
/// virtual threads that yield; older JDKs run the same on platform
/// threads.
#[test]
fn async_sampler_survives_virtual_threads_mounting_and_unmounting() {
    stress("stress_vthreads_park", |_| {
        fixture("VirtualThreads", &["20000"])
    });
    stress("stress_vthreads_cpu", |_| {
        fixture("VirtualCpu", &["2", "32"])
    });
}
