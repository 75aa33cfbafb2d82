//! The agent started in a running JVM (docs/attach.md): loaded with
//! `jcmd PID JVMTI.agent_load` or `hprof-rs attach PID`, it profiles from
//! the attach on (CPU split, heap dump counts equal to jmap's, allocation
//! sites of what is allocated after the attach, monitor contention); a
//! second load is refused, the option string `stop` writes the final
//! report and leaves the program running, and a later attach starts anew;
//! what cannot work in a running VM is refused with one line and a
//! non-zero return code; `listen=` serves the stream to one front-end
//! after another, each getting everything from the first byte, and turns
//! away wrong tokens, garbage and crowds.
//!
//! The program is java-fixtures/AttachTarget.java, driven through its
//! standard input. On the other JDKs (`HPROF_TEST_JDK`, the smoke runs of
//! scripts/test.sh) the tests marked `full_only` are skipped.

use crate::common;

use common::sites::{parse_sites, Counts};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const TOOL: &str = env!("HPROF_RS_TOOL");
/// Longest wait for one answer of the program or one jcmd run.
const LIMIT: Duration = Duration::from_secs(60);

/// True on the smoke runs of the other JDKs.
fn smoke() -> bool {
    std::env::var_os("HPROF_TEST_JDK").is_some()
}

/// Tests that run on the default JDK only (the smoke runs skip them).
fn full_only(name: &str) -> bool {
    if smoke() {
        eprintln!(
            "SKIPPED on {}: {name} runs on the default JDK",
            common::jdk_home().display()
        );
        return false;
    }
    true
}

/// An AttachTarget JVM.
struct Target {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    pid: u32,
    dir: PathBuf,
    lines: Receiver<String>,
    err: Option<JoinHandle<String>>,
}

impl Target {
    fn start(name: &str) -> Target {
        Target::start_with(name, &[])
    }

    fn start_with(name: &str, jvm_args: &[&str]) -> Target {
        let dir = common::scratch(name);
        let mut child = Command::new(common::java())
            .current_dir(&dir)
            .args(jvm_args)
            .arg("-cp")
            .arg(common::fixture_classes())
            .arg("AttachTarget")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start java");
        let (tx, lines) = channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut e = child.stderr.take().unwrap();
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = e.read_to_string(&mut s);
            s
        });
        let t = Target {
            pid: child.id(),
            stdin: child.stdin.take(),
            child: Some(child),
            dir,
            lines,
            err: Some(err),
        };
        assert_eq!(t.answer(), "ready");
        t
    }

    fn answer(&self) -> String {
        self.lines
            .recv_timeout(LIMIT)
            .unwrap_or_else(|_| panic!("the program did not answer within {LIMIT:?}"))
    }

    /// Send a command without waiting for its answer.
    fn tell(&mut self, cmd: &str) {
        let s = self.stdin.as_mut().unwrap();
        writeln!(s, "{cmd}").unwrap();
        s.flush().unwrap();
    }

    /// Send a command and return its answer.
    fn ask(&mut self, cmd: &str) -> String {
        self.tell(cmd);
        self.answer()
    }

    fn alive(&mut self) -> bool {
        self.child.as_mut().unwrap().try_wait().unwrap().is_none()
    }

    /// `exit`; the exit status and standard error (killed after a minute).
    fn exit(mut self) -> (ExitStatus, String) {
        assert_eq!(self.ask("exit"), "bye");
        drop(self.stdin.take());
        let mut child = self.child.take().unwrap();
        let start = Instant::now();
        let st = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if start.elapsed() > LIMIT {
                break common::kill_and_reap(&mut child).unwrap();
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let err = self.err.take().unwrap().join().unwrap();
        (st, err)
    }

    /// `exit`: the program must end with status 0 and no internal error
    /// of the agent; its standard error.
    fn exit_cleanly(self) -> String {
        let (st, err) = self.exit();
        assert!(st.success(), "{st}: {err}");
        no_internal_errors(&err);
        err
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            common::kill_and_reap(&mut c);
        }
    }
}

/// How the agent is loaded.
#[derive(Clone, Copy, Debug)]
enum Via {
    Jcmd,
    Tool,
}

/// Load the agent with `opts`; the return code the JVM answered.
fn load(t: &Target, via: Via, opts: &str) -> i32 {
    let pid = t.pid.to_string();
    let agent = common::agent_path().display().to_string();
    let (cmd, args): (PathBuf, Vec<String>) = match via {
        // jcmd splits its arguments at '=' unless they are quoted.
        Via::Jcmd => (
            common::jdk_home().join("bin/jcmd"),
            vec![pid, "JVMTI.agent_load".into(), agent, format!("\"{opts}\"")],
        ),
        Via::Tool => (
            TOOL.into(),
            vec!["attach".into(), pid, opts.into(), "--agent".into(), agent],
        ),
    };
    let mut c = Command::new(cmd);
    c.args(&args);
    let r = common::run_command_bounded(c, LIMIT);
    assert!(!r.timed_out, "{via:?} {opts} did not end");
    let out = common::stdout(&r.output);
    let rc: i32 = out
        .lines()
        .find_map(|l| l.strip_prefix("return code: "))
        .unwrap_or_else(|| {
            panic!(
                "{via:?} {opts}: no return code in {out:?} {}",
                common::stderr(&r.output)
            )
        })
        .trim()
        .parse()
        .unwrap();
    if let Via::Tool = via {
        assert_eq!(
            r.output.status.success(),
            rc == 0,
            "{}",
            common::stderr(&r.output)
        );
    }
    rc
}

/// jcmd PID COMMAND.
fn jcmd(pid: u32, command: &str) {
    let mut c = Command::new(common::jdk_home().join("bin/jcmd"));
    c.args([&pid.to_string(), command]);
    let r = common::run_command_bounded(c, LIMIT);
    assert!(
        r.output.status.success(),
        "jcmd {command}: {}",
        common::stderr(&r.output)
    );
}

/// The target's standard error without the JDK's dynamic-loading
/// warnings (JDK 21 and later, at every load) and with the source
/// locations of HPROF ERROR lines cut off.
fn agent_lines(err: &str) -> Vec<String> {
    err.lines()
        .filter(|l| !l.starts_with("WARNING: "))
        .map(|l| match l.rfind(" [") {
            Some(i) if l.starts_with("HPROF ERROR") && l.ends_with(']') => l[..i].to_string(),
            _ => l.to_string(),
        })
        .collect()
}

/// Each line of `err` (as `agent_lines` gives it) against `expected`: a
/// string ending in `*` matches lines that start with the rest.
fn assert_lines(err: &str, expected: &[&str]) {
    // The count of samples a cpu=samples session could not count is said
    // only when there were some (a stack not walkable at that instant):
    // it comes and goes from run to run, so it is not expected.
    let got: Vec<String> = agent_lines(err)
        .into_iter()
        .filter(|l| {
            !(l.starts_with("HPROF: cpu=samples (cpusampler=") && l.contains(" not counted"))
        })
        .collect();
    let ok = got.len() == expected.len()
        && got
            .iter()
            .zip(expected)
            .all(|(g, e)| match e.strip_suffix('*') {
                Some(prefix) => g.starts_with(prefix),
                None => g == e,
            });
    assert!(
        ok,
        "standard error:\n{}\nexpected:\n{}",
        got.join("\n"),
        expected.join("\n")
    );
}

fn no_internal_errors(err: &str) {
    for bad in ["internal error", "panicked at", "HPROF TERMINATED"] {
        assert!(!err.contains(bad), "{bad}:\n{err}");
    }
}

/// Wait until `path` contains `text` (the writer flushes within 200 ms).
fn wait_for(path: &Path, text: &str) -> String {
    let start = Instant::now();
    loop {
        let s = std::fs::read_to_string(path).unwrap_or_default();
        if s.contains(text) {
            return s;
        }
        assert!(
            start.elapsed() < LIMIT,
            "{text:?} never appeared in {}:\n{s}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Samples per method at the top of the traces of one CPU section.
fn by_top_method(section: &common::ascii::CpuSection) -> HashMap<String, u32> {
    let mut m = HashMap::new();
    for r in &section.rows {
        *m.entry(r.method.clone()).or_insert(0) += r.count;
    }
    m
}

/// Samples of one CPU section whose trace has a frame whose
/// `Class.method` contains `part` (lower case). The blocked threads are named by `java.net.ServerSocket.accept`,
/// not `accept`: JDK 25 sampled main once in
/// `InvokerBytecodeGenerator$4$1.accept` (a lambda form being generated).
fn samples_through(rep: &common::ascii::Report, section: usize, part: &str) -> u32 {
    rep.cpu[section]
        .rows
        .iter()
        .filter(|r| {
            rep.traces[&r.trace].frames.iter().any(|f| {
                format!("{}.{}", f.class, f.method)
                    .to_lowercase()
                    .contains(part)
            })
        })
        .map(|r| r.count)
        .sum()
}

#[test]
fn cpu_samples_attached_to_a_busy_program_show_its_split() {
    let _cpu = common::exclusive();
    let mut t = Target::start("attach_cpu");
    // Three threads blocked in native code (ServerSocket.accept) before
    // the attach: RUNNABLE to JVMTI, so the original's rule would give
    // each a sample every 1 ms; they use no CPU, so none here.
    assert_eq!(t.ask("block 3"), "blocking 3");
    // Busy before the attach, then 800 rounds of the same work (about 3 s
    // of CPU, whatever the load of the machine): about 3 000 samples at
    // interval=1, enough for the split to be within 3 points in all but
    // about 1 run of 1 000 by binomial noise alone (also on the other
    // JDKs).
    t.tell("spin 1500");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        load(&t, Via::Jcmd, "cpu=samples,interval=1,file=cpu.txt"),
        0
    );
    t.tell("work 800");
    assert_eq!(t.answer(), "spun");
    assert!(t.answer().starts_with("worked "));
    assert_eq!(load(&t, Via::Jcmd, "stop"), 0);
    // The program goes on after the stop, and ends normally.
    assert_eq!(t.ask("count"), "0");
    let text = std::fs::read_to_string(t.file("cpu.txt")).unwrap();
    let err = t.exit_cleanly();
    // Sampled as at start-up: no fallback, no thread left out.
    assert_lines(
        &err,
        &[
            "HPROF: profiling started in this running JVM (options \"cpu=samples,interval=1,file=cpu.txt\")",
            "Dumping CPU usage by sampling running threads ... done.",
            "HPROF: profiling stopped; the report went to cpu.txt",
        ],
    );

    let rep = common::ascii::parse(&text);
    assert_eq!(
        rep.cpu.len(),
        1,
        "one CPU SAMPLES section, written at the stop"
    );
    let m = by_top_method(&rep.cpu[0]);
    let w = |k: &str| *m.get(k).unwrap_or(&0) as f64;
    let (a, b, c) = (
        w("AttachTarget.work60"),
        w("AttachTarget.work30"),
        w("AttachTarget.work10"),
    );
    let n = a + b + c;
    // About 1 per ms of the main thread's CPU.
    assert!(n >= 2000.0, "too few samples in the work methods: {m:?}");
    let tvd = common::split_tvd([a / n, b / n, c / n]);
    eprintln!(
        "split {:.3} {:.3} {:.3} of {n}; TVD {tvd:.4}",
        a / n,
        b / n,
        c / n
    );
    // The rounds of `spin` take the same few ms each; random sampling
    // periods keep the samples off their phase (with CPU-time timers at
    // the kernel's 4 ms tick, TVD was 0.007 to 0.081 from run to run).
    assert!(tvd <= 0.03, "split {m:?} too far from 60/30/10 (TVD {tvd})");
    // The threads blocked in native code since before the attach use no
    // CPU: not one sample (the original's rule: three in every pass).
    assert_eq!(
        samples_through(&rep, 0, "java.net.serversocket.accept"),
        0,
        "{m:?}"
    );
    assert!(
        n / rep.cpu[0].total as f64 > 0.95,
        "{m:?} of {}",
        rep.cpu[0].total
    );
    // The threads running at the attach were announced.
    let names: Vec<&str> = rep.thread_starts.iter().map(|t| t.name.as_str()).collect();
    for name in [
        "main",
        "attach-target-worker",
        "Reference Handler",
        "attach-target-blocked-0",
        "attach-target-blocked-2",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
}

/// An attach to a JVM with 5 000 threads matches every one of them to its
/// Linux thread (one thread dump, looked up by an index: linear in the
/// threads) and starts in seconds; matching by a search of the whole dump
/// per thread took 31 to 52 s at 5 000 threads, with the application
/// paused for up to 4.3 s.
#[test]
fn an_attach_to_5000_threads_times_them_all_quickly() {
    let _cpu = common::exclusive();
    let mut t = Target::start("attach_5000");
    assert_eq!(t.ask("park 5000"), "parked 5000");
    let t0 = std::time::Instant::now();
    assert_eq!(
        load(
            &t,
            Via::Jcmd,
            "cpu=samples,interval=10,logflags=1,file=cpu.txt"
        ),
        0
    );
    let took = t0.elapsed();
    assert_eq!(load(&t, Via::Jcmd, "stop"), 0);
    let err = t.exit_cleanly();
    eprintln!("attach to 5000 parked threads took {took:?}");
    let timed = err
        .lines()
        .find_map(|l| {
            l.split("cpu=samples: ")
                .nth(1)?
                .strip_suffix(" not")?
                .split_once(" threads running at the attach timed, ")
        })
        .unwrap_or_else(|| panic!("no count of the threads timed: {err}"));
    let (timed, not): (u32, u32) = (timed.0.parse().unwrap(), timed.1.parse().unwrap());
    assert!(timed >= 5000 && not == 0, "{timed} timed, {not} not: {err}");
    assert!(took < Duration::from_secs(25), "the attach took {took:?}");
}

/// A second cpu=samples session after a stop takes its own options (here
/// the safepoint sampler, which asks the timers for ticks instead of
/// stacks) and samples the threads the first one timed, under its own
/// serials; blocked threads stay at zero in both.
#[test]
fn a_second_cpu_samples_session_times_the_running_threads_again() {
    let _cpu = common::exclusive();
    let mut t = Target::start("attach_cpu_again");
    assert_eq!(t.ask("block 2"), "blocking 2");
    t.tell("spin 4000");
    std::thread::sleep(Duration::from_millis(300));
    for (opts, file) in [
        ("cpu=samples,interval=5,file=a.txt", "a.txt"),
        (
            "cpu=samples,cpusampler=safepoint,interval=5,thread=y,file=b.txt",
            "b.txt",
        ),
    ] {
        assert_eq!(load(&t, Via::Tool, opts), 0, "{opts}");
        std::thread::sleep(Duration::from_millis(1200));
        assert_eq!(load(&t, Via::Tool, "stop"), 0);
        let text = std::fs::read_to_string(t.file(file)).unwrap();
        let rep = common::ascii::parse(&text);
        let m = by_top_method(&rep.cpu[0]);
        let work: u32 = [
            "AttachTarget.work60",
            "AttachTarget.work30",
            "AttachTarget.work10",
        ]
        .iter()
        .map(|k| *m.get(*k).unwrap_or(&0))
        .sum();
        // About 1200 ms / 5 ms of the main thread's CPU.
        assert!(work >= 100, "{opts}: {m:?}");
        assert_eq!(
            samples_through(&rep, 0, "java.net.serversocket.accept"),
            0,
            "{opts}: {m:?}"
        );
        if file == "b.txt" {
            // The main thread's samples carry this session's serial.
            let main = rep
                .thread_starts
                .iter()
                .find(|t| t.name == "main")
                .expect("main announced")
                .id;
            for r in &rep.cpu[0].rows {
                if r.method.starts_with("AttachTarget.work") {
                    assert_eq!(rep.traces[&r.trace].thread, Some(main), "{text}");
                }
            }
        }
    }
    assert_eq!(t.answer(), "spun");
    let err = t.exit_cleanly();
    assert!(!err.contains("could not be matched"), "{err}");
    assert!(!err.contains("cpusampler=runnable"), "{err}");
}

/// Threads whose names confuse a reader of thread dumps, spinning since
/// before the attach, are each found and sampled; the one thread whose
/// dump entry another name imitates (main) is left out, and one line
/// says so.
#[test]
fn cpu_samples_attached_time_threads_with_hostile_names() {
    let _cpu = common::exclusive();
    let mut t = Target::start("attach_cpu_names");
    // The threads spin from before the attach until "join" (a bound of
    // two minutes), so the profile covers spin_ms of their spinning however
    // long the attach itself takes on a loaded machine.
    let spin_ms = if smoke() { 1500 } else { 2500 };
    let answer = t.ask("hostile 120000");
    let main_id = answer
        .strip_prefix("hostile 6 ")
        .unwrap_or_else(|| panic!("{answer}"));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        load(
            &t,
            Via::Tool,
            "cpu=samples,interval=5,thread=y,file=cpu.txt"
        ),
        0
    );
    std::thread::sleep(Duration::from_millis(spin_ms));
    assert_eq!(t.ask("join"), "joined");
    assert_eq!(load(&t, Via::Tool, "stop"), 0);
    let text = std::fs::read_to_string(t.file("cpu.txt")).unwrap();
    let err = t.exit_cleanly();
    let lines = agent_lines(&err);
    // Every thread is found by its VM address, whatever its name says
    // (even the main thread, which one name imitates).
    assert!(
        !lines.iter().any(|l| l.contains("could not be matched")),
        "{lines:?}"
    );
    let rep = common::ascii::parse(&text);
    // Each of the six spinning threads has samples of its own.
    let by_serial: HashMap<u32, &str> = rep
        .thread_starts
        .iter()
        .map(|t| (t.id, t.name.as_str()))
        .collect();
    let mut spinning: HashMap<&str, u32> = HashMap::new();
    for r in &rep.cpu[0].rows {
        let tr = &rep.traces[&r.trace];
        if tr
            .frames
            .iter()
            .any(|f| f.method == "spinNamed" || f.method == "spinRenaming")
        {
            let serial = tr.thread.expect("thread=y");
            *spinning.entry(by_serial[&serial]).or_default() += r.count;
        }
    }
    // The thread that renames itself is sampled under the name it had
    // when the attach listed it.
    let mut names: Vec<&str> = spinning
        .keys()
        .map(|n| {
            if n.starts_with("renamed-") {
                "renamed-"
            } else {
                n
            }
        })
        .collect();
    names.sort();
    let imitation = format!("x\n\"main\" #{main_id} prio=5 os_prio=0 tid=0x1 nid=0x1 ");
    assert_eq!(
        names,
        [
            "",
            "#3 ",
            "renamed-",
            "say \"hi\" #7 ",
            "two\nlines",
            imitation.as_str(),
        ],
        "{spinning:?}"
    );
}

#[test]
fn heap_dump_attached_counts_match_jmap_and_the_exit_dump_follows() {
    if !full_only("heap_dump_attached_counts_match_jmap_and_the_exit_dump_follows") {
        return;
    }
    let mut t = Target::start("attach_heap_dump");
    assert_eq!(t.ask("alloc 1000"), "allocated 1000");
    assert_eq!(load(&t, Via::Jcmd, "heap=dump,format=b,file=dump.hprof"), 0);
    assert_eq!(t.ask("alloc 2000"), "allocated 2000");
    let histo = common::jmap_histo_live(t.pid);
    jcmd(t.pid, "JVMTI.data_dump");
    let path = t.file("dump.hprof");
    common::wait_for_dumps(&path, 1);
    assert_eq!(t.ask("count"), "5250");
    let err = t.exit_cleanly();
    assert!(!err.contains("HPROF ERROR"), "{err}");

    let p = hprof_core::reader::read_all(&path).unwrap();
    assert_eq!(p.heap_dumps.len(), 2, "jcmd JVMTI.data_dump and the exit");
    let c = common::instance_counts(&p, &p.heap_dumps[0]);
    // Objects from before the attach are in a dump too: it walks the heap.
    assert_eq!(c.get("AttachTarget$Kept"), Some(&3750));
    assert_eq!(
        c.get("AttachTarget$Dropped"),
        None,
        "garbage collected first"
    );
    // The program's classes as jmap counts them. (The JDK's own classes
    // are not compared: jmap counts every object the heap holds after its
    // GC, a dump the objects reachable from the roots, and the JVM keeps a
    // few unreachable ones, the same with an agent loaded at start-up.)
    for class in ["AttachTarget$Kept", "AttachTarget$Lock"] {
        assert_eq!(
            c.get(class),
            histo.get(class),
            "{class}: dump vs jmap -histo:live"
        );
    }
    assert_eq!(c.get("AttachTarget$Lock"), Some(&1));
}

/// SITES rows of one text report by (class, top frame method), summed.
fn sites_by_method(text: &str) -> (String, HashMap<(String, String), Counts>) {
    let rep = common::ascii::parse(text);
    let sites = parse_sites(&rep.body);
    let last = sites.last().expect("a SITES section");
    let mut m: HashMap<(String, String), Counts> = HashMap::new();
    for r in &last.rows {
        let method = rep.traces[&r.trace]
            .frames
            .first()
            .map(|f| format!("{}.{}", f.class, f.method))
            .unwrap_or_default();
        let e = m.entry((r.class.clone(), method)).or_insert(Counts {
            live_bytes: 0,
            live_objs: 0,
            alloc_bytes: 0,
            alloc_objs: 0,
        });
        e.live_bytes += r.counts.live_bytes;
        e.live_objs += r.counts.live_objs;
        e.alloc_bytes += r.counts.alloc_bytes;
        e.alloc_objs += r.counts.alloc_objs;
    }
    (last.begin.clone(), m)
}

/// (live, allocated) instances of `class` allocated by `method`.
fn objs(m: &HashMap<(String, String), Counts>, class: &str, method: &str) -> (u64, u64) {
    m.get(&(class.to_string(), method.to_string()))
        .map_or((0, 0), |c| (c.live_objs, c.alloc_objs))
}

#[test]
fn heap_sites_exact_counts_what_is_allocated_after_the_attach() {
    let mut t = Target::start("attach_sites_exact");
    // Before the attach: never counted, and not live in the report.
    assert_eq!(t.ask("alloc 1000"), "allocated 1000");
    assert_eq!(
        load(&t, Via::Jcmd, "heap=sites,depth=1,cutoff=0,file=sites.txt"),
        0
    );
    // Threads running at the attach are sampled by the JVM from their
    // next sample point on (docs/attach.md): past it, every allocation.
    assert_eq!(t.ask("warm 16"), "warm");
    assert_eq!(t.ask("alloc 5000"), "allocated 5000");
    assert_eq!(t.ask("fresh 2000"), "fresh 2000");
    assert_eq!(load(&t, Via::Jcmd, "stop"), 0);
    assert_eq!(t.ask("count"), "13500", "the program goes on");
    let text = std::fs::read_to_string(t.file("sites.txt")).unwrap();
    let err = t.exit_cleanly();
    assert!(!err.contains("HPROF ERROR"), "{err}");

    let (begin, m) = sites_by_method(&text);
    assert!(
        begin.starts_with("SITES BEGIN (ordered by live bytes, counted from the attach) "),
        "{begin}"
    );
    // A thread started after the attach: every allocation, on every JDK.
    assert_eq!(
        objs(&m, "AttachTarget$Kept", "AttachTarget.allocOnFreshThread"),
        (2000, 2000)
    );
    assert_eq!(
        objs(&m, "int[]", "AttachTarget.allocOnFreshThread"),
        (1000, 1000)
    );
    let pre_existing = [
        (
            "AttachTarget$Kept",
            "AttachTarget.allocOnWorker",
            5000,
            5000,
        ),
        ("int[]", "AttachTarget.allocOnWorker", 2500, 2500),
        (
            "AttachTarget$Dropped",
            "AttachTarget.allocOnWorker",
            0,
            5000,
        ),
        ("AttachTarget$Kept", "AttachTarget.allocOnMain", 1250, 1250),
    ];
    for (class, method, live, alloc) in pre_existing {
        let got = objs(&m, class, method);
        if common::java_major() >= 17 {
            assert_eq!(got, (live, alloc), "{class} by {method}");
        } else {
            // HotSpot 11 keeps missing some allocations of threads that
            // ran before the attach (docs/attach.md); never more.
            assert!(
                got.0 <= live && got.1 <= alloc && got.1 > 0,
                "{class} by {method}: {got:?}"
            );
        }
    }
}

#[test]
fn heap_sites_sampled_estimates_what_is_allocated_after_the_attach() {
    if !full_only("heap_sites_sampled_estimates_what_is_allocated_after_the_attach") {
        return;
    }
    let mut t = Target::start("attach_sites_sampled");
    assert_eq!(t.ask("alloc 20000"), "allocated 20000");
    assert_eq!(
        load(
            &t,
            Via::Tool,
            "heap=sites,heapsample=65536,depth=1,file=sampled.txt"
        ),
        0
    );
    // 100 000 int[100] (41.6 MB): about 630 samples.
    assert_eq!(t.ask("fresh 200000"), "fresh 200000");
    assert_eq!(load(&t, Via::Tool, "stop"), 0);
    let text = std::fs::read_to_string(t.file("sampled.txt")).unwrap();
    t.exit_cleanly();
    let (begin, m) = sites_by_method(&text);
    assert!(
        begin.starts_with(
            "SITES BEGIN (ordered by live bytes, estimated from samples, counted from the attach) "
        ),
        "{begin}"
    );
    let (live, alloc) = objs(&m, "int[]", "AttachTarget.allocOnFreshThread");
    for (what, n) in [("live", live), ("allocated", alloc)] {
        let ratio = n as f64 / 100_000.0;
        assert!(
            (0.8..1.2).contains(&ratio),
            "{what} int[] estimated {n}, not about 100000"
        );
    }
    // The 10 000 int[] allocated before the attach are not estimated in.
    let (_, before) = objs(&m, "int[]", "AttachTarget.allocOnWorker");
    assert_eq!(before, 0, "{m:?}");
}

#[test]
fn attach_twice_stop_and_attach_again_with_hprof_rs_attach() {
    let mut t = Target::start("attach_twice");
    assert_eq!(load(&t, Via::Tool, "cpu=samples,file=first.txt"), 0);
    t.tell("spin 500");
    // A second load while the first profile runs: refused, no change.
    assert_eq!(load(&t, Via::Tool, "heap=sites,file=second.txt"), -1);
    assert_eq!(t.answer(), "spun");
    assert!(!t.file("second.txt").exists());
    assert_eq!(load(&t, Via::Tool, "stop"), 0);
    let first = std::fs::read_to_string(t.file("first.txt")).unwrap();
    assert_eq!(load(&t, Via::Tool, "stop"), -1, "nothing left to stop");
    // A new profile after the stop, counting from its own start.
    assert_eq!(
        load(&t, Via::Tool, "heap=sites,depth=1,cutoff=0,file=third.txt"),
        0
    );
    assert_eq!(t.ask("fresh 300"), "fresh 300");
    assert!(t.alive());
    let dir = t.dir.clone();
    let err = t.exit_cleanly();
    assert_lines(
        &err,
        &[
            "HPROF: profiling started in this running JVM (options \"cpu=samples,file=first.txt\")",
            "HPROF ERROR: hprof-rs is already profiling this JVM (attached *",
            "Dumping CPU usage by sampling running threads ... done.",
            "HPROF: profiling stopped; the report went to first.txt",
            "HPROF ERROR: stop: hprof-rs is not profiling this JVM",
            "Allocation tracking on (*",
            "HPROF: profiling started in this running JVM (options \"heap=sites,depth=1,cutoff=0,file=third.txt\")",
            "HPROF WARNING: heap=sites without heapsample= tracks every allocation exactly*",
            "Dumping allocation sites ... *",
        ],
    );
    assert!(err.contains(
        " ago, options \"cpu=samples,file=first.txt\"); load it with the option string stop to end that profile first"
    ));
    // The first profile: written once, at the stop; nothing after it.
    let rep = common::ascii::parse(&first);
    assert_eq!(rep.cpu.len(), 1);
    // (CPU SAMPLES is last, followed only by its line of samples not
    // counted, docs/output-formats.md §1.9.)
    let tail = first
        .rsplit_once("CPU SAMPLES END\n")
        .map(|(_, t)| t)
        .unwrap_or_else(|| panic!("{first}"));
    assert!(
        tail.starts_with("CPU SAMPLES LOST ") && tail.ends_with('\n') && tail.lines().count() == 1,
        "{first}"
    );
    // The new one: written at the exit, with only what followed its own
    // start (the fresh thread's 300 Kept), in its own numbering.
    let third = std::fs::read_to_string(dir.join("third.txt")).unwrap();
    let (begin, m) = sites_by_method(&third);
    assert!(begin.contains("counted from the attach"), "{begin}");
    assert_eq!(
        objs(&m, "AttachTarget$Kept", "AttachTarget.allocOnFreshThread"),
        (300, 300)
    );
    assert!(
        third.contains("THREAD START (obj=50000001, id = 200001, name=\"main\""),
        "{third}"
    );
}

#[test]
fn monitor_contention_and_waits_are_counted_from_the_attach() {
    if !full_only("monitor_contention_and_waits_are_counted_from_the_attach") {
        return;
    }
    let mut t = Target::start("attach_monitor");
    // Before the attach: not counted.
    assert_eq!(t.ask("contend 100"), "contended");
    assert_eq!(load(&t, Via::Tool, "monitor=y,file=monitor.txt"), 0);
    assert_eq!(t.ask("contend 300"), "contended");
    assert_eq!(t.ask("contend 300"), "contended");
    jcmd(t.pid, "JVMTI.data_dump");
    let text = wait_for(&t.file("monitor.txt"), "MONITOR TIME END");
    assert_eq!(load(&t, Via::Tool, "stop"), 0);
    let err = t.exit_cleanly();
    assert!(!err.contains("HPROF ERROR"), "{err}");
    // Two waits of 10 ms on the lock, each reported when it begins and ends.
    let waits: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("WAIT: MONITOR LAttachTarget$Lock;, timeout=10, thread "))
        .collect();
    assert_eq!(waits.len(), 2, "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("WAITED: MONITOR LAttachTarget$Lock;, time_waited="))
            .count(),
        2
    );
    // MONITOR TIME: the two contended entries after the attach, about 300
    // ms each.
    let time = text
        .split("MONITOR TIME BEGIN")
        .nth(1)
        .and_then(|s| s.split("MONITOR TIME END").next())
        .unwrap_or_else(|| panic!("{text}"));
    let row = time
        .lines()
        .find(|l| l.ends_with(" AttachTarget$Lock (Java)"))
        .unwrap_or_else(|| panic!("{time}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[3], "2", "contended entries in {row}");
    let total_ms: u64 = time
        .lines()
        .next()
        .and_then(|l| l.split("total = ").nth(1))
        .and_then(|l| l.split(" ms").next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{time}"));
    assert!((500..2000).contains(&total_ms), "{total_ms} ms in {time}");
    // The MONITOR DUMP lists the threads (owned monitors need a capability
    // HotSpot grants only at start-up).
    assert!(text.contains("MONITOR DUMP BEGIN"), "{text}");
    assert!(text.contains("    THREAD 200001, trace "), "{text}");
}

#[test]
fn what_cannot_work_in_a_running_vm_is_refused_in_one_line() {
    let help_title = "     HPROF: Heap and CPU Profiling Agent, hprof-rs ";
    let mut t = Target::start("attach_refusals");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port();
    let closed_port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let refused: &[(&str, Via)] = &[
        ("cpu=times", Via::Jcmd),
        ("cpu=old,file=x.txt", Via::Tool),
        ("heap=sites,errorexit=y", Via::Jcmd),
        ("pause=y", Via::Tool),
        ("depth=-1", Via::Jcmd),
        ("stop", Via::Jcmd),
        ("help", Via::Tool),
        ("listen=9,token=abc,token=d", Via::Jcmd),
    ];
    for &(opts, via) in refused {
        assert_eq!(load(&t, via, opts), -1, "{opts}");
        assert!(t.alive(), "{opts}");
    }
    let net = format!("cpu=samples,net=127.0.0.1:{closed_port}");
    assert_eq!(load(&t, Via::Jcmd, &net), -1);
    let listen = format!("heap=sites,listen={busy_port}");
    assert_eq!(load(&t, Via::Tool, &listen), -1);
    assert!(!t.file("x.txt").exists());
    // After all that, a good load still works.
    assert_eq!(load(&t, Via::Jcmd, "heap=sites,file=ok.txt"), 0);
    // `help` wrote the usage text on the program's standard output.
    t.tell("fresh 10");
    let mut help = Vec::new();
    loop {
        let l = t.answer();
        if l == "fresh 10" {
            break;
        }
        help.push(l);
    }
    assert_eq!(help[0], "");
    assert!(help[1].starts_with(help_title), "{help:?}");
    assert!(
        help.iter()
            .any(|l| l.starts_with("listen=[<host>:]<port> ")),
        "{help:?}"
    );
    let dir = t.dir.clone();
    let err = t.exit_cleanly();
    let expected = [
        "HPROF ERROR: cpu=times and cpu=old need JVMTI exception events, which this VM does not grant now (HotSpot grants them only to an agent loaded at start-up with -agentpath:, not to one attached to a running VM)".to_string(),
        "HPROF ERROR: cpu=times and cpu=old need JVMTI exception events, which this VM does not grant now (HotSpot grants them only to an agent loaded at start-up with -agentpath:, not to one attached to a running VM)".into(),
        "HPROF ERROR: errorexit=y is refused in a running VM: the first error would end the program".into(),
        "HPROF ERROR: pause=y is refused in a running VM: it would hold the attach request for up to 10 minutes".into(),
        "HPROF ERROR: hprof option error: depth option value must be decimal and >= 0 (depth=-1)".into(),
        "HPROF ERROR: stop: hprof-rs is not profiling this JVM".into(),
        "HPROF ERROR: help was printed on the JVM's standard output; profiling did not start".into(),
        "HPROF ERROR: hprof option error: token or tokenfile options should only appear once (listen=9,token=***,token=***)".into(),
        format!("HPROF ERROR: can't connect to 127.0.0.1:{closed_port}"),
        format!("HPROF ERROR: cannot listen on 127.0.0.1:{busy_port}: Address already in use (os error 98)"),
        "Allocation tracking on (*".into(),
        "HPROF: profiling started in this running JVM (options \"heap=sites,file=ok.txt\")".into(),
        "HPROF WARNING: heap=sites without heapsample= tracks every allocation exactly*".into(),
        "Dumping allocation sites ... *".into(),
    ];
    let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
    assert_lines(&err, &expected);
    drop(busy);
    let ok = std::fs::read_to_string(dir.join("ok.txt")).unwrap();
    assert!(ok.contains("SITES BEGIN (ordered by live bytes, counted from the attach)"));
}

#[test]
fn net_attach_streams_to_hprof_rs_attach_listen() {
    let mut t = Target::start("attach_net");
    let rec = t.file("rec.txt");
    let rec_s = rec.display().to_string();
    let pid = t.pid.to_string();
    let agent = common::agent_path().display().to_string();
    // The tool records the stream until it ends: at the stop.
    let mut c = Command::new(TOOL);
    c.args([
        "attach",
        &pid,
        "cpu=samples,depth=2",
        "--agent",
        &agent,
        "--listen",
        "--out",
        &rec_s,
        "--send",
        "sleep 300",
        "--send",
        "cpu 0",
    ]);
    let session = std::thread::spawn(move || common::run_command_bounded(c, LIMIT));
    let _ = wait_for(&rec, "CPU SAMPLES END");
    t.tell("spin 300");
    assert_eq!(t.answer(), "spun");
    assert_eq!(load(&t, Via::Tool, "stop"), 0);
    let r = session.join().unwrap();
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let out = common::stdout(&r.output);
    assert!(out.contains("0\nreturn code: 0\n"), "{out}");
    assert!(out.contains("text: JAVA PROFILE 1.0.1, created "), "{out}");
    let text = std::fs::read_to_string(&rec).unwrap();
    let rep = common::ascii::parse(&text);
    assert_eq!(rep.cpu.len(), 2, "the command's section and the stop's");
    assert!(
        out.contains(&format!("stream ended: {} bytes,", text.len())),
        "{out}"
    );
    let err = t.exit_cleanly();
    assert!(!err.contains("HPROF ERROR"), "{err}");
}

/// A front-end of `listen=`: connects, sends `token`, reads what comes.
struct FrontEnd {
    s: TcpStream,
    got: Vec<u8>,
}

impl FrontEnd {
    fn connect(port: u16, token: Option<&str>) -> FrontEnd {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        if let Some(t) = token {
            s.write_all(format!("{t}\n").as_bytes()).unwrap();
        }
        FrontEnd { s, got: Vec::new() }
    }

    /// Read until `text` has arrived (or the stream ends).
    fn read_until(&mut self, text: &str) -> &str {
        let start = Instant::now();
        let mut buf = [0u8; 65536];
        while !String::from_utf8_lossy(&self.got).contains(text) {
            assert!(
                start.elapsed() < LIMIT,
                "{text:?} never came:\n{}",
                String::from_utf8_lossy(&self.got)
            );
            match self.s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.got.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
        }
        std::str::from_utf8(&self.got).unwrap()
    }

    /// Read to the end of the stream.
    fn read_to_end(&mut self) -> &str {
        let start = Instant::now();
        let mut buf = [0u8; 65536];
        loop {
            assert!(start.elapsed() < LIMIT, "the stream did not end");
            match self.s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.got.extend_from_slice(&buf[..n]),
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => break,
            }
        }
        std::str::from_utf8(&self.got).unwrap()
    }

    fn send(&mut self, cmd: &str) {
        let c: hprof_core::protocol::Command = cmd.parse().unwrap();
        self.s.write_all(&c.encode(1)).unwrap();
    }
}

#[test]
fn a_listening_agent_replays_the_stream_to_the_next_front_end() {
    let mut t = Target::start("attach_listen");
    let token_file = t.file("token");
    std::fs::write(&token_file, "s3cret\n").unwrap();
    let port = common::free_port();
    let opts = format!(
        "heap=sites,depth=1,cutoff=0,listen={port},tokenfile={}",
        token_file.display()
    );
    assert_eq!(load(&t, Via::Jcmd, &opts), 0);
    assert_eq!(t.ask("fresh 100"), "fresh 100");

    // The first front-end asks for the sites and leaves.
    let mut first = FrontEnd::connect(port, Some("s3cret"));
    first.send("sites 0 0");
    let seen = first.read_until("SITES END\n").to_string();
    assert!(seen.starts_with("JAVA PROFILE 1.0.1, created "), "{seen}");
    drop(first);
    // Meanwhile the program goes on; nothing is lost for the next one.
    assert_eq!(t.ask("fresh 200"), "fresh 200");

    // hprof-rs connect: everything from the first byte, then live.
    let rec = t.file("rec.txt");
    let rec_s = rec.display().to_string();
    let tok_s = token_file.display().to_string();
    let mut c = Command::new(TOOL);
    c.args([
        "connect",
        &format!("127.0.0.1:{port}"),
        "--token-file",
        &tok_s,
        "--out",
        &rec_s,
        "--send",
        "sites 0 0",
    ]);
    let session = std::thread::spawn(move || common::run_command_bounded(c, LIMIT));
    let _ = wait_for(&rec, &seen);
    // The replayed SITES, then the answer to its own command.
    let start = Instant::now();
    while std::fs::read_to_string(&rec)
        .unwrap_or_default()
        .matches("SITES END\n")
        .count()
        < 2
    {
        assert!(
            start.elapsed() < LIMIT,
            "replayed and asked: no second SITES"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(load(&t, Via::Jcmd, "stop"), 0);
    let r = session.join().unwrap();
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let text = std::fs::read_to_string(&rec).unwrap();
    assert!(
        text.starts_with(&seen),
        "the second front-end got the first's records first"
    );
    let sites = parse_sites(&common::ascii::parse(&text).body);
    assert_eq!(sites.len(), 3, "first front-end's, second's, the stop's");
    let (_, m) = sites_by_method(&text);
    assert_eq!(
        objs(&m, "AttachTarget$Kept", "AttachTarget.allocOnFreshThread"),
        (300, 300)
    );
    let out = common::stdout(&r.output);
    assert!(
        out.contains(&format!("stream ended: {} bytes,", text.len())),
        "{out}"
    );
    let err = t.exit_cleanly();
    assert!(!err.contains("HPROF ERROR"), "{err}");
    assert!(
        err.contains(&format!(
            "HPROF: waiting for front-ends on 127.0.0.1:{port}\n"
        )),
        "{err}"
    );
}

#[test]
fn a_listening_agent_turns_away_wrong_tokens_garbage_and_crowds() {
    if !full_only("a_listening_agent_turns_away_wrong_tokens_garbage_and_crowds") {
        return;
    }
    let mut t = Target::start("attach_listen_hostile");
    let port = common::free_port();
    assert_eq!(
        load(
            &t,
            Via::Tool,
            &format!("cpu=samples,listen={port},token=right")
        ),
        0
    );
    let refused = |mut f: FrontEnd| f.read_to_end().to_string();

    assert_eq!(
        refused(FrontEnd::connect(port, Some("wrong"))),
        "HPROF-RS REFUSED: wrong token\n"
    );
    let mut junk = FrontEnd::connect(port, None);
    junk.s.write_all(&[0xff; 100]).unwrap();
    junk.s.write_all(b"\n").unwrap();
    assert_eq!(refused(junk), "HPROF-RS REFUSED: wrong token\n");
    // A crowd that connects and says nothing: the right front-end still
    // gets in, within the token wait.
    let crowd: Vec<FrontEnd> = (0..20).map(|_| FrontEnd::connect(port, None)).collect();
    let t0 = Instant::now();
    let mut good = FrontEnd::connect(port, Some("right"));
    good.read_until("JAVA PROFILE 1.0.1");
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
    // One at a time.
    assert_eq!(
        refused(FrontEnd::connect(port, Some("right"))),
        "HPROF-RS REFUSED: another front-end is connected\n"
    );
    // Garbage commands from the connected front-end end its connection,
    // and the next one is served.
    good.s.write_all(&[0x42, 0, 0]).unwrap();
    good.read_to_end();
    let mut next = FrontEnd::connect(port, Some("right"));
    next.send("cpu 0");
    next.read_until("CPU SAMPLES END");
    drop(crowd);
    assert!(t.alive());
    assert_eq!(load(&t, Via::Tool, "stop"), 0);
    next.read_to_end();
    let err = t.exit_cleanly();
    let lines = agent_lines(&err);
    assert!(
        lines.iter().any(
            |l| l.starts_with("HPROF ERROR: front-end connection from 127.0.0.1:")
                && l.ends_with(" refused: wrong token")
        ),
        "{err}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(
            "HPROF ERROR: failed to recognize cmd 66 at offset 0; front-end 127.0.0.1:"
        )),
        "{err}"
    );
    // Refusals are reported at most ten times.
    let refusals = lines.iter().filter(|l| l.contains(" refused: ")).count();
    assert!((3..=10).contains(&refusals), "{refusals}:\n{err}");
}

#[test]
fn stop_and_a_second_load_during_a_heap_dump_wait_or_are_refused() {
    if !full_only("stop_and_a_second_load_during_a_heap_dump_wait_or_are_refused") {
        return;
    }
    let mut t = Target::start("attach_dump_in_progress");
    // 700 000 objects kept: the dump takes a while.
    assert_eq!(t.ask("alloc 400000"), "allocated 400000");
    assert_eq!(load(&t, Via::Jcmd, "heap=dump,format=b,file=dump.hprof"), 0);
    let pid = t.pid;
    let dumping = std::thread::spawn(move || jcmd(pid, "JVMTI.data_dump"));
    std::thread::sleep(Duration::from_millis(30));
    // While it runs (or just after): a second load is refused, the stop
    // waits for the dump and writes the final one.
    assert_eq!(load(&t, Via::Tool, "heap=sites,file=second.txt"), -1);
    assert_eq!(load(&t, Via::Tool, "stop"), 0);
    dumping.join().unwrap();
    assert!(t.alive());
    assert_eq!(t.ask("count"), "700000");
    let path = t.file("dump.hprof");
    let err = t.exit_cleanly();
    assert!(!t_file_exists(&path, "second.txt"));
    let p = hprof_core::reader::read_all(&path).unwrap();
    // The data dump (unless the stop came first and it found nothing to
    // dump) and the stop's; each complete, with every object kept.
    assert!(
        (1..=2).contains(&p.heap_dumps.len()),
        "{}",
        p.heap_dumps.len()
    );
    for d in &p.heap_dumps {
        assert!(d.ended, "a dump cut short");
        assert_eq!(
            common::instance_counts(&p, d).get("AttachTarget$Kept"),
            Some(&500000)
        );
    }
    let lines = agent_lines(&err);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("HPROF ERROR: hprof-rs is already profiling this JVM")),
        "{err}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l == "HPROF: profiling stopped; the report went to dump.hprof"),
        "{err}"
    );
}

fn t_file_exists(sibling: &Path, name: &str) -> bool {
    sibling.with_file_name(name).exists()
}

#[test]
fn a_front_end_that_stops_reading_is_cut_off_and_the_program_goes_on() {
    if !full_only("a_front_end_that_stops_reading_is_cut_off_and_the_program_goes_on") {
        return;
    }
    let mut t = Target::start("attach_listen_stalled");
    let port = common::free_port();
    assert_eq!(
        load(
            &t,
            Via::Tool,
            &format!("cpu=samples,listen={port},file=rec.txt")
        ),
        0
    );
    // A front-end that asks for report after report and reads nothing:
    // the agent's output backs up until its writes, then the agent's reads
    // of commands, then ours stall.
    let mut stalled = FrontEnd::connect(port, None);
    stalled
        .s
        .set_write_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let cmd = "cpu 0"
        .parse::<hprof_core::protocol::Command>()
        .unwrap()
        .encode(1);
    let t0 = Instant::now();
    let mut sent = 0;
    while stalled.s.write_all(&cmd).is_ok() {
        sent += 1;
        assert!(
            t0.elapsed() < LIMIT,
            "{sent} commands sent and still no back-pressure"
        );
    }
    eprintln!("jammed after {sent} commands, {:?}", t0.elapsed());
    // The program does not wait for the front-end.
    let t1 = Instant::now();
    assert_eq!(t.ask("spin 100"), "spun");
    assert_eq!(t.ask("count"), "0");
    assert!(t1.elapsed() < Duration::from_secs(3), "{:?}", t1.elapsed());
    // The agent cuts it off after 5 s without progress; what it had not
    // taken stays in the recording, for the next front-end.
    let start = Instant::now();
    let mut next = loop {
        assert!(
            start.elapsed() < LIMIT,
            "the stalled front-end was never cut off"
        );
        let mut f = FrontEnd::connect(port, None);
        let mut buf = [0u8; 4096];
        let first = Instant::now();
        while f.got.len() < 18 && first.elapsed() < Duration::from_secs(2) {
            match f.s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => f.got.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
        }
        if f.got.starts_with(b"JAVA PROFILE") {
            break f;
        }
        assert!(
            f.got.is_empty() || f.got.starts_with(b"HPROF-RS REFUSED: another front-end"),
            "{}",
            String::from_utf8_lossy(&f.got)
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    // This one reads: it gets what the first did not take, the answer to
    // its command and the final report.
    let mut commands = next.s.try_clone().unwrap();
    commands.write_all(&cmd).unwrap();
    drop(stalled);
    let reading = std::thread::spawn(move || next.read_to_end().to_string());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(load(&t, Via::Tool, "stop"), 0);
    let got = reading.join().unwrap();
    let rec = std::fs::read_to_string(t.file("rec.txt")).unwrap();
    assert_eq!(
        got.len(),
        rec.len(),
        "the next front-end got the whole recording"
    );
    assert!(got == rec);
    let sections = got.matches("CPU SAMPLES END").count();
    assert!(sections >= 2, "{sections}");
    let err = t.exit_cleanly();
    assert!(
        agent_lines(&err)
            .iter()
            .any(|l| l.starts_with("HPROF ERROR: front-end 127.0.0.1:")
                && l.contains(" accepted no output for 5 s: disconnected")),
        "{err}"
    );
}

/// This machine's first address that is not loopback, if any.
fn outward_address() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    // No packet is sent: connecting a UDP socket only picks the route.
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn a_listening_agent_binds_to_loopback_and_the_exit_ends_the_stream() {
    let mut t = Target::start("attach_listen_exit");
    let port = common::free_port();
    assert_eq!(
        load(&t, Via::Jcmd, &format!("heap=sites,depth=1,listen={port}")),
        0
    );
    match outward_address() {
        Some(ip) => assert!(
            TcpStream::connect_timeout(&(ip, port).into(), Duration::from_secs(2)).is_err(),
            "the agent listens on {ip}:{port} too"
        ),
        None => eprintln!("no address but loopback: the binding is checked by the message only"),
    }
    let mut fe = FrontEnd::connect(port, None);
    fe.read_until("JAVA PROFILE 1.0.1");
    assert_eq!(t.ask("fresh 50"), "fresh 50");
    // The program ends while the front-end is connected: its stream ends
    // with the final report, and the program is not held up.
    let t0 = Instant::now();
    let (st, err) = t.exit();
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    assert!(st.success(), "{err}");
    no_internal_errors(&err);
    assert!(!err.contains("HPROF ERROR"), "{err}");
    assert!(
        err.contains(&format!(
            "HPROF: waiting for front-ends on 127.0.0.1:{port}\n"
        )),
        "{err}"
    );
    let got = fe.read_to_end().to_string();
    let (_, m) = sites_by_method(&got);
    assert_eq!(
        objs(&m, "AttachTarget$Kept", "AttachTarget.allocOnFreshThread"),
        (50, 50)
    );
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "still listening"
    );
}

#[test]
fn a_profile_loaded_at_start_up_is_stopped_and_an_attach_follows() {
    let agent = format!(
        "-agentpath:{}=heap=sites,depth=1,cutoff=0,file=start.txt",
        common::agent_path().display()
    );
    let mut t = Target::start_with("attach_after_startup", &[&agent]);
    assert_eq!(t.ask("fresh 100"), "fresh 100");
    // Loaded at start-up: a load is refused as for an attached one.
    assert_eq!(load(&t, Via::Tool, "cpu=samples,file=second.txt"), -1);
    assert_eq!(load(&t, Via::Tool, "stop"), 0);
    let first = std::fs::read_to_string(t.file("start.txt")).unwrap();
    assert_eq!(t.ask("fresh 200"), "fresh 200");
    assert_eq!(
        load(&t, Via::Tool, "heap=sites,depth=1,cutoff=0,file=second.txt"),
        0
    );
    assert_eq!(t.ask("fresh 300"), "fresh 300");
    let dir = t.dir.clone();
    let err = t.exit_cleanly();
    assert!(
        err.contains("hprof-rs is already profiling this JVM (loaded at start-up "),
        "{err}"
    );
    // The start-up profile: everything up to the stop, and counted from
    // the start (its title does not say "from the attach").
    let (begin, m) = sites_by_method(&first);
    assert!(!begin.contains("counted from the attach"), "{begin}");
    assert_eq!(
        objs(&m, "AttachTarget$Kept", "AttachTarget.allocOnFreshThread"),
        (100, 100)
    );
    // The attached one: only what followed it.
    let second = std::fs::read_to_string(dir.join("second.txt")).unwrap();
    let (begin, m) = sites_by_method(&second);
    assert!(begin.contains("counted from the attach"), "{begin}");
    assert_eq!(
        objs(&m, "AttachTarget$Kept", "AttachTarget.allocOnFreshThread"),
        (300, 300)
    );
}

/// `jcmd PID JVMTI.agent_load LIB cpu=samples,interval=5`, unquoted:
/// jcmd's argument parser cuts the option string at its first `=`, so the
/// agent gets just `cpu`; its refusal says so and shows the quoted
/// command. A cut string whose first name is no option keeps its own
/// message, and the quoted command works.
#[test]
fn an_option_string_jcmd_cut_at_its_first_equals_is_refused_with_the_quoted_form() {
    let t = Target::start("attach_jcmd_cut");
    let agent = common::agent_path().display().to_string();
    let unquoted = |opts: &str| {
        let mut c = Command::new(common::jdk_home().join("bin/jcmd"));
        c.args([&t.pid.to_string(), "JVMTI.agent_load", &agent, opts]);
        let r = common::run_command_bounded(c, LIMIT);
        assert!(!r.timed_out, "jcmd {opts} did not end");
        common::stdout(&r.output)
    };
    assert!(unquoted("cpu=samples,interval=5").ends_with("return code: -1\n"));
    assert!(unquoted("bogus=1,cpu=samples").ends_with("return code: -1\n"));
    assert_eq!(
        load(&t, Via::Jcmd, "cpu=samples,interval=5,file=cpu.txt"),
        0
    );
    let pid = t.pid;
    let err = t.exit_cleanly();
    let cut = format!(
        "HPROF ERROR: the option string is just \"cpu\", without a value: jcmd cuts an \
         unquoted option string at its first '=' and passes only what comes before it; give \
         jcmd the whole string in double quotes, quoted again for the shell: jcmd {pid} \
         JVMTI.agent_load {agent} '\"cpu=...\"' (or: hprof-rs attach {pid} cpu=...)"
    );
    assert_lines(
        &err,
        &[
            &cut,
            "HPROF ERROR: hprof option error: Unknown option: bogus (bogus)",
            "HPROF: profiling started in this running JVM (options \"cpu=samples,interval=5,file=cpu.txt\")",
            "Dumping CPU usage by sampling running threads ... done.",
        ],
    );
}
