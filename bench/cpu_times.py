#!/usr/bin/env python3
"""Benchmark of cpu=times: wall-time overhead on a CPU-bound and on an
allocation-heavy (call-dense) workload.

* CpuSplit (CPU-bound, few calls: three long loops per round), fixed number
  of rounds, with and without `cpu=times`.
* AllocHeavy (every round: 100,000 small objects, a boxed ArrayList of
  20,000, a HashMap of 2,000 arrays, then walks them: about 308,000
  timed calls per round, two thirds of them JDK methods), fixed rounds.

Interleaved runs, median of N (default 7) each side; the ratio of medians
is the overhead (whole process: JVM start-up, the agent's retransformation
of start-up classes, the workload, the final dump).
The original HPROF costs 4.9x and 38x on such workloads; target <= 2x, <= 5x.

Usage: bench/cpu_times.py [runs] [cpusplit_rounds] [alloc_rounds]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    split_rounds = sys.argv[2] if len(sys.argv) > 2 else "600"
    alloc_rounds = sys.argv[3] if len(sys.argv) > 3 else "200"
    agent = harness.build_agent()
    classes = harness.compile_fixtures()
    java = os.path.join(harness.java_home(), "bin", "java")
    work = os.path.dirname(classes)
    out = os.path.join(classes, "times.txt")
    prof = f"-agentpath:{agent}=cpu=times,file={out}"

    def check_counts(fixture, method, expected):
        def after(_i):
            text = open(out).read()
            section = text[text.index("CPU TIME (ms) BEGIN"):]
            calls = sum(int(line.split()[3]) for line in section.splitlines()
                        if line.endswith(" " + method))
            if calls != expected:
                sys.exit(f"{fixture}: expected {expected} calls of {method}, report has {calls}")
        return after

    results = {}
    for name, main_args, method, calls in [
        ("CpuSplit", ["CpuSplit", "0", split_rounds], "CpuSplit.work60", int(split_rounds)),
        ("AllocHeavy", ["AllocHeavy", alloc_rounds], "AllocHeavy$Node.<init>", 100_000 * int(alloc_rounds)),
    ]:
        base = [java, "-cp", classes] + main_args
        timed = [java, prof, "-cp", classes] + main_args
        results[name] = harness.compare(f"cpu=times on {name}", base, timed, runs, work,
                                        check_counts(name, method, calls))
    print(f"RESULT cpu_times cpusplit_ratio={results['CpuSplit']:.3f} "
          f"alloc_ratio={results['AllocHeavy']:.3f}")


if __name__ == "__main__":
    main()
