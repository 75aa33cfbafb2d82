//! `hprof-rs export` on files the agent wrote, read back by the tools
//! that read those formats: `--jfr` by the JDK's own `jfr print --json`
//! (of the JDK under test): every CPU sample is one `jdk.ExecutionSample`
//! with its stack, thread and state, and every allocation site one
//! `jdk.ObjectAllocationSample` whose weight is the site's allocated bytes,
//! every contended monitor entry of a text report one `jdk.JavaMonitorEnter`
//! (docs/jfr.md); `--pprof` by `go tool pprof`, with the file's counts.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn tool(args: &[&str]) -> String {
    let mut cmd = Command::new(env!("HPROF_RS_TOOL"));
    cmd.args(args);
    let r = common::run_command_bounded(cmd, Duration::from_secs(60));
    assert!(
        r.output.status.success(),
        "hprof-rs {args:?}: {}",
        common::stderr(&r.output)
    );
    common::stdout(&r.output)
}

/// The events of `file` as `jfr print --json` gives them.
pub(crate) fn jfr_events(file: &Path, event: &str) -> Vec<serde_json::Value> {
    let jfr = common::jdk_home().join("bin").join("jfr");
    let mut cmd = Command::new(&jfr);
    cmd.args(["print", "--json", "--events", event]).arg(file);
    let r = common::run_command_bounded(cmd, Duration::from_secs(120));
    assert!(
        r.output.status.success(),
        "jfr print: {}",
        common::stderr(&r.output)
    );
    let v: serde_json::Value = serde_json::from_slice(&r.output.stdout).expect("jfr print --json");
    v["recording"]["events"].as_array().unwrap().clone()
}

pub(crate) fn frame_name(frame: &serde_json::Value) -> String {
    let m = &frame["method"];
    format!(
        "{}.{}",
        m["type"]["name"].as_str().unwrap(),
        m["name"].as_str().unwrap()
    )
}

#[test]
fn cpu_samples_become_execution_samples_that_jfr_reads() {
    let dir = common::scratch("export_jfr_cpu");
    let r = common::run_with_agent_bounded(
        &dir,
        "cpu=samples,interval=1,depth=4,thread=y,format=b,file=cpu.hprof",
        "CpuSplit",
        &["60", "400"],
        Duration::from_secs(120),
    );
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let hprof = dir.join("cpu.hprof");
    let jfr = dir.join("cpu.jfr");
    tool(&[
        "export",
        hprof.to_str().unwrap(),
        "--jfr",
        jfr.to_str().unwrap(),
    ]);
    // What the HPROF file says, per leaf method: the collapsed stacks.
    let mut want: HashMap<String, u64> = HashMap::new();
    for line in tool(&["flame", hprof.to_str().unwrap()]).lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        if stack.starts_with('[') {
            continue; // `[lost samples: …]`: not a stack, not exported
        }
        let leaf = stack.rsplit(';').next().unwrap().to_string();
        *want.entry(leaf).or_default() += n.parse::<u64>().unwrap();
    }
    let events = jfr_events(&jfr, "jdk.ExecutionSample");
    let mut got: HashMap<String, u64> = HashMap::new();
    for e in &events {
        let v = &e["values"];
        assert_eq!(v["state"], "STATE_RUNNABLE");
        let frames = v["stackTrace"]["frames"].as_array().unwrap();
        *got.entry(frame_name(&frames[0])).or_default() += 1;
        if frame_name(&frames[0]).starts_with("CpuSplit.work") {
            // thread=y: the trace's thread. `main` started before the
            // agent, so the file has no THREAD START naming it
            // (docs/output-formats.md): it is named by its serial.
            assert_eq!(
                v["sampledThread"]["javaName"], "thread serial 200001",
                "{v}"
            );
            assert_eq!(v["sampledThread"]["javaThreadId"], 200001, "{v}");
            assert_eq!(frame_name(frames.last().unwrap()), "CpuSplit.main", "{v}");
            assert!(frames[0]["lineNumber"].as_i64().unwrap() > 0);
            assert_eq!(frames[0]["method"]["descriptor"], "(J)J");
        }
    }
    assert_eq!(got, want, "one event per sample, by leaf method");
    let total: u64 = got.values().sum();
    let work = |m: &str| *got.get(&format!("CpuSplit.{m}")).unwrap_or(&0) as f64;
    let all = work("work60") + work("work30") + work("work10");
    // The rest is the JVM's start-up (string concatenation, lambdas).
    assert!(all > 0.75 * total as f64 && all > 500.0, "{got:?}");
    assert!((work("work60") / all - 0.6).abs() < 0.05, "{got:?}");
    assert!((work("work10") / all - 0.1).abs() < 0.05, "{got:?}");
}

#[test]
fn allocation_sites_become_allocation_samples_weighted_by_their_bytes() {
    let dir = common::scratch("export_jfr_sites");
    let r = common::run_with_agent_bounded(
        &dir,
        "heap=sites,depth=4,format=b,file=sites.hprof",
        "AllocSites",
        &[],
        Duration::from_secs(120),
    );
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let hprof = dir.join("sites.hprof");
    let jfr = dir.join("sites.jfr");
    tool(&[
        "export",
        hprof.to_str().unwrap(),
        "--jfr",
        jfr.to_str().unwrap(),
    ]);
    let events = jfr_events(&jfr, "jdk.ObjectAllocationSample");
    let mut by_site: HashMap<(String, String), i64> = HashMap::new();
    for e in &events {
        let v = &e["values"];
        let class = v["objectClass"]["name"].as_str().unwrap().to_string();
        let frames = v["stackTrace"]["frames"].as_array().unwrap();
        // A site without Java frames (allocated by the VM) has an empty
        // stack, as in the HPROF trace.
        let top = frames.first().map_or_else(String::new, frame_name);
        *by_site.entry((class, top)).or_default() += v["weight"].as_i64().unwrap();
    }
    // Three 4 MiB byte arrays (each 4 194 304 bytes and a 16-byte header).
    assert_eq!(
        by_site.get(&("byte[]".into(), "AllocSites.makeBig".into())),
        Some(&(3 * (4 * 1024 * 1024 + 16))),
        "{by_site:?}"
    );
    // 1000 kept objects of one size (the dropped ones fall under the
    // report's cutoff, ordered by live bytes, as in the original).
    let kept = by_site[&("AllocSites$Kept".into(), "AllocSites.makeKept".into())];
    assert!(kept % 1000 == 0 && kept >= 16_000, "{by_site:?}");
    // 4 threads x 5000 items, from the worker's method.
    let items = by_site[&("AllocSites$Item".into(), "AllocSites.work".into())];
    assert!(items % 20_000 == 0 && items >= 16 * 20_000, "{by_site:?}");
    // 500 int[100]: 400 bytes of elements and a 16-byte header each.
    assert_eq!(
        by_site.get(&("int[]".into(), "AllocSites.makeInts".into())),
        Some(&(500 * 416)),
        "{by_site:?}"
    );
}

/// A JFR duration as `jfr print --json` writes it (`PT0.02094976S`), in ns.
pub(crate) fn duration_ns(v: &serde_json::Value) -> u64 {
    let s = v.as_str().expect("a duration");
    let secs = s
        .strip_prefix("PT")
        .and_then(|x| x.strip_suffix('S'))
        .unwrap_or_else(|| panic!("duration {s}"));
    (secs.parse::<f64>().unwrap() * 1e9).round() as u64
}

/// monitor=y's MONITOR TIME (a text report) as jdk.JavaMonitorEnter: one
/// event per contended entry, with the entry's stack, thread and monitor
/// class; the durations add up to the report's time.
#[test]
fn monitor_time_of_a_text_report_becomes_monitor_enter_events() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("export_jfr_monitors");
    let r = common::run_with_agent_bounded(
        &dir,
        "monitor=y,thread=y,file=m.txt",
        "Contention",
        &["measure", "3", "10", "20"],
        Duration::from_secs(120),
    );
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let entries: u64 = common::stdout(&r.output)
        .lines()
        .find_map(|l| l.strip_prefix("contended_entries "))
        .expect("the fixture's count")
        .parse()
        .unwrap();
    assert_eq!(entries, 30);
    let text = std::fs::read_to_string(dir.join("m.txt")).unwrap();
    let total_ms: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MONITOR TIME BEGIN (total = "))
        .and_then(|l| l.split(' ').next())
        .expect("a MONITOR TIME section")
        .parse()
        .unwrap();
    let jfr = dir.join("m.jfr");
    let said = {
        let mut cmd = Command::new(env!("HPROF_RS_TOOL"));
        cmd.args(["export", dir.join("m.txt").to_str().unwrap(), "--jfr"])
            .arg(&jfr);
        let r = common::run_command_bounded(cmd, Duration::from_secs(60));
        assert!(r.output.status.success(), "{}", common::stderr(&r.output));
        common::stderr(&r.output)
    };
    // Every contended entry of the report: the fixture's 30 on HotLock,
    // and any the JVM met elsewhere (the waiter taking WaitBox back after
    // its notify may find main still holding it: JDK 25 did).
    let all: u64 = said
        .split(" contended monitor entries")
        .next()
        .and_then(|x| x.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    assert!(all >= entries, "{said}");
    let events = jfr_events(&jfr, "jdk.JavaMonitorEnter");
    assert_eq!(events.len() as u64, all, "one event per contended entry");
    // A text report has no time of its own: its events are dated by the
    // file's last write (not 1970), to the second as `date -r` prints it.
    let written = Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%S", "-r"])
        .arg(dir.join("m.txt"))
        .output()
        .unwrap();
    let written = String::from_utf8(written.stdout).unwrap();
    let start = events[0]["values"]["startTime"].as_str().unwrap();
    assert!(start.starts_with(written.trim()), "{start} vs {written}");
    let mut ns = 0;
    let mut hot = 0;
    let mut threads = std::collections::BTreeSet::new();
    for e in &events {
        let v = &e["values"];
        ns += duration_ns(&v["duration"]);
        if v["monitorClass"]["name"] != "Contention$HotLock" {
            eprintln!("another contended entry: {e}");
            continue;
        }
        hot += 1;
        let frames = v["stackTrace"]["frames"].as_array().unwrap();
        assert_eq!(frame_name(&frames[0]), "Contention.blockOnHot", "{e}");
        threads.insert(v["eventThread"]["javaName"].as_str().unwrap().to_string());
    }
    assert_eq!(hot, entries, "the fixture's contended entries on HotLock");
    assert_eq!(
        threads.into_iter().collect::<Vec<_>>(),
        ["worker-0", "worker-1", "worker-2"]
    );
    // Each row's time is its printed share (to 0.01 %) of the section's
    // total: the events add up to the sum of the shares, to a rounding of
    // each share.
    let rows: Vec<f64> = text
        .lines()
        .skip_while(|l| !l.starts_with("rank   self"))
        .skip(1)
        .take_while(|l| !l.starts_with("MONITOR TIME END"))
        .map(|l| {
            let share = l.split_whitespace().nth(1).unwrap();
            share.trim_end_matches('%').parse::<f64>().unwrap() / 100.0
        })
        .collect();
    assert!(rows.len() >= 3, "a row per worker's trace at least: {text}");
    let total_ns = (total_ms * 1_000_000) as f64;
    let shown = rows.iter().sum::<f64>() * total_ns;
    assert!(
        (ns as f64 - shown).abs() <= rows.len() as f64 * (0.00005 * total_ns + 1.0),
        "events {ns} ns, the rows' shares of {total_ms} ms: {shown} ns"
    );
}

#[test]
fn a_file_without_samples_sites_or_monitors_is_refused_with_what_to_do() {
    let dir = common::scratch("export_jfr_refused");
    let r = common::run_with_agent_bounded(
        &dir,
        "cpu=times,file=cpu.txt",
        "Hello",
        &[],
        Duration::from_secs(120),
    );
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let out = dir.join("x.jfr");
    let mut cmd = Command::new(env!("HPROF_RS_TOOL"));
    cmd.args(["export", dir.join("cpu.txt").to_str().unwrap(), "--jfr"])
        .arg(&out);
    let r = common::run_command_bounded(cmd, Duration::from_secs(60));
    assert_eq!(r.output.status.code(), Some(1));
    assert!(
        common::stderr(&r.output).contains("cpu=samples, heap=sites or monitor=y"),
        "{}",
        common::stderr(&r.output)
    );
    assert!(!out.exists());
}

/// The pprof export read back by `go tool pprof` (Debian's `golang-go`),
/// where installed: per leaf function exactly the samples the HPROF file
/// has, and the profile's time and duration from the file.
#[test]
fn pprof_export_is_read_by_go_tool_pprof_with_the_files_counts() {
    if Command::new("go").arg("version").output().is_err() {
        eprintln!("skipped: no `go` on the PATH (Debian's golang-go) to read the pprof file");
        return;
    }
    let dir = common::scratch("export_pprof_go");
    let r = common::run_with_agent_bounded(
        &dir,
        "cpu=samples,interval=1,depth=4,format=b,file=cpu.hprof",
        "CpuSplit",
        &["60", "200"],
        Duration::from_secs(120),
    );
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let hprof = dir.join("cpu.hprof");
    let pb = dir.join("cpu.pb.gz");
    tool(&[
        "export",
        hprof.to_str().unwrap(),
        "--pprof",
        pb.to_str().unwrap(),
    ]);
    let mut want: HashMap<String, i64> = HashMap::new();
    for line in tool(&["flame", hprof.to_str().unwrap()]).lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let leaf = stack.rsplit(';').next().unwrap().to_string();
        *want.entry(leaf).or_default() += n.parse::<i64>().unwrap();
    }
    let mut cmd = Command::new("go");
    cmd.args([
        "tool",
        "pprof",
        "-top",
        "-nodecount=100000",
        "-nodefraction=0",
    ])
    .arg(&pb)
    .env("HOME", &dir);
    let r = common::run_command_bounded(cmd, Duration::from_secs(120));
    let top = common::stdout(&r.output);
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    assert!(
        top.contains("Type: samples") && top.contains("Duration: "),
        "{top}"
    );
    let mut got: HashMap<String, i64> = HashMap::new();
    for line in top.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 6 && f[1].ends_with('%') && f[4].ends_with('%') {
            let flat: i64 = f[0].parse().unwrap();
            if flat > 0 {
                got.insert(f[5..].join(" "), flat);
            }
        }
    }
    for m in ["CpuSplit.work60", "CpuSplit.work30", "CpuSplit.work10"] {
        assert_eq!(got.get(m), want.get(m), "{m}: {top}");
    }
    assert_eq!(
        got.values().sum::<i64>(),
        want.values().sum::<i64>(),
        "{top}"
    );
}
