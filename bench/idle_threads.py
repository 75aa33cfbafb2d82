#!/usr/bin/env python3
"""The fixed CPU cost per thread of cpu=samples (issue 27, item 13), beside
async-profiler, in one session.

IdleThreads READERS PARKED ROUNDS (java-fixtures/IdleThreads.java): idle
threads (half blocked in a native socket read, half parked) beside one
worker doing a fixed amount of work. Each run measures the process's CPU
time (user + system, all threads). For every thread count (default 0 and
1000 idle threads) each run of the program without an agent is followed by
one run under each profiler, in an order that rotates from run to run, and
each profiler run is compared with the run without an agent of its round:

* the ratio to no agent (median of the paired ratios; target for
  cpu=samples at 1000 idle threads on a ~2.6 s program: <= 1.03x);
* the extra CPU seconds (median of the paired differences), and from the
  extra at N threads and at 0, the cost per idle thread in microseconds.

Profilers: ours (`cpu=samples,interval=10`, the default interval), another
build of ours with --before (for before/after figures), and async-profiler
(`event=cpu,interval=10ms`, the same period of CPU time per sample). With
--floor, also the probe agent bench/jvmti-floor with `threads` (ThreadStart
and ThreadEnd events, empty callbacks: what the JVM charges for following
threads) and `threads,timers` (plus a POSIX timer on each thread's CPU
clock: the least a CPU-time trigger per thread costs).
async-profiler is a measuring reference, not part of the project: the
script takes a build of it through harness.async_profiler()
($ASYNC_PROFILER_HOME, else .cache/async-profiler, built there from its
public source when missing); without one it says so and measures ours
alone.

Usage: bench/idle_threads.py [--runs N] [--rounds R | --cpu-seconds S]
                             [--threads 0,1000]
                             [--opts OPTIONS] [--agent PATH] [--before PATH]
                             [--floor]
(HPROF_TEST_JDK=<java home> selects the JDK, as for the other benchmarks.)"""
import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def find_async_profiler():
    lib = harness.async_profiler_lib()
    if lib is None:
        print("async-profiler not available: measuring hprof-rs alone.")
    return lib


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--rounds", help="the worker's rounds (default: as many as --cpu-seconds asks for)")
    p.add_argument("--cpu-seconds", type=float, default=2.6,
                   help="the program's process CPU without an agent at the largest thread count, "
                        "which the worker's rounds are fitted to (issue 27 item 13: a 2.6 s program)")
    p.add_argument("--threads", default="0,1000", help="idle thread counts (half readers, half parked)")
    p.add_argument("--opts", default="cpu=samples,interval=10")
    p.add_argument("--agent", help="our agent library (default: built here, release)")
    p.add_argument("--before", help="another build of our agent, measured as 'before'")
    p.add_argument("--floor", action="store_true", help="also the JVM's floor (bench/jvmti-floor)")
    args = p.parse_args()
    sys.stdout.reconfigure(line_buffering=True)

    agent = os.path.abspath(args.agent) if args.agent else harness.build_agent()
    classes = harness.compile_fixtures()
    java = os.path.join(harness.java_home(), "bin", "java")
    work = os.path.dirname(classes)
    profilers = []
    if args.before:
        profilers.append(("before", lambda out: f"-agentpath:{os.path.abspath(args.before)}={args.opts},file={out}"))
    profilers.append(("hprof-rs", lambda out: f"-agentpath:{agent}={args.opts},file={out}"))
    ap = find_async_profiler()
    if ap:
        profilers.append(("async-profiler",
                          lambda out: f"-agentpath:{ap}=start,event=cpu,interval=10ms,collapsed,file={out}"))
    if args.floor:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "jvmti-floor"], cwd=harness.ROOT, check=True)
        floor = os.path.join(harness.ROOT, "target", "release", "libjvmti_floor.so")
        profilers.append(("floor-threads", lambda out: f"-agentpath:{floor}=threads"))
        profilers.append(("floor-timers", lambda out: f"-agentpath:{floor}=threads,timers"))
    counts = [int(t) for t in args.threads.split(",")]
    if args.rounds is None:
        args.rounds = str(fit_rounds(java, classes, work, max(counts), args.cpu_seconds))
    print(f"java: {java}; hprof-rs {args.opts}; async-profiler {ap or 'absent'}; "
          f"IdleThreads N/2 N/2 {args.rounds}; {args.runs} rounds; load average {os.getloadavg()[0]:.1f}")

    extra, results = {}, []
    for n in counts:
        program = ["-cp", classes, "IdleThreads", str(n // 2), str(n - n // 2), args.rounds]
        harness.timed([java] + program, work)  # warm the page cache
        base, cpu = [], {label: [] for label, _ in profilers}
        for r in range(args.runs):
            base.append(harness.timed([java] + program, work, "cpu"))
            k = r % len(profilers)
            for label, option in profilers[k:] + profilers[:k]:
                out = os.path.join(work, f"idle-{label}.out")
                cpu[label].append(harness.timed([java, option(out)] + program, work, "cpu"))
        print(f"\n{n} idle threads (load average {os.getloadavg()[0]:.1f}): process CPU without an agent, "
              f"median {statistics.median(base):.3f} s {harness.fmt(base)}")
        for label, xs in cpu.items():
            ratio = statistics.median(x / b for x, b in zip(xs, base))
            diff = statistics.median(x - b for x, b in zip(xs, base))
            extra[(label, n)] = diff
            results.append(f"{label.replace('-', '_')}_ratio_{n}={ratio:.3f}")
            print(f"  {label:<15} median {statistics.median(xs):.3f} s, paired ratio {ratio:.3f}x, "
                  f"extra {diff:+.3f} s  {harness.fmt(xs)}")

    for label, _ in profilers:
        for n in counts:
            if n > 0 and (label, 0) in extra:
                per = (extra[(label, n)] - extra[(label, 0)]) / n * 1e6
                print(f"{label}: {per:.0f} us of CPU per idle thread (extra at {n} minus extra at 0, over {n})")
                results.append(f"{label.replace('-', '_')}_us_per_thread_{n}={per:.0f}")
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    print(f"RESULT idle_threads rounds={args.rounds} " + " ".join(results))


def fit_rounds(java, classes, work, n, seconds):
    """The worker's rounds for a program of `seconds` of process CPU
    without an agent at `n` idle threads. Its CPU is linear in the rounds
    (the threads' start and end cost the same whatever the rounds): three
    runs each at 550 and 275 rounds give the line. The figure of a machine
    changes from day to day (550 rounds were 2.6 s once, 2.36 s on
    another day), the target is stated for a 2.6 s program."""
    def cpu(rounds):
        program = ["-cp", classes, "IdleThreads", str(n // 2), str(n - n // 2), str(rounds)]
        return statistics.median(harness.timed([java] + program, work, "cpu") for _ in range(3))
    full, half = cpu(550), cpu(275)
    per_round = max((full - half) / 275, 1e-6)
    rounds = max(1, round(550 + (seconds - full) / per_round))
    print(f"rounds fitted: {rounds} for {seconds:.2f} s at {n} idle threads "
          f"(without an agent: {full:.3f} s at 550 rounds, {half:.3f} s at 275)")
    return rounds


if __name__ == "__main__":
    main()
