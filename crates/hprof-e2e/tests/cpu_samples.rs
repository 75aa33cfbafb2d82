//! cpu=samples end to end: a real JVM runs fixtures under the agent and the
//! text output is parsed and checked.

use crate::common;

use common::ascii;
use common::split_tvd as tvd;
use std::collections::HashMap;

fn run_text(name: &str, opts: &str, main: &str, args: &[&str]) -> (ascii::Report, String) {
    let dir = common::scratch(name);
    let out = common::run_with_agent(&dir, &format!("{opts},file=out.txt"), main, args);
    let err = common::stderr(&out);
    assert!(out.status.success(), "java failed: {err}");
    let text = std::fs::read_to_string(dir.join("out.txt")).expect("output file");
    (ascii::parse(&text), err)
}

/// Samples per top-of-stack method name across the section's rows.
fn by_top_method(section: &ascii::CpuSection) -> HashMap<String, u32> {
    let mut m = HashMap::new();
    for r in &section.rows {
        *m.entry(r.method.clone()).or_insert(0) += r.count;
    }
    m
}

/// CpuSplit's rounds take the same few milliseconds of CPU each: a loop
/// with a fixed period. Sampled every 1 ms of CPU time on average, its
/// split comes out within 3 points (TVD) in every run: the sampling
/// periods are random, so the samples do not lock onto the loop's phase
/// (with fixed periods, or at the kernel's 4 ms tick, the 10 % method got
/// 5 to 13 % from run to run). About 3 700 samples: binomial noise alone
/// puts TVD above 0.03 in 1 run of 1 000.
#[test]
fn known_cpu_split_is_measured_within_a_few_points() {
    let _only_jvm = common::exclusive();
    let (rep, err) = run_text(
        "cpu_split",
        "cpu=samples,interval=1",
        "CpuSplit",
        &["0", "1000"],
    );
    assert!(
        err.contains("Dumping CPU usage by sampling running threads ... done."),
        "verbose line: {err}"
    );
    assert_eq!(rep.cpu.len(), 1, "one CPU SAMPLES section at exit");
    let cpu = &rep.cpu[0];
    let rows_sum: u64 = cpu.rows.iter().map(|r| r.count as u64).sum();
    assert!(cpu.total >= rows_sum && rows_sum > 0);
    let m = by_top_method(cpu);
    let w = |k: &str| *m.get(k).unwrap_or(&0) as f64;
    let (a, b, c) = (
        w("CpuSplit.work60"),
        w("CpuSplit.work30"),
        w("CpuSplit.work10"),
    );
    let n = a + b + c;
    assert!(n >= 2000.0, "too few samples in the work methods: {m:?}");
    let shares = [a / n, b / n, c / n];
    let tvd = tvd(shares);
    eprintln!(
        "split {:.3} {:.3} {:.3} over {n} samples; TVD {:.4}",
        shares[0], shares[1], shares[2], tvd
    );
    assert!(
        tvd <= 0.03,
        "split {shares:?} too far from 60/30/10 (TVD {tvd})"
    );
    // Work methods cover nearly all samples of the main thread.
    assert!(
        n / cpu.total as f64 > 0.9,
        "work methods only {n} of {}",
        cpu.total
    );

    // Every row's trace is printed before the section, with real frames.
    for row in &cpu.rows {
        let t = rep
            .traces
            .get(&row.trace)
            .unwrap_or_else(|| panic!("TRACE {} not printed", row.trace));
        let top = t.frames.first().expect("non-empty trace");
        assert_eq!(format!("{}.{}", top.class, top.method), row.method);
    }
    let t60 = cpu
        .rows
        .iter()
        .find(|r| r.method == "CpuSplit.work60")
        .unwrap();
    let frames = &rep.traces[&t60.trace].frames;
    assert_eq!(frames[0].source, "CpuSplit.java");
    assert!(
        frames[0].line.parse::<u32>().is_ok(),
        "line number expected: {:?}",
        frames[0]
    );
    assert_eq!(frames[1].method, "main");
    // Percentages: descending, accum adds up.
    let mut acc: f64 = 0.0;
    for w in cpu.rows.windows(2) {
        assert!(w[0].count >= w[1].count);
    }
    for r in &cpu.rows {
        acc += r.self_pct;
        assert!(
            (acc - r.accum_pct).abs() < 0.05 * (r.rank as f64),
            "accum column"
        );
    }
    // Trace serials start at 300000 and the first trace is the empty system trace.
    assert!(rep.traces.keys().all(|&s| s >= 300_000));
}

#[test]
fn depth_lineno_and_thread_options_shape_traces() {
    let (rep, _) = run_text(
        "cpu_opts",
        "cpu=samples,interval=5,depth=1,lineno=n,thread=y",
        "NamedThreads",
        &["700"],
    );
    let cpu = &rep.cpu[0];
    assert!(!cpu.rows.is_empty());
    let mut seen = HashMap::new();
    for row in &cpu.rows {
        let t = &rep.traces[&row.trace];
        assert!(t.frames.len() <= 1, "depth=1: {t:?}");
        assert!(
            t.frames.iter().all(|f| f.line == "Unknown line"),
            "lineno=n: {t:?}"
        );
        let thread = t
            .thread
            .expect("thread=y puts the thread serial in the trace");
        seen.insert(row.method.clone(), thread);
    }
    // Each worker's spin method is attributed to that worker's own thread.
    let starts: HashMap<String, u32> = rep
        .thread_starts
        .iter()
        .map(|t| (t.name.clone(), t.id))
        .collect();
    for (m, name) in [
        ("NamedThreads.spinAlpha", "worker-alpha"),
        ("NamedThreads.spinBeta", "worker-beta"),
        ("NamedThreads.spinGamma", "worker-gamma"),
    ] {
        assert_eq!(seen.get(m), starts.get(name), "{m} sampled on {name}");
    }
}

#[test]
fn thread_start_and_end_records_name_threads_and_groups() {
    let (rep, _) = run_text("threads", "cpu=samples", "NamedThreads", &["100"]);
    let workers: Vec<_> = rep
        .thread_starts
        .iter()
        .filter(|t| t.name.starts_with("worker-"))
        .collect();
    assert_eq!(workers.len(), 3, "{:?}", rep.thread_starts);
    for w in &workers {
        assert_eq!(w.group, "workers");
        assert!(w.id > 200_001, "serials after the VM-init thread");
        assert!(
            w.obj.starts_with('5'),
            "object ids look like 5xxxxxxx: {}",
            w.obj
        );
        assert!(rep.thread_ends.contains(&w.id), "THREAD END for {}", w.name);
    }
    // The VM-init thread (main, 200001) has no THREAD START but does end.
    assert!(rep.thread_starts.iter().all(|t| t.id != 200_001));
    assert!(rep.thread_ends.contains(&200_001));
    // The sampler is an agent thread: never announced.
    assert!(rep
        .thread_starts
        .iter()
        .all(|t| !t.name.starts_with("HPROF")));
}

#[test]
fn data_dump_request_writes_an_extra_report_and_resets_counts() {
    let dir = common::scratch("sigquit");
    let marker = dir.join("stop");
    let child = spawn_waiting(&dir, "cpu=samples,interval=5,file=out.txt", &marker);
    std::thread::sleep(std::time::Duration::from_millis(800));
    // SIGQUIT: the JVM prints its thread dump and posts DataDumpRequest.
    unsafe_kill_quit(child.id());
    std::thread::sleep(std::time::Duration::from_millis(800));
    std::fs::write(&marker, b"").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let rep = ascii::parse(&std::fs::read_to_string(dir.join("out.txt")).unwrap());
    assert_eq!(rep.cpu.len(), 2, "one report on SIGQUIT, one at exit");
    for s in &rep.cpu {
        assert!(
            s.rows.iter().any(|r| r.method == "WaitForSignal.busy"),
            "{s:?}"
        );
    }
    // Counts are reset after each dump: neither report holds all samples, and
    // no trace is printed twice (parse() asserts that).
    assert!(rep.cpu[0].total > 0 && rep.cpu[1].total > 0);
}

fn unsafe_kill_quit(pid: u32) {
    let st = std::process::Command::new("kill")
        .arg("-QUIT")
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn doe_n_writes_no_exit_dump() {
    let (rep, err) = run_text("doe_n", "cpu=samples,doe=n", "CpuSplit", &["0.3"]);
    assert!(rep.cpu.is_empty());
    assert!(!err.contains("Dumping"));
}

#[test]
fn verbose_n_is_quiet() {
    let (rep, err) = run_text("verbose_n", "cpu=samples,verbose=n", "CpuSplit", &["0.3"]);
    assert_eq!(rep.cpu.len(), 1);
    assert!(!err.contains("Dumping"), "{err}");
}

#[test]
fn cutoff_drops_rows_below_the_ratio() {
    let (rep, _) = run_text(
        "cutoff",
        "cpu=samples,interval=5,cutoff=0.05",
        "CpuSplit",
        &["1.5"],
    );
    let cpu = &rep.cpu[0];
    assert!(!cpu.rows.is_empty());
    for r in &cpu.rows {
        assert!(
            r.count as f64 / cpu.total as f64 >= 0.05,
            "row below the cutoff: {r:?}"
        );
    }
    // The work methods are above 5%; the long tail of one-sample traces is not printed.
    let methods: Vec<&str> = cpu.rows.iter().map(|r| r.method.as_str()).collect();
    assert!(
        methods.contains(&"CpuSplit.work60") && methods.contains(&"CpuSplit.work30"),
        "{methods:?}"
    );
    let rows_sum: u64 = cpu.rows.iter().map(|r| r.count as u64).sum();
    assert!(rows_sum <= cpu.total);
    // Only the printed rows' traces were written before the section.
    let needed: std::collections::HashSet<u32> = cpu.rows.iter().map(|r| r.trace).collect();
    assert!(
        rep.traces.keys().all(|t| needed.contains(t)),
        "unlisted traces printed: {:?}",
        rep.trace_order
    );
}

#[test]
fn thread_churn_under_fast_sampling_announces_every_thread_once() {
    let (rep, _) = run_text("churn", "cpu=samples,interval=1", "ThreadChurn", &["1000"]);
    let churn: Vec<_> = rep
        .thread_starts
        .iter()
        .filter(|t| t.name.starts_with("churn-"))
        .collect();
    assert_eq!(churn.len(), 1000, "one THREAD START per worker");
    let mut ids: Vec<u32> = churn.iter().map(|t| t.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 1000, "distinct serials");
    for id in &ids {
        assert!(rep.thread_ends.contains(id), "THREAD END for {id}");
    }
    assert_eq!(rep.cpu.len(), 1);
}

#[test]
fn jcmd_data_dump_triggers_a_report() {
    let dir = common::scratch("jcmd_dump");
    let marker = dir.join("stop");
    let mut child = spawn_waiting(&dir, "cpu=samples,interval=5,file=out.txt,doe=n", &marker);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let out = std::process::Command::new(common::jdk_home().join("bin/jcmd"))
        .arg(child.id().to_string())
        .arg("JVMTI.data_dump")
        .output()
        .unwrap();
    assert!(out.status.success(), "jcmd: {}", common::stderr(&out));
    // The dump is written by the time jcmd returns? Not necessarily: wait
    // until the section shows up, then let the program finish.
    let path = dir.join("out.txt");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_to_string(&path)
        .unwrap_or_default()
        .contains("CPU SAMPLES END")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no report after jcmd JVMTI.data_dump"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::fs::write(&marker, b"").unwrap();
    assert!(child.wait().unwrap().success());
    let rep = ascii::parse(&std::fs::read_to_string(&path).unwrap());
    // doe=n: only the requested report, none at exit.
    assert_eq!(rep.cpu.len(), 1);
    assert!(rep.cpu[0]
        .rows
        .iter()
        .any(|r| r.method == "WaitForSignal.busy"));
}

/// Start WaitForSignal under the agent and return once it printed "ready";
/// it spins until `marker` exists (at most 60 s).
fn spawn_waiting(
    dir: &std::path::Path,
    opts: &str,
    marker: &std::path::Path,
) -> std::process::Child {
    let agent = format!("-agentpath:{}={opts}", common::agent_path().display());
    let mut child = std::process::Command::new(common::java())
        .current_dir(dir)
        .arg(&agent)
        .arg("-cp")
        .arg(common::fixture_classes())
        .arg("WaitForSignal")
        .arg(marker)
        .arg("60")
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
    child
}

// ---------------------------------------------------------------- CPU only

/// Run a fixture under the agent with a time limit; the parsed report, the
/// program's stdout and stderr.
fn run_bounded(
    name: &str,
    opts: &str,
    main: &str,
    args: &[&str],
) -> (ascii::Report, String, String) {
    let dir = common::scratch(name);
    let r = common::run_with_agent_bounded(
        &dir,
        &format!("{opts},file=out.txt"),
        main,
        args,
        std::time::Duration::from_secs(60),
    );
    let err = common::stderr(&r.output);
    assert!(!r.timed_out, "{main} did not finish: {err}");
    assert!(r.output.status.success(), "java failed: {err}");
    let text = std::fs::read_to_string(dir.join("out.txt")).expect("output file");
    (ascii::parse(&text), common::stdout(&r.output), err)
}

/// Samples of the rows whose method is `Class.method`.
fn samples_of(cpu: &ascii::CpuSection, method: &str) -> u64 {
    cpu.rows
        .iter()
        .filter(|r| r.method == method)
        .map(|r| r.count as u64)
        .sum()
}

/// (shares of work60/30/10 among the three, their share of all samples).
fn work_split(cpu: &ascii::CpuSection, class: &str) -> ([f64; 3], f64, u64) {
    let w: Vec<u64> = ["work60", "work30", "work10"]
        .iter()
        .map(|m| samples_of(cpu, &format!("{class}.{m}")))
        .collect();
    let n: u64 = w.iter().sum();
    assert!(n > 0, "no samples in the work methods: {cpu:?}");
    let shares = [
        w[0] as f64 / n as f64,
        w[1] as f64 / n as f64,
        w[2] as f64 / n as f64,
    ];
    (shares, n as f64 / cpu.total as f64, n)
}

/// Samples of the threads whose names start with one of `prefixes`
/// (traces carry the thread with `thread=y`).
fn samples_of_threads(rep: &ascii::Report, prefixes: &[&str]) -> u64 {
    let serials: Vec<u32> = rep
        .thread_starts
        .iter()
        .filter(|t| prefixes.iter().any(|p| t.name.starts_with(p)))
        .map(|t| t.id)
        .collect();
    rep.cpu[0]
        .rows
        .iter()
        .filter(|r| {
            rep.traces[&r.trace]
                .thread
                .is_some_and(|t| serials.contains(&t))
        })
        .map(|r| r.count as u64)
        .sum()
}

/// The share of the samples of the threads the program started that the
/// worker thread has. `main` (which has no THREAD START) starts the JVM
/// and the idle threads: CPU of a fixed amount, whose share grows when a
/// loaded machine gives the worker's wall-clock-bound run less CPU, so it
/// is left out.
fn worker_share(rep: &ascii::Report) -> f64 {
    let started = samples_of_threads(rep, &[""]);
    let worker = samples_of_threads(rep, &["worker"]);
    worker as f64 / started.max(1) as f64
}

/// OnCpuAmongBlocked's threads that use no CPU.
const IDLE_THREADS: &[&str] = &["accept-", "read-", "park-", "wait-", "sleep-"];

/// Four threads blocked in native socket calls, three parked, one waiting,
/// one sleeping, one CPU-bound worker with a known split: the worker's
/// methods get nearly every sample, in the split of its CPU time.
#[test]
fn only_cpu_is_charged_threads_blocked_in_native_calls_or_parked_get_nothing() {
    let _only_jvm = common::exclusive();
    // 1 000 rounds at interval=1: about 3 700 samples of the worker
    // (whatever the machine's load), whose rounds of fixed work repeat with
    // a fixed period (see known_cpu_split_is_measured_within_a_few_points).
    let (rep, out, err) = run_bounded(
        "oncpu",
        "cpu=samples,interval=1,thread=y",
        "OnCpuAmongBlocked",
        &["0", "1000"],
    );
    assert!(out.contains("rounds="), "{out}");
    let cpu = &rep.cpu[0];
    let (shares, _, n) = work_split(cpu, "CpuSplit");
    let in_work = worker_share(&rep);
    eprintln!(
        "async: worker {:.2}% of {} samples; split {:.3} {:.3} {:.3}, TVD {:.4}; {err}",
        100.0 * in_work,
        cpu.total,
        shares[0],
        shares[1],
        shares[2],
        tvd(shares)
    );
    assert!(n >= 2000, "too few samples: {n} ({err})");
    assert!(
        in_work >= 0.95,
        "worker has only {:.2}% of the samples: {cpu:?}",
        100.0 * in_work
    );
    let tvd = tvd(shares);
    assert!(
        tvd <= 0.03,
        "split {shares:?} too far from 60/30/10 (TVD {tvd:.4})"
    );
    assert_eq!(
        rep.thread_starts
            .iter()
            .filter(|t| IDLE_THREADS.iter().any(|p| t.name.starts_with(p)))
            .count(),
        9
    );
    assert_idle_threads_get_nothing(&rep);
}

/// OnCpuAmongBlocked's threads that use no CPU have < 1 % of the samples
/// (traces keyed by thread: `thread=y`).
fn assert_idle_threads_get_nothing(rep: &ascii::Report) {
    let cpu = &rep.cpu[0];
    let idle = samples_of_threads(rep, IDLE_THREADS);
    assert!(
        (idle as f64) < 0.01 * cpu.total as f64,
        "{idle} samples in blocked, parked, waiting or sleeping threads: {cpu:?}"
    );
}

/// `cpusampler=safepoint` (the fallback without AsyncGetCallTrace) takes
/// the stacks at safepoints but still charges only threads that used CPU.
#[test]
fn the_safepoint_fallback_charges_only_cpu_too() {
    let _only_jvm = common::exclusive();
    let (rep, _, _) = run_bounded(
        "oncpu_safepoint",
        "cpu=samples,interval=1,cpusampler=safepoint,thread=y",
        "OnCpuAmongBlocked",
        &["2"],
    );
    let cpu = &rep.cpu[0];
    // Neither the split nor the top methods are checked: a stack taken at
    // the next safepoint may already be in the method after the one that
    // used the CPU, or in the worker's loop between two calls
    // (docs/cpu-samples.md). The thread that is charged must be right.
    let worker = worker_share(&rep);
    assert!(
        worker >= 0.95,
        "the worker thread has only {:.2}%: {cpu:?}",
        100.0 * worker
    );
    assert_idle_threads_get_nothing(&rep);
}

/// `cpusampler=wall`: every thread is sampled for each interval of real
/// time, whatever it does. OnCpuAmongBlocked's nine idle threads live as
/// long as its worker, so each gets about as many samples as the worker
/// (2 s at 10 ms: about 200 each, on a loaded machine too: the samples
/// count real time), with the stack where it waits.
#[test]
fn wall_samples_take_every_thread_where_it_runs_or_waits() {
    let _only_jvm = common::exclusive();
    let (rep, _, err) = run_bounded(
        "wall_samples",
        "cpu=samples,interval=10,cpusampler=wall,thread=y",
        "OnCpuAmongBlocked",
        &["2"],
    );
    let cpu = &rep.cpu[0];
    let worker = samples_of_threads(&rep, &["worker"]);
    assert!(
        worker >= 100,
        "worker {worker} samples in 2 s at 10 ms: {err}"
    );
    let idle: Vec<_> = rep
        .thread_starts
        .iter()
        .filter(|t| IDLE_THREADS.iter().any(|p| t.name.starts_with(p)))
        .collect();
    assert_eq!(idle.len(), 9);
    // Before JDK 16 an interrupted accept() throws (JDK-8237858): the
    // accept threads end early, and the agent says so at the start.
    let old_sockets = common::java_major() < 16;
    if old_sockets {
        assert!(err.contains("JDK-8237858"), "{err}");
    }
    for t in &idle {
        if old_sockets && t.name.starts_with("accept-") {
            continue;
        }
        let rows: Vec<_> = cpu
            .rows
            .iter()
            .filter(|r| rep.traces[&r.trace].thread == Some(t.id))
            .collect();
        let n: u64 = rows.iter().map(|r| u64::from(r.count)).sum();
        eprintln!("{}: {n} wall samples (worker {worker})", t.name);
        assert!(
            (0.6..=1.4).contains(&(n as f64 / worker as f64)),
            "{} has {n} samples, the worker {worker}: {cpu:?}",
            t.name
        );
        // Where it waits: its top frame (the JDK's own names for the
        // socket calls differ between JDKs and are not checked).
        let top = rows.iter().max_by_key(|r| r.count).unwrap().method.as_str();
        let expected = match &t.name[..t.name.find('-').unwrap()] {
            "park" => Some("jdk.internal.misc.Unsafe.park"),
            "wait" => Some("java.lang.Object.wait"),
            "sleep" => Some("java.lang.Thread.sleep"),
            _ => None,
        };
        if let Some(e) = expected {
            assert!(top.starts_with(e), "{}: top frame {top}", t.name);
        }
    }
    assert!(
        err.contains("cpusampler=wall") || !err.contains("cpusampler="),
        "{err}"
    );
    // The JVM's service threads get no wall timer: JDK 14+'s Notification
    // Thread, with no Java frame, took one sample a period ("no Java
    // frame" as many as the worker's samples).
    let no_frame: u64 = err
        .split("no Java frame ")
        .nth(1)
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
        .map_or(0, |n| n.parse().unwrap());
    assert!(
        no_frame * 10 < worker,
        "{no_frame} samples with no Java frame, worker {worker}: {err}"
    );
}

/// `cpusampler=runnable` keeps the original's rule: every RUNNABLE thread,
/// so the four threads blocked in native socket calls take most samples.
#[test]
fn the_original_rule_stays_behind_cpusampler_runnable() {
    let _only_jvm = common::exclusive();
    let (rep, _, err) = run_bounded(
        "oncpu_runnable",
        "cpu=samples,interval=5,cpusampler=runnable,thread=y",
        "OnCpuAmongBlocked",
        &["1.5"],
    );
    assert!(!err.contains("cpusampler="), "no fallback note: {err}");
    let cpu = &rep.cpu[0];
    // Threads in native socket calls are RUNNABLE; parked, waiting and
    // sleeping ones are not (but for the moments they wake up or start).
    let blocked = samples_of_threads(&rep, &["accept-", "read-"]);
    let others = samples_of_threads(&rep, &["park-", "wait-", "sleep-"]);
    assert!(
        others as f64 <= 0.01 * cpu.total as f64,
        "{others} samples of parked/waiting/sleeping threads"
    );
    let (_, in_work, _) = work_split(cpu, "CpuSplit");
    eprintln!(
        "runnable: blocked {blocked} of {}, worker {in_work:.3}",
        cpu.total
    );
    assert!(
        blocked as f64 > 0.6 * cpu.total as f64 && in_work < 0.35,
        "blocked {blocked} of {}, worker {in_work}: {cpu:?}",
        cpu.total
    );
}

/// Two CPU-bound threads with duty cycles of 70 % and 20 %: their shares of
/// the samples (thread=y keys traces by thread) follow the CPU time each
/// measured with ThreadMXBean, within 3 points.
#[test]
fn shares_of_two_duty_cycles_follow_their_cpu_time() {
    let _only_jvm = common::exclusive();
    let (rep, out, _) = run_bounded(
        "duty",
        "cpu=samples,interval=1,thread=y",
        "DutyCycles",
        &["3"],
    );
    let cpu_ns = |name: &str| -> f64 {
        let tail = out.split(&format!("{name}=")).nth(1).expect("cpu line");
        tail.split_whitespace().next().unwrap().parse().unwrap()
    };
    let (hi_cpu, lo_cpu) = (cpu_ns("duty-high"), cpu_ns("duty-low"));
    let id = |name: &str| {
        rep.thread_starts
            .iter()
            .find(|t| t.name == name)
            .expect(name)
            .id
    };
    let (hi, lo) = (id("duty-high"), id("duty-low"));
    let cpu = &rep.cpu[0];
    let per_thread = |serial: u32| -> u64 {
        cpu.rows
            .iter()
            .filter(|r| rep.traces[&r.trace].thread == Some(serial))
            .map(|r| r.count as u64)
            .sum()
    };
    let (hi_n, lo_n) = (per_thread(hi), per_thread(lo));
    let expected = hi_cpu / (hi_cpu + lo_cpu);
    let measured = hi_n as f64 / (hi_n + lo_n) as f64;
    eprintln!(
        "duty-high: {hi_n} samples, {:.0} ms CPU; duty-low: {lo_n} samples, {:.0} ms CPU; share {measured:.4} vs {expected:.4}",
        hi_cpu / 1e6,
        lo_cpu / 1e6
    );
    assert!(hi_n + lo_n >= 300, "too few samples");
    assert!(
        (measured - expected).abs() <= 0.03,
        "sample share {measured:.4} vs CPU share {expected:.4}"
    );
}

/// A loop calling two methods the JIT inlines, one with three times the
/// other's work (InlinedWork: loads that miss the caches): the samples
/// land in the callees (not on the loop's safepoint poll), about 3:1, each
/// charged to the scope of the instruction that ran, not of the next one.
#[test]
fn inlined_callees_get_the_samples_in_their_ratio_of_work() {
    let _only_jvm = common::exclusive();
    let (rep, _, _) = run_bounded("inlined", "cpu=samples,interval=1", "InlinedWork", &["3"]);
    let cpu = &rep.cpu[0];
    let heavy = samples_of(cpu, "InlinedWork.heavy") as f64;
    let light = samples_of(cpu, "InlinedWork.light") as f64;
    let lp = samples_of(cpu, "InlinedWork.loop") as f64;
    let hot = heavy + light + lp;
    eprintln!(
        "heavy {heavy}, light {light}, loop {lp}, total {}",
        cpu.total
    );
    assert!(hot >= 500.0, "too few samples in the loop: {cpu:?}");
    // Nearly all the loop's time is the callees' loads: a sample charged
    // to the scope after the one whose instruction ran gives heavy's last
    // load to the loop (10-20 % before the fix) and light's to heavy
    // (light 0-12 %, ratio 5-250).
    assert!(
        lp / hot <= 0.03,
        "the loop has {:.3} of the loop's samples: {cpu:?}",
        lp / hot
    );
    assert!(
        light / hot >= 0.18,
        "light has {:.3} of the loop's samples, expected about 0.25",
        light / hot
    );
    let ratio = heavy / light;
    assert!(
        (2.1..=3.9).contains(&ratio),
        "heavy/light = {ratio:.2}, expected 3 ± 30 %"
    );
    // Each callee's trace shows it called from the loop.
    let row = cpu
        .rows
        .iter()
        .find(|r| r.method == "InlinedWork.heavy")
        .unwrap();
    let frames = &rep.traces[&row.trace].frames;
    assert_eq!(frames[1].method, "loop", "{frames:?}");
}

/// Megamorphic interface calls to tiny methods (StubCalls): most samples
/// land where AsyncGetCallTrace cannot walk the stack (the itable stub,
/// the callees' frame set-up and take-down; 80 % of the samples on JDK
/// 17 were lost before recovery). They are walked from the caller with the
/// callee on top, and the report says, after the section, what is still
/// not counted.
#[test]
fn samples_where_walks_fail_are_recovered_and_the_rest_is_stated() {
    let _only_jvm = common::exclusive();
    let (rep, _, _) = run_bounded("stubcalls", "cpu=samples,interval=1", "StubCalls", &["3"]);
    let cpu = &rep.cpu[0];
    let line = cpu
        .lost
        .as_deref()
        .expect("a CPU SAMPLES LOST line after the section");
    // CPU SAMPLES LOST <lost> of <taken> (<pct>%)[: <reason> <n>, ...]
    let words: Vec<&str> = line.split_whitespace().collect();
    let lost: u64 = words[3].parse().unwrap();
    let taken: u64 = words[5].parse().unwrap();
    eprintln!("{line}; total {}", cpu.total);
    assert_eq!(taken - lost, cpu.total, "{line}");
    assert!(
        lost as f64 <= 0.02 * taken as f64,
        "more than 2 % not counted: {line}"
    );
    let callees = ["Mul", "MixA", "MixB", "Add"];
    let in_loop = samples_of(cpu, "StubCalls.loop")
        + callees
            .iter()
            .map(|c| samples_of(cpu, &format!("StubCalls${c}.apply")))
            .sum::<u64>();
    assert!(in_loop >= 500, "too few samples in the loop: {cpu:?}");
    for c in callees {
        let n = samples_of(cpu, &format!("StubCalls${c}.apply"));
        assert!(
            n as f64 >= 0.03 * in_loop as f64,
            "{c}.apply has {n} of {in_loop} samples: {cpu:?}"
        );
        let row = cpu
            .rows
            .iter()
            .find(|r| r.method == format!("StubCalls${c}.apply"))
            .unwrap();
        let frames = &rep.traces[&row.trace].frames;
        assert_eq!(frames[1].method, "loop", "{frames:?}");
    }
}

/// CPU-bound virtual threads (JDK 21+): the hot method dominates, and the
/// traces are the virtual threads' own (no carrier frames below them).
#[test]
fn cpu_bound_virtual_threads_are_sampled_in_their_own_code() {
    let _only_jvm = common::exclusive();
    let (rep, out, _) = run_bounded(
        "vcpu",
        "cpu=samples,interval=1,depth=30",
        "VirtualCpu",
        &["2", "8"],
    );
    if !out.contains("virtual threads") {
        println!("skipped: no virtual threads on this JDK ({out})");
        return;
    }
    let cpu = &rep.cpu[0];
    let hot = samples_of(cpu, "VirtualCpu.hot");
    eprintln!("hot {hot} of {}", cpu.total);
    assert!(hot as f64 >= 0.8 * cpu.total as f64, "{cpu:?}");
    for row in cpu.rows.iter().filter(|r| r.method == "VirtualCpu.hot") {
        let frames = &rep.traces[&row.trace].frames;
        assert!(
            frames
                .iter()
                .all(|f| !f.class.starts_with("jdk.internal.vm.Continuation")
                    && !f.class.starts_with("java.util.concurrent.ForkJoin")),
            "carrier frames in a virtual thread's trace: {frames:?}"
        );
    }
}

/// The application takes SIGPROF for itself while the agent samples
/// (sun.misc.Signal here; a profiler loaded later or JFR's CPU-time
/// sampler would do the same natively): the agent notices, leaves SIGPROF
/// to the application (whose handler gets none of its signals from then
/// on), says so once, and samples on with another signal; the program runs
/// to its end.
#[test]
fn an_application_that_takes_sigprof_gets_no_signals_of_ours() {
    let _only_jvm = common::exclusive();
    let (rep, out, err) = run_bounded(
        "sigprof_taker",
        "cpu=samples,interval=1",
        "SigprofTaker",
        &["1"],
    );
    if out.contains("refused") {
        println!("skipped: this JVM does not let Java handle SIGPROF ({out})");
        return;
    }
    let count = |key: &str| -> u64 {
        let tail = out.split(&format!("{key}=")).nth(1).expect(key);
        tail.split_whitespace().next().unwrap().parse().unwrap()
    };
    let (early, late) = (count("early"), count("late"));
    eprintln!("application's SIGPROF handler: {early} signals in its first 0.5 s, {late} at the end; {err}");
    assert_eq!(
        late, early,
        "our timers kept signalling the application's handler"
    );
    assert_eq!(
        err.matches("SIGPROF was taken by another handler while profiling")
            .count(),
        1,
        "said exactly once: {err}"
    );
    assert!(
        err.contains("signals its CPU-time samples with SIGVTALRM from now on")
            && !err.contains("HPROF ERROR"),
        "{err}"
    );
    let hot = samples_of(&rep.cpu[0], "SigprofTaker.spin");
    assert!(
        hot >= 100,
        "the samples before the takeover stay: {:?}",
        rep.cpu[0]
    );
}

/// crates/hprof-e2e/tests/fixtures/sigprof_agent.c, compiled once per test process.
fn sigprof_agent() -> &'static str {
    static LIB: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        let dir = common::scratch("sigprof_agent_build");
        let lib = dir.join("libsigprof_agent.so");
        let src = std::path::PathBuf::from(env!("HPROF_REPO"))
            .join("crates/hprof-e2e/tests/fixtures/sigprof_agent.c");
        let st = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&lib)
            .arg(&src)
            .arg("-lpthread")
            .status()
            .expect("run cc");
        assert!(st.success(), "cc failed on {}", src.display());
        lib.display().to_string()
    })
}

/// What the second profiler counted (its line at VM exit).
struct SecondProfiler {
    own: u64,
    foreign_early: i64,
    foreign: u64,
    cpu_ms: u64,
}

/// CpuSplit (1 000 rounds, about 3.7 s of CPU) under the agent at
/// interval=1 and the native SIGPROF-taking agent, loaded before the
/// agent (its handler is in place when the agent starts) or installing its
/// handler after `after_ms` ms of the process's CPU (while the agent
/// samples).
fn with_second_profiler(
    name: &str,
    after_ms: Option<u32>,
) -> (ascii::Report, String, SecondProfiler) {
    let dir = common::scratch(name);
    let ours = format!(
        "-agentpath:{}=cpu=samples,interval=1,file=out.txt",
        common::agent_path().display()
    );
    let theirs = match after_ms {
        None => format!("-agentpath:{}", sigprof_agent()),
        Some(ms) => format!("-agentpath:{}=after={ms}", sigprof_agent()),
    };
    // Loaded before the agent, or after it.
    let args: Vec<&str> = match after_ms {
        None => vec![&theirs, &ours],
        Some(_) => vec![&ours, &theirs],
    };
    let r = common::run_java_bounded(
        &dir,
        &args,
        "CpuSplit",
        &["0", "1000"],
        std::time::Duration::from_secs(120),
    );
    let err = common::stderr(&r.output);
    assert!(!r.timed_out && r.output.status.success(), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("sigprof_agent: "))
        .unwrap_or_else(|| panic!("no line of the second profiler: {err}"));
    let field = |k: &str| -> i64 {
        let tail = line.split(&format!(" {k}=")).nth(1).expect(k);
        tail.split_whitespace().next().unwrap().parse().unwrap()
    };
    let theirs = SecondProfiler {
        own: field("own") as u64,
        foreign_early: field("foreign_early"),
        foreign: field("foreign") as u64,
        cpu_ms: field("cpu_ms") as u64,
    };
    let text = std::fs::read_to_string(dir.join("out.txt")).expect("output file");
    (ascii::parse(&text), err, theirs)
}

/// Both profilers sample the whole run: the agent's samples stand for
/// most of the process's CPU time (the rest is the JVM's own threads), in
/// CpuSplit's split.
fn assert_sampled_throughout(rep: &ascii::Report, theirs: &SecondProfiler, err: &str) {
    let (shares, _, n) = work_split(&rep.cpu[0], "CpuSplit");
    eprintln!(
        "{n} samples in the work methods for {} ms of process CPU; split {shares:?}; the other profiler: {} own signals",
        theirs.cpu_ms, theirs.own
    );
    assert!(
        n as f64 >= 0.7 * theirs.cpu_ms as f64,
        "{n} samples for {} ms of CPU: sampling stopped? {err}",
        theirs.cpu_ms
    );
    assert!(tvd(shares) <= 0.05, "split {shares:?}");
    assert!(
        theirs.own >= 100,
        "the other profiler's own timer: {}",
        theirs.own
    );
    assert!(!err.contains("HPROF ERROR"), "{err}");
}

/// Another native profiler holds SIGPROF when the agent starts (loaded
/// before it): the agent takes the next free profiling signal, says so
/// once, and neither gets the other's signals.
#[test]
fn a_profiler_loaded_before_keeps_sigprof_and_both_sample() {
    let _only_jvm = common::exclusive();
    let (rep, err, theirs) = with_second_profiler("second_before", None);
    assert_eq!(theirs.foreign, 0, "the other profiler got our signals");
    assert_eq!(
        err.matches("SIGPROF already handled (another profiler or the application): CPU-time samples are signalled with SIGVTALRM").count(),
        1,
        "{err}"
    );
    assert_sampled_throughout(&rep, &theirs, &err);
}

/// Another native profiler installs its SIGPROF handler while the agent
/// samples (a profiler attached later, an agent's late start): the agent
/// finds it on its next pass, leaves SIGPROF to it (no signal of ours
/// reaches it from then on), says so once, and samples on with another
/// signal.
#[test]
fn a_profiler_installed_after_gets_sigprof_back_and_both_sample() {
    let _only_jvm = common::exclusive();
    let (rep, err, theirs) = with_second_profiler("second_after", Some(1500));
    eprintln!(
        "the other profiler: {} of our signals before we left, {} at the end",
        theirs.foreign_early, theirs.foreign
    );
    assert!(theirs.foreign_early >= 0, "installed too late to check");
    assert_eq!(
        theirs.foreign, theirs.foreign_early as u64,
        "our signals kept reaching the other profiler's handler"
    );
    assert_eq!(
        err.matches("SIGPROF was taken by another handler while profiling")
            .count(),
        1,
        "said exactly once: {err}"
    );
    assert_sampled_throughout(&rep, &theirs, &err);
}

// ------------------------------------------------- the cost of idle threads

/// What an idle thread costs (issue 27 item 13): 1 000 threads blocked in
/// a socket read or parked beside the JVM, looked at from /proc:
///
/// * each holds a POSIX timer on its CPU clock and no descriptor (only
///   threads that used CPU get a perf event), and its end gives the timer
///   back;
/// * their THREAD START and THREAD END records are written in batches, not
///   each after a wake-up of the writer thread (its voluntary context
///   switches count its sleeps: while the 1 000 threads end, ~20; before,
///   ~900);
/// * the sampler thread takes the ring's samples every 100 ms, whatever the
///   threads (before: every 10 ms at the default interval; a pass is a
///   wake-up).
#[test]
fn idle_threads_hold_a_timer_each_and_wake_no_agent_thread_each() {
    use std::io::{BufRead, Write};
    let _only_jvm = common::exclusive();
    let dir = common::scratch("idle_threads_cost");
    let agent = format!(
        "-agentpath:{}=cpu=samples,file=out.txt",
        common::agent_path().display()
    );
    let mut jvm = KillOnDrop(
        std::process::Command::new(common::java())
            .current_dir(&dir)
            .arg(&agent)
            .arg("-cp")
            .arg(common::fixture_classes())
            .args(["IdleThreads", "500", "500", "200", "hold"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let pid = jvm.0.id();
    let mut stdin = jvm.0.stdin.take().unwrap();
    let mut lines = std::io::BufReader::new(jvm.0.stdout.take().unwrap()).lines();
    let mut next_line = || lines.next().and_then(|l| l.ok()).unwrap_or_default();

    assert_eq!(next_line(), "started 1000");
    let timers = proc_timers(pid);
    let perf = perf_descriptors(pid);
    let sampler = voluntary_switches(pid, "HPROF cpu sampl");
    std::thread::sleep(std::time::Duration::from_secs(2));
    let sampler_2s = voluntary_switches(pid, "HPROF cpu sampl") - sampler;
    eprintln!(
        "1000 idle threads: {timers} timers, {perf} perf descriptors; the sampler slept {sampler_2s} times in 2 s"
    );
    assert!(
        (1000..=1020).contains(&timers),
        "a timer per idle thread: {timers}"
    );
    assert!(
        perf <= 10,
        "{perf} perf events for threads that did not run"
    );
    assert!(
        sampler_2s <= 40,
        "the sampler woke {sampler_2s} times in 2 s (a pass every 100 ms is ~20)"
    );

    // The idle threads end once the worker is done: their THREAD END
    // records come in a burst (the worker's phase writes nothing).
    let writer = voluntary_switches(pid, "hprof-writer");
    writeln!(stdin, "go").unwrap();
    assert_eq!(next_line(), "ended");
    let timers = proc_timers(pid);
    let perf = perf_descriptors(pid);
    let writer_end = voluntary_switches(pid, "hprof-writer") - writer;
    eprintln!("idle threads ended: {timers} timers, {perf} perf descriptors; the writer slept {writer_end} times since");
    assert!(timers <= 20, "the ended threads' timers remain: {timers}");
    assert!(perf <= 10, "{perf} perf events");
    assert!(
        writer_end < 200,
        "the writer was woken {writer_end} times for 1000 THREAD END records"
    );
    drop(stdin);
    let status = jvm.0.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut jvm.0.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    let rep = ascii::parse(&std::fs::read_to_string(dir.join("out.txt")).unwrap());
    let idle: Vec<u32> = rep
        .thread_starts
        .iter()
        .filter(|t| t.name.starts_with("read-") || t.name.starts_with("park-"))
        .map(|t| t.id)
        .collect();
    assert_eq!(idle.len(), 1000, "a THREAD START per idle thread");
    assert!(
        idle.iter().all(|id| rep.thread_ends.contains(id)),
        "a THREAD END per idle thread"
    );
}

/// A child process killed if the test fails before it ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        common::kill_and_reap(&mut self.0);
    }
}

/// POSIX timers of process `pid` (/proc/PID/timers: one "ID:" line each).
fn proc_timers(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/timers"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("ID:"))
        .count()
}

/// Open perf event descriptors of process `pid`.
fn perf_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|l| l.to_string_lossy().contains("perf_event"))
        .count()
}

/// Voluntary context switches (times it slept) of the thread of `pid`
/// named `comm`.
fn voluntary_switches(pid: u32, comm: &str) -> u64 {
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if name.trim_end() != comm {
            continue;
        }
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        if let Some(n) = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        {
            return n.trim().parse().unwrap();
        }
    }
    panic!("no thread {comm} in process {pid}");
}
