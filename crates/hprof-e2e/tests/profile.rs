//! `hprof-rs profile PID | -- java …` (docs/hprof-rs-tool.md, "profile")
//! on real JVMs: CpuSplit's known 60/30/10 split comes out of a running
//! JVM as collapsed stacks within the bounds of the CPU tests; the same JVM
//! is profiled again to an HTML page (the interactive SVG inline, its
//! script, nothing fetched; read by Chromium where it is installed), a
//! pprof profile (decoded here, field by field) and a binary report (our
//! reader), and runs on afterwards; allocation sites show the allocating
//! method and class; monitor time shows the contended monitor at the
//! contending method; a program started with `-- java …` is profiled to
//! its end, or for the duration and then runs on; bad arguments are
//! usage errors that start nothing; `-e wall` is refused as not available
//! yet.

use crate::common;
use crate::common::pprof;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOOL: &str = env!("HPROF_RS_TOOL");
/// Longest any run of the tool may take; a hang fails the test.
const TOOL_LIMIT: Duration = Duration::from_secs(90);

fn profile(dir: &Path, args: &[&str]) -> common::BoundedRun {
    let mut cmd = Command::new(TOOL);
    cmd.current_dir(dir).arg("profile").args(args);
    let r = common::run_command_bounded(cmd, TOOL_LIMIT);
    assert!(
        !r.timed_out,
        "hprof-rs profile {args:?} did not end within {TOOL_LIMIT:?}:\n{}",
        common::stderr(&r.output)
    );
    r
}

/// `profile` that must succeed; its standard error.
fn profile_ok(dir: &Path, args: &[&str]) -> String {
    let r = profile(dir, args);
    let err = common::stderr(&r.output);
    assert!(r.output.status.success(), "profile {args:?}: {err}");
    err
}

/// A fixture JVM, killed when the test ends whether it passed or not.
struct Jvm(Child);

impl Jvm {
    /// Starts `java -cp FIXTURES main args` and waits until it can be
    /// attached (its SIGQUIT handler is installed: before that, the attach
    /// tool refuses it). `profile` itself waits for the VM's
    /// initialisation to end.
    fn start(dir: &Path, main: &str, args: &[&str]) -> Jvm {
        let child = Command::new(common::java())
            .current_dir(dir)
            .arg("-cp")
            .arg(common::fixture_classes())
            .arg(main)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("jvm.err")).unwrap())
            .spawn()
            .expect("start java");
        let jvm = Jvm(child);
        let start = Instant::now();
        while !catches_sigquit(jvm.pid()) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{main} did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        jvm
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn pid_arg(&self) -> String {
        self.pid().to_string()
    }

    fn running(&mut self) -> bool {
        self.0.try_wait().expect("wait").is_none()
    }
}

impl Drop for Jvm {
    fn drop(&mut self) {
        common::kill_and_reap(&mut self.0);
    }
}

/// CPU time of a process so far (user and system), in ms.
fn cpu_ms(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the JVM runs");
    // Fields after the command's closing parenthesis: utime is the 12th,
    // stime the 13th (clock ticks).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = rest
        .split(' ')
        .skip(11)
        .take(2)
        .map(|x| x.parse().unwrap())
        .collect();
    // SAFETY: sysconf only reads its argument.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    (f[0] + f[1]) * 1000 / hz
}

fn catches_sigquit(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (libc::SIGQUIT - 1)) != 0)
}

/// Collapsed stacks: weight by the top frame, and by whole line.
fn collapsed(path: &Path) -> Vec<(Vec<String>, u64)> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').expect("STACK COUNT");
            (
                stack.split(';').map(str::to_string).collect(),
                n.parse().expect("a count"),
            )
        })
        .collect()
}

fn by_top(stacks: &[(Vec<String>, u64)]) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    for (s, n) in stacks {
        *m.entry(s.last().cloned().unwrap_or_default()).or_insert(0) += n;
    }
    m
}

/// Bytes allocated as `class` directly in `method`, from collapsed
/// allocation stacks (the class is the top frame, the method below it).
fn allocated_at(stacks: &[(Vec<String>, u64)], method: &str, class: &str) -> u64 {
    stacks
        .iter()
        .filter(|(s, _)| {
            s.last().is_some_and(|c| c == class)
                && s.iter().rev().nth(1).is_some_and(|m| m == method)
        })
        .map(|(_, n)| n)
        .sum()
}

/// `profile -e alloc [options] -o out -- java -cp FIXTURES main args`, to
/// its end; its stderr. No site may stand at a row's 32-bit limit.
fn profile_alloc_of(dir: &Path, options: &[&str], out: &str, main_and_args: &[&str]) -> String {
    let (java, classes) = (
        common::java().display().to_string(),
        common::fixture_classes().display().to_string(),
    );
    let mut args = vec!["-e", "alloc"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["-o", out, "--", &java, "-cp", &classes]);
    args.extend_from_slice(main_and_args);
    let err = profile_ok(dir, &args);
    assert!(!err.contains("32-bit counter"), "{err}");
    err
}

/// Total variation distance of (work60, work30, work10) from 60/30/10, and
/// their samples.
fn split(m: &HashMap<String, u64>) -> (f64, f64) {
    let w = |k: &str| *m.get(k).unwrap_or(&0) as f64;
    let (a, b, c) = (
        w("CpuSplit.work60"),
        w("CpuSplit.work30"),
        w("CpuSplit.work10"),
    );
    let n = a + b + c;
    let shares = [a / n, b / n, c / n];
    let tvd = common::split_tvd(shares);
    eprintln!("split {shares:.3?} of {n}; TVD {tvd:.4}");
    (tvd, n)
}

/// The CPU profile of a running JVM, four times over in four formats;
/// the JVM runs on, and each profile ends in it (the next one starts).
#[test]
fn a_running_jvm_gives_its_cpu_split_in_every_format_and_runs_on() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("profile_cpu");
    let mut jvm = Jvm::start(&dir, "CpuSplit", &["600"]);
    let pid = jvm.pid_arg();

    // 3 s at 1 ms of CPU between samples: about 3 000 samples of the busy
    // main thread, as in the attach test (attach_agent.rs), whose bounds
    // these are.
    let cpu_before = cpu_ms(jvm.pid());
    let err = profile_ok(&dir, &["-d", "3s", "-i", "1", &pid, "-o", "x.collapsed"]);
    let cpu_used = cpu_ms(jvm.pid()) - cpu_before;
    let out = dir.join("x.collapsed");
    assert!(
        err.contains(&format!("wrote {}", out.display())),
        "names the output: {err}"
    );
    assert!(err.contains("runs on"), "{err}");
    assert_eq!(
        err.matches("token=").count(),
        err.matches("token=***").count(),
        "the token is not shown: {err}"
    );
    let stacks = collapsed(&out);
    let m = by_top(&stacks);
    let (tvd, n) = split(&m);
    assert!(n >= 2000.0, "too few samples in the work methods: {m:?}");
    assert!(tvd <= 0.03, "split {m:?} too far from 60/30/10 (TVD {tvd})");
    let total: u64 = m.values().sum();
    assert!(n / total as f64 > 0.95, "{m:?}");
    // One sample per ms of CPU, in the profile's window: never more than
    // the JVM's CPU time over the whole command, which also covers the
    // attach and the stop (the main thread spins through them: about
    // 2 300 samples for 3 300 ms here).
    eprintln!("{total} samples, {cpu_used} ms of CPU of the JVM");
    assert!(
        (total as f64) < 1.05 * cpu_used as f64 && total as f64 > 0.5 * cpu_used as f64,
        "{total} samples for {cpu_used} ms of CPU"
    );
    // Whole stacks (depth 64), root first.
    assert!(
        stacks
            .iter()
            .any(|(s, _)| s == &["CpuSplit.main", "CpuSplit.work60"]),
        "{stacks:?}"
    );
    assert!(jvm.running());

    // HTML: the flame graph inline, its script, nothing from elsewhere.
    profile_ok(&dir, &["-q", "-d", "1", &pid, "-o", "x.html"]);
    let html = std::fs::read_to_string(dir.join("x.html")).unwrap();
    check_html(&html);
    assert!(html.contains("data-n=\"CpuSplit.work60\""), "{html}");
    if let Some(share) = browser_search_share(&dir.join("x.html"), "CpuSplit\\.work") {
        assert!(share > 90.0, "the page's search matched {share} %");
    }

    // pprof: decoded here; its samples are CpuSplit's.
    profile_ok(&dir, &["-q", "-d", "1", &pid, "-o", "x.pprof"]);
    let p = pprof::decode(&std::fs::read(dir.join("x.pprof")).unwrap());
    assert_eq!(p.sample_types[0], ("samples".into(), "count".into()));
    let leaf = p.by_leaf(0);
    let w60 = leaf.get("CpuSplit.work60").copied().unwrap_or(0);
    assert!(
        w60 > 0 && leaf.values().all(|&v| v <= w60),
        "work60 leads: {leaf:?}"
    );

    // The agent's binary report, read by our reader.
    profile_ok(&dir, &["-q", "-d", "1", &pid, "-o", "x.hprof"]);
    let f = hprof_analysis::flame::collapse_file(dir.join("x.hprof").to_str().unwrap(), false)
        .expect("our reader reads it");
    let text = hprof_analysis::flame::collapsed_text(&f);
    assert!(text.contains("CpuSplit.main;CpuSplit.work60 "), "{text}");

    // A JFR recording, read by the JDK's own `jfr`: work60 leads.
    profile_ok(&dir, &["-q", "-d", "1", "-i", "1", &pid, "-o", "x.jfr"]);
    let mut cmd = std::process::Command::new(common::jdk_home().join("bin").join("jfr"));
    cmd.args(["print", "--events", "jdk.ExecutionSample"])
        .arg(dir.join("x.jfr"));
    let r = common::run_command_bounded(cmd, std::time::Duration::from_secs(120));
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let printed = common::stdout(&r.output);
    let leaf_count = |m: &str| {
        printed
            .matches(&format!("[\n    CpuSplit.{m}(long)"))
            .count()
    };
    let (w60, w10) = (leaf_count("work60"), leaf_count("work10"));
    assert!(w60 > 100 && w60 > 2 * w10, "work60 {w60}, work10 {w10}");

    // Profile-free and alive: the JVM said each profile stopped, no error.
    assert!(jvm.running(), "the JVM runs on");
    let jvm_err = std::fs::read_to_string(dir.join("jvm.err")).unwrap();
    assert_eq!(
        jvm_err
            .matches("HPROF: profiling stopped; the report went to the front-end")
            .count(),
        5,
        "{jvm_err}"
    );
    assert!(!jvm_err.contains("HPROF ERROR"), "{jvm_err}");
    assert!(
        std::fs::read_dir(&dir).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".stream")),
        "the recorded stream is removed"
    );
}

/// Self-contained: the SVG inline with its zoom and search script, and no
/// reference to anything outside the file.
fn check_html(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert_eq!(html.matches("<svg ").count(), 1);
    assert!(!html.contains("<?xml"), "no XML prolog inside HTML");
    assert!(
        html.contains(hprof_analysis::flame::svg::SCRIPT),
        "the search/zoom script"
    );
    assert!(html.trim_end().ends_with("</html>"));
    let without_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for outside in [
        "http:",
        "https:",
        "//",
        " src=",
        "href=",
        "<link",
        "<img",
        "<iframe",
        "url(",
        "@import",
        "fetch(",
        "XMLHttpRequest",
    ] {
        // `//` starts comments in the script: only URLs are looked for.
        if outside == "//" {
            assert!(!without_ns.contains("=\"//"), "protocol-relative URL");
            continue;
        }
        assert!(
            !without_ns.contains(outside),
            "the page refers to something outside itself ({outside})"
        );
    }
}

/// The share of the graph Chromium's run of the page's own script matched
/// for `term` (given in the address, as the page keeps it), or None when
/// Chromium is not installed.
fn browser_search_share(page: &Path, term: &str) -> Option<f64> {
    let chromium = ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {c}"))
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(chromium) = chromium else {
        eprintln!("SKIPPED: chromium is not installed; the page was not run in a browser");
        return None;
    };
    let profile_dir = page.parent().unwrap().join("chromium-profile");
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        // Nothing may be fetched: every host resolves nowhere.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--dump-dom",
    ])
    .arg(format!("--user-data-dir={}", profile_dir.display()))
    .arg(format!(
        "file://{}#search={}",
        page.display(),
        term.replace('\\', "%5C")
    ));
    let r = common::run_command_bounded(cmd, Duration::from_secs(60));
    assert!(!r.timed_out, "chromium hung");
    let dom = common::stdout(&r.output);
    let share = dom
        .split("data-share=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|s| s.parse().ok());
    assert!(share.is_some(), "the script ran and searched: {dom}");
    share
}

/// Sampled allocation sites of a running JVM: Churn's two allocations in
/// dropOne, each topped by its class.
#[test]
fn alloc_shows_the_allocating_method_and_class() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("profile_alloc");
    // One thread for two seconds, the tool taking the allocations every
    // 250 ms and summing them (ALLOC SITES counters are 32-bit: one
    // thread allocated past 4 GiB at one site in one full run, before
    // the takes).
    let mut jvm = Jvm::start(&dir, "Churn", &["1", "2000000000", "1"]);
    let err = profile_ok(
        &dir,
        &[
            "-e",
            "alloc",
            "-d",
            "2s",
            &jvm.pid_arg(),
            "-o",
            "a.collapsed",
        ],
    );
    assert!(err.contains("bytes"), "{err}");
    let stacks = collapsed(&dir.join("a.collapsed"));
    let at = |class: &str| allocated_at(&stacks, "Churn.dropOne", class);
    let total: u64 = stacks.iter().map(|(_, n)| n).sum();
    let (bytes, dropped) = (at("byte[]"), at("ChurnDropped"));
    eprintln!("byte[] {bytes}, ChurnDropped {dropped} of {total} bytes");
    assert!(bytes > 0 && dropped > 0, "{stacks:?}");
    assert!(
        (bytes + dropped) as f64 / total as f64 > 0.95,
        "dropOne allocates nearly everything: {stacks:?}"
    );
    // Taken every 250 ms, no site of one thread fills a record's 32-bit
    // counter (4 GiB in a quarter of a second), whatever the sum (8.1 GB
    // of byte[] in one run here).
    assert!(!err.contains("32-bit counter"), "{err}");
    // One byte[64] (80 bytes) per ChurnDropped (a reference and an int:
    // 24 bytes), 3.33 times the bytes: the estimate from samples (one per
    // 512 KiB on average, thousands here) keeps the proportion.
    let ratio = bytes as f64 / dropped as f64;
    assert!((2.5..=4.5).contains(&ratio), "byte[]/ChurnDropped {ratio}");
    assert!(jvm.running());
}

/// A JFR recording of allocations past a record's 32-bit counter: Churn,
/// run by the tool, allocates exactly 2 x 30 000 000 byte[64] (80 bytes
/// each: 4.8 GB, past 4 GiB) and as many ChurnDropped (24 bytes) in
/// dropOne; the takes summed in 64 bits give those totals within the
/// sampling's error, as the JDK's `jfr` reads them.
#[test]
fn alloc_jfr_sums_past_the_32_bit_counter() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("profile_alloc_jfr");
    profile_alloc_of(
        &dir,
        &["--alloc-interval", "64k"],
        "a.jfr",
        &["Churn", "2", "30000000", "1"],
    );
    let mut by_class: std::collections::HashMap<String, u64> = Default::default();
    for v in crate::exports::jfr_events(&dir.join("a.jfr"), "jdk.ObjectAllocationSample") {
        let frames = v["values"]["stackTrace"]["frames"].as_array().cloned();
        let in_drop = frames.is_some_and(|f| {
            f.first()
                .is_some_and(|top| crate::exports::frame_name(top) == "Churn.dropOne")
        });
        if in_drop {
            let class = v["values"]["objectClass"]["name"]
                .as_str()
                .unwrap()
                .to_string();
            *by_class.entry(class).or_default() += v["values"]["weight"].as_u64().unwrap();
        }
    }
    // One sample per 64 KiB on average: some 73 000 samples of byte[]
    // and 22 000 of ChurnDropped, relative errors of 0.37 % and 0.67 %
    // (the bounds are 8 and 6 of them: a failure is a bias, not chance).
    // At the JVM's fixed interval of 512 KiB ChurnDropped came out 2.4 %
    // over on average and byte[] 0.8 % under (docs/alloc_sites.md, "Where
    // the VM's sample points fall"), and a run in 40 failed the old 3 %
    // bound on byte[] (it was also three deviations at 512 KiB).
    for (class, size, bound) in [("byte[]", 80_u64, 0.03), ("ChurnDropped", 24, 0.04)] {
        let truth = 2 * 30_000_000 * size;
        let bytes = by_class.get(class).copied().unwrap_or(0);
        eprintln!("{class} in dropOne: {bytes} of {truth}; {by_class:?}");
        let off = (bytes as f64 / truth as f64 - 1.0).abs();
        assert!(off < bound, "{class} {bytes} against {truth}: {by_class:?}");
    }
}

/// Sampled allocations of a loop that allocates the same two objects every
/// round, by the size of each: AllocPattern allocates exactly 20 000 000
/// long[2] (32 bytes) and as many byte[584] (600 bytes) in round(). The
/// JVM draws its sample points from a fixed set of gaps (a table-based
/// logarithm), and at its 512 KiB interval on this 632-byte round it hits
/// long[] some 21 % more often than its size says (a bare JVMTI agent
/// counting the JVM's events: 1 445-1 517 samples where 1 221 are due);
/// the agent redraws the interval after each sample so that the points
/// fall evenly (docs/alloc_sites.md, "Where the VM's sample points
/// fall"). 12 GB of byte[] at one site in about a second also passes the
/// 4 GiB a take's 32-bit row holds: the take is written in several rows.
#[test]
fn alloc_samples_fall_on_a_repeating_pattern_by_size() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("profile_alloc_pattern");
    profile_alloc_of(&dir, &[], "p.collapsed", &["AllocPattern", "20000000"]);
    let stacks = collapsed(&dir.join("p.collapsed"));
    // 22 900 samples of byte[] and 1 221 of long[] are due: relative
    // errors of 0.66 % and 2.9 %; the bounds are 4.5 and 4 of them, and
    // the JVM's own points put long[] 21 % over.
    for (class, size, bound) in [("byte[]", 600_u64, 0.03), ("long[]", 32, 0.115)] {
        let truth = 20_000_000 * size;
        let bytes = allocated_at(&stacks, "AllocPattern.round", class);
        eprintln!("{class} in round: {bytes} of {truth}");
        let off = bytes as f64 / truth as f64 - 1.0;
        assert!(
            off.abs() < bound,
            "{class} {bytes} against {truth} ({:+.1} %): {stacks:?}",
            off * 100.0
        );
    }
}

/// Monitor time of a running JVM whose threads contend for one lock.
#[test]
fn lock_shows_the_contended_monitor_where_it_is_entered() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("profile_lock");
    let mut jvm = Jvm::start(&dir, "Contention", &["hammer", "4", "2000000000"]);
    profile_ok(
        &dir,
        &[
            "-q",
            "-e",
            "lock",
            "-d",
            "2s",
            &jvm.pid_arg(),
            "-o",
            "l.collapsed",
        ],
    );
    let stacks = collapsed(&dir.join("l.collapsed"));
    let total: u64 = stacks.iter().map(|(_, n)| n).sum();
    let hot: u64 = stacks
        .iter()
        .filter(|(s, _)| {
            s.last().is_some_and(|c| c == "Contention$HotLock")
                && s.iter()
                    .rev()
                    .nth(1)
                    .is_some_and(|m| m.starts_with("Contention.lambda$hammer$"))
        })
        .map(|(_, n)| n)
        .sum();
    eprintln!("HotLock {hot} of {total} us blocked");
    assert_eq!(hot, total, "{stacks:?}");
    // Four threads on one lock for 2 s: at least a quarter of a thread
    // blocked on average, in microseconds.
    assert!(total >= 500_000, "{stacks:?}");
    // The same as a JFR recording: jdk.JavaMonitorEnter events on HotLock,
    // entered from the hammer, as long in all as the monitor time.
    profile_ok(
        &dir,
        &[
            "-q",
            "-e",
            "lock",
            "-d",
            "2s",
            &jvm.pid_arg(),
            "-o",
            "l.jfr",
        ],
    );
    let events = crate::exports::jfr_events(&dir.join("l.jfr"), "jdk.JavaMonitorEnter");
    assert!(!events.is_empty());
    let mut blocked_ns = 0;
    for e in &events {
        let v = &e["values"];
        assert_eq!(v["monitorClass"]["name"], "Contention$HotLock", "{e}");
        let top = crate::exports::frame_name(&v["stackTrace"]["frames"][0]);
        assert!(top.starts_with("Contention.lambda$hammer$"), "{e}");
        blocked_ns += crate::exports::duration_ns(&v["duration"]);
    }
    assert!(blocked_ns >= 500_000_000, "{blocked_ns} ns blocked");
    assert!(jvm.running());
}

/// `-- java …`: to the program's end; or for the duration, after which the
/// program runs on to its end and the output is there before it ends.
#[test]
fn a_command_line_is_profiled_to_its_end_or_for_the_duration() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("profile_launch");
    let classes = common::fixture_classes().to_str().unwrap().to_string();
    let java = common::java().to_str().unwrap().to_string();
    let r = profile(
        &dir,
        &[
            "-i",
            "1",
            "-o",
            "j.collapsed",
            "--",
            &java,
            "-cp",
            &classes,
            "CpuSplit",
            "0",
            "300",
        ],
    );
    let err = common::stderr(&r.output);
    assert!(r.output.status.success(), "{err}");
    assert_eq!(
        common::stdout(&r.output),
        "rounds=300\n",
        "the program's own output"
    );
    let m = by_top(&collapsed(&dir.join("j.collapsed")));
    let w = |k: &str| m.get(k).copied().unwrap_or(0);
    assert!(
        w("CpuSplit.work60") > w("CpuSplit.work30") && w("CpuSplit.work30") > w("CpuSplit.work10"),
        "{m:?}"
    );
    assert!(w("CpuSplit.work10") > 0, "{m:?}");

    let start = Instant::now();
    let r = profile(
        &dir,
        &[
            "-d", "1s", "-o", "j.svg", "--", &java, "-cp", &classes, "CpuSplit", "3",
        ],
    );
    let err = common::stderr(&r.output);
    assert!(r.output.status.success(), "{err}");
    assert!(
        start.elapsed() >= Duration::from_secs(3),
        "waited for the program"
    );
    assert!(err.contains("runs on"), "{err}");
    assert!(
        common::stdout(&r.output).starts_with("rounds="),
        "the program ended normally after the stop"
    );
    let svg = std::fs::read_to_string(dir.join("j.svg")).unwrap();
    assert!(svg.contains("data-n=\"CpuSplit.work60\""), "{svg}");
    assert!(!dir.join(".j.svg.stream").exists());
}

/// `-e wall`: wall-clock samples of every thread, where it waits too.
/// MostlyWaiting's four waiting threads spend the run in their wait
/// methods, so each has about a second's worth of samples (20 ms apart by
/// default: ~50), where CPU samples would give them none.
#[test]
fn wall_samples_show_the_threads_where_they_wait() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("profile_wall");
    let classes = common::fixture_classes().to_str().unwrap().to_string();
    let java = common::java().to_str().unwrap().to_string();
    let r = profile(
        &dir,
        &[
            "-q",
            "-e",
            "wall",
            "-o",
            "w.collapsed",
            "--",
            &java,
            "-cp",
            &classes,
            "MostlyWaiting",
            "1",
        ],
    );
    let err = common::stderr(&r.output);
    assert!(r.output.status.success(), "{err}");
    let stacks = collapsed(&dir.join("w.collapsed"));
    let within = |m: &str| -> u64 {
        stacks
            .iter()
            .filter(|(s, _)| s.iter().any(|f| f == m))
            .map(|(_, n)| n)
            .sum()
    };
    for m in [
        "MostlyWaiting.waitOnce",
        "MostlyWaiting.parkOnce",
        "MostlyWaiting.sleepOnce",
        "MostlyWaiting.readOnce",
    ] {
        let n = within(m);
        eprintln!("{m}: {n} wall samples");
        assert!((25..=100).contains(&n), "{m}: {n} samples: {stacks:?}");
    }
}

/// CPU, then wall-clock, then CPU samples of one running JVM: each
/// session's threads move to (and off) their wall timers, so the waiting
/// threads are seen only by the wall-clock session.
#[test]
fn one_jvm_profiled_by_cpu_then_wall_then_cpu_again() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("profile_cpu_wall_cpu");
    let mut jvm = Jvm::start(&dir, "MostlyWaiting", &["60"]);
    let mut waiting = Vec::new();
    for (event, out) in [
        ("cpu", "c1.collapsed"),
        ("wall", "w.collapsed"),
        ("cpu", "c2.collapsed"),
    ] {
        profile_ok(
            &dir,
            &["-q", "-e", event, "-d", "1s", &jvm.pid_arg(), "-o", out],
        );
        let n: u64 = collapsed(&dir.join(out))
            .iter()
            .filter(|(s, _)| s.iter().any(|f| f == "MostlyWaiting.sleepOnce"))
            .map(|(_, n)| n)
            .sum();
        waiting.push(n);
    }
    eprintln!(
        "samples in sleepOnce: cpu {}, wall {}, cpu {}",
        waiting[0], waiting[1], waiting[2]
    );
    assert_eq!(waiting[0], 0, "CPU samples of a sleeping thread");
    assert!((25..=100).contains(&waiting[1]), "wall: {waiting:?}");
    assert_eq!(waiting[2], 0, "CPU samples after the wall session");
    assert!(jvm.running());
}

/// Usage errors (status 2) start nothing.
#[test]
fn bad_arguments_are_usage_errors() {
    let dir = common::scratch("profile_usage");
    for (args, says) in [
        (&["-d", "0", "1"][..], "not a duration"),
        (&["--duration=-1s", "1"], "not a duration"),
        (&["-d", "3x", "1"], "not a duration"),
        (&["-d", "25h", "1"], "at most a day"),
        (&["-o", "x.png", "1"], "extension"),
        (&["-o", "x", "1"], "extension"),
        (&["-e", "lock", "-o", "x.pprof", "1"], "no pprof"),
        (&["-e", "lock", "-o", "x.hprof", "1"], "text only"),
        (&["-e", "wall", "-o", "x.jfr", "1"], "no JFR output"),
        (
            &["-e", "alloc", "-i", "5", "1"],
            "--interval is for -e cpu and -e wall",
        ),
        (&["-e", "bogus", "1"], "invalid value"),
        (&["1", "--", "java", "-version"], "cannot be used with"),
        (&["--", "ls"], "must start with java"),
        (
            &["--", "java", "-agentpath:/x/libhprof_rs.so", "A"],
            "adds the agent itself",
        ),
        (&[], "PID"),
    ] {
        let r = profile(&dir, args);
        let err = common::stderr(&r.output);
        assert_eq!(r.output.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing was written"
    );
}
