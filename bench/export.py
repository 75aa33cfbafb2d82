#!/usr/bin/env python3
"""Benchmark of `hprof-rs export --pprof` and `--jfr` (docs/jfr.md), on
files the agent wrote, beside `hprof-rs flame` reading the same file.

No other tool reads HPROF's CPU SAMPLES, ALLOC SITES or MONITOR TIME
records, so there is no outside reference to run beside these commands;
the figure that says what the conversion costs is its ratio to the read
alone (`flame` for CPU samples, which folds the same records into
collapsed stacks; `sites` for allocation sites; none for a text report's
monitors, which only the exports and the UI read). The inputs are made once per run:

  cpu.hprof    CpuSplit under `cpu=samples,interval=1,thread=y,format=b`
               for SECONDS (about 1 000 samples a second);
  sites.hprof  AllocSites under `heap=sites,format=b`;
  locks.txt    Contention under `monitor=y,thread=y` (a text report).

Each command runs `runs` times per input, in turns; wall time, median.

Usage: bench/export.py [runs=5] [seconds=20]
(HPROF_TEST_JDK=<java home> selects the JDK.)"""
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def make_inputs(agent, classes, java, work, seconds):
    runs = [
        ("cpu.hprof", "cpu=samples,interval=1,thread=y,depth=16,format=b", ["CpuSplit", str(seconds)]),
        ("sites.hprof", "heap=sites,depth=16,format=b", ["AllocSites"]),
        ("locks.txt", "monitor=y,thread=y,depth=16", ["Contention", "measure", "4", "50", "5"]),
    ]
    for name, opts, program in runs:
        out = os.path.join(work, name)
        subprocess.run([java, f"-agentpath:{agent}={opts},file={out}", "-cp", classes] + program,
                       cwd=work, check=True, capture_output=True)
    return [os.path.join(work, name) for name, _, _ in runs]


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    agent = harness.build_agent()
    tool = harness.build_tool()
    classes = harness.compile_fixtures()
    java = os.path.join(harness.java_home(), "bin", "java")
    work = tempfile.mkdtemp(prefix="hprof-bench-export-")
    inputs = make_inputs(agent, classes, java, work, seconds)
    results = []
    for path in inputs:
        name = os.path.basename(path)
        binary = not name.endswith(".txt")
        commands = {}
        if name.startswith("cpu"):
            commands["flame"] = [tool, "-q", "flame", path]
        elif name.startswith("sites"):
            commands["sites"] = [tool, "-q", "sites", path]
        if binary:
            commands["export --pprof"] = [tool, "-q", "export", path, "--pprof", os.path.join(work, "x.pb.gz")]
        commands["export --jfr"] = [tool, "-q", "export", path, "--jfr", os.path.join(work, "x.jfr")]
        times = {k: [] for k in commands}
        for i in range(runs):
            keys = list(commands)
            for k in keys[i % len(keys):] + keys[:i % len(keys)]:
                times[k].append(harness.timed(commands[k], work))
        said = subprocess.run(commands["export --jfr"], capture_output=True, text=True).stderr.strip()
        print(f"\n{name}: {os.path.getsize(path)} bytes; {said}")
        read = next((k for k in ("flame", "sites") if k in times), None)
        base = statistics.median(times[read]) if read else None
        for k, xs in times.items():
            m = statistics.median(xs)
            ratio = f"ratio to {read} {m / base:.2f}" if base else "(no reader to compare)"
            print(f"  {k:<16} median {m * 1000:7.1f} ms  {ratio}  {harness.fmt(xs)}")
            results.append(f"{name.split('.')[0]}_{k.split()[-1].lstrip('-')}_ms={m * 1000:.1f}")
    print("RESULT export " + " ".join(results))


if __name__ == "__main__":
    main()
