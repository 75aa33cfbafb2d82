//! Every numeric option at its limits, on a real JVM: a value the docs
//! accept runs to a normal exit with a complete report, a value they refuse
//! stops start-up with one `HPROF ERROR` line and exit code 1. Nothing may
//! abort, hang or panic (docs/options.md gives each range).

use crate::common;

use common::{ascii, BoundedRun};
use hprof_core::reader::read_all;
use std::time::Duration;

/// Generous for a loaded CI machine; a normal run takes about a second.
const LIMIT: Duration = Duration::from_secs(90);

fn run(name: &str, opts: &str, main: &str, args: &[&str]) -> (BoundedRun, std::path::PathBuf) {
    let dir = common::scratch(name);
    let r = common::run_with_agent_bounded(&dir, opts, main, args, LIMIT);
    assert!(!r.timed_out, "{opts}: still running after {LIMIT:?}");
    let err = common::stderr(&r.output);
    for bad in ["panicked", "internal error", "memory allocation of"] {
        assert!(!err.contains(bad), "{opts}: `{bad}` on stderr:\n{err}");
    }
    (r, dir)
}

/// Runs `opts` (text output) and returns the parsed report.
fn accepted(name: &str, opts: &str, main: &str, args: &[&str]) -> ascii::Report {
    let (r, dir) = run(name, &format!("{opts},file=out.txt"), main, args);
    assert!(
        r.output.status.success(),
        "{opts}: exit {:?}\n{}",
        r.output.status,
        common::stderr(&r.output)
    );
    let text = std::fs::read_to_string(dir.join("out.txt")).expect("output file");
    assert!(text.contains("--------"), "{opts}: no header in\n{text}");
    ascii::parse(&text)
}

fn refused(opts: &str, message: &str) {
    let (r, _) = run("limits_refused", opts, "Hello", &[]);
    let err = common::stderr(&r.output);
    assert_eq!(r.output.status.code(), Some(1), "{opts}: {err}");
    assert!(
        err.contains("HPROF ERROR") && err.contains(message),
        "{opts}: expected `{message}` in\n{err}"
    );
    assert!(
        !common::stdout(&r.output).contains("hello"),
        "{opts}: program ran"
    );
}

/// Recursion depth of the DeepStack runs: above the first capture size
/// (256 frames), so a capture has to grow.
const RECURSION: usize = 300;

/// Frames of `DeepStack.recurse` in the trace, and whether the trace ends
/// in `DeepStack.main` (nothing cut off at the root).
fn recurse_frames(t: &ascii::Trace) -> (usize, bool) {
    let n = t
        .frames
        .iter()
        .filter(|f| f.class == "DeepStack" && f.method == "recurse")
        .count();
    let rooted = t
        .frames
        .last()
        .is_some_and(|f| f.class == "DeepStack" && f.method == "main");
    (n, rooted)
}

fn has_whole_deep_trace(rep: &ascii::Report) -> bool {
    rep.traces
        .values()
        .any(|t| recurse_frames(t) == (RECURSION, true))
}

/// depth=2147483647 used to reserve 2^31 frames per capture (32 GiB) and
/// abort the JVM; now every profile runs and captures whole stacks.
#[test]
fn the_largest_depth_captures_whole_stacks_in_every_profile() {
    let _only_jvm = common::exclusive();
    let args = [&RECURSION.to_string()[..], "600"];
    for opts in [
        "cpu=samples,interval=1",
        "cpu=times",
        "heap=sites",
        "monitor=y",
        "heap=dump",
    ] {
        let rep = accepted(
            "limits_depth",
            &format!("{opts},depth=2147483647"),
            "DeepStack",
            &args,
        );
        assert!(
            has_whole_deep_trace(&rep),
            "{opts}: no trace with {RECURSION} recurse frames under main; deepest: {:?}",
            rep.traces.values().map(recurse_frames).max()
        );
    }
    // Sampled stacks: the hot loop's samples carry the whole stack.
    let rep = accepted(
        "limits_depth_samples",
        "cpu=samples,interval=1,depth=2147483647",
        "DeepStack",
        &args,
    );
    let deep_samples: u32 = rep.cpu[0]
        .rows
        .iter()
        .filter(|r| recurse_frames(&rep.traces[&r.trace]) == (RECURSION, true))
        .map(|r| r.count)
        .sum();
    assert!(deep_samples > 0, "no CPU sample with the whole stack");

    // Binary heap dump: the TRACE records carry the whole stack too.
    let (r, dir) = run(
        "limits_depth_bin",
        "heap=dump,format=b,depth=2147483647,file=out.hprof",
        "DeepStack",
        &args,
    );
    assert!(r.output.status.success(), "{}", common::stderr(&r.output));
    let parsed = read_all(dir.join("out.hprof")).expect("dump parses");
    let method_of = |id: u64| {
        let f = parsed
            .frames
            .iter()
            .find(|f| f.id == id)
            .expect("FRAME of TRACE");
        parsed.strings[&f.method_name_id].as_str()
    };
    let whole = parsed.traces.iter().any(|t| {
        let names: Vec<&str> = t.frame_ids.iter().map(|&id| method_of(id)).collect();
        names.last() == Some(&"main")
            && names.iter().filter(|&&m| m == "recurse").count() == RECURSION
    });
    assert!(
        whole,
        "no binary TRACE with {RECURSION} recurse frames under main"
    );
    assert_eq!(parsed.heap_dumps.len(), 1);
}

/// `depth` limits traces exactly, from 0 (empty traces) to the stack.
#[test]
fn small_depths_cut_traces_exactly() {
    let _only_jvm = common::exclusive();
    for depth in [0usize, 1, 2] {
        let rep = accepted(
            "limits_small_depth",
            &format!("heap=sites,depth={depth}"),
            "DeepStack",
            &["20", "10"],
        );
        let longest = rep.traces.values().map(|t| t.frames.len()).max();
        assert_eq!(longest, Some(depth), "depth={depth}");
    }
}

/// A long interval used to delay exit by the interval (forever at the
/// largest value): the sampler held a lock across its wait.
#[test]
fn long_intervals_do_not_delay_exit() {
    let _only_jvm = common::exclusive();
    for interval in ["20000", "2147483647"] {
        let opts = format!("cpu=samples,interval={interval}");
        let (r, dir) = run(
            "limits_interval",
            &format!("{opts},file=out.txt"),
            "Hello",
            &[],
        );
        assert!(r.output.status.success(), "{}", common::stderr(&r.output));
        assert!(
            r.elapsed < Duration::from_secs(15),
            "{opts}: exit took {:?}",
            r.elapsed
        );
        let text = std::fs::read_to_string(dir.join("out.txt")).unwrap();
        let rep = ascii::parse(&text);
        assert_eq!(rep.cpu.len(), 1, "{opts}: one CPU SAMPLES section");
        assert_eq!(rep.cpu[0].total, 0, "{opts}: no pass ran");
    }
    // The smallest interval samples: CpuSplit runs for a second.
    let rep = accepted(
        "limits_interval_1",
        "cpu=samples,interval=1",
        "CpuSplit",
        &["1"],
    );
    assert!(
        rep.cpu[0].total > 50,
        "interval=1: {} samples",
        rep.cpu[0].total
    );
}

/// The other numeric options at their documented extremes all run.
#[test]
fn other_numeric_options_run_at_their_extremes() {
    let _only_jvm = common::exclusive();
    for opts in [
        "heap=sites,cutoff=0",
        "heap=sites,cutoff=1",
        "heap=sites,cutoff=1e308",
        "heap=sites,cutoff=inf",
        "heap=sites,cutoff=nan",
        "cpu=samples,cutoff=0x1p-1074",
        "heap=sites,heapsample=1",
        "heap=sites,heapsample=2147483647",
        "heap=sites,heapsample=0",
        "cpu=samples,logflags=0xffffffff",
        "cpu=samples,debugflags=-1",
        "heap=dump,idsize=8",
    ] {
        // cpu=samples charges CPU only: give it a program that uses some
        // (AllocSites can finish within one 10 ms interval of CPU).
        let (fixture, args): (&str, &[&str]) = if opts.starts_with("cpu=samples") {
            ("CpuSplit", &["1"])
        } else {
            ("AllocSites", &[])
        };
        let rep = accepted("limits_other", opts, fixture, args);
        assert!(!rep.trace_order.is_empty(), "{opts}: no TRACE records");
    }
}

/// Values past the limits are refused at start-up, before the program runs.
#[test]
fn values_past_the_limits_are_refused_at_start_up() {
    let _only_jvm = common::exclusive();
    for (opts, message) in [
        ("depth=2147483648", "depth option value must be decimal"),
        ("depth=-1", "depth option value must be decimal"),
        ("interval=0", "interval option value must be decimal"),
        (
            "interval=2147483648",
            "interval option value must be decimal",
        ),
        ("cutoff=-0.1", "cutoff option value must be floating point"),
        (
            "heapsample=2147483648",
            "heapsample option value must be decimal",
        ),
        ("idsize=16", "idsize"),
        ("net=localhost:0", "port"),
        ("net=localhost:65536", "port"),
    ] {
        refused(opts, message);
    }
}
